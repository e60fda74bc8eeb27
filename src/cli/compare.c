/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit compare`: every structure bloomkit has, on one workload, in one
 * table.
 *
 * The workload: --keys distinct keys (generated, --key-len bytes each, or
 * the distinct lines of --keys-file) are added; then --lookups lookups, a
 * --present share of them keys that were added and the rest keys that
 * were not (generated keys are distinct by construction: the first 8 bytes
 * are a bijection of the key's index; file keys are deduplicated, and the
 * lines after the first --keys distinct ones are the absent pool, half the
 * file without --keys, as a line on stderr says). Every
 * structure is sized for the same target: --fpp for --keys keys, or
 * --bits-per-key cells per key (bits for a Bloom filter, counters for a
 * counting one, bits per constituent filter for an FBF) with the optimal
 * k, the target then being the textbook rate of that size.
 *
 * A row is one structure in one configuration. Its figures:
 *   bits/key   memory * 8 / keys, after the adds (what info reports)
 *   target     the fpp it was sized for
 *   fpr        false positives / absent lookups (single-key contains)
 *   fn         present keys reported absent: 0 for every correct filter
 *   add        ns per single-key add (the build), --threads threads when
 *              the structure allows concurrent adds
 *   add_batch  ns per key through the batch API (a second instance)
 *   remove, remove_batch, contains, contains_batch   ns per key likewise
 *   memory     bytes held after the adds
 *   build_ms   create + every single-key add
 * A figure a structure has no operation for is "-" (empty in CSV, null in
 * JSON). Times are wall-clock over each whole phase (CLOCK_MONOTONIC); with
 * several threads the keys are split into equal ranges.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bloomkit/bloom_inline.h"
#include "bloomkit/cbf.h"
#include "bloomkit/kbf.h"
#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "bloomkit/params.h"
#include "bloomkit/rbf.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/plot.h"

#ifdef BK_HAVE_LIBBLOOM
#include <bloom.h>
#endif

#define PROG "bloomkit compare"
#define BATCH 256 /* keys per batch call */
#define MAX_THREADS 64
#define MAX_KEY_LEN 4096
#define DEFAULT_KEYS 1000000
#define DEFAULT_KEY_LEN 16
#define DEFAULT_SEED 20261125

/* ---- the workload ---------------------------------------------------------
 */

typedef struct workload {
  uint64_t n;        /* keys added */
  const void **keys; /* n added, then n_absent never added */
  size_t *lens;
  uint64_t n_absent; /* the absent pool */
  uint64_t n_lookups;
  const void **look; /* the lookups, present and absent mixed */
  size_t *look_lens;
  bool *look_present;
  uint64_t n_look_absent;
  unsigned char *arena;      /* generated keys / the file's bytes */
  unsigned char *look_arena; /* the lookups' bytes, in lookup order */
  double fpp;                /* the target of every structure */
  double bits_per_key;       /* 0: sized by fpp */
  unsigned threads;
  uint64_t seed;
} workload;

static void workload_free(workload *w) {
  free(w->keys);
  free(w->lens);
  free(w->look);
  free(w->look_lens);
  free(w->look_present);
  free(w->arena);
  free(w->look_arena);
}

/* Key i of a generated set: its first 8 bytes are splitmix_output(seed +
 * i gamma) (a bijection of i, so keys are distinct), the rest more output
 * of the same stream. */
static void make_key(unsigned char *dst, unsigned len, uint64_t seed,
                     uint64_t i) {
  uint64_t x = splitmix_output(seed + (i + 1) * SPLITMIX_GAMMA);
  unsigned char first[8];
  for (unsigned b = 0; b < 8; b++) first[b] = (unsigned char)(x >> (8 * b));
  memcpy(dst, first, len < 8 ? len : 8);
  for (unsigned off = 8; off < len; off += 8) {
    x = splitmix_output(x ^ (off * SPLITMIX_GAMMA));
    for (unsigned b = 0; b < 8 && off + b < len; b++)
      dst[off + b] = (unsigned char)(x >> (8 * b));
  }
}

static int generate_keys(workload *w, unsigned key_len, uint64_t absent) {
  uint64_t total = w->n + absent;
  w->arena = malloc((size_t)(total * key_len));
  w->keys = malloc((size_t)total * sizeof *w->keys);
  w->lens = malloc((size_t)total * sizeof *w->lens);
  if (!w->arena || !w->keys || !w->lens) return 1;
  for (uint64_t i = 0; i < total; i++) {
    unsigned char *k = w->arena + i * key_len;
    make_key(k, key_len, w->seed, i);
    w->keys[i] = k;
    w->lens[i] = key_len;
  }
  w->n_absent = absent;
  return 0;
}

/* A set of 128-bit digests (open addressing) to drop repeated lines. */
typedef struct digest_set {
  bk_hash *slots;
  bool *used;
  uint64_t mask;
} digest_set;

static bool digest_insert(digest_set *s, bk_hash h) {
  for (uint64_t i = h.lo & s->mask;; i = (i + 1) & s->mask) {
    if (!s->used[i]) {
      s->used[i] = true;
      s->slots[i] = h;
      return true;
    }
    if (s->slots[i].lo == h.lo && s->slots[i].hi == h.hi) return false;
  }
}

static int read_keys_file(workload *w, const char *path, bool n_given) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
    return 1;
  }
  size_t cap = 1 << 20, len = 0;
  w->arena = malloc(cap);
  size_t got;
  while (w->arena && (got = fread(w->arena + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      unsigned char *bigger = realloc(w->arena, cap * 2);
      if (!bigger) {
        free(w->arena);
        w->arena = NULL;
        break;
      }
      w->arena = bigger;
      cap *= 2;
    }
  }
  bool bad = ferror(f);
  fclose(f);
  if (!w->arena || bad) {
    fprintf(stderr, PROG ": %s: %s\n", path,
            bad ? "read error" : "out of memory");
    return 1;
  }
  uint64_t lines = 0;
  for (size_t i = 0; i < len; i++) lines += w->arena[i] == '\n';
  lines++; /* a last line without a line feed */
  w->keys = malloc((size_t)lines * sizeof *w->keys);
  w->lens = malloc((size_t)lines * sizeof *w->lens);
  uint64_t slots = 16;
  while (slots < 2 * lines) slots *= 2;
  digest_set set = {calloc((size_t)slots, sizeof(bk_hash)),
                    calloc((size_t)slots, 1), slots - 1};
  if (!w->keys || !w->lens || !set.slots || !set.used) {
    free(set.slots);
    free(set.used);
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  uint64_t distinct = 0;
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && w->arena[i] != '\n') continue;
    size_t end = i;
    if (end > start && w->arena[end - 1] == '\r') end--;
    size_t klen = end - start;
    if (klen > 0 && klen <= MAX_KEY_LEN) {
      bk_hash h;
      (void)bk_hash_bytes(BK_HASH_XXH3, 0, w->arena + start, klen, &h);
      if (digest_insert(&set, h)) {
        w->keys[distinct] = w->arena + start;
        w->lens[distinct] = klen;
        distinct++;
      }
    }
    start = i + 1;
  }
  free(set.slots);
  free(set.used);
  if (!n_given) w->n = distinct / 2;
  if (w->n == 0 || w->n >= distinct) {
    fprintf(stderr,
            PROG ": %s: %" PRIu64 " distinct non-empty lines; --keys %" PRIu64
                 " needs more (the lines after the first --keys are the "
                 "absent keys)\n",
            path, distinct, w->n);
    return 1;
  }
  w->n_absent = distinct - w->n;
  /* Which lines are which is said, not left to be guessed: by default half
   * the file is never added. */
  fprintf(stderr,
          "# keys-file %s: %" PRIu64 " distinct lines, the first %" PRIu64
          " added (present keys), the other %" PRIu64 " the absent keys%s\n",
          path, distinct, w->n, w->n_absent,
          n_given ? "" : " (half each without --keys)");
  return 0;
}

static int make_lookups(workload *w, double present_share) {
  w->look = malloc((size_t)w->n_lookups * sizeof *w->look);
  w->look_lens = malloc((size_t)w->n_lookups * sizeof *w->look_lens);
  w->look_present = malloc((size_t)w->n_lookups);
  if (!w->look || !w->look_lens || !w->look_present) return 1;
  /* The lookups' bytes are copied in lookup order, so reading a key is a
   * sequential access as it is for the adds and the structure's own misses
   * are what the figures show. */
  size_t bytes = 0;
  uint64_t s = w->seed ^ UINT64_C(0x6c6f6f6b757073);
  w->n_look_absent = 0;
  for (uint64_t i = 0; i < w->n_lookups; i++) {
    s += SPLITMIX_GAMMA;
    uint64_t r = splitmix_output(s);
    bool present = (double)(r >> 11) * 0x1.0p-53 < present_share;
    s += SPLITMIX_GAMMA;
    uint64_t pick = splitmix_output(s);
    uint64_t idx = present ? pick % w->n : w->n + pick % w->n_absent;
    w->look[i] = w->keys[idx];
    w->look_lens[i] = w->lens[idx];
    w->look_present[i] = present;
    w->n_look_absent += !present;
    bytes += w->lens[idx];
  }
  w->look_arena = malloc(bytes ? bytes : 1);
  if (!w->look_arena) return 1;
  unsigned char *p = w->look_arena;
  for (uint64_t i = 0; i < w->n_lookups; i++) {
    memcpy(p, w->look[i], w->look_lens[i]);
    w->look[i] = p;
    p += w->look_lens[i];
  }
  return 0;
}

/* ---- the structures ---------------------------------------------------- */

/* A structure's operations; NULL where it has none. `id` is the key's
 * index (the scalable filter's caller id). */
typedef struct kind {
  void *(*create)(const workload *w, unsigned variant, double *target);
  void (*destroy)(void *s);
  bk_status (*add)(void *s, const void *key, size_t len, uint64_t id);
  bk_status (*add_many)(void *s, const void *const *keys, const size_t *lens,
                        size_t n, uint64_t first_id);
  bk_status (*remove)(void *s, const void *key, size_t len, uint64_t id);
  bk_status (*remove_many)(void *s, const void *const *keys, const size_t *lens,
                           size_t n, uint64_t first_id);
  bool (*contains)(const void *s, const void *key, size_t len);
  bk_status (*contains_many)(const void *s, const void *const *keys,
                             const size_t *lens, size_t n, bool *out);
  size_t (*memory)(const void *s);
} kind;

typedef struct variant {
  const char *name;
  const kind *ops;
  unsigned variant; /* passed to create */
  bool threads_add; /* adds may run from several threads */
} variant;

/* Sizing shared by the Bloom-like structures: m cells and k for n keys. */
static void size_for(const workload *w, uint64_t *m, unsigned *k,
                     double *target) {
  if (w->bits_per_key > 0) {
    *m = (uint64_t)ceil(w->bits_per_key * (double)w->n);
    *k = (unsigned)lround(w->bits_per_key * log(2.0));
    if (*k < 1) *k = 1;
    if (bk_params_fpp(*m, *k, w->n, target) != BK_OK) *target = NAN;
  } else {
    if (bk_params_for_target(w->n, w->fpp, m, k) != BK_OK) *m = 0;
    *target = w->fpp;
  }
}

/* bk_bloom; variant: the layout in bits 0-1, bit 2 single writer. */
#define BLOOM_SINGLE_WRITER 4u
static void *bkbloom_create(const workload *w, unsigned v, double *target) {
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  bk_bloom_layout layout = (bk_bloom_layout)(v & 3u);
  bool split = layout == BK_BLOOM_SPLIT_BLOCK;
  bk_bloom_config c = {.m_bits = m,
                       .k = split ? 8 : k, /* the layout's own k */
                       .layout = layout,
                       .single_writer = (v & BLOOM_SINGLE_WRITER) != 0,
                       .seed = w->seed};
  if (w->bits_per_key == 0) {
    c.m_bits = 0;
    c.k = 0;
    c.capacity = w->n;
    c.fpp = w->fpp;
  }
  bk_bloom *b = NULL;
  if (bk_bloom_create(&b, &c) != BK_OK) return NULL;
  bk_bloom_info i;
  if (split && w->bits_per_key > 0 && bk_bloom_info_get(b, &i) == BK_OK &&
      bk_params_fpp_split_block(i.m_bits, w->n, target) != BK_OK)
    *target = NAN;
  return b;
}
static void bkbloom_destroy(void *s) {
  bk_bloom_destroy(s);
}
static bk_status bkbloom_add(void *s, const void *key, size_t len,
                             uint64_t id) {
  (void)id;
  return bk_bloom_add(s, key, len);
}
static bk_status bkbloom_add_many(void *s, const void *const *keys,
                                  const size_t *lens, size_t n, uint64_t id) {
  (void)id;
  return bk_bloom_add_many(s, keys, lens, n);
}
static bool bkbloom_contains(const void *s, const void *key, size_t len) {
  bool r = false;
  (void)bk_bloom_contains(s, key, len, &r);
  return r;
}
static bk_status bkbloom_contains_many(const void *s, const void *const *keys,
                                       const size_t *lens, size_t n,
                                       bool *out) {
  return bk_bloom_contains_many(s, keys, lens, n, out);
}
static size_t bkbloom_memory(const void *s) {
  bk_bloom_info i;
  return bk_bloom_info_get(s, &i) == BK_OK ? i.memory : 0;
}
static const kind bkbloom_kind = {bkbloom_create,
                                  bkbloom_destroy,
                                  bkbloom_add,
                                  bkbloom_add_many,
                                  NULL,
                                  NULL,
                                  bkbloom_contains,
                                  bkbloom_contains_many,
                                  bkbloom_memory};

/* bk_cbf, 4-bit counters; variant: bit 0 blocked, bit 1 single writer. */
static void *cbf_create(const workload *w, unsigned v, double *target) {
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  bk_cbf_config c = {.m_counters = m,
                     .k = k,
                     .layout = (v & 1) ? BK_BLOOM_BLOCKED : BK_BLOOM_STANDARD,
                     .single_writer = (v & 2) != 0,
                     .seed = w->seed};
  if (w->bits_per_key == 0) {
    c.m_counters = 0;
    c.k = 0;
    c.capacity = w->n;
    c.fpp = w->fpp;
  }
  bk_cbf *f = NULL;
  return bk_cbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void cbf_destroy(void *s) {
  bk_cbf_destroy(s);
}
static bk_status cbf_add(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  return bk_cbf_add(s, key, len);
}
static bk_status cbf_add_many(void *s, const void *const *keys,
                              const size_t *lens, size_t n, uint64_t id) {
  (void)id;
  return bk_cbf_add_many(s, keys, lens, n);
}
static bk_status cbf_remove(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  return bk_cbf_remove(s, key, len);
}
static bk_status cbf_remove_many(void *s, const void *const *keys,
                                 const size_t *lens, size_t n, uint64_t id) {
  (void)id;
  size_t removed;
  return bk_cbf_remove_many(s, keys, lens, n, &removed);
}
static bool cbf_contains(const void *s, const void *key, size_t len) {
  bool r = false;
  (void)bk_cbf_contains(s, key, len, &r);
  return r;
}
static bk_status cbf_contains_many(const void *s, const void *const *keys,
                                   const size_t *lens, size_t n, bool *out) {
  return bk_cbf_contains_many(s, keys, lens, n, out);
}
static size_t cbf_memory(const void *s) {
  bk_cbf_info i;
  return bk_cbf_info_get(s, &i) == BK_OK ? i.memory : 0;
}
static const kind cbf_kind = {cbf_create,   cbf_destroy,       cbf_add,
                              cbf_add_many, cbf_remove,        cbf_remove_many,
                              cbf_contains, cbf_contains_many, cbf_memory};

/* bk_kbf, 32-bit cells, sized as the Bloom filters; each key stores one of
 * 15 values (its id mod 15). contains, as a set: the query does not say
 * "absent" (a value, or not decodable); bloomkit kbf-experiments measures
 * the values. */
static void *kbf_create(const workload *w, unsigned v, double *target) {
  (void)v;
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  if (m == 0) return NULL;
  bk_kbf_config c = {.m_cells = m, .k = k, .max_values = 15, .seed = w->seed};
  bk_kbf *f = NULL;
  return bk_kbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void kbf_destroy(void *s) {
  bk_kbf_destroy(s);
}
static bk_status kbf_add(void *s, const void *key, size_t len, uint64_t id) {
  const unsigned char value = (unsigned char)(id % 15);
  return bk_kbf_insert(s, key, len, &value, 1);
}
static bk_status kbf_remove(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  /* A key whose cells cannot be decoded cannot be deleted (the kBF cannot
   * tell which encoding to take out, so it refuses and changes nothing):
   * an outcome of the structure, counted like any other remove. At 10^6
   * keys sized for 1 % a few keys are undecodable. */
  bk_status st = bk_kbf_delete(s, key, len);
  return st == BK_EUNDECODABLE ? BK_OK : st;
}
static bool kbf_contains(const void *s, const void *key, size_t len) {
  bk_kbf_result r = BK_KBF_ABSENT;
  (void)bk_kbf_query(s, key, len, &r, NULL, NULL);
  return r != BK_KBF_ABSENT;
}
static size_t kbf_memory(const void *s) {
  bk_kbf_info i;
  return bk_kbf_info_get(s, &i) == BK_OK
             ? i.memory_cells + i.memory_skbf + i.memory_values
             : 0;
}
static const kind kbf_kind = {kbf_create,   kbf_destroy, kbf_add,
                              NULL,         kbf_remove,  NULL,
                              kbf_contains, NULL,        kbf_memory};

/* bk_scbf in memory, sized for the keys in its first filter. */
static void *scbf_create(const workload *w, unsigned v, double *target) {
  (void)v;
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  double fpp = *target;
  if (!(fpp >= 1e-12 && fpp <= 0.5)) return NULL;
  bk_scbf_config c = {.capacity = w->n, .fpp = fpp, .seed = w->seed};
  bk_scbf *s = NULL;
  return bk_scbf_create(&s, &c) == BK_OK ? s : NULL;
}
static void scbf_destroy(void *s) {
  bk_scbf_destroy(s);
}
static bk_status scbf_add(void *s, const void *key, size_t len, uint64_t id) {
  return bk_scbf_add(s, key, len, id);
}
static bk_status scbf_remove(void *s, const void *key, size_t len,
                             uint64_t id) {
  return bk_scbf_remove(s, key, len, id);
}
static bool scbf_contains(const void *s, const void *key, size_t len) {
  bool r = false;
  (void)bk_scbf_contains(s, key, len, &r);
  return r;
}
static size_t scbf_memory(const void *s) {
  bk_scbf_info i;
  return bk_scbf_info_get(s, &i) == BK_OK ? i.memory : 0;
}
static const kind scbf_kind = {scbf_create,   scbf_destroy, scbf_add,
                               NULL,          scbf_remove,  NULL,
                               scbf_contains, NULL,         scbf_memory};

/* bk_fbf, N = 1, every key within one refresh period (the clock does not
 * move): the present filters hold them all. */
static void *fbf_create(const workload *w, unsigned v, double *target) {
  (void)v;
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  bk_fbf_config c = {.n_past = 1, .refresh_period = 1000, .seed = w->seed};
  if (w->bits_per_key > 0) {
    c.m_bits = m;
    c.k = k;
  } else {
    c.capacity = w->n;
    c.fpp = w->fpp;
  }
  bk_fbf *f = NULL;
  return bk_fbf_create(&f, &c) == BK_OK ? f : NULL;
}
static void fbf_destroy(void *s) {
  bk_fbf_destroy(s);
}
static bk_status fbf_add(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  return bk_fbf_add(s, key, len);
}
static bool fbf_contains(const void *s, const void *key, size_t len) {
  bool r = false;
  (void)bk_fbf_contains(s, key, len, &r);
  return r;
}
static size_t fbf_memory(const void *s) {
  bk_fbf_info i;
  return bk_fbf_info_get(s, &i) == BK_OK ? i.memory : 0;
}
static const kind fbf_kind = {fbf_create,   fbf_destroy, fbf_add,
                              NULL,         NULL,        NULL,
                              fbf_contains, NULL,        fbf_memory};

/* bk_rbf (a retouched filter that recycles above its target). */
static void *rbf_create(const workload *w, unsigned v, double *target) {
  (void)v;
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  bk_rbf_config c = {.seed = w->seed};
  if (w->bits_per_key > 0) {
    c.m_bits = m;
    c.k = k;
    c.target_fpp = 0.5; /* never recycle during the run */
  } else {
    c.capacity = w->n;
    c.fpp = w->fpp;
    c.target_fpp = 0.5;
  }
  bk_rbf *r = NULL;
  return bk_rbf_create(&r, &c) == BK_OK ? r : NULL;
}
static void rbf_destroy(void *s) {
  bk_rbf_destroy(s);
}
static bk_status rbf_add(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  return bk_rbf_add(s, key, len);
}
static bool rbf_contains(const void *s, const void *key, size_t len) {
  bool r = false;
  (void)bk_rbf_contains(s, key, len, &r);
  return r;
}
static size_t rbf_memory(const void *s) {
  bk_rbf_info i;
  return bk_rbf_info_get(s, &i) == BK_OK ? i.memory : 0;
}
static const kind rbf_kind = {rbf_create,   rbf_destroy, rbf_add,
                              NULL,         NULL,        NULL,
                              rbf_contains, NULL,        rbf_memory};

#ifdef BK_HAVE_LIBBLOOM
/* libbloom (Debian's libbloom-dev), sized by its own (entries, error). With
 * --bits-per-key it gets the error that size means for the others. */
static void *lb_create(const workload *w, unsigned v, double *target) {
  (void)v;
  uint64_t m;
  unsigned k;
  size_for(w, &m, &k, target);
  if (w->n > INT32_MAX || !(*target > 0 && *target < 1)) return NULL;
  struct bloom *b = calloc(1, sizeof *b);
  if (b && bloom_init(b, (int)w->n, *target) != 0) {
    free(b);
    b = NULL;
  }
  return b;
}
static void lb_destroy(void *s) {
  if (!s) return;
  bloom_free(s);
  free(s);
}
static bk_status lb_add(void *s, const void *key, size_t len, uint64_t id) {
  (void)id;
  if (len > INT32_MAX) return BK_EINVAL;
  return bloom_add(s, key, (int)len) < 0 ? BK_EINVAL : BK_OK;
}
static bool lb_contains(const void *s, const void *key, size_t len) {
  return bloom_check((struct bloom *)s, key, (int)len) == 1;
}
static size_t lb_memory(const void *s) {
  return (size_t)((const struct bloom *)s)->bytes;
}
static const kind lb_kind = {lb_create, lb_destroy,  lb_add, NULL,     NULL,
                             NULL,      lb_contains, NULL,   lb_memory};
#endif

static const variant variants[] = {
    {"bloom standard", &bkbloom_kind, BK_BLOOM_STANDARD, true},
    {"bloom blocked", &bkbloom_kind, BK_BLOOM_BLOCKED, true},
    {"bloom split-block", &bkbloom_kind, BK_BLOOM_SPLIT_BLOCK, true},
    {"bloom standard 1-writer", &bkbloom_kind,
     BK_BLOOM_STANDARD | BLOOM_SINGLE_WRITER, false},
    {"bloom blocked 1-writer", &bkbloom_kind,
     BK_BLOOM_BLOCKED | BLOOM_SINGLE_WRITER, false},
    {"bloom split-block 1-writer", &bkbloom_kind,
     BK_BLOOM_SPLIT_BLOCK | BLOOM_SINGLE_WRITER, false},
    {"cbf 4-bit standard", &cbf_kind, 0, true},
    {"cbf 4-bit blocked", &cbf_kind, 1, true},
    {"cbf 4-bit standard 1-writer", &cbf_kind, 2, false},
    {"scbf 4-bit (in memory)", &scbf_kind, 0, false},
    {"fbf N=1", &fbf_kind, 0, true},
    {"rbf", &rbf_kind, 0, true},
    {"kbf 32-bit cells", &kbf_kind, 0, false},
#ifdef BK_HAVE_LIBBLOOM
    {"libbloom (peer)", &lb_kind, 0, false},
#endif
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

/* ---- measuring -------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef enum phase {
  PH_ADD,
  PH_ADD_MANY,
  PH_REMOVE,
  PH_REMOVE_MANY,
  PH_CONTAINS,
  PH_CONTAINS_MANY
} phase;

typedef struct job {
  const kind *k;
  void *s;
  const workload *w;
  phase ph;
  uint64_t from, to;
  uint64_t hits_absent, misses_present; /* contains */
  bk_status status;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  const workload *w = j->w;
  const kind *k = j->k;
  bool out[BATCH];
  j->status = BK_OK;
  for (uint64_t i = j->from; i < j->to && j->status == BK_OK;) {
    uint64_t n = j->to - i < BATCH ? j->to - i : BATCH;
    switch (j->ph) {
      case PH_ADD:
        j->status = k->add(j->s, w->keys[i], w->lens[i], i);
        n = 1;
        break;
      case PH_ADD_MANY:
        j->status = k->add_many(j->s, w->keys + i, w->lens + i, n, i);
        break;
      case PH_REMOVE:
        j->status = k->remove(j->s, w->keys[i], w->lens[i], i);
        n = 1;
        break;
      case PH_REMOVE_MANY:
        j->status = k->remove_many(j->s, w->keys + i, w->lens + i, n, i);
        break;
      case PH_CONTAINS: {
        bool r = k->contains(j->s, w->look[i], w->look_lens[i]);
        if (w->look_present[i])
          j->misses_present += !r;
        else
          j->hits_absent += r;
        n = 1;
        break;
      }
      case PH_CONTAINS_MANY:
        j->status =
            k->contains_many(j->s, w->look + i, w->look_lens + i, n, out);
        for (uint64_t b = 0; b < n; b++) {
          if (w->look_present[i + b])
            j->misses_present += !out[b];
          else
            j->hits_absent += out[b];
        }
        break;
    }
    i += n;
  }
  return NULL;
}

/* Run one phase over [0, count) on `threads` threads; ns per key, or NAN
 * after saying what failed. */
static double run_phase(const kind *k, void *s, const workload *w, phase ph,
                        uint64_t count, unsigned threads, uint64_t *hits,
                        uint64_t *misses) {
  job jobs[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  if (threads > count) threads = count ? (unsigned)count : 1;
  for (unsigned t = 0; t < threads; t++)
    jobs[t] =
        (job){k, s, w,    ph, count * t / threads, count * (t + 1) / threads,
              0, 0, BK_OK};
  double t0 = now_s();
  unsigned started = 1;
  for (unsigned t = 1; t < threads; t++, started++)
    if (pthread_create(&tid[t], NULL, run_job, &jobs[t]) != 0) break;
  if (started < threads) { /* do the rest here */
    for (unsigned t = started; t < threads; t++) run_job(&jobs[t]);
  }
  run_job(&jobs[0]);
  for (unsigned t = 1; t < started; t++) pthread_join(tid[t], NULL);
  double elapsed = now_s() - t0;
  uint64_t h = 0, m = 0;
  for (unsigned t = 0; t < threads; t++) {
    if (jobs[t].status != BK_OK) {
      fprintf(stderr, PROG ": a call failed: %s\n",
              bk_strerror(jobs[t].status));
      return NAN;
    }
    h += jobs[t].hits_absent;
    m += jobs[t].misses_present;
  }
  if (hits) *hits = h;
  if (misses) *misses = m;
  return count ? elapsed * 1e9 / (double)count : NAN;
}

typedef struct row {
  const char *name;
  bool ok; /* created and measured */
  double bits_per_key, target, fpr;
  uint64_t false_negatives;
  double add, add_batch, remove, remove_batch, contains, contains_batch;
  size_t memory;
  double build_ms;
} row;

static int measure(const variant *v, const workload *w, row *r) {
  const kind *k = v->ops;
  *r = (row){.name = v->name,
             .add_batch = NAN,
             .remove = NAN,
             .remove_batch = NAN,
             .contains_batch = NAN};
  unsigned add_threads = v->threads_add ? w->threads : 1;
  double t0 = now_s();
  void *s = k->create(w, v->variant, &r->target);
  if (!s) {
    fprintf(stderr, PROG ": %s: cannot be made for this workload; left out\n",
            v->name);
    return 0;
  }
  r->add = run_phase(k, s, w, PH_ADD, w->n, add_threads, NULL, NULL);
  r->build_ms = (now_s() - t0) * 1e3;
  r->memory = k->memory(s);
  r->bits_per_key = (double)r->memory * 8.0 / (double)w->n;
  uint64_t hits = 0, misses = 0;
  r->contains =
      run_phase(k, s, w, PH_CONTAINS, w->n_lookups, w->threads, &hits, &misses);
  r->fpr = w->n_look_absent ? (double)hits / (double)w->n_look_absent : NAN;
  r->false_negatives = misses;
  if (k->contains_many)
    r->contains_batch = run_phase(k, s, w, PH_CONTAINS_MANY, w->n_lookups,
                                  w->threads, NULL, NULL);
  if (k->remove)
    r->remove = run_phase(k, s, w, PH_REMOVE, w->n, add_threads, NULL, NULL);
  k->destroy(s);
  if (k->add_many) {
    double ignored;
    void *s2 = k->create(w, v->variant, &ignored);
    if (s2) {
      r->add_batch =
          run_phase(k, s2, w, PH_ADD_MANY, w->n, add_threads, NULL, NULL);
      if (k->remove_many)
        r->remove_batch =
            run_phase(k, s2, w, PH_REMOVE_MANY, w->n, add_threads, NULL, NULL);
      k->destroy(s2);
    }
  }
  if (isnan(r->add) || isnan(r->contains)) return 1;
  r->ok = true;
  return 0;
}

/* ---- output ------------------------------------------------------------ */

static void print_num(FILE *f, const char *fmt, double v, const char *none) {
  if (isnan(v))
    fputs(none, f);
  else
    fprintf(f, fmt, v);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

#define CSV_HEADER                                                        \
  "structure,bits_per_key,target_fpp,fpr,false_negatives,add_ns,"         \
  "add_batch_ns,remove_ns,remove_batch_ns,contains_ns,contains_batch_ns," \
  "memory_bytes,build_ms"

static void print_csv(FILE *f, const row *rows, size_t n) {
  fputs(CSV_HEADER "\n", f);
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (!r->ok) continue;
    fprintf(f, "%s,%.3f,", r->name, r->bits_per_key);
    print_num(f, "%.6g", r->target, "");
    fputc(',', f);
    print_num(f, "%.6g", r->fpr, "");
    fprintf(f, ",%" PRIu64 ",", r->false_negatives);
    const double t[6] = {r->add,          r->add_batch, r->remove,
                         r->remove_batch, r->contains,  r->contains_batch};
    for (int c = 0; c < 6; c++) {
      print_num(f, "%.2f", t[c], "");
      fputc(',', f);
    }
    fprintf(f, "%zu,%.1f\n", r->memory, r->build_ms);
  }
}

static void print_json(FILE *f, const workload *w, const row *rows, size_t n) {
  fprintf(f,
          "{\"keys\": %" PRIu64 ", \"lookups\": %" PRIu64
          ", \"absent_lookups\": %" PRIu64
          ", \"threads\": %u, \"seed\": %" PRIu64 ", \"rows\": [",
          w->n, w->n_lookups, w->n_look_absent, w->threads, w->seed);
  const char *names[6] = {"add_ns",      "add_batch_ns",
                          "remove_ns",   "remove_batch_ns",
                          "contains_ns", "contains_batch_ns"};
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (!r->ok) continue;
    fputs(first ? "\n  {\"structure\": " : ",\n  {\"structure\": ", f);
    first = false;
    json_string(f, r->name);
    fprintf(f, ", \"bits_per_key\": %.3f, \"target_fpp\": ", r->bits_per_key);
    print_num(f, "%.6g", r->target, "null");
    fputs(", \"fpr\": ", f);
    print_num(f, "%.6g", r->fpr, "null");
    fprintf(f, ", \"false_negatives\": %" PRIu64, r->false_negatives);
    const double t[6] = {r->add,          r->add_batch, r->remove,
                         r->remove_batch, r->contains,  r->contains_batch};
    for (int c = 0; c < 6; c++) {
      fprintf(f, ", \"%s\": ", names[c]);
      print_num(f, "%.2f", t[c], "null");
    }
    fprintf(f, ", \"memory_bytes\": %zu, \"build_ms\": %.1f}", r->memory,
            r->build_ms);
  }
  fputs("\n]}\n", f);
}

static void print_table(FILE *f, const workload *w, const row *rows, size_t n) {
  fprintf(f,
          "# %" PRIu64 " keys added, %" PRIu64 " lookups (%" PRIu64
          " absent), %u thread(s), seed %" PRIu64 "; ns per key\n",
          w->n, w->n_lookups, w->n_look_absent, w->threads, w->seed);
  fprintf(f, "%-28s %8s %9s %9s %4s %7s %7s %7s %7s %8s %8s %9s %8s\n",
          "structure", "bits/key", "target", "fpr", "fn", "add", "add[b]",
          "remove", "rem[b]", "contains", "cont[b]", "memory", "build");
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (!r->ok) continue;
    fprintf(f, "%-28s %8.2f ", r->name, r->bits_per_key);
    print_num(f, "%9.3g", r->target, "        -");
    fputc(' ', f);
    print_num(f, "%9.3g", r->fpr, "        -");
    fprintf(f, " %4" PRIu64, r->false_negatives);
    const double t[6] = {r->add,          r->add_batch, r->remove,
                         r->remove_batch, r->contains,  r->contains_batch};
    for (int c = 0; c < 6; c++) {
      fputc(' ', f);
      if (isnan(t[c]))
        fprintf(f, "%*s", c >= 4 ? 8 : 7, "-");
      else
        fprintf(f, "%*.1f", c >= 4 ? 8 : 7, t[c]);
    }
    fprintf(f, " %7.1f Mi %6.0fms\n", (double)r->memory / 1048576.0,
            r->build_ms);
  }
}

/* The chart: ns per key by operation on a logarithmic axis (the rows span
 * two orders of magnitude, a kBF add against a split-block lookup), each
 * cluster labelled with its structure, bits per key and measured fpp. */
static int plot_compare(const char *dir, const row *rows, size_t n) {
  char *path;
  FILE *f = bk_plot_open_csv(PROG, dir, "compare", &path, stderr);
  if (!f) return 1;
  print_csv(f, rows, n);
  bk_plot_figure fig = {
      .name = "compare",
      .title =
          "bloomkit compare: ns per key by operation (log scale); "
          "each name with its bits per key and measured fpp",
      .x = "structure",
      .xlabel = "",
      .ylabel = "ns per key",
      .logy = true,
      .yformat = "%g",
      .histogram = true,
      .histogram_label =
          "sprintf(\"%s: %.1f bits/key, fpp %.3g\", "
          "strcol('structure'), column('bits_per_key'), "
          "column('fpr'))",
      .key = "outside top center horizontal",
      .width = 1280,
      .height = 820,
      /* Labels at 45 degrees; the margins hold the longest of them. */
      .settings =
          "set xtics rotate by 45 right\nset lmargin 22\n"
          "set bmargin 17",
      .n_series = 6,
      .series = {{"add_ns", "add"},
                 {"add_batch_ns", "add, batch"},
                 {"remove_ns", "remove"},
                 {"remove_batch_ns", "remove, batch"},
                 {"contains_ns", "contains"},
                 {"contains_batch_ns", "contains, batch"}},
  };
  if (bk_plot_close_and_draw(PROG, dir, f, path, &fig, 1, stderr)) return 1;
  static const char *const written[] = {".csv", ".gp", ".png"};
  for (size_t i = 0; i < 3; i++)
    fprintf(stderr, PROG ": wrote %s/compare%s\n", dir, written[i]);
  return 0;
}

/* ---- the command ------------------------------------------------------- */

static const char *const variant_names[N_VARIANTS + 1] = {"bloom-standard",
                                                          "bloom-blocked",
                                                          "bloom-split",
                                                          "bloom-standard-1w",
                                                          "bloom-blocked-1w",
                                                          "bloom-split-1w",
                                                          "cbf-standard",
                                                          "cbf-blocked",
                                                          "cbf-standard-1w",
                                                          "scbf",
                                                          "fbf",
                                                          "rbf",
                                                          "kbf",
#ifdef BK_HAVE_LIBBLOOM
                                                          "libbloom",
#endif
                                                          NULL};

int bk_cli_compare(int argc, char **argv) {
  /* --window: the sliding-window workload, its own options (compare_window.c)
   */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--window") == 0 ||
        strncmp(argv[i], "--window=", 9) == 0)
      return bk__cli_compare_window(argc, argv);
  workload w = {0};
  uint64_t lookups = 0;
  unsigned key_len = DEFAULT_KEY_LEN;
  const char *keys_file = NULL, *plot_dir = NULL;
  double present = 0.5;
  bool csv = false, json = false, keys_given = false;
  unsigned only[N_VARIANTS];
  size_t n_only = 0;
  bk_cli_opt opts[] = {
      BK_CLI_U64("keys", &w.n, DEFAULT_KEYS, 1, UINT64_C(1) << 32, "N",
                 "distinct keys added", .section = "workload",
                 .given = &keys_given),
      BK_CLI_UNSIGNED("key-len", &key_len, DEFAULT_KEY_LEN, 8, MAX_KEY_LEN, "L",
                      "bytes per generated key"),
      BK_CLI_STRING("keys-file", &keys_file, NULL, "a file", "FILE",
                    "keys from FILE, one per line: of its distinct "
                    "non-empty lines the first --keys (without --keys, "
                    "half of them) are added and the rest are the absent "
                    "keys the lookups miss with; stderr says how many of "
                    "each",
                    .default_text = "generated"),
      BK_CLI_U64("lookups", &lookups, 0, 1, UINT64_C(1) << 32, "N",
                 "contains calls measured",
                 .default_text = "as many as --keys"),
      BK_CLI_DOUBLE("present", &present, 0.5, 0.0, 1.0, "F",
                    "share of the lookups that are added keys"),
      BK_CLI_DOUBLE("fpp", &w.fpp, 0.01, 1e-9, 0.5, "P",
                    "the false positive rate every structure is sized for",
                    .d_open = BK_CLI_OPEN_MAX),
      BK_CLI_DOUBLE("bits-per-key", &w.bits_per_key, 0.0, 1.0, 64.0, "B",
                    "size by cells per key instead (bits; counters for a "
                    "counting filter; bits per filter for the FBF), with "
                    "the optimal k",
                    .default_text = "sized by --fpp"),
      BK_CLI_UNSIGNED("threads", &w.threads, 1, 1, MAX_THREADS, "T",
                      "threads for lookups and for the adds of structures "
                      "that take concurrent adds"),
      BK_CLI_CHOICE_LIST(
          "only", only, &n_only, N_VARIANTS, NULL, variant_names, "LIST",
          "some of the structures, e.g. bloom-blocked,cbf-standard",
          .default_text = "all"),
      BK_CLI_U64("seed", &w.seed, DEFAULT_SEED, 0, UINT64_MAX, "N",
                 "seed of the generated keys and of every hash"),
      BK_CLI_FLAG("csv", &csv, "CSV instead of the table", .section = "output"),
      BK_CLI_FLAG("json", &json, "JSON instead of the table"),
      BK_CLI_STRING("plot", &plot_dir, NULL, "a directory", "DIR",
                    "also write DIR/compare.csv, DIR/compare.gp and "
                    "DIR/compare.png (ns per key by operation on a log "
                    "scale, each row labelled with its bits per key and "
                    "measured fpp; drawn with gnuplot) and name them on "
                    "stderr",
                    .default_text = "no picture"),
  };
  const bk_cli_command cmd = {
      .prog = PROG,
      .description =
          "Run every structure bloomkit has on one workload and print one "
          "table:\nbits per key, measured false positive rate against the "
          "target, ns per\nadd / remove / contains (single and batched), "
          "memory and build time.\n",
      .epilog =
          "fn counts added keys reported absent: 0 for every correct "
          "filter.\n[b]: the batch API, 256 keys a call. '-': the "
          "structure has no such operation.\nWith --window N: the "
          "forgetful filters on a sliding window of N ids (its\noptions: "
          "bloomkit compare --window N --help).\n",
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
  };
  int status = bk_cli_parse(&cmd, argc, argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  if (csv && json)
    return bk_cli_usage_error(stderr, PROG, "--csv and --json: pick one");
  if (plot_dir) {
    if (bk_plot_prepare(PROG, plot_dir, stderr)) return 1;
  }
  status = 1;
  if (keys_file) {
    if (read_keys_file(&w, keys_file, keys_given)) goto done;
  } else if (generate_keys(&w, key_len, w.n)) {
    fprintf(stderr, PROG ": out of memory for %" PRIu64 " keys\n", w.n);
    goto done;
  }
  w.n_lookups = lookups ? lookups : w.n;
  if (make_lookups(&w, present)) {
    fprintf(stderr, PROG ": out of memory\n");
    goto done;
  }
  unsigned chosen[N_VARIANTS];
  size_t n_chosen = 0;
  if (n_only)
    for (size_t i = 0; i < n_only; i++) chosen[n_chosen++] = only[i];
  else
    for (unsigned i = 0; i < N_VARIANTS; i++) chosen[n_chosen++] = i;
  /* About 100 ns per key and operation, five operations a row. */
  double estimate = (double)n_chosen *
                    (4.0 * (double)w.n + 2.0 * (double)w.n_lookups) * 100e-9;
  if (estimate > 10)
    fprintf(stderr, PROG ": %zu structures, about %.0f s\n", n_chosen,
            estimate);
  bool tty = isatty(2);
  row rows[N_VARIANTS];
  for (size_t i = 0; i < n_chosen; i++) {
    if (tty)
      fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, n_chosen,
              variants[chosen[i]].name);
    if (measure(&variants[chosen[i]], &w, &rows[i])) {
      if (tty) fputc('\n', stderr);
      goto done;
    }
  }
  if (tty) fputs("\r\033[K", stderr);
  if (csv)
    print_csv(stdout, rows, n_chosen);
  else if (json)
    print_json(stdout, &w, rows, n_chosen);
  else
    print_table(stdout, &w, rows, n_chosen);
  status = plot_dir ? plot_compare(plot_dir, rows, n_chosen) : 0;
  status = bk_cli_flush_output(PROG, status, stdout, stderr);
done:
  workload_free(&w);
  return status;
}
