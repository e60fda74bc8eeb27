/* SPDX-License-Identifier: MIT */
/*
 * The distributed kBF (d-kBF) of the kBF paper, Sec. 5, as a model: the
 * master's bookkeeping and decisions over a load table, with no network
 * and no kBF inside. Private to bloomkit's experiments (`bloomkit sim
 * dkbf`) and tests; never installed.
 *
 * A d-kBF is a set of slabs (each a kBF of a fixed capacity) held by
 * servers; a key's slab is chosen by a first hash (two-step hashing,
 * Sec. 5.1), the master keeps where each slab is, and every period T it
 * rebalances by exchanging slabs between servers (Algorithm 8). Every
 * decision here (where a new slab goes, which slabs can be freed, which
 * slabs to exchange) is a pure function of the load table: the same table
 * gives the same plan, so a real deployment can run the master anywhere
 * (the distributed engine comes later) and replay or test its decisions.
 *
 * The load table. Slab i holds load[i] (k-v pairs, or queries in the last
 * period: Algorithm 8 balances whichever it is given) and lives on server
 * server[i] < n_servers. A server's load is the sum of its slabs' loads.
 * The imbalance metric is rho = sd / mean of the servers' loads (the
 * population standard deviation; rho = 0 when every server is empty).
 *
 * Thread safety: none needed; every function reads only its arguments.
 */
#ifndef BLOOMKIT_SRC_KBFAPPS_DKBF_H
#define BLOOMKIT_SRC_KBFAPPS_DKBF_H

#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds that keep every sum exact: at most 2^24 slabs on 2^16 servers,
 * each load at most 2^39, so a server's total stays below 2^63. */
#define BK_DKBF_MAX_SLABS (UINT32_C(1) << 24)
#define BK_DKBF_MAX_SERVERS (UINT32_C(1) << 16)
#define BK_DKBF_MAX_LOAD (UINT64_C(1) << 39)
/* Algorithm 8's C_max, the paper's choice (Sec. 5.2). */
#define BK_DKBF_C_MAX_DEFAULT 10u
/* No slab: the lighter side of a migration to a server that holds none. */
#define BK_DKBF_NO_SLAB UINT32_MAX

typedef struct bk__dkbf_table {
  uint32_t n_slabs;
  uint32_t n_servers;
  const uint64_t *load;   /* [n_slabs] */
  const uint32_t *server; /* [n_slabs], each < n_servers */
} bk__dkbf_table;

/* One step of a rebalancing plan: slab `heavy` moves from server `from` to
 * server `to`, and slab `light` (unless BK_DKBF_NO_SLAB) moves back from
 * `to` to `from` (an exchange, Algorithm 8 line 15). rho_after is the
 * imbalance once this step is applied. */
typedef struct bk__dkbf_move {
  uint32_t heavy, light;
  uint32_t from, to;
  uint64_t pairs_moved; /* load[heavy] + load[light] */
  double rho_after;
} bk__dkbf_move;

/** Check a table: n_slabs and n_servers in 1..their maxima, arrays
 * present, every server index < n_servers, every load <= BK_DKBF_MAX_LOAD.
 * Errors: BK_EINVAL, BK_ERANGE (a load or index out of range). O(n). */
bk_status bk__dkbf_check(const bk__dkbf_table *t);

/** Each server's total load into per_server[n_servers]. Errors: those of
 * bk__dkbf_check. O(n). */
bk_status bk__dkbf_server_loads(const bk__dkbf_table *t, uint64_t *per_server);

/** rho = sd / mean of the servers' loads (0 if all are 0). Errors: those
 * of bk__dkbf_check, BK_ENOMEM. O(n). */
bk_status bk__dkbf_rho(const bk__dkbf_table *t, double *rho);

/** rho of n server totals (0 for n == 0 or an all-zero vector). */
double bk__dkbf_rho_of(const uint64_t *per_server, uint32_t n);

/**
 * Algorithm 8, the greedy balancing step the master runs every period:
 * repeatedly take the most loaded slab on the most loaded server and the
 * least loaded slab on the least loaded server, predict rho after
 * exchanging them, and exchange them if that lowers rho, at most c_max
 * times (docs/design/kbf.md 5.11: the paper's loop runs C_max - 1 times and
 * also accepts an exchange that leaves rho unchanged; here a step must
 * lower rho strictly, and up to c_max steps are taken). A least loaded
 * server that holds no slab receives the heavy slab alone. Ties go to the
 * lowest index. The table is not changed: the plan goes to
 * moves[0..*n_moves) (cap >= c_max entries) and, when rho_steps is not
 * NULL, rho before the first step and after each one to
 * rho_steps[0..*n_moves]. Errors: those of bk__dkbf_check, BK_EINVAL
 * (c_max == 0, cap < c_max, NULL moves or n_moves), BK_ENOMEM.
 * Cost: O(c_max * n_slabs).
 */
bk_status bk__dkbf_balance(const bk__dkbf_table *t, unsigned c_max,
                           bk__dkbf_move *moves, size_t cap, size_t *n_moves,
                           double *rho_steps);

/** Apply a plan to a server array (server[n_slabs]) in order. Errors:
 * BK_EINVAL (a move naming a slab or server out of range, or a slab not on
 * the server the move says; nothing is changed then). O(n_moves + n). */
bk_status bk__dkbf_apply(uint32_t n_slabs, uint32_t n_servers, uint32_t *server,
                         const bk__dkbf_move *moves, size_t n_moves);

/** Where the master allocates a new slab: the server holding the fewest
 * slabs, then the least loaded, then the lowest index (Sec. 5.2: "the
 * master will assign the same number of slabs to each storage server").
 * A table with n_slabs == 0 is allowed here (load and server may be
 * NULL). Errors: BK_EINVAL, BK_ERANGE, BK_ENOMEM. O(n). */
bk_status bk__dkbf_place(const bk__dkbf_table *t, uint32_t *server);

/** The slabs the master may free (Sec. 5.1: "deleting empty slabs"): those
 * with load 0, in index order, into slabs[0..*n) (cap >= n_slabs or the
 * list is cut at cap, with *n the full count). Errors: those of
 * bk__dkbf_check. O(n). */
bk_status bk__dkbf_reclaimable(const bk__dkbf_table *t, uint32_t *slabs,
                               size_t cap, size_t *n);

/** The first hash step (Sec. 5.1): a key's slab from its 64-bit digest,
 * (top 32 bits of digest) * n_slabs >> 32 (uniform when the digest is, to
 * within n_slabs / 2^32). n_slabs >= 1. */
static inline uint32_t bk__dkbf_slab_of(uint64_t digest, uint32_t n_slabs) {
  return (uint32_t)(((digest >> 32) * n_slabs) >> 32);
}

#ifdef __cplusplus
}
#endif

#endif
