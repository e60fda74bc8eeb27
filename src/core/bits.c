/* SPDX-License-Identifier: MIT */
/*
 * bk_bits: the bit array. Bit i lives in word i / 64 at position i % 64
 * (least significant first), so the serialized payload, a run of
 * little-endian words, reads the same on every machine.
 *
 *   word 0                       word 1
 *   [63 ............ 1 0]        [127 ........... 65 64]
 */
#include "internal.h"

#define BITS_VERSION 1
#define BITS_HEADER_LEN (BK__PREFIX_SIZE + 8)

bk_status bk__bits_init(bk_bits *bits, uint64_t n_bits, const bk__alloc *al) {
  BK_RETURN_IF(n_bits == 0 || n_bits > BK_BITS_MAX, BK_EINVAL);
  bits->alloc = *al;
  bits->n_bits = n_bits;
  bits->n_words = (n_bits + 63) / 64;
  BK_TRY(bk__region_alloc(al, (size_t)bits->n_words * 8, &bits->region));
  bits->words = bits->region.data;
  return BK_OK;
}

void bk__bits_release(bk_bits *bits) {
  bk__region_free(&bits->alloc, &bits->region);
  bits->words = NULL;
}

bk_status bk_bits_create(bk_bits **out, uint64_t n_bits,
                         const bk_allocator *allocator) {
  BK_RETURN_IF(!out || n_bits == 0 || n_bits > BK_BITS_MAX, BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_bits *bits = bk__calloc(&al, 1, sizeof *bits);
  BK_RETURN_IF(!bits, BK_ENOMEM);
  bk_status s = bk__bits_init(bits, n_bits, &al);
  if (s != BK_OK) {
    bk__free(&al, bits);
    return s;
  }
  *out = bits;
  return BK_OK;
}

void bk_bits_destroy(bk_bits *bits) {
  if (!bits) return;
  bk__alloc al = bits->alloc;
  bk__bits_release(bits);
  bk__free(&al, bits);
}

uint64_t bk_bits_size(const bk_bits *bits) {
  return bits ? bits->n_bits : 0;
}

size_t bk_bits_memory(const bk_bits *bits) {
  return bits ? sizeof *bits + bits->region.size : 0;
}

static inline uint64_t bit_mask(uint64_t index) {
  return (uint64_t)1 << (index & 63);
}

bk_status bk_bits_set(bk_bits *bits, uint64_t index) {
  BK_RETURN_IF(!bits || index >= bits->n_bits, BK_EINVAL);
  __atomic_fetch_or(&bits->words[index >> 6], bit_mask(index),
                    __ATOMIC_RELAXED);
  return BK_OK;
}

bk_status bk_bits_clear(bk_bits *bits, uint64_t index) {
  BK_RETURN_IF(!bits || index >= bits->n_bits, BK_EINVAL);
  __atomic_fetch_and(&bits->words[index >> 6], ~bit_mask(index),
                     __ATOMIC_RELAXED);
  return BK_OK;
}

bk_status bk_bits_test(const bk_bits *bits, uint64_t index, bool *out) {
  BK_RETURN_IF(!bits || !out || index >= bits->n_bits, BK_EINVAL);
  uint64_t w = __atomic_load_n(&bits->words[index >> 6], __ATOMIC_RELAXED);
  *out = (w & bit_mask(index)) != 0;
  return BK_OK;
}

bk_status bk_bits_test_and_set(bk_bits *bits, uint64_t index, bool *was_set) {
  BK_RETURN_IF(!bits || !was_set || index >= bits->n_bits, BK_EINVAL);
  uint64_t old = __atomic_fetch_or(&bits->words[index >> 6], bit_mask(index),
                                   __ATOMIC_ACQ_REL);
  *was_set = (old & bit_mask(index)) != 0;
  return BK_OK;
}

uint64_t bk__popcount_words(const uint64_t *w, uint64_t n_words) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < n_words; i++)
    total += (uint64_t)__builtin_popcountll(
        __atomic_load_n(&w[i], __ATOMIC_RELAXED));
  return total;
}

bk_status bk_bits_popcount(const bk_bits *bits, uint64_t *out) {
  BK_RETURN_IF(!bits || !out, BK_EINVAL);
  *out = bk__popcount_words(bits->words, bits->n_words);
  return BK_OK;
}

bk_status bk_bits_clear_all(bk_bits *bits) {
  BK_RETURN_IF(!bits, BK_EINVAL);
  bk__region_zero(&bits->region);
  return BK_OK;
}

bk_status bk_bits_union(bk_bits *dst, const bk_bits *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(dst->n_bits != src->n_bits, BK_EMISMATCH);
  /* Atomic per word, so a concurrent single-bit update of dst survives. */
  for (uint64_t i = 0; i < dst->n_words; i++) {
    uint64_t s = __atomic_load_n(&src->words[i], __ATOMIC_RELAXED);
    if (s) __atomic_fetch_or(&dst->words[i], s, __ATOMIC_RELAXED);
  }
  return BK_OK;
}

bk_status bk_bits_intersect(bk_bits *dst, const bk_bits *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(dst->n_bits != src->n_bits, BK_EMISMATCH);
  for (uint64_t i = 0; i < dst->n_words; i++) {
    uint64_t s = __atomic_load_n(&src->words[i], __ATOMIC_RELAXED);
    if (~s & __atomic_load_n(&dst->words[i], __ATOMIC_RELAXED))
      __atomic_fetch_and(&dst->words[i], s, __ATOMIC_RELAXED);
  }
  return BK_OK;
}

/* Word by word with relaxed atomic loads: serialize may run beside
 * single-bit updates (bits.h), and a torn copy of a word must not happen. */
void bk__words_store(unsigned char *p, const uint64_t *w, uint64_t n_words) {
  for (uint64_t i = 0; i < n_words; i++)
    bk__store_le64(p + 8 * i, __atomic_load_n(&w[i], __ATOMIC_RELAXED));
}

void bk__words_load(uint64_t *w, const unsigned char *p, uint64_t n_words) {
  for (uint64_t i = 0; i < n_words; i++) w[i] = bk__load_le64(p + 8 * i);
}

/* Serialized parameters (after the 24-byte prefix):
 *   24  u64  n_bits
 * payload: ceil(n_bits / 64) little-endian u64 words; bits past n_bits are 0.
 */
bk_status bk_bits_serialized_size(const bk_bits *bits, size_t *out) {
  BK_RETURN_IF(!bits || !out, BK_EINVAL);
  *out = BITS_HEADER_LEN + (size_t)bits->n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_bits_serialize(const bk_bits *bits, void *buf, size_t cap,
                            size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_bits_serialized_size(bits, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  uint64_t payload = bits->n_words * 8;
  bk__format_write_prefix(p, BITS_VERSION, BK__TYPE_BITS, BITS_HEADER_LEN,
                          payload);
  bk__store_le64(p + 24, bits->n_bits);
  bk__words_store(p + BITS_HEADER_LEN, bits->words, bits->n_words);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

/* True when no bit at or past n_bits is set in the last word. */
static bool tail_clean(const uint64_t *w, uint64_t n_words, uint64_t n_bits) {
  unsigned used = (unsigned)(n_bits & 63);
  if (used == 0) return true;
  return (w[n_words - 1] >> used) == 0;
}

bk_status bk_bits_deserialize(const void *buf, size_t len,
                              const bk_allocator *allocator, bk_bits **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_BITS, BITS_VERSION, BITS_HEADER_LEN,
                         &v));
  uint64_t n_bits = bk__load_le64(v.params);
  BK_RETURN_IF(n_bits == 0 || n_bits > BK_BITS_MAX, BK_ECORRUPT);
  uint64_t n_words = (n_bits + 63) / 64;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  /* Check the tail before allocating anything. */
  uint64_t last = bk__load_le64(v.payload + (n_words - 1) * 8);
  BK_RETURN_IF(!tail_clean(&last, 1, n_bits), BK_ECORRUPT);
  bk_bits *bits;
  BK_TRY(bk_bits_create(&bits, n_bits, allocator));
  bk__words_load(bits->words, v.payload, n_words);
  *out = bits;
  return BK_OK;
}
