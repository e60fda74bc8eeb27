/* SPDX-License-Identifier: MIT */
/*
 * What the idem test programs (tests/test_idem_*.c) share: the seed, the
 * strategies, the make / add / get / info / blob one-liners that fail the
 * test on any error, generated keys, a reference model of the table (key
 * index -> value, live) and the check that a table matches it, and the
 * field offsets of the serialized form for tests that edit snapshots.
 */
#ifndef BLOOMKIT_TESTS_IDEM_HELPERS_H
#define BLOOMKIT_TESTS_IDEM_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"

/* Sanitizer and unoptimised builds run the heavy tests with less work. */
#define SLOW_BUILD BK_TEST_SLOW_BUILD
#define TSAN_BUILD BK_TEST_TSAN_BUILD

/* Field offsets of the idem serialized form (type 5, version 2): after the
 * common prefix, strategy, hash_alg, max_key_len, seed and the counts, the
 * length F of the filter's own blob (bk_fbf or bk_rbf, none for NONE and
 * WINDOW), the clock, the timeout, the window and its counts, HYBRID's FBF
 * config; at IDEM_HLEN the filter blob, the client windows, then per key a
 * u32 length, the key and a u64 value. Version 1 ends its header at
 * IDEM_V1_HLEN. The format is described once, beside the code that writes
 * it (src/fbf/idem_io.c), and in docs/design/idem.md. */
enum {
  OFF_VERSION = 4,
  OFF_TYPE = 6,
  OFF_HLEN = 8,
  OFF_RES32 = 12,
  OFF_PLEN = 16,
  OFF_STRATEGY = 24,
  OFF_ALG = 25,
  OFF_RES16 = 26,
  OFF_MAXKEY = 28,
  OFF_SEED = 32,
  OFF_KEYS = 40,
  OFF_APPLIED = 48,
  OFF_DUPS = 56,
  OFF_FSIZE = 64,
  IDEM_V1_HLEN = 72,
  OFF_NOW = 72,
  OFF_TIMEOUT = 80,
  OFF_WINDOW = 88,
  OFF_CLIENTS = 96,
  OFF_LAZY_CAPACITY = 136,
  OFF_WINDOW_START = 176,
  IDEM_HLEN = 184,
};
/* Inside an embedded bk_fbf blob (src/fbf/fbf_io.c). */
enum { FBF_OFF_K = 32, FBF_OFF_ADAPTIVE = 41 };

/* The program's seed (BK_TEST_SEED or one fallback for every idem test)
 * xor `salt`; bk_test_begin(IDEM_SEED_FALLBACK) prints it. */
#define IDEM_SEED_FALLBACK 0x1DE45EEDull
uint64_t idem_test_seed(uint64_t salt);

/* A pointer no call may write: out-parameters start here and must stay. */
extern char idem_sentinel_storage;
#define SENTINEL ((bk_idem *)(void *)&idem_sentinel_storage)

extern const bk_idem_strategy ALL_STRATEGIES[7];
extern const bk_idem_strategy FILTERING[3]; /* those with a filter */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
const char *strat_name(bk_idem_strategy s);

/* Each fails the test on any status other than BK_OK. */
bk_idem *idem_make(const bk_idem_config *cfg);
/* A filter sized so its false positive probability is negligible for every
 * test: 1e-9 at 10000 ops per period, and the RBF's recycle threshold
 * (~8 x 10000 ids at 1e-9) far above any test's op count. */
bk_idem_config generous(bk_idem_strategy s, uint64_t timeout, uint64_t seed);
bk_idem_op_id opid(uint64_t client, uint64_t seq);
/* Add that must succeed; returns the outcome, *value the reported value. */
bk_idem_outcome add_ok(bk_idem *t, const void *key, size_t len,
                       bk_idem_op_id id, int64_t delta, int64_t *value);
#define ADD(t, str, client, seq, delta, vp) \
  add_ok((t), (str), strlen(str), opid((client), (seq)), (delta), (vp))
int64_t get_ok(const bk_idem *t, const void *key, size_t len);
#define GET(t, str) get_ok((t), (str), strlen(str))
bk_idem_info idem_info_of(const bk_idem *t);
/* t serialized into an exact-size malloc'd blob (the caller frees it). */
unsigned char *idem_blob_of(const bk_idem *t, size_t *len);

/* Keys: a prefix (some empty, some with NUL and high bytes) then the key's
 * index as 8 little-endian bytes, so an iterate callback can find a key's
 * model entry from its bytes. 8 to 38 bytes. */
#define KEY_BUF 64
size_t key_of(uint64_t i, unsigned char *buf);
/* The index of a key key_of made; false for any other bytes. */
bool key_index(const void *key, size_t len, uint64_t *idx);

/* A reference model of the table: key index -> value, live. */
typedef struct model {
  size_t n;
  int64_t *value;
  unsigned char *live;
} model;
model model_new(size_t n);
void model_free(model *m);
void model_apply(model *m, uint64_t i, int64_t delta);
/* Remove key i from the table (it must be there) and from the model. */
void model_remove(bk_idem *t, model *m, uint64_t i);

/* An iteration over a table checked against a model (walk_cb counts what
 * it visits; a nonzero stop_after stops the walk after that many). */
typedef struct walk {
  const model *m;
  unsigned *seen;
  uint64_t visits, unknown, twice, dead, wrong;
  uint64_t stop_after;
} walk;
int walk_cb(void *ctx, const void *key, size_t len, int64_t value);

/* Two threads' outcomes (a bk_idem_outcome per op, one byte each) for one
 * op stream: the ops both applied, those neither did, and the TOO_OLD
 * answers (WINDOW: a thread more than W ops of a client behind the other
 * finds the op below the window, applied by the other, so never both). */
typedef struct race_tally {
  size_t both, neither, too_old;
} race_tally;
race_tally race_tally_of(const unsigned char *a, const unsigned char *b,
                         size_t n);

/* The table holds exactly the model's live keys with their values: iterate
 * visits each once (and nothing else), get agrees, deleted keys are
 * ENOTFOUND, info counts them. */
void expect_table(const bk_idem *t, const model *m, const char *what);

#endif
