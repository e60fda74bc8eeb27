/* SPDX-License-Identifier: MIT */
/*
 * A seeded synthetic TCP trace for the approximate state machine study of
 * the kBF paper (Sec. 7: per-flow TCP state kept in a kBF or an sBF; the
 * paper used an hour of CAIDA traffic, 908,522 flows, which is not
 * redistributable). Private to bloomkit's experiments and tests.
 *
 * A flow is identified by its (source, destination) IPv4 pair, as the
 * paper's flow id: an 8-byte key, distinct for every flow (the 64-bit word
 * is splitmix64's bijection of the flow's index and the seed). Each flow
 * is one of these kinds (shares of the flows, in order of the enum):
 *
 *   closed      55 %  SYN SYN-ACK ACK d*ACK FIN ACK FIN ACK
 *   reset       10 %  SYN SYN-ACK ACK d*ACK RST
 *   refused      5 %  SYN RST
 *   half-open   10 %  SYN, repeated r times (r = 0..2): no answer
 *   open        15 %  SYN SYN-ACK ACK d*ACK (still open when the trace ends)
 *   half-closed  5 %  SYN SYN-ACK ACK d*ACK FIN
 *
 * d (data packets) is geometric with mean --data-mean (4). A flow starts
 * at a uniform time in [0, duration) and its packets follow with
 * exponential gaps of mean --gap (the units are arbitrary); the events of
 * all flows are merged in time order (ties by flow, then packet). So many
 * flows are live at once and their packets interleave.
 *
 * The state machine (bk__tcp_next) is the reference every store is checked
 * against: states SYN, SYN-ACK, ESTABLISHED, FIN-WAIT (one FIN), CLOSING
 * (both FINs); a SYN for an unknown flow inserts it, RST or the ACK after
 * the second FIN deletes it, other packets move it along or change
 * nothing; packets for unknown flows are ignored.
 */
#ifndef BLOOMKIT_SRC_KBFAPPS_TCPTRACE_H
#define BLOOMKIT_SRC_KBFAPPS_TCPTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bk__tcp_flag {
  BK_TCP_SYN = 1,
  BK_TCP_SYNACK = 2,
  BK_TCP_ACK = 3,
  BK_TCP_FIN = 4,
  BK_TCP_RST = 5,
} bk__tcp_flag;

/* Per-flow states (0: no state, the flow is not tracked). */
typedef enum bk__tcp_state {
  BK_TCP_NONE = 0,
  BK_TCP_S_SYN = 1,
  BK_TCP_S_SYNACK = 2,
  BK_TCP_S_ESTABLISHED = 3,
  BK_TCP_S_FIN_WAIT = 4,
  BK_TCP_S_CLOSING = 5,
} bk__tcp_state;
#define BK_TCP_N_STATES 5u

typedef enum bk__tcp_kind {
  BK_TCP_CLOSED,
  BK_TCP_RESET,
  BK_TCP_REFUSED,
  BK_TCP_HALF_OPEN,
  BK_TCP_OPEN,
  BK_TCP_HALF_CLOSED,
  BK_TCP_N_KINDS
} bk__tcp_kind;

/* What a packet does to a flow in a given state. */
typedef enum bk__tcp_action {
  BK_TCP_KEEP = 0,   /* nothing changes (or an unknown flow's packet) */
  BK_TCP_INSERT = 1, /* a new flow: insert with the new state */
  BK_TCP_UPDATE = 2, /* a new state */
  BK_TCP_DELETE = 3, /* the flow ends */
} bk__tcp_action;

typedef struct bk__tcp_event {
  uint32_t flow;
  uint8_t flag; /* bk__tcp_flag */
} bk__tcp_event;

typedef struct bk__tcp_trace_config {
  uint64_t n_flows; /* 1..2^31 */
  uint64_t seed;
  double data_mean; /* mean data packets per established flow; 0: 4 */
  double duration;  /* flows start in [0, duration); 0: n_flows */
  double gap;       /* mean gap between a flow's packets; 0: 50 */
} bk__tcp_trace_config;

typedef struct bk__tcp_trace {
  uint64_t n_flows;
  uint64_t seed;
  size_t n_events;
  bk__tcp_event *events;
  uint64_t kinds[BK_TCP_N_KINDS]; /* flows of each kind */
} bk__tcp_trace;

/** Generate a trace. Errors: BK_EINVAL (n_flows out of range, a negative
 * or non-finite parameter), BK_ENOMEM. Cost: O(events log events). */
bk_status bk__tcp_trace_generate(const bk__tcp_trace_config *cfg,
                                 bk__tcp_trace *out);
void bk__tcp_trace_free(bk__tcp_trace *t);

/** Flow `flow`'s 8-byte key (source IPv4 then destination, big-endian). */
void bk__tcp_flow_key(uint64_t seed, uint32_t flow, unsigned char key[8]);

/** The reference state machine: what `flag` does to a flow in `state`
 * (BK_TCP_NONE for an untracked flow); *next gets the new state for INSERT
 * and UPDATE. */
bk__tcp_action bk__tcp_next(unsigned state, unsigned flag, unsigned *next);

const char *bk__tcp_kind_name(bk__tcp_kind kind);

/** The most flows the reference state machine tracks at once over the
 * trace (what a state store must hold). Errors: BK_EINVAL, BK_ENOMEM. */
bk_status bk__tcp_trace_peak(const bk__tcp_trace *t, uint64_t *peak);

#ifdef __cplusplus
}
#endif

#endif
