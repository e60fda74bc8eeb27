/* SPDX-License-Identifier: MIT */
/*
 * The counting Bloom filter's serialized form (bk_cbf_serialized_size,
 * bk_cbf_serialize, bk_cbf_deserialize): the common prefix and trailer of
 * core/format, the filter's parameters, then its storage words as they are
 * in memory, little-endian. The loader checks every field, and that the
 * padding counters past m are zero, before it allocates; the structure
 * itself is in cbf.c.
 */
#include "bloomkit/params.h"
#include "cbf/cbf_internal.h"

#define CBF_VERSION 1
/* 24 prefix + m u64, capacity u64, seed u64, k u8, width u8, layout u8,
 * hash_alg u8, reserved u32 */
#define CBF_HEADER_LEN (BK__PREFIX_SIZE + 32u)

/* ---- serialized form --------------------------------------------------
 *
 *   24 u64 m   32 u64 capacity   40 u64 seed   48 u8 k   49 u8 width
 *   50 u8 layout   51 u8 hash_alg   52 u32 reserved (0)
 * Payload: the storage words, little-endian, n_blocks * 64 bytes.
 */

bk_status bk_cbf_serialized_size(const bk_cbf *f, size_t *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = CBF_HEADER_LEN + (size_t)f->n_blocks * BK__CBF_BLOCK_BYTES +
         BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_cbf_serialize(const bk_cbf *f, void *buf, size_t cap,
                           size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_cbf_serialized_size(f, &need), need, buf, cap, written);
  unsigned char *p = buf;
  const uint64_t payload = f->n_blocks * BK__CBF_BLOCK_BYTES;
  bk__format_write_prefix(p, CBF_VERSION, BK__TYPE_CBF, CBF_HEADER_LEN,
                          payload);
  bk__store_le64(p + 24, f->m);
  bk__store_le64(p + 32, f->capacity);
  bk__store_le64(p + 40, f->seed);
  p[48] = (unsigned char)f->k;
  p[49] = (unsigned char)f->width;
  p[50] = (unsigned char)f->layout;
  p[51] = (unsigned char)f->hash_alg;
  bk__store_le32(p + 52, 0);
  unsigned char *q = p + CBF_HEADER_LEN;
  for (uint64_t i = 0; i < f->n_blocks * 8; i++)
    bk__store_le64(q + 8 * i, __atomic_load_n(&f->words[i], __ATOMIC_RELAXED));
  bk__format_write_trailer(p, CBF_HEADER_LEN + payload);
  *written = need;
  return BK_OK;
}

bk_status bk_cbf_deserialize(const void *buf, size_t len,
                             const bk_allocator *allocator, bk_cbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(
      bk__format_open(buf, len, BK__TYPE_CBF, CBF_VERSION, CBF_HEADER_LEN, &v));
  const unsigned char *p = buf;
  bk__cbf_params pr = {.m = bk__load_le64(p + 24),
                       .capacity = bk__load_le64(p + 32),
                       .seed = bk__load_le64(p + 40),
                       .k = p[48],
                       .width = p[49],
                       .layout = p[50],
                       .hash_alg = (bk_hash_alg)p[51]};
  BK_RETURN_IF(bk__load_le32(p + 52) != 0, BK_ECORRUPT);
  BK_RETURN_IF(pr.k == 0 || pr.k > BK_K_MAX || !bk__cbf_width_ok(pr.width),
               BK_ECORRUPT);
  BK_RETURN_IF(pr.layout != BK_BLOOM_STANDARD && pr.layout != BK_BLOOM_BLOCKED,
               BK_ECORRUPT);
  BK_RETURN_IF(pr.hash_alg != BK_HASH_XXH3 && pr.hash_alg != BK_HASH_MURMUR3,
               BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid(pr.hash_alg, pr.seed), BK_ECORRUPT);
  BK_RETURN_IF(pr.m == 0 || pr.m > BK__CBF_COUNTERS_MAX, BK_ECORRUPT);
  BK_RETURN_IF(pr.capacity > BK__CBF_COUNTERS_MAX, BK_ECORRUPT);
  if (pr.layout == BK_BLOOM_BLOCKED)
    BK_RETURN_IF(pr.m % bk__cbf_cells_per_block(pr.width) != 0, BK_ECORRUPT);
  const size_t bytes = bk__cbf_storage_bytes(&pr);
  BK_RETURN_IF(v.payload_len != bytes, BK_ECORRUPT);
  /* Counters past m (padding of the last block) are zero. */
  const uint64_t used_bits = pr.m * pr.width;
  for (uint64_t bit = used_bits; bit < (uint64_t)bytes * 8;) {
    if (bit % 64 == 0) {
      BK_RETURN_IF(bk__load_le64(v.payload + bit / 8) != 0, BK_ECORRUPT);
      bit += 64;
    } else {
      uint64_t w = bk__load_le64(v.payload + bit / 64 * 8);
      BK_RETURN_IF(w >> (bit % 64) != 0, BK_ECORRUPT);
      bit += 64 - bit % 64;
    }
  }
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_cbf *f;
  BK_TRY(bk__cbf_new(&f, &al, &pr));
  for (uint64_t i = 0; i < bytes / 8; i++)
    f->words[i] = bk__load_le64(v.payload + 8 * i);
  *out = f;
  return BK_OK;
}
