/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit compare --window N`: the forgetful filters side by side on a
 * sliding window ("have I seen this id in the last N ids, or the last N
 * time units?"), the workload of issue 29.
 *
 * The stream: --stream ids (default 4 N), each with probability --dup a
 * repeat of an id drawn uniformly from the last N positions of the stream,
 * else a fresh id. With --by items time is the position (one id per unit);
 * with --by time the ids arrive as a Poisson process of one per unit on
 * average (times in thousandths of a unit), and the window is N units.
 * Every structure is sized for a window of N ids at --fpp, or, with
 * --bits-per-item B, for B bits per window item:
 *   fbf             N = 5 past filters, t = ceil(N / 6): the Redis
 *                   module's shape; min_window = the window
 *   fbf-adaptive    the same, adaptive (Algorithm 3: its lanes hold up to
 *                   4x the filters, which its memory shows)
 *   rbf             one Bloom filter of N ids, recycled at the target
 *   apbf            count-based, capacity N (the last N ids always found)
 *   apbf-time       time-based, window N units
 *   exact           a hash set of the ids with their insert time, expired
 *                   after the window (the reference: no error at all)
 * Each takes the stream through add_if_absent (a time-based one advanced to
 * each id's time first), timed alone; the answers are then judged against
 * a shadow exact set of what that structure itself inserted (so a false
 * positive that kept an id out is not later counted as a false negative):
 *   bits/item   memory * 8 / N (info's bytes held, overhead included)
 *   fn          ids the structure inserted less than a window ago that it
 *               called new again: false negatives inside the window
 *               (must be 0 for fbf and apbf; the count-based apbf
 *               guarantees ids, not time)
 *   fp_new      fresh ids called seen, over fresh ids
 *   fp_expired  repeats of ids inserted more than a window ago called seen,
 *               over such repeats, together with lookups (as of the end
 *               of the stream) of ids last inserted one to two windows ago
 *   add         ns per add_if_absent (advance included), wall clock
 *   lookup      ns per lookup as of the stream's end (contains_at for the
 *               time-based ones), over 3 x 10^5 mixed lookups
 * --sweep B1,B2,...: the fp_new of every filter at each bits per item (the
 * curve of docs/figures/window_fpp.png with --plot).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloomkit/apbf.h"
#include "bloomkit/fbf.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"

#define PROG "bloomkit compare --window"
#define UNIT 1000u /* time units per id on average (--by time) */
#define FBF_PAST 5u
#define LOOKUPS 300000u
#define MAX_SWEEP 32

typedef struct wopts {
  uint64_t window, stream, seed;
  double dup, fpp, bits; /* bits 0: sized by fpp */
  bool by_time;
} wopts;

/* ---- the stream ----------------------------------------------------------
 * Regenerated from its seed for each pass: ids are fresh counters or
 * repeats of one of the last `window` positions (a ring). */
typedef struct stream {
  const wopts *o;
  uint64_t rng, pos, time, fresh;
  uint32_t *ring; /* the id at each of the last `window` positions */
} stream;

static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double next_unit(uint64_t *s) {
  return (double)(next_u64(s) >> 11) * 0x1p-53;
}

static bool stream_open(stream *st, const wopts *o) {
  memset(st, 0, sizeof *st);
  st->o = o;
  st->rng = o->seed;
  st->ring = malloc(o->window * sizeof *st->ring);
  return st->ring != NULL;
}

/* The next id; *fresh: first time seen. */
static uint64_t stream_next(stream *st, bool *fresh) {
  const wopts *o = st->o;
  uint64_t id;
  uint64_t back = st->pos < o->window ? st->pos : o->window;
  if (back && next_unit(&st->rng) < o->dup) {
    uint64_t j = st->pos - 1 - next_u64(&st->rng) % back;
    id = st->ring[j % o->window];
    *fresh = false;
  } else {
    id = st->fresh++;
    *fresh = true;
  }
  st->ring[st->pos % o->window] = (uint32_t)id;
  st->pos++;
  if (o->by_time)
    st->time += (uint64_t)(-log(1.0 - next_unit(&st->rng)) * UNIT + 0.5);
  else
    st->time = st->pos * UNIT;
  return id;
}

/* ---- the exact set with expiry -------------------------------------------
 * Open addressing (linear probing, deletion by backward shift) from id to
 * its insert time, and a FIFO of (id, time) in insert order: entries older
 * than the window are removed from the front. Grows as needed (a burst of
 * a time window may hold more than N ids). */
typedef struct exact {
  uint64_t *keys, *times; /* key + 1 (0: empty) */
  uint64_t cap, used, window;
  uint64_t *q_id, *q_time, q_cap, q_head, q_len;
} exact;

static uint64_t slot_of(const exact *e, uint64_t id) {
  return (id * 0x9E3779B97F4A7C15ull) >> 20 & (e->cap - 1);
}

static bool exact_init(exact *e, uint64_t window, uint64_t expect) {
  memset(e, 0, sizeof *e);
  e->window = window;
  e->cap = 16;
  while (e->cap < 2 * expect) e->cap <<= 1;
  e->q_cap = e->cap / 2;
  e->keys = calloc(e->cap, 8);
  e->times = calloc(e->cap, 8);
  e->q_id = malloc(e->q_cap * 8);
  e->q_time = malloc(e->q_cap * 8);
  return e->keys && e->times && e->q_id && e->q_time;
}

static void exact_free(exact *e) {
  free(e->keys);
  free(e->times);
  free(e->q_id);
  free(e->q_time);
}

static uint64_t *exact_find(const exact *e, uint64_t id) {
  for (uint64_t s = slot_of(e, id);; s = (s + 1) & (e->cap - 1)) {
    if (!e->keys[s]) return NULL;
    if (e->keys[s] == id + 1) return &e->times[s];
  }
}

static void exact_erase(exact *e, uint64_t id) {
  uint64_t s = slot_of(e, id);
  while (e->keys[s] != id + 1) s = (s + 1) & (e->cap - 1);
  e->keys[s] = 0;
  e->used--;
  /* backward shift: move up each later entry whose home is not between */
  for (uint64_t j = (s + 1) & (e->cap - 1); e->keys[j];
       j = (j + 1) & (e->cap - 1)) {
    uint64_t home = slot_of(e, e->keys[j] - 1);
    bool keep = s <= j ? (home > s && home <= j) : (home > s || home <= j);
    if (keep) continue;
    e->keys[s] = e->keys[j];
    e->times[s] = e->times[j];
    e->keys[j] = 0;
    s = j;
  }
}

static bool exact_put(exact *e, uint64_t id, uint64_t t);

static bool exact_grow(exact *e) {
  exact bigger;
  memset(&bigger, 0, sizeof bigger);
  bigger.window = e->window;
  bigger.cap = e->cap * 2;
  bigger.keys = calloc(bigger.cap, 8);
  bigger.times = calloc(bigger.cap, 8);
  if (!bigger.keys || !bigger.times) {
    free(bigger.keys);
    free(bigger.times);
    return false;
  }
  for (uint64_t s = 0; s < e->cap; s++)
    if (e->keys[s]) {
      uint64_t j = slot_of(&bigger, e->keys[s] - 1);
      while (bigger.keys[j]) j = (j + 1) & (bigger.cap - 1);
      bigger.keys[j] = e->keys[s];
      bigger.times[j] = e->times[s];
    }
  free(e->keys);
  free(e->times);
  e->keys = bigger.keys;
  e->times = bigger.times;
  e->cap = bigger.cap;
  return true;
}

static bool exact_put(exact *e, uint64_t id, uint64_t t) {
  uint64_t *have = exact_find(e, id);
  if (have) {
    *have = t;
  } else {
    if (2 * (e->used + 1) > e->cap && !exact_grow(e)) return false;
    uint64_t s = slot_of(e, id);
    while (e->keys[s]) s = (s + 1) & (e->cap - 1);
    e->keys[s] = id + 1;
    e->times[s] = t;
    e->used++;
  }
  if (e->q_len == e->q_cap) { /* unroll the ring into a bigger one */
    uint64_t cap = e->q_cap * 2;
    uint64_t *ids = malloc(cap * 8), *times = malloc(cap * 8);
    if (!ids || !times) {
      free(ids);
      free(times);
      return false;
    }
    for (uint64_t i = 0; i < e->q_len; i++) {
      ids[i] = e->q_id[(e->q_head + i) % e->q_cap];
      times[i] = e->q_time[(e->q_head + i) % e->q_cap];
    }
    free(e->q_id);
    free(e->q_time);
    e->q_id = ids;
    e->q_time = times;
    e->q_cap = cap;
    e->q_head = 0;
  }
  uint64_t tail = (e->q_head + e->q_len++) % e->q_cap;
  e->q_id[tail] = id;
  e->q_time[tail] = t;
  return true;
}

/* Remove what is older than the window at time `now`. */
static void exact_expire(exact *e, uint64_t now) {
  while (e->q_len && e->q_time[e->q_head] + e->window < now) {
    uint64_t id = e->q_id[e->q_head];
    uint64_t *t = exact_find(e, id);
    if (t && *t == e->q_time[e->q_head]) exact_erase(e, id);
    e->q_head = (e->q_head + 1) % e->q_cap;
    e->q_len--;
  }
}

/* Inserted less than a window before `now`? */
static bool exact_has(const exact *e, uint64_t id, uint64_t now) {
  const uint64_t *t = exact_find(e, id);
  return t && *t + e->window >= now;
}

static size_t exact_memory(const exact *e) {
  return (size_t)(e->cap * 16 + e->q_cap * 16 + sizeof *e);
}

/* ---- the structures --------------------------------------------------- */

enum { S_FBF, S_FBF_ADAPTIVE, S_RBF, S_APBF, S_APBF_TIME, S_EXACT, N_KINDS };
static const char *const kind_names[N_KINDS + 1] = {
    "fbf", "fbf-adaptive", "rbf", "apbf", "apbf-time", "exact", NULL};

typedef struct structure {
  unsigned kind;
  void *obj;
  exact ex;
  uint64_t window_time;
} structure;

static uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

static unsigned optimal_k(double bits_per_item_in_filter) {
  double k = round(bits_per_item_in_filter * 0.69314718055994530942);
  return k < 1 ? 1 : k > BK_K_MAX ? BK_K_MAX : (unsigned)k;
}

static bk_status make_fbf(const wopts *o, bool adaptive, uint64_t wt,
                          structure *s) {
  uint64_t period = ceil_div(wt, FBF_PAST + 1);
  uint64_t per_period = ceil_div(o->window, FBF_PAST + 1);
  bk_fbf_config cfg = {.n_past = FBF_PAST,
                       .refresh_period = period,
                       .min_window = wt,
                       .adaptive = adaptive,
                       .target_fpp = o->fpp,
                       .adapt_interval = period,
                       .period_step = period / 4 ? period / 4 : 1,
                       .seed = o->seed};
  if (o->bits) {
    cfg.m_bits = (uint64_t)(o->bits * (double)o->window / (FBF_PAST + 2));
    cfg.k = optimal_k((double)cfg.m_bits / (2.0 * (double)per_period));
  } else {
    double q = o->fpp;
    (void)bk_fbf_filter_fpp_for(per_period, FBF_PAST, o->fpp, &q);
    cfg.capacity = per_period;
    cfg.fpp = q;
  }
  return bk_fbf_create((bk_fbf **)&s->obj, &cfg);
}

static bk_status make(unsigned kind, const wopts *o, structure *s) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  uint64_t wt = o->window * UNIT;
  s->window_time = wt;
  switch (kind) {
    case S_FBF:
    case S_FBF_ADAPTIVE:
      return make_fbf(o, kind == S_FBF_ADAPTIVE, wt, s);
    case S_RBF: {
      bk_rbf_config cfg = {
          .capacity = o->window, .fpp = o->fpp, .seed = o->seed};
      if (o->bits) {
        cfg.capacity = 0;
        cfg.m_bits = (uint64_t)(o->bits * (double)o->window);
        cfg.k = optimal_k(o->bits);
        cfg.target_fpp = 0.5; /* recycle when half full (the design fill) */
        double p;
        if (bk_params_fpp(cfg.m_bits, cfg.k, o->window, &p) == BK_OK)
          cfg.target_fpp = p;
      }
      return bk_rbf_create((bk_rbf **)&s->obj, &cfg);
    }
    case S_APBF:
    case S_APBF_TIME: {
      bk_apbf_config cfg = {.capacity = o->window,
                            .fpp = o->fpp,
                            .seed = o->seed,
                            .single_writer = false};
      if (kind == S_APBF_TIME) cfg.window = wt;
      if (o->bits) {
        unsigned k, l;
        double p;
        bk_status st = bk_apbf_shape_for_bits(o->window, o->bits, &k, &l, &p);
        if (st != BK_OK) return st;
        cfg.k = k;
        cfg.l = l;
        cfg.m_bits = (uint64_t)(o->bits * (double)o->window / (k + l));
      }
      return bk_apbf_create((bk_apbf **)&s->obj, &cfg);
    }
    default:
      return exact_init(&s->ex, wt, o->window) ? BK_OK : BK_ENOMEM;
  }
}

static void destroy(structure *s) {
  switch (s->kind) {
    case S_FBF:
    case S_FBF_ADAPTIVE:
      bk_fbf_destroy(s->obj);
      break;
    case S_RBF:
      bk_rbf_destroy(s->obj);
      break;
    case S_APBF:
    case S_APBF_TIME:
      bk_apbf_destroy(s->obj);
      break;
    default:
      exact_free(&s->ex);
  }
}

static bool add_if_absent(structure *s, uint64_t id, uint64_t now) {
  bool added = false;
  switch (s->kind) {
    case S_FBF:
    case S_FBF_ADAPTIVE:
      (void)bk_fbf_advance(s->obj, now);
      (void)bk_fbf_add_if_absent(s->obj, &id, sizeof id, &added);
      break;
    case S_RBF:
      (void)bk_rbf_add_if_absent(s->obj, &id, sizeof id, &added);
      break;
    case S_APBF:
      (void)bk_apbf_add_if_absent(s->obj, &id, sizeof id, &added);
      break;
    case S_APBF_TIME:
      (void)bk_apbf_advance(s->obj, now);
      (void)bk_apbf_add_if_absent(s->obj, &id, sizeof id, &added);
      break;
    default:
      exact_expire(&s->ex, now);
      added = !exact_has(&s->ex, id, now);
      if (added) (void)exact_put(&s->ex, id, now);
  }
  return added;
}

/* Seen, as of `now` (no state changed). */
static bool lookup(const structure *s, uint64_t id, uint64_t now) {
  bool found = false;
  switch (s->kind) {
    case S_FBF:
    case S_FBF_ADAPTIVE:
      (void)bk_fbf_contains_at(s->obj, &id, sizeof id, now, &found);
      break;
    case S_RBF:
      (void)bk_rbf_contains(s->obj, &id, sizeof id, &found);
      break;
    case S_APBF:
    case S_APBF_TIME:
      (void)bk_apbf_contains_at(s->obj, &id, sizeof id, now, &found);
      break;
    default:
      found = exact_has(&s->ex, id, now);
  }
  return found;
}

static size_t memory_of(const structure *s) {
  switch (s->kind) {
    case S_FBF:
    case S_FBF_ADAPTIVE: {
      bk_fbf_info in;
      return bk_fbf_info_get(s->obj, &in) == BK_OK ? in.memory : 0;
    }
    case S_RBF: {
      bk_rbf_info in;
      return bk_rbf_info_get(s->obj, &in) == BK_OK ? in.memory : 0;
    }
    case S_APBF:
    case S_APBF_TIME: {
      bk_apbf_info in;
      return bk_apbf_info_get(s->obj, &in) == BK_OK ? in.memory : 0;
    }
    default:
      return exact_memory(&s->ex);
  }
}

/* ---- measuring -------------------------------------------------------- */

typedef struct wrow {
  const char *name;
  double bits_per_item, fp_new, fp_expired, add_ns, lookup_ns;
  uint64_t fn, n_new, n_expired;
  size_t memory;
} wrow;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int measure(unsigned kind, const wopts *o, wrow *r) {
  structure s;
  memset(r, 0, sizeof *r);
  r->name = kind_names[kind];
  bk_status st = make(kind, o, &s);
  if (st != BK_OK) {
    fprintf(stderr, PROG ": %s: cannot create: %s\n", r->name, bk_strerror(st));
    return 1;
  }
  uint8_t *answers = malloc(o->stream / 8 + 1);
  stream gen;
  exact shadow;
  /* last position each id was inserted (by this structure), for the
   * expired lookups */
  uint32_t *inserted_at = NULL;
  int status = 1;
  if (!answers || !stream_open(&gen, o) ||
      !exact_init(&shadow, s.window_time, o->window))
    goto out;
  memset(answers, 0, o->stream / 8 + 1);
  /* pass 1: the structure alone, timed */
  double t0 = now_s();
  for (uint64_t i = 0; i < o->stream; i++) {
    bool fresh;
    uint64_t id = stream_next(&gen, &fresh);
    if (add_if_absent(&s, id, gen.time))
      answers[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  r->add_ns = (now_s() - t0) * 1e9 / (double)o->stream;
  uint64_t end_time = gen.time, n_ids = gen.fresh;
  free(gen.ring);
  /* pass 2: the same stream, judged against a shadow of what it inserted */
  inserted_at = calloc(n_ids, sizeof *inserted_at);
  if (!inserted_at || !stream_open(&gen, o)) goto out;
  uint64_t fp_new = 0, n_exp = 0, fp_exp = 0;
  for (uint64_t i = 0; i < o->stream; i++) {
    bool fresh;
    uint64_t id = stream_next(&gen, &fresh);
    bool added = (answers[i / 8] >> (i % 8)) & 1;
    exact_expire(&shadow, gen.time);
    bool inside = exact_has(&shadow, id, gen.time);
    if (added) {
      if (inside) r->fn++;
      (void)exact_put(&shadow, id, gen.time);
      inserted_at[id] = (uint32_t)(i + 1);
    } else if (fresh) {
      fp_new++;
    } else if (!inside) {
      fp_exp++;
    }
    r->n_new += fresh;
    n_exp += !fresh && !inside;
  }
  free(gen.ring);
  /* lookups as of the end: never-seen ids, ids inserted one to two
   * windows ago (and not since), and ids inside the window */
  uint64_t probes = 0, hits = 0;
  double t1 = now_s();
  uint64_t rng = o->seed ^ 0x5EED;
  for (unsigned j = 0; j < LOOKUPS; j++) {
    uint64_t id = j % 3 == 0 ? n_ids + 1 + j : next_u64(&rng) % n_ids;
    hits += lookup(&s, id, end_time);
  }
  r->lookup_ns = (now_s() - t1) * 1e9 / LOOKUPS;
  (void)hits;
  for (unsigned j = 0; j < LOOKUPS; j++) {
    uint64_t id = next_u64(&rng) % n_ids;
    uint64_t at = inserted_at[id];
    if (!at || at > o->stream - o->window || at + 2 * o->window <= o->stream)
      continue; /* not inserted one to two windows (of ids) ago */
    if (exact_has(&shadow, id, end_time)) continue;
    probes++;
    fp_exp += lookup(&s, id, end_time);
  }
  n_exp += probes;
  uint64_t never = LOOKUPS / 3, fp_never = 0;
  for (uint64_t j = 0; j < never; j++)
    fp_never += lookup(&s, n_ids + 1000000 + j, end_time);
  r->fp_new = (double)(fp_new + fp_never) / (double)(r->n_new + never);
  r->n_expired = n_exp;
  r->fp_expired = n_exp ? (double)fp_exp / (double)n_exp : NAN;
  r->memory = memory_of(&s);
  r->bits_per_item = (double)r->memory * 8.0 / (double)o->window;
  status = 0;
out:
  if (status) fprintf(stderr, PROG ": out of memory\n");
  free(answers);
  free(inserted_at);
  exact_free(&shadow);
  destroy(&s);
  return status;
}

/* ---- output ------------------------------------------------------------ */

#define CSV_HEADER                                                    \
  "structure,bits_per_item,false_negatives,fp_new,fp_expired,add_ns," \
  "lookup_ns,memory_bytes"

static void print_csv_row(FILE *f, const wrow *r) {
  fprintf(f, "%s,%.3f,%" PRIu64 ",%.6g,", r->name, r->bits_per_item, r->fn,
          r->fp_new);
  if (isnan(r->fp_expired))
    fputc(',', f);
  else
    fprintf(f, "%.6g,", r->fp_expired);
  fprintf(f, "%.1f,%.1f,%zu\n", r->add_ns, r->lookup_ns, r->memory);
}

static void print_table(FILE *f, const wopts *o, const wrow *rows, size_t n) {
  fprintf(f,
          "# window %" PRIu64 " %s, %" PRIu64
          " ids (%.0f %% repeats of the window), seed %" PRIu64
          "; ns per operation\n",
          o->window, o->by_time ? "time units (Poisson arrivals)" : "ids",
          o->stream, o->dup * 100, o->seed);
  fprintf(f, "%-14s %9s %6s %10s %10s %8s %8s %10s\n", "structure", "bits/item",
          "fn", "fp_new", "fp_expired", "add", "lookup", "memory");
  for (size_t i = 0; i < n; i++) {
    const wrow *r = &rows[i];
    fprintf(f, "%-14s %9.2f %6" PRIu64 " %10.3g ", r->name, r->bits_per_item,
            r->fn, r->fp_new);
    if (isnan(r->fp_expired))
      fprintf(f, "%10s", "-");
    else
      fprintf(f, "%10.3g", r->fp_expired);
    fprintf(f, " %8.1f %8.1f %7.2f Mi\n", r->add_ns, r->lookup_ns,
            (double)r->memory / 1048576.0);
  }
}

static int plot_sweep(const char *dir, const wrow *rows, size_t n,
                      const unsigned *kinds, size_t n_kinds) {
  char *path;
  FILE *f = bk_plot_open_csv(PROG, dir, "window_fpp", &path, stderr);
  if (!f) return 1;
  fputs(CSV_HEADER "\n", f);
  for (size_t i = 0; i < n; i++) print_csv_row(f, &rows[i]);
  bk_plot_figure fig = {
      .name = "window_fpp",
      .title =
          "Sliding window: false positive rate on new ids against "
          "bits per window item",
      .x = "bits_per_item",
      .xlabel = "bits per item of the window (memory held)",
      .ylabel = "false positive rate (new ids)",
      .logx = true,
      .logy = true,
      .key = "below",
      .height = 680,
      .settings =
          "set xrange [6:200]\nset xtics (6, 8, 10, 12, 16, 20, 24, "
          "32, 40, 64, 100, 160)\nset key maxrows 3 width -8\n"
          "set bmargin 8",
  };
  static const char *const legend[N_KINDS] = {
      "fbf (N = 5, t = window / 6)",
      "fbf adaptive (lanes for 4x the filters)",
      "rbf (forgets all at each recycle: false negatives)",
      "apbf count-based",
      "apbf time-based",
      "exact"};
  for (size_t i = 0; i < n_kinds && fig.n_series < BK_PLOT_MAX_SERIES; i++) {
    if (kinds[i] == S_EXACT) continue;
    fig.series[fig.n_series++] =
        (bk_plot_series){.column = "fp_new",
                         .title = legend[kinds[i]],
                         .filter_column = "structure",
                         .filter_value = kind_names[kinds[i]]};
  }
  if (bk_plot_close_and_draw(PROG, dir, f, path, &fig, 1, stderr)) return 1;
  fprintf(stderr, PROG ": wrote %s/window_fpp.csv, .gp and .png\n", dir);
  return 0;
}

/* ---- the command ------------------------------------------------------- */

int bk__cli_compare_window(int argc, char **argv) {
  wopts o = {0};
  unsigned by = 0, only[N_KINDS];
  size_t n_only = 0, n_sweep = 0;
  double sweep[MAX_SWEEP];
  bool csv = false;
  const char *plot_dir = NULL;
  static const char *const by_names[] = {"items", "time", NULL};
  bk_cli_opt opts[] = {
      BK_CLI_U64("window", &o.window, 100000, 2, UINT64_C(1) << 30, "N",
                 "the window: the last N ids (--by items) or N time units "
                 "(--by time)",
                 .section = "workload"),
      BK_CLI_U64("stream", &o.stream, 0, 1, UINT64_C(1) << 31, "N",
                 "ids in the stream", .default_text = "4 x --window"),
      BK_CLI_DOUBLE("dup", &o.dup, 0.2, 0.0, 1.0, "F",
                    "share of the stream that repeats an id of the window"),
      BK_CLI_CHOICE("by", &by, "items", by_names, "items|time",
                    "the window in ids, or in time with Poisson arrivals "
                    "(one id per unit on average)"),
      BK_CLI_DOUBLE("fpp", &o.fpp, 0.01, 1e-9, 0.5, "P",
                    "the false positive rate every filter is sized for",
                    .d_open = BK_CLI_OPEN_MAX),
      BK_CLI_DOUBLE("bits-per-item", &o.bits, 0.0, 2.0, 1024.0, "B",
                    "size every filter by B bits per window item instead",
                    .default_text = "sized by --fpp"),
      BK_CLI_DOUBLE_LIST("sweep", sweep, &n_sweep, MAX_SWEEP, NULL, 2.0, 1024.0,
                         "B1,B2,...",
                         "one row per filter and bits per item (the false "
                         "positive rate against memory)"),
      BK_CLI_CHOICE_LIST("only", only, &n_only, N_KINDS, NULL, kind_names,
                         "LIST", "some of the structures, e.g. fbf,apbf",
                         .default_text = "all"),
      BK_CLI_U64("seed", &o.seed, 20261127, 0, UINT64_MAX, "N",
                 "seed of the stream and of every hash"),
      BK_CLI_FLAG("csv", &csv, "CSV instead of the table", .section = "output"),
      BK_CLI_STRING("plot", &plot_dir, NULL, "a directory", "DIR",
                    "with --sweep: also write DIR/window_fpp.csv, .gp and "
                    ".png (gnuplot)",
                    .default_text = "no picture"),
  };
  const bk_cli_command cmd = {
      .prog = PROG,
      .description =
          "The forgetful filters on a sliding window: a stream of ids with "
          "a share of\nrepeats, each taken by add_if_absent; per structure "
          "the bits per window\nitem, false negatives inside the window, "
          "false positives on new and on\nexpired ids, ns per add_if_absent "
          "and per lookup.\n",
      .epilog =
          "fn must be 0 for fbf, apbf and apbf-time (the count-based "
          "apbf guarantees ids,\nnot time: with --by time it may "
          "miss). The rbf forgets all at each recycle.\n",
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
  };
  int status = bk_cli_parse(&cmd, argc, argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  o.by_time = by == 1;
  if (!o.stream) o.stream = 4 * o.window;
  if (o.stream > UINT32_MAX - 1)
    return bk_cli_usage_error(stderr, PROG, "--stream: at most 2^32 - 2");
  if (plot_dir && !n_sweep)
    return bk_cli_usage_error(stderr, PROG, "--plot needs --sweep");
  if (plot_dir && bk_plot_prepare(PROG, plot_dir, stderr)) return 1;
  unsigned kinds[N_KINDS];
  size_t n_kinds = 0;
  if (n_only)
    for (size_t i = 0; i < n_only; i++) kinds[n_kinds++] = only[i];
  else
    for (unsigned i = 0; i < N_KINDS; i++) kinds[n_kinds++] = i;
  size_t n_budgets = n_sweep ? n_sweep : 1;
  wrow *rows = calloc(n_budgets * n_kinds, sizeof *rows);
  if (!rows) return 1;
  size_t n_rows = 0;
  status = 0;
  for (size_t b = 0; b < n_budgets && !status; b++) {
    wopts ob = o;
    if (n_sweep) ob.bits = sweep[b];
    for (size_t i = 0; i < n_kinds && !status; i++) {
      if (n_sweep && kinds[i] == S_EXACT) continue;
      status = measure(kinds[i], &ob, &rows[n_rows]);
      if (!status) n_rows++;
    }
  }
  if (!status) {
    if (csv) {
      puts(CSV_HEADER);
      for (size_t i = 0; i < n_rows; i++) print_csv_row(stdout, &rows[i]);
    } else {
      print_table(stdout, &o, rows, n_rows);
    }
    if (plot_dir) status = plot_sweep(plot_dir, rows, n_rows, kinds, n_kinds);
    status = bk_cli_flush_output(PROG, status, stdout, stderr);
  }
  free(rows);
  return status;
}
