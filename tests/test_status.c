/* SPDX-License-Identifier: MIT */
/*
 * Status codes: the numbering is ABI, so every value is pinned here; every
 * code in BK_STATUS_MAP must have a distinct, non-empty message and a
 * "BK_<NAME>" symbolic name, and unknown values must map to the documented
 * fallbacks.
 */
#include <limits.h>
#include <string.h>

#include "bloomkit/common.h"
#include "testutil.h"

typedef struct status_row {
  bk_status value;
  int expected_value;
  const char *name; /* "BK_" #name as the X-macro spells it */
  const char *text;
} status_row;

static const status_row k_rows[] = {
#define ROW(name, value, text) {BK_##name, value, "BK_" #name, text},
    BK_STATUS_MAP(ROW)
#undef ROW
};
#define N_ROWS (sizeof k_rows / sizeof k_rows[0])

/* The ABI: these numbers must never change. A new code may be appended to the
 * list (and to this table) but an existing one may not move. */
static void test_values_pinned(void **state) {
  (void)state;
  assert_int_equal(BK_OK, 0);
  assert_int_equal(BK_EINVAL, -1);
  assert_int_equal(BK_ENOMEM, -2);
  assert_int_equal(BK_EFULL, -3);
  assert_int_equal(BK_ENOTFOUND, -4);
  assert_int_equal(BK_ECORRUPT, -5);
  assert_int_equal(BK_EIO, -6);
  assert_int_equal(BK_EVERSION, -7);
  assert_int_equal(BK_EMISMATCH, -8);
  assert_int_equal(BK_EUNDECODABLE, -9);
  assert_int_equal(BK_ESATURATED, -10);
  assert_int_equal(BK_EUNDERFLOW, -11);
  assert_int_equal(BK_ERANGE, -12);
  assert_int_equal(BK_EBUSY, -13);
  assert_int_equal(BK_ESTATE, -14);
  /* Fifteen codes today; appending one must also extend the pins above. */
  assert_int_equal(N_ROWS, 15);
}

/* BK_OK is 0, every error negative, and the list is dense: the i-th entry is
 * -i, which is what "append with the next free negative number" yields. */
static void test_values_dense_and_negative(void **state) {
  (void)state;
  assert_int_equal(k_rows[0].value, BK_OK);
  for (size_t i = 0; i < N_ROWS; i++) {
    assert_int_equal((int)k_rows[i].value, k_rows[i].expected_value);
    assert_int_equal((int)k_rows[i].value, -(int)i);
    if (i > 0) assert_true((int)k_rows[i].value < 0);
  }
}

static void test_strerror_matches_map(void **state) {
  (void)state;
  for (size_t i = 0; i < N_ROWS; i++) {
    const char *msg = bk_strerror(k_rows[i].value);
    assert_non_null(msg);
    assert_true(msg[0] != '\0');
    assert_string_equal(msg, k_rows[i].text);
    assert_string_not_equal(msg, "unknown status");
  }
}

static void test_strerror_distinct(void **state) {
  (void)state;
  for (size_t i = 0; i < N_ROWS; i++)
    for (size_t j = i + 1; j < N_ROWS; j++)
      assert_string_not_equal(bk_strerror(k_rows[i].value),
                              bk_strerror(k_rows[j].value));
}

static void test_status_name(void **state) {
  (void)state;
  for (size_t i = 0; i < N_ROWS; i++) {
    const char *name = bk_status_name(k_rows[i].value);
    assert_non_null(name);
    assert_true(strncmp(name, "BK_", 3) == 0);
    assert_true(strlen(name) > 3);
    assert_string_equal(name, k_rows[i].name);
    assert_string_not_equal(name, "BK_UNKNOWN");
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(name, bk_status_name(k_rows[j].value));
  }
  assert_string_equal(bk_status_name(BK_OK), "BK_OK");
  assert_string_equal(bk_status_name(BK_EINVAL), "BK_EINVAL");
  assert_string_equal(bk_status_name(BK_ESTATE), "BK_ESTATE");
}

static void test_unknown_values(void **state) {
  (void)state;
  /* The enum's underlying type is int (no -fshort-enums), so these casts
   * produce out-of-list values rather than undefined behaviour. */
  const int unknown[] = {1, 2, 100, -15, -16, -1000, INT_MAX, INT_MIN};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    bk_status s = (bk_status)unknown[i];
    assert_non_null(bk_strerror(s));
    assert_string_equal(bk_strerror(s), "unknown status");
    assert_string_equal(bk_status_name(s), "BK_UNKNOWN");
  }
}

static void test_version_string(void **state) {
  (void)state;
  assert_non_null(bk_version_string());
  assert_string_equal(bk_version_string(), BK_VERSION_STRING);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_pinned),
      cmocka_unit_test(test_values_dense_and_negative),
      cmocka_unit_test(test_strerror_matches_map),
      cmocka_unit_test(test_strerror_distinct),
      cmocka_unit_test(test_status_name),
      cmocka_unit_test(test_unknown_values),
      cmocka_unit_test(test_version_string),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
