#!/usr/bin/env bash
# placer baseline's refusals and row statuses: --measure on devices that cannot run here is refused before any
# placer runs; the measurement protocol's options without --measure, and --microbatches/--schedule without the
# pipeline objective, are refused by name; each row's status is in the JSON and the CSV.
set -euo pipefail
PLACER="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" graph build mlp -o "$TMP/g.json" > /dev/null || fail "graph build"

source "$SRC/tests/cli/lib/refusal.sh"

# --measure on a device this machine does not have: refused up front (each row said "unavailable", exit 0).
expect_refusal "--measure on cuda:99" "--measure: cannot run the devices of" \
  baseline --graph "$TMP/g.json" --devices cpu,cuda:99 --method single,m_etf --measure
! grep -q "placing with" "$TMP/err" || fail "--measure on cuda:99: a placer ran before the refusal: $(cat "$TMP/err")"

# The measurement protocol's options are --measure's: without it they were ignored.
for opt in "--steps 3" "--max-steps 3" "--target 0.1" "--warmup 1" "--min-time 1" "--timeout 5" "--rewarm 1"; do
  # shellcheck disable=SC2086
  expect_refusal "$opt without --measure" "${opt%% *}: sets --measure's protocol" \
    baseline --graph "$TMP/g.json" --cluster k80x4 --method single $opt
done
# --microbatches and --schedule are the pipeline objective's.
expect_refusal "--microbatches under step" "--microbatches: only the pipeline objective takes it" \
  baseline --graph "$TMP/g.json" --cluster k80x4 --method single --microbatches 8
expect_refusal "--schedule under step" "--schedule: only the pipeline objective takes it" \
  baseline --graph "$TMP/g.json" --cluster k80x4 --method single --objective step --schedule gpipe
"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single --objective pipeline --microbatches 2 \
  > /dev/null || fail "--microbatches under --objective pipeline"

# Each row's status in the JSON and the CSV: its simulated step's ("ok"; "oom" and the like for a placed row whose
# step fails, marked "(oom)" in the table and not feasible), or "unplaced". On devices that hold 85% of what
# `single` puts on one, single places nothing and round_robin's step runs.
"$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --method single --json - > "$TMP/fit.json"
python3 - "$TMP/fit.json" "$TMP/small.json" <<'PY'
import json, sys
peak = max(json.load(open(sys.argv[1]))["methods"][0]["peak_bytes"])
dev = lambda i: {"name": f"cpu:{i}", "kind": "cpu", "physical": "", "memory_bytes": int(peak * 0.85),
                 "peak_flops": 1e11, "mem_bandwidth": 1e10, "op_overhead_s": 1e-6, "threads": 1}
json.dump({"format": "placer.cluster", "version": 1, "name": "small", "devices": [dev(0), dev(1)], "links": [],
           "default_link": {"latency_s": 1e-5, "bandwidth_Bps": 1e9}}, open(sys.argv[2], "w"))
PY
"$PLACER" baseline --graph "$TMP/g.json" --cluster "$TMP/small.json" --method single,round_robin \
  --json "$TMP/b.json" --csv "$TMP/b.csv" > "$TMP/b.txt" || fail "baseline on a small cluster: $(cat "$TMP/b.txt")"
python3 - "$TMP/b.json" "$TMP/b.csv" <<'PY' || fail "baseline JSON/CSV statuses"
import csv, json, sys
rows = {m["method"]: m for m in json.load(open(sys.argv[1]))["methods"]}
assert rows["single"]["feasible"] is False and rows["single"]["status"] == "unplaced", rows["single"]
assert rows["round_robin"]["feasible"] is True and rows["round_robin"]["status"] == "ok", rows["round_robin"]
csv_rows = {r["method"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert (csv_rows["single"]["feasible"], csv_rows["single"]["status"]) == ("0", "unplaced"), csv_rows["single"]
assert (csv_rows["round_robin"]["feasible"], csv_rows["round_robin"]["status"]) == ("1", "ok"), csv_rows
PY
# Each placer's note once under the table, named once ("single: single: all ops on cuda:0" before).
"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single,m_etf,expert > "$TMP/notes.txt"
grep -q "^single: all ops on cuda:" "$TMP/notes.txt" || fail "single's note: $(cat "$TMP/notes.txt")"
! grep -q "^\([a-z_]*\): \1: " "$TMP/notes.txt" || fail "a note named twice: $(cat "$TMP/notes.txt")"
# --measure's rows print each interval at the level it reaches, as `placer measure` does (a few steps reach no 95%:
# [min, max] and what it covers), never without one; the JSON has it too.
"$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --method single,round_robin --measure --steps 2 --max-steps 2 \
  --warmup 1 --json "$TMP/m.json" > "$TMP/m.txt" 2> /dev/null || fail "baseline --measure: $(cat "$TMP/m.txt")"
python3 - "$TMP/m.json" "$TMP/m.txt" <<'PY' || fail "baseline --measure: intervals without their level: $(cat "$TMP/m.txt")"
import json, re, sys
rows = {m["method"]: m for m in json.load(open(sys.argv[1]))["methods"]}
text = open(sys.argv[2]).read()
for name, row in rows.items():
    level = row["ci_level"]
    assert 0 <= level < 0.95, (name, level)  # 2 steps: [min, max] covers 50%
    label = "%.3g%%" % (100 * level)
    line = next(l for l in text.splitlines() if l.startswith(name + " "))
    assert re.search(r"\[[0-9.]+, [0-9.]+\] \(" + re.escape(label) + r"\)", line), (line, label)
PY
echo "baseline_cli: ok"
