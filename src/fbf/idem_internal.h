/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: bk_idem's table (stripes of open-addressed
 * slots behind one duplicate filter), shared by idem.c (creation and the
 * operations), idem_table.c (one stripe's slots: find, reserve, commit,
 * erase, growth) and idem_io.c (the snapshot). Never installed.
 */
#ifndef BLOOMKIT_SRC_IDEM_INTERNAL_H
#define BLOOMKIT_SRC_IDEM_INTERNAL_H

#include <pthread.h>

#include "bloomkit/apbf.h"
#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/rbf.h"
#include "core/internal.h"
#include "idem_window.h"

#define BK__IDEM_STRIPES 256u

/* Keys of at most this many bytes live in their slot; longer ones on the
 * heap, the slot holding a pointer. */
#define BK__IDEM_INLINE_KEY 16u

/*
 * One slot of a stripe's open-addressed table: 32 bytes, two to a cache
 * line (the array is 64-byte aligned), so a lookup that finds its key at
 * the home slot costs one miss:
 *
 *   0            8            16                          32
 *   +------------+------------+----------------------------+
 *   |    tag     |   value    | key bytes, zero padded     |  len <= 16
 *   +------------+------------+----------------------------+
 *   |    tag     |   value    | char *heap | (unused, 0)   |  len > 16
 *   +------------+------------+----------------------------+
 *
 *   tag: bits 63..16 = bits 63..16 of the key digest's lo half (the home
 *        slot is (tag >> 16) & mask), bits 15..0 = the key length
 *        (1 .. BK_IDEM_KEY_MAX = 4096). A used slot's tag is never 0 (the
 *        length is not), so tag == 0 marks an empty slot, and an empty slot
 *        is all zero bytes.
 */
typedef struct bk__idem_slot {
  uint64_t tag;
  int64_t value;
  union {
    unsigned char bytes[BK__IDEM_INLINE_KEY];
    unsigned char *heap;
  } key;
} bk__idem_slot;

/* One stripe per 128 bytes of 64-byte aligned memory, so two threads on
 * different stripes never share a cache line (measured: packed mutexes
 * capped two threads at ~1.3x one). `slots` and `mask` change only under
 * `mu`, and are stored atomically (relaxed) so bk__idem_table_prefetch
 * may read them without it. */
typedef struct bk__idem_stripe {
  pthread_mutex_t mu;
  bk__idem_slot *slots; /* mask + 1 slots: region.data, or a shared empty
                           slot (mask 0) before the first key */
  uint64_t mask;        /* slots - 1, a power of two minus one */
  uint64_t n;           /* used slots, at most 3/4 of them */
  uint64_t heap_bytes;  /* bytes of the long keys on the heap */
  uint64_t applied;
  uint64_t duplicates;
  bk__region region;
  unsigned char pad[128 - sizeof(pthread_mutex_t) - 6 * sizeof(uint64_t) -
                    sizeof(bk__region)];
} bk__idem_stripe;

struct bk_idem {
  bk__alloc alloc;
  bk_idem_strategy strategy;
  size_t max_key_len;
  bk_hash_alg hash_alg;
  uint64_t seed;
  uint64_t timeout; /* the retry timeout (0: NONE) */
  bk_fbf *fbf;      /* atomic: HYBRID makes it on first need */
  bk_rbf *rbf;
  bk_apbf *apbf;
  uint64_t now; /* the table's clock (atomic, never back) */
  /* BK__IDEM_STRIPES, at the start of stripe_region; after them, when
   * bk__idem_slab_bytes says so, the slab of every stripe's first slots. */
  bk__idem_stripe *stripes;
  bk__region stripe_region;
  /* WINDOW and HYBRID: the client windows (idem_window.c). */
  bool windowed;
  bk__idem_windows win;
  /* HYBRID: the FBF behind the windows, made from fbf_cfg (allocator
   * included) under fbf_mu the first time an op needs it, so a table whose
   * clients stay inside their windows never pays for a filter; or at
   * create, when it is bigger than BK__IDEM_LAZY_FBF_MAX. */
  bool lazy_fbf;
  bk_fbf_config fbf_cfg;
  pthread_mutex_t fbf_mu;
};

/* HYBRID makes its FBF on first need only while an FBF of its config takes
 * at most this many bytes (bk__fbf_config_memory); a bigger one is made at
 * create. The default config (100 000 ops a period at fpp 0.001, N = 2)
 * takes 1.46 MB and stays lazy, as does any up to 289 175 ops a period
 * (the Redis module's default, at fpp 1e-4: 1.95 MB, lazy up to 216 850
 * ops a period). So an FBF not made yet is always a small one: a snapshot
 * without an FBF blob (F == 0) and a bigger config is no state create can
 * reach, and the loader refuses it, where it would have let a blob of a few
 * hundred bytes make a later add allocate gigabytes (format.md 3.3 rules 1
 * and 4). A bigger FBF is in the blob, paid for by the blob's length. */
#define BK__IDEM_LAZY_FBF_MAX ((uint64_t)4 << 20)

/* The table's FBF, or NULL (none, or HYBRID's not made yet). */
static inline bk_fbf *bk__idem_fbf(const bk_idem *t) {
  return __atomic_load_n(&t->fbf, __ATOMIC_ACQUIRE);
}

/* idem.c. Set up the windows (WINDOW, HYBRID) and HYBRID's FBF config of a
 * table whose strategy, seed and timeout are set. Errors: BK_EINVAL,
 * BK_ENOMEM. */
bk_status bk__idem_init_windows(bk_idem *t, unsigned window,
                                const bk_fbf_config *fbf_cfg);
/* idem.c. Whether HYBRID may leave the FBF of config `c` (checked by
 * bk__fbf_config_check) to its first need: an FBF of `c` takes at most
 * BK__IDEM_LAZY_FBF_MAX bytes. */
bool bk__idem_fbf_lazy_ok(const bk_fbf_config *c);
/* idem.c. HYBRID's FBF, made now if it was not yet. Errors: BK_ENOMEM. */
bk_status bk__idem_need_fbf(bk_idem *t, bk_fbf **out);

/* idem.c. A zeroed table with the allocator. Errors: BK_EINVAL,
 * BK_ENOMEM. */
bk_status bk__idem_new_table(const bk_allocator *allocator, bk_idem **out);
/* idem.c. The stripes, each with slots for about expected_keys / stripes
 * keys. Errors: BK_ENOMEM (bk_idem_destroy frees what was made). */
bk_status bk__idem_init_stripes(bk_idem *t, uint64_t expected_keys);
/* idem.c. Put a key (not in the table yet) with its value into the table.
 * Errors: BK_ECORRUPT (the key is already there), BK_ENOMEM. */
bk_status bk__idem_restore_key(bk_idem *t, const void *key, size_t len,
                               int64_t value);

/* ---- idem_table.c: one stripe's open-addressed table ----------------------
 * Linear probing from the home slot, at most 3/4 full, doubled under the
 * stripe lock; removal shifts the probe run back (no tombstones). Every
 * function but bk__idem_table_prefetch needs the stripe's lock. */

/* The stripe of a key digest (the table index comes from kh.lo). */
static inline bk__idem_stripe *bk__idem_stripe_of(const bk_idem *t,
                                                  bk_hash kh) {
  return &t->stripes[kh.hi % BK__IDEM_STRIPES];
}

/* Bytes of a slab for the first slots of every stripe made for `keys`
 * keys, placed after the stripes in stripe_region so that the slots share
 * its 2 MiB aligned huge pages (bk__region_alloc from 4 MiB with libc's
 * allocator); 0 below that size, so small and empty tables stay small. */
size_t bk__idem_slab_bytes(uint64_t keys);
/* Slots for about `keys` keys at most 3/4 full (none at all for 0: the
 * stripe starts on a shared empty slot): the stripe's share of the slab
 * when there is one (a stripe that grows moves out and leaves it unused),
 * else a region of its own. Errors: BK_ENOMEM. */
bk_status bk__idem_table_init(bk_idem *t, bk__idem_stripe *s, uint64_t keys);
/* Free the slots and every long key. The stripe is left unusable. */
void bk__idem_table_free(bk_idem *t, bk__idem_stripe *s);

/* Start loading the key's home slot into the cache. Takes no lock: it reads
 * the stripe's slots and mask with relaxed atomic loads, and a stale pair
 * (a table growing meanwhile) only prefetches a useless line. Call it
 * before taking the stripe lock, beside the filter's prefetch. */
void bk__idem_table_prefetch(const bk_idem *t, bk_hash kh);

/* The slot holding the key, or NULL. kh = the key's digest. */
bk__idem_slot *bk__idem_find(const bk__idem_stripe *s, bk_hash kh,
                             const void *key, size_t len);

/* What bk__idem_reserve set aside for a key not in the table: an empty slot
 * and, for a long key, its heap copy. Nothing is visible until commit. */
typedef struct bk__idem_reservation {
  bk__idem_slot *slot; /* empty, in the stripe's current slots */
  uint64_t tag;
  unsigned char *heap; /* the long key's copy, NULL for an inline key */
  const void *key;     /* the caller's key, for an inline copy at commit */
  size_t len;
} bk__idem_reservation;

/* Set aside room for a key that bk__idem_find did not find: grow the slots
 * if the stripe would pass 3/4 full (growth that fails is tolerated while
 * a slot would stay empty) and copy a long key to the heap. Everything
 * that can fail in adding a key happens here, so call it before the
 * filter records the op id; then commit or abandon, with no table call on
 * this stripe in between. Errors: BK_ENOMEM (nothing changed). */
bk_status bk__idem_reserve(bk_idem *t, bk__idem_stripe *s, bk_hash kh,
                           const void *key, size_t len,
                           bk__idem_reservation *out);
/* Make the reserved key visible with its value; returns its slot. Cannot
 * fail. */
bk__idem_slot *bk__idem_commit(bk__idem_stripe *s,
                               const bk__idem_reservation *r, int64_t value);
/* Give back what reserve took (the long key's copy; the slot stays
 * empty). */
void bk__idem_abandon(bk_idem *t, const bk__idem_reservation *r);

/* Remove the key in `slot` (from bk__idem_find): free a long key and shift
 * the rest of its probe run back, so every other key stays findable.
 * Slot pointers taken before are stale afterwards. */
void bk__idem_erase(bk_idem *t, bk__idem_stripe *s, bk__idem_slot *slot);

/* Bytes of the stripe's slots and long keys. */
size_t bk__idem_table_memory(const bk__idem_stripe *s);

static inline bool bk__idem_slot_used(const bk__idem_slot *e) {
  return e->tag != 0;
}
static inline size_t bk__idem_slot_len(const bk__idem_slot *e) {
  return (size_t)(e->tag & 0xFFFFu);
}
static inline const unsigned char *bk__idem_slot_key(const bk__idem_slot *e) {
  return bk__idem_slot_len(e) > BK__IDEM_INLINE_KEY ? e->key.heap
                                                    : e->key.bytes;
}

#endif
