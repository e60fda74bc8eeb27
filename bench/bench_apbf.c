/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_apbf, the Age-Partitioned Bloom Filter, each shape
 * against a bk_bloom of the same total memory measured in the same run.
 *
 * Shapes (count-based, groups "apbf (k,l) g=G"): (7,5) with g = 1024
 * (15 KiB of slices: in L1/L2, the size of the Go ports' small benchmarks),
 * (7,5) with g = 2^20 (15.6 MiB) and (10,25) with g = 2^17 (8.3 MiB). Each
 * is filled to its steady state, (k + l + 1) g distinct ids, before the
 * first row. Keys are 8-byte ids hashed by the filter (XXH3): present ids
 * are drawn from the last l g inserted (inside the window), absent ids were
 * never inserted, fresh ids are new for every add.
 *
 * Rows of a group, in run order:
 *   bloom/add_if_absent   baseline: a standard bk_bloom of (k + l) m bits,
 *                         k = 7, taking fresh ids; cleared (timer paused)
 *                         each time it has taken (l + 1) g of them, so it
 *                         cycles between empty and the APBF's window.
 *   apbf/add_if_absent    fresh ids on the filled APBF (steady state: it
 *                         shifts every g and needs no reset).
 *   apbf/add              fresh ids, bk_apbf_add.
 *   apbf/contains_hit     present ids (a hit probes k slices).
 *   apbf/contains_miss    absent ids (about 2 (k + l) / k probes).
 *   bloom_sw/add_if_absent, apbf_sw/add_if_absent, apbf_sw/add
 *                         the same with single_writer set on both (no key
 *                         locks, plain stores).
 * Targets: apbf/add_if_absent within 1.5x bloom/add_if_absent, and the same
 * for the single-writer pair. The Go ports' figures (decred: add 59-205
 * ns, hit 69-98 ns, miss 36-42 ns on a Ryzen 7 1700) are compared in
 * docs/results.md from the absolute times.
 *
 * Reads as of now (group "fbf contains_at"): a fixed FBF, N = 6, k = 7,
 * 200000 ids per period (m = 1.9 Mbit a filter, 1.9 MiB of lanes), filled
 * through 8 periods. Rows: fbf/contains (baseline, absent ids),
 * fbf/contains_at_now (a time before the next refresh: the fast path),
 * fbf/contains_at_due (a time three periods on: the mutex and the model of
 * the due refreshes). Targets: both within 1.2x contains.
 */
#include <stdio.h>
#include <stdlib.h>

#include "benches.h"
#include "bloomkit/apbf.h"
#include "bloomkit/bloom.h"
#include "bloomkit/fbf.h"
#include "fixture.h"

typedef struct apbf_case {
  unsigned k, l;
  uint64_t g;
  char group[64];
  bk_fx_setup setup;
  bk_apbf *f, *sw; /* sw: the single-writer twin */
  bk_bloom *bloom, *bloom_sw;
  uint64_t next_id;        /* ids [0, next_id) inserted into f */
  uint64_t bloom_fresh[2]; /* fresh ids each bloom took since its clear */
  uint64_t fresh;          /* the next fresh id */
  uint64_t rng;
} apbf_case;

static apbf_case g_cases[3] = {
    {.k = 7, .l = 5, .g = 1024},
    {.k = 7, .l = 5, .g = (uint64_t)1 << 20},
    {.k = 10, .l = 25, .g = (uint64_t)1 << 17},
};

static bool ready(apbf_case *c, bk_bench_state *st) {
  if (c->f || c->setup.failed) return bk_fx_ready(&c->setup, st);
  uint64_t g = bk_bench_quick() ? (c->g < 4096 ? c->g : 4096) : c->g;
  c->g = g;
  bk_apbf_config cfg = {
      .k = c->k, .l = c->l, .generation = g, .seed = bk_bench_seed()};
  if (bk_apbf_create(&c->f, &cfg) != BK_OK)
    return bk_fx_fail(&c->setup, st, "bk_apbf_create failed");
  cfg.single_writer = true;
  if (bk_apbf_create(&c->sw, &cfg) != BK_OK)
    return bk_fx_fail(&c->setup, st, "bk_apbf_create failed");
  bk_apbf_info in;
  (void)bk_apbf_info_get(c->f, &in);
  bk_bloom_config bc = {.m_bits = in.m_bits * (c->k + c->l),
                        .k = 7,
                        .layout = BK_BLOOM_STANDARD,
                        .seed = bk_bench_seed()};
  if (bk_bloom_create(&c->bloom, &bc) != BK_OK)
    return bk_fx_fail(&c->setup, st, "bk_bloom_create failed");
  bc.single_writer = true;
  if (bk_bloom_create(&c->bloom_sw, &bc) != BK_OK)
    return bk_fx_fail(&c->setup, st, "bk_bloom_create failed");
  double t0 = bk_fx_now();
  for (uint64_t end = (c->k + c->l + 1) * g; c->next_id < end; c->next_id++) {
    (void)bk_apbf_add(c->f, &c->next_id, sizeof c->next_id);
    (void)bk_apbf_add(c->sw, &c->next_id, sizeof c->next_id);
  }
  fprintf(stderr, "%s: filled %llu ids in %.2f s, %.2f MiB of slices\n",
          c->group, (unsigned long long)c->next_id, bk_fx_now() - t0,
          (double)(in.m_bits * (c->k + c->l)) / 8.0 / BK_FX_MIB);
  c->rng = bk_fx_stream(0xA9B0 + c->k * 100 + c->l);
  return true;
}

static void bloom_adds(bk_bench_state *st, apbf_case *c, bool single) {
  if (!ready(c, st)) return;
  bk_bloom *b = single ? c->bloom_sw : c->bloom;
  uint64_t n, added = 0, window = (c->l + 1) * c->g;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t key = bk_fx_fresh_key(c->fresh++);
      bool a = false;
      (void)bk_bloom_add_if_absent(b, &key, sizeof key, &a);
      added += a;
      if (++c->bloom_fresh[single] == window) {
        bk_bench_pause(st);
        (void)bk_bloom_clear(b);
        c->bloom_fresh[single] = 0;
        bk_bench_resume(st);
      }
    }
  }
  bk_bench_sink_u64(added);
}

static void apbf_adds(bk_bench_state *st, apbf_case *c, bool single,
                      bool if_absent) {
  if (!ready(c, st)) return;
  bk_apbf *f = single ? c->sw : c->f;
  uint64_t n, added = 0;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n; i++) {
      uint64_t key = bk_fx_fresh_key(c->fresh++);
      bool a = false;
      if (if_absent)
        (void)bk_apbf_add_if_absent(f, &key, sizeof key, &a);
      else
        (void)bk_apbf_add(f, &key, sizeof key);
      added += a;
    }
  bk_bench_sink_u64(added);
}

static void bloom_add_if_absent(bk_bench_state *st, void *arg) {
  bloom_adds(st, arg, false);
}
static void bloom_sw_add_if_absent(bk_bench_state *st, void *arg) {
  bloom_adds(st, arg, true);
}
static void apbf_add_if_absent(bk_bench_state *st, void *arg) {
  apbf_adds(st, arg, false, true);
}
static void apbf_add(bk_bench_state *st, void *arg) {
  apbf_adds(st, arg, false, false);
}
static void apbf_sw_add_if_absent(bk_bench_state *st, void *arg) {
  apbf_adds(st, arg, true, true);
}
static void apbf_sw_add(bk_bench_state *st, void *arg) {
  apbf_adds(st, arg, true, false);
}

/* Hits draw from the last l g ids inserted (inside the window whatever
 * the phase of the generation): the fresh ids once the add rows have run,
 * else the fill's. */
static void apbf_contains(bk_bench_state *st, apbf_case *c, bool hit) {
  if (!ready(c, st)) return;
  uint64_t n, found = 0, state = c->rng, span = c->l * c->g;
  bool fresh = c->fresh >= span;
  uint64_t top = fresh ? c->fresh : c->next_id;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n; i++) {
      uint64_t key;
      if (hit) {
        uint64_t id = top - 1 - bk_reduce(bk_fx_next(&state), span);
        key = fresh ? bk_fx_fresh_key(id) : id;
      } else {
        key = bk_fx_absent_key(&state);
      }
      bool f = false;
      (void)bk_apbf_contains(c->f, &key, sizeof key, &f);
      found += f;
    }
  c->rng = state;
  bk_bench_counter(st, "hit_rate",
                   (double)found / (double)bk_bench_iterations(st));
  bk_bench_sink_u64(found);
}

static void apbf_contains_hit(bk_bench_state *st, void *arg) {
  apbf_contains(st, arg, true);
}
static void apbf_contains_miss(bk_bench_state *st, void *arg) {
  apbf_contains(st, arg, false);
}

/* ---- reads as of now (bk_fbf_contains_at) -------------------------------- */

static struct {
  bk_fx_setup setup;
  bk_fbf *f;
  uint64_t now, period, rng;
} g_at;

static bool at_ready(bk_bench_state *st) {
  if (g_at.f || g_at.setup.failed) return bk_fx_ready(&g_at.setup, st);
  uint64_t per = bk_bench_quick() ? 20000 : 200000;
  g_at.period = 1000;
  bk_fbf_config cfg = {.capacity = per,
                       .n_past = 6,
                       .refresh_period = g_at.period,
                       .seed = bk_bench_seed()};
  if (bk_fbf_create(&g_at.f, &cfg) != BK_OK)
    return bk_fx_fail(&g_at.setup, st, "bk_fbf_create failed");
  uint64_t id = 0;
  for (unsigned p = 0; p < 8; p++) {
    for (uint64_t j = 0; j < per; j++, id++)
      (void)bk_fbf_add(g_at.f, &id, sizeof id);
    g_at.now += g_at.period;
    (void)bk_fbf_advance(g_at.f, g_at.now);
  }
  g_at.rng = bk_fx_stream(0xC0A7);
  return true;
}

/* mode 0: contains; 1: contains_at before the next refresh; 2: three
 * periods on */
static void fbf_reads(bk_bench_state *st, int mode) {
  if (!at_ready(st)) return;
  uint64_t n, found = 0, state = g_at.rng;
  uint64_t at =
      mode == 1 ? g_at.now + g_at.period / 2 : g_at.now + 3 * g_at.period;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n; i++) {
      uint64_t key = bk_fx_absent_key(&state);
      bool f = false;
      if (mode == 0)
        (void)bk_fbf_contains(g_at.f, &key, sizeof key, &f);
      else
        (void)bk_fbf_contains_at(g_at.f, &key, sizeof key, at, &f);
      found += f;
    }
  g_at.rng = state;
  bk_bench_counter(st, "hit_rate",
                   (double)found / (double)bk_bench_iterations(st));
}

static void fbf_contains_bench(bk_bench_state *st, void *arg) {
  (void)arg;
  fbf_reads(st, 0);
}
static void fbf_contains_at_now(bk_bench_state *st, void *arg) {
  (void)arg;
  fbf_reads(st, 1);
}
static void fbf_contains_at_due(bk_bench_state *st, void *arg) {
  (void)arg;
  fbf_reads(st, 2);
}

#define N_ROWS 8

void bk_bench_register_apbf(void) {
  static char names[3][N_ROWS][96];
  static const char *const rows[N_ROWS] = {
      "bloom/add_if_absent",   "apbf/add_if_absent", "apbf/add",
      "apbf/contains_hit",     "apbf/contains_miss", "bloom_sw/add_if_absent",
      "apbf_sw/add_if_absent", "apbf_sw/add"};
  static const bk_bench_fn fns[N_ROWS] = {
      bloom_add_if_absent,   apbf_add_if_absent, apbf_add,
      apbf_contains_hit,     apbf_contains_miss, bloom_sw_add_if_absent,
      apbf_sw_add_if_absent, apbf_sw_add};
  for (unsigned i = 0; i < 3; i++) {
    apbf_case *c = &g_cases[i];
    snprintf(c->group, sizeof c->group, "apbf (%u,%u) g=%llu", c->k, c->l,
             (unsigned long long)c->g);
    snprintf(c->setup.name, sizeof c->setup.name, "%s", c->group);
    for (unsigned r = 0; r < N_ROWS; r++) {
      snprintf(names[i][r], sizeof names[i][r], "%s/%s", c->group, rows[r]);
      bk_bench_opts o = {.group = c->group, .baseline = r == 0};
      bk_bench_register(names[i][r], fns[r], c, &o);
    }
    bk_bench_target(c->group, names[i][1], names[i][0], 1.5);
    char label[96];
    snprintf(label, sizeof label, "%s single writer", c->group);
    static char sw_labels[3][96];
    snprintf(sw_labels[i], sizeof sw_labels[i], "%s", label);
    bk_bench_target(sw_labels[i], names[i][6], names[i][5], 1.5);
  }
  static const char *const at_rows[3] = {"fbf contains_at/fbf/contains",
                                         "fbf contains_at/fbf/contains_at_now",
                                         "fbf contains_at/fbf/contains_at_due"};
  static const bk_bench_fn at_fns[3] = {fbf_contains_bench, fbf_contains_at_now,
                                        fbf_contains_at_due};
  snprintf(g_at.setup.name, sizeof g_at.setup.name, "fbf contains_at");
  for (unsigned r = 0; r < 3; r++) {
    bk_bench_opts o = {.group = "fbf contains_at", .baseline = r == 0};
    bk_bench_register(at_rows[r], at_fns[r], NULL, &o);
  }
  bk_bench_target("fbf contains_at, no refresh due", at_rows[1], at_rows[0],
                  1.2);
  bk_bench_info_ratio("fbf contains_at, refreshes due", at_rows[2], at_rows[0]);
}

void bk_bench_release_apbf(void) {
  bk_fbf_destroy(g_at.f);
  g_at.f = NULL;
  for (unsigned i = 0; i < 3; i++) {
    bk_apbf_destroy(g_cases[i].f);
    bk_apbf_destroy(g_cases[i].sw);
    bk_bloom_destroy(g_cases[i].bloom);
    bk_bloom_destroy(g_cases[i].bloom_sw);
    g_cases[i].f = g_cases[i].sw = NULL;
    g_cases[i].bloom = g_cases[i].bloom_sw = NULL;
  }
}
