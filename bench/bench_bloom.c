/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks of bk_bloom, the classic Bloom filter, in its three layouts
 * (standard, blocked, split-block) at three
 * sizes of filter bits (1 MiB, 32 MiB, 256 MiB), against a baseline that
 * reads one random 64-byte line of a bk_bits array of the same size, and the
 * issue's targets for them.
 *
 * Each filter is sized by m = size * 8 bits and k = 7 (split-block: k = 8,
 * which the layout fixes, at the same bits per key), and filled with its
 * p-capacity at p = 0.01 (bk_params_p_capacity: n = floor(m (ln 2)^2 / -ln p),
 * for which the optimal k is round((m / n) ln 2) = 7), so bits/key is 9.59 and
 * about half the bits are set: a filter "filled to its design capacity".
 * A filter is filled once, on first use, by two threads, and shared by every
 * benchmark of that filter.
 *
 * Keys are the fixture's (fixture.h): present keys [0, n) the filter was
 * filled with, absent keys, fresh keys for adds, all hashed by the filter with
 * its seeded XXH3 (the run's seed). The baseline's line index is drawn as a
 * present key of [0, lines) and read through the same lookup loop
 * (bk_fx_lookups) as the filter's keys, so the loop overhead around the call
 * being measured is the same in the baseline and in the filter benchmarks.
 *
 * Add benchmarks would overfill the shared filter (at 1 MiB a 0.2 s run adds
 * tens of times its capacity), which changes what add-if-absent costs. They
 * therefore run on a scratch copy of the filled filter and reset it, timer
 * paused, each time they have added 1% of the capacity in fresh keys: the
 * reset is bk_bloom_intersect(scratch, filled), exact because adds only set
 * bits (bk_fx_bloom, bk_fx_fresh_adds). The position in the fresh keys
 * carries over from one run to the next, so add and add_if_absent both cycle
 * through the same filter states (the filled filter plus fresh keys [0, j),
 * j below 1% of n) with the same keys, and their ratio is fair.
 *
 * Lookups are measured three ways:
 *
 *   independent  single-key calls whose keys do not depend on earlier
 *                answers, so the CPU may overlap the cache misses of several
 *                operations: throughput, and how much overlap a short code
 *                path buys (groups "1MiB" ...). The adds are measured this way.
 *   batched      the batch APIs (bk_bloom_contains_many, bk_bloom_add_many),
 *                BK_FX_MANY (256) keys a call (fixture.h's batch loops), in
 *                the independent groups and against the same baseline:
 *                throughput when the library hashes and prefetches ahead
 *                itself. The keys come from the same
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

#include <stdio.h>
#include <string.h>

#include "benches.h"
#include "bloomkit/bits.h"
#include "bloomkit/bloom_inline.h"
#include "bloomkit/params.h"
#include "fixture.h"

#define BITS_PER_LINE 512u
#define PAGE_BITS ((uint64_t)4096 * 8)
#define TARGET_FPP 0.01
#define DESIGN_K 7u
#define MIN_TIME 0.2 /* seconds per benchmark */

/* ---- the cases ---------------------------------------------------------- */

typedef enum op {
  OP_CONTAINS_PRESENT,
  OP_CONTAINS_ABSENT,
  OP_ADD,
  OP_ADD_IF_ABSENT,
  OP_CONTAINS_PRESENT_DEP, /* dependent: key from the previous answer */
  OP_CONTAINS_ABSENT_DEP,
  /* Batched (BK_FX_MANY keys a call). Appended, so the generator streams
   * (seeded by op number) of the cases above stay what they were. */
  OP_CONTAINS_MANY_PRESENT,
  OP_CONTAINS_MANY_ABSENT,
  OP_ADD_MANY,
  /* Adds with the scratch switched to single_writer (one adding thread, no
   * locked instruction), on the same scratch scheme as add. */
  OP_ADD_SW,
  OP_ADD_IF_ABSENT_SW,
  OP_COUNT
} op;

/* What an op runs; the adds write the scratch copy. */
typedef enum run {
  LOOKUPS,
  LOOKUPS_MANY,
  ADDS,
  ADDS_IF_ABSENT,
  ADDS_MANY,
  ADDS_SW,
  ADDS_IF_ABSENT_SW
} run;

/* Each op: its name (after "<size>/[dep/]<layout>/"), its loop, the keys it
 * looks up (present or absent), and what it reports. */
typedef struct op_spec {
  const char *name;
  run loop;
  bool present, dependent;
  const char *rate;   /* counter of the loop's hits per op, or NULL */
  const char *failed; /* the skip message when an operation failed */
} op_spec;

static const op_spec ops[OP_COUNT] = {
    [OP_CONTAINS_PRESENT] = {"contains_present", LOOKUPS, true, false,
                             "hit_rate", "bk_bloom_contains failed"},
    [OP_CONTAINS_ABSENT] = {"contains_absent", LOOKUPS, false, false,
                            "hit_rate", "bk_bloom_contains failed"},
    [OP_ADD] = {"add", ADDS, false, false, NULL,
                "bk_bloom_add or the scratch reset failed"},
    [OP_ADD_IF_ABSENT] = {"add_if_absent", ADDS_IF_ABSENT, false, false,
                          "new_rate",
                          "bk_bloom_add_if_absent or the scratch reset "
                          "failed"},
    [OP_CONTAINS_PRESENT_DEP] = {"contains_present", LOOKUPS, true, true,
                                 "hit_rate", "bk_bloom_contains failed"},
    [OP_CONTAINS_ABSENT_DEP] = {"contains_absent", LOOKUPS, false, true,
                                "hit_rate", "bk_bloom_contains failed"},
    [OP_CONTAINS_MANY_PRESENT] = {"contains_many_present", LOOKUPS_MANY, true,
                                  false, "hit_rate",
                                  "bk_bloom_contains_many failed"},
    [OP_CONTAINS_MANY_ABSENT] = {"contains_many_absent", LOOKUPS_MANY, false,
                                 false, "hit_rate",
                                 "bk_bloom_contains_many failed"},
    [OP_ADD_MANY] = {"add_many", ADDS_MANY, false, false, NULL,
                     "bk_bloom_add_many or the scratch reset failed"},
    [OP_ADD_SW] = {"add_single_writer", ADDS_SW, false, false, NULL,
                   "bk_bloom_add or the scratch reset failed"},
    [OP_ADD_IF_ABSENT_SW] = {"add_if_absent_single_writer", ADDS_IF_ABSENT_SW,
                             false, false, "new_rate",
                             "bk_bloom_add_if_absent or the scratch reset "
                             "failed"},
};

/* The two groups of each size, in run (and table) order: a baseline reading
 * lines the way the group's lookups read the filter, then both layouts' ops. */
static const op independent_ops[] = {OP_CONTAINS_PRESENT,
                                     OP_CONTAINS_ABSENT,
                                     OP_CONTAINS_MANY_PRESENT,
                                     OP_CONTAINS_MANY_ABSENT,
                                     OP_ADD,
                                     OP_ADD_IF_ABSENT,
                                     OP_ADD_MANY,
                                     OP_ADD_SW,
                                     OP_ADD_IF_ABSENT_SW};
static const op dependent_ops[] = {OP_CONTAINS_PRESENT_DEP,
                                   OP_CONTAINS_ABSENT_DEP};
#define N_OPS(a) (sizeof(a) / sizeof((a)[0]))

enum { N_SIZES = 3, N_LAYOUTS = 3, N_MODES = 2 };
static const struct mode {
  const char *group; /* after the size, e.g. "1MiB dependent" */
  const char *path;  /* after the size in names, e.g. "1MiB/dep/..." */
  const op *ops;
  size_t n_ops;
} modes[N_MODES] = {
    {"", "", independent_ops, N_OPS(independent_ops)},
    {" dependent", "/dep", dependent_ops, N_OPS(dependent_ops)},
};
static const uint64_t sizes_mib[N_SIZES] = {1, 32, 256};
static const bk_bloom_layout layouts[N_LAYOUTS] = {
    BK_BLOOM_STANDARD, BK_BLOOM_BLOCKED, BK_BLOOM_SPLIT_BLOCK};

typedef struct filter_case {
  bk_fx_bloom bloom; /* filled with its p-capacity; scratch for adds */
  bk_fx_setup setup;
  uint64_t rng[OP_COUNT]; /* per-benchmark generator state, kept across runs */
} filter_case;

typedef struct baseline_case {
  uint64_t n_bits;
  uint64_t n_lines;
  bk_bits *bits;
  bk_fx_setup setup;
  uint64_t rng[N_MODES];
} baseline_case;

typedef struct baseline_arg {
  baseline_case *bc;
  int mode; /* 1: dependent */
} baseline_arg;

typedef struct bench_arg {
  filter_case *fc;
  op which;
} bench_arg;

static filter_case filters[N_SIZES][N_LAYOUTS];
static baseline_case baselines[N_SIZES];
static bench_arg args[N_SIZES][N_LAYOUTS][OP_COUNT];
static baseline_arg baseline_args[N_SIZES][N_MODES];

static const char *layout_name(bk_bloom_layout layout) {
  return layout == BK_BLOOM_SPLIT_BLOCK ? "split"
         : layout == BK_BLOOM_BLOCKED   ? "blocked"
                                        : "standard";
}

/* ---- the batched loops -------------------------------------------------- */

/* ---- the benchmark bodies ----------------------------------------------- */

static void bench_filter(bk_bench_state *st, void *p) {
  const bench_arg *arg = p;
  filter_case *fc = arg->fc;
  const op_spec *o = &ops[arg->which];
  bk_fx_bloom *b = &fc->bloom;
  uint64_t *rng = &fc->rng[arg->which];
  const uint64_t n_present = o->present ? b->n_keys : BK_FX_ABSENT;
  bool ready = o->loop >= ADDS ? bk_fx_bloom_scratch(b, &fc->setup, st)
                               : bk_fx_bloom_filled(b, &fc->setup, st);
  if (!ready) return;
  bk_fx_tally t = {0, false, BK_OK};
  switch (o->loop) {
    case LOOKUPS:
      t = bk_fx_lookups(st, bk_fx_bloom_contains, b->filled, rng, n_present,
                        o->dependent);
      break;
    case LOOKUPS_MANY:
      t = bk_fx_lookups_many(st, bk_fx_bloom_contains_many, b->filled, rng,
                             n_present);
      break;
    case ADDS:
      t = bk_fx_fresh_adds(st, bk_fx_bloom_add, b->scratch, &b->fresh);
      break;
    case ADDS_IF_ABSENT:
      t = bk_fx_fresh_adds(st, bk_fx_bloom_add_if_absent, b->scratch,
                           &b->fresh);
      break;
    case ADDS_MANY:
      t = bk_fx_fresh_adds_many(st, bk_fx_bloom_add_many_report, b->scratch,
                                &b->fresh, false);
      break;
    case ADDS_SW:
    case ADDS_IF_ABSENT_SW:
      /* Only this thread adds to the scratch: single_writer holds. */
      (void)bk_bloom_set_single_writer(b->scratch, true);
      t = bk_fx_fresh_adds(
          st, o->loop == ADDS_SW ? bk_fx_bloom_add : bk_fx_bloom_add_if_absent,
          b->scratch, &b->fresh);
      (void)bk_bloom_set_single_writer(b->scratch, false);
      break;
  }
  bk_fx_report(st, t, o->rate, o->present, o->failed);
  bk_bench_counter(st, "bits_per_key", (double)b->m_bits / (double)b->n_keys);
}

/* The baseline: one random line of a bk_bits as big as the filter, read
 * through bk_bits_test (out of line, range-checked, like the filter calls),
 * the line drawn as a present key of [0, lines). */
static bk_status line_test(const void *bits, const void *key, size_t len,
                           bool *set) {
  uint64_t line;
  (void)len;
  memcpy(&line, key, sizeof line);
  return bk_bits_test(bits, line * BITS_PER_LINE, set);
}

static bool ensure_baseline(baseline_case *bc, bk_bench_state *st) {
  if (!bk_fx_ready(&bc->setup, st)) return false;
  if (bc->bits) return true;
  bk_status s = bk_bits_create(&bc->bits, bc->n_bits, NULL);
  /* Fault in every page (bk_bits storage is lazily zeroed): untouched pages
   * would all read the one shared zero page, from cache. */
  for (uint64_t i = 0; s == BK_OK && i < bc->n_bits; i += PAGE_BITS)
    s = bk_bits_set(bc->bits, i);
  if (s == BK_OK) return true;
  bk_bits_destroy(bc->bits);
  bc->bits = NULL;
  return bk_fx_fail(&bc->setup, st, "baseline bk_bits: %s", bk_strerror(s));
}

static void bench_baseline(bk_bench_state *st, void *p) {
  const baseline_arg *arg = p;
  baseline_case *bc = arg->bc;
  if (!ensure_baseline(bc, st)) return;
  bk_fx_tally t = bk_fx_lookups(st, line_test, bc->bits, &bc->rng[arg->mode],
                                bc->n_lines, arg->mode == 1);
  bk_fx_report(st, t, NULL, false, "bk_bits_test failed");
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
  } target_modes[3] = {
      {"single-key, independent", "256MiB", "contains_present",
       "contains_absent"},
      {"single-key, dependent/latency", "256MiB/dep", "contains_present",
       "contains_absent"},
      {"batched 256, independent", "256MiB", "contains_many_present",
       "contains_many_absent"},
  };
  static const struct {
    const char *what; /* the label before the mode */
    const char *layout;
    bool present;
    double max_ratio;
  } lookups[3] = {
      {"blocked contains present, 256 MiB", "blocked", true, 1.3},
      {"blocked contains absent, 256 MiB", "blocked", false, 1.3},
      {"standard contains absent, 256 MiB, k=7", "standard", false, 3.0},
  };
  char label[128], num[64], den[64];
  for (int d = 0; d < 3; d++) {
    const char *pre = target_modes[d].prefix;
    snprintf(den, sizeof den, "%s/baseline/random_line", pre);
    for (int i = 0; i < 3; i++) {
      snprintf(label, sizeof label, "%s, vs line (%s)", lookups[i].what,
               target_modes[d].mode);
      snprintf(num, sizeof num, "%s/%s/%s", pre, lookups[i].layout,
               lookups[i].present ? target_modes[d].op_present
                                  : target_modes[d].op_absent);
      bk_fx_ratio(label, num, den, lookups[i].max_ratio);
    }
  }
  bk_bench_note(
      "single-key, independent: one call per key, keys never depend on "
      "earlier\n"
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
  /* Issue #8: the split-block layout against the others, and every
   * layout's adds against its own lookups (concurrent adds <= 3x find for
   * standard and blocked; single-writer adds reported). */
  for (int s = 0; s < N_SIZES; s++) {
    unsigned long long mib = (unsigned long long)sizes_mib[s];
    static const char *const split_vs[] = {
        "contains_present", "contains_absent", "add", "add_single_writer",
        "add_if_absent"};
    for (int l = 0; l < 2; l++) {
      for (size_t i = 0; i < sizeof split_vs / sizeof split_vs[0]; i++) {
        snprintf(label, sizeof label, "split vs %s %s, %llu MiB",
                 layout_name(layouts[l]), split_vs[i], mib);
        snprintf(num, sizeof num, "%lluMiB/split/%s", mib, split_vs[i]);
        snprintf(den, sizeof den, "%lluMiB/%s/%s", mib, layout_name(layouts[l]),
                 split_vs[i]);
        bk_fx_ratio(label, num, den, BK_FX_INFO);
      }
    }
    for (int l = 0; l < N_LAYOUTS; l++) {
      const char *lay = layout_name(layouts[l]);
      snprintf(label, sizeof label, "add vs contains_absent, %s, %llu MiB", lay,
               mib);
      snprintf(num, sizeof num, "%lluMiB/%s/add", mib, lay);
      snprintf(den, sizeof den, "%lluMiB/%s/contains_absent", mib, lay);
      bk_fx_ratio(label, num, den,
                  layouts[l] == BK_BLOOM_SPLIT_BLOCK ? BK_FX_INFO : 3.0);
      snprintf(label, sizeof label, "single-writer add vs add, %s, %llu MiB",
               lay, mib);
      snprintf(num, sizeof num, "%lluMiB/%s/add_single_writer", mib, lay);
      snprintf(den, sizeof den, "%lluMiB/%s/add", mib, lay);
      bk_fx_ratio(label, num, den, BK_FX_INFO);
    }
  }
  for (int l = 0; l < N_LAYOUTS; l++) {
    for (int s = 0; s < N_SIZES; s++) {
      const char *lay = layout_name(layouts[l]);
      unsigned long long mib = (unsigned long long)sizes_mib[s];
      snprintf(label, sizeof label, "add_if_absent vs add, %s, %llu MiB", lay,
               mib);
      snprintf(num, sizeof num, "%lluMiB/%s/add_if_absent", mib, lay);
      snprintf(den, sizeof den, "%lluMiB/%s/add", mib, lay);
      bk_fx_ratio(label, num, den, 1.2);
    }
  }
}

/* Size `s`: its baseline and its filters, sized m = size * 8 bits, k = 7,
 * filled with their p-capacity. */
static void set_up_size(int s) {
  uint64_t bytes = sizes_mib[s] * BK_FX_MIB;
  baseline_case *bc = &baselines[s];
  bc->n_bits = bytes * 8;
  bc->n_lines = bc->n_bits / BITS_PER_LINE;
  for (int d = 0; d < N_MODES; d++) {
    bc->rng[d] = bk_fx_stream(1000 * (uint64_t)(d + 1) + (uint64_t)s);
    baseline_args[s][d] = (baseline_arg){bc, d};
  }
  for (int l = 0; l < N_LAYOUTS; l++) {
    filter_case *fc = &filters[s][l];
    bk_fx_bloom *b = &fc->bloom;
    snprintf(b->label, sizeof b->label, "%s %lluMiB", layout_name(layouts[l]),
             (unsigned long long)sizes_mib[s]);
    b->layout = layouts[l];
    b->m_bits = bytes * 8;
    b->k = layouts[l] == BK_BLOOM_SPLIT_BLOCK ? 8 : DESIGN_K;
    b->fpp = TARGET_FPP;
    if (bk_params_p_capacity(b->m_bits, TARGET_FPP, &b->n_keys) != BK_OK ||
        b->n_keys == 0) {
      bk_fx_fail(&fc->setup, NULL, "bk_params_p_capacity failed");
      b->n_keys = 1;
    }
    for (int o = 0; o < OP_COUNT; o++) {
      fc->rng[o] = bk_fx_stream((uint64_t)(s * 100 + l * 10 + o));
      args[s][l][o] = (bench_arg){fc, (op)o};
    }
  }
}

/* ---- the scale run (--bk_scale[=L], issue #8) ------------------------------
 * 2^L distinct keys (default 2^32) into one filter of each layout sized for
 * them at 1 % by (capacity, fpp), as a user would (about 5.4 GiB each at
 * 2^32): the build time (two threads, each adding by bk_bloom_add_many,
 * bk_fx_fill_many), then independent
 * single-key lookups of present and absent keys; the absent lookups' hit
 * rate is the measured false positive rate, reported beside the layout's
 * formula (fpr_formula) at the filter's m. 64-bit indexing must hold where
 * 32-bit filters stop (libbloom's int entries, ~537 M at 1 %). One filter
 * is alive at a time: filling a layout's frees the one before. Not in the
 * default run. */
typedef struct scale_case {
  bk_fx_bloom bloom;
  bk_fx_setup setup;
  double build_s, formula;
  uint64_t rng[2];
  bool present;
} scale_case;

static scale_case scale_cases[N_LAYOUTS][2]; /* [layout][present, absent] */

static bool scale_ready(scale_case *sc, bk_bench_state *st) {
  bk_fx_bloom *b = &sc->bloom;
  if (b->filled) return true;
  /* One scale filter alive at a time: the previous layout's is done (the
   * shim may call a body several times, so a body never frees its own). */
  for (int l = 0; l < N_LAYOUTS; l++)
    if (&scale_cases[l][0] != sc) bk_fx_bloom_release(&scale_cases[l][0].bloom);
  double t0 = bk_fx_now();
  if (!bk_fx_bloom_filled(b, &sc->setup, st)) return false;
  sc->build_s = bk_fx_now() - t0;
  return true;
}

static void bench_scale(bk_bench_state *st, void *p) {
  scale_case *sc = p;
  /* Both ops of a layout share the present case's filter. */
  scale_case *owner = sc->present ? sc : sc - 1;
  if (!scale_ready(owner, st)) return;
  bk_fx_bloom *b = &owner->bloom;
  bk_fx_tally t =
      bk_fx_lookups(st, bk_fx_bloom_contains, b->filled, &sc->rng[0],
                    sc->present ? b->n_keys : BK_FX_ABSENT, false);
  bk_fx_report(st, t, "hit_rate", sc->present, "bk_bloom_contains failed");
  bk_bench_counter(st, "bits_per_key", (double)b->m_bits / (double)b->n_keys);
  bk_bench_counter(st, "build_s", owner->build_s);
  bk_bench_counter(st, "fpr_formula", owner->formula);
}

static void register_scale(unsigned log2_keys) {
  char name[96], group[48];
  uint64_t n = (uint64_t)1 << log2_keys;
  snprintf(group, sizeof group, "scale 2^%u", log2_keys);
  bk_bench_opts opts = {.group = group, .min_time = MIN_TIME};
  for (int l = 0; l < N_LAYOUTS; l++) {
    scale_case *sc = scale_cases[l];
    bk_fx_bloom *b = &sc[0].bloom;
    snprintf(b->label, sizeof b->label, "%s scale 2^%u",
             layout_name(layouts[l]), log2_keys);
    /* The size (capacity, fpp) gives this layout, from a throwaway create
     * of the same config (no bits are touched: storage is lazily zeroed). */
    bk_bloom_config cfg = {
        .capacity = n, .fpp = TARGET_FPP, .layout = layouts[l]};
    bk_bloom *probe = NULL;
    bk_bloom_info info = {0};
    if (bk_bloom_create(&probe, &cfg) != BK_OK ||
        bk_bloom_info_get(probe, &info) != BK_OK)
      bk_fx_fail(&sc[0].setup, NULL, "bk_bloom_create for 2^%u keys failed",
                 log2_keys);
    bk_bloom_destroy(probe);
    b->layout = layouts[l];
    b->m_bits = info.m_bits ? info.m_bits : 512;
    b->k = info.k ? info.k : 1;
    b->fpp = TARGET_FPP;
    b->n_keys = n;
    double f = 0;
    if (layouts[l] == BK_BLOOM_SPLIT_BLOCK)
      (void)bk_params_fpp_split_block(b->m_bits, n, &f);
    else if (layouts[l] == BK_BLOOM_BLOCKED)
      (void)bk_params_fpp_blocked(b->m_bits, b->k, n, &f);
    else
      (void)bk_params_fpp(b->m_bits, b->k, n, &f);
    sc[0].formula = f;
    for (int o = 0; o < 2; o++) {
      sc[o].present = o == 0;
      sc[o].rng[0] = bk_fx_stream(9000 + (uint64_t)(l * 2 + o));
      snprintf(name, sizeof name, "scale/2^%u/%s/%s", log2_keys,
               layout_name(layouts[l]),
               o == 0 ? "contains_present" : "contains_absent");
      bk_bench_register(name, bench_scale, &sc[o], &opts);
    }
  }
}

void bk_bench_register_bloom(void) {
  int n_sizes = bk_bench_quick() ? 1 : N_SIZES;
  char name[96], group[48];
  /* Registration order is run order: each size's independent group, then
   * its dependent group, so a size's filters are filled once and used. */
  for (int s = 0; s < n_sizes; s++) {
    set_up_size(s);
    unsigned long long mib = (unsigned long long)sizes_mib[s];
    for (int d = 0; d < N_MODES; d++) {
      const struct mode *m = &modes[d];
      /* The shim copies names and groups. */
      snprintf(group, sizeof group, "%lluMiB%s", mib, m->group);
      bk_bench_opts opts = {.group = group, .min_time = MIN_TIME};
      bk_bench_opts base_opts = {
          .group = group, .baseline = true, .min_time = MIN_TIME};
      snprintf(name, sizeof name, "%lluMiB%s/baseline/random_line", mib,
               m->path);
      bk_bench_register(name, bench_baseline, &baseline_args[s][d], &base_opts);
      for (int l = 0; l < N_LAYOUTS; l++) {
        for (size_t i = 0; i < m->n_ops; i++) {
          op o = m->ops[i];
          snprintf(name, sizeof name, "%lluMiB%s/%s/%s", mib, m->path,
                   layout_name(layouts[l]), ops[o].name);
          bk_bench_register(name, bench_filter, &args[s][l][o], &opts);
        }
      }
    }
  }
  register_targets();
  if (bk_bench_scale()) register_scale(bk_bench_scale());
}

void bk_bench_release_bloom(void) {
  for (int s = 0; s < N_SIZES; s++) {
    bk_bits_destroy(baselines[s].bits);
    baselines[s].bits = NULL;
    for (int l = 0; l < N_LAYOUTS; l++)
      bk_fx_bloom_release(&filters[s][l].bloom);
  }
  for (int l = 0; l < N_LAYOUTS; l++)
    bk_fx_bloom_release(&scale_cases[l][0].bloom);
}
