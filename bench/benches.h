/* SPDX-License-Identifier: MIT */
/*
 * The benchmark files of the suite: each registers its benchmarks and
 * targets with the shim (shim.h) and frees what it built after the run.
 * Their keys, timed loops, fills and target reporting come from the shared
 * fixture (fixture.h). A new file adds its pair here, the calls in
 * bench_main.c and its name in bench/CMakeLists.txt.
 */
#ifndef BLOOMKIT_BENCH_BENCHES_H
#define BLOOMKIT_BENCH_BENCHES_H

/* bench_bloom.c: bk_bloom, both layouts, 1 / 32 / 256 MiB. */
void bk_bench_register_bloom(void);
void bk_bench_release_bloom(void);

/* bench_fbf.c: bk_fbf at N = 1, 6, 30 (64 MiB of lanes) against a bk_bloom
 * of the same m and k. */
void bk_bench_register_fbf(void);
void bk_bench_release_fbf(void);

/* bench_apbf.c: bk_apbf at (7,5) and (10,25), 15 KiB to 16 MiB, against a
 * bk_bloom of the same memory; bk_fbf_contains_at against contains. */
void bk_bench_register_apbf(void);
void bk_bench_release_apbf(void);

/* bench_idem.c: bk_idem with strategy FBF (64 MiB, N = 2) against NONE on
 * a table of 1M counters; one thread, and 2 threads against 1. */
void bk_bench_register_idem(void);
void bk_bench_release_idem(void);

/* bench_cbf.c: bk_cbf against a bk_bloom of the same layout, m and k at
 * 2^23 and 2^26 counters. */
void bk_bench_register_cbf(void);
void bk_bench_release_cbf(void);

/* bench_scbf.c: bk_scbf contains over 5 filters against 1 filter of the
 * same keys. */
void bk_bench_register_scbf(void);
void bk_bench_release_scbf(void);

/* bench_kbf.c: bk_kbf (10 M keys, p = 1e-4, 3000 values) against a
 * bk_bloom of the same m and k. */
void bk_bench_register_kbf(void);
void bk_bench_release_kbf(void);
/* bench_bloomclock.c: bk_bloomclock tick, merge, receive and compare at
 * m = 64 .. 4096 against memcpy, and against bk_vclock at p = 1024, 4096. */
void bk_bench_register_bloomclock(void);
void bk_bench_release_bloomclock(void);

#endif
