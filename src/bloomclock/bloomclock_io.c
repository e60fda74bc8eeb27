/* SPDX-License-Identifier: MIT */
/*
 * The Bloom clock's wire form: the message a process sends (serialize,
 * serialized_size) and the three ways to take one in: as a new clock
 * (deserialize), into a clock of the same shape (load), or merged into the
 * receiver's clock and ticked, the protocol's receive rule (receive). The
 * parser checks every field and accepts only reachable states before
 * anything is allocated or changed. The clock itself is in bloomclock.c.
 */
#include <string.h>

#include "bloomclock/bloomclock_internal.h"
#include "bloomkit/params.h"
#include "core/hash_fast.h"

#define BC_VERSION 1
/* 24 prefix + m u32, k u8, width u8, hash_alg u8, reserved u8, seed u64,
 * process_id u64, events u64, base u64 */
#define BC_HEADER_LEN (BK__PREFIX_SIZE + 40u)

/* Payload bytes: m counters of width bits, rounded up to 8. */
static size_t payload_bytes(uint64_t m, unsigned width) {
  return (size_t)((m * (width / 8) + 7) / 8 * 8);
}

/* ---- the wire form --------------------------------------------------------
 *
 *   offset  size  field
 *       24     4  m (1 .. 2^24)
 *       28     1  k (1 .. 64)
 *       29     1  counter width in bits (8, 16, 32)
 *       30     1  hash algorithm (1 XXH3, 2 Murmur3)
 *       31     1  reserved (0)
 *       32     8  hash seed (below 2^32 for Murmur3)
 *       40     8  process id
 *       48     8  events (local event count)
 *       56     8  base (at most 2^62)
 *       64        payload: m counters, little-endian, width/8 bytes each,
 *                 zero-padded to a multiple of 8 bytes
 *
 *   width 8:   byte i          = c[i]
 *   width 16:  bytes 2i, 2i+1  = c[i], low byte first
 *   width 32:  bytes 4i..4i+3  = c[i], low byte first
 *   c[i] == 2^width - 1 means saturated (infinity).
 */

bk_status bk_bloomclock_serialized_size(const bk_bloomclock *c, size_t *out) {
  BK_RETURN_IF(!c || !out, BK_EINVAL);
  *out = BC_HEADER_LEN + payload_bytes(c->m, c->width) + BK__TRAILER_SIZE;
  return BK_OK;
}

/* The wire form is the little-endian counter array; like counters.c this
 * file copies it as it is and so supports little-endian hosts only. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "bloomclock_io.c: the wire form needs a little-endian host"
#endif

bk_status bk_bloomclock_serialize(const bk_bloomclock *c, void *buf, size_t cap,
                                  size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_bloomclock_serialized_size(c, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  const size_t payload = payload_bytes(c->m, c->width);
  bk__format_write_prefix(p, BC_VERSION, BK__TYPE_BLOOMCLOCK, BC_HEADER_LEN,
                          payload);
  bk__store_le32(p + 24, (uint32_t)c->m);
  p[28] = (unsigned char)c->k;
  p[29] = (unsigned char)c->width;
  p[30] = (unsigned char)c->hash_alg;
  p[31] = 0;
  bk__store_le64(p + 32, c->seed);
  bk__store_le64(p + 40, c->process_id);
  bk__store_le64(p + 48, c->events);
  bk__store_le64(p + 56, c->base);
  unsigned char *q = p + BC_HEADER_LEN;
  const size_t used = (size_t)(c->m * (c->width / 8));
  memcpy(q, c->counters, used);
  memset(q + used, 0, payload - used);
  bk__format_write_trailer(p, BC_HEADER_LEN + payload);
  *written = need;
  return BK_OK;
}

/* A validated wire form, pointing into the caller's bytes. */
typedef struct bc_view {
  uint64_t m;
  unsigned k, width;
  bk_hash_alg hash_alg;
  uint64_t seed, process_id, events, base;
  const unsigned char *counters;
} bc_view;

/* Every check a loader makes, allocation-free; nothing is read past len. */
static bk_status bc_parse(const void *buf, size_t len, bc_view *v) {
  bk__format_view fv;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BLOOMCLOCK, BC_VERSION,
                         BC_HEADER_LEN, &fv));
  const unsigned char *p = buf;
  v->m = bk__load_le32(p + 24);
  v->k = p[28];
  v->width = p[29];
  v->hash_alg = (bk_hash_alg)p[30];
  v->seed = bk__load_le64(p + 32);
  v->process_id = bk__load_le64(p + 40);
  v->events = bk__load_le64(p + 48);
  v->base = bk__load_le64(p + 56);
  BK_RETURN_IF(p[31] != 0, BK_ECORRUPT);
  BK_RETURN_IF(v->m == 0 || v->m > BK_BLOOMCLOCK_M_MAX, BK_ECORRUPT);
  BK_RETURN_IF(
      v->k == 0 || v->k > BK_K_MAX || !bk__bloomclock_width_ok(v->width),
      BK_ECORRUPT);
  BK_RETURN_IF(v->hash_alg != BK_HASH_XXH3 && v->hash_alg != BK_HASH_MURMUR3,
               BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid(v->hash_alg, v->seed), BK_ECORRUPT);
  BK_RETURN_IF(v->base > BK_BLOOMCLOCK_BASE_MAX, BK_ECORRUPT);
  const size_t payload = payload_bytes(v->m, v->width);
  BK_RETURN_IF(fv.payload_len != payload, BK_ECORRUPT);
  const size_t used = (size_t)(v->m * (v->width / 8));
  BK_RETURN_IF(!bk__all_zero(fv.payload + used, payload - used), BK_ECORRUPT);
  /* Reachable states only: a clock that never ticked (events 0; a merge
   * ticks too) is the zero clock, base 0; one that ticked has a counter
   * above zero (a tick raises k counters, renormalising leaves the one that
   * triggered it at 1 or more, a merge is followed by a tick, and nothing
   * else lowers a counter). */
  const bool zero = bk__all_zero(fv.payload, used);
  BK_RETURN_IF(zero != (v->events == 0), BK_ECORRUPT);
  BK_RETURN_IF(v->events == 0 && v->base != 0, BK_ECORRUPT);
  v->counters = fv.payload;
  return BK_OK;
}

static bool view_matches(const bk_bloomclock *c, const bc_view *v) {
  return c->m == v->m && c->k == v->k && c->width == v->width &&
         c->hash_alg == v->hash_alg && c->seed == v->seed;
}

/* Counters from the wire into dst's array (little-endian host). */
static void load_counters(void *dst, const bc_view *v) {
  memcpy(dst, v->counters, (size_t)(v->m * (v->width / 8)));
}

bk_status bk_bloomclock_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_bloomclock **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  bk_bloomclock *c;
  BK_TRY(bk__bloomclock_new(&c, &al, v.m, v.k, v.width, v.hash_alg, v.seed));
  load_counters(c->counters, &v);
  c->process_id = v.process_id;
  c->events = v.events;
  c->base = v.base;
  *out = c;
  return BK_OK;
}

bk_status bk_bloomclock_load(bk_bloomclock *dst, const void *buf, size_t len) {
  BK_RETURN_IF(!dst || !buf, BK_EINVAL);
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  BK_RETURN_IF(!view_matches(dst, &v), BK_EMISMATCH);
  load_counters(dst->counters, &v);
  dst->process_id = v.process_id;
  dst->events = v.events;
  dst->base = v.base;
  return BK_OK;
}

bk_status bk_bloomclock_receive(bk_bloomclock *c, const void *buf, size_t len) {
  BK_RETURN_IF(!c || !buf, BK_EINVAL);
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  BK_RETURN_IF(!view_matches(c, &v), BK_EMISMATCH);
  if (c->width == 8) {
    bk__bloomclock_merge_raw(c, v.counters, v.base);
  } else {
    /* The caller's bytes need not be aligned for 16- or 32-bit loads:
     * merge from an aligned copy, a chunk at a time, through a view of c
     * over the chunk (each chunk starts from c's old base, so all use the
     * same shift). */
    enum { CHUNK_BYTES = 4096 };
    uint32_t tmp[CHUNK_BYTES / 4];
    const size_t esz = c->width / 8, per = CHUNK_BYTES / esz;
    bk_bloomclock part = *c;
    for (uint64_t i = 0; i < c->m; i += per) {
      const size_t n = (size_t)(c->m - i < per ? c->m - i : per);
      memcpy(tmp, v.counters + i * esz, n * esz);
      part.m = n;
      part.base = c->base;
      part.counters = (unsigned char *)c->counters + i * esz;
      bk__bloomclock_merge_raw(&part, tmp, v.base);
    }
    if (v.base > c->base) c->base = v.base;
  }
  return bk_bloomclock_tick(c);
}
