/* SPDX-License-Identifier: MIT */
/*
 * bk_idem: idempotent counters. A table of named 64-bit counters that
 * applies each client update once: a client that times out and retries an
 * increment has it applied once, and the retry is answered with the
 * current value, like the fbf-thesis' "another acknowledgment is returned".
 *
 * Each update carries the client's op id (client id, per-client sequence
 * number). The strategy decides how duplicates are found, so they can be
 * compared on the same stream (docs/counters.md has the decision table):
 *   BK_IDEM_HYBRID        (default) a window per client, the FBF behind it
 *   BK_IDEM_WINDOW        a window per client only
 *   BK_IDEM_FBF           an FBF of op ids with fixed N and t (thesis ch. 5)
 *   BK_IDEM_FBF_ADAPTIVE  an FBF resized by Algorithm 3 to keep target_fpp
 *   BK_IDEM_RBF           one Bloom filter, cleared when full (Sec. 6.4.4)
 *   BK_IDEM_APBF          a time-based Age-Partitioned Bloom Filter of op
 *                         ids (apbf.h) keeping each the retry timeout
 *   BK_IDEM_NONE          vanilla counters: every retry counts again
 *
 * Client windows (WINDOW, HYBRID): per client, the highest seq applied and
 * one bit per seq for the W seqs up to it (W = `window`, a power of two,
 * default 256; the ring is kept in words of 64 seqs, so at least W - 63 and
 * at most W seqs below the highest are inside). An op whose seq is above
 * the highest or inside the window is decided exactly: no genuine update is
 * dropped and no retry is applied twice. A client costs 16 + 9 W / 64 bytes
 * (52 at W = 256) in a table kept 83-90 % full: 58-63 bytes at W = 256.
 * A client whose last applied op is older than the retry timeout is
 * evicted: by the clients' contract no retry of its ops can still arrive,
 * so its window holds nothing a later op needs; a later op of that client
 * starts a fresh window at its seq (it is applied). An op below the window
 * (the client has more than about W ops in flight, or numbers out of
 * order) cannot be decided by the window: WINDOW answers BK_IDEM_TOO_OLD
 * (not applied, nothing changed: the caller decides), HYBRID asks the FBF,
 * which holds every applied seq that slid out of a window while its retry
 * may still arrive (so a retry of it is still recognised), and decides it
 * with the FBF's false positive probability. Any client id and seq are
 * valid, 0 and UINT64_MAX included; a seq far above the highest costs no
 * more than one of W above it.
 *
 * The FBF and APBF strategies (and HYBRID's ops below the window) keep op
 * ids at least the retry timeout; a retry that arrives later may be applied
 * again, and a genuine update may, with the filter's false positive
 * probability, be taken for a duplicate and dropped.
 *
 * Time is an argument (bk_idem_advance), as for the FBF.
 *
 * Thread safety: add, get, remove, advance, info and serialize may run
 * concurrently from any number of threads. Check-and-apply is atomic per
 * operation: concurrent adds of the same op id apply it exactly once, and
 * concurrent adds of different ids to one key lose nothing. iterate holds
 * each internal stripe's lock while it visits that stripe's keys; the
 * callback must not call back into the same table.
 */
#ifndef BLOOMKIT_IDEM_H
#define BLOOMKIT_IDEM_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_idem bk_idem;

/** Longest key bk_idem accepts unless the config says less. */
#define BK_IDEM_KEY_MAX 4096u

typedef enum bk_idem_strategy {
  BK_IDEM_HYBRID = 0, /**< default: client windows, the FBF behind them */
  BK_IDEM_NONE = 1,
  BK_IDEM_RBF = 2,
  BK_IDEM_FBF_ADAPTIVE = 3,
  BK_IDEM_FBF = 4,
  BK_IDEM_WINDOW = 5,
  BK_IDEM_APBF = 6, /**< sized from ops_per_period (N + 1) and fpp */
} bk_idem_strategy;

/** Default client window (seqs); limits of `window`. */
#define BK_IDEM_WINDOW_DEFAULT 256u
#define BK_IDEM_WINDOW_MIN 64u
#define BK_IDEM_WINDOW_MAX 4096u

typedef enum bk_idem_outcome {
  BK_IDEM_APPLIED = 1,   /**< the update was new and has been applied */
  BK_IDEM_DUPLICATE = 2, /**< already applied (or a false positive): ignored */
  BK_IDEM_TOO_OLD = 3,   /**< WINDOW only: below the client's window, so it
                              cannot be decided; not applied, nothing
                              changed (the value is the current one) */
} bk_idem_outcome;

/** A client operation's globally unique id. */
typedef struct bk_idem_op_id {
  uint64_t client;
  uint64_t seq;
} bk_idem_op_id;

/**
 * Configuration; zero fields mean "default".
 * The window: the FBF keeps every op id at least `retry_timeout`. With N
 * past filters (n_past, default 2) the refresh period defaults to
 * ceil(retry_timeout / (N + 1)), so (N + 1) t covers the timeout.
 */
typedef struct bk_idem_config {
  bk_idem_strategy strategy;
  uint64_t retry_timeout;  /**< clients' retry timeout (required unless NONE) */
  unsigned window;         /**< W of WINDOW and HYBRID: a power of two in
                                [BK_IDEM_WINDOW_MIN, BK_IDEM_WINDOW_MAX],
                                0 = BK_IDEM_WINDOW_DEFAULT */
  uint64_t refresh_period; /**< t; must be <= retry_timeout and satisfy
                                (N + 1) t >= retry_timeout */
  unsigned n_past;         /**< N, default 2 */
  uint64_t ops_per_period; /**< expected updates per period (sizing) */
  double fpp;              /**< target fpp of the filter, default 0.001 */
  uint64_t m_bits;         /**< explicit bits per constituent filter */
  unsigned k;              /**< explicit hash count; alone, m is sized
                                for fpp with this k */
  double target_fpp;       /**< FBF_ADAPTIVE / RBF threshold; default fpp */
  unsigned max_filters;    /**< FBF_ADAPTIVE ceiling, default 4 (N + 2) */
  uint64_t adapt_interval; /**< FBF_ADAPTIVE tick, default t */
  uint64_t period_step;    /**< FBF_ADAPTIVE step of t, default t / 10 */
  uint64_t start_time;     /**< the caller's clock at creation */
  size_t max_key_len;      /**< default and ceiling BK_IDEM_KEY_MAX */
  uint64_t expected_keys;  /**< initial table sizing hint */
  bk_hash_alg hash_alg;
  uint64_t seed;
  const bk_allocator *allocator;
} bk_idem_config;

/**
 * Create a table. Errors: BK_EINVAL (NULL, unknown strategy, retry_timeout 0
 * for a filtering strategy, a window that is not a power of two in the
 * limits, a refresh period longer than the window or
 * whose window cannot cover the timeout, fpp outside (0, 1), max_key_len
 * above BK_IDEM_KEY_MAX, bad hash or allocator), BK_ENOMEM.
 */
BK_API bk_status bk_idem_create(bk_idem **out, const bk_idem_config *cfg);

/** Free the table. NULL does nothing. */
BK_API void bk_idem_destroy(bk_idem *t);

/**
 * Apply `delta` to counter `key` unless op `id` was already applied.
 * *value (may be NULL) receives the counter's value after the call, also
 * for a duplicate; *outcome (may be NULL) says which it was (WINDOW: also
 * BK_IDEM_TOO_OLD, not applied). A new key
 * starts at 0. Errors: BK_EINVAL (NULL table, empty or over-long key, NULL
 * key), BK_ERANGE (the sum would overflow int64; nothing is applied or
 * recorded), BK_ENOMEM (a new key could not be stored; nothing recorded).
 * On error the table is unchanged.
 */
BK_API bk_status bk_idem_add(bk_idem *t, const void *key, size_t len,
                             bk_idem_op_id id, int64_t delta, int64_t *value,
                             bk_idem_outcome *outcome);

/**
 * Apply n updates in order, with the results of n calls of bk_idem_add:
 * op i adds deltas[i] (deltas NULL: +1 each) to counter keys[i] (lens[i]
 * bytes) unless op ids[i] was already applied, by an earlier op of the
 * same batch too (a retry inside a batch is a duplicate of its first
 * copy). Per-op results, each array NULL when not wanted, else n entries:
 * values[i] and outcomes[i] are bk_idem_add's *value and *outcome;
 * statuses[i] is BK_OK, or BK_ERANGE when the sum would overflow int64
 * (op i neither applied nor recorded, values[i] and outcomes[i] left as
 * they were, as bk_idem_add leaves them; the batch goes on). Without
 * `statuses` an op out of range stops the batch like a hard error.
 *
 * Arguments are checked before any op: BK_EINVAL (NULL table; n > 0 with
 * NULL keys, lens or ids; a NULL, empty or over-long key anywhere in the
 * batch) applies nothing. A hard error on op i (BK_ENOMEM: a new key or
 * client window or HYBRID's FBF could not be made; or BK_ERANGE without
 * `statuses`) stops the batch there and is returned: ops before i are done
 * (their results written), op i left no trace, ops after it were not
 * looked at. *done (may be NULL) receives the number of ops done: n on
 * BK_OK, i on a hard error, 0 on BK_EINVAL; so a caller resumes at op
 * *done.
 *
 * A batch is n adds, not a transaction: each op is atomic as a single add
 * is, and adds from other threads may interleave between a batch's ops
 * (another thread can see some of them applied and not the rest).
 * Concurrent batches and adds with overlapping op ids apply each op
 * exactly once. The batch does not move the clock (bk_idem_advance).
 * Cost: O(n); the counter slots and client windows (or filter words) of
 * the next ops are prefetched while op i is applied, so their cache misses
 * overlap: on a table larger than the cache a batch is faster than n
 * calls (docs/results.md, "Idempotent counters").
 */
BK_API bk_status bk_idem_add_many(bk_idem *t, const void *const *keys,
                                  const size_t *lens, const bk_idem_op_id *ids,
                                  const int64_t *deltas, size_t n,
                                  int64_t *values, bk_idem_outcome *outcomes,
                                  bk_status *statuses, size_t *done);

/** Current value of `key`. Errors: BK_EINVAL, BK_ENOTFOUND. */
BK_API bk_status bk_idem_get(const bk_idem *t, const void *key, size_t len,
                             int64_t *value);

/** Remove `key`. Errors: BK_EINVAL, BK_ENOTFOUND. */
BK_API bk_status bk_idem_remove(bk_idem *t, const void *key, size_t len);

/**
 * Call `fn(ctx, key, len, value)` for every key (in no particular order);
 * a nonzero return stops the walk. Errors: BK_EINVAL.
 */
BK_API bk_status bk_idem_iterate(const bk_idem *t,
                                 int (*fn)(void *ctx, const void *key,
                                           size_t len, int64_t value),
                                 void *ctx);

/** Advance the table's clock (the filter's refreshes and adaptation, the
 * eviction of idle clients' windows). Errors: BK_EINVAL (NULL, time going
 * backwards; nothing changes). */
BK_API bk_status bk_idem_advance(bk_idem *t, uint64_t now);

/** What a table holds and costs. */
typedef struct bk_idem_info {
  bk_idem_strategy strategy;
  uint64_t keys;
  uint64_t applied;        /**< updates applied */
  uint64_t duplicates;     /**< updates dismissed as duplicates */
  size_t filter_memory;    /**< bytes of the duplicate filter */
  size_t table_memory;     /**< bytes of the counters and keys */
  double fpp;              /**< the filter's current estimated fpp (0: NONE) */
  uint64_t window_min;     /**< ids are kept at least this long (0: NONE/RBF;
                                WINDOW: the retry timeout) */
  unsigned n_filters;      /**< FBF constituent filters in use now (0: none) */
  uint64_t refresh_period; /**< FBF refresh period now (0: none) */
  /* Client windows (WINDOW, HYBRID; 0 otherwise). */
  unsigned window;          /**< W */
  uint64_t clients;         /**< clients with a window now */
  uint64_t window_decided;  /**< ops the windows decided exactly */
  uint64_t below_window;    /**< ops below their window: HYBRID's FBF
                                 decided them, WINDOW answered TOO_OLD */
  uint64_t slid_to_filter;  /**< applied seqs moved into the FBF as they
                                 slid out of a window (HYBRID) */
  uint64_t clients_evicted; /**< windows dropped after the timeout */
  size_t window_memory;     /**< bytes of the client windows */
  uint64_t now;             /**< the table's clock */
} bk_idem_info;

BK_API bk_status bk_idem_info_get(const bk_idem *t, bk_idem_info *out);

/** Bytes bk_idem_serialize() will write now. Errors: BK_EINVAL. */
BK_API bk_status bk_idem_serialized_size(const bk_idem *t, size_t *out);

/**
 * Snapshot the table and its filter in the common serialized form. Not
 * atomic with concurrent adds (each key is seen before or after an add).
 * Errors: BK_EINVAL (NULL, cap too small: call serialized_size again, the
 * table may have grown).
 */
BK_API bk_status bk_idem_serialize(const bk_idem *t, void *buf, size_t cap,
                                   size_t *written);

/**
 * Restore a snapshot. Replaying updates the snapshot already applied (a
 * host's write-ahead log, say) then changes nothing, within the window.
 * Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION, BK_ENOMEM.
 */
BK_API bk_status bk_idem_deserialize(const void *buf, size_t len,
                                     const bk_allocator *allocator,
                                     bk_idem **out);

#ifdef __cplusplus
}
#endif

#endif
