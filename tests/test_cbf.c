/* SPDX-License-Identifier: MIT */
/* bk_cbf: the counting Bloom filter. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/cbf.h"
#include "bloomkit/params.h"
#include "core/internal.h"
#include "testutil.h"

static const unsigned widths[4] = {4, 8, 16, 32};
static const bk_bloom_layout layouts[2] = {BK_BLOOM_STANDARD, BK_BLOOM_BLOCKED};

BK_TEST_DEFINE_MAKE(cbf, static)
BK_TEST_DEFINE_INFO_OF(cbf, static)
BK_TEST_DEFINE_BLOB_OF(cbf, static)

/* The filter's state is exactly what it was (serialized bytes equal). */
static void assert_same_state(const bk_cbf *f, const unsigned char *blob,
                              size_t len) {
  bk_test_assert_serializes_to(&bk_test_codec_cbf, f, blob, len);
}

static void test_create_config(void **state) {
  (void)state;
  bk_cbf *f = (bk_cbf *)&f, *const sentinel = f;
  const bk_cbf_config bad[] = {
      {.capacity = 0},               /* no size at all */
      {.capacity = 100, .fpp = 1.0}, /* fpp outside (0, 1) */
      {.capacity = 100, .fpp = -0.1},
      {.capacity = 100, .fpp = NAN},
      {.capacity = 100, .counter_bits = 12}, /* width */
      {.capacity = 100, .counter_bits = 64},
      {.capacity = 100, .layout = (bk_bloom_layout)2},
      {.capacity = 100, .k = 65},
      {.m_counters = 1000}, /* m without k */
      {.m_counters = ((uint64_t)1 << 40) + 1, .k = 3},
      {.capacity = 100, .hash_alg = BK_HASH_MURMUR3, .seed = (uint64_t)1 << 32},
      {.capacity = 100, .hash_alg = (bk_hash_alg)7},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (bk_cbf_create(&f, &bad[i]) != BK_EINVAL)
      fail_msg("bad config %zu accepted", i);
    assert_ptr_equal(f, sentinel);
  }
  assert_bk_status(bk_cbf_create(NULL, &bad[0]), BK_EINVAL);
  assert_bk_status(bk_cbf_create(&f, NULL), BK_EINVAL);
  /* Defaults: 4-bit counters, fpp 0.01, standard layout, optimal k. */
  f = cbf_make(&(bk_cbf_config){.capacity = 1000});
  bk_cbf_info in = cbf_info_of(f);
  uint64_t m;
  unsigned k;
  assert_bk_ok(bk_params_for_target(1000, 0.01, &m, &k));
  assert_int_equal(in.counter_bits, 4);
  assert_int_equal(in.m_counters, m);
  assert_int_equal(in.k, k);
  assert_int_equal(in.capacity, 1000);
  assert_int_equal(in.nonzero, 0);
  bk_cbf_destroy(f);
  bk_cbf_destroy(NULL);
}

/* Blocked sizing meets fpp with the blocked layout's own exact rate, for
 * every width (a block holds 512 / width counters). */
static void test_blocked_sizing_meets_fpp(void **state) {
  (void)state;
  for (int w = 0; w < 4; w++) {
    bk_cbf *f = cbf_make(&(bk_cbf_config){.capacity = 20000,
                                          .fpp = 0.01,
                                          .counter_bits = widths[w],
                                          .layout = BK_BLOOM_BLOCKED});
    bk_cbf_info in = cbf_info_of(f);
    unsigned cells = 512 / widths[w];
    assert_int_equal(in.m_counters % cells, 0);
    double p;
    assert_bk_ok(bk__fpp_blocked_cells(in.m_counters, cells, in.k, 20000, &p));
    if (!(p <= 0.01))
      fail_msg("width %u: blocked rate %g > 0.01", widths[w], p);
    /* ... and not wastefully: 1/64 fewer counters would miss it. */
    uint64_t less = (in.m_counters - in.m_counters / 32) / cells * cells;
    assert_bk_ok(bk__fpp_blocked_cells(less, cells, in.k, 20000, &p));
    assert_true(p > 0.01);
    bk_cbf_destroy(f);
  }
}

static void test_add_remove_count(void **state) {
  (void)state;
  for (int w = 0; w < 4; w++)
    for (int l = 0; l < 2; l++) {
      bk_cbf *f = cbf_make(&(bk_cbf_config){
          .capacity = 1000, .counter_bits = widths[w], .layout = layouts[l]});
      bool v;
      uint32_t c;
      assert_bk_ok(bk_cbf_contains(f, "a", 1, &v));
      assert_false(v);
      size_t len;
      unsigned char *empty = cbf_blob_of(f, &len);
      /* Remove of an absent key: a distinct error, nothing changes. */
      assert_bk_status(bk_cbf_remove(f, "a", 1), BK_ENOTFOUND);
      assert_same_state(f, empty, len);
      for (int i = 0; i < 3; i++) assert_bk_ok(bk_cbf_add(f, "a", 1));
      assert_bk_ok(bk_cbf_count(f, "a", 1, &c));
      assert_true(c >= 3); /* an upper bound: exactly 3 on an empty filter */
      assert_int_equal(c, 3);
      assert_bk_ok(bk_cbf_remove(f, "a", 1));
      assert_bk_ok(bk_cbf_count(f, "a", 1, &c));
      assert_int_equal(c, 2);
      assert_bk_ok(bk_cbf_remove(f, "a", 1));
      assert_bk_ok(bk_cbf_remove(f, "a", 1));
      assert_bk_ok(bk_cbf_contains(f, "a", 1, &v));
      assert_false(v);
      assert_same_state(f, empty, len); /* back to all zero */
      assert_bk_status(bk_cbf_remove(f, "a", 1), BK_ENOTFOUND);
      /* The _hash twins agree with the keyed forms. */
      bk_hash h;
      assert_bk_ok(bk_cbf_hash(f, "b", 1, &h));
      assert_bk_ok(bk_cbf_add_hash(f, h));
      assert_bk_ok(bk_cbf_contains(f, "b", 1, &v));
      assert_true(v);
      assert_bk_ok(bk_cbf_count_hash(f, h, &c));
      assert_int_equal(c, 1);
      assert_bk_ok(bk_cbf_remove_hash(f, h));
      assert_bk_ok(bk_cbf_contains_hash(f, h, &v));
      assert_false(v);
      free(empty);
      bk_cbf_destroy(f);
    }
}

/* A counter at its maximum stays there: adds past it and removes of every
 * add leave the key present (no false negative) and the counter saturated;
 * dablooms decremented a counter stuck at 15, which made false negatives. */
static void test_saturation_never_false_negative(void **state) {
  (void)state;
  for (int l = 0; l < 2; l++) {
    bk_cbf *f = cbf_make(&(bk_cbf_config){
        .m_counters = 4096, .k = 4, .counter_bits = 4, .layout = layouts[l]});
    for (int i = 0; i < 20; i++) assert_bk_ok(bk_cbf_add(f, "hot", 3));
    uint32_t c;
    assert_bk_ok(bk_cbf_count(f, "hot", 3, &c));
    assert_int_equal(c, 15);
    bk_cbf_info in = cbf_info_of(f);
    assert_true(in.saturated >= 1 && in.saturated <= 4);
    assert_int_equal(in.saturated, in.nonzero);
    /* Another key sharing nothing; then all 20 removes of "hot". */
    assert_bk_ok(bk_cbf_add(f, "cold", 4));
    for (int i = 0; i < 20; i++) assert_bk_ok(bk_cbf_remove(f, "hot", 3));
    bool v;
    assert_bk_ok(bk_cbf_contains(f, "hot", 3, &v));
    assert_true(v);
    assert_bk_ok(bk_cbf_count(f, "hot", 3, &c));
    assert_int_equal(c, 15);
    assert_bk_ok(bk_cbf_contains(f, "cold", 4, &v));
    assert_true(v);
    bk_cbf_destroy(f);
  }
  /* 8 bits: 255. */
  bk_cbf *f =
      cbf_make(&(bk_cbf_config){.m_counters = 512, .k = 2, .counter_bits = 8});
  for (int i = 0; i < 300; i++) assert_bk_ok(bk_cbf_add(f, "x", 1));
  uint32_t c;
  assert_bk_ok(bk_cbf_count(f, "x", 1, &c));
  assert_int_equal(c, 255);
  bk_cbf_destroy(f);
}

/* Random adds and removes of added keys, with a small filter so counters
 * collide and saturate: every key still added is always found. */
static void test_random_ops_no_false_negative(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0xCBF1);
  enum { KEYS = 400, OPS = 20000 };
  for (int w = 0; w < 4; w++)
    for (int l = 0; l < 4; l++) {
      bk_cbf *f = cbf_make(&(bk_cbf_config){.m_counters = 1024,
                                            .k = 5,
                                            .counter_bits = widths[w],
                                            .layout = layouts[l % 2],
                                            .single_writer = l >= 2,
                                            .seed = rng & 0xFFFF});
      static unsigned times[KEYS];
      const uint32_t max = widths[w] == 32 ? UINT32_MAX : (1u << widths[w]) - 1;
      memset(times, 0, sizeof times);
      for (int op = 0; op < OPS; op++) {
        uint64_t key = bk_test_next(&rng) % KEYS;
        bool add = times[key] == 0 || bk_test_next(&rng) % 2;
        if (add) {
          assert_bk_ok(bk_cbf_add(f, &key, sizeof key));
          times[key]++;
        } else {
          assert_bk_ok(bk_cbf_remove(f, &key, sizeof key));
          times[key]--;
        }
        if (op % 997 == 0)
          for (uint64_t k = 0; k < KEYS; k++) {
            if (!times[k]) continue;
            bool v;
            uint32_t c;
            assert_bk_ok(bk_cbf_contains(f, &k, sizeof k, &v));
            assert_bk_ok(bk_cbf_count(f, &k, sizeof k, &c));
            /* Each of its counters holds at least its own adds, unless
             * stuck at the maximum. */
            uint32_t least = times[k] < max ? times[k] : max;
            if (!v || c < least)
              fail_msg(
                  "width %u layout %d: key %llu added %u times, "
                  "contains %d count %u",
                  widths[w], l, (unsigned long long)k, times[k], v, c);
          }
      }
      bk_cbf_destroy(f);
    }
}

/* Measured false positive rate against the formula for the layout, within
 * 5 standard deviations of a binomial count (plus 2 % of p for the
 * formula's own approximation). */
static void test_false_positive_rate(void **state) {
  (void)state;
  const uint64_t n = BK_TEST_SLOW_BUILD ? 5000 : 20000;
  const uint64_t probes = 20 * n;
  for (int l = 0; l < 2; l++) {
    bk_cbf *f = cbf_make(&(bk_cbf_config){
        .capacity = n, .fpp = 0.01, .layout = layouts[l], .seed = 3});
    for (uint64_t i = 0; i < n; i++) assert_bk_ok(bk_cbf_add(f, &i, sizeof i));
    uint64_t fp = 0;
    for (uint64_t i = n; i < n + probes; i++) {
      bool v;
      assert_bk_ok(bk_cbf_contains(f, &i, sizeof i, &v));
      fp += v;
    }
    bk_cbf_info in = cbf_info_of(f);
    double p;
    if (layouts[l] == BK_BLOOM_STANDARD)
      assert_bk_ok(bk_params_fpp(in.m_counters, in.k, n, &p));
    else
      assert_bk_ok(bk__fpp_blocked_cells(in.m_counters, 128, in.k, n, &p));
    assert_true(p <= 0.01 * 1.001);
    double measured = (double)fp / (double)probes;
    double sigma = sqrt(p * (1 - p) / (double)probes);
    printf("cbf %s: n %llu, fpr %.5f, formula %.5f (5 sigma %.5f)\n",
           l ? "blocked" : "standard", (unsigned long long)n, measured, p,
           5 * sigma);
    if (fabs(measured - p) > 5 * sigma + 0.02 * p)
      fail_msg("layout %d: fpr %g vs %g", l, measured, p);
    bk_cbf_destroy(f);
  }
}

static void test_batches_match_single(void **state) {
  (void)state;
  enum { N = 203 };
  uint64_t ids[N];
  const void *keys[N];
  size_t lens[N];
  bk_hash hs[N];
  for (int i = 0; i < N; i++) {
    ids[i] = (uint64_t)i * 7919;
    keys[i] = &ids[i];
    lens[i] = sizeof ids[i];
  }
  for (int l = 0; l < 2; l++) {
    bk_cbf_config cfg = {.capacity = 300, .layout = layouts[l]};
    bk_cbf *a = cbf_make(&cfg), *b = cbf_make(&cfg);
    assert_bk_ok(bk_cbf_add_many(a, keys, lens, N));
    for (int i = 0; i < N; i++) assert_bk_ok(bk_cbf_add(b, keys[i], lens[i]));
    bk_test_assert_same_state(&bk_test_codec_cbf, a, b);
    bool out[N], one;
    for (int i = 0; i < N; i++)
      assert_bk_ok(bk_cbf_hash(a, keys[i], lens[i], &hs[i]));
    assert_bk_ok(bk_cbf_contains_many(a, keys, lens, N, out));
    for (int i = 0; i < N; i++) assert_true(out[i]);
    assert_bk_ok(bk_cbf_contains_many_hash(a, hs, N, out));
    for (int i = 0; i < N; i++) assert_true(out[i]);
    /* Remove the first 100 in a batch: counted, gone, the rest stay. */
    size_t removed = 0;
    assert_bk_ok(bk_cbf_remove_many(a, keys, lens, 100, &removed));
    assert_int_equal(removed, 100);
    assert_bk_ok(bk_cbf_remove_many(a, keys, lens, 100, &removed));
    assert_true(removed < 10); /* only false positives */
    assert_bk_ok(bk_cbf_contains_many(a, keys, lens, N, out));
    for (int i = 100; i < N; i++) assert_true(out[i]);
    for (int i = 0; i < N; i++) {
      assert_bk_ok(bk_cbf_contains(a, keys[i], lens[i], &one));
      assert_int_equal(one, out[i]);
    }
    /* Bad batches change nothing. */
    const void *holes[2] = {keys[0], NULL};
    size_t hole_lens[2] = {8, 3};
    assert_bk_status(bk_cbf_add_many(a, holes, hole_lens, 2), BK_EINVAL);
    assert_bk_status(bk_cbf_contains_many(a, keys, lens, 3, NULL), BK_EINVAL);
    assert_bk_status(bk_cbf_add_many(NULL, keys, lens, 1), BK_EINVAL);
    assert_bk_ok(bk_cbf_add_many(a, NULL, NULL, 0));
    bk_cbf_destroy(a);
    bk_cbf_destroy(b);
  }
}

static void test_merge_clear(void **state) {
  (void)state;
  bk_cbf_config cfg = {.m_counters = 2048, .k = 3, .counter_bits = 4};
  bk_cbf *a = cbf_make(&cfg), *b = cbf_make(&cfg);
  for (int i = 0; i < 10; i++) assert_bk_ok(bk_cbf_add(a, "x", 1));
  for (int i = 0; i < 10; i++) assert_bk_ok(bk_cbf_add(b, "x", 1));
  assert_bk_ok(bk_cbf_add(b, "y", 1));
  assert_bk_ok(bk_cbf_merge(a, b));
  uint32_t c;
  assert_bk_ok(bk_cbf_count(a, "x", 1, &c));
  assert_int_equal(c, 15); /* 20 saturates at 15 */
  assert_bk_ok(bk_cbf_count(a, "y", 1, &c));
  assert_int_equal(c, 1);
  /* Self-merge doubles. */
  assert_bk_ok(bk_cbf_merge(b, b));
  assert_bk_ok(bk_cbf_count(b, "y", 1, &c));
  assert_int_equal(c, 2);
  bk_cbf_config other = cfg;
  other.seed = 1;
  bk_cbf *d = cbf_make(&other);
  assert_bk_status(bk_cbf_merge(a, d), BK_EMISMATCH);
  other = cfg;
  other.counter_bits = 8;
  bk_cbf *e = cbf_make(&other);
  assert_bk_status(bk_cbf_merge(a, e), BK_EMISMATCH);
  assert_bk_status(bk_cbf_merge(NULL, a), BK_EINVAL);
  assert_bk_ok(bk_cbf_clear(a));
  assert_int_equal(cbf_info_of(a).nonzero, 0);
  bk_cbf_destroy(a);
  bk_cbf_destroy(b);
  bk_cbf_destroy(d);
  bk_cbf_destroy(e);
}

static void test_arguments(void **state) {
  (void)state;
  bk_cbf *f = cbf_make(&(bk_cbf_config){.capacity = 10});
  bool v;
  uint32_t c;
  bk_hash h = {1, 2};
  assert_bk_status(bk_cbf_add(NULL, "a", 1), BK_EINVAL);
  assert_bk_status(bk_cbf_add(f, NULL, 1), BK_EINVAL);
  assert_bk_ok(bk_cbf_add(f, NULL, 0)); /* the empty key */
  assert_bk_status(bk_cbf_remove(NULL, "a", 1), BK_EINVAL);
  assert_bk_status(bk_cbf_contains(f, "a", 1, NULL), BK_EINVAL);
  assert_bk_status(bk_cbf_contains(NULL, "a", 1, &v), BK_EINVAL);
  assert_bk_status(bk_cbf_count(f, "a", 1, NULL), BK_EINVAL);
  assert_bk_status(bk_cbf_count_hash(NULL, h, &c), BK_EINVAL);
  assert_bk_status(bk_cbf_add_hash(NULL, h), BK_EINVAL);
  assert_bk_status(bk_cbf_remove_hash(NULL, h), BK_EINVAL);
  assert_bk_status(bk_cbf_contains_hash(f, h, NULL), BK_EINVAL);
  assert_bk_status(bk_cbf_hash(f, "a", 1, NULL), BK_EINVAL);
  assert_bk_status(bk_cbf_info_get(f, NULL), BK_EINVAL);
  assert_bk_status(bk_cbf_clear(NULL), BK_EINVAL);
  bk_test_codec_arguments(&bk_test_codec_cbf, f);
  bk_cbf_destroy(f);
}

static void test_oom(void **state) {
  (void)state;
  bk_test_alloc st;
  for (size_t fail = 1; fail <= 3; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_cbf *f = NULL;
    bk_status s =
        bk_cbf_create(&f, &(bk_cbf_config){.capacity = 1000, .allocator = &al});
    if (s == BK_OK) {
      assert_true(st.calls < fail); /* the failing call never came */
      bk_cbf_destroy(f);
    } else {
      assert_int_equal(s, BK_ENOMEM);
      assert_null(f);
    }
    assert_int_equal(st.live, 0);
  }
}

static void test_serialize_roundtrip_and_hostile(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0xCBF2);
  for (int l = 0; l < 2; l++)
    for (int w = 0; w < 4; w += 3) {
      bk_cbf *f = cbf_make(&(bk_cbf_config){.m_counters = 300,
                                            .k = 3,
                                            .counter_bits = widths[w],
                                            .layout = layouts[l],
                                            .hash_alg = BK_HASH_MURMUR3,
                                            .seed = 77});
      for (uint64_t i = 0; i < 40; i++) assert_bk_ok(bk_cbf_add(f, &i, 8));
      for (int i = 0; i < 30; i++) assert_bk_ok(bk_cbf_add(f, "hot", 3));
      size_t len;
      unsigned char *blob = cbf_blob_of(f, &len);
      bk_cbf *g = NULL;
      assert_bk_ok(
          bk_test_codec_load(&bk_test_codec_cbf, blob, len, (void **)&g));
      for (uint64_t i = 0; i < 40; i++) {
        bool v;
        assert_bk_ok(bk_cbf_contains(g, &i, 8, &v));
        assert_true(v);
      }
      bk_cbf_info a = cbf_info_of(f), b = cbf_info_of(g);
      assert_int_equal(a.nonzero, b.nonzero);
      assert_int_equal(a.saturated, b.saturated);
      assert_int_equal(a.m_counters, b.m_counters);
      bk_cbf_destroy(g);
      bk_test_codec_hostile(&bk_test_codec_cbf, f,
                            seed + (uint64_t)(l * 4 + w));
      free(blob);
      bk_cbf_destroy(f);
    }
}

/* Crafted blobs no create + operations can produce. */
static void test_deserialize_unreachable(void **state) {
  (void)state;
  const bk_test_codec *c = &bk_test_codec_cbf;
  bk_cbf *f = cbf_make(&(bk_cbf_config){.m_counters = 100, .k = 3});
  size_t len;
  unsigned char *blob = cbf_blob_of(f, &len);
  /* 100 4-bit counters use 400 bits of a 512-bit block: the rest is zero. */
  const size_t payload = 24 + 32;
  bk_test_codec_expect_edit(c, blob, len, payload + 56, 8, 1, BK_ECORRUPT,
                            "a counter past m");
  bk_test_codec_expect_edit(c, blob, len, payload + 48, 8, (uint64_t)1 << 20,
                            BK_ECORRUPT, "counter 100 (past m) set");
  bk_test_codec_expect_edit(c, blob, len, payload + 48, 8, 0xF, BK_OK,
                            "counter 96 (inside m) at 15");
  bk_test_codec_expect_edit(c, blob, len, 24, 8, 129, BK_ECORRUPT,
                            "m beyond the payload");
  bk_test_codec_expect_edit(c, blob, len, 48, 1, 0, BK_ECORRUPT, "k 0");
  bk_test_codec_expect_edit(c, blob, len, 48, 1, 65, BK_ECORRUPT, "k 65");
  bk_test_codec_expect_edit(c, blob, len, 49, 1, 12, BK_ECORRUPT, "width 12");
  bk_test_codec_expect_edit(c, blob, len, 50, 1, 2, BK_ECORRUPT, "layout 2");
  bk_test_codec_expect_edit(c, blob, len, 52, 4, 1, BK_ECORRUPT, "reserved");
  free(blob);
  bk_cbf_destroy(f);
  /* Blocked: m must be whole blocks of 128 counters. */
  f = cbf_make(
      &(bk_cbf_config){.m_counters = 256, .k = 3, .layout = BK_BLOOM_BLOCKED});
  blob = cbf_blob_of(f, &len);
  bk_test_codec_expect_edit(c, blob, len, 24, 8, 200, BK_ECORRUPT,
                            "blocked m 200");
  free(blob);
  bk_cbf_destroy(f);
}

/* Threads adding distinct keys at once lose no increment: afterwards each
 * key removes cleanly and every counter is back at zero. */
typedef struct worker {
  bk_cbf *f;
  uint64_t first, n;
  bool remove;
  bk_test_spin_barrier *go;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  bk_test_spin_wait(w->go);
  for (uint64_t i = w->first; i < w->first + w->n; i++) {
    bk_status s = w->remove ? bk_cbf_remove(w->f, &i, sizeof i)
                            : bk_cbf_add(w->f, &i, sizeof i);
    if (s != BK_OK) return (void *)1;
  }
  return NULL;
}

static void test_concurrent_updates(void **state) {
  (void)state;
  const uint64_t n = BK_TEST_SLOW_BUILD ? 3000 : 30000;
  for (int l = 0; l < 2; l++) {
    /* Dense (4 counters a key) so neighbours share words all the time;
     * 16-bit counters so none saturates. */
    bk_cbf *f = cbf_make(&(bk_cbf_config){
        .m_counters = 8 * n, .k = 4, .counter_bits = 16, .layout = layouts[l]});
    for (int phase = 0; phase < 2; phase++) {
      bk_test_spin_barrier go = {0};
      worker a = {f, 0, n, phase == 1, &go}, b = {f, n, n, phase == 1, &go};
      pthread_t ta, tb;
      assert_int_equal(pthread_create(&ta, NULL, work, &a), 0);
      assert_int_equal(pthread_create(&tb, NULL, work, &b), 0);
      void *ra, *rb;
      pthread_join(ta, &ra);
      pthread_join(tb, &rb);
      assert_null(ra);
      assert_null(rb);
      if (phase == 0) assert_int_equal(cbf_info_of(f).saturated, 0);
    }
    assert_int_equal(cbf_info_of(f).nonzero, 0);
    bk_cbf_destroy(f);
  }
}

/* single_writer: one thread adds and removes other keys without locked
 * instructions while another reads keys added before it started: every
 * read finds them (no torn word ever hides a counter). Under TSan this also
 * checks that the plain path is free of data races. */
typedef struct reader_arg {
  const bk_cbf *f;
  uint64_t n;
  bk_test_spin_barrier *go;
  _Atomic int *stop;
  uint64_t misses, rounds;
} reader_arg;

static void *reader(void *p) {
  reader_arg *r = p;
  bk_test_spin_wait(r->go);
  while (!*r->stop) { /* _Atomic: a sequentially consistent load */
    for (uint64_t i = 0; i < r->n; i++) {
      bool v = false;
      if (bk_cbf_contains(r->f, &i, sizeof i, &v) != BK_OK || !v) r->misses++;
    }
    r->rounds++;
  }
  return NULL;
}

static void test_single_writer_with_readers(void **state) {
  (void)state;
  const uint64_t n = BK_TEST_SLOW_BUILD ? 500 : 5000;
  for (int l = 0; l < 2; l++) {
    bk_cbf *f = cbf_make(&(bk_cbf_config){.m_counters = 16 * n,
                                          .k = 4,
                                          .counter_bits = 4,
                                          .layout = layouts[l],
                                          .single_writer = true});
    for (uint64_t i = 0; i < n; i++) assert_bk_ok(bk_cbf_add(f, &i, sizeof i));
    bk_test_spin_barrier go = {0};
    _Atomic int stop = 0;
    reader_arg r = {f, n, &go, &stop, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
    bk_test_spin_wait(&go);
    for (int round = 0; round < 20; round++) {
      for (uint64_t i = n; i < 3 * n; i++) assert_bk_ok(bk_cbf_add(f, &i, 8));
      for (uint64_t i = n; i < 3 * n; i++)
        assert_bk_ok(bk_cbf_remove(f, &i, 8));
    }
    stop = 1;
    pthread_join(t, NULL);
    assert_int_equal(r.misses, 0);
    assert_true(r.rounds >= 1);
    /* The churn left exactly the first n keys' counts. */
    for (uint64_t i = 0; i < n; i++) assert_bk_ok(bk_cbf_remove(f, &i, 8));
    bk_cbf_info in = cbf_info_of(f);
    assert_int_equal(in.nonzero, in.saturated); /* only stuck ones remain */
    bk_cbf_destroy(f);
  }
  assert_bk_status(bk_cbf_set_single_writer(NULL, true), BK_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_config),
      cmocka_unit_test(test_blocked_sizing_meets_fpp),
      cmocka_unit_test(test_add_remove_count),
      cmocka_unit_test(test_saturation_never_false_negative),
      cmocka_unit_test(test_random_ops_no_false_negative),
      cmocka_unit_test(test_false_positive_rate),
      cmocka_unit_test(test_batches_match_single),
      cmocka_unit_test(test_merge_clear),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_oom),
      cmocka_unit_test(test_serialize_roundtrip_and_hostile),
      cmocka_unit_test(test_deserialize_unreachable),
      cmocka_unit_test(test_concurrent_updates),
      cmocka_unit_test(test_single_writer_with_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
