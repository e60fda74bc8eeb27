/* SPDX-License-Identifier: MIT */
/*
 * The README's idempotent counters example, as a complete program: a
 * client's increment and its retry, applied once, then a snapshot that
 * carries the applied ids with the values. README.md shows this file from
 * its first #include on (tests/readme_examples.sh keeps the two the same);
 * the test command builds it with -Werror and runs it under valgrind.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <bloomkit/idem.h>

#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

int main(void) {
  bk_status s;
  bk_idem *t = NULL, *restored = NULL;
  void *snapshot = NULL;

  /* HYBRID, the default: a window per client decides in-order ids
   * exactly; an FBF, made on first need, takes the rest. */
  bk_idem_config cfg = {.strategy = BK_IDEM_HYBRID,
                        .retry_timeout = 5000, /* the clients' timeout, ms */
                        .ops_per_period = 200000}; /* the FBF's sizing */
  TRY(bk_idem_create(&t, &cfg));

  bk_idem_op_id id = {.client = 42, .seq = 1017}; /* globally unique */
  int64_t value;
  bk_idem_outcome outcome;
  for (int attempt = 1; attempt <= 2; attempt++) { /* the 2nd: a retry */
    TRY(bk_idem_add(t, "page:/home", 10, id, +1, &value, &outcome));
    printf("attempt %d: %s, page:/home = %" PRId64 "\n", attempt,
           outcome == BK_IDEM_APPLIED ? "applied" : "duplicate", value);
  }
  TRY(bk_idem_advance(t, 1000)); /* your clock, in ms */

  /* A snapshot carries the windows and the filter: the restored table
   * still knows. */
  size_t size, written;
  TRY(bk_idem_serialized_size(t, &size));
  if ((snapshot = malloc(size)) == NULL) {
    s = BK_ENOMEM;
    fprintf(stderr, "malloc: out of memory\n");
    goto out;
  }
  TRY(bk_idem_serialize(t, snapshot, size, &written));
  TRY(bk_idem_deserialize(snapshot, written, NULL, &restored));
  TRY(bk_idem_add(restored, "page:/home", 10, id, +1, &value, &outcome));
  printf("restored, attempt 3: %s, page:/home = %" PRId64 "\n",
         outcome == BK_IDEM_APPLIED ? "applied" : "duplicate", value);

out:
  free(snapshot);
  bk_idem_destroy(restored);
  bk_idem_destroy(t);
  return s == BK_OK ? 0 : 1;
}
