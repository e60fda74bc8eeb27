/* SPDX-License-Identifier: MIT */
/*
 * The Redis Cluster scenario of test_redis: 3 masters + 3 replicas made by
 * `redis-cli --cluster create ... --cluster-replicas 1`, and a retry storm
 * of idempotent increments over 64 tables (hash tags spread them over the
 * slots) from 16 simulated clients. Every op has its own counter, so its
 * final value says exactly how often it was applied. A client retries
 *   - every op whose reply it did not get (timeout, connection error,
 *     CLUSTERDOWN, or with `wait` a WAIT that found no replica), and
 *   - a quarter of the acknowledged ops, 0-300 ms later (lost acks),
 * all well within the tables' retry timeout (30 s).
 * During the storm either one master is killed with SIGKILL (its replica
 * takes over after cluster-node-timeout) or `redis-cli --cluster reshard`
 * moves 4000 slots between masters (MIGRATE: the module's DUMP/RESTORE).
 * Before the kill, the master's replica is stopped (SIGSTOP) and its link
 * cut for 500 ms, and it is resumed right after the kill: a replica
 * lagging behind (a slow link, a partition), so the master acknowledges
 * writes the replica does not have when it is promoted, as asynchronous
 * replication allows. The killed node is restarted (empty: no
 * persistence) once its replica reports itself master, never before.
 *
 * Reported: ops, retries, acknowledged ops, acknowledged ops lost (final
 * value 0), retries of acknowledged ops re-applied (answered "applied"),
 * genuine updates dropped (an op's first send answered "duplicate"),
 * redirections, and how the tables (HYBRID, the module's default) decided:
 * by a client window or, below it, by the FBF. Asserted: with WAIT 1
 * after each write, lost = 0 and re-applied = 0; for a reshard (no node
 * lost) also without WAIT; no genuine update dropped, in every run; no op
 * is ever applied more often than it was sent; every op was acknowledged
 * in the end. Without WAIT, a failover may lose acknowledged writes: Redis
 * replicates asynchronously, and the figures say how many.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int rh_cluster_scenario(const char *module, const char *kind, bool wait);

#define N_TABLES 64
#define N_CLIENTS 16
#define MAX_OPS 400000

typedef struct op {
  uint16_t table, client;
  uint32_t seq;
  uint8_t acked;
  uint8_t sends;
  uint64_t retry_at; /* 0: no retry scheduled */
} op;

static op *ops;
static uint32_t n_ops;
static uint32_t next_seq[N_CLIENTS];
static pid_t helper_pid;
/* Ops with a retry scheduled, in the order they were scheduled (delays are
 * short and alike, so this is nearly time order). */
static uint32_t *queue;
static size_t q_head, q_tail;
#define Q_CAP (4u * MAX_OPS)

static void schedule(uint32_t i, uint64_t at) {
  ops[i].retry_at = at;
  if (q_tail - q_head < Q_CAP) queue[q_tail++ % Q_CAP] = i;
}

static void kill_helper(void) {
  if (helper_pid > 0) {
    kill(helper_pid, SIGKILL);
    waitpid(helper_pid, NULL, 0);
    helper_pid = 0;
  }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Run redis-cli with `args` (NULL-terminated), output to `log`; wait for
 * it unless `background`. Returns its exit status (or 0 in background). */
static int run_cli(const char *const *args, const char *log, bool background) {
  const char *argv[64];
  int argc = 0;
  argv[argc++] = rh_cli();
  for (int i = 0; args[i] && argc < 63; i++) argv[argc++] = args[i];
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
    FILE *f = freopen(log, "a", stdout);
    (void)f;
    dup2(1, 2);
    execv(rh_cli(), (char *const *)argv);
    _exit(127);
  }
  if (background) {
    helper_pid = pid;
    return 0;
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool field_is(const char *info, const char *field, const char *value) {
  const char *p = strstr(info, field);
  if (!p) return false;
  p += strlen(field);
  return strncmp(p, value, strlen(value)) == 0;
}

/* Every live node says the cluster is ok and all slots are served. */
static bool cluster_ok(rh_node **nodes, int n) {
  for (int i = 0; i < n; i++) {
    if (nodes[i]->pid <= 0) continue;
    redisContext *c = rh_connect(nodes[i]->port, 1000);
    if (!c) return false;
    redisReply *r = redisCommand(c, "CLUSTER INFO");
    bool ok = r && r->type == REDIS_REPLY_STRING &&
              field_is(r->str, "cluster_state:", "ok") &&
              field_is(r->str, "cluster_slots_ok:", "16384");
    if (r) freeReplyObject(r);
    redisFree(c);
    if (!ok) return false;
  }
  return true;
}

static void wait_cluster_ok(rh_node **nodes, int n, int ms) {
  uint64_t deadline = rh_now_ms() + (uint64_t)ms;
  while (!cluster_ok(nodes, n)) {
    RH_CHECK(rh_now_ms() < deadline, "the cluster did not become ok");
    rh_sleep_ms(100);
  }
}

/* The role ("master"/"slave") of a node and its replica count. */
static bool is_master_with_replica(int port) {
  redisContext *c = rh_connect(port, 1000);
  if (!c) return false;
  redisReply *r = redisCommand(c, "INFO replication");
  bool ok =
      r && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:master") &&
      strstr(r->str, "connected_slaves:1") && strstr(r->str, "state=online");
  if (r) freeReplyObject(r);
  redisFree(c);
  return ok;
}

/* Whether the node on `port` answers INFO as a master. */
static bool is_master(int port) {
  redisContext *c = rh_connect(port, 1000);
  if (!c) return false;
  redisReply *r = redisCommand(c, "INFO replication");
  bool ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:master");
  if (r) freeReplyObject(r);
  redisFree(c);
  return ok;
}

/* The index of the node replicating the master on `port`, or -1. */
static int replica_of(rh_node **nodes, int n, int port) {
  char want[32];
  snprintf(want, sizeof want, "master_port:%d\r\n", port);
  for (int i = 0; i < n; i++) {
    redisContext *c = rh_connect(nodes[i]->port, 1000);
    if (!c) continue;
    redisReply *r = redisCommand(c, "INFO replication");
    bool match = r && r->type == REDIS_REPLY_STRING &&
                 strstr(r->str, "role:slave") && strstr(r->str, want);
    if (r) freeReplyObject(r);
    redisFree(c);
    if (match) return i;
  }
  return -1;
}

static char *node_id(int port) {
  redisContext *c = rh_connect(port, 1000);
  RH_CHECK(c, "connect %d", port);
  redisReply *r = rh_cmd(c, "CLUSTER MYID");
  char *id = strdup(r->str);
  freeReplyObject(r);
  redisFree(c);
  return id;
}

typedef struct stats {
  uint64_t ops, retries, acked, lost, reapplied, overcount, unacked_end;
  uint64_t wait_short;
  uint64_t dropped; /* first sends answered "duplicate": never applied */
} stats;

/* Send op i once; updates its state and the stats. */
static void send_op(rh_cluster *cl, uint32_t i, bool wait, stats *st,
                    bool retry) {
  op *o = &ops[i];
  char table[32], counter[32], client[16], seq[16];
  snprintf(table, sizeof table, "{tb%u}", o->table);
  snprintf(counter, sizeof counter, "o%u:%u", o->client, o->seq);
  snprintf(client, sizeof client, "%u", o->client);
  snprintf(seq, sizeof seq, "%u", o->seq);
  const char *argv[] = {"IDEM.INCRBY", table, counter, client, seq, "1"};
  size_t lens[6];
  for (int a = 0; a < 6; a++) lens[a] = strlen(argv[a]);
  if (retry) st->retries++;
  if (o->sends < 255) o->sends++;
  long long replicas = -1;
  uint64_t now = rh_now_ms();
  redisReply *r =
      rh_cluster_cmd(cl, table, 6, argv, lens, wait ? 1 : 0, &replicas);
  bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
  if (ok && retry && o->acked && r->element[1]->integer == 1) st->reapplied++;
  /* An op's first send cannot have been applied before: "duplicate" is a
   * genuine update dropped (a false positive of the FBF path). */
  if (ok && !retry && r->element[1]->integer == 0) st->dropped++;
  if (ok && wait && replicas < 1) {
    st->wait_short++;
    ok = false; /* not durable: the client does not take it as done */
  }
  if (r) freeReplyObject(r);
  if (!ok) {
    schedule(i, now + 50 + rng() % 100);
    rh_sleep_ms(5);
    return;
  }
  if (!o->acked) {
    o->acked = 1;
    st->acked++;
  }
  /* A lost acknowledgement: the client retries a quarter of its ops. */
  o->retry_at = 0;
  if (!retry && rng() % 4 == 0) schedule(i, now + rng() % 300);
}

/* Retries due now; returns how many were sent. */
static uint32_t retry_due(rh_cluster *cl, bool wait, stats *st, uint64_t now) {
  uint32_t sent = 0;
  while (q_head < q_tail && sent < 32 && rh_now_ms() < now + 50) {
    uint32_t i = queue[q_head % Q_CAP];
    if (!ops[i].retry_at) { /* done since */
      q_head++;
      continue;
    }
    if (ops[i].retry_at > now) break;
    q_head++;
    send_op(cl, i, wait, st, true);
    sent++;
  }
  return sent;
}

int rh_cluster_scenario(const char *module, const char *kind, bool wait) {
  bool failover = strcmp(kind, "failover") == 0;
  RH_CHECK(failover || strcmp(kind, "reshard") == 0, "kind %s", kind);
  rh_init(getenv("BK_REDIS_SERVER"), getenv("BK_REDIS_CLI"), module,
          "retry_timeout 30000 fpp 0.0001 ops_per_period 5000");
  atexit(kill_helper);
  const char *extra[] = {"--cluster-enabled",
                         "yes",
                         "--cluster-config-file",
                         "nodes.conf",
                         "--cluster-node-timeout",
                         "1000",
                         "--cluster-replica-validity-factor",
                         "0",
                         "--repl-diskless-sync",
                         "yes",
                         "--repl-diskless-sync-delay",
                         "0",
                         NULL};
  rh_node *nodes[6];
  int ports[6];
  for (int i = 0; i < 6; i++) {
    nodes[i] = rh_start(extra);
    ports[i] = nodes[i]->port;
  }
  char addr[6][32], log[600];
  const char *args[16];
  int a = 0;
  args[a++] = "--cluster";
  args[a++] = "create";
  for (int i = 0; i < 6; i++) {
    snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", ports[i]);
    args[a++] = addr[i];
  }
  args[a++] = "--cluster-replicas";
  args[a++] = "1";
  args[a++] = "--cluster-yes";
  args[a] = NULL;
  snprintf(log, sizeof log, "%s/cluster-cli.log", rh_tmpdir());
  RH_CHECK(run_cli(args, log, false) == 0, "redis-cli --cluster create failed");
  wait_cluster_ok(nodes, 6, 20000);
  /* Every master has its replica in sync before the storm. */
  uint64_t deadline = rh_now_ms() + 20000;
  for (;;) {
    int masters = 0;
    for (int i = 0; i < 6; i++) masters += is_master_with_replica(ports[i]);
    if (masters == 3) break;
    RH_CHECK(rh_now_ms() < deadline, "replicas did not sync (%d)", masters);
    rh_sleep_ms(100);
  }

  rh_cluster cl;
  rh_cluster_init(&cl, ports, 6, 1000);
  RH_CHECK(rh_cluster_refresh(&cl), "CLUSTER SLOTS");
  ops = calloc(MAX_OPS, sizeof *ops);
  stats st = {0};
  queue = calloc(Q_CAP, sizeof *queue);
  uint64_t start = rh_now_ms(), event_at = start + 2000;
  uint64_t storm_ms = failover ? 7000 : 8000;
  bool event_done = false, helper_running = false;
  int victim = -1, lagging = -1;
  uint64_t next_role_check = 0;
  while (rh_now_ms() - start < storm_ms || helper_running) {
    uint64_t now = rh_now_ms();
    if (failover && lagging < 0 && now >= event_at - 500) {
      int port = cl.slot_port[rh_key_slot("{tb0}", 5)];
      lagging = replica_of(nodes, 6, port);
      RH_CHECK(lagging >= 0, "no replica of the master on port %d", port);
      kill(nodes[lagging]->pid, SIGSTOP);
      /* And cut its link: what the master writes from now on stays in
       * its backlog (otherwise loopback socket buffers would hold it for
       * the replica to read after the master's death). */
      redisContext *mc = rh_connect(port, 1000);
      RH_CHECK(mc, "connect to the master on port %d", port);
      freeReplyObject(rh_cmd(mc, "CLIENT KILL TYPE replica"));
      redisFree(mc);
      printf("stopped the replica on port %d at %" PRIu64 " ms\n",
             nodes[lagging]->port, rh_now_ms() - start);
    }
    if (!event_done && now >= event_at) {
      event_done = true;
      if (failover) {
        /* The master serving table 0's slot. */
        int port = cl.slot_port[rh_key_slot("{tb0}", 5)];
        for (int i = 0; i < 6; i++)
          if (ports[i] == port) victim = i;
        RH_CHECK(victim >= 0, "no master for table 0");
        rh_kill(nodes[victim], SIGKILL);
        if (lagging >= 0) kill(nodes[lagging]->pid, SIGCONT);
        printf("killed master on port %d at %" PRIu64 " ms (%" PRIu64 " ops)\n",
               port, now - start, st.ops);
      } else {
        int from = cl.slot_port[rh_key_slot("{tb0}", 5)], to = 0;
        for (int s = 0; s < 16384 && !to; s++)
          if (cl.slot_port[s] && cl.slot_port[s] != from) to = cl.slot_port[s];
        char *from_id = node_id(from), *to_id = node_id(to);
        static char seed[32];
        snprintf(seed, sizeof seed, "127.0.0.1:%d", from);
        const char *rargs[] = {"--cluster",
                               "reshard",
                               seed,
                               "--cluster-from",
                               from_id,
                               "--cluster-to",
                               to_id,
                               "--cluster-slots",
                               "4000",
                               "--cluster-yes",
                               "--cluster-pipeline",
                               "20",
                               NULL};
        run_cli(rargs, log, true);
        helper_running = true;
        printf("resharding 4000 slots from %d to %d at %" PRIu64 " ms\n", from,
               to, now - start);
        free(from_id);
        free(to_id);
      }
    }
    /* The killed master comes back (as a replica of its successor), as
     * an operator would bring it back: WAIT 1 on the slots it served
     * needs a replica again. Only once its replica has taken over: the
     * node has no persistence, so it restarts empty, still a master in
     * its nodes.conf, and a replica not yet promoted would resync from it
     * and drop every key (Redis's rule for masters without persistence:
     * no automatic restart). Restarting it 200 ms after the kill loses
     * thousands of acknowledged ops, with WAIT 1 or without. */
    if (failover && victim >= 0 && nodes[victim]->pid <= 0 &&
        now >= event_at + 1000 && now >= next_role_check) {
      next_role_check = now + 100;
      if (is_master(nodes[lagging]->port)) {
        rh_restart(nodes[victim]);
        printf(
            "replica on port %d promoted; restarted the killed node at "
            "%" PRIu64 " ms\n",
            nodes[lagging]->port, rh_now_ms() - start);
      }
    }
    if (helper_running) {
      int status;
      if (waitpid(helper_pid, &status, WNOHANG) == helper_pid) {
        helper_pid = 0;
        helper_running = false;
        RH_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "redis-cli --cluster reshard failed (%s)", log);
        printf("reshard done at %" PRIu64 " ms\n", rh_now_ms() - start);
      }
    }
    if (retry_due(&cl, wait, &st, now)) continue;
    if (n_ops == MAX_OPS) {
      rh_sleep_ms(10);
      continue;
    }
    op *o = &ops[n_ops];
    o->table = (uint16_t)(rng() % N_TABLES);
    o->client = (uint16_t)(rng() % N_CLIENTS);
    o->seq = next_seq[o->client]++;
    st.ops++;
    send_op(&cl, n_ops++, wait, &st, false);
  }
  printf("storm over at %" PRIu64 " ms: %" PRIu64 " ops, %" PRIu64
         " acknowledged\n",
         rh_now_ms() - start, st.ops, st.acked);
  /* A slow promotion (a loaded machine) may outlast the storm: bring the
   * killed node back once it is done, or say that it never was. */
  if (failover && victim >= 0 && nodes[victim]->pid <= 0) {
    uint64_t until = rh_now_ms() + 20000;
    while (!is_master(nodes[lagging]->port)) {
      RH_CHECK(rh_now_ms() < until,
               "the replica on port %d was not promoted within 20 s of the "
               "storm's end",
               nodes[lagging]->port);
      rh_sleep_ms(100);
    }
    rh_restart(nodes[victim]);
    printf(
        "replica on port %d promoted; restarted the killed node at "
        "%" PRIu64 " ms\n",
        nodes[lagging]->port, rh_now_ms() - start);
  }
  /* Let the cluster settle, then resend every op still pending until each
   * is acknowledged (as a client would, within its retry timeout). */
  wait_cluster_ok(nodes, 6, 20000);
  rh_cluster_refresh(&cl);
  deadline = rh_now_ms() + 20000;
  for (bool pending = true; pending;) {
    RH_CHECK(rh_now_ms() < deadline, "ops still unacknowledged");
    pending = false;
    for (uint32_t i = 0; i < n_ops; i++)
      if (ops[i].retry_at || !ops[i].acked) {
        send_op(&cl, i, wait, &st, true);
        if (ops[i].retry_at || !ops[i].acked) pending = true;
      }
  }
  /* Each op's counter: 0 (or nil) = lost, above 1 = applied again. */
  for (uint32_t i = 0; i < n_ops; i++) {
    char table[32], counter[32];
    snprintf(table, sizeof table, "{tb%u}", ops[i].table);
    snprintf(counter, sizeof counter, "o%u:%u", ops[i].client, ops[i].seq);
    const char *argv[] = {"IDEM.GET", table, counter};
    size_t lens[] = {8, strlen(table), strlen(counter)};
    /* A node still settling (a promotion's aftermath, a slow sanitized
     * build) may answer with a transient error or not at all: ask again
     * until the deadline, and fail on anything else. */
    redisReply *r = NULL;
    for (uint64_t until = rh_now_ms() + 20000;;) {
      r = rh_cluster_cmd(&cl, table, 3, argv, lens, 0, NULL);
      if (r && (r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_NIL))
        break;
      bool transient = !r || (r->type == REDIS_REPLY_ERROR &&
                              (strncmp(r->str, "CLUSTERDOWN", 11) == 0 ||
                               strncmp(r->str, "TRYAGAIN", 8) == 0 ||
                               strncmp(r->str, "LOADING", 7) == 0 ||
                               strncmp(r->str, "MOVED", 5) == 0 ||
                               strncmp(r->str, "ASK", 3) == 0));
      RH_CHECK(transient && rh_now_ms() < until, "IDEM.GET %s %s: %s", table,
               counter,
               !r                             ? "no reply"
               : r->type == REDIS_REPLY_ERROR ? r->str
                                              : "not an integer");
      if (r) freeReplyObject(r);
      rh_sleep_ms(100);
      rh_cluster_refresh(&cl);
    }
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (v == 0) st.lost++;
    if (v > 1) st.overcount++;
    RH_CHECK(v <= ops[i].sends, "op applied %lld times, sent %u", v,
             ops[i].sends);
  }
  /* Which path decided the ops: the tables' windows or HYBRID's FBF. */
  long long decided[3] = {0, 0, 0};
  const char *fields[3] = {"window_decided", "below_window", "slid_to_filter"};
  for (int t = 0; t < N_TABLES; t++) {
    char table[32];
    snprintf(table, sizeof table, "{tb%u}", t);
    const char *argv[] = {"IDEM.INFO", table};
    size_t lens[] = {9, strlen(table)};
    redisReply *r = rh_cluster_cmd(&cl, table, 2, argv, lens, 0, NULL);
    RH_CHECK(r && r->type == REDIS_REPLY_ARRAY, "IDEM.INFO %s", table);
    for (size_t i = 0; i + 1 < r->elements; i += 2)
      for (int f = 0; f < 3; f++)
        if (strcmp(r->element[i]->str, fields[f]) == 0)
          decided[f] += r->element[i + 1]->integer;
    freeReplyObject(r);
  }
  printf("RESULT cluster %s %s: ops %" PRIu64 ", retries %" PRIu64
         ", acknowledged %" PRIu64 ", acknowledged ops lost %" PRIu64
         ", retries re-applied %" PRIu64 ", genuine updates dropped %" PRIu64
         ", counters above 1 %" PRIu64 ", WAIT short %" PRIu64
         ", MOVED %" PRIu64 ", ASK %" PRIu64 ", connection errors %" PRIu64
         "; in the tables now: window_decided %lld, below_window %lld, "
         "slid_to_filter %lld\n",
         kind, wait ? "with WAIT 1" : "without WAIT", st.ops, st.retries,
         st.acked, st.lost, st.reapplied, st.dropped, st.overcount,
         st.wait_short, cl.moved, cl.asked, cl.conn_errors, decided[0],
         decided[1], decided[2]);
  RH_CHECK(st.ops > 1000, "only %" PRIu64 " ops", st.ops);
  RH_CHECK(st.dropped == 0, "%" PRIu64 " genuine updates dropped", st.dropped);
  if (wait || !failover) {
    RH_CHECK(st.lost == 0, "%" PRIu64 " acknowledged ops lost", st.lost);
    RH_CHECK(st.reapplied == 0, "%" PRIu64 " retries re-applied", st.reapplied);
    RH_CHECK(st.overcount == 0, "%" PRIu64 " ops applied twice", st.overcount);
  }
  if (!failover)
    RH_CHECK(cl.moved + cl.asked > 0, "the reshard moved no key in use");
  rh_cluster_free(&cl);
  free(ops);
  free(queue);
  return 0;
}
