/* SPDX-License-Identifier: MIT */
/*
 * Private to src/cbf (and the tests): the bk_scbf file and blob layout
 * constants (drawn in scbf.c) and the parameter arithmetic, exposed so the
 * tests can check sizes beyond 4 GiB without allocating them.
 */
#ifndef BLOOMKIT_SRC_SCBF_INTERNAL_H
#define BLOOMKIT_SRC_SCBF_INTERNAL_H

#include "cbf/cbf_internal.h"

#define BK__SCBF_FILE_HEADER 128u  /* the file's header */
#define BK__SCBF_RECORD_HEADER 64u /* each filter's header */
#define BK__SCBF_BLOB_HEADER 96u   /* H of the serialized form */
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
/* A record header against filter `index`'s parameters. BK_ECORRUPT. */
BK_API bk_status bk__scbf_record_check(const unsigned char *h, unsigned index,
                                       uint64_t want_start,
                                       const bk__cbf_params *fp);
/* seqnum >= 1, mem_seqnum 0 or seqnum, disk_seqnum <= seqnum. */
BK_API bk_status bk__scbf_seqnums_check(uint64_t seq, uint64_t mem,
                                        uint64_t disk);

#endif
