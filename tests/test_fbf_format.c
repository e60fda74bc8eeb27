/* SPDX-License-Identifier: MIT */
/*
 * Tests of the FBF's serialized form (src/fbf/fbf_io.c): round trip and
 * continuation, the codec harness's hostile input on fixed and adaptive
 * FBFs, crafted blobs field by field, states no run can reach, and the
 * saved generation saturating.
 *
 * Shared helpers: tests/fbf_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "core/internal.h"

#include "fbf_helpers.h"

/* States no create plus operations can reach (#15, #16.4), each edit
 * resealed: BK_ECORRUPT. The first two are the blobs of #15 (N = 2, t = 1,
 * m = 65536, k = 4, 100 inserts) that made every refresh defer and
 * bk_fbf_advance loop once a period: min_window 2^62, and became_present
 * 2^62 (after now) for the occupied slots. Then the counts: zeroed with the
 * bits kept (the keys were never forgotten: a slot with count 0 was never
 * swept), or 1 for 1000 keys' bits; and next_refresh "never" at now = 1000
 * (the filter never refreshed, measured fpp 1.0) - allowed only where
 * now + t saturates. */
static void test_deserialize_unreachable(void **state) {
  (void)state;
  const bk_test_codec *c = &bk_test_codec_fbf;
  bk_fbf_config cfg = {
      .m_bits = 65536, .k = 4, .n_past = 2, .refresh_period = 1};
  bk_fbf *f = fbf_make(&cfg);
  fbf_advance(f, 2); /* head != 0, a past filter in use */
  for (uint64_t id = 0; id < 100; id++)
    (void)fbf_add_new(f, fbf_hash_id(f, id));
  fbf_advance(f, 3);
  for (uint64_t id = 100; id < 200; id++)
    (void)fbf_add_new(f, fbf_hash_id(f, id));
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  const unsigned w = blob[OFF_W], head = blob[OFF_HEAD];
  assert_bk_ok(bk_test_codec_load(c, blob, len, NULL));
  bk_test_codec_expect_edit(c, blob, len, OFF_MIN_WINDOW, 8, (uint64_t)1 << 62,
                            BK_ECORRUPT, "min_window 2^62");
  unsigned char *m = malloc(len);
  assert_non_null(m);
  const size_t bp = OFF_INSERTED + 8 * w, sh = OFF_INSERTED + 16 * w;
  /* became_present 2^62 for the occupied slots (present and past) */
  memcpy(m, blob, len);
  for (unsigned pos = 1; pos < 3; pos++)
    bk__store_le64(m + bp + 8 * ((head + pos) % w), (uint64_t)1 << 62);
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  /* one slot after the clock, or older than the next older one */
  bk_test_codec_expect_edit(c, blob, len, bp + 8 * ((head + 1) % w), 8, 4,
                            BK_ECORRUPT, "present became present after now");
  bk_test_codec_expect_edit(c, blob, len, bp + 8 * ((head + 1) % w), 8, 1,
                            BK_ECORRUPT, "present became present before past");
  /* counts zeroed, bits kept: in every slot, then only the past one */
  memcpy(m, blob, len);
  memset(m + OFF_INSERTED, 0, 8 * w);
  memset(m + sh, 0, 8 * w);
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  unsigned past = (head + 2) % w;
  memcpy(m, blob, len);
  bk__store_le64(m + OFF_INSERTED + 8 * past, 0);
  bk__store_le64(m + sh + 8 * past, 0);
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  /* a count of 1 behind a hundred inserts' bits (k bits an insert) */
  memcpy(m, blob, len);
  for (unsigned s = 0; s < w; s++) {
    if (bk__load_le64(m + OFF_INSERTED + 8 * s) == 0) continue;
    bk__store_le64(m + OFF_INSERTED + 8 * s, 1);
    bk__store_le64(m + sh + 8 * s, 0);
  }
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  /* counts past 2^62 in all (later inserts would wrap one to 0): the
   * present filter's alone, and two that only together pass it */
  const unsigned present = (head + 1) % w;
  bk_test_codec_expect_edit(c, blob, len, OFF_INSERTED + 8 * present, 8,
                            UINT64_MAX - 1, BK_ECORRUPT, "inserted 2^64 - 2");
  memcpy(m, blob, len);
  bk__store_le64(m + OFF_INSERTED + 8 * present, (uint64_t)1 << 61);
  bk__store_le64(m + OFF_INSERTED + 8 * past, ((uint64_t)1 << 61) + 100);
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  /* ... and two whose sum wraps into range (2^40 + (2^64 - 2) = 2^40 - 2,
   * enough inserts for the bits) */
  memcpy(m, blob, len);
  bk__store_le64(m + OFF_INSERTED + 8 * present, (uint64_t)1 << 40);
  bk__store_le64(m + OFF_INSERTED + 8 * past, UINT64_MAX - 1);
  bk_test_reseal(m, len);
  assert_int_equal(bk_test_codec_load(c, m, len, NULL), BK_ECORRUPT);
  /* One slot past 2^56 (so W slots never sum past 2^62) */
  bk_test_codec_expect_edit(c, blob, len, OFF_INSERTED + 8 * present, 8,
                            ((uint64_t)1 << 56) + 1, BK_ECORRUPT,
                            "inserted 2^56 + 1");
  /* ... and one at 2^56 loads, takes more inserts, and what it saves
   * loads again with the count kept at 2^56 (the fuzzer found a slot
   * loaded at the old bound that one insert took past it) */
  memcpy(m, blob, len);
  bk__store_le64(m + OFF_INSERTED + 8 * head, (uint64_t)1 << 56);
  bk_test_reseal(m, len);
  bk_fbf *big = NULL;
  assert_int_equal(bk_test_codec_load(c, m, len, (void **)&big), BK_OK);
  uint64_t key = 0xF0F0F0F0;
  for (int i = 0; i < 100; i++, key = key * 6364136223846793005u + 1)
    assert_bk_ok(bk_fbf_add(big, &key, 8));
  bk_fbf_info binfo;
  assert_bk_ok(bk_fbf_info_get(big, &binfo));
  assert_true(binfo.inserted[0] > ((uint64_t)1 << 56)); /* the future's */
  size_t blen;
  unsigned char *bblob = fbf_blob_of(big, &blen);
  assert_int_equal(bk__load_le64(bblob + OFF_INSERTED + 8 * head),
                   (uint64_t)1 << 56);
  bk_fbf *again = NULL;
  assert_int_equal(bk_test_codec_load(c, bblob, blen, (void **)&again), BK_OK);
  bk_fbf_destroy(again);
  bk_fbf_destroy(big);
  free(bblob);
  /* "never" refresh at now = 3 */
  bk_test_codec_expect_edit(c, blob, len, OFF_NEXT_REFRESH, 8, UINT64_MAX,
                            BK_ECORRUPT, "next_refresh never");
  free(m);
  free(blob);
  /* ... but "never" where the clock really reached the end loads. */
  fbf_advance(f, UINT64_MAX);
  blob = fbf_blob_of(f, &len);
  assert_int_equal(bk__load_le64(blob + OFF_NEXT_REFRESH), UINT64_MAX);
  assert_bk_ok(bk_test_codec_load(c, blob, len, NULL));
  free(blob);
  bk_fbf_destroy(f);
}

/* ---- serialized form ----------------------------------------------------- */

static void assert_same_info(const bk_fbf_info *a, const bk_fbf_info *b) {
  assert_int_equal(a->m_bits, b->m_bits);
  assert_int_equal(a->k, b->k);
  assert_int_equal(a->n_filters, b->n_filters);
  assert_int_equal(a->n_past, b->n_past);
  assert_int_equal(a->target_filters, b->target_filters);
  assert_int_equal(a->max_filters, b->max_filters);
  assert_int_equal(a->refresh_period, b->refresh_period);
  assert_int_equal(a->min_window, b->min_window);
  assert_int_equal(a->now, b->now);
  assert_int_equal(a->next_refresh, b->next_refresh);
  assert_int_equal(a->window_min, b->window_min);
  assert_int_equal(a->window_max, b->window_max);
  assert_int_equal(a->refreshes, b->refreshes);
  assert_int_equal(a->deferred, b->deferred);
  for (unsigned q = 0; q < a->n_filters; q++) {
    assert_int_equal(a->inserted[q], b->inserted[q]);
    assert_int_equal(a->set_bits[q], b->set_bits[q]);
  }
  assert_int_equal(a->memory, b->memory);
  assert_int_equal(a->check, b->check);
  assert_int_equal(a->adaptive, b->adaptive);
}

static bk_fbf *restore(const unsigned char *blob, size_t len,
                       const bk_allocator *al) {
  return bk_test_restore(&bk_test_codec_fbf, blob, len, al);
}

/*
 * Save and restore mid-life: the copy has the same shape, clock, counts and
 * bits, answers every probe the same with both checks and estimates the
 * same, saves to the same bytes, and then - fed the same time and inserts
 * as the original - keeps answering the same: it forgets on the original's
 * schedule. For the fixed-size FBF (m = 2^16, fpp ~1e-10) the elements saved
 * inside it are checked against the window directly: found until
 * s + (N+1) t, gone after s + (N+2) t.
 */
static void test_serialize_round_trip(void **state) {
  (void)state;
  struct {
    bk_fbf_config cfg;
    bool window; /* fixed t: check the window exactly */
  } cases[] = {
      {{.m_bits = 1u << 16,
        .k = 7,
        .n_past = 2,
        .refresh_period = 1000,
        .seed = 7},
       true},
      {{.m_bits = 5000,
        .k = 4,
        .n_past = 2,
        .refresh_period = 1000,
        .adaptive = true,
        .target_fpp = 0.01,
        .adapt_interval = 300,
        .period_step = 200,
        .min_period = 200,
        .max_period = 2000,
        .max_filters = 16,
        .min_filters = 3,
        .seed = 99,
        .start_time = 123456},
       false},
      {{.m_bits = 3 * 4096 + 5,
        .k = 3,
        .n_past = 1,
        .refresh_period = 500,
        .max_filters = 60,
        .check = BK_FBF_CHECK_SIMPLE,
        .hash_alg = BK_HASH_MURMUR3,
        .seed = 12345},
       false},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const bk_fbf_config *cfg = &cases[c].cfg;
    bk_fbf *f = fbf_make(cfg);
    uint64_t rng = fbf_test_seed(0x5E + c), now = cfg->start_time, next_id = 0;
    const uint64_t t = cfg->refresh_period;
    const unsigned count = cfg->n_past + 2;
    elem el[4000];
    size_t n_el = 0;
    /* Six periods of inserts, with a manual resize for the adaptive one. */
    for (unsigned step = 0; step < 120; step++) {
      now += bk_test_next(&rng) % (t / 10);
      fbf_advance(f, now);
      if (cfg->adaptive && step == 60) assert_bk_ok(bk_fbf_resize(f, 8, 600));
      for (unsigned i = 0; i < 10; i++) {
        bk_hash h = fbf_hash_id(f, next_id);
        if (fbf_add_new(f, h) && n_el < 4000) {
          el[n_el].h = h;
          el[n_el].s = now;
          el[n_el].id = next_id;
          n_el++;
        }
        next_id++;
      }
    }
    size_t len;
    unsigned char *blob = fbf_blob_of(f, &len);
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    bk_fbf *g = restore(blob, len, &al);
    bk_fbf_info a = fbf_info_of(f), b = fbf_info_of(g);
    assert_same_info(&a, &b);
    for (int ck = BK_FBF_CHECK_OPTIMIZED; ck <= BK_FBF_CHECK_SIMPLE; ck++) {
      assert_true(fbf_est_of(f, (bk_fbf_check)ck) ==
                  fbf_est_of(g, (bk_fbf_check)ck));
      assert_true(fbf_eq43_of(f, (bk_fbf_check)ck) ==
                  fbf_eq43_of(g, (bk_fbf_check)ck));
    }
    for (uint64_t p = 0; p < 20000 + next_id; p++) {
      bk_hash h = fbf_hash_id(f, p < next_id ? p : ABSENT_TAG | p);
      for (int ck = BK_FBF_CHECK_OPTIMIZED; ck <= BK_FBF_CHECK_SIMPLE; ck++)
        assert_true(fbf_has_with(f, h, (bk_fbf_check)ck) ==
                    fbf_has_with(g, h, (bk_fbf_check)ck));
    }
    bk_test_assert_serializes_to(&bk_test_codec_fbf, g, blob, len);

    /* Life goes on, identically, for (N + 3) periods. */
    size_t saved = n_el;
    uint64_t end = now + (count + 1) * t;
    while (now < end) {
      now += 1 + bk_test_next(&rng) % (t / 10);
      fbf_advance(f, now);
      fbf_advance(g, now);
      for (unsigned i = 0; i < 3; i++) {
        bk_hash h = fbf_hash_id(f, next_id++);
        bool af = fbf_add_new(f, h), ag = fbf_add_new(g, h);
        assert_true(af == ag);
      }
      for (size_t i = 0; i < saved; i += 7) {
        bool in_f = fbf_has(f, el[i].h);
        assert_true(in_f == fbf_has(g, el[i].h));
        if (cases[c].window) {
          uint64_t age = now - el[i].s;
          if (age < (count - 1) * t && !in_f)
            fail_msg("restored FBF lost element %llu at age %llu",
                     (unsigned long long)el[i].id, (unsigned long long)age);
          if (age > count * t && in_f)
            fail_msg("restored FBF still holds element %llu at age %llu",
                     (unsigned long long)el[i].id, (unsigned long long)age);
        }
      }
      for (unsigned p = 0; p < 20; p++) {
        bk_hash h = fbf_hash_id(f, ABSENT_TAG | bk_test_next(&rng));
        assert_true(fbf_has(f, h) == fbf_has(g, h));
      }
    }
    a = fbf_info_of(f);
    b = fbf_info_of(g);
    assert_same_info(&a, &b);
    /* Everything saved has been forgotten by now. */
    if (cases[c].window)
      for (size_t i = 0; i < saved; i++) assert_false(fbf_has(g, el[i].h));
    bk_fbf_destroy(g);
    assert_int_equal(st.live, 0);
    free(blob);
    bk_fbf_destroy(f);
  }
}

/* A small FBF for the hostile-input tests: W slots (0: N + 2), a couple of
 * refreshes so that head != 0, a few inserts. */
static bk_fbf *small_fbf(unsigned max_filters, uint64_t m) {
  bk_fbf_config cfg = {.m_bits = m,
                       .k = 3,
                       .n_past = 1,
                       .refresh_period = 100,
                       .max_filters = max_filters,
                       .seed = 5};
  bk_fbf *f = fbf_make(&cfg);
  for (unsigned i = 0; i < 3; i++) {
    fbf_advance(f, 100 * i + 50);
    for (unsigned j = 0; j < 4; j++)
      (void)fbf_add_new(f, fbf_hash_id(f, 10 * i + j));
  }
  return f;
}

static unsigned char *small_blob(unsigned max_filters, uint64_t m,
                                 size_t *len) {
  bk_fbf *f = small_fbf(max_filters, m);
  unsigned char *blob = fbf_blob_of(f, len);
  bk_fbf_destroy(f);
  return blob;
}

/* The head (physical slot of the newest filter) a blob of f records. */
static unsigned head_of(const bk_fbf *f) {
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  unsigned head = blob[OFF_HEAD];
  free(blob);
  return head;
}

/* Found by the 30-minute fuzz run: a blob recording generation 2^43 - 1
 * (the loader's bound) loaded, and a few refreshes later the FBF saved a
 * blob with a larger one, which did not load. The generation restarts per
 * process and the saved value saturates, so every save loads. */
static void test_generation_saturates(void **state) {
  (void)state;
  bk_fbf *f = small_fbf(0, 100);
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  bk_fbf_destroy(f);
  const uint64_t top = ((uint64_t)1 << 43) - 1;
  bk__store_le64(blob + 152, top);
  bk_test_reseal(blob, len);
  bk_fbf *g = NULL;
  assert_bk_ok(bk_fbf_deserialize(blob, len, NULL, &g));
  bk_fbf_info in = fbf_info_of(g);
  for (unsigned i = 1; i <= 5; i++) {
    fbf_advance(g, in.now + i * in.refresh_period);
    (void)fbf_add_new(g, fbf_hash_id(g, 1000 + i));
  }
  size_t len2;
  unsigned char *again = fbf_blob_of(g, &len2);
  assert_int_equal(bk__load_le64(again + 152), top);
  bk_fbf *h = NULL;
  assert_bk_ok(bk_fbf_deserialize(again, len2, NULL, &h));
  bk_fbf_destroy(h);
  /* One past the bound is refused. */
  bk_test_codec_expect_edit(&bk_test_codec_fbf, blob, len, 152, 8, top + 1,
                            BK_ECORRUPT, "generation 2^43");
  free(again);
  free(blob);
  bk_fbf_destroy(g);
}

/* Every generic hostile-input case (tests/codec_harness.c) on three small
 * FBFs, each with head != 0: fixed with W = N + 2 slots, fixed with free
 * slots (max_filters 6 > 3 filters), and adaptive after a resize. */
static void test_deserialize_hostile(void **state) {
  (void)state;
  const uint64_t seed = fbf_test_seed(0xBAD);
  bk_fbf *f = small_fbf(0, 100);
  assert_true(fbf_info_of(f).max_filters == 3 && head_of(f) != 0);
  bk_test_codec_hostile(&bk_test_codec_fbf, f, seed);
  /* The loader allocates through the allocator it is given (the harness's
   * allocation failures would pass vacuously otherwise). */
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 1);
  bk_fbf *g = SENTINEL;
  assert_bk_status(bk_fbf_deserialize(blob, len, &al, &g), BK_ENOMEM);
  assert_ptr_equal(g, SENTINEL);
  assert_int_equal(st.live, 0);
  free(blob);
  bk_fbf_destroy(f);

  f = small_fbf(6, 200);
  assert_true(fbf_info_of(f).max_filters == 6 && fbf_info_of(f).n_filters == 3);
  assert_true(head_of(f) != 0);
  bk_test_codec_hostile(&bk_test_codec_fbf, f, seed + 1);
  bk_fbf_destroy(f);

  bk_fbf_config cfg = fbf_small_adaptive_config();
  f = fbf_make(&cfg);
  for (unsigned i = 0; i < 6; i++) {
    fbf_advance(f, 60 * i + 30);
    if (i == 3) assert_bk_ok(bk_fbf_resize(f, 5, 80));
    for (unsigned j = 0; j < 4; j++)
      (void)fbf_add_new(f, fbf_hash_id(f, 10 * i + j));
  }
  bk_fbf_info in = fbf_info_of(f);
  assert_true(in.adaptive && in.n_filters == 5 && in.refreshes >= 2);
  assert_true(head_of(f) != 0);
  bk_test_codec_hostile(&bk_test_codec_fbf, f, seed + 2);
  bk_fbf_destroy(f);
}

/* Where lane j's bit for physical slot s lies in a blob's payload: the
 * byte's offset, and in *value that byte with the bit set. */
static size_t lane_byte(const unsigned char *blob, uint64_t j, unsigned slot,
                        uint64_t *value) {
  unsigned w = blob[OFF_W];
  unsigned stride = w > 57 ? 64 : w;
  uint32_t hl = bk__load_le32(blob + 8);
  uint64_t bit = j * stride + slot;
  *value = blob[hl + bit / 8] | (1u << (bit % 8));
  return hl + bit / 8;
}

static void test_deserialize_crafted(void **state) {
  (void)state;
  size_t len;
  /* m = 200, W = 6 (N = 1, so 3 filters in use and 3 free slots). */
  unsigned char *base = small_blob(6, 200, &len);
  const unsigned W = base[OFF_W], head = base[OFF_HEAD];
  assert_int_equal(W, 6);
  assert_int_equal(base[OFF_COUNT], 3);
  assert_true(head != 0);
  const uint32_t hl = bk__load_le32(base + 8);
  assert_int_equal(hl, FBF_HEADER_LEN(W));
  const unsigned free_slot = (head + 3) % W, used_slot = (head + 1) % W;
  const bk_test_codec *c = &bk_test_codec_fbf;
  uint64_t v;
  /* One field of `base` set, resealed, must be rejected. */
#define EDIT(desc, off, width, value)                              \
  bk_test_codec_expect_edit(c, base, len, (off), (width), (value), \
                            BK_ECORRUPT, (desc))
#define LANE(desc, j, slot)                        \
  do {                                             \
    size_t at_ = lane_byte(base, (j), (slot), &v); \
    EDIT((desc), at_, 1, v);                       \
  } while (0)
  /* Positive controls: the copy loads, and so does a harmless change, so
   * the cases below fail for the field they change. */
  assert_bk_ok(bk_test_codec_load(c, base, len, NULL));
  unsigned char *b = malloc(len);
  assert_non_null(b);
  memcpy(b, base, len);
  bk__store_le64(b + OFF_REFRESHES, 4242);
  bk_test_reseal(b, len);
  bk_fbf *g = NULL;
  assert_bk_ok(bk_test_codec_load(c, b, len, (void **)&g));
  assert_int_equal(fbf_info_of(g).refreshes, 4242);
  bk_fbf_destroy(g);

  EDIT("count 2", OFF_COUNT, 1, 2);
  EDIT("count 0", OFF_COUNT, 1, 0);
  EDIT("count W + 1", OFF_COUNT, 1, W + 1);
  EDIT("head W", OFF_HEAD, 1, W);
  EDIT("head 255", OFF_HEAD, 1, 255);
  LANE("bit in a free slot", 17, free_slot);
  LANE("bit in a free slot, last lane", 199, free_slot);
  LANE("bit past the last lane", 200, used_slot);
  EDIT("spare word", len - 8 - 1, 1, 0x80);
  EDIT("inserts counted in a free slot", OFF_INSERTED + 8 * free_slot, 8, 1);
  EDIT("k 0", OFF_K, 1, 0);
  EDIT("k 65", OFF_K, 1, 65);
  EDIT("m 0", OFF_M, 8, 0);
  EDIT("m 300 (payload length)", OFF_M, 8, 300);
  EDIT("m 100 (payload length)", OFF_M, 8, 100);
  EDIT("m huge", OFF_M, 8, (uint64_t)1 << 50);
  EDIT("W 7 (header length)", OFF_W, 1, 7);
  EDIT("W 2", OFF_W, 1, 2);
  EDIT("max_filters != W", OFF_MAXF, 1, W - 1);
  EDIT("min_filters 2", OFF_MINF, 1, 2);
  EDIT("target below min_filters", OFF_TARGET, 1, 2);
  EDIT("target above max_filters", OFF_TARGET, 1, W + 1);
  EDIT("zero refresh period", OFF_T, 8, 0);
  EDIT("t below min_period", OFF_MIN_PERIOD, 8, 101);
  EDIT("t above max_period", OFF_MAX_PERIOD, 8, 99);
  EDIT("min_period 0", OFF_MIN_PERIOD, 8, 0);
  EDIT("target_fpp units 0", OFF_FPP, 8, 0);
  EDIT("target_fpp 1", OFF_FPP, 8, 1000000000000000000ull);
  EDIT("adapt interval 0", OFF_INTERVAL, 8, 0);
  EDIT("period step 0", OFF_STEP, 8, 0);
  EDIT("hash 0", OFF_ALG, 1, 0);
  EDIT("hash 3", OFF_ALG, 1, 3);
  /* Two fields: murmur, then a seed over 32 bits. */
  memcpy(b, base, len);
  b[OFF_ALG] = BK_HASH_MURMUR3;
  bk_test_codec_expect_edit(c, b, len, OFF_SEED, 8, 1ull << 40, BK_ECORRUPT,
                            "murmur with a 64-bit seed");
  EDIT("check 0", OFF_CHECK, 1, 0);
  EDIT("check 3", OFF_CHECK, 1, 3);
  EDIT("adaptive 2", OFF_ADAPTIVE, 1, 2);
  EDIT("reserved u16", OFF_RES16, 1, 1);
  EDIT("reserved u32", OFF_RES32 + 3, 1, 1);
  EDIT("generation 2^43", OFF_GEN, 8, (uint64_t)1 << 43);
  EDIT("min_window huge", OFF_MIN_WINDOW, 8, UINT64_MAX);
  EDIT("prefix reserved", 12, 1, 1);
  EDIT("payload length", 16, 8, bk__load_le64(base + 16) + 8);
  EDIT("type", 6, 1, 3);
  EDIT("magic", 0, 1, 'X');
  /* The shared-insert counts (shared[W] after became_present[W]): never
   * above the filter's own count, and zero in free slots. */
  EDIT("shared count in a free slot", OFF_SHARED(W) + 8 * free_slot, 8, 1);
  EDIT("shared count above the inserts", OFF_SHARED(W) + 8 * used_slot, 8,
       bk__load_le64(base + OFF_INSERTED + 8 * used_slot) + 1);
  free(b);
  free(base);

  /* W = 60: lanes are 64 bits apart, slots 60..63 are padding. */
  base = small_blob(60, 10, &len);
  assert_int_equal(base[OFF_W], 60);
  assert_bk_ok(bk_test_codec_load(c, base, len, NULL));
  LANE("lane padding (slot 61)", 3, 61);
  LANE("free slot 40 of 60", 3, (base[OFF_HEAD] + 40) % 60);
#undef LANE
#undef EDIT
  free(base);
}

int main(void) {
  bk_test_begin(FBF_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_generation_saturates),
      cmocka_unit_test(test_deserialize_unreachable),
      cmocka_unit_test(test_serialize_round_trip),
      cmocka_unit_test(test_deserialize_hostile),
      cmocka_unit_test(test_deserialize_crafted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
