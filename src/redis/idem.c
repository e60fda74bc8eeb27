/* SPDX-License-Identifier: MIT */
/*
 * The IDEM data type of the Redis module: one Redis key holds a bk_idem
 * table of named counters sharing one forgetful filter of applied op ids
 * (include/bloomkit/idem.h). Commands: IDEM.RESERVE, IDEM.INCRBY,
 * IDEM.INCRBYAT, IDEM.GET, IDEM.INFO, IDEM.LOAD (docs/redis.md).
 *
 * Time: a write on the master reads the master's clock (bk_rm_clock, never
 * behind the table's) and advances the table to it; replicas and the AOF
 * replay every decision (applied, duplicate, too old) at the master's
 * time, whatever their own clock says. A write is propagated as the
 * explicit-time IDEM.INCRBYAT only when the table's clock moved since the
 * last time it propagated one (once per millisecond per table at most;
 * a table created on first use is propagated as an explicit IDEM.RESERVE
 * ... AT first), and verbatim otherwise: a replica or an AOF replay runs
 * a verbatim IDEM.INCRBY at the table's own clock, which the earlier
 * explicit time set (bk_rm_open_write, bk_rm_timed.replicated). The
 * verbatim path spares a RedisModule_Replicate call, which builds a new
 * command from a format (11.6 % of the server's time under pipelined
 * IDEM.INCRBY when every write went that way; docs/results.md).
 *
 * What every type shares (RDB, AOF, IDEM.RESERVE, IDEM.LOAD, first use)
 * is in type.c, driven by idem_desc at the end of this file.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/idem.h"

static bk_rm_type idem_desc; /* at the end, after the commands */

/* IDEM.RESERVE table RETRY_TIMEOUT ms [FPP p]
 *              [STRATEGY hybrid|window|fbf|adaptive]
 *              [CAPACITY ops_per_period] [WINDOW w] [AT now_ms]
 * The parameters in the order RESERVE replicates them (type.c parses
 * them); STRATEGY's value is the index in `strategies`. */
enum { P_RETRY_TIMEOUT, P_FPP, P_STRATEGY, P_CAPACITY, P_WINDOW, N_PARAMS };

static const char *const strategy_names[] = {"hybrid", "window", "fbf",
                                             "adaptive", NULL};
static const bk_idem_strategy strategies[] = {
    BK_IDEM_HYBRID, BK_IDEM_WINDOW, BK_IDEM_FBF, BK_IDEM_FBF_ADAPTIVE};
#define N_STRATEGIES (sizeof strategies / sizeof strategies[0])

/* The name IDEM.RESERVE and IDEM.INFO use for a strategy the module
 * offers; NULL for another. */
static const char *strategy_name(bk_idem_strategy s) {
  for (size_t i = 0; i < N_STRATEGIES; i++)
    if (strategies[i] == s) return strategy_names[i];
  return NULL;
}

bool bk_rm_idem_strategy(RedisModuleString *name, bk_idem_strategy *out) {
  for (size_t i = 0; i < N_STRATEGIES; i++)
    if (bk_rm_is(name, strategy_names[i])) {
      *out = strategies[i];
      return true;
    }
  return false;
}

bool bk_rm_idem_window_ok(uint64_t w) {
  return w >= BK_IDEM_WINDOW_MIN && w <= BK_IDEM_WINDOW_MAX &&
         (w & (w - 1)) == 0;
}

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
                    .what = "must be hybrid, window, fbf or adaptive",
                    .kind = BK_RM_CHOICE,
                    .choices = strategy_names},
    [P_CAPACITY] = {.keyword = "CAPACITY",
                    .name = "CAPACITY",
                    .what = "must be an integer from 1 to 2^32",
                    .kind = BK_RM_NUMBER,
                    .lo = 1,
                    .hi = BK_RM_MAX_CAPACITY},
    [P_WINDOW] = {.keyword = "WINDOW",
                  .name = "WINDOW",
                  .what = "must be a power of two from 64 to 4096 (seqs)",
                  .kind = BK_RM_NUMBER,
                  .lo = BK_IDEM_WINDOW_MIN,
                  .hi = BK_IDEM_WINDOW_MAX,
                  .valid = bk_rm_idem_window_ok},
};

/* RESERVE's starting point and a table's on first use (IDEM.INCRBY of an
 * empty key): the module's defaults. */
static void idem_defaults(bk_rm_param *p) {
  p[P_RETRY_TIMEOUT].n = bk_rm_config.retry_timeout;
  p[P_FPP].fpp = bk_rm_config.fpp;
  p[P_STRATEGY].n = 0;
  for (size_t i = 0; i < N_STRATEGIES; i++)
    if (strategies[i] == bk_rm_config.strategy) p[P_STRATEGY].n = i;
  p[P_CAPACITY].n = bk_rm_config.ops_per_period;
  p[P_WINDOW].n = bk_rm_config.window;
}

static bk_status idem_create(const bk_rm_param *p, uint64_t now, void **out) {
  bk_idem_config cfg = {
      .strategy = strategies[p[P_STRATEGY].n],
      .retry_timeout = p[P_RETRY_TIMEOUT].n,
      .fpp = p[P_FPP].fpp,
      .ops_per_period = p[P_CAPACITY].n,
      .window = (unsigned)p[P_WINDOW].n,
      .start_time = now,
      .allocator = &bk_rm_allocator,
  };
  return bk_idem_create((bk_idem **)out, &cfg);
}

/* IDEM.INCRBY table counter client seq delta
 * IDEM.INCRBYAT table counter client seq delta now_ms
 * Reply: [value, 1 applied | 0 duplicate]; with the WINDOW strategy, an
 * op below its client's window is the error "TOO_OLD ..." (not applied,
 * the counter unchanged), propagated like any other decision. */
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

  /* From the master or the AOF: a write without a time runs at the
   * table's (see the top), and HYBRID's FBF is made where the master made
   * it, whatever this node's max_alloc_mb (rm.h bk_rm_from_master). */
  bool from_master =
      RedisModule_GetContextFlags(ctx) &
      (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING);
  bk_rm_timed *v = bk_rm_open_write(ctx, &idem_desc, argv[1],
                                    explicit_time ? &at
                                    : from_master ? &bk_rm_own_clock
                                                  : NULL);
  if (!v) return REDISMODULE_OK;
  int64_t value;
  bk_idem_outcome outcome;
  bk_rm_from_master = from_master;
  bk_status s = bk_idem_add(v->obj, counter, counter_len, id, (int64_t)delta,
                            &value, &outcome);
  bk_rm_from_master = false;
  if (s == BK_ERANGE)
    return bk_rm_arg_error(ctx, "delta", "the counter would overflow");
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot update the counter");
  /* Duplicates and TOO_OLD too: the table's counts, windows and clock move
   * on replicas alike. The time only when it moved (see the top). */
  if (v->now != v->replicated) {
    RedisModule_Replicate(ctx, "IDEM.INCRBYAT", "sssssl", argv[1], argv[2],
                          argv[3], argv[4], argv[5], (long long)v->now);
    v->replicated = v->now;
  } else {
    RedisModule_ReplicateVerbatim(ctx);
  }
  if (outcome == BK_IDEM_TOO_OLD) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "TOO_OLD seq %llu is below client %llu's window: not applied",
             (unsigned long long)id.seq, (unsigned long long)id.client);
    return RedisModule_ReplyWithError(ctx, msg);
  }
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
      {"strategy", strategy_name(info.strategy), 0},
      {"window_ms", NULL, (long long)info.window_min},
      {"refresh_period_ms", NULL, (long long)info.refresh_period},
      {"filters", NULL, info.n_filters},
      {"fpp_estimate", fpp, 0},
      {"counters", NULL, (long long)info.keys},
      {"applied", NULL, (long long)info.applied},
      {"duplicates", NULL, (long long)info.duplicates},
      {"filter_memory", NULL, (long long)info.filter_memory},
      {"table_memory", NULL, (long long)info.table_memory},
      {"window", NULL, info.window},
      {"clients", NULL, (long long)info.clients},
      {"window_decided", NULL, (long long)info.window_decided},
      {"below_window", NULL, (long long)info.below_window},
      {"slid_to_filter", NULL, (long long)info.slid_to_filter},
      {"clients_evicted", NULL, (long long)info.clients_evicted},
      {"window_memory", NULL, (long long)info.window_memory},
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
      !strategy_name(info.strategy)) {
    *why = "a strategy the module does not offer";
    bk_idem_destroy(table);
    return NULL;
  }
  return table;
}

/* MEMORY USAGE: the filter, the counters' table and the client
 * windows. */
static size_t idem_memory(const void *obj) {
  bk_idem_info info;
  if (bk_idem_info_get(obj, &info) != BK_OK) return 0;
  return info.filter_memory + info.table_memory + info.window_memory;
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
    .reserve =
        {.params = idem_params,
         .n_params = N_PARAMS,
         .pairs = true,
         .options_hint =
             "expected RETRY_TIMEOUT, FPP, STRATEGY, CAPACITY, WINDOW or AT",
         .defaults = idem_defaults,
         .create = idem_create},
    .cmds = idem_cmds,
    .n_cmds = sizeof idem_cmds / sizeof idem_cmds[0],
};

BK_RM_TYPE_INIT(idem, idem_desc)
