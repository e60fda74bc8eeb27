/* SPDX-License-Identifier: MIT */
/*
 * bk_counters: packed unsigned counters of 4, 8, 16 or 32 bits.
 *
 * 4-bit counters share a byte, the even index in the low nibble:
 *
 *   byte j:  [ 7 6 5 4 | 3 2 1 0 ]
 *            counter 2j+1  counter 2j
 *
 * Wider counters are plain little-endian u8/u16/u32 arrays, so the storage
 * is its own serialized payload on little-endian machines. Storage is
 * rounded up to whole 64-bit words; bits past the last counter stay zero.
 */
#include "internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
/* The 8/16/32-bit storage doubles as the little-endian payload. */
#error "bk_counters serialization assumes a little-endian host"
#endif

#define COUNTERS_VERSION 1
#define COUNTERS_HEADER_LEN (BK__PREFIX_SIZE + 16)

static bool width_ok(unsigned w) {
  return w == 4 || w == 8 || w == 16 || w == 32;
}

bk_status bk_counters_create(bk_counters **out, uint64_t n, unsigned width,
                             const bk_allocator *allocator) {
  if (width == 0) width = 4;
  BK_RETURN_IF(!out || n == 0 || n > BK_COUNTERS_MAX || !width_ok(width),
               BK_EINVAL);
  bk__alloc al;
  BK_TRY(bk__alloc_init(&al, allocator));
  bk_counters *c = bk__calloc(&al, 1, sizeof *c);
  BK_RETURN_IF(!c, BK_ENOMEM);
  c->alloc = al;
  c->n = n;
  c->width = width;
  c->max = width == 32 ? UINT32_MAX : (uint32_t)((1u << width) - 1);
  c->n_words = (n * width + 63) / 64;
  bk_status s = bk__region_alloc(&al, (size_t)c->n_words * 8, &c->region);
  if (s != BK_OK) {
    bk__free(&al, c);
    return s;
  }
  c->bytes = c->region.data;
  *out = c;
  return BK_OK;
}

void bk_counters_destroy(bk_counters *c) {
  if (!c) return;
  bk__alloc al = c->alloc;
  bk__region_free(&al, &c->region);
  bk__free(&al, c);
}

uint64_t bk_counters_size(const bk_counters *c) {
  return c ? c->n : 0;
}
unsigned bk_counters_width(const bk_counters *c) {
  return c ? c->width : 0;
}
uint32_t bk_counters_max(const bk_counters *c) {
  return c ? c->max : 0;
}
size_t bk_counters_memory(const bk_counters *c) {
  return c ? sizeof *c + c->region.size : 0;
}

/* Unchecked accessors; i < n. Loads are relaxed atomics so that readers may
 * run beside the atomic increments. */
static inline uint32_t raw_get(const bk_counters *c, uint64_t i) {
  switch (c->width) {
    case 4: {
      uint8_t b = __atomic_load_n(&c->bytes[i >> 1], __ATOMIC_RELAXED);
      return (i & 1) ? (uint32_t)(b >> 4) : (uint32_t)(b & 0xF);
    }
    case 8:
      return __atomic_load_n(&((const uint8_t *)c->bytes)[i], __ATOMIC_RELAXED);
    case 16:
      return __atomic_load_n(&((const uint16_t *)(const void *)c->bytes)[i],
                             __ATOMIC_RELAXED);
    default:
      return __atomic_load_n(&((const uint32_t *)(const void *)c->bytes)[i],
                             __ATOMIC_RELAXED);
  }
}

static inline void raw_set(bk_counters *c, uint64_t i, uint32_t v) {
  switch (c->width) {
    case 4: {
      uint8_t *b = &c->bytes[i >> 1];
      if (i & 1)
        *b = (uint8_t)((*b & 0x0F) | (v << 4));
      else
        *b = (uint8_t)((*b & 0xF0) | v);
      break;
    }
    case 8:
      ((uint8_t *)c->bytes)[i] = (uint8_t)v;
      break;
    case 16:
      ((uint16_t *)(void *)c->bytes)[i] = (uint16_t)v;
      break;
    default:
      ((uint32_t *)(void *)c->bytes)[i] = v;
      break;
  }
}

bk_status bk_counters_get(const bk_counters *c, uint64_t i, uint32_t *out) {
  BK_RETURN_IF(!c || !out || i >= c->n, BK_EINVAL);
  *out = raw_get(c, i);
  return BK_OK;
}

bk_status bk_counters_set(bk_counters *c, uint64_t i, uint32_t value) {
  BK_RETURN_IF(!c || i >= c->n, BK_EINVAL);
  BK_RETURN_IF(value > c->max, BK_ERANGE);
  raw_set(c, i, value);
  return BK_OK;
}

/* The saturating step shared by the plain and atomic forms: from `v`, the
 * new value and the status to report. */
static inline bk_status step(uint32_t v, uint32_t max, int dir,
                             uint32_t *next) {
  if (v == max) {
    *next = v;
    return BK_ESATURATED;
  }
  if (dir > 0) {
    *next = v + 1;
    return *next == max ? BK_ESATURATED : BK_OK;
  }
  if (v == 0) {
    *next = 0;
    return BK_EUNDERFLOW;
  }
  *next = v - 1;
  return BK_OK;
}

static bk_status plain_step(bk_counters *c, uint64_t i, int dir,
                            uint32_t *new_value) {
  BK_RETURN_IF(!c || i >= c->n, BK_EINVAL);
  uint32_t next;
  bk_status s = step(raw_get(c, i), c->max, dir, &next);
  raw_set(c, i, next);
  if (new_value) *new_value = next;
  return s;
}

bk_status bk_counters_inc(bk_counters *c, uint64_t i, uint32_t *new_value) {
  return plain_step(c, i, +1, new_value);
}

bk_status bk_counters_dec(bk_counters *c, uint64_t i, uint32_t *new_value) {
  return plain_step(c, i, -1, new_value);
}

/* Compare-and-swap loops: saturation needs the old value, which fetch_add
 * cannot respect. 4-bit counters swap their whole byte. */
static bk_status atomic_step(bk_counters *c, uint64_t i, int dir,
                             uint32_t *new_value) {
  BK_RETURN_IF(!c || i >= c->n, BK_EINVAL);
  uint32_t next;
  bk_status s;
  switch (c->width) {
    case 4: {
      uint8_t *p = &c->bytes[i >> 1];
      unsigned shift = (i & 1) ? 4u : 0u;
      uint8_t old = __atomic_load_n(p, __ATOMIC_RELAXED), upd;
      do {
        s = step((uint32_t)(old >> shift) & 0xF, c->max, dir, &next);
        upd = (uint8_t)((old & ~(0xFu << shift)) | (next << shift));
      } while (upd != old &&
               !__atomic_compare_exchange_n(
                   p, &old, upd, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
      break;
    }
    case 8: {
      uint8_t *p = &c->bytes[i];
      uint8_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
      do {
        s = step(old, c->max, dir, &next);
      } while (next != old && !__atomic_compare_exchange_n(
                                  p, &old, (uint8_t)next, true,
                                  __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
      break;
    }
    case 16: {
      uint16_t *p = &((uint16_t *)(void *)c->bytes)[i];
      uint16_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
      do {
        s = step(old, c->max, dir, &next);
      } while (next != old && !__atomic_compare_exchange_n(
                                  p, &old, (uint16_t)next, true,
                                  __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
      break;
    }
    default: {
      uint32_t *p = &((uint32_t *)(void *)c->bytes)[i];
      uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
      do {
        s = step(old, c->max, dir, &next);
      } while (next != old &&
               !__atomic_compare_exchange_n(
                   p, &old, next, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
      break;
    }
  }
  if (new_value) *new_value = next;
  return s;
}

bk_status bk_counters_atomic_inc(bk_counters *c, uint64_t i,
                                 uint32_t *new_value) {
  return atomic_step(c, i, +1, new_value);
}

bk_status bk_counters_atomic_dec(bk_counters *c, uint64_t i,
                                 uint32_t *new_value) {
  return atomic_step(c, i, -1, new_value);
}

static bk_status check_pair(const bk_counters *dst, const bk_counters *src) {
  BK_RETURN_IF(!dst || !src, BK_EINVAL);
  BK_RETURN_IF(dst->n != src->n || dst->width != src->width, BK_EMISMATCH);
  return BK_OK;
}

bk_status bk_counters_max_merge(bk_counters *dst, const bk_counters *src) {
  BK_TRY(check_pair(dst, src));
  for (uint64_t i = 0; i < dst->n; i++) {
    uint32_t a = raw_get(dst, i), b = raw_get(src, i);
    if (b > a) raw_set(dst, i, b);
  }
  return BK_OK;
}

bk_status bk_counters_add_merge(bk_counters *dst, const bk_counters *src) {
  BK_TRY(check_pair(dst, src));
  bool saturated = false;
  for (uint64_t i = 0; i < dst->n; i++) {
    uint64_t sum = (uint64_t)raw_get(dst, i) + raw_get(src, i);
    if (sum >= dst->max) {
      /* Reaching the maximum saturates, as an increment would. */
      saturated = true;
      sum = dst->max;
    }
    raw_set(dst, i, (uint32_t)sum);
  }
  return saturated ? BK_ESATURATED : BK_OK;
}

bk_status bk_counters_clear_all(bk_counters *c) {
  BK_RETURN_IF(!c, BK_EINVAL);
  bk__region_zero(&c->region);
  return BK_OK;
}

/* Serialized parameters (after the 24-byte prefix):
 *   24  u64  n (number of counters)
 *   32  u8   width (4, 8, 16 or 32)
 *   33  u8[7] reserved, zero
 * payload: the storage as ceil(n * width / 64) little-endian u64 words; bits
 * past the last counter are zero. */
bk_status bk_counters_serialized_size(const bk_counters *c, size_t *out) {
  BK_RETURN_IF(!c || !out, BK_EINVAL);
  *out = COUNTERS_HEADER_LEN + (size_t)c->n_words * 8 + BK__TRAILER_SIZE;
  return BK_OK;
}

bk_status bk_counters_serialize(const bk_counters *c, void *buf, size_t cap,
                                size_t *written) {
  size_t need;
  BK__SERIALIZE_OPEN(bk_counters_serialized_size(c, &need), need, buf, cap,
                     written);
  unsigned char *p = buf;
  bk__format_write_prefix(p, COUNTERS_VERSION, BK__TYPE_COUNTERS,
                          COUNTERS_HEADER_LEN, c->n_words * 8);
  bk__store_le64(p + 24, c->n);
  memset(p + 32, 0, 8);
  p[32] = (unsigned char)c->width;
  bk__words_store(p + COUNTERS_HEADER_LEN, (const uint64_t *)(void *)c->bytes,
                  c->n_words);
  bk__format_write_trailer(p, need - BK__TRAILER_SIZE);
  *written = need;
  return BK_OK;
}

bk_status bk_counters_deserialize(const void *buf, size_t len,
                                  const bk_allocator *allocator,
                                  bk_counters **out) {
  BK_RETURN_IF(!buf || !out, BK_EINVAL);
  bk__format_view v;
  BK_TRY(bk__format_open(buf, len, BK__TYPE_COUNTERS, COUNTERS_VERSION,
                         COUNTERS_HEADER_LEN, &v));
  uint64_t n = bk__load_le64(v.params);
  unsigned width = v.params[8];
  BK_RETURN_IF(!bk__all_zero(v.params + 9, 7), BK_ECORRUPT);
  BK_RETURN_IF(n == 0 || n > BK_COUNTERS_MAX || !width_ok(width), BK_ECORRUPT);
  uint64_t used_bits = n * width;
  uint64_t n_words = (used_bits + 63) / 64;
  BK_RETURN_IF(v.payload_len != n_words * 8, BK_ECORRUPT);
  uint64_t last = bk__load_le64(v.payload + (n_words - 1) * 8);
  unsigned tail = (unsigned)(used_bits & 63);
  BK_RETURN_IF(tail && (last >> tail) != 0, BK_ECORRUPT);
  bk_counters *c;
  BK_TRY(bk_counters_create(&c, n, width, allocator));
  bk__words_load((uint64_t *)(void *)c->bytes, v.payload, n_words);
  *out = c;
  return BK_OK;
}
