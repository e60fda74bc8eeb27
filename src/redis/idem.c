/* SPDX-License-Identifier: MIT */
/*
 * The IDEM data type of the Redis module: one Redis key holds a bk_idem
 * table of named counters sharing one forgetful filter of applied op ids
 * (include/bloomkit/idem.h). Commands: IDEM.RESERVE, IDEM.INCRBY,
 * IDEM.INCRBYAT, IDEM.GET, IDEM.INFO, IDEM.LOAD (docs/redis.md).
 *
 * Time: a write on the master reads the master's clock (bk_rm_clock, never
 * behind the table's), advances the table to it and replicates itself as
 * the explicit-time IDEM.INCRBYAT (a table created on first use also as an
 * explicit IDEM.RESERVE ... AT), so replicas and the AOF replay every
 * decision (applied or duplicate) at the master's time, whatever their own
 * clock says.
 *
 * What every type shares (RDB, AOF, IDEM.RESERVE, IDEM.LOAD, first use)
 * is in type.c, driven by idem_desc at the end of this file.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/idem.h"

static bk_rm_type idem_desc; /* at the end, after the commands */

/* IDEM.RESERVE table RETRY_TIMEOUT ms [FPP p] [STRATEGY fbf|adaptive]
 *              [CAPACITY ops_per_period] [AT now_ms]
 * The parameters in the order RESERVE replicates them (type.c parses
 * them); STRATEGY's value is the index in `strategies`. */
enum { P_RETRY_TIMEOUT, P_FPP, P_STRATEGY, P_CAPACITY, N_PARAMS };

static const char *const strategy_names[] = {"fbf", "adaptive", NULL};
static const bk_idem_strategy strategies[] = {BK_IDEM_FBF,
                                              BK_IDEM_FBF_ADAPTIVE};

static const bk_rm_param_spec idem_params[N_PARAMS] = {
    [P_RETRY_TIMEOUT] = {.keyword = "RETRY_TIMEOUT",
                         .name = "RETRY_TIMEOUT",
                         .what = "must be an integer from 1 to 2^40 (ms)",
                         .kind = BK_RM_NUMBER,
                         .lo = 1,
                         .hi = BK_RM_MAX_MS,
                         .required = true},
    [P_FPP] = BK_RM_PARAM_FPP,
    [P_STRATEGY] = {.keyword = "STRATEGY",
                    .name = "STRATEGY",
                    .what = "must be fbf or adaptive",
                    .kind = BK_RM_CHOICE,
                    .choices = strategy_names},
    [P_CAPACITY] = {.keyword = "CAPACITY",
                    .name = "CAPACITY",
                    .what = "must be an integer from 1 to 2^32",
                    .kind = BK_RM_NUMBER,
                    .lo = 1,
                    .hi = BK_RM_MAX_CAPACITY},
};

/* RESERVE's starting point and a table's on first use (IDEM.INCRBY of an
 * empty key): the module's defaults. */
static void idem_defaults(bk_rm_param *p) {
  p[P_RETRY_TIMEOUT].n = bk_rm_config.retry_timeout;
  p[P_FPP].fpp = bk_rm_config.fpp;
  p[P_STRATEGY].n = bk_rm_config.strategy == BK_IDEM_FBF_ADAPTIVE;
  p[P_CAPACITY].n = bk_rm_config.ops_per_period;
}

static bk_status idem_create(const bk_rm_param *p, uint64_t now, void **out) {
  bk_idem_config cfg = {
      .strategy = strategies[p[P_STRATEGY].n],
      .retry_timeout = p[P_RETRY_TIMEOUT].n,
      .fpp = p[P_FPP].fpp,
      .ops_per_period = p[P_CAPACITY].n,
      .start_time = now,
      .allocator = &bk_rm_allocator,
  };
  return bk_idem_create((bk_idem **)out, &cfg);
}

/* IDEM.INCRBY table counter client seq delta
 * IDEM.INCRBYAT table counter client seq delta now_ms
 * Reply: [value, 1 applied | 0 duplicate]. */
static int incr(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                bool explicit_time) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != (explicit_time ? 7 : 6)) return RedisModule_WrongArity(ctx);
  size_t counter_len;
  const char *counter = RedisModule_StringPtrLen(argv[2], &counter_len);
  if (counter_len == 0 || counter_len > BK_IDEM_KEY_MAX)
    return bk_rm_arg_error(ctx, "counter", "must be 1 to 4096 bytes");
  bk_idem_op_id id;
  if (!bk_rm_parse_u64(argv[3], 0, UINT64_MAX, &id.client))
    return bk_rm_arg_error(ctx, "client",
                           "must be an integer from 0 to 2^64 - 1");
  if (!bk_rm_parse_u64(argv[4], 0, UINT64_MAX, &id.seq))
    return bk_rm_arg_error(ctx, "seq", "must be an integer from 0 to 2^64 - 1");
  long long delta;
  if (RedisModule_StringToLongLong(argv[5], &delta) != REDISMODULE_OK)
    return bk_rm_arg_error(ctx, "delta", "must be a 64-bit signed integer");
  uint64_t at = 0;
  if (explicit_time && !bk_rm_parse_u64(argv[6], 0, UINT64_MAX >> 1, &at))
    return bk_rm_arg_error(ctx, "now_ms", "must be a time in ms >= 0");

  bk_rm_timed *v =
      bk_rm_open_write(ctx, &idem_desc, argv[1], explicit_time ? &at : NULL);
  if (!v) return REDISMODULE_OK;
  int64_t value;
  bk_idem_outcome outcome;
  bk_status s = bk_idem_add(v->obj, counter, counter_len, id, (int64_t)delta,
                            &value, &outcome);
  if (s == BK_ERANGE)
    return bk_rm_arg_error(ctx, "delta", "the counter would overflow");
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot update the counter");
  /* Duplicates too: the table's counts and clock move on replicas alike. */
  RedisModule_Replicate(ctx, "IDEM.INCRBYAT", "sssssl", argv[1], argv[2],
                        argv[3], argv[4], argv[5], (long long)v->now);
  RedisModule_ReplyWithArray(ctx, 2);
  RedisModule_ReplyWithLongLong(ctx, value);
  RedisModule_ReplyWithLongLong(ctx, outcome == BK_IDEM_APPLIED);
  return REDISMODULE_OK;
}

static int cmd_incrby(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return incr(ctx, argv, argc, false);
}

static int cmd_incrbyat(RedisModuleCtx *ctx, RedisModuleString **argv,
                        int argc) {
  return incr(ctx, argv, argc, true);
}

/* IDEM.GET table counter: the value, or nil. */
static int cmd_get(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t counter_len;
  const char *counter = RedisModule_StringPtrLen(argv[2], &counter_len);
  if (counter_len == 0 || counter_len > BK_IDEM_KEY_MAX)
    return bk_rm_arg_error(ctx, "counter", "must be 1 to 4096 bytes");
  bk_rm_timed *v;
  if (!bk_rm_open(ctx, &idem_desc, argv[1], REDISMODULE_READ, NULL,
                  (void **)&v))
    return REDISMODULE_OK;
  int64_t value;
  if (!v || bk_idem_get(v->obj, counter, counter_len, &value) != BK_OK)
    return RedisModule_ReplyWithNull(ctx);
  return RedisModule_ReplyWithLongLong(ctx, value);
}

/* IDEM.INFO table: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  bk_rm_timed *v = bk_rm_open_info(ctx, &idem_desc, argv, argc);
  if (!v) return REDISMODULE_OK;
  bk_idem_info info;
  bk_status s = bk_idem_info_get(v->obj, &info);
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot describe the table");
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.6g", info.fpp);
  const bk_rm_field fields[] = {
      {"strategy", info.strategy == BK_IDEM_FBF_ADAPTIVE ? "adaptive" : "fbf",
       0},
      {"window_ms", NULL, (long long)info.window_min},
      {"refresh_period_ms", NULL, (long long)info.refresh_period},
      {"filters", NULL, info.n_filters},
      {"fpp_estimate", fpp, 0},
      {"counters", NULL, (long long)info.keys},
      {"applied", NULL, (long long)info.applied},
      {"duplicates", NULL, (long long)info.duplicates},
      {"filter_memory", NULL, (long long)info.filter_memory},
      {"table_memory", NULL, (long long)info.table_memory},
      {"now_ms", NULL, (long long)v->now},
  };
  return bk_rm_reply_fields(ctx, fields, sizeof fields / sizeof fields[0]);
}

/* ---- the structure, for type.c ------------------------------------------- */

BK_RM_STRUCT_FUNCS(idem)

static bk_status idem_advance(void *obj, uint64_t now) {
  return bk_idem_advance(obj, now);
}

/* Any table bk_idem_deserialize accepts, of a strategy IDEM.RESERVE
 * offers. */
static void *idem_deserialize(const char *buf, size_t len, const char **why) {
  bk_idem *table;
  bk_status s = bk_idem_deserialize(buf, len, &bk_rm_allocator, &table);
  if (s != BK_OK) {
    *why = bk_strerror(s);
    return NULL;
  }
  bk_idem_info info;
  if (bk_idem_info_get(table, &info) != BK_OK ||
      (info.strategy != BK_IDEM_FBF && info.strategy != BK_IDEM_FBF_ADAPTIVE)) {
    *why = "a strategy the module does not offer";
    bk_idem_destroy(table);
    return NULL;
  }
  return table;
}

/* MEMORY USAGE: the filter and the counters' table. */
static size_t idem_memory(const void *obj) {
  bk_idem_info info;
  if (bk_idem_info_get(obj, &info) != BK_OK) return 0;
  return info.filter_memory + info.table_memory;
}

static const bk_rm_command idem_cmds[] = {
    {"IDEM.INCRBY", cmd_incrby, "write deny-oom"},
    {"IDEM.INCRBYAT", cmd_incrbyat, "write deny-oom"},
    {"IDEM.GET", cmd_get, "readonly fast"},
    {"IDEM.INFO", cmd_info, "readonly"},
};

static bk_rm_type idem_desc = {
    .names = {.type = "bk-idemtb",
              .log = "IDEM table",
              .aof_log = "IDEM table",
              .noun = "table",
              .reserve = "IDEM.RESERVE",
              .load = "IDEM.LOAD"},
    .structure = {.advance = idem_advance,
                  .serialized_size = idem_serialized_size,
                  .serialize = idem_serialize,
                  .deserialize = idem_deserialize,
                  .memory = idem_memory,
                  .destroy = idem_destroy},
    .reserve = {.params = idem_params,
                .n_params = N_PARAMS,
                .pairs = true,
                .options_hint =
                    "expected RETRY_TIMEOUT, FPP, STRATEGY, CAPACITY or AT",
                .defaults = idem_defaults,
                .create = idem_create},
    .cmds = idem_cmds,
    .n_cmds = sizeof idem_cmds / sizeof idem_cmds[0],
};

BK_RM_TYPE_INIT(idem, idem_desc)
