/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_fbf, the Forgetful Bloom Filter, at N = 1, 6 and 30 past
 * filters, each against a bk_bloom of the same m and k measured in the same
 * run, and the targets for them.
 *
 * Sizes. Each FBF holds FBF_MIB (64) MiB of lanes: its N + 2 constituent
 * filters of m bits each, (N + 2) m / 8 bytes in all, so
 * m = floor(64 Mi * 8 / (N + 2)) bits (178956970, 67108864 and 16777216 bits
 * for N = 1, 6, 30), k = 7. The comparison bloom is BK_BLOOM_STANDARD with
 * the same m and k, so m / 8 bytes (21, 8 and 2 MiB: much of it in cache,
 * where the FBF's 64 MiB of lanes is not), filled with its p-capacity at
 * p = 0.01, n = floor(m (ln 2)^2 / -ln p) keys (9.59 bits/key, ~52% of the
 * bits set), as bench_bloom.c fills its filters. --bk_quick: 1 MiB of lanes.
 *
 * Filling the FBF. An insert goes into the future and the present filter,
 * so a filter holds two refresh periods of inserts. For every constituent
 * filter to hold n ids (the bloom's fill, about half its bits set), the FBF
 * is created at time 0 with refresh period 1 (fixed N, min_window default),
 * then N + 3 periods of n / 2 distinct ids each are inserted (bk_fbf_add,
 * bk_fx_fill's threads) with one bk_fbf_advance by one period between
 * periods (N + 2 refreshes). The present and every past filter then hold two
 * periods (~52% of their bits set) and the future one period (~30%), as at
 * the end of a refresh period; bk_fbf_info_get checks this, and the fill
 * line on stderr reports it with the fill time. Ids found by the check are
 * not inserted (Algorithm 1), so a filter holds slightly fewer than n.
 *
 * Keys are the fixture's (fixture.h), hashed by each filter with its seeded
 * XXH3: the present keys [0, n) fill the bloom, and period p of the FBF holds
 * [p n/2, (p+1) n/2); lookups draw absent keys; inserts take fresh ids.
 *
 * The benchmarks of one N, in run order (groups "fbf 64MiB N=6", ...):
 *
 *   bloom/contains_absent, fbf/contains_absent
 *       single-key lookups of absent keys on the filled filters, keys
 *       independent of earlier answers (throughput), with the loop of the
 *       single-key rows of bench_bloom.c (bk_fx_lookups). Baseline: the
 *       bloom. The FBF row also reports est_fpp (bk_fbf_estimated_fpp, to
 *       compare with its hit_rate),
 *       mem_ratio = bk_fbf_info.memory / ((N + 2) m / 8) and
 *       mem_const_B = memory - (N + 2) m / 8 (bytes).
 *   dep/bloom/contains_absent, dep/fbf/contains_absent
 *       the same, each key derived from the previous answer (latency).
 *   bloom/add_if_absent, fbf/add_if_absent
 *       fresh ids, on a scratch copy of the filled bloom and on the FBF.
 *       Like bench_bloom.c's adds, each resets its filter (timer paused) once
 *       it has taken 1% of n fresh ids (bk_fx_fresh_budget), and the
 *       position in the fresh ids carries over between runs, so both cycle
 *       through their filled state plus fewer than 1% n fresh ids (for the
 *       FBF: in its future and present filters).
 *   fbf/contains_many_absent, fbf/add_if_absent_many
 *       the FBF rows above through the batch calls, BK_FX_MANY (256) keys a
 *       call (fixture.h's batch loops): the library prefetches the lanes of
 *       the keys ahead, so the misses of several keys overlap. Reported
 *       against the same single-key bloom rows (informational).
 *   same_memory/bloom/contains_absent, same_memory/bloom/add_if_absent
 *       the lookups and adds above on a standard bloom of the FBF's memory,
 *       (N + 2) m bits (64 MiB), filled with its own p-capacity at p = 0.01
 *       (same fill fraction). The bloom of the same m is in cache for larger
 *       N while the FBF's lanes are not (docs/design/fbf.md 6.1); against this
 *       one, the ratio is the FBF's own cost. Targets: the same limits as
 *       the same-m rows.
 *   memset_filter, fbf/refresh
 *       fbf/refresh times one bk_fbf_advance by one period, which performs
 *       exactly one refresh: it drops the oldest filter and sweeps its bit
 *       out of every lane (reads all 64 MiB, writes back the words holding
 *       a set bit of it). From the filled state, N + 1 refreshes in a row
 *       each drop a filter holding two periods (the oldest past, ..., the
 *       former present); then the FBF is reset (timer paused), so every
 *       timed refresh drops a populated filter. The first run checks with
 *       bk_fbf_info_get that each advance refreshed once, none deferred.
 *       The baseline memset_filter is a memset of one constituent filter's
 *       m / 8 bytes, what dropping a filter stored on its own costs; it
 *       rotates through N + 2 such buffers (64 MiB in all, like the lanes)
 *       rather than clearing one buffer that stays in cache.
 *
 * Resets restore a snapshot of the filled FBF (see "resets" below): the
 * FBF has no copy or clear, bk_fbf_deserialize of 64 MiB takes seconds and
 * refilling longer, while a restore is a ~64 MiB memcpy.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "benches.h"
#include "bloomkit/bloom.h"
#include "bloomkit/fbf.h"
#include "bloomkit/params.h"
#include "fixture.h"

#define FBF_MIB 64u      /* lanes of each FBF */
#define QUICK_FBF_MIB 1u /* --bk_quick */
#define DESIGN_K 7u
#define TARGET_FPP 0.01
#define MIN_TIME 0.2       /* seconds per benchmark */
#define PERIOD 1u          /* refresh period, FBF time units */
#define CONTAINS_LIMIT 2.0 /* fbf contains absent / bloom contains absent */
#define ADD_LIMIT 2.0      /* fbf add_if_absent / bloom add_if_absent */
#define MEMORY_LIMIT 1.1   /* memory / ((N + 2) m / 8) */

/* ---- resets: a snapshotting allocator ----------------------------------- *
 *
 * The FBF has no copy or clear operation, deserializing 64 MiB takes seconds
 * and refilling longer, so a reset restores a snapshot instead: the FBF is
 * created with an allocator that records every block it hands out (the
 * struct, the lanes, the chunk epochs, the locks: all of the FBF's state),
 * the filled state is copied block by block, and a reset copies it back
 * (a ~64 MiB memcpy, with no thread inside the FBF). Right after filling,
 * the restore is checked against the public API: the FBF is serialized,
 * refreshed and inserted into, restored and serialized again, and the two
 * images must be byte-identical; if the FBF ever kept state outside its
 * allocator, the benchmarks that reset fail instead of measuring a wrong
 * state. Blocks of 4 MiB or more are 2 MiB aligned and advised
 * MADV_HUGEPAGE, as the library does for its own large regions. */

#define SNAP_MAX_BLOCKS 16
#define SNAP_HUGE ((size_t)2 << 20)

typedef struct snap_block {
  void *ptr;
  size_t size;
  void *copy; /* the snapshot of the block, or NULL */
} snap_block;

typedef struct snap_alloc {
  snap_block block[SNAP_MAX_BLOCKS];
  unsigned n;
  bool have_snapshot;
} snap_alloc;

static void *snap_raw_alloc(size_t size) {
  if (size < 2 * SNAP_HUGE) return malloc(size);
  void *p = NULL;
  if (posix_memalign(&p, SNAP_HUGE, size) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, size & ~(SNAP_HUGE - 1), MADV_HUGEPAGE);
#endif
  return p;
}

static void *snap_malloc(void *ctx, size_t size) {
  snap_alloc *sa = ctx;
  if (sa->n == SNAP_MAX_BLOCKS) return NULL;
  void *p = snap_raw_alloc(size);
  if (p) sa->block[sa->n++] = (snap_block){p, size, NULL};
  return p;
}

static snap_block *snap_find(snap_alloc *sa, const void *p) {
  for (unsigned i = 0; i < sa->n; i++)
    if (sa->block[i].ptr == p) return &sa->block[i];
  return NULL;
}

static void snap_free(void *ctx, void *p) {
  snap_alloc *sa = ctx;
  if (!p) return;
  snap_block *b = snap_find(sa, p);
  if (b) {
    free(b->copy);
    *b = sa->block[--sa->n];
    sa->have_snapshot = false; /* the set of blocks changed */
  }
  free(p);
}

static void *snap_realloc(void *ctx, void *p, size_t size) {
  snap_alloc *sa = ctx;
  if (!p) return snap_malloc(ctx, size);
  snap_block *b = snap_find(sa, p);
  void *q = realloc(p, size);
  if (q && b) {
    free(b->copy);
    *b = (snap_block){q, size, NULL};
    sa->have_snapshot = false;
  }
  return q;
}

/* Copy every block. */
static bk_status snap_take(snap_alloc *sa) {
  for (unsigned i = 0; i < sa->n; i++) {
    snap_block *b = &sa->block[i];
    free(b->copy);
    b->copy = snap_raw_alloc(b->size);
    if (!b->copy) {
      sa->have_snapshot = false;
      return BK_ENOMEM;
    }
    memcpy(b->copy, b->ptr, b->size);
  }
  sa->have_snapshot = true;
  return BK_OK;
}

/* Put every block back as it was at snap_take. */
static bk_status snap_restore(snap_alloc *sa) {
  if (!sa->have_snapshot) return BK_EINVAL;
  for (unsigned i = 0; i < sa->n; i++)
    memcpy(sa->block[i].ptr, sa->block[i].copy, sa->block[i].size);
  return BK_OK;
}

/* ---- the cases ----------------------------------------------------------- */

typedef enum op {
  OP_BLOOM_CONTAINS_ABSENT,
  OP_FBF_CONTAINS_ABSENT,
  OP_BLOOM_CONTAINS_ABSENT_DEP,
  OP_FBF_CONTAINS_ABSENT_DEP,
  OP_BLOOM_ADD_IF_ABSENT,
  OP_FBF_ADD_IF_ABSENT,
  OP_MEM_BLOOM_CONTAINS_ABSENT,
  OP_MEM_BLOOM_ADD_IF_ABSENT,
  OP_FBF_CONTAINS_MANY_ABSENT,
  OP_FBF_ADD_IF_ABSENT_MANY,
  OP_MEMSET_FILTER,
  OP_FBF_REFRESH,
  OP_COUNT
} op;

/* What an op runs. */
typedef enum run {
  BLOOM_LOOKUPS,
  FBF_LOOKUPS,
  BLOOM_ADDS,
  FBF_ADDS,
  FBF_LOOKUPS_MANY,
  FBF_ADDS_MANY,
  MEMSETS,
  REFRESHES
} run;

/* Each op: its name (after "fbf/<size>/N<n>/"), group suffix and role in
 * the group, and its loop. */
static const struct op_spec {
  const char *name;
  const char *group;
  bool baseline;
  run loop;
  bool dependent;
  bool same_memory; /* on the bloom of the FBF's memory, not of its m */
} ops[OP_COUNT] = {
    [OP_BLOOM_CONTAINS_ABSENT] = {"bloom/contains_absent", "", true,
                                  BLOOM_LOOKUPS, false},
    [OP_FBF_CONTAINS_ABSENT] = {"fbf/contains_absent", "", false, FBF_LOOKUPS,
                                false},
    [OP_BLOOM_CONTAINS_ABSENT_DEP] = {"dep/bloom/contains_absent", " dependent",
                                      true, BLOOM_LOOKUPS, true},
    [OP_FBF_CONTAINS_ABSENT_DEP] = {"dep/fbf/contains_absent", " dependent",
                                    false, FBF_LOOKUPS, true},
    [OP_BLOOM_ADD_IF_ABSENT] = {"bloom/add_if_absent", " add", true, BLOOM_ADDS,
                                false},
    [OP_FBF_ADD_IF_ABSENT] = {"fbf/add_if_absent", " add", false, FBF_ADDS,
                              false},
    [OP_MEM_BLOOM_CONTAINS_ABSENT] = {"same_memory/bloom/contains_absent",
                                      " same memory", true, BLOOM_LOOKUPS,
                                      false, true},
    [OP_MEM_BLOOM_ADD_IF_ABSENT] = {"same_memory/bloom/add_if_absent",
                                    " same memory add", true, BLOOM_ADDS, false,
                                    true},
    [OP_FBF_CONTAINS_MANY_ABSENT] = {"fbf/contains_many_absent", "", false,
                                     FBF_LOOKUPS_MANY, false},
    [OP_FBF_ADD_IF_ABSENT_MANY] = {"fbf/add_if_absent_many", " add", false,
                                   FBF_ADDS_MANY, false},
    [OP_MEMSET_FILTER] = {"memset_filter", " refresh", true, MEMSETS, false},
    [OP_FBF_REFRESH] = {"fbf/refresh", " refresh", false, REFRESHES, false},
};

enum { N_CASES = 3 };
static const unsigned n_pasts[N_CASES] = {1, 6, 30};

typedef struct fbf_case {
  unsigned n_past, n_filters; /* N, N + 2 */
  uint64_t lane_bytes;        /* (N + 2) m / 8 */
  uint64_t m_bits;
  uint64_t n_keys;     /* keys per constituent filter; the bloom's fill */
  uint64_t per_period; /* n_keys / 2 */
  /* the FBF, the snapshot of its filled state, and what happened to it
   * since the last reset */
  bk_fbf *fbf;
  snap_alloc snap;    /* the FBF's allocator: its blocks and their copies */
  uint64_t image_now; /* the clock of the filled state */
  uint64_t now;
  bk_fx_fresh fresh;  /* fresh ids inserted since the reset; reset_fbf */
  unsigned refreshed; /* refreshes since the reset */
  bool refresh_verified;
  double mem_ratio, mem_const;
  bk_fx_bloom bloom;     /* the bloom of the same m and k, and its scratch */
  bk_fx_bloom bloom_mem; /* the bloom of the FBF's memory, (N + 2) m bits */
  /* memset_filter: n_filters buffers of clear_bytes, one after another */
  unsigned char *clear_buf;
  uint64_t clear_bytes, clear_next;
  uint64_t rng[OP_COUNT];
  bk_fx_setup setup;
} fbf_case;

typedef struct bench_arg {
  fbf_case *fc;
  op which;
} bench_arg;

static fbf_case cases[N_CASES];
static bench_arg args[N_CASES][OP_COUNT];
static uint64_t fbf_mib = FBF_MIB;

static void release_case(fbf_case *fc) {
  bk_fbf_destroy(fc->fbf); /* frees its blocks and their snapshot copies */
  bk_fx_bloom_release(&fc->bloom);
  bk_fx_bloom_release(&fc->bloom_mem);
  free(fc->clear_buf);
  fc->fbf = NULL;
  fc->clear_buf = NULL;
}

/* Cases run one after another (registration order): building one frees
 * the others, so at most one case's filters are held at a time. */
static void release_others(const fbf_case *keep) {
  for (int i = 0; i < N_CASES; i++)
    if (&cases[i] != keep) release_case(&cases[i]);
}

/* bk_fbf operations as fixture callbacks. */
static bk_status fbf_contains(const void *f, const void *key, size_t len,
                              bool *found) {
  return bk_fbf_contains(f, key, len, found);
}
static bk_status fbf_add(void *f, const void *key, size_t len, bool *added) {
  (void)added;
  return bk_fbf_add(f, key, len);
}
static bk_status fbf_add_if_absent(void *f, const void *key, size_t len,
                                   bool *added) {
  return bk_fbf_add_if_absent(f, key, len, added);
}
static bk_status fbf_contains_many(const void *f, const void *const *keys,
                                   const size_t *lens, size_t n, bool *found) {
  return bk_fbf_contains_many(f, keys, lens, n, found);
}
static bk_status fbf_add_if_absent_many(void *f, const void *const *keys,
                                        const size_t *lens, size_t n,
                                        bool *added) {
  return bk_fbf_add_if_absent_many(f, keys, lens, n, added);
}

/* ---- building ------------------------------------------------------------ */

/* Create, fill, check and serialize the FBF on first use. */
static bool ensure_fbf(fbf_case *fc, bk_bench_state *st) {
  if (!bk_fx_ready(&fc->setup, st)) return false;
  if (fc->fbf) return true;
  release_others(fc);

  bk_fbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.m_bits = fc->m_bits;
  cfg.k = DESIGN_K;
  cfg.n_past = fc->n_past;
  cfg.refresh_period = PERIOD;
  cfg.start_time = 0;
  cfg.seed = bk_bench_seed();
  static const bk_allocator snap_allocator = {snap_malloc, snap_realloc,
                                              snap_free, NULL};
  bk_allocator allocator = snap_allocator;
  allocator.ctx = &fc->snap;
  cfg.allocator = &allocator; /* copied by create; fc->snap outlives it */
  bk_fbf *f = NULL;
  bk_status s = bk_fbf_create(&f, &cfg);
  if (s != BK_OK)
    return bk_fx_fail(&fc->setup, st, "bk_fbf_create: %s", bk_strerror(s));

  double t0 = bk_fx_now();
  uint64_t now = 0;
  for (unsigned p = 0; s == BK_OK && p < fc->n_filters + 1; p++) {
    if (p > 0) s = bk_fbf_advance(f, now += PERIOD);
    if (s == BK_OK)
      s = bk_fx_fill(fbf_add, f, (uint64_t)p * fc->per_period,
                     (uint64_t)(p + 1) * fc->per_period);
  }
  double t1 = bk_fx_now();
  if (s != BK_OK) {
    bk_fbf_destroy(f);
    return bk_fx_fail(&fc->setup, st, "filling the FBF: %s", bk_strerror(s));
  }

  /* Check the shape: N + 2 filters, N + 2 refreshes, the next one due one
   * period on (so advancing by one period refreshes exactly once), and how
   * full each filter is. */
  bk_fbf_info info;
  s = bk_fbf_info_get(f, &info);
  double t2 = bk_fx_now();
  if (s != BK_OK) {
    bk_fbf_destroy(f);
    return bk_fx_fail(&fc->setup, st, "bk_fbf_info_get: %s", bk_strerror(s));
  }
  double full_min = 1, full_max = 0;
  uint64_t ins_min = UINT64_MAX;
  for (unsigned p = 1; p < info.n_filters; p++) {
    double full = (double)info.set_bits[p] / (double)fc->m_bits;
    if (full < full_min) full_min = full;
    if (full > full_max) full_max = full;
    if (info.inserted[p] < ins_min) ins_min = info.inserted[p];
  }
  double future_full = (double)info.set_bits[0] / (double)fc->m_bits;
  if (info.m_bits != fc->m_bits || info.k != DESIGN_K ||
      info.n_filters != fc->n_filters || info.max_filters != fc->n_filters ||
      info.refreshes != fc->n_filters || info.deferred != 0 ||
      info.now != now || info.next_refresh != now + PERIOD || full_min < 0.4 ||
      full_max > 0.6) {
    bk_fbf_destroy(f);
    return bk_fx_fail(&fc->setup, st,
                      "FBF not as filled: m=%llu k=%u filters=%u/%u "
                      "refreshes=%llu deferred=%llu fill %.3f..%.3f",
                      (unsigned long long)info.m_bits, info.k, info.n_filters,
                      info.max_filters, (unsigned long long)info.refreshes,
                      (unsigned long long)info.deferred, full_min, full_max);
  }
  fc->mem_ratio = (double)info.memory / (double)fc->lane_bytes;
  fc->mem_const = (double)info.memory - (double)fc->lane_bytes;

  /* Snapshot, then check a restore: serialize, dirty the FBF the ways the
   * benchmarks do (a refresh, fresh inserts), restore, serialize again. */
  size_t len = 0, len2 = 0;
  void *image = NULL, *image2 = NULL;
  double t3 = t2, t4 = t2;
  s = snap_take(&fc->snap);
  if (s == BK_OK) s = bk_fbf_serialized_size(f, &len);
  if (s == BK_OK) {
    image = malloc(len);
    image2 = malloc(len);
    if (!image || !image2) s = BK_ENOMEM;
  }
  if (s == BK_OK) s = bk_fbf_serialize(f, image, len, &len);
  if (s == BK_OK) s = bk_fbf_advance(f, now + PERIOD);
  for (uint64_t i = 0; s == BK_OK && i < 1000; i++) {
    uint64_t key = bk_fx_fresh_key(((uint64_t)1 << 40) | i);
    bool added;
    s = bk_fbf_add_if_absent(f, &key, sizeof key, &added);
  }
  if (s == BK_OK) {
    t3 = bk_fx_now();
    s = snap_restore(&fc->snap);
    t4 = bk_fx_now();
  }
  if (s == BK_OK) s = bk_fbf_serialize(f, image2, len, &len2);
  bool same = s == BK_OK && len2 == len && memcmp(image, image2, len) == 0;
  free(image);
  free(image2);
  if (!same) {
    bk_fbf_destroy(f);
    if (s == BK_OK) s = BK_ECORRUPT;
    return bk_fx_fail(&fc->setup, st,
                      "snapshot restore of the FBF is not exact: %s",
                      bk_strerror(s));
  }
  fprintf(stderr,
          "[bench] filled fbf N=%u %.1fMiB: m=%llu bits, k=%u, %u periods "
          "of %llu ids (>= %llu inserted per filter) in %.1f s; set bits: "
          "present+past %.3f..%.3f, future %.3f; memory %zu B (%.4f x lanes); "
          "info_get %.2f s, reset (restore) %.3f s\n",
          fc->n_past, (double)fc->lane_bytes / (double)BK_FX_MIB,
          (unsigned long long)fc->m_bits, DESIGN_K, fc->n_filters + 1,
          (unsigned long long)fc->per_period, (unsigned long long)ins_min,
          t1 - t0, full_min, full_max, future_full, info.memory, fc->mem_ratio,
          t2 - t1, t4 - t3);
  fc->fbf = f;
  fc->image_now = now;
  fc->now = now;
  fc->fresh.used = 0;
  fc->refreshed = 0;
  return true;
}

/* Back to the filled state (the reset of fc->fresh). */
static bk_status reset_fbf(void *ctx) {
  fbf_case *fc = ctx;
  bk_status s = snap_restore(&fc->snap);
  fc->now = fc->image_now;
  fc->fresh.used = 0;
  fc->refreshed = 0;
  return s;
}

/* A benchmark that needs the filled state without refreshes (`fresh_ok`:
 * with some fresh ids allowed) resets the FBF first if need be. */
static bool ensure_fbf_state(fbf_case *fc, bk_bench_state *st, bool fresh_ok,
                             bool refresh_ok) {
  if (!ensure_fbf(fc, st)) return false;
  if ((fc->fresh.used && !fresh_ok) || (fc->refreshed && !refresh_ok)) {
    bk_status s = reset_fbf(fc);
    if (s != BK_OK)
      return bk_fx_fail(&fc->setup, st, "FBF reset (snapshot restore): %s",
                        bk_strerror(s));
  }
  return true;
}

static bool ensure_bloom(fbf_case *fc, bk_fx_bloom *b, bk_bench_state *st) {
  if (!b->filled) release_others(fc);
  return bk_fx_bloom_filled(b, &fc->setup, st);
}

static bool ensure_clear_buf(fbf_case *fc, bk_bench_state *st) {
  if (!bk_fx_ready(&fc->setup, st)) return false;
  if (fc->clear_buf) return true;
  release_others(fc);
  fc->clear_bytes = (fc->m_bits + 7) / 8;
  fc->clear_buf = malloc(fc->clear_bytes * fc->n_filters);
  if (!fc->clear_buf)
    return bk_fx_fail(&fc->setup, st, "memset buffers: %s",
                      bk_strerror(BK_ENOMEM));
  memset(fc->clear_buf, 1, fc->clear_bytes * fc->n_filters); /* fault in */
  fc->clear_next = 0;
  return true;
}

/* ---- the benchmark bodies ------------------------------------------------ */

static void memset_filter(bk_bench_state *st, fbf_case *fc) {
  unsigned char *buf = fc->clear_buf;
  const uint64_t bytes = fc->clear_bytes, slices = fc->n_filters;
  uint64_t i = fc->clear_next, n;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      memset(buf + (i % slices) * bytes, 0, bytes);
      i++;
    }
    bk_bench_sink_u64((uint64_t)(uintptr_t)buf);
  }
  fc->clear_next = i;
}

static void fbf_refresh(bk_bench_state *st, fbf_case *fc) {
  /* Refreshes i = 1 .. N + 1 after the filled state drop the filters that
   * hold two periods; the FBF is reset before any more. */
  const unsigned populated = fc->n_past + 1;
  uint64_t n;
  int bad = 0;
  while ((n = bk_bench_batch(st)) != 0) {
    for (uint64_t r = 0; r < n; r++) {
      if (fc->refreshed == populated) {
        bk_bench_pause(st);
        bk_status s = reset_fbf(fc);
        bk_bench_resume(st);
        if (s != BK_OK) {
          bk_fx_fail(&fc->setup, st, "FBF reset (snapshot restore): %s",
                     bk_strerror(s));
          return;
        }
      }
      fc->now += PERIOD;
      bad |= bk_fbf_advance(fc->fbf, fc->now);
      fc->refreshed++;
    }
  }
  if (bad) {
    bk_bench_skip(st, "bk_fbf_advance failed");
    return;
  }
  if (!fc->refresh_verified) {
    /* Once per case: every advance refreshed exactly once, none deferred
     * (timer stopped; info_get walks every lane). */
    bk_fbf_info info;
    bk_status s = bk_fbf_info_get(fc->fbf, &info);
    if (s != BK_OK || info.refreshes != fc->n_filters + fc->refreshed ||
        info.deferred != 0) {
      bk_bench_skip(st, "bk_fbf_advance did not refresh exactly once");
      return;
    }
    fc->refresh_verified = true;
  }
}

/* What the FBF lookups report besides hit_rate (independent rows). */
static void report_fbf(bk_bench_state *st, const fbf_case *fc) {
  double est = 0;
  if (bk_fbf_estimated_fpp(fc->fbf, BK_FBF_CHECK_DEFAULT, &est) == BK_OK)
    bk_bench_counter(st, "est_fpp", est);
  bk_bench_counter(st, "mem_ratio", fc->mem_ratio);
  bk_bench_counter(st, "mem_const_B", fc->mem_const);
}

static void bench_fbf(bk_bench_state *st, void *p) {
  const bench_arg *arg = p;
  fbf_case *fc = arg->fc;
  const struct op_spec *o = &ops[arg->which];
  uint64_t *rng = &fc->rng[arg->which];
  bk_fx_bloom *bloom = o->same_memory ? &fc->bloom_mem : &fc->bloom;
  bk_fx_tally t;
  switch (o->loop) {
    case BLOOM_LOOKUPS:
      if (!ensure_bloom(fc, bloom, st)) return;
      t = bk_fx_lookups(st, bk_fx_bloom_contains, bloom->filled, rng,
                        BK_FX_ABSENT, o->dependent);
      bk_fx_report(st, t, "hit_rate", false, "bk_bloom_contains failed");
      break;
    case FBF_LOOKUPS:
      if (!ensure_fbf_state(fc, st, false, false)) return;
      t = bk_fx_lookups(st, fbf_contains, fc->fbf, rng, BK_FX_ABSENT,
                        o->dependent);
      if (bk_fx_report(st, t, "hit_rate", false, "bk_fbf_contains failed") &&
          !o->dependent)
        report_fbf(st, fc);
      break;
    case BLOOM_ADDS:
      if (!ensure_bloom(fc, bloom, st) ||
          !bk_fx_bloom_scratch(bloom, &fc->setup, st))
        return;
      t = bk_fx_fresh_adds(st, bk_fx_bloom_add_if_absent, bloom->scratch,
                           &bloom->fresh);
      bk_fx_report(st, t, "new_rate", false,
                   "bk_bloom_add_if_absent or the scratch reset failed");
      break;
    case FBF_ADDS:
      if (!ensure_fbf_state(fc, st, true, false)) return;
      t = bk_fx_fresh_adds(st, fbf_add_if_absent, fc->fbf, &fc->fresh);
      if (t.reset != BK_OK) /* the run is an error, and so is the case */
        bk_fx_fail(&fc->setup, st, "FBF reset (snapshot restore): %s",
                   bk_strerror(t.reset));
      else
        bk_fx_report(st, t, "new_rate", false, "bk_fbf_add_if_absent failed");
      break;
    case FBF_LOOKUPS_MANY:
      if (!ensure_fbf_state(fc, st, false, false)) return;
      t = bk_fx_lookups_many(st, fbf_contains_many, fc->fbf, rng, BK_FX_ABSENT);
      bk_fx_report(st, t, "hit_rate", false, "bk_fbf_contains_many failed");
      break;
    case FBF_ADDS_MANY:
      if (!ensure_fbf_state(fc, st, true, false)) return;
      t = bk_fx_fresh_adds_many(st, fbf_add_if_absent_many, fc->fbf, &fc->fresh,
                                true);
      if (t.reset != BK_OK)
        bk_fx_fail(&fc->setup, st, "FBF reset (snapshot restore): %s",
                   bk_strerror(t.reset));
      else
        bk_fx_report(st, t, "new_rate", false,
                     "bk_fbf_add_if_absent_many failed");
      break;
    case MEMSETS:
      if (ensure_clear_buf(fc, st)) memset_filter(st, fc);
      break;
    case REFRESHES:
      if (ensure_fbf_state(fc, st, false, true)) fbf_refresh(st, fc);
      break;
  }
}

/* ---- registration -------------------------------------------------------- */

static void bench_name(char *out, size_t cap, const fbf_case *fc, op o) {
  snprintf(out, cap, "fbf/%lluMiB/N%u/%s", (unsigned long long)fbf_mib,
           fc->n_past, ops[o].name);
}

static void register_targets(void) {
  /* Each row for every N, in report order. The memory row is a target on
   * counters of the fbf lookups (denominator OP_COUNT). */
  static const struct {
    const char *label; /* printf: lanes MiB, N */
    op numerator, denominator;
    double max_ratio; /* BK_FX_INFO: reported only */
  } targets[] = {
      {"fbf contains absent vs standard bloom same m, k=7, %llu MiB, N=%u "
       "(independent)",
       OP_FBF_CONTAINS_ABSENT, OP_BLOOM_CONTAINS_ABSENT, CONTAINS_LIMIT},
      {"fbf contains absent vs standard bloom same m, k=7, %llu MiB, N=%u "
       "(dependent)",
       OP_FBF_CONTAINS_ABSENT_DEP, OP_BLOOM_CONTAINS_ABSENT_DEP, BK_FX_INFO},
      {"fbf add_if_absent vs bloom add_if_absent, fresh ids, %llu MiB, "
       "N=%u",
       OP_FBF_ADD_IF_ABSENT, OP_BLOOM_ADD_IF_ABSENT, ADD_LIMIT},
      {"fbf contains absent vs standard bloom of the fbf's memory, "
       "(N+2) m bits, %llu MiB, N=%u",
       OP_FBF_CONTAINS_ABSENT, OP_MEM_BLOOM_CONTAINS_ABSENT, CONTAINS_LIMIT},
      {"fbf add_if_absent vs bloom add_if_absent, bloom of the fbf's "
       "memory, %llu MiB, N=%u",
       OP_FBF_ADD_IF_ABSENT, OP_MEM_BLOOM_ADD_IF_ABSENT, ADD_LIMIT},
      {"fbf contains_many absent (256 a call) vs single-key bloom same m, "
       "%llu MiB, N=%u",
       OP_FBF_CONTAINS_MANY_ABSENT, OP_BLOOM_CONTAINS_ABSENT, BK_FX_INFO},
      {"fbf add_if_absent_many (256 a call) vs single-key bloom "
       "add_if_absent same m, %llu MiB, N=%u",
       OP_FBF_ADD_IF_ABSENT_MANY, OP_BLOOM_ADD_IF_ABSENT, BK_FX_INFO},
      {"fbf memory <= 1.1 x (N+2) m/8 + const, %llu MiB, N=%u",
       OP_FBF_CONTAINS_ABSENT, OP_COUNT, MEMORY_LIMIT},
      {"fbf refresh (one advance) vs memset of one filter (m/8 B), %llu MiB, "
       "N=%u",
       OP_FBF_REFRESH, OP_MEMSET_FILTER, BK_FX_INFO},
  };
  char label[160], num[96], den[96];
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    for (int c = 0; c < N_CASES; c++) {
      const fbf_case *fc = &cases[c];
      snprintf(label, sizeof label, targets[t].label,
               (unsigned long long)fbf_mib, fc->n_past);
      bench_name(num, sizeof num, fc, targets[t].numerator);
      if (targets[t].denominator == OP_COUNT) {
        bk_bench_target_counter(label, num, "mem_ratio", targets[t].max_ratio,
                                "mem_const_B");
        continue;
      }
      bench_name(den, sizeof den, fc, targets[t].denominator);
      bk_fx_ratio(label, num, den, targets[t].max_ratio);
    }
  }
  bk_bench_note(
      "fbf: N+2 filters of m = 64 Mi*8/(N+2) bits in lanes (64 MiB of lanes;\n"
      "  1 MiB with --bk_quick), k=7, each holding the bloom's p-capacity n\n"
      "  (~52% of bits set; the future ~30%). The bloom rows: a standard\n"
      "  bk_bloom of the same m and k, m/8 bytes, so for larger N mostly in\n"
      "  cache while the FBF's lanes are not; the same_memory rows: one of\n"
      "  (N+2) m bits, the FBF's memory, holding its p-capacity likewise.\n"
      "  All take fresh ids from their\n"
      "  filled state, reset every 1% of n. est_fpp: bk_fbf_estimated_fpp,\n"
      "  to compare with the measured hit_rate. mem_ratio = "
      "bk_fbf_info.memory\n"
      "  / ((N+2) m/8), mem_const_B = memory - (N+2) m/8; the memory targets\n"
      "  pass when mem_ratio <= 1.1. fbf refresh: one bk_fbf_advance doing\n"
      "  one refresh that sweeps a populated filter out of all lanes, against\n"
      "  a memset of m/8 bytes (informational).");
}

/* Case `c`: N, its filters' m (FBF_MIB of lanes in N + 2 filters) and n (the
 * bloom's p-capacity), and its bloom of the same m and k. */
static void set_up_case(int c) {
  fbf_case *fc = &cases[c];
  fc->n_past = n_pasts[c];
  fc->n_filters = fc->n_past + 2;
  fc->m_bits = fbf_mib * BK_FX_MIB * 8 / fc->n_filters;
  fc->lane_bytes = fc->m_bits * fc->n_filters / 8;
  snprintf(fc->setup.name, sizeof fc->setup.name, "N=%u", fc->n_past);
  if (bk_params_p_capacity(fc->m_bits, TARGET_FPP, &fc->n_keys) != BK_OK ||
      fc->n_keys < 2) {
    bk_fx_fail(&fc->setup, NULL, "bk_params_p_capacity failed");
    fc->n_keys = 2;
  }
  fc->per_period = fc->n_keys / 2;
  fc->fresh = (bk_fx_fresh){0, bk_fx_fresh_budget(fc->n_keys), reset_fbf, fc};
  bk_fx_bloom *b = &fc->bloom;
  snprintf(b->label, sizeof b->label, "standard bloom for fbf N=%u",
           fc->n_past);
  b->layout = BK_BLOOM_STANDARD;
  b->m_bits = fc->m_bits;
  b->k = DESIGN_K;
  b->fpp = TARGET_FPP;
  b->n_keys = fc->n_keys;
  bk_fx_bloom *bm = &fc->bloom_mem;
  snprintf(bm->label, sizeof bm->label, "standard bloom %lluMiB for fbf N=%u",
           (unsigned long long)fbf_mib, fc->n_past);
  bm->layout = BK_BLOOM_STANDARD;
  bm->m_bits = fc->m_bits * fc->n_filters;
  bm->k = DESIGN_K;
  bm->fpp = TARGET_FPP;
  if (bk_params_p_capacity(bm->m_bits, TARGET_FPP, &bm->n_keys) != BK_OK ||
      bm->n_keys < 2) {
    bk_fx_fail(&fc->setup, NULL, "bk_params_p_capacity failed");
    bm->n_keys = 2;
  }
  for (int o = 0; o < OP_COUNT; o++) {
    fc->rng[o] = bk_fx_stream(5000 + (uint64_t)(c * 100 + o));
    args[c][o] = (bench_arg){fc, (op)o};
  }
}

/* ---- advance over a clock jump ---------------------------------------------
 *
 * fbf/advance_1e12/<config>: one bk_fbf_advance over 10^12 time units, with
 * 64 fresh ids inserted before each (so every jump starts from a filter
 * with content), on the configs of the tests and the hang reproducer:
 *   fixed        m 4096, k 3, N 2, t 1000
 *   adaptive     m 4096, k 3, N 2, t 1, adapt_interval 10^6, step 1 (a
 *                valid config that took minutes per jump before the
 *                bounded advance)
 *   adaptive_t1  m 4096, k 3, N 2, t 1, adapt_interval 1, step 1,
 *                max_period 10^6 (a tick every unit)
 * Each must take microseconds, whatever the jump. */
typedef struct advance_case {
  const char *name;
  bk_fbf_config cfg;
  bk_fbf *f;
  uint64_t now, next_id;
} advance_case;

static advance_case advance_cases[] = {
    {.name = "fixed",
     .cfg = {.m_bits = 4096, .k = 3, .n_past = 2, .refresh_period = 1000}},
    {.name = "adaptive",
     .cfg = {.m_bits = 4096,
             .k = 3,
             .n_past = 2,
             .refresh_period = 1,
             .adaptive = true,
             .adapt_interval = 1000000,
             .period_step = 1}},
    {.name = "adaptive_t1",
     .cfg = {.m_bits = 4096,
             .k = 3,
             .n_past = 2,
             .refresh_period = 1,
             .adaptive = true,
             .adapt_interval = 1,
             .period_step = 1,
             .max_period = 1000000}},
};
#define N_ADVANCE_CASES (sizeof advance_cases / sizeof advance_cases[0])

static void bench_advance(bk_bench_state *st, void *arg) {
  advance_case *ac = arg;
  if (!ac->f && bk_fbf_create(&ac->f, &ac->cfg) != BK_OK) {
    bk_bench_skip(st, "bk_fbf_create failed");
    return;
  }
  uint64_t n;
  while ((n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n; i++) {
      for (unsigned j = 0; j < 64; j++) {
        uint64_t id = ac->next_id++;
        (void)bk_fbf_add(ac->f, &id, sizeof id);
      }
      /* 2^64 / 10^12 jumps reach the end of time: start over. */
      if (ac->now > UINT64_MAX - 2000000000000u) {
        bk_fbf_destroy(ac->f);
        ac->now = 0;
        if (bk_fbf_create(&ac->f, &ac->cfg) != BK_OK) {
          bk_bench_skip(st, "bk_fbf_create failed");
          return;
        }
      }
      ac->now += 1000000000000u;
      if (bk_fbf_advance(ac->f, ac->now) != BK_OK) {
        bk_bench_skip(st, "bk_fbf_advance failed");
        return;
      }
    }
}

static void register_advance(void) {
  char name[64];
  for (size_t c = 0; c < N_ADVANCE_CASES; c++) {
    snprintf(name, sizeof name, "fbf/advance_1e12/%s", advance_cases[c].name);
    bk_bench_opts opts = {.group = "fbf advance", .min_time = 0.1};
    bk_bench_register(name, bench_advance, &advance_cases[c], &opts);
  }
}

void bk_bench_register_fbf(void) {
  if (bk_bench_quick()) fbf_mib = QUICK_FBF_MIB;
  char name[96], group[64];
  for (int c = 0; c < N_CASES; c++) {
    set_up_case(c);
    /* Registration order is run order: one case at a time. */
    for (int o = 0; o < OP_COUNT; o++) {
      snprintf(group, sizeof group, "fbf %lluMiB N=%u%s",
               (unsigned long long)fbf_mib, cases[c].n_past, ops[o].group);
      bench_name(name, sizeof name, &cases[c], (op)o);
      bk_bench_opts opts = {
          .group = group, .baseline = ops[o].baseline, .min_time = MIN_TIME};
      bk_bench_register(name, bench_fbf, &args[c][o], &opts);
    }
  }
  register_targets();
  register_advance();
}

void bk_bench_release_fbf(void) {
  for (int c = 0; c < N_CASES; c++) release_case(&cases[c]);
  for (size_t c = 0; c < N_ADVANCE_CASES; c++) {
    bk_fbf_destroy(advance_cases[c].f);
    advance_cases[c].f = NULL;
  }
}
