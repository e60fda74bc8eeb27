/* SPDX-License-Identifier: MIT */
/*
 * Tests of bk_idem_add_many, the batch add: for every strategy a batch
 * gives what the same ops as single bk_idem_add calls give (values,
 * outcomes, statuses, and byte-identical snapshots after), with retries
 * inside a batch and across batches, TOO_OLD under WINDOW and BK_ERANGE
 * ops among them; a batch's arguments and its stop at the first hard error
 * (BK_ENOMEM, or BK_ERANGE without statuses); and two threads batching
 * overlapping op streams, each op applied exactly once.
 *
 * Shared helpers: tests/idem_helpers.h. BK_TEST_FILTER=<cmocka glob> runs a
 * subset; BK_TEST_SEED overrides the seed (printed at start).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"

#include "idem_helpers.h"

/* ---- an op stream -----------------------------------------------------------
 */

/* n ops: op j is key index key[j] (bytes in keys[j]), id ids[j], deltas[j]. */
typedef struct stream {
  size_t n;
  unsigned char (*buf)[KEY_BUF];
  const void **keys;
  size_t *lens;
  bk_idem_op_id *ids;
  int64_t *deltas;
} stream;

static void stream_alloc(stream *s, size_t n) {
  s->n = n;
  s->buf = calloc(n, sizeof *s->buf);
  s->keys = calloc(n, sizeof *s->keys);
  s->lens = calloc(n, sizeof *s->lens);
  s->ids = calloc(n, sizeof *s->ids);
  s->deltas = calloc(n, sizeof *s->deltas);
  assert_true(s->buf && s->keys && s->lens && s->ids && s->deltas);
}

static void stream_free(stream *s) {
  free(s->buf);
  free(s->keys);
  free(s->lens);
  free(s->ids);
  free(s->deltas);
}

static void stream_set(stream *s, size_t j, uint64_t key, bk_idem_op_id id,
                       int64_t delta) {
  s->lens[j] = key_of(key, s->buf[j]);
  s->keys[j] = s->buf[j];
  s->ids[j] = id;
  s->deltas[j] = delta;
}

/* A stream of n ops from 8 clients numbering in order, on 24 keys, with
 * retries: an op is a copy of one of the last 8 (often inside the same
 * batch) with probability 1/8, of one up to 400 back (an earlier batch)
 * with 1/16. Key 0 takes deltas of about INT64_MAX / 3, so it overflows
 * (BK_ERANGE, and retries of the op that took it to its limit); client 7
 * jumps its seq back by 3 W now and then: below its window (WINDOW:
 * TOO_OLD, HYBRID: the FBF decides). Deltas of the others are small,
 * positive and negative. */
static void stream_make(stream *s, size_t n, uint64_t seed) {
  stream_alloc(s, n);
  uint64_t rng = seed, seqs[8] = {0};
  for (size_t j = 0; j < n; j++) {
    uint64_t r = bk_test_next(&rng);
    if (j >= 8 && r % 8 == 0) {
      size_t from = j - 1 - (size_t)(r >> 8) % 8;
      stream_set(s, j, 0, s->ids[from], s->deltas[from]);
      memcpy(s->buf[j], s->buf[from], KEY_BUF);
      s->lens[j] = s->lens[from];
      continue;
    }
    if (j >= 400 && r % 16 == 1) {
      size_t from = j - 1 - (size_t)(r >> 8) % 400;
      stream_set(s, j, 0, s->ids[from], s->deltas[from]);
      memcpy(s->buf[j], s->buf[from], KEY_BUF);
      s->lens[j] = s->lens[from];
      continue;
    }
    uint64_t c = (r >> 16) % 8, key = (r >> 24) % 24;
    uint64_t seq = seqs[c]++;
    if (c == 7 && (r >> 40) % 32 == 0 && seq > 3 * 64) seq -= 3 * 64;
    int64_t delta = key == 0 ? INT64_MAX / 3 + (int64_t)(r >> 48)
                             : (int64_t)((r >> 48) % 11) - 5;
    stream_set(s, j, key, (bk_idem_op_id){c, seq}, delta);
  }
}

/* ---- batch == single
 * ----------------------------------------------------------
 */

/* Both tables serialize to the same bytes. */
static void expect_same_blob(const bk_idem *a, const bk_idem *b) {
  size_t la, lb;
  unsigned char *ba = idem_blob_of(a, &la), *bb = idem_blob_of(b, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(ba, bb, la);
  free(ba);
  free(bb);
}

static bk_idem_config batch_config(bk_idem_strategy s, uint64_t seed) {
  bk_idem_config c = generous(s, 200, seed);
  c.window = 64; /* client 7's jumps fall below it */
  return c;
}

/* The stream through single adds into `a` and through batches of random
 * sizes (0 included) into `b`, the clock of both moved alike between
 * batches; every op's result must agree, and so must the snapshots. */
static void check_batch_equals_single(bk_idem_strategy strat, uint64_t seed,
                                      bool with_statuses) {
  const size_t n = SLOW_BUILD ? 3000 : 12000;
  stream s;
  stream_make(&s, n, seed);
  bk_idem_config cfg = batch_config(strat, seed);
  bk_idem *a = idem_make(&cfg), *b = idem_make(&cfg);
  int64_t *va = calloc(n, sizeof *va), *vb = calloc(n, sizeof *vb);
  bk_idem_outcome *oa = calloc(n, sizeof *oa), *ob = calloc(n, sizeof *ob);
  bk_status *sa = calloc(n, sizeof *sa), *sb = calloc(n, sizeof *sb);
  assert_true(va && vb && oa && ob && sa && sb);
  uint64_t rng = seed ^ 0xBA7C4, now = 0;
  size_t erange = 0, too_old = 0, dups = 0;
  for (size_t i = 0; i < n;) {
    size_t m = (size_t)(bk_test_next(&rng) % 97);
    if (m > n - i) m = n - i;
    for (size_t j = i; j < i + m; j++) {
      sa[j] = bk_idem_add(a, s.keys[j], s.lens[j], s.ids[j], s.deltas[j],
                          &va[j], &oa[j]);
      if (sa[j] != BK_OK && sa[j] != BK_ERANGE)
        fail_msg("%s: single add %zu: %s", strat_name(strat), j,
                 bk_status_name(sa[j]));
    }
    if (with_statuses) {
      size_t done = SIZE_MAX;
      assert_bk_status(
          bk_idem_add_many(b, s.keys + i, s.lens + i, s.ids + i, s.deltas + i,
                           m, vb + i, ob + i, sb + i, &done),
          BK_OK);
      assert_int_equal(done, m);
    } else {
      /* Without statuses a batch stops at an op out of range: the rest
       * of the chunk goes in again after it, as a caller skipping it
       * would send it. */
      for (size_t j = i; j < i + m;) {
        size_t done = SIZE_MAX;
        bk_status st =
            bk_idem_add_many(b, s.keys + j, s.lens + j, s.ids + j, s.deltas + j,
                             i + m - j, vb + j, ob + j, NULL, &done);
        for (size_t k = j; k < j + done; k++) sb[k] = BK_OK;
        if (done < i + m - j) {
          assert_bk_status(st, BK_ERANGE);
          sb[j + done] = BK_ERANGE;
          j += done + 1;
        } else {
          assert_bk_status(st, BK_OK);
          j += done;
        }
      }
    }
    i += m;
    /* A step of 0 to 9: the windows' ticks and the filters' refreshes
     * move (the timeout is 200) while retries stay within it. */
    now += bk_test_next(&rng) % 10;
    assert_bk_status(bk_idem_advance(a, now), BK_OK);
    assert_bk_status(bk_idem_advance(b, now), BK_OK);
  }
  for (size_t j = 0; j < n; j++) {
    if (sa[j] != sb[j])
      fail_msg("%s op %zu: status %s single, %s batch", strat_name(strat), j,
               bk_status_name(sa[j]), bk_status_name(sb[j]));
    if (sa[j] != BK_OK) {
      erange++;
      continue;
    }
    if (va[j] != vb[j] || oa[j] != ob[j])
      fail_msg("%s op %zu: single (%lld, %d), batch (%lld, %d)",
               strat_name(strat), j, (long long)va[j], (int)oa[j],
               (long long)vb[j], (int)ob[j]);
    too_old += oa[j] == BK_IDEM_TOO_OLD;
    dups += oa[j] == BK_IDEM_DUPLICATE;
  }
  /* The stream reaches what it was made for. */
  assert_true(erange > 0);
  if (strat == BK_IDEM_WINDOW) assert_true(too_old > 0);
  if (strat != BK_IDEM_NONE) assert_true(dups > n / 16);
  expect_same_blob(a, b);
  free(va);
  free(vb);
  free(oa);
  free(ob);
  free(sa);
  free(sb);
  bk_idem_destroy(a);
  bk_idem_destroy(b);
  stream_free(&s);
}

static void test_batch_equals_single(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT(ALL_STRATEGIES); i++)
    check_batch_equals_single(ALL_STRATEGIES[i], idem_test_seed(0xB0 + i),
                              true);
}

static void test_batch_without_statuses(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT(ALL_STRATEGIES); i++)
    check_batch_equals_single(ALL_STRATEGIES[i], idem_test_seed(0xC0 + i),
                              false);
}

/* ---- arguments and errors
 * ------------------------------------------------------
 */

static void test_batch_arguments(void **state) {
  (void)state;
  bk_idem_config cfg = batch_config(BK_IDEM_HYBRID, idem_test_seed(1));
  bk_idem *t = idem_make(&cfg);
  const void *keys[4] = {"a", "b", "c", "d"};
  size_t lens[4] = {1, 1, 1, 1};
  bk_idem_op_id ids[4] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}};
  size_t done = 77;
  /* n = 0: nothing to do, arrays may be NULL. */
  assert_bk_status(
      bk_idem_add_many(t, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, &done),
      BK_OK);
  assert_int_equal(done, 0);
  done = 77;
  assert_bk_status(
      bk_idem_add_many(NULL, keys, lens, ids, NULL, 4, NULL, NULL, NULL, &done),
      BK_EINVAL);
  assert_int_equal(done, 0);
  assert_bk_status(
      bk_idem_add_many(t, NULL, lens, ids, NULL, 4, NULL, NULL, NULL, NULL),
      BK_EINVAL);
  assert_bk_status(
      bk_idem_add_many(t, keys, NULL, ids, NULL, 4, NULL, NULL, NULL, NULL),
      BK_EINVAL);
  assert_bk_status(
      bk_idem_add_many(t, keys, lens, NULL, NULL, 4, NULL, NULL, NULL, NULL),
      BK_EINVAL);
  /* A bad key anywhere fails the batch before any op: a NULL key, an
   * empty one, one over max_key_len. */
  const void *with_null[4] = {"a", "b", NULL, "d"};
  size_t with_empty[4] = {1, 1, 1, 0};
  size_t too_long[4] = {1, BK_IDEM_KEY_MAX + 1, 1, 1};
  assert_bk_status(bk_idem_add_many(t, with_null, lens, ids, NULL, 4, NULL,
                                    NULL, NULL, &done),
                   BK_EINVAL);
  assert_bk_status(bk_idem_add_many(t, keys, with_empty, ids, NULL, 4, NULL,
                                    NULL, NULL, &done),
                   BK_EINVAL);
  assert_bk_status(bk_idem_add_many(t, keys, too_long, ids, NULL, 4, NULL, NULL,
                                    NULL, &done),
                   BK_EINVAL);
  assert_int_equal(done, 0);
  bk_idem_info in = idem_info_of(t);
  assert_int_equal(in.applied + in.duplicates + in.keys, 0);
  /* Every result array optional; deltas NULL: +1 each. */
  assert_bk_status(
      bk_idem_add_many(t, keys, lens, ids, NULL, 4, NULL, NULL, NULL, NULL),
      BK_OK);
  int64_t values[4];
  bk_idem_outcome outcomes[4];
  const int64_t deltas[4] = {5, 5, 5, 5};
  assert_bk_status(bk_idem_add_many(t, keys, lens, ids, deltas, 4, values,
                                    outcomes, NULL, &done),
                   BK_OK);
  assert_int_equal(done, 4);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(values[i], 1);
    assert_int_equal(outcomes[i], BK_IDEM_DUPLICATE);
  }
  bk_idem_destroy(t);
}

/* BK_ERANGE: with statuses the op is marked and the batch goes on (its
 * values and outcomes entries untouched); without, the batch stops there
 * and nothing after it is looked at. */
static void test_batch_erange(void **state) {
  (void)state;
  bk_idem_config cfg = batch_config(BK_IDEM_FBF, idem_test_seed(2));
  bk_idem *t = idem_make(&cfg);
  const void *keys[4] = {"k", "k", "new", "k"};
  size_t lens[4] = {1, 1, 3, 1};
  bk_idem_op_id ids[4] = {{1, 1}, {1, 2}, {1, 3}, {1, 1}};
  int64_t deltas[4] = {INT64_MAX - 1, 2, 7, INT64_MAX - 1};
  int64_t values[4] = {-9, -9, -9, -9};
  bk_idem_outcome outcomes[4] = {0, 0, 0, 0};
  bk_status statuses[4] = {BK_EINVAL, BK_EINVAL, BK_EINVAL, BK_EINVAL};
  size_t done = 0;
  assert_bk_status(bk_idem_add_many(t, keys, lens, ids, deltas, 4, values,
                                    outcomes, statuses, &done),
                   BK_OK);
  assert_int_equal(done, 4);
  assert_bk_status(statuses[0], BK_OK);
  assert_int_equal(values[0], INT64_MAX - 1);
  assert_bk_status(statuses[1], BK_ERANGE);
  assert_int_equal(values[1], -9);
  assert_int_equal(outcomes[1], 0);
  assert_bk_status(statuses[2], BK_OK);
  assert_int_equal(values[2], 7);
  /* The retry of op (1, 1) at the limit is a duplicate, not out of range. */
  assert_bk_status(statuses[3], BK_OK);
  assert_int_equal(outcomes[3], BK_IDEM_DUPLICATE);
  assert_int_equal(values[3], INT64_MAX - 1);
  bk_idem_destroy(t);

  t = idem_make(&cfg);
  keys[2] = "other";
  lens[2] = 5;
  assert_bk_status(bk_idem_add_many(t, keys, lens, ids, deltas, 4, values,
                                    outcomes, NULL, &done),
                   BK_ERANGE);
  assert_int_equal(done, 1);
  int64_t v;
  assert_bk_status(bk_idem_get(t, "other", 5, &v), BK_ENOTFOUND);
  /* Op (1, 2) was not recorded: with a delta in range it applies. */
  assert_int_equal(ADD(t, "k", 1, 2, -1, &v), BK_IDEM_APPLIED);
  assert_int_equal(v, INT64_MAX - 2);
  bk_idem_destroy(t);
}

/* BK_ENOMEM on op i: ops before it done, op i and those after it not;
 * resumed at *done once memory is back, the table is the one single adds
 * make. Long keys (a heap copy each) so every new key allocates. */
static void test_batch_enomem(void **state) {
  (void)state;
  enum { N = 64 };
  for (size_t si = 0; si < COUNT(ALL_STRATEGIES); si++) {
    bk_idem_strategy strat = ALL_STRATEGIES[si];
    stream s;
    stream_alloc(&s, N);
    for (size_t j = 0; j < N; j++) {
      stream_set(&s, j, 1000 + j, opid(j % 3, j), (int64_t)j + 1);
      memset(s.buf[j] + s.lens[j], 'x', 24); /* 32 bytes and more */
      s.lens[j] += 24;
    }
    bk_test_alloc al;
    bk_allocator alloc = bk_test_allocator(&al, 0);
    bk_idem_config cfg = batch_config(strat, idem_test_seed(3));
    cfg.allocator = &alloc;
    bk_idem *t = idem_make(&cfg);
    bk_idem_config ref_cfg = cfg;
    ref_cfg.allocator = NULL;
    bk_idem *ref = idem_make(&ref_cfg);
    al.fail_at = al.calls + 20;
    al.fail_sticky = true;
    size_t done = SIZE_MAX;
    int64_t values[N];
    bk_idem_outcome outcomes[N];
    bk_status st = bk_idem_add_many(t, s.keys, s.lens, s.ids, s.deltas, N,
                                    values, outcomes, NULL, &done);
    assert_bk_status(st, BK_ENOMEM);
    assert_true(done > 0 && done < N);
    for (size_t j = 0; j < N; j++) {
      int64_t v;
      bk_status g = bk_idem_get(t, s.keys[j], s.lens[j], &v);
      if (j < done) {
        assert_bk_status(g, BK_OK);
        assert_int_equal(v, s.deltas[j]);
        assert_int_equal(values[j], s.deltas[j]);
        assert_int_equal(outcomes[j], BK_IDEM_APPLIED);
      } else {
        assert_bk_status(g, BK_ENOTFOUND);
      }
    }
    al.fail_at = 0;
    al.fail_sticky = false;
    size_t first = done;
    assert_bk_status(
        bk_idem_add_many(t, s.keys + first, s.lens + first, s.ids + first,
                         s.deltas + first, N - first, NULL, NULL, NULL, &done),
        BK_OK);
    assert_int_equal(done, N - first);
    for (size_t j = 0; j < N; j++)
      assert_int_equal(
          add_ok(ref, s.keys[j], s.lens[j], s.ids[j], s.deltas[j], NULL),
          BK_IDEM_APPLIED);
    /* Equal tables (the allocator is not in the snapshot). */
    expect_same_blob(t, ref);
    bk_idem_destroy(t);
    bk_idem_destroy(ref);
    assert_int_equal(al.live, 0);
    stream_free(&s);
  }
}

/* ---- two threads
 * ---------------------------------------------------------------
 */

typedef struct batch_race {
  bk_idem *t;
  const stream *s;
  unsigned char *outcome[2]; /* a bk_idem_outcome per op */
  _Atomic size_t progress[2];
  _Atomic uint64_t errors;
} batch_race;

/* Thread `tid` sends the whole stream in batches (thread 0 of 1 to 97 ops,
 * thread 1 of 64), in loose lockstep with the other so their copies of an
 * op really race. */
static void *batch_racer(void *p) {
  const bk_test_worker *w = p;
  batch_race *rc = w->shared;
  const unsigned me = w->tid, other = me ^ 1u;
  const size_t n = rc->s->n;
  uint64_t rng = idem_test_seed(0xD0 + me);
  for (size_t i = 0; i < n;) {
    while (atomic_load(&rc->progress[other]) + 128 < i &&
           atomic_load(&rc->progress[other]) < n)
      sched_yield();
    size_t m = me == 0 ? 1 + (size_t)(bk_test_next(&rng) % 97) : 64;
    if (m > n - i) m = n - i;
    size_t done = 0;
    bk_idem_outcome oc[97];
    if (bk_idem_add_many(rc->t, rc->s->keys + i, rc->s->lens + i,
                         rc->s->ids + i, rc->s->deltas + i, m, NULL, oc, NULL,
                         &done) != BK_OK ||
        done != m)
      atomic_fetch_add(&rc->errors, 1);
    for (size_t j = 0; j < m; j++)
      rc->outcome[me][i + j] = (unsigned char)oc[j];
    i += m;
    atomic_store(&rc->progress[me], i);
  }
  atomic_store(&rc->progress[me], n + 1000);
  return NULL;
}

static void test_batch_race(void **state) {
  (void)state;
  const size_t n = TSAN_BUILD ? 2000 : SLOW_BUILD ? 4000 : 9000;
  /* Distinct op ids (no retries in the stream: the other thread's copy is
   * the retry), 16 keys, 5 clients in order, deltas 1..7. */
  stream s;
  stream_alloc(&s, n);
  uint64_t rng = idem_test_seed(0xE0);
  for (size_t j = 0; j < n; j++)
    stream_set(&s, j, bk_test_next(&rng) % 16, opid(1 + j % 5, j / 5),
               (int64_t)(j % 7) + 1);
  const bk_idem_strategy deduping[] = {BK_IDEM_HYBRID, BK_IDEM_WINDOW,
                                       BK_IDEM_FBF,    BK_IDEM_FBF_ADAPTIVE,
                                       BK_IDEM_APBF,   BK_IDEM_RBF};
  for (size_t si = 0; si < COUNT(deduping); si++) {
    bk_idem_strategy strat = deduping[si];
    batch_race rc;
    memset(&rc, 0, sizeof rc);
    bk_idem_config cfg = generous(strat, 1000, idem_test_seed(si));
    rc.t = idem_make(&cfg);
    rc.s = &s;
    pthread_t th[2];
    bk_test_worker args[2];
    for (unsigned i = 0; i < 2; i++) {
      rc.outcome[i] = calloc(n, sizeof *rc.outcome[i]);
      assert_non_null(rc.outcome[i]);
      args[i].shared = &rc;
      args[i].tid = i;
      assert_int_equal(pthread_create(&th[i], NULL, batch_racer, &args[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++)
      assert_int_equal(pthread_join(th[i], NULL), 0);
    int64_t want[16] = {0};
    race_tally r = race_tally_of(rc.outcome[0], rc.outcome[1], n);
    for (size_t j = 0; j < n; j++) {
      uint64_t k;
      assert_true(key_index(s.keys[j], s.lens[j], &k));
      want[k] += s.deltas[j];
    }
    if (atomic_load(&rc.errors) || r.both || r.neither)
      fail_msg("%s: %llu errors, %zu ops applied twice, %zu never",
               strat_name(strat), (unsigned long long)atomic_load(&rc.errors),
               r.both, r.neither);
    if (strat != BK_IDEM_WINDOW) assert_int_equal(r.too_old, 0);
    for (uint64_t k = 0; k < 16; k++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(k, kb);
      if (want[k]) assert_int_equal(get_ok(rc.t, kb, kl), want[k]);
    }
    bk_idem_info in = idem_info_of(rc.t);
    assert_int_equal(in.applied, n);
    assert_int_equal(in.duplicates + r.too_old, n);
    free(rc.outcome[0]);
    free(rc.outcome[1]);
    bk_idem_destroy(rc.t);
  }
  stream_free(&s);
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_equals_single),
      cmocka_unit_test(test_batch_without_statuses),
      cmocka_unit_test(test_batch_arguments),
      cmocka_unit_test(test_batch_erange),
      cmocka_unit_test(test_batch_enomem),
      cmocka_unit_test(test_batch_race),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
