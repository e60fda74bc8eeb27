/* SPDX-License-Identifier: MIT */
/*
 * bk_rbf: the Recyclable Bloom Filter baseline (fbf-thesis Sec. 6.4.4), a
 * bk_bloom plus an insert count. The recycle threshold is precomputed: the
 * smallest count l with (1 - (1 - 1/m)^{k l})^k >= target, so an insert
 * compares two integers instead of evaluating Eq. 4.1.
 */
#include "bloomkit/rbf.h"

#include "bloomkit/bloom_inline.h"
#include "bloomkit/params.h"
#include "core/internal.h"

#define DEFAULT_FPP 0.01

struct bk_rbf {
  bk__alloc alloc;
  bk_bloom *bloom;
  uint64_t m;
  unsigned k;
  uint64_t threshold;
  uint64_t inserted;  /* atomic */
  uint64_t recycles;  /* atomic */
  uint32_t recycling; /* atomic: an inserter is recycling */
};

/* Smallest l with fpp(m, k, l) >= target, by bisection on a monotone
 * function (fpp rises with l). */
static uint64_t threshold_for(uint64_t m, unsigned k, double target) {
  uint64_t lo = 0, hi = 1;
  double p = 0.0;
  for (;;) {
    (void)bk_params_fpp(m, k, hi, &p);
    if (p >= target || hi >= ((uint64_t)1 << 62)) break;
    lo = hi;
    hi *= 2;
  }
  while (lo + 1 < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    (void)bk_params_fpp(m, k, mid, &p);
    if (p >= target)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/* Could create have computed `threshold` for this m and k? It is the
 * smallest l with fpp(l) >= target for some target in (0, 1): exactly when
 * fpp(l - 1) < fpp(l) and fpp(l - 1) < 1, within the search's 2^62 cap. */
static bool threshold_reachable(uint64_t m, unsigned k, uint64_t threshold) {
  if (threshold == 0 || threshold > ((uint64_t)1 << 62)) return false;
  double below = 0.0, at = 0.0;
  (void)bk_params_fpp(m, k, threshold - 1, &below);
  (void)bk_params_fpp(m, k, threshold, &at);
  if (threshold == ((uint64_t)1 << 62)) return below < 1.0;
  return below < at && below < 1.0;
}

/* Inserts since the last recycle that a snapshot may not have counted yet:
 * an add sets its bits before it counts, and a snapshot takes no lock. */
#define RBF_IN_FLIGHT_SLACK 1024u

/* Do the filter's bits agree with `inserted`? Each counted insert sets at
 * most k bits; a filter full of bits with few inserts would never recycle
 * and would call every new id a duplicate. `bloom` is the bloom blob the
 * bloom loader has just accepted. */
static bool bits_counted(const unsigned char *bloom, unsigned k,
                         uint64_t inserted) {
  uint32_t header = bk__load_le32(bloom + 8);
  uint64_t words = bk__load_le64(bloom + 16) / 8, set = 0;
  for (uint64_t w = 0; w < words; w++)
    set +=
        (uint64_t)__builtin_popcountll(bk__load_le64(bloom + header + 8 * w));
  /* inserted < threshold <= 2^62: no overflow below. */
  return set / k <= inserted + RBF_IN_FLIGHT_SLACK;
}

bk_status bk_rbf_create(bk_rbf **out, const bk_rbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  double target = cfg->target_fpp == 0.0 ? fpp : cfg->target_fpp;
  BK_RETURN_IF(!(target > 0.0 && target < 1.0), BK_EINVAL);
  BK_RETURN_IF(cfg->m_bits && cfg->k == 0, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_bloom_config bc = {.capacity = cfg->capacity,
                        .fpp = fpp,
                        .m_bits = cfg->m_bits,
                        .k = cfg->k,
                        .layout = BK_BLOOM_STANDARD,
                        .hash_alg = cfg->hash_alg,
                        .seed = cfg->seed,
                        .allocator = cfg->allocator};
  bk_rbf *r = bk__calloc(&al, 1, sizeof *r);
  BK_RETURN_IF(!r, BK_ENOMEM);
  bk_status s = bk_bloom_create(&r->bloom, &bc);
  if (s != BK_OK) {
    bk__free(&al, r);
    return s;
  }
  bk_bloom_info info;
  (void)bk_bloom_info_get(r->bloom, &info);
  r->alloc = al;
  r->m = info.m_bits;
  r->k = info.k;
  r->threshold = threshold_for(r->m, r->k, target);
  *out = r;
  return BK_OK;
}

void bk_rbf_destroy(bk_rbf *r) {
  if (!r) return;
  bk__alloc al = r->alloc;
  bk_bloom_destroy(r->bloom);
  bk__free(&al, r);
}

bk_status bk_rbf_hash(const bk_rbf *r, const void *key, size_t len,
                      bk_hash *out) {
  BK_RETURN_IF(!r, BK_EINVAL);
  return bk_bloom_hash(r->bloom, key, len, out);
}

/* Count one insert; a count at or past the threshold recycles. One
 * inserter at a time recycles (the flag), and it keeps recycling while the
 * count is at or past the threshold: inserts go on during the clear, so the
 * count can pass the threshold before the subtraction (with an "== the
 * threshold" test, a passed threshold never recurred and the filter
 * stopped recycling: test_rbf's four-thread run under TSan, 12,069
 * inserts counted against a threshold of 1,901). An inserter that finds
 * the flag taken leaves its count to the holder, which looks again after
 * dropping the flag (seq_cst: the count it then reads includes every
 * increment made before a failed exchange). bk_bloom_clear uses atomic
 * word stores, so concurrent adds land before or after it; subtracting
 * (not storing 0) keeps the inserts counted while the clear ran. That holds
 * for the standard layout only, whose adds are atomic ORs: a blocked or
 * split-block add stores its whole block under the block's lock and would
 * write back bits a concurrent clear removed, so the RBF's filter stays
 * standard (bk_rbf_create, and the loader checks it). */
static void count_insert(bk_rbf *r) {
  uint64_t n = __atomic_add_fetch(&r->inserted, 1, __ATOMIC_SEQ_CST);
  while (n >= r->threshold) {
    if (__atomic_exchange_n(&r->recycling, 1, __ATOMIC_SEQ_CST)) return;
    while (__atomic_load_n(&r->inserted, __ATOMIC_RELAXED) >= r->threshold) {
      (void)bk_bloom_clear(r->bloom);
      __atomic_fetch_sub(&r->inserted, r->threshold, __ATOMIC_RELAXED);
      __atomic_fetch_add(&r->recycles, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&r->recycling, 0, __ATOMIC_SEQ_CST);
    n = __atomic_load_n(&r->inserted, __ATOMIC_SEQ_CST);
  }
}

bk_status bk_rbf_add_if_absent_hash(bk_rbf *r, bk_hash h, bool *added) {
  BK_RETURN_IF(!r || !added, BK_EINVAL);
  BK_TRY(bk_bloom_add_if_absent_hash(r->bloom, h, added));
  if (*added) count_insert(r);
  return BK_OK;
}

bk_status bk_rbf_add_hash(bk_rbf *r, bk_hash h) {
  bool added;
  return bk_rbf_add_if_absent_hash(r, h, &added);
}

bk_status bk_rbf_add_if_absent(bk_rbf *r, const void *key, size_t len,
                               bool *added) {
  bk_hash h;
  BK_RETURN_IF(!r || !added, BK_EINVAL);
  BK_TRY(bk_bloom_hash(r->bloom, key, len, &h));
  return bk_rbf_add_if_absent_hash(r, h, added);
}

bk_status bk_rbf_add(bk_rbf *r, const void *key, size_t len) {
  bool added;
  return bk_rbf_add_if_absent(r, key, len, &added);
}

bk_status bk_rbf_contains_hash(const bk_rbf *r, bk_hash h, bool *out) {
  BK_RETURN_IF(!r, BK_EINVAL);
  return bk_bloom_contains_hash(r->bloom, h, out);
}

bk_status bk_rbf_contains(const bk_rbf *r, const void *key, size_t len,
                          bool *out) {
  BK_RETURN_IF(!r, BK_EINVAL);
  return bk_bloom_contains(r->bloom, key, len, out);
}

bk_status bk_rbf_estimated_fpp(const bk_rbf *r, double *out) {
  BK_RETURN_IF(!r || !out, BK_EINVAL);
  return bk_params_fpp(r->m, r->k,
                       __atomic_load_n(&r->inserted, __ATOMIC_RELAXED), out);
}

bk_status bk_rbf_info_get(const bk_rbf *r, bk_rbf_info *out) {
  BK_RETURN_IF(!r || !out, BK_EINVAL);
  bk_bloom_info bi;
  BK_TRY(bk_bloom_info_get(r->bloom, &bi));
  out->m_bits = r->m;
  out->k = r->k;
  out->inserted = __atomic_load_n(&r->inserted, __ATOMIC_RELAXED);
  out->threshold = r->threshold;
  out->recycles = __atomic_load_n(&r->recycles, __ATOMIC_RELAXED);
  out->memory = sizeof *r + bi.memory;
  return BK_OK;
}

/* ---- serialized form ------------------------------------------------------
 * Parameters after the 24-byte prefix (header length 48):
 *   24 u64 inserted since the last recycle   32 u64 threshold
 *   40 u64 recycles
 * Payload: the bk_bloom's own serialized form (standard layout). */
#define RBF_VERSION 1
#define RBF_HEADER_LEN (BK__PREFIX_SIZE + 24u)

bk_status bk_rbf_serialized_size(const bk_rbf *r, size_t *out) {
  BK_RETURN_IF(!r || !out, BK_EINVAL);
  size_t bloom;
  BK_TRY(bk_bloom_serialized_size(r->bloom, &bloom));
  *out = RBF_HEADER_LEN + bloom + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_rbf_serialize(const bk_rbf *r, void *buf, size_t cap,
                           size_t *written) {
  size_t need, bloom_written;
  BK_RETURN_IF(!buf || !written, BK_EINVAL);
  BK_TRY(bk_rbf_serialized_size(r, &need));
  BK_RETURN_IF(cap < need, BK_EINVAL);
  unsigned char *p = buf;
  BK_TRY(bk_bloom_serialize(r->bloom, p + RBF_HEADER_LEN,
                            need - RBF_HEADER_LEN - BK__TRAILER_SIZE,
                            &bloom_written));
  bk__format_write_prefix(p, RBF_VERSION, BK__TYPE_RBF, RBF_HEADER_LEN,
                          bloom_written);
  /* Mid-recycle the count may stand at the threshold for a moment; saved
   * as threshold - 1, the restored filter recycles on its next insert. */
  uint64_t inserted = __atomic_load_n(&r->inserted, __ATOMIC_RELAXED);
  if (inserted >= r->threshold) inserted = r->threshold - 1;
  bk__store_le64(p + 24, inserted);
  bk__store_le64(p + 32, r->threshold);
  bk__store_le64(p + 40, __atomic_load_n(&r->recycles, __ATOMIC_RELAXED));
  bk__format_write_trailer(p, RBF_HEADER_LEN + bloom_written);
  *written = RBF_HEADER_LEN + bloom_written + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_rbf_deserialize(const void *buf, size_t len,
                             const bk_allocator *allocator, bk_rbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(
      bk__format_open(buf, len, BK__TYPE_RBF, RBF_VERSION, RBF_HEADER_LEN, &v));
  const unsigned char *p = buf;
  uint64_t inserted = bk__load_le64(p + 24);
  uint64_t threshold = bk__load_le64(p + 32);
  BK_RETURN_IF(threshold == 0 || threshold > ((uint64_t)1 << 62) ||
                   inserted >= threshold,
               BK_ECORRUPT);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_rbf *r = bk__calloc(&al, 1, sizeof *r);
  BK_RETURN_IF(!r, BK_ENOMEM);
  bk_status s = bk_bloom_deserialize(v.payload, (size_t)v.payload_len,
                                     allocator, &r->bloom);
  bk_bloom_info info;
  if (s == BK_OK) {
    (void)bk_bloom_info_get(r->bloom, &info);
    /* Only a threshold create could have computed for this m and k: a
     * larger one would let the filter fill up and answer yes to all. */
    if (info.layout != BK_BLOOM_STANDARD ||
        !threshold_reachable(info.m_bits, info.k, threshold) ||
        !bits_counted(v.payload, info.k, inserted))
      s = BK_ECORRUPT;
  }
  if (s != BK_OK) {
    bk_bloom_destroy(r->bloom);
    bk__free(&al, r);
    return s == BK_EVERSION ? BK_ECORRUPT : s;
  }
  r->alloc = al;
  r->m = info.m_bits;
  r->k = info.k;
  r->threshold = threshold;
  r->inserted = inserted;
  r->recycles = bk__load_le64(p + 40);
  *out = r;
  return BK_OK;
}
