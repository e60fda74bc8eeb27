/* SPDX-License-Identifier: MIT */
/*
 * The codec descriptors of every serialized bloomkit type (see codecs.h):
 * adapters from each type's functions to the void-pointer signatures, and
 * the calls an accepted object must answer. No cmocka here: the libFuzzer
 * targets link this file too, and turn a returned message into a crash.
 */
#include "codecs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Header-only use of Debian's xxHash for the trailer. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/apbf.h"
#include "bloomkit/bits.h"
#include "bloomkit/bloom.h"
#include "bloomkit/bloomclock.h"
#include "bloomkit/cbf.h"
#include "bloomkit/counters.h"
#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/kbf.h"
#include "bloomkit/rbf.h"
#include "core/internal.h"

void bk_test_reseal(unsigned char *blob, size_t len) {
  bk__store_le64(blob + len - 8, (uint64_t)XXH3_64bits(blob, len - 8));
}

/* Generates the four adapters of type bk_<T>. */
#define BK_TEST_CODEC_ADAPTERS(T)                                             \
  static bk_status T##_size(const void *o, size_t *n) {                       \
    return bk_##T##_serialized_size(o, n);                                    \
  }                                                                           \
  static bk_status T##_save(const void *o, void *b, size_t cap, size_t *w) {  \
    return bk_##T##_serialize(o, b, cap, w);                                  \
  }                                                                           \
  static bk_status T##_load(const void *b, size_t len, const bk_allocator *a, \
                            void **out) {                                     \
    if (!out) return bk_##T##_deserialize(b, len, a, NULL);                   \
    bk_##T *x = *out;                                                         \
    bk_status s = bk_##T##_deserialize(b, len, a, &x);                        \
    *out = x;                                                                 \
    return s;                                                                 \
  }                                                                           \
  static void T##_destroy(void *o) {                                          \
    bk_##T##_destroy(o);                                                      \
  }

#define BK_TEST_CODEC(T, tag, ver, canon, same)         \
  const bk_test_codec bk_test_codec_##T = {             \
      #T,       tag,      ver,         canon, T##_size, \
      T##_save, T##_load, T##_destroy, same,  T##_exercise}

#define STR2(x) #x
#define STR(x) STR2(x)
#define EX_CHECK(cond)                                        \
  do {                                                        \
    if (!(cond)) return "codecs.c:" STR(__LINE__) ": " #cond; \
  } while (0)

/* ---- bits ---------------------------------------------------------------- */

static const char *bits_exercise(void *obj, uint64_t seed) {
  bk_bits *bits = obj;
  uint64_t n = bk_bits_size(bits), ones = 0;
  EX_CHECK(n >= 1);
  EX_CHECK(bk_bits_popcount(bits, &ones) == BK_OK && ones <= n);
  bool was, v;
  uint64_t any = seed % n;
  EX_CHECK(bk_bits_test_and_set(bits, any, &was) == BK_OK);
  EX_CHECK(bk_bits_test(bits, any, &v) == BK_OK && v);
  EX_CHECK(bk_bits_test_and_set(bits, n - 1, &was) == BK_OK);
  EX_CHECK(bk_bits_test(bits, n - 1, &v) == BK_OK && v);
  EX_CHECK(bk_bits_test(bits, n, &v) == BK_EINVAL);
  EX_CHECK(bk_bits_clear(bits, 0) == BK_OK);
  EX_CHECK(bk_bits_test(bits, 0, &v) == BK_OK && !v);
  EX_CHECK(bk_bits_clear_all(bits) == BK_OK);
  EX_CHECK(bk_bits_popcount(bits, &ones) == BK_OK && ones == 0);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(bits)
BK_TEST_CODEC(bits, BK__TYPE_BITS, 1, true, NULL);

/* ---- counters ------------------------------------------------------------ */

static const char *counters_exercise(void *obj, uint64_t seed) {
  bk_counters *c = obj;
  uint64_t n = bk_counters_size(c);
  unsigned width = bk_counters_width(c);
  uint32_t max = bk_counters_max(c);
  EX_CHECK(n >= 1);
  EX_CHECK(width == 4 || width == 8 || width == 16 || width == 32);
  EX_CHECK(max == (width == 32 ? UINT32_MAX : (1u << width) - 1));
  const uint64_t probe[4] = {0, n / 2, n - 1, seed % n};
  for (int i = 0; i < 4; i++) {
    uint32_t v = 0, after = 0;
    EX_CHECK(bk_counters_get(c, probe[i], &v) == BK_OK && v <= max);
    bk_status s = bk_counters_inc(c, probe[i], &after);
    EX_CHECK(s == BK_OK || s == BK_ESATURATED);
    EX_CHECK(after <= max && after >= v);
  }
  uint32_t v;
  EX_CHECK(bk_counters_get(c, n, &v) == BK_EINVAL);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(counters)
BK_TEST_CODEC(counters, BK__TYPE_COUNTERS, 1, true, NULL);

/* ---- bloom --------------------------------------------------------------- */

static const char *bloom_exercise(void *obj, uint64_t seed) {
  bk_bloom *b = obj;
  bk_bloom_info info;
  EX_CHECK(bk_bloom_info_get(b, &info) == BK_OK);
  EX_CHECK(info.k >= 1 && info.k <= 64 && info.m_bits >= 1);
  double d;
  EX_CHECK(bk_bloom_cardinality(b, &d) == BK_OK && d >= 0);
  EX_CHECK(bk_bloom_fill_fpp(b, &d) == BK_OK && d >= 0 && d <= 1);
  bool found, added;
  EX_CHECK(bk_bloom_contains(b, &seed, sizeof seed, &found) == BK_OK);
  EX_CHECK(bk_bloom_add(b, &seed, sizeof seed) == BK_OK);
  EX_CHECK(bk_bloom_contains(b, &seed, sizeof seed, &found) == BK_OK && found);
  EX_CHECK(bk_bloom_contains(b, "probe", 5, &found) == BK_OK);
  EX_CHECK(bk_bloom_add_if_absent(b, "probe", 5, &added) == BK_OK);
  EX_CHECK(!(found && added));
  EX_CHECK(bk_bloom_contains(b, "probe", 5, &found) == BK_OK && found);
  /* The modified filter round-trips and merges with its copy. */
  size_t need, written;
  EX_CHECK(bk_bloom_serialized_size(b, &need) == BK_OK);
  unsigned char *out = malloc(need);
  EX_CHECK(out != NULL);
  bk_bloom *again = NULL;
  bool ok = bk_bloom_serialize(b, out, need, &written) == BK_OK &&
            bk_bloom_deserialize(out, written, NULL, &again) == BK_OK &&
            bk_bloom_contains(again, "probe", 5, &found) == BK_OK && found &&
            bk_bloom_merge(again, b) == BK_OK;
  bk_bloom_destroy(again);
  free(out);
  EX_CHECK(ok);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(bloom)
BK_TEST_CODEC(bloom, BK__TYPE_BLOOM, 1, true, NULL);

/* ---- fbf ----------------------------------------------------------------- */

/* now + j periods of length t, saturating below UINT64_MAX, where seed
 * picks j: a few (0..7), up to 2^20, or up to 2^48 periods. */
static uint64_t random_jump(uint64_t now, uint64_t t, uint64_t seed) {
  static const unsigned bits[3] = {3, 20, 48};
  uint64_t j = (seed >> 2) & ((UINT64_C(1) << bits[(seed & 3) % 3]) - 1);
  if (t == 0) t = 1;
  if (now >= UINT64_MAX - 1) return now;
  return j > (UINT64_MAX - 1 - now) / t ? UINT64_MAX - 1 : now + j * t;
}

static const char *fbf_exercise(void *obj, uint64_t seed) {
  bk_fbf *f = obj;
  bool v;
  bk_hash h = {0x1234, 0x5678};
  EX_CHECK(bk_fbf_contains_hash(f, h, &v) == BK_OK);
  EX_CHECK(bk_fbf_add_hash(f, h) == BK_OK);
  EX_CHECK(bk_fbf_contains_hash(f, h, &v) == BK_OK && v);
  bool is_new;
  EX_CHECK(bk_fbf_add_if_absent(f, "x", 1, &is_new) == BK_OK);
  EX_CHECK(bk_fbf_contains(f, "x", 1, &v) == BK_OK && v);
  double fpp;
  EX_CHECK(bk_fbf_estimated_fpp(f, BK_FBF_CHECK_DEFAULT, &fpp) == BK_OK);
  EX_CHECK(fpp >= 0.0 && fpp <= 1.0);
  bk_fbf_info info;
  EX_CHECK(bk_fbf_info_get(f, &info) == BK_OK);
  EX_CHECK(info.n_filters >= 3 && info.n_filters <= info.max_filters);
  /* One more period: a restored schedule is never stale. */
  uint64_t later = info.now > UINT64_MAX - info.refresh_period
                       ? UINT64_MAX
                       : info.now + info.refresh_period;
  EX_CHECK(bk_fbf_advance(f, later) == BK_OK);
  EX_CHECK(bk_fbf_contains_hash(f, h, &v) == BK_OK);
  /* A jump the seed picks: a few periods, up to 2^20, or up to 2^48. */
  EX_CHECK(bk_fbf_info_get(f, &info) == BK_OK);
  later = random_jump(info.now, info.refresh_period, seed);
  EX_CHECK(bk_fbf_advance(f, later) == BK_OK);
  EX_CHECK(bk_fbf_add_hash(f, h) == BK_OK);
  EX_CHECK(bk_fbf_contains_hash(f, h, &v) == BK_OK && v);
  /* Whatever the state says, no call's time grows with the clock: jumps
   * of 2^40 periods and to the end of time return (a hang here is caught
   * by ctest's timeout or libFuzzer's -timeout). */
  EX_CHECK(bk_fbf_info_get(f, &info) == BK_OK);
  uint64_t far = info.refresh_period > (UINT64_MAX >> 41)
                     ? UINT64_MAX - 1
                     : info.refresh_period << 40;
  later = info.now > UINT64_MAX - 1 - far ? UINT64_MAX - 1 : info.now + far;
  if (later < info.now) later = info.now; /* the clock is at the end */
  EX_CHECK(bk_fbf_advance(f, later) == BK_OK);
  EX_CHECK(bk_fbf_add_if_absent(f, "y", 1, &is_new) == BK_OK);
  EX_CHECK(bk_fbf_advance(f, UINT64_MAX) == BK_OK);
  EX_CHECK(bk_fbf_estimated_fpp(f, BK_FBF_CHECK_DEFAULT, &fpp) == BK_OK);
  EX_CHECK(bk_fbf_contains(f, "y", 1, &v) == BK_OK);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(fbf)
BK_TEST_CODEC(fbf, BK__TYPE_FBF, 1, true, NULL);

/* ---- rbf ----------------------------------------------------------------- */

static const char *rbf_exercise(void *obj, uint64_t seed) {
  bk_rbf *r = obj;
  bool v;
  bk_hash h = {seed, seed * 0x9E3779B97F4A7C15u};
  bk_rbf_info before, after;
  EX_CHECK(bk_rbf_info_get(r, &before) == BK_OK);
  EX_CHECK(bk_rbf_contains_hash(r, h, &v) == BK_OK);
  EX_CHECK(bk_rbf_add_hash(r, h) == BK_OK);
  EX_CHECK(bk_rbf_info_get(r, &after) == BK_OK);
  /* Found, unless this insert was the one that recycled the filter. */
  EX_CHECK(bk_rbf_contains_hash(r, h, &v) == BK_OK &&
           (v || after.recycles != before.recycles));
  bool is_new;
  EX_CHECK(bk_rbf_add_if_absent(r, "x", 1, &is_new) == BK_OK);
  double fpp;
  EX_CHECK(bk_rbf_estimated_fpp(r, &fpp) == BK_OK);
  EX_CHECK(fpp >= 0.0 && fpp <= 1.0);
  bk_rbf_info info;
  EX_CHECK(bk_rbf_info_get(r, &info) == BK_OK);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(rbf)
BK_TEST_CODEC(rbf, BK__TYPE_RBF, 1, true, NULL);

/* ---- apbf ---------------------------------------------------------------- */

static const char *apbf_exercise(void *obj, uint64_t seed) {
  bk_apbf *f = obj;
  bool v, is_new;
  bk_hash h = {seed, seed * 0x9E3779B97F4A7C15u};
  bk_apbf_info info;
  EX_CHECK(bk_apbf_info_get(f, &info) == BK_OK);
  EX_CHECK(info.k >= 1 && info.l >= 1);
  EX_CHECK(info.time_based || info.in_generation <= info.generation);
  EX_CHECK(bk_apbf_contains_hash(f, h, &v) == BK_OK);
  /* Found right after its insert, whether or not the insert shifted. */
  EX_CHECK(bk_apbf_add_hash(f, h) == BK_OK);
  EX_CHECK(bk_apbf_contains_hash(f, h, &v) == BK_OK && v);
  EX_CHECK(bk_apbf_add_if_absent_hash(f, h, &is_new) == BK_OK && !is_new);
  EX_CHECK(bk_apbf_add_if_absent(f, "x", 1, &is_new) == BK_OK);
  EX_CHECK(bk_apbf_contains(f, "x", 1, &v) == BK_OK && v);
  double fpp;
  EX_CHECK(bk_apbf_estimated_fpp(f, &fpp) == BK_OK && fpp >= 0.0 && fpp <= 1.0);
  /* Clock jumps the seed picks, then to the end of time: none hangs, and
   * the read as of a time agrees with the state after advancing to it. */
  EX_CHECK(bk_apbf_info_get(f, &info) == BK_OK);
  uint64_t later = random_jump(info.now, info.period, seed);
  bool at = false;
  EX_CHECK(bk_apbf_contains_at_hash(f, h, later, &at) == BK_OK);
  EX_CHECK(bk_apbf_advance(f, later) == BK_OK);
  EX_CHECK(bk_apbf_contains_hash(f, h, &v) == BK_OK && v == at);
  if (later > 0) EX_CHECK(bk_apbf_advance(f, later - 1) == BK_EINVAL);
  EX_CHECK(bk_apbf_add(f, "y", 1) == BK_OK);
  EX_CHECK(bk_apbf_advance(f, UINT64_MAX) == BK_OK);
  EX_CHECK(bk_apbf_contains(f, "y", 1, &v) == BK_OK);
  EX_CHECK(bk_apbf_add_if_absent(f, "z", 1, &is_new) == BK_OK);
  EX_CHECK(bk_apbf_info_get(f, &info) == BK_OK);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(apbf)
BK_TEST_CODEC(apbf, BK__TYPE_APBF, 1, true, NULL);

/* ---- idem ---------------------------------------------------------------- */

static int count_keys(void *ctx, const void *key, size_t len, int64_t value) {
  (void)key, (void)len, (void)value;
  ++*(uint64_t *)ctx;
  return 0;
}

static const char *idem_exercise(void *obj, uint64_t seed) {
  bk_idem *t = obj;
  bk_idem_info info;
  EX_CHECK(bk_idem_info_get(t, &info) == BK_OK);
  uint64_t walked = 0;
  EX_CHECK(bk_idem_iterate(t, count_keys, &walked) == BK_OK);
  EX_CHECK(walked == info.keys);
  bk_idem_op_id id = {0xFEEDu, 7};
  int64_t v, v2;
  bk_idem_outcome o;
  bk_status s = bk_idem_add(t, "k", 1, id, 1, &v, &o);
  EX_CHECK(s == BK_OK || s == BK_ERANGE);
  if (s == BK_OK) {
    /* Applied, the key holds the value; a false positive of the filter
     * (a saturated one, say) dismisses the op and creates nothing. */
    bk_status g = bk_idem_get(t, "k", 1, &v2);
    if (o == BK_IDEM_APPLIED) EX_CHECK(g == BK_OK && v2 == v);
    /* The same op again is a duplicate for every strategy but NONE (and
     * still too old for WINDOW when the client's window is past it). */
    bk_idem_outcome first = o;
    s = bk_idem_add(t, "k", 1, id, 1, &v2, &o);
    if (first == BK_IDEM_TOO_OLD) {
      EX_CHECK(info.strategy == BK_IDEM_WINDOW);
      EX_CHECK(s == BK_OK && o == BK_IDEM_TOO_OLD && v2 == v);
    } else if (info.strategy == BK_IDEM_NONE) {
      EX_CHECK(s == BK_ERANGE || (s == BK_OK && v2 == v + 1));
    } else {
      EX_CHECK(s == BK_OK && o == BK_IDEM_DUPLICATE);
    }
  }
  /* The clock can jump anywhere, up to the end of time, promptly. */
  EX_CHECK(bk_idem_info_get(t, &info) == BK_OK);
  /* (The table does not tell its clock: from 0, EINVAL when it is past.) */
  s = bk_idem_advance(t, random_jump(0, info.refresh_period, seed));
  EX_CHECK(s == BK_OK || s == BK_EINVAL);
  s = bk_idem_advance(t, UINT64_MAX / 2);
  EX_CHECK(s == BK_OK || s == BK_EINVAL); /* EINVAL: the clock is past it */
  EX_CHECK(bk_idem_advance(t, UINT64_MAX) == BK_OK);
  EX_CHECK(bk_idem_info_get(t, &info) == BK_OK);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(idem)

typedef struct lookup_ctx {
  const bk_idem *other;
  bool differs;
} lookup_ctx;

static int lookup_in_other(void *ctx, const void *key, size_t len,
                           int64_t value) {
  lookup_ctx *lc = ctx;
  int64_t v;
  if (bk_idem_get(lc->other, key, len, &v) != BK_OK || v != value) {
    lc->differs = true;
    return 1;
  }
  return 0;
}

static size_t window_rec; /* record size for cmp_window (tests: one thread) */

static int cmp_window(const void *x, const void *y) {
  return memcmp(*(const unsigned char *const *)x,
                *(const unsigned char *const *)y, window_rec);
}

/* The client windows of an idem blob (version 2), each record once, in
 * record order: sorted copies compare equal exactly when the sets do. */
static bool same_windows(const unsigned char *a, const unsigned char *b) {
  uint64_t n = bk__load_le64(a + 96);
  if (n != bk__load_le64(b + 96)) return false;
  if (n == 0) return true;
  size_t rec = 16 + 9 * (size_t)(bk__load_le32(a + 88) / 64);
  const unsigned char *wa = a + 184 + bk__load_le64(a + 64);
  const unsigned char *wb = b + 184 + bk__load_le64(b + 64);
  const unsigned char **ra = malloc(2 * n * sizeof *ra);
  if (!ra) return false;
  const unsigned char **rb = ra + n;
  for (uint64_t i = 0; i < n; i++) ra[i] = wa + i * rec, rb[i] = wb + i * rec;
  window_rec = rec;
  qsort(ra, n, sizeof *ra, cmp_window);
  qsort(rb, n, sizeof *rb, cmp_window);
  bool same = true;
  for (uint64_t i = 0; i < n && same; i++)
    same = memcmp(ra[i], rb[i], rec) == 0;
  free(ra);
  return same;
}

/* Same header, same filter bytes, same client windows, same keys with the
 * same values. */
static const char *idem_same(const void *a, const void *b) {
  bk_status s;
  size_t la, lb;
  unsigned char *ba = bk_test_codec_serialize(&bk_test_codec_idem, a, &la, &s);
  unsigned char *bb = bk_test_codec_serialize(&bk_test_codec_idem, b, &lb, &s);
  const char *why = NULL;
  if (!ba || !bb) {
    why = "does not serialize";
  } else {
    size_t fixed = 184 + (size_t)bk__load_le64(ba + 64); /* header + filter */
    lookup_ctx lc = {b, false};
    if (la != lb || fixed > la || memcmp(ba, bb, fixed) != 0)
      why = "header or filter differ";
    else if (!same_windows(ba, bb))
      why = "client windows differ";
    else if (bk_idem_iterate(a, lookup_in_other, &lc) != BK_OK || lc.differs)
      why = "keys or values differ";
  }
  free(ba);
  free(bb);
  return why;
}

/* Not canonical: the keys and client windows are written in table order,
 * which depends on the order they were inserted, so equal tables can have
 * different blobs and a loader accepts any order (each key once). */
BK_TEST_CODEC(idem, BK__TYPE_IDEM, 2, false, idem_same);

/* ---- cbf ----------------------------------------------------------------- */

static const char *cbf_exercise(void *obj, uint64_t seed) {
  bk_cbf *f = obj;
  bk_cbf_info info;
  EX_CHECK(bk_cbf_info_get(f, &info) == BK_OK);
  EX_CHECK(info.k >= 1 && info.k <= 64 && info.m_counters >= 1);
  EX_CHECK(info.saturated <= info.nonzero && info.nonzero <= info.m_counters);
  EX_CHECK(info.fill_fpp >= 0 && info.fill_fpp <= 1);
  bool found;
  uint32_t before, after;
  EX_CHECK(bk_cbf_count(f, &seed, sizeof seed, &before) == BK_OK);
  EX_CHECK(bk_cbf_add(f, &seed, sizeof seed) == BK_OK);
  EX_CHECK(bk_cbf_contains(f, &seed, sizeof seed, &found) == BK_OK && found);
  EX_CHECK(bk_cbf_count(f, &seed, sizeof seed, &after) == BK_OK);
  EX_CHECK(after >= 1 && after >= before);
  /* Whatever the counters hold, a remove of what was added succeeds and
   * keeps every other key's counters above what they were. */
  EX_CHECK(bk_cbf_remove(f, &seed, sizeof seed) == BK_OK);
  EX_CHECK(bk_cbf_count(f, &seed, sizeof seed, &after) == BK_OK &&
           after >= before);
  bk_status s = bk_cbf_remove(f, "never added", 11);
  EX_CHECK(s == BK_OK || s == BK_ENOTFOUND);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(cbf)
BK_TEST_CODEC(cbf, BK__TYPE_CBF, 1, true, NULL);

/* ---- scbf ---------------------------------------------------------------- */

/* The exercise: info is self-consistent; an add with an id past every
 * range is found and removes again with that id; an id in no range is
 * refused without a change; the seqnums move one per write. */
static const char *scbf_exercise(void *obj, uint64_t seed) {
  bk_scbf *s = obj;
  bk_scbf_info info, after;
  EX_CHECK(bk_scbf_info_get(s, &info) == BK_OK);
  EX_CHECK(info.n_filters >= 1 && info.n_filters <= info.max_filters);
  EX_CHECK(info.saturated <= info.nonzero && info.nonzero <= info.m_counters);
  EX_CHECK(info.estimated_fpp >= 0 && info.estimated_fpp <= 1);
  EX_CHECK(info.mem_seqnum == 0 || info.mem_seqnum == info.seqnum);
  bk_scbf_filter_info fi;
  EX_CHECK(bk_scbf_filter_info_get(s, info.n_filters - 1, &fi) == BK_OK);
  EX_CHECK(bk_scbf_filter_info_get(s, info.n_filters, &fi) == BK_ERANGE);
  uint64_t id = fi.has_ids ? fi.last_id : fi.first_id;
  if (id < UINT64_MAX - 1) id += seed % 3;
  bool found;
  bk_status st = bk_scbf_add(s, &seed, sizeof seed, id);
  EX_CHECK(st == BK_OK || st == BK_EFULL);
  if (st == BK_OK) {
    EX_CHECK(bk_scbf_contains(s, &seed, sizeof seed, &found) == BK_OK && found);
    EX_CHECK(bk_scbf_info_get(s, &after) == BK_OK);
    EX_CHECK(after.seqnum == info.seqnum + 1 &&
             after.mem_seqnum == after.seqnum);
    EX_CHECK(bk_scbf_remove(s, &seed, sizeof seed, id) == BK_OK);
  }
  EX_CHECK(bk_scbf_info_get(s, &info) == BK_OK);
  EX_CHECK(bk_scbf_filter_info_get(s, info.n_filters - 1, &fi) == BK_OK);
  if (fi.has_ids && fi.last_id < UINT64_MAX - 1) {
    EX_CHECK(bk_scbf_remove(s, "x", 1, fi.last_id + 1) == BK_ENOTFOUND);
    EX_CHECK(bk_scbf_info_get(s, &after) == BK_OK &&
             after.seqnum == info.seqnum);
  }
  EX_CHECK(bk_scbf_add(s, "x", 1, UINT64_MAX) == BK_EINVAL);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(scbf)
BK_TEST_CODEC(scbf, BK__TYPE_SCBF, 1, true, NULL);

/* ---- bloomclock ------------------------------------------------------------
 */

static const char *bloomclock_exercise(void *obj, uint64_t seed) {
  bk_bloomclock *c = obj;
  bk_bloomclock_info in, after;
  EX_CHECK(bk_bloomclock_info_get(c, &in) == BK_OK);
  EX_CHECK(in.m >= 1 && in.k >= 1 && in.k <= 64);
  EX_CHECK(in.base <= BK_BLOOMCLOCK_BASE_MAX && in.saturated <= in.m);
  uint64_t v;
  EX_CHECK(bk_bloomclock_get(c, seed % in.m, &v) == BK_OK);
  EX_CHECK(bk_bloomclock_get(c, in.m, &v) == BK_EINVAL);
  /* A copy taken now happened before the next tick (or equals it when the
   * event count is exhausted or every counter is saturated). */
  bk_bloomclock *before = NULL;
  EX_CHECK(bk_bloomclock_create(
               &before, &(bk_bloomclock_config){.m = in.m,
                                                .k = in.k,
                                                .counter_bits = in.counter_bits,
                                                .hash_alg = in.hash_alg,
                                                .seed = in.seed}) == BK_OK);
  bk_causality rel = BK_CAUSAL_CONCURRENT;
  bk_status ts = BK_EINVAL;
  double lp = 1, pp = -1;
  bool ok = bk_bloomclock_copy(before, c) == BK_OK &&
            bk_bloomclock_compare(before, c, &rel) == BK_OK &&
            rel == BK_CAUSAL_EQUAL;
  if (ok) {
    ts = bk_bloomclock_tick(c);
    ok = (ts == BK_OK || (ts == BK_ERANGE && in.events == UINT64_MAX)) &&
         bk_bloomclock_compare(before, c, &rel) == BK_OK &&
         (rel == BK_CAUSAL_BEFORE || rel == BK_CAUSAL_EQUAL) &&
         bk_bloomclock_log_pr_p(before, c, &lp) == BK_OK && lp <= 0 &&
         !isnan(lp) && bk_bloomclock_pr_p(c, before, &pp) == BK_OK && pp >= 0 &&
         pp <= 1;
  }
  /* The receive path: the earlier copy's wire form merged into c. */
  if (ok) {
    size_t need = 0, w = 0;
    unsigned char *buf = NULL;
    ok = bk_bloomclock_serialized_size(before, &need) == BK_OK &&
         (buf = malloc(need)) != NULL &&
         bk_bloomclock_serialize(before, buf, need, &w) == BK_OK;
    if (ok) {
      bk_status rs = bk_bloomclock_receive(c, buf, w);
      ok = (rs == BK_OK || rs == BK_ERANGE) &&
           bk_bloomclock_compare(before, c, &rel) == BK_OK &&
           (rel == BK_CAUSAL_BEFORE || rel == BK_CAUSAL_EQUAL) &&
           bk_bloomclock_load(before, buf, w) == BK_OK;
    }
    free(buf);
  }
  bk_bloomclock_destroy(before);
  EX_CHECK(ok);
  EX_CHECK(bk_bloomclock_info_get(c, &after) == BK_OK);
  EX_CHECK(after.base >= in.base && after.saturated >= in.saturated);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(bloomclock)
BK_TEST_CODEC(bloomclock, BK__TYPE_BLOOMCLOCK, 1, true, NULL);

/* ---- vclock ----------------------------------------------------------------
 */

static const char *vclock_exercise(void *obj, uint64_t seed) {
  bk_vclock *v = obj;
  const uint64_t p = bk_vclock_processes(v);
  EX_CHECK(p >= 1);
  uint32_t e;
  EX_CHECK(bk_vclock_get(v, seed % p, &e) == BK_OK);
  EX_CHECK(bk_vclock_get(v, p, &e) == BK_EINVAL);
  bk_vclock *before = NULL;
  EX_CHECK(bk_vclock_create(&before, &(bk_vclock_config){.processes = p}) ==
           BK_OK);
  bk_causality rel = BK_CAUSAL_CONCURRENT;
  const uint64_t sum = bk_vclock_sum(v);
  bool ok = bk_vclock_copy(before, v) == BK_OK;
  bk_status ts = ok ? bk_vclock_tick(v) : BK_EINVAL;
  ok = ok && (ts == BK_OK || ts == BK_ERANGE) &&
       bk_vclock_compare(before, v, &rel) == BK_OK &&
       rel == (ts == BK_OK ? BK_CAUSAL_BEFORE : BK_CAUSAL_EQUAL) &&
       bk_vclock_sum(v) == sum + (ts == BK_OK);
  bk_vclock_destroy(before);
  EX_CHECK(ok);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(vclock)
BK_TEST_CODEC(vclock, BK__TYPE_VCLOCK, 1, true, NULL);

/* ---- checks shared with the harness and the fuzzers ---------------------- */

unsigned char *bk_test_codec_serialize(const bk_test_codec *c, const void *obj,
                                       size_t *len, bk_status *status) {
  size_t need = 0, written = 0;
  *status = c->serialized_size(obj, &need);
  if (*status != BK_OK) return NULL;
  unsigned char *buf = malloc(need ? need : 1);
  if (!buf) {
    *status = BK_ENOMEM;
    return NULL;
  }
  *status = c->serialize(obj, buf, need, &written);
  if (*status == BK_OK && written != need) *status = BK_EINVAL;
  if (*status != BK_OK) {
    free(buf);
    return NULL;
  }
  *len = need;
  return buf;
}

static char sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

const char *bk_test_codec_check_accepted(const bk_test_codec *c,
                                         const unsigned char *blob, size_t len,
                                         bk_status *status) {
  void *obj = SENTINEL;
  *status = c->deserialize(blob, len, NULL, &obj);
  if (*status != BK_OK)
    return obj == SENTINEL ? NULL : "a failed load wrote its out-parameter";
  if (obj == SENTINEL || obj == NULL) return "BK_OK without an object";
  const char *why = NULL;
  bk_status s;
  size_t len2 = 0, len3 = 0;
  unsigned char *again = bk_test_codec_serialize(c, obj, &len2, &s);
  unsigned char *third = NULL;
  void *copy = NULL;
  if (!again) {
    why = "an accepted object does not serialize";
  } else if (c->canonical) {
    if (len2 != len || memcmp(again, blob, len) != 0)
      why = "accepted a non-canonical blob (it re-serializes differently)";
  } else if (c->deserialize(again, len2, NULL, &copy) != BK_OK) {
    why = "the re-serialized bytes of an accepted blob do not load";
  } else if (c->same) {
    why = c->same(obj, copy);
  } else if (!(third = bk_test_codec_serialize(c, copy, &len3, &s)) ||
             len3 != len2 || memcmp(third, again, len2) != 0) {
    why = "re-serialization is not stable";
  }
  if (copy) c->destroy(copy);
  free(third);
  free(again);
  if (!why) why = c->exercise(obj, (uint64_t)XXH3_64bits(blob, len));
  /* The exercised object still round-trips. */
  unsigned char *after = NULL, *after2 = NULL;
  void *back = NULL;
  size_t alen = 0, alen2 = 0;
  if (!why && !(after = bk_test_codec_serialize(c, obj, &alen, &s)))
    why = "an exercised object does not serialize";
  else if (!why && c->deserialize(after, alen, NULL, &back) != BK_OK)
    why = "an exercised object's bytes do not load";
  else if (!why && c->same)
    why = c->same(obj, back);
  else if (!why && (!(after2 = bk_test_codec_serialize(c, back, &alen2, &s)) ||
                    alen2 != alen || memcmp(after2, after, alen) != 0))
    why = "an exercised object does not re-serialize to the same bytes";
  if (back) c->destroy(back);
  free(after2);
  free(after);
  c->destroy(obj);
  return why;
}

/* ---- kbf ----------------------------------------------------------------- */

static const char *kbf_exercise(void *obj, uint64_t seed) {
  bk_kbf *f = obj;
  bk_kbf_info info;
  EX_CHECK(bk_kbf_info_get(f, &info) == BK_OK);
  EX_CHECK(info.k >= 1 && info.k <= 64 && info.m_cells >= 1);
  EX_CHECK(info.n_values <= info.max_values);
  EX_CHECK(info.saturated <= info.nonzero && info.nonzero <= info.m_cells);
  /* Every stored value reads back. */
  for (uint32_t i = 0; i < info.n_values; i++) {
    const void *v;
    size_t len;
    EX_CHECK(bk_kbf_value(f, i, &v, &len) == BK_OK);
  }
  /* A fresh key with a fresh value: insert, query, update, delete. Any
   * answer may be "not decodable" in a crowded filter, never a wrong value
   * (a false positive is possible for the fresh key before its insert). */
  bk_kbf_result r;
  uint32_t index = 0;
  const void *v;
  size_t len;
  bk_status s = bk_kbf_insert(f, &seed, sizeof seed, "exercise", 8);
  EX_CHECK(s == BK_OK || s == BK_EFULL);
  if (s == BK_OK) {
    EX_CHECK(bk_kbf_query(f, &seed, sizeof seed, &r, &v, &len) == BK_OK);
    EX_CHECK(r != BK_KBF_ABSENT);
    EX_CHECK(r != BK_KBF_FOUND || (len == 8 && memcmp(v, "exercise", 8) == 0));
    s = bk_kbf_update(f, &seed, sizeof seed, "exercise", 8);
    EX_CHECK(s == BK_OK || s == BK_EUNDECODABLE);
    bk_hash h;
    EX_CHECK(bk_kbf_hash(f, &seed, sizeof seed, &h) == BK_OK);
    EX_CHECK(bk_kbf_intern(f, "exercise", 8, &index) == BK_OK ||
             info.n_values == info.max_values);
    s = bk_kbf_delete(f, &seed, sizeof seed);
    EX_CHECK(s == BK_OK || s == BK_EUNDECODABLE);
  }
  s = bk_kbf_delete(f, "never added", 11);
  EX_CHECK(s == BK_OK || s == BK_ENOTFOUND || s == BK_EUNDECODABLE);
  s = bk_kbf_compress(f);
  EX_CHECK(s == BK_OK || s == BK_ESTATE);
  return NULL;
}
BK_TEST_CODEC_ADAPTERS(kbf)
BK_TEST_CODEC(kbf, BK__TYPE_KBF, 1, true, NULL);
