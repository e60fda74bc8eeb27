#!/bin/bash
# SPDX-License-Identifier: MIT
# Fuzz every deserializer for longer than CI does (scripts/test.sh gives each
# target 10 s), and print what the run did as a Markdown table.
#
# Usage: scripts/fuzz.sh [--minutes N] [--jobs J] [--regen-seeds] [kind...]
#   --minutes N    CPU-minutes per target (default 5). A target runs in
#                  chunks until its fuzzer has used N minutes of CPU, so a
#                  busy machine lengthens the run instead of shortening it.
#   --jobs J       targets fuzzed at once (default 2; the machine's cores)
#   --regen-seeds  rewrite tests/fuzz/corpus/<kind>/*.bin from
#                  tests/fuzz/make_seeds.c (after a deliberate format change)
#                  and stop
#   kind...        some of: bits counters bloom fbf rbf idem cbf scbf bloomclock
#                  vclock kbf (default: all)
# Env: BK_FUZZ_BUILD (default build-fuzz), BK_FUZZ_NICE (default 10).
#
# Each target uses -timeout=2, so a call that runs long is a finding, keeps
# what it discovers in $BK_FUZZ_BUILD/corpus-<kind> (the committed seeds are
# only read) and writes crashing inputs to $BK_FUZZ_BUILD/findings-<kind>/.
# A timeout (or a slow unit) is confirmed by running its input again alone
# (3 times, same timeout): one that does not reproduce was the machine, not
# the code (a fuzzer at low priority on a busy machine can be descheduled
# for seconds, e.g. in the middle of ASan's quarantine recycling, and one
# stopped with SIGSTOP for a quiet benchmark meanwhile times out on
# resuming); it is kept under findings-<kind>/unconfirmed/, counted apart,
# and fuzzing goes on.
# Exit status 1 if any target found something.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

minutes=5
jobs=2
regen=0
kinds=""
while [ $# -gt 0 ]; do
  case "$1" in
  --minutes) minutes=${2:?--minutes needs a number}; shift 2 ;;
  --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
  --regen-seeds) regen=1; shift ;;
  -h | --help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  bits | counters | bloom | fbf | rbf | idem | cbf | scbf | bloomclock | vclock | kbf) kinds="$kinds $1"; shift ;;
  *) echo "fuzz.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$minutes" in '' | *[!0-9]*) echo "fuzz.sh: --minutes takes whole minutes" >&2; exit 2 ;; esac
case "$jobs" in '' | 0 | *[!0-9]*) echo "fuzz.sh: --jobs takes a positive number" >&2; exit 2 ;; esac
[ -n "$kinds" ] || kinds="bits counters bloom fbf rbf idem cbf scbf bloomclock vclock kbf"

sh scripts/bootstrap.sh
command -v clang >/dev/null || { echo "fuzz.sh: needs clang" >&2; exit 2; }
fbuild=${BK_FUZZ_BUILD:-build-fuzz}
CC=clang cmake -S . -B "$fbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBK_BUILD_FUZZ=ON -DBK_BUILD_BENCH=OFF -DBK_BUILD_TESTS=ON \
  -DBUILD_SHARED_LIBS=OFF >/dev/null

if [ "$regen" = 1 ]; then
  cmake --build "$fbuild" -j2 --target bk_fuzz_seeds
  "$fbuild/tests/bk_fuzz_seeds" --write tests/fuzz/corpus
  exit 0
fi
cmake --build "$fbuild" -j2 --target bk_fuzz_all

# fuzz_kind KIND: chunks of libFuzzer until CPU >= the budget; writes
# $fbuild/fuzz-KIND.stats: "execs cpu_seconds cov ft units findings".
fuzz_kind() {
  local kind=$1
  local exe="$fbuild/tests/fuzz/fuzz_${kind}_deserialize"
  local corpus="$fbuild/corpus-$kind" found="$fbuild/findings-$kind"
  local log="$fbuild/fuzz-$kind.log" budget=$((minutes * 60))
  local cpu=0 execs=0 chunk=0 findings=0 spurious=0 rc
  mkdir -p "$corpus" "$found"
  : >"$log"
  while awk -v c="$cpu" -v b="$budget" 'BEGIN { exit !(c < b) }'; do
    # The rest of the budget in wall seconds, at least 30.
    local left
    left=$(awk -v c="$cpu" -v b="$budget" 'BEGIN { l = int(b - c + 0.999); print (l < 30 ? 30 : l) }')
    chunk=$((chunk + 1))
    rc=0
    nice -n "${BK_FUZZ_NICE:-10}" "$exe" -max_total_time="$left" -timeout=2 \
      -rss_limit_mb=2048 -max_len=8192 -seed="$chunk" -print_final_stats=1 \
      -artifact_prefix="$found/" "$corpus" "$root/tests/fuzz/corpus/$kind" \
      >>"$log" 2>&1 || rc=$?
    # CPU of this subshell's children so far (the fuzzer, mostly): the
    # second line of `times`, user and system as XmY.ZZZs.
    # (Not in a pipeline: that would run `times` in a child of its own.)
    times >"$log.times"
    cpu=$(tail -1 "$log.times" | awk '{ s = 0; for (i = 1; i <= 2; i++) {
      split($i, a, "m"); s += a[1] * 60 + a[2] + 0 } print s }')
    execs=$((execs + $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      tail -1 | grep -o '[0-9]*$' || echo 0)))
    if [ "$rc" != 0 ]; then
      local t confirmed=0
      # A slow unit (libFuzzer's slow-unit-*, over 10 s) is a timeout that
      # the alarm did not catch in time: triaged the same way.
      for t in "$found"/timeout-* "$found"/slow-unit-*; do
        [ -f "$t" ] || continue
        if "$exe" -timeout=2 -runs=3 "$t" >>"$log.triage" 2>&1; then
          mkdir -p "$found/unconfirmed"
          mv "$t" "$found/unconfirmed/"
          spurious=$((spurious + 1))
        else
          confirmed=1
        fi
      done
      findings=$(find "$found" -maxdepth 1 -type f | wc -l)
      if [ "$findings" -eq 0 ] && [ "$confirmed" = 0 ] &&
        [ "$spurious" -le 20 ]; then
        continue # only unconfirmed timeouts: go on with the budget
      fi
      [ "$findings" -gt 0 ] || findings=1
      break
    fi
  done
  local last cov ft units
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  units=$(find "$corpus" -type f | wc -l)
  echo "$execs $cpu ${cov:-?} ${ft:-?} $units $findings $spurious" >"$fbuild/fuzz-$kind.stats"
}

echo "fuzz.sh: $minutes CPU-minute(s) per target, $jobs at once:$kinds"
set -- $kinds
while [ $# -gt 0 ]; do
  batch=""
  for _ in $(seq "$jobs"); do
    [ $# -gt 0 ] || break
    fuzz_kind "$1" &
    batch="$batch $!"
    shift
  done
  for p in $batch; do wait "$p"; done
done

summary="$fbuild/fuzz-summary.md"
{
  echo "| target | CPU min | executions | exec per CPU-s | coverage (edges) | features | corpus units | unconfirmed timeouts | findings |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for kind in $kinds; do
    read -r execs cpu cov ft units findings spurious <"$fbuild/fuzz-$kind.stats"
    awk -v k="$kind" -v e="$execs" -v c="$cpu" -v cov="$cov" -v ft="$ft" \
      -v u="$units" -v f="$findings" -v sp="${spurious:-0}" 'BEGIN {
        printf "| fuzz_%s_deserialize | %.1f | %d | %.0f | %s | %s | %d | %d | %d |\n",
          k, c / 60, e, (c > 0 ? e / c : 0), cov, ft, u, sp, f }'
  done
} >"$summary"
cat "$summary"
if grep -qE '\| [1-9][0-9]* \|$' "$summary"; then
  echo "fuzz.sh: findings in $fbuild/findings-*/ (logs: $fbuild/fuzz-*.log)" >&2
  exit 1
fi
