#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The server's CPU time per command, IDEM.INCRBY against plain INCRBY: one
# redis-server on a loopback port with the module, N commands of each
# workload piped in with `redis-cli --pipe`, and the server process's
# user + system time (/proc/<pid>/stat) over the run, divided by N. A
# figure of the server's own work, so it varies far less on a shared
# machine than the throughput ratios of bloomkit_bench_redis (where the
# client, on the same cores, counts too); docs/results.md "Redis module".
#
#   sh bench/redis/server_cpu.sh MODULE.so [N]      (N default 1000000)
#
# Workloads (every IDEM op new; counters c0..c999):
#   incrby        INCRBY c<i % 1000> 1
#   idem_1client  IDEM.INCRBY on a table of the module's default strategy,
#                 one client numbering in order (each seq slides out of its
#                 window into HYBRID's FBF while its retry may still come)
#   idem_clients  the same, 100,000 clients in turn, each in order (no
#                 slide-out: the windows decide alone)
#   idem_fbf      IDEM.INCRBY on a table of STRATEGY fbf, one client
# The server is stopped when the script ends, however it ends.
set -eu

module=${1:?usage: server_cpu.sh MODULE.so [N]}
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
n=${2:-1000000}
server=${BK_REDIS_SERVER:-redis-server}
cli=${BK_REDIS_CLI:-redis-cli}
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port=$((20000 + $$ % 30000))
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$dir" --loadmodule "$module" retry_timeout 30000 fpp 0.001 \
  >"$dir/server.log" 2>&1 &
pid=$!
i=0
until "$cli" -p "$port" PING >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "redis-server did not start:" >&2
    cat "$dir/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
"$cli" -p "$port" IDEM.RESERVE '{b}t' RETRY_TIMEOUT 30000 CAPACITY 2000000 \
  FPP 0.001 >/dev/null
"$cli" -p "$port" IDEM.RESERVE '{b}tf' RETRY_TIMEOUT 30000 CAPACITY 2000000 \
  FPP 0.001 STRATEGY fbf >/dev/null

# Server CPU time in clock ticks (utime + stime).
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

# RESP for workload $1: n commands.
gen() {
  awk -v n="$n" -v w="$1" 'function arg(s) { printf "$%d\r\n%s\r\n", length(s), s }
    BEGIN {
      for (i = 1; i <= n; i++) {
        c = "c" (i % 1000)
        if (w == "incrby") { printf "*3\r\n"; arg("INCRBY"); arg(c); arg("1"); continue }
        t = w == "idem_fbf" ? "{b}tf" : "{b}t"
        client = w == "idem_clients" ? i % 100000 : 1
        seq = w == "idem_clients" ? int(i / 100000) + 1 : i
        printf "*6\r\n"; arg("IDEM.INCRBY"); arg(t); arg(c); arg(client); arg(seq); arg("1")
      }
    }'
}

printf '%-14s %12s\n' workload "server ns/op"
for w in incrby idem_1client idem_clients idem_fbf; do
  gen "$w" >"$dir/cmds"
  t0=$(ticks)
  "$cli" -p "$port" --pipe <"$dir/cmds" >"$dir/pipe.log"
  t1=$(ticks)
  grep -q "errors: 0" "$dir/pipe.log" || {
    cat "$dir/pipe.log" >&2
    exit 1
  }
  awk -v a="$t0" -v b="$t1" -v hz="$hz" -v n="$n" -v w="$w" \
    'BEGIN { printf "%-14s %12.0f\n", w, (b - a) * 1e9 / hz / n }'
done
