/* SPDX-License-Identifier: MIT */
/*
 * bk_rbf: the Recyclable Bloom Filter baseline (fbf-thesis Sec. 6.4.4), a
 * bk_bloom plus an insert count. The recycle threshold is precomputed: the
 * smallest count l with (1 - (1 - 1/m)^{k l})^k >= target, so an insert
 * compares two integers instead of evaluating Eq. 4.1. The serialized form
 * is in rbf_io.c.
 */
#include "bloomkit/rbf.h"

#include "bloomkit/bloom_inline.h"
#include "bloomkit/params.h"
#include "core/internal.h"
#include "rbf_internal.h"

#define DEFAULT_FPP 0.01

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
