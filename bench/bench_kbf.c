/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_kbf, the key-value Bloom filter, against a bk_bloom of
 * the same m (cells = bits) and k, both filled with 10 M keys at their
 * p-capacity for p = 1e-4 (the setting), the kBF's keys carrying
 * one of 3000 values.
 *
 * The targets: insert and query (a stored key, decoded) at most 2x
 * bk_bloom add and contains of the same m and k. A kBF cell is 32 bits
 * where a Bloom filter spends one, so the report carries bytes per key
 * beside the times. Also measured: query of keys never stored, update (a
 * query plus k XORs), and a delete + insert pair of a stored key (the
 * filter ends where it started).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "benches.h"
#include "bloomkit/bloom.h"
#include "bloomkit/kbf.h"
#include "bloomkit/params.h"
#include "fixture.h"

#define N_KEYS 10000000u
#define N_VALUES 3000u
#define FPP 1e-4
#define MIN_TIME 0.2

typedef enum op {
  BLOOM_CONTAINS_PRESENT,
  BLOOM_CONTAINS_ABSENT,
  BLOOM_ADD,
  KBF_QUERY_PRESENT,
  KBF_QUERY_ABSENT,
  KBF_INSERT,
  KBF_UPDATE,
  KBF_DELETE_INSERT,
  OP_COUNT
} op;
static const char *const op_names[OP_COUNT] = {"bloom/contains_present",
                                               "bloom/contains_absent",
                                               "bloom/add",
                                               "kbf/query_present",
                                               "kbf/query_absent",
                                               "kbf/insert",
                                               "kbf/update",
                                               "kbf/delete_insert_pair"};

typedef struct kbf_case {
  uint64_t m, n_keys;
  unsigned k;
  bk_bloom *bloom;
  bk_kbf *kbf;
  bool built;
  bk_fx_setup setup;
  uint64_t rng[OP_COUNT];
  uint64_t fresh;
} kbf_case;

typedef struct arg {
  kbf_case *c;
  op which;
} arg;

static kbf_case the_case;
static arg args[OP_COUNT];

static inline uint32_t value_of(uint64_t key) {
  return (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 32) % N_VALUES;
}

static bk_status bloom_add(void *t, const void *key, size_t len, bool *added) {
  (void)added;
  return bk_bloom_add(t, key, len);
}
static bk_status kbf_add(void *t, const void *key, size_t len, bool *added) {
  (void)added;
  bk_hash h;
  uint64_t k;
  memcpy(&k, key, sizeof k);
  bk_status s = bk_kbf_hash(t, key, len, &h);
  return s ? s : bk_kbf_insert_index_hash(t, h, value_of(k));
}
/* Fill keys [0, n) into a kBF from this thread alone: a kBF's mutations
 * need exclusive access (kbf.h), so bk_fx_fill's two threads would race on
 * its cells (that race reported stored keys absent in some runs). */
static bk_status kbf_fill(bk_kbf *f, uint64_t n) {
  bk_status s = BK_OK;
  for (uint64_t i = 0; i < n && s == BK_OK; i++) s = kbf_add(f, &i, sizeof i, NULL);
  return s;
}
static bk_status bloom_contains(const void *t, const void *key, size_t len,
                                bool *found) {
  return bk_bloom_contains(t, key, len, found);
}
/* Found = decoded to the value it was stored with. */
static bk_status kbf_query(const void *t, const void *key, size_t len,
                           bool *found) {
  bk_hash h;
  bk_kbf_result r = BK_KBF_ABSENT;
  uint32_t index = UINT32_MAX;
  uint64_t k;
  memcpy(&k, key, sizeof k);
  bk_status s = bk_kbf_hash(t, key, len, &h);
  if (!s) s = bk_kbf_query_index_hash(t, h, &r, &index);
  *found = r == BK_KBF_FOUND && index == value_of(k);
  return s;
}

static bool build(kbf_case *c, bk_bench_state *st) {
  if (!bk_fx_ready(&c->setup, st)) return false;
  if (c->built) return true;
  bk_bloom_config bc = {.m_bits = c->m, .k = c->k, .seed = bk_bench_seed()};
  bk_kbf_config kc = {
      .m_cells = c->m, .k = c->k, .fpp = FPP, .seed = bk_bench_seed()};
  bk_status s = bk_bloom_create(&c->bloom, &bc);
  if (s == BK_OK) s = bk_kbf_create(&c->kbf, &kc);
  for (uint32_t v = 0; s == BK_OK && v < N_VALUES; v++) {
    char name[16];
    uint32_t index;
    int len = snprintf(name, sizeof name, "value-%u", v);
    s = bk_kbf_intern(c->kbf, name, (size_t)len, &index);
  }
  if (s == BK_OK) s = bk_fx_fill(bloom_add, c->bloom, 0, c->n_keys);
  if (s == BK_OK) s = kbf_fill(c->kbf, c->n_keys);
  if (s != BK_OK) return bk_fx_fail(&c->setup, st, "build: %s", bk_strerror(s));
  c->built = true;
  return true;
}

/* Fresh keys, never removed: a short run adds a few % to the load. */
static bk_fx_tally inserts(bk_bench_state *st, kbf_case *c, bool bloom) {
  uint64_t n, j = c->fresh;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t r = 0; r < n; r++, j++) {
      uint64_t key = bk_fx_fresh_key(j);
      bool unused;
      bad |= bloom ? bloom_add(c->bloom, &key, sizeof key, &unused)
                   : kbf_add(c->kbf, &key, sizeof key, &unused);
    }
  c->fresh = j;
  return (bk_fx_tally){0, bad != 0, BK_OK};
}

/* Update a stored key to another value and back, or delete and re-insert
 * it: the filter ends as it began. Counted per operation (2 per key). */
static bk_fx_tally pairs(bk_bench_state *st, kbf_case *c, uint64_t *rng,
                         bool update) {
  uint64_t n, state = *rng, done = 0;
  while ((n = bk_bench_batch_of(st, 2)) != 0)
    for (uint64_t r = 0; r < n; r += 2) {
      uint64_t key = bk_fx_present_key(&state, c->n_keys);
      bk_hash h;
      bk_kbf_hash(c->kbf, &key, sizeof key, &h);
      const uint32_t v = value_of(key);
      if (update) {
        done += bk_kbf_update_index_hash(c->kbf, h, (v + 1) % N_VALUES) == 0;
        bk_kbf_update_index_hash(c->kbf, h, v);
      } else {
        done += bk_kbf_delete_index_hash(c->kbf, h, v) == BK_OK;
        bk_kbf_insert_index_hash(c->kbf, h, v);
      }
    }
  *rng = state;
  return (bk_fx_tally){done, false, BK_OK};
}

static void bench(bk_bench_state *st, void *p) {
  const arg *a = p;
  kbf_case *c = a->c;
  if (!build(c, st)) return;
  uint64_t *rng = &c->rng[a->which];
  bk_fx_tally t;
  bool present = false;
  const char *rate = "hit_rate";
  switch (a->which) {
    case BLOOM_CONTAINS_PRESENT:
      present = true;
      t = bk_fx_lookups(st, bloom_contains, c->bloom, rng, c->n_keys, false);
      break;
    case BLOOM_CONTAINS_ABSENT:
      t = bk_fx_lookups(st, bloom_contains, c->bloom, rng, BK_FX_ABSENT, false);
      break;
    case BLOOM_ADD:
      t = inserts(st, c, true);
      rate = NULL;
      break;
    case KBF_QUERY_PRESENT:
      present = true;
      t = bk_fx_lookups(st, kbf_query, c->kbf, rng, c->n_keys, false);
      break;
    case KBF_QUERY_ABSENT:
      t = bk_fx_lookups(st, kbf_query, c->kbf, rng, BK_FX_ABSENT, false);
      break;
    case KBF_INSERT:
      t = inserts(st, c, false);
      rate = NULL;
      break;
    default:
      t = pairs(st, c, rng, a->which == KBF_UPDATE);
      rate = NULL;
      break;
  }
  bk_fx_report(st, t, rate, present, "a bk_kbf / bk_bloom call failed");
  bk_kbf_info in;
  if (a->which >= KBF_QUERY_PRESENT && bk_kbf_info_get(c->kbf, &in) == 0) {
    bk_bench_counter(st, "bytes_per_key", (double)in.memory_cells / c->n_keys);
    bk_bench_counter(
        st, "bytes_per_pair_all",
        (double)(in.memory_cells + in.memory_skbf + in.memory_values) /
            c->n_keys);
  } else {
    bk_bench_counter(st, "bytes_per_key", (double)c->m / 8 / c->n_keys);
  }
}

/* ---- encoding -> index (Sec. 3.6) ---------------------------------------
 * The paper's regression inverse (quadratic fit + exact window search)
 * against a binary search, on the greedy table of 1024 encodings and on
 * bloomkit's 4095 cubes (t = 12); and whole queries of a small (cache-
 * resident) kBF whose inverse is direct ((e >> t) - 1, one compare) or a
 * binary search. */

enum { INV_N_GREEDY = 1024, INV_N_CUBES = 4095, INV_SMALL_KEYS = 100000 };
typedef enum inv_op {
  INV_BINARY_GREEDY,
  INV_REGRESSION_GREEDY,
  INV_BINARY_CUBES,
  INV_REGRESSION_CUBES,
  INV_QUERY_DIRECT,
  INV_QUERY_BINARY,
  INV_COUNT
} inv_op;
static const char *const inv_names[INV_COUNT] = {
    "kbf/inverse/binary_search_greedy_1024",
    "kbf/inverse/regression_greedy_1024",
    "kbf/inverse/binary_search_cubes_4095",
    "kbf/inverse/regression_cubes_4095",
    "kbf/inverse/query_small_direct",
    "kbf/inverse/query_small_binary"};

static struct {
  bool built;
  uint64_t greedy[INV_N_GREEDY], cubes[INV_N_CUBES];
  bk_kbf_regression rg, rc;
  bk_kbf *small[2];
  uint64_t rng[INV_COUNT];
} inv;
static inv_op inv_args[INV_COUNT];

static bool inv_build(bk_bench_state *st) {
  if (inv.built) return true;
  uint32_t found;
  bk_status s =
      bk_kbf_encodings_greedy(INV_N_GREEDY, 32, 0, inv.greedy, &found, NULL);
  for (uint32_t i = 0; s == BK_OK && i < INV_N_CUBES; i++)
    s = bk_kbf_encoding(12, i, &inv.cubes[i]);
  if (s == BK_OK) s = bk_kbf_regression_fit(inv.greedy, INV_N_GREEDY, &inv.rg);
  if (s == BK_OK) s = bk_kbf_regression_fit(inv.cubes, INV_N_CUBES, &inv.rc);
  for (int d = 0; s == BK_OK && d < 2; d++) {
    bk_kbf_config kc = {
        .capacity = INV_SMALL_KEYS,
        .fpp = FPP,
        .inverse = d ? BK_KBF_INVERSE_BINARY : BK_KBF_INVERSE_DIRECT,
        .seed = bk_bench_seed()};
    s = bk_kbf_create(&inv.small[d], &kc);
    for (uint32_t v = 0; s == BK_OK && v < N_VALUES; v++) {
      char name[16];
      uint32_t index;
      int len = snprintf(name, sizeof name, "value-%u", v);
      s = bk_kbf_intern(inv.small[d], name, (size_t)len, &index);
    }
    if (s == BK_OK) s = kbf_fill(inv.small[d], INV_SMALL_KEYS);
  }
  if (s != BK_OK) {
    bk_bench_skip(st, bk_strerror(s));
    return false;
  }
  inv.built = true;
  return true;
}

static void inv_bench(bk_bench_state *st, void *p) {
  const inv_op which = *(const inv_op *)p;
  if (!inv_build(st)) return;
  uint64_t n, state = inv.rng[which], sum = 0;
  if (which >= INV_QUERY_DIRECT) {
    bk_fx_tally t =
        bk_fx_lookups(st, kbf_query, inv.small[which == INV_QUERY_BINARY],
                      &inv.rng[which], INV_SMALL_KEYS, false);
    bk_fx_report(st, t, "hit_rate", true, "a bk_kbf call failed");
    return;
  }
  const bool greedy = which <= INV_REGRESSION_GREEDY;
  const uint64_t *table = greedy ? inv.greedy : inv.cubes;
  const uint32_t size = greedy ? INV_N_GREEDY : INV_N_CUBES;
  const bk_kbf_regression *r = greedy ? &inv.rg : &inv.rc;
  const bool regression =
      which == INV_REGRESSION_GREEDY || which == INV_REGRESSION_CUBES;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n; i++) {
      const uint64_t e = table[bk_reduce(bk_fx_next(&state), size)];
      sum += (uint64_t)(regression ? bk_kbf_regression_find(r, e)
                                   : bk_kbf_binary_find(table, size, e));
    }
  inv.rng[which] = state;
  bk_bench_sink_u64(sum);
  bk_bench_counter(st, "window", (double)(2 * r->max_error + 1));
}

static void register_inverse(void) {
  for (int o = 0; o < INV_COUNT; o++) {
    inv.rng[o] = bk_fx_stream((uint64_t)o | 0x4BF10000u);
    inv_args[o] = (inv_op)o;
    bk_bench_opts opts = {.group = "kbf inverse",
                          .baseline = o == INV_BINARY_GREEDY,
                          .min_time = MIN_TIME};
    bk_bench_register(inv_names[o], inv_bench, &inv_args[o], &opts);
  }
  bk_bench_info_ratio("kbf inverse: regression / binary search (greedy)",
                      inv_names[INV_REGRESSION_GREEDY],
                      inv_names[INV_BINARY_GREEDY]);
  bk_bench_info_ratio("kbf inverse: regression / binary search (cubes)",
                      inv_names[INV_REGRESSION_CUBES],
                      inv_names[INV_BINARY_CUBES]);
  bk_bench_info_ratio("kbf inverse: query, binary / direct (default)",
                      inv_names[INV_QUERY_BINARY], inv_names[INV_QUERY_DIRECT]);
}

void bk_bench_register_kbf(void) {
  register_inverse();
  kbf_case *c = &the_case;
  c->n_keys = bk_bench_quick() ? N_KEYS / 10 : N_KEYS;
  if (bk_params_for_target(c->n_keys, FPP, &c->m, &c->k) != BK_OK) return;
  snprintf(c->setup.name, sizeof c->setup.name, "kbf 10M p=1e-4");
  char name[OP_COUNT][96];
  for (int o = 0; o < OP_COUNT; o++) {
    c->rng[o] = bk_fx_stream((uint64_t)o | 0x4BF00000u);
    args[o] = (arg){c, (op)o};
    snprintf(name[o], sizeof name[o], "kbf/%s", op_names[o]);
    bk_bench_opts opts = {.group = "kbf",
                          .baseline = o == BLOOM_CONTAINS_PRESENT,
                          .min_time = MIN_TIME};
    bk_bench_register(name[o], bench, &args[o], &opts);
  }
  bk_bench_target("kbf: query (stored key, decoded) <= 2x bloom contains",
                  name[KBF_QUERY_PRESENT], name[BLOOM_CONTAINS_PRESENT], 2.0);
  bk_bench_target("kbf: insert <= 2x bloom add", name[KBF_INSERT],
                  name[BLOOM_ADD], 2.0);
  bk_bench_info_ratio("kbf: query absent / bloom contains absent",
                      name[KBF_QUERY_ABSENT], name[BLOOM_CONTAINS_ABSENT]);
}

void bk_bench_release_kbf(void) {
  bk_bloom_destroy(the_case.bloom);
  bk_kbf_destroy(the_case.kbf);
  bk_kbf_destroy(inv.small[0]);
  bk_kbf_destroy(inv.small[1]);
  inv.small[0] = inv.small[1] = NULL;
  the_case.bloom = NULL;
  the_case.kbf = NULL;
}
