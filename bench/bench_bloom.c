/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_bloom, the classic Bloom filter, in both layouts at three
 * sizes of filter bits (1 MiB, 32 MiB, 256 MiB), against a baseline that
 * reads one random 64-byte line of a bk_bits array of the same size, and the
 * issue's targets for them.
 *
 * Each filter is sized by m = size * 8 bits and k = 7, and filled with its
 * p-capacity at p = 0.01 (bk_params_p_capacity: n = floor(m (ln 2)^2 / -ln p),
 * for which the optimal k is round((m / n) ln 2) = 7), so bits/key is 9.59 and
 * about half the bits are set: a filter "filled to its design capacity".
 * A filter is filled once, on first use, by two threads, and shared by every
 * benchmark of that filter.
 *
 * Keys are 8-byte integers (native byte order) in three disjoint spaces, all
 * hashed by the filter with its seeded XXH3 (the run's seed):
 *
 *   present   i                    i in [0, n): the keys the filter was filled
 *                                  with, drawn in pseudo-random order
 *   absent    r | 2^63             r from the generator: never added
 *   fresh     2^62 | j             j = 0, 1, 2, ...: new keys for add
 *
 * Every key and every baseline line index comes from the same generator
 * (splitmix64 then Lemire's bk_reduce), so the loop overhead around the call
 * being measured is the same in the baseline and in the filter benchmarks.
 *
 * Add benchmarks would overfill the shared filter (at 1 MiB a 0.2 s run adds
 * tens of times its capacity), which changes what add-if-absent costs. They
 * therefore run on a scratch copy of the filled filter and reset it, timer
 * paused, each time they have added 1% of the capacity in fresh keys: the
 * reset is bk_bloom_intersect(scratch, filled), exact because adds only set
 * bits. The position in the fresh keys carries over from one run to the
 * next, so add and add_if_absent both cycle through the same filter states
 * (the filled filter plus fresh keys [0, j), j below 1% of n) with the same
 * keys, and their ratio is fair.
 *
 * Lookups are measured three ways:
 *
 *   independent  single-key calls whose keys do not depend on earlier
 *                answers, so the CPU may overlap the cache misses of several
 *                operations: throughput, and how much overlap a short code
 *                path buys (groups "1MiB" ...). The adds are measured this way.
 *   batched      the batch APIs (bk_bloom_contains_many, bk_bloom_add_many),
 *                MANY_BATCH keys a call, in the independent groups and against
 *                the same baseline: throughput when the library hashes and
 *                prefetches ahead itself. The keys come from the same
 *                generators; the key, pointer and length arrays are built per
 *                call inside the timed loop, as a caller would, and every key
 *                counts as one operation, so ns/op is per key.
 *                add_many uses the scratch scheme above, resetting before a
 *                call that would pass the 1% budget, so its calls are always
 *                whole and its filter states those of add to within a batch.
 *   dependent    single-key calls, each key derived from the previous answer
 *                (the generator state advances by it), as when a caller waits
 *                for each answer: latency, roughly the number of cache misses
 *                in series (groups "1MiB dependent" ...). Branch prediction
 *                may still run ahead through an early exit, as it would for a
 *                real caller.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benches.h"
#include "bloomkit/bits.h"
#include "bloomkit/bloom.h"
#include "bloomkit/hash.h"
#include "bloomkit/params.h"
#include "shim.h"

#define MIB ((uint64_t)1 << 20)
#define BITS_PER_LINE 512u
#define PAGE_BITS ((uint64_t)4096 * 8)
#define TARGET_FPP 0.01
#define DESIGN_K 7u
#define FILL_THREADS 2
#define MIN_TIME 0.2 /* seconds per benchmark */
#define MANY_BATCH 256u /* keys per call of the batch APIs */

#define ABSENT_TAG ((uint64_t)1 << 63)
#define FRESH_TAG ((uint64_t)1 << 62)

/* ---- the generator ------------------------------------------------------ */

/* splitmix64 (Steele, Lea & Flood 2014): one add and a 64-bit finalizer. */
static inline uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Distinct streams of one seed, one per benchmark. */
static uint64_t stream_seed(uint64_t tag) {
  uint64_t s = bk_bench_seed() ^ (tag * UINT64_C(0xd1342543de82ef95));
  return splitmix64(&s);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the cases ---------------------------------------------------------- */

typedef enum op {
  OP_CONTAINS_PRESENT,
  OP_CONTAINS_ABSENT,
  OP_ADD,
  OP_ADD_IF_ABSENT,
  OP_CONTAINS_PRESENT_DEP, /* dependent: key from the previous answer */
  OP_CONTAINS_ABSENT_DEP,
  /* Batched (MANY_BATCH keys a call). Appended, so the generator streams
   * (seeded by op number) of the cases above stay what they were. */
  OP_CONTAINS_MANY_PRESENT,
  OP_CONTAINS_MANY_ABSENT,
  OP_ADD_MANY,
  OP_COUNT
} op;

static const char *const op_names[OP_COUNT] = {
    "contains_present",      "contains_absent",      "add",
    "add_if_absent",         "contains_present",     "contains_absent",
    "contains_many_present", "contains_many_absent", "add_many"};

/* Run (and table) order of each group's rows, per layout. */
static const op independent_ops[] = {
    OP_CONTAINS_PRESENT,      OP_CONTAINS_ABSENT,      OP_CONTAINS_MANY_PRESENT,
    OP_CONTAINS_MANY_ABSENT,  OP_ADD,                  OP_ADD_IF_ABSENT,
    OP_ADD_MANY};
static const op dependent_ops[] = {OP_CONTAINS_PRESENT_DEP,
                                   OP_CONTAINS_ABSENT_DEP};
#define N_OPS(a) (sizeof(a) / sizeof((a)[0]))

typedef struct filter_case {
  bk_bloom_layout layout;
  uint64_t bytes;
  uint64_t m_bits;
  uint64_t n_keys;       /* p-capacity: keys [0, n_keys) are in `filled` */
  bk_bloom *filled;      /* filled to n_keys; contains benchmarks read it */
  bk_bloom *scratch;     /* copy of `filled` that add benchmarks write */
  uint64_t fresh_used;   /* fresh keys added to scratch since its reset */
  uint64_t fresh_budget; /* fresh keys allowed before a reset */
  uint64_t rng[OP_COUNT]; /* per-benchmark generator state, kept across runs */
  bool failed;
  char error[160];
} filter_case;

typedef struct baseline_case {
  uint64_t bytes;
  uint64_t n_bits;
  uint64_t n_lines;
  bk_bits *bits;
  uint64_t rng[2]; /* independent, dependent */
  bool failed;
  char error[160];
} baseline_case;

typedef struct baseline_arg {
  baseline_case *bc;
  bool dependent;
} baseline_arg;

typedef struct bench_arg {
  filter_case *fc;
  op which;
} bench_arg;

enum { N_SIZES = 3, N_LAYOUTS = 2 };
static const uint64_t sizes_mib[N_SIZES] = {1, 32, 256};
static const bk_bloom_layout layouts[N_LAYOUTS] = {BK_BLOOM_STANDARD,
                                                   BK_BLOOM_BLOCKED};

static filter_case filters[N_SIZES][N_LAYOUTS];
static baseline_case baselines[N_SIZES];
static bench_arg args[N_SIZES][N_LAYOUTS][OP_COUNT];
static baseline_arg baseline_args[N_SIZES][2];

/* Inlined into each caller with `dependent` a constant, so the independent
 * loops carry no dependency at all. */
#define BK_BENCH_INLINE static inline __attribute__((always_inline))

static const char *layout_name(bk_bloom_layout layout) {
  return layout == BK_BLOOM_BLOCKED ? "blocked" : "standard";
}

static bk_bloom_config filter_config(const filter_case *fc) {
  bk_bloom_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.m_bits = fc->m_bits;
  cfg.capacity = fc->n_keys;
  cfg.fpp = TARGET_FPP;
  cfg.k = DESIGN_K;
  cfg.layout = fc->layout;
  cfg.seed = bk_bench_seed();
  return cfg;
}

/* ---- filling ------------------------------------------------------------ */

typedef struct fill_job {
  bk_bloom *filter;
  uint64_t first, end;
  bk_status status;
} fill_job;

static void *fill_range(void *p) {
  fill_job *job = p;
  job->status = BK_OK;
  for (uint64_t key = job->first; key < job->end; key++) {
    bk_status s = bk_bloom_add(job->filter, &key, sizeof key);
    if (s != BK_OK) {
      job->status = s;
      break;
    }
  }
  return NULL;
}

/* Add keys [0, n) with FILL_THREADS threads (adds are thread-safe). */
static bk_status fill(bk_bloom *filter, uint64_t n) {
  fill_job jobs[FILL_THREADS];
  pthread_t threads[FILL_THREADS];
  bool started[FILL_THREADS] = {false};
  for (int t = 0; t < FILL_THREADS; t++) {
    jobs[t].filter = filter;
    jobs[t].first = n * (uint64_t)t / FILL_THREADS;
    jobs[t].end = n * (uint64_t)(t + 1) / FILL_THREADS;
    jobs[t].status = BK_OK;
    if (t > 0)
      started[t] = pthread_create(&threads[t], NULL, fill_range, &jobs[t]) == 0;
  }
  fill_range(&jobs[0]);
  bk_status status = jobs[0].status;
  for (int t = 1; t < FILL_THREADS; t++) {
    if (started[t])
      pthread_join(threads[t], NULL);
    else
      fill_range(&jobs[t]); /* no thread: do its share here */
    if (jobs[t].status != BK_OK) status = jobs[t].status;
  }
  return status;
}

static bool case_fail(filter_case *fc, bk_bench_state *st, const char *what,
                      bk_status s) {
  fc->failed = true;
  snprintf(fc->error, sizeof fc->error, "%s: %s", what, bk_strerror(s));
  bk_bench_skip(st, fc->error);
  return false;
}

/* Create and fill the filter on first use. False (and the benchmark
 * skipped) when that failed. */
static bool ensure_filled(filter_case *fc, bk_bench_state *st) {
  if (fc->failed) {
    bk_bench_skip(st, fc->error);
    return false;
  }
  if (fc->filled) return true;

  bk_bloom_config cfg = filter_config(fc);
  bk_bloom *b = NULL;
  bk_status s = bk_bloom_create(&b, &cfg);
  if (s != BK_OK) return case_fail(fc, st, "bk_bloom_create", s);
  bk_bloom_info info;
  s = bk_bloom_info_get(b, &info);
  if (s != BK_OK || info.k != DESIGN_K || info.m_bits != fc->m_bits) {
    bk_bloom_destroy(b);
    fc->failed = true;
    snprintf(fc->error, sizeof fc->error,
             "filter is not m=%llu, k=%u as configured",
             (unsigned long long)fc->m_bits, DESIGN_K);
    bk_bench_skip(st, fc->error);
    return false;
  }
  double t0 = now_seconds();
  /* Filling writes about half the bits, so every page is faulted in before
   * anything is measured; no separate touch pass is needed. */
  s = fill(b, fc->n_keys);
  if (s != BK_OK) {
    bk_bloom_destroy(b);
    return case_fail(fc, st, "bk_bloom_add while filling", s);
  }
  double fpp = 0;
  bk_bloom_fill_fpp(b, &fpp);
  fprintf(stderr,
          "[bench] filled %s %lluMiB: m=%llu bits, k=%u, n=%llu keys "
          "(%.2f bits/key, fill fpp %.4f) in %.1f s\n",
          layout_name(fc->layout), (unsigned long long)(fc->bytes / MIB),
          (unsigned long long)fc->m_bits, info.k,
          (unsigned long long)fc->n_keys,
          (double)fc->m_bits / (double)fc->n_keys, fpp, now_seconds() - t0);
  fc->filled = b;
  return true;
}

/* The scratch copy for add benchmarks, created on first use. */
static bool ensure_scratch(filter_case *fc, bk_bench_state *st) {
  if (!ensure_filled(fc, st)) return false;
  if (fc->scratch) return true;
  bk_bloom_config cfg = filter_config(fc);
  bk_bloom *b = NULL;
  bk_status s = bk_bloom_create(&b, &cfg);
  if (s != BK_OK) return case_fail(fc, st, "bk_bloom_create (scratch)", s);
  s = bk_bloom_merge(b, fc->filled);
  if (s != BK_OK) {
    bk_bloom_destroy(b);
    return case_fail(fc, st, "bk_bloom_merge (scratch copy)", s);
  }
  fc->scratch = b;
  fc->fresh_used = 0;
  return true;
}

/* Back to the filled state: scratch only ever gained bits over `filled`. */
static bk_status reset_scratch(filter_case *fc) {
  fc->fresh_used = 0;
  return bk_bloom_intersect(fc->scratch, fc->filled);
}

/* ---- the benchmark bodies ----------------------------------------------- */

BK_BENCH_INLINE void bench_contains_present(bk_bench_state *st,
                                            filter_case *fc, uint64_t *rng,
                                            bool dependent) {
  const bk_bloom *b = fc->filled;
  const uint64_t n_keys = fc->n_keys;
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      uint64_t key = bk_reduce(splitmix64(&state), n_keys);
      bool found = false;
      bad |= bk_bloom_contains(b, &key, sizeof key, &found);
      hits += found;
      if (dependent) state += found;
    }
  }
  *rng = state;
  uint64_t iters = bk_bench_iterations(st);
  bk_bench_sink_u64(hits);
  if (bad) {
    bk_bench_skip(st, "bk_bloom_contains failed");
  } else if (hits != iters) {
    bk_bench_skip(st, "an added key was reported absent");
  } else {
    bk_bench_counter(st, "hit_rate", iters ? (double)hits / (double)iters : 0);
  }
}

BK_BENCH_INLINE void bench_contains_absent(bk_bench_state *st,
                                           filter_case *fc, uint64_t *rng,
                                           bool dependent) {
  const bk_bloom *b = fc->filled;
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      uint64_t key = splitmix64(&state) | ABSENT_TAG;
      bool found = false;
      bad |= bk_bloom_contains(b, &key, sizeof key, &found);
      hits += found;
      if (dependent) state += found;
    }
  }
  *rng = state;
  uint64_t iters = bk_bench_iterations(st);
  bk_bench_sink_u64(hits);
  if (bad)
    bk_bench_skip(st, "bk_bloom_contains failed");
  else /* the false positive rate: about 0.01 by design */
    bk_bench_counter(st, "hit_rate", iters ? (double)hits / (double)iters : 0);
}

static void bench_add(bk_bench_state *st, filter_case *fc) {
  bk_bloom *b = fc->scratch;
  const uint64_t budget = fc->fresh_budget;
  uint64_t used = fc->fresh_used, n;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      if (used == budget) {
        bk_bench_pause(st);
        bad |= reset_scratch(fc);
        used = 0;
        bk_bench_resume(st);
      }
      uint64_t key = FRESH_TAG | used++;
      bad |= bk_bloom_add(b, &key, sizeof key);
    }
  }
  fc->fresh_used = used;
  if (bad) bk_bench_skip(st, "bk_bloom_add or the scratch reset failed");
}

static void bench_add_if_absent(bk_bench_state *st, filter_case *fc) {
  bk_bloom *b = fc->scratch;
  const uint64_t budget = fc->fresh_budget;
  uint64_t used = fc->fresh_used, n, added = 0;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      if (used == budget) {
        bk_bench_pause(st);
        bad |= reset_scratch(fc);
        used = 0;
        bk_bench_resume(st);
      }
      uint64_t key = FRESH_TAG | used++;
      bool was_added = false;
      bad |= bk_bloom_add_if_absent(b, &key, sizeof key, &was_added);
      added += was_added;
    }
  }
  fc->fresh_used = used;
  uint64_t iters = bk_bench_iterations(st);
  if (bad) {
    bk_bench_skip(st, "bk_bloom_add_if_absent or the scratch reset failed");
  } else {
    /* Fresh keys are new; only false positives are reported as present. */
    bk_bench_counter(st, "new_rate", iters ? (double)added / (double)iters : 0);
  }
}

/* The arrays a batch call takes; the pointers and lengths are rewritten for
 * every call, as a caller building a batch would. */
typedef struct key_batch {
  uint64_t key[MANY_BATCH];
  const void *ptr[MANY_BATCH];
  size_t len[MANY_BATCH];
} key_batch;

BK_BENCH_INLINE void batch_set(key_batch *kb, unsigned i, uint64_t key) {
  kb->key[i] = key;
  kb->ptr[i] = &kb->key[i];
  kb->len[i] = sizeof kb->key[i];
}

/* contains_many on MANY_BATCH keys a call; `present` is a constant at each
 * call site. Keys as in bench_contains_present / bench_contains_absent. */
BK_BENCH_INLINE void bench_contains_many(bk_bench_state *st, filter_case *fc,
                                         uint64_t *rng, bool present) {
  const bk_bloom *b = fc->filled;
  const uint64_t n_keys = fc->n_keys;
  key_batch kb;
  bool out[MANY_BATCH];
  memset(out, 0, sizeof out); /* defined even if a call fails */
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch_of(st, MANY_BATCH)) != 0) {
    for (uint64_t r = 0; r < n; r += MANY_BATCH) {
      for (unsigned i = 0; i < MANY_BATCH; i++)
        batch_set(&kb, i,
                  present ? bk_reduce(splitmix64(&state), n_keys)
                          : splitmix64(&state) | ABSENT_TAG);
      bad |= bk_bloom_contains_many(b, kb.ptr, kb.len, MANY_BATCH, out);
      for (unsigned i = 0; i < MANY_BATCH; i++) hits += out[i];
    }
  }
  *rng = state;
  uint64_t iters = bk_bench_iterations(st);
  bk_bench_sink_u64(hits);
  if (bad) {
    bk_bench_skip(st, "bk_bloom_contains_many failed");
  } else if (present && hits != iters) {
    bk_bench_skip(st, "an added key was reported absent (contains_many)");
  } else {
    bk_bench_counter(st, "hit_rate", iters ? (double)hits / (double)iters : 0);
  }
}

static void bench_add_many(bk_bench_state *st, filter_case *fc) {
  bk_bloom *b = fc->scratch;
  const uint64_t budget = fc->fresh_budget; /* >= 1024 >= MANY_BATCH */
  uint64_t used = fc->fresh_used, n;
  key_batch kb;
  int bad = 0;
  while ((n = bk_bench_batch_of(st, MANY_BATCH)) != 0) {
    for (uint64_t r = 0; r < n; r += MANY_BATCH) {
      if (budget - used < MANY_BATCH) {
        bk_bench_pause(st);
        bad |= reset_scratch(fc);
        used = 0;
        bk_bench_resume(st);
      }
      for (unsigned i = 0; i < MANY_BATCH; i++)
        batch_set(&kb, i, FRESH_TAG | used++);
      bad |= bk_bloom_add_many(b, kb.ptr, kb.len, MANY_BATCH);
    }
  }
  fc->fresh_used = used;
  if (bad) bk_bench_skip(st, "bk_bloom_add_many or the scratch reset failed");
}

static void bench_filter(bk_bench_state *st, void *p) {
  bench_arg *arg = p;
  filter_case *fc = arg->fc;
  bool writes = arg->which == OP_ADD || arg->which == OP_ADD_IF_ABSENT ||
                arg->which == OP_ADD_MANY;
  bool ready = writes ? ensure_scratch(fc, st) : ensure_filled(fc, st);
  if (!ready) return;
  switch (arg->which) {
    case OP_CONTAINS_PRESENT:
      bench_contains_present(st, fc, &fc->rng[arg->which], false);
      break;
    case OP_CONTAINS_ABSENT:
      bench_contains_absent(st, fc, &fc->rng[arg->which], false);
      break;
    case OP_CONTAINS_PRESENT_DEP:
      bench_contains_present(st, fc, &fc->rng[arg->which], true);
      break;
    case OP_CONTAINS_ABSENT_DEP:
      bench_contains_absent(st, fc, &fc->rng[arg->which], true);
      break;
    case OP_ADD:
      bench_add(st, fc);
      break;
    case OP_ADD_IF_ABSENT:
      bench_add_if_absent(st, fc);
      break;
    case OP_CONTAINS_MANY_PRESENT:
      bench_contains_many(st, fc, &fc->rng[arg->which], true);
      break;
    case OP_CONTAINS_MANY_ABSENT:
      bench_contains_many(st, fc, &fc->rng[arg->which], false);
      break;
    case OP_ADD_MANY:
      bench_add_many(st, fc);
      break;
    case OP_COUNT:
      break;
  }
  bk_bench_counter(st, "bits_per_key",
                   (double)fc->m_bits / (double)fc->n_keys);
}

/* The baseline: one random line of a bk_bits as big as the filter, read
 * through bk_bits_test (out of line, range-checked, like the filter calls). */
static bool ensure_baseline(baseline_case *bc, bk_bench_state *st) {
  if (bc->failed) {
    bk_bench_skip(st, bc->error);
    return false;
  }
  if (bc->bits) return true;
  bk_status s = bk_bits_create(&bc->bits, bc->n_bits, NULL);
  /* Fault in every page (bk_bits storage is lazily zeroed): untouched pages
   * would all read the one shared zero page, from cache. */
  for (uint64_t i = 0; s == BK_OK && i < bc->n_bits; i += PAGE_BITS)
    s = bk_bits_set(bc->bits, i);
  if (s != BK_OK) {
    bc->failed = true;
    snprintf(bc->error, sizeof bc->error, "baseline bk_bits: %s",
             bk_strerror(s));
    bk_bits_destroy(bc->bits);
    bc->bits = NULL;
    bk_bench_skip(st, bc->error);
    return false;
  }
  return true;
}

BK_BENCH_INLINE void baseline_loop(bk_bench_state *st, baseline_case *bc,
                                   uint64_t *rng, bool dependent) {
  const bk_bits *bits = bc->bits;
  const uint64_t n_lines = bc->n_lines;
  uint64_t state = *rng, n, hits = 0;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      uint64_t line = bk_reduce(splitmix64(&state), n_lines);
      bool set = false;
      bad |= bk_bits_test(bits, line * BITS_PER_LINE, &set);
      hits += set;
      if (dependent) state += set;
    }
  }
  *rng = state;
  bk_bench_sink_u64(hits);
  if (bad) bk_bench_skip(st, "bk_bits_test failed");
}

static void bench_baseline(bk_bench_state *st, void *p) {
  baseline_arg *arg = p;
  baseline_case *bc = arg->bc;
  if (!ensure_baseline(bc, st)) return;
  if (arg->dependent)
    baseline_loop(st, bc, &bc->rng[1], true);
  else
    baseline_loop(st, bc, &bc->rng[0], false);
}

/* ---- registration ------------------------------------------------------- */

static void register_targets(void) {
  /* The 256 MiB lookup targets in each mode, against the baseline of the
   * same kind of access: single-key independent and batched lookups against
   * independent line reads, dependent lookups against dependent reads. */
  static const struct {
    const char *mode;   /* in the label */
    const char *prefix; /* of the names */
    const char *op_present, *op_absent;
  } modes[3] = {
      {"single-key, independent", "256MiB", "contains_present",
       "contains_absent"},
      {"single-key, dependent/latency", "256MiB/dep", "contains_present",
       "contains_absent"},
      {"batched 256, independent", "256MiB", "contains_many_present",
       "contains_many_absent"},
  };
  char label[128], num[64], den[64];
  for (int d = 0; d < 3; d++) {
    const char *pre = modes[d].prefix;
    snprintf(den, sizeof den, "%s/baseline/random_line", pre);
    snprintf(label, sizeof label,
             "blocked contains present, 256 MiB, vs line (%s)", modes[d].mode);
    snprintf(num, sizeof num, "%s/blocked/%s", pre, modes[d].op_present);
    bk_bench_target(label, num, den, 1.3);
    snprintf(label, sizeof label,
             "blocked contains absent, 256 MiB, vs line (%s)", modes[d].mode);
    snprintf(num, sizeof num, "%s/blocked/%s", pre, modes[d].op_absent);
    bk_bench_target(label, num, den, 1.3);
    snprintf(label, sizeof label,
             "standard contains absent, 256 MiB, k=7, vs line (%s)",
             modes[d].mode);
    snprintf(num, sizeof num, "%s/standard/%s", pre, modes[d].op_absent);
    bk_bench_target(label, num, den, 3.0);
  }
  bk_bench_note(
      "single-key, independent: one call per key, keys never depend on earlier\n"
      "  answers, so the CPU overlaps the misses of several lookups\n"
      "  (throughput). The gap to the baseline is then mostly how many\n"
      "  instructions a lookup takes: the fewer, the more lookups the CPU\n"
      "  keeps in flight.\n"
      "single-key, dependent/latency: each key is derived from the previous\n"
      "  answer (the misses in series). An answer produced by a predicted\n"
      "  branch (the standard layout's early exit) lets the CPU run ahead on\n"
      "  the prediction, so the standard rows there are below one miss and\n"
      "  only the blocked rows are a pure latency measure.\n"
      "batched 256: contains_many / add_many on 256 keys a call, ns per key,\n"
      "  against the same baseline as single-key independent (one line read\n"
      "  per call, overlapped only by the CPU). The library hashes and\n"
      "  prefetches 16 keys ahead, so more misses overlap than the CPU finds\n"
      "  on its own: throughput when the caller has its keys up front.");
  for (int l = 0; l < N_LAYOUTS; l++) {
    for (int s = 0; s < N_SIZES; s++) {
      const char *lay = layout_name(layouts[l]);
      unsigned long long mib = (unsigned long long)sizes_mib[s];
      snprintf(label, sizeof label, "add_if_absent vs add, %s, %llu MiB", lay,
               mib);
      snprintf(num, sizeof num, "%lluMiB/%s/add_if_absent", mib, lay);
      snprintf(den, sizeof den, "%lluMiB/%s/add", mib, lay);
      bk_bench_target(label, num, den, 1.2);
    }
  }
}

void bk_bench_register_bloom(void) {
  int n_sizes = bk_bench_quick() ? 1 : N_SIZES;
  char name[96], group[32], dep_group[48];
  for (int s = 0; s < n_sizes; s++) {
    uint64_t bytes = sizes_mib[s] * MIB;
    /* The shim copies names and groups. */
    snprintf(group, sizeof group, "%lluMiB", (unsigned long long)sizes_mib[s]);
    snprintf(dep_group, sizeof dep_group, "%s dependent", group);
    bk_bench_opts base_opts = {.group = group, .baseline = true,
                               .min_time = MIN_TIME};
    bk_bench_opts opts = {.group = group, .min_time = MIN_TIME};
    bk_bench_opts dep_base_opts = {.group = dep_group, .baseline = true,
                                   .min_time = MIN_TIME};
    bk_bench_opts dep_opts = {.group = dep_group, .min_time = MIN_TIME};

    baseline_case *bc = &baselines[s];
    bc->bytes = bytes;
    bc->n_bits = bytes * 8;
    bc->n_lines = bc->n_bits / BITS_PER_LINE;
    bc->rng[0] = stream_seed(1000 + (uint64_t)s);
    bc->rng[1] = stream_seed(2000 + (uint64_t)s);
    for (int d = 0; d < 2; d++) {
      baseline_args[s][d].bc = bc;
      baseline_args[s][d].dependent = d == 1;
    }

    for (int l = 0; l < N_LAYOUTS; l++) {
      filter_case *fc = &filters[s][l];
      fc->layout = layouts[l];
      fc->bytes = bytes;
      fc->m_bits = bytes * 8;
      if (bk_params_p_capacity(fc->m_bits, TARGET_FPP, &fc->n_keys) != BK_OK ||
          fc->n_keys == 0) {
        fc->failed = true;
        snprintf(fc->error, sizeof fc->error, "bk_params_p_capacity failed");
        fc->n_keys = 1;
      }
      fc->fresh_budget = fc->n_keys / 100 > 1024 ? fc->n_keys / 100 : 1024;
      for (int o = 0; o < OP_COUNT; o++) {
        fc->rng[o] = stream_seed((uint64_t)(s * 100 + l * 10 + o));
        args[s][l][o].fc = fc;
        args[s][l][o].which = (op)o;
      }
    }

    /* Registration order is run order: each size's independent group, then
     * its dependent group, so a size's filters are filled once and used. */
    snprintf(name, sizeof name, "%s/baseline/random_line", group);
    bk_bench_register(name, bench_baseline, &baseline_args[s][0], &base_opts);
    for (int l = 0; l < N_LAYOUTS; l++) {
      for (size_t i = 0; i < N_OPS(independent_ops); i++) {
        op o = independent_ops[i];
        snprintf(name, sizeof name, "%s/%s/%s", group,
                 layout_name(layouts[l]), op_names[o]);
        bk_bench_register(name, bench_filter, &args[s][l][o], &opts);
      }
    }
    snprintf(name, sizeof name, "%s/dep/baseline/random_line", group);
    bk_bench_register(name, bench_baseline, &baseline_args[s][1],
                      &dep_base_opts);
    for (int l = 0; l < N_LAYOUTS; l++) {
      for (size_t i = 0; i < N_OPS(dependent_ops); i++) {
        op o = dependent_ops[i];
        snprintf(name, sizeof name, "%s/dep/%s/%s", group,
                 layout_name(layouts[l]), op_names[o]);
        bk_bench_register(name, bench_filter, &args[s][l][o], &dep_opts);
      }
    }
  }
  register_targets();
}

void bk_bench_release_bloom(void) {
  for (int s = 0; s < N_SIZES; s++) {
    bk_bits_destroy(baselines[s].bits);
    baselines[s].bits = NULL;
    for (int l = 0; l < N_LAYOUTS; l++) {
      bk_bloom_destroy(filters[s][l].filled);
      bk_bloom_destroy(filters[s][l].scratch);
      filters[s][l].filled = filters[s][l].scratch = NULL;
    }
  }
}
