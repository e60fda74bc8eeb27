/* SPDX-License-Identifier: MIT */
/*
 * Private to the bloomclock component: bk_vclock's struct and the calls
 * that vclock_io.c (its wire form) makes into vclock.c. Never installed.
 */
#ifndef BLOOMKIT_SRC_VCLOCK_INTERNAL_H
#define BLOOMKIT_SRC_VCLOCK_INTERNAL_H

#include "bloomkit/bloomclock.h"
#include "core/internal.h"

struct bk_vclock {
  bk__alloc alloc;
  uint64_t processes;
  uint64_t process_id;
  uint32_t *v; /* region.data */
  bk__region region;
};

/* A zero clock of p processes for process pid (valid). Errors: BK_ENOMEM. */
bk_status bk__vclock_new(bk_vclock **out, const bk__alloc *al, uint64_t p,
                         uint64_t pid);

/* dst[i] = max(dst[i], src[i]) for i < n (AVX2 where the CPU has it). */
void bk__vclock_max_into(uint32_t *dst, const uint32_t *src, size_t n);

#endif
