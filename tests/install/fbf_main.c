/* SPDX-License-Identifier: MIT */
/*
 * A consumer of an installed bloomkit that uses the FBF component only: it
 * calls bk_fbf_* and nothing of core directly, so a linker with --as-needed
 * (Debian's gcc default) records libbloomkit_fbf alone in the program, and
 * libbloomkit_core must be found through libbloomkit_fbf's own run path
 * (issue #18). It inserts keys, checks they are present, lets the clock run
 * past the window so they are forgotten, and round-trips the filter through
 * the serialized form. Exits nonzero, saying why, on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloomkit/fbf.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fbf consumer: check failed at line %d: %s\n", __LINE__, \
              #cond);                                                          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static int count_present(const bk_fbf *f, int n_keys, int *present) {
  char key[32];
  bool found = false;
  *present = 0;
  for (int i = 0; i < n_keys; i++) {
    snprintf(key, sizeof key, "request-%d", i);
    CHECK(bk_fbf_contains(f, key, strlen(key), &found) == BK_OK);
    *present += found;
  }
  return 0;
}

int main(void) {
  enum { n_keys = 500 };
  bk_fbf_config cfg = {.capacity = 2000,
                       .fpp = 0.01,
                       .n_past = 2,
                       .refresh_period = 10,
                       .start_time = 0};
  bk_fbf *f = NULL;
  CHECK(bk_fbf_create(&f, &cfg) == BK_OK);
  char key[32];
  for (int i = 0; i < n_keys; i++) {
    snprintf(key, sizeof key, "request-%d", i);
    CHECK(bk_fbf_add(f, key, strlen(key)) == BK_OK);
  }
  int present = 0;
  CHECK(count_present(f, n_keys, &present) == 0);
  CHECK(present == n_keys);

  size_t size = 0, written = 0;
  CHECK(bk_fbf_serialized_size(f, &size) == BK_OK);
  unsigned char *buf = malloc(size);
  CHECK(buf != NULL);
  CHECK(bk_fbf_serialize(f, buf, size, &written) == BK_OK);
  CHECK(written == size);
  bk_fbf *copy = NULL;
  CHECK(bk_fbf_deserialize(buf, size, NULL, &copy) == BK_OK);
  CHECK(count_present(copy, n_keys, &present) == 0);
  CHECK(present == n_keys);
  free(buf);

  /* Far past the window ((N + 2) t = 40 time units): every filter that
   * held the keys has been cleared, so at most false positives remain
   * (1 % target; 5 % of 500 leaves room for chance). */
  CHECK(bk_fbf_advance(copy, 1000) == BK_OK);
  CHECK(count_present(copy, n_keys, &present) == 0);
  CHECK(present < n_keys / 20);

  bk_fbf_destroy(copy);
  bk_fbf_destroy(f);
  printf("fbf consumer: OK (%d of %d keys remembered after the window)\n",
         present, n_keys);
  return 0;
}
