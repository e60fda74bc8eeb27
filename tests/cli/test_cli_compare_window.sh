#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit compare --window`: bad options exit 2 naming the option; the
# CSV has one row per structure with the documented columns; no false
# negative inside the window for the FBF (fixed and adaptive), the APBF
# (count- and time-based) and the exact set, by ids and by time (Poisson
# arrivals); the RBF forgets ids inside the window at each recycle; the
# exact set has no false positive at all; the filters stay near the 1 %
# they are sized for (each fp_new over about 16,000 new ids plus 100,000
# never-seen lookups: 2 % is far beyond the noise); --sweep gives a row per
# filter and budget, and more bits give fewer false positives; --plot
# writes window_fpp.png when gnuplot is there.
# Usage: test_cli_compare_window.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
expect 2 "--window: '1' is out of range" compare --window 1
expect 2 "--dup: '1.5' is out of range" compare --window 100 --dup 1.5
expect 2 "--by: 'days'" compare --window 100 --by days
expect 2 "--only: 'bloom'" compare --window 100 --only bloom
expect 2 "--plot needs --sweep" compare --window 100 --plot "$TMP/p"

for by in items time; do
  CASE="compare --window --by $by"
  "$BK" compare --window 20000 --by $by --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
  head -n 1 "$TMP/csv" | grep -qx "structure,bits_per_item,false_negatives,fp_new,fp_expired,add_ns,lookup_ns,memory_bytes" || fail "header"
  [ "$(($(wc -l <"$TMP/csv") - 1))" -eq 6 ] || fail "expected 6 rows"
  for name in fbf fbf-adaptive apbf-time exact; do
    grep "^$name," "$TMP/csv" | awk -F, '$3 != 0 { exit 1 }' || fail "$name: false negatives inside the window"
  done
  # the count-based apbf guarantees ids: only by ids it must have none
  [ $by = items ] && { grep "^apbf," "$TMP/csv" | awk -F, '$3 != 0 { exit 1 }' || fail "apbf: false negatives"; }
  grep "^rbf," "$TMP/csv" | awk -F, '$3 == 0 { exit 1 }' || fail "rbf should forget inside the window"
  grep "^exact," "$TMP/csv" | awk -F, '$4 != 0 || $5 != 0 { exit 1 }' || fail "exact: false positives"
  awk -F, 'NR > 1 && $1 != "exact" && !($4 < 0.02) { print $1, $4; bad = 1 } END { exit bad }' "$TMP/csv" >"$TMP/err" || fail "fp_new over 2 %: $(cat "$TMP/err")"
done

CASE="compare --window --sweep"
"$BK" compare --window 20000 --sweep 12,24 --only fbf,apbf --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
[ "$(($(wc -l <"$TMP/csv") - 1))" -eq 4 ] || fail "expected 4 rows"
for name in fbf apbf; do
  grep "^$name," "$TMP/csv" | awk -F, 'NR == 1 { p = $4 } NR == 2 && !($4 < p) { exit 1 }' || fail "$name: more bits, no fewer false positives"
done
if command -v gnuplot >/dev/null 2>&1; then
  CASE="compare --window --sweep --plot"
  "$BK" compare --window 5000 --sweep 12,20 --only apbf --plot "$TMP/p" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  is_png "$TMP/p/window_fpp.png" || fail "no window_fpp.png"
fi
finish "compare --window: options, rows, fn inside the window, sweep, plot"
