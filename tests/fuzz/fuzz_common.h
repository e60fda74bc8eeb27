/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer targets: a trap that any sanitizer-less invariant
 * failure turns into a crash the fuzzer reports, and the checksum repair that
 * lets mutated inputs past the XXH3 trailer. Every bloomkit blob ends in an
 * XXH3-64 of all that precedes it, so almost every mutation the fuzzer makes
 * fails the checksum and the field validation behind it would never be
 * reached; each target therefore feeds the deserializer twice, the input as
 * it is and a copy whose last 8 bytes are rewritten to the right checksum.
 */
#ifndef BLOOMKIT_FUZZ_COMMON_H
#define BLOOMKIT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/common.h"

#define FUZZ_CHECK(cond)  \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

/* The statuses a deserializer may return for hostile bytes. */
static inline void fuzz_check_status(bk_status s) {
  FUZZ_CHECK(s == BK_OK || s == BK_ECORRUPT || s == BK_EVERSION ||
             s == BK_ENOMEM);
}

/* A malloc'd copy of data with a valid trailer (NULL when too short). */
static inline unsigned char *fuzz_with_checksum(const uint8_t *data,
                                                size_t size) {
  if (size < 8) return NULL;
  unsigned char *p = malloc(size);
  if (!p) return NULL;
  memcpy(p, data, size);
  uint64_t h = (uint64_t)XXH3_64bits(p, size - 8);
  for (int i = 0; i < 8; i++) p[size - 8 + i] = (unsigned char)(h >> (8 * i));
  return p;
}

#endif
