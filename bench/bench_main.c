/* SPDX-License-Identifier: MIT */
/*
 * bloomkit_bench: runs every benchmark file of the suite through the shim.
 * `bloomkit_bench --bk_quick` is the smoke test; `--help` lists the flags.
 */
#include "benches.h"
#include "shim.h"

static void register_all(void) {
  bk_bench_register_bloom();
  bk_bench_register_fbf();
  bk_bench_register_apbf();
  bk_bench_register_idem();
  bk_bench_register_cbf();
  bk_bench_register_scbf();
  bk_bench_register_kbf();
  bk_bench_register_bloomclock();
}

int main(int argc, char **argv) {
  int status = bk_bench_main(argc, argv, register_all);
  bk_bench_release_bloom();
  bk_bench_release_fbf();
  bk_bench_release_apbf();
  bk_bench_release_idem();
  bk_bench_release_cbf();
  bk_bench_release_scbf();
  bk_bench_release_kbf();
  bk_bench_release_bloomclock();
  return status;
}
