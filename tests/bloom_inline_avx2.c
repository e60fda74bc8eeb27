/* SPDX-License-Identifier: MIT */
/*
 * The header's inline bk_bloom_contains and bk_bloom_add as code built with
 * -mavx2 gets them (bloom_inline.h's vector masks, 32-byte load and store);
 * test_bloom_split compares their bits and answers with the library's, on
 * CPUs that have AVX2. Its own file, built with -mavx2 alone, so no other
 * test code can use AVX2 before the CPU check.
 */
#include "bloomkit/bloom_inline.h"

#if !defined(BK_BLOOM_INLINE) || !defined(__AVX2__)
#error "built with -mavx2 and the inline path (tests/CMakeLists.txt)"
#endif

#include "bloom_inline_avx2.h"

bk_status bk_test_inline_contains_avx2(const bk_bloom *b, const uint64_t *keys,
                                       size_t n, bool *out) {
  for (size_t i = 0; i < n; i++) {
    bk_status s = bk_bloom_contains(b, &keys[i], 8, &out[i]);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

bk_status bk_test_inline_add_avx2(bk_bloom *b, const uint64_t *keys, size_t n) {
  for (size_t i = 0; i < n; i++) {
    bk_status s = bk_bloom_add(b, &keys[i], 8);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}
