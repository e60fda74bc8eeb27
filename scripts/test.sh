#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's test command. Builds bloomkit (RelWithDebInfo, warnings as
# errors) into build-test, which also holds the `bloomkit` command the
# README's examples run, and runs: the cmocka programs through ctest (with
# the README's C examples, also under valgrind, and the Redis module's and
# memcached's tests against servers they start on loopback), the ABI check of the built libraries against abi/, a short run
# of each libFuzzer deserializer target when clang is present (a second
# build, build-test-fuzz), and the install check (tests/install: installs
# into a temporary prefix, never into the system). It installs nothing on
# the machine besides what scripts/bootstrap.sh installs from Debian's
# archive; the Debian package test (tests/package, which installs and
# removes the packages) runs in CI only (.ci/run).
# Usage: scripts/test.sh            (from anywhere inside the checkout)
# Env:   BK_BUILD_DIR (default build-test), BK_FUZZ_SECONDS (default 10, 0 = skip)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/bootstrap.sh

build=${BK_BUILD_DIR:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBK_WERROR=ON \
  -DBK_BUILD_BENCH=ON -DBK_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2

# Seconds since $1 (date +%s), for the CI budget.
since() { echo "$(($(date +%s) - $1)) s"; }

# The ABI of the built libraries against the baselines in abi/ (and the
# checker's own self-test on a tiny library).
t0=$(date +%s)
sh tests/abi/selftest.sh
sh scripts/abi-check.sh "$build"
echo "abi check: $(since "$t0")"

fuzz_seconds=${BK_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" -gt 0 ] && command -v clang >/dev/null 2>&1; then
  fbuild="$build-fuzz"
  CC=clang cmake -S . -B "$fbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBK_BUILD_FUZZ=ON -DBK_BUILD_BENCH=OFF -DBK_BUILD_TESTS=ON \
    -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$fbuild" -j2 --target bk_fuzz_all
  for kind in bloom bits counters fbf rbf idem cbf scbf bloomclock vclock kbf; do
    f="$fbuild/tests/fuzz/fuzz_${kind}_deserialize"
    echo "fuzz: $(basename "$f") for ${fuzz_seconds}s"
    # New inputs go to a scratch corpus; the committed seeds stay as they are.
    scratch="$fbuild/corpus-$kind"
    mkdir -p "$scratch"
    "$f" -max_total_time="$fuzz_seconds" -timeout=2 -seed=1 -print_final_stats=1 \
      "$scratch" "$root/tests/fuzz/corpus/$kind" >"$fbuild/fuzz-$kind.log" 2>&1 ||
      { tail -60 "$fbuild/fuzz-$kind.log"; exit 1; }
    grep -E 'stat::number_of_executed_units' "$fbuild/fuzz-$kind.log" || true
  done
fi

# The installed library, consumed with find_package and with pkg-config.
t0=$(date +%s)
sh tests/install/run.sh
echo "install test: $(since "$t0")"
echo "all tests passed"
