/* SPDX-License-Identifier: MIT */
/*
 * bk_scbf: the scalable counting filter (include/bloomkit/cbf.h), in memory
 * or in a memory-mapped file. A list of bk_cbf views, each over a "record":
 * a 64-byte filter header followed by the filter's counters. In memory each
 * record is one aligned region; in a file the records follow the 128-byte
 * file header back to back (every offset a multiple of 64) and each is
 * mapped on its own (from the page below it), so growing maps the new
 * record and never moves the old ones: readers need no lock. The serialized
 * form (common envelope, scbf_io.c) carries the same records as its
 * payload.
 *
 * File header (128 bytes, little-endian):
 *
 *   0    4  magic "BKIT"            |
 *   4    2  version (2; 1 still opens) |
 *   6    2  type tag 9 (SCBF_FILE)  |
 *   8    4  header length 128       |
 *  12    4  reserved 0              |  immutable, checksummed
 *  16   40  parameters (below)      |
 *  56    8  XXH3-64 of [0, 56)      |
 *  64    4  n_filters               mutable: updated in place, checked by
 *  68    4  reserved 0              range on open
 *  72    8  seqnum (last write begun)
 *  80    8  mem_seqnum (0 or seqnum)
 *  88    8  disk_seqnum (<= seqnum)
 *  96    8  clean: 1 when the file was closed cleanly (or flushed) and
 *           every record's checksum is valid; 0 from the first write after
 *           open (version 2; version 1 has 0 here: never verified)
 * 104   24  reserved 0
 *
 * Parameters (40 bytes; at 16 in the file, at 24 in a blob):
 *
 *   +0   8  capacity of filter 0
 *   +8   8  fpp, units of 1e-12
 *   +16  4  growth, units of 1e-6
 *   +20  4  tightening, units of 1e-6
 *   +24  8  seed
 *   +32  1  counter_bits   +33 1 layout   +34 1 hash_alg   +35 1 max_filters
 *   +36  4  reserved 0
 *
 * Filter record: a 64-byte header, then bk__cbf_storage_bytes counters.
 *
 *   0    8  start_id (first id of its range)   |
 *   8    8  capacity                           |  immutable, checksummed
 *  16    8  m (counters)                       |
 *  24    1  k     25  1 index   26  6 reserved |
 *  32    8  XXH3-64 of [0, 32)                 |
 *  40    8  count (keys added, not removed)    mutable
 *  48    8  end_id (greatest id added + 1; start_id: none yet)
 *  56    8  version 2: XXH3-64 of [0, 56) and the counters, valid when the
 *           header's clean flag is 1 (version 1 and blobs: 0)
 */
#define _GNU_SOURCE /* mremap is not used; MAP_* and ftruncate on glibc */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash_fast.h"
#include "cbf/cbf_internal.h"
#include "cbf/scbf_internal.h"

/* ---- parameters --------------------------------------------------------- */

bk_status bk__scbf_params_from_config(const bk_scbf_config *cfg,
                                      bk__scbf_params *out) {
  BK_RETURN_IF(!cfg || cfg->capacity == 0, BK_EINVAL);
  double fpp = cfg->fpp == 0 ? 0.01 : cfg->fpp;
  double growth = cfg->growth == 0 ? 2.0 : cfg->growth;
  double r = cfg->tightening == 0 ? 0.5 : cfg->tightening;
  BK_RETURN_IF(!(fpp >= 1e-12 && fpp <= 0.5), BK_EINVAL);
  BK_RETURN_IF(!(growth >= 1.0 && growth <= 1000.0), BK_EINVAL);
  BK_RETURN_IF(!(r > 0.0 && r < 1.0), BK_EINVAL);
  unsigned max_filters = cfg->max_filters ? cfg->max_filters : 32;
  BK_RETURN_IF(max_filters > BK_SCBF_FILTERS_MAX, BK_EINVAL);
  bk__scbf_params p = {
      .capacity = cfg->capacity,
      .fpp_units = (uint64_t)llround(fpp * 1e12),
      .growth_units = (uint32_t)llround(growth * 1e6),
      .tightening_units = (uint32_t)llround(r * 1e6),
      .seed = cfg->seed,
      .counter_bits = cfg->counter_bits ? cfg->counter_bits : 4,
      .layout = (unsigned)cfg->layout,
      .hash_alg =
          cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg,
      .max_filters = max_filters,
  };
  BK_RETURN_IF(p.tightening_units == 0 || p.tightening_units >= 1000000,
               BK_EINVAL);
  bk__cbf_params first;
  BK_RETURN_IF(bk__scbf_filter_params(&p, 0, &first, NULL) != BK_OK, BK_EINVAL);
  *out = p;
  return BK_OK;
}

/* Filter i: capacity c g^i (rounded up) and error fpp (1 - r) r^i, by
 * repeated multiplication (exactly rounded, so every reader of a file
 * computes the same numbers as its writer did). */
bk_status bk__scbf_filter_params(const bk__scbf_params *p, unsigned i,
                                 bk__cbf_params *out, double *fpp_out) {
  double r = (double)p->tightening_units / 1e6;
  double g = (double)p->growth_units / 1e6;
  double e = (double)p->fpp_units * 1e-12 * (1.0 - r);
  double c = (double)p->capacity;
  for (unsigned j = 0; j < i; j++) {
    e *= r;
    c *= g;
  }
  BK_RETURN_IF(!(c <= 0x1p50) || !(e > 0.0), BK_EFULL);
  bk_cbf_config cfg = {
      .capacity = (uint64_t)ceil(c),
      .fpp = e,
      .counter_bits = p->counter_bits,
      .layout = (bk_bloom_layout)p->layout,
      .hash_alg = p->hash_alg,
      .seed = p->seed,
  };
  BK_RETURN_IF(bk__cbf_resolve(&cfg, out) != BK_OK, BK_EFULL);
  if (fpp_out) *fpp_out = e;
  return BK_OK;
}

void bk__scbf_params_store(unsigned char *q, const bk__scbf_params *p) {
  bk__store_le64(q + 0, p->capacity);
  bk__store_le64(q + 8, p->fpp_units);
  bk__store_le32(q + 16, p->growth_units);
  bk__store_le32(q + 20, p->tightening_units);
  bk__store_le64(q + 24, p->seed);
  q[32] = (unsigned char)p->counter_bits;
  q[33] = (unsigned char)p->layout;
  q[34] = (unsigned char)p->hash_alg;
  q[35] = (unsigned char)p->max_filters;
  bk__store_le32(q + 36, 0);
}

/* Read and validate: every field must be one create could store. */
bk_status bk__scbf_params_load(const unsigned char *q, bk__scbf_params *out) {
  bk__scbf_params p = {
      .capacity = bk__load_le64(q + 0),
      .fpp_units = bk__load_le64(q + 8),
      .growth_units = bk__load_le32(q + 16),
      .tightening_units = bk__load_le32(q + 20),
      .seed = bk__load_le64(q + 24),
      .counter_bits = q[32],
      .layout = q[33],
      .hash_alg = (bk_hash_alg)q[34],
      .max_filters = q[35],
  };
  BK_RETURN_IF(bk__load_le32(q + 36) != 0, BK_ECORRUPT);
  BK_RETURN_IF(p.capacity == 0, BK_ECORRUPT);
  BK_RETURN_IF(p.fpp_units < 1 || p.fpp_units > 500000000000ull, BK_ECORRUPT);
  BK_RETURN_IF(p.growth_units < 1000000u || p.growth_units > 1000000000u,
               BK_ECORRUPT);
  BK_RETURN_IF(p.tightening_units < 1 || p.tightening_units > 999999u,
               BK_ECORRUPT);
  BK_RETURN_IF(p.max_filters < 1 || p.max_filters > BK_SCBF_FILTERS_MAX,
               BK_ECORRUPT);
  BK_RETURN_IF(p.hash_alg != BK_HASH_XXH3 && p.hash_alg != BK_HASH_MURMUR3,
               BK_ECORRUPT);
  bk__cbf_params first;
  BK_RETURN_IF(bk__scbf_filter_params(&p, 0, &first, NULL) != BK_OK,
               BK_ECORRUPT);
  *out = p;
  return BK_OK;
}

/* XXH3-64 of p[0, n) compared with (check) or stored at (seal) p + n. */
static void seal(unsigned char *p, size_t n) {
  bk__format_write_trailer(p, n);
}
static bool sealed(const unsigned char *p, size_t n) {
  unsigned char tmp[64];
  memcpy(tmp, p, n);
  bk__format_write_trailer(tmp, n);
  return memcmp(tmp + n, p + n, 8) == 0;
}

uint64_t bk__scbf_record_bytes(const bk__cbf_params *fp) {
  return BK__SCBF_RECORD_HEADER + (uint64_t)bk__cbf_storage_bytes(fp);
}

/* Write a new record header (counters are zero). */
static void record_init(unsigned char *h, unsigned index, uint64_t start_id,
                        const bk__cbf_params *fp) {
  memset(h, 0, BK__SCBF_RECORD_HEADER);
  bk__store_le64(h + 0, start_id);
  bk__store_le64(h + 8, fp->capacity);
  bk__store_le64(h + 16, fp->m);
  h[24] = (unsigned char)fp->k;
  h[25] = (unsigned char)index;
  seal(h, 32);
  bk__store_le64(h + BK__SCBF_F_COUNT, 0);
  bk__store_le64(h + BK__SCBF_F_END, start_id);
}

/*
 * Check record header h of filter `index` against what create and the
 * operations can leave: checksum, its index, its start (0 for filter 0,
 * else the previous filter's end), the parameters filter `index` has,
 * reserved bytes zero, end_id >= start_id, count <= 2^62, and no count
 * without ids.
 */
bk_status bk__scbf_record_check(const unsigned char *h, unsigned index,
                                uint64_t want_start, const bk__cbf_params *fp,
                                bool has_sum) {
  BK_RETURN_IF(!sealed(h, 32), BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le64(h + 0) != want_start, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le64(h + 8) != fp->capacity, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le64(h + 16) != fp->m, BK_ECORRUPT);
  BK_RETURN_IF(h[24] != fp->k || h[25] != index, BK_ECORRUPT);
  BK_RETURN_IF(!bk__all_zero(h + 26, 6), BK_ECORRUPT);
  BK_RETURN_IF(!has_sum && !bk__all_zero(h + BK__SCBF_F_SUM, 8), BK_ECORRUPT);
  uint64_t count = bk__load_le64(h + BK__SCBF_F_COUNT),
           end = bk__load_le64(h + BK__SCBF_F_END);
  BK_RETURN_IF(end < want_start, BK_ECORRUPT);
  BK_RETURN_IF(count > BK__SCBF_COUNT_MAX, BK_ECORRUPT);
  BK_RETURN_IF(end == want_start && count != 0, BK_ECORRUPT);
  return BK_OK;
}

/* The checksum of a version-2 record: XXH3-64 of its header's first 56
 * bytes (the immutable fields, count and end_id) and of its counters. */
static uint64_t record_sum(const bk__scbf_filter *f) {
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, f->hdr, BK__SCBF_F_SUM);
  XXH3_64bits_update(&st, f->hdr + BK__SCBF_RECORD_HEADER,
                     (size_t)(f->record_bytes - BK__SCBF_RECORD_HEADER));
  return (uint64_t)XXH3_64bits_digest(&st);
}

/* ---- the object ---------------------------------------------------------- */

bk_status bk__scbf_new(const bk__scbf_params *p, const bk_allocator *user,
                       bk_scbf **out) {
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, user));
  bk_scbf *s = bk__calloc(&al, 1, sizeof *s);
  BK_RETURN_IF(!s, BK_ENOMEM);
  s->alloc = al;
  s->p = *p;
  s->fd = -1;
  s->hdr = s->mem_hdr;
  s->version = BK__SCBF_FILE_VERSION;
  s->verified = true;
  if (pthread_mutex_init(&s->write_lock, NULL) != 0) {
    bk__free(&al, s);
    return BK_ENOMEM;
  }
  *out = s;
  return BK_OK;
}

void bk__scbf_filter_setup(bk_scbf *s, unsigned i, unsigned char *record,
                           const bk__cbf_params *fp, double fpp) {
  bk__scbf_filter *f = &s->filters[i];
  f->hdr = record;
  f->start_id = bk__load_le64(record);
  f->capacity = fp->capacity;
  f->fpp = fpp;
  f->record_bytes = bk__scbf_record_bytes(fp);
  bk__cbf_view(&f->view, fp, record + BK__SCBF_RECORD_HEADER);
  /* Every writer holds write_lock: one updating thread at a time. */
  f->view.single_writer = true;
}

static bk_status seal_file(bk_scbf *s, bool record_disk);

void bk_scbf_destroy(bk_scbf *s) {
  if (!s) return;
  /* Closed cleanly: a handle that wrote leaves the file sealed (an error
   * leaves the flag clear: the file opens unverified). */
  if (s->fd >= 0 && s->dirty) (void)seal_file(s, false);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_relaxed);
  for (unsigned i = 0; i < n; i++) {
    bk__scbf_filter *f = &s->filters[i];
    if (f->map) munmap(f->map, f->map_len);
    if (f->region.base) bk__region_free(&s->alloc, &f->region);
  }
  if (s->hdr_map) munmap(s->hdr_map, BK__SCBF_FILE_HEADER);
  if (s->fd >= 0) close(s->fd);
  pthread_mutex_destroy(&s->write_lock);
  bk__alloc al = s->alloc;
  bk__free(&al, s);
}

/* In memory: allocate record i (zeroed). */
bk_status bk__scbf_mem_record(bk_scbf *s, unsigned i, const bk__cbf_params *fp,
                              unsigned char **record) {
  uint64_t bytes = bk__scbf_record_bytes(fp);
  BK_RETURN_IF(bytes > SIZE_MAX, BK_ENOMEM);
  bk__scbf_filter *f = &s->filters[i];
  BK_TRY(bk__region_alloc(&s->alloc, (size_t)bytes, &f->region));
  *record = f->region.data;
  return BK_OK;
}

/* File: map the record at `offset` (from the page below it). */
static bk_status file_map_record(bk_scbf *s, unsigned i, uint64_t offset,
                                 const bk__cbf_params *fp,
                                 unsigned char **record) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t base = offset / page * page;
  uint64_t len = offset - base + bk__scbf_record_bytes(fp);
  BK_RETURN_IF(len > SIZE_MAX || base > (uint64_t)INT64_MAX, BK_ENOMEM);
  void *m = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
                 (off_t)base);
  BK_RETURN_IF(m == MAP_FAILED, errno == ENOMEM ? BK_ENOMEM : BK_EIO);
  bk__scbf_filter *f = &s->filters[i];
  f->map = m;
  f->map_len = (size_t)len;
  f->offset = offset;
  *record = (unsigned char *)m + (offset - base);
  return BK_OK;
}

/* Offset just past filter n-1's record (the file's needed size). */
static uint64_t file_end(const bk_scbf *s, unsigned n) {
  if (n == 0) return BK__SCBF_FILE_HEADER;
  const bk__scbf_filter *f = &s->filters[n - 1];
  return f->offset + f->record_bytes;
}

/*
 * Open filter `i` (n_filters == i) starting at start_id and publish it.
 * Errors: BK_EFULL (max_filters, or too large), BK_ENOMEM, BK_EIO; on error
 * nothing changed (a file may be longer: open cuts it back).
 */
static bk_status grow(bk_scbf *s, unsigned i, uint64_t start_id) {
  BK_RETURN_IF(i >= s->p.max_filters, BK_EFULL);
  bk__cbf_params fp;
  double fpp;
  BK_TRY(bk__scbf_filter_params(&s->p, i, &fp, &fpp));
  unsigned char *record;
  if (s->fd < 0) {
    BK_TRY(bk__scbf_mem_record(s, i, &fp, &record));
  } else {
    uint64_t offset = file_end(s, i), size;
    BK_RETURN_IF(
        __builtin_add_overflow(offset, bk__scbf_record_bytes(&fp), &size) ||
            size > (uint64_t)INT64_MAX,
        BK_EFULL);
    /* Bytes past the last filter (a growth a crash interrupted) are cut
     * first, so the new record starts from zeroes. */
    struct stat sb;
    if (fstat(s->fd, &sb) != 0) return BK_EIO;
    if ((uint64_t)sb.st_size > offset && ftruncate(s->fd, (off_t)offset) != 0)
      return BK_EIO;
    if (ftruncate(s->fd, (off_t)size) != 0) return BK_EIO;
    atomic_store_explicit(&s->file_size, size, memory_order_relaxed);
    bk_status st = file_map_record(s, i, offset, &fp, &record);
    if (st != BK_OK) return st;
  }
  record_init(record, i, start_id, &fp);
  bk__scbf_filter_setup(s, i, record, &fp, fpp);
  /* The record reaches the disk before the header names it, so an OS crash
   * cannot leave a header counting a record that is not there. */
  if (s->fd >= 0 && msync(s->filters[i].map, s->filters[i].map_len, MS_SYNC))
    return BK_EIO;
  /* The file's filter count is part of the state a crash can interrupt:
   * mem_seqnum is 0 around it. */
  uint64_t mem = bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM);
  bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, 0);
  bk__store_le32(s->hdr + BK__SCBF_H_NFILTERS, i + 1);
  bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, mem);
  atomic_store_explicit(&s->n_filters, i + 1, memory_order_release);
  return BK_OK;
}

void bk__scbf_header_init(bk_scbf *s) {
  unsigned char *h = s->hdr;
  memset(h, 0, BK__SCBF_FILE_HEADER);
  bk__format_write_prefix(h, BK__SCBF_FILE_VERSION, BK__TYPE_SCBF_FILE,
                          BK__SCBF_FILE_HEADER, 0);
  bk__scbf_params_store(h + 16, &s->p);
  seal(h, 56);
  /* create is write 1 */
  bk__store_le64(h + BK__SCBF_H_SEQ, 1);
}

bk_status bk_scbf_create(bk_scbf **out, const bk_scbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  bk__scbf_params p;
  BK_TRY(bk__scbf_params_from_config(cfg, &p));
  bk_scbf *s;
  BK_TRY(bk__scbf_new(&p, cfg->allocator, &s));
  bk__scbf_header_init(s);
  bk_status st = grow(s, 0, 0);
  if (st != BK_OK) {
    bk_scbf_destroy(s);
    return st == BK_EFULL ? BK_EINVAL : st;
  }
  bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, 1);
  *out = s;
  return BK_OK;
}

/* ---- file open ----------------------------------------------------------- */

/* Validate the mapped file header; fills s->p. */
static bk_status file_header_check(const unsigned char *h, bk__scbf_params *p,
                                   unsigned *n_filters, unsigned *version_out) {
  BK_RETURN_IF(memcmp(h, BK__MAGIC, 4) != 0, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le16(h + 6) != BK__TYPE_SCBF_FILE, BK_ECORRUPT);
  uint16_t version = bk__load_le16(h + 4);
  BK_RETURN_IF(version == 0, BK_ECORRUPT);
  BK_RETURN_IF(version > BK__SCBF_FILE_VERSION, BK_EVERSION);
  BK_RETURN_IF(bk__load_le32(h + 8) != BK__SCBF_FILE_HEADER, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le32(h + 12) != 0, BK_ECORRUPT);
  BK_RETURN_IF(!sealed(h, 56), BK_ECORRUPT);
  BK_TRY(bk__scbf_params_load(h + 16, p));
  uint32_t n = bk__load_le32(h + BK__SCBF_H_NFILTERS);
  BK_RETURN_IF(n < 1 || n > p->max_filters, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le32(h + 68) != 0, BK_ECORRUPT);
  BK_TRY(bk__scbf_seqnums_check(bk__load_le64(h + BK__SCBF_H_SEQ),
                                bk__load_le64(h + BK__SCBF_H_MEM),
                                bk__load_le64(h + BK__SCBF_H_DISK)));
  /* Version 1: all reserved. Version 2: the clean flag, 0 or 1. */
  if (version >= 2)
    BK_RETURN_IF(bk__load_le64(h + BK__SCBF_H_CLEAN) > 1, BK_ECORRUPT);
  size_t from = version >= 2 ? BK__SCBF_H_CLEAN + 8 : BK__SCBF_H_CLEAN;
  BK_RETURN_IF(!bk__all_zero(h + from, BK__SCBF_FILE_HEADER - from),
               BK_ECORRUPT);
  *n_filters = n;
  *version_out = version;
  return BK_OK;
}

bk_status bk__scbf_seqnums_check(uint64_t seq, uint64_t mem, uint64_t disk) {
  BK_RETURN_IF(seq == 0, BK_ECORRUPT);
  BK_RETURN_IF(mem != 0 && mem != seq, BK_ECORRUPT);
  BK_RETURN_IF(disk > seq, BK_ECORRUPT);
  return BK_OK;
}

static bk_status file_load(bk_scbf *s, uint64_t size) {
  BK_RETURN_IF(size < BK__SCBF_FILE_HEADER, BK_ECORRUPT);
  void *m = mmap(NULL, BK__SCBF_FILE_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED,
                 s->fd, 0);
  BK_RETURN_IF(m == MAP_FAILED, BK_EIO);
  s->hdr_map = m;
  s->hdr = m;
  unsigned n;
  BK_TRY(file_header_check(s->hdr, &s->p, &n, &s->version));
  /* Read before the records: a writer in another process clears it before
   * its first write, so a flag still set after the checksums were computed
   * means nobody wrote meanwhile. */
  bool clean = s->version >= 2 && bk__scbf_word_load(s->hdr + BK__SCBF_H_CLEAN);
  uint64_t seq = bk__scbf_word_load(s->hdr + BK__SCBF_H_SEQ);
  uint64_t offset = BK__SCBF_FILE_HEADER, start = 0;
  for (unsigned i = 0; i < n; i++) {
    bk__cbf_params fp;
    double fpp;
    BK_RETURN_IF(bk__scbf_filter_params(&s->p, i, &fp, &fpp) != BK_OK,
                 BK_ECORRUPT);
    uint64_t end;
    BK_RETURN_IF(
        __builtin_add_overflow(offset, bk__scbf_record_bytes(&fp), &end),
        BK_ECORRUPT);
    if (end > size) {
      /* The size may predate a growth by another process (it extends the
       * file before the header names the new filter): look again once. */
      struct stat sb;
      BK_RETURN_IF(fstat(s->fd, &sb) != 0, BK_EIO);
      size = (uint64_t)sb.st_size;
      BK_RETURN_IF(end > size, BK_ECORRUPT);
    }
    unsigned char *record;
    BK_TRY(file_map_record(s, i, offset, &fp, &record));
    /* Counted as open from here, so destroy unmaps it. */
    atomic_store_explicit(&s->n_filters, i + 1, memory_order_relaxed);
    BK_TRY(bk__scbf_record_check(record, i, start, &fp, s->version >= 2));
    /* An older filter had ids (it was full when the next one opened). */
    uint64_t rec_end = bk__load_le64(record + BK__SCBF_F_END);
    BK_RETURN_IF(i + 1 < n && rec_end == start, BK_ECORRUPT);
    bk__scbf_filter_setup(s, i, record, &fp, fpp);
    start = rec_end;
    offset = end;
  }
  /* A longer file (a crash while growing, or another process growing it
   * right now) is left alone: opening never writes. The writer's next
   * growth cuts leftovers before it extends. */
  atomic_store_explicit(&s->file_size, offset, memory_order_relaxed);
  s->verified = false;
  if (!clean) return BK_OK; /* not closed cleanly: unverified */
  bool sums_match = true;
  for (unsigned i = 0; i < n && sums_match; i++)
    sums_match = record_sum(&s->filters[i]) ==
                 bk__load_le64(s->filters[i].hdr + BK__SCBF_F_SUM);
  if (sums_match) {
    s->verified = true;
    return BK_OK;
  }
  /* A mismatch while another process began writing (it cleared the flag,
   * or wrote, flushed and set it again) is not damage: unverified. */
  bool unchanged = bk__scbf_word_load(s->hdr + BK__SCBF_H_CLEAN) == 1 &&
                   bk__scbf_word_load(s->hdr + BK__SCBF_H_SEQ) == seq;
  return unchanged ? BK_ECORRUPT : BK_OK;
}

static bool params_equal(const bk__scbf_params *a, const bk__scbf_params *b) {
  return a->capacity == b->capacity && a->fpp_units == b->fpp_units &&
         a->growth_units == b->growth_units &&
         a->tightening_units == b->tightening_units && a->seed == b->seed &&
         a->counter_bits == b->counter_bits && a->layout == b->layout &&
         a->hash_alg == b->hash_alg && a->max_filters == b->max_filters;
}

bk_status bk_scbf_open(bk_scbf **out, const char *path,
                       const bk_scbf_config *cfg) {
  BK_RETURN_IF(!out || !path, BK_EINVAL);
  bk__scbf_params want = {0};
  if (cfg) BK_TRY(bk__scbf_params_from_config(cfg, &want));
  bk_scbf *s;
  BK_TRY(bk__scbf_new(&want, cfg ? cfg->allocator : NULL, &s));
  bool created = false; /* this call wrote a new header */
  bool made = false;    /* this call made the file itself */
  int fd = -1;
  if (cfg) {
    fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
    made = fd >= 0;
  }
  if (fd < 0 && (!cfg || errno == EEXIST)) fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    bk_scbf_destroy(s);
    /* Not found only for a reopen; a missing directory on create is an
     * I/O failure. */
    return e == ENOENT && !cfg ? BK_ENOTFOUND
           : e == ENOMEM       ? BK_ENOMEM
                               : BK_EIO;
  }
  s->fd = fd;
  bk_status st = BK_OK;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st = BK_EIO;
  } else if (sb.st_size == 0 && cfg) {
    /* New file: the header, then filter 0. */
    created = true;
    if (ftruncate(fd, BK__SCBF_FILE_HEADER) != 0) {
      st = BK_EIO;
    } else {
      void *m = mmap(NULL, BK__SCBF_FILE_HEADER, PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        st = BK_EIO;
      } else {
        s->hdr_map = m;
        s->hdr = m;
        atomic_store_explicit(&s->file_size, BK__SCBF_FILE_HEADER,
                              memory_order_relaxed);
        /* Fill everything but the magic, which goes last: a file cut off
         * while being created is not a bloomkit file. */
        bk__scbf_header_init(s);
        memcpy(s->hdr, "\0\0\0\0", 4);
        st = grow(s, 0, 0);
        if (st == BK_EFULL) st = BK_EINVAL;
        if (st == BK_OK) {
          bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, 1);
          memcpy(s->hdr, BK__MAGIC, 4);
          s->dirty = true; /* sealed when closed */
        }
      }
    }
  } else {
    st = file_load(s, (uint64_t)sb.st_size);
    if (st == BK_OK && cfg && !params_equal(&want, &s->p)) st = BK_EMISMATCH;
  }
  if (st != BK_OK) {
    /* Leave what was there: remove a file this call made, empty again a
     * file that was empty. */
    if (made)
      (void)unlink(path);
    else if (created)
      if (ftruncate(fd, 0) != 0) { /* nothing more can be done */
      }
    bk_scbf_destroy(s);
    return st;
  }
  *out = s;
  return BK_OK;
}

/* ---- operations ---------------------------------------------------------- */

bk_status bk_scbf_hash(const bk_scbf *s, const void *key, size_t len,
                       bk_hash *out) {
  BK_RETURN_IF(!s || !out || (!key && len), BK_EINVAL);
  *out = bk__hash_fast(s->p.hash_alg, s->p.seed, key, len);
  return BK_OK;
}

/*
 * Before every write: clear the clean flag and msync it when the file
 * holds it set, so the flag is off on disk before any counter of the write
 * can reach it and no crash leaves it set beside counters its checksums do
 * not match. The mapped flag is read, not this handle's `dirty`: another
 * handle (another process the writing was handed to) may have sealed the
 * file since this one last wrote. Errors: BK_EIO (the flag is set again,
 * nothing was written; the next write tries again).
 */
static bk_status mark_dirty(bk_scbf *s) {
  s->dirty = true;
  if (s->fd < 0 || s->version < 2 ||
      bk__scbf_word_load(s->hdr + BK__SCBF_H_CLEAN) == 0)
    return BK_OK;
  bk__scbf_word_store(s->hdr + BK__SCBF_H_CLEAN, 0);
  if (msync(s->hdr_map, BK__SCBF_FILE_HEADER, MS_SYNC) == 0) return BK_OK;
  bk__scbf_word_store(s->hdr + BK__SCBF_H_CLEAN, 1);
  return BK_EIO;
}

/* Begin / end a write: seqnum + 1, mem_seqnum 0 meanwhile. */
static uint64_t write_begin(bk_scbf *s) {
  uint64_t seq = bk__scbf_word_load(s->hdr + BK__SCBF_H_SEQ) + 1;
  bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, 0);
  bk__scbf_word_store(s->hdr + BK__SCBF_H_SEQ, seq);
  /* Nothing of the write may be stored before mem_seqnum reads 0. */
  atomic_thread_fence(memory_order_release);
  return seq;
}
static void write_end(bk_scbf *s, uint64_t seq) {
  bk__scbf_word_store(s->hdr + BK__SCBF_H_MEM, seq);
}

/* The filter whose range holds id among [0, n), or n if none: a filter
 * i < n-1 holds [start_i, start_{i+1}); the newest [start, end). */
static unsigned find_range(const bk_scbf *s, unsigned n, uint64_t id) {
  unsigned lo = 0, hi = n; /* the last filter with start <= id */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (s->filters[mid].start_id <= id)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

bk_status bk_scbf_add_hash(bk_scbf *s, bk_hash h, uint64_t id) {
  BK_RETURN_IF(!s || id == UINT64_MAX, BK_EINVAL);
  pthread_mutex_lock(&s->write_lock);
  bk_status st = mark_dirty(s);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_relaxed);
  bk__scbf_filter *newest = &s->filters[n - 1];
  unsigned target = n - 1;
  if (st != BK_OK) {
    /* the flag could not be cleared durably: no write */
  } else if (id >= newest->start_id) {
    uint64_t end = bk__load_le64(newest->hdr + BK__SCBF_F_END);
    uint64_t count = bk__load_le64(newest->hdr + BK__SCBF_F_COUNT);
    if (count >= newest->capacity && end > newest->start_id && id >= end) {
      st = grow(s, n, end);
      target = n;
    }
  } else {
    target = find_range(s, n, id);
  }
  if (st == BK_OK) {
    bk__scbf_filter *f = &s->filters[target];
    uint64_t seq = write_begin(s);
    /* Ids, then count, then counters: whatever a crash interrupts, a
     * filter with a count has ids and a filter with counters has both (a
     * count stored before the ids left count 1 with an empty id range,
     * which the loader refuses). The fence keeps the counter stores after
     * the header stores. */
    if (id + 1 > bk__load_le64(f->hdr + BK__SCBF_F_END))
      bk__scbf_word_store(f->hdr + BK__SCBF_F_END, id + 1);
    uint64_t count = bk__load_le64(f->hdr + BK__SCBF_F_COUNT);
    if (count < BK__SCBF_COUNT_MAX)
      bk__scbf_word_store(f->hdr + BK__SCBF_F_COUNT, count + 1);
    atomic_thread_fence(memory_order_release);
    bk__cbf_add(&f->view, h);
    write_end(s, seq);
  }
  pthread_mutex_unlock(&s->write_lock);
  return st;
}

bk_status bk_scbf_add(bk_scbf *s, const void *key, size_t len, uint64_t id) {
  BK_RETURN_IF(!s || (!key && len), BK_EINVAL);
  return bk_scbf_add_hash(s, bk__hash_fast(s->p.hash_alg, s->p.seed, key, len),
                          id);
}

bk_status bk_scbf_remove_hash(bk_scbf *s, bk_hash h, uint64_t id) {
  BK_RETURN_IF(!s, BK_EINVAL);
  pthread_mutex_lock(&s->write_lock);
  bk_status st = BK_ENOTFOUND;
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_relaxed);
  unsigned i = find_range(s, n, id);
  bk__scbf_filter *f = &s->filters[i];
  uint64_t end = i + 1 < n ? s->filters[i + 1].start_id
                           : bk__load_le64(f->hdr + BK__SCBF_F_END);
  /* Only writers change counters and they hold the lock: a key whose
   * counters are all nonzero now can be removed. */
  if (id >= f->start_id && id < end && bk__cbf_contains(&f->view, h) &&
      (st = mark_dirty(s)) == BK_OK) {
    uint64_t seq = write_begin(s);
    st = bk__cbf_remove(&f->view, h);
    uint64_t count = bk__load_le64(f->hdr + BK__SCBF_F_COUNT);
    if (st == BK_OK && count > 0)
      bk__scbf_word_store(f->hdr + BK__SCBF_F_COUNT, count - 1);
    write_end(s, seq);
  }
  pthread_mutex_unlock(&s->write_lock);
  return st;
}

bk_status bk_scbf_remove(bk_scbf *s, const void *key, size_t len, uint64_t id) {
  BK_RETURN_IF(!s || (!key && len), BK_EINVAL);
  return bk_scbf_remove_hash(
      s, bk__hash_fast(s->p.hash_alg, s->p.seed, key, len), id);
}

bk_status bk_scbf_contains_hash(const bk_scbf *s, bk_hash h, bool *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  /* Start every filter's first cache miss at once (the line of its first
   * counter: index reduce(h.lo, m), or block reduce(h.lo, n_blocks), as
   * cbf.c derives them), so n filters cost about one memory latency, not
   * n. A wrong guess would only cost a useless prefetch. */
  /* Standard layout: the second probe's line too (index reduce(h.lo +
   * mix64(h.hi), m)): an absent key is usually refused by those two, so
   * all of a negative check's misses are then in flight together. */
  const uint64_t second = h.lo + bk__mix64(h.hi);
  for (unsigned i = 0; i < n; i++) {
    const bk_cbf *v = &s->filters[i].view;
    const unsigned char *base = (const unsigned char *)v->words;
    if (v->layout == BK_BLOOM_BLOCKED) {
      __builtin_prefetch(base +
                         bk_reduce(h.lo, v->n_blocks) * BK__CBF_BLOCK_BYTES);
    } else {
      __builtin_prefetch(base + ((bk_reduce(h.lo, v->m) << v->log_width) >> 3));
      if (v->k > 1)
        __builtin_prefetch(base +
                           ((bk_reduce(second, v->m) << v->log_width) >> 3));
    }
  }
  /* Every filter's two-probe pre-test first, without a branch between
   * them (their loads overlap and no early exit mispredicts), then the full
   * check only where it passed, newest first. */
  bool found = false;
  for (unsigned lo = 0; lo < n && !found; lo += 64) {
    unsigned hi = n - lo < 64 ? n : lo + 64;
    uint64_t maybe = 0;
    for (unsigned i = lo; i < hi; i++)
      maybe |= (uint64_t)bk__cbf_first_two(&s->filters[i].view, h) << (i - lo);
    for (unsigned i = hi; i-- > lo && maybe;) {
      if (((maybe >> (i - lo)) & 1) &&
          bk__cbf_contains(&s->filters[i].view, h)) {
        found = true;
        break;
      }
    }
  }
  *out = found;
  return BK_OK;
}

bk_status bk_scbf_contains(const bk_scbf *s, const void *key, size_t len,
                           bool *out) {
  BK_RETURN_IF(!s || !out || (!key && len), BK_EINVAL);
  return bk_scbf_contains_hash(
      s, bk__hash_fast(s->p.hash_alg, s->p.seed, key, len), out);
}

/*
 * msync every record; version 2: store each record's checksum and msync
 * the records again; msync the header; then (record_disk) disk_seqnum =
 * mem_seqnum and (version 2) the clean flag, and msync the header. The
 * flag reaches the disk after everything it vouches for. Caller holds the
 * write lock, or has exclusive access. Errors: BK_EIO (the flag stays
 * clear, disk_seqnum unchanged).
 */
static bk_status seal_file(bk_scbf *s, bool record_disk) {
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_relaxed);
  for (unsigned i = 0; i < n; i++)
    if (msync(s->filters[i].map, s->filters[i].map_len, MS_SYNC) != 0)
      return BK_EIO;
  if (s->version >= 2) {
    for (unsigned i = 0; i < n; i++) {
      bk__scbf_filter *f = &s->filters[i];
      bk__scbf_word_store(f->hdr + BK__SCBF_F_SUM, record_sum(f));
      /* Only the page holding the checksum is dirty now. */
      if (msync(f->map, f->map_len, MS_SYNC) != 0) return BK_EIO;
    }
  }
  if (msync(s->hdr_map, BK__SCBF_FILE_HEADER, MS_SYNC) != 0) return BK_EIO;
  if (record_disk) {
    /* Everything up to mem_seqnum is on disk now; say so, durably. A
     * mem_seqnum of 0 (reopened after a crash mid-write, nothing written
     * since) would erase the last replay point: keep it. */
    uint64_t mem = bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM);
    if (mem != 0) bk__scbf_word_store(s->hdr + BK__SCBF_H_DISK, mem);
  }
  /* A handle that does not map every filter (another one grew the file
   * since it opened) cannot checksum them all: it does not vouch. */
  if (s->version >= 2 && bk__load_le32(s->hdr + BK__SCBF_H_NFILTERS) == n)
    bk__scbf_word_store(s->hdr + BK__SCBF_H_CLEAN, 1);
  if (msync(s->hdr_map, BK__SCBF_FILE_HEADER, MS_SYNC) != 0) return BK_EIO;
  s->dirty = false;
  return BK_OK;
}

bk_status bk_scbf_flush(bk_scbf *s) {
  BK_RETURN_IF(!s, BK_EINVAL);
  if (s->fd < 0) return BK_OK;
  pthread_mutex_lock(&s->write_lock);
  bk_status st = seal_file(s, true);
  pthread_mutex_unlock(&s->write_lock);
  return st;
}

bk_status bk_scbf_mem_seqnum(const bk_scbf *s, uint64_t *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  *out = bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM);
  return BK_OK;
}

bk_status bk_scbf_disk_seqnum(const bk_scbf *s, uint64_t *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  *out = bk__scbf_word_load(s->hdr + BK__SCBF_H_DISK);
  return BK_OK;
}

static void fill_filter_info(const bk_scbf *s, unsigned i, unsigned n,
                             bk_scbf_filter_info *out) {
  const bk__scbf_filter *f = &s->filters[i];
  memset(out, 0, sizeof *out);
  out->capacity = f->capacity;
  out->fpp = f->fpp;
  out->m_counters = f->view.m;
  out->k = f->view.k;
  out->count = bk__scbf_word_load(f->hdr + BK__SCBF_F_COUNT);
  uint64_t end = i + 1 < n ? s->filters[i + 1].start_id
                           : bk__scbf_word_load(f->hdr + BK__SCBF_F_END);
  out->has_ids = end > f->start_id;
  out->first_id = f->start_id;
  out->last_id = out->has_ids ? end - 1 : f->start_id;
  bk__cbf_census(&f->view, &out->nonzero, &out->saturated);
  /* (nonzero share)^k: the rate of the standard layout; for the blocked
   * layout an estimate of the same order. */
  out->fill_fpp = pow((double)out->nonzero / (double)f->view.m, f->view.k);
}

bk_status bk_scbf_filter_info_get(const bk_scbf *s, unsigned index,
                                  bk_scbf_filter_info *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  BK_RETURN_IF(index >= n, BK_ERANGE);
  fill_filter_info(s, index, n, out);
  return BK_OK;
}

bk_status bk_scbf_info_get(const bk_scbf *s, bk_scbf_info *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  bk_scbf_info info = {
      .capacity = s->p.capacity,
      .fpp = (double)s->p.fpp_units * 1e-12,
      .growth = (double)s->p.growth_units / 1e6,
      .tightening = (double)s->p.tightening_units / 1e6,
      .counter_bits = s->p.counter_bits,
      .layout = (bk_bloom_layout)s->p.layout,
      .hash_alg = s->p.hash_alg,
      .seed = s->p.seed,
      .max_filters = s->p.max_filters,
      .seqnum = bk__scbf_word_load(s->hdr + BK__SCBF_H_SEQ),
      .mem_seqnum = bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM),
      .disk_seqnum = bk__scbf_word_load(s->hdr + BK__SCBF_H_DISK),
      .file_backed = s->fd >= 0,
      .file_size =
          s->fd >= 0 ? atomic_load_explicit(&s->file_size, memory_order_relaxed)
                     : 0,
      .memory = sizeof *s,
  };
  unsigned n = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  info.n_filters = n;
  double none = 0.0; /* ln P(no filter answers): exact for tiny rates */
  for (unsigned i = 0; i < n; i++) {
    bk_scbf_filter_info fi;
    fill_filter_info(s, i, n, &fi);
    info.count += fi.count;
    info.nonzero += fi.nonzero;
    info.saturated += fi.saturated;
    info.m_counters += fi.m_counters;
    none += log1p(-fi.fill_fpp);
    if (s->fd < 0) info.memory += s->filters[i].region.size;
  }
  info.estimated_fpp = none < 0.0 ? -expm1(none) : 0.0;
  *out = info;
  return BK_OK;
}

bk_status bk_scbf_verified(const bk_scbf *s, bool *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  *out = s->verified;
  return BK_OK;
}

/* Filter f's counters: the sum of those below their maximum (128 bits: m
 * up to 2^40 counters of up to 2^32 - 1) and how many are at it. */
static void counter_sum(const bk__scbf_filter *f, bk__u128 *sum,
                        uint64_t *saturated) {
  const bk_cbf *v = &f->view;
  bk__u128 total = 0;
  uint64_t sat = 0;
  for (uint64_t i = 0; i < v->m; i++) {
    uint64_t c = bk__cbf_get_at(v->words, v->log_width, v->max, i);
    if (c == v->max)
      sat++;
    else
      total += c;
  }
  *sum = total;
  *saturated = sat;
}

static uint64_t clamp64(bk__u128 x) {
  return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

/* Every add adds 1 to k counters (a position drawn twice counts twice)
 * and every remove of an added key takes 1 from k, except at a saturated
 * counter, which never moves again. So without saturated counters the sum
 * is exactly k * count; with some, the unsaturated ones sum to at most
 * that. A write a crash interrupted (mem_seqnum 0) may have stored its
 * count and only part of its counters: down to k * (count - 1). */
static void check_filter(const bk_scbf *s, unsigned i, bool interrupted,
                         bk_scbf_filter_check *out) {
  const bk__scbf_filter *f = &s->filters[i];
  memset(out, 0, sizeof *out);
  out->count = bk__scbf_word_load(f->hdr + BK__SCBF_F_COUNT);
  out->k = f->view.k;
  bk__u128 want = (bk__u128)out->count * out->k, sum;
  counter_sum(f, &sum, &out->saturated);
  out->expected_sum = clamp64(want);
  out->sum = clamp64(sum);
  bool empty = bk__scbf_word_load(f->hdr + BK__SCBF_F_END) == f->start_id;
  bk__cbf_params fp = {.m = f->view.m, .width = f->view.width};
  out->stray_bits = !bk__scbf_counters_ok(
      f->hdr + BK__SCBF_RECORD_HEADER,
      (size_t)(f->record_bytes - BK__SCBF_RECORD_HEADER), &fp, empty);
  bk__u128 low = interrupted && want >= out->k ? want - out->k : want;
  bool sum_ok = out->saturated ? sum <= want : sum >= low && sum <= want;
  out->consistent = sum_ok && !out->stray_bits;
}

bk_status bk_scbf_verify(const bk_scbf *s, bk_scbf_verify_result *out) {
  BK_RETURN_IF(!s || !out, BK_EINVAL);
  bk_scbf *w = (bk_scbf *)s; /* the lock is not part of the state */
  pthread_mutex_lock(&w->write_lock);
  memset(out, 0, sizeof *out);
  out->verified = s->verified;
  out->interrupted = bk__scbf_word_load(s->hdr + BK__SCBF_H_MEM) == 0;
  out->n_filters = atomic_load_explicit(&s->n_filters, memory_order_acquire);
  for (unsigned i = 0; i < out->n_filters; i++) {
    check_filter(s, i, out->interrupted, &out->filters[i]);
    out->n_inconsistent += !out->filters[i].consistent;
  }
  pthread_mutex_unlock(&w->write_lock);
  return out->n_inconsistent ? BK_ECORRUPT : BK_OK;
}
