/* SPDX-License-Identifier: MIT */
/*
 * Allocation: the allocator an object keeps (the caller's or libc's), and
 * aligned zeroed regions for bit and counter storage.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Regions at least this large come from mmap when libc is the allocator. */
#define BK__MMAP_THRESHOLD ((size_t)4 << 20)
#define BK__HUGE_PAGE ((size_t)2 << 20)

static void *libc_alloc(void *ctx, size_t size) {
  (void)ctx;
  return malloc(size);
}
static void *libc_realloc(void *ctx, void *p, size_t size) {
  (void)ctx;
  return realloc(p, size);
}
static void libc_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

bk_status bk__alloc_init(bk__alloc *out, const bk_allocator *user) {
  if (!user) {
    out->a.alloc = libc_alloc;
    out->a.realloc = libc_realloc;
    out->a.free = libc_free;
    out->a.ctx = NULL;
    out->is_libc = true;
    return BK_OK;
  }
  BK_RETURN_IF(!user->alloc || !user->free, BK_EINVAL);
  out->a = *user;
  out->is_libc = false;
  return BK_OK;
}

void *bk__malloc(const bk__alloc *al, size_t size) {
  return al->a.alloc(al->a.ctx, size ? size : 1);
}

void *bk__calloc(const bk__alloc *al, size_t n, size_t size) {
  size_t total;
  if (!bk__mul_ok(n, size, &total)) return NULL;
  if (al->is_libc) return calloc(total ? total : 1, 1);
  void *p = al->a.alloc(al->a.ctx, total ? total : 1);
  if (p) memset(p, 0, total);
  return p;
}

void bk__free(const bk__alloc *al, void *p) {
  if (p) al->a.free(al->a.ctx, p);
}

bk_status bk__region_alloc(const bk__alloc *al, size_t size, bk__region *out) {
  memset(out, 0, sizeof *out);
  BK_RETURN_IF(size == 0, BK_EINVAL);
  size_t padded;
  BK_RETURN_IF(!bk__add_ok(size, BK_CACHE_LINE - 1, &padded), BK_EINVAL);
  size = padded & ~(size_t)(BK_CACHE_LINE - 1);

  if (al->is_libc && size >= BK__MMAP_THRESHOLD) {
    /* Map one huge page extra so the data can start on a 2 MiB boundary,
     * then hand the unused head and tail back. */
    size_t want;
    BK_RETURN_IF(!bk__add_ok(size, BK__HUGE_PAGE, &want), BK_EINVAL);
    void *base = mmap(NULL, want, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return BK_ENOMEM;
    uintptr_t start = (uintptr_t)base;
    uintptr_t aligned =
        (start + BK__HUGE_PAGE - 1) & ~(uintptr_t)(BK__HUGE_PAGE - 1);
    size_t head = aligned - start;
    size_t map_len = (size + 4095) & ~(size_t)4095;
    if (head) munmap(base, head);
    size_t tail = want - head - map_len;
    if (tail) munmap((void *)(aligned + map_len), tail);
#ifdef MADV_HUGEPAGE
    (void)madvise((void *)aligned, map_len, MADV_HUGEPAGE);
#endif
    out->data = (void *)aligned;
    out->base = (void *)aligned;
    out->size = size;
    out->mapped = map_len;
    return BK_OK;
  }

  if (al->is_libc) {
    void *p = aligned_alloc(BK_CACHE_LINE, size);
    if (!p) return BK_ENOMEM;
    memset(p, 0, size);
    out->data = p;
    out->base = p;
    out->size = size;
    return BK_OK;
  }

  size_t want;
  BK_RETURN_IF(!bk__add_ok(size, BK_CACHE_LINE, &want), BK_EINVAL);
  void *base = al->a.alloc(al->a.ctx, want);
  if (!base) return BK_ENOMEM;
  uintptr_t aligned =
      ((uintptr_t)base + BK_CACHE_LINE - 1) & ~(uintptr_t)(BK_CACHE_LINE - 1);
  out->data = (void *)aligned;
  out->base = base;
  out->size = size;
  memset(out->data, 0, size);
  return BK_OK;
}

void bk__region_free(const bk__alloc *al, bk__region *r) {
  if (!r->base) return;
  if (r->mapped)
    munmap(r->base, r->mapped);
  else
    al->a.free(al->a.ctx, r->base);
  memset(r, 0, sizeof *r);
}

void bk__region_zero(bk__region *r) {
  if (!r->data) return;
  if (r->mapped) {
    /* Anonymous private pages read back as zero after MADV_DONTNEED, and the
     * memory goes back to the OS until it is written again. */
    if (madvise(r->base, r->mapped, MADV_DONTNEED) == 0) return;
  }
  /* Relaxed atomic stores: a clear may run beside single-bit updates. */
  uint64_t *w = r->data;
  for (size_t i = 0; i < r->size / 8; i++)
    __atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
}
