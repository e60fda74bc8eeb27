#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit kbf-experiments --memcached` at a tiny scale against a real memcached:
# the run completes with every query answered right, and every server it
# started is gone afterwards: after a normal run, after SIGINT in the
# middle of a run, and when the server cannot be started. Skipped (exit
# 77) when memcached is not installed or the command was built without
# libmemcached.
# Usage: test_kbf_memcached.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
command -v memcached >/dev/null 2>&1 || { echo "memcached not installed: skipped"; exit 77; }
# Every "# memcached pid N" the run reported must be gone.
servers_gone() {
  pids=$(sed -n 's/^# memcached pid \([0-9]*\) .*/\1/p' "$ERR")
  [ -n "$pids" ] || { fail "no server was reported"; return; }
  for p in $pids; do
    if kill -0 "$p" 2>/dev/null; then
      fail "memcached $p still running"
      kill -9 "$p" 2>/dev/null
    fi
  done
}

CASE="kbf-experiments --memcached (tiny)"
PLOT=
command -v gnuplot >/dev/null 2>&1 && PLOT="--plot $TMP/plot"
# shellcheck disable=SC2086
"$BK" kbf-experiments --memcached --pairs 500 --limits 16 --csv $PLOT >"$TMP/out" 2>"$TMP/err"
st=$?
if grep -q "built without libmemcached" "$TMP/err"; then
  echo "built without libmemcached: skipped"
  exit 77
fi
[ "$st" -eq 0 ] || fail "exit status $st"
servers_gone
[ "$(grep -c '^# memcached pid' "$TMP/err")" -eq 3 ] || fail "expected 3 servers (1by1, pipelined, fill)"
grep -q '^500,memcached-1by1,' "$TMP/out" || fail "no 1by1 row"
grep -q '^500,memcached-pipelined,' "$TMP/out" || fail "no pipelined row"
# wrong answers (last column of the timing rows) must be 0 for memcached
awk -F, '$2 ~ /^memcached/ && $NF != 0 { bad = 1 } END { exit bad }' "$TMP/out" || fail "memcached answered wrongly"
# The kBF row: sized for 500 pairs at p = 0.001 (rho <= 1), a stored key
# fails to decode with probability well under 1e-3 (kBF paper Fig. 5), so
# more than 5 wrong answers of 500 (4 sd above the mean of at most 0.5)
# means a bug, not bad luck.
kbf=$(grep '^500,kbf,' "$TMP/out")
[ -n "$kbf" ] || fail "no kbf row"
[ "$(echo "$kbf" | cut -d, -f6)" -le 5 ] || fail "kbf answered wrongly: $kbf"
# Fig. 16: a 16 MiB server holds some pairs, its bytes within the limit
row=$(grep '^16,' "$TMP/out")
[ -n "$row" ] || fail "no 16 MiB row"
pairs=$(echo "$row" | cut -d, -f2); bytes=$(echo "$row" | cut -d, -f3)
[ "$pairs" -gt 1000 ] || fail "only $pairs pairs stored"
[ "$bytes" -le 16777216 ] || fail "server bytes $bytes above the limit"
kbf_total=$(echo "$row" | cut -d, -f8)
[ "$kbf_total" -gt 0 ] || fail "no kBF memory"
if [ -n "$PLOT" ]; then
  for f in kbf_fig15 kbf_fig16; do [ -s "$TMP/plot/$f.png" ] || fail "no $f.png"; done
fi

# A run with a server up, stopped by a signal: every server it reported
# must be gone. Each case writes to files of its own (a fresh directory),
# so the wait below can only see the line that this run wrote: a file
# shared with an earlier case still holds that case's line until the
# background child opens it, and the signal would then reach a run that has
# not started its server yet.
signal_case() { # signal_case NAME SIGNAL
  CASE=$1
  dir="$TMP/$2"
  mkdir "$dir" || { fail "cannot make $dir"; return; }
  "$BK" kbf-experiments --memcached --pairs 300000 --no-memory \
    >"$dir/out" 2>"$dir/err" &
  bk=$!
  i=0
  while ! grep -q "^# memcached pid" "$dir/err" 2>/dev/null && [ $i -lt 600 ]; do
    if ! kill -0 "$bk" 2>/dev/null; then break; fi
    sleep 0.1; i=$((i + 1))
  done
  ERR="$dir/err"
  if ! grep -q "^# memcached pid" "$dir/err"; then
    kill -KILL "$bk" 2>/dev/null
    wait "$bk"
    fail "the run reported no server within 60 s"
    return
  fi
  kill "-$2" "$bk" || fail "the run ended before the signal"
  wait "$bk"
  st=$?
  [ "$st" -ne 0 ] || fail "exit status 0 after SIG$2"
  servers_gone
}
signal_case "SIGINT during a run" INT
signal_case "SIGTERM during a run" TERM

CASE="no such memcached"
ERR="$TMP/err"
"$BK" kbf-experiments --memcached --pairs 10 --memcached-path "$TMP/none" >"$TMP/out" 2>"$TMP/err"
st=$?
[ "$st" -eq 1 ] || fail "exit status $st, expected 1"
grep -q "cannot start" "$TMP/err" || fail "no message"

finish "all memcached checks passed"
