/* SPDX-License-Identifier: MIT */
/* The synthetic TCP trace, the reference state machine and the ACSM
 * monitor (src/kbfapps/tcptrace.h, acsm.h): the trace's shape, an exact
 * store gives no error, and an sBF's error counts equal a recount against
 * an independent reference map. */
#include <stdlib.h>
#include <string.h>

#include "kbfapps/acsm.h"
#include "kbfapps/sbf.h"
#include "kbfapps/tcptrace.h"
#include "testutil.h"

static bk__tcp_trace make_trace(uint64_t flows, uint64_t seed) {
  bk__tcp_trace t;
  bk__tcp_trace_config c = {
      .n_flows = flows, .seed = seed, .gap = 0.01 * (double)flows};
  assert_bk_ok(bk__tcp_trace_generate(&c, &t));
  return t;
}

static void test_state_machine(void **state) {
  (void)state;
  unsigned to;
  assert_int_equal(bk__tcp_next(BK_TCP_NONE, BK_TCP_SYN, &to), BK_TCP_INSERT);
  assert_int_equal(to, BK_TCP_S_SYN);
  assert_int_equal(bk__tcp_next(BK_TCP_NONE, BK_TCP_ACK, &to), BK_TCP_KEEP);
  assert_int_equal(bk__tcp_next(BK_TCP_NONE, BK_TCP_RST, &to), BK_TCP_KEEP);
  assert_int_equal(bk__tcp_next(BK_TCP_S_SYN, BK_TCP_SYN, &to), BK_TCP_KEEP);
  assert_int_equal(bk__tcp_next(BK_TCP_S_SYN, BK_TCP_SYNACK, &to),
                   BK_TCP_UPDATE);
  assert_int_equal(to, BK_TCP_S_SYNACK);
  assert_int_equal(bk__tcp_next(BK_TCP_S_SYNACK, BK_TCP_ACK, &to),
                   BK_TCP_UPDATE);
  assert_int_equal(to, BK_TCP_S_ESTABLISHED);
  assert_int_equal(bk__tcp_next(BK_TCP_S_ESTABLISHED, BK_TCP_ACK, &to),
                   BK_TCP_KEEP);
  assert_int_equal(bk__tcp_next(BK_TCP_S_ESTABLISHED, BK_TCP_FIN, &to),
                   BK_TCP_UPDATE);
  assert_int_equal(to, BK_TCP_S_FIN_WAIT);
  assert_int_equal(bk__tcp_next(BK_TCP_S_FIN_WAIT, BK_TCP_ACK, &to),
                   BK_TCP_KEEP);
  assert_int_equal(bk__tcp_next(BK_TCP_S_FIN_WAIT, BK_TCP_FIN, &to),
                   BK_TCP_UPDATE);
  assert_int_equal(to, BK_TCP_S_CLOSING);
  assert_int_equal(bk__tcp_next(BK_TCP_S_CLOSING, BK_TCP_ACK, &to),
                   BK_TCP_DELETE);
  for (unsigned s = BK_TCP_S_SYN; s <= BK_TCP_S_CLOSING; s++)
    assert_int_equal(bk__tcp_next(s, BK_TCP_RST, &to), BK_TCP_DELETE);
  assert_int_equal(bk__tcp_next(99, BK_TCP_SYN, &to), BK_TCP_KEEP);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Same seed, same trace; every flow's packets are its kind's sequence, in
 * order; kinds near their shares; keys distinct. */
static void test_trace_shape(void **state) {
  (void)state;
  const uint64_t flows = 20000;
  bk__tcp_trace t = make_trace(flows, 9), u = make_trace(flows, 9);
  assert_int_equal(t.n_events, u.n_events);
  for (size_t i = 0; i < t.n_events; i++) {
    assert_int_equal(t.events[i].flow, u.events[i].flow);
    assert_int_equal(t.events[i].flag, u.events[i].flag);
  }
  bk__tcp_trace_free(&u);
  /* Shares: Binomial(20000, s); 6 sd is at most 6 * sqrt(20000 / 4) = 425. */
  const double share[BK_TCP_N_KINDS] = {0.55, 0.10, 0.05, 0.10, 0.15, 0.05};
  uint64_t sum = 0;
  for (unsigned k = 0; k < BK_TCP_N_KINDS; k++) {
    double want = share[k] * (double)flows;
    assert_true((double)t.kinds[k] > want - 425 &&
                (double)t.kinds[k] < want + 425);
    sum += t.kinds[k];
  }
  assert_int_equal(sum, flows);
  /* Replay each flow through the reference machine: its packets drive it
   * from nothing to one of the end states of its kind's sequence, and
   * never hit a packet the machine ignores except SYN repeats and data
   * ACKs (KEEP in a tracked state). */
  uint8_t *st = calloc(flows, 1);
  uint8_t *ended = calloc(flows, 1);
  uint64_t keeps_untracked = 0;
  for (size_t i = 0; i < t.n_events; i++) {
    const bk__tcp_event *e = &t.events[i];
    assert_true(e->flow < flows);
    assert_false(ended[e->flow]); /* nothing after the end */
    unsigned to;
    bk__tcp_action a = bk__tcp_next(st[e->flow], e->flag, &to);
    if (a == BK_TCP_INSERT || a == BK_TCP_UPDATE) st[e->flow] = (uint8_t)to;
    if (a == BK_TCP_DELETE) {
      st[e->flow] = 0;
      ended[e->flow] = 1;
    }
    if (a == BK_TCP_KEEP && st[e->flow] == 0) keeps_untracked++;
  }
  assert_int_equal(keeps_untracked, 0);
  uint64_t ended_n = 0, open_n = 0;
  for (uint64_t f = 0; f < flows; f++) {
    ended_n += ended[f];
    open_n += st[f] != 0;
  }
  assert_int_equal(ended_n, t.kinds[BK_TCP_CLOSED] + t.kinds[BK_TCP_RESET] +
                                t.kinds[BK_TCP_REFUSED]);
  assert_int_equal(open_n, t.kinds[BK_TCP_HALF_OPEN] + t.kinds[BK_TCP_OPEN] +
                               t.kinds[BK_TCP_HALF_CLOSED]);
  free(st);
  free(ended);
  uint64_t *keys = malloc(flows * sizeof *keys);
  for (uint32_t f = 0; f < flows; f++) {
    unsigned char k[8];
    bk__tcp_flow_key(t.seed, f, k);
    memcpy(&keys[f], k, 8);
  }
  qsort(keys, flows, sizeof *keys, cmp_u64);
  for (uint64_t f = 1; f < flows; f++) assert_true(keys[f] != keys[f - 1]);
  free(keys);
  bk__tcp_trace_free(&t);
  bk__tcp_trace_config bad = {.n_flows = 0};
  assert_int_equal(bk__tcp_trace_generate(&bad, &t), BK_EINVAL);
  bad = (bk__tcp_trace_config){.n_flows = 10, .gap = -1};
  assert_int_equal(bk__tcp_trace_generate(&bad, &t), BK_EINVAL);
  bad = (bk__tcp_trace_config){.n_flows = 10, .data_mean = 1e9};
  assert_int_equal(bk__tcp_trace_generate(&bad, &t), BK_EINVAL);
}

/* ---- an exact store: open addressing over 8-byte keys ------------------ */

typedef struct exact {
  uint64_t *keys; /* 0: empty (flow keys are never 0 here: checked) */
  uint8_t *state;
  size_t cap;
} exact;

static size_t slot(const exact *x, uint64_t k) {
  size_t i = (size_t)(k * 0x9E3779B97F4A7C15ull) & (x->cap - 1);
  while (x->keys[i] && x->keys[i] != k) i = (i + 1) & (x->cap - 1);
  return i;
}

static uint64_t word(const unsigned char key[8]) {
  uint64_t w;
  memcpy(&w, key, 8);
  assert_true(w != 0);
  return w;
}

static bk_status ex_query(void *ctx, const unsigned char key[8],
                          bk__acsm_answer *a, unsigned *s) {
  exact *x = ctx;
  size_t i = slot(x, word(key));
  if (!x->keys[i] || !x->state[i]) {
    *a = BK_ACSM_ABSENT;
  } else {
    *a = BK_ACSM_FOUND;
    *s = x->state[i];
  }
  return BK_OK;
}

static bk_status ex_set(void *ctx, const unsigned char key[8], unsigned s) {
  exact *x = ctx;
  size_t i = slot(x, word(key));
  x->keys[i] = word(key);
  x->state[i] = (uint8_t)s; /* 0 marks deleted (the slot is kept) */
  return BK_OK;
}

static bk_status ex_update(void *ctx, const unsigned char key[8], unsigned from,
                           unsigned to) {
  (void)from;
  return ex_set(ctx, key, to);
}

static bk_status ex_remove(void *ctx, const unsigned char key[8], unsigned s) {
  (void)s;
  return ex_set(ctx, key, 0);
}

static void test_exact_store_no_errors(void **state) {
  (void)state;
  const uint64_t flows = 20000;
  bk__tcp_trace t = make_trace(flows, 4);
  exact x = {calloc(65536, 8), calloc(65536, 1), 65536};
  bk__acsm_store s = {"exact",   &x,        ex_query, ex_set,
                      ex_update, ex_remove, NULL};
  bk__acsm_result r;
  assert_bk_ok(bk__acsm_run(&t, &s, &r));
  assert_int_equal(r.during.queries, t.n_events);
  assert_int_equal(r.during.total_errors, 0);
  assert_int_equal(r.final.queries, flows);
  assert_int_equal(r.final.total_errors, 0);
  assert_int_equal(r.refused, 0);
  /* Every flow is inserted once; the ended ones deleted once. */
  assert_int_equal(r.inserts, flows);
  assert_int_equal(r.deletes, t.kinds[BK_TCP_CLOSED] + t.kinds[BK_TCP_RESET] +
                                  t.kinds[BK_TCP_REFUSED]);
  assert_int_equal(r.tracked_end, t.kinds[BK_TCP_HALF_OPEN] +
                                      t.kinds[BK_TCP_OPEN] +
                                      t.kinds[BK_TCP_HALF_CLOSED]);
  assert_int_equal(r.suspicious_rst,
                   t.kinds[BK_TCP_RESET] + t.kinds[BK_TCP_REFUSED]);
  assert_int_equal(r.suspicious_fin,
                   t.kinds[BK_TCP_CLOSED] + t.kinds[BK_TCP_HALF_CLOSED]);
  assert_true(r.peak_tracked >= r.tracked_end);
  uint64_t peak = 0;
  assert_bk_ok(bk__tcp_trace_peak(&t, &peak));
  assert_int_equal(peak, r.peak_tracked); /* the exact store's walk */
  free(x.keys);
  free(x.state);
  bk__tcp_trace_free(&t);
}

/* ---- an sBF, every answer recorded and recounted ------------------------ */

typedef struct recorder {
  bk__acsm_store inner;
  bk__acsm_answer *answers;
  uint8_t *states;
  size_t n, cap;
} recorder;

static bk_status rec_query(void *ctx, const unsigned char key[8],
                           bk__acsm_answer *a, unsigned *s) {
  recorder *r = ctx;
  bk_status st = r->inner.query(r->inner.ctx, key, a, s);
  if (st == BK_OK && r->n < r->cap) {
    r->answers[r->n] = *a;
    r->states[r->n] = *a == BK_ACSM_FOUND ? (uint8_t)*s : 0;
    r->n++;
  }
  return st;
}
static bk_status rec_insert(void *c, const unsigned char k[8], unsigned s) {
  recorder *r = c;
  return r->inner.insert(r->inner.ctx, k, s);
}
static bk_status rec_update(void *c, const unsigned char k[8], unsigned f,
                            unsigned t) {
  recorder *r = c;
  return r->inner.update(r->inner.ctx, k, f, t);
}
static bk_status rec_remove(void *c, const unsigned char k[8], unsigned s) {
  recorder *r = c;
  return r->inner.remove(r->inner.ctx, k, s);
}
static bk_status rec_unknown_delete(void *c, const unsigned char k[8]) {
  recorder *r = c;
  return r->inner.unknown_delete(r->inner.ctx, k);
}

/* A crowded sBF (sized for a tenth of the flows) errs; the monitor's
 * counts must equal a recount of the recorded answers against a reference
 * map kept here from the trace alone (flow -> state, by its own walk). */
static void test_sbf_counts_against_reference(void **state) {
  (void)state;
  const uint64_t flows = 20000;
  bk__tcp_trace t = make_trace(flows, 5);
  bk__sbf *f = NULL;
  assert_bk_ok(bk__sbf_create(&f, 6000, 3, 1));
  size_t n_answers = t.n_events + flows;
  recorder rec = {bk__acsm_sbf_store(f),
                  malloc(n_answers * sizeof(bk__acsm_answer)),
                  malloc(n_answers), 0, n_answers};
  bk__acsm_store s = {"rec",      &rec,       rec_query,         rec_insert,
                      rec_update, rec_remove, rec_unknown_delete};
  bk__acsm_result r;
  assert_bk_ok(bk__acsm_run(&t, &s, &r));
  assert_int_equal(rec.n, t.n_events + flows);
  uint8_t *truth = calloc(flows, 1);
  uint64_t fn = 0, fp = 0, wrong = 0, unk = 0;
  for (size_t i = 0; i < rec.n; i++) {
    unsigned flow =
        i < t.n_events ? t.events[i].flow : (unsigned)(i - t.n_events);
    unsigned tr = truth[flow];
    bk__acsm_answer a = rec.answers[i];
    if (tr && a != BK_ACSM_FOUND) fn++;
    if (tr && a == BK_ACSM_FOUND && rec.states[i] != tr) wrong++;
    if (!tr && a == BK_ACSM_FOUND) fp++;
    if (!tr && a == BK_ACSM_UNKNOWN) unk++;
    if (i < t.n_events) {
      /* the reference walk: SYN opens, RST or the last ACK ends, FIN and
       * the handshake advance; written out here, not with bk__tcp_next */
      unsigned fl = t.events[i].flag;
      if (tr == 0 && fl == BK_TCP_SYN)
        truth[flow] = 1;
      else if (tr && fl == BK_TCP_RST)
        truth[flow] = 0;
      else if (tr == 1 && fl == BK_TCP_SYNACK)
        truth[flow] = 2;
      else if (tr == 2 && fl == BK_TCP_ACK)
        truth[flow] = 3;
      else if ((tr == 3 || tr == 4) && fl == BK_TCP_FIN)
        truth[flow] = (uint8_t)(tr + 1);
      else if (tr == 5 && fl == BK_TCP_ACK)
        truth[flow] = 0;
    }
    if (i + 1 == t.n_events) {
      assert_int_equal(r.during.false_negatives, fn);
      assert_int_equal(r.during.false_positives, fp);
      assert_int_equal(r.during.wrong_state, wrong);
      assert_int_equal(r.during.unknown_absent, unk);
      assert_int_equal(r.during.total_errors, fn + fp + wrong + unk);
      fn = fp = wrong = unk = 0;
    }
  }
  assert_int_equal(r.final.false_negatives, fn);
  assert_int_equal(r.final.false_positives, fp);
  assert_int_equal(r.final.wrong_state, wrong);
  assert_int_equal(r.final.unknown_absent, unk);
  /* Crowded: the sBF did err, in more than one way. */
  assert_true(r.during.false_negatives > 0);
  assert_true(r.during.false_positives + r.during.wrong_state > 0);
  free(truth);
  free(rec.answers);
  free(rec.states);
  bk__sbf_destroy(f);
  bk__tcp_trace_free(&t);
}

static void test_bad_inputs(void **state) {
  (void)state;
  bk__tcp_trace t = make_trace(10, 1);
  bk__acsm_result r;
  bk__acsm_store none = {0};
  assert_int_equal(bk__acsm_run(&t, &none, &r), BK_EINVAL);
  assert_int_equal(bk__acsm_run(NULL, &none, &r), BK_EINVAL);
  bk__sbf *f = NULL;
  assert_bk_ok(bk__sbf_create(&f, 100, 3, 1));
  bk__acsm_store s = bk__acsm_sbf_store(f);
  assert_int_equal(bk__acsm_run(&t, &s, NULL), BK_EINVAL);
  t.events[0].flow = 10; /* a flow the trace does not have */
  assert_int_equal(bk__acsm_run(&t, &s, &r), BK_EINVAL);
  bk__sbf_destroy(f);
  bk__tcp_trace_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_machine),
      cmocka_unit_test(test_trace_shape),
      cmocka_unit_test(test_exact_store_no_errors),
      cmocka_unit_test(test_sbf_counts_against_reference),
      cmocka_unit_test(test_bad_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
