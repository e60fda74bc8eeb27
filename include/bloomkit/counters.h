/* SPDX-License-Identifier: MIT */
/*
 * bk_counters: an array of unsigned counters packed at 4, 8, 16 or 32 bits
 * each, on 64-byte aligned storage. The substrate of the counting filters and
 * of the kBF's cell counters.
 *
 * Saturation: a counter that reaches its maximum (2^width - 1) by an increment
 * or an add-merge is saturated; it stays at the maximum from then on, because
 * its true count is no longer known: further increments AND decrements leave
 * it there and report BK_ESATURATED. Decrementing a zero counter leaves it at
 * zero and reports BK_EUNDERFLOW.
 *
 * Thread safety: bk_counters_atomic_inc / bk_counters_atomic_dec are atomic
 * and may run concurrently with each other and with bk_counters_get. Every
 * other mutator needs exclusive access to the array.
 */
#ifndef BLOOMKIT_COUNTERS_H
#define BLOOMKIT_COUNTERS_H

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_counters bk_counters;

/** Largest counter array: 2^36 counters. */
#define BK_COUNTERS_MAX ((uint64_t)1 << 36)

/**
 * Create `n` zero counters of `width` bits (4, 8, 16 or 32; 0 means 4).
 * Errors: BK_EINVAL (NULL out, n == 0 or > BK_COUNTERS_MAX, another width, a
 * bad allocator), BK_ENOMEM.
 */
BK_API bk_status bk_counters_create(bk_counters **out, uint64_t n,
                                    unsigned width,
                                    const bk_allocator *allocator);

/** Free the array. NULL does nothing. */
BK_API void bk_counters_destroy(bk_counters *c);

/** Number of counters; 0 for NULL. */
BK_API uint64_t bk_counters_size(const bk_counters *c);

/** Width of each counter in bits; 0 for NULL. */
BK_API unsigned bk_counters_width(const bk_counters *c);

/** Largest value a counter holds (2^width - 1); 0 for NULL. */
BK_API uint32_t bk_counters_max(const bk_counters *c);

/** Bytes of memory the array holds (storage plus the object). */
BK_API size_t bk_counters_memory(const bk_counters *c);

/** Read counter `i`. Errors: BK_EINVAL (NULL, i out of range). */
BK_API bk_status bk_counters_get(const bk_counters *c, uint64_t i,
                                 uint32_t *out);

/**
 * Set counter `i` to `value`. Errors: BK_EINVAL (NULL, i out of range),
 * BK_ERANGE (value > max; the counter is unchanged).
 */
BK_API bk_status bk_counters_set(bk_counters *c, uint64_t i, uint32_t value);

/**
 * Saturating increment of counter `i`; *new_value (may be NULL) receives the
 * value after the call. Returns BK_ESATURATED when the counter is (now or
 * already) at its maximum, BK_EINVAL for NULL or i out of range.
 */
BK_API bk_status bk_counters_inc(bk_counters *c, uint64_t i,
                                 uint32_t *new_value);

/**
 * Decrement counter `i`; *new_value (may be NULL) receives the value after the
 * call. Returns BK_ESATURATED when the counter is saturated (it is left at the
 * maximum), BK_EUNDERFLOW when it is zero (left at zero), BK_EINVAL for NULL
 * or i out of range.
 */
BK_API bk_status bk_counters_dec(bk_counters *c, uint64_t i,
                                 uint32_t *new_value);

/**
 * As bk_counters_inc, but atomic: concurrent atomic increments and decrements
 * of any counters never lose an update. All widths are supported (4-bit
 * counters through a compare-and-swap on their byte).
 */
BK_API bk_status bk_counters_atomic_inc(bk_counters *c, uint64_t i,
                                        uint32_t *new_value);

/** As bk_counters_dec, but atomic (see bk_counters_atomic_inc). */
BK_API bk_status bk_counters_atomic_dec(bk_counters *c, uint64_t i,
                                        uint32_t *new_value);

/**
 * dst[i] = max(dst[i], src[i]) for every i. Errors: BK_EINVAL (NULL),
 * BK_EMISMATCH (size or width differ). Cost: O(n).
 */
BK_API bk_status bk_counters_max_merge(bk_counters *dst,
                                       const bk_counters *src);

/**
 * dst[i] = min(dst[i] + src[i], max) for every i. Returns BK_ESATURATED when
 * at least one counter saturated (the merge is still complete), BK_EINVAL
 * (NULL), BK_EMISMATCH (size or width differ). Cost: O(n).
 */
BK_API bk_status bk_counters_add_merge(bk_counters *dst,
                                       const bk_counters *src);

/** Set every counter to zero. Errors: BK_EINVAL (NULL). */
BK_API bk_status bk_counters_clear_all(bk_counters *c);

/** Bytes bk_counters_serialize() will write. Errors: BK_EINVAL (NULL). */
BK_API bk_status bk_counters_serialized_size(const bk_counters *c, size_t *out);

/**
 * Write the array in the common serialized form. Errors: BK_EINVAL (NULL
 * argument or cap too small; nothing is written).
 */
BK_API bk_status bk_counters_serialize(const bk_counters *c, void *buf,
                                       size_t cap, size_t *written);

/**
 * Rebuild an array from `len` bytes, validating every field first.
 * Errors: BK_EINVAL (NULL argument), BK_ECORRUPT, BK_EVERSION, BK_ENOMEM.
 * The caller owns *out.
 */
BK_API bk_status bk_counters_deserialize(const void *buf, size_t len,
                                         const bk_allocator *allocator,
                                         bk_counters **out);

#ifdef __cplusplus
}
#endif

#endif
