/* SPDX-License-Identifier: MIT */
/*
 * The README's key-value Bloom filter example, as a complete program: a
 * bk_kbf that maps keys to a few distinct values, queried, updated and
 * deleted. README.md shows this file from its first #include on
 * (tests/readme_examples.sh keeps the two the same); the test command builds
 * it with -Werror and runs it under valgrind.
 */
#include <stdio.h>

#include <bloomkit/kbf.h>

#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

/* Query a key and print what the filter answers. */
static bk_status show(const bk_kbf *f, const char *key, size_t len) {
  bk_kbf_result r;
  const void *value; /* points into the filter's value table */
  size_t value_len;
  bk_status s = bk_kbf_query(f, key, len, &r, &value, &value_len);
  if (s != BK_OK) return s;
  if (r == BK_KBF_FOUND)
    printf("%s: %.*s\n", key, (int)value_len, (const char *)value);
  else /* BK_KBF_UNDECODABLE: too many keys share its cells */
    printf("%s: %s\n", key, r == BK_KBF_ABSENT ? "absent" : "not decodable");
  return BK_OK;
}

int main(void) {
  bk_status s;
  bk_kbf *f = NULL;

  bk_kbf_config cfg = {.capacity = 1000000, .fpp = 1e-4}; /* 4095 values */
  TRY(bk_kbf_create(&f, &cfg));
  TRY(bk_kbf_insert(f, "alice", 5, "admin", 5));
  TRY(show(f, "alice", 5)); /* admin */
  TRY(bk_kbf_update(f, "alice", 5, "user", 4));
  TRY(show(f, "alice", 5)); /* user */
  TRY(bk_kbf_delete(f, "alice", 5));
  TRY(show(f, "alice", 5)); /* absent */

out:
  bk_kbf_destroy(f);
  return s == BK_OK ? 0 : 1;
}
