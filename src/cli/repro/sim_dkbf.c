/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit sim dkbf`: the d-kBF's load balancing (kBF paper Sec. 5.2,
 * Algorithm 8; evaluation Sec. 6.6, Figs. 20-23) on the master's model in
 * src/kbfapps/dkbf.h.
 *
 * The paper's setting: 5 servers each holding 10 slabs of capacity 10 M
 * pairs; each slab gets a random number of pairs not above its capacity
 * (here uniform on [0, capacity], a fresh splitmix64 stream per setting);
 * the master assigns the same number of slabs to each server (slab i on
 * server i / slabs-per-server) and then runs Algorithm 8 with C_max = 10.
 * --settings random settings give rho before and after (Fig. 22) and the
 * sorted improvement 100 (rho_before - rho_after) / rho_before (Fig. 23),
 * with the number of exchanges and the pairs they move (a slab's pairs move
 * with it; an exchange moves both slabs). One setting (--show; by default
 * the most imbalanced) is shown in detail: Fig. 20, pairs per server
 * before and after; Fig. 21, rho after each exchange.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"
#include "kbfapps/dkbf.h"
#include "kbfapps/dkbf_store.h"

#define PROG "bloomkit sim dkbf"
#define DEFAULT_SEED 20160601u
#define DEFAULT_SERVERS 5u
#define DEFAULT_SLABS 10u
#define DEFAULT_CAPACITY 10000000u
#define DEFAULT_SETTINGS 100u
#define MAX_SETTINGS 1000000u
#define MAX_C 1000u

typedef struct options {
  unsigned servers, slabs_per_server, c_max;
  uint64_t capacity, settings, seed;
  uint64_t show; /* UINT64_MAX: the most imbalanced setting */
  bool store;
  uint64_t store_capacity;
  bool csv;
  const char *plot_dir;
} options;

typedef struct setting_result {
  double rho_before, rho_after, improvement_pct;
  size_t exchanges;
  uint64_t pairs_moved, pairs_total;
} setting_result;

typedef struct setting {
  uint64_t *load;
  uint32_t *server;
  uint32_t n_slabs;
} setting;

/* Setting `index`: loads uniform on [0, capacity] from its own stream. */
static void fill_setting(const options *o, uint64_t index, setting *s) {
  uint64_t state =
      splitmix_output(o->seed ^ splitmix_output((index + 1) * SPLITMIX_GAMMA));
  for (uint32_t i = 0; i < s->n_slabs; i++) {
    state += SPLITMIX_GAMMA;
    uint64_t r = splitmix_output(state);
    /* capacity + 1 <= 2^39 + 1: the remainder is uniform on [0, capacity]
     * up to a bias below 2^-24. */
    s->load[i] = r % (o->capacity + 1);
    s->server[i] = i / o->slabs_per_server;
  }
}

static int run_setting(const options *o, setting *s, bk__dkbf_move *moves,
                       double *rho_steps, setting_result *r) {
  bk__dkbf_table t = {s->n_slabs, o->servers, s->load, s->server};
  size_t n = 0;
  TRY_BK(bk__dkbf_balance(&t, o->c_max, moves, o->c_max, &n, rho_steps));
  r->rho_before = rho_steps[0];
  r->rho_after = rho_steps[n];
  r->improvement_pct =
      r->rho_before > 0.0
          ? 100.0 * (r->rho_before - r->rho_after) / r->rho_before
          : 0.0;
  r->exchanges = n;
  r->pairs_moved = 0;
  r->pairs_total = 0;
  for (size_t j = 0; j < n; j++) r->pairs_moved += moves[j].pairs_moved;
  for (uint32_t i = 0; i < s->n_slabs; i++) r->pairs_total += s->load[i];
  return 0;
fail:
  return 1;
}

/* DIR/NAME.csv, for a figure's data. NULL (said on stderr) on failure. */
static FILE *open_csv(const options *o, const char *name, char **path) {
  return bk_plot_open_csv(PROG, o->plot_dir, name, path, stderr);
}

/* Close DIR/NAME.csv and draw fig from it (path freed). */
static int close_and_draw(FILE *f, char *path, const options *o,
                          bk_plot_figure *fig) {
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, fig, 1, stderr);
}

static int plot_detail(const options *o, uint64_t show, const uint64_t *before,
                       const uint64_t *after, const double *rho_steps,
                       size_t n_steps) {
  char *path;
  FILE *f = open_csv(o, "kbf_fig20", &path);
  if (!f) return 1;
  fprintf(f,
          "# kbf_fig20: pairs (millions) per server before and after "
          "Algorithm 8, setting %llu, seed %llu\nserver,before,after\n",
          (unsigned long long)show, (unsigned long long)o->seed);
  for (unsigned s = 0; s < o->servers; s++)
    fprintf(f, "server %u,%.6f,%.6f\n", s + 1, (double)before[s] / 1e6,
            (double)after[s] / 1e6);
  bk_plot_figure f20 = {
      .name = "kbf_fig20",
      .title = "Fig. 20: k-v pairs per server before and after balancing",
      .x = "server",
      .xlabel = "",
      .ylabel = "k-v pairs (millions)",
      .histogram = true,
      .key = "outside top center horizontal",
      .n_series = 2,
      .series = {{"before", "before"}, {"after", "after Algorithm 8"}},
  };
  if (close_and_draw(f, path, o, &f20)) return 1;
  f = open_csv(o, "kbf_fig21", &path);
  if (!f) return 1;
  fprintf(f,
          "# kbf_fig21: rho after each exchange of Algorithm 8 (step 0: "
          "before), setting %llu, seed %llu\nstep,rho\n",
          (unsigned long long)show, (unsigned long long)o->seed);
  for (size_t j = 0; j <= n_steps; j++)
    fprintf(f, "%zu,%.6f\n", j, rho_steps[j]);
  bk_plot_figure f21 = {
      .name = "kbf_fig21",
      .title = "Fig. 21: imbalance rho at each step of Algorithm 8",
      .x = "step",
      .xlabel = "exchanges made",
      .ylabel = "rho = sd / mean of the servers' pairs",
      .key = "top right",
      .xtics = 1, /* exchanges are counted */
      .y_from_zero = true,
      .n_series = 1,
      .series = {{"rho", "rho"}},
  };
  return close_and_draw(f, path, o, &f21);
}

static int cmp_double_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

static int plot_settings(const options *o, const setting_result *res) {
  char *path;
  FILE *f = open_csv(o, "kbf_fig22", &path);
  if (!f) return 1;
  fprintf(f,
          "# kbf_fig22: rho before and after Algorithm 8 per random "
          "setting, seed %llu\nsetting,rho_before,rho_after\n",
          (unsigned long long)o->seed);
  for (uint64_t i = 0; i < o->settings; i++)
    fprintf(f, "%llu,%.6f,%.6f\n", (unsigned long long)i, res[i].rho_before,
            res[i].rho_after);
  bk_plot_figure f22 = {
      .name = "kbf_fig22",
      .title = "Fig. 22: rho before and after balancing, per setting",
      .x = "setting",
      .xlabel = "initial setting (--show index)",
      .ylabel = "rho",
      .key = "top right",
      .n_series = 2,
      .series = {{"rho_before", "before"}, {"rho_after", "after"}},
  };
  if (close_and_draw(f, path, o, &f22)) return 1;
  double *sorted = malloc(o->settings * sizeof *sorted);
  if (!sorted) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  for (uint64_t i = 0; i < o->settings; i++) sorted[i] = res[i].improvement_pct;
  qsort(sorted, o->settings, sizeof *sorted, cmp_double_desc);
  f = open_csv(o, "kbf_fig23", &path);
  if (!f) {
    free(sorted);
    return 1;
  }
  fprintf(f,
          "# kbf_fig23: improvement of rho (%%), sorted, seed %llu\n"
          "rank,improvement_pct\n",
          (unsigned long long)o->seed);
  for (uint64_t i = 0; i < o->settings; i++)
    fprintf(f, "%llu,%.4f\n", (unsigned long long)i + 1, sorted[i]);
  free(sorted);
  bk_plot_figure f23 = {
      .name = "kbf_fig23",
      .title = "Fig. 23: improvement of rho, sorted",
      .x = "rank",
      .xlabel = "setting (sorted by improvement)",
      .ylabel = "improvement of rho (%)",
      .key = "top right",
      .n_series = 1,
      .series = {{"improvement_pct",
                  "100 (rho_before - rho_after) / "
                  "rho_before"}},
  };
  return close_and_draw(f, path, o, &f23);
}

/* --store: each setting again on the in-process d-kBF (real kBF slabs of
 * --store-capacity pairs; the same uniform targets at that scale): pairs
 * "d<i>" are inserted through two-step hashing, each kept only while its
 * slab is below its target, until every slab holds its target. Its
 * rebalancing must make the model's decisions on the same table, and every
 * pair must read back its value afterwards. */
/* Pairs d<kept[j]> that do not read back v<kept[j] % 7>. */
static uint64_t unreadable(bk__dkbf_store *d, const uint32_t *kept,
                           uint64_t n) {
  uint64_t bad = 0;
  char key[32], val[16];
  for (uint64_t j = 0; j < n; j++) {
    int kl = snprintf(key, sizeof key, "d%u", kept[j]);
    int vl = snprintf(val, sizeof val, "v%u", kept[j] % 7);
    bk_kbf_result res;
    const void *v;
    size_t len;
    bad += bk__dkbf_store_query(d, key, (size_t)kl, &res, &v, &len) != BK_OK ||
           !(res == BK_KBF_FOUND && len == (size_t)vl &&
             memcmp(v, val, (size_t)vl) == 0);
  }
  return bad;
}

static int run_store(const options *o) {
  options scaled = *o;
  scaled.capacity = o->store_capacity;
  uint32_t n_slabs = o->servers * o->slabs_per_server;
  setting s = {malloc(n_slabs * sizeof(uint64_t)),
               malloc(n_slabs * sizeof(uint32_t)), n_slabs};
  bk__dkbf_move *moves = malloc(o->c_max * sizeof *moves);
  double *rho = malloc((o->c_max + 1) * sizeof *rho);
  uint32_t *kept = malloc((size_t)(o->store_capacity * n_slabs) * sizeof *kept);
  bk__dkbf_store *d = NULL;
  int status = 1;
  uint64_t agree = 0, lost = 0, lost_before = 0, total_pairs = 0,
           keys_tried = 0;
  double sum_impr = 0;
  if (!s.load || !s.server || !moves || !rho || !kept) {
    fprintf(stderr, PROG ": out of memory\n");
    goto fail;
  }
  for (uint64_t set = 0; set < o->settings; set++) {
    fill_setting(&scaled, set, &s);
    bk__dkbf_store_config cfg = {.n_servers = o->servers,
                                 .slabs_per_server = o->slabs_per_server,
                                 .slab_capacity = o->store_capacity,
                                 .fpp = 0.001,
                                 .seed = o->seed + set};
    TRY_BK(bk__dkbf_store_create(&d, &cfg));
    uint64_t want = 0, have = 0;
    for (uint32_t i = 0; i < n_slabs; i++) want += s.load[i];
    char key[32], val[16];
    for (uint32_t i = 0; have < want; i++) {
      int kl = snprintf(key, sizeof key, "d%u", i);
      uint32_t slab, server;
      TRY_BK(bk__dkbf_store_locate(d, key, (size_t)kl, &slab, &server));
      bk__dkbf_table now;
      TRY_BK(bk__dkbf_store_table(d, &now));
      keys_tried++;
      if (now.load[slab] >= s.load[slab]) continue;
      int vl = snprintf(val, sizeof val, "v%u", i % 7);
      TRY_BK(bk__dkbf_store_insert(d, key, (size_t)kl, val, (size_t)vl));
      kept[have++] = i;
    }
    lost_before += unreadable(d, kept, have);
    /* The model's plan on the store's own table, then the store's. */
    bk__dkbf_table t;
    TRY_BK(bk__dkbf_store_table(d, &t));
    size_t n = 0;
    TRY_BK(bk__dkbf_balance(&t, o->c_max, moves, o->c_max, &n, rho));
    bk__dkbf_rebalance r;
    TRY_BK(bk__dkbf_store_rebalance(d, o->c_max, false, &r));
    agree +=
        r.migrations == n && r.rho_before == rho[0] && r.rho_after == rho[n];
    sum_impr += r.rho_before > 0
                    ? 100.0 * (r.rho_before - r.rho_after) / r.rho_before
                    : 0.0;
    lost += unreadable(d, kept, have);
    total_pairs += have;
    bk__dkbf_store_destroy(d);
    d = NULL;
  }
  printf(
      "in-process d-kBF (--store): %llu settings at %llu pairs per slab, "
      "%llu pairs in all (%llu keys hashed to place them)\n",
      (unsigned long long)o->settings, (unsigned long long)o->store_capacity,
      (unsigned long long)total_pairs, (unsigned long long)keys_tried);
  printf(
      "  rebalancing made the model's decisions in %llu of %llu "
      "settings; mean improvement of rho %.2f %%\n",
      (unsigned long long)agree, (unsigned long long)o->settings,
      sum_impr / (double)o->settings);
  printf(
      "  pairs not read back: %llu of %llu before rebalancing, %llu "
      "after (the kBF's own decoding failures; a migration moves whole "
      "slabs)\n",
      (unsigned long long)lost_before, (unsigned long long)total_pairs,
      (unsigned long long)lost);
  status = agree == o->settings && lost == lost_before ? 0 : 1;
  if (status)
    fprintf(stderr, PROG
            ": the store and the model disagree, or a "
            "migration lost pairs\n");
fail:
  bk__dkbf_store_destroy(d);
  free(s.load);
  free(s.server);
  free(moves);
  free(rho);
  free(kept);
  return status;
}

static int run(const options *o) {
  int status = 1;
  uint32_t n_slabs = o->servers * o->slabs_per_server;
  setting s = {malloc(n_slabs * sizeof(uint64_t)),
               malloc(n_slabs * sizeof(uint32_t)), n_slabs};
  bk__dkbf_move *moves = malloc(o->c_max * sizeof *moves);
  double *rho_steps = malloc((o->c_max + 1) * sizeof *rho_steps);
  double *rho0 = malloc((o->c_max + 1) * sizeof *rho0);
  setting_result *res = malloc(o->settings * sizeof *res);
  uint64_t *before = malloc(o->servers * sizeof *before);
  uint64_t *after = malloc(o->servers * sizeof *after);
  if (!s.load || !s.server || !moves || !rho_steps || !rho0 || !res ||
      !before || !after) {
    fprintf(stderr, PROG ": out of memory\n");
    goto done;
  }
  for (uint64_t i = 0; i < o->settings; i++) {
    fill_setting(o, i, &s);
    if (run_setting(o, &s, moves, rho_steps, &res[i])) goto done;
  }
  /* The setting shown in detail: --show, else the most imbalanced one. */
  uint64_t show = o->show;
  if (show == UINT64_MAX) {
    show = 0;
    for (uint64_t i = 1; i < o->settings; i++)
      if (res[i].rho_before > res[show].rho_before) show = i;
  }
  fill_setting(o, show, &s);
  bk__dkbf_table t = {n_slabs, o->servers, s.load, s.server};
  setting_result detail;
  if (bk__dkbf_server_loads(&t, before) != BK_OK ||
      run_setting(o, &s, moves, rho0, &detail))
    goto done;
  size_t n0 = detail.exchanges;
  if (bk__dkbf_apply(n_slabs, o->servers, s.server, moves, n0) != BK_OK ||
      bk__dkbf_server_loads(&t, after) != BK_OK) {
    fprintf(stderr, PROG ": the plan did not apply (a bug)\n");
    goto done;
  }
  double sum_impr = 0, sum_ex = 0, sum_moved = 0, sum_total = 0;
  double sum_before = 0, sum_after = 0;
  uint64_t none = 0, at_cap = 0;
  for (uint64_t i = 0; i < o->settings; i++) {
    sum_impr += res[i].improvement_pct;
    sum_ex += (double)res[i].exchanges;
    sum_moved += (double)res[i].pairs_moved;
    sum_total += (double)res[i].pairs_total;
    sum_before += res[i].rho_before;
    sum_after += res[i].rho_after;
    if (res[i].exchanges == 0) none++;
    if (res[i].exchanges == o->c_max) at_cap++;
  }
  double nset = (double)o->settings;
  if (o->csv) {
    printf(
        "setting,rho_before,rho_after,improvement_pct,exchanges,"
        "pairs_moved,pairs_total\n");
    for (uint64_t i = 0; i < o->settings; i++)
      printf("%llu,%.6f,%.6f,%.4f,%zu,%llu,%llu\n", (unsigned long long)i,
             res[i].rho_before, res[i].rho_after, res[i].improvement_pct,
             res[i].exchanges, (unsigned long long)res[i].pairs_moved,
             (unsigned long long)res[i].pairs_total);
  } else {
    printf("# " PROG
           ": %u servers x %u slabs of capacity %llu pairs, "
           "C_max %u, %llu settings, seed %llu\n",
           o->servers, o->slabs_per_server, (unsigned long long)o->capacity,
           o->c_max, (unsigned long long)o->settings,
           (unsigned long long)o->seed);
    printf(
        "setting %llu (Fig. 20, 21; rho %.4f -> %.4f): pairs per "
        "server, millions\n",
        (unsigned long long)show, detail.rho_before, detail.rho_after);
    printf("  server   before     after\n");
    for (unsigned v = 0; v < o->servers; v++)
      printf("  %6u %8.3f  %8.3f\n", v + 1, (double)before[v] / 1e6,
             (double)after[v] / 1e6);
    printf("  rho by step:");
    for (size_t j = 0; j <= n0; j++) printf(" %.4f", rho0[j]);
    printf("\n  %zu exchanges moving %llu pairs (%.1f %% of %llu)\n", n0,
           (unsigned long long)detail.pairs_moved,
           100.0 * (double)detail.pairs_moved / (double)detail.pairs_total,
           (unsigned long long)detail.pairs_total);
    printf("%llu settings (Fig. 22, 23):\n", (unsigned long long)o->settings);
    printf("  mean rho before %.4f, after %.4f\n", sum_before / nset,
           sum_after / nset);
    printf("  mean improvement of rho %.2f %% (the paper: 60.86 %%)\n",
           sum_impr / nset);
    printf(
        "  exchanges per setting: mean %.2f; %llu settings with none, "
        "%llu stopped by C_max\n",
        sum_ex / nset, (unsigned long long)none, (unsigned long long)at_cap);
    printf(
        "  pairs moved per setting: mean %.0f (%.1f %% of the pairs "
        "stored)\n",
        sum_moved / nset, 100.0 * sum_moved / sum_total);
  }
  status = 0;
  if (o->plot_dir)
    status =
        plot_detail(o, show, before, after, rho0, n0) || plot_settings(o, res);
  if (!status && o->store && !o->csv) status = run_store(o);
done:
  free(s.load);
  free(s.server);
  free(moves);
  free(rho_steps);
  free(rho0);
  free(res);
  free(before);
  free(after);
  return status;
}

#define DKBF_DESCRIPTION                                                   \
  "The d-kBF's slab load balancing (kBF paper Sec. 5.2, Algorithm 8;\n"    \
  "Sec. 6.6, Figs. 20-23). Every slab gets a uniform random number of\n"   \
  "pairs in [0, capacity]; each server holds the same number of slabs;\n"  \
  "Algorithm 8 exchanges the most loaded slab of the most loaded server\n" \
  "with the least loaded slab of the least loaded server while that\n"     \
  "lowers rho = sd / mean of the servers' pairs, at most C_max times.\n"

int bk_cli_sim_dkbf(int argc, char **argv) {
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_UNSIGNED("servers", &o.servers, DEFAULT_SERVERS, 1, 65536, "N",
                      "slab servers"),
      BK_CLI_UNSIGNED("slabs-per-server", &o.slabs_per_server, DEFAULT_SLABS, 1,
                      65536, "N", "slabs each server holds at the start"),
      BK_CLI_U64("capacity", &o.capacity, DEFAULT_CAPACITY, 1, BK_DKBF_MAX_LOAD,
                 "N", "pairs a slab can hold"),
      BK_CLI_UNSIGNED("c-max", &o.c_max, BK_DKBF_C_MAX_DEFAULT, 1, MAX_C, "N",
                      "Algorithm 8's C_max: exchanges per balancing"),
      BK_CLI_U64("settings", &o.settings, DEFAULT_SETTINGS, 1, MAX_SETTINGS,
                 "N", "random initial settings"),
      BK_CLI_U64("seed", &o.seed, DEFAULT_SEED, 0, UINT64_MAX, "N", "run seed"),
      BK_CLI_U64("show", &o.show, UINT64_MAX, 0, MAX_SETTINGS - 1, "I",
                 "the setting shown in detail (Fig. 20, 21)",
                 .default_text = "the most imbalanced"),
      BK_CLI_FLAG("store", &o.store,
                  "also run every setting on the in-process d-kBF (kBF "
                  "slabs, scaled to --store-capacity): it must make the "
                  "model's decisions and keep every pair"),
      BK_CLI_U64("store-capacity", &o.store_capacity, 2000, 1, 1000000, "N",
                 "pairs per slab with --store"),
      BK_CLI_FLAG("csv", &o.csv, "one CSV row per setting",
                  .section = "output"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/kbf_fig20 .. kbf_fig23 (.csv, .png) drawn "
                    "with gnuplot",
                    .default_text = "no pictures"),
  };
  int status = bk_cli_parse_options(PROG, DKBF_DESCRIPTION, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
  if ((uint64_t)o.servers * o.slabs_per_server > BK_DKBF_MAX_SLABS)
    return bk_cli_usage_error(stderr, PROG,
                              "--servers %u times --slabs-per-server %u is "
                              "more than %u slabs",
                              o.servers, o.slabs_per_server,
                              (unsigned)BK_DKBF_MAX_SLABS);
  if (o.show != UINT64_MAX && o.show >= o.settings)
    return bk_cli_usage_error(
        stderr, PROG, "--show %llu: there are only %llu settings",
        (unsigned long long)o.show, (unsigned long long)o.settings);
  if (o.plot_dir && bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
  return bk_cli_flush_output(PROG, run(&o), stdout, stderr);
}
