/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom: the classic Bloom filter in three layouts: standard, blocked
 * and split-block.
 *
 * Standard: the k indices of a key are bk_hash_indices(h, k, m) (enhanced
 * double hashing + range reduction) anywhere in the m-bit array.
 *
 * Blocked: one 512-bit block (a 64-byte cache line) per key, chosen by
 * reduce(h.lo, m / 512); inside it, k bit positions of 9 bits each are cut
 * from x = mix64(h.hi), low bits first, seven per 64-bit word; after every
 * seven the word is re-mixed (mix64(x + 0x9E3779B97F4A7C15)) for the next:
 *
 *      x: [63] [62..54] [53..45] [44..36] [35..27] [26..18] [17..9] [8..0]
 *          -    pos 6    pos 5    pos 4    pos 3    pos 2    pos 1  pos 0
 *
 * Positions are drawn with replacement, which is what the false positive
 * formula (bk_params_fpp_blocked) assumes.
 *
 * Split-block (the Apache Parquet Split Block Bloom Filter, parquet-format
 * BloomFilter.md): 256-bit blocks of eight 32-bit words. Of the digest only
 * the 64-bit word h = h.lo counts (XXH64 seed 0 makes it Parquet's hash):
 *
 *      h: [63 ........... 32] [31 ............ 0]
 *          block selector       key
 *      block = ((h >> 32) * n_blocks) >> 32           (multiply-shift)
 *      word i of the block gets bit (key * SALT[i]) >> 27, i = 0 .. 7
 *
 * so every key sets exactly one bit in each of the eight words (k = 8). In
 * the u64 words of bk_bits, 32-bit word 2j is the low and 2j+1 the high
 * half of word j of the block (four u64 per block), which on the wire is
 * the little-endian bitset Parquet writes. Two code paths compute it: a
 * portable one and an AVX2 one (one vpmulld, a shift and a vpsllvd for all
 * eight masks), chosen at create by cpuid; tests compare them bit for bit.
 *
 * With single_writer one thread adds at a time: a word is a relaxed load
 * and a relaxed store, no locked instruction and no key lock (see the
 * single-writer section below).
 *
 * Concurrent adds: standard needs no lock (a bit, once set, stays set, and
 * each word is set with an atomic OR); its add_if_absent serialises callers
 * on one of 64 cache-line-padded spin locks picked by the key's digest: two
 * threads adding the same key take the same lock, so exactly one of them
 * sees the key absent. Blocked and split-block adds take their block's
 * lock, which serves add_if_absent too (see "block locks").
 */
#include <math.h>
#include <stddef.h>

/* The library defines the functions the header's inline path wraps. */
#define BK__BUILDING_BLOOM 1
#include "bloomkit/bloom.h"
#ifndef BK__BLOOM_PROBES
#error "bloom.h's probes need C99 and GCC or Clang"
#endif
#include "bloomkit/params.h"
/* xxHash's header-only mode (hash_fast.h, as in hash.c): the default hash
 * is compiled into the probe paths here, with no call through the PLT to
 * bk__hash. */
#include "hash_fast.h"
#include "hash_inline.h"
#include "internal.h"
#include "sync.h"

#define BLOOM_VERSION 1
#define BLOOM_HEADER_LEN (BK__PREFIX_SIZE + 32)
#define DEFAULT_FPP 0.01
#define LN2 0.69314718055994530942

/* The single-key entry points' bodies, chosen per filter at create (and by
 * bk_bloom_set_single_writer) for its layout, hash, write mode and CPU: an
 * entry point checks its arguments and jumps through one of these, so a
 * call tests no configuration on the way (see "single-key paths"). */
typedef bk_status (*bloom_contains_fn)(const bk_bloom *b, const void *key,
                                       size_t len, bool *out);
typedef bk_status (*bloom_add_fn)(bk_bloom *b, const void *key, size_t len);
/* An add that also tells whether a bit was clear (add_if_absent's answer
 * where it is exact, see select_paths). */
typedef bk_status (*bloom_aia_fn)(bk_bloom *b, const void *key, size_t len,
                                  bool *added);

struct bk_bloom {
  /* The hot fields first: one cache line holds what a probe reads. head
   * (words = bits.words hoisted, n_blocks of the block layouts, seed) is
   * read by the header's inline path: it stays the first member. */
  bk__bloom_head head;
  bloom_contains_fn contains_key;
  bloom_add_fn add_key;
  bloom_aia_fn add_if_absent_key;
  bk_hash_alg hash_alg; /* never BK_HASH_DEFAULT */
  uint64_t seed;
  bk__alloc alloc;
  bk_bits bits; /* m_bits = bits.n_bits */
  bk_bloom_layout layout;
  bool simd;          /* split-block: the AVX2 path (the CPU has it) */
  bool single_writer; /* adds from one thread at a time: plain RMW */
  uint64_t capacity;
  /* Standard: the key locks of add_if_absent (sync.h). Blocked and
   * split-block: the block locks of concurrent adds, block_lock_mask + 1
   * u32 spin locks, block n's at n & block_lock_mask, where n is a block's
   * first word >> block_lock_shift (see "block locks"). */
  bk__region locks;
  uint64_t block_lock_mask;
  unsigned block_lock_shift;
};

/* The inlined digests; the same as bk__hash for their algorithm (test_bloom's
 * golden blobs and test_bloom_split's Parquet fixture pin them). The short
 * forms take keys of up to 16 bytes with no call (8 bytes tested first, so
 * it hashes with a constant length), which keeps a body a leaf function
 * with no stack frame; longer keys go to a body of their own. */
static inline __attribute__((always_inline)) bk_hash digest_xxh3_short(
    const bk_bloom *b, const void *key, size_t len) {
  return bk__xxh3_short(b->seed, key, len);
}

static inline __attribute__((always_inline)) bk_hash digest_xxh3_long(
    const bk_bloom *b, const void *key, size_t len) {
  XXH128_hash_t x = XXH3_128bits_withSeed(key, len, b->seed);
  return (bk_hash){x.low64, x.high64};
}

static inline __attribute__((always_inline)) bk_hash digest_xxh64_short(
    const bk_bloom *b, const void *key, size_t len) {
  uint64_t lo = len == 8 ? XXH64(key, 8, b->seed) : XXH64(key, len, b->seed);
  return (bk_hash){lo, bk__mix64(lo)};
}

static inline __attribute__((always_inline)) bk_hash digest_xxh64_long(
    const bk_bloom *b, const void *key, size_t len) {
  uint64_t lo = XXH64(key, len, b->seed);
  return (bk_hash){lo, bk__mix64(lo)};
}

/* bk__hash with the digests above inlined (XXH3, the default, and XXH64),
 * for the batch loops and the checked entry points. */
static inline __attribute__((always_inline)) bk_hash bloom_hash(
    const bk_bloom *b, const void *key, size_t len) {
  if (BK_LIKELY(b->hash_alg == BK_HASH_XXH3))
    return len <= 16 ? digest_xxh3_short(b, key, len)
                     : digest_xxh3_long(b, key, len);
  if (b->hash_alg == BK_HASH_XXH64) return digest_xxh64_short(b, key, len);
  return bk__hash(b->hash_alg, b->seed, key, len);
}

/* ---- probes ------------------------------------------------------------ */

#define mix64 bk__mix64

static inline uint64_t *block_of(const bk_bloom *b, bk_hash h) {
  return b->head.words + bk_reduce(h.lo, b->head.n_blocks) * 8;
}

/* The blocked layout's k positions: BK__BLOCK_POSITIONS of bloom.h (also
 * the inline path's), from the digest's high half. */
#define BLOCK_POSITIONS(h, k, POS_BODY) BK__BLOCK_POSITIONS((h).hi, k, POS_BODY)

static inline bool blocked_contains(const bk_bloom *b, bk_hash h) {
  return bk__bloom_blk_test(block_of(b, h), b->head.k, h.hi);
}

/* ---- block locks ----------------------------------------------------------
 * A concurrent add to a blocked or split-block filter takes the spin lock of
 * its block (one of the filter's block locks, b->locks, picked by the
 * block's number), ORs its masks into the block with plain loads and stores
 * (on the split-block AVX2 path one vector load and store) and releases:
 * one locked instruction an add, where atomic ORs took one per word lacking
 * bits (up to 7 of a blocked line, 4 of a split block; two 16-byte
 * exchanges on x86 before), each a full barrier on x86 that also kept the
 * next add's cache miss from overlapping this one's (measured in
 * docs/results.md). Every concurrent writer of a block holds its lock, so
 * no update is lost; readers take no lock and see each aligned 64-bit word
 * before or after a store (bits only get set while they run). A split-block
 * add whose bits are all in the block already returns before the lock and
 * stores nothing (one vector load and test), so a repeated key dirties no
 * line that readers share; a blocked add goes straight to the lock, because
 * the same test on its 8 words (8 loads and a branch on them) made adds
 * that set bits 10-25 % slower (docs/results.md), and those are what
 * building a filter does. The "some bit was clear" an add returns is
 * decided under the lock: add_if_absent needs no key lock on these layouts
 * (one key, one block, one lock). */

/* A relaxed load and a relaxed store of (old | mask): plain movs, no
 * locked instruction, for a writer no other writer races (single_writer,
 * or under the block's lock); a reader sees the word before or after. */
static inline uint64_t sw_or(uint64_t *w, uint64_t mask) {
  uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
  __atomic_store_n(w, cur | mask, __ATOMIC_RELAXED);
  return mask & ~cur; /* the bits that were clear */
}

static inline uint32_t *block_lock_of(const bk_bloom *b, const uint64_t *blk) {
  uint64_t block = (uint64_t)(blk - b->head.words) >> b->block_lock_shift;
  return (uint32_t *)b->locks.data + (block & b->block_lock_mask);
}

/* The number of block locks of a filter of n_blocks blocks: a power of two,
 * one per 16 blocks, at least 16 (one cache line) and at most 16384
 * (64 KiB): enough lines that threads adding at random rarely share one. */
static uint64_t block_lock_count(uint64_t n_blocks) {
  uint64_t n = 16;
  while (n < n_blocks / 16 && n < 16384) n <<= 1;
  return n;
}

/* The masks of n_words words into the block under its lock; returns true
 * when a bit was clear. test_first: return before the lock when every bit
 * is there already (see above). */
static inline __attribute__((always_inline)) bool block_set(
    const bk_bloom *b, uint64_t *blk, const uint64_t *mask, unsigned n_words,
    bool test_first) {
  if (test_first) {
    uint64_t missing = 0;
    for (unsigned j = 0; j < n_words; j++)
      missing |= mask[j] & ~__atomic_load_n(&blk[j], __ATOMIC_RELAXED);
    if (!missing) return false;
  }
  uint32_t *lock = block_lock_of(b, blk);
  bk__spin_lock(lock);
  uint64_t fresh = 0;
  for (unsigned j = 0; j < n_words; j++) fresh |= sw_or(&blk[j], mask[j]);
  bk__spin_unlock(lock);
  return fresh != 0;
}

/* Sets the key's bits under the block's lock (above); returns true when at
 * least one was clear. */
static inline __attribute__((always_inline)) bool blocked_add(bk_bloom *b,
                                                              bk_hash h) {
  uint64_t mask[8] = {0};
  BLOCK_POSITIONS(h, b->head.k,
                  { mask[pos >> 6] |= (uint64_t)1 << (pos & 63); });
  return block_set(b, block_of(b, h), mask, 8, false);
}

/* Standard layout: bk__bloom_std_test of bloom.h (also the inline path's). */
static inline bool standard_contains(const bk_bloom *b, bk_hash h) {
  return bk__bloom_std_test(b->head.words, b->head.m_bits, b->head.k, h);
}

/* Adds compute and prefetch every word first, so the k cache misses overlap
 * instead of queueing behind each locked OR; then load every word, collect
 * without a branch the probes whose bit is clear, and one atomic OR per
 * such probe, walking that set by its lowest bit: a bit already set costs
 * no locked instruction and no branch depends on a single bit (only the
 * walk's exit). Two probes in one word may both OR it: a second OR of a
 * set bit is harmless and rare. */
static inline __attribute__((always_inline)) bool standard_add(bk_bloom *b,
                                                               bk_hash h) {
  uint64_t idx[BK_K_MAX];
  uint64_t a = h.lo, s = mix64(h.hi);
  uint64_t *words = b->head.words;
  const unsigned k = b->head.k;
  for (unsigned i = 0; i < k; i++) {
    idx[i] = bk_reduce(a, b->head.m_bits);
    __builtin_prefetch(&words[idx[i] >> 6], 1);
    a += s;
    s += i + 1;
  }
  uint64_t todo = 0;
  for (unsigned i = 0; i < k; i++)
    todo |=
        (uint64_t)(((__atomic_load_n(&words[idx[i] >> 6], __ATOMIC_RELAXED) >>
                     (idx[i] & 63)) &
                    1) ^
                   1)
        << i;
  bool changed = todo != 0;
  while (todo) {
    unsigned i = (unsigned)__builtin_ctzll(todo);
    __atomic_fetch_or(&words[idx[i] >> 6], (uint64_t)1 << (idx[i] & 63),
                      __ATOMIC_RELAXED);
    todo &= todo - 1;
  }
  return changed;
}

/* ---- split-block layout ------------------------------------------------ */

/* The eight odd salts of the Parquet specification, one per word. */
static const uint32_t split_salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu,
                                       0xa2b7289du, 0x705495c7u, 0x2df1424bu,
                                       0x9efc4947u, 0x5c6bfb31u};

#define SPLIT_WORDS64 (BK_SPLIT_BLOCK_BITS / 64u) /* u64 words per block */

static inline uint64_t *split_block_of(const bk_bloom *b, uint64_t h) {
  /* n_blocks <= 2^32 (m <= 2^40), so the product fits in 64 bits. */
  return b->head.words + ((h >> 32) * b->head.n_blocks >> 32) * SPLIT_WORDS64;
}

/* The block's four u64 masks: word 2j's bit in the low half of mask[j],
 * word 2j+1's in the high half. */
static inline void split_masks(uint32_t key, uint64_t mask[SPLIT_WORDS64]) {
  for (unsigned j = 0; j < SPLIT_WORDS64; j++) {
    uint32_t lo = (key * split_salt[2 * j]) >> 27;
    uint32_t hi = (key * split_salt[2 * j + 1]) >> 27;
    mask[j] = ((uint64_t)1 << lo) | ((uint64_t)1 << (hi + 32));
  }
}

/* Branch-free: every word is loaded and the misses ORed, so a probe never
 * waits on a mispredicted early exit (the next key's miss overlaps). */
static inline bool split_test_portable(const uint64_t *blk, uint32_t key) {
  uint64_t mask[SPLIT_WORDS64], missing = 0;
  split_masks(key, mask);
  for (unsigned j = 0; j < SPLIT_WORDS64; j++)
    missing |= mask[j] & ~__atomic_load_n(&blk[j], __ATOMIC_RELAXED);
  return missing == 0;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BK_SPLIT_AVX2 1
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
 * assembly: its builds (BK__BLOOM_TSAN) use 64-bit atomics. bloom.h's
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

__attribute__((target("avx2"), noinline)) static bool split_test_avx2(
    const uint64_t *blk, uint32_t key) {
  return split_test_avx2_inline(blk, key);
}

__attribute__((target("avx2"), always_inline)) static inline void
split_masks_avx2_inline(uint32_t key, uint64_t mask[SPLIT_WORDS64]) {
  _mm256_storeu_si256((__m256i *)(void *)mask, split_mask_avx2(key));
}

__attribute__((target("avx2"), noinline)) static void split_masks_avx2(
    uint32_t key, uint64_t mask[SPLIT_WORDS64]) {
  split_masks_avx2_inline(key, mask);
}

static bool cpu_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
#else
static bool cpu_has_avx2(void) {
  return false;
}
#endif

static inline bool split_contains(const bk_bloom *b, bk_hash h) {
  const uint64_t *blk = split_block_of(b, h.lo);
#ifdef BK_SPLIT_AVX2
  if (b->simd) return split_test_avx2(blk, (uint32_t)h.lo);
#endif
  return split_test_portable(blk, (uint32_t)h.lo);
}

static inline void split_key_masks(const bk_bloom *b, uint32_t key,
                                   uint64_t mask[SPLIT_WORDS64]) {
#ifdef BK_SPLIT_AVX2
  if (b->simd) {
    split_masks_avx2(key, mask);
    return;
  }
#endif
  (void)b;
  split_masks(key, mask);
}

static inline __attribute__((always_inline)) bool split_add(bk_bloom *b,
                                                            bk_hash h) {
  uint64_t mask[SPLIT_WORDS64];
  split_key_masks(b, (uint32_t)h.lo, mask);
  return block_set(b, split_block_of(b, h.lo), mask, SPLIT_WORDS64, true);
}

/* ---- single-writer adds ----------------------------------------------------
 * One thread adds at a time, any number read: a word is updated by a relaxed
 * atomic load and a relaxed atomic store of (old | mask), which compile to
 * plain movs (no locked instruction) and cannot tear, so a reader sees the
 * word before or after. The writer never loses its own bits (it is the only
 * one storing), and stores every touched word unconditionally: no branch on
 * the data, and an unchanged word costs a store to a line already owned. */

static inline __attribute__((always_inline)) bool standard_add_sw(bk_bloom *b,
                                                                  bk_hash h) {
  uint64_t idx[BK_K_MAX];
  uint64_t a = h.lo, s = mix64(h.hi);
  uint64_t *words = b->head.words;
  const unsigned k = b->head.k;
  for (unsigned i = 0; i < k; i++) {
    idx[i] = bk_reduce(a, b->head.m_bits);
    __builtin_prefetch(&words[idx[i] >> 6], 1);
    a += s;
    s += i + 1;
  }
  uint64_t fresh = 0;
  for (unsigned i = 0; i < k; i++)
    fresh |= sw_or(&words[idx[i] >> 6], (uint64_t)1 << (idx[i] & 63));
  return fresh != 0;
}

static inline __attribute__((always_inline)) bool blocked_add_sw(bk_bloom *b,
                                                                 bk_hash h) {
  uint64_t *blk = block_of(b, h);
  uint64_t mask[8] = {0}, fresh = 0;
  BLOCK_POSITIONS(h, b->head.k,
                  { mask[pos >> 6] |= (uint64_t)1 << (pos & 63); });
  for (unsigned w = 0; w < 8; w++) fresh |= sw_or(&blk[w], mask[w]);
  return fresh != 0;
}

static inline __attribute__((always_inline)) bool split_add_sw(bk_bloom *b,
                                                               bk_hash h) {
  uint64_t mask[SPLIT_WORDS64], fresh = 0;
  split_key_masks(b, (uint32_t)h.lo, mask);
  uint64_t *blk = split_block_of(b, h.lo);
  for (unsigned j = 0; j < SPLIT_WORDS64; j++) fresh |= sw_or(&blk[j], mask[j]);
  return fresh != 0;
}

/* The AVX2 probes of the single-key paths (the portable bodies use
 * split_contains, split_add and split_add_sw above, whose AVX2 branch a
 * filter on the portable path never takes). */
#ifdef BK_SPLIT_AVX2
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
#endif

static inline bool probe_contains(const bk_bloom *b, bk_hash h) {
  switch (b->layout) {
    case BK_BLOOM_SPLIT_BLOCK:
      return split_contains(b, h);
    case BK_BLOOM_BLOCKED:
      return blocked_contains(b, h);
    default:
      return standard_contains(b, h);
  }
}

/* Sets the key's bits; true when one was clear. */
static inline __attribute__((always_inline)) bool probe_add(bk_bloom *b,
                                                            bk_hash h) {
  if (b->single_writer) {
    switch (b->layout) {
      case BK_BLOOM_SPLIT_BLOCK:
        return split_add_sw(b, h);
      case BK_BLOOM_BLOCKED:
        return blocked_add_sw(b, h);
      default:
        return standard_add_sw(b, h);
    }
  }
  switch (b->layout) {
    case BK_BLOOM_SPLIT_BLOCK:
      return split_add(b, h);
    case BK_BLOOM_BLOCKED:
      return blocked_add(b, h);
    default:
      return standard_add(b, h);
  }
}

/* ---- single-key paths ---------------------------------------------------
 * bk_bloom_add and bk_bloom_contains check their arguments and jump through
 * the filter's add_key / contains_key, set by select_paths: one body per
 * (layout, write mode, CPU) for the hashes inlined here (XXH3, the default,
 * and XXH64, Parquet's), each a leaf that hashes, probes and returns, with a
 * branch for 8-byte keys so the commonest key length hashes with constant
 * length; every other hash takes the generic body. A per-key cost of a few
 * nanoseconds is what these save (a branch per configuration choice, the
 * stack frames of nested calls): measured beside fastfilter's inlined
 * split-block probe in docs/results.md. */

static bk_status contains_generic(const bk_bloom *b, const void *key,
                                  size_t len, bool *out) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = probe_contains(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status add_generic(bk_bloom *b, const void *key, size_t len) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  (void)probe_add(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status aia_generic(bk_bloom *b, const void *key, size_t len,
                             bool *added) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *added = probe_add(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status add_if_absent_keylocked(bk_bloom *b, const void *key,
                                         size_t len, bool *added);

/* A contains body and an add body per (digest, probe): the short-key leaf
 * and, for keys over 16 bytes, its twin that may call. */
#define CONTAINS_PATH(NAME, DIGEST, PROBE, ATTR)                            \
  ATTR __attribute__((noinline)) static bk_status contains_##NAME##_long(   \
      const bk_bloom *b, const void *key, size_t len, bool *out) {          \
    *out = PROBE(b, DIGEST##_long(b, key, len));                            \
    return BK_OK;                                                           \
  }                                                                         \
  ATTR static bk_status contains_##NAME(const bk_bloom *b, const void *key, \
                                        size_t len, bool *out) {            \
    if (BK_UNLIKELY(len > 16))                                              \
      return contains_##NAME##_long(b, key, len, out);                      \
    *out = PROBE(b, DIGEST##_short(b, key, len));                           \
    return BK_OK;                                                           \
  }
/* Per (digest, probe), an add body and an add-and-tell body (aia_*, for
 * add_if_absent), each with its long-key twin: two bodies, so that a plain
 * add neither computes the answer nor keeps a pointer for it alive (one
 * body with an optional pointer cost the add a stack frame). */
#define ADD_PATH(NAME, DIGEST, PROBE, ATTR)                                    \
  ATTR __attribute__((noinline)) static bk_status add_##NAME##_long(           \
      bk_bloom *b, const void *key, size_t len) {                              \
    (void)PROBE(b, DIGEST##_long(b, key, len));                                \
    return BK_OK;                                                              \
  }                                                                            \
  ATTR static bk_status add_##NAME(bk_bloom *b, const void *key, size_t len) { \
    if (BK_UNLIKELY(len > 16)) return add_##NAME##_long(b, key, len);          \
    (void)PROBE(b, DIGEST##_short(b, key, len));                               \
    return BK_OK;                                                              \
  }                                                                            \
  ATTR __attribute__((noinline, unused)) static bk_status aia_##NAME##_long(   \
      bk_bloom *b, const void *key, size_t len, bool *added) {                 \
    *added = PROBE(b, DIGEST##_long(b, key, len));                             \
    return BK_OK;                                                              \
  }                                                                            \
  ATTR __attribute__((unused)) static bk_status aia_##NAME(                    \
      bk_bloom *b, const void *key, size_t len, bool *added) {                 \
    if (BK_UNLIKELY(len > 16)) return aia_##NAME##_long(b, key, len, added);   \
    *added = PROBE(b, DIGEST##_short(b, key, len));                            \
    return BK_OK;                                                              \
  }

/* The bodies of one configuration: its lookup, its concurrent add and its
 * single-writer add (NAME and NAME_sw, as KEY_PATHS below expects). */
#define KEY_BODIES(NAME, DIGEST, CONTAINS, ADD, ADD_SW, ATTR) \
  CONTAINS_PATH(NAME, DIGEST, CONTAINS, ATTR)                 \
  ADD_PATH(NAME, DIGEST, ADD, ATTR)                           \
  ADD_PATH(NAME##_sw, DIGEST, ADD_SW, ATTR)

#define NO_ATTR
KEY_BODIES(std_x3, digest_xxh3, standard_contains, standard_add,
           standard_add_sw, NO_ATTR)
KEY_BODIES(blk_x3, digest_xxh3, blocked_contains, blocked_add, blocked_add_sw,
           NO_ATTR)
KEY_BODIES(split_x3, digest_xxh3, split_contains, split_add, split_add_sw,
           NO_ATTR)
KEY_BODIES(split_x64, digest_xxh64, split_contains, split_add, split_add_sw,
           NO_ATTR)
#ifdef BK_SPLIT_AVX2
#define AVX2_ATTR __attribute__((target("avx2")))
KEY_BODIES(split_x3_avx2, digest_xxh3, split_contains_avx2, split_add_avx2,
           split_add_sw_avx2, AVX2_ATTR)
KEY_BODIES(split_x64_avx2, digest_xxh64, split_contains_avx2, split_add_avx2,
           split_add_sw_avx2, AVX2_ATTR)
#endif

typedef struct key_paths {
  bloom_contains_fn contains;
  bloom_add_fn add, add_sw;
  bloom_aia_fn aia, aia_sw;
} key_paths;

/* The five bodies of one configuration (ADD_PATH NAME and NAME_sw). */
#define KEY_PATHS(NAME)                                                       \
  (key_paths) {                                                               \
    contains_##NAME, add_##NAME, add_##NAME##_sw, aia_##NAME, aia_##NAME##_sw \
  }

/* The filter's bodies for its configuration as it stands now. */
static void select_paths(bk_bloom *b) {
  key_paths p = {contains_generic, add_generic, add_generic, aia_generic,
                 aia_generic};
  const bool x3 = b->hash_alg == BK_HASH_XXH3;
  const bool x64 = b->hash_alg == BK_HASH_XXH64;
  switch (b->layout) {
    case BK_BLOOM_SPLIT_BLOCK:
#ifdef BK_SPLIT_AVX2
      if (b->simd) {
        if (x3) p = KEY_PATHS(split_x3_avx2);
        if (x64) p = KEY_PATHS(split_x64_avx2);
        break;
      }
#endif
      if (x3) p = KEY_PATHS(split_x3);
      if (x64) p = KEY_PATHS(split_x64);
      break;
    case BK_BLOOM_BLOCKED:
      if (x3) p = KEY_PATHS(blk_x3);
      break;
    default:
      if (x3) p = KEY_PATHS(std_x3);
      break;
  }
  b->contains_key = p.contains;
  b->add_key = b->single_writer ? p.add_sw : p.add;
  /* An add's "a bit was clear" is add_if_absent's answer where no other
   * add of the key can interleave: a single writer, or a block layout,
   * whose adds decide it under the block's lock. Concurrent standard
   * filters take a key lock around it. */
  b->add_if_absent_key = b->single_writer ? p.aia_sw
                         : b->layout != BK_BLOOM_STANDARD
                             ? p.aia
                             : add_if_absent_keylocked;
  /* The header's inline path: any layout with an inlined digest; adds on a
   * single-writer split-block filter. */
  const uint32_t digest = x3    ? BK__INLINE_XXH3
                          : x64 ? BK__INLINE_XXH64
                                : BK__INLINE_NONE;
  b->head.inline_find =
      digest ? BK__INLINE_KIND(b->layout, digest) : BK__INLINE_NONE;
  b->head.inline_add = b->single_writer && b->layout == BK_BLOOM_SPLIT_BLOCK
                           ? b->head.inline_find
                           : BK__INLINE_NONE;
  /* The seed's part of the inline digest (bk__digest8 in bloom.h). */
  b->head.hash_k =
      x3 ? UINT64_C(0xC4F023344DC994AC) +
               (b->seed ^ (uint64_t)__builtin_bswap32((uint32_t)b->seed) << 32)
         : b->seed + UINT64_C(0x27D4EB2F165667C5) + 8;
}

/* The header's inline path reads the head at the start of the filter. */
_Static_assert(offsetof(struct bk_bloom, head) == 0,
               "bk__bloom_head must be the first member of bk_bloom");

/* ---- lifecycle ---------------------------------------------------------- */

typedef struct layout_rate {
  bk_bloom_layout layout;
  unsigned k;
  uint64_t capacity;
} layout_rate;

static bk_status layout_rate_of(uint64_t m, const void *ctx, double *out) {
  const layout_rate *r = ctx;
  if (r->layout == BK_BLOOM_SPLIT_BLOCK)
    return bk_params_fpp_split_block(m, r->capacity, out);
  return bk_params_fpp_blocked(m, r->k, r->capacity, out);
}

static uint64_t layout_unit(bk_bloom_layout layout) {
  return layout == BK_BLOOM_SPLIT_BLOCK ? BK_SPLIT_BLOCK_BITS
         : layout == BK_BLOOM_BLOCKED   ? BK_BLOCK_BITS
                                        : 1;
}

static bk_status resolve_size(const bk_bloom_config *cfg, uint64_t *m_out,
                              unsigned *k_out) {
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  const bool split = cfg->layout == BK_BLOOM_SPLIT_BLOCK;
  /* Split-block sets one bit in each of its eight words: k is 8. */
  BK_RETURN_IF(split && cfg->k != 0 && cfg->k != 8, BK_EINVAL);
  const uint64_t unit = layout_unit(cfg->layout);
  uint64_t m;
  unsigned k = split ? 8 : cfg->k;
  if (cfg->m_bits) {
    m = cfg->m_bits;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
    if (!k) {
      BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
      double kd = round((double)m / (double)cfg->capacity * LN2);
      k = kd < 1.0 ? 1u : kd > BK_K_MAX ? BK_K_MAX : (unsigned)kd;
    }
    m = (m + unit - 1) / unit * unit;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
  } else {
    BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
    if (!k) {
      BK_TRY(bk_params_for_target(cfg->capacity, fpp, &m, &k));
    } else {
      /* k fixed: the smallest m that meets p with it. */
      BK_TRY(bk_params_m_for_k(cfg->capacity, fpp, k, &m));
    }
    if (unit > 1) {
      /* A block layout has a higher rate than the standard one at the same
       * m: from the standard m upwards to the first whole number of blocks
       * whose own rate meets fpp (docs/design/bloom.md 5.7). */
      layout_rate r = {cfg->layout, k, cfg->capacity};
      BK_TRY(bk__m_search(m, unit, BK_BITS_MAX, fpp, layout_rate_of, &r, &m));
    }
  }
  *m_out = m;
  *k_out = k;
  return BK_OK;
}

static bk_status bloom_new(bk_bloom **out, const bk__alloc *al, uint64_t m,
                           unsigned k, bk_bloom_layout layout, bk_hash_alg alg,
                           uint64_t seed, uint64_t capacity) {
  bk_bloom *b = bk__calloc(al, 1, sizeof *b);
  BK_RETURN_IF(!b, BK_ENOMEM);
  b->alloc = *al;
  bk_status s = bk__bits_init(&b->bits, m, al);
  if (s != BK_OK) {
    bk__free(al, b);
    return s;
  }
  /* Standard: the key locks of add_if_absent; the block layouts: one lock
   * per group of blocks (see "block locks"). */
  uint64_t n_locks = 0;
  unsigned lock_shift = 0;
  if (layout == BK_BLOOM_SPLIT_BLOCK) {
    n_locks = block_lock_count(m / BK_SPLIT_BLOCK_BITS);
    lock_shift = 2; /* 4 words a block */
  } else if (layout == BK_BLOOM_BLOCKED) {
    n_locks = block_lock_count(m / BK_BLOCK_BITS);
    lock_shift = 3; /* 8 words a block */
  }
  s = bk__region_alloc(
      al, n_locks ? n_locks * sizeof(uint32_t) : BK__KEY_LOCKS_BYTES,
      &b->locks);
  if (s != BK_OK) {
    bk__bits_release(&b->bits);
    bk__free(al, b);
    return s;
  }
  b->head.words = b->bits.words;
  b->head.m_bits = m;
  b->head.n_blocks = layout == BK_BLOOM_SPLIT_BLOCK ? m / BK_SPLIT_BLOCK_BITS
                                                    : m / BK_BLOCK_BITS;
  b->block_lock_mask = n_locks ? n_locks - 1 : 0;
  b->block_lock_shift = lock_shift;
  b->simd = layout == BK_BLOOM_SPLIT_BLOCK && cpu_has_avx2();
  b->head.k = k;
  b->layout = layout;
  b->hash_alg = alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : alg;
  b->seed = seed;
  b->capacity = capacity;
  select_paths(b);
  *out = b;
  return BK_OK;
}

bk_status bk_bloom_create(bk_bloom **out, const bk_bloom_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(cfg->layout != BK_BLOOM_STANDARD &&
                   cfg->layout != BK_BLOOM_BLOCKED &&
                   cfg->layout != BK_BLOOM_SPLIT_BLOCK,
               BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid_any(cfg->hash_alg, cfg->seed), BK_EINVAL);
  uint64_t m;
  unsigned k;
  BK_TRY(resolve_size(cfg, &m, &k));
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  BK_TRY(bloom_new(out, &al, m, k, cfg->layout, cfg->hash_alg, cfg->seed,
                   cfg->capacity));
  (*out)->single_writer = cfg->single_writer;
  select_paths(*out);
  return BK_OK;
}

bk_status bk_bloom_set_single_writer(bk_bloom *b, bool single_writer) {
  BK_RETURN_IF(!b, BK_EINVAL);
  b->single_writer = single_writer;
  select_paths(b);
  return BK_OK;
}

void bk_bloom_destroy(bk_bloom *b) {
  if (!b) return;
  bk__alloc al = b->alloc;
  bk__region_free(&al, &b->locks);
  bk__bits_release(&b->bits);
  bk__free(&al, b);
}

/* Tests only (declared in internal.h): run a split-block filter on the AVX2
 * path (on = true, where the CPU has it) or the portable one. Returns
 * whether the AVX2 path is now in use. */
bool bk__bloom_use_simd(bk_bloom *b, bool on) {
  b->simd = on && b->layout == BK_BLOOM_SPLIT_BLOCK && cpu_has_avx2();
  select_paths(b);
  return b->simd;
}

/* ---- operations --------------------------------------------------------- */

/* The checked digest every key-taking entry point starts with; static so the
 * hot path makes no call through the PLT. */
static inline bk_status hash_key(const bk_bloom *b, const void *key, size_t len,
                                 bk_hash *out) {
  BK_RETURN_IF(!b || (!key && len), BK_EINVAL);
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = bloom_hash(b, key, len);
  return BK_OK;
}

bk_status bk_bloom_hash(const bk_bloom *b, const void *key, size_t len,
                        bk_hash *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  return hash_key(b, key, len, out);
}

bk_status bk_bloom_add(bk_bloom *b, const void *key, size_t len) {
  if (BK_UNLIKELY(!b || (!key && len))) return BK_EINVAL;
  return b->add_key(b, key, len);
}

bk_status bk_bloom_add_hash(bk_bloom *b, bk_hash h) {
  BK_RETURN_IF(!b, BK_EINVAL);
  (void)probe_add(b, h);
  return BK_OK;
}

bk_status bk_bloom_contains(const bk_bloom *b, const void *key, size_t len,
                            bool *out) {
  if (BK_UNLIKELY(!b || !out || (!key && len))) return BK_EINVAL;
  return b->contains_key(b, key, len, out);
}

bk_status bk_bloom_contains_hash(const bk_bloom *b, bk_hash h, bool *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = probe_contains(b, h);
  return BK_OK;
}

/* A concurrent standard filter's add_if_absent: the key's lock around the
 * add. No lock-free "already present" pre-check: measured, the extra
 * dependent read before the locked writes costs ~1.5x add on filters
 * larger than the cache, while the lock itself (an L1-resident line) costs
 * ~nothing. Under the key's lock no other add_if_absent of this key runs,
 * so "some bit was clear" decides newness once. */
static inline bool standard_add_keylocked(bk_bloom *b, bk_hash h) {
  uint32_t *lock = bk__key_lock(&b->locks, h);
  bk__spin_lock(lock);
  bool changed = standard_add(b, h);
  bk__spin_unlock(lock);
  return changed;
}

bk_status bk_bloom_add_if_absent_hash(bk_bloom *b, bk_hash h, bool *added) {
  BK_RETURN_IF(!b || !added, BK_EINVAL);
  /* The only adding thread, or a block layout, whose concurrent adds decide
   * "some bit was clear" under the block's lock: exact without a key
   * lock. */
  *added = b->single_writer || b->layout != BK_BLOOM_STANDARD
               ? probe_add(b, h)
               : standard_add_keylocked(b, h);
  return BK_OK;
}

/* Concurrent standard filters, any hash: the body the other configurations
 * get from ADD_PATH, with the key lock (hash inlined as in bloom_hash). */
static bk_status add_if_absent_keylocked(bk_bloom *b, const void *key,
                                         size_t len, bool *added) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *added = standard_add_keylocked(b, bloom_hash(b, key, len));
  return BK_OK;
}

/* Through the filter's add_if_absent_key (select_paths): the add body
 * itself wherever its answer is exact. */
bk_status bk_bloom_add_if_absent(bk_bloom *b, const void *key, size_t len,
                                 bool *added) {
  if (BK_UNLIKELY(!b || !added || (!key && len))) return BK_EINVAL;
  return b->add_if_absent_key(b, key, len, added);
}

/* ---- batches ----------------------------------------------------------- */

/* How far ahead of the probe the batch loops hash and prefetch: enough keys
 * to keep the core's miss buffers busy, few enough to stay in L1. */
#define BATCH_AHEAD 16u

static inline __attribute__((always_inline)) void prefetch_key(
    const bk_bloom *b, bk_hash h, int write) {
  if (b->layout == BK_BLOOM_SPLIT_BLOCK) {
    if (write)
      __builtin_prefetch(split_block_of(b, h.lo), 1);
    else
      __builtin_prefetch(split_block_of(b, h.lo), 0);
    return;
  }
  if (b->layout == BK_BLOOM_BLOCKED) {
    if (write)
      __builtin_prefetch(block_of(b, h), 1);
    else
      __builtin_prefetch(block_of(b, h), 0);
    return;
  }
  /* Standard: the first probes decide most absent keys. */
  uint64_t a = h.lo, s = mix64(h.hi);
  unsigned n = b->head.k < 3 ? b->head.k : 3;
  for (unsigned i = 0; i < n; i++) {
    const uint64_t *w = &b->head.words[bk_reduce(a, b->head.m_bits) >> 6];
    if (write)
      __builtin_prefetch(w, 1);
    else
      __builtin_prefetch(w, 0);
    a += s;
    s += i + 1;
  }
}

static bk_status check_batch(const bk_bloom *b, const void *const *keys,
                             const size_t *lens, size_t n) {
  BK_RETURN_IF(!b, BK_EINVAL);
  return bk__batch_keys_ok(b->hash_alg, keys, lens, n);
}

/* Hash key i + BATCH_AHEAD while probing key i, through a ring of digests. */
#define BATCH_LOOP(b, keys, lens, n, WRITE, BODY)                    \
  do {                                                               \
    bk_hash ring_[BATCH_AHEAD];                                      \
    size_t lead_ = (n) < BATCH_AHEAD ? (n) : BATCH_AHEAD;            \
    for (size_t i_ = 0; i_ < lead_; i_++) {                          \
      ring_[i_] = bloom_hash((b), (keys)[i_], (lens)[i_]);           \
      prefetch_key((b), ring_[i_], (WRITE));                         \
    }                                                                \
    for (size_t i = 0; i < (n); i++) {                               \
      bk_hash h = ring_[i % BATCH_AHEAD];                            \
      size_t next_ = i + BATCH_AHEAD;                                \
      if (next_ < (n)) {                                             \
        bk_hash nh_ = bloom_hash((b), (keys)[next_], (lens)[next_]); \
        ring_[i % BATCH_AHEAD] = nh_;                                \
        prefetch_key((b), nh_, (WRITE));                             \
      }                                                              \
      BODY;                                                          \
    }                                                                \
  } while (0)

#ifdef BK_SPLIT_AVX2
/* The batch loops of a split-block filter on the AVX2 path, each one AVX2
 * function with the probe inlined (the generic loops call the AVX2 probe
 * once per key, which cost a batch more than the single-key calls). */
__attribute__((target("avx2"))) static void split_contains_many_avx2(
    const bk_bloom *b, const void *const *keys, const size_t *lens, size_t n,
    bool *out) {
  BATCH_LOOP(b, keys, lens, n, 0, { out[i] = split_contains_avx2(b, h); });
}

__attribute__((target("avx2"))) static void split_add_many_avx2(
    bk_bloom *b, const void *const *keys, const size_t *lens, size_t n) {
  if (b->single_writer)
    BATCH_LOOP(b, keys, lens, n, 1, { (void)split_add_sw_avx2(b, h); });
  else
    BATCH_LOOP(b, keys, lens, n, 1, { (void)split_add_avx2(b, h); });
}
#endif

bk_status bk_bloom_contains_many(const bk_bloom *b, const void *const *keys,
                                 const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_batch(b, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
#ifdef BK_SPLIT_AVX2
  if (b->simd) { /* split-block only */
    split_contains_many_avx2(b, keys, lens, n, out);
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
    split_add_many_avx2(b, keys, lens, n);
    return BK_OK;
  }
#endif
  BATCH_LOOP(b, keys, lens, n, 1, { (void)probe_add(b, h); });
  return BK_OK;
}

static bk_status check_compatible(const bk_bloom *a, const bk_bloom *c) {
  BK_RETURN_IF(!a || !c, BK_EINVAL);
  BK_RETURN_IF(a->head.m_bits != c->head.m_bits || a->head.k != c->head.k ||
                   a->layout != c->layout || a->hash_alg != c->hash_alg ||
                   a->seed != c->seed,
               BK_EMISMATCH);
  return BK_OK;
}

bk_status bk_bloom_merge(bk_bloom *dst, const bk_bloom *src) {
  BK_TRY(check_compatible(dst, src));
  return bk_bits_union(&dst->bits, &src->bits);
}

bk_status bk_bloom_intersect(bk_bloom *dst, const bk_bloom *src) {
  BK_TRY(check_compatible(dst, src));
  return bk_bits_intersect(&dst->bits, &src->bits);
}

bk_status bk_bloom_cardinality(const bk_bloom *b, double *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  double m = (double)b->head.m_bits;
  double set = (double)bk__popcount_words(b->head.words, b->bits.n_words);
  if (set >= m) set = m - 0.5;
  *out = -(m / (double)b->head.k) * log1p(-set / m);
  return BK_OK;
}

bk_status bk_bloom_fill_fpp(const bk_bloom *b, double *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  if (b->layout == BK_BLOOM_SPLIT_BLOCK) {
    /* A probe lands in a uniform block and needs its one bit in each of the
     * eight words: the mean over blocks of the product of word fills. */
    double total = 0.0;
    for (uint64_t blk = 0; blk < b->head.n_blocks; blk++) {
      double hit = 1.0;
      for (unsigned j = 0; j < SPLIT_WORDS64; j++) {
        uint64_t w = __atomic_load_n(&b->head.words[blk * SPLIT_WORDS64 + j],
                                     __ATOMIC_RELAXED);
        hit *= (double)__builtin_popcount((uint32_t)w) / 32.0 *
               ((double)__builtin_popcount((uint32_t)(w >> 32)) / 32.0);
      }
      total += hit;
    }
    *out = total / (double)b->head.n_blocks;
    return BK_OK;
  }
  if (b->layout == BK_BLOOM_BLOCKED) {
    /* A probe lands in a uniform block and draws k positions there with
     * replacement: the exact mean of (fill of the block)^k. */
    double total = 0.0;
    for (uint64_t blk = 0; blk < b->head.n_blocks; blk++) {
      uint64_t set = bk__popcount_words(b->head.words + blk * 8, 8);
      total += pow((double)set / BK_BLOCK_BITS, (double)b->head.k);
    }
    *out = total / (double)b->head.n_blocks;
    return BK_OK;
  }
  double set = (double)bk__popcount_words(b->head.words, b->bits.n_words);
  *out = pow(set / (double)b->head.m_bits, (double)b->head.k);
  return BK_OK;
}

bk_status bk_bloom_info_get(const bk_bloom *b, bk_bloom_info *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  out->m_bits = b->head.m_bits;
  out->k = b->head.k;
  out->layout = b->layout;
  out->hash_alg = b->hash_alg;
  out->seed = b->seed;
  out->capacity = b->capacity;
  out->memory = sizeof *b + b->bits.region.size + b->locks.size;
  return BK_OK;
}

bk_status bk_bloom_clear(bk_bloom *b) {
  BK_RETURN_IF(!b, BK_EINVAL);
  return bk_bits_clear_all(&b->bits);
}

/* ---- serialized form -----------------------------------------------------
 * Parameters after the 24-byte prefix (header length 56):
 *   24  u64  m_bits
 *   32  u64  capacity (informational; 0 when sized by m and k)
 *   40  u8   layout (0 standard, 1 blocked, 2 split-block)
 *   41  u8   hash algorithm (1 XXH3, 2 Murmur3, 3 XXH64)
 *   42  u8   k (1..64)
 *   43  u8   reserved, zero
 *   44  u32  reserved, zero
 *   48  u64  seed
 * Payload: the bit array, ceil(m / 64) little-endian u64 words, bits past m
 * zero. */
bk_status bk_bloom_serialized_size(const bk_bloom *b, size_t *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = BLOOM_HEADER_LEN + (size_t)b->bits.n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_bloom_serialize(const bk_bloom *b, void *buf, size_t cap,
                             size_t *written) {
  size_t need;
  BK_RETURN_IF(!buf || !written, BK_EINVAL);
  BK_TRY(bk_bloom_serialized_size(b, &need));
  BK_RETURN_IF(cap < need, BK_EINVAL);
  unsigned char *p = buf;
  bk__format_write_prefix(p, BLOOM_VERSION, BK__TYPE_BLOOM, BLOOM_HEADER_LEN,
                          b->bits.n_words * 8);
  bk__store_le64(p + 24, b->head.m_bits);
  bk__store_le64(p + 32, b->capacity);
  p[40] = (unsigned char)b->layout;
  p[41] = (unsigned char)b->hash_alg;
  p[42] = (unsigned char)b->head.k;
  p[43] = 0;
  bk__store_le32(p + 44, 0);
  bk__store_le64(p + 48, b->seed);
  bk__words_store(p + BLOOM_HEADER_LEN, b->head.words, b->bits.n_words);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

bk_status bk_bloom_deserialize(const void *buf, size_t len,
                               const bk_allocator *allocator, bk_bloom **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BLOOM, BLOOM_VERSION,
                         BLOOM_HEADER_LEN, &v));
  const unsigned char *p = v.params - BK__PREFIX_SIZE; /* absolute offsets */
  uint64_t m = bk__load_le64(p + 24);
  uint64_t capacity = bk__load_le64(p + 32);
  unsigned layout = p[40], alg = p[41], k = p[42];
  uint64_t seed = bk__load_le64(p + 48);
  BK_RETURN_IF(p[43] != 0 || bk__load_le32(p + 44) != 0, BK_ECORRUPT);
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX, BK_ECORRUPT);
  BK_RETURN_IF(k == 0 || k > BK_K_MAX, BK_ECORRUPT);
  BK_RETURN_IF(layout != BK_BLOOM_STANDARD && layout != BK_BLOOM_BLOCKED &&
                   layout != BK_BLOOM_SPLIT_BLOCK,
               BK_ECORRUPT);
  BK_RETURN_IF(m % layout_unit((bk_bloom_layout)layout) != 0, BK_ECORRUPT);
  BK_RETURN_IF(layout == BK_BLOOM_SPLIT_BLOCK && k != 8, BK_ECORRUPT);
  BK_RETURN_IF(
      alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3 && alg != BK_HASH_XXH64,
      BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid_any((bk_hash_alg)alg, seed), BK_ECORRUPT);
  uint64_t n_words = (m + 63) / 64;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  uint64_t last = bk__load_le64(v.payload + (n_words - 1) * 8);
  BK_RETURN_IF((m & 63) && (last >> (m & 63)) != 0, BK_ECORRUPT);

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bloom *b;
  BK_TRY(bloom_new(&b, &al, m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg,
                   seed, capacity));
  bk__words_load(b->head.words, v.payload, n_words);
  *out = b;
  return BK_OK;
}

/* ---- Parquet bitsets -------------------------------------------------------
 * A Parquet split block Bloom filter's bitset is z blocks of eight
 * little-endian u32 words, z a power of two; the bk_bloom payload of a
 * split-block filter is the same bytes (see the top of this file). */
static bool parquet_len_ok(uint64_t len) {
  return len >= BK_PARQUET_BITSET_MIN && len <= BK_PARQUET_BITSET_MAX &&
         (len & (len - 1)) == 0;
}

bk_status bk_bloom_parquet_import(const void *bitset, size_t len,
                                  const bk_allocator *allocator,
                                  bk_bloom **out) {
  BK_RETURN_IF(!bitset || !out, BK_EINVAL);
  BK_RETURN_IF(!parquet_len_ok(len), BK_ECORRUPT);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bloom *b;
  BK_TRY(bloom_new(&b, &al, (uint64_t)len * 8, 8, BK_BLOOM_SPLIT_BLOCK,
                   BK_HASH_XXH64, 0, 0));
  bk__words_load(b->head.words, bitset, len / 8);
  *out = b;
  return BK_OK;
}

bk_status bk_bloom_parquet_export(const bk_bloom *b, void *buf, size_t cap,
                                  size_t *written) {
  BK_RETURN_IF(!b || !buf || !written, BK_EINVAL);
  BK_RETURN_IF(b->layout != BK_BLOOM_SPLIT_BLOCK ||
                   b->hash_alg != BK_HASH_XXH64 || b->seed != 0 ||
                   !parquet_len_ok(b->head.m_bits / 8),
               BK_EMISMATCH);
  size_t len = (size_t)(b->head.m_bits / 8);
  BK_RETURN_IF(cap < len, BK_EINVAL);
  bk__words_store(buf, b->head.words, b->bits.n_words);
  *written = len;
  return BK_OK;
}
