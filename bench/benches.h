/* SPDX-License-Identifier: MIT */
/*
 * The benchmark files of the suite: each registers its benchmarks and
 * targets with the shim (shim.h) and frees what it built after the run.
 */
#ifndef BLOOMKIT_BENCH_BENCHES_H
#define BLOOMKIT_BENCH_BENCHES_H

/* bench_bloom.c: bk_bloom, both layouts, 1 / 32 / 256 MiB. */
void bk_bench_register_bloom(void);
void bk_bench_release_bloom(void);

#endif
