/* SPDX-License-Identifier: MIT */
/*
 * Tests for bk_idem (include/bloomkit/idem.h), idempotent counters over one
 * duplicate filter of op ids (FBF, adaptive FBF, RBF, or none), as counters:
 *   - creation and the basics of each strategy;
 *   - exactly-once under a scripted retry storm (lost originals, 1-3 retries
 *     up to exactly the retry timeout, simulated time), for every strategy;
 *     NONE over-counts by exactly the retries;
 *   - the window: a retry aged exactly retry_timeout is a duplicate, one
 *     past the FBF's (N+2) t is applied again; the RBF forgets at a recycle;
 *   - iteration, remove, get; int64 overflow (nothing recorded), and
 *     regressions of bugs found here (fixed in 893fc71, see their comments).
 *
 * Shared helpers: tests/idem_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "bloomkit/idem.h"

#include "idem_helpers.h"

/* ---- creation and basics --------------------------------------------------
 */

static void test_create_basics(void **state) {
  (void)state;
  /* The default: HYBRID, windows of 256 seqs, its FBF made on first
   * need. */
  bk_idem_config d = {.retry_timeout = 3001};
  bk_idem *t = idem_make(&d);
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_HYBRID);
  assert_int_equal(in.window, BK_IDEM_WINDOW_DEFAULT);
  assert_int_equal(in.filter_memory, 0);
  assert_int_equal(in.n_filters, 0);
  assert_true(in.window_memory > 0 && in.window_memory < 16384);
  assert_int_equal(ADD(t, "a", 1, 1000, 5, NULL), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "a", 1, 1000, 5, NULL), BK_IDEM_DUPLICATE);
  assert_int_equal(idem_info_of(t).filter_memory, 0); /* still none */
  assert_int_equal(ADD(t, "a", 1, 1, 5, NULL), BK_IDEM_APPLIED); /* below */
  in = idem_info_of(t);
  assert_true(in.filter_memory > 0);
  assert_int_equal(in.n_filters, 4);
  assert_int_equal(in.below_window, 1);
  assert_int_equal(in.window_decided, 2);
  bk_idem_destroy(t);

  /* FBF: N = 2, t = ceil(T / 3): the window covers T. */
  bk_idem_config c = {.strategy = BK_IDEM_FBF, .retry_timeout = 3001};
  t = idem_make(&c);
  in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_FBF);
  assert_int_equal(in.keys, 0);
  assert_int_equal(in.applied, 0);
  assert_int_equal(in.duplicates, 0);
  assert_true(in.filter_memory > 0);
  assert_true(in.table_memory > 0);
  assert_true(in.fpp == 0.0);
  assert_true(in.window_min >= 3001);
  assert_int_equal(in.n_filters, 4);
  assert_int_equal(in.refresh_period, 1001);
  int64_t v = 0;
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 5);
  assert_int_equal(ADD(t, "a", 1, 2, -7, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, -2);
  /* value and outcome may be NULL. */
  assert_bk_ok(bk_idem_add(t, "a", 1, opid(1, 3), 10, NULL, NULL));
  assert_int_equal(GET(t, "a"), 8);
  assert_int_equal(ADD(t, "a", 1, 3, 10, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 8);
  /* Op ids are (client, seq) pairs: (2, 3) and (3, 1) are new. */
  assert_int_equal(ADD(t, "a", 2, 3, 1, &v), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "a", 3, 1, 1, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 10);
  /* An op id is table-wide: the same id on another key is a duplicate. */
  assert_int_equal(ADD(t, "b", 1, 1, 100, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 0);
  assert_bk_status(bk_idem_get(t, "b", 1, &v), BK_ENOTFOUND);
  in = idem_info_of(t);
  assert_int_equal(in.keys, 1);
  assert_int_equal(in.applied, 5);
  assert_int_equal(in.duplicates, 2);
  assert_true(in.fpp >= 0.0 && in.fpp < 1e-6);
  bk_idem_destroy(t);

  /* NONE needs no timeout and has no filter. */
  bk_idem_config none = {.strategy = BK_IDEM_NONE};
  t = idem_make(&none);
  in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_NONE);
  assert_int_equal(in.filter_memory, 0);
  assert_true(in.fpp == 0.0);
  assert_int_equal(in.window_min, 0);
  assert_int_equal(in.n_filters, 0);
  assert_int_equal(in.refresh_period, 0);
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 10);
  bk_idem_destroy(t);

  /* RBF: a filter, no time window. */
  bk_idem_config rbf = {.strategy = BK_IDEM_RBF, .retry_timeout = 10};
  t = idem_make(&rbf);
  in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_RBF);
  assert_true(in.filter_memory > 0);
  assert_int_equal(in.window_min, 0);
  assert_int_equal(in.n_filters, 0);
  assert_int_equal(in.refresh_period, 0);
  bk_idem_destroy(t);

  /* Adaptive, Murmur3, explicit m and k, n_past 1, a start time. */
  bk_idem_config ad = {.strategy = BK_IDEM_FBF_ADAPTIVE,
                       .retry_timeout = 100,
                       .n_past = 1,
                       .m_bits = 4096,
                       .k = 4,
                       .start_time = 1000,
                       .hash_alg = BK_HASH_MURMUR3,
                       .seed = 12345};
  t = idem_make(&ad);
  in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_FBF_ADAPTIVE);
  assert_true(in.window_min >= 100);
  /* The clock starts at start_time. */
  assert_bk_status(bk_idem_advance(t, 999), BK_EINVAL);
  assert_bk_ok(bk_idem_advance(t, 1000));
  bk_idem_destroy(t);
  bk_idem_destroy(NULL);
}

/* ---- exactly-once under a retry storm -------------------------------------
 *
 * 8 clients issue ops (per-client sequence numbers) to 64 keys, one op every
 * 0-2 time units. An eighth of the originals are lost (the first copy to
 * arrive is a retry, up to T/2 later); half the ops are retried 1-3 times
 * after their first arrival, each retry at most T = retry_timeout later
 * (every 97th op once exactly at T). Even keys count hits (+1), odd keys
 * carry deltas in [-50, 100]. Arrivals are replayed in time order with
 * bk_idem_advance driving the clock. */

typedef struct storm_op {
  bk_idem_op_id id;
  uint32_t key;
  int64_t delta;
} storm_op;

typedef struct arrival {
  uint64_t time;
  uint32_t op;
  uint32_t nth; /* 0: the first copy to arrive */
} arrival;

typedef struct storm {
  storm_op *ops;
  size_t n_ops;
  arrival *arr;
  size_t n_arr;
  uint32_t n_keys;
  uint64_t lost, at_timeout;
} storm;

static int cmp_arrival(const void *a, const void *b) {
  const arrival *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if ((x->nth != 0) != (y->nth != 0)) return x->nth != 0 ? 1 : -1;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  return x->nth < y->nth ? -1 : x->nth > y->nth;
}

static storm storm_make(uint64_t seed, size_t n_ops, uint32_t n_keys,
                        uint64_t timeout) {
  storm s;
  memset(&s, 0, sizeof s);
  s.ops = calloc(n_ops, sizeof *s.ops);
  s.arr = calloc(n_ops * 4, sizeof *s.arr);
  assert_non_null(s.ops);
  assert_non_null(s.arr);
  s.n_ops = n_ops;
  s.n_keys = n_keys;
  uint64_t rng = seed, now = 0, next_seq[8] = {0};
  for (size_t i = 0; i < n_ops; i++) {
    unsigned c = (unsigned)(bk_test_next(&rng) % 8);
    storm_op *op = &s.ops[i];
    op->id = opid(1000 + c, ++next_seq[c]);
    op->key = (uint32_t)(bk_test_next(&rng) % n_keys);
    op->delta = op->key % 2 == 0 ? 1 : (int64_t)(bk_test_next(&rng) % 151) - 50;
    now += bk_test_next(&rng) % 3;
    bool lost = bk_test_next(&rng) % 8 == 0;
    uint64_t first = lost ? now + 1 + bk_test_next(&rng) % (timeout / 2) : now;
    s.lost += lost;
    s.arr[s.n_arr++] = (arrival){first, (uint32_t)i, 0};
    unsigned retries =
        bk_test_next(&rng) % 2 ? 1 + (unsigned)(bk_test_next(&rng) % 3) : 0;
    for (unsigned q = 0; q < retries; q++) {
      uint64_t d = (i % 97 == 0 && q == 0) ? timeout
                                           : bk_test_next(&rng) % (timeout + 1);
      s.at_timeout += d == timeout;
      s.arr[s.n_arr++] = (arrival){first + d, (uint32_t)i, q + 1};
    }
  }
  qsort(s.arr, s.n_arr, sizeof *s.arr, cmp_arrival);
  return s;
}

static void storm_free(storm *s) {
  free(s->ops);
  free(s->arr);
}

static void storm_run(const storm *s, bk_idem_strategy strategy,
                      uint64_t timeout, const model *exact) {
  bk_idem_config cfg = generous(strategy, timeout, idem_test_seed(0x57));
  bk_idem *t = idem_make(&cfg);
  model m = model_new(s->n_keys);
  uint64_t bad_outcome = 0, bad_value = 0, retries = 0, retries_unit = 0;
  int64_t retried_delta = 0;
  uint64_t last = 0;
  bool filtering = strategy != BK_IDEM_NONE;
  for (size_t a = 0; a < s->n_arr; a++) {
    const arrival *ar = &s->arr[a];
    const storm_op *op = &s->ops[ar->op];
    if (ar->time != last) {
      assert_bk_ok(bk_idem_advance(t, ar->time));
      last = ar->time;
    }
    bool want_applied = !filtering || ar->nth == 0;
    if (ar->nth) {
      retries++;
      retries_unit += op->key % 2 == 0;
      retried_delta += op->delta;
    }
    if (want_applied) model_apply(&m, op->key, op->delta);
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(op->key, kb);
    int64_t v;
    bk_idem_outcome oc = add_ok(t, kb, kl, op->id, op->delta, &v);
    if (oc != (want_applied ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE)) {
      if (bad_outcome++ < 5)
        print_message(
            "%s: op %u (client %llu seq %llu) arrival %u at %llu: %s\n",
            strat_name(strategy), ar->op, (unsigned long long)op->id.client,
            (unsigned long long)op->id.seq, ar->nth,
            (unsigned long long)ar->time,
            oc == BK_IDEM_APPLIED ? "APPLIED" : "DUPLICATE");
    }
    /* The reported value: after the apply, or the current one for a
     * duplicate (which includes the original). */
    if (v != m.value[op->key]) bad_value++;
  }
  if (bad_outcome || bad_value)
    fail_msg("%s: %llu wrong outcomes, %llu wrong values of %zu arrivals",
             strat_name(strategy), (unsigned long long)bad_outcome,
             (unsigned long long)bad_value, s->n_arr);
  expect_table(t, &m, strat_name(strategy));
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.strategy, strategy);
  if (filtering) {
    /* Exactly once: the table equals every op applied once. */
    for (uint32_t k = 0; k < s->n_keys; k++) {
      assert_int_equal(m.live[k], exact->live[k]);
      assert_int_equal(m.value[k], exact->value[k]);
    }
    assert_int_equal(in.applied, s->n_ops);
    assert_int_equal(in.duplicates, retries);
  } else {
    /* Vanilla counters count every retry: the hit counters are over by
     * exactly the number of their retries, all counters by the retried
     * deltas. */
    int64_t over_unit = 0, over_all = 0;
    for (uint32_t k = 0; k < s->n_keys; k++) {
      over_all += m.value[k] - exact->value[k];
      if (k % 2 == 0) over_unit += m.value[k] - exact->value[k];
    }
    assert_int_equal(over_unit, retries_unit);
    assert_int_equal(over_all, retried_delta);
    assert_int_equal(in.applied, s->n_arr);
    assert_int_equal(in.duplicates, 0);
    assert_true(retries_unit > 0);
  }
  assert_int_equal(retries, s->n_arr - s->n_ops);
  model_free(&m);
  bk_idem_destroy(t);
}

static void test_retry_storm(void **state) {
  (void)state;
  const uint64_t timeout = 1000;
  const size_t n_ops = SLOW_BUILD ? 5000 : 20000;
  storm s = storm_make(idem_test_seed(0x5708), n_ops, 64, timeout);
  model exact = model_new(s.n_keys);
  for (size_t i = 0; i < s.n_ops; i++)
    model_apply(&exact, s.ops[i].key, s.ops[i].delta);
  print_message(
      "storm: %zu ops, %zu arrivals (%zu retries, %llu lost originals, "
      "%llu retries at exactly the timeout), clock to %llu\n",
      s.n_ops, s.n_arr, s.n_arr - s.n_ops, (unsigned long long)s.lost,
      (unsigned long long)s.at_timeout,
      (unsigned long long)s.arr[s.n_arr - 1].time);
  assert_true(s.at_timeout > 0);
  for (size_t i = 0; i < COUNT(ALL_STRATEGIES); i++)
    storm_run(&s, ALL_STRATEGIES[i], timeout, &exact);
  model_free(&exact);
  storm_free(&s);
}

/* ---- the window ------------------------------------------------------------
 *
 * An op id inserted at s is remembered at least retry_timeout (the FBF's
 * (N+1) t covers it) and at most (N+2) t. Inserted at every phase of a
 * period: a retry aged T - 1 and T is a duplicate; one past (N+2) t is
 * applied again (the documented behaviour for a retry after the window),
 * and is then remembered anew. */
static void window_case(bk_idem_strategy strategy, uint64_t timeout,
                        unsigned n_past, uint64_t period) {
  const unsigned n = n_past ? n_past : 2;
  const uint64_t t_eff = period ? period : (timeout + n) / (n + 1);
  /* The adaptive FBF may hold up to 4 (N + 2) filters (its default
   * ceiling) and never lengthens t past the configured one. */
  const uint64_t max_window =
      (strategy == BK_IDEM_FBF_ADAPTIVE ? 4 * (n + 2) : n + 2) * t_eff;
  const uint64_t start = 7;
  const uint64_t phases[] = {0, 1 % t_eff, t_eff / 2,
                             (t_eff + t_eff - 2) % t_eff, t_eff - 1};
  for (size_t ph = 0; ph < COUNT(phases); ph++) {
    bk_idem_config cfg = generous(strategy, timeout, idem_test_seed(ph));
    cfg.n_past = n_past;
    cfg.refresh_period = period;
    cfg.start_time = start;
    bk_idem *t = idem_make(&cfg);
    bk_idem_info in0 = idem_info_of(t);
    assert_true(in0.window_min >= timeout);
    assert_int_equal(in0.refresh_period, t_eff);
    assert_int_equal(in0.n_filters, n + 2);
    /* Some history first, so the clock is far from the start. */
    const uint64_t s0 = start + 20 * t_eff + phases[ph];
    for (uint64_t now = start; now < s0; now += t_eff / 3 + 1) {
      assert_bk_ok(bk_idem_advance(t, now));
      assert_int_equal(ADD(t, "noise", 9, now, 1, NULL), BK_IDEM_APPLIED);
    }
    assert_bk_ok(bk_idem_advance(t, s0));
    int64_t v;
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 5);
    assert_bk_ok(bk_idem_advance(t, s0 + timeout - 1));
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_DUPLICATE);
    assert_int_equal(v, 5);
    assert_bk_ok(bk_idem_advance(t, s0 + timeout));
    bk_idem_outcome oc = add_ok(t, "k", 1, opid(1, 1), 5, &v);
    if (oc != BK_IDEM_DUPLICATE)
      fail_msg(
          "%s T=%llu N=%u t=%llu phase %llu: a retry aged exactly T "
          "was applied again",
          strat_name(strategy), (unsigned long long)timeout, n,
          (unsigned long long)t_eff, (unsigned long long)phases[ph]);
    assert_int_equal(v, 5);
    /* Past the longest window the id is forgotten. */
    assert_bk_ok(bk_idem_advance(t, s0 + max_window + 1));
    oc = add_ok(t, "k", 1, opid(1, 1), 5, &v);
    if (oc != BK_IDEM_APPLIED)
      fail_msg(
          "%s T=%llu N=%u t=%llu phase %llu: a retry past (N+2)t was "
          "still a duplicate",
          strat_name(strategy), (unsigned long long)timeout, n,
          (unsigned long long)t_eff, (unsigned long long)phases[ph]);
    assert_int_equal(v, 10);
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_DUPLICATE);
    assert_int_equal(v, 10);
    assert_int_equal(GET(t, "k"), 10);
    bk_idem_info in = idem_info_of(t);
    assert_int_equal(in.duplicates, 3);
    bk_idem_destroy(t);
  }
}

static void test_window(void **state) {
  (void)state;
  window_case(BK_IDEM_FBF, 3000, 0, 0);    /* t = 1000, (N+1)t = T */
  window_case(BK_IDEM_FBF, 3001, 0, 0);    /* t = 1001 (ceil) */
  window_case(BK_IDEM_FBF, 3000, 2, 1500); /* (N+1)t = 4500 > T */
  window_case(BK_IDEM_FBF, 3000, 1, 0);    /* N = 1: t = 1500 */
  window_case(BK_IDEM_FBF, 3000, 5, 500);  /* N = 5 */
  window_case(BK_IDEM_FBF, 1, 0, 0);       /* T = t = 1 */
  window_case(BK_IDEM_FBF_ADAPTIVE, 3000, 0, 0);
  window_case(BK_IDEM_FBF_ADAPTIVE, 3000, 3, 800);
}

/* The RBF baseline has no clock: a retry is a duplicate however late, until
 * the filter recycles; then everything is forgotten and it applies again. */
static void test_rbf_forgets_at_recycle(void **state) {
  (void)state;
  bk_idem_config cfg = {.strategy = BK_IDEM_RBF,
                        .retry_timeout = 10,
                        .m_bits = 256,
                        .k = 2,
                        .target_fpp = 0.05,
                        .seed = idem_test_seed(0x4BF)};
  bk_idem *t = idem_make(&cfg);
  int64_t v;
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_APPLIED);
  assert_bk_ok(bk_idem_advance(t, 1000000000));
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 3);
  /* Distinct ops until the estimate falls back (the recycle). */
  double prev = idem_info_of(t).fpp;
  uint64_t seq = 0;
  for (;;) {
    assert_true(seq < 100000);
    (void)ADD(t, "other", 2, seq++, 1, NULL);
    double now = idem_info_of(t).fpp;
    if (now < prev) break;
    prev = now;
  }
  assert_true(idem_info_of(t).fpp == 0.0);
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 6);
  bk_idem_destroy(t);
}

/* ---- iterate, delete, get ---------------------------------------------------
 */

static void test_iterate_delete_get(void **state) {
  (void)state;
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_NONE};
  for (size_t si = 0; si < 2; si++) {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    bk_idem_config cfg = generous(strats[si], 100, idem_test_seed(0x17));
    cfg.allocator = &al;
    bk_idem *t = idem_make(&cfg);
    /* 3000 keys: past 64 stripes x 8 buckets x 2, so stripes grow. */
    const size_t n = SLOW_BUILD ? 2000 : 3000;
    model m = model_new(n);
    uint64_t rng = idem_test_seed(0x18);
    for (size_t i = 0; i < n; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      int64_t d = (int64_t)(bk_test_next(&rng) % 1000) - 500;
      assert_int_equal(add_ok(t, kb, kl, opid(1, i), d, NULL), BK_IDEM_APPLIED);
      model_apply(&m, i, d);
      if (i % 3 == 0) {
        assert_int_equal(add_ok(t, kb, kl, opid(2, i), 1, NULL),
                         BK_IDEM_APPLIED);
        model_apply(&m, i, 1);
      }
    }
    expect_table(t, &m, "all keys");
    /* An early stop: a nonzero return ends the walk at once. */
    for (uint64_t stop = 1; stop <= 70; stop += 23) {
      walk w;
      memset(&w, 0, sizeof w);
      w.m = &m;
      w.seen = calloc(n, sizeof(unsigned));
      assert_non_null(w.seen);
      w.stop_after = stop;
      assert_bk_ok(bk_idem_iterate(t, walk_cb, &w));
      assert_int_equal(w.visits, stop);
      assert_int_equal(w.twice + w.unknown + w.wrong + w.dead, 0);
      free(w.seen);
    }
    /* Delete every third key. */
    size_t table_before = idem_info_of(t).table_memory;
    for (size_t i = 0; i < n; i += 3) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      model_remove(t, &m, i);
      assert_bk_status(bk_idem_remove(t, kb, kl), BK_ENOTFOUND);
      int64_t v = 12345;
      assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
      assert_int_equal(v, 12345);
    }
    assert_true(idem_info_of(t).table_memory < table_before);
    expect_table(t, &m, "after deletes");
    /* Missing keys, including a prefix and an extension of a stored key. */
    int64_t v;
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(1, kb);
    assert_bk_status(bk_idem_get(t, kb, kl - 1, &v), BK_ENOTFOUND);
    kb[kl] = 0;
    assert_bk_status(bk_idem_get(t, kb, kl + 1, &v), BK_ENOTFOUND);
    assert_bk_status(bk_idem_get(t, "never", 5, &v), BK_ENOTFOUND);
    assert_bk_status(bk_idem_remove(t, "never", 5), BK_ENOTFOUND);
    /* A deleted key comes back at 0. */
    kl = key_of(0, kb);
    assert_int_equal(add_ok(t, kb, kl, opid(3, 0), 4, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 4);
    model_apply(&m, 0, 4);
    /* A retry of an op applied to a since-deleted key: a duplicate with
     * the filter (value 0, and the key is not brought back); NONE applies
     * it. */
    kl = key_of(3, kb);
    bk_idem_outcome oc = add_ok(t, kb, kl, opid(1, 3), 9, &v);
    if (strats[si] == BK_IDEM_NONE) {
      assert_int_equal(oc, BK_IDEM_APPLIED);
      assert_int_equal(v, 9);
      model_apply(&m, 3, 9);
    } else {
      assert_int_equal(oc, BK_IDEM_DUPLICATE);
      assert_int_equal(v, 0);
      assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
    }
    expect_table(t, &m, "after re-adds");
    /* Keys at the length limit, and keys of one byte. */
    unsigned char big[BK_IDEM_KEY_MAX];
    memset(big, 0xAB, sizeof big);
    assert_int_equal(add_ok(t, big, sizeof big, opid(4, 1), 1, &v),
                     BK_IDEM_APPLIED);
    assert_int_equal(get_ok(t, big, sizeof big), 1);
    assert_bk_status(bk_idem_get(t, big, sizeof big - 1, &v), BK_ENOTFOUND);
    assert_int_equal(add_ok(t, "\0", 1, opid(4, 2), 2, &v), BK_IDEM_APPLIED);
    assert_int_equal(add_ok(t, "\1", 1, opid(4, 3), 3, &v), BK_IDEM_APPLIED);
    assert_int_equal(get_ok(t, "\0", 1), 2);
    assert_int_equal(get_ok(t, "\1", 1), 3);
    assert_bk_ok(bk_idem_remove(t, big, sizeof big));
    assert_bk_ok(bk_idem_remove(t, "\0", 1));
    assert_bk_ok(bk_idem_remove(t, "\1", 1));
    expect_table(t, &m, "final");
    /* Delete everything: iterate visits nothing. */
    for (size_t i = 0; i < n; i++) {
      if (!m.live[i]) continue;
      kl = key_of(i, kb);
      assert_bk_ok(bk_idem_remove(t, kb, kl));
      m.live[i] = 0;
    }
    expect_table(t, &m, "empty");
    bk_idem_destroy(t);
    assert_int_equal(st.live, 0);
    model_free(&m);
  }
}

/* int64 overflow: BK_ERANGE, the table unchanged and the op not recorded,
 * so the same op id with a valid delta applies afterwards. */
static void test_overflow(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    bk_idem_config cfg = generous(strat, 1000, idem_test_seed(0x0F));
    bk_idem *t = idem_make(&cfg);
    int64_t v = 0;
    bk_idem_outcome oc;
    assert_int_equal(ADD(t, "hi", 1, 1, INT64_MAX - 5, &v), BK_IDEM_APPLIED);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 2), 6, &v, &oc),
                     BK_ERANGE);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 2), INT64_MAX, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(GET(t, "hi"), INT64_MAX - 5);
    bk_idem_info in = idem_info_of(t);
    assert_int_equal(in.applied, 1);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 1);
    /* The refused op id was not recorded. */
    assert_int_equal(ADD(t, "hi", 1, 2, 5, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 3), 1, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(ADD(t, "hi", 1, 3, -1, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX - 1);

    /* The negative end. */
    assert_int_equal(ADD(t, "lo", 1, 4, INT64_MIN, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MIN);
    assert_bk_status(bk_idem_add(t, "lo", 2, opid(1, 5), -1, &v, &oc),
                     BK_ERANGE);
    assert_bk_status(bk_idem_add(t, "lo", 2, opid(1, 5), INT64_MIN, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(GET(t, "lo"), INT64_MIN);
    assert_int_equal(ADD(t, "lo", 1, 5, 0, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MIN);
    assert_int_equal(ADD(t, "lo", 1, 6, INT64_MAX, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, -1);
    in = idem_info_of(t);
    assert_int_equal(in.applied, 6);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 2);
    bk_idem_destroy(t);
  }
}

/* ---- regressions of bugs this file found
 * ---------------------------------------
 *
 * Found in src/fbf/idem.c at 2e408c3 and fixed in 893fc71.
 *
 * bk_idem_add checked for int64 overflow of current + delta BEFORE asking
 * the filter whether the op had been applied: a retry of an applied op
 * whose delta no longer fits (the original took the counter to the limit)
 * was answered BK_ERANGE ("nothing is applied or recorded") instead of
 * DUPLICATE with the current value, although the op WAS applied. */
static void test_overflowing_retry_is_duplicate(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(FILTERING); si++) {
    bk_idem_strategy strat = FILTERING[si];
    bk_idem_config cfg = generous(strat, 1000, idem_test_seed(0xB1));
    bk_idem *t = idem_make(&cfg);
    int64_t v = 0;
    bk_idem_outcome oc = (bk_idem_outcome)0;
    assert_int_equal(ADD(t, "k", 1, 1, INT64_MAX - 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "k", 1, 2, 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX);
    /* The client's retry of op (1, 2). */
    bk_status s = bk_idem_add(t, "k", 1, opid(1, 2), 10, &v, &oc);
    bool hi_ok = s == BK_OK && oc == BK_IDEM_DUPLICATE && v == INT64_MAX;
    /* Same at the negative end. */
    assert_int_equal(ADD(t, "n", 1, 3, INT64_MIN + 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "n", 1, 4, -10, &v), BK_IDEM_APPLIED);
    bk_status s2 = bk_idem_add(t, "n", 1, opid(1, 4), -10, &v, &oc);
    bool lo_ok = s2 == BK_OK && oc == BK_IDEM_DUPLICATE && v == INT64_MIN;
    bk_idem_destroy(t);
    if (!hi_ok || !lo_ok)
      fail_msg(
          "%s: retry of an applied op near INT64_MAX: %s, near "
          "INT64_MIN: %s (expected BK_OK and DUPLICATE with the "
          "current value)",
          strat_name(strat), bk_status_name(s), bk_status_name(s2));
  }
}

/* Advancing an FBF_ADAPTIVE table over a long idle gap is cheap, as for
 * the fixed FBF (a table restored from an old snapshot, or a first advance
 * with an absolute clock: start_time defaults to 0). Before 75d6701 every
 * adaptation tick and refresh ran one by one, O(gap / interval) under the
 * FBF's mutex: ~0.6 s for 2e7 units at T = 30, hours for epoch
 * milliseconds, forever for UINT64_MAX / 2. */
static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_adaptive_advance_long_gap(void **state) {
  (void)state;
#if defined(__OPTIMIZE__)
  const uint64_t gap = 20000000;
#else
  const uint64_t gap = 4000000;
#endif
  double took[2];
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE};
  for (size_t i = 0; i < 2; i++) {
    bk_idem_config cfg = {.strategy = strats[i],
                          .retry_timeout = 30,
                          .m_bits = 4096,
                          .k = 3,
                          .adapt_interval = 1,
                          .period_step = 1};
    bk_idem *t = idem_make(&cfg);
    int64_t v;
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    double a = seconds_now();
    assert_bk_ok(bk_idem_advance(t, gap));
    took[i] = seconds_now() - a;
    /* Forgotten after the gap, either way; remembered again. */
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_DUPLICATE);
    /* Even to the far end of time. */
    a = seconds_now();
    assert_bk_ok(bk_idem_advance(t, UINT64_MAX / 2));
    took[i] += seconds_now() - a;
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 3);
    bk_idem_destroy(t);
  }
  print_message(
      "advance over %llu idle units then to 2^63: FBF %.6f s, "
      "FBF_ADAPTIVE %.6f s\n",
      (unsigned long long)gap, took[0], took[1]);
  /* Generous for sanitizers; the linear version took 0.25-0.6 s. */
  assert_true(took[0] < 0.1);
  if (took[1] >= 0.1)
    fail_msg(
        "FBF_ADAPTIVE: advancing over %llu idle units took %.3f s "
        "(FBF: %.6f s)",
        (unsigned long long)gap, took[1], took[0]);
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_basics),
      cmocka_unit_test(test_retry_storm),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_rbf_forgets_at_recycle),
      cmocka_unit_test(test_iterate_delete_get),
      cmocka_unit_test(test_overflow),
      cmocka_unit_test(test_overflowing_retry_is_duplicate),
      cmocka_unit_test(test_adaptive_advance_long_gap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
