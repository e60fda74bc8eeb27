#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Keeps README.md's C examples the same as the programs in examples/ that the
# test command builds (-Werror) and runs (under valgrind when installed). A
# line `<!-- example: examples/NAME.c -->` in README.md names the file the
# fenced ```c block right after it shows; the block must be that file from
# its first #include to its end, line for line (the SPDX line and the
# opening comment are left out). Every example whose opening comment names
# this script must have such a marker. Prints a diff for each difference and
# exits 1; exit 0 when every block matches.
#
# Usage: tests/readme_examples.sh [ROOT]   (ROOT: the clone, default ..)
set -eu

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
readme=$root/README.md
work=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0

files=$(sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$readme")
if [ -z "$files" ]; then
  echo "README.md has no <!-- example: FILE --> line" >&2
  exit 1
fi

for file in $files; do
  if [ ! -f "$root/$file" ]; then
    echo "README.md shows $file, which does not exist" >&2
    status=1
    continue
  fi
  # The block: the lines between the fence that follows the marker (blank
  # lines may separate them) and the closing fence.
  if ! awk -v marker="<!-- example: $file -->" '
      state == 0 && $0 == marker { state = 1; next }
      state == 1 && $0 == "```c" { state = 2; next }
      state == 1 && NF { exit 1 }
      state == 2 && $0 == "```" { state = 3; exit 0 }
      state == 2 { print }
      END { if (state != 3) exit 1 }' "$readme" >"$work/shown"; then
    echo "README.md: no \`\`\`c block right after the marker of $file" >&2
    status=1
    continue
  fi
  sed -n '/^#include/,$p' "$root/$file" >"$work/file"
  if ! diff -u "$work/file" "$work/shown" >"$work/diff"; then
    echo "README.md's block for $file differs from the file (- file, + README):" >&2
    cat "$work/diff" >&2
    status=1
  fi
done

for path in "$root"/examples/*.c; do
  file=examples/${path##*/}
  if grep -q 'tests/readme_examples.sh' "$path" &&
    ! printf '%s\n' "$files" | grep -qx "$file"; then
    echo "$file says README.md shows it, but README.md has no marker for it" >&2
    status=1
  fi
done

if [ "$status" = 0 ]; then
  echo "README.md shows $(printf "%s\n" "$files" | wc -l) example(s) as they are"
fi
exit "$status"
