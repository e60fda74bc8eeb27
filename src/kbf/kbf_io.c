/* SPDX-License-Identifier: MIT */
/*
 * bk_kbf's serialized form (type tag 12, version 1). The blob carries the
 * value table, the main cells and the s-kBF's cells; the loader replays the
 * table into a fresh s-kBF (a value gets a new encoding only when the
 * s-kBF did not already give its bytes) and requires the stored s-kBF to be
 * exactly that, then checks every main cell against what INSERT, UPDATE,
 * DELETE, JOIN and COMPRESS can leave in a cell (docs/design/kbf.md, 3.11d).
 *
 *   24 u64 m_created      32 u64 capacity      40 u64 seed
 *   48 u64 fpp (1e-18)    56 u64 n_keys        64 u64 m of the s-kBF
 *   72 u32 n_values       76 u32 max_values    80 u64 value bytes
 *   88 u8 k   89 u8 k of the s-kBF   90 u8 cell bits   91 u8 compressions
 *   92 u8 t   93 u8 decode   94 u8 inverse   95 u8 hash_alg
 *   96 u64 reserved (0)
 * Payload: n_values u32 lengths, the value bytes, the main cells, the
 * s-kBF's cells (u32 or u64 each, little-endian).
 */
#include <string.h>

#include "bloomkit/params.h"
#include "kbf/kbf_internal.h"

#define KBF_VERSION 1
#define KBF_HEADER_LEN (BK__PREFIX_SIZE + 80u)

static size_t payload_bytes(const bk_kbf *f) {
  return (size_t)f->n_values * 4 + f->arena_len +
         (size_t)(f->main.m + f->skbf.m) * (f->cell_bits / 8);
}

bk_status bk_kbf_serialized_size(const bk_kbf *f, size_t *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = KBF_HEADER_LEN + payload_bytes(f) + BK__TRAILER_SIZE;
  return BK_OK;
}

static unsigned char *store_cells(const bk_kbf *f, const bk__kbf_cells *c,
                                  unsigned char *q) {
  if (f->cell_bits == 32) {
    const uint32_t *w = c->data;
    for (uint64_t i = 0; i < c->m; i++, q += 4) bk__store_le32(q, w[i]);
  } else {
    const uint64_t *w = c->data;
    for (uint64_t i = 0; i < c->m; i++, q += 8) bk__store_le64(q, w[i]);
  }
  return q;
}

bk_status bk_kbf_serialize(const bk_kbf *f, void *buf, size_t cap,
                           size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_kbf_serialized_size(f, &need), need, buf, cap, written);
  unsigned char *p = buf;
  const size_t payload = payload_bytes(f);
  bk__format_write_prefix(p, KBF_VERSION, BK__TYPE_KBF, KBF_HEADER_LEN,
                          payload);
  bk__store_le64(p + 24, f->main.m_created);
  bk__store_le64(p + 32, f->capacity);
  bk__store_le64(p + 40, f->main.seed);
  bk__store_le64(p + 48, f->fpp_e18);
  bk__store_le64(p + 56, f->n_keys);
  bk__store_le64(p + 64, f->skbf.m);
  bk__store_le32(p + 72, f->n_values);
  bk__store_le32(p + 76, f->max_values);
  bk__store_le64(p + 80, f->arena_len);
  p[88] = (unsigned char)f->main.k;
  p[89] = (unsigned char)f->skbf.k;
  p[90] = (unsigned char)f->cell_bits;
  p[91] = (unsigned char)f->main.level;
  p[92] = (unsigned char)f->pool.t;
  p[93] = (unsigned char)f->decode;
  p[94] = (unsigned char)f->inverse;
  p[95] = (unsigned char)f->hash_alg;
  bk__store_le64(p + 96, 0);
  unsigned char *q = p + KBF_HEADER_LEN;
  for (uint32_t i = 0; i < f->n_values; i++, q += 4)
    bk__store_le32(q, f->len[i]);
  if (f->arena_len) memcpy(q, f->arena, f->arena_len);
  q += f->arena_len;
  q = store_cells(f, &f->main, q);
  q = store_cells(f, &f->skbf, q);
  bk__format_write_trailer(p, KBF_HEADER_LEN + payload);
  *written = need;
  return BK_OK;
}

static inline uint64_t load_cell(const bk_kbf *f, const unsigned char *q,
                                 uint64_t i) {
  return f->cell_bits == 32 ? bk__load_le32(q + 4 * i)
                            : bk__load_le64(q + 8 * i);
}

/* A GF(2) basis of the assigned encodings: a cell's XOR must lie in their
 * span. Rows with distinct top bits. */
typedef struct span {
  uint64_t row[64];
  unsigned n;
} span;

static uint64_t span_reduce(const span *s, uint64_t v) {
  for (unsigned j = 0; j < s->n; j++) {
    const unsigned top = 63u - (unsigned)__builtin_clzll(s->row[j]);
    if (v >> top & 1) v ^= s->row[j];
  }
  return v;
}

static void span_add(span *s, uint64_t v) {
  v = span_reduce(s, v);
  if (!v) return;
  const unsigned top = 63u - (unsigned)__builtin_clzll(v);
  for (unsigned j = 0; j < s->n; j++)
    if (s->row[j] >> top & 1) s->row[j] ^= v;
  s->row[s->n++] = v;
}

/* The main cells: what operations can leave (docs/design/kbf.md 3.11d). */
static bool main_cells_ok(const bk_kbf *f, const unsigned char *q,
                          uint64_t n_keys) {
  span s = {{0}, 0};
  for (uint32_t i = 0; i < f->n_values && s.n < 2 * f->pool.t; i++)
    span_add(&s, f->enc[i]);
  const uint64_t pool_mask = ((uint64_t)1 << (2 * f->pool.t)) - 1;
  uint64_t sum = 0, saturated = 0;
  for (uint64_t i = 0; i < f->main.m; i++) {
    const uint64_t w = load_cell(f, q, i);
    const uint32_t n = (uint32_t)(w >> f->enc_shift);
    const uint64_t e = w & f->enc_mask;
    if (e & ~pool_mask) return false;
    if (span_reduce(&s, e) != 0) return false;
    if (n == 0 && e != 0) return false;
    if (n == 1 && !bk__kbf_lookup_ok(f, e)) return false;
    if (n == 2 && e != 0 && !bk__kbf_is_pair(f, e)) return false;
    if (n == f->counter_max)
      saturated++;
    else
      sum += n;
  }
  /* Without a saturated counter every insert and delete moved the sum by
   * exactly k. */
  if (!saturated) {
    bk__u128 want = (bk__u128)n_keys * f->main.k;
    if (want != sum) return false;
  }
  return true;
}

bk_status bk_kbf_deserialize(const void *buf, size_t len,
                             const bk_allocator *allocator, bk_kbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(
      bk__format_open(buf, len, BK__TYPE_KBF, KBF_VERSION, KBF_HEADER_LEN, &v));
  const unsigned char *p = buf;
  const uint64_t m_created = bk__load_le64(p + 24);
  const uint64_t capacity = bk__load_le64(p + 32);
  const uint64_t seed = bk__load_le64(p + 40);
  const uint64_t fpp_e18 = bk__load_le64(p + 48);
  const uint64_t n_keys = bk__load_le64(p + 56);
  const uint64_t m_skbf = bk__load_le64(p + 64);
  const uint32_t n_values = bk__load_le32(p + 72);
  const uint32_t max_values = bk__load_le32(p + 76);
  const uint64_t arena_len = bk__load_le64(p + 80);
  const unsigned k = p[88], k_skbf = p[89], cell_bits = p[90], level = p[91],
                 t = p[92], decode = p[93], inverse = p[94], alg = p[95];
  BK_RETURN_IF(bk__load_le64(p + 96) != 0, BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(decode < BK_KBF_DECODE_22 || decode > BK_KBF_DECODE_23 ||
                   inverse < BK_KBF_INVERSE_DIRECT ||
                   inverse > BK_KBF_INVERSE_BINARY,
               BK_ECORRUPT);
  BK_RETURN_IF(k == 0 || k > BK_K_MAX, BK_ECORRUPT);
  BK_RETURN_IF(cell_bits != 32 && cell_bits != 64, BK_ECORRUPT);
  BK_RETURN_IF(
      t < 2 || t > (cell_bits == 32 ? BK__KBF_T_MAX_32 : BK__KBF_T_MAX_64),
      BK_ECORRUPT);
  BK_RETURN_IF(
      max_values != (uint32_t)(((uint64_t)1 << t) - 1) || n_values > max_values,
      BK_ECORRUPT);
  BK_RETURN_IF(m_created == 0 || m_created > BK__KBF_CELLS_MAX ||
                   capacity > BK__KBF_CELLS_MAX,
               BK_ECORRUPT);
  BK_RETURN_IF(fpp_e18 == 0 || fpp_e18 >= 1000000000000000000ull, BK_ECORRUPT);
  BK_RETURN_IF(level >= 40 || (m_created & (((uint64_t)1 << level) - 1)),
               BK_ECORRUPT);
  /* The shape create makes of these parameters (pool, s-kBF, and m and k
   * from the capacity when there is one). */
  bk_kbf shape;
  memset(&shape, 0, sizeof shape);
  const bk_kbf_config cfg = {.capacity = capacity,
                             .m_cells = capacity ? 0 : m_created,
                             .k = capacity ? 0 : k,
                             .cell_bits = cell_bits,
                             .max_values = max_values,
                             .decode = (bk_kbf_decode)decode,
                             .inverse = (bk_kbf_inverse)inverse,
                             .hash_alg = (bk_hash_alg)alg,
                             .seed = seed};
  BK_RETURN_IF(bk__kbf_resolve(&cfg, fpp_e18, &shape) != BK_OK, BK_ECORRUPT);
  /* A capacity-sized filter may also have been given k: then m follows
   * from it; accept either way create could have made it. */
  if (capacity && (shape.main.k != k || shape.main.m_created != m_created)) {
    bk_kbf_config cfg_k = cfg; /* the same, but k given */
    cfg_k.k = k;
    memset(&shape, 0, sizeof shape);
    BK_RETURN_IF(bk__kbf_resolve(&cfg_k, fpp_e18, &shape) != BK_OK,
                 BK_ECORRUPT);
    BK_RETURN_IF(shape.main.m_created != m_created, BK_ECORRUPT);
  }
  BK_RETURN_IF(shape.skbf.m != m_skbf || shape.skbf.k != k_skbf, BK_ECORRUPT);
  shape.main.level = level;
  shape.main.m = m_created >> level;
  /* The payload is exactly what the parameters say. */
  const uint64_t cb = cell_bits / 8;
  bk__u128 want = (bk__u128)n_values * 4 + arena_len +
                  (bk__u128)(shape.main.m + m_skbf) * cb;
  BK_RETURN_IF(want != v.payload_len, BK_ECORRUPT);
  const unsigned char *lens = v.payload;
  const unsigned char *bytes = lens + (size_t)n_values * 4;
  const unsigned char *main_cells = bytes + arena_len;
  const unsigned char *skbf_cells = main_cells + shape.main.m * cb;
  uint64_t total = 0;
  for (uint32_t i = 0; i < n_values; i++) total += bk__load_le32(lens + 4 * i);
  BK_RETURN_IF(total != arena_len, BK_ECORRUPT);

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_kbf *f = bk__calloc(&al, 1, sizeof *f);
  BK_RETURN_IF(!f, BK_ENOMEM);
  *f = shape;
  f->alloc = al;
  f->capacity = capacity;
  f->main.data = f->skbf.data = NULL;
  bk_status s = bk__kbf_cells_alloc(f, &f->main, f->main.m);
  if (s == BK_OK) s = bk__kbf_cells_alloc(f, &f->skbf, f->skbf.m);
  if (s == BK_OK && n_values)
    s = bk__kbf_reserve_values(f, n_values, (size_t)arena_len);
  if (s != BK_OK) goto fail;
  s = BK_ECORRUPT;
  /* Replay the table. */
  const unsigned char *at = bytes;
  for (uint32_t i = 0; i < n_values; i++) {
    const uint32_t l = bk__load_le32(lens + 4 * i);
    if (bk__kbf_find_value(f, at, l)) goto fail; /* would not be new */
    bk__kbf_append_value(f, at, l);
    at += l;
  }
  for (uint64_t i = 0; i < f->skbf.m; i++) {
    const uint64_t w = load_cell(f, skbf_cells, i);
    const uint64_t have = cell_bits == 32 ? ((uint32_t *)f->skbf.data)[i]
                                          : ((uint64_t *)f->skbf.data)[i];
    if (w != have) goto fail;
  }
  if (!main_cells_ok(f, main_cells, n_keys)) goto fail;
  for (uint64_t i = 0; i < f->main.m; i++) {
    const uint64_t w = load_cell(f, main_cells, i);
    if (cell_bits == 32)
      ((uint32_t *)f->main.data)[i] = (uint32_t)w;
    else
      ((uint64_t *)f->main.data)[i] = w;
  }
  f->n_keys = n_keys;
  *out = f;
  return BK_OK;
fail:
  bk__kbf_free(f);
  return s;
}
