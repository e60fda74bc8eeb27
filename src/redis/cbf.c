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
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/cbf.h"

static RedisModuleType *cbf_type;

typedef struct cbf_params {
  uint64_t capacity;
  double fpp;
  unsigned counter_bits;
  bool blocked;
} cbf_params;

static bk_status cbf_new(const cbf_params *p, bk_cbf **out) {
  bk_cbf_config cfg = {
      .capacity = p->capacity,
      .fpp = p->fpp,
      .counter_bits = p->counter_bits,
      .layout = p->blocked ? BK_BLOOM_BLOCKED : BK_BLOOM_STANDARD,
      .single_writer = true, /* Redis runs one command at a time */
      .allocator = &bk_rm_allocator,
  };
  return bk_cbf_create(out, &cfg);
}

static void cbf_free(void *value) {
  bk_cbf_destroy(value);
}

static void replicate_reserve(RedisModuleCtx *ctx, RedisModuleString *key,
                              const cbf_params *p) {
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.17g", p->fpp);
  if (p->blocked)
    RedisModule_Replicate(ctx, "CBF.RESERVE", "slccclc", key,
                          (long long)p->capacity, "FPP", fpp, "BITS",
                          (long long)p->counter_bits, "BLOCKED");
  else
    RedisModule_Replicate(ctx, "CBF.RESERVE", "slcccl", key,
                          (long long)p->capacity, "FPP", fpp, "BITS",
                          (long long)p->counter_bits);
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
                     RedisModuleKey **key, bk_cbf **v) {
  *key = RedisModule_OpenKey(ctx, name, mode);
  *v = NULL;
  if (RedisModule_KeyType(*key) == REDISMODULE_KEYTYPE_EMPTY) return true;
  if (RedisModule_ModuleTypeGetType(*key) != cbf_type) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return false;
  }
  *v = RedisModule_ModuleTypeGetValue(*key);
  return true;
}

/* CBF.RESERVE key capacity [FPP p] [BITS 4|8|16|32] [BLOCKED] */
static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv,
                       int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc < 3) return RedisModule_WrongArity(ctx);
  cbf_params p = {.fpp = bk_rm_config.fpp, .counter_bits = 4};
  if (!bk_rm_parse_u64(argv[2], 1, BK_RM_MAX_CAPACITY, &p.capacity))
    return bk_rm_arg_error(ctx, "capacity",
                           "must be an integer from 1 to 2^32");
  for (int i = 3; i < argc; i++) {
    uint64_t bits;
    if (bk_rm_is(argv[i], "BLOCKED")) {
      p.blocked = true;
    } else if (bk_rm_is(argv[i], "FPP") && i + 1 < argc) {
      if (!bk_rm_parse_fpp(argv[++i], &p.fpp))
        return bk_rm_arg_error(ctx, "FPP", "must be a number in (0, 1)");
    } else if (bk_rm_is(argv[i], "BITS") && i + 1 < argc) {
      if (!bk_rm_parse_u64(argv[++i], 4, 32, &bits) ||
          (bits != 4 && bits != 8 && bits != 16 && bits != 32))
        return bk_rm_arg_error(ctx, "BITS", "must be 4, 8, 16 or 32");
      p.counter_bits = (unsigned)bits;
    } else {
      return bk_rm_arg_error(ctx, "option",
                             "expected FPP p, BITS n or BLOCKED");
    }
  }
  RedisModuleKey *key;
  bk_cbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v))
    return REDISMODULE_OK;
  if (v) return RedisModule_ReplyWithError(ctx, "ERR key exists");
  bk_status s = cbf_new(&p, &v);
  if (s != BK_OK) return reply_status(ctx, s, "cannot create the filter");
  RedisModule_ModuleTypeSetValue(key, cbf_type, v);
  replicate_reserve(ctx, argv[1], &p);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* CBF.ADD key item [item ...]: per item, its count after the add (the
 * smallest of its counters: an upper bound on adds minus removes). */
static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx);
  if (argc < 3) return RedisModule_WrongArity(ctx);
  RedisModuleKey *key;
  bk_cbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v))
    return REDISMODULE_OK;
  if (!v) {
    cbf_params p = {.capacity = bk_rm_config.cbf_capacity,
                    .fpp = bk_rm_config.fpp,
                    .counter_bits = 4};
    bk_status s = cbf_new(&p, &v);
    if (s != BK_OK) return reply_status(ctx, s, "cannot create the filter");
    RedisModule_ModuleTypeSetValue(key, cbf_type, v);
    replicate_reserve(ctx, argv[1], &p);
  }
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
  RedisModuleKey *key;
  bk_cbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v))
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
  RedisModuleKey *key;
  bk_cbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ, &key, &v))
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
  RedisModule_AutoMemory(ctx);
  if (argc != 2) return RedisModule_WrongArity(ctx);
  RedisModuleKey *key;
  bk_cbf *v;
  if (!open_key(ctx, argv[1], REDISMODULE_READ, &key, &v))
    return REDISMODULE_OK;
  if (!v) return RedisModule_ReplyWithError(ctx, "ERR no such key");
  bk_cbf_info info;
  bk_status s = bk_cbf_info_get(v, &info);
  if (s != BK_OK) return reply_status(ctx, s, "cannot describe the filter");
  char fpp[40];
  snprintf(fpp, sizeof fpp, "%.6g", info.fill_fpp);
  RedisModule_ReplyWithArray(ctx, 18);
  RedisModule_ReplyWithSimpleString(ctx, "capacity");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.capacity);
  RedisModule_ReplyWithSimpleString(ctx, "counters");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.m_counters);
  RedisModule_ReplyWithSimpleString(ctx, "hashes");
  RedisModule_ReplyWithLongLong(ctx, info.k);
  RedisModule_ReplyWithSimpleString(ctx, "counter_bits");
  RedisModule_ReplyWithLongLong(ctx, info.counter_bits);
  RedisModule_ReplyWithSimpleString(ctx, "layout");
  RedisModule_ReplyWithSimpleString(
      ctx, info.layout == BK_BLOOM_BLOCKED ? "blocked" : "standard");
  RedisModule_ReplyWithSimpleString(ctx, "nonzero");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.nonzero);
  RedisModule_ReplyWithSimpleString(ctx, "saturated");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.saturated);
  RedisModule_ReplyWithSimpleString(ctx, "fpp_estimate");
  RedisModule_ReplyWithSimpleString(ctx, fpp);
  RedisModule_ReplyWithSimpleString(ctx, "memory");
  RedisModule_ReplyWithLongLong(ctx, (long long)info.memory);
  return REDISMODULE_OK;
}

/* ---- persistence -------------------------------------------------------- */

static char *cbf_blob(const void *value, size_t *len) {
  const bk_cbf *v = value;
  size_t size;
  if (bk_cbf_serialized_size(v, &size) != BK_OK) return NULL;
  char *buf = RedisModule_Alloc(size);
  size_t written;
  if (bk_cbf_serialize(v, buf, size, &written) != BK_OK) {
    RedisModule_Free(buf);
    return NULL;
  }
  *len = written;
  return buf;
}

/* A CBF has no clock: `now` is unused. */
static void *cbf_from_blob(const char *buf, size_t len, uint64_t now,
                           const char **why) {
  (void)now;
  bk_cbf *v;
  bk_status s = bk_cbf_deserialize(buf, len, &bk_rm_allocator, &v);
  if (s != BK_OK) {
    *why = bk_strerror(s);
    return NULL;
  }
  bk_cbf_set_single_writer(v, true);
  return v;
}

/* No clock: RDB holds the blob alone, the AOF emits CBF.LOAD key blob. */
static const bk_rm_blobtype cbf_blobtype = {
    .name = "CBF",
    .aof_name = "a CBF",
    .load_cmd = "CBF.LOAD",
    .clock = NULL,
    .to_blob = cbf_blob,
    .from_blob = cbf_from_blob,
    .type = &cbf_type,
    .free = cbf_free,
};

static size_t cbf_mem_usage(const void *value) {
  size_t size = 0;
  if (bk_cbf_serialized_size(value, &size) != BK_OK) size = 0;
  return size;
}

/* rdb_load, rdb_save, aof_rewrite, digest and CBF.LOAD key blob. */
BK_RM_BLOBTYPE_METHODS(cbf, cbf_blobtype)

int bk_rm_cbf_init(RedisModuleCtx *ctx) {
  static const bk_rm_command cmds[] = {
      {"CBF.RESERVE", cmd_reserve, "write deny-oom"},
      {"CBF.ADD", cmd_add, "write deny-oom"},
      {"CBF.REM", cmd_rem, "write"},
      {"CBF.EXISTS", cmd_exists, "readonly fast"},
      {"CBF.MEXISTS", cmd_mexists, "readonly fast"},
      {"CBF.COUNT", cmd_count, "readonly fast"},
      {"CBF.INFO", cmd_info, "readonly"},
      {"CBF.LOAD", cbf_cmd_load, "write deny-oom"},
  };
  return bk_rm_blob_register(ctx, &cbf_blobtype, "bk-cbf-ft", cbf_methods(),
                             cmds, sizeof cmds / sizeof cmds[0]);
}
