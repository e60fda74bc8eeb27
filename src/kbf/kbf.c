/* SPDX-License-Identifier: MIT */
/*
 * bk_kbf: the key-value Bloom filter (include/bloomkit/kbf.h): cells, the
 * seven operations of Sec. 3.4 (Algorithms 2-5), decoding (Sec. 3.5,
 * Algorithms 6-7), the value table and the s-kBF (Sec. 3.3).
 *
 * Positions: a key's k positions are bk__indices over the cell count at
 * create (enhanced double hashing), taken mod the cell count now: a
 * compress folds cell p + m/2 onto p, so p mod m/2 is where that cell went.
 * The k positions are a multiset: when two coincide, INSERT visits the cell
 * twice (counter + 2, the encoding cancels), exactly as the paper's loop
 * does, so a fold of an insert is the insert into the fold. A query uses a
 * cell only when the position occurs once.
 *
 * Decoding returns a value only when the cells agree: every counter-1 cell
 * holds the same assigned encoding e, and every 2-cell (counter 2, XOR not
 * 0) is e ^ (an assigned encoding). That is what any stored key's cells
 * look like, so it never turns a stored key into "absent", and it makes a
 * false positive rarer than the paper's first-counter-1-cell rule.
 */
#include <math.h>
#include <string.h>

#include "bloomkit/params.h"
#include "core/hash_fast.h"
#include "kbf/kbf_internal.h"

/* "kbf": the s-kBF's seed is seed ^ this. A load re-derives it, so it is
 * format; the s-kBF and the main cells share no array (neither reads a
 * position of the other) and encodings come from value order, so
 * the related seeds correlate nothing (docs/design/kbf.md, "Derived
 * seeds"). */
#define SKBF_SEED_DOMAIN 0x6B6266u

/* ---- cells -------------------------------------------------------------- */

static inline uint64_t cell_get(const bk_kbf *f, const bk__kbf_cells *c,
                                uint64_t i) {
  return f->cell_bits == 32 ? ((const uint32_t *)c->data)[i]
                            : ((const uint64_t *)c->data)[i];
}
static inline void cell_set(const bk_kbf *f, bk__kbf_cells *c, uint64_t i,
                            uint64_t w) {
  if (f->cell_bits == 32)
    ((uint32_t *)c->data)[i] = (uint32_t)w;
  else
    ((uint64_t *)c->data)[i] = w;
}
static inline uint32_t cnt_of(const bk_kbf *f, uint64_t w) {
  return (uint32_t)(w >> f->enc_shift);
}
static inline uint64_t enc_of(const bk_kbf *f, uint64_t w) {
  return w & f->enc_mask;
}
static inline uint64_t make_cell(const bk_kbf *f, uint32_t cnt, uint64_t e) {
  return (uint64_t)cnt << f->enc_shift | e;
}

static inline void positions(const bk__kbf_cells *c, bk_hash h, uint64_t *idx) {
  bk__indices(h, c->k, c->m_created, idx);
  if (c->level)
    for (unsigned i = 0; i < c->k; i++) idx[i] %= c->m;
}

/* Occurrences of idx[i] among the k positions. */
static inline unsigned multiplicity(const uint64_t *idx, unsigned k,
                                    unsigned i) {
  unsigned n = 0;
  for (unsigned j = 0; j < k; j++) n += idx[j] == idx[i];
  return n;
}

/* Whether two of the k positions coincide. A 64-bin bitmap of the
 * positions' low bits marks the candidates: only a position whose bin is
 * already taken (about one per key at k = 13) is compared with those
 * before it, so this costs about 5k instructions, not k^2 / 2 compares. */
static inline bool any_repeat(const uint64_t *idx, unsigned k) {
  uint64_t bins = 0;
  bool any = false;
  for (unsigned i = 0; i < k; i++) {
    const uint64_t bit = (uint64_t)1 << (idx[i] & 63);
    if (bins & bit)
      for (unsigned j = 0; j < i; j++) any |= idx[i] == idx[j];
    bins |= bit;
  }
  return any;
}

/* Algorithm 2 on one filter: every occurrence counts (saturating) and XORs. */
static void cells_insert(bk_kbf *f, bk__kbf_cells *c, const uint64_t *idx,
                         uint64_t e) {
  const uint32_t max = f->counter_max;
  for (unsigned i = 0; i < c->k; i++) {
    const uint64_t w = cell_get(f, c, idx[i]);
    uint32_t n = cnt_of(f, w);
    if (n != max) n++;
    cell_set(f, c, idx[i], make_cell(f, n, enc_of(f, w) ^ e));
  }
}

/* ---- the value table ----------------------------------------------------- */

/* The index of encoding e, or -1 (Sec. 3.6). */
static inline int64_t lookup(const bk_kbf *f, uint64_t e) {
  if (f->inverse == BK_KBF_INVERSE_BINARY)
    return bk_kbf_binary_find(f->enc, f->n_values, e);
  const uint64_t x = e >> f->pool.t;
  if (x == 0 || x > f->n_values) return -1;
  return f->enc[x - 1] == e ? (int64_t)(x - 1) : -1;
}

/* decode2: the two assigned indices whose encodings XOR to v. */
static inline bool split(const bk_kbf *f, uint64_t v, uint32_t *a,
                         uint32_t *b) {
  uint32_t x, y;
  if (!bk__kbf_pool_split(&f->pool, v, &x, &y)) return false;
  if (y > f->n_values) return false; /* x < y: both assigned */
  *a = x - 1;
  *b = y - 1;
  return true;
}

static inline bool is_pair(const bk_kbf *f, uint64_t v) {
  uint32_t a, b;
  return split(f, v, &a, &b);
}

bool bk__kbf_is_pair(const bk_kbf *f, uint64_t v) {
  return is_pair(f, v);
}

/* ---- decoding (Algorithms 6 and 7) --------------------------------------- */

typedef struct decoded {
  bk_kbf_result result;
  uint32_t index;
} decoded;

#define QUEUE_MAX 64

static decoded decode_cells(const bk_kbf *f, const bk__kbf_cells *c,
                            const uint64_t *idx, bk_kbf_decode option) {
  const unsigned k = c->k;
  uint64_t w[BK_K_MAX];
  decoded d = {BK_KBF_ABSENT, 0};
  /* All k cells are read (the checks below use every one), so start
   * their cache misses together. */
  const unsigned char *base = c->data;
  const unsigned width = f->cell_bits / 8;
  for (unsigned i = 0; i < k; i++)
    __builtin_prefetch(base + idx[i] * width, 0, 3);
  for (unsigned i = 0; i < k; i++) {
    w[i] = cell_get(f, c, idx[i]);
    if (cnt_of(f, w[i]) == 0) return d; /* some cell empty */
  }
  /* Whether any position repeats (rare: then each cell's multiplicity is
   * counted below), after the empty-cell exit so an absent key skips it.
   * Counting every cell's multiplicity (k^2 compares, 169 at k = 13) was
   * most of a stored key's query in instructions. */
  const bool repeats = any_repeat(idx, k);
  uint64_t one = 0, q2[QUEUE_MAX], q3[QUEUE_MAX];
  unsigned n1 = 0, n2 = 0, n3 = 0;
  for (unsigned i = 0; i < k; i++) {
    const uint32_t n = cnt_of(f, w[i]);
    const uint64_t v = enc_of(f, w[i]);
    if (n > 3 || (n > 1 && v == 0)) continue;
    if (repeats && multiplicity(idx, k, i) != 1) {
      if (n == 1) return d; /* two of its positions, one encoding: absent */
      continue;
    }
    if (n == 1) {
      if (n1 && v != one) return d; /* two keys' cells: not this key */
      one = v;
      n1++;
    } else if (n == 2) {
      q2[n2++] = v;
    } else {
      q3[n3++] = v;
    }
  }
  int64_t e_index = -1;
  if (n1) {
    e_index = lookup(f, one);
    if (e_index < 0) return d; /* no value is encoded so */
  } else if (n2 >= 2) {
    /* decode22: two different 2-cells share exactly the key's encoding. */
    unsigned j = 1;
    while (j < n2 && q2[j] == q2[0]) j++;
    if (j < n2) {
      uint32_t a, b, x, y;
      if (!split(f, q2[0], &a, &b) || !split(f, q2[j], &x, &y)) return d;
      if (a == x || a == y)
        e_index = a;
      else if (b == x || b == y)
        e_index = b;
      else
        return d; /* no common encoding: not this key's cells */
    }
  }
  if (e_index < 0 && n2 >= 1 && n3 >= 1 && option == BK_KBF_DECODE_23) {
    /* decode23 (Algorithm 7): V1 = ei ^ ej, V3 = ei ^ em ^ en. */
    uint32_t a, b;
    if (!split(f, q2[0], &a, &b)) return d;
    for (unsigned j = 0; j < n3 && e_index < 0; j++) {
      const uint64_t v3 = q3[j];
      /* A 3-cell that is one encoding had two equal values cancel: it
       * cannot tell which encoding is the key's. */
      if (lookup(f, v3) >= 0) continue;
      if (lookup(f, q2[0] ^ v3) >= 0) break; /* two common encodings */
      const bool in5 = is_pair(f, f->enc[a] ^ v3);
      const bool in6 = is_pair(f, f->enc[b] ^ v3);
      if (in5 != in6) e_index = in5 ? a : b;
    }
  }
  if (e_index < 0) {
    d.result = BK_KBF_UNDECODABLE;
    return d;
  }
  /* Every 2-cell must hold the key's encoding and one other. */
  const uint64_t e = f->enc[e_index];
  for (unsigned j = 0; j < n2; j++)
    if (lookup(f, q2[j] ^ e) < 0) return d;
  d.result = BK_KBF_FOUND;
  d.index = (uint32_t)e_index;
  return d;
}

/* ---- values (Sec. 3.3) ----------------------------------------------------
 */

static bk_hash value_hash(const bk_kbf *f, const void *value, size_t len) {
  return bk__hash_fast(f->hash_alg, f->skbf.seed, value, len);
}

static bool value_equals(const bk_kbf *f, uint32_t i, const void *value,
                         size_t len) {
  return f->len[i] == len &&
         (len == 0 || memcmp(f->arena + f->off[i], value, len) == 0);
}

/* The exact index beside the s-kBF. The s-kBF answers "which encoding has
 * this value" as the paper has it, but it may fail to decode (its cells
 * shared with other values) or meet a false positive; interning then used
 * to append the value again under a new encoding, and every such append
 * loaded the s-kBF further: repeated inserts of a few values could fill
 * the table (3000 keys over 90 values filled 127 encodings for 1 seed in
 * 16). The index makes a value's encoding unique: the s-kBF is asked
 * first, the index decides. */
static bool slot_find(const bk_kbf *f, const void *value, size_t len,
                      bk_hash vh, uint32_t *out) {
  if (!f->slot) return false;
  for (uint64_t j = vh.lo & f->slot_mask;; j = (j + 1) & f->slot_mask) {
    const uint32_t s = f->slot[j];
    if (s == 0) return false;
    if (value_equals(f, s - 1, value, len)) {
      *out = s - 1;
      return true;
    }
  }
}

static void slot_put(uint32_t *slot, uint32_t mask, uint64_t h, uint32_t i) {
  uint64_t j = h & mask;
  while (slot[j]) j = (j + 1) & mask;
  slot[j] = i + 1;
}

/* Room for `more_values` values and `more_bytes` bytes; nothing changes on
 * failure. */
static bk_status reserve_values(bk_kbf *f, uint32_t more_values,
                                size_t more_bytes) {
  const bk__alloc *al = &f->alloc;
  if ((uint64_t)f->n_values + more_values > f->values_cap) {
    uint64_t cap = f->values_cap ? (uint64_t)f->values_cap * 2 : 16;
    while (cap < (uint64_t)f->n_values + more_values) cap *= 2;
    if (cap > f->max_values) cap = f->max_values;
    uint64_t slots = 2;
    while (slots < 2 * cap) slots *= 2; /* cap < 2^29: slots - 1 fits 32 bits */
    uint64_t *enc = bk__malloc(al, (size_t)cap * sizeof *enc);
    uint64_t *off = bk__malloc(al, (size_t)cap * sizeof *off);
    uint32_t *len = bk__malloc(al, (size_t)cap * sizeof *len);
    uint32_t *slot = bk__calloc(al, (size_t)slots, sizeof *slot);
    if (!enc || !off || !len || !slot) {
      bk__free(al, enc);
      bk__free(al, off);
      bk__free(al, len);
      bk__free(al, slot);
      return BK_ENOMEM;
    }
    for (uint32_t i = 0; i < f->n_values; i++) {
      const bk_hash vh = value_hash(f, f->arena + f->off[i], f->len[i]);
      slot_put(slot, (uint32_t)(slots - 1), vh.lo, i);
    }
    if (f->n_values) {
      memcpy(enc, f->enc, f->n_values * sizeof *enc);
      memcpy(off, f->off, f->n_values * sizeof *off);
      memcpy(len, f->len, f->n_values * sizeof *len);
    }
    bk__free(al, f->enc);
    bk__free(al, f->off);
    bk__free(al, f->len);
    bk__free(al, f->slot);
    f->enc = enc;
    f->off = off;
    f->len = len;
    f->slot = slot;
    f->slot_mask = (uint32_t)(slots - 1);
    f->values_cap = (uint32_t)cap;
  }
  size_t need;
  BK_RETURN_IF(!bk__add_ok(f->arena_len, more_bytes, &need), BK_ENOMEM);
  if (need > f->arena_cap) {
    size_t cap = f->arena_cap ? f->arena_cap : 256;
    while (cap < need) {
      BK_RETURN_IF(!bk__mul_ok(cap, 2, &cap), BK_ENOMEM);
    }
    unsigned char *a = bk__malloc(al, cap);
    BK_RETURN_IF(!a, BK_ENOMEM);
    if (f->arena_len) memcpy(a, f->arena, f->arena_len);
    bk__free(al, f->arena);
    f->arena = a;
    f->arena_cap = cap;
  }
  return BK_OK;
}

/* Append a value (room reserved) with the next encoding, into the s-kBF. */
static uint32_t append_value(bk_kbf *f, const void *value, size_t len,
                             bk_hash vh) {
  const uint32_t i = f->n_values;
  f->enc[i] = bk__kbf_pool_encoding(&f->pool, i);
  f->off[i] = f->arena_len;
  f->len[i] = (uint32_t)len;
  if (len) memcpy(f->arena + f->arena_len, value, len);
  f->arena_len += len;
  f->n_values = i + 1;
  slot_put(f->slot, f->slot_mask, vh.lo, i);
  uint64_t idx[BK_K_MAX];
  positions(&f->skbf, vh, idx);
  cells_insert(f, &f->skbf, idx, f->enc[i]);
  return i;
}

/* The s-kBF's answer for a value, checked against the table's bytes. */
static int64_t find_value(const bk_kbf *f, const void *value, size_t len,
                          bk_hash vh) {
  uint64_t idx[BK_K_MAX];
  positions(&f->skbf, vh, idx);
  decoded d = decode_cells(f, &f->skbf, idx, BK_KBF_DECODE_23);
  if (d.result == BK_KBF_FOUND && value_equals(f, d.index, value, len))
    return d.index;
  return -1;
}

bk_status bk_kbf_intern(bk_kbf *f, const void *value, size_t len,
                        uint32_t *index) {
  BK_RETURN_IF(!f || !index || (!value && len), BK_EINVAL);
  BK_RETURN_IF(len > UINT32_MAX, BK_EINVAL);
  const bk_hash vh = value_hash(f, value, len);
  const int64_t at = find_value(f, value, len, vh);
  if (at >= 0) {
    *index = (uint32_t)at;
    return BK_OK;
  }
  /* Not found in the s-kBF, a false positive there, or not decodable
   * there: the exact index decides whether the value is new. */
  if (slot_find(f, value, len, vh, index)) return BK_OK;
  BK_RETURN_IF(f->n_values >= f->max_values, BK_EFULL);
  BK_TRY(reserve_values(f, 1, len));
  *index = append_value(f, value, len, vh);
  return BK_OK;
}

bk_status bk_kbf_value(const bk_kbf *f, uint32_t index, const void **value,
                       size_t *len) {
  BK_RETURN_IF(!f, BK_EINVAL);
  BK_RETURN_IF(index >= f->n_values, BK_ERANGE);
  if (value) *value = f->arena + f->off[index];
  if (len) *len = f->len[index];
  return BK_OK;
}

/* ---- create ----------------------------------------------------------------
 */

static size_t cells_bytes(const bk_kbf *f, uint64_t m) {
  return (size_t)m * (f->cell_bits / 8);
}

bk_status bk__kbf_cells_alloc(bk_kbf *f, bk__kbf_cells *c, uint64_t m) {
  bk__region r;
  BK_TRY(bk__region_alloc(&f->alloc, cells_bytes(f, m), &r));
  c->region = r;
  c->data = r.data;
  return BK_OK;
}

void bk__kbf_free(bk_kbf *f) {
  bk__alloc al = f->alloc;
  if (f->main.data) bk__region_free(&al, &f->main.region);
  if (f->skbf.data) bk__region_free(&al, &f->skbf.region);
  bk__free(&al, f->enc);
  bk__free(&al, f->off);
  bk__free(&al, f->len);
  bk__free(&al, f->slot);
  bk__free(&al, f->arena);
  bk__free(&al, f);
}

/* Shape from a config (no allocation). */
bk_status bk__kbf_resolve(const bk_kbf_config *cfg, uint64_t fpp_e18,
                          bk_kbf *f) {
  const unsigned cell_bits = cfg->cell_bits ? cfg->cell_bits : 32;
  BK_RETURN_IF(cell_bits != 32 && cell_bits != 64, BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  BK_RETURN_IF(cfg->k > BK_K_MAX, BK_EINVAL);
  BK_RETURN_IF(cfg->decode > BK_KBF_DECODE_23, BK_EINVAL);
  BK_RETURN_IF(cfg->inverse > BK_KBF_INVERSE_BINARY, BK_EINVAL);
  const uint32_t want = cfg->max_values ? cfg->max_values : 4095;
  const unsigned t = bk_kbf_pool_t(want);
  BK_RETURN_IF(t > (cell_bits == 32 ? BK__KBF_T_MAX_32 : BK__KBF_T_MAX_64),
               BK_EINVAL);
  if (fpp_e18) {
    f->fpp_e18 = fpp_e18;
  } else {
    const double fpp_in = cfg->fpp == 0.0 ? 0.01 : cfg->fpp;
    BK_RETURN_IF(!(fpp_in >= 1e-18 && fpp_in < 1.0), BK_EINVAL);
    f->fpp_e18 = (uint64_t)llround(fpp_in * 1e18);
  }
  BK_RETURN_IF(f->fpp_e18 == 0 || f->fpp_e18 >= 1000000000000000000ull,
               BK_EINVAL);
  const double fpp = (double)f->fpp_e18 / 1e18;
  uint64_t m;
  unsigned k = cfg->k;
  f->capacity = 0;
  if (cfg->m_cells) {
    BK_RETURN_IF(k == 0 || cfg->m_cells > BK__KBF_CELLS_MAX, BK_EINVAL);
    m = cfg->m_cells;
  } else {
    BK_RETURN_IF(cfg->capacity == 0 || cfg->capacity > BK__KBF_CELLS_MAX,
                 BK_EINVAL);
    if (k)
      BK_TRY(bk_params_m_for_k(cfg->capacity, fpp, k, &m));
    else
      BK_TRY(bk_params_for_target(cfg->capacity, fpp, &m, &k));
    BK_RETURN_IF(m > BK__KBF_CELLS_MAX, BK_EINVAL);
    f->capacity = cfg->capacity;
  }
  f->cell_bits = cell_bits;
  f->enc_shift = cell_bits == 32 ? 29u : 56u;
  f->enc_mask = ((uint64_t)1 << f->enc_shift) - 1;
  f->counter_max = cell_bits == 32 ? 7u : 255u;
  bk__kbf_pool_init(&f->pool, t);
  f->max_values = (uint32_t)(((uint64_t)1 << t) - 1);
  f->decode = cfg->decode ? cfg->decode : BK_KBF_DECODE_23;
  f->inverse = cfg->inverse ? cfg->inverse : BK_KBF_INVERSE_DIRECT;
  f->hash_alg = cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  f->main = (bk__kbf_cells){.m = m, .m_created = m, .k = k, .seed = cfg->seed};
  /* The s-kBF: sized for every value of the pool at the same fpp. */
  uint64_t ms;
  unsigned ks;
  BK_TRY(bk_params_for_target(f->max_values, fpp, &ms, &ks));
  f->skbf = (bk__kbf_cells){
      .m = ms, .m_created = ms, .k = ks, .seed = cfg->seed ^ SKBF_SEED_DOMAIN};
  return BK_OK;
}

bk_status bk_kbf_create(bk_kbf **out, const bk_kbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_kbf shape;
  memset(&shape, 0, sizeof shape);
  BK_TRY(bk__kbf_resolve(cfg, 0, &shape));
  bk_kbf *f = bk__calloc(&al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  *f = shape;
  f->alloc = al;
  f->main.data = f->skbf.data = NULL;
  bk_status s = bk__kbf_cells_alloc(f, &f->main, f->main.m);
  if (s == BK_OK) s = bk__kbf_cells_alloc(f, &f->skbf, f->skbf.m);
  if (s != BK_OK) {
    bk__kbf_free(f);
    return s;
  }
  *out = f;
  return BK_OK;
}

void bk_kbf_destroy(bk_kbf *f) {
  if (f) bk__kbf_free(f);
}

bk_status bk_kbf_hash(const bk_kbf *f, const void *key, size_t len,
                      bk_hash *out) {
  BK_RETURN_IF(!f || !out || (!key && len), BK_EINVAL);
  *out = bk__hash_fast(f->hash_alg, f->main.seed, key, len);
  return BK_OK;
}

/* ---- the operations (Sec. 3.4) ------------------------------------------- */

bk_status bk_kbf_insert_index_hash(bk_kbf *f, bk_hash h, uint32_t index) {
  BK_RETURN_IF(!f, BK_EINVAL);
  BK_RETURN_IF(index >= f->n_values, BK_ERANGE);
  uint64_t idx[BK_K_MAX];
  positions(&f->main, h, idx);
  cells_insert(f, &f->main, idx, f->enc[index]);
  f->n_keys++;
  return BK_OK;
}

bk_status bk_kbf_insert(bk_kbf *f, const void *key, size_t len,
                        const void *value, size_t value_len) {
  BK_RETURN_IF(!f || (!key && len), BK_EINVAL);
  uint32_t index;
  BK_TRY(bk_kbf_intern(f, value, value_len, &index));
  return bk_kbf_insert_index_hash(
      f, bk__hash_fast(f->hash_alg, f->main.seed, key, len), index);
}

bk_status bk_kbf_query_index_hash(const bk_kbf *f, bk_hash h,
                                  bk_kbf_result *result, uint32_t *index) {
  BK_RETURN_IF(!f || !result, BK_EINVAL);
  uint64_t idx[BK_K_MAX];
  positions(&f->main, h, idx);
  decoded d = decode_cells(f, &f->main, idx, f->decode);
  *result = d.result;
  if (d.result == BK_KBF_FOUND && index) *index = d.index;
  return BK_OK;
}

bk_status bk_kbf_query(const bk_kbf *f, const void *key, size_t len,
                       bk_kbf_result *result, const void **value,
                       size_t *value_len) {
  BK_RETURN_IF(!f || !result || (!key && len), BK_EINVAL);
  uint32_t index = 0;
  BK_TRY(bk_kbf_query_index_hash(
      f, bk__hash_fast(f->hash_alg, f->main.seed, key, len), result, &index));
  if (*result == BK_KBF_FOUND) return bk_kbf_value(f, index, value, value_len);
  return BK_OK;
}

/* Whether the key's cells can hold encoding e once per position: checked
 * before a delete writes anything. */
static bool delete_possible(const bk_kbf *f, const uint64_t *idx, uint64_t e) {
  const unsigned k = f->main.k;
  for (unsigned i = 0; i < k; i++) {
    const uint64_t w = cell_get(f, &f->main, idx[i]);
    const uint32_t n = cnt_of(f, w);
    if (n == f->counter_max) continue; /* saturated: count unknown */
    const unsigned mult = multiplicity(idx, k, i);
    if (n < mult) return false;
    const uint64_t rest = enc_of(f, w) ^ (mult & 1 ? e : 0);
    if (n == mult && rest != 0) return false;
    if (n == mult + 1 && lookup(f, rest) < 0) return false;
    if (n == mult + 2 && rest != 0 && !is_pair(f, rest)) return false;
  }
  return true;
}

bk_status bk_kbf_delete_index_hash(bk_kbf *f, bk_hash h, uint32_t index) {
  BK_RETURN_IF(!f, BK_EINVAL);
  BK_RETURN_IF(index >= f->n_values, BK_ENOTFOUND);
  uint64_t idx[BK_K_MAX];
  positions(&f->main, h, idx);
  const uint64_t e = f->enc[index];
  BK_RETURN_IF(!delete_possible(f, idx, e), BK_ENOTFOUND);
  for (unsigned i = 0; i < f->main.k; i++) {
    const uint64_t w = cell_get(f, &f->main, idx[i]);
    uint32_t n = cnt_of(f, w);
    if (n != f->counter_max) n--;
    cell_set(f, &f->main, idx[i], make_cell(f, n, enc_of(f, w) ^ e));
  }
  if (f->n_keys) f->n_keys--;
  return BK_OK;
}

static bk_status found_index(const bk_kbf *f, bk_hash h, uint32_t *index) {
  bk_kbf_result r;
  BK_TRY(bk_kbf_query_index_hash(f, h, &r, index));
  BK_RETURN_IF(r == BK_KBF_ABSENT, BK_ENOTFOUND);
  BK_RETURN_IF(r == BK_KBF_UNDECODABLE, BK_EUNDECODABLE);
  return BK_OK;
}

bk_status bk_kbf_delete_hash(bk_kbf *f, bk_hash h) {
  BK_RETURN_IF(!f, BK_EINVAL);
  uint32_t index;
  BK_TRY(found_index(f, h, &index));
  return bk_kbf_delete_index_hash(f, h, index);
}

bk_status bk_kbf_delete(bk_kbf *f, const void *key, size_t len) {
  BK_RETURN_IF(!f || (!key && len), BK_EINVAL);
  return bk_kbf_delete_hash(f,
                            bk__hash_fast(f->hash_alg, f->main.seed, key, len));
}

/* Algorithm 5: the counters stay, the encodings swap. */
static void swap_encoding(bk_kbf *f, bk_hash h, uint64_t old_e,
                          uint64_t new_e) {
  uint64_t idx[BK_K_MAX];
  positions(&f->main, h, idx);
  for (unsigned i = 0; i < f->main.k; i++) {
    const uint64_t w = cell_get(f, &f->main, idx[i]);
    cell_set(f, &f->main, idx[i], w ^ old_e ^ new_e);
  }
}

bk_status bk_kbf_update_index_hash(bk_kbf *f, bk_hash h, uint32_t index) {
  BK_RETURN_IF(!f, BK_EINVAL);
  BK_RETURN_IF(index >= f->n_values, BK_ERANGE);
  uint32_t old;
  BK_TRY(found_index(f, h, &old));
  swap_encoding(f, h, f->enc[old], f->enc[index]);
  return BK_OK;
}

bk_status bk_kbf_update(bk_kbf *f, const void *key, size_t len,
                        const void *value, size_t value_len) {
  BK_RETURN_IF(!f || (!key && len) || (!value && value_len), BK_EINVAL);
  const bk_hash h = bk__hash_fast(f->hash_alg, f->main.seed, key, len);
  uint32_t old, index;
  BK_TRY(found_index(f, h, &old));
  BK_TRY(bk_kbf_intern(f, value, value_len, &index));
  swap_encoding(f, h, f->enc[old], f->enc[index]);
  return BK_OK;
}

/* ---- JOIN and COMPRESS ------------------------------------------------------
 */

static inline uint64_t join_cell(const bk_kbf *f, uint64_t a, uint64_t b) {
  const uint32_t max = f->counter_max;
  const uint32_t na = cnt_of(f, a), nb = cnt_of(f, b);
  const uint32_t n = na == max || nb == max || na + nb >= max ? max : na + nb;
  return make_cell(f, n, enc_of(f, a) ^ enc_of(f, b));
}

static bool same_cells_shape(const bk__kbf_cells *a, const bk__kbf_cells *b) {
  return a->m == b->m && a->m_created == b->m_created && a->k == b->k &&
         a->seed == b->seed;
}

bk_status bk_kbf_join(bk_kbf *dst, const bk_kbf *src) {
  BK_RETURN_IF(!dst || !src || dst == src, BK_EINVAL);
  BK_RETURN_IF(!same_cells_shape(&dst->main, &src->main) ||
                   !same_cells_shape(&dst->skbf, &src->skbf) ||
                   dst->cell_bits != src->cell_bits ||
                   dst->pool.t != src->pool.t || dst->hash_alg != src->hash_alg,
               BK_EMISMATCH);
  const uint32_t common =
      dst->n_values < src->n_values ? dst->n_values : src->n_values;
  for (uint32_t i = 0; i < common; i++)
    BK_RETURN_IF(!value_equals(dst, i, src->arena + src->off[i], src->len[i]),
                 BK_EMISMATCH);
  if (src->n_values > dst->n_values) {
    const uint32_t more = src->n_values - dst->n_values;
    const size_t bytes = src->arena_len - (size_t)src->off[dst->n_values];
    BK_TRY(reserve_values(dst, more, bytes));
    /* The s-kBF is what the longer table's replay made: src's. */
    memcpy(dst->skbf.data, src->skbf.data, cells_bytes(dst, dst->skbf.m));
    for (uint32_t i = dst->n_values; i < src->n_values; i++) {
      dst->enc[i] = src->enc[i];
      dst->off[i] = dst->arena_len;
      dst->len[i] = src->len[i];
      if (src->len[i])
        memcpy(dst->arena + dst->arena_len, src->arena + src->off[i],
               src->len[i]);
      dst->arena_len += src->len[i];
      const bk_hash vh = value_hash(dst, src->arena + src->off[i], src->len[i]);
      slot_put(dst->slot, dst->slot_mask, vh.lo, i);
    }
    dst->n_values = src->n_values;
  }
  for (uint64_t i = 0; i < dst->main.m; i++)
    cell_set(dst, &dst->main, i,
             join_cell(dst, cell_get(dst, &dst->main, i),
                       cell_get(src, &src->main, i)));
  dst->n_keys += src->n_keys;
  return BK_OK;
}

bk_status bk_kbf_compress(bk_kbf *f) {
  BK_RETURN_IF(!f, BK_EINVAL);
  BK_RETURN_IF(f->main.m % 2 != 0, BK_ESTATE);
  const uint64_t half = f->main.m / 2;
  bk__kbf_cells c = f->main;
  BK_TRY(bk__kbf_cells_alloc(f, &c, half));
  for (uint64_t i = 0; i < half; i++)
    cell_set(f, &c, i,
             join_cell(f, cell_get(f, &f->main, i),
                       cell_get(f, &f->main, i + half)));
  bk__region_free(&f->alloc, &f->main.region);
  c.m = half;
  c.level++;
  f->main = c;
  return BK_OK;
}

/* ---- info -------------------------------------------------------------------
 */

bk_status bk_kbf_info_get(const bk_kbf *f, bk_kbf_info *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  memset(out, 0, sizeof *out);
  out->m_cells = f->main.m;
  out->m_created = f->main.m_created;
  out->compressions = f->main.level;
  out->k = f->main.k;
  out->cell_bits = f->cell_bits;
  out->counter_bits = f->cell_bits - f->enc_shift;
  out->encoding_bits = 2 * f->pool.t;
  out->max_values = f->max_values;
  out->n_values = f->n_values;
  out->n_keys = f->n_keys;
  out->capacity = f->capacity;
  for (uint64_t i = 0; i < f->main.m; i++) {
    const uint32_t n = cnt_of(f, cell_get(f, &f->main, i));
    out->nonzero += n != 0;
    out->saturated += n == f->counter_max;
    out->load[n < 3 ? n : 3]++;
  }
  out->rho = bk_kbf_rho(f->n_keys, f->main.k, f->main.m);
  out->decode = f->decode;
  out->inverse = f->inverse;
  out->hash_alg = f->hash_alg;
  out->seed = f->main.seed;
  out->memory_cells = cells_bytes(f, f->main.m);
  out->memory_skbf = cells_bytes(f, f->skbf.m);
  out->memory_values = f->arena_len + (size_t)f->n_values * 20 +
                       (size_t)(f->slot ? f->slot_mask + 1u : 0) * 4;
  return BK_OK;
}

bk_status bk_kbf_cell_counters_hash(const bk_kbf *f, bk_hash h,
                                    uint8_t *counters, size_t cap,
                                    size_t *written) {
  BK_RETURN_IF(!f || !counters || !written || cap < f->main.k, BK_EINVAL);
  uint64_t idx[BK_K_MAX];
  positions(&f->main, h, idx);
  for (unsigned i = 0; i < f->main.k; i++)
    counters[i] = (uint8_t)cnt_of(f, cell_get(f, &f->main, idx[i]));
  *written = f->main.k;
  return BK_OK;
}

/* ---- shared with kbf_io.c ------------------------------------------------ */

bool bk__kbf_find_value(const bk_kbf *f, const void *value, size_t len) {
  uint32_t i;
  return slot_find(f, value, len, value_hash(f, value, len), &i);
}

void bk__kbf_append_value(bk_kbf *f, const void *value, size_t len) {
  (void)append_value(f, value, len, value_hash(f, value, len));
}

bk_status bk__kbf_reserve_values(bk_kbf *f, uint32_t n, size_t bytes) {
  return reserve_values(f, n, bytes);
}

bool bk__kbf_lookup_ok(const bk_kbf *f, uint64_t e) {
  return lookup(f, e) >= 0;
}
