/* SPDX-License-Identifier: MIT */
/*
 * Private to the bloomclock component: the Bloom clock's struct (shared by
 * bloomclock.c, bloomclock_io.c, bloomclock_prob.c and the tests that check
 * its representation), the helpers those files share, and the event hash.
 * Never installed.
 */
#ifndef BLOOMKIT_SRC_BLOOMCLOCK_INTERNAL_H
#define BLOOMKIT_SRC_BLOOMCLOCK_INTERNAL_H

#include "bloomkit/bloomclock.h"
#include "core/internal.h"

struct bk_bloomclock {
  bk__alloc alloc;
  uint64_t m;
  unsigned k;
  unsigned width; /* 8, 16 or 32 */
  uint32_t max;   /* 2^width - 1: "infinity" */
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t process_id;
  uint64_t events; /* the next local event number */
  uint64_t base;   /* every unsaturated counter's value is base + c[i] */
  void *counters;  /* region.data: m uint8/16/32_t, zero to the line end */
  bk__region region;
};

/* Counter widths a clock may have. */
static inline bool bk__bloomclock_width_ok(unsigned w) {
  return w == 8 || w == 16 || w == 32;
}

/* Counter i as stored (c->max: saturated). */
static inline uint32_t bk__bloomclock_get_c(const bk_bloomclock *c,
                                            uint64_t i) {
  switch (c->width) {
    case 8:
      return ((const uint8_t *)c->counters)[i];
    case 16:
      return ((const uint16_t *)c->counters)[i];
    default:
      return ((const uint32_t *)c->counters)[i];
  }
}

/* Clocks that may be compared and merged: same m, k, width and hash. */
static inline bool bk__bloomclock_same_shape(const bk_bloomclock *a,
                                             const bk_bloomclock *b) {
  return a->m == b->m && a->k == b->k && a->width == b->width &&
         a->hash_alg == b->hash_alg && a->seed == b->seed;
}

/* A zero clock of the given shape (valid parameters). Errors: BK_ENOMEM. */
bk_status bk__bloomclock_new(bk_bloomclock **out, const bk__alloc *al,
                             uint64_t m, unsigned k, unsigned width,
                             bk_hash_alg alg, uint64_t seed);

/* dst := max(dst, (src counters of dst's shape, src_base)); no tick. */
void bk__bloomclock_merge_raw(bk_bloomclock *dst, const void *src,
                              uint64_t src_base);

/* The k counters event x of process pid increments (k <= 64 entries). */
BK_API void bk__bloomclock_event_indices(const bk_bloomclock *c, uint64_t pid,
                                         uint64_t x, uint64_t *idx);

/* Tests only: which 8-bit merge/compare kernels run. */
enum { BK__SIMD_AUTO = 0, BK__SIMD_SSE2 = 1, BK__SIMD_PORTABLE = 2 };
BK_API void bk__bloomclock_set_simd(int level);

#endif
