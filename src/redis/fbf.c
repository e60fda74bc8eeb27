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
 *
 * What every type shares (RDB, AOF, FBF.RESERVE, FBF.LOAD, first use) is
 * in type.c, driven by fbf_desc at the end of this file.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/fbf.h"
#include "bloomkit/params.h"

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

/* FBF.RESERVE key capacity window_ms [FPP p] [ADAPTIVE] [AT now_ms]:
 * the parameters in the order RESERVE replicates them (type.c parses
 * them). */
enum { P_CAPACITY, P_WINDOW, P_FPP, P_ADAPTIVE, N_PARAMS };

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
};

/* On first use (FBF.ADD of an empty key): the module's defaults. */
static void fbf_defaults(bk_rm_param *p) {
  p[P_CAPACITY].n = bk_rm_config.fbf_capacity;
  p[P_WINDOW].n = bk_rm_config.fbf_window;
  p[P_FPP].fpp = bk_rm_config.fpp;
  p[P_ADAPTIVE].n = 0;
}

static bk_status fbf_create(const bk_rm_param *p, uint64_t now, void **out) {
  uint64_t capacity = p[P_CAPACITY].n, window = p[P_WINDOW].n;
  double fpp = p[P_FPP].fpp;
  bool adaptive = p[P_ADAPTIVE].n;
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
  return bk_fbf_create((bk_fbf **)out, &cfg);
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
  RedisModule_ReplyWithArray(ctx, argc - first);
  for (int i = first; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    bool added = false;
    bk_status s = bk_fbf_add_if_absent(v->obj, item, len, &added);
    RedisModule_ReplyWithLongLong(ctx, s == BK_OK && added);
  }
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
  for (int i = 2; i < argc; i++) {
    bool found = false;
    if (v) {
      size_t len;
      const char *item = RedisModule_StringPtrLen(argv[i], &len);
      if (bk_fbf_contains(v->obj, item, len, &found) != BK_OK) found = false;
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
  bk_rm_timed *v = bk_rm_open_info(ctx, &fbf_desc, argv, argc);
  if (!v) return REDISMODULE_OK;
  bk_fbf_info info;
  double fpp = 0;
  bk_status s = bk_fbf_info_get(v->obj, &info);
  if (s == BK_OK) s = bk_fbf_estimated_fpp(v->obj, BK_FBF_CHECK_DEFAULT, &fpp);
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot describe the filter");
  uint64_t items = 0;
  for (unsigned i = 0; i < info.n_filters && i < BK_FBF_MAX_FILTERS; i++)
    items += info.inserted[i];
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
      {"memory", NULL, (long long)info.memory},
      {"now_ms", NULL, (long long)v->now},
  };
  return bk_rm_reply_fields(ctx, fields, sizeof fields / sizeof fields[0]);
}

/* ---- the structure, for type.c ------------------------------------------- */

BK_RM_STRUCT_FUNCS(fbf)

static bk_status fbf_advance(void *obj, uint64_t now) {
  return bk_fbf_advance(obj, now);
}
static void *fbf_deserialize(const char *buf, size_t len, const char **why) {
  bk_fbf *filter;
  bk_status s = bk_fbf_deserialize(buf, len, &bk_rm_allocator, &filter);
  if (s != BK_OK) *why = bk_strerror(s);
  return s == BK_OK ? filter : NULL;
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
                .options_hint = "expected FPP p, ADAPTIVE or AT now_ms",
                .defaults = fbf_defaults,
                .create = fbf_create},
    .cmds = fbf_cmds,
    .n_cmds = sizeof fbf_cmds / sizeof fbf_cmds[0],
};

BK_RM_TYPE_INIT(fbf, fbf_desc)
