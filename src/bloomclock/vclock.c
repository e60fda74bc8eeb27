/* SPDX-License-Identifier: MIT */
/*
 * bk_vclock: the vector clock (include/bloomkit/bloomclock.h; the slides'
 * "Vector Clock - Protocol", rules R1 and R2), bloomkit's exact reference
 * for the Bloom clock. One 32-bit entry per process; R1 refuses to pass
 * 2^32 - 1 (BK_ERANGE) rather than wrap, so the clock is never wrong.
 * Merge and compare are plain loops over uint32_t the compiler vectorises.
 * The wire form is in vclock_io.c.
 */
#include <string.h>

#include "bloomkit/bloomclock.h"
#include "core/internal.h"
#include "bloomclock/vclock_internal.h"

bk_status bk__vclock_new(bk_vclock **out, const bk__alloc *al, uint64_t p,
                         uint64_t pid) {
  bk_vclock *v = bk__calloc(al, 1, sizeof *v);
  BK_RETURN_IF(!v, BK_ENOMEM);
  bk_status s =
      bk__region_alloc(al, (size_t)((p * 4 + 63) / 64 * 64), &v->region);
  if (s != BK_OK) {
    bk__free(al, v);
    return s;
  }
  v->alloc = *al;
  v->processes = p;
  v->process_id = pid;
  v->v = v->region.data;
  *out = v;
  return BK_OK;
}

bk_status bk_vclock_create(bk_vclock **out, const bk_vclock_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF(cfg->processes == 0 || cfg->processes > BK_VCLOCK_PROCESSES_MAX,
               BK_EINVAL);
  BK_RETURN_IF(cfg->process_id >= cfg->processes, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  return bk__vclock_new(out, &al, cfg->processes, cfg->process_id);
}

void bk_vclock_destroy(bk_vclock *v) {
  if (!v) return;
  bk__alloc al = v->alloc;
  bk__region_free(&al, &v->region);
  bk__free(&al, v);
}

bk_status bk_vclock_copy(bk_vclock *dst, const bk_vclock *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(dst->processes != src->processes, BK_EMISMATCH);
  if (dst == src) return BK_OK;
  memcpy(dst->v, src->v, (size_t)src->processes * 4);
  dst->process_id = src->process_id;
  return BK_OK;
}

bk_status bk_vclock_tick(bk_vclock *v) {
  BK_RETURN_IF(!v, BK_EINVAL);
  BK_RETURN_IF(v->v[v->process_id] == UINT32_MAX, BK_ERANGE);
  v->v[v->process_id]++;
  return BK_OK;
}

/* Blocks of 64 entries (a trip count GCC's -O2 vectoriser accepts), then
 * the rest; compiled twice, plain and for AVX2 (chosen at run time), since
 * the unsigned 32-bit max and compare the loops need have no SSE2
 * instruction: the reference clock gets the same vector unit as the Bloom
 * clock's kernels, so the benchmark's ratios compare like with like. */
#define VC_KERNELS(suffix, attr)                                               \
  attr static void max_into_##suffix(uint32_t *restrict dst,                   \
                                     const uint32_t *restrict src, size_t n) { \
    size_t i = 0;                                                              \
    for (; i + 64 <= n; i += 64)                                               \
      for (size_t j = i; j < i + 64; j++)                                      \
        dst[j] = dst[j] > src[j] ? dst[j] : src[j];                            \
    for (; i < n; i++) dst[i] = dst[i] > src[i] ? dst[i] : src[i];             \
  }                                                                            \
  attr static void order_##suffix(const uint32_t *restrict a,                  \
                                  const uint32_t *restrict b, size_t n,        \
                                  bool *a_gt, bool *b_gt) {                    \
    uint32_t y_gt = 0, z_gt = 0;                                               \
    size_t i = 0;                                                              \
    for (; i + 64 <= n && !(y_gt && z_gt); i += 64)                            \
      for (size_t j = i; j < i + 64; j++) {                                    \
        y_gt |= (uint32_t) - (uint32_t)(a[j] > b[j]);                          \
        z_gt |= (uint32_t) - (uint32_t)(b[j] > a[j]);                          \
      }                                                                        \
    for (; i < n; i++) {                                                       \
      y_gt |= (uint32_t) - (uint32_t)(a[i] > b[i]);                            \
      z_gt |= (uint32_t) - (uint32_t)(b[i] > a[i]);                            \
    }                                                                          \
    *a_gt = y_gt != 0;                                                         \
    *b_gt = z_gt != 0;                                                         \
  }

VC_KERNELS(plain, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
VC_KERNELS(avx2, __attribute__((target("avx2"))))
static bool have_avx2(void) {
  return __builtin_cpu_supports("avx2");
}
#else
static bool have_avx2(void) {
  return false;
}
#define max_into_avx2 max_into_plain
#define order_avx2 order_plain
#endif

static void max_into(uint32_t *restrict dst, const uint32_t *restrict src,
                     size_t n) {
  if (have_avx2())
    max_into_avx2(dst, src, n);
  else
    max_into_plain(dst, src, n);
}

void bk__vclock_max_into(uint32_t *dst, const uint32_t *src, size_t n) {
  max_into(dst, src, n);
}

bk_status bk_vclock_merge(bk_vclock *v, const bk_vclock *msg) {
  BK_RETURN_IF(!v || !msg, BK_EINVAL);
  BK_RETURN_IF(v->processes != msg->processes, BK_EMISMATCH);
  if (v != msg) max_into(v->v, msg->v, (size_t)v->processes);
  return bk_vclock_tick(v);
}

bk_status bk_vclock_compare(const bk_vclock *y, const bk_vclock *z,
                            bk_causality *out) {
  BK_RETURN_IF(!y || !z || !out, BK_EINVAL);
  BK_RETURN_IF(y->processes != z->processes, BK_EMISMATCH);
  bool y_gt, z_gt;
  if (have_avx2())
    order_avx2(y->v, z->v, (size_t)y->processes, &y_gt, &z_gt);
  else
    order_plain(y->v, z->v, (size_t)y->processes, &y_gt, &z_gt);
  *out = y_gt ? (z_gt ? BK_CAUSAL_CONCURRENT : BK_CAUSAL_AFTER)
              : (z_gt ? BK_CAUSAL_BEFORE : BK_CAUSAL_EQUAL);
  return BK_OK;
}

bk_status bk_vclock_unseen(const bk_vclock *y, const bk_vclock *z,
                           uint64_t *out) {
  BK_RETURN_IF(!y || !z || !out, BK_EINVAL);
  BK_RETURN_IF(y->processes != z->processes, BK_EMISMATCH);
  const uint32_t *a = y->v, *b = z->v;
  uint64_t sum = 0;
  for (size_t i = 0; i < (size_t)y->processes; i++)
    sum += b[i] > a[i] ? b[i] - a[i] : 0;
  *out = sum;
  return BK_OK;
}

bk_status bk_vclock_get(const bk_vclock *v, uint64_t j, uint32_t *out) {
  BK_RETURN_IF(!v || !out || j >= v->processes, BK_EINVAL);
  *out = v->v[j];
  return BK_OK;
}

uint64_t bk_vclock_processes(const bk_vclock *v) {
  return v ? v->processes : 0;
}

uint64_t bk_vclock_sum(const bk_vclock *v) {
  if (!v) return 0;
  uint64_t s = 0;
  for (uint64_t i = 0; i < v->processes; i++) s += v->v[i];
  return s;
}
