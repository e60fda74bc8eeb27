#!/bin/sh
# SPDX-License-Identifier: MIT
# Install bloomkit's build dependencies from Debian's archive, only those that
# are missing, and redismodule.h (below). Prints nothing and changes nothing
# when everything is present.
set -eu

# debhelper, dpkg-dev, lintian: the Debian package test (tests/package);
# abigail-tools: the ABI check (scripts/abi-check.sh); gnuplot-nox: the
# experiment commands' --plot (docs/figures/); libbloom-dev: the peer row
# of `bloomkit compare`; redis-server, redis-tools, libhiredis-dev: the
# Redis module's tests and benchmark (src/redis, tests/redis, bench/redis);
# memcached, libmemcached-dev: the kBF's comparison against a real memcached
# (`bloomkit kbf-experiments --memcached`).
# valgrind: the README's examples run under it by the test command
# (tests/run_example.sh). python3-dev, python3-pytest, python3-hypothesis:
# the Python binding (python/) and its tests (ctest python_binding);
# python3-numpy: its batch calls over numpy arrays (optional at run time,
# the tests that need it are skipped without it); python3-venv,
# python3-setuptools, python3-wheel, python3-pip: `pip install
# --no-build-isolation --no-index ./python` offline, in a venv or
# system-wide (ctest python_pip_install); dh-python, python3-all-dev: the
# Debian package python3-bloomkit (tests/package); python3-flor: the
# Python benchmark's peer (bench/); mypy: its stubtest checks the type
# stubs (python/bloomkit/__init__.pyi) against the module (test_stubs.py).
PKGS="build-essential cmake pkg-config clang libxxhash-dev libmurmurhash-dev \
libbenchmark-dev libcmocka-dev debhelper dpkg-dev lintian abigail-tools \
gnuplot-nox libbloom-dev redis-server redis-tools libhiredis-dev memcached \
libmemcached-dev valgrind python3-dev python3-pytest python3-hypothesis \
python3-numpy python3-venv python3-setuptools python3-wheel python3-pip \
dh-python python3-all-dev python3-flor mypy"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# redismodule.h (the Redis module API, src/redis) is in no Debian binary
# package: take it from the source package of the installed redis-server,
# from Debian's archive only, never vendored or committed. It is fetched
# once per redis version into a cache outside the checkout
# (${XDG_CACHE_HOME:-~/.cache}/bloomkit/redis-<version>/redismodule.h) and
# copied from there into build-deps/redis (ignored by git, like every build
# tree), where CMake looks for it; a fresh clone copies, it does not fetch.
# A function, so whatever follows it in this script still runs when there
# is nothing to fetch.
fetch_redismodule_h() {
  root=$(cd "$(dirname "$0")/.." && pwd)
  redis_dir="$root/build-deps/redis"
  if [ -f "$redis_dir/redismodule.h" ] ||
    ! redis_version=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null); then
    return 0
  fi
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/bloomkit/redis-${redis_version#*:}"
  if [ ! -f "$cache/redismodule.h" ]; then
    download_redismodule_h
  fi
  mkdir -p "$redis_dir"
  cp "$cache/redismodule.h" "$redis_dir/redismodule.h.tmp"
  mv "$redis_dir/redismodule.h.tmp" "$redis_dir/redismodule.h"
}

# Download the source package of redis $redis_version into a scratch
# directory and keep only src/redismodule.h, in $cache.
download_redismodule_h() {
  # apt-get source needs a deb-src entry beside the existing binary source:
  # a copy of the deb822 .sources file (Debian 12) or of the one-line
  # sources.list entries with the type changed.
  if ! grep -Eqs '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list \
    /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
    echo "bootstrap: adding deb-src entries for the redis source package"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        $SUDO tee /etc/apt/sources.list.d/bloomkit-deb-src.sources >/dev/null
    else
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list |
        $SUDO tee /etc/apt/sources.list.d/bloomkit-deb-src.list >/dev/null
    fi
    $SUDO apt-get update -qq
  fi
  echo "bootstrap: fetching redismodule.h from the redis $redis_version source package (once)"
  mkdir -p "$cache"
  scratch=$(mktemp -d "$cache/download.XXXXXX")
  (cd "$scratch" &&
    apt-get source -qq --download-only "redis=$redis_version" 2>&1 |
    grep -v 'unsandboxed' || true)
  orig=$(ls "$scratch"/redis_*.orig.tar.* 2>/dev/null | head -n 1)
  if [ -z "$orig" ]; then
    rm -rf "$scratch"
    echo "bootstrap: could not download the redis $redis_version source package" >&2
    exit 1
  fi
  tar -xOf "$orig" --wildcards '*/src/redismodule.h' >"$scratch/redismodule.h"
  mv "$scratch/redismodule.h" "$cache/redismodule.h"
  rm -rf "$scratch"
}
fetch_redismodule_h
