/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for bk_bits_deserialize: hostile bytes must yield a
 * status, never a crash, a leak or undefined behaviour. An accepted array
 * re-serializes to exactly the input and answers every operation.
 */
#include <stdbool.h>

#include "bloomkit/bits.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size) {
  bk_bits *bits = NULL;
  bk_status s = bk_bits_deserialize(data, size, NULL, &bits);
  fuzz_check_status(s);
  if (s != BK_OK) {
    FUZZ_CHECK(bits == NULL);
    return;
  }
  size_t need = 0, written = 0;
  FUZZ_CHECK(bk_bits_serialized_size(bits, &need) == BK_OK);
  FUZZ_CHECK(need == size);
  unsigned char *out = malloc(need);
  FUZZ_CHECK(out != NULL);
  FUZZ_CHECK(bk_bits_serialize(bits, out, need, &written) == BK_OK);
  FUZZ_CHECK(written == need && memcmp(out, data, size) == 0);
  free(out);

  uint64_t n = bk_bits_size(bits), ones = 0;
  FUZZ_CHECK(n >= 1);
  FUZZ_CHECK(bk_bits_popcount(bits, &ones) == BK_OK && ones <= n);
  uint64_t last = n - 1;
  bool was, v;
  FUZZ_CHECK(bk_bits_test_and_set(bits, last, &was) == BK_OK);
  FUZZ_CHECK(bk_bits_test(bits, last, &v) == BK_OK && v);
  FUZZ_CHECK(bk_bits_test(bits, n, &v) == BK_EINVAL);
  FUZZ_CHECK(bk_bits_clear(bits, 0) == BK_OK);
  FUZZ_CHECK(bk_bits_test(bits, 0, &v) == BK_OK && !v);
  bk_bits_destroy(bits);
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
