/* SPDX-License-Identifier: MIT */
/*
 * bk_bits: a fixed-size array of bits on 64-byte aligned storage (2 MiB
 * aligned and backed by transparent huge pages when it is large and no custom
 * allocator is given). The building block of every filter in bloomkit.
 *
 * Thread safety: bk_bits_test, bk_bits_set, bk_bits_test_and_set and
 * bk_bits_clear are atomic per bit and may run concurrently with one another
 * on the same array. Whole-array operations (popcount, union, intersect,
 * clear_all, serialize) are not atomic as a whole: a concurrent single-bit
 * update is either seen or not, never corrupted.
 */
#ifndef BLOOMKIT_BITS_H
#define BLOOMKIT_BITS_H

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_bits bk_bits;

/** Largest bit array bloomkit creates: 2^40 bits (128 GiB). */
#define BK_BITS_MAX ((uint64_t)1 << 40)

/**
 * Create an array of `n_bits` zero bits. `allocator` may be NULL (libc).
 * Errors: BK_EINVAL (NULL out, n_bits == 0 or > BK_BITS_MAX, an allocator
 * without alloc/free), BK_ENOMEM. On error *out is left untouched.
 * Cost: O(n_bits / 8) zeroed bytes (lazy for large arrays from the OS).
 */
BK_API bk_status bk_bits_create(bk_bits **out, uint64_t n_bits,
                                const bk_allocator *allocator);

/** Free the array. NULL does nothing. */
BK_API void bk_bits_destroy(bk_bits *bits);

/** Number of bits the array holds. 0 for NULL. */
BK_API uint64_t bk_bits_size(const bk_bits *bits);

/** Bytes of memory the array holds (storage plus the object). */
BK_API size_t bk_bits_memory(const bk_bits *bits);

/** Set bit `index`. Errors: BK_EINVAL (NULL, index out of range). */
BK_API bk_status bk_bits_set(bk_bits *bits, uint64_t index);

/** Clear bit `index`. Errors: BK_EINVAL (NULL, index out of range). */
BK_API bk_status bk_bits_clear(bk_bits *bits, uint64_t index);

/**
 * Read bit `index` into *out. Errors: BK_EINVAL (NULL argument, index out of
 * range).
 */
BK_API bk_status bk_bits_test(const bk_bits *bits, uint64_t index, bool *out);

/**
 * Atomically set bit `index` and report in *was_set whether it was already
 * set. Of several threads setting the same clear bit at once, exactly one sees
 * *was_set == false. Errors: BK_EINVAL (NULL argument, index out of range).
 */
BK_API bk_status bk_bits_test_and_set(bk_bits *bits, uint64_t index,
                                      bool *was_set);

/** Number of set bits. Errors: BK_EINVAL (NULL). Cost: O(n_bits / 64). */
BK_API bk_status bk_bits_popcount(const bk_bits *bits, uint64_t *out);

/** Clear every bit. Errors: BK_EINVAL (NULL). Cost: O(n_bits / 8). */
BK_API bk_status bk_bits_clear_all(bk_bits *bits);

/**
 * dst |= src, bit by bit. Errors: BK_EINVAL (NULL), BK_EMISMATCH (sizes
 * differ). Cost: O(n_bits / 64).
 */
BK_API bk_status bk_bits_union(bk_bits *dst, const bk_bits *src);

/**
 * dst &= src, bit by bit. Errors: BK_EINVAL (NULL), BK_EMISMATCH (sizes
 * differ). Cost: O(n_bits / 64).
 */
BK_API bk_status bk_bits_intersect(bk_bits *dst, const bk_bits *src);

/** Bytes bk_bits_serialize() will write. Errors: BK_EINVAL (NULL). */
BK_API bk_status bk_bits_serialized_size(const bk_bits *bits, size_t *out);

/**
 * Write the array in the common serialized form (see docs/design/format.md)
 * into `buf` of `cap` bytes; *written receives the byte count, equal to
 * bk_bits_serialized_size(). Errors: BK_EINVAL (NULL argument, cap too small;
 * nothing is written then).
 */
BK_API bk_status bk_bits_serialize(const bk_bits *bits, void *buf, size_t cap,
                                   size_t *written);

/**
 * Rebuild an array from `len` bytes. Every field is checked before it is
 * trusted; the allocation never exceeds what `len` can describe.
 * Errors: BK_EINVAL (NULL argument), BK_ECORRUPT (truncated, bad magic, bad
 * checksum, inconsistent lengths, stray bits past n_bits), BK_EVERSION
 * (unknown format version), BK_ENOMEM. The caller owns *out.
 */
BK_API bk_status bk_bits_deserialize(const void *buf, size_t len,
                                     const bk_allocator *allocator,
                                     bk_bits **out);

#ifdef __cplusplus
}
#endif

#endif
