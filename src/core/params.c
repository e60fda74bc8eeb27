/* SPDX-License-Identifier: MIT */
/*
 * Parameter math: optimal (m, k), false positive probabilities of the two
 * layouts, p-capacity (kbf-paper Sec. 4) and bits per element.
 */
#include <math.h>

#include "bloomkit/params.h"
#include "bloomkit/bits.h"
#include "internal.h"

#define LN2 0.69314718055994530942

static bool p_ok(double p) { return p > 0.0 && p < 1.0; } /* false for NaN */

bk_status bk_params_optimal(uint64_t n, double p, uint64_t *m_bits,
                            unsigned *k) {
  BK_RETURN_IF(n == 0 || !p_ok(p), BK_EINVAL);
  double m = ceil(-(double)n * log(p) / (LN2 * LN2));
  BK_RETURN_IF(!(m <= (double)BK_BITS_MAX), BK_EINVAL);
  uint64_t mi = m < 1.0 ? 1 : (uint64_t)m;
  double kd = round((double)mi / (double)n * LN2);
  unsigned ki = kd < 1.0 ? 1u : kd > BK_K_MAX ? BK_K_MAX : (unsigned)kd;
  if (m_bits) *m_bits = mi;
  if (k) *k = ki;
  return BK_OK;
}

/* 1 - (1 - 1/m)^{k n}: the chance one given bit is set after n insertions,
 * computed as -expm1(k n log1p(-1/m)) so it stays exact for huge m. */
static double bit_set_probability(double m, unsigned k, double n) {
  if (m <= 1.0) return n > 0 ? 1.0 : 0.0;
  return -expm1((double)k * n * log1p(-1.0 / m));
}

bk_status bk_params_fpp(uint64_t m_bits, unsigned k, uint64_t n,
                        double *out) {
  BK_RETURN_IF(!out || m_bits == 0 || k == 0 || k > BK_K_MAX, BK_EINVAL);
  /* fbf-thesis Eq. 4.1 as corrected in DESIGN.md: (1 - (1 - 1/m)^{k l})^k. */
  *out = pow(bit_set_probability((double)m_bits, k, (double)n), (double)k);
  return BK_OK;
}

bk_status bk_params_fpp_blocked(uint64_t m_bits, unsigned k, uint64_t n,
                                double *out) {
  BK_RETURN_IF(!out || m_bits == 0 || m_bits % BK_BLOCK_BITS != 0 || k == 0 ||
                   k > BK_K_MAX,
               BK_EINVAL);
  double blocks = (double)(m_bits / BK_BLOCK_BITS);
  double lambda = (double)n / blocks; /* mean load of one block */
  if (n == 0) {
    *out = 0.0;
    return BK_OK;
  }
  /* Sum the Poisson mixture outward from its mode until the terms vanish;
   * each term is computed in log space so large loads do not overflow. */
  double mode = floor(lambda);
  double total = 0.0;
  for (int dir = 0; dir < 2; dir++) {
    for (double j = dir ? mode - 1 : mode; j >= 0; j += dir ? -1 : 1) {
      double log_pois = j * log(lambda) - lambda - lgamma(j + 1.0);
      double term =
          exp(log_pois) * pow(bit_set_probability(BK_BLOCK_BITS, k, j), k);
      total += term;
      if (exp(log_pois) < 1e-18 && fabs(j - mode) > 10) break;
    }
  }
  *out = total > 1.0 ? 1.0 : total;
  return BK_OK;
}

bk_status bk_params_p_capacity(uint64_t m_bits, double p, uint64_t *out) {
  BK_RETURN_IF(!out || m_bits == 0 || !p_ok(p), BK_EINVAL);
  /* kbf-paper Sec. 4, Definition 1: p-capacity = -m (ln 2)^2 / ln p. */
  *out = (uint64_t)floor(-(double)m_bits * LN2 * LN2 / log(p));
  return BK_OK;
}

bk_status bk_params_bits_per_element(double p, double *out) {
  BK_RETURN_IF(!out || !p_ok(p), BK_EINVAL);
  *out = -log(p) / (LN2 * LN2);
  return BK_OK;
}
