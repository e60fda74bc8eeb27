#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs one example program (examples/) as a test: it must exit 0 and print
# exactly its expected output (examples/NAME.out). With --valgrind VALGRIND
# it runs under valgrind with full leak checking, and any memory error or
# leak fails the test too.
#
# Usage: tests/run_example.sh [--valgrind VALGRIND] PROGRAM EXPECTED_OUTPUT
set -eu

valgrind=""
if [ "${1:-}" = --valgrind ]; then
  valgrind="$2 -q --leak-check=full --error-exitcode=1"
  shift 2
fi
program=$1
expected=$2
out=$(mktemp "${TMPDIR:-/tmp}/bloomkit-example.XXXXXX")
trap 'rm -f "$out"' EXIT

# shellcheck disable=SC2086  # valgrind and its options are words
if ! $valgrind "$program" >"$out"; then
  echo "$program${valgrind:+ (under valgrind)} failed" >&2
  cat "$out"
  exit 1
fi
if ! diff -u "$expected" "$out"; then
  echo "$program printed the lines marked + above, not those of $expected" >&2
  exit 1
fi
cat "$out"
