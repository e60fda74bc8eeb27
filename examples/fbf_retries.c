/* SPDX-License-Identifier: MIT */
/*
 * The README's Forgetful Bloom Filter example, as a complete program: an
 * exactly-once gate for request ids that remembers each id for at least the
 * clients' retry timeout and forgets it later, on a clock the program owns.
 * README.md shows this file from its first #include on
 * (tests/readme_examples.sh keeps the two the same); the test command
 * builds it with -Werror and runs it under valgrind.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <bloomkit/fbf.h>

#define TRY(call)                                         \
  do {                                                    \
    if ((s = (call)) != BK_OK) {                          \
      fprintf(stderr, "%s: %s\n", #call, bk_strerror(s)); \
      goto out;                                           \
    }                                                     \
  } while (0)

int main(void) {
  bk_status s;
  bk_fbf *f = NULL;

  /* Remember update ids for at least the clients' 5 s retry timeout. */
  bk_fbf_config cfg = {.capacity = 100000, /* ids per refresh period */
                       .fpp = 0.001,       /* per constituent filter */
                       .n_past = 2,        /* 1 future + 1 present + 2 past */
                       .refresh_period = 2000, /* t, in your clock's units */
                       .min_window = 5000,     /* never forget a younger id */
                       .start_time = 0};
  TRY(bk_fbf_create(&f, &cfg));

  /* Request 1017, another, 1017's retry after 4.9 s, 1017 again at 20 s. */
  const struct {
    uint64_t now_ms, op_id;
  } requests[] = {{0, 1017}, {1000, 1018}, {4900, 1017}, {20000, 1017}};
  for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
    /* You own the clock (or bk_fbf_timer_start runs a thread that does). */
    TRY(bk_fbf_advance(f, requests[i].now_ms));
    bool is_new; /* the exactly-once gate: check and add in one step */
    TRY(bk_fbf_add_if_absent(f, &requests[i].op_id, sizeof requests[i].op_id,
                             &is_new));
    printf("%5" PRIu64 " ms, id %" PRIu64 ": %s\n", requests[i].now_ms,
           requests[i].op_id,
           is_new ? "new, apply it" : "a retry, answer again");
  }

out:
  bk_fbf_destroy(f);
  return s == BK_OK ? 0 : 1;
}
