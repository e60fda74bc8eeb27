/* SPDX-License-Identifier: MIT */
/*
 * The bloomkit Redis module's entry point: RedisModule_OnLoad parses the
 * loadmodule arguments into the module-level defaults and registers the
 * IDEM (idempotent counter tables, idem.c), FBF (forgetful Bloom filters,
 * fbf.c) and CBF (counting Bloom filters, cbf.c) data types and commands. Also
 * the helpers every command shares (rm.h); what every data type shares is
 * in type.c.
 */
#define BK_RM_MAIN
#include "redis/rm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bk_rm_defaults bk_rm_config = {
    .retry_timeout = 30000,
    .fpp = 0.0001,
    .ops_per_period = 100000,
    .strategy = BK_IDEM_HYBRID,
    .window = BK_IDEM_WINDOW_DEFAULT,
    .fbf_capacity = 1000,
    .fbf_window = 60000,
    .cbf_capacity = 100000,
    .max_alloc = UINT64_C(1) << 30,
};

/* bloomkit's allocations go through Redis' allocator: they count in INFO
 * memory and maxmemory. TryAlloc returns NULL rather than aborting, but
 * with memory overcommit a huge request succeeds and the kernel kills the
 * server when bloomkit zeroes it (a CBF.RESERVE of 2^32 items at 32-bit
 * counters asks for 165 GB): so no single allocation may exceed
 * max_alloc_mb (default 1 GiB, a filter of ~10^9 ids at 1 %), and a larger
 * structure is a BK_ENOMEM error reply. */
bool bk_rm_from_master;
static void *rm_alloc(void *ctx, size_t size) {
  (void)ctx;
  if (size > bk_rm_config.max_alloc && !bk_rm_from_master) return NULL;
  return RedisModule_TryAlloc(size);
}
static void *rm_realloc(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  if (size > bk_rm_config.max_alloc && !bk_rm_from_master) return NULL;
  return RedisModule_Realloc(ptr, size);
}
static void rm_free(void *ctx, void *ptr) {
  (void)ctx;
  RedisModule_Free(ptr);
}
const bk_allocator bk_rm_allocator = {rm_alloc, rm_realloc, rm_free, NULL};

int bk_rm_arg_error(RedisModuleCtx *ctx, const char *name, const char *what) {
  char msg[256];
  snprintf(msg, sizeof msg, "ERR invalid %s: %s", name, what);
  return RedisModule_ReplyWithError(ctx, msg);
}

static bool parse_u64_text(const char *p, size_t len, uint64_t lo, uint64_t hi,
                           uint64_t *out) {
  if (len == 0 || len > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (p[i] < '0' || p[i] > '9') return false;
    unsigned d = (unsigned)(p[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool bk_rm_parse_u64(RedisModuleString *s, uint64_t lo, uint64_t hi,
                     uint64_t *out) {
  size_t len;
  const char *p = RedisModule_StringPtrLen(s, &len);
  return parse_u64_text(p, len, lo, hi, out);
}

static bool parse_fpp_text(const char *p, size_t len, double *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, p, len);
  buf[len] = '\0';
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || *end || !(v > 0.0 && v < 1.0)) return false;
  *out = v;
  return true;
}

bool bk_rm_parse_fpp(RedisModuleString *s, double *out) {
  size_t len;
  const char *p = RedisModule_StringPtrLen(s, &len);
  return parse_fpp_text(p, len, out);
}

bool bk_rm_is(RedisModuleString *s, const char *keyword) {
  size_t len;
  const char *p = RedisModule_StringPtrLen(s, &len);
  return len == strlen(keyword) && strncasecmp(p, keyword, len) == 0;
}

uint64_t bk_rm_clock(uint64_t last) {
  long long ms = RedisModule_Milliseconds();
  uint64_t now = ms > 0 ? (uint64_t)ms : 0;
  return now > last ? now : last;
}

/* loadmodule bloomkit.so [retry_timeout ms] [fpp p] [ops_per_period n]
 *                        [strategy hybrid|window|fbf|adaptive] [window w]
 *                        [fbf_capacity n]
 *                        [fbf_window ms] [cbf_capacity n]
 *                        [max_alloc_mb n] */
static int parse_module_args(RedisModuleCtx *ctx, RedisModuleString **argv,
                             int argc) {
  if (argc % 2) {
    RedisModule_Log(ctx, "warning",
                    "bloomkit: module arguments come in name value pairs");
    return REDISMODULE_ERR;
  }
  for (int i = 0; i < argc; i += 2) {
    RedisModuleString *name = argv[i], *value = argv[i + 1];
    bool ok;
    if (bk_rm_is(name, "retry_timeout"))
      ok = bk_rm_parse_u64(value, 1, BK_RM_MAX_MS, &bk_rm_config.retry_timeout);
    else if (bk_rm_is(name, "fpp"))
      ok = bk_rm_parse_fpp(value, &bk_rm_config.fpp);
    else if (bk_rm_is(name, "ops_per_period"))
      ok = bk_rm_parse_u64(value, 1, BK_RM_MAX_CAPACITY,
                           &bk_rm_config.ops_per_period);
    else if (bk_rm_is(name, "strategy"))
      ok = bk_rm_idem_strategy(value, &bk_rm_config.strategy);
    else if (bk_rm_is(name, "window"))
      ok =
          bk_rm_parse_u64(value, 1, BK_IDEM_WINDOW_MAX, &bk_rm_config.window) &&
          bk_rm_idem_window_ok(bk_rm_config.window);
    else if (bk_rm_is(name, "fbf_capacity"))
      ok = bk_rm_parse_u64(value, 1, BK_RM_MAX_CAPACITY,
                           &bk_rm_config.fbf_capacity);
    else if (bk_rm_is(name, "fbf_window"))
      ok = bk_rm_parse_u64(value, 1, BK_RM_MAX_MS, &bk_rm_config.fbf_window);
    else if (bk_rm_is(name, "max_alloc_mb")) {
      uint64_t mb;
      ok = bk_rm_parse_u64(value, 1, UINT64_C(1) << 24, &mb);
      if (ok) bk_rm_config.max_alloc = mb << 20;
    } else if (bk_rm_is(name, "cbf_capacity"))
      ok = bk_rm_parse_u64(value, 1, BK_RM_MAX_CAPACITY,
                           &bk_rm_config.cbf_capacity);
    else {
      RedisModule_Log(ctx, "warning", "bloomkit: unknown module argument '%s'",
                      RedisModule_StringPtrLen(name, NULL));
      return REDISMODULE_ERR;
    }
    if (!ok) {
      RedisModule_Log(ctx, "warning",
                      "bloomkit: invalid value '%s' for module argument '%s'",
                      RedisModule_StringPtrLen(value, NULL),
                      RedisModule_StringPtrLen(name, NULL));
      return REDISMODULE_ERR;
    }
  }
  return REDISMODULE_OK;
}

/* The one symbol the module exports (symbols are hidden by default). */
__attribute__((visibility("default"))) int RedisModule_OnLoad(
    RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
__attribute__((visibility("default"))) int RedisModule_OnLoad(
    RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (RedisModule_Init(ctx, "bloomkit", 1, REDISMODULE_APIVER_1) ==
      REDISMODULE_ERR)
    return REDISMODULE_ERR;
  if (parse_module_args(ctx, argv, argc) == REDISMODULE_ERR)
    return REDISMODULE_ERR;
  /* Loaders check every read (RedisModule_IsIOError), so diskless
   * replication may stream RDB data straight into the keyspace. */
  RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);
  if (bk_rm_idem_init(ctx) == REDISMODULE_ERR) return REDISMODULE_ERR;
  if (bk_rm_fbf_init(ctx) == REDISMODULE_ERR) return REDISMODULE_ERR;
  if (bk_rm_cbf_init(ctx) == REDISMODULE_ERR) return REDISMODULE_ERR;
  return REDISMODULE_OK;
}
