/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for bk_bloom_deserialize: hostile bytes must yield a
 * status, never a crash, a leak or undefined behaviour. An accepted filter is
 * exercised: it re-serializes to exactly the input (the format has one
 * encoding per filter), answers queries, keeps what is added to it, and
 * survives a second round trip.
 */
#include <stdbool.h>

#include "bloomkit/bloom.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size) {
  bk_bloom *b = NULL;
  bk_status s = bk_bloom_deserialize(data, size, NULL, &b);
  fuzz_check_status(s);
  if (s != BK_OK) {
    FUZZ_CHECK(b == NULL);
    return;
  }
  size_t need = 0, written = 0;
  FUZZ_CHECK(bk_bloom_serialized_size(b, &need) == BK_OK);
  FUZZ_CHECK(need == size);
  unsigned char *out = malloc(need);
  FUZZ_CHECK(out != NULL);
  FUZZ_CHECK(bk_bloom_serialize(b, out, need, &written) == BK_OK);
  FUZZ_CHECK(written == need && memcmp(out, data, size) == 0);

  bk_bloom_info info;
  FUZZ_CHECK(bk_bloom_info_get(b, &info) == BK_OK);
  FUZZ_CHECK(info.k >= 1 && info.k <= 64 && info.m_bits >= 1);
  double d;
  FUZZ_CHECK(bk_bloom_cardinality(b, &d) == BK_OK && d >= 0);
  FUZZ_CHECK(bk_bloom_fill_fpp(b, &d) == BK_OK && d >= 0 && d <= 1);
  bool found, added;
  size_t key_len = size < 24 ? size : 24;
  FUZZ_CHECK(bk_bloom_contains(b, data, key_len, &found) == BK_OK);
  FUZZ_CHECK(bk_bloom_add_if_absent(b, data, key_len, &added) == BK_OK);
  FUZZ_CHECK(!(found && added));
  FUZZ_CHECK(bk_bloom_contains(b, data, key_len, &found) == BK_OK && found);

  /* The modified filter round-trips too. */
  FUZZ_CHECK(bk_bloom_serialize(b, out, need, &written) == BK_OK);
  bk_bloom *again = NULL;
  FUZZ_CHECK(bk_bloom_deserialize(out, written, NULL, &again) == BK_OK);
  FUZZ_CHECK(bk_bloom_contains(again, data, key_len, &found) == BK_OK && found);
  FUZZ_CHECK(bk_bloom_merge(again, b) == BK_OK);
  bk_bloom_destroy(again);
  free(out);
  bk_bloom_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  unsigned char *fixed = fuzz_with_checksum(data, size);
  if (fixed) {
    exercise(fixed, size);
    free(fixed);
  }
  return 0;
}
