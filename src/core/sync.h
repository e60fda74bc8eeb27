/* SPDX-License-Identifier: MIT */
/*
 * Private: the small synchronisation helpers the structures share: a CPU
 * pause, spin-wait backoff, and the striped per-key locks that make
 * add_if_absent linearizable (two threads with the same
 * key take the same lock; different keys rarely meet): bk_bloom's spin
 * locks below, and the FBF's sequence locks (fbf.c), picked the same way.
 */
#ifndef BLOOMKIT_SRC_CORE_SYNC_H
#define BLOOMKIT_SRC_CORE_SYNC_H

#include <sched.h>

#include "bloomkit/hash.h"
#include "internal.h"

/* Key locks per structure, one cache line each (4 KiB in all). */
#define BK__KEY_LOCKS 64u
#define BK__KEY_LOCK_STRIDE (BK_CACHE_LINE / sizeof(uint32_t))
#define BK__KEY_LOCKS_BYTES (BK__KEY_LOCKS * BK_CACHE_LINE)

static inline void bk__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* One step of a spin-wait: pause for a while, then yield, because the
 * thread we wait for may have been descheduled. */
static inline void bk__backoff(unsigned *spins) {
  if (++*spins > 64)
    sched_yield();
  else
    bk__cpu_relax();
}

/* The key lock of digest h, 0 .. BK__KEY_LOCKS - 1. */
static inline unsigned bk__key_lock_index(bk_hash h) {
  return (unsigned)((h.lo ^ h.hi) % BK__KEY_LOCKS);
}

static inline uint32_t *bk__key_lock(const bk__region *locks, bk_hash h) {
  uint32_t *base = locks->data;
  return &base[bk__key_lock_index(h) * BK__KEY_LOCK_STRIDE];
}

static inline void bk__spin_lock(uint32_t *l) {
  for (unsigned spins = 0;;) {
    if (!__atomic_load_n(l, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE))
      return;
    bk__backoff(&spins);
  }
}

static inline void bk__spin_unlock(uint32_t *l) {
  __atomic_store_n(l, 0u, __ATOMIC_RELEASE);
}

/* Sequence locks, the FBF's and the APBF's key locks: even while free, odd
 * while held, +1 at each acquire and release. A shift or refresh that sees
 * a lock held waits only until its value changes (that holder's release,
 * bk__seq_wait_release), never for the lock to be free, so a stream of
 * inserts cannot starve it. The acquire is one locked instruction
 * (seq_cst), the release a plain store. */
static inline uint32_t bk__seq_lock(uint32_t *l) {
  for (unsigned spins = 0;;) {
    uint32_t v = __atomic_load_n(l, __ATOMIC_RELAXED);
    if (!(v & 1u) &&
        __atomic_compare_exchange_n(l, &v, v + 1u, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return v + 1u;
    bk__backoff(&spins);
  }
}

static inline void bk__seq_unlock(uint32_t *l, uint32_t held) {
  __atomic_store_n(l, held + 1u, __ATOMIC_RELEASE);
}

/* A grace period's step: if lock l is held now (seq_cst, after the caller
 * published a new state seq_cst), wait for that holder's release. */
static inline void bk__seq_wait_release(uint32_t *l) {
  uint32_t v = __atomic_load_n(l, __ATOMIC_SEQ_CST);
  if (!(v & 1u)) return;
  for (unsigned spins = 0; __atomic_load_n(l, __ATOMIC_ACQUIRE) == v;)
    bk__backoff(&spins);
}

#endif
