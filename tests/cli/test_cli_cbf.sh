#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit cbf` and a damaged file (issue #32): counters damaged in a file
# closed cleanly (8 bytes written by dd, all zeroed, one bit flipped) are
# refused when the file is opened ("damaged", exit 1); a file a crash left
# (its clean flag clear, as the first write after open leaves it) opens
# unverified, `info` and `verify` say so, and `verify` finds the same
# damage. Also check's exit status (0 all present, 1 one absent), remove
# with an id no filter holds, and the usage lines naming FILE.
# Usage: test_cli_cbf.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"

C=cbf
F="$TMP/w.cbf"
COUNTERS=192 # 128-byte file header, 64-byte filter header

# A file of four keys, closed cleanly.
fresh() {
  rm -f "$F"
  "$BK" cbf create "$F" --capacity 100 --error 0.01 2>"$ERR" || fail "create"
  "$BK" cbf add "$F" --id 1 alice bob carol dave 2>"$ERR" || fail "add"
}
# What a crash after a write began leaves: the clean flag (offset 96) 0.
crashed() {
  printf '\000' | dd of="$F" bs=1 seek=96 conv=notrunc 2>/dev/null
}
# Byte offset of the first nonzero counter byte.
first_nonzero() {
  od -An -tu1 -v -j $COUNTERS "$F" | tr -s ' ' '\n' | grep -v '^$' |
    awk '$1 != 0 { print NR - 1 + '$COUNTERS'; exit }'
}
damage() {
  case $1 in
  dd) printf '\336\255\276\357\001\043\105\147' |
    dd of="$F" bs=1 seek=$((COUNTERS + 8)) conv=notrunc 2>/dev/null ;;
  zero)
    size=$(wc -c <"$F")
    dd if=/dev/zero of="$F" bs=1 seek=$COUNTERS count=$((size - COUNTERS)) \
      conv=notrunc 2>/dev/null
    ;;
  bit)
    off=$(first_nonzero)
    v=$(od -An -tu1 -j "$off" -N1 "$F" | tr -d ' ')
    printf "\\$(printf '%03o' $((v ^ 1)))" |
      dd of="$F" bs=1 seek="$off" conv=notrunc 2>/dev/null
    ;;
  esac
}

CASE="cbf a file closed cleanly"
fresh
"$BK" cbf info "$F" >"$TMP/out" 2>"$ERR" || fail "info"
grep -q "^counters	verified at open" "$TMP/out" || fail "info: not verified"
"$BK" cbf verify "$F" >"$TMP/out" 2>"$ERR" || fail "verify"
grep -q "^result	consistent" "$TMP/out" || fail "verify: not consistent"
grep -q "^filter 0	keys 4 k [0-9]* counter_sum [0-9]* expected [0-9]*.*: consistent$" \
  "$TMP/out" || fail "verify: no filter line"

for d in dd zero bit; do
  fresh
  damage $d
  expect 1 "not a bloomkit cbf file, or damaged" $C check "$F" alice
  expect 1 "damaged" $C info "$F"
  crashed
  CASE="cbf $d after a crash: opens unverified"
  "$BK" cbf info "$F" >"$TMP/out" 2>"$ERR" || fail "info"
  grep -q "^counters	not closed cleanly: counters unverified" "$TMP/out" ||
    fail "info does not say unverified"
  expect 1 "damaged: counters do not match the key count" $C verify "$F"
  grep -q "^filter 0	.*: INCONSISTENT$" "$TMP/out" || fail "no INCONSISTENT line"
  grep -q "^result	damaged: 1 of 1 filters inconsistent$" "$TMP/out" ||
    fail "no result line"
done

CASE="cbf a crash without damage"
fresh
crashed
"$BK" cbf check "$F" alice >"$TMP/out" 2>"$ERR" || fail "check"
grep -q "not closed cleanly: counters unverified" "$ERR" || fail "check: no note"
"$BK" cbf verify "$F" >"$TMP/out" 2>"$ERR" || fail "verify: exit $?"
grep -q "^counters	not closed cleanly" "$TMP/out" || fail "verify: not unverified"
grep -q "^result	consistent" "$TMP/out" || fail "verify: not consistent"
CASE="cbf a write and close seal it again"
"$BK" cbf add "$F" --id 2 erin 2>"$ERR" || fail "add"
"$BK" cbf info "$F" >"$TMP/out" 2>"$ERR" || fail "info"
grep -q "^counters	verified at open" "$TMP/out" || fail "not verified after close"

CASE="cbf check exit status"
"$BK" cbf check "$F" alice bob >"$TMP/out" 2>"$ERR" || fail "all present: exit $?"
"$BK" cbf check "$F" alice zed >"$TMP/out" 2>"$ERR"
[ $? -eq 1 ] || fail "one absent: not exit 1"
grep -q "^absent	zed$" "$TMP/out" || fail "zed not reported absent"
grep -q "^present	alice$" "$TMP/out" || fail "alice not reported present"

# Ids choose the filter: bob was added with id 1 to filter 0, which holds
# ids 0-2 now; no filter holds id 99.
expect 1 "not removed: no filter holds id 99 (ids so far: 0-2); the key is there: give the id it was added with" \
  $C remove "$F" --id 99 bob
expect 1 "'zed' (id 99) is not there, and no filter holds id 99" $C remove "$F" --id 99 zed
expect 1 "'zed' (id 2) is not there" $C remove "$F" --id 2 zed
CASE="cbf remove with another id of the same filter"
"$BK" cbf remove "$F" --id 2 bob 2>"$ERR" || fail "bob under id 2 (filter 0)"

CASE="cbf usage lines name FILE"
"$BK" cbf --help >"$TMP/out" 2>"$ERR" || fail "cbf --help"
grep -q "bloomkit cbf <action> FILE" "$TMP/out" || fail "cbf --help: no FILE"
for a in create add remove check info flush verify; do
  "$BK" cbf $a --help >"$TMP/out" 2>"$ERR" || fail "$a --help"
  grep -q "^usage: bloomkit cbf $a FILE" "$TMP/out" || fail "$a: usage without FILE"
  grep -q "^  -h, --help" "$TMP/out" || fail "$a: -h, --help not on a line of its own"
done

finish "cbf damage, verify, check status, remove messages: ok"
