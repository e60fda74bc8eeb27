/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_cbf, the counting Bloom filter, against a bk_bloom of the
 * same layout, m (counters = bits) and k = 7, both filled with the
 * p-capacity of m at p = 0.01 (as bench_bloom.c), at two sizes: 2^23 and
 * 2^26 counters (4 and 32 MiB of 4-bit counters; the Bloom filters hold a
 * quarter of that: 1 and 8 MiB of bits).
 *
 * The target: contains of the counting filter at most 1.3x the
 * Bloom filter's contains, same layout, m and k, present and absent keys.
 * Also measured: add + remove of one fresh key as a pair (the filter returns
 * to its filled state after each pair, so no reset is needed), concurrent
 * (compare-and-swap) and single_writer (plain stores), and count.
 * Issue #31's: at 2^26 counters, the batch lookups (contains_many, 256 keys
 * a call) at most 0.5x the single-key ones.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "benches.h"
#include "bloomkit/bloom.h"
#include "bloomkit/cbf.h"
#include "bloomkit/params.h"
#include "fixture.h"

#define K 7u
#define MIN_TIME 0.2

enum { N_SIZES = 2, N_LAYOUTS = 2 };
static const unsigned log_m[N_SIZES] = {23, 26};
static const bk_bloom_layout layouts[N_LAYOUTS] = {BK_BLOOM_STANDARD,
                                                   BK_BLOOM_BLOCKED};

typedef enum op {
  BLOOM_PRESENT,
  BLOOM_ABSENT,
  CBF_PRESENT,
  CBF_ABSENT,
  CBF_COUNT,
  CBF_ADD_REMOVE,
  CBF_ADD_REMOVE_SW,
  CBF_PRESENT_MANY,
  CBF_ABSENT_MANY,
  OP_COUNT
} op;
static const char *const op_names[OP_COUNT] = {
    "bloom/contains_present",
    "bloom/contains_absent",
    "cbf/contains_present",
    "cbf/contains_absent",
    "cbf/count_present",
    "cbf/add_remove_pair",
    "cbf/add_remove_pair_single_writer",
    "cbf/contains_many_present",
    "cbf/contains_many_absent"};

typedef struct cbf_case {
  uint64_t m, n_keys;
  bk_bloom_layout layout;
  bk_bloom *bloom;
  bk_cbf *cbf;
  bool built;
  bk_fx_setup setup;
  uint64_t rng[OP_COUNT];
  uint64_t fresh;
} cbf_case;

typedef struct arg {
  cbf_case *c;
  op which;
} arg;

static cbf_case cases[N_SIZES][N_LAYOUTS];
static arg args[N_SIZES][N_LAYOUTS][OP_COUNT];

static bk_status bloom_add(void *t, const void *key, size_t len, bool *added) {
  (void)added;
  return bk_bloom_add(t, key, len);
}
static bk_status cbf_add(void *t, const void *key, size_t len, bool *added) {
  (void)added;
  return bk_cbf_add(t, key, len);
}
static bk_status bloom_contains(const void *t, const void *key, size_t len,
                                bool *found) {
  return bk_bloom_contains(t, key, len, found);
}
static bk_status cbf_contains(const void *t, const void *key, size_t len,
                              bool *found) {
  return bk_cbf_contains(t, key, len, found);
}
static bk_status cbf_contains_many(const void *t, const void *const *keys,
                                   const size_t *lens, size_t n, bool *found) {
  return bk_cbf_contains_many(t, keys, lens, n, found);
}
static bk_status cbf_count_nonzero(const void *t, const void *key, size_t len,
                                   bool *found) {
  uint32_t c = 0;
  bk_status s = bk_cbf_count(t, key, len, &c);
  *found = c != 0;
  return s;
}

static bool build(cbf_case *c, bk_bench_state *st) {
  if (!bk_fx_ready(&c->setup, st)) return false;
  if (c->built) return true;
  bk_bloom_config bc = {
      .m_bits = c->m, .k = K, .layout = c->layout, .seed = bk_bench_seed()};
  bk_cbf_config cc = {
      .m_counters = c->m, .k = K, .layout = c->layout, .seed = bk_bench_seed()};
  bk_status s = bk_bloom_create(&c->bloom, &bc);
  if (s == BK_OK) s = bk_cbf_create(&c->cbf, &cc);
  if (s == BK_OK) s = bk_fx_fill(bloom_add, c->bloom, 0, c->n_keys);
  if (s == BK_OK) s = bk_fx_fill(cbf_add, c->cbf, 0, c->n_keys);
  if (s != BK_OK) return bk_fx_fail(&c->setup, st, "build: %s", bk_strerror(s));
  c->built = true;
  return true;
}

/* add then remove one fresh key: the filter is back where it was. */
static bk_fx_tally add_remove(bk_bench_state *st, cbf_case *c) {
  uint64_t n, j = c->fresh;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t r = 0; r < n; r++, j++) {
      uint64_t key = bk_fx_fresh_key(j);
      bad |= bk_cbf_add(c->cbf, &key, sizeof key);
      bad |= bk_cbf_remove(c->cbf, &key, sizeof key);
    }
  c->fresh = j;
  return (bk_fx_tally){0, bad != 0, BK_OK};
}

static void bench(bk_bench_state *st, void *p) {
  const arg *a = p;
  cbf_case *c = a->c;
  if (!build(c, st)) return;
  uint64_t *rng = &c->rng[a->which];
  bk_fx_tally t;
  bool present = false;
  switch (a->which) {
    case BLOOM_PRESENT:
      present = true;
      t = bk_fx_lookups(st, bloom_contains, c->bloom, rng, c->n_keys, false);
      break;
    case BLOOM_ABSENT:
      t = bk_fx_lookups(st, bloom_contains, c->bloom, rng, BK_FX_ABSENT, false);
      break;
    case CBF_PRESENT:
      present = true;
      t = bk_fx_lookups(st, cbf_contains, c->cbf, rng, c->n_keys, false);
      break;
    case CBF_ABSENT:
      t = bk_fx_lookups(st, cbf_contains, c->cbf, rng, BK_FX_ABSENT, false);
      break;
    case CBF_COUNT:
      present = true;
      t = bk_fx_lookups(st, cbf_count_nonzero, c->cbf, rng, c->n_keys, false);
      break;
    case CBF_ADD_REMOVE:
      t = add_remove(st, c);
      break;
    case CBF_PRESENT_MANY:
      present = true;
      t = bk_fx_lookups_many(st, cbf_contains_many, c->cbf, rng, c->n_keys);
      break;
    case CBF_ABSENT_MANY:
      t = bk_fx_lookups_many(st, cbf_contains_many, c->cbf, rng, BK_FX_ABSENT);
      break;
    default: /* the same with single_writer (benchmarks run one at a time) */
      bk_cbf_set_single_writer(c->cbf, true);
      t = add_remove(st, c);
      bk_cbf_set_single_writer(c->cbf, false);
      break;
  }
  const bool pair = a->which == CBF_ADD_REMOVE || a->which == CBF_ADD_REMOVE_SW;
  bk_fx_report(st, t, pair ? NULL : "hit_rate", present,
               "a bk_cbf / bk_bloom call failed");
  bk_bench_counter(st, "counters_per_key", (double)c->m / (double)c->n_keys);
}

void bk_bench_register_cbf(void) {
  for (int s = 0; s < N_SIZES; s++)
    for (int l = 0; l < N_LAYOUTS; l++) {
      cbf_case *c = &cases[s][l];
      c->m = (uint64_t)1 << log_m[s];
      c->layout = layouts[l];
      if (bk_params_p_capacity(c->m, 0.01, &c->n_keys) != BK_OK)
        c->n_keys = c->m / 10;
      const char *lname = l ? "blocked" : "standard";
      char group[40], name[OP_COUNT][96];
      snprintf(group, sizeof group, "cbf 2^%u %s", log_m[s], lname);
      snprintf(c->setup.name, sizeof c->setup.name, "%s", group);
      for (int o = 0; o < OP_COUNT; o++) {
        c->rng[o] = bk_fx_stream(((uint64_t)s << 16) | ((uint64_t)l << 8) |
                                 (uint64_t)o | 0xCBF00000u);
        args[s][l][o] = (arg){c, (op)o};
        snprintf(name[o], sizeof name[o], "cbf/2^%u/%s/%s", log_m[s], lname,
                 op_names[o]);
        bk_bench_opts opts = {.group = group,
                              .baseline = o == BLOOM_ABSENT,
                              .min_time = MIN_TIME};
        bk_bench_register(name[o], bench, &args[s][l][o], &opts);
      }
      char label[128];
      snprintf(label, sizeof label, "%s: cbf contains absent <= 1.3x bloom",
               group);
      bk_bench_target(label, name[CBF_ABSENT], name[BLOOM_ABSENT], 1.3);
      snprintf(label, sizeof label, "%s: cbf contains present <= 1.3x bloom",
               group);
      bk_bench_target(label, name[CBF_PRESENT], name[BLOOM_PRESENT], 1.3);
      if (log_m[s] < 26) continue; /* batches: beyond the cache (issue #31) */
      snprintf(label, sizeof label,
               "%s: cbf contains_many absent <= 0.5x single", group);
      bk_bench_target(label, name[CBF_ABSENT_MANY], name[CBF_ABSENT], 0.5);
      snprintf(label, sizeof label,
               "%s: cbf contains_many present <= 0.5x single", group);
      bk_bench_target(label, name[CBF_PRESENT_MANY], name[CBF_PRESENT], 0.5);
    }
}

void bk_bench_release_cbf(void) {
  for (int s = 0; s < N_SIZES; s++)
    for (int l = 0; l < N_LAYOUTS; l++) {
      bk_bloom_destroy(cases[s][l].bloom);
      bk_cbf_destroy(cases[s][l].cbf);
      cases[s][l].bloom = NULL;
      cases[s][l].cbf = NULL;
    }
}
