/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit sim counters`: idempotent counters under client retries (FBF
 * thesis chapter 5 and Sec. 6.4: Fig. 6.7, counters with and without an FBF;
 * Fig. 6.9, an FBF against a Recyclable Bloom Filter of equal memory), run
 * on bk_idem in simulated time. `bloomkit sim` is the dispatcher: its first
 * argument names the simulation (`counters` here; `dkbf` in sim_dkbf.c).
 *
 * The model. Time is simulated in milliseconds. `--ops` original increments
 * arrive at the server following the load shape (below); op i goes to a
 * client drawn uniformly from `--clients` (its id is (client, that client's
 * next sequence number), 1-based) and to a key drawn uniformly from "c0" ..
 * "c{K-1}". Every attempt of an op reaches the server and is applied there
 * (or dismissed by the strategy's filter); its ack is then lost with
 * probability `--ack-loss`, and the client retries after a delay drawn from
 * `--retry-delay` (counted from the attempt whose ack was lost), as long as
 * the retry is sent no later than `--timeout` ms after the op's first send.
 * Each retry's ack can be lost too. Acks are independent of what the server
 * decided (a dismissed duplicate is acknowledged as well), so the stream of
 * delivered attempts does not depend on the strategy: it is generated once,
 * sorted by time (then op, then attempt), and every strategy replays the
 * same stream into its own bk_idem table, calling bk_idem_advance with each
 * attempt's time (ms).
 *
 * Times are whole ms: a first send at floor(T), its retries at that plus
 * the floor of the summed delays, so no retry is delivered more than
 * --timeout ms after its op's first delivery (the FBF's window).
 * Arrivals are evenly spaced in the load's cumulative intensity: op i
 * (0-based) arrives at the time T with Lambda(T) = i + 1/2, Lambda(t) = the
 * integral of the rate up to t, so the rate is exactly the shape's and all
 * ops arrive within [0, D], D the duration with Lambda(D) = ops. Shapes,
 * R = --rate (ops/s):
 *   steady   rate(t) = R;                 D = ops / R
 *   rising   rate(t) = R + (F - 1) R t / D, linear from R to F R at the end
 *            (F = --rise-factor, default 4); D = 2 ops / ((1 + F) R)
 *   bursty   rate(t) = B R during the last --burst-ms of every --burst-every
 *            ms cycle (B = --burst-factor, default 10; 1000 of 10000 ms),
 *            R otherwise; D solved numerically
 * Reordering clients (--reorder-share P, --reorder-depth D; off by
 * default: every client sends its ops in the order it numbered them). The
 * clients 0 .. round(P C) - 1 (C = --clients) hold ops back: each of their
 * ops is held with probability 1/2, and a held op is first sent 1 ms after
 * the time its client's op D places later was due (if the client has fewer
 * than D more ops, when that op would have come at the client's mean gap
 * between ops, after its last), its retries counted from then. So such
 * a client has up to D ops numbered but not yet sent, and its held ops
 * arrive below the newest seq by about D: with D above the client window W,
 * below the window (HYBRID's FBF decides them, WINDOW answers TOO_OLD).
 * Randomness (seeded by --seed, one splitmix64 stream per purpose, so the
 * op stream is identical across strategies and, in a sweep, the ops
 * (clients, keys, arrival times) are the same at every ack-loss value):
 * stream 1 clients and keys, stream 2 ack losses, stream 3 retry delays,
 * stream 4 which ops a reordering client holds back (so a run without
 * reordering is the same stream as before the option existed).
 *
 * Accounting, per strategy (per op we count the attempts the table applied):
 *   expected          ops * delta (each distinct op once)
 *   final             the sum of the table's counters (bk_idem_iterate),
 *                     checked against delta * (attempts applied)
 *   dups_dismissed    attempts dismissed whose op had been applied before
 *                     (true retries caught)
 *   fp_dismissed      attempts dismissed whose op had NOT been applied yet:
 *                     each is a false positive of the filter (a genuine
 *                     update taken for a duplicate; almost always a first
 *                     delivery, "first" in the CSV counts those)
 *   ops_lost          ops never applied at all (fp_dismissed on every
 *                     attempt): what false positives cost the counter
 *   retries_applied   attempts applied although the op had been applied
 *                     before: the over-count (every retry for NONE; retries
 *                     after an RBF recycle)
 *   too_old           attempts answered BK_IDEM_TOO_OLD (WINDOW only: below
 *                     the client's window, not applied, nothing recorded);
 *                     too_old_new: of them, attempts whose op had not been
 *                     applied yet. Those are genuine updates refused: lost
 *                     updates unless the caller retries them another way
 *                     (this simulator does not: its clients take the
 *                     answer as an ack), so an op whose every attempt was
 *                     TOO_OLD counts in ops_lost. A TOO_OLD retry of an
 *                     op already applied is harmless (not applied again)
 *   below_window      bk_idem_info below_window: ops that fell below their
 *                     client's window (HYBRID: decided by its FBF; WINDOW:
 *                     the TOO_OLD answers); 0 for the other strategies
 *   slid_to_filter    bk_idem_info slid_to_filter: applied seqs HYBRID moved
 *                     into its FBF as they left a window while a retry of
 *                     them could still come (clients sending more than W
 *                     ops per timeout)
 *   clients           the most client windows held at once, sampled as
 *                     fpp_max is; window_bytes: bk_idem_info window_memory
 *                     (the client windows' table) at that sample;
 *                     bytes_per_client: the two divided
 *   error %           (final - expected) / expected * 100
 *                     = delta (retries_applied - ops_lost) / expected * 100
 *   filter_bytes      bk_idem_info filter_memory (bytes, with the structure's
 *                     fixed overhead); filter_bits: the bits of the filter
 *                     (W m for an FBF, W = lane width; (N + 2) m for the RBF)
 *   fpp_end           bk_idem_info fpp after the last attempt (the FBF's
 *                     bk_fbf_estimated_fpp, the RBF's Eq. 4.1 estimate)
 *   fpp_max           the largest bk_idem_info fpp seen, sampled every
 *                     --sample-ms of simulated time just before the clock
 *                     moves past the boundary (so just before a refresh at
 *                     aligned times), and after the last attempt
 *   fp_per_op         fp_dismissed / ops, to compare with the fpp
 *   target            the target fpp in force (RBF recycle threshold,
 *                     FBF_ADAPTIVE's Algorithm 3 target; for FBF the sizing
 *                     target, not enforced)
 *
 * Filters. bk_idem_config: retry_timeout = --timeout, n_past = --n-past,
 * refresh period t = ceil(timeout / (N + 1)) (bk_idem's default), fpp =
 * target_fpp = --target-fpp. Sized either by --fbf-m and --fbf-k (bits and
 * hashes per FBF constituent filter; the RBF gets (N + 2) m bits, the same
 * memory, as bk_idem does) or by ops_per_period = ceil(--size-rate * t),
 * --size-rate defaulting to the load's peak rate (bk_idem then sizes each
 * filter for 2 ops_per_period at the target fpp, the RBF with (N + 2) times
 * the bits). FBF_ADAPTIVE may grow to --max-filters filters (bk_idem's
 * default 4 (N + 2)) and pays for that width in memory from the start.
 * WINDOW and HYBRID keep a window of --window seqs per client (bk_idem's
 * `window`, default 256); HYBRID's FBF has the FBF strategy's config but is
 * made only when an op first falls below a window or slides out of one
 * (filter_bytes 0 until then).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/bits.h"
#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/params.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"

#define PROG "bloomkit sim counters"
#define DEFAULT_SEED 20150601u

#define DEFAULT_OPS 100000u
#define DEFAULT_CLIENTS 100u
#define DEFAULT_KEYS 4u
#define DEFAULT_RATE 1000.0
#define DEFAULT_ACK_LOSS 0.05
#define DEFAULT_TIMEOUT_MS 3000u
#define DEFAULT_N_PAST 2u
#define DEFAULT_TARGET_FPP 1e-6
#define DEFAULT_RISE 4.0
#define DEFAULT_BURST_FACTOR 10.0
#define DEFAULT_BURST_MS 1000u
#define DEFAULT_BURST_EVERY_MS 10000u
#define DEFAULT_SAMPLE_MS 100u

/* Sweep (Fig. 6.9) defaults: the thesis' small filters, a light load. */
#define SWEEP_M_BITS 500u
#define SWEEP_K 3u
#define SWEEP_N_PAST 1u
#define SWEEP_TARGET_FPP 0.01
#define SWEEP_RATE 10.0
#define SWEEP_OPS 20000u
#define SWEEP_TIMEOUT_MS 2000u
#define SWEEP_DEFAULT_VALUES "0.01,0.02,0.05,0.1,0.2"

#define MAX_OPS 100000000u /* op indices are stored in 32 bits */
#define MAX_KEYS 1000000u
#define MAX_MS 1000000000u /* every duration option: ~11.6 days */
#define MAX_FBF_M ((uint64_t)1 << 34)
#define MAX_ATTEMPTS 20000000u
#define MAX_ATTEMPTS_PER_OP 60000u
#define MAX_DELTA 1000000
#define MAX_SWEEP 64u
#define N_STRATEGIES 6u

_Static_assert(MAX_OPS <= UINT32_MAX, "attempt.op holds an op index");

/* ---- randomness: splitmix64 ------------------------------------------------
 */

typedef struct rng {
  uint64_t state;
} rng;

static rng rng_make(uint64_t seed, uint64_t stream) {
  rng r = {splitmix_output(seed ^ splitmix_output(stream * SPLITMIX_GAMMA))};
  return r;
}

static uint64_t rng_next(rng *r) {
  r->state += SPLITMIX_GAMMA;
  return splitmix_output(r->state);
}

/* Uniform in [0, 1). */
static double rng_unit(rng *r) {
  return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), 0 < n <= 2^32 (multiply-shift on the top 32 bits;
 * the bias is below n / 2^32, under 3e-2 at the largest n allowed, 1e8,
 * and nil for the counts a run normally uses). */
static uint64_t rng_below(rng *r, uint64_t n) {
  return ((rng_next(r) >> 32) * n) >> 32;
}

/* ---- options ------------------------------------------------------------- */

typedef enum load_kind { LOAD_STEADY, LOAD_RISING, LOAD_BURSTY } load_kind;

typedef enum delay_kind { DELAY_FIXED, DELAY_UNIFORM, DELAY_EXP } delay_kind;

typedef struct delay_dist {
  delay_kind kind;
  double a, b; /* fixed: a; uniform: [a, b]; exp: mean a */
} delay_dist;

static const bk_idem_strategy all_strategies[N_STRATEGIES] = {
    BK_IDEM_NONE,         BK_IDEM_RBF,    BK_IDEM_FBF,
    BK_IDEM_FBF_ADAPTIVE, BK_IDEM_WINDOW, BK_IDEM_HYBRID};

typedef struct options {
  uint64_t seed;
  uint64_t ops;
  uint64_t clients;
  uint64_t keys;
  int64_t delta;
  double rate;
  load_kind load;
  double rise_factor;
  double burst_factor;
  uint64_t burst_ms;
  uint64_t burst_every_ms;
  double ack_loss;
  delay_dist delay;
  uint64_t timeout_ms;
  double reorder_share;   /* share of clients that hold ops back */
  uint64_t reorder_depth; /* 0: every client in order */
  /* filters */
  uint64_t fbf_m; /* 0: sized from size_rate */
  unsigned fbf_k;
  unsigned n_past;
  double target_fpp;
  double size_rate;     /* 0: the load's peak rate */
  unsigned max_filters; /* 0: bk_idem's default */
  unsigned window;      /* W of WINDOW and HYBRID */
  uint64_t sample_ms;
  /* what to run */
  bk_idem_strategy strategies[N_STRATEGIES];
  size_t n_strategies;
  bool csv;
  const char *plot_dir; /* NULL: no pictures */
  bool sweep;
  double sweep_values[MAX_SWEEP];
  size_t n_sweep;
  /* which options were given (sweep defaults fill the others) */
  bool set_ops, set_rate, set_timeout, set_fbf, set_n_past, set_target,
      set_strategies;
} options;

/* The names options and output use, in the order of all_strategies and
 * of load_kind (the option parser stores indices into these). */
static const char *const strategy_names[N_STRATEGIES + 1] = {
    "NONE", "RBF", "FBF", "FBF_ADAPTIVE", "WINDOW", "HYBRID", NULL};
static const char *const load_names[] = {"steady", "rising", "bursty", NULL};

static const char *strategy_name(bk_idem_strategy s) {
  for (size_t i = 0; i < N_STRATEGIES; i++)
    if (all_strategies[i] == s) return strategy_names[i];
  return "?";
}

static const char *load_name(load_kind k) {
  return load_names[k];
}

static void format_delay(const delay_dist *d, char *buf, size_t cap) {
  switch (d->kind) {
    case DELAY_FIXED:
      snprintf(buf, cap, "fixed:%g", d->a);
      return;
    case DELAY_UNIFORM:
      snprintf(buf, cap, "uniform:%g:%g", d->a, d->b);
      return;
    case DELAY_EXP:
      snprintf(buf, cap, "exp:%g", d->a);
      return;
  }
  snprintf(buf, cap, "?");
}

/* ---- load shapes -----------------------------------------------------------
 */

/* Lambda(t): expected arrivals by time t (seconds). */
static double cumulative(const options *o, double duration_s, double t) {
  double r = o->rate;
  switch (o->load) {
    case LOAD_STEADY:
      return r * t;
    case LOAD_RISING:
      return r * t + (o->rise_factor - 1.0) * r * t * t / (2.0 * duration_s);
    case LOAD_BURSTY: {
      double cycle = (double)o->burst_every_ms / 1000.0;
      double burst = (double)o->burst_ms / 1000.0;
      double calm = cycle - burst;
      double whole = floor(t / cycle);
      double into = t - whole * cycle;
      double in_burst = whole * burst + (into > calm ? into - calm : 0.0);
      return r * t + (o->burst_factor - 1.0) * r * in_burst;
    }
  }
  return 0.0;
}

static double peak_rate(const options *o) {
  switch (o->load) {
    case LOAD_STEADY:
      return o->rate;
    case LOAD_RISING:
      return o->rate * (o->rise_factor > 1.0 ? o->rise_factor : 1.0);
    case LOAD_BURSTY:
      return o->rate * (o->burst_factor > 1.0 ? o->burst_factor : 1.0);
  }
  return o->rate;
}

/* Smallest t in [lo, hi] with Lambda(t) >= target, to ~1e-9 s. */
static double invert(const options *o, double duration_s, double target,
                     double lo, double hi) {
  for (int i = 0; i < 80 && hi - lo > 1e-9; i++) {
    double mid = (lo + hi) / 2.0;
    if (cumulative(o, duration_s, mid) < target)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

/* D with Lambda(D) = ops. */
static double load_duration(const options *o) {
  double n = (double)o->ops;
  switch (o->load) {
    case LOAD_STEADY:
      return n / o->rate;
    case LOAD_RISING:
      return 2.0 * n / ((1.0 + o->rise_factor) * o->rate);
    case LOAD_BURSTY: {
      double hi = n / o->rate; /* Lambda >= R t, so D <= ops / R */
      return invert(o, 0.0, n, 0.0, hi);
    }
  }
  return n / o->rate;
}

/* ---- the op stream ---------------------------------------------------------
 */

typedef struct op {
  uint64_t client;
  uint64_t seq;
  uint32_t key;
} op;

typedef struct attempt {
  uint64_t time_ms;
  uint32_t op;
  uint32_t n; /* 0: the first delivery */
} attempt;

typedef struct stream {
  op *ops;
  uint64_t n_ops;
  attempt *attempts;
  uint64_t n_attempts;
  uint64_t max_retries; /* most retries of one op */
  uint64_t n_held;      /* ops sent after later ones of their client */
  uint64_t last_ms;
  double duration_s;
} stream;

static void stream_free(stream *s) {
  free(s->ops);
  free(s->attempts);
  memset(s, 0, sizeof *s);
}

static double draw_delay(const delay_dist *d, rng *r) {
  switch (d->kind) {
    case DELAY_FIXED:
      return d->a;
    case DELAY_UNIFORM:
      return d->a + (d->b - d->a) * rng_unit(r);
    case DELAY_EXP:
      return -d->a * log1p(-rng_unit(r));
  }
  return d->a;
}

static int cmp_attempt(const void *pa, const void *pb) {
  const attempt *a = pa, *b = pb;
  if (a->time_ms != b->time_ms) return a->time_ms < b->time_ms ? -1 : 1;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  return a->n < b->n ? -1 : a->n > b->n;
}

static int push_attempt(stream *s, uint64_t *cap, uint64_t time_ms,
                        uint64_t op_index, uint64_t n) {
  if (s->n_attempts == *cap) {
    if (*cap >= MAX_ATTEMPTS) {
      fprintf(stderr,
              PROG
              ": more than %u delivered attempts; lower --ack-loss or "
              "--ops, or lengthen --retry-delay\n",
              MAX_ATTEMPTS);
      return 1;
    }
    uint64_t ncap = *cap * 2;
    if (ncap > MAX_ATTEMPTS) ncap = MAX_ATTEMPTS;
    attempt *grown = realloc(s->attempts, (size_t)ncap * sizeof *grown);
    if (!grown) {
      fprintf(stderr, PROG ": out of memory (%llu attempts)\n",
              (unsigned long long)ncap);
      return 1;
    }
    s->attempts = grown;
    *cap = ncap;
  }
  attempt *a = &s->attempts[s->n_attempts++];
  a->time_ms = time_ms;
  a->op = (uint32_t)op_index;
  a->n = (uint32_t)n;
  return 0;
}

/* The clients that hold ops back: 0 .. round(share * clients) - 1. */
static uint64_t reordering_clients(const options *o) {
  if (!o->reorder_depth) return 0;
  return (uint64_t)llround(o->reorder_share * (double)o->clients);
}

/* Move the first send of each op a reordering client holds back (stream 4,
 * probability 1/2) to 1 ms after the time its client's op reorder_depth
 * places later was due (extrapolated at the client's mean gap past its
 * last op). first_ms[i] is op i's time in order, and becomes its first
 * send. */
static int hold_back(const options *o, stream *s, uint64_t *first_ms) {
  uint64_t n_clients = reordering_clients(o);
  if (!n_clients) return 0;
  /* Each reordering client's ops, in numbering order (a counting sort). */
  uint64_t *start = calloc((size_t)n_clients + 1, sizeof *start);
  if (!start) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  for (uint64_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].client < n_clients) start[s->ops[i].client + 1]++;
  for (uint64_t c = 0; c < n_clients; c++) start[c + 1] += start[c];
  uint64_t total = start[n_clients];
  uint32_t *mine = malloc((size_t)(total ? total : 1) * sizeof *mine);
  uint64_t *fill = malloc((size_t)n_clients * sizeof *fill);
  if (!mine || !fill) {
    fprintf(stderr, PROG ": out of memory\n");
    free(start);
    free(mine);
    free(fill);
    return 1;
  }
  for (uint64_t c = 0; c < n_clients; c++) fill[c] = start[c];
  for (uint64_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].client < n_clients)
      mine[fill[s->ops[i].client]++] = (uint32_t)i;
  /* In increasing position, so the op D places later still has the time
   * it was due when it is read. */
  rng hold = rng_make(o->seed, 4);
  for (uint64_t c = 0; c < n_clients; c++) {
    uint64_t first = start[c], end = start[c + 1];
    if (first == end) continue;
    /* Past its last op, the client's ops would have come at its mean gap. */
    uint64_t t_first = first_ms[mine[first]], t_last = first_ms[mine[end - 1]];
    double gap = end - first > 1
                     ? (double)(t_last - t_first) / (double)(end - first - 1)
                     : 0.0;
    for (uint64_t p = first; p < end; p++) {
      if (rng_unit(&hold) >= 0.5) continue;
      uint64_t later = p + o->reorder_depth, due;
      if (later < end)
        due = first_ms[mine[later]];
      else /* capped far beyond any run (2^52 ms), so the cast is defined */
        due = t_last +
              (uint64_t)fmin((double)(later - (end - 1)) * gap, 0x1.0p52);
      first_ms[mine[p]] = due + 1;
      s->n_held++;
    }
  }
  free(start);
  free(mine);
  free(fill);
  return 0;
}

/* Generate the ops and every delivered attempt, sorted by time. */
static int make_stream(const options *o, stream *s) {
  memset(s, 0, sizeof *s);
  s->n_ops = o->ops;
  s->ops = malloc((size_t)o->ops * sizeof *s->ops);
  uint64_t *next_seq = calloc((size_t)o->clients, sizeof *next_seq);
  uint64_t *first_ms = malloc((size_t)o->ops * sizeof *first_ms);
  uint64_t cap = o->ops + o->ops / 8 + 16;
  s->attempts = malloc((size_t)cap * sizeof *s->attempts);
  if (!s->ops || !next_seq || !first_ms || !s->attempts) {
    fprintf(stderr, PROG ": out of memory\n");
    goto fail;
  }
  rng who = rng_make(o->seed, 1), loss = rng_make(o->seed, 2),
      wait = rng_make(o->seed, 3);
  double duration = load_duration(o);
  s->duration_s = duration;
  double prev_t = 0.0;
  double timeout = (double)o->timeout_ms;
  for (uint64_t i = 0; i < o->ops; i++) {
    op *p = &s->ops[i];
    p->client = rng_below(&who, o->clients);
    p->seq = ++next_seq[p->client];
    p->key = (uint32_t)rng_below(&who, o->keys);
    double t = invert(o, duration, (double)i + 0.5, prev_t,
                      duration > prev_t ? duration : prev_t);
    prev_t = t;
    first_ms[i] = (uint64_t)(t * 1000.0);
  }
  if (hold_back(o, s, first_ms)) goto fail;
  for (uint64_t i = 0; i < o->ops; i++) {
    /* Whole ms: the first send at floor(T), each retry at that plus the
     * floor of the summed delays, so a retry sent within the timeout is
     * never more than `timeout` ms after the first delivery. */
    double since = 0.0; /* ms since the first send */
    uint64_t n = 0;
    if (push_attempt(s, &cap, first_ms[i], i, 0)) goto fail;
    while (rng_unit(&loss) < o->ack_loss) {
      since += draw_delay(&o->delay, &wait);
      if (since > timeout || n + 1 >= MAX_ATTEMPTS_PER_OP) break;
      n++;
      if (push_attempt(s, &cap, first_ms[i] + (uint64_t)since, i, n)) goto fail;
    }
    if (n > s->max_retries) s->max_retries = n;
  }
  free(next_seq);
  free(first_ms);
  qsort(s->attempts, (size_t)s->n_attempts, sizeof *s->attempts, cmp_attempt);
  s->last_ms = s->n_attempts ? s->attempts[s->n_attempts - 1].time_ms : 0;
  return 0;
fail:
  free(next_seq);
  free(first_ms);
  stream_free(s);
  return 1;
}

/* ---- one strategy over the stream -----------------------------------------
 */

typedef struct result {
  bk_idem_strategy strategy;
  int64_t expected;
  int64_t final;
  double error_pct;
  uint64_t dups_dismissed;
  uint64_t fp_dismissed;
  uint64_t fp_first; /* fp_dismissed that were first deliveries */
  uint64_t ops_lost;
  uint64_t retries_applied;
  uint64_t too_old;     /* attempts answered TOO_OLD (WINDOW) */
  uint64_t too_old_new; /* of them, before their op was ever applied */
  uint64_t below_window;
  uint64_t slid_to_filter;
  uint64_t clients; /* client windows at the end */
  size_t window_bytes;
  size_t filter_bytes;
  uint64_t filter_bits;
  double fpp_end;
  double fpp_max;
  double target; /* 0: none */
} result;

typedef struct filter_shape {
  uint64_t period_ms;
  uint64_t ops_per_period; /* sizing, when m is not given */
  uint64_t m;              /* bits per FBF filter (given or derived) */
  unsigned k;
} filter_shape;

/* "--fbf-m 500" or "sized for R ops/s (--size-rate / the load's peak)". */
static void describe_sizing(const options *o, char *buf, size_t cap) {
  if (o->fbf_m)
    snprintf(buf, cap, "--fbf-m %llu", (unsigned long long)o->fbf_m);
  else if (o->size_rate > 0.0)
    snprintf(buf, cap, "sized for --size-rate %g at --target-fpp %g",
             o->size_rate, o->target_fpp);
  else
    snprintf(buf, cap,
             "sized for the load's peak rate %g ops/s (from --rate, --load) "
             "at --target-fpp %g",
             peak_rate(o), o->target_fpp);
}

/* The refresh period and each FBF filter's m and k: given, or what
 * bk_idem derives from the rate (for the header and filter_bits). Sizes
 * bloomkit cannot make are a usage error naming the options behind them. */
static int shape_filters(const options *o, filter_shape *fs) {
  unsigned n = o->n_past;
  fs->period_ms = (o->timeout_ms + n) / (n + 1);
  fs->ops_per_period = 0;
  if (o->fbf_m) {
    fs->m = o->fbf_m;
    fs->k = o->fbf_k;
    return 0;
  }
  double rate = o->size_rate > 0.0 ? o->size_rate : peak_rate(o);
  double per = ceil(rate * (double)fs->period_ms / 1000.0);
  /* A filter takes the inserts of two periods (bk_params_optimal(2 ops)). */
  double bits = ceil(-2.0 * per * log(o->target_fpp) / (log(2.0) * log(2.0)));
  bk_status st = BK_EINVAL;
  if (per <= (double)(UINT64_MAX >> 2)) { /* bk_idem's bound on ops */
    fs->ops_per_period = per < 1.0 ? 1u : (uint64_t)per;
    st = bk_params_optimal(2 * fs->ops_per_period, o->target_fpp, &fs->m,
                           &fs->k);
  }
  if (st == BK_OK) return 0;
  char sizing[160];
  describe_sizing(o, sizing, sizeof sizing);
  return bk_cli_usage_error(
      stderr, PROG,
      "filters %s over a %llu ms refresh period (--timeout %llu / (--n-past "
      "%u + 1)) would need %.3g bits each, more than 2^40; lower the rate "
      "or --timeout, raise --target-fpp, or give --fbf-m and --fbf-k",
      sizing, (unsigned long long)fs->period_ms,
      (unsigned long long)o->timeout_ms, o->n_past, bits);
}

typedef struct sum_ctx {
  int64_t sum;
  bool overflow;
} sum_ctx;

static int sum_counter(void *ctx, const void *key, size_t len, int64_t value) {
  (void)key;
  (void)len;
  sum_ctx *c = ctx;
  if (__builtin_add_overflow(c->sum, value, &c->sum)) c->overflow = true;
  return 0;
}

/* Every --sample-ms: the largest fpp, and the most client windows held at
 * once with their bytes then. */
static int sample_info(const bk_idem *t, double *max, result *res) {
  bk_idem_info info;
  TRY_BK(bk_idem_info_get(t, &info));
  if (info.fpp > *max) *max = info.fpp;
  if (info.clients > res->clients) {
    res->clients = info.clients;
    res->window_bytes = info.window_memory;
  }
  return 0;
fail:
  return 1;
}

static bk_idem_config idem_config(const options *o, const filter_shape *fs,
                                  bk_idem_strategy strategy) {
  bk_idem_config cfg = {
      .strategy = strategy,
      .retry_timeout = o->timeout_ms,
      .n_past = o->n_past,
      .ops_per_period = fs->ops_per_period,
      .fpp = o->target_fpp,
      .m_bits = o->fbf_m,
      .k = o->fbf_m ? o->fbf_k : 0,
      .target_fpp = o->target_fpp,
      .max_filters = strategy == BK_IDEM_FBF_ADAPTIVE ? o->max_filters : 0,
      .window = o->window,
      .start_time = 0,
      .expected_keys = o->keys,
      .hash_alg = BK_HASH_XXH3,
      .seed = splitmix_output(o->seed + 4 * SPLITMIX_GAMMA),
  };
  return cfg;
}

/* Filters of m bits a strategy keeps: N + 2 (the RBF's one filter has the
 * same bits; HYBRID once its FBF is made), FBF_ADAPTIVE its ceiling; 0 for
 * NONE and WINDOW. */
static unsigned filter_width(const options *o, bk_idem_strategy strategy) {
  if (strategy == BK_IDEM_NONE || strategy == BK_IDEM_WINDOW) return 0;
  if (strategy != BK_IDEM_FBF_ADAPTIVE) return o->n_past + 2;
  unsigned width = o->max_filters ? o->max_filters : 4 * (o->n_past + 2);
  return width > BK_FBF_MAX_FILTERS ? BK_FBF_MAX_FILTERS : width;
}

/* The counters' sum over time (Fig. 6.7): trace[j] is the sum of every
 * counter after the attempts delivered before (j + 1) slot_ms. */
typedef struct sum_trace {
  int64_t *sums;
  size_t n_slots;
  uint64_t slot_ms;
} sum_trace;

static int run_strategy(const options *o, const stream *s,
                        const filter_shape *fs, bk_idem_strategy strategy,
                        uint32_t *applied, result *res, sum_trace *trace) {
  bk_idem *t = NULL;
  memset(res, 0, sizeof *res);
  res->strategy = strategy;
  memset(applied, 0, (size_t)s->n_ops * sizeof *applied);
  bk_idem_config cfg = idem_config(o, fs, strategy);
  TRY_BK(bk_idem_create(&t, &cfg));
  double fpp_max = 0.0;
  uint64_t now = 0;
  char key[32];
  int64_t running = 0; /* the counters' sum so far */
  size_t slot = 0;
  for (uint64_t i = 0; i < s->n_attempts; i++) {
    const attempt *a = &s->attempts[i];
    if (trace)
      for (; slot < trace->n_slots && a->time_ms >= (slot + 1) * trace->slot_ms;
           slot++)
        trace->sums[slot] = running;
    if (a->time_ms > now) {
      if (a->time_ms / o->sample_ms != now / o->sample_ms &&
          sample_info(t, &fpp_max, res))
        goto fail;
      TRY_BK(bk_idem_advance(t, a->time_ms));
      now = a->time_ms;
    }
    const op *p = &s->ops[a->op];
    int len = snprintf(key, sizeof key, "c%u", (unsigned)p->key);
    bk_idem_op_id id = {p->client, p->seq};
    bk_idem_outcome outcome;
    TRY_BK(bk_idem_add(t, key, (size_t)len, id, o->delta, NULL, &outcome));
    if (outcome == BK_IDEM_APPLIED) {
      running += o->delta;
      if (applied[a->op]) res->retries_applied++;
      applied[a->op]++;
    } else if (outcome == BK_IDEM_TOO_OLD) {
      res->too_old++;
      if (!applied[a->op]) res->too_old_new++;
    } else if (applied[a->op]) {
      res->dups_dismissed++;
    } else {
      res->fp_dismissed++;
      if (a->n == 0) res->fp_first++;
    }
  }
  if (trace)
    for (; slot < trace->n_slots; slot++) trace->sums[slot] = running;
  if (sample_info(t, &fpp_max, res)) goto fail;

  /* Totals, cross-checked three ways: our per-op counts, the counters'
   * sum, and the table's own applied/duplicate counts (TOO_OLD answers are
   * neither). */
  uint64_t applications = 0;
  for (uint64_t i = 0; i < s->n_ops; i++) {
    applications += applied[i];
    if (!applied[i]) res->ops_lost++;
  }
  sum_ctx sum = {0, false};
  TRY_BK(bk_idem_iterate(t, sum_counter, &sum));
  bk_idem_info info;
  TRY_BK(bk_idem_info_get(t, &info));
  res->expected = (int64_t)s->n_ops * o->delta;
  res->final = sum.sum;
  if (sum.overflow || res->final != (int64_t)applications * o->delta ||
      info.applied != applications ||
      info.duplicates + res->too_old != s->n_attempts - applications) {
    fprintf(stderr,
            PROG
            ": %s: inconsistent totals: counters sum %lld, %llu "
            "applications seen, table says %llu applied and %llu "
            "duplicates of %llu attempts\n",
            strategy_name(strategy), (long long)res->final,
            (unsigned long long)applications, (unsigned long long)info.applied,
            (unsigned long long)info.duplicates,
            (unsigned long long)s->n_attempts);
    goto fail;
  }
  res->error_pct = res->final == res->expected
                       ? 0.0 /* not -0.0 when delta < 0 */
                       : (double)(res->final - res->expected) /
                             (double)res->expected * 100.0;
  res->filter_bytes = info.filter_memory;
  res->fpp_end = info.fpp;
  res->fpp_max = fpp_max;
  res->filter_bits = info.filter_memory == 0
                         ? 0 /* HYBRID's, not made */
                         : (uint64_t)filter_width(o, strategy) * fs->m;
  res->target = strategy == BK_IDEM_NONE || strategy == BK_IDEM_WINDOW
                    ? 0.0
                    : o->target_fpp;
  res->below_window = info.below_window;
  res->slid_to_filter = info.slid_to_filter;

  bk_idem_destroy(t);
  return 0;
fail:
  bk_idem_destroy(t);
  return 1;
}

/* ---- output
 * ------------------------------------------------------------------ */

static void print_header(const options *o, const stream *s,
                         const filter_shape *fs) {
  char delay[96];
  format_delay(&o->delay, delay, sizeof delay);
  printf("# " PROG ": seed %llu\n", (unsigned long long)o->seed);
  printf("# load %s: %llu ops, base rate %g ops/s", load_name(o->load),
         (unsigned long long)o->ops, o->rate);
  if (o->load == LOAD_RISING)
    printf(" rising linearly to %g ops/s", o->rate * o->rise_factor);
  if (o->load == LOAD_BURSTY)
    printf(", %g ops/s in the last %llu ms of every %llu ms",
           o->rate * o->burst_factor, (unsigned long long)o->burst_ms,
           (unsigned long long)o->burst_every_ms);
  printf(", over %.3f s; %llu clients, %llu keys, delta %+lld\n", s->duration_s,
         (unsigned long long)o->clients, (unsigned long long)o->keys,
         (long long)o->delta);
  printf(
      "# ack loss %g, retry delay %s ms, client timeout %llu ms: %llu "
      "attempts delivered = %llu ops + %llu retries (at most %llu of one "
      "op), last at %.3f s\n",
      o->ack_loss, delay, (unsigned long long)o->timeout_ms,
      (unsigned long long)s->n_attempts, (unsigned long long)s->n_ops,
      (unsigned long long)(s->n_attempts - s->n_ops),
      (unsigned long long)s->max_retries, (double)s->last_ms / 1000.0);
  printf("# filters: N=%u past, t=%llu ms (ids kept >= %llu ms), ", o->n_past,
         (unsigned long long)fs->period_ms, (unsigned long long)o->timeout_ms);
  if (fs->ops_per_period)
    printf("sized for %g ops/s = %llu ops/period at fpp %g -> ",
           o->size_rate > 0.0 ? o->size_rate : peak_rate(o),
           (unsigned long long)fs->ops_per_period, o->target_fpp);
  printf(
      "m=%llu bits k=%u per FBF filter; RBF %llu bits k=%u; target fpp "
      "%g",
      (unsigned long long)fs->m, fs->k,
      (unsigned long long)(fs->m * (o->n_past + 2)), fs->k, o->target_fpp);
  if (o->max_filters)
    printf("; FBF_ADAPTIVE at most %u filters", o->max_filters);
  printf("; client windows W=%u seqs\n", o->window);
  uint64_t reordering = reordering_clients(o);
  if (reordering)
    printf(
        "# reordering: %llu of %llu clients hold each op back with "
        "probability 1/2 until %llu later ops of theirs were due: %llu ops "
        "held\n",
        (unsigned long long)reordering, (unsigned long long)o->clients,
        (unsigned long long)o->reorder_depth, (unsigned long long)s->n_held);
  printf(
      "# fpp_end: bk_idem_info fpp after the last attempt; fpp_max: its "
      "largest value sampled every %llu ms (before the clock moves) and "
      "at the end\n",
      (unsigned long long)o->sample_ms);
}

/* bytes_per_client: the windows' bytes over the clients holding one. */
static double bytes_per_client(const result *r) {
  return r->clients ? (double)r->window_bytes / (double)r->clients : 0.0;
}

static bool windowed(bk_idem_strategy s) {
  return s == BK_IDEM_WINDOW || s == BK_IDEM_HYBRID;
}

static void print_table(const result *r, size_t n, uint64_t n_ops) {
  printf("%-13s %10s %10s %8s %9s %9s %8s %9s %8s %9s %12s %9s %9s %9s %8s\n",
         "strategy", "expected", "final", "error%", "dups_dism", "fp_dism",
         "ops_lost", "retr_appl", "too_old", "fp_per_op", "filter_bytes",
         "fpp_end", "fpp_max", "target", "bits");
  for (size_t i = 0; i < n; i++) {
    char target[32];
    if (r[i].target > 0.0)
      snprintf(target, sizeof target, "%.3g", r[i].target);
    else
      snprintf(target, sizeof target, "-");
    printf(
        "%-13s %10lld %10lld %+8.3f %9llu %9llu %8llu %9llu %8llu %9.3g "
        "%12zu %9.3g %9.3g %9s %8llu\n",
        strategy_name(r[i].strategy), (long long)r[i].expected,
        (long long)r[i].final, r[i].error_pct,
        (unsigned long long)r[i].dups_dismissed,
        (unsigned long long)r[i].fp_dismissed,
        (unsigned long long)r[i].ops_lost,
        (unsigned long long)r[i].retries_applied,
        (unsigned long long)r[i].too_old,
        (double)r[i].fp_dismissed / (double)n_ops, r[i].filter_bytes,
        r[i].fpp_end, r[i].fpp_max, target,
        (unsigned long long)r[i].filter_bits);
  }
  bool any = false;
  for (size_t i = 0; i < n; i++) any = any || windowed(r[i].strategy);
  if (!any) return;
  printf(
      "# client windows (bk_idem_info; clients: the most held at once, "
      "window_bytes then)\n");
  printf("%-13s %11s %12s %14s %8s %12s %16s\n", "strategy", "too_old_new",
         "below_window", "slid_to_filter", "clients", "window_bytes",
         "bytes_per_client");
  for (size_t i = 0; i < n; i++) {
    if (!windowed(r[i].strategy)) continue;
    printf("%-13s %11llu %12llu %14llu %8llu %12zu %16.1f\n",
           strategy_name(r[i].strategy), (unsigned long long)r[i].too_old_new,
           (unsigned long long)r[i].below_window,
           (unsigned long long)r[i].slid_to_filter,
           (unsigned long long)r[i].clients, r[i].window_bytes,
           bytes_per_client(&r[i]));
  }
}

#define CSV_COLUMNS                                                         \
  "strategy,expected,final,error_pct,dups_dismissed,fp_dismissed,fp_first," \
  "ops_lost,retries_applied,fp_per_op,filter_bytes,filter_bits,fpp_end,"    \
  "fpp_max,target_fpp,too_old,too_old_new,below_window,slid_to_filter,"     \
  "clients,window_bytes,bytes_per_client"

static void print_csv_row(FILE *out, const result *r, uint64_t n_ops) {
  fprintf(
      out,
      "%s,%lld,%lld,%.6f,%llu,%llu,%llu,%llu,%llu,%.6g,%zu,%llu,%.6g,%.6g,"
      "%.6g,%llu,%llu,%llu,%llu,%llu,%zu,%.1f\n",
      strategy_name(r->strategy), (long long)r->expected, (long long)r->final,
      r->error_pct, (unsigned long long)r->dups_dismissed,
      (unsigned long long)r->fp_dismissed, (unsigned long long)r->fp_first,
      (unsigned long long)r->ops_lost, (unsigned long long)r->retries_applied,
      (double)r->fp_dismissed / (double)n_ops, r->filter_bytes,
      (unsigned long long)r->filter_bits, r->fpp_end, r->fpp_max, r->target,
      (unsigned long long)r->too_old, (unsigned long long)r->too_old_new,
      (unsigned long long)r->below_window,
      (unsigned long long)r->slid_to_filter, (unsigned long long)r->clients,
      r->window_bytes, bytes_per_client(r));
}

/* ---- runs
 * -------------------------------------------------------------------- */

/* DIR/NAME.csv, for a figure's data. NULL (said on stderr) on failure. */
static FILE *open_plot_csv(const options *o, const char *name, char **path) {
  return bk_plot_open_csv(PROG, o->plot_dir, name, path, stderr);
}

/* Fig. 6.7: the expected value (ops first delivered so far, times delta)
 * and each strategy's counters' sum over time, as DIR/fig6_7.csv and
 * DIR/fig6_7.png. */
static int plot_fig67(const options *o, const stream *s,
                      const sum_trace *traces) {
  char *path = NULL;
  FILE *f = open_plot_csv(o, "fig6_7", &path);
  if (!f) return 1;
  const sum_trace *t0 = &traces[0];
  fprintf(f,
          "# fig6_7: the counters' sum over time per strategy, and the "
          "expected value (first deliveries so far times delta)\n# seed "
          "%llu, %llu ops, ack loss %g\ntime_s,expected",
          (unsigned long long)o->seed, (unsigned long long)o->ops, o->ack_loss);
  for (size_t i = 0; i < o->n_strategies; i++)
    fprintf(f, ",%s", strategy_name(o->strategies[i]));
  fputc('\n', f);
  int64_t expected = 0;
  uint64_t next = 0;
  for (size_t j = 0; j < t0->n_slots; j++) {
    uint64_t end = (j + 1) * t0->slot_ms;
    for (; next < s->n_attempts && s->attempts[next].time_ms < end; next++)
      if (s->attempts[next].n == 0) expected += o->delta;
    fprintf(f, "%.3f,%lld", (double)end / 1000.0, (long long)expected);
    for (size_t i = 0; i < o->n_strategies; i++)
      fprintf(f, ",%lld", (long long)traces[i].sums[j]);
    fputc('\n', f);
  }
  bk_plot_figure fig = {
      .name = "fig6_7",
      .title =
          "Fig. 6.7: counter value over time, with and without "
          "duplicate filtering",
      .x = "time_s",
      .xlabel = "time (s)",
      .ylabel = "sum of the counters",
      .style = "lines",
      .n_series = 1,
      .series = {{"expected", "expected (each op once)"}},
  };
  for (size_t i = 0; i < o->n_strategies && fig.n_series < BK_PLOT_MAX_SERIES;
       i++) {
    const char *name = strategy_name(o->strategies[i]);
    fig.series[fig.n_series++] =
        (bk_plot_series){.column = name, .title = name};
  }
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, &fig, 1, stderr);
}

static int run_once(const options *o, const filter_shape *shape) {
  const filter_shape fs = *shape;
  stream s;
  if (make_stream(o, &s)) return 1;
  int status = 1;
  result res[N_STRATEGIES];
  sum_trace traces[N_STRATEGIES] = {{0}};
  sum_trace trace = {0}; /* the shape every strategy's trace has */
  uint32_t *applied = malloc((size_t)s.n_ops * sizeof *applied);
  if (!applied) {
    fprintf(stderr, PROG ": out of memory\n");
    goto done;
  }
  if (o->plot_dir) {
    /* About 200 points over the run, on whole milliseconds. */
    trace.slot_ms = s.last_ms / 200 + 1;
    trace.n_slots = (size_t)(s.last_ms / trace.slot_ms) + 1;
    for (size_t i = 0; i < o->n_strategies; i++) {
      traces[i] = trace;
      traces[i].sums = malloc(trace.n_slots * sizeof(int64_t));
      if (!traces[i].sums) {
        fprintf(stderr, PROG ": out of memory\n");
        goto done;
      }
    }
    trace.sums = traces[0].sums;
  }
  for (size_t i = 0; i < o->n_strategies; i++)
    if (run_strategy(o, &s, &fs, o->strategies[i], applied, &res[i],
                     trace.sums ? &traces[i] : NULL))
      goto done;
  print_header(o, &s, &fs);
  if (o->csv) {
    printf(CSV_COLUMNS "\n");
    for (size_t i = 0; i < o->n_strategies; i++)
      print_csv_row(stdout, &res[i], s.n_ops);
  } else {
    print_table(res, o->n_strategies, s.n_ops);
  }
  status = o->plot_dir ? plot_fig67(o, &s, traces) : 0;
done:
  for (size_t i = 0; i < o->n_strategies; i++) free(traces[i].sums);
  free(applied);
  stream_free(&s);
  return status;
}

static int run_sweep(const options *base, const filter_shape *shape,
                     FILE *out) {
  options o = *base;
  const filter_shape fs = *shape;
  char delay[96];
  format_delay(&o.delay, delay, sizeof delay);
  fprintf(out,
          "# " PROG
          " --sweep-retry: seed %llu; load %s, %llu ops, base rate "
          "%g ops/s, %llu clients, %llu keys; retry delay %s ms, timeout %llu "
          "ms\n",
          (unsigned long long)o.seed, load_name(o.load),
          (unsigned long long)o.ops, o.rate, (unsigned long long)o.clients,
          (unsigned long long)o.keys, delay, (unsigned long long)o.timeout_ms);
  fprintf(out,
          "# filters: N=%u, t=%llu ms, FBF m=%llu bits k=%u per filter (%llu "
          "bits in all), RBF %llu bits k=%u (equal memory), target fpp %g\n",
          o.n_past, (unsigned long long)fs.period_ms, (unsigned long long)fs.m,
          fs.k, (unsigned long long)(fs.m * (o.n_past + 2)),
          (unsigned long long)(fs.m * (o.n_past + 2)), fs.k, o.target_fpp);
  fprintf(out,
          "# ack_loss: share of acks lost (each lost ack -> one retry); "
          "retries: delivered retries; fpp_max sampled every %llu ms\n",
          (unsigned long long)o.sample_ms);
  fprintf(out, "ack_loss,retries,retries_per_op," CSV_COLUMNS "\n");
  uint32_t *applied = malloc((size_t)o.ops * sizeof *applied);
  if (!applied) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  int status = 0;
  for (size_t v = 0; v < o.n_sweep && !status; v++) {
    o.ack_loss = o.sweep_values[v];
    stream s;
    if (make_stream(&o, &s)) {
      status = 1;
      break;
    }
    for (size_t i = 0; i < o.n_strategies && !status; i++) {
      result r;
      status = run_strategy(&o, &s, &fs, o.strategies[i], applied, &r, NULL);
      if (status) break;
      uint64_t retries = s.n_attempts - s.n_ops;
      fprintf(out, "%g,%llu,%.6f,", o.ack_loss, (unsigned long long)retries,
              (double)retries / (double)s.n_ops);
      print_csv_row(out, &r, s.n_ops);
    }
    stream_free(&s);
  }
  free(applied);
  return status;
}

/* The sweep's CSV on stdout and, with --plot, as DIR/fig6_9.csv drawn as
 * Fig. 6.9: the error against the retry frequency, per strategy. */
static int sweep_and_plot(const options *o, const filter_shape *fs) {
  if (!o->plot_dir) return run_sweep(o, fs, stdout);
  char *path = NULL;
  FILE *f = open_plot_csv(o, "fig6_9", &path);
  if (!f) return 1;
  int status = run_sweep(o, fs, f);
  if (fclose(f) != 0) {
    fprintf(stderr, PROG ": cannot write %s\n", path);
    status = 1;
  }
  if (!status) { /* the same CSV on stdout, as without --plot */
    FILE *in = fopen(path, "r");
    char buf[4096];
    size_t n;
    if (!in) status = 1;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
      fwrite(buf, 1, n, stdout);
    if (in) fclose(in);
  }
  bk_plot_figure fig = {
      .name = "fig6_9",
      .csv = path,
      .title = "Fig. 6.9: counter error as retries grow (|error| %)",
      .x = "retries_per_op",
      .xlabel = "retries per op (from the share of lost acks)",
      .ylabel = "|counter error| (%)",
      .logy = true,
  };
  for (size_t i = 0; i < o->n_strategies; i++) {
    const char *name = strategy_name(o->strategies[i]);
    fig.series[fig.n_series++] = (bk_plot_series){.column = "error_pct",
                                                  .title = name,
                                                  .filter_column = "strategy",
                                                  .filter_value = name,
                                                  .absolute = true};
  }
  if (!status) status = bk_plot_draw(o->plot_dir, &fig, stderr);
  free(path);
  return status;
}

/* ---- command line ----------------------------------------------------------
 */

/* A finite double, the whole text (for --retry-delay's fields). */
static bool parse_double(const char *text, double *out) {
  if (!text[0] || isspace((unsigned char)text[0])) return false;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (errno || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

/* --retry-delay: up to three ':'-separated numbers after "name:". */
static bool parse_delay(const char *text, void *dest) {
  delay_dist *d = dest;
  char buf[128];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *colon = strchr(buf, ':');
  if (!colon) return false;
  *colon = '\0';
  char *rest = colon + 1;
  if (strcmp(buf, "fixed") == 0) {
    d->kind = DELAY_FIXED;
    d->b = 0.0;
    return parse_double(rest, &d->a) && d->a >= 1.0;
  }
  if (strcmp(buf, "exp") == 0) {
    d->kind = DELAY_EXP;
    d->b = 0.0;
    return parse_double(rest, &d->a) && d->a >= 1.0;
  }
  if (strcmp(buf, "uniform") == 0) {
    char *second = strchr(rest, ':');
    if (!second) return false;
    *second = '\0';
    d->kind = DELAY_UNIFORM;
    return parse_double(rest, &d->a) && parse_double(second + 1, &d->b) &&
           d->a >= 0.0 && d->b >= d->a && d->b >= 1.0;
  }
  return false;
}

/* What the option table can't check: combinations of options. */
static int check_options(const options *o) {
  if (o->delta == 0)
    return bk_cli_usage_error(stderr, PROG,
                              "--delta: '0' is not allowed; expected a "
                              "nonzero integer from %d to %d",
                              -MAX_DELTA, MAX_DELTA);
  if ((o->fbf_m != 0) != (o->fbf_k != 0))
    return bk_cli_usage_error(stderr, PROG,
                              "--fbf-m and --fbf-k go together (only %s was "
                              "given)",
                              o->fbf_m ? "--fbf-m" : "--fbf-k");
  if ((o->reorder_share > 0.0) != (o->reorder_depth != 0))
    return bk_cli_usage_error(
        stderr, PROG,
        "--reorder-share and --reorder-depth go "
        "together (only %s was given)",
        o->reorder_depth ? "--reorder-depth" : "--reorder-share");
  if (o->window & (o->window - 1))
    return bk_cli_usage_error(
        stderr, PROG, "--window: '%u' is not a power of two", o->window);
  if (o->load == LOAD_BURSTY && o->burst_ms > o->burst_every_ms)
    return bk_cli_usage_error(
        stderr, PROG, "--burst-ms %llu exceeds --burst-every %llu",
        (unsigned long long)o->burst_ms, (unsigned long long)o->burst_every_ms);
  if (o->max_filters && o->max_filters < o->n_past + 2)
    return bk_cli_usage_error(stderr, PROG,
                              "--max-filters %u is below --n-past %u + 2",
                              o->max_filters, o->n_past);
  if (o->fbf_m && o->fbf_m * (o->n_past + 2) > BK_BITS_MAX)
    return bk_cli_usage_error(
        stderr, PROG,
        "--fbf-m %llu times (--n-past %u + 2) is %llu bits, more than 2^40",
        (unsigned long long)o->fbf_m, o->n_past,
        (unsigned long long)(o->fbf_m * (o->n_past + 2)));
  return 0;
}

/* Create (and drop) each strategy's table once, so that options bloomkit
 * refuses are reported as such, naming them, before the stream is built. */
static int check_tables(const options *o, const filter_shape *fs) {
  for (size_t i = 0; i < o->n_strategies; i++) {
    bk_idem_config cfg = idem_config(o, fs, o->strategies[i]);
    bk_idem *t = NULL;
    bk_status st = bk_idem_create(&t, &cfg);
    bk_idem_destroy(t);
    if (st == BK_OK) continue;
    char sizing[160];
    describe_sizing(o, sizing, sizeof sizing);
    unsigned width = filter_width(o, o->strategies[i]);
    if (st == BK_ENOMEM) {
      fprintf(stderr,
              PROG
              ": out of memory creating the %s filters: %u x %llu bits "
              "(m %s)\n",
              strategy_name(o->strategies[i]), width, (unsigned long long)fs->m,
              sizing);
      return 1;
    }
    return bk_cli_usage_error(
        stderr, PROG,
        "the %s filters, %u x %llu bits (m %s; --n-past %u, --timeout %llu), "
        "are not possible (%s); use smaller filters",
        strategy_name(o->strategies[i]), width, (unsigned long long)fs->m,
        sizing, o->n_past, (unsigned long long)o->timeout_ms, bk_strerror(st));
  }
  return 0;
}

#define RETRY_DELAY_ALLOWED                                             \
  "fixed:MS, uniform:LO:HI or exp:MEAN with MS, MEAN >= 1 and 0 <= LO " \
  "<= HI, HI >= 1"

#define SIM_DESCRIPTION                                                    \
  "Idempotent counters under client retries (FBF thesis Sec. 6.4,\n"       \
  "Fig. 6.7 and 6.9), in simulated time (ms). One stream of delivered\n"   \
  "attempts (first deliveries and retries after lost acks) is generated\n" \
  "and replayed into a bk_idem table per strategy; a table per strategy\n" \
  "(or CSV) reports the expected and final sums, error %, duplicates\n"    \
  "dismissed, genuine updates dismissed by false positives, retries\n"     \
  "applied again, ops refused as below the client window (TOO_OLD),\n"     \
  "filter and client window memory and the fpp estimate.\n"

/* Its %-fields are filled from the SWEEP_* defaults. */
#define SIM_EPILOG_FORMAT                                                   \
  "--sweep-retry uses, unless given: --fbf-m %u --fbf-k %u --n-past %u\n"   \
  "--target-fpp %g --rate %g --ops %u --timeout %u --strategies RBF,FBF;\n" \
  "its output is always CSV.\n"                                             \
  "\n"                                                                      \
  "columns: expected = ops * delta; final = sum of the counters;\n"         \
  "error%% = (final - expected) / expected; dups_dism = retries\n"          \
  "dismissed; fp_dism = attempts dismissed before their op was ever\n"      \
  "applied (false positives; fp_first: of them, first deliveries);\n"       \
  "ops_lost = ops never applied; retr_appl = attempts applied again\n"      \
  "(over-count); fp_per_op = fp_dism / ops; filter_bytes =\n"               \
  "bk_idem_info filter_memory; fpp_end = bk_idem_info fpp at the end,\n"    \
  "fpp_max = its largest sample; target = the fpp target in force;\n"       \
  "bits = filter bits (lane width * m for the FBFs, (N + 2) m RBF);\n"      \
  "too_old = attempts answered TOO_OLD (WINDOW: below the client's\n"       \
  "window, not applied; a genuine update so refused is lost, counted in\n"  \
  "ops_lost). WINDOW and HYBRID add a table: too_old_new (TOO_OLD\n"        \
  "before the op was applied), below_window and slid_to_filter\n"           \
  "(bk_idem_info), clients (the most at once) and window_bytes then,\n"     \
  "bytes_per_client\n"

static int sim_counters(int argc, char **argv) {
  options o = {0};
  unsigned load, strategies[N_STRATEGIES];
  bool set_fbf_k;
  bk_cli_opt opts[] = {
      BK_CLI_U64("ops", &o.ops, DEFAULT_OPS, 1, MAX_OPS, "N",
                 "original increments", .section = "workload",
                 .given = &o.set_ops),
      BK_CLI_U64("clients", &o.clients, DEFAULT_CLIENTS, 1, MAX_OPS, "N",
                 "clients issuing them"),
      BK_CLI_U64("keys", &o.keys, DEFAULT_KEYS, 1, MAX_KEYS, "N",
                 "counters c0..c{N-1}"),
      BK_CLI_I64("delta", &o.delta, 1, -MAX_DELTA, MAX_DELTA, "D",
                 "increment of every op, not 0"),
      BK_CLI_DOUBLE("rate", &o.rate, DEFAULT_RATE, 0.001, 1e9, "R",
                    "base rate in ops/s", .given = &o.set_rate),
      BK_CLI_CHOICE("load", &load, "steady", load_names, "SHAPE",
                    "steady: R; rising: linear from R to F*R over the run; "
                    "bursty: B*R during the last --burst-ms of every "
                    "--burst-every ms, else R"),
      BK_CLI_DOUBLE("rise-factor", &o.rise_factor, DEFAULT_RISE, 0.0, 1e6, "F",
                    "the rising load's final rate, in R",
                    .d_open = BK_CLI_OPEN_MIN),
      BK_CLI_DOUBLE("burst-factor", &o.burst_factor, DEFAULT_BURST_FACTOR, 1.0,
                    1e6, "B", "the bursty load's rate in a burst, in R"),
      BK_CLI_U64("burst-ms", &o.burst_ms, DEFAULT_BURST_MS, 1, MAX_MS, "MS",
                 "length of a burst"),
      BK_CLI_U64("burst-every", &o.burst_every_ms, DEFAULT_BURST_EVERY_MS, 1,
                 MAX_MS, "MS", "the bursts' cycle"),
      BK_CLI_DOUBLE("ack-loss", &o.ack_loss, DEFAULT_ACK_LOSS, 0.0, 1.0, "P",
                    "share of acks lost, each one retried; a retry's ack may "
                    "be lost again"),
      BK_CLI_CUSTOM("retry-delay", &o.delay, "uniform:200:1000", parse_delay,
                    RETRY_DELAY_ALLOWED, "D",
                    "delay of a retry (ms), from the attempt whose ack was "
                    "lost"),
      BK_CLI_U64("timeout", &o.timeout_ms, DEFAULT_TIMEOUT_MS, 1, MAX_MS, "MS",
                 "clients send no retry later than MS after the first send; "
                 "also the filters' window",
                 .given = &o.set_timeout),
      BK_CLI_DOUBLE("reorder-share", &o.reorder_share, 0.0, 0.0, 1.0, "P",
                    "share of clients that hold ops back (each op with "
                    "probability 1/2), with --reorder-depth"),
      BK_CLI_U64("reorder-depth", &o.reorder_depth, 0, 0, MAX_OPS, "D",
                 "a held op is sent after the client's next D ops (D above "
                 "--window: below the window)",
                 .default_text = "0, every client in order"),
      BK_CLI_CHOICE_LIST(
          "strategies", strategies, &o.n_strategies, N_STRATEGIES,
          "NONE,RBF,FBF,FBF_ADAPTIVE,WINDOW,HYBRID", strategy_names, "LIST",
          "the strategies to run",
          .section = "filters (bk_idem; t = ceil(timeout / (N + 1)))",
          .given = &o.set_strategies),
      BK_CLI_UNSIGNED("n-past", &o.n_past, DEFAULT_N_PAST, 1, 62, "N",
                      "past filters", .given = &o.set_n_past),
      BK_CLI_DOUBLE("target-fpp", &o.target_fpp, DEFAULT_TARGET_FPP, 0.0, 1.0,
                    "P", "sizing target and RBF / FBF_ADAPTIVE threshold",
                    .d_open = BK_CLI_OPEN_MIN | BK_CLI_OPEN_MAX,
                    .given = &o.set_target),
      BK_CLI_DOUBLE("size-rate", &o.size_rate, 0.0, 0.001, 1e9, "R",
                    "size the filters for R ops/s",
                    .default_text = "the load's peak rate"),
      BK_CLI_U64("fbf-m", &o.fbf_m, 0, 8, MAX_FBF_M, "BITS",
                 "bits per FBF filter (with --fbf-k) instead of sizing; the "
                 "RBF gets (N + 2) * BITS",
                 .default_text = "sized", .given = &o.set_fbf),
      BK_CLI_UNSIGNED("fbf-k", &o.fbf_k, 0, 1, BK_K_MAX, "K",
                      "hash functions, with --fbf-m", .default_text = "sized",
                      .given = &set_fbf_k),
      BK_CLI_UNSIGNED("max-filters", &o.max_filters, 0, 3, BK_FBF_MAX_FILTERS,
                      "W", "FBF_ADAPTIVE ceiling",
                      .default_text = "4 (N + 2), at most 64"),
      BK_CLI_UNSIGNED("window", &o.window, BK_IDEM_WINDOW_DEFAULT,
                      BK_IDEM_WINDOW_MIN, BK_IDEM_WINDOW_MAX, "W",
                      "seqs in each client's window (WINDOW, HYBRID), a power "
                      "of two"),
      BK_CLI_FLAG("csv", &o.csv, "CSV, one row per strategy",
                  .section = "output"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/fig6_7.csv and .png (the counters' sum "
                    "over time per strategy) or, with --sweep-retry, "
                    "DIR/fig6_9.csv and .png (error against retries), drawn "
                    "with gnuplot",
                    .default_text = "no pictures"),
      BK_CLI_U64("sample-ms", &o.sample_ms, DEFAULT_SAMPLE_MS, 1, MAX_MS, "MS",
                 "fpp sampling interval"),
      BK_CLI_U64("seed", &o.seed, DEFAULT_SEED, 0, UINT64_MAX, "N", "run seed"),
      BK_CLI_DOUBLE_LIST("sweep-retry", o.sweep_values, &o.n_sweep, MAX_SWEEP,
                         NULL, 0.0, 1.0, "LIST",
                         "Fig. 6.9: one CSV row per (ack-loss value, "
                         "strategy), e.g. " SWEEP_DEFAULT_VALUES,
                         .default_text = "off", .given = &o.sweep),
  };
  char epilog[2048];
  snprintf(epilog, sizeof epilog, SIM_EPILOG_FORMAT, SWEEP_M_BITS, SWEEP_K,
           SWEEP_N_PAST, SWEEP_TARGET_FPP, SWEEP_RATE, SWEEP_OPS,
           SWEEP_TIMEOUT_MS);
  const bk_cli_command cmd = {
      .prog = PROG,
      .description = SIM_DESCRIPTION,
      .epilog = epilog,
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
  };
  int status = bk_cli_parse(&cmd, argc, argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  o.load = (load_kind)load;
  for (size_t i = 0; i < o.n_strategies; i++)
    o.strategies[i] = all_strategies[strategies[i]];
  if (o.sweep) {
    if (!o.set_fbf && !set_fbf_k) {
      o.fbf_m = SWEEP_M_BITS;
      o.fbf_k = SWEEP_K;
    }
    if (!o.set_n_past) o.n_past = SWEEP_N_PAST;
    if (!o.set_target) o.target_fpp = SWEEP_TARGET_FPP;
    if (!o.set_rate) o.rate = SWEEP_RATE;
    if (!o.set_ops) o.ops = SWEEP_OPS;
    if (!o.set_timeout) o.timeout_ms = SWEEP_TIMEOUT_MS;
    if (!o.set_strategies) {
      o.strategies[0] = BK_IDEM_RBF;
      o.strategies[1] = BK_IDEM_FBF;
      o.n_strategies = 2;
    }
  }
  if (o.plot_dir) {
    if (bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
  }
  filter_shape fs;
  if ((status = check_options(&o)) || (status = shape_filters(&o, &fs)) ||
      (status = check_tables(&o, &fs)))
    return status;
  status = o.sweep ? sweep_and_plot(&o, &fs) : run_once(&o, &fs);
  return bk_cli_flush_output(PROG, status, stdout, stderr);
}

/* ---- `bloomkit sim` ------------------------------------------------------ */

static const bk_cli_subcommand simulations[] = {
    {"counters",
     "idempotent counters under client retries: NONE / RBF / FBF / "
     "FBF_ADAPTIVE / WINDOW / HYBRID (thesis Fig. 6.7, 6.9)",
     sim_counters},
    {"clocks",
     "Bloom clocks against vector clocks on a simulated execution "
     "(issue #12)",
     bk_cli_sim_clocks},
    {"dkbf",
     "d-kBF slab load balancing: Algorithm 8 over random settings (kBF "
     "paper Figs. 20-23)",
     bk_cli_sim_dkbf},
};

int bk_cli_sim(int argc, char **argv) {
  const bk_cli_dispatcher sim = {
      .prog = "bloomkit sim",
      .noun = "simulation",
      .subs = simulations,
      .n_subs = sizeof simulations / sizeof simulations[0],
  };
  return bk_cli_dispatch(&sim, argc, argv);
}
