/* SPDX-License-Identifier: MIT */
/*
 * bk_idem under a multi-threaded retry storm, per strategy: 4 writer
 * threads, 64 clients each numbering their ops in order, 30 % of ops
 * retried 1-4 times (each retry at most T/2 after the op's first delivery,
 * so within the retry timeout T of its apply), a snapshot restored
 * mid-stream and the last deliveries before it replayed, and (second run)
 * 5 % of clients (busy ones: a quarter of all ops) holding a quarter of
 * their ops back by W to 2 W of their own later ops (more than W in
 * flight: below the window).
 *
 * Counted per op: how often it was applied (twice = a retry re-applied) and
 * whether it never was although delivered (a genuine update dropped as a
 * duplicate; WINDOW's TOO_OLD answers are counted apart: refused, not
 * silent). Asserted: no strategy re-applies a retry; HYBRID and WINDOW drop
 * no update of an in-order client; with the lagging clients HYBRID drops at
 * most what its FBF's estimated fpp allows on the ops that went below a
 * window (mean + 6 sigma + 3), and the counters sum to the ops applied.
 *
 * Time runs in rounds: each writer makes ROUND actions (a due retry, else
 * a new op), all wait at a barrier, and the clock moves on by the round's
 * ops / OPS_PER_TU units; so the table's clock during a delivery is the
 * round's, whatever the scheduler does to the threads, and every retry
 * meets the clients' contract exactly.
 *
 * BK_STORM_OPS (default 240000, 40000 in slow builds) sets the ops of a
 * run; docs/results.md reports a run of 10^7.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"

#include "idem_helpers.h"

#define THREADS 4u
#define CLIENTS 64u /* per thread */
#define KEYS 1024u
#define T 5000u      /* retry timeout, time units */
#define OPS_PER_TU 4 /* global ops per time unit */
#define HEAP_MAX 65536u
#define ROUND 256u   /* actions per writer between clock steps */
#define HELD_MAX 64u /* ops a lagging client holds back at most */

typedef struct pending {
  uint64_t due;      /* time unit */
  uint64_t deadline; /* the client gives up after this time unit */
  uint64_t op;       /* global op index */
} pending;

typedef struct storm {
  bk_idem *_Atomic t;
  bk_idem_strategy strategy;
  bool lagging;
  uint64_t per_thread;
  _Atomic uint64_t sent;   /* deliveries, all threads */
  _Atomic uint64_t now;    /* the clock: moved between rounds only */
  _Atomic unsigned active; /* writers not finished */
  bool go_on; /* set by writer 0 between the two barriers of a round */
  _Atomic uint8_t *applied;
  _Atomic uint8_t *refused; /* answered TOO_OLD at least once */
  _Atomic uint64_t errors, twice;
  pthread_barrier_t bar;
  unsigned char *snapshot;
  size_t snapshot_len;
} storm;

typedef struct writer {
  storm *s;
  unsigned tid;
  uint64_t rng;
  uint64_t next_seq[CLIENTS];
  pending heap[HEAP_MAX];
  size_t n_heap;
  /* held back ops of lagging clients: released after `release` more of
   * their client's ops */
  uint64_t held_op[CLIENTS][HELD_MAX], held_release[CLIENTS][HELD_MAX];
  unsigned n_held[CLIENTS];
  uint64_t recent[1024]; /* the last deliveries, for the replay */
  uint64_t n_recent;
  bool finished, replayed;
} writer;

static uint64_t round_of(storm *s) {
  return atomic_load(&s->now) / (ROUND * THREADS / OPS_PER_TU);
}

static void heap_push(writer *w, pending p) {
  if (w->n_heap == HEAP_MAX) return; /* full: the retry is lost */
  size_t i = w->n_heap++;
  while (i && w->heap[(i - 1) / 2].due > p.due) {
    w->heap[i] = w->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  w->heap[i] = p;
}

static pending heap_pop(writer *w) {
  pending top = w->heap[0], last = w->heap[--w->n_heap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= w->n_heap) break;
    if (c + 1 < w->n_heap && w->heap[c + 1].due < w->heap[c].due) c++;
    if (w->heap[c].due >= last.due) break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  if (w->n_heap) w->heap[i] = last;
  return top;
}

/* Op index -> its id and key: the thread, the client and seq are encoded
 * in the index (per thread, ops numbered per client). */
static bk_idem_op_id op_id(uint64_t op) {
  uint64_t client = op >> 32, seq = op & 0xFFFFFFFFu;
  return opid(client, seq);
}

/* Each client's ops get a range of slots: twice its mean share and some
 * (the share of one of 64 clients is binomial: far below that). */
static uint64_t per_client(const storm *s) {
  return 2 * (s->per_thread / CLIENTS) + 1024;
}

static uint64_t op_slot(const storm *s, uint64_t op) {
  uint64_t client = (op >> 32) - 1, seq = op & 0xFFFFFFFFu;
  return client * per_client(s) + seq;
}

static bool lags(uint64_t client) {
  return client % 20 == 0;
}

static void deliver(writer *w, uint64_t op, bool first) {
  storm *s = w->s;
  bk_idem *t = atomic_load(&s->t);
  bk_idem_op_id id = op_id(op);
  unsigned char kb[8];
  uint64_t key = (op * 0x9E3779B97F4A7C15ull) % KEYS;
  memcpy(kb, &key, 8);
  int64_t v;
  bk_idem_outcome oc;
  if (bk_idem_add(t, kb, 8, id, 1, &v, &oc) != BK_OK) {
    atomic_fetch_add(&s->errors, 1);
    return;
  }
  uint64_t slot = op_slot(s, op);
  if (oc == BK_IDEM_APPLIED) {
    if (atomic_fetch_add(&s->applied[slot], 1) != 0)
      atomic_fetch_add(&s->twice, 1);
  } else if (oc == BK_IDEM_TOO_OLD) {
    atomic_store(&s->refused[slot], 1);
  }
  w->recent[w->n_recent++ % 1024] = op;
  atomic_fetch_add(&s->sent, 1);
  /* 30 % of first deliveries lose their ack: 1-4 retries, each within
   * T/2 of now. */
  if (first && bk_test_next(&w->rng) % 10 < 3) {
    uint64_t now = atomic_load(&s->now);
    unsigned n = 1 + (unsigned)(bk_test_next(&w->rng) % 4);
    for (unsigned i = 0; i < n; i++)
      heap_push(
          w, (pending){now + 1 + bk_test_next(&w->rng) % (T / 2), now + T, op});
  }
}

/* One action: a due retry (dropped if the client gave up on it), else a
 * new op (maybe held back); false when the writer has made all its ops. */
static bool act(writer *w, uint64_t *made) {
  storm *s = w->s;
  uint64_t now = atomic_load(&s->now);
  if (w->n_heap && w->heap[0].due <= now) {
    pending due = heap_pop(w);
    if (now <= due.deadline) deliver(w, due.op, false);
    return true;
  }
  if (*made >= s->per_thread) return false;
  unsigned c = (unsigned)(bk_test_next(&w->rng) % CLIENTS);
  if (s->lagging && bk_test_next(&w->rng) % 4 == 0) {
    /* The lagging clients are busy ones: a quarter of the ops, so even a
     * short run sends each of them more than 2 W. */
    unsigned n = 0, pick[CLIENTS];
    for (unsigned i = 0; i < CLIENTS; i++)
      if (lags(1 + w->tid * CLIENTS + i)) pick[n++] = i;
    if (n) c = pick[bk_test_next(&w->rng) % n];
  }
  uint64_t client = 1 + w->tid * CLIENTS + c;
  if (w->next_seq[c] >= per_client(s)) return true; /* (never in practice) */
  uint64_t op = client << 32 | w->next_seq[c]++;
  ++*made;
  bool late = false;
  if (s->lagging && lags(client)) {
    /* Release the held ops that are due, then maybe hold this one. */
    for (unsigned h = 0; h < w->n_held[c];) {
      if (w->held_release[c][h] <= w->next_seq[c]) {
        deliver(w, w->held_op[c][h], true);
        w->held_op[c][h] = w->held_op[c][w->n_held[c] - 1];
        w->held_release[c][h] = w->held_release[c][--w->n_held[c]];
      } else {
        h++;
      }
    }
    if (w->n_held[c] < HELD_MAX && bk_test_next(&w->rng) % 4 == 0) {
      unsigned W = BK_IDEM_WINDOW_DEFAULT;
      w->held_op[c][w->n_held[c]] = op;
      w->held_release[c][w->n_held[c]++] =
          w->next_seq[c] + W + bk_test_next(&w->rng) % W;
      late = true;
    }
  }
  if (!late) deliver(w, op, true);
  return true;
}

/* Mid-stream: writer 0 restores a snapshot; every writer then replays its
 * last deliveries (a host's log). Called between two barriers. */
static void restore(storm *s) {
  bk_idem *t = atomic_load(&s->t), *r = NULL;
  size_t cap = 0, len = 0;
  if (bk_idem_serialized_size(t, &cap) != BK_OK ||
      !(s->snapshot = malloc(cap)) ||
      bk_idem_serialize(t, s->snapshot, cap, &len) != BK_OK ||
      bk_idem_deserialize(s->snapshot, len, NULL, &r) != BK_OK) {
    atomic_fetch_add(&s->errors, 1);
    return;
  }
  s->snapshot_len = len;
  atomic_store(&s->t, r);
  bk_idem_destroy(t);
}

static void *writer_main(void *p) {
  writer *w = p;
  storm *s = w->s;
  uint64_t made = 0, round = 0;
  const uint64_t restore_round = s->per_thread / ROUND / 2;
  bool done = false;
  for (;;) {
    for (unsigned i = 0; i < ROUND && !done; i++) done = !act(w, &made);
    if (done && !w->finished) {
      w->finished = true;
      atomic_fetch_sub(&s->active, 1);
    }
    pthread_barrier_wait(&s->bar);
    if (w->tid == 0) {
      /* Decided here, read by all after the next barrier: every writer
       * leaves in the same round. */
      s->go_on = atomic_load(&s->active) > 0;
      if (++round == restore_round) restore(s);
      uint64_t now = atomic_load(&s->now) + ROUND * THREADS / OPS_PER_TU;
      atomic_store(&s->now, now);
      if (bk_idem_advance(atomic_load(&s->t), now) != BK_OK)
        atomic_fetch_add(&s->errors, 1);
    }
    pthread_barrier_wait(&s->bar);
    if (!s->go_on) break;
    if (!w->replayed && round_of(s) > restore_round) {
      w->replayed = true;
      uint64_t n = w->n_recent < 1024 ? w->n_recent : 1024;
      for (uint64_t i = 0; i < n; i++) deliver(w, w->recent[i], false);
    }
  }
  return NULL;
}

typedef struct result {
  uint64_t ops, applied, dropped_in_order, dropped_lagging, refused;
  bk_idem_info info;
} result;

static result run(bk_idem_strategy strategy, bool lagging, uint64_t ops) {
  storm *s = calloc(1, sizeof *s);
  assert_non_null(s);
  s->strategy = strategy;
  s->lagging = lagging;
  s->per_thread = ops / THREADS;
  uint64_t slots = THREADS * CLIENTS * per_client(s);
  s->applied = calloc(slots, 1);
  s->refused = calloc(slots, 1);
  assert_non_null(s->applied);
  assert_non_null(s->refused);
  bk_idem_config cfg = {.strategy = strategy,
                        .retry_timeout = T,
                        /* the FBF sized for the ops of a period (t = T/3)
                         * at the default fpp, 0.001 */
                        .ops_per_period = T * OPS_PER_TU / 3,
                        .seed = idem_test_seed(0x570 + (uint64_t)strategy)};
  atomic_store(&s->t, idem_make(&cfg));
  atomic_store(&s->active, THREADS);
  assert_int_equal(pthread_barrier_init(&s->bar, NULL, THREADS), 0);
  writer *w = calloc(THREADS, sizeof *w);
  assert_non_null(w);
  pthread_t th[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    w[i].s = s;
    w[i].tid = i;
    w[i].rng = idem_test_seed(0x5700 + i);
    assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
  }
  for (unsigned i = 0; i < THREADS; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
  assert_int_equal(atomic_load(&s->errors), 0);
  result r = {.ops = ops};
  bk_idem *t = atomic_load(&s->t);
  r.info = idem_info_of(t);
  /* Every op made was delivered at least once, except held ops never
   * released (the run ended first): those count as neither. */
  for (unsigned i = 0; i < THREADS; i++)
    for (unsigned c = 0; c < CLIENTS; c++)
      for (unsigned h = 0; h < w[i].n_held[c]; h++)
        s->refused[op_slot(s, w[i].held_op[c][h])] = 2;
  for (unsigned i = 0; i < THREADS; i++)
    for (unsigned c = 0; c < CLIENTS; c++) {
      uint64_t client = 1 + i * CLIENTS + c;
      for (uint64_t q = 0; q < w[i].next_seq[c]; q++) {
        uint64_t slot = op_slot(s, client << 32 | q);
        uint8_t a = atomic_load(&s->applied[slot]);
        uint8_t f = atomic_load(&s->refused[slot]);
        r.applied += a;
        if (a == 0 && f == 1) r.refused++;
        if (a == 0 && f == 0) {
          if (lagging && lags(client))
            r.dropped_lagging++;
          else
            r.dropped_in_order++;
        }
      }
    }
  /* The counters hold exactly the ops applied. */
  int64_t sum = 0;
  for (uint64_t k = 0; k < KEYS; k++) {
    unsigned char kb[8];
    memcpy(kb, &k, 8);
    int64_t v;
    if (bk_idem_get(t, kb, 8, &v) == BK_OK) sum += v;
  }
  assert_int_equal(sum, (int64_t)r.applied);
  assert_int_equal(atomic_load(&s->twice), 0);
  print_message(
      "  %-12s %s: %llu ops, %llu deliveries, %llu applied, 0 re-applied, "
      "dropped %llu in order / %llu lagging, %llu refused (TOO_OLD), %llu "
      "below a window, %llu slid to the FBF, fpp est %.2g, filter %zu "
      "bytes\n",
      strat_name(strategy), lagging ? "5% lagging" : "in order",
      (unsigned long long)ops, (unsigned long long)atomic_load(&s->sent),
      (unsigned long long)r.applied, (unsigned long long)r.dropped_in_order,
      (unsigned long long)r.dropped_lagging, (unsigned long long)r.refused,
      (unsigned long long)r.info.below_window,
      (unsigned long long)r.info.slid_to_filter, r.info.fpp,
      r.info.filter_memory);
  pthread_barrier_destroy(&s->bar);
  bk_idem_destroy(t);
  free(s->snapshot);
  free((void *)s->applied);
  free((void *)s->refused);
  free(s);
  free(w);
  return r;
}

static uint64_t storm_ops(void) {
  const char *e = getenv("BK_STORM_OPS");
  uint64_t n = e && *e ? strtoull(e, NULL, 10) : 0;
  if (n < THREADS * 1000) n = SLOW_BUILD || TSAN_BUILD ? 40000 : 240000;
  return n;
}

static void test_storm_in_order(void **state) {
  (void)state;
  const uint64_t ops = storm_ops();
  const bk_idem_strategy ss[] = {BK_IDEM_HYBRID, BK_IDEM_WINDOW, BK_IDEM_FBF,
                                 BK_IDEM_APBF};
  for (size_t i = 0; i < COUNT(ss); i++) {
    result r = run(ss[i], false, ops);
    if (ss[i] == BK_IDEM_HYBRID || ss[i] == BK_IDEM_WINDOW) {
      /* exact for in-order clients */
      assert_int_equal(r.dropped_in_order, 0);
      assert_int_equal(r.refused, 0);
      assert_int_equal(r.info.below_window, 0);
    }
  }
}

static void test_storm_lagging(void **state) {
  (void)state;
  const uint64_t ops = storm_ops();
  const bk_idem_strategy ss[] = {BK_IDEM_HYBRID, BK_IDEM_WINDOW, BK_IDEM_FBF,
                                 BK_IDEM_APBF};
  for (size_t i = 0; i < COUNT(ss); i++) {
    result r = run(ss[i], true, ops);
    if (ss[i] == BK_IDEM_FBF || ss[i] == BK_IDEM_APBF) continue;
    assert_int_equal(r.dropped_in_order, 0);
    assert_true(r.info.below_window > 0);
    if (ss[i] == BK_IDEM_WINDOW) {
      assert_int_equal(r.dropped_lagging, 0); /* refused, never silent */
      assert_true(r.refused > 0);
    } else {
      /* Only ops below a window meet the FBF, at its fpp (its estimate
       * at the end, doubled for the fill's variation). */
      double mu = 2 * r.info.fpp * (double)r.info.below_window;
      assert_true((double)r.dropped_lagging <= mu + 6 * sqrt(mu) + 3);
      assert_int_equal(r.refused, 0);
    }
  }
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_storm_in_order),
      cmocka_unit_test(test_storm_lagging),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
