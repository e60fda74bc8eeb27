/* SPDX-License-Identifier: MIT */
/*
 * The bloom test programs' shared helpers (bloom_helpers.h): one-liners
 * over the library's entry points (the inline path is off) that fail the
 * test on error.
 */
#include "bloom_helpers.h"

#include "core/internal.h"

char bloom_sentinel_storage;

uint64_t bloom_test_seed(uint64_t salt) {
  return bk_test_seed(BLOOM_SEED_FALLBACK) ^ salt;
}

BK_TEST_DEFINE_MAKE(bloom, )
BK_TEST_DEFINE_BLOB_OF(bloom, )

bk_bloom *bloom_make_mk(uint64_t m, unsigned k, bk_bloom_layout layout,
                        bk_hash_alg alg, uint64_t seed) {
  bk_bloom_config cfg = {
      .m_bits = m, .k = k, .layout = layout, .hash_alg = alg, .seed = seed};
  return bloom_make(&cfg);
}

void bloom_add_u64(bk_bloom *b, uint64_t v) {
  unsigned char kb[8];
  bk__store_le64(kb, v);
  assert_bk_ok(bk_bloom_add(b, kb, sizeof kb));
}

bool bloom_has_u64(const bk_bloom *b, uint64_t v) {
  unsigned char kb[8];
  bool out = false;
  bk__store_le64(kb, v);
  assert_bk_ok(bk_bloom_contains(b, kb, sizeof kb, &out));
  return out;
}

uint64_t bloom_popcount_payload(const unsigned char *blob, size_t len) {
  uint64_t x = 0;
  for (size_t i = HDR_LEN; i + 8 < len; i += 8)
    x += (uint64_t)__builtin_popcountll(bk__load_le64(blob + i));
  return x;
}

void bloom_assert_same_blob(const bk_bloom *a, const bk_bloom *b) {
  bk_test_assert_same_state(&bk_test_codec_bloom, a, b);
}
