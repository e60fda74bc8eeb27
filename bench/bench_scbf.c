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
 */
#include <stdio.h>

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
}

void bk_bench_release_scbf(void) {
  for (int w = 0; w < 2; w++) {
    bk_scbf_destroy(filters[w]);
    filters[w] = NULL;
  }
}
