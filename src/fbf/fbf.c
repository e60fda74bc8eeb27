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
 * ends (publish_and_sweep): they write other slots' bits (the previous
 * future and present, never a dropped slot) into these words, so until
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
  uint64_t a = h.lo, s = bk__mix64(h.hi);
  for (unsigned i = 0; i < f->k; i++) {
    lanes[i] = bk_reduce(a, f->m) * f->stride;
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
    a += s;
    s += i + 1;
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

static bool check_lanes(const bk_fbf *f, const uint64_t *lanes,
                        bk_fbf_check check) {
  for (;;) {
    uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
    rule r = rule_of(f, st, check);
    uint64_t acc = probe_lanes(f, lanes, st, &r);
    if (__atomic_load_n(&f->state, __ATOMIC_ACQUIRE) != st) continue;
    return acc != 0;
  }
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

/* Key locks are sequence locks: even while free, odd while held, +1 at
 * each acquire and release. A refresh that sees a lock held waits only
 * until its value changes (that holder's release), never for the lock to
 * be free, so a stream of inserts cannot starve it. The acquire is one
 * locked instruction (seq_cst), the release a plain store. */
static inline uint32_t key_lock(uint32_t *l) {
  for (unsigned spins = 0;;) {
    uint32_t v = __atomic_load_n(l, __ATOMIC_RELAXED);
    if (!(v & 1u) &&
        __atomic_compare_exchange_n(l, &v, v + 1u, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return v + 1u;
    bk__backoff(&spins);
  }
}

static inline void key_unlock(uint32_t *l, uint32_t held) {
  __atomic_store_n(l, held + 1u, __ATOMIC_RELEASE);
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
  BK_RETURN_IF(!f || (!key && len), BK_EINVAL);
  BK_RETURN_IF(f->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = bk__hash_fast(f->hash_alg, f->seed, key, len);
  return BK_OK;
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

/* Algorithm 1: only an element the check does not find is inserted. */
static inline void insert_checked(bk_fbf *f, bk_hash h, const uint64_t *lanes) {
  if (!check_lanes(f, lanes, f->check)) {
    unsigned li = bk__key_lock_index(h);
    uint32_t *lock = bk__fbf_lock(f, li);
    uint32_t held = key_lock(lock);
    insert_locked(f, li, lanes);
    key_unlock(lock, held);
  }
}

/* "Absent, now inserted", decided once under the key's lock; the lanes are
 * computed (and prefetched) before it. */
static inline bool add_if_absent_lanes(bk_fbf *f, bk_hash h,
                                       const uint64_t *lanes) {
  unsigned li = bk__key_lock_index(h);
  uint32_t *lock = bk__fbf_lock(f, li);
  uint32_t held = key_lock(lock);
  bool absent = !check_lanes(f, lanes, f->check);
  if (absent) insert_locked(f, li, lanes);
  key_unlock(lock, held);
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

/* ---- sizing by the whole filter's rate (fbf.h) --------------------------- */

static bool steady_args_ok(uint64_t capacity, unsigned n_past, double rate) {
  return capacity && capacity <= (UINT64_MAX >> 2) && n_past >= 1 &&
         n_past <= BK_FBF_MAX_FILTERS - 2 && rate > 0.0 && rate < 1.0;
}

/* The model of fbf.h, as -expm1 of a sum of log1p terms (exact also for
 * tiny rates); 1 when no filter of rate q can be made. */
static double steady_rate(uint64_t c, unsigned n_past, double q) {
  uint64_t m;
  unsigned k;
  if (bk_params_for_target(2 * c, q, &m, &k) != BK_OK) return 1.0;
  double lu = (double)k * log1p(-1.0 / (double)m), kd = (double)k;
  double cd = (double)c;
  double f1 = pow(-expm1(lu * cd), kd), f2 = pow(-expm1(lu * 2.0 * cd), kd);
  double both = 1.0 - 2.0 * exp(lu * 2.0 * cd) + exp(lu * 3.0 * cd);
  double pair = pow(both > 0.0 ? both : 0.0, kd);
  return -expm1(log1p(-f1) + (double)(n_past - 1) * log1p(-pair) + log1p(-f2));
}

bk_status bk_fbf_steady_fpp(uint64_t capacity, unsigned n_past,
                            double filter_fpp, double *out) {
  BK_RETURN_IF(!out || !steady_args_ok(capacity, n_past, filter_fpp),
               BK_EINVAL);
  uint64_t m;
  unsigned k;
  BK_TRY(bk_params_for_target(2 * capacity, filter_fpp, &m, &k));
  *out = steady_rate(capacity, n_past, filter_fpp);
  return BK_OK;
}

/* Bisection on a log scale: the steady rate is at most N + 1 times the
 * filter rate (a union bound over its N + 1 events), so fpp / (2 (N + 2))
 * qualifies whenever a filter of that rate can be made. */
bk_status bk_fbf_filter_fpp_for(uint64_t capacity, unsigned n_past, double fpp,
                                double *out) {
  BK_RETURN_IF(!out || !steady_args_ok(capacity, n_past, fpp), BK_EINVAL);
  double lo = fpp / (2.0 * (n_past + 2)), hi = fpp;
  if (steady_rate(capacity, n_past, hi) <= fpp) {
    *out = hi;
    return BK_OK;
  }
  BK_RETURN_IF(steady_rate(capacity, n_past, lo) > fpp, BK_EINVAL);
  for (int i = 0; i < 60 && hi / lo > 1.001; i++) {
    double mid = sqrt(lo * hi);
    if (steady_rate(capacity, n_past, mid) <= fpp)
      lo = mid;
    else
      hi = mid;
  }
  *out = lo;
  return BK_OK;
}

/* ---- false positive estimate (chapter 4) -------------------------------- */

static double filter_fpp(const bk_fbf *f, uint64_t inserted) {
  double p = 0.0;
  (void)bk_params_fpp(f->m, f->k, inserted, &p); /* m, k valid by creation */
  return p;
}

/* ln of u = (1 - 1/m)^k, the chance one insert leaves a given bit clear. */
static double log_u(const bk_fbf *f) {
  return (double)f->k * log1p(-1.0 / (double)f->m);
}

/*
 * False positive probability of the pair (newer X, older Y) when they share
 * `s` inserts. Eq. 4.3 multiplies p(X) p(Y) as if the filters were
 * independent, but every insert made while X was the future went into Y
 * too, so after a refresh the pair (present, newest past) holds the same
 * elements and its false positive rate is about p(X), not p(X)^2 (measured:
 * Eq. 4.3 is 5-180x low for N > 1, which made Algorithm 3 shrink under
 * load). A bit is set in both when it is hit by a shared insert or by
 * inserts of each alone:
 *   P = 1 - u^a - u^b + u^{a+b-s},   pair fpp = P^k,
 * with a, b the filters' counts and u = (1 - 1/m)^k. s = 0 gives Eq. 4.3.
 */
static double pair_fpp(const bk_fbf *f, uint64_t a, uint64_t b, uint64_t s) {
  if (s > a) s = a;
  if (s > b) s = b;
  double lu = log_u(f);
  /* 1 - u^a - u^b + u^{a+b-s} with u^x = 1 + expm1(x ln u), which keeps
   * precision when the filters are nearly empty. */
  /* In doubles: a + b may not fit in 64 bits for a restored, hostile
   * state. */
  double both = -expm1(lu * (double)a) - expm1(lu * (double)b) +
                expm1(lu * ((double)a + (double)b - (double)s));
  if (!(both > 0.0)) both = 0.0; /* also NaN */
  if (both > 1.0) both = 1.0;
  return pow(both, (double)f->k);
}

/* Estimate over the logical filters of state `st`. `shared_aware` selects
 * the pair term above; false gives the thesis' Eq. 4.3 exactly. The simple
 * check is 1 - prod(1 - p_i) either way. */
static double estimate(const bk_fbf *f, uint64_t st, bk_fbf_check check,
                       bool shared_aware) {
  unsigned count = BK__ST_COUNT(st), head = BK__ST_HEAD(st);
  double p[BK_FBF_MAX_FILTERS] = {0};
  uint64_t n[BK_FBF_MAX_FILTERS] = {0}, sh[BK_FBF_MAX_FILTERS] = {0};
  for (unsigned i = 0; i < count; i++) {
    unsigned slot = (head + i) % f->width;
    n[i] = bk__fbf_count(f, slot);
    sh[i] = __atomic_load_n(&f->shared[slot], __ATOMIC_RELAXED);
    p[i] = filter_fpp(f, n[i]);
  }
  /* ln P(no false positive) as a sum of log1p terms, and the rate as
   * -expm1 of it: 1 - prod(1 - p_i) in doubles is 0 for any rate below
   * 1e-16 (a lightly loaded filter reported fpp 0). */
  double none = 0.0;
  if (check == BK_FBF_CHECK_SIMPLE) {
    for (unsigned i = 0; i < count; i++) none += log1p(-p[i]);
    return none < 0.0 ? -expm1(none) : 0.0; /* not -0.0 */
  }
  /* phi: future alone; each consecutive pair from (present, past newest) to
   * (past_{N-1}, past oldest); past oldest alone (Eq. 4.3). The last pair
   * contains the oldest filter, so its event is inside "oldest alone":
   * Eq. 4.3 counts it twice (1.5x too high at N = 1); the shared-aware
   * estimate leaves it out. */
  none += log1p(-p[0]);
  for (unsigned i = 1; i + 1 < count; i++) {
    if (shared_aware && i + 2 == count) break;
    double pair =
        shared_aware ? pair_fpp(f, n[i], n[i + 1], sh[i]) : p[i] * p[i + 1];
    none += log1p(-pair);
  }
  none += log1p(-p[count - 1]);
  return none < 0.0 ? -expm1(none) : 0.0; /* not -0.0 */
}

static bk_status estimated(const bk_fbf *f, bk_fbf_check check,
                           bool shared_aware, double *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  if (check == BK_FBF_CHECK_DEFAULT) check = f->check;
  BK_RETURN_IF(check != BK_FBF_CHECK_OPTIMIZED && check != BK_FBF_CHECK_SIMPLE,
               BK_EINVAL);
  *out = estimate(f, __atomic_load_n(&f->state, __ATOMIC_ACQUIRE), check,
                  shared_aware);
  return BK_OK;
}

bk_status bk_fbf_estimated_fpp(const bk_fbf *f, bk_fbf_check check,
                               double *out) {
  return estimated(f, check, true, out);
}

bk_status bk_fbf_estimated_fpp_eq43(const bk_fbf *f, bk_fbf_check check,
                                    double *out) {
  return estimated(f, check, false, out);
}

/* ---- refresh (Sec. 3.3) -------------------------------------------------- */

static inline unsigned slot_at(const bk_fbf *f, unsigned head, unsigned p) {
  return (head + p) % f->width;
}

/* May the filter in `slot` be dropped at time `now` without forgetting an
 * element younger than min_window? Its elements' newer copies were written
 * while it was the future, i.e. before it became the present. */
static bool droppable(const bk_fbf *f, unsigned slot, uint64_t now) {
  if (!bk__fbf_count(f, slot)) return true;
  return now >= f->became_present[slot] &&
         now - f->became_present[slot] >= f->min_window;
}

/* Publish `next` (with the keep masks for `dropped` slots when sweeping),
 * then clear the dropped slots chunk by chunk and publish the end. */
static void publish_and_sweep(bk_fbf *f, uint64_t next, uint64_t dropped) {
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
  for (unsigned i = 0; i < BK__FBF_LOCKS; i++) {
    uint32_t *l = bk__fbf_lock(f, i);
    uint32_t v = __atomic_load_n(l, __ATOMIC_SEQ_CST);
    if (!(v & 1u)) continue;
    for (unsigned spins = 0; __atomic_load_n(l, __ATOMIC_ACQUIRE) == v;)
      bk__backoff(&spins);
  }
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

/* One refresh at time `now`: a new empty future, every filter one place
 * older, and filters dropped from the old end while more are in use than
 * the target and the window allows. Returns false when it had to be
 * deferred (every slot in use and the oldest still too young). */
static bool refresh(bk_fbf *f, uint64_t now) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned head = BK__ST_HEAD(st), count = BK__ST_COUNT(st);
  uint64_t gen = BK__ST_GEN(st) + 1;
  uint64_t dropped = 0;
  bool future_swept = false;
  if (count == f->width) {
    unsigned oldest = slot_at(f, head, count - 1);
    if (!droppable(f, oldest, now)) return false;
    /* The oldest filter is dropped and its slot becomes the new future. */
    dropped |= (uint64_t)1 << oldest;
    future_swept = bk__fbf_count(f, oldest) != 0;
    count--;
  }
  unsigned new_head = head == 0 ? f->width - 1 : head - 1;
  count++; /* the new future */
  unsigned new_present = slot_at(f, new_head, 1);
  f->became_present[new_present] = now;
  __atomic_store_n(&f->shared[new_present], bk__fbf_count(f, new_present),
                   __ATOMIC_RELAXED);
  /* Under pressure (an adaptive FBF at or near its target), filters past
   * what min_window needs are let go as soon as droppable() allows, goal or
   * not: they protect no retry (clients stopped retrying those ids) and
   * their pairs only add false positives. Without this, a grow that keeps
   * an overloaded old filter holds the fpp above target until it slides
   * out (measured: ~100 s over target in the Fig. 6.6 experiment). */
  bool pressure =
      f->adaptive && estimate(f, st, f->check, true) >= 0.9 * f->target_fpp;
  while ((count > f->target_count || pressure) && count > 3) {
    unsigned oldest = slot_at(f, new_head, count - 1);
    if (!droppable(f, oldest, now)) break;
    dropped |= (uint64_t)1 << oldest;
    count--;
  }
  /* Slots that never held anything need no sweep. Dropped slots' counts
   * restart now, before the new state lets inserts count into them. */
  uint64_t to_sweep = 0;
  for (unsigned s = 0; s < f->width; s++) {
    if (!((dropped >> s) & 1)) continue;
    /* A count of 0 means no bits: inserts count before they set bits, and
     * a loader accepts no slot with bits and no count. */
    if (bk__fbf_count(f, s)) to_sweep |= (uint64_t)1 << s;
    bk__fbf_count_set(f, s, 0);
    __atomic_store_n(&f->shared[s], 0, __ATOMIC_RELAXED);
  }
  publish_and_sweep(f,
                    BK__ST_MAKE(new_head, count, to_sweep != 0,
                                future_swept && to_sweep != 0, gen),
                    to_sweep);
  f->refreshes++;
  return true;
}

/* a + n b, the time n periods (or intervals) b after a, saturating. */
static inline uint64_t sat_add_mul(uint64_t a, uint64_t n, uint64_t b) {
  return bk__sat_add(a, bk__sat_mul(n, b));
}

/* ---- adaptive resizing (Sec. 3.5, Algorithm 3) -------------------------- */

static void record(bk_fbf *f, uint64_t now, bk_fbf_action action, double fpp) {
  bk_fbf_resize_event *e = &f->trace[f->trace_len % BK__FBF_TRACE_CAP];
  e->time = now;
  e->action = action;
  e->estimated_fpp = fpp;
  e->n_filters = f->target_count;
  e->refresh_period = f->refresh_period;
  f->trace_len++;
}

/* Apply a new goal of n filters and period t (already within bounds).
 * Growing takes effect as refreshes stop dropping old filters; shrinking,
 * as they drop more than they add, each only when droppable(). */
static void set_goal(bk_fbf *f, unsigned n_filters, uint64_t period,
                     uint64_t at) {
  f->target_count = n_filters;
  if (period != f->refresh_period) {
    /* The next refresh moves to one new period after the last one, and no
     * earlier than the decision (time `at`). */
    uint64_t last = f->next_refresh > f->refresh_period
                        ? f->next_refresh - f->refresh_period
                        : 0;
    f->refresh_period = period;
    uint64_t next = bk__sat_add(last, period);
    f->next_refresh = next > at ? next : at;
  }
}

/* The shortest period with which `n` filters still keep min_window:
 * (n - 1) t >= min_window. Shorter periods would make refreshes wait for
 * the window (deferred), piling several periods into the future filter. */
static uint64_t window_floor(const bk_fbf *f, unsigned n) {
  uint64_t d = n > 1 ? n - 1 : 1;
  return (f->min_window + d - 1) / d;
}

/* The shortest t a goal of n filters may have: min_period, and where the
 * n filters still cover min_window. */
static uint64_t period_floor(const bk_fbf *f, unsigned n) {
  uint64_t floor = window_floor(f, n);
  return floor > f->min_period ? floor : f->min_period;
}

/* Algorithm 3's decision for an estimate `fpp` at goal (n, t): the new
 * goal in *n_out, *t_out and the action, 0 when nothing changes. */
static int adapt_decide(const bk_fbf *f, double fpp, unsigned n, uint64_t t,
                        unsigned *n_out, uint64_t *t_out) {
  *n_out = n;
  *t_out = t;
  if (fpp >= 0.9 * f->target_fpp) {
    /* Multiplicative increase of filters, additive decrease of period,
     * the period floored where the grown filters still cover min_window. */
    unsigned grown = 2 * n > f->max_filters ? f->max_filters : 2 * n;
    uint64_t shorter = t > f->period_step ? t - f->period_step : 0;
    if (shorter < period_floor(f, grown)) shorter = period_floor(f, grown);
    if (shorter > t) shorter = t;
    *n_out = grown;
    *t_out = shorter;
    return grown != n || shorter != t ? BK_FBF_GROW : 0;
  }
  if (fpp <= 0.1 * f->target_fpp) {
    /* Additive decrease of filters, additive increase of period; one filter
     * fewer only if the rest still cover min_window at the new period. */
    uint64_t longer =
        f->period_step > f->max_period - t ? f->max_period : t + f->period_step;
    unsigned fewer = n > f->min_filters ? n - 1 : n;
    if (fewer != n && longer < window_floor(f, fewer)) fewer = n;
    *n_out = fewer;
    *t_out = longer;
    return fewer != n || longer != t ? BK_FBF_SHRINK : 0;
  }
  return 0;
}

static void adapt_tick(bk_fbf *f, uint64_t now) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  double fpp = estimate(f, st, f->check, true);
  unsigned n;
  uint64_t t;
  int action = adapt_decide(f, fpp, f->target_count, f->refresh_period, &n, &t);
  if (action) {
    set_goal(f, n, t, now);
    record(f, now, (bk_fbf_action)action, fpp);
  }
}

/* ceil(a / b), b > 0. */
static inline uint64_t div_ceil(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

/*
 * Ticks in a row whose only effect is to move t one step (the filter count
 * is at its bound or held by the window rule): how many there are before t
 * reaches its bound or a tick would change the count too. The first tick
 * from (n, t) is such a move; the estimate is the same for all of them.
 */
static uint64_t period_run(const bk_fbf *f, int action, unsigned n,
                           uint64_t t) {
  uint64_t step = f->period_step;
  if (action == BK_FBF_GROW) {
    /* n is at max_filters (or doubling changes nothing): t falls to its
     * floor and stays. */
    uint64_t floor = period_floor(f, n);
    return t > floor ? div_ceil(t - floor, step) : 1;
  }
  uint64_t run = t < f->max_period ? div_ceil(f->max_period - t, step) : 1;
  if (n > f->min_filters) {
    /* One filter fewer becomes possible at the first tick whose new period
     * t + i step reaches the window floor of n - 1. */
    uint64_t need = window_floor(f, n - 1);
    uint64_t until = need > t ? div_ceil(need - t, step) - 1 : 0;
    if (until < run) run = until;
  }
  return run ? run : 1;
}

/*
 * Apply the adaptation ticks due at `first`, first + interval, ... up to
 * `limit`, and when `stop_at_refresh`, only those that come before the next
 * refresh (a tick at the refresh's time comes first): until then the
 * filters' contents, and so the estimate, do not change. Equal decisions in
 * a row are applied as one run (a run moves t by many steps at once and is
 * recorded once, at its last tick), and a decision that changes nothing
 * ends the work: the remaining ticks would repeat it. A run keeps in mind
 * that each of its ticks moves the next refresh to the last refresh plus
 * the new t (set_goal): with t growing a step a tick and ticks no further
 * apart than a step, the refresh never comes before the run ends.
 * Cost: O(max_filters) runs whatever the number of ticks. Returns the time
 * of the first tick not applied (saturating).
 */
static uint64_t adapt_ticks(bk_fbf *f, uint64_t first, uint64_t limit,
                            bool stop_at_refresh) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  double fpp = estimate(f, st, f->check, true);
  uint64_t at = first, interval = f->adapt_interval, step = f->period_step;
  bool fixed_point = false;
  while (at <= limit && (!stop_at_refresh || at <= f->next_refresh)) {
    unsigned n = f->target_count, n1;
    uint64_t t = f->refresh_period, t1;
    int action = adapt_decide(f, fpp, n, t, &n1, &t1);
    if (!action) {
      fixed_point = true;
      break;
    }
    uint64_t run = 1;
    if (n1 == n) {
      run = period_run(f, action, n, t);
      uint64_t in_limit = (limit - at) / interval + 1;
      if (run > in_limit) run = in_limit;
      if (stop_at_refresh) {
        /* Tick i of the run (i >= 1, at + (i - 1) interval) comes before
         * the refresh, then at next_refresh +- (i - 1) step. */
        uint64_t room = f->next_refresh - at, cap = UINT64_MAX;
        if (action == BK_FBF_GROW)
          cap = room / bk__sat_add(interval, step) + 1;
        else if (interval > step)
          cap = room / (interval - step) + 1;
        if (run > cap) run = cap;
      }
      uint64_t moved = bk__sat_mul(run, step);
      if (action == BK_FBF_GROW) {
        uint64_t floor = period_floor(f, n);
        t1 = t - floor > moved ? t - moved : floor;
      } else {
        t1 = f->max_period - t > moved ? t + moved : f->max_period;
      }
    }
    uint64_t last = sat_add_mul(at, run - 1, interval);
    set_goal(f, n1, t1, last);
    record(f, last, (bk_fbf_action)action, fpp);
    at = bk__sat_add(last, interval);
    if (at == UINT64_MAX) return at;
  }
  if (fixed_point) {
    /* The remaining ticks up to the bound repeat a decision that changes
     * nothing (and moves no refresh). */
    uint64_t bound = limit;
    if (stop_at_refresh && f->next_refresh < bound) bound = f->next_refresh;
    if (at <= bound)
      at = sat_add_mul(at, (bound - at) / interval + 1, interval);
  }
  return at;
}

/* True when every filter is empty: nothing to remember or forget, the
 * estimate is 0, and a refresh only rotates empty slots. */
static bool all_empty(const bk_fbf *f) {
  for (unsigned s = 0; s < f->width; s++)
    if (bk__fbf_count(f, s)) return false;
  return true;
}

/* Until when (inclusive, at most `now`) refreshes can change nothing the
 * estimate depends on: every filter empty, or every slot in use and the
 * oldest too young to drop (each refresh is deferred). 0: no such span. */
static uint64_t idle_until(const bk_fbf *f, uint64_t now) {
  if (all_empty(f)) return now;
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned count = BK__ST_COUNT(st);
  if (count != f->width) return 0;
  unsigned oldest = slot_at(f, BK__ST_HEAD(st), count - 1);
  uint64_t droppable_at = bk__sat_add(f->became_present[oldest], f->min_window);
  if (droppable_at <= f->next_refresh) return 0;
  return droppable_at - 1 < now ? droppable_at - 1 : now;
}

/* ---- advance --------------------------------------------------------------
 *
 * Events (refreshes every t, adaptation ticks every interval) are replayed
 * in time order, but no call does work that grows with the jump, with
 * interval / t, or with any number in the state: runs of ticks that see
 * the same estimate are applied at once (adapt_ticks), refreshes of empty
 * filters are skipped W at a time (head and contents are then as they
 * would be), and deferred refreshes are skipped up to the time the oldest
 * filter may go. What remains is O(W) real refreshes, each followed by
 * O(max_filters) runs of ticks.
 */
static bk_status advance_locked(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(now < f->now, BK_EINVAL);
  f->now = now;
  for (;;) {
    /* UINT64_MAX is the schedule's "never" (a saturated sum). */
    bool tick_due =
        f->adaptive && f->next_adapt <= now && f->next_adapt != UINT64_MAX;
    bool refresh_due = f->next_refresh <= now && f->next_refresh != UINT64_MAX;
    if (!tick_due && !refresh_due) break;
    if (tick_due && (!refresh_due || f->next_adapt <= f->next_refresh)) {
      /* Ticks before the next refresh see one estimate; so do all ticks
       * while refreshes are idle (every filter empty, or every refresh
       * deferred until the oldest filter may go). */
      uint64_t idle = idle_until(f, now);
      bool stop_at_refresh = idle < f->next_adapt;
      f->next_adapt = adapt_ticks(
          f, f->next_adapt, stop_at_refresh ? now : idle, stop_at_refresh);
      if (f->next_adapt == UINT64_MAX && f->next_refresh > now) break;
      continue;
    }
    uint64_t at = f->next_refresh;
    bool done = refresh(f, at);
    if (!done) f->deferred++;
    f->next_refresh = bk__sat_add(at, f->refresh_period);
    /* No refresh is ever due again ("never"), but ticks due by `now` may
     * be: the loop applies them (with next_refresh at never, in one run). */
    if (f->next_refresh > now || f->next_refresh == UINT64_MAX) continue;
    /* Refreshes before the next tick that change nothing are skipped. */
    uint64_t limit = now;
    if (f->adaptive && f->next_adapt - 1 < limit) limit = f->next_adapt - 1;
    if (limit < f->next_refresh) continue;
    uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
    uint64_t skip = (limit - f->next_refresh) / f->refresh_period;
    if (!done) {
      /* Deferred: so is every refresh before the oldest may go. */
      uint64_t idle = idle_until(f, limit);
      if (idle < f->next_refresh) continue;
      skip = (idle - f->next_refresh) / f->refresh_period + 1;
      f->next_refresh = sat_add_mul(f->next_refresh, skip, f->refresh_period);
      f->deferred += skip;
    } else if (BK__ST_COUNT(st) == f->target_count && all_empty(f) &&
               skip > f->width) {
      /* A long idle gap: refreshes of empty filters change nothing but
       * the clock; W of them bring head back where it was. */
      skip -= skip % f->width;
      f->next_refresh += skip * f->refresh_period;
      f->refreshes += skip;
    }
  }
  return BK_OK;
}

bk_status bk_fbf_advance(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  bk_status s = advance_locked(f, now);
  pthread_mutex_unlock(&f->mu);
  return s;
}

bk_status bk_fbf_adapt(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  bk_status s = advance_locked(f, now);
  if (s == BK_OK) adapt_tick(f, now);
  pthread_mutex_unlock(&f->mu);
  return s;
}

bk_status bk_fbf_resize(bk_fbf *f, unsigned n_filters,
                        uint64_t refresh_period) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  uint64_t t = refresh_period ? refresh_period : f->refresh_period;
  bk_status s = BK_OK;
  if (n_filters < f->min_filters || n_filters > f->max_filters ||
      t < f->min_period || t > f->max_period ||
      /* the goal must be able to keep min_window: (n - 1) t >= min_window */
      bk__fbf_window_short(n_filters, t, f->min_window)) {
    s = BK_EINVAL;
  } else {
    set_goal(f, n_filters, t, f->now);
    double fpp = estimate(f, __atomic_load_n(&f->state, __ATOMIC_RELAXED),
                          f->check, true);
    record(f, f->now, BK_FBF_MANUAL, fpp);
  }
  pthread_mutex_unlock(&f->mu);
  return s;
}

/* ---- lifecycle ------------------------------------------------------------
 */

bk_status bk__fbf_alloc(const bk__alloc *al, uint64_t m, unsigned k,
                        unsigned width, bk_fbf **out) {
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX || k == 0 || k > BK_K_MAX ||
                   width < 3 || width > BK_FBF_MAX_FILTERS,
               BK_EINVAL);
  unsigned stride = width > 57 ? 64 : width;
  uint64_t total_bits = m * stride; /* <= 2^46: no overflow */
  BK_RETURN_IF(total_bits > ((uint64_t)1 << 43), BK_EINVAL); /* 1 TiB */
  bk_fbf *f = bk__calloc(al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  f->alloc = *al;
  f->m = m;
  f->k = k;
  f->width = width;
  f->stride = stride;
  f->n_words = (total_bits + 63) / 64 + 1; /* +1: load_lane reads w + 1 */
  f->n_chunks = (m + BK__FBF_CHUNK_LANES - 1) / BK__FBF_CHUNK_LANES;
  bk_status s = bk__region_alloc(al, (size_t)f->n_words * 8, &f->region);
  if (s == BK_OK)
    s = bk__region_alloc(al, (size_t)f->n_chunks * 8, &f->chunk_region);
  /* a lock's line, then its counts on whole lines */
  f->lock_stride = BK_CACHE_LINE + (width * 8u + BK_CACHE_LINE - 1) /
                                       BK_CACHE_LINE * BK_CACHE_LINE;
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

bk_status bk_fbf_create(bk_fbf **out, const bk_fbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  uint64_t m;
  unsigned k, width;
  BK_TRY(resolve_config(cfg, &m, &k, &width));
  unsigned n_filters = cfg->n_past + 2;
  uint64_t t = cfg->refresh_period;
  /* An element is kept at least (N + 1) t: that must cover min_window. */
  uint64_t cover;
  BK_RETURN_IF(__builtin_mul_overflow((uint64_t)(n_filters - 1), t, &cover),
               BK_EINVAL);
  uint64_t min_window = cfg->min_window ? cfg->min_window : cover;
  BK_RETURN_IF(min_window > cover, BK_EINVAL);
  uint64_t step = cfg->period_step ? cfg->period_step : DEFAULT_PERIOD_STEP;
  uint64_t min_period =
      cfg->min_period ? cfg->min_period : (step < t ? step : t);
  uint64_t max_period = cfg->max_period;
  /* By default resizing may shorten t under load and relax back to the
   * configured t, never beyond it (an idle filter stays as configured). */
  if (!max_period) max_period = t;
  unsigned min_filters = cfg->min_filters ? cfg->min_filters : n_filters;
  unsigned max_filters = width;
  BK_RETURN_IF(min_period > t || t > max_period, BK_EINVAL);
  BK_RETURN_IF(min_filters < 3 || min_filters > n_filters, BK_EINVAL);
  BK_RETURN_IF(cfg->start_time > UINT64_MAX / 2, BK_EINVAL);

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
    unsigned slot = slot_at(f, head, p);
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

size_t bk_fbf_trace_count(const bk_fbf *f) {
  if (!f) return 0;
  return f->trace_len < BK__FBF_TRACE_CAP ? f->trace_len : BK__FBF_TRACE_CAP;
}

bk_status bk_fbf_trace_get(const bk_fbf *f, size_t i,
                           bk_fbf_resize_event *out) {
  BK_RETURN_IF(!f || !out || i >= bk_fbf_trace_count(f), BK_EINVAL);
  size_t first =
      f->trace_len > BK__FBF_TRACE_CAP ? f->trace_len - BK__FBF_TRACE_CAP : 0;
  *out = f->trace[(first + i) % BK__FBF_TRACE_CAP];
  return BK_OK;
}
