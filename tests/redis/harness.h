/* SPDX-License-Identifier: MIT */
/*
 * Test harness for the Redis module: real redis-server processes on free
 * loopback ports in a temporary directory, always killed when the test
 * ends (atexit, fatal signals, and PR_SET_PDEATHSIG should the test itself
 * be killed), hiredis helpers, and a small Redis Cluster client (CRC16 slot
 * routing from CLUSTER SLOTS, MOVED and ASK redirections, reconnects).
 * Shared by tests/redis/test_redis.c and bench/redis/bench_redis.c.
 */
#ifndef BK_TESTS_REDIS_HARNESS_H
#define BK_TESTS_REDIS_HARNESS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit code ctest reads as "skipped" (SKIP_RETURN_CODE). */
#define RH_SKIP 77

#define RH_MAX_NODES 8

typedef struct rh_node {
  pid_t pid;
  int port;
  char dir[512];
  char log[600];
  char *extra[32]; /* extra server arguments (owned) */
  int n_extra;
} rh_node;

/* Fail the test: print, kill every server, exit 1. */
#define RH_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      rh_dump_logs();                                                          \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Find redis-server and the module; exit RH_SKIP when redis-server is not
 * installed. `module` and `server`, `cli` may be NULL (searched on PATH).
 * Makes the temporary directory and installs the kill-on-exit handlers. */
void rh_init(const char *server, const char *cli, const char *module,
             const char *module_args);
const char *rh_tmpdir(void);
/* Module arguments for the servers started from now on. */
void rh_set_module_args(const char *args);
const char *rh_cli(void);

/* Start a server with the module loaded (and `extra` arguments, NULL
 * terminated); waits until it answers PING. The node's directory is
 * tmpdir/node<index>. */
rh_node *rh_start(const char *const *extra);
/* Start again on the same port and directory (after a kill). */
void rh_restart(rh_node *n);
/* Start with the same arguments and expect the server to exit (a refused
 * load); returns true when it exited within `ms`. */
bool rh_restart_expect_exit(rh_node *n, int ms);
void rh_kill(rh_node *n, int sig); /* and reap it */
/* Print the tail of every node's log (on failure). */
void rh_dump_logs(void);
/* Whether the node's log contains `needle`. */
bool rh_log_contains(const rh_node *n, const char *needle);

redisContext *rh_connect(int port, int timeout_ms);
/* Run a command (printf-style, hiredis format); fails the test on a
 * connection error. The caller frees the reply. */
redisReply *rh_cmd(redisContext *c, const char *fmt, ...);
/* The reply must be an integer / status / error containing `text`. */
long long rh_int(redisContext *c, const char *fmt, ...);
void rh_expect_error(redisContext *c, const char *text, const char *fmt, ...);

/* ---- cluster client ------------------------------------------------------ */

uint16_t rh_key_slot(const char *key, size_t len);

/* How many of the n items "<prefix><i>" (i = 0 .. n - 1) FBF.MEXISTS calls
 * present in the filter `key`, asked 1000 a command. */
uint64_t rh_fbf_count_present(redisContext *c, const char *key,
                              const char *prefix, uint64_t n);

typedef struct rh_cluster {
  int seed_ports[RH_MAX_NODES];
  int n_seeds;
  int slot_port[16384]; /* 0: unknown */
  struct {
    int port;
    redisContext *c;
  } conns[RH_MAX_NODES * 2];
  int n_conns;
  int timeout_ms;
  uint64_t moved, asked, conn_errors;
} rh_cluster;

void rh_cluster_init(rh_cluster *cl, const int *ports, int n, int timeout_ms);
void rh_cluster_free(rh_cluster *cl);
/* Refresh the slot map from any reachable node; false when none answers. */
bool rh_cluster_refresh(rh_cluster *cl);
/* Send argv to the owner of `key`'s slot, following MOVED/ASK; when `wait`
 * is > 0, send WAIT wait 100 on the same connection after it and put its
 * reply in *wait_reply. NULL on a connection error or timeout (the op's
 * outcome is unknown). */
redisReply *rh_cluster_cmd(rh_cluster *cl, const char *key, int argc,
                           const char **argv, const size_t *lens, int wait,
                           long long *wait_reply);
/* The connection to `port` (made on demand); NULL when it cannot connect. */
redisContext *rh_cluster_conn(rh_cluster *cl, int port);
void rh_cluster_drop(rh_cluster *cl, int port);

uint64_t rh_now_ms(void);
void rh_sleep_ms(int ms);

#endif
