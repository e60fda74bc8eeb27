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
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/idem.h"

static RedisModuleType *idem_type;

typedef struct rm_idem {
  bk_idem *table;
  uint64_t now; /* the latest time the table was advanced to */
} rm_idem;

/* ---- creation -------------------------------------------------------------
 */

typedef struct idem_params {
  uint64_t retry_timeout;
  double fpp;
  uint64_t ops_per_period;
  bk_idem_strategy strategy;
} idem_params;

static void params_default(idem_params *p) {
  p->retry_timeout = bk_rm_config.retry_timeout;
  p->fpp = bk_rm_config.fpp;
  p->ops_per_period = bk_rm_config.ops_per_period;
  p->strategy = bk_rm_config.strategy;
}

static bk_status idem_new(const idem_params *p, uint64_t now, rm_idem **out) {
  bk_idem_config cfg = {
      .strategy = p->strategy,
      .retry_timeout = p->retry_timeout,
      .fpp = p->fpp,
      .ops_per_period = p->ops_per_period,
      .start_time = now,
      .allocator = &bk_rm_allocator,
  };
  rm_idem *v = RedisModule_TryAlloc(sizeof *v);
  if (!v) return BK_ENOMEM;
  bk_status s = bk_idem_create(&v->table, &cfg);
  if (s != BK_OK) {
    RedisModule_Free(v);
    return s;
  }
  v->now = now;
  *out = v;
  return BK_OK;
}

static void idem_free(void *value) {
  rm_idem *v = value;
  if (!v) return;
  bk_idem_destroy(v->table);
  RedisModule_Free(v);
}

/* Replicate the creation of a table with its parameters and time spelled
 * out, so a replica or the AOF creates exactly the master's table. */
static void replicate_reserve(RedisModuleCtx *ctx, RedisModuleString *key,
                              const idem_params *p, uint64_t now) {
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.17g", p->fpp);
  RedisModule_Replicate(
      ctx, "IDEM.RESERVE", "sclccccclcl", key, "RETRY_TIMEOUT",
      (long long)p->retry_timeout, "FPP", fpp, "STRATEGY",
      p->strategy == BK_IDEM_FBF_ADAPTIVE ? "adaptive" : "fbf", "CAPACITY",
      (long long)p->ops_per_period, "AT", (long long)now);
}

static int reply_status(RedisModuleCtx *ctx, bk_status s, const char *what) {
  char msg[200];
  if (s == BK_ENOMEM)
    snprintf(msg, sizeof msg, "ERR out of memory (%s)", what);
  else
    snprintf(msg, sizeof msg, "ERR %s: %s", what, bk_strerror(s));
  return RedisModule_ReplyWithError(ctx, msg);
}

/* Open `name` for writing: *v is NULL when the key is empty. Replies
 * WRONGTYPE and returns false when it holds another type. */
static bool open_write(RedisModuleCtx *ctx, RedisModuleString *name,
                       RedisModuleKey **key, rm_idem **v) {
  *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE);
  *v = NULL;
  int type = RedisModule_KeyType(*key);
  if (type == REDISMODULE_KEYTYPE_EMPTY) return true;
  if (RedisModule_ModuleTypeGetType(*key) != idem_type) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return false;
  }
  *v = RedisModule_ModuleTypeGetValue(*key);
  return true;
}

/* IDEM.RESERVE table RETRY_TIMEOUT ms [FPP p] [STRATEGY fbf|adaptive]
 *              [CAPACITY ops_per_period] [AT now_ms] */
static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv,
                       int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc < 4 || argc % 2) return RedisModule_WrongArity(ctx);
  idem_params p;
  params_default(&p);
  bool have_timeout = false, have_at = false;
  uint64_t at = 0;
  for (int i = 2; i < argc; i += 2) {
    RedisModuleString *value = argv[i + 1];
    if (bk_rm_is(argv[i], "RETRY_TIMEOUT")) {
      if (!bk_rm_parse_u64(value, 1, BK_RM_MAX_MS, &p.retry_timeout))
        return bk_rm_arg_error(ctx, "RETRY_TIMEOUT",
                               "must be an integer from 1 to 2^40 (ms)");
      have_timeout = true;
    } else if (bk_rm_is(argv[i], "FPP")) {
      if (!bk_rm_parse_fpp(value, &p.fpp))
        return bk_rm_arg_error(ctx, "FPP", "must be a number in (0, 1)");
    } else if (bk_rm_is(argv[i], "STRATEGY")) {
      if (bk_rm_is(value, "fbf"))
        p.strategy = BK_IDEM_FBF;
      else if (bk_rm_is(value, "adaptive"))
        p.strategy = BK_IDEM_FBF_ADAPTIVE;
      else
        return bk_rm_arg_error(ctx, "STRATEGY", "must be fbf or adaptive");
    } else if (bk_rm_is(argv[i], "CAPACITY")) {
      if (!bk_rm_parse_u64(value, 1, BK_RM_MAX_CAPACITY, &p.ops_per_period))
        return bk_rm_arg_error(ctx, "CAPACITY",
                               "must be an integer from 1 to 2^32");
    } else if (bk_rm_is(argv[i], "AT")) {
      if (!bk_rm_parse_u64(value, 0, UINT64_MAX >> 1, &at))
        return bk_rm_arg_error(ctx, "AT", "must be a time in ms >= 0");
      have_at = true;
    } else {
      return bk_rm_arg_error(ctx, "option",
                             "expected RETRY_TIMEOUT, FPP, STRATEGY, CAPACITY "
                             "or AT");
    }
  }
  if (!have_timeout)
    return bk_rm_arg_error(ctx, "RETRY_TIMEOUT", "is required");
  RedisModuleKey *key;
  rm_idem *v;
  if (!open_write(ctx, argv[1], &key, &v)) return REDISMODULE_OK;
  if (v) return RedisModule_ReplyWithError(ctx, "ERR key exists");
  uint64_t now = have_at ? at : bk_rm_clock(0);
  bk_status s = idem_new(&p, now, &v);
  if (s != BK_OK) return reply_status(ctx, s, "cannot create the table");
  RedisModule_ModuleTypeSetValue(key, idem_type, v);
  replicate_reserve(ctx, argv[1], &p, now);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
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

  RedisModuleKey *key;
  rm_idem *v;
  if (!open_write(ctx, argv[1], &key, &v)) return REDISMODULE_OK;
  uint64_t now = explicit_time ? (at > (v ? v->now : 0) ? at
                                  : v                   ? v->now
                                                        : 0)
                               : bk_rm_clock(v ? v->now : 0);
  if (!v) {
    idem_params p;
    params_default(&p);
    bk_status s = idem_new(&p, now, &v);
    if (s != BK_OK) return reply_status(ctx, s, "cannot create the table");
    RedisModule_ModuleTypeSetValue(key, idem_type, v);
    replicate_reserve(ctx, argv[1], &p, now);
  }
  bk_status s = bk_idem_advance(v->table, now);
  if (s != BK_OK) return reply_status(ctx, s, "cannot advance the table");
  v->now = now;
  int64_t value;
  bk_idem_outcome outcome;
  s = bk_idem_add(v->table, counter, counter_len, id, (int64_t)delta, &value,
                  &outcome);
  if (s == BK_ERANGE)
    return bk_rm_arg_error(ctx, "delta", "the counter would overflow");
  if (s != BK_OK) return reply_status(ctx, s, "cannot update the counter");
  /* Duplicates too: the table's counts and clock move on replicas alike. */
  RedisModule_Replicate(ctx, "IDEM.INCRBYAT", "sssssl", argv[1], argv[2],
                        argv[3], argv[4], argv[5], (long long)now);
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

/* Open `name` for reading: false (after replying) unless it holds a table;
 * *v NULL for an empty key. */
static bool open_read(RedisModuleCtx *ctx, RedisModuleString *name,
                      rm_idem **v) {
  RedisModuleKey *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ);
  *v = NULL;
  if (RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_EMPTY) return true;
  if (RedisModule_ModuleTypeGetType(key) != idem_type) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return false;
  }
  *v = RedisModule_ModuleTypeGetValue(key);
  return true;
}

/* IDEM.GET table counter: the value, or nil. */
static int cmd_get(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t counter_len;
  const char *counter = RedisModule_StringPtrLen(argv[2], &counter_len);
  if (counter_len == 0 || counter_len > BK_IDEM_KEY_MAX)
    return bk_rm_arg_error(ctx, "counter", "must be 1 to 4096 bytes");
  rm_idem *v;
  if (!open_read(ctx, argv[1], &v)) return REDISMODULE_OK;
  int64_t value;
  if (!v || bk_idem_get(v->table, counter, counter_len, &value) != BK_OK)
    return RedisModule_ReplyWithNull(ctx);
  return RedisModule_ReplyWithLongLong(ctx, value);
}

static size_t idem_memory(const rm_idem *v) {
  bk_idem_info info;
  if (bk_idem_info_get(v->table, &info) != BK_OK) return sizeof *v;
  return sizeof *v + info.filter_memory + info.table_memory;
}

/* IDEM.INFO table: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != 2) return RedisModule_WrongArity(ctx);
  rm_idem *v;
  if (!open_read(ctx, argv[1], &v)) return REDISMODULE_OK;
  if (!v) return RedisModule_ReplyWithError(ctx, "ERR no such key");
  bk_idem_info info;
  bk_status s = bk_idem_info_get(v->table, &info);
  if (s != BK_OK) return reply_status(ctx, s, "cannot describe the table");
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.6g", info.fpp);
  RedisModule_ReplyWithArray(ctx, 22);
  RedisModule_ReplyWithSimpleString(ctx, "strategy");
  RedisModule_ReplyWithSimpleString(
      ctx, info.strategy == BK_IDEM_FBF_ADAPTIVE ? "adaptive" : "fbf");
  RedisModule_ReplyWithSimpleString(ctx, "window_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.window_min);
  RedisModule_ReplyWithSimpleString(ctx, "refresh_period_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.refresh_period);
  RedisModule_ReplyWithSimpleString(ctx, "filters");
  RedisModule_ReplyWithLongLong(ctx, info.n_filters);
  RedisModule_ReplyWithSimpleString(ctx, "fpp_estimate");
  RedisModule_ReplyWithSimpleString(ctx, fpp);
  RedisModule_ReplyWithSimpleString(ctx, "counters");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.keys);
  RedisModule_ReplyWithSimpleString(ctx, "applied");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.applied);
  RedisModule_ReplyWithSimpleString(ctx, "duplicates");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.duplicates);
  RedisModule_ReplyWithSimpleString(ctx, "filter_memory");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.filter_memory);
  RedisModule_ReplyWithSimpleString(ctx, "table_memory");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.table_memory);
  RedisModule_ReplyWithSimpleString(ctx, "now_ms");
  RedisModule_ReplyWithLongLong(ctx, (long long)v->now);
  return REDISMODULE_OK;
}

/* ---- persistence ----------------------------------------------------------
 * RDB (encver 1): u64 clock, then the table's serialized form as one
 * string. The loader trusts none of it: bk_idem_deserialize checks every
 * byte, and the clock must not be behind the filter's own. */

/* The serialized form in a Redis-allocated buffer, or NULL. */
static char *idem_blob(const void *value, size_t *len) {
  const rm_idem *v = value;
  size_t size;
  if (bk_idem_serialized_size(v->table, &size) != BK_OK) return NULL;
  char *buf = RedisModule_Alloc(size);
  size_t written;
  if (bk_idem_serialize(v->table, buf, size, &written) != BK_OK) {
    RedisModule_Free(buf);
    return NULL;
  }
  *len = written;
  return buf;
}

/* A table from its serialized form and clock; NULL (and *why) when the
 * bytes are not one a table could have written. */
static void *idem_from_blob(const char *buf, size_t len, uint64_t now,
                            const char **why) {
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
  if (bk_idem_advance(table, now) != BK_OK) {
    *why = "the clock is behind the table's";
    bk_idem_destroy(table);
    return NULL;
  }
  rm_idem *v = RedisModule_TryAlloc(sizeof *v);
  if (!v) {
    *why = "out of memory";
    bk_idem_destroy(table);
    return NULL;
  }
  v->table = table;
  v->now = now;
  return v;
}

static uint64_t idem_clock(const void *value) {
  return ((const rm_idem *)value)->now;
}

/* RDB, AOF (one IDEM.LOAD with the clock and the blob) and digest: the
 * shared glue in module.c. */
static const bk_rm_blobtype idem_blobtype = {
    .name = "IDEM table",
    .aof_name = "IDEM table",
    .load_cmd = "IDEM.LOAD",
    .clock = idem_clock,
    .to_blob = idem_blob,
    .from_blob = idem_from_blob,
    .type = &idem_type,
    .free = idem_free,
};

static size_t idem_mem_usage(const void *value) {
  return idem_memory(value);
}

/* rdb_load, rdb_save, aof_rewrite, digest and IDEM.LOAD table now_ms blob. */
BK_RM_BLOBTYPE_METHODS(idem, idem_blobtype)

int bk_rm_idem_init(RedisModuleCtx *ctx) {
  static const bk_rm_command cmds[] = {
      {"IDEM.RESERVE", cmd_reserve, "write deny-oom"},
      {"IDEM.INCRBY", cmd_incrby, "write deny-oom"},
      {"IDEM.INCRBYAT", cmd_incrbyat, "write deny-oom"},
      {"IDEM.GET", cmd_get, "readonly fast"},
      {"IDEM.INFO", cmd_info, "readonly"},
      {"IDEM.LOAD", idem_cmd_load, "write deny-oom"},
  };
  /* Type names are exactly 9 characters. */
  return bk_rm_blob_register(ctx, &idem_blobtype, "bk-idemtb", idem_methods(),
                             cmds, sizeof cmds / sizeof cmds[0]);
}
