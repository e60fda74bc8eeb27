/* SPDX-License-Identifier: MIT */
/*
 * Private: the digest of a key with XXH3, the default, inlined for keys of
 * up to 16 bytes (xxHash's documented header-only mode, from Debian's
 * libxxhash-dev, as in hash.c), so a hot path hashes a short key with no
 * call through the PLT; every other algorithm and length goes to bk__hash.
 * The same digest as bk__hash (the known-answer tests pin both).
 */
#ifndef BLOOMKIT_SRC_CORE_HASH_FAST_H
#define BLOOMKIT_SRC_CORE_HASH_FAST_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hash_inline.h"
#include "internal.h"

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

#endif
