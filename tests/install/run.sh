#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install test: builds bloomkit, installs it into a temporary prefix with
# `cmake --install --prefix`, then builds tests/install/main.c against the
# installed copy only, twice per library kind:
#   1. CMake: find_package(bloomkit) with CMAKE_PREFIX_PATH, linking
#      bloomkit::core alone;
#   2. pkg-config: cc main.c $(pkg-config --cflags --libs bloomkit_core) with
#      PKG_CONFIG_PATH pointing into the prefix (lib/ or lib/<multiarch>/,
#      whichever GNUInstallDirs chose).
# and runs each consumer. Shared libraries first, then static ones
# (BK_INSTALL_KINDS="shared static" by default). Any failure stops the
# script with a message and a nonzero status.
#
# Usage: tests/install/run.sh            (from anywhere; needs cmake, cc,
#                                          pkg-config, readelf)
#   BK_INSTALL_KEEP=1  keep the temporary directory for inspection
#   BK_INSTALL_JOBS=N  parallel build jobs (default 2)
#   BK_INSTALL_LIBDIR=lib/x86_64-linux-gnu  force a CMAKE_INSTALL_LIBDIR (what
#                      GNUInstallDirs picks on Debian for the /usr prefix)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
jobs=${BK_INSTALL_JOBS:-2}
kinds=${BK_INSTALL_KINDS:-shared static}
cc=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-install.XXXXXX")
if [ "${BK_INSTALL_KEEP:-0}" = 1 ]; then
  echo "install test: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi

fail() {
  echo "install test FAILED: $*" >&2
  exit 1
}

step() { echo "==> $*"; }

for kind in $kinds; do
  case $kind in
    shared) shared=ON ;;
    static) shared=OFF ;;
    *) fail "unknown kind '$kind' in BK_INSTALL_KINDS" ;;
  esac
  build=$work/$kind/build
  prefix=$work/$kind/prefix

  step "[$kind] configure and build bloomkit"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=$shared -DBK_BUILD_TESTS=OFF -DBK_BUILD_BENCH=OFF \
    -DBK_BUILD_FUZZ=OFF ${BK_INSTALL_LIBDIR:+-DCMAKE_INSTALL_LIBDIR=$BK_INSTALL_LIBDIR} \
    >"$work/$kind.configure.log" 2>&1 ||
    { cat "$work/$kind.configure.log" >&2; fail "[$kind] configuring bloomkit"; }
  cmake --build "$build" -j "$jobs" >"$work/$kind.build.log" 2>&1 ||
    { cat "$work/$kind.build.log" >&2; fail "[$kind] building bloomkit"; }

  step "[$kind] install into $prefix"
  cmake --install "$build" --prefix "$prefix" >"$work/$kind.install.log" 2>&1 ||
    { cat "$work/$kind.install.log" >&2; fail "[$kind] cmake --install"; }

  # GNUInstallDirs may have picked lib, lib64 or lib/<multiarch>.
  pc=$(find "$prefix" -name bloomkit_core.pc -path '*/pkgconfig/*' | head -n 1)
  [ -n "$pc" ] || fail "[$kind] no bloomkit_core.pc under $prefix"
  pcdir=$(dirname "$pc")
  libdir=$(dirname "$pcdir")
  [ -f "$pcdir/bloomkit.pc" ] || fail "[$kind] no bloomkit.pc beside $pc"
  [ -f "$libdir/cmake/bloomkit/bloomkitConfig.cmake" ] ||
    fail "[$kind] no bloomkitConfig.cmake in $libdir/cmake/bloomkit"
  [ -f "$libdir/cmake/bloomkit/bloomkitConfigVersion.cmake" ] ||
    fail "[$kind] no bloomkitConfigVersion.cmake"
  [ -f "$prefix/include/bloomkit/bloom.h" ] || fail "[$kind] headers missing"
  [ ! -e "$prefix/include/bloomkit/internal.h" ] ||
    fail "[$kind] a private header was installed"
  if [ "$kind" = shared ]; then
    ls "$libdir"/libbloomkit_core.so.0* >/dev/null 2>&1 ||
      fail "[$kind] no SOVERSION'd libbloomkit_core.so.0 in $libdir"
  else
    [ -f "$libdir/libbloomkit_core.a" ] || fail "[$kind] no libbloomkit_core.a"
  fi
  echo "    libdir: $libdir"

  step "[$kind] consumer via find_package(bloomkit)"
  cbuild=$work/$kind/consumer-cmake
  if ! cmake -S "$here" -B "$cbuild" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$work/$kind.consumer.log" 2>&1 ||
    ! cmake --build "$cbuild" >>"$work/$kind.consumer.log" 2>&1; then
    cat "$work/$kind.consumer.log" >&2
    fail "[$kind] find_package consumer build"
  fi
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$cbuild/consumer" || fail "[$kind] find_package consumer run"

  step "[$kind] consumer via pkg-config bloomkit_core"
  static_flag=""
  [ "$kind" = static ] && static_flag=--static
  flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config $static_flag --cflags --libs \
    bloomkit_core) || fail "[$kind] pkg-config bloomkit_core"
  pc_prefix=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=prefix bloomkit_core)
  real_pc_prefix=$(cd "$pc_prefix" 2>/dev/null && pwd -P || echo "$pc_prefix")
  [ "$real_pc_prefix" = "$(cd "$prefix" && pwd -P)" ] ||
    fail "[$kind] bloomkit_core.pc says prefix=$pc_prefix but it was installed into $prefix: the .pc file is not relocatable (use \${pcfiledir} in cmake/bloomkit.pc.in)"
  echo "    flags: $flags"
  # shellcheck disable=SC2086  # the flags are words
  "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/main.c" $flags \
    -o "$work/$kind/consumer-pc" || fail "[$kind] pkg-config consumer build"
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$work/$kind/consumer-pc" || fail "[$kind] pkg-config consumer run"

  if [ "$kind" = shared ]; then
    # "Linked alone": core is the only bloomkit library either consumer needs.
    for bin in "$cbuild/consumer" "$work/$kind/consumer-pc"; do
      needed=$(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(libbloomkit[^]]*\)\].*/\1/p')
      [ "$needed" = libbloomkit_core.so.0 ] ||
        fail "[$kind] $bin needs '$needed', expected libbloomkit_core.so.0 only"
    done
  fi
done

echo "install test: OK ($kinds)"
