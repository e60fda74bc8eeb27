/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: the FBF's struct and the calls its files
 * make to one another: fbf.c (the filter: lanes, checks, inserts, key
 * locks, publishing a state), fbf_refresh.c (refresh and the clock),
 * fbf_adapt.c (the estimate, sizing and Algorithm 3), fbf_io.c (the
 * serialized form), and idem.c and timer.c, which build on the FBF.
 */
#ifndef BLOOMKIT_SRC_FBF_INTERNAL_H
#define BLOOMKIT_SRC_FBF_INTERNAL_H

#include <pthread.h>

#include "bloomkit/fbf.h"
#include "bloomkit/params.h"
#include "core/hash_fast.h"
#include "core/internal.h"
#include "core/sync.h"

/* Lanes per sweep chunk: a refresh clears a dropped filter chunk by chunk,
 * and inserters help with the chunks they touch (see fbf.c). */
#define BK__FBF_CHUNK_LANES 4096u
#define BK__FBF_TRACE_CAP 256u
/* Key locks: insert_if_absent's per-key locks, which every insert takes
 * (see insert_locked in fbf.c), each with its own insert counts. */
#define BK__FBF_LOCKS BK__KEY_LOCKS /* chosen by bk__key_lock_index */

/*
 * The published state, one atomic word so a reader sees it whole:
 *
 *   63                      20  19  18  17      11 10   6 5    0
 *   [ generation (44 bits)  ] [fs][sw][ count (7)][ (4)  ][head]
 *
 *   head   physical slot of the future filter; logical position p (0 future,
 *          1 present, 2.. past, newest first) lives in slot (head + p) % W
 *   count  filters in the logical set, N + 2
 *   sw     a refresh is sweeping dropped slots
 *   fs     the slot being swept is the new future (its unswept chunks still
 *          hold the dropped filter's bits, which readers mask)
 *   gen    refreshes so far; chunk epochs compare against it
 */
#define BK__ST_HEAD(s) ((unsigned)((s)&63u))
#define BK__ST_COUNT(s) ((unsigned)(((s) >> 11) & 127u))
#define BK__ST_SWEEP(s) ((unsigned)(((s) >> 18) & 1u))
#define BK__ST_FSWEEP(s) ((unsigned)(((s) >> 19) & 1u))
#define BK__ST_GEN(s) ((s) >> 20)
#define BK__ST_MAKE(head, count, sweep, fsweep, gen)                          \
  ((uint64_t)(head) | ((uint64_t)(count) << 11) | ((uint64_t)(sweep) << 18) | \
   ((uint64_t)(fsweep) << 19) | ((uint64_t)(gen) << 20))

struct bk_fbf {
  bk__alloc alloc;
  /* geometry, fixed at creation */
  uint64_t m; /* bits per constituent filter = lanes */
  unsigned k;
  unsigned width;  /* W: physical slots per lane = most filters */
  unsigned stride; /* bits from one lane to the next: W, or 64 when W > 57 */
  uint64_t n_words;
  uint64_t *words;
  bk__region region;
  uint64_t n_chunks;
  uint64_t *chunk_epoch; /* gen of the last sweep of each chunk; top bit busy */
  bk__region chunk_region;
  /* BK__FBF_LOCKS entries of lock_stride bytes: a u32 sequence lock (odd
   * while held) on its own cache line, then on the next lines u64
   * counts[W], the inserts made under that lock into each physical slot. A
   * slot's count is the sum over the locks; only the lock's holder writes
   * its counts (plain loads and stores), and a refresh's reset of a
   * dropped slot's counts meets no holder writing that slot. */
  bk__region locks;
  size_t lock_stride;
  bk_hash_alg hash_alg;
  uint64_t seed;
  bk_fbf_check check;

  /* shared with readers and writers */
  uint64_t state; /* BK__ST_* (atomic) */
  /* The generation whose refresh has ended its grace period: no insert
   * under an older state is still running. (atomic) */
  uint64_t grace_gen;
  uint64_t keep_mask[64]; /* sweep: AND masks, period stride */
  /* control, under mu */
  pthread_mutex_t mu;
  uint64_t became_present[BK_FBF_MAX_FILTERS]; /* per physical slot */
  /* Inserts a slot shares with the next older filter: every insert made
   * while it was the future also went into the then-present filter, so this
   * is its count at the moment it became the present. (atomic reads) */
  uint64_t shared[BK_FBF_MAX_FILTERS];
  uint64_t now;
  uint64_t next_refresh;
  uint64_t refresh_period;
  uint64_t min_window;
  unsigned target_count;
  uint64_t refreshes;
  /* The generation a loaded blob recorded: the state word's generation
   * restarts at 0 on load (it only orders chunk sweeps within a process),
   * and serialize writes gen_base + that, saturating at
   * BK__FBF_GEN_SAVED_MAX, so every state serializes to a loadable blob. */
  uint64_t gen_base;
  uint64_t deferred;
  /* adaptive resizing */
  bool adaptive;
  double target_fpp;
  uint64_t adapt_interval;
  uint64_t next_adapt;
  uint64_t period_step;
  uint64_t min_period, max_period;
  unsigned min_filters, max_filters;
  bk_fbf_resize_event trace[BK__FBF_TRACE_CAP];
  size_t trace_len; /* events ever recorded */
};

/* a + b and a * b stuck at UINT64_MAX, the schedule's "never": a clock at
 * the end of time has no next event, a window longer than time is all. */
/* Largest generation a blob records (the loader's bound; the field is
 * informational and saturates there). */
#define BK__FBF_GEN_SAVED_MAX (((uint64_t)1 << 43) - 1)

/* Most inserts an FBF's filters may have counted in all (a loader bound:
 * unreachable in practice, and far from wrapping the u64 counts). */
#define BK__FBF_MAX_INSERTS ((uint64_t)1 << 62)
/* Most inserts one slot's count may hold in a blob: a 64th of the above,
 * so W <= 64 slots never sum past it. Inserts count without a bound, so a
 * loaded state at the bound passes it with the next insert; the serializer
 * writes min(count, BK__FBF_SLOT_MAX) (shared likewise), so whatever a
 * loaded state does next saves as a state the loader takes (the fuzzer
 * found a slot loaded at 2^62 that one insert took past the sum's bound). */
#define BK__FBF_SLOT_MAX ((uint64_t)1 << 56)

static inline uint64_t bk__sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static inline uint64_t bk__sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
/* a + n b, the time n periods (or intervals) b after a, saturating. */
static inline uint64_t bk__sat_add_mul(uint64_t a, uint64_t n, uint64_t b) {
  return bk__sat_add(a, bk__sat_mul(n, b));
}

/* True when a goal of n filters at period t cannot keep min_window:
 * (n - 1) t < min_window (Algorithm 3, create and resize keep this false). */
static inline bool bk__fbf_window_short(unsigned n, uint64_t t,
                                        uint64_t min_window) {
  return n < 2 || bk__sat_mul((uint64_t)(n - 1), t) < min_window;
}

/* The physical slot of logical position p (0 future, 1 present, 2.. past)
 * when the future is in slot `head`. */
static inline unsigned bk__fbf_slot_at(const bk_fbf *f, unsigned head,
                                       unsigned p) {
  return (head + p) % f->width;
}

static inline uint32_t *bk__fbf_lock(const bk_fbf *f, unsigned i) {
  return (uint32_t *)(void *)((char *)f->locks.data + i * f->lock_stride);
}

static inline uint64_t *bk__fbf_counts(const bk_fbf *f, unsigned i) {
  return (uint64_t *)(void *)((char *)f->locks.data + i * f->lock_stride +
                              BK_CACHE_LINE);
}

static inline uint64_t bk__fbf_count(const bk_fbf *f, unsigned slot) {
  uint64_t total = 0;
  for (unsigned i = 0; i < BK__FBF_LOCKS; i++)
    total += __atomic_load_n(&bk__fbf_counts(f, i)[slot], __ATOMIC_RELAXED);
  return total;
}

static inline void bk__fbf_count_set(bk_fbf *f, unsigned slot, uint64_t v) {
  for (unsigned i = 0; i < BK__FBF_LOCKS; i++)
    __atomic_store_n(&bk__fbf_counts(f, i)[slot], i == 0 ? v : 0,
                     __ATOMIC_RELAXED);
}

/* Test hook: where fbf.c calls bk__fbf_test_pause when it is set (tests
 * only, to widen race windows; NULL otherwise). */
typedef enum bk__fbf_pause_at {
  BK__FBF_PAUSE_SWEEP_WORD,  /* a sweep, between a word's load and store */
  BK__FBF_PAUSE_INSERT_BITS, /* an insert, counted, before it sets bits */
} bk__fbf_pause_at;
BK_API extern void (*bk__fbf_test_pause)(bk__fbf_pause_at where);

/* Prefetch the k lanes of a digest (to overlap them with other misses). */
void bk__fbf_prefetch(const bk_fbf *f, bk_hash h);

/* The cheap part of bk_fbf_info_get (no bit counting), for bk_idem. */
void bk__fbf_summary(const bk_fbf *f, unsigned *n_filters,
                     uint64_t *refresh_period, uint64_t *window_min,
                     size_t *memory);

/* fbf.c: publish state `next` to readers and inserters, wait out the grace
 * period of the key locks, then clear the `dropped` slots (a mask of
 * physical slots) chunk by chunk and publish the sweep's end. Caller holds
 * mu. */
void bk__fbf_publish_and_sweep(bk_fbf *f, uint64_t next, uint64_t dropped);

/* fbf_refresh.c: replay the refreshes and adaptation ticks due up to `now`
 * (BK_EINVAL when `now` is in the past). Caller holds mu. */
bk_status bk__fbf_advance_locked(bk_fbf *f, uint64_t now);

/* fbf_refresh.c: how many of the current filters (logical 0 ..
 * survivors - 1) would be left after bk_fbf_advance(f, now), without
 * changing anything; *moved: whether any refresh is due by `now`. Caller
 * holds mu. */
unsigned bk__fbf_survivors_at(const bk_fbf *f, uint64_t now, bool *moved);

/* fbf_adapt.c: the false positive estimate over the filters of state `st`;
 * `shared_aware` false gives the thesis' Eq. 4.3 exactly. */
double bk__fbf_estimate(const bk_fbf *f, uint64_t st, bk_fbf_check check,
                        bool shared_aware);

/* fbf_adapt.c: apply Algorithm 3's ticks due at first, first + interval,
 * ... up to `limit` (only those before the next refresh when
 * `stop_at_refresh`); returns the time of the first tick not applied.
 * Caller holds mu. */
uint64_t bk__fbf_adapt_ticks(bk_fbf *f, uint64_t first, uint64_t limit,
                             bool stop_at_refresh);

/* Every check bk_fbf_create makes of `cfg`, without allocating: BK_OK
 * exactly when create would fail only for memory. */
bk_status bk__fbf_config_check(const bk_fbf_config *cfg);
/* The same checks, and the bytes an FBF made from `cfg` takes (its struct,
 * lanes, sweep epochs and key locks: what bk_fbf_info's `memory` reports,
 * but for each region's padding to a cache line), without allocating.
 * Errors: BK_EINVAL (as bk_fbf_create). */
bk_status bk__fbf_config_memory(const bk_fbf_config *cfg, uint64_t *bytes);
/* Whether a fixed (not adaptive) FBF has the shape bk_fbf_create gives
 * `cfg`: m, k, lane width, minimum window and seed. */
bool bk__fbf_made_from(const bk_fbf *f, const bk_fbf_config *cfg);
/* Allocate an FBF with the given geometry (zeroed state). Errors:
 * BK_EINVAL, BK_ENOMEM. */
bk_status bk__fbf_alloc(const bk__alloc *al, uint64_t m, unsigned k,
                        unsigned width, bk_fbf **out);

#endif
