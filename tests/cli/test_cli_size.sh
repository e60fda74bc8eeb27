#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit size`: bad options exit 2 naming the option; the table and the
# CSV have one row per structure; the bytes are what a structure of that
# configuration holds (the Bloom, counting, scalable and recycling rows
# equal `bloomkit compare`'s memory for the same keys and target, and the
# standard Bloom row is within 1 % of the textbook m / 8); each row meets
# its target at capacity; --overfill prints the three loads per structure,
# and the standard Bloom filter's measured rate sits within its stated
# tolerance of the formula.
# Usage: test_cli_size.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
expect 2 "--fpp: '0' is out of range" size --fpp 0
expect 2 "--fpp: '1' is out of range" size --fpp 1
expect 2 "--fpp: '1.5' is out of range" size --fpp 1.5
expect 2 "--fpp: 'x'" size --fpp x
expect 2 "--capacity: '0' is out of range" size --capacity 0
expect 2 "--capacity: '100000000000' is out of range" size --capacity 100000000000
expect 2 "--capacity: '-5'" size --capacity -5
expect 2 "--probes: '10' is out of range" size --overfill --probes 10
expect 2 "unknown option '--bogus'" size --bogus
CASE="size --help"
"$BK" size --help >"$TMP/help" 2>"$TMP/err" || fail "exit status $?"
grep -q -- "--overfill" "$TMP/help" || fail "help lacks --overfill"

NAMES="bloom standard|bloom blocked|bloom split-block|cbf|scbf|fbf|fbf adaptive|rbf|idem|kbf|bloomclock"
N=20000
CASE="size --csv"
"$BK" size --capacity $N --fpp 0.01 --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
head -n 1 "$TMP/csv" | grep -qx "structure,capacity,target_fpp,bytes,bits_per_key,k,fpp" || fail "header"
[ "$(wc -l <"$TMP/csv")" -eq 12 ] || fail "$(wc -l <"$TMP/csv") lines, expected 12"
IFS='|'
for name in $NAMES; do
  grep -q "^$name,$N,0.01,[0-9]" "$TMP/csv" || fail "no sized row for $name"
done
unset IFS
# bits_per_key is bytes * 8 / capacity; every row meets the target.
awk -F, -v n=$N 'NR > 1 {
  if (($5 - $4 * 8 / n) > 0.001 || ($4 * 8 / n - $5) > 0.001) { print "bits/key of " $1; bad = 1 }
  if ($7 > 0.01 * 1.001 || $7 <= 0) { print "fpp of " $1 ": " $7; bad = 1 }
  if ($6 < 1) { print "k of " $1; bad = 1 }
} END { exit bad }' "$TMP/csv" >"$TMP/bad" || fail "$(cat "$TMP/bad")"
# The textbook m = n ln(1/p) / ln(2)^2 bits: at 10^6 keys the standard
# row's bytes are within 1 % of m / 8 (a few KiB of bookkeeping on top).
"$BK" size --capacity 1000000 --fpp 0.01 --csv >"$TMP/big" 2>"$TMP/err" || fail "exit status $?"
awk -F, -v n=1000000 '$1 == "bloom standard" {
  m = n * log(100) / (log(2) ^ 2) / 8
  d = ($4 - m) / m
  exit !(d > -0.01 && d < 0.01)
}' "$TMP/big" || fail "bloom standard bytes far from n ln(1/p) / ln(2)^2 / 8"

# The same structures through `bloomkit compare`: same bytes.
CASE="size against compare"
"$BK" compare --keys $N --lookups 1000 --fpp 0.01 \
  --only bloom-standard,bloom-blocked,bloom-split,cbf-standard,scbf,rbf \
  --csv >"$TMP/cmp" 2>"$TMP/err" || fail "compare: exit status $?"
for pair in "bloom standard:bloom standard" "bloom blocked:bloom blocked" \
  "bloom split-block:bloom split-block" "cbf:cbf 4-bit standard" "scbf:scbf 4-bit (in memory)" \
  "rbf:rbf"; do
  mine=${pair%%:*}
  theirs=${pair#*:}
  want=$(awk -F, -v s="$theirs" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "memory_bytes") c = i }
    NR > 1 && $1 == s { print $c }' "$TMP/cmp")
  got=$(awk -F, -v s="$mine" '$1 == s { print $4 }' "$TMP/csv")
  [ -n "$want" ] && [ "$want" = "$got" ] || fail "$mine: size says '$got' bytes, compare '$want'"
done

CASE="size (table)"
"$BK" size --capacity $N >"$TMP/table" 2>"$TMP/err" || fail "exit status $?"
[ "$(wc -l <"$TMP/table")" -eq 13 ] || fail "$(wc -l <"$TMP/table") lines, expected 13"
grep -q "^bloomclock  *[0-9]" "$TMP/table" || fail "no bloomclock row"

# A target some structures refuse (the scalable filter takes at most 0.5):
# their row says so, the others are sized.
CASE="size --fpp 0.7"
"$BK" size --capacity 1000 --fpp 0.7 >"$TMP/table" 2>"$TMP/err" || fail "exit status $?"
grep -q "^scbf .*refuses" "$TMP/table" || fail "scbf row does not say it refuses"
grep -q "^bloom standard  *[0-9]" "$TMP/table" || fail "no bloom standard row"

CASE="size --overfill"
"$BK" size --overfill --capacity 2000 --probes 20000 --csv >"$TMP/over" 2>"$TMP/err" || fail "exit status $?"
head -n 1 "$TMP/over" | grep -qx "structure,load,measured_fpp,tolerance_95,formula_fpp,fn" || fail "header"
[ "$(wc -l <"$TMP/over")" -eq 31 ] || fail "$(wc -l <"$TMP/over") lines, expected 31"
IFS='|'
for name in $NAMES; do
  [ "$name" = bloomclock ] && continue
  for load in 1 2 4; do
    grep -q "^$name,$load,[0-9]" "$TMP/over" || fail "no $load x row for $name"
  done
done
unset IFS
# The standard filter: measured within twice its 95 % half-width of the
# formula, and 4x worse than 1x; the scalable filter stays under target.
awk -F, '$1 == "bloom standard" { d = $3 - $5; if (d < 0) d = -d; if (d > 2 * $4 + 1e-4) { print "load " $2 ": " $3 " vs " $5; bad = 1 } }
  $1 == "bloom standard" && $2 == 1 { one = $3 } $1 == "bloom standard" && $2 == 4 { four = $3 }
  $1 == "scbf" && $3 > 0.02 { print "scbf at " $2 "x: " $3; bad = 1 }
  $1 == "bloom standard" && $6 != 0 { print "false negatives"; bad = 1 }
  END { if (!(four > 10 * one)) { print "4x not worse"; bad = 1 }; exit bad }' "$TMP/over" >"$TMP/bad" || fail "$(cat "$TMP/bad")"

finish "size: ok"
