/* SPDX-License-Identifier: MIT */
/*
 * The vector clock's wire form: the message a process sends (serialize,
 * serialized_size) and the two ways to take one in, as a new clock
 * (deserialize) or merged into the receiver's clock and ticked, rule R2
 * (receive). The parser checks every field before anything is allocated
 * or changed. The clock itself is in vclock.c.
 */
#include <string.h>

#include "bloomclock/vclock_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "vclock_io.c: the wire form needs a little-endian host"
#endif

#define VC_VERSION 1
/* 24 prefix + processes u64, process_id u64, reserved u64 */
#define VC_HEADER_LEN (BK__PREFIX_SIZE + 24u)

static size_t payload_bytes(uint64_t p) {
  return (size_t)((p * 4 + 7) / 8 * 8);
}

/* ---- the wire form --------------------------------------------------------
 *
 *   24  u64  processes p (1 .. 2^24)
 *   32  u64  process id (< p)
 *   40  u64  reserved (0)
 *   48       payload: p entries, u32 little-endian, zero-padded to 8 bytes
 */

bk_status bk_vclock_serialized_size(const bk_vclock *v, size_t *out) {
  BK_RETURN_IF(!v || !out, BK_EINVAL);
  *out = VC_HEADER_LEN + payload_bytes(v->processes) + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_vclock_serialize(const bk_vclock *v, void *buf, size_t cap,
                              size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_vclock_serialized_size(v, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  const size_t payload = payload_bytes(v->processes);
  bk__format_write_prefix(p, VC_VERSION, BK__TYPE_VCLOCK, VC_HEADER_LEN,
                          payload);
  bk__store_le64(p + 24, v->processes);
  bk__store_le64(p + 32, v->process_id);
  bk__store_le64(p + 40, 0);
  const size_t used = (size_t)v->processes * 4;
  memcpy(p + VC_HEADER_LEN, v->v, used);
  memset(p + VC_HEADER_LEN + used, 0, payload - used);
  bk__format_write_trailer(p, VC_HEADER_LEN + payload);
  *written = need;
  return BK_OK;
}

typedef struct vc_view {
  uint64_t processes, process_id;
  const unsigned char *entries;
} vc_view;

static bk_status vc_parse(const void *buf, size_t len, vc_view *v) {
  bk__format_view fv;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_VCLOCK, VC_VERSION, VC_HEADER_LEN,
                         &fv));
  const unsigned char *p = buf;
  v->processes = bk__load_le64(p + 24);
  v->process_id = bk__load_le64(p + 32);
  BK_RETURN_IF(bk__load_le64(p + 40) != 0, BK_ECORRUPT);
  BK_RETURN_IF(v->processes == 0 || v->processes > BK_VCLOCK_PROCESSES_MAX,
               BK_ECORRUPT);
  BK_RETURN_IF(v->process_id >= v->processes, BK_ECORRUPT);
  const size_t payload = payload_bytes(v->processes);
  BK_RETURN_IF(fv.payload_len != payload, BK_ECORRUPT);
  const size_t used = (size_t)v->processes * 4;
  BK_RETURN_IF(!bk__all_zero(fv.payload + used, payload - used), BK_ECORRUPT);
  v->entries = fv.payload;
  return BK_OK;
}

bk_status bk_vclock_deserialize(const void *buf, size_t len,
                                const bk_allocator *allocator,
                                bk_vclock **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  vc_view w;
  BK_TRY(vc_parse(buf, len, &w));
  bk_vclock *v;
  BK_TRY(bk__vclock_new(&v, &al, w.processes, w.process_id));
  memcpy(v->v, w.entries, (size_t)w.processes * 4);
  *out = v;
  return BK_OK;
}

bk_status bk_vclock_receive(bk_vclock *v, const void *buf, size_t len) {
  BK_RETURN_IF(!v || !buf, BK_EINVAL);
  vc_view w;
  BK_TRY(vc_parse(buf, len, &w));
  BK_RETURN_IF(w.processes != v->processes, BK_EMISMATCH);
  /* The caller's bytes need not be 4-byte aligned: merge through an aligned
   * chunk. */
  uint32_t tmp[1024];
  for (uint64_t i = 0; i < v->processes; i += 1024) {
    const size_t n =
        (size_t)(v->processes - i < 1024 ? v->processes - i : 1024);
    memcpy(tmp, w.entries + i * 4, n * 4);
    bk__vclock_max_into(v->v + i, tmp, n);
  }
  return bk_vclock_tick(v);
}
