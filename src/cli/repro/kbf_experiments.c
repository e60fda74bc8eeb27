/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit kbf-experiments`: the data of the kBF paper's Figs. 2-5, 7-14
 * and 17-18 as CSV (and PNG with --plot), on the paper's workload (its
 * Sec. 6.1, "7.1" in the numbering): key sizes from a generalized
 * extreme value law (mu 30.7984, sigma 8.20449, k 0.078688), 3000
 * distinct values with sizes from a generalized Pareto law (theta 0, sigma
 * 214.476, k 0.348238), random bytes, all from --seed.
 *
 *   fig2   bits per encoding against n: the bound, bloomkit's cubes, the
 *          greedy Algorithm 1 exact and with its Bloom filter, and times
 *   fig3   the greedy encodings against their index, with the quadratic
 *          fit of Sec. 3.6
 *   fig4   the share of cells holding >= 3 encodings at the p-capacity,
 *          against n, beside P_n(rho)
 *   fig5   decode failure against rho: simulation, the paper's formula
 *          and the own-cell formula (docs/design/kbf.md 5.13)
 *   fig7/8 false negatives / false positives as m shrinks to 0.5 m
 *   fig9/10  false positives of deleted keys after each tenth deleted
 *   fig11/12 false negatives after each tenth updated
 *   fig13/14 false negatives after JOIN / COMPRESS against rho
 *   fig17/18 the two decoding options at m/2: false negatives, memory
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloomkit/hash.h"
#include "bloomkit/kbf.h"
#include "bloomkit/params.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"

#define PROG "bloomkit kbf-experiments"
#define N_VALUES 3000
#define N_P 4
static const double p_values[N_P] = {1e-3, 1e-4, 1e-5, 1e-6};
static const char *const p_names[N_P] = {"p1e-3", "p1e-4", "p1e-5", "p1e-6"};

typedef struct options {
  uint64_t seed;
  uint64_t n;
  uint64_t greedy_max;
  const char *out_dir;
  const char *plot_dir;
} options;

/* ---- the workload (Sec. 6.1) ------------------------------------------- */

typedef struct workload {
  uint64_t n;
  bk_hash *keys;    /* n stored keys, then n never stored */
  uint16_t *values; /* the value index of each stored key */
  uint16_t *fresh;  /* a second value per key, for updates */
  unsigned char *value_bytes[N_VALUES];
  size_t value_len[N_VALUES];
  uint64_t key_bytes_total, value_bytes_total;
} workload;

static double uniform01(uint64_t *s) {
  *s += SPLITMIX_GAMMA;
  return ((double)(splitmix_output(*s) >> 11) + 0.5) * 0x1p-53;
}
static uint64_t next_u64(uint64_t *s) {
  *s += SPLITMIX_GAMMA;
  return splitmix_output(*s);
}

/* Generalized extreme value by inversion: mu + sigma ((-ln U)^-xi - 1)/xi. */
static double gev(uint64_t *s, double mu, double sigma, double xi) {
  return mu + sigma * (pow(-log(uniform01(s)), -xi) - 1.0) / xi;
}
/* Generalized Pareto: theta + sigma (U^-xi - 1) / xi. */
static double gpd(uint64_t *s, double theta, double sigma, double xi) {
  return theta + sigma * (pow(uniform01(s), -xi) - 1.0) / xi;
}

static size_t clamp_size(double x, size_t lo, size_t hi) {
  if (!(x >= (double)lo)) return lo;
  if (x > (double)hi) return hi;
  return (size_t)x;
}

static void workload_free(workload *w) {
  free(w->keys);
  free(w->values);
  free(w->fresh);
  for (int i = 0; i < N_VALUES; i++) free(w->value_bytes[i]);
}

static int workload_make(workload *w, uint64_t n, uint64_t seed,
                         uint64_t hash_seed) {
  memset(w, 0, sizeof *w);
  w->n = n;
  w->keys = malloc(2 * n * sizeof *w->keys);
  w->values = malloc(n * sizeof *w->values);
  w->fresh = malloc(n * sizeof *w->fresh);
  if (!w->keys || !w->values || !w->fresh) goto oom;
  uint64_t s = seed;
  for (int i = 0; i < N_VALUES; i++) {
    /* "starting from 15 bytes": 15 + the Pareto part, so every value
     * can carry its index in its first two bytes (3000 distinct). */
    size_t len = 15 + clamp_size(gpd(&s, 0, 214.476, 0.348238), 0, 1u << 20);
    w->value_bytes[i] = malloc(len);
    if (!w->value_bytes[i]) goto oom;
    for (size_t j = 0; j < len; j++)
      w->value_bytes[i][j] = (unsigned char)next_u64(&s);
    /* distinct: the index in the first bytes when long enough */
    if (len >= 2) {
      w->value_bytes[i][0] = (unsigned char)i;
      w->value_bytes[i][1] = (unsigned char)(i >> 8);
    }
    w->value_len[i] = len;
    w->value_bytes_total += len;
  }
  unsigned char key[256];
  for (uint64_t i = 0; i < 2 * n; i++) {
    size_t len = clamp_size(gev(&s, 30.7984, 8.20449, 0.078688), 9, 250);
    for (size_t j = 0; j < len; j++) key[j] = (unsigned char)next_u64(&s);
    /* distinct: the index in the first 8 bytes */
    for (int j = 0; j < 8; j++) key[j] = (unsigned char)(i >> (8 * j));
    if (i < n) w->key_bytes_total += len;
    bk_hash_bytes(BK_HASH_XXH3, hash_seed, key, len, &w->keys[i]);
  }
  for (uint64_t i = 0; i < n; i++) {
    w->values[i] = (uint16_t)(next_u64(&s) % N_VALUES);
    w->fresh[i] = (uint16_t)(next_u64(&s) % N_VALUES);
  }
  return 0;
oom:
  fprintf(stderr, PROG ": out of memory for %llu keys\n",
          (unsigned long long)n);
  workload_free(w);
  return 1;
}

/* A kBF of `cells` cells and k hashes with the 3000 values interned in
 * order (so any two can be joined). */
static int new_kbf(const workload *w, uint64_t cells, unsigned k, double p,
                   bk_kbf_decode decode, uint64_t hash_seed, bk_kbf **out) {
  bk_kbf_config cfg = {
      .m_cells = cells, .k = k, .fpp = p, .decode = decode, .seed = hash_seed};
  bk_status st = bk_kbf_create(out, &cfg);
  if (st != BK_OK) {
    fprintf(stderr, PROG ": kbf create: %s\n", bk_strerror(st));
    return 1;
  }
  for (int i = 0; i < N_VALUES; i++) {
    uint32_t index;
    st = bk_kbf_intern(*out, w->value_bytes[i], w->value_len[i], &index);
    if (st == BK_OK && index != (uint32_t)i) st = BK_EMISMATCH;
    if (st != BK_OK) {
      fprintf(stderr, PROG ": kbf intern: %s\n", bk_strerror(st));
      bk_kbf_destroy(*out);
      return 1;
    }
  }
  return 0;
}

typedef struct counts {
  uint64_t right, wrong, absent, undecodable;
  uint64_t paper_rule; /* keys the paper's Algorithm 6 gives a value */
} counts;

/* Whether the paper's Algorithm 6 as written answers a value for h: no
 * empty cell, then the first counter-1 cell's content (the counters come
 * from bk_kbf_cell_counters_hash). decode22/23 answers are ignored here, so
 * this is a lower bound on its false positives. */
static bool paper_rule_answers(const bk_kbf *f, bk_hash h) {
  uint8_t counters[BK_K_MAX];
  size_t k = 0;
  if (bk_kbf_cell_counters_hash(f, h, counters, BK_K_MAX, &k) != BK_OK)
    return false;
  bool one = false;
  for (size_t i = 0; i < k; i++) {
    if (counters[i] == 0) return false;
    if (counters[i] == 1) one = true;
  }
  return one;
}

static void query_range(const bk_kbf *f, const workload *w, uint64_t from,
                        uint64_t to, const uint16_t *ref, counts *c) {
  for (uint64_t i = from; i < to; i++) {
    bk_kbf_result r;
    uint32_t index = UINT32_MAX;
    bk_kbf_query_index_hash(f, w->keys[i], &r, &index);
    if (!ref) c->paper_rule += paper_rule_answers(f, w->keys[i]);
    if (r == BK_KBF_ABSENT)
      c->absent++;
    else if (r == BK_KBF_UNDECODABLE)
      c->undecodable++;
    else if (ref && index == ref[i])
      c->right++;
    else
      c->wrong++;
  }
}

static void insert_range(bk_kbf *f, const workload *w, uint64_t from,
                         uint64_t to) {
  for (uint64_t i = from; i < to; i++)
    bk_kbf_insert_index_hash(f, w->keys[i], w->values[i]);
}

/* ---- output ---------------------------------------------------------------
 */

static FILE *open_csv(const options *o, const char *name, const char *what) {
  if (!o->out_dir) {
    printf("\n# %s: %s\n", name, what);
    return stdout;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.csv", o->out_dir, name);
  FILE *fp = fopen(path, "w");
  if (!fp) {
    fprintf(stderr, PROG ": cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  fprintf(fp, "# %s: %s\n# seed %llu n %llu\n", name, what,
          (unsigned long long)o->seed, (unsigned long long)o->n);
  return fp;
}

static int close_csv(const options *o, FILE *fp, const char *name) {
  if (fp == stdout) return 0;
  bool bad = ferror(fp) != 0;
  if (fclose(fp) != 0) bad = true;
  if (bad) {
    fprintf(stderr, PROG ": error writing %s.csv\n", name);
    return 1;
  }
  printf("# wrote %s/%s.csv\n", o->out_dir, name);
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned bits_of(uint64_t v) {
  return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

/* ---- Fig. 2 and 3: encodings ----------------------------------------------
 */

static int run_encodings(const options *o) {
  FILE *fp = open_csv(o, "fig2",
                      "bits P per encoding against n: bound "
                      "2^P >= n(n-1)/2 + n, bloomkit's cubes (2t), the "
                      "greedy Algorithm 1 (exact bitmap; Bloom filter of 24 "
                      "bits per entry) and its build time in ms");
  if (!fp) return 1;
  fprintf(fp,
          "n,bound,cubes,greedy_exact,greedy_bloom,greedy_exact_ms,"
          "greedy_bloom_ms,bloom_false_rejections,cubes_intern_ms\n");
  uint64_t *enc = malloc(o->greedy_max * sizeof *enc);
  if (!enc) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  for (uint64_t n = 2; n <= 16384; n *= 2) {
    fprintf(fp, "%llu,%u,%u", (unsigned long long)n, bk_kbf_encoding_bound(n),
            2 * bk_kbf_pool_t(n));
    if (n <= o->greedy_max) {
      const bool bloom = n <= o->greedy_max / 4;
      uint32_t found;
      bk_kbf_greedy_stats st;
      double t0 = now_ms();
      bk_status s =
          bk_kbf_encodings_greedy((uint32_t)n, 32, 0, enc, &found, &st);
      double t1 = now_ms();
      unsigned exact = s == BK_OK ? bits_of(enc[n - 1]) : 0;
      if (bloom) {
        s = bk_kbf_encodings_greedy((uint32_t)n, 36, 24.0, enc, &found, &st);
        double t2 = now_ms();
        fprintf(fp, ",%u,%u,%.1f,%.1f,%llu", exact,
                s == BK_OK ? bits_of(enc[n - 1]) : 0, t1 - t0, t2 - t1,
                (unsigned long long)st.false_rejections);
      } else {
        fprintf(fp, ",%u,,%.1f,,", exact, t1 - t0);
      }
    } else {
      fprintf(fp, ",,,,,");
    }
    /* bloomkit's encodings: create a kBF for n values and intern n of
     * them (each gets its cube and goes into the s-kBF). */
    bk_kbf_config kc = {.m_cells = 1024,
                        .k = 3,
                        .fpp = 1e-4,
                        .max_values = (uint32_t)n,
                        .cell_bits = n > 16383 ? 64 : 32};
    bk_kbf *f;
    double c0 = now_ms();
    if (bk_kbf_create(&f, &kc) != BK_OK) {
      fprintf(fp, ",\n");
      continue;
    }
    for (uint32_t i = 0; i < n; i++) {
      uint32_t index;
      (void)bk_kbf_intern(f, &i, sizeof i, &index);
    }
    fprintf(fp, ",%.2f\n", now_ms() - c0);
    bk_kbf_destroy(f);
  }
  int status = close_csv(o, fp, "fig2");
  /* Fig. 3 on the largest greedy table. */
  const uint32_t n3 = (uint32_t)o->greedy_max;
  uint32_t found;
  if (!status &&
      bk_kbf_encodings_greedy(n3, 32, 0, enc, &found, NULL) == BK_OK) {
    bk_kbf_regression r;
    bk_kbf_regression_fit(enc, n3, &r);
    fp = open_csv(o, "fig3",
                  "greedy encodings against their index and the quadratic "
                  "fit of Sec. 3.6");
    if (!fp) {
      free(enc);
      return 1;
    }
    fprintf(fp,
            "# fit: y = %.6g + %.6g x + %.6g x^2; largest index error "
            "of the inverse %llu\n",
            r.a, r.b, r.c, (unsigned long long)r.max_error);
    fprintf(fp, "index,encoding,fit\n");
    for (uint32_t i = 0; i < n3; i += n3 / 256 ? n3 / 256 : 1)
      fprintf(fp, "%u,%llu,%.0f\n", i, (unsigned long long)enc[i],
              r.a + r.b * i + r.c * (double)i * i);
    status = close_csv(o, fp, "fig3");
  }
  free(enc);
  return status;
}

/* ---- Fig. 4 and 5: capacity ------------------------------------------------
 */

static int run_capacity(const options *o, const workload *w) {
  FILE *fp = open_csv(o, "fig4",
                      "share of cells holding >= 3 encodings at the "
                      "p-capacity (p = 1e-4), against n, and P_n(rho)");
  if (!fp) return 1;
  fprintf(fp, "n,rho,cells_ge3,pn_rho,pn_1\n");
  int status = 0;
  for (uint64_t n = 1000; n <= w->n && !status; n *= 2) {
    uint64_t m;
    unsigned k;
    bk_params_for_target(n, 1e-4, &m, &k);
    bk_kbf *f;
    if (new_kbf(w, m, k, 1e-4, BK_KBF_DECODE_23, o->seed, &f)) return 1;
    insert_range(f, w, 0, n);
    bk_kbf_info in;
    bk_kbf_info_get(f, &in);
    fprintf(fp, "%llu,%.4f,%.6f,%.6f,%.6f\n", (unsigned long long)n, in.rho,
            (double)in.load[3] / (double)in.m_cells, bk_kbf_pn(in.rho),
            bk_kbf_pn(1.0));
    bk_kbf_destroy(f);
  }
  status = close_csv(o, fp, "fig4");
  if (status) return status;
  fp = open_csv(o, "fig5",
                "share of stored keys not decodable with option 1 "
                "(decode22) against rho, k = 10: simulation, the paper's "
                "formula, the own-cell formula");
  if (!fp) return 1;
  fprintf(fp,
          "rho,simulated_k10,paper_k10,own_cell_k10,paper_k6,"
          "own_cell_k6\n");
  const unsigned k = 10;
  const uint64_t n = w->n < 100000 ? w->n : 100000;
  for (double rho = 0.5; rho <= 4.01 && !status; rho += 0.25) {
    const uint64_t m = (uint64_t)llround((double)n * k / (rho * log(2)));
    bk_kbf *f;
    if (new_kbf(w, m, k, 1e-4, BK_KBF_DECODE_22, o->seed, &f)) return 1;
    insert_range(f, w, 0, n);
    counts c = {0};
    query_range(f, w, 0, n, w->values, &c);
    fprintf(fp, "%.2f,%.6f,%.6g,%.6g,%.6g,%.6g\n", rho,
            (double)(c.undecodable + c.absent) / (double)n,
            bk_kbf_decode_failure(rho, 10, true),
            bk_kbf_decode_failure(rho, 10, false),
            bk_kbf_decode_failure(rho, 6, true),
            bk_kbf_decode_failure(rho, 6, false));
    bk_kbf_destroy(f);
  }
  return close_csv(o, fp, "fig5");
}

/* ---- Figs. 7-12: error ratios at the paper's p ----------------------------
 */

static int run_errors(const options *o, const workload *w) {
  const uint64_t n = w->n;
  /* Fig. 7 and 8: m from 1.0 down to 0.5 of the p-capacity's. */
  static const double factors[6] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5};
  double fn[6][N_P], fp_rate[6][N_P], wrong[6][N_P], fp_paper[6][N_P];
  for (int p = 0; p < N_P; p++) {
    uint64_t m;
    unsigned k;
    bk_params_for_target(n, p_values[p], &m, &k);
    for (int s = 0; s < 6; s++) {
      bk_kbf *f;
      if (new_kbf(w, (uint64_t)((double)m * factors[s]), k, p_values[p],
                  BK_KBF_DECODE_23, o->seed, &f))
        return 1;
      insert_range(f, w, 0, n);
      counts in = {0}, out = {0};
      query_range(f, w, 0, n, w->values, &in);
      query_range(f, w, n, 2 * n, NULL, &out);
      fn[s][p] = (double)(in.undecodable + in.absent) / (double)n;
      wrong[s][p] = (double)in.wrong / (double)n;
      fp_rate[s][p] = (double)out.wrong / (double)n;
      fp_paper[s][p] = (double)out.paper_rule / (double)n;
      bk_kbf_destroy(f);
    }
  }
  FILE *fp = open_csv(o, "fig7",
                      "false negative ratio (stored keys not decodable) as "
                      "m shrinks from the p-capacity's; wrong values in "
                      "the wrong_ columns");
  if (!fp) return 1;
  fprintf(fp, "size_factor");
  for (int p = 0; p < N_P; p++) fprintf(fp, ",%s", p_names[p]);
  for (int p = 0; p < N_P; p++) fprintf(fp, ",wrong_%s", p_names[p]);
  fprintf(fp, "\n");
  for (int s = 0; s < 6; s++) {
    fprintf(fp, "%.1f", factors[s]);
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", fn[s][p]);
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", wrong[s][p]);
    fprintf(fp, "\n");
  }
  if (close_csv(o, fp, "fig7")) return 1;
  fp = open_csv(o, "fig8",
                "false positive ratio (a value for a key never stored) as "
                "m shrinks: bloomkit's decoding, and the paper's Algorithm "
                "6 rule (a value from the first counter-1 cell) on the "
                "same cells");
  if (!fp) return 1;
  fprintf(fp, "size_factor");
  for (int p = 0; p < N_P; p++) fprintf(fp, ",%s", p_names[p]);
  for (int p = 0; p < N_P; p++) fprintf(fp, ",paper_rule_%s", p_names[p]);
  fprintf(fp, "\n");
  for (int s = 0; s < 6; s++) {
    fprintf(fp, "%.1f", factors[s]);
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", fp_rate[s][p]);
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", fp_paper[s][p]);
    fprintf(fp, "\n");
  }
  if (close_csv(o, fp, "fig8")) return 1;

  /* Figs. 9-12: batches of a tenth, at m and m/2. */
  for (int half = 0; half < 2; half++) {
    double del_fp[10][N_P], upd_fn[10][N_P], del_paper[10][N_P];
    for (int p = 0; p < N_P; p++) {
      uint64_t m;
      unsigned k;
      bk_params_for_target(n, p_values[p], &m, &k);
      if (half) m /= 2;
      bk_kbf *f, *g;
      if (new_kbf(w, m, k, p_values[p], BK_KBF_DECODE_23, o->seed, &f))
        return 1;
      if (new_kbf(w, m, k, p_values[p], BK_KBF_DECODE_23, o->seed, &g)) {
        bk_kbf_destroy(f);
        return 1;
      }
      insert_range(f, w, 0, n);
      insert_range(g, w, 0, n);
      uint16_t *ref = malloc(n * sizeof *ref);
      if (!ref) return 1;
      memcpy(ref, w->values, n * sizeof *ref);
      for (int b = 0; b < 10; b++) {
        const uint64_t from = n * (uint64_t)b / 10,
                       to = n * (uint64_t)(b + 1) / 10;
        /* DELETE(key, e_value) as Algorithm 4: the caller knows the
         * value, so a key whose value is not decodable goes too. */
        for (uint64_t i = from; i < to; i++)
          bk_kbf_delete_index_hash(f, w->keys[i], w->values[i]);
        counts c = {0};
        query_range(f, w, 0, to, NULL, &c);
        del_fp[b][p] = (double)c.wrong / (double)to;
        del_paper[b][p] = (double)c.paper_rule / (double)to;
        for (uint64_t i = from; i < to; i++)
          if (bk_kbf_update_index_hash(g, w->keys[i], w->fresh[i]) == BK_OK)
            ref[i] = w->fresh[i];
        counts u = {0};
        query_range(g, w, 0, n, ref, &u);
        upd_fn[b][p] = (double)(u.undecodable + u.absent) / (double)n;
      }
      free(ref);
      bk_kbf_destroy(f);
      bk_kbf_destroy(g);
    }
    const char *del_name = half ? "fig10" : "fig9";
    const char *upd_name = half ? "fig12" : "fig11";
    fp = open_csv(o, del_name,
                  half ? "false positive ratio of the deleted keys after "
                         "each tenth is deleted, kBF size m/2"
                       : "false positive ratio of the deleted keys after "
                         "each tenth is deleted, kBF size m");
    if (!fp) return 1;
    fprintf(fp, "batch");
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%s", p_names[p]);
    for (int p = 0; p < N_P; p++) fprintf(fp, ",paper_rule_%s", p_names[p]);
    fprintf(fp, "\n");
    for (int b = 0; b < 10; b++) {
      fprintf(fp, "%d", b + 1);
      for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", del_fp[b][p]);
      for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", del_paper[b][p]);
      fprintf(fp, "\n");
    }
    if (close_csv(o, fp, del_name)) return 1;
    fp = open_csv(o, upd_name,
                  half ? "false negative ratio of all keys after each tenth "
                         "is updated, kBF size m/2"
                       : "false negative ratio of all keys after each tenth "
                         "is updated, kBF size m");
    if (!fp) return 1;
    fprintf(fp, "batch");
    for (int p = 0; p < N_P; p++) fprintf(fp, ",%s", p_names[p]);
    fprintf(fp, "\n");
    for (int b = 0; b < 10; b++) {
      fprintf(fp, "%d", b + 1);
      for (int p = 0; p < N_P; p++) fprintf(fp, ",%.6g", upd_fn[b][p]);
      fprintf(fp, "\n");
    }
    if (close_csv(o, fp, upd_name)) return 1;
  }
  return 0;
}

/* ---- Figs. 13, 14: JOIN and COMPRESS against rho ---------------------------
 */

static int run_join_compress(const options *o, const workload *w) {
  const uint64_t n = w->n;
  uint64_t m;
  unsigned k;
  bk_params_for_target(n, 1e-4, &m, &k);
  m += m % 2;
  FILE *fj = open_csv(o, "fig13",
                      "false negative ratio after JOIN of two kBFs each at "
                      "capacity coefficient rho (p = 1e-4 sizing)");
  if (!fj) return 1;
  fprintf(fj, "rho,join_fn,join_rho\n");
  /* Two kBFs sized for n/2 keys each; kBF a holds keys [0, rho n/2), b
   * holds [n/2, n/2 + rho n/2). */
  uint64_t mj;
  unsigned kj;
  bk_params_for_target(n / 2, 1e-4, &mj, &kj);
  for (int r = 1; r <= 10; r++) {
    const uint64_t per = (uint64_t)(r / 10.0 * (double)(n / 2));
    bk_kbf *a, *b;
    if (new_kbf(w, mj, kj, 1e-4, BK_KBF_DECODE_23, o->seed, &a)) return 1;
    if (new_kbf(w, mj, kj, 1e-4, BK_KBF_DECODE_23, o->seed, &b)) {
      bk_kbf_destroy(a);
      return 1;
    }
    insert_range(a, w, 0, per);
    insert_range(b, w, n / 2, n / 2 + per);
    bk_kbf_join(a, b);
    counts c = {0};
    query_range(a, w, 0, per, w->values, &c);
    query_range(a, w, n / 2, n / 2 + per, w->values, &c);
    bk_kbf_info in;
    bk_kbf_info_get(a, &in);
    fprintf(fj, "%.1f,%.6g,%.3f\n", r / 10.0,
            (double)(c.undecodable + c.absent) / (double)(2 * per), in.rho);
    bk_kbf_destroy(a);
    bk_kbf_destroy(b);
  }
  if (close_csv(o, fj, "fig13")) return 1;
  FILE *fc = open_csv(o, "fig14",
                      "false negative ratio after COMPRESS of a kBF at "
                      "capacity coefficient rho (p = 1e-4 sizing)");
  if (!fc) return 1;
  fprintf(fc, "rho,compress_fn,compressed_rho\n");
  for (int r = 1; r <= 10; r++) {
    const uint64_t per = (uint64_t)(r / 10.0 * (double)n);
    bk_kbf *a;
    if (new_kbf(w, m, k, 1e-4, BK_KBF_DECODE_23, o->seed, &a)) return 1;
    insert_range(a, w, 0, per);
    bk_kbf_compress(a);
    counts c = {0};
    query_range(a, w, 0, per, w->values, &c);
    bk_kbf_info in;
    bk_kbf_info_get(a, &in);
    fprintf(fc, "%.1f,%.6g,%.3f\n", r / 10.0,
            (double)(c.undecodable + c.absent) / (double)per, in.rho);
    bk_kbf_destroy(a);
  }
  return close_csv(o, fc, "fig14");
}

/* ---- Figs. 17, 18: the two decoding options ---------------------------------
 */

static int run_options(const options *o, const workload *w) {
  const uint64_t n = w->n;
  FILE *f17 = open_csv(o, "fig17",
                       "false negative ratio of the two decoding options, "
                       "kBF size m/2");
  if (!f17) return 1;
  fprintf(f17, "p,option1_decode22,option2_decode23\n");
  FILE *f18 = NULL;
  double mem[N_P][4];
  for (int p = 0; p < N_P; p++) {
    uint64_t m;
    unsigned k;
    bk_params_for_target(n, p_values[p], &m, &k);
    double fn[2];
    for (int opt = 0; opt < 2; opt++) {
      bk_kbf *f;
      if (new_kbf(w, m / 2, k, p_values[p],
                  opt ? BK_KBF_DECODE_23 : BK_KBF_DECODE_22, o->seed, &f))
        return 1;
      insert_range(f, w, 0, n);
      counts c = {0};
      query_range(f, w, 0, n, w->values, &c);
      fn[opt] = (double)(c.undecodable + c.absent) / (double)n;
      bk_kbf_info in;
      bk_kbf_info_get(f, &in);
      mem[p][0] = (double)in.memory_cells;
      mem[p][1] = (double)(in.memory_skbf + in.memory_values);
      bk_kbf_destroy(f);
    }
    /* The paper's option 2 keeps Bloom filters B1 of the N encodings and
     * B2 of their N(N-1)/2 XORs (Algorithm 7); at fpp p that is
     * -ln p / ln^2 2 bits per entry. bloomkit solves decode2 in closed
     * form and keeps neither. */
    const double entries = N_VALUES + (double)N_VALUES * (N_VALUES - 1) / 2;
    mem[p][2] = entries * -log(p_values[p]) / (log(2) * log(2)) / 8;
    mem[p][3] = 0;
    fprintf(f17, "%s,%.6g,%.6g\n", p_names[p], fn[0], fn[1]);
  }
  if (close_csv(o, f17, "fig17")) return 1;
  f18 = open_csv(o, "fig18",
                 "memory of the two decoding options, kBF size m/2 (MiB): "
                 "main cells, s-kBF + value table, the paper's B1 + B2 of "
                 "option 2, bloomkit's option 2 extra");
  if (!f18) return 1;
  fprintf(f18,
          "p,main_mib,skbf_table_mib,paper_option2_extra_mib,"
          "bloomkit_option2_extra_mib\n");
  for (int p = 0; p < N_P; p++)
    fprintf(f18, "%s,%.3f,%.3f,%.3f,%.3f\n", p_names[p], mem[p][0] / 1048576,
            mem[p][1] / 1048576, mem[p][2] / 1048576, mem[p][3] / 1048576);
  return close_csv(o, f18, "fig18");
}

/* ---- pictures --------------------------------------------------------------
 */

/* Figs. 7-12 are of two kinds. A false negative figure: stored keys that
 * no longer answer their value, one series per preset p. A false positive
 * figure: keys never stored (or deleted) that answer a value, bloomkit's
 * decoding beside the Algorithm 6 rule, on a log axis (rates of n probes:
 * see draw_plots). */
#define FN_FIGURE(fig_name, fig_title, x_column, x_label, key_place)        \
  {                                                                         \
    .name = fig_name, .title = fig_title, .x = x_column, .xlabel = x_label, \
    .ylabel = "false negative ratio", .key = key_place, .n_series = 4,      \
    .series = {                                                             \
      {"p1e-3", "p = 1e-3"},                                                \
      {"p1e-4", "p = 1e-4"},                                                \
      {"p1e-5", "p = 1e-5"},                                                \
      {"p1e-6", "p = 1e-6"}                                                 \
    }                                                                       \
  }
#define FP_FIGURE(fig_name, fig_title, x_column, x_label)                   \
  {                                                                         \
    .name = fig_name, .title = fig_title, .x = x_column, .xlabel = x_label, \
    .ylabel = "false positive ratio", .logy = true, .key = "top right",     \
    .n_series = 6, .zero_at = 1.0, .series = {                              \
      {"p1e-3", "bloomkit, p = 1e-3"},                                      \
      {"p1e-4", "bloomkit, p = 1e-4"},                                      \
      {"paper_rule_p1e-3", "Algorithm 6 rule, p = 1e-3"},                   \
      {"paper_rule_p1e-4", "Algorithm 6 rule, p = 1e-4"},                   \
      {"paper_rule_p1e-5", "Algorithm 6 rule, p = 1e-5"},                   \
      {"paper_rule_p1e-6", "Algorithm 6 rule, p = 1e-6"}                    \
    }                                                                       \
  }
#define SHRINK_XLABEL "kBF size / size for p at n"

static const bk_plot_figure plots[] = {
    {.name = "fig2",
     .title = "Fig. 2: bits per encoding against the "
              "number of values",
     .x = "n",
     .xlabel = "values n",
     .ylabel = "bits P",
     .logx = true,
     .n_series = 4,
     .series = {{"bound", "bound 2^P >= n(n+1)/2"},
                {"cubes", "bloomkit: cubes in GF(2^t)"},
                {"greedy_exact", "greedy (Algorithm 1), exact"},
                {"greedy_bloom", "greedy with its Bloom filter"}}},
    {.name = "fig3",
     .title = "Fig. 3: greedy encodings against their index",
     .x = "index",
     .xlabel = "index",
     .ylabel = "encoding",
     .n_series = 2,
     .series = {{"encoding", "greedy encodings"},
                {"fit", "quadratic fit (Sec. 3.6)"}}},
    {.name = "fig4",
     .title = "Fig. 4: cells holding 3 or more encodings "
              "at the p-capacity (p = 1e-4)",
     .x = "n",
     .xlabel = "keys n",
     .ylabel = "share of cells",
     .logx = true,
     .key = "bottom right",
     .n_series = 3,
     .series = {{"cells_ge3", "simulated"},
                {"pn_rho", "P_n(rho) at the filter's rho"},
                {"pn_1", "P_n(1) = 0.0333"}}},
    {.name = "fig5",
     .title = "Fig. 5: stored keys not decodable (option "
              "1) against rho",
     .x = "rho",
     .xlabel = "capacity coefficient rho",
     .ylabel = "share not decodable",
     .logy = true,
     .key = "bottom right",
     .n_series = 3,
     .series = {{"simulated_k10", "simulated, k = 10"},
                {"paper_k10", "paper's formula, k = 10"},
                {"own_cell_k10", "own-cell formula, k = 10"}}},
    FN_FIGURE("fig7", "Fig. 7: false negative ratio as m shrinks",
              "size_factor", SHRINK_XLABEL, "top right"),
    FP_FIGURE("fig8", "Fig. 8: false positive ratio as m shrinks",
              "size_factor", SHRINK_XLABEL),
    FP_FIGURE("fig9", "Fig. 9: false positives of deleted keys, size m",
              "batch", "tenths deleted"),
    FP_FIGURE("fig10", "Fig. 10: false positives of deleted keys, size m/2",
              "batch", "tenths deleted"),
    FN_FIGURE("fig11", "Fig. 11: false negatives after updates, size m",
              "batch", "tenths updated", "top left"),
    FN_FIGURE("fig12", "Fig. 12: false negatives after updates, size m/2",
              "batch", "tenths updated", "top left"),
    {.name = "fig13",
     .title = "Fig. 13: false negatives after JOIN",
     .x = "rho",
     .xlabel = "rho of each kBF",
     .ylabel = "false negative ratio",
     .n_series = 1,
     .series = {{"join_fn", "JOIN"}}},
    {.name = "fig14",
     .title = "Fig. 14: false negatives after COMPRESS",
     .x = "rho",
     .xlabel = "rho before",
     .ylabel = "false negative ratio",
     .n_series = 1,
     .series = {{"compress_fn", "COMPRESS"}}},
    {.name = "fig17",
     .title = "Fig. 17: the two decoding options, size m/2",
     .x = "p",
     .xlabel = "preset p",
     .ylabel = "false negative ratio",
     .histogram = true,
     .key = "top right",
     .n_series = 2,
     .series = {{"option1_decode22", "option 1: decode22"},
                {"option2_decode23", "option 2: decode22 + decode23"}}},
    {.name = "fig18",
     .title = "Fig. 18: memory of the decoding options, "
              "size m/2",
     .x = "p",
     .xlabel = "preset p",
     .ylabel = "MiB",
     .histogram = true,
     .key = "top left",
     .n_series = 3,
     .series = {{"main_mib", "main kBF"},
                {"paper_option2_extra_mib", "paper's option 2: B1 + B2"},
                {"bloomkit_option2_extra_mib", "bloomkit's option 2 extra"}}},
};

static int draw_plots(const options *o) {
  for (size_t i = 0; i < sizeof plots / sizeof plots[0]; i++) {
    bk_plot_figure fig = plots[i];
    /* Rates of at most n probes (Figs. 9-10: n (b + 1) / 10 after batch
     * b): none at all is drawn on the log axis below the least measurable
     * rate of any point, 1 / n. */
    if (fig.zero_at > 0.0) {
      fig.zero_at = 0.3 / (double)o->n;
      fig.zero_label = "0: none among the probes (drawn here)";
    } else if (!fig.logx && !fig.histogram) {
      fig.y_from_zero = true;
    }
    char csv[4096];
    snprintf(csv, sizeof csv, "%s/%s.csv", o->out_dir, fig.name);
    fig.csv = csv;
    if (bk_plot_draw(o->plot_dir, &fig, stderr)) return 1;
  }
  return 0;
}

int bk_cli_kbf_experiments(int argc, char **argv) {
  /* The kBF in use (issue #11): its own option tables (kbf_acsm.c,
   * kbf_memcached.c), argv[0] its name. */
  if (argc >= 2 && strcmp(argv[1], "--acsm") == 0)
    return bk_cli_kbf_acsm(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "--memcached") == 0)
    return bk_cli_kbf_memcached(argc - 1, argv + 1);
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_U64("seed", &o.seed, 1, 0, UINT64_MAX, "N",
                 "run seed (workload and hashing), printed as '# seed N'"),
      BK_CLI_U64("n", &o.n, 100000, 1000, 100000000, "N",
                 "stored keys (and as many absent ones); the paper's scale "
                 "is 10000000"),
      BK_CLI_U64("greedy-max", &o.greedy_max, 2048, 8, 8192, "N",
                 "largest n of the exact greedy search in fig2 (the Bloom "
                 "filter one goes to a quarter of it); time grows as n^3: "
                 "4096 takes about a minute exact"),
      BK_CLI_STRING("out", &o.out_dir, NULL, "a directory", "DIR",
                    "write DIR/figN.csv instead of everything to stdout",
                    .default_text = "stdout"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also draw DIR/figN.png with gnuplot (the CSVs go to "
                    "DIR too unless --out says otherwise)",
                    .default_text = "no pictures"),
  };
  static const char description[] =
      "The kBF paper's Figs. 2-5, 7-14, 17-18 on its "
      "workload (GEV key sizes, 3000 generalized-Pareto "
      "values).\n\n"
      "  bloomkit kbf-experiments --acsm [options]       TCP flow state "
      "in an sBF\n"
      "      and a kBF, Figs. 24-25 (`--acsm --help` lists its "
      "options)\n"
      "  bloomkit kbf-experiments --memcached [options]  the kBF "
      "against a real\n"
      "      memcached, Figs. 15-16 (`--memcached --help`)\n";
  int status = bk_cli_parse_options(PROG, description, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
  if (o.plot_dir) {
    if (bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
    if (!o.out_dir) o.out_dir = o.plot_dir;
  }
  if (o.out_dir && bk_plot_make_dir(PROG, o.out_dir, stderr)) return 1;
  printf("# seed %llu n %llu\n", (unsigned long long)o.seed,
         (unsigned long long)o.n);
  workload w;
  if (workload_make(&w, o.n, o.seed, o.seed)) return 1;
  printf(
      "# workload: %llu keys, mean key %.1f bytes; %d values, mean %.1f "
      "bytes\n",
      (unsigned long long)o.n, (double)w.key_bytes_total / (double)o.n,
      N_VALUES, (double)w.value_bytes_total / N_VALUES);
  status = run_encodings(&o);
  if (!status) status = run_capacity(&o, &w);
  if (!status) status = run_errors(&o, &w);
  if (!status) status = run_join_compress(&o, &w);
  if (!status) status = run_options(&o, &w);
  if (!status && o.plot_dir) status = draw_plots(&o);
  workload_free(&w);
  status = bk_cli_flush_output(PROG, status, stdout, stderr);
  return status;
}
