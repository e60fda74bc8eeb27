#!/bin/sh
# SPDX-License-Identifier: MIT
# Install bloomkit's build dependencies from Debian's archive, only those that
# are missing. Fast (one dpkg query) when everything is present.
set -eu

# debhelper, dpkg-dev, lintian: the Debian package test (tests/package);
# abigail-tools: the ABI check (scripts/abi-check.sh); gnuplot-nox: the
# experiment commands' --plot (docs/figures/); libbloom-dev: the peer row
# of `bloomkit compare`; memcached, libmemcached-dev: the kBF's comparison
# against a real memcached (`bloomkit kbf-experiments --memcached`).
PKGS="build-essential cmake pkg-config clang libxxhash-dev libmurmurhash-dev \
libbenchmark-dev libcmocka-dev debhelper dpkg-dev lintian abigail-tools \
gnuplot-nox libbloom-dev memcached libmemcached-dev"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  exit 0
fi

echo "bootstrap: installing$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
