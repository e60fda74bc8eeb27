/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit fbf-experiments`: the false positive experiments of the FBF
 * thesis, Sec. 6.1-6.3 (Fig. 6.1-6.6), run on bk_fbf in simulated time.
 *
 * Time is simulated in milliseconds (the unit every FBF here is configured
 * in) and driven with bk_fbf_advance, so the whole set runs in seconds and a
 * run is reproducible from its seed. Element ids come from one splitmix64
 * stream per figure: inserted elements take the even-numbered outputs,
 * absent probes the odd-numbered ones. The splitmix64 output function is a
 * bijection of its state (base + i * gamma, gamma odd), so every id is
 * distinct and the probe ids are disjoint from the inserted ones: a probe
 * that hits is a false positive, never a true one. Ids are hashed as their
 * 8 little-endian bytes with XXH3 and a seed derived from the run's seed.
 *
 * Settings (the thesis gives m, k, t, N and the element counts; the rates
 * are ours, since the thesis only says "steady" or "exponential"):
 *   6.1, 6.2  basic FBF (N = 1), m = 6250, k = 5, t = 5 s, not adaptive;
 *             n = 50..600 step 50 elements arrive at a steady rate over
 *             [0, 10 s) (element i at i * 10 s / n), so they span the
 *             refresh at 5 s; the checks run right after the last insert,
 *             before the refresh at 10 s. The filters then hold: future
 *             5-10 s, present 0-10 s, past 0-5 s. `--probes` absent probes
 *             (default 200000) are checked with both the optimized check
 *             (Algorithm 2, corrected per docs/design/fbf.md 5.2) and
 *             the simple one.
 *   6.3       the same with n = 300 and m = 5000..30000 step 2500.
 *   6.4       N = 1, m = 25000, k = 5, t = 5, 3, 2, 1 s, fed the same 5000
 *             elements at an exponentially increasing rate of
 *             2 * 2^(time / 5 s) ops/s (the 5000th arrives at ~42.2 s).
 *   6.5       t = 5 s, m = 6250, k = 5, N = 1, 4, 10, 22 (3, 6, 12, 24
 *             filters), fed the same 3000 elements at a linearly increasing
 *             rate of 10 + 3.25 * time ops/s (10 -> 140 ops/s over 40 s).
 *   6.6       adaptive (Algorithm 3): start N = 1 (3 filters), m = 6250,
 *             k = 5, t = 11 s, target fpp 0.01, a tick every 1 s, period
 *             step 1 s, t within [5 s, 11 s] (max_period is the library
 *             default, the configured t), at most 24 filters, min_window
 *             the default (N + 1) t = 22 s. The rate rises linearly from 5
 *             to 40 ops/s over 30 s, falls back to 5 over the next 30 s
 *             and stays at 5 until 200 s. 40 ops/s is a load the FBF can
 *             hold at the target only with t below ~8 s, so Algorithm 3
 *             must act. With this seed the empirical fpp exceeds the
 *             target in 11 of 200 one-second samples, peaking at 0.0125.
 *             Letting t grow while idle makes it worse (max_period 13 s:
 *             16 samples, peak 0.026; 20 s: 24, peak 0.048): filters of a
 *             long idle period are overloaded when the load arrives, and
 *             no filter may be dropped before min_window.
 *
 * Estimates: 6.2, 6.3 and 6.6 (and 6.4, 6.5 with `--estimates`, to read
 * the fpp where the probes are too few to see it) print two: fpp_eq43, the
 * thesis' Eq. 4.3 exactly (bk_fbf_estimated_fpp_eq43: neighbouring
 * filters as independent), and fpp_estimate, bloomkit's estimate
 * (bk_fbf_estimated_fpp: a pair's term counts the inserts the two filters
 * share; it is what Algorithm 3 steers by). For N = 1 (6.2, 6.3) the
 * second leaves out the last pair (present, past): its event is inside
 * the oldest-alone term (past), which Eq. 4.3 counts as independent.
 */
#define _POSIX_C_SOURCE 200809L /* mkdir */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bloomkit/fbf.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"

#define PROG "bloomkit fbf-experiments"
#define DEFAULT_SEED 20150601u
#define DEFAULT_PROBES 200000u
/* 500 times the default: about half an hour for all six figures. */
#define MAX_PROBES 100000000u
#define N_FIGURES 6u

#define K_HASHES 5u
#define SECOND_MS 1000u
#define SAMPLE_MS 1000u

/* 6.1-6.3 */
#define SWEEP_M_BITS 6250u
#define SWEEP_PERIOD_MS 5000u
#define SWEEP_SPAN_MS 10000u
#define SWEEP_N_FIRST 50u
#define SWEEP_N_LAST 600u
#define SWEEP_N_STEP 50u
#define SWEEP_N_POINTS ((SWEEP_N_LAST - SWEEP_N_FIRST) / SWEEP_N_STEP + 1u)
#define FIG63_ELEMENTS 300u
#define FIG63_M_FIRST 5000u
#define FIG63_M_LAST 30000u
#define FIG63_M_STEP 2500u

/* 6.4 */
#define FIG64_M_BITS 25000u
#define FIG64_ELEMENTS 5000u
#define RATE_64_START 2.0    /* ops/s at time 0 */
#define RATE_64_DOUBLING 5.0 /* seconds per doubling of the rate */

/* 6.5 */
#define FIG65_M_BITS 6250u
#define FIG65_PERIOD_MS 5000u
#define FIG65_ELEMENTS 3000u
#define RATE_65_START 10.0 /* ops/s at time 0 */
#define RATE_65_SLOPE 3.25 /* ops/s per second */

/* 6.6 */
#define FIG66_M_BITS 6250u
#define FIG66_PERIOD_MS 11000u
#define FIG66_TARGET_FPP 0.01
#define FIG66_MAX_FILTERS 24u
#define FIG66_MIN_PERIOD_MS 5000u
#define FIG66_MAX_PERIOD_MS 11000u
#define RATE_66_LOW 5.0
#define RATE_66_PEAK 40.0
#define RATE_66_RAMP 30.0 /* seconds up, then as many down */
#define FIG66_DURATION_S 200u

#define NO_LIMIT UINT64_MAX

/* ---- ids: splitmix64 ----------------------------------------------------- */

/* A splitmix64 stream split in two: output 2i is element i, output 2i + 1
 * is probe i (see the file comment for why they never meet). */
typedef struct id_stream {
  uint64_t base;
  uint64_t n_elements;
  uint64_t n_probes;
} id_stream;

static id_stream id_stream_make(uint64_t seed, uint64_t figure) {
  id_stream s = {splitmix_output(seed ^ splitmix_output(figure)), 0, 0};
  return s;
}

static uint64_t next_element(id_stream *s) {
  return splitmix_output(s->base + 2u * s->n_elements++ * SPLITMIX_GAMMA);
}

static uint64_t next_probe(id_stream *s) {
  return splitmix_output(s->base + (2u * s->n_probes++ + 1u) * SPLITMIX_GAMMA);
}

/* The hash seed of a figure's filters, independent of its id stream. */
static uint64_t hash_seed_of(uint64_t seed, uint64_t figure) {
  return splitmix_output(splitmix_output(seed + SPLITMIX_GAMMA) ^ figure);
}

static bk_status hash_id(uint64_t hash_seed, uint64_t id, bk_hash *out) {
  unsigned char bytes[8];
  for (unsigned i = 0; i < 8; i++) bytes[i] = (unsigned char)(id >> (8 * i));
  return bk_hash_bytes(BK_HASH_XXH3, hash_seed, bytes, sizeof bytes, out);
}

/* ---- options and output -------------------------------------------------- */

typedef struct options {
  uint64_t seed;
  uint64_t probes;
  uint64_t series_probes;
  const char *out_dir;  /* NULL: everything to stdout */
  const char *plot_dir; /* NULL: no pictures */
  unsigned figures;     /* bit i: Fig. 6.(i+1) */
  bool estimates;       /* estimate columns in 6.4 and 6.5 */
} options;

/* Where one figure's CSV goes: a file of its own, or stdout. */
typedef struct sink {
  FILE *fp;
  char *path; /* owned; NULL for stdout */
} sink;

static int sink_open(const options *o, sink *s, const char *name,
                     const char *description) {
  s->fp = NULL;
  s->path = NULL;
  if (!o->out_dir) {
    s->fp = stdout;
    printf("\n# %s: %s\n", name, description);
    return 0;
  }
  size_t len = strlen(o->out_dir) + 1 + strlen(name) + sizeof ".csv";
  s->path = malloc(len);
  if (!s->path) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  snprintf(s->path, len, "%s/%s.csv", o->out_dir, name);
  s->fp = fopen(s->path, "w");
  if (!s->fp) {
    fprintf(stderr, PROG ": cannot open %s: %s\n", s->path, strerror(errno));
    free(s->path);
    s->path = NULL;
    return 1;
  }
  fprintf(s->fp, "# %s: %s\n# seed %llu\n", name, description,
          (unsigned long long)o->seed);
  return 0;
}

/* Close (files only); returns 1 when anything written was lost. */
static int sink_close(sink *s, int status) {
  if (!s->path) return status;
  bool bad = ferror(s->fp) != 0;
  if (fclose(s->fp) != 0) bad = true;
  if (bad) {
    fprintf(stderr, PROG ": error writing %s\n", s->path);
    status = 1;
  } else if (status == 0) {
    printf("# wrote %s\n", s->path);
  }
  free(s->path);
  s->path = NULL;
  s->fp = NULL;
  return status;
}

static bk_status make_fbf(bk_fbf **out, uint64_t m_bits, unsigned n_past,
                          uint64_t period_ms, uint64_t hash_seed) {
  bk_fbf_config cfg = {
      .m_bits = m_bits,
      .k = K_HASHES,
      .n_past = n_past,
      .refresh_period = period_ms,
      .start_time = 0,
      .check = BK_FBF_CHECK_OPTIMIZED,
      .hash_alg = BK_HASH_XXH3,
      .seed = hash_seed,
  };
  return bk_fbf_create(out, &cfg);
}

/* ---- Fig. 6.1-6.3: one filter, one measurement --------------------------- */

typedef struct sweep_result {
  double fpp_optimized;
  double fpp_simple;
  double fpp_eq43;     /* the thesis' Eq. 4.3 (bk_fbf_estimated_fpp_eq43) */
  double fpp_estimate; /* shared-insert aware (bk_fbf_estimated_fpp) */
} sweep_result;

/* Insert n elements at a steady rate over [0, SWEEP_SPAN_MS) into a fresh
 * basic FBF (N = 1, t = 5 s), then check o->probes absent probes (the same
 * probes for every point: the stream's probe counter is rewound). */
static int sweep_point(const options *o, uint64_t m_bits, uint64_t n,
                       uint64_t hash_seed, id_stream *ids, sweep_result *res) {
  bk_fbf *f = NULL;
  TRY_BK(make_fbf(&f, m_bits, 1, SWEEP_PERIOD_MS, hash_seed));
  for (uint64_t i = 0; i < n; i++) {
    bk_hash h;
    TRY_BK(bk_fbf_advance(f, i * SWEEP_SPAN_MS / n));
    TRY_BK(hash_id(hash_seed, next_element(ids), &h));
    TRY_BK(bk_fbf_add_hash(f, h));
  }
  uint64_t hits_optimized = 0, hits_simple = 0;
  ids->n_probes = 0;
  for (uint64_t i = 0; i < o->probes; i++) {
    bk_hash h;
    bool hit;
    TRY_BK(hash_id(hash_seed, next_probe(ids), &h));
    TRY_BK(bk_fbf_contains_with(f, h, BK_FBF_CHECK_OPTIMIZED, &hit));
    hits_optimized += hit;
    TRY_BK(bk_fbf_contains_with(f, h, BK_FBF_CHECK_SIMPLE, &hit));
    hits_simple += hit;
  }
  res->fpp_optimized = (double)hits_optimized / (double)o->probes;
  res->fpp_simple = (double)hits_simple / (double)o->probes;
  TRY_BK(bk_fbf_estimated_fpp_eq43(f, BK_FBF_CHECK_OPTIMIZED, &res->fpp_eq43));
  TRY_BK(bk_fbf_estimated_fpp(f, BK_FBF_CHECK_OPTIMIZED, &res->fpp_estimate));
  bk_fbf_destroy(f);
  return 0;
fail:
  bk_fbf_destroy(f);
  return 1;
}

/* Fig. 6.1 and 6.2 share one sweep (the same filters and probes). */
static int run_element_sweep(const options *o,
                             sweep_result res[SWEEP_N_POINTS]) {
  id_stream ids = id_stream_make(o->seed, 61);
  uint64_t hash_seed = hash_seed_of(o->seed, 61);
  for (unsigned i = 0; i < SWEEP_N_POINTS; i++)
    if (sweep_point(o, SWEEP_M_BITS, SWEEP_N_FIRST + i * SWEEP_N_STEP,
                    hash_seed, &ids, &res[i]))
      return 1;
  return 0;
}

#define SWEEP_SETTINGS                                                       \
  "basic FBF N=1 m=6250 k=5 t=5s not adaptive; n elements at a steady rate " \
  "over [0,10s), checked right after the last insert (before the 10s "       \
  "refresh)"

static int write_fig61(const options *o, const sweep_result *res) {
  sink s;
  if (sink_open(o, &s, "fig6_1",
                "optimized vs simple membership check; " SWEEP_SETTINGS))
    return 1;
  fprintf(s.fp, "# %llu absent probes per point, same probes for both checks\n",
          (unsigned long long)o->probes);
  fprintf(s.fp, "elements,fpp_optimized,fpp_simple\n");
  for (unsigned i = 0; i < SWEEP_N_POINTS; i++)
    fprintf(s.fp, "%u,%.6g,%.6g\n", SWEEP_N_FIRST + i * SWEEP_N_STEP,
            res[i].fpp_optimized, res[i].fpp_simple);
  return sink_close(&s, 0);
}

static int write_fig62(const options *o, const sweep_result *res) {
  sink s;
  if (sink_open(o, &s, "fig6_2",
                "empirical fpp (optimized check) vs the thesis' Eq. 4.3 "
                "(fpp_eq43) vs bloomkit's shared-insert estimate "
                "(fpp_estimate); " SWEEP_SETTINGS))
    return 1;
  fprintf(s.fp, "# %llu absent probes per point\n",
          (unsigned long long)o->probes);
  fprintf(s.fp, "elements,fpp_empirical,fpp_eq43,fpp_estimate\n");
  for (unsigned i = 0; i < SWEEP_N_POINTS; i++)
    fprintf(s.fp, "%u,%.6g,%.6g,%.6g\n", SWEEP_N_FIRST + i * SWEEP_N_STEP,
            res[i].fpp_optimized, res[i].fpp_eq43, res[i].fpp_estimate);
  return sink_close(&s, 0);
}

static int run_fig63(const options *o) {
  sink s;
  if (sink_open(o, &s, "fig6_3",
                "empirical fpp (optimized check) vs the thesis' Eq. 4.3 "
                "(fpp_eq43) vs bloomkit's shared-insert estimate "
                "(fpp_estimate) as m varies; 300 elements, N=1 k=5 t=5s not "
                "adaptive, steady rate over [0,10s), checked right after the "
                "last insert"))
    return 1;
  fprintf(s.fp, "# %llu absent probes per point\n",
          (unsigned long long)o->probes);
  fprintf(s.fp, "m_bits,fpp_empirical,fpp_eq43,fpp_estimate\n");
  id_stream ids = id_stream_make(o->seed, 63);
  uint64_t hash_seed = hash_seed_of(o->seed, 63);
  int status = 0;
  for (unsigned m = FIG63_M_FIRST; m <= FIG63_M_LAST && !status;
       m += FIG63_M_STEP) {
    sweep_result r;
    status = sweep_point(o, m, FIG63_ELEMENTS, hash_seed, &ids, &r);
    if (!status)
      fprintf(s.fp, "%u,%.6g,%.6g,%.6g\n", m, r.fpp_optimized, r.fpp_eq43,
              r.fpp_estimate);
  }
  return sink_close(&s, status);
}

/* ---- Fig. 6.4-6.6: time series ------------------------------------------- */

/* A workload: the expected number of arrivals by time t (seconds). Element
 * i arrives at the first millisecond at which floor(cumulative) > i. */
typedef struct load_profile {
  double (*cumulative)(const struct load_profile *lp, double t);
  double a, b, c;
} load_profile;

/* rate a * 2^(t / b) */
static double cumulative_exponential(const load_profile *lp, double t) {
  return lp->a * lp->b / log(2.0) * (exp2(t / lp->b) - 1.0);
}

/* rate a + b t */
static double cumulative_linear(const load_profile *lp, double t) {
  return lp->a * t + lp->b * t * t / 2.0;
}

/* rate a at 0, rising linearly to b at c, back to a at 2c, then a */
static double cumulative_triangle(const load_profile *lp, double t) {
  double slope = (lp->b - lp->a) / lp->c;
  if (t <= lp->c) return lp->a * t + slope * t * t / 2.0;
  double up = lp->a * lp->c + slope * lp->c * lp->c / 2.0;
  if (t <= 2.0 * lp->c) {
    double d = t - lp->c;
    return up + lp->b * d - slope * d * d / 2.0;
  }
  return 2.0 * up + lp->a * (t - 2.0 * lp->c);
}

typedef struct series {
  bk_fbf **fbfs;
  size_t n_fbfs;
  uint64_t hash_seed;
  id_stream ids;
  load_profile load;
  uint64_t total;       /* elements, or NO_LIMIT */
  uint64_t duration_ms; /* last sample */
  /* Write one row; fpp[i] is the empirical fpp of fbfs[i]. */
  int (*row)(const struct series *s, FILE *out, uint64_t now_ms,
             double ops_per_s, const double *fpp);
  /* row_plain: after the empirical columns, one Eq. 4.3 column per filter
   * (bk_fbf_estimated_fpp_eq43), then one shared-insert estimate column per
   * filter (bk_fbf_estimated_fpp). */
  bool estimates;
} series;

static int advance_all(series *s, uint64_t now_ms) {
  for (size_t i = 0; i < s->n_fbfs; i++)
    TRY_BK(bk_fbf_advance(s->fbfs[i], now_ms));
  return 0;
fail:
  return 1;
}

/* Empirical fpp of every filter against fresh absent probes, hashed once. */
static int measure(const options *o, series *s, double *fpp) {
  uint64_t hits[BK_FBF_MAX_FILTERS] = {0};
  for (uint64_t p = 0; p < o->series_probes; p++) {
    bk_hash h;
    TRY_BK(hash_id(s->hash_seed, next_probe(&s->ids), &h));
    for (size_t i = 0; i < s->n_fbfs; i++) {
      bool hit;
      TRY_BK(bk_fbf_contains_with(s->fbfs[i], h, BK_FBF_CHECK_OPTIMIZED, &hit));
      hits[i] += hit;
    }
  }
  for (size_t i = 0; i < s->n_fbfs; i++)
    fpp[i] = (double)hits[i] / (double)o->series_probes;
  return 0;
fail:
  return 1;
}

/* Feed every filter the same elements, millisecond by millisecond, and
 * sample every SAMPLE_MS. */
static int run_series(const options *o, series *s, FILE *out) {
  uint64_t done = 0, done_at_last_sample = 0;
  for (uint64_t ms = 0; ms <= s->duration_ms; ms++) {
    double expected = s->load.cumulative(&s->load, (double)ms / SECOND_MS);
    uint64_t due = expected >= (double)s->total ? s->total : (uint64_t)expected;
    if (due > done) {
      if (advance_all(s, ms)) return 1;
      for (; done < due; done++) {
        bk_hash h;
        TRY_BK(hash_id(s->hash_seed, next_element(&s->ids), &h));
        for (size_t i = 0; i < s->n_fbfs; i++)
          TRY_BK(bk_fbf_add_hash(s->fbfs[i], h));
      }
    }
    if (ms == 0 || ms % SAMPLE_MS) continue;
    double fpp[BK_FBF_MAX_FILTERS];
    if (advance_all(s, ms) || measure(o, s, fpp)) return 1;
    double ops_per_s =
        (double)(done - done_at_last_sample) * SECOND_MS / SAMPLE_MS;
    done_at_last_sample = done;
    if (s->row(s, out, ms, ops_per_s, fpp)) return 1;
  }
  return 0;
fail:
  return 1;
}

static void destroy_all(bk_fbf **fbfs, size_t n) {
  for (size_t i = 0; i < n; i++) bk_fbf_destroy(fbfs[i]);
}

/* Time of the last arrival of a profile with a known total (bisection). */
static uint64_t duration_for(const load_profile *lp, uint64_t total) {
  double lo = 0.0, hi = 1.0;
  while (lp->cumulative(lp, hi) < (double)total && hi < 1e7) hi *= 2.0;
  for (int i = 0; i < 100; i++) {
    double mid = (lo + hi) / 2.0;
    if (lp->cumulative(lp, mid) < (double)total)
      lo = mid;
    else
      hi = mid;
  }
  /* Sample up to the first whole second at or after the last arrival. */
  return (uint64_t)ceil(hi) * SECOND_MS;
}

/* sink_open for 6.4 and 6.5: the description names the estimate columns
 * when --estimates adds them. */
static int sink_open_series(const options *o, sink *s, const char *name,
                            const char *description) {
  if (!o->estimates) return sink_open(o, s, name, description);
  char full[512];
  snprintf(full, sizeof full,
           "%s; fpp_eq43_*: the thesis' Eq. 4.3 (bk_fbf_estimated_fpp_eq43), "
           "fpp_estimate_*: bloomkit's shared-insert estimate "
           "(bk_fbf_estimated_fpp)",
           description);
  return sink_open(o, s, name, full);
}

static int row_plain(const series *s, FILE *out, uint64_t now_ms,
                     double ops_per_s, const double *fpp) {
  fprintf(out, "%g,%g", (double)now_ms / SECOND_MS, ops_per_s);
  for (size_t i = 0; i < s->n_fbfs; i++) fprintf(out, ",%.6g", fpp[i]);
  for (size_t i = 0; s->estimates && i < s->n_fbfs; i++) {
    double eq43;
    TRY_BK(
        bk_fbf_estimated_fpp_eq43(s->fbfs[i], BK_FBF_CHECK_OPTIMIZED, &eq43));
    fprintf(out, ",%.6g", eq43);
  }
  for (size_t i = 0; s->estimates && i < s->n_fbfs; i++) {
    double estimate;
    TRY_BK(bk_fbf_estimated_fpp(s->fbfs[i], BK_FBF_CHECK_OPTIMIZED, &estimate));
    fprintf(out, ",%.6g", estimate);
  }
  fputc('\n', out);
  return 0;
fail:
  return 1;
}

/* Fig. 6.4 and 6.5: four FBFs fed the same elements, one setting varied
 * across them (the refresh period, or the number of filters). */
typedef struct four_fbfs {
  uint64_t figure; /* 64, 65: selects the id stream and hash seed */
  const char *name;
  const char *description;
  load_profile load;
  uint64_t total; /* elements */
  uint64_t m_bits;
  unsigned n_past[4];
  uint64_t period_ms[4];
  const char *column[4]; /* fpp_<column>, fpp_eq43_<column>, ... */
} four_fbfs;

static const four_fbfs fig64 = {
    .figure = 64,
    .name = "fig6_4",
    .description =
        "empirical fpp as the refresh period varies; N=1 m=25000 k=5 "
        "t=5/3/2/1s; 5000 elements at rate 2*2^(time/5s) ops/s, "
        "the same elements into each filter",
    .load = {cumulative_exponential, RATE_64_START, RATE_64_DOUBLING, 0.0},
    .total = FIG64_ELEMENTS,
    .m_bits = FIG64_M_BITS,
    .n_past = {1, 1, 1, 1},
    .period_ms = {5000, 3000, 2000, 1000},
    .column = {"t5", "t3", "t2", "t1"},
};

static const four_fbfs fig65 = {
    .figure = 65,
    .name = "fig6_5",
    .description =
        "empirical fpp as the number of filters varies; t=5s m=6250 "
        "k=5, 3/6/12/24 filters (N=1/4/10/22); 3000 elements at rate "
        "10+3.25*time ops/s, the same elements into each filter",
    .load = {cumulative_linear, RATE_65_START, RATE_65_SLOPE, 0.0},
    .total = FIG65_ELEMENTS,
    .m_bits = FIG65_M_BITS,
    .n_past = {1, 4, 10, 22}, /* 3, 6, 12, 24 filters */
    .period_ms = {FIG65_PERIOD_MS, FIG65_PERIOD_MS, FIG65_PERIOD_MS,
                  FIG65_PERIOD_MS},
    .column = {"3", "6", "12", "24"},
};

static int run_four_fbfs(const options *o, const four_fbfs *fig) {
  bk_fbf *fbfs[4] = {NULL, NULL, NULL, NULL};
  series s = {
      .fbfs = fbfs,
      .n_fbfs = 4,
      .hash_seed = hash_seed_of(o->seed, fig->figure),
      .ids = id_stream_make(o->seed, fig->figure),
      .load = fig->load,
      .total = fig->total,
      .row = row_plain,
      .estimates = o->estimates,
  };
  s.duration_ms = duration_for(&s.load, s.total);
  sink out;
  if (sink_open_series(o, &out, fig->name, fig->description)) return 1;
  int status = 1;
  for (size_t i = 0; i < 4; i++)
    TRY_BK(make_fbf(&fbfs[i], fig->m_bits, fig->n_past[i], fig->period_ms[i],
                    s.hash_seed));
  fprintf(out.fp, "# sampled every 1 s with %llu fresh absent probes\n",
          (unsigned long long)o->series_probes);
  static const char *const kinds[] = {"fpp", "fpp_eq43", "fpp_estimate"};
  fprintf(out.fp, "time_s,ops_per_s");
  for (size_t k = 0; k < (o->estimates ? 3u : 1u); k++)
    for (size_t i = 0; i < 4; i++)
      fprintf(out.fp, ",%s_%s", kinds[k], fig->column[i]);
  fputc('\n', out.fp);
  status = run_series(o, &s, out.fp);
fail:
  destroy_all(fbfs, 4);
  return sink_close(&out, status);
}

static int row_adaptive(const series *s, FILE *out, uint64_t now_ms,
                        double ops_per_s, const double *fpp) {
  double eq43, estimate;
  bk_fbf_info info;
  TRY_BK(bk_fbf_estimated_fpp_eq43(s->fbfs[0], BK_FBF_CHECK_OPTIMIZED, &eq43));
  TRY_BK(bk_fbf_estimated_fpp(s->fbfs[0], BK_FBF_CHECK_OPTIMIZED, &estimate));
  TRY_BK(bk_fbf_info_get(s->fbfs[0], &info));
  fprintf(out, "%g,%g,%.6g,%.6g,%.6g,%u,%g,%g\n", (double)now_ms / SECOND_MS,
          ops_per_s, fpp[0], eq43, estimate, info.n_filters,
          (double)info.refresh_period / SECOND_MS, FIG66_TARGET_FPP);
  return 0;
fail:
  return 1;
}

static const char *action_name(bk_fbf_action a) {
  switch (a) {
    case BK_FBF_GROW:
      return "grow";
    case BK_FBF_SHRINK:
      return "shrink";
    case BK_FBF_MANUAL:
      return "manual";
  }
  return "unknown";
}

/* The resize decisions: comment lines after the CSV on stdout, or a CSV of
 * their own in --out mode. */
static int write_trace(const options *o, const bk_fbf *f, FILE *csv_out) {
  sink s = {NULL, NULL};
  FILE *out = csv_out;
  if (o->out_dir) {
    if (sink_open(o, &s, "fig6_6_trace",
                  "Algorithm 3 resize decisions of the Fig. 6.6 run "
                  "(fpp_estimate: bk_fbf_estimated_fpp at the tick, before "
                  "the decision; n_filters and refresh period are the goals "
                  "set)"))
      return 1;
    out = s.fp;
    fprintf(out, "time_s,action,fpp_estimate,n_filters,refresh_period_s\n");
  }
  size_t n = bk_fbf_trace_count(f);
  for (size_t i = 0; i < n; i++) {
    bk_fbf_resize_event e;
    TRY_BK(bk_fbf_trace_get(f, i, &e));
    if (o->out_dir)
      fprintf(out, "%g,%s,%.6g,%u,%g\n", (double)e.time / SECOND_MS,
              action_name(e.action), e.estimated_fpp, e.n_filters,
              (double)e.refresh_period / SECOND_MS);
    else
      fprintf(
          out, "# event time=%g action=%s fpp_estimate=%.6g filters=%u t=%g\n",
          (double)e.time / SECOND_MS, action_name(e.action), e.estimated_fpp,
          e.n_filters, (double)e.refresh_period / SECOND_MS);
  }
  return sink_close(&s, 0);
fail:
  return sink_close(&s, 1);
}

static int run_fig66(const options *o) {
  bk_fbf *f = NULL;
  series s = {
      .fbfs = &f,
      .n_fbfs = 1,
      .hash_seed = hash_seed_of(o->seed, 66),
      .ids = id_stream_make(o->seed, 66),
      .load = {cumulative_triangle, RATE_66_LOW, RATE_66_PEAK, RATE_66_RAMP},
      .total = NO_LIMIT,
      .duration_ms = (uint64_t)FIG66_DURATION_S * SECOND_MS,
      .row = row_adaptive,
  };
  sink out;
  char description[640];
  snprintf(description, sizeof description,
           "adaptive FBF (Algorithm 3): start N=1 (3 filters) m=6250 k=5 "
           "t=11s, t within [%gs, %gs], target fpp %g, tick 1s, period step "
           "1s, at most %u filters, min_window 22s (default (N+1)t); rate %g "
           "-> %g ops/s over %gs, back down over %gs, then %g until %us; "
           "fpp_eq43: the thesis' Eq. 4.3, fpp_estimate: bloomkit's "
           "shared-insert estimate (what Algorithm 3 steers by); n_filters = "
           "filters in use",
           (double)FIG66_MIN_PERIOD_MS / SECOND_MS,
           (double)FIG66_MAX_PERIOD_MS / SECOND_MS, FIG66_TARGET_FPP,
           FIG66_MAX_FILTERS, (double)RATE_66_LOW, (double)RATE_66_PEAK,
           (double)RATE_66_RAMP, (double)RATE_66_RAMP, (double)RATE_66_LOW,
           FIG66_DURATION_S);
  if (sink_open(o, &out, "fig6_6", description)) return 1;
  int status = 1;
  bk_fbf_config cfg = {
      .m_bits = FIG66_M_BITS,
      .k = K_HASHES,
      .n_past = 1,
      .refresh_period = FIG66_PERIOD_MS,
      .start_time = 0,
      .check = BK_FBF_CHECK_OPTIMIZED,
      .adaptive = true,
      .target_fpp = FIG66_TARGET_FPP,
      .adapt_interval = SECOND_MS,
      .period_step = SECOND_MS,
      .min_period = FIG66_MIN_PERIOD_MS,
      .max_period = FIG66_MAX_PERIOD_MS,
      .max_filters = FIG66_MAX_FILTERS,
      .hash_alg = BK_HASH_XXH3,
      .seed = s.hash_seed,
  };
  TRY_BK(bk_fbf_create(&f, &cfg));
  fprintf(out.fp, "# sampled every 1 s with %llu fresh absent probes\n",
          (unsigned long long)o->series_probes);
  fprintf(out.fp,
          "time_s,ops_per_s,fpp_empirical,fpp_eq43,fpp_estimate,n_filters,"
          "refresh_period_s,target_fpp\n");
  status = run_series(o, &s, out.fp);
fail:
  status = sink_close(&out, status);
  /* On stdout the trace follows the CSV; with --out it has its own file. */
  if (status == 0) status = write_trace(o, f, stdout);
  bk_fbf_destroy(f);
  return status;
}

/* ---- command line -------------------------------------------------------- */

static const char *const figure_names[N_FIGURES + 1] = {
    "6.1", "6.2", "6.3", "6.4", "6.5", "6.6", NULL};

/* The --help epilog; its %-fields are filled from the 6.6 settings. */
#define FIGURES_HELP_FORMAT                                            \
  "figures:\n"                                                         \
  "  6.1  optimized vs simple check: N=1 m=6250 k=5 t=5s, 50..600\n"   \
  "       elements at a steady rate over 10 s\n"                       \
  "  6.2  empirical vs Eq. 4.3 vs shared-insert estimate, same\n"      \
  "       filters\n"                                                   \
  "  6.3  the same, 300 elements, m=5000..30000\n"                     \
  "  6.4  refresh period 5/3/2/1 s, m=25000, 5000 elements at rate\n"  \
  "       2*2^(time/5s) ops/s\n"                                       \
  "  6.5  3/6/12/24 filters, t=5s m=6250, 3000 elements at rate\n"     \
  "       10+3.25*time ops/s\n"                                        \
  "  6.6  adaptive: 3 filters, t=11s in [%g, %g] s, at most %u\n"      \
  "       filters, target fpp %g, rate %g -> %g ops/s over %g s and\n" \
  "       back, then %g until %u s; resize trace after the CSV\n"

/* The pictures: the thesis' axes (Fig. 6.1 says its y axis is
 * logarithmic; the others span orders of magnitude too, so all are). */
#define FPP_LABEL "false positive probability"
static const bk_plot_figure plots[N_FIGURES] = {
    {.name = "fig6_1",
     .title = "Fig. 6.1: optimized vs simple membership "
              "check (N=1, m=6250, k=5, t=5 s)",
     .x = "elements",
     .xlabel = "elements inserted",
     .ylabel = FPP_LABEL,
     .logy = true,
     .n_series = 2,
     .series = {{"fpp_optimized", "optimized check (Sec. 3.4)"},
                {"fpp_simple", "simple check, all filters (Sec. 3.1)"}}},
    {.name = "fig6_2",
     .title = "Fig. 6.2: FPP analysis vs empirical (N=1, "
              "m=6250, k=5, t=5 s)",
     .x = "elements",
     .xlabel = "elements inserted",
     .ylabel = FPP_LABEL,
     .logy = true,
     .n_series = 3,
     .series = {{"fpp_empirical", "empirical"},
                {"fpp_eq43", "thesis Eq. 4.3"},
                {"fpp_estimate", "bloomkit estimate (shared inserts)"}}},
    {.name = "fig6_3",
     .title = "Fig. 6.3: FPP analysis vs empirical as m "
              "varies (300 elements, N=1, k=5, t=5 s)",
     .x = "m_bits",
     .xlabel = "bits per constituent filter (m)",
     .ylabel = FPP_LABEL,
     .logy = true,
     .key = "top right",
     .n_series = 3,
     .series = {{"fpp_empirical", "empirical"},
                {"fpp_eq43", "thesis Eq. 4.3"},
                {"fpp_estimate", "bloomkit estimate (shared inserts)"}}},
    {.name = "fig6_4",
     .title = "Fig. 6.4: FPP falls as the refresh period "
              "falls (N=1, m=25000, k=5)",
     .x = "time_s",
     .xlabel = "time (s); the rate doubles every 5 s, "
               "from 2 to 630 ops/s",
     .ylabel = FPP_LABEL,
     .logy = true,
     .n_series = 4,
     .series = {{"fpp_t5", "t = 5 s"},
                {"fpp_t3", "t = 3 s"},
                {"fpp_t2", "t = 2 s"},
                {"fpp_t1", "t = 1 s"}}},
    {.name = "fig6_5",
     .title = "Fig. 6.5: FPP falls as filters are added "
              "(t=5 s, m=6250, k=5)",
     .x = "ops_per_s",
     .xlabel = "operations per second (rising linearly)",
     .ylabel = FPP_LABEL,
     .logy = true,
     .n_series = 4,
     .series = {{"fpp_3", "3 filters (N=1)"},
                {"fpp_6", "6 filters (N=4)"},
                {"fpp_12", "12 filters (N=10)"},
                {"fpp_24", "24 filters (N=22)"}}},
    {.name = "fig6_6",
     .title = "Fig. 6.6: adaptive FBF (Algorithm 3) keeps "
              "the FPP near its target",
     .x = "time_s",
     .xlabel = "time (s)",
     .ylabel = FPP_LABEL,
     .y2label = "filters / refresh period (s)",
     .logy = true,
     .key = "top right",
     .n_series = 5,
     .series = {{"fpp_empirical", "FPP, empirical"},
                {"fpp_estimate", "FPP, bloomkit estimate"},
                {"target_fpp", "target FPP"},
                {"n_filters", "filters (right axis)", true},
                {"refresh_period_s", "refresh period, s (right axis)", true}}},
};

static int draw_plots(const options *o) {
  int status = 0;
  for (unsigned i = 0; i < N_FIGURES && !status; i++) {
    if (!(o->figures & (1u << i))) continue;
    bk_plot_figure fig = plots[i];
    size_t len = strlen(o->out_dir) + 1 + strlen(fig.name) + sizeof ".csv";
    char *csv = malloc(len);
    if (!csv) {
      fprintf(stderr, PROG ": out of memory\n");
      return 1;
    }
    snprintf(csv, len, "%s/%s.csv", o->out_dir, fig.name);
    fig.csv = csv;
    status = bk_plot_draw(o->plot_dir, &fig, stderr);
    free(csv);
  }
  return status;
}

int bk_cli_fbf_experiments(int argc, char **argv) {
  options o = {0};
  unsigned only[N_FIGURES];
  size_t n_only;
  bk_cli_opt opts[] = {
      BK_CLI_U64("seed", &o.seed, DEFAULT_SEED, 0, UINT64_MAX, "N",
                 "run seed, printed as '# seed N'"),
      BK_CLI_STRING("out", &o.out_dir, NULL, "a directory", "DIR",
                    "write DIR/fig6_1.csv ... fig6_6.csv (and "
                    "fig6_6_trace.csv) instead of everything to stdout, where "
                    "each is preceded by '# fig6_X: description'",
                    .default_text = "stdout"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also draw the figures as DIR/fig6_X.png with gnuplot "
                    "(the CSVs go to DIR too unless --out says otherwise)",
                    .default_text = "no pictures"),
      BK_CLI_CHOICE_LIST("only", only, &n_only, N_FIGURES,
                         "6.1,6.2,6.3,6.4,6.5,6.6", figure_names, "LIST",
                         "a subset of the figures, e.g. 6.1,6.4",
                         .default_text = "all"),
      BK_CLI_U64("probes", &o.probes, DEFAULT_PROBES, 1, MAX_PROBES, "N",
                 "absent probes per point of 6.1-6.3; the default is the "
                 "thesis' count"),
      BK_CLI_U64("series-probes", &o.series_probes, 0, 1, MAX_PROBES, "N",
                 "fresh absent probes per 1 s sample of 6.4-6.6",
                 .default_text = "as many as --probes"),
      BK_CLI_FLAG("estimates", &o.estimates,
                  "append estimate columns to 6.4, 6.5: the thesis' Eq. 4.3 "
                  "(fpp_eq43_*) and bloomkit's shared-insert estimate "
                  "(fpp_estimate_*)"),
  };
  char figures_help[1024];
  snprintf(figures_help, sizeof figures_help, FIGURES_HELP_FORMAT,
           (double)FIG66_MIN_PERIOD_MS / SECOND_MS,
           (double)FIG66_MAX_PERIOD_MS / SECOND_MS, FIG66_MAX_FILTERS,
           FIG66_TARGET_FPP, (double)RATE_66_LOW, (double)RATE_66_PEAK,
           (double)RATE_66_RAMP, (double)RATE_66_LOW, FIG66_DURATION_S);
  const bk_cli_command cmd = {
      .prog = PROG,
      .description =
          "Reproduce the FBF thesis' Fig. 6.1-6.6 in simulated time (ms).\n",
      .epilog = figures_help,
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
  };
  int status = bk_cli_parse(&cmd, argc, argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  status = 0;
  o.figures = 0;
  for (size_t i = 0; i < n_only; i++) o.figures |= 1u << only[i];
  if (o.series_probes == 0) o.series_probes = o.probes;
  if (o.plot_dir) {
    if (bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
    if (!o.out_dir) o.out_dir = o.plot_dir;
  }
  if (o.out_dir && bk_plot_make_dir(PROG, o.out_dir, stderr)) return 1;

  printf("# seed %llu\n", (unsigned long long)o.seed);
  if (o.figures & 3u) {
    sweep_result res[SWEEP_N_POINTS];
    status = run_element_sweep(&o, res);
    if (!status && (o.figures & 1u)) status = write_fig61(&o, res);
    if (!status && (o.figures & 2u)) status = write_fig62(&o, res);
  }
  if (!status && (o.figures & 4u)) status = run_fig63(&o);
  if (!status && (o.figures & 8u)) status = run_four_fbfs(&o, &fig64);
  if (!status && (o.figures & 16u)) status = run_four_fbfs(&o, &fig65);
  if (!status && (o.figures & 32u)) status = run_fig66(&o);
  if (!status && o.plot_dir) status = draw_plots(&o);
  return bk_cli_flush_output(PROG, status, stdout, stderr);
}
