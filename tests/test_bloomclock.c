/* SPDX-License-Identifier: MIT */
/*
 * bk_bloomclock and bk_vclock: the protocol on hand-built executions, no
 * false negative against the vector clock on random executions (with and
 * without saturation), the merge/compare kernels against a 64-bit reference
 * model, pr_p against a direct summation and a Monte-Carlo estimate, the
 * parameter function against measurement, the wire form (round trip,
 * receive, hostile bytes, golden blob), bad arguments and OOM injection.
 *
 * Regenerate the golden blob (only when the format changes, with a version
 * bump) with
 *   BK_WRITE_GOLDEN=1 BK_TEST_DATA=<checkout>/tests/data ./test_bloomclock
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomclock/bloomclock_internal.h"
#include "bloomkit/bloomclock.h"
#include "bloomkit/params.h"
#include "testutil.h"

static bk_bloomclock *make_bc(uint64_t m, unsigned k, unsigned width,
                              uint64_t pid) {
  bk_bloomclock *c = NULL;
  assert_bk_ok(bk_bloomclock_create(
      &c, &(bk_bloomclock_config){
              .m = m, .k = k, .counter_bits = width, .process_id = pid}));
  assert_non_null(c);
  return c;
}

static bk_vclock *make_vc(uint64_t p, uint64_t pid) {
  bk_vclock *v = NULL;
  assert_bk_ok(bk_vclock_create(
      &v, &(bk_vclock_config){.processes = p, .process_id = pid}));
  return v;
}

static uint64_t value(const bk_bloomclock *c, uint64_t i) {
  uint64_t v;
  assert_bk_ok(bk_bloomclock_get(c, i, &v));
  return v;
}

static bk_causality bc_rel(const bk_bloomclock *y, const bk_bloomclock *z) {
  bk_causality r;
  assert_bk_ok(bk_bloomclock_compare(y, z, &r));
  return r;
}

static bk_causality vc_rel(const bk_vclock *y, const bk_vclock *z) {
  bk_causality r;
  assert_bk_ok(bk_vclock_compare(y, z, &r));
  return r;
}

static void test_create_config(void **state) {
  (void)state;
  bk_bloomclock *c = (bk_bloomclock *)&c, *const sentinel = c;
  const bk_bloomclock_config bad[] = {
      {.m = 0, .k = 3},
      {.m = BK_BLOOMCLOCK_M_MAX + 1, .k = 3},
      {.m = 64, .k = 0},
      {.m = 64, .k = 65},
      {.m = 64, .k = 3, .counter_bits = 4},
      {.m = 64, .k = 3, .counter_bits = 64},
      {.m = 64, .k = 3, .hash_alg = BK_HASH_MURMUR3, .seed = (uint64_t)1 << 32},
      {.m = 64, .k = 3, .hash_alg = (bk_hash_alg)9},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (bk_bloomclock_create(&c, &bad[i]) != BK_EINVAL)
      fail_msg("bad config %zu accepted", i);
    assert_ptr_equal(c, sentinel);
  }
  assert_bk_status(bk_bloomclock_create(NULL, &bad[0]), BK_EINVAL);
  assert_bk_status(bk_bloomclock_create(&c, NULL), BK_EINVAL);
  c = make_bc(100, 3, 0, 7);
  bk_bloomclock_info in;
  assert_bk_ok(bk_bloomclock_info_get(c, &in));
  assert_int_equal(in.counter_bits, 8);
  assert_int_equal(in.m, 100);
  assert_int_equal(in.k, 3);
  assert_int_equal(in.process_id, 7);
  assert_int_equal(in.hash_alg, BK_HASH_XXH3);
  assert_int_equal(in.events, 0);
  assert_true(in.sum == 0);
  bk_bloomclock_destroy(c);
  bk_bloomclock_destroy(NULL);

  bk_vclock *v = (bk_vclock *)&v, *const vs = v;
  assert_bk_status(bk_vclock_create(&v, &(bk_vclock_config){.processes = 0}),
                   BK_EINVAL);
  assert_bk_status(bk_vclock_create(&v, &(bk_vclock_config){.processes = 4,
                                                            .process_id = 4}),
                   BK_EINVAL);
  assert_bk_status(
      bk_vclock_create(
          &v, &(bk_vclock_config){.processes = BK_VCLOCK_PROCESSES_MAX + 1}),
      BK_EINVAL);
  assert_ptr_equal(v, vs);
  bk_vclock_destroy(NULL);
}

/* ---- the protocol on hand-built executions -------------------------------
 *
 * Three processes (the slides' system model):
 *
 *   P0:  a = e0^0 (internal)   s = e0^1 (send m to P1)    t = e0^2 (internal)
 *   P1:  b = e1^0 (internal)   r = e1^1 (receive m)       u = e1^2 (send m' to
 * P2) P2:  c = e2^0 (internal)   w = e2^1 (receive m')
 *
 * a -> s -> r -> u -> w, b -> r, c -> w; t is concurrent with r, u, w, b,
 * c; b and a are concurrent. Each Bloom clock must equal, counter by
 * counter, the sum of the increments of the events in the causal past
 * (with max at receives), which the test recomputes from the event hash.
 */
static void add_event(uint64_t *expect, const bk_bloomclock *c, uint64_t pid,
                      uint64_t x) {
  uint64_t idx[64];
  bk__bloomclock_event_indices(c, pid, x, idx);
  for (unsigned j = 0; j < c->k; j++) expect[idx[j]]++;
}

static void assert_values(const bk_bloomclock *c, const uint64_t *expect) {
  for (uint64_t i = 0; i < c->m; i++) assert_int_equal(value(c, i), expect[i]);
}

static void test_slides_execution(void **state) {
  (void)state;
  enum { M = 32, K = 3 };
  for (unsigned width = 8; width <= 32; width *= 2) {
    bk_bloomclock *P[3];
    bk_vclock *V[3];
    for (int i = 0; i < 3; i++) {
      P[i] = make_bc(M, K, width, (uint64_t)i);
      V[i] = make_vc(3, (uint64_t)i);
    }
    bk_bloomclock *snap[8];
    bk_vclock *vsnap[8];
    for (int i = 0; i < 8; i++) {
      snap[i] = make_bc(M, K, width, 0);
      vsnap[i] = make_vc(3, 0);
    }
    uint64_t e0[M] = {0}, e1[M] = {0}, e2[M] = {0};
    enum { A, S, T, B, R, U, C, W };
#define EVENT(proc, id, vc_call, bc_call)                \
  do {                                                   \
    assert_bk_ok(vc_call);                               \
    assert_bk_ok(bc_call);                               \
    assert_bk_ok(bk_bloomclock_copy(snap[id], P[proc])); \
    assert_bk_ok(bk_vclock_copy(vsnap[id], V[proc]));    \
  } while (0)
    /* a, s at P0 */
    EVENT(0, A, bk_vclock_tick(V[0]), bk_bloomclock_tick(P[0]));
    add_event(e0, P[0], 0, 0);
    assert_values(P[0], e0);
    EVENT(0, S, bk_vclock_tick(V[0]), bk_bloomclock_tick(P[0]));
    add_event(e0, P[0], 0, 1);
    assert_values(P[0], e0);
    size_t len, w;
    assert_bk_ok(bk_bloomclock_serialized_size(P[0], &len));
    unsigned char *m1 = malloc(len);
    assert_bk_ok(bk_bloomclock_serialize(P[0], m1, len, &w));
    uint64_t m1_expect[M];
    memcpy(m1_expect, e0, sizeof e0);
    bk_vclock *vm1 = make_vc(3, 0);
    assert_bk_ok(bk_vclock_copy(vm1, V[0]));
    EVENT(0, T, bk_vclock_tick(V[0]), bk_bloomclock_tick(P[0]));
    add_event(e0, P[0], 0, 2);
    /* b, r (receive m through the wire form), u at P1 */
    EVENT(1, B, bk_vclock_tick(V[1]), bk_bloomclock_tick(P[1]));
    add_event(e1, P[1], 1, 0);
    EVENT(1, R, bk_vclock_merge(V[1], vm1), bk_bloomclock_receive(P[1], m1, w));
    for (int i = 0; i < M; i++)
      e1[i] = e1[i] > m1_expect[i] ? e1[i] : m1_expect[i];
    add_event(e1, P[1], 1, 1);
    assert_values(P[1], e1);
    EVENT(1, U, bk_vclock_tick(V[1]), bk_bloomclock_tick(P[1]));
    add_event(e1, P[1], 1, 2);
    /* c, w (receive m' as an object) at P2 */
    EVENT(2, C, bk_vclock_tick(V[2]), bk_bloomclock_tick(P[2]));
    add_event(e2, P[2], 2, 0);
    EVENT(2, W, bk_vclock_merge(V[2], vsnap[U]),
          bk_bloomclock_merge(P[2], snap[U]));
    for (int i = 0; i < M; i++) e2[i] = e2[i] > e1[i] ? e2[i] : e1[i];
    add_event(e2, P[2], 2, 1);
    assert_values(P[2], e2);
#undef EVENT
    /* The vector clocks are exact. */
    uint32_t x;
    assert_bk_ok(bk_vclock_get(vsnap[W], 0, &x));
    assert_int_equal(x, 2);
    assert_bk_ok(bk_vclock_get(vsnap[W], 1, &x));
    assert_int_equal(x, 3);
    assert_bk_ok(bk_vclock_get(vsnap[W], 2, &x));
    assert_int_equal(x, 2);
    const int before[][2] = {{A, S}, {A, R}, {S, R}, {R, U}, {U, W}, {A, W},
                             {B, R}, {B, W}, {C, W}, {A, T}, {S, T}};
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
      const int y = before[i][0], z = before[i][1];
      assert_int_equal(vc_rel(vsnap[y], vsnap[z]), BK_CAUSAL_BEFORE);
      assert_int_equal(vc_rel(vsnap[z], vsnap[y]), BK_CAUSAL_AFTER);
      /* No false negative: every true "before" is found. */
      assert_int_equal(bc_rel(snap[y], snap[z]), BK_CAUSAL_BEFORE);
      assert_int_equal(bc_rel(snap[z], snap[y]), BK_CAUSAL_AFTER);
    }
    const int concurrent[][2] = {{T, R}, {T, U}, {T, W}, {T, B},
                                 {A, B}, {C, R}, {C, A}, {B, S}};
    for (size_t i = 0; i < sizeof concurrent / sizeof concurrent[0]; i++) {
      const int y = concurrent[i][0], z = concurrent[i][1];
      assert_int_equal(vc_rel(vsnap[y], vsnap[z]), BK_CAUSAL_CONCURRENT);
      /* A Bloom clock may call these "before" (false positive), but never
       * in both directions (that would be EQUAL, and distinct events in
       * these small clocks differ). */
      bk_causality r = bc_rel(snap[y], snap[z]);
      assert_int_not_equal(r, BK_CAUSAL_EQUAL);
    }
    for (int i = 0; i < 8; i++) {
      assert_int_equal(bc_rel(snap[i], snap[i]), BK_CAUSAL_EQUAL);
      assert_int_equal(vc_rel(vsnap[i], vsnap[i]), BK_CAUSAL_EQUAL);
      bk_bloomclock_destroy(snap[i]);
      bk_vclock_destroy(vsnap[i]);
    }
    for (int i = 0; i < 3; i++) {
      bk_bloomclock_destroy(P[i]);
      bk_vclock_destroy(V[i]);
    }
    bk_vclock_destroy(vm1);
    free(m1);
  }
}

/* ---- random executions ----------------------------------------------------
 */

typedef struct exec_stats {
  uint64_t pairs, positives, true_before, false_pos, concurrent, saturated;
} exec_stats;

/* p processes run n_events events (internal, send or receive of a pending
 * message, delivered in random order: channels are not FIFO). Every event's
 * Bloom and vector timestamps are recorded, then every ordered pair is
 * compared: the Bloom clock must find every "before" the vector clock finds. */
static exec_stats random_execution(uint64_t *rng, unsigned p, unsigned n_events,
                                   uint64_t m, unsigned k, unsigned width) {
  bk_bloomclock **P = calloc(p, sizeof *P);
  bk_vclock **V = calloc(p, sizeof *V);
  bk_bloomclock **ts = calloc(n_events, sizeof *ts);
  bk_vclock **vts = calloc(n_events, sizeof *vts);
  /* In-flight messages: the sender's Bloom clock on the wire, its vector
   * clock as an object, and the destination. */
  unsigned char **wire = calloc(n_events, sizeof *wire);
  size_t *wire_len = calloc(n_events, sizeof *wire_len);
  bk_vclock **vmsg = calloc(n_events, sizeof *vmsg);
  unsigned *dest = calloc(n_events, sizeof *dest);
  size_t in_flight = 0;
  for (unsigned i = 0; i < p; i++) {
    P[i] = make_bc(m, k, width, i);
    V[i] = make_vc(p, i);
  }
  for (unsigned e = 0; e < n_events; e++) {
    const unsigned i = (unsigned)(bk_test_next(rng) % p);
    const unsigned kind = (unsigned)(bk_test_next(rng) % 3);
    unsigned proc = i;
    if (kind == 2 && in_flight > 0) {
      size_t j = (size_t)(bk_test_next(rng) % in_flight);
      proc = dest[j];
      assert_bk_ok(bk_bloomclock_receive(P[proc], wire[j], wire_len[j]));
      assert_bk_ok(bk_vclock_merge(V[proc], vmsg[j]));
      free(wire[j]);
      bk_vclock_destroy(vmsg[j]);
      in_flight--;
      wire[j] = wire[in_flight];
      wire_len[j] = wire_len[in_flight];
      vmsg[j] = vmsg[in_flight];
      dest[j] = dest[in_flight];
    } else {
      assert_bk_ok(bk_bloomclock_tick(P[i]));
      assert_bk_ok(bk_vclock_tick(V[i]));
      if (kind == 1 && p > 1) {
        size_t n;
        assert_bk_ok(bk_bloomclock_serialized_size(P[i], &n));
        wire[in_flight] = malloc(n);
        assert_bk_ok(bk_bloomclock_serialize(P[i], wire[in_flight], n,
                                             &wire_len[in_flight]));
        vmsg[in_flight] = make_vc(p, i);
        assert_bk_ok(bk_vclock_copy(vmsg[in_flight], V[i]));
        unsigned to = (unsigned)(bk_test_next(rng) % (p - 1));
        dest[in_flight] = to >= i ? to + 1 : to;
        in_flight++;
      }
    }
    ts[e] = make_bc(m, k, width, 0);
    vts[e] = make_vc(p, 0);
    assert_bk_ok(bk_bloomclock_copy(ts[e], P[proc]));
    assert_bk_ok(bk_vclock_copy(vts[e], V[proc]));
  }
  exec_stats st = {0};
  for (unsigned y = 0; y < n_events; y++)
    for (unsigned z = 0; z < n_events; z++) {
      if (y == z) continue;
      const bk_causality truth = vc_rel(vts[y], vts[z]);
      const bk_causality got = bc_rel(ts[y], ts[z]);
      st.pairs++;
      const bool positive = got == BK_CAUSAL_BEFORE || got == BK_CAUSAL_EQUAL;
      st.positives += positive;
      assert_int_not_equal(truth, BK_CAUSAL_EQUAL); /* distinct events */
      if (truth == BK_CAUSAL_BEFORE) {
        st.true_before++;
        if (!positive)
          fail_msg("false negative: event %u -> %u, Bloom clock says %s", y, z,
                   bk_causality_name(got));
      } else {
        st.false_pos += positive;
        st.concurrent += truth == BK_CAUSAL_CONCURRENT;
      }
    }
  for (unsigned i = 0; i < p; i++) {
    bk_bloomclock_info in;
    assert_bk_ok(bk_bloomclock_info_get(P[i], &in));
    st.saturated += in.saturated;
    bk_bloomclock_destroy(P[i]);
    bk_vclock_destroy(V[i]);
  }
  for (unsigned e = 0; e < n_events; e++) {
    bk_bloomclock_destroy(ts[e]);
    bk_vclock_destroy(vts[e]);
  }
  for (size_t j = 0; j < in_flight; j++) {
    free(wire[j]);
    bk_vclock_destroy(vmsg[j]);
  }
  free(P);
  free(V);
  free(ts);
  free(vts);
  free(wire);
  free(wire_len);
  free(vmsg);
  free(dest);
  return st;
}

static void test_random_no_false_negative(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0xB10C);
  const unsigned n_events = BK_TEST_SLOW_BUILD ? 200 : 500;
  const struct {
    unsigned p, k, width;
    uint64_t m;
  } shapes[] = {{2, 2, 8, 16},    {8, 3, 8, 64},   {16, 2, 16, 32},
                {32, 4, 32, 128}, {64, 3, 8, 256}, {5, 1, 8, 8}};
  uint64_t fp_small = 0, fp_large = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    exec_stats st = random_execution(&rng, shapes[s].p, n_events, shapes[s].m,
                                     shapes[s].k, shapes[s].width);
    assert_true(st.true_before > 0);
    if (shapes[s].m == 8) fp_small = st.false_pos;
    if (shapes[s].m == 256) fp_large = st.false_pos;
  }
  /* The comparison can fail in the other direction: 8 counters for 500
   * events make many false positives, 256 counters for 64 processes fewer
   * (so the no-false-negative check above is not vacuous). */
  assert_true(fp_small > 0);
  assert_true(fp_small > fp_large);
}

/* 8-bit counters, 4 of them, k = 3, 3000 events: counters pass 255, so the
 * clocks renormalise and, where a counter stays at zero while another
 * grows, saturate. Still no false negative. */
static void test_saturation_no_false_negative(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x5A7);
  const unsigned n = BK_TEST_SLOW_BUILD ? 1200 : 3000;
  exec_stats st = random_execution(&rng, 3, n, 4, 3, 8);
  assert_true(st.true_before > 0);
  /* Saturation: one process, m = 2, k = 1: counter 1 is never... use a
   * hand-picked state instead: counter 0 at 0 keeps the minimum 0, so
   * renormalisation frees nothing and counter 1 must saturate. */
  bk_bloomclock *c = make_bc(2, 1, 8, 0);
  ((uint8_t *)c->counters)[1] = 254; /* value 254, one below "infinity" */
  bk_bloomclock *before = make_bc(2, 1, 8, 0);
  assert_bk_ok(bk_bloomclock_copy(before, c));
  /* Find an event that hits counter 1, and tick up to it. */
  uint64_t idx[1];
  for (;;) {
    bk__bloomclock_event_indices(c, 0, c->events, idx);
    if (idx[0] == 1) break;
    assert_bk_ok(bk_bloomclock_tick(c));
    ((uint8_t *)c->counters)[0] = 0; /* keep the minimum at zero */
    assert_bk_ok(bk_bloomclock_copy(before, c));
  }
  assert_bk_ok(bk_bloomclock_tick(c));
  assert_int_equal(value(c, 1), UINT64_MAX); /* saturated: infinity */
  assert_int_equal(c->base, 0);
  assert_int_equal(bc_rel(before, c), BK_CAUSAL_BEFORE);
  assert_int_equal(bc_rel(c, before), BK_CAUSAL_AFTER);
  /* Infinity stays and dominates any finite value. */
  assert_bk_ok(bk_bloomclock_tick(c));
  assert_int_equal(value(c, 1), UINT64_MAX);
  bk_bloomclock_info in;
  assert_bk_ok(bk_bloomclock_info_get(c, &in));
  assert_int_equal(in.saturated, 1);
  /* Renormalisation: every counter above zero makes room instead. */
  bk_bloomclock *r = make_bc(2, 1, 8, 0);
  ((uint8_t *)r->counters)[0] = 10;
  ((uint8_t *)r->counters)[1] = 254;
  for (;;) {
    bk__bloomclock_event_indices(r, 0, r->events, idx);
    if (idx[0] == 1) break;
    r->events++;
  }
  assert_bk_ok(bk_bloomclock_tick(r));
  assert_int_equal(r->base, 10);
  assert_int_equal(value(r, 0), 10);
  assert_int_equal(value(r, 1), 255); /* the true count, above 8 bits */
  bk_bloomclock_destroy(r);
  bk_bloomclock_destroy(before);
  bk_bloomclock_destroy(c);
}

/* ---- kernels against a reference ------------------------------------------
 *
 * Random clocks (random base up to 2^10 apart or far apart, counters with
 * some saturated) compared and merged, against the same computed on 64-bit
 * values with infinity as UINT64_MAX. */
static void random_state(uint64_t *rng, bk_bloomclock *c, uint64_t base) {
  c->base = base;
  for (uint64_t i = 0; i < c->m; i++) {
    uint64_t r = bk_test_next(rng);
    uint32_t v =
        (uint32_t)(r % 8 == 0 ? c->max : (r >> 8) % (r % 3 == 0 ? c->max : 6));
    if (c->width == 8) ((uint8_t *)c->counters)[i] = (uint8_t)v;
    if (c->width == 16) ((uint16_t *)c->counters)[i] = (uint16_t)v;
    if (c->width == 32) ((uint32_t *)c->counters)[i] = v;
  }
}

static void kernels_reference(void) {
  uint64_t rng = bk_test_seed(0xCE11);
  const uint64_t ms[] = {1, 7, 16, 33, 64, 100, 129, 1000};
  uint64_t *vy = malloc(1000 * 8), *vz = malloc(1000 * 8);
  int seen[4] = {0};
  for (unsigned width = 8; width <= 32; width *= 2)
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
      for (int round = 0; round < 200; round++) {
        const uint64_t m = ms[mi];
        bk_bloomclock *y = make_bc(m, 1, width, 0),
                      *z = make_bc(m, 1, width, 1);
        const uint64_t by = bk_test_next(&rng) % 4;
        uint64_t bz = by + bk_test_next(&rng) % 4;
        if (round % 10 == 0) bz = by + y->max + bk_test_next(&rng) % 3 - 1;
        if (round % 2)
          random_state(&rng, y, by), random_state(&rng, z, bz);
        else
          random_state(&rng, y, bz), random_state(&rng, z, by);
        /* Mostly-dominating pairs too, so BEFORE/AFTER/EQUAL all occur. */
        if (round % 4 == 1) assert_bk_ok(bk_bloomclock_copy(z, y));
        if (round % 4 == 2) {
          assert_bk_ok(bk_bloomclock_copy(z, y));
          assert_bk_ok(bk_bloomclock_tick(z));
        }
        bool z_ge_y = true, y_ge_z = true;
        for (uint64_t i = 0; i < m; i++) {
          vy[i] = value(y, i);
          vz[i] = value(z, i);
          z_ge_y &= vz[i] >= vy[i];
          y_ge_z &= vy[i] >= vz[i];
        }
        const bk_causality want =
            z_ge_y ? (y_ge_z ? BK_CAUSAL_EQUAL : BK_CAUSAL_BEFORE)
                   : (y_ge_z ? BK_CAUSAL_AFTER : BK_CAUSAL_CONCURRENT);
        seen[want]++;
        assert_int_equal(bc_rel(y, z), want);
        /* Merge (without its tick: through a copy, then subtract the tick
         * by comparing against the maximum before it). */
        bk_bloomclock *mz = make_bc(m, 1, width, 0);
        assert_bk_ok(bk_bloomclock_copy(mz, z));
        assert_bk_ok(bk_bloomclock_merge(mz, y));
        uint64_t idx[1];
        bk__bloomclock_event_indices(mz, mz->process_id, mz->events - 1, idx);
        for (uint64_t i = 0; i < m; i++) {
          const uint64_t want_v = vy[i] > vz[i] ? vy[i] : vz[i];
          const uint64_t got = value(mz, i);
          if (i == idx[0]) {
            assert_true(got >= want_v);
          } else if (got != want_v) {
            fail_msg("merge w%u m%llu counter %llu: got %llu want %llu", width,
                     (unsigned long long)m, (unsigned long long)i,
                     (unsigned long long)got, (unsigned long long)want_v);
          }
        }
        assert_true(bc_rel(y, mz) == BK_CAUSAL_BEFORE ||
                    bc_rel(y, mz) == BK_CAUSAL_EQUAL);
        assert_true(bc_rel(z, mz) == BK_CAUSAL_BEFORE ||
                    bc_rel(z, mz) == BK_CAUSAL_EQUAL);
        bk_bloomclock_destroy(mz);
        bk_bloomclock_destroy(y);
        bk_bloomclock_destroy(z);
      }
  for (int r = 0; r < 4; r++) assert_true(seen[r] > 0);
  free(vy);
  free(vz);
}

/* Every kernel the library may pick: AVX2 (when the CPU has it), SSE2 and
 * the portable loops. */
static void test_kernels_reference(void **state) {
  (void)state;
  const int levels[] = {BK__SIMD_AUTO, BK__SIMD_SSE2, BK__SIMD_PORTABLE};
  for (int i = 0; i < 3; i++) {
    bk__bloomclock_set_simd(levels[i]);
    kernels_reference();
  }
  bk__bloomclock_set_simd(BK__SIMD_AUTO);
}

/* ---- pr_p
 * -------------------------------------------------------------------- */

/* The slides' formula summed term by term in long double (small n only). */
static double naive_log_pr_p(const bk_bloomclock *y, const bk_bloomclock *z) {
  long double n = 0;
  for (uint64_t i = 0; i < z->m; i++) n += (long double)value(z, i);
  const long double q = 1.0L / (long double)y->m;
  long double total = 0;
  for (uint64_t i = 0; i < y->m; i++) {
    const uint64_t b = value(y, i);
    long double lower = 0;
    for (uint64_t l = 0; l < b; l++)
      lower += expl(lgammal(n + 1) - lgammal((long double)l + 1) -
                    lgammal(n - (long double)l + 1) + (long double)l * logl(q) +
                    (n - (long double)l) * log1pl(-q));
    total += log1pl(-lower);
  }
  return (double)total;
}

/* Draw Binomial(n, q) by inverting its CDF (table cdf[0..n]). */
static uint64_t draw_binomial(uint64_t *rng, const double *cdf, uint64_t n) {
  const double u = (double)(bk_test_next(rng) >> 11) * 0x1p-53;
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = (lo + hi) / 2;
    if (cdf[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static void test_pr_p(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x9E9);
  enum { M = 32, K = 2 };
  bk_bloomclock *y = make_bc(M, K, 8, 0), *z = make_bc(M, K, 8, 1);
  for (int i = 0; i < 20; i++) assert_bk_ok(bk_bloomclock_tick(y));
  /* Against the direct sum, for z from empty (pr_p = 0 exactly: n < b) to
   * far ahead (pr_p -> 1), and tiny values that underflow a double's
   * product but not its logarithm. */
  double prev = -INFINITY;
  for (int s = 0; s <= 400; s++) {
    double lp, naive = naive_log_pr_p(y, z);
    assert_bk_ok(bk_bloomclock_log_pr_p(y, z, &lp));
    if (isinf(naive)) {
      assert_true(isinf(lp) && lp < 0);
    } else {
      /* 1e-9 relative: lgamma differences of numbers below 1e4 lose about
       * 1e-12; the sums stop at 2^-60 of their total. */
      if (fabs(lp - naive) > 1e-9 * fabs(naive) + 1e-12)
        fail_msg("s = %d: log pr_p %.15g, direct sum %.15g", s, lp, naive);
    }
    /* pr_p grows with the distance from y to z (slides, Analysis 1). */
    assert_true(lp >= prev - 1e-12);
    prev = lp;
    assert_bk_ok(bk_bloomclock_tick(z));
  }
  /* A factor that underflows: y far ahead of z still has a finite log. */
  bk_bloomclock *far = make_bc(M, K, 16, 0), *near = make_bc(M, K, 16, 1);
  for (int i = 0; i < 3000; i++) assert_bk_ok(bk_bloomclock_tick(far));
  for (int i = 0; i < 3100; i++) assert_bk_ok(bk_bloomclock_tick(near));
  double lp;
  assert_bk_ok(bk_bloomclock_log_pr_p(far, near, &lp));
  assert_true(isfinite(lp) && lp < -1);
  double naive = naive_log_pr_p(far, near);
  assert_true(fabs(lp - naive) < 1e-9 * fabs(naive));

  /* Monte Carlo: pick z so pr_p is near 1/2, then draw independent
   * Binomial(n, 1/m) per counter (the model the formula states) N times
   * and count how often all draws reach B_y. The estimate's standard
   * deviation is sqrt(p(1-p)/N) <= 0.0025 at N = 40 000; 5 of them (a false
   * failure once in 1.7 million runs) is the tolerance. */
  bk_bloomclock_destroy(z);
  z = make_bc(M, K, 8, 1);
  double pr = 0;
  while (pr < 0.4) {
    assert_bk_ok(bk_bloomclock_tick(z));
    assert_bk_ok(bk_bloomclock_pr_p(y, z, &pr));
  }
  bk_bloomclock_info zi;
  assert_bk_ok(bk_bloomclock_info_get(z, &zi));
  const uint64_t n = (uint64_t)zi.sum;
  double *cdf = malloc((n + 1) * sizeof *cdf);
  double acc = 0;
  for (uint64_t l = 0; l <= n; l++) {
    acc += exp(lgamma((double)n + 1) - lgamma((double)l + 1) -
               lgamma((double)(n - l) + 1) + (double)l * log(1.0 / M) +
               (double)(n - l) * log1p(-1.0 / M));
    cdf[l] = acc;
  }
  cdf[n] = 2; /* everything below 1 maps inside */
  const unsigned N = 40000;
  unsigned hits = 0, multi_hits = 0;
  for (unsigned t = 0; t < N; t++) {
    bool all = true;
    for (uint64_t i = 0; i < M && all; i++)
      all = draw_binomial(&rng, cdf, n) >= value(y, i);
    hits += all;
    /* The multinomial (n balls into m bins, what "z's increments spread
     * uniformly" means): the formula treats the bins as independent. */
    uint64_t bins[M] = {0};
    for (uint64_t b = 0; b < n; b++) bins[bk_test_next(&rng) % M]++;
    bool mall = true;
    for (uint64_t i = 0; i < M; i++) mall &= bins[i] >= value(y, i);
    multi_hits += mall;
  }
  const double mc = (double)hits / N, sd = sqrt(pr * (1 - pr) / N);
  print_message(
      "pr_p %.4f, Monte Carlo (independent) %.4f, (multinomial) "
      "%.4f, sd %.4f\n",
      pr, mc, (double)multi_hits / N, sd);
  assert_true(fabs(mc - pr) < 5 * sd);
  /* The bins of a multinomial are negatively correlated (they sum to n),
   * which makes "every bin reaches its threshold" less likely than
   * independence says: the formula overestimates pr_p (measured 0.406
   * against 0.391 here, docs/design/bloomclock.md 5.9 (b)), by less than 0.1
   * at this size. */
  assert_true((double)multi_hits / N < pr + 5 * sd);
  assert_true((double)multi_hits / N > pr - 0.1);
  free(cdf);
  double fp, pf;
  assert_bk_ok(bk_bloomclock_pr_fp(y, z, &fp));
  assert_bk_ok(bk_bloomclock_pr_pf(y, z, &pf));
  assert_true(fabs(fp - (1 - pr) * pr) < 1e-12);
  assert_true(fabs(pf - (1 - pr)) < 1e-12);
  bk_bloomclock_destroy(far);
  bk_bloomclock_destroy(near);
  bk_bloomclock_destroy(y);
  bk_bloomclock_destroy(z);
}

/* A loaded clock with a base near 2^62 (n about 2^68) answers pr_p at once:
 * the normal approximation replaces the sums. */
static void test_pr_p_huge_counts(void **state) {
  (void)state;
  bk_bloomclock *y = make_bc(64, 3, 8, 0), *z = make_bc(64, 3, 8, 1);
  y->base = BK_BLOOMCLOCK_BASE_MAX - 5;
  z->base = BK_BLOOMCLOCK_BASE_MAX - 5;
  for (int i = 0; i < 50; i++) assert_bk_ok(bk_bloomclock_tick(y));
  double lp;
  assert_bk_ok(bk_bloomclock_log_pr_p(y, z, &lp));
  assert_true(lp < 0 && !isnan(lp));
  assert_bk_ok(bk_bloomclock_log_pr_p(z, y, &lp));
  assert_true(lp <= 0 && !isnan(lp));
  bk_bloomclock_destroy(y);
  bk_bloomclock_destroy(z);
}

/* ---- params ----------------------------------------------------------------
 *
 * The model: y is one event past a common past, z has seen W = p * events
 * other events. Build exactly that (W single events at other processes,
 * gathered by z through merges) and measure how often B_z >= B_y. */
static void test_params(void **state) {
  (void)state;
  uint64_t m;
  unsigned k;
  assert_bk_status(bk_bloomclock_params(0, 1, 0.01, &m, &k), BK_EINVAL);
  assert_bk_status(bk_bloomclock_params(10, 1, 0, &m, &k), BK_EINVAL);
  assert_bk_status(bk_bloomclock_params(10, 1, 1, &m, &k), BK_EINVAL);
  assert_bk_status(bk_bloomclock_params(10, 1, 0.01, NULL, &k), BK_EINVAL);
  assert_bk_status(bk_bloomclock_params(1u << 24, 1u << 20, 0.01, &m, &k),
                   BK_EINVAL);
  assert_bk_ok(bk_bloomclock_params(1024, 0, 0.01, &m, &k));
  uint64_t m2;
  unsigned k2;
  assert_bk_ok(bk_params_for_target(1024, 0.01, &m2, &k2));
  assert_int_equal(m, m2);
  assert_int_equal(k, k2);
  double f;
  assert_bk_ok(bk_params_fpp(m, k, 1024, &f));
  assert_true(f <= 0.01);
  assert_bk_ok(bk_params_fpp(m - 1, k, 1024, &f));
  assert_true(f > 0.01);

  uint64_t rng = bk_test_seed(0x9A4A);
  const unsigned p = 64, trials = BK_TEST_SLOW_BUILD ? 400 : 2000;
  const double target = 0.05;
  /* z below sees p events of other processes and ticks p receives of its
   * own: W = 2p events y has not seen, i.e. 2 per process. */
  assert_bk_ok(bk_bloomclock_params(p, 2, target, &m, &k));
  unsigned fp = 0;
  bk_bloomclock *y = make_bc(m, k, 8, 0), *z = make_bc(m, k, 8, 0),
                *other = make_bc(m, k, 8, 0);
  for (unsigned t = 0; t < trials; t++) {
    /* Fresh process ids each trial: the trials are independent draws. */
    const uint64_t base_pid = bk_test_next(&rng) >> 20;
    bk_bloomclock *zero = make_bc(m, k, 8, base_pid);
    assert_bk_ok(bk_bloomclock_copy(y, zero));
    assert_bk_ok(bk_bloomclock_copy(z, zero));
    assert_bk_ok(bk_bloomclock_tick(y)); /* y: process base_pid's event 0 */
    z->process_id = base_pid + p + 1;    /* z: another process */
    for (unsigned j = 1; j <= p; j++) {
      assert_bk_ok(bk_bloomclock_copy(other, zero));
      other->process_id = base_pid + j;
      assert_bk_ok(bk_bloomclock_tick(other));
      assert_bk_ok(bk_bloomclock_merge(z, other));
    }
    bk_causality r = bc_rel(y, z);
    fp += r == BK_CAUSAL_BEFORE || r == BK_CAUSAL_EQUAL;
    bk_bloomclock_destroy(zero);
  }
  double want;
  assert_bk_ok(bk_params_fpp(m, k, 2 * p, &want));
  const double rate = (double)fp / trials;
  const double sd = sqrt(want * (1 - want) / trials);
  print_message(
      "params p=%u: m=%llu k=%u, fp rate %.4f (formula %.4f, "
      "target %.3f)\n",
      p, (unsigned long long)m, k, rate, want, target);
  /* Within 5 standard deviations of the Bloom formula (a false failure
   * once in 1.7 million runs): y's k positions are independent of the
   * other events' (distinct events, one hash each). The formula asks for
   * one increment of z on each of y's counters; when y's event hits a
   * counter twice (probability about k^2 / 2m = 1 %) z needs two there,
   * so the true rate is a little below the formula (measured 0.0435
   * against 0.0498 at the default seed, 1.3 sd). */
  assert_true(fabs(rate - want) < 5 * sd);
  assert_true(rate < target + 5 * sd);
  bk_bloomclock_destroy(y);
  bk_bloomclock_destroy(z);
  bk_bloomclock_destroy(other);
}

/* ---- wire form
 * ---------------------------------------------------------------- */

static void test_wire_roundtrip_and_hostile(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0xC10C);
  for (unsigned width = 8; width <= 32; width *= 2) {
    bk_bloomclock *c = make_bc(37, 3, width, 5);
    bk_bloomclock *o = make_bc(37, 3, width, 6);
    for (int i = 0; i < 30; i++) assert_bk_ok(bk_bloomclock_tick(c));
    for (int i = 0; i < 10; i++) assert_bk_ok(bk_bloomclock_tick(o));
    assert_bk_ok(bk_bloomclock_merge(c, o));
    if (width == 8) {
      c->base = 1000;                    /* a renormalised clock */
      ((uint8_t *)c->counters)[3] = 255; /* and a saturated counter */
    }
    size_t len;
    unsigned char *blob = bk_test_serialize(&bk_test_codec_bloomclock, c, &len);
    assert_int_equal(len, 64 + (37 * width / 8 + 7) / 8 * 8 + 8);
    bk_bloomclock *g = NULL;
    assert_bk_ok(
        bk_test_codec_load(&bk_test_codec_bloomclock, blob, len, (void **)&g));
    assert_int_equal(bc_rel(c, g), BK_CAUSAL_EQUAL);
    assert_int_equal(g->events, c->events);
    assert_int_equal(g->process_id, 5);
    /* load and receive are allocation-free and equal deserialize / merge. */
    bk_bloomclock *h = make_bc(37, 3, width, 9);
    assert_bk_ok(bk_bloomclock_load(h, blob, len));
    assert_int_equal(bc_rel(c, h), BK_CAUSAL_EQUAL);
    bk_bloomclock *r1 = make_bc(37, 3, width, 9),
                  *r2 = make_bc(37, 3, width, 9);
    for (int i = 0; i < 40; i++) {
      assert_bk_ok(bk_bloomclock_tick(r1));
      assert_bk_ok(bk_bloomclock_tick(r2));
    }
    assert_bk_ok(bk_bloomclock_receive(r1, blob + 0, len));
    assert_bk_ok(bk_bloomclock_merge(r2, c));
    assert_int_equal(bc_rel(r1, r2), BK_CAUSAL_EQUAL);
    /* Unaligned wire bytes are fine. */
    unsigned char *odd = malloc(len + 1);
    memcpy(odd + 1, blob, len);
    assert_bk_ok(bk_bloomclock_receive(r1, odd + 1, len));
    assert_bk_ok(bk_bloomclock_merge(r2, c));
    assert_int_equal(bc_rel(r1, r2), BK_CAUSAL_EQUAL);
    free(odd);
    /* Hostile bytes on the receive path leave the clock as it was. */
    size_t rl;
    unsigned char *rb = bk_test_serialize(&bk_test_codec_bloomclock, r1, &rl);
    for (size_t cut = 0; cut < len; cut += 7)
      assert_bk_status(bk_bloomclock_receive(r1, blob, cut), BK_ECORRUPT);
    unsigned char *bad = malloc(len);
    memcpy(bad, blob, len);
    bad[29] = 12; /* width */
    bk_test_reseal(bad, len);
    assert_bk_status(bk_bloomclock_receive(r1, bad, len), BK_ECORRUPT);
    assert_bk_status(bk_bloomclock_load(r1, bad, len), BK_ECORRUPT);
    memcpy(bad, blob, len);
    bad[28] = 4; /* k differs from the receiver's */
    bk_test_reseal(bad, len);
    assert_bk_status(bk_bloomclock_receive(r1, bad, len), BK_EMISMATCH);
    assert_bk_status(bk_bloomclock_load(r1, bad, len), BK_EMISMATCH);
    bk_test_assert_serializes_to(&bk_test_codec_bloomclock, r1, rb, rl);
    free(rb);
    free(bad);

    bk_test_codec_arguments(&bk_test_codec_bloomclock, c);
    bk_test_codec_hostile(&bk_test_codec_bloomclock, c, seed + width);
    /* Field rules, one line each. */
    const bk_test_codec *cd = &bk_test_codec_bloomclock;
    bk_test_codec_expect_edit(cd, blob, len, 56, 8, BK_BLOOMCLOCK_BASE_MAX,
                              BK_OK, "base at its maximum");
    bk_test_codec_expect_edit(cd, blob, len, 56, 8, BK_BLOOMCLOCK_BASE_MAX + 1,
                              BK_ECORRUPT, "base past its maximum");
    bk_test_codec_expect_edit(cd, blob, len, 48, 8, UINT64_MAX, BK_OK,
                              "events exhausted");
    bk_test_codec_expect_edit(cd, blob, len, 31, 1, 1, BK_ECORRUPT, "reserved");
    bk_test_codec_expect_edit(cd, blob, len, 24, 4, 45, BK_ECORRUPT,
                              "m beyond the payload");
    bk_test_codec_expect_edit(cd, blob, len, 30, 1, 0, BK_ECORRUPT,
                              "hash algorithm 0");
    bk_test_codec_expect_edit(cd, blob, len, 48, 8, 0, BK_ECORRUPT,
                              "counters but no event");
    bk_test_codec_expect_edit(cd, blob, len, 48, 8, 1, BK_OK,
                              "one event, merged counters");
    /* A fresh clock: zero counters with events 0 and base 0 only. */
    bk_bloomclock *fresh = make_bc(37, 3, width, 1);
    size_t flen;
    unsigned char *fb =
        bk_test_serialize(&bk_test_codec_bloomclock, fresh, &flen);
    assert_bk_status(bk_test_codec_load(cd, fb, flen, NULL), BK_OK);
    bk_test_codec_expect_edit(cd, fb, flen, 48, 8, 3, BK_ECORRUPT,
                              "events without counters");
    bk_test_codec_expect_edit(cd, fb, flen, 56, 8, 5, BK_ECORRUPT,
                              "a base without events");
    bk_test_codec_expect_edit(cd, fb, flen, 64, 1, 1, BK_ECORRUPT,
                              "a counter without events");
    bk_test_codec_hostile(cd, fresh, seed ^ width);
    free(fb);
    bk_bloomclock_destroy(fresh);
    if (width == 8) /* 37 counters in 40 bytes: the last 3 are padding */
      bk_test_codec_expect_edit(cd, blob, len, 64 + 37, 1, 1, BK_ECORRUPT,
                                "padding");
    free(blob);
    bk_bloomclock_destroy(g);
    bk_bloomclock_destroy(h);
    bk_bloomclock_destroy(r1);
    bk_bloomclock_destroy(r2);
    bk_bloomclock_destroy(c);
    bk_bloomclock_destroy(o);
  }
}

static void test_vclock(void **state) {
  (void)state;
  const uint64_t seed = bk_test_seed(0x7C);
  bk_vclock *a = make_vc(5, 1), *b = make_vc(5, 3), *big = make_vc(6, 0);
  assert_bk_ok(bk_vclock_tick(a));
  assert_bk_ok(bk_vclock_tick(a));
  assert_bk_ok(bk_vclock_tick(b));
  assert_int_equal(vc_rel(a, b), BK_CAUSAL_CONCURRENT);
  size_t len, w;
  assert_bk_ok(bk_vclock_serialized_size(a, &len));
  assert_int_equal(len, 48 + 24 + 8);
  unsigned char *blob = malloc(len + 1);
  assert_bk_ok(bk_vclock_serialize(a, blob + 1, len, &w));
  assert_bk_ok(bk_vclock_receive(b, blob + 1, w)); /* unaligned */
  assert_int_equal(vc_rel(a, b), BK_CAUSAL_BEFORE);
  assert_int_equal(bk_vclock_sum(b), 4);
  uint64_t unseen;
  assert_bk_ok(bk_vclock_unseen(a, b, &unseen));
  assert_int_equal(unseen, 2); /* b's own tick and its receive */
  assert_bk_ok(bk_vclock_unseen(b, a, &unseen));
  assert_int_equal(unseen, 0);
  assert_bk_status(bk_vclock_unseen(a, big, &unseen), BK_EMISMATCH);
  assert_bk_status(bk_vclock_merge(b, big), BK_EMISMATCH);
  assert_bk_status(bk_vclock_copy(b, big), BK_EMISMATCH);
  assert_bk_status(bk_vclock_compare(b, big, &(bk_causality){0}), BK_EMISMATCH);
  assert_bk_status(bk_vclock_tick(NULL), BK_EINVAL);
  assert_bk_status(bk_vclock_merge(NULL, a), BK_EINVAL);
  assert_int_equal(bk_vclock_processes(NULL), 0);
  /* Hostile or foreign bytes on the receive path leave the clock alone. */
  const uint64_t sum_before = bk_vclock_sum(b);
  for (size_t cut = 0; cut < len; cut += 5)
    assert_bk_status(bk_vclock_receive(b, blob + 1, cut), BK_ECORRUPT);
  size_t blen;
  assert_bk_ok(bk_vclock_serialized_size(big, &blen));
  unsigned char *bb = malloc(blen);
  assert_bk_ok(bk_vclock_serialize(big, bb, blen, &w));
  assert_bk_status(bk_vclock_receive(b, bb, w), BK_EMISMATCH);
  assert_bk_status(bk_vclock_receive(NULL, bb, w), BK_EINVAL);
  free(bb);
  assert_int_equal(bk_vclock_sum(b), sum_before);
  bk_test_codec_arguments(&bk_test_codec_vclock, b);
  bk_test_codec_hostile(&bk_test_codec_vclock, b, seed);
  /* An entry at 2^32 - 1 cannot tick: BK_ERANGE, nothing changes. */
  unsigned char *c = malloc(len);
  memcpy(c, blob + 1, len);
  bk__store_le32(c + 48 + 4, UINT32_MAX);
  bk_test_reseal(c, len);
  bk_vclock *full = NULL;
  assert_bk_ok(
      bk_test_codec_load(&bk_test_codec_vclock, c, len, (void **)&full));
  assert_bk_status(bk_vclock_tick(full), BK_ERANGE);
  uint32_t x;
  assert_bk_ok(bk_vclock_get(full, 1, &x));
  assert_int_equal(x, UINT32_MAX);
  bk_test_codec_expect_edit(&bk_test_codec_vclock, blob + 1, len, 32, 8, 5,
                            BK_ECORRUPT, "process id = p");
  bk_test_codec_expect_edit(&bk_test_codec_vclock, blob + 1, len, 40, 8, 1,
                            BK_ECORRUPT, "reserved");
  bk_test_codec_expect_edit(&bk_test_codec_vclock, blob + 1, len, 48 + 20, 4, 1,
                            BK_ECORRUPT, "padding");
  bk_vclock_destroy(full);
  free(c);
  free(blob);
  bk_vclock_destroy(a);
  bk_vclock_destroy(b);
  bk_vclock_destroy(big);
}

static void test_arguments(void **state) {
  (void)state;
  bk_bloomclock *a = make_bc(16, 2, 8, 0), *b = make_bc(16, 3, 8, 0),
                *c16 = make_bc(16, 2, 16, 0);
  bk_causality r;
  double d;
  uint64_t v;
  assert_bk_status(bk_bloomclock_tick(NULL), BK_EINVAL);
  assert_bk_status(bk_bloomclock_merge(a, NULL), BK_EINVAL);
  assert_bk_status(bk_bloomclock_merge(a, b), BK_EMISMATCH);
  assert_bk_status(bk_bloomclock_merge(a, c16), BK_EMISMATCH);
  assert_bk_status(bk_bloomclock_copy(a, b), BK_EMISMATCH);
  assert_bk_status(bk_bloomclock_compare(a, b, &r), BK_EMISMATCH);
  assert_bk_status(bk_bloomclock_compare(a, a, NULL), BK_EINVAL);
  assert_bk_status(bk_bloomclock_pr_p(a, b, &d), BK_EMISMATCH);
  assert_bk_status(bk_bloomclock_pr_p(a, a, NULL), BK_EINVAL);
  assert_bk_status(bk_bloomclock_pr_fp(NULL, a, &d), BK_EINVAL);
  assert_bk_status(bk_bloomclock_pr_pf(a, NULL, &d), BK_EINVAL);
  assert_bk_status(bk_bloomclock_get(a, 16, &v), BK_EINVAL);
  assert_bk_status(bk_bloomclock_info_get(a, NULL), BK_EINVAL);
  assert_bk_status(bk_bloomclock_receive(a, NULL, 10), BK_EINVAL);
  assert_bk_status(bk_bloomclock_load(NULL, "x", 1), BK_EINVAL);
  assert_string_equal(bk_causality_name(BK_CAUSAL_CONCURRENT), "concurrent");
  assert_string_equal(bk_causality_name((bk_causality)9), "unknown");
  /* A clock merged with itself: max is a no-op, then one tick. */
  assert_bk_ok(bk_bloomclock_tick(a));
  bk_bloomclock *copy = make_bc(16, 2, 8, 0);
  assert_bk_ok(bk_bloomclock_copy(copy, a));
  assert_bk_ok(bk_bloomclock_merge(a, a));
  assert_int_equal(bc_rel(copy, a), BK_CAUSAL_BEFORE);
  /* The event count cannot wrap. */
  a->events = UINT64_MAX;
  assert_bk_ok(bk_bloomclock_copy(copy, a));
  assert_bk_status(bk_bloomclock_tick(a), BK_ERANGE);
  assert_int_equal(bc_rel(copy, a), BK_CAUSAL_EQUAL);
  bk_bloomclock_destroy(copy);
  bk_bloomclock_destroy(a);
  bk_bloomclock_destroy(b);
  bk_bloomclock_destroy(c16);
}

static void test_oom(void **state) {
  (void)state;
  bk_test_alloc st;
  bk_bloomclock *src = make_bc(100, 3, 16, 2);
  assert_bk_ok(bk_bloomclock_tick(src));
  size_t len;
  unsigned char *blob = bk_test_serialize(&bk_test_codec_bloomclock, src, &len);
  for (size_t fail = 1;; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_bloomclock *c = NULL;
    bk_status s = bk_bloomclock_create(
        &c, &(bk_bloomclock_config){.m = 100, .k = 3, .allocator = &al});
    if (s == BK_OK) {
      assert_true(st.calls < fail);
      bk_bloomclock_destroy(c);
      assert_int_equal(st.live, 0);
      break;
    }
    assert_int_equal(s, BK_ENOMEM);
    assert_null(c);
    assert_int_equal(st.live, 0);
  }
  for (size_t fail = 1;; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_bloomclock *c = NULL;
    bk_status s = bk_bloomclock_deserialize(blob, len, &al, &c);
    if (s == BK_OK) {
      assert_true(st.calls < fail);
      assert_int_equal(bc_rel(src, c), BK_CAUSAL_EQUAL);
      bk_bloomclock_destroy(c);
      assert_int_equal(st.live, 0);
      break;
    }
    assert_int_equal(s, BK_ENOMEM);
    assert_null(c);
    assert_int_equal(st.live, 0);
  }
  for (size_t fail = 1;; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_vclock *v = NULL;
    bk_status s = bk_vclock_create(
        &v, &(bk_vclock_config){.processes = 1000, .allocator = &al});
    if (s == BK_OK) {
      assert_true(st.calls < fail);
      bk_vclock_destroy(v);
      assert_int_equal(st.live, 0);
      break;
    }
    assert_int_equal(s, BK_ENOMEM);
    assert_null(v);
    assert_int_equal(st.live, 0);
  }
  free(blob);
  bk_bloomclock_destroy(src);
}

/* ---- golden blob ------------------------------------------------------------
 *
 * tests/data/bloomclock_v1.bin: m = 48, k = 3, 8-bit counters, XXH3 seed 42,
 * process 1: 5 ticks, then the receive of process 2's clock after 7 ticks,
 * then base 3 and counter 0 saturated written into the state (as a long
 * run would leave them). It must load and re-serialize byte for byte, and
 * equal the same execution run now (which pins the event hash). */
static bk_bloomclock *golden_clock(void) {
  bk_bloomclock *c = NULL, *o = NULL;
  assert_bk_ok(bk_bloomclock_create(
      &c,
      &(bk_bloomclock_config){.m = 48, .k = 3, .seed = 42, .process_id = 1}));
  assert_bk_ok(bk_bloomclock_create(
      &o,
      &(bk_bloomclock_config){.m = 48, .k = 3, .seed = 42, .process_id = 2}));
  for (int i = 0; i < 5; i++) assert_bk_ok(bk_bloomclock_tick(c));
  for (int i = 0; i < 7; i++) assert_bk_ok(bk_bloomclock_tick(o));
  assert_bk_ok(bk_bloomclock_merge(c, o));
  c->base = 3;
  ((uint8_t *)c->counters)[0] = 255;
  bk_bloomclock_destroy(o);
  return c;
}

static void test_golden(void **state) {
  (void)state;
  const char *dir = getenv("BK_TEST_DATA");
  if (!dir || !*dir) fail_msg("BK_TEST_DATA is not set (ctest sets it)");
  char path[4096];
  snprintf(path, sizeof path, "%s/bloomclock_v1.bin", dir);
  bk_bloomclock *c = golden_clock();
  size_t len;
  unsigned char *now = bk_test_serialize(&bk_test_codec_bloomclock, c, &len);
  const char *write = getenv("BK_WRITE_GOLDEN");
  if (write && strcmp(write, "1") == 0) {
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s: %s", path, strerror(errno));
    assert_int_equal(fwrite(now, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
  }
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
  unsigned char buf[512];
  const size_t got = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_int_equal(got, len);
  assert_memory_equal(buf, now, len);
  bk_bloomclock *g = NULL;
  assert_bk_ok(
      bk_test_codec_load(&bk_test_codec_bloomclock, buf, got, (void **)&g));
  assert_int_equal(value(g, 0), UINT64_MAX);
  assert_int_equal(g->base, 3);
  assert_int_equal(g->events, 6);
  bk_bloomclock_destroy(g);
  bk_bloomclock_destroy(c);
  free(now);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_config),
      cmocka_unit_test(test_slides_execution),
      cmocka_unit_test(test_random_no_false_negative),
      cmocka_unit_test(test_saturation_no_false_negative),
      cmocka_unit_test(test_kernels_reference),
      cmocka_unit_test(test_pr_p),
      cmocka_unit_test(test_pr_p_huge_counts),
      cmocka_unit_test(test_params),
      cmocka_unit_test(test_wire_roundtrip_and_hostile),
      cmocka_unit_test(test_vclock),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_oom),
      cmocka_unit_test(test_golden),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
