/* SPDX-License-Identifier: MIT */
/*
 * The fuzz targets' seed corpora, generated: valid blobs of several shapes
 * per serialized type (empty and full, fixed and adaptive, each layout,
 * width, hash and strategy), written as tests/fuzz/corpus/<kind>/<shape>.bin.
 *
 *   bk_fuzz_seeds --write DIR   (re)write DIR/<kind>/<shape>.bin
 *   bk_fuzz_seeds --check DIR   exit 1 unless every file is byte-identical
 *
 * ctest runs --check against the committed corpus, so the corpus doubles as
 * golden blobs of every type: a change of any serialized form (or of the
 * hashing that places bits) fails it until the format's version history in
 * docs/design/format.md and the corpus (scripts/fuzz.sh --regen-seeds) are
 * updated together. Everything here is deterministic: fixed seeds, fixed
 * clocks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bloomkit/apbf.h"
#include "bloomkit/bits.h"
#include "bloomkit/bloom.h"
#include "bloomkit/bloomclock.h"
#include "bloomkit/cbf.h"
#include "bloomkit/counters.h"
#include "bloomkit/fbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/kbf.h"
#include "bloomkit/rbf.h"
#include "codecs.h"
#include "fbf_helpers.h"

static const char *g_dir;
static int g_check, g_failed, g_count;

static void die(const char *what, bk_status s) {
  fprintf(stderr, "bk_fuzz_seeds: %s: %s\n", what, bk_status_name(s));
  exit(2);
}
#define OK(call)                     \
  do {                               \
    bk_status s_ = (call);           \
    if (s_ != BK_OK) die(#call, s_); \
  } while (0)

/* Compare with or write DIR/kind/shape.bin. */
static void emit(const bk_test_codec *c, const void *obj, const char *kind,
                 const char *shape) {
  size_t len;
  bk_status s;
  unsigned char *blob = bk_test_codec_serialize(c, obj, &len, &s);
  if (!blob) die(shape, s);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_dir, kind);
  if (!g_check && mkdir(path, 0755) != 0 && errno != EEXIST) {
    perror(path);
    exit(2);
  }
  snprintf(path, sizeof path, "%s/%s/%s.bin", g_dir, kind, shape);
  g_count++;
  if (g_check) {
    FILE *fp = fopen(path, "rb");
    unsigned char *have = malloc(len + 1);
    size_t got = fp && have ? fread(have, 1, len + 1, fp) : 0;
    if (!fp || got != len || memcmp(have, blob, len) != 0) {
      fprintf(stderr,
              "bk_fuzz_seeds: %s differs from what %s serializes to now "
              "(%zu bytes, file %zu)\n",
              path, c->name, len, got);
      g_failed++;
    }
    if (fp) fclose(fp);
    free(have);
  } else {
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(blob, 1, len, fp) != len || fclose(fp) != 0) {
      perror(path);
      exit(2);
    }
  }
  free(blob);
}

static void key_of(uint64_t i, unsigned char out[8]) {
  for (int b = 0; b < 8; b++) out[b] = (unsigned char)(i >> (8 * b));
}

static void seeds_bits(void) {
  const uint64_t sizes[3] = {64, 100, 4096};
  const char *names[3] = {"empty-64", "ones-100", "sparse-4096"};
  for (int i = 0; i < 3; i++) {
    bk_bits *b;
    OK(bk_bits_create(&b, sizes[i], NULL));
    if (i == 1)
      for (uint64_t j = 0; j < sizes[i]; j++) OK(bk_bits_set(b, j));
    if (i == 2)
      for (uint64_t j = 0; j < sizes[i]; j += 97) OK(bk_bits_set(b, j));
    emit(&bk_test_codec_bits, b, "bits", names[i]);
    bk_bits_destroy(b);
  }
}

static void seeds_counters(void) {
  const unsigned widths[4] = {4, 8, 16, 32};
  for (int i = 0; i < 4; i++) {
    bk_counters *c;
    char name[32];
    OK(bk_counters_create(&c, 37, widths[i], NULL));
    if (i == 0) {
      snprintf(name, sizeof name, "w%u-empty", widths[i]);
      emit(&bk_test_codec_counters, c, "counters", name);
    }
    uint32_t max = bk_counters_max(c);
    for (uint64_t j = 0; j < 37; j++)
      OK(bk_counters_set(c, j, j % 5 == 0 ? max : (uint32_t)(j * 7) & max));
    snprintf(name, sizeof name, "w%u-mixed", widths[i]);
    emit(&bk_test_codec_counters, c, "counters", name);
    bk_counters_destroy(c);
  }
}

static void seeds_bloom(void) {
  struct {
    const char *name;
    bk_bloom_config cfg;
    unsigned keys;
  } shapes[] = {
      {"standard-empty", {.m_bits = 512, .k = 3}, 0},
      {"standard-full", {.m_bits = 256, .k = 4}, 1000},
      {"standard-half", {.m_bits = 1000, .k = 5}, 70},
      {"blocked-half",
       {.m_bits = 2048, .k = 6, .layout = BK_BLOOM_BLOCKED},
       120},
      {"blocked-empty", {.m_bits = 512, .k = 8, .layout = BK_BLOOM_BLOCKED}, 0},
      {"murmur-standard",
       {.m_bits = 640, .k = 2, .hash_alg = BK_HASH_MURMUR3, .seed = 42},
       40},
      {"split-half",
       {.m_bits = 1024,
        .layout = BK_BLOOM_SPLIT_BLOCK,
        .hash_alg = BK_HASH_XXH64},
       24},
      {"split-xxh3-empty", {.m_bits = 768, .layout = BK_BLOOM_SPLIT_BLOCK}, 0},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_bloom *b;
    OK(bk_bloom_create(&b, &shapes[i].cfg));
    for (unsigned j = 0; j < shapes[i].keys; j++) {
      unsigned char key[8];
      key_of(j, key);
      OK(bk_bloom_add(b, key, sizeof key));
    }
    emit(&bk_test_codec_bloom, b, "bloom", shapes[i].name);
    bk_bloom_destroy(b);
  }
}

/* An FBF driven for `periods` refresh periods with `per_period` new keys
 * in each, then saved. */
static void fbf_shape(const char *name, const bk_fbf_config *cfg,
                      unsigned periods, unsigned per_period) {
  bk_fbf *f;
  OK(bk_fbf_create(&f, cfg));
  uint64_t id = 0;
  for (unsigned p = 0; p < periods; p++) {
    OK(bk_fbf_advance(f, cfg->start_time + p * cfg->refresh_period + 1));
    for (unsigned j = 0; j < per_period; j++, id++) {
      unsigned char key[8];
      key_of(id, key);
      OK(bk_fbf_add(f, key, sizeof key));
    }
  }
  emit(&bk_test_codec_fbf, f, "fbf", name);
  bk_fbf_destroy(f);
}

static void seeds_fbf(void) {
  bk_fbf_config fixed = {
      .m_bits = 128, .k = 3, .n_past = 1, .refresh_period = 10};
  fbf_shape("fixed-empty", &fixed, 0, 0);
  fbf_shape("fixed-rotated", &fixed, 5, 6);
  bk_fbf_config full = {.m_bits = 64,
                        .k = 4,
                        .n_past = 2,
                        .refresh_period = 100,
                        .start_time = 1000,
                        .check = BK_FBF_CHECK_SIMPLE};
  fbf_shape("fixed-full-simple", &full, 4, 200);
  bk_fbf_config spare = {.m_bits = 96,
                         .k = 2,
                         .n_past = 1,
                         .refresh_period = 50,
                         .max_filters = 6,
                         .min_window = 70,
                         .hash_alg = BK_HASH_MURMUR3,
                         .seed = 7};
  fbf_shape("fixed-spare-slots", &spare, 3, 4);
  /* The adaptive FBF the tests use (tests/fbf_helpers.c). */
  bk_fbf_config adaptive = fbf_small_adaptive_config();
  fbf_shape("adaptive-empty", &adaptive, 0, 0);
  fbf_shape("adaptive-grown", &adaptive, 6, 40); /* fpp over target */
  fbf_shape("adaptive-idle", &adaptive, 12, 0);  /* shrinks, t grows */
  adaptive.max_filters = 64;
  adaptive.m_bits = 64;
  fbf_shape("adaptive-w64-full", &adaptive, 8, 100);
}

static void seeds_rbf(void) {
  const unsigned keys[3] = {0, 20, 1000};
  const char *names[3] = {"empty", "half", "recycled"};
  for (int i = 0; i < 3; i++) {
    bk_rbf_config cfg = {.m_bits = 512, .k = 3, .target_fpp = 0.05};
    bk_rbf *r;
    OK(bk_rbf_create(&r, &cfg));
    for (unsigned j = 0; j < keys[i]; j++) {
      unsigned char key[8];
      key_of(j, key);
      OK(bk_rbf_add(r, key, sizeof key));
    }
    emit(&bk_test_codec_rbf, r, "rbf", names[i]);
    bk_rbf_destroy(r);
  }
}

static void seeds_apbf(void) {
  const struct {
    const char *name;
    bk_apbf_config cfg;
    unsigned keys, step; /* inserts, clock step per insert (time-based) */
  } shapes[] = {
      {"count-empty", {.k = 4, .l = 3, .generation = 30, .m_bits = 200}, 0, 0},
      {"count-shifted",
       {.k = 4, .l = 3, .generation = 30, .m_bits = 200, .seed = 7},
       100,
       0},
      {"count-full-gen", {.k = 2, .l = 5, .generation = 8}, 16, 0},
      {"time-murmur",
       {.k = 3,
        .l = 4,
        .capacity = 60,
        .window = 100,
        .start_time = 1000,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 3},
       90,
       2},
      {"time-jumped", {.k = 5, .l = 2, .generation = 20, .window = 10}, 40, 7},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_apbf *f;
    OK(bk_apbf_create(&f, &shapes[i].cfg));
    for (unsigned j = 0; j < shapes[i].keys; j++) {
      unsigned char key[8];
      key_of(j, key);
      if (shapes[i].step)
        OK(bk_apbf_advance(
            f, shapes[i].cfg.start_time + (uint64_t)j * shapes[i].step));
      OK(bk_apbf_add(f, key, sizeof key));
    }
    emit(&bk_test_codec_apbf, f, "apbf", shapes[i].name);
    bk_apbf_destroy(f);
  }
}

static void seeds_idem(void) {
  /* Version 2. (The version 1 seeds of the first five shapes are golden
   * blobs in tests/data/idem_v1_*.bin.) */
  const struct {
    const char *name;
    bk_idem_strategy strategy;
    unsigned ops, window;
  } shapes[] = {
      {"fbf-empty", BK_IDEM_FBF, 0, 0},
      {"fbf-keys", BK_IDEM_FBF, 40, 0},
      {"none-keys", BK_IDEM_NONE, 30, 0},
      {"rbf-keys", BK_IDEM_RBF, 30, 0},
      {"adaptive-keys", BK_IDEM_FBF_ADAPTIVE, 60, 0},
      {"hybrid-empty", BK_IDEM_HYBRID, 0, 0},
      {"hybrid-keys", BK_IDEM_HYBRID, 60, 0},
      {"hybrid-slid", BK_IDEM_HYBRID, 300, 64}, /* its FBF made */
      {"window-keys", BK_IDEM_WINDOW, 60, 64},
      {"apbf-keys", BK_IDEM_APBF, 60, 0},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_idem_config cfg = {.strategy = shapes[i].strategy,
                          .retry_timeout = 200,
                          .refresh_period = 100,
                          .window = shapes[i].window,
                          .m_bits = 256,
                          .k = 3,
                          .seed = 9};
    if (shapes[i].strategy == BK_IDEM_APBF) { /* sized by ops and fpp */
      cfg.m_bits = 0;
      cfg.k = 0;
      cfg.ops_per_period = 10;
    }
    bk_idem *t;
    OK(bk_idem_create(&t, &cfg));
    for (unsigned j = 0; j < shapes[i].ops; j++) {
      char key[16];
      int n = snprintf(key, sizeof key, "key%u", j % 7);
      bk_idem_op_id id = {0xC1u + j % 3, j};
      OK(bk_idem_advance(t, 10 * (uint64_t)j));
      OK(bk_idem_add(t, key, (size_t)n, id, (int64_t)j - 20, NULL, NULL));
      if (j % 4 == 0) /* a retry */
        OK(bk_idem_add(t, key, (size_t)n, id, (int64_t)j - 20, NULL, NULL));
    }
    emit(&bk_test_codec_idem, t, "idem", shapes[i].name);
    bk_idem_destroy(t);
  }
}

static void seeds_cbf(void) {
  struct {
    const char *name;
    bk_cbf_config cfg;
    unsigned keys, repeats;
  } shapes[] = {
      {"w4-standard-empty", {.m_counters = 200, .k = 3}, 0, 0},
      {"w4-standard-saturated", {.m_counters = 128, .k = 4}, 60, 20},
      {"w4-blocked-half",
       {.m_counters = 256, .k = 5, .layout = BK_BLOOM_BLOCKED},
       30,
       1},
      {"w8-standard", {.m_counters = 100, .k = 2, .counter_bits = 8}, 40, 3},
      {"w16-blocked",
       {.m_counters = 64,
        .k = 3,
        .counter_bits = 16,
        .layout = BK_BLOOM_BLOCKED},
       20,
       2},
      {"w32-murmur",
       {.m_counters = 40,
        .k = 2,
        .counter_bits = 32,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 5},
       15,
       4},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_cbf *f;
    OK(bk_cbf_create(&f, &shapes[i].cfg));
    for (unsigned r = 0; r < shapes[i].repeats; r++)
      for (unsigned j = 0; j < shapes[i].keys; j++) {
        unsigned char key[8];
        key_of(j, key);
        OK(bk_cbf_add(f, key, sizeof key));
      }
    emit(&bk_test_codec_cbf, f, "cbf", shapes[i].name);
    bk_cbf_destroy(f);
  }
}

/* bk_scbf: one filter empty, several grown (with a remove and a hot key),
 * 8-bit blocked, and a murmur one. Small capacities keep the blobs small. */
static void seeds_scbf(void) {
  struct {
    const char *name;
    bk_scbf_config cfg;
    unsigned keys;
  } shapes[] = {
      {"empty", {.capacity = 16, .fpp = 0.1}, 0},
      {"grown-4bit", {.capacity = 8, .fpp = 0.2}, 40},
      {"blocked-8bit",
       {.capacity = 8,
        .fpp = 0.2,
        .counter_bits = 8,
        .layout = BK_BLOOM_BLOCKED},
       30},
      {"murmur-tight",
       {.capacity = 4,
        .fpp = 0.3,
        .growth = 1.5,
        .tightening = 0.8,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 9,
        .max_filters = 5},
       20},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_scbf *s;
    OK(bk_scbf_create(&s, &shapes[i].cfg));
    for (unsigned j = 0; j < shapes[i].keys; j++) {
      unsigned char key[8];
      key_of(j, key);
      OK(bk_scbf_add(s, key, sizeof key, 2 * j + 1));
    }
    if (shapes[i].keys) {
      unsigned char key[8];
      key_of(3, key);
      OK(bk_scbf_remove(s, key, sizeof key, 7));
    }
    emit(&bk_test_codec_scbf, s, "scbf", shapes[i].name);
    bk_scbf_destroy(s);
  }
}

/* bk_bloomclock: fresh, ticked and merged at each width, Murmur3; and
 * bk_vclock fresh and after an exchange. */
static void seeds_bloomclock(void) {
  struct {
    const char *name;
    bk_bloomclock_config cfg;
    unsigned ticks;
  } shapes[] = {
      {"w8-fresh", {.m = 64, .k = 3}, 0},
      {"w8-merged", {.m = 100, .k = 4, .process_id = 3}, 40},
      {"w16-merged", {.m = 33, .k = 2, .counter_bits = 16, .seed = 7}, 20},
      {"w32-murmur",
       {.m = 16,
        .k = 5,
        .counter_bits = 32,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 11},
       9},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_bloomclock *c, *o;
    bk_bloomclock_config oc = shapes[i].cfg;
    oc.process_id++;
    OK(bk_bloomclock_create(&c, &shapes[i].cfg));
    OK(bk_bloomclock_create(&o, &oc));
    for (unsigned t = 0; t < shapes[i].ticks; t++) {
      OK(bk_bloomclock_tick(c));
      OK(bk_bloomclock_tick(o));
      OK(bk_bloomclock_tick(o));
    }
    if (shapes[i].ticks) OK(bk_bloomclock_merge(c, o));
    emit(&bk_test_codec_bloomclock, c, "bloomclock", shapes[i].name);
    bk_bloomclock_destroy(c);
    bk_bloomclock_destroy(o);
  }
  bk_vclock *a, *b;
  OK(bk_vclock_create(&a,
                      &(bk_vclock_config){.processes = 7, .process_id = 2}));
  OK(bk_vclock_create(&b,
                      &(bk_vclock_config){.processes = 7, .process_id = 5}));
  emit(&bk_test_codec_vclock, a, "vclock", "fresh");
  for (int t = 0; t < 9; t++) OK(bk_vclock_tick(a));
  OK(bk_vclock_tick(b));
  OK(bk_vclock_merge(b, a));
  emit(&bk_test_codec_vclock, b, "vclock", "exchanged");
  bk_vclock_destroy(a);
  bk_vclock_destroy(b);
}

/* bk_kbf: empty, filled 32- and 64-bit, a compressed one, murmur, and
 * one crowded past saturation. Small m and few values keep them small. */
static void seeds_kbf(void) {
  struct {
    const char *name;
    bk_kbf_config cfg;
    unsigned keys, values;
    bool compress;
  } shapes[] = {
      {"empty", {.m_cells = 32, .k = 3, .max_values = 7}, 0, 0, false},
      {"c32-filled", {.m_cells = 64, .k = 3, .max_values = 15}, 14, 6, false},
      {"c64-filled",
       {.m_cells = 40, .k = 2, .cell_bits = 64, .max_values = 31},
       12,
       9,
       false},
      {"compressed", {.m_cells = 96, .k = 4, .max_values = 7}, 16, 4, true},
      {"murmur",
       {.capacity = 10,
        .fpp = 0.05,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 3,
        .max_values = 7},
       9,
       3,
       false},
      {"saturated", {.m_cells = 8, .k = 2, .max_values = 3}, 40, 3, false},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bk_kbf *f;
    OK(bk_kbf_create(&f, &shapes[i].cfg));
    for (unsigned j = 0; j < shapes[i].keys; j++) {
      unsigned char key[8],
          value[2] = {'v', (unsigned char)('a' + j % shapes[i].values)};
      key_of(j, key);
      OK(bk_kbf_insert(f, key, sizeof key, value, sizeof value));
    }
    if (shapes[i].compress) OK(bk_kbf_compress(f));
    emit(&bk_test_codec_kbf, f, "kbf", shapes[i].name);
    bk_kbf_destroy(f);
  }
}

int main(int argc, char **argv) {
  if (argc != 3 ||
      (strcmp(argv[1], "--write") != 0 && strcmp(argv[1], "--check") != 0)) {
    fprintf(stderr, "usage: bk_fuzz_seeds --write|--check DIR\n");
    return 2;
  }
  g_check = strcmp(argv[1], "--check") == 0;
  g_dir = argv[2];
  seeds_bits();
  seeds_counters();
  seeds_bloom();
  seeds_fbf();
  seeds_rbf();
  seeds_apbf();
  seeds_idem();
  seeds_cbf();
  seeds_scbf();
  seeds_bloomclock();
  seeds_kbf();
  if (g_failed) {
    fprintf(stderr,
            "bk_fuzz_seeds: %d of %d seeds differ. If the format changed on "
            "purpose, bump its version (docs/design/format.md, version "
            "history) and run scripts/fuzz.sh --regen-seeds.\n",
            g_failed, g_count);
    return 1;
  }
  printf("bk_fuzz_seeds: %d seeds %s\n", g_count,
         g_check ? "match" : "written");
  return 0;
}
