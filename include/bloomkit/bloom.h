/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom: the classic Bloom filter (B. H. Bloom, 1970) in three layouts.
 *
 *   BK_BLOOM_STANDARD  k bits anywhere in m: the textbook false positive rate,
 *                      up to k cache misses per operation.
 *   BK_BLOOM_BLOCKED   all k bits inside one 64-byte block (Putze, Sanders &
 *                      Singler 2007): one cache miss per operation, a slightly
 *                      higher false positive rate for the same m
 *                      (bk_params_fpp_blocked gives it exactly).
 *   BK_BLOOM_SPLIT_BLOCK  the split block Bloom filter of Apache Parquet
 *                      (parquet-format BloomFilter.md; Impala's design):
 *                      256-bit blocks of eight 32-bit words, one bit set per
 *                      word (k = 8), the bits from the specification's eight
 *                      salts, the block by multiply-shift of the high half
 *                      of the 64-bit hash. One cache line, no loop, eight
 *                      masks in one AVX2 multiply where the CPU has it
 *                      (chosen at run time, same bits as the portable
 *                      path). With hash_alg BK_HASH_XXH64 and seed 0 the
 *                      bits are a Parquet column's bitset
 *                      (bk_bloom_parquet_import/export). Rate:
 *                      bk_params_fpp_split_block.
 *
 * Thread safety, the same in every layout: bk_bloom_add,
 * bk_bloom_add_if_absent, bk_bloom_add_many and bk_bloom_contains (and their
 * _hash and batch forms) may run concurrently from any number of threads on
 * one filter. Standard: each word an add changes is set with one atomic OR
 * (skipped when the word already holds the add's bit). Blocked and
 * split-block: an add that lacks bits in its block (a 64-byte line, a
 * 32-byte block) takes that block's spin lock (one of a table in the
 * filter) and stores the block's words; readers take no lock. So adds of
 * those layouts are not lock-free: do not add from a signal handler, or in
 * a child forked while another thread may be adding; a writer preempted
 * under a block's lock delays the other writers of that lock (never a
 * reader). Standard adds and all lookups take no lock.
 * add_if_absent is linearizable: of
 * several threads adding the same new key at once, exactly one is told it
 * was new. With `single_writer` set, at most one thread at a time may add
 * (add, add_hash, add_many, add_if_absent), while any number of threads
 * still read beside it: each word is then updated by a plain atomic load
 * and store, with no locked instruction and no key lock, and a reader sees
 * the word before or after, never torn (standard: the k words; blocked: the
 * 8 words of the line; split-block: the 4 words of the block).
 * add_if_absent then tells the one writer exactly whether the key was new.
 * merge, intersect, clear, set_single_writer and deserialize need exclusive
 * access to their destination; the other queries are safe alongside adds
 * (they see each add or not). The inline path at the end of this header
 * (8-byte keys) keeps every statement above: its
 * loads and stores are the library's.
 */
#ifndef BLOOMKIT_BLOOM_H
#define BLOOMKIT_BLOOM_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_bloom bk_bloom;

typedef enum bk_bloom_layout {
  BK_BLOOM_STANDARD = 0,
  BK_BLOOM_BLOCKED = 1,
  BK_BLOOM_SPLIT_BLOCK = 2,
} bk_bloom_layout;

/**
 * Filter configuration; zero fields mean "default".
 * Size it either by (capacity, fpp): m and k are then optimal for that
 * target (fpp 0 means 0.01); or by (m_bits, k): k 0 means the optimal k for
 * `capacity`, which must then be given. When both m_bits and capacity are
 * set, m_bits wins. A blocked filter rounds m up to a multiple of 512 bits,
 * a split-block one to a multiple of 256. Sized by (capacity, fpp), the
 * block layouts take the least whole number of blocks whose own rate
 * (bk_params_fpp_blocked, bk_params_fpp_split_block) meets fpp. A
 * split-block filter has k = 8 (k must be 0 or 8).
 */
typedef struct bk_bloom_config {
  uint64_t capacity; /**< expected distinct elements */
  double fpp;        /**< target false positive probability, in (0, 1) */
  uint64_t m_bits;   /**< explicit size in bits (overrides capacity) */
  unsigned k;        /**< explicit number of hash functions, 1..64 */
  bk_bloom_layout
      layout; /**< BK_BLOOM_STANDARD (default), BLOCKED, SPLIT_BLOCK */
  bk_hash_alg hash_alg;          /**< BK_HASH_XXH3 by default; XXH64 allowed */
  uint64_t seed;                 /**< hash seed (32 bits for Murmur3) */
  bool single_writer;            /**< one adding thread at a time (see above) */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_bloom_config;

/** What a filter is, for introspection (bk_bloom_info). */
typedef struct bk_bloom_info {
  uint64_t m_bits;
  unsigned k;
  bk_bloom_layout layout;
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t capacity; /**< capacity it was sized for (0 if sized by m, k) */
  size_t memory;     /**< bytes held, storage and bookkeeping */
} bk_bloom_info;

/**
 * Create an empty filter. Errors: BK_EINVAL (NULL argument; neither m_bits
 * nor capacity; fpp outside (0, 1) or NaN; k > 64, or not 0 or 8 for
 * split-block; m above 2^40 bits; unknown layout or hash; a fpp the block
 * layout cannot reach; Murmur3 seed above 32 bits; an allocator without
 * alloc/free), BK_ENOMEM. On error *out is untouched and nothing leaks.
 */
BK_API bk_status bk_bloom_create(bk_bloom **out, const bk_bloom_config *cfg);

/** Free the filter. NULL does nothing. */
BK_API void bk_bloom_destroy(bk_bloom *b);

/**
 * Hash a key with the filter's algorithm and seed, for the _hash variants:
 * hash once, probe many compatible filters. Errors: BK_EINVAL.
 */
BK_API bk_status bk_bloom_hash(const bk_bloom *b, const void *key, size_t len,
                               bk_hash *out);

/** Add a key (NULL key allowed when len == 0). Errors: BK_EINVAL. */
BK_API bk_status bk_bloom_add(bk_bloom *b, const void *key, size_t len);
BK_API bk_status bk_bloom_add_hash(bk_bloom *b, bk_hash h);

/**
 * *out = whether the key may be in the set (false: certainly not).
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_bloom_contains(const bk_bloom *b, const void *key,
                                   size_t len, bool *out);
BK_API bk_status bk_bloom_contains_hash(const bk_bloom *b, bk_hash h,
                                        bool *out);

/**
 * Batch lookups: out[i] = whether key i may be in the set, for i < n.
 * Keys are hashed and their cache lines prefetched a few keys ahead, so the
 * memory misses of a batch overlap: on a filter much larger than the cache
 * this is several times the throughput of n single calls. `lens[i]` is the
 * length of keys[i]. Every key is validated before any is probed; on error
 * *out is untouched. Errors: BK_EINVAL (NULL b/keys/lens/out with n > 0, a
 * NULL key with a nonzero length). Cost: O(n k).
 */
BK_API bk_status bk_bloom_contains_many(const bk_bloom *b,
                                        const void *const *keys,
                                        const size_t *lens, size_t n,
                                        bool *out);
/** bk_bloom_contains_many over precomputed digests. */
BK_API bk_status bk_bloom_contains_many_hash(const bk_bloom *b,
                                             const bk_hash *hashes, size_t n,
                                             bool *out);

/**
 * Batch adds, prefetched like bk_bloom_contains_many. Every key is validated
 * before any is added. Errors: BK_EINVAL. Cost: O(n k).
 */
BK_API bk_status bk_bloom_add_many(bk_bloom *b, const void *const *keys,
                                   const size_t *lens, size_t n);

/**
 * Add the key and report in *added whether it was new (not already
 * reported present). Linearizable among concurrent callers; see the file
 * comment. Errors: BK_EINVAL.
 */
BK_API bk_status bk_bloom_add_if_absent(bk_bloom *b, const void *key,
                                        size_t len, bool *added);
BK_API bk_status bk_bloom_add_if_absent_hash(bk_bloom *b, bk_hash h,
                                             bool *added);

/**
 * dst becomes the union of dst and src (a key added to either is in dst).
 * Errors: BK_EINVAL (NULL), BK_EMISMATCH (m, k, layout, hash or seed
 * differ). Cost: O(m / 64).
 */
BK_API bk_status bk_bloom_merge(bk_bloom *dst, const bk_bloom *src);

/**
 * dst becomes the bitwise intersection of dst and src: every key added to both
 * is still reported present, with a false positive rate at most that of
 * either. Errors as bk_bloom_merge.
 */
BK_API bk_status bk_bloom_intersect(bk_bloom *dst, const bk_bloom *src);

/**
 * Estimate of the number of distinct keys added (Swamidass & Baldi 2007):
 * n = -(m / k) ln(1 - X / m), X the number of set bits. A filter whose bits
 * are all set reports the estimate for m - 1/2 set bits.
 * Errors: BK_EINVAL. Cost: O(m / 64).
 */
BK_API bk_status bk_bloom_cardinality(const bk_bloom *b, double *out);

/**
 * Current false positive probability implied by the fill: (X / m)^k for the
 * standard layout; for the block layouts the mean over blocks of a probe's
 * chance in that block ((set / 512)^k; the product of the eight word fills).
 * Errors: BK_EINVAL. Cost: O(m / 64).
 */
BK_API bk_status bk_bloom_fill_fpp(const bk_bloom *b, double *out);

/** Describe the filter. Errors: BK_EINVAL. */
BK_API bk_status bk_bloom_info_get(const bk_bloom *b, bk_bloom_info *out);

/**
 * Switch between concurrent adds (false: the default, and what a loaded
 * filter starts with) and single_writer (true; see the file comment). Needs
 * exclusive access. Errors: BK_EINVAL.
 */
BK_API bk_status bk_bloom_set_single_writer(bk_bloom *b, bool single_writer);

/** Remove every key. Errors: BK_EINVAL. Cost: O(m / 8). */
BK_API bk_status bk_bloom_clear(bk_bloom *b);

/** Bytes bk_bloom_serialize() will write. Errors: BK_EINVAL. */
BK_API bk_status bk_bloom_serialized_size(const bk_bloom *b, size_t *out);

/**
 * Write the filter in the common serialized form. *written equals
 * bk_bloom_serialized_size(). Errors: BK_EINVAL (NULL argument, cap too small;
 * nothing is written then).
 */
BK_API bk_status bk_bloom_serialize(const bk_bloom *b, void *buf, size_t cap,
                                    size_t *written);

/**
 * Rebuild a filter from `len` bytes of hostile input: every length and field
 * is validated before use, the checksum is verified, and no allocation
 * exceeds what `len` describes. Errors: BK_EINVAL (NULL argument),
 * BK_ECORRUPT, BK_EVERSION, BK_ENOMEM. The caller owns *out.
 */
BK_API bk_status bk_bloom_deserialize(const void *buf, size_t len,
                                      const bk_allocator *allocator,
                                      bk_bloom **out);

/** Smallest and largest Parquet bloom filter bitset, in bytes (the
 * specification's limits: 32 bytes, one block, to 128 MiB). */
#define BK_PARQUET_BITSET_MIN 32u
#define BK_PARQUET_BITSET_MAX (128u * 1024u * 1024u)

/**
 * Make a filter from the raw bitset of an Apache Parquet column chunk's
 * bloom filter (the `numBytes` bytes after its BloomFilterHeader, which the
 * caller has read and checked: algorithm BLOCK, hash XXHASH, compression
 * UNCOMPRESSED). The result is a BK_BLOOM_SPLIT_BLOCK filter with
 * BK_HASH_XXH64 seed 0 and m = 8 len bits, answering exactly as the Parquet
 * reader would: hash a value as Parquet does (XXH64 of its plain encoding:
 * an INT64 as 8 little-endian bytes, a string as its bytes without length)
 * with bk_bloom_contains. Any bit pattern is accepted. Errors: BK_EINVAL
 * (NULL argument), BK_ECORRUPT (len not a power of two between
 * BK_PARQUET_BITSET_MIN and BK_PARQUET_BITSET_MAX), BK_ENOMEM. The caller
 * owns *out. Cost: O(len).
 */
BK_API bk_status bk_bloom_parquet_import(const void *bitset, size_t len,
                                         const bk_allocator *allocator,
                                         bk_bloom **out);

/**
 * Write the filter as a Parquet bloom filter bitset (m / 8 bytes, the
 * inverse of bk_bloom_parquet_import: an imported filter exports
 * byte-identical). The filter must be split-block with BK_HASH_XXH64 seed 0
 * and m / 8 a power of two in the Parquet limits (create it with such an
 * m_bits), else BK_EMISMATCH. Errors: BK_EINVAL (NULL argument, cap below
 * m / 8: nothing is written), BK_EMISMATCH.
 */
BK_API bk_status bk_bloom_parquet_export(const bk_bloom *b, void *buf,
                                         size_t cap, size_t *written);

/* ---- the inline path ------------------------------------------------------
 * bk_bloom_contains, and bk_bloom_add on a single_writer split-block filter,
 * are macros over the inline functions below: on an 8-byte key of a filter
 * hashed by XXH3 (the default) or XXH64 (Parquet's) they hash and probe in
 * the caller, with no call into the library, the same bits and answers as
 * the library's own path (which probes with the same functions; tests
 * compare them key by key); any other call goes to the library. The
 * library's functions stay exported under their names
 * ((bk_bloom_contains)(...) or a function pointer reaches them), and
 * defining BK_BLOOM_NO_INLINE before including this header turns the
 * macros off. Split-block filters are inline on x86 only in code built for
 * AVX2 (__AVX2__: -mavx2, -march=native), where the eight masks take one
 * vector multiply: built without it, inline code would compute them with
 * eight scalar multiplies, slower than the library's own call, which uses
 * AVX2 where the CPU has it (chosen at run time); elsewhere (ARM, ...) the
 * scalar form. BK_BLOOM_INLINE_SCALAR forces the scalar form (the tests use
 * it to cover it on x86). Standard and blocked filters are inline in every
 * build. Being function-like macros, the two names cannot be redeclared
 * after this header, and an argument with a bare comma (a compound literal
 * such as (uint64_t[]){1, 2}) needs parentheses; define BK_BLOOM_NO_INLINE
 * where that matters. C99 or later, or C++; GCC or Clang; a little-endian
 * target.
 *
 * ABI: bk__bloom_head is the first member of every bk_bloom, and code
 * compiled with this header reads it; changing it needs a soname bump
 * (docs/design/build.md, section 7). */
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
 * atomics there (here and in bloom.c). */
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

/* Standard layout: the k indices of enhanced double hashing over (h.lo,
 * mix64(h.hi)), range-reduced into m. The first two probes are tested
 * without a branch (at the design fill each is set with probability ~1/2,
 * so a branch on the first would mispredict half the time), then the
 * first clear bit ends it. */
static inline bool bk__bloom_std_test(const uint64_t *words, uint64_t m,
                                      unsigned k, bk_hash h) {
  uint64_t a = h.lo, s = bk__mix64(h.hi);
  uint64_t i0 = bk_reduce(a, m);
  a += s;
  s += 1;
  uint64_t all =
      __atomic_load_n(&words[i0 >> 6], __ATOMIC_RELAXED) >> (i0 & 63);
  if (k > 1) {
    uint64_t i1 = bk_reduce(a, m);
    a += s;
    s += 2;
    all &= __atomic_load_n(&words[i1 >> 6], __ATOMIC_RELAXED) >> (i1 & 63);
  }
  if (!(all & 1)) return false;
  for (unsigned i = 2; i < k; i++) {
    uint64_t idx = bk_reduce(a, m);
    if (!((__atomic_load_n(&words[idx >> 6], __ATOMIC_RELAXED) >> (idx & 63)) &
          1))
      return false;
    a += s;
    s += i + 1;
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

#if defined(BK__BLOOM_PROBES) && !defined(BK_BLOOM_NO_INLINE) && \
    !defined(BK__BUILDING_BLOOM) && defined(__BYTE_ORDER__) &&   \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BK_BLOOM_INLINE 1
#if defined(__AVX2__) || defined(BK_BLOOM_INLINE_SCALAR) || \
    !(defined(__x86_64__) || defined(__i386__))
#define BK__BLOOM_INLINE_SPLIT 1
#endif
#if defined(__AVX2__) && defined(BK__BLOOM_INLINE_SPLIT)
#include <immintrin.h>
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
  bk__u128 m = (bk__u128)(x ^ hash_k) * UINT64_C(0x9E3779B185EBCAA7);
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
#endif

#ifdef __cplusplus
}
#endif

#endif
