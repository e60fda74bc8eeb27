/* SPDX-License-Identifier: MIT */
/*
 * The FBF's tuning: how full it is and how it resizes itself. The sizing
 * helpers of fbf.h (bk_fbf_steady_fpp, bk_fbf_filter_fpp_for) pick a
 * constituent filter's rate for a whole-filter target; the false positive
 * estimate (fbf-thesis chapter 4: Eq. 4.3 and the shared-aware variant that
 * corrects it) reads the filters' insert counts; Algorithm 3 (Sec. 3.5)
 * turns that estimate into a new goal of filters and refresh period, tick
 * by tick (bk_fbf_adapt, and the ticks bk_fbf_advance replays through
 * fbf_refresh.c), or by hand (bk_fbf_resize), and records each change in
 * the trace. Everything here runs under the FBF's mutex or reads counts
 * only; the filter itself and its lanes are in fbf.c.
 */
#include <math.h>

#include "fbf_internal.h"
#include "bloomkit/params.h"

/* ---- sizing by the whole filter's rate (fbf.h) --------------------------- */

static bool steady_args_ok(uint64_t capacity, unsigned n_past, double rate) {
  return capacity && capacity <= (UINT64_MAX >> 2) && n_past >= 1 &&
         n_past <= BK_FBF_MAX_FILTERS - 2 && rate > 0.0 && rate < 1.0;
}

/* The model of fbf.h, as -expm1 of a sum of log1p terms (exact also for
 * tiny rates); 1 when no filter of rate q can be made. */
static double steady_rate(uint64_t c, unsigned n_past, double q) {
  uint64_t m;
  unsigned k;
  if (bk_params_for_target(2 * c, q, &m, &k) != BK_OK) return 1.0;
  double lu = (double)k * log1p(-1.0 / (double)m), kd = (double)k;
  double cd = (double)c;
  double f1 = pow(-expm1(lu * cd), kd), f2 = pow(-expm1(lu * 2.0 * cd), kd);
  double both = 1.0 - 2.0 * exp(lu * 2.0 * cd) + exp(lu * 3.0 * cd);
  double pair = pow(both > 0.0 ? both : 0.0, kd);
  return -expm1(log1p(-f1) + (double)(n_past - 1) * log1p(-pair) + log1p(-f2));
}

bk_status bk_fbf_steady_fpp(uint64_t capacity, unsigned n_past,
                            double filter_fpp, double *out) {
  BK_RETURN_IF(!out || !steady_args_ok(capacity, n_past, filter_fpp),
               BK_EINVAL);
  uint64_t m;
  unsigned k;
  BK_TRY(bk_params_for_target(2 * capacity, filter_fpp, &m, &k));
  *out = steady_rate(capacity, n_past, filter_fpp);
  return BK_OK;
}

/* Bisection on a log scale: the steady rate is at most N + 1 times the
 * filter rate (a union bound over its N + 1 events), so fpp / (2 (N + 2))
 * qualifies whenever a filter of that rate can be made. */
bk_status bk_fbf_filter_fpp_for(uint64_t capacity, unsigned n_past, double fpp,
                                double *out) {
  BK_RETURN_IF(!out || !steady_args_ok(capacity, n_past, fpp), BK_EINVAL);
  double lo = fpp / (2.0 * (n_past + 2)), hi = fpp;
  if (steady_rate(capacity, n_past, hi) <= fpp) {
    *out = hi;
    return BK_OK;
  }
  BK_RETURN_IF(steady_rate(capacity, n_past, lo) > fpp, BK_EINVAL);
  for (int i = 0; i < 60 && hi / lo > 1.001; i++) {
    double mid = sqrt(lo * hi);
    if (steady_rate(capacity, n_past, mid) <= fpp)
      lo = mid;
    else
      hi = mid;
  }
  *out = lo;
  return BK_OK;
}

/* ---- false positive estimate (chapter 4) -------------------------------- */

static double filter_fpp(const bk_fbf *f, uint64_t inserted) {
  double p = 0.0;
  (void)bk_params_fpp(f->m, f->k, inserted, &p); /* m, k valid by creation */
  return p;
}

/* ln of u = (1 - 1/m)^k, the chance one insert leaves a given bit clear. */
static double log_u(const bk_fbf *f) {
  return (double)f->k * log1p(-1.0 / (double)f->m);
}

/*
 * False positive probability of the pair (newer X, older Y) when they share
 * `s` inserts. Eq. 4.3 multiplies p(X) p(Y) as if the filters were
 * independent, but every insert made while X was the future went into Y
 * too, so after a refresh the pair (present, newest past) holds the same
 * elements and its false positive rate is about p(X), not p(X)^2 (measured:
 * Eq. 4.3 is 5-180x low for N > 1, which made Algorithm 3 shrink under
 * load). A bit is set in both when it is hit by a shared insert or by
 * inserts of each alone:
 *   P = 1 - u^a - u^b + u^{a+b-s},   pair fpp = P^k,
 * with a, b the filters' counts and u = (1 - 1/m)^k. s = 0 gives Eq. 4.3.
 */
static double pair_fpp(const bk_fbf *f, uint64_t a, uint64_t b, uint64_t s) {
  if (s > a) s = a;
  if (s > b) s = b;
  double lu = log_u(f);
  /* 1 - u^a - u^b + u^{a+b-s} with u^x = 1 + expm1(x ln u), which keeps
   * precision when the filters are nearly empty. */
  /* In doubles: a + b may not fit in 64 bits for a restored, hostile
   * state. */
  double both = -expm1(lu * (double)a) - expm1(lu * (double)b) +
                expm1(lu * ((double)a + (double)b - (double)s));
  if (!(both > 0.0)) both = 0.0; /* also NaN */
  if (both > 1.0) both = 1.0;
  return pow(both, (double)f->k);
}

/* Estimate over the logical filters of state `st`. `shared_aware` selects
 * the pair term above; false gives the thesis' Eq. 4.3 exactly. The simple
 * check is 1 - prod(1 - p_i) either way. */
double bk__fbf_estimate(const bk_fbf *f, uint64_t st, bk_fbf_check check,
                        bool shared_aware) {
  unsigned count = BK__ST_COUNT(st), head = BK__ST_HEAD(st);
  double p[BK_FBF_MAX_FILTERS] = {0};
  uint64_t n[BK_FBF_MAX_FILTERS] = {0}, sh[BK_FBF_MAX_FILTERS] = {0};
  for (unsigned i = 0; i < count; i++) {
    unsigned slot = (head + i) % f->width;
    n[i] = bk__fbf_count(f, slot);
    sh[i] = __atomic_load_n(&f->shared[slot], __ATOMIC_RELAXED);
    p[i] = filter_fpp(f, n[i]);
  }
  /* ln P(no false positive) as a sum of log1p terms, and the rate as
   * -expm1 of it: 1 - prod(1 - p_i) in doubles is 0 for any rate below
   * 1e-16 (a lightly loaded filter reported fpp 0). */
  double none = 0.0;
  if (check == BK_FBF_CHECK_SIMPLE) {
    for (unsigned i = 0; i < count; i++) none += log1p(-p[i]);
    return none < 0.0 ? -expm1(none) : 0.0; /* not -0.0 */
  }
  /* phi: future alone; each consecutive pair from (present, past newest) to
   * (past_{N-1}, past oldest); past oldest alone (Eq. 4.3). The last pair
   * contains the oldest filter, so its event is inside "oldest alone":
   * Eq. 4.3 counts it twice (1.5x too high at N = 1); the shared-aware
   * estimate leaves it out. */
  none += log1p(-p[0]);
  for (unsigned i = 1; i + 1 < count; i++) {
    if (shared_aware && i + 2 == count) break;
    double pair =
        shared_aware ? pair_fpp(f, n[i], n[i + 1], sh[i]) : p[i] * p[i + 1];
    none += log1p(-pair);
  }
  none += log1p(-p[count - 1]);
  return none < 0.0 ? -expm1(none) : 0.0; /* not -0.0 */
}

static bk_status estimated(const bk_fbf *f, bk_fbf_check check,
                           bool shared_aware, double *out) {
  BK_RETURN_IF(!f || !out, BK_EINVAL);
  if (check == BK_FBF_CHECK_DEFAULT) check = f->check;
  BK_RETURN_IF(check != BK_FBF_CHECK_OPTIMIZED && check != BK_FBF_CHECK_SIMPLE,
               BK_EINVAL);
  *out = bk__fbf_estimate(f, __atomic_load_n(&f->state, __ATOMIC_ACQUIRE),
                          check, shared_aware);
  return BK_OK;
}

bk_status bk_fbf_estimated_fpp(const bk_fbf *f, bk_fbf_check check,
                               double *out) {
  return estimated(f, check, true, out);
}

bk_status bk_fbf_estimated_fpp_eq43(const bk_fbf *f, bk_fbf_check check,
                                    double *out) {
  return estimated(f, check, false, out);
}

/* ---- adaptive resizing (Sec. 3.5, Algorithm 3) -------------------------- */

static void record(bk_fbf *f, uint64_t now, bk_fbf_action action, double fpp) {
  bk_fbf_resize_event *e = &f->trace[f->trace_len % BK__FBF_TRACE_CAP];
  e->time = now;
  e->action = action;
  e->estimated_fpp = fpp;
  e->n_filters = f->target_count;
  e->refresh_period = f->refresh_period;
  f->trace_len++;
}

/* Apply a new goal of n filters and period t (already within bounds).
 * Growing takes effect as refreshes stop dropping old filters; shrinking,
 * as they drop more than they add, each only when droppable(). */
static void set_goal(bk_fbf *f, unsigned n_filters, uint64_t period,
                     uint64_t at) {
  f->target_count = n_filters;
  if (period != f->refresh_period) {
    /* The next refresh moves to one new period after the last one, and no
     * earlier than the decision (time `at`). */
    uint64_t last = f->next_refresh > f->refresh_period
                        ? f->next_refresh - f->refresh_period
                        : 0;
    f->refresh_period = period;
    uint64_t next = bk__sat_add(last, period);
    /* atomic: bk_fbf_contains_at reads it without the mutex */
    __atomic_store_n(&f->next_refresh, next > at ? next : at, __ATOMIC_RELAXED);
  }
}

/* The shortest period with which `n` filters still keep min_window:
 * (n - 1) t >= min_window. Shorter periods would make refreshes wait for
 * the window (deferred), piling several periods into the future filter. */
static uint64_t window_floor(const bk_fbf *f, unsigned n) {
  uint64_t d = n > 1 ? n - 1 : 1;
  return (f->min_window + d - 1) / d;
}

/* The shortest t a goal of n filters may have: min_period, and where the
 * n filters still cover min_window. */
static uint64_t period_floor(const bk_fbf *f, unsigned n) {
  uint64_t floor = window_floor(f, n);
  return floor > f->min_period ? floor : f->min_period;
}

/* Algorithm 3's decision for an estimate `fpp` at goal (n, t): the new
 * goal in *n_out, *t_out and the action, 0 when nothing changes. */
static int adapt_decide(const bk_fbf *f, double fpp, unsigned n, uint64_t t,
                        unsigned *n_out, uint64_t *t_out) {
  *n_out = n;
  *t_out = t;
  if (fpp >= 0.9 * f->target_fpp) {
    /* Multiplicative increase of filters, additive decrease of period,
     * the period floored where the grown filters still cover min_window. */
    unsigned grown = 2 * n > f->max_filters ? f->max_filters : 2 * n;
    uint64_t shorter = t > f->period_step ? t - f->period_step : 0;
    if (shorter < period_floor(f, grown)) shorter = period_floor(f, grown);
    if (shorter > t) shorter = t;
    *n_out = grown;
    *t_out = shorter;
    return grown != n || shorter != t ? BK_FBF_GROW : 0;
  }
  if (fpp <= 0.1 * f->target_fpp) {
    /* Additive decrease of filters, additive increase of period; one filter
     * fewer only if the rest still cover min_window at the new period. */
    uint64_t longer =
        f->period_step > f->max_period - t ? f->max_period : t + f->period_step;
    unsigned fewer = n > f->min_filters ? n - 1 : n;
    if (fewer != n && longer < window_floor(f, fewer)) fewer = n;
    *n_out = fewer;
    *t_out = longer;
    return fewer != n || longer != t ? BK_FBF_SHRINK : 0;
  }
  return 0;
}

static void adapt_tick(bk_fbf *f, uint64_t now) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  double fpp = bk__fbf_estimate(f, st, f->check, true);
  unsigned n;
  uint64_t t;
  int action = adapt_decide(f, fpp, f->target_count, f->refresh_period, &n, &t);
  if (action) {
    set_goal(f, n, t, now);
    record(f, now, (bk_fbf_action)action, fpp);
  }
}

/* ceil(a / b), b > 0. */
static inline uint64_t div_ceil(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

/*
 * Ticks in a row whose only effect is to move t one step (the filter count
 * is at its bound or held by the window rule): how many there are before t
 * reaches its bound or a tick would change the count too. The first tick
 * from (n, t) is such a move; the estimate is the same for all of them.
 */
static uint64_t period_run(const bk_fbf *f, int action, unsigned n,
                           uint64_t t) {
  uint64_t step = f->period_step;
  if (action == BK_FBF_GROW) {
    /* n is at max_filters (or doubling changes nothing): t falls to its
     * floor and stays. */
    uint64_t floor = period_floor(f, n);
    return t > floor ? div_ceil(t - floor, step) : 1;
  }
  uint64_t run = t < f->max_period ? div_ceil(f->max_period - t, step) : 1;
  if (n > f->min_filters) {
    /* One filter fewer becomes possible at the first tick whose new period
     * t + i step reaches the window floor of n - 1. */
    uint64_t need = window_floor(f, n - 1);
    uint64_t until = need > t ? div_ceil(need - t, step) - 1 : 0;
    if (until < run) run = until;
  }
  return run ? run : 1;
}

/*
 * Apply the adaptation ticks due at `first`, first + interval, ... up to
 * `limit`, and when `stop_at_refresh`, only those that come before the next
 * refresh (a tick at the refresh's time comes first): until then the
 * filters' contents, and so the estimate, do not change. Equal decisions in
 * a row are applied as one run (a run moves t by many steps at once and is
 * recorded once, at its last tick), and a decision that changes nothing
 * ends the work: the remaining ticks would repeat it. A run keeps in mind
 * that each of its ticks moves the next refresh to the last refresh plus
 * the new t (set_goal): with t growing a step a tick and ticks no further
 * apart than a step, the refresh never comes before the run ends.
 * Cost: O(max_filters) runs whatever the number of ticks. Returns the time
 * of the first tick not applied (saturating).
 */
uint64_t bk__fbf_adapt_ticks(bk_fbf *f, uint64_t first, uint64_t limit,
                             bool stop_at_refresh) {
  uint64_t st = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
  double fpp = bk__fbf_estimate(f, st, f->check, true);
  uint64_t at = first, interval = f->adapt_interval, step = f->period_step;
  bool fixed_point = false;
  while (at <= limit && (!stop_at_refresh || at <= f->next_refresh)) {
    unsigned n = f->target_count, n1;
    uint64_t t = f->refresh_period, t1;
    int action = adapt_decide(f, fpp, n, t, &n1, &t1);
    if (!action) {
      fixed_point = true;
      break;
    }
    uint64_t run = 1;
    if (n1 == n) {
      run = period_run(f, action, n, t);
      uint64_t in_limit = (limit - at) / interval + 1;
      if (run > in_limit) run = in_limit;
      if (stop_at_refresh) {
        /* Tick i of the run (i >= 1, at + (i - 1) interval) comes before
         * the refresh, then at next_refresh +- (i - 1) step. */
        uint64_t room = f->next_refresh - at, cap = UINT64_MAX;
        if (action == BK_FBF_GROW)
          cap = room / bk__sat_add(interval, step) + 1;
        else if (interval > step)
          cap = room / (interval - step) + 1;
        if (run > cap) run = cap;
      }
      uint64_t moved = bk__sat_mul(run, step);
      if (action == BK_FBF_GROW) {
        uint64_t floor = period_floor(f, n);
        t1 = t - floor > moved ? t - moved : floor;
      } else {
        t1 = f->max_period - t > moved ? t + moved : f->max_period;
      }
    }
    uint64_t last = bk__sat_add_mul(at, run - 1, interval);
    set_goal(f, n1, t1, last);
    record(f, last, (bk_fbf_action)action, fpp);
    at = bk__sat_add(last, interval);
    if (at == UINT64_MAX) return at;
  }
  if (fixed_point) {
    /* The remaining ticks up to the bound repeat a decision that changes
     * nothing (and moves no refresh). */
    uint64_t bound = limit;
    if (stop_at_refresh && f->next_refresh < bound) bound = f->next_refresh;
    if (at <= bound)
      at = bk__sat_add_mul(at, (bound - at) / interval + 1, interval);
  }
  return at;
}

/* ---- the public calls --------------------------------------------------- */

bk_status bk_fbf_adapt(bk_fbf *f, uint64_t now) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  bk_status s = bk__fbf_advance_locked(f, now);
  if (s == BK_OK) adapt_tick(f, now);
  pthread_mutex_unlock(&f->mu);
  return s;
}

bk_status bk_fbf_resize(bk_fbf *f, unsigned n_filters,
                        uint64_t refresh_period) {
  BK_RETURN_IF(!f, BK_EINVAL);
  pthread_mutex_lock(&f->mu);
  uint64_t t = refresh_period ? refresh_period : f->refresh_period;
  bk_status s = BK_OK;
  if (n_filters < f->min_filters || n_filters > f->max_filters ||
      t < f->min_period || t > f->max_period ||
      /* the goal must be able to keep min_window: (n - 1) t >= min_window */
      bk__fbf_window_short(n_filters, t, f->min_window)) {
    s = BK_EINVAL;
  } else {
    set_goal(f, n_filters, t, f->now);
    double fpp = bk__fbf_estimate(
        f, __atomic_load_n(&f->state, __ATOMIC_RELAXED), f->check, true);
    record(f, f->now, BK_FBF_MANUAL, fpp);
  }
  pthread_mutex_unlock(&f->mu);
  return s;
}

size_t bk_fbf_trace_count(const bk_fbf *f) {
  if (!f) return 0;
  return f->trace_len < BK__FBF_TRACE_CAP ? f->trace_len : BK__FBF_TRACE_CAP;
}

bk_status bk_fbf_trace_get(const bk_fbf *f, size_t i,
                           bk_fbf_resize_event *out) {
  BK_RETURN_IF(!f || !out || i >= bk_fbf_trace_count(f), BK_EINVAL);
  size_t first =
      f->trace_len > BK__FBF_TRACE_CAP ? f->trace_len - BK__FBF_TRACE_CAP : 0;
  *out = f->trace[(first + i) % BK__FBF_TRACE_CAP];
  return BK_OK;
}
