#!/usr/bin/env bash
# `graph import` of a NeurIPS 2020 workload writes workload JSON, never a binary
# graph: an output not named .json is refused, naming -o, and nothing is written.
#   bash workload_output.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
SRC=${2:?source dir}
W="$SRC/tests/fixtures/dnn-partitioning/bert24_inference.json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

rc=0
"$PLACER" graph import "$W" -o "$work/wl.bin" >/dev/null 2>"$work/err.txt" || rc=$?
[ "$rc" = 2 ] || fail "graph import of a workload to wl.bin: exit $rc"
grep -q -- "-o $work/wl.bin: a workload is written as workload JSON; name the output .json" "$work/err.txt" ||
  fail "graph import of a workload to wl.bin: $(cat "$work/err.txt")"
[ -e "$work/wl.bin" ] && fail "a refused -o wl.bin was still written"
"$PLACER" graph import "$W" -o "$work/wl.json" >/dev/null || fail "graph import of a workload to wl.json"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "workload_output: all checks passed"
