/* SPDX-License-Identifier: MIT */
/*
 * bk_bloom: the classic Bloom filter in a standard and a blocked layout.
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
 * add_if_absent serialises callers on one of 64 cache-line-padded spin locks
 * picked by the key's digest: two threads adding the same key take the same
 * lock, so exactly one of them sees the key absent. Plain adds need no lock:
 * a bit, once set, stays set, and each bit is set with an atomic OR.
 */
#include <math.h>

#include "bloomkit/bloom.h"
#include "bloomkit/params.h"
#include "hash_inline.h"
#include "internal.h"
#include "sync.h"

#define BLOOM_VERSION 1
#define BLOOM_HEADER_LEN (BK__PREFIX_SIZE + 32)
#define DEFAULT_FPP 0.01
#define LN2 0.69314718055994530942

struct bk_bloom {
  bk__alloc alloc;
  bk_bits bits;    /* m_bits = bits.n_bits */
  uint64_t *words; /* bits.words, hoisted */
  uint64_t m_bits;
  uint64_t n_blocks; /* blocked layout only */
  unsigned k;
  bk_bloom_layout layout;
  bk_hash_alg hash_alg; /* never BK_HASH_DEFAULT */
  uint64_t seed;
  uint64_t capacity;
  bk__region locks; /* key locks (sync.h) */
};

/* ---- probes ------------------------------------------------------------ */

#define mix64 bk__mix64

static inline uint64_t *block_of(const bk_bloom *b, bk_hash h) {
  return b->words + bk_reduce(h.lo, b->n_blocks) * 8;
}

/*
 * The blocked layout's k positions: groups of seven 9-bit slices, low bits
 * first, of x_0 = mix64(h.hi), x_{g+1} = mix64(x_g + golden). h.hi is mixed
 * for the reason given at bk__indices. Written as two loops
 * so the common k <= 7 case is a shift and a mask per bit.
 */
#define BLOCK_POSITIONS(h, k, POS_BODY)                  \
  do {                                                   \
    uint64_t grp_ = mix64((h).hi);                       \
    for (unsigned left_ = (k);;) {                       \
      uint64_t cur_ = grp_;                              \
      unsigned n_ = left_ < 7 ? left_ : 7;               \
      for (unsigned j_ = 0; j_ < n_; j_++, cur_ >>= 9) { \
        unsigned pos = (unsigned)cur_ & 511u;            \
        POS_BODY;                                        \
      }                                                  \
      left_ -= n_;                                       \
      if (!left_) break;                                 \
      grp_ = mix64(grp_ + 0x9E3779B97F4A7C15ull);        \
    }                                                    \
  } while (0)

static inline bool blocked_test(const uint64_t *blk, bk_hash h, unsigned k) {
  uint64_t all = 1;
  BLOCK_POSITIONS(h, k, {
    all &= __atomic_load_n(&blk[pos >> 6], __ATOMIC_RELAXED) >> (pos & 63);
  });
  return all & 1;
}

static inline bool blocked_contains(const bk_bloom *b, bk_hash h) {
  return blocked_test(block_of(b, h), h, b->k);
}

/* Sets the key's bits; returns true when at least one was clear. */
static inline bool blocked_add(bk_bloom *b, bk_hash h) {
  uint64_t *blk = block_of(b, h);
  uint64_t mask[8] = {0};
  BLOCK_POSITIONS(h, b->k, { mask[pos >> 6] |= (uint64_t)1 << (pos & 63); });
  bool changed = false;
  for (unsigned w = 0; w < 8; w++) {
    if (!mask[w]) continue;
    uint64_t cur = __atomic_load_n(&blk[w], __ATOMIC_RELAXED);
    if ((cur & mask[w]) != mask[w]) {
      __atomic_fetch_or(&blk[w], mask[w], __ATOMIC_RELAXED);
      changed = true;
    }
  }
  return changed;
}

/* Standard layout. Contains tests the first two probes without a branch
 * (at the design fill each is set with probability ~1/2, so a branch on the
 * first would mispredict half the time), then exits at the first clear bit. */
static inline bool standard_contains(const bk_bloom *b, bk_hash h) {
  uint64_t a = h.lo, s = mix64(h.hi);
  const uint64_t *words = b->words;
  const uint64_t m = b->m_bits;
  const unsigned k = b->k;
  uint64_t i0 = bk_reduce(a, m);
  a += s;
  s += 1;
  uint64_t all =
      __atomic_load_n(&words[i0 >> 6], __ATOMIC_RELAXED) >> (i0 & 63);
  if (k > 1) {
    uint64_t i1 = bk_reduce(a, m);
    a += s;
    s += 2;
    all &= __atomic_load_n(&words[i1 >> 6], __ATOMIC_RELAXED) >> (i1 & 63);
  }
  if (!(all & 1)) return false;
  for (unsigned i = 2; i < k; i++) {
    uint64_t idx = bk_reduce(a, m);
    if (!((__atomic_load_n(&words[idx >> 6], __ATOMIC_RELAXED) >> (idx & 63)) &
          1))
      return false;
    a += s;
    s += i + 1;
  }
  return true;
}

/* Adds compute and prefetch every word first, so the k cache misses overlap
 * instead of queueing behind each locked OR. */
static inline bool standard_add(bk_bloom *b, bk_hash h) {
  uint64_t idx[BK_K_MAX];
  uint64_t a = h.lo, s = mix64(h.hi);
  uint64_t *words = b->words;
  const unsigned k = b->k;
  for (unsigned i = 0; i < k; i++) {
    idx[i] = bk_reduce(a, b->m_bits);
    __builtin_prefetch(&words[idx[i] >> 6], 1);
    a += s;
    s += i + 1;
  }
  bool changed = false;
  for (unsigned i = 0; i < k; i++) {
    uint64_t mask = (uint64_t)1 << (idx[i] & 63);
    uint64_t *w = &words[idx[i] >> 6];
    if (!(__atomic_load_n(w, __ATOMIC_RELAXED) & mask)) {
      __atomic_fetch_or(w, mask, __ATOMIC_RELAXED);
      changed = true;
    }
  }
  return changed;
}

static inline bool probe_contains(const bk_bloom *b, bk_hash h) {
  return b->layout == BK_BLOOM_BLOCKED ? blocked_contains(b, h)
                                       : standard_contains(b, h);
}

static inline void probe_add(bk_bloom *b, bk_hash h) {
  if (b->layout == BK_BLOOM_BLOCKED)
    (void)blocked_add(b, h);
  else
    (void)standard_add(b, h);
}

/* ---- lifecycle ---------------------------------------------------------- */

static bk_status resolve_size(const bk_bloom_config *cfg, uint64_t *m_out,
                              unsigned *k_out) {
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  uint64_t m;
  unsigned k = cfg->k;
  if (cfg->m_bits) {
    m = cfg->m_bits;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
    if (!k) {
      BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
      double kd = round((double)m / (double)cfg->capacity * LN2);
      k = kd < 1.0 ? 1u : kd > BK_K_MAX ? BK_K_MAX : (unsigned)kd;
    }
  } else {
    BK_RETURN_IF(!cfg->capacity, BK_EINVAL);
    if (!k) {
      BK_TRY(bk_params_for_target(cfg->capacity, fpp, &m, &k));
    } else {
      /* k fixed: the smallest m that meets p with it. */
      BK_TRY(bk_params_m_for_k(cfg->capacity, fpp, k, &m));
    }
  }
  if (cfg->layout == BK_BLOOM_BLOCKED) {
    m = (m + BK_BLOCK_BITS - 1) / BK_BLOCK_BITS * BK_BLOCK_BITS;
    BK_RETURN_IF(m > BK_BITS_MAX, BK_EINVAL);
  }
  *m_out = m;
  *k_out = k;
  return BK_OK;
}

static bk_status bloom_new(bk_bloom **out, const bk__alloc *al, uint64_t m,
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
  s = bk__region_alloc(al, BK__KEY_LOCKS_BYTES, &b->locks);
  if (s != BK_OK) {
    bk__bits_release(&b->bits);
    bk__free(al, b);
    return s;
  }
  b->words = b->bits.words;
  b->m_bits = m;
  b->n_blocks = m / BK_BLOCK_BITS;
  b->k = k;
  b->layout = layout;
  b->hash_alg = alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : alg;
  b->seed = seed;
  b->capacity = capacity;
  *out = b;
  return BK_OK;
}

bk_status bk_bloom_create(bk_bloom **out, const bk_bloom_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(
      cfg->layout != BK_BLOOM_STANDARD && cfg->layout != BK_BLOOM_BLOCKED,
      BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  uint64_t m;
  unsigned k;
  BK_TRY(resolve_size(cfg, &m, &k));
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  return bloom_new(out, &al, m, k, cfg->layout, cfg->hash_alg, cfg->seed,
                   cfg->capacity);
}

void bk_bloom_destroy(bk_bloom *b) {
  if (!b) return;
  bk__alloc al = b->alloc;
  bk__region_free(&al, &b->locks);
  bk__bits_release(&b->bits);
  bk__free(&al, b);
}

/* ---- operations --------------------------------------------------------- */

/* The checked digest every key-taking entry point starts with; static so the
 * hot path makes no call through the PLT. */
static inline bk_status hash_key(const bk_bloom *b, const void *key, size_t len,
                                 bk_hash *out) {
  BK_RETURN_IF(!b || (!key && len), BK_EINVAL);
  BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX,
               BK_EINVAL);
  *out = bk__hash(b->hash_alg, b->seed, key, len);
  return BK_OK;
}

bk_status bk_bloom_hash(const bk_bloom *b, const void *key, size_t len,
                        bk_hash *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  return hash_key(b, key, len, out);
}

bk_status bk_bloom_add(bk_bloom *b, const void *key, size_t len) {
  bk_hash h;
  BK_TRY(hash_key(b, key, len, &h));
  probe_add(b, h);
  return BK_OK;
}

bk_status bk_bloom_add_hash(bk_bloom *b, bk_hash h) {
  BK_RETURN_IF(!b, BK_EINVAL);
  probe_add(b, h);
  return BK_OK;
}

bk_status bk_bloom_contains(const bk_bloom *b, const void *key, size_t len,
                            bool *out) {
  bk_hash h;
  BK_RETURN_IF(!out, BK_EINVAL);
  BK_TRY(hash_key(b, key, len, &h));
  *out = probe_contains(b, h);
  return BK_OK;
}

bk_status bk_bloom_contains_hash(const bk_bloom *b, bk_hash h, bool *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = probe_contains(b, h);
  return BK_OK;
}

bk_status bk_bloom_add_if_absent_hash(bk_bloom *b, bk_hash h, bool *added) {
  BK_RETURN_IF(!b || !added, BK_EINVAL);
  /* No lock-free "already present" pre-check: measured, the extra dependent
   * read before the locked writes costs ~1.5x add on filters larger than
   * the cache, while the lock itself (an L1-resident line) costs ~nothing. */
  uint32_t *lock = bk__key_lock(&b->locks, h);
  bk__spin_lock(lock);
  /* Under the key's lock no other add_if_absent of this key runs, so
   * "some bit was clear" decides newness once. */
  bool changed =
      b->layout == BK_BLOOM_BLOCKED ? blocked_add(b, h) : standard_add(b, h);
  bk__spin_unlock(lock);
  *added = changed;
  return BK_OK;
}

bk_status bk_bloom_add_if_absent(bk_bloom *b, const void *key, size_t len,
                                 bool *added) {
  bk_hash h;
  BK_RETURN_IF(!added, BK_EINVAL);
  BK_TRY(hash_key(b, key, len, &h));
  return bk_bloom_add_if_absent_hash(b, h, added);
}

/* ---- batches ----------------------------------------------------------- */

/* How far ahead of the probe the batch loops hash and prefetch: enough keys
 * to keep the core's miss buffers busy, few enough to stay in L1. */
#define BATCH_AHEAD 16u

static inline __attribute__((always_inline)) void prefetch_key(
    const bk_bloom *b, bk_hash h, int write) {
  if (b->layout == BK_BLOOM_BLOCKED) {
    if (write)
      __builtin_prefetch(block_of(b, h), 1);
    else
      __builtin_prefetch(block_of(b, h), 0);
    return;
  }
  /* Standard: the first probes decide most absent keys. */
  uint64_t a = h.lo, s = mix64(h.hi);
  unsigned n = b->k < 3 ? b->k : 3;
  for (unsigned i = 0; i < n; i++) {
    const uint64_t *w = &b->words[bk_reduce(a, b->m_bits) >> 6];
    if (write)
      __builtin_prefetch(w, 1);
    else
      __builtin_prefetch(w, 0);
    a += s;
    s += i + 1;
  }
}

static bk_status check_batch(const bk_bloom *b, const void *const *keys,
                             const size_t *lens, size_t n) {
  BK_RETURN_IF(!b, BK_EINVAL);
  if (!n) return BK_OK;
  BK_RETURN_IF(!keys || !lens, BK_EINVAL);
  for (size_t i = 0; i < n; i++) {
    BK_RETURN_IF(!keys[i] && lens[i], BK_EINVAL);
    BK_RETURN_IF(b->hash_alg == BK_HASH_MURMUR3 && lens[i] > (size_t)INT32_MAX,
                 BK_EINVAL);
  }
  return BK_OK;
}

/* Hash key i + BATCH_AHEAD while probing key i, through a ring of digests. */
#define BATCH_LOOP(b, keys, lens, n, WRITE, BODY)                             \
  do {                                                                        \
    bk_hash ring_[BATCH_AHEAD];                                               \
    size_t lead_ = (n) < BATCH_AHEAD ? (n) : BATCH_AHEAD;                     \
    for (size_t i_ = 0; i_ < lead_; i_++) {                                   \
      ring_[i_] = bk__hash((b)->hash_alg, (b)->seed, (keys)[i_], (lens)[i_]); \
      prefetch_key((b), ring_[i_], (WRITE));                                  \
    }                                                                         \
    for (size_t i = 0; i < (n); i++) {                                        \
      bk_hash h = ring_[i % BATCH_AHEAD];                                     \
      size_t next_ = i + BATCH_AHEAD;                                         \
      if (next_ < (n)) {                                                      \
        bk_hash nh_ =                                                         \
            bk__hash((b)->hash_alg, (b)->seed, (keys)[next_], (lens)[next_]); \
        ring_[i % BATCH_AHEAD] = nh_;                                         \
        prefetch_key((b), nh_, (WRITE));                                      \
      }                                                                       \
      BODY;                                                                   \
    }                                                                         \
  } while (0)

bk_status bk_bloom_contains_many(const bk_bloom *b, const void *const *keys,
                                 const size_t *lens, size_t n, bool *out) {
  BK_TRY(check_batch(b, keys, lens, n));
  BK_RETURN_IF(n && !out, BK_EINVAL);
  BATCH_LOOP(b, keys, lens, n, 0, { out[i] = probe_contains(b, h); });
  return BK_OK;
}

bk_status bk_bloom_contains_many_hash(const bk_bloom *b, const bk_hash *hashes,
                                      size_t n, bool *out) {
  BK_RETURN_IF(!b || (n && (!hashes || !out)), BK_EINVAL);
  size_t lead = n < BATCH_AHEAD ? n : BATCH_AHEAD;
  for (size_t i = 0; i < lead; i++) prefetch_key(b, hashes[i], 0);
  for (size_t i = 0; i < n; i++) {
    if (i + BATCH_AHEAD < n) prefetch_key(b, hashes[i + BATCH_AHEAD], 0);
    out[i] = probe_contains(b, hashes[i]);
  }
  return BK_OK;
}

bk_status bk_bloom_add_many(bk_bloom *b, const void *const *keys,
                            const size_t *lens, size_t n) {
  BK_TRY(check_batch(b, keys, lens, n));
  BATCH_LOOP(b, keys, lens, n, 1, { probe_add(b, h); });
  return BK_OK;
}

static bk_status check_compatible(const bk_bloom *a, const bk_bloom *c) {
  BK_RETURN_IF(!a || !c, BK_EINVAL);
  BK_RETURN_IF(a->m_bits != c->m_bits || a->k != c->k ||
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
  double m = (double)b->m_bits;
  double set = (double)bk__popcount_words(b->words, b->bits.n_words);
  if (set >= m) set = m - 0.5;
  *out = -(m / (double)b->k) * log1p(-set / m);
  return BK_OK;
}

bk_status bk_bloom_fill_fpp(const bk_bloom *b, double *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  if (b->layout == BK_BLOOM_BLOCKED) {
    /* A probe lands in a uniform block and draws k positions there with
     * replacement: the exact mean of (fill of the block)^k. */
    double total = 0.0;
    for (uint64_t blk = 0; blk < b->n_blocks; blk++) {
      uint64_t set = bk__popcount_words(b->words + blk * 8, 8);
      total += pow((double)set / BK_BLOCK_BITS, (double)b->k);
    }
    *out = total / (double)b->n_blocks;
    return BK_OK;
  }
  double set = (double)bk__popcount_words(b->words, b->bits.n_words);
  *out = pow(set / (double)b->m_bits, (double)b->k);
  return BK_OK;
}

bk_status bk_bloom_info_get(const bk_bloom *b, bk_bloom_info *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  out->m_bits = b->m_bits;
  out->k = b->k;
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

/* ---- serialized form -----------------------------------------------------
 * Parameters after the 24-byte prefix (header length 56):
 *   24  u64  m_bits
 *   32  u64  capacity (informational; 0 when sized by m and k)
 *   40  u8   layout (0 standard, 1 blocked)
 *   41  u8   hash algorithm (1 XXH3, 2 Murmur3)
 *   42  u8   k (1..64)
 *   43  u8   reserved, zero
 *   44  u32  reserved, zero
 *   48  u64  seed
 * Payload: the bit array, ceil(m / 64) little-endian u64 words, bits past m
 * zero. */
bk_status bk_bloom_serialized_size(const bk_bloom *b, size_t *out) {
  BK_RETURN_IF(!b || !out, BK_EINVAL);
  *out = BLOOM_HEADER_LEN + (size_t)b->bits.n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_bloom_serialize(const bk_bloom *b, void *buf, size_t cap,
                             size_t *written) {
  size_t need;
  BK_RETURN_IF(!buf || !written, BK_EINVAL);
  BK_TRY(bk_bloom_serialized_size(b, &need));
  BK_RETURN_IF(cap < need, BK_EINVAL);
  unsigned char *p = buf;
  bk__format_write_prefix(p, BLOOM_VERSION, BK__TYPE_BLOOM, BLOOM_HEADER_LEN,
                          b->bits.n_words * 8);
  bk__store_le64(p + 24, b->m_bits);
  bk__store_le64(p + 32, b->capacity);
  p[40] = (unsigned char)b->layout;
  p[41] = (unsigned char)b->hash_alg;
  p[42] = (unsigned char)b->k;
  p[43] = 0;
  bk__store_le32(p + 44, 0);
  bk__store_le64(p + 48, b->seed);
  bk__words_store(p + BLOOM_HEADER_LEN, b->words, b->bits.n_words);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

bk_status bk_bloom_deserialize(const void *buf, size_t len,
                               const bk_allocator *allocator, bk_bloom **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BLOOM, BLOOM_VERSION,
                         BLOOM_HEADER_LEN, &v));
  const unsigned char *p = v.params - BK__PREFIX_SIZE; /* absolute offsets */
  uint64_t m = bk__load_le64(p + 24);
  uint64_t capacity = bk__load_le64(p + 32);
  unsigned layout = p[40], alg = p[41], k = p[42];
  uint64_t seed = bk__load_le64(p + 48);
  BK_RETURN_IF(p[43] != 0 || bk__load_le32(p + 44) != 0, BK_ECORRUPT);
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX, BK_ECORRUPT);
  BK_RETURN_IF(k == 0 || k > BK_K_MAX, BK_ECORRUPT);
  BK_RETURN_IF(layout != BK_BLOOM_STANDARD && layout != BK_BLOOM_BLOCKED,
               BK_ECORRUPT);
  BK_RETURN_IF(layout == BK_BLOOM_BLOCKED && m % BK_BLOCK_BITS != 0,
               BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid((bk_hash_alg)alg, seed), BK_ECORRUPT);
  uint64_t n_words = (m + 63) / 64;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  uint64_t last = bk__load_le64(v.payload + (n_words - 1) * 8);
  BK_RETURN_IF((m & 63) && (last >> (m & 63)) != 0, BK_ECORRUPT);

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bloom *b;
  BK_TRY(bloom_new(&b, &al, m, k, (bk_bloom_layout)layout, (bk_hash_alg)alg,
                   seed, capacity));
  bk__words_load(b->words, v.payload, n_words);
  *out = b;
  return BK_OK;
}
