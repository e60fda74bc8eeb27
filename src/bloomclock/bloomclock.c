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
 * Event hashing: event x of process i is the 16 bytes
 * [i as u64 LE][x as u64 LE] hashed once with the clock's algorithm and
 * seed; the k counters are bk__indices(h, k, m) (enhanced double hashing,
 * as bk_bloom), with repetition allowed.
 */
#include <math.h>
#include <string.h>

#include "bloomclock/bloomclock_internal.h"
#include "bloomkit/params.h"
#include "core/hash_inline.h"

#define BC_VERSION 1
/* 24 prefix + m u32, k u8, width u8, hash_alg u8, reserved u8, seed u64,
 * process_id u64, events u64, base u64 */
#define BC_HEADER_LEN (BK__PREFIX_SIZE + 40u)

static bool width_ok(unsigned w) {
  return w == 8 || w == 16 || w == 32;
}

static uint32_t max_of(unsigned width) {
  return width == 32 ? UINT32_MAX : (uint32_t)((1u << width) - 1);
}

/* Payload bytes: m counters of width bits, rounded up to 8. */
static size_t payload_bytes(uint64_t m, unsigned width) {
  return (size_t)((m * (width / 8) + 7) / 8 * 8);
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

static bk_status clock_new(bk_bloomclock **out, const bk__alloc *al, uint64_t m,
                           unsigned k, unsigned width, bk_hash_alg alg,
                           uint64_t seed) {
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
  BK_RETURN_IF(cfg->k == 0 || cfg->k > BK_K_MAX || !width_ok(width), BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, cfg->allocator));
  bk_bloomclock *c;
  BK_TRY(clock_new(&c, &al, cfg->m, cfg->k, width, cfg->hash_alg, cfg->seed));
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

static bool same_shape(const bk_bloomclock *a, const bk_bloomclock *b) {
  return a->m == b->m && a->k == b->k && a->width == b->width &&
         a->hash_alg == b->hash_alg && a->seed == b->seed;
}

bk_status bk_bloomclock_copy(bk_bloomclock *dst, const bk_bloomclock *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(!same_shape(dst, src), BK_EMISMATCH);
  if (dst == src) return BK_OK;
  memcpy(dst->counters, src->counters, (size_t)(src->m * (src->width / 8)));
  dst->process_id = src->process_id;
  dst->events = src->events;
  dst->base = src->base;
  return BK_OK;
}

/* ---- counter access ------------------------------------------------------ */

static inline uint32_t get_c(const bk_bloomclock *c, uint64_t i) {
  switch (c->width) {
    case 8:
      return ((const uint8_t *)c->counters)[i];
    case 16:
      return ((const uint16_t *)c->counters)[i];
    default:
      return ((const uint32_t *)c->counters)[i];
  }
}

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
    uint32_t v = get_c(c, i);
    if (v < lo) lo = v;
  }
  if (lo == 0 || lo == c->max) return false;
  if (c->base > BK_BLOOMCLOCK_BASE_MAX - lo) return false;
  for (uint64_t i = 0; i < c->m; i++) {
    uint32_t v = get_c(c, i);
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
    uint32_t v = get_c(c, idx[j]);
    if (v == c->max) continue; /* infinity */
    if (v + 1 == c->max) {
      /* The increment would reach MAX, which means infinity: make room by
       * the common minimum if there is one, else saturate (round up). */
      if (renormalise(c)) v = get_c(c, idx[j]);
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

bk_status bk_bloomclock_merge(bk_bloomclock *c, const bk_bloomclock *msg) {
  BK_RETURN_IF(!c || !msg, BK_EINVAL);
  BK_RETURN_IF(!same_shape(c, msg), BK_EMISMATCH);
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
  BK_RETURN_IF(!same_shape(y, z), BK_EMISMATCH);
  bool z_ge_y, y_ge_z;
  dominance(y, z, &z_ge_y, &y_ge_z);
  *out = z_ge_y ? (y_ge_z ? BK_CAUSAL_EQUAL : BK_CAUSAL_BEFORE)
                : (y_ge_z ? BK_CAUSAL_AFTER : BK_CAUSAL_CONCURRENT);
  return BK_OK;
}

/* ---- pr_p ----------------------------------------------------------------
 *
 * The slides ("Computing pr_p with Bloom Clocks"):
 *   pr_p = prod_i (1 - sum_{l=0}^{B_y[i]-1} b(l, n, 1/m)),  n = sum B_z,
 * i.e. prod_i P(X >= B_y[i]) for X ~ Binomial(n, q = 1/m). Each factor is a
 * binomial tail, computed in log space from whichever tail is the smaller
 * sum: below the mean the lower tail L = P(X <= b - 1), summed downward from
 * b - 1, gives log1p(-L); at or above it the upper tail P(X >= b), summed
 * upward from b, is taken directly (log pmf(b) + log of the relative sum),
 * so tiny factors never underflow to 0 and factors near 1 never lose their
 * difference to rounding. The terms of either sum fall off faster than a
 * geometric series once past a few standard deviations; a sum stops when a
 * term drops below 2^-60 of the sum, or after 16 sd + 64 terms. Past
 * sd = 4096 (more than 1.6e7 m increments in z) the normal approximation
 * with continuity correction replaces the sums, which keeps the cost
 * bounded whatever numbers a loaded clock holds.
 */

static double log_pmf(double n, double l, double log_q, double log_1q) {
  return lgamma(n + 1) - lgamma(l + 1) - lgamma(n - l + 1) + l * log_q +
         (n - l) * log_1q;
}

/* log of the standard normal upper tail Q(x). */
static double log_normal_upper(double x) {
  if (x < 30) return log(0.5 * erfc(x / sqrt(2.0)));
  /* Asymptotic series: Q(x) ~ phi(x)/x (1 - 1/x^2 + 3/x^4); the constant
   * is sqrt(2 pi). */
  const double x2 = x * x;
  return -0.5 * x2 - log(x * 2.5066282746310002) +
         log1p(-1 / x2 + 3 / (x2 * x2));
}

/* log P(X >= b), X ~ Binomial(n, q). */
static double log_tail(double n, double q, double b) {
  if (b <= 0) return 0;
  if (b > n) return -INFINITY;
  const double mean = n * q, var = mean * (1 - q), sd = sqrt(var);
  if (sd > 4096) return log_normal_upper((b - 0.5 - mean) / sd);
  const double log_q = log(q), log_1q = log1p(-q);
  const double cap = 16 * sd + 64;
  double sum = 1, t = 1;
  if (b - 1 < mean) {
    /* L = sum_{l <= b-1} pmf(l): ratio pmf(l-1)/pmf(l) = l(1-q)/((n-l+1)q). */
    double l = b - 1;
    for (double it = 0; l > 0 && it < cap; it++, l--) {
      t *= l * (1 - q) / ((n - l + 1) * q);
      sum += t;
      if (t < sum * 0x1p-60) break;
    }
    const double log_lower = log_pmf(n, b - 1, log_q, log_1q) + log(sum);
    return log1p(-exp(log_lower));
  }
  /* U = sum_{l >= b} pmf(l): ratio pmf(l+1)/pmf(l) = (n-l)q/((l+1)(1-q)). */
  double l = b;
  for (double it = 0; l < n && it < cap; it++, l++) {
    t *= (n - l) * q / ((l + 1) * (1 - q));
    sum += t;
    if (t < sum * 0x1p-60) break;
  }
  return log_pmf(n, b, log_q, log_1q) + log(sum);
}

static double counter_value(const bk_bloomclock *c, uint32_t v) {
  /* A saturated counter is at least base + MAX. */
  return (double)c->base + (double)v;
}

bk_status bk_bloomclock_log_pr_p(const bk_bloomclock *y, const bk_bloomclock *z,
                                 double *out_log) {
  BK_RETURN_IF(!y || !z || !out_log, BK_EINVAL);
  BK_RETURN_IF(!same_shape(y, z), BK_EMISMATCH);
  double n = 0;
  for (uint64_t i = 0; i < z->m; i++) n += (double)get_c(z, i);
  n += (double)z->base * (double)z->m;
  const double q = 1.0 / (double)y->m;
  /* Factors depend only on the counter's value: memoise them in a small
   * direct-mapped table (exact for 8-bit counters). */
  enum { SLOTS = 256 };
  uint32_t key[SLOTS];
  double val[SLOTS];
  bool used[SLOTS] = {false};
  double total = 0;
  for (uint64_t i = 0; i < y->m; i++) {
    const uint32_t v = get_c(y, i);
    const unsigned slot =
        y->width == 8 ? v : (unsigned)((v * 0x9E3779B1u) >> 24) & (SLOTS - 1);
    double f;
    if (used[slot] && key[slot] == v) {
      f = val[slot];
    } else {
      f = log_tail(n, q, counter_value(y, v));
      used[slot] = true;
      key[slot] = v;
      val[slot] = f;
    }
    total += f;
    if (total == -INFINITY) break;
  }
  *out_log = total;
  return BK_OK;
}

bk_status bk_bloomclock_pr_p(const bk_bloomclock *y, const bk_bloomclock *z,
                             double *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  double lp;
  BK_TRY(bk_bloomclock_log_pr_p(y, z, &lp));
  *out = exp(lp);
  return BK_OK;
}

bk_status bk_bloomclock_pr_fp(const bk_bloomclock *y, const bk_bloomclock *z,
                              double *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  double p;
  BK_TRY(bk_bloomclock_pr_p(y, z, &p));
  *out = (1 - p) * p;
  return BK_OK;
}

bk_status bk_bloomclock_pr_pf(const bk_bloomclock *y, const bk_bloomclock *z,
                              double *out) {
  BK_RETURN_IF(!out, BK_EINVAL);
  double lp;
  BK_TRY(bk_bloomclock_log_pr_p(y, z, &lp));
  *out = -expm1(lp);
  return BK_OK;
}

/* ---- queries ------------------------------------------------------------- */

bk_status bk_bloomclock_get(const bk_bloomclock *c, uint64_t i, uint64_t *out) {
  BK_RETURN_IF(!c || !out || i >= c->m, BK_EINVAL);
  const uint32_t v = get_c(c, i);
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
    const uint32_t v = get_c(c, i);
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

/* ---- the wire form --------------------------------------------------------
 *
 *   offset  size  field
 *       24     4  m (1 .. 2^24)
 *       28     1  k (1 .. 64)
 *       29     1  counter width in bits (8, 16, 32)
 *       30     1  hash algorithm (1 XXH3, 2 Murmur3)
 *       31     1  reserved (0)
 *       32     8  hash seed (below 2^32 for Murmur3)
 *       40     8  process id
 *       48     8  events (local event count)
 *       56     8  base (at most 2^62)
 *       64        payload: m counters, little-endian, width/8 bytes each,
 *                 zero-padded to a multiple of 8 bytes
 *
 *   width 8:   byte i          = c[i]
 *   width 16:  bytes 2i, 2i+1  = c[i], low byte first
 *   width 32:  bytes 4i..4i+3  = c[i], low byte first
 *   c[i] == 2^width - 1 means saturated (infinity).
 */

bk_status bk_bloomclock_serialized_size(const bk_bloomclock *c, size_t *out) {
  BK_RETURN_IF(!c || !out, BK_EINVAL);
  *out = BC_HEADER_LEN + payload_bytes(c->m, c->width) + BK__TRAILER_SIZE;
  return BK_OK;
}

/* The wire form is the little-endian counter array; like counters.c this
 * file copies it as it is and so supports little-endian hosts only. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "bloomclock.c: the wire form needs a little-endian host"
#endif

bk_status bk_bloomclock_serialize(const bk_bloomclock *c, void *buf, size_t cap,
                                  size_t *written) {
  size_t need;
  BK_RETURN_IF(!buf || !written, BK_EINVAL);
  BK_TRY(bk_bloomclock_serialized_size(c, &need));
  BK_RETURN_IF(cap < need, BK_EINVAL);
  unsigned char *p = buf;
  const size_t payload = payload_bytes(c->m, c->width);
  bk__format_write_prefix(p, BC_VERSION, BK__TYPE_BLOOMCLOCK, BC_HEADER_LEN,
                          payload);
  bk__store_le32(p + 24, (uint32_t)c->m);
  p[28] = (unsigned char)c->k;
  p[29] = (unsigned char)c->width;
  p[30] = (unsigned char)c->hash_alg;
  p[31] = 0;
  bk__store_le64(p + 32, c->seed);
  bk__store_le64(p + 40, c->process_id);
  bk__store_le64(p + 48, c->events);
  bk__store_le64(p + 56, c->base);
  unsigned char *q = p + BC_HEADER_LEN;
  const size_t used = (size_t)(c->m * (c->width / 8));
  memcpy(q, c->counters, used);
  memset(q + used, 0, payload - used);
  bk__format_write_trailer(p, BC_HEADER_LEN + payload);
  *written = need;
  return BK_OK;
}

/* A validated wire form, pointing into the caller's bytes. */
typedef struct bc_view {
  uint64_t m;
  unsigned k, width;
  bk_hash_alg hash_alg;
  uint64_t seed, process_id, events, base;
  const unsigned char *counters;
} bc_view;

/* Every check a loader makes, allocation-free; nothing is read past len. */
static bk_status bc_parse(const void *buf, size_t len, bc_view *v) {
  bk__format_view fv;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BLOOMCLOCK, BC_VERSION,
                         BC_HEADER_LEN, &fv));
  const unsigned char *p = buf;
  v->m = bk__load_le32(p + 24);
  v->k = p[28];
  v->width = p[29];
  v->hash_alg = (bk_hash_alg)p[30];
  v->seed = bk__load_le64(p + 32);
  v->process_id = bk__load_le64(p + 40);
  v->events = bk__load_le64(p + 48);
  v->base = bk__load_le64(p + 56);
  BK_RETURN_IF(p[31] != 0, BK_ECORRUPT);
  BK_RETURN_IF(v->m == 0 || v->m > BK_BLOOMCLOCK_M_MAX, BK_ECORRUPT);
  BK_RETURN_IF(v->k == 0 || v->k > BK_K_MAX || !width_ok(v->width),
               BK_ECORRUPT);
  BK_RETURN_IF(v->hash_alg != BK_HASH_XXH3 && v->hash_alg != BK_HASH_MURMUR3,
               BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid(v->hash_alg, v->seed), BK_ECORRUPT);
  BK_RETURN_IF(v->base > BK_BLOOMCLOCK_BASE_MAX, BK_ECORRUPT);
  const size_t payload = payload_bytes(v->m, v->width);
  BK_RETURN_IF(fv.payload_len != payload, BK_ECORRUPT);
  const size_t used = (size_t)(v->m * (v->width / 8));
  BK_RETURN_IF(!bk__all_zero(fv.payload + used, payload - used), BK_ECORRUPT);
  /* Reachable states only: a clock that never ticked (events 0; a merge
   * ticks too) is the zero clock, base 0; one that ticked has a counter
   * above zero (a tick raises k counters, renormalising leaves the one that
   * triggered it at 1 or more, a merge is followed by a tick, and nothing
   * else lowers a counter). */
  const bool zero = bk__all_zero(fv.payload, used);
  BK_RETURN_IF(zero != (v->events == 0), BK_ECORRUPT);
  BK_RETURN_IF(v->events == 0 && v->base != 0, BK_ECORRUPT);
  v->counters = fv.payload;
  return BK_OK;
}

static bool view_matches(const bk_bloomclock *c, const bc_view *v) {
  return c->m == v->m && c->k == v->k && c->width == v->width &&
         c->hash_alg == v->hash_alg && c->seed == v->seed;
}

/* Counters from the wire into dst's array (little-endian host). */
static void load_counters(void *dst, const bc_view *v) {
  memcpy(dst, v->counters, (size_t)(v->m * (v->width / 8)));
}

bk_status bk_bloomclock_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_bloomclock **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  bk_bloomclock *c;
  BK_TRY(clock_new(&c, &al, v.m, v.k, v.width, v.hash_alg, v.seed));
  load_counters(c->counters, &v);
  c->process_id = v.process_id;
  c->events = v.events;
  c->base = v.base;
  *out = c;
  return BK_OK;
}

bk_status bk_bloomclock_load(bk_bloomclock *dst, const void *buf, size_t len) {
  BK_RETURN_IF(!dst || !buf, BK_EINVAL);
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  BK_RETURN_IF(!view_matches(dst, &v), BK_EMISMATCH);
  load_counters(dst->counters, &v);
  dst->process_id = v.process_id;
  dst->events = v.events;
  dst->base = v.base;
  return BK_OK;
}

bk_status bk_bloomclock_receive(bk_bloomclock *c, const void *buf, size_t len) {
  BK_RETURN_IF(!c || !buf, BK_EINVAL);
  bc_view v;
  BK_TRY(bc_parse(buf, len, &v));
  BK_RETURN_IF(!view_matches(c, &v), BK_EMISMATCH);
  if (c->width == 8) {
    merge_raw(c, v.counters, v.base);
  } else {
    /* The caller's bytes need not be aligned for 16- or 32-bit loads:
     * merge from an aligned copy, a chunk at a time, through a view of c
     * over the chunk (each chunk starts from c's old base, so all use the
     * same shift). */
    enum { CHUNK_BYTES = 4096 };
    uint32_t tmp[CHUNK_BYTES / 4];
    const size_t esz = c->width / 8, per = CHUNK_BYTES / esz;
    bk_bloomclock part = *c;
    for (uint64_t i = 0; i < c->m; i += per) {
      const size_t n = (size_t)(c->m - i < per ? c->m - i : per);
      memcpy(tmp, v.counters + i * esz, n * esz);
      part.m = n;
      part.base = c->base;
      part.counters = (unsigned char *)c->counters + i * esz;
      merge_raw(&part, tmp, v.base);
    }
    if (v.base > c->base) c->base = v.base;
  }
  return bk_bloomclock_tick(c);
}

/* ---- parameters ---------------------------------------------------------- */

bk_status bk_bloomclock_params(uint64_t p, uint64_t events, double target_fpr,
                               uint64_t *m, unsigned *k) {
  BK_RETURN_IF(!m || !k, BK_EINVAL);
  BK_RETURN_IF(p == 0 || p > BK_VCLOCK_PROCESSES_MAX, BK_EINVAL);
  BK_RETURN_IF(!(target_fpr > 0 && target_fpr < 1), BK_EINVAL);
  if (events == 0) events = 1;
  uint64_t window;
  BK_RETURN_IF(__builtin_mul_overflow(p, events, &window), BK_EINVAL);
  uint64_t mm;
  unsigned kk;
  BK_TRY(bk_params_for_target(window, target_fpr, &mm, &kk));
  BK_RETURN_IF(mm > BK_BLOOMCLOCK_M_MAX, BK_EINVAL);
  *m = mm;
  *k = kk;
  return BK_OK;
}
