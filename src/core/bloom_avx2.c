/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom's split-block layout with AVX2 (CRoaring's habit: a SIMD variant
 * in a file of its own): the eight masks in one vector multiply, the block
 * in one 32-byte load and store, the single-key bodies and the batch loops
 * built on them. Compiled without -mavx2: each function carries
 * target("avx2"), and bloom.c picks this path at create where cpuid says
 * the CPU has AVX2 (bk__bloom_cpu_has_avx2), so the library still runs on
 * any x86-64. Same bits as the portable path (tests compare them bit for
 * bit); the layout itself is drawn at the top of bloom.c.
 */
#include "bloom_internal.h"

#ifdef BK_SPLIT_AVX2
#include <immintrin.h>

/* The eight masks at once: lane i = 1 << ((key * SALT[i]) >> 27). Lanes are
 * little-endian 32-bit words, the same order as the block's words. */
__attribute__((target("avx2"))) static inline __m256i split_mask_avx2(
    uint32_t key) {
  const __m256i salt = _mm256_setr_epi32(
      (int)0x47b6137bu, (int)0x44974d91u, (int)0x8824ad5bu, (int)0xa2b7289du,
      (int)0x705495c7u, (int)0x2df1424bu, (int)0x9efc4947u, (int)0x5c6bfb31u);
  __m256i x = _mm256_mullo_epi32(_mm256_set1_epi32((int)key), salt);
  x = _mm256_srli_epi32(x, 27);
  return _mm256_sllv_epi32(_mm256_set1_epi32(1), x);
}

/* The block in one 32-byte load, and a store of it by its one writer (a
 * single_writer filter's, or the holder of the block's lock), in assembly:
 * lookups run meanwhile, and a C access racing with the store would be
 * undefined;
 * the instruction reads and writes each aligned 64-bit word whole, and a
 * block's bits only get set while readers run, so any mix of its words'
 * old and new values is a state between two adds. TSan cannot see
 * assembly: its builds (BK__BLOOM_TSAN) use 64-bit atomics. bloom_inline.h's
 * inline path has the same two accesses (bk__split_load, bk__split_store),
 * written there for code built with -mavx2; this file is built without it
 * (AVX2 by target attributes, chosen at run time), so it cannot include
 * them. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
block_load_avx2(const uint64_t *blk) {
#ifndef BK__BLOOM_TSAN
  __m256i v;
  __asm__ __volatile__("vmovdqu {%1, %0|%0, %1}"
                       : "=x"(v)
                       : "m"(*(const __m256i *)(const void *)blk));
  return v;
#else
  return _mm256_set_epi64x(
      (long long)__atomic_load_n(&blk[3], __ATOMIC_RELAXED),
      (long long)__atomic_load_n(&blk[2], __ATOMIC_RELAXED),
      (long long)__atomic_load_n(&blk[1], __ATOMIC_RELAXED),
      (long long)__atomic_load_n(&blk[0], __ATOMIC_RELAXED));
#endif
}

__attribute__((target("avx2"), always_inline)) static inline void
block_store_avx2(uint64_t *blk, __m256i v) {
#ifndef BK__BLOOM_TSAN
  __asm__ __volatile__("vmovdqu {%1, %0|%0, %1}"
                       : "=m"(*(__m256i *)(void *)blk)
                       : "x"(v));
#else
  uint64_t w[SPLIT_WORDS64];
  _mm256_storeu_si256((__m256i *)(void *)w, v);
  for (unsigned j = 0; j < SPLIT_WORDS64; j++)
    __atomic_store_n(&blk[j], w[j], __ATOMIC_RELAXED);
#endif
}

/* testc: all mask bits set in the block (one 32-byte load, above). */
__attribute__((target("avx2"), always_inline)) static inline bool
split_test_avx2_inline(const uint64_t *blk, uint32_t key) {
  __m256i mask = split_mask_avx2(key);
  return _mm256_testc_si256(block_load_avx2(blk), mask) != 0;
}

__attribute__((target("avx2"), noinline)) bool bk__bloom_split_test_avx2(
    const uint64_t *blk, uint32_t key) {
  return split_test_avx2_inline(blk, key);
}

__attribute__((target("avx2"), always_inline)) static inline void
split_masks_avx2_inline(uint32_t key, uint64_t mask[SPLIT_WORDS64]) {
  _mm256_storeu_si256((__m256i *)(void *)mask, split_mask_avx2(key));
}

__attribute__((target("avx2"), noinline)) void bk__bloom_split_masks_avx2(
    uint32_t key, uint64_t mask[SPLIT_WORDS64]) {
  split_masks_avx2_inline(key, mask);
}

bool bk__bloom_cpu_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}

/* The AVX2 probes of the single-key paths (the portable bodies use
 * split_contains, split_add and split_add_sw of bloom_internal.h, whose AVX2
 * branch a filter on the portable path never takes). */
__attribute__((target("avx2"), always_inline)) static inline bool
split_contains_avx2(const bk_bloom *b, bk_hash h) {
  return split_test_avx2_inline(split_block_of(b, h.lo), (uint32_t)h.lo);
}

/* block_set with the vector masks and the block in one load and store. */
__attribute__((target("avx2"), always_inline)) static inline bool
split_add_avx2(bk_bloom *b, bk_hash h) {
  uint64_t *blk = split_block_of(b, h.lo);
  __m256i mask = split_mask_avx2((uint32_t)h.lo);
  if (_mm256_testc_si256(block_load_avx2(blk), mask)) return false;
  uint32_t *lock = block_lock_of(b, blk);
  bk__spin_lock(lock);
  __m256i v = block_load_avx2(blk);
  block_store_avx2(blk, _mm256_or_si256(v, mask));
  bk__spin_unlock(lock);
  return !_mm256_testc_si256(v, mask); /* a bit was clear */
}

__attribute__((target("avx2"), always_inline)) static inline bool
split_add_sw_avx2(bk_bloom *b, bk_hash h) {
  uint64_t *blk = split_block_of(b, h.lo);
  __m256i mask = split_mask_avx2((uint32_t)h.lo), v = block_load_avx2(blk);
  block_store_avx2(blk, _mm256_or_si256(v, mask));
  return !_mm256_testc_si256(v, mask); /* a bit was clear */
}

#define AVX2_ATTR __attribute__((target("avx2")))
KEY_BODIES(split_x3_avx2, digest_xxh3, split_contains_avx2, split_add_avx2,
           split_add_sw_avx2, AVX2_ATTR)
KEY_BODIES(split_x64_avx2, digest_xxh64, split_contains_avx2, split_add_avx2,
           split_add_sw_avx2, AVX2_ATTR)

/* The bodies above for the filter's digest (select_paths in bloom.c). */
bool bk__bloom_avx2_paths(bk_hash_alg alg, bk__bloom_paths *out) {
  if (alg == BK_HASH_XXH3) {
    *out = KEY_PATHS(split_x3_avx2);
    return true;
  }
  if (alg == BK_HASH_XXH64) {
    *out = KEY_PATHS(split_x64_avx2);
    return true;
  }
  return false;
}

/* The batch loops of a split-block filter on the AVX2 path, each one AVX2
 * function with the probe inlined (the generic loops call the AVX2 probe
 * once per key, which cost a batch more than the single-key calls). */
__attribute__((target("avx2"))) void bk__bloom_split_contains_many_avx2(
    const bk_bloom *b, const void *const *keys, const size_t *lens, size_t n,
    bool *out) {
  BATCH_LOOP(b, keys, lens, n, 0, { out[i] = split_contains_avx2(b, h); });
}

__attribute__((target("avx2"))) void bk__bloom_split_add_many_avx2(
    bk_bloom *b, const void *const *keys, const size_t *lens, size_t n) {
  if (b->single_writer)
    BATCH_LOOP(b, keys, lens, n, 1, { (void)split_add_sw_avx2(b, h); });
  else
    BATCH_LOOP(b, keys, lens, n, 1, { (void)split_add_avx2(b, h); });
}
#else
bool bk__bloom_cpu_has_avx2(void) {
  return false;
}
#endif
