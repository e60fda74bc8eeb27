/* SPDX-License-Identifier: MIT */
/*
 * bk_fbf: the Forgetful Bloom Filter (fbf-thesis chapters 3 and 4).
 *
 * Lanes. The W constituent filters are stored transposed: lane j holds bit j
 * of every filter, one bit per physical slot, lanes packed `stride` bits
 * apart (stride = W, or 64 when W > 57 so a lane never needs three words):
 *
 *   bit  j*stride + 0 ... j*stride + W-1      (W = 4 here)
 *        [ s0 s1 s2 s3 | s0 s1 s2 s3 | s0 s1 s2 s3 | ...
 *          lane 0        lane 1        lane 2
 *
 * Physical slots form a ring: logical position p (0 future, 1 present,
 * 2.. past newest to oldest) is slot (head + p) % W. A refresh moves head
 * back by one, so every filter ages one place without moving a bit, and the
 * slot that becomes the new future must be empty: either a free slot (when
 * fewer than W filters are in use) or the dropped oldest one, cleared.
 *
 * A check loads the k lanes of the key (one aligned word each, two for a
 * lane that runs into the next word), ANDs them and applies the pair rule
 * of the optimized check (Algorithm 2 as corrected in docs/design/fbf.md 5.2):
 *   hit = L.future | (L.p & L.p+1 for p = present .. past_{N-1}) | L.oldest
 * on the physical bits, with masks computed once per state (rule_of), so
 * it costs at most k lane loads whatever N is.
 *
 * Refresh concurrency. The state (head, count, generation, sweep flags) is
 * one atomic word. Readers take a snapshot, probe, and retry if the word
 * changed meanwhile (a seqlock without a writer-side lock on readers).
 * Clearing a dropped slot takes O(W m / 64) word operations, so it is done
 * after the new state is published, chunk by chunk (4096 lanes a chunk):
 *   - each chunk carries the generation of its last sweep; the refresher
 *     claims a chunk (busy bit), clears the dropped slots' bits, and stamps
 *     the chunk with the new generation;
 *   - an inserter about to write into a chunk that is not stamped yet sweeps
 *     it first (or waits for the refresher to finish it), so a sweep never
 *     erases a bit written under the new state;
 *   - a reader masks the new future's bit in chunks not yet swept, because
 *     there the slot still holds the dropped filter's bits;
 *   - an insert takes its key lock before it reads the state; a refresh,
 *     after publishing, waits for every key lock it sees held to be
 *     released (a grace period), so no insert that read an old state
 *     writes into a slot being cleared, and its bits and counts land where
 *     its state said; an inserter that sweeps a chunk during the grace
 *     period clears words with an atomic AND, because old-state inserts
 *     still set other slots' bits there (sweep_chunk_words).
 * Every refresh is therefore atomic to readers and writers: a check sees
 * the old or the new filter set, and an insert is in the future and present
 * filters of the state it finished in.
 *
 * Where the rest is: what a refresh does and when (Sec. 3.3, the clock of
 * bk_fbf_advance) is in fbf_refresh.c, which publishes each new state
 * through bk__fbf_publish_and_sweep here; the estimate, the sizing helpers
 * and Algorithm 3 are in fbf_adapt.c; the serialized form in fbf_io.c.
 */
#include <math.h>
#include <stdlib.h>

#include "fbf_internal.h"
#include "core/hash_fast.h"
#include "core/sync.h"
#include "bloomkit/params.h"

#define DEFAULT_FPP 0.01
#define DEFAULT_ADAPT_INTERVAL 1000u
#define DEFAULT_PERIOD_STEP 1000u
#define CHUNK_BUSY ((uint64_t)1 << 63)

/* ---- lanes --------------------------------------------------------------- */

static inline uint64_t width_mask(unsigned w) {
  return w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
}

/* The lane whose first bit is `bit` (lane j: bit j * stride) as W bits,
 * physical slot s at bit s, plus higher bits that the caller masks (a
 * check's AND starts from width_mask). Aligned relaxed loads of the lane's
 * word and, when the lane runs into the next word, of that one (the array
 * has a spare word at the end). A lane that fits its word loads that word
 * twice instead, branch-free: the second word only reaches bits
 * 64 - off >= W, which the mask drops. Loading word w + 1 unconditionally
 * touched the next cache line, unprefetched, for 1 lane in 8: a miss in
 * series in 61 % of the lookups of k = 7. */
static inline uint64_t load_lane(const bk_fbf *f, uint64_t bit) {
  uint64_t w = bit >> 6;
  unsigned off = (unsigned)(bit & 63);
  uint64_t w_next = w + (off + f->width > 64);
  /* Acquire (free on x86): orders the reader's second look at the state
   * after these loads, and pairs with the sweep's release stores. */
  uint64_t w0 = __atomic_load_n(&f->words[w], __ATOMIC_ACQUIRE);
  uint64_t w1 = __atomic_load_n(&f->words[w_next], __ATOMIC_ACQUIRE);
  /* (w1 << 1) << (63 - off) is w1 << (64 - off), and 0 when off == 0. */
  return (w0 >> off) | ((w1 << 1) << (63 - off));
}

/* The pair rule (Algorithm 2, with the oldest past checked alone as
 * docs/design/fbf.md's erratum 5.2 says) on physical lane bits, for one state.
 * Logically, with L the lane bits in logical order (p = 0 future, 1
 * present, 2.. past) of the `count` filters in use:
 *   hit = L.0 | L.count-1 | (L.p & L.p+1 for p = 1 .. count-2)
 * (SIMPLE: any L.p). Logical p is physical slot (head + p) % W, and logical
 * p + 1 the next slot round the ring, so the rule needs no rotation into
 * logical order: with next(x) = x rotated right by one within W bits (slot
 * s gets slot s + 1's bit),
 *   hit = (x & single) | (x & next(x) & pairs),
 * single and pairs being the physical bits of logical {0, count-1} and
 * {1 .. count-2}. A few operations per lane, masks computed once a state. */
typedef struct rule {
  uint64_t single, pairs;
  unsigned top; /* W - 1 */
} rule;

/* Logical bits x (count <= W) moved to physical slots: rotated left by
 * head within W bits. */
static inline uint64_t to_physical(uint64_t x, unsigned head, unsigned w) {
  if (!head) return x;
  return ((x << head) | (x >> (w - head))) & width_mask(w);
}

static inline rule rule_of(const bk_fbf *f, uint64_t st, bk_fbf_check check) {
  unsigned head = BK__ST_HEAD(st), count = BK__ST_COUNT(st), w = f->width;
  uint64_t single, pairs;
  if (check == BK_FBF_CHECK_SIMPLE) {
    single = width_mask(count);
    pairs = 0;
  } else {
    single = 1 | ((uint64_t)1 << (count - 1));
    pairs = width_mask(count - 1) & ~(uint64_t)1;
  }
  return (rule){to_physical(single, head, w), to_physical(pairs, head, w),
                w - 1};
}

/* x: lane bits masked to W. */
static inline bool rule_hit(const rule *r, uint64_t x) {
  uint64_t next = (x >> 1) | ((x & 1) << r->top);
  return ((x & r->single) | (x & next & r->pairs)) != 0;
}

static inline uint64_t chunk_of_bit(const bk_fbf *f, uint64_t bit) {
  return bit / ((uint64_t)BK__FBF_CHUNK_LANES * f->stride);
}

/* ---- sweeping ------------------------------------------------------------ */

/* Test hook (NULL outside tests): called at the points named by
 * bk__fbf_pause_at, to widen race windows that are a few instructions wide. */
void (*bk__fbf_test_pause)(bk__fbf_pause_at where);

static inline void test_pause(bk__fbf_pause_at where) {
  void (*hook)(bk__fbf_pause_at) =
      __atomic_load_n(&bk__fbf_test_pause, __ATOMIC_RELAXED);
  if (BK_UNLIKELY(hook != NULL)) hook(where);
}

/* Clear the dropped slots (keep_mask) in chunk c. Caller has claimed it, so
 * no other sweep and no insert under the new state writes the chunk
 * meanwhile (those wait in ensure_swept). Inserts that read the previous
 * state may still be running, though, until the refresh's grace period
 * ends (bk__fbf_publish_and_sweep): they write other slots' bits (the
 * previous future and present, never a dropped slot) into these words, so until
 * then a word is cleared with an atomic AND (`racing`). After the grace
 * period nobody else writes the chunk: a plain load and store, which is
 * what a refresh's own sweep of every chunk costs (a locked AND per word
 * would make a refresh ~20x slower: nearly every word holds a dropped bit).
 * An inserter sweeps a chunk only when it reaches it before the refresh
 * does, so the locked path is rare. Release: a reader that sees the store
 * also sees the new state. */
static void sweep_chunk_words(bk_fbf *f, uint64_t c, bool racing) {
  /* A chunk is 4096 lanes = 64 * stride words, a whole number of mask
   * periods (the bit pattern of one slot repeats every `stride` words). */
  uint64_t first = c * 64u * f->stride;
  uint64_t last = first + 64u * f->stride;
  uint64_t lanes_end_bit = f->m * f->stride;
  uint64_t end_word = (lanes_end_bit + 63) / 64;
  if (last > end_word) last = end_word;
  unsigned period = f->stride;
  for (uint64_t w = first, p = 0; w < last; w++) {
    uint64_t keep = f->keep_mask[p];
    uint64_t cur = __atomic_load_n(&f->words[w], __ATOMIC_RELAXED);
    test_pause(BK__FBF_PAUSE_SWEEP_WORD);
    if (racing) {
      if (cur & ~keep) __atomic_fetch_and(&f->words[w], keep, __ATOMIC_RELEASE);
    } else {
      __atomic_store_n(&f->words[w], cur & keep, __ATOMIC_RELEASE);
    }
    if (++p == period) p = 0;
  }
}

/* Make sure chunk c is swept for generation `gen`: claim and sweep it, or
 * wait while someone else does. */
static void ensure_swept(bk_fbf *f, uint64_t c, uint64_t gen) {
  for (unsigned spins = 0;;) {
    uint64_t e = __atomic_load_n(&f->chunk_epoch[c], __ATOMIC_ACQUIRE);
    if (e == gen) return;
    if (!(e & CHUNK_BUSY) && e < gen &&
        __atomic_compare_exchange_n(&f->chunk_epoch[c], &e, gen | CHUNK_BUSY,
                                    false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      /* Acquire: seeing the grace period of `gen` over, this sweep also
       * sees every insert under the previous state finished. */
      sweep_chunk_words(f, c,
                        __atomic_load_n(&f->grace_gen, __ATOMIC_ACQUIRE) < gen);
      __atomic_store_n(&f->chunk_epoch[c], gen, __ATOMIC_RELEASE);
      return;
    }
    if (!(e & CHUNK_BUSY) && e > gen) return; /* a later refresh swept it */
    bk__backoff(&spins);
  }
}

/* ---- checks and inserts -------------------------------------------------- */

/* The key's k lanes (enhanced double hashing over h, as bk_bloom), as the
 * position of each lane's first bit, each prefetched so the cache misses
 * overlap. Computed once per call: a check, its retries and the insert that
 * may follow all use the same array. */
static inline void key_lanes(const bk_fbf *f, bk_hash h, uint64_t *lanes,
                             bool for_write) {
  bk__probe_seq p = bk__probe_start(h);
  for (unsigned i = 0; i < f->k; i++) {
    lanes[i] = bk__probe_next(&p, i, f->m) * f->stride;
    /* the lane's first and last bit: one line, or two */
    const uint64_t *w = &f->words[lanes[i] >> 6];
    const uint64_t *w_end = &f->words[(lanes[i] + f->width - 1) >> 6];
    if (for_write) {
      __builtin_prefetch(w, 1);
      __builtin_prefetch(w_end, 1);
    } else {
      __builtin_prefetch(w);
      __builtin_prefetch(w_end);
    }
  }
}

/* The AND of the key's k lanes under state `st` (masked to W bits), future
 * masked in chunks a refresh has not swept yet. Stops as soon as the pair
 * rule already fails on the partial AND: ANDing more lanes only clears
 * bits, and the rule is monotone, so the answer can no longer become
 * "present" (at N = 30 this ends an absent probe after ~3 lanes instead of
 * ~6). The lanes were prefetched by key_lanes, so the early exit usually
 * costs one memory latency, not three in series. (Loading all k lanes and
 * deciding once was measured slower: 204 vs 168 ns a lookup at N = 6,
 * 64 MiB; the exit shortens each call, so more of the next one's misses
 * start while this one waits.) */
static inline uint64_t probe_lanes(const bk_fbf *f, const uint64_t *lanes,
                                   uint64_t st, const rule *r) {
  uint64_t acc = width_mask(f->width);
  if (__builtin_expect(BK__ST_SWEEP(st) && BK__ST_FSWEEP(st), 0)) {
    uint64_t gen = BK__ST_GEN(st);
    uint64_t future_bit = (uint64_t)1 << BK__ST_HEAD(st);
    for (unsigned i = 0; i < f->k; i++) {
      /* The chunk's epoch is read BEFORE the lane: stamped means the
       * sweep's stores happened before (release/acquire), so the lane is
       * clean; otherwise the future bit is masked whatever the lane load
       * returns. */
      bool unswept = __atomic_load_n(&f->chunk_epoch[chunk_of_bit(f, lanes[i])],
                                     __ATOMIC_ACQUIRE) != gen;
      uint64_t lane = load_lane(f, lanes[i]);
      if (unswept) lane &= ~future_bit;
      acc &= lane;
      if (!rule_hit(r, acc)) return 0;
    }
    return acc;
  }
  for (unsigned i = 0; i < f->k; i++) {
    acc &= load_lane(f, lanes[i]);
    if (!rule_hit(r, acc)) return 0;
  }
  return acc;
}

/* The key's lanes probed under one state, again when a refresh published
 * another meanwhile. The rule is the check's (`check`), or with
 * `future_and_present` only the pair of the future and the present filter
 * (in_future_and_present). */
static inline bool probe_stable(const bk_fbf *f, const uint64_t *lanes,
                                bk_fbf_check check, bool future_and_present) {
  for (;;) {
    uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
    rule r = future_and_present
                 ? (rule){0, (uint64_t)1 << BK__ST_HEAD(st), f->width - 1}
                 : rule_of(f, st, check);
    uint64_t acc = probe_lanes(f, lanes, st, &r);
    if (__atomic_load_n(&f->state, __ATOMIC_ACQUIRE) != st) continue;
    return acc != 0;
  }
}

static bool check_lanes(const bk_fbf *f, const uint64_t *lanes,
                        bk_fbf_check check) {
  return probe_stable(f, lanes, check, false);
}

static bool check_hash(const bk_fbf *f, bk_hash h, bk_fbf_check check) {
  uint64_t lanes[BK_K_MAX];
  key_lanes(f, h, lanes, false);
  return check_lanes(f, lanes, check);
}

/* Set the future and present bits of lane j; one locked OR when both
 * land in one word (the usual case), none when they are already set. A bit
 * found set stays set: only a later refresh could clear it, and that waits
 * for this insert (see insert_locked). */
static inline void set_lane_bits(bk_fbf *f, uint64_t lane, unsigned future,
                                 unsigned present) {
  uint64_t bf = lane + future, bp = lane + present;
  uint64_t wf = bf >> 6, wp = bp >> 6;
  uint64_t mf = (uint64_t)1 << (bf & 63), mp = (uint64_t)1 << (bp & 63);
  if (wf == wp) {
    uint64_t mask = mf | mp;
    if ((__atomic_load_n(&f->words[wf], __ATOMIC_RELAXED) & mask) != mask)
      __atomic_fetch_or(&f->words[wf], mask, __ATOMIC_RELAXED);
    return;
  }
  if (!(__atomic_load_n(&f->words[wf], __ATOMIC_RELAXED) & mf))
    __atomic_fetch_or(&f->words[wf], mf, __ATOMIC_RELAXED);
  if (!(__atomic_load_n(&f->words[wp], __ATOMIC_RELAXED) & mp))
    __atomic_fetch_or(&f->words[wp], mp, __ATOMIC_RELAXED);
}

/* Put the key into the future and present filters of the current state;
 * the caller holds key lock `li`. The lock is the insert's registration
 * with refreshes: it was taken (seq_cst) before the state is read here
 * (seq_cst), and a refresh publishes its state (seq_cst) before it reads
 * the locks (seq_cst). So either this insert reads the new state, or the
 * refresh sees the lock held and waits for its release before its own
 * sweep (inserters sweeping meanwhile use an atomic AND, see
 * sweep_chunk_words): the insert's bits and counts always land in the future
 * and present of the state it read, as an in-flight count per generation
 * achieved with two more locked instructions an insert. The counts are
 * the lock's own (only its holder writes them): plain loads and stores. */
static void insert_locked(bk_fbf *f, unsigned li, const uint64_t *lanes) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_SEQ_CST);
  uint64_t gen = BK__ST_GEN(st);
  unsigned head = BK__ST_HEAD(st);
  unsigned present = head + 1 == f->width ? 0 : head + 1;
  if (BK__ST_SWEEP(st))
    for (unsigned i = 0; i < f->k; i++)
      ensure_swept(f, chunk_of_bit(f, lanes[i]), gen);
  /* Counted before its bits are set (release fence): whoever sees a bit
   * then reads the counts after an acquire fence (a snapshot) finds the
   * insert counted, so a slot's count is never 0 while it holds bits and
   * its bits never exceed k per counted insert. */
  uint64_t *counts = bk__fbf_counts(f, li);
  __atomic_store_n(&counts[head],
                   __atomic_load_n(&counts[head], __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&counts[present],
                   __atomic_load_n(&counts[present], __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  test_pause(BK__FBF_PAUSE_INSERT_BITS);
  for (unsigned i = 0; i < f->k; i++) set_lane_bits(f, lanes[i], head, present);
}

static inline bk_status hash_key(const bk_fbf *f, const void *key, size_t len,
                                 bk_hash *out) {
  BK_RETURN_IF(!f, BK_EINVAL);
  return bk__hash_key(f->hash_alg, f->seed, key, len, out);
}

bk_status bk_fbf_hash(const bk_fbf *f, const void *key, size_t len,
                      bk_hash *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  return hash_key(f, key, len, out);
}

bk_status bk_fbf_contains_with(const bk_fbf *f, bk_hash h, bk_fbf_check check,
                               bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  if (check == BK_FBF_CHECK_DEFAULT) check = f->check;
  BK_RETURN_IF(check != BK_FBF_CHECK_OPTIMIZED && check != BK_FBF_CHECK_SIMPLE,
               BK_EINVAL);
  *out = check_hash(f, h, check);
  return BK_OK;
}

bk_status bk_fbf_contains_hash(const bk_fbf *f, bk_hash h, bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = check_hash(f, h, f->check);
  return BK_OK;
}

bk_status bk_fbf_contains(const bk_fbf *f, const void *key, size_t len,
                          bool *out) {
  bk_hash h;
  BK_RETURN_IF(!out, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  *out = check_hash(f, h, f->check);
  return BK_OK;
}

/* The check as of a later time: only the current filters logical 0 ..
 * survivors - 1 remain, behind new empty ones, so the rule is the pairs
 * among them and the last one alone (with a new empty future in front,
 * the current future is checked in its pair with the current present);
 * SIMPLE: any of them. */
static bool check_survivors(const bk_fbf *f, const uint64_t *lanes, uint64_t st,
                            unsigned survivors, bk_fbf_check check) {
  if (!survivors) return false;
  unsigned head = BK__ST_HEAD(st), w = f->width;
  uint64_t single = check == BK_FBF_CHECK_SIMPLE
                        ? width_mask(survivors)
                        : (uint64_t)1 << (survivors - 1);
  uint64_t pairs = check == BK_FBF_CHECK_SIMPLE ? 0 : width_mask(survivors - 1);
  rule r = {to_physical(single, head, w), to_physical(pairs, head, w), w - 1};
  return probe_lanes(f, lanes, st, &r) != 0;
}

bk_status bk_fbf_contains_at_hash(const bk_fbf *f, bk_hash h, uint64_t now,
                                  bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  uint64_t lanes[BK_K_MAX];
  key_lanes(f, h, lanes, false);
  /* No refresh due by `now` (nor, then, any adaptation tick that could
   * matter here): the current answer. Read without the mutex; a refresh
   * racing with it only makes the answer as of a later time. */
  if (now < __atomic_load_n(&f->next_refresh, __ATOMIC_RELAXED)) {
    *out = check_lanes(f, lanes, f->check);
    return BK_OK;
  }
  bk_fbf *mf = (bk_fbf *)f; /* the mutex only: nothing is modified */
  pthread_mutex_lock(&mf->mu);
  bool moved;
  unsigned survivors = bk__fbf_survivors_at(f, now, &moved);
  /* Under the mutex no refresh runs, so the state is stable and swept. */
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
  *out = moved ? check_survivors(f, lanes, st, survivors, f->check)
               : check_lanes(f, lanes, f->check);
  pthread_mutex_unlock(&mf->mu);
  return BK_OK;
}

bk_status bk_fbf_contains_at(const bk_fbf *f, const void *key, size_t len,
                             uint64_t now, bool *out) {
  bk_hash h;
  BK_RETURN_IF(!out, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  return bk_fbf_contains_at_hash(f, h, now, out);
}

/* Algorithm 1: only an element the check does not find is inserted. */
/* Is the key in both the future and the present filter? Then an add would
 * set no bit, and those two keep it for the whole window: they move down
 * the list together, as a pair until the present drops and then the
 * future alone as the oldest (the check's rule). The thesis' INSERT
 * (Algorithm 1) skips any key the membership check finds; but a key found
 * only in an older pair, or in the oldest filter alone, may be a false
 * positive of filters that are dropped within a period or two, and skipped
 * it would be forgotten long before s + (N+1) t (docs/design/fbf.md,
 * errata, 5.14). */
static bool in_future_and_present(const bk_fbf *f, const uint64_t *lanes) {
  /* a pair rule at the future's slot: future and present (head + 1) */
  return probe_stable(f, lanes, f->check, true);
}

static inline void insert_checked(bk_fbf *f, bk_hash h, const uint64_t *lanes) {
  if (!in_future_and_present(f, lanes)) {
    unsigned li = bk__key_lock_index(h);
    uint32_t *lock = bk__fbf_lock(f, li);
    uint32_t held = bk__seq_lock(lock);
    insert_locked(f, li, lanes);
    bk__seq_unlock(lock, held);
  }
}

/* "Absent, now inserted", decided once under the key's lock; the lanes are
 * computed (and prefetched) before it. */
static inline bool add_if_absent_lanes(bk_fbf *f, bk_hash h,
                                       const uint64_t *lanes) {
  unsigned li = bk__key_lock_index(h);
  uint32_t *lock = bk__fbf_lock(f, li);
  uint32_t held = bk__seq_lock(lock);
  bool absent = !check_lanes(f, lanes, f->check);
  if (absent) insert_locked(f, li, lanes);
  bk__seq_unlock(lock, held);
  return absent;
}

bk_status bk_fbf_add_hash(bk_fbf *f, bk_hash h) {
  BK_RETURN_IF(!f, BK_EINVAL);
  uint64_t lanes[BK_K_MAX];
  key_lanes(f, h, lanes, true);
  insert_checked(f, h, lanes);
  return BK_OK;
}

bk_status bk_fbf_add(bk_fbf *f, const void *key, size_t len) {
  bk_hash h;
  BK_TRY(hash_key(f, key, len, &h));
  return bk_fbf_add_hash(f, h);
}

bk_status bk_fbf_add_if_absent_hash(bk_fbf *f, bk_hash h, bool *added) {
  BK_RETURN_IF(!f || !added, BK_EINVAL);
  uint64_t lanes[BK_K_MAX];
  key_lanes(f, h, lanes, true);
  *added = add_if_absent_lanes(f, h, lanes);
  return BK_OK;
}

bk_status bk_fbf_add_if_absent(bk_fbf *f, const void *key, size_t len,
                               bool *added) {
  bk_hash h;
  BK_RETURN_IF(!added, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  return bk_fbf_add_if_absent_hash(f, h, added);
}

/* ---- batches --------------------------------------------------------------
 * Key i is processed while the lanes of keys i + 1 .. i + FBF_AHEAD - 1 are
 * on their way: a ring of FBF_AHEAD digests and lane arrays (4 KiB of
 * stack at most). Eight keys of k = 7 are up to 56 lines in flight, more
 * than a core's miss buffers, so a longer ring would only cost stack. Each
 * key's operation is the single-key call's, in order. */
#define FBF_AHEAD 8u

static bk_status check_keys(const bk_fbf *f, const void *const *keys,
                            const size_t *lens, size_t n) {
  BK_RETURN_IF(!f, BK_EINVAL);
  return bk__batch_keys_ok(f->hash_alg, keys, lens, n);
}

/* DIGEST(i): key i's digest; BODY uses i, h (bk_hash) and lanes. */
#define FBF_BATCH(f, n, WRITE, DIGEST, BODY)               \
  do {                                                     \
    bk_hash ring_h_[FBF_AHEAD];                            \
    uint64_t ring_l_[FBF_AHEAD][BK_K_MAX];                 \
    size_t lead_ = (n) < FBF_AHEAD ? (n) : FBF_AHEAD;      \
    for (size_t j_ = 0; j_ < lead_; j_++) {                \
      ring_h_[j_] = DIGEST(j_);                            \
      key_lanes((f), ring_h_[j_], ring_l_[j_], (WRITE));   \
    }                                                      \
    for (size_t i = 0; i < (n); i++) {                     \
      size_t r_ = i % FBF_AHEAD;                           \
      const bk_hash h = ring_h_[r_];                       \
      const uint64_t *lanes = ring_l_[r_];                 \
      (void)h;                                             \
      BODY;                                                \
      if (i + FBF_AHEAD < (n)) {                           \
        ring_h_[r_] = DIGEST(i + FBF_AHEAD);               \
        key_lanes((f), ring_h_[r_], ring_l_[r_], (WRITE)); \
      }                                                    \
    }                                                      \
  } while (0)

#define KEY_DIGEST(j) bk__hash_fast(f->hash_alg, f->seed, keys[j], lens[j])
#define GIVEN_DIGEST(j) hashes[j]

bk_status bk_fbf_contains_many(const bk_fbf *f, const void *const *keys,
                               const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_keys(f, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
  FBF_BATCH(f, n, false, KEY_DIGEST,
            { out[i] = check_lanes(f, lanes, f->check); });
  return BK_OK;
}

bk_status bk_fbf_contains_many_hash(const bk_fbf *f, const bk_hash *hashes,
                                    size_t n, bool *out) {
  BK_RETURN_IF(!f || (n && (!hashes || !out)), BK_EINVAL);
  FBF_BATCH(f, n, false, GIVEN_DIGEST,
            { out[i] = check_lanes(f, lanes, f->check); });
  return BK_OK;
}

bk_status bk_fbf_add_many(bk_fbf *f, const void *const *keys,
                          const size_t *lens, size_t n) {
  BK_TRY(check_keys(f, keys, lens, n));
  FBF_BATCH(f, n, true, KEY_DIGEST, { insert_checked(f, h, lanes); });
  return BK_OK;
}

bk_status bk_fbf_add_if_absent_many(bk_fbf *f, const void *const *keys,
                                    const size_t *lens, size_t n, bool *added) {
  BK_TRY(check_keys(f, keys, lens, n));
  BK_RETURN_IF(n && !added, BK_EINVAL);
  FBF_BATCH(f, n, true, KEY_DIGEST,
            { added[i] = add_if_absent_lanes(f, h, lanes); });
  return BK_OK;
}

/* ---- publishing a state -------------------------------------------------
 * A refresh (fbf_refresh.c) decides the next state; this is how it reaches
 * readers and inserters: the state word, the grace period on the key
 * locks, and the sweep of the dropped slots. */

/* Publish `next` (with the keep masks for `dropped` slots when sweeping),
 * then clear the dropped slots chunk by chunk and publish the end. */
void bk__fbf_publish_and_sweep(bk_fbf *f, uint64_t next, uint64_t dropped) {
  if (dropped) {
    for (unsigned p = 0; p < f->stride; p++) {
      uint64_t keep = ~(uint64_t)0;
      for (unsigned b = 0; b < 64; b++) {
        uint64_t bit = (uint64_t)p * 64 + b;
        unsigned slot = (unsigned)(bit % f->stride);
        if (slot < f->width && ((dropped >> slot) & 1))
          keep &= ~((uint64_t)1 << b);
      }
      f->keep_mask[p] = keep;
    }
  }
  /* seq_cst: pairs with the inserters' key locks (see insert_locked). */
  __atomic_store_n(&f->state, next, __ATOMIC_SEQ_CST);
  /* Grace period: an insert that may have read the previous state holds
   * its key lock; each lock seen held is waited on until that holder
   * releases it, before this refresh sweeps. (Inserts under older states
   * finished before the previous refresh got here.) */
  for (unsigned i = 0; i < BK__FBF_LOCKS; i++)
    bk__seq_wait_release(bk__fbf_lock(f, i));
  /* Release: an inserter's sweep that reads this (acquire) sees those
   * inserts finished and may clear words with plain stores. */
  __atomic_store_n(&f->grace_gen, BK__ST_GEN(next), __ATOMIC_RELEASE);
  if (!dropped) return;
  uint64_t gen = BK__ST_GEN(next);
  for (uint64_t c = 0; c < f->n_chunks; c++) ensure_swept(f, c, gen);
  __atomic_store_n(
      &f->state, BK__ST_MAKE(BK__ST_HEAD(next), BK__ST_COUNT(next), 0, 0, gen),
      __ATOMIC_RELEASE);
}

/* ---- lifecycle ------------------------------------------------------------
 */

/* The memory bk__fbf_alloc lays out for m lanes of `width` filters: the
 * lane words, the sweep chunks' epochs and the key locks with their
 * counts. The one place the FBF's size is computed, so a config's cost
 * (bk__fbf_config_memory) is what an FBF made from it takes. */
typedef struct fbf_geometry {
  unsigned stride;    /* bits from one lane to the next */
  uint64_t n_words;   /* lane words, +1: load_lane reads w + 1 */
  uint64_t n_chunks;  /* sweep chunks of BK__FBF_CHUNK_LANES lanes */
  size_t lock_stride; /* a lock's line, then its counts on whole lines */
  uint64_t bytes;     /* the struct and the three regions, before each region's
                         padding to a cache line (at most 63 bytes) */
} fbf_geometry;

static bk_status geometry_of(uint64_t m, unsigned k, unsigned width,
                             fbf_geometry *g) {
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX || k == 0 || k > BK_K_MAX ||
                   width < 3 || width > BK_FBF_MAX_FILTERS,
               BK_EINVAL);
  g->stride = width > 57 ? 64 : width;
  uint64_t total_bits = m * g->stride; /* <= 2^46: no overflow */
  BK_RETURN_IF(total_bits > ((uint64_t)1 << 43), BK_EINVAL); /* 1 TiB */
  g->n_words = (total_bits + 63) / 64 + 1;
  g->n_chunks = (m + BK__FBF_CHUNK_LANES - 1) / BK__FBF_CHUNK_LANES;
  g->lock_stride = BK_CACHE_LINE + (width * 8u + BK_CACHE_LINE - 1) /
                                       BK_CACHE_LINE * BK_CACHE_LINE;
  g->bytes = sizeof(bk_fbf) + g->n_words * 8 + g->n_chunks * 8 +
             (uint64_t)BK__FBF_LOCKS * g->lock_stride;
  return BK_OK;
}

bk_status bk__fbf_alloc(const bk__alloc *al, uint64_t m, unsigned k,
                        unsigned width, bk_fbf **out) {
  fbf_geometry g;
  BK_TRY(geometry_of(m, k, width, &g));
  bk_fbf *f = bk__calloc(al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  f->alloc = *al;
  f->m = m;
  f->k = k;
  f->width = width;
  f->stride = g.stride;
  f->n_words = g.n_words;
  f->n_chunks = g.n_chunks;
  f->lock_stride = g.lock_stride;
  bk_status s = bk__region_alloc(al, (size_t)f->n_words * 8, &f->region);
  if (s == BK_OK)
    s = bk__region_alloc(al, (size_t)f->n_chunks * 8, &f->chunk_region);
  if (s == BK_OK)
    s = bk__region_alloc(al, BK__FBF_LOCKS * f->lock_stride, &f->locks);
  if (s == BK_OK && pthread_mutex_init(&f->mu, NULL) != 0) s = BK_ENOMEM;
  if (s != BK_OK) {
    bk__region_free(al, &f->locks);
    bk__region_free(al, &f->chunk_region);
    bk__region_free(al, &f->region);
    bk__free(al, f);
    return s;
  }
  f->words = f->region.data;
  f->chunk_epoch = f->chunk_region.data;
  *out = f;
  return BK_OK;
}

static bk_status resolve_config(const bk_fbf_config *cfg, uint64_t *m_out,
                                unsigned *k_out, unsigned *width_out) {
  BK_RETURN_IF(cfg->n_past == 0 || cfg->n_past > BK_FBF_MAX_FILTERS - 2,
               BK_EINVAL);
  BK_RETURN_IF(cfg->refresh_period == 0, BK_EINVAL);
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  if (cfg->target_fpp != 0.0)
    BK_RETURN_IF(!(cfg->target_fpp > 0.0 && cfg->target_fpp < 1.0), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  BK_RETURN_IF(cfg->check != BK_FBF_CHECK_DEFAULT &&
                   cfg->check != BK_FBF_CHECK_OPTIMIZED &&
                   cfg->check != BK_FBF_CHECK_SIMPLE,
               BK_EINVAL);
  uint64_t m;
  unsigned k;
  if (cfg->m_bits) {
    BK_RETURN_IF(cfg->k == 0 || cfg->m_bits > BK_BITS_MAX, BK_EINVAL);
    m = cfg->m_bits;
    k = cfg->k;
  } else {
    BK_RETURN_IF(cfg->capacity == 0 || cfg->capacity > (UINT64_MAX >> 2),
                 BK_EINVAL);
    /* A filter takes inserts for two periods (as future, then present); a
     * fixed k gets the m that meets fpp with it. */
    if (cfg->k) {
      k = cfg->k;
      BK_TRY(bk_params_m_for_k(2 * cfg->capacity, fpp, k, &m));
    } else {
      BK_TRY(bk_params_for_target(2 * cfg->capacity, fpp, &m, &k));
    }
  }
  unsigned n_filters = cfg->n_past + 2;
  unsigned width = cfg->max_filters;
  if (!width) {
    width = n_filters;
    if (cfg->adaptive)
      width = 4 * n_filters > BK_FBF_MAX_FILTERS ? BK_FBF_MAX_FILTERS
                                                 : 4 * n_filters;
  }
  BK_RETURN_IF(width < n_filters || width > BK_FBF_MAX_FILTERS, BK_EINVAL);
  *m_out = m;
  *k_out = k;
  *width_out = width;
  return BK_OK;
}

/* What bk_fbf_create derives from a config, every check included. */
typedef struct fbf_plan {
  uint64_t m, t, min_window, step, min_period, max_period;
  unsigned k, width, n_filters, min_filters, max_filters;
} fbf_plan;

static bk_status plan_of(const bk_fbf_config *cfg, fbf_plan *p) {
  BK_RETURN_IF(!cfg, BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  BK_TRY(resolve_config(cfg, &p->m, &p->k, &p->width));
  p->n_filters = cfg->n_past + 2;
  p->t = cfg->refresh_period;
  /* An element is kept at least (N + 1) t: that must cover min_window. */
  uint64_t cover;
  BK_RETURN_IF(
      __builtin_mul_overflow((uint64_t)(p->n_filters - 1), p->t, &cover),
      BK_EINVAL);
  p->min_window = cfg->min_window ? cfg->min_window : cover;
  BK_RETURN_IF(p->min_window > cover, BK_EINVAL);
  p->step = cfg->period_step ? cfg->period_step : DEFAULT_PERIOD_STEP;
  p->min_period =
      cfg->min_period ? cfg->min_period : (p->step < p->t ? p->step : p->t);
  p->max_period = cfg->max_period;
  /* By default resizing may shorten t under load and relax back to the
   * configured t, never beyond it (an idle filter stays as configured). */
  if (!p->max_period) p->max_period = p->t;
  p->min_filters = cfg->min_filters ? cfg->min_filters : p->n_filters;
  p->max_filters = p->width;
  BK_RETURN_IF(p->min_period > p->t || p->t > p->max_period, BK_EINVAL);
  BK_RETURN_IF(p->min_filters < 3 || p->min_filters > p->n_filters, BK_EINVAL);
  BK_RETURN_IF(cfg->start_time > UINT64_MAX / 2, BK_EINVAL);
  return BK_OK;
}

bk_status bk__fbf_config_memory(const bk_fbf_config *cfg, uint64_t *bytes) {
  fbf_plan p;
  BK_TRY(plan_of(cfg, &p));
  fbf_geometry g;
  BK_TRY(geometry_of(p.m, p.k, p.width, &g));
  *bytes = g.bytes;
  return BK_OK;
}

bk_status bk__fbf_config_check(const bk_fbf_config *cfg) {
  uint64_t bytes;
  return bk__fbf_config_memory(cfg, &bytes);
}

bool bk__fbf_made_from(const bk_fbf *f, const bk_fbf_config *cfg) {
  fbf_plan p;
  return plan_of(cfg, &p) == BK_OK && f->m == p.m && f->k == p.k &&
         f->width == p.width && f->min_window == p.min_window &&
         f->seed == cfg->seed && !f->adaptive && !cfg->adaptive;
}

bk_status bk_fbf_create(bk_fbf **out, const bk_fbf_config *cfg) {
  BK_RETURN_IF(!out, BK_EINVAL);
  fbf_plan pl;
  BK_TRY(plan_of(cfg, &pl));
  uint64_t m = pl.m, t = pl.t, min_window = pl.min_window, step = pl.step;
  uint64_t min_period = pl.min_period, max_period = pl.max_period;
  unsigned k = pl.k, width = pl.width, n_filters = pl.n_filters;
  unsigned min_filters = pl.min_filters, max_filters = pl.max_filters;

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_fbf *f;
  BK_TRY(bk__fbf_alloc(&al, m, k, width, &f));
  f->hash_alg = cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  f->seed = cfg->seed;
  f->check =
      cfg->check == BK_FBF_CHECK_DEFAULT ? BK_FBF_CHECK_OPTIMIZED : cfg->check;
  f->state = BK__ST_MAKE(0, n_filters, 0, 0, 0);
  f->now = cfg->start_time;
  f->refresh_period = t;
  f->next_refresh = bk__sat_add(cfg->start_time, t);
  f->min_window = min_window;
  f->target_count = n_filters;
  f->adaptive = cfg->adaptive;
  f->target_fpp = cfg->target_fpp != 0.0
                      ? cfg->target_fpp
                      : (cfg->fpp != 0.0 ? cfg->fpp : DEFAULT_FPP);
  f->adapt_interval =
      cfg->adapt_interval ? cfg->adapt_interval : DEFAULT_ADAPT_INTERVAL;
  f->next_adapt = bk__sat_add(cfg->start_time, f->adapt_interval);
  f->period_step = step;
  f->min_period = min_period;
  f->max_period = max_period;
  f->min_filters = min_filters;
  f->max_filters = max_filters;
  *out = f;
  return BK_OK;
}

void bk_fbf_destroy(bk_fbf *f) {
  if (!f) return;
  bk__alloc al = f->alloc;
  pthread_mutex_destroy(&f->mu);
  bk__region_free(&al, &f->locks);
  bk__region_free(&al, &f->chunk_region);
  bk__region_free(&al, &f->region);
  bk__free(&al, f);
}

/* ---- introspection --------------------------------------------------------
 */

bk_status bk_fbf_info_get(const bk_fbf *f, bk_fbf_info *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  bk_fbf *mf = (bk_fbf *)f; /* the mutex only; the FBF is not modified */
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&mf->mu);
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
  unsigned head = BK__ST_HEAD(st), count = BK__ST_COUNT(st);
  out->m_bits = f->m;
  out->k = f->k;
  out->n_filters = count;
  out->n_past = count - 2;
  out->target_filters = f->target_count;
  out->max_filters = f->width;
  out->refresh_period = f->refresh_period;
  out->min_window = f->min_window;
  out->now = f->now;
  out->next_refresh = f->next_refresh;
  out->window_min = bk__sat_mul((uint64_t)(count - 1), f->refresh_period);
  out->window_max = bk__sat_mul((uint64_t)count, f->refresh_period);
  out->refreshes = f->refreshes;
  out->deferred = f->deferred;
  /* Set bits per slot: popcount of each word under the slot's bit pattern,
   * which repeats every `stride` words (64 lanes). */
  static const unsigned max_stride = 64;
  uint64_t masks[BK_FBF_MAX_FILTERS * 64];
  uint64_t set[BK_FBF_MAX_FILTERS] = {0};
  memset(masks, 0, sizeof masks);
  for (unsigned p = 0; p < f->stride && p < max_stride; p++)
    for (unsigned b = 0; b < 64; b++) {
      unsigned slot = (unsigned)(((uint64_t)p * 64 + b) % f->stride);
      if (slot < f->width) masks[slot * f->stride + p] |= (uint64_t)1 << b;
    }
  for (uint64_t w = 0, p = 0; w + 1 < f->n_words; w++) {
    uint64_t v = __atomic_load_n(&f->words[w], __ATOMIC_RELAXED);
    if (v)
      for (unsigned slot = 0; slot < f->width; slot++)
        set[slot] +=
            (uint64_t)__builtin_popcountll(v & masks[slot * f->stride + p]);
    if (++p == f->stride) p = 0;
  }
  for (unsigned p = 0; p < count; p++) {
    unsigned slot = bk__fbf_slot_at(f, head, p);
    out->inserted[p] = bk__fbf_count(f, slot);
    out->set_bits[p] = set[slot];
  }
  out->memory =
      sizeof *f + f->region.size + f->chunk_region.size + f->locks.size;
  out->check = f->check;
  out->adaptive = f->adaptive;
  pthread_mutex_unlock(&mf->mu);
  return BK_OK;
}

void bk__fbf_prefetch(const bk_fbf *f, bk_hash h) {
  uint64_t lanes[BK_K_MAX];
  key_lanes(f, h, lanes, false);
}

void bk__fbf_summary(const bk_fbf *f, unsigned *n_filters,
                     uint64_t *refresh_period, uint64_t *window_min,
                     size_t *memory) {
  bk_fbf *mf = (bk_fbf *)f; /* the mutex only */
  pthread_mutex_lock(&mf->mu);
  unsigned count = BK__ST_COUNT(__atomic_load_n(&f->state, __ATOMIC_ACQUIRE));
  *n_filters = count;
  *refresh_period = f->refresh_period;
  *window_min = bk__sat_mul((uint64_t)(count - 1), f->refresh_period);
  *memory = sizeof *f + f->region.size + f->chunk_region.size + f->locks.size;
  pthread_mutex_unlock(&mf->mu);
}
