#!/bin/sh
# SPDX-License-Identifier: MIT
# Build bloomkit in Release and run the benchmark suite (bench/), then the
# Redis module's benchmark when the module is built. The full output (Google
# Benchmark's report, the side-by-side table of ns/op, bits/key and ratio to
# each group's baseline, the targets) goes to a file it names,
# build-release/bench-<date>-<time>.txt; the terminal gets a progress line
# per part of the suite and, at the end, a summary of at most 100 columns:
# each speed target met (PASS) or missed (MISS), one line each with its
# measured value and limit. It also builds the `bloomkit` command into
# build-test (the test command's build tree, configured as scripts/test.sh
# does), so the README's `build-test/bloomkit ...` lines work after either.
# Usage: scripts/bench.sh [--strict] [benchmark flags]
#   --strict     exit 3 when a target is missed (default: misses are
#                reported, the exit status is 0)
#   --bk_quick   only the smallest sizes, short runs (about a minute)
#   other flags go to the benchmark binaries, e.g. --benchmark_filter=blocked
# Env: BK_BUILD_DIR (default build-release), BK_BENCH_REDIS=0 (skip the
#      Redis benchmark), BK_BENCH_PYTHON=1 (also run the Python binding's
#      bench/python/bench_python.py, a few minutes; --bk_quick gives it
#      --quick). Exit status: 1 when a benchmark failed or errored,
#      3 under --strict when a target was missed, else 0.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/bootstrap.sh
t_start=$(date +%s)

# --strict is ours; everything else goes to the benchmark binaries.
strict=0
for a in "$@"; do
  shift
  if [ "$a" = --strict ]; then strict=1; else set -- "$@" "$a"; fi
done

# "2 min 5 s" since $1 (date +%s).
elapsed() {
  s=$(($(date +%s) - $1))
  if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

# cmake --build "$1" --target "$2"..., its output in "$1/build.log", shown
# only when the build fails.
build_quietly() {
  dir=$1
  shift
  if ! cmake --build "$dir" -j2 --target "$@" >"$dir/build.log" 2>&1; then
    tail -40 "$dir/build.log"
    echo "bench: the build failed; the whole log is $dir/build.log" >&2
    exit 1
  fi
}

build=${BK_BUILD_DIR:-build-release}
echo "bench: building the benchmarks (Release) in $build/"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBK_BUILD_TESTS=OFF \
  -DBK_BUILD_BENCH=ON >/dev/null
redis=0
if [ "${BK_BENCH_REDIS:-1}" != 0 ] &&
  cmake --build "$build" --target help | grep bloomkit_bench_redis >/dev/null; then
  redis=1
fi
if [ "$redis" = 1 ]; then
  build_quietly "$build" bloomkit_bench bloomkit_bench_redis
else
  build_quietly "$build" bloomkit_bench
fi

# The README's `build-test/bloomkit` commands: the same configuration as
# scripts/test.sh, so the test command reuses this tree.
echo "bench: building the bloomkit command in build-test/ ($(elapsed "$t_start") so far)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBK_WERROR=ON \
  -DBK_BUILD_BENCH=ON -DBK_BUILD_TESTS=ON >/dev/null
build_quietly build-test bloomkit_cli

out="$build/bench-$(date +%Y%m%d-%H%M%S).txt"
: >"$out"
echo "bench: full output to $out"
status=0

# Run benchmark binary $1 (the rest: its flags), appending everything it
# prints to $out. The terminal gets a line each time the suite moves on to
# a new part (the first component of the benchmark names: 1MiB, fbf, idem,
# ...), and at least once a minute within a long part. Google Benchmark's
# DEBUG warning is about Debian's libbenchmark package (built without
# NDEBUG), not about bloomkit's Release code: it stays in the file and gets
# one line of explanation here.
run_bench() {
  bin=$1
  shift
  t0=$(date +%s)
  rc_file="$build/bench-status"
  echo "bench: running $(basename "$bin") (it fills its filters first)"
  # stdbuf: line-buffered, so the progress follows the run.
  line_buffered=""
  if command -v stdbuf >/dev/null 2>&1; then line_buffered="stdbuf -oL"; fi
  { rc=0; $line_buffered "$bin" "$@" 2>&1 || rc=$?; echo "$rc" >"$rc_file"; } | tee -a "$out" |
    awk -v t0="$t0" '
      /Library was built as DEBUG/ {
        print "bench: \"Library was built as DEBUG\" is about Debian'"'"'s libbenchmark," \
          " not bloomkit (Release)"
        fflush()
        next
      }
      /^Benchmark +Time/ { table = 1; next }
      /^bloomkit benchmark table/ { table = 0 }
      # A result line: name, time, unit, CPU time, unit, iterations.
      table && $1 ~ /\// && $3 ~ /^(ns|us|ms|s)$/ {
        n++
        split($1, part, "/")
        cmd = "date +%s"; cmd | getline now; close(cmd)
        if (part[1] != current || now - said >= 60) {
          printf "bench:   %-12s (%d benchmarks done, %d s)\n", part[1], n - 1, now - t0
          fflush()
          current = part[1]
          said = now
        }
      }
      END { if (n) printf "bench:   done: %d benchmarks\n", n }'
  rc=$(cat "$rc_file")
  rm -f "$rc_file"
  if [ "$rc" != 0 ]; then
    tail -5 "$out"
    echo "bench: $(basename "$bin") exited with status $rc (see $out)"
    status=1
  fi
}

run_bench "$build/bench/bloomkit_bench" "$@"
# The Redis module against plain Redis (bench/redis): it starts its own
# redis-server on a loopback port.
if [ "$redis" = 1 ]; then
  run_bench "$build/bench/bloomkit_bench_redis" "$@"
fi

# The Python binding's benchmark (bench/python): its table and PASS/MISS
# lines go to $out like the suite's.
if [ "${BK_BENCH_PYTHON:-0}" = 1 ]; then
  build_quietly "$build" bloomkit_python bloomkit_bench_python_c
  echo "bench: running bench/python/bench_python.py ($(elapsed "$t_start") so far)"
  pyq=""
  case " $* " in *" --bk_quick "*) pyq=--quick ;; esac
  if ! PYTHONPATH="$build/python" /usr/bin/python3 bench/python/bench_python.py $pyq \
    --c-batch "$build/bench/bloomkit_bench_python_c" >>"$out"; then
    echo "bench: bench_python.py failed (see $out)"
    status=1
  fi
fi

# The summary: every PASS and MISS target line of $out, condensed to one
# line of at most 100 columns (status, value and limit, then the label,
# shortened in the middle when it is too long), misses last; then the counts.
echo
echo "bench: targets met and missed (lower is better; INFO ratios and tables in the file)"
awk '
  function shorten(s, width) {
    if (length(s) <= width) return s
    head = int((width - 3) / 2)
    return substr(s, 1, head) "..." substr(s, length(s) - (width - 3 - head) + 1)
  }
  /^  (PASS|MISS|SKIP|INFO)  / {
    st = substr($0, 3, 4)
    count[st]++
    if (st != "PASS" && st != "MISS") next
    rest = substr($0, 9)
    p = index(rest, "(limit ")
    before = substr(rest, 1, p - 1)
    sub(/ +$/, "", before)
    limit = substr(rest, p + 7)
    sub(/[;)].*/, "", limit)
    nf = split(before, w, " ")
    value = w[nf]
    drop = length(value)
    if (value !~ /x$/) {  # a counter: "name value"
      value = w[nf - 1] " " value
      drop = length(value)
    }
    label = substr(before, 1, length(before) - drop)
    sub(/ +$/, "", label)
    field = sprintf("%7s (limit %s)", value, limit)
    if (length(field) < 20) field = sprintf("%-20s", field)
    line = sprintf("%s %s  ", st, field)
    line = line shorten(label, 100 - length(line))
    if (st == "PASS") pass[++np] = line; else miss[++nm] = line
  }
  END {
    for (i = 1; i <= np; i++) print pass[i]
    for (i = 1; i <= nm; i++) print miss[i]
    printf "targets: %d pass, %d miss, %d not run, %d informational\n",
      count["PASS"], count["MISS"], count["SKIP"], count["INFO"]
    exit (count["MISS"] > 0) ? 3 : 0
  }' "$out" || {
  rc=$?
  if [ "$rc" = 3 ] && [ "$strict" = 1 ] && [ "$status" = 0 ]; then status=3; fi
  if [ "$rc" != 3 ]; then status=1; fi
}
echo "bench: done in $(elapsed "$t_start"); full output: $out"
if [ "$strict" = 0 ] && [ "$status" = 0 ] && grep -q '^  MISS  ' "$out"; then
  echo "bench: misses leave the exit status 0; --strict makes it 3"
fi
exit "$status"
