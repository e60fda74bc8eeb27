/* SPDX-License-Identifier: MIT */
/*
 * Private hot-path hashing helpers shared by the structures: the digest call
 * and the index derivations, inlined so a probe costs no extra call.
 */
#ifndef BLOOMKIT_SRC_CORE_HASH_INLINE_H
#define BLOOMKIT_SRC_CORE_HASH_INLINE_H

#include "bloomkit/hash.h"

/* Unchecked digest: alg must be valid (DEFAULT means XXH3). */
BK_API bk_hash bk__hash(bk_hash_alg alg, uint64_t seed, const void *key,
                        size_t len);

/* The algorithms every structure accepts: XXH3 and Murmur3 (XXH64 is for
 * bk_bloom only, whose format records it; see bk__hash_alg_valid_any). */
static inline bool bk__hash_alg_valid(bk_hash_alg alg, uint64_t seed) {
  switch (alg) {
    case BK_HASH_DEFAULT:
    case BK_HASH_XXH3:
      return true;
    case BK_HASH_MURMUR3:
      return seed <= UINT32_MAX;
    case BK_HASH_XXH64:
      return false;
  }
  return false;
}

/* Every algorithm bk__hash computes: bk_hash_bytes and bk_bloom. */
static inline bool bk__hash_alg_valid_any(bk_hash_alg alg, uint64_t seed) {
  return alg == BK_HASH_XXH64 || bk__hash_alg_valid(alg, seed);
}

/* A batch's keys as every structure's batch calls check them before using
 * any: arrays present (n > 0), no NULL key with a length, no Murmur3 key
 * over 2^31 - 1 bytes. */
static inline bk_status bk__batch_keys_ok(bk_hash_alg alg,
                                          const void *const *keys,
                                          const size_t *lens, size_t n) {
  if (!n) return BK_OK;
  if (!keys || !lens) return BK_EINVAL;
  for (size_t i = 0; i < n; i++)
    if ((!keys[i] && lens[i]) ||
        (alg == BK_HASH_MURMUR3 && lens[i] > (size_t)INT32_MAX))
      return BK_EINVAL;
  return BK_OK;
}

/* bk__mix64, splitmix64's finaliser, is in bloomkit/hash.h. */

/*
 * Enhanced double hashing (Dillinger & Manolios 2004), range-reduced:
 *   a = lo, b = mix64(hi); out[i] = reduce(a, range); a += b; b += i + 1.
 * The step is mixed because a digest's halves need not be independent:
 * MurmurHash3 x64_128 of a key of at most 8 bytes with seed == length gives
 * lo = 2F, hi = 3F for one F, and with b = hi two keys whose first index
 * collides would collide on all k (measured: 10x the formula's fpp).
 * Pinned by the known-answer tests: changing it invalidates saved filters.
 */
static inline void bk__indices(bk_hash h, unsigned k, uint64_t range,
                               uint64_t *out) {
  uint64_t a = h.lo, b = bk__mix64(h.hi);
  for (unsigned i = 0; i < k; i++) {
    out[i] = bk_reduce(a, range);
    a += b;
    b += i + 1;
  }
}

#endif
