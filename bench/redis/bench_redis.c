/* SPDX-License-Identifier: MIT */
/*
 * bloomkit_bench_redis: the Redis module against what Redis users do today,
 * on one redis-server started by the benchmark on a free loopback port
 * (tests/redis/harness.h; killed at exit), driven by a hiredis client.
 *
 * Throughput, at pipeline depth 1 and 16:
 *   incr/depth:D    IDEM.INCRBY {b}t c<i % 1000> 1 <seq> 1 (every op new,
 *                   so every one is checked, recorded and applied) against
 *                   INCRBY c<i % 1000> 1. The table is the module's
 *                   default strategy, HYBRID, reserved for the rate the
 *                   benchmark reaches (2 M ops per 10 s period, fpp 0.001:
 *                   29 MiB of filter once made): one client sending far
 *                   more than W = 256 ops per retry timeout, so every seq
 *                   slides out of its window into the FBF while its retry
 *                   may still come (HYBRID's dearest in-order path);
 *                   table_fpp reports the FBF's estimated fpp after the
 *                   run.
 *   incr_fbf/depth:D the same on a table of STRATEGY fbf (every op checked
 *                   and inserted in the FBF), the module's default before
 *                   HYBRID.
 *   add/depth:D     FBF.ADD {b}f id<i> (every id new) against
 *                   SET id<i> 1 NX PX 60000 (a key per id that expires
 *                   after the window: SET NX with a per-key expiry)
 *   exists/depth:D  FBF.EXISTS {b}f id<j> against EXISTS id<j> (j over ids
 *                   added before)
 * The pair is timed interleaved in the same benchmark (each batch runs both
 * sides, alternating which goes first) with the wall clock, because the
 * work happens in the server, not in the client whose CPU time Google
 * Benchmark measures. Counters: module_kops, redis_kops (thousand ops/s),
 * ratio = module / redis throughput, inv_ratio = redis / module, which the
 * targets bound (IDEM.INCRBY >= 0.9x INCRBY at depth 1, >= 0.8x at depth
 * 16: inv_ratio <= 1 / 0.9, 1 / 0.8).
 *
 * Memory per remembered id, memory/fpp:P: ids arrive at a steady rate and
 * are remembered for a 60 s window. The FBF is sized for C = 300,000 ids
 * per window (FBF.RESERVE's capacity; 6 refresh periods of 10 s) and gets
 * 2C ids over two windows of its own time (FBF.ADDAT), ending in steady
 * state holding the last window's C; the SET approach holds one key per id
 * of the window, C keys. Bytes per id = growth of INFO used_memory / C.
 * Counters: fbf_bytes_per_id, set_bytes_per_id, fbf_over_set (the target:
 * <= 1/20), memory_usage_fbf (MEMORY USAGE of the filter key), and the
 * false positive rate the filter has at that point: fbf_fpp_measured (the
 * share of 10^6 never-added ids FBF.MEXISTS calls present) and
 * fbf_fpp_estimate (FBF.INFO's).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../shim.h"
#include "harness.h"

static redisContext *conn;
static char module_path[1024];
static uint64_t seq_next = 1, fbf_ids = 0, set_ids = 0;

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef enum kind { K_INCR, K_ADD, K_EXISTS, K_INCR_FBF } kind;

typedef struct pair_arg {
  kind which;
  int depth;
} pair_arg;

/* Append one command of `which`, module side or plain Redis side. */
static void append(kind which, bool module, uint64_t i) {
  char a[40], b[32];
  switch (which) {
    case K_INCR:
    case K_INCR_FBF:
      snprintf(a, sizeof a, "c%" PRIu64, i % 1000);
      if (module) {
        snprintf(b, sizeof b, "%" PRIu64, seq_next++);
        redisAppendCommand(conn, "IDEM.INCRBY %s %s 1 %s 1",
                           which == K_INCR ? "{b}t" : "{b}tf", a, b);
      } else {
        redisAppendCommand(conn, "INCRBY %s 1", a);
      }
      break;
    case K_ADD: /* a new id each time, one sequence per side */
      if (module) {
        snprintf(a, sizeof a, "fid%012" PRIu64, fbf_ids++);
        redisAppendCommand(conn, "FBF.ADD {b}f %s", a);
      } else {
        snprintf(a, sizeof a, "sid%012" PRIu64, set_ids++);
        redisAppendCommand(conn, "SET %s 1 NX PX 60000", a);
      }
      break;
    case K_EXISTS: /* ids added before (all of them when none were) */
      if (module) {
        snprintf(a, sizeof a, "fid%012" PRIu64, fbf_ids ? i % fbf_ids : i);
        redisAppendCommand(conn, "FBF.EXISTS {b}f %s", a);
      } else {
        snprintf(a, sizeof a, "sid%012" PRIu64, set_ids ? i % set_ids : i);
        redisAppendCommand(conn, "EXISTS %s", a);
      }
      break;
  }
}

/* Run `n` commands of one side at pipeline depth `depth`; wall seconds. */
static double run_side(kind which, bool module, uint64_t n, int depth,
                       bool *failed) {
  double t0 = wall_s();
  for (uint64_t done = 0; done < n;) {
    uint64_t chunk = n - done < (uint64_t)depth ? n - done : (uint64_t)depth;
    for (uint64_t j = 0; j < chunk; j++) append(which, module, done + j);
    for (uint64_t j = 0; j < chunk; j++) {
      redisReply *r = NULL;
      if (redisGetReply(conn, (void **)&r) != REDIS_OK || !r ||
          r->type == REDIS_REPLY_ERROR)
        *failed = true;
      if (r) freeReplyObject(r);
    }
    done += chunk;
  }
  return wall_s() - t0;
}

static void bench_pair(bk_bench_state *st, void *varg) {
  const pair_arg *arg = varg;
  if (!conn) {
    bk_bench_skip(st, "no redis-server");
    return;
  }
  double t_module = 0, t_redis = 0;
  uint64_t ops = 0, n, round = 0;
  bool failed = false;
  while ((n = bk_bench_batch(st)) != 0) {
    bool module_first = round++ % 2 == 0;
    if (module_first) {
      t_module += run_side(arg->which, true, n, arg->depth, &failed);
      t_redis += run_side(arg->which, false, n, arg->depth, &failed);
    } else {
      t_redis += run_side(arg->which, false, n, arg->depth, &failed);
      t_module += run_side(arg->which, true, n, arg->depth, &failed);
    }
    ops += n;
  }
  if (failed) {
    bk_bench_skip(st, "a command failed");
    return;
  }
  double module_ops = (double)ops / t_module, redis_ops = (double)ops / t_redis;
  bk_bench_counter(st, "module_kops", module_ops / 1e3);
  bk_bench_counter(st, "redis_kops", redis_ops / 1e3);
  bk_bench_counter(st, "ratio", module_ops / redis_ops);
  bk_bench_counter(st, "inv_ratio", redis_ops / module_ops);
  if (arg->which == K_INCR || arg->which == K_INCR_FBF) {
    /* The table's estimated fpp after the run: at or below its 0.001
     * target when the benchmark stayed within the table's design rate. */
    redisReply *r =
        rh_cmd(conn, "IDEM.INFO %s", arg->which == K_INCR ? "{b}t" : "{b}tf");
    for (size_t i = 0; i + 1 < r->elements; i += 2)
      if (strcmp(r->element[i]->str, "fpp_estimate") == 0)
        bk_bench_counter(st, "table_fpp", atof(r->element[i + 1]->str));
    freeReplyObject(r);
  }
}

static long long used_memory(void) {
  redisReply *r = rh_cmd(conn, "INFO memory");
  char *p = strstr(r->str, "used_memory:");
  long long v = p ? atoll(p + 12) : 0;
  freeReplyObject(r);
  return v;
}

/* Insert `count` ids with `cmd` at depth 64: a format taking one id, or
 * with `span` > 0 a time (ms, spread evenly over [0, span)) and an id. */
static void insert_ids(const char *fmt, const char *prefix, uint64_t count,
                       uint64_t span) {
  for (uint64_t done = 0; done < count;) {
    uint64_t chunk = count - done < 64 ? count - done : 64;
    for (uint64_t j = 0; j < chunk; j++) {
      char id[40];
      snprintf(id, sizeof id, "%s%014" PRIu64, prefix, done + j);
      if (span)
        redisAppendCommand(conn, fmt,
                           (unsigned long long)((done + j) * span / count), id);
      else
        redisAppendCommand(conn, fmt, id);
    }
    for (uint64_t j = 0; j < chunk; j++) {
      redisReply *r = NULL;
      RH_CHECK(redisGetReply(conn, (void **)&r) == REDIS_OK && r &&
                   r->type != REDIS_REPLY_ERROR,
               "insert %s", fmt);
      freeReplyObject(r);
    }
    done += chunk;
  }
}

#define MEM_CAPACITY 300000u /* ids per window */
#define MEM_IDS MEM_CAPACITY

#define MEM_PROBES 1000000u /* absent ids asked after the fill */

typedef struct memory_result {
  bool done;
  double fbf, set, usage, fpp_measured, fpp_estimate;
} memory_result;

/* The share of MEM_PROBES never-added ids FBF.MEXISTS calls present. */
static double measured_fpp(const char *key) {
  return (double)rh_fbf_count_present(conn, key, "absent:", MEM_PROBES) /
         MEM_PROBES;
}

/* FBF.INFO's fpp_estimate of `key`. */
static double estimated_fpp(const char *key) {
  redisReply *r = rh_cmd(conn, "FBF.INFO %s", key);
  double v = -1;
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
       i += 2)
    if (strcmp(r->element[i]->str, "fpp_estimate") == 0)
      v = atof(r->element[i + 1]->str);
  freeReplyObject(r);
  return v;
}

/* Measure once: Google Benchmark calls a body several times while it
 * settles the iteration count, and the figures do not depend on it. */
static void measure_memory(const char *fpp, memory_result *out) {
  freeReplyObject(rh_cmd(conn, "FLUSHALL"));
  long long m0 = used_memory();
  freeReplyObject(
      rh_cmd(conn, "FBF.RESERVE {m}f %u 60000 FPP %s AT 0", MEM_CAPACITY, fpp));
  /* Two windows of ids at a steady rate (120 s of the filter's time): the
   * filter ends in steady state, remembering the last window's MEM_IDS,
   * its oldest filter holding two periods (after one window it would
   * hold one, and its false positives be far below the steady rate). */
  insert_ids("FBF.ADDAT {m}f %llu %s", "fbf:", 2 * MEM_IDS, 120000);
  long long m1 = used_memory();
  long long usage = rh_int(conn, "MEMORY USAGE {m}f");
  out->fpp_measured = measured_fpp("{m}f");
  out->fpp_estimate = estimated_fpp("{m}f");
  freeReplyObject(rh_cmd(conn, "FLUSHALL"));
  long long m2 = used_memory();
  insert_ids("SET %s 1 NX PX 60000", "set:", MEM_IDS, 0);
  long long m3 = used_memory();
  freeReplyObject(rh_cmd(conn, "FLUSHALL"));
  out->fbf = (double)(m1 - m0) / MEM_IDS;
  out->set = (double)(m3 - m2) / MEM_IDS;
  out->usage = (double)usage;
  out->done = true;
}

static memory_result memory_results[3];

static void bench_memory(bk_bench_state *st, void *varg) {
  const char *fpp = varg;
  if (!conn) {
    bk_bench_skip(st, "no redis-server");
    return;
  }
  memory_result *res = &memory_results[fpp[4] == '1'   ? 0
                                       : fpp[5] == '1' ? 1
                                                       : 2];
  if (!res->done) measure_memory(fpp, res);
  uint64_t n;
  while ((n = bk_bench_batch(st)) != 0) bk_bench_sink_u64(n);
  bk_bench_counter(st, "fbf_bytes_per_id", res->fbf);
  bk_bench_counter(st, "set_bytes_per_id", res->set);
  bk_bench_counter(st, "fbf_over_set", res->fbf / res->set);
  bk_bench_counter(st, "memory_usage_fbf", res->usage);
  bk_bench_counter(st, "fbf_fpp_measured", res->fpp_measured);
  bk_bench_counter(st, "fbf_fpp_estimate", res->fpp_estimate);
}

static pair_arg pairs[4][2];
static const char *fpps[] = {"0.01", "0.001", "0.0001"};

static void register_all(void) {
  const char *names[] = {"incr", "add", "exists", "incr_fbf"};
  const char *labels[] = {"IDEM.INCRBY vs INCRBY", "FBF.ADD vs SET NX PX",
                          "FBF.EXISTS vs EXISTS",
                          "IDEM.INCRBY (STRATEGY fbf) vs INCRBY"};
  char name[64], label[96];
  for (int k = 0; k < 4; k++)
    for (int d = 0; d < 2; d++) {
      pairs[k][d] = (pair_arg){(kind)k, d ? 16 : 1};
      snprintf(name, sizeof name, "redis/%s/depth:%d", names[k], d ? 16 : 1);
      bk_bench_opts opts = {.group = "redis", .min_time = 0.3};
      bk_bench_register(name, bench_pair, &pairs[k][d], &opts);
      snprintf(label, sizeof label, "%s, depth %d (redis / module ops/s)",
               labels[k], d ? 16 : 1);
      if (k == K_INCR)
        bk_bench_target_counter(label, name, "inv_ratio", d ? 1 / 0.8 : 1 / 0.9,
                                "ratio");
    }
  for (int f = 0; f < 3; f++) {
    snprintf(name, sizeof name, "redis/memory/fpp:%s", fpps[f]);
    bk_bench_opts opts = {.group = "redis memory", .min_time = 0.01};
    bk_bench_register(name, bench_memory, (void *)fpps[f], &opts);
    snprintf(label, sizeof label,
             "FBF bytes per remembered id / SET NX PX's, fpp %s", fpps[f]);
    bk_bench_target_counter(label, name, "fbf_over_set", 1.0 / 20,
                            "fbf_bytes_per_id");
  }
  bk_bench_note(
      "redis/*: one redis-server on loopback, one hiredis client; module and "
      "Redis sides timed interleaved with the wall clock in each benchmark "
      "(counters module_kops, redis_kops, ratio = module / Redis). "
      "redis/memory: INFO used_memory growth per id, 300,000 ids of a 60 s "
      "window (FBF.RESERVE capacity 300,000, window 60 s).");
}

int main(int argc, char **argv) {
  const char *module = getenv("BK_REDIS_MODULE");
  snprintf(module_path, sizeof module_path, "%s",
           module ? module : BK_REDIS_MODULE_DEFAULT);
  rh_init(getenv("BK_REDIS_SERVER"), getenv("BK_REDIS_CLI"), module_path,
          "retry_timeout 30000 fpp 0.001");
  const char *extra[] = {NULL};
  rh_node *node = rh_start(extra);
  conn = rh_connect(node->port, 10000);
  RH_CHECK(conn, "connect");
  /* The FBF of the add/exists pairs: 3M ids per 60 s window. */
  freeReplyObject(rh_cmd(conn, "FBF.RESERVE {b}f 3000000 60000 FPP 0.001"));
  /* The IDEM table sized for the rate the benchmark drives it at (up to
   * ~200,000 new ops/s, 2 M per 10 s period of a 30 s retry timeout: 29
   * MiB of filter), so it runs at its design fill, not overloaded. */
  freeReplyObject(rh_cmd(conn,
                         "IDEM.RESERVE {b}t RETRY_TIMEOUT 30000 "
                         "CAPACITY 2000000 FPP 0.001"));
  freeReplyObject(rh_cmd(conn,
                         "IDEM.RESERVE {b}tf RETRY_TIMEOUT 30000 "
                         "CAPACITY 2000000 FPP 0.001 STRATEGY fbf"));
  int status = bk_bench_main(argc, argv, register_all);
  redisFree(conn);
  return status;
}
