/* SPDX-License-Identifier: MIT */
/*
 * The README's counting filter example, as a complete program: a bk_cbf
 * that keys are added to and removed from, and what a removal of a key
 * that was never added answers. README.md shows this file from its first
 * #include on (tests/readme_examples.sh keeps the two the same); the test
 * command builds it with -Werror and runs it under valgrind.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include <bloomkit/cbf.h>

#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

int main(void) {
  bk_status s;
  bk_cbf *f = NULL;

  bk_cbf_config cfg = {.capacity = 1000000, .fpp = 0.01}; /* 4-bit counters */
  TRY(bk_cbf_create(&f, &cfg));
  TRY(bk_cbf_add(f, "alice", 5));
  TRY(bk_cbf_add(f, "bob", 3));
  TRY(bk_cbf_remove(f, "alice", 5));
  bool maybe;
  TRY(bk_cbf_contains(f, "alice", 5, &maybe));
  printf("alice: %s\n", maybe ? "maybe present" : "absent"); /* absent */
  TRY(bk_cbf_contains(f, "bob", 3, &maybe));
  printf("bob: %s\n", maybe ? "maybe present" : "absent"); /* maybe */

  /* A key that cannot have been added: BK_ENOTFOUND, nothing changes. */
  bk_status removed = bk_cbf_remove(f, "carol", 5);
  printf("remove carol: %s\n", bk_strerror(removed));

  bk_cbf_info info; /* counters stuck at 15 are never decremented */
  TRY(bk_cbf_info_get(f, &info));
  printf("%" PRIu64 " counters, %" PRIu64 " saturated\n", info.m_counters,
         info.saturated);

out:
  bk_cbf_destroy(f);
  return s == BK_OK ? 0 : 1;
}
