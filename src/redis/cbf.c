/* SPDX-License-Identifier: MIT */
/*
 * The CBF data type of the Redis module: one Redis key holds a bk_cbf, a
 * counting Bloom filter that also deletes (include/bloomkit/cbf.h).
 * Commands: CBF.RESERVE, CBF.ADD, CBF.REM, CBF.EXISTS, CBF.MEXISTS,
 * CBF.COUNT, CBF.INFO, CBF.LOAD (docs/redis.md).
 *
 * No clock: a counting filter's state depends only on the adds and removes,
 * so writes replicate as themselves (a filter created on first use also as
 * an explicit CBF.RESERVE with its parameters, so a replica with other
 * module defaults creates the same filter). RDB (encoding version 1): the
 * library's serialized form as one string, loaded as hostile bytes.
 *
 * What every type shares (RDB, AOF, CBF.RESERVE, CBF.LOAD, first use) is
 * in type.c, driven by cbf_desc at the end of this file.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/cbf.h"

static bk_rm_type cbf_desc; /* at the end, after the commands */

/* CBF.RESERVE key capacity [FPP p] [BITS 4|8|16|32] [BLOCKED]: the
 * parameters in the order RESERVE replicates them (type.c parses
 * them). */
enum { P_CAPACITY, P_FPP, P_BITS, P_BLOCKED, N_PARAMS };

static bool counter_bits_valid(uint64_t bits) {
  return bits == 4 || bits == 8 || bits == 16 || bits == 32;
}

static const bk_rm_param_spec cbf_params[N_PARAMS] = {
    [P_CAPACITY] = {.name = "capacity",
                    .what = "must be an integer from 1 to 2^32",
                    .kind = BK_RM_NUMBER,
                    .lo = 1,
                    .hi = BK_RM_MAX_CAPACITY},
    [P_FPP] = BK_RM_PARAM_FPP,
    [P_BITS] = {.keyword = "BITS",
                .name = "BITS",
                .what = "must be 4, 8, 16 or 32",
                .kind = BK_RM_NUMBER,
                .lo = 4,
                .hi = 32,
                .valid = counter_bits_valid},
    [P_BLOCKED] = {.keyword = "BLOCKED", .name = "BLOCKED", .kind = BK_RM_FLAG},
};

/* On first use (CBF.ADD of an empty key): the module's defaults. */
static void cbf_defaults(bk_rm_param *p) {
  p[P_CAPACITY].n = bk_rm_config.cbf_capacity;
  p[P_FPP].fpp = bk_rm_config.fpp;
  p[P_BITS].n = 4;
  p[P_BLOCKED].n = 0;
}

/* A CBF has no clock: `now` is unused. */
static bk_status cbf_create(const bk_rm_param *p, uint64_t now, void **out) {
  (void)now;
  bk_cbf_config cfg = {
      .capacity = p[P_CAPACITY].n,
      .fpp = p[P_FPP].fpp,
      .counter_bits = (unsigned)p[P_BITS].n,
      .layout = p[P_BLOCKED].n ? BK_BLOOM_BLOCKED : BK_BLOOM_STANDARD,
      .single_writer = true, /* Redis runs one command at a time */
      .allocator = &bk_rm_allocator,
  };
  return bk_cbf_create((bk_cbf **)out, &cfg);
}

/* CBF.ADD key item [item ...]: per item, its count after the add (the
 * smallest of its counters: an upper bound on adds minus removes). */
static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx);
  if (argc < 3) return RedisModule_WrongArity(ctx);
  bk_cbf *v = bk_rm_open_write(ctx, &cbf_desc, argv[1], NULL);
  if (!v) return REDISMODULE_OK;
  RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    uint32_t count = 0;
    if (bk_cbf_add(v, item, len) != BK_OK ||
        bk_cbf_count(v, item, len, &count) != BK_OK)
      count = 0;
    RedisModule_ReplyWithLongLong(ctx, count);
  }
  RedisModule_Replicate(ctx, "CBF.ADD", "sv", argv[1], argv + 2,
                        (size_t)(argc - 2));
  return REDISMODULE_OK;
}

/* CBF.REM key item [item ...]: per item 1 removed, 0 not present (then
 * nothing changed for it). */
static int cmd_rem(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx);
  if (argc < 3) return RedisModule_WrongArity(ctx);
  bk_cbf *v;
  if (!bk_rm_open(ctx, &cbf_desc, argv[1], REDISMODULE_READ | REDISMODULE_WRITE,
                  NULL, (void **)&v))
    return REDISMODULE_OK;
  RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    RedisModule_ReplyWithLongLong(ctx,
                                  v && bk_cbf_remove(v, item, len) == BK_OK);
  }
  if (v) RedisModule_ReplicateVerbatim(ctx);
  return REDISMODULE_OK;
}

typedef enum query { Q_EXISTS, Q_MEXISTS, Q_COUNT } query;

static int ask(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
               query q) {
  RedisModule_AutoMemory(ctx);
  if (q == Q_MEXISTS ? argc < 3 : argc != 3) return RedisModule_WrongArity(ctx);
  bk_cbf *v;
  if (!bk_rm_open(ctx, &cbf_desc, argv[1], REDISMODULE_READ, NULL, (void **)&v))
    return REDISMODULE_OK;
  if (q == Q_MEXISTS) RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; i++) {
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[i], &len);
    long long answer = 0;
    if (v && q == Q_COUNT) {
      uint32_t count;
      if (bk_cbf_count(v, item, len, &count) == BK_OK) answer = count;
    } else if (v) {
      bool found;
      if (bk_cbf_contains(v, item, len, &found) == BK_OK) answer = found;
    }
    RedisModule_ReplyWithLongLong(ctx, answer);
  }
  return REDISMODULE_OK;
}

static int cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return ask(ctx, argv, argc, Q_EXISTS);
}
static int cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv,
                       int argc) {
  return ask(ctx, argv, argc, Q_MEXISTS);
}
static int cmd_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  return ask(ctx, argv, argc, Q_COUNT);
}

/* CBF.INFO key: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  bk_cbf *v = bk_rm_open_info(ctx, &cbf_desc, argv, argc);
  if (!v) return REDISMODULE_OK;
  bk_cbf_info info;
  bk_status s = bk_cbf_info_get(v, &info);
  if (s != BK_OK)
    return bk_rm_reply_status(ctx, s, "cannot describe the filter");
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.6g", info.fill_fpp);
  const bk_rm_field fields[] = {
      {"capacity", NULL, (long long)info.capacity},
      {"counters", NULL, (long long)info.m_counters},
      {"hashes", NULL, info.k},
      {"counter_bits", NULL, info.counter_bits},
      {"layout", info.layout == BK_BLOOM_BLOCKED ? "blocked" : "standard", 0},
      {"nonzero", NULL, (long long)info.nonzero},
      {"saturated", NULL, (long long)info.saturated},
      {"fpp_estimate", fpp, 0},
      {"memory", NULL, (long long)info.memory},
  };
  return bk_rm_reply_fields(ctx, fields, sizeof fields / sizeof fields[0]);
}

/* ---- the structure, for type.c ------------------------------------------- */

BK_RM_STRUCT_FUNCS(cbf)

static void *cbf_deserialize(const char *buf, size_t len, const char **why) {
  bk_cbf *v;
  bk_status s = bk_cbf_deserialize(buf, len, &bk_rm_allocator, &v);
  if (s != BK_OK) {
    *why = bk_strerror(s);
    return NULL;
  }
  bk_cbf_set_single_writer(v, true);
  return v;
}

static const bk_rm_command cbf_cmds[] = {
    {"CBF.ADD", cmd_add, "write deny-oom"},
    {"CBF.REM", cmd_rem, "write"},
    {"CBF.EXISTS", cmd_exists, "readonly fast"},
    {"CBF.MEXISTS", cmd_mexists, "readonly fast"},
    {"CBF.COUNT", cmd_count, "readonly fast"},
    {"CBF.INFO", cmd_info, "readonly"},
};

/* No clock: RDB holds the blob alone, the AOF emits CBF.LOAD key blob. */
static bk_rm_type cbf_desc = {
    .names = {.type = "bk-cbf-ft",
              .log = "CBF",
              .aof_log = "a CBF",
              .noun = "filter",
              .reserve = "CBF.RESERVE",
              .load = "CBF.LOAD"},
    .structure = {.advance = NULL,
                  .serialized_size = cbf_serialized_size,
                  .serialize = cbf_serialize,
                  .deserialize = cbf_deserialize,
                  .memory = NULL, /* the serialized size: the counters */
                  .destroy = cbf_destroy},
    .reserve = {.params = cbf_params,
                .n_params = N_PARAMS,
                .pairs = false,
                .options_hint = "expected FPP p, BITS n or BLOCKED",
                .defaults = cbf_defaults,
                .create = cbf_create},
    .cmds = cbf_cmds,
    .n_cmds = sizeof cbf_cmds / sizeof cbf_cmds[0],
};

BK_RM_TYPE_INIT(cbf, cbf_desc)
