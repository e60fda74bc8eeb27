/* SPDX-License-Identifier: MIT */
/*
 * bk_idem's open-addressed counter table (src/fbf/idem_table.c), in two
 * parts. White box: the table's own functions, compiled into this program,
 * driven with chosen digests so keys collide, wrap around the end of the
 * slots and are removed from the middle of a probe run; after every step
 * the slots must satisfy the layout's invariants (every key reachable from
 * its home without crossing an empty slot, empty slots all zero, counts
 * exact) and hold exactly a reference model's keys. Through the public
 * API: keys longer than a slot's inline bytes (up to BK_IDEM_KEY_MAX),
 * growth across many keys from an empty start, removals that keep every
 * other key findable, a removed key added again, table_memory, and the
 * slab of first slots a table sized for many keys starts with.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fbf/idem_internal.h"
#include "idem_helpers.h"

/* ---- white box -------------------------------------------------------- */

/* A table with only what idem_table.c uses: the allocator and one stripe. */
typedef struct box {
  bk_idem t;
  bk__idem_stripe s;
  bk_test_alloc st;
  bk_allocator al;
} box;

static void box_init(box *b, uint64_t keys) {
  memset(b, 0, sizeof *b);
  b->al = bk_test_allocator(&b->st, 0);
  assert_bk_ok(bk__alloc_init(&b->t.alloc, &b->al));
  b->t.stripes = &b->s;
  assert_bk_ok(bk__idem_table_init(&b->t, &b->s, keys));
}

static void box_free(box *b) {
  bk__idem_table_free(&b->t, &b->s);
  assert_int_equal(b->st.live, 0); /* every slot array and long key */
}

/* A digest whose home slot is `home` in a table of up to 2^k slots: the
 * index bits are 16.., the bits above pick the key apart from its
 * neighbours. hi selects the stripe (unused by the table itself). */
static bk_hash digest(uint64_t home, uint64_t salt) {
  bk_hash h = {((salt * 0x9E3779B97F4A7C15u) & ~(((uint64_t)1 << 32) - 1)) |
                   (home << 16) | (salt & 0xFFFF),
               0};
  return h;
}

/* The layout's invariants, and the used slots counted. */
static void check_slots(const bk__idem_stripe *s) {
  uint64_t used = 0, heap = 0;
  for (uint64_t j = 0; j <= s->mask; j++) {
    const bk__idem_slot *e = &s->slots[j];
    if (!bk__idem_slot_used(e)) {
      static const bk__idem_slot zero;
      if (memcmp(e, &zero, sizeof zero) != 0)
        fail_msg("empty slot %llu is not all zero", (unsigned long long)j);
      continue;
    }
    used++;
    size_t len = bk__idem_slot_len(e);
    assert_true(len >= 1 && len <= BK_IDEM_KEY_MAX);
    if (len > BK__IDEM_INLINE_KEY) {
      heap += len;
    } else {
      for (size_t i = len; i < BK__IDEM_INLINE_KEY; i++)
        if (e->key.bytes[i])
          fail_msg("slot %llu: inline key not zero padded",
                   (unsigned long long)j);
    }
    /* No empty slot between the key's home and its slot. */
    for (uint64_t i = (e->tag >> 16) & s->mask; i != j; i = (i + 1) & s->mask)
      if (!bk__idem_slot_used(&s->slots[i]))
        fail_msg("slot %llu cut off from its home by empty slot %llu",
                 (unsigned long long)j, (unsigned long long)i);
  }
  assert_int_equal(used, s->n);
  assert_int_equal(heap, s->heap_bytes);
  /* At most 3/4 full, or fuller after a failed growth, but always with an
   * empty slot to end every probe (the shared empty slot: no key). */
  assert_true(s->n < s->mask + 1 || (s->mask == 0 && s->n == 0));
}

typedef struct bkey {
  bk_hash h;
  unsigned char bytes[64];
  size_t len;
  bool live;
  int64_t value;
} bkey;

static void put(box *b, bkey *k, int64_t value) {
  assert_null(bk__idem_find(&b->s, k->h, k->bytes, k->len));
  bk__idem_reservation r;
  assert_bk_ok(bk__idem_reserve(&b->t, &b->s, k->h, k->bytes, k->len, &r));
  bk__idem_slot *e = bk__idem_commit(&b->s, &r, value);
  assert_ptr_equal(e, bk__idem_find(&b->s, k->h, k->bytes, k->len));
  k->live = true;
  k->value = value;
}

static void drop(box *b, bkey *k) {
  bk__idem_slot *e = bk__idem_find(&b->s, k->h, k->bytes, k->len);
  assert_non_null(e);
  bk__idem_erase(&b->t, &b->s, e);
  k->live = false;
}

static void expect_keys(const box *b, const bkey *keys, size_t n) {
  check_slots(&b->s);
  uint64_t live = 0;
  for (size_t i = 0; i < n; i++) {
    const bk__idem_slot *e =
        bk__idem_find(&b->s, keys[i].h, keys[i].bytes, keys[i].len);
    if (!keys[i].live) {
      if (e) fail_msg("removed key %zu still found", i);
      continue;
    }
    live++;
    if (!e) fail_msg("key %zu (len %zu) not found", i, keys[i].len);
    assert_int_equal(e->value, keys[i].value);
    assert_int_equal(bk__idem_slot_len(e), keys[i].len);
    assert_memory_equal(bk__idem_slot_key(e), keys[i].bytes, keys[i].len);
  }
  assert_int_equal(live, b->s.n);
}

static void make_key(bkey *k, uint64_t home, uint64_t salt, size_t len) {
  memset(k, 0, sizeof *k);
  k->h = digest(home, salt);
  k->len = len;
  for (size_t i = 0; i < len; i++) k->bytes[i] = (unsigned char)(salt + i);
}

/* One run of keys from slot 6 of 8 wrapping to slot 2, a key homed at 0
 * behind it; removing the run's first key shifts every key back, the one
 * homed at 0 too, and nothing is lost. Short and long keys mixed. */
static void test_shift_wraps(void **state) {
  (void)state;
  box b;
  box_init(&b, 6);
  assert_int_equal(b.s.mask, 7);
  bkey k[7];
  for (unsigned i = 0; i < 5; i++) make_key(&k[i], 6, 100 + i, 5 + 7 * i);
  make_key(&k[5], 0, 200, 16);
  bkey *at4 = &k[6]; /* added later */
  make_key(at4, 4, 300, 3);
  for (unsigned i = 0; i < 6; i++) put(&b, &k[i], (int64_t)i - 3);
  /* Slots 6, 7, 0, 1, 2 for the run, 3 for the key homed at 0. */
  assert_ptr_equal(bk__idem_find(&b.s, k[0].h, k[0].bytes, k[0].len),
                   &b.s.slots[6]);
  assert_ptr_equal(bk__idem_find(&b.s, k[5].h, k[5].bytes, k[5].len),
                   &b.s.slots[3]);
  expect_keys(&b, k, 7);
  drop(&b, &k[0]);
  expect_keys(&b, k, 7);
  assert_ptr_equal(bk__idem_find(&b.s, k[1].h, k[1].bytes, k[1].len),
                   &b.s.slots[6]);
  assert_ptr_equal(bk__idem_find(&b.s, k[5].h, k[5].bytes, k[5].len),
                   &b.s.slots[2]);
  /* A key from the middle of the run, then the last, then re-add. */
  drop(&b, &k[3]);
  expect_keys(&b, k, 7);
  drop(&b, &k[5]);
  expect_keys(&b, k, 7);
  put(&b, &k[3], 33);
  put(&b, &k[5], 55);
  expect_keys(&b, k, 7);
  /* A key that stays at its home is not moved by a removal before it. */
  drop(&b, &k[1]);
  put(&b, at4, 4);
  drop(&b, &k[2]);
  expect_keys(&b, k, 7);
  assert_ptr_equal(bk__idem_find(&b.s, at4->h, at4->bytes, at4->len),
                   &b.s.slots[4]);
  box_free(&b);
}

/* Reserve then abandon leaves the table as it was (a long key's copy is
 * given back); reserve grows a full-enough table; a failed growth is
 * tolerated while a slot would stay empty and refused (nothing changed,
 * nothing leaked) when none would. */
static void test_reserve_abandon_and_growth(void **state) {
  (void)state;
  box b;
  box_init(&b, 0); /* the shared empty slot: the first key must grow */
  assert_int_equal(b.s.mask, 0);
  assert_int_equal(bk__idem_table_memory(&b.s), 0);
  bkey k[8];
  for (unsigned i = 0; i < 8; i++) make_key(&k[i], i % 3, 400 + i, 10 + 5 * i);
  bk__idem_reservation r;
  b.st.fail_at = b.st.calls + 1;
  assert_bk_status(
      bk__idem_reserve(&b.t, &b.s, k[0].h, k[0].bytes, k[0].len, &r),
      BK_ENOMEM);
  assert_int_equal(b.s.mask, 0);
  assert_bk_ok(bk__idem_reserve(&b.t, &b.s, k[7].h, k[7].bytes, k[7].len, &r));
  assert_non_null(r.heap); /* 45 bytes: a long key */
  assert_int_equal(b.st.live, 2);
  bk__idem_abandon(&b.t, &r);
  assert_int_equal(b.st.live, 1);
  expect_keys(&b, k, 8);
  assert_int_equal(bk__idem_table_memory(&b.s), 8 * sizeof(bk__idem_slot));
  /* 8 slots: 6 keys fit at 3/4, the 7th grows. */
  for (unsigned i = 0; i < 6; i++) put(&b, &k[i], i);
  assert_int_equal(b.s.mask, 7);
  /* Growth fails: the 7th key (short) still goes in (one slot stays
   * empty), the 8th would fill the last slot: refused, its copy freed. */
  b.st.fail_at = b.st.calls + 1;
  b.st.fail_sticky = true;
  k[6].len = 9;
  put(&b, &k[6], 6);
  assert_int_equal(b.s.mask, 7);
  /* Then the long key's copy succeeds and the growth fails. */
  b.st.fail_sticky = false;
  b.st.fail_at = b.st.calls + 2;
  size_t live = b.st.live;
  assert_bk_status(
      bk__idem_reserve(&b.t, &b.s, k[7].h, k[7].bytes, k[7].len, &r),
      BK_ENOMEM);
  assert_int_equal(b.st.live, live);
  expect_keys(&b, k, 8);
  b.st.fail_at = 0;
  put(&b, &k[7], 7);
  assert_int_equal(b.s.mask, 15);
  expect_keys(&b, k, 8);
  size_t heap = 0;
  for (unsigned i = 0; i < 8; i++) heap += k[i].len > 16 ? k[i].len : 0;
  assert_int_equal(bk__idem_table_memory(&b.s),
                   16 * sizeof(bk__idem_slot) + heap);
  box_free(&b);
}

/* Random adds and removes over few home slots (long probe runs, many
 * wrap-arounds, repeated growth), checked against the model after each. */
static void test_random_against_model(void **state) {
  (void)state;
  enum { N = 300 };
  const unsigned steps = SLOW_BUILD ? 3000 : 12000;
  uint64_t rng = idem_test_seed(0x7AB1E);
  box b;
  box_init(&b, 0);
  bkey *k = calloc(N, sizeof *k);
  assert_non_null(k);
  for (unsigned i = 0; i < N; i++) {
    /* Homes in a narrow band of the largest table: clusters at every
     * size. Lengths 1..40, so both inline and heap keys. */
    uint64_t home = bk_test_next(&rng) % 64 * 1024 + bk_test_next(&rng) % 4;
    make_key(&k[i], home, i, 1 + bk_test_next(&rng) % 40);
  }
  for (unsigned step = 0; step < steps; step++) {
    bkey *x = &k[bk_test_next(&rng) % N];
    if (x->live && bk_test_next(&rng) % 3 == 0)
      drop(&b, x);
    else if (x->live)
      bk__idem_find(&b.s, x->h, x->bytes, x->len)->value = ++x->value;
    else
      put(&b, x, (int64_t)step);
    if (step % 7 == 0 || step + 1 == steps) expect_keys(&b, k, N);
  }
  free(k);
  box_free(&b);
}

/* The prefetch reads a stripe without its lock: before the first key, and
 * on a grown table (any address is harmless; this checks it does not
 * crash and that TSan sees relaxed atomics, in the concurrency test). */
static void test_prefetch(void **state) {
  (void)state;
  box b;
  box_init(&b, 0);
  bkey x;
  make_key(&x, 3, 1, 20);
  bk__idem_table_prefetch(&b.t, x.h);
  put(&b, &x, 1);
  bk__idem_table_prefetch(&b.t, x.h);
  box_free(&b);
}

/* ---- through the public API ------------------------------------------- */

/* Keys at the inline boundary and up to BK_IDEM_KEY_MAX, some sharing
 * their first 16 bytes (the inline part) and their length, so only the
 * heap bytes tell them apart: values, iterate's bytes, a snapshot round
 * trip, and table_memory moving by exactly the key on removal. */
static void test_long_keys(void **state) {
  (void)state;
  static const size_t lens[] = {1, 15, 16, 17, 31, 64, 255, 1000, 4095, 4096};
  enum { PER = 3, NK = COUNT(lens) * PER };
  static unsigned char keys[NK][BK_IDEM_KEY_MAX];
  size_t klen[NK];
  for (size_t i = 0; i < NK; i++) {
    klen[i] = lens[i / PER];
    memset(keys[i], 'k', klen[i]);
    keys[i][klen[i] - 1] = (unsigned char)('0' + i % PER); /* last byte */
  }
  for (size_t si = 0; si < 2; si++) {
    bk_idem_config cfg =
        generous(si ? BK_IDEM_FBF : BK_IDEM_NONE, 100, idem_test_seed(0x10C));
    bk_idem *t = idem_make(&cfg);
    for (size_t i = 0; i < NK; i++) {
      int64_t v;
      assert_int_equal(add_ok(t, keys[i], klen[i], opid(1, i), (int64_t)i, &v),
                       BK_IDEM_APPLIED);
      assert_int_equal(add_ok(t, keys[i], klen[i], opid(2, i), 1000, &v),
                       BK_IDEM_APPLIED);
      assert_int_equal(v, (int64_t)i + 1000);
    }
    for (size_t i = 0; i < NK; i++)
      assert_int_equal(get_ok(t, keys[i], klen[i]), (int64_t)i + 1000);
    /* A snapshot restores every key byte for byte. */
    size_t blen;
    unsigned char *blob = idem_blob_of(t, &blen);
    bk_idem *c;
    assert_bk_ok(bk_idem_deserialize(blob, blen, NULL, &c));
    free(blob);
    for (size_t i = 0; i < NK; i++)
      assert_int_equal(get_ok(c, keys[i], klen[i]), (int64_t)i + 1000);
    assert_int_equal(idem_info_of(c).keys, NK);
    bk_idem_destroy(c);
    /* Removing a long key gives back exactly its bytes (the slots stay). */
    for (size_t i = 0; i < NK; i++) {
      size_t before = idem_info_of(t).table_memory;
      assert_bk_ok(bk_idem_remove(t, keys[i], klen[i]));
      size_t after = idem_info_of(t).table_memory;
      assert_int_equal(before - after, klen[i] > 16 ? klen[i] : 0);
      int64_t v;
      assert_bk_status(bk_idem_get(t, keys[i], klen[i], &v), BK_ENOTFOUND);
      for (size_t j = i + 1; j < NK; j++)
        assert_int_equal(get_ok(t, keys[j], klen[j]), (int64_t)j + 1000);
    }
    assert_int_equal(idem_info_of(t).keys, 0);
    bk_idem_destroy(t);
  }
}

/* Many keys from an empty start (every stripe grows from nothing, several
 * times), every third removed, the others still there, the removed ones
 * added again starting from 0; table_memory at least the slots the keys
 * need at 3/4 full plus their long bytes. */
static void test_growth_remove_readd(void **state) {
  (void)state;
  const size_t n = SLOW_BUILD ? 20000 : 100000;
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  bk_idem_config cfg = generous(BK_IDEM_NONE, 100, idem_test_seed(0x6409));
  cfg.allocator = &al;
  bk_idem *t = idem_make(&cfg);
  model m = model_new(n);
  size_t long_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(i, kb);
    long_bytes += kl > 16 ? kl : 0;
    add_ok(t, kb, kl, opid(1, i), (int64_t)i, NULL);
    model_apply(&m, i, (int64_t)i);
  }
  expect_table(t, &m, "after growth");
  bk_idem_info in = idem_info_of(t);
  assert_true(in.table_memory >=
              n * 4 / 3 * sizeof(bk__idem_slot) + long_bytes);
  /* Honest: no more than the live blocks (a few bytes of the allocator's
   * alignment aside) and not far above what the keys need. */
  assert_true(in.table_memory <= st.live_bytes);
  assert_true(in.table_memory <=
              4 * n * sizeof(bk__idem_slot) + long_bytes + ((size_t)1 << 20));
  for (size_t i = 0; i < n; i += 3) model_remove(t, &m, i);
  expect_table(t, &m, "after removing every third");
  for (size_t i = 0; i < n; i += 3) {
    unsigned char kb[KEY_BUF];
    size_t kl = key_of(i, kb);
    int64_t v;
    assert_int_equal(add_ok(t, kb, kl, opid(2, i), 7, &v), BK_IDEM_APPLIED);
    assert_int_equal(v, 7); /* from 0, not from the removed value */
    model_apply(&m, i, 7);
  }
  expect_table(t, &m, "after re-adding");
  bk_idem_destroy(t);
  assert_int_equal(st.live, 0);
  model_free(&m);
}

/* A table sized for many keys takes every stripe's first slots from one
 * slab after the stripes (huge pages with libc's allocator): an empty
 * table and a small one make none, a sized one counts it in table_memory
 * from the start, keys past the sizing grow stripes out of it and stay
 * findable, a failing allocation leaks nothing. */
static void test_slab(void **state) {
  (void)state;
  const size_t stripes = BK__IDEM_STRIPES * sizeof(bk__idem_stripe);
  bk_idem_config cfg = generous(BK_IDEM_NONE, 100, idem_test_seed(0x51AB));
  bk_idem *t = idem_make(&cfg); /* expected_keys 0 */
  size_t empty = idem_info_of(t).table_memory;
  assert_true(empty < stripes + 65536);
  bk_idem_destroy(t);
  assert_int_equal(bk__idem_slab_bytes(0), 0);
  assert_int_equal(bk__idem_slab_bytes(40000 / BK__IDEM_STRIPES + 1), 0);
  /* 80000 keys: 313 a stripe, 512 slots of 32 bytes, 4 MiB in all. */
  assert_int_equal(bk__idem_slab_bytes(80000 / BK__IDEM_STRIPES + 1),
                   (size_t)4 << 20);
  cfg.expected_keys = 40000; /* 2 MiB of slots: a region per stripe */
  t = idem_make(&cfg);
  assert_int_equal(idem_info_of(t).table_memory,
                   empty + BK__IDEM_STRIPES * 256 * sizeof(bk__idem_slot));
  bk_idem_destroy(t);
  const size_t n = SLOW_BUILD ? 100000 : 240000;
  for (int custom = 0; custom < 2; custom++) {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, 0);
    cfg.expected_keys = 80000;
    cfg.allocator = custom ? &al : NULL;
    if (custom) {
      /* Every allocation of the creation failing in turn: ENOMEM, nothing
       * left behind. */
      bk_status s = BK_ENOMEM;
      for (size_t k = 1; s == BK_ENOMEM && k < 1000; k++) {
        st.fail_at = st.calls + k;
        bk_idem *f = NULL;
        s = bk_idem_create(&f, &cfg);
        if (s == BK_OK)
          bk_idem_destroy(f);
        else
          assert_null(f);
        assert_int_equal(st.live, 0);
      }
      assert_bk_ok(s);
      st.fail_at = 0;
    }
    t = idem_make(&cfg);
    assert_int_equal(idem_info_of(t).table_memory, empty + ((size_t)4 << 20));
    model m = model_new(n);
    for (size_t i = 0; i < n; i++) {
      unsigned char kb[KEY_BUF];
      size_t kl = key_of(i, kb);
      add_ok(t, kb, kl, opid(1, i), (int64_t)i, NULL);
      model_apply(&m, i, (int64_t)i);
    }
    expect_table(t, &m, "past the slab");
    assert_true(idem_info_of(t).table_memory > empty + ((size_t)4 << 20));
    for (size_t i = 0; i < n; i += 2) model_remove(t, &m, i);
    expect_table(t, &m, "after removing every second");
    bk_idem_destroy(t);
    model_free(&m);
    if (custom) assert_int_equal(st.live, 0);
  }
}

int main(void) {
  bk_test_begin(IDEM_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shift_wraps),
      cmocka_unit_test(test_reserve_abandon_and_growth),
      cmocka_unit_test(test_random_against_model),
      cmocka_unit_test(test_prefetch),
      cmocka_unit_test(test_long_keys),
      cmocka_unit_test(test_growth_remove_readd),
      cmocka_unit_test(test_slab),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
