/* SPDX-License-Identifier: MIT */
/*
 * bk_idem: a table of named int64 counters behind per-client sequence
 * windows (idem_window.c) and/or one duplicate filter of applied op ids
 * (fbf-thesis Sec. 5.4: a table-level FBF); `decide` below is the one place
 * a strategy's rule is applied.
 *
 * The table is 256 stripes, each a mutex and an open-addressed table of
 * its own (idem_table.c) that grows by doubling; a key's stripe and slot
 * come from one digest of the key. An add holds its key's stripe lock across
 * "is this op id new?" and "apply", so a duplicate is answered with a
 * value that includes the original, and the filter's linearizable
 * add_if_absent makes concurrent adds of one op id apply it once even
 * across stripes. Anything that can fail (a new key's memory, an overflow)
 * is settled before the op id is recorded, so a failed add leaves no trace.
 * The snapshot (serialize, deserialize) is in idem_io.c.
 */
#define _GNU_SOURCE /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include "bloomkit/idem.h"

#include <pthread.h>
#include <stdlib.h>

#include "apbf_internal.h"
#include "bloomkit/apbf.h"
#include "bloomkit/bloom.h"
#include "bloomkit/fbf.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "core/hash_fast.h"
#include "core/internal.h"
#include "fbf_internal.h"
#include "idem_internal.h"

#define DEFAULT_N_PAST 2u
#define DEFAULT_FPP 0.001
#define DEFAULT_OPS_PER_PERIOD 100000u

/* ---- the table ----------------------------------------------------------
 * One stripe's slots are in idem_table.c. */

static bk_hash key_hash(const bk_idem *t, const void *key, size_t len) {
  return bk__hash_fast(t->hash_alg, t->seed, key, len);
}

bk_status bk__idem_restore_key(bk_idem *t, const void *key, size_t len,
                               int64_t value) {
  bk_hash kh = key_hash(t, key, len);
  bk__idem_stripe *st = bk__idem_stripe_of(t, kh);
  BK_RETURN_IF(bk__idem_find(st, kh, key, len), BK_ECORRUPT); /* a key twice */
  bk__idem_reservation r;
  BK_TRY(bk__idem_reserve(t, st, kh, key, len, &r));
  (void)bk__idem_commit(st, &r, value);
  return BK_OK;
}

/* ---- lifecycle ------------------------------------------------------------
 */

bk_status bk__idem_init_stripes(bk_idem *t, uint64_t expected_keys) {
  uint64_t per = expected_keys ? expected_keys / BK__IDEM_STRIPES + 1 : 0;
  BK_TRY(bk__region_alloc(
      &t->alloc,
      BK__IDEM_STRIPES * sizeof(bk__idem_stripe) + bk__idem_slab_bytes(per),
      &t->stripe_region));
  t->stripes = t->stripe_region.data;
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return BK_ENOMEM;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  /* Spin a little before sleeping: stripe sections are short. */
  (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  bk_status st = BK_OK;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    bk__idem_stripe *s = &t->stripes[i];
    if (pthread_mutex_init(&s->mu, &attr) != 0) {
      st = BK_ENOMEM;
      break;
    }
    /* From here on s->slots is set: destroy's sign of a live mutex. */
    st = bk__idem_table_init(t, s, per);
    if (st != BK_OK) break;
  }
  pthread_mutexattr_destroy(&attr);
  return st;
}

void bk_idem_destroy(bk_idem *t) {
  if (!t) return;
  for (unsigned i = 0; t->stripes && i < BK__IDEM_STRIPES; i++) {
    bk__idem_stripe *s = &t->stripes[i];
    if (!s->slots) continue; /* its mutex was never made */
    bk__idem_table_free(t, s);
    pthread_mutex_destroy(&s->mu);
  }
  bk__region_free(&t->alloc, &t->stripe_region);
  bk_fbf_destroy(t->fbf);
  bk_rbf_destroy(t->rbf);
  bk_apbf_destroy(t->apbf);
  if (t->windowed) bk__win_free(&t->win);
  if (t->lazy_fbf) pthread_mutex_destroy(&t->fbf_mu);
  bk__alloc al = t->alloc;
  bk__free(&al, t);
}

bk_status bk__idem_new_table(const bk_allocator *allocator, bk_idem **out) {
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_idem *t = bk__calloc(&al, 1, sizeof *t);
  BK_RETURN_IF(!t, BK_ENOMEM);
  t->alloc = al;
  *out = t;
  return BK_OK;
}

bk_status bk__idem_init_windows(bk_idem *t, unsigned window,
                                const bk_fbf_config *fbf_cfg) {
  if (t->strategy != BK_IDEM_WINDOW && t->strategy != BK_IDEM_HYBRID)
    return BK_OK;
  BK_TRY(bk__win_init(&t->win, &t->alloc, window, t->timeout,
                      __atomic_load_n(&t->now, __ATOMIC_RELAXED), t->seed));
  t->windowed = true;
  if (t->strategy == BK_IDEM_HYBRID) {
    BK_RETURN_IF(pthread_mutex_init(&t->fbf_mu, NULL) != 0, BK_ENOMEM);
    t->lazy_fbf = true;
    t->fbf_cfg = *fbf_cfg;
  }
  return BK_OK;
}

bool bk__idem_fbf_lazy_ok(const bk_fbf_config *c) {
  uint64_t bytes;
  return bk__fbf_config_memory(c, &bytes) == BK_OK &&
         bytes <= BK__IDEM_LAZY_FBF_MAX;
}

bk_status bk__idem_need_fbf(bk_idem *t, bk_fbf **out) {
  bk_fbf *f = bk__idem_fbf(t);
  if (f || !t->lazy_fbf) {
    *out = f;
    return BK_OK;
  }
  bk_status st = BK_OK;
  pthread_mutex_lock(&t->fbf_mu);
  f = bk__idem_fbf(t);
  if (!f) {
    /* It starts at the table's clock (an FBF starts by UINT64_MAX / 2; an
     * earlier start only keeps ids longer), advance moves it on. */
    bk_fbf_config c = t->fbf_cfg;
    c.start_time = __atomic_load_n(&t->now, __ATOMIC_ACQUIRE);
    if (c.start_time > UINT64_MAX / 2) c.start_time = UINT64_MAX / 2;
    st = bk_fbf_create(&f, &c);
    if (st == BK_OK) __atomic_store_n(&t->fbf, f, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&t->fbf_mu);
  *out = f;
  return st;
}

bk_status bk_idem_create(bk_idem **out, const bk_idem_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF((unsigned)cfg->strategy > BK_IDEM_APBF, BK_EINVAL);
  BK_RETURN_IF(!bk__win_size_ok(cfg->window), BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid(cfg->hash_alg, cfg->seed), BK_EINVAL);
  BK_RETURN_IF(cfg->max_key_len > BK_IDEM_KEY_MAX, BK_EINVAL);
  double fpp = cfg->fpp == 0.0 ? DEFAULT_FPP : cfg->fpp;
  BK_RETURN_IF(!(fpp > 0.0 && fpp < 1.0), BK_EINVAL);
  double target = cfg->target_fpp == 0.0 ? fpp : cfg->target_fpp;
  BK_RETURN_IF(!(target > 0.0 && target < 1.0), BK_EINVAL);
  unsigned n_past = cfg->n_past ? cfg->n_past : DEFAULT_N_PAST;
  BK_RETURN_IF(n_past > 62, BK_EINVAL);
  uint64_t timeout = cfg->retry_timeout, period = cfg->refresh_period;
  bool filtered = cfg->strategy != BK_IDEM_NONE;
  if (filtered) {
    BK_RETURN_IF(timeout == 0, BK_EINVAL);
    if (!period) /* ceil(timeout / (N + 1)), without overflow */
      period = timeout / (n_past + 1) + (timeout % (n_past + 1) != 0);
    /* The window must cover the timeout, and a period longer than the
     * window itself is a mistake (the filter would hold far more than the
     * retries need). */
    BK_RETURN_IF(period > timeout, BK_EINVAL);
    BK_RETURN_IF(period > UINT64_MAX / (n_past + 1) ||
                     (uint64_t)(n_past + 1) * period < timeout,
                 BK_EINVAL);
  }
  uint64_t ops =
      cfg->ops_per_period ? cfg->ops_per_period : DEFAULT_OPS_PER_PERIOD;
  BK_RETURN_IF(cfg->m_bits && !cfg->k, BK_EINVAL);
  BK_RETURN_IF(ops > (UINT64_MAX >> 2), BK_EINVAL); /* 2 ops must not wrap */

  bk_idem *t;
  BK_TRY(bk__idem_new_table(cfg->allocator, &t));
  t->strategy = cfg->strategy;
  t->max_key_len = cfg->max_key_len ? cfg->max_key_len : BK_IDEM_KEY_MAX;
  t->hash_alg = cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  t->seed = cfg->seed;
  t->timeout = filtered ? timeout : 0;
  t->now = cfg->start_time;
  bk_status s = bk__idem_init_stripes(t, cfg->expected_keys);
  if (s == BK_OK &&
      (cfg->strategy == BK_IDEM_FBF || cfg->strategy == BK_IDEM_FBF_ADAPTIVE ||
       cfg->strategy == BK_IDEM_HYBRID)) {
    bool adaptive = cfg->strategy == BK_IDEM_FBF_ADAPTIVE;
    bk_fbf_config fc = {.m_bits = cfg->m_bits,
                        .k = cfg->k,
                        .capacity = cfg->m_bits ? 0 : ops,
                        .fpp = fpp,
                        .n_past = n_past,
                        .refresh_period = period,
                        .min_window = timeout,
                        .start_time = cfg->start_time,
                        .adaptive = adaptive,
                        .target_fpp = target,
                        .max_filters = adaptive ? cfg->max_filters : 0,
                        .hash_alg = cfg->hash_alg,
                        .seed = cfg->seed,
                        .allocator = cfg->allocator};
    if (adaptive) {
      /* Algorithm 3's step: a tenth of the period; one tick a period. The
       * estimate lags a change of t by about a period (the filters filled
       * at the old t are still there), and ticking faster made t and the
       * filter count oscillate (measured with `bloomkit sim counters`: a
       * t/4 tick lost 7.7x the target, ticking near the window ~1.3x). */
      fc.period_step =
          cfg->period_step ? cfg->period_step : (period / 10 ? period / 10 : 1);
      fc.adapt_interval = cfg->adapt_interval ? cfg->adapt_interval : period;
      fc.min_period = fc.period_step < period ? fc.period_step : period;
    }
    /* HYBRID makes a small FBF on first need (the config is checked now,
     * so that first need can fail only for memory), a big one now: an FBF
     * not made yet is never a big one (BK__IDEM_LAZY_FBF_MAX). */
    if (cfg->strategy == BK_IDEM_HYBRID) {
      s = bk__fbf_config_check(&fc);
      if (s == BK_OK) s = bk__idem_init_windows(t, cfg->window, &fc);
      bk_fbf *f;
      if (s == BK_OK && !bk__idem_fbf_lazy_ok(&fc))
        s = bk__idem_need_fbf(t, &f);
    } else {
      s = bk_fbf_create(&t->fbf, &fc);
    }
  } else if (s == BK_OK && cfg->strategy == BK_IDEM_RBF) {
    /* Equal memory with the FBF of the same settings (thesis Sec. 6.4.4):
     * one filter of (N + 2) m bits. */
    uint64_t m = cfg->m_bits;
    unsigned k = cfg->k;
    if (!m && k) {
      s = bk_params_m_for_k(2 * ops, fpp, k, &m); /* m that meets fpp */
    } else if (!m) {
      s = bk_params_for_target(2 * ops, fpp, &m, &k);
    }
    uint64_t total = 0;
    if (s == BK_OK &&
        (m > BK_BITS_MAX ||
         __builtin_mul_overflow(m, (uint64_t)(n_past + 2), &total) ||
         total > BK_BITS_MAX))
      s = BK_EINVAL;
    if (s == BK_OK) {
      bk_rbf_config rc = {.m_bits = total,
                          .k = k,
                          .target_fpp = target,
                          .hash_alg = cfg->hash_alg,
                          .seed = cfg->seed,
                          .allocator = cfg->allocator};
      s = bk_rbf_create(&t->rbf, &rc);
    }
  } else if (s == BK_OK && cfg->strategy == BK_IDEM_WINDOW) {
    s = bk__idem_init_windows(t, cfg->window, NULL);
  } else if (s == BK_OK && cfg->strategy == BK_IDEM_APBF) {
    /* Time-based, its window the timeout (each op id kept at least that
     * long), sized for the ops of a window: N + 1 periods' worth. */
    uint64_t per_window = 0;
    if (cfg->m_bits ||
        __builtin_mul_overflow(ops, (uint64_t)(n_past + 1), &per_window))
      s = BK_EINVAL; /* sized by capacity and fpp only */
    if (s == BK_OK) {
      bk_apbf_config ac = {.capacity = per_window,
                           .fpp = fpp,
                           .window = timeout,
                           .start_time = cfg->start_time,
                           .hash_alg = cfg->hash_alg,
                           .seed = cfg->seed,
                           .allocator = cfg->allocator};
      s = bk_apbf_create(&t->apbf, &ac);
    }
  }
  if (s != BK_OK) {
    bk_idem_destroy(t);
    return s;
  }
  *out = t;
  return BK_OK;
}

/* ---- operations -----------------------------------------------------------
 */

static bk_status check_key(const bk_idem *t, const void *key, size_t len) {
  BK_RETURN_IF(!t || !key || len == 0 || len > t->max_key_len, BK_EINVAL);
  return BK_OK;
}

/* Op ids are hashed in their own domain (seed ^ a constant that keeps a
 * Murmur3 seed within 32 bits). */
static bk_hash op_hash(const bk_idem *t, bk_idem_op_id id) {
  unsigned char buf[16];
  bk__store_le64(buf, id.client);
  bk__store_le64(buf + 8, id.seq);
  return bk__hash_fast(t->hash_alg, t->seed ^ 0x5EEDu, buf, sizeof buf);
}

/* A full word of a client's window (all 64 seqs s with s / 64 == word
 * applied) as one id. Its own domain is its length (24 bytes: a tag after
 * client and word), not a seed: XXH3 on 9 to 16 bytes with seeds a few
 * bits apart maps (client, word) onto (client, small seq) (measured: the
 * word id of word 0 collided with the op ids of its own seqs). */
static bk_hash word_hash(const bk_idem *t, uint64_t client, uint64_t word) {
  unsigned char buf[24];
  bk__store_le64(buf, client);
  bk__store_le64(buf + 8, word);
  bk__store_le64(buf + 16, UINT64_C(0x574F5244574F5244)); /* "WORDWORD" */
  return bk__hash_fast(t->hash_alg, t->seed ^ 0x5EEDu, buf, sizeof buf);
}

/* HYBRID's slide-out: the applied seqs leaving a client's window while
 * their retries may still come go into the FBF (docs/design/idem.md); a
 * full word, what a busy client in order leaves behind, as one id, so such
 * a client costs the FBF one insert per 64 ops. */
static bk_status slide_to_fbf(void *ctx, uint64_t client, const uint64_t *seqs,
                              size_t n) {
  bk_idem *t = ctx;
  bk_fbf *f;
  BK_TRY(bk__idem_need_fbf(t, &f));
  if (n == 64) return bk_fbf_add_hash(f, word_hash(t, client, seqs[0] >> 6));
  bk_hash h[64];
  for (size_t i = 0; i < n; i++) {
    h[i] = op_hash(t, (bk_idem_op_id){client, seqs[i]});
    bk__fbf_prefetch(f, h[i]);
  }
  for (size_t i = 0; i < n; i++) BK_TRY(bk_fbf_add_hash(f, h[i]));
  return BK_OK;
}

/*
 * The strategy's verdict on op `id`: APPLIED (new), DUPLICATE or TOO_OLD
 * (WINDOW, below the window). With `set` a new op is recorded as applied
 * (the caller then applies it, and nothing may fail after this); without,
 * nothing changes. `oh` is the op's digest for the FBF and RBF strategies;
 * HYBRID hashes only the ops its windows cannot decide. Called under the
 * key's stripe lock. Errors: BK_ENOMEM (a new client's window or HYBRID's
 * FBF; nothing recorded).
 */
static bk_status decide(bk_idem *t, bk_idem_op_id id, bk_hash oh, bool set,
                        bk_idem_outcome *out) {
  bk_fbf *f = t->lazy_fbf ? NULL : t->fbf; /* HYBRID: loaded below */
  if (t->windowed) {
    bk__win_verdict v;
    uint64_t now = __atomic_load_n(&t->now, __ATOMIC_ACQUIRE);
    BK_TRY(bk__win_decide(&t->win, id.client, id.seq, now, set,
                          t->lazy_fbf ? slide_to_fbf : NULL, t, &v));
    if (v != BK__WIN_BELOW || !t->lazy_fbf) {
      *out = v == BK__WIN_NEW   ? BK_IDEM_APPLIED
             : v == BK__WIN_DUP ? BK_IDEM_DUPLICATE
                                : BK_IDEM_TOO_OLD;
      return BK_OK;
    }
    /* HYBRID, below the window: the FBF decides. */
    oh = op_hash(t, id);
    if (set)
      BK_TRY(bk__idem_need_fbf(t, &f));
    else
      f = bk__idem_fbf(t);
    if (!f) { /* no FBF yet: nothing below a window was ever recorded */
      *out = BK_IDEM_APPLIED;
      return BK_OK;
    }
    /* Its word slid out full: applied. */
    bool full = false;
    BK_TRY(
        bk_fbf_contains_hash(f, word_hash(t, id.client, id.seq >> 6), &full));
    if (full) {
      *out = BK_IDEM_DUPLICATE;
      return BK_OK;
    }
  }
  bool fresh = true;
  if (f && set) {
    BK_TRY(bk_fbf_add_if_absent_hash(f, oh, &fresh));
  } else if (f) {
    BK_TRY(bk_fbf_contains_hash(f, oh, &fresh));
    fresh = !fresh;
  } else if (t->apbf && set) {
    BK_TRY(bk_apbf_add_if_absent_hash(t->apbf, oh, &fresh));
  } else if (t->apbf) {
    BK_TRY(bk_apbf_contains_hash(t->apbf, oh, &fresh));
    fresh = !fresh;
  } else if (t->rbf && set) {
    BK_TRY(bk_rbf_add_if_absent_hash(t->rbf, oh, &fresh));
  } else if (t->rbf) {
    BK_TRY(bk_rbf_contains_hash(t->rbf, oh, &fresh));
    fresh = !fresh;
  }
  *out = fresh ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE;
  return BK_OK;
}

/* What an add works out before its key's stripe lock: the key's digest
 * (its stripe and slot) and, for the FBF, APBF and RBF strategies, the op
 * id's. */
typedef struct add_digests {
  bk_hash kh, oh;
} add_digests;

/* The digests of an add, and the start of its cache misses (the key's
 * slot, the client's window or the filter's words), so they are on their
 * way before the add queues on its lock (or, in a batch, while the ops
 * before it are applied). */
static inline add_digests add_prepare(const bk_idem *t, const void *key,
                                      size_t len, bk_idem_op_id id) {
  add_digests d = {key_hash(t, key, len), {0, 0}};
  if (t->rbf || t->apbf || (!t->lazy_fbf && t->fbf)) d.oh = op_hash(t, id);
  bk__idem_table_prefetch(t, d.kh);
  if (t->windowed)
    bk__win_prefetch(&t->win, id.client);
  else if (t->fbf)
    bk__fbf_prefetch(t->fbf, d.oh);
  else if (t->apbf)
    bk__apbf_prefetch(t->apbf, d.oh);
  return d;
}

/* The add itself, under the key's stripe lock: bk_idem_add after the key
 * check and add_prepare. *value and *outcome are written on BK_OK only. */
static bk_status add_locked(bk_idem *t, const void *key, size_t len,
                            add_digests d, bk_idem_op_id id, int64_t delta,
                            int64_t *value, bk_idem_outcome *outcome) {
  bk__idem_stripe *s = bk__idem_stripe_of(t, d.kh);
  pthread_mutex_lock(&s->mu);
  bk__idem_slot *e = bk__idem_find(s, d.kh, key, len);
  int64_t current = e ? e->value : 0, next;
  bk_idem_outcome oc;
  bk_status st;
  if (__builtin_add_overflow(current, delta, &next)) {
    /* A retry is a duplicate whatever its delta would do, so a retry of
     * the update that took the counter to its limit is answered, not
     * refused; only a new update is out of range. (Rare: only here does
     * an add look before it inserts.) */
    st = decide(t, id, d.oh, false, &oc);
    if (st == BK_OK && oc == BK_IDEM_DUPLICATE) s->duplicates++;
    pthread_mutex_unlock(&s->mu);
    BK_TRY(st);
    if (oc == BK_IDEM_APPLIED) return BK_ERANGE;
    *value = current;
    *outcome = oc;
    return BK_OK;
  }
  /* A new key: its slot (and a long key's copy) before the op id is
   * recorded, so a failed add leaves no trace. (A new key starts at 0, so
   * it never overflows.) */
  bk__idem_reservation fresh = {0};
  if (!e) {
    st = bk__idem_reserve(t, s, d.kh, key, len, &fresh);
    if (st != BK_OK) {
      pthread_mutex_unlock(&s->mu);
      return st;
    }
  }
  st = decide(t, id, d.oh, true, &oc);
  if (st != BK_OK || oc != BK_IDEM_APPLIED) {
    if (!e) bk__idem_abandon(t, &fresh);
    if (st == BK_OK && oc == BK_IDEM_DUPLICATE) s->duplicates++;
    pthread_mutex_unlock(&s->mu);
    BK_TRY(st);
  } else {
    if (e)
      e->value = next;
    else
      (void)bk__idem_commit(s, &fresh, next);
    s->applied++;
    pthread_mutex_unlock(&s->mu);
  }
  *value = oc == BK_IDEM_APPLIED ? next : current;
  *outcome = oc;
  return BK_OK;
}

bk_status bk_idem_add(bk_idem *t, const void *key, size_t len, bk_idem_op_id id,
                      int64_t delta, int64_t *value, bk_idem_outcome *outcome) {
  BK_TRY(check_key(t, key, len));
  add_digests d = add_prepare(t, key, len, id);
  int64_t v;
  bk_idem_outcome oc;
  BK_TRY(add_locked(t, key, len, d, id, delta, &v, &oc));
  if (value) *value = v;
  if (outcome) *outcome = oc;
  return BK_OK;
}

/* Ops a batch prepares ahead of the one it applies: op i + ADD_AHEAD's
 * digests are computed and its misses started while op i is applied.
 * Measured (bench_idem, 1M keys, ns per op none / hybrid / fbf): 1 ahead
 * 105 / 173 / 213, 2: 88 / 134 / 184, 4: ~55 / 103 / 165, 8: ~48 / 98 /
 * 155, 16 no better; prefetching more of a client's window (4 or 6
 * records from its home slot, for the Robin Hood probe run) did not
 * measurably help either. */
#define ADD_AHEAD 8u

bk_status bk_idem_add_many(bk_idem *t, const void *const *keys,
                           const size_t *lens, const bk_idem_op_id *ids,
                           const int64_t *deltas, size_t n, int64_t *values,
                           bk_idem_outcome *outcomes, bk_status *statuses,
                           size_t *done) {
  if (done) *done = 0;
  BK_RETURN_IF(!t || (n && (!keys || !lens || !ids)), BK_EINVAL);
  for (size_t i = 0; i < n; i++) BK_TRY(check_key(t, keys[i], lens[i]));
  add_digests ring[ADD_AHEAD];
  size_t lead = n < ADD_AHEAD ? n : ADD_AHEAD;
  for (size_t j = 0; j < lead; j++)
    ring[j] = add_prepare(t, keys[j], lens[j], ids[j]);
  bk_status st = BK_OK;
  size_t i = 0;
  for (; i < n; i++) {
    add_digests d = ring[i % ADD_AHEAD];
    size_t ahead = i + ADD_AHEAD;
    if (ahead < n)
      ring[i % ADD_AHEAD] =
          add_prepare(t, keys[ahead], lens[ahead], ids[ahead]);
    int64_t v;
    bk_idem_outcome oc;
    st = add_locked(t, keys[i], lens[i], d, ids[i], deltas ? deltas[i] : 1, &v,
                    &oc);
    if (st == BK_ERANGE && statuses) {
      statuses[i] = BK_ERANGE;
      st = BK_OK;
      continue;
    }
    if (st != BK_OK) break;
    if (values) values[i] = v;
    if (outcomes) outcomes[i] = oc;
    if (statuses) statuses[i] = BK_OK;
  }
  if (done) *done = i;
  return st;
}

bk_status bk_idem_get(const bk_idem *t, const void *key, size_t len,
                      int64_t *value) {
  BK_RETURN_IF(!value, BK_EINVAL);
  BK_TRY(check_key(t, key, len));
  bk_hash kh = key_hash(t, key, len);
  bk__idem_stripe *s = bk__idem_stripe_of(t, kh);
  pthread_mutex_lock(&s->mu);
  bk__idem_slot *e = bk__idem_find(s, kh, key, len);
  if (e) *value = e->value;
  pthread_mutex_unlock(&s->mu);
  return e ? BK_OK : BK_ENOTFOUND;
}

bk_status bk_idem_remove(bk_idem *t, const void *key, size_t len) {
  BK_TRY(check_key(t, key, len));
  bk_hash kh = key_hash(t, key, len);
  bk__idem_stripe *s = bk__idem_stripe_of(t, kh);
  pthread_mutex_lock(&s->mu);
  bk__idem_slot *e = bk__idem_find(s, kh, key, len);
  if (e) bk__idem_erase(t, s, e);
  pthread_mutex_unlock(&s->mu);
  return e ? BK_OK : BK_ENOTFOUND;
}

bk_status bk_idem_iterate(const bk_idem *t,
                          int (*fn)(void *ctx, const void *key, size_t len,
                                    int64_t value),
                          void *ctx) {
  BK_RETURN_IF(!t || !fn, BK_EINVAL);
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    bk__idem_stripe *s = &t->stripes[i];
    pthread_mutex_lock(&s->mu);
    int stop = 0;
    for (uint64_t j = 0; j <= s->mask && !stop; j++) {
      const bk__idem_slot *e = &s->slots[j];
      if (bk__idem_slot_used(e))
        stop = fn(ctx, bk__idem_slot_key(e), bk__idem_slot_len(e), e->value);
    }
    pthread_mutex_unlock(&s->mu);
    if (stop) break;
  }
  return BK_OK;
}

bk_status bk_idem_advance(bk_idem *t, uint64_t now) {
  BK_RETURN_IF(!t, BK_EINVAL);
  uint64_t seen = __atomic_load_n(&t->now, __ATOMIC_ACQUIRE);
  BK_RETURN_IF(now < seen, BK_EINVAL);
  /* The FBF first: it refuses a time before its own clock, and then
   * nothing has changed. */
  bk_fbf *f = bk__idem_fbf(t);
  if (f) BK_TRY(bk_fbf_advance(f, now));
  if (t->apbf) BK_TRY(bk_apbf_advance(t->apbf, now));
  while (seen < now &&
         !__atomic_compare_exchange_n(&t->now, &seen, now, true,
                                      __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
  }
  if (t->windowed) bk__win_maybe_sweep(&t->win, now);
  return BK_OK;
}

bk_status bk_idem_info_get(const bk_idem *t, bk_idem_info *out) {
  BK_RETURN_IF(!t || !out, BK_EINVAL);
  memset(out, 0, sizeof *out);
  out->strategy = t->strategy;
  size_t table = sizeof *t + t->stripe_region.size;
  for (unsigned i = 0; i < BK__IDEM_STRIPES; i++) {
    bk__idem_stripe *s = &t->stripes[i];
    pthread_mutex_lock(&s->mu);
    out->keys += s->n;
    out->applied += s->applied;
    out->duplicates += s->duplicates;
    table += bk__idem_table_memory(s);
    pthread_mutex_unlock(&s->mu);
  }
  out->table_memory = table;
  out->now = __atomic_load_n(&t->now, __ATOMIC_ACQUIRE);
  if (t->windowed) {
    bk__win_totals w;
    bk__win_totals_get(&t->win, &w);
    /* A retry within the timeout is recognised (the proof in idem.md);
     * HYBRID's FBF, once made, reports its own (longer) window below. */
    out->window_min = t->timeout;
    out->window = t->win.w;
    out->clients = w.clients;
    out->window_decided = w.decided;
    out->below_window = w.below;
    out->slid_to_filter = w.slid;
    out->clients_evicted = w.evicted;
    out->window_memory = w.memory;
  }
  bk_fbf *f = bk__idem_fbf(t);
  if (f) {
    bk__fbf_summary(f, &out->n_filters, &out->refresh_period, &out->window_min,
                    &out->filter_memory);
    BK_TRY(bk_fbf_estimated_fpp(f, BK_FBF_CHECK_DEFAULT, &out->fpp));
  } else if (t->apbf) {
    bk_apbf_info ai;
    BK_TRY(bk_apbf_info_get(t->apbf, &ai));
    out->filter_memory = ai.memory;
    out->window_min = ai.window_min;
    BK_TRY(bk_apbf_estimated_fpp(t->apbf, &out->fpp));
  } else if (t->rbf) {
    bk_rbf_info ri;
    BK_TRY(bk_rbf_info_get(t->rbf, &ri));
    out->filter_memory = ri.memory;
    BK_TRY(bk_rbf_estimated_fpp(t->rbf, &out->fpp));
  }
  return BK_OK;
}
