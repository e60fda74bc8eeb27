/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: the counting, failure-injecting allocator, seed handling,
 * the start of every main, and wall-clock time.
 * Each block carries a 16-byte header holding its size so frees can be
 * accounted without a lookup table.
 */
#define _POSIX_C_SOURCE 200809L

#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HDR 16u

static void *t_alloc(void *ctx, size_t size) {
  bk_test_alloc *st = ctx;
  st->calls++;
  if (st->fail_at && (st->calls == st->fail_at ||
                      (st->fail_sticky && st->calls > st->fail_at)))
    return NULL;
  if (size > SIZE_MAX - HDR) return NULL;
  unsigned char *p = malloc(size + HDR);
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  st->live++;
  st->live_bytes += size;
  if (st->live_bytes > st->peak_bytes) st->peak_bytes = st->live_bytes;
  return p + HDR;
}

static void t_free(void *ctx, void *ptr) {
  bk_test_alloc *st = ctx;
  if (!ptr) return;
  unsigned char *p = (unsigned char *)ptr - HDR;
  size_t size;
  memcpy(&size, p, sizeof size);
  st->live--;
  st->live_bytes -= size;
  free(p);
}

static void *t_realloc(void *ctx, void *ptr, size_t size) {
  bk_test_alloc *st = ctx;
  if (!ptr) return t_alloc(ctx, size);
  st->calls++;
  if (st->fail_at && (st->calls == st->fail_at ||
                      (st->fail_sticky && st->calls > st->fail_at)))
    return NULL;
  if (size > SIZE_MAX - HDR) return NULL;
  unsigned char *old = (unsigned char *)ptr - HDR;
  size_t old_size;
  memcpy(&old_size, old, sizeof old_size);
  unsigned char *p = realloc(old, size + HDR);
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  st->live_bytes = st->live_bytes - old_size + size;
  if (st->live_bytes > st->peak_bytes) st->peak_bytes = st->live_bytes;
  return p + HDR;
}

bk_allocator bk_test_allocator(bk_test_alloc *state, size_t fail_at) {
  memset(state, 0, sizeof *state);
  state->fail_at = fail_at;
  bk_allocator a = {t_alloc, t_realloc, t_free, state};
  return a;
}

uint64_t bk_test_seed(uint64_t fallback) {
  static int printed;
  uint64_t seed = fallback;
  const char *env = getenv("BK_TEST_SEED");
  if (env && *env) seed = strtoull(env, NULL, 0);
  if (!printed) {
    printf("# seed %llu (set BK_TEST_SEED to override)\n",
           (unsigned long long)seed);
    printed = 1;
  }
  return seed;
}

void bk_test_begin(uint64_t seed_fallback) {
  (void)bk_test_seed(seed_fallback); /* prints the seed banner once */
  const char *filter = getenv("BK_TEST_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
}

double bk_test_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bk_test_sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

unsigned bk_test_oom(bk_test_oom_make make, const void *make_ctx,
                     bk_test_oom_check check, void *check_ctx, bool sticky,
                     size_t max_at, const char *what) {
  static char untouched;
  unsigned failures = 0;
  for (size_t fail_at = 1;; fail_at++) {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, fail_at);
    st.fail_sticky = sticky;
    void *obj = &untouched;
    bk_status s = make(make_ctx, &al, &obj);
    if (s == BK_OK) {
      assert_true(obj != NULL && obj != (void *)&untouched);
      check(check_ctx, &st, obj);
      if (st.live != 0 || st.live_bytes != 0)
        fail_msg("%s: %zu blocks left after destroy", what, st.live);
      return failures;
    }
    if (s != BK_ENOMEM)
      fail_msg("%s: allocation %zu failing: %s", what, fail_at,
               bk_status_name(s));
    assert_ptr_equal(obj, &untouched);
    if (st.live != 0 || st.live_bytes != 0)
      fail_msg("%s: allocation %zu failing: %zu blocks leaked", what, fail_at,
               st.live);
    failures++;
    if (fail_at >= max_at)
      fail_msg("%s: allocation %zu still fails", what, fail_at);
  }
}

typedef struct oom_load {
  const bk_test_codec *codec;
  const unsigned char *blob;
  size_t len;
  bk_test_oom_check check;
  void *check_ctx;
} oom_load;

static bk_status oom_load_make(const void *make_ctx, const bk_allocator *al,
                               void **out) {
  const oom_load *o = make_ctx;
  return o->codec->deserialize(o->blob, o->len, al, out);
}

static void oom_load_check(void *check_ctx, bk_test_alloc *st, void *obj) {
  const oom_load *o = check_ctx;
  o->check(o->check_ctx, st, obj);
  o->codec->destroy(obj);
}

unsigned bk_test_oom_load(const bk_test_codec *c, const unsigned char *blob,
                          size_t len, bk_test_oom_check check, void *check_ctx,
                          bool sticky, size_t max_at, const char *what) {
  oom_load o = {c, blob, len, check, check_ctx};
  return bk_test_oom(oom_load_make, &o, oom_load_check, &o, sticky, max_at,
                     what);
}

void *bk_test_restore(const bk_test_codec *c, const unsigned char *blob,
                      size_t len, const bk_allocator *al) {
  static char untouched;
  void *obj = &untouched;
  bk_status s = c->deserialize(blob, len, al, &obj);
  if (s != BK_OK) fail_msg("deserialize %s: %s", c->name, bk_status_name(s));
  assert_true(obj != NULL && obj != (void *)&untouched);
  return obj;
}

void bk_test_spin_wait(bk_test_spin_barrier *b) {
  unsigned gen = atomic_load(&b->generation);
  if (atomic_fetch_add(&b->arrived, 1) == 1) {
    atomic_store(&b->arrived, 0);
    atomic_fetch_add(&b->generation, 1);
  } else {
    /* spin briefly, then yield: on a loaded machine the partner may not
     * be running, and spinning through its time slice would stall us */
    for (unsigned spins = 0; atomic_load(&b->generation) == gen; spins++)
      if (spins > 1000) sched_yield();
  }
}

unsigned char *bk_test_data_file(const char *name, size_t *len) {
  const char *dir = getenv("BK_TEST_DATA");
  if (!dir || !*dir) fail_msg("BK_TEST_DATA is not set (ctest sets it)");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
  unsigned char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      unsigned char *grown = realloc(buf, cap);
      assert_non_null(grown);
      buf = grown;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  *len = n;
  return buf;
}
