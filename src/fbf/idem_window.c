/* SPDX-License-Identifier: MIT */
/*
 * bk_idem's per-client sequence windows (idem_window.h): the record layout,
 * the Robin Hood table of each stripe, the coarse clock of each stripe and
 * the decision rule. The rule and why it is exact are in
 * docs/design/idem.md, "Client windows".
 *
 * A record, rec_size = 16 + 9 W / 64 bytes, unaligned fields read with
 * memcpy:
 *   0 u64 client | 8 u64 high | 16 W/64 x u64 ring words | W/64 x u8 ticks
 * A slot is empty exactly when the bit of its `high` is clear (zeroed
 * memory is empty; a live record always holds the bit of its own high).
 */
#include "idem_window.h"

#include <string.h>

#include "core/hash_fast.h"
#include "core/sync.h"

#define TICKS_PER_TIMEOUT 16u
#define REBASE_AT 224u  /* a stripe clock this far past its epoch ... */
#define REBASE_KEEP 32u /* ... moves the epoch to this many ticks back */
#define MAX_REC (16u + 9u * (BK__WIN_MAX / 64u))
#define NONE UINT64_MAX

static inline uint64_t ld64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline void st64(unsigned char *p, uint64_t v) {
  memcpy(p, &v, 8);
}

static inline uint64_t word_at(const unsigned char *r, unsigned j) {
  return ld64(r + 16 + 8 * (size_t)j);
}

static inline void word_set(unsigned char *r, unsigned j, uint64_t v) {
  st64(r + 16 + 8 * (size_t)j, v);
}

static inline unsigned char *ticks_of(const bk__idem_windows *w,
                                      unsigned char *r) {
  return r + 16 + 8 * (size_t)w->words;
}

static inline bool rec_live(const bk__idem_windows *w, const unsigned char *r) {
  uint64_t high = ld64(r + 8);
  return (word_at(r, (unsigned)(high >> 6) & (w->words - 1)) >> (high & 63)) &
         1u;
}

static inline uint64_t client_hash(const bk__idem_windows *w, uint64_t c) {
  return bk__mix64(c ^ w->seed ^ UINT64_C(0x9E3779B97F4A7C15));
}

static inline bk__win_stripe *stripe_for(const bk__idem_windows *w,
                                         uint64_t h) {
  return &w->stripes[h & (BK__WIN_STRIPES - 1)];
}

static inline uint64_t home_of(uint64_t h, uint64_t n) {
  return (uint64_t)(((bk__u128)h * n) >> 64);
}

static inline unsigned char *slot(const bk__idem_windows *w,
                                  const bk__win_stripe *s, uint64_t i) {
  return s->slots + (size_t)i * w->rec_size;
}

/* How far slot i is from its record's home slot. */
static uint64_t displacement(const bk__idem_windows *w, const bk__win_stripe *s,
                             uint64_t i) {
  uint64_t home = home_of(client_hash(w, ld64(slot(w, s, i))), s->n_slots);
  return i >= home ? i - home : i + s->n_slots - home;
}

static inline uint64_t tick_of(const bk__idem_windows *w, uint64_t now) {
  return now > w->start ? (now - w->start) >> w->unit_shift : 0;
}

/* Whether a word of stripe tick t can still see a retry at stripe tick cur
 * (t may be ahead of cur when another thread's now was later). */
static inline bool tick_open(const bk__idem_windows *w, unsigned t,
                             unsigned cur) {
  return (int)cur - (int)t <= (int)w->open;
}

static bool rec_open(const bk__idem_windows *w, unsigned char *r,
                     unsigned cur) {
  const unsigned char *t = ticks_of(w, r);
  for (unsigned j = 0; j < w->words; j++)
    if (tick_open(w, t[j], cur)) return true;
  return false;
}

/* ---- the Robin Hood table ------------------------------------------------ */

static uint64_t find(const bk__idem_windows *w, const bk__win_stripe *s,
                     uint64_t client, uint64_t h) {
  if (!s->n_slots) return NONE;
  uint64_t i = home_of(h, s->n_slots);
  for (uint64_t dist = 0;; dist++) {
    const unsigned char *r = slot(w, s, i);
    if (!rec_live(w, r)) return NONE;
    if (ld64(r) == client) return i;
    if (displacement(w, s, i) < dist) return NONE;
    i = i + 1 == s->n_slots ? 0 : i + 1;
  }
}

/* Place record `rec` (a scratch copy, clobbered) into a table with room. */
static void place(const bk__idem_windows *w, bk__win_stripe *s,
                  unsigned char *rec) {
  unsigned char tmp[MAX_REC];
  size_t rs = w->rec_size;
  uint64_t i = home_of(client_hash(w, ld64(rec)), s->n_slots);
  for (uint64_t dist = 0;; dist++) {
    unsigned char *r = slot(w, s, i);
    if (!rec_live(w, r)) {
      memcpy(r, rec, rs);
      return;
    }
    uint64_t d = displacement(w, s, i);
    if (d < dist) { /* the richer record moves on */
      memcpy(tmp, r, rs);
      memcpy(r, rec, rs);
      memcpy(rec, tmp, rs);
      dist = d;
    }
    i = i + 1 == s->n_slots ? 0 : i + 1;
  }
}

/* Remove the record at i, shifting the records after it back. */
static void remove_at(const bk__idem_windows *w, bk__win_stripe *s,
                      uint64_t i) {
  for (;;) {
    uint64_t j = i + 1 == s->n_slots ? 0 : i + 1;
    unsigned char *rj = slot(w, s, j);
    if (!rec_live(w, rj) || displacement(w, s, j) == 0) break;
    memcpy(slot(w, s, i), rj, w->rec_size);
    i = j;
  }
  memset(slot(w, s, i), 0, w->rec_size);
  s->n--;
}

/* Rebuild stripe s with n_slots slots (>= its records / 0.9). */
static bk_status resize(bk__idem_windows *w, bk__win_stripe *s,
                        uint64_t n_slots) {
  unsigned char *fresh = bk__calloc(&w->alloc, (size_t)n_slots, w->rec_size);
  BK_RETURN_IF(!fresh, BK_ENOMEM);
  unsigned char rec[MAX_REC];
  bk__win_stripe grown = *s;
  grown.slots = fresh;
  grown.n_slots = n_slots;
  for (uint64_t i = 0; i < s->n_slots; i++) {
    const unsigned char *r = slot(w, s, i);
    if (!rec_live(w, r)) continue;
    memcpy(rec, r, w->rec_size);
    place(w, &grown, rec);
  }
  bk__free(&w->alloc, s->slots);
  /* Atomic stores: bk__win_prefetch reads them without the lock. */
  __atomic_store_n(&s->slots, fresh, __ATOMIC_RELAXED);
  __atomic_store_n(&s->n_slots, n_slots, __ATOMIC_RELAXED);
  return BK_OK;
}

/* Room for one more record: at most 90 % full, grown by a twelfth (so at
 * least 83 % full after a growth; rehashing costs about 12 moves per new
 * client, amortized, and clients are far fewer than ops). */
static bk_status reserve_one(bk__idem_windows *w, bk__win_stripe *s) {
  if ((s->n + 1) * 10 <= s->n_slots * 9) return BK_OK;
  uint64_t next = s->n_slots + s->n_slots / 12;
  if (next < 16) next = 16;
  while ((s->n + 1) * 10 > next * 9) next += next / 12 + 1;
  return resize(w, s, next);
}

/* ---- the stripe clock ---------------------------------------------------- */

/* Stripe-relative tick of `nt`, moving the stripe's epoch forward (and every
 * tick it holds back, clamped at 0, which only makes them later) when nt is
 * too far past it. A stale nt (a caller's now read before another caller's
 * later one) counts as the latest tick the stripe has seen, so the ticks of
 * a client's ops never decrease in lock order (the proof in idem.md needs
 * it) and a stale time only errs late, the conservative side. */
static unsigned stripe_tick(const bk__idem_windows *w, bk__win_stripe *s,
                            uint64_t nt) {
  if (nt < s->last)
    nt = s->last;
  else
    s->last = nt;
  if (nt - s->epoch >= REBASE_AT) {
    uint64_t epoch = nt - REBASE_KEEP, delta = epoch - s->epoch;
    for (uint64_t i = 0; i < s->n_slots; i++) {
      unsigned char *r = slot(w, s, i);
      if (!rec_live(w, r)) continue;
      unsigned char *t = ticks_of(w, r);
      for (unsigned j = 0; j < w->words; j++)
        t[j] = t[j] > delta ? (unsigned char)(t[j] - delta) : 0;
    }
    s->epoch = epoch;
  }
  return (unsigned)(nt - s->epoch);
}

/* Evict the stripe's records that no retry can reach any more; at most once
 * per `open` ticks. A failed shrink keeps the table as it is. */
static void sweep_stripe(bk__idem_windows *w, bk__win_stripe *s, uint64_t nt,
                         unsigned cur) {
  if (nt < s->swept + w->open) return;
  s->swept = nt;
  for (uint64_t i = 0; i < s->n_slots;) {
    unsigned char *r = slot(w, s, i);
    if (rec_live(w, r) && !rec_open(w, r, cur)) {
      remove_at(w, s, i); /* slot i now holds the next record: look again */
      s->evicted++;
    } else {
      i++;
    }
  }
  if (s->n_slots > 16 && s->n * 2 < s->n_slots) {
    uint64_t want = s->n * 5 / 4 + 16;
    if (want < s->n_slots) (void)resize(w, s, want);
  }
}

/* ---- set-up -------------------------------------------------------------- */

bool bk__win_size_ok(unsigned w) {
  return w == 0 || (w >= BK__WIN_MIN && w <= BK__WIN_MAX && (w & (w - 1)) == 0);
}

bk_status bk__win_init(bk__idem_windows *win, const bk__alloc *al, unsigned w,
                       uint64_t timeout, uint64_t start, uint64_t seed) {
  BK_RETURN_IF(!bk__win_size_ok(w) || timeout == 0, BK_EINVAL);
  win->alloc = *al;
  win->w = w ? w : BK__WIN_DEFAULT;
  win->words = win->w / 64;
  win->rec_size = 16 + 9 * (size_t)win->words;
  win->timeout = timeout;
  win->start = start;
  /* unit = the least power of two >= ceil(timeout / 16) (a shift, not a
   * division, per op), so timeout / unit <= 16 and open = ceil(timeout /
   * unit) + 1 <= 17 ticks (see tick_open's proof in idem.md), and every
   * age a snapshot spells (at most open + 1) fits in REBASE_KEEP. */
  uint64_t least =
      timeout / TICKS_PER_TIMEOUT + (timeout % TICKS_PER_TIMEOUT != 0);
  win->unit_shift = 0;
  while ((UINT64_C(1) << win->unit_shift) < least) win->unit_shift++;
  win->unit = UINT64_C(1) << win->unit_shift;
  win->open = timeout / win->unit + (timeout % win->unit != 0) + 1;
  win->seed = seed;
  BK_TRY(bk__region_alloc(al, BK__WIN_STRIPES * sizeof(bk__win_stripe),
                          &win->region));
  win->stripes = win->region.data;
  return BK_OK;
}

void bk__win_free(bk__idem_windows *win) {
  if (!win || !win->stripes) return;
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++)
    bk__free(&win->alloc, win->stripes[i].slots);
  bk__region_free(&win->alloc, &win->region);
  win->stripes = NULL;
}

void bk__win_prefetch(const bk__idem_windows *win, uint64_t client) {
  uint64_t h = client_hash(win, client);
  const bk__win_stripe *s = stripe_for(win, h);
  /* Racy reads on purpose, for a prefetch only: a stale address is
   * harmless. */
  unsigned char *slots = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
  uint64_t n = __atomic_load_n(&s->n_slots, __ATOMIC_RELAXED);
  if (slots && n) {
    const unsigned char *r = slots + (size_t)home_of(h, n) * win->rec_size;
    __builtin_prefetch(r);
    __builtin_prefetch(r + 63);
  }
}

/* ---- the decision -------------------------------------------------------- */

/* Hand word `pos` of record r (word index `index`) to the slide callback if
 * a retry of its seqs may still arrive. Returns the seqs handed over. */
static uint64_t slide_word(const bk__idem_windows *w, unsigned char *r,
                           unsigned pos, uint64_t index, unsigned cur,
                           bk__win_slide_fn slide, void *ctx) {
  uint64_t bits = word_at(r, pos);
  if (!bits || !slide || !tick_open(w, ticks_of(w, r)[pos], cur)) return 0;
  uint64_t seqs[64];
  size_t n = 0;
  for (; bits; bits &= bits - 1)
    seqs[n++] = (index << 6) | (uint64_t)__builtin_ctzll(bits);
  (void)slide(ctx, ld64(r), seqs, n);
  return n;
}

static inline void touch(unsigned char *t, unsigned cur) {
  if (*t < cur) *t = (unsigned char)cur;
}

bk_status bk__win_decide(bk__idem_windows *w, uint64_t client, uint64_t seq,
                         uint64_t now, bool set, bk__win_slide_fn slide,
                         void *ctx, bk__win_verdict *out) {
  uint64_t h = client_hash(w, client);
  bk__win_stripe *s = stripe_for(w, h);
  const unsigned nw = w->words;
  bk__spin_lock(&s->lock);
  uint64_t nt = tick_of(w, now);
  unsigned cur = stripe_tick(w, s, nt);
  if (set) sweep_stripe(w, s, nt, cur);
  uint64_t i = find(w, s, client, h);
  unsigned char *r = i == NONE ? NULL : slot(w, s, i);
  if (r && !rec_open(w, r, cur)) { /* idle past the timeout: forgotten */
    if (set) {
      remove_at(w, s, i);
      s->evicted++;
    }
    r = NULL;
  }
  bk__win_verdict v;
  if (!r) {
    v = BK__WIN_NEW;
    if (set) {
      bk_status st = reserve_one(w, s);
      if (st != BK_OK) {
        bk__spin_unlock(&s->lock);
        return st;
      }
      unsigned char rec[MAX_REC];
      memset(rec, 0, w->rec_size);
      st64(rec, client);
      st64(rec + 8, seq);
      word_set(rec, (unsigned)(seq >> 6) & (nw - 1), UINT64_C(1) << (seq & 63));
      memset(ticks_of(w, rec), (int)cur, nw);
      place(w, s, rec);
      s->n++;
    }
  } else {
    uint64_t high = ld64(r + 8), hw = high >> 6, sw = seq >> 6;
    unsigned char *t = ticks_of(w, r);
    if (seq > high) {
      v = BK__WIN_NEW;
      if (set) {
        uint64_t d = sw - hw, n_slide = d < nw ? d : nw;
        bool handing = false;
        for (uint64_t j = 1; j <= n_slide && slide && !handing; j++) {
          unsigned pos = (unsigned)(hw + j) & (nw - 1);
          handing = word_at(r, pos) && tick_open(w, t[pos], cur);
        }
        bk_status st = handing ? slide(ctx, client, NULL, 0) : BK_OK;
        if (st != BK_OK) {
          bk__spin_unlock(&s->lock);
          return st;
        }
        for (uint64_t j = 1; j <= n_slide; j++) {
          unsigned pos = (unsigned)(hw + j) & (nw - 1);
          /* word pos holds word index hw + j - nw (below 0: empty) */
          if (hw + j >= nw)
            s->slid += slide_word(w, r, pos, hw + j - nw, cur, slide, ctx);
          word_set(r, pos, 0);
          t[pos] = (unsigned char)cur;
        }
        st64(r + 8, seq);
        unsigned pos = (unsigned)sw & (nw - 1);
        word_set(r, pos, word_at(r, pos) | UINT64_C(1) << (seq & 63));
        touch(&t[pos], cur);
      }
    } else if (hw - sw < nw) {
      unsigned pos = (unsigned)sw & (nw - 1);
      uint64_t bit = UINT64_C(1) << (seq & 63), wv = word_at(r, pos);
      v = (wv & bit) ? BK__WIN_DUP : BK__WIN_NEW;
      if (set && v == BK__WIN_NEW) {
        word_set(r, pos, wv | bit);
        touch(&t[pos], cur);
      }
    } else {
      v = BK__WIN_BELOW;
      if (set) touch(&t[hw & (nw - 1)], cur);
    }
  }
  if (set) {
    if (v == BK__WIN_BELOW)
      s->below++;
    else
      s->decided++;
  }
  bk__spin_unlock(&s->lock);
  *out = v;
  return BK_OK;
}

void bk__win_maybe_sweep(bk__idem_windows *w, uint64_t now) {
  uint64_t nt = tick_of(w, now);
  uint64_t last = __atomic_load_n(&w->swept, __ATOMIC_RELAXED);
  if (nt < last + w->open ||
      !__atomic_compare_exchange_n(&w->swept, &last, nt, false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return;
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++) {
    bk__win_stripe *s = &w->stripes[i];
    bk__spin_lock(&s->lock);
    sweep_stripe(w, s, nt, stripe_tick(w, s, nt));
    bk__spin_unlock(&s->lock);
  }
}

static void add_totals(const bk__idem_windows *w, const bk__win_stripe *s,
                       bk__win_totals *out) {
  out->clients += s->n;
  out->decided += s->decided;
  out->below += s->below;
  out->slid += s->slid;
  out->evicted += s->evicted;
  out->memory += (size_t)s->n_slots * w->rec_size;
}

void bk__win_totals_get(const bk__idem_windows *w, bk__win_totals *out) {
  memset(out, 0, sizeof *out);
  out->memory = BK__WIN_STRIPES * sizeof(bk__win_stripe);
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++) {
    bk__win_stripe *s = &w->stripes[i];
    bk__spin_lock(&s->lock);
    add_totals(w, s, out);
    bk__spin_unlock(&s->lock);
  }
}

void bk__win_totals_locked(const bk__idem_windows *w, bk__win_totals *out) {
  memset(out, 0, sizeof *out);
  out->memory = BK__WIN_STRIPES * sizeof(bk__win_stripe);
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++)
    add_totals(w, &w->stripes[i], out);
}

void bk__win_set_totals(bk__idem_windows *w, uint64_t decided, uint64_t below,
                        uint64_t slid, uint64_t evicted) {
  bk__win_stripe *s = &w->stripes[0];
  s->decided = decided;
  s->below = below;
  s->slid = slid;
  s->evicted = evicted;
}

/* ---- the snapshot -------------------------------------------------------- */

void bk__win_lock_all(bk__idem_windows *w) {
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++)
    bk__spin_lock(&w->stripes[i].lock);
}

void bk__win_unlock_all(bk__idem_windows *w) {
  for (unsigned i = BK__WIN_STRIPES; i-- > 0;)
    bk__spin_unlock(&w->stripes[i].lock);
}

size_t bk__win_record_size(const bk__idem_windows *w) {
  return w->rec_size;
}

/* Age in ticks at absolute tick nt of a word of stripe tick t; a closed
 * word's age is written as open + 1 (its exact age no longer matters, and
 * one spelling keeps the snapshot canonical). */
static unsigned age_of(const bk__idem_windows *w, const bk__win_stripe *s,
                       unsigned t, uint64_t nt) {
  uint64_t abs = s->epoch + t;
  uint64_t age = nt > abs ? nt - abs : 0;
  return age > w->open ? (unsigned)w->open + 1 : (unsigned)age;
}

static bool live_at(const bk__idem_windows *w, const bk__win_stripe *s,
                    unsigned char *r, uint64_t nt) {
  if (!rec_live(w, r)) return false;
  const unsigned char *t = ticks_of(w, r);
  for (unsigned j = 0; j < w->words; j++)
    if (age_of(w, s, t[j], nt) <= w->open) return true;
  return false;
}

uint64_t bk__win_live(bk__idem_windows *w, uint64_t now) {
  uint64_t nt = tick_of(w, now), n = 0;
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++) {
    const bk__win_stripe *s = &w->stripes[i];
    for (uint64_t j = 0; j < s->n_slots; j++)
      n += live_at(w, s, slot(w, s, j), nt);
  }
  return n;
}

size_t bk__win_write(bk__idem_windows *w, uint64_t now, unsigned char *p) {
  uint64_t nt = tick_of(w, now);
  unsigned char *start = p;
  for (unsigned i = 0; i < BK__WIN_STRIPES; i++) {
    const bk__win_stripe *s = &w->stripes[i];
    for (uint64_t j = 0; j < s->n_slots; j++) {
      unsigned char *r = slot(w, s, j);
      if (!live_at(w, s, r, nt)) continue;
      /* little-endian on the wire */
      bk__store_le64(p, ld64(r));
      bk__store_le64(p + 8, ld64(r + 8));
      for (unsigned k = 0; k < w->words; k++)
        bk__store_le64(p + 16 + 8 * (size_t)k, word_at(r, k));
      const unsigned char *t = ticks_of(w, r);
      for (unsigned k = 0; k < w->words; k++)
        p[16 + 8 * (size_t)w->words + k] =
            (unsigned char)age_of(w, s, t[k], nt);
      p += w->rec_size;
    }
  }
  return (size_t)(p - start);
}

bk_status bk__win_restore(bk__idem_windows *w, uint64_t now,
                          const unsigned char *in) {
  const unsigned nw = w->words;
  unsigned char rec[MAX_REC];
  uint64_t client = bk__load_le64(in), high = bk__load_le64(in + 8);
  uint64_t hw = high >> 6;
  st64(rec, client);
  st64(rec + 8, high);
  for (unsigned k = 0; k < nw; k++)
    word_set(rec, k, bk__load_le64(in + 16 + 8 * (size_t)k));
  BK_RETURN_IF(!rec_live(w, rec), BK_ECORRUPT); /* high's bit clear */
  unsigned hpos = (unsigned)hw & (nw - 1);
  uint64_t above = (high & 63) == 63 ? 0 : ~UINT64_C(0) << ((high & 63) + 1);
  BK_RETURN_IF(word_at(rec, hpos) & above, BK_ECORRUPT);
  for (uint64_t j = 1; j < nw; j++) /* words below seq 0 */
    if (hw + j < nw)
      BK_RETURN_IF(word_at(rec, (unsigned)(hw + j) & (nw - 1)), BK_ECORRUPT);
  uint64_t nt = tick_of(w, now), h = client_hash(w, client);
  bk__win_stripe *s = stripe_for(w, h);
  unsigned cur = stripe_tick(w, s, nt);
  const unsigned char *ages = in + 16 + 8 * (size_t)nw;
  bool open = false;
  unsigned char *t = ticks_of(w, rec);
  for (unsigned k = 0; k < nw; k++) {
    /* No word older than the table, none spelled past open + 1. */
    BK_RETURN_IF(ages[k] > nt || ages[k] > w->open + 1, BK_ECORRUPT);
    open |= ages[k] <= w->open;
    t[k] = (unsigned char)(cur - ages[k]); /* cur >= min(nt, 32) >= age */
  }
  BK_RETURN_IF(!open, BK_ECORRUPT); /* a writer never saves a closed one */
  BK_RETURN_IF(find(w, s, client, h) != NONE, BK_ECORRUPT); /* twice */
  BK_TRY(reserve_one(w, s));
  place(w, s, rec);
  s->n++;
  return BK_OK;
}
