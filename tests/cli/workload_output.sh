#!/usr/bin/env bash
# `graph import` of a NeurIPS 2020 workload writes workload JSON, never a binary
# graph: an output not named .json is refused, naming -o, and nothing is written.
#   bash workload_output.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
SRC=${2:?source dir}
W="$SRC/tests/fixtures/dnn-partitioning/bert24_inference.json"
# shellcheck source=lib/checks.sh
source "$(dirname "$0")/lib/checks.sh"

rc=0
"$PLACER" graph import "$W" -o "$work/wl.bin" >/dev/null 2>"$work/err.txt" || rc=$?
[ "$rc" = 2 ] || fail "graph import of a workload to wl.bin: exit $rc"
grep -q -- "-o $work/wl.bin: a workload is written as workload JSON; name the output .json" "$work/err.txt" ||
  fail "graph import of a workload to wl.bin: $(cat "$work/err.txt")"
[ -e "$work/wl.bin" ] && fail "a refused -o wl.bin was still written"
"$PLACER" graph import "$W" -o "$work/wl.json" >/dev/null || fail "graph import of a workload to wl.json"

finish workload_output
