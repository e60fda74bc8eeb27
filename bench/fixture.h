/* SPDX-License-Identifier: MIT */
/*
 * The shared fixture of the benchmark files, so a component's benchmark file
 * holds only its cases: the run's key sets, the timed loops every structure
 * shares (lookups, adds of fresh keys), filling a structure with its present
 * keys, a filled bk_bloom to compare against, and the reporting of rates and
 * targets the table prints (the shim, shim.h, registers and prints them).
 *
 * Keys are 8-byte integers (native byte order) in three disjoint spaces,
 * hashed by each structure with its own seeded hash (the run's seed):
 *
 *   present   i                  i in [0, n): what the structure was filled
 *                                with (bk_fx_fill), drawn by bk_fx_present_key
 *   absent    r | 2^63           r from the generator: never added
 *   fresh     2^62 | j           j = 0, 1, 2, ...: new keys for adds
 *
 * Keys are computed inside the timed loop, never read from an array: a key
 * array as large as a filter's fill would add its own cache misses to every
 * operation, which the memory-latency baselines do not pay. So a key set is
 * a generator stream and a count, and owns no memory. Every key and every
 * baseline index comes from one generator (splitmix64, then Lemire's
 * bk_reduce), one stream per benchmark (bk_fx_stream), so the loop overhead
 * is the same in a baseline and in the benchmarks measured against it.
 *
 * The loops are always inlined, with the operation (a function pointer) a
 * constant at each call site, so the compiler calls the library directly, as
 * a hand-written loop would; bk_fx_lookups branches on its flags once,
 * outside the loop, so each flag combination runs a loop of its own (an
 * independent loop carries no dependency on the answers).
 *
 *   static bk_status rbf_contains(const void *f, const void *key, size_t len,
 *                                 bool *found) {
 *     return bk_rbf_contains(f, key, len, found);
 *   }
 *   ...
 *   bk_fx_tally t = bk_fx_lookups(st, rbf_contains, c->rbf, &c->rng,
 *                                 BK_FX_ABSENT, false);
 *   bk_fx_report(st, t, "hit_rate", false, "bk_rbf_contains failed");
 *
 * Thread safety: as the shim's. bk_fx_fill runs the callback on
 * BK_FX_FILL_THREADS threads at once.
 */
#ifndef BLOOMKIT_BENCH_FIXTURE_H
#define BLOOMKIT_BENCH_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bloomkit/bloom_inline.h"
#include "bloomkit/hash.h"
#include "shim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_FX_MIB ((uint64_t)1 << 20)
#define BK_FX_FILL_THREADS 2
#define BK_FX_ABSENT_TAG ((uint64_t)1 << 63)
#define BK_FX_FRESH_TAG ((uint64_t)1 << 62)
/** The `n_present` of a loop that draws absent keys. */
#define BK_FX_ABSENT 0u
/** The `max_ratio` of bk_fx_ratio for a ratio reported, never judged. */
#define BK_FX_INFO 0.0

/** Inlined into each caller, flags and callbacks constant there. */
#define BK_FX_INLINE static inline __attribute__((always_inline))

/* ---- the generator and the key sets ------------------------------------ */

/** splitmix64 (Steele, Lea & Flood 2014): one add and a 64-bit finalizer. */
BK_FX_INLINE uint64_t bk_fx_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/** A present key: uniform in [0, n_present), n_present > 0. */
BK_FX_INLINE uint64_t bk_fx_present_key(uint64_t *rng, uint64_t n_present) {
  return bk_reduce(bk_fx_next(rng), n_present);
}

/** An absent key: never added by any benchmark. */
BK_FX_INLINE uint64_t bk_fx_absent_key(uint64_t *rng) {
  return bk_fx_next(rng) | BK_FX_ABSENT_TAG;
}

/** Fresh key number `j`: never added before the j-th fresh add. */
BK_FX_INLINE uint64_t bk_fx_fresh_key(uint64_t j) {
  return BK_FX_FRESH_TAG | j;
}

/**
 * The start of generator stream `tag` of the run's seed (bk_bench_seed):
 * distinct tags give independent streams, one per benchmark, so a benchmark
 * draws the same keys whichever others run.
 */
uint64_t bk_fx_stream(uint64_t tag);

/** CLOCK_MONOTONIC in seconds, for the set-up lines on stderr. */
double bk_fx_now(void);

/* ---- set-up that may fail ------------------------------------------------ */

/**
 * The state of a lazily built case (a filled structure and what goes with
 * it): once its set-up failed, every benchmark using it is skipped with the
 * same message. `name` (may be empty) prefixes the message, e.g. "N=6".
 */
typedef struct bk_fx_setup {
  char name[48];
  bool failed;
  char error[200];
} bk_fx_setup;

/**
 * Record the failure `fmt, ...` (printf) as "<name>: <message>", skip the
 * running benchmark `st` with it (st NULL: at registration, nothing runs)
 * and return false, for `return bk_fx_fail(...)`.
 */
bool bk_fx_fail(bk_fx_setup *setup, bk_bench_state *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** False, and the benchmark skipped with the recorded message, once the
 *  set-up failed; true otherwise. */
bool bk_fx_ready(const bk_fx_setup *setup, bk_bench_state *st);

/* ---- filling ------------------------------------------------------------- */

/**
 * Add one key to `target` (e.g. bk_bloom_add_if_absent behind a cast-free
 * adapter); *added: whether it was new. Adapters of operations without that
 * answer leave *added alone. Fill callbacks must be thread-safe.
 */
typedef bk_status (*bk_fx_add_fn)(void *target, const void *key, size_t len,
                                  bool *added);

/**
 * Fill `target` with the present keys [first, end), split in ranges over
 * BK_FX_FILL_THREADS threads (the calling thread takes the first; a thread
 * that cannot start has its range done by the caller). Returns BK_OK or the
 * status of a failed add. Cost: end - first adds.
 */
bk_status bk_fx_fill(bk_fx_add_fn add, void *target, uint64_t first,
                     uint64_t end);
/** bk_fx_fill through a batch add, 1024 consecutive keys a call. */
typedef bk_status (*bk_fx_add_many_fn)(void *target, const void *const *keys,
                                       const size_t *lens, size_t n);
bk_status bk_fx_fill_many(bk_fx_add_many_fn add_many, void *target,
                          uint64_t first, uint64_t end);

/* ---- the timed loops ----------------------------------------------------- */

/** What a timed loop counted: `hits` (keys found, or keys added as new),
 *  whether an operation failed, and (adds) the status of a failed reset,
 *  at which the loop stopped. */
typedef struct bk_fx_tally {
  uint64_t hits;
  bool failed;
  bk_status reset;
} bk_fx_tally;

/** A lookup of one key (bk_x_contains behind an adapter). */
typedef bk_status (*bk_fx_lookup_fn)(const void *target, const void *key,
                                     size_t len, bool *found);

/* bk_fx_lookups' loop, `present` and `dependent` constants (internal). */
BK_FX_INLINE bk_fx_tally bk_fx__lookup_loop(bk_bench_state *st,
                                            bk_fx_lookup_fn contains,
                                            const void *target, uint64_t *rng,
                                            uint64_t n_present, bool present,
                                            bool dependent) {
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      uint64_t key = present ? bk_fx_present_key(&state, n_present)
                             : bk_fx_absent_key(&state);
      bool found = false;
      bad |= contains(target, &key, sizeof key, &found);
      hits += found;
      if (dependent) state += found;
    }
  }
  *rng = state;
  bk_bench_sink_u64(hits);
  return (bk_fx_tally){hits, bad != 0, BK_OK};
}

/**
 * The timed loop of single-key lookups: present keys of [0, n_present), or
 * absent keys (n_present BK_FX_ABSENT), drawn from stream state *rng (kept
 * across runs). `dependent`: each key is derived from the previous answer
 * (the stream advances by it), so the lookups' misses run in series
 * (latency); otherwise no key depends on an answer (throughput).
 */
BK_FX_INLINE bk_fx_tally bk_fx_lookups(bk_bench_state *st,
                                       bk_fx_lookup_fn contains,
                                       const void *target, uint64_t *rng,
                                       uint64_t n_present, bool dependent) {
  if (n_present != BK_FX_ABSENT)
    return dependent ? bk_fx__lookup_loop(st, contains, target, rng, n_present,
                                          true, true)
                     : bk_fx__lookup_loop(st, contains, target, rng, n_present,
                                          true, false);
  return dependent
             ? bk_fx__lookup_loop(st, contains, target, rng, 0, false, true)
             : bk_fx__lookup_loop(st, contains, target, rng, 0, false, false);
}

/* ---- batches ---- */

/** Keys per call of the batch loops. */
#define BK_FX_MANY 256u

/** One call's keys: values, pointers to them and their lengths, rebuilt
 *  before every call, as a caller building a batch would. */
typedef struct bk_fx_key_batch {
  uint64_t key[BK_FX_MANY];
  const void *ptr[BK_FX_MANY];
  size_t len[BK_FX_MANY];
} bk_fx_key_batch;

BK_FX_INLINE void bk_fx_batch_set(bk_fx_key_batch *kb, unsigned i,
                                  uint64_t key) {
  kb->key[i] = key;
  kb->ptr[i] = &kb->key[i];
  kb->len[i] = sizeof kb->key[i];
}

/** A batch lookup (bk_x_contains_many behind an adapter). */
typedef bk_status (*bk_fx_lookup_many_fn)(const void *target,
                                          const void *const *keys,
                                          const size_t *lens, size_t n,
                                          bool *found);
/** A batch add; `added` may be NULL for an add that reports nothing. */
typedef bk_status (*bk_fx_add_many_report_fn)(void *target,
                                              const void *const *keys,
                                              const size_t *lens, size_t n,
                                              bool *added);

/* bk_fx_lookups_many's loop, `present` a constant (internal). */
BK_FX_INLINE bk_fx_tally bk_fx__lookup_many_loop(
    bk_bench_state *st, bk_fx_lookup_many_fn contains_many, const void *target,
    uint64_t *rng, uint64_t n_present, bool present) {
  bk_fx_key_batch kb;
  bool out[BK_FX_MANY];
  memset(out, 0, sizeof out); /* defined even if a call fails */
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch_of(st, BK_FX_MANY)) != 0) {
    for (uint64_t r = 0; r < n; r += BK_FX_MANY) {
      for (unsigned i = 0; i < BK_FX_MANY; i++)
        bk_fx_batch_set(&kb, i,
                        present ? bk_fx_present_key(&state, n_present)
                                : bk_fx_absent_key(&state));
      bad |= contains_many(target, kb.ptr, kb.len, BK_FX_MANY, out);
      for (unsigned i = 0; i < BK_FX_MANY; i++) hits += out[i];
    }
  }
  *rng = state;
  bk_bench_sink_u64(hits);
  return (bk_fx_tally){hits, bad != 0, BK_OK};
}

/**
 * The timed loop of batch lookups, BK_FX_MANY keys a call, keys as in
 * bk_fx_lookups (independent).
 */
BK_FX_INLINE bk_fx_tally bk_fx_lookups_many(bk_bench_state *st,
                                            bk_fx_lookup_many_fn contains_many,
                                            const void *target, uint64_t *rng,
                                            uint64_t n_present) {
  if (n_present != BK_FX_ABSENT)
    return bk_fx__lookup_many_loop(st, contains_many, target, rng, n_present,
                                   true);
  return bk_fx__lookup_many_loop(st, contains_many, target, rng, 0, false);
}

/**
 * Fresh keys for adds, and how to undo them: adds of fresh keys would
 * overfill a filled structure (a short run adds many times its capacity),
 * which changes what an add costs, so after `budget` fresh keys the loop
 * pauses the timer and calls reset(ctx), back to the filled state. `used`
 * carries over between runs, so every benchmark adding to one structure
 * cycles through the same states with the same keys.
 */
typedef struct bk_fx_fresh {
  uint64_t used;   /* fresh keys added since the last reset */
  uint64_t budget; /* fresh keys allowed before a reset */
  bk_status (*reset)(void *ctx);
  void *ctx;
} bk_fx_fresh;

/** The budget of a structure filled with n_keys: 1% of it, at least 1024. */
uint64_t bk_fx_fresh_budget(uint64_t n_keys);

/** Reset (timer paused): reset(ctx), used = 0. Returns reset's status. */
bk_status bk_fx_fresh_reset(bk_bench_state *st, bk_fx_fresh *fresh);

/**
 * The timed loop of single-key adds of fresh keys to `target`, resetting it
 * as `fresh` says. hits: the adds that reported a new key. Stops at a reset
 * that fails (tally.reset; tally.failed is then set too).
 */
BK_FX_INLINE bk_fx_tally bk_fx_fresh_adds(bk_bench_state *st, bk_fx_add_fn add,
                                          void *target, bk_fx_fresh *fresh) {
  const uint64_t budget = fresh->budget;
  uint64_t used = fresh->used, n, added = 0;
  int bad = 0;
  bk_status reset = BK_OK;
  while (reset == BK_OK && (n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      if (used == budget) {
        reset = bk_fx_fresh_reset(st, fresh);
        used = 0;
        if (reset != BK_OK) break; /* the run is an error: see bk_fx_report */
      }
      uint64_t key = bk_fx_fresh_key(used++);
      bool was_added = false;
      bad |= add(target, &key, sizeof key, &was_added);
      added += was_added;
    }
  }
  fresh->used = used;
  return (bk_fx_tally){added, bad != 0 || reset != BK_OK, reset};
}

/**
 * bk_fx_fresh_adds with batch adds, BK_FX_MANY fresh keys a call, resetting
 * before a call that would pass the budget, so calls are always whole
 * (budgets are at least 1024). hits: the adds that reported a new key
 * (none when `report` is false: add gets NULL).
 */
BK_FX_INLINE bk_fx_tally bk_fx_fresh_adds_many(bk_bench_state *st,
                                               bk_fx_add_many_report_fn add,
                                               void *target, bk_fx_fresh *fresh,
                                               bool report) {
  const uint64_t budget = fresh->budget;
  uint64_t used = fresh->used, n, added = 0;
  bk_fx_key_batch kb;
  bool out[BK_FX_MANY];
  memset(out, 0, sizeof out);
  int bad = 0;
  bk_status reset = BK_OK;
  while (reset == BK_OK && (n = bk_bench_batch_of(st, BK_FX_MANY)) != 0) {
    for (uint64_t r = 0; r < n; r += BK_FX_MANY) {
      if (budget - used < BK_FX_MANY) {
        reset = bk_fx_fresh_reset(st, fresh);
        used = 0;
        if (reset != BK_OK) break;
      }
      for (unsigned i = 0; i < BK_FX_MANY; i++)
        bk_fx_batch_set(&kb, i, bk_fx_fresh_key(used++));
      bad |= add(target, kb.ptr, kb.len, BK_FX_MANY, report ? out : NULL);
      if (report)
        for (unsigned i = 0; i < BK_FX_MANY; i++) added += out[i];
    }
  }
  fresh->used = used;
  return (bk_fx_tally){added, bad != 0 || reset != BK_OK, reset};
}

/* ---- reporting ----------------------------------------------------------- */

/** Report counter `counter` = count / iterations of this run (0 if none). */
void bk_fx_rate(bk_bench_state *st, const char *counter, uint64_t count);

/**
 * After a timed loop, untimed: skip the benchmark with `failed_msg` if an
 * operation or reset failed; with `expect_all` (present keys) skip it if any
 * lookup missed; else report `rate_counter` (NULL: none) = hits / iterations.
 * Returns whether the benchmark stands (was not skipped).
 */
bool bk_fx_report(bk_bench_state *st, bk_fx_tally tally,
                  const char *rate_counter, bool expect_all,
                  const char *failed_msg);

/**
 * Register a ratio for the targets after the table, time(numerator) /
 * time(denominator) as benchmarks are named: judged PASS or MISS against
 * max_ratio, or with max_ratio BK_FX_INFO reported as INFO. Targets print in
 * the order registered. (A target on a counter: bk_bench_target_counter.)
 */
void bk_fx_ratio(const char *label, const char *numerator,
                 const char *denominator, double max_ratio);

/* ---- a filled bk_bloom, the reference structure ------------------------- */

/** bk_bloom operations as fixture callbacks (the target is a bk_bloom). */
static inline bk_status bk_fx_bloom_contains(const void *b, const void *key,
                                             size_t len, bool *found) {
  return bk_bloom_contains((const bk_bloom *)b, key, len, found);
}
static inline bk_status bk_fx_bloom_add(void *b, const void *key, size_t len,
                                        bool *added) {
  (void)added;
  return bk_bloom_add((bk_bloom *)b, key, len);
}
static inline bk_status bk_fx_bloom_add_many(void *b, const void *const *keys,
                                             const size_t *lens, size_t n) {
  return bk_bloom_add_many((bk_bloom *)b, keys, lens, n);
}
static inline bk_status bk_fx_bloom_contains_many(const void *b,
                                                  const void *const *keys,
                                                  const size_t *lens, size_t n,
                                                  bool *found) {
  return bk_bloom_contains_many((const bk_bloom *)b, keys, lens, n, found);
}
/* bk_bloom_add_many reports nothing: `added` is NULL from the loop. */
static inline bk_status bk_fx_bloom_add_many_report(void *b,
                                                    const void *const *keys,
                                                    const size_t *lens,
                                                    size_t n, bool *added) {
  (void)added;
  return bk_bloom_add_many((bk_bloom *)b, keys, lens, n);
}
static inline bk_status bk_fx_bloom_add_if_absent(void *b, const void *key,
                                                  size_t len, bool *added) {
  return bk_bloom_add_if_absent((bk_bloom *)b, key, len, added);
}

/**
 * A bk_bloom of m_bits and k (the run's seed), filled with the present keys
 * [0, n_keys), and a scratch copy that adds write, reset by intersecting it
 * with the filled one (exact: adds only set bits). Set the first fields;
 * the rest is built on first use and freed by bk_fx_bloom_release.
 */
typedef struct bk_fx_bloom {
  char label[48]; /* in the fill line on stderr, e.g. "blocked 32MiB" */
  bk_bloom_layout layout;
  uint64_t m_bits;
  unsigned k;
  double fpp;      /* the design fpp (the config's; sizing uses m and k) */
  uint64_t n_keys; /* > 0 */
  bk_bloom *filled;
  bk_bloom *scratch;
  bk_fx_fresh fresh; /* the scratch's fresh keys */
} bk_fx_bloom;

/**
 * Build `filled` on first use: create it, check it is m_bits and k, fill it
 * (bk_fx_fill) and print a line on stderr. False, and the benchmark skipped,
 * when the setup failed before or fails now (recorded in `setup`).
 */
bool bk_fx_bloom_filled(bk_fx_bloom *b, bk_fx_setup *setup, bk_bench_state *st);

/** bk_fx_bloom_filled, then the scratch copy on first use (fresh.used 0,
 *  fresh.budget bk_fx_fresh_budget(n_keys)). */
bool bk_fx_bloom_scratch(bk_fx_bloom *b, bk_fx_setup *setup,
                         bk_bench_state *st);

/** Free both filters (they are rebuilt on next use). */
void bk_fx_bloom_release(bk_fx_bloom *b);

#ifdef __cplusplus
}
#endif

#endif
