/* SPDX-License-Identifier: MIT */
/*
 * bk_bloomclock: the Bloom clock (include/bloomkit/bloomclock.h; the slides
 * "The Bloom Clock to Characterize Causality in Distributed Systems",
 * Kshemkalyani & Misra 2020, "Bloom Clock Protocol" and Proposition 1).
 *
 * State: a 64-bit base and m counters of 8, 16 or 32 bits in a plain array
 * (64-byte aligned). Counter i stands for the value base + c[i] while
 * c[i] < MAX = 2^width - 1; c[i] == MAX stands for "infinity" (saturated).
 *
 *   value(i) = c[i] == MAX ? infinity : base + c[i]
 *
 * Every operation returns a clock whose values dominate its inputs' values
 * (tick adds, merge takes the maximum, renormalisation keeps values and
 * saturation rounds up to infinity), so "y happened before z" still implies
 * value_z >= value_y everywhere: no false negative
 * (docs/design/bloomclock.md 3.11a).
 *
 * Merge and compare work on the counters directly, shifting the clock with
 * the smaller base by the difference of the bases (clamped to MAX) with
 * saturating arithmetic. For 8-bit counters they run as SSE2 or, where the
 * CPU has it (checked at run time), AVX2 saturating byte operations; the
 * portable branch-free loops serve the other widths, other CPUs and the
 * last partial block (the "kernels" section below).
 *
 * The wire form (serialize, deserialize, load, receive) is in
 * bloomclock_io.c; pr_p and the sizing helper in bloomclock_prob.c.
 *
 * Event hashing: event x of process i is the 16 bytes
 * [i as u64 LE][x as u64 LE] hashed once with the clock's algorithm and
 * seed; the k counters are bk__indices(h, k, m) (enhanced double hashing,
 * as bk_bloom), with repetition allowed.
 */
#include <string.h>

#include "bloomclock/bloomclock_internal.h"
#include "bloomkit/params.h"
#include "core/hash_fast.h"

static uint32_t max_of(unsigned width) {
  return width == 32 ? UINT32_MAX : (uint32_t)((1u << width) - 1);
}

const char *bk_causality_name(bk_causality c) {
  switch (c) {
    case BK_CAUSAL_EQUAL:
      return "equal";
    case BK_CAUSAL_BEFORE:
      return "before";
    case BK_CAUSAL_AFTER:
      return "after";
    case BK_CAUSAL_CONCURRENT:
      return "concurrent";
  }
  return "unknown";
}

/* ---- create / destroy ---------------------------------------------------- */

bk_status bk__bloomclock_new(bk_bloomclock **out, const bk__alloc *al,
                             uint64_t m, unsigned k, unsigned width,
                             bk_hash_alg alg, uint64_t seed) {
  bk_bloomclock *c = bk__calloc(al, 1, sizeof *c);
  BK_RETURN_IF(!c, BK_ENOMEM);
  /* Round to whole 64-byte lines so the kernels may run over the padding. */
  const size_t bytes = (size_t)((m * (width / 8) + 63) / 64 * 64);
  bk_status s = bk__region_alloc(al, bytes, &c->region);
  if (s != BK_OK) {
    bk__free(al, c);
    return s;
  }
  c->alloc = *al;
  c->m = m;
  c->k = k;
  c->width = width;
  c->max = max_of(width);
  c->hash_alg = alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : alg;
  c->seed = seed;
  c->counters = c->region.data;
  *out = c;
  return BK_OK;
}

bk_status bk_bloomclock_create(bk_bloomclock **out,
                               const bk_bloomclock_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  const unsigned width = cfg->counter_bits ? cfg->counter_bits : 8;
  BK_RETURN_IF(cfg->m == 0 || cfg->m > BK_BLOOMCLOCK_M_MAX, BK_EINVAL);
  BK_RETURN_IF(
      cfg->k == 0 || cfg->k > BK_K_MAX || !bk__bloomclock_width_ok(width),
      BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_bloomclock *c;
  BK_TRY(bk__bloomclock_new(&c, &al, cfg->m, cfg->k, width, cfg->hash_alg,
                            cfg->seed));
  c->process_id = cfg->process_id;
  *out = c;
  return BK_OK;
}

void bk_bloomclock_destroy(bk_bloomclock *c) {
  if (!c) return;
  bk__alloc al = c->alloc;
  bk__region_free(&al, &c->region);
  bk__free(&al, c);
}

bk_status bk_bloomclock_copy(bk_bloomclock *dst, const bk_bloomclock *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(!bk__bloomclock_same_shape(dst, src), BK_EMISMATCH);
  if (dst == src) return BK_OK;
  memcpy(dst->counters, src->counters, (size_t)(src->m * (src->width / 8)));
  dst->process_id = src->process_id;
  dst->events = src->events;
  dst->base = src->base;
  return BK_OK;
}

/* ---- counter access ------------------------------------------------------ */

static inline void set_c(bk_bloomclock *c, uint64_t i, uint32_t v) {
  switch (c->width) {
    case 8:
      ((uint8_t *)c->counters)[i] = (uint8_t)v;
      break;
    case 16:
      ((uint16_t *)c->counters)[i] = (uint16_t)v;
      break;
    default:
      ((uint32_t *)c->counters)[i] = v;
      break;
  }
}

/* ---- kernels (one per element type, vectorisable) -----------------------
 *
 * shift(x, d) = x == MAX ? MAX : x - min(x, d)   (infinity stays)
 * adds(x, d)  = min(x, MAX - d) + d              (saturating, d <= MAX)
 *
 * merge: dst = max(shift(dst, d_dst), shift(src, d_src)), one d being 0.
 * compare, lower-base clock a, higher-base clock b, d = base_b - base_a:
 *   value_b >= value_a everywhere  <=>  shift(a[i], d) <= b[i] for all i
 *   value_a >= value_b everywhere  <=>  adds(b[i], d)  <= a[i] for all i
 * (an infinite a[i] stays MAX in shift, so only an infinite b[i] covers it;
 * adds rounds a finite b[i] that passes MAX in a's frame up to MAX, which
 * only an infinite a[i] covers: both exact.)
 *
 * Written branch-free (MAX is all ones, so "x == MAX ? MAX : s" is
 * s | -(x == MAX)) over blocks of 64 elements, a trip count the compiler
 * knows, so GCC's -O2 vectoriser (whose cost model refuses loops that need
 * a scalar epilogue) turns each block into pminub / psubb / pmaxub / pcmpeqb
 * on SSE2 (or their wider forms); the last partial block runs scalar.
 * Compare stops at the first block after which both directions failed
 * (concurrent).
 */
#define BC_BLOCK 64
#define BC_KERNELS(T)                                                         \
  static inline T shift_##T(T x, T d, T max) {                                \
    return (T)((T)(x - (x < d ? x : d)) | (T) - (T)(x == max));               \
  }                                                                           \
  static void merge_##T(T *restrict dst, const T *restrict src, size_t n,     \
                        T d_dst, T d_src, T max) {                            \
    size_t i = 0;                                                             \
    for (; i + BC_BLOCK <= n; i += BC_BLOCK)                                  \
      for (size_t j = i; j < i + BC_BLOCK; j++) {                             \
        T as = shift_##T(dst[j], d_dst, max);                                 \
        T bs = shift_##T(src[j], d_src, max);                                 \
        dst[j] = as > bs ? as : bs;                                           \
      }                                                                       \
    for (; i < n; i++) {                                                      \
      T as = shift_##T(dst[i], d_dst, max);                                   \
      T bs = shift_##T(src[i], d_src, max);                                   \
      dst[i] = as > bs ? as : bs;                                             \
    }                                                                         \
  }                                                                           \
  static void compare_##T(const T *restrict a, const T *restrict b, size_t n, \
                          T d, T max, bool *b_ge_a, bool *a_ge_b) {           \
    T not_b_ge_a = 0, not_a_ge_b = 0;                                         \
    const T room = (T)(max - d);                                              \
    size_t i = 0;                                                             \
    for (; i + BC_BLOCK <= n && !(not_b_ge_a && not_a_ge_b); i += BC_BLOCK)   \
      for (size_t j = i; j < i + BC_BLOCK; j++) {                             \
        T xs = shift_##T(a[j], d, max);                                       \
        T ya = (T)((b[j] < room ? b[j] : room) + d);                          \
        not_b_ge_a |= (T) - (T)(xs > b[j]);                                   \
        not_a_ge_b |= (T) - (T)(ya > a[j]);                                   \
      }                                                                       \
    for (; i < n; i++) {                                                      \
      T xs = shift_##T(a[i], d, max);                                         \
      T ya = (T)((b[i] < room ? b[i] : room) + d);                            \
      not_b_ge_a |= (T) - (T)(xs > b[i]);                                     \
      not_a_ge_b |= (T) - (T)(ya > a[i]);                                     \
    }                                                                         \
    *b_ge_a = !not_b_ge_a;                                                    \
    *a_ge_b = !not_a_ge_b;                                                    \
  }

BC_KERNELS(uint8_t)
BC_KERNELS(uint16_t)
BC_KERNELS(uint32_t)

/* Which 8-bit kernels run: BK__SIMD_AUTO (the best the CPU has), or, for
 * the tests, SSE2 or the portable loops only. Not synchronised: set it
 * before using clocks. */
static int simd_level = BK__SIMD_AUTO;
void bk__bloomclock_set_simd(int level) {
  simd_level = level;
}

#if defined(__SSE2__)
/* 8-bit counters with SSE2 (part of every x86-64 CPU), and AVX2 where the
 * CPU has it (chosen at run time): GCC's -O2 cost model vectorises the
 * portable kernels above only in part (measured 14 bytes/ns for merge and
 * 8.5 for compare at m = 4096, a scalar rate). The same formulas on 16 or
 * 32 counters at a time: shift = subs(x, d) | (x == MAX), adds = adds(x, d)
 * (saturating at 255 = MAX), x > y <=> subs(x, y) != 0. With equal bases
 * (d = 0, the common case) shift and adds are the identity and MAX is the
 * largest byte anyway, so merge is one max and compare two subs. */
#include <emmintrin.h>

static inline __m128i shift_v(__m128i x, __m128i d, __m128i ones) {
  return _mm_or_si128(_mm_subs_epu8(x, d), _mm_cmpeq_epi8(x, ones));
}

static inline bool all_zero_v(__m128i v) {
  return _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) == 0xFFFF;
}

static size_t merge_u8_sse2(uint8_t *restrict dst, const uint8_t *restrict src,
                            size_t n, uint8_t d_dst, uint8_t d_src) {
  const __m128i ones = _mm_set1_epi8(-1), dd = _mm_set1_epi8((char)d_dst),
                ds = _mm_set1_epi8((char)d_src);
  size_t i = 0;
  if (d_dst == 0 && d_src == 0) {
    for (; i + 16 <= n; i += 16)
      _mm_storeu_si128(
          (__m128i *)(dst + i),
          _mm_max_epu8(_mm_loadu_si128((const __m128i *)(dst + i)),
                       _mm_loadu_si128((const __m128i *)(src + i))));
    return i;
  }
  for (; i + 16 <= n; i += 16) {
    __m128i a = _mm_loadu_si128((const __m128i *)(dst + i));
    __m128i b = _mm_loadu_si128((const __m128i *)(src + i));
    a = _mm_max_epu8(shift_v(a, dd, ones), shift_v(b, ds, ones));
    _mm_storeu_si128((__m128i *)(dst + i), a);
  }
  return i;
}

/* Returns the counters done; *bad_* set when a violation was seen. Stops
 * early once both directions failed. */
static size_t compare_u8_sse2(const uint8_t *restrict a,
                              const uint8_t *restrict b, size_t n, uint8_t d,
                              bool *bad_ba, bool *bad_ab) {
  const __m128i ones = _mm_set1_epi8(-1), dv = _mm_set1_epi8((char)d);
  __m128i ba = _mm_setzero_si128(), ab = _mm_setzero_si128();
  size_t i = 0;
  while (i + 64 <= n) {
    for (size_t j = i; j < i + 64; j += 16) {
      __m128i x = _mm_loadu_si128((const __m128i *)(a + j));
      __m128i y = _mm_loadu_si128((const __m128i *)(b + j));
      if (d) {
        ba = _mm_or_si128(ba, _mm_subs_epu8(shift_v(x, dv, ones), y));
        ab = _mm_or_si128(ab, _mm_subs_epu8(_mm_adds_epu8(y, dv), x));
      } else {
        ba = _mm_or_si128(ba, _mm_subs_epu8(x, y));
        ab = _mm_or_si128(ab, _mm_subs_epu8(y, x));
      }
    }
    i += 64;
    if (!all_zero_v(ba) && !all_zero_v(ab)) break;
  }
  *bad_ba = !all_zero_v(ba);
  *bad_ab = !all_zero_v(ab);
  return i;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define BC_AVX2 __attribute__((target("avx2")))

BC_AVX2 static inline __m256i shift_v32(__m256i x, __m256i d, __m256i ones) {
  return _mm256_or_si256(_mm256_subs_epu8(x, d), _mm256_cmpeq_epi8(x, ones));
}

BC_AVX2 static size_t merge_u8_avx2(uint8_t *restrict dst,
                                    const uint8_t *restrict src, size_t n,
                                    uint8_t d_dst, uint8_t d_src) {
  const __m256i ones = _mm256_set1_epi8(-1), dd = _mm256_set1_epi8((char)d_dst),
                ds = _mm256_set1_epi8((char)d_src);
  size_t i = 0;
  if (d_dst == 0 && d_src == 0) {
    for (; i + 32 <= n; i += 32)
      _mm256_storeu_si256(
          (__m256i *)(dst + i),
          _mm256_max_epu8(_mm256_loadu_si256((const __m256i *)(dst + i)),
                          _mm256_loadu_si256((const __m256i *)(src + i))));
    return i;
  }
  for (; i + 32 <= n; i += 32) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(dst + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(src + i));
    a = _mm256_max_epu8(shift_v32(a, dd, ones), shift_v32(b, ds, ones));
    _mm256_storeu_si256((__m256i *)(dst + i), a);
  }
  return i;
}

BC_AVX2 static size_t compare_u8_avx2(const uint8_t *restrict a,
                                      const uint8_t *restrict b, size_t n,
                                      uint8_t d, bool *bad_ba, bool *bad_ab) {
  const __m256i ones = _mm256_set1_epi8(-1), dv = _mm256_set1_epi8((char)d);
  __m256i ba = _mm256_setzero_si256(), ab = _mm256_setzero_si256();
  size_t i = 0;
  while (i + 128 <= n) {
    for (size_t j = i; j < i + 128; j += 32) {
      __m256i x = _mm256_loadu_si256((const __m256i *)(a + j));
      __m256i y = _mm256_loadu_si256((const __m256i *)(b + j));
      if (d) {
        ba = _mm256_or_si256(ba, _mm256_subs_epu8(shift_v32(x, dv, ones), y));
        ab = _mm256_or_si256(ab, _mm256_subs_epu8(_mm256_adds_epu8(y, dv), x));
      } else {
        ba = _mm256_or_si256(ba, _mm256_subs_epu8(x, y));
        ab = _mm256_or_si256(ab, _mm256_subs_epu8(y, x));
      }
    }
    i += 128;
    if (!_mm256_testz_si256(ba, ba) && !_mm256_testz_si256(ab, ab)) break;
  }
  *bad_ba = !_mm256_testz_si256(ba, ba);
  *bad_ab = !_mm256_testz_si256(ab, ab);
  return i;
}

static bool have_avx2(void) {
  return simd_level == BK__SIMD_AUTO && __builtin_cpu_supports("avx2");
}
#else
static size_t merge_u8_avx2(uint8_t *restrict dst, const uint8_t *restrict src,
                            size_t n, uint8_t d_dst, uint8_t d_src) {
  return merge_u8_sse2(dst, src, n, d_dst, d_src);
}
static size_t compare_u8_avx2(const uint8_t *restrict a,
                              const uint8_t *restrict b, size_t n, uint8_t d,
                              bool *bad_ba, bool *bad_ab) {
  return compare_u8_sse2(a, b, n, d, bad_ba, bad_ab);
}
static bool have_avx2(void) {
  return false;
}
#endif

static void merge_u8(uint8_t *restrict dst, const uint8_t *restrict src,
                     size_t n, uint8_t d_dst, uint8_t d_src) {
  if (simd_level == BK__SIMD_PORTABLE) {
    merge_uint8_t(dst, src, n, d_dst, d_src, 0xFF);
    return;
  }
  size_t i = have_avx2() ? merge_u8_avx2(dst, src, n, d_dst, d_src)
                         : merge_u8_sse2(dst, src, n, d_dst, d_src);
  if (i < n) merge_uint8_t(dst + i, src + i, n - i, d_dst, d_src, 0xFF);
}

static void compare_u8(const uint8_t *restrict a, const uint8_t *restrict b,
                       size_t n, uint8_t d, bool *b_ge_a, bool *a_ge_b) {
  if (simd_level == BK__SIMD_PORTABLE) {
    compare_uint8_t(a, b, n, d, 0xFF, b_ge_a, a_ge_b);
    return;
  }
  bool bad_ba, bad_ab;
  size_t i = have_avx2() ? compare_u8_avx2(a, b, n, d, &bad_ba, &bad_ab)
                         : compare_u8_sse2(a, b, n, d, &bad_ba, &bad_ab);
  bool tail_ba = true, tail_ab = true;
  if (i < n && !(bad_ba && bad_ab))
    compare_uint8_t(a + i, b + i, n - i, d, 0xFF, &tail_ba, &tail_ab);
  *b_ge_a = !bad_ba && tail_ba;
  *a_ge_b = !bad_ab && tail_ab;
}
#else
static void merge_u8(uint8_t *restrict dst, const uint8_t *restrict src,
                     size_t n, uint8_t d_dst, uint8_t d_src) {
  merge_uint8_t(dst, src, n, d_dst, d_src, 0xFF);
}
static void compare_u8(const uint8_t *restrict a, const uint8_t *restrict b,
                       size_t n, uint8_t d, bool *b_ge_a, bool *a_ge_b) {
  compare_uint8_t(a, b, n, d, 0xFF, b_ge_a, a_ge_b);
}
#endif

/* Clamp a base difference to a counter's range. */
static inline uint32_t clamp_d(uint64_t d, uint32_t max) {
  return d > max ? max : (uint32_t)d;
}

/* ---- tick ---------------------------------------------------------------- */

/* Subtract the smallest unsaturated counter from every unsaturated counter
 * and add it to the base (values unchanged). True when it freed room. */
static bool renormalise(bk_bloomclock *c) {
  uint32_t lo = c->max;
  for (uint64_t i = 0; i < c->m; i++) {
    uint32_t v = bk__bloomclock_get_c(c, i);
    if (v < lo) lo = v;
  }
  if (lo == 0 || lo == c->max) return false;
  if (c->base > BK_BLOOMCLOCK_BASE_MAX - lo) return false;
  for (uint64_t i = 0; i < c->m; i++) {
    uint32_t v = bk__bloomclock_get_c(c, i);
    if (v != c->max) set_c(c, i, v - lo);
  }
  c->base += lo;
  return true;
}

void bk__bloomclock_event_indices(const bk_bloomclock *c, uint64_t pid,
                                  uint64_t x, uint64_t *idx) {
  unsigned char ev[16];
  bk__store_le64(ev, pid);
  bk__store_le64(ev + 8, x);
  bk__indices(bk__hash(c->hash_alg, c->seed, ev, sizeof ev), c->k, c->m, idx);
}

bk_status bk_bloomclock_tick(bk_bloomclock *c) {
  BK_RETURN_IF(!c, BK_EINVAL);
  BK_RETURN_IF(c->events == UINT64_MAX, BK_ERANGE);
  uint64_t idx[BK_K_MAX];
  bk__bloomclock_event_indices(c, c->process_id, c->events, idx);
  for (unsigned j = 0; j < c->k; j++) {
    uint32_t v = bk__bloomclock_get_c(c, idx[j]);
    if (v == c->max) continue; /* infinity */
    if (v + 1 == c->max) {
      /* The increment would reach MAX, which means infinity: make room by
       * the common minimum if there is one, else saturate (round up). */
      if (renormalise(c)) v = bk__bloomclock_get_c(c, idx[j]);
    }
    set_c(c, idx[j], v + 1);
  }
  c->events++;
  return BK_OK;
}

/* ---- merge --------------------------------------------------------------- */

/* dst := max(dst, (src_counters, src_base)); no tick. */
static void merge_raw(bk_bloomclock *dst, const void *src, uint64_t src_base) {
  const uint32_t max = dst->max;
  uint32_t d_dst = 0, d_src = 0;
  uint64_t base = dst->base;
  if (src_base > dst->base) {
    d_dst = clamp_d(src_base - dst->base, max);
    base = src_base;
  } else {
    d_src = clamp_d(dst->base - src_base, max);
  }
  const size_t n = (size_t)dst->m;
  switch (dst->width) {
    case 8:
      merge_u8(dst->counters, src, n, (uint8_t)d_dst, (uint8_t)d_src);
      break;
    case 16:
      merge_uint16_t(dst->counters, src, n, (uint16_t)d_dst, (uint16_t)d_src,
                     (uint16_t)max);
      break;
    default:
      merge_uint32_t(dst->counters, src, n, d_dst, d_src, max);
      break;
  }
  dst->base = base;
}

void bk__bloomclock_merge_raw(bk_bloomclock *dst, const void *src,
                              uint64_t src_base) {
  merge_raw(dst, src, src_base);
}

bk_status bk_bloomclock_merge(bk_bloomclock *c, const bk_bloomclock *msg) {
  BK_RETURN_IF(!c || !msg, BK_EINVAL);
  BK_RETURN_IF(!bk__bloomclock_same_shape(c, msg), BK_EMISMATCH);
  if (c != msg) merge_raw(c, msg->counters, msg->base);
  return bk_bloomclock_tick(c);
}

/* ---- compare ------------------------------------------------------------- */

/* *z_ge_y: value_z >= value_y everywhere; *y_ge_z the reverse. */
static void dominance(const bk_bloomclock *y, const bk_bloomclock *z,
                      bool *z_ge_y, bool *y_ge_z) {
  const bk_bloomclock *a = y, *b = z; /* a: the lower base */
  bool swapped = false;
  if (y->base > z->base) {
    a = z;
    b = y;
    swapped = true;
  }
  const uint32_t d = clamp_d(b->base - a->base, a->max);
  const size_t n = (size_t)a->m;
  bool b_ge_a, a_ge_b;
  switch (a->width) {
    case 8:
      compare_u8(a->counters, b->counters, n, (uint8_t)d, &b_ge_a, &a_ge_b);
      break;
    case 16:
      compare_uint16_t(a->counters, b->counters, n, (uint16_t)d,
                       (uint16_t)a->max, &b_ge_a, &a_ge_b);
      break;
    default:
      compare_uint32_t(a->counters, b->counters, n, d, a->max, &b_ge_a,
                       &a_ge_b);
      break;
  }
  *z_ge_y = swapped ? a_ge_b : b_ge_a;
  *y_ge_z = swapped ? b_ge_a : a_ge_b;
}

bk_status bk_bloomclock_compare(const bk_bloomclock *y, const bk_bloomclock *z,
                                bk_causality *out) {
  BK_RETURN_IF(!y || !z || !out, BK_EINVAL);
  BK_RETURN_IF(!bk__bloomclock_same_shape(y, z), BK_EMISMATCH);
  bool z_ge_y, y_ge_z;
  dominance(y, z, &z_ge_y, &y_ge_z);
  *out = z_ge_y ? (y_ge_z ? BK_CAUSAL_EQUAL : BK_CAUSAL_BEFORE)
                : (y_ge_z ? BK_CAUSAL_AFTER : BK_CAUSAL_CONCURRENT);
  return BK_OK;
}

/* ---- queries ------------------------------------------------------------- */

bk_status bk_bloomclock_get(const bk_bloomclock *c, uint64_t i, uint64_t *out) {
  BK_RETURN_IF(!c || !out || i >= c->m, BK_EINVAL);
  const uint32_t v = bk__bloomclock_get_c(c, i);
  *out = v == c->max ? UINT64_MAX : c->base + v;
  return BK_OK;
}

bk_status bk_bloomclock_info_get(const bk_bloomclock *c,
                                 bk_bloomclock_info *out) {
  BK_RETURN_IF(!c || !out, BK_EINVAL);
  bk_bloomclock_info in = {.m = c->m,
                           .k = c->k,
                           .counter_bits = c->width,
                           .hash_alg = c->hash_alg,
                           .seed = c->seed,
                           .process_id = c->process_id,
                           .events = c->events,
                           .base = c->base,
                           .memory = sizeof *c + c->region.size};
  uint32_t lo = c->max, hi = 0;
  double sum = 0;
  for (uint64_t i = 0; i < c->m; i++) {
    const uint32_t v = bk__bloomclock_get_c(c, i);
    sum += (double)v;
    if (v == c->max) {
      in.saturated++;
      continue;
    }
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  in.spread = in.saturated == c->m ? 0 : hi - lo;
  in.sum = sum + (double)c->base * (double)c->m;
  *out = in;
  return BK_OK;
}
