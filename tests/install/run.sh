#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install test: builds bloomkit, installs it into a temporary prefix (outside
# every system path) with `cmake --install --prefix`, and builds consumers
# against the installed copy only, for shared and then static libraries
# (BK_INSTALL_KINDS="shared static" by default). Nothing runs with
# LD_LIBRARY_PATH: shared consumers find the prefix through a run path only,
# as a user's program would (issue #18). Per kind:
#   1. what was installed: headers (no private ones), one .pc per component,
#      the CMake package, the SOVERSION'd shared or the static libraries;
#   2. shared: each installed library exports only bk_* symbols
#      (nm -D --defined-only), and the installed `bloomkit` command runs;
#   3. find_package(bloomkit COMPONENTS core) and (COMPONENTS fbf) consumers
#      (tests/install/CMakeLists.txt: main.c uses core, fbf_main.c the FBF
#      alone), forced to the kind under test with bloomkit_SHARED_LIBS; every
#      component that has a .pc file must also be a CMake component, and an
#      unknown component must make find_package fail;
#   4. pkg-config consumers: main.c with bloomkit_core, fbf_main.c with
#      bloomkit_fbf, and the issue's reproduction: fbf_main.c with the
#      umbrella bloomkit, -Wl,--as-needed and -Wl,-rpath,<prefix>/lib, so
#      libbloomkit_core is found only through libbloomkit_fbf's run path.
#      Static: `pkg-config --static` must give a link line that works
#      (dependent libraries first, -lxxhash -lmurmurhash);
#   5. readelf -d NEEDED: a consumer of core alone needs libbloomkit_core
#      only (never libbloomkit_fbf); fbf consumers need libbloomkit_fbf;
#      static consumers need no libbloomkit at all.
# Any failure stops the script with a message and a nonzero status.
#
# Usage: tests/install/run.sh            (from anywhere; needs cmake, cc,
#                                          pkg-config, readelf, nm)
#   BK_INSTALL_KEEP=1  keep the temporary directory for inspection
#   BK_INSTALL_JOBS=N  parallel build jobs (default 2)
#   BK_INSTALL_LIBDIR=lib/x86_64-linux-gnu  force a CMAKE_INSTALL_LIBDIR (what
#                      GNUInstallDirs picks on Debian for the /usr prefix)
#   BK_INSTALL_CMAKE_ARGS="-DBK_INSTALL_RPATH=OFF"  extra arguments for
#                      bloomkit's configure (that one must make it fail)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
jobs=${BK_INSTALL_JOBS:-2}
kinds=${BK_INSTALL_KINDS:-shared static}
cc=${CC:-cc}
cflags="-std=c11 -Wall -Wextra -Wpedantic -Werror"

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

# Run a program the way a user would: no LD_LIBRARY_PATH to hide a missing
# run path.
run_bare() { env -u LD_LIBRARY_PATH "$@"; }

# needed BIN: the libbloomkit sonames BIN's dynamic section asks for.
needed() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(libbloomkit[^]]*\)\].*/\1/p' |
    sort | tr '\n' ' ' | sed 's/ $//'
}

for kind in $kinds; do
  case $kind in
    shared) shared=ON ;;
    static) shared=OFF ;;
    *) fail "unknown kind '$kind' in BK_INSTALL_KINDS" ;;
  esac
  build=$work/$kind/build
  prefix=$work/$kind/prefix

  step "[$kind] configure and build bloomkit"
  # shellcheck disable=SC2086  # the extra arguments are words
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=$shared -DBK_BUILD_TESTS=OFF -DBK_BUILD_BENCH=OFF \
    -DBK_BUILD_FUZZ=OFF ${BK_INSTALL_LIBDIR:+-DCMAKE_INSTALL_LIBDIR=$BK_INSTALL_LIBDIR} \
    ${BK_INSTALL_CMAKE_ARGS:-} >"$work/$kind.configure.log" 2>&1 ||
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
  [ -f "$pcdir/bloomkit_fbf.pc" ] || fail "[$kind] no bloomkit_fbf.pc beside $pc"
  cmakedir=$libdir/cmake/bloomkit
  [ -f "$cmakedir/bloomkitConfig.cmake" ] ||
    fail "[$kind] no bloomkitConfig.cmake in $cmakedir"
  [ -f "$cmakedir/bloomkitConfigVersion.cmake" ] ||
    fail "[$kind] no bloomkitConfigVersion.cmake"
  [ -f "$cmakedir/bloomkit-$kind-targets.cmake" ] ||
    fail "[$kind] no bloomkit-$kind-targets.cmake in $cmakedir"
  [ -f "$prefix/include/bloomkit/bloom.h" ] || fail "[$kind] headers missing"
  [ ! -e "$prefix/include/bloomkit/internal.h" ] ||
    fail "[$kind] a private header was installed"
  # Every component: the names of its .pc files, bloomkit_<name>.pc.
  components=$(cd "$pcdir" && ls bloomkit_*.pc | sed 's/^bloomkit_//; s/\.pc$//' |
    tr '\n' ' ' | sed 's/ $//')
  echo "    libdir: $libdir; components: $components"
  for comp in $components; do
    if [ "$kind" = shared ]; then
      [ -L "$libdir/libbloomkit_$comp.so" ] ||
        fail "[$kind] no libbloomkit_$comp.so link in $libdir"
    else
      [ -f "$libdir/libbloomkit_$comp.a" ] || fail "[$kind] no libbloomkit_$comp.a"
    fi
  done

  if [ "$kind" = shared ]; then
    soname=$(readelf -d "$libdir/libbloomkit_core.so" |
      sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    case $soname in
      libbloomkit_core.so.[0-9]*) ;;
      *) fail "[$kind] libbloomkit_core.so has SONAME '$soname', expected libbloomkit_core.so.<N>" ;;
    esac
    soversion=${soname#libbloomkit_core.so.}

    step "[$kind] exported symbols: bk_* only"
    for comp in $components; do
      lib=$libdir/libbloomkit_$comp.so.$soversion
      [ -f "$lib" ] || fail "[$kind] no $lib (every component shares soname version $soversion)"
      n_exported=$(nm -D --defined-only "$lib" | grep -c ' bk_' || true)
      [ "$n_exported" -gt 0 ] || fail "[$kind] $lib exports no bk_* symbol"
      others=$(nm -D --defined-only "$lib" | awk '$3 !~ /^bk_/ {print $3}')
      [ -z "$others" ] ||
        fail "[$kind] $lib exports symbols outside bk_*: $(echo "$others" | tr '\n' ' ')"
      echo "    libbloomkit_$comp.so.$soversion: $n_exported symbols, all bk_*"
    done

    step "[$kind] the installed bloomkit command runs"
    run_bare "$prefix/bin/bloomkit" --version >/dev/null ||
      fail "[$kind] $prefix/bin/bloomkit --version (does it find its libraries?)"
  fi

  for comp in core fbf; do
    step "[$kind] consumer via find_package(bloomkit COMPONENTS $comp)"
    cbuild=$work/$kind/consumer-cmake-$comp
    also=""
    [ "$comp" = core ] && also=$(echo "$components" | tr ' ' ';')
    if ! cmake -S "$here" -B "$cbuild" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release -DBK_CONSUMER_COMPONENT=$comp \
      -DBK_CONSUMER_ALSO="$also" -DBK_CONSUMER_KIND=$kind \
      -Dbloomkit_SHARED_LIBS=$shared >"$work/$kind.consumer-$comp.log" 2>&1 ||
      ! cmake --build "$cbuild" >>"$work/$kind.consumer-$comp.log" 2>&1; then
      cat "$work/$kind.consumer-$comp.log" >&2
      fail "[$kind] find_package consumer of $comp"
    fi
    run_bare "$cbuild/consumer" || fail "[$kind] find_package consumer of $comp: run"
  done

  step "[$kind] find_package(bloomkit COMPONENTS nosuch) must fail"
  if cmake -S "$here" -B "$work/$kind/consumer-nosuch" -DCMAKE_PREFIX_PATH="$prefix" \
    -DBK_CONSUMER_ALSO=nosuch >"$work/$kind.nosuch.log" 2>&1; then
    fail "[$kind] find_package(bloomkit COMPONENTS nosuch) succeeded"
  fi
  grep -q "no bloomkit component nosuch" "$work/$kind.nosuch.log" ||
    { cat "$work/$kind.nosuch.log" >&2; fail "[$kind] the nosuch failure does not name the component"; }

  static_flag=""
  rpath=""
  if [ "$kind" = static ]; then
    static_flag=--static
  else
    rpath="-Wl,-rpath,$libdir"
  fi

  pc_prefix=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=prefix bloomkit_core)
  real_pc_prefix=$(cd "$pc_prefix" 2>/dev/null && pwd -P || echo "$pc_prefix")
  [ "$real_pc_prefix" = "$(cd "$prefix" && pwd -P)" ] ||
    fail "[$kind] bloomkit_core.pc says prefix=$pc_prefix but it was installed into $prefix: the .pc file is not relocatable (use \${pcfiledir} in cmake/bloomkit.pc.in)"

  step "[$kind] pkg-config --static link order of every component"
  for comp in $components; do
    libs=$(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs "bloomkit_$comp") ||
      fail "[$kind] pkg-config --static --libs bloomkit_$comp"
    # The component's own library, then core, then core's own needs.
    want=" -lbloomkit_$comp( .*)? -lbloomkit_core( .*)? -lxxhash( .*)? -lmurmurhash "
    [ "$comp" = core ] && want=" -lbloomkit_core( .*)? -lxxhash( .*)? -lmurmurhash "
    echo " $libs " | grep -Eq -- "$want" ||
      fail "[$kind] pkg-config --static --libs bloomkit_$comp gives '$libs': want -lbloomkit_$comp before -lbloomkit_core before -lxxhash -lmurmurhash"
  done

  # name source package [-Wl,--as-needed]: build with pkg-config, run bare.
  pc_consumer() {
    name=$1 src=$2 pkg=$3 extra=${4:-}
    flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config $static_flag --cflags --libs "$pkg") ||
      fail "[$kind] pkg-config $static_flag $pkg"
    echo "    $pkg: $flags"
    # shellcheck disable=SC2086  # the flags are words
    "$cc" $cflags "$here/$src" $extra $flags $rpath -o "$work/$kind/$name" ||
      fail "[$kind] pkg-config consumer $name ($pkg) build"
    run_bare "$work/$kind/$name" || fail "[$kind] pkg-config consumer $name ($pkg) run"
  }
  step "[$kind] consumers via pkg-config $static_flag"
  pc_consumer consumer-pc-core main.c bloomkit_core
  pc_consumer consumer-pc-fbf fbf_main.c bloomkit_fbf
  # The reproduction of issue #18: the umbrella, --as-needed, an rpath to
  # the prefix only. Without run paths in the libraries this fails with
  # "libbloomkit_core.so.0: cannot open shared object file".
  pc_consumer consumer-pc-umbrella fbf_main.c bloomkit -Wl,--as-needed

  step "[$kind] what each consumer needs (readelf -d)"
  for bin in "$work/$kind/consumer-cmake-core/consumer" "$work/$kind/consumer-pc-core" \
    "$work/$kind/consumer-cmake-fbf/consumer" "$work/$kind/consumer-pc-fbf" \
    "$work/$kind/consumer-pc-umbrella"; do
    got=$(needed "$bin")
    echo "    $bin: ${got:-(no libbloomkit)}"
    if [ "$kind" = static ]; then
      [ -z "$got" ] || fail "[$kind] $bin needs '$got' but was linked statically"
      continue
    fi
    case $bin in
      *core*)
        [ "$got" = "libbloomkit_core.so.$soversion" ] ||
          fail "[$kind] $bin uses core alone but needs '$got', expected libbloomkit_core.so.$soversion only" ;;
      *)
        case " $got " in
          *" libbloomkit_fbf.so.$soversion "*) ;;
          *) fail "[$kind] $bin uses the FBF but needs '$got'" ;;
        esac ;;
    esac
  done
done

echo "install test: OK ($kinds)"
