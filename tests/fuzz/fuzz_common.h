/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer targets: one deserializer target per codec
 * descriptor of tests/codecs.h. Every bloomkit blob ends in an XXH3-64 of
 * all that precedes it, so almost every mutation the fuzzer makes would
 * fail the checksum and the field validation behind it would never be
 * reached. Each target therefore
 *   - has a custom mutator that mutates with libFuzzer's own mutator and
 *     then, most of the time, rewrites the trailer, so mutations reach the
 *     fields; and
 *   - feeds the deserializer both the input as it is and a resealed copy.
 * A status other than BK_OK / BK_ECORRUPT / BK_EVERSION / BK_ENOMEM, an
 * accepted blob that fails bk_test_codec_check_accepted (re-serialization,
 * the exercise calls), or a sanitizer report is a crash.
 *
 * A target is one line: BK_FUZZ_CODEC_TARGET(bk_test_codec_bits).
 */
#ifndef BLOOMKIT_FUZZ_COMMON_H
#define BLOOMKIT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static inline void bk_fuzz_load(const bk_test_codec *c, const uint8_t *data,
                                size_t size) {
  bk_status s;
  const char *why = bk_test_codec_check_accepted(c, data, size, &s);
  if (why) {
    fprintf(stderr, "bloomkit fuzz (%s): %s\n", c->name, why);
    abort();
  }
  if (s != BK_OK && s != BK_ECORRUPT && s != BK_EVERSION && s != BK_ENOMEM) {
    fprintf(stderr, "bloomkit fuzz (%s): status %s\n", c->name,
            bk_status_name(s));
    abort();
  }
}

static inline int bk_fuzz_one(const bk_test_codec *c, const uint8_t *data,
                              size_t size) {
  bk_fuzz_load(c, data, size);
  if (size >= 8) {
    unsigned char *p = malloc(size);
    if (!p) return 0;
    memcpy(p, data, size);
    bk_test_reseal(p, size);
    bk_fuzz_load(c, p, size);
    free(p);
  }
  return 0;
}

/* libFuzzer's mutation, then (15 times in 16) a valid trailer. */
static inline size_t bk_fuzz_mutate(uint8_t *data, size_t size, size_t max_size,
                                    unsigned seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (size >= 8 && seed % 16 != 0) bk_test_reseal(data, size);
  return size;
}

#define BK_FUZZ_CODEC_TARGET(codec)                                           \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);               \
  size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, \
                                 unsigned int seed);                          \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {              \
    return bk_fuzz_one(&codec, data, size);                                   \
  }                                                                           \
  size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, \
                                 unsigned int seed) {                         \
    return bk_fuzz_mutate(data, size, max_size, seed);                        \
  }

#endif
