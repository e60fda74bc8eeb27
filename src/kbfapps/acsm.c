/* SPDX-License-Identifier: MIT */
/*
 * The ACSM monitor of acsm.h: replays a TCP trace into a store and scores
 * every answer against the reference state machine.
 */
#include "kbfapps/acsm.h"

#include <stdlib.h>

#include "kbfapps/sbf.h"

void bk__acsm_score(bk__acsm_counts *c, unsigned true_state,
                    bk__acsm_answer answer, unsigned state) {
  c->queries++;
  if (true_state != BK_TCP_NONE) {
    if (answer != BK_ACSM_FOUND)
      c->false_negatives++;
    else if (state != true_state)
      c->wrong_state++;
  } else if (answer == BK_ACSM_FOUND) {
    c->false_positives++;
  } else if (answer == BK_ACSM_UNKNOWN) {
    c->unknown_absent++;
  }
  c->total_errors = c->false_negatives + c->false_positives + c->wrong_state +
                    c->unknown_absent;
}

static bool refused(bk_status st) {
  return st == BK_ENOTFOUND || st == BK_EUNDECODABLE || st == BK_EFULL ||
         st == BK_ESATURATED;
}

bk_status bk__acsm_run(const bk__tcp_trace *trace, const bk__acsm_store *store,
                       bk__acsm_result *out) {
  if (!trace || !store || !out || !store->query || !store->insert ||
      !store->update || !store->remove || (trace->n_events && !trace->events))
    return BK_EINVAL;
  bk__acsm_result r = {0};
  uint8_t *truth = calloc(trace->n_flows ? trace->n_flows : 1, 1);
  uint8_t *saw = calloc(trace->n_flows ? trace->n_flows : 1, 1);
  if (!truth || !saw) {
    free(truth);
    free(saw);
    return BK_ENOMEM;
  }
  bk_status st = BK_OK;
  uint64_t tracked = 0;
  unsigned char key[8];
  for (size_t i = 0; i < trace->n_events; i++) {
    const bk__tcp_event *e = &trace->events[i];
    if (e->flow >= trace->n_flows) {
      st = BK_EINVAL;
      goto done;
    }
    bk__tcp_flow_key(trace->seed, e->flow, key);
    bk__acsm_answer ans = BK_ACSM_ABSENT;
    unsigned got = 0;
    st = store->query(store->ctx, key, &ans, &got);
    if (st != BK_OK) goto done;
    bk__acsm_score(&r.during, truth[e->flow], ans, got);
    /* The monitor acts on the store's answer. */
    bk_status op = BK_OK;
    bool issued = true;
    if (ans == BK_ACSM_FOUND || ans == BK_ACSM_ABSENT) {
      unsigned to = 0;
      unsigned from = ans == BK_ACSM_FOUND ? got : BK_TCP_NONE;
      switch (bk__tcp_next(from, e->flag, &to)) {
        case BK_TCP_INSERT:
          r.inserts++;
          op = store->insert(store->ctx, key, to);
          break;
        case BK_TCP_UPDATE:
          r.updates++;
          op = store->update(store->ctx, key, from, to);
          break;
        case BK_TCP_DELETE:
          r.deletes++;
          op = store->remove(store->ctx, key, from);
          break;
        case BK_TCP_KEEP:
          issued = false;
          break;
      }
    } else if (e->flag == BK_TCP_RST && store->unknown_delete) {
      r.deletes++;
      op = store->unknown_delete(store->ctx, key);
    } else {
      issued = false;
    }
    if (issued && op != BK_OK) {
      if (!refused(op)) {
        st = op;
        goto done;
      }
      r.refused++;
    }
    /* The reference moves by the truth. */
    unsigned to = 0;
    switch (bk__tcp_next(truth[e->flow], e->flag, &to)) {
      case BK_TCP_INSERT:
        tracked++;
        if (tracked > r.peak_tracked) r.peak_tracked = tracked;
        truth[e->flow] = (uint8_t)to;
        break;
      case BK_TCP_UPDATE:
        truth[e->flow] = (uint8_t)to;
        break;
      case BK_TCP_DELETE:
        tracked--;
        truth[e->flow] = BK_TCP_NONE;
        break;
      case BK_TCP_KEEP:
        break;
    }
    if (e->flag == BK_TCP_FIN) saw[e->flow] |= 1;
    if (e->flag == BK_TCP_RST) saw[e->flow] |= 2;
  }
  for (uint32_t f = 0; f < trace->n_flows; f++) {
    bk__tcp_flow_key(trace->seed, f, key);
    bk__acsm_answer ans = BK_ACSM_ABSENT;
    unsigned got = 0;
    st = store->query(store->ctx, key, &ans, &got);
    if (st != BK_OK) goto done;
    bk__acsm_score(&r.final, truth[f], ans, got);
    r.suspicious_fin += (saw[f] & 1) != 0;
    r.suspicious_rst += (saw[f] & 2) != 0;
  }
  r.tracked_end = tracked;
  *out = r;
done:
  free(truth);
  free(saw);
  return st;
}

/* ---- the sBF as a store -------------------------------------------------- */

static bk_status sbf_query(void *ctx, const unsigned char key[8],
                           bk__acsm_answer *answer, unsigned *state) {
  bk__sbf_result res;
  unsigned v = 0;
  bk_status st = bk__sbf_lookup(ctx, key, 8, &res, &v);
  if (st != BK_OK) return st;
  *answer = res == BK_SBF_FOUND    ? BK_ACSM_FOUND
            : res == BK_SBF_ABSENT ? BK_ACSM_ABSENT
                                   : BK_ACSM_UNKNOWN;
  *state = v;
  return BK_OK;
}

static bk_status sbf_insert(void *ctx, const unsigned char key[8],
                            unsigned state) {
  return bk__sbf_insert(ctx, key, 8, state);
}

static bk_status sbf_update(void *ctx, const unsigned char key[8],
                            unsigned from, unsigned to) {
  (void)from;
  return bk__sbf_update(ctx, key, 8, to);
}

static bk_status sbf_remove(void *ctx, const unsigned char key[8],
                            unsigned state) {
  (void)state;
  return bk__sbf_delete(ctx, key, 8);
}

static bk_status sbf_unknown_delete(void *ctx, const unsigned char key[8]) {
  return bk__sbf_delete(ctx, key, 8);
}

bk__acsm_store bk__acsm_sbf_store(void *sbf) {
  return (bk__acsm_store){.name = "sBF",
                          .ctx = sbf,
                          .query = sbf_query,
                          .insert = sbf_insert,
                          .update = sbf_update,
                          .remove = sbf_remove,
                          .unknown_delete = sbf_unknown_delete};
}
