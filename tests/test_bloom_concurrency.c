/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_bloom under threads: add_if_absent sequentially and its
 * linearizability under a two-thread race, concurrent add/contains, and
 * concurrent writers that lose no update.
 *
 * Built with BK_BLOOM_NO_INLINE: every call here reaches the library's
 * entry points (test_bloom_split covers the header's inline path). Shared
 * helpers: tests/bloom_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bloom_helpers.h"

#include "bloomkit/hash.h"
#include "core/internal.h"

/* ---- add_if_absent ------------------------------------------------------ */

static void test_add_if_absent_sequential(void **state) {
  (void)state;
  for (int layout = 0; layout < 2; layout++) {
    /* m = 2^22, k = 7, n = 2 * 10^4: the fill is 3.3 % and a fresh key is
     * a false positive with probability 4e-11, so "new" is exact here. */
    bk_bloom *b =
        bloom_make_mk(1u << 22, 7, (bk_bloom_layout)layout, BK_HASH_XXH3, 5);
    uint64_t rng = 1234;
    for (int i = 0; i < 20000; i++) {
      unsigned char kb[8];
      bk__store_le64(kb, bk_test_next(&rng));
      bool added = false, out = false;
      assert_bk_ok(bk_bloom_contains(b, kb, 8, &out));
      assert_false(out);
      assert_bk_ok(bk_bloom_add_if_absent(b, kb, 8, &added));
      assert_true(added);
      assert_bk_ok(bk_bloom_contains(b, kb, 8, &out));
      assert_true(out);
      assert_bk_ok(bk_bloom_add_if_absent(b, kb, 8, &added));
      assert_false(added);
      bk_bloom_add(b, kb, 8);
      assert_bk_ok(bk_bloom_add_if_absent(b, kb, 8, &added));
      assert_false(added);
    }
    bk_bloom_destroy(b);
  }
}

/* The concurrency tests' runs: 0-2 the three layouts (split-block on the
 * path the CPU picks), 3 split-block on the portable path (its block locks
 * and 64-bit word stores instead of vector ones). k_other: k of standard
 * and blocked; split-block has k = 8. */
static bk_bloom *make_run(int run, uint64_t m, unsigned k_other,
                          uint64_t seed) {
  int layout = run < 3 ? run : BK_BLOOM_SPLIT_BLOCK;
  bk_bloom *b = bloom_make_mk(m, layout == BK_BLOOM_SPLIT_BLOCK ? 8 : k_other,
                              (bk_bloom_layout)layout, BK_HASH_XXH3, seed);
  (void)bk__bloom_use_simd(b, run != 3);
  return b;
}

/* The race: two threads call add_if_absent on the same fresh keys at the same
 * moment; linearizability says exactly one of them is told "new". */
typedef struct race_shared {
  bk_bloom *b;
  const uint64_t *keys;
  size_t n_spin; /* keys 0 .. n_spin-1: both threads meet at every key */
  size_t n_keys; /* keys n_spin .. n_keys-1: meet at every batch */
  size_t batch;
  uint64_t jitter; /* spin_meet delays 0 .. jitter-1 iterations */
  pthread_barrier_t barrier;
  atomic_uint_fast64_t arrivals;
} race_shared;

typedef struct race_thread_ctx {
  race_shared *sh;
  int id;
  bool *added; /* per key */
  unsigned errors;
} race_thread_ctx;

/* Both threads arrive, then each waits a random few hundred cycles: the
 * last to arrive would otherwise always lead by the latency of its own
 * store reaching the other core, and the calls would rarely overlap. The
 * jitter makes the start skew sweep through zero. */
static void spin_meet(race_shared *sh, uint64_t target, uint64_t *rng) {
  atomic_fetch_add_explicit(&sh->arrivals, 1, memory_order_acq_rel);
  unsigned spins = 0;
  while (atomic_load_explicit(&sh->arrivals, memory_order_acquire) < target)
    if (++spins > 64) {
      spins = 0;
      sched_yield(); /* the other thread may share our CPU */
    }
  for (volatile unsigned j = (unsigned)(bk_test_next(rng) % sh->jitter); j;)
    j = j - 1;
}

static void race_one(race_thread_ctx *c, size_t i) {
  unsigned char kb[8];
  bool added = false;
  bk__store_le64(kb, c->sh->keys[i]);
  if (bk_bloom_add_if_absent(c->sh->b, kb, 8, &added) != BK_OK) c->errors++;
  c->added[i] = added;
}

static void *race_thread(void *arg) {
  race_thread_ctx *c = arg;
  race_shared *sh = c->sh;
  uint64_t rng = 0xC0FFEE + (uint64_t)c->id;
  pthread_barrier_wait(&sh->barrier);
  for (size_t i = 0; i < sh->n_spin; i++) {
    spin_meet(sh, 2 * (uint64_t)(i + 1), &rng);
    race_one(c, i);
  }
  for (size_t start = sh->n_spin; start < sh->n_keys; start += sh->batch) {
    size_t end =
        start + sh->batch < sh->n_keys ? start + sh->batch : sh->n_keys;
    pthread_barrier_wait(&sh->barrier);
    if (c->id == 0 || (start / sh->batch) % 2 == 0) {
      for (size_t i = start; i < end; i++) race_one(c, i);
    } else {
      /* Opposite directions meet once in the middle of the batch. */
      for (size_t i = end; i-- > start;) race_one(c, i);
    }
  }
  return NULL;
}

static void test_add_if_absent_race(void **state) {
  (void)state;
  const size_t n_keys = 200000;
  uint64_t *keys = malloc(n_keys * sizeof *keys);
  bool *added0 = calloc(n_keys, 1), *added1 = calloc(n_keys, 1);
  assert_non_null(keys);
  assert_non_null(added0);
  assert_non_null(added1);
  uint64_t rng = bloom_test_seed(0xACE);
  for (size_t i = 0; i < n_keys; i++) keys[i] = bk_test_next(&rng);

  static const char *const names[4] = {"standard", "blocked", "split-block",
                                       "split-block portable"};
  for (int run = 0; run < 4; run++) { /* make_run */
    /* m = 2^26, k = 7 (split-block: 8), n = 2e5: fill 2 %, a fresh key is
     * a false positive with probability ~2e-12 (split-block ~1e-9), so
     * every key is genuinely new and exactly one "new" per key is the only
     * linearizable outcome. */
    bk_bloom *b = make_run(run, 1u << 26, 7, (uint64_t)run);
    race_shared sh = {.b = b,
                      .keys = keys,
                      .n_spin = 100000,
                      .n_keys = n_keys,
                      .batch = 256,
                      .jitter = 64};
    atomic_init(&sh.arrivals, 0);
    pthread_barrier_init(&sh.barrier, NULL, 2);
    race_thread_ctx c0 = {&sh, 0, added0, 0}, c1 = {&sh, 1, added1, 0};
    pthread_t t0, t1;
    double start = bk_test_now_seconds();
    assert_int_equal(pthread_create(&t0, NULL, race_thread, &c0), 0);
    assert_int_equal(pthread_create(&t1, NULL, race_thread, &c1), 0);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    pthread_barrier_destroy(&sh.barrier);
    assert_int_equal(c0.errors + c1.errors, 0);
    size_t both = 0, neither = 0, wins0 = 0;
    for (size_t i = 0; i < n_keys; i++) {
      both += added0[i] && added1[i];
      neither += !added0[i] && !added1[i];
      wins0 += added0[i];
    }
    print_message(
        "race %s: %zu keys, thread 0 won %zu, both %zu, neither "
        "%zu (%.2fs)\n",
        names[run], n_keys, wins0, both, neither,
        bk_test_now_seconds() - start);
    if (both || neither)
      fail_msg(
          "add_if_absent not linearizable (%s): %zu keys reported new "
          "to both threads, %zu to neither",
          names[run], both, neither);
    for (size_t i = 0; i < n_keys; i++) assert_true(bloom_has_u64(b, keys[i]));
    bk_bloom_destroy(b);
  }
  free(keys);
  free(added0);
  free(added1);
}

/* Concurrent add + contains: the reader never sees a false negative for a
 * key whose add completed (published with release/acquire). */
typedef struct addq_ctx {
  bk_bloom *b;
  const uint64_t *keys;
  size_t n;
  atomic_size_t published;
  atomic_bool done;
  unsigned adder_errors;   /* written by the adder only */
  unsigned querier_errors; /* this and below: by the querier only */
  uint64_t false_negatives;
  uint64_t checks;
  double last_estimate;
  unsigned char *snapshot; /* serialize target, snapshot_len bytes */
  size_t snapshot_len;
  uint64_t snapshots;
  uint64_t snapshot_errors; /* a snapshot that did not load back */
} addq_ctx;

static void *adder_thread(void *arg) {
  addq_ctx *c = arg;
  for (size_t i = 0; i < c->n; i++) {
    unsigned char kb[8];
    bk__store_le64(kb, c->keys[i]);
    if (bk_bloom_add(c->b, kb, 8) != BK_OK) c->adder_errors++;
    atomic_store_explicit(&c->published, i + 1, memory_order_release);
  }
  atomic_store_explicit(&c->done, true, memory_order_release);
  return NULL;
}

static void *querier_thread(void *arg) {
  addq_ctx *c = arg;
  uint64_t rng = 7;
  while (!atomic_load_explicit(&c->done, memory_order_acquire)) {
    size_t p = atomic_load_explicit(&c->published, memory_order_acquire);
    if (p == 0) continue;
    /* The newest key (the most likely to expose a missing barrier) and a
     * random older one. */
    size_t idx[2] = {p - 1, (size_t)(bk_test_next(&rng) % p)};
    for (int j = 0; j < 2; j++) {
      unsigned char kb[8];
      bool out = false;
      bk__store_le64(kb, c->keys[idx[j]]);
      if (bk_bloom_contains(c->b, kb, 8, &out) != BK_OK) c->querier_errors++;
      if (!out) c->false_negatives++;
      c->checks++;
    }
    /* "The other queries are safe alongside adds": whole-filter reads while
     * the adder runs (the thread sanitizer build checks they are race-free).
     * The estimate can only grow, and every key published before the
     * snapshot is in it. */
    if (c->checks % 512 == 0) {
      double est = 0, fill = 0;
      if (bk_bloom_cardinality(c->b, &est) != BK_OK) c->querier_errors++;
      if (bk_bloom_fill_fpp(c->b, &fill) != BK_OK) c->querier_errors++;
      if (!(est >= c->last_estimate && fill >= 0 && fill <= 1))
        c->querier_errors++;
      c->last_estimate = est;
      size_t before = atomic_load_explicit(&c->published, memory_order_acquire);
      size_t written = 0;
      if (bk_bloom_serialize(c->b, c->snapshot, c->snapshot_len, &written) !=
              BK_OK ||
          written != c->snapshot_len) {
        c->querier_errors++;
        continue;
      }
      bk_bloom *copy = NULL;
      if (bk_bloom_deserialize(c->snapshot, written, NULL, &copy) != BK_OK) {
        c->snapshot_errors++;
        continue;
      }
      if (before > 0) {
        unsigned char kb[8];
        bool out = false;
        bk__store_le64(kb, c->keys[before - 1]);
        bk_bloom_contains(copy, kb, 8, &out);
        if (!out) c->false_negatives++;
      }
      bk_bloom_destroy(copy);
      c->snapshots++;
    }
  }
  return NULL;
}

static void test_concurrent_add_contains(void **state) {
  (void)state;
  const size_t n = 200000;
  uint64_t *keys = malloc(n * sizeof *keys);
  assert_non_null(keys);
  uint64_t rng = 99;
  for (size_t i = 0; i < n; i++) keys[i] = bk_test_next(&rng);
  for (int layout = 0; layout < 2; layout++) {
    bk_bloom *b =
        bloom_make_mk(1u << 22, 7, (bk_bloom_layout)layout, BK_HASH_XXH3, 3);
    addq_ctx c = {.b = b, .keys = keys, .n = n};
    atomic_init(&c.published, 0);
    atomic_init(&c.done, false);
    assert_bk_ok(bk_bloom_serialized_size(b, &c.snapshot_len));
    c.snapshot = malloc(c.snapshot_len);
    assert_non_null(c.snapshot);
    pthread_t ta, tq;
    assert_int_equal(pthread_create(&tq, NULL, querier_thread, &c), 0);
    assert_int_equal(pthread_create(&ta, NULL, adder_thread, &c), 0);
    pthread_join(ta, NULL);
    pthread_join(tq, NULL);
    print_message("concurrent add/contains %s: %llu checks, %llu snapshots\n",
                  layout ? "blocked" : "standard", (unsigned long long)c.checks,
                  (unsigned long long)c.snapshots);
    free(c.snapshot);
    assert_int_equal(c.adder_errors + c.querier_errors, 0);
    /* A serialize racing adds must still be a loadable blob: its checksum
     * has to cover the bytes it wrote, not a re-read of the live words. */
    assert_int_equal(c.snapshot_errors, 0);
    assert_int_equal(c.false_negatives, 0);
    for (size_t i = 0; i < n; i++) assert_true(bloom_has_u64(b, keys[i]));
    bk_bloom_destroy(b);
  }
  free(keys);
}

/* Two writers adding disjoint keys into one filter at once: a non-atomic
 * read-modify-write of a shared word would lose bits (false negatives). */
typedef struct writer_ctx {
  bk_bloom *b;
  const uint64_t *keys;
  size_t n;
  unsigned errors;
  pthread_barrier_t *barrier;
} writer_ctx;

static void *writer_thread(void *arg) {
  writer_ctx *c = arg;
  pthread_barrier_wait(c->barrier);
  for (size_t i = 0; i < c->n; i++) {
    unsigned char kb[8];
    bk__store_le64(kb, c->keys[i]);
    if (bk_bloom_add(c->b, kb, 8) != BK_OK) c->errors++;
  }
  return NULL;
}

static void test_concurrent_writers(void **state) {
  (void)state;
  const size_t n = 200000;
  uint64_t *keys = malloc(2 * n * sizeof *keys);
  assert_non_null(keys);
  uint64_t rng = 1001;
  for (size_t i = 0; i < 2 * n; i++) keys[i] = bk_test_next(&rng);
  for (int run = 0; run < 4; run++) { /* make_run */
    /* Small (2^16 bits = 128 cache lines): the writers collide on words
     * (split-block: 256 blocks behind 16 block locks). */
    bk_bloom *b = make_run(run, 1u << 16, 3, 0);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    writer_ctx c0 = {b, keys, n, 0, &barrier};
    writer_ctx c1 = {b, keys + n, n, 0, &barrier};
    pthread_t t0, t1;
    assert_int_equal(pthread_create(&t0, NULL, writer_thread, &c0), 0);
    assert_int_equal(pthread_create(&t1, NULL, writer_thread, &c1), 0);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    pthread_barrier_destroy(&barrier);
    assert_int_equal(c0.errors + c1.errors, 0);
    /* Sequential reference: the same keys added by one thread. */
    bk_bloom *ref = make_run(run, 1u << 16, 3, 0);
    for (size_t i = 0; i < 2 * n; i++) bloom_add_u64(ref, keys[i]);
    bloom_assert_same_blob(b, ref);
    bk_bloom_destroy(ref);
    bk_bloom_destroy(b);
  }
  free(keys);
}

/* Lost updates, made visible: on a filter far from full, two writers add
 * a few keys each into the same handful of blocks in rounds that start
 * together, and after each round writer 0 checks every key of both and
 * clears the filter. A lost word update is a false negative
 * (test_concurrent_writers' saturated filter would hide it). The writers
 * meet by spinning (lost_meet): a meeting that yields lets one writer
 * finish its dozen adds before the other wakes, and they would never
 * overlap on two CPUs. Rounds rotate through the ways to add: bk_bloom_add,
 * bk_bloom_add_hash, bk_bloom_add_if_absent and bk_bloom_add_many. */
typedef struct lost_ctx {
  race_shared *sh; /* b, keys, n_spin rounds of batch keys per writer */
  int id;
  size_t missing; /* writer 0 */
  unsigned errors;
} lost_ctx;

/* Both writers arrive, then go. Spins for a long while before yielding
 * (the other writer may share our CPU when the machine is busy). */
static void lost_meet(race_shared *sh, uint64_t target) {
  atomic_fetch_add_explicit(&sh->arrivals, 1, memory_order_acq_rel);
  unsigned spins = 0;
  while (atomic_load_explicit(&sh->arrivals, memory_order_acquire) < target)
    if (++spins > 50000) {
      spins = 0;
      sched_yield();
    }
}

static void lost_add(lost_ctx *c, const uint64_t *keys, size_t n, size_t r) {
  bk_bloom *b = c->sh->b;
  unsigned char kb[16][8];
  const void *ptrs[16];
  size_t lens[16];
  for (size_t i = 0; i < n; i++) {
    bk__store_le64(kb[i], keys[i]);
    ptrs[i] = kb[i];
    lens[i] = 8;
  }
  bk_status s = BK_OK;
  for (size_t i = 0; i < n && s == BK_OK; i++) {
    bool added;
    bk_hash h;
    switch (r % 4) {
      case 0:
        s = bk_bloom_add(b, kb[i], 8);
        break;
      case 1:
        s = bk_bloom_hash(b, kb[i], 8, &h);
        if (s == BK_OK) s = bk_bloom_add_hash(b, h);
        break;
      case 2:
        s = bk_bloom_add_if_absent(b, kb[i], 8, &added);
        break;
      default:
        if (i == 0) s = bk_bloom_add_many(b, ptrs, lens, n);
        break;
    }
  }
  if (s != BK_OK) c->errors++;
}

static void *lost_writer(void *arg) {
  lost_ctx *c = arg;
  race_shared *sh = c->sh;
  for (size_t r = 0; r < sh->n_spin; r++) {
    lost_meet(sh, 4 * (uint64_t)r + 2); /* the filter is clear */
    lost_add(c, sh->keys + (2 * r + (size_t)c->id) * sh->batch, sh->batch, r);
    lost_meet(sh, 4 * (uint64_t)r + 4); /* both done */
    if (c->id == 0) {
      for (size_t i = 0; i < 2 * sh->batch; i++)
        c->missing += !bloom_has_u64(sh->b, sh->keys[2 * r * sh->batch + i]);
      if (bk_bloom_clear(sh->b) != BK_OK) c->errors++;
    }
  }
  return NULL;
}

static void test_concurrent_writers_lose_nothing(void **state) {
  (void)state;
  const size_t rounds = 20000, per_round = 16;
  uint64_t *keys = malloc(2 * rounds * per_round * sizeof *keys);
  assert_non_null(keys);
  uint64_t rng = bloom_test_seed(0x1057);
  for (size_t i = 0; i < 2 * rounds * per_round; i++)
    keys[i] = bk_test_next(&rng);
  static const char *const names[4] = {"standard", "blocked", "split-block",
                                       "split-block portable"};
  for (int run = 0; run < 4; run++) { /* make_run */
    /* 2^10 bits: 4 split-block blocks, 2 blocked blocks; 32 keys a round
     * set at most 256 (split-block) or 128 of the 1024 bits. */
    bk_bloom *b = make_run(run, 1u << 10, 4, 0);
    race_shared sh = {
        .b = b, .keys = keys, .n_spin = rounds, .batch = per_round};
    atomic_init(&sh.arrivals, 0);
    lost_ctx c0 = {&sh, 0, 0, 0}, c1 = {&sh, 1, 0, 0};
    pthread_t t0, t1;
    assert_int_equal(pthread_create(&t0, NULL, lost_writer, &c0), 0);
    assert_int_equal(pthread_create(&t1, NULL, lost_writer, &c1), 0);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    assert_int_equal(c0.errors + c1.errors, 0);
    print_message("lost updates %s: %zu keys missing of %zu\n", names[run],
                  c0.missing, 2 * rounds * per_round);
    if (c0.missing)
      fail_msg("%s: %zu keys lost by concurrent adds", names[run], c0.missing);
    bk_bloom_destroy(b);
  }
  free(keys);
}

int main(void) {
  bk_test_begin(BLOOM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_if_absent_sequential),
      cmocka_unit_test(test_add_if_absent_race),
      cmocka_unit_test(test_concurrent_add_contains),
      cmocka_unit_test(test_concurrent_writers),
      cmocka_unit_test(test_concurrent_writers_lose_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
