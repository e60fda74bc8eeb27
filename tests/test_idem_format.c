/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_idem's snapshots (src/fbf/idem.c): snapshot, restore and
 * replay (a write-ahead log's last K ops change nothing except under
 * NONE), restored keys/values/clock/limits, hostile snapshots (the codec
 * harness on a table of each strategy, crafted blobs field by field and
 * record by record), a strategy that does not match the embedded filter,
 * and allocation failures while loading.
 *
 * Shared helpers: tests/idem_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"
#include "core/internal.h"
#include "fbf/idem_internal.h"

#include "idem_helpers.h"

static bk_status try_load(const unsigned char *buf, size_t len, bk_idem **out) {
  return bk_test_codec_load(&bk_test_codec_idem, buf, len, (void **)out);
}

static bk_idem *restore(const unsigned char *buf, size_t len,
                        const bk_allocator *al) {
  return bk_test_restore(&bk_test_codec_idem, buf, len, al);
}

static model model_copy(const model *src) {
  model m = model_new(src->n);
  memcpy(m.value, src->value, src->n * sizeof(int64_t));
  memcpy(m.live, src->live, src->n);
  return m;
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
  bk_idem_config cfg = generous(strategy, T, idem_test_seed(0x5A));
  cfg.max_key_len = 40;
  if (strategy == BK_IDEM_RBF || strategy == BK_IDEM_NONE) {
    cfg.hash_alg = BK_HASH_MURMUR3;
    cfg.seed = (uint32_t)cfg.seed;
  }
  bk_idem *t = idem_make(&cfg);
  /* The log: op i at time i. Keys from tmp_from on are used only in the
   * first half and deleted at its end. */
  typedef struct logop {
    uint32_t key;
    int64_t delta;
  } logop;
  logop *log = malloc((L + M) * sizeof *log);
  assert_non_null(log);
  uint64_t rng = idem_test_seed(0x106);
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
  unsigned char *blob = idem_blob_of(t, &blen);
  bk_idem_info at_snap = idem_info_of(t);
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
  bk_idem_info in = idem_info_of(r);
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
    assert_int_equal(idem_info_of(r).applied, idem_info_of(t).applied);
    assert_int_equal(idem_info_of(r).duplicates,
                     idem_info_of(t).duplicates + K);
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
  unsigned char *blob2 = idem_blob_of(r, &blen2);
  bk_idem *r2 = restore(blob2, blen2, NULL);
  expect_table(r2, &replayed, name);
  assert_int_equal(idem_info_of(r2).applied, idem_info_of(r).applied);
  size_t blen3;
  unsigned char *blob3 = idem_blob_of(r2, &blen3);
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
  if (strat == BK_IDEM_APBF) { /* sized by ops and fpp only */
    cfg.m_bits = 0;
    cfg.k = 0;
    cfg.ops_per_period = 4;
  }
  bk_idem *t = idem_make(&cfg);
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

/* p with its strategy byte set to `strategy` (and resealed) loads with
 * `want`: a header that disagrees with the filter blob it carries. */
static void expect_strategy(unsigned char *p, size_t len, uint8_t strategy,
                            bk_status want, const char *what) {
  p[OFF_STRATEGY] = strategy;
  bk_test_reseal(p, len);
  expect_status(p, len, want, what);
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
  bk__store_le16(p + OFF_VERSION, 2);
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
    bk_test_codec_hostile(&bk_test_codec_idem, t, idem_test_seed(0xBB + si));
    bk_idem_destroy(t);
  }
}

static void test_deserialize_crafted(void **state) {
  (void)state;
  bk_idem *t = small_table(BK_IDEM_FBF, 10, idem_test_seed(0xCA));
  bk_idem *tr = small_table(BK_IDEM_RBF, 3, idem_test_seed(0xCB));
  bk_idem *tn = small_table(BK_IDEM_NONE, 3, idem_test_seed(0xCC));
  size_t len, rlen_blob, nlen;
  unsigned char *blob = idem_blob_of(t, &len);
  unsigned char *rblob = idem_blob_of(tr, &rlen_blob);
  unsigned char *nblob = idem_blob_of(tn, &nlen);
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
  expect_strategy(p, l, BK_IDEM_RBF, BK_ECORRUPT, "RBF without a filter blob");
  expect_strategy(p, l, BK_IDEM_WINDOW, BK_ECORRUPT,
                  "WINDOW without a window size");
  /* NONE has no timeout; with one zeroed it loads. */
  expect_strategy(p, l, BK_IDEM_NONE, BK_ECORRUPT, "NONE with a timeout");
  bk__store_le64(p + OFF_TIMEOUT, 0);
  expect_strategy(p, l, BK_IDEM_NONE, BK_OK, "NONE without a filter blob");
  free(p);
  p = build(P.hdr, R.filter, R.flen, P.recs, P.rlen, nrec, &l);
  expect_status(p, l, BK_ECORRUPT, "FBF with an RBF blob");
  expect_strategy(p, l, BK_IDEM_FBF_ADAPTIVE, BK_ECORRUPT,
                  "FBF_ADAPTIVE with an RBF blob");
  expect_strategy(p, l, BK_IDEM_RBF, BK_OK, "RBF with an RBF blob");
  free(p);
  p = build(N.hdr, P.filter, P.flen, N.recs, N.rlen, N.keys, &l);
  expect_status(p, l, BK_ECORRUPT, "NONE header with an FBF blob");
  expect_strategy(p, l, BK_IDEM_RBF, BK_ECORRUPT, "RBF with an FBF blob");
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
  EDIT("strategy 7", BK_ECORRUPT, OFF_STRATEGY, 1, 7);
  EDIT("strategy APBF with an FBF blob", BK_ECORRUPT, OFF_STRATEGY, 1,
       BK_IDEM_APBF);
  EDIT("strategy WINDOW with a filter blob", BK_ECORRUPT, OFF_STRATEGY, 1,
       BK_IDEM_WINDOW);
  EDIT("timeout 0", BK_ECORRUPT, OFF_TIMEOUT, 8, 0);
  EDIT("a window size without windows", BK_ECORRUPT, OFF_WINDOW, 4, 256);
  EDIT("a client count without windows", BK_ECORRUPT, OFF_CLIENTS, 8, 1);
  EDIT("HYBRID's FBF config without HYBRID", BK_ECORRUPT, OFF_LAZY_CAPACITY, 8,
       1000);
  EDIT("a window start without windows", BK_ECORRUPT, OFF_WINDOW_START, 8, 1);
  EDIT("reserved u32 at 92 set", BK_ECORRUPT, OFF_WINDOW + 4, 4, 1);
  /* The FBF's clock (the table's, 9 here) is never ahead of the table's. */
  assert_int_equal(bk__load_le64(blob + OFF_NOW), 9);
  EDIT("the clock behind the FBF's", BK_ECORRUPT, OFF_NOW, 8, 8);
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
  EDIT("version 3", BK_EVERSION, OFF_VERSION, 2, 3);
  EDIT("version 1 with a version 2 header", BK_ECORRUPT, OFF_VERSION, 2, 1);
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
  bk_test_assert_serializes_to(&bk_test_codec_idem, t, blob, len);
  free(two);
  free(blob);
  free(rblob);
  free(nblob);
  bk_idem_destroy(t);
  bk_idem_destroy(tr);
  bk_idem_destroy(tn);
}

/* ---- HYBRID's lazy FBF ----------------------------------------------------
 */

/* Whether a HYBRID table of `ops` ops a period (timeout 30, fpp 0.001)
 * leaves its FBF to first need. */
static bool lazy_at(uint64_t ops) {
  bk_idem_config c = {.retry_timeout = 30, .ops_per_period = ops};
  bk_idem *t = idem_make(&c);
  bool lazy = idem_info_of(t).filter_memory == 0;
  bk_idem_destroy(t);
  return lazy;
}

/* HYBRID leaves its FBF to first need only while it is small
 * (BK__IDEM_LAZY_FBF_MAX); a bigger one is made at create, so a snapshot
 * without an FBF blob (F == 0) and a big config is no state create can
 * reach. The loader let one through: a resealed blob of a few hundred
 * bytes with capacity 2^31 + 8 loaded, and its first op below a window
 * made an FBF of gigabytes (format.md 3.3 rules 1 and 4; found by
 * python/tests/test_hostile.py). */
static void test_hybrid_lazy_fbf_bound(void **state) {
  (void)state;
  /* The default config (1.46 MB of FBF; the Redis module's, at fpp 1e-4,
   * 1.95 MB) stays lazy, and so does its snapshot. */
  bk_idem_config d = {.retry_timeout = 30};
  bk_idem *t = idem_make(&d);
  assert_int_equal(idem_info_of(t).filter_memory, 0);
  for (uint64_t s = 0; s < 100; s++) ADD(t, "k", 1, s, 1, NULL);
  assert_int_equal(idem_info_of(t).filter_memory, 0);
  size_t len;
  unsigned char *blob = idem_blob_of(t, &len);
  assert_true(len < 1024);
  assert_int_equal(bk__load_le64(blob + OFF_FSIZE), 0);
  assert_int_equal(bk__load_le64(blob + OFF_LAZY_CAPACITY), 100000);
  bk_test_codec_expect_edit(&bk_test_codec_idem, blob, len, OFF_LAZY_CAPACITY,
                            8, ((uint64_t)1 << 31) + 8, BK_ECORRUPT,
                            "F == 0, capacity 2^31 + 8");
  /* Sized by m and k: 4 filters of 2^20 lanes (512 KiB) stay lazy, of
   * 2^40 lanes would not. */
  unsigned char *mk = malloc(len);
  assert_non_null(mk);
  memcpy(mk, blob, len);
  bk__store_le64(mk + OFF_LAZY_CAPACITY, 0);
  bk__store_le32(mk + OFF_LAZY_CAPACITY + 28, 3); /* k */
  bk_test_codec_expect_edit(&bk_test_codec_idem, mk, len, OFF_LAZY_CAPACITY + 8,
                            8, (uint64_t)1 << 20, BK_OK, "F == 0, m 2^20, k 3");
  bk_test_codec_expect_edit(&bk_test_codec_idem, mk, len, OFF_LAZY_CAPACITY + 8,
                            8, (uint64_t)1 << 40, BK_ECORRUPT,
                            "F == 0, m 2^40, k 3");
  free(mk);

  /* The loader takes exactly what create leaves lazy: `lazy` is the most
   * ops a period create leaves lazy (bisected; the FBF's size grows with
   * the ops). */
  uint64_t lazy = 100000, eager = (uint64_t)1 << 20;
  assert_true(lazy_at(lazy) && !lazy_at(eager));
  while (eager - lazy > 1) {
    uint64_t mid = lazy + (eager - lazy) / 2;
    *(lazy_at(mid) ? &lazy : &eager) = mid;
  }
  bk_test_codec_expect_edit(&bk_test_codec_idem, blob, len, OFF_LAZY_CAPACITY,
                            8, eager, BK_ECORRUPT, "F == 0, the least eager");
  unsigned char *edge = malloc(len);
  assert_non_null(edge);
  memcpy(edge, blob, len);
  bk__store_le64(edge + OFF_LAZY_CAPACITY, lazy);
  bk_test_reseal(edge, len);
  bk_idem *r = NULL;
  assert_bk_ok(bk_idem_deserialize(edge, len, NULL, &r));
  /* The seqs sliding out of client 1's window, and an op below it, make
   * an FBF within the bound (which counts the FBF's regions before their
   * padding to a cache line). */
  assert_int_equal(idem_info_of(r).filter_memory, 0);
  assert_int_equal(ADD(r, "k", 1, 1000, 1, NULL), BK_IDEM_APPLIED);
  assert_int_equal(ADD(r, "k", 1, 5, 1, NULL), BK_IDEM_DUPLICATE);
  bk_idem_info in = idem_info_of(r);
  assert_int_equal(in.below_window, 1);
  assert_true(in.filter_memory > 0);
  assert_true(in.filter_memory <= BK__IDEM_LAZY_FBF_MAX + 3 * BK_CACHE_LINE);
  bk_idem_destroy(r);
  free(edge);
  free(blob);
  bk_idem_destroy(t);

  /* One op a period more: the FBF is made at create, and the blob carries
   * it (F > 0, its bytes paid for by the blob's length); it round-trips. */
  bk_idem_config big = {.retry_timeout = 30, .ops_per_period = eager};
  t = idem_make(&big);
  in = idem_info_of(t);
  assert_true(in.filter_memory > BK__IDEM_LAZY_FBF_MAX);
  assert_int_equal(in.n_filters, 4);
  assert_int_equal(ADD(t, "k", 1, 5, 1, NULL), BK_IDEM_APPLIED);
  assert_int_equal(ADD(t, "k", 1, 5, 1, NULL), BK_IDEM_DUPLICATE);
  assert_int_equal(in.below_window, 0);
  blob = idem_blob_of(t, &len);
  assert_true(bk__load_le64(blob + OFF_FSIZE) > BK__IDEM_LAZY_FBF_MAX / 2);
  assert_int_equal(bk__load_le64(blob + OFF_LAZY_CAPACITY), eager);
  r = NULL;
  assert_bk_ok(try_load(blob, len, &r));
  assert_int_equal(idem_info_of(r).filter_memory, in.filter_memory);
  bk_test_assert_serializes_to(&bk_test_codec_idem, r, blob, len);
  assert_int_equal(ADD(r, "k", 1, 5, 1, NULL), BK_IDEM_DUPLICATE);
  bk_idem_destroy(r);
  free(blob);
  bk_idem_destroy(t);
}

typedef struct oom_table {
  const model *m;
  const char *what;
} oom_table;

static void oom_load_check(void *check_ctx, bk_test_alloc *st, void *r) {
  (void)st;
  const oom_table *o = check_ctx;
  expect_table(r, o->m, o->what);
}

static void test_oom_deserialize(void **state) {
  (void)state;
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    bk_idem_config cfg = generous(strat, 100, idem_test_seed(0x0D));
    cfg.ops_per_period = 1000;
    bk_idem *t = idem_make(&cfg);
    model m = model_new(150);
    for (size_t i = 0; i < 150; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      (void)add_ok(t, kb, kl, opid(1, i), (int64_t)i - 70, NULL);
      model_apply(&m, i, (int64_t)i - 70);
    }
    oom_table o = {&m, strat_name(strat)};
    size_t len;
    unsigned char *blob = idem_blob_of(t, &len);
    for (int sticky = 0; sticky <= 1; sticky++) {
      unsigned failures =
          bk_test_oom_load(&bk_test_codec_idem, blob, len, oom_load_check, &o,
                           sticky, 2000, o.what);
      /* Table, stripes, filter (if any) and every key. */
      assert_true(failures >= 1 + 64 + 150);
    }
    free(blob);
    model_free(&m);
    bk_idem_destroy(t);
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
  unsigned char *bf = idem_blob_of(tf, &lf), *ba = idem_blob_of(ta, &la);
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
      bk_idem_info in = idem_info_of(r);
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

/* ---- golden blobs of version 1 --------------------------------------------
 * tests/data/idem_v1_<shape>.bin: the version 1 snapshots bloomkit
 * 0.2.0~dev1 wrote (its fuzz seeds, tests/fuzz/make_seeds.c seeds_idem):
 * m = 256, k = 3, T = 200, t = 100, seed 9; op j = 0 .. n - 1 adds j - 20
 * to "key{j % 7}" as op (0xC1 + j % 3, j) at time 10 j, every fourth sent
 * twice. Version 1 has no clock or windows: the table's clock is the FBF's
 * (0 without one). Each must load, hold those values, still recognise a
 * retry, and save as version 2. */

typedef struct golden_v1 {
  const char *file;
  bk_idem_strategy strategy;
  unsigned ops;
} golden_v1;

/* The table the golden blob was saved from, made again op by op (with
 * m = 256 the filters' false positives dismiss some genuine ops: the same
 * ones again, so the values must agree exactly). */
static bk_idem *golden_remade(const golden_v1 *g) {
  bk_idem_config cfg = {.strategy = g->strategy,
                        .retry_timeout = 200,
                        .refresh_period = 100,
                        .m_bits = 256,
                        .k = 3,
                        .seed = 9};
  bk_idem *t = idem_make(&cfg);
  for (unsigned j = 0; j < g->ops; j++) {
    char key[16];
    int n = snprintf(key, sizeof key, "key%u", j % 7);
    assert_bk_ok(bk_idem_advance(t, 10 * (uint64_t)j));
    for (unsigned again = 0; again <= (j % 4 == 0); again++)
      assert_bk_ok(bk_idem_add(t, key, (size_t)n, opid(0xC1u + j % 3, j),
                               (int64_t)j - 20, NULL, NULL));
  }
  return t;
}

static void check_golden_values(const bk_idem *t, const golden_v1 *g) {
  bk_idem *ref = golden_remade(g);
  bk_idem_info a = idem_info_of(t), b = idem_info_of(ref);
  assert_int_equal(a.keys, b.keys);
  assert_int_equal(a.keys, g->ops ? 7 : 0);
  assert_int_equal(a.applied, b.applied);
  assert_int_equal(a.duplicates, b.duplicates);
  for (unsigned k = 0; k < 7 && g->ops; k++) {
    char key[8];
    snprintf(key, sizeof key, "key%u", k);
    assert_int_equal(GET(t, key), GET(ref, key));
  }
  bk_idem_destroy(ref);
}

static void test_golden_v1(void **state) {
  (void)state;
  const golden_v1 goldens[] = {
      {"idem_v1_fbf-empty.bin", BK_IDEM_FBF, 0},
      {"idem_v1_fbf-keys.bin", BK_IDEM_FBF, 40},
      {"idem_v1_none-keys.bin", BK_IDEM_NONE, 30},
      {"idem_v1_rbf-keys.bin", BK_IDEM_RBF, 30},
      {"idem_v1_adaptive-keys.bin", BK_IDEM_FBF_ADAPTIVE, 60},
  };
  for (size_t i = 0; i < COUNT(goldens); i++) {
    const golden_v1 *g = &goldens[i];
    size_t len;
    unsigned char *blob = bk_test_data_file(g->file, &len);
    assert_int_equal(bk__load_le16(blob + OFF_VERSION), 1);
    bk_idem *t = NULL;
    assert_bk_ok(bk_idem_deserialize(blob, len, NULL, &t));
    bk_idem_info in = idem_info_of(t);
    assert_int_equal(in.strategy, g->strategy);
    bool fbf =
        g->strategy == BK_IDEM_FBF || g->strategy == BK_IDEM_FBF_ADAPTIVE;
    assert_int_equal(in.now, fbf && g->ops ? 10 * (uint64_t)(g->ops - 1) : 0);
    check_golden_values(t, g);
    /* Saved again: version 2, the same table. */
    size_t l2;
    unsigned char *b2 = idem_blob_of(t, &l2);
    assert_int_equal(bk__load_le16(b2 + OFF_VERSION), 2);
    bk_idem *r = NULL;
    assert_bk_ok(bk_idem_deserialize(b2, l2, NULL, &r));
    check_golden_values(r, g);
    assert_int_equal(idem_info_of(r).now, in.now);
    /* The last op again: a duplicate wherever a filter remembers it. */
    if (g->ops) {
      unsigned j = g->ops - 1;
      char key[8];
      snprintf(key, sizeof key, "key%u", j % 7);
      bk_idem *both[2] = {t, r};
      for (int b = 0; b < 2; b++)
        assert_int_equal(
            ADD(both[b], key, 0xC1u + j % 3, j, 1, NULL),
            g->strategy == BK_IDEM_NONE ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE);
    }
    bk_idem_destroy(r);
    bk_idem_destroy(t);
    free(b2);
    free(blob);
  }
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot_replay),
      cmocka_unit_test(test_deserialize_hostile),
      cmocka_unit_test(test_deserialize_crafted),
      cmocka_unit_test(test_oom_deserialize),
      cmocka_unit_test(test_deserialize_strategy_filter_mismatch),
      cmocka_unit_test(test_hybrid_lazy_fbf_bound),
      cmocka_unit_test(test_golden_v1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
