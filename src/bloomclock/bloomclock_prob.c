/* SPDX-License-Identifier: MIT */
/*
 * The Bloom clock's probabilities and sizing: pr_p, the chance that a
 * clock's counters all reach another's by accident (the slides' "Computing
 * pr_p with Bloom Clocks"), with pr_fp and pr_pf built on it, and
 * bk_bloomclock_params, which picks m and k for a process count, an event
 * window and a target false positive rate. Read-only over the clocks; the
 * clock itself is in bloomclock.c.
 */
#include <math.h>

#include "bloomclock/bloomclock_internal.h"
#include "bloomkit/params.h"

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
  BK_RETURN_IF(!bk__bloomclock_same_shape(y, z), BK_EMISMATCH);
  double n = 0;
  for (uint64_t i = 0; i < z->m; i++) n += (double)bk__bloomclock_get_c(z, i);
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
    const uint32_t v = bk__bloomclock_get_c(y, i);
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
