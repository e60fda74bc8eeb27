/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit` command: `bloomkit <subcommand> [options]`. This file only
 * dispatches; each subcommand lives in its own src/cli/<name>.c and is
 * listed in the table below (add a row and a declaration in cli.h to add
 * one). Exit status: 0 success, 1 failure while running, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "bloomkit/common.h"
#include "cli/cli.h"

typedef struct subcommand {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} subcommand;

static const subcommand subcommands[] = {
    {"fbf-experiments",
     "reproduce the FBF thesis' Fig. 6.1-6.6 (false positive experiments)",
     bk_cli_fbf_experiments},
    {"sim",
     "simulations: `sim counters`, idempotent counters under retries "
     "(thesis Fig. 6.7, 6.9)",
     bk_cli_sim},
};

#define N_SUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *out) {
  fprintf(out,
          "usage: bloomkit <subcommand> [options]\n"
          "       bloomkit <subcommand> --help\n"
          "       bloomkit --help | --version\n"
          "\n"
          "subcommands:\n");
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    fprintf(out, "  %-18s %s\n", subcommands[i].name, subcommands[i].summary);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("bloomkit %s\n", bk_version_string());
    return 0;
  }
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    if (strcmp(cmd, subcommands[i].name) == 0)
      return subcommands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "bloomkit: unknown subcommand '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
