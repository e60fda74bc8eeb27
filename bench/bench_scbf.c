/* SPDX-License-Identifier: MIT */
/*
 * bk_scbf: a check (contains) of absent keys over 5 filters against 1
 * filter holding the same keys (issue #9: <= 2x).
 *
 * Sizes: the 5-filter structure has first capacity C = 2^15 (--bk_quick
 * 2^11), growth 2, so its filters hold C, 2C, 4C, 8C and 16C keys; it is
 * filled with 31 C present keys (ids 1, 2, ...), which opens exactly 5
 * filters. The 1-filter structure has capacity 31 C and the same keys.
 * Both at fpp 0.01, 4-bit counters, standard layout, in memory. Lookups
 * draw absent keys (every filter is asked), independent of the answers.
 *
 * The file's checksums (issue #32): a file holding 1M keys (capacity 2M,
 * fpp 0.01, 4-bit counters: one filter, ~9 MiB) in format 2 (a checksum
 * per filter, written by flush and checked when a file closed cleanly is
 * opened) against the same file in format 1 (no checksum). flush: one add
 * (format 2: it first clears the clean flag, one msync of the header page)
 * then bk_scbf_flush; open: bk_scbf_open and bk_scbf_destroy, the page
 * cache warm. The files live in $TMPDIR (or /tmp) and are removed after.
 */
#define XXH_INLINE_ALL
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "benches.h"
#include "bloomkit/cbf.h"
#include "fixture.h"

#define FIRST_CAPACITY (1u << 15)
#define QUICK_FIRST_CAPACITY (1u << 11)

static uint64_t first_capacity = FIRST_CAPACITY;
static bk_scbf *filters[2]; /* [0]: 1 filter, [1]: 5 filters */
static bk_fx_setup setups[2];
static uint64_t rngs[2];

static bk_status scbf_contains(const void *s, const void *key, size_t len,
                               bool *found) {
  return bk_scbf_contains((const bk_scbf *)s, key, len, found);
}

static bool build(int which, bk_bench_state *st) {
  if (filters[which]) return true;
  if (!bk_fx_ready(&setups[which], st)) return false;
  uint64_t n = 31 * first_capacity;
  bk_scbf_config cfg = {.capacity = which ? first_capacity : n, .fpp = 0.01};
  bk_scbf *s = NULL;
  bk_status status = bk_scbf_create(&s, &cfg);
  if (status != BK_OK)
    return bk_fx_fail(&setups[which], st, "create: %s", bk_strerror(status));
  double t0 = bk_fx_now();
  for (uint64_t i = 0; i < n && status == BK_OK; i++)
    status = bk_scbf_add(s, &i, sizeof i, i + 1);
  bk_scbf_info info;
  if (status == BK_OK) status = bk_scbf_info_get(s, &info);
  if (status != BK_OK || info.n_filters != (which ? 5u : 1u)) {
    bk_scbf_destroy(s);
    return bk_fx_fail(&setups[which], st, "fill: %s, %u filters",
                      bk_strerror(status),
                      status == BK_OK ? info.n_filters : 0);
  }
  fprintf(stderr, "scbf %d filter(s): %llu keys in %.2f s, %llu counters\n",
          which ? 5 : 1, (unsigned long long)n, bk_fx_now() - t0,
          (unsigned long long)info.m_counters);
  filters[which] = s;
  return true;
}

static void bench_contains(bk_bench_state *st, void *arg) {
  int which = (int)(intptr_t)arg;
  if (!build(which, st)) return;
  bk_fx_tally t = bk_fx_lookups(st, scbf_contains, filters[which], &rngs[which],
                                BK_FX_ABSENT, false);
  bk_fx_report(st, t, "hit_rate", false, "bk_scbf_contains failed");
}

/* ---- the file's checksum: format 2 against format 1 ---------------------- */

#define FILE_KEYS 1000000u
#define QUICK_FILE_KEYS 20000u

static char file_paths[2][256]; /* [0]: format 1, [1]: format 2 */
static bk_fx_setup file_setup = {.name = "scbf file"};
static uint64_t file_next_id;

static void store_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Rewrite a format-2 file of one filter as format 1: version 1, the
 * header's checksum recomputed, the clean flag and the record's checksum
 * zero (docs/design/cbf.md 3.11). */
static bool to_format1(const char *path) {
  FILE *fp = fopen(path, "r+b");
  if (!fp) return false;
  unsigned char h[128 + 64];
  bool ok = fread(h, 1, sizeof h, fp) == sizeof h;
  h[4] = 1;
  store_le64(h + 56, (uint64_t)XXH3_64bits(h, 56));
  memset(h + 96, 0, 8);
  memset(h + 128 + 56, 0, 8);
  ok = ok && fseek(fp, 0, SEEK_SET) == 0 &&
       fwrite(h, 1, sizeof h, fp) == sizeof h;
  return fclose(fp) == 0 && ok;
}

static bool build_files(bk_bench_state *st) {
  if (file_paths[1][0]) return true;
  if (!bk_fx_ready(&file_setup, st)) return false;
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int v = 0; v < 2; v++) {
    snprintf(file_paths[v], sizeof file_paths[v], "%s/bk_bench_scbf_v%d.%ld",
             dir, v + 1, (long)getpid());
    unlink(file_paths[v]);
  }
  uint64_t n = bk_bench_quick() ? QUICK_FILE_KEYS : FILE_KEYS;
  bk_scbf_config cfg = {.capacity = 2 * n, .fpp = 0.01};
  bk_scbf *s = NULL;
  bk_status status = bk_scbf_open(&s, file_paths[1], &cfg);
  for (uint64_t i = 0; i < n && status == BK_OK; i++)
    status = bk_scbf_add(s, &i, sizeof i, i);
  bk_scbf_destroy(s); /* sealed: checksums written */
  file_next_id = n;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", file_paths[1], file_paths[0]);
  if (status != BK_OK || system(cmd) != 0 || !to_format1(file_paths[0])) {
    file_paths[1][0] = 0;
    return bk_fx_fail(&file_setup, st, "file: %s", bk_strerror(status));
  }
  return true;
}

static void bench_file_flush(bk_bench_state *st, void *arg) {
  int v = (int)(intptr_t)arg;
  if (!build_files(st)) return;
  bk_scbf *s = NULL;
  bk_status status = bk_scbf_open(&s, file_paths[v], NULL);
  uint64_t n;
  while (status == BK_OK && (n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n && status == BK_OK; i++) {
      uint64_t id = file_next_id++;
      status = bk_scbf_add(s, &id, sizeof id, id);
      if (status == BK_OK) status = bk_scbf_flush(s);
    }
  bk_scbf_destroy(s);
  if (status != BK_OK) bk_bench_skip(st, bk_strerror(status));
}

static void bench_file_open(bk_bench_state *st, void *arg) {
  int v = (int)(intptr_t)arg;
  if (!build_files(st)) return;
  bk_status status = BK_OK;
  uint64_t n;
  while (status == BK_OK && (n = bk_bench_batch(st)) != 0)
    for (uint64_t i = 0; i < n && status == BK_OK; i++) {
      bk_scbf *s = NULL;
      status = bk_scbf_open(&s, file_paths[v], NULL);
      bk_scbf_destroy(s);
    }
  if (status != BK_OK) bk_bench_skip(st, bk_strerror(status));
}

void bk_bench_register_scbf(void) {
  if (bk_bench_quick()) first_capacity = QUICK_FIRST_CAPACITY;
  for (int w = 0; w < 2; w++) {
    snprintf(setups[w].name, sizeof setups[w].name, "scbf %d filter(s)",
             w ? 5 : 1);
    rngs[w] = bk_fx_stream(0x5CBF + (uint64_t)w);
  }
  const bk_bench_opts base = {.group = "scbf", .baseline = true};
  const bk_bench_opts row = {.group = "scbf"};
  bk_bench_register("scbf/1_filter/contains_absent", bench_contains,
                    (void *)(intptr_t)0, &base);
  bk_bench_register("scbf/5_filters/contains_absent", bench_contains,
                    (void *)(intptr_t)1, &row);
  bk_fx_ratio("bk_scbf contains over 5 filters / 1 filter <= 2x",
              "scbf/5_filters/contains_absent", "scbf/1_filter/contains_absent",
              2.0);
  const bk_bench_opts fbase = {.group = "scbf_file", .baseline = true};
  const bk_bench_opts frow = {.group = "scbf_file"};
  bk_bench_register("scbf_file/format1/add_flush", bench_file_flush,
                    (void *)(intptr_t)0, &fbase);
  bk_bench_register("scbf_file/format2/add_flush", bench_file_flush,
                    (void *)(intptr_t)1, &frow);
  bk_bench_register("scbf_file/format1/open", bench_file_open,
                    (void *)(intptr_t)0, &frow);
  bk_bench_register("scbf_file/format2/open", bench_file_open,
                    (void *)(intptr_t)1, &frow);
  bk_bench_info_ratio("bk_scbf file, 1M keys: flush with checksums / without",
                      "scbf_file/format2/add_flush",
                      "scbf_file/format1/add_flush");
  bk_bench_info_ratio(
      "bk_scbf file, 1M keys: open verifying checksums / "
      "without",
      "scbf_file/format2/open", "scbf_file/format1/open");
}

void bk_bench_release_scbf(void) {
  for (int w = 0; w < 2; w++) {
    bk_scbf_destroy(filters[w]);
    filters[w] = NULL;
  }
  for (int v = 0; v < 2; v++)
    if (file_paths[v][0]) unlink(file_paths[v]);
}
