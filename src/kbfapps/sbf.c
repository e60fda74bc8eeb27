/* SPDX-License-Identifier: MIT */
/*
 * The stateful Bloom filter of Bonomi et al. (SIGCOMM 2006): counts plus a
 * value or "don't know" per cell. The rules are in sbf.h.
 */
#include "kbfapps/sbf.h"

#include <stdlib.h>

#include "bloomkit/hash.h"
#include "bloomkit/params.h"

typedef struct sbf_cell {
  uint8_t count;
  uint8_t value;
} sbf_cell;

struct bk__sbf {
  uint64_t m;
  unsigned k;
  uint64_t seed;
  uint64_t n_keys;
  sbf_cell *cells;
};

bk_status bk__sbf_create(bk__sbf **out, uint64_t m_cells, unsigned k,
                         uint64_t seed) {
  if (!out || m_cells == 0 || m_cells > BK_SBF_MAX_CELLS || k == 0 ||
      k > BK_K_MAX)
    return BK_EINVAL;
  bk__sbf *f = malloc(sizeof *f);
  if (!f) return BK_ENOMEM;
  f->cells = calloc((size_t)m_cells, sizeof *f->cells);
  if (!f->cells) {
    free(f);
    return BK_ENOMEM;
  }
  f->m = m_cells;
  f->k = k;
  f->seed = seed;
  f->n_keys = 0;
  *out = f;
  return BK_OK;
}

void bk__sbf_destroy(bk__sbf *f) {
  if (!f) return;
  free(f->cells);
  free(f);
}

bk_status bk__sbf_indices(const bk__sbf *f, const void *key, size_t len,
                          uint64_t *out) {
  if (!f || !out || (!key && len)) return BK_EINVAL;
  bk_hash h;
  bk_status st = bk_hash_bytes(BK_HASH_XXH3, f->seed, key, len, &h);
  if (st != BK_OK) return st;
  return bk_hash_indices(h, f->k, f->m, out);
}

bk_status bk__sbf_insert(bk__sbf *f, const void *key, size_t len,
                         unsigned value) {
  if (!f || value == 0 || value > BK_SBF_MAX_VALUE) return BK_EINVAL;
  uint64_t idx[BK_K_MAX];
  bk_status st = bk__sbf_indices(f, key, len, idx);
  if (st != BK_OK) return st;
  for (unsigned i = 0; i < f->k; i++) {
    sbf_cell *c = &f->cells[idx[i]];
    if (c->count == 0)
      c->value = (uint8_t)value;
    else if (c->value != value)
      c->value = BK_SBF_DONT_KNOW;
    if (c->count < BK_SBF_COUNT_MAX) c->count++;
  }
  f->n_keys++;
  return BK_OK;
}

bk_status bk__sbf_lookup(const bk__sbf *f, const void *key, size_t len,
                         bk__sbf_result *result, unsigned *value) {
  if (!f || !result) return BK_EINVAL;
  uint64_t idx[BK_K_MAX];
  bk_status st = bk__sbf_indices(f, key, len, idx);
  if (st != BK_OK) return st;
  unsigned seen = 0; /* 0: no definite value yet */
  for (unsigned i = 0; i < f->k; i++) {
    const sbf_cell *c = &f->cells[idx[i]];
    if (c->count == 0) {
      *result = BK_SBF_ABSENT;
      return BK_OK;
    }
  }
  for (unsigned i = 0; i < f->k; i++) {
    unsigned v = f->cells[idx[i]].value;
    if (v == BK_SBF_DONT_KNOW) continue;
    if (seen == 0) {
      seen = v;
    } else if (v != seen) { /* a stored key's cells cannot disagree */
      *result = BK_SBF_ABSENT;
      return BK_OK;
    }
  }
  if (seen == 0) {
    *result = BK_SBF_UNKNOWN;
    return BK_OK;
  }
  *result = BK_SBF_FOUND;
  if (value) *value = seen;
  return BK_OK;
}

bk_status bk__sbf_delete(bk__sbf *f, const void *key, size_t len) {
  if (!f) return BK_EINVAL;
  uint64_t idx[BK_K_MAX];
  bk_status st = bk__sbf_indices(f, key, len, idx);
  if (st != BK_OK) return st;
  /* A key hashed twice to one cell counted it twice: it needs that count. */
  for (unsigned i = 0; i < f->k; i++) {
    unsigned need = 0;
    for (unsigned j = 0; j < f->k; j++) need += idx[j] == idx[i];
    unsigned have = f->cells[idx[i]].count;
    if (have < BK_SBF_COUNT_MAX && have < need) return BK_ENOTFOUND;
  }
  for (unsigned i = 0; i < f->k; i++) {
    sbf_cell *c = &f->cells[idx[i]];
    if (c->count == BK_SBF_COUNT_MAX) continue; /* stuck: it may be owed */
    if (--c->count == 0) c->value = 0;
  }
  if (f->n_keys) f->n_keys--;
  return BK_OK;
}

bk_status bk__sbf_update(bk__sbf *f, const void *key, size_t len,
                         unsigned value) {
  if (!f || value == 0 || value > BK_SBF_MAX_VALUE) return BK_EINVAL;
  bk_status st = bk__sbf_delete(f, key, len);
  if (st != BK_OK) return st;
  return bk__sbf_insert(f, key, len, value);
}

bk_status bk__sbf_info_get(const bk__sbf *f, bk__sbf_info *out) {
  if (!f || !out) return BK_EINVAL;
  bk__sbf_info in = {.m_cells = f->m,
                     .k = f->k,
                     .n_keys = f->n_keys,
                     .memory = (size_t)f->m * sizeof(sbf_cell)};
  for (uint64_t i = 0; i < f->m; i++) {
    const sbf_cell *c = &f->cells[i];
    in.nonzero += c->count != 0;
    in.dont_know += c->value == BK_SBF_DONT_KNOW;
    in.saturated += c->count == BK_SBF_COUNT_MAX;
  }
  *out = in;
  return BK_OK;
}

bk_status bk__sbf_cell(const bk__sbf *f, uint64_t i, unsigned *count,
                       unsigned *value) {
  if (!f || !count || !value) return BK_EINVAL;
  if (i >= f->m) return BK_ERANGE;
  *count = f->cells[i].count;
  *value = f->cells[i].value;
  return BK_OK;
}
