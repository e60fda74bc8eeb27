/* SPDX-License-Identifier: MIT */
/*
 * bk_idem's snapshot (bk_idem_serialized_size, bk_idem_serialize,
 * bk_idem_deserialize): the table's parameters and totals, the duplicate
 * filter's own serialized form (a bk_fbf or a bk_rbf) and then every key
 * with its value. Serializing holds every stripe's lock so the filter and
 * the values agree; loading checks the header, the filter and each key
 * record, and rebuilds the table through bk__idem_restore_key. The table
 * itself is in idem.c and idem_table.c.
 */
#include <pthread.h>
#include <string.h>

#include "bloomkit/fbf.h"
#include "bloomkit/rbf.h"
#include "fbf_internal.h"
#include "idem_internal.h"

#define IDEM_VERSION 1
#define IDEM_HEADER_LEN (BK__PREFIX_SIZE + 48u)

/* ---- snapshot --------------------------------------------------------------
 * Parameters after the 24-byte prefix (header length 72):
 *   24 u8 strategy   25 u8 hash_alg   26 u16 reserved   28 u32 max_key_len
 *   32 u64 seed      40 u64 keys      48 u64 applied    56 u64 duplicates
 *   64 u64 filter blob length F (0 for NONE)
 * Payload: the filter's own serialized form (F bytes: a bk_fbf, or for RBF
 * a bk_rbf), then per key: u32 length, the key, u64 value (two's
 * complement). */

static bk_status filter_size(const bk_idem *t, size_t *out) {
  *out = 0;
  if (t->fbf) return bk_fbf_serialized_size(t->fbf, out);
  if (t->rbf) return bk_rbf_serialized_size(t->rbf, out);
  return BK_OK;
}

/* Bytes of the key records of stripe i; the caller holds its lock. */
static size_t records_size(const bk_idem *t, unsigned i) {
  size_t total = 0;
  const bk__idem_stripe *s = &t->stripes[i];
  for (uint64_t j = 0; j <= s->mask; j++)
    if (bk__idem_slot_used(&s->slots[j]))
      total += 12 + bk__idem_slot_len(&s->slots[j]);
  return total;
}

bk_status bk_idem_serialized_size(const bk_idem *t, size_t *out) {
  BK_RETURN_IF(!t || !out, BK_EINVAL);
  size_t total;
  BK_TRY(filter_size(t, &total));
  total += IDEM_HEADER_LEN + BK__TRAILER_SIZE;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    pthread_mutex_t *mu = (pthread_mutex_t *)&t->stripes[i].mu;
    pthread_mutex_lock(mu);
    total += records_size(t, i);
    pthread_mutex_unlock(mu);
  }
  *out = total;
  return BK_OK;
}

static void lock_all(const bk_idem *t) {
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++)
    pthread_mutex_lock((pthread_mutex_t *)&t->stripes[i].mu);
}

static void unlock_all(const bk_idem *t) {
  for (unsigned i = BK__IDEM_STRIPES; i-- > 0;)
    pthread_mutex_unlock((pthread_mutex_t *)&t->stripes[i].mu);
}

static bk_status serialize_locked(const bk_idem *t, unsigned char *p,
                                  size_t cap, size_t *written);

/* The snapshot holds every stripe's lock (taken in order, as no add ever
 * holds two), so the filter and the values it writes agree: an add is in
 * both or in neither, and a replay of the log after restore is exact. */
bk_status bk_idem_serialize(const bk_idem *t, void *buf, size_t cap,
                            size_t *written) {
  BK_RETURN_IF(!t || !buf || !written, BK_EINVAL);
  lock_all(t);
  bk_status s = serialize_locked(t, buf, cap, written);
  unlock_all(t);
  return s;
}

static bk_status serialize_locked(const bk_idem *t, unsigned char *p,
                                  size_t cap, size_t *written) {
  size_t fsize, fw = 0;
  BK_TRY(filter_size(t, &fsize));
  size_t header = IDEM_HEADER_LEN;
  /* The whole size first (every stripe is locked, so it cannot change):
   * a refused call writes nothing. */
  size_t need = header + fsize + BK__TRAILER_SIZE;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) need += records_size(t, i);
  BK_RETURN_IF(cap < need, BK_EINVAL);
  if (t->fbf) BK_TRY(bk_fbf_serialize(t->fbf, p + header, fsize, &fw));
  if (t->rbf) BK_TRY(bk_rbf_serialize(t->rbf, p + header, fsize, &fw));
  size_t pos = header + fw;
  uint64_t keys = 0, applied = 0, duplicates = 0;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    const bk__idem_stripe *s = &t->stripes[i];
    applied += s->applied;
    duplicates += s->duplicates;
    for (uint64_t j = 0; j <= s->mask; j++) {
      const bk__idem_slot *e = &s->slots[j];
      if (!bk__idem_slot_used(e)) continue;
      size_t len = bk__idem_slot_len(e);
      bk__store_le32(p + pos, (uint32_t)len);
      memcpy(p + pos + 4, bk__idem_slot_key(e), len);
      bk__store_le64(p + pos + 4 + len, (uint64_t)e->value);
      pos += 12 + len;
      keys++;
    }
  }
  bk__format_write_prefix(p, IDEM_VERSION, BK__TYPE_IDEM, IDEM_HEADER_LEN,
                          pos - IDEM_HEADER_LEN);
  p[24] = (unsigned char)t->strategy;
  p[25] = (unsigned char)t->hash_alg;
  bk__store_le16(p + 26, 0);
  bk__store_le32(p + 28, (uint32_t)t->max_key_len);
  bk__store_le64(p + 32, t->seed);
  bk__store_le64(p + 40, keys);
  bk__store_le64(p + 48, applied);
  bk__store_le64(p + 56, duplicates);
  bk__store_le64(p + 64, fw);
  bk__format_write_trailer(p, pos);
  *written = pos + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_idem_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_idem **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_IDEM, IDEM_VERSION, IDEM_HEADER_LEN,
                         &v));
  const unsigned char *p = buf;
  unsigned strategy = p[24], alg = p[25];
  uint32_t max_key_len = bk__load_le32(p + 28);
  uint64_t seed = bk__load_le64(p + 32), keys = bk__load_le64(p + 40);
  uint64_t fsize = bk__load_le64(p + 64);
  BK_RETURN_IF(strategy > BK_IDEM_FBF_ADAPTIVE || bk__load_le16(p + 26),
               BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid((bk_hash_alg)alg, seed), BK_ECORRUPT);
  BK_RETURN_IF(max_key_len == 0 || max_key_len > BK_IDEM_KEY_MAX, BK_ECORRUPT);
  BK_RETURN_IF(fsize > v.payload_len, BK_ECORRUPT);
  BK_RETURN_IF((strategy == BK_IDEM_NONE) != (fsize == 0), BK_ECORRUPT);
  /* Each key takes at least 13 bytes: bounds the count before any work. */
  BK_RETURN_IF(keys > (v.payload_len - fsize) / 13, BK_ECORRUPT);

  bk_idem *t;
  BK_TRY(bk__idem_new_table(allocator, &t));
  t->strategy = (bk_idem_strategy)strategy;
  t->max_key_len = max_key_len;
  t->hash_alg = (bk_hash_alg)alg;
  t->seed = seed;
  bk_status s = bk__idem_init_stripes(t, keys);
  if (s == BK_OK && fsize) {
    if (strategy == BK_IDEM_RBF)
      s = bk_rbf_deserialize(v.payload, (size_t)fsize, allocator, &t->rbf);
    else
      s = bk_fbf_deserialize(v.payload, (size_t)fsize, allocator, &t->fbf);
    if (s == BK_EVERSION || s == BK_EINVAL) s = BK_ECORRUPT;
    if (s == BK_OK && t->fbf) {
      /* The strategy says whether the FBF adapts; the two must agree. */
      if (t->fbf->adaptive != (strategy == BK_IDEM_FBF_ADAPTIVE))
        s = BK_ECORRUPT;
    }
  }
  size_t pos = (size_t)fsize, end = (size_t)v.payload_len;
  const unsigned char *q = v.payload;
  for (uint64_t i = 0; s == BK_OK && i < keys; i++) {
    if (end - pos < 4) {
      s = BK_ECORRUPT;
      break;
    }
    uint32_t klen = bk__load_le32(q + pos);
    if (klen == 0 || klen > max_key_len || end - pos - 4 < (size_t)klen + 8) {
      s = BK_ECORRUPT;
      break;
    }
    const unsigned char *key = q + pos + 4;
    int64_t value = (int64_t)bk__load_le64(q + pos + 4 + klen);
    s = bk__idem_restore_key(t, key, klen, value);
    if (s != BK_OK) break;
    pos += 12 + (size_t)klen;
  }
  if (s == BK_OK && pos != end) s = BK_ECORRUPT;
  if (s != BK_OK) {
    bk_idem_destroy(t);
    return s;
  }
  /* The counts of applied and duplicate updates travel in the snapshot. */
  t->stripes[0].applied = bk__load_le64(p + 48);
  t->stripes[0].duplicates = bk__load_le64(p + 56);
  *out = t;
  return BK_OK;
}
