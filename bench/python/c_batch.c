/* SPDX-License-Identifier: MIT */
/*
 * bloomkit_bench_python_c: the C side of bench/python/bench_python.py's batch
 * target (issue #30: Python's add_many / contains_many over a numpy uint64
 * array within 1.5x of the C library's own batch calls per key). It does in C
 * what the script does in Python, on the same filter and the same keys: a
 * split-block filter created with (capacity n, fpp 0.01, seed 0), keys the
 * n 8-byte outputs of splitmix64 from the given seed (the script computes
 * the same array with numpy and compares the checksum printed here), all
 * added with bk_bloom_add_many, then all looked up with
 * bk_bloom_contains_many into an array of n bools allocated and written
 * before the timing starts: C at its best (a caller reusing its buffer),
 * while the binding's time includes allocating the numpy array it returns
 * and faulting in its pages. The keys go to the library in
 * chunks of 512 pointers with a fixed length array, the pointers built per
 * chunk in the timed loop, as a C caller holding a uint64_t array would call
 * it. Each repetition creates a new filter (not timed) and times the two
 * passes with CLOCK_MONOTONIC. Output: one JSON object on stdout.
 * Usage: bloomkit_bench_python_c N SEED REPS
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloomkit/bloom.h"

#define CHUNK 512u /* keys per call, as the binding's BKPY_CHUNK */
#define MAX_REPS 100u

static uint64_t splitmix64(uint64_t x) {
  x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One pass over keys[0, n) in chunks: adds when out is NULL, else lookups
 * into out. */
static bk_status pass(bk_bloom *b, const uint64_t *keys, size_t n, bool *out) {
  const void *ptrs[CHUNK];
  size_t lens[CHUNK];
  for (size_t j = 0; j < CHUNK; j++) lens[j] = sizeof keys[0];
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t m = n - i < CHUNK ? n - i : CHUNK;
    for (size_t j = 0; j < m; j++) ptrs[j] = &keys[i + j];
    bk_status s = out ? bk_bloom_contains_many(b, ptrs, lens, m, out + i)
                      : bk_bloom_add_many(b, ptrs, lens, m);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N SEED REPS\n", argv[0]);
    return 2;
  }
  size_t n = (size_t)strtoull(argv[1], NULL, 10);
  uint64_t seed = strtoull(argv[2], NULL, 10);
  unsigned reps = (unsigned)strtoul(argv[3], NULL, 10);
  if (n == 0 || reps == 0 || reps > MAX_REPS) {
    fprintf(stderr, "%s: N and REPS (1..%u) must be positive\n", argv[0],
            MAX_REPS);
    return 2;
  }
  uint64_t *keys = malloc(n * sizeof *keys);
  if (keys == NULL) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  uint64_t xor_all = 0, sum_all = 0;
  for (size_t i = 0; i < n; i++) {
    keys[i] =
        splitmix64(seed + (uint64_t)(i + 1) * UINT64_C(0x9E3779B97F4A7C15));
    xor_all ^= keys[i];
    sum_all += keys[i];
  }
  double add_ns[MAX_REPS], contains_ns[MAX_REPS];
  size_t hits = 0;
  bk_bloom_info info = {0};
  bk_status s = BK_OK;
  for (unsigned r = 0; r < reps && s == BK_OK; r++) {
    bk_bloom_config cfg = {
        .capacity = n, .fpp = 0.01, .layout = BK_BLOOM_SPLIT_BLOCK};
    bk_bloom *b = NULL;
    s = bk_bloom_create(&b, &cfg);
    if (s != BK_OK) break;
    s = bk_bloom_info_get(b, &info);
    bool *out = malloc(n * sizeof *out);
    if (out == NULL && s == BK_OK) s = BK_ENOMEM;
    if (out != NULL) memset(out, 0, n * sizeof *out); /* its pages faulted in */
    double t0 = now_ns();
    if (s == BK_OK) s = pass(b, keys, n, NULL);
    double t1 = now_ns();
    if (s == BK_OK) s = pass(b, keys, n, out);
    double t2 = now_ns();
    add_ns[r] = (t1 - t0) / (double)n;
    contains_ns[r] = (t2 - t1) / (double)n;
    hits = 0;
    for (size_t i = 0; out != NULL && i < n; i++) hits += out[i];
    free(out);
    bk_bloom_destroy(b);
  }
  free(keys);
  if (s != BK_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], bk_strerror(s));
    return 1;
  }
  printf("{\"n\": %zu, \"seed\": %" PRIu64 ", \"xor\": %" PRIu64
         ", \"sum\": %" PRIu64 ", \"m_bits\": %" PRIu64
         ", \"k\": %u, \"memory\": %zu, \"hits\": %zu, \"chunk\": %u",
         n, seed, xor_all, sum_all, info.m_bits, info.k, info.memory, hits,
         CHUNK);
  printf(", \"add_ns_per_key\": [");
  for (unsigned r = 0; r < reps; r++)
    printf("%s%.4f", r ? ", " : "", add_ns[r]);
  printf("], \"contains_ns_per_key\": [");
  for (unsigned r = 0; r < reps; r++)
    printf("%s%.4f", r ? ", " : "", contains_ns[r]);
  printf("]}\n");
  return 0;
}
