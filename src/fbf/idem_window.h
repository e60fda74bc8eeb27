/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: bk_idem's per-client sequence windows
 * (strategies WINDOW and HYBRID; docs/design/idem.md, "Client windows").
 * A table keyed by client id; each record holds the client's highest
 * applied seq `high` and a ring of W bits, one per seq, in W / 64 words,
 * covering the words of seqs (high / 64 - W / 64, high / 64]: an op whose
 * seq is above `high` or inside that range is decided exactly. Each word
 * carries a one-byte coarse time (a tick, about a sixteenth of the retry
 * timeout, relative to its stripe's epoch) no earlier than the latest apply
 * it holds; when a word slides out of the ring, its applied seqs whose
 * retry may still arrive are handed to a callback (HYBRID inserts them into
 * the FBF). A record whose every word is older than the timeout is evicted.
 * Records (16 + 9 W / 64 bytes: 52 at W = 256) sit in place in an
 * open-addressed Robin Hood table per stripe, up to 90 % full, grown by a
 * twelfth, so a client costs 52 / 0.9 .. 52 / 0.83 bytes. idem.c calls these
 * under its key stripe lock; the windows have stripe locks of their own,
 * always taken after a key stripe's (never the other way round).
 */
#ifndef BLOOMKIT_SRC_IDEM_WINDOW_H
#define BLOOMKIT_SRC_IDEM_WINDOW_H

#include <pthread.h>

#include "bloomkit/idem.h"
#include "core/internal.h"

#define BK__WIN_STRIPES 64u
#define BK__WIN_DEFAULT BK_IDEM_WINDOW_DEFAULT
#define BK__WIN_MIN BK_IDEM_WINDOW_MIN
#define BK__WIN_MAX BK_IDEM_WINDOW_MAX

/* What a window says about an op id. */
typedef enum bk__win_verdict {
  BK__WIN_NEW = 1,   /* never applied: (with set) recorded as applied */
  BK__WIN_DUP = 2,   /* applied before */
  BK__WIN_BELOW = 3, /* below the client's window: the window cannot tell */
} bk__win_verdict;

/* Receives the applied seqs of `client` that slide out of its window while
 * a retry of them may still arrive, n <= 64 at a time. Called first with
 * n == 0 (seqs NULL) before anything changes, to get ready: an error then
 * fails the decision with nothing changed; the calls with seqs must not
 * fail. */
typedef bk_status (*bk__win_slide_fn)(void *ctx, uint64_t client,
                                      const uint64_t *seqs, size_t n);

/* A stripe's lock is a spin lock (core/sync.h): its sections are a few
 * dozen instructions, and its unlock is a plain release store, where a
 * mutex costs a second atomic read-modify-write per op. */
typedef struct bk__win_stripe {
  uint32_t lock;
  unsigned char *slots; /* n_slots records of rec_size bytes */
  uint64_t n_slots;     /* 0 until the stripe's first client */
  uint64_t n;           /* live records */
  uint64_t epoch;       /* tick of a record time 0 */
  uint64_t last;        /* the latest tick seen: the stripe's clock never
                           goes back, whatever now a caller read */
  uint64_t swept;       /* tick of the last eviction sweep */
  uint64_t decided;     /* ops decided here (new or duplicate) */
  uint64_t below;       /* ops found below their window */
  uint64_t slid;        /* seqs handed to the slide callback */
  uint64_t evicted;     /* records evicted */
  unsigned char pad[128 - sizeof(uint64_t) - 10 * sizeof(uint64_t)];
} bk__win_stripe;

typedef struct bk__idem_windows {
  bk__alloc alloc;
  unsigned w;       /* W, a power of two in [BK__WIN_MIN, BK__WIN_MAX] */
  unsigned words;   /* W / 64 */
  size_t rec_size;  /* bytes per record */
  uint64_t timeout; /* the retry timeout */
  uint64_t start;   /* the clock at creation: tick 0 */
  uint64_t unit;    /* clock units per tick, 2^unit_shift */
  unsigned unit_shift;
  uint64_t open;  /* ticks: a word this many ticks old may be retried */
  uint64_t seed;  /* of the client hash */
  uint64_t swept; /* tick of the last full sweep (atomic) */
  bk__win_stripe *stripes; /* BK__WIN_STRIPES, in region */
  bk__region region;
} bk__idem_windows;

/* Totals for bk_idem_info. */
typedef struct bk__win_totals {
  uint64_t clients, decided, below, slid, evicted;
  size_t memory;
} bk__win_totals;

/* Whether W is a window size the table accepts (0: the default). */
bool bk__win_size_ok(unsigned w);
/* Set up `win` (zeroed by the caller) for windows of W seqs (0: default)
 * and the retry timeout. Errors: BK_EINVAL, BK_ENOMEM. */
bk_status bk__win_init(bk__idem_windows *win, const bk__alloc *al, unsigned w,
                       uint64_t timeout, uint64_t start, uint64_t seed);
void bk__win_free(bk__idem_windows *win);
/* Start the cache miss of the client's record, before any lock. */
void bk__win_prefetch(const bk__idem_windows *win, uint64_t client);

/*
 * Decide op (client, seq) at time `now` (>= every earlier now). With `set`,
 * a NEW op is recorded as applied (creating the client's record, sliding
 * its window, handing slid-out seqs to `slide`), and a BELOW op marks the
 * client active now (the caller then decides it another way and may apply
 * it); without `set` nothing changes. Errors: BK_ENOMEM (a new client's
 * record could not be stored; nothing changed).
 */
bk_status bk__win_decide(bk__idem_windows *win, uint64_t client, uint64_t seq,
                         uint64_t now, bool set, bk__win_slide_fn slide,
                         void *ctx, bk__win_verdict *out);
/* Evict the records of clients idle longer than the timeout at `now`: a
 * walk over every stripe, at most once per `open` ticks (a cheap check
 * otherwise), so bk_idem_advance may call it every time. */
void bk__win_maybe_sweep(bk__idem_windows *win, uint64_t now);
void bk__win_totals_get(const bk__idem_windows *win, bk__win_totals *out);
/* The same with every stripe lock held by the caller. */
void bk__win_totals_locked(const bk__idem_windows *win, bk__win_totals *out);
/* Restore the counts of a snapshot (into the first stripe). */
void bk__win_set_totals(bk__idem_windows *win, uint64_t decided, uint64_t below,
                        uint64_t slid, uint64_t evicted);

/* The snapshot (idem_io.c): lock or unlock every window stripe; the bytes
 * of the live records at `now`; write them; load them. A record is
 *   u64 client | u64 high | W/64 x u64 words | W/64 x u8 ages (ticks)
 * in ring order (word j holds the seqs whose word index is j mod W/64);
 * an age is now's tick minus the word's tick. */
void bk__win_lock_all(bk__idem_windows *win);
void bk__win_unlock_all(bk__idem_windows *win);
size_t bk__win_record_size(const bk__idem_windows *win);
/* Live records at `now` (the caller holds every lock). */
uint64_t bk__win_live(bk__idem_windows *win, uint64_t now);
/* Write the live records at `now` (the caller holds every lock); returns
 * the bytes written (bk__win_live * record size). */
size_t bk__win_write(bk__idem_windows *win, uint64_t now, unsigned char *p);
/* Load one record. Refused (BK_ECORRUPT): a client twice, the bit of
 * `high` clear, a bit above `high` or below seq 0, an age above the
 * limit, a record no younger than the timeout at `now`. Errors: BK_ECORRUPT,
 * BK_ENOMEM. */
bk_status bk__win_restore(bk__idem_windows *win, uint64_t now,
                          const unsigned char *rec);

#endif
