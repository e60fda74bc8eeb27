/* SPDX-License-Identifier: MIT */
/*
 * bk_rbf's serialized form (bk_rbf_serialized_size, bk_rbf_serialize,
 * bk_rbf_deserialize): the insert count, threshold and recycles, then the
 * bk_bloom's own blob. The loader takes only a state create and adds could
 * have produced: a threshold create could have computed for the bloom's m
 * and k, and no more bits than the counted inserts set. The filter itself
 * is in rbf.c.
 */
#include "bloomkit/bloom.h"
#include "bloomkit/params.h"
#include "core/internal.h"
#include "rbf_internal.h"

/* ---- serialized form ------------------------------------------------------
 * Parameters after the 24-byte prefix (header length 48):
 *   24 u64 inserted since the last recycle   32 u64 threshold
 *   40 u64 recycles
 * Payload: the bk_bloom's own serialized form (standard layout). */
#define RBF_VERSION 1
#define RBF_HEADER_LEN (BK__PREFIX_SIZE + 24u)

/* Could create have computed `threshold` for this m and k? It is the
 * smallest l with fpp(l) >= target for some target in (0, 1): exactly when
 * fpp(l - 1) < fpp(l) and fpp(l - 1) < 1, within the search's 2^62 cap. */
static bool threshold_reachable(uint64_t m, unsigned k, uint64_t threshold) {
  if (threshold == 0 || threshold > ((uint64_t)1 << 62)) return false;
  double below = 0.0, at = 0.0;
  (void)bk_params_fpp(m, k, threshold - 1, &below);
  (void)bk_params_fpp(m, k, threshold, &at);
  if (threshold == ((uint64_t)1 << 62)) return below < 1.0;
  return below < at && below < 1.0;
}

/* Inserts since the last recycle that a snapshot may not have counted yet:
 * an add sets its bits before it counts, and a snapshot takes no lock. */
#define RBF_IN_FLIGHT_SLACK 1024u

/* Do the filter's bits agree with `inserted`? Each counted insert sets at
 * most k bits; a filter full of bits with few inserts would never recycle
 * and would call every new id a duplicate. `bloom` is the bloom blob the
 * bloom loader has just accepted. */
static bool bits_counted(const unsigned char *bloom, unsigned k,
                         uint64_t inserted) {
  uint32_t header = bk__load_le32(bloom + 8);
  uint64_t words = bk__load_le64(bloom + 16) / 8, set = 0;
  for (uint64_t w = 0; w < words; w++)
    set +=
        (uint64_t)__builtin_popcountll(bk__load_le64(bloom + header + 8 * w));
  /* inserted < threshold <= 2^62: no overflow below. */
  return set / k <= inserted + RBF_IN_FLIGHT_SLACK;
}

bk_status bk_rbf_serialized_size(const bk_rbf *r, size_t *out) {
  BK_RETURN_IF(!r || !out, BK_EINVAL);
  size_t bloom;
  BK_TRY(bk_bloom_serialized_size(r->bloom, &bloom));
  *out = RBF_HEADER_LEN + bloom + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_rbf_serialize(const bk_rbf *r, void *buf, size_t cap,
                           size_t *written) {
  size_t need, bloom_written;
  BK__SERIALIZE_OPEN(bk_rbf_serialized_size(r, &need), need, buf, cap, written);
  unsigned char *p = buf;
  BK_TRY(bk_bloom_serialize(r->bloom, p + RBF_HEADER_LEN,
                            need - RBF_HEADER_LEN - BK__TRAILER_SIZE,
                            &bloom_written));
  bk__format_write_prefix(p, RBF_VERSION, BK__TYPE_RBF, RBF_HEADER_LEN,
                          bloom_written);
  /* Mid-recycle the count may stand at the threshold for a moment; saved
   * as threshold - 1, the restored filter recycles on its next insert. */
  uint64_t inserted = __atomic_load_n(&r->inserted, __ATOMIC_RELAXED);
  if (inserted >= r->threshold) inserted = r->threshold - 1;
  bk__store_le64(p + 24, inserted);
  bk__store_le64(p + 32, r->threshold);
  bk__store_le64(p + 40, __atomic_load_n(&r->recycles, __ATOMIC_RELAXED));
  bk__format_write_trailer(p, RBF_HEADER_LEN + bloom_written);
  *written = RBF_HEADER_LEN + bloom_written + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_rbf_deserialize(const void *buf, size_t len,
                             const bk_allocator *allocator, bk_rbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(
      bk__format_open(buf, len, BK__TYPE_RBF, RBF_VERSION, RBF_HEADER_LEN, &v));
  const unsigned char *p = buf;
  uint64_t inserted = bk__load_le64(p + 24);
  uint64_t threshold = bk__load_le64(p + 32);
  BK_RETURN_IF(threshold == 0 || threshold > ((uint64_t)1 << 62) ||
                   inserted >= threshold,
               BK_ECORRUPT);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_rbf *r = bk__calloc(&al, 1, sizeof *r);
  BK_RETURN_IF(!r, BK_ENOMEM);
  bk_status s = bk_bloom_deserialize(v.payload, (size_t)v.payload_len,
                                     allocator, &r->bloom);
  bk_bloom_info info;
  if (s == BK_OK) {
    (void)bk_bloom_info_get(r->bloom, &info);
    /* Only a threshold create could have computed for this m and k: a
     * larger one would let the filter fill up and answer yes to all. */
    if (info.layout != BK_BLOOM_STANDARD ||
        !threshold_reachable(info.m_bits, info.k, threshold) ||
        !bits_counted(v.payload, info.k, inserted))
      s = BK_ECORRUPT;
  }
  if (s != BK_OK) {
    bk_bloom_destroy(r->bloom);
    bk__free(&al, r);
    return s == BK_EVERSION ? BK_ECORRUPT : s;
  }
  r->alloc = al;
  r->m = info.m_bits;
  r->k = info.k;
  r->threshold = threshold;
  r->inserted = inserted;
  r->recycles = bk__load_le64(p + 40);
  *out = r;
  return BK_OK;
}
