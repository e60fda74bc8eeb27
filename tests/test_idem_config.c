/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_idem's configuration and arguments: bad configs and the
 * edges of good ones, every bad argument, the RBF's size overflow, and
 * allocation-failure injection for create and for the add of a new key.
 *
 * Shared helpers: tests/idem_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"
#include "bloomkit/params.h"

#include "idem_helpers.h"

/* ---- bad arguments
 * -----------------------------------------------------------
 */

BK_TEST_DEFINE_CREATE_REFUSALS(idem, static)

static void expect_create_ok(const bk_idem_config *cfg, const char *what) {
  bk_idem *t = NULL;
  bk_status s = bk_idem_create(&t, cfg);
  if (s != BK_OK)
    fail_msg("create with %s: %s, expected BK_OK", what, bk_status_name(s));
  bk_idem_destroy(t);
}

/* #16.7: the default period ceil(timeout / (N + 1)) wrapped for a timeout
 * of 2^64 - 1 or 2^64 - 2 (EINVAL) while 2^64 - 3 was accepted. Every
 * filtered strategy takes them, and the tables save and load. #16.2: k
 * alone (no m_bits) used the m of the optimal k: with k = 1 the filters
 * were about 10x too small for their fpp. m now meets fpp with the k
 * given: each of the N + 2 FBF filters (or the RBF's N + 2 shares) holds
 * bk_params_m_for_k(2 ops, fpp, 1) bits. */
static void test_config_edges(void **state) {
  (void)state;
  const uint64_t timeouts[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 2};
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE,
                                     BK_IDEM_RBF};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) {
      bk_idem_config cfg = {.strategy = strats[j],
                            .retry_timeout = timeouts[i],
                            .ops_per_period = 100};
      bk_idem *t = NULL;
      bk_status s = bk_idem_create(&t, &cfg);
      if (s != BK_OK)
        fail_msg("retry_timeout 2^64 - %llu, strategy %d: %s",
                 (unsigned long long)(UINT64_MAX - timeouts[i] + 1),
                 (int)strats[j], bk_status_name(s));
      int64_t v;
      assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
      size_t len;
      unsigned char *blob = bk_test_serialize(&bk_test_codec_idem, t, &len);
      assert_bk_ok(bk_test_codec_load(&bk_test_codec_idem, blob, len, NULL));
      free(blob);
      bk_idem_destroy(t);
    }
  uint64_t m1;
  assert_bk_ok(bk_params_m_for_k(2 * 10000, 0.01, 1, &m1));
  for (size_t j = 0; j < 3; j++) {
    bk_idem_config cfg = {.strategy = strats[j],
                          .retry_timeout = 300,
                          .ops_per_period = 10000,
                          .fpp = 0.01,
                          .k = 1};
    bk_idem *t = idem_make(&cfg);
    bk_idem_info in;
    assert_bk_ok(bk_idem_info_get(t, &in));
    /* N = 2 by default: 4 filters of m1 bits (RBF: one of 4 m1 bits). */
    if (in.filter_memory < 4 * m1 / 8)
      fail_msg("strategy %d, k = 1: %zu bytes of filter, want >= %llu",
               (int)strats[j], in.filter_memory,
               (unsigned long long)(4 * m1 / 8));
    bk_idem_destroy(t);
  }
}

static void test_bad_config(void **state) {
  (void)state;
  const bk_idem_config ok = {.retry_timeout = 3000, .ops_per_period = 1000};
  bk_idem_config c;
  idem_expect_create_null(&ok);
  bk_allocator half = {.alloc = NULL, .free = NULL};
#define BAD(desc, edit)                  \
  do {                                   \
    c = ok;                              \
    edit;                                \
    idem_expect_create_einval(&c, desc); \
  } while (0)
#define GOOD(desc, edit)        \
  do {                          \
    c = ok;                     \
    edit;                       \
    expect_create_ok(&c, desc); \
  } while (0)
  BAD("strategy 7", c.strategy = (bk_idem_strategy)7);
  BAD("APBF sized by m_bits",
      (c.strategy = BK_IDEM_APBF, c.m_bits = 4096, c.k = 4));
  BAD("APBF, retry_timeout 0",
      (c.strategy = BK_IDEM_APBF, c.retry_timeout = 0));
  BAD("window 100", c.window = 100);
  BAD("window 32", (c.strategy = BK_IDEM_WINDOW, c.window = 32));
  BAD("window 8192", c.window = 8192);
  BAD("WINDOW, retry_timeout 0",
      (c.strategy = BK_IDEM_WINDOW, c.retry_timeout = 0));
  BAD("HYBRID, an FBF that cannot be made (k > 64)",
      (c.strategy = BK_IDEM_HYBRID, c.m_bits = 4096, c.k = 65));
  GOOD("window 64", c.window = 64);
  BAD("strategy -1", c.strategy = (bk_idem_strategy)-1);
  BAD("strategy 255", c.strategy = (bk_idem_strategy)255);
  BAD("FBF, retry_timeout 0", c.retry_timeout = 0);
  BAD("RBF, retry_timeout 0", (c.strategy = BK_IDEM_RBF, c.retry_timeout = 0));
  BAD("FBF_ADAPTIVE, retry_timeout 0",
      (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.retry_timeout = 0));
  GOOD("NONE, retry_timeout 0",
       (c.strategy = BK_IDEM_NONE, c.retry_timeout = 0));
  /* The window shorter than the refresh period. */
  BAD("refresh period > retry_timeout", c.refresh_period = 3001);
  BAD("refresh period > retry_timeout (adaptive)",
      (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.refresh_period = 4000));
  BAD("refresh period > retry_timeout (RBF)",
      (c.strategy = BK_IDEM_RBF, c.refresh_period = 3001));
  GOOD("refresh period = retry_timeout", c.refresh_period = 3000);
  /* (N + 1) t must cover the timeout. */
  BAD("(N+1)t = 2997 < 3000", c.refresh_period = 999);
  BAD("N = 1, 2t = 2998 < 3000", (c.n_past = 1, c.refresh_period = 1499));
  BAD("N = 5, 6t = 2994 < 3000", (c.n_past = 5, c.refresh_period = 499));
  BAD("t = 1, T = 4", (c.retry_timeout = 4, c.refresh_period = 1));
  BAD("(N+1)t overflows", (c.n_past = 62, c.retry_timeout = UINT64_MAX,
                           c.refresh_period = UINT64_MAX / 2));
  GOOD("(N+1)t = 3000", c.refresh_period = 1000);
  GOOD("N = 1, 2t = 3000", (c.n_past = 1, c.refresh_period = 1500));
  GOOD("T = 1", c.retry_timeout = 1);
  /* fpp outside (0, 1) (0 is the default). */
  BAD("fpp -0.1", c.fpp = -0.1);
  BAD("fpp 1", c.fpp = 1.0);
  BAD("fpp 1.5", c.fpp = 1.5);
  BAD("fpp NaN", c.fpp = NAN);
  BAD("fpp inf", c.fpp = INFINITY);
  BAD("fpp -inf", c.fpp = -INFINITY);
  BAD("fpp 1 (RBF)", (c.strategy = BK_IDEM_RBF, c.fpp = 1.0));
  BAD("fpp NaN (adaptive)", (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.fpp = NAN));
  GOOD("fpp 0.5", c.fpp = 0.5);
  GOOD("fpp 1e-12", c.fpp = 1e-12);
  BAD("target_fpp 1", c.target_fpp = 1.0);
  BAD("target_fpp -1", (c.strategy = BK_IDEM_RBF, c.target_fpp = -1.0));
  BAD("target_fpp NaN",
      (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.target_fpp = NAN));
  BAD("max_key_len > BK_IDEM_KEY_MAX", c.max_key_len = BK_IDEM_KEY_MAX + 1);
  BAD("max_key_len SIZE_MAX", c.max_key_len = SIZE_MAX);
  GOOD("max_key_len = BK_IDEM_KEY_MAX", c.max_key_len = BK_IDEM_KEY_MAX);
  GOOD("adaptive, tick 1 and step 1",
       (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.adapt_interval = 1,
        c.period_step = 1));
  GOOD("RBF sized by ops with an explicit k",
       (c.strategy = BK_IDEM_RBF, c.k = 3));
  BAD("hash 9", c.hash_alg = (bk_hash_alg)9);
  BAD("murmur seed > 32 bits",
      (c.hash_alg = BK_HASH_MURMUR3, c.seed = (uint64_t)1 << 32));
  BAD("murmur seed > 32 bits (NONE)",
      (c.strategy = BK_IDEM_NONE, c.hash_alg = BK_HASH_MURMUR3,
       c.seed = (uint64_t)1 << 32));
  BAD("m_bits without k", c.m_bits = 4096);
  BAD("m_bits without k (RBF)", (c.strategy = BK_IDEM_RBF, c.m_bits = 4096));
  BAD("k > 64", (c.m_bits = 4096, c.k = 65));
  BAD("m over 2^40 (FBF)", (c.m_bits = ((uint64_t)1 << 40) + 64, c.k = 3));
  BAD("(N+2) m over 2^40 (RBF)",
      (c.strategy = BK_IDEM_RBF, c.m_bits = (uint64_t)1 << 39, c.k = 3));
  BAD("n_past 63", c.n_past = 63);
  BAD("adaptive max_filters 3 < N + 2",
      (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.max_filters = 3));
  BAD("adaptive max_filters 65",
      (c.strategy = BK_IDEM_FBF_ADAPTIVE, c.max_filters = 65));
  BAD("allocator without functions", c.allocator = &half);
  BAD("allocator without functions (NONE)",
      (c.strategy = BK_IDEM_NONE, c.allocator = &half));
#undef BAD
#undef GOOD
}

static void test_bad_arguments(void **state) {
  (void)state;
  bk_idem_config cfg = generous(BK_IDEM_FBF, 1000, 1);
  cfg.max_key_len = 16;
  bk_idem *t = idem_make(&cfg);
  bk_idem_config dcfg = generous(BK_IDEM_FBF, 1000, 2);
  bk_idem *d = idem_make(&dcfg); /* default max_key_len */
  int64_t v = 0;
  bk_idem_outcome oc;
  const bk_idem_op_id id = opid(1, 1);
  unsigned char big[BK_IDEM_KEY_MAX + 1];
  memset(big, 'k', sizeof big);

  /* add */
  assert_bk_status(bk_idem_add(NULL, "a", 1, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(t, NULL, 1, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(t, NULL, 0, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(t, "a", 0, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(t, big, 17, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(t, big, BK_IDEM_KEY_MAX + 1, id, 1, &v, &oc),
                   BK_EINVAL);
  assert_bk_status(bk_idem_add(t, big, SIZE_MAX, id, 1, &v, &oc), BK_EINVAL);
  assert_bk_status(bk_idem_add(d, big, BK_IDEM_KEY_MAX + 1, id, 1, &v, &oc),
                   BK_EINVAL);
  assert_bk_status(bk_idem_add(d, "", 0, id, 1, &v, &oc), BK_EINVAL);
  /* Nothing was stored or recorded by the failed calls. */
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.keys + in.applied + in.duplicates, 0);
  in = idem_info_of(d);
  assert_int_equal(in.keys + in.applied + in.duplicates, 0);
  assert_int_equal(add_ok(t, big, 16, id, 1, &v), BK_IDEM_APPLIED);
  assert_int_equal(add_ok(d, big, BK_IDEM_KEY_MAX, id, 1, &v), BK_IDEM_APPLIED);

  /* get / delete */
  assert_bk_status(bk_idem_get(NULL, "a", 1, &v), BK_EINVAL);
  assert_bk_status(bk_idem_get(t, NULL, 1, &v), BK_EINVAL);
  assert_bk_status(bk_idem_get(t, "a", 0, &v), BK_EINVAL);
  assert_bk_status(bk_idem_get(t, big, 16, NULL), BK_EINVAL);
  assert_bk_status(bk_idem_get(t, big, 17, &v), BK_EINVAL);
  assert_bk_status(bk_idem_get(d, big, BK_IDEM_KEY_MAX + 1, &v), BK_EINVAL);
  assert_bk_status(bk_idem_get(t, "a", 1, &v), BK_ENOTFOUND);
  assert_bk_status(bk_idem_remove(NULL, "a", 1), BK_EINVAL);
  assert_bk_status(bk_idem_remove(t, NULL, 1), BK_EINVAL);
  assert_bk_status(bk_idem_remove(t, "a", 0), BK_EINVAL);
  assert_bk_status(bk_idem_remove(t, big, 17), BK_EINVAL);
  assert_bk_status(bk_idem_remove(d, big, BK_IDEM_KEY_MAX + 1), BK_EINVAL);
  assert_bk_status(bk_idem_remove(t, "a", 1), BK_ENOTFOUND);
  assert_int_equal(get_ok(t, big, 16), 1);
  assert_int_equal(get_ok(d, big, BK_IDEM_KEY_MAX), 1);

  /* iterate / advance / info / sizes */
  walk w;
  memset(&w, 0, sizeof w);
  assert_bk_status(bk_idem_iterate(NULL, walk_cb, &w), BK_EINVAL);
  assert_bk_status(bk_idem_iterate(t, NULL, &w), BK_EINVAL);
  assert_bk_status(bk_idem_advance(NULL, 5), BK_EINVAL);
  assert_bk_ok(bk_idem_advance(t, 100));
  assert_bk_ok(bk_idem_advance(t, 100));
  assert_bk_status(bk_idem_advance(t, 99), BK_EINVAL);
  assert_bk_status(bk_idem_info_get(NULL, &in), BK_EINVAL);
  assert_bk_status(bk_idem_info_get(t, NULL), BK_EINVAL);
  /* serialize / deserialize: the codec's argument rules */
  bk_test_codec_arguments(&bk_test_codec_idem, t);
  bk_idem_destroy(t);
  bk_idem_destroy(d);
}

/* ---- allocation failures
 * ------------------------------------------------------
 */

BK_TEST_DEFINE_OOM_MAKE(idem, static)

static void oom_create_check(void *check_ctx, bk_test_alloc *st, void *t) {
  (void)check_ctx;
  st->fail_at = 0;
  assert_int_equal(ADD(t, "a", 1, 1, 1, NULL), BK_IDEM_APPLIED);
  bk_idem_destroy(t);
}

static void test_oom_create(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    bk_idem_config cfg = generous(strat, 100, 3);
    cfg.ops_per_period = 1000;
    cfg.expected_keys = 5000;
    for (int sticky = 0; sticky <= 1; sticky++) {
      unsigned failures = bk_test_oom(idem_oom_make, &cfg, oom_create_check,
                                      NULL, sticky, 1000, strat_name(strat));
      /* The table and 64 stripes at least. */
      assert_true(failures >= 65);
    }
  }
}

/* An add that needs memory for a new key fails with BK_ENOMEM and leaves no
 * trace: the key is absent, the op id unrecorded, so the same op applies
 * once the allocator recovers. A failed bucket-array growth does not fail
 * the add. */
static void test_oom_add(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    const bool filtering = strat != BK_IDEM_NONE;
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    bk_idem_config cfg = generous(strat, 100, idem_test_seed(0x0A));
    cfg.allocator = &al;
    bk_idem *t = idem_make(&cfg);
    const size_t n = SLOW_BUILD ? 1500 : 2500, n2 = 1500;
    model m = model_new(n + n2);
    size_t refused = 0, postponed = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      const int64_t d = (int64_t)i + 1;
      int64_t v = -1;
      bk_idem_outcome oc;
      /* The add's first allocation fails. A long key's copy is memory
       * every new long key needs: refused. A short key lives in its slot
       * and needs memory only when its stripe must grow, which the table
       * postpones while a slot would stay empty (but not for a stripe's
       * first key, which has no slots yet): refused or applied. */
      const size_t calls = st.calls;
      st.fail_at = st.calls + 1;
      bk_status s = bk_idem_add(t, kb, kl, opid(5, i), d, &v, &oc);
      st.fail_at = 0;
      if (kl > 16 && s != BK_ENOMEM)
        fail_msg("%s: add of new long key %zu with its copy failing: %s",
                 strat_name(strat), i, bk_status_name(s));
      if (s != BK_OK && s != BK_ENOMEM)
        fail_msg("%s: add of new key %zu with its allocation failing: %s",
                 strat_name(strat), i, bk_status_name(s));
      if (s == BK_ENOMEM) {
        /* No trace. */
        refused++;
        assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
        bk_idem_info in = idem_info_of(t);
        assert_int_equal(in.keys, i);
        assert_int_equal(in.applied, filtering ? i : 2 * i);
        assert_int_equal(in.duplicates, filtering ? i : 0);
        oc = add_ok(t, kb, kl, opid(5, i), d, &v);
      } else if (st.calls > calls) {
        postponed++; /* applied although its growth failed */
      }
      assert_int_equal(oc, BK_IDEM_APPLIED);
      assert_int_equal(v, d);
      model_apply(&m, i, d);
      if (filtering)
        assert_int_equal(add_ok(t, kb, kl, opid(5, i), d, &v),
                         BK_IDEM_DUPLICATE);
      else
        assert_bk_ok(bk_idem_add(t, kb, kl, opid(6, i), 0, &v, NULL));
    }
    /* Both paths ran: every long key (1 in 7) was refused once, and some
     * short keys were applied on a full-enough stripe whose growth failed. */
    assert_true(refused >= n / 7);
    assert_true(postponed > 0);
    expect_table(t, &m, "after failed growths");
    /* Growth works again. */
    for (size_t i = n; i < n + n2; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      assert_int_equal(add_ok(t, kb, kl, opid(7, i), 3, NULL), BK_IDEM_APPLIED);
      model_apply(&m, i, 3);
    }
    expect_table(t, &m, "after recovery");
    bk_idem_destroy(t);
    assert_int_equal(st.live, 0);
    model_free(&m);
  }
}

/* The RBF strategy's sizing multiplied without overflow checks:
 * m_bits * (n_past + 2) wrapped (2^62 + 1 bits times 4 is 4 bits) and
 * 2 * ops_per_period wrapped (2^63 + 5 ops sized as 10), so create
 * succeeded with a filter of a few bits that recycled at every insert and
 * never recognised a retry. The FBF strategy rejects the same settings. */
static void test_rbf_size_overflow(void **state) {
  (void)state;
  bk_idem_config huge_m = {.strategy = BK_IDEM_RBF,
                           .retry_timeout = 1000,
                           .m_bits = ((uint64_t)1 << 62) + 1,
                           .k = 3};
  bk_idem_config huge_ops = {.strategy = BK_IDEM_RBF,
                             .retry_timeout = 1000,
                             .ops_per_period = ((uint64_t)1 << 63) + 5};
  const bk_idem_config *cases[] = {&huge_m, &huge_ops};
  const char *what[] = {"m_bits 2^62 + 1", "ops_per_period 2^63 + 5"};
  /* The FBF strategy refuses both. */
  for (size_t i = 0; i < 2; i++) {
    bk_idem_config c = *cases[i];
    c.strategy = BK_IDEM_FBF;
    idem_expect_create_einval(&c, what[i]);
  }
  for (size_t i = 0; i < 2; i++) {
    bk_idem *t = SENTINEL;
    bk_status s = bk_idem_create(&t, cases[i]);
    if (s == BK_OK) {
      /* Show the consequence: a retry is applied again. */
      int64_t v = 0;
      (void)ADD(t, "k", 1, 1, 1, &v);
      bk_idem_outcome oc = add_ok(t, "k", 1, opid(1, 1), 1, &v);
      bk_idem_info in = idem_info_of(t);
      bk_idem_destroy(t);
      fail_msg("RBF with %s: created (filter of %zu bytes); a retry was %s",
               what[i], in.filter_memory,
               oc == BK_IDEM_APPLIED ? "APPLIED again" : "a duplicate");
    }
    assert_int_equal(s, BK_EINVAL);
    assert_ptr_equal(t, SENTINEL);
  }
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_config_edges),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_oom_create),
      cmocka_unit_test(test_oom_add),
      cmocka_unit_test(test_rbf_size_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
