/* SPDX-License-Identifier: MIT */
/*
 * Private to the library: allocation helpers, the serialized-form helpers
 * shared by every structure, and the layout of the core structs so that
 * components can embed them without an extra pointer chase. Never installed.
 */
#ifndef BLOOMKIT_SRC_CORE_INTERNAL_H
#define BLOOMKIT_SRC_CORE_INTERNAL_H

#include <string.h>

#include "bloomkit/bits.h"
#include "bloomkit/common.h"
#include "bloomkit/counters.h"

/* Cross-component internals (bk__*) are exported from bloomkit_core with
 * BK_API so the other component libraries can share one copy; they are not
 * part of the public API and carry no compatibility promise. */

#define BK_RETURN_IF(cond, status) \
  do {                             \
    if (cond) return (status);     \
  } while (0)

#define BK_TRY(expr)                    \
  do {                                  \
    bk_status bk__s_ = (expr);          \
    if (bk__s_ != BK_OK) return bk__s_; \
  } while (0)

#define BK_LIKELY(x) __builtin_expect(!!(x), 1)
#define BK_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define BK_CACHE_LINE 64u

/* 128-bit products: overflow-free size checks and wide multiplies. */
__extension__ typedef unsigned __int128 bk__u128;

/* ---- allocation ------------------------------------------------------- */

/* The allocator an object keeps: a copy of the caller's, or libc's. */
typedef struct bk__alloc {
  bk_allocator a;
  bool is_libc;
} bk__alloc;

/* BK_EINVAL for an allocator missing alloc or free. */
BK_API bk_status bk__alloc_init(bk__alloc *out, const bk_allocator *user);
BK_API void *bk__malloc(const bk__alloc *al, size_t size);
BK_API void *bk__calloc(const bk__alloc *al, size_t n, size_t size);
BK_API void bk__free(const bk__alloc *al, void *p);

/*
 * Zeroed storage aligned to at least 64 bytes. Large libc-backed regions
 * (>= 4 MiB) come from mmap, 2 MiB aligned and advised for transparent huge
 * pages, so a random probe costs one TLB miss less; with a custom allocator
 * bloomkit over-allocates and aligns inside the block.
 */
typedef struct bk__region {
  void *data;    /* aligned, zeroed */
  void *base;    /* what to give back */
  size_t size;   /* usable bytes at data */
  size_t mapped; /* bytes mapped at base when from mmap, else 0 */
} bk__region;

BK_API bk_status bk__region_alloc(const bk__alloc *al, size_t size,
                                  bk__region *out);
BK_API void bk__region_free(const bk__alloc *al, bk__region *r);
/* Zero a region; large mmap'd regions are given back to the OS instead. */
BK_API void bk__region_zero(bk__region *r);

/* a * b into *out; false on overflow. */
static inline bool bk__mul_ok(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool bk__add_ok(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* ---- little-endian helpers -------------------------------------------- */

/* memcpy-based, so compilers emit one load or store; byte-swapped on
 * big-endian hosts. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BK__LE16(v) __builtin_bswap16(v)
#define BK__LE32(v) __builtin_bswap32(v)
#define BK__LE64(v) __builtin_bswap64(v)
#else
#define BK__LE16(v) (v)
#define BK__LE32(v) (v)
#define BK__LE64(v) (v)
#endif
static inline void bk__store_le16(unsigned char *p, uint16_t v) {
  v = BK__LE16(v);
  memcpy(p, &v, sizeof v);
}
static inline void bk__store_le32(unsigned char *p, uint32_t v) {
  v = BK__LE32(v);
  memcpy(p, &v, sizeof v);
}
static inline void bk__store_le64(unsigned char *p, uint64_t v) {
  v = BK__LE64(v);
  memcpy(p, &v, sizeof v);
}
static inline uint16_t bk__load_le16(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return BK__LE16(v);
}
static inline uint32_t bk__load_le32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return BK__LE32(v);
}
static inline uint64_t bk__load_le64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return BK__LE64(v);
}

/* ---- the common serialized form ----------------------------------------
 *
 *  offset  size  field
 *  ------  ----  ------------------------------------------------------------
 *       0     4  magic "BKIT"
 *       4     2  format version (one monotonic number per structure type)
 *       6     2  type tag (BK__TYPE_*)
 *       8     4  header length H: bytes from offset 0 to the payload
 *      12     4  reserved, must be 0
 *      16     8  payload length P
 *      24  H-24  type parameters (little-endian fields, reserved bytes zero)
 *       H     P  payload
 *     H+P     8  XXH3-64 (seed 0) of bytes [0, H+P)
 *
 * A reader checks, in order: the fixed prefix fits, the magic, the type, the
 * version, H against its expected value, that H + P + 8 equals the buffer
 * length exactly (overflow-checked), then the checksum, and only then the
 * parameters.
 */
#define BK__MAGIC "BKIT"
#define BK__PREFIX_SIZE 24u
#define BK__TRAILER_SIZE 8u

enum {
  BK__TYPE_BITS = 1,
  BK__TYPE_COUNTERS = 2,
  BK__TYPE_BLOOM = 3,
  BK__TYPE_FBF = 4,
  BK__TYPE_IDEM = 5,
  BK__TYPE_RBF = 6,
  BK__TYPE_CBF = 7,
  BK__TYPE_SCBF = 8,
  BK__TYPE_SCBF_FILE = 9, /* bk_scbf's file header (cbf/scbf.c) */
  BK__TYPE_BLOOMCLOCK = 10,
  BK__TYPE_VCLOCK = 11,
  BK__TYPE_KBF = 12,
  BK__TYPE_APBF = 13,
};

/* Writes the 24-byte prefix. */
BK_API void bk__format_write_prefix(unsigned char *p, uint16_t version,
                                    uint16_t type, uint32_t header_len,
                                    uint64_t payload_len);
/* The opening every serializer shares: its output arguments checked,
 * `need` computed by the type's serialized_size call `size_call`, and the
 * buffer checked to hold that many bytes. Returns BK_EINVAL otherwise. */
#define BK__SERIALIZE_OPEN(size_call, need, buf, cap, written) \
  do {                                                         \
    BK_RETURN_IF(!(buf) || !(written), BK_EINVAL);             \
    BK_TRY(size_call);                                         \
    BK_RETURN_IF((cap) < (need), BK_EINVAL);                   \
  } while (0)
/* Appends the checksum of p[0, body_len) at p + body_len. */
BK_API void bk__format_write_trailer(unsigned char *p, size_t body_len);

typedef struct bk__format_view {
  uint16_t version;
  const unsigned char *params; /* type parameters: header_len - 24 bytes */
  size_t params_len;
  const unsigned char *payload;
  uint64_t payload_len;
} bk__format_view;

/*
 * Validate the envelope of `buf` for `type`: magic, type, version in
 * [1, max_version], header length exactly `header_len`, total length, and
 * checksum. Fills *view. Errors: BK_ECORRUPT, BK_EVERSION.
 */
BK_API bk_status bk__format_open(const void *buf, size_t len, uint16_t type,
                                 uint16_t max_version, uint32_t header_len,
                                 bk__format_view *view);

/* bk_params_fpp_blocked for blocks of B cells, 2 <= B <= 512, m a multiple
 * of B (src/core/params.c). */
BK_API bk_status bk__fpp_blocked_cells(uint64_t m, unsigned B, unsigned k,
                                       uint64_t n, double *out);

/* The least m (a multiple of `unit`, from m_start upwards in steps of about
 * 1/64, at most m_max) whose rate fpp_of(m) meets fpp: how a layout whose
 * rate has no closed-form inverse (blocked, split-block, bk_cbf's blocked
 * counters) is sized by (capacity, fpp). The rate must fall as m grows: the
 * candidates are bisected, at most 11 calls of fpp_of. BK_EINVAL when m
 * would pass m_max or fpp is not reached in 1024 steps. */
typedef bk_status (*bk__fpp_of_m)(uint64_t m, const void *ctx, double *out);
BK_API bk_status bk__m_search(uint64_t m_start, uint64_t unit, uint64_t m_max,
                              double fpp, bk__fpp_of_m fpp_of, const void *ctx,
                              uint64_t *out);

/* Tests: switch a split-block bk_bloom between its AVX2 and portable paths
 * (src/core/bloom.c); returns whether the AVX2 path is in use. */
struct bk_bloom;
BK_API bool bk__bloom_use_simd(struct bk_bloom *b, bool on);

/* True when `n` bytes at p are all zero. */
static inline bool bk__all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}

/* ---- struct layouts ----------------------------------------------------- */

struct bk_bits {
  bk__alloc alloc;
  uint64_t n_bits;
  uint64_t n_words;
  uint64_t *words; /* region.data */
  bk__region region;
};

/* Initialise / release a bits object embedded in another struct. */
BK_API bk_status bk__bits_init(bk_bits *bits, uint64_t n_bits,
                               const bk__alloc *al);
BK_API void bk__bits_release(bk_bits *bits);
BK_API uint64_t bk__popcount_words(const uint64_t *w, uint64_t n_words);
/* Payload helpers: words as little-endian u64s. */
BK_API void bk__words_store(unsigned char *p, const uint64_t *w,
                            uint64_t n_words);
BK_API void bk__words_load(uint64_t *w, const unsigned char *p,
                           uint64_t n_words);

struct bk_counters {
  bk__alloc alloc;
  uint64_t n;
  unsigned width;
  uint32_t max;
  uint64_t n_words;     /* storage in 64-bit words */
  unsigned char *bytes; /* region.data */
  bk__region region;
};

#endif
