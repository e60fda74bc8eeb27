#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit sim clocks` on small executions (a few seconds in all): the
# table's and the CSV's shape, recall 1 and no false negative on every
# topology, a run reproducible from its seed, a sweep's rows, --table,
# usage errors (exit 2), --plot's PNGs when gnuplot is installed and its
# refusal (exit 1) when it is not on PATH.
# Usage: test_cli_sim_clocks.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
SMALL="--processes 48 --events-per-process 40 --sample-events 300 --pairs 5000 --slice 200 --pr-pairs 300"

for topo in complete ring random; do
  CASE="csv, topology $topo"
  "$BK" sim clocks $SMALL --topology $topo --m 64 --k 3 --csv >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
  head -1 "$TMP/out" | grep -q '^set,p,m,k,events,pairs,tp,fp,tn,fn,accuracy,precision,recall,fpr,' || fail "header: $(head -1 "$TMP/out")"
  [ "$(wc -l <"$TMP/out")" -eq 3 ] || fail "want a header and 2 rows"
  # fn (column 10) is 0 and recall (column 13) is 1 on both rows; every
  # sampled pair is counted once.
  awk -F, 'NR > 1 && ($10 != 0 || $13 != "1.000000") { bad = 1 } END { exit bad }' "$TMP/out" || fail "a false negative: $(cat "$TMP/out")"
  awk -F, 'NR == 2 && $7 + $8 + $9 + $10 != 5000 { bad = 1 } END { exit bad }' "$TMP/out" || fail "sampled counts do not add up to 5000"
  awk -F, 'NR == 3 && $6 != 200 * 199 { bad = 1 } END { exit bad }' "$TMP/out" || fail "slice is not all 200 * 199 ordered pairs"
done

CASE="few counters make false positives"
"$BK" sim clocks $SMALL --m 8 --k 2 --csv >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
awk -F, 'NR == 2 && $8 == 0 { bad = 1 } END { exit bad }' "$TMP/out" || fail "no false positive with 8 counters"

CASE="same seed, same output"
"$BK" sim clocks $SMALL --m 64 --k 3 --seed 9 >"$TMP/a" 2>"$TMP/err" || fail "exit status $?"
"$BK" sim clocks $SMALL --m 64 --k 3 --seed 9 >"$TMP/b" 2>"$TMP/err" || fail "exit status $?"
cmp -s "$TMP/a" "$TMP/b" || fail "two runs differ"
grep -q '^by distance' "$TMP/a" || fail "no distance table"

CASE="sweep over m"
"$BK" sim clocks $SMALL --k 3 --sweep-m 16,64,256 >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
[ "$(grep -c '^sampled,' "$TMP/out")" -eq 3 ] || fail "want 3 sampled rows"
[ "$(grep -c '^slice,' "$TMP/out")" -eq 3 ] || fail "want 3 slice rows"

CASE="--table"
"$BK" sim clocks --table >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
grep -q '^p,events,target_fpr,window,m,k,bloom_bytes,vector_bytes$' "$TMP/out" || fail "header"
grep -q '^1024,1,0.01,1024,9824,7,' "$TMP/out" || fail "p = 1024 row: $(grep '^1024,1,0.01' "$TMP/out")"

for bad in "--internal 0.7 --send 0.5" "--delay-min 3 --delay-max 1" \
           "--counter-bits 12" "--processes 1" "--sweep-m 8 --sweep-k 2" \
           "--topology star" "--sweep-m 64,96.5"; do
  CASE="usage error: $bad"
  "$BK" sim clocks $bad >"$TMP/out" 2>"$TMP/err"
  st=$?
  [ $st -eq 2 ] || fail "exit status $st, want 2"
  grep -q 'bloomkit sim clocks' "$TMP/err" || fail "message does not name the command"
done

if command -v gnuplot >/dev/null 2>&1; then
  CASE="--plot"
  "$BK" sim clocks $SMALL --m 32 --k 3 --plot "$TMP/fig" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  "$BK" sim clocks $SMALL --k 3 --sweep-m 16,64 --plot "$TMP/fig" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  for f in clocks_distance clocks_sweep_m; do
    [ -s "$TMP/fig/$f.png" ] || fail "no $f.png"
    [ -s "$TMP/fig/$f.csv" ] || fail "no $f.csv"
  done
fi

CASE="--plot without gnuplot"
mkdir -p "$TMP/nogp"
PATH="$TMP/nogp" "$BK" sim clocks $SMALL --plot "$TMP/x" >/dev/null 2>"$TMP/err"
st=$?
[ "$st" -eq 1 ] || fail "exit status $st, want 1"
grep -q "needs gnuplot" "$TMP/err" || fail "no message"
[ -e "$TMP/x" ] && fail "made the directory anyway"

finish "sim clocks: all cases passed"
