/* SPDX-License-Identifier: MIT */
/*
 * Private: the one home of the library's hot-path hashing. The digest of a
 * key (bk__hash; XXH3, the default, inlined for keys of up to 16 bytes
 * through xxHash's documented header-only mode, from Debian's
 * libxxhash-dev, as in hash.c, so a hot path hashes a short key with no
 * call through the PLT), the algorithm and batch checks every structure
 * makes, and the digest -> k positions step (bk__probe_start /
 * bk__probe_next, and bk__indices over them). The step, bk__mix64 and the
 * standard and blocked probes are defined once, in the first part of the
 * installed bloomkit/bloom_inline.h, because that header's inline path
 * needs them and cannot include this one; here they are included without
 * the inline path's macros. The known-answer tests (tests/test_hash.c) pin
 * the digests and the positions.
 */
#ifndef BLOOMKIT_SRC_CORE_HASH_FAST_H
#define BLOOMKIT_SRC_CORE_HASH_FAST_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/hash.h"
#define BK__BLOOM_INTERNALS_ONLY 1
#include "bloomkit/bloom_inline.h"
#undef BK__BLOOM_INTERNALS_ONLY
#include "internal.h"

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

/* The k positions of bk__probe_next (bloom_inline.h) in [0, range), all at
 * once: bk_hash_indices and the structures that want them in an array. */
static inline void bk__indices(bk_hash h, unsigned k, uint64_t range,
                               uint64_t *out) {
  bk__probe_seq p = bk__probe_start(h);
  for (unsigned i = 0; i < k; i++) out[i] = bk__probe_next(&p, i, range);
}

/* XXH3-128 of len <= 16 bytes; 8 bytes tested first, so the commonest key
 * length hashes with a constant length. */
static inline __attribute__((always_inline)) bk_hash bk__xxh3_short(
    uint64_t seed, const void *key, size_t len) {
  XXH128_hash_t x =
      len == 8
          ? XXH3_len_0to16_128b((const xxh_u8 *)key, 8, XXH3_kSecret, seed)
          : XXH3_len_0to16_128b((const xxh_u8 *)key, len, XXH3_kSecret, seed);
  return (bk_hash){x.low64, x.high64};
}

/* bk__hash, with XXH3 on keys of up to 16 bytes inline. */
static inline __attribute__((always_inline)) bk_hash bk__hash_fast(
    bk_hash_alg alg, uint64_t seed, const void *key, size_t len) {
  if (BK_LIKELY((alg == BK_HASH_XXH3 || alg == BK_HASH_DEFAULT) && len <= 16))
    return bk__xxh3_short(seed, key, len);
  return bk__hash(alg, seed, key, len);
}

/* A key's digest under the argument rules every structure's key calls
 * share: a NULL key only with length 0, a Murmur3 key of at most 2^31 - 1
 * bytes (BK_EINVAL otherwise). */
static inline __attribute__((always_inline)) bk_status bk__hash_key(
    bk_hash_alg alg, uint64_t seed, const void *key, size_t len, bk_hash *out) {
  if ((!key && len) || (alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX))
    return BK_EINVAL;
  *out = bk__hash_fast(alg, seed, key, len);
  return BK_OK;
}

#endif
