/* SPDX-License-Identifier: MIT */
/*
 * Private to src/cbf: the counting filter's struct and the calls that
 * cbf_io.c (its serialized form) and the scalable filter build on (a
 * bk_cbf can be a view over storage it does not own, e.g. a region of a
 * memory-mapped file).
 */
#ifndef BLOOMKIT_SRC_CBF_INTERNAL_H
#define BLOOMKIT_SRC_CBF_INTERNAL_H

#include "bloomkit/cbf.h"
#include "core/hash_fast.h"
#include "core/internal.h"

/* Bytes in a block of the blocked layout: one cache line. */
#define BK__CBF_BLOCK_BYTES 64u
/* Most counters a filter may have (the storage stays below 2^40 bytes). */
#define BK__CBF_COUNTERS_MAX ((uint64_t)1 << 40)

struct bk_cbf {
  uint64_t *words;   /* m * width bits, in whole 64-byte blocks, zero past m */
  uint64_t m;        /* counters */
  uint64_t n_blocks; /* 64-byte blocks of storage */
  uint64_t capacity; /* sized for (0: by m, k) */
  uint64_t seed;
  unsigned k;
  unsigned width;     /* 4, 8, 16, 32 */
  unsigned log_width; /* 2..5 */
  unsigned layout;    /* bk_bloom_layout */
  unsigned log_cells; /* blocked: log2 of counters per block */
  bk_hash_alg hash_alg;
  uint32_t max;       /* a counter's maximum */
  bool owned;         /* words come from region (else a view) */
  bool single_writer; /* updates without locked instructions */
  bk__alloc alloc;
  bk__region region;
};

/*
 * The parameters a config resolves to: m counters (rounded to whole
 * blocks), k, width, layout, alg. Errors: BK_EINVAL. Pure: no allocation.
 */
typedef struct bk__cbf_params {
  uint64_t m;
  uint64_t capacity;
  uint64_t seed;
  unsigned k, width, layout;
  bk_hash_alg hash_alg;
} bk__cbf_params;

BK_API bk_status bk__cbf_resolve(const bk_cbf_config *cfg, bk__cbf_params *out);

/* Bytes of counter storage for p (a multiple of 64). */
BK_API size_t bk__cbf_storage_bytes(const bk__cbf_params *p);

/* Make *f a filter over `storage` (bk__cbf_storage_bytes(p) bytes, 8-byte
 * aligned, zeroed or holding valid counters), not owned: destroy must not be
 * called on it. */
BK_API void bk__cbf_view(bk_cbf *f, const bk__cbf_params *p, void *storage);

/* A filter owning new zeroed storage for p (valid parameters), keeping the
 * allocator. Errors: BK_ENOMEM. */
bk_status bk__cbf_new(bk_cbf **out, const bk__alloc *al,
                      const bk__cbf_params *p);

/* Counter widths a filter may have. */
static inline bool bk__cbf_width_ok(unsigned w) {
  return w == 4 || w == 8 || w == 16 || w == 32;
}

/* Counters per 64-byte block. */
static inline uint64_t bk__cbf_cells_per_block(unsigned width) {
  return BK__CBF_BLOCK_BYTES * 8u / width;
}

/* Counter i of `words` (width 1 << lw bits, maximum `max`), from locals:
 * read the struct's fields once per call (the atomic loads would otherwise
 * make the compiler reload them for every probe). */
static inline uint64_t bk__cbf_get_at(const uint64_t *words, unsigned lw,
                                      uint64_t max, uint64_t i) {
  uint64_t bit = i << lw;
  return (__atomic_load_n(&words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) &
         max;
}

/* Whether h's first two counters are both nonzero: the pre-test of every
 * lookup (an absent key fails it 3 times in 4 at the design fill). No
 * branch on the loaded values, so a caller can run it over several filters
 * and have all their misses in flight together. Positions as cbf.c's. */
static inline bool bk__cbf_first_two(const bk_cbf *f, bk_hash h) {
  const unsigned lw = f->log_width;
  const uint64_t max = f->max;
  uint64_t c0, c1 = 1;
  if (f->layout == BK_BLOOM_STANDARD) {
    c0 = bk__cbf_get_at(f->words, lw, max, bk_reduce(h.lo, f->m));
    if (f->k > 1)
      c1 = bk__cbf_get_at(f->words, lw, max,
                          bk_reduce(h.lo + bk__mix64(h.hi), f->m));
  } else {
    const unsigned bits = f->log_cells;
    const uint64_t mask = ((uint64_t)1 << bits) - 1, grp = bk__mix64(h.hi);
    const uint64_t *blk = f->words + bk_reduce(h.lo, f->n_blocks) * 8;
    c0 = bk__cbf_get_at(blk, lw, max, grp & mask);
    if (f->k > 1) c1 = bk__cbf_get_at(blk, lw, max, (grp >> bits) & mask);
  }
  return (c0 != 0) & (c1 != 0);
}

/* The hot paths over a digest, no argument checks. remove returns
 * BK_ENOTFOUND (nothing changed) when a counter is zero. */
BK_API void bk__cbf_add(bk_cbf *f, bk_hash h);
BK_API bk_status bk__cbf_remove(bk_cbf *f, bk_hash h);
BK_API bool bk__cbf_contains(const bk_cbf *f, bk_hash h);
BK_API uint32_t bk__cbf_count(const bk_cbf *f, bk_hash h);

/* Counters above zero and at the maximum, O(m). */
BK_API void bk__cbf_census(const bk_cbf *f, uint64_t *nonzero,
                           uint64_t *saturated);

#endif
