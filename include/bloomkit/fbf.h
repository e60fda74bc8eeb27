/* SPDX-License-Identifier: MIT */
/*
 * bk_fbf: the Forgetful Bloom Filter (R. Subramanyam, I. Gupta et al.,
 * "Idempotent Distributed Counters Using a Forgetful Bloom Filter"; the FBF
 * thesis, chapters 3 and 4). It remembers the recent past and forgets the
 * old: one future, one present and N >= 1 past Bloom filters of equal m and
 * k. An element added goes into future and present; every
 * refresh period t the oldest past filter is dropped, the others age by one
 * place and an empty future is added. An element inserted at time s is
 * remembered at least until s + (N+1) t and at most until s + (N+2) t.
 *
 * Layout: the constituent filters are stored transposed, in lanes: bit j of
 * every filter sits in one W-bit lane, so a membership check is k lane loads
 * whatever N is, and the optimized check of Algorithm 2 (future alone, each
 * consecutive pair, oldest past alone; as corrected in docs/design/fbf.md
 * 5.2) is a few
 * bit operations on the AND of the k lanes. Memory is about W m / 8 bytes
 * (stride m / 8 exactly: the stride is W, or 64 when W > 57) plus one chunk
 * epoch word per 512 lanes and 4 KiB of key locks, W = the most filters the
 * FBF may ever hold (N + 2 unless adaptive resizing may grow it).
 *
 * Time is an argument: bk_fbf_advance(f, now) performs the refreshes (and,
 * when adaptive, the Algorithm 3 resizing ticks) due by `now`, a u64 in the
 * caller's units (milliseconds, say). bk_fbf_timer_start runs a thread that
 * does this against CLOCK_MONOTONIC in milliseconds.
 *
 * Thread safety: add, add_if_absent, contains (and _hash forms),
 * estimated_fpp, info_get and serialize may run concurrently from any number
 * of threads, and concurrently with one thread in bk_fbf_advance / bk_fbf_adapt
 * (advance calls are serialised internally). A refresh is atomic for them: no
 * check sees a half-rotated filter and no completed insert is lost by it.
 * add_if_absent is linearizable: of several threads inserting the same new
 * id at once, exactly one is told it was new. create/destroy/deserialize
 * need exclusive access.
 */
#ifndef BLOOMKIT_FBF_H
#define BLOOMKIT_FBF_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_fbf bk_fbf;

/** Most constituent filters an FBF can hold (lane width). */
#define BK_FBF_MAX_FILTERS 64u

/** Membership check flavours (thesis Sec. 3.1 and 3.4). */
typedef enum bk_fbf_check {
  BK_FBF_CHECK_DEFAULT = 0,   /**< the filter's configured check */
  BK_FBF_CHECK_OPTIMIZED = 1, /**< Algorithm 2 (corrected): pairs only */
  BK_FBF_CHECK_SIMPLE = 2,    /**< any constituent filter */
} bk_fbf_check;

/**
 * Configuration; zero fields mean "default" where a default exists.
 * Size each constituent filter by m_bits and k, or by (capacity, fpp):
 * capacity = distinct elements expected per refresh period, sized so one
 * filter holding two periods' inserts stays at fpp. The rate a check
 * answers with is the whole filter's, higher: bk_fbf_filter_fpp_for gives
 * the fpp to configure for a whole-filter target.
 */
typedef struct bk_fbf_config {
  uint64_t m_bits;   /**< bits per constituent filter (k then required) */
  unsigned k;        /**< hash functions, 1..64 */
  uint64_t capacity; /**< elements per refresh period (when m_bits is 0) */
  double fpp;        /**< sizing target; default 0.01 */
  unsigned n_past;   /**< N >= 1 past filters (required) */
  uint64_t refresh_period; /**< t > 0, caller time units (required) */
  /** Clients' retry timeout: no element younger than this is ever
   * forgotten, across every refresh and resize. 0: (N + 1) t. Must be at
   * most (N + 1) t. */
  uint64_t min_window;
  uint64_t start_time; /**< the caller's clock at creation */
  bk_fbf_check check;  /**< default BK_FBF_CHECK_OPTIMIZED */

  /* Adaptive resizing (thesis Sec. 3.5, Algorithm 3). */
  bool adaptive;           /**< run Algorithm 3 on each adaptation tick */
  double target_fpp;       /**< in (0, 1); default fpp */
  uint64_t adapt_interval; /**< tick period; default 1000 (1 s in ms) */
  uint64_t period_step;    /**< t -= / += step; default 1000 (1 s in ms) */
  uint64_t min_period;     /**< floor for t; default min(step, t) */
  uint64_t max_period;     /**< ceiling for t; default t (never above the
                                configured period) */
  unsigned min_filters;    /**< floor for N + 2; default N + 2 */
  unsigned max_filters;    /**< ceiling (lane width); default N + 2, or
                                min(4 (N + 2), 64) when adaptive */

  bk_hash_alg hash_alg; /**< default XXH3 */
  uint64_t seed;
  const bk_allocator *allocator; /**< NULL: libc */
} bk_fbf_config;

/**
 * Create an FBF. Errors: BK_EINVAL (NULL argument, n_past == 0, k == 0
 * with m_bits given, neither m_bits nor capacity, fpp or target_fpp outside
 * (0, 1), refresh_period == 0, min_window > (N + 1) t, max_filters below
 * N + 2 or above 64, floors above ceilings, sizes over 2^40 bits, bad hash
 * or allocator), BK_ENOMEM.
 */
BK_API bk_status bk_fbf_create(bk_fbf **out, const bk_fbf_config *cfg);

/** Free the FBF (stop its timer first). NULL does nothing. */
BK_API void bk_fbf_destroy(bk_fbf *f);

/** Hash a key with the FBF's algorithm and seed. Errors: BK_EINVAL. */
BK_API bk_status bk_fbf_hash(const bk_fbf *f, const void *key, size_t len,
                             bk_hash *out);

/**
 * Insert an element: it goes into the future and present filters unless it
 * is in both already, so it is remembered from now for the whole window.
 * (The thesis' Algorithm 1 skips any element the check finds, which forgets
 * an element that was a false positive of older filters early:
 * docs/design/fbf.md 5.14.) Errors: BK_EINVAL.
 */
BK_API bk_status bk_fbf_add(bk_fbf *f, const void *key, size_t len);
BK_API bk_status bk_fbf_add_hash(bk_fbf *f, bk_hash h);

/**
 * Check and insert as one linearizable step; *added = true when the element
 * was not found and has been inserted. Errors: BK_EINVAL.
 */
BK_API bk_status bk_fbf_add_if_absent(bk_fbf *f, const void *key, size_t len,
                                      bool *added);
BK_API bk_status bk_fbf_add_if_absent_hash(bk_fbf *f, bk_hash h, bool *added);

/** Membership with the filter's configured check. Errors: BK_EINVAL. */
BK_API bk_status bk_fbf_contains(const bk_fbf *f, const void *key, size_t len,
                                 bool *out);
BK_API bk_status bk_fbf_contains_hash(const bk_fbf *f, bk_hash h, bool *out);

/**
 * Membership as of `now`, changing nothing: the answer bk_fbf_contains
 * would give after bk_fbf_advance(f, now). The refreshes due by `now` are
 * replayed on a model of the filter list (new empty filters in front, the
 * oldest dropped as a refresh would, min_window kept), and the check is
 * made on the filters that would remain. `now` at or before the next
 * refresh (in particular, earlier than the filter's clock) answers as
 * bk_fbf_contains. Exact for a fixed FBF (and for an adaptive one while
 * no adaptation tick falls due). For an adaptive FBF the Algorithm 3 ticks
 * due by `now` are not replayed: the refreshes keep the current period and
 * goal, and the extra drops under pressure are left out, so the answer
 * may differ from advance's either way (a grow keeps filters longer, a
 * shorter t or pressure forgets sooner); what min_window protects is found
 * either way (an element younger than min_window). Cost: a contains
 * when no refresh is due; otherwise the FBF's mutex is taken (so it
 * waits for a running advance) and O(W) model steps. Errors: BK_EINVAL.
 */
BK_API bk_status bk_fbf_contains_at(const bk_fbf *f, const void *key,
                                    size_t len, uint64_t now, bool *out);
BK_API bk_status bk_fbf_contains_at_hash(const bk_fbf *f, bk_hash h,
                                         uint64_t now, bool *out);

/** Membership with an explicit check flavour. Errors: BK_EINVAL. */
BK_API bk_status bk_fbf_contains_with(const bk_fbf *f, bk_hash h,
                                      bk_fbf_check check, bool *out);

/**
 * Batches: keys[i] of lens[i] bytes, in order, each exactly as the
 * single-key call would do it (so a key twice in one insert batch is added
 * by its first occurrence only), with the lanes of the keys a few places
 * ahead prefetched, so their cache misses overlap. On an FBF larger than
 * the cache this is several times the throughput of n single calls (each
 * of which waits for its own misses). Every key is validated before any is
 * used; on error nothing is inserted and no output is written. Errors:
 * BK_EINVAL (NULL f; NULL keys, lens, out or added with n > 0; a NULL key
 * with a nonzero length; a Murmur3 key over 2^31 - 1 bytes). Cost: O(n k).
 * Concurrency: as the single-key calls, key by key (a batch is not one
 * atomic step; a refresh may fall between two of its keys).
 */
BK_API bk_status bk_fbf_contains_many(const bk_fbf *f, const void *const *keys,
                                      const size_t *lens, size_t n, bool *out);
/** bk_fbf_contains_many over precomputed digests (bk_fbf_hash). */
BK_API bk_status bk_fbf_contains_many_hash(const bk_fbf *f,
                                           const bk_hash *hashes, size_t n,
                                           bool *out);
/** bk_fbf_add of each key, in order. */
BK_API bk_status bk_fbf_add_many(bk_fbf *f, const void *const *keys,
                                 const size_t *lens, size_t n);
/** bk_fbf_add_if_absent of each key, in order; added[i] its answer. */
BK_API bk_status bk_fbf_add_if_absent_many(bk_fbf *f, const void *const *keys,
                                           const size_t *lens, size_t n,
                                           bool *added);

/**
 * Perform every refresh (and adaptation tick, when adaptive) due by `now`.
 * Errors: BK_EINVAL (NULL, `now` earlier than a time already seen). Cost: a
 * refresh clears one constituent filter, O(W m / 64) word operations.
 */
BK_API bk_status bk_fbf_advance(bk_fbf *f, uint64_t now);

/*
 * Resizing notes. A grow raises the goal for N + 2 (filters are then kept
 * longer, docs/design/fbf.md erratum 5.4) and shortens t; a shrink lowers
 * the goal and
 * lengthens t, within the floors and ceilings. Refreshes move the actual
 * count toward the goal, dropping a filter only when it holds nothing
 * younger than min_window. In addition, while an adaptive FBF's estimate is
 * at or above 0.9 target, refreshes drop every filter that min_window does
 * not need (those protect no retry and only add false positives).
 */

/**
 * Run one Algorithm 3 tick now, whether or not the filter is adaptive and
 * whether or not a tick is due: grow when the estimated fpp is at least
 * 0.9 target, shrink when at most 0.1 target. Errors: BK_EINVAL (NULL,
 * time going backwards).
 */
BK_API bk_status bk_fbf_adapt(bk_fbf *f, uint64_t now);

/**
 * Resize by hand, within the configured floors and ceilings: `n_filters`
 * is the new N + 2 goal, `refresh_period` the new t (0 keeps t). Growing
 * keeps older filters longer; shrinking drops filters only as they come to
 * hold nothing younger than min_window. Errors: BK_EINVAL (NULL, outside
 * the bounds, a period shorter than min_window can cover).
 */
BK_API bk_status bk_fbf_resize(bk_fbf *f, unsigned n_filters,
                               uint64_t refresh_period);

/**
 * False positive probability of the current state from the per-filter
 * insertion counts; this is what Algorithm 3 steers by. For the optimized
 * check it is Eq. 4.3's structure (future alone, consecutive pairs, oldest
 * alone) with p_i = (1 - (1 - 1/m)^{k l_i})^k (Eq. 4.1 corrected, see
 * docs/design/fbf.md 5.1), except that a pair's term accounts for the
 * inserts the two
 * filters share (every insert goes into two neighbours): with counts a, b
 * and s shared, (1 - u^a - u^b + u^{a+b-s})^k, u = (1 - 1/m)^k, and that
 * the last pair (which contains the oldest filter) is left out, its event
 * being inside "oldest alone". Eq. 4.3's independent product p_a p_b
 * underestimates by 5-180x for N > 1 and counts the last pair twice; see
 * bk_fbf_estimated_fpp_eq43. For the simple check, 1 - prod(1 - p_i).
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_fbf_estimated_fpp(const bk_fbf *f, bk_fbf_check check,
                                      double *out);

/**
 * Sizing by the whole filter's rate. bk_fbf_config.fpp is what one
 * constituent filter holding two periods' inserts reaches; what a check
 * answers is the whole filter's rate, up to about N times that.
 * bk_fbf_steady_fpp gives the whole filter's rate for the optimized check
 * in steady state at its worst moment (just before a refresh: the future
 * holding `capacity` inserts, the present and every past 2 capacity,
 * neighbours sharing capacity) for a filter sized by (capacity,
 * filter_fpp) with k = 0 and n_past N: with f(n) = (1 - u^n)^k,
 * u = (1 - 1/m)^k, (m, k) from bk_params_for_target(2 capacity,
 * filter_fpp), pair = (1 - 2 u^{2c} + u^{3c})^k (two neighbours),
 *   1 - (1 - f(c)) (1 - pair)^(N - 1) (1 - f(2c))
 * (the future alone, the pairs from the present to the one before the
 * oldest, the oldest alone; the structure of bk_fbf_estimated_fpp,
 * docs/design/fbf.md 5.5). It treats the pairs as independent; overlapping
 * pairs are positively correlated, so measured rates run 3-6 % below it
 * (tests/test_fbf_adapt.c). bk_fbf_filter_fpp_for returns the largest
 * filter_fpp (within 0.1 %) whose steady rate is at most `fpp`: configure
 * that as bk_fbf_config.fpp to make `fpp` the rate the optimized check
 * answers with. Errors: BK_EINVAL (NULL out, capacity 0 or 2^62 and
 * above, n_past 0 or above 62, a rate outside (0, 1); for _for, a rate no
 * filter of at most 2^40 bits reaches).
 */
BK_API bk_status bk_fbf_steady_fpp(uint64_t capacity, unsigned n_past,
                                   double filter_fpp, double *out);
BK_API bk_status bk_fbf_filter_fpp_for(uint64_t capacity, unsigned n_past,
                                       double fpp, double *out);

/**
 * The thesis' Eq. 4.3 exactly (pairs as independent products), for
 * comparison with the experiments of the thesis. Errors: BK_EINVAL.
 */
BK_API bk_status bk_fbf_estimated_fpp_eq43(const bk_fbf *f, bk_fbf_check check,
                                           double *out);

/** A snapshot of an FBF's shape and state. */
typedef struct bk_fbf_info {
  uint64_t m_bits;
  unsigned k;
  unsigned n_filters;      /**< N + 2 in use now */
  unsigned n_past;         /**< N */
  unsigned target_filters; /**< where resizing is heading */
  unsigned max_filters;    /**< lane width W */
  uint64_t refresh_period;
  uint64_t min_window;
  uint64_t now;          /**< latest time seen */
  uint64_t next_refresh; /**< time of the next refresh */
  uint64_t window_min;   /**< an element is kept at least this long... */
  uint64_t window_max;   /**< ...and at most this long, at the current t */
  uint64_t refreshes;    /**< refreshes performed */
  uint64_t deferred;     /**< refreshes postponed to keep min_window */
  /** Inserts into each filter, future first (index 0) to oldest past. */
  uint64_t inserted[BK_FBF_MAX_FILTERS];
  /** Set bits in each filter, same order (counted: O(W^2 m / 64)). */
  uint64_t set_bits[BK_FBF_MAX_FILTERS];
  size_t memory; /**< bytes held */
  bk_fbf_check check;
  bool adaptive;
} bk_fbf_info;

/** Describe the FBF. Errors: BK_EINVAL. Cost: O(W^2 m / 64) (set bits). */
BK_API bk_status bk_fbf_info_get(const bk_fbf *f, bk_fbf_info *out);

/** Kinds of resize decisions in the trace. */
typedef enum bk_fbf_action {
  BK_FBF_GROW = 1,   /**< fpp >= 0.9 target: filters doubled, t - step */
  BK_FBF_SHRINK = 2, /**< fpp <= 0.1 target: one filter fewer, t + step */
  BK_FBF_MANUAL = 3, /**< bk_fbf_resize */
} bk_fbf_action;

/** One resize decision: what Algorithm 3 saw and set. */
typedef struct bk_fbf_resize_event {
  uint64_t time;
  bk_fbf_action action;
  double estimated_fpp;    /**< at the tick, before the decision */
  unsigned n_filters;      /**< N + 2 goal after the decision */
  uint64_t refresh_period; /**< t after the decision */
} bk_fbf_resize_event;

/** Number of events in the trace (the last 256 are kept). */
BK_API size_t bk_fbf_trace_count(const bk_fbf *f);

/**
 * Copy event `i` (0 = oldest kept). Errors: BK_EINVAL (NULL, i out of
 * range). Not safe concurrently with advance/adapt/resize.
 */
BK_API bk_status bk_fbf_trace_get(const bk_fbf *f, size_t i,
                                  bk_fbf_resize_event *out);

/** Bytes bk_fbf_serialize() will write. Errors: BK_EINVAL. */
BK_API bk_status bk_fbf_serialized_size(const bk_fbf *f, size_t *out);

/**
 * Save the whole state (filters, counts, clock, N, t, resizing settings) in
 * the common serialized form. Safe concurrently with every other call (it
 * holds the FBF's mutex; inserts in flight are counted with their bits).
 * Errors: BK_EINVAL (NULL, cap too small).
 */
BK_API bk_status bk_fbf_serialize(const bk_fbf *f, void *buf, size_t cap,
                                  size_t *written);

/**
 * Restore an FBF from hostile bytes: every field is checked first.
 * Errors: BK_EINVAL (NULL), BK_ECORRUPT, BK_EVERSION, BK_ENOMEM.
 */
BK_API bk_status bk_fbf_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_fbf **out);

/** Background refresh thread (real time, CLOCK_MONOTONIC milliseconds). */
typedef struct bk_fbf_timer bk_fbf_timer;

/**
 * Start a thread that calls bk_fbf_advance(f, now_ms) every `tick_ms`
 * (0: 10 ms). The FBF's times must then be CLOCK_MONOTONIC milliseconds
 * (bk_fbf_clock_ms()). Errors: BK_EINVAL, BK_ENOMEM, BK_EIO (thread).
 */
BK_API bk_status bk_fbf_timer_start(bk_fbf *f, uint64_t tick_ms,
                                    bk_fbf_timer **out);

/** Stop and join the thread, then free it. NULL does nothing. */
BK_API void bk_fbf_timer_stop(bk_fbf_timer *t);

/** CLOCK_MONOTONIC in milliseconds, the timer's clock. */
BK_API uint64_t bk_fbf_clock_ms(void);

#ifdef __cplusplus
}
#endif

#endif
