/* SPDX-License-Identifier: MIT */
/*
 * The FBF's serialized form: everything a restarted server needs to keep its
 * memory of recent ids (filters, per-filter counts and ages, clock, N, t and
 * the resizing settings), in the common envelope (core/internal.h).
 *
 * Parameters after the 24-byte prefix (header length 160 + 24 W):
 *    24 u64 m            32 u8 k          33 u8 W (lane width)
 *    34 u8 head          35 u8 count      36 u8 target_count
 *    37 u8 min_filters   38 u8 max_filters (== W)   39 u8 hash_alg
 *    40 u8 check         41 u8 adaptive   42 u16 reserved  44 u32 reserved
 *    48 u64 seed         56 u64 now       64 u64 next_refresh
 *    72 u64 refresh_period                80 u64 min_window
 *    88 u64 refreshes    96 u64 deferred
 *   104 u64 target_fpp in units of 1e-18 (no floating point on the wire)
 *   112 u64 adapt_interval  120 u64 next_adapt  128 u64 period_step
 *   136 u64 min_period      144 u64 max_period  152 u64 generation
 *   160 u64 inserted[W]     160+8W u64 became_present[W]
 *   160+16W u64 shared[W]   (all three per physical slot)
 * Payload: the lane words, ceil(m * stride / 64) + 1 little-endian u64s;
 * slots outside the logical set, lane padding and the spare word are zero.
 */
#include <math.h>

#include "fbf_internal.h"

#define FBF_VERSION 1
#define FBF_FIXED_HEADER 160u
#define FPP_SCALE 1e18

/* target_fpp on the wire. Rounding can reach 0 or 10^18 at the ends of
 * (0, 1): keep it inside, so what this writes always loads. */
static uint64_t fpp_units(double fpp) {
  int64_t units = llround(fpp * FPP_SCALE);
  if (units < 1) units = 1;
  if (units > 999999999999999999) units = 999999999999999999;
  return (uint64_t)units;
}

static uint32_t header_len_for(unsigned width) {
  return FBF_FIXED_HEADER + 24u * width;
}

bk_status bk_fbf_serialized_size(const bk_fbf *f, size_t *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  *out = header_len_for(f->width) + (size_t)f->n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_fbf_serialize(const bk_fbf *f, void *buf, size_t cap,
                           size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_fbf_serialized_size(f, &need), need, buf, cap, written);
  bk_fbf *mf = (bk_fbf *)f; /* the mutex only */
  pthread_mutex_lock(&mf->mu);
  unsigned char *p = buf;
  uint32_t hl = header_len_for(f->width);
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
  bk__format_write_prefix(p, FBF_VERSION, BK__TYPE_FBF, hl, f->n_words * 8);
  memset(p + 24, 0, hl - 24);
  bk__store_le64(p + 24, f->m);
  p[32] = (unsigned char)f->k;
  p[33] = (unsigned char)f->width;
  p[34] = (unsigned char)BK__ST_HEAD(st);
  p[35] = (unsigned char)BK__ST_COUNT(st);
  p[36] = (unsigned char)f->target_count;
  p[37] = (unsigned char)f->min_filters;
  p[38] = (unsigned char)f->max_filters;
  p[39] = (unsigned char)f->hash_alg;
  p[40] = (unsigned char)f->check;
  p[41] = f->adaptive ? 1 : 0;
  bk__store_le64(p + 48, f->seed);
  bk__store_le64(p + 56, f->now);
  bk__store_le64(p + 64, f->next_refresh);
  bk__store_le64(p + 72, f->refresh_period);
  bk__store_le64(p + 80, f->min_window);
  bk__store_le64(p + 88, f->refreshes);
  bk__store_le64(p + 96, f->deferred);
  /* Rounding can reach 0 or 10^18 at the ends of (0, 1): keep it inside,
   * so what this writes always loads. */
  bk__store_le64(p + 104, fpp_units(f->target_fpp));
  bk__store_le64(p + 112, f->adapt_interval);
  bk__store_le64(p + 120, f->next_adapt);
  bk__store_le64(p + 128, f->period_step);
  bk__store_le64(p + 136, f->min_period);
  bk__store_le64(p + 144, f->max_period);
  uint64_t gen = bk__sat_add(f->gen_base, BK__ST_GEN(st));
  bk__store_le64(p + 152,
                 gen > BK__FBF_GEN_SAVED_MAX ? BK__FBF_GEN_SAVED_MAX : gen);
  /* Bits first, counts after an acquire fence: an insert whose bits are
   * in the copy is in the counts too (inserts count first, see insert). */
  bk__words_store(p + hl, f->words, f->n_words);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  for (unsigned s = 0; s < f->width; s++) {
    /* Counts at most BK__FBF_SLOT_MAX (fbf_internal.h), shared <= count. */
    uint64_t ins = bk__fbf_count(f, s);
    uint64_t sh = __atomic_load_n(&f->shared[s], __ATOMIC_RELAXED);
    if (ins > BK__FBF_SLOT_MAX) ins = BK__FBF_SLOT_MAX;
    if (sh > ins) sh = ins;
    bk__store_le64(p + FBF_FIXED_HEADER + 8 * s, ins);
    bk__store_le64(p + FBF_FIXED_HEADER + 8 * (f->width + s),
                   f->became_present[s]);
    bk__store_le64(p + FBF_FIXED_HEADER + 8 * (2 * f->width + s), sh);
  }
  pthread_mutex_unlock(&mf->mu);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

/* One pass over the payload. Returns false when a bit that must be zero is
 * set: free slots, lane padding past W, bits past the last lane, and the
 * spare word. Otherwise *has_bits gets the slots holding any bit and
 * *set_bits the number of bits set. The bit pattern repeats every `stride`
 * words (64 lanes), so this is an AND, an OR and a popcount a word. */
static bool payload_scan(const unsigned char *payload, uint64_t m,
                         unsigned width, unsigned stride, unsigned head,
                         unsigned count, uint64_t n_words, uint64_t *has_bits,
                         uint64_t *set_bits) {
  uint64_t in_set = 0; /* physical slots of the logical set */
  for (unsigned p = 0; p < count; p++)
    in_set |= (uint64_t)1 << ((head + p) % width);
  uint64_t allowed[64] = {0}, seen[64] = {0};
  for (unsigned p = 0; p < stride; p++)
    for (unsigned b = 0; b < 64; b++) {
      unsigned slot = (unsigned)(((uint64_t)p * 64 + b) % stride);
      if (slot < width && ((in_set >> slot) & 1))
        allowed[p] |= (uint64_t)1 << b;
    }
  uint64_t lane_bits = m * stride;
  uint64_t full_words = lane_bits / 64, popcount = 0;
  for (uint64_t w = 0, p = 0; w < n_words; w++) {
    uint64_t v = bk__load_le64(payload + 8 * w);
    uint64_t ok = allowed[p];
    if (w >= full_words) {
      unsigned tail = w == full_words ? (unsigned)(lane_bits & 63) : 0;
      ok &= tail ? (((uint64_t)1 << tail) - 1) : 0;
    }
    if (v & ~ok) return false;
    seen[p] |= v;
    popcount += (uint64_t)__builtin_popcountll(v);
    if (++p == stride) p = 0;
  }
  uint64_t slots = 0;
  for (unsigned p = 0; p < stride; p++)
    for (unsigned b = 0; b < 64; b++)
      if ((seen[p] >> b) & 1)
        slots |= (uint64_t)1 << (((uint64_t)p * 64 + b) % stride);
  *has_bits = slots;
  *set_bits = popcount;
  return true;
}

bk_status bk_fbf_deserialize(const void *buf, size_t len,
                             const bk_allocator *allocator, bk_fbf **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  const unsigned char *p = buf;
  BK_RETURN_IF(len < FBF_FIXED_HEADER, BK_ECORRUPT);
  unsigned width = p[33];
  BK_RETURN_IF(width < 3 || width > BK_FBF_MAX_FILTERS, BK_ECORRUPT);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_FBF, FBF_VERSION,
                         header_len_for(width), &v));
  uint64_t m = bk__load_le64(p + 24);
  unsigned k = p[32], head = p[34], count = p[35], target = p[36];
  unsigned min_f = p[37], max_f = p[38], alg = p[39], check = p[40];
  unsigned adaptive = p[41];
  uint64_t seed = bk__load_le64(p + 48);
  uint64_t t = bk__load_le64(p + 72), min_window = bk__load_le64(p + 80);
  uint64_t units = bk__load_le64(p + 104);
  uint64_t interval = bk__load_le64(p + 112), step = bk__load_le64(p + 128);
  uint64_t min_period = bk__load_le64(p + 136);
  uint64_t max_period = bk__load_le64(p + 144);
  uint64_t gen = bk__load_le64(p + 152);
  BK_RETURN_IF(bk__load_le16(p + 42) || bk__load_le32(p + 44), BK_ECORRUPT);
  BK_RETURN_IF(m == 0 || m > BK_BITS_MAX || k == 0 || k > BK_K_MAX,
               BK_ECORRUPT);
  BK_RETURN_IF(head >= width || count < 3 || count > width, BK_ECORRUPT);
  BK_RETURN_IF(max_f != width || min_f < 3 || min_f > max_f || target < min_f ||
                   target > max_f,
               BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid((bk_hash_alg)alg, seed), BK_ECORRUPT);
  BK_RETURN_IF(check != BK_FBF_CHECK_OPTIMIZED && check != BK_FBF_CHECK_SIMPLE,
               BK_ECORRUPT);
  BK_RETURN_IF(adaptive > 1, BK_ECORRUPT);
  BK_RETURN_IF(t == 0 || min_period == 0 || min_period > t || t > max_period,
               BK_ECORRUPT);
  BK_RETURN_IF(interval == 0 || step == 0, BK_ECORRUPT);
  BK_RETURN_IF(units == 0 || units >= (uint64_t)1000000000000000000u,
               BK_ECORRUPT);
  /* Only a value the writer produces: units past 2^53 do not survive the
   * trip through a double, and a blob that re-serializes differently is
   * not one an FBF wrote. */
  double target_fpp = (double)units / FPP_SCALE;
  BK_RETURN_IF(fpp_units(target_fpp) != units, BK_ECORRUPT);
  BK_RETURN_IF(gen > BK__FBF_GEN_SAVED_MAX, BK_ECORRUPT);
  /* Only what create plus operations can reach (docs/design/fbf.md, "FBF
   * state invariants"). The goal keeps min_window, as create, resize and
   * Algorithm 3 all ensure: (target - 1) t >= min_window. */
  BK_RETURN_IF(min_window == 0 || bk__fbf_window_short(target, t, min_window),
               BK_ECORRUPT);
  /* The schedule is what an advance leaves: the next refresh at most one
   * period ahead of the clock, and never earlier than one period after
   * time 0; "never" (UINT64_MAX) only where now + t saturates. The same
   * for the next adaptation tick, strictly after the clock. A stale or far
   * schedule would make advance replay or wait without end. */
  uint64_t now = bk__load_le64(p + 56);
  uint64_t next_refresh = bk__load_le64(p + 64);
  uint64_t next_adapt = bk__load_le64(p + 120);
  uint64_t refresh_limit = bk__sat_add(now, t);
  BK_RETURN_IF(
      next_refresh < now || next_refresh > refresh_limit || next_refresh < t,
      BK_ECORRUPT);
  uint64_t adapt_limit = bk__sat_add(now, interval);
  if (adaptive)
    BK_RETURN_IF((next_adapt <= now && next_adapt != UINT64_MAX) ||
                     next_adapt > adapt_limit || next_adapt < interval,
                 BK_ECORRUPT);
  else /* set once at create (start_time <= 2^63) and never moved */
    BK_RETURN_IF(
        next_adapt < interval || next_adapt - interval > UINT64_MAX / 2,
        BK_ECORRUPT);
  unsigned stride = width > 57 ? 64 : width;
  uint64_t n_words = (m * stride + 63) / 64 + 1;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  /* Per slot: counts only in the logical set, shared <= inserted; the
   * filters that became present did so in order, none after the clock. */
  /* Inserts are counted in u64s that an insert bumps without a check:
   * no FBF lives to count 2^62 (146 years at 10^9 a second), and a larger
   * count would wrap to 0 under later inserts, making a filter with bits
   * look empty. */
  uint64_t all_inserts = 0;
  for (unsigned pos = 0; pos < width; pos++) {
    unsigned s = (head + pos) % width;
    uint64_t ins = bk__load_le64(p + FBF_FIXED_HEADER + 8 * s);
    uint64_t bp = bk__load_le64(p + FBF_FIXED_HEADER + 8 * (width + s));
    uint64_t sh = bk__load_le64(p + FBF_FIXED_HEADER + 8 * (2 * width + s));
    BK_RETURN_IF(pos >= count && (ins != 0 || sh != 0), BK_ECORRUPT);
    BK_RETURN_IF(sh > ins, BK_ECORRUPT);
    if (pos >= 1 && pos < count) {
      BK_RETURN_IF(bp > now, BK_ECORRUPT);
      if (pos >= 2) {
        unsigned newer = (head + pos - 1) % width;
        BK_RETURN_IF(
            bp > bk__load_le64(p + FBF_FIXED_HEADER + 8 * (width + newer)),
            BK_ECORRUPT);
      }
    }
    if (pos < count) {
      /* Each count bounded before it is added: the sum of W <= 64 counts
       * of at most 2^62 cannot wrap (a sum checked only afterwards could:
       * 3 + (2^64 - 2) is 1, found by the fuzzer). */
      BK_RETURN_IF(ins > BK__FBF_SLOT_MAX, BK_ECORRUPT);
      all_inserts += ins;
      BK_RETURN_IF(all_inserts > BK__FBF_MAX_INSERTS, BK_ECORRUPT);
    }
  }
  /* Bits agree with the counts: a filter with bits has inserts, and each
   * insert sets at most k bits in a filter. (A snapshot counts every insert
   * whose bits it copied: inserts count first, serialize reads bits
   * first.) */
  uint64_t has_bits, set_bits;
  BK_RETURN_IF(!payload_scan(v.payload, m, width, stride, head, count, n_words,
                             &has_bits, &set_bits),
               BK_ECORRUPT);
  for (unsigned s = 0; s < width; s++)
    BK_RETURN_IF(((has_bits >> s) & 1) &&
                     bk__load_le64(p + FBF_FIXED_HEADER + 8 * s) == 0,
                 BK_ECORRUPT);
  uint64_t bits_allowed;
  if (!__builtin_mul_overflow(all_inserts, (uint64_t)k, &bits_allowed))
    BK_RETURN_IF(set_bits > bits_allowed, BK_ECORRUPT);

  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_fbf *f;
  BK_TRY(bk__fbf_alloc(&al, m, k, width, &f));
  f->hash_alg = (bk_hash_alg)alg;
  f->seed = seed;
  f->check = (bk_fbf_check)check;
  /* The in-process generation restarts at 0 (every chunk epoch is 0:
   * swept); the blob's value is kept for the next save. */
  f->state = BK__ST_MAKE(head, count, 0, 0, 0);
  f->gen_base = gen;
  f->now = now;
  f->next_refresh = next_refresh;
  f->refresh_period = t;
  f->min_window = min_window;
  f->refreshes = bk__load_le64(p + 88);
  f->deferred = bk__load_le64(p + 96);
  f->target_count = target;
  f->adaptive = adaptive;
  f->target_fpp = target_fpp;
  f->adapt_interval = interval;
  f->next_adapt = next_adapt;
  f->period_step = step;
  f->min_period = min_period;
  f->max_period = max_period;
  f->min_filters = min_f;
  f->max_filters = max_f;
  for (unsigned s = 0; s < width; s++) {
    bk__fbf_count_set(f, s, bk__load_le64(p + FBF_FIXED_HEADER + 8 * s));
    f->became_present[s] =
        bk__load_le64(p + FBF_FIXED_HEADER + 8 * (width + s));
    f->shared[s] = bk__load_le64(p + FBF_FIXED_HEADER + 8 * (2 * width + s));
  }
  bk__words_load(f->words, v.payload, n_words);
  *out = f;
  return BK_OK;
}
