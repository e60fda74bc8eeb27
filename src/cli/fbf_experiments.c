/* SPDX-License-Identifier: MIT */
/* `bloomkit fbf-experiments` (placeholder). */
#include <stdio.h>

int bk_cli_fbf_experiments(int argc, char **argv);

int bk_cli_fbf_experiments(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "fbf-experiments: not built yet\n");
  return 1;
}
