/* SPDX-License-Identifier: MIT */
/*
 * Tests for bk_idem's per-client sequence windows (strategies WINDOW and
 * HYBRID; docs/design/idem.md, "Client windows"):
 *   - the exact decisions: new above the highest seq, duplicate or new
 *     inside the window, TOO_OLD (WINDOW) below it with nothing changed;
 *   - the trap: an op applied through the window that slid below it while
 *     its retry timeout is still open is a duplicate under HYBRID (the
 *     slide-out moved it into the FBF), and only closed words skip the FBF;
 *   - eviction after the timeout, and what a later op of that client gets;
 *   - edge ids (0, UINT64_MAX), a seq 2^63 ahead, bad windows, time going
 *     backwards;
 *   - a randomized stream of reordering clients against an exact model of
 *     the clients' contract: no retry applied twice, no genuine op dropped
 *     by a window;
 *   - the memory of a window per client at W = 256.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"

#include "idem_helpers.h"

static bk_idem_outcome add_raw(bk_idem *t, uint64_t client, uint64_t seq,
                               int64_t *value) {
  int64_t v = 0;
  bk_idem_outcome oc = (bk_idem_outcome)0;
  assert_bk_ok(bk_idem_add(t, "k", 1, opid(client, seq), 1, &v, &oc));
  if (value) *value = v;
  return oc;
}

static bk_idem *window_table(bk_idem_strategy s, uint64_t timeout, unsigned w) {
  bk_idem_config c = generous(s, timeout, idem_test_seed(0x3D));
  c.window = w;
  return idem_make(&c);
}

static void test_window_decisions(void **state) {
  (void)state;
  bk_idem *t = window_table(BK_IDEM_WINDOW, 1000, 256);
  int64_t v;
  /* First op of a client: new, at any seq. */
  assert_int_equal(add_raw(t, 7, 1000, &v), BK_IDEM_APPLIED);
  /* Reordered ops inside the window: new once, then duplicates. */
  assert_int_equal(add_raw(t, 7, 999, &v), BK_IDEM_APPLIED);
  assert_int_equal(add_raw(t, 7, 999, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(add_raw(t, 7, 1000, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 2);
  /* The window holds the words 1000/64 - 3 .. 1000/64, seqs 768 .. 1000. */
  assert_int_equal(add_raw(t, 7, 768, &v), BK_IDEM_APPLIED);
  assert_int_equal(add_raw(t, 7, 767, &v), BK_IDEM_TOO_OLD);
  assert_int_equal(v, 3); /* the current value, nothing applied */
  assert_int_equal(add_raw(t, 7, 767, &v), BK_IDEM_TOO_OLD);
  /* Above the highest: new; the window moves. */
  assert_int_equal(add_raw(t, 7, 1001, &v), BK_IDEM_APPLIED);
  assert_int_equal(add_raw(t, 7, 1100, &v), BK_IDEM_APPLIED);
  assert_int_equal(add_raw(t, 7, 768, &v), BK_IDEM_TOO_OLD); /* slid out */
  assert_int_equal(add_raw(t, 7, 1001, &v), BK_IDEM_DUPLICATE);
  /* Another client is independent. */
  assert_int_equal(add_raw(t, 8, 999, &v), BK_IDEM_APPLIED);
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_WINDOW);
  assert_int_equal(in.window, 256);
  assert_int_equal(in.clients, 2);
  assert_int_equal(in.applied, 6);
  assert_int_equal(in.duplicates, 3);
  assert_int_equal(in.below_window, 3);
  assert_int_equal(in.window_decided, 9);
  assert_int_equal(in.filter_memory, 0);
  assert_true(in.window_memory > 0);
  assert_int_equal(GET(t, "k"), 6);
  bk_idem_destroy(t);
}

/* The trap of the issue: op (1, 0) applied at time 0, then 400 newer ops
 * of the same client slide it below the window before its retry timeout
 * has passed. HYBRID must still recognise its retry. */
static void test_slide_out_retry(void **state) {
  (void)state;
  const uint64_t T = 1000;
  bk_idem *h = window_table(BK_IDEM_HYBRID, T, 256);
  bk_idem *w = window_table(BK_IDEM_WINDOW, T, 256);
  bk_idem *tables[2] = {h, w};
  for (int i = 0; i < 2; i++) {
    bk_idem *t = tables[i];
    assert_int_equal(add_raw(t, 1, 0, NULL), BK_IDEM_APPLIED);
    for (uint64_t s = 1; s <= 400; s++) {
      assert_bk_ok(bk_idem_advance(t, s)); /* 400 ops within T / 2 */
      assert_int_equal(add_raw(t, 1, s, NULL), BK_IDEM_APPLIED);
    }
    /* Retries of the oldest ops, just inside the timeout of op 0. */
    assert_bk_ok(bk_idem_advance(t, T));
    for (uint64_t s = 0; s < 100; s++)
      assert_int_equal(add_raw(t, 1, s, NULL),
                       t == h ? BK_IDEM_DUPLICATE : BK_IDEM_TOO_OLD);
  }
  bk_idem_info in = idem_info_of(h);
  /* Words 0..2 (seqs 0..191) slid out while open: all of them went to the
   * FBF. */
  assert_int_equal(in.slid_to_filter, 192);
  assert_int_equal(in.below_window, 100);
  assert_int_equal(in.applied, 401);
  assert_int_equal(in.duplicates, 100);
  assert_int_equal(GET(h, "k"), 401);
  assert_int_equal(GET(w, "k"), 401);
  bk_idem_destroy(h);
  bk_idem_destroy(w);
}

/* A client that stays active but whose words are older than the timeout
 * when they slide out: nothing goes to the FBF. One op every 10 time units
 * with T = 1000: a word slides out 192 ops (1920 units) after its last
 * apply, more than T (and its tick rounding) ago. The same client at one op
 * per unit moves every slid word into the FBF. */
static void test_slide_out_closed(void **state) {
  (void)state;
  const uint64_t T = 1000;
  const uint64_t gaps[2] = {10, 1};
  for (int g = 0; g < 2; g++) {
    bk_idem *t = window_table(BK_IDEM_HYBRID, T, 256);
    uint64_t now = 0;
    for (uint64_t s = 0; s < 1024; s++) {
      assert_bk_ok(bk_idem_advance(t, now += gaps[g]));
      assert_int_equal(add_raw(t, 5, s, NULL), BK_IDEM_APPLIED);
    }
    bk_idem_info in = idem_info_of(t);
    assert_int_equal(in.clients, 1);
    /* 1024 ops: words 0..11 slid out, 768 seqs. */
    assert_int_equal(in.slid_to_filter, g == 0 ? 0 : 768);
    /* seq 3: below the window. At one op per 10 units it was applied
     * 10000 units ago, so no retry of it can come: the FBF decides, holds
     * nothing, and it is new. At one op per unit it was applied 1021 units
     * ago (past T, but the FBF keeps ids longer than T): a duplicate. */
    assert_int_equal(add_raw(t, 5, 3, NULL),
                     g == 0 ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE);
    bk_idem_destroy(t);
  }
}

static void test_eviction(void **state) {
  (void)state;
  const uint64_t T = 1000;
  bk_idem *t = window_table(BK_IDEM_WINDOW, T, 256);
  for (uint64_t c = 0; c < 100; c++)
    assert_int_equal(add_raw(t, c, 500, NULL), BK_IDEM_APPLIED);
  assert_bk_ok(bk_idem_advance(t, T));
  /* Inside the timeout every window is kept: a retry is a duplicate. */
  assert_int_equal(idem_info_of(t).clients, 100);
  assert_int_equal(add_raw(t, 3, 500, NULL), BK_IDEM_DUPLICATE);
  assert_int_equal(add_raw(t, 4, 1, NULL), BK_IDEM_TOO_OLD);
  /* Long after: every client is forgotten... */
  assert_bk_ok(bk_idem_advance(t, 10 * T));
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.clients, 0);
  assert_int_equal(in.clients_evicted, 100);
  /* ... and a later op of one starts a fresh window at its seq. */
  assert_int_equal(add_raw(t, 4, 1, NULL), BK_IDEM_APPLIED);
  assert_int_equal(add_raw(t, 4, 1, NULL), BK_IDEM_DUPLICATE);
  assert_int_equal(idem_info_of(t).clients, 1);
  bk_idem_destroy(t);
}

static void test_edge_ids(void **state) {
  (void)state;
  const bk_idem_strategy ss[2] = {BK_IDEM_WINDOW, BK_IDEM_HYBRID};
  for (int i = 0; i < 2; i++) {
    bk_idem *t = window_table(ss[i], 1000, 0);
    assert_int_equal(idem_info_of(t).window, BK_IDEM_WINDOW_DEFAULT);
    const uint64_t ids[3] = {0, 1, UINT64_MAX};
    for (int c = 0; c < 3; c++) {
      assert_int_equal(add_raw(t, ids[c], 0, NULL), BK_IDEM_APPLIED);
      assert_int_equal(add_raw(t, ids[c], 0, NULL), BK_IDEM_DUPLICATE);
      /* 2^63 ahead: one step, the window moves there. */
      assert_int_equal(add_raw(t, ids[c], UINT64_C(1) << 63, NULL),
                       BK_IDEM_APPLIED);
      assert_int_equal(add_raw(t, ids[c], UINT64_MAX, NULL), BK_IDEM_APPLIED);
      assert_int_equal(add_raw(t, ids[c], UINT64_MAX, NULL), BK_IDEM_DUPLICATE);
      assert_int_equal(add_raw(t, ids[c], UINT64_MAX - 1, NULL),
                       BK_IDEM_APPLIED);
      /* seq 0 is now far below: HYBRID's FBF holds it (applied while
       * open, slid out), WINDOW cannot tell. */
      assert_int_equal(add_raw(t, ids[c], 0, NULL), ss[i] == BK_IDEM_HYBRID
                                                        ? BK_IDEM_DUPLICATE
                                                        : BK_IDEM_TOO_OLD);
    }
    assert_int_equal(idem_info_of(t).clients, 3);
    bk_idem_destroy(t);
  }
}

static void test_bad_windows(void **state) {
  (void)state;
  const unsigned bad[] = {1, 32, 63, 100, 255, 257, 8192, 1u << 31};
  for (size_t i = 0; i < COUNT(bad); i++) {
    bk_idem_config c = generous(BK_IDEM_HYBRID, 1000, 1);
    c.window = bad[i];
    bk_idem *t = SENTINEL;
    assert_bk_status(bk_idem_create(&t, &c), BK_EINVAL);
    assert_ptr_equal(t, SENTINEL);
  }
  const unsigned good[] = {64, 128, 256, 1024, BK_IDEM_WINDOW_MAX};
  for (size_t i = 0; i < COUNT(good); i++) {
    bk_idem *t = window_table(BK_IDEM_WINDOW, 1000, good[i]);
    assert_int_equal(idem_info_of(t).window, good[i]);
    bk_idem_destroy(t);
  }
  /* Windows need a timeout, like the filters. */
  bk_idem_config c = {.strategy = BK_IDEM_WINDOW};
  bk_idem *t = SENTINEL;
  assert_bk_status(bk_idem_create(&t, &c), BK_EINVAL);
  /* Time going backwards: refused, nothing changes. */
  t = window_table(BK_IDEM_WINDOW, 1000, 256);
  assert_bk_ok(bk_idem_advance(t, 5000));
  assert_int_equal(add_raw(t, 1, 1, NULL), BK_IDEM_APPLIED);
  assert_bk_status(bk_idem_advance(t, 4999), BK_EINVAL);
  assert_int_equal(idem_info_of(t).now, 5000);
  assert_int_equal(add_raw(t, 1, 1, NULL), BK_IDEM_DUPLICATE);
  bk_idem_destroy(t);
}

/* ---- a randomized stream against the exact contract ---------------------- */

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#define R_CLIENTS 40u
#define R_OPS 1200u /* per client */
#define HOLD 64u    /* ops a client holds back at most */

typedef struct held {
  size_t n;
  uint64_t seq[HOLD], release[HOLD]; /* arrives once next passes release */
} held;

/* Each client sends its ops in order, holds one in six back to arrive
 * later (up to 8 ops later; every fifth client up to 2 W, so its late ops
 * land below the window), and retries recent ones, never more than T after
 * the original was applied (the clients' contract). */
static void run_random(bk_idem_strategy strat, unsigned w, uint64_t seed) {
  const uint64_t T = 200;
  bk_idem *t = window_table(strat, T, w);
  /* applied_at[c][s]: time + 1 of the apply, 0 = never. */
  uint64_t *applied_at = calloc(R_CLIENTS * R_OPS, sizeof *applied_at);
  assert_non_null(applied_at);
  uint64_t next[R_CLIENTS] = {0};
  static held hold[R_CLIENTS];
  memset(hold, 0, sizeof hold);
  uint64_t rng = seed, now = 0, dropped_in = 0, twice = 0, too_old = 0;
  uint64_t fallback_dups = 0;
  for (uint64_t step = 0; step < (uint64_t)R_CLIENTS * R_OPS * 3; step++) {
    if (rng_next(&rng) % 4 == 0) {
      now += rng_next(&rng) % 3;
      assert_bk_ok(bk_idem_advance(t, now));
    }
    unsigned c = (unsigned)(rng_next(&rng) % R_CLIENTS);
    uint64_t r = rng_next(&rng);
    uint64_t lag = c % 5 == 0 ? 2 * (uint64_t)w : 8;
    uint64_t seq;
    bool retry = false;
    held *hc = &hold[c];
    if (r % 3 == 0 && next[c] > 0) { /* a retry of a recent op */
      seq = next[c] - 1 - (rng_next(&rng) % (next[c] < 16 ? next[c] : 16));
    } else if (r % 3 == 1 && hc->n && hc->release[0] <= next[c]) {
      seq = hc->seq[0]; /* a held-back op arrives, late */
      hc->n--;
      memmove(hc->seq, hc->seq + 1, hc->n * sizeof *hc->seq);
      memmove(hc->release, hc->release + 1, hc->n * sizeof *hc->release);
    } else if (next[c] < R_OPS) { /* the next op, sometimes held back */
      seq = next[c]++;
      if (hc->n < HOLD && rng_next(&rng) % 6 == 0) {
        hc->seq[hc->n] = seq;
        hc->release[hc->n++] = seq + 1 + rng_next(&rng) % lag;
        continue;
      }
    } else {
      continue;
    }
    retry = applied_at[c * R_OPS + seq] != 0;
    uint64_t *at = &applied_at[c * R_OPS + seq];
    /* The contract: a retry arrives at most T after the apply. */
    if (retry && *at && now > *at - 1 + T) continue;
    int64_t v;
    bk_idem_outcome oc;
    assert_bk_ok(bk_idem_add(t, "k", 1, opid(c, seq), 1, &v, &oc));
    if (oc == BK_IDEM_APPLIED) {
      if (*at) twice++;
      *at = now + 1;
    } else if (oc == BK_IDEM_DUPLICATE) {
      if (!*at) {
        dropped_in++; /* a genuine op taken for a duplicate */
        if (c % 5 == 0) fallback_dups++;
      }
    } else {
      assert_int_equal(oc, BK_IDEM_TOO_OLD);
      assert_int_equal(strat, BK_IDEM_WINDOW);
      too_old++;
    }
  }
  bk_idem_info in = idem_info_of(t);
  print_message(
      "  %s W=%u: %llu applied, %llu duplicates, %llu below the "
      "window, %llu too old, %llu slid to the FBF\n",
      strat_name(strat), w, (unsigned long long)in.applied,
      (unsigned long long)in.duplicates, (unsigned long long)in.below_window,
      (unsigned long long)too_old, (unsigned long long)in.slid_to_filter);
  assert_int_equal(twice, 0);
  /* Windows are exact, and the FBF behind HYBRID is sized for 1e-9. */
  assert_int_equal(dropped_in, 0);
  assert_int_equal(fallback_dups, 0);
  assert_true(in.below_window > 0); /* the fallback was exercised */
  if (strat == BK_IDEM_WINDOW) assert_int_equal(in.below_window, too_old);
  free(applied_at);
  bk_idem_destroy(t);
}

static void test_random_streams(void **state) {
  (void)state;
  uint64_t seed = idem_test_seed(0xAD0);
  const unsigned ws[2] = {64, 256};
  for (int i = 0; i < 2; i++) {
    run_random(BK_IDEM_HYBRID, ws[i], seed + (uint64_t)i);
    run_random(BK_IDEM_WINDOW, ws[i], seed + (uint64_t)i);
  }
}

/* At W = 256 a client's window takes at most 64 bytes, table included. */
static void test_window_memory(void **state) {
  (void)state;
  bk_idem *t = window_table(BK_IDEM_WINDOW, 1000, 256);
  const uint64_t n = SLOW_BUILD ? 20000 : 100000;
  double worst = 0;
  for (uint64_t c = 0; c < n; c++) {
    assert_int_equal(add_raw(t, c * 0x9E3779B97F4A7C15ull, c, NULL),
                     BK_IDEM_APPLIED);
    if (c % 997 == 996) {
      bk_idem_info in = idem_info_of(t);
      assert_int_equal(in.clients, c + 1);
      double per = (double)in.window_memory / (double)in.clients;
      if (c > 10000 && per > worst) worst = per;
    }
  }
  print_message(
      "  windows: %.1f bytes per client at most, over 10^4..%llu "
      "clients\n",
      worst, (unsigned long long)n);
  assert_true(worst <= 64.0);
  bk_idem_destroy(t);
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_decisions),
      cmocka_unit_test(test_slide_out_retry),
      cmocka_unit_test(test_slide_out_closed),
      cmocka_unit_test(test_eviction),
      cmocka_unit_test(test_edge_ids),
      cmocka_unit_test(test_bad_windows),
      cmocka_unit_test(test_random_streams),
      cmocka_unit_test(test_window_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
