/* SPDX-License-Identifier: MIT */
/* The stateful Bloom filter (src/kbfapps/sbf.h) against its definition:
 * hand-built cells, a cell-by-cell model on random operations, the
 * invariant behind "disagreeing cells -> absent", saturation, bad input. */
#include <stdlib.h>
#include <string.h>

#include "bloomkit/params.h"
#include "kbfapps/sbf.h"
#include "testutil.h"

static bk__sbf *make(uint64_t m, unsigned k) {
  bk__sbf *f = NULL;
  assert_bk_ok(bk__sbf_create(&f, m, k, 7));
  return f;
}

static void key_of(uint64_t i, unsigned char key[8]) {
  memcpy(key, &i, 8);
}

static void cell(const bk__sbf *f, uint64_t i, unsigned *count,
                 unsigned *value) {
  assert_bk_ok(bk__sbf_cell(f, i, count, value));
}

static bk__sbf_result look(const bk__sbf *f, uint64_t key, unsigned *v) {
  unsigned char k[8];
  key_of(key, k);
  bk__sbf_result r;
  *v = 0;
  assert_bk_ok(bk__sbf_lookup(f, k, 8, &r, v));
  return r;
}

/* Keys 0.. whose k = 2 cells (of m = 8) are two distinct given cells. */
static uint64_t find_key(const bk__sbf *f, uint64_t a, uint64_t b,
                         uint64_t start) {
  for (uint64_t key = start;; key++) {
    unsigned char k[8];
    key_of(key, k);
    uint64_t idx[2];
    assert_bk_ok(bk__sbf_indices(f, k, 8, idx));
    if ((idx[0] == a && idx[1] == b) || (idx[0] == b && idx[1] == a))
      return key;
  }
}

/* Hand-built: keys A on cells {0,1}, B on {1,2}, C on {0,2} (k = 2, m = 8).
 * A = 3: cells 0,1 hold (1, 3). B = 3: cell 1 -> (2, 3), cell 2 (1, 3).
 * C = 4: cell 0 -> (2, DK), cell 2 -> (2, DK). Now A's cells are DK and 3:
 * A is 3; B's are 3 and DK: 3; C's are DK, DK: don't know. A key D on
 * cells {1, 2}... is B's pair; a key E never inserted on {0, 1} reads DK, 3
 * -> 3 (a false positive of the right kind). Delete A: cell 0 (1, DK),
 * cell 1 (1, 3). Delete B: cell 1 empty, cell 2 (1, DK): C still don't
 * know (its value is lost for good: the sBF's weakness). */
static void test_hand_built(void **state) {
  (void)state;
  bk__sbf *f = make(8, 2);
  uint64_t A = find_key(f, 0, 1, 0), B = find_key(f, 1, 2, 0),
           C = find_key(f, 0, 2, 0);
  unsigned char ka[8], kb[8], kc[8];
  key_of(A, ka);
  key_of(B, kb);
  key_of(C, kc);
  unsigned v, cnt, val;
  assert_int_equal(look(f, A, &v), BK_SBF_ABSENT);
  assert_bk_ok(bk__sbf_insert(f, ka, 8, 3));
  cell(f, 0, &cnt, &val);
  assert_true(cnt == 1 && val == 3);
  cell(f, 1, &cnt, &val);
  assert_true(cnt == 1 && val == 3);
  assert_int_equal(look(f, A, &v), BK_SBF_FOUND);
  assert_int_equal(v, 3);
  assert_bk_ok(bk__sbf_insert(f, kb, 8, 3));
  cell(f, 1, &cnt, &val);
  assert_true(cnt == 2 && val == 3);
  assert_bk_ok(bk__sbf_insert(f, kc, 8, 4));
  cell(f, 0, &cnt, &val);
  assert_true(cnt == 2 && val == BK_SBF_DONT_KNOW);
  cell(f, 2, &cnt, &val);
  assert_true(cnt == 2 && val == BK_SBF_DONT_KNOW);
  assert_int_equal(look(f, A, &v), BK_SBF_FOUND);
  assert_int_equal(v, 3);
  assert_int_equal(look(f, B, &v), BK_SBF_FOUND);
  assert_int_equal(v, 3);
  assert_int_equal(look(f, C, &v), BK_SBF_UNKNOWN);
  assert_bk_ok(bk__sbf_delete(f, ka, 8));
  cell(f, 0, &cnt, &val);
  assert_true(cnt == 1 && val == BK_SBF_DONT_KNOW);
  cell(f, 1, &cnt, &val);
  assert_true(cnt == 1 && val == 3);
  assert_bk_ok(bk__sbf_delete(f, kb, 8));
  cell(f, 1, &cnt, &val);
  assert_true(cnt == 0 && val == 0);
  assert_int_equal(look(f, C, &v), BK_SBF_UNKNOWN);
  assert_int_equal(look(f, A, &v), BK_SBF_ABSENT);
  /* Deleting A again: cell 1 is empty, nothing changes. */
  assert_int_equal(bk__sbf_delete(f, ka, 8), BK_ENOTFOUND);
  cell(f, 0, &cnt, &val);
  assert_true(cnt == 1 && val == BK_SBF_DONT_KNOW);
  /* Update C to 5 = delete + insert: both cells emptied, then (1, 5). */
  assert_bk_ok(bk__sbf_update(f, kc, 8, 5));
  cell(f, 0, &cnt, &val);
  assert_true(cnt == 1 && val == 5);
  assert_int_equal(look(f, C, &v), BK_SBF_FOUND);
  assert_int_equal(v, 5);
  assert_int_equal(bk__sbf_update(f, ka, 8, 5), BK_ENOTFOUND);
  bk__sbf_destroy(f);
}

/* Two definite values that disagree mean the key is not stored. */
static void test_disagreeing_cells_absent(void **state) {
  (void)state;
  bk__sbf *f = make(8, 2);
  uint64_t A = find_key(f, 0, 1, 0), B = find_key(f, 2, 3, 0),
           E = find_key(f, 1, 2, 0);
  unsigned char ka[8], kb[8];
  key_of(A, ka);
  key_of(B, kb);
  assert_bk_ok(bk__sbf_insert(f, ka, 8, 1));
  assert_bk_ok(bk__sbf_insert(f, kb, 8, 2));
  unsigned v;
  assert_int_equal(look(f, E, &v), BK_SBF_ABSENT); /* cells hold 1 and 2 */
  uint64_t E2 = find_key(f, 0, 1, A + 1);          /* A's twin: 1 and 1 */
  assert_int_equal(look(f, E2, &v), BK_SBF_FOUND);
  assert_int_equal(v, 1);
  bk__sbf_destroy(f);
}

/* A key hashed twice to one cell counts twice there. Counts stick at 255:
 * never decremented again, the value kept. */
static void test_saturation(void **state) {
  (void)state;
  bk__sbf *f = make(64, 3);
  unsigned char k[8];
  key_of(42, k);
  uint64_t idx[3];
  assert_bk_ok(bk__sbf_indices(f, k, 8, idx));
  for (int i = 0; i < 300; i++) assert_bk_ok(bk__sbf_insert(f, k, 8, 9));
  unsigned cnt, val, v;
  for (int i = 0; i < 3; i++) {
    cell(f, idx[i], &cnt, &val);
    assert_true(cnt == 255 && val == 9);
  }
  for (int i = 0; i < 300; i++) assert_bk_ok(bk__sbf_delete(f, k, 8));
  for (int i = 0; i < 3; i++) {
    cell(f, idx[i], &cnt, &val);
    assert_true(cnt == 255 && val == 9);
  }
  assert_int_equal(look(f, 42, &v), BK_SBF_FOUND);
  bk__sbf_info in;
  assert_bk_ok(bk__sbf_info_get(f, &in));
  assert_true(in.saturated >= 1 && in.saturated <= 3);
  assert_int_equal(in.memory, 128);
  bk__sbf_destroy(f);
}

/* ---- the definition, cell by cell, as a model ---------------------------- */

typedef struct model {
  unsigned count[64], value[64];
} model;

static void model_insert(model *md, const uint64_t *idx, unsigned k,
                         unsigned v) {
  for (unsigned i = 0; i < k; i++) {
    uint64_t c = idx[i];
    if (md->count[c] == 0)
      md->value[c] = v;
    else if (md->value[c] != v)
      md->value[c] = BK_SBF_DONT_KNOW;
    if (md->count[c] < 255) md->count[c]++;
  }
}

static bool model_delete(model *md, const uint64_t *idx, unsigned k) {
  model copy = *md;
  for (unsigned i = 0; i < k; i++) {
    uint64_t c = idx[i];
    if (copy.count[c] == 255) continue;
    if (copy.count[c] == 0) return false;
    if (--copy.count[c] == 0) copy.value[c] = 0;
  }
  *md = copy;
  return true;
}

static bk__sbf_result model_lookup(const model *md, const uint64_t *idx,
                                   unsigned k, unsigned *v) {
  for (unsigned i = 0; i < k; i++)
    if (md->count[idx[i]] == 0) return BK_SBF_ABSENT;
  unsigned seen = 0;
  for (unsigned i = 0; i < k; i++) {
    unsigned x = md->value[idx[i]];
    if (x == BK_SBF_DONT_KNOW) continue;
    if (seen && x != seen) return BK_SBF_ABSENT;
    seen = x;
  }
  *v = seen;
  return seen ? BK_SBF_FOUND : BK_SBF_UNKNOWN;
}

/* Random operations on 64 cells (crowded, so every rule fires) against the
 * model; and, since deletes here are only of stored keys, a stored key's
 * lookup is its value or "don't know", never absent or another value. */
static void test_against_model(void **state) {
  (void)state;
  uint64_t seed = bk_test_seed(3);
  for (unsigned k = 1; k <= 4; k++) {
    bk__sbf *f = make(64, k);
    model md = {{0}, {0}};
    unsigned stored[40] = {0}; /* key i's value, 0: not stored */
    uint64_t dk_seen = 0, found_seen = 0;
    for (int step = 0; step < 20000; step++) {
      uint64_t key = bk_test_next(&seed) % 40;
      unsigned char kb[8];
      key_of(key, kb);
      uint64_t idx[4];
      assert_bk_ok(bk__sbf_indices(f, kb, 8, idx));
      unsigned op = (unsigned)(bk_test_next(&seed) % 4);
      unsigned v = 1 + (unsigned)(bk_test_next(&seed) % 3);
      if (op == 0 && !stored[key]) {
        assert_bk_ok(bk__sbf_insert(f, kb, 8, v));
        model_insert(&md, idx, k, v);
        stored[key] = v;
      } else if (op == 1 && stored[key]) {
        assert_true(model_delete(&md, idx, k));
        assert_bk_ok(bk__sbf_delete(f, kb, 8));
        stored[key] = 0;
      } else if (op == 2 && stored[key]) {
        assert_true(model_delete(&md, idx, k));
        model_insert(&md, idx, k, v);
        assert_bk_ok(bk__sbf_update(f, kb, 8, v));
        stored[key] = v;
      } else {
        unsigned got = 0, want = 0;
        bk__sbf_result r;
        assert_bk_ok(bk__sbf_lookup(f, kb, 8, &r, &got));
        assert_int_equal(r, model_lookup(&md, idx, k, &want));
        if (r == BK_SBF_FOUND) assert_int_equal(got, want);
        if (stored[key]) {
          assert_true(r == BK_SBF_UNKNOWN ||
                      (r == BK_SBF_FOUND && got == stored[key]));
          dk_seen += r == BK_SBF_UNKNOWN;
          found_seen += r == BK_SBF_FOUND;
        }
      }
      for (unsigned c = 0; c < 64; c++) {
        unsigned cnt, val;
        cell(f, c, &cnt, &val);
        assert_int_equal(cnt, md.count[c]);
        assert_int_equal(val, md.value[c]);
      }
    }
    /* The run reached both outcomes for stored keys. */
    assert_true(found_seen > 0);
    if (k > 1) assert_true(dk_seen > 0);
    bk__sbf_destroy(f);
  }
}

static void test_bad_inputs(void **state) {
  (void)state;
  bk__sbf *f = (bk__sbf *)&f;
  assert_int_equal(bk__sbf_create(&f, 0, 3, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_create(&f, 10, 0, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_create(&f, 10, BK_K_MAX + 1, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_create(&f, BK_SBF_MAX_CELLS + 1, 3, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_create(NULL, 10, 3, 0), BK_EINVAL);
  assert_true(f == (bk__sbf *)&f);
  f = make(100, 3);
  unsigned char k[8] = {1};
  bk__sbf_result r;
  unsigned v, cnt, val;
  assert_int_equal(bk__sbf_insert(f, k, 8, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_insert(f, k, 8, BK_SBF_DONT_KNOW), BK_EINVAL);
  assert_int_equal(bk__sbf_insert(f, NULL, 8, 1), BK_EINVAL);
  assert_int_equal(bk__sbf_insert(NULL, k, 8, 1), BK_EINVAL);
  assert_int_equal(bk__sbf_lookup(f, k, 8, NULL, &v), BK_EINVAL);
  assert_int_equal(bk__sbf_lookup(f, NULL, 8, &r, &v), BK_EINVAL);
  assert_int_equal(bk__sbf_delete(f, NULL, 8), BK_EINVAL);
  assert_int_equal(bk__sbf_update(f, k, 8, 0), BK_EINVAL);
  assert_int_equal(bk__sbf_cell(f, 100, &cnt, &val), BK_ERANGE);
  assert_int_equal(bk__sbf_info_get(f, NULL), BK_EINVAL);
  bk__sbf_info in;
  assert_bk_ok(bk__sbf_info_get(f, &in));
  assert_int_equal(in.nonzero, 0); /* nothing above changed the cells */
  /* The empty key is a key. */
  assert_bk_ok(bk__sbf_insert(f, NULL, 0, 2));
  assert_bk_ok(bk__sbf_lookup(f, NULL, 0, &r, &v));
  assert_int_equal(r, BK_SBF_FOUND);
  bk__sbf_destroy(f);
  bk__sbf_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_built),
      cmocka_unit_test(test_disagreeing_cells_absent),
      cmocka_unit_test(test_saturation),
      cmocka_unit_test(test_against_model),
      cmocka_unit_test(test_bad_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
