/* SPDX-License-Identifier: MIT */
/*
 * The README's Bloom clock example, as a complete program: two processes'
 * clocks, a message from one to the other carrying its timestamp, and the
 * causality tests that follow. README.md shows this file from its first
 * #include on (tests/readme_examples.sh keeps the two the same); the test
 * command builds it with -Werror and runs it under valgrind.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <bloomkit/bloomclock.h>

#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

int main(void) {
  bk_status s;
  bk_bloomclock *sender = NULL, *receiver = NULL;
  void *msg = NULL;

  uint64_t m;
  unsigned k; /* the same (m, k) for every clock of the system */
  TRY(bk_bloomclock_params(1024, 1, 0.01, &m, &k)); /* 1024 processes, 1 % */
  printf("m = %" PRIu64 " counters, k = %u\n", m, k);
  bk_bloomclock_config cfg = {.m = m, .k = k, .process_id = 7};
  TRY(bk_bloomclock_create(&sender, &cfg));
  cfg.process_id = 8;
  TRY(bk_bloomclock_create(&receiver, &cfg));

  TRY(bk_bloomclock_tick(sender)); /* an internal or send event */
  size_t cap, len;
  TRY(bk_bloomclock_serialized_size(sender, &cap));
  if ((msg = malloc(cap)) == NULL) {
    s = BK_ENOMEM;
    fprintf(stderr, "malloc: out of memory\n");
    goto out;
  }
  TRY(bk_bloomclock_serialize(sender, msg, cap, &len)); /* the timestamp */
  TRY(bk_bloomclock_receive(receiver, msg, len)); /* max, tick; no malloc */

  bk_causality c; /* BEFORE may be a false positive, never missed */
  TRY(bk_bloomclock_compare(sender, receiver, &c));
  printf("the send %s the receive\n", bk_causality_name(c)); /* before */
  TRY(bk_bloomclock_tick(sender)); /* not sent: the receiver never knows */
  TRY(bk_bloomclock_compare(sender, receiver, &c));
  printf("the next event: %s\n", bk_causality_name(c)); /* concurrent */

out:
  free(msg);
  bk_bloomclock_destroy(receiver);
  bk_bloomclock_destroy(sender);
  return s == BK_OK ? 0 : 1;
}
