/* SPDX-License-Identifier: MIT */
/*
 * bk_idem: a table of named int64 counters behind one duplicate filter of
 * applied op ids (fbf-thesis Sec. 5.4: a table-level FBF).
 *
 * The table is 256 stripes, each a mutex and a chained hash table of its
 * own that grows by doubling; a key's stripe and bucket come from one
 * digest of the key. An add holds its key's stripe lock across
 * "is this op id new?" and "apply", so a duplicate is answered with a
 * value that includes the original, and the filter's linearizable
 * add_if_absent makes concurrent adds of one op id apply it once even
 * across stripes. Anything that can fail (a new key's memory, an overflow)
 * is settled before the op id is recorded, so a failed add leaves no trace.
 */
#define _GNU_SOURCE /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include "bloomkit/idem.h"

#include <pthread.h>
#include <stdlib.h>

#include "bloomkit/bloom.h"
#include "bloomkit/fbf.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "core/hash_fast.h"
#include "core/internal.h"
#include "fbf_internal.h"

#define N_STRIPES 256u
#define DEFAULT_N_PAST 2u
#define DEFAULT_FPP 0.001
#define DEFAULT_OPS_PER_PERIOD 100000u
#define IDEM_VERSION 1
#define IDEM_HEADER_LEN (BK__PREFIX_SIZE + 48u)

typedef struct entry {
  struct entry *next;
  uint64_t hash;
  int64_t value;
  uint32_t len;
  unsigned char key[];
} entry;

/* One stripe per 128 bytes of 64-byte aligned memory, so two threads on
 * different stripes never share a cache line (measured: packed mutexes
 * capped two threads at ~1.3x one). */
typedef struct stripe {
  pthread_mutex_t mu;
  uint64_t n;
  uint64_t n_buckets; /* a power of two */
  entry **buckets;
  uint64_t applied;
  uint64_t duplicates;
  unsigned char pad[128 - sizeof(pthread_mutex_t) - 5 * sizeof(uint64_t)];
} stripe;

struct bk_idem {
  bk__alloc alloc;
  bk_idem_strategy strategy;
  size_t max_key_len;
  bk_hash_alg hash_alg;
  uint64_t seed;
  bk_fbf *fbf;
  bk_rbf *rbf;
  uint64_t now;    /* the clock when there is no FBF (atomic) */
  stripe *stripes; /* N_STRIPES, in stripe_region */
  bk__region stripe_region;
};

/* ---- the table ---------------------------------------------------------- */

static bk_hash key_hash(const bk_idem *t, const void *key, size_t len) {
  return bk__hash_fast(t->hash_alg, t->seed, key, len);
}

static inline stripe *stripe_of(const bk_idem *t, bk_hash h) {
  return (stripe *)&t->stripes[h.hi % N_STRIPES];
}

static entry *find(const stripe *s, uint64_t hash, const void *key,
                   size_t len) {
  for (entry *e = s->buckets[hash & (s->n_buckets - 1)]; e; e = e->next)
    if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
      return e;
  return NULL;
}

static void link_entry(stripe *s, entry *e) {
  entry **b = &s->buckets[e->hash & (s->n_buckets - 1)];
  e->next = *b;
  *b = e;
  s->n++;
}

/* Double the buckets when the chains average over 2. A failed allocation
 * only leaves the chains longer. */
static void maybe_grow(bk_idem *t, stripe *s) {
  if (s->n < 2 * s->n_buckets || s->n_buckets > ((uint64_t)1 << 40)) return;
  uint64_t nb = s->n_buckets * 2;
  entry **fresh = bk__calloc(&t->alloc, (size_t)nb, sizeof *fresh);
  if (!fresh) return;
  for (uint64_t i = 0; i < s->n_buckets; i++) {
    for (entry *e = s->buckets[i], *next; e; e = next) {
      next = e->next;
      entry **b = &fresh[e->hash & (nb - 1)];
      e->next = *b;
      *b = e;
    }
  }
  bk__free(&t->alloc, s->buckets);
  s->buckets = fresh;
  s->n_buckets = nb;
}

static entry *new_entry(bk_idem *t, uint64_t hash, const void *key,
                        size_t len) {
  entry *e = bk__malloc(&t->alloc, sizeof *e + len);
  if (!e) return NULL;
  e->next = NULL;
  e->hash = hash;
  e->value = 0;
  e->len = (uint32_t)len;
  memcpy(e->key, key, len);
  return e;
}

/* ---- lifecycle ------------------------------------------------------------
 */

static bk_status init_stripes(bk_idem *t, uint64_t expected_keys) {
  BK_TRY(bk__region_alloc(&t->alloc, N_STRIPES * sizeof(stripe),
                          &t->stripe_region));
  t->stripes = t->stripe_region.data;
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return BK_ENOMEM;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  /* Spin a little before sleeping: stripe sections are short. */
  (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  bk_status st = BK_OK;
  uint64_t per = expected_keys / N_STRIPES + 1;
  uint64_t nb = 8;
  while (nb < per && nb < ((uint64_t)1 << 30)) nb *= 2;
  for (unsigned i = 0; i < N_STRIPES; i++) {
    stripe *s = &t->stripes[i];
    s->buckets = bk__calloc(&t->alloc, (size_t)nb, sizeof *s->buckets);
    if (!s->buckets) {
      st = BK_ENOMEM;
      break;
    }
    s->n_buckets = nb;
    if (pthread_mutex_init(&s->mu, &attr) != 0) {
      bk__free(&t->alloc, s->buckets);
      s->buckets = NULL;
      st = BK_ENOMEM;
      break;
    }
  }
  pthread_mutexattr_destroy(&attr);
  return st;
}

void bk_idem_destroy(bk_idem *t) {
  if (!t) return;
  for (unsigned i = 0; t->stripes && i < N_STRIPES; i++) {
    stripe *s = &t->stripes[i];
    if (!s->buckets) continue;
    for (uint64_t b = 0; b < s->n_buckets; b++)
      for (entry *e = s->buckets[b], *next; e; e = next) {
        next = e->next;
        bk__free(&t->alloc, e);
      }
    bk__free(&t->alloc, s->buckets);
    pthread_mutex_destroy(&s->mu);
  }
  bk__region_free(&t->alloc, &t->stripe_region);
  bk_fbf_destroy(t->fbf);
  bk_rbf_destroy(t->rbf);
  bk__alloc al = t->alloc;
  bk__free(&al, t);
}

static bk_status new_table(const bk_allocator *allocator, bk_idem **out) {
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_idem *t = bk__calloc(&al, 1, sizeof *t);
  BK_RETURN_IF(!t, BK_ENOMEM);
  t->alloc = al;
  *out = t;
  return BK_OK;
}

bk_status bk_idem_create(bk_idem **out, const bk_idem_config *cfg) {
  BK_RETURN_IF(!out || !cfg, BK_EINVAL);
  BK_RETURN_IF((unsigned)cfg->strategy > BK_IDEM_FBF_ADAPTIVE, BK_EINVAL);
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
  BK_TRY(new_table(cfg->allocator, &t));
  t->strategy = cfg->strategy;
  t->max_key_len = cfg->max_key_len ? cfg->max_key_len : BK_IDEM_KEY_MAX;
  t->hash_alg = cfg->hash_alg == BK_HASH_DEFAULT ? BK_HASH_XXH3 : cfg->hash_alg;
  t->seed = cfg->seed;
  bk_status s = init_stripes(t, cfg->expected_keys);
  if (s == BK_OK &&
      (cfg->strategy == BK_IDEM_FBF || cfg->strategy == BK_IDEM_FBF_ADAPTIVE)) {
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
    s = bk_fbf_create(&t->fbf, &fc);
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

bk_status bk_idem_add(bk_idem *t, const void *key, size_t len, bk_idem_op_id id,
                      int64_t delta, int64_t *value, bk_idem_outcome *outcome) {
  BK_TRY(check_key(t, key, len));
  bk_hash kh = key_hash(t, key, len);
  bk_hash oh = {0, 0};
  if (t->fbf || t->rbf) oh = op_hash(t, id);
  stripe *s = stripe_of(t, kh);
  /* Start the filter's cache misses before queueing on the lock. */
  if (t->fbf) bk__fbf_prefetch(t->fbf, oh);
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, kh.lo, key, len);
  int64_t current = e ? e->value : 0, next;
  if (__builtin_add_overflow(current, delta, &next)) {
    /* A retry is a duplicate whatever its delta would do, so a retry of
     * the update that took the counter to its limit is answered, not
     * refused; only a new update is out of range. (Rare: only here does
     * an add look before it inserts.) */
    bool seen = false;
    if (t->fbf)
      (void)bk_fbf_contains_hash(t->fbf, oh, &seen);
    else if (t->rbf)
      (void)bk_rbf_contains_hash(t->rbf, oh, &seen);
    if (seen) s->duplicates++;
    pthread_mutex_unlock(&s->mu);
    if (!seen) return BK_ERANGE;
    if (value) *value = current;
    if (outcome) *outcome = BK_IDEM_DUPLICATE;
    return BK_OK;
  }
  entry *fresh = NULL;
  if (!e) {
    fresh = new_entry(t, kh.lo, key, len);
    if (!fresh) {
      pthread_mutex_unlock(&s->mu);
      return BK_ENOMEM;
    }
  }
  bool added = true;
  bk_status fs = BK_OK;
  if (t->fbf)
    fs = bk_fbf_add_if_absent_hash(t->fbf, oh, &added);
  else if (t->rbf)
    fs = bk_rbf_add_if_absent_hash(t->rbf, oh, &added);
  if (fs != BK_OK) {
    bk__free(&t->alloc, fresh);
    pthread_mutex_unlock(&s->mu);
    return fs;
  }
  if (added) {
    if (fresh) {
      e = fresh;
      link_entry(s, e);
      maybe_grow(t, s);
    }
    __atomic_store_n(&e->value, next, __ATOMIC_RELAXED);
    s->applied++;
  } else {
    bk__free(&t->alloc, fresh);
    s->duplicates++;
  }
  pthread_mutex_unlock(&s->mu);
  if (value) *value = added ? next : current;
  if (outcome) *outcome = added ? BK_IDEM_APPLIED : BK_IDEM_DUPLICATE;
  return BK_OK;
}

bk_status bk_idem_get(const bk_idem *t, const void *key, size_t len,
                      int64_t *value) {
  BK_RETURN_IF(!value, BK_EINVAL);
  BK_TRY(check_key(t, key, len));
  bk_hash kh = key_hash(t, key, len);
  stripe *s = stripe_of(t, kh);
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, kh.lo, key, len);
  if (e) *value = e->value;
  pthread_mutex_unlock(&s->mu);
  return e ? BK_OK : BK_ENOTFOUND;
}

bk_status bk_idem_remove(bk_idem *t, const void *key, size_t len) {
  BK_TRY(check_key(t, key, len));
  bk_hash kh = key_hash(t, key, len);
  stripe *s = stripe_of(t, kh);
  pthread_mutex_lock(&s->mu);
  entry **pp = &s->buckets[kh.lo & (s->n_buckets - 1)];
  entry *e;
  while ((e = *pp) &&
         !(e->hash == kh.lo && e->len == len && memcmp(e->key, key, len) == 0))
    pp = &e->next;
  if (e) {
    *pp = e->next;
    s->n--;
    bk__free(&t->alloc, e);
  }
  pthread_mutex_unlock(&s->mu);
  return e ? BK_OK : BK_ENOTFOUND;
}

bk_status bk_idem_iterate(const bk_idem *t,
                          int (*fn)(void *ctx, const void *key, size_t len,
                                    int64_t value),
                          void *ctx) {
  BK_RETURN_IF(!t || !fn, BK_EINVAL);
  for (unsigned i = 0; i < N_STRIPES; i++) {
    stripe *s = (stripe *)&t->stripes[i];
    pthread_mutex_lock(&s->mu);
    int stop = 0;
    for (uint64_t b = 0; b < s->n_buckets && !stop; b++)
      for (entry *e = s->buckets[b]; e && !stop; e = e->next)
        stop = fn(ctx, e->key, e->len, e->value);
    pthread_mutex_unlock(&s->mu);
    if (stop) break;
  }
  return BK_OK;
}

bk_status bk_idem_advance(bk_idem *t, uint64_t now) {
  BK_RETURN_IF(!t, BK_EINVAL);
  if (t->fbf) return bk_fbf_advance(t->fbf, now);
  /* No filter clock: keep one so time going backwards is still refused. */
  uint64_t seen = __atomic_load_n(&t->now, __ATOMIC_RELAXED);
  do {
    BK_RETURN_IF(now < seen, BK_EINVAL);
  } while (!__atomic_compare_exchange_n(&t->now, &seen, now, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return BK_OK;
}

bk_status bk_idem_info_get(const bk_idem *t, bk_idem_info *out) {
  BK_RETURN_IF(!t || !out, BK_EINVAL);
  memset(out, 0, sizeof *out);
  out->strategy = t->strategy;
  size_t table = sizeof *t;
  for (unsigned i = 0; i < N_STRIPES; i++) {
    stripe *s = (stripe *)&t->stripes[i];
    pthread_mutex_lock(&s->mu);
    out->keys += s->n;
    out->applied += s->applied;
    out->duplicates += s->duplicates;
    table += (size_t)s->n_buckets * sizeof(entry *);
    for (uint64_t b = 0; b < s->n_buckets; b++)
      for (entry *e = s->buckets[b]; e; e = e->next)
        table += sizeof *e + e->len;
    pthread_mutex_unlock(&s->mu);
  }
  out->table_memory = table;
  if (t->fbf) {
    bk__fbf_summary(t->fbf, &out->n_filters, &out->refresh_period,
                    &out->window_min, &out->filter_memory);
    BK_TRY(bk_fbf_estimated_fpp(t->fbf, BK_FBF_CHECK_DEFAULT, &out->fpp));
  } else if (t->rbf) {
    bk_rbf_info ri;
    BK_TRY(bk_rbf_info_get(t->rbf, &ri));
    out->filter_memory = ri.memory;
    BK_TRY(bk_rbf_estimated_fpp(t->rbf, &out->fpp));
  }
  return BK_OK;
}

/* ---- snapshot --------------------------------------------------------------
 * Parameters after the 24-byte prefix (header length 72):
 *   24 u8 strategy   25 u8 hash_alg   26 u16 reserved   28 u32 max_key_len
 *   32 u64 seed      40 u64 keys      48 u64 applied    56 u64 duplicates
 *   64 u64 filter blob length F (0 for NONE)
 * Payload: the filter's own serialized form (F bytes: a bk_fbf, or for RBF
 * a bk_rbf), then per key: u32 length, the key, u64 value (two's
 * complement). */

static bk_status filter_size(const bk_idem *t, size_t *out) {
  *out = 0;
  if (t->fbf) return bk_fbf_serialized_size(t->fbf, out);
  if (t->rbf) return bk_rbf_serialized_size(t->rbf, out);
  return BK_OK;
}

/* Bytes of the key records of stripe i; the caller holds its lock. */
static size_t records_size(const bk_idem *t, unsigned i) {
  size_t total = 0;
  const stripe *s = &t->stripes[i];
  for (uint64_t b = 0; b < s->n_buckets; b++)
    for (const entry *e = s->buckets[b]; e; e = e->next) total += 12 + e->len;
  return total;
}

bk_status bk_idem_serialized_size(const bk_idem *t, size_t *out) {
  BK_RETURN_IF(!t || !out, BK_EINVAL);
  size_t total;
  BK_TRY(filter_size(t, &total));
  total += IDEM_HEADER_LEN + BK__TRAILER_SIZE;
  for (unsigned i = 0; i < N_STRIPES; i++) {
    pthread_mutex_t *mu = (pthread_mutex_t *)&t->stripes[i].mu;
    pthread_mutex_lock(mu);
    total += records_size(t, i);
    pthread_mutex_unlock(mu);
  }
  *out = total;
  return BK_OK;
}

static void lock_all(const bk_idem *t) {
  for (unsigned i = 0; i < N_STRIPES; i++)
    pthread_mutex_lock((pthread_mutex_t *)&t->stripes[i].mu);
}

static void unlock_all(const bk_idem *t) {
  for (unsigned i = N_STRIPES; i-- > 0;)
    pthread_mutex_unlock((pthread_mutex_t *)&t->stripes[i].mu);
}

static bk_status serialize_locked(const bk_idem *t, unsigned char *p,
                                  size_t cap, size_t *written);

/* The snapshot holds every stripe's lock (taken in order, as no add ever
 * holds two), so the filter and the values it writes agree: an add is in
 * both or in neither, and a replay of the log after restore is exact. */
bk_status bk_idem_serialize(const bk_idem *t, void *buf, size_t cap,
                            size_t *written) {
  BK_RETURN_IF(!t || !buf || !written, BK_EINVAL);
  lock_all(t);
  bk_status s = serialize_locked(t, buf, cap, written);
  unlock_all(t);
  return s;
}

static bk_status serialize_locked(const bk_idem *t, unsigned char *p,
                                  size_t cap, size_t *written) {
  size_t fsize, fw = 0;
  BK_TRY(filter_size(t, &fsize));
  size_t header = IDEM_HEADER_LEN;
  /* The whole size first (every stripe is locked, so it cannot change):
   * a refused call writes nothing. */
  size_t need = header + fsize + BK__TRAILER_SIZE;
  for (unsigned i = 0; i < N_STRIPES; i++) need += records_size(t, i);
  BK_RETURN_IF(cap < need, BK_EINVAL);
  if (t->fbf) BK_TRY(bk_fbf_serialize(t->fbf, p + header, fsize, &fw));
  if (t->rbf) BK_TRY(bk_rbf_serialize(t->rbf, p + header, fsize, &fw));
  size_t pos = header + fw;
  uint64_t keys = 0, applied = 0, duplicates = 0;
  for (unsigned i = 0; i < N_STRIPES; i++) {
    const stripe *s = &t->stripes[i];
    applied += s->applied;
    duplicates += s->duplicates;
    for (uint64_t b = 0; b < s->n_buckets; b++)
      for (entry *e = s->buckets[b]; e; e = e->next) {
        bk__store_le32(p + pos, e->len);
        memcpy(p + pos + 4, e->key, e->len);
        bk__store_le64(p + pos + 4 + e->len, (uint64_t)e->value);
        pos += 12 + e->len;
        keys++;
      }
  }
  bk__format_write_prefix(p, IDEM_VERSION, BK__TYPE_IDEM, IDEM_HEADER_LEN,
                          pos - IDEM_HEADER_LEN);
  p[24] = (unsigned char)t->strategy;
  p[25] = (unsigned char)t->hash_alg;
  bk__store_le16(p + 26, 0);
  bk__store_le32(p + 28, (uint32_t)t->max_key_len);
  bk__store_le64(p + 32, t->seed);
  bk__store_le64(p + 40, keys);
  bk__store_le64(p + 48, applied);
  bk__store_le64(p + 56, duplicates);
  bk__store_le64(p + 64, fw);
  bk__format_write_trailer(p, pos);
  *written = pos + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_idem_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_idem **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_IDEM, IDEM_VERSION, IDEM_HEADER_LEN,
                         &v));
  const unsigned char *p = buf;
  unsigned strategy = p[24], alg = p[25];
  uint32_t max_key_len = bk__load_le32(p + 28);
  uint64_t seed = bk__load_le64(p + 32), keys = bk__load_le64(p + 40);
  uint64_t fsize = bk__load_le64(p + 64);
  BK_RETURN_IF(strategy > BK_IDEM_FBF_ADAPTIVE || bk__load_le16(p + 26),
               BK_ECORRUPT);
  BK_RETURN_IF(alg != BK_HASH_XXH3 && alg != BK_HASH_MURMUR3, BK_ECORRUPT);
  BK_RETURN_IF(!bk__hash_alg_valid((bk_hash_alg)alg, seed), BK_ECORRUPT);
  BK_RETURN_IF(max_key_len == 0 || max_key_len > BK_IDEM_KEY_MAX, BK_ECORRUPT);
  BK_RETURN_IF(fsize > v.payload_len, BK_ECORRUPT);
  BK_RETURN_IF((strategy == BK_IDEM_NONE) != (fsize == 0), BK_ECORRUPT);
  /* Each key takes at least 13 bytes: bounds the count before any work. */
  BK_RETURN_IF(keys > (v.payload_len - fsize) / 13, BK_ECORRUPT);

  bk_idem *t;
  BK_TRY(new_table(allocator, &t));
  t->strategy = (bk_idem_strategy)strategy;
  t->max_key_len = max_key_len;
  t->hash_alg = (bk_hash_alg)alg;
  t->seed = seed;
  bk_status s = init_stripes(t, keys);
  if (s == BK_OK && fsize) {
    if (strategy == BK_IDEM_RBF)
      s = bk_rbf_deserialize(v.payload, (size_t)fsize, allocator, &t->rbf);
    else
      s = bk_fbf_deserialize(v.payload, (size_t)fsize, allocator, &t->fbf);
    if (s == BK_EVERSION || s == BK_EINVAL) s = BK_ECORRUPT;
    if (s == BK_OK && t->fbf) {
      /* The strategy says whether the FBF adapts; the two must agree. */
      if (t->fbf->adaptive != (strategy == BK_IDEM_FBF_ADAPTIVE))
        s = BK_ECORRUPT;
    }
  }
  size_t pos = (size_t)fsize, end = (size_t)v.payload_len;
  const unsigned char *q = v.payload;
  for (uint64_t i = 0; s == BK_OK && i < keys; i++) {
    if (end - pos < 4) {
      s = BK_ECORRUPT;
      break;
    }
    uint32_t klen = bk__load_le32(q + pos);
    if (klen == 0 || klen > max_key_len || end - pos - 4 < (size_t)klen + 8) {
      s = BK_ECORRUPT;
      break;
    }
    const unsigned char *key = q + pos + 4;
    int64_t value = (int64_t)bk__load_le64(q + pos + 4 + klen);
    bk_hash kh = key_hash(t, key, klen);
    stripe *st = stripe_of(t, kh);
    if (find(st, kh.lo, key, klen)) {
      s = BK_ECORRUPT; /* a key twice */
      break;
    }
    entry *e = new_entry(t, kh.lo, key, klen);
    if (!e) {
      s = BK_ENOMEM;
      break;
    }
    e->value = value;
    link_entry(st, e);
    maybe_grow(t, st);
    pos += 12 + (size_t)klen;
  }
  if (s == BK_OK && pos != end) s = BK_ECORRUPT;
  if (s != BK_OK) {
    bk_idem_destroy(t);
    return s;
  }
  /* The counts of applied and duplicate updates travel in the snapshot. */
  t->stripes[0].applied = bk__load_le64(p + 48);
  t->stripes[0].duplicates = bk__load_le64(p + 56);
  *out = t;
  return BK_OK;
}
