/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_bloom's union and intersection (and what they refuse), and
 * the cardinality and fill estimates.
 *
 * Built with BK_BLOOM_NO_INLINE: every call here reaches the library's
 * entry points (test_bloom_split covers the header's inline path). Shared
 * helpers: tests/bloom_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>

#include "bloom_helpers.h"

#include "bloomkit/hash.h"
#include "bloomkit/params.h"

/* ---- union, intersection, estimates, clear ------------------------------ */

static void test_merge_intersect(void **state) {
  (void)state;
  for (int layout = 0; layout < 2; layout++) {
    for (int alg = 1; alg <= 2; alg++) {
      const uint64_t m = 1u << 18;
      const unsigned k = 5;
      bk_bloom *a =
          bloom_make_mk(m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg, 8);
      bk_bloom *b =
          bloom_make_mk(m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg, 8);
      bk_bloom *all =
          bloom_make_mk(m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg, 8);
      /* a holds keys [0, 15000), b holds [10000, 25000): 5000 shared. */
      for (uint64_t i = 0; i < 25000; i++) {
        if (i < 15000) bloom_add_u64(a, i);
        if (i >= 10000) bloom_add_u64(b, i);
        bloom_add_u64(all, i);
      }
      size_t la, lb;
      unsigned char *ba = bloom_blob_of(a, &la);
      unsigned char *bb = bloom_blob_of(b, &lb);

      bk_bloom *u =
          bloom_make_mk(m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg, 8);
      assert_bk_ok(bk_bloom_merge(u, a));
      assert_bk_ok(bk_bloom_merge(u, b));
      for (uint64_t i = 0; i < 25000; i++) assert_true(bloom_has_u64(u, i));
      /* Union of filters == filter of the union, bit for bit. */
      bloom_assert_same_blob(u, all);

      bk_bloom *x =
          bloom_make_mk(m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg, 8);
      assert_bk_ok(bk_bloom_merge(x, a));
      assert_bk_ok(bk_bloom_intersect(x, b));
      for (uint64_t i = 10000; i < 15000; i++) assert_true(bloom_has_u64(x, i));
      /* Keys only in one side mostly drop out: at most the FP rate of a. */
      uint64_t stay = 0;
      for (uint64_t i = 0; i < 10000; i++) stay += bloom_has_u64(x, i);
      double fa;
      assert_bk_ok(bk_bloom_fill_fpp(a, &fa));
      assert_true(stay < 10000 * fa * 3 + 20);
      /* The intersection is the bitwise AND of the payloads. */
      size_t lx;
      unsigned char *bx = bloom_blob_of(x, &lx);
      assert_int_equal(lx, la);
      for (size_t i = HDR_LEN; i < la - 8; i++)
        assert_int_equal(bx[i], ba[i] & bb[i]);
      free(bx);
      free(ba);
      free(bb);

      /* Merging into itself's copy changes nothing. */
      assert_bk_ok(bk_bloom_merge(u, all));
      bloom_assert_same_blob(u, all);

      bk_bloom_destroy(a);
      bk_bloom_destroy(b);
      bk_bloom_destroy(all);
      bk_bloom_destroy(u);
      bk_bloom_destroy(x);
    }
  }
}

static void test_merge_mismatch(void **state) {
  (void)state;
  bk_bloom *base = bloom_make_mk(4096, 4, BK_BLOOM_STANDARD, BK_HASH_XXH3, 1);
  bk_bloom *other[] = {
      bloom_make_mk(8192, 4, BK_BLOOM_STANDARD, BK_HASH_XXH3, 1), /* m */
      bloom_make_mk(4096, 5, BK_BLOOM_STANDARD, BK_HASH_XXH3, 1), /* k */
      bloom_make_mk(4096, 4, BK_BLOOM_BLOCKED, BK_HASH_XXH3, 1),  /* layout */
      bloom_make_mk(4096, 4, BK_BLOOM_STANDARD, BK_HASH_MURMUR3, 1), /* hash */
      bloom_make_mk(4096, 4, BK_BLOOM_STANDARD, BK_HASH_XXH3, 2),    /* seed */
  };
  bloom_add_u64(base, 1);
  size_t len0;
  unsigned char *before = bloom_blob_of(base, &len0);
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    bloom_add_u64(other[i], 2);
    assert_bk_status(bk_bloom_merge(base, other[i]), BK_EMISMATCH);
    assert_bk_status(bk_bloom_intersect(base, other[i]), BK_EMISMATCH);
    assert_bk_status(bk_bloom_merge(other[i], base), BK_EMISMATCH);
    assert_bk_status(bk_bloom_intersect(other[i], base), BK_EMISMATCH);
    bk_bloom_destroy(other[i]);
  }
  /* A refused merge leaves dst alone. */
  bk_test_assert_serializes_to(&bk_test_codec_bloom, base, before, len0);
  free(before);
  /* Blocked filters sized differently before rounding but equal after. */
  bk_bloom *b1 = bloom_make_mk(1000, 4, BK_BLOOM_BLOCKED, BK_HASH_XXH3, 1);
  bk_bloom *b2 = bloom_make_mk(1024, 4, BK_BLOOM_BLOCKED, BK_HASH_XXH3, 1);
  assert_bk_ok(bk_bloom_merge(b1, b2));
  bk_bloom_destroy(b1);
  bk_bloom_destroy(b2);
  bk_bloom_destroy(base);
}

/* DEFAULT is XXH3, so the two are the same hash and compatible. */
static void test_merge_default_hash_is_xxh3(void **state) {
  (void)state;
  bk_bloom *a = bloom_make_mk(4096, 4, BK_BLOOM_STANDARD, BK_HASH_DEFAULT, 1);
  bk_bloom *b = bloom_make_mk(4096, 4, BK_BLOOM_STANDARD, BK_HASH_XXH3, 1);
  bloom_add_u64(b, 12);
  assert_bk_ok(bk_bloom_merge(a, b));
  assert_true(bloom_has_u64(a, 12));
  bk_bloom_destroy(a);
  bk_bloom_destroy(b);
}

static double estimate_from_bits(uint64_t x, uint64_t m, unsigned k) {
  double fx = x == m ? (double)m - 0.5 : (double)x;
  return -((double)m / k) * log1p(-fx / (double)m);
}

static void test_cardinality_and_fill(void **state) {
  (void)state;
  for (int layout = 0; layout < 2; layout++) {
    bk_bloom_config cfg = {
        .capacity = 100000, .fpp = 0.01, .layout = (bk_bloom_layout)layout};
    bk_bloom *b = bloom_make(&cfg);
    bk_bloom_info info;
    assert_bk_ok(bk_bloom_info_get(b, &info));
    double est = -1, fill = -1;
    assert_bk_ok(bk_bloom_cardinality(b, &est));
    assert_true(est == 0.0);
    assert_bk_ok(bk_bloom_fill_fpp(b, &fill));
    assert_true(fill == 0.0);

    uint64_t rng = 31337;
    for (uint64_t i = 0; i < 100000; i++) bloom_add_u64(b, bk_test_next(&rng));
    assert_bk_ok(bk_bloom_cardinality(b, &est));
    assert_bk_ok(bk_bloom_fill_fpp(b, &fill));

    size_t len;
    unsigned char *blob = bloom_blob_of(b, &len);
    uint64_t x = bloom_popcount_payload(blob, len);
    free(blob);
    /* Exactly the documented estimator, from the set bits. */
    double want_est = estimate_from_bits(x, info.m_bits, info.k);
    assert_true(fabs(est - want_est) <= 1e-9 * want_est);
    /* At design capacity the Swamidass-Baldi estimate has a relative sd
     * well under 1 % (m ~ 10^6); the blocked layout biases it low by about
     * k/1024 (uneven block loads leave more zeros): 3 % holds both. */
    print_message("cardinality %s: estimate %.1f for 100000 (%.2f%%)\n",
                  layout ? "blocked" : "standard", est,
                  100 * (est - 100000) / 100000);
    assert_true(fabs(est - 100000) <= 0.03 * 100000);

    if (layout == BK_BLOOM_STANDARD) {
      double want_fill = pow((double)x / (double)info.m_bits, info.k);
      assert_true(fabs(fill - want_fill) <= 1e-9 * want_fill);
      double p;
      assert_bk_ok(bk_params_fpp(info.m_bits, info.k, 100000, &p));
      /* (X/m)^k vs its expectation: relative sd ~ k / sqrt(m) < 1 %. */
      assert_true(fabs(fill - p) <= 0.05 * p);
    } else {
      double p;
      assert_bk_ok(bk_params_fpp_blocked(info.m_bits, info.k, 100000, &p));
      print_message("fill_fpp blocked: %.6f, model %.6f\n", fill, p);
      assert_true(fill > 0.5 * p && fill < 2 * p);
    }

    /* clear empties. */
    assert_bk_ok(bk_bloom_clear(b));
    assert_bk_ok(bk_bloom_cardinality(b, &est));
    assert_true(est == 0.0);
    assert_bk_ok(bk_bloom_fill_fpp(b, &fill));
    assert_true(fill == 0.0);
    rng = 31337;
    for (uint64_t i = 0; i < 1000; i++)
      assert_false(bloom_has_u64(b, bk_test_next(&rng)));
    bk_bloom_config fresh_cfg = cfg;
    bk_bloom *fresh = bloom_make(&fresh_cfg);
    bloom_assert_same_blob(b, fresh);
    bk_bloom_destroy(fresh);
    /* And it is usable afterwards. */
    bloom_add_u64(b, 5);
    assert_true(bloom_has_u64(b, 5));
    bk_bloom_destroy(b);
  }
}

static void test_cardinality_saturated(void **state) {
  (void)state;
  bk_bloom *b = bloom_make_mk(64, 1, BK_BLOOM_STANDARD, BK_HASH_XXH3, 0);
  double fill = 0;
  for (uint64_t i = 0; i < 100000 && fill < 1.0; i++) {
    bloom_add_u64(b, i);
    assert_bk_ok(bk_bloom_fill_fpp(b, &fill));
  }
  assert_true(fill == 1.0);
  double est;
  assert_bk_ok(bk_bloom_cardinality(b, &est));
  assert_true(isfinite(est));
  double want = -64.0 * log(0.5 / 64.0); /* m - 1/2 set bits */
  assert_true(fabs(est - want) <= 1e-9 * want);
  bk_bloom_destroy(b);
}

int main(void) {
  bk_test_begin(BLOOM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merge_intersect),
      cmocka_unit_test(test_merge_mismatch),
      cmocka_unit_test(test_merge_default_hash_is_xxh3),
      cmocka_unit_test(test_cardinality_and_fill),
      cmocka_unit_test(test_cardinality_saturated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
