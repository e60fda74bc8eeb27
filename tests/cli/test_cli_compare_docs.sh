#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The numbers the docs show for `bloomkit compare` are what it prints
# today. docs/figures/compare.csv is the CSV of the documented run
# (`bloomkit compare --keys 1000000 --plot docs/figures`, seed 20261125,
# the default); this reruns that workload with --csv and checks the
# columns that do not depend on the machine (bits_per_key, target_fpp,
# fpr, false_negatives, memory_bytes: the same seed gives the same keys,
# sizes and hashes) against the committed file; the README's sample table
# must show those rows as the command formats them, and every decimal
# number in docs/figures.md's compare section must be one of those values
# as written (rounded to the digits shown). Timings vary by machine and
# are never compared. The libbloom row is checked only where libbloom is
# built in. When this fails after a change that moves these numbers,
# regenerate the figure with the command above and paste its table into
# the README (docs/figures.md says so too).
# Usage: test_cli_compare_docs.sh path/to/bloomkit path/to/source
. "$(dirname "$0")/lib.sh"
SRC=${2:?usage: $0 path/to/bloomkit path/to/source}
DOC_CSV="$SRC/docs/figures/compare.csv"
README="$SRC/README.md"
FIGURES="$SRC/docs/figures.md"

# structure,bits_per_key,target_fpp,fpr,false_negatives,memory_bytes
fixed() { awk -F, 'NR > 1 { print $1 "," $2 "," $3 "," $4 "," $5 "," $12 }' "$1"; }

CASE="the documented run"
"$BK" compare --keys 1000000 --csv >"$TMP/run.csv" 2>"$TMP/err" || fail "exit status $?"
fixed "$DOC_CSV" >"$TMP/doc"
fixed "$TMP/run.csv" >"$TMP/now"
[ -s "$TMP/doc" ] || fail "no rows in $DOC_CSV"
if ! grep -q '^libbloom' "$TMP/now"; then
  grep -v '^libbloom' "$TMP/doc" >"$TMP/doc2" && mv "$TMP/doc2" "$TMP/doc"
fi
if ! cmp -s "$TMP/doc" "$TMP/now"; then
  fail "docs/figures/compare.csv no longer matches what compare prints (-: committed, +: now):
$(diff -u "$TMP/doc" "$TMP/now" | sed -n '3,$p')"
fi

# near X V: the number X, as written (d decimals), is V rounded to them;
# V is itself rounded in the CSV, hence a little more than half a unit.
NEAR='function near(x, v,  d) { d = index(x, ".") ? length(x) - index(x, ".") : 0
  return (x - v <= 0.6 * 10 ^ -d) && (v - x <= 0.6 * 10 ^ -d) }'

CASE="README's sample table"
# the rows of the table under the documented title line, as "name|rest"
awk '/^# 1000000 keys added/ { t = 1; next } t && /^```/ { exit }
     t && !/^structure / { name = substr($0, 1, 28); sub(/ +$/, "", name)
                           print name "|" substr($0, 29) }' "$README" >"$TMP/table"
[ -s "$TMP/table" ] || fail "no table under '# 1000000 keys added' in README.md"
awk -F, -v table="$TMP/table" "$NEAR"'
  BEGIN { while ((getline line < table) > 0) {
            split(line, p, "|"); rows[p[1]] = p[2]; n_table++ } }
  NR > 1 { n_doc++
    if (!($1 in rows)) { print "README lacks the row " $1; bad = 1; next }
    split(rows[$1], f, " ")
    # bits/key, target, fpr, fn, six timings (never compared), MiB
    if (!near(f[1], $2) || !near(f[2], $3) || !near(f[3], $4) || f[4] != $5 ||
        !near(f[11], $12 / 1048576)) {
      print "README: " $1 ": " f[1] " " f[2] " " f[3] " " f[4] " " f[11] " Mi" \
            "; compare.csv: " $2 " " $3 " " $4 " " $5 " " $12 " bytes"; bad = 1 } }
  END { if (n_table != n_doc) { print "README has " n_table " rows, compare.csv " n_doc; bad = 1 }
        exit bad }' "$DOC_CSV" >"$TMP/why" || fail "$(cat "$TMP/why")"
title=$(awk '/^# 1000000 keys added/ { print; exit }' "$README")
case $title in
  "# 1000000 keys added, 1000000 lookups (499788 absent), 1 thread(s), seed 20261125; ns per key") ;;
  *) fail "README's title line: $title" ;;
esac

CASE="docs/figures.md's compare section"
awk '/^## bloomkit compare/ { s = 1; next } s && /^## / { exit } s' "$FIGURES" >"$TMP/section"
[ -s "$TMP/section" ] || fail "no compare section"
# Every number with a decimal point (not inside a file name, nor a
# section number after a .md reference) must be a committed value
# (bits/key, fpp, MiB) rounded to the digits shown.
sed -E 's/\.md,? [0-9]+(\.[0-9]+)*//g' "$TMP/section" |
  grep -oE '(^|[^0-9A-Za-z._/-])[0-9]+\.[0-9]+' | grep -oE '[0-9]+\.[0-9]+' >"$TMP/numbers"
[ -s "$TMP/numbers" ] || fail "the section quotes no measured number"
while IFS= read -r x; do
  awk -F, -v x="$x" "$NEAR"'
    NR > 1 { n = split($2 " " $3 " " $4 " " ($12 / 1048576), v, " ")
             for (i = 1; i <= n; i++) if (near(x, v[i])) found = 1 }
    END { exit !found }' "$DOC_CSV" || fail "$x is not a value of compare.csv (bits/key, fpp, MiB)"
done <"$TMP/numbers"

finish "the compare docs match what compare prints"
