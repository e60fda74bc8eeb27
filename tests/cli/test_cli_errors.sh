#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The built `bloomkit` command with bad arguments: each must exit with status
# 2 and one message on stderr naming the option and the value given (never
# C source text or a bloomkit function name), nothing on stdout. Then
# --help: status 0, every option listed. Then two tiny valid runs.
# Usage: test_cli_errors.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"

F=fbf-experiments
S="sim counters"
# Unknown options, stray arguments, flags given a value.
expect 2 "unknown option '--bogus'" $F --bogus
expect 2 "try 'bloomkit fbf-experiments --help'" $F --bogus
expect 2 "unknown option '--probe' (did you mean --probes?)" $F --probe 5
expect 2 "unknown option '--sizerate' (did you mean --size-rate?)" $S --sizerate 5
expect 2 "unexpected argument 'extra'" $F extra
expect 2 "--csv takes no value, got '1'" $S --csv=1
# Missing values.
expect 2 "--probes needs a value: an integer from 1 to 100000000" $F --probes
expect 2 "--probes needs a value" $F --probes --seed 3
expect 2 "--load needs a value: one of steady, rising or bursty" $S --load
# Out of range, with the range; counts have an upper bound.
expect 2 "--probes: '18446744073709551615' is out of range; expected an integer from 1 to 100000000" \
  $F --probes 18446744073709551615
expect 2 "--series-probes: '100000001' is out of range" $F --series-probes 100000001
expect 2 "--probes: '0' is out of range" $F --probes 0
expect 2 "--ops: '100000001' is out of range; expected an integer from 1 to 100000000" $S --ops 100000001
expect 2 "--sample-ms: '1000000001' is out of range" $S --sample-ms 1000000001
expect 2 "--burst-ms: '1000000001' is out of range" $S --burst-ms 1000000001
expect 2 "--rate: '1e400' is out of range; expected a number from 0.001 to 1e9" $S --rate 1e400
expect 2 "--target-fpp: '1' is out of range; expected a number above 0 and below 1" $S --target-fpp 1
# Not numbers, trailing garbage, signs.
expect 2 "--probes: '12x' is not an integer" $F --probes 12x
expect 2 "--probes: '' is empty" $F --probes ""
expect 2 "--probes: '-1' is out of range" $F --probes -1
expect 2 "--seed: '-1' is out of range; expected an integer from 0 to 18446744073709551615" $F --seed=-1
expect 2 "--rate: 'nan' is not a number" $S --rate nan
expect 2 "--rate: '5x' is not a number" $S --rate 5x
expect 2 "--only: '6.1,6.7': item '6.7' is not one of the choices" $F --only 6.1,6.7
expect 2 "--strategies: 'RBF,XYZ': item 'XYZ' is not one of the choices" $S --strategies RBF,XYZ
expect 2 "--sweep-retry: '0.1,2': item '2' is out of range" $S --sweep-retry 0.1,2
expect 2 "--retry-delay: 'uniform:5' is not valid; expected fixed:MS" $S --retry-delay uniform:5
# Combinations: checked up front, in the options' terms.
expect 2 "--size-rate 1e+09" $S --size-rate 1e9 --timeout 1000000000
expect 2 "--timeout 1000000000" $S --size-rate 1e9 --timeout 1000000000
expect 2 "more than 2^40" $S --size-rate 1e9 --timeout 1000000000
expect 2 "--delta: '0' is not allowed" $S --delta 0
expect 2 "--fbf-m and --fbf-k go together" $S --fbf-m 800
expect 2 "--burst-ms 5000 exceeds --burst-every 4000" $S --load bursty --burst-ms 5000 --burst-every 4000
expect 2 "--max-filters 4 is below --n-past 3 + 2" $S --max-filters 4 --n-past 3
# Dispatchers.
expect 2 "unknown subcommand 'frobnicate'" frobnicate
expect 2 "unknown simulation 'counterz'" sim counterz

# --help: status 0 on stdout, and every option listed with its default.
help_lists() {
  CASE="$1 --help"
  # shellcheck disable=SC2086
  "$BK" $1 --help >"$TMP/out" 2>"$TMP/err"
  [ $? -eq 0 ] || fail "exit status not 0"
  [ -s "$TMP/err" ] && fail "wrote to stderr"
  shift
  for opt in "$@"; do
    grep -qE -- "^  $opt( |\$)" "$TMP/out" || fail "--help does not list $opt"
  done
}
help_lists "$F" --seed --out --only --probes --series-probes --estimates "-h, --help"
help_lists "$S" --ops --clients --keys --delta --rate --load --rise-factor \
  --burst-factor --burst-ms --burst-every --ack-loss --retry-delay --timeout \
  --reorder-share --reorder-depth --strategies --n-past --target-fpp \
  --size-rate --fbf-m --fbf-k --max-filters --window --csv --sample-ms \
  --seed --sweep-retry "-h, --help"
grep -qE "^  --ops N +original increments \(default 100000; an integer from 1$" "$TMP/out" ||
  fail "--help lacks --ops' default and range"
CASE="--help"
"$BK" --help >"$TMP/out" 2>&1 || fail "exit status not 0"
grep -qE "^  fbf-experiments " "$TMP/out" || fail "does not list fbf-experiments"

# Valid options still run.
CASE="$S --ops 200 --csv"
"$BK" $S --ops 200 --csv >"$TMP/out" 2>"$TMP/err" || fail "exit status not 0"
grep -q '^FBF_ADAPTIVE,200,200,' "$TMP/out" || fail "no FBF_ADAPTIVE row"
grep -q '^HYBRID,200,200,' "$TMP/out" || fail "no HYBRID row"
CASE="$F --only 6.3 --probes 20 --seed=3"
"$BK" $F --only 6.3 --probes 20 --seed=3 >"$TMP/out" 2>"$TMP/err" ||
  fail "exit status not 0"
grep -q '^30000,' "$TMP/out" || fail "no m=30000 row"

# `bloomkit cbf`: usage errors (2), run-time failures (1), a working session.
C="cbf"
expect 2 "unknown action 'bogus'" $C bogus
expect 2 "--capacity is required" $C create "$TMP/c.scbf"
expect 2 "expected one FILE, got 0 arguments" $C create --capacity 10
expect 2 "--capacity: '0' is out of range" $C create "$TMP/c.scbf" --capacity 0
expect 2 "--error: '0.7' is out of range" $C create "$TMP/c.scbf" --capacity 9 --error 0.7
expect 2 "--counter-bits: '5' is not 4, 8, 16 or 32" $C create "$TMP/c.scbf" --capacity 9 --counter-bits 5
expect 2 "--tightening: '1' is out of range" $C create "$TMP/c.scbf" --capacity 9 --tightening 1
expect 1 "larger than a filter can be" $C create "$TMP/big.scbf" --capacity 1099511627776 --error 0.000001
CASE="cbf create refused leaves no file"
[ -e "$TMP/big.scbf" ] && fail "file left behind"
printf 'x\n' >"$TMP/keep"
expect 1 "already exists" $C create "$TMP/keep" --capacity 10
CASE="cbf create keeps a file that was there"
[ "$(cat "$TMP/keep")" = x ] || fail "file changed"
printf '1x k\n' >"$TMP/in"
CASE="cbf add id not a number"
"$BK" cbf add "$TMP/none.scbf" <"$TMP/in" >/dev/null 2>&1 && fail "exit 0"
expect 2 "keys given as arguments need --id" $C add "$TMP/c.scbf" k1
expect 2 "--id is for keys given as arguments" $C add "$TMP/c.scbf" --id 3
expect 2 "--id: 'x' is not an integer" $C add "$TMP/c.scbf" k --id x
expect 2 "FILE is missing" $C check
expect 1 "no such file" $C info "$TMP/none.scbf"
printf 'not a filter' >"$TMP/junk"
expect 1 "not a bloomkit cbf file, or damaged" $C check "$TMP/junk" k
CASE="cbf session"
"$BK" cbf create "$TMP/c.scbf" --capacity 100 --error 0.01 2>"$TMP/err" || fail "create"
expect 1 "already exists" $C create "$TMP/c.scbf" --capacity 100
"$BK" cbf add "$TMP/c.scbf" alpha beta --id 1 2>"$TMP/err" || fail "add"
printf '2 gamma delta\n3 eps\n' | "$BK" cbf add "$TMP/c.scbf" --flush 2>"$TMP/err" || fail "add stdin"
"$BK" cbf remove "$TMP/c.scbf" beta --id 1 2>"$TMP/err" || fail "remove"
expect 1 "'beta' (id 1) is not there" $C remove "$TMP/c.scbf" beta --id 1
printf '9 x\n' | "$BK" cbf add "$TMP/c.scbf" 2>/dev/null
printf 'nope x\n' >"$TMP/in"
CASE="cbf add bad line"
"$BK" cbf add "$TMP/c.scbf" <"$TMP/in" >/dev/null 2>"$TMP/err" && fail "exit 0"
grep -q 'stdin line 1: expected "ID KEY"' "$TMP/err" || fail "no line message"
CASE="cbf check"
# beta is absent: exit 1, as grep (test_cli_cbf.sh: 0 when all present)
printf 'alpha\ngamma delta\nbeta\n' | "$BK" cbf check "$TMP/c.scbf" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] || fail "check: not exit 1 with beta absent"
grep -q "^present	alpha$" "$TMP/out" || fail "alpha"
grep -q "^present	gamma delta$" "$TMP/out" || fail "gamma delta"
grep -q "^absent	beta$" "$TMP/out" || fail "beta"
CASE="cbf info"
"$BK" cbf flush "$TMP/c.scbf" 2>"$TMP/err" || fail "flush"
"$BK" cbf info "$TMP/c.scbf" >"$TMP/out" 2>"$TMP/err" || fail "info"
grep -q "^keys	4$" "$TMP/out" || fail "keys"
grep -q "^mem_seqnum	7$" "$TMP/out" || fail "mem_seqnum"
grep -q "^disk_seqnum	7$" "$TMP/out" || fail "disk_seqnum"

finish "all bloomkit command-line checks passed"
