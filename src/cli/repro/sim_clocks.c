/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit sim clocks`: Bloom clocks against vector clocks on a simulated
 * message-passing execution (issue #12; the slides "The Bloom Clock to
 * Characterize Causality in Distributed Systems", "Bloom Clock - Performance
 * Metrics", "Computing Metrics on an Execution Slice" and "Future Work").
 *
 * The model. p processes on a topology: complete (anyone sends to anyone),
 * ring (to either neighbour) or random (each process links to --degree / 2
 * random others, links are two-way, so the mean degree is about --degree).
 * The run is p * --events-per-process steps; at each step a process chosen
 * uniformly makes one event: internal with share --internal, a send with
 * share --send (to a random neighbour, delivered after a delay drawn
 * uniformly from [--delay-min, --delay-max] rounds, a round being p steps),
 * otherwise a receive of one message that has arrived (the oldest arrival;
 * channels are not FIFO between different senders' delays) or, if none has,
 * an internal event. Every process keeps a bk_bloomclock and a bk_vclock;
 * a message carries the Bloom clock's wire form (bk_bloomclock_receive) and
 * the vector clock.
 *
 * What is measured, on two sets of ordered pairs (y, z) of distinct events:
 *   sampled  --pairs pairs drawn from --sample-events events recorded
 *            uniformly over the whole run;
 *   slice    every ordered pair of --slice consecutive events from the
 *            middle of the run (the slides' execution slice).
 * Truth: y -> z by the vector clocks. Bloom positive: B_z >= B_y (compare
 * says before or equal). TP, FP, TN, FN; accuracy, precision, recall (1:
 * no false negative, checked, the run fails otherwise), fpr = FP/(FP+TN);
 * and the slides' estimates from pr_p over the first --pr-pairs pairs of
 * each set: 1 - Acc^ = sum (1-pr_p) d / n, 1 - Prec^ = sum (1-pr_p) d /
 * sum d, fpr^ = sum (1-pr_p) d / sum (1 - pr_p d), d = [B_z >= B_y].
 * Distance: the events z has seen that y has not (bk_vclock_unseen), in
 * powers of two; per distance the measured rate of positives among
 * concurrent pairs, mean pr_p, the slides' pr_fp = (1 - pr_p) pr_p and the
 * measured share of false positives among all pairs.
 *
 * Randomness from --seed: stream 1 the topology, stream 2 the schedule,
 * stream 3 the sampling. A sweep (--sweep-m, --sweep-k, --sweep-p) reruns
 * the same seed per value.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/bloomclock.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"
#include "cli/repro/repro.h"

#define PROG "bloomkit sim clocks"
/* Every process holds a vector clock of p entries: p^2 * 4 bytes, 1 GiB at
 * the cap. */
#define MAX_P 16384u
#define MAX_SWEEP 32
#define N_DIST 40

typedef enum { TOPO_COMPLETE, TOPO_RING, TOPO_RANDOM } topology;
static const char *const topology_names[] = {"complete", "ring", "random",
                                             NULL};

typedef struct options {
  uint64_t p, events_per_process, degree, m, sample_events, pairs, pr_pairs,
      slice, seed;
  unsigned k, counter_bits, topo;
  double internal, send, delay_min, delay_max, target_fpr;
  bool csv, table;
  const char *plot_dir;
  double sweep_m[MAX_SWEEP], sweep_k[MAX_SWEEP], sweep_p[MAX_SWEEP];
  size_t n_sweep_m, n_sweep_k, n_sweep_p;
  bool set_m, set_k;
} options;

/* Counts of one set of pairs, overall and per distance bucket. */
typedef struct tally {
  uint64_t tp, fp, tn, fn;
  uint64_t n_pr;                             /* pairs with pr_p computed */
  double sum_pr, est_fp, est_den, sum_delta; /* the slides' sums over them */
} tally;

typedef struct bucket {
  tally t;
  uint64_t concurrent, concurrent_pos; /* y || z; and B_z >= B_y among them */
  double sum_pr_conc, sum_prfp;        /* over pr-evaluated pairs */
  uint64_t n_pr_conc;
  /* Over concurrent pairs: events y has seen that z has not (u), the
   * params model's rate for one such event (u = 1) and for u of them. */
  double sum_u, sum_model_one, sum_model_u;
} bucket;

typedef struct result {
  uint64_t p, m, events, messages;
  unsigned k;
  tally sampled, slice;
  bucket dist[N_DIST];
  size_t bloom_bytes, vector_bytes;
  uint64_t saturated;
  /* Distances of the concurrent sampled pairs: how far apart concurrent
   * events get, the window bk_bloomclock_params needs. */
  uint64_t n_concurrent, d50, d90, d99;
} result;

static uint64_t next(uint64_t *s) {
  return splitmix_output(*s += SPLITMIX_GAMMA);
}
static double unit(uint64_t *s) {
  return (double)(next(s) >> 11) * 0x1p-53;
}
static uint64_t below(uint64_t *s, uint64_t n) {
  return bk_reduce(next(s), n);
}

/* ---- the execution --------------------------------------------------------
 */

typedef struct message {
  uint64_t arrival;
  unsigned char *wire;
  size_t wire_len;
  bk_vclock *v;
} message;

typedef struct inbox {
  message *msgs;
  size_t n, cap;
} inbox;

typedef struct record {
  bk_bloomclock *b;
  bk_vclock *v;
} record;

static void record_free(record *r) {
  bk_bloomclock_destroy(r->b);
  bk_vclock_destroy(r->v);
}

/* Neighbours: complete needs none stored; ring is i +- 1; random keeps an
 * adjacency list. */
typedef struct graph {
  uint64_t **adj;
  uint64_t *deg, *cap;
} graph;

static int add_edge(graph *g, uint64_t a, uint64_t b) {
  if (g->deg[a] == g->cap[a]) {
    uint64_t nc = g->cap[a] ? 2 * g->cap[a] : 8;
    uint64_t *n = realloc(g->adj[a], nc * sizeof *n);
    if (!n) return 1;
    g->adj[a] = n;
    g->cap[a] = nc;
  }
  g->adj[a][g->deg[a]++] = b;
  return 0;
}

static uint64_t pick_neighbour(const options *o, const graph *g, uint64_t i,
                               uint64_t *rng) {
  switch (o->topo) {
    case TOPO_RING:
      return next(rng) & 1 ? (i + 1) % o->p : (i + o->p - 1) % o->p;
    case TOPO_RANDOM:
      if (g->deg[i]) return g->adj[i][below(rng, g->deg[i])];
      break; /* an isolated process talks to anyone */
    default:
      break;
  }
  {
    uint64_t j = below(rng, o->p - 1);
    return j >= i ? j + 1 : j;
  }
}

static unsigned dist_bucket(uint64_t d) {
  unsigned b = 0;
  while (d > 1 && b < N_DIST - 1) {
    d >>= 1;
    b++;
  }
  return d == 0 ? 0 : b + 1 < N_DIST ? b + 1 : N_DIST - 1;
}

/* Evaluate one ordered pair into t (and the distance buckets if given). */
/* *conc_d (may be NULL) receives the distance of a concurrent pair, and
 * UINT64_MAX for any other. */
static int evaluate(const record *y, const record *z, bool with_pr, tally *t,
                    bucket *dist, uint64_t m, unsigned k, uint64_t *conc_d) {
  bk_causality truth, got;
  uint64_t d;
  if (bk_vclock_compare(y->v, z->v, &truth) != BK_OK ||
      bk_bloomclock_compare(y->b, z->b, &got) != BK_OK ||
      bk_vclock_unseen(y->v, z->v, &d) != BK_OK)
    return 1;
  const bool pos = got == BK_CAUSAL_BEFORE || got == BK_CAUSAL_EQUAL;
  const bool real = truth == BK_CAUSAL_BEFORE;
  if (conc_d) *conc_d = truth == BK_CAUSAL_CONCURRENT ? d : UINT64_MAX;
  if (real && !pos) {
    fprintf(stderr, PROG ": FALSE NEGATIVE: the Bloom clock missed y -> z\n");
    return 1;
  }
  tally *ts[2] = {t, dist ? &dist[dist_bucket(d)].t : NULL};
  double pr = 0;
  if (with_pr && bk_bloomclock_pr_p(y->b, z->b, &pr) != BK_OK) return 1;
  for (int i = 0; i < 2; i++) {
    tally *x = ts[i];
    if (!x) continue;
    x->tp += real && pos;
    x->fn += real && !pos;
    x->fp += !real && pos;
    x->tn += !real && !pos;
    if (with_pr) {
      const double delta = pos ? 1 : 0;
      x->n_pr++;
      x->sum_pr += pr;
      x->est_fp += (1 - pr) * delta;
      x->est_den += 1 - pr * delta;
      x->sum_delta += delta;
    }
  }
  if (dist && truth == BK_CAUSAL_CONCURRENT) {
    bucket *b = &dist[dist_bucket(d)];
    b->concurrent++;
    b->concurrent_pos += pos;
    /* The Bloom filter model behind bk_bloomclock_params: each of y's k
     * increments per unseen event must land on a counter z's d unseen
     * events raised, probability f = 1 - (1 - 1/m)^(k d) each. */
    uint64_t u;
    if (bk_vclock_unseen(z->v, y->v, &u) != BK_OK) return 1;
    const double f = -expm1((double)k * (double)d * log1p(-1.0 / (double)m));
    b->sum_u += (double)u;
    b->sum_model_one += pow(f, (double)k);
    b->sum_model_u += pow(f, (double)k * (double)u);
    if (with_pr) {
      b->n_pr_conc++;
      b->sum_pr_conc += pr;
    }
  }
  if (dist && with_pr) dist[dist_bucket(d)].sum_prfp += (1 - pr) * pr;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int run(const options *o, result *res) {
  int status = 1;
  const uint64_t p = o->p, n_events = o->p * o->events_per_process;
  memset(res, 0, sizeof *res);
  res->p = p;
  res->m = o->m;
  res->k = o->k;
  res->events = n_events;
  uint64_t topo_rng = o->seed ^ 1, sched = o->seed ^ 2, samp = o->seed ^ 3;
  bk_bloomclock **B = calloc(p, sizeof *B);
  bk_vclock **V = calloc(p, sizeof *V);
  inbox *in = calloc(p, sizeof *in);
  graph g = {calloc(p, sizeof *g.adj), calloc(p, sizeof *g.deg),
             calloc(p, sizeof *g.cap)};
  const uint64_t slice_start =
      n_events / 2 > o->slice / 2 ? n_events / 2 - o->slice / 2 : 0;
  const uint64_t slice_len =
      o->slice < n_events - slice_start ? o->slice : n_events - slice_start;
  record *sampled = calloc(o->sample_events + 1, sizeof *sampled);
  record *slice = calloc(slice_len + 1, sizeof *slice);
  size_t n_sampled = 0, n_slice = 0;
  unsigned char *wire = NULL;
  size_t wire_cap = 0;
  uint64_t *conc = NULL;
  if (!B || !V || !in || !g.adj || !g.deg || !g.cap || !sampled || !slice) {
    fprintf(stderr, PROG ": out of memory\n");
    goto fail;
  }
  const bk_bloomclock_config bc = {
      .m = o->m, .k = o->k, .counter_bits = o->counter_bits};
  for (uint64_t i = 0; i < p; i++) {
    bk_bloomclock_config c = bc;
    c.process_id = i;
    TRY_BK(bk_bloomclock_create(&B[i], &c));
    TRY_BK(bk_vclock_create(
        &V[i], &(bk_vclock_config){.processes = p, .process_id = i}));
  }
  if (o->topo == TOPO_RANDOM)
    for (uint64_t i = 0; i < p; i++)
      for (uint64_t e = 0; e < (o->degree + 1) / 2; e++) {
        uint64_t j = below(&topo_rng, p - 1);
        if (j >= i) j++;
        if (add_edge(&g, i, j) || add_edge(&g, j, i)) {
          fprintf(stderr, PROG ": out of memory\n");
          goto fail;
        }
      }
  TRY_BK(bk_bloomclock_serialized_size(B[0], &wire_cap));
  res->bloom_bytes = wire_cap;
  TRY_BK(bk_vclock_serialized_size(V[0], &res->vector_bytes));
  /* Events are recorded for the sampled set with probability
   * sample_events / n_events (capped at sample_events). */
  const double keep = (double)o->sample_events / (double)n_events;
  for (uint64_t s = 0; s < n_events; s++) {
    const uint64_t i = below(&sched, p);
    const double u = unit(&sched);
    bool received = false;
    if (u >= o->internal + o->send) {
      inbox *box = &in[i];
      size_t best = SIZE_MAX;
      for (size_t j = 0; j < box->n; j++)
        if (box->msgs[j].arrival <= s &&
            (best == SIZE_MAX ||
             box->msgs[j].arrival < box->msgs[best].arrival))
          best = j;
      if (best != SIZE_MAX) {
        message msg = box->msgs[best];
        box->msgs[best] = box->msgs[--box->n];
        TRY_BK(bk_bloomclock_receive(B[i], msg.wire, msg.wire_len));
        TRY_BK(bk_vclock_merge(V[i], msg.v));
        free(msg.wire);
        bk_vclock_destroy(msg.v);
        received = true;
      }
    }
    if (!received) {
      TRY_BK(bk_bloomclock_tick(B[i]));
      TRY_BK(bk_vclock_tick(V[i]));
      if (u >= o->internal && u < o->internal + o->send && p > 1) {
        const uint64_t to = pick_neighbour(o, &g, i, &sched);
        const double delay =
            o->delay_min + (o->delay_max - o->delay_min) * unit(&sched);
        message msg = {.arrival = s + 1 + (uint64_t)(delay * (double)p),
                       .wire = malloc(wire_cap)};
        if (!msg.wire) {
          fprintf(stderr, PROG ": out of memory\n");
          goto fail;
        }
        TRY_BK(
            bk_bloomclock_serialize(B[i], msg.wire, wire_cap, &msg.wire_len));
        TRY_BK(bk_vclock_create(&msg.v, &(bk_vclock_config){.processes = p}));
        TRY_BK(bk_vclock_copy(msg.v, V[i]));
        inbox *box = &in[to];
        if (box->n == box->cap) {
          size_t nc = box->cap ? 2 * box->cap : 4;
          message *nm = realloc(box->msgs, nc * sizeof *nm);
          if (!nm) {
            free(msg.wire);
            bk_vclock_destroy(msg.v);
            fprintf(stderr, PROG ": out of memory\n");
            goto fail;
          }
          box->msgs = nm;
          box->cap = nc;
        }
        box->msgs[box->n++] = msg;
        res->messages++;
      }
    }
    /* Record the event's timestamps. */
    record *dst[2] = {NULL, NULL};
    if (n_sampled < o->sample_events && unit(&samp) < keep)
      dst[0] = &sampled[n_sampled++];
    if (s >= slice_start && s < slice_start + slice_len)
      dst[1] = &slice[n_slice++];
    for (int r = 0; r < 2; r++) {
      if (!dst[r]) continue;
      TRY_BK(bk_bloomclock_create(&dst[r]->b, &bc));
      TRY_BK(bk_vclock_create(&dst[r]->v, &(bk_vclock_config){.processes = p}));
      TRY_BK(bk_bloomclock_copy(dst[r]->b, B[i]));
      TRY_BK(bk_vclock_copy(dst[r]->v, V[i]));
    }
  }
  for (uint64_t i = 0; i < p; i++) {
    bk_bloomclock_info info;
    TRY_BK(bk_bloomclock_info_get(B[i], &info));
    res->saturated += info.saturated;
  }
  /* Sampled pairs. */
  if (n_sampled >= 2 && o->pairs) {
    conc = malloc(o->pairs * sizeof *conc);
    if (!conc) {
      fprintf(stderr, PROG ": out of memory\n");
      goto fail;
    }
  }
  if (conc)
    for (uint64_t q = 0; q < o->pairs; q++) {
      const uint64_t a = below(&samp, n_sampled);
      uint64_t b = below(&samp, n_sampled - 1);
      if (b >= a) b++;
      uint64_t d;
      if (evaluate(&sampled[a], &sampled[b], q < o->pr_pairs, &res->sampled,
                   res->dist, o->m, o->k, &d))
        goto fail;
      if (d != UINT64_MAX) conc[res->n_concurrent++] = d;
    }
  if (res->n_concurrent) {
    qsort(conc, res->n_concurrent, sizeof *conc, cmp_u64);
    const uint64_t n = res->n_concurrent;
    res->d50 = conc[(n - 1) / 2];
    res->d90 = conc[(n - 1) * 9 / 10];
    res->d99 = conc[(n - 1) * 99 / 100];
  }
  /* Every ordered pair of the slice; pr_p on a spread-out subset of them. */
  const uint64_t slice_pairs = (uint64_t)n_slice * (n_slice ? n_slice - 1 : 0);
  const uint64_t pr_every =
      o->pr_pairs ? (slice_pairs + o->pr_pairs - 1) / o->pr_pairs : 0;
  uint64_t idx = 0;
  for (size_t a = 0; a < n_slice; a++)
    for (size_t b = 0; b < n_slice; b++) {
      if (a == b) continue;
      const bool with_pr = pr_every && idx % pr_every == 0;
      idx++;
      if (evaluate(&slice[a], &slice[b], with_pr, &res->slice, NULL, o->m, o->k,
                   NULL))
        goto fail;
    }
  status = 0;
fail:
  for (uint64_t i = 0; B && i < p; i++) bk_bloomclock_destroy(B[i]);
  for (uint64_t i = 0; V && i < p; i++) bk_vclock_destroy(V[i]);
  for (uint64_t i = 0; in && i < p; i++) {
    for (size_t j = 0; j < in[i].n; j++) {
      free(in[i].msgs[j].wire);
      bk_vclock_destroy(in[i].msgs[j].v);
    }
    free(in[i].msgs);
  }
  for (uint64_t i = 0; g.adj && i < p; i++) free(g.adj[i]);
  for (size_t i = 0; sampled && i < n_sampled; i++) record_free(&sampled[i]);
  for (size_t i = 0; slice && i < n_slice; i++) record_free(&slice[i]);
  free(wire);
  free(conc);
  free(B);
  free(V);
  free(in);
  free(g.adj);
  free(g.deg);
  free(g.cap);
  free(sampled);
  free(slice);
  return status;
}

/* ---- output ----------------------------------------------------------------
 */

static double ratio(double a, double b) {
  return b > 0 ? a / b : NAN;
}

typedef struct metrics {
  uint64_t n;
  double accuracy, precision, recall, fpr;
  double est_accuracy, est_precision, est_fpr, mean_pr;
} metrics;

static metrics metrics_of(const tally *t) {
  metrics x;
  x.n = t->tp + t->fp + t->tn + t->fn;
  x.accuracy = ratio((double)(t->tp + t->tn), (double)x.n);
  x.precision = ratio((double)t->tp, (double)(t->tp + t->fp));
  x.recall = ratio((double)t->tp, (double)(t->tp + t->fn));
  x.fpr = ratio((double)t->fp, (double)(t->fp + t->tn));
  x.est_accuracy = 1 - ratio(t->est_fp, (double)t->n_pr);
  x.est_precision = 1 - ratio(t->est_fp, t->sum_delta);
  x.est_fpr = ratio(t->est_fp, t->est_den);
  x.mean_pr = ratio(t->sum_pr, (double)t->n_pr);
  return x;
}

#define ROW_HEADER                                                    \
  "set,p,m,k,events,pairs,tp,fp,tn,fn,accuracy,precision,recall,fpr," \
  "est_accuracy,est_precision,est_fpr,mean_pr_p,bloom_bytes,vector_bytes"

static void print_row(FILE *f, const char *set, const result *r,
                      const tally *t) {
  metrics x = metrics_of(t);
  fprintf(f,
          "%s,%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64
          ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
          ",%.6f,%.6f,%.6f,%.6f,%.6f,"
          "%.6f,%.6f,%.6f,%zu,%zu\n",
          set, r->p, r->m, r->k, r->events, x.n, t->tp, t->fp, t->tn, t->fn,
          x.accuracy, x.precision, x.recall, x.fpr, x.est_accuracy,
          x.est_precision, x.est_fpr, x.mean_pr, r->bloom_bytes,
          r->vector_bytes);
}

#define DIST_HEADER                                              \
  "distance_lo,distance_hi,pairs,concurrent,conc_positive_rate," \
  "mean_pr_p_concurrent,mean_pr_fp_formula,fp_share_measured,"   \
  "mean_pr_p,mean_u,model_one_event,model_u_events"

static void print_dist(FILE *f, const result *r) {
  for (unsigned b = 0; b < N_DIST; b++) {
    const bucket *x = &r->dist[b];
    const uint64_t n = x->t.tp + x->t.fp + x->t.tn + x->t.fn;
    if (!n) continue;
    const uint64_t lo = b == 0 ? 0 : (uint64_t)1 << (b - 1);
    const uint64_t hi = b == 0 ? 0 : ((uint64_t)1 << b) - 1;
    const double nc = (double)x->concurrent;
    fprintf(f,
            "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
            ",%.6f,%.6f,%.6f,%.6f,%.6f,%.1f,%.6f,%.6f\n",
            lo, hi, n, x->concurrent, ratio((double)x->concurrent_pos, nc),
            ratio(x->sum_pr_conc, (double)x->n_pr_conc),
            ratio(x->sum_prfp, (double)x->t.n_pr),
            ratio((double)x->t.fp, (double)n),
            ratio(x->t.sum_pr, (double)x->t.n_pr), ratio(x->sum_u, nc),
            ratio(x->sum_model_one, nc), ratio(x->sum_model_u, nc));
  }
}

static void print_text(const options *o, const result *r) {
  printf("%s: p = %" PRIu64 " processes, %" PRIu64 " events, %" PRIu64
         " messages, topology %s, m = %" PRIu64
         ", k = %u, %u-bit counters, "
         "seed %" PRIu64 "\n",
         PROG, r->p, r->events, r->messages, topology_names[o->topo], r->m,
         r->k, o->counter_bits, o->seed);
  printf(
      "wire: Bloom clock %zu bytes, vector clock %zu bytes (vector / "
      "Bloom %.2f); "
      "saturated counters at the end: %" PRIu64 "\n",
      r->bloom_bytes, r->vector_bytes,
      (double)r->vector_bytes / (double)r->bloom_bytes, r->saturated);
  const char *names[2] = {"sampled", "slice"};
  const tally *ts[2] = {&r->sampled, &r->slice};
  printf("%-8s %9s %8s %8s %9s %4s %9s %9s %6s %9s | %9s %9s %9s %8s\n", "set",
         "pairs", "TP", "FP", "TN", "FN", "accuracy", "precision", "recall",
         "fpr", "est acc", "est prec", "est fpr", "mean pr_p");
  for (int i = 0; i < 2; i++) {
    metrics x = metrics_of(ts[i]);
    printf("%-8s %9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %4" PRIu64
           " %9.4f %9.4f %6.3f %9.4f | %9.4f %9.4f %9.4f %8.4f\n",
           names[i], x.n, ts[i]->tp, ts[i]->fp, ts[i]->tn, ts[i]->fn,
           x.accuracy, x.precision, x.recall, x.fpr, x.est_accuracy,
           x.est_precision, x.est_fpr, x.mean_pr);
  }
  if (r->n_concurrent) {
    const uint64_t ev = (r->d99 + r->p - 1) / r->p;
    uint64_t pm = 0;
    unsigned pk = 0;
    printf("\nconcurrent sampled pairs: %" PRIu64
           "; events z has seen that y "
           "has not: median %" PRIu64 ", 90 %% %" PRIu64 ", 99 %% %" PRIu64
           " (%" PRIu64 " per process)\n",
           r->n_concurrent, r->d50, r->d90, r->d99, ev);
    if (bk_bloomclock_params(r->p, ev, o->target_fpr, &pm, &pk) == BK_OK)
      printf("bk_bloomclock_params(%" PRIu64 ", %" PRIu64
             ", %g) for that "
             "window (worst case, y one event ahead): m = %" PRIu64
             ", k = %u\n",
             r->p, ev, o->target_fpr, pm, pk);
  }
  printf(
      "\nby distance (events z has seen that y has not), sampled "
      "pairs:\n" DIST_HEADER "\n");
  print_dist(stdout, r);
}

static void print_table(void) {
  static const uint64_t ps[] = {16, 64, 256, 1024, 4096};
  static const uint64_t evs[] = {1, 4};
  static const double fprs[] = {0.1, 0.01, 0.001};
  printf("p,events,target_fpr,window,m,k,bloom_bytes,vector_bytes\n");
  for (size_t a = 0; a < 5; a++)
    for (size_t b = 0; b < 2; b++)
      for (size_t c = 0; c < 3; c++) {
        uint64_t m;
        unsigned k;
        if (bk_bloomclock_params(ps[a], evs[b], fprs[c], &m, &k) != BK_OK)
          continue;
        printf("%" PRIu64 ",%" PRIu64 ",%g,%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64
               ",%" PRIu64 "\n",
               ps[a], evs[b], fprs[c], ps[a] * evs[b], m, k,
               (m + 7) / 8 * 8 + 72, (ps[a] * 4 + 7) / 8 * 8 + 56);
      }
}

/* ---- figures
 * ----------------------------------------------------------------- */

static int plot_distance(const options *o, const result *r) {
  char *path;
  FILE *f =
      bk_plot_open_csv(PROG, o->plot_dir, "clocks_distance", &path, stderr);
  if (!f) return 1;
  fprintf(f,
          "# %s: p=%" PRIu64 " m=%" PRIu64 " k=%u topology=%s seed=%" PRIu64
          "\n" DIST_HEADER "\n",
          PROG, r->p, r->m, r->k, topology_names[o->topo], o->seed);
  print_dist(f, r);
  bk_plot_figure fig = {
      .name = "clocks_distance",
      .title = "Bloom clock: positives against the distance from y to z",
      .x = "distance_hi",
      .xlabel = "events z has seen that y has not (bucket upper end)",
      .ylabel = "probability (0 not drawn)",
      .logx = true,
      .logy = true,
      .key = "top left",
      .n_series = 6,
      .series = {{.column = "conc_positive_rate",
                  .title = "measured: B_z >= B_y among concurrent pairs"},
                 {.column = "mean_pr_p_concurrent",
                  .title = "slides' pr_p, concurrent pairs (mean)"},
                 {.column = "fp_share_measured",
                  .title = "measured: false positives among all pairs"},
                 {.column = "mean_pr_fp_formula",
                  .title = "slides' pr_fp = (1 - pr_p) pr_p (mean)"},
                 {.column = "model_one_event",
                  .title = "params model, y one event ahead (worst case)"},
                 {.column = "model_u_events",
                  .title = "Bloom-filter model, y u events ahead"}},
  };
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, &fig, 1, stderr);
}

static int plot_sweep(const options *o, const char *name, const char *x,
                      const char *xlabel, const char *title,
                      const char *csv_text) {
  char *path;
  FILE *f = bk_plot_open_csv(PROG, o->plot_dir, name, &path, stderr);
  if (!f) return 1;
  fputs(csv_text, f);
  bk_plot_figure fig = {
      .name = name,
      .title = title,
      .x = x,
      .xlabel = xlabel,
      .ylabel = "rate",
      .logx = true,
      .logy = true,
      .key = "bottom left",
      .n_series = 3,
      .series = {{.column = "fpr", .title = "measured fpr"},
                 {.column = "est_fpr", .title = "slides' estimate fpr^"},
                 {.column = "one_minus_precision",
                  .title = "measured 1 - precision"}},
  };
  return bk_plot_close_and_draw(PROG, o->plot_dir, f, path, &fig, 1, stderr);
}

/* ---- the command
 * ------------------------------------------------------------- */

static int resolve_mk(options *o) {
  if (o->set_m && o->set_k) return 0;
  uint64_t m;
  unsigned k;
  if (bk_bloomclock_params(o->p, 1, o->target_fpr, &m, &k) != BK_OK) {
    fprintf(stderr, PROG ": no (m, k) for p = %" PRIu64 " at fpr %g\n", o->p,
            o->target_fpr);
    return 1;
  }
  if (!o->set_m) o->m = m;
  if (!o->set_k) o->k = k;
  return 0;
}

#define SIM_DESCRIPTION                                                     \
  "Bloom clocks against vector clocks on a simulated message-passing "      \
  "execution: TP/FP/TN/FN, accuracy, precision, recall and fpr on sampled " \
  "pairs and on all pairs of an execution slice, measured and as the "      \
  "slides estimate them from pr_p, and by the distance between events."

static int sim_clocks(int argc, char **argv) {
  options o = {0};
  bk_cli_opt opts[] = {
      BK_CLI_U64("processes", &o.p, 1024, 2, MAX_P, "P", "processes",
                 .section = "execution"),
      BK_CLI_U64("events-per-process", &o.events_per_process, 100, 1, 100000,
                 "E", "events per process (the run is P * E events)"),
      BK_CLI_CHOICE("topology", &o.topo, "complete", topology_names, "T",
                    "who sends to whom: complete, ring, random (degree D)"),
      BK_CLI_U64("degree", &o.degree, 8, 1, MAX_P, "D",
                 "mean degree of the random topology"),
      BK_CLI_DOUBLE("internal", &o.internal, 0.2, 0, 1, "F",
                    "share of internal events"),
      BK_CLI_DOUBLE("send", &o.send, 0.4, 0, 1, "F",
                    "share of sends (the rest are receives)"),
      BK_CLI_DOUBLE("delay-min", &o.delay_min, 0.5, 0, 1000, "R",
                    "shortest message delay, in rounds of P steps"),
      BK_CLI_DOUBLE("delay-max", &o.delay_max, 2, 0, 1000, "R",
                    "longest message delay, in rounds"),
      BK_CLI_U64("m", &o.m, 0, 1, BK_BLOOMCLOCK_M_MAX, "M", "counters",
                 .section = "clock", .default_text = "bk_bloomclock_params",
                 .given = &o.set_m),
      BK_CLI_UNSIGNED("k", &o.k, 0, 1, 64, "K", "hashes per event",
                      .default_text = "bk_bloomclock_params",
                      .given = &o.set_k),
      BK_CLI_UNSIGNED("counter-bits", &o.counter_bits, 8, 8, 32, "W",
                      "8, 16 or 32"),
      BK_CLI_DOUBLE("target-fpr", &o.target_fpr, 0.01, 0, 1, "F",
                    "what bk_bloomclock_params sizes for (P processes, one "
                    "event each)",
                    .d_open = BK_CLI_OPEN_MIN | BK_CLI_OPEN_MAX),
      BK_CLI_U64("sample-events", &o.sample_events, 1000, 2, 1000000, "N",
                 "events recorded uniformly over the run",
                 .section = "measurement"),
      BK_CLI_U64("pairs", &o.pairs, 50000, 0, UINT64_C(100000000), "N",
                 "ordered pairs drawn from them"),
      BK_CLI_U64("slice", &o.slice, 1000, 0, 20000, "N",
                 "consecutive events of the execution slice (all N (N - 1) "
                 "ordered pairs)"),
      BK_CLI_U64("pr-pairs", &o.pr_pairs, 2000, 0, UINT64_C(100000000), "N",
                 "pairs of each set that pr_p is computed for"),
      BK_CLI_U64("seed", &o.seed, 1, 0, UINT64_MAX, "N", "run seed"),
      BK_CLI_FLAG("csv", &o.csv, "CSV rows instead of the table",
                  .section = "output"),
      BK_CLI_STRING("plot", &o.plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/clocks_distance.csv and .png (and, with "
                    "a sweep, DIR/clocks_sweep_<m|k|p>.csv and .png)",
                    .default_text = "no pictures"),
      BK_CLI_FLAG("table", &o.table,
                  "print bk_bloomclock_params' (m, k) table and stop"),
      BK_CLI_DOUBLE_LIST("sweep-m", o.sweep_m, &o.n_sweep_m, MAX_SWEEP, NULL, 1,
                         (double)BK_BLOOMCLOCK_M_MAX, "LIST",
                         "one run per m (k as given or from the params)",
                         .section = "sweeps (CSV, one row per run and set)"),
      BK_CLI_DOUBLE_LIST("sweep-k", o.sweep_k, &o.n_sweep_k, MAX_SWEEP, NULL, 1,
                         64, "LIST", "one run per k"),
      BK_CLI_DOUBLE_LIST("sweep-p", o.sweep_p, &o.n_sweep_p, MAX_SWEEP, NULL, 2,
                         MAX_P, "LIST",
                         "one run per process count (m, k from the params "
                         "for each unless given)"),
  };
  int status = bk_cli_parse_options(PROG, SIM_DESCRIPTION, opts,
                                    sizeof opts / sizeof opts[0], argc, argv);
  if (status != BK_CLI_CONTINUE) return status;
  if (o.table) {
    print_table();
    return 0;
  }
  if (o.internal + o.send > 1)
    return bk_cli_usage_error(stderr, PROG,
                              "--internal + --send must be at most 1");
  if (o.delay_min > o.delay_max)
    return bk_cli_usage_error(stderr, PROG,
                              "--delay-min must not exceed --delay-max");
  if (o.counter_bits != 8 && o.counter_bits != 16 && o.counter_bits != 32)
    return bk_cli_usage_error(stderr, PROG,
                              "--counter-bits must be 8, 16 or 32");
  const int n_sweeps =
      (o.n_sweep_m > 0) + (o.n_sweep_k > 0) + (o.n_sweep_p > 0);
  if (n_sweeps > 1)
    return bk_cli_usage_error(stderr, PROG, "one sweep at a time");
  const double *lists[3] = {o.sweep_m, o.sweep_k, o.sweep_p};
  const size_t counts[3] = {o.n_sweep_m, o.n_sweep_k, o.n_sweep_p};
  static const char *const list_names[3] = {"--sweep-m", "--sweep-k",
                                            "--sweep-p"};
  for (int l = 0; l < 3; l++)
    for (size_t i = 0; i < counts[l]; i++)
      if (lists[l][i] != floor(lists[l][i]))
        return bk_cli_usage_error(stderr, PROG,
                                  "%s: '%g' is not a whole number",
                                  list_names[l], lists[l][i]);
  if (o.plot_dir && bk_plot_prepare(PROG, o.plot_dir, stderr)) return 1;
  const bool plot = o.plot_dir != NULL;
  result *res = malloc(sizeof *res);
  if (!res) return 1;
  status = 1;
  if (n_sweeps == 0) {
    if (resolve_mk(&o) || run(&o, res)) goto done;
    if (o.csv) {
      printf(ROW_HEADER "\n");
      print_row(stdout, "sampled", res, &res->sampled);
      print_row(stdout, "slice", res, &res->slice);
    } else {
      print_text(&o, res);
    }
    if (plot && plot_distance(&o, res)) goto done;
    status = 0;
    goto done;
  }
  const double *values = o.n_sweep_m   ? o.sweep_m
                         : o.n_sweep_k ? o.sweep_k
                                       : o.sweep_p;
  const size_t n_values = o.n_sweep_m   ? o.n_sweep_m
                          : o.n_sweep_k ? o.n_sweep_k
                                        : o.n_sweep_p;
  const char *what = o.n_sweep_m ? "m" : o.n_sweep_k ? "k" : "p";
  size_t cap = 4096 + n_values * 512, len = 0;
  char *csv = malloc(cap);
  if (!csv) goto done;
  len += (size_t)snprintf(csv, cap,
                          "%s,fpr,est_fpr,one_minus_precision,accuracy,"
                          "m,k,p\n",
                          what);
  printf(ROW_HEADER "\n");
  for (size_t i = 0; i < n_values; i++) {
    options r = o;
    const uint64_t v = (uint64_t)values[i];
    if (o.n_sweep_m) r.m = v, r.set_m = true;
    if (o.n_sweep_k) r.k = (unsigned)v, r.set_k = true;
    if (o.n_sweep_p) r.p = v;
    if (resolve_mk(&r) || run(&r, res)) {
      free(csv);
      goto done;
    }
    print_row(stdout, "sampled", res, &res->sampled);
    print_row(stdout, "slice", res, &res->slice);
    fflush(stdout);
    metrics x = metrics_of(&res->sampled);
    len += (size_t)snprintf(
        csv + len, cap - len,
        "%" PRIu64 ",%.6g,%.6g,%.6g,%.6f,%" PRIu64 ",%u,%" PRIu64 "\n", v,
        x.fpr, x.est_fpr, 1 - x.precision, x.accuracy, res->m, res->k, res->p);
  }
  if (plot) {
    char name[32], xlabel[64];
    snprintf(name, sizeof name, "clocks_sweep_%s", what);
    snprintf(xlabel, sizeof xlabel, "%s",
             o.n_sweep_m   ? "m (counters)"
             : o.n_sweep_k ? "k (hashes per event)"
                           : "p (processes)");
    char title[160];
    if (o.n_sweep_m)
      snprintf(title, sizeof title,
               "Bloom clock against m: p = %" PRIu64 ", k = %u, sampled pairs",
               res->p, res->k);
    else if (o.n_sweep_k)
      snprintf(title, sizeof title,
               "Bloom clock against k: p = %" PRIu64 ", m = %" PRIu64
               ", sampled pairs",
               res->p, res->m);
    else
      snprintf(title, sizeof title,
               "Bloom clock against p, (m, k) from bk_bloomclock_params "
               "for fpr %g: sampled pairs",
               o.target_fpr);
    if (plot_sweep(&o, name, what, xlabel, title, csv)) {
      free(csv);
      goto done;
    }
  }
  free(csv);
  status = 0;
done:
  free(res);
  return status;
}

int bk_cli_sim_clocks(int argc, char **argv) {
  return sim_clocks(argc, argv);
}
