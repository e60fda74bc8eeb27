#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Debian package test (issue #18): builds the packages from a clean export
# of the checkout in a temporary directory (the checkout gets no debian/
# build artifacts), checks them with lintian, installs them with
# `apt-get install ./*.deb`, builds consumers against the installed
# libbloomkit-dev and runs them, then removes the packages again (also when
# a step fails). Steps:
#   1. export: the files git tracks plus untracked, not ignored ones (what
#      a commit of the working tree would hold);
#   2. dpkg-buildpackage -b -us -uc with DEB_BUILD_OPTIONS=nocheck (the
#      test suite runs in scripts/test.sh already): libbloomkit2,
#      libbloomkit-dev, bloomkit-tools, python3-bloomkit;
#   3. lintian on the .changes: no error and no warning (overrides in
#      debian/*.lintian-overrides say why);
#   4. what each package holds, and the installed libraries' exports
#      (nm -D --defined-only: bk_* only);
#   5. consumers of the installed -dev package: pkg-config (core alone;
#      the FBF through the umbrella), `pkg-config --static` fully static,
#      find_package(bloomkit COMPONENTS fbf) shared and static, readelf -d
#      NEEDED for each, and the installed `bloomkit` command;
#   6. python3-bloomkit: /usr/bin/python3 imports bloomkit from
#      /usr/lib/python3/dist-packages (run from outside the checkout, in
#      isolated mode), its extension loads the installed libbloomkit_*
#      (no run path), and a filter round trip works.
# Needs root (apt-get), debhelper, dpkg-dev, lintian (scripts/bootstrap.sh).
# Refuses to run if a bloomkit package is already installed, so it never
# removes an installation it did not make.
#
# Usage: tests/package/run.sh
#   BK_PACKAGE_KEEP=1  keep the temporary directory (and the .debs)
#   BK_PACKAGE_JOBS=N  parallel build jobs (default 2)
#   BK_PACKAGE_CC=cc   compiler for the consumers (the package build uses
#                      dpkg-buildflags and the default compiler)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
jobs=${BK_PACKAGE_JOBS:-2}
cc=${BK_PACKAGE_CC:-cc}
cflags="-std=c11 -Wall -Wextra -Wpedantic -Werror"
packages="libbloomkit2 libbloomkit-dev bloomkit-tools python3-bloomkit"

fail() {
  echo "package test FAILED: $*" >&2
  exit 1
}
step() { echo "==> $*"; }
needed() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | sort |
    tr '\n' ' ' | sed 's/ $//'
}

[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get install/remove)"
for p in $packages; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
    fail "$p is already installed; remove it first (apt-get purge $packages)"
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-package.XXXXXX")
installed=0
cleanup() {
  status=$?
  if [ "$installed" = 1 ]; then
    echo "==> removing $packages"
    # shellcheck disable=SC2086  # a list of names
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $packages \
      >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; status=1; }
  fi
  if [ "${BK_PACKAGE_KEEP:-0}" = 1 ]; then
    echo "package test: keeping $work"
  else
    rm -rf "$work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

version=$(sed -n '1s/^bloomkit (\([^)]*\)).*/\1/p' "$root/debian/changelog")
[ -n "$version" ] || fail "no version in debian/changelog"
src=$work/bloomkit-$version

step "export the checkout to $src"
mkdir -p "$src"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  # shellcheck disable=SC2016  # $f is for the inner sh
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf -) | tar -xf - -C "$src"
else
  (cd "$root" && tar --exclude='./build*' --exclude=./.git -cf - .) |
    tar -xf - -C "$src"
fi
[ -f "$src/debian/rules" ] || fail "the export has no debian/rules"

step "dpkg-buildpackage -b -us -uc (nocheck)"
t0=$(date +%s)
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
  DEB_BUILD_PROFILES=nocheck dpkg-buildpackage -b -us -uc) \
  >"$work/build.log" 2>&1 || { tail -80 "$work/build.log" >&2; fail "dpkg-buildpackage"; }
echo "    built in $(($(date +%s) - t0)) s"
changes=$(ls "$work"/bloomkit_"$version"_*.changes)
for p in $packages; do
  ls "$work/${p}_${version}_"*.deb >/dev/null 2>&1 || fail "no $p .deb was built"
done

step "lintian"
t0=$(date +%s)
lintian --fail-on error,warning --display-info "$changes" \
  >"$work/lintian.log" 2>&1 ||
  { cat "$work/lintian.log" >&2; fail "lintian (errors or warnings above)"; }
sed 's/^/    /' "$work/lintian.log"
echo "    lintian: $(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings, $(grep -c '^I:' "$work/lintian.log" || true) info ($(($(date +%s) - t0)) s)"

step "package contents"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
contents() { dpkg-deb -c "$work/${1}_${version}_"*.deb | awk '{print $6}' | sed 's|^\./|/|'; }
contents libbloomkit2 | grep -q "^$libdir/libbloomkit_core.so.2" ||
  fail "libbloomkit2 has no $libdir/libbloomkit_core.so.2"
contents libbloomkit2 | grep -E '\.(a|pc|h)$|\.so$' &&
  fail "libbloomkit2 holds development files"
for f in /usr/include/bloomkit/bloom.h "$libdir/libbloomkit_core.a" \
  "$libdir/libbloomkit_fbf.a" "$libdir/libbloomkit_core.so" \
  "$libdir/pkgconfig/bloomkit.pc" "$libdir/pkgconfig/bloomkit_fbf.pc" \
  "$libdir/cmake/bloomkit/bloomkitConfig.cmake" \
  "$libdir/cmake/bloomkit/bloomkit-shared-targets.cmake" \
  "$libdir/cmake/bloomkit/bloomkit-static-targets.cmake"; do
  contents libbloomkit-dev | grep -qx "$f" || fail "libbloomkit-dev has no $f"
done
contents bloomkit-tools | grep -qx /usr/bin/bloomkit || fail "bloomkit-tools has no /usr/bin/bloomkit"
pydir=/usr/lib/python3/dist-packages/bloomkit
contents python3-bloomkit | grep -qx "$pydir/__init__.py" ||
  fail "python3-bloomkit has no $pydir/__init__.py"
pyext=$(contents python3-bloomkit | grep -x "$pydir/_bloomkit\.cpython-.*\.so") ||
  fail "python3-bloomkit has no $pydir/_bloomkit.cpython-*.so"
pydeps=$(dpkg-deb -f "$work/python3-bloomkit_${version}_"*.deb Depends)
echo "    python3-bloomkit: $pyext; Depends: $pydeps"
echo "$pydeps" | grep -q "libbloomkit2 (>= ${version%%~*}" ||
  fail "python3-bloomkit does not depend on libbloomkit2 (shlibs)"
echo "$pydeps" | grep -q "python3 (>= 3" ||
  fail "python3-bloomkit does not depend on python3 (dh_python3)"

step "apt-get install ./*.deb"
installed=1
# shellcheck disable=SC2046  # file names without spaces
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  $(for p in $packages; do ls "$work/${p}_${version}_"*.deb; done) \
  >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "apt-get install"; }

step "installed libraries export bk_* only"
for lib in "$libdir"/libbloomkit_*.so.2; do
  others=$(nm -D --defined-only "$lib" | awk '$3 !~ /^bk_/ {print $3}')
  [ -z "$others" ] || fail "$lib exports $(echo "$others" | tr '\n' ' ')"
  echo "    $(basename "$lib"): $(nm -D --defined-only "$lib" | wc -l) symbols, all bk_*"
done

consumers=$root/tests/install
step "consumers via pkg-config (installed -dev)"
# shellcheck disable=SC2046,SC2086  # $cflags and pkg-config give words
"$cc" $cflags "$consumers/main.c" $(pkg-config --cflags --libs bloomkit_core) \
  -o "$work/pc-core" || fail "pkg-config bloomkit_core consumer build"
"$work/pc-core" || fail "pkg-config bloomkit_core consumer run"
[ "$(needed "$work/pc-core" | grep -o 'libbloomkit[^ ]*' | tr '\n' ' ')" = "libbloomkit_core.so.2 " ] ||
  fail "the core consumer needs $(needed "$work/pc-core")"
# shellcheck disable=SC2046,SC2086
"$cc" $cflags "$consumers/fbf_main.c" -Wl,--as-needed \
  $(pkg-config --cflags --libs bloomkit) -o "$work/pc-fbf" ||
  fail "pkg-config bloomkit consumer build"
"$work/pc-fbf" || fail "pkg-config bloomkit consumer run"

step "fully static consumer via pkg-config --static"
# shellcheck disable=SC2046,SC2086
"$cc" $cflags -static "$consumers/fbf_main.c" \
  $(pkg-config --static --cflags --libs bloomkit_fbf) -o "$work/pc-static" ||
  fail "pkg-config --static bloomkit_fbf consumer build"
[ -z "$(needed "$work/pc-static")" ] ||
  fail "the static consumer needs $(needed "$work/pc-static")"
"$work/pc-static" || fail "pkg-config --static consumer run"

for kind in shared static; do
  step "find_package(bloomkit COMPONENTS fbf), $kind (installed -dev)"
  shared=ON
  [ "$kind" = static ] && shared=OFF
  b=$work/cmake-$kind
  if ! cmake -S "$consumers" -B "$b" -DBK_CONSUMER_COMPONENT=fbf \
    -DBK_CONSUMER_KIND=$kind -Dbloomkit_SHARED_LIBS=$shared \
    >"$work/cmake-$kind.log" 2>&1 || ! cmake --build "$b" >>"$work/cmake-$kind.log" 2>&1; then
    cat "$work/cmake-$kind.log" >&2
    fail "find_package consumer ($kind)"
  fi
  "$b/consumer" || fail "find_package consumer ($kind) run"
  got=$(needed "$b/consumer" | grep -o 'libbloomkit[^ ]*' | tr '\n' ' ' || true)
  if [ "$kind" = shared ]; then
    [ "$got" = "libbloomkit_fbf.so.2 " ] || fail "shared consumer needs '$got'"
  else
    [ -z "$got" ] || fail "static consumer needs '$got'"
  fi
done

step "the bloomkit command"
# The command prints the upstream version: the Debian one without a
# pre-release suffix (0.1.1~dev1 is a build of 0.1.1 before its release).
[ "$(bloomkit --version)" = "bloomkit ${version%%~*}" ] ||
  fail "bloomkit --version says '$(bloomkit --version)'"

step "python3-bloomkit: import bloomkit with /usr/bin/python3 (from $work)"
readelf -d "$pyext" | grep -Eq 'R(UN)?PATH' && fail "$pyext has a run path"
[ "$(needed "$pyext" | grep -o 'libbloomkit[^ ]*' | tr '\n' ' ')" = \
  "libbloomkit_bloomclock.so.2 libbloomkit_cbf.so.2 libbloomkit_core.so.2 libbloomkit_fbf.so.2 libbloomkit_kbf.so.2 " ] ||
  fail "$pyext needs $(needed "$pyext")"
# -I: no PYTHONPATH, no user site, not the current directory.
(cd "$work" && /usr/bin/python3 -I - "$pydir" "$libdir" "${version%%~*}") <<'EOF' ||
import os
import pickle
import sys

pydir, libdir, version = sys.argv[1:]
import bloomkit  # noqa: E402

assert os.path.dirname(bloomkit.__file__) == pydir, bloomkit.__file__
assert bloomkit.library_version == version, bloomkit.library_version
with open("/proc/self/maps") as f:
    libs = sorted({line.split()[-1] for line in f if "/libbloomkit_" in line})
assert len(libs) == 5 and all(os.path.dirname(p) == libdir for p in libs), libs
bf = bloomkit.BloomFilter(10_000, 0.01, seed=3)
keys = [f"key-{i}" for i in range(1000)]
bf.update(keys)
assert all(k in bf for k in keys)
for again in (bloomkit.BloomFilter.from_bytes(bf.to_bytes()),
              pickle.loads(pickle.dumps(bf))):
    assert again.to_bytes() == bf.to_bytes() and all(k in again for k in keys)
print(f"    {bloomkit.__file__}: bloomkit {version}, round trip OK")
EOF
  fail "import bloomkit from python3-bloomkit"

echo "package test: OK ($(cd "$work" && ls ./*.deb | tr '\n' ' '))"
