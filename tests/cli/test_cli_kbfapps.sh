#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The kBF applications' commands (issue #11) as a user runs them:
# `bloomkit sim dkbf` with bad arguments (exit 2, the option named), --help,
# a run whose table and CSV agree, and --plot (when gnuplot is there).
# Usage: test_cli_kbfapps.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"

D="sim dkbf"
expect 2 "--servers: '0' is out of range" $D --servers 0
expect 2 "--c-max: '0' is out of range" $D --c-max 0
expect 2 "--settings: 'x' is not an integer" $D --settings x
expect 2 "--show 5: there are only 5 settings" $D --settings 5 --show 5
expect 2 "is more than 16777216 slabs" $D --servers 65536 --slabs-per-server 65536
expect 2 "unknown option '--bogus'" $D --bogus

CASE="$D --help"
"$BK" $D --help >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
for opt in --servers --slabs-per-server --capacity --c-max --settings --seed --show --store --store-capacity --csv --plot; do
  grep -qE -- "^  $opt( |\$)" "$TMP/out" || fail "--help does not list $opt"
done

# The CSV has one row per setting; rho never rises, exchanges <= C_max,
# and the table's mean improvement is the CSV's.
CASE="$D --csv"
"$BK" $D --settings 40 --c-max 3 --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
[ "$(grep -c '^[0-9]' "$TMP/csv")" -eq 40 ] || fail "not 40 rows"
awk -F, 'NR > 1 && ($3 > $2 || $5 > 3) { bad = 1 } END { exit bad }' "$TMP/csv" ||
  fail "a row with rho rising or more than C_max exchanges"
mean_csv=$(awk -F, 'NR > 1 { s += $4; n++ } END { printf "%.2f", s / n }' "$TMP/csv")
"$BK" $D --settings 40 --c-max 3 >"$TMP/table" 2>"$TMP/err" || fail "exit status $?"
grep -q "mean improvement of rho $mean_csv %" "$TMP/table" ||
  fail "table's mean improvement is not the CSV's $mean_csv"

# The in-process d-kBF makes the model's decisions and loses no pair.
CASE="$D --store"
"$BK" $D --settings 3 --store --store-capacity 300 >"$TMP/store" 2>"$TMP/err" || fail "exit status $?"
grep -q "model's decisions in 3 of 3 settings" "$TMP/store" || fail "store and model disagree"

if command -v gnuplot >/dev/null 2>&1; then
  CASE="$D --plot"
  "$BK" $D --settings 20 --plot "$TMP/plot" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  for f in kbf_fig20 kbf_fig21 kbf_fig22 kbf_fig23; do
    [ -s "$TMP/plot/$f.png" ] || fail "no $f.png"
    [ -s "$TMP/plot/$f.csv" ] || fail "no $f.csv"
  done
fi

A="kbf-experiments --acsm"
expect 2 "--flows: '0' is out of range" $A --flows 0
expect 2 "--fpp: '0.1,2': item '2' is out of range" $A --fpp 0.1,2
# A tiny run: one row per p, the sBF's errors never rise as p falls here
# would be a claim about the data; only the shape is checked.
CASE="$A --csv"
"$BK" $A --flows 2000 --fpp 0.1,0.001 --csv >"$TMP/acsm" 2>"$TMP/err" || fail "exit status $?"
[ "$(grep -c '^0\.[0-9]*,sbf,' "$TMP/acsm")" -eq 2 ] || fail "not 2 sbf rows"
[ "$(grep -c '^0\.[0-9]*,kbf,' "$TMP/acsm")" -eq 2 ] || fail "not 2 kbf rows"
grep -q "^# .*2000 flows" "$TMP/acsm" || fail "no header line"
# --equal-memory: the sBF row has twice the kBF row's cells, the same bytes
# to within the kBF's value table.
CASE="$A --equal-memory"
"$BK" $A --flows 2000 --fpp 0.01 --equal-memory --csv >"$TMP/eq" 2>"$TMP/err" || fail "exit status $?"
ms=$(grep ',sbf,' "$TMP/eq" | cut -d, -f3); mk=$(grep ',kbf,' "$TMP/eq" | cut -d, -f3)
[ -n "$ms" ] && [ -n "$mk" ] && [ "$ms" -eq $((2 * mk)) ] || fail "sbf m $ms is not twice kbf m $mk"

if command -v gnuplot >/dev/null 2>&1; then
  CASE="$A --plot"
  "$BK" $A --flows 2000 --fpp 0.1,0.01 --plot "$TMP/aplot" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  for f in kbf_fig24 kbf_fig25; do [ -s "$TMP/aplot/$f.png" ] || fail "no $f.png"; done
fi

finish "all kbf application command checks passed"
