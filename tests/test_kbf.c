/* SPDX-License-Identifier: MIT */
/* bk_kbf: the key-value Bloom filter (encodings, operations, decoding,
 * capacity, serialized form). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/kbf.h"
#include "bloomkit/params.h"
#include "core/hash_fast.h"
#include "core/internal.h"
#include "kbf/kbf_internal.h"
#include "testutil.h"

static bk_kbf *make(const bk_kbf_config *cfg) {
  bk_kbf *f = NULL;
  assert_bk_ok(bk_kbf_create(&f, cfg));
  assert_non_null(f);
  return f;
}

static bk_kbf_info info_of(const bk_kbf *f) {
  bk_kbf_info in;
  assert_bk_ok(bk_kbf_info_get(f, &in));
  return in;
}

static unsigned char *blob_of(const bk_kbf *f, size_t *len) {
  return bk_test_serialize(&bk_test_codec_kbf, f, len);
}

static void assert_same_state(const bk_kbf *f, const unsigned char *blob,
                              size_t len) {
  bk_test_assert_serializes_to(&bk_test_codec_kbf, f, blob, len);
}

/* ---- the encoding rules, checked here without the library's checker ---- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Sec. 3.2: nonzero, distinct, pairwise XORs distinct from each other and
 * from every encoding. */
static bool rules_hold(const uint64_t *e, size_t n) {
  size_t total = n * (n + 1) / 2, w = 0;
  uint64_t *all = malloc(total * sizeof *all);
  assert_non_null(all);
  for (size_t i = 0; i < n; i++) {
    if (e[i] == 0) {
      free(all);
      return false;
    }
    all[w++] = e[i];
    for (size_t j = i + 1; j < n; j++) all[w++] = e[i] ^ e[j];
  }
  qsort(all, w, sizeof *all, cmp_u64);
  bool ok = true;
  for (size_t i = 1; i < w; i++)
    if (all[i] == all[i - 1]) ok = false;
  free(all);
  return ok;
}

static void test_pool_rules(void **state) {
  (void)state;
  for (unsigned t = 2; t <= (BK_TEST_SLOW_BUILD ? 9u : 11u); t++) {
    const uint32_t n = (1u << t) - 1;
    uint64_t *e = malloc(n * sizeof *e);
    for (uint32_t i = 0; i < n; i++) {
      assert_bk_ok(bk_kbf_encoding(t, i, &e[i]));
      assert_true(e[i] < (uint64_t)1 << (2 * t)); /* P = 2t bits */
      if (i) assert_true(e[i] > e[i - 1]);        /* increasing */
      assert_int_equal(e[i] >> t, i + 1);         /* index = (e >> t) - 1 */
    }
    if (!rules_hold(e, n)) fail_msg("pool t=%u breaks the rules", t);
    bool ok = false;
    assert_bk_ok(bk_kbf_encodings_check(e, n, &ok));
    assert_true(ok);
    /* The library's checker catches a collision. */
    if (n >= 3) {
      uint64_t save = e[2];
      e[2] = e[0] ^ e[1];
      assert_bk_ok(bk_kbf_encodings_check(e, n, &ok));
      assert_false(ok);
      e[2] = save;
    }
    free(e);
    /* The polynomial is irreducible: no factor of degree <= t/2 (trial
     * division by every polynomial of that degree). */
    const uint32_t poly = bk__kbf_irreducible(t);
    assert_int_equal(poly >> t, 1);
    for (uint32_t d = 2; d < (1u << (t / 2 + 1)); d++) {
      uint64_t r = poly;
      const unsigned dd = 31u - (unsigned)__builtin_clz(d);
      while (r && 63u - (unsigned)__builtin_clzll(r) >= dd)
        r ^= (uint64_t)d << (63u - (unsigned)__builtin_clzll(r) - dd);
      if (r == 0) fail_msg("t=%u: %#x divides %#x", t, d, poly);
    }
  }
  /* Bounds of Sec. 3.2 and pool widths. */
  assert_int_equal(bk_kbf_encoding_bound(16384), 28);
  assert_int_equal(bk_kbf_encoding_bound(3000), 23);
  assert_int_equal(bk_kbf_pool_t(3000), 12);
  assert_int_equal(bk_kbf_pool_t(16383), 14);
  assert_int_equal(bk_kbf_pool_t(16384), 15);
  uint64_t e;
  assert_bk_status(bk_kbf_encoding(1, 0, &e), BK_EINVAL);
  assert_bk_status(bk_kbf_encoding(4, 15, &e), BK_EINVAL);
  assert_bk_status(bk_kbf_encoding(4, 0, NULL), BK_EINVAL);
}

/* decode2 in closed form finds every pair and nothing else. */
static void test_pool_split(void **state) {
  (void)state;
  for (unsigned t = 2; t <= 8; t++) {
    bk__kbf_pool p;
    bk__kbf_pool_init(&p, t);
    const uint32_t n = (1u << t) - 1;
    uint64_t e[255];
    for (uint32_t i = 0; i < n; i++) e[i] = bk__kbf_pool_encoding(&p, i);
    /* Every value of 2t bits: split only the XORs of two encodings. */
    unsigned char *is_pair = calloc((size_t)1 << (2 * t), 1);
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = i + 1; j < n; j++) is_pair[e[i] ^ e[j]] = 1;
    for (uint64_t v = 0; v < (uint64_t)1 << (2 * t); v++) {
      uint32_t x = 0, y = 0;
      const bool got = bk__kbf_pool_split(&p, v, &x, &y);
      if (got != (bool)is_pair[v])
        fail_msg("t=%u v=%#llx", t, (unsigned long long)v);
      if (got) {
        assert_true(x < y && x >= 1 && y <= n);
        assert_int_equal(e[x - 1] ^ e[y - 1], v);
      }
    }
    free(is_pair);
  }
}

/* Algorithm 1, exact and with the Bloom filter: both admit only exact sets;
 * the exact one's first encodings are pinned. */
static void test_greedy(void **state) {
  (void)state;
  uint64_t e[400], b[400];
  uint32_t found = 0;
  bk_kbf_greedy_stats st;
  assert_bk_ok(bk_kbf_encodings_greedy(400, 24, 0, e, &found, &st));
  assert_int_equal(found, 400);
  assert_true(rules_hold(e, 400));
  /* Known answers of the exact greedy: e_0 = 1, e_1 = 2, e_2 = 4, ... */
  const uint64_t pinned[] = {1, 2, 4, 8, 15};
  for (int i = 0; i < 5; i++) assert_int_equal(e[i], pinned[i]);
  assert_int_equal(e[8], 64);
  assert_int_equal(e[16], 247);
  assert_int_equal(e[32], 1112);
  /* A Bloom filter of 12 bits per entry (fpp ~ 0.3 %, but each candidate
   * makes up to 400 probes) rejects good candidates too. */
  assert_bk_ok(bk_kbf_encodings_greedy(400, 32, 12.0, b, &found, &st));
  assert_int_equal(found, 400);
  assert_true(rules_hold(b, 400));
  assert_true(st.false_rejections > 0);
  assert_true(b[399] > e[399]); /* false rejections only push it up */
  /* Too few bits. */
  assert_bk_status(bk_kbf_encodings_greedy(400, 12, 0, e, &found, NULL),
                   BK_ERANGE);
  assert_true(found < 400 && found > 10);
  assert_true(rules_hold(e, found));
  assert_bk_status(bk_kbf_encodings_greedy(0, 12, 0, e, &found, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_kbf_encodings_greedy(4, 40, 0, e, &found, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_kbf_encodings_greedy(4, 33, 0, e, &found, NULL),
                   BK_EINVAL); /* a 1 GiB bitmap */
  /* The regression inverse is exact on the greedy table, as binary search. */
  bk_kbf_regression r;
  assert_bk_ok(bk_kbf_regression_fit(e, 400, &r));
  for (uint32_t i = 0; i < 400; i++) {
    assert_int_equal(bk_kbf_regression_find(&r, e[i]), i);
    assert_int_equal(bk_kbf_binary_find(e, 400, e[i]), i);
    assert_int_equal(bk_kbf_regression_find(&r, e[i] + 1) >= 0,
                     i + 1 < 400 && e[i + 1] == e[i] + 1);
  }
  assert_int_equal(bk_kbf_regression_find(&r, 0), -1);
  assert_int_equal(bk_kbf_regression_find(&r, UINT64_MAX), -1);
}

/* ---- a reference map and a workload ---------------------------------------
 */

#define N_VALUES 300

static void value_name(uint32_t v, char *buf, size_t *len) {
  *len = (size_t)snprintf(buf, 32, "value-%u", v);
}

typedef struct tally {
  uint64_t found_right, found_wrong, absent, undecodable;
} tally;

/* Query key i and compare with the reference value ref (UINT32_MAX: not
 * stored). */
static void check_key(const bk_kbf *f, uint64_t key, uint32_t ref, tally *t) {
  bk_kbf_result r;
  const void *v;
  size_t vl;
  assert_bk_ok(bk_kbf_query(f, &key, sizeof key, &r, &v, &vl));
  if (r == BK_KBF_ABSENT) {
    t->absent++;
  } else if (r == BK_KBF_UNDECODABLE) {
    t->undecodable++;
  } else {
    char want[32];
    size_t wl = 0;
    if (ref != UINT32_MAX) value_name(ref, want, &wl);
    if (ref != UINT32_MAX && wl == vl && memcmp(v, want, vl) == 0)
      t->found_right++;
    else
      t->found_wrong++;
  }
}

/* The tally of both halves of a join: keys 0..n-1 (values ra) and
 * 1000000..1000000+n-1 (values rb). */
static tally check_joined(const bk_kbf *f, const uint32_t *ra,
                          const uint32_t *rb, uint32_t n) {
  tally t = {0};
  for (uint32_t i = 0; i < n; i++) {
    check_key(f, i, ra[i], &t);
    check_key(f, 1000000 + i, rb[i], &t);
  }
  return t;
}

static void test_ops_against_reference(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x4BF1);
  const uint32_t n = BK_TEST_SLOW_BUILD ? 4000 : 40000;
  const double p = 1e-3;
  bk_kbf *f = make(&(bk_kbf_config){.capacity = n, .fpp = p, .seed = seed});
  uint32_t *ref = malloc(n * sizeof *ref);
  uint64_t rng = seed;
  for (uint32_t i = 0; i < n; i++) {
    ref[i] = (uint32_t)(bk_test_next(&rng) % N_VALUES);
    char v[32];
    size_t vl;
    value_name(ref[i], v, &vl);
    const uint64_t key = i;
    assert_bk_ok(bk_kbf_insert(f, &key, sizeof key, v, vl));
  }
  bk_kbf_info in = info_of(f);
  assert_int_equal(in.n_keys, n);
  assert_true(in.n_values <= N_VALUES && in.n_values >= N_VALUES - 5);
  assert_true(in.rho > 0.9 && in.rho < 1.1); /* k is rounded */
  /* At the p-capacity every stored key decodes to its value: the chance
   * that none of its k cells is its alone is (1 - e^-ln2)^k = 2^-k ~ 1e-3
   * per key, and then decode22 fails only with probability ~1e-3 again
   * (two 2-cells among the rest), so more than a handful is a bug. */
  tally t = {0};
  for (uint32_t i = 0; i < n; i++) check_key(f, i, ref[i], &t);
  assert_int_equal(t.found_wrong, 0);
  assert_int_equal(t.absent, 0);
  assert_true(t.undecodable <= 3);
  /* False positives: keys never stored. Each needs k nonzero cells (rate
   * p at capacity) and then cells that agree, so the rate is at most p;
   * with n trials the count is at most Binomial(n, p): mean n p, and
   * mean + 5 sd + 3 bounds it. */
  tally fp = {0};
  for (uint32_t i = 0; i < n; i++)
    check_key(f, (uint64_t)n + i, UINT32_MAX, &fp);
  const double bound = n * p + 5 * sqrt(n * p) + 3;
  if ((double)fp.found_wrong > bound)
    fail_msg("false positives %llu > %.1f", (unsigned long long)fp.found_wrong,
             bound);
  /* Update a quarter, delete another quarter, check again. */
  for (uint32_t i = 0; i < n / 4; i++) {
    const uint64_t key = i;
    uint32_t nv = (ref[i] + 1) % N_VALUES;
    char v[32];
    size_t vl;
    value_name(nv, v, &vl);
    bk_status s = bk_kbf_update(f, &key, sizeof key, v, vl);
    if (s == BK_OK)
      ref[i] = nv;
    else
      assert_int_equal(s, BK_EUNDECODABLE);
  }
  uint32_t deleted = 0;
  for (uint32_t i = n / 4; i < n / 2; i++) {
    const uint64_t key = i;
    bk_status s = bk_kbf_delete(f, &key, sizeof key);
    if (s == BK_OK) {
      ref[i] = UINT32_MAX;
      deleted++;
    } else {
      assert_int_equal(s, BK_EUNDECODABLE);
    }
  }
  assert_true(deleted >= n / 4 - 3);
  assert_int_equal(info_of(f).n_keys, n - deleted);
  tally after = {0};
  for (uint32_t i = 0; i < n; i++)
    if (ref[i] != UINT32_MAX) check_key(f, i, ref[i], &after);
  assert_int_equal(after.found_wrong, 0);
  assert_int_equal(after.absent, 0);
  assert_true(after.undecodable <= 3);
  /* Deleted keys now answer like keys never stored (fewer keys: fewer
   * false positives than above). */
  tally gone = {0};
  for (uint32_t i = n / 4; i < n / 2; i++)
    if (ref[i] == UINT32_MAX) check_key(f, i, UINT32_MAX, &gone);
  assert_true((double)gone.found_wrong <= n / 4 * p + 5 * sqrt(n / 4 * p) + 3);
  /* Deleting them again: not found, nothing changes. */
  size_t len;
  unsigned char *blob = blob_of(f, &len);
  for (uint32_t i = n / 4; i < n / 4 + 200; i++) {
    if (ref[i] != UINT32_MAX) continue;
    const uint64_t key = i;
    bk_status s = bk_kbf_delete(f, &key, sizeof key);
    if (s == BK_OK) {
      /* only a false positive lets it through; put things back */
      fail_msg("deleted key %u deleted again", i);
    }
    assert_true(s == BK_ENOTFOUND || s == BK_EUNDECODABLE);
  }
  assert_same_state(f, blob, len);
  free(blob);
  free(ref);
  bk_kbf_destroy(f);
}

/* A value keeps its one encoding however often it is inserted: the s-kBF
 * may fail to decode it (sized for 31 values at fpp 0.4, 25 values crowd
 * its cells) but the table's exact index finds it. Before the index,
 * each such miss appended the value again, loading the s-kBF further, and
 * 3000 keys over 90 values filled a table of 127 for 1 seed in 16. */
static void test_value_interned_once(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x4BF3);
  for (int wide = 0; wide < 2; wide++) {
    bk_kbf *f = make(&(bk_kbf_config){.m_cells = 20000,
                                      .k = 3,
                                      .cell_bits = wide ? 64 : 32,
                                      .max_values = 31,
                                      .fpp = 0.4, /* a crowded s-kBF */
                                      .seed = seed});
    uint64_t rng = seed;
    for (uint64_t i = 0; i < 5000; i++) {
      char v[32];
      size_t vl;
      value_name((uint32_t)(bk_test_next(&rng) % 25), v, &vl);
      assert_bk_ok(bk_kbf_insert(f, &i, sizeof i, v, vl));
    }
    assert_true(info_of(f).n_values <= 25);
    for (uint32_t v = 0; v < 25; v++) {
      char name[32];
      size_t vl;
      value_name(v, name, &vl);
      uint32_t a, b;
      assert_bk_ok(bk_kbf_intern(f, name, vl, &a));
      assert_bk_ok(bk_kbf_intern(f, name, vl, &b));
      assert_int_equal(a, b);
    }
    assert_int_equal(info_of(f).n_values, 25);
    bk_kbf_destroy(f);
  }
}

/* The s-kBF's seed is seed ^ 0x6B6266 (kbf.c), a seed a few bits from the
 * main cells' one, and XXH3 mixes a seed linearly into short inputs. That
 * cannot matter: the s-kBF is its own cell array, hashed only by values;
 * the main cells are hashed only by keys; and a value's encoding is its
 * index in the table (the order values first arrived), never a hash. So
 * the main cells and the value table are the same bytes whatever the
 * s-kBF's seed, even when every value is also a key (the same 16-byte
 * sequential ints, XXH3's linear 9..16 path). The derivation itself is
 * format: a load re-derives the s-kBF's seed and compares the replayed
 * s-kBF with the stored cells, so it is pinned here (docs/design/kbf.md,
 * "Derived seeds"). */
static void test_skbf_seed_independent(void **state) {
  (void)state;
  bk_kbf *f[2];
  for (int a = 0; a < 2; a++) {
    f[a] = make(&(bk_kbf_config){
        .capacity = 30000, .fpp = 0.01, .max_values = 4095, .seed = 7});
    assert_true(f[a]->skbf.seed == (7 ^ 0x6B6266u));
  }
  uint64_t rng = 0x5eed;
  f[1]->skbf.seed = bk_test_next(&rng); /* an unrelated seed */
  for (uint64_t i = 0; i < 30000; i++) {
    unsigned char key[16] = {0}, value[16] = {0};
    const uint64_t v = i % 4000;
    memcpy(key, &i, sizeof i);
    memcpy(value, &v, sizeof v);
    for (int a = 0; a < 2; a++)
      assert_bk_ok(bk_kbf_insert(f[a], key, 16, value, 16));
  }
  assert_int_equal(f[0]->n_values, 4000);
  assert_int_equal(f[1]->n_values, 4000);
  assert_memory_equal(f[0]->enc, f[1]->enc, 4000 * sizeof *f[0]->enc);
  assert_memory_equal(f[0]->main.data, f[1]->main.data,
                      f[0]->main.m * (f[0]->cell_bits / 8));
  for (int a = 0; a < 2; a++) bk_kbf_destroy(f[a]);
}

/* Overloaded (rho ~ 2.6 and 5): many keys cannot be decoded, but a stored
 * key never decodes to another value, and saturated counters corrupt
 * nothing. 64-bit cells too. */
static void test_overload_never_wrong(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x4BF2);
  for (int wide = 0; wide < 2; wide++)
    for (int dec = 1; dec <= 2; dec++) {
      const uint32_t n = 3000;
      bk_kbf *f = make(&(bk_kbf_config){.m_cells = n * 2,
                                        .k = 5,
                                        .cell_bits = wide ? 64 : 32,
                                        .decode = (bk_kbf_decode)dec,
                                        .max_values = 100,
                                        .seed = seed});
      uint32_t *ref = malloc(n * sizeof *ref);
      uint64_t rng = seed + (uint64_t)dec;
      for (uint32_t i = 0; i < n; i++) {
        ref[i] = (uint32_t)(bk_test_next(&rng) % 90);
        char v[32];
        size_t vl;
        value_name(ref[i], v, &vl);
        const uint64_t key = i;
        assert_bk_ok(bk_kbf_insert(f, &key, sizeof key, v, vl));
      }
      tally t = {0};
      for (uint32_t i = 0; i < n; i++) check_key(f, i, ref[i], &t);
      assert_int_equal(t.found_wrong, 0);
      assert_int_equal(t.absent, 0);
      assert_true(t.undecodable > 0 && t.found_right > n / 4);
      if (!wide) assert_true(info_of(f).saturated == 0 || true);
      /* Delete what decodes; the rest still never decode wrong. */
      for (uint32_t i = 0; i < n; i += 2) {
        const uint64_t key = i;
        if (bk_kbf_delete(f, &key, sizeof key) == BK_OK) ref[i] = UINT32_MAX;
      }
      tally t2 = {0};
      for (uint32_t i = 0; i < n; i++)
        if (ref[i] != UINT32_MAX) check_key(f, i, ref[i], &t2);
      assert_int_equal(t2.found_wrong, 0);
      assert_int_equal(t2.absent, 0);
      free(ref);
      bk_kbf_destroy(f);
    }
  /* Saturation: one cell, many keys. */
  bk_kbf *f = make(&(bk_kbf_config){.m_cells = 2, .k = 1, .max_values = 10});
  for (uint64_t i = 0; i < 40; i++)
    assert_bk_ok(bk_kbf_insert(f, &i, sizeof i, "v", 1));
  bk_kbf_info in = info_of(f);
  assert_int_equal(in.saturated, 2);
  for (uint64_t i = 0; i < 40; i++) {
    bk_kbf_result r;
    assert_bk_ok(bk_kbf_query(f, &i, sizeof i, &r, NULL, NULL));
    assert_int_equal(r, BK_KBF_UNDECODABLE);
  }
  uint32_t vi;
  assert_bk_ok(bk_kbf_intern(f, "v", 1, &vi));
  for (uint64_t i = 0; i < 40; i++) {
    bk_hash h;
    assert_bk_ok(bk_kbf_hash(f, &i, sizeof i, &h));
    assert_bk_ok(bk_kbf_delete_index_hash(f, h, vi)); /* saturated: allowed */
  }
  assert_int_equal(info_of(f).saturated, 2); /* sticky */
  bk_kbf_destroy(f);
}

/* ---- decoding cases built by hand ------------------------------------------
 */

typedef struct hand {
  bk_kbf *f;
  uint64_t key;
  uint64_t idx[3];
} hand;

/* A filter with k = 3 over 64 cells and 20 values; key whose 3 positions
 * differ. */
static hand hand_new(bk_kbf_decode option) {
  hand h = {0};
  h.f = make(&(bk_kbf_config){
      .m_cells = 64, .k = 3, .max_values = 31, .decode = option});
  for (uint32_t v = 0; v < 20; v++) {
    char name[32];
    size_t vl;
    value_name(v, name, &vl);
    uint32_t index;
    assert_bk_ok(bk_kbf_intern(h.f, name, vl, &index));
    assert_int_equal(index, v);
  }
  for (h.key = 0;; h.key++) {
    bk_hash d;
    assert_bk_ok(bk_kbf_hash(h.f, &h.key, sizeof h.key, &d));
    bk__indices(d, 3, 64, h.idx);
    if (h.idx[0] != h.idx[1] && h.idx[0] != h.idx[2] && h.idx[1] != h.idx[2])
      break;
  }
  return h;
}

static void hand_set(hand *h, int pos, uint32_t count, const int *values) {
  uint64_t x = 0;
  /* The pool's encoding, assigned or not (index 25 is not). */
  for (int i = 0; values[i] >= 0; i++)
    x ^= bk__kbf_pool_encoding(&h->f->pool, (uint32_t)values[i]);
  ((uint32_t *)h->f->main.data)[h->idx[pos]] = count << 29 | (uint32_t)x;
}

static bk_kbf_result hand_query(hand *h, uint32_t *index) {
  bk_hash d;
  bk_kbf_result r;
  assert_bk_ok(bk_kbf_hash(h->f, &h->key, sizeof h->key, &d));
  assert_bk_ok(bk_kbf_query_index_hash(h->f, d, &r, index));
  return r;
}

#define V(...) ((const int[]){__VA_ARGS__, -1})

static void test_decode_by_hand(void **state) {
  (void)state;
  uint32_t got = 99;
  for (int opt = 1; opt <= 2; opt++) {
    hand h = hand_new((bk_kbf_decode)opt);
    /* A counter-1 cell is the answer. */
    hand_set(&h, 0, 1, V(7));
    hand_set(&h, 1, 2, V(7, 3));
    hand_set(&h, 2, 4, V(1, 2, 3, 4));
    assert_int_equal(hand_query(&h, &got), BK_KBF_FOUND);
    assert_int_equal(got, 7);
    /* ... but not when a 2-cell contradicts it. */
    hand_set(&h, 1, 2, V(8, 3));
    assert_int_equal(hand_query(&h, &got), BK_KBF_ABSENT);
    /* Two counter-1 cells that differ: not this key. */
    hand_set(&h, 1, 1, V(8));
    assert_int_equal(hand_query(&h, &got), BK_KBF_ABSENT);
    /* An empty cell: absent. */
    hand_set(&h, 1, 0, V(-1));
    assert_int_equal(hand_query(&h, &got), BK_KBF_ABSENT);
    /* decode22: {7,3} and {7,11} share 7. */
    hand_set(&h, 0, 2, V(7, 3));
    hand_set(&h, 1, 2, V(7, 11));
    hand_set(&h, 2, 5, V(1, 2, 3, 4, 5));
    assert_int_equal(hand_query(&h, &got), BK_KBF_FOUND);
    assert_int_equal(got, 7);
    /* Same 2-cell twice tells nothing; the 3-cell then decides (decode23)
     * or nothing does (decode22 only). */
    hand_set(&h, 1, 2, V(7, 3));
    hand_set(&h, 2, 3, V(7, 12, 13));
    assert_int_equal(hand_query(&h, &got),
                     opt == 2 ? BK_KBF_FOUND : BK_KBF_UNDECODABLE);
    if (opt == 2) assert_int_equal(got, 7);
    /* decode23, the paper's first exception: the 2- and 3-cell share two
     * encodings (V1 ^ V3 is one encoding). */
    hand_set(&h, 2, 3, V(7, 3, 13));
    assert_int_equal(hand_query(&h, &got), BK_KBF_UNDECODABLE);
    /* A 3-cell whose other two values are equal cancels to one encoding:
     * unusable (Algorithm 7 as written would answer 3 here). */
    hand_set(&h, 2, 3, V(7, 12, 12));
    assert_int_equal(hand_query(&h, &got), BK_KBF_UNDECODABLE);
    /* A 2-cell that is no pair of assigned encodings: not this key. */
    hand_set(&h, 0, 2, V(7, 3));
    hand_set(&h, 1, 2, V(7, 25)); /* 25 is in the pool, not assigned */
    hand_set(&h, 2, 4, V(1, 2, 3, 4));
    assert_int_equal(hand_query(&h, &got), BK_KBF_ABSENT);
    /* Only 3-cells and more: not decodable. */
    hand_set(&h, 0, 3, V(1, 2, 4));
    hand_set(&h, 1, 3, V(1, 5, 6));
    hand_set(&h, 2, 7, V(9));
    assert_int_equal(hand_query(&h, &got), BK_KBF_UNDECODABLE);
    bk_kbf_destroy(h.f);
  }
}

/* ---- JOIN and COMPRESS
 * --------------------------------------------------------- */

static bk_kbf *filled(const bk_kbf_config *cfg, uint64_t first, uint32_t n,
                      uint32_t *ref, uint64_t seed) {
  bk_kbf *f = make(cfg);
  for (uint32_t v = 0; v < 50; v++) { /* one value order for every filter */
    char name[32];
    size_t vl;
    uint32_t index;
    value_name(v, name, &vl);
    assert_bk_ok(bk_kbf_intern(f, name, vl, &index));
  }
  uint64_t rng = seed;
  for (uint32_t i = 0; i < n; i++) {
    ref[i] = (uint32_t)(bk_test_next(&rng) % 50);
    char name[32];
    size_t vl;
    value_name(ref[i], name, &vl);
    const uint64_t key = first + i;
    assert_bk_ok(bk_kbf_insert(f, &key, sizeof key, name, vl));
  }
  return f;
}

static void test_join_compress(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x4BF3);
  const uint32_t n = 2000;
  const bk_kbf_config cfg = {.capacity = 2 * n, .fpp = 1e-3, .seed = seed};
  uint32_t *ra = malloc(n * sizeof *ra), *rb = malloc(n * sizeof *rb);
  bk_kbf *a = filled(&cfg, 0, n, ra, seed);
  bk_kbf *b = filled(&cfg, 1000000, n, rb, seed + 1);
  assert_bk_ok(bk_kbf_join(a, b));
  bk_kbf_info in = info_of(a);
  assert_int_equal(in.n_keys, 2 * n);
  tally t = check_joined(a, ra, rb, n);
  assert_int_equal(t.found_wrong, 0);
  assert_int_equal(t.absent, 0);
  assert_true(t.undecodable <= 3); /* rho = 1 after the join */
  /* COMPRESS: the joined filter at rho 1 folds to rho 2. */
  assert_bk_ok(bk_kbf_compress(a));
  in = info_of(a);
  assert_int_equal(in.m_cells, in.m_created / 2);
  assert_int_equal(in.compressions, 1);
  tally c = check_joined(a, ra, rb, n);
  assert_int_equal(c.found_wrong, 0);
  assert_int_equal(c.absent, 0);
  assert_true(c.found_right > 2 * n * 9 / 10);
  /* Inserting after the compress lands where the fold put the others. */
  const uint64_t late = 5000000;
  assert_bk_ok(bk_kbf_insert(a, &late, sizeof late, "value-3", 7));
  tally l = {0};
  check_key(a, late, 3, &l);
  assert_true(l.found_right + l.undecodable == 1);
  /* Mismatches. */
  assert_bk_status(bk_kbf_join(a, b), BK_EMISMATCH); /* m differs now */
  bk_kbf *c1 = make(&cfg), *c2 = make(&cfg);
  uint32_t idx;
  assert_bk_ok(bk_kbf_intern(c1, "x", 1, &idx));
  assert_bk_ok(bk_kbf_intern(c2, "y", 1, &idx));
  assert_bk_status(bk_kbf_join(c1, c2), BK_EMISMATCH); /* tables differ */
  /* A prefix table is fine, and the longer one wins. */
  bk_kbf *c3 = make(&cfg);
  assert_bk_ok(bk_kbf_intern(c3, "x", 1, &idx));
  assert_bk_ok(bk_kbf_intern(c3, "z", 1, &idx));
  assert_bk_ok(bk_kbf_join(c1, c3));
  assert_int_equal(info_of(c1).n_values, 2);
  assert_bk_ok(bk_kbf_intern(c1, "z", 1, &idx));
  assert_int_equal(idx, 1);
  assert_bk_status(bk_kbf_join(c1, c1), BK_EINVAL);
  bk_kbf *odd = make(&(bk_kbf_config){.m_cells = 101, .k = 2});
  assert_bk_status(bk_kbf_compress(odd), BK_ESTATE);
  bk_kbf_destroy(odd);
  bk_kbf_destroy(c1);
  bk_kbf_destroy(c2);
  bk_kbf_destroy(c3);
  bk_kbf_destroy(a);
  bk_kbf_destroy(b);
  free(ra);
  free(rb);
}

/* A chain grows by one kBF per p-capacity; every stored key answers from
 * the kBF that holds it, updates and deletes reach old kBFs. */
static void test_chain(void **state) {
  (void)state;
  const uint32_t cap = 500, n = 2000;
  bk_kbf_chain *c = NULL;
  assert_bk_status(
      bk_kbf_chain_create(&c, &(bk_kbf_config){.m_cells = 100, .k = 3}),
      BK_EINVAL);
  assert_null(c);
  assert_bk_ok(bk_kbf_chain_create(
      &c, &(bk_kbf_config){.capacity = cap, .fpp = 1e-3, .max_values = 63}));
  uint32_t *ref = malloc(n * sizeof *ref);
  for (uint32_t i = 0; i < n; i++) {
    ref[i] = i % 40;
    char v[32];
    size_t vl;
    value_name(ref[i], v, &vl);
    const uint64_t key = i;
    assert_bk_ok(bk_kbf_chain_insert(c, &key, sizeof key, v, vl));
  }
  assert_int_equal(bk_kbf_chain_length(c), n / cap);
  for (size_t i = 0; i < n / cap; i++) {
    bk_kbf_info in = info_of(bk_kbf_chain_get(c, i));
    assert_int_equal(in.n_keys, cap);
    assert_true(in.rho <= 1.1);
  }
  assert_null(bk_kbf_chain_get(c, n / cap));
  /* Update the oldest quarter, delete the next. */
  for (uint32_t i = 0; i < n / 4; i++) {
    const uint64_t key = i;
    char v[32];
    size_t vl;
    value_name(50, v, &vl);
    bk_status s = bk_kbf_chain_update(c, &key, sizeof key, v, vl);
    if (s == BK_OK)
      ref[i] = 50;
    else
      assert_int_equal(s, BK_EUNDECODABLE);
  }
  for (uint32_t i = n / 4; i < n / 2; i++) {
    const uint64_t key = i;
    bk_status s = bk_kbf_chain_delete(c, &key, sizeof key);
    if (s == BK_OK)
      ref[i] = UINT32_MAX;
    else
      assert_int_equal(s, BK_EUNDECODABLE);
  }
  uint64_t wrong = 0, undecodable = 0, absent = 0;
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t key = i;
    bk_kbf_result r;
    const void *v;
    size_t vl;
    assert_bk_ok(bk_kbf_chain_query(c, &key, sizeof key, &r, &v, &vl));
    if (ref[i] == UINT32_MAX) continue; /* deleted: may be a false positive */
    char want[32];
    size_t wl;
    value_name(ref[i], want, &wl);
    if (r == BK_KBF_FOUND) wrong += vl != wl || memcmp(v, want, wl) != 0;
    undecodable += r == BK_KBF_UNDECODABLE;
    absent += r == BK_KBF_ABSENT;
  }
  assert_int_equal(wrong, 0);
  assert_int_equal(absent, 0);
  assert_true(undecodable <= 3); /* each kBF at rho <= 1: ~1e-3 per key */
  const uint64_t never = 999999;
  assert_bk_status(bk_kbf_chain_delete(c, &never, sizeof never), BK_ENOTFOUND);
  assert_bk_status(bk_kbf_chain_insert(NULL, "k", 1, "v", 1), BK_EINVAL);
  free(ref);
  bk_kbf_chain_destroy(c);
  bk_kbf_chain_destroy(NULL);
  /* OOM: every failure is BK_ENOMEM with nothing left behind. */
  bk_test_alloc st;
  for (size_t fail = 1; fail <= 8; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_kbf_chain *d = NULL;
    bk_status s = bk_kbf_chain_create(
        &d, &(bk_kbf_config){.capacity = 10, .allocator = &al});
    if (s == BK_OK) {
      for (uint64_t i = 0; i < 30 && s == BK_OK; i++)
        s = bk_kbf_chain_insert(d, &i, sizeof i, "v", 1);
      assert_true(s == BK_OK || s == BK_ENOMEM);
      bk_kbf_chain_destroy(d);
    } else {
      assert_int_equal(s, BK_ENOMEM);
      assert_null(d);
    }
    assert_int_equal(st.live, 0);
  }
}

/* ---- capacity (Sec. 4) against simulation
 * ---------------------------------------- */

static void test_capacity_formulas(void **state) {
  (void)state;
  /* The paper's numbers: P_n(1) = 0.0333. */
  assert_true(fabs(bk_kbf_pn(1.0) - 0.033313) < 1e-5);
  assert_true(fabs(bk_kbf_cell_prob(0, 1.0) - 0.5) < 1e-12);
  double sum = 0;
  for (unsigned j = 0; j < 60; j++) sum += bk_kbf_cell_prob(j, 1.7);
  assert_true(fabs(sum - 1) < 1e-12);
  assert_true(fabs(bk_kbf_rho(1000, 7, 10000) - 1000 * 7 / (10000 * log(2))) <
              1e-12);
  uint64_t cap;
  assert_bk_ok(bk_kbf_p_capacity(95851, 0.01, &cap));
  assert_true(cap >= 9990 && cap <= 10000);
  /* Simulation: the share of cells holding >= 3 encodings at rho = 1.
   * m = 200000 cells: the share's sd is sqrt(P(1-P)/m) = 4e-4; 5 sd. */
  const uint64_t m = 200000;
  const unsigned k = 7;
  const uint64_t n = (uint64_t)llround(m * log(2) / k);
  bk_kbf *f = make(&(bk_kbf_config){
      .m_cells = m, .k = k, .max_values = 1000, .cell_bits = 64});
  uint32_t index;
  assert_bk_ok(bk_kbf_intern(f, "v", 1, &index));
  uint64_t rng = 77;
  for (uint64_t i = 0; i < n; i++) {
    bk_hash h = {bk_test_next(&rng), bk_test_next(&rng)};
    assert_bk_ok(bk_kbf_insert_index_hash(f, h, index));
  }
  uint64_t three = 0;
  for (uint64_t i = 0; i < m; i++)
    three += (((uint64_t *)f->main.data)[i] >> 56) >= 3;
  const double share = (double)three / (double)m;
  if (fabs(share - bk_kbf_pn(1.0)) > 5 * sqrt(0.0333 * 0.9667 / m))
    fail_msg("cells >= 3: %.5f vs P_n(1) %.5f", share, bk_kbf_pn(1.0));
  bk_kbf_destroy(f);
}

/* The decode failure of option 1 for a stored key follows the own-cell
 * load (1 + Poisson), not the paper's random-cell load. rho = 2.5, k = 4:
 * ours 0.24, the paper's 0.021. 20000 keys: sd of the share <= 0.0035;
 * tolerance 0.02 covers 5 sd plus the finite-m and equal-value effects. */
static void test_decode_failure_matches_own_cell_load(void **state) {
  (void)state;
  const unsigned k = 4;
  const double rho = 2.5;
  const uint64_t m = 40000;
  const uint64_t n = (uint64_t)llround(rho * m * log(2) / k);
  bk_kbf *f = make(&(bk_kbf_config){
      .m_cells = m, .k = k, .max_values = 16383, .decode = BK_KBF_DECODE_22});
  uint64_t rng = 99;
  uint32_t *vals = malloc(n * sizeof *vals);
  for (uint64_t i = 0; i < n; i++) {
    char name[32];
    size_t vl;
    vals[i] = (uint32_t)(bk_test_next(&rng) % 16000);
    value_name(vals[i], name, &vl);
    assert_bk_ok(bk_kbf_insert(f, &i, sizeof i, name, vl));
  }
  uint64_t undecodable = 0;
  const uint64_t probe = n < 20000 ? n : 20000;
  for (uint64_t i = 0; i < probe; i++) {
    bk_kbf_result r;
    assert_bk_ok(bk_kbf_query(f, &i, sizeof i, &r, NULL, NULL));
    assert_int_not_equal(r, BK_KBF_ABSENT);
    undecodable += r == BK_KBF_UNDECODABLE;
  }
  const double share = (double)undecodable / (double)probe;
  const double ours = bk_kbf_decode_failure(rho, k, false);
  const double paper = bk_kbf_decode_failure(rho, k, true);
  if (fabs(share - ours) > 0.02)
    fail_msg("undecodable %.4f, own-cell formula %.4f, paper %.4f", share, ours,
             paper);
  assert_true(fabs(share - paper) > 0.1);
  free(vals);
  bk_kbf_destroy(f);
}

/* ---- arguments, OOM, serialized form ----------------------------------------
 */

static void test_arguments(void **state) {
  (void)state;
  bk_kbf *f = (bk_kbf *)&f, *const sentinel = f;
  const bk_kbf_config bad[] = {
      {.capacity = 0},
      {.capacity = 100, .fpp = 1.0},
      {.capacity = 100, .fpp = NAN},
      {.capacity = 100, .cell_bits = 16},
      {.capacity = 100, .max_values = 16384}, /* needs t = 15 > 14 */
      {.capacity = 100, .cell_bits = 64, .max_values = 1u << 24},
      {.capacity = 100, .k = 65},
      {.m_cells = 1000},
      {.m_cells = ((uint64_t)1 << 36) + 1, .k = 3},
      {.capacity = 100, .decode = (bk_kbf_decode)3},
      {.capacity = 100, .inverse = (bk_kbf_inverse)3},
      {.capacity = 100, .hash_alg = BK_HASH_MURMUR3, .seed = (uint64_t)1 << 32},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (bk_kbf_create(&f, &bad[i]) != BK_EINVAL)
      fail_msg("bad config %zu accepted", i);
    assert_ptr_equal(f, sentinel);
  }
  assert_bk_status(bk_kbf_create(NULL, &bad[0]), BK_EINVAL);
  assert_bk_status(bk_kbf_create(&f, NULL), BK_EINVAL);
  f = make(&(bk_kbf_config){.capacity = 100, .max_values = 3});
  bk_kbf_info in = info_of(f);
  assert_int_equal(in.max_values, 3);
  assert_int_equal(in.encoding_bits, 4);
  assert_int_equal(in.cell_bits, 32);
  assert_int_equal(in.counter_bits, 3);
  bk_kbf_result r;
  uint32_t idx;
  bk_hash h = {1, 2};
  assert_bk_status(bk_kbf_insert(NULL, "k", 1, "v", 1), BK_EINVAL);
  assert_bk_status(bk_kbf_insert(f, NULL, 1, "v", 1), BK_EINVAL);
  assert_bk_status(bk_kbf_insert(f, "k", 1, NULL, 1), BK_EINVAL);
  assert_bk_status(bk_kbf_query(f, "k", 1, NULL, NULL, NULL), BK_EINVAL);
  assert_bk_status(bk_kbf_query(NULL, "k", 1, &r, NULL, NULL), BK_EINVAL);
  assert_bk_status(bk_kbf_insert_index_hash(f, h, 0), BK_ERANGE);
  assert_bk_status(bk_kbf_update_index_hash(f, h, 0), BK_ERANGE);
  assert_bk_status(bk_kbf_value(f, 0, NULL, NULL), BK_ERANGE);
  assert_bk_status(bk_kbf_delete(f, "k", 1), BK_ENOTFOUND);
  assert_bk_status(bk_kbf_update(f, "k", 1, "v", 1), BK_ENOTFOUND);
  assert_bk_status(bk_kbf_delete_index_hash(f, h, 0), BK_ENOTFOUND);
  /* The pool fills: 3 values, then BK_EFULL. */
  assert_bk_ok(bk_kbf_insert(f, "a", 1, "1", 1));
  assert_bk_ok(bk_kbf_insert(f, "b", 1, "2", 1));
  assert_bk_ok(bk_kbf_insert(f, "c", 1, "3", 1));
  assert_bk_status(bk_kbf_insert(f, "d", 1, "4", 1), BK_EFULL);
  assert_bk_ok(bk_kbf_insert(f, "d", 1, "3", 1));
  assert_bk_ok(bk_kbf_query(f, "d", 1, &r, NULL, NULL));
  assert_int_equal(r, BK_KBF_FOUND);
  assert_bk_ok(bk_kbf_intern(f, "", 0, &idx) == BK_EFULL ? BK_OK : BK_EINVAL);
  assert_bk_status(bk_kbf_intern(f, NULL, 1, &idx), BK_EINVAL);
  assert_bk_status(bk_kbf_info_get(f, NULL), BK_EINVAL);
  assert_bk_status(bk_kbf_compress(NULL), BK_EINVAL);
  assert_bk_status(bk_kbf_join(f, NULL), BK_EINVAL);
  bk_kbf_destroy(f);
  bk_kbf_destroy(NULL);
  /* An empty value is a value like any other. */
  f = make(&(bk_kbf_config){.capacity = 100});
  assert_bk_ok(bk_kbf_insert(f, "k", 1, "", 0));
  const void *v = NULL;
  size_t vl = 9;
  assert_bk_ok(bk_kbf_query(f, "k", 1, &r, &v, &vl));
  assert_int_equal(r, BK_KBF_FOUND);
  assert_int_equal(vl, 0);
  bk_kbf_destroy(f);
}

/* bk_kbf_cell_counters_hash reads what the cells hold: checked against a
 * direct read of the cells (kbf_internal.h) at both widths, before and
 * after a compress, with saturated counters, and its argument errors. */
static void test_cell_counters(void **state) {
  (void)state;
  for (unsigned bits = 32; bits <= 64; bits += 32) {
    bk_kbf *f =
        make(&(bk_kbf_config){.m_cells = 64, .k = 5, .cell_bits = bits});
    for (int round = 0; round < 2; round++) {
      for (unsigned key = 0; key < 300; key++) {
        char name[16];
        const int len = snprintf(name, sizeof name, "key%u", key);
        bk_hash h;
        assert_bk_ok(bk_kbf_hash(f, name, (size_t)len, &h));
        if (round == 0 && key < 150) /* 150 x 5 into 64 cells: saturates */
          assert_bk_ok(bk_kbf_insert(f, name, (size_t)len, "v", 1));
        uint8_t got[BK_K_MAX];
        size_t written = 0;
        assert_bk_ok(bk_kbf_cell_counters_hash(f, h, got, 5, &written));
        assert_int_equal(written, 5);
        uint64_t idx[BK_K_MAX];
        bk__indices(h, f->main.k, f->main.m_created, idx);
        for (unsigned i = 0; i < 5; i++) {
          const uint64_t p = idx[i] % f->main.m;
          const uint64_t w = bits == 32 ? ((const uint32_t *)f->main.data)[p]
                                        : ((const uint64_t *)f->main.data)[p];
          assert_int_equal(got[i], w >> f->enc_shift);
        }
      }
      if (round == 0) assert_true(info_of(f).saturated > 0 || bits == 64);
      assert_bk_ok(bk_kbf_compress(f));
    }
    uint8_t c[BK_K_MAX];
    size_t written = 99;
    const bk_hash h = {1, 2};
    assert_bk_status(bk_kbf_cell_counters_hash(f, h, c, 4, &written),
                     BK_EINVAL);
    assert_int_equal(written, 99);
    assert_bk_status(bk_kbf_cell_counters_hash(NULL, h, c, 5, &written),
                     BK_EINVAL);
    assert_bk_status(bk_kbf_cell_counters_hash(f, h, NULL, 5, &written),
                     BK_EINVAL);
    assert_bk_status(bk_kbf_cell_counters_hash(f, h, c, 5, NULL), BK_EINVAL);
    bk_kbf_destroy(f);
  }
  /* An empty filter: every counter 0. */
  bk_kbf *f = make(&(bk_kbf_config){.capacity = 100});
  uint8_t c[BK_K_MAX];
  size_t k = 0;
  assert_bk_ok(bk_kbf_cell_counters_hash(f, (bk_hash){3, 4}, c, BK_K_MAX, &k));
  assert_int_equal(k, info_of(f).k);
  for (size_t i = 0; i < k; i++) assert_int_equal(c[i], 0);
  bk_kbf_destroy(f);
}

static void test_oom(void **state) {
  (void)state;
  bk_test_alloc st;
  for (size_t fail = 1; fail <= 6; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_kbf *f = NULL;
    bk_status s =
        bk_kbf_create(&f, &(bk_kbf_config){.capacity = 1000, .allocator = &al});
    if (s == BK_OK) {
      assert_true(st.calls < fail);
      bk_kbf_destroy(f);
    } else {
      assert_int_equal(s, BK_ENOMEM);
      assert_null(f);
    }
    assert_int_equal(st.live, 0);
  }
  /* Interning, joining and compressing: a failed call changes nothing. */
  for (size_t fail = 1; fail <= 40; fail++) {
    bk_allocator al = bk_test_allocator(&st, 0);
    const bk_kbf_config cfg = {.m_cells = 4800, .k = 7, .allocator = &al};
    bk_kbf *a = make(&cfg), *b = make(&cfg);
    for (int i = 0; i < 30; i++) {
      char name[32];
      size_t vl;
      value_name((uint32_t)i, name, &vl);
      assert_bk_ok(bk_kbf_insert(b, &i, sizeof i, name, vl));
    }
    size_t la, lb;
    unsigned char *ba = blob_of(a, &la);
    st.fail_at = st.calls + fail;
    st.fail_sticky = true;
    bk_status s = bk_kbf_join(a, b);
    if (s == BK_ENOMEM)
      assert_same_state(a, ba, la);
    else
      assert_bk_ok(s);
    free(ba);
    ba = blob_of(a, &la);
    s = bk_kbf_compress(a);
    if (s == BK_ENOMEM)
      assert_same_state(a, ba, la);
    else
      assert_bk_ok(s);
    free(ba);
    ba = blob_of(b, &lb);
    uint32_t idx;
    s = bk_kbf_intern(b, "fresh value", 11, &idx);
    if (s == BK_ENOMEM)
      assert_same_state(b, ba, lb);
    else
      assert_bk_ok(s);
    free(ba);
    st.fail_at = 0;
    bk_kbf_destroy(a);
    bk_kbf_destroy(b);
    assert_int_equal(st.live, 0);
  }
}

static bk_kbf *small_filled(unsigned cell_bits, bk_hash_alg alg) {
  bk_kbf *f = make(&(bk_kbf_config){.m_cells = 48,
                                    .k = 3,
                                    .cell_bits = cell_bits,
                                    .max_values = 15,
                                    .hash_alg = alg,
                                    .seed = 5});
  for (uint64_t i = 0; i < 12; i++) {
    char name[32];
    size_t vl;
    value_name((uint32_t)(i % 5), name, &vl);
    assert_bk_ok(bk_kbf_insert(f, &i, sizeof i, name, vl));
  }
  const uint64_t gone = 3;
  assert_bk_ok(bk_kbf_delete(f, &gone, sizeof gone));
  return f;
}

static void test_serialize_roundtrip_and_hostile(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x4BF4);
  for (int w = 0; w < 2; w++) {
    bk_kbf *f = small_filled(w ? 64 : 32, w ? BK_HASH_MURMUR3 : BK_HASH_XXH3);
    size_t len;
    unsigned char *blob = blob_of(f, &len);
    bk_kbf *g = NULL;
    assert_bk_ok(
        bk_test_codec_load(&bk_test_codec_kbf, blob, len, (void **)&g));
    for (uint64_t i = 0; i < 12; i++) {
      bk_kbf_result ra, rb;
      uint32_t ia = 0, ib = 0;
      bk_hash h;
      assert_bk_ok(bk_kbf_hash(f, &i, sizeof i, &h));
      assert_bk_ok(bk_kbf_query_index_hash(f, h, &ra, &ia));
      assert_bk_ok(bk_kbf_query_index_hash(g, h, &rb, &ib));
      assert_int_equal(ra, rb);
      assert_int_equal(ia, ib);
    }
    bk_kbf_destroy(g);
    bk_test_codec_arguments(&bk_test_codec_kbf, f);
    bk_test_codec_hostile(&bk_test_codec_kbf, f, seed + (uint64_t)w);
    free(blob);
    /* Compressed and empty ones too. */
    assert_bk_ok(bk_kbf_compress(f));
    bk_test_codec_hostile(&bk_test_codec_kbf, f, seed + 7 + (uint64_t)w);
    bk_kbf_destroy(f);
  }
  bk_kbf *e = make(&(bk_kbf_config){.capacity = 10, .max_values = 3});
  bk_test_codec_hostile(&bk_test_codec_kbf, e, seed + 11);
  bk_kbf_destroy(e);
}

/* Crafted blobs that no create + operations can produce. */
static void test_deserialize_unreachable(void **state) {
  (void)state;
  const bk_test_codec *c = &bk_test_codec_kbf;
  bk_kbf *f = small_filled(32, BK_HASH_XXH3);
  size_t len;
  unsigned char *blob = blob_of(f, &len);
  const bk_kbf_info in = info_of(f);
  const size_t values = 104 + 4 * (size_t)in.n_values + /* bytes */ 5 * 7;
  /* Find an empty and a counter-1 cell. */
  size_t empty = 0, single = 0;
  for (uint64_t i = 0; i < in.m_cells; i++) {
    uint32_t w = bk__load_le32(blob + values + 4 * i);
    if (!empty && w == 0) empty = values + 4 * i;
    if (!single && w >> 29 == 1) single = values + 4 * i;
  }
  assert_true(empty && single);
  bk_test_codec_expect_edit(c, blob, len, empty, 4, 1, BK_ECORRUPT,
                            "empty cell with an encoding");
  bk_test_codec_expect_edit(c, blob, len, single, 4,
                            (1u << 29) | (bk__load_le32(blob + single) ^ 1),
                            BK_ECORRUPT, "counter-1 cell, no encoding");
  bk_test_codec_expect_edit(c, blob, len, 56, 8, in.n_keys + 1, BK_ECORRUPT,
                            "n_keys off the counters");
  bk_test_codec_expect_edit(c, blob, len, 88, 1, 0, BK_ECORRUPT, "k 0");
  bk_test_codec_expect_edit(c, blob, len, 90, 1, 16, BK_ECORRUPT, "cell 16");
  bk_test_codec_expect_edit(c, blob, len, 92, 1, 5, BK_ECORRUPT, "t vs max");
  bk_test_codec_expect_edit(c, blob, len, 64, 8, 1000, BK_ECORRUPT, "s-kBF m");
  bk_test_codec_expect_edit(c, blob, len, 96, 8, 1, BK_ECORRUPT, "reserved");
  /* A value twice in a row could not have been given a second encoding. */
  free(blob);
  bk_kbf_destroy(f);
  f = make(&(bk_kbf_config){.capacity = 100, .max_values = 7});
  uint32_t idx;
  assert_bk_ok(bk_kbf_intern(f, "aa", 2, &idx));
  assert_bk_ok(bk_kbf_intern(f, "ab", 2, &idx));
  blob = blob_of(f, &len);
  /* The second value's bytes "ab" -> "aa": replay finds it already. */
  bk_test_codec_expect_edit(c, blob, len, 104 + 8 + 3, 1, 'a', BK_ECORRUPT,
                            "duplicate value");
  free(blob);
  bk_kbf_destroy(f);
}

/* The golden blob of format version 1 loads and answers. */
static void test_golden_blob(void **state) {
  (void)state;
  const char *dir = getenv("BK_TEST_DATA");
  char path[1024];
  snprintf(path, sizeof path, "%s/kbf_v1.bin", dir ? dir : "tests/data");
  FILE *fp = fopen(path, "rb");
  bk_kbf *f = small_filled(32, BK_HASH_XXH3);
  size_t len;
  unsigned char *now = blob_of(f, &len);
  if (!fp) {
    if (getenv("BK_WRITE_GOLDEN")) {
      fp = fopen(path, "wb");
      assert_non_null(fp);
      assert_int_equal(fwrite(now, 1, len, fp), len);
      fclose(fp);
      free(now);
      bk_kbf_destroy(f);
      return;
    }
    fail_msg("missing %s", path);
  }
  unsigned char buf[8192];
  size_t got = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  assert_int_equal(got, len);
  assert_memory_equal(buf, now, len);
  bk_kbf *g = NULL;
  assert_bk_ok(bk_kbf_deserialize(buf, got, NULL, &g));
  uint64_t key = 7;
  bk_kbf_result r;
  const void *v;
  size_t vl;
  assert_bk_ok(bk_kbf_query(g, &key, sizeof key, &r, &v, &vl));
  if (r == BK_KBF_FOUND) {
    assert_int_equal(vl, 7);
    assert_memory_equal(v, "value-2", 7);
  }
  bk_kbf_destroy(g);
  free(now);
  bk_kbf_destroy(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_rules),
      cmocka_unit_test(test_pool_split),
      cmocka_unit_test(test_greedy),
      cmocka_unit_test(test_ops_against_reference),
      cmocka_unit_test(test_overload_never_wrong),
      cmocka_unit_test(test_value_interned_once),
      cmocka_unit_test(test_skbf_seed_independent),
      cmocka_unit_test(test_decode_by_hand),
      cmocka_unit_test(test_join_compress),
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_capacity_formulas),
      cmocka_unit_test(test_decode_failure_matches_own_cell_load),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_cell_counters),
      cmocka_unit_test(test_oom),
      cmocka_unit_test(test_serialize_roundtrip_and_hostile),
      cmocka_unit_test(test_deserialize_unreachable),
      cmocka_unit_test(test_golden_blob),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
