/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom's inline path, an opt-in (as xxHash's XXH_INLINE_ALL): include
 * this header instead of (or after) bloomkit/bloom.h and, for an 8-byte key
 * of a filter hashed by XXH3 (the default) or XXH64 (Parquet's),
 * bk_bloom_contains (every layout) and bk_bloom_add (a single_writer
 * split-block filter) hash and probe in the caller, with no call into the
 * library: the same bits and answers as the library's own path, which
 * probes with the same functions (tests compare them key by key). Any other
 * call goes to the library. On a filter in the cache a lookup then takes a
 * few nanoseconds instead of a call, an indirect jump and the library's own
 * argument checks (bloomkit's benchmark rows bloom/... are built with it).
 *
 * What it costs:
 *  - ABI. The inline code reads bk__bloom_head, the first member of every
 *    bk_bloom, from the caller's binary: its layout (and the meaning of
 *    hash_k and the inline kinds) is part of the library's ABI, and
 *    changing it needs a soname bump (docs/design/build.md, section 7). Code
 *    built without this header depends on none of it.
 *  - Names. bk_bloom_contains and bk_bloom_add become function-like
 *    macros: they cannot be redeclared after this header, and an argument
 *    with a bare comma (a compound literal such as (uint64_t[]){1, 2})
 *    needs parentheses. The library's functions stay exported under their
 *    names: (bk_bloom_contains)(...) or a function pointer reaches them.
 *  - Build. C99 or later, or C++; GCC or Clang; a little-endian target.
 *    Elsewhere this header declares nothing more than bloom.h.
 *
 * Turning it on and off: include this header to turn it on; leave it out
 * (bloom.h alone) and every call goes to the library. Defining
 * BK_BLOOM_NO_INLINE before including it turns the macros off again (for a
 * file that includes it through another header). Split-block filters are
 * inline on x86 only in code built for AVX2 (__AVX2__: -mavx2,
 * -march=native), where the eight masks take one vector multiply: built
 * without it, inline code would compute them with eight scalar multiplies,
 * slower than the library's own call, which uses AVX2 where the CPU has it
 * (chosen at run time); elsewhere (ARM, ...) the scalar form.
 * BK_BLOOM_INLINE_SCALAR forces the scalar form (the tests use it to cover
 * it on x86). Standard and blocked filters are inline in every build.
 *
 * Internals. Everything here named bk__ / BK__ is this header's and the
 * library's, not API. The first part (bk__mix64, the digest -> k positions
 * step bk__probe_*, bk__bloom_head, the standard and blocked probes) is
 * also the library's own: src/core/hash_fast.h includes it with
 * BK__BLOOM_INTERNALS_ONLY, so every structure derives its positions with
 * this one definition, which the saved formats pin (tests/test_hash.c's
 * known answers). The second part is the inline path itself.
 */
#ifndef BLOOMKIT_BLOOM_INLINE_INTERNALS_H
#define BLOOMKIT_BLOOM_INLINE_INTERNALS_H

#include "bloomkit/bloom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- part 1: shared with the library ---------------------------------- */

/* splitmix64's finaliser: a bijection of 64-bit words with full avalanche.
 * The step mixer of the positions below, the blocked layouts' position
 * source and the XXH64 digest's high half. */
static inline uint64_t bk__mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/*
 * The digest -> k positions step of every standard layout (bk_bloom,
 * bk_cbf, the FBF's lanes, bk_hash_indices): enhanced double hashing
 * (Dillinger & Manolios 2004) over (h.lo, mix64(h.hi)), each value
 * range-reduced by multiply-shift (bk_reduce):
 *
 *   a = h.lo, s = mix64(h.hi)
 *   position i = reduce(a, range); then a += s, s += i + 1   (mod 2^64)
 *
 * The step is mixed because a digest's halves need not be independent:
 * MurmurHash3 x64_128 of a key of at most 8 bytes with seed == length gives
 * lo = 2F, hi = 3F for one F, and with s = hi two keys whose first position
 * collides would collide on all k (measured: 10x the formula's fpp).
 * Positions come in order i = 0, 1, ...: a caller may stop early (a lookup
 * at its first clear bit). Saved filters pin it: it must never change.
 */
typedef struct bk__probe_seq {
  uint64_t a; /* the next position, before reduction */
  uint64_t s; /* the step */
} bk__probe_seq;

static inline bk__probe_seq bk__probe_start(bk_hash h) {
  bk__probe_seq p;
  p.a = h.lo;
  p.s = bk__mix64(h.hi);
  return p;
}

/* Position i of the sequence in [0, range); i is the count of positions
 * taken before this one. */
static inline uint64_t bk__probe_next(bk__probe_seq *p, unsigned i,
                                      uint64_t range) {
  uint64_t pos = bk_reduce(p->a, range);
  p->a += p->s;
  p->s += (uint64_t)i + 1;
  return pos;
}

/* The head of every bk_bloom (its first member; bloom.c asserts it), what
 * the inline path reads. ABI once this header is used: see above. */
typedef struct bk__bloom_head {
  uint64_t *words;      /* the bits */
  uint64_t n_blocks;    /* blocked (512-bit) and split-block (256-bit) */
  uint64_t m_bits;      /* m */
  uint64_t hash_k;      /* the seed's part of the digest, see bk__digest8 */
  uint32_t k;           /* bits a key sets */
  uint32_t inline_find; /* BK__INLINE_KIND of lookups, 0: the library's */
  uint32_t inline_add;  /* BK__INLINE_KIND of adds (split-block single
                           writer), 0: the library's */
} bk__bloom_head;

/* ThreadSanitizer builds (GCC's macro, Clang's feature test): the 32-byte
 * accesses written in assembly, which TSan cannot see, become 64-bit
 * atomics there (here and in src/core/bloom_avx2.c). */
#if defined(__SANITIZE_THREAD__)
#define BK__BLOOM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BK__BLOOM_TSAN 1
#endif
#endif

/* The inline digests, and a kind: one number for (layout, digest), so an
 * inline call tests its filter's configuration with one load and one
 * compare (0: no inline path). */
#define BK__INLINE_NONE 0u
#define BK__INLINE_XXH3 1u
#define BK__INLINE_XXH64 2u
#define BK__INLINE_KIND(layout, digest) (((uint32_t)(layout) << 2) | (digest))

/* ---- probes shared by the library and the inline path ------------------- */
#if (defined(__cplusplus) ||                                        \
     (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)) && \
    (defined(__GNUC__) || defined(__clang__))
#define BK__BLOOM_PROBES 1

/* Standard layout: the k positions of bk__probe_next in m. The first two
 * probes are tested without a branch (at the design fill each is set with
 * probability ~1/2, so a branch on the first would mispredict half the
 * time), then the first clear bit ends it. */
static inline bool bk__bloom_std_test(const uint64_t *words, uint64_t m,
                                      unsigned k, bk_hash h) {
  bk__probe_seq p = bk__probe_start(h);
  uint64_t i0 = bk__probe_next(&p, 0, m);
  uint64_t all =
      __atomic_load_n(&words[i0 >> 6], __ATOMIC_RELAXED) >> (i0 & 63);
  if (k > 1) {
    uint64_t i1 = bk__probe_next(&p, 1, m);
    all &= __atomic_load_n(&words[i1 >> 6], __ATOMIC_RELAXED) >> (i1 & 63);
  }
  if (!(all & 1)) return false;
  for (unsigned i = 2; i < k; i++) {
    uint64_t idx = bk__probe_next(&p, i, m);
    if (!((__atomic_load_n(&words[idx >> 6], __ATOMIC_RELAXED) >> (idx & 63)) &
          1))
      return false;
  }
  return true;
}

/* Blocked layout: the k positions (9 bits each) inside the key's 512-bit
 * block, cut low bits first from groups of seven: x_0 = mix64(hi),
 * x_{g+1} = mix64(x_g + golden). The statement after k runs with `pos`
 * for each; hi and k are evaluated before the macro's own names (bk__*)
 * exist. */
#define BK__BLOCK_POSITIONS(hi, k, ...)                                 \
  do {                                                                  \
    uint64_t bk__grp = bk__mix64(hi);                                   \
    for (unsigned bk__left = (k);;) {                                   \
      uint64_t bk__cur = bk__grp;                                       \
      unsigned bk__n = bk__left < 7 ? bk__left : 7;                     \
      for (unsigned bk__j = 0; bk__j < bk__n; bk__j++, bk__cur >>= 9) { \
        unsigned pos = (unsigned)bk__cur & 511u;                        \
        __VA_ARGS__;                                                    \
      }                                                                 \
      bk__left -= bk__n;                                                \
      if (!bk__left) break;                                             \
      bk__grp = bk__mix64(bk__grp + 0x9E3779B97F4A7C15ull);             \
    }                                                                   \
  } while (0)

static inline bool bk__bloom_blk_test(const uint64_t *blk, unsigned k,
                                      uint64_t hi) {
  uint64_t all = 1;
  BK__BLOCK_POSITIONS(hi, k, {
    all &= __atomic_load_n(&blk[pos >> 6], __ATOMIC_RELAXED) >> (pos & 63);
  });
  return all & 1;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* BLOOMKIT_BLOOM_INLINE_INTERNALS_H */

/* ---- part 2: the inline path ------------------------------------------- */
#if !defined(BK__BLOOM_INTERNALS_ONLY) && !defined(BLOOMKIT_BLOOM_INLINE_H)
#define BLOOMKIT_BLOOM_INLINE_H

#if defined(BK__BLOOM_PROBES) && !defined(BK_BLOOM_NO_INLINE) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BK_BLOOM_INLINE 1
#if defined(__AVX2__) || defined(BK_BLOOM_INLINE_SCALAR) || \
    !(defined(__x86_64__) || defined(__i386__))
#define BK__BLOOM_INLINE_SPLIT 1
#endif
#if defined(__AVX2__) && defined(BK__BLOOM_INLINE_SPLIT)
#include <immintrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

static inline uint64_t bk__rotl64(uint64_t x, unsigned r) {
  return (x << r) | (x >> (64u - r));
}

/* The library's digest of an 8-byte little-endian key x: XXH3-128 (its
 * 4-to-8-byte path at length 8) or, for XXH64, lo = XXH64 and hi =
 * mix64(lo). hash_k is what the seed contributes, computed once at create
 * (bloom.c's select_paths): XXH3, 0xC4F023344DC994AC (the default secret's
 * words at bytes 16 and 24, exclusive-ored) + (seed ^ (bswap32(seed) <<
 * 32)); XXH64, seed + PRIME64_5 + 8. The other constants are the
 * specifications'. (A probe that uses only lo lets the compiler drop hi.) */
/* XXH3's low half; *hi gets the high half before its last steps. */
static inline uint64_t bk__xxh3_8_lo(uint64_t x, uint64_t hash_k,
                                     uint64_t *hi_out) {
  __extension__ typedef unsigned __int128 u128;
  u128 m = (u128)(x ^ hash_k) * UINT64_C(0x9E3779B185EBCAA7);
  uint64_t lo = (uint64_t)m, hi = (uint64_t)(m >> 64);
  hi += lo << 1;
  lo ^= hi >> 3;
  lo ^= lo >> 35;
  lo *= UINT64_C(0x9FB21C651E98DF25);
  *hi_out = hi;
  return lo ^ (lo >> 28);
}

static inline bk_hash bk__digest8(uint64_t x, uint64_t hash_k, uint32_t alg) {
  bk_hash d;
  if (alg == BK__INLINE_XXH3) {
    uint64_t hi;
    d.lo = bk__xxh3_8_lo(x, hash_k, &hi);
    hi ^= hi >> 37;
    hi *= UINT64_C(0x165667919E3779F9);
    d.hi = hi ^ (hi >> 32);
    return d;
  }
  uint64_t h = hash_k ^ (bk__rotl64(x * UINT64_C(0xC2B2AE3D27D4EB4F), 31) *
                         UINT64_C(0x9E3779B185EBCA87));
  h = bk__rotl64(h, 27) * UINT64_C(0x9E3779B185EBCA87) +
      UINT64_C(0x85EBCA77C2B2AE63);
  h ^= h >> 33;
  h *= UINT64_C(0xC2B2AE3D27D4EB4F);
  h ^= h >> 29;
  h *= UINT64_C(0x165667B19E3779F9);
  d.lo = h ^ (h >> 32);
  d.hi = bk__mix64(d.lo);
  return d;
}

/* The low half alone (split-block uses no other): XXH3's without the
 * high half's last steps. */
static inline __attribute__((always_inline)) uint64_t bk__digest8_lo(
    uint64_t x, uint64_t hash_k, uint32_t alg) {
  uint64_t hi;
  if (alg == BK__INLINE_XXH3) return bk__xxh3_8_lo(x, hash_k, &hi);
  return bk__digest8(x, hash_k, alg).lo;
}

#ifdef BK__BLOOM_INLINE_SPLIT
/* The block of digest d and its four 64-bit masks (Parquet's salts; word 2j
 * of the block in the low half of mask j, 2j + 1 in the high half). */
static inline uint64_t *bk__split_block(const bk__bloom_head *h, uint64_t d) {
  return h->words + ((d >> 32) * h->n_blocks >> 32) * 4;
}

static inline void bk__split_masks(uint32_t key, uint64_t mask[4]) {
  static const uint32_t salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu,
                                   0xa2b7289du, 0x705495c7u, 0x2df1424bu,
                                   0x9efc4947u, 0x5c6bfb31u};
  for (unsigned j = 0; j < 4; j++)
    mask[j] = ((uint64_t)1 << ((key * salt[2 * j]) >> 27)) |
              ((uint64_t)1 << (((key * salt[2 * j + 1]) >> 27) + 32));
}

#if defined(__AVX2__) && !defined(BK_BLOOM_INLINE_SCALAR)

/* The eight masks in one vector multiply. */
static inline __m256i bk__split_mask_v(uint32_t key) {
  const __m256i salt = _mm256_setr_epi32(
      (int)0x47b6137bu, (int)0x44974d91u, (int)0x8824ad5bu, (int)0xa2b7289du,
      (int)0x705495c7u, (int)0x2df1424bu, (int)0x9efc4947u, (int)0x5c6bfb31u);
  __m256i x = _mm256_mullo_epi32(_mm256_set1_epi32((int)key), salt);
  return _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(x, 27));
}

/* The block in one 32-byte load, and a single writer's store of it. In
 * assembly: other threads store the block's words meanwhile (the library's
 * adds), and a C access racing with them would be undefined;
 * the instruction reads and writes each aligned 64-bit word whole, and a
 * block's bits are only ever set while readers run, so any mix of its
 * words' old and new values is a state some order of the adds passes
 * through. Under TSan, which cannot see assembly, 64-bit atomics. */
static inline __m256i bk__split_load(const uint64_t *blk) {
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

static inline void bk__split_store(uint64_t *blk, __m256i v) {
#ifndef BK__BLOOM_TSAN
  __asm__ __volatile__("vmovdqu {%1, %0|%0, %1}"
                       : "=m"(*(__m256i *)(void *)blk)
                       : "x"(v));
#else
  uint64_t w[4];
  _mm256_storeu_si256((__m256i *)(void *)w, v);
  for (unsigned j = 0; j < 4; j++)
    __atomic_store_n(&blk[j], w[j], __ATOMIC_RELAXED);
#endif
}

static inline bool bk__split_test(const uint64_t *blk, uint32_t key) {
  return _mm256_testc_si256(bk__split_load(blk), bk__split_mask_v(key)) != 0;
}

static inline void bk__split_set_sw(uint64_t *blk, uint32_t key) {
  bk__split_store(blk,
                  _mm256_or_si256(bk__split_load(blk), bk__split_mask_v(key)));
}
#else
static inline bool bk__split_test(const uint64_t *blk, uint32_t key) {
  uint64_t mask[4], missing = 0;
  bk__split_masks(key, mask);
  for (unsigned j = 0; j < 4; j++)
    missing |= mask[j] & ~__atomic_load_n(&blk[j], __ATOMIC_RELAXED);
  return missing == 0;
}

/* single_writer: a relaxed load and store per word (no locked
 * instruction), as the library's own single-writer path. */
static inline void bk__split_set_sw(uint64_t *blk, uint32_t key) {
  uint64_t mask[4];
  bk__split_masks(key, mask);
  for (unsigned j = 0; j < 4; j++)
    __atomic_store_n(&blk[j],
                     __atomic_load_n(&blk[j], __ATOMIC_RELAXED) | mask[j],
                     __ATOMIC_RELAXED);
}
#endif

#endif

/* Standard and blocked lookups: one digest, a branch on the layout. Out of
 * line (a local call, no PLT), so that the function below stays small
 * enough for compilers to inline into any loop: with both probes in it,
 * g++ kept it, or the caller's lambda around it, out of line, and a
 * split-block lookup took a call and a stack frame (1.9-2.3x fastfilter's
 * time instead of 1.4x). */
static __attribute__((noinline, unused)) bool bk__bloom_find8_sb(
    const bk__bloom_head *h, uint64_t x, uint32_t kind) {
  bk_hash d = (kind & 3u) == BK__INLINE_XXH3
                  ? bk__digest8(x, h->hash_k, BK__INLINE_XXH3)
                  : bk__digest8(x, h->hash_k, BK__INLINE_XXH64);
  if ((kind >> 2) == BK_BLOOM_BLOCKED)
    return bk__bloom_blk_test(h->words + bk_reduce(d.lo, h->n_blocks) * 8, h->k,
                              d.hi);
  return bk__bloom_std_test(h->words, h->m_bits, h->k, d);
}

/* The argument checks are one branch (bitwise, not short-circuit), then
 * one compare on the kind: split-block with XXH3 first (the fastest
 * layout, the default digest), inline; standard and blocked through the
 * function above. A kind this build has no inline code for (split-block on
 * x86 without AVX2) goes to the library without hashing. */
static inline bk_status bk__bloom_contains_inline(const bk_bloom *b,
                                                  const void *key, size_t len,
                                                  bool *out) {
  const bk__bloom_head *h = (const bk__bloom_head *)(const void *)b;
  if (__builtin_expect((b != NULL) & (out != NULL) & (key != NULL) & (len == 8),
                       1)) {
    const uint32_t kind = h->inline_find;
    uint64_t x;
    __builtin_memcpy(&x, key, 8);
#ifdef BK__BLOOM_INLINE_SPLIT
    if (__builtin_expect(
            kind == BK__INLINE_KIND(BK_BLOOM_SPLIT_BLOCK, BK__INLINE_XXH3),
            1)) {
      uint64_t d = bk__digest8_lo(x, h->hash_k, BK__INLINE_XXH3);
      *out = bk__split_test(bk__split_block(h, d), (uint32_t)d);
      return BK_OK;
    }
    if (kind == BK__INLINE_KIND(BK_BLOOM_SPLIT_BLOCK, BK__INLINE_XXH64)) {
      uint64_t d = bk__digest8_lo(x, h->hash_k, BK__INLINE_XXH64);
      *out = bk__split_test(bk__split_block(h, d), (uint32_t)d);
      return BK_OK;
    }
#endif
    if (__builtin_expect(
            (kind != BK__INLINE_NONE) & ((kind >> 2) != BK_BLOOM_SPLIT_BLOCK),
            1)) {
      *out = bk__bloom_find8_sb(h, x, kind);
      return BK_OK;
    }
  }
  return (bk_bloom_contains)(b, key, len, out);
}

#define bk_bloom_contains(b, key, len, out) \
  bk__bloom_contains_inline((b), (key), (len), (out))

#ifdef BK__BLOOM_INLINE_SPLIT
/* Adds run inline only on a single_writer split-block filter (inline_add). */
static inline bk_status bk__bloom_add_inline(bk_bloom *b, const void *key,
                                             size_t len) {
  const bk__bloom_head *h = (const bk__bloom_head *)(const void *)b;
  if (__builtin_expect((b != NULL) & (key != NULL) & (len == 8), 1) &&
      __builtin_expect(h->inline_add != BK__INLINE_NONE, 1)) {
    uint64_t x;
    __builtin_memcpy(&x, key, 8);
    uint64_t d =
        h->inline_add == BK__INLINE_KIND(BK_BLOOM_SPLIT_BLOCK, BK__INLINE_XXH3)
            ? bk__digest8_lo(x, h->hash_k, BK__INLINE_XXH3)
            : bk__digest8_lo(x, h->hash_k, BK__INLINE_XXH64);
    bk__split_set_sw(bk__split_block(h, d), (uint32_t)d);
    return BK_OK;
  }
  return (bk_bloom_add)(b, key, len);
}

#define bk_bloom_add(b, key, len) bk__bloom_add_inline((b), (key), (len))
#endif

#ifdef __cplusplus
}
#endif

#endif
#endif /* BLOOMKIT_BLOOM_INLINE_H */
