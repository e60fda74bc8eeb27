/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for bk_idem_deserialize: hostile bytes must yield a
 * status, never a crash, a leak or undefined behaviour. An accepted object
 * serializes again, loads again, and answers operations.
 */
#include <stdbool.h>

#include "bloomkit/idem.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size) {
  bk_idem *obj = NULL;
  bk_status s = bk_idem_deserialize(data, size, NULL, &obj);
  fuzz_check_status(s);
  if (s != BK_OK) {
    FUZZ_CHECK(obj == NULL);
    return;
  }
  size_t need = 0, written = 0;
  FUZZ_CHECK(bk_idem_serialized_size(obj, &need) == BK_OK);
  unsigned char *out = malloc(need);
  FUZZ_CHECK(out != NULL);
  FUZZ_CHECK(bk_idem_serialize(obj, out, need, &written) == BK_OK);
  FUZZ_CHECK(written == need);
  bk_idem *again = NULL;
  FUZZ_CHECK(bk_idem_deserialize(out, written, NULL, &again) == BK_OK);
  bk_idem_destroy(again);
  free(out);

  bk_idem_op_id id = {1, 2};
  int64_t v;
  bk_idem_outcome o;
  bk_status s2 = bk_idem_add(obj, "k", 1, id, 1, &v, &o);
  FUZZ_CHECK(s2 == BK_OK || s2 == BK_ERANGE);
  bk_idem_info info;
  FUZZ_CHECK(bk_idem_info_get(obj, &info) == BK_OK);
  bk_idem_destroy(obj);
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
