/* SPDX-License-Identifier: MIT */
/*
 * bk_kbf_chain: kBFs of one size, a new one appended when the newest holds
 * its p-capacity (Sec. 3.4 and 4), queried newest first.
 */
#include <string.h>

#include "core/hash_fast.h"
#include "kbf/kbf_internal.h"

struct bk_kbf_chain {
  bk__alloc alloc;
  bk_kbf_config cfg; /* the allocator pointer is not kept: alloc is */
  bk_kbf **filters;  /* oldest first */
  size_t n, cap;
};

static bk_status append(bk_kbf_chain *c) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 4, bytes;
    BK_RETURN_IF(!bk__mul_ok(cap, sizeof *c->filters, &bytes), BK_ENOMEM);
    bk_kbf **f = bk__malloc(&c->alloc, bytes);
    BK_RETURN_IF(!f, BK_ENOMEM);
    if (c->n) memcpy(f, c->filters, c->n * sizeof *f);
    bk__free(&c->alloc, c->filters);
    c->filters = f;
    c->cap = cap;
  }
  bk_kbf_config cfg = c->cfg;
  cfg.allocator = c->alloc.is_libc ? NULL : &c->alloc.a;
  bk_kbf *f;
  BK_TRY(bk_kbf_create(&f, &cfg));
  c->filters[c->n++] = f;
  return BK_OK;
}

bk_status bk_kbf_chain_create(bk_kbf_chain **out, const bk_kbf_config *cfg) {
  BK_RETURN_IF(!out || !cfg || cfg->capacity == 0 || cfg->m_cells, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_kbf_chain *c = bk__calloc(&al, 1, sizeof *c);
  BK_RETURN_IF(!c, BK_ENOMEM);
  c->alloc = al;
  c->cfg = *cfg;
  c->cfg.allocator = NULL;
  bk_status s = append(c);
  if (s != BK_OK) {
    bk_kbf_chain_destroy(c);
    return s;
  }
  *out = c;
  return BK_OK;
}

void bk_kbf_chain_destroy(bk_kbf_chain *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) bk_kbf_destroy(c->filters[i]);
  bk__alloc al = c->alloc;
  bk__free(&al, c->filters);
  bk__free(&al, c);
}

bk_status bk_kbf_chain_insert(bk_kbf_chain *c, const void *key, size_t len,
                              const void *value, size_t value_len) {
  BK_RETURN_IF(!c || (!key && len) || (!value && value_len), BK_EINVAL);
  if (c->filters[c->n - 1]->n_keys >= c->cfg.capacity) BK_TRY(append(c));
  return bk_kbf_insert(c->filters[c->n - 1], key, len, value, value_len);
}

/* The newest kBF that decodes the key (*at), or the combined result. */
static bk_kbf_result find(const bk_kbf_chain *c, const void *key, size_t len,
                          size_t *at, uint32_t *index) {
  bk_kbf_result combined = BK_KBF_ABSENT;
  for (size_t i = c->n; i-- > 0;) {
    const bk_kbf *f = c->filters[i];
    bk_kbf_result r;
    bk_hash h = bk__hash_fast(f->hash_alg, f->main.seed, key, len);
    (void)bk_kbf_query_index_hash(f, h, &r, index);
    if (r == BK_KBF_FOUND) {
      *at = i;
      return r;
    }
    if (r == BK_KBF_UNDECODABLE) combined = r;
  }
  return combined;
}

bk_status bk_kbf_chain_query(const bk_kbf_chain *c, const void *key, size_t len,
                             bk_kbf_result *result, const void **value,
                             size_t *value_len) {
  BK_RETURN_IF(!c || !result || (!key && len), BK_EINVAL);
  size_t at = 0;
  uint32_t index = 0;
  *result = find(c, key, len, &at, &index);
  if (*result == BK_KBF_FOUND)
    return bk_kbf_value(c->filters[at], index, value, value_len);
  return BK_OK;
}

bk_status bk_kbf_chain_update(bk_kbf_chain *c, const void *key, size_t len,
                              const void *value, size_t value_len) {
  BK_RETURN_IF(!c || (!key && len) || (!value && value_len), BK_EINVAL);
  size_t at = 0;
  uint32_t index;
  bk_kbf_result r = find(c, key, len, &at, &index);
  BK_RETURN_IF(r == BK_KBF_ABSENT, BK_ENOTFOUND);
  BK_RETURN_IF(r == BK_KBF_UNDECODABLE, BK_EUNDECODABLE);
  return bk_kbf_update(c->filters[at], key, len, value, value_len);
}

bk_status bk_kbf_chain_delete(bk_kbf_chain *c, const void *key, size_t len) {
  BK_RETURN_IF(!c || (!key && len), BK_EINVAL);
  size_t at = 0;
  uint32_t index;
  bk_kbf_result r = find(c, key, len, &at, &index);
  BK_RETURN_IF(r == BK_KBF_ABSENT, BK_ENOTFOUND);
  BK_RETURN_IF(r == BK_KBF_UNDECODABLE, BK_EUNDECODABLE);
  return bk_kbf_delete(c->filters[at], key, len);
}

size_t bk_kbf_chain_length(const bk_kbf_chain *c) {
  return c ? c->n : 0;
}

const bk_kbf *bk_kbf_chain_get(const bk_kbf_chain *c, size_t i) {
  return c && i < c->n ? c->filters[i] : NULL;
}
