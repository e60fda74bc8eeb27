/* SPDX-License-Identifier: MIT */
/*
 * The FBF test programs' shared helpers (fbf_helpers.h): one-liners over the
 * API that fail the test on error, and the false positive models.
 */
#include "fbf_helpers.h"

#include <math.h>
#include <string.h>

#include "core/internal.h"

char fbf_sentinel_storage, fbf_timer_sentinel_storage;

uint64_t fbf_test_seed(uint64_t salt) {
  return bk_test_seed(FBF_SEED_FALLBACK) ^ salt;
}

BK_TEST_DEFINE_MAKE(fbf, )
BK_TEST_DEFINE_INFO_OF(fbf, )
BK_TEST_DEFINE_BLOB_OF(fbf, )
BK_TEST_DEFINE_HASH_SET(fbf, )

bool fbf_has_with(const bk_fbf *f, bk_hash h, bk_fbf_check check) {
  bool out = false;
  assert_bk_ok(bk_fbf_contains_with(f, h, check, &out));
  return out;
}

bool fbf_has_id(const bk_fbf *f, uint64_t id) {
  unsigned char kb[8];
  bool out = false;
  bk__store_le64(kb, id);
  assert_bk_ok(bk_fbf_contains(f, kb, sizeof kb, &out));
  return out;
}

void fbf_advance(bk_fbf *f, uint64_t now) {
  bk_status s = bk_fbf_advance(f, now);
  if (s != BK_OK)
    fail_msg("bk_fbf_advance(%llu): %s", (unsigned long long)now,
             bk_status_name(s));
}

double fbf_est_of(const bk_fbf *f, bk_fbf_check check) {
  double p = -1.0;
  assert_bk_ok(bk_fbf_estimated_fpp(f, check, &p));
  return p;
}

double fbf_eq43_of(const bk_fbf *f, bk_fbf_check check) {
  double p = -1.0;
  assert_bk_ok(bk_fbf_estimated_fpp_eq43(f, check, &p));
  return p;
}

/* ---- the models --------------------------------------------------------- */

/* Eq. 4.1 as corrected in the design notes: (1 - (1 - 1/m)^{k l})^k. */
double fbf_filter_p(uint64_t m, unsigned k, double l) {
  if (l <= 0.0) return 0.0;
  return pow(-expm1((double)k * l * log1p(-1.0 / (double)m)), (double)k);
}

/* Eq. 4.3 written from the thesis (phi: the future alone; (present, past
 * newest); each consecutive pair of pasts; the oldest past alone), or the
 * simple check's 1 - prod(1 - p_i), from per-filter counts, future first. */
double fbf_eq43(uint64_t m, unsigned k, const uint64_t *inserted,
                unsigned count, bk_fbf_check check) {
  /* ln prod(1 - x) and 1 - exp of it: exact to the last bits also for
   * rates far below 1e-16, where 1 - prod in doubles is 0. */
  double none = 0.0;
  if (check == BK_FBF_CHECK_SIMPLE) {
    for (unsigned q = 0; q < count; q++)
      none += log1p(-fbf_filter_p(m, k, (double)inserted[q]));
    return -expm1(none);
  }
  none += log1p(-fbf_filter_p(m, k, (double)inserted[0]));
  for (unsigned q = 1; q + 1 < count; q++)
    none += log1p(-fbf_filter_p(m, k, (double)inserted[q]) *
                  fbf_filter_p(m, k, (double)inserted[q + 1]));
  none += log1p(-fbf_filter_p(m, k, (double)inserted[count - 1]));
  return -expm1(none);
}

/*
 * The false positive probability of an N-FBF without Eq. 4.3's independence
 * assumption. Algorithm 1 writes every element into two consecutive filters
 * (future and present) at the SAME k positions - the thesis gives every
 * constituent filter the same hash functions, and the lane layout stores
 * exactly that (all filters' bit j in lane j) - so neighbouring filters
 * share one period's elements bit for bit:
 *
 *   logical position q:   0 (future)   1 (present)   2        3      ...
 *   periods it holds:     {0}          {0, 1}        {1, 2}   {2, 3} ...
 *
 * (period d = d refreshes ago). An absent probe that finds all k bits in
 * one filter is therefore likelier to find them in its neighbour too: the
 * pair terms p_i p_{i+1} of Eq. 4.3 are underestimates, and the simple
 * check's 1 - prod(1 - p_i) overestimates (the future's bits are a subset
 * of the present's). This model keeps Eq. 4.1's only approximation (bit
 * positions independent and uniform) and nothing else: at one position,
 * period d has set the bit with h_d = 1 - (1 - 1/m)^{k n_d}, independently
 * of the other periods; g(U) is the chance every filter in U has the bit;
 * a probe hits a stage set S with probability g(union of S)^k; inclusion-
 * exclusion over the check's stages gives the rate. n[d] = elements
 * inserted in period d, count = N + 2 <= 10.
 */
double fbf_shared_model(const double *n, unsigned count, uint64_t m, unsigned k,
                        bk_fbf_check check) {
  static double g[1u << 10];
  double h[10];
  unsigned cover[10], stages[10], n_stages = 0;
  assert_true(count >= 3 && count <= 10);
  for (unsigned d = 0; d < count; d++)
    h[d] = -expm1((double)k * n[d] * log1p(-1.0 / (double)m));
  for (unsigned q = 0; q < count; q++)
    cover[q] = q == 0 ? 1u : (1u << (q - 1)) | (1u << q);
  memset(g, 0, sizeof(double) << count);
  for (unsigned pi = 0; pi < (1u << count); pi++) {
    double pr = 1.0;
    for (unsigned d = 0; d < count; d++)
      pr *= (pi >> d) & 1u ? h[d] : 1.0 - h[d];
    if (pr == 0.0) continue;
    unsigned covered = 0;
    for (unsigned q = 0; q < count; q++)
      if (cover[q] & pi) covered |= 1u << q;
    for (unsigned u = covered;; u = (u - 1) & covered) {
      g[u] += pr;
      if (!u) break;
    }
  }
  if (check == BK_FBF_CHECK_SIMPLE) {
    for (unsigned q = 0; q < count; q++) stages[n_stages++] = 1u << q;
  } else {
    stages[n_stages++] = 1u;
    for (unsigned q = 1; q + 1 < count; q++)
      stages[n_stages++] = (1u << q) | (1u << (q + 1));
    stages[n_stages++] = 1u << (count - 1);
  }
  double total = 0.0;
  for (unsigned s = 1; s < (1u << n_stages); s++) {
    unsigned u = 0;
    for (unsigned i = 0; i < n_stages; i++)
      if ((s >> i) & 1u) u |= stages[i];
    double term = pow(g[u], (double)k);
    total += __builtin_popcount(s) & 1 ? term : -term;
  }
  return total < 0.0 ? 0.0 : total;
}

bk_fbf_config fbf_small_adaptive_config(void) {
  return (bk_fbf_config){.m_bits = 256,
                         .k = 3,
                         .n_past = 1,
                         .refresh_period = 100,
                         .adaptive = true,
                         .target_fpp = 0.01,
                         .adapt_interval = 50,
                         .period_step = 20,
                         .min_period = 40,
                         .max_period = 200,
                         .max_filters = 8,
                         .seed = 6};
}
