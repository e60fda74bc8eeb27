/* SPDX-License-Identifier: MIT */
/*
 * What the bloom test programs (tests/test_bloom_*.c) share: the seed, the
 * make / add / contains / blob one-liners that fail the test on any error,
 * and the field offsets of the serialized form for tests that read or craft
 * blobs.
 */
#ifndef BLOOMKIT_TESTS_BLOOM_HELPERS_H
#define BLOOMKIT_TESTS_BLOOM_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

/* The programs test the library's entry points: the header's inline path
 * (test_bloom_split covers it) is off wherever this header comes first. */
#define BK_BLOOM_NO_INLINE 1
#include "bloomkit/bloom.h"
#ifdef BK_BLOOM_INLINE
#error "the bloom tests test the library's entry points: the inline path is off"
#endif
#include "bloomkit/hash.h"

/* Field offsets of the bloom serialized form (type 3, version 1): the
 * common prefix, then m_bits, capacity, layout, hash_alg, k, reserved
 * bytes, seed, and from HDR_LEN the ceil(m / 64) little-endian payload
 * words before the XXH3-64 trailer. The format is described once, beside
 * the code that writes it (bk_bloom_serialize in src/core/). */
enum {
  OFF_VERSION = 4,
  OFF_TYPE = 6,
  OFF_HLEN = 8,
  OFF_PRES = 12,
  OFF_PLEN = 16,
  OFF_M = 24,
  OFF_CAP = 32,
  OFF_LAYOUT = 40,
  OFF_ALG = 41,
  OFF_K = 42,
  OFF_RES8 = 43,
  OFF_RES32 = 44,
  OFF_SEED = 48,
  HDR_LEN = 56,
};

/* A pointer no call may write: out-parameters start here and must stay. */
extern char bloom_sentinel_storage;
#define SENTINEL ((bk_bloom *)(void *)&bloom_sentinel_storage)

/* The program's seed (BK_TEST_SEED or one fallback for every bloom test)
 * xor `salt`; bk_test_begin(BLOOM_SEED_FALLBACK) prints it. */
#define BLOOM_SEED_FALLBACK 0x5EEDF00Dull
uint64_t bloom_test_seed(uint64_t salt);

/* Each fails the test on any status other than BK_OK. */
bk_bloom *bloom_make(const bk_bloom_config *cfg);
bk_bloom *bloom_make_mk(uint64_t m, unsigned k, bk_bloom_layout layout,
                        bk_hash_alg alg, uint64_t seed);
void bloom_add_u64(bk_bloom *b, uint64_t v);       /* v as 8 LE bytes */
bool bloom_has_u64(const bk_bloom *b, uint64_t v); /* v as 8 LE bytes */
/* b serialized into an exact-size malloc'd blob (the caller frees it). */
unsigned char *bloom_blob_of(const bk_bloom *b, size_t *len);
/* The set bits in a blob's payload. */
uint64_t bloom_popcount_payload(const unsigned char *blob, size_t len);
/* a and b serialize to the same bytes. */
void bloom_assert_same_blob(const bk_bloom *a, const bk_bloom *b);

#endif
