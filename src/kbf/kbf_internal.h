/* SPDX-License-Identifier: MIT */
/*
 * Private to src/kbf: the bk_kbf struct, the cell layout, and the calls its
 * files share (encodings.c, kbf.c, kbf_io.c).
 *
 * A cell (Sec. 3.4), 32-bit as the paper:
 *
 *    31  29 28                                                0
 *   +------+---------------------------------------------------+
 *   | cnt  |  XOR of the encodings stored here (29 bits)       |
 *   +------+---------------------------------------------------+
 *
 * and 64-bit: an 8-bit counter in bits 63..56 over a 56-bit XOR. A pool of
 * width P = 2t uses the low P bits; the bits between are always zero. A
 * counter at its maximum (7 or 255) is saturated and stays there: its count
 * is lost, its XOR is still kept exactly, and decoding never uses it.
 */
#ifndef BLOOMKIT_SRC_KBF_KBF_INTERNAL_H
#define BLOOMKIT_SRC_KBF_KBF_INTERNAL_H

#include "bloomkit/kbf.h"
#include "core/hash_fast.h"
#include "core/internal.h"

#define BK__KBF_CELLS_MAX ((uint64_t)1 << 36)
#define BK__KBF_T_MAX_32 14u /* 2t <= 29 */
#define BK__KBF_T_MAX_64 24u /* values up to 2^24 - 1 */

/* The GF(2^t) pool: x -> x * 2^t + x^3, and what decode2 needs to solve
 * w^2 + w = c (a linear map of GF(2)^t; rows in echelon form). */
typedef struct bk__kbf_pool {
  unsigned t;
  uint32_t poly; /* irreducible, degree t, bit t set */
  unsigned n_rows;
  uint32_t row_image[32]; /* L(u) for the preimage u below; distinct tops */
  uint32_t row_pre[32];
} bk__kbf_pool;

/* Exported (BK_API) for the tests only; no compatibility promise. */
/* Lowest-weight (then smallest) irreducible polynomial of degree t. */
BK_API uint32_t bk__kbf_irreducible(unsigned t);
BK_API bool bk__kbf_is_irreducible(uint32_t poly, unsigned t);
BK_API void bk__kbf_pool_init(bk__kbf_pool *p, unsigned t);
BK_API uint64_t bk__kbf_pool_encoding(const bk__kbf_pool *p, uint32_t index);
/* decode2 (Sec. 3.5) in closed form: the x != y, both nonzero, with
 * e(x) ^ e(y) = v, or false. x < y. O(t). */
BK_API bool bk__kbf_pool_split(const bk__kbf_pool *p, uint64_t v, uint32_t *x,
                               uint32_t *y);

/* One filter's cells (the main kBF or the s-kBF). */
typedef struct bk__kbf_cells {
  void *data; /* uint32_t[m] or uint64_t[m]; region.data */
  bk__region region;
  uint64_t m;         /* cells now */
  uint64_t m_created; /* cells at create: positions are taken in it */
  unsigned level;     /* compressions: m = m_created >> level */
  unsigned k;
  uint64_t seed;
} bk__kbf_cells;

struct bk_kbf {
  bk__alloc alloc;
  bk__kbf_cells main;
  bk__kbf_cells skbf; /* keyed by value */
  unsigned cell_bits;
  unsigned enc_shift; /* 29 or 56: where the counter starts */
  uint64_t enc_mask;
  uint32_t counter_max;
  bk__kbf_pool pool;
  uint32_t max_values; /* 2^t - 1 */
  bk_kbf_decode decode;
  bk_kbf_inverse inverse;
  bk_hash_alg hash_alg;
  uint64_t capacity;
  uint64_t fpp_e18; /* fpp in units of 1e-18 (0 when sized by m, k) */
  uint64_t n_keys;
  /* the value table: index i has encoding enc[i] and bytes
   * arena[off[i] .. off[i] + len[i]) */
  uint32_t n_values, values_cap;
  uint64_t *enc;
  uint64_t *off;
  uint32_t *len;
  unsigned char *arena;
  size_t arena_len, arena_cap;
  /* exact value -> index: open addressing by the value's hash, a slot holds
   * index + 1 (0: empty), 2 slots per table entry (rebuilt as it grows) */
  uint32_t *slot;
  uint32_t slot_mask;
};

/* kbf.c, for kbf_io.c */
bk_status bk__kbf_resolve(const bk_kbf_config *cfg, uint64_t fpp_e18,
                          bk_kbf *f);
bk_status bk__kbf_cells_alloc(bk_kbf *f, bk__kbf_cells *c, uint64_t m);
void bk__kbf_free(bk_kbf *f);
/* Whether the value is in the table already (exact). */
bool bk__kbf_find_value(const bk_kbf *f, const void *value, size_t len);
void bk__kbf_append_value(bk_kbf *f, const void *value, size_t len);
bk_status bk__kbf_reserve_values(bk_kbf *f, uint32_t n, size_t bytes);
bool bk__kbf_lookup_ok(const bk_kbf *f, uint64_t e);
bool bk__kbf_is_pair(const bk_kbf *f, uint64_t v);

#endif
