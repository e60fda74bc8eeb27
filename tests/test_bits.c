/* SPDX-License-Identifier: MIT */
/*
 * bk_bits: single-bit operations against a reference model, boundaries,
 * whole-array operations, the serialized form (round trip, a golden blob of
 * format version 1, the codec harness's hostile input, and the parameter
 * rules field by field), concurrent
 * test-and-set, OOM injection and a large array.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only xxHash: lets the test recompute the XXH3-64 trailer of a blob
 * it has tampered with, without an extra link line. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/bits.h"
#include "core/internal.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------- */

static bk_bits *make_bits(uint64_t n) {
  bk_bits *b = NULL;
  assert_bk_ok(bk_bits_create(&b, n, NULL));
  assert_non_null(b);
  return b;
}

static bool get_bit(const bk_bits *b, uint64_t i) {
  bool v = false;
  assert_bk_ok(bk_bits_test(b, i, &v));
  return v;
}

static uint64_t popcount(const bk_bits *b) {
  uint64_t c = UINT64_MAX;
  assert_bk_ok(bk_bits_popcount(b, &c));
  return c;
}

static unsigned char *serialize(const bk_bits *b, size_t *len) {
  return bk_test_serialize(&bk_test_codec_bits, b, len);
}

static bk_status try_load(const unsigned char *buf, size_t len, bk_bits **out) {
  return bk_test_codec_load(&bk_test_codec_bits, buf, len, (void **)out);
}

/* ---- create, size, bad arguments ----------------------------------------- */

static void test_create_args(void **state) {
  (void)state;
  bk_bits *sentinel = (bk_bits *)(uintptr_t)0x1234;
  bk_bits *b = sentinel;
  assert_bk_status(bk_bits_create(NULL, 10, NULL), BK_EINVAL);
  assert_bk_status(bk_bits_create(&b, 0, NULL), BK_EINVAL);
  assert_ptr_equal(b, sentinel);
  assert_bk_status(bk_bits_create(&b, BK_BITS_MAX + 1, NULL), BK_EINVAL);
  assert_bk_status(bk_bits_create(&b, UINT64_MAX, NULL), BK_EINVAL);
  assert_ptr_equal(b, sentinel);

  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  bk_allocator no_alloc = al, no_free = al;
  no_alloc.alloc = NULL;
  no_free.free = NULL;
  assert_bk_status(bk_bits_create(&b, 10, &no_alloc), BK_EINVAL);
  assert_bk_status(bk_bits_create(&b, 10, &no_free), BK_EINVAL);
  assert_ptr_equal(b, sentinel);
  assert_int_equal(st.live, 0);

  /* realloc may be NULL */
  bk_allocator no_realloc = al;
  no_realloc.realloc = NULL;
  assert_bk_ok(bk_bits_create(&b, 10, &no_realloc));
  assert_true(st.live > 0); /* the allocator is really used */
  bk_bits_destroy(b);
  assert_int_equal(st.live, 0);

  bk_bits_destroy(NULL); /* does nothing */
  assert_int_equal(bk_bits_size(NULL), 0);
}

static void test_size_and_memory(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 63, 64, 65, 511, 512, 513, 100003};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    bk_bits *b = make_bits(sizes[i]);
    assert_int_equal(bk_bits_size(b), sizes[i]);
    assert_true(bk_bits_memory(b) >= (sizes[i] + 7) / 8);
    assert_int_equal(popcount(b), 0);
    bk_bits_destroy(b);
  }
}

static void test_null_args(void **state) {
  (void)state;
  bk_bits *b = make_bits(100);
  bool v;
  uint64_t c;
  assert_bk_status(bk_bits_set(NULL, 0), BK_EINVAL);
  assert_bk_status(bk_bits_clear(NULL, 0), BK_EINVAL);
  assert_bk_status(bk_bits_test(NULL, 0, &v), BK_EINVAL);
  assert_bk_status(bk_bits_test(b, 0, NULL), BK_EINVAL);
  assert_bk_status(bk_bits_test_and_set(NULL, 0, &v), BK_EINVAL);
  assert_bk_status(bk_bits_test_and_set(b, 0, NULL), BK_EINVAL);
  assert_false(get_bit(b, 0)); /* the failed test_and_set set nothing */
  assert_bk_status(bk_bits_popcount(NULL, &c), BK_EINVAL);
  assert_bk_status(bk_bits_popcount(b, NULL), BK_EINVAL);
  assert_bk_status(bk_bits_clear_all(NULL), BK_EINVAL);
  assert_bk_status(bk_bits_union(NULL, b), BK_EINVAL);
  assert_bk_status(bk_bits_union(b, NULL), BK_EINVAL);
  assert_bk_status(bk_bits_intersect(NULL, b), BK_EINVAL);
  assert_bk_status(bk_bits_intersect(b, NULL), BK_EINVAL);
  bk_test_codec_arguments(&bk_test_codec_bits, b); /* the codec's */
  bk_bits_destroy(b);
}

/* ---- single-bit operations ----------------------------------------------- */

static void test_boundaries(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 2, 63, 64, 65, 127, 128, 129, 1000, 4097};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    uint64_t n = sizes[s];
    bk_bits *b = make_bits(n);
    bool v = true;
    /* last valid index */
    assert_bk_ok(bk_bits_set(b, n - 1));
    assert_true(get_bit(b, n - 1));
    assert_int_equal(popcount(b), 1);
    if (n > 1) assert_false(get_bit(b, n - 2));
    assert_bk_ok(bk_bits_clear(b, n - 1));
    assert_false(get_bit(b, n - 1));
    assert_bk_ok(bk_bits_test_and_set(b, n - 1, &v));
    assert_false(v);
    assert_bk_ok(bk_bits_test_and_set(b, n - 1, &v));
    assert_true(v);
    /* first invalid index, and far out */
    const uint64_t bad[] = {n, n + 1, n + 64, UINT64_MAX};
    for (size_t j = 0; j < 4; j++) {
      assert_bk_status(bk_bits_set(b, bad[j]), BK_EINVAL);
      assert_bk_status(bk_bits_clear(b, bad[j]), BK_EINVAL);
      assert_bk_status(bk_bits_test(b, bad[j], &v), BK_EINVAL);
      assert_bk_status(bk_bits_test_and_set(b, bad[j], &v), BK_EINVAL);
    }
    /* the rejected writes did not touch a neighbouring (padding) bit */
    assert_int_equal(popcount(b), 1);
    /* index 0 */
    assert_bk_ok(bk_bits_set(b, 0));
    assert_true(get_bit(b, 0));
    assert_int_equal(popcount(b), n == 1 ? 1 : 2);
    bk_bits_destroy(b);
  }
}

/* Random operations against a byte-per-bit model. 1003 bits: not a multiple
 * of 64, so the last word is partial. */
static void test_random_ops_vs_model(void **state) {
  (void)state;
  enum { N = 1003, OPS = 200000 };
  uint64_t rng = bk_test_seed(0xB175);
  unsigned char model[N];
  memset(model, 0, sizeof model);
  uint64_t ones = 0;
  bk_bits *b = make_bits(N);
  for (int op = 0; op < OPS; op++) {
    uint64_t r = bk_test_next(&rng);
    uint64_t i = (r >> 8) % N;
    bool v;
    switch (r & 3) {
      case 0:
        assert_bk_ok(bk_bits_set(b, i));
        ones += !model[i];
        model[i] = 1;
        break;
      case 1:
        assert_bk_ok(bk_bits_clear(b, i));
        ones -= model[i];
        model[i] = 0;
        break;
      case 2:
        assert_bk_ok(bk_bits_test_and_set(b, i, &v));
        assert_int_equal(v, model[i]);
        ones += !model[i];
        model[i] = 1;
        break;
      default:
        assert_bk_ok(bk_bits_test(b, i, &v));
        assert_int_equal(v, model[i]);
        break;
    }
    if (op % 4096 == 0) assert_int_equal(popcount(b), ones);
  }
  for (uint64_t i = 0; i < N; i++) assert_int_equal(get_bit(b, i), model[i]);
  assert_int_equal(popcount(b), ones);
  bk_bits_destroy(b);
}

static void test_popcount_and_clear_all(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 64, 65, 1000, 70000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    uint64_t n = sizes[s];
    bk_bits *b = make_bits(n);
    for (uint64_t i = 0; i < n; i++) assert_bk_ok(bk_bits_set(b, i));
    assert_int_equal(popcount(b), n);
    for (uint64_t i = 0; i < n; i += 3) assert_bk_ok(bk_bits_clear(b, i));
    assert_int_equal(popcount(b), n - (n + 2) / 3);
    assert_bk_ok(bk_bits_clear_all(b));
    assert_int_equal(popcount(b), 0);
    assert_int_equal(bk_bits_size(b), n);
    for (uint64_t i = 0; i < n; i++) assert_false(get_bit(b, i));
    /* still usable */
    assert_bk_ok(bk_bits_set(b, n - 1));
    assert_int_equal(popcount(b), 1);
    bk_bits_destroy(b);
  }
}

/* ---- union / intersect --------------------------------------------------- */

static void fill_random(bk_bits *b, unsigned char *model, uint64_t n,
                        uint64_t *rng, unsigned percent) {
  for (uint64_t i = 0; i < n; i++) {
    model[i] = (bk_test_next(rng) % 100) < percent;
    if (model[i]) assert_bk_ok(bk_bits_set(b, i));
  }
}

static void test_union_intersect(void **state) {
  (void)state;
  enum { N = 1000 };
  uint64_t rng = bk_test_seed(0x0210);
  unsigned char ma[N], mb[N];
  bk_bits *a = make_bits(N), *b = make_bits(N), *c = make_bits(N);
  fill_random(a, ma, N, &rng, 30);
  fill_random(b, mb, N, &rng, 50);
  for (uint64_t i = 0; i < N; i++)
    if (ma[i]) assert_bk_ok(bk_bits_set(c, i));

  assert_bk_ok(bk_bits_union(a, b));
  uint64_t ones = 0;
  for (uint64_t i = 0; i < N; i++) {
    assert_int_equal(get_bit(a, i), ma[i] | mb[i]);
    assert_int_equal(get_bit(b, i), mb[i]); /* src unchanged */
    ones += ma[i] | mb[i];
  }
  assert_int_equal(popcount(a), ones);

  assert_bk_ok(bk_bits_intersect(c, b));
  ones = 0;
  for (uint64_t i = 0; i < N; i++) {
    assert_int_equal(get_bit(c, i), ma[i] & mb[i]);
    ones += ma[i] & mb[i];
  }
  assert_int_equal(popcount(c), ones);

  /* self-union / self-intersect are identities */
  uint64_t before = popcount(b);
  assert_bk_ok(bk_bits_union(b, b));
  assert_bk_ok(bk_bits_intersect(b, b));
  assert_int_equal(popcount(b), before);

  bk_bits_destroy(a);
  bk_bits_destroy(b);
  bk_bits_destroy(c);
}

static void test_union_mismatch(void **state) {
  (void)state;
  /* 64 vs 65 bits would even share a word count if rounded to 64-byte
   * lines; 100 vs 101 share the same two words: sizes, not storage, must
   * match. */
  const uint64_t pairs[][2] = {{64, 65}, {100, 101}, {1000, 2000}, {1, 512}};
  for (size_t p = 0; p < 4; p++) {
    bk_bits *a = make_bits(pairs[p][0]), *b = make_bits(pairs[p][1]);
    assert_bk_ok(bk_bits_set(a, 0));
    assert_bk_ok(bk_bits_set(b, pairs[p][1] - 1));
    if (pairs[p][0] > 1) assert_bk_ok(bk_bits_set(b, 1));
    assert_bk_status(bk_bits_union(a, b), BK_EMISMATCH);
    assert_bk_status(bk_bits_union(b, a), BK_EMISMATCH);
    assert_bk_status(bk_bits_intersect(a, b), BK_EMISMATCH);
    assert_bk_status(bk_bits_intersect(b, a), BK_EMISMATCH);
    /* nothing changed */
    assert_int_equal(popcount(a), 1);
    assert_true(get_bit(a, 0));
    assert_int_equal(popcount(b), pairs[p][0] > 1 ? 2 : 1);
    bk_bits_destroy(a);
    bk_bits_destroy(b);
  }
}

/* ---- serialization ------------------------------------------------------- */

static void test_serialize_round_trip(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 63, 64, 65, 100, 1000, 4096, 4097, 100003};
  uint64_t rng = bk_test_seed(0x5E71);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    uint64_t n = sizes[s];
    unsigned char *model = malloc(n);
    assert_non_null(model);
    bk_bits *b = make_bits(n);
    fill_random(b, model, n, &rng, 30);
    if (n > 1) {
      assert_bk_ok(bk_bits_set(b, n - 1));
      model[n - 1] = 1;
    }
    size_t len;
    unsigned char *buf = serialize(b, &len);

    /* the envelope of internal.h */
    assert_memory_equal(buf, "BKIT", 4);
    assert_int_equal(bk__load_le16(buf + 4), 1); /* format version 1 */
    assert_int_equal(bk__load_le16(buf + 6), BK__TYPE_BITS);
    uint32_t hlen = bk__load_le32(buf + 8);
    assert_int_equal(bk__load_le32(buf + 12), 0);
    uint64_t plen = bk__load_le64(buf + 16);
    assert_true(hlen >= BK__PREFIX_SIZE);
    assert_int_equal((uint64_t)hlen + plen + 8, len);
    assert_int_equal(bk__load_le64(buf + len - 8),
                     (uint64_t)XXH3_64bits(buf, len - 8));
    /* Payload: little-endian words, bit i at bit i % 64 of word i / 64,
     * i.e. at byte i / 8, bit i % 8 of the payload. */
    assert_true(plen * 8 >= n);
    for (uint64_t i = 0; i < n; i++)
      assert_int_equal((buf[hlen + i / 8] >> (i % 8)) & 1, model[i]);

    bk_bits *back = NULL;
    assert_bk_ok(bk_bits_deserialize(buf, len, NULL, &back));
    assert_int_equal(bk_bits_size(back), n);
    uint64_t ones = 0;
    for (uint64_t i = 0; i < n; i++) {
      assert_int_equal(get_bit(back, i), model[i]);
      ones += model[i];
    }
    assert_int_equal(popcount(back), ones);
    bk_test_assert_serializes_to(&bk_test_codec_bits, back, buf, len);
    bk_bits_destroy(back);
    free(buf);
    free(model);
    bk_bits_destroy(b);
  }
}

static void test_serialize_cap(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 300, 4097};
  for (size_t i = 0; i < 3; i++) {
    bk_bits *b = make_bits(sizes[i]);
    assert_bk_ok(bk_bits_set(b, sizes[i] / 2));
    bk_test_codec_arguments(&bk_test_codec_bits, b);
    bk_bits_destroy(b);
  }
}

/* Format version 1, written out by hand from the layout in internal.h and
 * bits.c: a 70-bit array with bits {0, 3, 64, 69} set. Only the trailer is
 * computed (XXH3-64, seed 0, of the 48 preceding bytes). A change to this
 * format needs a new version number, and this blob must keep loading. */
static const unsigned char k_golden_body[48] = {
    'B',  'K',  'I',  'T',              /* magic */
    0x01, 0x00,                         /* version 1 */
    0x01, 0x00,                         /* type: bits */
    0x20, 0x00, 0x00, 0x00,             /* header length 32 */
    0x00, 0x00, 0x00, 0x00,             /* reserved */
    0x10, 0,    0,    0,    0, 0, 0, 0, /* payload length 16 */
    0x46, 0,    0,    0,    0, 0, 0, 0, /* n_bits 70 */
    0x09, 0,    0,    0,    0, 0, 0, 0, /* word 0: bits 0 and 3 */
    0x21, 0,    0,    0,    0, 0, 0, 0, /* word 1: bits 64 and 69 */
};

static unsigned char *golden_blob(size_t *len) {
  unsigned char *buf = malloc(56);
  assert_non_null(buf);
  memcpy(buf, k_golden_body, 48);
  bk_test_reseal(buf, 56);
  *len = 56;
  return buf;
}

static void test_golden_v1(void **state) {
  (void)state;
  size_t len;
  unsigned char *golden = golden_blob(&len);
  bk_bits *b = NULL;
  assert_bk_ok(bk_bits_deserialize(golden, len, NULL, &b));
  assert_int_equal(bk_bits_size(b), 70);
  assert_int_equal(popcount(b), 4);
  for (uint64_t i = 0; i < 70; i++)
    assert_int_equal(get_bit(b, i), i == 0 || i == 3 || i == 64 || i == 69);
  bk_bits_destroy(b);

  /* and the writer produces exactly these bytes */
  b = make_bits(70);
  assert_bk_ok(bk_bits_set(b, 0));
  assert_bk_ok(bk_bits_set(b, 3));
  assert_bk_ok(bk_bits_set(b, 64));
  assert_bk_ok(bk_bits_set(b, 69));
  bk_test_assert_serializes_to(&bk_test_codec_bits, b, golden, len);
  bk_bits_destroy(b);
  free(golden);
}

/* Every generic hostile-input case (tests/codec_harness.c) on the golden
 * blob, a one-bit array and a 1000-bit one. */
static void test_deserialize_hostile(void **state) {
  (void)state;
  uint64_t seed = bk_test_seed(0xF022);
  size_t len;
  unsigned char *golden = golden_blob(&len);
  bk_bits *b = NULL;
  assert_bk_ok(try_load(golden, len, &b));
  bk_test_codec_hostile(&bk_test_codec_bits, b, seed);
  bk_bits_destroy(b);
  free(golden);
  const uint64_t sizes[] = {1, 1000};
  for (size_t i = 0; i < 2; i++) {
    b = make_bits(sizes[i]);
    assert_bk_ok(bk_bits_set(b, sizes[i] - 1));
    bk_test_codec_hostile(&bk_test_codec_bits, b, seed + i);
    bk_bits_destroy(b);
  }
}

/* The parameter rules of bits, field by field (resealed). */
static void test_deserialize_fields(void **state) {
  (void)state;
  size_t len;
  unsigned char *m = golden_blob(&len);
  const bk_test_codec *c = &bk_test_codec_bits;
#define EDIT(off, width, value, want) \
  bk_test_codec_expect_edit(c, m, len, off, width, value, want, #off " " #value)
  EDIT(24, 8, 0, BK_ECORRUPT);   /* n_bits */
  EDIT(24, 8, 129, BK_ECORRUPT); /* needs 3 words */
  EDIT(24, 8, 64, BK_ECORRUPT);  /* needs 1 word */
  EDIT(24, 8, BK_BITS_MAX + 1, BK_ECORRUPT);
  EDIT(24, 8, UINT64_MAX, BK_ECORRUPT);
  EDIT(24, 8, UINT64_MAX - 62, BK_ECORRUPT);
  /* stray bits past n_bits = 70 in the last word: bits 70, 100, 127 */
  EDIT(32 + 70 / 8, 1, m[32 + 70 / 8] | 1u << (70 % 8), BK_ECORRUPT);
  EDIT(32 + 100 / 8, 1, m[32 + 100 / 8] | 1u << (100 % 8), BK_ECORRUPT);
  EDIT(32 + 127 / 8, 1, m[32 + 127 / 8] | 1u << (127 % 8), BK_ECORRUPT);
  /* but a bit inside the array is just data: bit 68 */
  EDIT(32 + 68 / 8, 1, m[32 + 68 / 8] | 1u << (68 % 8), BK_OK);
  /* a shorter n_bits that still fits two words and leaves no stray bit */
  EDIT(24, 8, 127, BK_OK);
  /* a shorter n_bits that turns bit 69 into a stray */
  EDIT(24, 8, 69, BK_ECORRUPT);
#undef EDIT

  /* The bit-68 blob really loads with bit 68 set. */
  m[32 + 68 / 8] |= (unsigned char)(1u << (68 % 8));
  bk_test_reseal(m, len);
  bk_bits *b = NULL;
  assert_int_equal(try_load(m, len, &b), BK_OK);
  assert_true(get_bit(b, 68));
  assert_int_equal(popcount(b), 5);
  bk_bits_destroy(b);
  free(m);
}

/* A blob whose n_bits claims a huge array but whose lengths are consistent
 * only with a small buffer: rejected without a huge allocation (try_load
 * bounds the peak allocation by the buffer length). */
static void test_deserialize_no_unbounded_alloc(void **state) {
  (void)state;
  unsigned char m[56];
  memcpy(m, k_golden_body, 48);
  bk__store_le64(m + 24, BK_BITS_MAX);
  bk_test_reseal(m, sizeof m);
  assert_int_equal(try_load(m, sizeof m, NULL), BK_ECORRUPT);
  /* payload length claiming 2^37 bytes with a 56-byte buffer */
  memcpy(m, k_golden_body, 48);
  bk__store_le64(m + 16, (uint64_t)1 << 37);
  bk__store_le64(m + 24, BK_BITS_MAX);
  bk_test_reseal(m, sizeof m);
  assert_int_equal(try_load(m, sizeof m, NULL), BK_ECORRUPT);
}

/* Envelopes with an empty payload (len 40): n_bits 0 must be rejected as
 * corrupt before anything indexes the (absent) last word; n_bits 1 needs a
 * word that is not there. */
static void test_deserialize_empty_payload(void **state) {
  (void)state;
  const uint64_t claims[] = {0, 1, 64, BK_BITS_MAX};
  for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
    unsigned char m[40];
    memcpy(m, k_golden_body, 32);
    bk__store_le64(m + 16, 0);
    bk__store_le64(m + 24, claims[i]);
    bk_test_reseal(m, sizeof m);
    bk_status s = try_load(m, sizeof m, NULL);
    if (s != BK_ECORRUPT)
      fail_msg("empty payload, n_bits %llu: got %s, want BK_ECORRUPT",
               (unsigned long long)claims[i], bk_status_name(s));
  }
}

/* ---- concurrency --------------------------------------------------------- */

enum { TAS_BITS = 1 << 16, TAS_ROUNDS = 20 };

/* The shared two-thread spinning barrier (testutil.h). */
typedef bk_test_spin_barrier spin_barrier;
#define spin_wait bk_test_spin_wait

static void spin_init(spin_barrier *b) {
  atomic_init(&b->arrived, 0);
  atomic_init(&b->generation, 0);
}

typedef struct tas_ctx {
  bk_bits *bits;
  spin_barrier *barrier;
  unsigned char *saw_clear; /* per index: this thread saw was_set == false */
  int failures;
  bool reverse_in_word;
} tas_ctx;

static void *tas_worker(void *arg) {
  tas_ctx *c = arg;
  spin_wait(c->barrier);
  for (uint64_t i = 0; i < TAS_BITS; i++) {
    /* both threads walk the same words at the same time, racing for the
     * same bits; in odd rounds thread 1 takes the bits of each word in
     * the opposite order, so they also race on different bits of one word */
    uint64_t idx =
        c->reverse_in_word ? (i & ~(uint64_t)63) | (63 - (i & 63)) : i;
    bool was_set = true;
    if (bk_bits_test_and_set(c->bits, idx, &was_set) != BK_OK) c->failures++;
    c->saw_clear[idx] = !was_set;
  }
  return NULL;
}

static void test_concurrent_test_and_set(void **state) {
  (void)state;
  bk_bits *b = make_bits(TAS_BITS);
  unsigned char *saw[2];
  for (int t = 0; t < 2; t++) {
    saw[t] = malloc(TAS_BITS);
    assert_non_null(saw[t]);
  }
  spin_barrier barrier;
  for (int round = 0; round < TAS_ROUNDS; round++) {
    spin_init(&barrier);
    tas_ctx ctx[2];
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
      memset(saw[t], 0xFF, TAS_BITS);
      ctx[t] = (tas_ctx){b, &barrier, saw[t], 0, t == 1 && round % 2};
      assert_int_equal(pthread_create(&th[t], NULL, tas_worker, &ctx[t]), 0);
    }
    for (int t = 0; t < 2; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(ctx[0].failures + ctx[1].failures, 0);
    for (uint64_t i = 0; i < TAS_BITS; i++) {
      if (saw[0][i] + saw[1][i] != 1)
        fail_msg("round %d bit %llu: %d threads saw it clear", round,
                 (unsigned long long)i, saw[0][i] + saw[1][i]);
    }
    assert_int_equal(popcount(b), TAS_BITS);
    assert_bk_ok(bk_bits_clear_all(b));
  }
  free(saw[0]);
  free(saw[1]);
  bk_bits_destroy(b);
}

/* Concurrent set and clear of distinct bits in shared words: each thread
 * owns every other bit, so only the owner ever changes a bit, and after each
 * of its passes the owner knows exactly what its bits must read. A
 * non-atomic read-modify-write by the other thread on the shared word would
 * sometimes write back a stale copy of the owner's bits. */
enum { SC_BITS = 128, SC_PASSES = 100000 }; /* two shared words */

typedef struct setclr_ctx {
  bk_bits *bits;
  spin_barrier *barrier;
  unsigned parity;
  int failures;   /* calls that did not return BK_OK */
  int mismatches; /* own bits that did not read back as written */
} setclr_ctx;

static void *setclr_worker(void *arg) {
  setclr_ctx *c = arg;
  spin_wait(c->barrier);
  for (int pass = 0; pass < SC_PASSES; pass++) {
    bool want = pass % 2 == 0;
    for (uint64_t j = 0; j < SC_BITS / 2; j++) {
      uint64_t i = 2 * j + c->parity;
      if ((want ? bk_bits_set(c->bits, i) : bk_bits_clear(c->bits, i)) != BK_OK)
        c->failures++;
    }
    for (uint64_t i = c->parity; i < SC_BITS; i += 2) {
      bool v = !want;
      if (bk_bits_test(c->bits, i, &v) != BK_OK) c->failures++;
      if (v != want) c->mismatches++;
    }
  }
  return NULL;
}

static void test_concurrent_set_clear_neighbours(void **state) {
  (void)state;
  bk_bits *b = make_bits(SC_BITS);
  spin_barrier barrier;
  spin_init(&barrier);
  setclr_ctx ctx[2] = {{b, &barrier, 0, 0, 0}, {b, &barrier, 1, 0, 0}};
  pthread_t th[2];
  for (int t = 0; t < 2; t++)
    assert_int_equal(pthread_create(&th[t], NULL, setclr_worker, &ctx[t]), 0);
  for (int t = 0; t < 2; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
  assert_int_equal(ctx[0].failures + ctx[1].failures, 0);
  assert_int_equal(ctx[0].mismatches + ctx[1].mismatches, 0);
  /* SC_PASSES is even, so the last pass of both threads cleared */
  assert_int_equal(popcount(b), 0);
  bk_bits_destroy(b);
}

/* Whole-array operations may run beside single-bit updates (bits.h): "a
 * concurrent single-bit update is either seen or not, never corrupted".
 * One thread only sets bits; the other repeatedly serializes, counts and
 * unions. Every snapshot must load, hold only bits the setter set, and
 * never lose a bit an earlier snapshot had (bits are only ever added). Under
 * the thread sanitizer this also checks the reads are proper atomics. */
enum { WA_BITS = 4096, WA_SNAPSHOTS = 300 };

typedef struct whole_ctx {
  bk_bits *bits;
  spin_barrier *barrier;
  atomic_int done;
  int failures;
} whole_ctx;

static void *whole_setter(void *arg) {
  whole_ctx *c = arg;
  spin_wait(c->barrier);
  uint64_t rng = 0x5E77E2;
  for (int round = 0; round < 20; round++)
    for (uint64_t i = 0; i < WA_BITS; i += 2) {
      /* even bits only, in a scrambled order */
      uint64_t idx = (bk_test_next(&rng) % (WA_BITS / 2)) * 2;
      if (bk_bits_set(c->bits, idx) != BK_OK) c->failures++;
    }
  atomic_store(&c->done, 1);
  return NULL;
}

static void test_concurrent_whole_array_ops(void **state) {
  (void)state;
  bk_bits *b = make_bits(WA_BITS), *acc = make_bits(WA_BITS);
  spin_barrier barrier;
  spin_init(&barrier);
  whole_ctx ctx = {b, &barrier, 0, 0};
  atomic_init(&ctx.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, whole_setter, &ctx), 0);
  spin_wait(&barrier);
  uint64_t prev = 0;
  size_t len = 0;
  assert_bk_ok(bk_bits_serialized_size(b, &len));
  unsigned char *buf = malloc(len);
  assert_non_null(buf);
  for (int snap = 0; snap < WA_SNAPSHOTS || !atomic_load(&ctx.done); snap++) {
    size_t written;
    assert_bk_ok(bk_bits_serialize(b, buf, len, &written));
    bk_bits *copy = NULL;
    assert_bk_ok(bk_bits_deserialize(buf, written, NULL, &copy));
    uint64_t ones = popcount(copy);
    assert_true(ones >= prev);
    prev = ones;
    assert_bk_ok(bk_bits_union(acc, b));
    assert_true(popcount(b) >= ones);
    for (uint64_t i = 1; i < WA_BITS; i += 2) {
      bool v;
      assert_bk_ok(bk_bits_test(copy, i, &v));
      assert_false(v); /* odd bits are never set */
    }
    bk_bits_destroy(copy);
  }
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(ctx.failures, 0);
  assert_bk_ok(bk_bits_union(acc, b));
  assert_int_equal(popcount(acc), popcount(b));
  free(buf);
  bk_bits_destroy(b);
  bk_bits_destroy(acc);
}

/* clear_all beside single-bit updates: never corrupts (no bit the setter
 * did not set ever appears), and the array stays fully usable. */
static void test_concurrent_clear_all(void **state) {
  (void)state;
  bk_bits *b = make_bits(WA_BITS);
  spin_barrier barrier;
  spin_init(&barrier);
  whole_ctx ctx = {b, &barrier, 0, 0};
  atomic_init(&ctx.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, whole_setter, &ctx), 0);
  spin_wait(&barrier);
  for (int i = 0; i < 200 || !atomic_load(&ctx.done); i++) {
    assert_bk_ok(bk_bits_clear_all(b));
    for (uint64_t j = 1; j < WA_BITS; j += 2) assert_false(get_bit(b, j));
  }
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(ctx.failures, 0);
  assert_bk_ok(bk_bits_clear_all(b));
  assert_int_equal(popcount(b), 0);
  assert_bk_ok(bk_bits_set(b, 1));
  assert_int_equal(popcount(b), 1);
  bk_bits_destroy(b);
}

/* ---- OOM injection ------------------------------------------------------- */

static void oom_create(uint64_t n, bool sticky) {
  bk_test_alloc st;
  size_t fail_at;
  bk_bits *b = NULL;
  for (fail_at = 1; fail_at < 100; fail_at++) {
    bk_allocator al = bk_test_allocator(&st, fail_at);
    st.fail_sticky = sticky;
    bk_bits *sentinel = (bk_bits *)(uintptr_t)0x4321;
    b = sentinel;
    bk_status s = bk_bits_create(&b, n, &al);
    if (s == BK_OK) break;
    if (s != BK_ENOMEM)
      fail_msg("n %llu fail_at %zu: got %s, want BK_ENOMEM",
               (unsigned long long)n, fail_at, bk_status_name(s));
    assert_int_equal(st.live, 0);
    assert_ptr_equal(b, sentinel); /* *out untouched on error */
  }
  assert_true(fail_at > 1); /* the first allocation can fail */
  assert_true(fail_at < 100);
  assert_true(st.live > 0);
  assert_bk_ok(bk_bits_set(b, n - 1));
  assert_true(get_bit(b, n - 1));
  bk_bits_destroy(b);
  assert_int_equal(st.live, 0);
  assert_int_equal(st.live_bytes, 0);
}

static void test_oom_create(void **state) {
  (void)state;
  oom_create(1, false);
  oom_create(1000, false);
  oom_create(1000, true);
  oom_create((uint64_t)1 << 25, false); /* 4 MiB: the large-region path */
}

/* ---- large array --------------------------------------------------------- */

static void large_array(const bk_allocator *al) {
  const uint64_t n = (uint64_t)1 << 26; /* 8 MiB of storage */
  bk_bits *b = NULL, *c = NULL;
  assert_bk_ok(bk_bits_create(&b, n, al));
  assert_bk_ok(bk_bits_create(&c, n, al));
  assert_int_equal(bk_bits_size(b), n);
  assert_true(bk_bits_memory(b) >= n / 8);
  uint64_t rng = 0x1A26E;
  uint64_t ones = 0;
  /* a stride touching every 2 MiB page and both ends */
  for (uint64_t i = 0; i < n; i += 999983) {
    bool was;
    assert_bk_ok(bk_bits_test_and_set(b, i, &was));
    assert_false(was);
    ones++;
  }
  assert_bk_ok(bk_bits_set(b, n - 1));
  ones++;
  assert_int_equal(popcount(b), ones);
  for (int i = 0; i < 1000; i++) {
    uint64_t idx = bk_test_next(&rng) % n;
    assert_bk_ok(bk_bits_set(c, idx));
  }
  uint64_t c_ones = popcount(c);
  assert_bk_ok(bk_bits_intersect(c, b)); /* mostly disjoint */
  assert_true(popcount(c) <= ones);
  assert_bk_ok(bk_bits_union(c, b));
  assert_true(popcount(c) >= ones);
  assert_true(popcount(c) <= ones + c_ones);

  size_t len;
  unsigned char *blob = serialize(b, &len);
  assert_true(len >= n / 8);
  bk_bits *back = NULL;
  assert_bk_ok(bk_bits_deserialize(blob, len, al, &back));
  assert_int_equal(popcount(back), ones);
  assert_true(get_bit(back, n - 1));
  assert_true(get_bit(back, 999983));
  free(blob);
  bk_bits_destroy(back);

  /* clear_all of a large region (may hand pages back to the OS) leaves an
   * all-zero, still writable array */
  assert_bk_ok(bk_bits_clear_all(b));
  assert_int_equal(popcount(b), 0);
  assert_false(get_bit(b, n - 1));
  assert_bk_ok(bk_bits_set(b, n / 2));
  assert_true(get_bit(b, n / 2));
  assert_int_equal(popcount(b), 1);
  bk_bits_destroy(b);
  bk_bits_destroy(c);
}

static void test_large_array(void **state) {
  (void)state;
  large_array(NULL);
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  large_array(&al);
  assert_true(st.peak_bytes >= ((size_t)1 << 26) / 8);
  assert_int_equal(st.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_args),
      cmocka_unit_test(test_size_and_memory),
      cmocka_unit_test(test_null_args),
      cmocka_unit_test(test_boundaries),
      cmocka_unit_test(test_random_ops_vs_model),
      cmocka_unit_test(test_popcount_and_clear_all),
      cmocka_unit_test(test_union_intersect),
      cmocka_unit_test(test_union_mismatch),
      cmocka_unit_test(test_serialize_round_trip),
      cmocka_unit_test(test_serialize_cap),
      cmocka_unit_test(test_golden_v1),
      cmocka_unit_test(test_deserialize_hostile),
      cmocka_unit_test(test_deserialize_fields),
      cmocka_unit_test(test_deserialize_no_unbounded_alloc),
      cmocka_unit_test(test_deserialize_empty_payload),
      cmocka_unit_test(test_concurrent_test_and_set),
      cmocka_unit_test(test_concurrent_set_clear_neighbours),
      cmocka_unit_test(test_concurrent_whole_array_ops),
      cmocka_unit_test(test_concurrent_clear_all),
      cmocka_unit_test(test_oom_create),
      cmocka_unit_test(test_large_array),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
