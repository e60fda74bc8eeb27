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

static bool p_ok(double p) {
  return p > 0.0 && p < 1.0;
} /* false for NaN */

bk_status bk_params_m_for_k(uint64_t n, double p, unsigned k,
                            uint64_t *m_bits) {
  BK_RETURN_IF(!m_bits || n == 0 || k == 0 || k > BK_K_MAX || !p_ok(p),
               BK_EINVAL);
  /* Exact for bk_params_fpp's form: (1 - (1 - 1/m)^{k n})^k <= p
   * <=> k n ln(1 - 1/m) >= ln(1 - p^{1/k}) =: L
   * <=> m >= 1 / (1 - e^{L / (k n)}). (The e^{-k n / m} approximation
   * gives an m about half a bit smaller, which misses p by ~1e-5 at
   * k = 64.) */
  double ln_clear = log1p(-pow(p, 1.0 / (double)k));
  double m = ceil(-1.0 / expm1(ln_clear / ((double)k * (double)n)));
  BK_RETURN_IF(!(m <= (double)BK_BITS_MAX), BK_EINVAL);
  *m_bits = m < 1.0 ? 1 : (uint64_t)m;
  return BK_OK;
}

bk_status bk_params_optimal(uint64_t n, double p, uint64_t *m_bits,
                            unsigned *k) {
  BK_RETURN_IF(n == 0 || !p_ok(p), BK_EINVAL);
  double m = ceil(-(double)n * log(p) / (LN2 * LN2));
  /* Below 2^40 bits or the clamp below may still bring it in range. */
  uint64_t mi = !(m <= (double)BK_BITS_MAX) ? BK_BITS_MAX + 1
                : m < 1.0                   ? 1
                                            : (uint64_t)m;
  double kd = round((double)mi / (double)n * LN2);
  unsigned ki = kd < 1.0 ? 1u : kd > BK_K_MAX ? BK_K_MAX : (unsigned)kd;
  /* A clamped k needs more bits than the optimum to meet p. */
  if (kd < 1.0 || kd > BK_K_MAX) BK_TRY(bk_params_m_for_k(n, p, ki, &mi));
  BK_RETURN_IF(mi > BK_BITS_MAX, BK_EINVAL);
  if (m_bits) *m_bits = mi;
  if (k) *k = ki;
  return BK_OK;
}

bk_status bk_params_for_target(uint64_t n, double p, uint64_t *m_bits,
                                unsigned *k) {
  uint64_t m;
  unsigned ki;
  BK_TRY(bk_params_optimal(n, p, &m, &ki));
  BK_TRY(bk_params_m_for_k(n, p, ki, &m));
  if (m_bits) *m_bits = m;
  if (k) *k = ki;
  return BK_OK;
}

/* 1 - (1 - 1/m)^{k n}: the chance one given bit is set after n insertions,
 * computed as -expm1(k n log1p(-1/m)) so it stays exact for huge m. */
static double bit_set_probability(double m, unsigned k, double n) {
  if (m <= 1.0) return n > 0 ? 1.0 : 0.0;
  return -expm1((double)k * n * log1p(-1.0 / m));
}

bk_status bk_params_fpp(uint64_t m_bits, unsigned k, uint64_t n, double *out) {
  BK_RETURN_IF(!out || m_bits == 0 || k == 0 || k > BK_K_MAX, BK_EINVAL);
  /* fbf-thesis Eq. 4.1 as corrected in docs/design/fbf.md 5.1:
   * (1 - (1 - 1/m)^{k l})^k.
   */
  *out = pow(bit_set_probability((double)m_bits, k, (double)n), (double)k);
  return BK_OK;
}

/* Past this many bit draws per block the exact occupancy recursion is too
 * long; such loads fill a block to within e^{-k j / 512} of full anyway. */
#define EXACT_DRAWS_MAX 60000.0

bk_status bk_params_fpp_blocked(uint64_t m_bits, unsigned k, uint64_t n,
                                double *out) {
  return bk__fpp_blocked_cells(m_bits, BK_BLOCK_BITS, k, n, out);
}

/* The same for blocks of B cells (2 <= B <= 512): bk_cbf's blocked layout
 * has 512 / width counters in a 64-byte block. */
bk_status bk__fpp_blocked_cells(uint64_t m, unsigned B, unsigned k, uint64_t n,
                                double *out) {
  BK_RETURN_IF(!out || B < 2 || B > BK_BLOCK_BITS || m == 0 || m % B != 0 ||
                   k == 0 || k > BK_K_MAX,
               BK_EINVAL);
  if (n == 0) {
    *out = 0.0;
    return BK_OK;
  }
  double blocks = (double)(m / B);
  double lambda = (double)n / blocks; /* mean load of one block */
  /* The block a probe lands in holds j keys with probability
   * Poisson(lambda)(j); sum over j within mean +- 12 standard deviations
   * (+20 for small loads: the mass outside is below 1e-30). */
  double spread = 12.0 * sqrt(lambda) + 20.0;
  double lo_d = lambda > spread ? lambda - spread : 0.0;
  /* Every block that matters holds at least lo_d keys; once k lo_d / 512
   * exceeds 45 each such block is full to within e^-45 ~ 3e-20, so the
   * rate is 1 in double precision. This also keeps the loops below short
   * (they then run over at most ~2 * (12 sqrt(23040 + ...) + 20) terms)
   * and every double-to-integer conversion in range. */
  if ((double)k * lo_d / (double)B > 45.0) {
    *out = 1.0;
    return BK_OK;
  }
  uint64_t lo = (uint64_t)lo_d;
  uint64_t hi = (uint64_t)(lambda + spread);

  if ((double)hi * k > EXACT_DRAWS_MAX) {
    /* Putze et al.'s form: each block's expected fill raised to k. At these
     * loads the fill is 1 - e^{-k j / 512} ~ 1 and the two forms agree. */
    double log_lambda = log(lambda), total = 0.0;
    for (uint64_t j = lo; j <= hi; j++) {
      double jd = (double)j;
      total += exp(jd * log_lambda - lambda - lgamma(jd + 1.0)) *
               pow(bit_set_probability(B, k, jd), (double)k);
    }
    *out = total > 1.0 ? 1.0 : total;
    return BK_OK;
  }

  /* Exact: after j keys a block has received j k uniform draws of its B
   * positions; occ[x] is the probability that x distinct bits are set
   * (the occupancy recursion x -> x + 1 with probability (B - x) / B). A
   * probe's k positions, drawn with replacement, all hit set bits with
   * probability (x / B)^k. */
  double occ[BK_BLOCK_BITS + 1], next[BK_BLOCK_BITS + 1];
  double hit[BK_BLOCK_BITS + 1];
  for (unsigned x = 0; x <= B; x++) {
    occ[x] = 0.0;
    hit[x] = pow((double)x / B, (double)k);
  }
  occ[0] = 1.0;
  unsigned top = 0; /* highest x with occ[x] > 0 */
  double log_lambda = log(lambda), total = 0.0;
  for (uint64_t j = 0; j <= hi; j++) {
    if (j >= lo) {
      double jd = (double)j, e = 0.0;
      for (unsigned x = 0; x <= top; x++) e += occ[x] * hit[x];
      total += exp(jd * log_lambda - lambda - lgamma(jd + 1.0)) * e;
    }
    for (unsigned d = 0; d < k; d++) { /* one more key: k more draws */
      unsigned new_top = top < B ? top + 1 : B;
      for (unsigned x = 0; x <= new_top; x++) next[x] = 0.0;
      for (unsigned x = 0; x <= top; x++) {
        double stay = (double)x / B;
        next[x] += occ[x] * stay;
        if (x < B) next[x + 1] += occ[x] * (1.0 - stay);
      }
      top = new_top;
      for (unsigned x = 0; x <= top; x++) occ[x] = next[x];
    }
  }
  *out = total > 1.0 ? 1.0 : total;
  return BK_OK;
}

bk_status bk_params_fpp_split_block(uint64_t m_bits, uint64_t n,
                                    double *out) {
  BK_RETURN_IF(!out || m_bits == 0 || m_bits % BK_SPLIT_BLOCK_BITS != 0,
               BK_EINVAL);
  if (n == 0) {
    *out = 0.0;
    return BK_OK;
  }
  double blocks = (double)(m_bits / BK_SPLIT_BLOCK_BITS);
  double lambda = (double)n / blocks;
  /* Poisson mass outside mean +- (12 sd + 20) is below 1e-30. */
  double spread = 12.0 * sqrt(lambda) + 20.0;
  double lo_d = lambda > spread ? lambda - spread : 0.0;
  /* A word that took over 1500 draws is clear with probability
   * (31/32)^1500 < 3e-21: the rate is 1 in double precision. This also
   * bounds the loop below to about 2 * (12 sqrt(1500 + ...) + 20) terms. */
  if (lo_d > 1500.0) {
    *out = 1.0;
    return BK_OK;
  }
  uint64_t lo = (uint64_t)lo_d, hi = (uint64_t)(lambda + spread);
  const double log_clear = log1p(-1.0 / 32.0);
  double log_lambda = log(lambda), total = 0.0;
  for (uint64_t j = lo; j <= hi; j++) {
    double jd = (double)j;
    double word_set = -expm1(jd * log_clear);
    total += exp(jd * log_lambda - lambda - lgamma(jd + 1.0)) *
             pow(word_set, 8.0);
  }
  *out = total > 1.0 ? 1.0 : total;
  return BK_OK;
}

/* The candidates: m_start rounded up to `unit`, then steps of about 1/64
 * (each rounded up to `unit`), at most 1024 of them and none above m_max:
 * the sequence the search used to walk, so sizes are what they were. The
 * rate falls as m grows, so the first candidate that meets fpp is found by
 * bisection over the candidates' indices: at most 11 evaluations where
 * walking them could take 1024. An evaluation of the
 * blocked rate can cost milliseconds (its exact occupancy sum), and a
 * loader sizes every filter of a hostile file through here: walking made
 * one scbf blob take seconds to load (found by the fuzz run). */
#define M_SEARCH_STEPS 1024u

bk_status bk__m_search(uint64_t m_start, uint64_t unit, uint64_t m_max,
                       double fpp, bk__fpp_of_m fpp_of, const void *ctx,
                       uint64_t *out) {
  BK_RETURN_IF(!out || !fpp_of || unit == 0, BK_EINVAL);
  uint64_t cand[M_SEARCH_STEPS];
  size_t n = 0;
  uint64_t m = m_start < unit ? unit : (m_start + unit - 1) / unit * unit;
  /* m_max is at most 2^40-odd (the layouts' limits): no step overflows. */
  BK_RETURN_IF(m_max > UINT64_MAX / 2 || m_start > m_max, BK_EINVAL);
  while (n < M_SEARCH_STEPS && m <= m_max) {
    cand[n++] = m;
    uint64_t next = m + m / 64;
    m = (next + unit - 1) / unit * unit;
    if (m == next - m / 64) m += unit; /* (small m: no growth otherwise) */
  }
  BK_RETURN_IF(n == 0, BK_EINVAL);
  /* Invariant: cand[hi] meets fpp (hi == n: none known to), none below lo
   * does. */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    double p;
    BK_TRY(fpp_of(cand[mid], ctx, &p));
    if (p <= fpp)
      hi = mid;
    else
      lo = mid + 1;
  }
  /* fpp out of reach below m_max or in 1024 steps (a floor of the layout) */
  BK_RETURN_IF(hi == n, BK_EINVAL);
  *out = cand[hi];
  return BK_OK;
}

bk_status bk_params_p_capacity(uint64_t m_bits, double p, uint64_t *out) {
  BK_RETURN_IF(!out || m_bits == 0 || !p_ok(p), BK_EINVAL);
  /* kbf-paper Sec. 4, Definition 1: p-capacity = -m (ln 2)^2 / ln p. */
  double cap = floor(-(double)m_bits * LN2 * LN2 / log(p));
  /* p near 1 on a huge m can exceed 64 bits: say so rather than wrap. */
  BK_RETURN_IF(!(cap < 18446744073709551616.0), BK_ERANGE);
  *out = (uint64_t)cap;
  return BK_OK;
}

bk_status bk_params_bits_per_element(double p, double *out) {
  BK_RETURN_IF(!out || !p_ok(p), BK_EINVAL);
  *out = -log(p) / (LN2 * LN2);
  return BK_OK;
}
