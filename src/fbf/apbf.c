/* SPDX-License-Identifier: MIT */
/*
 * bk_apbf: the Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida 2020).
 *
 * Slices. n = k + l slices of m bits, each in its own run of words, in a
 * ring of physical slots; logical slice i (0 youngest) is slot
 * (base + i) % n, and a shift moves base back by one, so the oldest slot
 * becomes the new slice 0 after it is cleared:
 *
 *   slot   0        1        2        3        4          (k = 2, l = 3)
 *        [ s3     | s4     | s0     | s1     | s2     ]   base = 2
 *                            ^ inserts set bits in s0 and s1
 *
 * A key's bit in slot s is position s of the standard probe sequence over
 * its digest (bloom_inline.h: a = h.lo + s step + (s^3 - s) / 6, reduced
 * by multiply-shift), so it is computed for any slot in O(1) and a slot's
 * bits keep their meaning while the slot ages.
 *
 * Checks look for k logical slices in a row that hold the key, youngest
 * windows first: the last slice of a window is probed first, then back
 * towards its start; a clear bit at j rules out every window holding j,
 * so the next window starts at j + 1 and only its unprobed tail is probed
 * (a miss costs about 2 n / k probes, a hit of a recent key k).
 *
 * Concurrency (the FBF's contract, docs/design/fbf.md "APBF"): the state
 * (base, shift count, sweep flag and, count-based, the generation's claims)
 * is one atomic word (apbf_internal.h). Readers snapshot it, search, and
 * retry when bits 32..63 changed meanwhile. Inserters take their key's
 * sequence lock (core/sync.h), then read the state: count-based, by the
 * fetch-add that claims their place in the generation. A shift publishes
 * its state with the sweep flag set, waits for every key lock it sees held
 * (a grace period: no insert that read the old state is still writing),
 * clears the new young slices, and publishes the end of the sweep; readers
 * leave the slices being swept out of their search, inserters wait for the
 * end. An insert under the old state writes logical slices 0 .. k - 1 of
 * that state, which a one-slot shift never clears (l >= 1).
 */
#include <math.h>

#include "apbf_internal.h"
#include "core/hash_fast.h"

#define DEFAULT_FPP 0.01
#define LN2 0.69314718055994530942
/* Slices larger than this (about a core's L2) prefetch a window. */
#define PREFETCH_BYTES ((size_t)1 << 20)
/* Sizing picks l <= 3 k (choose_shape). */
#define SHAPE_MAX_L_PER_K 3u

/* ---- positions --------------------------------------------------------- */

typedef struct probe {
  uint64_t lo, step;
} probe;

static inline probe probe_of(bk_hash h) {
  return (probe){h.lo, bk__mix64(h.hi)};
}

/* The word holding the key's bit in `slot`, and the bit's index in it. */
static inline uint64_t *slot_word(const bk_apbf *f, unsigned slot,
                                  const probe *p, unsigned *bit) {
  uint64_t pos =
      bk_reduce(p->lo + (uint64_t)slot * p->step + f->slot[slot].cubic, f->m);
  *bit = (unsigned)(pos & 63);
  return f->slot[slot].first + (pos >> 6);
}

static inline bool slot_test(const bk_apbf *f, unsigned slot, const probe *p) {
  unsigned bit;
  const uint64_t *w = slot_word(f, slot, p, &bit);
  return (__atomic_load_n(w, __ATOMIC_RELAXED) >> bit) & 1;
}

/* k logical slices in a row among [lo, hi) holding the key? Ones known in
 * [start, known); each window is probed from its end back to `known`. */
static inline __attribute__((always_inline)) bool run_search(
    const bk_apbf *f, const probe *p, unsigned base, unsigned lo, unsigned hi) {
  const unsigned k = f->k;
  unsigned start = lo, known = lo;
  /* Slices beyond the cache: start the loads the search will most likely
   * make together, so their misses overlap: the first window's k (a hit
   * needs all of them, and an insert writes the same words) and every k-th
   * slice after it (each window holds exactly one of them, and a miss
   * probes most). In cache the extra position computations would cost
   * more than they save. */
  if (f->prefetch && lo + k <= hi) {
    unsigned bit;
    for (unsigned j = lo; j < lo + k - 1; j++)
      __builtin_prefetch(slot_word(f, bk__apbf_slot(f, base, j), p, &bit));
    for (unsigned j = lo + k - 1; j < hi; j += k)
      __builtin_prefetch(slot_word(f, bk__apbf_slot(f, base, j), p, &bit));
  }
  while (start + k <= hi) {
    unsigned j = start + k - 1;
    for (;;) {
      if (!slot_test(f, bk__apbf_slot(f, base, j), p)) break;
      if (j == known) return true;
      j--;
    }
    known = start + k;
    start = j + 1;
  }
  return false;
}

/* The check under one consistent state, as of `now` when `at` (a
 * time-based APBF leaves out the slices the due shifts would drop). */
static inline __attribute__((always_inline)) bool check(const bk_apbf *f,
                                                        const probe *p, bool at,
                                                        uint64_t now) {
  for (unsigned spins = 0;;) {
    uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
    unsigned lo = 0, hi = f->n;
    if (BK__AP_SWEEP(st)) lo = __atomic_load_n(&f->sweep_n, __ATOMIC_RELAXED);
    if (at && f->period) {
      /* `shifts` is stored before the state that carries it: a pair that
       * does not match is a shift being published; look again. */
      uint64_t done = __atomic_load_n(&f->shifts, __ATOMIC_ACQUIRE);
      if ((done & BK__AP_GEN_MASK) != BK__AP_GEN(st)) {
        bk__backoff(&spins);
        continue;
      }
      uint64_t due = bk__apbf_due(f, now);
      if (due > done)
        hi = due - done >= f->n ? 0 : f->n - (unsigned)(due - done);
    }
    bool hit = lo + f->k <= hi && run_search(f, p, BK__AP_BASE(st), lo, hi);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (!((__atomic_load_n(&f->state, __ATOMIC_RELAXED) ^ st) >> 32))
      return hit;
  }
}

/* ---- shifts ------------------------------------------------------------- */

uint64_t bk__apbf_current_count(const bk_apbf *f) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
  if (!f->period) {
    if (BK__AP_SWEEP(st)) return 0;
    return BK__AP_COUNT(st) < f->g ? BK__AP_COUNT(st) : f->g;
  }
  uint64_t total = 0;
  for (unsigned i = 0; i < BK__KEY_LOCKS; i++)
    total = bk__sat_add(
        total, __atomic_load_n(bk__apbf_lock_count(f, i), __ATOMIC_RELAXED));
  return total;
}

/* `total` shifts at once (time-based: all those due; count-based: one),
 * clearing min(total, n) slots. Caller holds mu. */
static void shift(bk_apbf *f, uint64_t total) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned base = BK__AP_BASE(st), n = f->n;
  unsigned cleared = total >= n ? n : (unsigned)total;
  unsigned nb = (base + n - (unsigned)(total % n)) % n;
  uint64_t shifts = f->shifts + total;
  /* The count field shuts claims out while the sweep runs (g + 1: no
   * claim reads exactly g and takes itself for the next shifter). */
  __atomic_store_n(&f->sweep_n, cleared, __ATOMIC_RELAXED);
  __atomic_store_n(&f->shifts, shifts, __ATOMIC_SEQ_CST);
  __atomic_store_n(&f->state,
                   BK__AP_MAKE(shifts, 1, nb, f->period ? 0 : f->g + 1),
                   __ATOMIC_SEQ_CST);
  /* Grace period: an insert that may have read the previous state holds
   * its key lock; wait for each one seen held. */
  for (unsigned i = 0; i < BK__KEY_LOCKS; i++)
    bk__seq_wait_release(bk__apbf_lock(f, i));
  uint64_t finished = f->g;
  if (f->period) {
    finished = 0;
    for (unsigned i = 0; i < BK__KEY_LOCKS; i++) {
      uint64_t *c = bk__apbf_lock_count(f, i);
      finished = bk__sat_add(finished, __atomic_load_n(c, __ATOMIC_RELAXED));
      __atomic_store_n(c, 0, __ATOMIC_RELAXED);
    }
  }
  f->gen_count[base] =
      finished < BK__AP_GEN_COUNT_MAX ? finished : BK__AP_GEN_COUNT_MAX;
  for (unsigned i = 0; i < cleared; i++) {
    unsigned slot = bk__apbf_slot(f, nb, i);
    uint64_t *w = f->slot[slot].first;
    /* Atomic stores: readers of the previous state may still load here. */
    for (uint64_t j = 0; j < f->wps; j++)
      __atomic_store_n(&w[j], 0, __ATOMIC_RELAXED);
    f->gen_count[slot] = 0;
  }
  /* Release: a reader or inserter seeing the end sees the cleared words. */
  __atomic_store_n(&f->state, BK__AP_MAKE(shifts, 0, nb, 0), __ATOMIC_RELEASE);
}

/* The claim that read count == g (state `seen`) shifts. */
static void shift_full(bk_apbf *f, uint64_t seen) {
  pthread_mutex_lock(&f->mu);
  if (!((__atomic_load_n(&f->state, __ATOMIC_RELAXED) ^ seen) >> 32))
    shift(f, 1);
  pthread_mutex_unlock(&f->mu);
}

/* Wait until the state moves on from `seen` (a shift published or done). */
static void wait_moved(const bk_apbf *f, uint64_t seen) {
  for (unsigned spins = 0;
       !((__atomic_load_n(&f->state, __ATOMIC_ACQUIRE) ^ seen) >> 32);)
    bk__backoff(&spins);
}

/* ---- inserts ------------------------------------------------------------ */

static inline void set_bits(bk_apbf *f, const probe *p, unsigned base) {
  for (unsigned i = 0; i < f->k; i++) {
    unsigned bit;
    uint64_t *w = slot_word(f, bk__apbf_slot(f, base, i), p, &bit);
    uint64_t mask = (uint64_t)1 << bit;
    if (!(__atomic_load_n(w, __ATOMIC_RELAXED) & mask))
      __atomic_fetch_or(w, mask, __ATOMIC_RELAXED);
  }
}

/* The single writer's insert: no other thread inserts or shifts, so the
 * state and the bits are written with plain (atomic, for the readers)
 * stores, no locked instruction. */
static bool insert_single(bk_apbf *f, const probe *p, bool if_absent) {
  if (if_absent && check(f, p, false, 0)) return false;
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  if (!f->period) {
    if (BK__AP_COUNT(st) >= f->g) {
      pthread_mutex_lock(&f->mu);
      shift(f, 1);
      pthread_mutex_unlock(&f->mu);
      st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&f->state, st + 1, __ATOMIC_RELAXED);
  } else {
    uint64_t *c = bk__apbf_lock_count(f, 0);
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
  }
  __atomic_thread_fence(__ATOMIC_RELEASE);
  unsigned base = BK__AP_BASE(st);
  for (unsigned i = 0; i < f->k; i++) {
    unsigned bit;
    uint64_t *w = slot_word(f, bk__apbf_slot(f, base, i), p, &bit);
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    __atomic_store_n(w, v | (uint64_t)1 << bit, __ATOMIC_RELAXED);
  }
  return true;
}

/* Insert (when `if_absent`, only a key the check does not find), under the
 * key's lock. Returns whether it inserted. */
static bool insert(bk_apbf *f, bk_hash h, bool if_absent) {
  probe p = probe_of(h);
  if (f->single_writer) return insert_single(f, &p, if_absent);
  unsigned li = bk__key_lock_index(h);
  uint32_t *lock = bk__apbf_lock(f, li);
  for (;;) {
    uint32_t held = bk__seq_lock(lock);
    if (if_absent && check(f, &p, false, 0)) {
      bk__seq_unlock(lock, held);
      return false;
    }
    uint64_t st;
    if (!f->period) {
      /* The claim: seq_cst after the lock's seq_cst acquire, so a shift
       * publishing after it sees the lock held (core/sync.h). */
      st = __atomic_fetch_add(&f->state, 1, __ATOMIC_SEQ_CST);
      uint32_t c = BK__AP_COUNT(st);
      if (BK__AP_SWEEP(st) || c > f->g) {
        bk__seq_unlock(lock, held);
        wait_moved(f, st);
        continue;
      }
      if (c == f->g) {
        bk__seq_unlock(lock, held);
        shift_full(f, st);
        continue;
      }
    } else {
      st = __atomic_load_n(&f->state, __ATOMIC_SEQ_CST);
      if (BK__AP_SWEEP(st)) {
        bk__seq_unlock(lock, held);
        wait_moved(f, st);
        continue;
      }
      uint64_t *c = bk__apbf_lock_count(f, li);
      __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
                       __ATOMIC_RELAXED);
    }
    /* Counted before its bits are set: a snapshot that sees a bit and then
     * reads the counts (acquire) finds the insert counted. */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    set_bits(f, &p, BK__AP_BASE(st));
    bk__seq_unlock(lock, held);
    return true;
  }
}

static inline __attribute__((always_inline)) bk_status hash_key(
    const bk_apbf *f, const void *key, size_t len, bk_hash *out) {
  BK_RETURN_IF(!f, BK_EINVAL);
  return bk__hash_key(f->hash_alg, f->seed, key, len, out);
}

bk_status bk_apbf_hash(const bk_apbf *f, const void *key, size_t len,
                       bk_hash *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  return hash_key(f, key, len, out);
}

bk_status bk_apbf_add_hash(bk_apbf *f, bk_hash h) {
  BK_RETURN_IF(!f, BK_EINVAL);
  (void)insert(f, h, false);
  return BK_OK;
}

bk_status bk_apbf_add(bk_apbf *f, const void *key, size_t len) {
  bk_hash h;
  BK_TRY(hash_key(f, key, len, &h));
  (void)insert(f, h, false);
  return BK_OK;
}

bk_status bk_apbf_add_if_absent_hash(bk_apbf *f, bk_hash h, bool *added) {
  BK_RETURN_IF(!f || !added, BK_EINVAL);
  *added = insert(f, h, true);
  return BK_OK;
}

bk_status bk_apbf_add_if_absent(bk_apbf *f, const void *key, size_t len,
                                bool *added) {
  bk_hash h;
  BK_RETURN_IF(!added, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  *added = insert(f, h, true);
  return BK_OK;
}

bk_status bk_apbf_contains_hash(const bk_apbf *f, bk_hash h, bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  probe p = probe_of(h);
  *out = check(f, &p, false, 0);
  return BK_OK;
}

bk_status bk_apbf_contains(const bk_apbf *f, const void *key, size_t len,
                           bool *out) {
  bk_hash h;
  BK_RETURN_IF(!out, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  probe p = probe_of(h);
  *out = check(f, &p, false, 0);
  return BK_OK;
}

bk_status bk_apbf_contains_at_hash(const bk_apbf *f, bk_hash h, uint64_t now,
                                   bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  probe p = probe_of(h);
  *out = check(f, &p, true, now);
  return BK_OK;
}

bk_status bk_apbf_contains_at(const bk_apbf *f, const void *key, size_t len,
                              uint64_t now, bool *out) {
  bk_hash h;
  BK_RETURN_IF(!out, BK_EINVAL);
  BK_TRY(hash_key(f, key, len, &h));
  return bk_apbf_contains_at_hash(f, h, now, out);
}

void bk__apbf_prefetch(const bk_apbf *f, bk_hash h) {
  probe p = probe_of(h);
  unsigned base = BK__AP_BASE(__atomic_load_n(&f->state, __ATOMIC_RELAXED));
  for (unsigned i = 0; i < f->k; i++) {
    unsigned bit;
    __builtin_prefetch(slot_word(f, bk__apbf_slot(f, base, i), &p, &bit));
  }
}

/* ---- batches ------------------------------------------------------------ */

static bk_status check_keys(const bk_apbf *f, const void *const *keys,
                            const size_t *lens, size_t n) {
  BK_RETURN_IF(!f, BK_EINVAL);
  return bk__batch_keys_ok(f->hash_alg, keys, lens, n);
}

static inline bk_hash key_digest(const bk_apbf *f, const void *key,
                                 size_t len) {
  return bk__hash_fast(f->hash_alg, f->seed, key, len);
}

/* Key i is processed while the words of keys i + 1 .. i + AHEAD - 1 are on
 * their way (a ring of digests); each key's operation is the single-key
 * call's, in order. OP(h) uses i. */
#define AHEAD 8u
#define APBF_BATCH(f, keys, lens, n, OP)                           \
  do {                                                             \
    bk_hash ring_[AHEAD];                                          \
    for (size_t j_ = 0; j_ < (n) && j_ < AHEAD; j_++) {            \
      ring_[j_] = key_digest((f), (keys)[j_], (lens)[j_]);         \
      bk__apbf_prefetch((f), ring_[j_]);                           \
    }                                                              \
    for (size_t i = 0; i < (n); i++) {                             \
      bk_hash h_ = ring_[i % AHEAD];                               \
      OP(h_);                                                      \
      if (i + AHEAD < (n)) {                                       \
        ring_[i % AHEAD] =                                         \
            key_digest((f), (keys)[i + AHEAD], (lens)[i + AHEAD]); \
        bk__apbf_prefetch((f), ring_[i % AHEAD]);                  \
      }                                                            \
    }                                                              \
  } while (0)

bk_status bk_apbf_contains_many(const bk_apbf *f, const void *const *keys,
                                const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_keys(f, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
#define CONTAINS_OP(h)                \
  do {                                \
    probe p_ = probe_of(h);           \
    out[i] = check(f, &p_, false, 0); \
  } while (0)
  APBF_BATCH(f, keys, lens, n, CONTAINS_OP);
#undef CONTAINS_OP
  return BK_OK;
}

bk_status bk_apbf_add_many(bk_apbf *f, const void *const *keys,
                           const size_t *lens, size_t n) {
  BK_TRY(check_keys(f, keys, lens, n));
#define ADD_OP(h) (void)insert(f, h, false)
  APBF_BATCH(f, keys, lens, n, ADD_OP);
#undef ADD_OP
  return BK_OK;
}

bk_status bk_apbf_add_if_absent_many(bk_apbf *f, const void *const *keys,
                                     const size_t *lens, size_t n,
                                     bool *added) {
  BK_TRY(check_keys(f, keys, lens, n));
  BK_RETURN_IF(n && !added, BK_EINVAL);
#define AIA_OP(h) added[i] = insert(f, h, true)
  APBF_BATCH(f, keys, lens, n, AIA_OP);
#undef AIA_OP
  return BK_OK;
}

/* ---- clock -------------------------------------------------------------- */

bk_status bk_apbf_advance(bk_apbf *f, uint64_t now) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  bk_status s = BK_OK;
  if (now < f->now) {
    s = BK_EINVAL;
  } else {
    __atomic_store_n(&f->now, now, __ATOMIC_RELEASE); /* idem reads it */
    if (f->period) {
      uint64_t due = bk__apbf_due(f, now);
      if (due > f->shifts) shift(f, due - f->shifts);
    }
  }
  pthread_mutex_unlock(&f->mu);
  return s;
}

/* ---- rates -------------------------------------------------------------- */

double bk__apbf_run_probability(unsigned k, unsigned n, const double *r) {
  double dist[BK_APBF_MAX_K] = {1.0}, next[BK_APBF_MAX_K], hit = 0.0;
  for (unsigned i = 0; i < n; i++) {
    memset(next, 0, sizeof next);
    for (unsigned a = 0; a < k; a++) {
      if (dist[a] == 0.0) continue;
      if (a + 1 == k)
        hit += dist[a] * r[i];
      else
        next[a + 1] += dist[a] * r[i];
      next[0] += dist[a] * (1.0 - r[i]);
    }
    memcpy(dist, next, sizeof dist);
  }
  /* rounding can take a sum of products of fills near 1 past 1 (the
   * fuzzer found 1 + 2^-52 at m = 65) */
  return hit < 1.0 ? hit : 1.0;
}

static bool shape_ok(unsigned k, unsigned l) {
  return k >= 1 && k <= BK_APBF_MAX_K && l >= 1 && k + l <= BK_APBF_MAX_SLICES;
}

static double formula(unsigned k, unsigned l) {
  double r[BK_APBF_MAX_SLICES];
  for (unsigned i = 0; i < k + l; i++)
    r[i] = i < k ? (double)(i + 1) / (2.0 * k) : 0.5;
  return bk__apbf_run_probability(k, k + l, r);
}

bk_status bk_apbf_fpp_formula(unsigned k, unsigned l, double *out) {
  BK_RETURN_IF(!out || !shape_ok(k, l), BK_EINVAL);
  *out = formula(k, l);
  return BK_OK;
}

bk_status bk_apbf_estimated_fpp(const bk_apbf *f, double *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  bk_apbf *mf = (bk_apbf *)f; /* the mutex only */
  pthread_mutex_lock(&mf->mu);
  unsigned base = BK__AP_BASE(__atomic_load_n(&f->state, __ATOMIC_ACQUIRE));
  double r[BK_APBF_MAX_SLICES], keep = 1.0 - 1.0 / (double)f->m;
  for (unsigned i = 0; i < f->n; i++) {
    uint64_t received = 0;
    for (unsigned j = i + 1 > f->k ? i + 1 - f->k : 0; j <= i; j++)
      received += j ? f->gen_count[bk__apbf_slot(f, base, j)]
                    : bk__apbf_current_count(f);
    r[i] = 1.0 - pow(keep, (double)received);
  }
  pthread_mutex_unlock(&mf->mu);
  *out = bk__apbf_run_probability(f->k, f->n, r);
  return BK_OK;
}

/* The (k, l) of fewest bits per window item, (k + l) k / l (slices of
 * k g / ln 2 bits, g = window / l), whose formula rate is at most fpp,
 * with l at most SHAPE_MAX_L_PER_K k: a miss probes about 2 (k + l) / k
 * slices, and past l = 3 k the bits fall by little (at 1 %: (11, 46) takes
 * 19.7 bits per item and (10, 25) 20.2, for twice the probes). For each k
 * the rate rises with l and the cost falls, so the largest l that meets
 * fpp is k's best (bisected). */
static bk_status choose_shape(double fpp, unsigned *k_out, unsigned *l_out) {
  double best = INFINITY;
  for (unsigned k = 1; k <= BK_APBF_MAX_K; k++) {
    if (formula(k, 1) > fpp) continue;
    unsigned lo = 1, hi = BK_APBF_MAX_SLICES - k;
    if (hi > SHAPE_MAX_L_PER_K * k) hi = SHAPE_MAX_L_PER_K * k;
    while (lo < hi) {
      unsigned mid = lo + (hi - lo + 1) / 2;
      if (formula(k, mid) <= fpp)
        lo = mid;
      else
        hi = mid - 1;
    }
    double cost = (double)(k + lo) * k / lo;
    if (cost < best) {
      best = cost;
      *k_out = k;
      *l_out = lo;
    }
  }
  return best < INFINITY ? BK_OK : BK_EINVAL;
}

bk_status bk_apbf_shape_for_bits(uint64_t window, double bits_per_item,
                                 unsigned *k_out, unsigned *l_out,
                                 double *fpp) {
  BK_RETURN_IF(!k_out || !l_out || !fpp, BK_EINVAL);
  BK_RETURN_IF(window == 0 || window > BK_BITS_MAX, BK_EINVAL);
  BK_RETURN_IF(!(bits_per_item >= 1.0 && bits_per_item <= 1024.0), BK_EINVAL);
  double total = bits_per_item * (double)window, best = 2.0;
  for (unsigned k = 1; k <= BK_APBF_MAX_K; k++)
    for (unsigned l = 1; l <= SHAPE_MAX_L_PER_K * k && k + l <= 128; l++) {
      double m = floor(total / (k + l));
      if (m < 1) continue;
      double g = window > 1 ? ceil((double)(window - 1) / l) : 1;
      double r[BK_APBF_MAX_SLICES];
      for (unsigned i = 0; i < k + l; i++) {
        double gens = i + 0.5 < k ? i + 0.5 : k;
        r[i] = 1.0 - exp(-gens * g / m);
      }
      double p = bk__apbf_run_probability(k, k + l, r);
      if (p < best) {
        best = p;
        *k_out = k;
        *l_out = l;
      }
    }
  BK_RETURN_IF(best > 1.0, BK_EINVAL);
  *fpp = best;
  return BK_OK;
}

/* ---- lifecycle ---------------------------------------------------------- */

bk_status bk__apbf_alloc(const bk__alloc *al, unsigned k, unsigned l,
                         uint64_t m, bk_apbf **out) {
  BK_RETURN_IF(!shape_ok(k, l) || m == 0, BK_EINVAL);
  unsigned n = k + l;
  uint64_t wps = (m + 63) / 64;
  BK_RETURN_IF(m > BK_BITS_MAX || wps * 64 * n > BK_BITS_MAX, BK_EINVAL);
  bk_apbf *f = bk__calloc(al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  f->alloc = *al;
  f->k = k;
  f->l = l;
  f->n = n;
  f->m = m;
  f->wps = wps;
  for (unsigned s = 0; s < n; s++)
    f->slot[s].cubic = ((uint64_t)s * s * s - s) / 6;
  bk_status s = bk__region_alloc(al, (size_t)(wps * n * 8), &f->region);
  if (s == BK_OK) s = bk__region_alloc(al, BK__KEY_LOCKS_BYTES, &f->locks);
  if (s == BK_OK && pthread_mutex_init(&f->mu, NULL) != 0) s = BK_ENOMEM;
  if (s != BK_OK) {
    bk__region_free(al, &f->locks);
    bk__region_free(al, &f->region);
    bk__free(al, f);
    return s;
  }
  f->words = f->region.data;
  for (unsigned i = 0; i < n; i++) f->slot[i].first = f->words + i * wps;
  f->prefetch = f->region.size > PREFETCH_BYTES;
  *out = f;
  return BK_OK;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

bk_status bk_apbf_create(bk_apbf **out, const bk_apbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  unsigned k = cfg->k, l = cfg->l;
  if (!k && !l) BK_TRY(choose_shape(fpp, &k, &l));
  BK_RETURN_IF(!shape_ok(k, l), BK_EINVAL);
  uint64_t period = 0;
  if (cfg->window) {
    period = ceil_div(cfg->window, l);
    BK_RETURN_IF(cfg->start_time > UINT64_MAX - period, BK_EINVAL);
  }
  uint64_t g = cfg->generation;
  if (!g) {
    BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
    g = period ? ceil_div(cfg->capacity, l)
               : (cfg->capacity > 1 ? ceil_div(cfg->capacity - 1, l) : 1);
  }
  BK_RETURN_IF(g > BK_APBF_MAX_GENERATION, BK_EINVAL);
  uint64_t m = cfg->m_bits;
  if (!m) {
    double bits = ceil((double)k * (double)g / LN2);
    BK_RETURN_IF(bits > (double)BK_BITS_MAX, BK_EINVAL);
    m = (uint64_t)bits;
  }
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_apbf *f;
  BK_TRY(bk__apbf_alloc(&al, k, l, m, &f));
  f->g = g;
  f->period = period;
  f->start = period ? cfg->start_time : 0;
  f->now = cfg->start_time;
  f->hash_alg = cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  f->seed = cfg->seed;
  f->single_writer = cfg->single_writer;
  f->state = BK__AP_MAKE(0, 0, 0, 0);
  *out = f;
  return BK_OK;
}

void bk_apbf_destroy(bk_apbf *f) {
  if (!f) return;
  bk__alloc al = f->alloc;
  pthread_mutex_destroy(&f->mu);
  bk__region_free(&al, &f->locks);
  bk__region_free(&al, &f->region);
  bk__free(&al, f);
}

bk_status bk_apbf_info_get(const bk_apbf *f, bk_apbf_info *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  bk_apbf *mf = (bk_apbf *)f; /* the mutex only */
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&mf->mu);
  out->k = f->k;
  out->l = f->l;
  out->m_bits = f->m;
  out->generation = f->g;
  out->period = f->period;
  out->time_based = f->period != 0;
  out->single_writer = f->single_writer;
  if (f->period) {
    out->window_min = bk__sat_mul(f->l, f->period);
    out->window_max = bk__sat_mul(f->l + 1, f->period);
  } else {
    out->window_min = f->l * f->g + 1;
    out->window_max = (f->l + 1) * f->g;
  }
  out->in_generation = bk__apbf_current_count(f);
  out->shifts = __atomic_load_n(&f->shifts, __ATOMIC_RELAXED);
  uint64_t total = out->in_generation;
  unsigned base = BK__AP_BASE(__atomic_load_n(&f->state, __ATOMIC_ACQUIRE));
  for (unsigned i = 1; i < f->n; i++)
    total = bk__sat_add(total, f->gen_count[bk__apbf_slot(f, base, i)]);
  out->inserted = total;
  out->now = f->now;
  out->memory = sizeof *f + f->region.size + f->locks.size;
  pthread_mutex_unlock(&mf->mu);
  return BK_OK;
}
