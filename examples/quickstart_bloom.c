/* SPDX-License-Identifier: MIT */
/*
 * The README's first example ("Using it"), as a complete program: a bk_bloom
 * created, added to, asked, hashed once and probed, serialized and read back,
 * every status checked and everything freed. README.md shows this file from
 * its first #include on (tests/readme_examples.sh keeps the two the same);
 * the test command builds it with -Werror and runs it under valgrind.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <bloomkit/bloom.h>

/* Every fallible call returns a bk_status: BK_OK (0) or a negative error
 * that bk_strerror() names. */
#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

int main(void) {
  bk_status s;
  bk_bloom *f = NULL, *g = NULL;
  void *buf = NULL;

  bk_bloom_config cfg = {.capacity = 1000000, .fpp = 0.001};
  TRY(bk_bloom_create(&f, &cfg)); /* BK_EINVAL or BK_ENOMEM */

  TRY(bk_bloom_add(f, "alice", 5));
  bool maybe;
  TRY(bk_bloom_contains(f, "alice", 5, &maybe));
  printf("alice: %s\n", maybe ? "maybe present" : "absent"); /* maybe */

  bool added; /* one linearizable step: */
  TRY(bk_bloom_add_if_absent(f, "bob", 3, &added));
  printf("bob: %s\n", added ? "added" : "was there"); /* added, once */

  bk_hash h; /* hash once, probe many */
  TRY(bk_bloom_hash(f, "carol", 5, &h));
  TRY(bk_bloom_contains_hash(f, h, &maybe));
  printf("carol: %s\n", maybe ? "maybe present" : "absent"); /* absent */

  size_t size, written;
  TRY(bk_bloom_serialized_size(f, &size));
  buf = malloc(size);
  if (buf == NULL) {
    s = BK_ENOMEM;
    fprintf(stderr, "malloc: out of memory\n");
    goto out;
  }
  TRY(bk_bloom_serialize(f, buf, size, &written)); /* written == size */
  /* Any bytes may come back: damage is refused (BK_ECORRUPT). */
  TRY(bk_bloom_deserialize(buf, written, NULL, &g));
  TRY(bk_bloom_contains(g, "alice", 5, &maybe));
  printf("%zu bytes; the copy has alice: %s\n", written, maybe ? "yes" : "no");

out:
  free(buf);
  bk_bloom_destroy(g);
  bk_bloom_destroy(f);
  return s == BK_OK ? 0 : 1;
}
