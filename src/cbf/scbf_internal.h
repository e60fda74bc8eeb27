/* SPDX-License-Identifier: MIT */
/*
 * Private to src/cbf (and the tests): the bk_scbf file and blob layout
 * constants (drawn in scbf.c and scbf_io.c), the parameter arithmetic,
 * exposed so the tests can check sizes beyond 4 GiB without allocating
 * them, and the object that scbf.c and scbf_io.c share.
 */
#ifndef BLOOMKIT_SRC_SCBF_INTERNAL_H
#define BLOOMKIT_SRC_SCBF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "cbf/cbf_internal.h"

#define BK__SCBF_FILE_HEADER 128u  /* the file's header */
#define BK__SCBF_RECORD_HEADER 64u /* each filter's header */
#define BK__SCBF_BLOB_HEADER 96u   /* H of the serialized form */
/* File format versions: 1 had no counter checksums; 2 adds the "closed
 * cleanly" flag (header offset 96) and each record's checksum (offset 56).
 * A version-1 file opens (unverified) and stays version 1. */
#define BK__SCBF_FILE_VERSION 2u
/* Most keys a filter counts (a count near 2^64 would wrap). */
#define BK__SCBF_COUNT_MAX ((uint64_t)1 << 62)

/* A bk_scbf's parameters as stored (quantized: what every reader uses). */
typedef struct bk__scbf_params {
  uint64_t capacity;
  uint64_t fpp_units;        /* 1e-12 */
  uint32_t growth_units;     /* 1e-6 */
  uint32_t tightening_units; /* 1e-6 */
  uint64_t seed;
  unsigned counter_bits, layout, max_filters;
  bk_hash_alg hash_alg;
} bk__scbf_params;

/* Defaults applied and validated. Errors: BK_EINVAL. */
BK_API bk_status bk__scbf_params_from_config(const bk_scbf_config *cfg,
                                             bk__scbf_params *out);
/* Filter i's counting-filter parameters and error share. Errors: BK_EFULL
 * (capacity beyond 2^50, or a filter bk_cbf cannot size). */
BK_API bk_status bk__scbf_filter_params(const bk__scbf_params *p, unsigned i,
                                        bk__cbf_params *out, double *fpp_out);
/* Bytes of filter record (64-byte header + counters). */
BK_API uint64_t bk__scbf_record_bytes(const bk__cbf_params *fp);
/* The 40 parameter bytes, stored / read and validated (BK_ECORRUPT). */
BK_API void bk__scbf_params_store(unsigned char *q, const bk__scbf_params *p);
BK_API bk_status bk__scbf_params_load(const unsigned char *q,
                                      bk__scbf_params *out);
/* A record header against filter `index`'s parameters. BK_ECORRUPT. With
 * has_sum (a version-2 file) the 8 bytes at 56 hold the record's checksum
 * and may be anything; otherwise (a blob, a version-1 file) they are 0. */
BK_API bk_status bk__scbf_record_check(const unsigned char *h, unsigned index,
                                       uint64_t want_start,
                                       const bk__cbf_params *fp, bool has_sum);
/* Bits of counter storage past counter m are zero (create leaves them so
 * and no operation touches them), and an empty filter (no ids) has no
 * counter set. */
bool bk__scbf_counters_ok(const unsigned char *c, size_t bytes,
                          const bk__cbf_params *fp, bool empty);
/* seqnum >= 1, mem_seqnum 0 or seqnum, disk_seqnum <= seqnum. */
BK_API bk_status bk__scbf_seqnums_check(uint64_t seq, uint64_t mem,
                                        uint64_t disk);

/* The object, shared by scbf.c and scbf_io.c (the serialized form). */
typedef struct bk__scbf_filter {
  bk_cbf view;        /* over the record's counters */
  unsigned char *hdr; /* the record's 64-byte header */
  uint64_t start_id;  /* copies of the immutable header fields */
  uint64_t capacity;
  double fpp;
  uint64_t record_bytes; /* header + counters */
  uint64_t offset;       /* file: offset of the record */
  void *map;             /* file: the mapping holding it */
  size_t map_len;
  bk__region region; /* memory: the record */
} bk__scbf_filter;

struct bk_scbf {
  bk__alloc alloc;
  bk__scbf_params p;
  _Atomic unsigned n_filters; /* published with release */
  unsigned char *hdr;         /* the 128-byte header (file or mem_hdr) */
  int fd;                     /* -1 in memory */
  void *hdr_map;
  _Atomic uint64_t file_size; /* read by info beside a growing writer */
  unsigned version;           /* file format version (1 or 2) */
  bool verified; /* counters known good: in memory, created here, or the
                    file was closed cleanly and its checksums matched */
  bool dirty;    /* this handle wrote since it last sealed the file */
  pthread_mutex_t write_lock;
  _Alignas(8) unsigned char mem_hdr[BK__SCBF_FILE_HEADER];
  bk__scbf_filter filters[BK_SCBF_FILTERS_MAX];
};

/* The mutable fields are native atomic words in mapped memory. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error \
    "bk_scbf reads its mutable header fields as native words: little-endian only"
#endif

static inline uint64_t bk__scbf_word_load(const unsigned char *p) {
  return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
}
static inline void bk__scbf_word_store(unsigned char *p, uint64_t v) {
  __atomic_store_n((uint64_t *)(void *)p, v, __ATOMIC_RELEASE);
}

/* Offsets of the mutable fields: in the file header (H), in a record (F). */
#define BK__SCBF_H_NFILTERS 64
#define BK__SCBF_H_SEQ 72
#define BK__SCBF_H_MEM 80
#define BK__SCBF_H_DISK 88
#define BK__SCBF_H_CLEAN 96 /* version 2: 1 = closed cleanly, sums valid */
#define BK__SCBF_F_SUM 56   /* version 2: XXH3-64 of the record */
#define BK__SCBF_F_COUNT 40
#define BK__SCBF_F_END 48

/* A new in-memory bk_scbf with parameters p and no filter yet. Errors:
 * BK_ENOMEM, BK_EINVAL (allocator). */
bk_status bk__scbf_new(const bk__scbf_params *p, const bk_allocator *user,
                       bk_scbf **out);
/* Write a fresh 128-byte header for s->p (sealed, seqnum 1, the current
 * file version, not closed cleanly). */
void bk__scbf_header_init(bk_scbf *s);
/* In memory: allocate record i (zeroed). Errors: BK_ENOMEM. */
bk_status bk__scbf_mem_record(bk_scbf *s, unsigned i, const bk__cbf_params *fp,
                              unsigned char **record);
/* Make filter i a view over `record` (its header already written). */
void bk__scbf_filter_setup(bk_scbf *s, unsigned i, unsigned char *record,
                           const bk__cbf_params *fp, double fpp);

#endif
