#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `bloomkit sim counters` with the client-window strategies (issue #28):
# WINDOW and HYBRID drop no genuine update and re-apply no retry when
# clients send in order, also when they are busy enough that applied seqs
# slide out of the window while retries may still come; with clients that
# hold ops back past the window, WINDOW refuses them (TOO_OLD, counted as
# lost) and HYBRID decides them with its FBF, dismissing at most as many
# genuine updates as the FBF strategy on the same stream; a client window
# costs at most 64 bytes; the stream without reordering is the one the
# command made before the options existed; usage errors. A few seconds.
# Usage: test_cli_sim_counters.sh path/to/bloomkit
. "$(dirname "$0")/lib.sh"
S="sim counters"

# col FILE STRATEGY COLUMN: the CSV cell of STRATEGY's row under COLUMN.
col() {
  awk -F, -v s="$2" -v c="$3" '
    /^#/ { next }
    !h { for (i = 1; i <= NF; i++) at[$i] = i; h = 1; next }
    $1 == s { if (!(c in at)) exit 2; print $(at[c]); found = 1 }
    END { if (!found) exit 1 }' "$1"
}
# is FILE STRATEGY COLUMN VALUE: the cell equals VALUE.
is() {
  v=$(col "$1" "$2" "$3") || { fail "no $3 for $2"; return; }
  [ "$v" = "$4" ] || fail "$2 $3 = $v, expected $4"
}

# In-order clients, many retries (30 % of acks lost), 5 busy clients: each
# sends 200 ops/s, 600 per 3 s timeout, more than W = 256, so applied seqs
# leave the window while their retries may still come.
CASE="in order, busy clients"
"$BK" $S --ops 20000 --clients 5 --ack-loss 0.3 --csv \
  --strategies NONE,FBF,WINDOW,HYBRID >"$TMP/busy" 2>"$ERR" || fail "exit status $?"
retries=$(col "$TMP/busy" NONE retries_applied)
[ "${retries:-0}" -gt 5000 ] || fail "only ${retries:-?} retries in the stream"
for s in WINDOW HYBRID; do
  is "$TMP/busy" $s final 20000
  is "$TMP/busy" $s fp_dismissed 0
  is "$TMP/busy" $s ops_lost 0
  is "$TMP/busy" $s retries_applied 0
  is "$TMP/busy" $s too_old_new 0
done
# HYBRID caught every retry, those of slid-out seqs through its FBF.
is "$TMP/busy" HYBRID dups_dismissed "$retries"
is "$TMP/busy" HYBRID too_old 0
slid=$(col "$TMP/busy" HYBRID slid_to_filter)
[ "${slid:-0}" -gt 0 ] || fail "nothing slid into HYBRID's FBF"
# WINDOW answers TOO_OLD to retries of seqs that left the window: already
# applied, so nothing is lost, and every retry is dismissed or refused.
old=$(col "$TMP/busy" WINDOW too_old)
dups=$(col "$TMP/busy" WINDOW dups_dismissed)
[ "${old:-0}" -gt 0 ] || fail "WINDOW: no retry fell below the window"
[ $((old + dups)) -eq "$retries" ] || fail "WINDOW: $old too old + $dups dismissed != $retries retries"

# Clients in order and idle most of the time: nothing below any window.
CASE="in order, default load"
"$BK" $S --ops 20000 --csv --strategies WINDOW,HYBRID >"$TMP/calm" 2>"$ERR" || fail "exit status $?"
for s in WINDOW HYBRID; do
  is "$TMP/calm" $s final 20000
  is "$TMP/calm" $s below_window 0
  is "$TMP/calm" $s too_old 0
  is "$TMP/calm" $s filter_bytes 0 # HYBRID never needed its FBF
done

# 4 of 20 clients hold half their ops back by 600 > W ops. Small filters
# (3000 bits, k = 4, far under the load) so the FBF strategy dismisses
# many genuine updates; HYBRID sends only the held ops and the slid-out
# seqs to the same FBF and must dismiss no more.
CASE="reordering clients"
"$BK" $S --ops 20000 --clients 20 --reorder-share 0.2 --reorder-depth 600 \
  --fbf-m 3000 --fbf-k 4 --ack-loss 0.2 --csv --strategies FBF,WINDOW,HYBRID \
  >"$TMP/reorder" 2>"$ERR" || fail "exit status $?"
grep -q "^# reordering: 4 of 20 clients" "$TMP/reorder" || fail "no reordering line"
fbf_fp=$(col "$TMP/reorder" FBF fp_dismissed)
hyb_fp=$(col "$TMP/reorder" HYBRID fp_dismissed)
[ "${fbf_fp:-0}" -gt 100 ] || fail "FBF dismissed only ${fbf_fp:-?} genuine updates: the check says nothing"
[ "${hyb_fp:-1}" -le "${fbf_fp:-0}" ] || fail "HYBRID fp_dismissed $hyb_fp > FBF's $fbf_fp"
below=$(col "$TMP/reorder" HYBRID below_window)
[ "${below:-0}" -gt 1000 ] || fail "only ${below:-?} ops below the window"
lost=$(col "$TMP/reorder" HYBRID ops_lost)
[ "${lost:-1}" -le "$below" ] || fail "HYBRID lost $lost ops, more than the $below below the window"
is "$TMP/reorder" HYBRID retries_applied 0
is "$TMP/reorder" HYBRID too_old 0
# WINDOW: the same ops below the window, refused; those never applied are
# lost (the simulated clients do not send them another way).
is "$TMP/reorder" WINDOW below_window "$below"
is "$TMP/reorder" WINDOW fp_dismissed 0
is "$TMP/reorder" WINDOW retries_applied 0
new=$(col "$TMP/reorder" WINDOW too_old_new)
wlost=$(col "$TMP/reorder" WINDOW ops_lost)
[ "${wlost:-0}" -gt 0 ] && [ "$wlost" -le "${new:-0}" ] || fail "WINDOW lost $wlost ops, $new genuine attempts refused"
final=$(col "$TMP/reorder" WINDOW final)
[ "$final" -eq $((20000 - wlost)) ] || fail "WINDOW final $final != 20000 - $wlost"

# Memory per client: 10^4 clients active at once (16 + 9 W / 64 = 52 bytes
# a record at W = 256, in a table 83-90 % full: 58-63).
CASE="bytes per client"
"$BK" $S --ops 100000 --clients 10000 --rate 20000 --csv --strategies HYBRID \
  >"$TMP/mem" 2>"$ERR" || fail "exit status $?"
awk -F, -v b="$(col "$TMP/mem" HYBRID bytes_per_client)" -v c="$(col "$TMP/mem" HYBRID clients)" \
  'BEGIN { exit !(c > 5000 && b >= 52 && b <= 64) }' ||
  fail "$(col "$TMP/mem" HYBRID bytes_per_client) bytes per client over $(col "$TMP/mem" HYBRID clients) clients"

# The stream is unchanged by the new strategies and options: the FBF row
# of a default run is the same with --window and the reordering options
# at their defaults.
CASE="same stream"
"$BK" $S --ops 5000 --csv --strategies FBF >"$TMP/a" 2>"$ERR" || fail "exit status $?"
"$BK" $S --ops 5000 --csv --strategies FBF,HYBRID --window 1024 --reorder-share 0 --reorder-depth 0 \
  >"$TMP/b" 2>"$ERR" || fail "exit status $?"
[ "$(grep '^FBF,' "$TMP/a")" = "$(grep '^FBF,' "$TMP/b")" ] || fail "FBF row changed"
is "$TMP/b" HYBRID final 5000

expect 2 "--window: '100' is not a power of two" $S --window 100
expect 2 "--window: '8192' is out of range" $S --window 8192
expect 2 "--reorder-share and --reorder-depth go together (only --reorder-share" $S --reorder-share 0.1
expect 2 "--reorder-share and --reorder-depth go together (only --reorder-depth" $S --reorder-depth 10
expect 2 "--strategies: 'window': item 'window' is not one of the choices" $S --strategies window

finish "all sim counters window checks passed"
