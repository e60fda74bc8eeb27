/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom: the classic Bloom filter in three layouts: standard, blocked
 * and split-block.
 *
 * Standard: the k indices of a key are bk_hash_indices(h, k, m) (enhanced
 * double hashing + range reduction) anywhere in the m-bit array.
 *
 * Blocked: one 512-bit block (a 64-byte cache line) per key, chosen by
 * reduce(h.lo, m / 512); inside it, k bit positions of 9 bits each are cut
 * from x = mix64(h.hi), low bits first, seven per 64-bit word; after every
 * seven the word is re-mixed (mix64(x + 0x9E3779B97F4A7C15)) for the next:
 *
 *      x: [63] [62..54] [53..45] [44..36] [35..27] [26..18] [17..9] [8..0]
 *          -    pos 6    pos 5    pos 4    pos 3    pos 2    pos 1  pos 0
 *
 * Positions are drawn with replacement, which is what the false positive
 * formula (bk_params_fpp_blocked) assumes.
 *
 * Split-block (the Apache Parquet Split Block Bloom Filter, parquet-format
 * BloomFilter.md): 256-bit blocks of eight 32-bit words. Of the digest only
 * the 64-bit word h = h.lo counts (XXH64 seed 0 makes it Parquet's hash):
 *
 *      h: [63 ........... 32] [31 ............ 0]
 *          block selector       key
 *      block = ((h >> 32) * n_blocks) >> 32           (multiply-shift)
 *      word i of the block gets bit (key * SALT[i]) >> 27, i = 0 .. 7
 *
 * so every key sets exactly one bit in each of the eight words (k = 8). In
 * the u64 words of bk_bits, 32-bit word 2j is the low and 2j+1 the high
 * half of word j of the block (four u64 per block), which on the wire is
 * the little-endian bitset Parquet writes. Two code paths compute it: a
 * portable one and an AVX2 one (one vpmulld, a shift and a vpsllvd for all
 * eight masks; bloom_avx2.c), chosen at create by cpuid; tests compare
 * them bit for bit.
 *
 * With single_writer one thread adds at a time: a word is a relaxed load
 * and a relaxed store, no locked instruction and no key lock (see the
 * single-writer section of bloom_internal.h).
 *
 * Concurrent adds: standard needs no lock (a bit, once set, stays set, and
 * each word is set with an atomic OR); its add_if_absent serialises callers
 * on one of 64 cache-line-padded spin locks picked by the key's digest: two
 * threads adding the same key take the same lock, so exactly one of them
 * sees the key absent. Blocked and split-block adds take their block's
 * lock, which serves add_if_absent too (see "block locks" in
 * bloom_internal.h).
 *
 * The files of bk_bloom: this one (create, single keys, the choice of
 * bodies, whole-filter operations), bloom_avx2.c (split-block with AVX2),
 * bloom_batch.c (the batch calls), bloom_io.c (serialized form, Parquet)
 * and bloom_internal.h (the struct and the probes they share).
 */
#include <math.h>

#include "bloom_internal.h"

#define DEFAULT_FPP 0.01
#define LN2 0.69314718055994530942

/* The number of block locks of a filter of n_blocks blocks: a power of two,
 * one per 16 blocks, at least 16 (one cache line) and at most 16384
 * (64 KiB): enough lines that threads adding at random rarely share one. */
static uint64_t block_lock_count(uint64_t n_blocks) {
  uint64_t n = 16;
  while (n < n_blocks / 16 && n < 16384) n <<= 1;
  return n;
}

/* ---- single-key bodies ---------------------------------------------------
 * One body per configuration, chosen by select_paths (why, and the macros
 * that write them: "single-key paths" in bloom_internal.h; the AVX2
 * split-block ones are in bloom_avx2.c). Hashes without an inlined digest
 * take the generic bodies. */

static bk_status contains_generic(const bk_bloom *b, const void *key,
                                  size_t len, bool *out) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = probe_contains(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status add_generic(bk_bloom *b, const void *key, size_t len) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  (void)probe_add(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status aia_generic(bk_bloom *b, const void *key, size_t len,
                             bool *added) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *added = probe_add(b, bk__hash(b->hash_alg, b->seed, key, len));
  return BK_OK;
}

static bk_status add_if_absent_keylocked(bk_bloom *b, const void *key,
                                         size_t len, bool *added);

#define NO_ATTR
KEY_BODIES(std_x3, digest_xxh3, standard_contains, standard_add,
           standard_add_sw, NO_ATTR)
KEY_BODIES(blk_x3, digest_xxh3, blocked_contains, blocked_add, blocked_add_sw,
           NO_ATTR)
KEY_BODIES(split_x3, digest_xxh3, split_contains, split_add, split_add_sw,
           NO_ATTR)
KEY_BODIES(split_x64, digest_xxh64, split_contains, split_add, split_add_sw,
           NO_ATTR)
/* The filter's bodies for its configuration as it stands now. */
static void select_paths(bk_bloom *b) {
  bk__bloom_paths p = {contains_generic, add_generic, add_generic, aia_generic,
                       aia_generic};
  const bool x3 = b->hash_alg == BK_HASH_XXH3;
  const bool x64 = b->hash_alg == BK_HASH_XXH64;
  switch (b->layout) {
    case BK_BLOOM_SPLIT_BLOCK:
#ifdef BK_SPLIT_AVX2
      if (b->simd) {
        (void)bk__bloom_avx2_paths(b->hash_alg, &p);
        break;
      }
#endif
      if (x3) p = KEY_PATHS(split_x3);
      if (x64) p = KEY_PATHS(split_x64);
      break;
    case BK_BLOOM_BLOCKED:
      if (x3) p = KEY_PATHS(blk_x3);
      break;
    default:
      if (x3) p = KEY_PATHS(std_x3);
      break;
  }
  b->contains_key = p.contains;
  b->add_key = b->single_writer ? p.add_sw : p.add;
  /* An add's "a bit was clear" is add_if_absent's answer where no other
   * add of the key can interleave: a single writer, or a block layout,
   * whose adds decide it under the block's lock. Concurrent standard
   * filters take a key lock around it. */
  b->add_if_absent_key = b->single_writer ? p.aia_sw
                         : b->layout != BK_BLOOM_STANDARD
                             ? p.aia
                             : add_if_absent_keylocked;
  /* The header's inline path: any layout with an inlined digest; adds on a
   * single-writer split-block filter. */
  const uint32_t digest = x3    ? BK__INLINE_XXH3
                          : x64 ? BK__INLINE_XXH64
                                : BK__INLINE_NONE;
  b->head.inline_find =
      digest ? BK__INLINE_KIND(b->layout, digest) : BK__INLINE_NONE;
  b->head.inline_add = b->single_writer && b->layout == BK_BLOOM_SPLIT_BLOCK
                           ? b->head.inline_find
                           : BK__INLINE_NONE;
  /* The seed's part of the inline digest (bk__digest8 in bloom_inline.h). */
  b->head.hash_k =
      x3 ? UINT64_C(0xC4F023344DC994AC) +
               (b->seed ^ (uint64_t)__builtin_bswap32((uint32_t)b->seed) << 32)
         : b->seed + UINT64_C(0x27D4EB2F165667C5) + 8;
}

/* The header's inline path reads the head at the start of the filter. */
_Static_assert(offsetof(struct bk_bloom, head) == 0,
               "bk__bloom_head must be the first member of bk_bloom");

/* ---- lifecycle ---------------------------------------------------------- */

typedef struct layout_rate {
  bk_bloom_layout layout;
  unsigned k;
  uint64_t capacity;
} layout_rate;

static bk_status layout_rate_of(uint64_t m, const void *ctx, double *out) {
  const layout_rate *r = ctx;
  if (r->layout == BK_BLOOM_SPLIT_BLOCK)
    return bk_params_fpp_split_block(m, r->capacity, out);
  return bk_params_fpp_blocked(m, r->k, r->capacity, out);
}

uint64_t bk__bloom_layout_unit(bk_bloom_layout layout) {
  return layout == BK_BLOOM_SPLIT_BLOCK ? BK_SPLIT_BLOCK_BITS
         : layout == BK_BLOOM_BLOCKED   ? BK_BLOCK_BITS
                                        : 1;
}

static bk_status resolve_size(const bk_bloom_config *cfg, uint64_t *m_out,
                              unsigned *k_out) {
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  const bool split = cfg->layout == BK_BLOOM_SPLIT_BLOCK;
  /* Split-block sets one bit in each of its eight words: k is 8. */
  BK_RETURN_IF(split && cfg->k != 0 && cfg->k != 8, BK_EINVAL);
  const uint64_t unit = bk__bloom_layout_unit(cfg->layout);
  uint64_t m;
  unsigned k = split ? 8 : cfg->k;
  if (cfg->m_bits) {
    m = cfg->m_bits;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
    if (!k) {
      BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
      double kd = round((double)m / (double)cfg->capacity * LN2);
      k = kd < 1.0 ? 1u : kd > BK_K_MAX ? BK_K_MAX : (unsigned)kd;
    }
    m = (m + unit - 1) / unit * unit;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
  } else {
    BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
    if (!k) {
      BK_TRY(bk_params_for_target(cfg->capacity, fpp, &m, &k));
    } else {
      /* k fixed: the smallest m that meets p with it. */
      BK_TRY(bk_params_m_for_k(cfg->capacity, fpp, k, &m));
    }
    if (unit > 1) {
      /* A block layout has a higher rate than the standard one at the same
       * m: from the standard m upwards to the first whole number of blocks
       * whose own rate meets fpp (docs/design/bloom.md 5.7). */
      layout_rate r = {cfg->layout, k, cfg->capacity};
      BK_TRY(bk__m_search(m, unit, BK_BITS_MAX, fpp, layout_rate_of, &r, &m));
    }
  }
  *m_out = m;
  *k_out = k;
  return BK_OK;
}

bk_status bk__bloom_new(bk_bloom **out, const bk__alloc *al, uint64_t m,
                        unsigned k, bk_bloom_layout layout, bk_hash_alg alg,
                        uint64_t seed, uint64_t capacity) {
  bk_bloom *b = bk__calloc(al, 1, sizeof *b);
  BK_RETURN_IF(!b, BK_ENOMEM);
  b->alloc = *al;
  bk_status s = bk__bits_init(&b->bits, m, al);
  if (s != BK_OK) {
    bk__free(al, b);
    return s;
  }
  /* Standard: the key locks of add_if_absent; the block layouts: one lock
   * per group of blocks (see "block locks" in bloom_internal.h). */
  uint64_t n_locks = 0;
  unsigned lock_shift = 0;
  if (layout == BK_BLOOM_SPLIT_BLOCK) {
    n_locks = block_lock_count(m / BK_SPLIT_BLOCK_BITS);
    lock_shift = 2; /* 4 words a block */
  } else if (layout == BK_BLOOM_BLOCKED) {
    n_locks = block_lock_count(m / BK_BLOCK_BITS);
    lock_shift = 3; /* 8 words a block */
  }
  s = bk__region_alloc(
      al, n_locks ? n_locks * sizeof(uint32_t) : BK__KEY_LOCKS_BYTES,
      &b->locks);
  if (s != BK_OK) {
    bk__bits_release(&b->bits);
    bk__free(al, b);
    return s;
  }
  b->head.words = b->bits.words;
  b->head.m_bits = m;
  b->head.n_blocks = layout == BK_BLOOM_SPLIT_BLOCK ? m / BK_SPLIT_BLOCK_BITS
                                                    : m / BK_BLOCK_BITS;
  b->block_lock_mask = n_locks ? n_locks - 1 : 0;
  b->block_lock_shift = lock_shift;
  b->simd = layout == BK_BLOOM_SPLIT_BLOCK && bk__bloom_cpu_has_avx2();
  b->head.k = k;
  b->layout = layout;
  b->hash_alg = alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : alg;
  b->seed = seed;
  b->capacity = capacity;
  select_paths(b);
  *out = b;
  return BK_OK;
}

bk_status bk_bloom_create(bk_bloom **out, const bk_bloom_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(cfg->layout != BK_BLOOM_STANDARD &&
                   cfg->layout != BK_BLOOM_BLOCKED &&
                   cfg->layout != BK_BLOOM_SPLIT_BLOCK,
               BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid_any(cfg->hash_alg, cfg->seed), BK_EINVAL);
  uint64_t m;
  unsigned k;
  BK_TRY(resolve_size(cfg, &m, &k));
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  BK_TRY(bk__bloom_new(out, &al, m, k, cfg->layout, cfg->hash_alg, cfg->seed,
                       cfg->capacity));
  (*out)->single_writer = cfg->single_writer;
  select_paths(*out);
  return BK_OK;
}

bk_status bk_bloom_set_single_writer(bk_bloom *b, bool single_writer) {
  BK_RETURN_IF(!b, BK_EINVAL);
  b->single_writer = single_writer;
  select_paths(b);
  return BK_OK;
}

void bk_bloom_destroy(bk_bloom *b) {
  if (!b) return;
  bk__alloc al = b->alloc;
  bk__region_free(&al, &b->locks);
  bk__bits_release(&b->bits);
  bk__free(&al, b);
}

/* Tests only (declared in internal.h): run a split-block filter on the AVX2
 * path (on = true, where the CPU has it) or the portable one. Returns
 * whether the AVX2 path is now in use. */
bool bk__bloom_use_simd(bk_bloom *b, bool on) {
  b->simd = on && b->layout == BK_BLOOM_SPLIT_BLOCK && bk__bloom_cpu_has_avx2();
  select_paths(b);
  return b->simd;
}

/* ---- operations --------------------------------------------------------- */

/* The checked digest every key-taking entry point starts with; static so the
 * hot path makes no call through the PLT. */
static inline bk_status hash_key(const bk_bloom *b, const void *key, size_t len,
                                 bk_hash *out) {
  BK_RETURN_IF(!b || (!key && len), BK_EINVAL);
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = bloom_hash(b, key, len);
  return BK_OK;
}

bk_status bk_bloom_hash(const bk_bloom *b, const void *key, size_t len,
                        bk_hash *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  return hash_key(b, key, len, out);
}

bk_status bk_bloom_add(bk_bloom *b, const void *key, size_t len) {
  if (BK_UNLIKELY(!b || (!key && len))) return BK_EINVAL;
  return b->add_key(b, key, len);
}

bk_status bk_bloom_add_hash(bk_bloom *b, bk_hash h) {
  BK_RETURN_IF(!b, BK_EINVAL);
  (void)probe_add(b, h);
  return BK_OK;
}

bk_status bk_bloom_contains(const bk_bloom *b, const void *key, size_t len,
                            bool *out) {
  if (BK_UNLIKELY(!b || !out || (!key && len))) return BK_EINVAL;
  return b->contains_key(b, key, len, out);
}

bk_status bk_bloom_contains_hash(const bk_bloom *b, bk_hash h, bool *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = probe_contains(b, h);
  return BK_OK;
}

/* A concurrent standard filter's add_if_absent: the key's lock around the
 * add. No lock-free "already present" pre-check: measured, the extra
 * dependent read before the locked writes costs ~1.5x add on filters
 * larger than the cache, while the lock itself (an L1-resident line) costs
 * ~nothing. Under the key's lock no other add_if_absent of this key runs,
 * so "some bit was clear" decides newness once. */
static inline bool standard_add_keylocked(bk_bloom *b, bk_hash h) {
  uint32_t *lock = bk__key_lock(&b->locks, h);
  bk__spin_lock(lock);
  bool changed = standard_add(b, h);
  bk__spin_unlock(lock);
  return changed;
}

bk_status bk_bloom_add_if_absent_hash(bk_bloom *b, bk_hash h, bool *added) {
  BK_RETURN_IF(!b || !added, BK_EINVAL);
  /* The only adding thread, or a block layout, whose concurrent adds decide
   * "some bit was clear" under the block's lock: exact without a key
   * lock. */
  *added = b->single_writer || b->layout != BK_BLOOM_STANDARD
               ? probe_add(b, h)
               : standard_add_keylocked(b, h);
  return BK_OK;
}

/* Concurrent standard filters, any hash: the body the other configurations
 * get from ADD_PATH, with the key lock (hash inlined as in bloom_hash). */
static bk_status add_if_absent_keylocked(bk_bloom *b, const void *key,
                                         size_t len, bool *added) {
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *added = standard_add_keylocked(b, bloom_hash(b, key, len));
  return BK_OK;
}

/* Through the filter's add_if_absent_key (select_paths): the add body
 * itself wherever its answer is exact. */
bk_status bk_bloom_add_if_absent(bk_bloom *b, const void *key, size_t len,
                                 bool *added) {
  if (BK_UNLIKELY(!b || !added || (!key && len))) return BK_EINVAL;
  return b->add_if_absent_key(b, key, len, added);
}

static bk_status check_compatible(const bk_bloom *a, const bk_bloom *c) {
  BK_RETURN_IF(!a || !c, BK_EINVAL);
  BK_RETURN_IF(a->head.m_bits != c->head.m_bits || a->head.k != c->head.k ||
                   a->layout != c->layout || a->hash_alg != c->hash_alg ||
                   a->seed != c->seed,
               BK_EMISMATCH);
  return BK_OK;
}

bk_status bk_bloom_merge(bk_bloom *dst, const bk_bloom *src) {
  BK_TRY(check_compatible(dst, src));
  return bk_bits_union(&dst->bits, &src->bits);
}

bk_status bk_bloom_intersect(bk_bloom *dst, const bk_bloom *src) {
  BK_TRY(check_compatible(dst, src));
  return bk_bits_intersect(&dst->bits, &src->bits);
}

bk_status bk_bloom_cardinality(const bk_bloom *b, double *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  double m = (double)b->head.m_bits;
  double set = (double)bk__popcount_words(b->head.words, b->bits.n_words);
  if (set >= m) set = m - 0.5;
  *out = -(m / (double)b->head.k) * log1p(-set / m);
  return BK_OK;
}

bk_status bk_bloom_fill_fpp(const bk_bloom *b, double *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  if (b->layout == BK_BLOOM_SPLIT_BLOCK) {
    /* A probe lands in a uniform block and needs its one bit in each of the
     * eight words: the mean over blocks of the product of word fills. */
    double total = 0.0;
    for (uint64_t blk = 0; blk < b->head.n_blocks; blk++) {
      double hit = 1.0;
      for (unsigned j = 0; j < SPLIT_WORDS64; j++) {
        uint64_t w = __atomic_load_n(&b->head.words[blk * SPLIT_WORDS64 + j],
                                     __ATOMIC_RELAXED);
        hit *= (double)__builtin_popcount((uint32_t)w) / 32.0 *
               ((double)__builtin_popcount((uint32_t)(w >> 32)) / 32.0);
      }
      total += hit;
    }
    *out = total / (double)b->head.n_blocks;
    return BK_OK;
  }
  if (b->layout == BK_BLOOM_BLOCKED) {
    /* A probe lands in a uniform block and draws k positions there with
     * replacement: the exact mean of (fill of the block)^k. */
    double total = 0.0;
    for (uint64_t blk = 0; blk < b->head.n_blocks; blk++) {
      uint64_t set = bk__popcount_words(b->head.words + blk * 8, 8);
      total += pow((double)set / BK_BLOCK_BITS, (double)b->head.k);
    }
    *out = total / (double)b->head.n_blocks;
    return BK_OK;
  }
  double set = (double)bk__popcount_words(b->head.words, b->bits.n_words);
  *out = pow(set / (double)b->head.m_bits, (double)b->head.k);
  return BK_OK;
}

bk_status bk_bloom_info_get(const bk_bloom *b, bk_bloom_info *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  out->m_bits = b->head.m_bits;
  out->k = b->head.k;
  out->layout = b->layout;
  out->hash_alg = b->hash_alg;
  out->seed = b->seed;
  out->capacity = b->capacity;
  out->memory = sizeof *b + b->bits.region.size + b->locks.size;
  return BK_OK;
}

bk_status bk_bloom_clear(bk_bloom *b) {
  BK_RETURN_IF(!b, BK_EINVAL);
  return bk_bits_clear_all(&b->bits);
}
