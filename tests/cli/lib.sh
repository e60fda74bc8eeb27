# SPDX-License-Identifier: MIT
#
# Sourced by every shell test of the `bloomkit` command (tests/cli/*.sh)
# as `. "$(dirname "$0")/lib.sh"`, with the command's path as the test's
# first argument. It sets BK (that path), TMP (a scratch directory removed
# on exit), ERR (the stderr file of the case being checked, "$TMP/err";
# a test may point it elsewhere) and CASE (the case's name, for messages),
# and gives: fail MESSAGE (count a failure, with the case and its stderr);
# expect STATUS TEXT ARGS... (run `bloomkit ARGS...`: the exit status is
# STATUS, stderr contains TEXT, and a usage error (2) writes nothing to
# stdout and no C source text to stderr); is_png FILE; and finish MESSAGE
# (the test's last line: exit 1 after counting the failures, or say
# MESSAGE).
set -u
BK=${1:?usage: $0 path/to/bloomkit}
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
failures=0
ERR="$TMP/err"
CASE=
# A usage error returns at once; a case that runs (say, a huge count that
# was not refused) is cut off rather than left to hang the test.
LIMIT=
command -v timeout >/dev/null 2>&1 && LIMIT="timeout 20"

fail() {
  echo "FAIL: $CASE: $*"
  [ -s "$ERR" ] && echo "  stderr: $(head -c 600 "$ERR")"
  failures=$((failures + 1))
}

# expect STATUS 'text stderr must contain' args...
expect() {
  want_status=$1
  want_text=$2
  shift 2
  CASE="$*"
  $LIMIT "$BK" "$@" >"$TMP/out" 2>"$TMP/err"
  status=$?
  [ "$status" -eq 124 ] && [ -n "$LIMIT" ] && fail "still running after 20 s"
  [ "$status" -eq "$want_status" ] || fail "exit status $status, expected $want_status"
  grep -qF -- "$want_text" "$TMP/err" || fail "stderr lacks: $want_text"
  if [ "$want_status" -eq 2 ]; then
    [ -s "$TMP/out" ] && fail "wrote to stdout on a usage error"
    # Internal names: bk_<something>( or ->, as the old TRY_BK printed.
    grep -qE 'bk_[a-z_]+\(|->' "$TMP/err" && fail "stderr shows source text"
  fi
  return 0
}

# is_png FILE: FILE starts with the PNG signature.
is_png() {
  sig=$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')
  [ "$sig" = 89504e470d0a1a0a ]
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "$1"
}
