/* SPDX-License-Identifier: MIT */
/*
 * Hashing shared by every bloomkit structure. A key (a byte string) is hashed
 * once into a 128-bit bk_hash with XXH3-128 (default) or MurmurHash3 x64_128,
 * both seeded; a structure then derives its k indices from that one digest by
 * enhanced double hashing (Dillinger & Manolios, "Bloom Filters in
 * Probabilistic Verification", 2004) and Lemire's multiply-shift range
 * reduction, so no modulo is ever taken on the hot path.
 *
 * The derivation is part of every serialized filter: the known-answer tests
 * pin it, and it must never change for a given format version.
 *
 * Thread safety: every function here is pure and safe from any thread.
 */
#ifndef BLOOMKIT_HASH_H
#define BLOOMKIT_HASH_H

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Hash algorithms. 0 means "default" (XXH3) in every config. */
typedef enum bk_hash_alg {
  BK_HASH_DEFAULT = 0,
  BK_HASH_XXH3 = 1,    /**< XXH3_128bits_withSeed (xxHash >= 0.8) */
  BK_HASH_MURMUR3 = 2, /**< MurmurHash3_x64_128, 32-bit seed */
  /**
   * XXH64 (64-bit digest, 64-bit seed): the hash of Apache Parquet's split
   * block Bloom filters (seed 0). The digest is {lo = XXH64, hi =
   * mix64(lo)}, so a layout that wants a second half still gets one. Only
   * bk_bloom accepts it (the other structures refuse it with BK_EINVAL).
   */
  BK_HASH_XXH64 = 3,
} bk_hash_alg;

/** A 128-bit digest: `lo` and `hi` are the low and high 64-bit halves. */
typedef struct bk_hash {
  uint64_t lo;
  uint64_t hi;
} bk_hash;

/**
 * Hash `len` bytes at `key` (NULL allowed only when len == 0), with any of
 * the algorithms above. For BK_HASH_MURMUR3 the seed must fit in 32 bits; for
 * XXH3 all 64 bits count. Errors: BK_EINVAL for a NULL out, NULL key with len >
 * 0, an unknown algorithm, a Murmur seed above UINT32_MAX, or len > INT32_MAX
 * for Murmur.
 */
BK_API bk_status bk_hash_bytes(bk_hash_alg alg, uint64_t seed, const void *key,
                               size_t len, bk_hash *out);

/**
 * Hash a 64-bit integer: exactly bk_hash_bytes() of its 8 little-endian bytes,
 * so an integer key and its byte form land on the same bits.
 * Errors as bk_hash_bytes().
 */
BK_API bk_status bk_hash_u64(bk_hash_alg alg, uint64_t seed, uint64_t value,
                             bk_hash *out);

#if defined(__SIZEOF_INT128__)
/** Map a 64-bit word uniformly onto [0, range) without a modulo (Lemire). */
static inline uint64_t bk_reduce(uint64_t word, uint64_t range) {
  __extension__ typedef unsigned __int128 u128;
  return (uint64_t)(((u128)word * range) >> 64);
}
#else
#error "bloomkit needs a compiler with 128-bit integers (gcc or clang)"
#endif

/**
 * Derive `k` indices in [0, range) from one digest by enhanced double hashing:
 *   a = h.lo, b = mix64(h.hi);
 *   for i in 0..k-1: out[i] = reduce(a, range); a += b; b += i + 1
 * where mix64 is splitmix64's finaliser
 *   x ^= x >> 30; x *= 0xBF58476D1CE4E5B9; x ^= x >> 27;
 *   x *= 0x94D049BB133111EB; x ^= x >> 31
 * (the triangular-number step of Dillinger & Manolios; the step is mixed so
 * that digests whose halves are related, as MurmurHash3's are for short keys
 * whose length equals the seed, still give independent probes).
 * Errors: BK_EINVAL for a NULL out, k == 0 or range == 0.
 */
BK_API bk_status bk_hash_indices(bk_hash h, unsigned k, uint64_t range,
                                 uint64_t *out);

/**
 * Name of an algorithm ("xxh3", "murmur3", "xxh64"), or NULL for an unknown
 * value.
 */
BK_API const char *bk_hash_alg_name(bk_hash_alg alg);

#ifdef __cplusplus
}
#endif

#endif
