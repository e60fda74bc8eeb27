/* SPDX-License-Identifier: MIT */
#ifndef BK_TEST_BLOOM_INLINE_AVX2_H
#define BK_TEST_BLOOM_INLINE_AVX2_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bloomkit/bloom_inline.h"

/* out[i] = bk_bloom_contains(b, &keys[i], 8) through the inline path built
 * with -mavx2 (tests/bloom_inline_avx2.c); call it only where the CPU has
 * AVX2. */
bk_status bk_test_inline_contains_avx2(const bk_bloom *b, const uint64_t *keys,
                                       size_t n, bool *out);
/* bk_bloom_add(b, &keys[i], 8) for i < n, the same way. */
bk_status bk_test_inline_add_avx2(bk_bloom *b, const uint64_t *keys, size_t n);
#endif
