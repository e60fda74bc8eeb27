/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: bk_apbf's struct and its state word, shared
 * by apbf.c (slices, inserts, checks, shifts) and apbf_io.c (the serialized
 * form). Never installed.
 */
#ifndef BLOOMKIT_SRC_APBF_INTERNAL_H
#define BLOOMKIT_SRC_APBF_INTERNAL_H

#include <pthread.h>

#include "bloomkit/apbf.h"
#include "core/internal.h"
#include "core/sync.h"
#include "fbf_internal.h" /* bk__sat_add, bk__sat_mul */

/*
 * The published state, one atomic word, so a reader sees it whole and an
 * inserter claims its place in a generation with one fetch-add:
 *
 *   63              41  40  39    32 31                             0
 *   [ shifts mod 2^23 ][sw][  base  ][ inserts in this generation   ]
 *
 *   base   physical slot of logical slice 0; logical i is slot
 *          (base + i) % n, n = k + l. A shift moves base back by one.
 *   sw     a shift is clearing the new young slices (sweep_n of them,
 *          logical 0 .. sweep_n - 1): readers leave them out, inserters
 *          wait.
 *   count  (count-based) claims made in this generation: a claim that
 *          reads count < g inserts, count == g shifts, more waits. The
 *          shift stores count g + 1 while it sweeps, so nobody else reads
 *          exactly g. Time-based APBFs leave it 0.
 *   shifts the seqlock's generation: a reader retries when bits 32..63
 *          changed under it.
 */
#define BK__AP_COUNT(s) ((uint32_t)(s))
#define BK__AP_BASE(s) ((unsigned)(((s) >> 32) & 255u))
#define BK__AP_SWEEP(s) ((unsigned)(((s) >> 40) & 1u))
#define BK__AP_GEN(s) ((s) >> 41)
#define BK__AP_GEN_MASK ((((uint64_t)1) << 23) - 1)
#define BK__AP_MAKE(gen, sweep, base, count)                               \
  ((((uint64_t)(gen)&BK__AP_GEN_MASK) << 41) | ((uint64_t)(sweep) << 40) | \
   ((uint64_t)(base) << 32) | (uint64_t)(count))

/* Most shifts a blob may record, and most inserts a generation's count
 * may hold in one (loader bounds; unreachable in practice). */
#define BK__AP_MAX_SHIFTS ((uint64_t)1 << 62)
#define BK__AP_GEN_COUNT_MAX ((uint64_t)1 << 56)

struct bk_apbf {
  bk__alloc alloc;
  /* shape, fixed at creation */
  unsigned k, l, n; /* n = k + l slices */
  uint64_t m;       /* bits per slice */
  uint64_t wps;     /* words per slice */
  uint64_t g;       /* inserts per generation (time-based: sizing only) */
  uint64_t period;  /* time-based shift period; 0: count-based */
  uint64_t start;   /* time-based: shift j is due at start + j period */
  bk_hash_alg hash_alg;
  uint64_t seed;
  bool single_writer; /* inserts: no key locks, plain stores */
  bool prefetch;      /* slices beyond the cache: prefetch a window */
  /* Per physical slot s: (s^3 - s) / 6, its probe offset, and its first
   * word (words + s * wps), side by side for the probe loop. */
  struct {
    uint64_t cubic;
    uint64_t *first;
  } slot[BK_APBF_MAX_SLICES];
  uint64_t *words; /* slot s at words + s * wps */
  bk__region region;
  /* BK__KEY_LOCKS sequence locks, one cache line each: the u32 lock, then
   * (time-based) a u64 count of the inserts made under it in the current
   * generation, written only by the lock's holder. */
  bk__region locks;

  /* shared with readers and writers */
  uint64_t state;   /* BK__AP_* (atomic) */
  uint64_t shifts;  /* all shifts so far (atomic; stored before state) */
  unsigned sweep_n; /* slices being swept while BK__AP_SWEEP (atomic) */
  /* control, under mu */
  pthread_mutex_t mu;
  uint64_t now;
  /* Inserts of the generation each physical slot was slice 0 of (the
   * slot's own generation); the current one is live (count or locks). */
  uint64_t gen_count[BK_APBF_MAX_SLICES];
};

static inline uint32_t *bk__apbf_lock(const bk_apbf *f, unsigned i) {
  return (uint32_t *)(void *)((char *)f->locks.data + i * BK_CACHE_LINE);
}
static inline uint64_t *bk__apbf_lock_count(const bk_apbf *f, unsigned i) {
  return (uint64_t *)(void *)((char *)f->locks.data + i * BK_CACHE_LINE + 8);
}

/* The physical slot of logical slice i when slice 0 is slot `base`. */
static inline unsigned bk__apbf_slot(const bk_apbf *f, unsigned base,
                                     unsigned i) {
  unsigned s = base + i;
  return s >= f->n ? s - f->n : s;
}

/* Inserts in the current generation (time-based: the locks' counts;
 * count-based: the claims, at most g). */
uint64_t bk__apbf_current_count(const bk_apbf *f);

/* Shifts due by `now` under a time-based APBF's schedule. */
static inline uint64_t bk__apbf_due(const bk_apbf *f, uint64_t now) {
  return now < f->start ? 0 : (now - f->start) / f->period;
}

/* Prefetch the words of the key's bits in logical slices 0 .. k - 1 (the
 * first window a check probes, and where an insert writes), to overlap
 * their misses with other work: for bk_idem's batches, as
 * bk__fbf_prefetch. */
void bk__apbf_prefetch(const bk_apbf *f, bk_hash h);

/* Allocate an APBF of this shape (zeroed state, base 0). */
bk_status bk__apbf_alloc(const bk__alloc *al, unsigned k, unsigned l,
                         uint64_t m, bk_apbf **out);

/* The chance of k consecutive set slices among n with fills r[0..n-1]
 * (independent): the paper's recursion, as a run-length DP. */
double bk__apbf_run_probability(unsigned k, unsigned n, const double *r);

#endif
