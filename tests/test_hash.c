/* SPDX-License-Identifier: MIT */
/*
 * Hashing: known-answer vectors from published sources for both algorithms
 * (so a saved filter stays valid across builds and dependency upgrades), the
 * lo/hi mapping of the digest halves, bk_hash_u64's byte form, the index
 * derivation pinned by hand-computed values and by an independent reference,
 * the positions a standard bk_bloom sets pinned by recorded values,
 * uniformity of the range reduction, seeding, and argument checking.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only use of xxHash: the test needs no extra link line. Used only to
 * cross-check bk_hash_bytes on many lengths beyond the published vectors. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/bloom.h"
#include "bloomkit/hash.h"
#include "core/hash_fast.h" /* bk__probe_*, bk__mix64, bk__u128 */
#include "testutil.h"

/* bloom.h and the library's internals declare, nothing more: the inline
 * path's macros come only with bloomkit/bloom_inline.h (an opt-in). */
#if defined(bk_bloom_contains) || defined(bk_bloom_add) || \
    defined(BK_BLOOM_INLINE)
#error "bloom.h or core/hash_fast.h turned on bloom_inline.h's inline path"
#endif

#define PRIME32 2654435761U
#define PRIME64 11400714785074694797ULL

/* ---- xxHash sanity buffer ------------------------------------------------
 * Re-implementation of XSUM_fillTestBuffer from xxHash's
 * cli/xsum_sanity_check.c (Cyan4973/xxHash, v0.8.x): byteGen starts at
 * PRIME32, each byte is byteGen >> 56, then byteGen *= PRIME64 (mod 2^64).
 * The upstream comment says its values must never change. */
#define SANITY_BUFFER_SIZE (4096 + 64 + 1)
static unsigned char g_sanity[SANITY_BUFFER_SIZE];

static void fill_sanity_buffer(unsigned char *buf, size_t len) {
  uint64_t byte_gen = PRIME32;
  for (size_t i = 0; i < len; i++) {
    buf[i] = (unsigned char)(byte_gen >> 56);
    byte_gen *= PRIME64;
  }
}

typedef struct xxh128_vector {
  size_t len;
  uint64_t seed;
  uint64_t low64;
  uint64_t high64;
} xxh128_vector;

/* XSUM_XXH128_testdata[] ("XXH3_128bits, seeded") from xxHash's
 * cli/xsum_sanity_check.c: {len, seed, {low64, high64}} over a prefix of the
 * sanity buffer. Each pair covers one length class of the algorithm. */
static const xxh128_vector k_xxh128[] = {
    {0, 0, 0x6001C324468D497FULL, 0x99AA06D3014798D8ULL},
    {0, PRIME32, 0x5444F7869C671AB0ULL, 0x92220AE55E14AB50ULL},
    {1, 0, 0xC44BDFF4074EECDBULL, 0xA6CD5E9392000F6AULL},
    {1, PRIME32, 0xB53D5557E7F76F8DULL, 0x89B99554BA22467CULL},
    {6, 0, 0x3E7039BDDA43CFC6ULL, 0x082AFE0B8162D12AULL},
    {6, PRIME32, 0x269D8F70BE98856EULL, 0x5A865B5389ABD2B1ULL},
    {12, 0, 0x061A192713F69AD9ULL, 0x6E3EFD8FC7802B18ULL},
    {12, PRIME32, 0x9BE9F9A67F3C7DFBULL, 0xD7E09D518A3405D3ULL},
    {24, 0, 0x1E7044D28B1B901DULL, 0x0CE966E4678D3761ULL},
    {24, PRIME32, 0xD7304C54EBAD40A9ULL, 0x3162026714A6A243ULL},
    {48, 0, 0xF942219AED80F67BULL, 0xA002AC4E5478227EULL},
    {48, PRIME32, 0x7BA3C3E453A1934EULL, 0x163ADDE36C072295ULL},
    {81, 0, 0x5E8BAFB9F95FB803ULL, 0x4952F58181AB0042ULL},
    {81, PRIME32, 0x703FBB3D7A5F755CULL, 0x2724EC7ADC750FB6ULL},
    {222, 0, 0xF1AEBD597CEC6B3AULL, 0x337E09641B948717ULL},
    {222, PRIME32, 0xAE995BB8AF917A8DULL, 0x91820016621E97F1ULL},
    {403, 0, 0xCDEB804D65C6DEA4ULL, 0x1B6DE21E332DD73DULL},
    {403, PRIME64, 0x6259F6ECFD6443FDULL, 0xBED311971E0BE8F2ULL},
    {512, 0, 0x617E49599013CB6BULL, 0x18D2D110DCC9BCA1ULL},
    {512, PRIME64, 0x3CE457DE14C27708ULL, 0x925D06B8EC5B8040ULL},
    {2048, 0, 0xDD59E2C3A5F038E0ULL, 0xF736557FD47073A5ULL},
    {2048, PRIME32, 0x230D43F30206260BULL, 0x7FB03F7E7186C3EAULL},
    {2240, 0, 0x6E73A90539CF2948ULL, 0xCCB134FBFA7CE49DULL},
    {2240, PRIME32, 0xED385111126FBA6FULL, 0x50A1FE17B338995FULL},
    {2367, 0, 0xCB37AEB9E5D361EDULL, 0xE89C0F6FF369B427ULL},
    {2367, PRIME32, 0x6F5360AE69C2F406ULL, 0xD23AAE4B76C31ECBULL},
};

static void test_xxh3_sanity_buffer_prefix(void **state) {
  (void)state;
  /* The generator's first bytes, derived by hand: PRIME32 >> 56 == 0 (it is a
   * 32-bit value), then (PRIME32 * PRIME64 mod 2^64) >> 56. This guards the
   * re-implementation itself, which every XXH3 vector below depends on. */
  assert_int_equal(g_sanity[0], 0);
  assert_int_equal(g_sanity[1],
                   (unsigned)(((uint64_t)PRIME32 * PRIME64) >> 56));
}

static void test_xxh3_known_answers(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_xxh128 / sizeof k_xxh128[0]; i++) {
    const xxh128_vector *v = &k_xxh128[i];
    bk_hash h = {0, 0};
    assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, v->seed, v->len ? g_sanity : NULL,
                               v->len, &h));
    if (h.lo != v->low64 || h.hi != v->high64)
      fail_msg(
          "XXH3-128 len %zu seed %llu: got {%016llx, %016llx}, want "
          "{%016llx, %016llx} (lo must be low64, hi high64)",
          v->len, (unsigned long long)v->seed, (unsigned long long)h.lo,
          (unsigned long long)h.hi, (unsigned long long)v->low64,
          (unsigned long long)v->high64);
  }
}

/* Beyond the published lengths: every length 0..600 and a few seeds must
 * agree with xxHash's own XXH3_128bits_withSeed, low64 -> lo, high64 -> hi. */
static void test_xxh3_matches_library(void **state) {
  (void)state;
  const uint64_t seeds[] = {0,       1,          PRIME32,
                            PRIME64, UINT64_MAX, (uint64_t)1 << 32};
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
    for (size_t len = 0; len <= 600; len++) {
      bk_hash h;
      assert_bk_ok(
          bk_hash_bytes(BK_HASH_XXH3, seeds[s], g_sanity + 7, len, &h));
      XXH128_hash_t ref = XXH3_128bits_withSeed(g_sanity + 7, len, seeds[s]);
      assert_int_equal(h.lo, ref.low64);
      assert_int_equal(h.hi, ref.high64);
    }
  }
}

/* ---- MurmurHash3 x64_128 ------------------------------------------------- */

typedef struct murmur_vector {
  const char *text;
  uint32_t seed;
  uint64_t out0; /* out[0] of MurmurHash3_x64_128 -> bk_hash.lo */
  uint64_t out1; /* out[1] -> bk_hash.hi */
} murmur_vector;

static const murmur_vector k_murmur[] = {
    /* spaolacci/murmur3 murmur_test.go, table `data` (h64_1, h64_2 are the
     * two 64-bit words of Sum128, i.e. out[0] and out[1] of the reference). */
    {"", 0x00, 0x0000000000000000ULL, 0x0000000000000000ULL},
    {"hello", 0x00, 0xcbd8a7b341bd9b02ULL, 0x5b1e906a48ae1d19ULL},
    {"hello, world", 0x00, 0x342fac623a5ebc8eULL, 0x4cdcbc079642414dULL},
    {"19 Jan 2038 at 3:14:07 AM", 0x00, 0xb89e5988b737affcULL,
     0x664fc2950231b2cbULL},
    {"The quick brown fox jumps over the lazy dog.", 0x00,
     0xcd99481f9ee902c9ULL, 0x695da1a38987b6e7ULL},
    {"", 0x01, 0x4610abe56eff5cb5ULL, 0x51622daa78f83583ULL},
    {"hello", 0x01, 0xa78ddff5adae8d10ULL, 0x128900ef20900135ULL},
    {"hello, world", 0x01, 0x8b95f808840725c6ULL, 0x1597ed5422bd493bULL},
    {"19 Jan 2038 at 3:14:07 AM", 0x01, 0x2a929de9c8f97b2fULL,
     0x56a41d99af43a2dbULL},
    {"The quick brown fox jumps over the lazy dog.", 0x01,
     0xfb3325171f9744daULL, 0xaaf8b92a5f722952ULL},
    {"", 0x2a, 0xf02aa77dfa1b8523ULL, 0xd1016610da11cbb9ULL},
    {"hello", 0x2a, 0xc4b8b3c960af6f08ULL, 0x2334b875b0efbc7aULL},
    {"hello, world", 0x2a, 0xb91864d797caa956ULL, 0xd5d139a55afe6150ULL},
    {"19 Jan 2038 at 3:14:07 AM", 0x2a, 0xfd8f19ebdc8c6b6aULL,
     0xd30fdc310fa08ff9ULL},
    {"The quick brown fox jumps over the lazy dog.", 0x2a,
     0x74f33c659cda5af7ULL, 0x4ec7a891caf316f0ULL},
    /* Boost.Hash2 test/murmur3_128 (vectors from pastebin.com/k2VDbWkF),
     * published as the 16 digest bytes in memory order; out[0] and out[1]
     * are those bytes read as two little-endian words. */
    {"The quick brown fox jumps over the lazy dog", 0, 0xE34BBC7BBC071B6CULL,
     0x7A433CA9C49A9347ULL},
    {"The quick brown fox jumps over the lazy cog", 0, 0x658CA970FF85269AULL,
     0x43FEE3EAA68E5C3EULL},
    {"The quick brown fox jumps over the lazy dog", 0x9747B28Cu,
     0x738A7F3BD2633121ULL, 0xF94573727EC016E5ULL},
    {"The quick brown fox jumps over the lazy cog", 0x9747B28Cu,
     0xB8CD57B070826194ULL, 0x556F455B5873F83CULL},
    {"The quick brown fox jumps over the lazy dog", 0xC58F1A7Bu,
     0xAC1F40EED20C9DFFULL, 0x38935C52DEEFF526ULL},
    {"The quick brown fox jumps over the lazy cog", 0xC58F1A7Bu,
     0xF93938845B5C938CULL, 0xCDBC8BD57A4FB264ULL},
};

static void test_murmur3_known_answers(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_murmur / sizeof k_murmur[0]; i++) {
    const murmur_vector *v = &k_murmur[i];
    bk_hash h = {1, 1};
    assert_bk_ok(
        bk_hash_bytes(BK_HASH_MURMUR3, v->seed, v->text, strlen(v->text), &h));
    if (h.lo != v->out0 || h.hi != v->out1)
      fail_msg(
          "Murmur3 \"%s\" seed %#x: got {%016llx, %016llx}, want "
          "{%016llx, %016llx} (lo must be out[0], hi out[1])",
          v->text, (unsigned)v->seed, (unsigned long long)h.lo,
          (unsigned long long)h.hi, (unsigned long long)v->out0,
          (unsigned long long)v->out1);
  }
}

/* SMHasher's VerificationTest (aappleby/smhasher src/KeysetTest.cpp) with the
 * value published in its main.cpp for MurmurHash3_x64_128, 0x6384BA69:
 * hash the keys {}, {0}, {0,1}, ..., {0,...,254} (key i has length i, bytes
 * 0..i-1) with seed 256 - i, store the 16-byte digests (out[0], out[1] in
 * little-endian memory order) one after another, hash those 4096 bytes with
 * seed 0, and read the first four bytes of that digest as a little-endian
 * u32. It exercises every tail length and the block loop. */
static void test_murmur3_smhasher_verification(void **state) {
  (void)state;
  unsigned char key[256];
  unsigned char hashes[16 * 256];
  memset(key, 0, sizeof key);
  for (int i = 0; i < 256; i++) {
    key[i] = (unsigned char)i;
    bk_hash h;
    assert_bk_ok(bk_hash_bytes(BK_HASH_MURMUR3, (uint64_t)(256 - i), key,
                               (size_t)i, &h));
    for (int b = 0; b < 8; b++) {
      hashes[16 * i + b] = (unsigned char)(h.lo >> (8 * b));
      hashes[16 * i + 8 + b] = (unsigned char)(h.hi >> (8 * b));
    }
  }
  bk_hash final;
  assert_bk_ok(
      bk_hash_bytes(BK_HASH_MURMUR3, 0, hashes, sizeof hashes, &final));
  uint32_t verification = (uint32_t)(final.lo & 0xFFFFFFFFu);
  assert_int_equal(verification, 0x6384BA69u);
}

/* ---- algorithm selection, names, seeds ----------------------------------- */

static void test_alg_names(void **state) {
  (void)state;
  assert_non_null(bk_hash_alg_name(BK_HASH_XXH3));
  assert_non_null(bk_hash_alg_name(BK_HASH_MURMUR3));
  assert_string_equal(bk_hash_alg_name(BK_HASH_XXH3), "xxh3");
  assert_string_equal(bk_hash_alg_name(BK_HASH_MURMUR3), "murmur3");
  assert_string_equal(bk_hash_alg_name(BK_HASH_XXH64), "xxh64");
  assert_null(bk_hash_alg_name((bk_hash_alg)4));
  assert_null(bk_hash_alg_name((bk_hash_alg)99));
  assert_null(bk_hash_alg_name((bk_hash_alg)-1));
}

/* BK_HASH_DEFAULT means XXH3 in configs. bk_hash_bytes itself may either
 * accept it as XXH3 or reject it as unknown; it must not yield a third hash. */
static void test_default_alg(void **state) {
  (void)state;
  bk_hash d = {0, 0}, x;
  bk_status s = bk_hash_bytes(BK_HASH_DEFAULT, 42, "abc", 3, &d);
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, 42, "abc", 3, &x));
  if (s == BK_OK) {
    assert_int_equal(d.lo, x.lo);
    assert_int_equal(d.hi, x.hi);
  } else {
    assert_int_equal(s, BK_EINVAL);
  }
}

static void test_algorithms_differ(void **state) {
  (void)state;
  bk_hash a, b;
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, 0, "hello", 5, &a));
  assert_bk_ok(bk_hash_bytes(BK_HASH_MURMUR3, 0, "hello", 5, &b));
  assert_true(a.lo != b.lo || a.hi != b.hi);
}

static void test_seeds_change_output(void **state) {
  (void)state;
  /* XXH3: all 64 seed bits count, including the upper 32. */
  const uint64_t xseeds[] = {
      0,         1, 2, (uint64_t)1 << 31, (uint64_t)1 << 32, (uint64_t)1 << 63,
      UINT64_MAX};
  bk_hash hx[sizeof xseeds / sizeof xseeds[0]];
  for (size_t i = 0; i < sizeof xseeds / sizeof xseeds[0]; i++) {
    assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, xseeds[i], "bloomkit", 8, &hx[i]));
    for (size_t j = 0; j < i; j++)
      assert_true(hx[i].lo != hx[j].lo || hx[i].hi != hx[j].hi);
  }
  const uint64_t mseeds[] = {0, 1, 2, 0x80000000u, UINT32_MAX};
  bk_hash hm[sizeof mseeds / sizeof mseeds[0]];
  for (size_t i = 0; i < sizeof mseeds / sizeof mseeds[0]; i++) {
    assert_bk_ok(
        bk_hash_bytes(BK_HASH_MURMUR3, mseeds[i], "bloomkit", 8, &hm[i]));
    for (size_t j = 0; j < i; j++)
      assert_true(hm[i].lo != hm[j].lo || hm[i].hi != hm[j].hi);
  }
  /* Same input, same seed: same digest (no hidden state). */
  bk_hash again;
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, xseeds[4], "bloomkit", 8, &again));
  assert_int_equal(again.lo, hx[4].lo);
  assert_int_equal(again.hi, hx[4].hi);
}

static void test_null_key_zero_len(void **state) {
  (void)state;
  bk_hash a, b;
  for (int alg = BK_HASH_XXH3; alg <= BK_HASH_MURMUR3; alg++) {
    assert_bk_ok(bk_hash_bytes((bk_hash_alg)alg, 7, NULL, 0, &a));
    assert_bk_ok(bk_hash_bytes((bk_hash_alg)alg, 7, "", 0, &b));
    assert_int_equal(a.lo, b.lo);
    assert_int_equal(a.hi, b.hi);
  }
}

/* ---- bk_hash_u64 --------------------------------------------------------- */

static void test_hash_u64_is_le_bytes(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x5EED0001);
  const uint64_t fixed[] = {0, 1, 0x0102030405060708ULL, UINT64_MAX,
                            (uint64_t)1 << 63};
  for (int alg = BK_HASH_XXH3; alg <= BK_HASH_MURMUR3; alg++) {
    for (int i = 0; i < 1000; i++) {
      uint64_t v = i < 5 ? fixed[i] : bk_test_next(&rng);
      uint64_t seed = bk_test_next(&rng);
      if (alg == BK_HASH_MURMUR3) seed &= 0xFFFFFFFFu;
      unsigned char le[8];
      for (int b = 0; b < 8; b++) le[b] = (unsigned char)(v >> (8 * b));
      bk_hash hv, hb;
      assert_bk_ok(bk_hash_u64((bk_hash_alg)alg, seed, v, &hv));
      assert_bk_ok(bk_hash_bytes((bk_hash_alg)alg, seed, le, 8, &hb));
      assert_int_equal(hv.lo, hb.lo);
      assert_int_equal(hv.hi, hb.hi);
    }
  }
  /* Not the native-order bytes reversed: 1 hashes as 01 00 .. 00. */
  unsigned char one_be[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  bk_hash h1, hbe;
  assert_bk_ok(bk_hash_u64(BK_HASH_XXH3, 0, 1, &h1));
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH3, 0, one_be, 8, &hbe));
  assert_true(h1.lo != hbe.lo || h1.hi != hbe.hi);
}

/* ---- index derivation ---------------------------------------------------- */

/* splitmix64's finaliser, written here from the formula in hash.h. */
static uint64_t ref_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

/* Its inverse (undo each xorshift by iterating it, each multiplication by
 * the multiplicative inverse mod 2^64), so tests can choose the step
 * b = mix64(hi) directly: small steps and steps that wrap around 2^64. */
static uint64_t unxorshift(uint64_t y, unsigned s) {
  uint64_t x = y;
  for (unsigned i = 0; i < 64 / s + 1; i++) x = y ^ (x >> s);
  return x;
}

static uint64_t inverse_mod_2_64(uint64_t a) { /* a odd; Newton iteration */
  uint64_t x = a; /* correct to 3 bits: a * a == 1 mod 8 */
  for (int i = 0; i < 5; i++) x *= 2 - a * x;
  return x;
}

static uint64_t ref_unmix64(uint64_t y) {
  y = unxorshift(y, 31);
  y *= inverse_mod_2_64(0x94D049BB133111EBULL);
  y = unxorshift(y, 27);
  y *= inverse_mod_2_64(0xBF58476D1CE4E5B9ULL);
  return unxorshift(y, 30);
}

/* Independent reference written from the formula in hash.h. */
static void ref_indices(bk_hash h, unsigned k, uint64_t range, uint64_t *out) {
  uint64_t a = h.lo, b = ref_mix64(h.hi);
  for (unsigned i = 0; i < k; i++) {
    out[i] = (uint64_t)(((bk__u128)a * range) >> 64);
    a += b;
    b += (uint64_t)i + 1;
  }
}

/* The reference's mixer is splitmix64's: with state 0 splitmix64 outputs
 * mix64(i * 0x9E3779B97F4A7C15) for i = 1, 2, ..., and its first outputs
 * are published (Vigna, prng.di.unimi.it/splitmix64.c; the xoshiro seeding
 * examples): E220A8397B1DCDAF, 6E789E6AA1B965F4, 06C45D188009454F,
 * F88BB8A8724C81EC. The inverse really inverts it. */
static void test_reference_mix64(void **state) {
  (void)state;
  const uint64_t want[4] = {0xE220A8397B1DCDAFULL, 0x6E789E6AA1B965F4ULL,
                            0x06C45D188009454FULL, 0xF88BB8A8724C81ECULL};
  for (uint64_t i = 1; i <= 4; i++)
    assert_int_equal(ref_mix64(i * 0x9E3779B97F4A7C15ULL), want[i - 1]);
  uint64_t rng = bk_test_seed(0x5EED0004);
  for (int i = 0; i < 10000; i++) {
    uint64_t x = i < 4 ? (uint64_t[]){0, 1, UINT64_MAX, 1ULL << 63}[i]
                       : bk_test_next(&rng);
    assert_int_equal(ref_unmix64(ref_mix64(x)), x);
    assert_int_equal(ref_mix64(ref_unmix64(x)), x);
  }
}

typedef struct index_vector {
  bk_hash h;
  unsigned k;
  uint64_t range;
  uint64_t want[10];
} index_vector;

/* Hand-computed in exact integer arithmetic outside this code base (a short
 * Python script with arbitrary-precision integers, masking to 64 bits) from
 *   a = lo, b = mix64(hi); out[i] = (a * range) >> 64; a += b; b += i + 1
 * (mod 2^64), mix64 the splitmix64 finaliser of hash.h. The script checked
 * its mix64 against splitmix64's published outputs (test_reference_mix64).
 *  - #1: hi = 0x9E3779B97F4A7C15, so b = E220A8397B1DCDAF (splitmix64's
 *    first output); a wraps around 2^64 at almost every step after i = 1.
 *  - #2: b = 0xDA26E52FA3730902; a wraps at once from 2^64 - 16.
 *  - #3: hi = unmix64(2^64 - 3), i.e. b = -3 mod 2^64: b wraps to 0 after
 *    two steps, a wraps back through 0 at i = 6.
 *  - #4: 9585059 is the optimal m for n = 10^6, p = 0.01.
 *  - #5: the reduction at a = 2^63 (exactly half of any range).
 *  - #6, #7: lo = 0 and range = 2^64 - 1, where reduce(x) = x - 1 for x > 0,
 *    so out[1] = mix64(hi) - 1 exposes the mixer through the public API:
 *    with hi = i * 0x9E3779B97F4A7C15 it is splitmix64's i-th output - 1. */
static const index_vector k_indices[] = {
    {{0x0123456789ABCDEFULL, 0x9E3779B97F4A7C15ULL},
     10,
     1000,
     {4, 887, 771, 654, 537, 420, 304, 187, 70, 954}},
    {{0xFFFFFFFFFFFFFFF0ULL, 0xFFFFFFFFFFFFFFFEULL},
     8,
     (uint64_t)1 << 40,
     {1099511627775ULL, 936955424675ULL, 774399221574ULL, 611843018474ULL,
      449286815373ULL, 286730612273ULL, 124174409172ULL, 1061129833848ULL}},
    {{0xFFFFFFFFFFFFFFF0ULL, 0x926590AA01CA8B12ULL},
     8,
     (uint64_t)1 << 40,
     {1099511627775ULL, 1099511627775ULL, 1099511627775ULL, 1099511627775ULL,
      1099511627775ULL, 1099511627775ULL, 0, 0}},
    {{0xD6E8FEB86659FD93ULL, 0xA0761D6478BD642FULL},
     7,
     9585059,
     {8046587, 3175260, 7888993, 3017667, 7731399, 2860073, 7573806}},
    {{0x8000000000000000ULL, 0x4000000000000000ULL}, 4, 3, {1, 1, 1, 2}},
    {{0, 0x9E3779B97F4A7C15ULL},
     3,
     UINT64_MAX,
     {0, 0xE220A8397B1DCDAEULL, 14141672759607663454ULL}},
    {{0, 0x3C6EF372FE94F82AULL},
     3,
     UINT64_MAX,
     {0, 0x6E789E6AA1B965F3ULL, 15920573044388711400ULL}},
};

static void test_indices_known_answers(void **state) {
  (void)state;
  for (size_t v = 0; v < sizeof k_indices / sizeof k_indices[0]; v++) {
    uint64_t out[10], ref[10];
    memset(out, 0xAB, sizeof out);
    assert_bk_ok(bk_hash_indices(k_indices[v].h, k_indices[v].k,
                                 k_indices[v].range, out));
    ref_indices(k_indices[v].h, k_indices[v].k, k_indices[v].range, ref);
    for (unsigned i = 0; i < k_indices[v].k; i++) {
      if (out[i] != k_indices[v].want[i])
        fail_msg("vector #%zu index %u: got %llu, want %llu", v + 1, i,
                 (unsigned long long)out[i],
                 (unsigned long long)k_indices[v].want[i]);
      /* the C reference agrees with the hand computation too */
      assert_int_equal(ref[i], k_indices[v].want[i]);
    }
    /* Nothing written past out[k-1]. */
    for (unsigned i = k_indices[v].k; i < 10; i++)
      assert_int_equal(out[i], 0xABABABABABABABABULL);
  }
  /* Vector #3's hi was chosen through the inverse: its step is -3. */
  assert_int_equal(ref_mix64(0x926590AA01CA8B12ULL), (uint64_t)0 - 3);
}

/* The digest -> k positions step as every structure takes it (enhanced
 * double hashing, multiply-shift reduction; one definition, bk__probe_* in
 * the first part of bloomkit/bloom_inline.h, which the library reaches
 * through src/core/hash_fast.h and the inline path uses). Expected values:
 * printed by the code before the step was gathered into one definition
 * (bloomkit 0.2.0~dev1, main at b8c90e0), where bloom.h, bloom.c (three times),
 * fbf.c, cbf.c and the since-removed src/core/hash_inline.h each used to
 * write it out; saved filters pin them, so
 * they must never change. The digests are pi's hex digits; #6 wraps a at once
 * and has step mix64(0); #7 (from main's library, b8c90e0) has a range near
 * 2^64, where a step off by one changes the positions (small ranges hide it).
 */
typedef struct positions_vector {
  bk_hash h;
  unsigned k;
  uint64_t m;
  uint64_t want[16];
} positions_vector;

static const positions_vector k_positions[] = {
    {{0x243F6A8885A308D3ULL, 0x13198A2E03707344ULL}, 1, 1ULL, {0ULL}},
    {{0xA4093822299F31D0ULL, 0x082EFA98EC4E6C89ULL},
     3,
     64ULL,
     {41ULL, 60ULL, 15ULL}},
    {{0x452821E638D01377ULL, 0xBE5466CF34E90C6CULL},
     7,
     9585059ULL,
     {2589342ULL, 3697234ULL, 4805127ULL, 5913019ULL, 7020912ULL, 8128804ULL,
      9236696ULL}},
    {{0xC0AC29B7C97C50DDULL, 0x3F84D5B5B5470917ULL},
     12,
     1000003ULL,
     {752629ULL, 483298ULL, 213966ULL, 944638ULL, 675307ULL, 405976ULL,
      136645ULL, 867316ULL, 597985ULL, 328654ULL, 59323ULL, 789994ULL}},
    {{0x9216D5D98979FB1BULL, 0xD1310BA698DFB5ACULL},
     16,
     1099511627776ULL,
     {627448338825ULL, 577628542894ULL, 527808746963ULL, 477988951032ULL,
      428169155101ULL, 378349359171ULL, 328529563240ULL, 278709767309ULL,
      228889971378ULL, 179070175447ULL, 129250379516ULL, 79430583585ULL,
      29610787654ULL, 1079302619499ULL, 1029482823568ULL, 979663027638ULL}},
    {{0xFFFFFFFFFFFFFFFFULL, 0x0000000000000000ULL},
     5,
     4096ULL,
     {4095ULL, 4095ULL, 0ULL, 0ULL, 0ULL}},
    /* a range near 2^64, where a step off by one shows in the positions */
    {{0x8EE7D0A2C08E4E8CULL, 0x3F6A8885A308D313ULL},
     8,
     UINT64_MAX - 58,
     {10297428470439759467ULL, 14692752354058392416ULL, 641332163967473808ULL,
      5036656047586106760ULL, 9431979931204739715ULL, 13827303814823372674ULL,
      18222627698442005638ULL, 4171207508351087051ULL}},
};

/* A standard bk_bloom of m bits and k probes after add_hash(h) holds
 * exactly the bits `want` lists (its add's copy of the step), and finds
 * h (its lookup's copy), read back through the serialized payload (after
 * the 56-byte header, bit i of the filter at byte i / 8, bit i % 8). */
static void assert_bloom_sets_positions(const positions_vector *v) {
  bk_bloom_config cfg = {.m_bits = v->m, .k = v->k};
  for (int single_writer = 0; single_writer < 2; single_writer++) {
    cfg.single_writer = single_writer;
    bk_bloom *b;
    assert_bk_ok(bk_bloom_create(&b, &cfg));
    assert_bk_ok(bk_bloom_add_hash(b, v->h));
    bool found = false;
    assert_bk_ok(bk_bloom_contains_hash(b, v->h, &found));
    assert_true(found);
    size_t size, written;
    assert_bk_ok(bk_bloom_serialized_size(b, &size));
    unsigned char *buf = malloc(size);
    assert_non_null(buf);
    assert_bk_ok(bk_bloom_serialize(b, buf, size, &written));
    const unsigned char *bits = buf + 56;
    for (uint64_t i = 0; i < v->m; i++) {
      bool want = false;
      for (unsigned j = 0; j < v->k; j++) want |= v->want[j] == i;
      if (((bits[i / 8] >> (i % 8)) & 1) != want)
        fail_msg("m %llu k %u: bit %llu is %d", (unsigned long long)v->m, v->k,
                 (unsigned long long)i, !want);
    }
    free(buf);
    bk_bloom_destroy(b);
  }
}

static void test_positions_known_answers(void **state) {
  (void)state;
  for (size_t v = 0; v < sizeof k_positions / sizeof k_positions[0]; v++) {
    const positions_vector *p = &k_positions[v];
    uint64_t out[16];
    assert_bk_ok(bk_hash_indices(p->h, p->k, p->m, out));
    for (unsigned i = 0; i < p->k; i++) {
      if (out[i] != p->want[i])
        fail_msg("vector #%zu position %u: got %llu, want %llu", v + 1, i,
                 (unsigned long long)out[i], (unsigned long long)p->want[i]);
    }
    /* The one definition itself, one position at a time, and the array
     * form the structures call. */
    bk__probe_seq seq = bk__probe_start(p->h);
    for (unsigned i = 0; i < p->k; i++)
      assert_int_equal(bk__probe_next(&seq, i, p->m), p->want[i]);
    uint64_t all[16];
    bk__indices(p->h, p->k, p->m, all);
    for (unsigned i = 0; i < p->k; i++) assert_int_equal(all[i], p->want[i]);
    if (p->m <= 10000000) assert_bloom_sets_positions(p);
  }
}

/* End to end: a digest from a published vector, through the derivation.
 * Pins the whole key -> indices path for a saved filter. */
static void test_indices_from_key(void **state) {
  (void)state;
  bk_hash h;
  assert_bk_ok(bk_hash_bytes(BK_HASH_MURMUR3, 0, "hello", 5, &h));
  uint64_t got[7], want[7];
  assert_bk_ok(bk_hash_indices(h, 7, 9585059, got));
  ref_indices(h, 7, 9585059, want);
  for (int i = 0; i < 7; i++) assert_int_equal(got[i], want[i]);
  /* by hand (same script as k_indices) from {cbd8a7b341bd9b02,
   * 5b1e906a48ae1d19}, Murmur3 "hello" seed 0 */
  const uint64_t hand[7] = {7632339, 7055955, 6479571, 5903187,
                            5326803, 4750419, 4174036};
  for (int i = 0; i < 7; i++) assert_int_equal(got[i], hand[i]);
  /* first index: (0xcbd8a7b341bd9b02 * 9585059) >> 64, unaffected by hi */
  assert_int_equal(
      got[0], (uint64_t)(((bk__u128)0xcbd8a7b341bd9b02ULL * 9585059u) >> 64));
}

static void test_indices_match_reference_and_range(void **state) {
  (void)state;
  uint64_t rng = bk_test_seed(0x5EED0002);
  uint64_t got[64], want[64];
  for (int iter = 0; iter < 20000; iter++) {
    bk_hash h = {bk_test_next(&rng), bk_test_next(&rng)};
    unsigned k = 1 + (unsigned)(bk_test_next(&rng) % 64);
    uint64_t range;
    switch (iter % 4) {
      case 0:
        range = 1 + bk_test_next(&rng) % 1000;
        break;
      case 1:
        range = 1 + bk_test_next(&rng) % ((uint64_t)1 << 40);
        break;
      case 2:
        range = bk_test_next(&rng) | 1;
        break; /* up to 2^64 - 1 */
      default:
        range = (uint64_t)1 << (bk_test_next(&rng) % 64);
        break;
    }
    /* steps b = mix64(hi) that are small or just below 2^64 (wrapping) */
    if (iter % 97 == 0) h.hi = ref_unmix64(bk_test_next(&rng) % 8);
    if (iter % 89 == 0)
      h.hi = ref_unmix64((uint64_t)0 - 1 - bk_test_next(&rng) % 8);
    assert_bk_ok(bk_hash_indices(h, k, range, got));
    ref_indices(h, k, range, want);
    for (unsigned i = 0; i < k; i++) {
      assert_true(got[i] < range);
      assert_int_equal(got[i], want[i]);
    }
  }
  /* range 1: everything maps to 0 */
  bk_hash h = {UINT64_MAX, UINT64_MAX};
  assert_bk_ok(bk_hash_indices(h, 64, 1, got));
  for (int i = 0; i < 64; i++) assert_int_equal(got[i], 0);
}

static void test_reduce_exact(void **state) {
  (void)state;
  const uint64_t ranges[] = {
      1, 2, 3, 7, 1000, 9585059, (uint64_t)1 << 40, UINT64_MAX};
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
    uint64_t r = ranges[i];
    assert_int_equal(bk_reduce(0, r), 0);
    assert_int_equal(bk_reduce(UINT64_MAX, r), r - 1);
    assert_int_equal(bk_reduce((uint64_t)1 << 63, r), r / 2);
  }
  assert_int_equal(bk_reduce(0x4000000000000000ULL, 1000), 250);
}

/* Chi-square goodness of fit of counts against a uniform expectation. */
static double chi_square(const uint64_t *counts, size_t buckets, double n) {
  double expected = n / (double)buckets, x2 = 0;
  for (size_t i = 0; i < buckets; i++) {
    double d = (double)counts[i] - expected;
    x2 += d * d / expected;
  }
  return x2;
}

/* Bound for a chi-square statistic with df = buckets - 1 degrees of freedom:
 * mean df, standard deviation sqrt(2 df); we accept mean +/- 6 sd. With
 * df ~ 1000 the Wilson-Hilferty approximation puts the upper tail beyond
 * +6 sd near 1e-8 (and the lower tail lower still), so a correct reduction
 * fails this essentially never, at any BK_TEST_SEED, while a biased one
 * (e.g. `word % range` on a skewed source, or a reduction that drops
 * buckets) lands far outside: a bucket that is never hit alone adds ~1000. */
static void assert_chi_square_uniform(const uint64_t *counts, size_t buckets,
                                      double n) {
  double df = (double)buckets - 1;
  double x2 = chi_square(counts, buckets, n);
  double sd = sqrt(2 * df);
  if (x2 > df + 6 * sd || x2 < df - 6 * sd)
    fail_msg("chi-square %.1f outside [%.1f, %.1f] (df %.0f)", x2, df - 6 * sd,
             df + 6 * sd, df);
}

static void test_reduce_uniform(void **state) {
  (void)state;
  enum { BUCKETS = 1000, N = 1000000 };
  static uint64_t counts[BUCKETS];
  memset(counts, 0, sizeof counts);
  uint64_t rng = bk_test_seed(0x5EED0003);
  for (int i = 0; i < N; i++) {
    uint64_t r = bk_reduce(bk_test_next(&rng), BUCKETS);
    assert_true(r < BUCKETS);
    counts[r]++;
  }
  assert_chi_square_uniform(counts, BUCKETS, N);
}

/* The indices actually produced from hashed keys are uniform too, for each
 * probe position separately (probes of one key are not independent of each
 * other, but each position over independent keys is uniform). */
static void test_indices_uniform_from_keys(void **state) {
  (void)state;
  enum { BUCKETS = 1021, N = 200000, K = 7 };
  static uint64_t counts[K][BUCKETS];
  for (int alg = BK_HASH_XXH3; alg <= BK_HASH_MURMUR3; alg++) {
    memset(counts, 0, sizeof counts);
    for (uint64_t key = 0; key < N; key++) {
      bk_hash h;
      uint64_t idx[K];
      assert_bk_ok(bk_hash_u64((bk_hash_alg)alg, 12345, key, &h));
      assert_bk_ok(bk_hash_indices(h, K, BUCKETS, idx));
      for (int i = 0; i < K; i++) counts[i][idx[i]]++;
    }
    for (int i = 0; i < K; i++)
      assert_chi_square_uniform(counts[i], BUCKETS, N);
  }
}

/* The reason the step is mixed: MurmurHash3_x64_128 of a key of at most 8
 * bytes with seed == length gives lo = 2F, hi = 3F (mod 2^64) for one F, and
 * with b = hi the second index would be a function of the first (a + b =
 * 5F). Over such digests the pairs of consecutive indices must still be
 * jointly uniform: chi-square over range^2 cells. (With the unmixed step
 * this statistic is in the millions; see also test_bloom's
 * test_fpr_murmur_seed_equal_key_length.) */
static void test_indices_pairs_uniform_murmur_seed_len(void **state) {
  (void)state;
  enum { R = 257, K = 4, PER_CELL = 4, N = R * R * PER_CELL };
  static uint64_t pairs[K - 1][R * R];
  memset(pairs, 0, sizeof pairs);
  for (uint64_t key = 0; key < N; key++) {
    bk_hash h;
    uint64_t idx[K];
    /* 8-byte keys, seed 8 */
    assert_bk_ok(bk_hash_u64(BK_HASH_MURMUR3, 8, key, &h));
    if (key < 1000) { /* the structure this guards against is really there */
      uint64_t f = h.lo / 2, f2 = f + ((uint64_t)1 << 63);
      assert_true(h.lo % 2 == 0);
      assert_true(h.hi == 3 * f || h.hi == 3 * f2);
    }
    assert_bk_ok(bk_hash_indices(h, K, R, idx));
    for (int i = 0; i + 1 < K; i++) pairs[i][idx[i] * R + idx[i + 1]]++;
  }
  for (int i = 0; i + 1 < K; i++)
    assert_chi_square_uniform(pairs[i], (size_t)R * R, N);
}

/* ---- bad arguments ------------------------------------------------------- */

/* XXH64 (Parquet's hash): the reference value of the empty input with seed
 * 0 from the xxHash documentation, and of "abc"; hi is mix64(lo). */
static void test_xxh64_known_answers(void **state) {
  (void)state;
  bk_hash h;
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH64, 0, NULL, 0, &h));
  assert_int_equal(h.lo, 0xEF46DB3751D8E999ull);
  uint64_t x = h.lo;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  assert_int_equal(h.hi, x ^ (x >> 31));
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH64, 0, "abc", 3, &h));
  assert_int_equal(h.lo, XXH64("abc", 3, 0));
  assert_bk_ok(bk_hash_bytes(BK_HASH_XXH64, 7, "abc", 3, &h));
  assert_int_equal(h.lo, XXH64("abc", 3, 7));
}

static void test_bad_args(void **state) {
  (void)state;
  bk_hash h;
  unsigned char buf[16] = {0};
  for (int alg = BK_HASH_XXH3; alg <= BK_HASH_MURMUR3; alg++) {
    assert_bk_status(bk_hash_bytes((bk_hash_alg)alg, 0, buf, 4, NULL),
                     BK_EINVAL);
    assert_bk_status(bk_hash_bytes((bk_hash_alg)alg, 0, NULL, 1, &h),
                     BK_EINVAL);
    assert_bk_status(bk_hash_u64((bk_hash_alg)alg, 0, 5, NULL), BK_EINVAL);
  }
  const int bad_algs[] = {4, 5, 99, -1};
  for (size_t i = 0; i < sizeof bad_algs / sizeof bad_algs[0]; i++) {
    assert_bk_status(bk_hash_bytes((bk_hash_alg)bad_algs[i], 0, buf, 4, &h),
                     BK_EINVAL);
    assert_bk_status(bk_hash_u64((bk_hash_alg)bad_algs[i], 0, 5, &h),
                     BK_EINVAL);
  }
  /* Murmur's seed is 32 bits: anything above UINT32_MAX is rejected rather
   * than silently truncated (which would alias two configured seeds). */
  assert_bk_ok(bk_hash_bytes(BK_HASH_MURMUR3, UINT32_MAX, buf, 4, &h));
  assert_bk_status(
      bk_hash_bytes(BK_HASH_MURMUR3, (uint64_t)UINT32_MAX + 1, buf, 4, &h),
      BK_EINVAL);
  assert_bk_status(bk_hash_bytes(BK_HASH_MURMUR3, UINT64_MAX, buf, 4, &h),
                   BK_EINVAL);
  assert_bk_status(bk_hash_u64(BK_HASH_MURMUR3, (uint64_t)1 << 32, 5, &h),
                   BK_EINVAL);
  /* The reference Murmur takes an int length: longer inputs are rejected.
   * The check must come before any byte is read (buf is only 16 bytes). */
  assert_bk_status(
      bk_hash_bytes(BK_HASH_MURMUR3, 0, buf, (size_t)INT32_MAX + 1, &h),
      BK_EINVAL);
  assert_bk_status(bk_hash_bytes(BK_HASH_MURMUR3, 0, buf, SIZE_MAX, &h),
                   BK_EINVAL);

  uint64_t out[4];
  bk_hash d = {1, 2};
  assert_bk_status(bk_hash_indices(d, 3, 100, NULL), BK_EINVAL);
  assert_bk_status(bk_hash_indices(d, 0, 100, out), BK_EINVAL);
  assert_bk_status(bk_hash_indices(d, 3, 0, out), BK_EINVAL);
  assert_bk_ok(bk_hash_indices(d, 3, 100, out));
}

static int setup(void **state) {
  (void)state;
  fill_sanity_buffer(g_sanity, sizeof g_sanity);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_xxh3_sanity_buffer_prefix),
      cmocka_unit_test(test_xxh3_known_answers),
      cmocka_unit_test(test_xxh3_matches_library),
      cmocka_unit_test(test_murmur3_known_answers),
      cmocka_unit_test(test_murmur3_smhasher_verification),
      cmocka_unit_test(test_alg_names),
      cmocka_unit_test(test_default_alg),
      cmocka_unit_test(test_algorithms_differ),
      cmocka_unit_test(test_seeds_change_output),
      cmocka_unit_test(test_null_key_zero_len),
      cmocka_unit_test(test_hash_u64_is_le_bytes),
      cmocka_unit_test(test_reference_mix64),
      cmocka_unit_test(test_indices_known_answers),
      cmocka_unit_test(test_positions_known_answers),
      cmocka_unit_test(test_indices_from_key),
      cmocka_unit_test(test_indices_match_reference_and_range),
      cmocka_unit_test(test_reduce_exact),
      cmocka_unit_test(test_reduce_uniform),
      cmocka_unit_test(test_indices_uniform_from_keys),
      cmocka_unit_test(test_indices_pairs_uniform_murmur_seed_len),
      cmocka_unit_test(test_xxh64_known_answers),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
