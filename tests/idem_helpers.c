/* SPDX-License-Identifier: MIT */
/*
 * The idem test programs' shared helpers (idem_helpers.h): one-liners over
 * the API that fail the test on error, generated keys, and the reference
 * model a table is checked against.
 */
#include "idem_helpers.h"

#include <stdlib.h>

#include "core/internal.h"

char idem_sentinel_storage;

const bk_idem_strategy ALL_STRATEGIES[7] = {
    BK_IDEM_HYBRID, BK_IDEM_WINDOW, BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE,
    BK_IDEM_APBF,   BK_IDEM_RBF,    BK_IDEM_NONE};
const bk_idem_strategy FILTERING[3] = {BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE,
                                       BK_IDEM_RBF};

uint64_t idem_test_seed(uint64_t salt) {
  return bk_test_seed(IDEM_SEED_FALLBACK) ^ salt;
}

const char *strat_name(bk_idem_strategy s) {
  switch (s) {
    case BK_IDEM_FBF:
      return "FBF";
    case BK_IDEM_NONE:
      return "NONE";
    case BK_IDEM_RBF:
      return "RBF";
    case BK_IDEM_FBF_ADAPTIVE:
      return "FBF_ADAPTIVE";
    case BK_IDEM_HYBRID:
      return "HYBRID";
    case BK_IDEM_WINDOW:
      return "WINDOW";
    case BK_IDEM_APBF:
      return "APBF";
  }
  return "?";
}

bk_idem *idem_make(const bk_idem_config *cfg) {
  bk_idem *t = NULL;
  bk_status s = bk_idem_create(&t, cfg);
  if (s != BK_OK)
    fail_msg("bk_idem_create(%s): %s", strat_name(cfg->strategy),
             bk_status_name(s));
  assert_non_null(t);
  return t;
}

bk_idem_config generous(bk_idem_strategy s, uint64_t timeout, uint64_t seed) {
  bk_idem_config c = {.strategy = s,
                      .retry_timeout = timeout,
                      .ops_per_period = 10000,
                      .fpp = 1e-9,
                      .seed = seed};
  return c;
}

bk_idem_op_id opid(uint64_t client, uint64_t seq) {
  bk_idem_op_id id = {client, seq};
  return id;
}

bk_idem_outcome add_ok(bk_idem *t, const void *key, size_t len,
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

int64_t get_ok(const bk_idem *t, const void *key, size_t len) {
  int64_t v = 0;
  bk_status s = bk_idem_get(t, key, len, &v);
  if (s != BK_OK) fail_msg("bk_idem_get: %s", bk_status_name(s));
  return v;
}

bk_idem_info idem_info_of(const bk_idem *t) {
  bk_idem_info in;
  memset(&in, 0xA5, sizeof in);
  assert_bk_ok(bk_idem_info_get(t, &in));
  return in;
}

BK_TEST_DEFINE_BLOB_OF(idem, )

size_t key_of(uint64_t i, unsigned char *buf) {
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

bool key_index(const void *key, size_t len, uint64_t *idx) {
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

model model_new(size_t n) {
  model m = {n, calloc(n, sizeof(int64_t)), calloc(n, 1)};
  assert_non_null(m.value);
  assert_non_null(m.live);
  return m;
}

void model_free(model *m) {
  free(m->value);
  free(m->live);
  m->value = NULL;
  m->live = NULL;
}

void model_apply(model *m, uint64_t i, int64_t delta) {
  m->value[i] += delta;
  m->live[i] = 1;
}

void model_remove(bk_idem *t, model *m, uint64_t i) {
  unsigned char kb[KEY_BUF];
  size_t kl = key_of(i, kb);
  assert_bk_ok(bk_idem_remove(t, kb, kl));
  m->live[i] = 0;
  m->value[i] = 0;
}

int walk_cb(void *ctx, const void *key, size_t len, int64_t value) {
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

void expect_table(const bk_idem *t, const model *m, const char *what) {
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
  assert_int_equal(idem_info_of(t).keys, live);
  free(w.seen);
}

race_tally race_tally_of(const unsigned char *a, const unsigned char *b,
                         size_t n) {
  race_tally r = {0, 0, 0};
  for (size_t j = 0; j < n; j++) {
    unsigned applied = (a[j] == BK_IDEM_APPLIED) + (b[j] == BK_IDEM_APPLIED);
    r.both += applied == 2;
    r.neither += applied == 0;
    r.too_old += (a[j] == BK_IDEM_TOO_OLD) + (b[j] == BK_IDEM_TOO_OLD);
  }
  return r;
}
