/* SPDX-License-Identifier: MIT */
/*
 * The FBF data type of the Redis module: one Redis key holds a bk_fbf, a
 * Bloom filter whose items are forgotten after a window
 * (include/bloomkit/fbf.h), or, for a key created on first use or with
 * GROW, a chain of them that grows with the load (fbf_key below). Commands:
 * FBF.RESERVE, FBF.ADD, FBF.ADDAT, FBF.EXISTS, FBF.MEXISTS, FBF.INFO, FBF.LOAD
 * (docs/redis.md).
 *
 * Shape: N = 5 past filters and a refresh period t = ceil(window / 6), so
 * (N + 1) t covers the window: an item is remembered at least `window` ms
 * and at most (N + 2) t = 7 ceil(window / 6) ms after it was added (the
 * FBF's min_window keeps the lower bound through adaptive resizing too).
 * `capacity` is items per window, so a period brings capacity t / window
 * and each filter, holding two periods, is sized for a third of the
 * window's items. Against N = 2 (t = window / 3, four filters each sized
 * for two thirds of the window) that is 7/6 instead of 8/6 of the bits per
 * remembered item at the same per-filter rate: 12.5 % fewer at small
 * rates where the oldest filter alone makes the false positives, less at
 * large ones where the pairs of neighbours add up (measured at the same
 * whole-filter FPP: 12.2 % at 1e-4, 8.7 % at 0.01, 0.2 % at 0.1); and the
 * window is overshot by at most a sixth instead of a third.
 *
 * Time as for IDEM (idem.c): a write reads the master's clock, advances
 * the filter and replicates itself as FBF.ADDAT with that time. Reads do
 * not advance the filter (a replica must never move its filter by its own
 * clock), but answer as of the server's clock (bk_fbf_contains_at: what
 * the filter would answer once advanced there), on master and replica
 * alike, as Redis answers a read of a key whose TTL has passed as missing
 * before the master's DEL arrives: an item is never reported past
 * window + t because no write came since. A key on a clock of its own
 * (WALL_CLOCK_FROM) answers as of its latest write.
 *
 * What every type shares (RDB, AOF, FBF.RESERVE, FBF.LOAD, first use) is
 * in type.c, driven by fbf_desc at the end of this file.
 */
#include "redis/rm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "bloomkit/params.h"

/* A key's clock at or past this (2^40 ms: November 2004 as wall time) is
 * the wall clock, which reads go by; below it, a clock of the caller's own
 * (FBF.ADDAT / AT times counted from 0, as a simulation or a replay
 * drives a key), which the server's clock has nothing to say about. */
#define WALL_CLOCK_FROM ((uint64_t)1 << 40)

/* (N + 1) refresh periods make one window. */
#define FBF_PERIODS 6u

/* The per-filter rate that makes FPP the whole filter's steady-state rate
 * (bk_fbf_filter_fpp_for: FBF.EXISTS is the optimized check): FPP is what
 * FBF.EXISTS answers, not what one filter does (sized at FPP the whole filter
 * ran 33 % over at 0.01, 16 % at 0.001). Measured against the model
 * (bench/redis, 10^6 absent ids after two windows): within the counting noise
 * at 0.01, 0.001 and 0.0001. When no filter of that rate can be made (m over
 * 2^40 bits), FPP itself, and bk_fbf_create says why. */
static double filter_rate_for(uint64_t c, double fpp) {
  double q;
  if (bk_fbf_filter_fpp_for(c, FBF_PERIODS - 1, fpp, &q) != BK_OK) return fpp;
  return q;
}

/* ADAPTIVE grows when the estimate reaches 0.9 of its target, and the
 * tick that looks comes just before a refresh, the worst moment: sized to
 * reach FPP exactly there, a filter at its nominal load would grow
 * (tests/redis: 11 filters instead of 7 after two windows at capacity; in
 * a longer simulation 28, the window's upper bound 196 s for 60 s).
 * So ADAPTIVE filters are sized for ADAPTIVE_MARGIN FPP and grow only
 * above about 1.1x the nominal load. */
#define ADAPTIVE_MARGIN 0.8

static bk_rm_type fbf_desc; /* at the end, after the commands */

/* FBF.RESERVE key capacity window_ms [FPP p] [ADAPTIVE] [GROW]
 * [AT now_ms]: the parameters in the order RESERVE replicates them (type.c
 * parses them). */
enum { P_CAPACITY, P_WINDOW, P_FPP, P_ADAPTIVE, P_GROW, N_PARAMS };

static const bk_rm_param_spec fbf_params[N_PARAMS] = {
    [P_CAPACITY] = {.name = "capacity",
                    .what = "must be an integer from 1 to 2^32 (items per "
                            "window)",
                    .kind = BK_RM_NUMBER,
                    .lo = 1,
                    .hi = BK_RM_MAX_CAPACITY},
    [P_WINDOW] = {.name = "window_ms",
                  .what = "must be an integer from 1 to 2^40 (ms)",
                  .kind = BK_RM_NUMBER,
                  .lo = 1,
                  .hi = BK_RM_MAX_MS},
    [P_FPP] = BK_RM_PARAM_FPP,
    [P_ADAPTIVE] = {.keyword = "ADAPTIVE",
                    .name = "ADAPTIVE",
                    .kind = BK_RM_FLAG},
    [P_GROW] = {.keyword = "GROW", .name = "GROW", .kind = BK_RM_FLAG},
};

/* RESERVE's values before its arguments: the module's defaults. */
static void fbf_defaults(bk_rm_param *p) {
  p[P_CAPACITY].n = bk_rm_config.fbf_capacity;
  p[P_WINDOW].n = bk_rm_config.fbf_window;
  p[P_FPP].fpp = bk_rm_config.fpp;
  p[P_ADAPTIVE].n = 0;
  p[P_GROW].n = 0;
}

/* On first use (FBF.ADD of an empty key): the defaults, growing from
 * fbf_capacity (docs/redis.md "Keys created on first use"). */
static void fbf_first_use(bk_rm_param *p) {
  fbf_defaults(p);
  p[P_GROW].n = 1;
}

/* One bk_fbf for `capacity` items per window, sized so that the whole
 * filter's steady rate is `fpp`. */
static bk_status stage_create(uint64_t capacity, uint64_t window, double fpp,
                              bool adaptive, uint64_t now, bk_fbf **out) {
  uint64_t period = window / FBF_PERIODS + (window % FBF_PERIODS != 0);
  /* Items per period: capacity x t / window, rounded up (t is rounded up,
   * so for a window that is not a multiple of 6 ms a period holds a bit
   * more than a sixth of it). In 128 bits: 2^32 x 2^40 overflows. */
  __extension__ typedef unsigned __int128 u128;
  u128 scaled = (u128)capacity * period;
  uint64_t per_period = (uint64_t)(scaled / window) + (scaled % window != 0);
  double sizing = adaptive ? ADAPTIVE_MARGIN * fpp : fpp;
  bk_fbf_config cfg = {
      .capacity = per_period,
      .fpp = filter_rate_for(per_period, sizing),
      .target_fpp = fpp, /* what ADAPTIVE holds the estimate to */
      .n_past = FBF_PERIODS - 1,
      .refresh_period = period,
      .min_window = window,
      .start_time = now,
      .adaptive = adaptive,
      .adapt_interval = period,
      .period_step = period / 10 ? period / 10 : 1,
      .allocator = &bk_rm_allocator,
  };
  return bk_fbf_create(out, &cfg);
}

/*
 * A key's value: one bk_fbf (RESERVE without GROW, exactly as before), or
 * for GROW a chain of them of growing capacity, oldest first. Only the
 * newest takes adds; when its own estimate of its false positive rate
 * (bk_fbf_estimated_fpp, the shared-aware Eq. 4.3 Algorithm 3 uses) reaches
 * the rate it was given, a new one of GROW_FACTOR times its capacity takes
 * over and the old one is retired: it keeps answering until every id it
 * holds is older than the window (retired_at + window), then is dropped.
 * An id is so never forgotten inside its window.
 *
 * The FBF's adaptive mode cannot do this alone: it grows the number of
 * filters (to at most 64) and shortens the period, never m, so a filter
 * sized for 10^3 ids per window holds its rate up to about 10x that
 * (window / 63 per filter instead of window / 6); 10^6 needs m itself
 * 1000x larger.
 *
 * FPP budget: a check answers 1 when any live stage does, so the key's rate
 * is at most the sum of the live stages' rates. Each new stage is given
 * half of what the live ones leave of FPP (the first FPP / 2), so that sum
 * stays below FPP however fast the load grows; a stage sized for
 * GROW_MARGIN of its rate reaches it at about 1.2x its capacity.
 */
#define FBF_MAX_STAGES 16u
#define GROW_FACTOR 4u
#define GROW_MARGIN 0.8
/* Adds to the newest stage between two looks at its estimate: a 256th of
 * its capacity, so it overshoots its rate by at most that much load. */
#define GROW_CHECK_SHARE 256u

typedef struct fbf_stage {
  bk_fbf *filter;
  uint64_t capacity;   /* items per window it was sized for */
  double rate;         /* its share of the key's FPP (a 2^-64 multiple) */
  uint64_t retired_at; /* when it stopped taking adds; newest: 0 */
} fbf_stage;

typedef struct fbf_key {
  bool grows;              /* GROW: a chain; else one stage, as before */
  bool adaptive;           /* each stage's ADAPTIVE */
  uint64_t window;         /* ms */
  double fpp;              /* the key's target (a 2^-64 multiple) */
  uint64_t adds_unchecked; /* adds to the newest since the last look */
  unsigned n_stages;       /* >= 1; the last takes adds */
  fbf_stage stage[FBF_MAX_STAGES];
} fbf_key;

/* Rates go on the wire as integers: p x 2^64, p in (0, 1). The value kept
 * in memory is the one a load gives back, so a replica loading the key
 * decides to grow exactly when the master does. */
static uint64_t rate_to_wire(double p) {
  double x = ldexp(p, 64);
  return x >= 18446744073709551615.0 ? UINT64_MAX : x < 1 ? 1 : (uint64_t)x;
}
static double rate_of_wire(uint64_t w) {
  return ldexp((double)w, -64);
}
static double rate_rounded(double p) {
  return rate_of_wire(rate_to_wire(p));
}

static fbf_stage *newest(const fbf_key *key) {
  return (fbf_stage *)&key->stage[key->n_stages - 1];
}

static void key_destroy(fbf_key *key) {
  if (!key) return;
  for (unsigned i = 0; i < key->n_stages; i++)
    bk_fbf_destroy(key->stage[i].filter);
  RedisModule_Free(key);
}

static fbf_key *key_alloc(void) {
  fbf_key *key = RedisModule_TryAlloc(sizeof *key);
  if (key) memset(key, 0, sizeof *key);
  return key;
}

static bk_status fbf_create(const bk_rm_param *p, uint64_t now, void **out) {
  bool grows = p[P_GROW].n, adaptive = p[P_ADAPTIVE].n;
  /* A growing key's stages are each sized by the load they see; Algorithm
   * 3 resizing one of them would move its rate from under the chain. */
  if (grows && adaptive) return BK_EINVAL;
  fbf_key *key = key_alloc();
  if (!key) return BK_ENOMEM;
  key->grows = grows;
  key->adaptive = adaptive;
  key->window = p[P_WINDOW].n;
  key->fpp = grows ? rate_rounded(p[P_FPP].fpp) : p[P_FPP].fpp;
  fbf_stage *s = &key->stage[0];
  s->capacity = p[P_CAPACITY].n;
  s->rate = grows ? rate_rounded(key->fpp / 2) : key->fpp;
  bk_status st = stage_create(s->capacity, key->window,
                              grows ? GROW_MARGIN * s->rate : s->rate, adaptive,
                              now, &s->filter);
  if (st != BK_OK) {
    RedisModule_Free(key);
    return st;
  }
  key->n_stages = 1;
  *out = key;
  return BK_OK;
}

/* A new newest stage when the newest has reached its rate. A stage that
 * cannot be made (the chain's or capacity's end) leaves the newest taking
 * adds past its rate, as a RESERVE'd filter does past capacity. False when
 * a stage was due but memory refused it: that depends on the node (its
 * max_alloc_mb, its free memory), so the caller must not let a replica
 * decide it again (add replicates the state instead). */
static bool maybe_grow(fbf_key *key, uint64_t now) {
  fbf_stage *last = newest(key);
  uint64_t every = last->capacity / GROW_CHECK_SHARE;
  if (++key->adds_unchecked < (every ? every : 1)) return true;
  key->adds_unchecked = 0;
  double est = 0, live = 0;
  if (bk_fbf_estimated_fpp(last->filter, BK_FBF_CHECK_DEFAULT, &est) != BK_OK ||
      est < last->rate)
    return true;
  if (key->n_stages == FBF_MAX_STAGES ||
      last->capacity > BK_RM_MAX_CAPACITY / GROW_FACTOR)
    return true;
  for (unsigned i = 0; i < key->n_stages; i++) live += key->stage[i].rate;
  fbf_stage next = {.capacity = last->capacity * GROW_FACTOR,
                    .rate = rate_rounded((key->fpp - live) / 2)};
  if (!(next.rate > 0)) return true;
  if (stage_create(next.capacity, key->window, GROW_MARGIN * next.rate, false,
                   now, &next.filter) != BK_OK)
    return false;
  last->retired_at = now;
  key->stage[key->n_stages++] = next;
  return true;
}

/* As of `now` (not before the key's clock), changing nothing: each stage
 * as it would be advanced there, and the retired stages fbf_advance would
 * drop by then left out. */
static bool key_contains_at(const fbf_key *key, const char *item, size_t len,
                            uint64_t now) {
  for (unsigned i = key->n_stages; i-- > 0;) {
    if (i + 1 < key->n_stages && now - key->stage[i].retired_at >= key->window)
      break; /* this stage and the older ones are gone by now */
    bool found = false;
    if (bk_fbf_contains_at(key->stage[i].filter, item, len, now, &found) ==
            BK_OK &&
        found)
      return true;
  }
  return false;
}

/* 1 when item was absent from every stage and is now in the newest;
 * *grow_failed set when a stage was due and memory refused it. */
static bool key_add(fbf_key *key, const char *item, size_t len, uint64_t now,
                    bool *grow_failed) {
  for (unsigned i = 0; i + 1 < key->n_stages; i++) {
    bool found = false;
    if (bk_fbf_contains(key->stage[i].filter, item, len, &found) == BK_OK &&
        found)
      return false;
  }
  bool added = false;
  if (bk_fbf_add_if_absent(newest(key)->filter, item, len, &added) != BK_OK)
    return false;
  if (added && key->grows && !maybe_grow(key, now)) *grow_failed = true;
  return added;
}

static bk_status fbf_serialized_size(const void *obj, size_t *size);
static bk_status fbf_serialize(const void *obj, void *buf, size_t cap,
                               size_t *written);

/* Replicate the key as FBF.LOAD key now blob, so that replicas take the
 * master's state rather than decide a growth again: true when sent. */
static bool replicate_state(RedisModuleCtx *ctx, RedisModuleString *name,
                            const bk_rm_timed *v) {
  size_t len, written;
  if (fbf_serialized_size(v->obj, &len) != BK_OK) return false;
  char *buf = RedisModule_Alloc(len);
  bool sent =
      fbf_serialize(v->obj, buf, len, &written) == BK_OK &&
      RedisModule_Replicate(ctx, "FBF.LOAD", "slb", name, (long long)v->now,
                            buf, written) == REDISMODULE_OK;
  RedisModule_Free(buf);
  return sent;
}

/* FBF.ADD key item [item ...]
 * FBF.ADDAT key now_ms item [item ...]
 * Reply: one integer per item, 1 when it was absent and is now added, 0
 * when it was (or seemed, with the filter's fpp) already present. */
static int add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
               bool explicit_time) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  int first = explicit_time ? 3 : 2;
  if (argc < first + 1) return RedisModule_WrongArity(ctx);
  uint64_t at = 0;
  if (explicit_time && !bk_rm_parse_u64(argv[2], 0, UINT64_MAX >> 1, &at))
    return bk_rm_arg_error(ctx, "now_ms", "must be a time in ms >= 0");
  bk_rm_timed *v =
      bk_rm_open_write(ctx, &fbf_desc, argv[1], explicit_time ? &at : NULL);
  if (!v) return REDISMODULE_OK;
  /* A replica (or an AOF replay) grows where the master grew: its own
   * max_alloc_mb must not stop it (the master's stopped the master, which
   * then replicates its state, below). */
  bool from_master =
      RedisModule_GetContextFlags(ctx) &
      (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING);
  bool grow_failed = false;
  bk_rm_from_master = from_master;
  RedisModule_ReplyWithArray(ctx, argc - first);
  for (int i = first; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    RedisModule_ReplyWithLongLong(
        ctx, key_add(v->obj, item, len, v->now, &grow_failed));
  }
  bk_rm_from_master = false;
  if (grow_failed && !from_master && replicate_state(ctx, argv[1], v))
    return REDISMODULE_OK;
  RedisModule_Replicate(ctx, "FBF.ADDAT", "slv", argv[1], (long long)v->now,
                        argv + first, (size_t)(argc - first));
  return REDISMODULE_OK;
}

static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return add(ctx, argv, argc, false);
}

static int cmd_addat(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return add(ctx, argv, argc, true);
}

static int exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                  bool multi) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (multi ? argc < 3 : argc != 3) return RedisModule_WrongArity(ctx);
  bk_rm_timed *v;
  if (!bk_rm_open(ctx, &fbf_desc, argv[1], REDISMODULE_READ, NULL, (void **)&v))
    return REDISMODULE_OK;
  if (multi) RedisModule_ReplyWithArray(ctx, argc - 2);
  /* Reads as of this server's clock (a replica's own), for a key on the
   * wall clock; a key on a clock of its own answers as of its last write. */
  uint64_t now = v ? v->now : 0;
  if (v && v->now >= WALL_CLOCK_FROM) now = bk_rm_clock(v->now);
  for (int i = 2; i < argc; i++) {
    bool found = false;
    if (v) {
      size_t len;
      const char *item = RedisModule_StringPtrLen(argv[i], &len);
      found = key_contains_at(v->obj, item, len, now);
    }
    RedisModule_ReplyWithLongLong(ctx, found);
  }
  return REDISMODULE_OK;
}

/* FBF.EXISTS key item: 1 or 0. */
static int cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return exists(ctx, argv, argc, false);
}

/* FBF.MEXISTS key item [item ...]: one 1 or 0 per item. */
static int cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv,
                       int argc) {
  return exists(ctx, argv, argc, true);
}

/* FBF.INFO key: name/value pairs. The shape is the newest stage's; the
 * counts, the estimate (a sum over the stages: a bound, as the stages are
 * checked one after the other) and the memory are the key's. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  bk_rm_timed *v = bk_rm_open_info(ctx, &fbf_desc, argv, argc);
  if (!v) return REDISMODULE_OK;
  const fbf_key *key = v->obj;
  bk_fbf_info info;
  double fpp = 0;
  uint64_t items = 0, memory = 0;
  bk_status s = BK_OK;
  for (unsigned j = 0; j < key->n_stages && s == BK_OK; j++) {
    double stage_fpp = 0;
    s = bk_fbf_info_get(key->stage[j].filter, &info);
    if (s == BK_OK)
      s = bk_fbf_estimated_fpp(key->stage[j].filter, BK_FBF_CHECK_DEFAULT,
                               &stage_fpp);
    fpp += stage_fpp;
    memory += info.memory;
    for (unsigned i = 0; i < info.n_filters && i < BK_FBF_MAX_FILTERS; i++)
      items += info.inserted[i];
  }
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot describe the filter");
  char fpp_text[40];
  snprintf(fpp_text, sizeof fpp_text, "%.6g", fpp);
  const bk_rm_field fields[] = {
      {"window_ms", NULL, (long long)info.min_window},
      {"window_max_ms", NULL, (long long)info.window_max},
      {"refresh_period_ms", NULL, (long long)info.refresh_period},
      {"filters", NULL, info.n_filters},
      {"adaptive", NULL, info.adaptive},
      {"bits_per_filter", NULL, (long long)info.m_bits},
      {"hashes", NULL, info.k},
      {"inserts_per_filter_sum", NULL, (long long)items},
      {"fpp_estimate", fpp_text, 0},
      {"memory", NULL, (long long)memory},
      {"now_ms", NULL, (long long)v->now},
      {"grows", NULL, key->grows},
      {"stages", NULL, key->n_stages},
      {"capacity", NULL, (long long)newest(key)->capacity},
  };
  return bk_rm_reply_fields(ctx, fields, sizeof fields / sizeof fields[0]);
}

/* ---- the structure, for type.c ------------------------------------------- */

/* Advance every stage, then drop the retired stages whose ids are all
 * older than the window (retired in order, so a prefix). */
static bk_status fbf_advance(void *obj, uint64_t now) {
  fbf_key *key = obj;
  for (unsigned i = 0; i < key->n_stages; i++) {
    bk_status s = bk_fbf_advance(key->stage[i].filter, now);
    if (s != BK_OK) return s;
  }
  unsigned gone = 0;
  while (gone + 1 < key->n_stages &&
         now - key->stage[gone].retired_at >= key->window)
    bk_fbf_destroy(key->stage[gone++].filter);
  if (gone) {
    memmove(key->stage, key->stage + gone,
            (key->n_stages - gone) * sizeof key->stage[0]);
    key->n_stages -= gone;
  }
  return BK_OK;
}

/*
 * The serialized form. A key without GROW is its bk_fbf's blob, byte for
 * byte what the module wrote before chains existed (RDB encoding 1). A
 * growing key (RDB encoding 2 on), little-endian u64 fields:
 *
 *   "BKFBFKEY" | version 1 | flags (bit 0 adaptive) | window_ms
 *   | fpp x 2^64 | adds_unchecked | n_stages
 *   | per stage: capacity | rate x 2^64 | retired_at | blob length | blob
 *   | XXH3-64 of every byte before it
 *
 * Each blob carries its own checksum too; the trailer covers the fields
 * around them, which are also checked for range on load.
 */
#define TRY(call)                   \
  do {                              \
    bk_status try_ = (call);        \
    if (try_ != BK_OK) return try_; \
  } while (0)

static const char key_magic[8] = {'B', 'K', 'F', 'B', 'F', 'K', 'E', 'Y'};
#define KEY_VERSION 1u
#define KEY_HEADER_FIELDS 6u
#define STAGE_FIELDS 4u
#define TRAILER 8u

static uint64_t checksum(const char *buf, size_t len) {
  bk_hash h = {0, 0};
  (void)bk_hash_bytes(BK_HASH_XXH3, 0, buf, len, &h); /* cannot fail */
  return h.lo;
}

static void put_u64(char **p, uint64_t v) {
  for (int i = 0; i < 8; i++) (*p)[i] = (char)(v >> (8 * i));
  *p += 8;
}

static bool get_u64(const char **p, const char *end, uint64_t *v) {
  if (end - *p < 8) return false;
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--) x = x << 8 | (unsigned char)(*p)[i];
  *v = x;
  *p += 8;
  return true;
}

static bk_status fbf_serialized_size(const void *obj, size_t *size) {
  const fbf_key *key = obj;
  if (!key->grows) return bk_fbf_serialized_size(key->stage[0].filter, size);
  size_t total = sizeof key_magic + 8 * KEY_HEADER_FIELDS + TRAILER;
  for (unsigned i = 0; i < key->n_stages; i++) {
    size_t one;
    TRY(bk_fbf_serialized_size(key->stage[i].filter, &one));
    total += 8 * STAGE_FIELDS + one;
  }
  *size = total;
  return BK_OK;
}

static bk_status fbf_serialize(const void *obj, void *buf, size_t cap,
                               size_t *written) {
  const fbf_key *key = obj;
  if (!key->grows)
    return bk_fbf_serialize(key->stage[0].filter, buf, cap, written);
  size_t need;
  TRY(fbf_serialized_size(obj, &need));
  if (cap < need) return BK_EINVAL;
  char *p = buf;
  memcpy(p, key_magic, sizeof key_magic);
  p += sizeof key_magic;
  put_u64(&p, KEY_VERSION);
  put_u64(&p, key->adaptive);
  put_u64(&p, key->window);
  put_u64(&p, rate_to_wire(key->fpp));
  put_u64(&p, key->adds_unchecked);
  put_u64(&p, key->n_stages);
  for (unsigned i = 0; i < key->n_stages; i++) {
    const fbf_stage *s = &key->stage[i];
    size_t len, one;
    TRY(bk_fbf_serialized_size(s->filter, &len));
    put_u64(&p, s->capacity);
    put_u64(&p, rate_to_wire(s->rate));
    put_u64(&p, s->retired_at);
    put_u64(&p, len);
    TRY(bk_fbf_serialize(s->filter, p, len, &one));
    p += one;
  }
  put_u64(&p, checksum(buf, (size_t)(p - (char *)buf)));
  *written = (size_t)(p - (char *)buf);
  return BK_OK;
}

/* Is stage i of a chain being loaded one the module could have made, and
 * (*now) at the same time as the stages before it? Its filter has the
 * shape stage_create gives every stage of the key (window, period, N, not
 * adaptive), its capacity is GROW_FACTOR times its elder's, its rate is
 * above 0 and at most half of what the stages before it leave of the
 * key's FPP (maybe_grow: the live sum then also held stages dropped
 * since, so the rate can only be smaller; the 2^-40 slack absorbs the
 * rounding of that sum in doubles), and it was retired (newest: 0) no
 * earlier than its elder and no later than the stages' common clock. */
static bool stage_ok(const fbf_key *key, unsigned i, bool newest_stage,
                     double live, uint64_t *now) {
  const fbf_stage *s = &key->stage[i];
  bk_fbf_info info;
  uint64_t period =
      key->window / FBF_PERIODS + (key->window % FBF_PERIODS != 0);
  if (bk_fbf_info_get(s->filter, &info) != BK_OK || info.adaptive ||
      info.n_past != FBF_PERIODS - 1 || info.min_window != key->window ||
      info.refresh_period != period)
    return false;
  if (i == 0)
    *now = info.now;
  else if (info.now != *now)
    return false; /* every stage is advanced to the key's time together */
  if (i > 0 && s->capacity != key->stage[i - 1].capacity * GROW_FACTOR)
    return false;
  if (!(s->rate > 0) || s->rate > (key->fpp - live) / 2 * (1 + 0x1p-40))
    return false;
  if (newest_stage) return s->retired_at == 0;
  return s->retired_at <= *now &&
         (i == 0 || s->retired_at >= key->stage[i - 1].retired_at);
}

static void *chain_deserialize(const char *buf, size_t len, const char **why) {
  const char *p = buf + sizeof key_magic, *end = buf + len - TRAILER;
  uint64_t version, flags, window, fpp, unchecked, n, sum, now = 0;
  double live = 0;
  *why = "not a growing FBF key";
  if (len < sizeof key_magic + TRAILER) return NULL;
  const char *trailer = end;
  if (!get_u64(&trailer, buf + len, &sum) ||
      sum != checksum(buf, len - TRAILER)) {
    *why = "checksum mismatch";
    return NULL;
  }
  /* A growing key is never ADAPTIVE (fbf_create refuses both): flags 0. */
  if (!get_u64(&p, end, &version) || version != KEY_VERSION ||
      !get_u64(&p, end, &flags) || flags != 0 || !get_u64(&p, end, &window) ||
      window < 1 || window > BK_RM_MAX_MS || !get_u64(&p, end, &fpp) ||
      fpp == 0 || !get_u64(&p, end, &unchecked) || !get_u64(&p, end, &n) ||
      n < 1 || n > FBF_MAX_STAGES)
    return NULL;
  fbf_key *key = key_alloc();
  if (!key) {
    *why = "out of memory";
    return NULL;
  }
  key->grows = true;
  key->adaptive = false;
  key->window = window;
  key->fpp = rate_of_wire(fpp);
  key->adds_unchecked = unchecked;
  for (uint64_t i = 0; i < n; i++) {
    fbf_stage *s = &key->stage[i];
    uint64_t rate, blob_len;
    bk_status st;
    if (!get_u64(&p, end, &s->capacity) || s->capacity < 1 ||
        s->capacity > BK_RM_MAX_CAPACITY || !get_u64(&p, end, &rate) ||
        !get_u64(&p, end, &s->retired_at) || !get_u64(&p, end, &blob_len) ||
        blob_len > (uint64_t)(end - p)) {
      key_destroy(key);
      return NULL;
    }
    s->rate = rate_of_wire(rate);
    st = bk_fbf_deserialize(p, (size_t)blob_len, &bk_rm_allocator, &s->filter);
    if (st != BK_OK) {
      *why = bk_strerror(st);
      key_destroy(key);
      return NULL;
    }
    key->n_stages++;
    p += blob_len;
    if (!stage_ok(key, (unsigned)i, i + 1 == n, live, &now)) {
      *why = "a chain of stages no sequence of commands makes";
      key_destroy(key);
      return NULL;
    }
    live += s->rate;
  }
  /* maybe_grow looks every 256th of the newest's capacity (at least every
   * add) and starts counting again from 0. */
  uint64_t every = newest(key)->capacity / GROW_CHECK_SHARE;
  if (p != end || unchecked >= (every ? every : 1)) {
    key_destroy(key);
    return NULL;
  }
  return key;
}

static void *fbf_deserialize(const char *buf, size_t len, const char **why) {
  if (len >= sizeof key_magic && memcmp(buf, key_magic, sizeof key_magic) == 0)
    return chain_deserialize(buf, len, why);
  bk_fbf *filter;
  bk_status s = bk_fbf_deserialize(buf, len, &bk_rm_allocator, &filter);
  if (s != BK_OK) {
    *why = bk_strerror(s);
    return NULL;
  }
  fbf_key *key = key_alloc();
  if (!key) {
    bk_fbf_destroy(filter);
    *why = "out of memory";
    return NULL;
  }
  key->stage[0].filter = filter; /* one stage, never dropped: no window */
  key->n_stages = 1;
  return key;
}

static void fbf_destroy(void *obj) {
  key_destroy(obj);
}

static const bk_rm_command fbf_cmds[] = {
    {"FBF.ADD", cmd_add, "write deny-oom"},
    {"FBF.ADDAT", cmd_addat, "write deny-oom"},
    {"FBF.EXISTS", cmd_exists, "readonly fast"},
    {"FBF.MEXISTS", cmd_mexists, "readonly fast"},
    {"FBF.INFO", cmd_info, "readonly"},
};

static bk_rm_type fbf_desc = {
    .names = {.type = "bk-fbf-ft",
              .log = "FBF",
              .aof_log = "an FBF",
              .noun = "filter",
              .reserve = "FBF.RESERVE",
              .load = "FBF.LOAD"},
    .structure = {.advance = fbf_advance,
                  .serialized_size = fbf_serialized_size,
                  .serialize = fbf_serialize,
                  .deserialize = fbf_deserialize,
                  .memory = NULL, /* the serialized size: the filter's lanes */
                  .destroy = fbf_destroy},
    .reserve = {.params = fbf_params,
                .n_params = N_PARAMS,
                .pairs = false,
                .options_hint = "expected FPP p, ADAPTIVE, GROW or AT now_ms",
                .defaults = fbf_defaults,
                .first_use = fbf_first_use,
                .create = fbf_create},
    .cmds = fbf_cmds,
    .n_cmds = sizeof fbf_cmds / sizeof fbf_cmds[0],
};

BK_RM_TYPE_INIT(fbf, fbf_desc)
