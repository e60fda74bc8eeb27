/* SPDX-License-Identifier: MIT */
/*
 * One stripe of bk_idem's counter table: an open-addressed array of 32-byte
 * slots (layout in idem_internal.h) with linear probing, so a lookup reads
 * the key's tag, value and (short) key from its home slot's cache line,
 * one miss where the chained table it replaces took two dependent ones
 * (bucket, then entry). The array stays at most 3/4 full, doubles under the
 * stripe lock, and removal shifts the rest of the probe run back instead of
 * leaving tombstones. Adding a key is split into reserve (all that can
 * fail), then commit or abandon, so bk_idem_add can put the duplicate
 * filter's decision in between. The caller holds the stripe's lock for
 * everything but bk__idem_table_prefetch.
 */
#include <string.h>

#include "idem_internal.h"

#define MIN_SLOTS 8u
#define MAX_SLOTS ((uint64_t)1 << 40)
/* The least slab: where bk__region_alloc maps 2 MiB aligned memory advised
 * for huge pages. One stripe alone rarely gets there (1M keys are 256 KiB
 * a stripe), all of them together do; with 4 KiB pages the random slot
 * reads of a large table each missed the TLB (docs/results.md). */
#define SLAB_MIN ((uint64_t)4 << 20)

/* A stripe before its first key: one empty slot, mask 0, so find needs no
 * special case and reserve grows it. Never written. */
static const bk__idem_slot empty_slot;

static inline uint64_t tag_of(bk_hash kh, size_t len) {
  return (kh.lo & ~(uint64_t)0xFFFF) | (uint64_t)len;
}

static inline uint64_t home_of(uint64_t tag, uint64_t mask) {
  return (tag >> 16) & mask;
}

/* Slots for n keys at most 3/4 full, a power of two of at least MIN_SLOTS. */
static uint64_t slots_for(uint64_t n) {
  uint64_t slots = MIN_SLOTS;
  while (slots < MAX_SLOTS && slots / 4 * 3 < n) slots *= 2;
  return slots;
}

static void publish(bk__idem_stripe *s, bk__idem_slot *slots, uint64_t mask) {
  __atomic_store_n(&s->slots, slots, __ATOMIC_RELAXED);
  __atomic_store_n(&s->mask, mask, __ATOMIC_RELAXED);
}

size_t bk__idem_slab_bytes(uint64_t keys) {
  if (keys == 0) return 0;
  uint64_t bytes = slots_for(keys) * sizeof(bk__idem_slot);
  if (bytes > SIZE_MAX / 2 / BK__IDEM_STRIPES ||
      bytes * BK__IDEM_STRIPES < SLAB_MIN)
    return 0;
  return (size_t)bytes * BK__IDEM_STRIPES;
}

bk_status bk__idem_table_init(bk_idem *t, bk__idem_stripe *s, uint64_t keys) {
  memset(&s->region, 0, sizeof s->region);
  publish(s, (bk__idem_slot *)&empty_slot, 0);
  if (keys == 0) return BK_OK;
  uint64_t n = slots_for(keys);
  if (t->stripe_region.size > BK__IDEM_STRIPES * sizeof(bk__idem_stripe)) {
    /* Its share of the slab; s->region stays empty (nothing to free). */
    bk__idem_slot *slab = (bk__idem_slot *)(t->stripes + BK__IDEM_STRIPES);
    publish(s, slab + (size_t)(s - t->stripes) * n, n - 1);
    return BK_OK;
  }
  BK_TRY(bk__region_alloc(&t->alloc, (size_t)n * sizeof(bk__idem_slot),
                          &s->region));
  publish(s, s->region.data, n - 1);
  return BK_OK;
}

void bk__idem_table_free(bk_idem *t, bk__idem_stripe *s) {
  if (s->heap_bytes)
    for (uint64_t i = 0; i <= s->mask; i++)
      if (bk__idem_slot_len(&s->slots[i]) > BK__IDEM_INLINE_KEY)
        bk__free(&t->alloc, s->slots[i].key.heap);
  bk__region_free(&t->alloc, &s->region);
  publish(s, (bk__idem_slot *)&empty_slot, 0);
}

void bk__idem_table_prefetch(const bk_idem *t, bk_hash kh) {
  const bk__idem_stripe *s = bk__idem_stripe_of(t, kh);
  uintptr_t slots = (uintptr_t)__atomic_load_n(&s->slots, __ATOMIC_RELAXED);
  uint64_t mask = __atomic_load_n(&s->mask, __ATOMIC_RELAXED);
  /* Integer arithmetic: a stale slots/mask pair may point anywhere, and a
   * prefetch of any address is harmless. */
  uintptr_t home = slots + (uintptr_t)(home_of(kh.lo, mask) *
                                       (uint64_t)sizeof(bk__idem_slot));
  __builtin_prefetch((const void *)home, 1, 3);
}

bk__idem_slot *bk__idem_find(const bk__idem_stripe *s, bk_hash kh,
                             const void *key, size_t len) {
  const uint64_t tag = tag_of(kh, len), mask = s->mask;
  bk__idem_slot *slots = s->slots;
  if (len <= BK__IDEM_INLINE_KEY) {
    /* Inline keys are zero padded in their slot: compare two words. */
    uint64_t want[2] = {0, 0};
    memcpy(want, key, len);
    for (uint64_t i = home_of(tag, mask);; i = (i + 1) & mask) {
      bk__idem_slot *e = &slots[i];
      if (e->tag == tag) {
        uint64_t have[2];
        memcpy(have, e->key.bytes, sizeof have);
        if (have[0] == want[0] && have[1] == want[1]) return e;
      } else if (e->tag == 0) {
        return NULL;
      }
    }
  }
  for (uint64_t i = home_of(tag, mask);; i = (i + 1) & mask) {
    bk__idem_slot *e = &slots[i];
    if (e->tag == tag && memcmp(e->key.heap, key, len) == 0) return e;
    if (e->tag == 0) return NULL;
  }
}

/* The first empty slot of the key's probe run. */
static bk__idem_slot *free_slot(const bk__idem_stripe *s, uint64_t tag) {
  uint64_t i = home_of(tag, s->mask);
  while (s->slots[i].tag) i = (i + 1) & s->mask;
  return &s->slots[i];
}

/* Double the slots, moving every key to its place in the new array. */
static bk_status grow(bk_idem *t, bk__idem_stripe *s) {
  uint64_t old_n = s->mask + 1;
  uint64_t n = old_n < MIN_SLOTS ? MIN_SLOTS : old_n * 2;
  BK_RETURN_IF(n > MAX_SLOTS, BK_ENOMEM);
  bk__region fresh;
  BK_TRY(
      bk__region_alloc(&t->alloc, (size_t)n * sizeof(bk__idem_slot), &fresh));
  bk__idem_slot *old = s->slots, *slots = fresh.data;
  for (uint64_t i = 0; i < old_n; i++) {
    if (!old[i].tag) continue;
    uint64_t j = home_of(old[i].tag, n - 1);
    while (slots[j].tag) j = (j + 1) & (n - 1);
    slots[j] = old[i];
  }
  bk__region_free(&t->alloc, &s->region);
  s->region = fresh;
  publish(s, slots, n - 1);
  return BK_OK;
}

bk_status bk__idem_reserve(bk_idem *t, bk__idem_stripe *s, bk_hash kh,
                           const void *key, size_t len,
                           bk__idem_reservation *out) {
  unsigned char *heap = NULL;
  if (len > BK__IDEM_INLINE_KEY) {
    heap = bk__malloc(&t->alloc, len);
    BK_RETURN_IF(!heap, BK_ENOMEM);
    memcpy(heap, key, len);
  }
  /* A failed growth only makes probes longer, as long as one slot stays
   * empty after this key (every probe run must end). */
  uint64_t slots = s->mask + 1;
  if ((s->n + 1) * 4 > slots * 3 && grow(t, s) != BK_OK && s->n + 2 > slots) {
    bk__free(&t->alloc, heap);
    return BK_ENOMEM;
  }
  uint64_t tag = tag_of(kh, len);
  *out = (bk__idem_reservation){.slot = free_slot(s, tag),
                                .tag = tag,
                                .heap = heap,
                                .key = key,
                                .len = len};
  return BK_OK;
}

bk__idem_slot *bk__idem_commit(bk__idem_stripe *s,
                               const bk__idem_reservation *r, int64_t value) {
  bk__idem_slot *e = r->slot; /* empty, so all zero: the padding stays 0 */
  if (r->heap) {
    e->key.heap = r->heap;
    s->heap_bytes += r->len;
  } else {
    memcpy(e->key.bytes, r->key, r->len);
  }
  e->value = value;
  e->tag = r->tag;
  s->n++;
  return e;
}

void bk__idem_abandon(bk_idem *t, const bk__idem_reservation *r) {
  bk__free(&t->alloc, r->heap);
}

void bk__idem_erase(bk_idem *t, bk__idem_stripe *s, bk__idem_slot *slot) {
  size_t len = bk__idem_slot_len(slot);
  if (len > BK__IDEM_INLINE_KEY) {
    bk__free(&t->alloc, slot->key.heap);
    s->heap_bytes -= len;
  }
  s->n--;
  /* Backward shift: walk the run after the hole; a key whose home is not
   * in (hole, j] cyclically would be cut off from its home by the hole, so
   * it moves into the hole and leaves a new one behind. */
  const uint64_t mask = s->mask;
  uint64_t hole = (uint64_t)(slot - s->slots);
  for (uint64_t j = (hole + 1) & mask; s->slots[j].tag; j = (j + 1) & mask) {
    uint64_t home = home_of(s->slots[j].tag, mask);
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      s->slots[hole] = s->slots[j];
      hole = j;
    }
  }
  memset(&s->slots[hole], 0, sizeof s->slots[hole]);
}

size_t bk__idem_table_memory(const bk__idem_stripe *s) {
  return s->region.size + (size_t)s->heap_bytes;
}
