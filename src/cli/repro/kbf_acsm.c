/* SPDX-License-Identifier: MIT */
/*
 * The kBF as an approximate state machine (kBF paper Sec. 7, Figs. 24-25):
 * per-flow TCP state kept in a stateful Bloom filter (Bonomi et al.'s sBF,
 * src/kbfapps/sbf.h) and in a kBF, over a seeded synthetic trace
 * (src/kbfapps/tcptrace.h, ~250,000 flows by default, as the CAIDA trace of
 * the paper's Sec. 6.5), monitored as in src/kbfapps/acsm.h; the false
 * negative and total error ratios as the target false positive rate p
 * varies.
 *
 * Sizing: for each p, m and k come from bk_params_for_target(capacity, p),
 * capacity = --capacity (default: the most flows the reference tracks at
 * once, what the store must hold; sizing by all the trace's flows, as the
 * paper's n, leaves the structures a third full here and every error
 * vanishes below p = 0.01); both structures get the same m cells and k hashes
 * (an sBF cell is 2 bytes, a kBF cell 4: the memory column says what each
 * used), or with --equal-memory the sBF gets 2m cells and k = ln 2 * 2m /
 * capacity, the kBF's bytes. Ratios are per query: the monitor queries once per
 * packet (`during`), then every flow once at the end (`final`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/params.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"
#include "kbfapps/acsm.h"
#include "kbfapps/sbf.h"
#include "kbfapps/tcptrace.h"
#ifdef BK_HAVE_KBF
#include "bloomkit/kbf.h"
#endif

#define PROG "bloomkit kbf-experiments --acsm"
#define DEFAULT_SEED 20140427u
#define DEFAULT_FLOWS 250000u
#define MAX_FLOWS 50000000u
#define MAX_FPP 16u
#define DEFAULT_FPPS "0.1,0.01,0.001,0.0001,0.00001"

typedef enum structure { S_SBF, S_KBF, N_STRUCTURES } structure;
static const char *const structure_names[N_STRUCTURES + 1] = {"sbf", "kbf",
                                                              NULL};

typedef struct options {
  uint64_t flows, capacity, seed;
  double data_mean, gap;
  double fpps[MAX_FPP];
  size_t n_fpps;
  unsigned structures[N_STRUCTURES];
  size_t n_structures;
  bool csv;
  bool equal_memory;
  const char *plot_dir;
} options;

typedef struct row {
  double p;
  const char *structure;
  uint64_t m;
  unsigned k;
  size_t memory;
  bk__acsm_result r;
} row;

static int run_sbf(const options *o, const bk__tcp_trace *t, double p,
                   uint64_t m, unsigned k, row *out) {
  bk__sbf *f = NULL;
  bk__sbf_info info;
  TRY_BK(bk__sbf_create(&f, m, k, o->seed));
  bk__acsm_store store = bk__acsm_sbf_store(f);
  TRY_BK(bk__acsm_run(t, &store, &out->r));
  TRY_BK(bk__sbf_info_get(f, &info));
  out->p = p;
  out->structure = "sbf";
  out->m = m;
  out->k = k;
  out->memory = info.memory;
  bk__sbf_destroy(f);
  return 0;
fail:
  bk__sbf_destroy(f);
  return 1;
}

#ifdef BK_HAVE_KBF
/* ---- a kBF as the store: state s is the value {s}, interned first, so
 * its index is s - 1 ---------------------------------------------------- */

static bk_status kbf_hash_key(bk_kbf *f, const unsigned char key[8],
                              bk_hash *h) {
  return bk_kbf_hash(f, key, 8, h);
}

static bk_status kbf_query(void *ctx, const unsigned char key[8],
                           bk__acsm_answer *answer, unsigned *state) {
  bk_hash h;
  bk_status st = kbf_hash_key(ctx, key, &h);
  if (st != BK_OK) return st;
  bk_kbf_result r;
  uint32_t idx = 0;
  st = bk_kbf_query_index_hash(ctx, h, &r, &idx);
  if (st != BK_OK) return st;
  if (r == BK_KBF_FOUND && idx < BK_TCP_N_STATES) {
    *answer = BK_ACSM_FOUND;
    *state = idx + 1;
  } else {
    *answer = r == BK_KBF_UNDECODABLE ? BK_ACSM_UNKNOWN : BK_ACSM_ABSENT;
  }
  return BK_OK;
}

static bk_status kbf_insert(void *ctx, const unsigned char key[8],
                            unsigned state) {
  bk_hash h;
  bk_status st = kbf_hash_key(ctx, key, &h);
  return st != BK_OK ? st : bk_kbf_insert_index_hash(ctx, h, state - 1);
}

/* Algorithm 5: the kBF queries the old value itself. */
static bk_status kbf_update(void *ctx, const unsigned char key[8],
                            unsigned from, unsigned to) {
  (void)from;
  bk_hash h;
  bk_status st = kbf_hash_key(ctx, key, &h);
  return st != BK_OK ? st : bk_kbf_update_index_hash(ctx, h, to - 1);
}

/* Algorithm 4 with the value the monitor just read. */
static bk_status kbf_remove(void *ctx, const unsigned char key[8],
                            unsigned state) {
  bk_hash h;
  bk_status st = kbf_hash_key(ctx, key, &h);
  return st != BK_OK ? st : bk_kbf_delete_index_hash(ctx, h, state - 1);
}

static int run_kbf(const options *o, const bk__tcp_trace *t, double p,
                   uint64_t m, unsigned k, row *out) {
  bk_kbf *f = NULL;
  bk_kbf_config cfg = {.m_cells = m, .k = k, .max_values = 7, .seed = o->seed};
  TRY_BK(bk_kbf_create(&f, &cfg));
  for (unsigned s = 1; s <= BK_TCP_N_STATES; s++) {
    unsigned char v = (unsigned char)s;
    uint32_t idx;
    TRY_BK(bk_kbf_intern(f, &v, 1, &idx));
    if (idx != s - 1) {
      fprintf(stderr, PROG ": the kBF interned state %u as %u\n", s,
              (unsigned)idx);
      goto fail;
    }
  }
  bk__acsm_store store = {.name = "kBF",
                          .ctx = f,
                          .query = kbf_query,
                          .insert = kbf_insert,
                          .update = kbf_update,
                          .remove = kbf_remove,
                          .unknown_delete = NULL};
  TRY_BK(bk__acsm_run(t, &store, &out->r));
  bk_kbf_info info;
  TRY_BK(bk_kbf_info_get(f, &info));
  out->p = p;
  out->structure = "kbf";
  out->m = m;
  out->k = k;
  out->memory = info.memory_cells + info.memory_skbf + info.memory_values;
  bk_kbf_destroy(f);
  return 0;
fail:
  bk_kbf_destroy(f);
  return 1;
}
#endif

static double ratio(uint64_t a, uint64_t b) {
  return b ? (double)a / (double)b : 0.0;
}

#define CSV_HEADER                                                        \
  "p,structure,m_cells,k,memory_bytes,queries,false_negatives,"           \
  "false_positives,wrong_state,unknown_absent,total_errors,fn_ratio,"     \
  "total_ratio,final_fn_ratio,final_total_ratio,inserts,updates,deletes," \
  "refused,masked_flows,missed_moves,wrong_masked,wrong_stale"

static void print_csv_row(FILE *f, const row *w) {
  const bk__acsm_counts *d = &w->r.during, *e = &w->r.final;
  fprintf(
      f,
      "%g,%s,%llu,%u,%zu,%llu,%llu,%llu,%llu,%llu,%llu,%.6e,%.6e,%.6e,"
      "%.6e,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
      w->p, w->structure, (unsigned long long)w->m, w->k, w->memory,
      (unsigned long long)d->queries, (unsigned long long)d->false_negatives,
      (unsigned long long)d->false_positives,
      (unsigned long long)d->wrong_state, (unsigned long long)d->unknown_absent,
      (unsigned long long)d->total_errors,
      ratio(d->false_negatives, d->queries), ratio(d->total_errors, d->queries),
      ratio(e->false_negatives, e->queries), ratio(e->total_errors, e->queries),
      (unsigned long long)w->r.inserts, (unsigned long long)w->r.updates,
      (unsigned long long)w->r.deletes, (unsigned long long)w->r.refused,
      (unsigned long long)w->r.masked_flows,
      (unsigned long long)w->r.missed_moves,
      (unsigned long long)w->r.wrong_masked,
      (unsigned long long)w->r.wrong_stale);
}

static int plot(const options *o, const row *rows, size_t n) {
  char *path;
  FILE *f = bk_plot_open_csv(PROG, o->plot_dir, "kbf_fig24_25", &path, stderr);
  if (!f) return 1;
  fprintf(f,
          "# kbf_fig24_25: ACSM errors per query as p varies; %llu flows, "
          "seed %llu\n" CSV_HEADER "\n",
          (unsigned long long)o->flows, (unsigned long long)o->seed);
  for (size_t i = 0; i < n; i++) print_csv_row(f, &rows[i]);
  bk_plot_figure figs[2] = {{
      .name = "kbf_fig24",
      .title = "Fig. 24: false negative ratio of the TCP state machine",
      .x = "p",
      .xlabel = "target false positive probability p",
      .ylabel = "false negatives per query",
      .logx = true,
      .logy = true,
  }};
  bk_plot_figure *fig24 = &figs[0], *fig25 = &figs[1];
  *fig25 = *fig24;
  fig25->name = "kbf_fig25";
  fig25->title = "Fig. 25: total error ratio of the TCP state machine";
  fig25->ylabel = "errors per query (FN + FP + wrong state + unknown)";
  for (size_t s = 0; s < o->n_structures; s++) {
    const char *name = structure_names[o->structures[s]];
    const char *title = o->structures[s] == S_SBF ? "sBF" : "kBF";
    fig24->series[fig24->n_series++] =
        (bk_plot_series){.column = "fn_ratio",
                         .title = title,
                         .filter_column = "structure",
                         .filter_value = name};
    fig25->series[fig25->n_series++] =
        (bk_plot_series){.column = "total_ratio",
                         .title = title,
                         .filter_column = "structure",
                         .filter_value = name};
  }
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, figs, 2, stderr);
}

static int run(const options *o) {
  bk__tcp_trace t = {0};
  row *rows = calloc(o->n_fpps * N_STRUCTURES, sizeof *rows);
  size_t n = 0;
  int status = 1;
  if (!rows) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  bk__tcp_trace_config tc = {.n_flows = o->flows,
                             .seed = o->seed,
                             .data_mean = o->data_mean,
                             .gap = o->gap * (double)o->flows};
  TRY_BK(bk__tcp_trace_generate(&tc, &t));
  uint64_t capacity = o->capacity;
  if (!capacity) TRY_BK(bk__tcp_trace_peak(&t, &capacity));
  if (!capacity) capacity = 1;
  for (size_t i = 0; i < o->n_fpps; i++) {
    uint64_t m;
    unsigned k;
    TRY_BK(bk_params_for_target(capacity, o->fpps[i], &m, &k));
    for (size_t s = 0; s < o->n_structures; s++) {
      if (o->structures[s] == S_SBF) {
        uint64_t m_sbf = m;
        unsigned k_sbf = k;
        if (o->equal_memory) {
          /* The kBF's bytes: twice the cells (2 bytes against 4), and the
           * k that is optimal for them, ln 2 * m / capacity. */
          m_sbf = 2 * m;
          double kk = 0.6931471805599453 * (double)m_sbf / (double)capacity;
          k_sbf = kk < 1.0 ? 1u : kk > 64.0 ? 64u : (unsigned)(kk + 0.5);
        }
        if (run_sbf(o, &t, o->fpps[i], m_sbf, k_sbf, &rows[n])) goto fail;
        n++;
      }
#ifdef BK_HAVE_KBF
      if (o->structures[s] == S_KBF) {
        if (run_kbf(o, &t, o->fpps[i], m, k, &rows[n])) goto fail;
        n++;
      }
#endif
    }
  }
  printf("# " PROG ": %llu flows (%llu packets; kinds:",
         (unsigned long long)t.n_flows, (unsigned long long)t.n_events);
  for (unsigned k = 0; k < BK_TCP_N_KINDS; k++)
    printf(" %s %llu", bk__tcp_kind_name((bk__tcp_kind)k),
           (unsigned long long)t.kinds[k]);
  if (n)
    printf(
        "), seed %llu; tracked at peak %llu, at the end %llu; flows with "
        "FIN %llu, with RST %llu; capacity %llu\n",
        (unsigned long long)o->seed, (unsigned long long)rows[0].r.peak_tracked,
        (unsigned long long)rows[0].r.tracked_end,
        (unsigned long long)rows[0].r.suspicious_fin,
        (unsigned long long)rows[0].r.suspicious_rst,
        (unsigned long long)capacity);
  if (o->csv) {
    printf(CSV_HEADER "\n");
    for (size_t i = 0; i < n; i++) print_csv_row(stdout, &rows[i]);
  } else {
    printf("%-8s %-4s %10s %3s %10s %11s %11s %11s %11s %11s %9s\n", "p", "str",
           "m", "k", "bytes", "FN/query", "total/query", "FN", "FP", "wrong",
           "refused");
    for (size_t i = 0; i < n; i++) {
      const row *w = &rows[i];
      const bk__acsm_counts *d = &w->r.during;
      printf(
          "%-8g %-4s %10llu %3u %10zu %11.3e %11.3e %11llu %11llu %11llu "
          "%9llu\n",
          w->p, w->structure, (unsigned long long)w->m, w->k, w->memory,
          ratio(d->false_negatives, d->queries),
          ratio(d->total_errors, d->queries),
          (unsigned long long)d->false_negatives,
          (unsigned long long)d->false_positives,
          (unsigned long long)d->wrong_state, (unsigned long long)w->r.refused);
    }
  }
  status = o->plot_dir ? plot(o, rows, n) : 0;
fail:
  bk__tcp_trace_free(&t);
  free(rows);
  return status;
}

#define ACSM_DESCRIPTION                                               \
  "Per-flow TCP state (kBF paper Sec. 7) in a stateful Bloom filter\n" \
  "(sBF, Bonomi et al.) and a kBF over a synthetic trace; false\n"     \
  "negatives and total errors per query as the target p varies\n"      \
  "(Figs. 24-25). Both structures get the m and k that\n"              \
  "bk_params_for_target gives for (capacity, p).\n"

int bk_cli_kbf_acsm(int argc, char **argv) {
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_U64("flows", &o.flows, DEFAULT_FLOWS, 1, MAX_FLOWS, "N",
                 "flows in the trace"),
      BK_CLI_U64("capacity", &o.capacity, 0, 1, MAX_FLOWS, "N",
                 "the structures' sizing capacity",
                 .default_text = "the most flows tracked at once"),
      BK_CLI_DOUBLE_LIST("fpp", o.fpps, &o.n_fpps, MAX_FPP, DEFAULT_FPPS, 1e-12,
                         0.5, "LIST", "target false positive rates p"),
      BK_CLI_CHOICE_LIST("structures", o.structures, &o.n_structures,
                         N_STRUCTURES, "sbf,kbf", structure_names, "LIST",
                         "the state stores to run"),
      BK_CLI_DOUBLE("data-mean", &o.data_mean, 4.0, 0.0, 100.0, "D",
                    "mean data packets per established flow"),
      BK_CLI_DOUBLE("gap", &o.gap, 0.01, 1e-9, 1.0, "G",
                    "mean gap between a flow's packets, in trace lengths",
                    .d_open = BK_CLI_OPEN_MIN),
      BK_CLI_U64("seed", &o.seed, DEFAULT_SEED, 0, UINT64_MAX, "N",
                 "trace and hash seed"),
      BK_CLI_FLAG("equal-memory", &o.equal_memory,
                  "give the sBF the kBF's bytes (twice the cells, its own "
                  "optimal k) instead of the same m and k"),
      BK_CLI_FLAG("csv", &o.csv, "CSV, one row per (p, structure)",
                  .section = "output"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/kbf_fig24_25.csv and kbf_fig24.png, "
                    "kbf_fig25.png",
                    .default_text = "no pictures"),
  };
  int status = bk_cli_parse_options(PROG, ACSM_DESCRIPTION, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
#ifndef BK_HAVE_KBF
  for (size_t i = 0; i < o.n_structures; i++)
    if (o.structures[i] == S_KBF)
      return bk_cli_usage_error(stderr, PROG,
                                "--structures kbf: this bloomkit was built "
                                "without the kBF component");
#endif
  if (o.plot_dir && bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
  return bk_cli_flush_output(PROG, run(&o), stdout, stderr);
}
