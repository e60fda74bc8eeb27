/* SPDX-License-Identifier: MIT */
/*
 * The scalable counting filter's serialized form (bk_scbf_serialized_size,
 * bk_scbf_serialize, bk_scbf_deserialize): a snapshot of the file's
 * header fields and of every filter record, in the common envelope of
 * core/format, so an in-memory or file-backed bk_scbf can be saved and
 * loaded as one blob (always into memory). The file layout it copies, and
 * the object, are in scbf.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cbf/scbf_internal.h"

/* ---- serialized form ------------------------------------------------------
 *
 * Envelope type 8 (BK__TYPE_SCBF), version 1, H = 96:
 *   24  40  parameters (as in the file header)
 *   64   4  n_filters   68  4  reserved 0
 *   72   8  seqnum      80  8  mem_seqnum   88  8  disk_seqnum
 * Payload: the n_filters records (header + counters), in order; the
 * mutable header fields are snapshots, reserved bytes zero.
 */

static uint64_t payload_bytes(const bk_scbf *s, unsigned n) {
  uint64_t total = 0;
  for (unsigned i = 0; i < n; i++) total += s->filters[i].record_bytes;
  return total;
}

bk_status bk_scbf_serialized_size(const bk_scbf *s, size_t *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  uint64_t total =
      BK__SCBF_BLOB_HEADER + payload_bytes(s, n) + BK__TRAILER_SIZE;
  BK_RETURN_IF(total > SIZE_MAX, BK_EINVAL);
  *out = (size_t)total;
  return BK_OK;
}

/* A file's counters are not checksummed and open does not read them, so
 * bytes no operation writes (padding past counter m, counters of a filter
 * with no id yet) may be set in a damaged file; the serialized form holds
 * what operations could have produced, zero there, so it always loads. */
static void canonical_counters(unsigned char *c, size_t bytes,
                               const bk__scbf_filter *f) {
  if (bk__scbf_word_load(f->hdr + BK__SCBF_F_END) == f->start_id) {
    memset(c, 0, bytes);
    return;
  }
  uint64_t used_bits = f->view.m * f->view.width;
  size_t full = (size_t)(used_bits / 8);
  unsigned rest = (unsigned)(used_bits % 8);
  if (rest) c[full++] &= (unsigned char)((1u << rest) - 1);
  if (full < bytes) memset(c + full, 0, bytes - full);
}

bk_status bk_scbf_serialize(const bk_scbf *s, void *buf, size_t cap,
                            size_t *written) {
  BK_RETURN_IF(!s || !buf || !written, BK_EINVAL);
  bk_scbf *w = (bk_scbf *)s; /* the lock is not part of the state */
  pthread_mutex_lock(&w->write_lock);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  uint64_t payload = payload_bytes(s, n);
  uint64_t total = BK__SCBF_BLOB_HEADER + payload + BK__TRAILER_SIZE;
  if (total > cap) {
    pthread_mutex_unlock(&w->write_lock);
    return BK_EINVAL;
  }
  unsigned char *p = buf;
  bk__format_write_prefix(p, 1, BK__TYPE_SCBF, BK__SCBF_BLOB_HEADER, payload);
  bk__scbf_params_store(p + 24, &s->p);
  bk__store_le32(p + 64, n);
  bk__store_le32(p + 68, 0);
  bk__store_le64(p + 72, bk__scbf_word_load(s->hdr + BK__SCBF_H_SEQ));
  bk__store_le64(p + 80, bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM));
  bk__store_le64(p + 88, bk__scbf_word_load(s->hdr + BK__SCBF_H_DISK));
  unsigned char *q = p + BK__SCBF_BLOB_HEADER;
  for (unsigned i = 0; i < n; i++) {
    const bk__scbf_filter *f = &s->filters[i];
    memcpy(q, f->hdr, 40);
    bk__store_le64(q + BK__SCBF_F_COUNT,
                   bk__scbf_word_load(f->hdr + BK__SCBF_F_COUNT));
    bk__store_le64(q + BK__SCBF_F_END,
                   bk__scbf_word_load(f->hdr + BK__SCBF_F_END));
    memset(q + 56, 0, 8);
    size_t bytes = (size_t)(f->record_bytes - BK__SCBF_RECORD_HEADER);
    /* Counters change only under the write lock we hold. */
    memcpy(q + BK__SCBF_RECORD_HEADER, f->view.words, bytes);
    canonical_counters(q + BK__SCBF_RECORD_HEADER, bytes, f);
    q += BK__SCBF_RECORD_HEADER + bytes;
  }
  pthread_mutex_unlock(&w->write_lock);
  bk__format_write_trailer(p, (size_t)(total - BK__TRAILER_SIZE));
  *written = (size_t)total;
  return BK_OK;
}

bool bk__scbf_counters_ok(const unsigned char *c, size_t bytes,
                          const bk__cbf_params *fp, bool empty) {
  if (empty) return bk__all_zero(c, bytes);
  uint64_t used_bits = fp->m * fp->width; /* m <= 2^40, width <= 32 */
  size_t full = (size_t)(used_bits / 8);
  unsigned rest = (unsigned)(used_bits % 8);
  if (rest && (c[full] >> rest) != 0) return false;
  size_t from = full + (rest ? 1 : 0);
  return from >= bytes || bk__all_zero(c + from, bytes - from);
}

bk_status bk_scbf_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_scbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_SCBF, 1, BK__SCBF_BLOB_HEADER, &v));
  const unsigned char *p = buf;
  bk__scbf_params prm;
  BK_TRY(bk__scbf_params_load(p + 24, &prm));
  uint32_t n = bk__load_le32(p + 64);
  BK_RETURN_IF(n < 1 || n > prm.max_filters, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le32(p + 68) != 0, BK_ECORRUPT);
  BK_TRY(bk__scbf_seqnums_check(bk__load_le64(p + 72), bk__load_le64(p + 80),
                                bk__load_le64(p + 88)));
  /* Every record, checked before anything is allocated. */
  bk__cbf_params fps[BK_SCBF_FILTERS_MAX];
  double fpps[BK_SCBF_FILTERS_MAX];
  uint64_t off = 0, start = 0;
  for (unsigned i = 0; i < n; i++) {
    BK_RETURN_IF(bk__scbf_filter_params(&prm, i, &fps[i], &fpps[i]) != BK_OK,
                 BK_ECORRUPT);
    uint64_t bytes = bk__scbf_record_bytes(&fps[i]);
    BK_RETURN_IF(bytes > v.payload_len - off, BK_ECORRUPT);
    const unsigned char *r = v.payload + off;
    BK_TRY(bk__scbf_record_check(r, i, start, &fps[i], false));
    uint64_t end = bk__load_le64(r + BK__SCBF_F_END);
    BK_RETURN_IF(i + 1 < n && end == start, BK_ECORRUPT);
    BK_RETURN_IF(!bk__scbf_counters_ok(r + BK__SCBF_RECORD_HEADER,
                                       (size_t)(bytes - BK__SCBF_RECORD_HEADER),
                                       &fps[i], end == start),
                 BK_ECORRUPT);
    start = end;
    off += bytes;
  }
  BK_RETURN_IF(off != v.payload_len, BK_ECORRUPT);
  bk_scbf *s;
  BK_TRY(bk__scbf_new(&prm, allocator, &s));
  bk__scbf_header_init(s);
  bk__store_le32(s->hdr + BK__SCBF_H_NFILTERS, n);
  bk__store_le64(s->hdr + BK__SCBF_H_SEQ, bk__load_le64(p + 72));
  bk__store_le64(s->hdr + BK__SCBF_H_MEM, bk__load_le64(p + 80));
  bk__store_le64(s->hdr + BK__SCBF_H_DISK, bk__load_le64(p + 88));
  off = 0;
  for (unsigned i = 0; i < n; i++) {
    unsigned char *record;
    bk_status st = bk__scbf_mem_record(s, i, &fps[i], &record);
    if (st != BK_OK) {
      bk_scbf_destroy(s);
      return st;
    }
    atomic_store_explicit(&s->n_filters, i + 1, memory_order_relaxed);
    uint64_t bytes = bk__scbf_record_bytes(&fps[i]);
    memcpy(record, v.payload + off, (size_t)bytes);
    bk__scbf_filter_setup(s, i, record, &fps[i], fpps[i]);
    off += bytes;
  }
  atomic_store_explicit(&s->n_filters, n, memory_order_release);
  *out = s;
  return BK_OK;
}
