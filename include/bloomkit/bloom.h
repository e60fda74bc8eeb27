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
 * (they see each add or not).
 *
 * This header declares the API. bloomkit/bloom_inline.h, an opt-in,
 * makes bk_bloom_contains (and bk_bloom_add on a single_writer
 * split-block filter) inline for 8-byte keys; it keeps every statement
 * above (its loads and stores are the library's) and says what it costs.
 */
#ifndef BLOOMKIT_BLOOM_H
#define BLOOMKIT_BLOOM_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"
#include "bloomkit/params.h" /* bk_bloom_layout */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_bloom bk_bloom;

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

#ifdef __cplusplus
}
#endif

#endif
