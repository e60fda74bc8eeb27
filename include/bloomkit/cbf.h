/* SPDX-License-Identifier: MIT */
/*
 * bk_cbf: the counting Bloom filter (Fan, Cao, Almeida & Broder 2000), and
 * bk_scbf: a scalable counting filter in the spirit of bitly's dablooms
 * (a list of counting filters that grows, each owning a range of caller
 * ids, optionally kept in a memory-mapped file).
 *
 * A counting filter keeps m counters of 4 (default), 8, 16 or 32 bits in
 * place of bits; an add increments the key's k counters, a remove
 * decrements them, so keys can be deleted. Two layouts, as bk_bloom:
 *
 *   BK_BLOOM_STANDARD  k counters anywhere in m: the textbook rate.
 *   BK_BLOOM_BLOCKED   all k counters inside one 64-byte block (512 / width
 *                      counters): one cache miss per operation, a somewhat
 *                      higher rate for the same m (sizing accounts for it).
 *
 * Saturation: a counter at its maximum (15 for 4 bits) stays there; adds
 * do not move it and removes never decrement it. So no sequence of adds
 * and removes of keys that were added can make a false negative (dablooms
 * let a counter at 15 ignore adds and then decrement it). The cost: a
 * saturated counter never returns to zero; info reports how many there are.
 *
 * Thread safety (as bk_bloom): add, remove and contains/count (and their
 * _hash and batch forms) may run concurrently from any number of threads;
 * each counter update is one atomic read-modify-write (a compare-and-swap
 * on the counter's word), and a reader sees each counter before or after
 * an update, never torn. With `single_writer` set, at most one thread may
 * add or remove at a time (any number may still read beside it): updates
 * are then plain loads and atomic stores of the word, without the locked
 * instruction, which is most of an add's cost when the counters are in
 * cache (the dablooms model: one writer). A contains running
 * beside a remove of the same key may see it either way. merge, clear and
 * deserialize need exclusive access to their destination; info and
 * serialize are safe beside updates (a snapshot of each counter, not of
 * the whole filter at one instant).
 */
#ifndef BLOOMKIT_CBF_H
#define BLOOMKIT_CBF_H

#include "bloomkit/params.h" /* bk_bloom_layout */
#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_cbf bk_cbf;

/**
 * Size by (capacity, fpp) — m and, unless given, k chosen so `capacity`
 * keys stay at fpp (blocked: with the blocked layout's own rate) — or by
 * explicit (m_counters, k). Zero fields mean "default".
 */
typedef struct bk_cbf_config {
  uint64_t capacity;      /**< expected keys present at once */
  double fpp;             /**< target false positive probability; 0.01 */
  uint64_t m_counters;    /**< explicit counter count (k then required) */
  unsigned k;             /**< hash functions, 1..64 */
  unsigned counter_bits;  /**< 4 (default), 8, 16 or 32 */
  bk_bloom_layout layout; /**< BK_BLOOM_STANDARD (default) or BLOCKED */
  bk_hash_alg hash_alg;   /**< BK_HASH_XXH3 by default */
  uint64_t seed;          /**< hash seed (32 bits for Murmur3) */
  bool single_writer;     /**< one updating thread at a time (see above) */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_cbf_config;

typedef struct bk_cbf_info {
  uint64_t m_counters; /**< after rounding (blocked: whole blocks) */
  unsigned k;
  unsigned counter_bits;
  bk_bloom_layout layout;
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t capacity;  /**< what it was sized for (0 if by m, k) */
  uint64_t nonzero;   /**< counters above zero */
  uint64_t saturated; /**< counters stuck at their maximum */
  double fill_fpp;    /**< rate from the share of nonzero counters */
  size_t memory;      /**< bytes held */
} bk_cbf_info;

/** Create an empty filter. Errors: BK_EINVAL (bad config), BK_ENOMEM. */
BK_API bk_status bk_cbf_create(bk_cbf **out, const bk_cbf_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_cbf_destroy(bk_cbf *f);
/** The filter's digest of a key, for the _hash forms. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_hash(const bk_cbf *f, const void *key, size_t len,
                             bk_hash *out);

/** Increment the key's counters (saturated ones stay). Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_add(bk_cbf *f, const void *key, size_t len);
BK_API bk_status bk_cbf_add_hash(bk_cbf *f, bk_hash h);

/**
 * Decrement the key's counters (saturated ones stay). If any of them is
 * zero the key cannot have been added: nothing changes and the result is
 * BK_ENOTFOUND. Errors: BK_EINVAL, BK_ENOTFOUND.
 */
BK_API bk_status bk_cbf_remove(bk_cbf *f, const void *key, size_t len);
BK_API bk_status bk_cbf_remove_hash(bk_cbf *f, bk_hash h);

/** *out = whether the key may be present (all k counters nonzero). */
BK_API bk_status bk_cbf_contains(const bk_cbf *f, const void *key, size_t len,
                                 bool *out);
BK_API bk_status bk_cbf_contains_hash(const bk_cbf *f, bk_hash h, bool *out);

/**
 * *out = the smallest of the key's counters: an upper bound on how many
 * times it was added and not removed (UINT32_MAX-capped; a saturated
 * counter reports its maximum). Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_count(const bk_cbf *f, const void *key, size_t len,
                              uint32_t *out);
BK_API bk_status bk_cbf_count_hash(const bk_cbf *f, bk_hash h, uint32_t *out);

/**
 * Batches, prefetched a few keys ahead so the cache misses of a batch
 * overlap. Every key is validated before any is used. remove_many stops at
 * nothing: *removed (may be NULL) counts the keys removed, the others were
 * absent. Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_add_many(bk_cbf *f, const void *const *keys,
                                 const size_t *lens, size_t n);
BK_API bk_status bk_cbf_remove_many(bk_cbf *f, const void *const *keys,
                                    const size_t *lens, size_t n,
                                    size_t *removed);
BK_API bk_status bk_cbf_contains_many(const bk_cbf *f, const void *const *keys,
                                      const size_t *lens, size_t n, bool *out);
BK_API bk_status bk_cbf_contains_many_hash(const bk_cbf *f,
                                           const bk_hash *hashes, size_t n,
                                           bool *out);

/**
 * dst += src counter by counter, saturating (a saturated counter in either
 * stays saturated). Errors: BK_EINVAL, BK_EMISMATCH (different m, k,
 * width, layout, hash or seed).
 */
BK_API bk_status bk_cbf_merge(bk_cbf *dst, const bk_cbf *src);
/**
 * Switch between concurrent updates (false, the default, and what a loaded
 * filter starts with) and single_writer (true). Needs exclusive access.
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_cbf_set_single_writer(bk_cbf *f, bool single_writer);
/** Zero every counter. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_clear(bk_cbf *f);
/** Parameters, fill and saturation; O(m). Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_info_get(const bk_cbf *f, bk_cbf_info *out);

/** Bytes bk_cbf_serialize will write. Errors: BK_EINVAL. */
BK_API bk_status bk_cbf_serialized_size(const bk_cbf *f, size_t *out);
/** Errors: BK_EINVAL (NULL, cap too small: nothing written). */
BK_API bk_status bk_cbf_serialize(const bk_cbf *f, void *buf, size_t cap,
                                  size_t *written);
/**
 * Load a serialized filter (docs/design/cbf.md 3.10). Every byte is treated
 * as hostile. Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION, BK_ENOMEM; on error
 * *out is untouched and nothing leaks.
 */
BK_API bk_status bk_cbf_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_cbf **out);

/* ==== bk_scbf: the scalable counting filter ============================== */

/*
 * bk_scbf: a list of counting filters (bk_cbf) that grows, after bitly's
 * dablooms (see docs/design/cbf.md 3.11). Filter i has capacity
 * capacity * growth^i and error fpp * (1 - r) * r^i (r = tightening), so the
 * compound error (the sum over filters) stays below fpp however many are
 * opened. Every add and remove carries a caller id, e.g. a timestamp or a
 * database row id, monotone in practice. Each filter owns a range of ids:
 * filter 0 starts at id 0 and filter i+1 starts just past the greatest id
 * added to filter i. The newest filter is "full" when the keys it holds
 * (adds minus removes) reach its capacity; the next add whose id is above
 * every id it holds opens filter i+1. An add with a smaller id goes to the
 * filter whose range holds it (so an older filter can be overfilled, as in
 * dablooms). A remove goes to the filter whose range holds its id, so it
 * never touches a filter the key was not added to. A check (contains) needs
 * no id and asks every filter; all filters share one hash, so a key is
 * hashed once.
 *
 * Storage: in memory (bk_scbf_create) or in a memory-mapped file
 * (bk_scbf_open). The file is self-describing: magic, version, type, every
 * parameter, a checksum of its header and of each filter's header, and,
 * written when the file is flushed or closed cleanly, a checksum of each
 * filter's counters, checked on open while the file says it was closed
 * cleanly (a flag the first write after open clears). Reopening
 * needs only the path; a file of another type or version, truncated or
 * with a damaged header is refused and never read past its end. Sizes and
 * offsets are 64-bit. Growing maps the new filter's part of the file on its
 * own, so the filters already mapped never move.
 *
 * Sequence numbers (dablooms' mem_seqnum / disk_seqnum): every successful
 * add or remove is one write and gets the next sequence number (create is
 * write 1). mem_seqnum is 0 while a write is in progress and its number
 * once it completed, stored in the file's header: after a process crash
 * (the OS survived, so the page cache did) a reopened file's mem_seqnum is
 * the last write the file holds completely, or 0 when it died mid-write
 * (replay from disk_seqnum, or rebuild). disk_seqnum is set by
 * bk_scbf_flush after msync: every write up to it is on disk. After an OS
 * crash the file holds every write up to disk_seqnum and possibly parts of
 * later ones, so replaying adds from disk_seqnum + 1 is safe (a counter can
 * only be counted twice, never lost); a replayed remove could remove a key
 * twice, so an application that removes and must survive an OS crash
 * rebuilds the filter instead. Both are 0 for an in-memory filter's
 * disk_seqnum. The application maps sequence numbers to its own log.
 *
 * Thread safety: contains (and _hash), the seqnum getters and info may run
 * from any number of threads concurrently with each other and with writers.
 * add, remove and flush serialise on the filter's write lock (so several
 * writer threads are safe too, one at a time). A reader never sees a torn
 * filter: a new filter is fully set up before it is published (an atomic
 * release of the filter count), and mapped filters never move. A contains
 * running beside an add or remove of the same key may see it either way.
 * serialize takes the write lock (a consistent snapshot). destroy needs
 * exclusive access. Between processes: one process writes a file at a time;
 * another process that has the file open sees counter changes through the
 * shared mapping but not filters added after it opened it. Another process
 * truncating the file while it is mapped is not defended against (SIGBUS).
 */
typedef struct bk_scbf bk_scbf;

/** Most filters a bk_scbf may hold (max_filters is at most this). */
#define BK_SCBF_FILTERS_MAX 64u

/** Configuration; zero fields mean "default". */
typedef struct bk_scbf_config {
  uint64_t capacity;     /**< keys of the first filter; required, >= 1 */
  double fpp;            /**< compound target error, [1e-12, 0.5]; 0.01 */
  double growth;         /**< capacity of filter i+1 / filter i, [1, 1000]; 2 */
  double tightening;     /**< r: error of filter i+1 / filter i, (0, 1); 0.5 */
  unsigned counter_bits; /**< 4 (default), 8, 16 or 32 */
  bk_bloom_layout layout;        /**< BK_BLOOM_STANDARD (default) or BLOCKED */
  bk_hash_alg hash_alg;          /**< BK_HASH_XXH3 by default */
  uint64_t seed;                 /**< hash seed (32 bits for Murmur3) */
  unsigned max_filters;          /**< 1..BK_SCBF_FILTERS_MAX; 32 */
  const bk_allocator *allocator; /**< NULL: libc (the struct; in memory
                                      also the counters) */
} bk_scbf_config;

/** One filter of a bk_scbf (bk_scbf_filter_info_get). */
typedef struct bk_scbf_filter_info {
  uint64_t capacity;   /**< keys it was sized for */
  double fpp;          /**< its share of the error: fpp (1 - r) r^i */
  uint64_t m_counters; /**< counters */
  unsigned k;          /**< hash functions */
  uint64_t count;      /**< keys added and not removed */
  bool has_ids;        /**< false until a key was added to it */
  uint64_t first_id;   /**< its id range [first_id, last_id] (has_ids) */
  uint64_t last_id;
  uint64_t nonzero;   /**< counters above zero */
  uint64_t saturated; /**< counters stuck at their maximum */
  double fill_fpp;    /**< rate from the share of nonzero counters */
} bk_scbf_filter_info;

/** The whole structure (bk_scbf_info_get). */
typedef struct bk_scbf_info {
  uint64_t capacity; /**< of filter 0 */
  double fpp;        /**< the compound target, as stored (1e-12 units) */
  double growth;     /**< as stored (1e-6 units) */
  double tightening; /**< as stored (1e-6 units) */
  unsigned counter_bits;
  bk_bloom_layout layout;
  bk_hash_alg hash_alg;
  uint64_t seed;
  unsigned max_filters;
  unsigned n_filters;
  uint64_t count;       /**< keys added and not removed, all filters */
  uint64_t nonzero;     /**< counters above zero, all filters */
  uint64_t saturated;   /**< counters at their maximum, all filters */
  uint64_t m_counters;  /**< counters, all filters */
  double estimated_fpp; /**< 1 - prod(1 - fill_fpp of filter i) */
  uint64_t seqnum;      /**< the last write begun */
  uint64_t mem_seqnum;  /**< see the header comment; 0: may be inconsistent */
  uint64_t disk_seqnum; /**< 0: nothing flushed (always 0 in memory) */
  bool file_backed;
  uint64_t file_size; /**< bytes of the file (0 in memory) */
  size_t memory;      /**< bytes held in memory (counters, in memory) */
} bk_scbf_info;

/**
 * Create an empty in-memory filter (one filter, id range starting at 0).
 * Errors: BK_EINVAL (bad config: capacity 0, fpp, growth, tightening or
 * max_filters out of range, or what bk_cbf_create would refuse for filter
 * 0), BK_ENOMEM. On error *out is untouched.
 */
BK_API bk_status bk_scbf_create(bk_scbf **out, const bk_scbf_config *cfg);

/**
 * Open the filter kept in the file at `path`, creating it with `cfg` when
 * the file does not exist or is empty. With cfg NULL the file must exist
 * and its own header supplies every parameter. With cfg given and a file
 * already there, the file's parameters must equal cfg's (BK_EMISMATCH
 * otherwise). The file is mapped shared; writes reach it without a call,
 * bk_scbf_flush makes them durable. Opening an existing file writes
 * nothing to it: a file longer than its filters (a crash while growing)
 * opens, and its trailing bytes are cut off by the next growth before it
 * extends the file. A file marked closed cleanly (format version 2,
 * closed or flushed after its last write) has every filter's checksum
 * checked: O(counters), one XXH3-64 pass. A file not closed cleanly (a
 * crash, or format version 1) opens unverified in O(filters), counters
 * unread (bk_scbf_verified, bk_scbf_verify). Errors: BK_EINVAL (NULL path or
 * out, bad cfg), BK_ENOTFOUND (cfg NULL and no such file), BK_ECORRUPT (not a
 * bk_scbf file, truncated, a damaged header or filter header, counters that do
 * not match the checksums of a file closed cleanly, or a state no sequence of
 * operations reaches: docs/design/cbf.md 3.11), BK_EVERSION (newer format),
 * BK_EMISMATCH, BK_EIO (open, ftruncate, mmap failed), BK_ENOMEM. On error *out
 * is untouched, a file this call created is removed and a file that was empty
 * is left empty.
 */
BK_API bk_status bk_scbf_open(bk_scbf **out, const char *path,
                              const bk_scbf_config *cfg);

/** Free. File-backed, when this handle wrote since its last flush: seal the
 *  file as bk_scbf_flush does, without recording disk_seqnum (msync,
 *  checksums, the clean mark), so the next open verifies it; a handle that
 *  only read writes nothing. NULL does nothing. */
BK_API void bk_scbf_destroy(bk_scbf *s);

/** The digest of a key for the _hash forms. Errors: BK_EINVAL. */
BK_API bk_status bk_scbf_hash(const bk_scbf *s, const void *key, size_t len,
                              bk_hash *out);

/**
 * Add a key with the caller's id (below UINT64_MAX): to the newest filter
 * when id is at least its first id (opening a new filter first when the
 * newest is full and id is above every id it holds), otherwise to the
 * older filter whose range holds id. Errors: BK_EINVAL (NULL, id
 * UINT64_MAX), BK_EFULL (a new filter is needed and max_filters are open,
 * or its size is beyond what a bk_cbf can hold), BK_ENOMEM, BK_EIO (the
 * file could not grow). On error nothing changed.
 */
BK_API bk_status bk_scbf_add(bk_scbf *s, const void *key, size_t len,
                             uint64_t id);
BK_API bk_status bk_scbf_add_hash(bk_scbf *s, bk_hash h, uint64_t id);

/**
 * Remove a key added with `id` from the filter whose range holds id.
 * Errors: BK_EINVAL, BK_ENOTFOUND (id in no filter's range, or one of the
 * key's counters in that filter is zero: the key was not added there);
 * on BK_ENOTFOUND nothing changed.
 */
BK_API bk_status bk_scbf_remove(bk_scbf *s, const void *key, size_t len,
                                uint64_t id);
BK_API bk_status bk_scbf_remove_hash(bk_scbf *s, bk_hash h, uint64_t id);

/** *out = whether the key may be present in any filter. O(filters). */
BK_API bk_status bk_scbf_contains(const bk_scbf *s, const void *key, size_t len,
                                  bool *out);
BK_API bk_status bk_scbf_contains_hash(const bk_scbf *s, bk_hash h, bool *out);

/**
 * File-backed: msync every filter, store each filter's checksum (of its
 * counters, count and ids) and msync it, then record disk_seqnum =
 * mem_seqnum and mark the file closed cleanly in the header and msync it:
 * until the next write, a crash leaves a file whose checksums open
 * verifies. Cost: the msyncs plus one XXH3-64 pass over the counters.
 * The next write first clears the mark (one msync of the header page).
 * In memory: nothing to do. Errors: BK_EINVAL, BK_EIO (msync failed;
 * disk_seqnum unchanged, the file not marked).
 */
BK_API bk_status bk_scbf_flush(bk_scbf *s);

/** *out = mem_seqnum / disk_seqnum (see the header comment). */
BK_API bk_status bk_scbf_mem_seqnum(const bk_scbf *s, uint64_t *out);
BK_API bk_status bk_scbf_disk_seqnum(const bk_scbf *s, uint64_t *out);

/**
 * *out = whether the counters are known good: true in memory, for a file
 * this handle created, and for a file that was closed cleanly (destroyed
 * or flushed after its last write) whose per-filter checksums matched at
 * open; false for a file not closed cleanly (a process or OS crash after a
 * write, or a file of format version 1, which has no checksums): run
 * bk_scbf_verify. A file that says it was closed cleanly and whose
 * checksums do not match is refused by bk_scbf_open (BK_ECORRUPT).
 * Errors: BK_EINVAL.
 */
BK_API bk_status bk_scbf_verified(const bk_scbf *s, bool *out);

/** What bk_scbf_verify found in one filter. */
typedef struct bk_scbf_filter_check {
  uint64_t count;        /**< keys its header counts (added, not removed) */
  unsigned k;            /**< counters each key adds 1 to */
  uint64_t expected_sum; /**< k * count (capped at UINT64_MAX) */
  uint64_t sum;          /**< of its counters below their maximum (capped) */
  uint64_t saturated;    /**< counters at their maximum */
  bool stray_bits;       /**< bits set where no operation writes: past
                              counter m, or in a filter with no id yet */
  bool consistent;       /**< the rules of bk_scbf_verify hold */
} bk_scbf_filter_check;

/** What bk_scbf_verify found. */
typedef struct bk_scbf_verify_result {
  bool verified;    /**< as bk_scbf_verified: checksums matched at open */
  bool interrupted; /**< mem_seqnum 0: a crash interrupted the last write */
  unsigned n_filters;
  unsigned n_inconsistent; /**< filters whose counters break the rules */
  bk_scbf_filter_check filters[BK_SCBF_FILTERS_MAX]; /**< [0, n_filters) */
} bk_scbf_verify_result;

/**
 * Check every filter's counters against its key count: what can be
 * checked without a checksum (for a file that opened unverified, after a
 * crash). Each add adds 1 to k counters and each remove of an added key
 * takes 1 from k, but a counter at its maximum never moves again; so per
 * filter: with no saturated counter the counters sum to exactly k * count,
 * with some the unsaturated ones sum to at most k * count; when the last
 * write was interrupted (mem_seqnum 0) the sum may also be down to
 * k * (count - 1); and no bit is set past counter m or in a filter with
 * no id. A damaged counter (zeroed, overwritten) almost always breaks the
 * sum; a change that keeps it (two counters moved by +1 and -1) is not
 * seen, nor is a wrong count of a filter whose counters saturated and
 * absorbed the difference. Removing keys that were never added (false
 * positives) also breaks the sum: that was the caller's error. Cost: reads
 * every counter, O(counters), under the write lock (writers wait).
 * *out is filled in every case but BK_EINVAL. Returns BK_OK when every
 * filter is consistent, BK_ECORRUPT when one is not (out says which),
 * BK_EINVAL (NULL).
 */
BK_API bk_status bk_scbf_verify(const bk_scbf *s, bk_scbf_verify_result *out);

/** Parameters, fill, saturation, seqnums; O(counters). Errors: BK_EINVAL. */
BK_API bk_status bk_scbf_info_get(const bk_scbf *s, bk_scbf_info *out);
/** Filter `index` (0 = oldest); O(its counters). Errors: BK_EINVAL,
 *  BK_ERANGE (index >= n_filters). */
BK_API bk_status bk_scbf_filter_info_get(const bk_scbf *s, unsigned index,
                                         bk_scbf_filter_info *out);

/** Bytes bk_scbf_serialize will write (it may grow by then if writers
 *  run). Errors: BK_EINVAL. */
BK_API bk_status bk_scbf_serialized_size(const bk_scbf *s, size_t *out);
/** A snapshot (under the write lock) in the common envelope; works for
 *  file-backed filters too. Errors: BK_EINVAL (NULL, cap too small:
 *  nothing written). */
BK_API bk_status bk_scbf_serialize(const bk_scbf *s, void *buf, size_t cap,
                                   size_t *written);
/**
 * Load a serialized filter into memory. Every byte is hostile
 * (docs/design/cbf.md 3.11). Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION,
 * BK_ENOMEM; on error *out is untouched and nothing leaks.
 */
BK_API bk_status bk_scbf_deserialize(const void *buf, size_t len,
                                     const bk_allocator *allocator,
                                     bk_scbf **out);

#ifdef __cplusplus
}
#endif

#endif
