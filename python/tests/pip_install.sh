#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The Python package installed the way python/README.md (section Install)
# says, checked from outside the checkout (ctest python_pip_install):
#   1. `cmake --install` the build tree into a temporary prefix;
#   2. a venv made by `python3 -m venv --system-site-packages`;
#   3. `pip install --no-build-isolation --no-index <python/>` with
#      PKG_CONFIG_PATH at the prefix's pkgconfig directory, from a copy of
#      python/ beside the top-level CMakeLists.txt (the version's source):
#      setuptools builds in the source directory (build/, *.egg-info), and a
#      test must not write into the checkout;
#   4. from a directory outside both, with no PYTHONPATH or
#      LD_LIBRARY_PATH: bloomkit is the venv's copy, its extension loads
#      libbloomkit_* from the prefix (setup.py's run path), the installed
#      version is the project's, and a filter round trip works;
#   5. the pytest suite python/tests against that installed package, when
#      pytest and hypothesis are there.
# Exits 77 (ctest: skipped) with the reason when the venv or setuptools and
# wheel are missing (python3-venv, python3-setuptools, python3-wheel).
# Everything lives in one temporary directory, removed on exit.
#
# Usage: pip_install.sh <build-dir> <source-root> <python3> <cmake> <version>
set -eu

build=$1 root=$2 py=$3 cmake=$4 version=$5

skip() {
  echo "python_pip_install: SKIPPED: $*"
  exit 77
}
fail() {
  echo "python_pip_install FAILED: $*" >&2
  exit 1
}
step() { echo "==> $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
unset PYTHONPATH LD_LIBRARY_PATH PYTHONHOME
export PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

step "cmake --install into $tmp/prefix"
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install"; }
pc=$(find "$tmp/prefix" -path '*/pkgconfig/bloomkit.pc' | head -n 1)
[ -n "$pc" ] || fail "the install has no pkgconfig/bloomkit.pc"
pcdir=$(dirname "$pc")

step "venv: $py -m venv --system-site-packages"
venv=$tmp/venv
"$py" -m venv --system-site-packages "$venv" >"$tmp/venv.log" 2>&1 ||
  skip "$py cannot make a venv (python3-venv missing?): $(tail -n 2 "$tmp/venv.log" | tr '\n' ' ')"
"$venv/bin/python" -c 'import setuptools, wheel' 2>/dev/null ||
  skip "no setuptools or wheel in the venv (python3-setuptools, python3-wheel)"

step "copy python/ and CMakeLists.txt to $tmp/src"
mkdir -p "$tmp/src"
tar -C "$root" --exclude=python/build --exclude='python/*.egg-info' \
  --exclude=__pycache__ --exclude=.hypothesis -cf - CMakeLists.txt python |
  tar -C "$tmp/src" -xf -

step "PKG_CONFIG_PATH=$pcdir pip install --no-build-isolation --no-index"
mkdir -p "$tmp/work"
cd "$tmp/work"
t0=$(date +%s)
PKG_CONFIG_PATH=$pcdir "$venv/bin/python" -m pip install --no-build-isolation \
  --no-index -v "$tmp/src/python" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log" >&2; fail "pip install"; }
grep 'bloomkit setup.py:' "$tmp/pip.log" | sed 's/^ */    /'
echo "    installed in $(($(date +%s) - t0)) s"

step "smoke test of the installed package (from $tmp/work)"
"$venv/bin/python" - "$venv" "$tmp/prefix" "$version" <<'EOF'
import importlib.metadata
import os
import pickle
import sys

venv, prefix, version = (os.path.realpath(a) if i < 2 else a
                         for i, a in enumerate(sys.argv[1:]))
import bloomkit  # noqa: E402
from bloomkit import _bloomkit  # noqa: E402

for mod in (bloomkit, _bloomkit):
    where = os.path.realpath(mod.__file__)
    assert where.startswith(venv + os.sep), f"{mod.__name__} from {where}, not the venv"
    print(f"    {mod.__name__}: {where}")
# Which libbloomkit_* the extension loaded: every one from the prefix.
with open("/proc/self/maps") as f:
    libs = sorted({os.path.realpath(line.split()[-1]) for line in f
                   if "/libbloomkit_" in line})
assert len(libs) == 5 and all(p.startswith(prefix + os.sep) for p in libs), libs
print("    loaded " + " ".join(os.path.basename(p) for p in libs) + " from the prefix")
assert importlib.metadata.version("bloomkit") == version, importlib.metadata.version("bloomkit")
assert bloomkit.library_version == version, bloomkit.library_version

bf = bloomkit.BloomFilter(10_000, 0.01, layout="split_block", seed=7)
keys = [f"key-{i}".encode() for i in range(1000)]
bf.update(keys)
assert all(k in bf for k in keys)
for again in (bloomkit.BloomFilter.from_bytes(bf.to_bytes()),
              pickle.loads(pickle.dumps(bf))):
    assert again.to_bytes() == bf.to_bytes() and all(k in again for k in keys)
fp = sum(f"other-{i}" in bf for i in range(10_000))
assert fp < 300, fp  # 1 % of 10 000 expected; 3 % is far outside chance
try:
    bloomkit.BloomFilter.from_bytes(b"\0" * 64)
except bloomkit.Error:
    pass
else:
    raise AssertionError("from_bytes accepted zeros")
print(f"    bloomkit {version}: round trip OK, {fp} false positives in 10000")
EOF

if "$venv/bin/python" -c 'import pytest, hypothesis' 2>/dev/null; then
  step "pytest $root/python/tests against the installed package"
  t0=$(date +%s)
  HYPOTHESIS_STORAGE_DIRECTORY=$tmp/hypothesis "$venv/bin/python" -m pytest \
    -q -p no:cacheprovider "$root/python/tests" ||
    fail "pytest against the installed package"
  echo "    pytest: $(($(date +%s) - t0)) s"
else
  echo "==> pytest or hypothesis missing: the suite runs only in python_binding"
fi
echo "python_pip_install: OK"
