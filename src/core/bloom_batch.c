/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom's batch calls (contains_many, contains_many_hash, add_many):
 * each hashes and prefetches a few keys ahead of the one it probes
 * (BATCH_LOOP, bloom_internal.h), so the cache misses of a batch overlap.
 * A split-block filter on the AVX2 path runs bloom_avx2.c's loops instead.
 */
#include "bloom_internal.h"

static bk_status check_batch(const bk_bloom *b, const void *const *keys,
                             const size_t *lens, size_t n) {
  BK_RETURN_IF(!b, BK_EINVAL);
  return bk__batch_keys_ok(b->hash_alg, keys, lens, n);
}

bk_status bk_bloom_contains_many(const bk_bloom *b, const void *const *keys,
                                 const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_batch(b, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
#ifdef BK_SPLIT_AVX2
  if (b->simd) { /* split-block only */
    bk__bloom_split_contains_many_avx2(b, keys, lens, n, out);
    return BK_OK;
  }
#endif
  BATCH_LOOP(b, keys, lens, n, 0, { out[i] = probe_contains(b, h); });
  return BK_OK;
}

bk_status bk_bloom_contains_many_hash(const bk_bloom *b, const bk_hash *hashes,
                                      size_t n, bool *out) {
  BK_RETURN_IF(!b || (n && (!hashes || !out)), BK_EINVAL);
  size_t lead = n < BATCH_AHEAD ? n : BATCH_AHEAD;
  for (size_t i = 0; i < lead; i++) prefetch_key(b, hashes[i], 0);
  for (size_t i = 0; i < n; i++) {
    if (i + BATCH_AHEAD < n) prefetch_key(b, hashes[i + BATCH_AHEAD], 0);
    out[i] = probe_contains(b, hashes[i]);
  }
  return BK_OK;
}

bk_status bk_bloom_add_many(bk_bloom *b, const void *const *keys,
                            const size_t *lens, size_t n) {
  BK_TRY(check_batch(b, keys, lens, n));
#ifdef BK_SPLIT_AVX2
  if (b->simd) {
    bk__bloom_split_add_many_avx2(b, keys, lens, n);
    return BK_OK;
  }
#endif
  BATCH_LOOP(b, keys, lens, n, 1, { (void)probe_add(b, h); });
  return BK_OK;
}
