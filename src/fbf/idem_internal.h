/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: bk_idem's table (stripes of chained
 * entries behind one duplicate filter), shared by idem.c (the table and
 * its operations) and idem_io.c (its snapshot). Never installed.
 */
#ifndef BLOOMKIT_SRC_IDEM_INTERNAL_H
#define BLOOMKIT_SRC_IDEM_INTERNAL_H

#include <pthread.h>

#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/rbf.h"
#include "core/internal.h"

#define BK__IDEM_STRIPES 256u

typedef struct bk__idem_entry {
  struct bk__idem_entry *next;
  uint64_t hash;
  int64_t value;
  uint32_t len;
  unsigned char key[];
} bk__idem_entry;

/* One stripe per 128 bytes of 64-byte aligned memory, so two threads on
 * different stripes never share a cache line (measured: packed mutexes
 * capped two threads at ~1.3x one). */
typedef struct bk__idem_stripe {
  pthread_mutex_t mu;
  uint64_t n;
  uint64_t n_buckets; /* a power of two */
  bk__idem_entry **buckets;
  uint64_t applied;
  uint64_t duplicates;
  unsigned char pad[128 - sizeof(pthread_mutex_t) - 5 * sizeof(uint64_t)];
} bk__idem_stripe;

struct bk_idem {
  bk__alloc alloc;
  bk_idem_strategy strategy;
  size_t max_key_len;
  bk_hash_alg hash_alg;
  uint64_t seed;
  bk_fbf *fbf;
  bk_rbf *rbf;
  uint64_t now;             /* the clock when there is no FBF (atomic) */
  bk__idem_stripe *stripes; /* BK__IDEM_STRIPES, in stripe_region */
  bk__region stripe_region;
};

/* A zeroed table with the allocator. Errors: BK_EINVAL, BK_ENOMEM. */
bk_status bk__idem_new_table(const bk_allocator *allocator, bk_idem **out);
/* The stripes, each with buckets for about expected_keys / stripes keys.
 * Errors: BK_ENOMEM (bk_idem_destroy frees what was made). */
bk_status bk__idem_init_stripes(bk_idem *t, uint64_t expected_keys);
/* Put a key (not in the table yet) with its value into the table.
 * Errors: BK_ECORRUPT (the key is already there), BK_ENOMEM. */
bk_status bk__idem_restore_key(bk_idem *t, const void *key, size_t len,
                               int64_t value);

#endif
