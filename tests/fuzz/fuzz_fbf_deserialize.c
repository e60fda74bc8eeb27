/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for bk_fbf_deserialize: hostile bytes must yield a
 * status, never a crash, a leak or undefined behaviour. An accepted object
 * serializes again, loads again, and answers operations.
 */
#include <stdbool.h>

#include "bloomkit/fbf.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size) {
  bk_fbf *obj = NULL;
  bk_status s = bk_fbf_deserialize(data, size, NULL, &obj);
  fuzz_check_status(s);
  if (s != BK_OK) {
    FUZZ_CHECK(obj == NULL);
    return;
  }
  size_t need = 0, written = 0;
  FUZZ_CHECK(bk_fbf_serialized_size(obj, &need) == BK_OK);
  unsigned char *out = malloc(need);
  FUZZ_CHECK(out != NULL);
  FUZZ_CHECK(bk_fbf_serialize(obj, out, need, &written) == BK_OK);
  FUZZ_CHECK(written == need);
  bk_fbf *again = NULL;
  FUZZ_CHECK(bk_fbf_deserialize(out, written, NULL, &again) == BK_OK);
  bk_fbf_destroy(again);
  free(out);

  bool v;
  bk_hash h = {0x1234, 0x5678};
  FUZZ_CHECK(bk_fbf_contains_hash(obj, h, &v) == BK_OK);
  FUZZ_CHECK(bk_fbf_insert_hash(obj, h) == BK_OK);
  FUZZ_CHECK(bk_fbf_contains_hash(obj, h, &v) == BK_OK && v);
  double fpp;
  FUZZ_CHECK(bk_fbf_estimated_fpp(obj, BK_FBF_CHECK_DEFAULT, &fpp) == BK_OK);
  FUZZ_CHECK(fpp >= 0.0 && fpp <= 1.0);
  bk_fbf_info info;
  FUZZ_CHECK(bk_fbf_info_get(obj, &info) == BK_OK);
  /* One more period at most: a restored schedule is never stale. */
  FUZZ_CHECK(bk_fbf_advance(obj, info.now + info.refresh_period) == BK_OK);
  bk_fbf_destroy(obj);
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
