/* SPDX-License-Identifier: MIT */
/*
 * The stateful Bloom filter (sBF) of Bonomi, Mitzenmacher, Panigrahy, Singh
 * & Varghese, "Beyond Bloom Filters: From Approximate Membership Checks to
 * Approximate State Machines" (SIGCOMM 2006), the baseline the kBF paper
 * compares against in its TCP state machine study (kBF paper Sec. 7, Figs.
 * 24-25). Private to bloomkit's experiments and tests; never installed.
 *
 * m cells, each a saturating 8-bit count and a value; a key maps to k cells
 * (bloomkit's enhanced double hashing of an XXH3 digest, as bk_bloom).
 *
 *     cell: | count (8 bits) | value (8 bits) |
 *     value 0 = empty (only with count 0), 1..BK_SBF_MAX_VALUE a value,
 *     BK_SBF_DONT_KNOW = two different values met in this cell
 *
 * insert(key, v): each cell: count 0 -> value v; count > 0 and value != v
 *   -> value DONT_KNOW; then count + 1 (a count at 255 stays there).
 * delete(key): if any cell has count 0 the key is not there: nothing
 *   changes (BK_ENOTFOUND). Else each cell below 255: count - 1, and a cell
 *   whose count reaches 0 becomes empty. The value is not needed.
 * lookup(key): any count 0 -> absent. Else the cells' values other than
 *   DONT_KNOW: none -> don't know; all equal v -> v; two different -> absent.
 * update(key, v) = delete(key), then insert(key, v).
 *
 * Why "two different values -> absent" is exact: while every delete is of a
 * key that is there, a cell's value other than DONT_KNOW equals the value
 * of every key counted in it (an insert of another value makes it
 * DONT_KNOW, a delete leaves the other keys' common value, and a cell
 * emptied by its last key forgets). So a stored key's cells hold only its
 * own value or DONT_KNOW; disagreeing cells mean the key is not stored. A
 * delete of a key that is not there (a false positive acted on) breaks the
 * rule and is where the sBF's false negatives beyond "don't know" come from.
 *
 * Thread safety: none; one user at a time.
 */
#ifndef BLOOMKIT_SRC_KBFAPPS_SBF_H
#define BLOOMKIT_SRC_KBFAPPS_SBF_H

#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_SBF_MAX_VALUE 254u
#define BK_SBF_DONT_KNOW 255u
#define BK_SBF_COUNT_MAX 255u
#define BK_SBF_MAX_CELLS (UINT64_C(1) << 36)

typedef struct bk__sbf bk__sbf;

typedef enum bk__sbf_result {
  BK_SBF_FOUND = 0,
  BK_SBF_ABSENT = 1,
  BK_SBF_UNKNOWN = 2, /* every cell of the key says "don't know" */
} bk__sbf_result;

typedef struct bk__sbf_info {
  uint64_t m_cells;
  unsigned k;
  uint64_t n_keys;    /* inserts minus deletes */
  uint64_t nonzero;   /* cells with a count */
  uint64_t dont_know; /* cells holding DONT_KNOW */
  uint64_t saturated; /* cells at count 255 */
  size_t memory;      /* bytes of the cells */
} bk__sbf_info;

/** m_cells in 1..BK_SBF_MAX_CELLS, k in 1..BK_K_MAX. Errors: BK_EINVAL,
 * BK_ENOMEM. */
bk_status bk__sbf_create(bk__sbf **out, uint64_t m_cells, unsigned k,
                         uint64_t seed);
void bk__sbf_destroy(bk__sbf *f);
/** value in 1..BK_SBF_MAX_VALUE. Errors: BK_EINVAL. */
bk_status bk__sbf_insert(bk__sbf *f, const void *key, size_t len,
                         unsigned value);
/** *value is written only for BK_SBF_FOUND. Errors: BK_EINVAL. */
bk_status bk__sbf_lookup(const bk__sbf *f, const void *key, size_t len,
                         bk__sbf_result *result, unsigned *value);
/** Errors: BK_EINVAL, BK_ENOTFOUND (a cell of the key is empty: nothing
 * changes). */
bk_status bk__sbf_delete(bk__sbf *f, const void *key, size_t len);
/** delete then insert. Errors: BK_EINVAL, BK_ENOTFOUND (nothing changes). */
bk_status bk__sbf_update(bk__sbf *f, const void *key, size_t len,
                         unsigned value);
/** Errors: BK_EINVAL. Cost: O(m). */
bk_status bk__sbf_info_get(const bk__sbf *f, bk__sbf_info *out);
/** The count and value of cell i (tests). Errors: BK_EINVAL, BK_ERANGE. */
bk_status bk__sbf_cell(const bk__sbf *f, uint64_t i, unsigned *count,
                       unsigned *value);
/** The key's k cell indices into out[k] (tests). Errors: BK_EINVAL. */
bk_status bk__sbf_indices(const bk__sbf *f, const void *key, size_t len,
                          uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
