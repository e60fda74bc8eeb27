/* SPDX-License-Identifier: MIT */
/*
 * The codec hostile-input harness (declared in testutil.h): every case a
 * deserializer must survive, run against one serialized object of any type
 * described by a bk_test_codec. Each candidate blob is loaded through the
 * counting allocator into an exact-size heap copy (so ASan sees over-reads);
 * the result must be an error that leaves the out-parameter and the
 * allocator untouched, or an object that passes
 * bk_test_codec_check_accepted and frees everything it took.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

/* What a candidate blob may do. */
typedef enum expect {
  EXPECT_CORRUPT, /* BK_ECORRUPT only */
  EXPECT_VERSION, /* BK_EVERSION only */
  EXPECT_REJECT,  /* BK_ECORRUPT or BK_EVERSION */
  EXPECT_ANY,     /* rejected, or accepted and sound */
} expect;

typedef struct run {
  const bk_test_codec *c;
  const unsigned char *blob; /* the original, valid blob */
  size_t len;
  uint32_t header_len;
  size_t peak_bytes;   /* the allocator's peak loading the original */
  unsigned char *work; /* scratch of len + SLACK bytes */
  size_t accepted, rejected;
} run;

enum { SLACK = 64 };

static char sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

/* Load m[0, mlen) and judge the outcome; `what` and `at` name the case. */
static bk_status judge(run *r, const unsigned char *m, size_t mlen, expect want,
                       const char *what, uint64_t at) {
  const bk_test_codec *c = r->c;
  unsigned char *copy = malloc(mlen ? mlen : 1);
  assert_non_null(copy);
  if (mlen) memcpy(copy, m, mlen);
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  void *obj = SENTINEL;
  bk_status s = c->deserialize(copy, mlen, &al, &obj);
  /* Nothing a blob says may make the loader take much more than loading
   * the original took, plus the blob's own size. */
  if (st.peak_bytes > 2 * r->peak_bytes + 2 * mlen + 65536)
    fail_msg("%s: %s %llu: peak allocation %zu bytes (original: %zu)", c->name,
             what, (unsigned long long)at, st.peak_bytes, r->peak_bytes);
  if (s != BK_OK) {
    if (obj != SENTINEL)
      fail_msg("%s: %s %llu: %s but the out-parameter was written", c->name,
               what, (unsigned long long)at, bk_status_name(s));
    if (st.live != 0)
      fail_msg("%s: %s %llu: %s leaked %zu blocks", c->name, what,
               (unsigned long long)at, bk_status_name(s), st.live);
    bool ok = (want == EXPECT_CORRUPT && s == BK_ECORRUPT) ||
              (want == EXPECT_VERSION && s == BK_EVERSION) ||
              ((want == EXPECT_REJECT || want == EXPECT_ANY) &&
               (s == BK_ECORRUPT || s == BK_EVERSION));
    if (!ok)
      fail_msg("%s: %s %llu (len %zu): got %s", c->name, what,
               (unsigned long long)at, mlen, bk_status_name(s));
    r->rejected++;
    free(copy);
    return s;
  }
  if (want != EXPECT_ANY)
    fail_msg("%s: %s %llu (len %zu): accepted, want %s", c->name, what,
             (unsigned long long)at, mlen,
             want == EXPECT_VERSION ? "BK_EVERSION" : "BK_ECORRUPT");
  if (obj == SENTINEL || obj == NULL)
    fail_msg("%s: %s %llu: BK_OK without an object", c->name, what,
             (unsigned long long)at);
  c->destroy(obj);
  if (st.live != 0)
    fail_msg("%s: %s %llu: destroy left %zu blocks", c->name, what,
             (unsigned long long)at, st.live);
  bk_status again;
  const char *why = bk_test_codec_check_accepted(c, copy, mlen, &again);
  if (why || again != BK_OK)
    fail_msg("%s: %s %llu: accepted, then: %s", c->name, what,
             (unsigned long long)at, why ? why : bk_status_name(again));
  r->accepted++;
  free(copy);
  return s;
}

/* Start an edit: the work buffer holds the original. */
static unsigned char *edit(run *r) {
  memcpy(r->work, r->blob, r->len);
  return r->work;
}

static void store_le(unsigned char *p, unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t load_le(const unsigned char *p, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Set a field of the envelope, reseal, and require `want`. */
static void prefix_case(run *r, size_t off, unsigned width, uint64_t v,
                        expect want, const char *what) {
  unsigned char *m = edit(r);
  store_le(m + off, width, v);
  bk_test_reseal(m, r->len);
  judge(r, m, r->len, want, what, v);
}

static void cases_truncation(run *r) {
  const size_t len = r->len, hl = r->header_len;
  /* Every length for blobs up to 4 KiB; beyond, every length in the
   * envelope and parameters, the first and last 512 bytes of the payload,
   * and a stride through the rest. */
  size_t stride = len <= 4096 ? 1 : len / 512;
  for (size_t cut = 0; cut < len; cut++) {
    bool near = cut < hl + 512 || cut + 512 > len;
    if (!near && cut % stride) continue;
    judge(r, r->blob, cut, EXPECT_CORRUPT, "truncated to", cut);
    if (cut < BK__PREFIX_SIZE + 8) continue;
    /* The same cut with a valid checksum ... */
    unsigned char *m = edit(r);
    bk_test_reseal(m, cut);
    judge(r, m, cut, EXPECT_CORRUPT, "truncated and resealed to", cut);
    /* ... and with the payload length made to agree: the shorter payload
     * must be judged by the type's own validation. */
    if (cut >= hl + 8) {
      m = edit(r);
      bk__store_le64(m + 16, (uint64_t)(cut - hl - 8));
      bk_test_reseal(m, cut);
      judge(r, m, cut, EXPECT_ANY, "payload cut (lengths agree) to", cut);
    }
  }
  /* Trailing bytes: plain, resealed, and with lengths that agree. */
  static const size_t extra[] = {1, 7, 8, 64};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
    size_t n = len + extra[i];
    unsigned char *m = edit(r);
    memset(m + len, i % 2 ? 0xA5 : 0, extra[i]);
    judge(r, m, n, EXPECT_CORRUPT, "trailing bytes", extra[i]);
    bk_test_reseal(m, n);
    judge(r, m, n, EXPECT_CORRUPT, "trailing bytes resealed", extra[i]);
    /* The trailer moved into the payload: lengths agree. */
    bk__store_le64(m + 16, (uint64_t)(n - hl - 8));
    bk_test_reseal(m, n);
    judge(r, m, n, EXPECT_ANY, "payload grown (lengths agree) by", extra[i]);
  }
}

static void cases_flips(run *r, uint64_t *rng) {
  const size_t len = r->len, hl = r->header_len;
  const size_t payload_bits = 8 * (len - hl - 8);
  /* Without a new checksum every flip is caught: each bit of the envelope,
   * parameters and trailer, and up to 1024 payload bits. */
  for (size_t bit = 0; bit < 8 * len; bit++) {
    bool in_payload = bit >= 8 * hl && bit < 8 * (len - 8);
    if (in_payload && payload_bits > 1024 &&
        bk_test_next(rng) % payload_bits >= 1024)
      continue;
    unsigned char *m = edit(r);
    m[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    judge(r, m, len, EXPECT_REJECT, "bit flip (checksum stale) at", bit);
  }
  /* With the checksum repaired: each bit of the parameters, and up to 2048
   * payload bits. */
  for (size_t bit = 8 * BK__PREFIX_SIZE; bit < 8 * (len - 8); bit++) {
    bool in_payload = bit >= 8 * hl;
    if (in_payload && payload_bits > 2048 &&
        bk_test_next(rng) % payload_bits >= 2048)
      continue;
    unsigned char *m = edit(r);
    m[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    bk_test_reseal(m, len);
    judge(r, m, len, EXPECT_ANY, "bit flip (resealed) at", bit);
  }
}

static void cases_envelope(run *r) {
  const bk_test_codec *c = r->c;
  const uint32_t hl = r->header_len;
  const uint64_t pl = r->len - hl - 8;
  for (size_t i = 0; i < 4; i++) {
    unsigned char *m = edit(r);
    m[i] ^= 0x20;
    bk_test_reseal(m, r->len);
    judge(r, m, r->len, EXPECT_CORRUPT, "magic byte", i);
  }
  prefix_case(r, 4, 2, 0, EXPECT_CORRUPT, "version");
  prefix_case(r, 4, 2, c->version + 1u, EXPECT_VERSION, "version");
  prefix_case(r, 4, 2, 0x8000, EXPECT_VERSION, "version");
  prefix_case(r, 4, 2, 0xFFFF, EXPECT_VERSION, "version");
  /* Every other type's tag, and tags no type has. */
  for (uint64_t tag = 0; tag <= 32; tag++)
    if (tag != c->type_tag)
      prefix_case(r, 6, 2, tag, EXPECT_CORRUPT, "type tag");
  prefix_case(r, 6, 2, 0xFFFF, EXPECT_CORRUPT, "type tag");
  const uint64_t hls[] = {0,         8,       BK__PREFIX_SIZE,  hl - 1u,
                          hl + 1,    hl + 8u, (uint64_t)r->len, 0x80000000u,
                          UINT32_MAX};
  for (size_t i = 0; i < sizeof hls / sizeof hls[0]; i++)
    if (hls[i] != hl)
      prefix_case(r, 8, 4, hls[i], EXPECT_CORRUPT, "header length");
  prefix_case(r, 12, 4, 1, EXPECT_CORRUPT, "reserved word");
  prefix_case(r, 12, 4, 0x80000000u, EXPECT_CORRUPT, "reserved word");
  const uint64_t pls[] = {0,
                          pl - 1,
                          pl + 1,
                          pl + 8,
                          (uint64_t)1 << 37,
                          (uint64_t)1 << 62,
                          UINT64_MAX - hl - 7,
                          UINT64_MAX - 31,
                          UINT64_MAX};
  for (size_t i = 0; i < sizeof pls / sizeof pls[0]; i++)
    if (pls[i] != pl)
      prefix_case(r, 16, 8, pls[i], EXPECT_CORRUPT, "payload length");
}

/* Each parameter byte and each 2-, 4- and 8-byte little-endian field at
 * every offset of the parameters, set to edge values, resealed. */
static void cases_fields(run *r) {
  const size_t hl = r->header_len;
  static const unsigned char bytes[] = {0x00, 0x01, 0x40, 0x80, 0xFF};
  for (size_t off = BK__PREFIX_SIZE; off < hl; off++)
    for (size_t i = 0; i < sizeof bytes; i++) {
      unsigned char *m = edit(r);
      if (m[off] == bytes[i]) continue;
      m[off] = bytes[i];
      bk_test_reseal(m, r->len);
      judge(r, m, r->len, EXPECT_ANY, "parameter byte set at", off);
    }
  static const unsigned widths[] = {2, 4, 8};
  for (size_t w = 0; w < 3; w++) {
    const unsigned width = widths[w], top = 8 * width - 1;
    const uint64_t max =
        width == 8 ? UINT64_MAX : ((uint64_t)1 << (top + 1)) - 1;
    for (size_t off = BK__PREFIX_SIZE; off + width <= hl; off++) {
      uint64_t orig = load_le(r->blob + off, width);
      const uint64_t vals[] = {0,
                               1,
                               2,
                               (uint64_t)1 << (top - 1),
                               (uint64_t)1 << top,
                               max - 1,
                               max,
                               (orig + 1) & max,
                               (orig - 1) & max,
                               (orig * 2) & max,
                               orig / 2};
      for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        if (vals[i] == orig) continue;
        unsigned char *m = edit(r);
        store_le(m + off, width, vals[i]);
        bk_test_reseal(m, r->len);
        judge(r, m, r->len, EXPECT_ANY, "parameter field set at", off);
      }
    }
  }
}

static void cases_random(run *r, uint64_t *rng) {
  const size_t len = r->len;
  /* Noise: the checksum alone makes acceptance a 2^-64 event. */
  for (unsigned it = 0; it < 300; it++) {
    size_t n = (size_t)(bk_test_next(rng) % (len + SLACK));
    for (size_t i = 0; i < n; i++)
      r->work[i] = (unsigned char)bk_test_next(rng);
    if (n >= 4 && it % 2) memcpy(r->work, "BKIT", 4);
    judge(r, r->work, n, EXPECT_REJECT, "random buffer", it);
  }
  /* A few random bytes anywhere behind the envelope, resealed. */
  for (unsigned it = 0; it < 1000; it++) {
    unsigned char *m = edit(r);
    unsigned n = 1 + (unsigned)(bk_test_next(rng) % 8);
    for (unsigned j = 0; j < n; j++) {
      size_t at =
          BK__PREFIX_SIZE + bk_test_next(rng) % (len - 8 - BK__PREFIX_SIZE);
      m[at] = (unsigned char)bk_test_next(rng);
    }
    bk_test_reseal(m, len);
    judge(r, m, len, EXPECT_ANY, "random bytes (resealed), round", it);
  }
}

/* Loading fails cleanly at each allocation until it succeeds. */
static void cases_oom(run *r) {
  for (size_t fail_at = 1;; fail_at++) {
    bk_test_alloc st;
    bk_allocator al = bk_test_allocator(&st, fail_at);
    void *obj = SENTINEL;
    bk_status s = r->c->deserialize(r->blob, r->len, &al, &obj);
    if (s == BK_OK) {
      r->c->destroy(obj);
      if (st.live != 0)
        fail_msg(
            "%s: allocation %zu failing: loaded, destroy left %lld "
            "blocks",
            r->c->name, fail_at, (long long)st.live);
      break;
    }
    if (s != BK_ENOMEM || obj != SENTINEL || st.live != 0)
      fail_msg("%s: allocation %zu failing: %s, %zu blocks live", r->c->name,
               fail_at, bk_status_name(s), st.live);
    if (fail_at > 100000) fail_msg("%s: loading never succeeds", r->c->name);
  }
}

void bk_test_codec_hostile(const bk_test_codec *c, const void *obj,
                           uint64_t seed) {
  run r = {.c = c};
  bk_status s;
  unsigned char *blob = bk_test_codec_serialize(c, obj, &r.len, &s);
  if (!blob) fail_msg("%s: serialize: %s", c->name, bk_status_name(s));
  r.blob = blob;
  assert_true(r.len >= BK__PREFIX_SIZE + 8);
  r.header_len = bk__load_le32(blob + 8);
  assert_true(r.header_len >= BK__PREFIX_SIZE && r.header_len + 8 <= r.len);
  assert_int_equal(bk__load_le16(blob + 6), c->type_tag);
  assert_int_equal(bk__load_le16(blob + 4), c->version);
  r.work = malloc(r.len + SLACK);
  assert_non_null(r.work);

  /* The original loads, re-serializes to itself and answers calls. */
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  void *loaded = SENTINEL;
  assert_bk_ok(c->deserialize(blob, r.len, &al, &loaded));
  r.peak_bytes = st.peak_bytes;
  size_t len2;
  unsigned char *again = bk_test_codec_serialize(c, loaded, &len2, &s);
  assert_non_null(again);
  assert_int_equal(len2, r.len);
  /* A non-canonical type (bk_idem: key order) is compared by state, in
   * bk_test_codec_check_accepted below. */
  if (c->canonical) assert_memory_equal(again, blob, r.len);
  free(again);
  c->destroy(loaded);
  assert_int_equal(st.live, 0);
  const char *why = bk_test_codec_check_accepted(c, blob, r.len, &s);
  if (why) fail_msg("%s: the original blob: %s", c->name, why);

  uint64_t rng = seed;
  cases_truncation(&r);
  cases_flips(&r, &rng);
  cases_envelope(&r);
  cases_fields(&r);
  cases_random(&r, &rng);
  cases_oom(&r);
  print_message(
      "# codec %s: %zu-byte blob, %zu hostile variants rejected, "
      "%zu accepted (all sound)\n",
      c->name, r.len, r.rejected, r.accepted);
  free(r.work);
  free(blob);
}

bk_status bk_test_codec_load(const bk_test_codec *c, const unsigned char *blob,
                             size_t len, void **out) {
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  unsigned char *copy = malloc(len ? len : 1);
  assert_non_null(copy);
  if (len) memcpy(copy, blob, len);
  void *obj = SENTINEL;
  bk_status s = c->deserialize(copy, len, &al, &obj);
  free(copy);
  /* No length or count read from the blob may size an allocation beyond
   * what the blob itself can describe. */
  if (st.peak_bytes > 4 * len + ((size_t)1 << 20))
    fail_msg("%s: loading %zu bytes allocated %zu", c->name, len,
             st.peak_bytes);
  if (s != BK_OK) {
    if (obj != SENTINEL)
      fail_msg("%s: %s but the out-parameter was written", c->name,
               bk_status_name(s));
    assert_int_equal(st.live, 0);
    return s;
  }
  c->destroy(obj);
  assert_int_equal(st.live, 0);
  bk_status again;
  const char *why = bk_test_codec_check_accepted(c, blob, len, &again);
  if (why) fail_msg("%s: accepted, then: %s", c->name, why);
  if (out) {
    *out = SENTINEL;
    assert_bk_ok(c->deserialize(blob, len, NULL, out));
  }
  return s;
}

void bk_test_codec_expect_edit(const bk_test_codec *c,
                               const unsigned char *blob, size_t len,
                               size_t off, unsigned width, uint64_t value,
                               bk_status want, const char *what) {
  unsigned char *m = malloc(len);
  assert_non_null(m);
  memcpy(m, blob, len);
  assert_true(off + width <= len - 8);
  store_le(m + off, width, value);
  bk_test_reseal(m, len);
  bk_status s = bk_test_codec_load(c, m, len, NULL);
  if (s != want)
    fail_msg("%s: %s (offset %zu := %llu): got %s, want %s", c->name, what, off,
             (unsigned long long)value, bk_status_name(s),
             bk_status_name(want));
  free(m);
}

unsigned char *bk_test_serialize(const bk_test_codec *c, const void *obj,
                                 size_t *len) {
  bk_status s;
  unsigned char *buf = bk_test_codec_serialize(c, obj, len, &s);
  if (!buf) fail_msg("%s: serialize: %s", c->name, bk_status_name(s));
  return buf;
}

void bk_test_assert_serializes_to(const bk_test_codec *c, const void *obj,
                                  const unsigned char *want, size_t len) {
  size_t got_len;
  unsigned char *got = bk_test_serialize(c, obj, &got_len);
  assert_int_equal(got_len, len);
  assert_memory_equal(got, want, len);
  free(got);
}

void bk_test_assert_same_state(const bk_test_codec *c, const void *a,
                               const void *b) {
  size_t la;
  unsigned char *ba = bk_test_serialize(c, a, &la);
  bk_test_assert_serializes_to(c, b, ba, la);
  free(ba);
}

void bk_test_codec_arguments(const bk_test_codec *c, const void *obj) {
  size_t size = 0, written = 12345;
  assert_bk_status(c->serialized_size(NULL, &size), BK_EINVAL);
  assert_bk_status(c->serialized_size(obj, NULL), BK_EINVAL);
  assert_bk_ok(c->serialized_size(obj, &size));
  unsigned char *buf = malloc(size + 16), *pristine = malloc(size + 16);
  assert_non_null(buf);
  assert_non_null(pristine);
  for (size_t i = 0; i < size + 16; i++) pristine[i] = (unsigned char)(i * 7);
  memcpy(buf, pristine, size + 16);
  assert_bk_status(c->serialize(NULL, buf, size, &written), BK_EINVAL);
  assert_bk_status(c->serialize(obj, NULL, size, &written), BK_EINVAL);
  assert_bk_status(c->serialize(obj, buf, size, NULL), BK_EINVAL);
  /* Every capacity short of the size is refused, and nothing is written,
   * not even a prefix. */
  const size_t stride = size <= 4096 ? 1 : size / 256;
  for (size_t cap = 0; cap < size; cap++) {
    /* every capacity of small blobs; of large ones the first and last
     * 1 KiB and a stride through the rest */
    if (cap >= 1024 && cap + 1024 < size && cap % stride) continue;
    bk_status s = c->serialize(obj, buf, cap, &written);
    if (s != BK_EINVAL)
      fail_msg("%s: serialize into %zu of %zu bytes: %s", c->name, cap, size,
               bk_status_name(s));
    if (memcmp(buf, pristine, size + 16) != 0)
      fail_msg(
          "%s: a refused serialize (cap %zu of %zu) wrote into the "
          "buffer",
          c->name, cap, size);
  }
  /* A larger buffer gets exactly `size` bytes. */
  assert_bk_ok(c->serialize(obj, buf, size + 16, &written));
  assert_int_equal(written, size);
  assert_memory_equal(buf + size, pristine + size, 16);
  /* deserialize: NULL buffer or out, an allocator without alloc/free. */
  void *out = (void *)pristine;
  bk_allocator half = {.alloc = NULL, .free = NULL};
  assert_bk_status(c->deserialize(NULL, size, NULL, &out), BK_EINVAL);
  assert_bk_status(c->deserialize(buf, size, NULL, NULL), BK_EINVAL);
  assert_bk_status(c->deserialize(buf, size, &half, &out), BK_EINVAL);
  assert_ptr_equal(out, pristine);
  free(buf);
  free(pristine);
}
