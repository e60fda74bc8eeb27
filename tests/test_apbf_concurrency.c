/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_apbf under threads (include/bloomkit/apbf.h, its thread-safety
 * rule, the FBF's): no lost insert while inserts shift the count-based
 * filter and while a clock thread shifts the time-based one, add_if_absent
 * races across shifts, and snapshots of a live APBF that load. Run under
 * ThreadSanitizer by scripts/sanitize.sh.
 *
 * Run a subset with BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the
 * seed (printed at start).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/apbf.h"
#include "bloomkit/hash.h"

#define SLOW_BUILD BK_TEST_SLOW_BUILD
#define SEED_FALLBACK 0xA9BFC0ull
static uint64_t test_seed(uint64_t salt) {
  return bk_test_seed(SEED_FALLBACK) ^ salt;
}

BK_TEST_DEFINE_MAKE(apbf, static)
BK_TEST_DEFINE_INFO_OF(apbf, static)

static bk_hash hash_id(const bk_apbf *f, uint64_t id) {
  bk_hash h;
  if (bk_apbf_hash(f, &id, sizeof id, &h) != BK_OK) abort();
  return h;
}

static bool has(const bk_apbf *f, bk_hash h) {
  bool out = false;
  if (bk_apbf_contains_hash(f, h, &out) != BK_OK) abort();
  return out;
}

#define MAX_THREADS 4
#define RING 32

typedef struct race {
  bk_apbf *f;
  uint64_t per_thread;
  uint64_t window; /* inserts (count) or time (time-based) guaranteed */
  bool timed;
  _Atomic uint64_t started; /* inserts begun (count-based bound) */
  _Atomic uint64_t clock_lo, clock_hi;
  _Atomic unsigned running;
  _Atomic uint64_t lost, checked, errors;
  bool same_ids;
  unsigned char *added[MAX_THREADS];
} race;

/*
 * Count-based soundness: an inserter reads b = started before it bumps it,
 * so any claim made after its own was begun after that read or was in
 * flight then (at most threads - 1). If started_now - b + threads <= l g,
 * its element is among the last l g + 1 claims, and must be found.
 * Time-based: it reads s = clock_lo (every shift due by s done) before its
 * insert; an element is kept until a shift at a time >= s + window, so it
 * must be found while clock_hi (read after the check) < s + window.
 */
static void *inserter(void *arg) {
  bk_test_worker *w = arg;
  race *r = w->shared;
  uint64_t ring_id[RING], ring_mark[RING];
  for (uint64_t j = 0; j < r->per_thread; j++) {
    uint64_t id = r->same_ids ? j : j * MAX_THREADS + w->tid;
    bk_hash h = hash_id(r->f, id);
    uint64_t mark = atomic_fetch_add(&r->started, 1);
    if (r->timed) {
      /* keep the clock thread within reach, however it is scheduled */
      while (mark / 4 > atomic_load(&r->clock_lo) + 16) sched_yield();
      mark = atomic_load(&r->clock_lo);
    }
    if (r->same_ids) {
      bool added = false;
      if (bk_apbf_add_if_absent_hash(r->f, h, &added) != BK_OK)
        atomic_fetch_add(&r->errors, 1);
      r->added[w->tid][j] = added;
      continue;
    }
    /* add, not add_if_absent: a false positive would not be inserted */
    if (bk_apbf_add_hash(r->f, h) != BK_OK) atomic_fetch_add(&r->errors, 1);
    ring_id[j % RING] = id;
    ring_mark[j % RING] = mark;
    /* this insert, and the one RING - 1 before it */
    for (unsigned back = 0; back < 2; back++) {
      if (back && j + 1 < RING) break;
      uint64_t slot = back ? (j + 1) % RING : j % RING;
      bool found = has(r->f, hash_id(r->f, ring_id[slot]));
      bool must =
          r->timed ? atomic_load(&r->clock_hi) < ring_mark[slot] + r->window
                   : atomic_load(&r->started) - ring_mark[slot] + MAX_THREADS <=
                         r->window;
      if (must) {
        atomic_fetch_add(&r->checked, 1);
        if (!found) atomic_fetch_add(&r->lost, 1);
      }
    }
  }
  atomic_fetch_sub(&r->running, 1);
  return NULL;
}

/* Time moves with the inserts' progress: one unit per ~4 inserts. */
static void *clock_thread(void *arg) {
  race *r = arg;
  uint64_t t = 0;
  while (atomic_load(&r->running)) {
    uint64_t target = atomic_load(&r->started) / 4;
    if (target > t) {
      t = target;
      atomic_store(&r->clock_hi, t);
      if (bk_apbf_advance(r->f, t) != BK_OK) atomic_fetch_add(&r->errors, 1);
      atomic_store(&r->clock_lo, t);
    }
    sched_yield();
  }
  return NULL;
}

static void run(race *r, unsigned threads) {
  pthread_t th[MAX_THREADS + 1];
  bk_test_worker wk[MAX_THREADS];
  atomic_store(&r->running, threads);
  for (unsigned i = 0; i < threads; i++) {
    wk[i] = (bk_test_worker){r, i};
    assert_int_equal(pthread_create(&th[i], NULL, inserter, &wk[i]), 0);
  }
  unsigned extra = 0;
  if (r->timed) {
    assert_int_equal(pthread_create(&th[threads], NULL, clock_thread, r), 0);
    extra = 1;
  }
  for (unsigned i = 0; i < threads + extra; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
}

/* Four inserters shifting a count-based APBF every 64 inserts: no element
 * among the last l g + 1 claims is ever missed. */
static void test_count_no_lost_insert(void **state) {
  (void)state;
  race r;
  memset(&r, 0, sizeof r);
  bk_apbf_config cfg = {.k = 4, .l = 6, .generation = 64, .seed = test_seed(1)};
  r.f = apbf_make(&cfg);
  r.per_thread = SLOW_BUILD ? 5000 : 50000;
  r.window = 6 * 64;
  run(&r, 4);
  print_message("%llu checks, %llu lost, %llu shifts\n",
                (unsigned long long)atomic_load(&r.checked),
                (unsigned long long)atomic_load(&r.lost),
                (unsigned long long)apbf_info_of(r.f).shifts);
  assert_int_equal(atomic_load(&r.errors), 0);
  assert_int_equal(atomic_load(&r.lost), 0);
  assert_true(atomic_load(&r.checked) > r.per_thread);
  assert_true(apbf_info_of(r.f).shifts >= 4 * r.per_thread / 64 / 2);
  bk_apbf_destroy(r.f);
}

/* Inserters and a clock thread shifting a time-based APBF: no element
 * younger than the window is ever missed. */
static void test_time_no_lost_insert(void **state) {
  (void)state;
  race r;
  memset(&r, 0, sizeof r);
  bk_apbf_config cfg = {
      .k = 3, .l = 4, .generation = 200, .window = 40, .seed = test_seed(2)};
  r.f = apbf_make(&cfg);
  r.per_thread = SLOW_BUILD ? 5000 : 40000;
  r.window = 40;
  r.timed = true;
  run(&r, 3);
  print_message("%llu checks, %llu lost, %llu shifts\n",
                (unsigned long long)atomic_load(&r.checked),
                (unsigned long long)atomic_load(&r.lost),
                (unsigned long long)apbf_info_of(r.f).shifts);
  assert_int_equal(atomic_load(&r.errors), 0);
  assert_int_equal(atomic_load(&r.lost), 0);
  assert_true(atomic_load(&r.checked) > 0);
  assert_true(apbf_info_of(r.f).shifts > 10);
  bk_apbf_destroy(r.f);
}

/* Two threads adding the same ids while shifts happen (20 of them), with a
 * window longer than the run: exactly one is told each id is new. */
static void test_add_if_absent_race(void **state) {
  (void)state;
  race r;
  memset(&r, 0, sizeof r);
  const uint64_t n = SLOW_BUILD ? 5000 : 20000;
  bk_apbf_config cfg = {.k = 8,
                        .l = 24,
                        .generation = n / 20,
                        .m_bits = 1u << 16,
                        .seed = test_seed(3)};
  r.f = apbf_make(&cfg);
  r.per_thread = n;
  r.same_ids = true;
  r.added[0] = calloc(n, 1);
  r.added[1] = calloc(n, 1);
  run(&r, 2);
  unsigned both = 0, neither = 0;
  for (uint64_t j = 0; j < n; j++) {
    unsigned c = r.added[0][j] + r.added[1][j];
    both += c == 2;
    neither += c == 0;
  }
  bk_apbf_info in = apbf_info_of(r.f);
  print_message("%u both, %u neither, %llu shifts\n", both, neither,
                (unsigned long long)in.shifts);
  assert_int_equal(atomic_load(&r.errors), 0);
  assert_int_equal(both, 0);
  assert_true(neither < n / 100); /* false positives only */
  assert_true(in.shifts >= 15);
  free(r.added[0]);
  free(r.added[1]);
  bk_apbf_destroy(r.f);
}

/* Snapshots of an APBF that shifts under two inserters all load. */
static void *snap_inserter(void *arg) {
  bk_test_worker *w = arg;
  race *r = w->shared;
  for (uint64_t j = 0; j < r->per_thread; j++) {
    uint64_t id = j * 2 + w->tid;
    if (bk_apbf_add(r->f, &id, sizeof id) != BK_OK)
      atomic_fetch_add(&r->errors, 1);
  }
  atomic_fetch_sub(&r->running, 1);
  return NULL;
}

static void test_snapshots_load(void **state) {
  (void)state;
  race r;
  memset(&r, 0, sizeof r);
  bk_apbf_config cfg = {.k = 3, .l = 3, .generation = 50, .seed = test_seed(4)};
  r.f = apbf_make(&cfg);
  r.per_thread = SLOW_BUILD ? 20000 : 200000;
  atomic_store(&r.running, 2);
  pthread_t th[2];
  bk_test_worker wk[2] = {{&r, 0}, {&r, 1}};
  for (unsigned i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, snap_inserter, &wk[i]), 0);
  unsigned snaps = 0;
  while (atomic_load(&r.running) || snaps == 0) {
    size_t len;
    unsigned char *blob = bk_test_serialize(&bk_test_codec_apbf, r.f, &len);
    bk_apbf *g = NULL;
    assert_bk_ok(bk_apbf_deserialize(blob, len, NULL, &g));
    bk_apbf_destroy(g);
    free(blob);
    snaps++;
  }
  for (unsigned i = 0; i < 2; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
  print_message("%u snapshots loaded\n", snaps);
  assert_int_equal(atomic_load(&r.errors), 0);
  bk_apbf_destroy(r.f);
}

int main(void) {
  bk_test_begin(SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_no_lost_insert),
      cmocka_unit_test(test_time_no_lost_insert),
      cmocka_unit_test(test_add_if_absent_race),
      cmocka_unit_test(test_snapshots_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
