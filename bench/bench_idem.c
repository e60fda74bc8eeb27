/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_idem, the table of idempotent counters, with strategy FBF
 * against the same table with strategy NONE (vanilla counters) measured in
 * the same run, and the targets for them.
 *
 * Tables. Both hold N_KEYS (1,000,000) counters keyed by 8-byte integers
 * i in [0, N_KEYS) (native byte order), created first (every key added once,
 * by two threads), with expected_keys = N_KEYS. The FBF table's filter has
 * N = 2 past filters, k = 7 and m = 64 Mi * 8 / (N + 2) = 134217728 bits per
 * constituent filter, so its N + 2 = 4 filters fill FILTER_MIB (64) MiB of
 * lanes. --bk_quick: 16384 keys and 1 MiB of lanes.
 *
 * Time and fill. The clock is simulated and counts adds: one add is one time
 * unit. The refresh period is P adds, where P is the design rate of the
 * filter: a constituent filter holds two periods' inserts, and 2P is the
 * most ids a filter of m bits and k = 7 holds at fpp DESIGN_FPP (0.001, the
 * table's default target; bk_params_fpp), P = 4.47 M adds at 64 MiB. The
 * retry timeout is (N + 1) P, so the table's window covers it exactly. After
 * creating the keys, the FBF table is driven with random adds (two threads)
 * to (N + 1) P + P / 2 adds: after N + 1 refreshes the oldest filter is the
 * first future, so every filter holds what it holds in steady state halfway
 * through a period (future first: P/2, 3P/2, 2P, 2P ids). Every
 * benchmark then keeps adding at that rate and advances the clock by the
 * adds it made (bk_idem_advance), so refreshes happen every P adds and the
 * fill stays at steady state; est_fpp reports the table's estimated fpp
 * (bk_idem_info.fpp) after each run, and new_rate the fraction of adds
 * applied (1 - new_rate: fresh ids taken for duplicates, the measured fpp).
 *
 * Every add carries a fresh op id (a client id of the benchmark's own, and
 * the next sequence number) and adds 1 to a key drawn uniformly (the
 * fixture's bk_fx_present_key), so no add is a genuine duplicate. The
 * benchmarks, in run order (groups "idem 1M keys" and "idem 1M keys 2
 * threads"):
 *
 *   none/add, fbf_64MiB_N2/add
 *       single-thread adds, keys uniform over all N_KEYS. The clock advances
 *       by each batch of adds (up to 1024) inside the timed loop, so the
 *       FBF's refreshes (a sweep of the 64 MiB of lanes every P adds) are
 *       paid in the add time, amortized; `refreshes` counts those that fell
 *       in the reported run. Baseline: none.
 *   none/add_many64, none/add_many256, hybrid_w256/add_many.., fbf_.../
 *   add_many..
 *       the same op stream (fresh ids, uniform keys and clients) through
 *       bk_idem_add_many in calls of 64 or 256 ops, ns per op; run right
 *       after the single adds, so each strategy's many/single ratio and
 *       hybrid_many / none_many come from one run.
 *   none/add_2threads, fbf_64MiB_N2/add_2threads
 *       scaling. Each round runs a 2-thread phase, then a 1-thread phase,
 *       each of ROUND_OPS (16384) adds per thread, and times both with the
 *       wall clock: 2 threads (the benchmark's thread and one helper kept
 *       for the run), thread j adding to keys i = j mod 2 (different keys:
 *       the threads never share a counter, but do share the table's stripes
 *       and the filter), both released together and timed until both are
 *       done; then 1 thread adding to keys uniform over all N_KEYS, the same
 *       key footprint as the 2-thread phase. speedup_2t = (adds/s with 2
 *       threads) / (adds/s with 1 thread) over all rounds of the run;
 *       inv_speedup = 1 / speedup_2t, the value the target bounds. Only the
 *       2-thread phases are timed for the table (ns/op: per add, over both
 *       threads: real ns/op = 1 / the 2-thread throughput; CPU ns/op counts
 *       the benchmark's thread only, and not the time it sleeps in a lock
 *       the helper holds, so it can be well below real). The clock
 *       advances between phases, untimed, as a refresh thread of its own
 *       would do it (bk_fbf_timer), so the refreshes do not land in one
 *       phase or the other by chance.
 *       The machine is shared: what two threads can gain depends on what
 *       else runs. Each round therefore also runs a reference workload,
 *       untimed for the table, the same way (2 threads, then 1): chains of
 *       dependent random reads of a buffer as large as the lanes (64 MiB),
 *       REF_PER_ADD (2) reads per add, each index mixing in the value just
 *       read, as a hash table lookup's misses are chained. ref_speedup_2t is
 *       its 2-thread speedup over the same rounds: about 2.0 when both cores
 *       were free, about 1.0 when another process held one. Read
 *       speedup_2t against it.
 */
#define _GNU_SOURCE /* sched_yield */

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benches.h"
#include "bloomkit/idem.h"
#include "bloomkit/params.h"
#include "fixture.h"

#define N_KEYS UINT64_C(1000000)
#define QUICK_KEYS UINT64_C(16384)
#define FILTER_MIB 64u      /* lanes of the FBF */
#define QUICK_FILTER_MIB 1u /* --bk_quick */
#define N_PAST 2u
#define DESIGN_K 7u
#define DESIGN_FPP 0.001 /* per filter holding two periods' inserts */
#define MIN_TIME 1.0     /* seconds per single-thread benchmark */
#define MIN_TIME_2T 0.75 /* seconds of 2-thread phases (timed part) */
#define ROUND_OPS 16384u /* adds per thread per phase, 2-thread rounds */
#define QUICK_ROUND_OPS 1024u
#define FILL_OPS 65536u /* adds per thread per phase while filling */
#define QUICK_FILL_OPS 4096u
#define REF_PER_ADD 2u /* reference reads per add, 2-thread rounds */
#define ACTIVE_CLIENTS UINT64_C(100000) /* clients sending ops */
#define QUICK_ACTIVE_CLIENTS UINT64_C(1000)
#define BUSY_CLIENTS UINT64_C(100) /* the slide-out case's clients */
#define WINDOW 256u                /* W of the hybrid tables */
#define ADD_LIMIT 1.5              /* fbf add / none add */
#define HYBRID_LIMIT 1.2           /* hybrid add / none add */
#define SPEEDUP_MIN 1.6            /* 2-thread / 1-thread throughput */

/* A spin-wait step: pause, and yield once the wait gets long (the machine
 * may have fewer free cores than spinning threads). */
static inline void relax(unsigned *spins) {
  if (++*spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

/* ---- the tables ---------------------------------------------------------- */

typedef enum strategy_case {
  CASE_NONE,
  CASE_FBF,
  CASE_HYBRID,
  CASE_HYBRID_BUSY,
  N_CASES
} strategy_case;

typedef struct idem_case {
  bk_idem_strategy strategy;
  const char *name; /* in benchmark names */
  bk_idem *t;
  uint64_t clock;     /* adds made so far: the simulated time */
  uint64_t n_clients; /* active clients: ids 1 .. n_clients */
  uint64_t *seqs;     /* each client's next seq */
  bk_fx_setup setup;
} idem_case;

static idem_case cases[N_CASES] = {
    [CASE_NONE] = {.strategy = BK_IDEM_NONE, .name = "none"},
    [CASE_FBF] = {.strategy = BK_IDEM_FBF},
    [CASE_HYBRID] = {.strategy = BK_IDEM_HYBRID, .name = "hybrid_w256"},
    [CASE_HYBRID_BUSY] = {.strategy = BK_IDEM_HYBRID,
                          .name = "hybrid_w256_busy100"},
};
static uint64_t n_active = ACTIVE_CLIENTS;
static char fbf_name[32];
static char keys_label[24]; /* "1M", "16Ki" */
static uint64_t n_keys = N_KEYS;
static uint64_t filter_mib = FILTER_MIB;
static uint64_t m_bits; /* per constituent filter */
static uint64_t period; /* P: adds per refresh period */
static uint64_t round_ops = ROUND_OPS, fill_ops = FILL_OPS;

static bool fail(idem_case *ic, bk_bench_state *st, const char *what,
                 bk_status s) {
  return bk_fx_fail(&ic->setup, st, "%s: %s", what, bk_strerror(s));
}

/* ---- workers: one thread's adds ------------------------------------------ */

typedef struct worker {
  _Alignas(64) bk_idem *t;
  /* op ids: client = client_base + r for r uniform in [0, n_clients),
   * seq = that client's next (seqs[r]++): clients number in order */
  uint64_t client_base, n_clients;
  uint64_t *seqs;
  uint64_t rng;
  /* keys offset + stride r, r in [0, count) */
  uint64_t offset, stride, count;
  uint64_t applied; /* adds applied (not taken for duplicates) */
  int bad;          /* an add failed */
  uint64_t ref_x;   /* the reference workload's last value */
} worker;

static uint64_t worker_streams; /* each worker its own random stream */

/* A worker adding to keys offset + stride r, as clients [first, first + n)
 * of the case's active clients. */
static worker new_worker(idem_case *ic, uint64_t offset, uint64_t stride,
                         uint64_t first, uint64_t n) {
  worker w;
  memset(&w, 0, sizeof w);
  w.t = ic->t;
  w.client_base = 1 + first;
  w.n_clients = n;
  w.seqs = ic->seqs + first;
  w.rng = bk_fx_stream(((uint64_t)ic->strategy << 32) ^ ++worker_streams);
  w.offset = offset;
  w.stride = stride;
  w.count = (n_keys - offset + stride - 1) / stride;
  return w;
}

/* `ops` adds of 1 to uniformly drawn keys, each with a fresh op id of a
 * uniformly drawn client. */
BK_FX_INLINE void worker_add(worker *w, uint64_t ops) {
  bk_idem *t = w->t;
  const uint64_t offset = w->offset, stride = w->stride, count = w->count;
  const uint64_t base = w->client_base, n_clients = w->n_clients;
  uint64_t *seqs = w->seqs;
  uint64_t state = w->rng, applied = 0;
  int bad = 0;
  for (uint64_t i = 0; i < ops; i++) {
    uint64_t key = offset + stride * bk_fx_present_key(&state, count);
    uint64_t c = bk_reduce(bk_fx_next(&state), n_clients);
    bk_idem_op_id id = {base + c, seqs[c]++};
    bk_idem_outcome outcome = BK_IDEM_DUPLICATE;
    bad |= bk_idem_add(t, &key, sizeof key, id, 1, NULL, &outcome) != BK_OK;
    applied += outcome == BK_IDEM_APPLIED;
  }
  w->rng = state;
  w->applied += applied;
  w->bad |= bad;
}

/* The same op stream as worker_add, `ops` (a multiple of `batch`) adds in
 * calls of bk_idem_add_many of `batch` ops each (at most MANY_MAX). */
#define MANY_MAX 256u
BK_FX_INLINE void worker_add_many(worker *w, uint64_t ops, size_t batch) {
  bk_idem *t = w->t;
  const uint64_t offset = w->offset, stride = w->stride, count = w->count;
  const uint64_t base = w->client_base, n_clients = w->n_clients;
  uint64_t *seqs = w->seqs;
  uint64_t state = w->rng, applied = 0;
  uint64_t keys[MANY_MAX];
  const void *ptrs[MANY_MAX];
  size_t lens[MANY_MAX];
  bk_idem_op_id ids[MANY_MAX];
  bk_idem_outcome outcomes[MANY_MAX];
  for (size_t j = 0; j < batch; j++) {
    ptrs[j] = &keys[j];
    lens[j] = sizeof keys[j];
  }
  int bad = 0;
  for (uint64_t i = 0; i < ops; i += batch) {
    for (size_t j = 0; j < batch; j++) {
      keys[j] = offset + stride * bk_fx_present_key(&state, count);
      uint64_t c = bk_reduce(bk_fx_next(&state), n_clients);
      ids[j] = (bk_idem_op_id){base + c, seqs[c]++};
    }
    bad |= bk_idem_add_many(t, ptrs, lens, ids, NULL, batch, NULL, outcomes,
                            NULL, NULL) != BK_OK;
    for (size_t j = 0; j < batch; j++)
      applied += outcomes[j] == BK_IDEM_APPLIED;
  }
  w->rng = state;
  w->applied += applied;
  w->bad |= bad;
}

/* Create every key of the worker's share (one add each). */
static void worker_create(worker *w) {
  for (uint64_t r = 0; r < w->count; r++) {
    uint64_t key = w->offset + w->stride * r;
    uint64_t c = r % w->n_clients;
    bk_idem_op_id id = {w->client_base + c, w->seqs[c]++};
    bk_idem_outcome outcome = BK_IDEM_DUPLICATE;
    w->bad |=
        bk_idem_add(w->t, &key, sizeof key, id, 1, NULL, &outcome) != BK_OK;
    w->applied += outcome == BK_IDEM_APPLIED;
  }
}

/* The reference workload: `ops` dependent random reads of ref_buf, each
 * index mixing the previous value in (a chain of cache misses, as a hash
 * table lookup is). */
static uint64_t *ref_buf;
static uint64_t ref_words;

static void worker_ref(worker *w, uint64_t ops) {
  const uint64_t *buf = ref_buf, words = ref_words;
  uint64_t state = w->rng, x = w->ref_x;
  for (uint64_t i = 0; i < ops; i++)
    x = buf[bk_reduce(bk_fx_next(&state) ^ x, words)];
  w->rng = state;
  w->ref_x = x;
  bk_bench_sink_u64(x);
}

typedef enum task { TASK_ADD, TASK_CREATE, TASK_REF } task;

static void worker_do(worker *w, task what, uint64_t ops) {
  switch (what) {
    case TASK_ADD:
      worker_add(w, ops);
      break;
    case TASK_CREATE:
      worker_create(w);
      break;
    case TASK_REF:
      worker_ref(w, ops);
      break;
  }
}

/* ---- a team: the benchmark's thread and one helper ----------------------- *
 *
 * The helper sleeps on a condition variable between phases (so it does not
 * hold a core while the benchmark's thread works alone). A phase wakes it,
 * waits until it is running, then releases both threads at once and times
 * from the release until both are done. */

typedef struct team {
  worker w[2]; /* w[j]: thread j (0: the benchmark's thread) */
  pthread_t thread;
  bool running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t go;  /* phases requested (under mu) */
  bool quit;    /* under mu */
  uint64_t ops; /* adds (or reads) per thread this phase (under mu) */
  task what;    /* this phase's work (under mu) */
  _Alignas(64) uint64_t arrived; /* atomics: the helper's phase number */
  uint64_t start, done;
} team;

static void *helper_main(void *p) {
  team *tm = p;
  uint64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&tm->mu);
    while (tm->go == seen && !tm->quit) pthread_cond_wait(&tm->cv, &tm->mu);
    if (tm->quit) {
      pthread_mutex_unlock(&tm->mu);
      return NULL;
    }
    seen = tm->go;
    uint64_t ops = tm->ops;
    task what = tm->what;
    pthread_mutex_unlock(&tm->mu);
    __atomic_store_n(&tm->arrived, seen, __ATOMIC_RELEASE);
    for (unsigned spins = 0;
         __atomic_load_n(&tm->start, __ATOMIC_ACQUIRE) != seen;)
      relax(&spins);
    worker_do(&tm->w[1], what, ops);
    __atomic_store_n(&tm->done, seen, __ATOMIC_RELEASE);
  }
}

/* Thread j works on keys i = j mod 2, as half the active clients. */
static bool team_start(team *tm, idem_case *ic) {
  memset(tm, 0, sizeof *tm);
  uint64_t half = ic->n_clients / 2;
  tm->w[0] = new_worker(ic, 0, 2, 0, half);
  tm->w[1] = new_worker(ic, 1, 2, half, ic->n_clients - half);
  if (pthread_mutex_init(&tm->mu, NULL) != 0) return false;
  if (pthread_cond_init(&tm->cv, NULL) != 0) {
    pthread_mutex_destroy(&tm->mu);
    return false;
  }
  tm->running = pthread_create(&tm->thread, NULL, helper_main, tm) == 0;
  if (!tm->running) {
    pthread_cond_destroy(&tm->cv);
    pthread_mutex_destroy(&tm->mu);
  }
  return tm->running;
}

static void team_stop(team *tm) {
  if (!tm->running) return;
  pthread_mutex_lock(&tm->mu);
  tm->quit = true;
  pthread_cond_signal(&tm->cv);
  pthread_mutex_unlock(&tm->mu);
  pthread_join(tm->thread, NULL);
  pthread_cond_destroy(&tm->cv);
  pthread_mutex_destroy(&tm->mu);
  tm->running = false;
}

/* One phase on both threads: `ops` adds each (or the keys' creation, or
 * `ops` reference reads each). Returns its wall time in seconds, from the
 * release until both are done. */
static double team_phase(team *tm, task what, uint64_t ops) {
  pthread_mutex_lock(&tm->mu);
  uint64_t g = ++tm->go;
  tm->ops = ops;
  tm->what = what;
  pthread_cond_signal(&tm->cv);
  pthread_mutex_unlock(&tm->mu);
  for (unsigned spins = 0;
       __atomic_load_n(&tm->arrived, __ATOMIC_ACQUIRE) != g;)
    relax(&spins);
  double t0 = bk_fx_now();
  __atomic_store_n(&tm->start, g, __ATOMIC_RELEASE);
  worker_do(&tm->w[0], what, ops);
  for (unsigned spins = 0; __atomic_load_n(&tm->done, __ATOMIC_ACQUIRE) != g;)
    relax(&spins);
  return bk_fx_now() - t0;
}

/* ---- building ------------------------------------------------------------ */

/* The most ids a filter of m bits and k hashes holds at fpp <= p. */
static uint64_t capacity_at(uint64_t m, unsigned k, double p) {
  uint64_t lo = 1, hi = m; /* fpp(lo) <= p < fpp(hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    double f = 1;
    if (bk_params_fpp(m, k, mid, &f) == BK_OK && f <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Create the table, its keys and (FBF) its steady-state fill, on first use. */
static bool ensure_table(idem_case *ic, bk_bench_state *st) {
  if (!bk_fx_ready(&ic->setup, st)) return false;
  if (ic->t) return true;

  bk_idem_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.strategy = ic->strategy;
  cfg.expected_keys = n_keys;
  cfg.seed = bk_bench_seed();
  cfg.start_time = 0;
  if (!ic->seqs) {
    ic->seqs = calloc(ic->n_clients, sizeof *ic->seqs);
    if (!ic->seqs) return fail(ic, st, "the clients' seqs", BK_ENOMEM);
  }
  if (ic->strategy != BK_IDEM_NONE) { /* FBF and HYBRID: the same filter */
    cfg.window = WINDOW;
    cfg.n_past = N_PAST;
    cfg.refresh_period = period;
    cfg.retry_timeout = (N_PAST + 1) * period;
    cfg.m_bits = m_bits;
    cfg.k = DESIGN_K;
    cfg.fpp = DESIGN_FPP;
  }
  bk_status s = bk_idem_create(&ic->t, &cfg);
  if (s != BK_OK) return fail(ic, st, "bk_idem_create", s);
  ic->clock = 0;

  double t0 = bk_fx_now();
  team tm;
  if (!team_start(&tm, ic)) {
    bk_idem_destroy(ic->t);
    ic->t = NULL;
    return fail(ic, st, "starting the fill thread", BK_ENOMEM);
  }
  (void)team_phase(&tm, TASK_CREATE, 0);
  ic->clock += n_keys;
  s = bk_idem_advance(ic->t, ic->clock);
  double t1 = bk_fx_now();
  /* FBF and HYBRID: random adds up to (N + 1) P + P / 2: steady state,
   * mid-period (the windows' clients have all come and some have gone). */
  uint64_t target =
      ic->strategy != BK_IDEM_NONE ? (N_PAST + 1) * period + period / 2 : 0;
  while (s == BK_OK && ic->clock < target) {
    uint64_t ops = (target - ic->clock + 1) / 2;
    if (ops > fill_ops) ops = fill_ops;
    (void)team_phase(&tm, TASK_ADD, ops);
    ic->clock += 2 * ops;
    s = bk_idem_advance(ic->t, ic->clock);
  }
  team_stop(&tm);
  double t2 = bk_fx_now();
  if (s == BK_OK && (tm.w[0].bad || tm.w[1].bad)) s = BK_EINVAL;
  bk_idem_info info;
  if (s == BK_OK) s = bk_idem_info_get(ic->t, &info);
  if (s == BK_OK && info.keys != n_keys) s = BK_ECORRUPT;
  if (s != BK_OK) {
    bk_idem_destroy(ic->t);
    ic->t = NULL;
    return fail(ic, st, "filling the table", s);
  }
  fprintf(stderr, "[bench] filled idem %s: %llu keys in %.1f s", ic->name,
          (unsigned long long)info.keys, t1 - t0);
  if (ic->strategy != BK_IDEM_NONE)
    fprintf(stderr,
            ", then to %llu adds (period %llu adds, %llu refreshes, %llu "
            "applied, %llu taken for duplicates) in %.1f s; est fpp %.3g, "
            "filter %.1f MiB",
            (unsigned long long)ic->clock, (unsigned long long)period,
            (unsigned long long)(ic->clock / period),
            (unsigned long long)info.applied,
            (unsigned long long)info.duplicates, t2 - t1, info.fpp,
            (double)info.filter_memory / (double)BK_FX_MIB);
  if (info.window)
    fprintf(
        stderr,
        "; %llu clients in windows, %.1f bytes each, %llu ops below a "
        "window, %llu seqs slid into the FBF",
        (unsigned long long)info.clients,
        info.clients ? (double)info.window_memory / (double)info.clients : 0.0,
        (unsigned long long)info.below_window,
        (unsigned long long)info.slid_to_filter);
  fprintf(stderr, "; table %.1f MiB\n",
          (double)info.table_memory / (double)BK_FX_MIB);
  return true;
}

/* ---- the benchmark bodies ------------------------------------------------ */

typedef enum op { OP_ADD, OP_ADD_2THREADS, OP_COUNT, OP_ADD_MANY } op;

typedef struct bench_arg {
  idem_case *ic;
  op which;
  size_t batch; /* OP_ADD_MANY: ops per bk_idem_add_many call */
} bench_arg;

static bench_arg args[N_CASES][OP_COUNT];

/* The add_many rows: these strategies, in batches of these sizes. */
static const strategy_case many_cases[] = {CASE_NONE, CASE_HYBRID, CASE_FBF};
static const size_t many_sizes[] = {64, MANY_MAX};
#define N_MANY_CASES (sizeof many_cases / sizeof many_cases[0])
#define N_MANY_SIZES (sizeof many_sizes / sizeof many_sizes[0])
static bench_arg many_args[N_MANY_CASES][N_MANY_SIZES];

/* The FBF's estimated fpp now (untimed: after the loop). */
static void report_fpp(bk_bench_state *st, idem_case *ic) {
  if (ic->strategy == BK_IDEM_NONE) return;
  bk_idem_info info;
  if (bk_idem_info_get(ic->t, &info) != BK_OK) return;
  bk_bench_counter(st, "est_fpp", info.fpp);
  if (info.window) {
    bk_bench_counter(st, "clients", (double)info.clients);
    bk_bench_counter(
        st, "bytes_per_client",
        info.clients ? (double)info.window_memory / (double)info.clients : 0.0);
    bk_bench_counter(st, "slid_to_fbf", (double)info.slid_to_filter);
  }
}

/* Single adds (batch 0) or bk_idem_add_many calls of `batch` ops. */
static void idem_add(bk_bench_state *st, idem_case *ic, size_t batch) {
  worker w = new_worker(ic, 0, 1, 0, ic->n_clients);
  uint64_t n, clock = ic->clock;
  const uint64_t clock0 = clock;
  int bad = 0;
  while ((n = batch ? bk_bench_batch_of(st, batch) : bk_bench_batch(st)) != 0) {
    if (batch)
      worker_add_many(&w, n, batch);
    else
      worker_add(&w, n);
    clock += n;
    bad |= bk_idem_advance(ic->t, clock) != BK_OK;
  }
  ic->clock = clock;
  if (bad || w.bad) {
    fail(ic, st, "bk_idem_add or bk_idem_advance", BK_EINVAL);
    return;
  }
  bk_fx_rate(st, "new_rate", w.applied);
  if (ic->strategy != BK_IDEM_NONE) {
    bk_bench_counter(st, "refreshes",
                     (double)(clock / period - clock0 / period));
    report_fpp(st, ic);
  }
}

/* The reference workload's buffer, as large as the FBF's lanes. */
static bool ensure_ref_buf(idem_case *ic, bk_bench_state *st) {
  if (ref_buf) return true;
  uint64_t words = filter_mib * BK_FX_MIB / 8;
  uint64_t *buf = malloc(words * sizeof *buf);
  if (!buf) return fail(ic, st, "reference buffer", BK_ENOMEM);
  uint64_t state = bk_fx_stream(7000);
  for (uint64_t i = 0; i < words; i++) buf[i] = bk_fx_next(&state);
  ref_buf = buf;
  ref_words = words;
  return true;
}

static void idem_add_2threads(bk_bench_state *st, idem_case *ic) {
  if (!ensure_ref_buf(ic, st)) return;
  team tm;
  if (!team_start(&tm, ic)) {
    fail(ic, st, "starting the helper thread", BK_ENOMEM);
    return;
  }
  /* the 1-thread phases: all keys, all clients */
  worker solo = new_worker(ic, 0, 1, 0, ic->n_clients);
  const uint64_t r = round_ops;
  const uint64_t rr = REF_PER_ADD * r; /* reference reads per thread */
  double wall1 = 0, wall2 = 0, ref1 = 0, ref2 = 0;
  uint64_t ops1 = 0, ops2 = 0, n;
  int bad = 0;
  while ((n = bk_bench_batch_of(st, 2 * r)) != 0) {
    for (uint64_t done = 0; done < n; done += 2 * r) {
      wall2 += team_phase(&tm, TASK_ADD, r);
      ops2 += 2 * r;
      bk_bench_pause(st);
      ic->clock += 2 * r;
      bad |= bk_idem_advance(ic->t, ic->clock) != BK_OK;
      double t0 = bk_fx_now();
      worker_add(&solo, r);
      wall1 += bk_fx_now() - t0;
      ops1 += r;
      ic->clock += r;
      bad |= bk_idem_advance(ic->t, ic->clock) != BK_OK;
      ref2 += team_phase(&tm, TASK_REF, rr);
      t0 = bk_fx_now();
      worker_ref(&solo, rr);
      ref1 += bk_fx_now() - t0;
      bk_bench_resume(st);
    }
  }
  team_stop(&tm);
  if (bad || solo.bad || tm.w[0].bad || tm.w[1].bad) {
    fail(ic, st, "bk_idem_add or bk_idem_advance", BK_EINVAL);
    return;
  }
  double speedup = wall1 > 0 && wall2 > 0
                       ? ((double)ops2 / wall2) / ((double)ops1 / wall1)
                       : 0;
  bk_bench_counter(st, "speedup_2t", speedup);
  bk_bench_counter(st, "inv_speedup", speedup > 0 ? 1 / speedup : 0);
  /* The same rounds' 2-thread speedup of the reference workload: what the
   * machine allowed meanwhile (2.0 on two free cores). */
  bk_bench_counter(st, "ref_speedup_2t",
                   ref1 > 0 && ref2 > 0 ? 2 * ref1 / ref2 : 0);
  uint64_t applied = solo.applied + tm.w[0].applied + tm.w[1].applied;
  bk_bench_counter(st, "new_rate",
                   ops1 + ops2 ? (double)applied / (double)(ops1 + ops2) : 0);
  report_fpp(st, ic);
}

static void bench_idem(bk_bench_state *st, void *p) {
  bench_arg *arg = p;
  if (!ensure_table(arg->ic, st)) return;
  if (arg->which == OP_ADD || arg->which == OP_ADD_MANY)
    idem_add(st, arg->ic, arg->which == OP_ADD_MANY ? arg->batch : 0);
  else
    idem_add_2threads(st, arg->ic);
}

/* ---- registration -------------------------------------------------------- */

static void bench_name(char *out, size_t cap, strategy_case c, op o) {
  snprintf(out, cap, "idem/%skeys/%s/%s", keys_label, cases[c].name,
           o == OP_ADD ? "add" : "add_2threads");
}

static void many_name(char *out, size_t cap, strategy_case c, size_t batch) {
  snprintf(out, cap, "idem/%skeys/%s/add_many%zu", keys_label, cases[c].name,
           batch);
}

static void register_targets(void) {
  char label[200], num[96], den[96];
  unsigned long long mib = (unsigned long long)filter_mib;
  snprintf(label, sizeof label,
           "idem add fbf (%llu MiB, N=%u, k=%u) vs none, %s keys, fresh "
           "op ids",
           mib, N_PAST, DESIGN_K, keys_label);
  bench_name(num, sizeof num, CASE_FBF, OP_ADD);
  bench_name(den, sizeof den, CASE_NONE, OP_ADD);
  bk_fx_ratio(label, num, den, ADD_LIMIT);
  snprintf(label, sizeof label,
           "idem add hybrid (W=%u, %llu active clients) vs none, %s keys",
           WINDOW, (unsigned long long)n_active, keys_label);
  bench_name(num, sizeof num, CASE_HYBRID, OP_ADD);
  bk_fx_ratio(label, num, den, HYBRID_LIMIT);
  snprintf(label, sizeof label,
           "idem add hybrid, %llu busy clients (> W ops per timeout: the "
           "slide-out path) vs none, reported",
           (unsigned long long)BUSY_CLIENTS);
  bench_name(num, sizeof num, CASE_HYBRID_BUSY, OP_ADD);
  bk_fx_ratio(label, num, den, BK_FX_INFO);
  /* The batch rows: against none's batch of the same size, and against
   * the strategy's single add. */
  for (size_t b = 0; b < N_MANY_SIZES; b++) {
    many_name(den, sizeof den, CASE_NONE, many_sizes[b]);
    for (size_t c = 1; c < N_MANY_CASES; c++) {
      snprintf(label, sizeof label,
               "idem add_many%zu %s vs none add_many%zu, reported",
               many_sizes[b], cases[many_cases[c]].name, many_sizes[b]);
      many_name(num, sizeof num, many_cases[c], many_sizes[b]);
      bk_fx_ratio(label, num, den, BK_FX_INFO);
    }
  }
  for (size_t c = 0; c < N_MANY_CASES; c++) {
    for (size_t b = 0; b < N_MANY_SIZES; b++) {
      snprintf(label, sizeof label, "idem %s: add_many%zu vs add, reported",
               cases[many_cases[c]].name, many_sizes[b]);
      many_name(num, sizeof num, many_cases[c], many_sizes[b]);
      bench_name(den, sizeof den, many_cases[c], OP_ADD);
      bk_fx_ratio(label, num, den, BK_FX_INFO);
    }
  }
  for (int c = N_CASES - 1; c >= CASE_NONE; c--) {
    snprintf(label, sizeof label,
             "idem add %s: 2-thread throughput >= %.1fx 1 thread "
             "(different keys)%s",
             cases[c].name, SPEEDUP_MIN, c == CASE_NONE ? ", reference" : "");
    bench_name(num, sizeof num, (strategy_case)c, OP_ADD_2THREADS);
    bk_bench_target_counter(label, num, "inv_speedup", 1.0 / SPEEDUP_MIN,
                            "speedup_2t");
  }
  bk_bench_note(
      "idem: 1,000,000 counters (16384 with --bk_quick), 8-byte keys, every\n"
      "  add a fresh op id to a uniform key, from a uniform client of 100,000\n"
      "  (1000 quick), each numbering its ops in order; busy100: 100 clients,\n"
      "  each sending far more than W = 256 ops per timeout, so every word\n"
      "  of a window slides out while open (into the FBF). hybrid: windows\n"
      "  of W = 256 in front of the same FBF as fbf (made on first need;\n"
      "  bytes_per_client, slid_to_fbf after the run). fbf: N=2, k=7, 4 "
      "filters of m\n"
      "  bits in 64 MiB of lanes (1 MiB quick); the simulated clock counts\n"
      "  adds and refreshes every P adds, P = half of what one filter holds "
      "at\n"
      "  fpp 0.001, after a fill to steady state; est_fpp: the table's\n"
      "  estimate after the run, new_rate: adds applied (1 - new_rate: fresh\n"
      "  ids taken for duplicates), refreshes: those paid inside the timed\n"
      "  single-thread run. add_2threads: rounds of 16384 adds per thread on "
      "2\n"
      "  threads (keys even / odd), then 16384 on 1 thread (all keys), wall\n"
      "  clock; speedup_2t = adds/s with 2 threads over adds/s with 1, and\n"
      "  the scaling targets pass when inv_speedup = 1 / speedup_2t <= 0.625.\n"
      "  Their table rows time only the 2-thread phases (real ns/op = 1 /\n"
      "  2-thread throughput). ref_speedup_2t: the same rounds' speedup of\n"
      "  dependent random reads of 64 MiB (2 per add), what the machine\n"
      "  allowed meanwhile: ~2.0 with both cores free, ~1.0 with one busy.\n"
      "  add_many64/256: the single adds' op stream through bk_idem_add_many\n"
      "  in calls of 64 / 256 ops (ns per op).");
}

void bk_bench_register_idem(void) {
  if (bk_bench_quick()) {
    n_keys = QUICK_KEYS;
    filter_mib = QUICK_FILTER_MIB;
    round_ops = QUICK_ROUND_OPS;
    fill_ops = QUICK_FILL_OPS;
  }
  m_bits = filter_mib * BK_FX_MIB * 8 / (N_PAST + 2);
  period = capacity_at(m_bits, DESIGN_K, DESIGN_FPP) / 2;
  if (n_keys % 1000000 == 0)
    snprintf(keys_label, sizeof keys_label, "%lluM",
             (unsigned long long)(n_keys / 1000000));
  else if (n_keys % 1024 == 0)
    snprintf(keys_label, sizeof keys_label, "%lluKi",
             (unsigned long long)(n_keys / 1024));
  else
    snprintf(keys_label, sizeof keys_label, "%llu", (unsigned long long)n_keys);
  snprintf(fbf_name, sizeof fbf_name, "fbf_%lluMiB_N%u",
           (unsigned long long)filter_mib, N_PAST);
  if (bk_bench_quick()) n_active = QUICK_ACTIVE_CLIENTS;
  cases[CASE_FBF].name = fbf_name;
  for (int c = 0; c < N_CASES; c++)
    cases[c].n_clients = c == CASE_HYBRID_BUSY ? BUSY_CLIENTS : n_active;
  for (int c = 0; c < N_CASES; c++)
    snprintf(cases[c].setup.name, sizeof cases[c].setup.name, "idem %s",
             cases[c].name);
  char name[96], group[64];
  /* Registration order is run order: none then fbf, one thread then two. */
  for (int o = 0; o < OP_COUNT; o++) {
    snprintf(group, sizeof group, "idem %s keys%s", keys_label,
             o == OP_ADD ? "" : " 2 threads");
    for (int c = 0; c < N_CASES; c++) {
      args[c][o].ic = &cases[c];
      args[c][o].which = (op)o;
      bench_name(name, sizeof name, (strategy_case)c, (op)o);
      bk_bench_opts opts = {.group = group,
                            .baseline = c == CASE_NONE,
                            .min_time = o == OP_ADD ? MIN_TIME : MIN_TIME_2T};
      bk_bench_register(name, bench_idem, &args[c][o], &opts);
    }
    if (o != OP_ADD) continue;
    /* Beside the single adds: the same op stream in batches. */
    for (size_t c = 0; c < N_MANY_CASES; c++) {
      for (size_t b = 0; b < N_MANY_SIZES; b++) {
        bench_arg *a = &many_args[c][b];
        a->ic = &cases[many_cases[c]];
        a->which = OP_ADD_MANY;
        a->batch = many_sizes[b];
        many_name(name, sizeof name, many_cases[c], many_sizes[b]);
        bk_bench_opts opts = {.group = group, .min_time = MIN_TIME};
        bk_bench_register(name, bench_idem, a, &opts);
      }
    }
  }
  register_targets();
}

void bk_bench_release_idem(void) {
  for (int c = 0; c < N_CASES; c++) {
    bk_idem_destroy(cases[c].t);
    cases[c].t = NULL;
    free(cases[c].seqs);
    cases[c].seqs = NULL;
  }
  free(ref_buf);
  ref_buf = NULL;
}
