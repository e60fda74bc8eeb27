/* SPDX-License-Identifier: MIT */
/*
 * bk_hash: 128-bit digests of byte strings through Debian's libxxhash (XXH3)
 * and libmurmurhash (MurmurHash3 x64_128), and the index derivation.
 */
#include "bloomkit/hash.h"

#include <murmurhash.h>

/* xxHash's documented header-only mode (hash_fast.h): XXH3 is compiled into
 * this file so the hot path needs no call through the PLT. */
#include "hash_fast.h"
#include "internal.h"

bk_status bk_hash_bytes(bk_hash_alg alg, uint64_t seed, const void *key,
                        size_t len, bk_hash *out) {
  BK_RETURN_IF(!out || (!key && len), BK_EINVAL);
  BK_RETURN_IF(!bk__hash_alg_valid_any(alg, seed), BK_EINVAL);
  BK_RETURN_IF(alg == BK_HASH_MURMUR3 && len > (size_t)INT32_MAX, BK_EINVAL);
  *out = bk__hash(alg, seed, key, len);
  return BK_OK;
}

bk_status bk_hash_u64(bk_hash_alg alg, uint64_t seed, uint64_t value,
                      bk_hash *out) {
  unsigned char le[8];
  bk__store_le64(le, value);
  return bk_hash_bytes(alg, seed, le, sizeof le, out);
}

bk_status bk_hash_indices(bk_hash h, unsigned k, uint64_t range,
                          uint64_t *out) {
  BK_RETURN_IF(!out || k == 0 || range == 0, BK_EINVAL);
  bk__indices(h, k, range, out);
  return BK_OK;
}

const char *bk_hash_alg_name(bk_hash_alg alg) {
  switch (alg) {
    case BK_HASH_DEFAULT:
    case BK_HASH_XXH3:
      return "xxh3";
    case BK_HASH_MURMUR3:
      return "murmur3";
    case BK_HASH_XXH64:
      return "xxh64";
  }
  return NULL;
}

bk_hash bk__hash(bk_hash_alg alg, uint64_t seed, const void *key, size_t len) {
  bk_hash h;
  if (alg == BK_HASH_MURMUR3) {
    uint64_t o[2];
    lmmh_x64_128(key, (unsigned int)len, (uint32_t)seed, o);
    h.lo = o[0];
    h.hi = o[1];
  } else if (alg == BK_HASH_XXH64) {
    /* One 64-bit word; hi is a bijection of it, so standard and blocked
     * probes still get an independent-looking step and the key-lock stripe
     * (lo ^ hi) is not constant. */
    h.lo = XXH64(key, len, seed);
    h.hi = bk__mix64(h.lo);
  } else {
    XXH128_hash_t x = XXH3_128bits_withSeed(key, len, seed);
    h.lo = x.low64;
    h.hi = x.high64;
  }
  return h;
}
