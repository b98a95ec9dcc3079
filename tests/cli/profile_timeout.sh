#!/usr/bin/env bash
# placer profile --timeout bounds each profiling step (it had no limit: a step ran as long as it took), and fidelity's
# --timeout reaches its profiles as well as its measurements.
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Steps of a few ms on the 2-core VM: 1 ms is past them, 120 s is not.
"$PLACER" graph build mlp --opt batch=256 --opt input=512 --opt width=512 --opt layers=4 -o "$TMP/g.json" >/dev/null
set +e
"$PLACER" profile --graph "$TMP/g.json" --devices cpu:2 -o "$TMP/p.json" --timeout 0.001 > "$TMP/out.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "profile --timeout 0.001 passed: $(cat "$TMP/out.txt")"
grep -q "timeout: step ran past the time limit of 0.001" "$TMP/out.txt" || fail "no timeout named: $(cat "$TMP/out.txt")"
[ ! -e "$TMP/p.json" ] || fail "a profile was written"
"$PLACER" profile --graph "$TMP/g.json" --devices cpu:2 -o "$TMP/p.json" > "$TMP/out.txt" 2>&1 || fail "$(cat "$TMP/out.txt")"
[ -s "$TMP/p.json" ] || fail "no profile written"

set +e
"$PLACER" fidelity --graph "$TMP/g.json" --devices cpu:2 --placements 2 --rounds 1 --timeout 0.001 -o "$TMP/fid" \
  > "$TMP/fid.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "fidelity --timeout 0.001 passed: $(cat "$TMP/fid.txt")"
grep -q "profile on cpu:.*timeout" "$TMP/fid.txt" || fail "fidelity's profile was not bounded: $(cat "$TMP/fid.txt")"
echo OK
