#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Self-test of scripts/abi-check.sh: builds a tiny library in versions that
# differ the ways a release can (nothing, an added function, a config struct
# that grew, the same with the soname bumped, a library with no baseline)
# and checks the verdicts: the grown struct must FAIL without a soname bump,
# everything else must pass. It shows the check can fail, in a second, with
# no change to bloomkit itself.
# Usage: tests/abi/selftest.sh   (needs cc, abigail-tools)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-cc}
work=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-abi-selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "abi self-test FAILED: $*" >&2
  exit 1
}

# make_lib VARIANT SONAME [extra field] [extra function]
make_lib() {
  dir=$work/$1
  mkdir -p "$dir/include/t" "$dir/lib"
  cat >"$dir/include/t/t.h" <<EOH
#include <stdint.h>
typedef struct t_config { uint64_t capacity; double fpp; $3 } t_config;
__attribute__((visibility("default"))) int t_create(const t_config *cfg);
$4
EOH
  cat >"$dir/t.c" <<EOC
#include "t/t.h"
int t_create(const t_config *cfg) { return cfg->capacity > 0 && cfg->fpp > 0; }
EOC
  [ -n "$4" ] && echo "int t_added(void) { return 1; }" >>"$dir/t.c"
  "$cc" -g -O0 -fPIC -shared -fvisibility=hidden -I"$dir/include" \
    -Wl,-soname,"$2" -o "$dir/lib/$2.0.0" "$dir/t.c"
}

# check VARIANT [--update]: run abi-check.sh on VARIANT; status and output.
check() {
  BK_ABI_DIR=$work/abi BK_ABI_HEADERS=$work/$1/include/t \
    BK_ABI_LIBS='libt*.so.*' sh "$root/scripts/abi-check.sh" ${2:+"$2"} \
    "$work/$1/lib" >"$work/$1.out" 2>&1
}

add='__attribute__((visibility("default"))) int t_added(void);'
make_lib v1 libt.so.0 "" ""
make_lib added libt.so.0 "" "$add"
make_lib grown libt.so.0 "uint64_t seed;" ""
make_lib bumped libt.so.1 "uint64_t seed;" ""
make_lib other libtother.so.0 "" ""

check other || fail "a library with no baseline: $(cat "$work/other.out")"
grep -q "new library, no baseline" "$work/other.out" ||
  fail "no baseline not reported: $(cat "$work/other.out")"
check v1 --update || fail "--update: $(cat "$work/v1.out")"
check v1 || fail "unchanged library: $(cat "$work/v1.out")"
grep -q "no ABI change" "$work/v1.out" || fail "unchanged: $(cat "$work/v1.out")"
check added || fail "an added function must pass: $(cat "$work/added.out")"
grep -q "compatible additions (1 Added function)" "$work/added.out" ||
  fail "addition not reported: $(cat "$work/added.out")"
if check grown; then
  fail "a config struct that grew passed without a soname bump: $(cat "$work/grown.out")"
fi
grep -q "INCOMPATIBLE" "$work/grown.out" || fail "grown: $(cat "$work/grown.out")"
check bumped || fail "the same change with the soname bumped must pass: $(cat "$work/bumped.out")"
grep -q "soname bumped" "$work/bumped.out" || fail "bumped: $(cat "$work/bumped.out")"
echo "abi self-test: OK (unchanged, added, grown struct refused, soname bump, new library)"
