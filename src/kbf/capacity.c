/* SPDX-License-Identifier: MIT */
/*
 * The capacity analysis of the kBF (Sec. 4): p-capacity, the capacity
 * coefficient rho, the Poisson limit of a cell's load, P_n(rho) and the
 * probability that a stored key cannot be decoded.
 */
#include <math.h>

#include "bloomkit/params.h"
#include "kbf/kbf_internal.h"

#define LN2 0.6931471805599453

bk_status bk_kbf_p_capacity(uint64_t m, double p, uint64_t *out) {
  return bk_params_p_capacity(m, p, out);
}

double bk_kbf_rho(uint64_t n, unsigned k, uint64_t m) {
  if (m == 0) return INFINITY;
  return (double)n * k / ((double)m * LN2);
}

double bk_kbf_cell_prob(unsigned j, double rho) {
  const double lambda = rho * LN2;
  /* lambda^j / j! * e^-lambda, in logs so a large j does not overflow. */
  return exp((double)j * log(lambda) - lgamma((double)j + 1) - lambda);
}

double bk_kbf_pn(double rho) {
  const double l = rho * LN2;
  /* 2^(-rho-1) (2^(rho+1) - rho^2 ln^2 2 - rho ln 4 - 2), Sec. 4:
   * = 1 - e^-l (1 + l + l^2 / 2). */
  return 1.0 - exp(-l) * (1.0 + l + l * l / 2.0);
}

double bk_kbf_decode_failure(double rho, unsigned k, bool paper) {
  const double l = rho * LN2;
  double q2, q3;
  if (paper) {
    q3 = bk_kbf_pn(rho);
    q2 = l * l / 2.0 * exp(-l);
  } else {
    q2 = l * exp(-l);
    q3 = 1.0 - (1.0 + l) * exp(-l);
  }
  return pow(q3, k) + k * q2 * pow(q3, (double)k - 1);
}
