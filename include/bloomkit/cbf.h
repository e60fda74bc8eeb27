/* SPDX-License-Identifier: MIT */
/*
 * bk_cbf: the counting Bloom filter (Fan, Cao, Almeida & Broder 2000), and
 * bk_scbf: a scalable counting filter in the spirit of bitly's dablooms
 * (a list of counting filters that grows, each owning a range of caller
 * ids, optionally kept in a memory-mapped file).
 *
 * A counting filter keeps m counters of 4 (default), 8, 16 or 32 bits in
 * place of bits; an add increments the key's k counters, a remove
 * decrements them, so keys can be deleted. Two layouts, as bk_bloom:
 *
 *   BK_BLOOM_STANDARD  k counters anywhere in m: the textbook rate.
 *   BK_BLOOM_BLOCKED   all k counters inside one 64-byte block (512 / width
 *                      counters): one cache miss per operation, a somewhat
 *                      higher rate for the same m (sizing accounts for it).
 *
 * Saturation: a counter at its maximum (15 for 4 bits) stays there; adds
 * do not move it and removes never decrement it. So no sequence of adds
 * and removes of keys that were added can make a false negative (dablooms
 * let a counter at 15 ignore adds and then decrement it). The cost: a
 * saturated counter never returns to zero; info reports how many there are.
 *
 * Thread safety (as bk_bloom): add, remove and contains/count (and their
 * _hash and batch forms) may run concurrently from any number of threads;
 * each counter update is one atomic read-modify-write (a compare-and-swap
 * on the counter's word), and a reader sees each counter before or after
 * an update, never torn. With `single_writer` set, at most one thread may
 * add or remove at a time (any number may still read beside it): updates
 * are then plain loads and atomic stores of the word, without the locked
 * instruction, which is most of an add's cost when the counters are in
 * cache (the dablooms model: one writer). A contains running
 * beside a remove of the same key may see it either way. merge, clear and
 * deserialize need exclusive access to their destination; info and
 * serialize are safe beside updates (a snapshot of each counter, not of
 * the whole filter at one instant).
 */
#ifndef BLOOMKIT_CBF_H
#define BLOOMKIT_CBF_H

#include "bloomkit/bloom.h"
#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_cbf bk_cbf;

/**
 * Size by (capacity, fpp) — m and, unless given, k chosen so `capacity`
 * keys stay at fpp (blocked: with the blocked layout's own rate) — or by
 * explicit (m_counters, k). Zero fields mean "default".
 */
typedef struct bk_cbf_config {
  uint64_t capacity;      /**< expected keys present at once */
  double fpp;             /**< target false positive probability; 0.01 */
  uint64_t m_counters;    /**< explicit counter count (k then required) */
  unsigned k;             /**< hash functions, 1..64 */
  unsigned counter_bits;  /**< 4 (default), 8, 16 or 32 */
  bk_bloom_layout layout; /**< BK_BLOOM_STANDARD (default) or BLOCKED */
  bk_hash_alg hash_alg;   /**< BK_HASH_XXH3 by default */
  uint64_t seed;          /**< hash seed (32 bits for Murmur3) */
  bool single_writer;     /**< one updating thread at a time (see above) */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_cbf_config;

typedef struct bk_cbf_info {
  uint64_t m_counters; /**< after rounding (blocked: whole blocks) */
  unsigned k;
  unsigned counter_bits;
  bk_bloom_layout layout;
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t capacity;  /**< what it was sized for (0 if by m, k) */
  uint64_t nonzero;   /**< counters above zero */
  uint64_t saturated; /**< counters stuck at their maximum */
  double fill_fpp;    /**< rate from the share of nonzero counters */
  size_t memory;      /**< bytes held */
} bk_cbf_info;

/** Create an empty filter. Errors: BK_EINVAL (bad config), BK_ENOMEM. */
BK_API bk_status bk_cbf_create(bk_cbf **out, const bk_cbf_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_cbf_destroy(bk_cbf *f);
/** The filter's digest of a key, for the _hash forms. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_hash(const bk_cbf *f, const void *key, size_t len,
                             bk_hash *out);

/** Increment the key's counters (saturated ones stay). Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_add(bk_cbf *f, const void *key, size_t len);
BK_API bk_status bk_cbf_add_hash(bk_cbf *f, bk_hash h);

/**
 * Decrement the key's counters (saturated ones stay). If any of them is
 * zero the key cannot have been added: nothing changes and the result is
 * BK_ENOTFOUND. Errors: BK_EINVAL, BK_ENOTFOUND.
 */
BK_API bk_status bk_cbf_remove(bk_cbf *f, const void *key, size_t len);
BK_API bk_status bk_cbf_remove_hash(bk_cbf *f, bk_hash h);

/** *out = whether the key may be present (all k counters nonzero). */
BK_API bk_status bk_cbf_contains(const bk_cbf *f, const void *key, size_t len,
                                 bool *out);
BK_API bk_status bk_cbf_contains_hash(const bk_cbf *f, bk_hash h, bool *out);

/**
 * *out = the smallest of the key's counters: an upper bound on how many
 * times it was added and not removed (UINT32_MAX-capped; a saturated
 * counter reports its maximum). Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_count(const bk_cbf *f, const void *key, size_t len,
                              uint32_t *out);
BK_API bk_status bk_cbf_count_hash(const bk_cbf *f, bk_hash h, uint32_t *out);

/**
 * Batches, prefetched a few keys ahead so the cache misses of a batch
 * overlap. Every key is validated before any is used. remove_many stops at
 * nothing: *removed (may be NULL) counts the keys removed, the others were
 * absent. Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_add_many(bk_cbf *f, const void *const *keys,
                                 const size_t *lens, size_t n);
BK_API bk_status bk_cbf_remove_many(bk_cbf *f, const void *const *keys,
                                    const size_t *lens, size_t n,
                                    size_t *removed);
BK_API bk_status bk_cbf_contains_many(const bk_cbf *f, const void *const *keys,
                                      const size_t *lens, size_t n, bool *out);
BK_API bk_status bk_cbf_contains_many_hash(const bk_cbf *f,
                                           const bk_hash *hashes, size_t n,
                                           bool *out);

/**
 * dst += src counter by counter, saturating (a saturated counter in either
 * stays saturated). Errors: BK_EINVAL, BK_EMISMATCH (different m, k,
 * width, layout, hash or seed).
 */
BK_API bk_status bk_cbf_merge(bk_cbf *dst, const bk_cbf *src);
/**
 * Switch between concurrent updates (false, the default, and what a loaded
 * filter starts with) and single_writer (true). Needs exclusive access.
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_set_single_writer(bk_cbf *f, bool single_writer);
/** Zero every counter. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_clear(bk_cbf *f);
/** Parameters, fill and saturation; O(m). Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_info_get(const bk_cbf *f, bk_cbf_info *out);

/** Bytes bk_cbf_serialize will write. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_serialized_size(const bk_cbf *f, size_t *out);
/** Errors: BK_EINVAL (NULL, cap too small: nothing written). */
BK_API bk_status bk_cbf_serialize(const bk_cbf *f, void *buf, size_t cap,
                                  size_t *written);
/**
 * Load a serialized filter (docs/design.md, "cbf"). Every byte is treated as
 * hostile. Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION, BK_ENOMEM; on error
 * *out is untouched and nothing leaks.
 */
BK_API bk_status bk_cbf_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_cbf **out);

#ifdef __cplusplus
}
#endif

#endif
