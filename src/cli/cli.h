/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: the entry points of the user's tool
 * (cbf, compare; the paper reproductions are declared in repro/repro.h)
 * and what every subcommand shares. A subcommand gets argv with argv[0] =
 * its own name and returns the process exit status: 0 success, 1 a failure
 * while running (a bloomkit call, I/O), 2 a usage error. Subcommands print
 * their own messages and never abort.
 */
#ifndef BLOOMKIT_SRC_CLI_CLI_H
#define BLOOMKIT_SRC_CLI_CLI_H

/** `bloomkit compare`: every structure on one workload, one table
 * (compare.c). */
int bk_cli_compare(int argc, char **argv);

/** `bloomkit compare --window N`: the forgetful filters on a sliding window
 * (compare_window.c); bk_cli_compare hands over when --window is given. */
int bk__cli_compare_window(int argc, char **argv);

/** `bloomkit cbf <action> FILE`: a file-backed scalable counting filter
 * (bk_scbf): create, add, remove, check, info, flush (cbf.c). */
int bk_cli_cbf(int argc, char **argv);

/** `bloomkit size`: bytes and fpp of every structure for a capacity and a
 * target; `--overfill`, the fpp measured past the capacity (size.c). */
int bk_cli_size(int argc, char **argv);

/* Shared by the subcommands. Each defines PROG (its name for messages)
 * before using TRY_BK, which needs a `fail:` label in the function. */
#include <stdint.h>
#include <stdio.h>

#include "bloomkit/common.h"

/* Run a bloomkit call; on error say so and jump to `fail` (exit status 1).
 * The message is the status alone: never the call's source text or a
 * function name. Options that a bloomkit call would refuse are checked (or
 * the refusal translated into the options' terms) before any of this runs,
 * so what reaches here is out of memory or a bug. */
#define TRY_BK(call)                                     \
  do {                                                   \
    bk_status try_status_ = (call);                      \
    if (try_status_ != BK_OK) {                          \
      fprintf(stderr, PROG ": unexpected failure: %s\n", \
              bk_strerror(try_status_));                 \
      goto fail;                                         \
    }                                                    \
  } while (0)

/* splitmix64: the seeded generator of every simulation. */
#define SPLITMIX_GAMMA UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t splitmix_output(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

#endif
