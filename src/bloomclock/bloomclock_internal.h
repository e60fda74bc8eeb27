/* SPDX-License-Identifier: MIT */
/*
 * Private to the bloomclock component: the Bloom clock's struct (shared by
 * bloomclock.c and the tests that check its representation) and the event
 * hash. Never installed.
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

/* The k counters event x of process pid increments (k <= 64 entries). */
BK_API void bk__bloomclock_event_indices(const bk_bloomclock *c, uint64_t pid,
                                         uint64_t x, uint64_t *idx);

/* Tests only: which 8-bit merge/compare kernels run. */
enum { BK__SIMD_AUTO = 0, BK__SIMD_SSE2 = 1, BK__SIMD_PORTABLE = 2 };
BK_API void bk__bloomclock_set_simd(int level);

#endif
