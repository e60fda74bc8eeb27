/* SPDX-License-Identifier: MIT */
/*
 * bk_cbf's update paths agree with each other: the single-writer path
 * (plain loads and stores, a branch-free saturating update, width 4 with
 * its own constant-width loop), the concurrent compare-and-swap path and
 * the batch pipeline must leave the same counters for the same keys, in
 * both layouts and every counter width, including when a key's positions
 * repeat (a one-block filter) and when counters saturate: a saturated
 * counter never carries into its neighbour and never comes down.
 */
#include <stdio.h>
#include <string.h>

#include "bloomkit/cbf.h"
#include "codecs.h"
#include "testutil.h"

enum { N = 517 };

static const unsigned widths[] = {4, 8, 16, 32};

static bk_cbf *make(unsigned width, int layout, bool sw, uint64_t m) {
  bk_cbf *f = NULL;
  bk_cbf_config c = {.m_counters = m,
                     .k = 7,
                     .counter_bits = width,
                     .layout = (bk_bloom_layout)layout,
                     .single_writer = sw};
  assert_bk_ok(bk_cbf_create(&f, &c));
  return f;
}

/* Keys 0..N-1, each added (i % 3) + 1 times, by single calls (sw or not)
 * or by add_many; then every third key removed once. */
static void fill(bk_cbf *f, const uint64_t *ids, bool batch) {
  const void *keys[N];
  size_t lens[N];
  for (int i = 0; i < N; i++) {
    keys[i] = &ids[i];
    lens[i] = sizeof ids[i];
  }
  for (int r = 0; r < 3; r++) {
    if (batch) {
      /* keys with (i % 3) >= r, in one batch */
      const void *sel[N];
      size_t sl[N], n = 0;
      for (int i = 0; i < N; i++)
        if (i % 3 >= r) {
          sel[n] = keys[i];
          sl[n++] = lens[i];
        }
      assert_bk_ok(bk_cbf_add_many(f, sel, sl, n));
    } else {
      for (int i = 0; i < N; i++)
        if (i % 3 >= r) assert_bk_ok(bk_cbf_add(f, keys[i], lens[i]));
    }
  }
  if (batch) {
    const void *sel[N];
    size_t sl[N], n = 0, removed = 0;
    for (int i = 0; i < N; i += 3) {
      sel[n] = keys[i];
      sl[n++] = lens[i];
    }
    assert_bk_ok(bk_cbf_remove_many(f, sel, sl, n, &removed));
    assert_int_equal(removed, n);
  } else {
    for (int i = 0; i < N; i += 3)
      assert_bk_ok(bk_cbf_remove(f, keys[i], lens[i]));
  }
}

static void test_paths_agree(void **state) {
  (void)state;
  uint64_t ids[N];
  for (int i = 0; i < N; i++) ids[i] = 0x51ED0000u + (uint64_t)i * 104729;
  /* m: roomy (few repeats) and one block of 4-bit counters (repeats and
   * saturation everywhere). */
  const uint64_t ms[] = {20000, 128};
  for (size_t w = 0; w < 4; w++)
    for (int l = 0; l < 2; l++)
      for (size_t mi = 0; mi < 2; mi++) {
        bk_cbf *ref = make(widths[w], l, false, ms[mi]);
        fill(ref, ids, false);
        for (int v = 0; v < 3; v++) {
          /* v 0: single-writer single calls, 1: single-writer batch,
           * 2: concurrent batch */
          bk_cbf *f = make(widths[w], l, v < 2, ms[mi]);
          fill(f, ids, v > 0);
          bk_test_assert_same_state(&bk_test_codec_cbf, ref, f);
          bk_cbf_destroy(f);
        }
        /* No false negative: keys not removed are found, by every
         * lookup path. */
        bool out[N];
        const void *keys[N];
        size_t lens[N];
        for (int i = 0; i < N; i++) {
          keys[i] = &ids[i];
          lens[i] = sizeof ids[i];
        }
        assert_bk_ok(bk_cbf_contains_many(ref, keys, lens, N, out));
        for (int i = 0; i < N; i++) {
          bool one;
          assert_bk_ok(bk_cbf_contains(ref, keys[i], lens[i], &one));
          assert_int_equal(one, out[i]);
          if (i % 3) assert_true(one);
        }
        bk_cbf_destroy(ref);
      }
}

/* A key added past its counters' maximum: its counters sit at the maximum
 * and no other counter moved (no carry into a neighbour), in both write
 * modes; removing it then leaves them saturated, so it stays found. */
static void test_saturation_no_carry(void **state) {
  (void)state;
  for (size_t w = 0; w < 2; w++) /* 4 and 8 bits: reachable maxima */
    for (int l = 0; l < 2; l++)
      for (int sw = 0; sw < 2; sw++) {
        bk_cbf *f = make(widths[w], l, sw, 4096);
        const uint64_t key = 42, max = ((uint64_t)1 << widths[w]) - 1;
        for (uint64_t i = 0; i < max + 5; i++)
          assert_bk_ok(bk_cbf_add(f, &key, sizeof key));
        bk_cbf_info in;
        assert_bk_ok(bk_cbf_info_get(f, &in));
        assert_true(in.nonzero >= 1 && in.nonzero <= 7);
        assert_int_equal(in.saturated, in.nonzero);
        uint32_t c;
        assert_bk_ok(bk_cbf_count(f, &key, sizeof key, &c));
        assert_int_equal(c, max);
        for (uint64_t i = 0; i < max + 5; i++)
          assert_bk_ok(bk_cbf_remove(f, &key, sizeof key));
        assert_bk_ok(bk_cbf_info_get(f, &in));
        assert_int_equal(in.saturated, in.nonzero);
        bool found;
        assert_bk_ok(bk_cbf_contains(f, &key, sizeof key, &found));
        assert_true(found);
        bk_cbf_destroy(f);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths_agree),
      cmocka_unit_test(test_saturation_no_carry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
