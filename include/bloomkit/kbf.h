/* SPDX-License-Identifier: MIT */
/*
 * bk_kbf: the key-value Bloom filter of Xiong, Yao, Li, Cao, He, Qi,
 * Tolbert & Liu, "kBF: Towards Approximate and Bloom Filter based Key-Value
 * Storage for Cloud Computing Systems" (IEEE TCC; INFOCOM 2014 for the
 * first version), Sections 3 and 4.
 *
 * A kBF is a Bloom filter whose m cells each hold a small counter and the
 * XOR of the encodings of every value stored there. Values are byte
 * strings; each distinct value gets an encoding from a pool in which all
 * encodings and all XORs of two distinct encodings are different (Sec.
 * 3.2), so a cell holding one or two encodings can be decoded. A query
 * reads the key's k cells and returns the value (a cell with counter 1, or
 * the common encoding of two 2-cells: decode22, or of a 2-cell and a
 * 3-cell: decode23, Sec. 3.5), "absent" (a cell is empty, or the cells
 * contradict each other) or "not decodable". Values map to encodings
 * through a secondary kBF keyed by value (the s-kBF) and back through the
 * value table (Sec. 3.3).
 *
 * The pool: bloomkit's encodings are the points (x, x^3) of GF(2^t),
 * x != 0, written as the integer x * 2^t + x^3 (2t bits): a Sidon set, so
 * the rules of Sec. 3.2 hold by construction, with P = 2t bits for up to
 * 2^t - 1 values (the bound of Sec. 3.2 to within one bit). The paper's
 * greedy search (Algorithm 1) is bk_kbf_encodings_greedy, for comparison:
 * it needs far more bits than the paper reports (docs/design/kbf.md, 5.13).
 *
 * Thread safety: queries (query, contains, value, info, serialize) may run
 * concurrently with each other; every mutation (insert, update, delete,
 * join, compress, intern) needs exclusive access.
 */
#ifndef BLOOMKIT_KBF_H
#define BLOOMKIT_KBF_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_kbf bk_kbf;

/** How a query decodes cells without a counter-1 cell (Sec. 3.5, Fig. 17). */
typedef enum bk_kbf_decode {
  BK_KBF_DECODE_DEFAULT = 0, /**< BK_KBF_DECODE_23 */
  BK_KBF_DECODE_22 = 1,      /**< the first option: two 2-cells only */
  BK_KBF_DECODE_23 = 2,      /**< both options: decode22, then decode23 */
} bk_kbf_decode;

/** Encoding -> value index (Sec. 3.6). */
typedef enum bk_kbf_inverse {
  BK_KBF_INVERSE_DEFAULT = 0, /**< BK_KBF_INVERSE_DIRECT (measured fastest) */
  BK_KBF_INVERSE_DIRECT = 1,  /**< index = (e >> t) - 1, then one check */
  BK_KBF_INVERSE_BINARY = 2,  /**< binary search of the increasing table */
} bk_kbf_inverse;

/** What a query found. */
typedef enum bk_kbf_result {
  BK_KBF_FOUND = 0,       /**< a value (wrong only as a false positive) */
  BK_KBF_ABSENT = 1,      /**< not stored: a cell is empty or they disagree */
  BK_KBF_UNDECODABLE = 2, /**< too many encodings superimposed to tell */
} bk_kbf_result;

/**
 * Size by (capacity, fpp) — the paper's CREATE(m, k) through Sec. 4:
 * m = -capacity ln p / (ln 2)^2 and the optimal k — or by explicit
 * (m_cells, k). Zero fields mean "default".
 */
typedef struct bk_kbf_config {
  uint64_t capacity;      /**< keys present at once (the p-capacity) */
  double fpp;             /**< target false positive probability; 0.01 */
  uint64_t m_cells;       /**< explicit cell count (k then required) */
  unsigned k;             /**< hash functions, 1..64 */
  unsigned cell_bits;     /**< 32 (default: 3-bit counter, 29-bit encoding)
                               or 64 (8-bit counter, 56-bit encoding) */
  uint32_t max_values;    /**< distinct values it can hold; default 4095;
                               at most 16383 (32-bit cells) or 2^24 - 1 */
  bk_kbf_decode decode;   /**< default BK_KBF_DECODE_23 */
  bk_kbf_inverse inverse; /**< default BK_KBF_INVERSE_DIRECT */
  bk_hash_alg hash_alg;   /**< BK_HASH_XXH3 by default */
  uint64_t seed;          /**< hash seed (32 bits for Murmur3) */
  const bk_allocator *allocator; /**< NULL: libc */
} bk_kbf_config;

typedef struct bk_kbf_info {
  uint64_t m_cells;      /**< cells now (halved by each compress) */
  uint64_t m_created;    /**< cells at create */
  unsigned compressions; /**< times compressed */
  unsigned k;
  unsigned cell_bits;     /**< 32 or 64 */
  unsigned counter_bits;  /**< 3 or 8 */
  unsigned encoding_bits; /**< P = 2t, the pool's width */
  uint32_t max_values;    /**< 2^t - 1 */
  uint32_t n_values;      /**< distinct values assigned so far */
  uint64_t n_keys;        /**< inserts minus deletes */
  uint64_t capacity;      /**< what it was sized for (0 if by m, k) */
  uint64_t nonzero;       /**< cells with a nonzero counter */
  uint64_t saturated;     /**< cells whose counter stuck at its maximum */
  uint64_t load[4];       /**< cells with counter 0, 1, 2, and 3 or more */
  double rho;             /**< capacity coefficient n k / (m ln 2), Sec. 4 */
  bk_kbf_decode decode;
  bk_kbf_inverse inverse;
  bk_hash_alg hash_alg;
  uint64_t seed;
  size_t memory_cells;  /**< bytes of the main cells */
  size_t memory_skbf;   /**< bytes of the s-kBF's cells */
  size_t memory_values; /**< bytes of the value table (bytes + index) */
} bk_kbf_info;

/** Create an empty kBF. Errors: BK_EINVAL (bad config), BK_ENOMEM. */
BK_API bk_status bk_kbf_create(bk_kbf **out, const bk_kbf_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_kbf_destroy(bk_kbf *f);
/** The filter's digest of a key, for the _hash forms. Errors: BK_EINVAL. */
BK_API bk_status bk_kbf_hash(const bk_kbf *f, const void *key, size_t len,
                             bk_hash *out);

/**
 * The index of `value` in the value table, assigning it the next encoding
 * if it has none (through the s-kBF, Sec. 3.3; a false positive of the
 * s-kBF is caught by comparing the table's bytes, and where the s-kBF
 * cannot answer, an exact index of the table does, so a value has exactly
 * one encoding). Values are compared byte for byte. Errors: BK_EINVAL,
 * BK_EFULL (max_values distinct values already), BK_ENOMEM. Cost: one
 * s-kBF query, an index probe when that fails and, for a new value, one
 * s-kBF insert (and amortised O(1) growth of the table and its index, 8
 * bytes per entry).
 */
BK_API bk_status bk_kbf_intern(bk_kbf *f, const void *value, size_t len,
                               uint32_t *index);

/**
 * Value `index` of the table: *value points into the table (valid until
 * the next mutation of f), *len its length. Errors: BK_EINVAL, BK_ERANGE
 * (index >= n_values).
 */
BK_API bk_status bk_kbf_value(const bk_kbf *f, uint32_t index,
                              const void **value, size_t *len);

/**
 * INSERT (Algorithm 2): XOR the value's encoding into the key's k cells and
 * count it. Insert a key at most once; for a key that may be there use
 * update. A counter at its maximum stays there (it is never decoded again).
 * Errors: BK_EINVAL, BK_EFULL and BK_ENOMEM from intern.
 */
BK_API bk_status bk_kbf_insert(bk_kbf *f, const void *key, size_t len,
                               const void *value, size_t value_len);
/** INSERT with an interned value: BK_ERANGE for an index not assigned. */
BK_API bk_status bk_kbf_insert_index_hash(bk_kbf *f, bk_hash h, uint32_t index);

/**
 * QUERY (Algorithms 3, 6, 7). *result says what was found; for
 * BK_KBF_FOUND value and value_len (either may be NULL) point into the value
 * table (valid until the next mutation). Errors: BK_EINVAL.
 * Cost: O(k t): decode2 (which two encodings XOR to a cell) is solved in
 * closed form in GF(2^t), not by the paper's O(n) scan.
 */
BK_API bk_status bk_kbf_query(const bk_kbf *f, const void *key, size_t len,
                              bk_kbf_result *result, const void **value,
                              size_t *value_len);
/** QUERY giving the value's index (*index is written only when found). */
BK_API bk_status bk_kbf_query_index_hash(const bk_kbf *f, bk_hash h,
                                         bk_kbf_result *result,
                                         uint32_t *index);

/**
 * UPDATE (Algorithm 5): query the key, then replace its encoding by the new
 * value's in its k cells. Errors: BK_EINVAL, BK_ENOTFOUND (absent),
 * BK_EUNDECODABLE (its value cannot be decoded: nothing changes), BK_EFULL,
 * BK_ENOMEM.
 */
BK_API bk_status bk_kbf_update(bk_kbf *f, const void *key, size_t len,
                               const void *value, size_t value_len);
BK_API bk_status bk_kbf_update_index_hash(bk_kbf *f, bk_hash h, uint32_t index);

/**
 * DELETE (Algorithm 4): query the key, then remove its encoding from its k
 * cells. Every cell is checked before any is written: if one could not
 * hold the key (counter 0; a counter that would reach 0 with encodings
 * left; a counter that would reach 1 leaving no single encoding) nothing
 * changes and the result is BK_ENOTFOUND. Errors: BK_EINVAL, BK_ENOTFOUND,
 * BK_EUNDECODABLE (nothing changes).
 */
BK_API bk_status bk_kbf_delete(bk_kbf *f, const void *key, size_t len);
BK_API bk_status bk_kbf_delete_hash(bk_kbf *f, bk_hash h);
/** DELETE of a pair whose value the caller knows (Algorithm 4 as written:
 * no query, so it works where the value is not decodable); the same cell
 * checks. Errors: BK_EINVAL, BK_ENOTFOUND (value never interned, or a cell
 * check failed). */
BK_API bk_status bk_kbf_delete_index_hash(bk_kbf *f, bk_hash h, uint32_t index);

/**
 * JOIN (Sec. 3.4): dst becomes the union of dst and src, cell by cell
 * (encodings XORed, counters added, saturating). Both must have the same
 * shape (m now, m at create, k, cell width, pool, hash, seed) and value
 * tables of which one is a prefix of the other (the same values, in the
 * same order: create both, then intern the values in one order); dst's
 * table becomes the longer. Errors: BK_EINVAL, BK_EMISMATCH, BK_ENOMEM
 * (dst unchanged). Cost: O(m + values).
 */
BK_API bk_status bk_kbf_join(bk_kbf *dst, const bk_kbf *src);

/**
 * COMPRESS (Sec. 3.4): fold the second half of the cells onto the first
 * (cell i of the result is the JOIN of cells i and i + m/2), halving the
 * memory; a key's position p becomes p mod m/2. Errors: BK_EINVAL,
 * BK_ESTATE (m odd), BK_ENOMEM (unchanged). Cost: O(m).
 */
BK_API bk_status bk_kbf_compress(bk_kbf *f);

/** Counters and shape. Errors: BK_EINVAL. Cost: O(m). */
BK_API bk_status bk_kbf_info_get(const bk_kbf *f, bk_kbf_info *out);

/**
 * The counters of the k cells a digest maps to (a read-only look at the
 * cells, for experiments that try a decoding rule of their own, such as
 * the paper's Algorithm 6 as written). counters[i] is the counter of the
 * cell at the key's i-th position, in the order the filter takes them; a
 * position that occurs twice reads the same cell twice; a saturated
 * counter reads as its maximum (7 for 32-bit cells, 255 for 64-bit). The
 * encodings are not shown. Writes k entries (at most BK_K_MAX = 64) and
 * sets *written = k. Errors: BK_EINVAL (a NULL argument, cap < k: nothing
 * written). Cost: O(k), no allocation.
 */
BK_API bk_status bk_kbf_cell_counters_hash(const bk_kbf *f, bk_hash h,
                                           uint8_t *counters, size_t cap,
                                           size_t *written);

/** Serialized form: parameters, value table and cells (the s-kBF is
 * rebuilt from the table on load). See bk_bloom for the calling pattern. */
BK_API bk_status bk_kbf_serialized_size(const bk_kbf *f, size_t *out);
BK_API bk_status bk_kbf_serialize(const bk_kbf *f, void *buf, size_t cap,
                                  size_t *written);
/** Load a blob. Errors: BK_EINVAL (NULL arguments), BK_ECORRUPT,
 * BK_EVERSION, BK_ENOMEM. Cost: O(len + values x k). */
BK_API bk_status bk_kbf_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_kbf **out);

/* ---- chaining (Sec. 3.4, 4) ------------------------------------------------
 */

/**
 * A chain of kBFs of one config (Sec. 3.4: "whenever this reaches near its
 * maximum, we can allocate another kBF of the same size"; Sec. 4: so that no
 * kBF passes its p-capacity). Inserts go to the newest kBF; when it holds
 * `capacity` keys (the config must size by capacity) a new empty one is
 * appended. Queries consult the kBFs newest first: the first that decodes
 * a value answers; "not decodable" if none does and one could not tell;
 * else "absent". update and delete act on the newest kBF that decodes the
 * key. Each kBF keeps its own s-kBF and value table. Thread safety: as
 * bk_kbf.
 */
typedef struct bk_kbf_chain bk_kbf_chain;

/** Create a chain holding one empty kBF. Errors: BK_EINVAL (no capacity in
 * cfg, or a bad config), BK_ENOMEM. */
BK_API bk_status bk_kbf_chain_create(bk_kbf_chain **out,
                                     const bk_kbf_config *cfg);
/** Free the chain and its kBFs. NULL does nothing. */
BK_API void bk_kbf_chain_destroy(bk_kbf_chain *c);
/** INSERT into the newest kBF, appending one first if it is full.
 * Errors: as bk_kbf_insert. */
BK_API bk_status bk_kbf_chain_insert(bk_kbf_chain *c, const void *key,
                                     size_t len, const void *value,
                                     size_t value_len);
/** QUERY, newest first; *value points into the kBF that answered. Cost:
 * O(n_filters k t). Errors: BK_EINVAL. */
BK_API bk_status bk_kbf_chain_query(const bk_kbf_chain *c, const void *key,
                                    size_t len, bk_kbf_result *result,
                                    const void **value, size_t *value_len);
/** UPDATE / DELETE in the newest kBF that decodes the key. Errors: as
 * bk_kbf_update / bk_kbf_delete (BK_ENOTFOUND when none has it,
 * BK_EUNDECODABLE when none decodes it and one could not tell). */
BK_API bk_status bk_kbf_chain_update(bk_kbf_chain *c, const void *key,
                                     size_t len, const void *value,
                                     size_t value_len);
BK_API bk_status bk_kbf_chain_delete(bk_kbf_chain *c, const void *key,
                                     size_t len);
/** How many kBFs the chain holds; kBF i (oldest 0) for reading, or NULL
 * past the end (valid until the next insert). */
BK_API size_t bk_kbf_chain_length(const bk_kbf_chain *c);
BK_API const bk_kbf *bk_kbf_chain_get(const bk_kbf_chain *c, size_t i);

/* ---- encodings (Sec. 3.2) ------------------------------------------------ */

/**
 * The pool's encoding of value index `index` for a pool of width 2t:
 * x = index + 1, e = x * 2^t + x^3 in GF(2^t) (the lowest-weight
 * irreducible polynomial of degree t). 2 <= t <= 28, index < 2^t - 1.
 * Errors: BK_EINVAL. Cost: O(t^2) (and O(t^3) once per t for the
 * polynomial).
 */
BK_API bk_status bk_kbf_encoding(unsigned t, uint32_t index, uint64_t *out);

/** The smallest t whose pool holds n values (2^t - 1 >= n), at least 2. */
BK_API unsigned bk_kbf_pool_t(uint64_t n);

/** The least P with 2^P >= n(n-1)/2 + n: the bound of Sec. 3.2. */
BK_API unsigned bk_kbf_encoding_bound(uint64_t n);

/** Statistics of a greedy search. */
typedef struct bk_kbf_greedy_stats {
  uint64_t candidates;       /**< candidates tested */
  uint64_t false_rejections; /**< rejected on a Bloom false positive */
  size_t memory;             /**< bytes of the membership structure */
} bk_kbf_greedy_stats;

/**
 * Algorithm 1: the greedy search for n encodings below 2^max_bits whose
 * values and pairwise XORs all differ. With bloom_bits_per_entry > 0 the
 * admitted encodings and XORs go into a Bloom filter of that many bits per
 * expected entry (n(n+1)/2), as steps 3 and 9: a candidate it reports is
 * rejected (possibly a false collision), so an admitted one is exact. With
 * 0, an exact bitmap of 2^max_bits bits. out[0..n) gets the encodings
 * (increasing). Errors: BK_EINVAL (n == 0, max_bits outside 2..36 or
 * above 32 for the exact bitmap, NULL out), BK_ERANGE (the n-th encoding would
 * need more than max_bits bits: out holds what was found, *found how many),
 * BK_ENOMEM. Cost: about e_n candidates, e_n ~ 0.007 n^3 (measured; not
 * O(n^2)).
 */
BK_API bk_status bk_kbf_encodings_greedy(uint32_t n, unsigned max_bits,
                                         double bloom_bits_per_entry,
                                         uint64_t *out, uint32_t *found,
                                         bk_kbf_greedy_stats *stats);

/**
 * Whether enc[0..n) obeys Sec. 3.2 exactly: all nonzero, all distinct, all
 * pairwise XORs distinct from each other and from every encoding. Sorts
 * the n(n+1)/2 values, so it needs that many u64s. Errors: BK_EINVAL,
 * BK_ENOMEM. Cost: O(n^2 log n).
 */
BK_API bk_status bk_kbf_encodings_check(const uint64_t *enc, uint32_t n,
                                        bool *ok);

/**
 * The paper's encoding -> index inverse (Sec. 3.6, Fig. 3) over an
 * increasing table: a least-squares quadratic y = a + b x + c x^2 of the
 * encodings against their index, inverted, plus the largest error of that
 * guess over the table, so the lookup searches only that window and is
 * exact.
 */
typedef struct bk_kbf_regression {
  double a, b, c;
  uint64_t max_error; /**< |guess - index| over the table */
  const uint64_t *table;
  uint32_t n;
} bk_kbf_regression;

/** Fit over table[0..n) (n >= 3, increasing). Errors: BK_EINVAL. O(n). */
BK_API bk_status bk_kbf_regression_fit(const uint64_t *table, uint32_t n,
                                       bk_kbf_regression *out);
/** The index of `e` in the fitted table, or -1. O(log max_error). */
BK_API int64_t bk_kbf_regression_find(const bk_kbf_regression *r, uint64_t e);
/** The same by binary search over the whole table, or -1. O(log n). */
BK_API int64_t bk_kbf_binary_find(const uint64_t *table, uint32_t n,
                                  uint64_t e);

/* ---- capacity (Sec. 4) ----------------------------------------------------
 */

/** p-capacity -m (ln 2)^2 / ln p, rounded down. Errors: BK_EINVAL. */
BK_API bk_status bk_kbf_p_capacity(uint64_t m, double p, uint64_t *out);

/** The capacity coefficient rho = n k / (m ln 2). */
BK_API double bk_kbf_rho(uint64_t n, unsigned k, uint64_t m);

/** Poisson limit of P(c(i) = j) at rho: (rho ln 2)^j / j! * 2^-rho. */
BK_API double bk_kbf_cell_prob(unsigned j, double rho);

/** P_n(rho): a random cell holds 3 or more encodings (the paper's closed
 * form; P_n(1) = 0.0333). */
BK_API double bk_kbf_pn(double rho);

/**
 * Probability that a stored key cannot be decoded with option 1
 * (decode22 only): none of its k cells holds it alone and at most one holds
 * it with exactly one other. `paper` = true gives the paper's expression
 * P_n^k + k P_n^(k-1) P(c = 2), which uses a random cell's load; false
 * gives the load of a stored key's own cell (1 + Poisson(rho ln 2)):
 * q3^k + k q2 q3^(k-1), q2 = L e^-L, q3 = 1 - (1 + L) e^-L, L = rho ln 2
 * (docs/design/kbf.md, 5.13). Distinct co-resident values are assumed.
 */
BK_API double bk_kbf_decode_failure(double rho, unsigned k, bool paper);

#ifdef __cplusplus
}
#endif

#endif
