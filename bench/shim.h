/* SPDX-License-Identifier: MIT */
/*
 * A C face for Google Benchmark, so bloomkit's benchmarks are written in C.
 * A benchmark body asks for iterations in batches (bk_bench_batch) and runs
 * each batch in a plain C loop, so the cost of crossing into C++ is paid once
 * per batch (up to BK_BENCH_MAX_BATCH iterations), not once per iteration.
 * Every benchmark belongs to a group (e.g. one filter size) that may hold one
 * baseline; at the end the shim prints a table with each benchmark's ns/op,
 * bits/key and ratio to its group's baseline, then checks the registered
 * targets (ratio of two benchmarks, or a reported counter, against a bound)
 * and prints PASS or MISS, and the informational ratios as INFO.
 *
 *   static void bench_sum(bk_bench_state *st, void *arg) {
 *     uint64_t n, acc = 0;
 *     while ((n = bk_bench_batch(st)) != 0)
 *       for (uint64_t i = 0; i < n; i++) acc += work(arg, i);
 *     bk_bench_sink_u64(acc);
 *   }
 *
 * Thread safety: register and run from one thread; a benchmark body may start
 * threads of its own but only its calling thread may touch the state.
 */
#ifndef BLOOMKIT_BENCH_SHIM_H
#define BLOOMKIT_BENCH_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The running benchmark (wraps benchmark::State). */
typedef struct bk_bench_state bk_bench_state;

/** A benchmark body; `arg` is what was registered with it. */
typedef void (*bk_bench_fn)(bk_bench_state *st, void *arg);

/** Most iterations bk_bench_batch() hands out at once. */
#define BK_BENCH_MAX_BATCH 1024u

/** How a benchmark is registered; zero fields mean "default". */
typedef struct bk_bench_opts {
  const char *group;  /**< rows compare to this group's baseline; NULL: none */
  bool baseline;      /**< this benchmark is its group's baseline */
  double min_time;    /**< seconds; 0: the --benchmark_min_time default.
                           Quick mode (see bk_bench_main) caps it. */
} bk_bench_opts;

/**
 * Register `fn(st, arg)` under `name` (copied). `opts` may be NULL. Call
 * from the register callback of bk_bench_main(), before anything runs.
 */
void bk_bench_register(const char *name, bk_bench_fn fn, void *arg,
                       const bk_bench_opts *opts);

/**
 * Register a target checked after the run: time(numerator) / time(denominator)
 * <= max_ratio. `label` describes it in the report. Names are as registered.
 * A target whose benchmarks did not both run is reported as SKIP.
 */
void bk_bench_target(const char *label, const char *numerator,
                     const char *denominator, double max_ratio);

/**
 * Register an informational ratio, time(numerator) / time(denominator),
 * printed among the targets as INFO: reported, never PASS or MISS.
 */
void bk_bench_info_ratio(const char *label, const char *numerator,
                         const char *denominator);

/**
 * Register a target on a reported value: counter `counter` of benchmark
 * `benchmark` (see bk_bench_counter) <= max_value. `detail` (NULL: none)
 * names another counter of the same benchmark, printed beside the value.
 * SKIP when the benchmark did not run or did not report the counter.
 */
void bk_bench_target_counter(const char *label, const char *benchmark,
                             const char *counter, double max_value,
                             const char *detail);

/** A paragraph printed after the targets, e.g. how to read them. */
void bk_bench_note(const char *text);

/**
 * How many iterations to run next; 0 when the benchmark is done. Each
 * returned batch must be run in full. The first call starts the timer.
 */
uint64_t bk_bench_batch(bk_bench_state *st);

/**
 * bk_bench_batch for a body that works in whole chunks of `unit` operations,
 * e.g. calls of a batch API on `unit` keys each, and counts every operation
 * as one iteration (so ns/op is per key, not per call). The count returned is
 * a positive multiple of `unit` (at most BK_BENCH_MAX_BATCH, or `unit` if that
 * is larger), or 0 when the benchmark is done. The last batch may overshoot
 * the planned iterations by less than `unit`; Google Benchmark counts the
 * overshoot, so the time per iteration stays exact. unit <= 1: bk_bench_batch.
 */
uint64_t bk_bench_batch_of(bk_bench_state *st, uint64_t unit);

/** Stop / restart the timer, e.g. around a reset inside the loop. These
 *  cost about a microsecond: use them rarely, never per iteration. */
void bk_bench_pause(bk_bench_state *st);
void bk_bench_resume(bk_bench_state *st);

/** Report a named value with the benchmark (shown as a counter). */
void bk_bench_counter(bk_bench_state *st, const char *name, double value);

/** Iterations run so far by this run of the benchmark. */
uint64_t bk_bench_iterations(const bk_bench_state *st);

/** Abort this benchmark with a message; call before or instead of
 *  bk_bench_batch() and return without running the loop. */
void bk_bench_skip(bk_bench_state *st, const char *message);

/** True in quick (smoke-test) mode: --bk_quick or BK_BENCH_QUICK=1. */
bool bk_bench_quick(void);

/**
 * The scale run's size, log2 of its keys: --bk_scale (32) or --bk_scale=L;
 * 0 (the default) when it is off.
 */
unsigned bk_bench_scale(void);

/** The run's seed: --bk_seed=N or BK_BENCH_SEED, else a fixed default. */
uint64_t bk_bench_seed(void);

/**
 * Parse and remove the shim's own flags (--bk_quick, --bk_seed=N,
 * --bk_min_time=S to override every benchmark's min_time), hand the rest to
 * benchmark::Initialize (so --benchmark_filter and friends work), call
 * `register_benchmarks`, run, print the console report, the table and the
 * targets. Returns the process exit status: 0, or 1 for unknown arguments or
 * a benchmark that failed. A missed target does not fail the run.
 */
int bk_bench_main(int argc, char **argv, void (*register_benchmarks)(void));

/** Make the compiler believe `value` is used, so the work producing it is
 *  not optimized away. Costs nothing at run time. */
static inline void bk_bench_sink_u64(uint64_t value) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__ __volatile__("" : : "r"(value) : "memory");
#else
  volatile uint64_t sink = value;
  (void)sink;
#endif
}

#ifdef __cplusplus
}
#endif

#endif
