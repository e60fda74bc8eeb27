/* SPDX-License-Identifier: MIT */
/*
 * Tests for bk_idem (include/bloomkit/idem.h), idempotent counters over one
 * duplicate filter of op ids (FBF, adaptive FBF, RBF, or none):
 *   - exactly-once under a scripted retry storm (lost originals, 1-3 retries
 *     up to exactly the retry timeout, simulated time), for every strategy;
 *     NONE over-counts by exactly the retries;
 *   - the window: a retry aged exactly retry_timeout is a duplicate, one
 *     past the FBF's (N+2) t is applied again; the RBF forgets at a recycle;
 *   - concurrency: two threads replaying one op stream apply each op once,
 *     disjoint streams on one key lose nothing, readers (get, iterate, info,
 *     serialize) alongside adds, deletes and the clock;
 *   - snapshot, restore and replay (a write-ahead log's last K ops change
 *     nothing except under NONE), restored keys/values/clock/limits;
 *   - iteration, delete, get;
 *   - every bad argument, int64 overflow (nothing recorded), hostile
 *     snapshots (the codec harness on a table of each strategy, crafted
 *     blobs field by field and record by record);
 *   - allocation-failure injection for create, add of a new key and
 *     deserialize;
 *   - regressions of bugs found here (fixed in 893fc71, see their comments).
 *
 * Run a subset with BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the
 * seed (printed at start).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "core/internal.h"

#define SLOW_BUILD BK_TEST_SLOW_BUILD
#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#else
#define TSAN_BUILD 0
#endif

/* ---- the idem serialized form (type 5, version 1), from src/fbf/idem.c --
 *
 *  offset  size  field
 *       0    24  common prefix: 0 "BKIT", 4 u16 version, 6 u16 type,
 *                8 u32 header length (72), 12 u32 reserved, 16 u64 payload
 *      24     1  strategy    25 1 hash_alg   26 2 reserved
 *      28     4  max_key_len 32 8 seed       40 8 keys
 *      48     8  applied     56 8 duplicates 64 8 filter blob length F
 *      72     F  the filter's own blob (bk_fbf or bk_rbf; none for NONE)
 *    72+F     .  per key: u32 length, the key, u64 value
 *       .     8  XXH3-64 of everything before
 */
enum {
  OFF_VERSION = 4,
  OFF_TYPE = 6,
  OFF_HLEN = 8,
  OFF_RES32 = 12,
  OFF_PLEN = 16,
  OFF_STRATEGY = 24,
  OFF_ALG = 25,
  OFF_RES16 = 26,
  OFF_MAXKEY = 28,
  OFF_SEED = 32,
  OFF_KEYS = 40,
  OFF_APPLIED = 48,
  OFF_DUPS = 56,
  OFF_FSIZE = 64,
  IDEM_HLEN = 72,
};
/* Inside an embedded bk_fbf blob (src/fbf/fbf_io.c). */
enum { FBF_OFF_K = 32, FBF_OFF_ADAPTIVE = 41 };

#define SEED_FALLBACK 0x1DE45EEDull
static uint64_t test_seed(uint64_t salt) {
  return bk_test_seed(SEED_FALLBACK) ^ salt;
}

static char sentinel_storage;
#define SENTINEL ((bk_idem *)(void *)&sentinel_storage)

static const bk_idem_strategy ALL_STRATEGIES[] = {
    BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE, BK_IDEM_RBF, BK_IDEM_NONE};
static const bk_idem_strategy FILTERING[] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE,
                                             BK_IDEM_RBF};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *strat_name(bk_idem_strategy s) {
  switch (s) {
    case BK_IDEM_FBF:
      return "FBF";
    case BK_IDEM_NONE:
      return "NONE";
    case BK_IDEM_RBF:
      return "RBF";
    case BK_IDEM_FBF_ADAPTIVE:
      return "FBF_ADAPTIVE";
  }
  return "?";
}

/* ---- helpers ------------------------------------------------------------ */

static bk_idem *make(const bk_idem_config *cfg) {
  bk_idem *t = NULL;
  bk_status s = bk_idem_create(&t, cfg);
  if (s != BK_OK)
    fail_msg("bk_idem_create(%s): %s", strat_name(cfg->strategy),
             bk_status_name(s));
  assert_non_null(t);
  return t;
}

/* A filter sized so its false positive probability is negligible for every
 * test here: 1e-9 at 10000 ops per period, and the RBF's recycle threshold
 * (~8 x 10000 ids at 1e-9) far above any test's op count. */
static bk_idem_config generous(bk_idem_strategy s, uint64_t timeout,
                               uint64_t seed) {
  bk_idem_config c = {.strategy = s,
                      .retry_timeout = timeout,
                      .ops_per_period = 10000,
                      .fpp = 1e-9,
                      .seed = seed};
  return c;
}

static bk_idem_op_id opid(uint64_t client, uint64_t seq) {
  bk_idem_op_id id = {client, seq};
  return id;
}

/* Add that must succeed; returns the outcome, *value the reported value. */
static bk_idem_outcome add_ok(bk_idem *t, const void *key, size_t len,
                              bk_idem_op_id id, int64_t delta, int64_t *value) {
  int64_t v = 0x5A5A5A5A;
  bk_idem_outcome oc = (bk_idem_outcome)0;
  bk_status s = bk_idem_add(t, key, len, id, delta, &v, &oc);
  if (s != BK_OK)
    fail_msg("bk_idem_add(op %llu/%llu, delta %lld): %s",
             (unsigned long long)id.client, (unsigned long long)id.seq,
             (long long)delta, bk_status_name(s));
  assert_true(oc == BK_IDEM_APPLIED || oc == BK_IDEM_DUPLICATE);
  if (value) *value = v;
  return oc;
}
#define ADD(t, str, client, seq, delta, vp) \
  add_ok((t), (str), strlen(str), opid((client), (seq)), (delta), (vp))

static int64_t get_ok(const bk_idem *t, const void *key, size_t len) {
  int64_t v = 0;
  bk_status s = bk_idem_get(t, key, len, &v);
  if (s != BK_OK) fail_msg("bk_idem_get: %s", bk_status_name(s));
  return v;
}
#define GET(t, str) get_ok((t), (str), strlen(str))

static bk_idem_info info_of(const bk_idem *t) {
  bk_idem_info in;
  memset(&in, 0xA5, sizeof in);
  assert_bk_ok(bk_idem_info_get(t, &in));
  return in;
}

static unsigned char *snapshot(const bk_idem *t, size_t *len) {
  return bk_test_serialize(&bk_test_codec_idem, t, len);
}

static bk_status try_load(const unsigned char *buf, size_t len, bk_idem **out) {
  return bk_test_codec_load(&bk_test_codec_idem, buf, len, (void **)out);
}

static bk_idem *restore(const unsigned char *buf, size_t len,
                        const bk_allocator *al) {
  bk_idem *r = SENTINEL;
  bk_status s = bk_idem_deserialize(buf, len, al, &r);
  if (s != BK_OK) fail_msg("bk_idem_deserialize: %s", bk_status_name(s));
  assert_true(r != NULL && r != SENTINEL);
  return r;
}

/* Keys: a prefix (some empty, some with NUL and high bytes) then the key's
 * index as 8 little-endian bytes, so an iterate callback can find a key's
 * model entry from its bytes. 8 to 38 bytes. */
#define KEY_BUF 64
static size_t key_of(uint64_t i, unsigned char *buf) {
  static const struct {
    const char *p;
    size_t n;
  } pre[] = {{"", 0},
             {"a", 1},
             {"user/", 5},
             {"counter:", 8},
             {"\0\0nul\0", 6},
             {"\xff\xfe", 2},
             {"a-rather-long-prefix/for/keys/", 30}};
  const size_t w = i % (sizeof pre / sizeof pre[0]);
  memcpy(buf, pre[w].p, pre[w].n);
  bk__store_le64(buf + pre[w].n, i);
  return pre[w].n + 8;
}

static bool key_index(const void *key, size_t len, uint64_t *idx) {
  unsigned char buf[KEY_BUF];
  if (len < 8 || len > 38) return false;
  uint64_t i = bk__load_le64((const unsigned char *)key + len - 8);
  if (i > ((uint64_t)1 << 40)) return false;
  size_t n = key_of(i, buf);
  if (n != len || memcmp(buf, key, len) != 0) return false;
  *idx = i;
  return true;
}

/* ---- a reference model of the table: key index -> value, live ---------- */

typedef struct model {
  size_t n;
  int64_t *value;
  unsigned char *live;
} model;

static model model_new(size_t n) {
  model m = {n, calloc(n, sizeof(int64_t)), calloc(n, 1)};
  assert_non_null(m.value);
  assert_non_null(m.live);
  return m;
}

static model model_copy(const model *src) {
  model m = model_new(src->n);
  memcpy(m.value, src->value, src->n * sizeof(int64_t));
  memcpy(m.live, src->live, src->n);
  return m;
}

static void model_free(model *m) {
  free(m->value);
  free(m->live);
  m->value = NULL;
  m->live = NULL;
}

static void model_apply(model *m, uint64_t i, int64_t delta) {
  m->value[i] += delta;
  m->live[i] = 1;
}

typedef struct walk {
  const model *m;
  unsigned *seen;
  uint64_t visits, unknown, twice, dead, wrong;
  uint64_t stop_after;
} walk;

static int walk_cb(void *ctx, const void *key, size_t len, int64_t value) {
  walk *w = ctx;
  w->visits++;
  uint64_t i;
  if (!key_index(key, len, &i) || i >= w->m->n) {
    w->unknown++;
  } else {
    if (w->seen[i]++) w->twice++;
    if (!w->m->live[i])
      w->dead++;
    else if (w->m->value[i] != value)
      w->wrong++;
  }
  return w->stop_after && w->visits >= w->stop_after;
}

/* The table holds exactly the model's live keys with their values: iterate
 * visits each once (and nothing else), get agrees, deleted keys are
 * ENOTFOUND, info counts them. */
static void expect_table(const bk_idem *t, const model *m, const char *what) {
  walk w;
  memset(&w, 0, sizeof w);
  w.m = m;
  w.seen = calloc(m->n ? m->n : 1, sizeof(unsigned));
  assert_non_null(w.seen);
  assert_bk_ok(bk_idem_iterate(t, walk_cb, &w));
  uint64_t live = 0, missed = 0, get_bad = 0;
  for (size_t i = 0; i < m->n; i++) {
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(i, kb);
    int64_t v = 0;
    bk_status s = bk_idem_get(t, kb, kl, &v);
    if (m->live[i]) {
      live++;
      if (!w.seen[i]) missed++;
      if (s != BK_OK || v != m->value[i]) get_bad++;
    } else if (s != BK_ENOTFOUND) {
      get_bad++;
    }
  }
  if (w.unknown || w.twice || w.dead || w.wrong || missed || get_bad ||
      w.visits != live)
    fail_msg(
        "%s: iterate visited %llu (expected %llu): %llu unknown, %llu "
        "twice, %llu deleted, %llu wrong value, %llu missed; %llu get "
        "mismatches",
        what, (unsigned long long)w.visits, (unsigned long long)live,
        (unsigned long long)w.unknown, (unsigned long long)w.twice,
        (unsigned long long)w.dead, (unsigned long long)w.wrong,
        (unsigned long long)missed, (unsigned long long)get_bad);
  assert_int_equal(info_of(t).keys, live);
  free(w.seen);
}

/* ---- creation and basics --------------------------------------------------
 */

static void test_create_basics(void **state) {
  (void)state;
  /* Defaults: FBF, N = 2, t = ceil(T / 3): the window covers T. */
  bk_idem_config c = {.retry_timeout = 3001};
  bk_idem *t = make(&c);
  bk_idem_info in = info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_FBF);
  assert_int_equal(in.keys, 0);
  assert_int_equal(in.applied, 0);
  assert_int_equal(in.duplicates, 0);
  assert_true(in.filter_memory > 0);
  assert_true(in.table_memory > 0);
  assert_true(in.fpp == 0.0);
  assert_true(in.window_min >= 3001);
  assert_int_equal(in.n_filters, 4);
  assert_int_equal(in.refresh_period, 1001);
  int64_t v = 0;
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 5);
  assert_int_equal(ADD(t, "a", 1, 2, -7, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, -2);
  /* value and outcome may be NULL. */
  assert_bk_ok(bk_idem_add(t, "a", 1, opid(1, 3), 10, NULL, NULL));
  assert_int_equal(GET(t, "a"), 8);
  assert_int_equal(ADD(t, "a", 1, 3, 10, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 8);
  /* Op ids are (client, seq) pairs: (2, 3) and (3, 1) are new. */
  assert_int_equal(ADD(t, "a", 2, 3, 1, &v), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "a", 3, 1, 1, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 10);
  /* An op id is table-wide: the same id on another key is a duplicate. */
  assert_int_equal(ADD(t, "b", 1, 1, 100, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 0);
  assert_bk_status(bk_idem_get(t, "b", 1, &v), BK_ENOTFOUND);
  in = info_of(t);
  assert_int_equal(in.keys, 1);
  assert_int_equal(in.applied, 5);
  assert_int_equal(in.duplicates, 2);
  assert_true(in.fpp >= 0.0 && in.fpp < 1e-6);
  bk_idem_destroy(t);

  /* NONE needs no timeout and has no filter. */
  bk_idem_config none = {.strategy = BK_IDEM_NONE};
  t = make(&none);
  in = info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_NONE);
  assert_int_equal(in.filter_memory, 0);
  assert_true(in.fpp == 0.0);
  assert_int_equal(in.window_min, 0);
  assert_int_equal(in.n_filters, 0);
  assert_int_equal(in.refresh_period, 0);
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "a", 1, 1, 5, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 10);
  bk_idem_destroy(t);

  /* RBF: a filter, no time window. */
  bk_idem_config rbf = {.strategy = BK_IDEM_RBF, .retry_timeout = 10};
  t = make(&rbf);
  in = info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_RBF);
  assert_true(in.filter_memory > 0);
  assert_int_equal(in.window_min, 0);
  assert_int_equal(in.n_filters, 0);
  assert_int_equal(in.refresh_period, 0);
  bk_idem_destroy(t);

  /* Adaptive, Murmur3, explicit m and k, n_past 1, a start time. */
  bk_idem_config ad = {.strategy = BK_IDEM_FBF_ADAPTIVE,
                       .retry_timeout = 100,
                       .n_past = 1,
                       .m_bits = 4096,
                       .k = 4,
                       .start_time = 1000,
                       .hash_alg = BK_HASH_MURMUR3,
                       .seed = 12345};
  t = make(&ad);
  in = info_of(t);
  assert_int_equal(in.strategy, BK_IDEM_FBF_ADAPTIVE);
  assert_true(in.window_min >= 100);
  /* The clock starts at start_time. */
  assert_bk_status(bk_idem_advance(t, 999), BK_EINVAL);
  assert_bk_ok(bk_idem_advance(t, 1000));
  bk_idem_destroy(t);
  bk_idem_destroy(NULL);
}

/* ---- exactly-once under a retry storm -------------------------------------
 *
 * 8 clients issue ops (per-client sequence numbers) to 64 keys, one op every
 * 0-2 time units. An eighth of the originals are lost (the first copy to
 * arrive is a retry, up to T/2 later); half the ops are retried 1-3 times
 * after their first arrival, each retry at most T = retry_timeout later
 * (every 97th op once exactly at T). Even keys count hits (+1), odd keys
 * carry deltas in [-50, 100]. Arrivals are replayed in time order with
 * bk_idem_advance driving the clock. */

typedef struct storm_op {
  bk_idem_op_id id;
  uint32_t key;
  int64_t delta;
} storm_op;

typedef struct arrival {
  uint64_t time;
  uint32_t op;
  uint32_t nth; /* 0: the first copy to arrive */
} arrival;

typedef struct storm {
  storm_op *ops;
  size_t n_ops;
  arrival *arr;
  size_t n_arr;
  uint32_t n_keys;
  uint64_t lost, at_timeout;
} storm;

static int cmp_arrival(const void *a, const void *b) {
  const arrival *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if ((x->nth != 0) != (y->nth != 0)) return x->nth != 0 ? 1 : -1;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  return x->nth < y->nth ? -1 : x->nth > y->nth;
}

static storm storm_make(uint64_t seed, size_t n_ops, uint32_t n_keys,
                        uint64_t timeout) {
  storm s;
  memset(&s, 0, sizeof s);
  s.ops = calloc(n_ops, sizeof *s.ops);
  s.arr = calloc(n_ops * 4, sizeof *s.arr);
  assert_non_null(s.ops);
  assert_non_null(s.arr);
  s.n_ops = n_ops;
  s.n_keys = n_keys;
  uint64_t rng = seed, now = 0, next_seq[8] = {0};
  for (size_t i = 0; i < n_ops; i++) {
    unsigned c = (unsigned)(bk_test_next(&rng) % 8);
    storm_op *op = &s.ops[i];
    op->id = opid(1000 + c, ++next_seq[c]);
    op->key = (uint32_t)(bk_test_next(&rng) % n_keys);
    op->delta = op->key % 2 == 0 ? 1 : (int64_t)(bk_test_next(&rng) % 151) - 50;
    now += bk_test_next(&rng) % 3;
    bool lost = bk_test_next(&rng) % 8 == 0;
    uint64_t first = lost ? now + 1 + bk_test_next(&rng) % (timeout / 2) : now;
    s.lost += lost;
    s.arr[s.n_arr++] = (arrival){first, (uint32_t)i, 0};
    unsigned retries =
        bk_test_next(&rng) % 2 ? 1 + (unsigned)(bk_test_next(&rng) % 3) : 0;
    for (unsigned q = 0; q < retries; q++) {
      uint64_t d = (i % 97 == 0 && q == 0) ? timeout
                                           : bk_test_next(&rng) % (timeout + 1);
      s.at_timeout += d == timeout;
      s.arr[s.n_arr++] = (arrival){first + d, (uint32_t)i, q + 1};
    }
  }
  qsort(s.arr, s.n_arr, sizeof *s.arr, cmp_arrival);
  return s;
}

static void storm_free(storm *s) {
  free(s->ops);
  free(s->arr);
}

static void storm_run(const storm *s, bk_idem_strategy strategy,
                      uint64_t timeout, const model *exact) {
  bk_idem_config cfg = generous(strategy, timeout, test_seed(0x57));
  bk_idem *t = make(&cfg);
  model m = model_new(s->n_keys);
  uint64_t bad_outcome = 0, bad_value = 0, retries = 0, retries_unit = 0;
  int64_t retried_delta = 0;
  uint64_t last = 0;
  bool filtering = strategy != BK_IDEM_NONE;
  for (size_t a = 0; a < s->n_arr; a++) {
    const arrival *ar = &s->arr[a];
    const storm_op *op = &s->ops[ar->op];
    if (ar->time != last) {
      assert_bk_ok(bk_idem_advance(t, ar->time));
      last = ar->time;
    }
    bool want_applied = !filtering || ar->nth == 0;
    if (ar->nth) {
      retries++;
      retries_unit += op->key % 2 == 0;
      retried_delta += op->delta;
    }
    if (want_applied) model_apply(&m, op->key, op->delta);
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(op->key, kb);
    int64_t v;
    bk_idem_outcome oc = add_ok(t, kb, kl, op->id, op->delta, &v);
    if (oc != (want_applied ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE)) {
      if (bad_outcome++ < 5)
        print_message(
            "%s: op %u (client %llu seq %llu) arrival %u at %llu: %s\n",
            strat_name(strategy), ar->op, (unsigned long long)op->id.client,
            (unsigned long long)op->id.seq, ar->nth,
            (unsigned long long)ar->time,
            oc == BK_IDEM_APPLIED ? "APPLIED" : "DUPLICATE");
    }
    /* The reported value: after the apply, or the current one for a
     * duplicate (which includes the original). */
    if (v != m.value[op->key]) bad_value++;
  }
  if (bad_outcome || bad_value)
    fail_msg("%s: %llu wrong outcomes, %llu wrong values of %zu arrivals",
             strat_name(strategy), (unsigned long long)bad_outcome,
             (unsigned long long)bad_value, s->n_arr);
  expect_table(t, &m, strat_name(strategy));
  bk_idem_info in = info_of(t);
  assert_int_equal(in.strategy, strategy);
  if (filtering) {
    /* Exactly once: the table equals every op applied once. */
    for (uint32_t k = 0; k < s->n_keys; k++) {
      assert_int_equal(m.live[k], exact->live[k]);
      assert_int_equal(m.value[k], exact->value[k]);
    }
    assert_int_equal(in.applied, s->n_ops);
    assert_int_equal(in.duplicates, retries);
  } else {
    /* Vanilla counters count every retry: the hit counters are over by
     * exactly the number of their retries, all counters by the retried
     * deltas. */
    int64_t over_unit = 0, over_all = 0;
    for (uint32_t k = 0; k < s->n_keys; k++) {
      over_all += m.value[k] - exact->value[k];
      if (k % 2 == 0) over_unit += m.value[k] - exact->value[k];
    }
    assert_int_equal(over_unit, retries_unit);
    assert_int_equal(over_all, retried_delta);
    assert_int_equal(in.applied, s->n_arr);
    assert_int_equal(in.duplicates, 0);
    assert_true(retries_unit > 0);
  }
  assert_int_equal(retries, s->n_arr - s->n_ops);
  model_free(&m);
  bk_idem_destroy(t);
}

static void test_retry_storm(void **state) {
  (void)state;
  const uint64_t timeout = 1000;
  const size_t n_ops = SLOW_BUILD ? 5000 : 20000;
  storm s = storm_make(test_seed(0x5708), n_ops, 64, timeout);
  model exact = model_new(s.n_keys);
  for (size_t i = 0; i < s.n_ops; i++)
    model_apply(&exact, s.ops[i].key, s.ops[i].delta);
  print_message(
      "storm: %zu ops, %zu arrivals (%zu retries, %llu lost originals, "
      "%llu retries at exactly the timeout), clock to %llu\n",
      s.n_ops, s.n_arr, s.n_arr - s.n_ops, (unsigned long long)s.lost,
      (unsigned long long)s.at_timeout,
      (unsigned long long)s.arr[s.n_arr - 1].time);
  assert_true(s.at_timeout > 0);
  for (size_t i = 0; i < COUNT(ALL_STRATEGIES); i++)
    storm_run(&s, ALL_STRATEGIES[i], timeout, &exact);
  model_free(&exact);
  storm_free(&s);
}

/* ---- the window ------------------------------------------------------------
 *
 * An op id inserted at s is remembered at least retry_timeout (the FBF's
 * (N+1) t covers it) and at most (N+2) t. Inserted at every phase of a
 * period: a retry aged T - 1 and T is a duplicate; one past (N+2) t is
 * applied again (the documented behaviour for a retry after the window),
 * and is then remembered anew. */
static void window_case(bk_idem_strategy strategy, uint64_t timeout,
                        unsigned n_past, uint64_t period) {
  const unsigned n = n_past ? n_past : 2;
  const uint64_t t_eff = period ? period : (timeout + n) / (n + 1);
  /* The adaptive FBF may hold up to 4 (N + 2) filters (its default
   * ceiling) and never lengthens t past the configured one. */
  const uint64_t max_window =
      (strategy == BK_IDEM_FBF_ADAPTIVE ? 4 * (n + 2) : n + 2) * t_eff;
  const uint64_t start = 7;
  const uint64_t phases[] = {0, 1 % t_eff, t_eff / 2,
                             (t_eff + t_eff - 2) % t_eff, t_eff - 1};
  for (size_t ph = 0; ph < COUNT(phases); ph++) {
    bk_idem_config cfg = generous(strategy, timeout, test_seed(ph));
    cfg.n_past = n_past;
    cfg.refresh_period = period;
    cfg.start_time = start;
    bk_idem *t = make(&cfg);
    bk_idem_info in0 = info_of(t);
    assert_true(in0.window_min >= timeout);
    assert_int_equal(in0.refresh_period, t_eff);
    assert_int_equal(in0.n_filters, n + 2);
    /* Some history first, so the clock is far from the start. */
    const uint64_t s0 = start + 20 * t_eff + phases[ph];
    for (uint64_t now = start; now < s0; now += t_eff / 3 + 1) {
      assert_bk_ok(bk_idem_advance(t, now));
      assert_int_equal(ADD(t, "noise", 9, now, 1, NULL), BK_IDEM_APPLIED);
    }
    assert_bk_ok(bk_idem_advance(t, s0));
    int64_t v;
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 5);
    assert_bk_ok(bk_idem_advance(t, s0 + timeout - 1));
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_DUPLICATE);
    assert_int_equal(v, 5);
    assert_bk_ok(bk_idem_advance(t, s0 + timeout));
    bk_idem_outcome oc = add_ok(t, "k", 1, opid(1, 1), 5, &v);
    if (oc != BK_IDEM_DUPLICATE)
      fail_msg(
          "%s T=%llu N=%u t=%llu phase %llu: a retry aged exactly T "
          "was applied again",
          strat_name(strategy), (unsigned long long)timeout, n,
          (unsigned long long)t_eff, (unsigned long long)phases[ph]);
    assert_int_equal(v, 5);
    /* Past the longest window the id is forgotten. */
    assert_bk_ok(bk_idem_advance(t, s0 + max_window + 1));
    oc = add_ok(t, "k", 1, opid(1, 1), 5, &v);
    if (oc != BK_IDEM_APPLIED)
      fail_msg(
          "%s T=%llu N=%u t=%llu phase %llu: a retry past (N+2)t was "
          "still a duplicate",
          strat_name(strategy), (unsigned long long)timeout, n,
          (unsigned long long)t_eff, (unsigned long long)phases[ph]);
    assert_int_equal(v, 10);
    assert_int_equal(ADD(t, "k", 1, 1, 5, &v), BK_IDEM_DUPLICATE);
    assert_int_equal(v, 10);
    assert_int_equal(GET(t, "k"), 10);
    bk_idem_info in = info_of(t);
    assert_int_equal(in.duplicates, 3);
    bk_idem_destroy(t);
  }
}

static void test_window(void **state) {
  (void)state;
  window_case(BK_IDEM_FBF, 3000, 0, 0);    /* t = 1000, (N+1)t = T */
  window_case(BK_IDEM_FBF, 3001, 0, 0);    /* t = 1001 (ceil) */
  window_case(BK_IDEM_FBF, 3000, 2, 1500); /* (N+1)t = 4500 > T */
  window_case(BK_IDEM_FBF, 3000, 1, 0);    /* N = 1: t = 1500 */
  window_case(BK_IDEM_FBF, 3000, 5, 500);  /* N = 5 */
  window_case(BK_IDEM_FBF, 1, 0, 0);       /* T = t = 1 */
  window_case(BK_IDEM_FBF_ADAPTIVE, 3000, 0, 0);
  window_case(BK_IDEM_FBF_ADAPTIVE, 3000, 3, 800);
}

/* The RBF baseline has no clock: a retry is a duplicate however late, until
 * the filter recycles; then everything is forgotten and it applies again. */
static void test_rbf_forgets_at_recycle(void **state) {
  (void)state;
  bk_idem_config cfg = {.strategy = BK_IDEM_RBF,
                        .retry_timeout = 10,
                        .m_bits = 256,
                        .k = 2,
                        .target_fpp = 0.05,
                        .seed = test_seed(0x4BF)};
  bk_idem *t = make(&cfg);
  int64_t v;
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_APPLIED);
  assert_bk_ok(bk_idem_advance(t, 1000000000));
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_DUPLICATE);
  assert_int_equal(v, 3);
  /* Distinct ops until the estimate falls back (the recycle). */
  double prev = info_of(t).fpp;
  uint64_t seq = 0;
  for (;;) {
    assert_true(seq < 100000);
    (void)ADD(t, "other", 2, seq++, 1, NULL);
    double now = info_of(t).fpp;
    if (now < prev) break;
    prev = now;
  }
  assert_true(info_of(t).fpp == 0.0);
  assert_int_equal(ADD(t, "k", 1, 1, 3, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, 6);
  bk_idem_destroy(t);
}

/* ---- concurrency -----------------------------------------------------------
 */

enum { RACE_SAME_STREAM, RACE_SAME_IDS_TWO_KEYS, RACE_DISJOINT_ONE_KEY };

typedef struct race {
  bk_idem *t;
  int mode;
  unsigned n;
  uint32_t n_keys;
  const uint32_t *op_key; /* SAME_STREAM: key of op j */
  const uint32_t *cnt_le; /* ... ops on that key with index <= j */
  unsigned char *outcome[2];
  int64_t applied_sum[2];
  _Atomic unsigned progress[2];
  _Atomic uint64_t clock;
  _Atomic uint64_t errors, low_values;
} race;

typedef struct race_arg {
  race *rc;
  unsigned tid;
} race_arg;

static void *race_adder(void *p) {
  race_arg *a = p;
  race *rc = a->rc;
  const unsigned me = a->tid, other = me ^ 1u;
  const bool same = rc->mode != RACE_DISJOINT_ONE_KEY;
  for (unsigned j = 0; j < rc->n; j++) {
    /* Same ids: loose lockstep, so the two copies of an op really race.
     * Always: the clock (ops as time units) within 8 of j, so the second
     * copy arrives well inside the window and a period never holds more
     * than ~60 ops (a starved clock would overfill the filter). */
    if (same)
      while (atomic_load(&rc->progress[other]) + 4 < j &&
             atomic_load(&rc->progress[other]) < rc->n)
        sched_yield();
    while (atomic_load(&rc->clock) + 8 < j) sched_yield();
    unsigned char kb[KEY_BUF];
    size_t kl;
    bk_idem_op_id id;
    int64_t delta;
    switch (rc->mode) {
      case RACE_SAME_STREAM:
        kl = key_of(rc->op_key[j], kb);
        id = opid(1 + j % 5, j);
        delta = 1;
        break;
      case RACE_SAME_IDS_TWO_KEYS:
        kl = key_of(me == 0 ? 3 : 4, kb);
        id = opid(1 + j % 5, j);
        delta = 1;
        break;
      default:
        kl = key_of(0, kb);
        id = opid(100 + me, j);
        delta = me == 0 ? (int64_t)(j % 7) + 1 : -(int64_t)(j % 5) - 1;
        break;
    }
    int64_t v = 0;
    bk_idem_outcome oc = (bk_idem_outcome)0;
    if (bk_idem_add(rc->t, kb, kl, id, delta, &v, &oc) != BK_OK)
      atomic_fetch_add(&rc->errors, 1);
    rc->outcome[me][j] = (unsigned char)oc;
    if (oc == BK_IDEM_APPLIED) rc->applied_sum[me] += delta;
    /* All ops up to j on this key were applied by now (this thread saw
     * each, as new or as a duplicate): the value includes them. */
    if (rc->mode == RACE_SAME_STREAM && v < (int64_t)rc->cnt_le[j])
      atomic_fetch_add(&rc->low_values, 1);
    atomic_store(&rc->progress[me], j + 1);
  }
  atomic_store(&rc->progress[me], rc->n + 8);
  return NULL;
}

/* Two adders; this thread drives the clock: the slower adder's progress. */
static void race_run(race *rc) {
  pthread_t th[2];
  race_arg args[2];
  for (unsigned i = 0; i < 2; i++) {
    rc->outcome[i] = calloc(rc->n, 1);
    assert_non_null(rc->outcome[i]);
    args[i].rc = rc;
    args[i].tid = i;
    assert_int_equal(pthread_create(&th[i], NULL, race_adder, &args[i]), 0);
  }
  uint64_t last = 0;
  for (;;) {
    unsigned p0 = atomic_load(&rc->progress[0]);
    unsigned p1 = atomic_load(&rc->progress[1]);
    if (p0 >= rc->n && p1 >= rc->n) break;
    uint64_t now = p0 < p1 ? p0 : p1;
    if (now > last) {
      if (bk_idem_advance(rc->t, now) != BK_OK)
        atomic_fetch_add(&rc->errors, 1);
      last = now;
      atomic_store(&rc->clock, now);
    } else {
      sched_yield();
    }
  }
  for (unsigned i = 0; i < 2; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
}

static void race_free(race *rc) {
  free(rc->outcome[0]);
  free(rc->outcome[1]);
}

/* Sized for the race: ops are time units, T = 64 (t = 22); the FBF for
 * 1000 ops a period at 1e-9, the RBF with its recycle threshold far above
 * n (a recycle between the two copies of an op would re-apply it). */
static bk_idem_config race_config(bk_idem_strategy s, unsigned n,
                                  uint64_t seed) {
  bk_idem_config c = {.strategy = s,
                      .retry_timeout = 64,
                      .ops_per_period = s == BK_IDEM_RBF ? n : 1000,
                      .fpp = 1e-9,
                      .seed = seed};
  return c;
}

static void test_concurrent_same_stream(void **state) {
  (void)state;
  const unsigned n = TSAN_BUILD ? 3000 : SLOW_BUILD ? 10000 : 40000;
  const uint32_t n_keys = 16;
  uint32_t *op_key = malloc(n * sizeof *op_key);
  uint32_t *cnt_le = malloc(n * sizeof *cnt_le);
  uint32_t per_key[16] = {0};
  assert_non_null(op_key);
  assert_non_null(cnt_le);
  uint64_t rng = test_seed(0xC0);
  for (unsigned j = 0; j < n; j++) {
    op_key[j] = (uint32_t)(bk_test_next(&rng) % n_keys);
    cnt_le[j] = ++per_key[op_key[j]];
  }
  for (size_t si = 0; si < COUNT(FILTERING); si++) {
    bk_idem_strategy strat = FILTERING[si];
    for (int mode = RACE_SAME_STREAM; mode <= RACE_SAME_IDS_TWO_KEYS; mode++) {
      race rc;
      memset(&rc, 0, sizeof rc);
      bk_idem_config cfg = race_config(strat, n, test_seed(si));
      rc.t = make(&cfg);
      rc.mode = mode;
      rc.n = n;
      rc.n_keys = n_keys;
      rc.op_key = op_key;
      rc.cnt_le = cnt_le;
      race_run(&rc);
      unsigned both = 0, neither = 0;
      for (unsigned j = 0; j < n; j++) {
        unsigned a = (rc.outcome[0][j] == BK_IDEM_APPLIED) +
                     (rc.outcome[1][j] == BK_IDEM_APPLIED);
        both += a == 2;
        neither += a == 0;
      }
      if (atomic_load(&rc.errors) || both || neither ||
          atomic_load(&rc.low_values))
        fail_msg(
            "%s mode %d: %llu errors, %u ops applied twice, %u never, %llu "
            "values missing the ops already applied",
            strat_name(strat), mode,
            (unsigned long long)atomic_load(&rc.errors), both, neither,
            (unsigned long long)atomic_load(&rc.low_values));
      bk_idem_info in = info_of(rc.t);
      assert_int_equal(in.applied, n);
      assert_int_equal(in.duplicates, n);
      if (mode == RACE_SAME_STREAM) {
        model m = model_new(n_keys);
        for (uint32_t k = 0; k < n_keys; k++)
          if (per_key[k]) model_apply(&m, k, per_key[k]);
        expect_table(rc.t, &m, strat_name(strat));
        model_free(&m);
      } else {
        /* The same id on two keys at once: applied to exactly one. */
        unsigned char k3[KEY_BUF], k4[KEY_BUF];
        size_t l3 = key_of(3, k3), l4 = key_of(4, k4);
        int64_t v3 = 0, v4 = 0;
        (void)bk_idem_get(rc.t, k3, l3, &v3);
        (void)bk_idem_get(rc.t, k4, l4, &v4);
        assert_int_equal(v3 + v4, n);
        assert_int_equal(v3, rc.applied_sum[0]);
        assert_int_equal(v4, rc.applied_sum[1]);
      }
      race_free(&rc);
      bk_idem_destroy(rc.t);
    }
  }
  free(op_key);
  free(cnt_le);
}

/* Two clients with distinct op ids on ONE key, the clock advancing
 * concurrently: nothing lost, every op applied (negligible fpp), the final
 * value the sum. */
static void test_concurrent_disjoint_one_key(void **state) {
  (void)state;
  const unsigned n = TSAN_BUILD ? 3000 : SLOW_BUILD ? 10000 : 40000;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    race rc;
    memset(&rc, 0, sizeof rc);
    bk_idem_config cfg = race_config(strat, 2 * n, test_seed(0xD0 + si));
    rc.t = make(&cfg);
    rc.mode = RACE_DISJOINT_ONE_KEY;
    rc.n = n;
    race_run(&rc);
    int64_t want = 0;
    for (unsigned j = 0; j < n; j++)
      want += (int64_t)(j % 7) + 1 - ((int64_t)(j % 5) + 1);
    unsigned dups = 0;
    for (unsigned j = 0; j < n; j++)
      dups += (rc.outcome[0][j] != BK_IDEM_APPLIED) +
              (rc.outcome[1][j] != BK_IDEM_APPLIED);
    assert_int_equal(atomic_load(&rc.errors), 0);
    assert_int_equal(dups, 0);
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(0, kb);
    assert_int_equal(get_ok(rc.t, kb, kl), want);
    bk_idem_info in = info_of(rc.t);
    assert_int_equal(in.applied, 2 * n);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 1);
    race_free(&rc);
    bk_idem_destroy(rc.t);
  }
}

/* Readers alongside writers: two adders (32 hot keys, plus short-lived keys
 * they create, check and delete), a reader (get, iterate, info, snapshots
 * restored on the spot), this thread advancing the clock (the slower
 * adder's op count; adders stay within 8 of it). Mostly for the
 * thread sanitizer; also: hot values never go down, every snapshot is
 * readable, and the end state is exact. */
typedef struct rw {
  bk_idem *t;
  unsigned n;
  _Atomic int adders_done;
  _Atomic uint64_t errors, regressions, snapshots, snapshot_errors;
  _Atomic uint64_t iterations;
  _Atomic unsigned progress[2];
  _Atomic uint64_t clock;
} rw;

typedef struct rw_arg {
  rw *r;
  unsigned tid;
} rw_arg;

#define HOT 32u

static void *rw_adder(void *p) {
  rw_arg *a = p;
  rw *r = a->r;
  for (unsigned j = 0; j < r->n; j++) {
    /* Keep within 8 ops of the clock (see race_adder). */
    while (atomic_load(&r->clock) + 8 < j) sched_yield();
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(j % HOT, kb);
    int64_t v;
    bk_idem_outcome oc;
    if (bk_idem_add(r->t, kb, kl, opid(10 + a->tid, 2 * (uint64_t)j),
                    (int64_t)(j % 3) + 1, &v, &oc) != BK_OK ||
        oc != BK_IDEM_APPLIED)
      atomic_fetch_add(&r->errors, 1);
    if (j % 4 == 0) {
      /* A short-lived key only this thread touches. */
      kl = key_of(1000 + 2 * (uint64_t)j + a->tid, kb);
      if (bk_idem_add(r->t, kb, kl, opid(10 + a->tid, 2 * (uint64_t)j + 1), 7,
                      &v, &oc) != BK_OK ||
          v != 7)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_get(r->t, kb, kl, &v) != BK_OK || v != 7)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_remove(r->t, kb, kl) != BK_OK)
        atomic_fetch_add(&r->errors, 1);
      if (bk_idem_get(r->t, kb, kl, &v) != BK_ENOTFOUND)
        atomic_fetch_add(&r->errors, 1);
    }
    atomic_store(&r->progress[a->tid], j + 1);
  }
  atomic_store(&r->progress[a->tid], r->n + 8);
  atomic_fetch_add(&r->adders_done, 1);
  return NULL;
}

static int rw_walk(void *ctx, const void *key, size_t len, int64_t value) {
  uint64_t *bad = ctx;
  uint64_t i;
  if (!key_index(key, len, &i) || (i < HOT ? value < 0 : value != 7)) (*bad)++;
  return 0;
}

static void *rw_reader(void *p) {
  rw *r = p;
  int64_t last[HOT] = {0};
  while (atomic_load(&r->adders_done) < 2) {
    for (unsigned k = 0; k < HOT; k++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(k, kb);
      int64_t v;
      if (bk_idem_get(r->t, kb, kl, &v) != BK_OK) {
        atomic_fetch_add(&r->errors, 1);
        continue;
      }
      if (v < last[k]) atomic_fetch_add(&r->regressions, 1);
      last[k] = v;
    }
    uint64_t bad = 0;
    if (bk_idem_iterate(r->t, rw_walk, &bad) != BK_OK || bad)
      atomic_fetch_add(&r->errors, 1);
    atomic_fetch_add(&r->iterations, 1);
    bk_idem_info in;
    if (bk_idem_info_get(r->t, &in) != BK_OK || in.keys < HOT)
      atomic_fetch_add(&r->errors, 1);
    /* A snapshot every 4th pass, and a breather: the point is overlap with
     * the writers, not starving them (2 cores). */
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
    if (atomic_load(&r->iterations) % 4 != 1) continue;
    size_t size = 0, written = 0;
    if (bk_idem_serialized_size(r->t, &size) != BK_OK) {
      atomic_fetch_add(&r->errors, 1);
      continue;
    }
    size += 64 * 50; /* room for keys added meanwhile */
    unsigned char *buf = malloc(size);
    if (!buf) continue;
    bk_status s = bk_idem_serialize(r->t, buf, size, &written);
    if (s == BK_OK) {
      bk_idem *c = NULL;
      if (bk_idem_deserialize(buf, written, NULL, &c) != BK_OK) {
        atomic_fetch_add(&r->snapshot_errors, 1);
      } else {
        /* A snapshot sees each key before or after an add. */
        bad = 0;
        if (bk_idem_iterate(c, rw_walk, &bad) != BK_OK || bad)
          atomic_fetch_add(&r->snapshot_errors, 1);
        for (unsigned k = 0; k < HOT; k++) {
          unsigned char kb[KEY_BUF];
          size_t kl = key_of(k, kb);
          int64_t v;
          if (bk_idem_get(c, kb, kl, &v) != BK_OK || v < 0)
            atomic_fetch_add(&r->snapshot_errors, 1);
        }
        bk_idem_destroy(c);
        atomic_fetch_add(&r->snapshots, 1);
      }
    } else if (s != BK_EINVAL) {
      atomic_fetch_add(&r->errors, 1);
    }
    free(buf);
  }
  return NULL;
}

static void test_concurrent_readers(void **state) {
  (void)state;
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE,
                                     BK_IDEM_NONE};
  for (size_t si = 0; si < COUNT(strats); si++) {
    rw r;
    memset(&r, 0, sizeof r);
    r.n = TSAN_BUILD ? 4000 : SLOW_BUILD ? 8000 : 20000;
    bk_idem_config cfg = generous(strats[si], 1000, test_seed(0xE0 + si));
    /* Periods hold at most ~1000 ops (the adders keep to the clock): a
     * smaller filter at 1e-9 keeps the snapshots cheap. */
    cfg.ops_per_period = 2000;
    r.t = make(&cfg);
    /* The hot keys exist before the readers start. */
    for (unsigned k = 0; k < HOT; k++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(k, kb);
      (void)add_ok(r.t, kb, kl, opid(99, k), 0, NULL);
    }
    pthread_t th[3];
    rw_arg args[2] = {{&r, 0}, {&r, 1}};
    assert_int_equal(pthread_create(&th[0], NULL, rw_adder, &args[0]), 0);
    assert_int_equal(pthread_create(&th[1], NULL, rw_adder, &args[1]), 0);
    assert_int_equal(pthread_create(&th[2], NULL, rw_reader, &r), 0);
    uint64_t last = 0;
    while (atomic_load(&r.adders_done) < 2) {
      unsigned p0 = atomic_load(&r.progress[0]);
      unsigned p1 = atomic_load(&r.progress[1]);
      uint64_t now = p0 < p1 ? p0 : p1;
      if (now > last) {
        if (bk_idem_advance(r.t, now) != BK_OK) atomic_fetch_add(&r.errors, 1);
        last = now;
        atomic_store(&r.clock, now);
      } else {
        sched_yield();
      }
    }
    for (unsigned i = 0; i < 3; i++)
      assert_int_equal(pthread_join(th[i], NULL), 0);
    print_message("%s: %llu reader passes, %llu snapshots restored\n",
                  strat_name(strats[si]),
                  (unsigned long long)atomic_load(&r.iterations),
                  (unsigned long long)atomic_load(&r.snapshots));
    assert_int_equal(atomic_load(&r.errors), 0);
    assert_int_equal(atomic_load(&r.regressions), 0);
    assert_int_equal(atomic_load(&r.snapshot_errors), 0);
    model m = model_new(HOT);
    for (unsigned k = 0; k < HOT; k++) m.live[k] = 1;
    for (unsigned tid = 0; tid < 2; tid++)
      for (unsigned j = 0; j < r.n; j++)
        m.value[j % HOT] += (int64_t)(j % 3) + 1;
    expect_table(r.t, &m, strat_name(strats[si]));
    model_free(&m);
    bk_idem_info in = info_of(r.t);
    assert_int_equal(in.applied,
                     HOT + 2 * (uint64_t)r.n + 2 * (uint64_t)((r.n + 3) / 4));
    bk_idem_destroy(r.t);
  }
}

/* ---- snapshot, restore, replay ----------------------------------------------
 *
 * A host snapshots the table, keeps a write-ahead log, crashes, restores the
 * snapshot and replays the log from a little before it (the last K ops the
 * snapshot already holds) onwards. With a filter the K ops are duplicates
 * (the values do not move) and the restored table ends equal to the one
 * that never crashed. With NONE the replay counts the K ops again (the
 * documented reason to use a filter). */
static void snapshot_case(bk_idem_strategy strategy) {
  const char *name = strat_name(strategy);
  const bool filtering = strategy != BK_IDEM_NONE;
  const uint64_t T = 1000;
  const size_t n_keys = 300, tmp_from = 250;
  const size_t L = SLOW_BUILD ? 3000 : 12000, M = 500, K = 200;
  bk_idem_config cfg = generous(strategy, T, test_seed(0x5A));
  cfg.max_key_len = 40;
  if (strategy == BK_IDEM_RBF || strategy == BK_IDEM_NONE) {
    cfg.hash_alg = BK_HASH_MURMUR3;
    cfg.seed = (uint32_t)cfg.seed;
  }
  bk_idem *t = make(&cfg);
  /* The log: op i at time i. Keys from tmp_from on are used only in the
   * first half and deleted at its end. */
  typedef struct logop {
    uint32_t key;
    int64_t delta;
  } logop;
  logop *log = malloc((L + M) * sizeof *log);
  assert_non_null(log);
  uint64_t rng = test_seed(0x106);
  for (size_t i = 0; i < L + M; i++) {
    log[i].key =
        (uint32_t)(bk_test_next(&rng) % (i < L / 2 ? n_keys : tmp_from));
    log[i].delta = (int64_t)(bk_test_next(&rng) % 2001) - 1000;
  }
  model m = model_new(n_keys);
  uint64_t dups = 0;
  for (size_t i = 0; i < L + M; i++) {
    if (i == L / 2)
      for (size_t k = tmp_from; k < n_keys; k++) {
        if (!m.live[k]) continue;
        unsigned char kb[KEY_BUF];
        size_t kl = key_of(k, kb);
        assert_bk_ok(bk_idem_remove(t, kb, kl));
        m.live[k] = 0;
        m.value[k] = 0;
      }
    assert_bk_ok(bk_idem_advance(t, i));
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(log[i].key, kb);
    assert_int_equal(add_ok(t, kb, kl, opid(1 + i % 4, i), log[i].delta, NULL),
                     BK_IDEM_APPLIED);
    model_apply(&m, log[i].key, log[i].delta);
    if (i % 10 == 9 && i < L) {
      /* A client retry of an op 5 units old (inside the window). */
      const logop *o = &log[i - 5];
      kl = key_of(o->key, kb);
      bk_idem_outcome oc =
          add_ok(t, kb, kl, opid(1 + (i - 5) % 4, i - 5), o->delta, NULL);
      if (filtering) {
        assert_int_equal(oc, BK_IDEM_DUPLICATE);
        dups++;
      } else {
        assert_int_equal(oc, BK_IDEM_APPLIED);
        model_apply(&m, o->key, o->delta);
      }
    }
    if (i + 1 == L) break;
  }
  /* The snapshot, at time L - 1. */
  size_t blen;
  unsigned char *blob = snapshot(t, &blen);
  bk_idem_info at_snap = info_of(t);
  model snap = model_copy(&m);
  assert_int_equal(at_snap.duplicates, dups);
  /* The original carries on with M more ops. */
  for (size_t i = L; i < L + M; i++) {
    assert_bk_ok(bk_idem_advance(t, i));
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(log[i].key, kb);
    assert_int_equal(add_ok(t, kb, kl, opid(1 + i % 4, i), log[i].delta, NULL),
                     BK_IDEM_APPLIED);
    model_apply(&m, log[i].key, log[i].delta);
  }
  expect_table(t, &m, name);

  /* Restore: same keys, values, counts, filter, clock and limits. */
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  bk_idem *r = restore(blob, blen, &al);
  bk_idem_info in = info_of(r);
  assert_int_equal(in.strategy, strategy);
  assert_int_equal(in.keys, at_snap.keys);
  assert_int_equal(in.applied, at_snap.applied);
  assert_int_equal(in.duplicates, at_snap.duplicates);
  assert_int_equal(in.filter_memory, at_snap.filter_memory);
  assert_int_equal(in.window_min, at_snap.window_min);
  assert_true(in.fpp == at_snap.fpp);
  expect_table(r, &snap, name);
  assert_bk_ok(bk_idem_advance(r, L - 1));
  if (strategy == BK_IDEM_FBF || strategy == BK_IDEM_FBF_ADAPTIVE)
    assert_bk_status(bk_idem_advance(r, L - 2), BK_EINVAL);
  {
    unsigned char longkey[41];
    memset(longkey, 'x', sizeof longkey);
    assert_bk_status(bk_idem_add(r, longkey, 41, opid(77, 1), 1, NULL, NULL),
                     BK_EINVAL);
  }
  /* Replay the last K ops the snapshot already holds. */
  model replayed = model_copy(&snap);
  for (size_t i = L - K; i < L; i++) {
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(log[i].key, kb);
    int64_t v;
    bk_idem_outcome oc =
        add_ok(r, kb, kl, opid(1 + i % 4, i), log[i].delta, &v);
    if (filtering) {
      if (oc != BK_IDEM_DUPLICATE || v != snap.value[log[i].key])
        fail_msg("%s: replayed op %zu after restore: %s, value %lld (%lld)",
                 name, i, oc == BK_IDEM_APPLIED ? "APPLIED" : "DUPLICATE",
                 (long long)v, (long long)snap.value[log[i].key]);
    } else {
      /* NONE: the replay counts again. */
      assert_int_equal(oc, BK_IDEM_APPLIED);
      model_apply(&replayed, log[i].key, log[i].delta);
      assert_int_equal(v, replayed.value[log[i].key]);
    }
  }
  int64_t drift = 0;
  for (size_t k = 0; k < n_keys; k++)
    drift += replayed.value[k] - snap.value[k];
  if (!filtering) {
    print_message("NONE: replaying %zu logged ops moved the counters by %lld\n",
                  K, (long long)drift);
    assert_true(memcmp(replayed.value, snap.value, n_keys * sizeof(int64_t)) !=
                0);
  }
  expect_table(r, &replayed, name);
  /* ... then the rest of the log, in time. */
  for (size_t i = L; i < L + M; i++) {
    assert_bk_ok(bk_idem_advance(r, i));
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(log[i].key, kb);
    assert_int_equal(add_ok(r, kb, kl, opid(1 + i % 4, i), log[i].delta, NULL),
                     BK_IDEM_APPLIED);
    model_apply(&replayed, log[i].key, log[i].delta);
  }
  if (filtering) {
    /* Equal to the table that never crashed. */
    expect_table(r, &m, name);
    assert_int_equal(info_of(r).applied, info_of(t).applied);
    assert_int_equal(info_of(r).duplicates, info_of(t).duplicates + K);
  } else {
    expect_table(r, &replayed, name);
  }
  /* It goes on deduplicating new ops... */
  const uint64_t end = L + M;
  const uint32_t k1 = log[L - 1].key;
  unsigned char kb[KEY_BUF];
  size_t kl = key_of(k1, kb);
  int64_t v0 = get_ok(r, kb, kl), v;
  assert_int_equal(add_ok(r, kb, kl, opid(50, 1), 11, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, v0 + 11);
  assert_int_equal(add_ok(r, kb, kl, opid(50, 1), 11, &v),
                   filtering ? BK_IDEM_DUPLICATE : BK_IDEM_APPLIED);
  if (filtering) {
    assert_int_equal(v, v0 + 11);
    model_apply(&replayed, k1, 11);
  } else {
    model_apply(&replayed, k1, 22);
  }
  /* ... and, with the FBF, forgets on the restored clock. */
  if (strategy == BK_IDEM_FBF || strategy == BK_IDEM_FBF_ADAPTIVE) {
    assert_bk_ok(bk_idem_advance(r, end + 16 * T + 1));
    kl = key_of(log[L - 1].key, kb);
    assert_int_equal(
        add_ok(r, kb, kl, opid(1 + (L - 1) % 4, L - 1), log[L - 1].delta, NULL),
        BK_IDEM_APPLIED);
    model_apply(&replayed, log[L - 1].key, log[L - 1].delta);
  }
  /* A second generation: restore of the restored table. */
  size_t blen2;
  unsigned char *blob2 = snapshot(r, &blen2);
  bk_idem *r2 = restore(blob2, blen2, NULL);
  expect_table(r2, &replayed, name);
  assert_int_equal(info_of(r2).applied, info_of(r).applied);
  size_t blen3;
  unsigned char *blob3 = snapshot(r2, &blen3);
  assert_int_equal(blen3, blen2);
  free(blob3);
  bk_idem_destroy(r2);
  free(blob2);
  bk_idem_destroy(r);
  assert_int_equal(st.live, 0);
  (void)drift;
  model_free(&replayed);
  model_free(&snap);
  model_free(&m);
  free(blob);
  free(log);
  bk_idem_destroy(t);
}

static void test_snapshot_replay(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT(ALL_STRATEGIES); i++)
    snapshot_case(ALL_STRATEGIES[i]);
}

/* ---- iterate, delete, get ---------------------------------------------------
 */

static void test_iterate_delete_get(void **state) {
  (void)state;
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_NONE};
  for (size_t si = 0; si < 2; si++) {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    bk_idem_config cfg = generous(strats[si], 100, test_seed(0x17));
    cfg.allocator = &al;
    bk_idem *t = make(&cfg);
    /* 3000 keys: past 64 stripes x 8 buckets x 2, so stripes grow. */
    const size_t n = SLOW_BUILD ? 2000 : 3000;
    model m = model_new(n);
    uint64_t rng = test_seed(0x18);
    for (size_t i = 0; i < n; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      int64_t d = (int64_t)(bk_test_next(&rng) % 1000) - 500;
      assert_int_equal(add_ok(t, kb, kl, opid(1, i), d, NULL), BK_IDEM_APPLIED);
      model_apply(&m, i, d);
      if (i % 3 == 0) {
        assert_int_equal(add_ok(t, kb, kl, opid(2, i), 1, NULL),
                         BK_IDEM_APPLIED);
        model_apply(&m, i, 1);
      }
    }
    expect_table(t, &m, "all keys");
    /* An early stop: a nonzero return ends the walk at once. */
    for (uint64_t stop = 1; stop <= 70; stop += 23) {
      walk w;
      memset(&w, 0, sizeof w);
      w.m = &m;
      w.seen = calloc(n, sizeof(unsigned));
      assert_non_null(w.seen);
      w.stop_after = stop;
      assert_bk_ok(bk_idem_iterate(t, walk_cb, &w));
      assert_int_equal(w.visits, stop);
      assert_int_equal(w.twice + w.unknown + w.wrong + w.dead, 0);
      free(w.seen);
    }
    /* Delete every third key. */
    size_t table_before = info_of(t).table_memory;
    for (size_t i = 0; i < n; i += 3) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      assert_bk_ok(bk_idem_remove(t, kb, kl));
      m.live[i] = 0;
      m.value[i] = 0;
      assert_bk_status(bk_idem_remove(t, kb, kl), BK_ENOTFOUND);
      int64_t v = 12345;
      assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
      assert_int_equal(v, 12345);
    }
    assert_true(info_of(t).table_memory < table_before);
    expect_table(t, &m, "after deletes");
    /* Missing keys, including a prefix and an extension of a stored key. */
    int64_t v;
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(1, kb);
    assert_bk_status(bk_idem_get(t, kb, kl - 1, &v), BK_ENOTFOUND);
    kb[kl] = 0;
    assert_bk_status(bk_idem_get(t, kb, kl + 1, &v), BK_ENOTFOUND);
    assert_bk_status(bk_idem_get(t, "never", 5, &v), BK_ENOTFOUND);
    assert_bk_status(bk_idem_remove(t, "never", 5), BK_ENOTFOUND);
    /* A deleted key comes back at 0. */
    kl = key_of(0, kb);
    assert_int_equal(add_ok(t, kb, kl, opid(3, 0), 4, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 4);
    model_apply(&m, 0, 4);
    /* A retry of an op applied to a since-deleted key: a duplicate with
     * the filter (value 0, and the key is not brought back); NONE applies
     * it. */
    kl = key_of(3, kb);
    bk_idem_outcome oc = add_ok(t, kb, kl, opid(1, 3), 9, &v);
    if (strats[si] == BK_IDEM_NONE) {
      assert_int_equal(oc, BK_IDEM_APPLIED);
      assert_int_equal(v, 9);
      model_apply(&m, 3, 9);
    } else {
      assert_int_equal(oc, BK_IDEM_DUPLICATE);
      assert_int_equal(v, 0);
      assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
    }
    expect_table(t, &m, "after re-adds");
    /* Keys at the length limit, and keys of one byte. */
    unsigned char big[BK_IDEM_KEY_MAX];
    memset(big, 0xAB, sizeof big);
    assert_int_equal(add_ok(t, big, sizeof big, opid(4, 1), 1, &v),
                     BK_IDEM_APPLIED);
    assert_int_equal(get_ok(t, big, sizeof big), 1);
    assert_bk_status(bk_idem_get(t, big, sizeof big - 1, &v), BK_ENOTFOUND);
    assert_int_equal(add_ok(t, "\0", 1, opid(4, 2), 2, &v), BK_IDEM_APPLIED);
    assert_int_equal(add_ok(t, "\1", 1, opid(4, 3), 3, &v), BK_IDEM_APPLIED);
    assert_int_equal(get_ok(t, "\0", 1), 2);
    assert_int_equal(get_ok(t, "\1", 1), 3);
    assert_bk_ok(bk_idem_remove(t, big, sizeof big));
    assert_bk_ok(bk_idem_remove(t, "\0", 1));
    assert_bk_ok(bk_idem_remove(t, "\1", 1));
    expect_table(t, &m, "final");
    /* Delete everything: iterate visits nothing. */
    for (size_t i = 0; i < n; i++) {
      if (!m.live[i]) continue;
      kl = key_of(i, kb);
      assert_bk_ok(bk_idem_remove(t, kb, kl));
      m.live[i] = 0;
    }
    expect_table(t, &m, "empty");
    bk_idem_destroy(t);
    assert_int_equal(st.live, 0);
    model_free(&m);
  }
}

/* ---- bad arguments
 * -----------------------------------------------------------
 */

static void expect_create_einval(const bk_idem_config *cfg, const char *what) {
  bk_idem *t = SENTINEL;
  bk_status s = bk_idem_create(&t, cfg);
  if (s != BK_EINVAL) {
    if (s == BK_OK) bk_idem_destroy(t);
    fail_msg("create with %s: %s, expected BK_EINVAL", what, bk_status_name(s));
  }
  assert_ptr_equal(t, SENTINEL);
}

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
    bk_idem *t = make(&cfg);
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
  bk_idem *t = SENTINEL;
  assert_bk_status(bk_idem_create(NULL, &ok), BK_EINVAL);
  assert_bk_status(bk_idem_create(&t, NULL), BK_EINVAL);
  assert_ptr_equal(t, SENTINEL);
  bk_allocator half = {.alloc = NULL, .free = NULL};
#define BAD(desc, edit)             \
  do {                              \
    c = ok;                         \
    edit;                           \
    expect_create_einval(&c, desc); \
  } while (0)
#define GOOD(desc, edit)        \
  do {                          \
    c = ok;                     \
    edit;                       \
    expect_create_ok(&c, desc); \
  } while (0)
  BAD("strategy 4", c.strategy = (bk_idem_strategy)4);
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
  bk_idem *t = make(&cfg);
  bk_idem_config dcfg = generous(BK_IDEM_FBF, 1000, 2);
  bk_idem *d = make(&dcfg); /* default max_key_len */
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
  bk_idem_info in = info_of(t);
  assert_int_equal(in.keys + in.applied + in.duplicates, 0);
  in = info_of(d);
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

/* int64 overflow: BK_ERANGE, the table unchanged and the op not recorded,
 * so the same op id with a valid delta applies afterwards. */
static void test_overflow(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    bk_idem_config cfg = generous(strat, 1000, test_seed(0x0F));
    bk_idem *t = make(&cfg);
    int64_t v = 0;
    bk_idem_outcome oc;
    assert_int_equal(ADD(t, "hi", 1, 1, INT64_MAX - 5, &v), BK_IDEM_APPLIED);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 2), 6, &v, &oc),
                     BK_ERANGE);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 2), INT64_MAX, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(GET(t, "hi"), INT64_MAX - 5);
    bk_idem_info in = info_of(t);
    assert_int_equal(in.applied, 1);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 1);
    /* The refused op id was not recorded. */
    assert_int_equal(ADD(t, "hi", 1, 2, 5, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX);
    assert_bk_status(bk_idem_add(t, "hi", 2, opid(1, 3), 1, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(ADD(t, "hi", 1, 3, -1, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX - 1);

    /* The negative end. */
    assert_int_equal(ADD(t, "lo", 1, 4, INT64_MIN, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MIN);
    assert_bk_status(bk_idem_add(t, "lo", 2, opid(1, 5), -1, &v, &oc),
                     BK_ERANGE);
    assert_bk_status(bk_idem_add(t, "lo", 2, opid(1, 5), INT64_MIN, &v, &oc),
                     BK_ERANGE);
    assert_int_equal(GET(t, "lo"), INT64_MIN);
    assert_int_equal(ADD(t, "lo", 1, 5, 0, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MIN);
    assert_int_equal(ADD(t, "lo", 1, 6, INT64_MAX, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, -1);
    in = info_of(t);
    assert_int_equal(in.applied, 6);
    assert_int_equal(in.duplicates, 0);
    assert_int_equal(in.keys, 2);
    bk_idem_destroy(t);
  }
}

/* ---- hostile snapshots
 * --------------------------------------------------------
 */

/* A small table whose blob is a few hundred bytes: explicit m and k. */
static bk_idem *small_table(bk_idem_strategy strat, size_t n_keys,
                            uint64_t seed) {
  bk_idem_config cfg = {.strategy = strat,
                        .retry_timeout = 30,
                        .m_bits = 256,
                        .k = 3,
                        .max_key_len = 40,
                        .seed = seed};
  bk_idem *t = make(&cfg);
  for (size_t i = 0; i < n_keys; i++) {
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(i, kb);
    assert_bk_ok(bk_idem_advance(t, i));
    (void)add_ok(t, kb, kl, opid(1, i), (int64_t)i * 1000 - 5000, NULL);
    (void)add_ok(t, kb, kl, opid(1, i), (int64_t)i * 1000 - 5000, NULL);
  }
  return t;
}

/* Load p[0, len) through the harness (no leak, bounded allocation, an
 * accepted blob sound) and require `want`. */
static void expect_status(const unsigned char *p, size_t len, bk_status want,
                          const char *what) {
  bk_status s = try_load(p, len, NULL);
  if (s != want)
    fail_msg("%s: %s, expected %s", what, bk_status_name(s),
             bk_status_name(want));
}

/* The pieces of a valid blob. */
typedef struct parts {
  unsigned char hdr[IDEM_HLEN];
  const unsigned char *filter;
  size_t flen;
  const unsigned char *recs;
  size_t rlen;
  uint64_t keys;
} parts;

static parts split(const unsigned char *p, size_t len) {
  parts s;
  memcpy(s.hdr, p, IDEM_HLEN);
  s.flen = (size_t)bk__load_le64(p + OFF_FSIZE);
  s.filter = p + IDEM_HLEN;
  s.recs = p + IDEM_HLEN + s.flen;
  s.rlen = len - IDEM_HLEN - s.flen - 8;
  s.keys = bk__load_le64(p + OFF_KEYS);
  return s;
}

/* A blob from parts, written independently of the library: the prefix by
 * hand, the filter and key records as given, F and the key count set, the
 * checksum recomputed. Callers may edit and reseal. */
static unsigned char *build(const unsigned char *hdr, const void *filter,
                            size_t flen, const void *recs, size_t rlen,
                            uint64_t keys, size_t *len) {
  *len = IDEM_HLEN + flen + rlen + 8;
  unsigned char *p = malloc(*len);
  assert_non_null(p);
  memcpy(p, hdr, IDEM_HLEN);
  memcpy(p, "BKIT", 4);
  bk__store_le16(p + OFF_VERSION, 1);
  bk__store_le16(p + OFF_TYPE, 5);
  bk__store_le32(p + OFF_HLEN, IDEM_HLEN);
  bk__store_le32(p + OFF_RES32, 0);
  bk__store_le64(p + OFF_PLEN, flen + rlen);
  bk__store_le64(p + OFF_KEYS, keys);
  bk__store_le64(p + OFF_FSIZE, flen);
  if (flen) memcpy(p + IDEM_HLEN, filter, flen);
  if (rlen) memcpy(p + IDEM_HLEN + flen, recs, rlen);
  bk_test_reseal(p, *len);
  return p;
}

static size_t put_rec(unsigned char *dst, const void *key, uint32_t klen,
                      int64_t value) {
  bk__store_le32(dst, klen);
  if (klen) memcpy(dst + 4, key, klen);
  bk__store_le64(dst + 4 + klen, (uint64_t)value);
  return 12 + (size_t)klen;
}

/* Every generic hostile-input case (tests/codec_harness.c) on a small
 * table of each strategy, a few keys each. The tables' hash seeds are fixed
 * (BK_TEST_SEED varies only the harness's random cases): the harness wants
 * the original blob to re-serialize byte for byte, which an idem blob does
 * only when no two keys share a bucket (a load re-inserts a bucket's keys
 * in reverse order). */
static void test_deserialize_hostile(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem *t = small_table(ALL_STRATEGIES[si], 4, 0xB0 + si);
    bk_test_codec_hostile(&bk_test_codec_idem, t, test_seed(0xBB + si));
    bk_idem_destroy(t);
  }
}

static void test_deserialize_crafted(void **state) {
  (void)state;
  bk_idem *t = small_table(BK_IDEM_FBF, 10, test_seed(0xCA));
  bk_idem *tr = small_table(BK_IDEM_RBF, 3, test_seed(0xCB));
  bk_idem *tn = small_table(BK_IDEM_NONE, 3, test_seed(0xCC));
  size_t len, rlen_blob, nlen;
  unsigned char *blob = snapshot(t, &len);
  unsigned char *rblob = snapshot(tr, &rlen_blob);
  unsigned char *nblob = snapshot(tn, &nlen);
  parts P = split(blob, len), R = split(rblob, rlen_blob),
        N = split(nblob, nlen);
  assert_int_equal(P.keys, 10);
  assert_int_equal(N.flen, 0);
  size_t l;
  unsigned char *p;

  /* The independent writer reproduces the library's blob. */
  p = build(P.hdr, P.filter, P.flen, P.recs, P.rlen, P.keys, &l);
  assert_int_equal(l, len);
  assert_memory_equal(p, blob, len);
  free(p);

  /* The key records, parsed; rebuilt in another order they still load. */
  const unsigned char *rec[16];
  size_t rec_len[16], nrec = 0;
  for (size_t pos = 0; pos < P.rlen; nrec++) {
    assert_true(nrec < 16);
    rec[nrec] = P.recs + pos;
    rec_len[nrec] = 12 + bk__load_le32(P.recs + pos);
    pos += rec_len[nrec];
  }
  assert_int_equal(nrec, 10);
  unsigned char recs[4096];
  size_t rl = 0;
  for (size_t i = nrec; i-- > 0;) {
    memcpy(recs + rl, rec[i], rec_len[i]);
    rl += rec_len[i];
  }
  p = build(P.hdr, P.filter, P.flen, recs, rl, nrec, &l);
  expect_status(p, l, BK_OK, "records reversed");
  free(p);

#define CRAFT(what, want, recs_, rl_, keys_, edit)                   \
  do {                                                               \
    p = build(P.hdr, P.filter, P.flen, (recs_), (rl_), (keys_), &l); \
    edit;                                                            \
    bk_test_reseal(p, l);                                            \
    expect_status(p, l, (want), (what));                             \
    free(p);                                                         \
  } while (0)
  /* One field of `blob` set (resealed). */
#define EDIT(what, want, off, width, value)                                 \
  bk_test_codec_expect_edit(&bk_test_codec_idem, blob, len, (off), (width), \
                            (value), (want), (what))
  unsigned char *two = malloc(len);
  assert_non_null(two);

  /* A key twice. */
  memcpy(recs, P.recs, P.rlen);
  rl = P.rlen;
  memcpy(recs + rl, rec[4], rec_len[4]);
  CRAFT("a key twice", BK_ECORRUPT, recs, rl + rec_len[4], nrec + 1, (void)0);
  /* The same key bytes with another value. */
  memcpy(recs + rl, rec[4], rec_len[4]);
  recs[rl + rec_len[4] - 1] ^= 0x55;
  CRAFT("a key twice, other value", BK_ECORRUPT, recs, rl + rec_len[4],
        nrec + 1, (void)0);
  /* A zero-length key. */
  rl = P.rlen + put_rec(recs + P.rlen, "", 0, 5);
  CRAFT("a zero-length key", BK_ECORRUPT, recs, rl, nrec + 1, (void)0);
  /* A key longer than max_key_len (40) and than BK_IDEM_KEY_MAX. */
  {
    unsigned char kbig[64];
    memset(kbig, 'z', sizeof kbig);
    rl = P.rlen + put_rec(recs + P.rlen, kbig, 41, 5);
    CRAFT("a key over max_key_len", BK_ECORRUPT, recs, rl, nrec + 1, (void)0);
    rl = P.rlen + put_rec(recs + P.rlen, kbig, 40, 5);
    CRAFT("a key at max_key_len", BK_OK, recs, rl, nrec + 1, (void)0);
  }
  /* Key count mismatches. */
  CRAFT("one key more than stored", BK_ECORRUPT, P.recs, P.rlen, nrec + 1,
        (void)0);
  CRAFT("one key fewer than stored", BK_ECORRUPT, P.recs, P.rlen, nrec - 1,
        (void)0);
  CRAFT("no keys counted", BK_ECORRUPT, P.recs, P.rlen, 0, (void)0);
  CRAFT("2^63 keys", BK_ECORRUPT, P.recs, P.rlen, (uint64_t)1 << 63, (void)0);
  CRAFT("UINT64_MAX keys", BK_ECORRUPT, P.recs, P.rlen, UINT64_MAX, (void)0);
  /* Trailing bytes after the last key. */
  memcpy(recs, P.recs, P.rlen);
  memset(recs + P.rlen, 0, 13);
  CRAFT("13 trailing bytes", BK_ECORRUPT, recs, P.rlen + 13, nrec, (void)0);
  CRAFT("3 trailing bytes", BK_ECORRUPT, recs, P.rlen + 3, nrec, (void)0);
  /* The last key's length running past the end. */
  memcpy(recs, P.recs, P.rlen);
  bk__store_le32(recs + (rec[9] - P.recs), 39);
  CRAFT("a key running past the end", BK_ECORRUPT, recs, P.rlen, nrec, (void)0);
  bk__store_le32(recs + (rec[9] - P.recs), UINT32_MAX);
  CRAFT("a key of length 2^32-1", BK_ECORRUPT, recs, P.rlen, nrec, (void)0);
  /* Records cut short (no value). */
  CRAFT("the last value cut", BK_ECORRUPT, P.recs, P.rlen - 8, nrec, (void)0);

  /* Strategy and filter disagreeing. */
  EDIT("NONE with a filter blob", BK_ECORRUPT, OFF_STRATEGY, 1, BK_IDEM_NONE);
  p = build(P.hdr, NULL, 0, P.recs, P.rlen, nrec, &l);
  bk_test_reseal(p, l);
  expect_status(p, l, BK_ECORRUPT, "FBF without a filter blob");
  p[OFF_STRATEGY] = BK_IDEM_RBF;
  bk_test_reseal(p, l);
  expect_status(p, l, BK_ECORRUPT, "RBF without a filter blob");
  p[OFF_STRATEGY] = BK_IDEM_NONE;
  bk_test_reseal(p, l);
  expect_status(p, l, BK_OK, "NONE without a filter blob");
  free(p);
  p = build(P.hdr, R.filter, R.flen, P.recs, P.rlen, nrec, &l);
  expect_status(p, l, BK_ECORRUPT, "FBF with an RBF blob");
  p[OFF_STRATEGY] = BK_IDEM_FBF_ADAPTIVE;
  bk_test_reseal(p, l);
  expect_status(p, l, BK_ECORRUPT, "FBF_ADAPTIVE with an RBF blob");
  p[OFF_STRATEGY] = BK_IDEM_RBF;
  bk_test_reseal(p, l);
  expect_status(p, l, BK_OK, "RBF with an RBF blob");
  free(p);
  p = build(N.hdr, P.filter, P.flen, N.recs, N.rlen, N.keys, &l);
  expect_status(p, l, BK_ECORRUPT, "NONE header with an FBF blob");
  p[OFF_STRATEGY] = BK_IDEM_RBF;
  bk_test_reseal(p, l);
  expect_status(p, l, BK_ECORRUPT, "RBF with an FBF blob");
  free(p);
  /* The filter length pointing elsewhere. */
  EDIT("F one short", BK_ECORRUPT, OFF_FSIZE, 8, P.flen - 1);
  EDIT("F one long", BK_ECORRUPT, OFF_FSIZE, 8, P.flen + 1);
  EDIT("F past the payload", BK_ECORRUPT, OFF_FSIZE, 8, P.flen + P.rlen + 1);
  EDIT("F = UINT64_MAX", BK_ECORRUPT, OFF_FSIZE, 8, UINT64_MAX);
  /* The embedded filter itself damaged. */
  EDIT("a bit of the filter blob flipped", BK_ECORRUPT, IDEM_HLEN + P.flen / 2,
       1, blob[IDEM_HLEN + P.flen / 2] ^ 4u);
  CRAFT("filter k = 0 (its checksum fixed)", BK_ECORRUPT, P.recs, P.rlen, nrec,
        (p[IDEM_HLEN + FBF_OFF_K] = 0, bk_test_reseal(p + IDEM_HLEN, P.flen)));
  CRAFT("filter version 2 (its checksum fixed)", BK_ECORRUPT, P.recs, P.rlen,
        nrec,
        (bk__store_le16(p + IDEM_HLEN + OFF_VERSION, 2),
         bk_test_reseal(p + IDEM_HLEN, P.flen)));

  /* Header fields. */
  EDIT("strategy 4", BK_ECORRUPT, OFF_STRATEGY, 1, 4);
  EDIT("strategy 255", BK_ECORRUPT, OFF_STRATEGY, 1, 255);
  EDIT("reserved u16 set", BK_ECORRUPT, OFF_RES16 + 1, 1, 1);
  EDIT("hash 0", BK_ECORRUPT, OFF_ALG, 1, 0);
  EDIT("hash 3", BK_ECORRUPT, OFF_ALG, 1, 3);
  /* Two fields: murmur, then a seed over 32 bits. */
  memcpy(two, blob, len);
  two[OFF_ALG] = BK_HASH_MURMUR3;
  bk_test_codec_expect_edit(&bk_test_codec_idem, two, len, OFF_SEED, 8,
                            (uint64_t)1 << 32, BK_ECORRUPT,
                            "murmur, seed over 32 bits");
  EDIT("max_key_len 0", BK_ECORRUPT, OFF_MAXKEY, 4, 0);
  EDIT("max_key_len over BK_IDEM_KEY_MAX", BK_ECORRUPT, OFF_MAXKEY, 4,
       BK_IDEM_KEY_MAX + 1);
  EDIT("max_key_len below a stored key", BK_ECORRUPT, OFF_MAXKEY, 4, 8);
  EDIT("version 2", BK_EVERSION, OFF_VERSION, 2, 2);
  EDIT("type 4 (an FBF)", BK_ECORRUPT, OFF_TYPE, 2, 4);
  EDIT("header length 80", BK_ECORRUPT, OFF_HLEN, 4, 80);
  EDIT("reserved u32 set", BK_ECORRUPT, OFF_RES32, 4, 1);
  EDIT("payload length + 1", BK_ECORRUPT, OFF_PLEN, 8, P.flen + P.rlen + 1);
  /* Counts of applied and duplicate updates are free-form. */
  memcpy(two, blob, len);
  bk__store_le64(two + OFF_APPLIED, UINT64_MAX);
  bk_test_codec_expect_edit(&bk_test_codec_idem, two, len, OFF_DUPS, 8,
                            UINT64_MAX, BK_OK, "huge applied/duplicates");
#undef EDIT
#undef CRAFT

  /* A huge key count is refused before any allocation. */
  {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    p = build(P.hdr, P.filter, P.flen, P.recs, P.rlen, (uint64_t)1 << 62, &l);
    bk_idem *r = SENTINEL;
    assert_bk_status(bk_idem_deserialize(p, l, &al, &r), BK_ECORRUPT);
    assert_ptr_equal(r, SENTINEL);
    assert_int_equal(st.calls, 0);
    free(p);
  }

  /* The originals are unchanged. */
  size_t l2;
  unsigned char *again = snapshot(t, &l2);
  assert_int_equal(l2, len);
  assert_memory_equal(again, blob, len);
  free(again);
  free(two);
  free(blob);
  free(rblob);
  free(nblob);
  bk_idem_destroy(t);
  bk_idem_destroy(tr);
  bk_idem_destroy(tn);
}

/* ---- allocation failures
 * ------------------------------------------------------
 */

static void test_oom_create(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    for (int sticky = 0; sticky <= 1; sticky++) {
      unsigned failures = 0;
      for (size_t fail_at = 1;; fail_at++) {
        bk_test_alloc st;
        bk_allocator al = bk_test_allocator(&st, fail_at);
        st.fail_sticky = sticky;
        bk_idem_config cfg = generous(ALL_STRATEGIES[si], 100, 3);
        cfg.ops_per_period = 1000;
        cfg.expected_keys = 5000;
        cfg.allocator = &al;
        bk_idem *t = SENTINEL;
        bk_status s = bk_idem_create(&t, &cfg);
        if (s == BK_OK) {
          st.fail_at = 0;
          assert_int_equal(ADD(t, "a", 1, 1, 1, NULL), BK_IDEM_APPLIED);
          bk_idem_destroy(t);
          assert_int_equal(st.live, 0);
          break;
        }
        if (s != BK_ENOMEM)
          fail_msg("%s: allocation %zu failing: %s",
                   strat_name(ALL_STRATEGIES[si]), fail_at, bk_status_name(s));
        assert_ptr_equal(t, SENTINEL);
        if (st.live != 0)
          fail_msg("%s: allocation %zu failing: %zu blocks leaked",
                   strat_name(ALL_STRATEGIES[si]), fail_at, st.live);
        failures++;
        assert_true(fail_at < 1000);
      }
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
    bk_idem_config cfg = generous(strat, 100, test_seed(0x0A));
    cfg.allocator = &al;
    bk_idem *t = make(&cfg);
    const size_t n = SLOW_BUILD ? 1500 : 2500, n2 = 1500;
    model m = model_new(n + n2);
    for (size_t i = 0; i < n; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      const int64_t d = (int64_t)i + 1;
      int64_t v = -1;
      bk_idem_outcome oc;
      st.fail_at = st.calls + 1;
      bk_status s = bk_idem_add(t, kb, kl, opid(5, i), d, &v, &oc);
      st.fail_at = 0;
      if (s != BK_ENOMEM)
        fail_msg("%s: add of new key %zu with its allocation failing: %s",
                 strat_name(strat), i, bk_status_name(s));
      assert_bk_status(bk_idem_get(t, kb, kl, &v), BK_ENOTFOUND);
      bk_idem_info in = info_of(t);
      assert_int_equal(in.keys, i);
      assert_int_equal(in.applied, filtering ? i : 2 * i);
      assert_int_equal(in.duplicates, filtering ? i : 0);
      /* Recovered (except a bucket growth this add may attempt). */
      st.fail_at = st.calls + 2;
      oc = add_ok(t, kb, kl, opid(5, i), d, &v);
      st.fail_at = 0;
      assert_int_equal(oc, BK_IDEM_APPLIED);
      assert_int_equal(v, d);
      model_apply(&m, i, d);
      if (filtering)
        assert_int_equal(add_ok(t, kb, kl, opid(5, i), d, &v),
                         BK_IDEM_DUPLICATE);
      else
        assert_bk_ok(bk_idem_add(t, kb, kl, opid(6, i), 0, &v, NULL));
    }
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

static void test_oom_deserialize(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    bk_idem_config cfg = generous(strat, 100, test_seed(0x0D));
    cfg.ops_per_period = 1000;
    bk_idem *t = make(&cfg);
    model m = model_new(150);
    for (size_t i = 0; i < 150; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      (void)add_ok(t, kb, kl, opid(1, i), (int64_t)i - 70, NULL);
      model_apply(&m, i, (int64_t)i - 70);
    }
    size_t len;
    unsigned char *blob = snapshot(t, &len);
    for (int sticky = 0; sticky <= 1; sticky++) {
      unsigned failures = 0;
      for (size_t fail_at = 1;; fail_at++) {
        bk_test_alloc st;
        bk_allocator al = bk_test_allocator(&st, fail_at);
        st.fail_sticky = sticky;
        bk_idem *r = SENTINEL;
        bk_status s = bk_idem_deserialize(blob, len, &al, &r);
        if (s == BK_OK) {
          expect_table(r, &m, strat_name(strat));
          bk_idem_destroy(r);
          assert_int_equal(st.live, 0);
          break;
        }
        if (s != BK_ENOMEM)
          fail_msg("%s: allocation %zu failing: %s", strat_name(strat), fail_at,
                   bk_status_name(s));
        assert_ptr_equal(r, SENTINEL);
        if (st.live != 0)
          fail_msg("%s: allocation %zu failing: %zu blocks leaked",
                   strat_name(strat), fail_at, st.live);
        failures++;
        assert_true(fail_at < 2000);
      }
      /* Table, stripes, filter (if any) and every key. */
      assert_true(failures >= 1 + 64 + 150);
    }
    free(blob);
    model_free(&m);
    bk_idem_destroy(t);
  }
}

/* ---- regressions of bugs this file found
 * ---------------------------------------
 *
 * Found in src/fbf/idem.c at 2e408c3 and fixed in 893fc71.
 *
 * bk_idem_add checked for int64 overflow of current + delta BEFORE asking
 * the filter whether the op had been applied: a retry of an applied op
 * whose delta no longer fits (the original took the counter to the limit)
 * was answered BK_ERANGE ("nothing is applied or recorded") instead of
 * DUPLICATE with the current value, although the op WAS applied. */
static void test_overflowing_retry_is_duplicate(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(FILTERING); si++) {
    bk_idem_strategy strat = FILTERING[si];
    bk_idem_config cfg = generous(strat, 1000, test_seed(0xB1));
    bk_idem *t = make(&cfg);
    int64_t v = 0;
    bk_idem_outcome oc = (bk_idem_outcome)0;
    assert_int_equal(ADD(t, "k", 1, 1, INT64_MAX - 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "k", 1, 2, 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, INT64_MAX);
    /* The client's retry of op (1, 2). */
    bk_status s = bk_idem_add(t, "k", 1, opid(1, 2), 10, &v, &oc);
    bool hi_ok = s == BK_OK && oc == BK_IDEM_DUPLICATE && v == INT64_MAX;
    /* Same at the negative end. */
    assert_int_equal(ADD(t, "n", 1, 3, INT64_MIN + 10, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "n", 1, 4, -10, &v), BK_IDEM_APPLIED);
    bk_status s2 = bk_idem_add(t, "n", 1, opid(1, 4), -10, &v, &oc);
    bool lo_ok = s2 == BK_OK && oc == BK_IDEM_DUPLICATE && v == INT64_MIN;
    bk_idem_destroy(t);
    if (!hi_ok || !lo_ok)
      fail_msg(
          "%s: retry of an applied op near INT64_MAX: %s, near "
          "INT64_MIN: %s (expected BK_OK and DUPLICATE with the "
          "current value)",
          strat_name(strat), bk_status_name(s), bk_status_name(s2));
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
    expect_create_einval(&c, what[i]);
  }
  for (size_t i = 0; i < 2; i++) {
    bk_idem *t = SENTINEL;
    bk_status s = bk_idem_create(&t, cases[i]);
    if (s == BK_OK) {
      /* Show the consequence: a retry is applied again. */
      int64_t v = 0;
      (void)ADD(t, "k", 1, 1, 1, &v);
      bk_idem_outcome oc = add_ok(t, "k", 1, opid(1, 1), 1, &v);
      bk_idem_info in = info_of(t);
      bk_idem_destroy(t);
      fail_msg("RBF with %s: created (filter of %zu bytes); a retry was %s",
               what[i], in.filter_memory,
               oc == BK_IDEM_APPLIED ? "APPLIED again" : "a duplicate");
    }
    assert_int_equal(s, BK_EINVAL);
    assert_ptr_equal(t, SENTINEL);
  }
}

/* deserialize did not check that the embedded FBF matches the strategy
 * byte: a blob saying FBF with an adaptive FBF inside (or FBF_ADAPTIVE with
 * a fixed one) was accepted, and the restored table reported a strategy it
 * did not follow. */
static void test_deserialize_strategy_filter_mismatch(void **state) {
  (void)state;
  bk_idem *tf = small_table(BK_IDEM_FBF, 3, 1);
  bk_idem *ta = small_table(BK_IDEM_FBF_ADAPTIVE, 3, 1);
  size_t lf, la, l;
  unsigned char *bf = snapshot(tf, &lf), *ba = snapshot(ta, &la);
  parts F = split(bf, lf), A = split(ba, la);
  assert_int_equal(F.filter[FBF_OFF_ADAPTIVE], 0);
  assert_int_equal(A.filter[FBF_OFF_ADAPTIVE], 1);
  bk_status got[2];
  for (int i = 0; i < 2; i++) {
    const parts *h = i == 0 ? &F : &A, *flt = i == 0 ? &A : &F;
    unsigned char *p =
        build(h->hdr, flt->filter, flt->flen, h->recs, h->rlen, h->keys, &l);
    bk_idem *r = NULL;
    got[i] = try_load(p, l, &r);
    if (got[i] == BK_OK) {
      bk_idem_info in = info_of(r);
      assert_int_equal(in.strategy,
                       i == 0 ? BK_IDEM_FBF : BK_IDEM_FBF_ADAPTIVE);
      bk_idem_destroy(r);
    }
    free(p);
  }
  free(bf);
  free(ba);
  bk_idem_destroy(tf);
  bk_idem_destroy(ta);
  if (got[0] != BK_ECORRUPT || got[1] != BK_ECORRUPT)
    fail_msg(
        "strategy FBF with an adaptive FBF: %s; strategy FBF_ADAPTIVE "
        "with a fixed FBF: %s (expected BK_ECORRUPT)",
        bk_status_name(got[0]), bk_status_name(got[1]));
}

/* Advancing an FBF_ADAPTIVE table over a long idle gap is cheap, as for
 * the fixed FBF (a table restored from an old snapshot, or a first advance
 * with an absolute clock: start_time defaults to 0). Before 75d6701 every
 * adaptation tick and refresh ran one by one, O(gap / interval) under the
 * FBF's mutex: ~0.6 s for 2e7 units at T = 30, hours for epoch
 * milliseconds, forever for UINT64_MAX / 2. */
static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_adaptive_advance_long_gap(void **state) {
  (void)state;
#if defined(__OPTIMIZE__)
  const uint64_t gap = 20000000;
#else
  const uint64_t gap = 4000000;
#endif
  double took[2];
  const bk_idem_strategy strats[] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE};
  for (size_t i = 0; i < 2; i++) {
    bk_idem_config cfg = {.strategy = strats[i],
                          .retry_timeout = 30,
                          .m_bits = 4096,
                          .k = 3,
                          .adapt_interval = 1,
                          .period_step = 1};
    bk_idem *t = make(&cfg);
    int64_t v;
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    double a = seconds_now();
    assert_bk_ok(bk_idem_advance(t, gap));
    took[i] = seconds_now() - a;
    /* Forgotten after the gap, either way; remembered again. */
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_DUPLICATE);
    /* Even to the far end of time. */
    a = seconds_now();
    assert_bk_ok(bk_idem_advance(t, UINT64_MAX / 2));
    took[i] += seconds_now() - a;
    assert_int_equal(ADD(t, "k", 1, 1, 1, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 3);
    bk_idem_destroy(t);
  }
  print_message(
      "advance over %llu idle units then to 2^63: FBF %.6f s, "
      "FBF_ADAPTIVE %.6f s\n",
      (unsigned long long)gap, took[0], took[1]);
  /* Generous for sanitizers; the linear version took 0.25-0.6 s. */
  assert_true(took[0] < 0.1);
  if (took[1] >= 0.1)
    fail_msg(
        "FBF_ADAPTIVE: advancing over %llu idle units took %.3f s "
        "(FBF: %.6f s)",
        (unsigned long long)gap, took[1], took[0]);
}

int main(void) {
  test_seed(0); /* prints the seed banner once */
  const char *filter = getenv("BK_TEST_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_basics),
      cmocka_unit_test(test_retry_storm),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_rbf_forgets_at_recycle),
      cmocka_unit_test(test_concurrent_same_stream),
      cmocka_unit_test(test_concurrent_disjoint_one_key),
      cmocka_unit_test(test_concurrent_readers),
      cmocka_unit_test(test_snapshot_replay),
      cmocka_unit_test(test_iterate_delete_get),
      cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_config_edges),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_overflow),
      cmocka_unit_test(test_deserialize_hostile),
      cmocka_unit_test(test_deserialize_crafted),
      cmocka_unit_test(test_oom_create),
      cmocka_unit_test(test_oom_add),
      cmocka_unit_test(test_oom_deserialize),
      cmocka_unit_test(test_overflowing_retry_is_duplicate),
      cmocka_unit_test(test_rbf_size_overflow),
      cmocka_unit_test(test_deserialize_strategy_filter_mismatch),
      cmocka_unit_test(test_adaptive_advance_long_gap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
