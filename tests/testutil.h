/* SPDX-License-Identifier: MIT */
/*
 * Shared test helpers: a counting allocator that can fail its Nth call (for
 * OOM injection and leak checks), a seeded PRNG, and cmocka conveniences.
 */
#ifndef BLOOMKIT_TESTS_TESTUTIL_H
#define BLOOMKIT_TESTS_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the three headers above first. */
#include <cmocka.h>

#include "bloomkit/common.h"

/* Counting allocator. fail_at == 0 never fails; fail_at == N fails the Nth
 * call of alloc/realloc (1-based) and every later one while fail_sticky. */
typedef struct bk_test_alloc {
  size_t fail_at;
  bool fail_sticky;
  size_t calls;      /* alloc + realloc calls so far */
  size_t live;       /* blocks allocated and not yet freed */
  size_t live_bytes; /* bytes in those blocks */
  size_t peak_bytes;
} bk_test_alloc;

/* An allocator bound to `state` (reset to zero counts, given fail_at). */
bk_allocator bk_test_allocator(bk_test_alloc *state, size_t fail_at);

/* splitmix64: the seeded generator every test uses. */
static inline uint64_t bk_test_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Seed from BK_TEST_SEED if set, else `fallback`; printed once either way so
 * a failing run can be reproduced. */
uint64_t bk_test_seed(uint64_t fallback);

/* Rewrite a serialized blob's XXH3-64 trailer after a test edited it, so
 * the edit reaches the field validation behind the checksum. len >= 8. */
void bk_test_reseal(unsigned char *blob, size_t len);

/* Sanitizer and unoptimised builds run the heavy tests with less work. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    !defined(__OPTIMIZE__)
#define BK_TEST_SLOW_BUILD 1
#else
#define BK_TEST_SLOW_BUILD 0
#endif

#define assert_bk_ok(expr) assert_int_equal((expr), BK_OK)
#define assert_bk_status(expr, st) assert_int_equal((expr), (st))

#endif
