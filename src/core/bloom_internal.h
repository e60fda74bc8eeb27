/* SPDX-License-Identifier: MIT */
/*
 * Private to bk_bloom's files: the struct, the inlined digests, the probes
 * and adds of the three layouts (portable; the AVX2 split-block kernels
 * are in bloom_avx2.c), the single-key body macros and the batch loop, all
 * static inline so that each file that probes compiles them into its own
 * loops with no call. bloom.c (create, single keys, dispatch), bloom_avx2.c
 * (split-block with AVX2), bloom_batch.c (batches) and bloom_io.c (the
 * serialized form and Parquet bitsets) share it. The layouts' bit formats
 * are drawn at the top of bloom.c. Never installed.
 */
#ifndef BLOOMKIT_SRC_CORE_BLOOM_INTERNAL_H
#define BLOOMKIT_SRC_CORE_BLOOM_INTERNAL_H

#include <stddef.h>

#include "bloomkit/bloom.h"
#include "bloomkit/params.h"
/* xxHash's header-only mode (hash_fast.h, as in hash.c): the default hash
 * is compiled into the probe paths, with no call through the PLT to
 * bk__hash. hash_fast.h also brings the head and the probes bk_bloom
 * shares with bloomkit/bloom_inline.h's inline path (without its macros:
 * bloom.c defines the functions they wrap). */
#include "hash_fast.h"
#ifndef BK__BLOOM_PROBES
#error "bloom_inline.h's probes need C99 and GCC or Clang"
#endif
#include "internal.h"
#include "sync.h"

/* x86-64 builds carry the AVX2 split-block path (bloom_avx2.c), chosen at
 * run time by cpuid (bk__bloom_cpu_has_avx2). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BK_SPLIT_AVX2 1
#endif

/* The single-key entry points' bodies, chosen per filter at create (and by
 * bk_bloom_set_single_writer) for its layout, hash, write mode and CPU: an
 * entry point checks its arguments and jumps through one of these, so a
 * call tests no configuration on the way (see "single-key paths" below). */
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

static inline uint64_t *block_of(const bk_bloom *b, bk_hash h) {
  return b->head.words + bk_reduce(h.lo, b->head.n_blocks) * 8;
}

/* The blocked layout's k positions: BK__BLOCK_POSITIONS of bloom_inline.h (also
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

/* Standard layout: bk__bloom_std_test of bloom_inline.h (also the inline
 * path's). */
static inline bool standard_contains(const bk_bloom *b, bk_hash h) {
  return bk__bloom_std_test(b->head.words, b->head.m_bits, b->head.k, h);
}

/* A standard add's k positions into idx, each word prefetched for writing
 * so that the k cache misses overlap; returns k. */
static inline __attribute__((always_inline)) unsigned standard_positions(
    const bk_bloom *b, bk_hash h, uint64_t idx[BK_K_MAX]) {
  bk__probe_seq p = bk__probe_start(h);
  const unsigned k = b->head.k;
  for (unsigned i = 0; i < k; i++) {
    idx[i] = bk__probe_next(&p, i, b->head.m_bits);
    __builtin_prefetch(&b->head.words[idx[i] >> 6], 1);
  }
  return k;
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
  uint64_t *words = b->head.words;
  const unsigned k = standard_positions(b, h, idx);
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

#ifdef BK_SPLIT_AVX2
/* bloom_avx2.c: one key's split-block test and masks with AVX2, out of
 * line (called from the portable bodies of a filter on the AVX2 path:
 * contains_hash, generic digests). */
bool bk__bloom_split_test_avx2(const uint64_t *blk, uint32_t key);
void bk__bloom_split_masks_avx2(uint32_t key, uint64_t mask[SPLIT_WORDS64]);
#endif
/* Whether this CPU has AVX2 (false where BK_SPLIT_AVX2 is not built). */
bool bk__bloom_cpu_has_avx2(void);

static inline bool split_contains(const bk_bloom *b, bk_hash h) {
  const uint64_t *blk = split_block_of(b, h.lo);
#ifdef BK_SPLIT_AVX2
  if (b->simd) return bk__bloom_split_test_avx2(blk, (uint32_t)h.lo);
#endif
  return split_test_portable(blk, (uint32_t)h.lo);
}

static inline void split_key_masks(const bk_bloom *b, uint32_t key,
                                   uint64_t mask[SPLIT_WORDS64]) {
#ifdef BK_SPLIT_AVX2
  if (b->simd) {
    bk__bloom_split_masks_avx2(key, mask);
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
  uint64_t *words = b->head.words;
  const unsigned k = standard_positions(b, h, idx);
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

/* ---- single-key paths (bloom.c, bloom_avx2.c) --------------------------
 * bk_bloom_add and bk_bloom_contains check their arguments and jump through
 * the filter's add_key / contains_key, set by select_paths: one body per
 * (layout, write mode, CPU) for the hashes inlined here (XXH3, the default,
 * and XXH64, Parquet's), each a leaf that hashes, probes and returns, with a
 * branch for 8-byte keys so the commonest key length hashes with constant
 * length; every other hash takes the generic body. A per-key cost of a few
 * nanoseconds is what these save (a branch per configuration choice, the
 * stack frames of nested calls): measured beside fastfilter's inlined
 * split-block probe in docs/results.md. */

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

typedef struct bk__bloom_paths {
  bloom_contains_fn contains;
  bloom_add_fn add, add_sw;
  bloom_aia_fn aia, aia_sw;
} bk__bloom_paths;

/* The five bodies of one configuration (ADD_PATH NAME and NAME_sw). */
#define KEY_PATHS(NAME)                                                       \
  (bk__bloom_paths) {                                                         \
    contains_##NAME, add_##NAME, add_##NAME##_sw, aia_##NAME, aia_##NAME##_sw \
  }

#ifdef BK_SPLIT_AVX2
/* bloom_avx2.c: the split-block bodies with AVX2 for the inlined digests
 * (XXH3, XXH64) into *out; false, *out untouched, for another hash. */
bool bk__bloom_avx2_paths(bk_hash_alg alg, bk__bloom_paths *out);
#endif

/* ---- batches (bloom_batch.c, bloom_avx2.c) ---------------------------- */

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
  bk__probe_seq p = bk__probe_start(h);
  unsigned n = b->head.k < 3 ? b->head.k : 3;
  for (unsigned i = 0; i < n; i++) {
    const uint64_t *w =
        &b->head.words[bk__probe_next(&p, i, b->head.m_bits) >> 6];
    if (write)
      __builtin_prefetch(w, 1);
    else
      __builtin_prefetch(w, 0);
  }
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
/* bloom_avx2.c: the batch loops of a split-block filter on the AVX2 path. */
void bk__bloom_split_contains_many_avx2(const bk_bloom *b,
                                        const void *const *keys,
                                        const size_t *lens, size_t n,
                                        bool *out);
void bk__bloom_split_add_many_avx2(bk_bloom *b, const void *const *keys,
                                   const size_t *lens, size_t n);
#endif

/* ---- shared by bloom.c and bloom_io.c ----------------------------------- */

/* Bits of one block of a layout (1: standard, any m). */
uint64_t bk__bloom_layout_unit(bk_bloom_layout layout);

/* A new empty filter of m bits (a multiple of the layout's unit), k
 * probes, with its locks and its single-key bodies; concurrent adds.
 * Errors: BK_ENOMEM. */
bk_status bk__bloom_new(bk_bloom **out, const bk__alloc *al, uint64_t m,
                        unsigned k, bk_bloom_layout layout, bk_hash_alg alg,
                        uint64_t seed, uint64_t capacity);

#endif
