#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit kbf-experiments` at a small scale: every figure's CSV is
# written with its header, stored keys never come back with a wrong value,
# the encoding widths are the ones the design promises, a bad option is a
# usage error (exit 2) and --help works.
# Usage: test_cli_kbf.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
# row FILE: the CSV without its comment lines
rows() { grep -v '^#' "$1"; }

CASE="kbf-experiments --out"
"$BK" kbf-experiments --n 2000 --greedy-max 64 --seed 3 --out "$TMP/o" \
  >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
for f in fig2 fig3 fig4 fig5 fig7 fig8 fig9 fig10 fig11 fig12 fig13 fig14 \
  fig17 fig18; do
  [ -s "$TMP/o/$f.csv" ] || fail "no $f.csv"
done
grep -q '^# seed 3 n 2000' "$TMP/out" || fail "stdout lost its header"
rows "$TMP/o/fig2.csv" | head -n 1 | grep -q '^n,bound,cubes,greedy_exact,' \
  || fail "fig2 header"
# n = 16384: bound 28 bits, cubes 2t = 30; n = 4096: cubes 26 (t = 13)
rows "$TMP/o/fig2.csv" | grep -q '^16384,28,30,' || fail "fig2 at 16384"
rows "$TMP/o/fig2.csv" | grep -q '^4096,24,26,' || fail "fig2 at 4096"
# Greedy at 64: 13 bits (the bound 12); with its Bloom filter at 16: 8.
rows "$TMP/o/fig2.csv" | grep -q '^64,12,14,13,' || fail "fig2 greedy at 64"
rows "$TMP/o/fig2.csv" | grep -q '^16,8,10,8,8,' || fail "fig2 Bloom greedy at 16"
# Fig. 7: no stored key decodes to another value (the wrong_ columns).
rows "$TMP/o/fig7.csv" | tail -n +2 | awk -F, '{ for (i = 6; i <= 9; i++)
  if ($i != 0) exit 1 }' || fail "a wrong value in fig7"
# Fig. 4: the share of cells >= 3 is near P_n(rho) (within 0.01).
rows "$TMP/o/fig4.csv" | tail -n +2 | awk -F, '{ d = $3 - $4; if (d < 0) d = -d;
  if (d > 0.01) exit 1 }' || fail "fig4 off P_n"

CASE="bad option"
"$BK" kbf-experiments --n 10 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || fail "--n 10 not a usage error"
grep -q -- '--n' "$TMP/err" || fail "message does not name --n"
CASE="--help"
"$BK" kbf-experiments --help >"$TMP/out" 2>"$TMP/err" || fail "exit status"
grep -q -- '--greedy-max' "$TMP/out" || fail "help lacks --greedy-max"

finish "test_cli_kbf: all passed"
