#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ABI check (docs/design/build.md, section 7): compares each built shared library
# with its baseline abi/<soname>.xml (written by abidw at the last release)
# using abidiff from abigail-tools, and fails on an incompatible change that
# comes without a soname bump. Per library, by its SONAME:
#   - baseline abi/<soname>.xml exists: abidiff it against the library.
#     Removed or changed functions or variables (a changed parameter, a
#     struct that grew, a renumbered enumerator, ...) are incompatible: FAIL.
#     Only additions (new functions, an enumerator appended): pass, and say
#     the baseline should be regenerated at the next release.
#   - no baseline for this soname but one for an older soname of the same
#     library: the soname was bumped, incompatible changes are allowed: pass.
#   - no baseline at all: a new library (e.g. a component added since the
#     last release): "new library, no baseline", pass.
# bk__* internals are suppressed (abi/suppressions.ini). The libraries need
# debug information (-g: RelWithDebInfo or Debug), which abidw reads types
# from.
#
# Usage: scripts/abi-check.sh LIBDIR           check LIBDIR/libbloomkit_*.so.*
#        scripts/abi-check.sh --update LIBDIR  write the baselines (a release)
# Env:   BK_ABI_DIR      baselines and suppressions (default <repo>/abi)
#        BK_ABI_HEADERS  public headers (default <repo>/include/bloomkit)
#        BK_ABI_LIBS     file name pattern (default 'libbloomkit_*.so.*')
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
abi_dir=${BK_ABI_DIR:-$root/abi}
headers=${BK_ABI_HEADERS:-$root/include/bloomkit}
pattern=${BK_ABI_LIBS:-libbloomkit_*.so.*}

update=0
if [ "${1:-}" = --update ]; then
  update=1
  shift
fi
[ $# -eq 1 ] || {
  echo "usage: $0 [--update] LIBDIR" >&2
  exit 2
}
libdir=$1

for tool in abidw abidiff readelf; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "abi: $tool not found (apt-get install abigail-tools binutils)" >&2
    exit 1
  }
done

suppr=""
[ -f "$abi_dir/suppressions.ini" ] && suppr="--suppressions $abi_dir/suppressions.ini"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# dump LIB OUT: the library's ABI as XML, public types only, no file
# locations or build paths (a baseline must not depend on the checkout).
dump() {
  abidw --headers-dir "$headers" --drop-private-types --no-corpus-path \
    --no-show-locs --no-comp-dir-path --out-file "$2.raw" "$1"
  # Translation units keep their last two path components (core/bloom.c).
  sed -E "s|(<abi-instr [^>]*path=')[^']*/([^/']+/[^/']+')|\1\2|" "$2.raw" >"$2"
  rm -f "$2.raw"
}

libs=$(find "$libdir" -maxdepth 1 -type f -name "$pattern" | sort)
[ -n "$libs" ] || {
  echo "abi: no $pattern in $libdir (a shared build?)" >&2
  exit 1
}

status=0
for lib in $libs; do
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
  [ -n "$soname" ] || {
    echo "abi: $lib has no SONAME" >&2
    exit 1
  }
  readelf -S "$lib" | grep -q '\.debug_info' || {
    echo "abi: $lib has no debug information; build with -g (RelWithDebInfo)" >&2
    exit 1
  }
  stem=${soname%.so.*}
  baseline=$abi_dir/$soname.xml

  if [ "$update" = 1 ]; then
    mkdir -p "$abi_dir"
    dump "$lib" "$baseline"
    echo "abi: $soname: baseline written to ${baseline#"$root"/}"
    for old in "$abi_dir/$stem".so.*.xml; do
      [ -f "$old" ] && [ "$old" != "$baseline" ] &&
        echo "abi: $soname: ${old#"$root"/} is an older soname's baseline; git rm it"
    done
    continue
  fi

  if [ ! -f "$baseline" ]; then
    older=""
    for old in "$abi_dir/$stem".so.*.xml; do
      [ -f "$old" ] && older="$older $(basename "$old" .xml)"
    done
    if [ -n "$older" ]; then
      echo "abi: $soname: soname bumped (baseline for:$older); incompatible changes allowed; write its baseline at the release (scripts/abi-check.sh --update)"
    else
      echo "abi: $soname: new library, no baseline; add ${baseline#"$root"/} at the next release (scripts/abi-check.sh --update)"
    fi
    continue
  fi

  dump "$lib" "$tmp/$soname.xml"
  rc=0
  # shellcheck disable=SC2086  # $suppr is two words or none
  abidiff $suppr "$baseline" "$tmp/$soname.xml" >"$tmp/$soname.diff" 2>&1 || rc=$?
  # abidiff's status is a bit field: 1 error, 2 usage error, 4 the ABI
  # changed, 8 an incompatible change. It sets 8 only for removed symbols;
  # a grown struct or a changed parameter type is only 4, so the summary
  # lines decide: anything removed or changed is incompatible.
  if [ $((rc & 3)) -ne 0 ]; then
    cat "$tmp/$soname.diff" >&2
    echo "abi: $soname: abidiff failed (status $rc)" >&2
    exit 1
  fi
  broken=$(grep -E 'summary:.*(^|[^0-9])[1-9][0-9]* (Removed|Changed)' \
    "$tmp/$soname.diff" || true)
  if [ $((rc & 8)) -ne 0 ] || [ -n "$broken" ]; then
    cat "$tmp/$soname.diff"
    echo "abi: $soname: INCOMPATIBLE with ${baseline#"$root"/} and the soname was not bumped: bump BK_SOVERSION in CMakeLists.txt (docs/design/build.md, section 7) or restore the interface" >&2
    status=1
  elif [ $((rc & 4)) -ne 0 ]; then
    added=$(grep 'summary:' "$tmp/$soname.diff" | grep -oE '[1-9][0-9]* Added [a-z]+' |
      paste -sd, - | sed 's/,/, /g')
    echo "abi: $soname: compatible additions (${added:-harmless changes}); regenerate the baseline at the next release"
  else
    echo "abi: $soname: no ABI change against ${baseline#"$root"/}"
  fi
done
exit $status
