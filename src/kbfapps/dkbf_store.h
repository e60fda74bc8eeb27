/* SPDX-License-Identifier: MIT */
/*
 * An in-process d-kBF (kBF paper Sec. 5.1): slabs that are kBFs of a fixed
 * capacity, held by in-process "servers", a master table of where each slab
 * is, two-step hashing (a first hash picks the slab, the slab's kBF does
 * the rest) and periodic rebalancing by Algorithm 8 over the master's load
 * table (dkbf.h). Migration here moves a slab's ownership between servers;
 * in a distributed deployment it would ship the slab's cells. Private to
 * bloomkit's tests and experiments.
 *
 * Thread safety: none; one user at a time.
 */
#ifndef BLOOMKIT_SRC_KBFAPPS_DKBF_STORE_H
#define BLOOMKIT_SRC_KBFAPPS_DKBF_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"
#include "bloomkit/kbf.h"
#include "kbfapps/dkbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk__dkbf_store bk__dkbf_store;

typedef struct bk__dkbf_store_config {
  uint32_t n_servers;        /* 1..BK_DKBF_MAX_SERVERS */
  uint32_t slabs_per_server; /* the master spreads n_servers * this */
  uint64_t slab_capacity;    /* pairs per slab (each slab's kBF capacity) */
  double fpp;                /* each slab's target; 0: 0.001 */
  uint32_t max_values;       /* distinct values; 0: 4095 */
  uint64_t seed;
} bk__dkbf_store_config;

/** What a rebalancing did. */
typedef struct bk__dkbf_rebalance {
  double rho_before, rho_after;
  size_t migrations;    /* exchanges (or one-way moves) made */
  uint64_t pairs_moved; /* pairs in the slabs that moved */
} bk__dkbf_rebalance;

/** Errors: BK_EINVAL, BK_ENOMEM, and the kBF's creation errors. Cost: the
 * slabs' cells. */
bk_status bk__dkbf_store_create(bk__dkbf_store **out,
                                const bk__dkbf_store_config *cfg);
void bk__dkbf_store_destroy(bk__dkbf_store *d);

/** Two-step insert: the slab from the first hash, then the slab's kBF.
 * Errors: the kBF's, BK_EFULL (the slab holds slab_capacity pairs). */
bk_status bk__dkbf_store_insert(bk__dkbf_store *d, const void *key, size_t len,
                                const void *value, size_t value_len);
/** Query: *result and the value as bk_kbf_query gives them. Counts a query
 * against the slab (for query balancing). */
bk_status bk__dkbf_store_query(bk__dkbf_store *d, const void *key, size_t len,
                               bk_kbf_result *result, const void **value,
                               size_t *value_len);
/** Delete: the kBF's delete; the slab's load drops on success. */
bk_status bk__dkbf_store_delete(bk__dkbf_store *d, const void *key, size_t len);

/** The slab a key maps to, and the server holding it now. */
bk_status bk__dkbf_store_locate(const bk__dkbf_store *d, const void *key,
                                size_t len, uint32_t *slab, uint32_t *server);

/** One period's end: run Algorithm 8 on the pairs per slab (by_queries
 * false) or on the queries counted since the last call (true), apply the
 * plan to the master's table, and reset the query counts. Errors: those
 * of bk__dkbf_balance. */
bk_status bk__dkbf_store_rebalance(bk__dkbf_store *d, unsigned c_max,
                                   bool by_queries, bk__dkbf_rebalance *out);

/** The master's load table now (pointers into d, valid until the next
 * call that changes d). */
bk_status bk__dkbf_store_table(const bk__dkbf_store *d, bk__dkbf_table *out);

#ifdef __cplusplus
}
#endif

#endif
