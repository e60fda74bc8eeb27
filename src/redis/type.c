/* SPDX-License-Identifier: MIT */
/*
 * The one path every data type of the Redis module goes through (rm.h
 * bk_rm_type): the type methods (RDB load and save through the structure's
 * serialize / deserialize, AOF rewrite, memory usage, digest, free),
 * <TYPE>.RESERVE (its parameters parsed from the type's table, the value
 * created, the RESERVE replicated with every parameter spelled out),
 * <TYPE>.LOAD, opening a key of the type, creating a value on first use
 * and advancing a value with a clock. idem.c, fbf.c and cbf.c each fill a
 * bk_rm_type and keep only their own commands' logic.
 */
#include "redis/rm.h"

#include <stdio.h>
#include <string.h>

int bk_rm_reply_status(RedisModuleCtx *ctx, bk_status s, const char *what) {
  char msg[200];
  if (s == BK_ENOMEM)
    snprintf(msg, sizeof msg, "ERR out of memory (%s)", what);
  else
    snprintf(msg, sizeof msg, "ERR %s: %s", what, bk_strerror(s));
  return RedisModule_ReplyWithError(ctx, msg);
}

bool bk_rm_open(RedisModuleCtx *ctx, const bk_rm_type *t,
                RedisModuleString *name, int mode, RedisModuleKey **key,
                void **value) {
  RedisModuleKey *k = RedisModule_OpenKey(ctx, name, mode);
  if (key) *key = k;
  *value = NULL;
  if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_EMPTY) return true;
  if (RedisModule_ModuleTypeGetType(k) != t->handle) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return false;
  }
  *value = RedisModule_ModuleTypeGetValue(k);
  return true;
}

void *bk_rm_open_info(RedisModuleCtx *ctx, const bk_rm_type *t,
                      RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != 2) {
    RedisModule_WrongArity(ctx);
    return NULL;
  }
  void *value;
  if (!bk_rm_open(ctx, t, argv[1], REDISMODULE_READ, NULL, &value)) return NULL;
  if (!value) RedisModule_ReplyWithError(ctx, "ERR no such key");
  return value;
}

int bk_rm_reply_fields(RedisModuleCtx *ctx, const bk_rm_field *fields,
                       size_t n) {
  RedisModule_ReplyWithArray(ctx, (long)(2 * n));
  for (size_t i = 0; i < n; i++) {
    RedisModule_ReplyWithSimpleString(ctx, fields[i].name);
    if (fields[i].text)
      RedisModule_ReplyWithSimpleString(ctx, fields[i].text);
    else
      RedisModule_ReplyWithLongLong(ctx, fields[i].n);
  }
  return REDISMODULE_OK;
}

static void *obj_of(const bk_rm_type *t, const void *value) {
  return t->structure.advance ? ((const bk_rm_timed *)value)->obj
                              : (void *)value;
}

/* The value holding obj at time now (for a type with a clock, a new
 * bk_rm_timed); NULL when out of memory (obj is then still the caller's). */
static void *value_of(const bk_rm_type *t, void *obj, uint64_t now) {
  if (!t->structure.advance) return obj;
  bk_rm_timed *v = RedisModule_TryAlloc(sizeof *v);
  if (!v) return NULL;
  v->obj = obj;
  v->now = now;
  v->replicated = now;
  return v;
}

void bk_rm_free(const bk_rm_type *t, void *value) {
  if (!value) return;
  t->structure.destroy(obj_of(t, value));
  if (t->structure.advance) RedisModule_Free(value);
}

/* ---- RESERVE --------------------------------------------------------------
 * Parameters are parsed from the spec table and replicated from it: key,
 * the positional ones, each option with its value (a flag only when set),
 * then AT now_ms for a type with a clock. */

static bool parse_param(const bk_rm_param_spec *p, RedisModuleString *s,
                        bk_rm_param *out) {
  switch (p->kind) {
    case BK_RM_NUMBER:
      return bk_rm_parse_u64(s, p->lo, p->hi, &out->n) &&
             (!p->valid || p->valid(out->n));
    case BK_RM_FPP:
      return bk_rm_parse_fpp(s, &out->fpp);
    case BK_RM_CHOICE:
      for (uint64_t i = 0; p->choices[i]; i++)
        if (bk_rm_is(s, p->choices[i])) {
          out->n = i;
          return true;
        }
      return false;
    case BK_RM_FLAG:
      break;
  }
  return false;
}

static void replicate_reserve(RedisModuleCtx *ctx, const bk_rm_type *t,
                              RedisModuleString *name,
                              const bk_rm_param *params, uint64_t now) {
  RedisModuleString *args[2 * BK_RM_MAX_PARAMS + 2];
  size_t n = 0;
  for (size_t i = 0; i < t->reserve.n_params; i++) {
    const bk_rm_param_spec *p = &t->reserve.params[i];
    if (p->kind == BK_RM_FLAG && !params[i].n) continue;
    if (p->keyword)
      args[n++] = RedisModule_CreateString(ctx, p->keyword, strlen(p->keyword));
    if (p->kind == BK_RM_NUMBER)
      args[n++] =
          RedisModule_CreateStringFromLongLong(ctx, (long long)params[i].n);
    else if (p->kind == BK_RM_FPP)
      args[n++] = RedisModule_CreateStringPrintf(ctx, "%.17g", params[i].fpp);
    else if (p->kind == BK_RM_CHOICE)
      args[n++] = RedisModule_CreateString(ctx, p->choices[params[i].n],
                                           strlen(p->choices[params[i].n]));
  }
  if (t->structure.advance) {
    args[n++] = RedisModule_CreateString(ctx, "AT", 2);
    args[n++] = RedisModule_CreateStringFromLongLong(ctx, (long long)now);
  }
  RedisModule_Replicate(ctx, t->names.reserve, "sv", name, args, n);
  for (size_t i = 0; i < n; i++) RedisModule_FreeString(ctx, args[i]);
}

/* A new value from the parameters at `now`, set at `key` and replicated
 * as an explicit RESERVE; NULL after replying an error. */
static void *create_at(RedisModuleCtx *ctx, const bk_rm_type *t,
                       RedisModuleKey *key, RedisModuleString *name,
                       const bk_rm_param *params, uint64_t now) {
  void *obj = NULL;
  bk_status s = t->reserve.create(params, now, &obj);
  void *value = NULL;
  if (s == BK_OK) {
    value = value_of(t, obj, now);
    if (!value) {
      t->structure.destroy(obj);
      s = BK_ENOMEM;
    }
  }
  if (s != BK_OK) {
    char what[64];
    snprintf(what, sizeof what, "cannot create the %s", t->names.noun);
    bk_rm_reply_status(ctx, s, what);
    return NULL;
  }
  RedisModule_ModuleTypeSetValue(key, t->handle, value);
  replicate_reserve(ctx, t, name, params, now);
  return value;
}

/* Only its address matters (rm.h). */
const uint64_t bk_rm_own_clock = 0;

void *bk_rm_open_write(RedisModuleCtx *ctx, const bk_rm_type *t,
                       RedisModuleString *name, const uint64_t *at) {
  RedisModuleKey *key;
  void *value;
  if (!bk_rm_open(ctx, t, name, REDISMODULE_READ | REDISMODULE_WRITE, &key,
                  &value))
    return NULL;
  uint64_t now = 0;
  if (t->structure.advance) {
    uint64_t last = value ? ((bk_rm_timed *)value)->now : 0;
    if (at == &bk_rm_own_clock && value)
      now = last;
    else if (at && at != &bk_rm_own_clock)
      now = *at > last ? *at : last;
    else
      now = bk_rm_clock(last);
  }
  if (!value) {
    bk_rm_param params[BK_RM_MAX_PARAMS];
    (t->reserve.first_use ? t->reserve.first_use : t->reserve.defaults)(params);
    value = create_at(ctx, t, key, name, params, now);
    if (!value) return NULL;
  }
  if (t->structure.advance) {
    bk_rm_timed *v = value;
    bk_status s = t->structure.advance(v->obj, now);
    if (s != BK_OK) {
      char what[64];
      snprintf(what, sizeof what, "cannot advance the %s", t->names.noun);
      bk_rm_reply_status(ctx, s, what);
      return NULL;
    }
    v->now = now;
  }
  return value;
}

int bk_rm_cmd_reserve(const bk_rm_type *t, RedisModuleCtx *ctx,
                      RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  int min_argc = 2; /* the command, the key, the positional parameters
                     * and the required options with their values */
  for (size_t i = 0; i < t->reserve.n_params; i++)
    min_argc += !t->reserve.params[i].keyword   ? 1
                : t->reserve.params[i].required ? 2
                                                : 0;
  if (argc < min_argc || (t->reserve.pairs && argc % 2))
    return RedisModule_WrongArity(ctx);
  bk_rm_param params[BK_RM_MAX_PARAMS];
  bool given[BK_RM_MAX_PARAMS] = {false}; /* options given a value */
  t->reserve.defaults(params);
  int first_option = 2;
  for (size_t i = 0; i < t->reserve.n_params && !t->reserve.params[i].keyword;
       i++)
    if (!parse_param(&t->reserve.params[i], argv[first_option++], &params[i]))
      return bk_rm_arg_error(ctx, t->reserve.params[i].name,
                             t->reserve.params[i].what);
  bool have_at = false;
  uint64_t at = 0;
  for (int i = first_option; i < argc; i++) {
    size_t o = 0;
    while (o < t->reserve.n_params &&
           !(t->reserve.params[o].keyword &&
             bk_rm_is(argv[i], t->reserve.params[o].keyword)))
      o++;
    const bk_rm_param_spec *p =
        o < t->reserve.n_params ? &t->reserve.params[o] : NULL;
    if (p && p->kind == BK_RM_FLAG) {
      params[o].n = 1;
    } else if (p && i + 1 < argc) {
      if (!parse_param(p, argv[++i], &params[o]))
        return bk_rm_arg_error(ctx, p->name, p->what);
      given[o] = true;
    } else if (t->structure.advance && bk_rm_is(argv[i], "AT") &&
               i + 1 < argc) {
      if (!bk_rm_parse_u64(argv[++i], 0, UINT64_MAX >> 1, &at))
        return bk_rm_arg_error(ctx, "AT", "must be a time in ms >= 0");
      have_at = true;
    } else {
      return bk_rm_arg_error(ctx, "option", t->reserve.options_hint);
    }
  }
  for (size_t o = 0; o < t->reserve.n_params; o++)
    if (t->reserve.params[o].required && !given[o])
      return bk_rm_arg_error(ctx, t->reserve.params[o].name, "is required");
  RedisModuleKey *key;
  void *value;
  if (!bk_rm_open(ctx, t, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key,
                  &value))
    return REDISMODULE_OK;
  if (value) return RedisModule_ReplyWithError(ctx, "ERR key exists");
  uint64_t now = !t->structure.advance ? 0 : have_at ? at : bk_rm_clock(0);
  if (!create_at(ctx, t, key, argv[1], params, now)) return REDISMODULE_OK;
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- persistence ----------------------------------------------------------
 * RDB (encver 1 and 2, rm.h): u64 clock (types with one), then the
 * serialized form as one string. The loader trusts none of it: the type's
 * deserialize checks every byte, and the clock must not be behind the
 * structure's own. */

/* The serialized form in a Redis-allocated buffer, or NULL. */
static char *blob_of(const bk_rm_type *t, const void *value, size_t *len) {
  const void *obj = obj_of(t, value);
  size_t size;
  if (t->structure.serialized_size(obj, &size) != BK_OK) return NULL;
  char *buf = RedisModule_Alloc(size);
  size_t written;
  if (t->structure.serialize(obj, buf, size, &written) != BK_OK) {
    RedisModule_Free(buf);
    return NULL;
  }
  *len = written;
  return buf;
}

static uint64_t clock_of(const bk_rm_type *t, const void *value) {
  return t->structure.advance ? ((const bk_rm_timed *)value)->now : 0;
}

#define WHY_SIZE 128

/* A value from its serialized form and clock (0 without one); NULL and
 * why (WHY_SIZE bytes) when the bytes are not one the type could have
 * written. */
static void *value_from_blob(const bk_rm_type *t, const char *buf, size_t len,
                             uint64_t now, char *why) {
  const char *reason = NULL;
  void *obj = t->structure.deserialize(buf, len, &reason);
  if (!obj) {
    snprintf(why, WHY_SIZE, "%s", reason);
    return NULL;
  }
  if (t->structure.advance && t->structure.advance(obj, now) != BK_OK) {
    snprintf(why, WHY_SIZE, "the clock is behind the %s's", t->names.noun);
    t->structure.destroy(obj);
    return NULL;
  }
  void *value = value_of(t, obj, now);
  if (!value) {
    snprintf(why, WHY_SIZE, "out of memory");
    t->structure.destroy(obj);
  }
  return value;
}

void *bk_rm_rdb_load(const bk_rm_type *t, RedisModuleIO *io, int encver) {
  if (encver < BK_RM_ENCVER_OLDEST || encver > BK_RM_ENCVER) {
    RedisModule_LogIOError(io, "warning",
                           "bloomkit: %s encoding version %d is not one this "
                           "module reads (%d to %d)",
                           t->names.log, encver, BK_RM_ENCVER_OLDEST,
                           BK_RM_ENCVER);
    return NULL;
  }
  uint64_t now = 0;
  if (t->structure.advance) {
    now = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io)) return NULL;
  }
  size_t len;
  char *buf = RedisModule_LoadStringBuffer(io, &len);
  if (RedisModule_IsIOError(io)) {
    if (buf) RedisModule_Free(buf);
    return NULL;
  }
  char why[WHY_SIZE];
  void *v = value_from_blob(t, buf, len, now, why);
  RedisModule_Free(buf);
  if (!v)
    RedisModule_LogIOError(io, "warning", "bloomkit: refusing a corrupt %s: %s",
                           t->names.log, why);
  return v;
}

void bk_rm_rdb_save(const bk_rm_type *t, RedisModuleIO *io, const void *value) {
  size_t len = 0;
  char *buf = blob_of(t, value, &len);
  if (t->structure.advance) RedisModule_SaveUnsigned(io, clock_of(t, value));
  /* Serialization cannot fail for a valid value with the buffer sized by
   * serialized_size; an empty string would fail the load loudly. */
  RedisModule_SaveStringBuffer(io, buf ? buf : "", buf ? len : 0);
  if (buf) RedisModule_Free(buf);
}

/* AOF rewrite: one <TYPE>.LOAD with the clock (types with one) and the
 * blob. */
void bk_rm_aof_rewrite(const bk_rm_type *t, RedisModuleIO *aof,
                       RedisModuleString *key, const void *value) {
  size_t len;
  char *buf = blob_of(t, value, &len);
  if (!buf) {
    RedisModule_LogIOError(aof, "warning",
                           "bloomkit: cannot serialize %s for the AOF",
                           t->names.aof_log);
    return;
  }
  if (t->structure.advance)
    RedisModule_EmitAOF(aof, t->names.load, "slb", key,
                        (long long)clock_of(t, value), buf, len);
  else
    RedisModule_EmitAOF(aof, t->names.load, "sb", key, buf, len);
  RedisModule_Free(buf);
}

size_t bk_rm_mem_usage(const bk_rm_type *t, const void *value) {
  const void *obj = obj_of(t, value);
  size_t size = 0;
  if (t->structure.memory)
    size = t->structure.memory(obj);
  else if (t->structure.serialized_size(obj, &size) != BK_OK)
    size = 0;
  return (t->structure.advance ? sizeof(bk_rm_timed) : 0) + size;
}

void bk_rm_digest(const bk_rm_type *t, RedisModuleDigest *md,
                  const void *value) {
  size_t len;
  char *buf = blob_of(t, value, &len);
  if (buf) {
    RedisModule_DigestAddStringBuffer(md, buf, len);
    RedisModule_Free(buf);
  }
  if (t->structure.advance)
    RedisModule_DigestAddLongLong(md, (long long)clock_of(t, value));
  RedisModule_DigestEndSequence(md);
}

int bk_rm_cmd_load(const bk_rm_type *t, RedisModuleCtx *ctx,
                   RedisModuleString **argv, int argc) {
  RedisModule_AutoMemory(ctx); /* the keys opened are closed on return */
  if (argc != (t->structure.advance ? 4 : 3))
    return RedisModule_WrongArity(ctx);
  uint64_t now = 0;
  if (t->structure.advance &&
      !bk_rm_parse_u64(argv[2], 0, UINT64_MAX >> 1, &now))
    return bk_rm_arg_error(ctx, "now_ms", "must be a time in ms >= 0");
  size_t len;
  const char *buf = RedisModule_StringPtrLen(argv[argc - 1], &len);
  char why[WHY_SIZE];
  /* A LOAD from the master (its state after a growth it made) loads here
   * whatever this node's max_alloc_mb. */
  bk_rm_from_master =
      RedisModule_GetContextFlags(ctx) &
      (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING);
  void *nv = value_from_blob(t, buf, len, now, why);
  bk_rm_from_master = false;
  if (!nv) return bk_rm_arg_error(ctx, "blob", why);
  RedisModuleKey *key =
      RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
  if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY &&
      RedisModule_ModuleTypeGetType(key) != t->handle) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    bk_rm_free(t, nv);
    return REDISMODULE_OK;
  }
  RedisModule_ModuleTypeSetValue(key, t->handle, nv);
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int bk_rm_register(RedisModuleCtx *ctx, bk_rm_type *t,
                   const RedisModuleTypeMethods *methods,
                   RedisModuleCmdFunc reserve, RedisModuleCmdFunc load) {
  if (t->reserve.n_params > BK_RM_MAX_PARAMS) return REDISMODULE_ERR;
  RedisModuleTypeMethods m = *methods;
  t->handle = RedisModule_CreateDataType(ctx, t->names.type, BK_RM_ENCVER, &m);
  if (!t->handle) return REDISMODULE_ERR;
  if (RedisModule_CreateCommand(ctx, t->names.reserve, reserve,
                                "write deny-oom", 1, 1, 1) == REDISMODULE_ERR)
    return REDISMODULE_ERR;
  for (size_t i = 0; i < t->n_cmds; i++)
    if (RedisModule_CreateCommand(ctx, t->cmds[i].name, t->cmds[i].fn,
                                  t->cmds[i].flags, 1, 1, 1) == REDISMODULE_ERR)
      return REDISMODULE_ERR;
  return RedisModule_CreateCommand(ctx, t->names.load, load, "write deny-oom",
                                   1, 1, 1);
}
