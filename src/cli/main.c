/* SPDX-License-Identifier: MIT */
/* The `bloomkit` command (placeholder until the subcommands land). */
#include <stdio.h>
#include <string.h>

int bk_cli_fbf_experiments(int argc, char **argv);

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "fbf-experiments") == 0)
    return bk_cli_fbf_experiments(argc - 1, argv + 1);
  fprintf(stderr, "usage: bloomkit fbf-experiments [options]\n");
  return 2;
}
