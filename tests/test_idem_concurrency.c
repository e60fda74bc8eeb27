/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_idem under threads: two threads replaying one op stream
 * apply each op once, disjoint streams on one key lose nothing, readers
 * (get, iterate, info, serialize) alongside adds, removes and the clock.
 *
 * Shared helpers: tests/idem_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "bloomkit/idem.h"

#include "idem_helpers.h"

/* ---- concurrency -----------------------------------------------------------
 */

enum { RACE_SAME_STREAM, RACE_SAME_IDS_TWO_KEYS, RACE_DISJOINT_ONE_KEY };

typedef struct race {
  bk_idem *t;
  int mode;
  unsigned n;
  uint32_t n_keys;
  const uint32_t *op_key; /* SAME_STREAM: key of op j */
  const uint32_t *cnt_le; /* ... ops on that key with index <= j */
  unsigned char *outcome[2];
  int64_t applied_sum[2];
  _Atomic unsigned progress[2];
  _Atomic uint64_t clock;
  _Atomic uint64_t errors, low_values;
} race;

static void *race_adder(void *p) {
  const bk_test_worker *a = p;
  race *rc = a->shared;
  const unsigned me = a->tid, other = me ^ 1u;
  const bool same = rc->mode != RACE_DISJOINT_ONE_KEY;
  for (unsigned j = 0; j < rc->n; j++) {
    /* Same ids: loose lockstep, so the two copies of an op really race.
     * Always: the clock (ops as time units) within 8 of j, so the second
     * copy arrives well inside the window and a period never holds more
     * than ~60 ops (a starved clock would overfill the filter). */
    if (same)
      while (atomic_load(&rc->progress[other]) + 4 < j &&
             atomic_load(&rc->progress[other]) < rc->n)
        sched_yield();
    while (atomic_load(&rc->clock) + 8 < j) sched_yield();
    unsigned char kb[KEY_BUF];
    size_t kl;
    bk_idem_op_id id;
    int64_t delta;
    switch (rc->mode) {
      case RACE_SAME_STREAM:
        kl = key_of(rc->op_key[j], kb);
        id = opid(1 + j % 5, j);
        delta = 1;
        break;
      case RACE_SAME_IDS_TWO_KEYS:
        kl = key_of(me == 0 ? 3 : 4, kb);
        id = opid(1 + j % 5, j);
        delta = 1;
        break;
      default:
        kl = key_of(0, kb);
        id = opid(100 + me, j);
        delta = me == 0 ? (int64_t)(j % 7) + 1 : -(int64_t)(j % 5) - 1;
        break;
    }
    int64_t v = 0;
    bk_idem_outcome oc = (bk_idem_outcome)0;
    if (bk_idem_add(rc->t, kb, kl, id, delta, &v, &oc) != BK_OK)
      atomic_fetch_add(&rc->errors, 1);
    rc->outcome[me][j] = (unsigned char)oc;
    if (oc == BK_IDEM_APPLIED) rc->applied_sum[me] += delta;
    /* All ops up to j on this key were applied by now (this thread saw
     * each, as new or as a duplicate): the value includes them. */
    if (rc->mode == RACE_SAME_STREAM && v < (int64_t)rc->cnt_le[j])
      atomic_fetch_add(&rc->low_values, 1);
    atomic_store(&rc->progress[me], j + 1);
  }
  atomic_store(&rc->progress[me], rc->n + 8);
  return NULL;
}

/* Two adders; this thread drives the clock: the slower adder's progress. */
static void race_run(race *rc) {
  pthread_t th[2];
  bk_test_worker args[2];
  for (unsigned i = 0; i < 2; i++) {
    rc->outcome[i] = calloc(rc->n, 1);
    assert_non_null(rc->outcome[i]);
    args[i].shared = rc;
    args[i].tid = i;
    assert_int_equal(pthread_create(&th[i], NULL, race_adder, &args[i]), 0);
  }
  uint64_t last = 0;
  for (;;) {
    unsigned p0 = atomic_load(&rc->progress[0]);
    unsigned p1 = atomic_load(&rc->progress[1]);
    if (p0 >= rc->n && p1 >= rc->n) break;
    uint64_t now = p0 < p1 ? p0 : p1;
    if (now > last) {
      if (bk_idem_advance(rc->t, now) != BK_OK)
        atomic_fetch_add(&rc->errors, 1);
      last = now;
      atomic_store(&rc->clock, now);
    } else {
      sched_yield();
    }
  }
  for (unsigned i = 0; i < 2; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
}

static void race_free(race *rc) {
  free(rc->outcome[0]);
  free(rc->outcome[1]);
}

/* Sized for the race: ops are time units, T = 64 (t = 22); the FBF for
 * 1000 ops a period at 1e-9, the RBF with its recycle threshold far above
 * n (a recycle between the two copies of an op would re-apply it). */
static bk_idem_config race_config(bk_idem_strategy s, unsigned n,
                                  uint64_t seed) {
  bk_idem_config c = {.strategy = s,
                      .retry_timeout = 64,
                      .ops_per_period = s == BK_IDEM_RBF ? n : 1000,
                      .fpp = 1e-9,
                      .seed = seed};
  return c;
}

static void test_concurrent_same_stream(void **state) {
  (void)state;
  const unsigned n = TSAN_BUILD ? 3000 : SLOW_BUILD ? 10000 : 40000;
  const uint32_t n_keys = 16;
  uint32_t *op_key = malloc(n * sizeof *op_key);
  uint32_t *cnt_le = malloc(n * sizeof *cnt_le);
  uint32_t per_key[16] = {0};
  assert_non_null(op_key);
  assert_non_null(cnt_le);
  uint64_t rng = idem_test_seed(0xC0);
  for (unsigned j = 0; j < n; j++) {
    op_key[j] = (uint32_t)(bk_test_next(&rng) % n_keys);
    cnt_le[j] = ++per_key[op_key[j]];
  }
  /* Every strategy that finds duplicates. */
  const bk_idem_strategy deduping[] = {BK_IDEM_HYBRID, BK_IDEM_WINDOW,
                                       BK_IDEM_FBF,    BK_IDEM_FBF_ADAPTIVE,
                                       BK_IDEM_APBF,   BK_IDEM_RBF};
  for (size_t si = 0; si < COUNT(deduping); si++) {
    bk_idem_strategy strat = deduping[si];
    for (int mode = RACE_SAME_STREAM; mode <= RACE_SAME_IDS_TWO_KEYS; mode++) {
      race rc;
      memset(&rc, 0, sizeof rc);
      bk_idem_config cfg = race_config(strat, n, idem_test_seed(si));
      rc.t = idem_make(&cfg);
      rc.mode = mode;
      rc.n = n;
      rc.n_keys = n_keys;
      rc.op_key = op_key;
      rc.cnt_le = cnt_le;
      race_run(&rc);
      race_tally r = race_tally_of(rc.outcome[0], rc.outcome[1], n);
      if (atomic_load(&rc.errors) || r.both || r.neither ||
          atomic_load(&rc.low_values))
        fail_msg(
            "%s mode %d: %llu errors, %zu ops applied twice, %zu never, %llu "
            "values missing the ops already applied",
            strat_name(strat), mode,
            (unsigned long long)atomic_load(&rc.errors), r.both, r.neither,
            (unsigned long long)atomic_load(&rc.low_values));
      bk_idem_info in = idem_info_of(rc.t);
      assert_int_equal(in.applied, n);
      assert_int_equal(in.duplicates + r.too_old, n);
      if (strat != BK_IDEM_WINDOW) assert_int_equal(r.too_old, 0);
      if (mode == RACE_SAME_STREAM) {
        model m = model_new(n_keys);
        for (uint32_t k = 0; k < n_keys; k++)
          if (per_key[k]) model_apply(&m, k, per_key[k]);
        expect_table(rc.t, &m, strat_name(strat));
        model_free(&m);
      } else {
        /* The same id on two keys at once: applied to exactly one. */
        unsigned char k3[KEY_BUF], k4[KEY_BUF];
        size_t l3 = key_of(3, k3), l4 = key_of(4, k4);
        int64_t v3 = 0, v4 = 0;
        (void)bk_idem_get(rc.t, k3, l3, &v3);
        (void)bk_idem_get(rc.t, k4, l4, &v4);
        assert_int_equal(v3 + v4, n);
        assert_int_equal(v3, rc.applied_sum[0]);
        assert_int_equal(v4, rc.applied_sum[1]);
      }
      race_free(&rc);
      bk_idem_destroy(rc.t);
    }
  }
  free(op_key);
  free(cnt_le);
}

/* Two clients with distinct op ids on ONE key, the clock advancing
 * concurrently: nothing lost, every op applied (negligible fpp), the final
 * value the sum. */
static void test_concurrent_disjoint_one_key(void **state) {
  (void)state;
  const unsigned n = TSAN_BUILD ? 3000 : SLOW_BUILD ? 10000 : 40000;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    race rc;
    memset(&rc, 0, sizeof rc);
    bk_idem_config cfg = race_config(strat, 2 * n, idem_test_seed(0xD0 + si));
    rc.t = idem_make(&cfg);
    rc.mode = RACE_DISJOINT_ONE_KEY;
    rc.n = n;
    race_run(&rc);
    int64_t want = 0;
    for (unsigned j = 0; j < n; j++)
      want += (int64_t)(j % 7) + 1 - ((int64_t)(j % 5) + 1);
    unsigned dups = 0;
    for (unsigned j = 0; j < n; j++)
      dups += (rc.outcome[0][j] != BK_IDEM_APPLIED) +
              (rc.outcome[1][j] != BK_IDEM_APPLIED);
    assert_int_equal(atomic_load(&rc.errors), 0);
    assert_int_equal(dups, 0);
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(0, kb);
    assert_int_equal(get_ok(rc.t, kb, kl), want);
    bk_idem_info in = idem_info_of(rc.t);
    assert_int_equal(in.applied, 2 * n);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 1);
    race_free(&rc);
    bk_idem_destroy(rc.t);
  }
}

/* Readers alongside writers: two adders (32 hot keys, plus short-lived keys
 * they create, check and delete), a reader (get, iterate, info, snapshots
 * restored on the spot), this thread advancing the clock (the slower
 * adder's op count; adders stay within 8 of it). Mostly for the
 * thread sanitizer; also: hot values never go down, every snapshot is
 * readable, and the end state is exact. */
typedef struct rw {
  bk_idem *t;
  unsigned n;
  _Atomic int adders_done;
  _Atomic uint64_t errors, regressions, snapshots, snapshot_errors;
  _Atomic uint64_t iterations;
  _Atomic unsigned progress[2];
  _Atomic uint64_t clock;
} rw;

#define HOT 32u

static void *rw_adder(void *p) {
  const bk_test_worker *a = p;
  rw *r = a->shared;
  for (unsigned j = 0; j < r->n; j++) {
    /* Keep within 8 ops of the clock (see race_adder). */
    while (atomic_load(&r->clock) + 8 < j) sched_yield();
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(j % HOT, kb);
    int64_t v;
    bk_idem_outcome oc;
    if (bk_idem_add(r->t, kb, kl, opid(10 + a->tid, 2 * (uint64_t)j),
                    (int64_t)(j % 3) + 1, &v, &oc) != BK_OK ||
        oc != BK_IDEM_APPLIED)
      atomic_fetch_add(&r->errors, 1);
    if (j % 4 == 0) {
      /* A short-lived key only this thread touches. */
      kl = key_of(1000 + 2 * (uint64_t)j + a->tid, kb);
      if (bk_idem_add(r->t, kb, kl, opid(10 + a->tid, 2 * (uint64_t)j + 1), 7,
                      &v, &oc) != BK_OK ||
          v != 7)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_get(r->t, kb, kl, &v) != BK_OK || v != 7)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_remove(r->t, kb, kl) != BK_OK)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_get(r->t, kb, kl, &v) != BK_ENOTFOUND)
        atomic_fetch_add(&r->errors, 1);
    }
    atomic_store(&r->progress[a->tid], j + 1);
  }
  atomic_store(&r->progress[a->tid], r->n + 8);
  atomic_fetch_add(&r->adders_done, 1);
  return NULL;
}

static int rw_walk(void *ctx, const void *key, size_t len, int64_t value) {
  uint64_t *bad = ctx;
  uint64_t i;
  if (!key_index(key, len, &i) || (i < HOT ? value < 0 : value != 7)) (*bad)++;
  return 0;
}

static void *rw_reader(void *p) {
  rw *r = p;
  int64_t last[HOT] = {0};
  while (atomic_load(&r->adders_done) < 2) {
    for (unsigned k = 0; k < HOT; k++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(k, kb);
      int64_t v;
      if (bk_idem_get(r->t, kb, kl, &v) != BK_OK) {
        atomic_fetch_add(&r->errors, 1);
        continue;
      }
      if (v < last[k]) atomic_fetch_add(&r->regressions, 1);
      last[k] = v;
    }
    uint64_t bad = 0;
    if (bk_idem_iterate(r->t, rw_walk, &bad) != BK_OK || bad)
      atomic_fetch_add(&r->errors, 1);
    atomic_fetch_add(&r->iterations, 1);
    bk_idem_info in;
    if (bk_idem_info_get(r->t, &in) != BK_OK || in.keys < HOT)
      atomic_fetch_add(&r->errors, 1);
    /* A snapshot every 4th pass, and a breather: the point is overlap with
     * the writers, not starving them (2 cores). */
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
    if (atomic_load(&r->iterations) % 4 != 1) continue;
    size_t size = 0, written = 0;
    if (bk_idem_serialized_size(r->t, &size) != BK_OK) {
      atomic_fetch_add(&r->errors, 1);
      continue;
    }
    size += 64 * 50; /* room for keys added meanwhile */
    unsigned char *buf = malloc(size);
    if (!buf) continue;
    bk_status s = bk_idem_serialize(r->t, buf, size, &written);
    if (s == BK_OK) {
      bk_idem *c = NULL;
      if (bk_idem_deserialize(buf, written, NULL, &c) != BK_OK) {
        atomic_fetch_add(&r->snapshot_errors, 1);
      } else {
        /* A snapshot sees each key before or after an add. */
        bad = 0;
        if (bk_idem_iterate(c, rw_walk, &bad) != BK_OK || bad)
          atomic_fetch_add(&r->snapshot_errors, 1);
        for (unsigned k = 0; k < HOT; k++) {
          unsigned char kb[KEY_BUF];
          size_t kl = key_of(k, kb);
          int64_t v;
          if (bk_idem_get(c, kb, kl, &v) != BK_OK || v < 0)
            atomic_fetch_add(&r->snapshot_errors, 1);
        }
        bk_idem_destroy(c);
        atomic_fetch_add(&r->snapshots, 1);
      }
    } else if (s != BK_EINVAL) {
      atomic_fetch_add(&r->errors, 1);
    }
    free(buf);
  }
  return NULL;
}

static void test_concurrent_readers(void **state) {
  (void)state;
  const bk_idem_strategy strats[] = {BK_IDEM_HYBRID, BK_IDEM_FBF,
                                     BK_IDEM_FBF_ADAPTIVE, BK_IDEM_NONE};
  for (size_t si = 0; si < COUNT(strats); si++) {
    rw r;
    memset(&r, 0, sizeof r);
    r.n = TSAN_BUILD ? 4000 : SLOW_BUILD ? 8000 : 20000;
    bk_idem_config cfg = generous(strats[si], 1000, idem_test_seed(0xE0 + si));
    /* Periods hold at most ~1000 ops (the adders keep to the clock): a
     * smaller filter at 1e-9 keeps the snapshots cheap. */
    cfg.ops_per_period = 2000;
    r.t = idem_make(&cfg);
    /* The hot keys exist before the readers start. */
    for (unsigned k = 0; k < HOT; k++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(k, kb);
      (void)add_ok(r.t, kb, kl, opid(99, k), 0, NULL);
    }
    pthread_t th[3];
    bk_test_worker args[2] = {{&r, 0}, {&r, 1}};
    assert_int_equal(pthread_create(&th[0], NULL, rw_adder, &args[0]), 0);
    assert_int_equal(pthread_create(&th[1], NULL, rw_adder, &args[1]), 0);
    assert_int_equal(pthread_create(&th[2], NULL, rw_reader, &r), 0);
    uint64_t last = 0;
    while (atomic_load(&r.adders_done) < 2) {
      unsigned p0 = atomic_load(&r.progress[0]);
      unsigned p1 = atomic_load(&r.progress[1]);
      uint64_t now = p0 < p1 ? p0 : p1;
      if (now > last) {
        if (bk_idem_advance(r.t, now) != BK_OK) atomic_fetch_add(&r.errors, 1);
        last = now;
        atomic_store(&r.clock, now);
      } else {
        sched_yield();
      }
    }
    for (unsigned i = 0; i < 3; i++)
      assert_int_equal(pthread_join(th[i], NULL), 0);
    print_message("%s: %llu reader passes, %llu snapshots restored\n",
                  strat_name(strats[si]),
                  (unsigned long long)atomic_load(&r.iterations),
                  (unsigned long long)atomic_load(&r.snapshots));
    assert_int_equal(atomic_load(&r.errors), 0);
    assert_int_equal(atomic_load(&r.regressions), 0);
    assert_int_equal(atomic_load(&r.snapshot_errors), 0);
    model m = model_new(HOT);
    for (unsigned k = 0; k < HOT; k++) m.live[k] = 1;
    for (unsigned tid = 0; tid < 2; tid++)
      for (unsigned j = 0; j < r.n; j++)
        m.value[j % HOT] += (int64_t)(j % 3) + 1;
    expect_table(r.t, &m, strat_name(strats[si]));
    model_free(&m);
    bk_idem_info in = idem_info_of(r.t);
    assert_int_equal(in.applied,
                     HOT + 2 * (uint64_t)r.n + 2 * (uint64_t)((r.n + 3) / 4));
    bk_idem_destroy(r.t);
  }
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_same_stream),
      cmocka_unit_test(test_concurrent_disjoint_one_key),
      cmocka_unit_test(test_concurrent_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
