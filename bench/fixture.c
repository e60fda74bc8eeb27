/* SPDX-License-Identifier: MIT */
/*
 * The out-of-line half of the benchmark fixture (fixture.h): generator
 * streams, set-up failures, the threaded fill, resets of fresh keys, the
 * reporting of rates and targets, and the filled reference bk_bloom.
 */
#define _POSIX_C_SOURCE 200809L

#include "fixture.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t bk_fx_stream(uint64_t tag) {
  uint64_t s = bk_bench_seed() ^ (tag * UINT64_C(0xd1342543de82ef95));
  return bk_fx_next(&s);
}

double bk_fx_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- set-up that may fail ------------------------------------------------ */

bool bk_fx_fail(bk_fx_setup *setup, bk_bench_state *st, const char *fmt, ...) {
  size_t used = 0;
  if (setup->name[0]) {
    int n = snprintf(setup->error, sizeof setup->error, "%s: ", setup->name);
    used = n > 0 && (size_t)n < sizeof setup->error ? (size_t)n : 0;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(setup->error + used, sizeof setup->error - used, fmt, ap);
  va_end(ap);
  setup->failed = true;
  if (st) bk_bench_skip(st, setup->error);
  return false;
}

bool bk_fx_ready(const bk_fx_setup *setup, bk_bench_state *st) {
  if (setup->failed) bk_bench_skip(st, setup->error);
  return !setup->failed;
}

/* ---- filling ------------------------------------------------------------- */

typedef struct fill_job {
  bk_fx_add_fn add;           /* one key a call, or */
  bk_fx_add_many_fn add_many; /* FILL_BATCH keys a call */
  void *target;
  uint64_t first, end;
  bk_status status;
} fill_job;

#define FILL_BATCH 1024u

static void *fill_range(void *p) {
  fill_job *job = p;
  job->status = BK_OK;
  if (job->add_many) {
    uint64_t keys[FILL_BATCH];
    const void *ptrs[FILL_BATCH];
    size_t lens[FILL_BATCH];
    for (unsigned i = 0; i < FILL_BATCH; i++) {
      ptrs[i] = &keys[i];
      lens[i] = sizeof keys[i];
    }
    for (uint64_t key = job->first; key < job->end && job->status == BK_OK;) {
      size_t n =
          job->end - key < FILL_BATCH ? (size_t)(job->end - key) : FILL_BATCH;
      for (size_t i = 0; i < n; i++) keys[i] = key + i;
      job->status = job->add_many(job->target, ptrs, lens, n);
      key += n;
    }
    return NULL;
  }
  for (uint64_t key = job->first; key < job->end; key++) {
    bool added = false;
    bk_status s = job->add(job->target, &key, sizeof key, &added);
    if (s != BK_OK) {
      job->status = s;
      break;
    }
  }
  return NULL;
}

static bk_status fill_threads(fill_job proto, uint64_t first, uint64_t end) {
  fill_job jobs[BK_FX_FILL_THREADS];
  pthread_t threads[BK_FX_FILL_THREADS];
  bool started[BK_FX_FILL_THREADS] = {false};
  const uint64_t n = end - first;
  for (int t = 0; t < BK_FX_FILL_THREADS; t++) {
    jobs[t] = proto;
    jobs[t].first = first + n * (uint64_t)t / BK_FX_FILL_THREADS;
    jobs[t].end = first + n * (uint64_t)(t + 1) / BK_FX_FILL_THREADS;
    if (t > 0)
      started[t] = pthread_create(&threads[t], NULL, fill_range, &jobs[t]) == 0;
  }
  fill_range(&jobs[0]);
  bk_status status = jobs[0].status;
  for (int t = 1; t < BK_FX_FILL_THREADS; t++) {
    if (started[t])
      pthread_join(threads[t], NULL);
    else
      fill_range(&jobs[t]); /* no thread: do its share here */
    if (jobs[t].status != BK_OK) status = jobs[t].status;
  }
  return status;
}

bk_status bk_fx_fill(bk_fx_add_fn add, void *target, uint64_t first,
                     uint64_t end) {
  return fill_threads((fill_job){add, NULL, target, 0, 0, BK_OK}, first, end);
}

bk_status bk_fx_fill_many(bk_fx_add_many_fn add_many, void *target,
                          uint64_t first, uint64_t end) {
  return fill_threads((fill_job){NULL, add_many, target, 0, 0, BK_OK}, first,
                      end);
}

/* ---- fresh keys ---------------------------------------------------------- */

uint64_t bk_fx_fresh_budget(uint64_t n_keys) {
  return n_keys / 100 > 1024 ? n_keys / 100 : 1024;
}

bk_status bk_fx_fresh_reset(bk_bench_state *st, bk_fx_fresh *fresh) {
  bk_bench_pause(st);
  bk_status s = fresh->reset(fresh->ctx);
  fresh->used = 0;
  bk_bench_resume(st);
  return s;
}

/* ---- reporting ----------------------------------------------------------- */

void bk_fx_rate(bk_bench_state *st, const char *counter, uint64_t count) {
  uint64_t iters = bk_bench_iterations(st);
  bk_bench_counter(st, counter, iters ? (double)count / (double)iters : 0);
}

bool bk_fx_report(bk_bench_state *st, bk_fx_tally tally,
                  const char *rate_counter, bool expect_all,
                  const char *failed_msg) {
  if (tally.failed) {
    bk_bench_skip(st, failed_msg);
    return false;
  }
  if (expect_all && tally.hits != bk_bench_iterations(st)) {
    bk_bench_skip(st, "an added key was reported absent");
    return false;
  }
  if (rate_counter) bk_fx_rate(st, rate_counter, tally.hits);
  return true;
}

void bk_fx_ratio(const char *label, const char *numerator,
                 const char *denominator, double max_ratio) {
  if (max_ratio == BK_FX_INFO)
    bk_bench_info_ratio(label, numerator, denominator);
  else
    bk_bench_target(label, numerator, denominator, max_ratio);
}

/* ---- the filled reference bk_bloom --------------------------------------- */

static bk_bloom_config bloom_config(const bk_fx_bloom *b) {
  bk_bloom_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.m_bits = b->m_bits;
  cfg.capacity = b->n_keys;
  cfg.fpp = b->fpp;
  cfg.k = b->k;
  cfg.layout = b->layout;
  cfg.seed = bk_bench_seed();
  return cfg;
}

bool bk_fx_bloom_filled(bk_fx_bloom *b, bk_fx_setup *setup,
                        bk_bench_state *st) {
  if (!bk_fx_ready(setup, st)) return false;
  if (b->filled) return true;

  bk_bloom_config cfg = bloom_config(b);
  bk_bloom *f = NULL;
  bk_status s = bk_bloom_create(&f, &cfg);
  if (s != BK_OK)
    return bk_fx_fail(setup, st, "bk_bloom_create: %s", bk_strerror(s));
  bk_bloom_info info;
  s = bk_bloom_info_get(f, &info);
  if (s != BK_OK || info.k != b->k || info.m_bits != b->m_bits) {
    bk_bloom_destroy(f);
    return bk_fx_fail(setup, st, "bloom is not m=%llu, k=%u as configured",
                      (unsigned long long)b->m_bits, b->k);
  }
  double t0 = bk_fx_now();
  /* Filling writes about half the bits, so every page is faulted in before
   * anything is measured; no separate touch pass is needed. The batch API
   * (prefetched), as a user loading many keys would. */
  s = bk_fx_fill_many(bk_fx_bloom_add_many, f, 0, b->n_keys);
  if (s != BK_OK) {
    bk_bloom_destroy(f);
    return bk_fx_fail(setup, st, "bk_bloom_add while filling: %s",
                      bk_strerror(s));
  }
  double fpp = 0;
  bk_bloom_fill_fpp(f, &fpp);
  fprintf(stderr,
          "[bench] filled %s: m=%llu bits, k=%u, n=%llu keys (%.2f bits/key, "
          "fill fpp %.4f) in %.1f s\n",
          b->label, (unsigned long long)b->m_bits, info.k,
          (unsigned long long)b->n_keys, (double)b->m_bits / (double)b->n_keys,
          fpp, bk_fx_now() - t0);
  b->filled = f;
  return true;
}

/* Back to the filled state: the scratch only ever gained bits over it. */
static bk_status bloom_reset(void *ctx) {
  bk_fx_bloom *b = ctx;
  return bk_bloom_intersect(b->scratch, b->filled);
}

bool bk_fx_bloom_scratch(bk_fx_bloom *b, bk_fx_setup *setup,
                         bk_bench_state *st) {
  if (!bk_fx_bloom_filled(b, setup, st)) return false;
  if (b->scratch) return true;
  bk_bloom_config cfg = bloom_config(b);
  bk_bloom *f = NULL;
  bk_status s = bk_bloom_create(&f, &cfg);
  if (s == BK_OK) s = bk_bloom_merge(f, b->filled);
  if (s != BK_OK) {
    bk_bloom_destroy(f);
    return bk_fx_fail(setup, st, "bloom scratch copy: %s", bk_strerror(s));
  }
  b->scratch = f;
  b->fresh = (bk_fx_fresh){0, bk_fx_fresh_budget(b->n_keys), bloom_reset, b};
  return true;
}

void bk_fx_bloom_release(bk_fx_bloom *b) {
  bk_bloom_destroy(b->filled);
  bk_bloom_destroy(b->scratch);
  b->filled = b->scratch = NULL;
}
