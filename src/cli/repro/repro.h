/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: the entry points of the paper
 * reproductions, the subcommands that regenerate a paper's figures or run
 * a simulation (the user's tool, cbf and compare, is in src/cli itself).
 * Each takes argv with argv[0] = its name and returns the exit status
 * (0, 1 failure, 2 usage), like every subcommand (cli.h).
 */
#ifndef BLOOMKIT_SRC_CLI_REPRO_REPRO_H
#define BLOOMKIT_SRC_CLI_REPRO_REPRO_H

/** `bloomkit fbf-experiments`: the FBF thesis' Fig. 6.1-6.6
 * (fbf_experiments.c). */
int bk_cli_fbf_experiments(int argc, char **argv);

/** `bloomkit kbf-experiments`: the kBF paper's figures
 * (kbf_experiments.c). */
int bk_cli_kbf_experiments(int argc, char **argv);

/** `bloomkit kbf-experiments --acsm`: the approximate state machine of
 * Sec. 7: per-flow TCP state in an sBF and a kBF over a synthetic trace,
 * errors as p varies (Figs. 24-25; kbf_acsm.c; dispatched by
 * bk_cli_kbf_experiments, issue #11). */
int bk_cli_kbf_acsm(int argc, char **argv);

/** `bloomkit kbf-experiments --memcached`: the kBF against a real
 * memcached (Figs. 15-16; kbf_memcached.c; dispatched by
 * bk_cli_kbf_experiments). */
int bk_cli_kbf_memcached(int argc, char **argv);

/** `bloomkit sim <simulation>`: argv[1] selects the simulation:
 * `counters` (idempotent counters under client retries, thesis Fig. 6.7
 * and 6.9; sim_counters.c), `clocks` (Bloom clocks, sim_clocks.c) or `dkbf`
 * (d-kBF load balancing, sim_dkbf.c). */
int bk_cli_sim(int argc, char **argv);

/** `bloomkit sim clocks`: Bloom clocks against vector clocks on a simulated
 * execution (sim_clocks.c; dispatched by bk_cli_sim). */
int bk_cli_sim_clocks(int argc, char **argv);

/** `bloomkit sim dkbf`: the d-kBF's slab load balancing, kBF paper
 * Algorithm 8 and Figs. 20-23 (sim_dkbf.c). */
int bk_cli_sim_dkbf(int argc, char **argv);

#endif
