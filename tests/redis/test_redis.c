/* SPDX-License-Identifier: MIT */
/*
 * The Redis module against real redis-server processes (tests/redis/
 * harness.h): one scenario per run,
 *
 *   test_redis single  MODULE    every command, its errors, explicit-time
 *                                forgetting, DUMP/RESTORE, hostile
 *                                payloads, restart from RDB and from AOF
 *                                with identical answers, a corrupt RDB
 *                                refused with a log line
 *   test_redis replica MODULE    master + replica (full sync, then the
 *                                stream): identical digests; the promoted
 *                                replica answers retries of acknowledged
 *                                ops as duplicates
 *   test_redis cluster MODULE failover|reshard [wait]
 *                                3 masters + 3 replicas, a retry storm over
 *                                many tables, a SIGKILLed master or a
 *                                reshard during it (cluster.c)
 *
 * Exit 77 (ctest SKIP) when redis-server is not installed.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bloomkit/hash.h"
#include "harness.h"

int rh_cluster_scenario(const char *module, const char *kind, bool wait);

/* ---- helpers ------------------------------------------------------------- */

/* [value, applied] of an IDEM.INCBY-style reply. */
static void incr(redisContext *c, const char *table, const char *counter,
                 const char *client, const char *seq, const char *delta,
                 long long want_value, long long want_applied) {
  redisReply *r = rh_cmd(c, "IDEM.INCRBY %s %s %s %s %s", table, counter,
                         client, seq, delta);
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2,
           "IDEM.INCRBY %s %s %s %s %s: %s", table, counter, client, seq, delta,
           r->type == REDIS_REPLY_ERROR ? r->str : "not a 2-element array");
  RH_CHECK(r->element[0]->integer == want_value &&
               r->element[1]->integer == want_applied,
           "IDEM.INCRBY %s %s %s %s %s: [%lld, %lld], expected [%lld, %lld]",
           table, counter, client, seq, delta, r->element[0]->integer,
           r->element[1]->integer, want_value, want_applied);
  freeReplyObject(r);
}

static long long incr_at(redisContext *c, const char *table, long long client,
                         long long seq, long long now) {
  redisReply *r = rh_cmd(c, "IDEM.INCRBYAT %s ctr %lld %lld 1 %lld", table,
                         client, seq, now);
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "INCRBYAT: %s",
           r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
  long long applied = r->element[1]->integer;
  freeReplyObject(r);
  return applied;
}

/* Whether the text field `name` of a name/value INFO reply is `want`. */
static bool info_text_is(redisContext *c, const char *cmd, const char *key,
                         const char *name, const char *want) {
  redisReply *r = rh_cmd(c, "%s %s", cmd, key);
  bool is = false;
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
       i += 2)
    if (strcmp(r->element[i]->str, name) == 0)
      is = r->element[i + 1]->type == REDIS_REPLY_STATUS &&
           strcmp(r->element[i + 1]->str, want) == 0;
  freeReplyObject(r);
  return is;
}

/* The value of field `name` in a name/value INFO reply. */
static long long info_field(redisContext *c, const char *cmd, const char *key,
                            const char *name) {
  redisReply *r = rh_cmd(c, "%s %s", cmd, key);
  RH_CHECK(r->type == REDIS_REPLY_ARRAY, "%s %s: %s", cmd, key,
           r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
  long long v = -1;
  bool found = false;
  for (size_t i = 0; i + 1 < r->elements; i += 2)
    if (strcmp(r->element[i]->str, name) == 0) {
      redisReply *e = r->element[i + 1];
      v = e->type == REDIS_REPLY_INTEGER ? e->integer : atoll(e->str);
      found = true;
    }
  freeReplyObject(r);
  RH_CHECK(found, "%s %s has no field %s", cmd, key, name);
  return v;
}

/* Everything a client can observe of the keys the single-node scenario
 * writes, as one string: values, INFO counts, memberships, digests. */
static void fingerprint(redisContext *c, char *out, size_t cap) {
  size_t pos = 0;
  out[0] = '\0';
  const char *tables[] = {"t1", "t2", "{tag}t3"};
  for (size_t t = 0; t < 3; t++) {
    for (int k = 0; k < 20; k++) {
      redisReply *r = rh_cmd(c, "IDEM.GET %s k%d", tables[t], k);
      pos += (size_t)snprintf(out + pos, cap - pos, "%s.k%d=%lld%s ", tables[t],
                              k, r->integer,
                              r->type == REDIS_REPLY_NIL ? "(nil)" : "");
      freeReplyObject(r);
    }
    pos +=
        (size_t)snprintf(out + pos, cap - pos, "applied=%lld dups=%lld ",
                         info_field(c, "IDEM.INFO", tables[t], "applied"),
                         info_field(c, "IDEM.INFO", tables[t], "duplicates"));
  }
  redisReply *r = rh_cmd(c, "FBF.MEXISTS f1 a b c d e f g h i j");
  for (size_t i = 0; i < r->elements; i++)
    pos +=
        (size_t)snprintf(out + pos, cap - pos, "%lld", r->element[i]->integer);
  freeReplyObject(r);
  r = rh_cmd(c, "CBF.MEXISTS cb a b c d e f g h i j");
  for (size_t i = 0; i < r->elements; i++)
    pos +=
        (size_t)snprintf(out + pos, cap - pos, "%lld", r->element[i]->integer);
  freeReplyObject(r);
  r = rh_cmd(c, "DEBUG DIGEST-VALUE t1 t2 {tag}t3 f1 cb");
  for (size_t i = 0; i < r->elements; i++)
    pos += (size_t)snprintf(out + pos, cap - pos, " %s", r->element[i]->str);
  freeReplyObject(r);
}

static void populate(redisContext *c, int round) {
  const char *tables[] = {"t1", "t2", "{tag}t3"};
  for (int i = 0; i < 200; i++) {
    redisReply *r = rh_cmd(c, "IDEM.INCRBY %s k%d %d %d %d", tables[i % 3],
                           i % 20, round, i, i + 1);
    RH_CHECK(r->type == REDIS_REPLY_ARRAY, "populate: %s",
             r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
    freeReplyObject(r);
    if (i % 7 == 0) { /* a retry */
      r = rh_cmd(c, "IDEM.INCRBY %s k%d %d %d %d", tables[i % 3], i % 20, round,
                 i, i + 1);
      RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->element[1]->integer == 0,
               "a retry was applied");
      freeReplyObject(r);
    }
  }
  redisReply *r = rh_cmd(c, "FBF.ADD f1 a b c %s", round ? "d" : "e");
  freeReplyObject(r);
  freeReplyObject(rh_cmd(c, "CBF.ADD cb a b c %s", round ? "d" : "e"));
  freeReplyObject(rh_cmd(c, "CBF.REM cb %s", round ? "a" : "b"));
}

/* Redis' CRC-64 (Jones, reflected), which DUMP payloads end with: the
 * hostile-payload test re-seals its mutations so they reach the module's
 * loader instead of failing Redis' own checksum. */
static uint64_t crc64_jones(const unsigned char *p, size_t len) {
  uint64_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++)
      crc = crc & 1 ? (crc >> 1) ^ UINT64_C(0x95ac9329ac4bc9b5) : crc >> 1;
  }
  return crc;
}

/* ---- single node ----------------------------------------------------------
 */

/* FBF.RESERVE's FPP is the whole filter's rate: `capacity` items per
 * window at a steady rate for two windows (FBF.ADDAT, 100 items a
 * command), then 10^5 never-added items asked with FBF.MEXISTS. At FPP
 * 0.01 about 1,000 answer 1 (sd 32); accepted 0.85 to 1.15 FPP, 4.7 sd.
 * With each constituent filter sized at FPP instead, it measured 1.33 FPP
 * (bench/redis). */
static void fbf_whole_filter_rate(redisContext *c) {
  const unsigned capacity = 30000, per_cmd = 100, probes = 100000;
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fr %u 60000 FPP 0.01 AT 0", capacity));
  static char items[1000][32], now[24];
  const char *argv[1003];
  size_t lens[1003];
  unsigned cmds = 2 * capacity / per_cmd;
  for (unsigned i = 0; i < cmds; i++) {
    snprintf(now, sizeof now, "%u", i * 120000u / cmds);
    argv[0] = "FBF.ADDAT";
    argv[1] = "fr";
    argv[2] = now;
    for (unsigned j = 0; j < per_cmd; j++) {
      snprintf(items[j], sizeof items[j], "in:%u", i * per_cmd + j);
      argv[3 + j] = items[j];
    }
    for (unsigned j = 0; j < 3 + per_cmd; j++) lens[j] = strlen(argv[j]);
    redisReply *r = redisCommandArgv(c, (int)(3 + per_cmd), argv, lens);
    RH_CHECK(r && r->type == REDIS_REPLY_ARRAY, "FBF.ADDAT fr");
    freeReplyObject(r);
  }
  unsigned positives = (unsigned)rh_fbf_count_present(c, "fr", "out:", probes);
  double rate = (double)positives / probes;
  printf(
      "FBF at FPP 0.01, steady state: %u of %u absent items present "
      "(%.5f)\n",
      positives, probes, rate);
  RH_CHECK(rate >= 0.0085 && rate <= 0.0115, "whole-filter rate %.5f, FPP 0.01",
           rate);
  freeReplyObject(rh_cmd(c, "DEL fr"));
}

/* `per_window` items a window for two windows into an adaptive filter of
 * capacity 6000, window 60 s; returns its constituent filters after. */
static long long adaptive_filters_after(redisContext *c, const char *key,
                                        unsigned per_window) {
  freeReplyObject(
      rh_cmd(c, "FBF.RESERVE %s 6000 60000 FPP 0.01 ADAPTIVE AT 0", key));
  static char items[100][32], now[24];
  const char *argv[103];
  size_t lens[103];
  unsigned cmds = 2 * per_window / 100;
  for (unsigned i = 0; i < cmds; i++) {
    snprintf(now, sizeof now, "%u", i * 120000u / cmds);
    argv[0] = "FBF.ADDAT";
    argv[1] = key;
    argv[2] = now;
    for (unsigned j = 0; j < 100; j++) {
      snprintf(items[j], sizeof items[j], "%s:%u", key, i * 100 + j);
      argv[3 + j] = items[j];
    }
    for (unsigned j = 0; j < 103; j++) lens[j] = strlen(argv[j]);
    redisReply *r = redisCommandArgv(c, 103, argv, lens);
    RH_CHECK(r && r->type == REDIS_REPLY_ARRAY, "FBF.ADDAT %s", key);
    freeReplyObject(r);
  }
  long long filters = info_field(c, "FBF.INFO", key, "filters");
  freeReplyObject(rh_cmd(c, "DEL %s", key));
  return filters;
}

/* ADAPTIVE resizes when the load changes, not at the nominal load: sized
 * for FPP exactly, a filter at its capacity grew at the first ticks (the
 * library grows at 0.9 of the target, at the tick before a refresh). */
static void fbf_adaptive_at_capacity(redisContext *c) {
  long long at_capacity = adaptive_filters_after(c, "fad1", 6000);
  long long at_triple = adaptive_filters_after(c, "fad3", 18000);
  printf(
      "adaptive FBF: %lld filters after two windows at capacity, %lld at "
      "3x capacity\n",
      at_capacity, at_triple);
  RH_CHECK(at_capacity == 7, "at capacity: %lld filters, not 7", at_capacity);
  RH_CHECK(at_triple > 7, "at 3x capacity: %lld filters, no growth", at_triple);
}

/* Reads as of now (docs/redis.md, FBF.EXISTS): a key on the server's
 * clock, an item added, then more than its longest window (350 ms for 300)
 * with no write: FBF.EXISTS and FBF.MEXISTS read 0 on the master (`c`)
 * and on its replica (`rc`, when given, synced before the wait), and the
 * reads change nothing (the key's clock and inserts stay). A key on a
 * clock of its own (FBF.ADDAT times below 2^40 ms) keeps answering as of
 * its latest write (the FBF.ADDAT tests above). */
static void fbf_reads_as_of_now(redisContext *c, redisContext *rc) {
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fnow 100 300"));
  freeReplyObject(rh_cmd(c, "FBF.ADD fnow old"));
  long long clock = info_field(c, "FBF.INFO", "fnow", "now_ms");
  long long inserts =
      info_field(c, "FBF.INFO", "fnow", "inserts_per_filter_sum");
  if (rc) {
    RH_CHECK(rh_int(c, "WAIT 1 20000") == 1, "WAIT for fnow");
    RH_CHECK(rh_int(rc, "FBF.EXISTS fnow old") == 1, "replica: fnow old now");
  }
  RH_CHECK(rh_int(c, "FBF.EXISTS fnow old") == 1, "fnow old, just added");
  rh_sleep_ms(800);
  redisContext *nodes[2] = {c, rc};
  for (int i = 0; i < 2 && nodes[i]; i++) {
    const char *who = i ? "replica" : "master";
    RH_CHECK(rh_int(nodes[i], "FBF.EXISTS fnow old") == 0,
             "%s: an item older than its window reads 0", who);
    redisReply *r = rh_cmd(nodes[i], "FBF.MEXISTS fnow old old");
    RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                 r->element[0]->integer == 0 && r->element[1]->integer == 0,
             "%s: MEXISTS as of now", who);
    freeReplyObject(r);
    RH_CHECK(info_field(nodes[i], "FBF.INFO", "fnow", "now_ms") == clock &&
                 info_field(nodes[i], "FBF.INFO", "fnow",
                            "inserts_per_filter_sum") == inserts,
             "%s: the reads changed nothing", who);
  }
}

/* Pipeline `FBF.ADDAT key at <prefix><i>` for i in [from, to). */
static void fbf_add_many(redisContext *c, const char *key, long long at,
                         const char *prefix, int from, int to) {
  for (int i = from; i < to; i++)
    redisAppendCommand(c, "FBF.ADDAT %s %lld %s%d", key, at, prefix, i);
  for (int i = from; i < to; i++) {
    redisReply *x;
    RH_CHECK(redisGetReply(c, (void **)&x) == REDIS_OK &&
                 x->type == REDIS_REPLY_ARRAY,
             "FBF.ADDAT %s", key);
    freeReplyObject(x);
  }
}

/* How many of `FBF.EXISTS key <prefix><i>`, i in [from, to), answer 1. */
static long fbf_count_exists(redisContext *c, const char *key,
                             const char *prefix, int from, int to) {
  for (int i = from; i < to; i++)
    redisAppendCommand(c, "FBF.EXISTS %s %s%d", key, prefix, i);
  long found = 0;
  for (int i = from; i < to; i++) {
    redisReply *x;
    RH_CHECK(redisGetReply(c, (void **)&x) == REDIS_OK, "FBF.EXISTS %s", key);
    found += x->type == REDIS_REPLY_INTEGER && x->integer == 1;
    freeReplyObject(x);
  }
  return found;
}

/* A key created on first use starts small and grows with its load, never
 * forgetting an id inside its window; RESERVE sizes as it always did. */
static void fbf_first_use_grows(redisContext *c) {
  freeReplyObject(rh_cmd(c, "FBF.ADD seen x"));
  long long one = rh_int(c, "MEMORY USAGE seen");
  RH_CHECK(one <= 65536, "a first-use key with one id takes %lld bytes", one);
  RH_CHECK(info_field(c, "FBF.INFO", "seen", "grows") == 1 &&
               info_field(c, "FBF.INFO", "seen", "stages") == 1,
           "first use: one growing stage");
  /* 10^5 distinct ids at one instant (all inside the window): each is
   * remembered, the key grew, and never-added ids answer 1 at about the
   * target 1e-4 (module argument fpp). 10^5 checks expect 10 false
   * positives; 25 is over 4 standard deviations of the Poisson count
   * (sd ~3.2) above it, and the budget (the live stages' rates summing to
   * at most FPP) already sits under the target. */
  const int n = 100000;
  fbf_add_many(c, "grown", 1000, "id", 0, n);
  RH_CHECK(fbf_count_exists(c, "grown", "id", 0, n) == n,
           "a growing key forgot ids inside its window");
  long stages = (long)info_field(c, "FBF.INFO", "grown", "stages");
  RH_CHECK(stages > 1 && info_field(c, "FBF.INFO", "grown", "capacity") >= n,
           "the key grew (%ld stages)", stages);
  long fp = fbf_count_exists(c, "grown", "no", 0, n);
  RH_CHECK(fp <= 25, "%ld false positives in %d (target 1e-4)", fp, n);
  printf(
      "growing key: %ld stages, %lld bytes for %d ids, %ld false "
      "positives in %d\n",
      stages, rh_int(c, "MEMORY USAGE grown"), n, fp, n);
  /* An RDB round trip keeps the grown key's answers. */
  redisReply *r = rh_cmd(c, "DEBUG DIGEST-VALUE grown");
  char before[64];
  snprintf(before, sizeof before, "%s", r->element[0]->str);
  freeReplyObject(r);
  freeReplyObject(rh_cmd(c, "DEBUG RELOAD"));
  r = rh_cmd(c, "DEBUG DIGEST-VALUE grown");
  RH_CHECK(strcmp(before, r->element[0]->str) == 0, "DEBUG RELOAD changed it");
  freeReplyObject(r);
  RH_CHECK(fbf_count_exists(c, "grown", "id", 0, n) == n &&
               fbf_count_exists(c, "grown", "no", 0, n) == fp,
           "DEBUG RELOAD changed a grown key's answers");
  /* The retired stages go once their ids are older than the window; the
   * ids added in the newest stay until their own window ends. */
  fbf_add_many(c, "grown", 61001, "late", 0, 10);
  RH_CHECK(info_field(c, "FBF.INFO", "grown", "stages") == 1,
           "retired stages dropped after the window");
  RH_CHECK(fbf_count_exists(c, "grown", "late", 0, 10) == 10, "late ids");
  /* RESERVE sizes exactly as before growing keys existed: the module's
   * old first-use size, byte for byte (issue 32). */
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fbig 300000 60000 FPP 0.0001"));
  /* The filter's own bytes are exact; MEMORY USAGE adds Redis' overhead
   * for the key, which depends on the allocator (jemalloc's size classes
   * give 1685656 in all; a sanitizer's allocator, exact sizes, 2 less). */
  RH_CHECK(info_field(c, "FBF.INFO", "fbig", "memory") == 1709472,
           "a RESERVE'd filter's size changed: %lld",
           info_field(c, "FBF.INFO", "fbig", "memory"));
  long long usage = rh_int(c, "MEMORY USAGE fbig");
  RH_CHECK(usage >= 1685656 - 64 && usage <= 1685656 + 64,
           "a RESERVE'd key's size changed: %lld", usage);
  RH_CHECK(info_field(c, "FBF.INFO", "fbig", "grows") == 0, "RESERVE grows");
  /* GROW on RESERVE; with ADAPTIVE it is refused. */
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fgr 100 3000 GROW AT 0"));
  RH_CHECK(info_field(c, "FBF.INFO", "fgr", "grows") == 1 &&
               info_field(c, "FBF.INFO", "fgr", "capacity") == 100,
           "FBF.RESERVE GROW");
  rh_expect_error(c, "cannot create the filter",
                  "FBF.RESERVE fga 100 3000 GROW ADAPTIVE");
}

/* Pipelined IDEM.INCRBYAT table k<i % 10> client seq 1 now for the ops
 * i in [0, n) given by `op`; returns how many were applied (each reply
 * checked to be an answer). */
typedef struct hop {
  long long client, seq, now;
} hop;

static long long incr_many(redisContext *c, const char *table, hop (*op)(int),
                           int n) {
  long long applied = 0;
  for (int done = 0; done < n;) {
    int chunk = n - done < 64 ? n - done : 64;
    for (int j = 0; j < chunk; j++) {
      hop h = op(done + j);
      redisAppendCommand(c, "IDEM.INCRBYAT %s k%d %lld %lld 1 %lld", table,
                         (done + j) % 10, h.client, h.seq, h.now);
    }
    for (int j = 0; j < chunk; j++) {
      redisReply *r = NULL;
      RH_CHECK(redisGetReply(c, (void **)&r) == REDIS_OK && r &&
                   r->type == REDIS_REPLY_ARRAY && r->elements == 2,
               "IDEM.INCRBYAT %s: %s", table,
               r && r->type == REDIS_REPLY_ERROR ? r->str : "no answer");
      applied += r->element[1]->integer;
      freeReplyObject(r);
    }
    done += chunk;
  }
  return applied;
}

/* 50 clients numbering in order, 150 ops each, 2 ms apart (15 s). */
static hop in_order(int i) {
  return (hop){i % 50, i / 50 + 1, 1000 + 2 * (long long)i};
}
/* Retries of every third of those, later (within the 30 s timeout). */
static hop in_order_retry(int i) {
  hop h = in_order(3 * i);
  h.now = 16000 + i;
  return h;
}

/* HYBRID (the default) and WINDOW through the module: a table made on
 * first use stays small while its clients stay inside their windows (no
 * FBF at all), grows its FBF only when a client goes below its window,
 * and still answers a retry of an op that slid out of the window as a
 * duplicate; WINDOW answers an op below the window with TOO_OLD. */
static void single_hybrid(redisContext *c) {
  RH_CHECK(incr_many(c, "th", in_order, 7500) == 7500, "in-order ops applied");
  RH_CHECK(incr_many(c, "th", in_order_retry, 2500) == 0,
           "a retry inside the window was applied");
  long long usage = rh_int(c, "MEMORY USAGE th");
  RH_CHECK(info_text_is(c, "IDEM.INFO", "th", "strategy", "hybrid"), "hybrid");
  RH_CHECK(info_field(c, "IDEM.INFO", "th", "clients") == 50, "clients");
  RH_CHECK(info_field(c, "IDEM.INFO", "th", "window_decided") == 10000,
           "window_decided");
  RH_CHECK(info_field(c, "IDEM.INFO", "th", "below_window") == 0 &&
               info_field(c, "IDEM.INFO", "th", "slid_to_filter") == 0,
           "below_window, slid_to_filter");
  RH_CHECK(info_field(c, "IDEM.INFO", "th", "filter_memory") == 0,
           "an FBF for in-order clients");
  long long win_mem = info_field(c, "IDEM.INFO", "th", "window_memory");
  /* 52 bytes per client at W = 256, and each of the windows' 64 stripes
   * starts with room for a few (34,816 bytes for these 50). */
  RH_CHECK(win_mem > 50 * 52 && win_mem < 65536, "window_memory %lld", win_mem);
  RH_CHECK(usage < 100000, "MEMORY USAGE of an in-order table: %lld", usage);
  /* Client 0 jumps 850 seqs ahead: its applied seqs 1..150 slide out of
   * the window while their retries may still come, into a new FBF. */
  RH_CHECK(incr_at(c, "th", 0, 1000, 17000) == 1, "the jump");
  long long slid = info_field(c, "IDEM.INFO", "th", "slid_to_filter");
  long long filter = info_field(c, "IDEM.INFO", "th", "filter_memory");
  RH_CHECK(slid == 150 && filter > 0, "slid %lld, filter %lld", slid, filter);
  /* The trap: a retry of an op that slid out is still a duplicate. */
  RH_CHECK(incr_at(c, "th", 0, 5, 17001) == 0, "a slid-out retry applied");
  RH_CHECK(incr_at(c, "th", 0, 600, 17002) == 1, "a genuine op below");
  RH_CHECK(info_field(c, "IDEM.INFO", "th", "below_window") == 2,
           "below_window");
  long long grown = rh_int(c, "MEMORY USAGE th");
  RH_CHECK(grown >= usage + filter, "MEMORY USAGE %lld after the FBF (%lld)",
           grown, filter);
  printf(
      "HYBRID: 50 in-order clients, 10,000 ops: MEMORY USAGE %lld bytes, "
      "windows %lld, no FBF; after a client jumped: %lld bytes (FBF %lld)\n",
      usage, win_mem, grown, filter);
  /* The default retry timeout (30 s): client 1's last op (applied at
   * 15,902) retried 29 s later is a duplicate, 40 s later it is new (its
   * window closed). */
  RH_CHECK(incr_at(c, "th", 1, 150, 44902) == 0, "retry within 30 s");
  RH_CHECK(incr_at(c, "th", 1, 150, 84902) == 1, "retry after the timeout");

  /* WINDOW: below the window is TOO_OLD, not applied, propagated. */
  freeReplyObject(rh_cmd(c,
                         "IDEM.RESERVE tw1 RETRY_TIMEOUT 30000 STRATEGY "
                         "window WINDOW 64 AT 0"));
  RH_CHECK(info_text_is(c, "IDEM.INFO", "tw1", "strategy", "window") &&
               info_field(c, "IDEM.INFO", "tw1", "window") == 64,
           "WINDOW 64");
  RH_CHECK(incr_at(c, "tw1", 1, 200, 10) == 1, "window: new");
  rh_expect_error(c, "TOO_OLD seq 100 is below client 1's window",
                  "IDEM.INCRBYAT tw1 ctr 1 100 1 20");
  RH_CHECK(rh_int(c, "IDEM.GET tw1 ctr") == 1, "TOO_OLD applied");
  RH_CHECK(info_field(c, "IDEM.INFO", "tw1", "below_window") == 1,
           "below_window of WINDOW");
  RH_CHECK(incr_at(c, "tw1", 1, 200, 30) == 0, "window: retry");
  RH_CHECK(info_field(c, "IDEM.INFO", "tw1", "filter_memory") == 0,
           "WINDOW has no filter");
  /* The same on the server's clock. */
  freeReplyObject(rh_cmd(c,
                         "IDEM.RESERVE tw2 RETRY_TIMEOUT 30000 STRATEGY "
                         "window WINDOW 64"));
  incr(c, "tw2", "ctr", "1", "200", "1", 1, 1);
  rh_expect_error(c, "TOO_OLD", "IDEM.INCRBY tw2 ctr 1 3 1");
  incr(c, "tw2", "ctr", "1", "200", "1", 1, 0);
  printf("WINDOW: below the window answered TOO_OLD, nothing applied\n");
}

static void single_commands(redisContext *c) {
  /* IDEM: applied, duplicate, new op; values across counters. */
  incr(c, "t0", "a", "1", "1", "5", 5, 1);
  incr(c, "t0", "a", "1", "1", "5", 5, 0);
  incr(c, "t0", "a", "1", "2", "7", 12, 1);
  incr(c, "t0", "b", "2", "1", "-3", -3, 1);
  incr(c, "t0", "a", "2", "1", "100", 12, 0); /* same op id, other counter */
  incr(c, "t0", "a", "18446744073709551615", "18446744073709551615", "1", 13,
       1);
  RH_CHECK(rh_int(c, "IDEM.GET t0 a") == 13, "IDEM.GET");
  redisReply *r = rh_cmd(c, "IDEM.GET t0 nosuch");
  RH_CHECK(r->type == REDIS_REPLY_NIL, "missing counter is nil");
  freeReplyObject(r);
  r = rh_cmd(c, "IDEM.GET nosuchtable a");
  RH_CHECK(r->type == REDIS_REPLY_NIL, "missing table is nil");
  freeReplyObject(r);
  RH_CHECK(info_field(c, "IDEM.INFO", "t0", "applied") == 4, "applied");
  RH_CHECK(info_field(c, "IDEM.INFO", "t0", "duplicates") == 2, "duplicates");
  RH_CHECK(info_field(c, "IDEM.INFO", "t0", "counters") == 2, "counters");
  /* Created with the module defaults: HYBRID, W = 256, retry_timeout
   * 30000 (rh_init; single_hybrid checks the timeout). */
  RH_CHECK(info_text_is(c, "IDEM.INFO", "t0", "strategy", "hybrid"),
           "default strategy");
  RH_CHECK(info_field(c, "IDEM.INFO", "t0", "window") == 256, "window");

  /* IDEM errors name the argument. */
  rh_expect_error(c, "wrong number of arguments", "IDEM.INCRBY t0 a 1 1");
  rh_expect_error(c, "wrong number of arguments", "IDEM.INCRBY t0 a 1 1 1 1");
  rh_expect_error(c, "wrong number of arguments", "IDEM.GET t0");
  rh_expect_error(c, "wrong number of arguments", "IDEM.INFO");
  rh_expect_error(c, "wrong number of arguments", "IDEM.RESERVE t9");
  rh_expect_error(c, "wrong number of arguments", "IDEM.INCRBYAT t0 a 1 1 1");
  rh_expect_error(c, "wrong number of arguments", "IDEM.LOAD t0 1");
  rh_expect_error(c, "invalid client", "IDEM.INCRBY t0 a x 1 1");
  rh_expect_error(c, "invalid client", "IDEM.INCRBY t0 a -1 1 1");
  rh_expect_error(c, "invalid client",
                  "IDEM.INCRBY t0 a 18446744073709551616 1 1");
  rh_expect_error(c, "invalid seq", "IDEM.INCRBY t0 a 1 1.5 1");
  rh_expect_error(c, "invalid delta", "IDEM.INCRBY t0 a 1 3 abc");
  rh_expect_error(c, "invalid delta",
                  "IDEM.INCRBY t0 a 1 3 9223372036854775808");
  rh_expect_error(c, "invalid counter", "IDEM.INCRBY t0 %b 1 3 1", "",
                  (size_t)0);
  rh_expect_error(c, "invalid now_ms", "IDEM.INCRBYAT t0 a 1 3 1 soon");
  incr(c, "t0", "big", "3", "1", "9223372036854775807", 9223372036854775807LL,
       1);
  rh_expect_error(c, "invalid delta", "IDEM.INCRBY t0 big 3 2 1");
  RH_CHECK(rh_int(c, "IDEM.GET t0 big") == 9223372036854775807LL,
           "overflow left the counter");
  incr(c, "t0", "big", "3", "2", "-1", 9223372036854775806LL, 1);
  rh_expect_error(c, "invalid RETRY_TIMEOUT",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 0");
  rh_expect_error(c, "invalid RETRY_TIMEOUT",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT x");
  rh_expect_error(c, "invalid RETRY_TIMEOUT", "IDEM.RESERVE t9 FPP 0.1");
  rh_expect_error(c, "invalid FPP", "IDEM.RESERVE t9 RETRY_TIMEOUT 10 FPP 1");
  rh_expect_error(c, "invalid FPP", "IDEM.RESERVE t9 RETRY_TIMEOUT 10 FPP 0");
  rh_expect_error(c, "invalid FPP", "IDEM.RESERVE t9 RETRY_TIMEOUT 10 FPP nan");
  rh_expect_error(c, "invalid STRATEGY",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 STRATEGY rbf");
  rh_expect_error(c, "invalid CAPACITY",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 CAPACITY 0");
  rh_expect_error(c, "invalid WINDOW",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 WINDOW 100");
  rh_expect_error(c, "invalid WINDOW",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 WINDOW 32");
  rh_expect_error(c, "invalid WINDOW",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 WINDOW 8192");
  rh_expect_error(c, "invalid option",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 COLOR red");
  rh_expect_error(c, "key exists", "IDEM.RESERVE t0 RETRY_TIMEOUT 10");
  rh_expect_error(c, "no such key", "IDEM.INFO nosuchtable");
  rh_expect_error(c, "invalid blob", "IDEM.LOAD t9 1 garbage");
  r = rh_cmd(c, "EXISTS t9");
  RH_CHECK(r->integer == 0, "a failed RESERVE/LOAD created the key");
  freeReplyObject(r);

  /* Wrong type, both ways. */
  freeReplyObject(rh_cmd(c, "SET plain 1"));
  rh_expect_error(c, "WRONGTYPE", "IDEM.INCRBY plain a 1 1 1");
  rh_expect_error(c, "WRONGTYPE", "IDEM.GET plain a");
  rh_expect_error(c, "WRONGTYPE", "FBF.ADD plain a");
  rh_expect_error(c, "WRONGTYPE", "FBF.EXISTS t0 a");
  rh_expect_error(c, "WRONGTYPE", "FBF.INFO t0");
  rh_expect_error(c, "WRONGTYPE", "GET t0");

  /* Forgetting, on explicit time: RETRY_TIMEOUT 3000 -> t = 1000, ids kept
   * at least 3000 ms and at most (N + 2) t = 4000 ms. */
  freeReplyObject(rh_cmd(c,
                         "IDEM.RESERVE tw RETRY_TIMEOUT 3000 FPP 0.001 "
                         "CAPACITY 1000 AT 1000"));
  RH_CHECK(incr_at(c, "tw", 1, 1, 1000) == 1, "first apply");
  RH_CHECK(incr_at(c, "tw", 1, 1, 3999) == 0, "retry within the timeout");
  RH_CHECK(incr_at(c, "tw", 1, 2, 4000) == 1, "another op");
  RH_CHECK(incr_at(c, "tw", 1, 1, 20000) == 1,
           "a retry after the window is new");
  /* Time never goes back: an earlier time is taken as the table's. */
  RH_CHECK(incr_at(c, "tw", 1, 1, 5) == 0, "retry at an earlier time");
  RH_CHECK(info_field(c, "IDEM.INFO", "tw", "now_ms") == 20000, "clock");
  freeReplyObject(rh_cmd(c,
                         "IDEM.RESERVE ta RETRY_TIMEOUT 3000 STRATEGY "
                         "adaptive AT 0"));
  RH_CHECK(incr_at(c, "ta", 7, 7, 10) == 1 && incr_at(c, "ta", 7, 7, 2000) == 0,
           "adaptive table");
  r = rh_cmd(c, "IDEM.INFO ta");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY &&
               strcmp(r->element[1]->str, "adaptive") == 0,
           "adaptive strategy reported");
  freeReplyObject(r);

  /* FBF */
  r = rh_cmd(c, "FBF.ADD f0 a b a");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->integer == 1 && r->element[1]->integer == 1 &&
               r->element[2]->integer == 0,
           "FBF.ADD a b a");
  freeReplyObject(r);
  RH_CHECK(
      rh_int(c, "FBF.EXISTS f0 a") == 1 && rh_int(c, "FBF.EXISTS f0 zz") == 0,
      "FBF.EXISTS");
  RH_CHECK(rh_int(c, "FBF.EXISTS nosuch a") == 0, "EXISTS on a missing key");
  r = rh_cmd(c, "FBF.MEXISTS f0 a zz b");
  RH_CHECK(r->elements == 3 && r->element[0]->integer == 1 &&
               r->element[1]->integer == 0 && r->element[2]->integer == 1,
           "FBF.MEXISTS");
  freeReplyObject(r);
  RH_CHECK(info_field(c, "FBF.INFO", "f0", "window_ms") == 60000, "fbf_window");
  RH_CHECK(info_field(c, "FBF.INFO", "f0", "inserts_per_filter_sum") == 4,
           "each insert goes into future and present");
  rh_expect_error(c, "wrong number of arguments", "FBF.ADD f0");
  rh_expect_error(c, "wrong number of arguments", "FBF.EXISTS f0");
  rh_expect_error(c, "wrong number of arguments", "FBF.EXISTS f0 a b");
  rh_expect_error(c, "wrong number of arguments", "FBF.MEXISTS f0");
  rh_expect_error(c, "wrong number of arguments", "FBF.RESERVE f9 10");
  rh_expect_error(c, "wrong number of arguments", "FBF.ADDAT f0 5");
  rh_expect_error(c, "invalid capacity", "FBF.RESERVE f9 0 1000");
  rh_expect_error(c, "invalid capacity", "FBF.RESERVE f9 -5 1000");
  rh_expect_error(c, "invalid window_ms", "FBF.RESERVE f9 10 0");
  rh_expect_error(c, "invalid window_ms", "FBF.RESERVE f9 10 2000000000000");
  rh_expect_error(c, "invalid FPP", "FBF.RESERVE f9 10 1000 FPP 2");
  rh_expect_error(c, "invalid option", "FBF.RESERVE f9 10 1000 FPP");
  rh_expect_error(c, "invalid option", "FBF.RESERVE f9 10 1000 BIG");
  rh_expect_error(c, "invalid now_ms", "FBF.ADDAT f0 x a");
  rh_expect_error(c, "key exists", "FBF.RESERVE f0 10 1000");
  rh_expect_error(c, "no such key", "FBF.INFO nosuch");
  rh_expect_error(c, "invalid blob", "FBF.LOAD f9 0 garbage");

  /* Forgetting: window 3000 -> t = 500, kept 3000 to 3500 ms. */
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fw 100 3000 FPP 0.001 AT 0"));
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fw 0 x"));
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fw 2999 y"));
  RH_CHECK(rh_int(c, "FBF.EXISTS fw x") == 1, "x within the window");
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fw 5001 z"));
  RH_CHECK(rh_int(c, "FBF.EXISTS fw x") == 0, "x forgotten after the window");
  RH_CHECK(rh_int(c, "FBF.EXISTS fw y") == 1, "y still remembered");
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fv 60 3000 FPP 0.001 AT 0"));
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fv 499 x"));
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fv 3499 y"));
  RH_CHECK(rh_int(c, "FBF.EXISTS fv x") == 1, "x (added at 499) at 3499");
  freeReplyObject(rh_cmd(c, "FBF.ADDAT fv 3500 z"));
  RH_CHECK(rh_int(c, "FBF.EXISTS fv x") == 0,
           "x forgotten at 3500: at most window + window / 6");
  RH_CHECK(info_field(c, "FBF.INFO", "fv", "filters") == 7 &&
               info_field(c, "FBF.INFO", "fv", "refresh_period_ms") == 500,
           "N = 5 past filters, t = window / 6");
  freeReplyObject(rh_cmd(c, "FBF.RESERVE fa 100 3000 ADAPTIVE AT 0"));
  RH_CHECK(info_field(c, "FBF.INFO", "fa", "adaptive") == 1, "adaptive");
  fbf_whole_filter_rate(c);
  fbf_adaptive_at_capacity(c);
  fbf_first_use_grows(c);
  fbf_reads_as_of_now(c, NULL);

  /* CBF: counts, removes, errors. */
  r = rh_cmd(c, "CBF.ADD c0 a b a");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->integer >= 1 && r->element[2]->integer >= 2,
           "CBF.ADD a b a");
  freeReplyObject(r);
  RH_CHECK(
      rh_int(c, "CBF.COUNT c0 a") >= 2 && rh_int(c, "CBF.EXISTS c0 b") == 1,
      "CBF.COUNT / EXISTS");
  r = rh_cmd(c, "CBF.REM c0 b zz");
  RH_CHECK(r->elements == 2 && r->element[0]->integer == 1 &&
               r->element[1]->integer == 0,
           "CBF.REM b zz");
  freeReplyObject(r);
  RH_CHECK(rh_int(c, "CBF.EXISTS c0 b") == 0, "b removed");
  r = rh_cmd(c, "CBF.MEXISTS c0 a b");
  RH_CHECK(r->elements == 2 && r->element[0]->integer == 1 &&
               r->element[1]->integer == 0,
           "CBF.MEXISTS");
  freeReplyObject(r);
  RH_CHECK(rh_int(c, "CBF.EXISTS nosuch a") == 0, "CBF on a missing key");
  freeReplyObject(rh_cmd(c, "CBF.RESERVE c1 1000 FPP 0.01 BITS 8 BLOCKED"));
  r = rh_cmd(c, "CBF.INFO c1");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 18 &&
               r->element[7]->integer == 8 &&
               strcmp(r->element[9]->str, "blocked") == 0,
           "CBF.INFO bits and layout");
  freeReplyObject(r);
  RH_CHECK(info_field(c, "CBF.INFO", "c0", "capacity") == 100000,
           "cbf_capacity default");
  rh_expect_error(c, "wrong number of arguments", "CBF.ADD c0");
  rh_expect_error(c, "wrong number of arguments", "CBF.REM c0");
  rh_expect_error(c, "wrong number of arguments", "CBF.COUNT c0 a b");
  rh_expect_error(c, "wrong number of arguments", "CBF.RESERVE c9");
  rh_expect_error(c, "invalid capacity", "CBF.RESERVE c9 0");
  rh_expect_error(c, "invalid BITS", "CBF.RESERVE c9 10 BITS 5");
  rh_expect_error(c, "invalid FPP", "CBF.RESERVE c9 10 FPP -1");
  rh_expect_error(c, "invalid option", "CBF.RESERVE c9 10 WIDE");
  rh_expect_error(c, "key exists", "CBF.RESERVE c0 10");
  rh_expect_error(c, "WRONGTYPE", "CBF.ADD f0 a");
  rh_expect_error(c, "WRONGTYPE", "FBF.ADD c0 a");
  rh_expect_error(c, "invalid blob", "CBF.LOAD c9 garbage");
  /* No structure larger than max_alloc_mb (64 here): 5 M items at 32-bit
   * counters would take 190 MB (and 2^32 items 165 GB, which with
   * overcommit gets the server killed when the filter is zeroed). */
  rh_expect_error(c, "out of memory", "CBF.RESERVE c9 5000000 BITS 32");
  rh_expect_error(c, "out of memory",
                  "FBF.RESERVE f9 50000000 1000 FPP 0.0001");
  rh_expect_error(c, "out of memory",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10 CAPACITY 20000000 "
                  "STRATEGY fbf");
  /* HYBRID makes an FBF over 4 MiB at once (a smaller one on first need:
   * single_first_need_refused): refused like the fixed FBF's. */
  rh_expect_error(c, "out of memory",
                  "IDEM.RESERVE t9 RETRY_TIMEOUT 10000 CAPACITY 20000000 AT 0");
  RH_CHECK(rh_int(c, "EXISTS t9") == 0, "a refused RESERVE made t9");

  /* Commands leak nothing: 3 x 4000 reads and writes of existing ids and
   * keys leave used_memory where it was, within 64 KiB of allocator noise
   * (a leaked key handle per command, as before the module used
   * RedisModule_AutoMemory, is over 150 bytes: 1.8 MB here). */
  redisReply *mem = rh_cmd(c, "MEMORY USAGE f0");
  freeReplyObject(mem);
  long long used_before = -1, used_after = -1;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < 4000; i++) {
      redisAppendCommand(c, "FBF.EXISTS f0 a");
      redisAppendCommand(c, "FBF.ADD f0 a");
      redisAppendCommand(c, "IDEM.INCRBY t0 a 1 1 5");
    }
    for (int i = 0; i < 3 * 4000; i++) {
      redisReply *x;
      RH_CHECK(redisGetReply(c, (void **)&x) == REDIS_OK, "pipeline");
      freeReplyObject(x);
    }
    r = rh_cmd(c, "INFO memory");
    long long used = atoll(strstr(r->str, "used_memory:") + 12);
    freeReplyObject(r);
    if (pass == 0)
      used_before = used;
    else
      used_after = used;
  }
  RH_CHECK(used_after - used_before < 65536,
           "12000 commands grew memory by %lld", used_after - used_before);

  /* MEMORY USAGE reports the structures, not a constant. */
  long long m_small = rh_int(c, "MEMORY USAGE fw");
  long long m_big = rh_int(c, "MEMORY USAGE fbig");
  RH_CHECK(m_small > 0 && m_big > 10 * m_small, "MEMORY USAGE %lld vs %lld",
           m_small, m_big);
  RH_CHECK(rh_int(c, "MEMORY USAGE t0") > 1000, "MEMORY USAGE table");
}

/* An RDB length (rdb.c's rdbLoadLen): false when it is not one. */
static bool rdb_len(const unsigned char **p, const unsigned char *end,
                    uint64_t *out) {
  if (*p >= end) return false;
  unsigned b = **p;
  size_t need = (b >> 6) == 0 ? 1 : (b >> 6) == 1 ? 2 : b == 0x80 ? 5 : 9;
  if ((b >> 6) == 3 || (b >> 6 == 2 && b > 0x81) || (size_t)(end - *p) < need)
    return false;
  uint64_t v = (b >> 6) == 0 ? (b & 0x3f) : (b >> 6) == 1 ? (b & 0x3f) : 0;
  for (size_t i = 1; i < need; i++) v = v << 8 | (*p)[i];
  *out = v;
  *p += need;
  return true;
}

/* IDEM.LOAD / FBF.LOAD / CBF.LOAD with the blob a DUMP carries (taken out
 * of the payload: module id, [UINT clock], STRING blob; DUMPed without
 * compression): the same clock gives the same value, an earlier clock or
 * a damaged blob is refused and changes nothing. */
/* The golden bk_idem snapshots of version 1 (tests/data, written before
 * client windows): every table the earlier module could have saved loads
 * through IDEM.LOAD as the strategy it was; the strategies the module does
 * not offer are refused. */
/* The golden file `name` of tests/data (beside this file's directory). */
static void data_path(const char *name, char *out, size_t cap) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", __FILE__);
  char *slash = strstr(dir, "redis/test_redis.c");
  RH_CHECK(slash, "where is tests/data (%s)", __FILE__);
  *slash = '\0';
  snprintf(out, cap, "%sdata/%s", dir, name);
}

static void single_load_v1(redisContext *c) {
  const char *files[] = {"idem_v1_fbf-keys.bin", "idem_v1_adaptive-keys.bin",
                         "idem_v1_fbf-empty.bin", "idem_v1_none-keys.bin",
                         "idem_v1_rbf-keys.bin"};
  const char *want[] = {"fbf", "adaptive", "fbf", NULL, NULL};
  for (int i = 0; i < 5; i++) {
    char path[1200];
    data_path(files[i], path, sizeof path);
    FILE *f = fopen(path, "rb");
    RH_CHECK(f, "open %s", path);
    static char blob[1 << 20];
    size_t len = fread(blob, 1, sizeof blob, f);
    fclose(f);
    redisReply *r = rh_cmd(c, "IDEM.LOAD v1 %llu %b",
                           (unsigned long long)1 << 32, blob, len);
    if (want[i]) {
      RH_CHECK(r->type == REDIS_REPLY_STATUS, "IDEM.LOAD %s: %s", files[i],
               r->type == REDIS_REPLY_ERROR ? r->str : "?");
      RH_CHECK(info_text_is(c, "IDEM.INFO", "v1", "strategy", want[i]),
               "%s loaded as another strategy", files[i]);
    } else {
      RH_CHECK(r->type == REDIS_REPLY_ERROR &&
                   strstr(r->str, "a strategy the module does not offer"),
               "IDEM.LOAD %s: %s", files[i],
               r->type == REDIS_REPLY_ERROR ? r->str : "loaded");
    }
    freeReplyObject(r);
    freeReplyObject(rh_cmd(c, "DEL v1"));
  }
  printf("version-1 IDEM snapshots: fbf and adaptive load, none/rbf refused\n");
}

static void single_load_commands(redisContext *c) {
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbcompression no"));
  const char *keys[] = {"t0", "f0", "c0"};
  const char *cmds[] = {"IDEM.LOAD", "FBF.LOAD", "CBF.LOAD"};
  for (int k = 0; k < 3; k++) {
    redisReply *d = rh_cmd(c, "DUMP %s", keys[k]);
    RH_CHECK(d->type == REDIS_REPLY_STRING, "DUMP %s", keys[k]);
    const unsigned char *p = (const unsigned char *)d->str + 1;
    const unsigned char *end = (const unsigned char *)d->str + d->len - 10;
    uint64_t module_id, opcode, clock = 0, len;
    RH_CHECK(rdb_len(&p, end, &module_id) && rdb_len(&p, end, &opcode),
             "DUMP %s: no module value", keys[k]);
    if (k < 2) {
      RH_CHECK(
          opcode == 2 && rdb_len(&p, end, &clock) && rdb_len(&p, end, &opcode),
          "DUMP %s: no clock", keys[k]);
    }
    RH_CHECK(opcode == 5 && rdb_len(&p, end, &len) && len <= (size_t)(end - p),
             "DUMP %s: no blob", keys[k]);
    const char *blob = (const char *)p;
    redisReply *r;
    if (k < 2) {
      r = rh_cmd(c, "%s copy %llu %b", cmds[k], (unsigned long long)clock, blob,
                 (size_t)len);
    } else {
      r = rh_cmd(c, "%s copy %b", cmds[k], blob, (size_t)len);
    }
    RH_CHECK(r->type == REDIS_REPLY_STATUS, "%s: %s", cmds[k],
             r->type == REDIS_REPLY_ERROR ? r->str : "?");
    freeReplyObject(r);
    r = rh_cmd(c, "DEBUG DIGEST-VALUE %s copy", keys[k]);
    RH_CHECK(strcmp(r->element[0]->str, r->element[1]->str) == 0,
             "%s copy differs from %s", cmds[k], keys[k]);
    freeReplyObject(r);
    freeReplyObject(rh_cmd(c, "DEL copy"));
    if (k < 2)
      rh_expect_error(c, "invalid blob: the clock is behind", "%s copy %llu %b",
                      cmds[k], (unsigned long long)clock - 1, blob,
                      (size_t)len);
    char *bad = malloc(len);
    memcpy(bad, blob, len);
    bad[len / 2] ^= 1;
    if (k < 2)
      rh_expect_error(c, "invalid blob", "%s copy %llu %b", cmds[k],
                      (unsigned long long)clock, bad, (size_t)len);
    else
      rh_expect_error(c, "invalid blob", "%s copy %b", cmds[k], bad,
                      (size_t)len);
    free(bad);
    RH_CHECK(rh_int(c, "EXISTS copy") == 0, "a refused LOAD created the key");
    freeReplyObject(d);
  }
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbcompression yes"));
}

/* The module's serialized form of `key` (taken out of a DUMP made without
 * compression, as single_load_commands does) and its clock; malloc'd. */
static char *dump_blob(redisContext *c, const char *key, uint64_t *clock,
                       size_t *blob_len) {
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbcompression no"));
  redisReply *d = rh_cmd(c, "DUMP %s", key);
  RH_CHECK(d->type == REDIS_REPLY_STRING, "DUMP %s", key);
  const unsigned char *p = (const unsigned char *)d->str + 1;
  const unsigned char *end = (const unsigned char *)d->str + d->len - 10;
  uint64_t module_id, opcode, len;
  RH_CHECK(rdb_len(&p, end, &module_id) && rdb_len(&p, end, &opcode) &&
               opcode == 2 && rdb_len(&p, end, clock) &&
               rdb_len(&p, end, &opcode) && opcode == 5 &&
               rdb_len(&p, end, &len) && len <= (size_t)(end - p),
           "DUMP %s: no clock and blob", key);
  char *blob = malloc(len);
  memcpy(blob, p, len);
  *blob_len = len;
  freeReplyObject(d);
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbcompression yes"));
  return blob;
}

static uint64_t get_le64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | (unsigned char)p[i];
  return v;
}
static void put_le64(char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (char)(v >> (8 * i));
}

/* A growing key's chain ("BKFBFKEY", fbf.c) with one field changed and its
 * XXH3-64 trailer recomputed, so only the range and invariant checks stand
 * between it and the key: FBF.LOAD must refuse it. */
static void expect_chain_refused(redisContext *c, const char *blob, size_t len,
                                 uint64_t clock, size_t off, uint64_t value,
                                 const char *what) {
  char *bad = malloc(len);
  memcpy(bad, blob, len);
  put_le64(bad + off, value);
  bk_hash h = {0, 0};
  (void)bk_hash_bytes(BK_HASH_XXH3, 0, bad, len - 8, &h);
  put_le64(bad + len - 8, h.lo);
  redisReply *r = rh_cmd(c, "FBF.LOAD hostile %llu %b",
                         (unsigned long long)clock, bad, len);
  RH_CHECK(r->type == REDIS_REPLY_ERROR, "a chain with %s loaded", what);
  freeReplyObject(r);
  free(bad);
}

/* Growing FBF keys: a chain that grew at time 0 (a reachable state) saves
 * and loads; chains whose fields are in range but no sequence of commands
 * reaches are refused although their checksum matches. */
static void single_grow_chain(redisContext *c) {
  static char items[400][16];
  const char *argv[403];
  size_t lens[403];
  for (int round = 0; round < 2; round++) {
    const char *key = round ? "g1" : "g0";
    const char *at = round ? "1000" : "0";
    freeReplyObject(
        rh_cmd(c, "FBF.RESERVE %s 1 60000 FPP 0.01 GROW AT %s", key, at));
    argv[0] = "FBF.ADDAT";
    argv[1] = key;
    argv[2] = at;
    for (int j = 0; j < 400; j++) {
      snprintf(items[j], sizeof items[j], "g:%d", j);
      argv[3 + j] = items[j];
    }
    for (int j = 0; j < 403; j++) lens[j] = strlen(argv[j]);
    redisReply *r = redisCommandArgv(c, 403, argv, lens);
    RH_CHECK(r && r->type == REDIS_REPLY_ARRAY, "FBF.ADDAT %s", key);
    freeReplyObject(r);
    RH_CHECK(info_field(c, "FBF.INFO", key, "stages") >= 2, "%s did not grow",
             key);
  }
  /* Grown at time 0: the old stage's retired_at is 0. */
  redisReply *d = rh_cmd(c, "DUMP g0");
  redisReply *r = rh_cmd(c, "RESTORE copy 0 %b", d->str, d->len);
  RH_CHECK(r->type == REDIS_REPLY_STATUS, "RESTORE of a chain grown at 0: %s",
           r->type == REDIS_REPLY_ERROR ? r->str : "?");
  freeReplyObject(r);
  freeReplyObject(d);
  freeReplyObject(rh_cmd(c, "DEL copy"));

  uint64_t clock;
  size_t len;
  char *blob = dump_blob(c, "g1", &clock, &len);
  RH_CHECK(len > 96 && memcmp(blob, "BKFBFKEY", 8) == 0, "g1 is not a chain");
  /* header: magic | version 8 | flags 16 | window 24 | fpp 32 | unchecked 40
   * | n_stages 48; stage 0 at 56: capacity | rate | retired_at | length */
  const size_t fpp = 32, unchecked = 40, s0 = 56;
  uint64_t cap0 = get_le64(blob + s0), rate0 = get_le64(blob + s0 + 8);
  size_t s1 = s0 + 32 + (size_t)get_le64(blob + s0 + 24);
  RH_CHECK(s1 + 32 < len, "g1: no second stage");
  /* the unchanged chain, re-sealed, loads */
  r = rh_cmd(c, "FBF.LOAD copy %llu %b", (unsigned long long)clock, blob, len);
  RH_CHECK(r->type == REDIS_REPLY_STATUS, "FBF.LOAD g1's chain: %s",
           r->type == REDIS_REPLY_ERROR ? r->str : "?");
  freeReplyObject(r);
  freeReplyObject(rh_cmd(c, "DEL copy"));
  expect_chain_refused(c, blob, len, clock, 16, 1, "the ADAPTIVE flag");
  expect_chain_refused(c, blob, len, clock, fpp, 0, "FPP 0");
  expect_chain_refused(c, blob, len, clock, unchecked, UINT64_MAX,
                       "2^64 - 1 adds since the last look");
  expect_chain_refused(c, blob, len, clock, s1, 2 * cap0,
                       "a stage not 4x its elder");
  expect_chain_refused(c, blob, len, clock, s0 + 8, get_le64(blob + fpp),
                       "a stage given the whole FPP");
  expect_chain_refused(c, blob, len, clock, s1 + 8, rate0 * 4,
                       "stages over the FPP budget");
  expect_chain_refused(c, blob, len, clock, s0 + 16, clock + 1000,
                       "a stage retired after the key's clock");
  free(blob);
  RH_CHECK(rh_int(c, "EXISTS hostile") == 0, "a refused chain set the key");
  freeReplyObject(rh_cmd(c, "DEL g0 g1"));
  printf("growing FBF chains: reachable ones load, unreachable ones refused\n");
}

static void single_dump_restore(redisContext *c) {
  /* th: HYBRID with windows and its FBF; tw1: WINDOW (single_hybrid). */
  const char *keys[] = {"t0", "f0", "tw", "fw", "c0", "c1", "th", "tw1"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    redisReply *d = rh_cmd(c, "DUMP %s", keys[k]);
    RH_CHECK(d->type == REDIS_REPLY_STRING, "DUMP %s", keys[k]);
    redisReply *r = rh_cmd(c, "RESTORE copy 0 %b", d->str, d->len);
    RH_CHECK(r->type == REDIS_REPLY_STATUS, "RESTORE %s: %s", keys[k],
             r->type == REDIS_REPLY_ERROR ? r->str : "?");
    freeReplyObject(r);
    redisReply *dg = rh_cmd(c, "DEBUG DIGEST-VALUE %s copy", keys[k]);
    RH_CHECK(dg->elements == 2 &&
                 strcmp(dg->element[0]->str, dg->element[1]->str) == 0,
             "RESTOREd %s differs", keys[k]);
    freeReplyObject(dg);
    freeReplyObject(rh_cmd(c, "DEL copy"));

    /* Hostile payloads: flip a byte, fix Redis' checksum, RESTORE. Each
     * must be refused, or load a value equal to the original (Redis
     * LZF-compresses long strings, and a flipped back-reference into a run
     * of zeros decodes to the same bytes), or differ only in the module's
     * clock word (a later clock is a reachable state; at most the 9 bytes
     * of its length encoding). The server must answer afterwards. */
    size_t len = d->len;
    unsigned char *buf = malloc(len);
    int refused = 0, same = 0, changed = 0, tries = 0;
    for (size_t pos = 1; pos + 10 < len; pos += 1 + len / 300) {
      memcpy(buf, d->str, len);
      buf[pos] ^= (unsigned char)(0x5a + pos);
      uint64_t crc = crc64_jones(buf, len - 8);
      for (int b = 0; b < 8; b++)
        buf[len - 8 + b] = (unsigned char)(crc >> (8 * b));
      r = rh_cmd(c, "RESTORE hostile 0 %b REPLACE", buf, len);
      tries++;
      if (r->type == REDIS_REPLY_ERROR) {
        refused++;
      } else {
        redisReply *h = rh_cmd(c, "DEBUG DIGEST-VALUE %s hostile", keys[k]);
        if (strcmp(h->element[0]->str, h->element[1]->str) == 0)
          same++;
        else
          changed++;
        freeReplyObject(h);
      }
      freeReplyObject(r);
    }
    free(buf);
    r = rh_cmd(c, "PING");
    RH_CHECK(r->type == REDIS_REPLY_STATUS,
             "server alive after hostile RESTOREs");
    freeReplyObject(r);
    printf(
        "%s: %d mutated payloads: %d refused, %d loaded unchanged, %d "
        "loaded changed\n",
        keys[k], tries, refused, same, changed);
    RH_CHECK(changed <= 9, "%d mutated %s payloads loaded as another value",
             changed, keys[k]);
    freeReplyObject(d);
  }
  freeReplyObject(rh_cmd(c, "DEL hostile"));
}

static void single_restart(rh_node *n, bool aof) {
  redisContext *c = rh_connect(n->port, 5000);
  RH_CHECK(c, "connect");
  populate(c, 0);
  if (aof) {
    /* The rewrite emits IDEM.LOAD / FBF.LOAD (no RDB preamble); the writes
     * after it are logged as explicit-time commands. */
    freeReplyObject(rh_cmd(c, "BGREWRITEAOF"));
    for (int i = 0; i < 200; i++) {
      long long progress = 0;
      redisReply *r = rh_cmd(c, "INFO persistence");
      char *p = strstr(r->str, "aof_rewrite_in_progress:");
      progress = p ? atoll(p + 24) : 0;
      char *s = strstr(r->str, "aof_rewrite_scheduled:");
      if (s) progress += atoll(s + 22);
      freeReplyObject(r);
      if (!progress) break;
      rh_sleep_ms(50);
    }
  }
  populate(c, 1);
  char before[16384], after[16384];
  fingerprint(c, before, sizeof before);
  if (!aof) freeReplyObject(rh_cmd(c, "SAVE"));
  redisFree(c);
  rh_kill(n, SIGKILL);
  rh_restart(n);
  c = rh_connect(n->port, 5000);
  fingerprint(c, after, sizeof after);
  RH_CHECK(strcmp(before, after) == 0,
           "%s restart changed the answers:\n%s\n%s", aof ? "AOF" : "RDB",
           before, after);
  /* Retries of what was applied before the restart are duplicates. */
  redisReply *r = rh_cmd(c, "IDEM.INCRBY t1 k0 1 0 1");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->element[1]->integer == 0,
           "a retry after the %s restart was applied", aof ? "AOF" : "RDB");
  freeReplyObject(r);
  printf("%s restart: identical answers (%zu bytes of fingerprint)\n",
         aof ? "AOF" : "RDB", strlen(before));
  redisFree(c);
}

/* A corrupt IDEM payload in the RDB file: the server refuses to load it,
 * with the module's log line, and does not crash. */
static void single_corrupt_rdb(rh_node *n) {
  redisContext *c = rh_connect(n->port, 5000);
  freeReplyObject(rh_cmd(c, "FLUSHALL"));
  populate(c, 0);
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbchecksum no"));
  freeReplyObject(rh_cmd(c, "CONFIG SET rdbcompression no"));
  freeReplyObject(rh_cmd(c, "SAVE"));
  redisFree(c);
  rh_kill(n, SIGKILL);
  char path[700];
  snprintf(path, sizeof path, "%s/dump.rdb", n->dir);
  FILE *f = fopen(path, "r+b");
  RH_CHECK(f, "open %s", path);
  static unsigned char rdb[1 << 24];
  size_t len = fread(rdb, 1, sizeof rdb, f);
  /* The library's blobs start with the magic "BKIT"; damage a parameter
   * byte of the first one (the checksum-free RDB does not notice). */
  unsigned char *magic = memmem(rdb, len, "BKIT", 4);
  RH_CHECK(magic, "no bloomkit blob in the RDB file");
  magic[30] ^= 0x55;
  fseek(f, 0, SEEK_SET);
  fwrite(rdb, 1, len, f);
  fclose(f);
  RH_CHECK(rh_restart_expect_exit(n, 10000),
           "the server loaded a corrupt RDB file");
  RH_CHECK(rh_log_contains(n, "bloomkit: refusing a corrupt"),
           "no log line from the module");
  RH_CHECK(!rh_log_contains(n, "crashed by signal"), "the server crashed");
  printf("corrupt RDB: refused with the module's log line\n");
}

/* An RDB file the module wrote before client windows (3edb093, Redis
 * 7.0.15, RDB encoding 2 of the module, bk_idem snapshots of version 1):
 * tests/data/redis_idem_v1.rdb holds "old" (FBF) and "olda" (adaptive),
 * each with ops (client 7, seq i, delta i on c<i % 3>; client 8, seq i,
 * delta 1 on c) for i = 1..10 at 1000 + i ms. It loads at startup, answers
 * as then, and a retry of its ops is a duplicate. */
static void single_old_rdb(rh_node *k) {
  rh_kill(k, SIGKILL);
  char src[1200], dst[700];
  data_path("redis_idem_v1.rdb", src, sizeof src);
  snprintf(dst, sizeof dst, "%s/dump.rdb", k->dir);
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  RH_CHECK(in && out, "copy %s to %s", src, dst);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;)
    RH_CHECK(fwrite(buf, 1, n, out) == n, "write %s", dst);
  fclose(in);
  fclose(out);
  rh_set_module_args("");
  rh_restart(k);
  redisContext *c = rh_connect(k->port, 5000);
  RH_CHECK(c, "connect");
  RH_CHECK(rh_int(c, "IDEM.GET old c0") == 18 &&
               rh_int(c, "IDEM.GET old c1") == 22 &&
               rh_int(c, "IDEM.GET old c2") == 15 &&
               rh_int(c, "IDEM.GET olda c") == 10,
           "the old RDB's counters");
  RH_CHECK(info_text_is(c, "IDEM.INFO", "old", "strategy", "fbf") &&
               info_text_is(c, "IDEM.INFO", "olda", "strategy", "adaptive") &&
               info_field(c, "IDEM.INFO", "old", "now_ms") == 1010,
           "the old RDB's tables");
  redisReply *r = rh_cmd(c, "IDEM.INCRBYAT old c1 7 4 4 2000");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 22 &&
               r->element[1]->integer == 0,
           "a retry of an op in the old RDB");
  freeReplyObject(r);
  r = rh_cmd(c, "IDEM.INCRBYAT olda c 8 11 1 2000");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 11 &&
               r->element[1]->integer == 1,
           "a new op on a table of the old RDB");
  freeReplyObject(r);
  redisFree(c);
  printf("an RDB file of the module before client windows loads\n");
}

/* HYBRID makes its FBF (at most 4 MiB) on first need: on a node whose
 * max_alloc_mb (1) is below the default's 1.95 MB it is refused then, the
 * op with it (nothing applied), while the windows go on deciding. */
static void single_first_need_refused(rh_node *k) {
  rh_kill(k, SIGKILL);
  rh_set_module_args("max_alloc_mb 1");
  rh_restart(k);
  redisContext *c = rh_connect(k->port, 5000);
  freeReplyObject(rh_cmd(c, "IDEM.RESERVE t9 RETRY_TIMEOUT 10000 AT 0"));
  RH_CHECK(incr_at(c, "t9", 1, 1000, 1) == 1, "HYBRID without its FBF");
  rh_expect_error(c, "out of memory", "IDEM.INCRBYAT t9 ctr 1 1 1 2");
  RH_CHECK(rh_int(c, "IDEM.GET t9 ctr") == 1 &&
               info_field(c, "IDEM.INFO", "t9", "filter_memory") == 0,
           "a refused FBF changed the table");
  RH_CHECK(incr_at(c, "t9", 1, 1001, 3) == 1, "HYBRID after a refused FBF");
  redisFree(c);
}

static int scenario_single(void) {
  const char *plain[] = {NULL};
  rh_node *n = rh_start(plain);
  redisContext *c = rh_connect(n->port, 5000);
  single_commands(c);
  single_hybrid(c);
  single_dump_restore(c);
  single_load_commands(c);
  single_load_v1(c);
  single_grow_chain(c);
  redisFree(c);
  single_restart(n, false);
  rh_kill(n, SIGKILL);

  const char *aof[] = {"--appendonly",
                       "yes",
                       "--appendfsync",
                       "always",
                       "--aof-use-rdb-preamble",
                       "no",
                       NULL};
  rh_node *m = rh_start(aof);
  single_restart(m, true);
  rh_kill(m, SIGKILL);

  rh_node *k = rh_start(plain);
  single_corrupt_rdb(k);

  /* Bad module arguments fail the module's load, with a log line naming
   * the argument; the module's defaults come from good ones. */
  const char *bad[][2] = {{"retry_timeout 0", "retry_timeout"},
                          {"fpp 1.5", "fpp"},
                          {"strategy rbf", "strategy"},
                          {"window 100", "window"},
                          {"window 8192", "window"},
                          {"color red", "color"},
                          {"fpp", "name value pairs"}};
  char rdb[700];
  snprintf(rdb, sizeof rdb, "%s/dump.rdb", k->dir);
  remove(rdb);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    FILE *log = fopen(k->log, "w"); /* this start's lines only */
    if (log) fclose(log);
    rh_set_module_args(bad[i][0]);
    RH_CHECK(rh_restart_expect_exit(k, 10000),
             "the server started with module arguments '%s'", bad[i][0]);
    RH_CHECK(rh_log_contains(k, bad[i][1]), "no log line naming '%s'",
             bad[i][1]);
  }
  rh_set_module_args(
      "retry_timeout 1234 fbf_window 999 cbf_capacity 77 "
      "strategy adaptive");
  rh_restart(k);
  c = rh_connect(k->port, 5000);
  redisReply *r;
  freeReplyObject(rh_cmd(c, "IDEM.INCRBY d x 1 1 1"));
  freeReplyObject(rh_cmd(c, "FBF.ADD d2 x"));
  freeReplyObject(rh_cmd(c, "CBF.ADD d3 x"));
  RH_CHECK(info_field(c, "IDEM.INFO", "d", "window_ms") >= 1234 &&
               info_field(c, "IDEM.INFO", "d", "window_ms") < 1240,
           "retry_timeout argument");
  r = rh_cmd(c, "IDEM.INFO d");
  RH_CHECK(strcmp(r->element[1]->str, "adaptive") == 0, "strategy argument");
  freeReplyObject(r);
  RH_CHECK(info_field(c, "FBF.INFO", "d2", "window_ms") == 999,
           "fbf_window argument");
  RH_CHECK(info_field(c, "CBF.INFO", "d3", "capacity") == 77,
           "cbf_capacity argument");
  redisFree(c);
  /* The module's defaults but W (ops_per_period 100,000: an FBF of about
   * 2 MB, which IDEM tables made on first use all had before HYBRID): a
   * table of in-order clients has no FBF, and makes it when a client goes
   * below its window. */
  rh_kill(k, SIGKILL);
  rh_set_module_args("window 128");
  rh_restart(k);
  c = rh_connect(k->port, 5000);
  for (int i = 0; i < 1000; i++)
    freeReplyObject(rh_cmd(c, "IDEM.INCRBY e x %d %d 1", i % 100, i / 100));
  RH_CHECK(rh_int(c, "IDEM.GET e x") == 1000, "first-use table's ops");
  RH_CHECK(info_text_is(c, "IDEM.INFO", "e", "strategy", "hybrid") &&
               info_field(c, "IDEM.INFO", "e", "window") == 128,
           "window argument");
  long long small = rh_int(c, "MEMORY USAGE e");
  RH_CHECK(
      small < 100000 && info_field(c, "IDEM.INFO", "e", "filter_memory") == 0,
      "a first-use table of in-order clients: %lld bytes", small);
  freeReplyObject(rh_cmd(c, "IDEM.INCRBY e x 0 100000 1"));
  freeReplyObject(rh_cmd(c, "IDEM.INCRBY e x 0 5 1"));
  long long big = rh_int(c, "MEMORY USAGE e");
  RH_CHECK(
      info_field(c, "IDEM.INFO", "e", "below_window") == 1 && big > 1000000,
      "the FBF made on first need: %lld bytes", big);
  printf(
      "first use at the module's defaults: %lld bytes with 100 in-order "
      "clients, %lld once one went below its window\n",
      small, big);
  redisFree(c);
  single_old_rdb(k);
  single_first_need_refused(k);
  printf(
      "module arguments: bad ones refused with a log line, good ones used\n");
  printf("single node: ok\n");
  return 0;
}

/* ---- master + replica ---------------------------------------------------- */

/* Until the replica's link to its master is up (its full sync done). */
static void wait_synced(redisContext *rc) {
  uint64_t deadline = rh_now_ms() + 30000;
  for (bool up = false; !up;) {
    RH_CHECK(rh_now_ms() < deadline, "the replica did not sync");
    redisReply *r = rh_cmd(rc, "INFO replication");
    up = strstr(r->str, "master_link_status:up") != NULL;
    freeReplyObject(r);
    if (!up) rh_sleep_ms(50);
  }
}

static int scenario_replica(void) {
  const char *quick_sync[] = {"--repl-diskless-sync-delay", "0", NULL};
  rh_node *master = rh_start(quick_sync);
  redisContext *mc = rh_connect(master->port, 5000);
  /* Before the replica exists: it gets these through the RDB full sync. */
  long long ops = 0;
  static bool acked[900];
  for (int i = 0; i < 300; i++, ops++) {
    acked[i] = true;
    redisReply *r =
        rh_cmd(mc, "IDEM.INCRBY {r}%d c%d 1 %d 1", i % 5, i % 13, i);
    RH_CHECK(r->type == REDIS_REPLY_ARRAY, "write");
    freeReplyObject(r);
  }
  freeReplyObject(rh_cmd(mc, "FBF.ADD ff a b c"));
  /* A key grown through two stages before the sync (the RDB carries the
   * chain), then further through the stream. */
  fbf_add_many(mc, "fgrow", 1000, "g", 0, 6000);
  char port[16];
  snprintf(port, sizeof port, "%d", master->port);
  const char *rargs[] = {"--replicaof", "127.0.0.1", port, NULL};
  rh_node *replica = rh_start(rargs);
  redisContext *rc = rh_connect(replica->port, 5000);
  /* The full sync (an RDB of the module's types) done before the stream. */
  wait_synced(rc);
  /* Then the stream: explicit creations, applied ops, retries, adds. */
  freeReplyObject(rh_cmd(mc, "CBF.RESERVE cfb 1000 FPP 0.01 BITS 8 BLOCKED"));
  freeReplyObject(rh_cmd(mc, "FBF.RESERVE fa 100 3000 ADAPTIVE"));
  freeReplyObject(
      rh_cmd(mc, "IDEM.RESERVE {r}ta RETRY_TIMEOUT 5000 STRATEGY adaptive"));
  freeReplyObject(rh_cmd(mc, "CBF.ADD cfb p q"));
  freeReplyObject(rh_cmd(mc, "FBF.ADD fa p q"));
  freeReplyObject(rh_cmd(mc, "IDEM.INCRBY {r}ta p 9 9 9"));
  for (int i = 300; i < 900; i++, ops++) {
    int seq = i % 4 == 0 ? i - 150 : i; /* every 4th is a retry */
    redisReply *r =
        rh_cmd(mc, "IDEM.INCRBY {r}%d c%d 1 %d 1", seq % 5, seq % 13, seq);
    RH_CHECK(r->type == REDIS_REPLY_ARRAY, "write");
    RH_CHECK(r->element[1]->integer == (i % 4 != 0), "op %d: applied %lld", i,
             r->element[1]->integer);
    acked[seq] = true;
    freeReplyObject(r);
    if (i % 50 == 0) freeReplyObject(rh_cmd(mc, "FBF.ADD ff x%d", i));
    if (i % 30 == 0)
      freeReplyObject(rh_cmd(mc, "CBF.ADD cf y%d y%d", i, i + 1));
    if (i % 90 == 0) freeReplyObject(rh_cmd(mc, "CBF.REM cf y%d", i - 30));
  }
  fbf_add_many(mc, "fgrow", 2000, "g", 6000, 30000);
  /* A replica behind by 300 ms: it runs the stream on a later clock of
   * its own, yet every write at the master's time (most of them came
   * verbatim, the time only when the master's millisecond moved), so
   * the digests below still match. A WINDOW table's TOO_OLD too. */
  freeReplyObject(
      rh_cmd(mc, "IDEM.RESERVE {r}tw RETRY_TIMEOUT 30000 STRATEGY window"));
  kill(replica->pid, SIGSTOP);
  for (int i = 0; i < 300; i++) {
    freeReplyObject(rh_cmd(mc, "IDEM.INCRBY {r}tw c 7 %d 1", 1000 + i));
    freeReplyObject(rh_cmd(mc, "IDEM.INCRBY {r}1 late%d 8 %d 1", i % 7, i));
    if (i % 100 == 0) rh_sleep_ms(100);
  }
  rh_expect_error(mc, "TOO_OLD", "IDEM.INCRBY {r}tw c 7 5 1");
  rh_sleep_ms(100);
  kill(replica->pid, SIGCONT);
  /* A write that fails after moving the table's clock (an overflow)
   * propagates nothing: the next write must carry its time. The table's
   * clock is ahead of the wall clock, so IDEM.INCRBY runs at it. */
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  long long future =
      (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000 + 1000000000LL;
  freeReplyObject(
      rh_cmd(mc, "IDEM.RESERVE {r}tf RETRY_TIMEOUT 30000 AT %lld", future));
  freeReplyObject(rh_cmd(mc, "IDEM.INCRBY {r}tf big 1 1 9223372036854775807"));
  rh_expect_error(mc, "overflow", "IDEM.INCRBYAT {r}tf big 1 2 1 %lld",
                  future + 10);
  freeReplyObject(rh_cmd(mc, "IDEM.INCRBY {r}tf x 1 3 1"));
  long long replicas = rh_int(mc, "WAIT 1 20000");
  RH_CHECK(replicas == 1, "WAIT: %lld replicas", replicas);
  redisReply *dm = rh_cmd(mc, "DEBUG DIGEST");
  redisReply *dr = rh_cmd(rc, "DEBUG DIGEST");
  RH_CHECK(strcmp(dm->str, dr->str) == 0,
           "replica differs from master: %s vs %s", dm->str, dr->str);
  freeReplyObject(dm);
  freeReplyObject(dr);
  RH_CHECK(info_field(mc, "IDEM.INFO", "{r}1", "now_ms") ==
                   info_field(rc, "IDEM.INFO", "{r}1", "now_ms") &&
               info_field(rc, "IDEM.INFO", "{r}tf", "now_ms") == future + 10 &&
               info_field(rc, "IDEM.INFO", "{r}tw", "below_window") == 1,
           "the replica's clock or windows differ");
  fbf_reads_as_of_now(mc, rc);

  /* Promote the replica; the master is gone. */
  rh_kill(master, SIGKILL);
  redisFree(mc);
  freeReplyObject(rh_cmd(rc, "REPLICAOF NO ONE"));
  long long dup = 0, reapplied = 0;
  for (int i = 0; i < 900; i++) {
    if (!acked[i]) continue;
    redisReply *r =
        rh_cmd(rc, "IDEM.INCRBY {r}%d c%d 1 %d 1", i % 5, i % 13, i);
    RH_CHECK(r->type == REDIS_REPLY_ARRAY, "retry on the promoted replica: %s",
             r->type == REDIS_REPLY_ERROR ? r->str : "?");
    if (r->element[1]->integer)
      reapplied++;
    else
      dup++;
    freeReplyObject(r);
  }
  long long total = 0;
  for (int t = 0; t < 5; t++)
    for (int k = 0; k < 13; k++) {
      redisReply *r = rh_cmd(rc, "IDEM.GET {r}%d c%d", t, k);
      if (r->type == REDIS_REPLY_INTEGER) total += r->integer;
      freeReplyObject(r);
    }
  printf(
      "replica promoted: %lld retries of acknowledged ops, %lld duplicates, "
      "%lld re-applied; counters sum %lld (ops %lld)\n",
      dup + reapplied, dup, reapplied, total, ops);
  RH_CHECK(reapplied == 0, "%lld retries re-applied on the promoted replica",
           reapplied);
  RH_CHECK(total == dup, "counters sum %lld, expected %lld distinct ops", total,
           dup);
  redisReply *r = rh_cmd(rc, "IDEM.INCRBY {r}0 c0 1 100000 1");
  RH_CHECK(r->type == REDIS_REPLY_ARRAY && r->element[1]->integer == 1,
           "a new op on the promoted replica");
  freeReplyObject(r);
  RH_CHECK(
      rh_int(rc, "FBF.EXISTS ff x850") == 1 && rh_int(rc, "FBF.EXISTS ff a"),
      "FBF on the promoted replica");
  RH_CHECK(fbf_count_exists(rc, "fgrow", "g", 0, 30000) == 30000,
           "the promoted replica forgot ids of a growing key");
  RH_CHECK(info_field(rc, "FBF.INFO", "fgrow", "stages") > 2,
           "the growing key did not grow on the replica");
  RH_CHECK(rh_int(rc, "CBF.COUNT cf y841") >= 1 &&
               rh_int(rc, "CBF.EXISTS cf y900") == 0,
           "CBF on the promoted replica");
  redisFree(rc);
  printf("master + replica: ok\n");
  return 0;
}

/* ---- growth refused on the master ---------------------------------------
 * A first-use FBF key's growth is decided again by each replica as it
 * executes FBF.ADDAT. When the master's memory limit (max_alloc_mb, a
 * node's own setting) refuses a stage that a replica's limit allows, the
 * replica must not grow where the master did not: the master then
 * replicates its state (FBF.LOAD) instead of the adds. */
static int scenario_replica_grow(void) {
  rh_set_module_args("fpp 0.0001 max_alloc_mb 1");
  const char *quick_sync[] = {"--repl-diskless-sync-delay", "0", NULL};
  rh_node *master = rh_start(quick_sync);
  redisContext *mc = rh_connect(master->port, 5000);
  char port[16];
  snprintf(port, sizeof port, "%d", master->port);
  rh_set_module_args("fpp 0.0001 max_alloc_mb 64");
  const char *rargs[] = {"--replicaof", "127.0.0.1", port, NULL};
  rh_node *replica = rh_start(rargs);
  redisContext *rc = rh_connect(replica->port, 5000);
  wait_synced(rc);
  /* 2 10^5 ids at once: stages of 1000, 4000, 16000 and 64000 ids fit in
   * 1 MiB allocations, the next (256000 ids, ~1.7 MB of lanes) does not. */
  fbf_add_many(mc, "g", 1000, "x", 0, 200000);
  long long replicas = rh_int(mc, "WAIT 1 20000");
  RH_CHECK(replicas == 1, "WAIT: %lld replicas", replicas);
  long long stages_m = info_field(mc, "FBF.INFO", "g", "stages");
  long long stages_r = info_field(rc, "FBF.INFO", "g", "stages");
  RH_CHECK(stages_m == 4,
           "the master holds %lld stages, expected 4 (its "
           "limit refusing the fifth)",
           stages_m);
  RH_CHECK(stages_r == stages_m, "replica %lld stages, master %lld", stages_r,
           stages_m);
  redisReply *dm = rh_cmd(mc, "DEBUG DIGEST-VALUE g");
  redisReply *dr = rh_cmd(rc, "DEBUG DIGEST-VALUE g");
  RH_CHECK(dm->type == REDIS_REPLY_ARRAY && dr->type == REDIS_REPLY_ARRAY &&
               dm->elements == 1 && dr->elements == 1 &&
               strcmp(dm->element[0]->str, dr->element[0]->str) == 0,
           "the replica's key differs from the master's");
  freeReplyObject(dm);
  freeReplyObject(dr);
  RH_CHECK(fbf_count_exists(rc, "g", "x", 0, 200000) == 200000,
           "the replica forgot ids the master holds");
  redisFree(rc);
  redisFree(mc);
  printf("master + replica, growth refused on the master: replica equal\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: test_redis single|replica|replica_grow MODULE\n"
            "       test_redis cluster MODULE failover|reshard [wait]\n");
    return 2;
  }
  const char *scenario = argv[1], *module = argv[2];
  if (strcmp(scenario, "cluster") == 0) {
    if (argc < 4) return 2;
    return rh_cluster_scenario(module, argv[3],
                               argc > 4 && strcmp(argv[4], "wait") == 0);
  }
  rh_init(getenv("BK_REDIS_SERVER"), getenv("BK_REDIS_CLI"), module,
          "retry_timeout 30000 fpp 0.0001 ops_per_period 2000 max_alloc_mb 64");
  if (strcmp(scenario, "single") == 0) return scenario_single();
  if (strcmp(scenario, "replica") == 0) return scenario_replica();
  if (strcmp(scenario, "replica_grow") == 0) return scenario_replica_grow();
  fprintf(stderr, "unknown scenario %s\n", scenario);
  return 2;
}
