#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `--plot DIR` of the experiment commands: each figure comes out as a PNG
# (PNG signature, non-empty) beside its CSV and gnuplot script, also in a
# directory whose name needs quoting; without gnuplot on PATH the command
# says so and exits 1. Skipped (exit 77) when gnuplot is not installed.
# Usage: test_cli_plot.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot not installed: skipped"; exit 77; }
# png DIR NAME: DIR/NAME.png exists and starts with the PNG signature;
# DIR/NAME.csv and DIR/NAME.gp are there.
png() {
  [ -s "$1/$2.png" ] || { fail "no $2.png"; return; }
  is_png "$1/$2.png" || fail "$2.png is not a PNG"
  [ -s "$1/$2.csv" ] || fail "no $2.csv"
  [ -s "$1/$2.gp" ] || fail "no $2.gp"
  [ -e "$1/$2.gnuplot.log" ] && fail "gnuplot log left behind"
}

D="$TMP/it's a \"dir\""
CASE="fbf-experiments --plot"
"$BK" fbf-experiments --plot "$D" --only 6.1,6.3,6.6 --probes 2000 >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
for f in fig6_1 fig6_3 fig6_6; do png "$D" $f; done
[ -e "$D/fig6_2.png" ] && fail "drew a figure not asked for"
grep -q "^# seed" "$TMP/out" || fail "stdout lost its header"

CASE="fbf-experiments --plot with --out"
"$BK" fbf-experiments --plot "$TMP/png" --out "$TMP/csv" --only 6.4 --probes 1000 >/dev/null 2>"$TMP/err" || fail "exit status $?"
[ -s "$TMP/png/fig6_4.png" ] || fail "no png"
[ -s "$TMP/csv/fig6_4.csv" ] || fail "no csv in --out"
grep -q "$TMP/csv/fig6_4.csv" "$TMP/png/fig6_4.gp" || fail "script does not read --out's csv"

CASE="sim counters --plot"
"$BK" sim counters --ops 2000 --rate 200 --plot "$TMP/sim" >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
png "$TMP/sim" fig6_7
# expected, then one column per strategy: 6 strategies by default
head -n 20 "$TMP/sim/fig6_7.csv" | grep -q "^time_s,expected,NONE,RBF,FBF,FBF_ADAPTIVE,WINDOW,HYBRID$" || fail "fig6_7.csv header"
last=$(tail -n 1 "$TMP/sim/fig6_7.csv")
[ "$(echo "$last" | cut -d, -f2)" = 2000 ] || fail "expected at the end is not --ops: $last"
[ "$(echo "$last" | cut -d, -f5)" = 2000 ] || fail "FBF at the end is not exact: $last"
[ "$(echo "$last" | cut -d, -f7)" = 2000 ] || fail "WINDOW at the end is not exact: $last"
[ "$(echo "$last" | cut -d, -f8)" = 2000 ] || fail "HYBRID at the end is not exact: $last"

CASE="sim counters --sweep-retry --plot"
"$BK" sim counters --sweep-retry 0.05,0.2 --ops 2000 --plot "$TMP/sweep" >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
png "$TMP/sweep" fig6_9
grep -v '^#' "$TMP/out" >"$TMP/a"; grep -v '^#' "$TMP/sweep/fig6_9.csv" >"$TMP/b"
cmp -s "$TMP/a" "$TMP/b" || fail "stdout and fig6_9.csv differ"
[ "$(wc -l <"$TMP/b")" -eq 5 ] || fail "sweep csv: expected a header and 4 rows"

CASE="--plot without gnuplot"
mkdir -p "$TMP/nogp"
PATH="$TMP/nogp" "$BK" fbf-experiments --plot "$TMP/x" --only 6.1 >/dev/null 2>"$TMP/err"
st=$?
[ "$st" -eq 1 ] || fail "exit status $st, expected 1"
grep -q "needs gnuplot" "$TMP/err" || fail "no message"
[ -e "$TMP/x" ] && fail "made the directory anyway"

CASE="--plot into a file"
: >"$TMP/afile"
"$BK" sim counters --ops 100 --plot "$TMP/afile" >/dev/null 2>"$TMP/err"
st=$?
[ "$st" -eq 1 ] || fail "exit status $st, expected 1"
grep -q "cannot create directory" "$TMP/err" || fail "no message"

finish "all --plot checks passed"
