#!/bin/sh
# SPDX-License-Identifier: MIT
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (all of
# it), then the concurrency tests under ThreadSanitizer. Errors abort the run
# (-fno-sanitize-recover=all).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/bootstrap.sh

asan=${BK_BUILD_DIR:-build-asan}
cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DBK_SANITIZE=address,undefined \
  -DBK_BUILD_BENCH=OFF -DBK_WERROR=ON >/dev/null
cmake --build "$asan" -j2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan" --output-on-failure -j2 -E install

tsan="$asan-tsan"
cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBK_SANITIZE=thread \
  -DBK_BUILD_BENCH=OFF >/dev/null
cmake --build "$tsan" -j2
# detect_deadlocks=0: bk_idem_serialize holds every stripe lock at once,
# more mutexes than TSan's deadlock detector tracks (64); races are still
# reported.
TSAN_OPTIONS=halt_on_error=1:detect_deadlocks=0 \
  ctest --test-dir "$tsan" --output-on-failure -j2 \
  -R 'test_(bits|counters|bloom|bloom_split|cbf|scbf|fbf|rbf|apbf|idem)'
echo "sanitizer runs passed"
