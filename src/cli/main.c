/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit` command: `bloomkit <subcommand> [options]`. This file only
 * dispatches (bk_cli_dispatch, opts.c); each subcommand lives in its own
 * file and is listed in the table below. The user's tool (cbf, compare)
 * lives in src/cli/<name>.c, declared in cli.h; the paper reproductions
 * (fbf-experiments, kbf-experiments, sim) in src/cli/repro/, declared in
 * repro/repro.h. To add a subcommand, add a row here and a declaration in
 * the header of its folder. Exit status: 0 success, 1 failure while
 * running, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "bloomkit/common.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/repro/repro.h"

static const bk_cli_subcommand subcommands[] = {
    {"cbf",
     "a file-backed scalable counting filter: create, add, remove, check, "
     "info, flush",
     bk_cli_cbf},
    {"compare",
     "every structure on one workload, side by side: bits per key, false "
     "positive rate, ns per operation, memory",
     bk_cli_compare},
    {"fbf-experiments",
     "reproduce the FBF thesis' Fig. 6.1-6.6 (false positive experiments)",
     bk_cli_fbf_experiments},
    {"kbf-experiments",
     "reproduce the kBF paper's Figs. 2-5, 7-14, 17-18 (encodings, "
     "capacity, error ratios of every operation); `--acsm`, the state "
     "machine (Figs. 24-25); `--memcached`, against memcached (Figs. 15-16)",
     bk_cli_kbf_experiments},
    {"sim",
     "simulations: `sim counters`, idempotent counters under retries "
     "(thesis Fig. 6.7, 6.9); `sim clocks`, Bloom against vector clocks; "
     "`sim dkbf`, d-kBF load balancing",
     bk_cli_sim},
    {"size",
     "bytes, bits per key, k and fpp of every structure for a capacity and "
     "a target fpp; `--overfill`, the fpp at 1, 2 and 4 times the capacity",
     bk_cli_size},
};

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("bloomkit %s\n", bk_version_string());
    return 0;
  }
  const bk_cli_dispatcher bloomkit = {
      .prog = "bloomkit",
      .noun = "subcommand",
      .extra_usage = "bloomkit --help | --version",
      .subs = subcommands,
      .n_subs = sizeof subcommands / sizeof subcommands[0],
  };
  return bk_cli_dispatch(&bloomkit, argc, argv);
}
