/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom's bytes: its serialized form (the common prefix and trailer of
 * format.c around the parameters drawn below and the bit array) and Apache
 * Parquet's split block bitsets (import and export). Readers validate
 * every field before they allocate.
 */
#include "bloom_internal.h"

#define BLOOM_VERSION 1
#define BLOOM_HEADER_LEN (BK__PREFIX_SIZE + 32)

/* ---- serialized form -----------------------------------------------------
 * Parameters after the 24-byte prefix (header length 56):
 *   24  u64  m_bits
 *   32  u64  capacity (informational; 0 when sized by m and k)
 *   40  u8   layout (0 standard, 1 blocked, 2 split-block)
 *   41  u8   hash algorithm (1 XXH3, 2 Murmur3, 3 XXH64)
 *   42  u8   k (1..64)
 *   43  u8   reserved, zero
 *   44  u32  reserved, zero
 *   48  u64  seed
 * Payload: the bit array, ceil(m / 64) little-endian u64 words, bits past m
 * zero. */
bk_status bk_bloom_serialized_size(const bk_bloom *b, size_t *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = BLOOM_HEADER_LEN + (size_t)b->bits.n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_bloom_serialize(const bk_bloom *b, void *buf, size_t cap,
                             size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_bloom_serialized_size(b, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  bk__format_write_prefix(p, BLOOM_VERSION, BK__TYPE_BLOOM, BLOOM_HEADER_LEN,
                          b->bits.n_words * 8);
  bk__store_le64(p + 24, b->head.m_bits);
  bk__store_le64(p + 32, b->capacity);
  p[40] = (unsigned char)b->layout;
  p[41] = (unsigned char)b->hash_alg;
  p[42] = (unsigned char)b->head.k;
  p[43] = 0;
  bk__store_le32(p + 44, 0);
  bk__store_le64(p + 48, b->seed);
  bk__words_store(p + BLOOM_HEADER_LEN, b->head.words, b->bits.n_words);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

bk_status bk_bloom_deserialize(const void *buf, size_t len,
                               const bk_allocator *allocator, bk_bloom **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BLOOM, BLOOM_VERSION,
                         BLOOM_HEADER_LEN, &v));
  const unsigned char *p = v.params - BK__PREFIX_SIZE; /* absolute offsets */
  uint64_t m = bk__load_le64(p + 24);
  uint64_t capacity = bk__load_le64(p + 32);
  unsigned layout = p[40], alg = p[41], k = p[42];
  uint64_t seed = bk__load_le64(p + 48);
  BK_RETURN_IF(p[43] != 0 || bk__load_le32(p + 44) != 0, BK_ECORRUPT);
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX, BK_ECORRUPT);
  BK_RETURN_IF(k == 0 || k > BK_K_MAX, BK_ECORRUPT);
  BK_RETURN_IF(layout != BK_BLOOM_STANDARD && layout != BK_BLOOM_BLOCKED &&
                   layout != BK_BLOOM_SPLIT_BLOCK,
               BK_ECORRUPT);
  BK_RETURN_IF(m % bk__bloom_layout_unit((bk_bloom_layout)layout) != 0,
               BK_ECORRUPT);
  BK_RETURN_IF(layout == BK_BLOOM_SPLIT_BLOCK && k != 8, BK_ECORRUPT);
  BK_RETURN_IF(
      alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3 && alg != BK_HASH_XXH64,
      BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid_any((bk_hash_alg)alg, seed), BK_ECORRUPT);
  uint64_t n_words = (m + 63) / 64;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  uint64_t last = bk__load_le64(v.payload + (n_words - 1) * 8);
  BK_RETURN_IF((m & 63) && (last >> (m & 63)) != 0, BK_ECORRUPT);

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bloom *b;
  BK_TRY(bk__bloom_new(&b, &al, m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg,
                       seed, capacity));
  bk__words_load(b->head.words, v.payload, n_words);
  *out = b;
  return BK_OK;
}

/* ---- Parquet bitsets -------------------------------------------------------
 * A Parquet split block Bloom filter's bitset is z blocks of eight
 * little-endian u32 words, z a power of two; the bk_bloom payload of a
 * split-block filter is the same bytes (see the top of bloom.c). */
static bool parquet_len_ok(uint64_t len) {
  return len >= BK_PARQUET_BITSET_MIN && len <= BK_PARQUET_BITSET_MAX &&
         (len & (len - 1)) == 0;
}

bk_status bk_bloom_parquet_import(const void *bitset, size_t len,
                                  const bk_allocator *allocator,
                                  bk_bloom **out) {
  BK_RETURN_IF(!bitset || !out, BK_EINVAL);
  BK_RETURN_IF(!parquet_len_ok(len), BK_ECORRUPT);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bloom *b;
  BK_TRY(bk__bloom_new(&b, &al, (uint64_t)len * 8, 8, BK_BLOOM_SPLIT_BLOCK,
                       BK_HASH_XXH64, 0, 0));
  bk__words_load(b->head.words, bitset, len / 8);
  *out = b;
  return BK_OK;
}

bk_status bk_bloom_parquet_export(const bk_bloom *b, void *buf, size_t cap,
                                  size_t *written) {
  BK_RETURN_IF(!b || !buf || !written, BK_EINVAL);
  BK_RETURN_IF(b->layout != BK_BLOOM_SPLIT_BLOCK ||
                   b->hash_alg != BK_HASH_XXH64 || b->seed != 0 ||
                   !parquet_len_ok(b->head.m_bits / 8),
               BK_EMISMATCH);
  size_t len = (size_t)(b->head.m_bits / 8);
  BK_RETURN_IF(cap < len, BK_EINVAL);
  bk__words_store(buf, b->head.words, b->bits.n_words);
  *written = len;
  return BK_OK;
}
