/* SPDX-License-Identifier: MIT */
/*
 * What the FBF test programs (tests/test_fbf_*.c) share: the seed, the
 * make / hash / contains / add / advance / info / blob one-liners that fail
 * the test on any error, the field offsets of the serialized form for tests
 * that edit blobs, a small adaptive config, and the false positive models
 * (Eq. 4.1, Eq. 4.3 and the shared-bits model) the estimates are checked
 * against.
 */
#ifndef BLOOMKIT_TESTS_FBF_HELPERS_H
#define BLOOMKIT_TESTS_FBF_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"

/* Sanitizer and unoptimised builds run the heavy tests with less work; the
 * statistical tolerances are computed from the sample sizes used. */
#define SLOW_BUILD BK_TEST_SLOW_BUILD
#define TSAN_BUILD BK_TEST_TSAN_BUILD

/* Field offsets of the FBF serialized form (type 4, version 1), for the
 * tests that edit blobs by hand. The format is described in
 * docs/design/fbf.md, section "Serialized format", and in src/fbf/fbf_io.c
 * (which is the truth: header length 160 + 24 W). */
enum {
  OFF_VERSION = 4,
  OFF_M = 24,
  OFF_K = 32,
  OFF_W = 33,
  OFF_HEAD = 34,
  OFF_COUNT = 35,
  OFF_TARGET = 36,
  OFF_MINF = 37,
  OFF_MAXF = 38,
  OFF_ALG = 39,
  OFF_CHECK = 40,
  OFF_ADAPTIVE = 41,
  OFF_RES16 = 42,
  OFF_RES32 = 44,
  OFF_SEED = 48,
  OFF_NOW = 56,
  OFF_NEXT_REFRESH = 64,
  OFF_T = 72,
  OFF_MIN_WINDOW = 80,
  OFF_REFRESHES = 88,
  OFF_FPP = 104,
  OFF_INTERVAL = 112,
  OFF_NEXT_ADAPT = 120,
  OFF_STEP = 128,
  OFF_MIN_PERIOD = 136,
  OFF_MAX_PERIOD = 144,
  OFF_GEN = 152,
  OFF_INSERTED = 160,
};
/* The per-slot arrays after inserted[W]: became_present[W], shared[W]; the
 * lane words follow at the header length. */
#define OFF_SHARED(w) (OFF_INSERTED + 16u * (unsigned)(w))
#define FBF_HEADER_LEN(w) (OFF_INSERTED + 24u * (unsigned)(w))

/* A pointer no call may write: out-parameters start here and must stay. */
extern char fbf_sentinel_storage, fbf_timer_sentinel_storage;
#define SENTINEL ((bk_fbf *)(void *)&fbf_sentinel_storage)
#define SENTINEL_TIMER ((bk_fbf_timer *)(void *)&fbf_timer_sentinel_storage)

/* Ids of elements never inserted anywhere (inserted ids stay below 2^62). */
#define ABSENT_TAG ((uint64_t)1 << 63)

/* An inserted element: its digest, insert time and id. */
typedef struct elem {
  bk_hash h;
  uint64_t s; /* insert time */
  uint64_t id;
} elem;

/* The program's seed (BK_TEST_SEED or one fallback for every FBF test)
 * xor `salt`; bk_test_begin(FBF_SEED_FALLBACK) prints it. */
#define FBF_SEED_FALLBACK 0xFBF5EED5ull
uint64_t fbf_test_seed(uint64_t salt);

/* Each fails the test on any status other than BK_OK. */
bk_fbf *fbf_make(const bk_fbf_config *cfg);
bk_hash fbf_hash_id(const bk_fbf *f, uint64_t id); /* id as 8 LE bytes */
bool fbf_has(const bk_fbf *f, bk_hash h);
bool fbf_has_with(const bk_fbf *f, bk_hash h, bk_fbf_check check);
bool fbf_has_id(const bk_fbf *f, uint64_t id);
/* add_if_absent: true when the element was new (and is now added). */
bool fbf_add_new(bk_fbf *f, bk_hash h);
void fbf_advance(bk_fbf *f, uint64_t now);
bk_fbf_info fbf_info_of(const bk_fbf *f);
double fbf_est_of(const bk_fbf *f, bk_fbf_check check);
double fbf_eq43_of(const bk_fbf *f, bk_fbf_check check);
/* f serialized into an exact-size malloc'd blob (the caller frees it). */
unsigned char *fbf_blob_of(const bk_fbf *f, size_t *len);

/* A small adaptive FBF's settings: 256 bits, k = 3, N = 1, t = 100 in
 * [40, 200] by steps of 20, a tick every 50, up to 8 filters. */
bk_fbf_config fbf_small_adaptive_config(void);

/* Eq. 4.1 as corrected in the design notes: (1 - (1 - 1/m)^{k l})^k. */
double fbf_filter_p(uint64_t m, unsigned k, double l);
/* Eq. 4.3 from per-filter counts, future first (see fbf_helpers.c). */
double fbf_eq43(uint64_t m, unsigned k, const uint64_t *inserted,
                unsigned count, bk_fbf_check check);
/* The rate without Eq. 4.3's independence assumption (fbf_helpers.c). */
double fbf_shared_model(const double *n, unsigned count, uint64_t m, unsigned k,
                        bk_fbf_check check);

#endif
