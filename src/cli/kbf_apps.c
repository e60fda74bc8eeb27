/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit kbf-apps acsm|memcached`: the kBF-in-use experiments (issue
 * #11) as their own subcommand; `bloomkit kbf-experiments --acsm` and
 * `--memcached` run the same functions (kbf_apps.h).
 */
#include "cli/kbf_apps.h"

#include "cli/cli.h"
#include "cli/opts.h"

static const bk_cli_subcommand apps[] = {
    {"acsm",
     "TCP flow state in an sBF and a kBF: errors as p varies (kBF paper "
     "Figs. 24-25)",
     bk_cli_kbf_acsm},
    {"memcached",
     "the kBF against a real memcached: time and memory (kBF paper Figs. "
     "15-16)",
     bk_cli_kbf_memcached},
};

int bk_cli_kbf_apps(int argc, char **argv) {
  const bk_cli_dispatcher d = {
      .prog = "bloomkit kbf-apps",
      .noun = "experiment",
      .subs = apps,
      .n_subs = sizeof apps / sizeof apps[0],
  };
  return bk_cli_dispatch(&d, argc, argv);
}
