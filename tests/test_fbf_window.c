/* SPDX-License-Identifier: MIT */
/*
 * Tests for bk_fbf (include/bloomkit/fbf.h), the Forgetful Bloom Filter of
 * the FBF thesis, as a filter: creation and its defaults, Algorithm 1
 * inserts, an exact comparison against a plain reference N-FBF (separate
 * bit arrays, no lanes) including both fpp estimates' formulas, the
 * forgetting window ((N+1) t, (N+2) t] with the false positive rate of
 * forgotten elements, sizing for a fixed k, every bad argument, and
 * allocation-failure injection.
 *
 * Shared helpers: tests/fbf_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "bloomkit/params.h"

#include "fbf_helpers.h"

/* ---- creation and basic behaviour -------------------------------------- */

static void test_create_defaults(void **state) {
  (void)state;
  /* Sized by capacity: a filter holds two periods' inserts at fpp. */
  bk_fbf_config cfg = {.capacity = 1000,
                       .fpp = 0.01,
                       .n_past = 2,
                       .refresh_period = 1000,
                       .start_time = 5000};
  bk_fbf *f = fbf_make(&cfg);
  uint64_t m;
  unsigned k;
  assert_bk_ok(bk_params_for_target(2000, 0.01, &m, &k));
  bk_fbf_info in = fbf_info_of(f);
  assert_int_equal(in.m_bits, m);
  assert_int_equal(in.k, k);
  assert_int_equal(in.n_filters, 4);
  assert_int_equal(in.n_past, 2);
  assert_int_equal(in.target_filters, 4);
  assert_int_equal(in.max_filters, 4);
  assert_int_equal(in.refresh_period, 1000);
  assert_int_equal(in.min_window, 3000);
  assert_int_equal(in.now, 5000);
  assert_int_equal(in.next_refresh, 6000);
  assert_int_equal(in.window_min, 3000);
  assert_int_equal(in.window_max, 4000);
  assert_int_equal(in.refreshes, 0);
  assert_int_equal(in.deferred, 0);
  assert_int_equal(in.check, BK_FBF_CHECK_OPTIMIZED);
  assert_false(in.adaptive);
  for (unsigned q = 0; q < 4; q++) {
    assert_int_equal(in.inserted[q], 0);
    assert_int_equal(in.set_bits[q], 0);
  }
  /* W m bits of lanes at least. */
  assert_true(in.memory >= in.max_filters * m / 8);
  assert_int_equal(bk_fbf_trace_count(f), 0);
  assert_true(fbf_est_of(f, BK_FBF_CHECK_OPTIMIZED) == 0.0);
  assert_true(fbf_est_of(f, BK_FBF_CHECK_SIMPLE) == 0.0);
  bk_fbf_destroy(f);

  /* Adaptive: lanes for min(4 (N + 2), 64) filters by default. */
  bk_fbf_config a = {.m_bits = 1000,
                     .k = 3,
                     .n_past = 2,
                     .refresh_period = 1000,
                     .adaptive = true};
  f = fbf_make(&a);
  in = fbf_info_of(f);
  assert_int_equal(in.max_filters, 16);
  assert_true(in.adaptive);
  assert_int_equal(in.n_filters, 4);
  bk_fbf_destroy(f);
  a.n_past = 20;
  f = fbf_make(&a);
  assert_int_equal(fbf_info_of(f).max_filters, 64);
  bk_fbf_destroy(f);
  /* The largest N that fits the 64-filter lane. */
  bk_fbf_config big = {
      .m_bits = 100, .k = 2, .n_past = 62, .refresh_period = 10};
  f = fbf_make(&big);
  in = fbf_info_of(f);
  assert_int_equal(in.n_filters, 64);
  assert_int_equal(in.window_min, 630);
  bk_fbf_destroy(f);
}

/* Algorithm 1: an element the check finds is not inserted again, so its
 * forgetting time stays tied to its first insert; keys and _hash forms and
 * bk_fbf_hash agree with bk_hash_bytes. */
static void test_insert_algorithm1(void **state) {
  (void)state;
  uint64_t seed = fbf_test_seed(1);
  bk_fbf_config cfg = {.m_bits = 1u << 16,
                       .k = 7,
                       .n_past = 1,
                       .refresh_period = 100,
                       .seed = seed};
  bk_fbf *f = fbf_make(&cfg);
  const char *key = "client-7:seq-42";
  bk_hash h, ref;
  assert_bk_ok(bk_fbf_hash(f, key, strlen(key), &h));
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, seed, key, strlen(key), &ref));
  assert_true(h.lo == ref.lo && h.hi == ref.hi);

  assert_bk_ok(bk_fbf_add(f, key, strlen(key)));
  bk_fbf_info in = fbf_info_of(f);
  assert_int_equal(in.inserted[0], 1);
  assert_int_equal(in.inserted[1], 1);
  assert_int_equal(in.inserted[2], 0);
  assert_int_equal(in.set_bits[0], in.set_bits[1]);
  assert_true(in.set_bits[0] >= 1 && in.set_bits[0] <= 7);
  /* A second insert is a retry: nothing changes. */
  assert_bk_ok(bk_fbf_add(f, key, strlen(key)));
  bool added = true;
  assert_bk_ok(bk_fbf_add_if_absent(f, key, strlen(key), &added));
  assert_false(added);
  assert_bk_ok(bk_fbf_add_hash(f, h));
  in = fbf_info_of(f);
  assert_int_equal(in.inserted[0], 1);
  assert_int_equal(in.inserted[1], 1);
  bool out = false;
  assert_bk_ok(bk_fbf_contains(f, key, strlen(key), &out));
  assert_true(out);

  /* After one refresh it sits in (present, past): still found, so a retry
   * inserts nothing and it is forgotten on its first insert's schedule. */
  fbf_advance(f, 100);
  assert_true(fbf_has(f, h));
  assert_bk_ok(bk_fbf_add_if_absent_hash(f, h, &added));
  assert_false(added);
  in = fbf_info_of(f);
  assert_int_equal(in.inserted[0], 0);
  assert_int_equal(in.inserted[1], 1);
  assert_int_equal(in.inserted[2], 1);
  fbf_advance(f, 299);
  assert_true(fbf_has(f, h)); /* oldest past alone */
  fbf_advance(f, 300);
  assert_false(fbf_has(f, h));
  assert_false(fbf_has_with(f, h, BK_FBF_CHECK_SIMPLE));
  /* Forgotten: it is new again. */
  assert_bk_ok(bk_fbf_add_if_absent_hash(f, h, &added));
  assert_true(added);

  /* The empty key is a key. */
  assert_bk_ok(bk_fbf_add(f, NULL, 0));
  assert_bk_ok(bk_fbf_contains(f, NULL, 0, &out));
  assert_true(out);
  bk_fbf_destroy(f);

  /* Murmur3 with a seed: bk_fbf_hash is that hash. */
  bk_fbf_config mc = {.m_bits = 1000,
                      .k = 3,
                      .n_past = 1,
                      .refresh_period = 10,
                      .hash_alg = BK_HASH_MURMUR3,
                      .seed = 77};
  f = fbf_make(&mc);
  assert_bk_ok(bk_fbf_hash(f, key, strlen(key), &h));
  assert_bk_ok(bk_hash_bytes(BK_HASH_MURMUR3, 77, key, strlen(key), &ref));
  assert_true(h.lo == ref.lo && h.hi == ref.hi);
  bk_fbf_destroy(f);
}

/* A key added while it is a false positive of older filters only is still
 * remembered for its whole window: Algorithm 1 would skip the insert, and
 * the key would go when those filters drop (the erratum in
 * docs/design/fbf.md). k = 1 and m = 64 make a colliding key easy to find:
 * `a` added at 0 sits in (past, past) at 200, where `b`, which shares a's
 * only bit, is found by the check although it was never added. */
static void test_add_of_false_positive_keeps_window(void **state) {
  (void)state;
  const uint64_t t = 100, n_past = 2;
  bk_fbf_config cfg = {
      .m_bits = 64, .k = 1, .n_past = (unsigned)n_past, .refresh_period = t};
  bk_fbf *f = fbf_make(&cfg);
  bk_hash a = fbf_hash_id(f, 1), b = {0, 0};
  uint64_t ia, ib = 0;
  assert_bk_ok(bk_hash_indices(a, 1, 64, &ia));
  uint64_t id = 2;
  for (; id < 100000; id++) {
    b = fbf_hash_id(f, id);
    assert_bk_ok(bk_hash_indices(b, 1, 64, &ib));
    if (ib == ia) break;
  }
  assert_true(ib == ia);
  assert_bk_ok(bk_fbf_add_hash(f, a));
  fbf_advance(f, 2 * t);
  assert_true(fbf_has(f, b)); /* a false positive: a's bit in the past pair */
  uint64_t before = fbf_info_of(f).inserted[0];
  assert_bk_ok(bk_fbf_add_hash(f, b)); /* added at s = 2t */
  assert_int_equal(fbf_info_of(f).inserted[0], before + 1);
  /* Remembered at least until s + (N + 1) t = 5t (without the fix it goes
   * at 4t with a's future, the last filter that held their bit), at most
   * until s + (N + 2) t = 6t. */
  for (uint64_t now = 2 * t; now < 5 * t; now += t / 4) {
    fbf_advance(f, now);
    if (!fbf_has(f, b))
      fail_msg("b added at %llu forgotten at %llu", (unsigned long long)(2 * t),
               (unsigned long long)now);
  }
  fbf_advance(f, 5 * t - 1);
  assert_true(fbf_has(f, b));
  fbf_advance(f, 6 * t);
  assert_false(fbf_has(f, b));
  bk_fbf_destroy(f);
}

/* ---- an exact reference ------------------------------------------------- */

/* A plain N-FBF as the thesis draws it: N + 2 separate bit arrays in
 * logical order, moved by a refresh, indexed by bk_hash_indices. */
typedef struct ref_fbf {
  uint64_t m;
  unsigned k, count;
  bk_fbf_check check;
  unsigned char *bits[64];
  uint64_t inserted[64];
  /* Inserts each filter shares with the next older one: its count when it
   * became the present (everything it took as the future). */
  uint64_t shared[64];
} ref_fbf;

static void ref_init(ref_fbf *r, uint64_t m, unsigned k, unsigned count,
                     bk_fbf_check check) {
  memset(r, 0, sizeof *r);
  r->m = m;
  r->k = k;
  r->count = count;
  r->check = check;
  for (unsigned q = 0; q < count; q++) {
    r->bits[q] = calloc(m, 1);
    assert_non_null(r->bits[q]);
  }
}

static void ref_free(ref_fbf *r) {
  for (unsigned q = 0; q < r->count; q++) free(r->bits[q]);
}

static bool ref_check(const ref_fbf *r, bk_hash h, bk_fbf_check check) {
  uint64_t idx[64];
  bool in[64] = {false};
  assert_bk_ok(bk_hash_indices(h, r->k, r->m, idx));
  for (unsigned q = 0; q < r->count; q++) {
    in[q] = true;
    for (unsigned i = 0; i < r->k; i++)
      if (!r->bits[q][idx[i]]) in[q] = false;
  }
  if (check == BK_FBF_CHECK_SIMPLE) {
    for (unsigned q = 0; q < r->count; q++)
      if (in[q]) return true;
    return false;
  }
  if (in[0] || in[r->count - 1]) return true;
  for (unsigned q = 1; q + 1 < r->count; q++)
    if (in[q] && in[q + 1]) return true;
  return false;
}

/* bk_fbf_add: the key goes into future and present unless it is in both
 * already (Algorithm 1 skips any key the check finds: an erratum, see
 * docs/design/fbf.md). */
static void ref_add(ref_fbf *r, bk_hash h) {
  uint64_t idx[64];
  assert_bk_ok(bk_hash_indices(h, r->k, r->m, idx));
  bool both = true;
  for (unsigned i = 0; i < r->k; i++)
    if (!r->bits[0][idx[i]] || !r->bits[1][idx[i]]) both = false;
  if (both) return;
  for (unsigned i = 0; i < r->k; i++)
    r->bits[0][idx[i]] = r->bits[1][idx[i]] = 1;
  r->inserted[0]++;
  r->inserted[1]++;
}

static bool ref_insert(ref_fbf *r, bk_hash h) {
  uint64_t idx[64];
  if (ref_check(r, h, r->check)) return false;
  assert_bk_ok(bk_hash_indices(h, r->k, r->m, idx));
  for (unsigned i = 0; i < r->k; i++)
    r->bits[0][idx[i]] = r->bits[1][idx[i]] = 1;
  r->inserted[0]++;
  r->inserted[1]++;
  return true;
}

static void ref_refresh(ref_fbf *r) {
  unsigned char *oldest = r->bits[r->count - 1];
  memset(oldest, 0, r->m);
  memmove(&r->bits[1], &r->bits[0], (r->count - 1) * sizeof r->bits[0]);
  memmove(&r->inserted[1], &r->inserted[0],
          (r->count - 1) * sizeof r->inserted[0]);
  memmove(&r->shared[1], &r->shared[0], (r->count - 1) * sizeof r->shared[0]);
  r->bits[0] = oldest;
  r->inserted[0] = 0;
  r->shared[0] = 0;
  r->shared[1] = r->inserted[1];
}

/* bk_fbf_estimated_fpp as fbf.h documents it: Eq. 4.3's stages, with a
 * pair's term (1 - u^a - u^b + u^{a+b-s})^k, u = (1 - 1/m)^k, for counts
 * a, b sharing s inserts; the simple check as 1 - prod(1 - p_i). */
static double documented_estimate(const ref_fbf *r, bk_fbf_check check) {
  if (check == BK_FBF_CHECK_SIMPLE)
    return fbf_eq43(r->m, r->k, r->inserted, r->count, check);
  long double u = powl(1.0L - 1.0L / (long double)r->m, (long double)r->k);
  long double none = 1.0L - fbf_filter_p(r->m, r->k, (double)r->inserted[0]);
  /* The last pair holds the oldest filter, so its event lies inside
   * "oldest alone" and is left out (fbf.c; Eq. 4.3 counts it twice). */
  for (unsigned q = 1; q + 2 < r->count; q++) {
    long double a = (long double)r->inserted[q];
    long double b = (long double)r->inserted[q + 1];
    long double sh = (long double)r->shared[q];
    long double both = 1.0L - powl(u, a) - powl(u, b) + powl(u, a + b - sh);
    none *= 1.0L - powl(both < 0 ? 0 : both, (long double)r->k);
  }
  none *= 1.0L - fbf_filter_p(r->m, r->k, (double)r->inserted[r->count - 1]);
  return (double)(1.0L - none);
}

static void assert_matches_ref(const bk_fbf *f, const ref_fbf *r,
                               const char *what, unsigned step) {
  bk_fbf_info in = fbf_info_of(f);
  assert_int_equal(in.n_filters, r->count);
  for (unsigned q = 0; q < r->count; q++) {
    uint64_t set = 0;
    for (uint64_t j = 0; j < r->m; j++) set += r->bits[q][j];
    if (in.inserted[q] != r->inserted[q] || in.set_bits[q] != set)
      fail_msg("%s step %u filter %u: inserted %llu/%llu set %llu/%llu", what,
               step, q, (unsigned long long)in.inserted[q],
               (unsigned long long)r->inserted[q],
               (unsigned long long)in.set_bits[q], (unsigned long long)set);
  }
}

/* The lane layout, the slot ring (with free slots when W > N + 2), the
 * rotation, the pair rule and the idle fast-forward of bk_fbf_advance all
 * give exactly the answers of the plain reference, probe for probe. */
static void test_matches_reference(void **state) {
  (void)state;
  struct {
    uint64_t m;
    unsigned k, n_past, max_filters;
    bk_fbf_check check;
    bk_hash_alg alg;
  } cases[] = {
      {1000, 3, 1, 0, BK_FBF_CHECK_OPTIMIZED, BK_HASH_XXH3},
      {3 * 4096 + 123, 4, 3, 0, BK_FBF_CHECK_OPTIMIZED, BK_HASH_XXH3},
      {2000, 3, 2, 7, BK_FBF_CHECK_OPTIMIZED, BK_HASH_MURMUR3},
      {1500, 2, 4, 60, BK_FBF_CHECK_OPTIMIZED, BK_HASH_XXH3},
      {700, 3, 1, 64, BK_FBF_CHECK_SIMPLE, BK_HASH_XXH3},
      {5000, 5, 6, 0, BK_FBF_CHECK_SIMPLE, BK_HASH_XXH3},
  };
  const uint64_t t = 100;
  const unsigned steps = SLOW_BUILD ? 500 : 1500;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t rng = fbf_test_seed(0x4EF + c);
    bk_fbf_config cfg = {.m_bits = cases[c].m,
                         .k = cases[c].k,
                         .n_past = cases[c].n_past,
                         .refresh_period = t,
                         .max_filters = cases[c].max_filters,
                         .check = cases[c].check,
                         .hash_alg = cases[c].alg,
                         .seed = c + 1};
    bk_fbf *f = fbf_make(&cfg);
    ref_fbf r;
    ref_init(&r, cases[c].m, cases[c].k, cases[c].n_past + 2, cases[c].check);
    uint64_t now = 0, next_id = 0, refreshes = 0;
    unsigned idle = 0;
    for (unsigned step = 0; step < steps; step++) {
      /* Mostly small steps; some long idle gaps that the FBF may skip. */
      uint64_t dt = bk_test_next(&rng) % 40;
      if (bk_test_next(&rng) % 100 == 0) dt = bk_test_next(&rng) % (200 * t);
      now += dt;
      fbf_advance(f, now);
      while ((refreshes + 1) * t <= now) {
        ref_refresh(&r);
        refreshes++;
      }
      if (idle) {
        idle--;
      } else if (bk_test_next(&rng) % 50 == 0) {
        idle = 30; /* let every filter empty out */
      } else {
        unsigned n = (unsigned)(bk_test_next(&rng) % 6);
        for (unsigned i = 0; i < n; i++) {
          /* Fresh ids, and retries of recent ones. */
          uint64_t id =
              next_id && bk_test_next(&rng) % 4 == 0
                  ? next_id - 1 -
                        bk_test_next(&rng) % (next_id < 50 ? next_id : 50)
                  : next_id++;
          bk_hash h = fbf_hash_id(f, id);
          bool want = !ref_check(&r, h, r.check);
          bool got;
          if (i & 1) {
            ref_insert(&r, h);
            assert_bk_ok(bk_fbf_add_if_absent_hash(f, h, &got));
          } else {
            got = !fbf_has(f, h);
            ref_add(&r, h);
            assert_bk_ok(bk_fbf_add_hash(f, h));
          }
          if (got != want)
            fail_msg("case %zu step %u: insert said new=%d, reference %d", c,
                     step, got, want);
        }
      }
      for (unsigned p = 0; p < 40; p++) {
        uint64_t id = p < 20 && next_id ? bk_test_next(&rng) % next_id
                                        : ABSENT_TAG | bk_test_next(&rng);
        bk_hash h = fbf_hash_id(f, id);
        for (int ck = BK_FBF_CHECK_OPTIMIZED; ck <= BK_FBF_CHECK_SIMPLE; ck++) {
          bool want = ref_check(&r, h, (bk_fbf_check)ck);
          if (fbf_has_with(f, h, (bk_fbf_check)ck) != want)
            fail_msg(
                "case %zu step %u now %llu: check %d says %d, reference %d", c,
                step, (unsigned long long)now, ck, !want, want);
        }
        assert_true(fbf_has(f, h) == ref_check(&r, h, cases[c].check));
      }
      if (step % 50 == 0) {
        assert_matches_ref(f, &r, "reference", step);
        bk_fbf_info in = fbf_info_of(f);
        assert_int_equal(in.refreshes, refreshes);
        assert_int_equal(in.deferred, 0);
        assert_int_equal(in.now, now);
        assert_int_equal(in.next_refresh, (refreshes + 1) * t);
        for (int ck = BK_FBF_CHECK_OPTIMIZED; ck <= BK_FBF_CHECK_SIMPLE; ck++) {
          double e = fbf_eq43_of(f, (bk_fbf_check)ck);
          double want =
              fbf_eq43(r.m, r.k, r.inserted, r.count, (bk_fbf_check)ck);
          if (!(fabs(e - want) <= 1e-12 * want + 1e-15))
            fail_msg(
                "case %zu step %u: Eq. 4.3 (check %d) %.17g, from the "
                "counts %.17g",
                c, step, ck, e, want);
          e = fbf_est_of(f, (bk_fbf_check)ck);
          want = documented_estimate(&r, (bk_fbf_check)ck);
          /* 1 - prod(1 - phi) in doubles carries ~1e-16 absolute error. */
          if (!(fabs(e - want) <= 1e-9 * want + 1e-15))
            fail_msg(
                "case %zu step %u: estimate (check %d) %.17g, documented "
                "formula %.17g",
                c, step, ck, e, want);
        }
      }
    }
    ref_free(&r);
    bk_fbf_destroy(f);
  }
}

/* #16.2: (capacity, fpp) with an explicit k sizes m for that k: the m of
 * the default k (191 702 for 10 000 a period at 0.01) gave 0.099, 0.036,
 * 0.071 and 0.92 at k = 1, 2, 20, 64 for the two periods a filter holds. */
static void test_create_fixed_k_meets_fpp(void **state) {
  (void)state;
  const unsigned ks[] = {1, 2, 20, 64};
  for (size_t i = 0; i < 4; i++) {
    bk_fbf_config cfg = {.capacity = 10000,
                         .fpp = 0.01,
                         .k = ks[i],
                         .n_past = 2,
                         .refresh_period = 100};
    bk_fbf *f = fbf_make(&cfg);
    bk_fbf_info in = fbf_info_of(f);
    uint64_t want;
    assert_bk_ok(bk_params_m_for_k(20000, 0.01, ks[i], &want));
    assert_int_equal(in.k, ks[i]);
    assert_int_equal(in.m_bits, want);
    double p;
    assert_bk_ok(bk_params_fpp(in.m_bits, in.k, 20000, &p));
    if (!(p <= 0.01 * (1 + 1e-9)))
      fail_msg("k %u: m %llu gives %g for two periods", ks[i],
               (unsigned long long)in.m_bits, p);
    bk_fbf_destroy(f);
  }
}

/* Period counts n[d] (d = 0 current) from per-period totals. */
static void period_counts(const double *per_period, size_t n_periods,
                          uint64_t current, unsigned count, double *n) {
  for (unsigned d = 0; d < count; d++)
    n[d] =
        current >= d && current - d < n_periods ? per_period[current - d] : 0.0;
}

/*
 * One N: elements arrive at about `rate` per period at random times spread
 * over every period, time moves in random steps of 1..t/20, and after every
 * step every element younger than (N+1) t must be found (both checks),
 * while each element older than (N+2) t is probed once: those still found
 * are false positives, and their number must match the false positive rate
 * at the moment of the probe. Inserts that the FBF found already (false
 * positives at insert time, so Algorithm 1 skipped them) are not tracked.
 */
static void window_run(unsigned n_past, uint64_t seed) {
  const uint64_t t = 1000, m = 4096;
  const unsigned k = 4, count = n_past + 2;
  const double rate = 200.0;
  const unsigned insert_periods = SLOW_BUILD ? 20 : 40;
  const uint64_t lo = (uint64_t)(n_past + 1) * t, hi = (uint64_t)count * t;
  const uint64_t insert_end = insert_periods * t, end = insert_end + hi + 3 * t;
  const size_t n_periods = end / t + 2;
  bk_fbf_config cfg = {
      .m_bits = m, .k = k, .n_past = n_past, .refresh_period = t, .seed = seed};
  bk_fbf *f = fbf_make(&cfg);
  size_t cap = (size_t)(rate * (insert_periods + 2));
  elem *el = calloc(cap, sizeof *el);
  double *per_period = calloc(n_periods, sizeof *per_period);
  assert_non_null(el);
  assert_non_null(per_period);
  uint64_t rng = seed, now = 0, next_id = 0;
  size_t n_el = 0, first = 0;
  double credit = 0.0;
  /* Forgotten elements probed / found, and what Eq. 4.3 and the shared
   * model expected; the same for false positives at insert time. */
  double exp_probes = 0, exp_found = 0, exp_est = 0, exp_e43 = 0, exp_model = 0;
  double ins_total = 0, ins_fp = 0, ins_est = 0, ins_model = 0;
  double n_vec[10];
  unsigned step_no = 0;
  while (now < end) {
    uint64_t dt = 1 + bk_test_next(&rng) % (t / 20);
    now += dt;
    fbf_advance(f, now);
    uint64_t cur = now / t;
    step_no++;
    if (now < insert_end) {
      period_counts(per_period, n_periods, cur, count, n_vec);
      double model =
          fbf_shared_model(n_vec, count, m, k, BK_FBF_CHECK_OPTIMIZED);
      credit += rate * (double)dt / (double)t;
      while (credit >= 1.0) {
        credit -= 1.0;
        bk_hash h = fbf_hash_id(f, next_id);
        ins_total++;
        ins_est += fbf_est_of(f, BK_FBF_CHECK_OPTIMIZED);
        ins_model += model;
        if (fbf_add_new(f, h)) {
          assert_true(n_el < cap);
          el[n_el].h = h;
          el[n_el].s = now;
          el[n_el].id = next_id;
          n_el++;
          per_period[cur] += 1.0;
        } else {
          ins_fp++;
        }
        next_id++;
      }
    }
    period_counts(per_period, n_periods, cur, count, n_vec);
    double model = fbf_shared_model(n_vec, count, m, k, BK_FBF_CHECK_OPTIMIZED);
    double est = fbf_est_of(f, BK_FBF_CHECK_OPTIMIZED);
    double e43 = fbf_eq43_of(f, BK_FBF_CHECK_OPTIMIZED);
    /* Past the most the window keeps: forgotten, but for false positives. */
    while (first < n_el && now - el[first].s > hi) {
      exp_probes++;
      exp_found += fbf_has(f, el[first].h);
      exp_est += est;
      exp_e43 += e43;
      exp_model += model;
      first++;
    }
    /* Younger than the least the window keeps: found, by both checks. */
    for (size_t i = first; i < n_el; i++) {
      if (now - el[i].s >= lo) continue;
      if (!fbf_has(f, el[i].h) ||
          !fbf_has_with(f, el[i].h, BK_FBF_CHECK_SIMPLE) ||
          (i % 64 == 0 && !fbf_has_id(f, el[i].id)))
        fail_msg(
            "N=%u: element %llu inserted at %llu lost at %llu (age %llu "
            "< (N+1)t = %llu)",
            n_past, (unsigned long long)el[i].id, (unsigned long long)el[i].s,
            (unsigned long long)now, (unsigned long long)(now - el[i].s),
            (unsigned long long)lo);
    }
    if (step_no % 37 == 0) {
      /* The counts are Algorithm 1's: the future holds this period's
       * inserts, position q >= 1 periods q - 1 and q. */
      bk_fbf_info in = fbf_info_of(f);
      assert_int_equal(in.refreshes, cur);
      assert_int_equal(in.deferred, 0);
      assert_int_equal(in.n_filters, count);
      for (unsigned q = 0; q < count; q++) {
        double want = q == 0 ? n_vec[0] : n_vec[q - 1] + n_vec[q];
        if ((double)in.inserted[q] != want)
          fail_msg("N=%u at %llu: filter %u counts %llu inserts, expected %.0f",
                   n_past, (unsigned long long)now, q,
                   (unsigned long long)in.inserted[q], want);
      }
    }
  }
  assert_int_equal(first, n_el); /* every element was probed once forgotten */
  print_message(
      "window N=%u: %.0f forgotten elements probed, %.0f still found "
      "(estimate %.1f, Eq. 4.3 %.1f, shared model %.1f); %.0f of %.0f "
      "inserts were false positives (estimate %.1f, model %.1f)\n",
      n_past, exp_probes, exp_found, exp_est, exp_e43, exp_model, ins_fp,
      ins_total, ins_est, ins_model);
  /*
   * The forgotten elements still found are the false positives: each
   * probe, given the filters at that moment, is a Bernoulli trial whose
   * sum over a run is near-Poisson, so 4 sqrt(expected) covers the noise;
   * the model's own error (bit positions treated as independent; the
   * index derivation's floor, ~n/m^2, is 0.5% here) gets 10%, and the
   * library's estimate, which also treats the stages of the check as
   * independent of one another, 20%. Measured over six seeds: the found
   * counts stay within 2 sigma of the shared model for N = 1, 3, 6, while
   * Eq. 4.3 - blind to the pairs' shared elements - falls 15% (N = 3) and
   * 35% (N = 6) short: asserted as the model's excess below.
   */
  double tol_model = 4 * sqrt(exp_model) + 0.10 * exp_model + 3;
  if (fabs(exp_found - exp_model) > tol_model)
    fail_msg("N=%u: %.0f forgotten elements found, shared model %.1f +- %.1f",
             n_past, exp_found, exp_model, tol_model);
  double tol_est = 4 * sqrt(exp_est) + 0.20 * exp_est + 3;
  if (fabs(exp_found - exp_est) > tol_est)
    fail_msg("N=%u: %.0f forgotten elements found, estimate %.1f +- %.1f",
             n_past, exp_found, exp_est, tol_est);
  double tol_ins = 4 * sqrt(ins_model) + 0.10 * ins_model + 3;
  if (fabs(ins_fp - ins_model) > tol_ins)
    fail_msg("N=%u: %.0f false positives at insert, shared model %.1f +- %.1f",
             n_past, ins_fp, ins_model, tol_ins);
  if (n_past >= 3) assert_true(exp_e43 < 0.9 * exp_model);
  if (n_past == 1) assert_true(fabs(exp_e43 - exp_model) < 0.02 * exp_model);
  free(el);
  free(per_period);
  bk_fbf_destroy(f);
}

static void test_window(void **state) {
  (void)state;
  const unsigned ns[] = {1, 3, 6};
  for (size_t i = 0; i < 3; i++)
    window_run(ns[i], fbf_test_seed(0x3D0 + ns[i]));
}

/* ---- bad arguments --------------------------------------------------------
 */

BK_TEST_DEFINE_CREATE_REFUSALS(fbf, static)

BK_TEST_DEFINE_SET_ARGUMENTS(fbf, static)

static void test_bad_arguments(void **state) {
  (void)state;
  const bk_fbf_config ok = {
      .m_bits = 1000, .k = 3, .n_past = 2, .refresh_period = 100};
  bk_fbf_config c;
  fbf_expect_create_null(&ok);
#define BAD(desc, edit)                 \
  do {                                  \
    c = ok;                             \
    edit;                               \
    fbf_expect_create_einval(&c, desc); \
  } while (0)
  BAD("N = 0", c.n_past = 0);
  BAD("N = 63 (65 filters)", c.n_past = 63);
  BAD("k = 0 with m_bits", c.k = 0);
  BAD("k = 65", c.k = 65);
  BAD("t = 0", c.refresh_period = 0);
  BAD("neither m_bits nor capacity", c.m_bits = 0);
  BAD("m over 2^40", c.m_bits = ((uint64_t)1 << 40) + 1);
  BAD("capacity sized over 2^40 bits",
      (c.m_bits = 0, c.capacity = (uint64_t)1 << 40, c.fpp = 1e-9));
  BAD("fpp < 0", c.fpp = -0.1);
  BAD("fpp = 1", c.fpp = 1.0);
  BAD("fpp > 1", c.fpp = 1.5);
  BAD("fpp NaN", c.fpp = NAN);
  BAD("fpp inf", c.fpp = INFINITY);
  BAD("target < 0", c.target_fpp = -0.5);
  BAD("target = 1", c.target_fpp = 1.0);
  BAD("target NaN", c.target_fpp = NAN);
  BAD("target -inf", c.target_fpp = -INFINITY);
  BAD("capacity with fpp NaN", (c.m_bits = 0, c.capacity = 100, c.fpp = NAN));
  BAD("min_window > (N+1) t", c.min_window = 301);
  BAD("max_filters < N + 2", c.max_filters = 3);
  BAD("max_filters > 64", c.max_filters = 65);
  BAD("adaptive max_filters > 64", (c.adaptive = true, c.max_filters = 100));
  BAD("min_filters 2", c.min_filters = 2);
  BAD("min_filters 1", c.min_filters = 1);
  BAD("min_filters > N + 2", c.min_filters = 5);
  BAD("min_period > t", c.min_period = 101);
  BAD("max_period < t", c.max_period = 99);
  BAD("check 3", c.check = (bk_fbf_check)3);
  BAD("check -1", c.check = (bk_fbf_check)-1);
  BAD("hash 9", c.hash_alg = (bk_hash_alg)9);
  BAD("murmur seed > 32 bits",
      (c.hash_alg = BK_HASH_MURMUR3, c.seed = (uint64_t)1 << 32));
  BAD("start_time > 2^63", c.start_time = UINT64_MAX - 5);
  BAD("(N+1) t overflows", c.refresh_period = UINT64_MAX / 2);
  bk_allocator half = {.alloc = NULL, .free = NULL};
  BAD("allocator without functions", c.allocator = &half);
#undef BAD
  /* The boundaries themselves are fine. */
  c = ok;
  c.min_window = 300;
  c.max_filters = 4;
  c.fpp = 0.999;
  c.target_fpp = 1e-300;
  bk_fbf *f = fbf_make(&c);
  bk_fbf_destroy(f);
  bk_fbf_destroy(NULL);

  f = fbf_make(&ok);
  bk_hash h = fbf_hash_id(f, 1);
  bool out = true;
  double p = -1;
  size_t n = 0, w = 0;
  unsigned char buf[16];
  bk_fbf_info in;
  bk_fbf_resize_event ev;
  fbf_assert_set_arguments(f);
  assert_bk_status(bk_fbf_contains_with(NULL, h, BK_FBF_CHECK_SIMPLE, &out),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_contains_with(f, h, BK_FBF_CHECK_SIMPLE, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_contains_with(f, h, (bk_fbf_check)3, &out),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_contains_with(f, h, (bk_fbf_check)99, &out),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_contains_with(f, h, (bk_fbf_check)-1, &out),
                   BK_EINVAL);
  assert_bk_ok(bk_fbf_contains_with(f, h, BK_FBF_CHECK_DEFAULT, &out));
  assert_false(out);
  assert_bk_status(bk_fbf_estimated_fpp(NULL, BK_FBF_CHECK_OPTIMIZED, &p),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_estimated_fpp(f, BK_FBF_CHECK_OPTIMIZED, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_estimated_fpp(f, (bk_fbf_check)7, &p), BK_EINVAL);
  assert_bk_status(bk_fbf_estimated_fpp_eq43(NULL, BK_FBF_CHECK_OPTIMIZED, &p),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_estimated_fpp_eq43(f, (bk_fbf_check)7, &p),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_estimated_fpp_eq43(f, BK_FBF_CHECK_SIMPLE, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_info_get(NULL, &in), BK_EINVAL);
  assert_bk_status(bk_fbf_info_get(f, NULL), BK_EINVAL);
  assert_int_equal(bk_fbf_trace_count(NULL), 0);
  assert_bk_status(bk_fbf_trace_get(NULL, 0, &ev), BK_EINVAL);
  assert_bk_status(bk_fbf_trace_get(f, 0, &ev), BK_EINVAL); /* empty */
  assert_bk_status(bk_fbf_serialized_size(NULL, &n), BK_EINVAL);
  assert_bk_status(bk_fbf_serialized_size(f, NULL), BK_EINVAL);
  assert_bk_ok(bk_fbf_serialized_size(f, &n));
  unsigned char *big = malloc(n);
  assert_non_null(big);
  assert_bk_status(bk_fbf_serialize(NULL, big, n, &w), BK_EINVAL);
  assert_bk_status(bk_fbf_serialize(f, NULL, n, &w), BK_EINVAL);
  assert_bk_status(bk_fbf_serialize(f, big, n, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_serialize(f, big, n - 1, &w), BK_EINVAL);
  assert_bk_status(bk_fbf_serialize(f, buf, sizeof buf, &w), BK_EINVAL);
  assert_bk_ok(bk_fbf_serialize(f, big, n, &w));
  bk_fbf *g = SENTINEL;
  assert_bk_status(bk_fbf_deserialize(NULL, n, NULL, &g), BK_EINVAL);
  assert_bk_status(bk_fbf_deserialize(big, n, NULL, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_deserialize(big, n, &half, &g), BK_EINVAL);
  assert_ptr_equal(g, SENTINEL);
  free(big);

  /* Time: never backwards, for advance nor adapt; the state is untouched. */
  assert_bk_status(bk_fbf_advance(NULL, 10), BK_EINVAL);
  assert_bk_status(bk_fbf_adapt(NULL, 10), BK_EINVAL);
  fbf_advance(f, 250);
  assert_bk_status(bk_fbf_advance(f, 249), BK_EINVAL);
  assert_bk_status(bk_fbf_advance(f, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_adapt(f, 100), BK_EINVAL);
  in = fbf_info_of(f);
  assert_int_equal(in.now, 250);
  assert_int_equal(in.refreshes, 2);
  assert_int_equal(bk_fbf_trace_count(f), 0);
  fbf_advance(f, 250); /* the same time again is fine */

  /* Resize outside the bounds (min N + 2 = 4, max 4 filters; t in
   * [min(step, t), t] = [100, 100]; (n - 1) t >= min_window = 300). */
  assert_bk_status(bk_fbf_resize(NULL, 4, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 3, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 5, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 0, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 4, 99), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 4, 101), BK_EINVAL);
  assert_int_equal(bk_fbf_trace_count(f), 0);
  assert_bk_ok(bk_fbf_resize(f, 4, 0));
  assert_int_equal(bk_fbf_trace_count(f), 1);
  assert_bk_status(bk_fbf_trace_get(f, 1, &ev), BK_EINVAL);
  assert_bk_status(bk_fbf_trace_get(f, 0, NULL), BK_EINVAL);
  assert_bk_ok(bk_fbf_trace_get(f, 0, &ev));
  assert_int_equal(ev.action, BK_FBF_MANUAL);
  assert_int_equal(ev.time, 250);
  bk_fbf_destroy(f);

  /* A resize may not leave min_window uncovered: N = 2, t = 100, min_window
   * 300, up to 8 filters, t down to 10: 3 filters need t >= 150. */
  c = ok;
  c.max_filters = 8;
  c.min_filters = 3;
  c.min_period = 10;
  c.max_period = 400;
  f = fbf_make(&c);
  assert_bk_status(bk_fbf_resize(f, 3, 0), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 3, 149), BK_EINVAL);
  assert_bk_ok(bk_fbf_resize(f, 3, 150));
  assert_bk_status(bk_fbf_resize(f, 8, 42), BK_EINVAL); /* 7 * 42 < 300 */
  assert_bk_ok(bk_fbf_resize(f, 8, 43));
  assert_bk_status(bk_fbf_resize(f, 9, 100), BK_EINVAL);
  assert_bk_status(bk_fbf_resize(f, 4, 401), BK_EINVAL);
  bk_fbf_destroy(f);
}

/* ---- allocation failures ---------------------------------------------------
 */

BK_TEST_DEFINE_OOM_MAKE(fbf, static)

static void oom_create_check(void *check_ctx, bk_test_alloc *st, void *f) {
  (void)check_ctx, (void)st;
  assert_bk_ok(bk_fbf_add(f, "a", 1));
  bk_fbf_destroy(f);
}

static void test_oom_create(void **state) {
  (void)state;
  bk_fbf_config cfg = {.m_bits = 3 * 4096,
                       .k = 4,
                       .n_past = 2,
                       .refresh_period = 100,
                       .adaptive = true};
  assert_true(bk_test_oom(fbf_oom_make, &cfg, oom_create_check, NULL, false,
                          100, "create") >= 1);
}

int main(void) {
  bk_test_begin(FBF_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_defaults),
      cmocka_unit_test(test_insert_algorithm1),
      cmocka_unit_test(test_add_of_false_positive_keeps_window),
      cmocka_unit_test(test_matches_reference),
      cmocka_unit_test(test_create_fixed_k_meets_fpp),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_oom_create),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
