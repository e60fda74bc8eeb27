/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: the entry point of each subcommand.
 * A subcommand gets argv with argv[0] = its own name and returns the process
 * exit status: 0 success, 1 a failure while running (a bloomkit call, I/O),
 * 2 a usage error. Subcommands print their own messages and never abort.
 */
#ifndef BLOOMKIT_SRC_CLI_CLI_H
#define BLOOMKIT_SRC_CLI_CLI_H

/** `bloomkit fbf-experiments`: the FBF thesis' Fig. 6.1-6.6
 * (fbf_experiments.c). */
int bk_cli_fbf_experiments(int argc, char **argv);

/** `bloomkit sim <simulation>`: argv[1] selects the simulation; only
 * `counters` (idempotent counters under client retries, thesis Fig. 6.7
 * and 6.9) so far (sim_counters.c). */
int bk_cli_sim(int argc, char **argv);

#endif
