/* SPDX-License-Identifier: MIT */
/*
 * bk_rbf: the Recyclable Bloom Filter, the FBF thesis' baseline (Sec. 6.4.4):
 * one Bloom filter that is cleared whole when its estimated false positive
 * probability, Eq. 4.1 (corrected, see docs/design/fbf.md 5.1) from the number
 * of elements inserted, reaches the target. Same add/contains interface as
 * bk_fbf, so the two compare side by side at equal memory.
 *
 * Thread safety: add, add_if_absent and contains may run concurrently.
 * The recycle happens inside the insert that reaches the threshold; inserts
 * racing with it may land before or after the clear (the baseline forgets
 * everything at that point anyway).
 */
#ifndef BLOOMKIT_RBF_H
#define BLOOMKIT_RBF_H

#include "bloomkit/common.h"
#include "bloomkit/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_rbf bk_rbf;

typedef struct bk_rbf_config {
  uint64_t m_bits; /**< size in bits (k then required), or: */
  unsigned k;
  uint64_t capacity; /**< elements, sized with fpp when m_bits is 0 */
  double fpp;        /**< sizing target; default 0.01 */
  double target_fpp; /**< recycle threshold; default fpp */
  bk_hash_alg hash_alg;
  uint64_t seed;
  const bk_allocator *allocator;
} bk_rbf_config;

/**
 * Create. Errors: BK_EINVAL (NULL, neither m_bits nor capacity, k == 0 with
 * m_bits, fpp/target outside (0, 1), sizes over 2^40 bits, bad hash or
 * allocator), BK_ENOMEM.
 */
BK_API bk_status bk_rbf_create(bk_rbf **out, const bk_rbf_config *cfg);
/** Free. NULL does nothing. */
BK_API void bk_rbf_destroy(bk_rbf *r);

BK_API bk_status bk_rbf_hash(const bk_rbf *r, const void *key, size_t len,
                             bk_hash *out);
/** Insert if not present; recycles when the threshold is reached. */
BK_API bk_status bk_rbf_add(bk_rbf *r, const void *key, size_t len);
BK_API bk_status bk_rbf_add_hash(bk_rbf *r, bk_hash h);
/** Linearizable check-and-insert (as bk_bloom_add_if_absent). */
BK_API bk_status bk_rbf_add_if_absent(bk_rbf *r, const void *key, size_t len,
                                      bool *added);
BK_API bk_status bk_rbf_add_if_absent_hash(bk_rbf *r, bk_hash h, bool *added);
BK_API bk_status bk_rbf_contains(const bk_rbf *r, const void *key, size_t len,
                                 bool *out);
BK_API bk_status bk_rbf_contains_hash(const bk_rbf *r, bk_hash h, bool *out);

/** Eq. 4.1 at the current insert count. Errors: BK_EINVAL. */
BK_API bk_status bk_rbf_estimated_fpp(const bk_rbf *r, double *out);

typedef struct bk_rbf_info {
  uint64_t m_bits;
  unsigned k;
  uint64_t inserted;  /**< since the last recycle */
  uint64_t threshold; /**< inserts at which it recycles */
  uint64_t recycles;
  size_t memory;
} bk_rbf_info;

BK_API bk_status bk_rbf_info_get(const bk_rbf *r, bk_rbf_info *out);

/** Bytes bk_rbf_serialize() will write. Errors: BK_EINVAL. */
BK_API bk_status bk_rbf_serialized_size(const bk_rbf *r, size_t *out);
/** Save filter, counts and threshold (common serialized form). Not atomic
 * with concurrent inserts. Errors: BK_EINVAL (NULL, cap too small). */
BK_API bk_status bk_rbf_serialize(const bk_rbf *r, void *buf, size_t cap,
                                  size_t *written);
/** Restore from hostile bytes. Errors: BK_EINVAL, BK_ECORRUPT, BK_EVERSION,
 * BK_ENOMEM. */
BK_API bk_status bk_rbf_deserialize(const void *buf, size_t len,
                                    const bk_allocator *allocator,
                                    bk_rbf **out);

#ifdef __cplusplus
}
#endif

#endif
