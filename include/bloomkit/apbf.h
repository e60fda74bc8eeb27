/* SPDX-License-Identifier: MIT */
/*
 * bk_apbf: the Age-Partitioned Bloom Filter (A. Shtul, C. Baquero, P. S.
 * Almeida, "Age-Partitioned Bloom Filters", 2020), the FBF's sliding-window
 * rival. k + l slices of m bits each, logically ordered youngest (0) to
 * oldest (k + l - 1); slice s uses its own position of the key (the s-th of
 * the standard probe sequence over the key's digest). An insert sets the
 * key's bit in slices 0 .. k - 1; a key is present when k consecutive slices
 * hold its bits. A shift drops the oldest slice, clears it and makes it the
 * new slice 0, so every slice ages by one place:
 *   - count-based: a shift every g inserts (a generation), lazily, by the
 *     insert that finds the generation full;
 *   - time-based: a shift every `period` of the caller's clock
 *     (bk_apbf_advance(f, now), as bk_fbf's clock).
 * Slices are sized m = k g / ln 2 so that a slice leaving the insert region
 * (after k generations) is half full (paper Sec. 4).
 *
 * Window. An element survives exactly l shifts after its own generation:
 * count-based, the last l g + 1 inserts are always present (up to
 * (l + 1) g, just before a shift); time-based with window T, period
 * ceil(T / l), an element is present at least T and at most
 * T + period after its insert. (The paper's accounting quotes (l + 1) g;
 * docs/design/fbf.md, "APBF errata", derives why only l g + 1 is
 * guaranteed.)
 *
 * Thread safety (the FBF's contract): add, add_if_absent, contains (and
 * _hash and batch forms), contains_at, info_get and serialize may run
 * concurrently from any number of threads, and with one thread in
 * bk_apbf_advance. A shift (by an insert or by advance) is atomic for them:
 * no check sees a half-cleared slice and no completed insert is lost by it.
 * add_if_absent is linearizable: of several threads inserting the same new
 * id at once, exactly one is told it was new. With `single_writer` set,
 * at most one thread at a time may insert or advance; lookups stay
 * concurrent. create/destroy/deserialize need exclusive access.
 */
#ifndef BLOOMKIT_APBF_H
#define BLOOMKIT_APBF_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_apbf bk_apbf;

/** Most slices a key must hit in a row (k). */
#define BK_APBF_MAX_K 32u
/** Most slices in all (k + l). */
#define BK_APBF_MAX_SLICES 255u
/** Most inserts per generation (g). */
#define BK_APBF_MAX_GENERATION (((uint64_t)1 << 31) - 1)

/**
 * Configuration; zero fields mean "default" or "derived".
 *
 * Shape: k and l explicit (both or neither), or both 0 with `fpp`: the
 * (k, l), l <= 3 k, of fewest bits per window item whose rate
 * (bk_apbf_fpp_formula) is at most fpp (at 1 %: (10, 25); past l = 3 k a
 * miss probes many more slices for a few bits less).
 *
 * Count-based (window == 0): `generation` g explicit, or `capacity` = the
 * number of most recent inserts that must always be found, giving
 * g = max(1, ceil((capacity - 1) / l)).
 *
 * Time-based (window > 0): the caller's clock; a shift every
 * period = ceil(window / l), so every element is kept at least `window`.
 * `capacity` (or `generation`) is then the inserts expected per window
 * (per period), which sizes the slices; more inserts than that only raise
 * the false positive rate.
 */
typedef struct bk_apbf_config {
  unsigned k;          /**< 1..BK_APBF_MAX_K, or 0 with l 0: from fpp */
  unsigned l;          /**< >= 1, k + l <= BK_APBF_MAX_SLICES */
  uint64_t capacity;   /**< window in inserts (count) / inserts per window */
  uint64_t generation; /**< g, instead of capacity */
  double fpp;          /**< target when k and l are 0; default 0.01 */
  uint64_t window;     /**< time-based: window in caller units; 0: count */
  uint64_t start_time; /**< the caller's clock at creation (time-based) */
  uint64_t m_bits;     /**< bits per slice; 0: ceil(k g / ln 2) */
  /** At most one thread at a time inserts (lookups may still run
   * concurrently with it): inserts then take no key lock and set bits with
   * plain stores. Not saved in the blob. */
  bool single_writer;
  bk_hash_alg hash_alg; /**< default XXH3 */
  uint64_t seed;
  const bk_allocator *allocator; /**< NULL: libc */
} bk_apbf_config;

/**
 * Create an APBF. Errors: BK_EINVAL (NULL argument; k or l 0 alone, k over
 * BK_APBF_MAX_K, l 0, k + l over BK_APBF_MAX_SLICES; neither capacity nor
 * generation, or g over BK_APBF_MAX_GENERATION; fpp outside (0, 1) or
 * below what any (k, l) within the limits reaches; slices over 2^40 bits in
 * all; a window whose period overflows; bad hash or allocator), BK_ENOMEM.
 */
BK_API bk_status bk_apbf_create(bk_apbf **out, const bk_apbf_config *cfg);

/** Free. NULL does nothing. */
BK_API void bk_apbf_destroy(bk_apbf *f);

/** Hash a key with the APBF's algorithm and seed. Errors: BK_EINVAL. */
BK_API bk_status bk_apbf_hash(const bk_apbf *f, const void *key, size_t len,
                              bk_hash *out);

/**
 * Insert: the key's bits in slices 0 .. k - 1, counted in the generation
 * (count-based: the insert that finds the generation full shifts first).
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_apbf_add(bk_apbf *f, const void *key, size_t len);
BK_API bk_status bk_apbf_add_hash(bk_apbf *f, bk_hash h);

/**
 * Check and insert as one linearizable step: *added = true when the key
 * was not found (k slices in a row) and has been inserted. A key found is
 * not inserted again, so its window runs from its first insert (the
 * paper's duplicate detection). Errors: BK_EINVAL.
 */
BK_API bk_status bk_apbf_add_if_absent(bk_apbf *f, const void *key, size_t len,
                                       bool *added);
BK_API bk_status bk_apbf_add_if_absent_hash(bk_apbf *f, bk_hash h, bool *added);

/** Membership: k consecutive slices hold the key. Errors: BK_EINVAL. */
BK_API bk_status bk_apbf_contains(const bk_apbf *f, const void *key, size_t len,
                                  bool *out);
BK_API bk_status bk_apbf_contains_hash(const bk_apbf *f, bk_hash h, bool *out);

/**
 * Membership as of `now` without changing anything: the answer
 * bk_apbf_contains would give after bk_apbf_advance(f, now) (the slices
 * the due shifts would drop are left out of the search). A count-based
 * APBF, or `now` at or before the filter's clock, answers as contains.
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_apbf_contains_at(const bk_apbf *f, const void *key,
                                     size_t len, uint64_t now, bool *out);
BK_API bk_status bk_apbf_contains_at_hash(const bk_apbf *f, bk_hash h,
                                          uint64_t now, bool *out);

/**
 * Batches, key by key in order, each as the single-key call (a shift may
 * fall between two keys), with the words of the keys a few places ahead
 * prefetched so their cache misses overlap. Every key is validated before any
 * is used. Errors: BK_EINVAL (NULL f; NULL keys, lens, out or added with n > 0;
 * a NULL key with a length; a Murmur3 key over 2^31 - 1 bytes). Cost: O(n k).
 */
BK_API bk_status bk_apbf_contains_many(const bk_apbf *f,
                                       const void *const *keys,
                                       const size_t *lens, size_t n, bool *out);
BK_API bk_status bk_apbf_add_many(bk_apbf *f, const void *const *keys,
                                  const size_t *lens, size_t n);
BK_API bk_status bk_apbf_add_if_absent_many(bk_apbf *f, const void *const *keys,
                                            const size_t *lens, size_t n,
                                            bool *added);

/**
 * Time-based: perform the shifts due by `now` (one per period). Count-based:
 * only records the clock. Errors: BK_EINVAL (NULL, `now` earlier than a
 * time already seen). Cost: min(shifts due, k + l) slice clears, O(m / 64)
 * each.
 */
BK_API bk_status bk_apbf_advance(bk_apbf *f, uint64_t now);

/**
 * The paper's false positive rate of a (k, l) APBF: the chance that k
 * consecutive slices of k + l hold a key's bits, with slice i (0 youngest)
 * filled (i + 1) / 2k for i < k and 1/2 beyond (the recursion of the
 * paper's Sec. 5). It is close to the rate averaged over a generation; at
 * the end of a generation the rate is higher (up to ~15 %, see
 * bk_apbf_estimated_fpp and docs/design/fbf.md). Errors: BK_EINVAL (NULL,
 * k 0 or over the limit, l 0, k + l over the limit).
 */
BK_API bk_status bk_apbf_fpp_formula(unsigned k, unsigned l, double *out);

/**
 * Sizing by memory: the (k, l), l <= 3 k, k + l <= 128, of lowest rate
 * for a window of
 * `window` items (or, time-based, items per window) at `bits_per_item`
 * bits per window item: slices of floor(bits_per_item window / (k + l))
 * bits, g = ceil((window - 1) / l). The rate compared (and returned in
 * *fpp) is the run probability with each slice filled as at the middle of
 * a generation, 1 - e^{-min(i + 1/2, k) g / m}, close to the rate averaged
 * over a generation. Configure the result as {k, l, generation = g,
 * m_bits}. Errors: BK_EINVAL (NULL out, window 0 or over 2^40,
 * bits_per_item not in [1, 1024], no slice of at least one bit). Cost:
 * about 2000 small dynamic programs (milliseconds).
 */
BK_API bk_status bk_apbf_shape_for_bits(uint64_t window, double bits_per_item,
                                        unsigned *k, unsigned *l, double *fpp);

/**
 * The rate of the current state: the same run probability with each
 * slice's fill 1 - (1 - 1/m)^{n_i}, n_i the inserts it received
 * (count-based; time-based, `capacity` per period assumed). Errors:
 * BK_EINVAL.
 */
BK_API bk_status bk_apbf_estimated_fpp(const bk_apbf *f, double *out);

/** A snapshot of an APBF's shape and state. */
typedef struct bk_apbf_info {
  unsigned k, l;
  uint64_t m_bits;        /**< bits per slice */
  uint64_t generation;    /**< g (count-based), or inserts per period sized */
  uint64_t period;        /**< time-based shift period; 0 count-based */
  uint64_t window_min;    /**< count: l g + 1 inserts; time: l period */
  uint64_t window_max;    /**< count: (l + 1) g; time: (l + 1) period */
  uint64_t in_generation; /**< inserts in the current generation */
  uint64_t shifts;        /**< shifts so far */
  uint64_t inserted;      /**< inserts the slices hold (all generations
                               still in the window) */
  uint64_t now;           /**< latest time seen (time-based) */
  size_t memory;          /**< bytes held */
  bool time_based;
  bool single_writer;
} bk_apbf_info;

/** Describe the APBF. Errors: BK_EINVAL. */
BK_API bk_status bk_apbf_info_get(const bk_apbf *f, bk_apbf_info *out);

/** Bytes bk_apbf_serialize() will write. Errors: BK_EINVAL. */
BK_API bk_status bk_apbf_serialized_size(const bk_apbf *f, size_t *out);

/**
 * Save the whole state (shape, clock, generation, slices) in the common
 * serialized form. Safe concurrently with every other call (it holds the
 * APBF's mutex, so no shift runs; inserts in flight land in the blob or
 * not). Errors: BK_EINVAL (NULL, cap too small).
 */
BK_API bk_status bk_apbf_serialize(const bk_apbf *f, void *buf, size_t cap,
                                   size_t *written);

/**
 * Restore an APBF from hostile bytes: every field is checked, and only a
 * state create, inserts and shifts could have produced is accepted.
 * Errors: BK_EINVAL (NULL), BK_ECORRUPT, BK_EVERSION, BK_ENOMEM.
 */
BK_API bk_status bk_apbf_deserialize(const void *buf, size_t len,
                                     const bk_allocator *allocator,
                                     bk_apbf **out);

#ifdef __cplusplus
}
#endif

#endif
