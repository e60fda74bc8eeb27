/* SPDX-License-Identifier: MIT */
/*
 * bk_apbf's serialized form (bk_apbf_serialized_size, bk_apbf_serialize,
 * bk_apbf_deserialize). Slices and generation counts are written in
 * logical order (youngest first), so a blob does not depend on where the
 * ring stood; the ring's position follows from the shift count. The loader
 * takes only a state that create, inserts and shifts could have produced
 * (see docs/design/fbf.md, "APBF invariants"). The filter is in apbf.c.
 */
#include "apbf_internal.h"
#include "core/hash_fast.h"

/* ---- serialized form ------------------------------------------------------
 * Parameters after the 24-byte prefix (header length 96):
 *   24 u8  k              25 u8  l
 *   26 u8  time-based (0 or 1)                27 u8 hash algorithm
 *   28 u32 reserved (0)   32 u64 seed         40 u64 m (bits per slice)
 *   48 u64 g              56 u64 period (0 when count-based)
 *   64 u64 start (time-based; 0 when count-based)
 *   72 u64 now            80 u64 shifts       88 u64 reserved (0)
 * Payload: n = k + l u64 generation counts, then n slices of ceil(m / 64)
 * u64 words each, both youngest (logical 0) first. Generation count i is
 * the inserts made while logical slice i was slice 0 (i = 0: the current
 * generation); slice i received those of generations i - k + 1 .. i. */
#define APBF_VERSION 1
#define APBF_HEADER_LEN (BK__PREFIX_SIZE + 72u)

static uint64_t payload_len(const bk_apbf *f) {
  return 8u * (uint64_t)f->n + 8u * (uint64_t)f->n * f->wps;
}

bk_status bk_apbf_serialized_size(const bk_apbf *f, size_t *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = (size_t)(APBF_HEADER_LEN + payload_len(f) + BK__TRAILER_SIZE);
  return BK_OK;
}

bk_status bk_apbf_serialize(const bk_apbf *f, void *buf, size_t cap,
                            size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_apbf_serialized_size(f, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  bk_apbf *mf = (bk_apbf *)f; /* the mutex only: no shift meanwhile */
  pthread_mutex_lock(&mf->mu);
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
  unsigned base = BK__AP_BASE(st);
  bk__format_write_prefix(p, APBF_VERSION, BK__TYPE_APBF, APBF_HEADER_LEN,
                          payload_len(f));
  p[24] = (unsigned char)f->k;
  p[25] = (unsigned char)f->l;
  p[26] = f->period != 0;
  p[27] = (unsigned char)f->hash_alg;
  bk__store_le32(p + 28, 0);
  bk__store_le64(p + 32, f->seed);
  bk__store_le64(p + 40, f->m);
  bk__store_le64(p + 48, f->g);
  bk__store_le64(p + 56, f->period);
  bk__store_le64(p + 64, f->start);
  bk__store_le64(p + 72, f->now);
  bk__store_le64(p + 80, f->shifts);
  bk__store_le64(p + 88, 0);
  unsigned char *slices = p + APBF_HEADER_LEN + 8u * f->n;
  for (unsigned i = 0; i < f->n; i++) {
    const uint64_t *w = f->slot[bk__apbf_slot(f, base, i)].first;
    for (uint64_t j = 0; j < f->wps; j++)
      bk__store_le64(slices + 8 * (i * f->wps + j),
                     __atomic_load_n(&w[j], __ATOMIC_RELAXED));
  }
  /* Counts after bits (acquire): every bit seen was counted (apbf.c). */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < f->n; i++) {
    uint64_t c =
        i ? f->gen_count[bk__apbf_slot(f, base, i)] : bk__apbf_current_count(f);
    if (c > BK__AP_GEN_COUNT_MAX) c = BK__AP_GEN_COUNT_MAX;
    bk__store_le64(p + APBF_HEADER_LEN + 8u * i, c);
  }
  pthread_mutex_unlock(&mf->mu);
  bk__format_write_trailer(p, (size_t)(APBF_HEADER_LEN + payload_len(f)));
  *written = need;
  return BK_OK;
}

/* Could inserts and shifts have produced these generation counts? */
static bool counts_reachable(const bk_apbf *f, const unsigned char *counts) {
  for (unsigned i = 0; i < f->n; i++) {
    uint64_t c = bk__load_le64(counts + 8u * i);
    if (c > BK__AP_GEN_COUNT_MAX) return false;
    /* Logical i > 0 was slice 0 i shifts ago; never, when i > shifts. */
    if (i > 0 && i > f->shifts && c != 0) return false;
    if (f->period) continue;
    /* Count-based: every past generation was full, the current at most. */
    if (i == 0 ? c > f->g : (i <= f->shifts && c != f->g)) return false;
  }
  return true;
}

/* Every slice holds at most one bit per insert it received, none past m. */
static bool slices_reachable(const bk_apbf *f, const unsigned char *counts,
                             const unsigned char *slices) {
  unsigned tail = (unsigned)(f->m & 63);
  for (unsigned i = 0; i < f->n; i++) {
    uint64_t received = 0, set = 0;
    for (unsigned j = i + 1 > f->k ? i + 1 - f->k : 0; j <= i; j++)
      received += bk__load_le64(counts + 8u * j); /* <= 32 * 2^56 */
    const unsigned char *w = slices + 8u * i * f->wps;
    for (uint64_t j = 0; j < f->wps; j++)
      set += (uint64_t)__builtin_popcountll(bk__load_le64(w + 8 * j));
    if (tail && (bk__load_le64(w + 8 * (f->wps - 1)) >> tail)) return false;
    if (set > received) return false;
  }
  return true;
}

bk_status bk_apbf_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_apbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_APBF, APBF_VERSION, APBF_HEADER_LEN,
                         &v));
  const unsigned char *p = buf;
  unsigned k = p[24], l = p[25], timed = p[26];
  bk_hash_alg alg = (bk_hash_alg)p[27];
  uint64_t seed = bk__load_le64(p + 32), m = bk__load_le64(p + 40);
  uint64_t g = bk__load_le64(p + 48), period = bk__load_le64(p + 56);
  uint64_t start = bk__load_le64(p + 64), now = bk__load_le64(p + 72);
  uint64_t shifts = bk__load_le64(p + 80);
  BK_RETURN_IF(bk__load_le32(p + 28) || bk__load_le64(p + 88), BK_ECORRUPT);
  BK_RETURN_IF(k < 1 || k > BK_APBF_MAX_K || l < 1 ||
                   k + l > BK_APBF_MAX_SLICES || timed > 1,
               BK_ECORRUPT);
  BK_RETURN_IF((alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3) ||
                   !bk__hash_alg_valid(alg, seed),
               BK_ECORRUPT);
  unsigned n = k + l;
  uint64_t wps = (m + 63) / 64;
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX || wps * 64 * n > BK_BITS_MAX,
               BK_ECORRUPT);
  BK_RETURN_IF(v.payload_len != 8u * (uint64_t)n + 8u * (uint64_t)n * wps,
               BK_ECORRUPT);
  BK_RETURN_IF(g == 0 || g > BK_APBF_MAX_GENERATION, BK_ECORRUPT);
  if (timed) {
    /* create: period = ceil(window / l) for a u64 window, start at most
     * UINT64_MAX - period; advance keeps shifts at the schedule's count. */
    uint64_t max_period = UINT64_MAX / l + (UINT64_MAX % l != 0);
    BK_RETURN_IF(period == 0 || period > max_period ||
                     start > UINT64_MAX - period || now < start ||
                     shifts != (now - start) / period,
                 BK_ECORRUPT);
  } else {
    BK_RETURN_IF(period || start || shifts > BK__AP_MAX_SHIFTS, BK_ECORRUPT);
  }
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_apbf *f;
  bk_status s = bk__apbf_alloc(&al, k, l, m, &f);
  if (s != BK_OK) return s == BK_EINVAL ? BK_ECORRUPT : s;
  f->g = g;
  f->period = period;
  f->start = start;
  f->now = now;
  f->shifts = shifts;
  f->hash_alg = alg;
  f->seed = seed;
  const unsigned char *counts = v.payload, *slices = v.payload + 8u * n;
  if (!counts_reachable(f, counts) || !slices_reachable(f, counts, slices)) {
    bk_apbf_destroy(f);
    return BK_ECORRUPT;
  }
  unsigned base = (unsigned)((n - shifts % n) % n);
  for (unsigned i = 0; i < n; i++) {
    unsigned slot = bk__apbf_slot(f, base, i);
    bk__words_load(f->words + slot * wps, slices + 8u * i * wps, wps);
    f->gen_count[slot] = bk__load_le64(counts + 8u * i);
  }
  uint64_t current = f->gen_count[base];
  if (timed) *bk__apbf_lock_count(f, 0) = current;
  f->state = BK__AP_MAKE(shifts, 0, base, timed ? 0 : current);
  *out = f;
  return BK_OK;
}
