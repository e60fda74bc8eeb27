/* SPDX-License-Identifier: MIT */
/*
 * Tests of the FBF's batch calls (bk_fbf_add_many and friends): each batch
 * size answers as the single calls do, bad arguments, and add_if_absent_many
 * racing itself.
 *
 * Shared helpers: tests/fbf_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "core/internal.h"

#include "fbf_helpers.h"

/* ---- batches ------------------------------------------------------------- */

/* Keys for the batch tests: 8-byte ids (each of 1200 ids about 2.5 times,
 * and every 5th key the one two places back, so also within one batch),
 * every 13th a 21-byte key (the long-hash path), and every 97th the empty
 * key with a NULL pointer. */
#define BATCH_KEYS 3000u
typedef struct batch_keys {
  unsigned char bytes[BATCH_KEYS][21];
  const void *ptr[BATCH_KEYS];
  size_t len[BATCH_KEYS];
} batch_keys;

static void batch_keys_make(batch_keys *bk, uint64_t salt) {
  for (unsigned i = 0; i < BATCH_KEYS; i++) {
    uint64_t id = ((uint64_t)i * 7919u) % 1200u ^ salt;
    memset(bk->bytes[i], (int)(i & 0xff), sizeof bk->bytes[i]);
    bk__store_le64(bk->bytes[i], id);
    bk->ptr[i] = bk->bytes[i];
    bk->len[i] = i % 13 == 5 ? 21 : 8;
    if (i % 97 == 50) {
      bk->ptr[i] = NULL;
      bk->len[i] = 0;
    }
    if (i % 5 == 4) { /* the key two places back, again */
      memcpy(bk->bytes[i], bk->bytes[i - 2], sizeof bk->bytes[i]);
      bk->ptr[i] = bk->ptr[i - 2] ? bk->bytes[i] : NULL;
      bk->len[i] = bk->len[i - 2];
    }
  }
}

/* Batch sizes around the prefetch ring's (8): n < ring, = ring, ring + 1,
 * several rings and not a multiple of it. */
static const size_t batch_sizes[] = {1, 7, 8, 9, 16, 63, 250};

/*
 * Each batch call gives, key by key, what the single-key calls give on a
 * twin FBF (same configuration and seed), through refreshes between
 * batches: the same answers and, at the end, byte-identical states. A key
 * repeated within one insert_if_absent batch is added by its first
 * occurrence only.
 */
static void test_batches_match_single_calls(void **state) {
  (void)state;
  bk_fbf_config cfg = {.m_bits = 1u << 14,
                       .k = 5,
                       .n_past = 3,
                       .refresh_period = 100,
                       .seed = fbf_test_seed(0xBA7C)};
  bk_fbf *a = fbf_make(&cfg), *b = fbf_make(&cfg);
  batch_keys *keys = malloc(sizeof *keys), *probes = malloc(sizeof *probes);
  assert_non_null(keys);
  assert_non_null(probes);
  batch_keys_make(keys, 0);
  batch_keys_make(probes, 600); /* half of them inserted, half not */
  bool got[250], want[250];
  uint64_t now = 0, repeats_refused = 0;
  unsigned batches = 0;
  for (unsigned round = 0; round < 3; round++) {
    size_t pos = 0;
    for (unsigned bi = 0; pos < BATCH_KEYS; bi++, batches++) {
      size_t n = batch_sizes[bi % (sizeof batch_sizes / sizeof *batch_sizes)];
      if (n > BATCH_KEYS - pos) n = BATCH_KEYS - pos;
      const void *const *kp = keys->ptr + pos;
      const size_t *kl = keys->len + pos;
      if (round == 1) {
        /* plain inserts: compared through the states */
        assert_bk_ok(bk_fbf_add_many(a, kp, kl, n));
        for (size_t i = 0; i < n; i++)
          assert_bk_ok(bk_fbf_add(b, kp[i], kl[i]));
      } else {
        memset(got, 0xAA, sizeof got);
        assert_bk_ok(bk_fbf_add_if_absent_many(a, kp, kl, n, got));
        for (size_t i = 0; i < n; i++) {
          assert_bk_ok(bk_fbf_add_if_absent(b, kp[i], kl[i], &want[i]));
          if (got[i] != want[i])
            fail_msg("round %u batch %u key %zu: batch %d, single %d", round,
                     batches, i, got[i], want[i]);
          /* a later copy of a key in this batch is never new */
          for (size_t j = 0; j < i; j++)
            if (kl[j] == kl[i] &&
                (kl[i] == 0 || memcmp(kp[j], kp[i], kl[i]) == 0)) {
              assert_false(got[i]);
              repeats_refused++;
              break;
            }
        }
      }
      /* lookups of present and absent keys, by key and by digest */
      size_t pn = n < 250 ? n : 250;
      const void *const *pp = probes->ptr + pos;
      const size_t *pl = probes->len + pos;
      memset(got, 0xAA, sizeof got);
      assert_bk_ok(bk_fbf_contains_many(a, pp, pl, pn, got));
      bk_hash hs[250];
      bool got_h[250];
      for (size_t i = 0; i < pn; i++) {
        assert_bk_ok(bk_fbf_contains(b, pp[i], pl[i], &want[i]));
        assert_int_equal(got[i], want[i]);
        assert_bk_ok(bk_fbf_hash(a, pp[i], pl[i], &hs[i]));
      }
      assert_bk_ok(bk_fbf_contains_many_hash(a, hs, pn, got_h));
      for (size_t i = 0; i < pn; i++) assert_int_equal(got_h[i], want[i]);
      pos += n;
      if (bi % 3 == 2) {
        now += 37;
        assert_bk_ok(bk_fbf_advance(a, now));
        assert_bk_ok(bk_fbf_advance(b, now));
      }
    }
  }
  bk_fbf_info ia = fbf_info_of(a);
  assert_true(ia.refreshes >= 10);
  assert_true(repeats_refused > 100);
  bk_test_assert_same_state(&bk_test_codec_fbf, a, b);
  free(keys);
  free(probes);
  bk_fbf_destroy(a);
  bk_fbf_destroy(b);
}

/* Bad batches: BK_EINVAL, with nothing inserted and no output written. */
static void test_batch_bad_arguments(void **state) {
  (void)state;
  bk_fbf_config cfg = {.m_bits = 4096,
                       .k = 3,
                       .n_past = 2,
                       .refresh_period = 100,
                       .seed = fbf_test_seed(0xBADB)};
  bk_fbf *f = fbf_make(&cfg);
  uint64_t ids[20];
  const void *ptr[20];
  size_t len[20];
  for (unsigned i = 0; i < 20; i++) {
    ids[i] = 1000 + i;
    ptr[i] = &ids[i];
    len[i] = sizeof ids[i];
  }
  bool out[20];
  bk_hash hs[20];
  size_t l0 = 0;
  unsigned char *before = fbf_blob_of(f, &l0);
  assert_bk_status(bk_fbf_contains_many(NULL, ptr, len, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_add_many(NULL, ptr, len, 20), BK_EINVAL);
  assert_bk_status(bk_fbf_add_if_absent_many(NULL, ptr, len, 20, out),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many_hash(NULL, hs, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many(f, NULL, len, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many(f, ptr, NULL, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many(f, ptr, len, 20, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many_hash(f, NULL, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many_hash(f, hs, 20, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_add_many(f, NULL, len, 20), BK_EINVAL);
  assert_bk_status(bk_fbf_add_many(f, ptr, NULL, 20), BK_EINVAL);
  assert_bk_status(bk_fbf_add_if_absent_many(f, ptr, len, 20, NULL), BK_EINVAL);
  /* a NULL key with a length, after 12 valid ones: none is inserted */
  ptr[12] = NULL;
  memset(out, 0x5A, sizeof out);
  assert_bk_status(bk_fbf_add_if_absent_many(f, ptr, len, 20, out), BK_EINVAL);
  assert_bk_status(bk_fbf_add_many(f, ptr, len, 20), BK_EINVAL);
  assert_bk_status(bk_fbf_contains_many(f, ptr, len, 20, out), BK_EINVAL);
  for (unsigned i = 0; i < 20; i++)
    assert_int_equal(((unsigned char *)out)[i], 0x5A);
  bk_test_assert_serializes_to(&bk_test_codec_fbf, f, before, l0);
  /* a Murmur3 key over 2^31 - 1 bytes (rejected before it is read) */
  bk_fbf_config mc = cfg;
  mc.hash_alg = BK_HASH_MURMUR3;
  mc.seed = 7;
  bk_fbf *fm = fbf_make(&mc);
  const void *big_ptr[2] = {&ids[0], &ids[1]};
  size_t big_len[2] = {sizeof ids[0], (size_t)INT32_MAX + 1};
  assert_bk_status(bk_fbf_contains_many(fm, big_ptr, big_len, 2, out),
                   BK_EINVAL);
  assert_bk_status(bk_fbf_add_many(fm, big_ptr, big_len, 2), BK_EINVAL);
  assert_bk_status(bk_fbf_add_if_absent_many(fm, big_ptr, big_len, 2, out),
                   BK_EINVAL);
  bool one = true;
  assert_bk_ok(bk_fbf_contains(fm, &ids[0], sizeof ids[0], &one));
  assert_false(one); /* the valid first key was not inserted */
  bk_fbf_destroy(fm);
  /* n = 0: nothing to do, whatever the arrays */
  assert_bk_ok(bk_fbf_contains_many(f, NULL, NULL, 0, NULL));
  assert_bk_ok(bk_fbf_contains_many_hash(f, NULL, 0, NULL));
  assert_bk_ok(bk_fbf_add_many(f, NULL, NULL, 0));
  assert_bk_ok(bk_fbf_add_if_absent_many(f, NULL, NULL, 0, NULL));
  free(before);
  bk_fbf_destroy(f);
}

/* Two threads insert_if_absent_many the same ids: in rounds that start
 * together (a spin barrier), both take the round's 16 ids in one batch, so
 * their checks of one id often overlap. Every id must be new to exactly
 * one of them. */
enum { BATCH_RACE_B = 16 };
typedef struct batch_race {
  bk_fbf *f;
  unsigned n_ids;
  unsigned char *added[2];
  _Atomic unsigned arrived;
  _Atomic uint64_t errors;
  _Atomic uint64_t tick; /* a logical clock: calls' starts and ends */
  uint64_t *span[2];     /* per round: start tick << 32 | end tick */
} batch_race;

static void *batch_racer(void *arg) {
  const bk_test_worker *a = arg;
  batch_race *br = a->shared;
  uint64_t ids[BATCH_RACE_B];
  const void *ptr[BATCH_RACE_B];
  size_t len[BATCH_RACE_B];
  bool added[BATCH_RACE_B];
  for (unsigned r = 0; r * BATCH_RACE_B < br->n_ids; r++) {
    unsigned j = r * BATCH_RACE_B, n = BATCH_RACE_B;
    if (n > br->n_ids - j) n = br->n_ids - j;
    for (unsigned i = 0; i < n; i++) {
      ids[i] = j + i;
      ptr[i] = &ids[i];
      len[i] = sizeof ids[i];
    }
    atomic_fetch_add(&br->arrived, 1);
    for (unsigned spins = 0; atomic_load(&br->arrived) < 2 * (r + 1);)
      if (++spins % 4096 == 0) sched_yield();
    uint64_t t0 = atomic_fetch_add(&br->tick, 1);
    if (bk_fbf_add_if_absent_many(br->f, ptr, len, n, added) != BK_OK)
      atomic_fetch_add(&br->errors, 1);
    uint64_t t1 = atomic_fetch_add(&br->tick, 1);
    br->span[a->tid][r] = t0 << 32 | t1;
    for (unsigned i = 0; i < n; i++) br->added[a->tid][j + i] = added[i];
  }
  return NULL;
}

/* One race on a fresh FBF; returns the rounds in which the two calls
 * overlapped in time (each started before the other ended). */
static unsigned batch_race_once(uint64_t salt) {
  bk_fbf_config cfg = {.m_bits = 1u << 22,
                       .k = 10,
                       .n_past = 1,
                       .refresh_period = 2000,
                       .seed = fbf_test_seed(0xBA7D ^ salt)};
  batch_race br;
  memset(&br, 0, sizeof br);
  br.f = fbf_make(&cfg);
  br.n_ids = TSAN_BUILD ? 5000 : SLOW_BUILD ? 10000 : 40000;
  unsigned rounds = (br.n_ids + BATCH_RACE_B - 1) / BATCH_RACE_B;
  br.added[0] = calloc(br.n_ids, 1);
  br.added[1] = calloc(br.n_ids, 1);
  br.span[0] = calloc(rounds, sizeof *br.span[0]);
  br.span[1] = calloc(rounds, sizeof *br.span[1]);
  assert_non_null(br.added[0]);
  assert_non_null(br.added[1]);
  assert_non_null(br.span[0]);
  assert_non_null(br.span[1]);
  pthread_t th[2];
  bk_test_worker args[2] = {{&br, 0}, {&br, 1}};
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, batch_racer, &args[i]), 0);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  unsigned both = 0, neither = 0, overlapped = 0;
  for (unsigned j = 0; j < br.n_ids; j++) {
    unsigned n = br.added[0][j] + br.added[1][j];
    both += n == 2;
    neither += n == 0;
  }
  for (unsigned r = 0; r < rounds; r++) {
    uint64_t a0 = br.span[0][r] >> 32, a1 = br.span[0][r] & UINT32_MAX;
    uint64_t b0 = br.span[1][r] >> 32, b1 = br.span[1][r] & UINT32_MAX;
    overlapped += a0 < b1 && b0 < a1;
  }
  print_message(
      "insert_if_absent_many race: %u ids in %u rounds, %u of them "
      "with the calls overlapping; %u told new twice, %u never\n",
      br.n_ids, rounds, overlapped, both, neither);
  assert_int_equal(atomic_load(&br.errors), 0);
  assert_int_equal(both, 0);
  assert_int_equal(neither, 0);
  free(br.added[0]);
  free(br.added[1]);
  free(br.span[0]);
  free(br.span[1]);
  bk_fbf_destroy(br.f);
  return overlapped;
}

/* Runs until the calls overlapped in a tenth of the rounds, at most 6
 * times: on a shared machine the two threads sometimes get one CPU between
 * them, and then run their batches one after the other. */
static void test_concurrent_insert_if_absent_many(void **state) {
  (void)state;
  unsigned attempts = 0, overlapped = 0;
  unsigned rounds = (TSAN_BUILD   ? 5000
                     : SLOW_BUILD ? 10000
                                  : 40000) /
                    BATCH_RACE_B;
  while (attempts < 6 && overlapped * 10 < rounds)
    overlapped = batch_race_once(attempts++);
  if (overlapped * 10 < rounds)
    print_message(
        "note: the threads never overlapped in %u attempts (one "
        "CPU between them); exactly-once held anyway\n",
        attempts);
}

int main(void) {
  bk_test_begin(FBF_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batches_match_single_calls),
      cmocka_unit_test(test_batch_bad_arguments),
      cmocka_unit_test(test_concurrent_insert_if_absent_many),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
