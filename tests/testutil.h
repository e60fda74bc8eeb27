/* SPDX-License-Identifier: MIT */
/*
 * Shared test helpers: a counting allocator that can fail its Nth call (for
 * OOM injection and leak checks), a seeded PRNG, and cmocka conveniences.
 */
#ifndef BLOOMKIT_TESTS_TESTUTIL_H
#define BLOOMKIT_TESTS_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the three headers above first. */
#include <cmocka.h>

#include "bloomkit/common.h"
#include "codecs.h"

/* Counting allocator. fail_at == 0 never fails; fail_at == N fails the Nth
 * call of alloc/realloc (1-based) and every later one while fail_sticky. */
typedef struct bk_test_alloc {
  size_t fail_at;
  bool fail_sticky;
  size_t calls;      /* alloc + realloc calls so far */
  size_t live;       /* blocks allocated and not yet freed */
  size_t live_bytes; /* bytes in those blocks */
  size_t peak_bytes;
} bk_test_alloc;

/* An allocator bound to `state` (reset to zero counts, given fail_at). */
bk_allocator bk_test_allocator(bk_test_alloc *state, size_t fail_at);

/* splitmix64: the seeded generator every test uses. */
static inline uint64_t bk_test_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Seed from BK_TEST_SEED if set, else `fallback`; printed once either way so
 * a failing run can be reproduced. */
uint64_t bk_test_seed(uint64_t fallback);

/* The start of every test program's main: prints the seed banner (the seed
 * from BK_TEST_SEED, else `seed_fallback`) and applies BK_TEST_FILTER (a
 * cmocka glob) when set, so a subset can run. */
void bk_test_begin(uint64_t seed_fallback);

/* The bytes of tests/data/<name> (ctest sets BK_TEST_DATA to that
 * directory), malloc'd; fails the test if it cannot be read. */
unsigned char *bk_test_data_file(const char *name, size_t *len);

/* Monotonic wall time in seconds, and a sleep of `ms` milliseconds that
 * resumes after signals. */
double bk_test_now_seconds(void);
void bk_test_sleep_ms(unsigned ms);

/* ---- the codec hostile-input harness (codec_harness.c) -------------------
 * The codec descriptors (bk_test_codec_<type>) and bk_test_reseal come from
 * codecs.h. */

/* Serialize obj into an exact-size malloc'd buffer; fails the test if any
 * call fails or written != serialized_size. */
unsigned char *bk_test_serialize(const bk_test_codec *c, const void *obj,
                                 size_t *len);

/* obj serializes to exactly want[0, len) (a golden blob, or the bytes it
 * was loaded from). */
void bk_test_assert_serializes_to(const bk_test_codec *c, const void *obj,
                                  const unsigned char *want, size_t len);

/* a and b serialize to the same bytes (the same state). */
void bk_test_assert_same_state(const bk_test_codec *c, const void *a,
                               const void *b);

/* Serialize `obj` and run every hostile-input case against its blob: each
 * truncation length (plain, resealed, and with the payload length made to
 * agree), trailing bytes, every envelope/parameter/trailer bit flipped with
 * the checksum stale (must be rejected) and resealed, the envelope's fields
 * (magic, version 0 / newer, every other type tag, header and payload
 * lengths, reserved word) at wrong and oversized values (must be rejected),
 * each parameter byte and each 2/4/8-byte field at every offset set to edge
 * values and resealed, random noise and random resealed edits, and an
 * allocation failing at each step of a load. A rejection must be
 * BK_ECORRUPT / BK_EVERSION with the out-parameter untouched and nothing
 * leaked; an acceptance must pass bk_test_codec_check_accepted, free every
 * block on destroy, and allocate at most about what the original did.
 * Blobs up to 4 KiB get every truncation length; keep test objects small. */
void bk_test_codec_hostile(const bk_test_codec *c, const void *obj,
                           uint64_t seed);

/* Load blob[0, len) through the counting allocator: returns the status
 * (an error leaves nothing allocated); an accepted blob must pass
 * bk_test_codec_check_accepted. With out non-NULL and BK_OK, *out receives
 * a libc-allocated copy for the caller to inspect and destroy. */
bk_status bk_test_codec_load(const bk_test_codec *c, const unsigned char *blob,
                             size_t len, void **out);

/* The argument rules every type's codec shares: serialized_size and
 * serialize with NULL arguments, every capacity short of the size (beyond
 * 4 KiB: the first and last 1 KiB and 256 between) refused
 * with nothing written, a larger buffer given exactly the size, and
 * deserialize with a NULL buffer or out or an allocator without alloc/free:
 * BK_EINVAL with the out-parameter untouched. */
void bk_test_codec_arguments(const bk_test_codec *c, const void *obj);

/* What each worker thread of a race gets: the state the workers share and
 * the worker's index. */
typedef struct bk_test_worker {
  void *shared;
  unsigned tid;
} bk_test_worker;

/* A two-thread spinning barrier: both threads leave within nanoseconds of
 * each other (a futex-based pthread barrier can skew them by tens of
 * microseconds), which is what makes concurrency tests race on the same
 * words. Zero-initialise, then bk_test_spin_wait from both threads. */
typedef struct bk_test_spin_barrier {
  _Atomic unsigned arrived;
  _Atomic unsigned generation;
} bk_test_spin_barrier;
void bk_test_spin_wait(bk_test_spin_barrier *b);

/* Store the little-endian `width`-byte `value` at blob[off] in a copy,
 * reseal, load, and require `want` (`what` names the case on failure). */
void bk_test_codec_expect_edit(const bk_test_codec *c,
                               const unsigned char *blob, size_t len,
                               size_t off, unsigned width, uint64_t value,
                               bk_status want, const char *what);

/* ---- the per-type one-liners ---------------------------------------------
 * Every type's tests want the same few calls that must succeed, so they are
 * written once here and stamped out per type: BK_TEST_DEFINE_MAKE(rbf,
 * static) defines `static bk_rbf *rbf_make(const bk_rbf_config *)`.
 * `linkage` is `static` in a test program, or empty in a helper file whose
 * header declares the functions (tests/fbf_helpers.c). Each fails the test
 * on any status other than BK_OK. */

/* T_make: bk_<T>_create that must succeed. */
#define BK_TEST_DEFINE_MAKE(T, linkage)                                  \
  linkage bk_##T *T##_make(const bk_##T##_config *cfg) {                 \
    bk_##T *obj = NULL;                                                  \
    bk_status s = bk_##T##_create(&obj, cfg);                            \
    if (s != BK_OK) fail_msg("bk_" #T "_create: %s", bk_status_name(s)); \
    assert_non_null(obj);                                                \
    return obj;                                                          \
  }

/* T_info_of: bk_<T>_info_get that must succeed. */
#define BK_TEST_DEFINE_INFO_OF(T, linkage)               \
  linkage bk_##T##_info T##_info_of(const bk_##T *obj) { \
    bk_##T##_info in;                                    \
    assert_bk_ok(bk_##T##_info_get(obj, &in));           \
    return in;                                           \
  }

/* T_blob_of: obj serialized into an exact-size malloc'd blob through the
 * type's codec (codecs.h; the caller frees it). */
#define BK_TEST_DEFINE_BLOB_OF(T, linkage)                             \
  linkage unsigned char *T##_blob_of(const bk_##T *obj, size_t *len) { \
    return bk_test_serialize(&bk_test_codec_##T, obj, len);            \
  }

/* For the set types: T_hash_id (the digest of id as 8 little-endian bytes),
 * T_has (contains_hash) and T_add_new (add_if_absent_hash: true when the
 * element was new and is now added). */
#define BK_TEST_DEFINE_HASH_SET(T, linkage)                                  \
  linkage bk_hash T##_hash_id(const bk_##T *obj, uint64_t id) {              \
    unsigned char kb[8];                                                     \
    bk_hash h;                                                               \
    for (unsigned i = 0; i < 8; i++) kb[i] = (unsigned char)(id >> (8 * i)); \
    assert_bk_ok(bk_##T##_hash(obj, kb, sizeof kb, &h));                     \
    return h;                                                                \
  }                                                                          \
  linkage bool T##_has(const bk_##T *obj, bk_hash h) {                       \
    bool out = false;                                                        \
    assert_bk_ok(bk_##T##_contains_hash(obj, h, &out));                      \
    return out;                                                              \
  }                                                                          \
  linkage bool T##_add_new(bk_##T *obj, bk_hash h) {                         \
    bool added = false;                                                      \
    assert_bk_ok(bk_##T##_add_if_absent_hash(obj, h, &added));               \
    return added;                                                            \
  }

/* T_expect_create_einval(cfg, what): bk_<T>_create refuses cfg with
 * BK_EINVAL and leaves its out-parameter alone (`what` names the case).
 * T_expect_create_null(ok): the same for a NULL out-parameter (with the
 * valid config ok) and for a NULL config. */
#define BK_TEST_DEFINE_CREATE_REFUSALS(T, linkage)                  \
  linkage void T##_expect_create_einval(const bk_##T##_config *cfg, \
                                        const char *what) {         \
    static unsigned char create_sentinel;                           \
    bk_##T *const sentinel = (bk_##T *)(void *)&create_sentinel;    \
    bk_##T *obj = sentinel;                                         \
    bk_status s = bk_##T##_create(&obj, cfg);                       \
    if (s != BK_EINVAL) {                                           \
      if (s == BK_OK) bk_##T##_destroy(obj);                        \
      fail_msg("create with %s: %s, expected BK_EINVAL", what,      \
               bk_status_name(s));                                  \
    }                                                               \
    assert_ptr_equal(obj, sentinel);                                \
  }                                                                 \
  linkage void T##_expect_create_null(const bk_##T##_config *ok) {  \
    static unsigned char create_sentinel;                           \
    bk_##T *const sentinel = (bk_##T *)(void *)&create_sentinel;    \
    bk_##T *obj = sentinel;                                         \
    assert_bk_status(bk_##T##_create(NULL, ok), BK_EINVAL);         \
    assert_bk_status(bk_##T##_create(&obj, NULL), BK_EINVAL);       \
    assert_ptr_equal(obj, sentinel);                                \
  }

/* For the set types: T_assert_set_arguments(obj) checks the argument rules
 * their key calls share: hash, add, add_hash, add_if_absent(_hash) and
 * contains(_hash) refuse a NULL object, key or out-parameter with
 * BK_EINVAL (obj is a live set; the calls add nothing). */
#define BK_TEST_DEFINE_SET_ARGUMENTS(T, linkage)                             \
  linkage void T##_assert_set_arguments(bk_##T *obj) {                       \
    bk_hash h;                                                               \
    bool out = true;                                                         \
    assert_bk_ok(bk_##T##_hash(obj, "a", 1, &h));                            \
    assert_bk_status(bk_##T##_hash(NULL, "a", 1, &h), BK_EINVAL);            \
    assert_bk_status(bk_##T##_hash(obj, NULL, 1, &h), BK_EINVAL);            \
    assert_bk_status(bk_##T##_hash(obj, "a", 1, NULL), BK_EINVAL);           \
    assert_bk_status(bk_##T##_add(NULL, "a", 1), BK_EINVAL);                 \
    assert_bk_status(bk_##T##_add(obj, NULL, 1), BK_EINVAL);                 \
    assert_bk_status(bk_##T##_add_hash(NULL, h), BK_EINVAL);                 \
    assert_bk_status(bk_##T##_add_if_absent(NULL, "a", 1, &out), BK_EINVAL); \
    assert_bk_status(bk_##T##_add_if_absent(obj, NULL, 1, &out), BK_EINVAL); \
    assert_bk_status(bk_##T##_add_if_absent(obj, "a", 1, NULL), BK_EINVAL);  \
    assert_bk_status(bk_##T##_add_if_absent_hash(NULL, h, &out), BK_EINVAL); \
    assert_bk_status(bk_##T##_add_if_absent_hash(obj, h, NULL), BK_EINVAL);  \
    assert_bk_status(bk_##T##_contains(NULL, "a", 1, &out), BK_EINVAL);      \
    assert_bk_status(bk_##T##_contains(obj, NULL, 1, &out), BK_EINVAL);      \
    assert_bk_status(bk_##T##_contains(obj, "a", 1, NULL), BK_EINVAL);       \
    assert_bk_status(bk_##T##_contains_hash(NULL, h, &out), BK_EINVAL);      \
    assert_bk_status(bk_##T##_contains_hash(obj, h, NULL), BK_EINVAL);       \
  }

/* OOM injection (libuv's test-loop-oom): calls make(make_ctx, al, &obj)
 * with an allocator failing its Nth allocation (and every later one when
 * `sticky`), N = 1, 2, ..., until it returns BK_OK. Any other status must
 * be BK_ENOMEM with obj untouched and nothing left allocated; on BK_OK,
 * check(check_ctx, st, obj) runs the case's checks on the object (it may
 * set st->fail_at = 0 first so they can allocate) and destroys it, and
 * nothing may be left. Fails the test when allocation `max_at` still
 * fails. Returns how many attempts failed; `what` names the case. */
typedef bk_status (*bk_test_oom_make)(const void *make_ctx,
                                      const bk_allocator *al, void **out);
typedef void (*bk_test_oom_check)(void *check_ctx, bk_test_alloc *st,
                                  void *obj);
unsigned bk_test_oom(bk_test_oom_make make, const void *make_ctx,
                     bk_test_oom_check check, void *check_ctx, bool sticky,
                     size_t max_at, const char *what);

/* bk_test_oom over loading blob[0, len) through the codec; check need not
 * destroy the object (the codec does after it). */
unsigned bk_test_oom_load(const bk_test_codec *c, const unsigned char *blob,
                          size_t len, bk_test_oom_check check, void *check_ctx,
                          bool sticky, size_t max_at, const char *what);

/* T_oom_make: a bk_test_oom_make creating a bk_<T> from the bk_<T>_config
 * at make_ctx with the failing allocator. */
#define BK_TEST_DEFINE_OOM_MAKE(T, linkage)                                    \
  linkage bk_status T##_oom_make(const void *make_ctx, const bk_allocator *al, \
                                 void **out) {                                 \
    bk_##T##_config cfg = *(const bk_##T##_config *)make_ctx;                  \
    cfg.allocator = al;                                                        \
    bk_##T *obj = *out;                                                        \
    bk_status s = bk_##T##_create(&obj, &cfg);                                 \
    *out = obj;                                                                \
    return s;                                                                  \
  }

/* Deserialize blob[0, len) through the codec with `al` (NULL: libc); fails
 * the test unless it loads and sets the out-parameter. */
void *bk_test_restore(const bk_test_codec *c, const unsigned char *blob,
                      size_t len, const bk_allocator *al);

/* Sanitizer and unoptimised builds run the heavy tests with less work. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    !defined(__OPTIMIZE__)
#define BK_TEST_SLOW_BUILD 1
#else
#define BK_TEST_SLOW_BUILD 0
#endif
/* Thread-sanitizer builds: the concurrency tests run shorter races. */
#if defined(__SANITIZE_THREAD__)
#define BK_TEST_TSAN_BUILD 1
#else
#define BK_TEST_TSAN_BUILD 0
#endif

#define assert_bk_ok(expr) assert_int_equal((expr), BK_OK)
#define assert_bk_status(expr, st) assert_int_equal((expr), (st))

#endif
