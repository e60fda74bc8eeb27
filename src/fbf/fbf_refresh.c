/* SPDX-License-Identifier: MIT */
/*
 * The FBF's clock: the refresh of fbf-thesis Sec. 3.3 (a new empty future,
 * every filter one place older, the oldest dropped once min_window allows,
 * more of them while an adaptive FBF is over its goal or under pressure),
 * and bk_fbf_advance, which replays the refreshes and adaptation ticks due
 * up to a time in order without work that grows with the jump. What a
 * refresh decides here is published by fbf.c (bk__fbf_publish_and_sweep),
 * which holds the concurrency protocol with readers and inserters (see the
 * top of fbf.c); the adaptation ticks are Algorithm 3's, in fbf_adapt.c.
 * Everything here runs under the FBF's mutex.
 */
#include "fbf_internal.h"

/* ---- refresh (Sec. 3.3) -------------------------------------------------- */

/* May the filter in `slot` be dropped at time `now` without forgetting an
 * element younger than min_window? Its elements' newer copies were written
 * while it was the future, i.e. before it became the present. */
static bool droppable(const bk_fbf *f, unsigned slot, uint64_t now) {
  if (!bk__fbf_count(f, slot)) return true;
  return now >= f->became_present[slot] &&
         now - f->became_present[slot] >= f->min_window;
}

/* One refresh at time `now`: a new empty future, every filter one place
 * older, and filters dropped from the old end while more are in use than
 * the target and the window allows. Returns false when it had to be
 * deferred (every slot in use and the oldest still too young). */
static bool refresh(bk_fbf *f, uint64_t now) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned head = BK__ST_HEAD(st), count = BK__ST_COUNT(st);
  uint64_t gen = BK__ST_GEN(st) + 1;
  uint64_t dropped = 0;
  bool future_swept = false;
  if (count == f->width) {
    unsigned oldest = bk__fbf_slot_at(f, head, count - 1);
    if (!droppable(f, oldest, now)) return false;
    /* The oldest filter is dropped and its slot becomes the new future. */
    dropped |= (uint64_t)1 << oldest;
    future_swept = bk__fbf_count(f, oldest) != 0;
    count--;
  }
  unsigned new_head = head == 0 ? f->width - 1 : head - 1;
  count++; /* the new future */
  unsigned new_present = bk__fbf_slot_at(f, new_head, 1);
  f->became_present[new_present] = now;
  __atomic_store_n(&f->shared[new_present], bk__fbf_count(f, new_present),
                   __ATOMIC_RELAXED);
  /* Under pressure (an adaptive FBF at or near its target), filters past
   * what min_window needs are let go as soon as droppable() allows, goal or
   * not: they protect no retry (clients stopped retrying those ids) and
   * their pairs only add false positives. Without this, a grow that keeps
   * an overloaded old filter holds the fpp above target until it slides
   * out (measured: ~100 s over target in the Fig. 6.6 experiment). */
  bool pressure = f->adaptive && bk__fbf_estimate(f, st, f->check, true) >=
                                     0.9 * f->target_fpp;
  while ((count > f->target_count || pressure) && count > 3) {
    unsigned oldest = bk__fbf_slot_at(f, new_head, count - 1);
    if (!droppable(f, oldest, now)) break;
    dropped |= (uint64_t)1 << oldest;
    count--;
  }
  /* Slots that never held anything need no sweep. Dropped slots' counts
   * restart now, before the new state lets inserts count into them. */
  uint64_t to_sweep = 0;
  for (unsigned s = 0; s < f->width; s++) {
    if (!((dropped >> s) & 1)) continue;
    /* A count of 0 means no bits: inserts count before they set bits, and
     * a loader accepts no slot with bits and no count. */
    if (bk__fbf_count(f, s)) to_sweep |= (uint64_t)1 << s;
    bk__fbf_count_set(f, s, 0);
    __atomic_store_n(&f->shared[s], 0, __ATOMIC_RELAXED);
  }
  bk__fbf_publish_and_sweep(f,
                            BK__ST_MAKE(new_head, count, to_sweep != 0,
                                        future_swept && to_sweep != 0, gen),
                            to_sweep);
  f->refreshes++;
  return true;
}

/* True when every filter is empty: nothing to remember or forget, the
 * estimate is 0, and a refresh only rotates empty slots. */
static bool all_empty(const bk_fbf *f) {
  for (unsigned s = 0; s < f->width; s++)
    if (bk__fbf_count(f, s)) return false;
  return true;
}

/* Until when (inclusive, at most `now`) refreshes can change nothing the
 * estimate depends on: every filter empty, or every slot in use and the
 * oldest too young to drop (each refresh is deferred). 0: no such span. */
static uint64_t idle_until(const bk_fbf *f, uint64_t now) {
  if (all_empty(f)) return now;
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned count = BK__ST_COUNT(st);
  if (count != f->width) return 0;
  unsigned oldest = bk__fbf_slot_at(f, BK__ST_HEAD(st), count - 1);
  uint64_t droppable_at = bk__sat_add(f->became_present[oldest], f->min_window);
  if (droppable_at <= f->next_refresh) return 0;
  return droppable_at - 1 < now ? droppable_at - 1 : now;
}

/* The schedule's next refresh; atomic, because bk_fbf_contains_at reads it
 * without the mutex (its fast path: no refresh due by `now`). */
static void set_next_refresh(bk_fbf *f, uint64_t t) {
  __atomic_store_n(&f->next_refresh, t, __ATOMIC_RELAXED);
}

/* ---- advance --------------------------------------------------------------
 *
 * Events (refreshes every t, adaptation ticks every interval) are replayed
 * in time order, but no call does work that grows with the jump, with
 * interval / t, or with any number in the state: runs of ticks that see
 * the same estimate are applied at once (bk__fbf_adapt_ticks), refreshes of
 * empty filters are skipped W at a time (head and contents are then as they
 * would be), and deferred refreshes are skipped up to the time the oldest
 * filter may go. What remains is O(W) real refreshes, each followed by
 * O(max_filters) runs of ticks.
 */
bk_status bk__fbf_advance_locked(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(now < f->now, BK_EINVAL);
  /* Atomic: bk_idem's snapshot reads the clock without the FBF's lock. */
  __atomic_store_n(&f->now, now, __ATOMIC_RELEASE);
  for (;;) {
    /* UINT64_MAX is the schedule's "never" (a saturated sum). */
    bool tick_due =
        f->adaptive && f->next_adapt <= now && f->next_adapt != UINT64_MAX;
    bool refresh_due = f->next_refresh <= now && f->next_refresh != UINT64_MAX;
    if (!tick_due && !refresh_due) break;
    if (tick_due && (!refresh_due || f->next_adapt <= f->next_refresh)) {
      /* Ticks before the next refresh see one estimate; so do all ticks
       * while refreshes are idle (every filter empty, or every refresh
       * deferred until the oldest filter may go). */
      uint64_t idle = idle_until(f, now);
      bool stop_at_refresh = idle < f->next_adapt;
      f->next_adapt = bk__fbf_adapt_ticks(
          f, f->next_adapt, stop_at_refresh ? now : idle, stop_at_refresh);
      if (f->next_adapt == UINT64_MAX && f->next_refresh > now) break;
      continue;
    }
    uint64_t at = f->next_refresh;
    bool done = refresh(f, at);
    if (!done) f->deferred++;
    set_next_refresh(f, bk__sat_add(at, f->refresh_period));
    /* No refresh is ever due again ("never"), but ticks due by `now` may
     * be: the loop applies them (with next_refresh at never, in one run). */
    if (f->next_refresh > now || f->next_refresh == UINT64_MAX) continue;
    /* Refreshes before the next tick that change nothing are skipped. */
    uint64_t limit = now;
    if (f->adaptive && f->next_adapt - 1 < limit) limit = f->next_adapt - 1;
    if (limit < f->next_refresh) continue;
    uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
    uint64_t skip = (limit - f->next_refresh) / f->refresh_period;
    if (!done) {
      /* Deferred: so is every refresh before the oldest may go. */
      uint64_t idle = idle_until(f, limit);
      if (idle < f->next_refresh) continue;
      skip = (idle - f->next_refresh) / f->refresh_period + 1;
      set_next_refresh(
          f, bk__sat_add_mul(f->next_refresh, skip, f->refresh_period));
      f->deferred += skip;
    } else if (BK__ST_COUNT(st) == f->target_count && all_empty(f) &&
               skip > f->width) {
      /* A long idle gap: refreshes of empty filters change nothing but
       * the clock; W of them bring head back where it was. */
      skip -= skip % f->width;
      set_next_refresh(f, f->next_refresh + skip * f->refresh_period);
      f->refreshes += skip;
    }
  }
  return BK_OK;
}

/* ---- reads as of a time ---------------------------------------------------
 *
 * What advance(now) would leave of the current filters, without doing it:
 * the refreshes due by `now` replayed on a model of the list (empty new
 * filters in front, the current filters behind, the oldest dropped as
 * refresh() would: when every slot is in use, or while over the goal, and
 * only when droppable()). A deferred refresh skips to the first scheduled
 * time the oldest may go. Not modelled: Algorithm 3's ticks (an adaptive
 * FBF keeps its current period and goal here) and the drops under
 * pressure: advance may then keep more (a grow) or forget sooner (a
 * shorter period, pressure), never past min_window. Each
 * replayed refresh adds an empty filter or drops a current one, so the
 * loop ends within about 2 W refreshes of the last current filter. */
unsigned bk__fbf_survivors_at(const bk_fbf *f, uint64_t now, bool *moved) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  unsigned head = BK__ST_HEAD(st), survivors = BK__ST_COUNT(st), fresh = 0;
  uint64_t time = f->next_refresh, period = f->refresh_period;
  /* when the current future becomes the present (the first refresh) */
  uint64_t future_present = 0;
  *moved = false;
  while (survivors && time <= now && time != UINT64_MAX) {
    *moved = true;
    unsigned total = fresh + survivors;
    unsigned oldest = bk__fbf_slot_at(f, head, survivors - 1);
    uint64_t became =
        survivors == 1 && fresh ? future_present : f->became_present[oldest];
    /* the window first: a count is a sum over the key locks */
    bool drop_ok = (time >= became && time - became >= f->min_window) ||
                   !bk__fbf_count(f, oldest);
    if (total == f->width) {
      if (!drop_ok) {
        /* deferred until the oldest may go */
        uint64_t at = bk__sat_add(became, f->min_window), skip = 1;
        if (at > time) skip = (at - time + period - 1) / period;
        time = bk__sat_add_mul(time, skip, period);
        continue;
      }
      survivors--;
      total--;
    }
    if (!fresh) future_present = time;
    fresh++;
    total++;
    while (survivors && total > f->target_count && total > 3) {
      oldest = bk__fbf_slot_at(f, head, survivors - 1);
      became = survivors == 1 ? future_present : f->became_present[oldest];
      if (!(time >= became && time - became >= f->min_window) &&
          bk__fbf_count(f, oldest))
        break;
      survivors--;
      total--;
    }
    time = bk__sat_add(time, period);
  }
  return survivors;
}

bk_status bk_fbf_advance(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  bk_status s = bk__fbf_advance_locked(f, now);
  pthread_mutex_unlock(&f->mu);
  return s;
}
