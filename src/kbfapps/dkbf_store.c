/* SPDX-License-Identifier: MIT */
/*
 * The in-process d-kBF of dkbf_store.h: slabs of kBFs, the master's
 * location and load tables, two-step hashing and Algorithm 8 rebalancing.
 */
#include "kbfapps/dkbf_store.h"

#include <stdlib.h>

#include "bloomkit/hash.h"

/* The first hash step uses its own seed, so a key's slab does not
 * correlate with its cells inside the slab. */
#define FIRST_STEP_SALT UINT64_C(0x646b62662d736c62)

struct bk__dkbf_store {
  uint32_t n_slabs, n_servers;
  uint64_t slab_capacity, seed;
  bk_kbf **slabs;     /* [n_slabs] */
  uint64_t *pairs;    /* [n_slabs] stored pairs */
  uint64_t *queries;  /* [n_slabs] queries this period */
  uint32_t *location; /* [n_slabs] the server holding each slab */
  bk__dkbf_move *plan;
  unsigned plan_cap;
};

void bk__dkbf_store_destroy(bk__dkbf_store *d) {
  if (!d) return;
  if (d->slabs)
    for (uint32_t i = 0; i < d->n_slabs; i++) bk_kbf_destroy(d->slabs[i]);
  free(d->slabs);
  free(d->pairs);
  free(d->queries);
  free(d->location);
  free(d->plan);
  free(d);
}

bk_status bk__dkbf_store_create(bk__dkbf_store **out,
                                const bk__dkbf_store_config *cfg) {
  if (!out || !cfg || cfg->n_servers == 0 ||
      cfg->n_servers > BK_DKBF_MAX_SERVERS || cfg->slabs_per_server == 0 ||
      (uint64_t)cfg->n_servers * cfg->slabs_per_server > BK_DKBF_MAX_SLABS ||
      cfg->slab_capacity == 0 || cfg->slab_capacity > BK_DKBF_MAX_LOAD)
    return BK_EINVAL;
  bk__dkbf_store *d = calloc(1, sizeof *d);
  if (!d) return BK_ENOMEM;
  d->n_servers = cfg->n_servers;
  d->n_slabs = cfg->n_servers * cfg->slabs_per_server;
  d->slab_capacity = cfg->slab_capacity;
  d->seed = cfg->seed;
  d->slabs = calloc(d->n_slabs, sizeof *d->slabs);
  d->pairs = calloc(d->n_slabs, sizeof *d->pairs);
  d->queries = calloc(d->n_slabs, sizeof *d->queries);
  d->location = calloc(d->n_slabs, sizeof *d->location);
  if (!d->slabs || !d->pairs || !d->queries || !d->location) {
    bk__dkbf_store_destroy(d);
    return BK_ENOMEM;
  }
  bk_status st = BK_OK;
  /* The master places each slab as it allocates it (bk__dkbf_place): the
   * same number on every server. */
  for (uint32_t i = 0; i < d->n_slabs && st == BK_OK; i++) {
    bk__dkbf_table t = {i, d->n_servers, d->pairs, d->location};
    st = bk__dkbf_place(&t, &d->location[i]);
    /* seed + i: related to the routing seed through XXH3's linear seed
     * mixing, but never equal to it, and measured to change no rate
     * (docs/design/kbf.md, "Derived seeds"; test_dkbf.c). */
    bk_kbf_config kc = {.capacity = cfg->slab_capacity,
                        .fpp = cfg->fpp > 0 ? cfg->fpp : 0.001,
                        .max_values = cfg->max_values,
                        .seed = cfg->seed + i};
    if (st == BK_OK) st = bk_kbf_create(&d->slabs[i], &kc);
  }
  if (st != BK_OK) {
    bk__dkbf_store_destroy(d);
    return st;
  }
  *out = d;
  return BK_OK;
}

static bk_status slab_of(const bk__dkbf_store *d, const void *key, size_t len,
                         uint32_t *slab) {
  bk_hash h;
  bk_status st =
      bk_hash_bytes(BK_HASH_XXH3, d->seed ^ FIRST_STEP_SALT, key, len, &h);
  if (st != BK_OK) return st;
  *slab = bk__dkbf_slab_of(h.lo, d->n_slabs);
  return BK_OK;
}

bk_status bk__dkbf_store_locate(const bk__dkbf_store *d, const void *key,
                                size_t len, uint32_t *slab, uint32_t *server) {
  if (!d || !slab || !server || (!key && len)) return BK_EINVAL;
  bk_status st = slab_of(d, key, len, slab);
  if (st == BK_OK) *server = d->location[*slab];
  return st;
}

bk_status bk__dkbf_store_insert(bk__dkbf_store *d, const void *key, size_t len,
                                const void *value, size_t value_len) {
  if (!d || (!key && len)) return BK_EINVAL;
  uint32_t s;
  bk_status st = slab_of(d, key, len, &s);
  if (st != BK_OK) return st;
  if (d->pairs[s] >= d->slab_capacity) return BK_EFULL;
  st = bk_kbf_insert(d->slabs[s], key, len, value, value_len);
  if (st == BK_OK) d->pairs[s]++;
  return st;
}

bk_status bk__dkbf_store_query(bk__dkbf_store *d, const void *key, size_t len,
                               bk_kbf_result *result, const void **value,
                               size_t *value_len) {
  if (!d || (!key && len)) return BK_EINVAL;
  uint32_t s;
  bk_status st = slab_of(d, key, len, &s);
  if (st != BK_OK) return st;
  d->queries[s]++;
  return bk_kbf_query(d->slabs[s], key, len, result, value, value_len);
}

bk_status bk__dkbf_store_delete(bk__dkbf_store *d, const void *key,
                                size_t len) {
  if (!d || (!key && len)) return BK_EINVAL;
  uint32_t s;
  bk_status st = slab_of(d, key, len, &s);
  if (st != BK_OK) return st;
  st = bk_kbf_delete(d->slabs[s], key, len);
  if (st == BK_OK && d->pairs[s] > 0) d->pairs[s]--;
  return st;
}

bk_status bk__dkbf_store_table(const bk__dkbf_store *d, bk__dkbf_table *out) {
  if (!d || !out) return BK_EINVAL;
  *out = (bk__dkbf_table){d->n_slabs, d->n_servers, d->pairs, d->location};
  return BK_OK;
}

bk_status bk__dkbf_store_rebalance(bk__dkbf_store *d, unsigned c_max,
                                   bool by_queries, bk__dkbf_rebalance *out) {
  if (!d || !out || c_max == 0) return BK_EINVAL;
  if (d->plan_cap < c_max) {
    bk__dkbf_move *p = realloc(d->plan, c_max * sizeof *p);
    if (!p) return BK_ENOMEM;
    d->plan = p;
    d->plan_cap = c_max;
  }
  const uint64_t *load = by_queries ? d->queries : d->pairs;
  /* Queries can exceed the model's load bound over a long period: the
   * plan needs only their proportions, so halve them all until they fit. */
  if (by_queries) {
    bool big = true;
    while (big) {
      big = false;
      for (uint32_t i = 0; i < d->n_slabs; i++)
        big |= d->queries[i] > BK_DKBF_MAX_LOAD;
      if (big)
        for (uint32_t i = 0; i < d->n_slabs; i++) d->queries[i] >>= 1;
    }
  }
  bk__dkbf_table t = {d->n_slabs, d->n_servers, load, d->location};
  double *rho = malloc((c_max + 1) * sizeof *rho);
  if (!rho) return BK_ENOMEM;
  size_t n = 0;
  bk_status st = bk__dkbf_balance(&t, c_max, d->plan, c_max, &n, rho);
  if (st == BK_OK)
    st = bk__dkbf_apply(d->n_slabs, d->n_servers, d->location, d->plan, n);
  if (st == BK_OK) {
    out->rho_before = rho[0];
    out->rho_after = rho[n];
    out->migrations = n;
    out->pairs_moved = 0;
    /* A slab's pairs move with it, whatever load the plan balanced. */
    for (size_t j = 0; j < n; j++) {
      out->pairs_moved += d->pairs[d->plan[j].heavy];
      if (d->plan[j].light != BK_DKBF_NO_SLAB)
        out->pairs_moved += d->pairs[d->plan[j].light];
    }
    if (by_queries)
      for (uint32_t i = 0; i < d->n_slabs; i++) d->queries[i] = 0;
  }
  free(rho);
  return st;
}
