/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: the kBF in use (issue #11), as
 * experiments that `bloomkit kbf-experiments` runs for --acsm and
 * --memcached. Each takes argv with argv[0] = its name and returns the exit status
 * (0, 1 failure, 2 usage), like every subcommand (cli.h).
 */
#ifndef BLOOMKIT_SRC_CLI_KBF_APPS_H
#define BLOOMKIT_SRC_CLI_KBF_APPS_H

/** The approximate state machine of Sec. 7: per-flow TCP state in an sBF
 * and a kBF over a synthetic trace, errors as p varies (Figs. 24-25;
 * kbf_acsm.c). */
int bk_cli_kbf_acsm(int argc, char **argv);

/** The kBF against a real memcached (Figs. 15-16; kbf_memcached.c). */
int bk_cli_kbf_memcached(int argc, char **argv);

#endif
