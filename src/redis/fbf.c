/* SPDX-License-Identifier: MIT */
/*
 * The FBF data type of the Redis module: one Redis key holds a bk_fbf, a
 * Bloom filter whose items are forgotten after a window
 * (include/bloomkit/fbf.h). Commands: FBF.RESERVE, FBF.ADD, FBF.ADDAT,
 * FBF.EXISTS, FBF.MEXISTS, FBF.INFO, FBF.LOAD (docs/redis.md).
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
 * clock): they answer as of the last write, so an item may be reported
 * present longer than window + t when no write came since.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/fbf.h"
#include "bloomkit/params.h"

static RedisModuleType *fbf_type;

typedef struct rm_fbf {
  bk_fbf *filter;
  uint64_t now; /* the latest time the filter was advanced to */
} rm_fbf;

/* (N + 1) refresh periods make one window. */
#define FBF_PERIODS 6u

typedef struct fbf_params {
  uint64_t capacity; /* items per window */
  uint64_t window;   /* ms */
  double fpp;
  bool adaptive;
} fbf_params;

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

static bk_status fbf_new(const fbf_params *p, uint64_t now, rm_fbf **out) {
  uint64_t period = p->window / FBF_PERIODS + (p->window % FBF_PERIODS != 0);
  /* Items per period: capacity x t / window, rounded up (t is rounded up,
   * so for a window that is not a multiple of 6 ms a period holds a bit
   * more than a sixth of it). In 128 bits: 2^32 x 2^40 overflows. */
  __extension__ typedef unsigned __int128 u128;
  u128 scaled = (u128)p->capacity * period;
  uint64_t per_period =
      (uint64_t)(scaled / p->window) + (scaled % p->window != 0);
  double sizing = p->adaptive ? ADAPTIVE_MARGIN * p->fpp : p->fpp;
  bk_fbf_config cfg = {
      .capacity = per_period,
      .fpp = filter_rate_for(per_period, sizing),
      .target_fpp = p->fpp, /* what ADAPTIVE holds the estimate to */
      .n_past = FBF_PERIODS - 1,
      .refresh_period = period,
      .min_window = p->window,
      .start_time = now,
      .adaptive = p->adaptive,
      .adapt_interval = period,
      .period_step = period / 10 ? period / 10 : 1,
      .allocator = &bk_rm_allocator,
  };
  rm_fbf *v = RedisModule_TryAlloc(sizeof *v);
  if (!v) return BK_ENOMEM;
  bk_status s = bk_fbf_create(&v->filter, &cfg);
  if (s != BK_OK) {
    RedisModule_Free(v);
    return s;
  }
  v->now = now;
  *out = v;
  return BK_OK;
}

static void fbf_free(void *value) {
  rm_fbf *v = value;
  if (!v) return;
  bk_fbf_destroy(v->filter);
  RedisModule_Free(v);
}

static void replicate_reserve(RedisModuleCtx *ctx, RedisModuleString *key,
                              const fbf_params *p, uint64_t now) {
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.17g", p->fpp);
  if (p->adaptive)
    RedisModule_Replicate(ctx, "FBF.RESERVE", "sllccccl", key,
                          (long long)p->capacity, (long long)p->window, "FPP",
                          fpp, "ADAPTIVE", "AT", (long long)now);
  else
    RedisModule_Replicate(ctx, "FBF.RESERVE", "sllcccl", key,
                          (long long)p->capacity, (long long)p->window, "FPP",
                          fpp, "AT", (long long)now);
}

static int reply_status(RedisModuleCtx *ctx, bk_status s, const char *what) {
  char msg[200];
  if (s == BK_ENOMEM)
    snprintf(msg, sizeof msg, "ERR out of memory (%s)", what);
  else
    snprintf(msg, sizeof msg, "ERR %s: %s", what, bk_strerror(s));
  return RedisModule_ReplyWithError(ctx, msg);
}

static bool open_key(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                     RedisModuleKey **key, rm_fbf **v) {
  *key = RedisModule_OpenKey(ctx, name, mode);
  *v = NULL;
  if (RedisModule_KeyType(*key) == REDISMODULE_KEYTYPE_EMPTY) return true;
  if (RedisModule_ModuleTypeGetType(*key) != fbf_type) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return false;
  }
  *v = RedisModule_ModuleTypeGetValue(*key);
  return true;
}

/* FBF.RESERVE key capacity window_ms [FPP p] [ADAPTIVE]
 *             [AT now_ms] */
static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv,
                       int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc < 4) return RedisModule_WrongArity(ctx);
  fbf_params p = {.fpp = bk_rm_config.fpp};
  if (!bk_rm_parse_u64(argv[2], 1, BK_RM_MAX_CAPACITY, &p.capacity))
    return bk_rm_arg_error(ctx, "capacity",
                           "must be an integer from 1 to 2^32 (items per "
                           "window)");
  if (!bk_rm_parse_u64(argv[3], 1, BK_RM_MAX_MS, &p.window))
    return bk_rm_arg_error(ctx, "window_ms",
                           "must be an integer from 1 to 2^40 (ms)");
  bool have_at = false;
  uint64_t at = 0;
  for (int i = 4; i < argc; i++) {
    if (bk_rm_is(argv[i], "ADAPTIVE")) {
      p.adaptive = true;
    } else if (bk_rm_is(argv[i], "FPP") && i + 1 < argc) {
      if (!bk_rm_parse_fpp(argv[++i], &p.fpp))
        return bk_rm_arg_error(ctx, "FPP", "must be a number in (0, 1)");
    } else if (bk_rm_is(argv[i], "AT") && i + 1 < argc) {
      if (!bk_rm_parse_u64(argv[++i], 0, UINT64_MAX >> 1, &at))
        return bk_rm_arg_error(ctx, "AT", "must be a time in ms >= 0");
      have_at = true;
    } else {
      return bk_rm_arg_error(ctx, "option",
                             "expected FPP p, ADAPTIVE or AT now_ms");
    }
  }
  RedisModuleKey *key;
  rm_fbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v))
    return REDISMODULE_OK;
  if (v) return RedisModule_ReplyWithError(ctx, "ERR key exists");
  uint64_t now = have_at ? at : bk_rm_clock(0);
  bk_status s = fbf_new(&p, now, &v);
  if (s != BK_OK) return reply_status(ctx, s, "cannot create the filter");
  RedisModule_ModuleTypeSetValue(key, fbf_type, v);
  replicate_reserve(ctx, argv[1], &p, now);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
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
  RedisModuleKey *key;
  rm_fbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v))
    return REDISMODULE_OK;
  uint64_t last = v ? v->now : 0;
  uint64_t now = explicit_time ? (at > last ? at : last) : bk_rm_clock(last);
  if (!v) {
    fbf_params p = {.capacity = bk_rm_config.fbf_capacity,
                    .window = bk_rm_config.fbf_window,
                    .fpp = bk_rm_config.fpp};
    bk_status s = fbf_new(&p, now, &v);
    if (s != BK_OK) return reply_status(ctx, s, "cannot create the filter");
    RedisModule_ModuleTypeSetValue(key, fbf_type, v);
    replicate_reserve(ctx, argv[1], &p, now);
  }
  bk_status s = bk_fbf_advance(v->filter, now);
  if (s != BK_OK) return reply_status(ctx, s, "cannot advance the filter");
  v->now = now;
  RedisModule_ReplyWithArray(ctx, argc - first);
  for (int i = first; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    bool added = false;
    s = bk_fbf_add_if_absent(v->filter, item, len, &added);
    RedisModule_ReplyWithLongLong(ctx, s == BK_OK && added);
  }
  RedisModule_Replicate(ctx, "FBF.ADDAT", "slv", argv[1], (long long)now,
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
  RedisModuleKey *key;
  rm_fbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ, &key, &v))
    return REDISMODULE_OK;
  if (multi) RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; i++) {
    bool found = false;
    if (v) {
      size_t len;
      const char *item = RedisModule_StringPtrLen(argv[i], &len);
      if (bk_fbf_contains(v->filter, item, len, &found) != BK_OK) found = false;
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

/* FBF.INFO key: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != 2) return RedisModule_WrongArity(ctx);
  RedisModuleKey *key;
  rm_fbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ, &key, &v))
    return REDISMODULE_OK;
  if (!v) return RedisModule_ReplyWithError(ctx, "ERR no such key");
  bk_fbf_info info;
  double fpp = 0;
  bk_status s = bk_fbf_info_get(v->filter, &info);
  if (s == BK_OK)
    s = bk_fbf_estimated_fpp(v->filter, BK_FBF_CHECK_DEFAULT, &fpp);
  if (s != BK_OK) return reply_status(ctx, s, "cannot describe the filter");
  uint64_t items = 0;
  for (unsigned i = 0; i < info.n_filters && i < BK_FBF_MAX_FILTERS; i++)
    items += info.inserted[i];
  char fpp_text[40];
  snprintf(fpp_text, sizeof fpp_text, "%.6g", fpp);
  RedisModule_ReplyWithArray(ctx, 22);
  RedisModule_ReplyWithSimpleString(ctx, "window_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.min_window);
  RedisModule_ReplyWithSimpleString(ctx, "window_max_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.window_max);
  RedisModule_ReplyWithSimpleString(ctx, "refresh_period_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.refresh_period);
  RedisModule_ReplyWithSimpleString(ctx, "filters");
  RedisModule_ReplyWithLongLong(ctx, info.n_filters);
  RedisModule_ReplyWithSimpleString(ctx, "adaptive");
  RedisModule_ReplyWithLongLong(ctx, info.adaptive);
  RedisModule_ReplyWithSimpleString(ctx, "bits_per_filter");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.m_bits);
  RedisModule_ReplyWithSimpleString(ctx, "hashes");
  RedisModule_ReplyWithLongLong(ctx, info.k);
  RedisModule_ReplyWithSimpleString(ctx, "inserts_per_filter_sum");
  RedisModule_ReplyWithLongLong(ctx, (long long)items);
  RedisModule_ReplyWithSimpleString(ctx, "fpp_estimate");
  RedisModule_ReplyWithSimpleString(ctx, fpp_text);
  RedisModule_ReplyWithSimpleString(ctx, "memory");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.memory);
  RedisModule_ReplyWithSimpleString(ctx, "now_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)v->now);
  return REDISMODULE_OK;
}

/* ---- persistence: as for IDEM (idem.c) ------------------------------------
 */

static char *fbf_blob(const void *value, size_t *len) {
  const rm_fbf *v = value;
  size_t size;
  if (bk_fbf_serialized_size(v->filter, &size) != BK_OK) return NULL;
  char *buf = RedisModule_Alloc(size);
  size_t written;
  if (bk_fbf_serialize(v->filter, buf, size, &written) != BK_OK) {
    RedisModule_Free(buf);
    return NULL;
  }
  *len = written;
  return buf;
}

static void *fbf_from_blob(const char *buf, size_t len, uint64_t now,
                           const char **why) {
  bk_fbf *filter;
  bk_status s = bk_fbf_deserialize(buf, len, &bk_rm_allocator, &filter);
  if (s != BK_OK) {
    *why = bk_strerror(s);
    return NULL;
  }
  if (bk_fbf_advance(filter, now) != BK_OK) {
    *why = "the clock is behind the filter's";
    bk_fbf_destroy(filter);
    return NULL;
  }
  rm_fbf *v = RedisModule_TryAlloc(sizeof *v);
  if (!v) {
    *why = "out of memory";
    bk_fbf_destroy(filter);
    return NULL;
  }
  v->filter = filter;
  v->now = now;
  return v;
}

static uint64_t fbf_clock(const void *value) {
  return ((const rm_fbf *)value)->now;
}

static const bk_rm_blobtype fbf_blobtype = {
    .name = "FBF",
    .aof_name = "an FBF",
    .load_cmd = "FBF.LOAD",
    .clock = fbf_clock,
    .to_blob = fbf_blob,
    .from_blob = fbf_from_blob,
    .type = &fbf_type,
    .free = fbf_free,
};

static size_t fbf_mem_usage(const void *value) {
  const rm_fbf *v = value;
  size_t size = 0;
  /* The serialized size tracks the memory held (the filter's lanes) and
   * costs O(1), where info_get counts set bits. */
  if (bk_fbf_serialized_size(v->filter, &size) != BK_OK) size = 0;
  return sizeof *v + size;
}

/* rdb_load, rdb_save, aof_rewrite, digest and FBF.LOAD key now_ms blob. */
BK_RM_BLOBTYPE_METHODS(fbf, fbf_blobtype)

int bk_rm_fbf_init(RedisModuleCtx *ctx) {
  static const bk_rm_command cmds[] = {
      {"FBF.RESERVE", cmd_reserve, "write deny-oom"},
      {"FBF.ADD", cmd_add, "write deny-oom"},
      {"FBF.ADDAT", cmd_addat, "write deny-oom"},
      {"FBF.EXISTS", cmd_exists, "readonly fast"},
      {"FBF.MEXISTS", cmd_mexists, "readonly fast"},
      {"FBF.INFO", cmd_info, "readonly"},
      {"FBF.LOAD", fbf_cmd_load, "write deny-oom"},
  };
  return bk_rm_blob_register(ctx, &fbf_blobtype, "bk-fbf-ft", fbf_methods(),
                             cmds, sizeof cmds / sizeof cmds[0]);
}
