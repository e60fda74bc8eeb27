/* SPDX-License-Identifier: MIT */
/*
 * bk_scbf: the scalable counting filter, in memory and in a file. Id
 * ranges and growth, seqnums, the codec harness, OOM, the file's hostile
 * headers, dablooms' documented procedure and scaling accuracy test on a
 * generated word list, crash safety (a child SIGKILLed while it adds), one
 * writer with readers, and a file beyond 4 GiB.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bloomkit/cbf.h"
#include "bloomkit/params.h"
#include "cbf/scbf_internal.h"
#include "core/internal.h"
#include "testutil.h"

static char g_dir[256];

static void path_of(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

BK_TEST_DEFINE_MAKE(scbf, static)
BK_TEST_DEFINE_INFO_OF(scbf, static)

static bool has(const bk_scbf *s, const void *key, size_t len) {
  bool found = false;
  assert_bk_ok(bk_scbf_contains(s, key, len, &found));
  return found;
}

/* Word i of the generated list: lower-case letters of a bijection of i
 * (multiplication by an odd constant mod 2^40), so words are distinct. */
static size_t word(uint64_t i, char *out) {
  uint64_t v = (i * 0x9E3779B97Full) & ((1ull << 40) - 1);
  size_t n = 0;
  do {
    out[n++] = (char)('a' + v % 26);
    v /= 26;
  } while (v);
  out[n] = 0;
  return n;
}

static void test_config_and_arguments(void **state) {
  (void)state;
  bk_scbf *s = NULL;
  const bk_scbf_config bad[] = {
      {.capacity = 0},
      {.capacity = 10, .fpp = 0.6},
      {.capacity = 10, .fpp = -1},
      {.capacity = 10, .fpp = 1e-13},
      {.capacity = 10, .growth = 0.5},
      {.capacity = 10, .growth = 1001},
      {.capacity = 10, .tightening = 1.0},
      {.capacity = 10, .tightening = -0.5},
      {.capacity = 10, .max_filters = BK_SCBF_FILTERS_MAX + 1},
      {.capacity = 10, .counter_bits = 5},
      {.capacity = 10, .layout = (bk_bloom_layout)7},
      {.capacity = 10, .hash_alg = BK_HASH_MURMUR3, .seed = 1ull << 40},
      {.capacity = 10, .hash_alg = (bk_hash_alg)9},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_bk_status(bk_scbf_create(&s, &bad[i]), BK_EINVAL);
    assert_null(s);
  }
  assert_bk_status(bk_scbf_create(NULL, &bad[1]), BK_EINVAL);
  assert_bk_status(bk_scbf_create(&s, NULL), BK_EINVAL);
  s = scbf_make(&(bk_scbf_config){.capacity = 1000});
  bk_scbf_info info = scbf_info_of(s);
  assert_int_equal(info.n_filters, 1);
  assert_int_equal(info.max_filters, 32);
  assert_int_equal(info.counter_bits, 4);
  assert_true(fabs(info.fpp - 0.01) < 1e-15);
  assert_true(info.growth == 2.0 && info.tightening == 0.5);
  assert_int_equal(info.seqnum, 1);
  assert_int_equal(info.mem_seqnum, 1);
  assert_int_equal(info.disk_seqnum, 0);
  assert_false(info.file_backed);
  bk_scbf_filter_info fi;
  assert_bk_ok(bk_scbf_filter_info_get(s, 0, &fi));
  /* Filter 0 gets fpp (1 - r) = half the budget. */
  assert_true(fabs(fi.fpp - 0.005) < 1e-12);
  assert_false(fi.has_ids);
  bool b;
  bk_hash h;
  uint64_t u;
  assert_bk_status(bk_scbf_add(NULL, "a", 1, 1), BK_EINVAL);
  assert_bk_status(bk_scbf_add(s, NULL, 1, 1), BK_EINVAL);
  assert_bk_status(bk_scbf_add(s, "a", 1, UINT64_MAX), BK_EINVAL);
  assert_bk_status(bk_scbf_remove(NULL, "a", 1, 1), BK_EINVAL);
  assert_bk_status(bk_scbf_remove(s, NULL, 1, 1), BK_EINVAL);
  assert_bk_status(bk_scbf_contains(s, NULL, 1, &b), BK_EINVAL);
  assert_bk_status(bk_scbf_contains(s, "a", 1, NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_contains(NULL, "a", 1, &b), BK_EINVAL);
  assert_bk_status(bk_scbf_hash(s, NULL, 3, &h), BK_EINVAL);
  assert_bk_status(bk_scbf_hash(s, "a", 1, NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_mem_seqnum(s, NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_disk_seqnum(NULL, &u), BK_EINVAL);
  assert_bk_status(bk_scbf_flush(NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_info_get(s, NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_filter_info_get(s, 1, &fi), BK_ERANGE);
  assert_bk_status(bk_scbf_open(NULL, "x", NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_open(&s, NULL, NULL), BK_EINVAL);
  /* Nothing was added: every remove is refused, nothing changes. */
  assert_bk_status(bk_scbf_remove(s, "a", 1, 0), BK_ENOTFOUND);
  assert_bk_ok(bk_scbf_add(s, NULL, 0, 0)); /* the empty key */
  assert_true(has(s, NULL, 0));
  assert_bk_ok(bk_scbf_remove(s, NULL, 0, 0));
  assert_false(has(s, NULL, 0));
  bk_test_codec_arguments(&bk_test_codec_scbf, s);
  bk_scbf_destroy(s);
  bk_scbf_destroy(NULL);
}

/* Growth, id ranges, removes by id, EFULL. */
static void test_ranges_and_growth(void **state) {
  (void)state;
  bk_scbf *s = scbf_make(&(bk_scbf_config){.capacity = 100, .fpp = 0.01});
  for (uint64_t i = 1; i <= 1000; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bk_scbf_info info = scbf_info_of(s);
  /* capacities 100, 200, 400, 800: the 701st key opens filter 3 */
  assert_int_equal(info.n_filters, 4);
  assert_int_equal(info.count, 1000);
  assert_int_equal(info.seqnum, 1001);
  uint64_t next = 0, caps = 100;
  for (unsigned f = 0; f < 4; f++, caps *= 2) {
    bk_scbf_filter_info fi;
    assert_bk_ok(bk_scbf_filter_info_get(s, f, &fi));
    assert_int_equal(fi.first_id, next);
    assert_true(fi.has_ids);
    assert_int_equal(fi.capacity, caps);
    if (f < 3) assert_int_equal(fi.count, caps);
    next = fi.last_id + 1;
    /* tightening 0.5: each filter half the error of the one before */
    assert_true(fabs(fi.fpp - 0.005 / (double)(1u << f)) < 1e-12);
  }
  assert_int_equal(next, 1001);
  for (uint64_t i = 1; i <= 1000; i++) assert_true(has(s, &i, 8));
  /* An old id goes to its old filter. */
  assert_bk_ok(bk_scbf_add(s, "late", 4, 50));
  bk_scbf_filter_info f0;
  assert_bk_ok(bk_scbf_filter_info_get(s, 0, &f0));
  assert_int_equal(f0.count, 101);
  /* A remove with an id of another filter does not touch it. */
  assert_bk_status(bk_scbf_remove(s, "late", 4, 900), BK_ENOTFOUND);
  assert_bk_status(bk_scbf_remove(s, "late", 4, 5000), BK_ENOTFOUND);
  assert_bk_ok(bk_scbf_remove(s, "late", 4, 50));
  info = scbf_info_of(s);
  assert_int_equal(info.seqnum, 1003);
  for (uint64_t i = 1; i <= 1000; i += 2)
    assert_bk_ok(bk_scbf_remove(s, &i, 8, i));
  for (uint64_t i = 2; i <= 1000; i += 2) assert_true(has(s, &i, 8));
  unsigned fp = 0;
  for (uint64_t i = 1; i <= 1000; i += 2) fp += has(s, &i, 8);
  assert_true(fp < 25); /* 500 probes at < 1 %: 5 expected */
  bk_scbf_destroy(s);

  /* max_filters: the add that needs a third filter is refused, unchanged. */
  s = scbf_make(&(bk_scbf_config){.capacity = 10, .max_filters = 2});
  uint64_t i = 1;
  for (; i <= 30; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  info = scbf_info_of(s);
  assert_int_equal(info.n_filters, 2);
  assert_bk_status(bk_scbf_add(s, &i, 8, i), BK_EFULL);
  bk_scbf_info after = scbf_info_of(s);
  assert_int_equal(after.seqnum, info.seqnum);
  assert_int_equal(after.count, 30);
  /* ...but an id inside the newest range still goes there */
  assert_bk_ok(bk_scbf_add(s, &i, 8, 30));
  bk_scbf_destroy(s);
}

/* The compound error of a filled structure stays under its target. */
static void test_compound_fpp(void **state) {
  (void)state;
  const double target = 0.02;
  bk_scbf *s = scbf_make(&(bk_scbf_config){.capacity = 2000, .fpp = target});
  uint64_t n = 2000 + 4000 + 8000 + 16000; /* four filters exactly full */
  for (uint64_t i = 0; i < n; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bk_scbf_info info = scbf_info_of(s);
  assert_int_equal(info.n_filters, 4);
  uint64_t fp = 0, probes = 200000;
  for (uint64_t i = 0; i < probes; i++) {
    uint64_t k = i | (1ull << 62);
    fp += has(s, &k, 8);
  }
  double rate = (double)fp / (double)probes;
  /* Each filter at capacity sits at its share, so the sum is
   * target (1 - 0.5^4) = 0.01875; 200k probes give a sd of ~3 % of it. */
  print_message("scbf compound: 4 full filters, FPR %.5f (target %.3f)\n", rate,
                target);
  assert_true(rate < target);
  assert_true(rate > 0.5 * target * (1 - 1.0 / 16));
  assert_true(info.estimated_fpp < target * 1.1);
  bk_scbf_destroy(s);
}

static void test_seqnums_in_memory(void **state) {
  (void)state;
  bk_scbf *s = scbf_make(&(bk_scbf_config){.capacity = 100});
  uint64_t mem, disk;
  assert_bk_ok(bk_scbf_add(s, "a", 1, 1));
  assert_bk_ok(bk_scbf_mem_seqnum(s, &mem));
  assert_int_equal(mem, 2);
  assert_bk_status(bk_scbf_remove(s, "b", 1, 1), BK_ENOTFOUND);
  assert_bk_ok(bk_scbf_mem_seqnum(s, &mem));
  assert_int_equal(mem, 2);
  assert_bk_ok(bk_scbf_flush(s));
  assert_bk_ok(bk_scbf_disk_seqnum(s, &disk));
  assert_int_equal(disk, 0);
  bk_scbf_destroy(s);
}

static bk_scbf *small_populated(unsigned bits, bk_bloom_layout layout) {
  bk_scbf *s = scbf_make(&(bk_scbf_config){.capacity = 8,
                                           .fpp = 0.2,
                                           .counter_bits = bits,
                                           .layout = layout,
                                           .hash_alg = BK_HASH_MURMUR3,
                                           .seed = 5});
  for (uint64_t i = 1; i <= 20; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i * 3));
  for (int i = 0; i < 20; i++) assert_bk_ok(bk_scbf_add(s, "hot", 3, 60));
  assert_bk_ok(bk_scbf_remove(s, &(uint64_t){2}, 8, 6));
  return s;
}

static void test_codec(void **state) {
  (void)state;
  uint64_t seed = bk_test_seed(0x5CBF);
  bk_scbf *s = small_populated(4, BK_BLOOM_STANDARD);
  assert_int_equal(scbf_info_of(s).n_filters, 2);
  size_t len;
  unsigned char *blob = bk_test_serialize(&bk_test_codec_scbf, s, &len);
  bk_scbf *g = NULL;
  assert_bk_ok(bk_test_codec_load(&bk_test_codec_scbf, blob, len, (void **)&g));
  for (uint64_t i = 1; i <= 20; i++)
    if (i != 2) assert_true(has(g, &i, 8));
  assert_int_equal(scbf_info_of(g).seqnum, scbf_info_of(s).seqnum);
  bk_scbf_destroy(g);
  /* Field rules the harness cannot know. */
  const bk_test_codec *c = &bk_test_codec_scbf;
  bk_test_codec_expect_edit(c, blob, len, 64, 4, 0, BK_ECORRUPT, "n 0");
  bk_test_codec_expect_edit(c, blob, len, 64, 4, 1, BK_ECORRUPT, "n short");
  bk_test_codec_expect_edit(c, blob, len, 80, 8, 5, BK_ECORRUPT, "mem");
  bk_test_codec_expect_edit(c, blob, len, 80, 8, 0, BK_OK, "mem 0");
  bk_test_codec_expect_edit(c, blob, len, 88, 8, 1ull << 40, BK_ECORRUPT,
                            "disk > seq");
  bk_test_codec_expect_edit(c, blob, len, 96 + 40, 8, (1ull << 62) + 1,
                            BK_ECORRUPT, "count");
  bk_test_codec_expect_edit(c, blob, len, 96 + 48, 8, 0, BK_ECORRUPT,
                            "filter 0 without ids");
  bk_test_codec_expect_edit(c, blob, len, 96 + 8, 8, 9, BK_ECORRUPT,
                            "capacity (stale filter checksum)");
  free(blob);
  bk_test_codec_hostile(&bk_test_codec_scbf, s, seed);
  bk_scbf_destroy(s);
  s = small_populated(8, BK_BLOOM_BLOCKED);
  bk_test_codec_hostile(&bk_test_codec_scbf, s, seed + 1);
  bk_scbf_destroy(s);
}

static void test_oom(void **state) {
  (void)state;
  bk_test_alloc st;
  bool done = false;
  for (size_t fail = 1; !done && fail < 50; fail++) {
    bk_allocator al = bk_test_allocator(&st, fail);
    bk_scbf *s = NULL;
    bk_status r =
        bk_scbf_create(&s, &(bk_scbf_config){.capacity = 10, .allocator = &al});
    if (r != BK_OK) {
      assert_int_equal(r, BK_ENOMEM);
      assert_null(s);
      assert_int_equal(st.live, 0);
      continue;
    }
    /* Growth fails cleanly too: the add is refused and nothing changed. */
    uint64_t i = 1;
    for (; i <= 40 && r == BK_OK; i++) r = bk_scbf_add(s, &i, 8, i);
    if (r != BK_OK) {
      assert_int_equal(r, BK_ENOMEM);
      bk_scbf_info info = scbf_info_of(s);
      assert_int_equal(info.count, i - 2);
    } else {
      done = true;
    }
    bk_scbf_destroy(s);
    assert_int_equal(st.live, 0);
  }
  assert_true(done);
}

/* ---- the file ------------------------------------------------------------ */

static uint64_t file_size(const char *path) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

static void test_file_basic(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "basic.scbf");
  unlink(path);
  bk_scbf *s = NULL;
  assert_bk_status(bk_scbf_open(&s, path, NULL), BK_ENOTFOUND);
  assert_null(s);
  bk_scbf_config cfg = {.capacity = 200, .fpp = 0.01, .counter_bits = 8};
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  for (uint64_t i = 1; i <= 700; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bk_scbf_info info = scbf_info_of(s);
  assert_int_equal(info.n_filters, 3);
  assert_true(info.file_backed);
  assert_int_equal(info.file_size, file_size(path));
  assert_int_equal(info.mem_seqnum, 701);
  assert_int_equal(info.disk_seqnum, 0);
  assert_bk_ok(bk_scbf_flush(s));
  assert_bk_ok(bk_scbf_remove(s, &(uint64_t){7}, 8, 7));
  uint64_t disk;
  assert_bk_ok(bk_scbf_disk_seqnum(s, &disk));
  assert_int_equal(disk, 701);
  /* The file and the serialized form hold the same state. */
  size_t len;
  unsigned char *blob = bk_test_serialize(&bk_test_codec_scbf, s, &len);
  bk_scbf_destroy(s);
  s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  info = scbf_info_of(s);
  assert_int_equal(info.n_filters, 3);
  assert_int_equal(info.mem_seqnum, 702);
  assert_int_equal(info.disk_seqnum, 701);
  assert_int_equal(info.counter_bits, 8);
  for (uint64_t i = 1; i <= 700; i++)
    if (i != 7) assert_true(has(s, &i, 8));
  size_t len2;
  unsigned char *blob2 = bk_test_serialize(&bk_test_codec_scbf, s, &len2);
  assert_int_equal(len, len2);
  assert_memory_equal(blob, blob2, len);
  free(blob2);
  /* and it keeps growing after a reopen */
  for (uint64_t i = 701; i <= 1600; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  assert_int_equal(scbf_info_of(s).n_filters, 4);
  bk_scbf_destroy(s);
  /* A matching config reopens; another is refused. */
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  assert_int_equal(scbf_info_of(s).n_filters, 4);
  bk_scbf_destroy(s);
  s = NULL;
  cfg.fpp = 0.02;
  assert_bk_status(bk_scbf_open(&s, path, &cfg), BK_EMISMATCH);
  assert_null(s);
  /* A serialized blob is not a file. */
  char other[512];
  path_of(other, sizeof other, "blob.bin");
  FILE *fp = fopen(other, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(blob, 1, len, fp), len);
  fclose(fp);
  assert_bk_status(bk_scbf_open(&s, other, NULL), BK_ECORRUPT);
  assert_null(s);
  unlink(other);
  free(blob);
  unlink(path);
}

static void write_at(const char *path, uint64_t off, const void *p, size_t n) {
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
  close(fd);
}

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  assert_true(a && b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0)
    assert_int_equal(fwrite(buf, 1, n, b), n);
  fclose(a);
  fclose(b);
}

/* Reopen `path` and require `want`; an accepted file must answer. */
static void expect_open(const char *path, bk_status want, const char *what) {
  bk_scbf *s = (bk_scbf *)(uintptr_t)0x1;
  bk_status st = bk_scbf_open(&s, path, NULL);
  if (st != want)
    fail_msg("%s: %s, expected %s", what, bk_status_name(st),
             bk_status_name(want));
  if (st == BK_OK) {
    bk_scbf_info info;
    assert_bk_ok(bk_scbf_info_get(s, &info));
    bool b;
    assert_bk_ok(bk_scbf_contains(s, "q", 1, &b));
    bk_scbf_destroy(s);
  } else {
    assert_ptr_equal(s, (bk_scbf *)(uintptr_t)0x1);
  }
}

/* Truncations and damaged headers of a file with three filters. */
/* Poke a little-endian u64 into a file. */
static void poke64(const char *path, uint64_t off, uint64_t v) {
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  assert_int_equal(fseek(fp, (long)off, SEEK_SET), 0);
  assert_int_equal(fwrite(b, 1, 8, fp), 8);
  assert_int_equal(fclose(fp), 0);
}

/* A crash after a write began: the write cleared the clean flag first. */
static void crash_mark(const char *path) {
  poke64(path, BK__SCBF_H_CLEAN, 0);
}

/* From the review of the file code: opening never writes (it used to cut
 * a longer file back, under a writer growing it from another process, and
 * even when it then failed with BK_EMISMATCH); a crash between an add's id
 * and count stores opens; a missing directory is BK_EIO, a missing file
 * on reopen BK_ENOTFOUND; a flush right after reopening a file that died
 * mid-write keeps the last replay point. */
static void test_file_open_never_writes(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "nowrite.scbf");
  unlink(path);
  bk_scbf *s = NULL;
  const bk_scbf_config cfg = {.capacity = 20};
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  for (uint64_t i = 1; i <= 30; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  assert_bk_ok(bk_scbf_flush(s));
  uint64_t disk;
  assert_bk_ok(bk_scbf_disk_seqnum(s, &disk));
  bk_scbf_destroy(s);
  uint64_t size = file_size(path);
  /* Trailing bytes (a growth a crash interrupted): opens, left alone. */
  assert_int_equal(truncate(path, (off_t)(size + 4096)), 0);
  expect_open(path, BK_OK, "a file with trailing bytes");
  assert_int_equal(file_size(path), size + 4096);
  bk_scbf_config other = cfg;
  other.capacity = 21;
  assert_int_equal(bk_scbf_open(&s, path, &other), BK_EMISMATCH);
  assert_int_equal(file_size(path), size + 4096);
  /* The writer cuts them when it grows: more keys, reopen, all found. */
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  for (uint64_t i = 31; i <= 200; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bk_scbf_destroy(s);
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  for (uint64_t i = 1; i <= 200; i++) {
    bool v;
    assert_bk_ok(bk_scbf_contains(s, &i, 8, &v));
    assert_true(v);
  }
  bk_scbf_destroy(s);
  /* A crash between the id and the count of a first add: filter 0 has
   * ids [0, 6) and no count, mem_seqnum 0. */
  unlink(path);
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  bk_scbf_destroy(s);
  crash_mark(path);
  poke64(path, 128 + 48, 6); /* filter 0's end id */
  poke64(path, 80, 0);       /* mem_seqnum: a write was under way */
  expect_open(path, BK_OK, "ids stored, count not yet");
  /* Flush before any write keeps disk_seqnum (it used to store 0). */
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  uint64_t before, after;
  assert_bk_ok(bk_scbf_disk_seqnum(s, &before));
  assert_bk_ok(bk_scbf_flush(s));
  assert_bk_ok(bk_scbf_disk_seqnum(s, &after));
  assert_int_equal(after, before);
  bk_scbf_destroy(s);
  (void)disk;
  /* A create that fails after it made or wrote the file (the file size
   * limit stops the first filter's growth: EIO) leaves what was there: no
   * file where there was none, an empty file where it was empty. */
  struct rlimit old_lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_lim), 0);
  void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
  for (int empty = 0; empty < 2; empty++) {
    unlink(path);
    if (empty) {
      FILE *fp = fopen(path, "wb");
      assert_non_null(fp);
      fclose(fp);
    }
    struct rlimit lim = old_lim;
    lim.rlim_cur = 200; /* the 128-byte header fits, filter 0 does not */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    bk_status r = bk_scbf_open(&s, path, &cfg);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_lim), 0);
    assert_int_equal(r, BK_EIO);
    struct stat sb;
    if (empty) {
      assert_int_equal(stat(path, &sb), 0);
      assert_int_equal(sb.st_size, 0);
    } else {
      assert_int_not_equal(stat(path, &sb), 0);
    }
  }
  signal(SIGXFSZ, old_sig);
  /* Missing things. */
  char missing[600];
  snprintf(missing, sizeof missing, "%s.no-such-dir/x.scbf", path);
  assert_int_equal(bk_scbf_open(&s, missing, &cfg), BK_EIO);
  unlink(path);
  assert_int_equal(bk_scbf_open(&s, path, NULL), BK_ENOTFOUND);
}

/* Bytes no operation writes, set in a file (open does not read counters):
 * the serialized form is still one the loader accepts. */
static void serialize_loads(bk_scbf *s) {
  size_t size, written;
  assert_bk_ok(bk_scbf_serialized_size(s, &size));
  unsigned char *blob = malloc(size);
  assert_non_null(blob);
  assert_bk_ok(bk_scbf_serialize(s, blob, size, &written));
  bk_scbf *back = NULL;
  assert_bk_ok(bk_scbf_deserialize(blob, written, NULL, &back));
  bk_scbf_destroy(back);
  free(blob);
}

static void test_file_unwritten_bytes_set(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "unwritten.scbf");
  unlink(path);
  const bk_scbf_config cfg = {.capacity = 20};
  bk__scbf_params p;
  assert_bk_ok(bk__scbf_params_from_config(&cfg, &p));
  bk__cbf_params fp;
  assert_bk_ok(bk__scbf_filter_params(&p, 0, &fp, NULL));
  /* Storage is whole 64-byte blocks: the last byte is padding. */
  assert_true(fp.m * fp.width <=
              8 * (bk__scbf_record_bytes(&fp) - BK__SCBF_RECORD_HEADER - 1));
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  bk_scbf_destroy(s);
  uint64_t size = file_size(path);
  const unsigned char ff = 0xff;
  /* Filter 0 has no id yet: its counters must be zero. */
  write_at(path, 128 + BK__SCBF_RECORD_HEADER, &ff, 1);
  write_at(path, size - 1, &ff, 1);
  /* Closed cleanly: the checksum refuses it. After a crash (the flag
   * clear) open does not read counters; verify sees the stray bits. */
  expect_open(path, BK_ECORRUPT, "stray bits, closed cleanly");
  crash_mark(path);
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  bk_scbf_verify_result vr;
  assert_bk_status(bk_scbf_verify(s, &vr), BK_ECORRUPT);
  assert_true(vr.filters[0].stray_bits);
  serialize_loads(s);
  uint64_t id = 1;
  assert_bk_ok(bk_scbf_add(s, &id, 8, id));
  bk_scbf_destroy(s);
  /* Padding, with ids (0xff there was sealed with it: another value). */
  const unsigned char sf = 0x7f;
  write_at(path, size - 1, &sf, 1);
  expect_open(path, BK_ECORRUPT, "padding set, closed cleanly");
  crash_mark(path);
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  assert_bk_status(bk_scbf_verify(s, &vr), BK_ECORRUPT);
  assert_true(vr.filters[0].stray_bits);
  serialize_loads(s);
  bk_scbf_destroy(s);
  unlink(path);
}

static void test_file_hostile(void **state) {
  (void)state;
  char good[512], bad[512];
  path_of(good, sizeof good, "good.scbf");
  path_of(bad, sizeof bad, "bad.scbf");
  unlink(good);
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, good, &(bk_scbf_config){.capacity = 20}));
  for (uint64_t i = 1; i <= 100; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  assert_int_equal(scbf_info_of(s).n_filters, 3);
  uint64_t rec[3];
  for (unsigned f = 0; f < 3; f++) {
    bk__scbf_params p;
    assert_bk_ok(
        bk__scbf_params_from_config(&(bk_scbf_config){.capacity = 20}, &p));
    bk__cbf_params fp;
    assert_bk_ok(bk__scbf_filter_params(&p, f, &fp, NULL));
    rec[f] = bk__scbf_record_bytes(&fp);
  }
  bk_scbf_destroy(s);
  uint64_t size = file_size(good);
  assert_int_equal(size, 128 + rec[0] + rec[1] + rec[2]);
  expect_open(good, BK_OK, "the good file");
  /* Truncations: every length up to the first filter's counters, then
   * around each record boundary. */
  uint64_t cuts[64];
  size_t n_cuts = 0;
  uint64_t r1 = 128 + rec[0], r2 = r1 + rec[1];
  const uint64_t edges[] = {128 + 64, 128 + 100, r1 - 1, r1,      r1 + 1,
                            r1 + 63,  r2 - 1,    r2,     r2 + 64, size - 1};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    cuts[n_cuts++] = edges[i];
  for (uint64_t len = 0; len <= 128 + 64; len += len < 130 ? 1 : 31) {
    copy_file(good, bad);
    assert_int_equal(truncate(bad, (off_t)len), 0);
    expect_open(bad, BK_ECORRUPT, "truncated header");
  }
  for (size_t i = 0; i < n_cuts; i++) {
    copy_file(good, bad);
    assert_int_equal(truncate(bad, (off_t)cuts[i]), 0);
    expect_open(bad, BK_ECORRUPT, "truncated filter");
  }
  /* Every byte of the immutable header and of each record's immutable
   * header, flipped: refused (the version bytes as newer: EVERSION). */
  const uint64_t starts[4] = {0, 128, r1, r2};
  for (int part = 0; part < 4; part++) {
    size_t n = part == 0 ? 64 : 40;
    for (size_t b = 0; b < n; b++) {
      copy_file(good, bad);
      unsigned char x;
      FILE *fp = fopen(bad, "rb");
      fseek(fp, (long)(starts[part] + b), SEEK_SET);
      assert_int_equal(fread(&x, 1, 1, fp), 1);
      fclose(fp);
      x ^= 0x80;
      write_at(bad, starts[part] + b, &x, 1);
      bk_status want =
          part == 0 && (b == 4 || b == 5) ? BK_EVERSION : BK_ECORRUPT;
      expect_open(bad, want, "flipped header byte");
    }
  }
  /* The mutable fields by their rules, in the file as closed (clean:
   * the records' count, ids and checksum are checksummed) and as a crash
   * leaves it (the clean flag clear: range rules only; the record's
   * checksum field is not read). */
  struct {
    uint64_t off;
    unsigned width;
    uint64_t value;
    bk_status want, want_crashed;
  } edits[] = {
      {64, 4, 0, BK_ECORRUPT, BK_ECORRUPT},
      {64, 4, 4, BK_ECORRUPT, BK_ECORRUPT},
      {64, 4, 33, BK_ECORRUPT, BK_ECORRUPT},
      {64, 4, 2, BK_OK, BK_OK},
      {68, 4, 1, BK_ECORRUPT, BK_ECORRUPT},
      {72, 8, 0, BK_ECORRUPT, BK_ECORRUPT},
      {80, 8, 7, BK_ECORRUPT, BK_ECORRUPT},
      {80, 8, 0, BK_OK, BK_OK},
      {88, 8, 102, BK_ECORRUPT, BK_ECORRUPT},
      {88, 8, 101, BK_OK, BK_OK},
      {96, 8, 2, BK_ECORRUPT, BK_ECORRUPT}, /* the clean flag: 0 or 1 */
      {100, 1, 1, BK_ECORRUPT, BK_ECORRUPT},
      {104, 1, 1, BK_ECORRUPT, BK_ECORRUPT},
      {128 + 40, 8, 1ull << 63, BK_ECORRUPT, BK_ECORRUPT},
      {128 + 48, 8, 0, BK_ECORRUPT, BK_ECORRUPT},
      {128 + 56, 1, 1, BK_ECORRUPT, BK_OK},
      {r2 + 48, 8, 1, BK_ECORRUPT, BK_ECORRUPT},
      {r2 + 40, 8, 5, BK_ECORRUPT, BK_OK},
  };
  for (int crashed = 0; crashed < 2; crashed++) {
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
      copy_file(good, bad);
      if (crashed) crash_mark(bad);
      unsigned char v[8];
      bk__store_le64(v, edits[i].value);
      write_at(bad, edits[i].off, v, edits[i].width);
      expect_open(bad, crashed ? edits[i].want_crashed : edits[i].want,
                  crashed ? "mutable field, after a crash" : "mutable field");
    }
  }
  /* A longer file (a crash while growing) opens; opening writes nothing,
   * so the trailing bytes stay until the next growth overwrites them. */
  copy_file(good, bad);
  assert_int_equal(truncate(bad, (off_t)(size + 5000)), 0);
  expect_open(bad, BK_OK, "longer file");
  assert_int_equal(file_size(bad), size + 5000);
  unlink(bad);
  unlink(good);
}

/* ---- damage and clean closing (issue #32) ------------------------------ */

/* A file of 300 keys in filter 0 (capacity 1000, 4-bit counters),
 * closed cleanly. */
static void damage_base(const char *path) {
  unlink(path);
  bk_scbf *s = NULL;
  assert_bk_ok(
      bk_scbf_open(&s, path, &(bk_scbf_config){.capacity = 1000, .fpp = 0.01}));
  for (uint64_t i = 1; i <= 300; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bool v;
  assert_bk_ok(bk_scbf_verified(s, &v));
  assert_true(v); /* created here */
  bk_scbf_destroy(s);
}

/* Open a file whose clean flag was cleared and verify it. */
static bk_status open_and_verify(const char *path, bk_scbf_verify_result *vr) {
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  bool v = true;
  assert_bk_ok(bk_scbf_verified(s, &v));
  assert_false(v);
  bk_status st = bk_scbf_verify(s, vr);
  assert_false(vr->verified);
  bk_scbf_destroy(s);
  return st;
}

/* The damage to the counters of a file closed cleanly (8 bytes
 * written by dd, all counters zeroed, one flipped bit): refused at open;
 * after a crash (the flag clear) open cannot tell, and verify reports it. */
static void test_file_damaged_counters(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "damage.scbf");
  const uint64_t counters = 128 + BK__SCBF_RECORD_HEADER;
  damage_base(path);
  expect_open(path, BK_OK, "closed cleanly");
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  bool v = false;
  assert_bk_ok(bk_scbf_verified(s, &v));
  assert_true(v);
  bk_scbf_verify_result vr;
  assert_bk_ok(bk_scbf_verify(s, &vr));
  assert_int_equal(vr.n_filters, 1);
  assert_int_equal(vr.filters[0].count, 300);
  assert_int_equal(vr.filters[0].sum, vr.filters[0].expected_sum);
  assert_int_equal(vr.filters[0].expected_sum, 300 * vr.filters[0].k);
  uint64_t m = vr.filters[0].k ? scbf_info_of(s).m_counters : 0;
  bk_scbf_destroy(s);
  for (int kind = 0; kind < 3; kind++) {
    const char *what[] = {"8 bytes (dd)", "counters zeroed", "a flipped bit"};
    damage_base(path);
    if (kind == 0) {
      const unsigned char junk[8] = {0xde, 0xad, 0xbe, 0xef,
                                     0x01, 0x23, 0x45, 0x67};
      write_at(path, counters + 200, junk, 8);
    } else if (kind == 1) {
      unsigned char *zero = calloc(1, (size_t)(m / 2));
      assert_non_null(zero);
      write_at(path, counters, zero, (size_t)(m / 2));
      free(zero);
    } else {
      /* the low bit of the first nonzero counter */
      FILE *fp = fopen(path, "rb");
      assert_non_null(fp);
      assert_int_equal(fseek(fp, (long)counters, SEEK_SET), 0);
      unsigned char b = 0;
      uint64_t off = counters;
      while (fread(&b, 1, 1, fp) == 1 && b == 0) off++;
      fclose(fp);
      b ^= (b & 0x0f) ? 0x01 : 0x10;
      write_at(path, off, &b, 1);
    }
    expect_open(path, BK_ECORRUPT, what[kind]);
    crash_mark(path);
    if (open_and_verify(path, &vr) != BK_ECORRUPT)
      fail_msg("%s after a crash: verify found nothing", what[kind]);
    assert_int_equal(vr.n_inconsistent, 1);
    assert_false(vr.filters[0].consistent);
    assert_int_not_equal(vr.filters[0].sum, vr.filters[0].expected_sum);
    if (kind == 1) assert_int_equal(vr.filters[0].sum, 0);
  }
  unlink(path);
}

/* A process killed after it wrote: the file opens unverified and its
 * counters are consistent; an interrupted write (count stored, counters
 * not yet) is allowed for, only when mem_seqnum says so. */
static void test_file_crash_unverified(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "crashv.scbf");
  damage_base(path);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bk_scbf *s = NULL;
    if (bk_scbf_open(&s, path, NULL) != BK_OK) _exit(3);
    for (uint64_t i = 301; i <= 2500; i++)
      if (bk_scbf_add(s, &i, 8, i) != BK_OK) _exit(4);
    uint64_t gone = 17;
    if (bk_scbf_remove(s, &gone, 8, gone) != BK_OK) _exit(5);
    raise(SIGKILL);
    _exit(6);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  bk_scbf_verify_result vr;
  assert_bk_ok(open_and_verify(path, &vr));
  assert_true(vr.n_filters >= 2);
  assert_false(vr.interrupted);
  for (unsigned i = 0; i < vr.n_filters; i++) {
    assert_true(vr.filters[i].consistent);
    assert_false(vr.filters[i].stray_bits);
  }
  /* Writing and closing seals it again. */
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  assert_bk_ok(bk_scbf_add(s, "x", 1, 9999));
  bk_scbf_destroy(s);
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  bool v = false;
  assert_bk_ok(bk_scbf_verified(s, &v));
  assert_true(v);
  assert_true(has(s, "x", 1));
  bk_scbf_destroy(s);
  /* A first add that stored its count and none of its counters. */
  damage_base(path);
  crash_mark(path);
  poke64(path, 128 + BK__SCBF_F_COUNT, 301);
  assert_bk_status(open_and_verify(path, &vr), BK_ECORRUPT);
  poke64(path, BK__SCBF_H_MEM, 0); /* it was under way */
  assert_bk_ok(open_and_verify(path, &vr));
  assert_true(vr.interrupted);
  /* One key added until its counters saturate and removed as often: the
   * unsaturated counters never sum to more than k * count. */
  damage_base(path);
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  for (int i = 0; i < 20; i++) assert_bk_ok(bk_scbf_add(s, "hot", 3, 5));
  assert_bk_ok(bk_scbf_verify(s, &vr));
  assert_true(vr.filters[0].saturated > 0);
  for (int i = 0; i < 20; i++) assert_bk_ok(bk_scbf_remove(s, "hot", 3, 5));
  assert_bk_ok(bk_scbf_verify(s, &vr));
  assert_int_equal(vr.filters[0].count, 300);
  bk_scbf_destroy(s);
  /* In memory: always verified. */
  assert_bk_ok(bk_scbf_create(&s, &(bk_scbf_config){.capacity = 10}));
  assert_bk_ok(bk_scbf_verified(s, &v));
  assert_true(v);
  assert_bk_ok(bk_scbf_verify(s, &vr));
  assert_bk_status(bk_scbf_verify(NULL, &vr), BK_EINVAL);
  assert_bk_status(bk_scbf_verify(s, NULL), BK_EINVAL);
  assert_bk_status(bk_scbf_verified(s, NULL), BK_EINVAL);
  bk_scbf_destroy(s);
  unlink(path);
}

/* The clean flag as the file holds it. */
static uint64_t clean_flag(const char *path) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  unsigned char b[8];
  assert_int_equal(pread(fd, b, 8, BK__SCBF_H_CLEAN), 8);
  close(fd);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
  return v;
}

/* Two handles on one file (two processes: the review of format 2). Writing
 * is handed from one to the other, each sealing when it is done: a handle
 * that wrote before the other flushed must clear the flag again before its
 * next write (it used to trust its own "dirty" and write beside a set
 * flag, so a crash then left a file refused as damaged). And a handle that
 * does not map every filter (another one grew the file since it opened)
 * must not vouch for the ones it cannot checksum. */
static void test_file_two_writers(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "twowriters.scbf");
  damage_base(path);
  bk_scbf *a = NULL, *b = NULL;
  assert_bk_ok(bk_scbf_open(&a, path, NULL));
  assert_bk_ok(bk_scbf_open(&b, path, NULL));
  uint64_t id = 1000;
  assert_bk_ok(bk_scbf_add(a, &id, 8, id));
  assert_int_equal(clean_flag(path), 0);
  id++;
  assert_bk_ok(bk_scbf_add(b, &id, 8, id));
  assert_bk_ok(bk_scbf_flush(b));
  assert_int_equal(clean_flag(path), 1);
  id++;
  assert_bk_ok(bk_scbf_add(a, &id, 8, id));
  assert_int_equal(clean_flag(path), 0); /* cleared before a's write */
  id++;
  assert_bk_ok(bk_scbf_remove(b, &(uint64_t){1001}, 8, 1001));
  assert_bk_ok(bk_scbf_flush(a));
  assert_int_equal(clean_flag(path), 1);
  assert_bk_ok(bk_scbf_remove(b, &(uint64_t){1000}, 8, 1000));
  assert_int_equal(clean_flag(path), 0); /* and before b's remove */
  bk_scbf_destroy(b);
  bk_scbf_destroy(a);
  expect_open(path, BK_OK, "both handles closed");

  /* b grows the file to a second filter, seals, writes to it and dies;
   * a, which maps filter 0 only, flushes: the file must not say clean. */
  damage_base(path);
  assert_bk_ok(bk_scbf_open(&a, path, NULL));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (bk_scbf_open(&b, path, NULL) != BK_OK) _exit(3);
    for (uint64_t i = 301; i <= 2500; i++)
      if (bk_scbf_add(b, &i, 8, i) != BK_OK) _exit(4);
    if (bk_scbf_flush(b) != BK_OK) _exit(5);
    uint64_t last = 2501;
    if (bk_scbf_add(b, &last, 8, last) != BK_OK) _exit(6);
    raise(SIGKILL);
    _exit(7);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  assert_bk_ok(bk_scbf_flush(a));
  bk_scbf_destroy(a);
  assert_int_equal(clean_flag(path), 0);
  bk_scbf_verify_result vr;
  assert_bk_ok(open_and_verify(path, &vr));
  assert_true(vr.n_filters >= 2);
  unlink(path);
}

/* A file of format version 1 (no checksums, no clean flag) opens,
 * unverified, verify checks it, and writing to it keeps it version 1. */
static void test_file_version1(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "v1.scbf");
  damage_base(path);
  /* Made from a version-2 file: version 1, header resealed, the record's
   * checksum and the clean flag zero. */
  unsigned char h[BK__SCBF_FILE_HEADER];
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fread(h, 1, sizeof h, fp), sizeof h);
  fclose(fp);
  h[4] = 1;
  bk__format_write_trailer(h, 56);
  memset(h + BK__SCBF_H_CLEAN, 0, 8);
  write_at(path, 0, h, sizeof h);
  poke64(path, 128 + BK__SCBF_F_SUM, 0);
  bk_scbf_verify_result vr;
  assert_bk_ok(open_and_verify(path, &vr));
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  assert_bk_ok(bk_scbf_add(s, "y", 1, 400));
  assert_bk_ok(bk_scbf_flush(s));
  bk_scbf_destroy(s);
  fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fread(h, 1, sizeof h, fp), sizeof h);
  fclose(fp);
  assert_int_equal(h[4], 1);
  assert_true(bk__all_zero(h + 96, 32));
  assert_bk_ok(open_and_verify(path, &vr));
  assert_int_equal(vr.filters[0].count, 301);
  /* A version-1 record's reserved bytes stay reserved. */
  poke64(path, 128 + BK__SCBF_F_SUM, 1);
  expect_open(path, BK_ECORRUPT, "version 1, checksum field set");
  unlink(path);
}

/* dablooms' documented test on a generated word list: capacity 100k,
 * error 5 %, in a file. */
#define N_WORDS 104334u /* 2 x 52,167: dablooms' scaling test halves */

static void test_dablooms_procedure(void **state) {
  (void)state;
  char path[512], w[16];
  path_of(path, sizeof path, "dablooms.scbf");
  unlink(path);
  const bk_scbf_config cfg = {.capacity = 100000, .fpp = 0.05};
  bk_scbf *s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  for (uint64_t i = 0; i < N_WORDS; i++) {
    size_t n = word(i, w);
    assert_bk_ok(bk_scbf_add(s, w, n, i + 1));
  }
  for (uint64_t i = 0; i < N_WORDS; i += 5) {
    size_t n = word(i, w);
    assert_bk_ok(bk_scbf_remove(s, w, n, i + 1));
  }
  assert_bk_ok(bk_scbf_flush(s));
  unsigned filters = scbf_info_of(s).n_filters;
  bk_scbf_destroy(s);
  s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  uint64_t fn = 0, fp = 0, tn = 0;
  for (uint64_t i = 0; i < N_WORDS; i++) {
    size_t n = word(i, w);
    bool found = has(s, w, n);
    if (i % 5 == 0) {
      fp += found;
      tn += !found;
    } else {
      fn += !found;
    }
  }
  double rate = (double)fp / (double)(fp + tn);
  print_message(
      "dablooms procedure: %u words, %u filters, removed every "
      "fifth: false negatives %llu, FPR %.4f%% (target 5%%), "
      "file %llu bytes\n",
      N_WORDS, filters, (unsigned long long)fn, 100 * rate,
      (unsigned long long)file_size(path));
  assert_int_equal(fn, 0);
  assert_true(rate < 0.05);
  bk_scbf_destroy(s);
  unlink(path);

  /* The accuracy / scaling test: even words in, odd words probed. */
  assert_bk_ok(bk_scbf_open(&s, path, &cfg));
  for (uint64_t i = 0; i < N_WORDS; i += 2) {
    size_t n = word(i, w);
    assert_bk_ok(bk_scbf_add(s, w, n, i + 1));
  }
  fp = 0;
  for (uint64_t i = 1; i < N_WORDS; i += 2) {
    size_t n = word(i, w);
    fp += has(s, w, n);
  }
  bk_scbf_filter_info fi;
  assert_bk_ok(bk_scbf_filter_info_get(s, 0, &fi));
  assert_int_equal(scbf_info_of(s).n_filters, 1);
  double want;
  assert_bk_ok(bk_params_fpp(fi.m_counters, fi.k, N_WORDS / 2, &want));
  rate = (double)fp / (double)(N_WORDS / 2);
  print_message(
      "scaling accuracy: 52167 added, 52167 probed: FPR %.4f%% "
      "(formula %.4f%%; dablooms 0.14%%), m %llu, k %u, file %llu "
      "bytes = %.1f KiB (dablooms 374 KiB)\n",
      100 * rate, 100 * want, (unsigned long long)fi.m_counters, fi.k,
      (unsigned long long)file_size(path), (double)file_size(path) / 1024);
  /* ~75 false positives expected: sd ~9, so +-50 % is > 4 sd. */
  assert_true(rate > 0.5 * want && rate < 1.5 * want);
  assert_true(rate < 0.05);
  bk_scbf_destroy(s);
  unlink(path);
}

/* ---- crash safety ---------------------------------------------------------
 * A child opens the file and adds keys 1, 2, ... (id = key number), logging
 * each key number before the add (a write-ahead log: write(2) survives the
 * child) and, after each flush every 500 adds, the disk seqnum it flushed.
 * The parent kills it at a random moment, reopens the file and checks the
 * seqnums against the log, replays from disk_seqnum, requires every logged
 * key to be found, closes (flushed) and starts the next child. */

static void child_run(const char *path, int log_fd, int flush_fd,
                      uint64_t first) {
  bk_scbf *s = NULL;
  if (bk_scbf_open(&s, path, NULL) != BK_OK) _exit(3);
  for (uint64_t k = first;; k++) {
    if (write(log_fd, &k, 8) != 8) _exit(4);
    if (bk_scbf_add(s, &k, 8, k) != BK_OK) _exit(5);
    if (k % 500 == 0) {
      uint64_t d;
      if (bk_scbf_flush(s) != BK_OK) _exit(6);
      bk_scbf_disk_seqnum(s, &d);
      if (write(flush_fd, &d, 8) != 8) _exit(7);
    }
  }
}

static uint64_t last_u64(const char *path, uint64_t *count) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  uint64_t v = 0, x, n = 0;
  while (fread(&x, 8, 1, fp) == 1) v = x, n++;
  fclose(fp);
  if (count) *count = n;
  return v;
}

static void test_crash_safety(void **state) {
  (void)state;
  char path[512], logp[512], flushp[512];
  path_of(path, sizeof path, "crash.scbf");
  path_of(logp, sizeof logp, "crash.log");
  path_of(flushp, sizeof flushp, "crash.flush");
  unlink(path);
  unlink(logp);
  unlink(flushp);
  bk_scbf *s = NULL;
  assert_bk_ok(
      bk_scbf_open(&s, path, &(bk_scbf_config){.capacity = 1000, .fpp = 0.01}));
  assert_bk_ok(bk_scbf_flush(s));
  bk_scbf_destroy(s);
  uint64_t rng = bk_test_seed(0xC4A5);
  uint64_t logged = 0;   /* keys 1..logged are in the log */
  uint64_t base_seq = 1; /* the file holds keys 1..logged at base_seq */
  const int iterations = BK_TEST_SLOW_BUILD ? 12 : 40;
  unsigned mid_write = 0;
  for (int it = 0; it < iterations; it++) {
    int log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int flush_fd = open(flushp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(log_fd >= 0 && flush_fd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) child_run(path, log_fd, flush_fd, logged + 1);
    close(log_fd);
    close(flush_fd);
    /* Kill it at a random moment after it has begun adding (on a loaded
     * machine or under a sanitizer a child can take longer to start than
     * the random delay: every kill would then land before its first key). */
    struct timespec poll = {0, 200000};
    for (int waited = 0; file_size(logp) <= logged * 8 && waited < 50000;
         waited++)
      nanosleep(&poll, NULL);
    struct timespec ts = {0, (long)(1000000 + bk_test_next(&rng) % 15000000)};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status)); /* not an early exit */
    uint64_t total;
    (void)last_u64(logp, &total);
    uint64_t flushed = 0, n_flushes;
    flushed = last_u64(flushp, &n_flushes);
    assert_bk_ok(bk_scbf_open(&s, path, NULL));
    uint64_t mem, disk;
    assert_bk_ok(bk_scbf_mem_seqnum(s, &mem));
    assert_bk_ok(bk_scbf_disk_seqnum(s, &disk));
    uint64_t new_keys = total - logged;
    /* disk: at least the last flush the child reported (and the
     * parent's own at the end of the previous round), at most every write
     * the child began; mem: the last complete write, which is the last
     * logged key or the one before it, or 0 (killed mid-write). */
    assert_true(disk >= base_seq && disk >= flushed);
    assert_true(disk <= base_seq + new_keys);
    if (mem == 0) {
      mid_write++;
    } else {
      assert_true(mem >= disk);
      assert_true(mem == base_seq + new_keys || mem + 1 == base_seq + new_keys);
    }
    /* Replay the log from disk_seqnum. */
    uint64_t from = logged + (disk - base_seq) + 1;
    for (uint64_t k = from; k <= total; k++)
      assert_bk_ok(bk_scbf_add(s, &k, 8, k));
    for (uint64_t k = 1; k <= total; k++)
      if (!has(s, &k, 8))
        fail_msg("key %llu lost after round %d", (unsigned long long)k, it);
    assert_bk_ok(bk_scbf_flush(s));
    assert_bk_ok(bk_scbf_mem_seqnum(s, &base_seq));
    assert_bk_ok(bk_scbf_disk_seqnum(s, &disk));
    assert_int_equal(disk, base_seq);
    bk_scbf_destroy(s);
    logged = total;
  }
  print_message(
      "crash safety: %d kills, %llu keys logged, %u killed "
      "mid-write\n",
      iterations, (unsigned long long)logged, mid_write);
  /* Every child added (so every kill tested something), and the filter
   * grew past the first one (a slow build adds fewer keys). */
  assert_true(logged >= (uint64_t)iterations);
  assert_true(logged > (BK_TEST_SLOW_BUILD ? 0 : 1000));
  unlink(path);
  unlink(logp);
  unlink(flushp);
}

/* ---- one writer, readers ---------------------------------------------- */

typedef struct conc {
  bk_scbf *s;
  _Atomic uint64_t published; /* keys 1..published are added */
  _Atomic bool stop;
  _Atomic uint64_t misses;
} conc;

static void *reader(void *arg) {
  conc *c = arg;
  uint64_t rng = 77, checks = 0;
  while (!atomic_load(&c->stop) || checks < 1000) {
    uint64_t n = atomic_load(&c->published);
    if (n == 0) continue;
    uint64_t k = 1 + bk_test_next(&rng) % n;
    bool found = false;
    if (bk_scbf_contains(c->s, &k, 8, &found) != BK_OK || !found)
      atomic_fetch_add(&c->misses, 1);
    if (++checks % 256 == 0) {
      bk_scbf_info info;
      if (bk_scbf_info_get(c->s, &info) != BK_OK)
        atomic_fetch_add(&c->misses, 1);
    }
  }
  return NULL;
}

static void test_concurrent_readers(void **state) {
  (void)state;
  char path[512];
  path_of(path, sizeof path, "conc.scbf");
  unlink(path);
  for (int backed = 0; backed < 2; backed++) {
    conc c = {0};
    bk_scbf_config cfg = {.capacity = 500, .fpp = 0.01};
    if (backed)
      assert_bk_ok(bk_scbf_open(&c.s, path, &cfg));
    else
      c.s = scbf_make(&cfg);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
      assert_int_equal(pthread_create(&t[i], NULL, reader, &c), 0);
    const uint64_t n = BK_TEST_SLOW_BUILD ? 8000 : 30000;
    for (uint64_t k = 1; k <= n; k++) {
      assert_bk_ok(bk_scbf_add(c.s, &k, 8, k));
      atomic_store(&c.published, k);
      if (k % 3 == 0) {
        uint64_t j = k - 1;
        assert_bk_ok(bk_scbf_add(c.s, "tmp", 3, j));
        assert_bk_ok(bk_scbf_remove(c.s, "tmp", 3, j));
      }
    }
    atomic_store(&c.stop, true);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&c.misses), 0);
    assert_true(scbf_info_of(c.s).n_filters >= 5);
    bk_scbf_destroy(c.s);
  }
  unlink(path);
}

/* ---- beyond 4 GiB -------------------------------------------------------- */

static void test_large_sizes(void **state) {
  (void)state;
  /* The arithmetic: a filter past 2^32 counters has its byte size, record
   * size and offsets in 64 bits. */
  bk__scbf_params p;
  assert_bk_ok(bk__scbf_params_from_config(
      &(bk_scbf_config){.capacity = 1000000000, .fpp = 0.01}, &p));
  bk__cbf_params fp;
  assert_bk_ok(bk__scbf_filter_params(&p, 0, &fp, NULL));
  uint64_t bytes = bk__scbf_record_bytes(&fp);
  assert_true(fp.m > (1ull << 33));
  assert_true(bytes > (5ull << 30) &&
              bytes == 64 + (fp.m * 4 + 511) / 512 * 64);
  /* Filter 31 of capacity 2^20 would hold 2^51 keys: refused. */
  assert_bk_ok(
      bk__scbf_params_from_config(&(bk_scbf_config){.capacity = 1u << 20}, &p));
  assert_int_equal(bk__scbf_filter_params(&p, 31, &fp, NULL), BK_EFULL);
  /* A real file of ~5.3 GiB, sparse: nothing but a few pages is written. */
  char path[512];
  path_of(path, sizeof path, "large.scbf");
  unlink(path);
  bk_scbf *s = NULL;
  bk_status st = bk_scbf_open(
      &s, path, &(bk_scbf_config){.capacity = 1000000000, .fpp = 0.01});
  if (st != BK_OK) {
    print_message("large file: open failed (%s); arithmetic checked only\n",
                  bk_status_name(st));
    return;
  }
  for (uint64_t i = 0; i < 2000; i++) assert_bk_ok(bk_scbf_add(s, &i, 8, i));
  bk_scbf_destroy(s);
  s = NULL;
  assert_bk_ok(bk_scbf_open(&s, path, NULL));
  uint64_t size = file_size(path);
  assert_true(size > (5ull << 30));
  for (uint64_t i = 0; i < 2000; i++) assert_true(has(s, &i, 8));
  uint64_t mem;
  assert_bk_ok(bk_scbf_mem_seqnum(s, &mem));
  assert_int_equal(mem, 2001);
  print_message("large file: %llu bytes, reopened, 2000 keys found\n",
                (unsigned long long)size);
  bk_scbf_destroy(s);
  unlink(path);
}

static int setup_dir(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/bk_scbf_XXXXXX", tmp ? tmp : "/tmp");
  return mkdtemp(g_dir) ? 0 : -1;
}
static int remove_dir(void **state) {
  (void)state;
  return rmdir(g_dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_and_arguments),
      cmocka_unit_test(test_ranges_and_growth),
      cmocka_unit_test(test_compound_fpp),
      cmocka_unit_test(test_seqnums_in_memory),
      cmocka_unit_test(test_codec),
      cmocka_unit_test(test_oom),
      cmocka_unit_test(test_file_basic),
      cmocka_unit_test(test_file_hostile),
      cmocka_unit_test(test_file_open_never_writes),
      cmocka_unit_test(test_file_unwritten_bytes_set),
      cmocka_unit_test(test_file_damaged_counters),
      cmocka_unit_test(test_file_crash_unverified),
      cmocka_unit_test(test_file_two_writers),
      cmocka_unit_test(test_file_version1),
      cmocka_unit_test(test_dablooms_procedure),
      cmocka_unit_test(test_crash_safety),
      cmocka_unit_test(test_concurrent_readers),
      cmocka_unit_test(test_large_sizes),
  };
  return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
