/* SPDX-License-Identifier: MIT */
/*
 * bk_idem's snapshot (bk_idem_serialized_size, bk_idem_serialize,
 * bk_idem_deserialize): the table's parameters, clock and totals, the
 * duplicate filter's own serialized form (a bk_fbf or a bk_rbf), the
 * client windows, and then every key with its value (version 2; version 1,
 * without clock and windows, still loads). Serializing holds every
 * stripe's lock (the keys' first, then the windows', the order adds take
 * them) so filter, windows and values agree; loading checks the header,
 * the filter, each window and each key record, and rebuilds the table
 * through bk__idem_restore_key and bk__win_restore. The format is in
 * docs/design/idem.md 3.8; the table itself in idem.c, idem_table.c and
 * idem_window.c.
 */
#include <pthread.h>
#include <string.h>

#include "apbf_internal.h"
#include "bloomkit/apbf.h"
#include "bloomkit/fbf.h"
#include "bloomkit/rbf.h"
#include "fbf_internal.h"
#include "idem_internal.h"

#define IDEM_VERSION 2
#define V1_HEADER_LEN (BK__PREFIX_SIZE + 48u)
#define V2_HEADER_LEN (BK__PREFIX_SIZE + 160u)

/* ---- snapshot --------------------------------------------------------------
 * Version 2, parameters after the 24-byte prefix (header length 184):
 *   24 u8 strategy   25 u8 hash_alg   26 u16 reserved   28 u32 max_key_len
 *   32 u64 seed      40 u64 keys      48 u64 applied    56 u64 duplicates
 *   64 u64 filter blob length F
 *   72 u64 now (the table's clock)    80 u64 retry_timeout (0: NONE)
 *   88 u32 window W (0 unless WINDOW, HYBRID)            92 u32 reserved
 *   96 u64 clients C                 104 u64 window_decided
 *  112 u64 below_window              120 u64 slid_to_filter
 *  128 u64 clients_evicted
 *  HYBRID's FBF config (0 otherwise), for an FBF not made yet:
 *  136 u64 capacity  144 u64 m_bits  152 f64 fpp  160 u32 n_past  164 u32 k
 *  168 u64 refresh_period
 *  176 u64 window start (the windows' tick 0; 0 unless WINDOW, HYBRID)
 * Payload: the filter's own serialized form (F bytes: a bk_fbf, or for RBF
 * a bk_rbf), C window records (idem_window.h), then per key: u32 length,
 * the key, u64 value (two's complement).
 * Version 1 (header length 72) ends at offset 72, strategy 0 meaning FBF,
 * and has no windows. */

static bk_status filter_size(const bk_idem *t, size_t *out) {
  *out = 0;
  bk_fbf *f = bk__idem_fbf(t);
  if (f) return bk_fbf_serialized_size(f, out);
  if (t->rbf) return bk_rbf_serialized_size(t->rbf, out);
  if (t->apbf) return bk_apbf_serialized_size(t->apbf, out);
  return BK_OK;
}

/* The snapshot's clock: the table's, or the FBF's when an advance has
 * moved that one first. */
static uint64_t snapshot_now(const bk_idem *t) {
  uint64_t now = __atomic_load_n(&t->now, __ATOMIC_ACQUIRE);
  bk_fbf *f = bk__idem_fbf(t);
  if (f) {
    uint64_t fnow = __atomic_load_n(&f->now, __ATOMIC_ACQUIRE);
    if (fnow > now) now = fnow;
  }
  if (t->apbf) {
    uint64_t anow = __atomic_load_n(&t->apbf->now, __ATOMIC_ACQUIRE);
    if (anow > now) now = anow;
  }
  return now;
}

static bk__idem_windows *windows_of(const bk_idem *t) {
  return t->windowed ? (bk__idem_windows *)&t->win : NULL;
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
  total += V2_HEADER_LEN + BK__TRAILER_SIZE;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    pthread_mutex_t *mu = (pthread_mutex_t *)&t->stripes[i].mu;
    pthread_mutex_lock(mu);
    total += records_size(t, i);
    pthread_mutex_unlock(mu);
  }
  bk__idem_windows *w = windows_of(t);
  if (w) {
    bk__win_lock_all(w);
    total += (size_t)bk__win_live(w, snapshot_now(t)) * bk__win_record_size(w);
    bk__win_unlock_all(w);
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
  bk__idem_windows *w = windows_of(t);
  if (w) bk__win_lock_all(w);
  bk_status s = serialize_locked(t, buf, cap, written);
  if (w) bk__win_unlock_all(w);
  unlock_all(t);
  return s;
}

static bk_status serialize_locked(const bk_idem *t, unsigned char *p,
                                  size_t cap, size_t *written) {
  size_t fsize, fw = 0;
  BK_TRY(filter_size(t, &fsize));
  const size_t header = V2_HEADER_LEN;
  bk__idem_windows *w = windows_of(t);
  /* The whole size first (every stripe is locked, so only the clock can
   * move, and a later clock only closes windows): a refused call writes
   * nothing. */
  uint64_t now = snapshot_now(t);
  uint64_t clients = w ? bk__win_live(w, now) : 0;
  size_t need = header + fsize + BK__TRAILER_SIZE;
  if (w) need += (size_t)clients * bk__win_record_size(w);
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) need += records_size(t, i);
  BK_RETURN_IF(cap < need, BK_EINVAL);
  bk_fbf *f = bk__idem_fbf(t);
  if (f) BK_TRY(bk_fbf_serialize(f, p + header, fsize, &fw));
  if (t->rbf) BK_TRY(bk_rbf_serialize(t->rbf, p + header, fsize, &fw));
  if (t->apbf) BK_TRY(bk_apbf_serialize(t->apbf, p + header, fsize, &fw));
  /* The clock after the filter's: a concurrent advance may have moved the
   * FBF on meanwhile, and the table's clock is never behind the FBF's. */
  now = snapshot_now(t);
  if (w) clients = bk__win_live(w, now);
  size_t pos = header + fw;
  if (w) pos += bk__win_write(w, now, p + pos);
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
  memset(p + BK__PREFIX_SIZE, 0, header - BK__PREFIX_SIZE);
  bk__format_write_prefix(p, IDEM_VERSION, BK__TYPE_IDEM, V2_HEADER_LEN,
                          pos - V2_HEADER_LEN);
  p[24] = (unsigned char)t->strategy;
  p[25] = (unsigned char)t->hash_alg;
  bk__store_le32(p + 28, (uint32_t)t->max_key_len);
  bk__store_le64(p + 32, t->seed);
  bk__store_le64(p + 40, keys);
  bk__store_le64(p + 48, applied);
  bk__store_le64(p + 56, duplicates);
  bk__store_le64(p + 64, fw);
  bk__store_le64(p + 72, now);
  bk__store_le64(p + 80, t->timeout);
  if (w) {
    bk__win_totals wt;
    bk__win_totals_locked(w, &wt);
    bk__store_le32(p + 88, w->w);
    bk__store_le64(p + 96, clients);
    bk__store_le64(p + 104, wt.decided);
    bk__store_le64(p + 112, wt.below);
    bk__store_le64(p + 120, wt.slid);
    bk__store_le64(p + 128, wt.evicted);
    bk__store_le64(p + 176, w->start);
  }
  if (t->lazy_fbf) {
    const bk_fbf_config *c = &t->fbf_cfg;
    uint64_t fpp_bits;
    memcpy(&fpp_bits, &c->fpp, sizeof fpp_bits);
    bk__store_le64(p + 136, c->capacity);
    bk__store_le64(p + 144, c->m_bits);
    bk__store_le64(p + 152, fpp_bits);
    bk__store_le32(p + 160, c->n_past);
    bk__store_le32(p + 164, c->k);
    bk__store_le64(p + 168, c->refresh_period);
  }
  bk__format_write_trailer(p, pos);
  *written = pos + BK__TRAILER_SIZE;
  return BK_OK;
}

/* The strategy a version's byte names; -1 for none. */
static int strategy_of(uint16_t version, unsigned byte) {
  if (version == 1) {
    static const int v1[4] = {BK_IDEM_FBF, BK_IDEM_NONE, BK_IDEM_RBF,
                              BK_IDEM_FBF_ADAPTIVE};
    return byte < 4 ? v1[byte] : -1;
  }
  return byte <= BK_IDEM_APBF ? (int)byte : -1;
}

/* HYBRID's FBF config from a v2 header; checked as bk_fbf_create would. */
static bk_status lazy_config(const unsigned char *p, const bk_idem *t,
                             const bk_allocator *allocator,
                             bk_fbf_config *out) {
  double fpp;
  uint64_t fpp_bits = bk__load_le64(p + 152);
  memcpy(&fpp, &fpp_bits, sizeof fpp);
  bk_fbf_config c = {.capacity = bk__load_le64(p + 136),
                     .m_bits = bk__load_le64(p + 144),
                     .fpp = fpp,
                     .n_past = bk__load_le32(p + 160),
                     .k = bk__load_le32(p + 164),
                     .refresh_period = bk__load_le64(p + 168),
                     .min_window = t->timeout,
                     .target_fpp = fpp,
                     .hash_alg = t->hash_alg,
                     .seed = t->seed,
                     .allocator = allocator};
  /* What bk_idem_create makes: sized by capacity and fpp, or by m and k. */
  BK_RETURN_IF((c.m_bits != 0) == (c.capacity != 0), BK_ECORRUPT);
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_ECORRUPT);
  BK_RETURN_IF(c.n_past == 0 || c.n_past > 62, BK_ECORRUPT);
  BK_RETURN_IF(c.refresh_period == 0 || c.refresh_period > t->timeout,
               BK_ECORRUPT);
  BK_RETURN_IF(bk__fbf_config_check(&c) != BK_OK, BK_ECORRUPT);
  *out = c;
  return BK_OK;
}

bk_status bk_idem_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_idem **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  const unsigned char *p = buf;
  /* The header's length depends on the version: peek at it, then let the
   * envelope check everything. */
  uint16_t version = len >= BK__PREFIX_SIZE ? bk__load_le16(p + 4) : 0;
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_IDEM, IDEM_VERSION,
                         version == 1 ? V1_HEADER_LEN : V2_HEADER_LEN, &v));
  int strategy = strategy_of(v.version, p[24]);
  unsigned alg = p[25];
  uint32_t max_key_len = bk__load_le32(p + 28);
  uint64_t seed = bk__load_le64(p + 32), keys = bk__load_le64(p + 40);
  uint64_t fsize = bk__load_le64(p + 64);
  BK_RETURN_IF(strategy < 0 || bk__load_le16(p + 26), BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid((bk_hash_alg)alg, seed), BK_ECORRUPT);
  BK_RETURN_IF(max_key_len == 0 || max_key_len > BK_IDEM_KEY_MAX, BK_ECORRUPT);
  BK_RETURN_IF(fsize > v.payload_len, BK_ECORRUPT);
  /* A filter exactly where the strategy has one (HYBRID's maybe not yet). */
  bool has_filter = strategy != BK_IDEM_NONE && strategy != BK_IDEM_WINDOW;
  BK_RETURN_IF(!has_filter && fsize != 0, BK_ECORRUPT);
  BK_RETURN_IF(has_filter && strategy != BK_IDEM_HYBRID && fsize == 0,
               BK_ECORRUPT);
  uint64_t now = 0, timeout = 0, clients = 0, start = 0;
  unsigned window = 0;
  if (v.version >= 2) {
    now = bk__load_le64(p + 72);
    timeout = bk__load_le64(p + 80);
    window = bk__load_le32(p + 88);
    clients = bk__load_le64(p + 96);
    BK_RETURN_IF(bk__load_le32(p + 92), BK_ECORRUPT);
    /* A timeout wherever create needs one (an RBF restored from version 1
     * has none to save). */
    BK_RETURN_IF(strategy == BK_IDEM_NONE && timeout, BK_ECORRUPT);
    BK_RETURN_IF(
        strategy != BK_IDEM_NONE && strategy != BK_IDEM_RBF && timeout == 0,
        BK_ECORRUPT);
    bool windowed = strategy == BK_IDEM_WINDOW || strategy == BK_IDEM_HYBRID;
    BK_RETURN_IF(windowed != (window != 0) || !bk__win_size_ok(window),
                 BK_ECORRUPT);
    /* Nothing but a window's fields, and HYBRID's FBF config, where there
     * are none. */
    for (unsigned off = 104; off < V2_HEADER_LEN; off += 4) {
      bool used = (windowed && (off < 136 || off >= 176)) ||
                  (strategy == BK_IDEM_HYBRID && off >= 136 && off < 176);
      if (!used) BK_RETURN_IF(bk__load_le32(p + off), BK_ECORRUPT);
    }
    if (!windowed) BK_RETURN_IF(clients, BK_ECORRUPT);
    start = bk__load_le64(p + 176);
    BK_RETURN_IF(start > now, BK_ECORRUPT);
  }
  size_t rec = window ? 16 + 9 * (size_t)(window / 64) : 0;
  BK_RETURN_IF(rec && clients > (v.payload_len - fsize) / rec, BK_ECORRUPT);
  size_t wbytes = (size_t)clients * rec;
  /* Each key takes at least 13 bytes: bounds the count before any work. */
  BK_RETURN_IF(keys > (v.payload_len - fsize - wbytes) / 13, BK_ECORRUPT);

  bk_idem *t;
  BK_TRY(bk__idem_new_table(allocator, &t));
  t->strategy = (bk_idem_strategy)strategy;
  t->max_key_len = max_key_len;
  t->hash_alg = (bk_hash_alg)alg;
  t->seed = seed;
  t->timeout = timeout;
  t->now = now;
  bk_status s = bk__idem_init_stripes(t, keys);
  if (s == BK_OK && fsize) {
    bk_fbf *f = NULL;
    if (strategy == BK_IDEM_RBF)
      s = bk_rbf_deserialize(v.payload, (size_t)fsize, allocator, &t->rbf);
    else if (strategy == BK_IDEM_APBF)
      s = bk_apbf_deserialize(v.payload, (size_t)fsize, allocator, &t->apbf);
    else
      s = bk_fbf_deserialize(v.payload, (size_t)fsize, allocator, &f);
    if (s == BK_OK && t->apbf) {
      /* What create makes: time-based, keeping ids the timeout, its clock
       * never ahead of the table's. */
      bk_apbf_info ai;
      s = bk_apbf_info_get(t->apbf, &ai);
      if (s == BK_OK &&
          (!ai.time_based || ai.window_min < timeout || ai.now > now))
        s = BK_ECORRUPT;
    }
    t->fbf = f;
    if (s == BK_EVERSION || s == BK_EINVAL) s = BK_ECORRUPT;
    if (s == BK_OK && f) {
      /* The strategy says whether the FBF adapts; the two must agree, and
       * the FBF's clock is never ahead of the table's. */
      if (f->adaptive != (strategy == BK_IDEM_FBF_ADAPTIVE) ||
          (v.version >= 2 && f->now > now))
        s = BK_ECORRUPT;
      if (v.version == 1) { /* no clock, no timeout: the FBF's */
        t->now = f->now;
        t->timeout = f->min_window;
      }
    }
  }
  bk_fbf_config lazy = {0};
  if (s == BK_OK && strategy == BK_IDEM_HYBRID) {
    s = lazy_config(p, t, allocator, &lazy);
    /* An FBF HYBRID made is the one its config makes; one not made yet is
     * a small one (a bigger one is made at create, and is in the blob). */
    if (s == BK_OK && t->fbf && !bk__fbf_made_from(t->fbf, &lazy))
      s = BK_ECORRUPT;
    if (s == BK_OK && !t->fbf && !bk__idem_fbf_lazy_ok(&lazy)) s = BK_ECORRUPT;
  }
  if (s == BK_OK) s = bk__idem_init_windows(t, window, &lazy);
  if (s == BK_OK && t->windowed) t->win.start = start; /* the same tick grid */
  size_t pos = (size_t)fsize, end = (size_t)v.payload_len;
  const unsigned char *q = v.payload;
  for (uint64_t i = 0; s == BK_OK && i < clients; i++, pos += rec)
    s = bk__win_restore(&t->win, now, q + pos);
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
  /* The counts travel in the snapshot. */
  t->stripes[0].applied = bk__load_le64(p + 48);
  t->stripes[0].duplicates = bk__load_le64(p + 56);
  if (t->windowed)
    bk__win_set_totals(&t->win, bk__load_le64(p + 104), bk__load_le64(p + 112),
                       bk__load_le64(p + 120), bk__load_le64(p + 128));
  *out = t;
  return BK_OK;
}
