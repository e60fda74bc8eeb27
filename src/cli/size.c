/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit size`: what each structure costs for --capacity keys at a
 * target --fpp, and (--overfill) what its false positive rate becomes when
 * it holds 1, 2 and 4 times the capacity.
 *
 * Sizing: every structure is created with the configuration a user would
 * write for (capacity, fpp) and asked what it holds (its info call), so
 * the bytes are what a create really allocates; k and the fpp it achieves
 * at `capacity` keys come from the same info and the library's formulas
 * (bk_params_*, bk_fbf_steady_fpp). The FBF and the idem table are sized
 * so that the whole filter's rate, not one constituent's, is the target
 * (bk_fbf_filter_fpp_for); the Bloom clock reads the capacity as the
 * events concurrent with the one tested (bk_bloomclock_params).
 *
 * Overfill: for each load L in 1, 2, 4 a fresh structure gets L * capacity
 * distinct 8-byte keys (splitmix64 of --seed, as compare's), then --probes
 * keys never added are looked up: measured = positives / probes, shown
 * beside the formula at that load and the 95 % half-width of a binomial
 * proportion (1.96 sqrt(p (1 - p) / probes)). The FBFs get their load as
 * a rate: L * capacity keys per refresh period, added in tenths of a
 * period, for 2 (N + 2) periods, then probed at the end of a period (the
 * fullest moment). The idem table gets L * capacity fresh updates per
 * period the same way; measured is the share of genuine updates it
 * dropped as duplicates over the last periods (about --probes updates),
 * and its formula the filter's estimate at the end. fn is the share of
 * the keys added (the last period's, for the windowed ones) answered
 * absent.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/bloom.h"
#include "bloomkit/bloomclock.h"
#include "bloomkit/cbf.h"
#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/kbf.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "cli/cli.h"
#include "cli/opts.h"

#define PROG "bloomkit size"
#define MAX_CAPACITY UINT64_C(100000000)
#define PERIOD 1000   /* the FBF's refresh period, in its time units */
#define SLICES 10     /* a period's keys are added in this many steps */
#define KBF_VALUES 15 /* distinct values the overfilled kBF stores */
#define ABSENT_BASE (UINT64_C(1) << 62) /* probe key indices start here */

typedef struct options {
  uint64_t capacity, probes, seed;
  double fpp;
  unsigned n_past;
  bool csv, overfill;
} options;

/* ---- sizing -------------------------------------------------------------- */

typedef struct size_row {
  const char *name;
  bool ok; /* created; false: the structure refuses this config */
  size_t bytes;
  unsigned k;
  double fpp; /* achieved at `capacity` keys, by its formula */
} size_row;

/* The constituent fpp that makes an FBF of N past filters answer with
 * `fpp` (0 when it cannot). */
static double fbf_filter_fpp(const options *o) {
  double f = 0;
  return bk_fbf_filter_fpp_for(o->capacity, o->n_past, o->fpp, &f) == BK_OK ? f
                                                                            : 0;
}

static void size_bloom(const options *o, bk_bloom_layout layout, size_row *r) {
  bk_bloom_config c = {.capacity = o->capacity,
                       .fpp = o->fpp,
                       .layout = layout,
                       .seed = o->seed};
  bk_bloom *b = NULL;
  bk_bloom_info i;
  if (bk_bloom_create(&b, &c) != BK_OK) return;
  if (bk_bloom_info_get(b, &i) == BK_OK) {
    bk_status s =
        layout == BK_BLOOM_STANDARD
            ? bk_params_fpp(i.m_bits, i.k, o->capacity, &r->fpp)
        : layout == BK_BLOOM_BLOCKED
            ? bk_params_fpp_blocked(i.m_bits, i.k, o->capacity, &r->fpp)
            : bk_params_fpp_split_block(i.m_bits, o->capacity, &r->fpp);
    r->ok = s == BK_OK;
    r->bytes = i.memory;
    r->k = i.k;
  }
  bk_bloom_destroy(b);
}

static void size_cbf(const options *o, size_row *r) {
  bk_cbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_cbf *f = NULL;
  bk_cbf_info i;
  if (bk_cbf_create(&f, &c) != BK_OK) return;
  if (bk_cbf_info_get(f, &i) == BK_OK) {
    r->ok = bk_params_fpp(i.m_counters, i.k, o->capacity, &r->fpp) == BK_OK;
    r->bytes = i.memory;
    r->k = i.k;
  }
  bk_cbf_destroy(f);
}

static void size_scbf(const options *o, size_row *r) {
  bk_scbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_scbf *s = NULL;
  bk_scbf_info i;
  bk_scbf_filter_info f0;
  if (bk_scbf_create(&s, &c) != BK_OK) return;
  if (bk_scbf_info_get(s, &i) == BK_OK &&
      bk_scbf_filter_info_get(s, 0, &f0) == BK_OK) {
    /* At `capacity` keys only filter 0 exists. */
    r->ok = bk_params_fpp(f0.m_counters, f0.k, o->capacity, &r->fpp) == BK_OK;
    r->bytes = i.memory;
    r->k = f0.k;
  }
  bk_scbf_destroy(s);
}

static bk_fbf_config fbf_config(const options *o, bool adaptive) {
  bk_fbf_config c = {.capacity = o->capacity,
                     .fpp = fbf_filter_fpp(o),
                     .n_past = o->n_past,
                     .refresh_period = PERIOD,
                     .adaptive = adaptive,
                     .target_fpp = o->fpp,
                     .seed = o->seed};
  if (adaptive) { /* as bk_idem's adaptive table: steps of a tenth */
    c.adapt_interval = PERIOD;
    c.period_step = PERIOD / 10;
    c.min_period = PERIOD / 10;
  }
  return c;
}

static void size_fbf(const options *o, bool adaptive, size_row *r) {
  bk_fbf_config c = fbf_config(o, adaptive);
  bk_fbf *f = NULL;
  bk_fbf_info i;
  if (c.fpp == 0 || bk_fbf_create(&f, &c) != BK_OK) return;
  if (bk_fbf_info_get(f, &i) == BK_OK) {
    r->ok = bk_fbf_steady_fpp(o->capacity, o->n_past, c.fpp, &r->fpp) == BK_OK;
    r->bytes = i.memory;
    r->k = i.k;
  }
  bk_fbf_destroy(f);
}

static void size_rbf(const options *o, size_row *r) {
  bk_rbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_rbf *f = NULL;
  bk_rbf_info i;
  if (bk_rbf_create(&f, &c) != BK_OK) return;
  if (bk_rbf_info_get(f, &i) == BK_OK) {
    r->ok = bk_params_fpp(i.m_bits, i.k, o->capacity, &r->fpp) == BK_OK;
    r->bytes = i.memory;
    r->k = i.k;
  }
  bk_rbf_destroy(f);
}

/* An idem table whose window is N + 1 periods of one time unit. */
static bk_idem_config idem_config(const options *o, double filter_fpp) {
  bk_idem_config c = {.strategy = BK_IDEM_FBF,
                      .retry_timeout = (uint64_t)(o->n_past + 1) * PERIOD,
                      .refresh_period = PERIOD,
                      .n_past = o->n_past,
                      .ops_per_period = o->capacity,
                      .fpp = filter_fpp,
                      .seed = o->seed};
  return c;
}

static void size_idem(const options *o, size_row *r) {
  double ff = fbf_filter_fpp(o);
  bk_idem_config c = idem_config(o, ff);
  bk_idem *t = NULL;
  bk_idem_info i;
  if (ff == 0 || bk_idem_create(&t, &c) != BK_OK) return;
  if (bk_idem_info_get(t, &i) == BK_OK) {
    r->ok = bk_fbf_steady_fpp(o->capacity, o->n_past, ff, &r->fpp) == BK_OK;
    r->bytes = i.filter_memory + i.table_memory;
    r->k = 0; /* the FBF's, which idem's info does not give */
    bk_fbf_config fc = fbf_config(o, false);
    bk_fbf *f = NULL;
    bk_fbf_info fi;
    if (bk_fbf_create(&f, &fc) == BK_OK && bk_fbf_info_get(f, &fi) == BK_OK)
      r->k = fi.k;
    bk_fbf_destroy(f);
  }
  bk_idem_destroy(t);
}

static void size_kbf(const options *o, size_row *r) {
  bk_kbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_kbf *f = NULL;
  bk_kbf_info i;
  if (bk_kbf_create(&f, &c) != BK_OK) return;
  if (bk_kbf_info_get(f, &i) == BK_OK) {
    r->ok = bk_params_fpp(i.m_cells, i.k, o->capacity, &r->fpp) == BK_OK;
    r->bytes = i.memory_cells + i.memory_skbf + i.memory_values;
    r->k = i.k;
  }
  bk_kbf_destroy(f);
}

static void size_bloomclock(const options *o, size_row *r) {
  uint64_t m;
  unsigned k;
  if (bk_bloomclock_params(o->capacity, 1, o->fpp, &m, &k) != BK_OK) return;
  bk_bloomclock_config c = {.m = m, .k = k, .seed = o->seed};
  bk_bloomclock *b = NULL;
  bk_bloomclock_info i;
  if (bk_bloomclock_create(&b, &c) != BK_OK) return;
  if (bk_bloomclock_info_get(b, &i) == BK_OK) {
    r->ok = bk_params_fpp(m, k, o->capacity, &r->fpp) == BK_OK;
    r->bytes = i.memory;
    r->k = k;
  }
  bk_bloomclock_destroy(b);
}

#define N_SIZE_ROWS 11

static void size_all(const options *o, size_row *rows) {
  static const char *const names[N_SIZE_ROWS] = {
      "bloom standard", "bloom blocked", "bloom split-block", "cbf",
      "scbf",           "fbf",           "fbf adaptive",      "rbf",
      "idem",           "kbf",           "bloomclock"};
  for (size_t i = 0; i < N_SIZE_ROWS; i++)
    rows[i] = (size_row){.name = names[i]};
  size_bloom(o, BK_BLOOM_STANDARD, &rows[0]);
  size_bloom(o, BK_BLOOM_BLOCKED, &rows[1]);
  size_bloom(o, BK_BLOOM_SPLIT_BLOCK, &rows[2]);
  size_cbf(o, &rows[3]);
  size_scbf(o, &rows[4]);
  size_fbf(o, false, &rows[5]);
  size_fbf(o, true, &rows[6]);
  size_rbf(o, &rows[7]);
  size_idem(o, &rows[8]);
  size_kbf(o, &rows[9]);
  size_bloomclock(o, &rows[10]);
}

static void print_sizes(const options *o, const size_row *rows) {
  if (o->csv) {
    printf("structure,capacity,target_fpp,bytes,bits_per_key,k,fpp\n");
    for (size_t i = 0; i < N_SIZE_ROWS; i++) {
      const size_row *r = &rows[i];
      printf("%s,%" PRIu64 ",%.17g,", r->name, o->capacity, o->fpp);
      if (r->ok)
        printf("%zu,%.4f,%u,%.6g\n", r->bytes,
               (double)r->bytes * 8 / (double)o->capacity, r->k, r->fpp);
      else
        printf(",,,\n");
    }
    return;
  }
  printf("%" PRIu64
         " keys at fpp %g (fbf, idem: N = %u past filters, "
         "capacity per refresh period)\n",
         o->capacity, o->fpp, o->n_past);
  printf("%-18s %14s %9s %3s %10s\n", "structure", "bytes", "bits/key", "k",
         "fpp");
  for (size_t i = 0; i < N_SIZE_ROWS; i++) {
    const size_row *r = &rows[i];
    if (!r->ok) {
      printf("%-18s %14s %9s %3s %10s  (refuses this capacity or fpp)\n",
             r->name, "-", "-", "-", "-");
      continue;
    }
    printf("%-18s %14zu %9.2f %3u %10.4g\n", r->name, r->bytes,
           (double)r->bytes * 8 / (double)o->capacity, r->k, r->fpp);
  }
}

/* ---- overfill ------------------------------------------------------------ */

static void key_of(uint64_t seed, uint64_t i, unsigned char out[8]) {
  uint64_t x = splitmix_output(seed + (i + 1) * SPLITMIX_GAMMA);
  for (unsigned b = 0; b < 8; b++) out[b] = (unsigned char)(x >> (8 * b));
}

/* One structure behind a uniform face. `advance` is NULL for those that
 * have no clock; `formula` is the rate the structure's model gives now
 * (`loaded` keys added). */
typedef struct filter_ops {
  const char *name;
  void *(*create)(const options *o);
  void (*destroy)(void *s);
  bk_status (*add)(void *s, const unsigned char *key);
  bool (*contains)(const void *s, const unsigned char *key);
  bk_status (*advance)(void *s, uint64_t now);
  double (*formula)(const void *s, uint64_t loaded);
  unsigned variant;
} filter_ops;

/* The variant in use (the layout of bk_bloom), set before create. */
static unsigned current_variant;

static void *bloom_new(const options *o) {
  bk_bloom_config c = {.capacity = o->capacity,
                       .fpp = o->fpp,
                       .layout = (bk_bloom_layout)current_variant,
                       .seed = o->seed};
  bk_bloom *b = NULL;
  return bk_bloom_create(&b, &c) == BK_OK ? b : NULL;
}
static void bloom_free(void *s) {
  bk_bloom_destroy(s);
}
static bk_status bloom_put(void *s, const unsigned char *k) {
  return bk_bloom_add(s, k, 8);
}
static bool bloom_has(const void *s, const unsigned char *k) {
  bool r = false;
  (void)bk_bloom_contains(s, k, 8, &r);
  return r;
}
static double bloom_formula(const void *s, uint64_t n) {
  bk_bloom_info i;
  double p = NAN;
  if (bk_bloom_info_get(s, &i) != BK_OK) return p;
  if (i.layout == BK_BLOOM_STANDARD)
    (void)bk_params_fpp(i.m_bits, i.k, n, &p);
  else if (i.layout == BK_BLOOM_BLOCKED)
    (void)bk_params_fpp_blocked(i.m_bits, i.k, n, &p);
  else
    (void)bk_params_fpp_split_block(i.m_bits, n, &p);
  return p;
}

static void *cbf_new(const options *o) {
  bk_cbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_cbf *f = NULL;
  return bk_cbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void cbf_free(void *s) {
  bk_cbf_destroy(s);
}
static bk_status cbf_put(void *s, const unsigned char *k) {
  return bk_cbf_add(s, k, 8);
}
static bool cbf_has(const void *s, const unsigned char *k) {
  bool r = false;
  (void)bk_cbf_contains(s, k, 8, &r);
  return r;
}
static double cbf_formula(const void *s, uint64_t n) {
  bk_cbf_info i;
  double p = NAN;
  if (bk_cbf_info_get(s, &i) == BK_OK)
    (void)bk_params_fpp(i.m_counters, i.k, n, &p);
  return p;
}

/* bk_scbf: ids are the key numbers, so filters open in order. */
static uint64_t scbf_next_id;
static void *scbf_new(const options *o) {
  bk_scbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_scbf *s = NULL;
  scbf_next_id = 0;
  return bk_scbf_create(&s, &c) == BK_OK ? s : NULL;
}
static void scbf_free(void *s) {
  bk_scbf_destroy(s);
}
static bk_status scbf_put(void *s, const unsigned char *k) {
  return bk_scbf_add(s, k, 8, scbf_next_id++);
}
static bool scbf_has(const void *s, const unsigned char *k) {
  bool r = false;
  (void)bk_scbf_contains(s, k, 8, &r);
  return r;
}
/* 1 - prod (1 - fpp of filter i at the keys it holds). */
static double scbf_formula(const void *s, uint64_t n) {
  (void)n;
  bk_scbf_info i;
  if (bk_scbf_info_get(s, &i) != BK_OK) return NAN;
  double none = 1;
  for (unsigned f = 0; f < i.n_filters; f++) {
    bk_scbf_filter_info fi;
    double p;
    if (bk_scbf_filter_info_get(s, f, &fi) != BK_OK ||
        bk_params_fpp(fi.m_counters, fi.k, fi.count, &p) != BK_OK)
      return NAN;
    none *= 1 - p;
  }
  return 1 - none;
}

static void *fbf_new(const options *o) {
  bk_fbf_config c = fbf_config(o, current_variant != 0);
  bk_fbf *f = NULL;
  return c.fpp > 0 && bk_fbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void fbf_free(void *s) {
  bk_fbf_destroy(s);
}
static bk_status fbf_put(void *s, const unsigned char *k) {
  return bk_fbf_add(s, k, 8);
}
static bool fbf_has(const void *s, const unsigned char *k) {
  bool r = false;
  (void)bk_fbf_contains(s, k, 8, &r);
  return r;
}
/* Refreshes and, when adaptive, Algorithm 3's ticks. */
static bk_status fbf_tick(void *s, uint64_t now) {
  return bk_fbf_advance(s, now);
}
static double fbf_formula(const void *s, uint64_t n) {
  (void)n;
  double p = NAN;
  (void)bk_fbf_estimated_fpp(s, BK_FBF_CHECK_DEFAULT, &p);
  return p;
}

static void *rbf_new(const options *o) {
  bk_rbf_config c = {.capacity = o->capacity, .fpp = o->fpp, .seed = o->seed};
  bk_rbf *r = NULL;
  return bk_rbf_create(&r, &c) == BK_OK ? r : NULL;
}
static void rbf_free(void *s) {
  bk_rbf_destroy(s);
}
static bk_status rbf_put(void *s, const unsigned char *k) {
  return bk_rbf_add(s, k, 8);
}
static bool rbf_has(const void *s, const unsigned char *k) {
  bool r = false;
  (void)bk_rbf_contains(s, k, 8, &r);
  return r;
}
static double rbf_formula(const void *s, uint64_t n) {
  (void)n;
  double p = NAN;
  (void)bk_rbf_estimated_fpp(s, &p);
  return p;
}

static void *kbf_new(const options *o) {
  bk_kbf_config c = {.capacity = o->capacity,
                     .fpp = o->fpp,
                     .max_values = KBF_VALUES,
                     .seed = o->seed};
  bk_kbf *f = NULL;
  return bk_kbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void kbf_free(void *s) {
  bk_kbf_destroy(s);
}
static bk_status kbf_put(void *s, const unsigned char *k) {
  const unsigned char value = (unsigned char)(k[0] % KBF_VALUES);
  return bk_kbf_insert(s, k, 8, &value, 1);
}
/* A positive: anything but "absent" (a value, or not decodable). */
static bool kbf_has(const void *s, const unsigned char *k) {
  bk_kbf_result r = BK_KBF_ABSENT;
  (void)bk_kbf_query(s, k, 8, &r, NULL, NULL);
  return r != BK_KBF_ABSENT;
}
static double kbf_formula(const void *s, uint64_t n) {
  bk_kbf_info i;
  double p = NAN;
  if (bk_kbf_info_get(s, &i) == BK_OK)
    (void)bk_params_fpp(i.m_cells, i.k, n, &p);
  return p;
}

static const filter_ops overfill_ops[] = {
    {"bloom standard", bloom_new, bloom_free, bloom_put, bloom_has, NULL,
     bloom_formula, BK_BLOOM_STANDARD},
    {"bloom blocked", bloom_new, bloom_free, bloom_put, bloom_has, NULL,
     bloom_formula, BK_BLOOM_BLOCKED},
    {"bloom split-block", bloom_new, bloom_free, bloom_put, bloom_has, NULL,
     bloom_formula, BK_BLOOM_SPLIT_BLOCK},
    {"cbf", cbf_new, cbf_free, cbf_put, cbf_has, NULL, cbf_formula, 0},
    {"scbf", scbf_new, scbf_free, scbf_put, scbf_has, NULL, scbf_formula, 0},
    {"fbf", fbf_new, fbf_free, fbf_put, fbf_has, fbf_tick, fbf_formula, 0},
    {"fbf adaptive", fbf_new, fbf_free, fbf_put, fbf_has, fbf_tick, fbf_formula,
     1},
    {"rbf", rbf_new, rbf_free, rbf_put, rbf_has, NULL, rbf_formula, 0},
    {"kbf", kbf_new, kbf_free, kbf_put, kbf_has, NULL, kbf_formula, 0},
};
#define N_OVERFILL (sizeof overfill_ops / sizeof overfill_ops[0])

typedef struct fill_result {
  double measured, formula, fn;
  bool ok;
} fill_result;

/* Periods a windowed structure runs before it is probed. */
static uint64_t warm_periods(const options *o) {
  return 2 * ((uint64_t)o->n_past + 2);
}

/* Add keys [from, to) of the key stream. */
static bk_status add_range(const filter_ops *op, void *s, const options *o,
                           uint64_t from, uint64_t to) {
  unsigned char key[8];
  for (uint64_t i = from; i < to; i++) {
    key_of(o->seed, i, key);
    bk_status st = op->add(s, key);
    if (st != BK_OK) return st;
  }
  return BK_OK;
}

static int overfill_one(const filter_ops *op, const options *o, unsigned load,
                        fill_result *res) {
  current_variant = op->variant;
  void *s = op->create(o);
  if (!s) return 0; /* refuses this config: ok stays false */
  uint64_t per = load * o->capacity, added = 0, last_from = 0;
  if (!op->advance) {
    TRY_BK(add_range(op, s, o, 0, per));
    added = per;
  } else {
    uint64_t now = 0;
    for (uint64_t p = 0; p < warm_periods(o); p++) {
      last_from = added;
      for (unsigned sl = 0; sl < SLICES; sl++) {
        uint64_t to = last_from + per * (sl + 1) / SLICES;
        TRY_BK(add_range(op, s, o, added, to));
        added = to;
        now += PERIOD / SLICES;
        /* The period's last slice is probed before the clock moves. */
        if (p + 1 < warm_periods(o) || sl + 1 < SLICES)
          TRY_BK(op->advance(s, now));
      }
    }
  }
  unsigned char key[8];
  uint64_t pos = 0, missed = 0;
  for (uint64_t i = 0; i < o->probes; i++) {
    key_of(o->seed, ABSENT_BASE + i, key);
    pos += op->contains(s, key);
  }
  /* False negatives among the keys the structure must still hold (the
   * windowed ones: the last period's), at most --probes of them. */
  uint64_t span = added - last_from, step = span / o->probes + 1, checked = 0;
  for (uint64_t i = last_from; i < added; i += step, checked++) {
    key_of(o->seed, i, key);
    missed += !op->contains(s, key);
  }
  res->measured = (double)pos / (double)o->probes;
  res->formula = op->formula(s, added);
  res->fn = checked ? (double)missed / (double)checked : 0;
  res->ok = true;
  op->destroy(s);
  return 0;
fail:
  op->destroy(s);
  return 1;
}

/* bk_idem: genuine updates dropped as duplicates. */
static int overfill_idem(const options *o, unsigned load, fill_result *res) {
  double ff = fbf_filter_fpp(o);
  bk_idem_config c = idem_config(o, ff);
  bk_idem *t = NULL;
  if (ff == 0 || bk_idem_create(&t, &c) != BK_OK) return 0;
  uint64_t per = load * o->capacity, seq = 0, now = 0;
  uint64_t measure_periods = (o->probes + per - 1) / per;
  uint64_t periods = warm_periods(o) + measure_periods;
  uint64_t dropped = 0, counted = 0;
  for (uint64_t p = 0; p < periods; p++) {
    bool measure = p >= warm_periods(o);
    for (unsigned sl = 0; sl < SLICES; sl++) {
      uint64_t to = per * p + per * (sl + 1) / SLICES;
      for (; seq < to; seq++) {
        bk_idem_outcome out;
        TRY_BK(bk_idem_add(t, "c", 1, (bk_idem_op_id){0, seq}, 1, NULL, &out));
        if (measure) {
          dropped += out == BK_IDEM_DUPLICATE;
          counted++;
        }
      }
      now += PERIOD / SLICES;
      if (p + 1 < periods || sl + 1 < SLICES) TRY_BK(bk_idem_advance(t, now));
    }
  }
  bk_idem_info i;
  TRY_BK(bk_idem_info_get(t, &i));
  res->measured = (double)dropped / (double)counted;
  res->formula = i.fpp;
  res->fn = 0; /* a retry inside the window is always caught */
  res->ok = true;
  bk_idem_destroy(t);
  return 0;
fail:
  bk_idem_destroy(t);
  return 1;
}

static const unsigned loads[] = {1, 2, 4};
#define N_LOADS 3

static void print_fill(const options *o, const char *name, unsigned load,
                       const fill_result *r, uint64_t trials) {
  double p = r->measured;
  double tol = 1.96 * sqrt(p * (1 - p) / (double)trials);
  if (o->csv) {
    if (r->ok)
      printf("%s,%u,%.6g,%.3g,%.6g,%.4g\n", name, load, p, tol, r->formula,
             r->fn);
    else
      printf("%s,%u,,,,\n", name, load);
    return;
  }
  if (!r->ok) {
    printf("%-18s %3ux %10s\n", name, load, "-");
    return;
  }
  printf("%-18s %3ux %10.4g %9.2g %10.4g %8.4g\n", name, load, p, tol,
         r->formula, r->fn);
}

static int run_overfill(const options *o) {
  if (o->csv)
    printf("structure,load,measured_fpp,tolerance_95,formula_fpp,fn\n");
  else {
    printf("fpp past capacity: %" PRIu64 " keys at fpp %g, %" PRIu64
           " probes, seed %" PRIu64 "\n",
           o->capacity, o->fpp, o->probes, o->seed);
    printf("%-18s %4s %10s %9s %10s %8s\n", "structure", "load", "measured",
           "+-95%", "formula", "fn");
  }
  for (size_t i = 0; i < N_OVERFILL + 1; i++) {
    for (unsigned l = 0; l < N_LOADS; l++) {
      fill_result r = {0};
      uint64_t trials = o->probes;
      int st;
      const char *name;
      if (i < N_OVERFILL) {
        name = overfill_ops[i].name;
        st = overfill_one(&overfill_ops[i], o, loads[l], &r);
      } else {
        uint64_t per = loads[l] * o->capacity;
        name = "idem";
        trials = (o->probes + per - 1) / per * per;
        st = overfill_idem(o, loads[l], &r);
      }
      if (st != 0) return st;
      print_fill(o, name, loads[l], &r, trials);
    }
  }
  return 0;
}

/* ---- the command --------------------------------------------------------- */

#define SIZE_DESCRIPTION                                                    \
  "What each structure costs for --capacity keys at a target --fpp: the "   \
  "bytes a create with that configuration allocates, bits per key, k and "  \
  "the fpp it achieves at capacity. --overfill measures instead the false " \
  "positive rate at 1, 2 and 4 times the capacity, beside the formula. "    \
  "docs/sizing.md explains the rows."

int bk_cli_size(int argc, char **argv) {
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_U64("capacity", &o.capacity, 1000000, 1, MAX_CAPACITY, "N",
                 "keys the structures are sized for (fbf, idem: per refresh "
                 "period; bloomclock: events concurrent with the one "
                 "tested)"),
      BK_CLI_DOUBLE("fpp", &o.fpp, 0.01, 0, 1, "P",
                    "target false positive probability",
                    .d_open = BK_CLI_OPEN_MIN | BK_CLI_OPEN_MAX),
      BK_CLI_UNSIGNED("n-past", &o.n_past, 2, 1, 62, "N",
                      "past filters of the fbf and idem rows"),
      BK_CLI_FLAG("overfill", &o.overfill,
                  "measure the fpp at 1, 2 and 4 times the capacity"),
      BK_CLI_U64("probes", &o.probes, 1000000, 1000, UINT64_C(100000000), "N",
                 "absent keys looked up per measurement (--overfill)"),
      BK_CLI_U64("seed", &o.seed, 20261125, 0, UINT64_MAX, "N",
                 "key stream and hash seed"),
      BK_CLI_FLAG("csv", &o.csv, "CSV instead of the table"),
  };
  int status = bk_cli_parse_options(PROG, SIZE_DESCRIPTION, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
  if (o.overfill) {
    status = run_overfill(&o);
  } else {
    size_row rows[N_SIZE_ROWS];
    size_all(&o, rows);
    print_sizes(&o, rows);
    status = 0;
  }
  return bk_cli_flush_output(PROG, status, stdout, stderr);
}
