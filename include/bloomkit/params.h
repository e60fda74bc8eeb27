/* SPDX-License-Identifier: MIT */
/*
 * Parameter math for Bloom filters: optimal size and hash count for a target,
 * the false positive probability of a filter, its p-capacity (kbf-paper
 * Sec. 4, Definition 1) and bits per element; and the layouts the filters
 * share (bk_bloom_layout) with their block sizes.
 *
 * Notation of the papers: m bits, k hash functions, n elements, p target false
 * positive probability.
 *
 * Thread safety: every function here is pure and safe from any thread.
 */
#ifndef BLOOMKIT_PARAMS_H
#define BLOOMKIT_PARAMS_H

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest k any bloomkit filter accepts. */
#define BK_K_MAX 64u

/** Bits in one block of a blocked filter: one 64-byte cache line. */
#define BK_BLOCK_BITS 512u

/**
 * Where a filter puts a key's k bits (or counters): bk_bloom takes all
 * three, bk_cbf the first two; each structure's header says what it does
 * with them. Here, beside the block sizes and their false positive rates,
 * so a structure's header can name a layout without including another
 * structure's header.
 */
typedef enum bk_bloom_layout {
  BK_BLOOM_STANDARD = 0,    /**< k anywhere in m */
  BK_BLOOM_BLOCKED = 1,     /**< k inside one BK_BLOCK_BITS block */
  BK_BLOOM_SPLIT_BLOCK = 2, /**< Parquet's: one bit in each 32-bit word of
                                 a BK_SPLIT_BLOCK_BITS block (bk_bloom) */
} bk_bloom_layout;

/**
 * Smallest m and the k that minimises the false positive probability for n
 * elements at target p: m = ceil(-n ln p / (ln 2)^2), k = round((m / n) ln 2),
 * clamped to [1, BK_K_MAX]. When the clamp binds (p below about 4e-20 wants
 * k > 64; p near 1 wants k < 1) m is recomputed for the clamped k
 * (bk_params_m_for_k), so the pair still meets p. Either output pointer may
 * be NULL. Errors: BK_EINVAL (n == 0, p outside (0, 1) or NaN, or m above
 * 2^40).
 */
BK_API bk_status bk_params_optimal(uint64_t n, double p, uint64_t *m_bits,
                                   unsigned *k);

/**
 * What the structures size by when only (n, p) is given: k from
 * bk_params_optimal, and the least m with which that k meets p
 * (bk_params_m_for_k). The textbook m of bk_params_optimal is computed for
 * the unrounded optimum k* = log2(1/p); with k = round(k*) it misses p by up
 * to ~1 % (0.4 % at p = 0.01), this m never does. Either output pointer may
 * be NULL. Errors: as bk_params_optimal.
 */
BK_API bk_status bk_params_for_target(uint64_t n, double p, uint64_t *m_bits,
                                      unsigned *k);

/**
 * Smallest m with which n elements and a given k reach false positive
 * probability p by bk_params_fpp: (1 - (1 - 1/m)^{k n})^k <= p, i.e.
 * m = ceil(1 / (1 - (1 - p^{1/k})^{1/(k n)})) (about -k n / ln(1 - p^{1/k})).
 * For a caller that fixes k.
 * Errors: BK_EINVAL (NULL out, n == 0, k == 0 or k > BK_K_MAX, p outside
 * (0, 1) or NaN, or m above 2^40).
 */
BK_API bk_status bk_params_m_for_k(uint64_t n, double p, unsigned k,
                                   uint64_t *m_bits);

/**
 * False positive probability of a standard filter of m bits and k hashes
 * holding n distinct elements: (1 - (1 - 1/m)^{k n})^k, computed without
 * cancellation (log1p/expm1). This is the corrected form of fbf-thesis
 * Eq. 4.1 (see docs/design/fbf.md 5.1). Errors: BK_EINVAL (NULL out, m == 0,
 * k == 0 or k > BK_K_MAX).
 */
BK_API bk_status bk_params_fpp(uint64_t m_bits, unsigned k, uint64_t n,
                               double *out);

/**
 * False positive probability of a blocked filter (all k bits in one
 * B = 512-bit block, block chosen uniformly, positions drawn with
 * replacement, as bk_bloom's blocked layout does), computed exactly:
 *   sum_j P[Poisson(n B / m) = j] * E[(X_j / B)^k]
 * where X_j is the number of distinct bits set by j k uniform draws (an
 * occupancy recursion). Putze, Sanders & Singler (2007) raise the expected
 * fill to k instead, (1 - (1 - 1/B)^{k j})^k, which underestimates (by
 * 0.2-2.5 % at k <= 10 and about 10 bits per key, up to ~6 % at k = 16);
 * that form is used only for loads so heavy (over 60000 draws per block)
 * that both are 1 to within rounding.
 * m must be a positive multiple of 512. Cost: about j_max * k * 512 steps
 * (under a millisecond at the design load).
 * Errors: BK_EINVAL (NULL out, m not a positive multiple of 512, bad k).
 */
BK_API bk_status bk_params_fpp_blocked(uint64_t m_bits, unsigned k, uint64_t n,
                                       double *out);

/** Bits in one block of a split-block filter: eight 32-bit words. */
#define BK_SPLIT_BLOCK_BITS 256u

/**
 * False positive probability of a split-block filter (BK_BLOOM_SPLIT_BLOCK:
 * 256-bit blocks of eight 32-bit words, each key sets one bit in each word
 * of one uniformly chosen block, the Apache Parquet layout), of m bits
 * holding n distinct keys:
 *   sum_j P[Poisson(n 256 / m) = j] * (1 - (1 - 1/32)^j)^8
 * A block that holds j keys has each word's bit of a probe set with
 * probability 1 - (31/32)^j (the j keys drew its one bit uniformly), and a
 * probe is a false positive when all eight are. This is the blocked formula
 * of bk_params_fpp_blocked with k = 8 and the block split into eight
 * one-bit-per-key words. m must be a positive multiple of 256.
 * Cost: O(sqrt(n 256 / m)) terms. Errors: BK_EINVAL (NULL out, m not a
 * positive multiple of 256).
 */
BK_API bk_status bk_params_fpp_split_block(uint64_t m_bits, uint64_t n,
                                           double *out);

/**
 * p-capacity (kbf-paper Sec. 4): the most elements a filter of m bits holds
 * without its false positive probability exceeding p, with the optimal k:
 * floor(-m (ln 2)^2 / ln p). Errors: BK_EINVAL (NULL out, m == 0, p outside
 * (0, 1)), BK_ERANGE (the capacity does not fit in 64 bits, p near 1).
 */
BK_API bk_status bk_params_p_capacity(uint64_t m_bits, double p, uint64_t *out);

/**
 * Bits per element an optimally configured filter needs for target p:
 * -ln p / (ln 2)^2 (about 9.59 at p = 0.01). Errors: BK_EINVAL.
 */
BK_API bk_status bk_params_bits_per_element(double p, double *out);

#ifdef __cplusplus
}
#endif

#endif
