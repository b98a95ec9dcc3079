#!/usr/bin/env bash
# placer fidelity --objective pipeline (issue 27): each placement is measured
# and simulated as one pipelined mini-batch; the report names the objective,
# M and the schedule, and has one row per placement with both times.
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" graph build mlp --opt batch=4 --opt input=16 --opt width=16 --opt classes=3 --opt layers=3 -o "$TMP/g.json" >/dev/null
"$PLACER" fidelity --graph "$TMP/g.json" --devices cpu:2 --placements 3 --rounds 1 --steps 2 --warmup 1 \
  --max-steps 2 --repetitions 1 -o "$TMP/out" --objective pipeline --microbatches 2 --schedule gpipe \
  > "$TMP/stdout.txt" 2> "$TMP/stderr.txt" || { cat "$TMP/stderr.txt"; fail "fidelity --objective pipeline"; }
grep -q "(pipeline objective: 2 micro-batches, gpipe)" "$TMP/stdout.txt" || fail "summary: $(cat "$TMP/stdout.txt")"
grep -q "^Objective: pipeline, 2 micro-batches, gpipe" "$TMP/out/fidelity_mlp.md" || fail "markdown names no objective"
grep -q -- "--objective pipeline --microbatches 2 --schedule gpipe" "$TMP/out/fidelity_mlp.md" || fail "command line"
grep -q "mini-batch time (pipeline, 2 micro-batches, gpipe)" "$TMP/out/fidelity_mlp.svg" || fail "svg title"
[ "$(grep -c '^| [0-9]' "$TMP/out/fidelity_mlp.md")" -eq 3 ] || fail "expected 3 rows: $(cat "$TMP/out/fidelity_mlp.md")"
python3 - "$TMP/out/fidelity_mlp.json" "$TMP/g.json" <<'PY' || fail "report JSON"
import json, sys
r = json.load(open(sys.argv[1]))
g = json.load(open(sys.argv[2]))
base_ops = len(g["graph"]["ops"] if "graph" in g else g["ops"])
assert r["objective"] == "pipeline" and r["microbatches"] == 2 and r["schedule"] == "gpipe", r
assert r["ops"] > base_ops, (r["ops"], base_ops)  # the unrolled mini-batch ran
assert r["placements"] == 3 and len(r["points"]) == 3, r["points"]
assert all(p["measured_s"] > 0 and p["simulated_s"] > 0 for p in r["points"]), r["points"]
PY
# --replot keeps the objective.
rm "$TMP/out/fidelity_mlp.md"
"$PLACER" fidelity --replot "$TMP/out/fidelity_mlp.json" > /dev/null || fail "replot"
grep -q "^Objective: pipeline, 2 micro-batches, gpipe" "$TMP/out/fidelity_mlp.md" || fail "replot lost the objective"
# A bad schedule in a report names the field.
sed 's/"schedule": "gpipe"/"schedule": "zigzag"/' "$TMP/out/fidelity_mlp.json" > "$TMP/bad.json"
if "$PLACER" fidelity --replot "$TMP/bad.json" > /dev/null 2> "$TMP/err"; then fail "bad schedule accepted"; fi
grep -q "fidelity report: schedule: unknown schedule 'zigzag'" "$TMP/err" || fail "bad schedule message: $(cat "$TMP/err")"
echo "fidelity_pipeline: ok"
