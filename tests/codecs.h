/* SPDX-License-Identifier: MIT */
/*
 * One descriptor per serialized bloomkit type, shared by the cmocka codec
 * harness (tests/codec_harness.c) and the libFuzzer targets (tests/fuzz/):
 * the type's serialize / deserialize / destroy functions behind void
 * pointers, its envelope type tag and newest version, and an `exercise`
 * function that runs public calls on an object a loader accepted.
 *
 * A new serialized type plugs in with (see docs/design/architecture.md, "Adding
 * a component"):
 *   1. in tests/codecs.c: BK_TEST_CODEC_ADAPTERS(x) and one
 *      `const bk_test_codec bk_test_codec_x = {...}` with its exercise
 *      function; an extern line below;
 *   2. in tests/test_x.c: bk_test_codec_hostile(&bk_test_codec_x, obj, seed)
 *      on one or two small populated objects;
 *   3. in tests/fuzz/: fuzz_x_deserialize.c, three lines
 *      (BK_FUZZ_CODEC_TARGET(bk_test_codec_x)), and `x` in the kind list of
 *      tests/fuzz/CMakeLists.txt plus a seed corpus folder.
 */
#ifndef BLOOMKIT_TESTS_CODECS_H
#define BLOOMKIT_TESTS_CODECS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bloomkit/common.h"

typedef struct bk_test_codec {
  const char *name;
  uint16_t type_tag; /* envelope type tag (BK__TYPE_*) */
  uint16_t version;  /* newest format version the reader accepts */
  /* An accepted blob re-serializes to exactly its own bytes. When false,
   * the harness asks that the re-serialized bytes load again into an
   * object `same` finds equal to the first. */
  bool canonical;
  bk_status (*serialized_size)(const void *obj, size_t *out);
  bk_status (*serialize)(const void *obj, void *buf, size_t cap,
                         size_t *written);
  /* *out is read as the caller's sentinel and written back whatever the
   * status, so a harness can check that a failed load leaves it alone. */
  bk_status (*deserialize)(const void *buf, size_t len,
                           const bk_allocator *allocator, void **out);
  void (*destroy)(void *obj);
  /* For non-canonical types: NULL when a and b hold the same state, else
   * what differs. */
  const char *(*same)(const void *a, const void *b);
  /* Public calls on an accepted object (it may modify it). `seed` (a hash
   * of the loaded blob) picks the random parts, e.g. clock jumps. Returns
   * NULL, or a description of the first call that misbehaved. */
  const char *(*exercise)(void *obj, uint64_t seed);
} bk_test_codec;

extern const bk_test_codec bk_test_codec_bits;
extern const bk_test_codec bk_test_codec_counters;
extern const bk_test_codec bk_test_codec_bloom;
extern const bk_test_codec bk_test_codec_fbf;
extern const bk_test_codec bk_test_codec_rbf;
extern const bk_test_codec bk_test_codec_apbf;
extern const bk_test_codec bk_test_codec_idem;
extern const bk_test_codec bk_test_codec_cbf;
extern const bk_test_codec bk_test_codec_scbf;
extern const bk_test_codec bk_test_codec_bloomclock;
extern const bk_test_codec bk_test_codec_vclock;
extern const bk_test_codec bk_test_codec_kbf;

/* Rewrite the XXH3-64 trailer of blob[0, len) (len >= 8) after an edit, so
 * the edit reaches the field validation behind the checksum. */
void bk_test_reseal(unsigned char *blob, size_t len);

/* Serialize obj into a fresh exact-size malloc'd buffer (so ASan sees any
 * over-read). NULL, with *status set, if a call failed or written differed
 * from serialized_size (then *status is BK_EINVAL). */
unsigned char *bk_test_codec_serialize(const bk_test_codec *c, const void *obj,
                                       size_t *len, bk_status *status);

/* Load blob (which has a valid checksum) and, if accepted, check what the
 * harness asks of any accepted object: re-serialization (canonical, or
 * stable), the exercise calls, and that the exercised object serializes,
 * loads again and re-serializes to the same bytes (or, for a non-canonical
 * type, to a `same` state). Returns NULL or what went wrong; the
 * load status goes to *status. Used by both the harness and the fuzzers. */
const char *bk_test_codec_check_accepted(const bk_test_codec *c,
                                         const unsigned char *blob, size_t len,
                                         bk_status *status);

#endif
