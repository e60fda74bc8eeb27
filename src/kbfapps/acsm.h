/* SPDX-License-Identifier: MIT */
/*
 * The approximate concurrent state machine (ACSM) of the kBF paper, Sec. 7:
 * a TCP trace (tcptrace.h) replayed into a store of per-flow state that may
 * err (a kBF, the sBF of sbf.h, or an exact map), counting its errors
 * against the reference state machine. Private to bloomkit's experiments,
 * the example and the tests.
 *
 * For every packet the monitor queries the flow's state in the store and
 * acts on that answer only, as a real monitor would: absent and a SYN ->
 * insert; a state -> bk__tcp_next's action (update or delete); "cannot
 * tell" -> the store's `unknown_delete` for an RST (a state-independent
 * end: the sBF can delete without the value, a kBF cannot) and nothing
 * otherwise. The reference (exact, indexed by flow) moves along by the
 * true state. Each query's answer is scored against the true state:
 *
 *   false negative   the flow is tracked, the store says absent or cannot tell
 *   false positive   the flow is not tracked, the store gives a state
 *   wrong state      tracked, the store gives another state
 *   unknown absent   not tracked, the store cannot tell
 *   total errors     the sum of the four
 *
 * and, after the trace, every flow is queried once more (the "final"
 * counts: what a monitor reading the table at the end would see).
 */
#ifndef BLOOMKIT_SRC_KBFAPPS_ACSM_H
#define BLOOMKIT_SRC_KBFAPPS_ACSM_H

#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"
#include "kbfapps/tcptrace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bk__acsm_answer {
  BK_ACSM_FOUND = 0,
  BK_ACSM_ABSENT = 1,
  BK_ACSM_UNKNOWN = 2, /* the store holds the key but cannot tell its state */
} bk__acsm_answer;

/* A store of flow -> state (1..BK_TCP_N_STATES). Each operation returns
 * BK_OK, a "refused" status the monitor counts and carries on from
 * (BK_ENOTFOUND, BK_EUNDECODABLE, BK_EFULL, BK_ESATURATED), or anything
 * else to stop the run. */
typedef struct bk__acsm_store {
  const char *name;
  void *ctx;
  bk_status (*query)(void *ctx, const unsigned char key[8],
                     bk__acsm_answer *answer, unsigned *state);
  bk_status (*insert)(void *ctx, const unsigned char key[8], unsigned state);
  bk_status (*update)(void *ctx, const unsigned char key[8], unsigned from,
                      unsigned to);
  bk_status (*remove)(void *ctx, const unsigned char key[8], unsigned state);
  /* Delete a key whose state the store cannot tell; NULL: not possible. */
  bk_status (*unknown_delete)(void *ctx, const unsigned char key[8]);
} bk__acsm_store;

typedef struct bk__acsm_counts {
  uint64_t queries;
  uint64_t false_negatives;
  uint64_t false_positives;
  uint64_t wrong_state;
  uint64_t unknown_absent;
  uint64_t total_errors;
} bk__acsm_counts;

typedef struct bk__acsm_result {
  bk__acsm_counts during;             /* one query per packet */
  bk__acsm_counts final;              /* every flow once, after the trace */
  uint64_t inserts, updates, deletes; /* operations the monitor issued */
  uint64_t refused;                   /* of them, refused by the store */
  uint64_t peak_tracked; /* most flows tracked at once (reference) */
  uint64_t tracked_end;  /* flows tracked at the end (reference) */
  uint64_t suspicious_fin, suspicious_rst; /* flows that saw FIN / RST
                                              (reference; Sec. 7's count) */
} bk__acsm_result;

/** Replay `trace` into `store`. Errors: BK_EINVAL, BK_ENOMEM, and the first
 * status of a store operation that is not OK or "refused". O(events). */
bk_status bk__acsm_run(const bk__tcp_trace *trace, const bk__acsm_store *store,
                       bk__acsm_result *out);

/** An sBF as a store (ctx: a bk__sbf *). */
bk__acsm_store bk__acsm_sbf_store(void *sbf);

/** Score one answer against the truth (true_state 0: not tracked). */
void bk__acsm_score(bk__acsm_counts *c, unsigned true_state,
                    bk__acsm_answer answer, unsigned state);

#ifdef __cplusplus
}
#endif

#endif
