/* SPDX-License-Identifier: MIT */
/*
 * The kBF against a real memcached (kBF paper Sec. 6.3, Figs. 15-16).
 *
 * The server. Debian's `memcached` is started by this command on a free
 * loopback port (`-l 127.0.0.1 -p PORT -U 0`), with evictions off (`-M`,
 * so a full server refuses new items, as the paper configured it "as a k-v
 * store") and a memory limit (`-m MiB`), one worker thread per core
 * available to us at most 4 (`-t`), and `-u root` when we are root (it
 * refuses to run as root otherwise). It is always stopped: on return
 * (SIGTERM, then SIGKILL after 2 s), on SIGINT/SIGTERM/SIGHUP to this
 * command (a handler kills the child, then the signal takes its default
 * course), and if this process dies anyway (the child asks the kernel for
 * SIGKILL on its parent's death, PR_SET_PDEATHSIG).
 *
 * The workload: ETC-like (Atikoglu et al., SIGMETRICS 2012, as Sec. 6.1
 * takes it). Key i has a length drawn from GEV(mu 30.7984, sigma 8.20449,
 * xi 0.078688), rounded and clamped to [8, 250] (memcached's key limit),
 * made of printable characters, with i in base 62 in its first 6 bytes so
 * keys are distinct. Values: 3000 distinct values (the paper's "most
 * frequent" values), value j of 15 + GP(sigma 214.476, xi 0.348238) bytes
 * (the paper's GP starts at 15 bytes; the discrete table of the first 15
 * bytes is not given, so no value is shorter), capped at 256 KiB; pair i
 * takes value (hash of i) mod 3000. Everything derives from --seed.
 *
 * Time (Fig. 15), for each n in --pairs: insert the first n pairs, query
 * them all (checking each answer), delete them all, timed per phase, in a
 * memcached with --time-limit MiB: one request at a time (the client waits
 * for each reply), and pipelined (sets and deletes with `noreply`, sent in
 * --batch sized bursts and closed by a get; queries as multi-gets of
 * --batch keys); then in a kBF sized for n at --fpp. Memory (Fig. 16), for
 * each limit in --limits: fill a fresh server with pairs 0, 1, ... until
 * it refuses one (its `stats` curr_items then says how many it holds),
 * read its `bytes` (item memory in use), then insert the same pairs into a
 * kBF sized for that many at --fpp and report its main cells, secondary
 * kBF (s-kBF) and value table.
 */
#define _GNU_SOURCE /* kill, sigaction, prctl, getline on glibc */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"

#ifdef BK_HAVE_LIBMEMCACHED
#include <libmemcached/memcached.h>
#endif
#ifdef BK_HAVE_KBF
#include "bloomkit/kbf.h"
#endif

#define PROG "bloomkit kbf-experiments --memcached"
#define DEFAULT_SEED 20140427u
#define N_VALUES 3000u
#define MAX_VALUE_BYTES (256u * 1024u)
#define MAX_KEY_BYTES 250u
#define MIN_KEY_BYTES 8u
#define MAX_LIST 16u
#define MAX_PAIRS 100000000u

typedef struct options {
  double pairs[MAX_LIST];
  size_t n_pairs;
  double limits[MAX_LIST];
  size_t n_limits;
  uint64_t time_limit_mib;
  uint64_t batch;
  double fpp;
  unsigned cell_bits; /* index into cell_choices */
  uint64_t seed;
  const char *memcached;
  bool csv, no_time, no_memory;
  const char *plot_dir;
} options;

/* ---- the workload ----------------------------------------------------------
 */

static uint64_t mix(uint64_t z) {
  return splitmix_output(z);
}

/* Uniform in (0, 1) from a 64-bit word. */
static double unit_open(uint64_t w) {
  return ((double)(w >> 11) + 0.5) * 0x1.0p-53;
}

typedef struct workload {
  uint64_t seed;
  char *values; /* the 3000 values, back to back */
  size_t value_off[N_VALUES + 1];
  size_t value_bytes; /* their total size */
} workload;

static const char alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* GEV inverse CDF: mu + sigma ((-ln U)^-xi - 1) / xi. */
static size_t key_length(uint64_t w) {
  const double mu = 30.7984, sigma = 8.20449, xi = 0.078688;
  double x = mu + sigma * (pow(-log(unit_open(w)), -xi) - 1.0) / xi;
  x = nearbyint(x);
  if (!(x >= MIN_KEY_BYTES)) x = MIN_KEY_BYTES;
  if (x > MAX_KEY_BYTES) x = MAX_KEY_BYTES;
  return (size_t)x;
}

/* GP inverse CDF (theta 0): sigma (U^-xi - 1) / xi, plus 15. */
static size_t value_length(uint64_t w) {
  const double sigma = 214.476, xi = 0.348238;
  double x = 15.0 + nearbyint(sigma * (pow(unit_open(w), -xi) - 1.0) / xi);
  if (!(x <= MAX_VALUE_BYTES)) x = MAX_VALUE_BYTES;
  return (size_t)x;
}

/* Pair i's key into buf (at least MAX_KEY_BYTES); returns its length. */
static size_t pair_key(const workload *w, uint64_t i, char *buf) {
  uint64_t h = mix(w->seed ^ mix(i * SPLITMIX_GAMMA + 1));
  size_t len = key_length(h);
  uint64_t x = i;
  for (int j = 0; j < 6; j++) {
    buf[j] = alphabet[x % 62];
    x /= 62;
  }
  uint64_t r = mix(h);
  for (size_t j = 6; j < len; j++) {
    if ((j & 7) == 6) r = mix(r + j);
    buf[j] = alphabet[(r >> (8 * (j & 7))) % 62];
  }
  return len;
}

static unsigned pair_value(const workload *w, uint64_t i) {
  return (unsigned)(mix(w->seed ^ mix(i * SPLITMIX_GAMMA + 2)) % N_VALUES);
}

static int workload_make(workload *w, uint64_t seed) {
  w->seed = seed;
  size_t total = 0;
  for (unsigned j = 0; j < N_VALUES; j++) {
    w->value_off[j] = total;
    total += value_length(mix(seed ^ mix(j * SPLITMIX_GAMMA + 3)));
  }
  w->value_off[N_VALUES] = total;
  w->value_bytes = total;
  w->values = malloc(total);
  if (!w->values) return 1;
  uint64_t r = seed;
  for (size_t b = 0; b < total; b++) {
    if ((b & 7) == 0) r = mix(r + b + 4);
    w->values[b] = alphabet[(r >> (8 * (b & 7))) % 62];
  }
  return 0;
}

/* Pre-generated keys for a timing run (so neither side pays for making
 * them inside the clock). */
typedef struct keyset {
  uint64_t n;
  char *bytes;
  size_t *off;
  size_t *len;
  const char **ptr;
} keyset;

static void keyset_free(keyset *k) {
  free(k->bytes);
  free(k->off);
  free(k->len);
  free(k->ptr);
  memset(k, 0, sizeof *k);
}

static int keyset_make(const workload *w, uint64_t n, keyset *k) {
  memset(k, 0, sizeof *k);
  k->off = malloc(n * sizeof *k->off);
  k->len = malloc(n * sizeof *k->len);
  k->ptr = malloc(n * sizeof *k->ptr);
  k->bytes = malloc(n * 64 + MAX_KEY_BYTES);
  size_t cap = n * 64 + MAX_KEY_BYTES, used = 0;
  if (!k->off || !k->len || !k->ptr || !k->bytes) goto oom;
  for (uint64_t i = 0; i < n; i++) {
    if (used + MAX_KEY_BYTES > cap) {
      cap *= 2;
      char *g = realloc(k->bytes, cap);
      if (!g) goto oom;
      k->bytes = g;
    }
    k->off[i] = used;
    k->len[i] = pair_key(w, i, k->bytes + used);
    used += k->len[i];
  }
  for (uint64_t i = 0; i < n; i++) k->ptr[i] = k->bytes + k->off[i];
  k->n = n;
  return 0;
oom:
  keyset_free(k);
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the memcached server --------------------------------------------------
 */

/* The running server's pid for the signal handler (0: none). */
static volatile sig_atomic_t server_pid = 0;
static struct sigaction saved_int, saved_term, saved_hup;

static void on_fatal_signal(int sig) {
  pid_t pid = (pid_t)server_pid;
  if (pid > 0) {
    kill(pid, SIGKILL);
    /* Reap it: a container's init may never collect an orphan, and a
     * zombie still holds its pid. Both calls are async-signal-safe. */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

typedef struct server {
  pid_t pid;
  unsigned port;
  uint64_t limit_mib;
} server;

static int free_port(unsigned *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int bad = bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) != 0;
  close(fd);
  if (bad) return 1;
  *port = ntohs(a.sin_port);
  return 0;
}

/* The server on port is our child pid: the port was free when picked, but
 * another program (a test running in parallel) may bind it before our
 * server does, and then answers on it while ours exits. memcached's
 * "stats" reply names its process ("STAT pid N"). */
static bool is_own_server(unsigned port, pid_t pid) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  bool own = false;
  static const char cmd[] = "stats\r\n";
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      send(fd, cmd, sizeof cmd - 1, MSG_NOSIGNAL) ==
          (ssize_t)(sizeof cmd - 1)) {
    char buf[8192];
    size_t n = 0;
    while (n < sizeof buf - 1) { /* "STAT pid" is the reply's first line */
      ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
      if (r <= 0) break;
      n += (size_t)r;
      buf[n] = 0;
      if (strstr(buf, "END\r\n") || strstr(buf, "ERROR")) break;
    }
    buf[n] = 0;
    const char *p = strstr(buf, "STAT pid ");
    own = p && strtol(p + strlen("STAT pid "), NULL, 10) == (long)pid;
  }
  close(fd);
  return own;
}

static void server_stop(server *s) {
  if (s->pid <= 0) return;
  kill(s->pid, SIGTERM);
  int status;
  bool gone = false;
  for (int i = 0; i < 200 && !gone; i++) { /* 2 s */
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == s->pid || (r < 0 && errno == ECHILD))
      gone = true;
    else {
      struct timespec d = {0, 10000000};
      nanosleep(&d, NULL);
    }
  }
  if (!gone) {
    kill(s->pid, SIGKILL);
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  server_pid = 0;
  s->pid = 0;
  sigaction(SIGINT, &saved_int, NULL);
  sigaction(SIGTERM, &saved_term, NULL);
  sigaction(SIGHUP, &saved_hup, NULL);
}

/* Start one server; 0 when it accepts connections. */
static int server_try(const options *o, server *s, uint64_t limit_mib) {
  if (free_port(&s->port)) return 1;
  char port[16], mem[32], threads[8];
  snprintf(port, sizeof port, "%u", s->port);
  snprintf(mem, sizeof mem, "%llu", (unsigned long long)limit_mib);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(threads, sizeof threads, "%ld",
           cores < 1   ? 1
           : cores > 4 ? 4
                       : cores);
  const char *argv[] = {o->memcached,
                        "-l",
                        "127.0.0.1",
                        "-p",
                        port,
                        "-U",
                        "0",
                        "-M",
                        "-m",
                        mem,
                        "-t",
                        threads,
                        geteuid() == 0 ? "-u" : NULL,
                        "root",
                        NULL};
  struct sigaction sa = {.sa_handler = on_fatal_signal};
  sigemptyset(&sa.sa_mask);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  /* The handler is in place and the signals held until server_pid is set,
   * so no signal can fall between the fork and the bookkeeping. */
  sigprocmask(SIG_BLOCK, &block, &old);
  sigaction(SIGINT, &sa, &saved_int);
  sigaction(SIGTERM, &sa, &saved_term);
  sigaction(SIGHUP, &sa, &saved_hup);
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the parent died already */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  if (pid > 0) server_pid = pid;
  s->pid = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    sigaction(SIGINT, &saved_int, NULL);
    sigaction(SIGTERM, &saved_term, NULL);
    sigaction(SIGHUP, &saved_hup, NULL);
    return 1;
  }
  s->limit_mib = limit_mib;
  for (int i = 0; i < 500; i++) { /* 5 s */
    if (is_own_server(s->port, pid)) return 0;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) { /* it exited: port taken? */
      s->pid = 0;
      server_pid = 0;
      sigaction(SIGINT, &saved_int, NULL);
      sigaction(SIGTERM, &saved_term, NULL);
      sigaction(SIGHUP, &saved_hup, NULL);
      return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? 127 : 1;
    }
    struct timespec d = {0, 10000000};
    nanosleep(&d, NULL);
  }
  server_stop(s);
  return 1;
}

static int server_start(const options *o, server *s, uint64_t limit_mib) {
  for (int attempt = 0; attempt < 5; attempt++) {
    int r = server_try(o, s, limit_mib);
    if (r == 0) {
      fprintf(stderr, "# memcached pid %ld on 127.0.0.1:%u, -m %llu\n",
              (long)s->pid, s->port, (unsigned long long)limit_mib);
      return 0;
    }
    if (r == 127) break;
  }
  fprintf(stderr,
          PROG
          ": cannot start '%s' (Debian's memcached package; "
          "scripts/bootstrap.sh installs it)\n",
          o->memcached);
  return 1;
}

#ifdef BK_HAVE_LIBMEMCACHED

/* ---- the client ------------------------------------------------------------
 */

static memcached_st *client(const server *s, bool pipelined) {
  memcached_st *m = memcached_create(NULL);
  if (!m) return NULL;
  if (memcached_server_add(m, "127.0.0.1", (in_port_t)s->port) !=
          MEMCACHED_SUCCESS ||
      memcached_behavior_set(m, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1) !=
          MEMCACHED_SUCCESS ||
      (pipelined && memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 1) !=
                        MEMCACHED_SUCCESS)) {
    memcached_free(m);
    return NULL;
  }
  return m;
}

typedef struct server_stats {
  uint64_t bytes, curr_items, limit_maxbytes;
} server_stats;

static int stats_of(const server *s, server_stats *out) {
  memcached_st *m = client(s, false);
  if (!m) return 1;
  memcached_return_t rc;
  memcached_stat_st *st = memcached_stat(m, NULL, &rc);
  int bad = !st || rc != MEMCACHED_SUCCESS;
  if (!bad) {
    out->bytes = st[0].bytes;
    out->curr_items = st[0].curr_items;
    out->limit_maxbytes = st[0].limit_maxbytes;
  }
  if (st) memcached_stat_free(m, st);
  memcached_free(m);
  return bad;
}

/* A get that waits for the server to have handled everything sent before
 * it on this connection (pipelined sets and deletes carry no reply). */
static int sync_with(memcached_st *m, const keyset *k) {
  memcached_return_t rc = memcached_flush_buffers(m);
  if (rc != MEMCACHED_SUCCESS) return 1;
  if (memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 0) !=
      MEMCACHED_SUCCESS)
    return 1;
  size_t len;
  uint32_t flags;
  char *v = memcached_get(m, k->ptr[0], k->len[0], &len, &flags, &rc);
  free(v);
  if (memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 1) !=
      MEMCACHED_SUCCESS)
    return 1;
  return rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTFOUND;
}

typedef struct phase_times {
  double insert_s, query_s, delete_s;
  uint64_t wrong; /* queries answered wrongly (missing or another value) */
} phase_times;

typedef struct check_ctx {
  const workload *w;
  uint64_t right;
} check_ctx;

/* One multi-get answer: the key names the pair (its first 6 bytes are the
 * index in base 62); right when the value is the pair's. */
static memcached_return_t check_one(const memcached_st *m,
                                    memcached_result_st *res, void *ctx) {
  (void)m;
  check_ctx *c = ctx;
  const char *key = memcached_result_key_value(res);
  if (memcached_result_key_length(res) < 6) return MEMCACHED_SUCCESS;
  uint64_t idx = 0;
  for (int j = 5; j >= 0; j--) {
    const char *at = strchr(alphabet, key[j]);
    if (!at || !*at) return MEMCACHED_SUCCESS;
    idx = idx * 62 + (uint64_t)(at - alphabet);
  }
  unsigned v = pair_value(c->w, idx);
  size_t want = c->w->value_off[v + 1] - c->w->value_off[v];
  if (memcached_result_length(res) == want &&
      memcmp(memcached_result_value(res), c->w->values + c->w->value_off[v],
             want) == 0)
    c->right++;
  return MEMCACHED_SUCCESS;
}

static int time_memcached(const options *o, const workload *w, const keyset *k,
                          bool pipelined, phase_times *t) {
  server s = {0};
  if (server_start(o, &s, o->time_limit_mib)) return 1;
  int status = 1;
  memcached_st *m = client(&s, pipelined);
  if (!m) goto done;
  memset(t, 0, sizeof *t);
  double t0 = now_s();
  for (uint64_t i = 0; i < k->n; i++) {
    unsigned v = pair_value(w, i);
    memcached_return_t rc =
        memcached_set(m, k->ptr[i], k->len[i], w->values + w->value_off[v],
                      w->value_off[v + 1] - w->value_off[v], 0, 0);
    if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_BUFFERED) {
      fprintf(stderr, PROG ": memcached set: %s\n", memcached_strerror(m, rc));
      goto done;
    }
    if (pipelined && (i + 1) % o->batch == 0 &&
        memcached_flush_buffers(m) != MEMCACHED_SUCCESS)
      goto done;
  }
  if (pipelined && sync_with(m, k)) goto done;
  double t1 = now_s();
  t->insert_s = t1 - t0;
  if (!pipelined) {
    for (uint64_t i = 0; i < k->n; i++) {
      size_t len;
      uint32_t flags;
      memcached_return_t rc;
      char *got = memcached_get(m, k->ptr[i], k->len[i], &len, &flags, &rc);
      unsigned v = pair_value(w, i);
      size_t want = w->value_off[v + 1] - w->value_off[v];
      if (!got || len != want ||
          memcmp(got, w->values + w->value_off[v], want) != 0)
        t->wrong++;
      free(got);
    }
  } else {
    /* Multi-gets on a client that waits for replies (noreply is for
     * storage commands only). */
    memcached_st *g = client(&s, false);
    if (!g) goto done;
    check_ctx cc = {w, 0};
    memcached_execute_fn fn[1] = {check_one};
    for (uint64_t i = 0; i < k->n; i += o->batch) {
      size_t nb = (size_t)(k->n - i < o->batch ? k->n - i : o->batch);
      cc.right = 0;
      if (memcached_mget(g, k->ptr + i, k->len + i, nb) != MEMCACHED_SUCCESS) {
        memcached_free(g);
        goto done;
      }
      memcached_return_t rc = memcached_fetch_execute(g, fn, &cc, 1);
      if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_END &&
          rc != MEMCACHED_NOTFOUND) {
        fprintf(stderr, PROG ": memcached multi-get: %s\n",
                memcached_strerror(g, rc));
        memcached_free(g);
        goto done;
      }
      t->wrong += nb - cc.right;
    }
    memcached_free(g);
  }
  double t2 = now_s();
  t->query_s = t2 - t1;
  for (uint64_t i = 0; i < k->n; i++) {
    memcached_return_t rc = memcached_delete(m, k->ptr[i], k->len[i], 0);
    if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_BUFFERED) {
      fprintf(stderr, PROG ": memcached delete: %s\n",
              memcached_strerror(m, rc));
      goto done;
    }
    if (pipelined && (i + 1) % o->batch == 0 &&
        memcached_flush_buffers(m) != MEMCACHED_SUCCESS)
      goto done;
  }
  if (pipelined && sync_with(m, k)) goto done;
  t->delete_s = now_s() - t2;
  server_stats st;
  if (stats_of(&s, &st)) goto done;
  if (st.curr_items != 0) {
    fprintf(stderr, PROG ": %llu items left after deleting every pair\n",
            (unsigned long long)st.curr_items);
    goto done;
  }
  status = 0;
done:
  if (m) memcached_free(m);
  server_stop(&s);
  return status;
}

/* Fill a server of `limit_mib` until it refuses a pair; its stats. */
static int fill_memcached(const options *o, const workload *w,
                          uint64_t limit_mib, server_stats *st) {
  server s = {0};
  if (server_start(o, &s, limit_mib)) return 1;
  int status = 1;
  memcached_st *m = client(&s, false);
  if (!m) goto done;
  /* Sets wait for their reply, so the first refusal is seen; binary keys
   * would not be faster over loopback. */
  char key[MAX_KEY_BYTES];
  for (uint64_t i = 0; i < MAX_PAIRS; i++) {
    size_t klen = pair_key(w, i, key);
    unsigned v = pair_value(w, i);
    memcached_return_t rc =
        memcached_set(m, key, klen, w->values + w->value_off[v],
                      w->value_off[v + 1] - w->value_off[v], 0, 0);
    if (rc == MEMCACHED_SUCCESS) continue;
    /* -M: a full server refuses with an out-of-memory server error; any
     * other failure (a lost connection) would undercount what it holds. */
    if (rc == MEMCACHED_SERVER_MEMORY_ALLOCATION_FAILURE ||
        rc == MEMCACHED_SERVER_ERROR || rc == MEMCACHED_NOTSTORED)
      break;
    fprintf(stderr, PROG ": memcached set while filling: %s\n",
            memcached_strerror(m, rc));
    goto done;
  }
  if (stats_of(&s, st)) goto done;
  status = 0;
done:
  if (m) memcached_free(m);
  server_stop(&s);
  return status;
}

#endif /* BK_HAVE_LIBMEMCACHED */

/* ---- the kBF side
 * ------------------------------------------------------------ */

typedef struct kbf_memory {
  size_t cells, skbf, values;
} kbf_memory;

#ifdef BK_HAVE_KBF
static int kbf_make(const options *o, const workload *w, uint64_t n,
                    bk_kbf **out) {
  bk_kbf_config cfg = {.capacity = n,
                       .fpp = o->fpp,
                       .seed = o->seed,
                       .max_values = 4095,
                       .cell_bits = o->cell_bits == 1 ? 64u : 32u};
  TRY_BK(bk_kbf_create(out, &cfg));
  /* Intern the values in index order so value j has index j. */
  for (unsigned j = 0; j < N_VALUES; j++) {
    uint32_t idx;
    TRY_BK(bk_kbf_intern(*out, w->values + w->value_off[j],
                         w->value_off[j + 1] - w->value_off[j], &idx));
  }
  return 0;
fail:
  bk_kbf_destroy(*out);
  *out = NULL;
  return 1;
}

static int time_kbf(const options *o, const workload *w, const keyset *k,
                    phase_times *t) {
  bk_kbf *f = NULL;
  memset(t, 0, sizeof *t);
  if (kbf_make(o, w, k->n, &f)) return 1;
  double t0 = now_s();
  for (uint64_t i = 0; i < k->n; i++) {
    unsigned v = pair_value(w, i);
    TRY_BK(bk_kbf_insert(f, k->ptr[i], k->len[i], w->values + w->value_off[v],
                         w->value_off[v + 1] - w->value_off[v]));
  }
  double t1 = now_s();
  for (uint64_t i = 0; i < k->n; i++) {
    bk_kbf_result r;
    const void *val;
    size_t len;
    TRY_BK(bk_kbf_query(f, k->ptr[i], k->len[i], &r, &val, &len));
    unsigned v = pair_value(w, i);
    size_t want = w->value_off[v + 1] - w->value_off[v];
    if (r != BK_KBF_FOUND || len != want ||
        memcmp(val, w->values + w->value_off[v], want) != 0)
      t->wrong++;
  }
  double t2 = now_s();
  for (uint64_t i = 0; i < k->n; i++) {
    bk_status st = bk_kbf_delete(f, k->ptr[i], k->len[i]);
    if (st != BK_OK && st != BK_ENOTFOUND && st != BK_EUNDECODABLE) TRY_BK(st);
  }
  t->delete_s = now_s() - t2;
  t->insert_s = t1 - t0;
  t->query_s = t2 - t1;
  bk_kbf_destroy(f);
  return 0;
fail:
  bk_kbf_destroy(f);
  return 1;
}

static int kbf_memory_for(const options *o, const workload *w, uint64_t n,
                          kbf_memory *mem) {
  bk_kbf *f = NULL;
  if (kbf_make(o, w, n, &f)) return 1;
  char key[MAX_KEY_BYTES];
  for (uint64_t i = 0; i < n; i++) {
    size_t klen = pair_key(w, i, key);
    bk_hash h;
    TRY_BK(bk_kbf_hash(f, key, klen, &h));
    TRY_BK(bk_kbf_insert_index_hash(f, h, pair_value(w, i)));
  }
  bk_kbf_info in;
  TRY_BK(bk_kbf_info_get(f, &in));
  mem->cells = in.memory_cells;
  mem->skbf = in.memory_skbf;
  mem->values = in.memory_values;
  bk_kbf_destroy(f);
  return 0;
fail:
  bk_kbf_destroy(f);
  return 1;
}
#endif

/* ---- the command
 * ------------------------------------------------------------- */

static double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

/* DIR/name.csv for --plot. */
static FILE *plot_csv(const options *o, const char *name, char **path) {
  return bk_plot_open_csv(PROG, o->plot_dir, name, path, stderr);
}

/* Close Fig. 15's data f (at path, freed) and draw it. */
static int plot_fig15(const options *o, FILE *f, char *path) {
  bk_plot_figure fig = {
      .name = "kbf_fig15",
      .title = "Fig. 15: time to insert and query n pairs, memcached vs kBF",
      .x = "pairs",
      .xlabel = "k-v pairs",
      .ylabel = "seconds",
      .logx = true,
      .logy = true,
      .key = "outside top center horizontal",
      .n_series = 6,
      .series = {{"insert_s", "memcached insert, one at a time", false,
                  "system", "memcached-1by1"},
                 {"insert_s", "memcached insert, pipelined", false, "system",
                  "memcached-pipelined"},
                 {"insert_s", "kBF insert", false, "system", "kbf"},
                 {"query_s", "memcached query, one at a time", false, "system",
                  "memcached-1by1"},
                 {"query_s", "memcached multi-get", false, "system",
                  "memcached-pipelined"},
                 {"query_s", "kBF query", false, "system", "kbf"}},
  };
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, &fig, 1, stderr);
}

/* Close Fig. 16's data f (at path, freed) and draw it. */
static int plot_fig16(const options *o, FILE *f, char *path) {
  bk_plot_figure fig = {
      .name = "kbf_fig16",
      .title = "Fig. 16: memory for the pairs a full memcached holds",
      .x = "limit",
      .xlabel = "memcached -m",
      .ylabel = "MiB",
      .histogram = true,
      .key = "outside top center horizontal",
      .n_series = 4,
      .series = {{"server_mib", "memcached stats bytes"},
                 {"kbf_cells_mib", "kBF main cells"},
                 {"kbf_skbf_mib", "kBF secondary (s-kBF)"},
                 {"kbf_values_mib", "kBF value table"}},
  };
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, &fig, 1, stderr);
}

static int run(const options *o) {
  workload w = {0};
  if (workload_make(&w, o->seed)) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  int status = 1;
  printf("# " PROG
         ": ETC-like workload, %u values (%zu bytes), seed %llu, "
         "kBF fpp %g, %s-bit cells\n",
         N_VALUES, w.value_bytes, (unsigned long long)o->seed, o->fpp,
         o->cell_bits == 1 ? "64" : "32");
#ifndef BK_HAVE_LIBMEMCACHED
  fprintf(stderr, PROG
          ": built without libmemcached (Debian's "
          "libmemcached-dev; scripts/bootstrap.sh installs it)\n");
  goto done;
#else
  char *p15 = NULL, *p16 = NULL;
  FILE *f15 = NULL, *f16 = NULL;
  if (!o->no_time) {
    if (o->plot_dir) {
      if (!(f15 = plot_csv(o, "kbf_fig15", &p15))) goto done;
      fprintf(f15,
              "# kbf_fig15: seconds per phase, seed %llu\n"
              "pairs,system,insert_s,query_s,delete_s,wrong\n",
              (unsigned long long)o->seed);
    }
    printf(o->csv ? "pairs,system,insert_s,query_s,delete_s,wrong\n"
                  : "Fig. 15: seconds for n pairs\n%10s %-20s %10s %10s "
                    "%10s %8s\n",
           "pairs", "system", "insert", "query", "delete", "wrong");
    for (size_t p = 0; p < o->n_pairs; p++) {
      keyset k;
      uint64_t n = (uint64_t)o->pairs[p];
      if (keyset_make(&w, n, &k)) {
        fprintf(stderr, PROG ": out of memory\n");
        goto done;
      }
      phase_times t[3];
      const char *names[3] = {"memcached-1by1", "memcached-pipelined", "kbf"};
      int rows = 2;
      int bad = time_memcached(o, &w, &k, false, &t[0]) ||
                time_memcached(o, &w, &k, true, &t[1]);
#ifdef BK_HAVE_KBF
      if (!bad) {
        bad = time_kbf(o, &w, &k, &t[2]);
        rows = 3;
      }
#endif
      keyset_free(&k);
      if (bad) goto done;
      for (int r = 0; r < rows && f15; r++)
        fprintf(f15, "%llu,%s,%.6f,%.6f,%.6f,%llu\n", (unsigned long long)n,
                names[r], t[r].insert_s, t[r].query_s, t[r].delete_s,
                (unsigned long long)t[r].wrong);
      for (int r = 0; r < rows; r++)
        printf(o->csv ? "%llu,%s,%.6f,%.6f,%.6f,%llu\n"
                      : "%10llu %-20s %10.4f %10.4f %10.4f %8llu\n",
               (unsigned long long)n, names[r], t[r].insert_s, t[r].query_s,
               t[r].delete_s, (unsigned long long)t[r].wrong);
      if (rows == 3 && !o->csv)
        printf(
            "%10s %-20s %9.1fx %9.1fx %9.1fx   (memcached 1by1 / kBF; "
            "pipelined: %.1fx %.1fx %.1fx)\n",
            "", "ratio", ratio(t[0].insert_s, t[2].insert_s),
            ratio(t[0].query_s, t[2].query_s),
            ratio(t[0].delete_s, t[2].delete_s),
            ratio(t[1].insert_s, t[2].insert_s),
            ratio(t[1].query_s, t[2].query_s),
            ratio(t[1].delete_s, t[2].delete_s));
      fflush(stdout);
    }
  }
  if (f15) {
    int bad = plot_fig15(o, f15, p15);
    f15 = NULL;
    p15 = NULL;
    if (bad) goto done;
  }
  if (!o->no_memory) {
    if (o->plot_dir) {
      if (!(f16 = plot_csv(o, "kbf_fig16", &p16))) goto done;
      fprintf(f16,
              "# kbf_fig16: memory (MiB) when memcached is full, kBF "
              "fpp %g, seed %llu\nlimit,pairs,server_mib,limit_mib,"
              "kbf_cells_mib,kbf_skbf_mib,kbf_values_mib,kbf_total_mib\n",
              o->fpp, (unsigned long long)o->seed);
    }
    printf(o->csv ? "limit_mib,pairs_stored,server_bytes,limit_bytes,"
                    "kbf_cells,kbf_skbf,kbf_values,kbf_total,saving_vs_bytes,"
                    "saving_vs_limit\n"
                  : "Fig. 16: memory for what memcached holds when full\n"
                    "%6s %10s %12s %12s %12s %10s %10s %12s %8s %8s\n",
           "MiB", "pairs", "server_bytes", "limit", "kbf_cells", "kbf_skbf",
           "kbf_table", "kbf_total", "saving", "vs_limit");
    for (size_t l = 0; l < o->n_limits; l++) {
      uint64_t mib = (uint64_t)o->limits[l];
      server_stats st;
      if (fill_memcached(o, &w, mib, &st)) goto done;
      kbf_memory km = {0, 0, 0};
#ifdef BK_HAVE_KBF
      if (kbf_memory_for(o, &w, st.curr_items, &km)) goto done;
#endif
      size_t total = km.cells + km.skbf + km.values;
      double save_bytes = 1.0 - ratio((double)total, (double)st.bytes);
      double save_limit = 1.0 - ratio((double)total, (double)st.limit_maxbytes);
      printf(o->csv ? "%llu,%llu,%llu,%llu,%zu,%zu,%zu,%zu,%.4f,%.4f\n"
                    : "%6llu %10llu %12llu %12llu %12zu %10zu %10zu %12zu "
                      "%7.1f%% %7.1f%%\n",
             (unsigned long long)mib, (unsigned long long)st.curr_items,
             (unsigned long long)st.bytes,
             (unsigned long long)st.limit_maxbytes, km.cells, km.skbf,
             km.values, total, 100.0 * save_bytes, 100.0 * save_limit);
      if (f16)
        fprintf(f16, "%llu MiB,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                (unsigned long long)mib, (unsigned long long)st.curr_items,
                (double)st.bytes / 1048576.0,
                (double)st.limit_maxbytes / 1048576.0,
                (double)km.cells / 1048576.0, (double)km.skbf / 1048576.0,
                (double)km.values / 1048576.0, (double)total / 1048576.0);
      fflush(stdout);
    }
  }
  if (f16) {
    int bad = plot_fig16(o, f16, p16);
    f16 = NULL;
    p16 = NULL;
    if (bad) goto done;
  }
  status = 0;
#endif
done:
#ifdef BK_HAVE_LIBMEMCACHED
  if (f15) fclose(f15);
  if (f16) fclose(f16);
  free(p15);
  free(p16);
#endif
  free(w.values);
  return status;
}

#define MEMCACHED_DESCRIPTION                                              \
  "The kBF against a real memcached (kBF paper Sec. 6.3, Figs. 15-16):\n"  \
  "memcached is started on a free loopback port with evictions off (-M)\n" \
  "and a memory limit, always stopped again (also on Ctrl-C). Fig. 15:\n"  \
  "seconds to insert, query and delete n ETC-like pairs, memcached one\n"  \
  "request at a time and pipelined (noreply sets/deletes, multi-gets),\n"  \
  "and a kBF. Fig. 16: what memcached holds when full at each limit,\n"    \
  "its stats bytes against the kBF's cells, s-kBF and value table.\n"

static const char *const cell_choices[] = {"32", "64", NULL};

int bk_cli_kbf_memcached(int argc, char **argv) {
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_DOUBLE_LIST("pairs", o.pairs, &o.n_pairs, MAX_LIST,
                         "25000,50000,100000,200000", 1, 20000000, "LIST",
                         "Fig. 15: numbers of pairs timed"),
      BK_CLI_U64("time-limit", &o.time_limit_mib, 2048, 16, 65536, "MIB",
                 "memcached's -m for the timing runs"),
      BK_CLI_U64("batch", &o.batch, 100, 1, 100000, "N",
                 "pipelined requests per flush and keys per multi-get"),
      BK_CLI_DOUBLE_LIST("limits", o.limits, &o.n_limits, MAX_LIST,
                         "64,128,256,512,1024", 16, 65536, "LIST",
                         "Fig. 16: memcached memory limits (MiB)"),
      BK_CLI_CHOICE("cell-bits", &o.cell_bits, "32", cell_choices, "BITS",
                    "the kBF's cell width"),
      BK_CLI_DOUBLE("fpp", &o.fpp, 0.001, 0.0, 0.5, "P",
                    "the kBF's target false positive rate",
                    .d_open = BK_CLI_OPEN_MIN),
      BK_CLI_U64("seed", &o.seed, DEFAULT_SEED, 0, UINT64_MAX, "N",
                 "workload seed"),
      BK_CLI_STRING("memcached-path", &o.memcached, "memcached", "a program",
                    "PATH", "the memcached binary (found on PATH)"),
      BK_CLI_FLAG("no-time", &o.no_time, "skip Fig. 15",
                  .section = "what to run"),
      BK_CLI_FLAG("no-memory", &o.no_memory, "skip Fig. 16"),
      BK_CLI_FLAG("csv", &o.csv, "CSV tables", .section = "output"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/kbf_fig15 and kbf_fig16 (.csv, .png)",
                    .default_text = "no pictures"),
  };
  int status = bk_cli_parse_options(PROG, MEMCACHED_DESCRIPTION, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
  for (size_t i = 0; i < o.n_pairs; i++)
    if (o.pairs[i] != floor(o.pairs[i]))
      return bk_cli_usage_error(
          stderr, PROG, "--pairs: '%g' is not a whole number", o.pairs[i]);
  for (size_t i = 0; i < o.n_limits; i++)
    if (o.limits[i] != floor(o.limits[i]))
      return bk_cli_usage_error(
          stderr, PROG, "--limits: '%g' is not a whole number", o.limits[i]);
  if (o.plot_dir && bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
  return bk_cli_flush_output(PROG, run(&o), stdout, stderr);
}
