# Sourced by the CLI tests that count their failures and report them at the end: a work folder
# ($work) removed at exit, `fail MESSAGE` (counts and prints), and `finish NAME` (exit 1 with the
# count when a check failed, else "NAME: all checks passed").
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "$1: all checks passed"
}
