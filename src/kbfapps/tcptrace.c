/* SPDX-License-Identifier: MIT */
/*
 * The synthetic TCP trace and the reference state machine of tcptrace.h.
 */
#include "kbfapps/tcptrace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t next(rng *r) {
  r->s += GAMMA;
  return mix(r->s);
}

/* Uniform in (0, 1]: never 0, so log() is finite. */
static double unit_open0(rng *r) {
  return ((double)(next(r) >> 11) + 1.0) * 0x1.0p-53;
}

/* Shares of the kinds, per mille, in enum order (tcptrace.h). */
static const unsigned kind_permille[BK_TCP_N_KINDS] = {550, 100, 50,
                                                       100, 150, 50};

static const char *const kind_names[BK_TCP_N_KINDS] = {
    "closed", "reset", "refused", "half-open", "open", "half-closed"};

const char *bk__tcp_kind_name(bk__tcp_kind kind) {
  return (unsigned)kind < BK_TCP_N_KINDS ? kind_names[kind] : "?";
}

void bk__tcp_flow_key(uint64_t seed, uint32_t flow, unsigned char key[8]) {
  /* mix is a bijection of 64-bit words, so distinct flows get distinct
   * keys for a given seed. */
  uint64_t w = mix(((uint64_t)flow * GAMMA) ^ mix(seed));
  for (int i = 0; i < 8; i++) key[i] = (unsigned char)(w >> (56 - 8 * i));
}

bk__tcp_action bk__tcp_next(unsigned state, unsigned flag, unsigned *next) {
  unsigned to = state;
  bk__tcp_action a = BK_TCP_KEEP;
  switch (state) {
    case BK_TCP_NONE:
      if (flag == BK_TCP_SYN) {
        to = BK_TCP_S_SYN;
        a = BK_TCP_INSERT;
      }
      break;
    case BK_TCP_S_SYN:
      if (flag == BK_TCP_SYNACK) {
        to = BK_TCP_S_SYNACK;
        a = BK_TCP_UPDATE;
      } else if (flag == BK_TCP_RST) {
        a = BK_TCP_DELETE;
      }
      break;
    case BK_TCP_S_SYNACK:
      if (flag == BK_TCP_ACK) {
        to = BK_TCP_S_ESTABLISHED;
        a = BK_TCP_UPDATE;
      } else if (flag == BK_TCP_RST) {
        a = BK_TCP_DELETE;
      }
      break;
    case BK_TCP_S_ESTABLISHED:
      if (flag == BK_TCP_FIN) {
        to = BK_TCP_S_FIN_WAIT;
        a = BK_TCP_UPDATE;
      } else if (flag == BK_TCP_RST) {
        a = BK_TCP_DELETE;
      }
      break;
    case BK_TCP_S_FIN_WAIT:
      if (flag == BK_TCP_FIN) {
        to = BK_TCP_S_CLOSING;
        a = BK_TCP_UPDATE;
      } else if (flag == BK_TCP_RST) {
        a = BK_TCP_DELETE;
      }
      break;
    case BK_TCP_S_CLOSING:
      if (flag == BK_TCP_ACK || flag == BK_TCP_RST) a = BK_TCP_DELETE;
      break;
    default:
      break;
  }
  if (next) *next = to;
  return a;
}

typedef struct timed {
  double t;
  uint32_t flow;
  uint8_t flag;
  uint8_t seq;
} timed;

static int cmp_timed(const void *pa, const void *pb) {
  const timed *a = pa, *b = pb;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  if (a->flow != b->flow) return a->flow < b->flow ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Data packets: geometric on {0, 1, ...} with the given mean, capped. */
static unsigned geometric(rng *r, double mean) {
  if (mean <= 0.0) return 0;
  double q = mean / (1.0 + mean); /* P(X >= j + 1 | X >= j) */
  double x = floor(log(unit_open0(r)) / log(q));
  return x > 200.0 ? 200u : (unsigned)x;
}

bk_status bk__tcp_trace_generate(const bk__tcp_trace_config *cfg,
                                 bk__tcp_trace *out) {
  if (!cfg || !out || cfg->n_flows == 0 || cfg->n_flows > (UINT64_C(1) << 31) ||
      !isfinite(cfg->data_mean) || cfg->data_mean < 0.0 ||
      cfg->data_mean > 100.0 || !isfinite(cfg->duration) ||
      cfg->duration < 0.0 || !isfinite(cfg->gap) || cfg->gap < 0.0)
    return BK_EINVAL;
  double data_mean = cfg->data_mean > 0.0 ? cfg->data_mean : 4.0;
  double duration = cfg->duration > 0.0 ? cfg->duration : (double)cfg->n_flows;
  double gap = cfg->gap > 0.0 ? cfg->gap : 50.0;
  memset(out, 0, sizeof *out);
  size_t cap = (size_t)cfg->n_flows * 12, n = 0;
  timed *ev = malloc(cap * sizeof *ev);
  if (!ev) return BK_ENOMEM;
  rng r = {mix(cfg->seed ^ UINT64_C(0x7463707472616365))};
  uint8_t seq_flags[220];
  for (uint32_t f = 0; f < cfg->n_flows; f++) {
    unsigned pick = (unsigned)((next(&r) >> 32) * 1000u >> 32), kind = 0;
    for (unsigned acc = kind_permille[0]; pick >= acc;)
      acc += kind_permille[++kind];
    out->kinds[kind]++;
    size_t len = 0;
    seq_flags[len++] = BK_TCP_SYN;
    if (kind == BK_TCP_HALF_OPEN) {
      unsigned repeats = (unsigned)(next(&r) % 3);
      for (unsigned i = 0; i < repeats; i++) seq_flags[len++] = BK_TCP_SYN;
    } else if (kind == BK_TCP_REFUSED) {
      seq_flags[len++] = BK_TCP_RST;
    } else {
      seq_flags[len++] = BK_TCP_SYNACK;
      seq_flags[len++] = BK_TCP_ACK;
      unsigned d = geometric(&r, data_mean);
      for (unsigned i = 0; i < d; i++) seq_flags[len++] = BK_TCP_ACK;
      if (kind == BK_TCP_CLOSED) {
        seq_flags[len++] = BK_TCP_FIN;
        seq_flags[len++] = BK_TCP_ACK;
        seq_flags[len++] = BK_TCP_FIN;
        seq_flags[len++] = BK_TCP_ACK;
      } else if (kind == BK_TCP_RESET) {
        seq_flags[len++] = BK_TCP_RST;
      } else if (kind == BK_TCP_HALF_CLOSED) {
        seq_flags[len++] = BK_TCP_FIN;
      }
    }
    if (n + len > cap) {
      size_t ncap = cap + cap / 2 + len;
      timed *grown = realloc(ev, ncap * sizeof *ev);
      if (!grown) {
        free(ev);
        return BK_ENOMEM;
      }
      ev = grown;
      cap = ncap;
    }
    double t = duration * (unit_open0(&r) - 0x1.0p-53);
    for (size_t i = 0; i < len; i++) {
      if (i) t += -gap * log(unit_open0(&r));
      ev[n++] = (timed){t, f, seq_flags[i], (uint8_t)i};
    }
  }
  qsort(ev, n, sizeof *ev, cmp_timed);
  out->events = malloc((n ? n : 1) * sizeof *out->events);
  if (!out->events) {
    free(ev);
    memset(out, 0, sizeof *out);
    return BK_ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    out->events[i] = (bk__tcp_event){ev[i].flow, ev[i].flag};
  free(ev);
  out->n_events = n;
  out->n_flows = cfg->n_flows;
  out->seed = cfg->seed;
  return BK_OK;
}

void bk__tcp_trace_free(bk__tcp_trace *t) {
  if (!t) return;
  free(t->events);
  memset(t, 0, sizeof *t);
}

bk_status bk__tcp_trace_peak(const bk__tcp_trace *t, uint64_t *peak) {
  if (!t || !peak || (t->n_events && !t->events)) return BK_EINVAL;
  uint8_t *st = calloc(t->n_flows ? t->n_flows : 1, 1);
  if (!st) return BK_ENOMEM;
  uint64_t live = 0, most = 0;
  for (size_t i = 0; i < t->n_events; i++) {
    const bk__tcp_event *e = &t->events[i];
    if (e->flow >= t->n_flows) {
      free(st);
      return BK_EINVAL;
    }
    unsigned to = 0;
    switch (bk__tcp_next(st[e->flow], e->flag, &to)) {
      case BK_TCP_INSERT:
        if (++live > most) most = live;
        st[e->flow] = (uint8_t)to;
        break;
      case BK_TCP_UPDATE:
        st[e->flow] = (uint8_t)to;
        break;
      case BK_TCP_DELETE:
        live--;
        st[e->flow] = 0;
        break;
      case BK_TCP_KEEP:
        break;
    }
  }
  free(st);
  *peak = most;
  return BK_OK;
}
