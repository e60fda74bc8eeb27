/* SPDX-License-Identifier: MIT */
/*
 * A consumer of an installed bloomkit that links bloomkit_core alone: it
 * checks the headers and the library agree on the version, then creates a
 * filter with each hash and layout, adds keys, queries them, and round-trips
 * the filter through the serialized form (so xxHash and MurmurHash3 are
 * reached through the library's own dependencies). Exits nonzero, saying
 * why, on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/bloom.h"
#include "bloomkit/version.h"

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "consumer: check failed at line %d: %s\n", __LINE__, \
              #cond);                                                      \
      return 1;                                                            \
    }                                                                      \
  } while (0)

static int run(bk_bloom_layout layout, bk_hash_alg alg) {
  bk_bloom_config cfg = {.capacity = 10000,
                         .fpp = 0.01,
                         .layout = layout,
                         .hash_alg = alg,
                         .seed = 1234};
  bk_bloom *b = NULL;
  CHECK(bk_bloom_create(&b, &cfg) == BK_OK);
  char key[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "member-%d", i);
    CHECK(bk_bloom_add(b, key, strlen(key)) == BK_OK);
  }
  bool found = false;
  int false_positives = 0;
  for (int i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "member-%d", i);
    CHECK(bk_bloom_contains(b, key, strlen(key), &found) == BK_OK);
    CHECK(found);
    snprintf(key, sizeof key, "stranger-%d", i);
    CHECK(bk_bloom_contains(b, key, strlen(key), &found) == BK_OK);
    false_positives += found;
  }
  /* 1000 of 10000 capacity at 1 %: the rate is far below 1 %. */
  CHECK(false_positives < 20);

  size_t size = 0, written = 0;
  CHECK(bk_bloom_serialized_size(b, &size) == BK_OK);
  unsigned char *buf = malloc(size);
  CHECK(buf != NULL);
  CHECK(bk_bloom_serialize(b, buf, size, &written) == BK_OK);
  CHECK(written == size);
  bk_bloom *copy = NULL;
  CHECK(bk_bloom_deserialize(buf, size, NULL, &copy) == BK_OK);
  CHECK(bk_bloom_contains(copy, "member-7", 8, &found) == BK_OK && found);
  buf[size / 2] ^= 0x10;
  bk_bloom *bad = NULL;
  CHECK(bk_bloom_deserialize(buf, size, NULL, &bad) == BK_ECORRUPT);
  free(buf);
  bk_bloom_destroy(copy);
  bk_bloom_destroy(b);
  return 0;
}

int main(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", BK_VERSION_MAJOR, BK_VERSION_MINOR,
           BK_VERSION_PATCH);
  CHECK(strcmp(bk_version_string(), want) == 0);
  CHECK(strcmp(bk_strerror(BK_EINVAL), "invalid argument") == 0);
  for (int layout = 0; layout < 2; layout++)
    for (int alg = BK_HASH_XXH3; alg <= BK_HASH_MURMUR3; alg++)
      if (run((bk_bloom_layout)layout, (bk_hash_alg)alg) != 0) return 1;
  printf("consumer: bloomkit %s OK\n", bk_version_string());
  return 0;
}
