/* SPDX-License-Identifier: MIT */
/*
 * bk_cbf: the counting Bloom filter (include/bloomkit/cbf.h).
 *
 * Storage: m counters of `width` bits packed little-endian into 64-bit
 * words (counter i at bit i * width; a counter never straddles a word),
 * rounded up to whole 64-byte blocks, zero past m. Each counter update is a
 * compare-and-swap on its word that leaves a saturated counter alone, so
 * concurrent updates of neighbours never tear and a counter never wraps.
 *
 * Positions: the standard layout takes bk__indices (enhanced double
 * hashing, as bk_bloom). The blocked layout picks a block with
 * bk_reduce(h.lo, blocks) and k positions among its C = 512 / width
 * counters from log2(C)-bit slices of x_0 = mix64(h.hi), x_{g+1} =
 * mix64(x_g + golden): uniform, with replacement, which is what
 * bk__fpp_blocked_cells assumes when sizing.
 *
 * Speed: the single-key paths are cut to the fewest instructions per
 * position (4-bit counters get a constant-width loop) and branch on no
 * counter they update: beyond the cache, how many keys' misses overlap is
 * bounded by how many keys' instructions fit the core's window. A single
 * writer updates each counter with a plain load and store, branch-free
 * (saturation by arithmetic); concurrent writers use a compare-and-swap
 * per counter after prefetching all k lines; a remove reads all k counters
 * before it writes any (nothing changes when one is zero). The batch calls
 * run a pipeline that prefetches every line of the key AHEAD keys on.
 *
 * The serialized form is in cbf_io.c.
 */
#include <math.h>
#include <string.h>

#include "bloomkit/params.h"
#include "core/hash_fast.h"
#include "cbf/cbf_internal.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

static unsigned log2_width(unsigned w) {
  return w == 4 ? 2 : w == 8 ? 3 : w == 16 ? 4 : 5;
}

/* ---- sizing ---------------------------------------------------------- */

/* Blocked: the smallest whole number of blocks (searched upwards from the
 * standard layout's m in 1/64 steps) whose exact blocked rate meets fpp. */
typedef struct blocked_rate {
  unsigned cells, k;
  uint64_t capacity;
} blocked_rate;

static bk_status blocked_rate_of(uint64_t m, const void *ctx, double *out) {
  const blocked_rate *r = ctx;
  return bk__fpp_blocked_cells(m, r->cells, r->k, r->capacity, out);
}

static bk_status blocked_m(uint64_t capacity, double fpp, unsigned k,
                           unsigned cells, uint64_t m_std, uint64_t *out) {
  blocked_rate r = {cells, k, capacity};
  return bk__m_search(m_std, cells, BK__CBF_COUNTERS_MAX, fpp, blocked_rate_of,
                      &r, out);
}

bk_status bk__cbf_resolve(const bk_cbf_config *cfg, bk__cbf_params *out) {
  BK_RETURN_IF(!cfg || !out, BK_EINVAL);
  unsigned width = cfg->counter_bits ? cfg->counter_bits : 4;
  BK_RETURN_IF(!bk__cbf_width_ok(width), BK_EINVAL);
  BK_RETURN_IF(
      cfg->layout != BK_BLOOM_STANDARD && cfg->layout != BK_BLOOM_BLOCKED,
      BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  const unsigned cells = (unsigned)bk__cbf_cells_per_block(width);
  uint64_t m;
  unsigned k = cfg->k;
  uint64_t capacity = 0;
  if (cfg->m_counters) {
    BK_RETURN_IF(k == 0 || cfg->m_counters > BK__CBF_COUNTERS_MAX, BK_EINVAL);
    m = cfg->m_counters;
    if (cfg->layout == BK_BLOOM_BLOCKED) m = (m + cells - 1) / cells * cells;
    BK_RETURN_IF(m > BK__CBF_COUNTERS_MAX, BK_EINVAL);
  } else {
    double fpp = cfg->fpp == 0.0 ? 0.01 : cfg->fpp;
    BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
    BK_RETURN_IF(cfg->capacity == 0 || cfg->capacity > BK__CBF_COUNTERS_MAX,
                 BK_EINVAL); /* what the loader accepts */
    capacity = cfg->capacity;
    /* k: the optimal one unless given; m: the least that meets fpp with
     * that k exactly. */
    if (!k)
      BK_TRY(bk_params_for_target(capacity, fpp, &m, &k));
    else
      BK_TRY(bk_params_m_for_k(capacity, fpp, k, &m));
    BK_RETURN_IF(m > BK__CBF_COUNTERS_MAX, BK_EINVAL);
    if (cfg->layout == BK_BLOOM_BLOCKED)
      BK_TRY(blocked_m(capacity, fpp, k, cells, m, &m));
  }
  out->m = m;
  out->k = k;
  out->width = width;
  out->layout = cfg->layout;
  out->hash_alg =
      cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  out->seed = cfg->seed;
  out->capacity = capacity;
  return BK_OK;
}

size_t bk__cbf_storage_bytes(const bk__cbf_params *p) {
  uint64_t bits = p->m * p->width;
  uint64_t blocks = (bits + 511) / 512;
  return (size_t)(blocks * BK__CBF_BLOCK_BYTES);
}

void bk__cbf_view(bk_cbf *f, const bk__cbf_params *p, void *storage) {
  memset(f, 0, sizeof *f);
  f->words = storage;
  f->m = p->m;
  f->n_blocks = bk__cbf_storage_bytes(p) / BK__CBF_BLOCK_BYTES;
  f->capacity = p->capacity;
  f->seed = p->seed;
  f->k = p->k;
  f->width = p->width;
  f->log_width = log2_width(p->width);
  f->layout = p->layout;
  f->log_cells = 9u - f->log_width;
  f->hash_alg = p->hash_alg;
  f->max = p->width == 32 ? UINT32_MAX : (uint32_t)((1u << p->width) - 1);
  f->owned = false;
}

bk_status bk__cbf_new(bk_cbf **out, const bk__alloc *al,
                      const bk__cbf_params *p) {
  bk_cbf *f = bk__calloc(al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  bk__region region;
  bk_status s = bk__region_alloc(al, bk__cbf_storage_bytes(p), &region);
  if (s != BK_OK) {
    bk__free(al, f);
    return s;
  }
  bk__cbf_view(f, p, region.data);
  f->owned = true;
  f->region = region;
  f->alloc = *al;
  *out = f;
  return BK_OK;
}

bk_status bk_cbf_create(bk_cbf **out, const bk_cbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk__cbf_params p;
  BK_TRY(bk__cbf_resolve(cfg, &p));
  BK_TRY(bk__cbf_new(out, &al, &p));
  (*out)->single_writer = cfg->single_writer;
  return BK_OK;
}

void bk_cbf_destroy(bk_cbf *f) {
  if (!f || !f->owned) return;
  bk__alloc al = f->alloc;
  bk__region_free(&al, &f->region);
  bk__free(&al, f);
}

bk_status bk_cbf_hash(const bk_cbf *f, const void *key, size_t len,
                      bk_hash *out) {
  BK_RETURN_IF(!f || !out || (!key && len), BK_EINVAL);
  *out = bk__hash_fast(f->hash_alg, f->seed, key, len);
  return BK_OK;
}

/* ---- positions ------------------------------------------------------- */

/*
 * The k counter indices of digest h, as `c`, for `body` (a statement):
 * standard, bk__probe_next's sequence over m; blocked, log_cells-bit slices
 * of the group words in the block bk_reduce(h.lo, blocks). `lw` is the
 * log2 of the counter width, a constant where the caller can make it one
 * (the 4-bit case): the loops below are cut to the fewest instructions a
 * position costs, because the out-of-order window, not the memory, is what
 * bounds how many keys' cache misses are in flight at once (a loop of
 * single-key calls overlaps its calls' misses only as far as the window
 * reaches; measured at 10 M keys, 50 MB of counters: 13 ns per independent
 * miss, 150 ns per dependent one).
 */
#define CBF_POSITIONS(f, h, lw, kk, c, body)                                 \
  do {                                                                       \
    const unsigned cp_k = (kk);                                              \
    if ((f)->layout == BK_BLOOM_STANDARD) {                                  \
      bk__probe_seq cp_p = bk__probe_start(h);                               \
      const uint64_t cp_m = (f)->m;                                          \
      _Pragma("GCC unroll 8") for (unsigned cp_i = 0; cp_i < cp_k; cp_i++) { \
        const uint64_t c = bk__probe_next(&cp_p, cp_i, cp_m);                \
        body;                                                                \
      }                                                                      \
    } else {                                                                 \
      const unsigned cp_bits = 9u - (lw), cp_per = 64u / cp_bits;            \
      const uint64_t cp_mask = ((uint64_t)1 << cp_bits) - 1;                 \
      const uint64_t cp_base = bk_reduce((h).lo, (f)->n_blocks) << cp_bits;  \
      uint64_t cp_grp = bk__mix64((h).hi), cp_cur = cp_grp;                  \
      _Pragma("GCC unroll 8") for (unsigned cp_i = 0, cp_left = cp_per;      \
                                   cp_i < cp_k;                              \
                                   cp_i++, cp_left--, cp_cur >>= cp_bits) {  \
        if (!cp_left) {                                                      \
          cp_cur = cp_grp = bk__mix64(cp_grp + GOLDEN);                      \
          cp_left = cp_per;                                                  \
        }                                                                    \
        const uint64_t c = cp_base | (cp_cur & cp_mask);                     \
        body;                                                                \
      }                                                                      \
    }                                                                        \
  } while (0)

/* Run `call` (an expression naming LW and K) with LW the constant 2 for
 * 4-bit counters, else f's log width, and K the constant 7 when k is 7
 * (what the default 1 % resolves to), else f's k: with both constant the
 * position loop unrolls and loses its bookkeeping (callgrind, 4-bit,
 * k = 7, standard: 252 -> 217 instructions per single-writer add, 449 ->
 * 327 per remove, 201 -> 176 per present lookup). */
#define CBF_BY_WIDTH(f, call)                         \
  do {                                                \
    if ((f)->log_width == 2 && (f)->k == 7) {         \
      const unsigned LW = 2, K = 7;                   \
      call;                                           \
    } else if ((f)->log_width == 2) {                 \
      const unsigned LW = 2, K = (f)->k;              \
      call;                                           \
    } else {                                          \
      const unsigned LW = (f)->log_width, K = (f)->k; \
      call;                                           \
    }                                                 \
  } while (0)

/* Counter indices of h, k of them, into idx. */
static inline void positions(const bk_cbf *f, bk_hash h, uint64_t *idx) {
  unsigned n = 0;
  CBF_POSITIONS(f, h, f->log_width, f->k, c, idx[n++] = c);
}

static inline uint64_t *word_of(const bk_cbf *f, uint64_t i) {
  return f->words + ((i << f->log_width) >> 6);
}
static inline unsigned shift_of(const bk_cbf *f, uint64_t i) {
  return (unsigned)((i << f->log_width) & 63);
}
static inline uint32_t get(const bk_cbf *f, uint64_t i) {
  uint64_t w = __atomic_load_n(word_of(f, i), __ATOMIC_RELAXED);
  return (uint32_t)((w >> shift_of(f, i)) & f->max);
}

/*
 * The update and lookup loops take the struct's fields as locals (a store
 * to a counter word could alias them, so the compiler would reload every
 * field after every store) and branch on no loaded value: a mispredicted
 * branch on a counter resolves only when its miss returns, and the flush
 * discards the loads of the calls after it.
 */

/* Single writer: +1 (up) or -1 unless saturated (or, down, zero), a plain
 * load and store with no branch (a counter that stays is stored back
 * unchanged). Readers see the old word or the new one. */
static inline void step_sw(uint64_t *words, unsigned lw, uint64_t max,
                           uint64_t i, bool up) {
  const uint64_t bit = i << lw;
  uint64_t *w = words + (bit >> 6);
  const unsigned sh = (unsigned)(bit & 63);
  const uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
  const uint64_t v = (cur >> sh) & max;
  const uint64_t move = (uint64_t)((v != max) & (up | (v != 0))) << sh;
  __atomic_store_n(w, up ? cur + move : cur - move, __ATOMIC_RELAXED);
}

/* Concurrent: the same step as a compare-and-swap on the word, so updates
 * of neighbours never tear or get lost and a counter never wraps (zero,
 * down: only under a racing over-removal). */
static inline void step_cas(uint64_t *words, unsigned lw, uint64_t max,
                            uint64_t i, bool up) {
  const uint64_t bit = i << lw;
  uint64_t *w = words + (bit >> 6);
  const unsigned sh = (unsigned)(bit & 63);
  const uint64_t mask = max << sh, one = (uint64_t)1 << sh;
  uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
  while ((cur & mask) != mask && (up || (cur & mask) != 0) &&
         !__atomic_compare_exchange_n(w, &cur, up ? cur + one : cur - one, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* Counter i, from locals. */
static inline uint64_t get_at(const uint64_t *words, unsigned lw, uint64_t max,
                              uint64_t i) {
  const uint64_t bit = i << lw;
  return (__atomic_load_n(words + (bit >> 6), __ATOMIC_RELAXED) >> (bit & 63)) &
         max;
}

static inline void prefetch_idx(const bk_cbf *f, const uint64_t *idx,
                                int write) {
  if (f->layout == BK_BLOOM_BLOCKED) {
    if (write)
      __builtin_prefetch(word_of(f, idx[0]), 1, 3);
    else
      __builtin_prefetch(word_of(f, idx[0]), 0, 3);
    return;
  }
  for (unsigned i = 0; i < f->k; i++) {
    if (write)
      __builtin_prefetch(word_of(f, idx[i]), 1, 3);
    else
      __builtin_prefetch(word_of(f, idx[i]), 0, 3);
  }
}

/* ---- hot paths ------------------------------------------------------- */

/* Whether all k counters at idx are nonzero, with no branch between the
 * loads. */
static inline bool all_nonzero_at(const bk_cbf *f, const uint64_t *idx) {
  const uint64_t *words = f->words, max = f->max;
  const unsigned lw = f->log_width;
  bool all = true;
  for (unsigned i = 0; i < f->k; i++)
    all &= get_at(words, lw, max, idx[i]) != 0;
  return all;
}

/* Concurrent add at positions idx: a compare-and-swap waits for its line
 * (and, a locked instruction, holds back the loads after it), so all k
 * lines are asked for first. */
static inline void add_cas_at(const bk_cbf *f, const uint64_t *idx) {
  uint64_t *words = f->words, max = f->max;
  const unsigned lw = f->log_width;
  prefetch_idx(f, idx, 1);
  for (unsigned i = 0; i < f->k; i++) step_cas(words, lw, max, idx[i], true);
}

/* Remove at positions idx when all k counters are nonzero (it reads them
 * all before it writes any); false: nothing changed. */
static inline bool remove_at(const bk_cbf *f, const uint64_t *idx) {
  uint64_t *words = f->words, max = f->max;
  const unsigned lw = f->log_width;
  if (!f->single_writer) prefetch_idx(f, idx, 1);
  if (!all_nonzero_at(f, idx)) return false;
  if (f->single_writer) {
    for (unsigned i = 0; i < f->k; i++) step_sw(words, lw, max, idx[i], false);
    return true;
  }
  for (unsigned i = 0; i < f->k; i++) step_cas(words, lw, max, idx[i], false);
  return true;
}

/* The k positions into idx; with `prefetch`, each line prefetched for
 * writing as its position is known (the block once, blocked). */
static inline __attribute__((always_inline)) void positions_k(
    const bk_cbf *f, bk_hash h, unsigned lw, unsigned k, uint64_t *idx,
    bool prefetch) {
  const uint64_t *words = f->words;
  const bool blocked = f->layout != BK_BLOOM_STANDARD;
  unsigned n = 0;
  CBF_POSITIONS(f, h, lw, k, c, {
    if (prefetch && (!blocked || !n))
      __builtin_prefetch(words + ((c << lw) >> 6), 1, 3);
    idx[n++] = c;
  });
}

/* Single writer: the positions with their lines prefetched for writing
 * (alternating runs at 10 M keys: 131-144 against 147-166 ns per add
 * without), then each counter's load, saturating +1 and store. A counter
 * that comes twice is seen with its first +1 (the second load reads the
 * first store). */
static inline __attribute__((always_inline)) void add_sw(bk_cbf *f, bk_hash h,
                                                         unsigned lw,
                                                         unsigned k) {
  uint64_t *words = f->words;
  const uint64_t max = f->max;
  uint64_t idx[BK_K_MAX];
  positions_k(f, h, lw, k, idx, true);
  _Pragma("GCC unroll 8") for (unsigned i = 0; i < k; i++)
      step_sw(words, lw, max, idx[i], true);
}

/* Concurrent: positions_k with prefetches (a locked instruction waits for
 * its line and holds back the loads after it), then a compare-and-swap
 * per counter. */
static inline __attribute__((always_inline)) void add_cas(bk_cbf *f, bk_hash h,
                                                          unsigned lw,
                                                          unsigned k) {
  uint64_t *words = f->words;
  const uint64_t max = f->max;
  uint64_t idx[BK_K_MAX];
  positions_k(f, h, lw, k, idx, true);
  _Pragma("GCC unroll 8") for (unsigned i = 0; i < k; i++)
      step_cas(words, lw, max, idx[i], true);
}

/* Remove: the positions once, all k counters read with no branch between
 * the loads, then, when none is zero, each decremented (a plain store for
 * a single writer, else a compare-and-swap). */
static inline __attribute__((always_inline)) bool remove_k(bk_cbf *f, bk_hash h,
                                                           unsigned lw,
                                                           unsigned k,
                                                           bool sw) {
  uint64_t *words = f->words;
  const uint64_t max = f->max;
  uint64_t idx[BK_K_MAX];
  positions_k(f, h, lw, k, idx, !sw);
  bool all = true;
  _Pragma("GCC unroll 8") for (unsigned i = 0; i < k; i++) all &=
      get_at(words, lw, max, idx[i]) != 0;
  if (!all) return false;
  _Pragma("GCC unroll 8") for (unsigned i = 0; i < k; i++) {
    if (sw)
      step_sw(words, lw, max, idx[i], false);
    else
      step_cas(words, lw, max, idx[i], false);
  }
  return true;
}

static inline __attribute__((always_inline)) void add(bk_cbf *f, bk_hash h) {
  if (f->single_writer)
    CBF_BY_WIDTH(f, add_sw(f, h, LW, K));
  else
    CBF_BY_WIDTH(f, add_cas(f, h, LW, K));
}

void bk__cbf_add(bk_cbf *f, bk_hash h) {
  add(f, h);
}

static inline __attribute__((always_inline)) bk_status remove(bk_cbf *f,
                                                              bk_hash h) {
  if (f->single_writer)
    CBF_BY_WIDTH(f, return remove_k(f, h, LW, K, true) ? BK_OK : BK_ENOTFOUND);
  CBF_BY_WIDTH(f, return remove_k(f, h, LW, K, false) ? BK_OK : BK_ENOTFOUND);
}

/* Lookups compute each position as they go and stop at the first zero
 * counter, like bk_bloom's: an absent key usually costs one or two loads,
 * and the loads of a present key still overlap (nothing depends on them
 * but a well-predicted branch). Reading all k without a branch, as the
 * updates do, measured slower at 10 M keys (128 against 99 ns per absent
 * key, 133 against 125 per present one): the window, not the branch,
 * bounds the overlap, and the extra loads fill it. */
static inline __attribute__((always_inline)) bool standard_contains(
    const bk_cbf *f, bk_hash h, unsigned lw, unsigned k) {
  bk__probe_seq p = bk__probe_start(h); /* bk__indices' sequence */
  const uint64_t m = f->m, max = f->max;
  const uint64_t *words = f->words;
  /* The first two probes without a branch between them: at the design fill
   * each is nonzero with probability ~1/2, so a branch on the first alone
   * would mispredict half the time (as bk_bloom's standard_contains). */
  uint64_t c0 = get_at(words, lw, max, bk__probe_next(&p, 0, m));
  uint64_t c1 = k > 1 ? get_at(words, lw, max, bk__probe_next(&p, 1, m)) : 1;
  if ((c0 == 0) | (c1 == 0)) return false;
  _Pragma("GCC unroll 8") for (unsigned i = 2; i < k;
                               i++) if (!get_at(words, lw, max,
                                                bk__probe_next(
                                                    &p, i, m))) return false;
  return true;
}

static inline __attribute__((always_inline)) bool blocked_contains(
    const bk_cbf *f, bk_hash h, unsigned lw, unsigned k) {
  const unsigned bits = 9u - lw, per = 64u / bits;
  const uint64_t max = f->max, mask = ((uint64_t)1 << bits) - 1;
  /* The block's 8 words; counter j of the block at bit j << lw. */
  const uint64_t *blk = f->words + bk_reduce(h.lo, f->n_blocks) * 8;
  uint64_t grp = bk__mix64(h.hi), cur = grp;
  /* Two probes before the first branch, as in standard_contains (per >= 4,
   * so both come from the first group word). */
  uint64_t c0 = get_at(blk, lw, max, cur & mask);
  uint64_t c1 = k > 1 ? get_at(blk, lw, max, (cur >> bits) & mask) : 1;
  if ((c0 == 0) | (c1 == 0)) return false;
  cur >>= 2 * bits;
  _Pragma("GCC unroll 8") for (unsigned i = 2, left = per - 2; i < k;
                               i++, left--, cur >>= bits) {
    if (!left) {
      cur = grp = bk__mix64(grp + GOLDEN);
      left = per;
    }
    if (!get_at(blk, lw, max, cur & mask)) return false;
  }
  return true;
}

static inline __attribute__((always_inline)) bool contains_lw(const bk_cbf *f,
                                                              bk_hash h,
                                                              unsigned lw,
                                                              unsigned k) {
  return f->layout == BK_BLOOM_STANDARD ? standard_contains(f, h, lw, k)
                                        : blocked_contains(f, h, lw, k);
}

static inline __attribute__((always_inline)) bool contains(const bk_cbf *f,
                                                           bk_hash h) {
  CBF_BY_WIDTH(f, return contains_lw(f, h, LW, K));
}

bool bk__cbf_contains(const bk_cbf *f, bk_hash h) {
  return contains(f, h);
}

static inline __attribute__((always_inline)) uint32_t count_lw(const bk_cbf *f,
                                                               bk_hash h,
                                                               unsigned lw,
                                                               unsigned k) {
  const uint64_t *words = f->words;
  const uint64_t max = f->max;
  uint64_t least = max;
  CBF_POSITIONS(f, h, lw, k, c, {
    const uint64_t v = get_at(words, lw, max, c);
    least = v < least ? v : least;
  });
  return (uint32_t)least;
}

uint32_t bk__cbf_count(const bk_cbf *f, bk_hash h) {
  CBF_BY_WIDTH(f, return count_lw(f, h, LW, K));
}

bk_status bk_cbf_add_hash(bk_cbf *f, bk_hash h) {
  BK_RETURN_IF(!f, BK_EINVAL);
  bk__cbf_add(f, h);
  return BK_OK;
}
bk_status bk_cbf_add(bk_cbf *f, const void *key, size_t len) {
  BK_RETURN_IF(!f || (!key && len), BK_EINVAL);
  add(f, bk__hash_fast(f->hash_alg, f->seed, key, len));
  return BK_OK;
}
bk_status bk__cbf_remove(bk_cbf *f, bk_hash h) {
  return remove(f, h);
}

bk_status bk_cbf_remove_hash(bk_cbf *f, bk_hash h) {
  BK_RETURN_IF(!f, BK_EINVAL);
  return remove(f, h);
}
bk_status bk_cbf_remove(bk_cbf *f, const void *key, size_t len) {
  BK_RETURN_IF(!f || (!key && len), BK_EINVAL);
  return remove(f, bk__hash_fast(f->hash_alg, f->seed, key, len));
}
bk_status bk_cbf_contains_hash(const bk_cbf *f, bk_hash h, bool *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = bk__cbf_contains(f, h);
  return BK_OK;
}
bk_status bk_cbf_contains(const bk_cbf *f, const void *key, size_t len,
                          bool *out) {
  BK_RETURN_IF(!f || !out || (!key && len), BK_EINVAL);
  *out = contains(f, bk__hash_fast(f->hash_alg, f->seed, key, len));
  return BK_OK;
}
bk_status bk_cbf_count_hash(const bk_cbf *f, bk_hash h, uint32_t *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = bk__cbf_count(f, h);
  return BK_OK;
}
bk_status bk_cbf_count(const bk_cbf *f, const void *key, size_t len,
                       uint32_t *out) {
  BK_RETURN_IF(!f || !out || (!key && len), BK_EINVAL);
  *out = bk__cbf_count(f, bk__hash_fast(f->hash_alg, f->seed, key, len));
  return BK_OK;
}

/* ---- batches --------------------------------------------------------- */

/*
 * Every batch runs one pipeline: key i + AHEAD is hashed, its k positions
 * computed into a ring slot and all its lines prefetched while key i, whose
 * lines were asked for AHEAD keys ago, is operated on from its slot. The
 * misses of AHEAD keys are in flight together whatever the window of the
 * core, and a lookup reads all k counters without a branch (they are in
 * the cache by then). Grouping (hash 8 keys, prefetch, operate on the 8)
 * left each group's first access waiting a full latency, and prefetching
 * only a lookup's first two lines left the rest to miss.
 */
#define AHEAD 8u

static bk_status check_batch(const void *f, const void *const *keys,
                             const size_t *lens, size_t n) {
  BK_RETURN_IF(!f || (n && (!keys || !lens)), BK_EINVAL);
  for (size_t i = 0; i < n; i++) BK_RETURN_IF(!keys[i] && lens[i], BK_EINVAL);
  return BK_OK;
}

typedef enum { OP_ADD, OP_REMOVE, OP_CONTAINS } batch_op;

/* Key i's digest: hashes[i], or the hash of keys[i]. */
static inline bk_hash digest_of(const bk_cbf *f, const void *const *keys,
                                const size_t *lens, const bk_hash *hashes,
                                size_t i) {
  return hashes ? hashes[i]
                : bk__hash_fast(f->hash_alg, f->seed, keys[i], lens[i]);
}

/* The pipeline; returns the keys removed (OP_REMOVE), writes out[]
 * (OP_CONTAINS). */
static size_t pipeline(bk_cbf *f, const void *const *keys, const size_t *lens,
                       const bk_hash *hashes, size_t n, batch_op op,
                       bool *out) {
  uint64_t ring[AHEAD][BK_K_MAX];
  const int write = op != OP_CONTAINS;
  const size_t lead = n < AHEAD ? n : AHEAD;
  for (size_t i = 0; i < lead; i++) {
    positions(f, digest_of(f, keys, lens, hashes, i), ring[i]);
    prefetch_idx(f, ring[i], write);
  }
  uint64_t *words = f->words, max = f->max;
  const unsigned lw = f->log_width;
  size_t done = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t *idx = ring[i % AHEAD];
    if (op == OP_CONTAINS)
      out[i] = all_nonzero_at(f, idx);
    else if (op == OP_REMOVE)
      done += remove_at(f, idx);
    else if (f->single_writer)
      for (unsigned j = 0; j < f->k; j++) step_sw(words, lw, max, idx[j], true);
    else
      add_cas_at(f, idx);
    if (i + AHEAD < n) {
      positions(f, digest_of(f, keys, lens, hashes, i + AHEAD), idx);
      prefetch_idx(f, idx, write);
    }
  }
  return done;
}

bk_status bk_cbf_add_many(bk_cbf *f, const void *const *keys,
                          const size_t *lens, size_t n) {
  BK_TRY(check_batch(f, keys, lens, n));
  (void)pipeline(f, keys, lens, NULL, n, OP_ADD, NULL);
  return BK_OK;
}

bk_status bk_cbf_remove_many(bk_cbf *f, const void *const *keys,
                             const size_t *lens, size_t n, size_t *removed) {
  BK_TRY(check_batch(f, keys, lens, n));
  size_t done = pipeline(f, keys, lens, NULL, n, OP_REMOVE, NULL);
  if (removed) *removed = done;
  return BK_OK;
}

/* The lookups cast the filter's const away for the shared pipeline, which
 * writes nothing for OP_CONTAINS. */
bk_status bk_cbf_contains_many(const bk_cbf *f, const void *const *keys,
                               const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_batch(f, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
  (void)pipeline((bk_cbf *)f, keys, lens, NULL, n, OP_CONTAINS, out);
  return BK_OK;
}

bk_status bk_cbf_contains_many_hash(const bk_cbf *f, const bk_hash *hashes,
                                    size_t n, bool *out) {
  BK_RETURN_IF(!f || (n && (!hashes || !out)), BK_EINVAL);
  (void)pipeline((bk_cbf *)f, NULL, NULL, hashes, n, OP_CONTAINS, out);
  return BK_OK;
}

/* ---- whole-filter operations ----------------------------------------- */

static bool same_shape(const bk_cbf *a, const bk_cbf *b) {
  return a->m == b->m && a->k == b->k && a->width == b->width &&
         a->layout == b->layout && a->hash_alg == b->hash_alg &&
         a->seed == b->seed;
}

bk_status bk_cbf_merge(bk_cbf *dst, const bk_cbf *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(!same_shape(dst, src), BK_EMISMATCH);
  const uint32_t max = dst->max;
  for (uint64_t i = 0; i < dst->m; i++) {
    uint32_t a = get(dst, i), b = get(src, i);
    uint64_t sum = (uint64_t)a + b;
    /* A saturated counter in either stays saturated. */
    uint32_t v = a == max || b == max || sum > max ? max : (uint32_t)sum;
    if (v == a) continue;
    uint64_t *w = word_of(dst, i);
    const unsigned sh = shift_of(dst, i);
    uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
    uint64_t next = (cur & ~((uint64_t)max << sh)) | ((uint64_t)v << sh);
    __atomic_store_n(w, next, __ATOMIC_RELAXED);
  }
  return BK_OK;
}

bk_status bk_cbf_set_single_writer(bk_cbf *f, bool single_writer) {
  BK_RETURN_IF(!f, BK_EINVAL);
  f->single_writer = single_writer;
  return BK_OK;
}

bk_status bk_cbf_clear(bk_cbf *f) {
  BK_RETURN_IF(!f, BK_EINVAL);
  for (uint64_t i = 0; i < f->n_blocks * 8; i++)
    __atomic_store_n(&f->words[i], 0, __ATOMIC_RELAXED);
  return BK_OK;
}

void bk__cbf_census(const bk_cbf *f, uint64_t *nonzero, uint64_t *saturated) {
  uint64_t nz = 0, sat = 0;
  for (uint64_t i = 0; i < f->m; i++) {
    uint32_t v = get(f, i);
    nz += v != 0;
    sat += v == f->max;
  }
  *nonzero = nz;
  *saturated = sat;
}

bk_status bk_cbf_info_get(const bk_cbf *f, bk_cbf_info *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  memset(out, 0, sizeof *out);
  out->m_counters = f->m;
  out->k = f->k;
  out->counter_bits = f->width;
  out->layout = (bk_bloom_layout)f->layout;
  out->hash_alg = f->hash_alg;
  out->seed = f->seed;
  out->capacity = f->capacity;
  bk__cbf_census(f, &out->nonzero, &out->saturated);
  out->fill_fpp = pow((double)out->nonzero / (double)f->m, (double)f->k);
  out->memory = sizeof *f + (f->owned ? f->region.size : 0);
  return BK_OK;
}
