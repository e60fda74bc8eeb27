#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit compare`: bad options exit 2 naming the option; the table, CSV
# and JSON have one row per structure with the documented columns; every
# structure finds every added key (fn 0) and keeps near its target (a
# standard Bloom filter at 1 % over 10,000 absent lookups: sd 0.1 %, so
# under 2 % is ten standard deviations of slack; the blocked layouts and
# the FBF are sized differently but also stay under 2 %); a keys file with
# repeated lines and CRLF endings is read as its distinct lines, and
# stderr says how many are added and how many are the absent keys; --plot
# writes compare.csv, .gp and .png when gnuplot is there, names each on
# stderr, and draws ns on a log axis with each row's bits/key and fpp. bits_per_key is memory * 8 /
# keys, so it includes the structure's fixed overhead (a few KiB).
# Usage: test_cli_compare.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
expect 2 "--keys: '0' is out of range" compare --keys 0
expect 2 "--present: '1.5' is out of range" compare --present 1.5
expect 2 "--fpp: '0.5' is out of range" compare --fpp 0.5
expect 2 "--key-len: '4' is out of range" compare --key-len 4
expect 2 "--threads: '0' is out of range" compare --threads 0
expect 2 "--only: 'bloom': item 'bloom' is not one of the choices" compare --only bloom
expect 2 "--csv and --json: pick one" compare --csv --json
expect 1 "no-such-file" compare --keys-file "$TMP/no-such-file"
printf 'a\nb\n' >"$TMP/tiny"
expect 1 "distinct non-empty lines" compare --keys-file "$TMP/tiny" --keys 5

N=20000
CASE="compare --csv"
"$BK" compare --keys $N --lookups 20000 --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
head -n 1 "$TMP/csv" | grep -qx "structure,bits_per_key,target_fpp,fpr,false_negatives,add_ns,add_batch_ns,remove_ns,remove_batch_ns,contains_ns,contains_batch_ns,memory_bytes,build_ms" || fail "header"
rows=$(($(wc -l <"$TMP/csv") - 1))
[ "$rows" -ge 12 ] || fail "$rows rows, expected every structure (12, 13 with libbloom)"
for name in "bloom split-block" "bloom standard 1-writer" "bloom blocked 1-writer" "bloom split-block 1-writer"; do
  grep -q "^$name," "$TMP/csv" || fail "no row $name"
done
awk -F, 'NR > 1 && NF != 13 { bad = 1 } END { exit bad }' "$TMP/csv" || fail "a row without 13 fields"
awk -F, 'NR > 1 && $5 != 0 { print $1; bad = 1 } END { exit bad }' "$TMP/csv" >"$TMP/err" || fail "false negatives in: $(cat "$TMP/err")"
awk -F, 'NR > 1 && !($4 < 0.02) { print $1, $4; bad = 1 } END { exit bad }' "$TMP/csv" >"$TMP/err" || fail "fpr over 2 %: $(cat "$TMP/err")"
# every row has add and contains times; bloom rows have batch adds and no remove
awk -F, 'NR > 1 && ($6 == "" || $10 == "") { bad = 1 } END { exit bad }' "$TMP/csv" || fail "a row without add or contains time"
grep -q "^bloom standard,.*,,," "$TMP/csv" || fail "bloom standard should have no remove"
grep "^cbf 4-bit standard," "$TMP/csv" | awk -F, '$8 == "" || $9 == "" { exit 1 }' || fail "cbf has remove and batch remove"

CASE="compare --json"
"$BK" compare --keys 5000 --only bloom-blocked,cbf-standard,fbf --json >"$TMP/json" 2>"$TMP/err" || fail "exit status $?"
[ "$(grep -c '"structure":' "$TMP/json")" -eq 3 ] || fail "expected 3 rows"
grep -q '"keys": 5000' "$TMP/json" || fail "keys"
grep -q '"remove_ns": null' "$TMP/json" || fail "fbf remove is null"
if command -v python3 >/dev/null 2>&1; then
  python3 -m json.tool "$TMP/json" >/dev/null 2>"$TMP/err" || fail "not valid JSON"
fi

CASE="compare table"
"$BK" compare --keys 5000 --only rbf,scbf --threads 2 >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
grep -q "^# 5000 keys added, 5000 lookups" "$TMP/out" || fail "title line"
grep -q "^rbf " "$TMP/out" || fail "rbf row"
grep -q "^scbf 4-bit (in memory) " "$TMP/out" || fail "scbf row"

CASE="compare --keys-file"
i=0
: >"$TMP/keys"
while [ $i -lt 3000 ]; do printf 'user:%d\r\nuser:%d\n' $i $i >>"$TMP/keys"; i=$((i + 1)); done
"$BK" compare --keys-file "$TMP/keys" --only bloom-standard >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
grep -q "^# 1500 keys added" "$TMP/out" || fail "3000 distinct lines: half added"
# which lines are absent keys is said on stderr, not left to be guessed
grep -qF "# keys-file $TMP/keys: 3000 distinct lines, the first 1500 added (present keys), the other 1500 the absent keys (half each without --keys)" "$TMP/err" || fail "no keys-file line on stderr"
"$BK" compare --keys-file "$TMP/keys" --keys 2000 --only bloom-standard >"$TMP/out" 2>"$TMP/err" || fail "exit status $?"
grep -qF "# keys-file $TMP/keys: 3000 distinct lines, the first 2000 added (present keys), the other 1000 the absent keys" "$TMP/err" || fail "--keys 2000: no keys-file line on stderr"
grep -q "half each" "$TMP/err" && fail "--keys given: the line says half each"
grep -q "^# 2000 keys added" "$TMP/out" || fail "--keys 2000 with a keys file"

CASE="compare --bits-per-key"
"$BK" compare --keys 20000 --bits-per-key 10 --only bloom-standard,cbf-standard --csv >"$TMP/csv" 2>"$TMP/err" || fail "exit status $?"
grep "^bloom standard," "$TMP/csv" | awk -F, '$2 < 10 || $2 > 12 || $3 < 0.0081 || $3 > 0.0083 { exit 1 }' || fail "bloom at 10 bits/key: $(grep '^bloom standard,' "$TMP/csv")"

if command -v gnuplot >/dev/null 2>&1; then
  CASE="compare --plot"
  "$BK" compare --keys 3000 --only bloom-standard,cbf-standard --plot "$TMP/p" >/dev/null 2>"$TMP/err" || fail "exit status $?"
  is_png "$TMP/p/compare.png" || fail "no compare.png"
  # every file written is named on stderr
  for ext in csv gp png; do
    [ -s "$TMP/p/compare.$ext" ] || fail "no compare.$ext"
    grep -qxF "bloomkit compare: wrote $TMP/p/compare.$ext" "$TMP/err" || fail "stderr does not name compare.$ext"
  done
  # a log scale (the kBF's bars would squash the Bloom rows) and each
  # row's bits/key and measured fpp in its label
  grep -qx "set logscale y" "$TMP/p/compare.gp" || fail "y axis not logarithmic"
  grep -qF "bits/key, fpp" "$TMP/p/compare.gp" || fail "labels lack bits/key and fpp"
fi

finish "all compare checks passed"
