/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit sim counters`: idempotent counters under client retries (FBF
 * thesis chapter 5 and Sec. 6.4: Fig. 6.7, counters with and without an FBF;
 * Fig. 6.9, an FBF against a Recyclable Bloom Filter of equal memory), run
 * on bk_idem in simulated time. `bloomkit sim` is the dispatcher: its first
 * argument names the simulation (only `counters` so far).
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
 * Randomness (seeded by --seed, one splitmix64 stream per purpose, so the
 * op stream is identical across strategies and, in a sweep, the ops
 * (clients, keys, arrival times) are the same at every ack-loss value):
 * stream 1 clients and keys, stream 2 ack losses, stream 3 retry delays.
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
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/idem.h"
#include "bloomkit/params.h"
#include "cli/cli.h"

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

#define MAX_OPS 100000000u
#define MAX_ATTEMPTS 20000000u
#define MAX_ATTEMPTS_PER_OP 60000u
#define MAX_DELTA 1000000
#define MAX_SWEEP 64u
#define N_STRATEGIES 4u

/* ---- errors ----------------------------------------------------------------
 */

/* Every bloomkit call goes through this: on error, name the call and the
 * status, and leave through the function's `fail` label (exit status 1). */

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
    BK_IDEM_NONE, BK_IDEM_RBF, BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE};

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
  /* filters */
  uint64_t fbf_m; /* 0: sized from size_rate */
  unsigned fbf_k;
  unsigned n_past;
  double target_fpp;
  double size_rate;     /* 0: the load's peak rate */
  unsigned max_filters; /* 0: bk_idem's default */
  uint64_t sample_ms;
  /* what to run */
  bk_idem_strategy strategies[N_STRATEGIES];
  size_t n_strategies;
  bool csv;
  bool sweep;
  double sweep_values[MAX_SWEEP];
  size_t n_sweep;
  /* which options were given (sweep defaults fill the others) */
  bool set_ops, set_rate, set_timeout, set_fbf, set_n_past, set_target,
      set_strategies;
} options;

static const char *strategy_name(bk_idem_strategy s) {
  switch (s) {
    case BK_IDEM_NONE:
      return "NONE";
    case BK_IDEM_RBF:
      return "RBF";
    case BK_IDEM_FBF:
      return "FBF";
    case BK_IDEM_FBF_ADAPTIVE:
      return "FBF_ADAPTIVE";
  }
  return "?";
}

static const char *load_name(load_kind k) {
  switch (k) {
    case LOAD_STEADY:
      return "steady";
    case LOAD_RISING:
      return "rising";
    case LOAD_BURSTY:
      return "bursty";
  }
  return "?";
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

/* Generate the ops and every delivered attempt, sorted by time. */
static int make_stream(const options *o, stream *s) {
  memset(s, 0, sizeof *s);
  s->n_ops = o->ops;
  s->ops = malloc((size_t)o->ops * sizeof *s->ops);
  uint64_t *next_seq = calloc((size_t)o->clients, sizeof *next_seq);
  uint64_t cap = o->ops + o->ops / 8 + 16;
  s->attempts = malloc((size_t)cap * sizeof *s->attempts);
  if (!s->ops || !next_seq || !s->attempts) {
    fprintf(stderr, PROG ": out of memory\n");
    free(next_seq);
    stream_free(s);
    return 1;
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
    /* Whole ms: the first send at floor(T), each retry at that plus the
     * floor of the summed delays, so a retry sent within the timeout is
     * never more than `timeout` ms after the first delivery. */
    uint64_t first_ms = (uint64_t)(t * 1000.0);
    double since = 0.0; /* ms since the first send */
    uint64_t n = 0;
    if (push_attempt(s, &cap, first_ms, i, 0)) goto fail;
    while (rng_unit(&loss) < o->ack_loss) {
      since += draw_delay(&o->delay, &wait);
      if (since > timeout || n + 1 >= MAX_ATTEMPTS_PER_OP) break;
      n++;
      if (push_attempt(s, &cap, first_ms + (uint64_t)since, i, n)) goto fail;
    }
    if (n > s->max_retries) s->max_retries = n;
  }
  free(next_seq);
  qsort(s->attempts, (size_t)s->n_attempts, sizeof *s->attempts, cmp_attempt);
  s->last_ms = s->n_attempts ? s->attempts[s->n_attempts - 1].time_ms : 0;
  return 0;
fail:
  free(next_seq);
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
  fs->ops_per_period = per < 1.0 ? 1u : (uint64_t)per;
  /* What bk_idem derives (for the header and filter_bits). */
  TRY_BK(
      bk_params_optimal(2 * fs->ops_per_period, o->target_fpp, &fs->m, &fs->k));
  return 0;
fail:
  return 1;
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

static int sample_fpp(const bk_idem *t, double *max) {
  bk_idem_info info;
  TRY_BK(bk_idem_info_get(t, &info));
  if (info.fpp > *max) *max = info.fpp;
  return 0;
fail:
  return 1;
}

static int run_strategy(const options *o, const stream *s,
                        const filter_shape *fs, bk_idem_strategy strategy,
                        uint32_t *applied, result *res) {
  bk_idem *t = NULL;
  memset(res, 0, sizeof *res);
  res->strategy = strategy;
  memset(applied, 0, (size_t)s->n_ops * sizeof *applied);
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
      .start_time = 0,
      .expected_keys = o->keys,
      .hash_alg = BK_HASH_XXH3,
      .seed = splitmix_output(o->seed + 4 * SPLITMIX_GAMMA),
  };
  TRY_BK(bk_idem_create(&t, &cfg));
  double fpp_max = 0.0;
  uint64_t now = 0;
  char key[32];
  for (uint64_t i = 0; i < s->n_attempts; i++) {
    const attempt *a = &s->attempts[i];
    if (a->time_ms > now) {
      if (a->time_ms / o->sample_ms != now / o->sample_ms &&
          sample_fpp(t, &fpp_max))
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
      if (applied[a->op]) res->retries_applied++;
      applied[a->op]++;
    } else if (applied[a->op]) {
      res->dups_dismissed++;
    } else {
      res->fp_dismissed++;
      if (a->n == 0) res->fp_first++;
    }
  }
  if (sample_fpp(t, &fpp_max)) goto fail;

  /* Totals, cross-checked three ways: our per-op counts, the counters'
   * sum, and the table's own applied/duplicate counts. */
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
      info.duplicates != s->n_attempts - applications) {
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
  unsigned width = o->n_past + 2;
  if (strategy == BK_IDEM_FBF_ADAPTIVE) {
    width = o->max_filters ? o->max_filters : 4 * (o->n_past + 2);
    if (width > 64) width = 64;
  }
  res->filter_bits = strategy == BK_IDEM_NONE ? 0 : (uint64_t)width * fs->m;
  res->target = strategy == BK_IDEM_NONE ? 0.0 : o->target_fpp;
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
  printf("\n");
  printf(
      "# fpp_end: bk_idem_info fpp after the last attempt; fpp_max: its "
      "largest value sampled every %llu ms (before the clock moves) and "
      "at the end\n",
      (unsigned long long)o->sample_ms);
}

static void print_table(const result *r, size_t n, uint64_t n_ops) {
  printf("%-13s %10s %10s %8s %9s %9s %8s %9s %9s %12s %9s %9s %9s %8s\n",
         "strategy", "expected", "final", "error%", "dups_dism", "fp_dism",
         "ops_lost", "retr_appl", "fp_per_op", "filter_bytes", "fpp_end",
         "fpp_max", "target", "bits");
  for (size_t i = 0; i < n; i++) {
    char target[32];
    if (r[i].target > 0.0)
      snprintf(target, sizeof target, "%.3g", r[i].target);
    else
      snprintf(target, sizeof target, "-");
    printf(
        "%-13s %10lld %10lld %+8.3f %9llu %9llu %8llu %9llu %9.3g %12zu "
        "%9.3g %9.3g %9s %8llu\n",
        strategy_name(r[i].strategy), (long long)r[i].expected,
        (long long)r[i].final, r[i].error_pct,
        (unsigned long long)r[i].dups_dismissed,
        (unsigned long long)r[i].fp_dismissed,
        (unsigned long long)r[i].ops_lost,
        (unsigned long long)r[i].retries_applied,
        (double)r[i].fp_dismissed / (double)n_ops, r[i].filter_bytes,
        r[i].fpp_end, r[i].fpp_max, target,
        (unsigned long long)r[i].filter_bits);
  }
}

#define CSV_COLUMNS                                                         \
  "strategy,expected,final,error_pct,dups_dismissed,fp_dismissed,fp_first," \
  "ops_lost,retries_applied,fp_per_op,filter_bytes,filter_bits,fpp_end,"    \
  "fpp_max,target_fpp"

static void print_csv_row(const result *r, uint64_t n_ops) {
  printf(
      "%s,%lld,%lld,%.6f,%llu,%llu,%llu,%llu,%llu,%.6g,%zu,%llu,%.6g,%.6g,"
      "%.6g\n",
      strategy_name(r->strategy), (long long)r->expected, (long long)r->final,
      r->error_pct, (unsigned long long)r->dups_dismissed,
      (unsigned long long)r->fp_dismissed, (unsigned long long)r->fp_first,
      (unsigned long long)r->ops_lost, (unsigned long long)r->retries_applied,
      (double)r->fp_dismissed / (double)n_ops, r->filter_bytes,
      (unsigned long long)r->filter_bits, r->fpp_end, r->fpp_max, r->target);
}

/* ---- runs
 * -------------------------------------------------------------------- */

static int run_once(const options *o) {
  filter_shape fs;
  if (shape_filters(o, &fs)) return 1;
  stream s;
  if (make_stream(o, &s)) return 1;
  int status = 1;
  result res[N_STRATEGIES];
  uint32_t *applied = malloc((size_t)s.n_ops * sizeof *applied);
  if (!applied) {
    fprintf(stderr, PROG ": out of memory\n");
    goto done;
  }
  for (size_t i = 0; i < o->n_strategies; i++)
    if (run_strategy(o, &s, &fs, o->strategies[i], applied, &res[i])) goto done;
  print_header(o, &s, &fs);
  if (o->csv) {
    printf(CSV_COLUMNS "\n");
    for (size_t i = 0; i < o->n_strategies; i++)
      print_csv_row(&res[i], s.n_ops);
  } else {
    print_table(res, o->n_strategies, s.n_ops);
  }
  status = 0;
done:
  free(applied);
  stream_free(&s);
  return status;
}

static int run_sweep(const options *base) {
  options o = *base;
  filter_shape fs;
  if (shape_filters(&o, &fs)) return 1;
  char delay[96];
  format_delay(&o.delay, delay, sizeof delay);
  printf("# " PROG
         " --sweep-retry: seed %llu; load %s, %llu ops, base rate "
         "%g ops/s, %llu clients, %llu keys; retry delay %s ms, timeout %llu "
         "ms\n",
         (unsigned long long)o.seed, load_name(o.load),
         (unsigned long long)o.ops, o.rate, (unsigned long long)o.clients,
         (unsigned long long)o.keys, delay, (unsigned long long)o.timeout_ms);
  printf(
      "# filters: N=%u, t=%llu ms, FBF m=%llu bits k=%u per filter (%llu "
      "bits in all), RBF %llu bits k=%u (equal memory), target fpp %g\n",
      o.n_past, (unsigned long long)fs.period_ms, (unsigned long long)fs.m,
      fs.k, (unsigned long long)(fs.m * (o.n_past + 2)),
      (unsigned long long)(fs.m * (o.n_past + 2)), fs.k, o.target_fpp);
  printf(
      "# ack_loss: share of acks lost (each lost ack -> one retry); "
      "retries: delivered retries; fpp_max sampled every %llu ms\n",
      (unsigned long long)o.sample_ms);
  printf("ack_loss,retries,retries_per_op," CSV_COLUMNS "\n");
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
      status = run_strategy(&o, &s, &fs, o.strategies[i], applied, &r);
      if (status) break;
      uint64_t retries = s.n_attempts - s.n_ops;
      printf("%g,%llu,%.6f,", o.ack_loss, (unsigned long long)retries,
             (double)retries / (double)s.n_ops);
      print_csv_row(&r, s.n_ops);
    }
    stream_free(&s);
  }
  free(applied);
  return status;
}

/* ---- command line ----------------------------------------------------------
 */

static void help(FILE *out) {
  fprintf(
      out,
      "usage: bloomkit sim counters [options]\n"
      "\n"
      "Idempotent counters under client retries (FBF thesis Sec. 6.4,\n"
      "Fig. 6.7 and 6.9), in simulated time (ms). One stream of delivered\n"
      "attempts (first deliveries and retries after lost acks) is generated\n"
      "and replayed into a bk_idem table per strategy; a table per strategy\n"
      "(or CSV) reports the expected and final sums, error %%, duplicates\n"
      "dismissed, genuine updates dismissed by false positives, retries\n"
      "applied again, filter memory and the fpp estimate.\n"
      "\n"
      "workload:\n"
      "  --ops N              original increments (default %u)\n"
      "  --clients N          clients issuing them (default %u)\n"
      "  --keys N             counters c0..c{N-1} (default %u)\n"
      "  --delta D            increment of every op (default 1)\n"
      "  --rate R             base rate in ops/s (default %g)\n"
      "  --load SHAPE         steady | rising | bursty (default steady):\n"
      "                       steady: R; rising: linear from R to F*R over\n"
      "                       the run; bursty: B*R during the last --burst-ms\n"
      "                       of every --burst-every ms, else R\n"
      "  --rise-factor F      (default %g)\n"
      "  --burst-factor B     (default %g)\n"
      "  --burst-ms MS        (default %u)\n"
      "  --burst-every MS     (default %u)\n"
      "  --ack-loss P         share of acks lost, each one retried (default\n"
      "                       %g); a retry's ack may be lost again\n"
      "  --retry-delay D      fixed:MS | uniform:LO:HI | exp:MEAN, from the\n"
      "                       attempt whose ack was lost (default\n"
      "                       uniform:200:1000)\n"
      "  --timeout MS         clients send no retry later than MS after the\n"
      "                       first send; also the filters' window (default\n"
      "                       %u)\n"
      "\n"
      "filters (bk_idem; t = ceil(timeout / (N + 1))):\n"
      "  --strategies LIST    of NONE,RBF,FBF,FBF_ADAPTIVE (default all)\n"
      "  --n-past N           past filters (default %u)\n"
      "  --target-fpp P       sizing target and RBF / FBF_ADAPTIVE threshold\n"
      "                       (default %g)\n"
      "  --size-rate R        size filters for R ops/s (default: the load's\n"
      "                       peak rate)\n"
      "  --fbf-m BITS         bits per FBF filter (with --fbf-k), instead of\n"
      "                       sizing; the RBF gets (N + 2) * BITS\n"
      "  --fbf-k K            hash functions (with --fbf-m)\n"
      "  --max-filters W      FBF_ADAPTIVE ceiling (default 4 (N + 2))\n"
      "\n"
      "output:\n"
      "  --csv                CSV, one row per strategy\n"
      "  --sample-ms MS       fpp sampling interval (default %u)\n"
      "  --seed N             run seed (default %u)\n"
      "  --sweep-retry LIST   Fig. 6.9: one CSV row per (ack-loss value,\n"
      "                       strategy), e.g. %s. Unless given,\n"
      "                       the sweep uses --fbf-m %u --fbf-k %u --n-past "
      "%u\n"
      "                       --target-fpp %g --rate %g --ops %u --timeout %u\n"
      "                       --strategies RBF,FBF\n"
      "                       (always CSV)\n"
      "  -h, --help           this text\n"
      "\n"
      "columns: expected = ops * delta; final = sum of the counters;\n"
      "error%% = (final - expected) / expected; dups_dism = retries\n"
      "dismissed; fp_dism = attempts dismissed before their op was ever\n"
      "applied (false positives; fp_first: of them, first deliveries);\n"
      "ops_lost = ops never applied; retr_appl = attempts applied again\n"
      "(over-count); fp_per_op = fp_dism / ops; filter_bytes =\n"
      "bk_idem_info filter_memory; fpp_end = bk_idem_info fpp at the end,\n"
      "fpp_max = its largest sample; target = the fpp target in force;\n"
      "bits = filter bits (lane width * m for the FBFs, (N + 2) m RBF)\n",
      DEFAULT_OPS, DEFAULT_CLIENTS, DEFAULT_KEYS, DEFAULT_RATE, DEFAULT_RISE,
      DEFAULT_BURST_FACTOR, DEFAULT_BURST_MS, DEFAULT_BURST_EVERY_MS,
      DEFAULT_ACK_LOSS, DEFAULT_TIMEOUT_MS, DEFAULT_N_PAST, DEFAULT_TARGET_FPP,
      DEFAULT_SAMPLE_MS, DEFAULT_SEED, SWEEP_DEFAULT_VALUES, SWEEP_M_BITS,
      SWEEP_K, SWEEP_N_PAST, SWEEP_TARGET_FPP, SWEEP_RATE, SWEEP_OPS,
      SWEEP_TIMEOUT_MS);
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, PROG ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\ntry '" PROG " --help'\n");
  return 2;
}

/* A decimal u64: digits only, no sign, no overflow. */
static bool parse_u64(const char *text, uint64_t *out) {
  if (!text || !text[0]) return false;
  for (const char *p = text; *p; p++)
    if (*p < '0' || *p > '9') return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || *end) return false;
  *out = (uint64_t)v;
  return true;
}

/* A finite double, the whole text. */
static bool parse_double(const char *text, double *out) {
  if (!text || !text[0]) return false;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (errno || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

static bool parse_i64(const char *text, int64_t *out) {
  if (!text || !text[0]) return false;
  bool neg = text[0] == '-';
  const char *digits = (text[0] == '-' || text[0] == '+') ? text + 1 : text;
  uint64_t v;
  if (!parse_u64(digits, &v) || v > (uint64_t)INT64_MAX) return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

/* Up to three ':'-separated numbers after "name:". */
static bool parse_delay(const char *text, delay_dist *d) {
  if (!text) return false;
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

static bool parse_strategy(const char *text, size_t len,
                           bk_idem_strategy *out) {
  for (size_t i = 0; i < N_STRATEGIES; i++) {
    const char *name = strategy_name(all_strategies[i]);
    if (strlen(name) == len && strncmp(text, name, len) == 0) {
      *out = all_strategies[i];
      return true;
    }
  }
  return false;
}

static bool parse_strategies(const char *text, options *o) {
  if (!text || !text[0]) return false;
  o->n_strategies = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    bk_idem_strategy s;
    if (!parse_strategy(p, len, &s)) return false;
    for (size_t i = 0; i < o->n_strategies; i++)
      if (o->strategies[i] == s) return false; /* listed twice */
    o->strategies[o->n_strategies++] = s;
    if (!comma) break;
    p = comma + 1;
  }
  return true;
}

static bool parse_sweep(const char *text, options *o) {
  if (!text || !text[0]) return false;
  char buf[1024];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  o->n_sweep = 0;
  for (char *p = buf;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    double v;
    if (o->n_sweep == MAX_SWEEP || !parse_double(p, &v) || v < 0.0 || v > 1.0)
      return false;
    o->sweep_values[o->n_sweep++] = v;
    if (!comma) break;
    p = comma + 1;
  }
  return true;
}

/* Match `--name value` or `--name=value`; *value is NULL when the option
 * is `name` but its value is missing. */
static bool match_option(int argc, char **argv, int *i, const char *name,
                         const char **value) {
  const char *arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0) return false;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return true;
  }
  if (arg[len] != '\0') return false;
  *value = *i + 1 < argc ? argv[++*i] : NULL;
  return true;
}

#define VAL(v) ((v) ? (v) : "")

static int parse_options(int argc, char **argv, options *o, bool *want_help) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v;
    uint64_t u;
    double d;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      *want_help = true;
      return 0;
    }
    if (strcmp(arg, "--csv") == 0) {
      o->csv = true;
      continue;
    }
    if (match_option(argc, argv, &i, "--seed", &v)) {
      if (!parse_u64(v, &o->seed))
        return usage_error("--seed needs an unsigned integer, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--ops", &v)) {
      if (!parse_u64(v, &o->ops) || o->ops == 0 || o->ops > MAX_OPS)
        return usage_error("--ops needs an integer in 1..100000000, got '%s'",
                           VAL(v));
      o->set_ops = true;
    } else if (match_option(argc, argv, &i, "--clients", &v)) {
      if (!parse_u64(v, &o->clients) || o->clients == 0 || o->clients > MAX_OPS)
        return usage_error(
            "--clients needs an integer in 1..100000000, got '%s'", VAL(v));
    } else if (match_option(argc, argv, &i, "--keys", &v)) {
      if (!parse_u64(v, &o->keys) || o->keys == 0 || o->keys > 1000000)
        return usage_error("--keys needs an integer in 1..1000000, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--delta", &v)) {
      if (!parse_i64(v, &o->delta) || o->delta == 0 || o->delta > MAX_DELTA ||
          o->delta < -MAX_DELTA)
        return usage_error(
            "--delta needs a nonzero integer within +-1000000, got '%s'",
            VAL(v));
    } else if (match_option(argc, argv, &i, "--rate", &v)) {
      if (!parse_double(v, &o->rate) || !(o->rate >= 0.001) || o->rate > 1e9)
        return usage_error("--rate needs ops/s in [0.001, 1e9], got '%s'",
                           VAL(v));
      o->set_rate = true;
    } else if (match_option(argc, argv, &i, "--load", &v)) {
      if (v && strcmp(v, "steady") == 0)
        o->load = LOAD_STEADY;
      else if (v && strcmp(v, "rising") == 0)
        o->load = LOAD_RISING;
      else if (v && strcmp(v, "bursty") == 0)
        o->load = LOAD_BURSTY;
      else
        return usage_error("--load needs steady, rising or bursty, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--rise-factor", &v)) {
      if (!parse_double(v, &o->rise_factor) || !(o->rise_factor > 0.0) ||
          o->rise_factor > 1e6)
        return usage_error("--rise-factor needs a number in (0, 1e6], got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--burst-factor", &v)) {
      if (!parse_double(v, &o->burst_factor) || !(o->burst_factor >= 1.0) ||
          o->burst_factor > 1e6)
        return usage_error(
            "--burst-factor needs a number in [1, 1e6], got '%s'", VAL(v));
    } else if (match_option(argc, argv, &i, "--burst-ms", &v)) {
      if (!parse_u64(v, &o->burst_ms) || o->burst_ms == 0)
        return usage_error("--burst-ms needs a positive integer, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--burst-every", &v)) {
      if (!parse_u64(v, &o->burst_every_ms) || o->burst_every_ms == 0 ||
          o->burst_every_ms > 1000000000u)
        return usage_error("--burst-every needs a positive integer, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--ack-loss", &v)) {
      if (!parse_double(v, &o->ack_loss) || o->ack_loss < 0.0 ||
          o->ack_loss > 1.0)
        return usage_error("--ack-loss needs a number in [0, 1], got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--retry-delay", &v)) {
      if (!parse_delay(v, &o->delay))
        return usage_error(
            "--retry-delay needs fixed:MS, uniform:LO:HI or exp:MEAN (MS, "
            "MEAN >= 1; 0 <= LO <= HI, HI >= 1), got '%s'",
            VAL(v));
    } else if (match_option(argc, argv, &i, "--timeout", &v)) {
      if (!parse_u64(v, &o->timeout_ms) || o->timeout_ms == 0 ||
          o->timeout_ms > 1000000000u)
        return usage_error("--timeout needs a positive integer (ms), got '%s'",
                           VAL(v));
      o->set_timeout = true;
    } else if (match_option(argc, argv, &i, "--fbf-m", &v)) {
      if (!parse_u64(v, &o->fbf_m) || o->fbf_m < 8 ||
          o->fbf_m > ((uint64_t)1 << 34))
        return usage_error("--fbf-m needs bits in 8..2^34, got '%s'", VAL(v));
      o->set_fbf = true;
    } else if (match_option(argc, argv, &i, "--fbf-k", &v)) {
      if (!parse_u64(v, &u) || u == 0 || u > BK_K_MAX)
        return usage_error("--fbf-k needs an integer in 1..64, got '%s'",
                           VAL(v));
      o->fbf_k = (unsigned)u;
    } else if (match_option(argc, argv, &i, "--n-past", &v)) {
      if (!parse_u64(v, &u) || u == 0 || u > 62)
        return usage_error("--n-past needs an integer in 1..62, got '%s'",
                           VAL(v));
      o->n_past = (unsigned)u;
      o->set_n_past = true;
    } else if (match_option(argc, argv, &i, "--target-fpp", &v)) {
      if (!parse_double(v, &o->target_fpp) || !(o->target_fpp > 0.0) ||
          !(o->target_fpp < 1.0))
        return usage_error("--target-fpp needs a number in (0, 1), got '%s'",
                           VAL(v));
      o->set_target = true;
    } else if (match_option(argc, argv, &i, "--size-rate", &v)) {
      if (!parse_double(v, &d) || !(d >= 0.001) || d > 1e9)
        return usage_error("--size-rate needs ops/s in [0.001, 1e9], got '%s'",
                           VAL(v));
      o->size_rate = d;
    } else if (match_option(argc, argv, &i, "--max-filters", &v)) {
      if (!parse_u64(v, &u) || u < 3 || u > 64)
        return usage_error("--max-filters needs an integer in 3..64, got '%s'",
                           VAL(v));
      o->max_filters = (unsigned)u;
    } else if (match_option(argc, argv, &i, "--sample-ms", &v)) {
      if (!parse_u64(v, &o->sample_ms) || o->sample_ms == 0)
        return usage_error("--sample-ms needs a positive integer, got '%s'",
                           VAL(v));
    } else if (match_option(argc, argv, &i, "--strategies", &v)) {
      if (!parse_strategies(v, o))
        return usage_error(
            "--strategies needs a list of distinct NONE, RBF, FBF, "
            "FBF_ADAPTIVE, got '%s'",
            VAL(v));
      o->set_strategies = true;
    } else if (match_option(argc, argv, &i, "--sweep-retry", &v)) {
      if (!parse_sweep(v, o))
        return usage_error(
            "--sweep-retry needs a list of ack-loss values in [0, 1], such as "
            "0.01,0.05,0.1, got '%s'",
            VAL(v));
      o->sweep = true;
    } else if (arg[0] == '-') {
      return usage_error("unknown option '%s'", arg);
    } else {
      return usage_error("unexpected argument '%s'", arg);
    }
  }
  return 0;
}

/* Cross-option checks, after the sweep defaults are in. */
static int check_options(options *o) {
  if ((o->fbf_m != 0) != (o->fbf_k != 0))
    return usage_error("--fbf-m and --fbf-k go together%s", "");
  if (o->load == LOAD_BURSTY && o->burst_ms > o->burst_every_ms)
    return usage_error("--burst-ms must not exceed --burst-every%s", "");
  if (o->max_filters && o->max_filters < o->n_past + 2)
    return usage_error("--max-filters must be at least --n-past + 2%s", "");
  if (o->fbf_m && o->fbf_m * (o->n_past + 2) > ((uint64_t)1 << 40))
    return usage_error("--fbf-m times (--n-past + 2) exceeds 2^40 bits%s", "");
  if (o->ops > UINT32_MAX) return usage_error("--ops is too large%s", "");
  return 0;
}

static int sim_counters(int argc, char **argv) {
  options o = {
      .seed = DEFAULT_SEED,
      .ops = DEFAULT_OPS,
      .clients = DEFAULT_CLIENTS,
      .keys = DEFAULT_KEYS,
      .delta = 1,
      .rate = DEFAULT_RATE,
      .load = LOAD_STEADY,
      .rise_factor = DEFAULT_RISE,
      .burst_factor = DEFAULT_BURST_FACTOR,
      .burst_ms = DEFAULT_BURST_MS,
      .burst_every_ms = DEFAULT_BURST_EVERY_MS,
      .ack_loss = DEFAULT_ACK_LOSS,
      .delay = {DELAY_UNIFORM, 200.0, 1000.0},
      .timeout_ms = DEFAULT_TIMEOUT_MS,
      .n_past = DEFAULT_N_PAST,
      .target_fpp = DEFAULT_TARGET_FPP,
      .sample_ms = DEFAULT_SAMPLE_MS,
      .n_strategies = N_STRATEGIES,
  };
  memcpy(o.strategies, all_strategies, sizeof all_strategies);
  bool want_help = false;
  int status = parse_options(argc, argv, &o, &want_help);
  if (status) return status;
  if (want_help) {
    help(stdout);
    return 0;
  }
  if (o.sweep) {
    if (!o.set_fbf && !o.fbf_k) {
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
  status = check_options(&o);
  if (status) return status;
  status = o.sweep ? run_sweep(&o) : run_once(&o);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, PROG ": error writing standard output\n");
    status = 1;
  }
  return status;
}

/* ---- `bloomkit sim`
 * ---------------------------------------------------------- */

typedef struct simulation {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} simulation;

static const simulation simulations[] = {
    {"counters",
     "idempotent counters under client retries: NONE / RBF / FBF / "
     "FBF_ADAPTIVE (thesis Fig. 6.7, 6.9)",
     sim_counters},
};

#define N_SIMULATIONS (sizeof simulations / sizeof simulations[0])

static void sim_usage(FILE *out) {
  fprintf(out,
          "usage: bloomkit sim <simulation> [options]\n"
          "       bloomkit sim <simulation> --help\n"
          "\n"
          "simulations:\n");
  for (size_t i = 0; i < N_SIMULATIONS; i++)
    fprintf(out, "  %-12s %s\n", simulations[i].name, simulations[i].summary);
}

int bk_cli_sim(int argc, char **argv) {
  if (argc < 2) {
    sim_usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
      strcmp(name, "help") == 0) {
    sim_usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < N_SIMULATIONS; i++)
    if (strcmp(name, simulations[i].name) == 0)
      return simulations[i].run(argc - 1, argv + 1);
  fprintf(stderr, "bloomkit sim: unknown simulation '%s'\n\n", name);
  sim_usage(stderr);
  return 2;
}
