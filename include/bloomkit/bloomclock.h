/* SPDX-License-Identifier: MIT */
/*
 * bk_bloomclock: the Bloom clock of Kshemkalyani & Misra ("The Bloom Clock
 * to Characterize Causality in Distributed Systems", 2020), and bk_vclock,
 * the exact vector clock it approximates.
 *
 * A Bloom clock is a counting Bloom filter of events: m counters, and each
 * event e_i^x (the x-th event of process i, x from 0) increments the k
 * counters that k hash functions of (i, x) pick. A process ticks its clock at
 * every internal and send event; a message carries the sender's clock, and
 * the receiver takes the element-wise maximum and then ticks (slides,
 * "Bloom Clock Protocol"). The test "y happened before z" is B_z >= B_y
 * element-wise (Proposition 1): never a false negative, sometimes a false
 * positive. bk_bloomclock_pr_p estimates how likely a positive is by chance
 * (the slides' binomial formula).
 *
 * Size: m counters of 8 (default), 16 or 32 bits, whatever the number of
 * processes; a vector clock needs one 32-bit entry per process.
 *
 * Saturation (docs/design/bloomclock.md 3.11a): each clock keeps a 64-bit base
 * and counters relative to it (value = base + counter). When a tick would push
 * a counter to its maximum the clock first subtracts the common minimum of
 * its counters and adds it to the base; only when that frees no room does
 * the counter saturate, and a saturated counter stands for "infinity": it
 * never moves again, and it compares as at least anything. Every operation
 * returns a clock that dominates its inputs, so saturation can add false
 * positives but never a false negative.
 *
 * Thread safety: none inside one clock (a clock belongs to one process);
 * queries (compare, pr_p, serialize, get, info) on clocks nobody is
 * modifying may run concurrently. See docs/design/bloomclock.md 4.7.
 */
#ifndef BLOOMKIT_BLOOMCLOCK_H
#define BLOOMKIT_BLOOMCLOCK_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest number of counters of a Bloom clock: 2^24. */
#define BK_BLOOMCLOCK_M_MAX ((uint64_t)1 << 24)
/** Largest base a clock may reach; past it, counters saturate instead. */
#define BK_BLOOMCLOCK_BASE_MAX ((uint64_t)1 << 62)
/** Largest number of processes of a vector clock: 2^24. */
#define BK_VCLOCK_PROCESSES_MAX ((uint64_t)1 << 24)

/** What a comparison of timestamps y and z found. */
typedef enum bk_causality {
  BK_CAUSAL_EQUAL = 0,      /**< same timestamp */
  BK_CAUSAL_BEFORE = 1,     /**< y happened before z (B_z >= B_y, not equal) */
  BK_CAUSAL_AFTER = 2,      /**< z happened before y */
  BK_CAUSAL_CONCURRENT = 3, /**< neither */
} bk_causality;

/** Name of a bk_causality ("before", ...); "unknown" for other values. */
BK_API const char *bk_causality_name(bk_causality c);

/* ==== bk_bloomclock ===================================================== */

typedef struct bk_bloomclock bk_bloomclock;

/**
 * Zero fields mean "default". Every clock of one system must share m, k,
 * counter_bits, hash_alg and seed (merge and compare refuse others with
 * BK_EMISMATCH); process_id differs per process.
 */
typedef struct bk_bloomclock_config {
  uint64_t m;            /**< counters, 1 .. BK_BLOOMCLOCK_M_MAX (required) */
  unsigned k;            /**< hash functions per event, 1 .. 64 (required) */
  unsigned counter_bits; /**< 8 (default), 16 or 32 */
  uint64_t process_id;   /**< the process that owns the clock */
  bk_hash_alg hash_alg;  /**< BK_HASH_XXH3 by default */
  uint64_t seed;         /**< hash seed (32 bits for Murmur3) */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_bloomclock_config;

typedef struct bk_bloomclock_info {
  uint64_t m;
  unsigned k;
  unsigned counter_bits;
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t process_id;
  uint64_t events;    /**< local events ticked so far (next event number) */
  uint64_t base;      /**< common offset of every counter */
  uint64_t saturated; /**< counters at "infinity" */
  uint64_t spread;    /**< largest counter minus smallest, unsaturated */
  double sum;         /**< sum of the counters' values (saturated: max) */
  size_t memory;      /**< bytes held */
} bk_bloomclock_info;

/** Create a zero clock. Errors: BK_EINVAL (bad config), BK_ENOMEM. */
BK_API bk_status bk_bloomclock_create(bk_bloomclock **out,
                                      const bk_bloomclock_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_bloomclock_destroy(bk_bloomclock *c);

/**
 * dst := src (counters, base, process id, event count), allocation-free.
 * Errors: BK_EINVAL (NULL), BK_EMISMATCH (different m, k, width, hash or
 * seed). Cost O(m).
 */
BK_API bk_status bk_bloomclock_copy(bk_bloomclock *dst,
                                    const bk_bloomclock *src);

/**
 * Local tick (an internal or a send event): increment the k counters of
 * (process id, event number), then count the event. A counter about to
 * reach its maximum makes the clock renormalise (O(m)) or, if that frees
 * nothing, saturate. Errors: BK_EINVAL (NULL), BK_ERANGE (the event number
 * would pass 2^64 - 1; nothing changes).
 */
BK_API bk_status bk_bloomclock_tick(bk_bloomclock *c);

/**
 * Receive event: c := max(c, msg) element-wise, then tick. Errors:
 * BK_EINVAL, BK_EMISMATCH (nothing changes), BK_ERANGE (as tick; the max
 * is still taken). Cost O(m).
 */
BK_API bk_status bk_bloomclock_merge(bk_bloomclock *c,
                                     const bk_bloomclock *msg);

/**
 * Receive event from the wire form of the sender's clock (what
 * bk_bloomclock_serialize wrote), without allocating: the bytes are
 * validated completely before c is touched (hostile bytes: BK_ECORRUPT or
 * BK_EVERSION, c unchanged), then merged as bk_bloomclock_merge. Errors as
 * merge, plus BK_ECORRUPT, BK_EVERSION. Cost O(len).
 */
BK_API bk_status bk_bloomclock_receive(bk_bloomclock *c, const void *buf,
                                       size_t len);

/**
 * Causality test of timestamps y and z (Proposition 1): BEFORE when
 * B_z >= B_y and they differ, AFTER when B_y >= B_z and they differ, EQUAL,
 * or CONCURRENT. A BEFORE may be false (a false positive); when y happened
 * before z the answer is always BEFORE or EQUAL. Errors: BK_EINVAL,
 * BK_EMISMATCH. Cost O(m).
 */
BK_API bk_status bk_bloomclock_compare(const bk_bloomclock *y,
                                       const bk_bloomclock *z,
                                       bk_causality *out);

/**
 * The slides' estimate of pr_p = pr(B_z >= B_y) for a clock z with
 * n = sum(B_z) increments spread uniformly:
 *   prod_i (1 - sum_{l < B_y[i]} b(l, n, 1/m)) = prod_i P(Bin(n, 1/m) >=
 * B_y[i]). *out_log receives its natural logarithm (-INFINITY when it is 0),
 * computed in log space so it never underflows. A saturated counter counts as
 * its lower bound, base + max. Cost O(m + sum B_y): one tail sum per
 * distinct counter value of y (at most 256 for 8-bit counters), each of at
 * most min(B_y[i], 16 sd) + 64 terms, sd = sqrt(n (1/m)(1 - 1/m)) <= B_y[i]
 * where the upper tail is summed; past sd = 4096 a normal approximation with
 * continuity correction replaces the sums, so the cost is bounded whatever a
 * loaded clock holds (docs/design/bloomclock.md 3.11a). Errors: BK_EINVAL,
 * BK_EMISMATCH.
 */
BK_API bk_status bk_bloomclock_log_pr_p(const bk_bloomclock *y,
                                        const bk_bloomclock *z,
                                        double *out_log);
/** exp of bk_bloomclock_log_pr_p. */
BK_API bk_status bk_bloomclock_pr_p(const bk_bloomclock *y,
                                    const bk_bloomclock *z, double *out);
/**
 * The slides' performance metrics from pr_p: pr_fp = (1 - pr_p) pr_p, the
 * probability of a false positive, and pr_pf = 1 - pr_p, the probability
 * that a positive is false. Errors as bk_bloomclock_pr_p.
 */
BK_API bk_status bk_bloomclock_pr_fp(const bk_bloomclock *y,
                                     const bk_bloomclock *z, double *out);
BK_API bk_status bk_bloomclock_pr_pf(const bk_bloomclock *y,
                                     const bk_bloomclock *z, double *out);

/**
 * Value of counter i: base + counter, or UINT64_MAX when saturated.
 * Errors: BK_EINVAL (NULL, i >= m).
 */
BK_API bk_status bk_bloomclock_get(const bk_bloomclock *c, uint64_t i,
                                   uint64_t *out);
/** Parameters and state; O(m). Errors: BK_EINVAL. */
BK_API bk_status bk_bloomclock_info_get(const bk_bloomclock *c,
                                        bk_bloomclock_info *out);

/** Bytes bk_bloomclock_serialize will write: 64 + m * width / 8 rounded up
 * to 8, + 8. Errors: BK_EINVAL. */
BK_API bk_status bk_bloomclock_serialized_size(const bk_bloomclock *c,
                                               size_t *out);
/** The wire form, into the caller's buffer. Errors: BK_EINVAL (NULL, cap
 * too small: nothing written). */
BK_API bk_status bk_bloomclock_serialize(const bk_bloomclock *c, void *buf,
                                         size_t cap, size_t *written);
/**
 * Load a clock (docs/design/bloomclock.md 3.11a). Every byte is treated as
 * hostile.
 * Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION, BK_ENOMEM; on error *out is
 * untouched and nothing leaks.
 */
BK_API bk_status bk_bloomclock_deserialize(const void *buf, size_t len,
                                           const bk_allocator *allocator,
                                           bk_bloomclock **out);
/**
 * Load a clock into an existing one of the same shape (m, k, width, hash,
 * seed), allocation-free. Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION,
 * BK_EMISMATCH; on error dst is unchanged.
 */
BK_API bk_status bk_bloomclock_load(bk_bloomclock *dst, const void *buf,
                                    size_t len);

/**
 * (m, k) for p processes and a target false positive rate, 8-bit counters.
 * Model (docs/design/bloomclock.md 3.11a, docs/results.md "Bloom clocks"): a
 * false positive needs every counter that y's latest event incremented to be
 * matched in z by events z has seen and y has not; with W = p * events such
 * events (each of the p processes runs `events` events before it hears of
 * y; 0 means 1) that is a Bloom filter of W elements, so (m, k) is the
 * least m with the optimal k meeting target_fpr for W (bk_params_for_target).
 * Errors: BK_EINVAL (NULL, p == 0 or above 2^24, target outside (0, 1), m
 * would pass BK_BLOOMCLOCK_M_MAX).
 */
BK_API bk_status bk_bloomclock_params(uint64_t p, uint64_t events,
                                      double target_fpr, uint64_t *m,
                                      unsigned *k);

/* ==== bk_vclock ========================================================= */

typedef struct bk_vclock bk_vclock;

typedef struct bk_vclock_config {
  uint64_t processes;            /**< 1 .. BK_VCLOCK_PROCESSES_MAX (required) */
  uint64_t process_id;           /**< < processes */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_vclock_config;

/** Create a zero vector clock. Errors: BK_EINVAL, BK_ENOMEM. */
BK_API bk_status bk_vclock_create(bk_vclock **out, const bk_vclock_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_vclock_destroy(bk_vclock *v);
/** dst := src, allocation-free. Errors: BK_EINVAL, BK_EMISMATCH. O(p). */
BK_API bk_status bk_vclock_copy(bk_vclock *dst, const bk_vclock *src);
/** Rule R1: V[i] += 1. Errors: BK_EINVAL, BK_ERANGE (V[i] at 2^32 - 1:
 * nothing changes; an exact clock cannot saturate). */
BK_API bk_status bk_vclock_tick(bk_vclock *v);
/** Rule R2: element-wise max, then R1. Errors: BK_EINVAL, BK_EMISMATCH
 * (different p: nothing changes), BK_ERANGE (as tick). O(p). */
BK_API bk_status bk_vclock_merge(bk_vclock *v, const bk_vclock *msg);
/** As merge, from the sender's wire form, allocation-free and validated
 * before v is touched. Errors as merge, plus BK_ECORRUPT, BK_EVERSION. */
BK_API bk_status bk_vclock_receive(bk_vclock *v, const void *buf, size_t len);
/** Exact causality of y and z. Errors: BK_EINVAL, BK_EMISMATCH. O(p). */
BK_API bk_status bk_vclock_compare(const bk_vclock *y, const bk_vclock *z,
                                   bk_causality *out);
/**
 * *out = the number of events in z's causal past that are not in y's:
 * sum over j of max(0, V_z[j] - V_y[j]), the causal distance from y to z
 * (0 exactly when z happened before y or they are equal). Errors:
 * BK_EINVAL, BK_EMISMATCH. O(p).
 */
BK_API bk_status bk_vclock_unseen(const bk_vclock *y, const bk_vclock *z,
                                  uint64_t *out);
/** Entry j. Errors: BK_EINVAL (NULL, j >= p). */
BK_API bk_status bk_vclock_get(const bk_vclock *v, uint64_t j, uint32_t *out);
/** Number of processes; 0 for NULL. */
BK_API uint64_t bk_vclock_processes(const bk_vclock *v);
/** Sum of the entries: the size of the event's causal past. 0 for NULL. */
BK_API uint64_t bk_vclock_sum(const bk_vclock *v);

/** Bytes bk_vclock_serialize writes: 48 + 4 p rounded up to 8, + 8. */
BK_API bk_status bk_vclock_serialized_size(const bk_vclock *v, size_t *out);
BK_API bk_status bk_vclock_serialize(const bk_vclock *v, void *buf, size_t cap,
                                     size_t *written);
/** Load (docs/design/bloomclock.md 3.11b); hostile bytes rejected. Errors:
 * BK_EINVAL, BK_ECORRUPT, BK_EVERSION, BK_ENOMEM; *out untouched on error. */
BK_API bk_status bk_vclock_deserialize(const void *buf, size_t len,
                                       const bk_allocator *allocator,
                                       bk_vclock **out);

#ifdef __cplusplus
}
#endif

#endif
