/* SPDX-License-Identifier: MIT */
/*
 * Redis test harness (harness.h): server processes, hiredis helpers and a
 * cluster client.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static char server_path[512], cli_path[512], module_path[1024];
static char module_args[512];
static rh_node nodes[RH_MAX_NODES];
static int n_nodes;
static pid_t owner_pid;

uint64_t rh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rh_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

/* Kill every server we started (and their whole process groups: a server
 * forks for BGSAVE and AOF rewrites). */
static void kill_all(void) {
  if (getpid() != owner_pid) return;
  for (int i = 0; i < n_nodes; i++)
    if (nodes[i].pid > 0) {
      kill(-nodes[i].pid, SIGKILL);
      kill(nodes[i].pid, SIGKILL);
      waitpid(nodes[i].pid, NULL, 0);
      nodes[i].pid = 0;
    }
}

static void remove_tmpdir(void) {
  if (getpid() != owner_pid || !tmpdir[0] || getenv("RH_KEEP_TMP")) return;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void at_exit(void) {
  kill_all();
  remove_tmpdir();
}

static void on_signal(int sig) {
  kill_all();
  signal(sig, SIG_DFL);
  raise(sig);
}

static bool find_on_path(const char *name, char *out, size_t cap) {
  if (strchr(name, '/')) {
    if (access(name, X_OK) != 0) return false;
    snprintf(out, cap, "%s", name);
    return true;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *save, *dir = strtok_r(buf, ":", &save); dir;
       dir = strtok_r(NULL, ":", &save)) {
    snprintf(out, cap, "%s/%s", dir, name);
    if (access(out, X_OK) == 0) return true;
  }
  return false;
}

void rh_init(const char *server, const char *cli, const char *module,
             const char *margs) {
  const char *skip = getenv("BK_REDIS_SKIP");
  if (skip && *skip) {
    printf("SKIP: %s\n", skip);
    exit(RH_SKIP);
  }
  if (!find_on_path(server ? server : "redis-server", server_path,
                    sizeof server_path)) {
    printf(
        "SKIP: redis-server is not installed (scripts/bootstrap.sh "
        "installs redis-server and redis-tools)\n");
    exit(RH_SKIP);
  }
  if (!find_on_path(cli ? cli : "redis-cli", cli_path, sizeof cli_path)) {
    printf(
        "FAIL: redis-server is installed but redis-cli is not (install "
        "redis-tools: scripts/bootstrap.sh)\n");
    exit(1);
  }
  if (!module || access(module, R_OK) != 0) {
    fprintf(stderr, "FAIL: the module %s is not built\n",
            module ? module : "(none)");
    exit(1);
  }
  /* The server runs in its own --dir: the module's path must be absolute. */
  char *abs = realpath(module, NULL);
  snprintf(module_path, sizeof module_path, "%s", abs ? abs : module);
  free(abs);
  snprintf(module_args, sizeof module_args, "%s", margs ? margs : "");
  setvbuf(stdout, NULL, _IOLBF, 0);
  owner_pid = getpid();
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/bk-redis-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(1);
  }
  atexit(at_exit);
  int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], on_signal);
  signal(SIGPIPE, SIG_IGN);
}

const char *rh_tmpdir(void) {
  return tmpdir;
}

void rh_set_module_args(const char *args) {
  snprintf(module_args, sizeof module_args, "%s", args);
}

const char *rh_cli(void) {
  return cli_path;
}

/* A port that is free now on loopback, and whose cluster bus port (+10000)
 * is free too. Another process may take it before the server binds it:
 * rh_start tries again with another port when the server fails. */
static int free_port(void) {
  for (int attempt = 0; attempt < 100; attempt++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0) {
      close(s);
      continue;
    }
    int port = ntohs(a.sin_port);
    close(s);
    if (port > 55000) continue;
    int b = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons((uint16_t)(port + 10000));
    bool bus_free = bind(b, (struct sockaddr *)&a, sizeof a) == 0;
    close(b);
    if (bus_free) return port;
  }
  fprintf(stderr, "no free port\n");
  exit(1);
}

static pid_t spawn(rh_node *n) {
  char port[16];
  snprintf(port, sizeof port, "%d", n->port);
  const char *argv[96];
  int argc = 0;
  argv[argc++] = server_path;
  argv[argc++] = "--bind";
  argv[argc++] = "127.0.0.1";
  argv[argc++] = "--port";
  argv[argc++] = port;
  argv[argc++] = "--dir";
  argv[argc++] = n->dir;
  argv[argc++] = "--logfile";
  argv[argc++] = n->log;
  argv[argc++] = "--save";
  argv[argc++] = "";
  argv[argc++] = "--daemonize";
  argv[argc++] = "no";
  argv[argc++] = "--enable-debug-command";
  argv[argc++] = "yes";
  argv[argc++] = "--protected-mode";
  argv[argc++] = "no";
  argv[argc++] = "--loadmodule";
  argv[argc++] = module_path;
  /* Module arguments: words of module_args. */
  static char margs[512];
  snprintf(margs, sizeof margs, "%s", module_args);
  for (char *save, *w = strtok_r(margs, " ", &save); w && argc < 60;
       w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  for (int i = 0; i < n->n_extra && argc < 94; i++) argv[argc++] = n->extra[i];
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != owner_pid) _exit(1);
    /* Under a sanitizer build the runtimes are preloaded into the server
     * (tests/CMakeLists.txt); it ends by SIGKILL or exit without freeing
     * all it holds, which is not ours to check. */
    setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
    }
    execv(server_path, (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

/* The server on n's port is n's process: ports are picked free, then bound
 * by the server, and a test running in parallel may have taken the port in
 * between (its server then answers here while ours exits). */
static bool is_own_server(redisContext *c, const rh_node *n) {
  redisReply *r = redisCommand(c, "INFO server");
  bool own = false;
  if (r && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "process_id:");
    own = p && strtol(p + strlen("process_id:"), NULL, 10) == (long)n->pid;
  }
  if (r) freeReplyObject(r);
  return own;
}

/* Wait until the node's own process answers PING; false when it died. */
static bool wait_ready(rh_node *n, int ms) {
  uint64_t deadline = rh_now_ms() + (uint64_t)ms;
  while (rh_now_ms() < deadline) {
    int status;
    if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
      n->pid = 0;
      return false;
    }
    redisContext *c = redisConnectWithTimeout("127.0.0.1", n->port,
                                              (struct timeval){0, 200000});
    if (c && !c->err) {
      redisReply *r = redisCommand(c, "PING");
      bool ok = r && r->type == REDIS_REPLY_STATUS;
      bool loading = r && r->type == REDIS_REPLY_ERROR &&
                     strncmp(r->str, "LOADING", 7) == 0;
      if (r) freeReplyObject(r);
      ok = ok && is_own_server(c, n);
      redisFree(c);
      if (ok) return true;
      (void)loading;
    } else if (c) {
      redisFree(c);
    }
    rh_sleep_ms(20);
  }
  return false;
}

rh_node *rh_start(const char *const *extra) {
  RH_CHECK(n_nodes < RH_MAX_NODES, "too many nodes");
  rh_node *n = &nodes[n_nodes];
  memset(n, 0, sizeof *n);
  snprintf(n->dir, sizeof n->dir, "%s/node%d", tmpdir, n_nodes);
  snprintf(n->log, sizeof n->log, "%s/node%d/redis.log", tmpdir, n_nodes);
  mkdir(n->dir, 0700);
  for (int i = 0; extra && extra[i]; i++)
    n->extra[n->n_extra++] = strdup(extra[i]);
  n_nodes++;
  for (int attempt = 0; attempt < 5; attempt++) {
    n->port = free_port();
    n->pid = spawn(n);
    if (wait_ready(n, 10000)) return n;
    rh_kill(n, SIGKILL);
  }
  RH_CHECK(false, "redis-server did not start (log %s)", n->log);
  return NULL;
}

void rh_restart(rh_node *n) {
  n->pid = spawn(n);
  RH_CHECK(wait_ready(n, 15000), "redis-server did not restart on port %d",
           n->port);
}

bool rh_restart_expect_exit(rh_node *n, int ms) {
  n->pid = spawn(n);
  uint64_t deadline = rh_now_ms() + (uint64_t)ms;
  while (rh_now_ms() < deadline) {
    int status;
    if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
      n->pid = 0;
      return true;
    }
    rh_sleep_ms(20);
  }
  return false;
}

void rh_kill(rh_node *n, int sig) {
  if (n->pid <= 0) return;
  kill(-n->pid, sig);
  kill(n->pid, sig);
  waitpid(n->pid, NULL, 0);
  n->pid = 0;
}

void rh_dump_logs(void) {
  for (int i = 0; i < n_nodes; i++) {
    char cmd[800];
    fprintf(stderr, "---- %s (port %d)\n", nodes[i].log, nodes[i].port);
    snprintf(cmd, sizeof cmd, "tail -n 15 '%s' 1>&2", nodes[i].log);
    if (system(cmd) != 0) fprintf(stderr, "(no log)\n");
  }
}

bool rh_log_contains(const rh_node *n, const char *needle) {
  FILE *f = fopen(n->log, "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle);
  fclose(f);
  return found;
}

redisContext *rh_connect(int port, int timeout_ms) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (!c || c->err) {
    if (c) redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  return c;
}

static redisReply *vcmd(redisContext *c, const char *fmt, va_list ap) {
  redisReply *r = redisvCommand(c, fmt, ap);
  RH_CHECK(r != NULL, "connection error: %s (command %s)", c->errstr, fmt);
  return r;
}

redisReply *rh_cmd(redisContext *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(c, fmt, ap);
  va_end(ap);
  return r;
}

long long rh_int(redisContext *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(c, fmt, ap);
  va_end(ap);
  RH_CHECK(r->type == REDIS_REPLY_INTEGER, "%s: expected an integer, got %s",
           fmt, r->type == REDIS_REPLY_ERROR ? r->str : "another type");
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

void rh_expect_error(redisContext *c, const char *text, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd(c, fmt, ap);
  va_end(ap);
  RH_CHECK(r->type == REDIS_REPLY_ERROR, "%s: expected an error with '%s'", fmt,
           text);
  RH_CHECK(strstr(r->str, text), "%s: error '%s' lacks '%s'", fmt, r->str,
           text);
  freeReplyObject(r);
}

/* ---- cluster ------------------------------------------------------------- */

/* CRC16-CCITT (XMODEM), the one Redis Cluster hashes keys with. */
static uint16_t crc16(const char *buf, size_t len) {
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)((unsigned char)buf[i] << 8);
    for (int b = 0; b < 8; b++)
      crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

uint16_t rh_key_slot(const char *key, size_t len) {
  /* A {hash tag}: only the part between the first { and the next }. */
  for (size_t s = 0; s < len; s++)
    if (key[s] == '{') {
      for (size_t e = s + 1; e < len; e++)
        if (key[e] == '}') {
          if (e == s + 1) break;
          return crc16(key + s + 1, e - s - 1) & 16383;
        }
      break;
    }
  return crc16(key, len) & 16383;
}

void rh_cluster_init(rh_cluster *cl, const int *ports, int n, int timeout_ms) {
  memset(cl, 0, sizeof *cl);
  for (int i = 0; i < n && i < RH_MAX_NODES; i++) cl->seed_ports[i] = ports[i];
  cl->n_seeds = n;
  cl->timeout_ms = timeout_ms;
}

void rh_cluster_free(rh_cluster *cl) {
  for (int i = 0; i < cl->n_conns; i++)
    if (cl->conns[i].c) redisFree(cl->conns[i].c);
  cl->n_conns = 0;
}

redisContext *rh_cluster_conn(rh_cluster *cl, int port) {
  for (int i = 0; i < cl->n_conns; i++)
    if (cl->conns[i].port == port) {
      if (!cl->conns[i].c) cl->conns[i].c = rh_connect(port, cl->timeout_ms);
      return cl->conns[i].c;
    }
  if (cl->n_conns == (int)(sizeof cl->conns / sizeof cl->conns[0])) return NULL;
  cl->conns[cl->n_conns].port = port;
  cl->conns[cl->n_conns].c = rh_connect(port, cl->timeout_ms);
  return cl->conns[cl->n_conns++].c;
}

void rh_cluster_drop(rh_cluster *cl, int port) {
  for (int i = 0; i < cl->n_conns; i++)
    if (cl->conns[i].port == port && cl->conns[i].c) {
      redisFree(cl->conns[i].c);
      cl->conns[i].c = NULL;
    }
}

bool rh_cluster_refresh(rh_cluster *cl) {
  /* Ask every known node; the first complete answer wins. */
  int ports[RH_MAX_NODES * 2], n = 0;
  for (int i = 0; i < cl->n_seeds; i++) ports[n++] = cl->seed_ports[i];
  for (int i = 0; i < n; i++) {
    redisContext *c = rh_cluster_conn(cl, ports[i]);
    if (!c) continue;
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    if (!r) {
      rh_cluster_drop(cl, ports[i]);
      continue;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
      freeReplyObject(r);
      continue;
    }
    memset(cl->slot_port, 0, sizeof cl->slot_port);
    for (size_t j = 0; j < r->elements; j++) {
      redisReply *e = r->element[j];
      if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) continue;
      long long lo = e->element[0]->integer, hi = e->element[1]->integer;
      redisReply *master = e->element[2];
      if (master->type != REDIS_REPLY_ARRAY || master->elements < 2) continue;
      int port = (int)master->element[1]->integer;
      for (long long s = lo; s <= hi && s < 16384; s++) cl->slot_port[s] = port;
    }
    freeReplyObject(r);
    return true;
  }
  return false;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ..." -> port */
static int redirect_port(const char *err) {
  const char *colon = strrchr(err, ':');
  return colon ? atoi(colon + 1) : 0;
}

redisReply *rh_cluster_cmd(rh_cluster *cl, const char *key, int argc,
                           const char **argv, const size_t *lens, int wait,
                           long long *wait_reply) {
  uint16_t slot = rh_key_slot(key, strlen(key));
  int port = cl->slot_port[slot];
  bool asking = false;
  for (int hop = 0; hop < 5; hop++) {
    if (!port) {
      if (!rh_cluster_refresh(cl)) return NULL;
      port = cl->slot_port[slot];
      if (!port) return NULL;
    }
    redisContext *c = rh_cluster_conn(cl, port);
    if (!c) {
      cl->conn_errors++;
      cl->slot_port[slot] = 0;
      return NULL;
    }
    if (asking) redisAppendCommand(c, "ASKING");
    redisAppendCommandArgv(c, argc, argv, lens);
    if (wait > 0) redisAppendCommand(c, "WAIT %d 100", wait);
    redisReply *asking_reply = NULL, *r = NULL, *w = NULL;
    if ((asking && redisGetReply(c, (void **)&asking_reply) != REDIS_OK) ||
        redisGetReply(c, (void **)&r) != REDIS_OK ||
        (wait > 0 && redisGetReply(c, (void **)&w) != REDIS_OK)) {
      if (asking_reply) freeReplyObject(asking_reply);
      if (r) freeReplyObject(r);
      cl->conn_errors++;
      rh_cluster_drop(cl, port);
      cl->slot_port[slot] = 0;
      return NULL;
    }
    if (asking_reply) freeReplyObject(asking_reply);
    if (wait_reply)
      *wait_reply = w && w->type == REDIS_REPLY_INTEGER ? w->integer : -1;
    if (w) freeReplyObject(w);
    asking = false;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0) {
      cl->moved++;
      port = redirect_port(r->str);
      cl->slot_port[slot] = port;
      freeReplyObject(r);
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0) {
      cl->asked++;
      port = redirect_port(r->str);
      asking = true;
      freeReplyObject(r);
      continue;
    }
    return r;
  }
  return NULL;
}

uint64_t rh_fbf_count_present(redisContext *c, const char *key,
                              const char *prefix, uint64_t n) {
  static char items[1000][64];
  const char *argv[1002];
  size_t lens[1002];
  uint64_t positives = 0;
  for (uint64_t done = 0; done < n; done += 1000) {
    unsigned batch = n - done < 1000 ? (unsigned)(n - done) : 1000;
    argv[0] = "FBF.MEXISTS";
    argv[1] = key;
    for (unsigned j = 0; j < batch; j++) {
      snprintf(items[j], sizeof items[j], "%s%" PRIu64, prefix, done + j);
      argv[2 + j] = items[j];
    }
    for (unsigned j = 0; j < 2 + batch; j++) lens[j] = strlen(argv[j]);
    redisReply *r = redisCommandArgv(c, (int)(2 + batch), argv, lens);
    RH_CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == batch,
             "FBF.MEXISTS %s", key);
    for (size_t j = 0; j < r->elements; j++)
      positives += r->element[j]->integer == 1;
    freeReplyObject(r);
  }
  return positives;
}
