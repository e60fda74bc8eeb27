/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_fbf_contains_at (include/bloomkit/fbf.h), reads as of a time:
 * on fixed FBFs (every shape of N, spare slots, min_window, both checks)
 * it answers exactly what a copy advanced to that time answers, for every
 * key and at times through several windows; it changes nothing; on an
 * adaptive FBF (whose Algorithm 3 ticks it does not replay) it finds every
 * key younger than min_window, and the share of answers that differ from
 * the advanced copy's is printed; and it runs beside an advancing thread
 * (ThreadSanitizer).
 *
 * Shared helpers: tests/fbf_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/fbf.h"

#include "fbf_helpers.h"

static bool has_at(const bk_fbf *f, bk_hash h, uint64_t now) {
  bool out = false;
  assert_bk_ok(bk_fbf_contains_at_hash(f, h, now, &out));
  return out;
}

static bk_fbf *copy_of(const bk_fbf *f) {
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  bk_fbf *g = NULL;
  assert_bk_ok(bk_fbf_deserialize(blob, len, NULL, &g));
  free(blob);
  return g;
}

/* Drive f with ids and clock steps; at each probe time compare
 * contains_at(t) on f with contains on a copy advanced to t, over every id
 * inserted so far and some never inserted. Returns how many answers
 * differed (*compared: how many were compared). */
static unsigned compare_run(const bk_fbf_config *cfg, uint64_t seed,
                            uint64_t *compared) {
  bk_fbf *f = fbf_make(cfg);
  uint64_t rng = seed, t = cfg->start_time, n_ids = 0;
  unsigned differ = 0;
  for (unsigned step = 0; step < 60; step++) {
    unsigned adds = (unsigned)(bk_test_next(&rng) % 40);
    for (unsigned a = 0; a < adds; a++)
      assert_bk_ok(bk_fbf_add_hash(f, fbf_hash_id(f, n_ids++)));
    t += bk_test_next(&rng) % (cfg->refresh_period + 1);
    fbf_advance(f, t);
    size_t before_len, after_len;
    unsigned char *before = fbf_blob_of(f, &before_len);
    for (unsigned probe = 0; probe < 3; probe++) {
      uint64_t later = t + bk_test_next(&rng) % (6 * cfg->refresh_period);
      if (probe == 0) later = t + (step % 7) * cfg->refresh_period;
      bk_fbf *g = copy_of(f);
      fbf_advance(g, later);
      for (uint64_t id = 0; id < n_ids + 20; id++) {
        uint64_t key = id < n_ids ? id : ((uint64_t)1 << 63) | id;
        bk_hash h = fbf_hash_id(f, key);
        bool at = has_at(f, h, later), adv = fbf_has(g, h);
        differ += at != adv;
        ++*compared;
      }
      bk_fbf_destroy(g);
    }
    /* nothing changed */
    unsigned char *after = fbf_blob_of(f, &after_len);
    assert_int_equal(before_len, after_len);
    assert_memory_equal(before, after, before_len);
    free(before);
    free(after);
  }
  bk_fbf_destroy(f);
  return differ;
}

static void test_fixed_exact(void **state) {
  (void)state;
  const bk_fbf_config cfgs[] = {
      {.m_bits = 2000, .k = 3, .n_past = 1, .refresh_period = 10},
      {.m_bits = 4000,
       .k = 4,
       .n_past = 4,
       .refresh_period = 100,
       .start_time = 5000},
      {.m_bits = 3000,
       .k = 3,
       .n_past = 2,
       .refresh_period = 50,
       .check = BK_FBF_CHECK_SIMPLE},
      /* spare slots and a shorter min_window: drops by the goal */
      {.m_bits = 3000,
       .k = 3,
       .n_past = 2,
       .refresh_period = 30,
       .max_filters = 7,
       .min_window = 40},
  };
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    uint64_t compared = 0;
    unsigned differ = compare_run(&cfgs[c], fbf_test_seed(100 + c), &compared);
    assert_true(compared > 10000);
    assert_int_equal(differ, 0);
  }
}

/* A filter resized by hand to more filters than slots in use, then to
 * fewer (the goal below the count): refreshes then drop several filters,
 * each only when min_window allows; the model follows them exactly. */
static void test_resized_exact(void **state) {
  (void)state;
  bk_fbf_config cfg = {.m_bits = 3000,
                       .k = 3,
                       .n_past = 2,
                       .refresh_period = 20,
                       .max_filters = 8,
                       .min_window = 30,
                       .min_filters = 3};
  bk_fbf *f = fbf_make(&cfg);
  uint64_t t = 0;
  for (uint64_t id = 0; id < 300; id++) {
    assert_bk_ok(bk_fbf_add_hash(f, fbf_hash_id(f, id)));
    if (id == 100) assert_bk_ok(bk_fbf_resize(f, 7, 0));
    if (id == 200) assert_bk_ok(bk_fbf_resize(f, 3, 0));
    t += 1;
    fbf_advance(f, t);
    if (id % 10) continue;
    for (uint64_t later = t; later < t + 200; later += 7) {
      bk_fbf *g = copy_of(f);
      fbf_advance(g, later);
      for (uint64_t j = 0; j <= id; j++) {
        bk_hash h = fbf_hash_id(f, j);
        assert_int_equal(has_at(f, h, later), fbf_has(g, h));
      }
      bk_fbf_destroy(g);
    }
  }
  bk_fbf_destroy(f);
}

/* Adaptive: min_window kept; how often the ticks it does not replay change
 * the answer is printed (docs/design/fbf.md, "Reads as of now"). */
static void test_adaptive_min_window(void **state) {
  (void)state;
  bk_fbf_config cfg = fbf_small_adaptive_config();
  uint64_t compared = 0;
  unsigned differ = compare_run(&cfg, fbf_test_seed(7), &compared);
  print_message("adaptive: %u of %llu answers differ from advance's\n", differ,
                (unsigned long long)compared);
  bk_fbf *f = fbf_make(&cfg);
  bk_fbf_info in = fbf_info_of(f);
  uint64_t t = cfg.start_time;
  for (uint64_t id = 0; id < 400; id++) {
    bk_hash h = fbf_hash_id(f, id);
    assert_bk_ok(bk_fbf_add_hash(f, h));
    assert_true(has_at(f, h, t + in.min_window - 1));
    t += cfg.refresh_period / 7 + 1;
    fbf_advance(f, t);
  }
  bk_fbf_destroy(f);
}

/* The issue's case: an id added, then four windows with no write: it reads
 * 0 as of then, 1 as of before; the filter itself still holds it. */
static void test_issue_example(void **state) {
  (void)state;
  bk_fbf_config cfg = {.capacity = 1000, .n_past = 2, .refresh_period = 1000};
  bk_fbf *f = fbf_make(&cfg);
  bk_hash h = fbf_hash_id(f, 42);
  assert_bk_ok(bk_fbf_add_hash(f, h));
  bk_fbf_info in = fbf_info_of(f);
  assert_true(has_at(f, h, in.window_min));
  assert_false(has_at(f, h, 4 * in.window_max));
  assert_true(fbf_has(f, h));
  assert_true(has_at(f, h, 0)); /* before the clock: as contains */
  bool out;
  assert_bk_status(bk_fbf_contains_at(NULL, "a", 1, 0, &out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_at(f, NULL, 1, 0, &out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_at(f, "a", 1, 0, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_at_hash(NULL, h, 0, &out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_at_hash(f, h, 0, NULL), BK_EINVAL);
  assert_bk_ok(bk_fbf_contains_at(f, "a", 1, UINT64_MAX, &out));
  assert_false(out);
  bk_fbf_destroy(f);
}

/* Readers as of the advancing clock beside an advancing, inserting thread:
 * every id younger than min_window is found as of the current clock. */
typedef struct at_race {
  bk_fbf *f;
  _Atomic uint64_t clock, ids;
  _Atomic bool done;
  _Atomic unsigned missed;
  uint64_t stamp[1 << 14];
  _Atomic uint64_t published;
  uint64_t min_window;
} at_race;

static void *at_reader(void *arg) {
  at_race *r = arg;
  uint64_t rng = 99;
  while (!atomic_load(&r->done)) {
    uint64_t n = atomic_load(&r->published);
    if (!n) continue;
    uint64_t id = bk_test_next(&rng) % n;
    uint64_t s = __atomic_load_n(&r->stamp[id], __ATOMIC_ACQUIRE);
    uint64_t now = atomic_load(&r->clock);
    bool out;
    if (bk_fbf_contains_at_hash(r->f, fbf_hash_id(r->f, id), now, &out) !=
        BK_OK)
      atomic_fetch_add(&r->missed, 1000);
    /* kept at least min_window after its insert (stamp: the clock then;
     * the filter's clock lags it by up to 4, so its filter may have been
     * due to age up to 4 earlier). An advance racing with the read makes
     * it an answer as of a later time, at most the clock after it. */
    uint64_t after = atomic_load(&r->clock);
    if (!out && after + 5 < s + r->min_window) atomic_fetch_add(&r->missed, 1);
  }
  return NULL;
}

static void test_concurrent_reads_at(void **state) {
  (void)state;
  at_race *r = calloc(1, sizeof *r);
  bk_fbf_config cfg = {
      .m_bits = 1 << 16, .k = 4, .n_past = 2, .refresh_period = 10};
  r->f = fbf_make(&cfg);
  r->min_window = fbf_info_of(r->f).min_window;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, at_reader, r), 0);
  uint64_t t = 0;
  for (uint64_t id = 0; id < (1 << 14); id++) {
    __atomic_store_n(&r->stamp[id], t, __ATOMIC_RELEASE);
    assert_bk_ok(bk_fbf_add_hash(r->f, fbf_hash_id(r->f, id)));
    atomic_store(&r->published, id + 1);
    if (id % 8 == 0) {
      t++;
      atomic_store(&r->clock, t);
      if (id % 32 == 0) fbf_advance(r->f, t);
    }
  }
  atomic_store(&r->done, true);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(atomic_load(&r->missed), 0);
  bk_fbf_destroy(r->f);
  free(r);
}

int main(void) {
  bk_test_begin(0xC0A7ull);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_exact),
      cmocka_unit_test(test_resized_exact),
      cmocka_unit_test(test_adaptive_min_window),
      cmocka_unit_test(test_issue_example),
      cmocka_unit_test(test_concurrent_reads_at),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
