/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the bloomkit Redis module (src/redis): the Redis module
 * API (redismodule.h, taken from the installed redis' Debian source package
 * by scripts/bootstrap.sh), the module-level defaults set by loadmodule
 * arguments, argument parsing that names the argument in its error reply,
 * the module clock, and the allocator that charges bloomkit's memory to
 * Redis (so INFO memory and maxmemory see it).
 *
 * module.c defines the API's function pointers (BK_RM_MAIN); every other
 * file declares them extern.
 */
#ifndef BK_REDIS_RM_H
#define BK_REDIS_RM_H

#ifndef BK_RM_MAIN
#define REDISMODULE_API extern
#endif
#include "redismodule.h"

#include <stdbool.h>
#include <stdint.h>

#include "bloomkit/common.h"
#include "bloomkit/idem.h"

/* The RDB encoding version of every data type (RedisModule_CreateDataType
 * encver). Version 1: u64 module clock (IDEM, FBF; a CBF has none), then
 * the library's serialized form as one string (docs/design/redis.md 3.11c). */
#define BK_RM_ENCVER 1

/* Module-level defaults (loadmodule ... name value ...). */
typedef struct bk_rm_defaults {
  uint64_t retry_timeout;    /* IDEM tables: clients' retry timeout, ms */
  double fpp;                /* IDEM tables and FBFs: target fpp */
  uint64_t ops_per_period;   /* IDEM tables: updates per refresh period */
  bk_idem_strategy strategy; /* IDEM tables: fbf or adaptive */
  uint64_t fbf_capacity;     /* FBFs: items per window */
  uint64_t fbf_window;       /* FBFs: ms an item is remembered at least */
  uint64_t cbf_capacity;     /* CBFs: items present at once */
  uint64_t max_alloc;        /* bytes: the largest single allocation */
} bk_rm_defaults;

extern bk_rm_defaults bk_rm_config;
extern const bk_allocator bk_rm_allocator;

/* Upper bounds of numeric arguments (docs/redis.md): times in ms up to
 * 2^40 (34 years), sizes (items per window, per period, at once) up to
 * 2^32. */
#define BK_RM_MAX_MS (UINT64_C(1) << 40)
#define BK_RM_MAX_CAPACITY (UINT64_C(1) << 32)

/* Reply "ERR invalid <name>: <what>" and return REDISMODULE_OK. */
int bk_rm_arg_error(RedisModuleCtx *ctx, const char *name, const char *what);

/* Parse an unsigned decimal integer in [lo, hi]; false (and nothing
 * replied) when it is not one. */
bool bk_rm_parse_u64(RedisModuleString *s, uint64_t lo, uint64_t hi,
                     uint64_t *out);
/* Parse a probability in (0, 1). */
bool bk_rm_parse_fpp(RedisModuleString *s, double *out);
/* Case-insensitive comparison of an argument with a keyword. */
bool bk_rm_is(RedisModuleString *s, const char *keyword);

/* The master's clock for a structure last advanced to `last`: the wall
 * clock in ms (RedisModule_Milliseconds), never earlier than `last`. */
uint64_t bk_rm_clock(uint64_t last);

/* The persistence glue every data type shares (module.c): RDB load and
 * save, AOF rewrite and DEBUG DIGEST of a value kept as its library's
 * serialized form ("blob"), with the module clock before it when the
 * type has one. Each type's RedisModuleTypeMethods call these with its
 * own descriptor. */
typedef struct bk_rm_blobtype {
  const char *name;     /* in log lines: "IDEM table", "FBF", "CBF" */
  const char *aof_name; /* in the AOF log line: "IDEM table", "an FBF" */
  const char *load_cmd; /* the command the AOF rewrite emits: "FBF.LOAD" */
  /* The value's clock; NULL for a type without one (then neither RDB nor
   * the AOF command nor the digest carries a clock). */
  uint64_t (*clock)(const void *value);
  /* The serialized form in a Redis-allocated buffer, or NULL. */
  char *(*to_blob)(const void *value, size_t *len);
  /* A value from its serialized form and clock (0 without one); NULL and
   * *why when the bytes are not one the type could have written. */
  void *(*from_blob)(const char *buf, size_t len, uint64_t now,
                     const char **why);
  RedisModuleType **type; /* the type's handle (set by its init) */
  void (*free)(void *value);
} bk_rm_blobtype;

void *bk_rm_blob_rdb_load(const bk_rm_blobtype *t, RedisModuleIO *io,
                          int encver);
void bk_rm_blob_rdb_save(const bk_rm_blobtype *t, RedisModuleIO *io,
                         const void *value);
void bk_rm_blob_aof_rewrite(const bk_rm_blobtype *t, RedisModuleIO *aof,
                            RedisModuleString *key, const void *value);
void bk_rm_blob_digest(const bk_rm_blobtype *t, RedisModuleDigest *md,
                       const void *value);
/* <TYPE>.LOAD key [now_ms] blob (now_ms for a type with a clock): set the
 * key to the value the blob holds (what the AOF rewrite emits; also a way
 * to restore a saved value). */
int bk_rm_blob_cmd_load(const bk_rm_blobtype *t, RedisModuleCtx *ctx,
                        RedisModuleString **argv, int argc);

/* A command of a data type, for bk_rm_blob_register. */
typedef struct bk_rm_command {
  const char *name;
  RedisModuleCmdFunc fn;
  const char *flags;
} bk_rm_command;

/* Create the data type `type_name` (exactly 9 characters) with `methods`
 * into *t->type, then its n commands (first key, last key, step: 1, 1, 1).
 * REDISMODULE_OK or REDISMODULE_ERR. */
int bk_rm_blob_register(RedisModuleCtx *ctx, const bk_rm_blobtype *t,
                        const char *type_name, RedisModuleTypeMethods methods,
                        const bk_rm_command *cmds, size_t n);

/* Defines <p>_rdb_load, <p>_rdb_save, <p>_aof_rewrite, <p>_digest and
 * <p>_cmd_load, the type methods and LOAD command of the blobtype `desc`
 * (Redis passes them no context to find `desc` from), and <p>_methods(),
 * every type method, with <p>_mem_usage and <p>_free (defined before). */
#define BK_RM_BLOBTYPE_METHODS(p, desc)                                   \
  static void *p##_rdb_load(RedisModuleIO *io, int encver) {              \
    return bk_rm_blob_rdb_load(&(desc), io, encver);                      \
  }                                                                       \
  static void p##_rdb_save(RedisModuleIO *io, void *value) {              \
    bk_rm_blob_rdb_save(&(desc), io, value);                              \
  }                                                                       \
  static void p##_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, \
                              void *value) {                              \
    bk_rm_blob_aof_rewrite(&(desc), aof, key, value);                     \
  }                                                                       \
  static void p##_digest(RedisModuleDigest *md, void *value) {            \
    bk_rm_blob_digest(&(desc), md, value);                                \
  }                                                                       \
  static int p##_cmd_load(RedisModuleCtx *ctx, RedisModuleString **argv,  \
                          int argc) {                                     \
    return bk_rm_blob_cmd_load(&(desc), ctx, argv, argc);                 \
  }                                                                       \
  static RedisModuleTypeMethods p##_methods(void) {                       \
    return (RedisModuleTypeMethods){                                      \
        .version = REDISMODULE_TYPE_METHOD_VERSION,                       \
        .rdb_load = p##_rdb_load,                                         \
        .rdb_save = p##_rdb_save,                                         \
        .aof_rewrite = p##_aof_rewrite,                                   \
        .mem_usage = p##_mem_usage,                                       \
        .digest = p##_digest,                                             \
        .free = p##_free,                                                 \
    };                                                                    \
  }

/* Register each data type and its commands. */
int bk_rm_idem_init(RedisModuleCtx *ctx);
int bk_rm_fbf_init(RedisModuleCtx *ctx);
int bk_rm_cbf_init(RedisModuleCtx *ctx);

#endif
