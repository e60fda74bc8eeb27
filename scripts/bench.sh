#!/bin/sh
# SPDX-License-Identifier: MIT
# Build bloomkit in Release and run the benchmark suite; it ends with a
# side-by-side table (ns/op, bits/key, ratio to the memory-latency baseline)
# and the speed targets. Extra arguments go to the benchmark binary, e.g.
#   scripts/bench.sh --bk_quick
#   scripts/bench.sh --benchmark_filter=blocked
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/bootstrap.sh
build=${BK_BUILD_DIR:-build-release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBK_BUILD_TESTS=OFF \
  -DBK_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target bloomkit_bench
status=0
"$build/bench/bloomkit_bench" "$@" || status=$?

# The Redis module against plain Redis (bench/redis), when the module is
# built (redismodule.h present); BK_BENCH_REDIS=0 skips it. It starts its
# own redis-server on a loopback port.
if [ "${BK_BENCH_REDIS:-1}" != 0 ] &&
  cmake --build "$build" --target help | grep bloomkit_bench_redis >/dev/null; then
  cmake --build "$build" -j2 --target bloomkit_bench_redis
  "$build/bench/bloomkit_bench_redis" "$@" || status=$?
fi
exit "$status"
