/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_apbf's serialized form (src/fbf/apbf_io.c): round trips that
 * continue identically (count- and time-based, after shifts), the codec
 * harness's hostile input, crafted blobs field by field (only reachable
 * states load), the golden blob tests/data/apbf_v1.bin, and allocation
 * failures while loading.
 *
 * Run a subset with BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the
 * seed (printed at start).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/apbf.h"
#include "bloomkit/hash.h"
#include "core/internal.h"

#define SEED_FALLBACK 0xA9BF10ull
static uint64_t test_seed(uint64_t salt) {
  return bk_test_seed(SEED_FALLBACK) ^ salt;
}

BK_TEST_DEFINE_MAKE(apbf, static)
BK_TEST_DEFINE_INFO_OF(apbf, static)
BK_TEST_DEFINE_BLOB_OF(apbf, static)
BK_TEST_DEFINE_HASH_SET(apbf, static)

/* ---- the serialized form ---------------------------------------------------
 * APBF (type 13, version 1), from src/fbf/apbf_io.c:
 *   0 24 common prefix (header length 96)
 *  24 u8 k   25 u8 l   26 u8 time-based   27 u8 hash   28 u32 reserved
 *  32 seed   40 m   48 g   56 period   64 start   72 now   80 shifts
 *  88 reserved
 *  96 n u64 generation counts, youngest first; then n slices of
 *     ceil(m / 64) words, youngest first
 */
enum {
  OFF_K = 24,
  OFF_L = 25,
  OFF_TIMED = 26,
  OFF_HASH = 27,
  OFF_RES32 = 28,
  OFF_SEED = 32,
  OFF_M = 40,
  OFF_G = 48,
  OFF_PERIOD = 56,
  OFF_START = 64,
  OFF_NOW = 72,
  OFF_SHIFTS = 80,
  OFF_RES64 = 88,
  HLEN = 96,
};

static bk_apbf *restore(const unsigned char *buf, size_t len) {
  return bk_test_restore(&bk_test_codec_apbf, buf, len, NULL);
}

/* Drive a and b with the same inserts and clock: same bytes throughout. */
static void drive_same(bk_apbf *a, bk_apbf *b, uint64_t from, uint64_t n,
                       uint64_t t0, uint64_t step) {
  for (uint64_t i = from; i < from + n; i++) {
    if (step) {
      assert_bk_ok(bk_apbf_advance(a, t0 + i * step));
      assert_bk_ok(bk_apbf_advance(b, t0 + i * step));
    }
    bool x = apbf_add_new(a, apbf_hash_id(a, i % 700));
    bool y = apbf_add_new(b, apbf_hash_id(b, i % 700));
    assert_int_equal(x, y);
  }
  bk_test_assert_same_state(&bk_test_codec_apbf, a, b);
}

static void test_round_trip(void **state) {
  (void)state;
  const bk_apbf_config cfgs[] = {
      {.k = 5, .l = 4, .generation = 100, .seed = test_seed(1)},
      {.k = 3,
       .l = 6,
       .capacity = 500,
       .window = 900,
       .start_time = 77,
       .hash_alg = BK_HASH_MURMUR3,
       .seed = 12345},
      {.capacity = 3000, .fpp = 0.001, .m_bits = 999},
  };
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    bk_apbf *a = apbf_make(&cfgs[c]);
    uint64_t step = cfgs[c].window ? 3 : 0;
    for (uint64_t i = 0; i < 1234; i++) {
      if (step) assert_bk_ok(bk_apbf_advance(a, 77 + i * step));
      (void)apbf_add_new(a, apbf_hash_id(a, i % 700));
    }
    size_t len;
    unsigned char *blob = apbf_blob_of(a, &len);
    bk_apbf *b = restore(blob, len);
    bk_test_assert_serializes_to(&bk_test_codec_apbf, b, blob, len);
    bk_apbf_info x = apbf_info_of(a), y = apbf_info_of(b);
    assert_int_equal(x.shifts, y.shifts);
    assert_int_equal(x.in_generation, y.in_generation);
    assert_int_equal(x.inserted, y.inserted);
    assert_int_equal(x.m_bits, y.m_bits);
    for (uint64_t i = 0; i < 1000; i++)
      assert_int_equal(apbf_has(a, apbf_hash_id(a, i)),
                       apbf_has(b, apbf_hash_id(b, i)));
    drive_same(a, b, 1234, 2000, 77, step);
    bk_test_codec_hostile(&bk_test_codec_apbf, a, test_seed(20 + c));
    bk_test_codec_arguments(&bk_test_codec_apbf, a);
    free(blob);
    bk_apbf_destroy(a);
    bk_apbf_destroy(b);
  }
}

static void expect_edit(const unsigned char *blob, size_t len, size_t off,
                        unsigned width, uint64_t value, bk_status want,
                        const char *what) {
  bk_test_codec_expect_edit(&bk_test_codec_apbf, blob, len, off, width, value,
                            want, what);
}

/* Crafted blobs: every field outside what create, inserts and shifts reach
 * is refused. */
static void test_crafted(void **state) {
  (void)state;
  bk_apbf_config cfg = {.k = 3, .l = 2, .generation = 50, .m_bits = 200};
  bk_apbf *f = apbf_make(&cfg);
  for (uint64_t i = 0; i < 120; i++)
    assert_bk_ok(bk_apbf_add_hash(f, apbf_hash_id(f, i)));
  size_t len;
  unsigned char *blob = apbf_blob_of(f, &len);
  const size_t counts = HLEN, slices = HLEN + 8 * 5;
  expect_edit(blob, len, OFF_K, 1, 0, BK_ECORRUPT, "k 0");
  expect_edit(blob, len, OFF_K, 1, 33, BK_ECORRUPT, "k 33");
  expect_edit(blob, len, OFF_L, 1, 0, BK_ECORRUPT, "l 0");
  expect_edit(blob, len, OFF_TIMED, 1, 2, BK_ECORRUPT, "mode 2");
  expect_edit(blob, len, OFF_TIMED, 1, 1, BK_ECORRUPT, "timed, period 0");
  expect_edit(blob, len, OFF_HASH, 1, 3, BK_ECORRUPT, "xxh64");
  expect_edit(blob, len, OFF_HASH, 1, 0, BK_ECORRUPT, "hash default");
  expect_edit(blob, len, OFF_RES32, 4, 1, BK_ECORRUPT, "reserved");
  expect_edit(blob, len, OFF_RES64, 8, 1, BK_ECORRUPT, "reserved 2");
  expect_edit(blob, len, OFF_M, 8, 0, BK_ECORRUPT, "m 0");
  expect_edit(blob, len, OFF_M, 8, 300, BK_ECORRUPT, "m, payload mismatch");
  expect_edit(blob, len, OFF_M, 8, 256, BK_OK, "m 256 (same words)");
  expect_edit(blob, len, OFF_M, 8, (uint64_t)1 << 50, BK_ECORRUPT, "m huge");
  expect_edit(blob, len, OFF_G, 8, 0, BK_ECORRUPT, "g 0");
  expect_edit(blob, len, OFF_G, 8, (uint64_t)1 << 31, BK_ECORRUPT, "g big");
  expect_edit(blob, len, OFF_G, 8, 51, BK_ECORRUPT, "g, counts not g");
  expect_edit(blob, len, OFF_PERIOD, 8, 10, BK_ECORRUPT, "count, period");
  expect_edit(blob, len, OFF_START, 8, 10, BK_ECORRUPT, "count, start");
  expect_edit(blob, len, OFF_SHIFTS, 8, (uint64_t)1 << 63, BK_ECORRUPT,
              "shifts huge");
  expect_edit(blob, len, OFF_SHIFTS, 8, 1, BK_ECORRUPT,
              "shifts 1, two full counts");
  expect_edit(blob, len, OFF_SHIFTS, 8, 5, BK_ECORRUPT, "shifts 5, empty past");
  expect_edit(blob, len, counts, 8, 51, BK_ECORRUPT, "current over g");
  expect_edit(blob, len, counts, 8, 50, BK_OK, "current full");
  expect_edit(blob, len, counts + 8, 8, 49, BK_ECORRUPT, "past not full");
  expect_edit(blob, len, counts + 16, 8, 0, BK_ECORRUPT, "past empty");
  /* bits: one past m in the last word; a slice with more bits than the
   * inserts it received */
  expect_edit(blob, len, slices + 8 * 3, 8, (uint64_t)1 << 63, BK_ECORRUPT,
              "bit past m");
  expect_edit(blob, len, slices, 8, UINT64_MAX, BK_ECORRUPT,
              "slice over its count");
  free(blob);
  bk_apbf_destroy(f);

  /* time-based: the shift count follows the clock */
  bk_apbf_config tc = {
      .k = 2, .l = 3, .generation = 20, .window = 30, .start_time = 5};
  f = apbf_make(&tc);
  for (uint64_t i = 0; i < 40; i++) {
    assert_bk_ok(bk_apbf_advance(f, 5 + i));
    assert_bk_ok(bk_apbf_add_hash(f, apbf_hash_id(f, i)));
  }
  blob = apbf_blob_of(f, &len);
  assert_int_equal(apbf_info_of(f).shifts, 3);
  expect_edit(blob, len, OFF_SHIFTS, 8, 4, BK_ECORRUPT, "shifts ahead");
  expect_edit(blob, len, OFF_SHIFTS, 8, 2, BK_ECORRUPT, "shifts behind");
  expect_edit(blob, len, OFF_NOW, 8, 4, BK_ECORRUPT, "now before start");
  expect_edit(blob, len, OFF_NOW, 8, 5 + 35, BK_OK, "now, same shifts");
  expect_edit(blob, len, OFF_NOW, 8, 5 + 49, BK_ECORRUPT, "now, a shift due");
  expect_edit(blob, len, OFF_PERIOD, 8, 0, BK_ECORRUPT, "period 0");
  expect_edit(blob, len, OFF_PERIOD, 8, UINT64_MAX, BK_ECORRUPT,
              "period over any window");
  expect_edit(blob, len, OFF_START, 8, UINT64_MAX - 3, BK_ECORRUPT,
              "start at the end");
  expect_edit(blob, len, counts + 8 * 4, 8, 1, BK_ECORRUPT,
              "a slot never used with a count");
  expect_edit(blob, len, counts + 8, 8, (uint64_t)1 << 57, BK_ECORRUPT,
              "count over the bound");
  free(blob);
  bk_apbf_destroy(f);
}

/* The golden blob: a count-based APBF k 4, l 3, g 30, m 200, seed 7, ids
 * 0..99 added (3 shifts), and a read of each. If the format or the
 * hashing changed, this fails (and tests/fuzz/corpus/apbf with it). */
static void make_golden(bk_apbf **out) {
  bk_apbf_config cfg = {
      .k = 4, .l = 3, .generation = 30, .m_bits = 200, .seed = 7};
  bk_apbf *f = apbf_make(&cfg);
  for (uint64_t i = 0; i < 100; i++)
    assert_bk_ok(bk_apbf_add_hash(f, apbf_hash_id(f, i)));
  *out = f;
}

static void test_golden(void **state) {
  (void)state;
  const char *dir = getenv("BK_TEST_DATA");
  if (!dir) skip();
  char path[4096];
  snprintf(path, sizeof path, "%s/apbf_v1.bin", dir);
  bk_apbf *f;
  make_golden(&f);
  size_t len;
  unsigned char *blob = apbf_blob_of(f, &len);
  if (getenv("BK_WRITE_GOLDEN")) {
    FILE *w = fopen(path, "wb");
    assert_non_null(w);
    assert_int_equal(fwrite(blob, 1, len, w), len);
    fclose(w);
  }
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  unsigned char *have = malloc(len + 1);
  size_t got = fread(have, 1, len + 1, fp);
  fclose(fp);
  assert_int_equal(got, len);
  assert_memory_equal(have, blob, len);
  bk_apbf *g = restore(have, got);
  bk_apbf_info in = apbf_info_of(g);
  assert_int_equal(in.shifts, 3);
  assert_int_equal(in.in_generation, 10);
  /* the last l g + 1 = 91 are found */
  for (uint64_t i = 9; i < 100; i++)
    assert_true(apbf_has(g, apbf_hash_id(g, i)));
  free(have);
  free(blob);
  bk_apbf_destroy(f);
  bk_apbf_destroy(g);
}

static void oom_check(void *check_ctx, bk_test_alloc *st, void *f) {
  (void)check_ctx, (void)st;
  assert_bk_ok(bk_apbf_add(f, "a", 1));
}

static void test_oom_deserialize(void **state) {
  (void)state;
  bk_apbf *f;
  make_golden(&f);
  size_t len;
  unsigned char *blob = apbf_blob_of(f, &len);
  unsigned failures = bk_test_oom_load(&bk_test_codec_apbf, blob, len,
                                       oom_check, NULL, false, 100, "load");
  assert_true(failures >= 2);
  free(blob);
  bk_apbf_destroy(f);
}

int main(void) {
  bk_test_begin(SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_crafted),
      cmocka_unit_test(test_golden),
      cmocka_unit_test(test_oom_deserialize),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
