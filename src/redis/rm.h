/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the bloomkit Redis module (src/redis): the Redis module
 * API (redismodule.h, taken from the installed redis' Debian source package
 * by scripts/bootstrap.sh), the module-level defaults set by loadmodule
 * arguments, argument parsing that names the argument in its error reply,
 * the module clock, and the allocator that charges bloomkit's memory to
 * Redis (so INFO memory and maxmemory see it); and bk_rm_type, the
 * descriptor each data type fills for the glue they share (type.c).
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
 * the library's serialized form as one string (docs/design/redis.md 3.11c).
 * Version 2, the same, where an FBF's string may also be a growing key's
 * chain of filters (fbf.c), which a module reading only version 1 would
 * refuse as damaged: it says "encoding version 2" instead. Both load. */
#define BK_RM_ENCVER 2
#define BK_RM_ENCVER_OLDEST 1

/* Module-level defaults (loadmodule ... name value ...). */
typedef struct bk_rm_defaults {
  uint64_t retry_timeout;    /* IDEM tables: clients' retry timeout, ms */
  double fpp;                /* IDEM tables and FBFs: target fpp */
  uint64_t ops_per_period;   /* IDEM tables: updates per refresh period */
  bk_idem_strategy strategy; /* IDEM tables: hybrid, window, fbf, adaptive */
  uint64_t window;           /* IDEM tables: W, seqs per client window */
  uint64_t fbf_capacity;     /* FBFs: items per window */
  uint64_t fbf_window;       /* FBFs: ms an item is remembered at least */
  uint64_t cbf_capacity;     /* CBFs: items present at once */
  uint64_t max_alloc;        /* bytes: the largest single allocation */
} bk_rm_defaults;

extern bk_rm_defaults bk_rm_config;
extern const bk_allocator bk_rm_allocator;
/* Set while a command from the master (or an AOF replay) runs a step whose
 * outcome must match the master's: bk_rm_allocator then ignores
 * max_alloc_mb, a node's own setting (only real memory can refuse). */
extern bool bk_rm_from_master;

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

/* ---- one data type, described (type.c does the rest) -------------------
 *
 * Each of idem.c, fbf.c and cbf.c fills one bk_rm_type with its names, the
 * structure's functions and its RESERVE parameters, and defines only its
 * own commands' logic. type.c holds what is the same for every type: the
 * type methods (RDB load and save, AOF rewrite, memory usage, digest,
 * free), <TYPE>.RESERVE (parsing, creation, replication), <TYPE>.LOAD,
 * opening a key of the type and creating a value on first use.
 *
 * A value of a type with a clock (structure.advance != NULL) is a bk_rm_timed:
 * the structure and the latest time it was advanced to. A value of a type
 * without one is the structure itself. */

typedef struct bk_rm_timed {
  void *obj;    /* the structure (bk_fbf, bk_idem) */
  uint64_t now; /* the latest time it was advanced to */
  /* The clock this node's replicas and AOF have for the value: its clock
   * when it was made (every way of making one carries the clock: RESERVE
   * AT, LOAD, RDB, RESTORE) or last propagated with an explicit time. A
   * write whose clock equals it may be propagated verbatim (idem.c). */
  uint64_t replicated;
} bk_rm_timed;

/* One RESERVE parameter: positional (keyword NULL) or an option. Its value
 * sits in a bk_rm_param at the same index as its spec. */
typedef union bk_rm_param {
  uint64_t n; /* BK_RM_NUMBER; BK_RM_FLAG 0 or 1; BK_RM_CHOICE: the index */
  double fpp; /* BK_RM_FPP */
} bk_rm_param;

typedef enum bk_rm_param_kind {
  BK_RM_NUMBER, /* an integer in [lo, hi] that `valid` accepts */
  BK_RM_FPP,    /* a probability in (0, 1), replicated as %.17g */
  BK_RM_FLAG,   /* a keyword alone (ADAPTIVE, BLOCKED) */
  BK_RM_CHOICE, /* one of `choices`, case-insensitive */
} bk_rm_param_kind;

typedef struct bk_rm_param_spec {
  const char *keyword; /* "FPP"; NULL for a positional parameter */
  const char *name;    /* in the error reply: "capacity", "FPP" */
  const char *what;    /* the error reply's text */
  bk_rm_param_kind kind;
  uint64_t lo, hi;            /* BK_RM_NUMBER */
  bool (*valid)(uint64_t n);  /* BK_RM_NUMBER: NULL, or a further check */
  const char *const *choices; /* BK_RM_CHOICE: NULL-terminated */
  bool required;              /* an option RESERVE cannot do without */
} bk_rm_param_spec;

#define BK_RM_MAX_PARAMS 8

/* FPP p, the same for every type. */
#define BK_RM_PARAM_FPP                                                    \
  {                                                                        \
    .keyword = "FPP", .name = "FPP", .what = "must be a number in (0, 1)", \
    .kind = BK_RM_FPP                                                      \
  }

/* A command of a data type besides its RESERVE and LOAD. */
typedef struct bk_rm_command {
  const char *name;
  RedisModuleCmdFunc fn;
  const char *flags;
} bk_rm_command;

/* The type's names. */
typedef struct bk_rm_names {
  const char *type;    /* the RDB type name: exactly 9 characters */
  const char *log;     /* in log lines: "IDEM table", "FBF", "CBF" */
  const char *aof_log; /* in the AOF log line: "IDEM table", "an FBF" */
  const char *noun;    /* in replies: "cannot create the <noun>" */
  const char *reserve; /* "FBF.RESERVE" */
  const char *load;    /* "FBF.LOAD": what the AOF rewrite emits */
} bk_rm_names;

/* The structure a value holds. advance: NULL for a type without a clock
 * (then neither RDB nor the AOF command nor the digest carries one, and
 * RESERVE takes no AT). memory: what MEMORY USAGE counts besides the
 * bk_rm_timed; NULL for the serialized size (O(1), and it tracks the
 * memory held). */
typedef struct bk_rm_structure {
  bk_status (*advance)(void *obj, uint64_t now);
  bk_status (*serialized_size)(const void *obj, size_t *size);
  bk_status (*serialize)(const void *obj, void *buf, size_t cap,
                         size_t *written);
  /* A structure from its serialized form; NULL and *why when the bytes are
   * not one the module could have written. */
  void *(*deserialize)(const char *buf, size_t len, const char **why);
  size_t (*memory)(const void *obj);
  void (*destroy)(void *obj);
} bk_rm_structure;

/* RESERVE key <positional...> [options...] [AT now_ms]. */
typedef struct bk_rm_reserve {
  /* The parameters in the order RESERVE is replicated with (positional
   * ones first). */
  const bk_rm_param_spec *params;
  size_t n_params;
  /* Every option takes a value, so an odd argument count is a wrong
   * arity. */
  bool pairs;
  const char *options_hint; /* the reply to an unknown option */
  /* RESERVE's values before its arguments, and the values on first use
   * when first_use is NULL. */
  void (*defaults)(bk_rm_param *params);
  /* The values on first use; NULL: defaults. */
  void (*first_use)(bk_rm_param *params);
  /* The structure the values make at `now`. */
  bk_status (*create)(const bk_rm_param *params, uint64_t now, void **obj);
} bk_rm_reserve;

typedef struct bk_rm_type {
  bk_rm_names names;
  bk_rm_structure structure;
  bk_rm_reserve reserve;
  const bk_rm_command *cmds; /* registered between RESERVE and LOAD */
  size_t n_cmds;
  RedisModuleType *handle; /* set by bk_rm_register */
} bk_rm_type;

/* Defines p_serialized_size, p_serialize and p_destroy: the structure's
 * bk_<p>_serialized_size, bk_<p>_serialize and bk_<p>_destroy taking the
 * void pointers a bk_rm_type holds (calling them through a cast function
 * pointer would be undefined behaviour). */
#define BK_RM_STRUCT_FUNCS(p)                                            \
  static bk_status p##_serialized_size(const void *obj, size_t *size) {  \
    return bk_##p##_serialized_size(obj, size);                          \
  }                                                                      \
  static bk_status p##_serialize(const void *obj, void *buf, size_t cap, \
                                 size_t *written) {                      \
    return bk_##p##_serialize(obj, buf, cap, written);                   \
  }                                                                      \
  static void p##_destroy(void *obj) {                                   \
    bk_##p##_destroy(obj);                                               \
  }

/* Reply "ERR out of memory (<what>)" or "ERR <what>: <status>". */
int bk_rm_reply_status(RedisModuleCtx *ctx, bk_status s, const char *what);

/* Open `name` with `mode`: *value is NULL when the key is empty. Replies
 * WRONGTYPE and returns false when it holds another type. key may be
 * NULL. */
bool bk_rm_open(RedisModuleCtx *ctx, const bk_rm_type *t,
                RedisModuleString *name, int mode, RedisModuleKey **key,
                void **value);

/* Open `name` for a write: an empty key gets a value made with the type's
 * defaults (replicated as an explicit RESERVE, so a replica with other
 * module defaults makes the same one); a value with a clock is advanced
 * to *at (never back), with at NULL to the master's clock, and with at
 * &bk_rm_own_clock left at its own clock (a write the master propagated
 * without its time, which it does only when the value's clock has not
 * moved since it last propagated one: bk_rm_timed.replicated; an empty
 * key then starts at the node's clock). The value, or NULL after replying
 * an error. */
void *bk_rm_open_write(RedisModuleCtx *ctx, const bk_rm_type *t,
                       RedisModuleString *name, const uint64_t *at);
extern const uint64_t bk_rm_own_clock;

/* <TYPE>.INFO key: the value at key, or NULL after replying an error
 * (wrong arity, WRONGTYPE, "ERR no such key"). Turns on the context's
 * automatic memory, as every command does. */
void *bk_rm_open_info(RedisModuleCtx *ctx, const bk_rm_type *t,
                      RedisModuleString **argv, int argc);

/* One name/value pair of an INFO reply: text, or the number n when text
 * is NULL. */
typedef struct bk_rm_field {
  const char *name;
  const char *text;
  long long n;
} bk_rm_field;

/* Reply an array of the n pairs' names and values. */
int bk_rm_reply_fields(RedisModuleCtx *ctx, const bk_rm_field *fields,
                       size_t n);

/* The type methods and commands every type shares, given its descriptor. */
void *bk_rm_rdb_load(const bk_rm_type *t, RedisModuleIO *io, int encver);
void bk_rm_rdb_save(const bk_rm_type *t, RedisModuleIO *io, const void *value);
void bk_rm_aof_rewrite(const bk_rm_type *t, RedisModuleIO *aof,
                       RedisModuleString *key, const void *value);
size_t bk_rm_mem_usage(const bk_rm_type *t, const void *value);
void bk_rm_digest(const bk_rm_type *t, RedisModuleDigest *md,
                  const void *value);
void bk_rm_free(const bk_rm_type *t, void *value);
/* <TYPE>.RESERVE key <positional...> [options...] [AT now_ms]. */
int bk_rm_cmd_reserve(const bk_rm_type *t, RedisModuleCtx *ctx,
                      RedisModuleString **argv, int argc);
/* <TYPE>.LOAD key [now_ms] blob (now_ms for a type with a clock): set the
 * key to the value the blob holds (what the AOF rewrite emits; also a way
 * to restore a saved value). */
int bk_rm_cmd_load(const bk_rm_type *t, RedisModuleCtx *ctx,
                   RedisModuleString **argv, int argc);

/* Create the data type with `methods` into t->handle, then its commands:
 * RESERVE, t->cmds, LOAD (first key, last key, step: 1, 1, 1).
 * REDISMODULE_OK or REDISMODULE_ERR. */
int bk_rm_register(RedisModuleCtx *ctx, bk_rm_type *t,
                   const RedisModuleTypeMethods *methods,
                   RedisModuleCmdFunc reserve, RedisModuleCmdFunc load);

/* Defines int bk_rm_<p>_init(ctx), registering the type `desc` (a static
 * bk_rm_type): Redis passes type methods and commands no context to find
 * `desc` from, so each gets a two-line function here that passes it. */
#define BK_RM_TYPE_INIT(p, desc)                                            \
  static void *p##_rdb_load(RedisModuleIO *io, int encver) {                \
    return bk_rm_rdb_load(&(desc), io, encver);                             \
  }                                                                         \
  static void p##_rdb_save(RedisModuleIO *io, void *value) {                \
    bk_rm_rdb_save(&(desc), io, value);                                     \
  }                                                                         \
  static void p##_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key,   \
                              void *value) {                                \
    bk_rm_aof_rewrite(&(desc), aof, key, value);                            \
  }                                                                         \
  static size_t p##_mem_usage(const void *value) {                          \
    return bk_rm_mem_usage(&(desc), value);                                 \
  }                                                                         \
  static void p##_digest(RedisModuleDigest *md, void *value) {              \
    bk_rm_digest(&(desc), md, value);                                       \
  }                                                                         \
  static void p##_free(void *value) {                                       \
    bk_rm_free(&(desc), value);                                             \
  }                                                                         \
  static int p##_cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, \
                             int argc) {                                    \
    return bk_rm_cmd_reserve(&(desc), ctx, argv, argc);                     \
  }                                                                         \
  static int p##_cmd_load(RedisModuleCtx *ctx, RedisModuleString **argv,    \
                          int argc) {                                       \
    return bk_rm_cmd_load(&(desc), ctx, argv, argc);                        \
  }                                                                         \
  int bk_rm_##p##_init(RedisModuleCtx *ctx) {                               \
    static const RedisModuleTypeMethods methods = {                         \
        .version = REDISMODULE_TYPE_METHOD_VERSION,                         \
        .rdb_load = p##_rdb_load,                                           \
        .rdb_save = p##_rdb_save,                                           \
        .aof_rewrite = p##_aof_rewrite,                                     \
        .mem_usage = p##_mem_usage,                                         \
        .digest = p##_digest,                                               \
        .free = p##_free,                                                   \
    };                                                                      \
    return bk_rm_register(ctx, &(desc), &methods, p##_cmd_reserve,          \
                          p##_cmd_load);                                    \
  }

/* IDEM's strategy names (hybrid, window, fbf, adaptive) and window sizes,
 * for the module arguments too. */
bool bk_rm_idem_strategy(RedisModuleString *name, bk_idem_strategy *out);
bool bk_rm_idem_window_ok(uint64_t w);

/* Register each data type and its commands. */
int bk_rm_idem_init(RedisModuleCtx *ctx);
int bk_rm_fbf_init(RedisModuleCtx *ctx);
int bk_rm_cbf_init(RedisModuleCtx *ctx);

#endif
