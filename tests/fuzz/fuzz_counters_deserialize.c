/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for bk_counters_deserialize: hostile bytes must yield a
 * status, never a crash, a leak or undefined behaviour. An accepted array
 * re-serializes to exactly the input and answers every operation within
 * its width.
 */
#include <stdbool.h>

#include "bloomkit/counters.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size) {
  bk_counters *c = NULL;
  bk_status s = bk_counters_deserialize(data, size, NULL, &c);
  fuzz_check_status(s);
  if (s != BK_OK) {
    FUZZ_CHECK(c == NULL);
    return;
  }
  size_t need = 0, written = 0;
  FUZZ_CHECK(bk_counters_serialized_size(c, &need) == BK_OK);
  FUZZ_CHECK(need == size);
  unsigned char *out = malloc(need);
  FUZZ_CHECK(out != NULL);
  FUZZ_CHECK(bk_counters_serialize(c, out, need, &written) == BK_OK);
  FUZZ_CHECK(written == need && memcmp(out, data, size) == 0);
  free(out);

  uint64_t n = bk_counters_size(c);
  unsigned width = bk_counters_width(c);
  uint32_t max = bk_counters_max(c);
  FUZZ_CHECK(n >= 1);
  FUZZ_CHECK(width == 4 || width == 8 || width == 16 || width == 32);
  FUZZ_CHECK(max == (width == 32 ? UINT32_MAX : (1u << width) - 1));
  uint64_t probe[3] = {0, n / 2, n - 1};
  for (int i = 0; i < 3; i++) {
    uint32_t v = 0, after = 0;
    FUZZ_CHECK(bk_counters_get(c, probe[i], &v) == BK_OK && v <= max);
    s = bk_counters_inc(c, probe[i], &after);
    FUZZ_CHECK(s == BK_OK || s == BK_ESATURATED);
    FUZZ_CHECK(after <= max && after >= v);
  }
  uint32_t v;
  FUZZ_CHECK(bk_counters_get(c, n, &v) == BK_EINVAL);
  bk_counters_destroy(c);
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
