/* SPDX-License-Identifier: MIT */
/*
 * bk_counters: widths, get/set and range checks, packing (neighbours never
 * disturbed), the saturation and underflow rules of counters.h for plain and
 * atomic updates, a reference-model run, max/add merges, concurrent atomic
 * updates that must lose nothing at every width, the serialized form (round
 * trip, golden blobs of format version 1, hostile input) and OOM injection.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only xxHash: recompute the XXH3-64 trailer of a tampered blob. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/counters.h"
#include "core/internal.h"
#include "testutil.h"

static const unsigned k_widths[] = {4, 8, 16, 32};
#define N_WIDTHS 4

static uint32_t width_max(unsigned w) {
  return w == 32 ? UINT32_MAX : (uint32_t)((1u << w) - 1);
}

static bk_counters *make(uint64_t n, unsigned width) {
  bk_counters *c = NULL;
  assert_bk_ok(bk_counters_create(&c, n, width, NULL));
  assert_non_null(c);
  return c;
}

static uint32_t get(const bk_counters *c, uint64_t i) {
  uint32_t v = 0xDEADBEEF;
  assert_bk_ok(bk_counters_get(c, i, &v));
  return v;
}

static unsigned char *serialize(const bk_counters *c, size_t *len) {
  return bk_test_serialize(&bk_test_codec_counters, c, len);
}

static bk_status try_load(const unsigned char *buf, size_t len,
                          bk_counters **out) {
  return bk_test_codec_load(&bk_test_codec_counters, buf, len, (void **)out);
}

/* ---- create and accessors ------------------------------------------------ */

static void test_create_widths(void **state) {
  (void)state;
  const unsigned good[] = {0, 4, 8, 16, 32};
  const unsigned want[] = {4, 4, 8, 16, 32};
  for (size_t i = 0; i < 5; i++) {
    bk_counters *c = make(37, good[i]);
    assert_int_equal(bk_counters_width(c), want[i]);
    assert_int_equal(bk_counters_size(c), 37);
    assert_int_equal(bk_counters_max(c), width_max(want[i]));
    assert_true(bk_counters_memory(c) >= (37 * want[i] + 7) / 8);
    for (uint64_t j = 0; j < 37; j++) assert_int_equal(get(c, j), 0);
    bk_counters_destroy(c);
  }
  const unsigned bad[] = {1,  2,  3,  5,  6,  7,   9,         12,
                          15, 24, 31, 33, 64, 128, UINT32_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bk_counters *c = NULL;
    assert_bk_status(bk_counters_create(&c, 10, bad[i], NULL), BK_EINVAL);
  }
}

static void test_create_args(void **state) {
  (void)state;
  bk_counters *c = NULL;
  assert_bk_status(bk_counters_create(NULL, 10, 4, NULL), BK_EINVAL);
  assert_bk_status(bk_counters_create(&c, 0, 4, NULL), BK_EINVAL);
  assert_bk_status(bk_counters_create(&c, BK_COUNTERS_MAX + 1, 4, NULL),
                   BK_EINVAL);
  assert_bk_status(bk_counters_create(&c, UINT64_MAX, 32, NULL), BK_EINVAL);
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  bk_allocator no_alloc = al, no_free = al;
  no_alloc.alloc = NULL;
  no_free.free = NULL;
  assert_bk_status(bk_counters_create(&c, 10, 4, &no_alloc), BK_EINVAL);
  assert_bk_status(bk_counters_create(&c, 10, 4, &no_free), BK_EINVAL);
  assert_int_equal(st.live, 0);
  assert_bk_ok(bk_counters_create(&c, 10, 4, &al));
  assert_true(st.live > 0);
  bk_counters_destroy(c);
  assert_int_equal(st.live, 0);

  bk_counters_destroy(NULL);
  assert_int_equal(bk_counters_size(NULL), 0);
  assert_int_equal(bk_counters_width(NULL), 0);
  assert_int_equal(bk_counters_max(NULL), 0);
}

static void test_null_and_bounds(void **state) {
  (void)state;
  for (int w = 0; w < N_WIDTHS; w++) {
    const uint64_t n = 11;
    bk_counters *c = make(n, k_widths[w]);
    uint32_t v;
    uint64_t bad[] = {n, n + 1, UINT64_MAX};
    for (int b = 0; b < 3; b++) {
      assert_bk_status(bk_counters_get(c, bad[b], &v), BK_EINVAL);
      assert_bk_status(bk_counters_set(c, bad[b], 1), BK_EINVAL);
      assert_bk_status(bk_counters_inc(c, bad[b], &v), BK_EINVAL);
      assert_bk_status(bk_counters_dec(c, bad[b], &v), BK_EINVAL);
      assert_bk_status(bk_counters_atomic_inc(c, bad[b], &v), BK_EINVAL);
      assert_bk_status(bk_counters_atomic_dec(c, bad[b], &v), BK_EINVAL);
    }
    assert_bk_status(bk_counters_get(NULL, 0, &v), BK_EINVAL);
    assert_bk_status(bk_counters_get(c, 0, NULL), BK_EINVAL);
    assert_bk_status(bk_counters_set(NULL, 0, 1), BK_EINVAL);
    assert_bk_status(bk_counters_inc(NULL, 0, &v), BK_EINVAL);
    assert_bk_status(bk_counters_dec(NULL, 0, &v), BK_EINVAL);
    assert_bk_status(bk_counters_atomic_inc(NULL, 0, &v), BK_EINVAL);
    assert_bk_status(bk_counters_atomic_dec(NULL, 0, &v), BK_EINVAL);
    assert_bk_status(bk_counters_max_merge(NULL, c), BK_EINVAL);
    assert_bk_status(bk_counters_max_merge(c, NULL), BK_EINVAL);
    assert_bk_status(bk_counters_add_merge(NULL, c), BK_EINVAL);
    assert_bk_status(bk_counters_add_merge(c, NULL), BK_EINVAL);
    assert_bk_status(bk_counters_clear_all(NULL), BK_EINVAL);
    size_t sz, wr;
    unsigned char buf[256];
    assert_bk_status(bk_counters_serialized_size(NULL, &sz), BK_EINVAL);
    assert_bk_status(bk_counters_serialized_size(c, NULL), BK_EINVAL);
    assert_bk_status(bk_counters_serialize(NULL, buf, sizeof buf, &wr),
                     BK_EINVAL);
    assert_bk_status(bk_counters_serialize(c, NULL, sizeof buf, &wr),
                     BK_EINVAL);
    assert_bk_status(bk_counters_serialize(c, buf, sizeof buf, NULL),
                     BK_EINVAL);
    assert_bk_ok(bk_counters_serialize(c, buf, sizeof buf, &wr));
    bk_counters *out = NULL;
    assert_bk_status(bk_counters_deserialize(NULL, wr, NULL, &out), BK_EINVAL);
    assert_bk_status(bk_counters_deserialize(buf, wr, NULL, NULL), BK_EINVAL);
    bk_allocator no_fns = {NULL, NULL, NULL, NULL};
    assert_bk_status(bk_counters_deserialize(buf, wr, &no_fns, &out),
                     BK_EINVAL);
    /* the last index works; new_value may be NULL */
    assert_bk_ok(bk_counters_set(c, n - 1, 1));
    assert_bk_ok(bk_counters_inc(c, n - 1, NULL));
    assert_bk_ok(bk_counters_atomic_inc(c, n - 1, NULL));
    assert_bk_ok(bk_counters_dec(c, n - 1, NULL));
    assert_bk_ok(bk_counters_atomic_dec(c, n - 1, NULL));
    assert_int_equal(get(c, n - 1), 1);
    /* nothing else moved */
    for (uint64_t i = 0; i + 1 < n; i++) assert_int_equal(get(c, i), 0);
    bk_counters_destroy(c);
  }
}

/* ---- get / set / packing ------------------------------------------------- */

static void test_get_set_and_neighbours(void **state) {
  (void)state;
  for (int w = 0; w < N_WIDTHS; w++) {
    const uint64_t n = 37; /* odd: the last 4-bit counter has no partner */
    bk_counters *c = make(n, k_widths[w]);
    uint32_t max = width_max(k_widths[w]);
    /* one counter at max, neighbours untouched, at every position */
    for (uint64_t i = 0; i < n; i++) {
      assert_bk_ok(bk_counters_set(c, i, max));
      for (uint64_t j = 0; j < n; j++)
        assert_int_equal(get(c, j), j == i ? max : 0);
      assert_bk_ok(bk_counters_set(c, i, 0));
    }
    /* distinct patterns everywhere, then overwrite the odd ones */
    for (uint64_t i = 0; i < n; i++)
      assert_bk_ok(bk_counters_set(c, i, (uint32_t)(i * 2654435761u) & max));
    for (uint64_t i = 0; i < n; i++)
      assert_int_equal(get(c, i), (uint32_t)(i * 2654435761u) & max);
    for (uint64_t i = 1; i < n; i += 2)
      assert_bk_ok(bk_counters_set(c, i, max - (uint32_t)i % 3));
    for (uint64_t i = 0; i < n; i++)
      assert_int_equal(get(c, i), i % 2 ? max - (uint32_t)i % 3
                                        : (uint32_t)(i * 2654435761u) & max);
    bk_counters_destroy(c);
  }
  /* 4-bit nibbles explicitly: even index low nibble, odd index high nibble,
   * writes to one leave the other alone */
  bk_counters *c = make(4, 4);
  assert_bk_ok(bk_counters_set(c, 0, 0xF));
  assert_int_equal(get(c, 1), 0);
  assert_bk_ok(bk_counters_set(c, 1, 0xA));
  assert_int_equal(get(c, 0), 0xF);
  assert_bk_ok(bk_counters_set(c, 0, 0));
  assert_int_equal(get(c, 1), 0xA);
  assert_bk_ok(bk_counters_inc(c, 0, NULL));
  assert_int_equal(get(c, 1), 0xA);
  assert_bk_ok(bk_counters_dec(c, 1, NULL));
  assert_int_equal(get(c, 0), 1);
  assert_int_equal(get(c, 1), 9);
  assert_int_equal(get(c, 2), 0);
  bk_counters_destroy(c);
}

static void test_set_range(void **state) {
  (void)state;
  for (int w = 0; w < 3; w++) { /* 32-bit counters hold every uint32_t */
    bk_counters *c = make(5, k_widths[w]);
    uint32_t max = width_max(k_widths[w]);
    assert_bk_ok(bk_counters_set(c, 2, 3));
    assert_bk_status(bk_counters_set(c, 2, max + 1), BK_ERANGE);
    assert_int_equal(get(c, 2), 3); /* unchanged */
    assert_bk_status(bk_counters_set(c, 2, UINT32_MAX), BK_ERANGE);
    assert_bk_status(bk_counters_set(c, 2, max << 1), BK_ERANGE);
    assert_int_equal(get(c, 2), 3);
    assert_int_equal(get(c, 1), 0); /* neighbours unchanged */
    assert_int_equal(get(c, 3), 0);
    assert_bk_ok(bk_counters_set(c, 2, max));
    assert_int_equal(get(c, 2), max);
    bk_counters_destroy(c);
  }
  bk_counters *c = make(3, 32);
  assert_bk_ok(bk_counters_set(c, 1, UINT32_MAX));
  assert_int_equal(get(c, 1), UINT32_MAX);
  bk_counters_destroy(c);
}

/* ---- saturation and underflow -------------------------------------------- */

typedef bk_status (*step_fn)(bk_counters *, uint64_t, uint32_t *);

static void saturation(step_fn inc, step_fn dec) {
  for (int w = 0; w < N_WIDTHS; w++) {
    unsigned width = k_widths[w];
    uint32_t max = width_max(width);
    bk_counters *c = make(3, width);
    uint32_t v = 0;
    /* climb from 0 (for 32 bits start just below the top) */
    uint32_t start = width == 32 ? max - 1000 : 0;
    if (start) assert_bk_ok(bk_counters_set(c, 1, start));
    for (uint32_t expect = start + 1; expect < max; expect++) {
      v = 0;
      assert_bk_ok(inc(c, 1, &v));
      assert_int_equal(v, expect);
    }
    /* the increment that reaches the maximum reports saturation */
    v = 0;
    assert_bk_status(inc(c, 1, &v), BK_ESATURATED);
    assert_int_equal(v, max);
    /* and it stays there: further increments AND decrements */
    for (int i = 0; i < 3; i++) {
      v = 0;
      assert_bk_status(inc(c, 1, &v), BK_ESATURATED);
      assert_int_equal(v, max);
      v = 0;
      assert_bk_status(dec(c, 1, &v), BK_ESATURATED);
      assert_int_equal(v, max);
    }
    assert_bk_status(dec(c, 1, NULL), BK_ESATURATED);
    assert_int_equal(get(c, 1), max);
    /* neighbours untouched by all of it */
    assert_int_equal(get(c, 0), 0);
    assert_int_equal(get(c, 2), 0);

    /* underflow: zero stays zero */
    v = 123;
    assert_bk_status(dec(c, 0, &v), BK_EUNDERFLOW);
    assert_int_equal(v, 0);
    assert_bk_status(dec(c, 0, NULL), BK_EUNDERFLOW);
    assert_int_equal(get(c, 0), 0);
    assert_int_equal(get(c, 1), max);
    /* ordinary decrement */
    assert_bk_ok(bk_counters_set(c, 2, 5));
    assert_bk_ok(dec(c, 2, &v));
    assert_int_equal(v, 4);
    assert_bk_ok(inc(c, 2, &v));
    assert_int_equal(v, 5);
    /* after clear_all the counter is ordinary again */
    assert_bk_ok(bk_counters_clear_all(c));
    for (uint64_t i = 0; i < 3; i++) assert_int_equal(get(c, i), 0);
    assert_bk_ok(inc(c, 1, &v));
    assert_int_equal(v, 1);
    bk_counters_destroy(c);
  }
}

static void test_saturation_plain(void **state) {
  (void)state;
  saturation(bk_counters_inc, bk_counters_dec);
}

static void test_saturation_atomic(void **state) {
  (void)state;
  saturation(bk_counters_atomic_inc, bk_counters_atomic_dec);
}

/* Random operations against a model with the documented rules. Values are
 * only ever set below the maximum, so a counter at the maximum is always
 * one that got there by an increment (i.e. saturated). */
static void test_random_ops_vs_model(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0xC0C0);
  enum { N = 101, OPS = 100000 };
  for (int w = 0; w < N_WIDTHS; w++) {
    unsigned width = k_widths[w];
    uint32_t max = width_max(width);
    bk_counters *c = make(N, width);
    uint32_t model[N];
    memset(model, 0, sizeof model);
    for (int op = 0; op < OPS; op++) {
      uint64_t r = bk_test_next(&rng);
      uint64_t i = (r >> 8) % N;
      uint32_t v = 0xFFFFFFFF, m = model[i];
      bk_status want;
      switch (r % 6) {
        case 0: { /* set, sometimes near the top so saturation happens */
          uint32_t val = (r >> 40) % 2 ? max - 1 - (uint32_t)((r >> 16) % 3)
                                       : (uint32_t)(r >> 16) % max;
          assert_bk_ok(bk_counters_set(c, i, val));
          model[i] = val;
          continue;
        }
        case 1: /* set out of range */
          if (width == 32) continue;
          assert_bk_status(bk_counters_set(c, i, max + 1 + (uint32_t)(r >> 48)),
                           BK_ERANGE);
          continue;
        case 2:
        case 3: {
          bool atomic = r % 6 == 3;
          bk_status s = atomic ? bk_counters_atomic_inc(c, i, &v)
                               : bk_counters_inc(c, i, &v);
          if (m == max)
            want = BK_ESATURATED;
          else {
            model[i] = m + 1;
            want = model[i] == max ? BK_ESATURATED : BK_OK;
          }
          assert_int_equal(s, want);
          assert_int_equal(v, model[i]);
          break;
        }
        default: {
          bool atomic = r % 6 == 5;
          bk_status s = atomic ? bk_counters_atomic_dec(c, i, &v)
                               : bk_counters_dec(c, i, &v);
          if (m == max)
            want = BK_ESATURATED;
          else if (m == 0)
            want = BK_EUNDERFLOW;
          else {
            model[i] = m - 1;
            want = BK_OK;
          }
          assert_int_equal(s, want);
          assert_int_equal(v, model[i]);
          break;
        }
      }
      assert_int_equal(get(c, i), model[i]);
    }
    for (uint64_t i = 0; i < N; i++) assert_int_equal(get(c, i), model[i]);
    bk_counters_destroy(c);
  }
}

/* ---- merges -------------------------------------------------------------- */

static void fill(bk_counters *c, uint32_t *model, uint64_t n, uint64_t *rng,
                 uint32_t limit) {
  for (uint64_t i = 0; i < n; i++) {
    model[i] = (uint32_t)(bk_test_next(rng) % ((uint64_t)limit + 1));
    assert_bk_ok(bk_counters_set(c, i, model[i]));
  }
}

static void test_max_merge(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x3A3A);
  enum { N = 77 };
  for (int w = 0; w < N_WIDTHS; w++) {
    uint32_t max = width_max(k_widths[w]);
    bk_counters *a = make(N, k_widths[w]), *b = make(N, k_widths[w]);
    uint32_t ma[N], mb[N];
    fill(a, ma, N, &rng, max);
    fill(b, mb, N, &rng, max);
    assert_bk_ok(bk_counters_max_merge(a, b));
    for (uint64_t i = 0; i < N; i++) {
      assert_int_equal(get(a, i), ma[i] > mb[i] ? ma[i] : mb[i]);
      assert_int_equal(get(b, i), mb[i]); /* src unchanged */
    }
    bk_counters_destroy(a);
    bk_counters_destroy(b);
  }
}

static void test_add_merge(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0xADD);
  enum { N = 77 };
  for (int w = 0; w < N_WIDTHS; w++) {
    unsigned width = k_widths[w];
    uint32_t max = width_max(width);
    bk_counters *a = make(N, width), *b = make(N, width);
    uint32_t ma[N], mb[N];

    /* no sums reach the maximum: plain addition, BK_OK */
    fill(a, ma, N, &rng, (max - 1) / 2);
    fill(b, mb, N, &rng, (max - 1) / 2);
    assert_bk_ok(bk_counters_add_merge(a, b));
    for (uint64_t i = 0; i < N; i++) {
      assert_int_equal(get(a, i), ma[i] + mb[i]);
      assert_int_equal(get(b, i), mb[i]);
    }

    /* one sum overflows: it saturates at max, the rest is still merged */
    fill(a, ma, N, &rng, (max - 1) / 2);
    fill(b, mb, N, &rng, (max - 1) / 2);
    assert_bk_ok(bk_counters_set(a, 40, max - 1));
    assert_bk_ok(bk_counters_set(b, 40, 2));
    assert_bk_status(bk_counters_add_merge(a, b), BK_ESATURATED);
    for (uint64_t i = 0; i < N; i++)
      assert_int_equal(get(a, i), i == 40 ? max : ma[i] + mb[i]);
    /* the saturated counter behaves as saturated */
    assert_bk_status(bk_counters_dec(a, 40, NULL), BK_ESATURATED);
    assert_int_equal(get(a, 40), max);

    /* a sum of exactly max reaches the maximum: saturated too */
    assert_bk_ok(bk_counters_clear_all(a));
    assert_bk_ok(bk_counters_clear_all(b));
    assert_bk_ok(bk_counters_set(a, 0, max - 3));
    assert_bk_ok(bk_counters_set(b, 0, 3));
    assert_bk_status(bk_counters_add_merge(a, b), BK_ESATURATED);
    assert_int_equal(get(a, 0), max);

    /* random, with many overflows, against the model */
    fill(a, ma, N, &rng, max - 1);
    fill(b, mb, N, &rng, max - 1);
    bool any = false;
    for (uint64_t i = 0; i < N; i++) any |= (uint64_t)ma[i] + mb[i] >= max;
    assert_int_equal(bk_counters_add_merge(a, b), any ? BK_ESATURATED : BK_OK);
    for (uint64_t i = 0; i < N; i++) {
      uint64_t sum = (uint64_t)ma[i] + mb[i];
      assert_int_equal(get(a, i), sum > max ? max : sum);
    }
    bk_counters_destroy(a);
    bk_counters_destroy(b);
  }
}

static void test_merge_mismatch(void **state) {
  (void)state;
  bk_counters *a = make(10, 4), *n11 = make(11, 4), *w8 = make(10, 8),
              *w16 = make(10, 16);
  assert_bk_ok(bk_counters_set(a, 3, 2));
  assert_bk_ok(bk_counters_set(n11, 3, 9));
  assert_bk_ok(bk_counters_set(w8, 3, 9));
  bk_counters *others[] = {n11, w8, w16};
  for (int i = 0; i < 3; i++) {
    assert_bk_status(bk_counters_max_merge(a, others[i]), BK_EMISMATCH);
    assert_bk_status(bk_counters_add_merge(a, others[i]), BK_EMISMATCH);
    assert_bk_status(bk_counters_max_merge(others[i], a), BK_EMISMATCH);
    assert_bk_status(bk_counters_add_merge(others[i], a), BK_EMISMATCH);
  }
  assert_int_equal(get(a, 3), 2);
  assert_int_equal(get(n11, 3), 9);
  assert_int_equal(get(w8, 3), 9);
  bk_counters_destroy(a);
  bk_counters_destroy(n11);
  bk_counters_destroy(w8);
  bk_counters_destroy(w16);
}

static void test_clear_all(void **state) {
  (void)state;
  for (int w = 0; w < N_WIDTHS; w++) {
    bk_counters *c = make(1001, k_widths[w]);
    for (uint64_t i = 0; i < 1001; i++)
      assert_bk_ok(bk_counters_set(c, i, width_max(k_widths[w])));
    assert_bk_ok(bk_counters_clear_all(c));
    for (uint64_t i = 0; i < 1001; i++) assert_int_equal(get(c, i), 0);
    assert_int_equal(bk_counters_size(c), 1001);
    bk_counters_destroy(c);
  }
}

/* ---- concurrent atomic updates ------------------------------------------- */

enum { ATOMIC_N = 64 };

/* The shared two-thread spinning barrier (testutil.h). */
typedef bk_test_spin_barrier spin_barrier;
#define spin_wait bk_test_spin_wait

typedef struct atomic_ctx {
  bk_counters *c;
  spin_barrier *barrier;
  int id;
  uint32_t per_thread; /* increments of each counter per repetition */
  int reps;
  uint32_t start; /* mixed test: every counter's resting value */
  /* results (cmocka is not thread-safe: workers only record) */
  long bad_status;
  long bad_value;
  long lost; /* counters off after a repetition (checked by thread 0) */
} atomic_ctx;

/* Both threads increment every counter `per_thread` times, so they collide
 * on the same counters and, at 4 bits, on the same bytes. 2 * per_thread <
 * max, so no increment may report anything but BK_OK and every counter must
 * end at 2 * per_thread. */
static void *inc_worker(void *arg) {
  atomic_ctx *x = arg;
  for (int rep = 0; rep < x->reps; rep++) {
    spin_wait(x->barrier);
    /* even repetitions sweep all counters per round, the two threads in
     * opposite directions so they cross; odd ones hammer one counter
     * per_thread times before moving on, both in the same order, so the
     * threads overlap on the same counter for long stretches */
    for (uint64_t step = 0; step < (uint64_t)x->per_thread * ATOMIC_N; step++) {
      uint64_t i = step % ATOMIC_N;
      if (rep % 2)
        i = step / x->per_thread;
      else if (x->id == 1)
        i = ATOMIC_N - 1 - i;
      uint32_t v = 0;
      if (bk_counters_atomic_inc(x->c, i, &v) != BK_OK) x->bad_status++;
      if (v == 0 || v > 2 * x->per_thread) x->bad_value++;
    }
    spin_wait(x->barrier);
    if (x->id == 0) {
      for (uint64_t i = 0; i < ATOMIC_N; i++) {
        uint32_t v = 0;
        bk_counters_get(x->c, i, &v);
        if (v != 2 * x->per_thread) x->lost++;
      }
      bk_counters_clear_all(x->c);
    }
  }
  return NULL;
}

/* Each thread repeatedly increments then decrements every counter, so each
 * thread holds at most one outstanding increment per counter: a counter
 * reads start, start + 1 or start + 2, never anything else (also through
 * bk_counters_get), every call is BK_OK, and each ends at `start`. A lost
 * update drifts the value. */
static void *mixed_worker(void *arg) {
  atomic_ctx *x = arg;
  spin_wait(x->barrier);
  for (int rep = 0; rep < x->reps; rep++) {
    /* thread 1 walks backwards, so the two sweeps cross every round */
    for (uint64_t j = 0; j < ATOMIC_N; j++) {
      uint64_t i = x->id ? ATOMIC_N - 1 - j : j;
      uint32_t v = 0;
      if (bk_counters_atomic_inc(x->c, i, &v) != BK_OK) x->bad_status++;
      if (v < x->start + 1 || v > x->start + 2) x->bad_value++;
      /* bk_counters_get may run beside atomic updates: read the neighbour,
       * which the other thread may be updating right now */
      uint32_t seen = 0;
      if (bk_counters_get(x->c, i ^ 1, &seen) != BK_OK) x->bad_status++;
      if (seen < x->start || seen > x->start + 2) x->bad_value++;
    }
    for (uint64_t j = 0; j < ATOMIC_N; j++) {
      uint64_t i = x->id ? ATOMIC_N - 1 - j : j;
      uint32_t v = 0;
      if (bk_counters_atomic_dec(x->c, i, &v) != BK_OK) x->bad_status++;
      if (v < x->start || v > x->start + 1) x->bad_value++;
    }
  }
  return NULL;
}

static void run_two(void *(*fn)(void *), atomic_ctx ctx[2]) {
  pthread_t th[2];
  for (int t = 0; t < 2; t++)
    assert_int_equal(pthread_create(&th[t], NULL, fn, &ctx[t]), 0);
  for (int t = 0; t < 2; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
}

static void test_atomic_concurrent(void **state) {
  (void)state;
  for (int w = 0; w < N_WIDTHS; w++) {
    unsigned width = k_widths[w];
    uint32_t max = width_max(width);
    bk_counters *c = make(ATOMIC_N, width);
    spin_barrier barrier;

    /* increments only */
    uint32_t per = (max - 1) / 2;
    if (per > 2000) per = 2000;
    int reps = (int)(20000 / per);
    if (reps < 4) reps = 4;
    atomic_init(&barrier.arrived, 0);
    atomic_init(&barrier.generation, 0);
    atomic_ctx ctx[2];
    for (int t = 0; t < 2; t++)
      ctx[t] = (atomic_ctx){c, &barrier, t, per, reps, 0, 0, 0, 0};
    run_two(inc_worker, ctx);
    if (ctx[0].bad_status + ctx[1].bad_status + ctx[0].bad_value +
            ctx[1].bad_value + ctx[0].lost !=
        0)
      fail_msg(
          "width %u increments: %ld bad statuses, %ld bad values, %ld "
          "counters lost updates",
          width, ctx[0].bad_status + ctx[1].bad_status,
          ctx[0].bad_value + ctx[1].bad_value, ctx[0].lost);

    /* increments and decrements */
    const uint32_t start = 7;
    for (uint64_t i = 0; i < ATOMIC_N; i++)
      assert_bk_ok(bk_counters_set(c, i, start));
    atomic_init(&barrier.arrived, 0);
    atomic_init(&barrier.generation, 0);
    for (int t = 0; t < 2; t++)
      ctx[t] = (atomic_ctx){c, &barrier, t, 0, 20000, start, 0, 0, 0};
    run_two(mixed_worker, ctx);
    if (ctx[0].bad_status + ctx[1].bad_status + ctx[0].bad_value +
            ctx[1].bad_value !=
        0)
      fail_msg("width %u inc/dec: %ld bad statuses, %ld out-of-range values",
               width, ctx[0].bad_status + ctx[1].bad_status,
               ctx[0].bad_value + ctx[1].bad_value);
    for (uint64_t i = 0; i < ATOMIC_N; i++) assert_int_equal(get(c, i), start);
    bk_counters_destroy(c);
  }
}

/* ---- serialization ------------------------------------------------------- */

static void test_serialize_round_trip(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x5E72);
  const uint64_t sizes[] = {1, 2, 15, 16, 17, 63, 64, 65, 1000, 4097};
  for (int w = 0; w < N_WIDTHS; w++) {
    unsigned width = k_widths[w];
    uint32_t max = width_max(width);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      uint64_t n = sizes[s];
      bk_counters *c = make(n, width);
      uint32_t *model = malloc(n * sizeof *model);
      assert_non_null(model);
      fill(c, model, n, &rng, max);
      assert_bk_ok(bk_counters_set(c, n - 1, max));
      model[n - 1] = max;
      size_t len;
      unsigned char *buf = serialize(c, &len);
      assert_memory_equal(buf, "BKIT", 4);
      assert_int_equal(bk__load_le16(buf + 4), 1);
      assert_int_equal(bk__load_le16(buf + 6), BK__TYPE_COUNTERS);
      uint32_t hlen = bk__load_le32(buf + 8);
      assert_int_equal(bk__load_le32(buf + 12), 0);
      uint64_t plen = bk__load_le64(buf + 16);
      assert_int_equal((uint64_t)hlen + plen + 8, len);
      assert_true(plen * 8 >= n * width);
      assert_int_equal(bk__load_le64(buf + len - 8),
                       (uint64_t)XXH3_64bits(buf, len - 8));
      /* payload: counter i at bits [i*w, (i+1)*w) of the little-endian
       * stream (4-bit: even index in the low nibble) */
      for (uint64_t i = 0; i < n; i++) {
        uint64_t bit = i * width, v = 0;
        for (unsigned b = 0; b < width; b++)
          v |= (uint64_t)((buf[hlen + (bit + b) / 8] >> ((bit + b) % 8)) & 1)
               << b;
        assert_int_equal(v, model[i]);
      }
      bk_counters *back = NULL;
      assert_bk_ok(bk_counters_deserialize(buf, len, NULL, &back));
      assert_int_equal(bk_counters_size(back), n);
      assert_int_equal(bk_counters_width(back), width);
      for (uint64_t i = 0; i < n; i++) assert_int_equal(get(back, i), model[i]);
      bk_test_assert_serializes_to(&bk_test_codec_counters, back, buf, len);
      bk_counters_destroy(back);
      free(buf);
      free(model);
      bk_counters_destroy(c);
    }
  }
}

static void test_serialize_cap(void **state) {
  (void)state;
  for (int w = 0; w < N_WIDTHS; w++) {
    bk_counters *c = make(100, k_widths[w]);
    assert_bk_ok(bk_counters_set(c, 5, 3));
    bk_test_codec_arguments(&bk_test_codec_counters, c);
    bk_counters_destroy(c);
  }
}

/* Format version 1, written out by hand from the layout in internal.h and
 * counters.c; only the XXH3-64 trailer is computed.
 * (a) five 4-bit counters {1, 15, 0, 7, 3}: byte j holds counter 2j in its
 *     low nibble and 2j + 1 in its high nibble.
 * (b) three 16-bit counters {0x1234, 0xFFFF, 1}, little-endian. */
static const unsigned char k_golden4[48] = {
    'B',  'K',  'I',  'T', 0x01, 0x00, 0x02, 0x00, /* magic, v1, counters */
    0x28, 0,    0,    0,   0,    0,    0,    0,    /* header 40, reserved */
    0x08, 0,    0,    0,   0,    0,    0,    0,    /* payload 8 */
    0x05, 0,    0,    0,   0,    0,    0,    0,    /* n = 5 */
    0x04, 0,    0,    0,   0,    0,    0,    0,    /* width 4, reserved */
    0xF1, 0x70, 0x03, 0,   0,    0,    0,    0,    /* payload */
};
static const unsigned char k_golden16[48] = {
    'B',  'K',  'I',  'T',  0x01, 0x00, 0x02, 0x00, 0x28, 0, 0,
    0,    0,    0,    0,    0,    0x08, 0,    0,    0,    0, 0,
    0,    0,    0x03, 0,    0,    0,    0,    0,    0,    0, /* n = 3 */
    0x10, 0,    0,    0,    0,    0,    0,    0,             /* width 16 */
    0x34, 0x12, 0xFF, 0xFF, 0x01, 0x00, 0,    0,
};

static unsigned char *golden(const unsigned char body[48], size_t *len) {
  unsigned char *buf = malloc(56);
  assert_non_null(buf);
  memcpy(buf, body, 48);
  bk_test_reseal(buf, 56);
  *len = 56;
  return buf;
}

static void check_golden(const unsigned char body[48], unsigned width,
                         const uint32_t *values, uint64_t n) {
  size_t len;
  unsigned char *g = golden(body, &len);
  bk_counters *c = NULL;
  assert_bk_ok(bk_counters_deserialize(g, len, NULL, &c));
  assert_int_equal(bk_counters_size(c), n);
  assert_int_equal(bk_counters_width(c), width);
  for (uint64_t i = 0; i < n; i++) assert_int_equal(get(c, i), values[i]);
  bk_counters_destroy(c);
  c = make(n, width);
  for (uint64_t i = 0; i < n; i++)
    assert_bk_ok(bk_counters_set(c, i, values[i]));
  bk_test_assert_serializes_to(&bk_test_codec_counters, c, g, len);
  bk_counters_destroy(c);
  free(g);
}

static void test_golden_v1(void **state) {
  (void)state;
  const uint32_t v4[] = {1, 15, 0, 7, 3};
  const uint32_t v16[] = {0x1234, 0xFFFF, 1};
  check_golden(k_golden4, 4, v4, 5);
  check_golden(k_golden16, 16, v16, 3);
}

/* Every generic hostile-input case (tests/codec_harness.c) on both golden
 * blobs and on a filled array of each width. */
static void test_deserialize_hostile(void **state) {
  (void)state;
  uint64_t seed = bk_test_seed(0xF023);
  const unsigned char *bodies[] = {k_golden4, k_golden16};
  for (int g = 0; g < 2; g++) {
    size_t len;
    unsigned char *blob = golden(bodies[g], &len);
    bk_counters *c = NULL;
    assert_bk_ok(try_load(blob, len, &c));
    bk_test_codec_hostile(&bk_test_codec_counters, c, seed + g);
    bk_counters_destroy(c);
    free(blob);
  }
  for (int w = 0; w < N_WIDTHS; w++) {
    bk_counters *c = make(37, k_widths[w]);
    const uint64_t max = width_max(k_widths[w]);
    for (uint64_t i = 0; i < 37; i += 5)
      assert_bk_ok(bk_counters_set(c, i, (uint32_t)(max - i % (max + 1))));
    bk_test_codec_hostile(&bk_test_codec_counters, c, seed + 2 + w);
    bk_counters_destroy(c);
  }
}

/* The parameter rules of counters, field by field (resealed). */
static void test_deserialize_fields(void **state) {
  (void)state;
  size_t len;
  unsigned char *g = golden(k_golden4, &len);
  const bk_test_codec *c = &bk_test_codec_counters;
#define EDIT(off, width, value, want) \
  bk_test_codec_expect_edit(c, g, len, off, width, value, want, #off " " #value)
  EDIT(24, 8, 0, BK_ECORRUPT);  /* n = 0 */
  EDIT(24, 8, 17, BK_ECORRUPT); /* needs 2 words */
  EDIT(24, 8, BK_COUNTERS_MAX + 1, BK_ECORRUPT);
  EDIT(24, 8, UINT64_MAX, BK_ECORRUPT); /* n*w overflow */
  EDIT(24, 8, ((uint64_t)1 << 62) + 5, BK_ECORRUPT);
  EDIT(32, 1, 0, BK_ECORRUPT); /* width 0 */
  EDIT(32, 1, 5, BK_ECORRUPT);
  EDIT(32, 1, 64, BK_ECORRUPT);
  EDIT(32, 1, 8, BK_OK);       /* 5 counters of 8 bits still fit one word */
  EDIT(33, 1, 1, BK_ECORRUPT); /* reserved */
  EDIT(39, 1, 0x80, BK_ECORRUPT);
  EDIT(42, 1, g[42] | 0x10, BK_ECORRUPT); /* a 6th counter past n = 5 */
  EDIT(47, 1, 0x80, BK_ECORRUPT);
  EDIT(42, 1, g[42] | 0x08, BK_OK); /* counter 4 becomes 11: just data */
#undef EDIT
  free(g);
}

/* Envelopes with an empty payload (len 48): n = 0 must be rejected as
 * corrupt before anything indexes the (absent) last word. */
static void test_deserialize_empty_payload(void **state) {
  (void)state;
  const uint64_t claims[] = {0, 1, 16, BK_COUNTERS_MAX};
  const unsigned widths[] = {0, 4, 8, 32};
  for (size_t i = 0; i < 4; i++)
    for (size_t w = 0; w < 4; w++) {
      unsigned char m[48];
      memcpy(m, k_golden4, 40);
      bk__store_le64(m + 16, 0);
      bk__store_le64(m + 24, claims[i]);
      m[32] = (unsigned char)widths[w];
      bk_test_reseal(m, sizeof m);
      bk_status s = try_load(m, sizeof m, NULL);
      if (s != BK_ECORRUPT)
        fail_msg("empty payload, n %llu width %u: got %s, want BK_ECORRUPT",
                 (unsigned long long)claims[i], widths[w], bk_status_name(s));
    }
}

/* ---- OOM injection ------------------------------------------------------- */

static void test_oom(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 1000, (uint64_t)1 << 23};
  for (int w = 0; w < N_WIDTHS; w++) {
    for (size_t s = 0; s < 3; s++) {
      bk_test_alloc st;
      size_t fail_at;
      bk_counters *c = NULL;
      for (fail_at = 1; fail_at < 100; fail_at++) {
        bk_allocator al = bk_test_allocator(&st, fail_at);
        bk_status r = bk_counters_create(&c, sizes[s], k_widths[w], &al);
        if (r == BK_OK) break;
        if (r != BK_ENOMEM)
          fail_msg("width %u fail_at %zu: %s", k_widths[w], fail_at,
                   bk_status_name(r));
        assert_int_equal(st.live, 0);
      }
      assert_true(fail_at > 1 && fail_at < 100);
      assert_bk_ok(bk_counters_set(c, sizes[s] - 1, 3));
      size_t len;
      unsigned char *blob = serialize(c, &len);
      bk_counters_destroy(c);
      assert_int_equal(st.live, 0);

      bk_counters *d = NULL;
      for (fail_at = 1; fail_at < 100; fail_at++) {
        bk_allocator al = bk_test_allocator(&st, fail_at);
        bk_status r = bk_counters_deserialize(blob, len, &al, &d);
        if (r == BK_OK) break;
        assert_int_equal(r, BK_ENOMEM);
        assert_int_equal(st.live, 0);
      }
      assert_true(fail_at > 1 && fail_at < 100);
      assert_int_equal(get(d, sizes[s] - 1), 3);
      bk_counters_destroy(d);
      assert_int_equal(st.live, 0);
      free(blob);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_widths),
      cmocka_unit_test(test_create_args),
      cmocka_unit_test(test_null_and_bounds),
      cmocka_unit_test(test_get_set_and_neighbours),
      cmocka_unit_test(test_set_range),
      cmocka_unit_test(test_saturation_plain),
      cmocka_unit_test(test_saturation_atomic),
      cmocka_unit_test(test_random_ops_vs_model),
      cmocka_unit_test(test_max_merge),
      cmocka_unit_test(test_add_merge),
      cmocka_unit_test(test_merge_mismatch),
      cmocka_unit_test(test_clear_all),
      cmocka_unit_test(test_atomic_concurrent),
      cmocka_unit_test(test_serialize_round_trip),
      cmocka_unit_test(test_serialize_cap),
      cmocka_unit_test(test_golden_v1),
      cmocka_unit_test(test_deserialize_hostile),
      cmocka_unit_test(test_deserialize_fields),
      cmocka_unit_test(test_deserialize_empty_payload),
      cmocka_unit_test(test_oom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
