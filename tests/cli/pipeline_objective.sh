#!/usr/bin/env bash
# --objective pipeline end to end: place, baseline, simulate, measure, graph pipeline (issue 27).
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" graph build mlp --opt layers=4 --opt width=256 --opt batch=32 -o "$TMP/g.json" > /dev/null || fail "graph build"

# place: the pipeline figures beside the mini-batch time.
"$PLACER" place --method expert --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/p.json" \
  --objective pipeline --microbatches 4 --schedule gpipe > "$TMP/place.out" || fail "place --objective pipeline"
grep -q "s per mini-batch" "$TMP/place.out" || fail "place: no mini-batch time"
grep -q "^pipeline      4 micro-batches, gpipe: .* per micro-batch in steady state, bubble" "$TMP/place.out" ||
  fail "place: no pipeline figures"
grep -q "^stage device     fwd ops  fwd ms/mb  bwd ms/mb    idle ms    warm-up    between  cool-down" "$TMP/place.out" ||
  fail "place: no stage report"
"$PLACER" place --method expert --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/s.json" > "$TMP/step.out"
grep -q "s per step" "$TMP/step.out" && ! grep -q "^pipeline" "$TMP/step.out" || fail "place: step output changed"

# simulate: --objective pipeline on the training graph = simulate on the unrolled graph.
"$PLACER" simulate --graph "$TMP/g.json" --placement "$TMP/p.json" --cluster k80x4 \
  --objective pipeline --microbatches 4 --schedule gpipe --json "$TMP/sim.json" > "$TMP/sim.out" || fail "simulate"
grep -q "^pipeline: 4 micro-batches, gpipe" "$TMP/sim.out" || fail "simulate: no pipeline line"
"$PLACER" graph pipeline "$TMP/g.json" "$TMP/u.json" --microbatches 4 --schedule gpipe > /dev/null || fail "graph pipeline"
"$PLACER" simulate --graph "$TMP/g.json" --placement "$TMP/p.json" --cluster k80x4 > "$TMP/plain.out"
python3 - "$TMP/g.json" "$TMP/u.json" "$TMP/p.json" "$TMP/up.json" <<'PY' || fail "expand placement"
import json, re, sys
u = json.load(open(sys.argv[2]))
p = json.load(open(sys.argv[3]))
ops = u["graph"]["ops"] if "graph" in u else u["ops"]
place = p["placement"] if "placement" in p else p
dev = dict(place)
out = {}
for op in ops:
    base = re.sub(r"@mb\d+(/acc\d+)?$", "", op["name"])
    out[op["name"]] = dev[base]
p2 = dict(p)
if "placement" in p: p2["placement"] = out
else: p2 = out
json.dump(p2, open(sys.argv[4], "w"))
PY
"$PLACER" simulate --graph "$TMP/u.json" --placement "$TMP/up.json" --cluster k80x4 --json "$TMP/usim.json" \
  > "$TMP/usim.out" || fail "simulate the unrolled graph"
grep -q "^pipeline: 4 micro-batches, gpipe" "$TMP/usim.out" || fail "simulate unrolled: no pipeline line"
python3 - "$TMP/sim.json" "$TMP/usim.json" <<'PY' || fail "simulate json"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["result"]["step_s"] == b["result"]["step_s"], (a["result"]["step_s"], b["result"]["step_s"])
f = a["pipeline"]
assert f["microbatches"] == 4 and f["schedule"] == "gpipe", f
assert 0 <= f["bubble_fraction"] < 1 and f["per_microbatch_s"] > 0 and f["minibatch_s"] == a["result"]["step_s"], f
assert a["lower_bound_s"] <= a["result"]["step_s"] * (1 + 1e-9)
assert len(a["result"]["devices"]) == 4 and all("peak_bytes" in d for d in a["result"]["devices"])
PY

# baseline: a mini-batch column, micro-batch and bubble columns, figures in the JSON.
"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single,expert,m_etf,dp --objective pipeline \
  --microbatches 8 --markdown --json "$TMP/b.json" --csv "$TMP/b.csv" > "$TMP/b.md" || fail "baseline --objective pipeline"
grep -q "pipeline objective: 8 micro-batches, 1f1b" "$TMP/b.md" || fail "baseline: objective not named"
grep -q "| method | simulated mini-batch (ms) | per micro-batch (ms) | bubble |" "$TMP/b.md" || fail "baseline header"
python3 - "$TMP/b.json" <<'PY' || fail "baseline json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["objective"] == "pipeline"
for m in j["methods"]:
    assert m["feasible"] and m["simulated_step_s"] >= j["lower_bound_s"] * (1 - 1e-9), m
    assert m["pipeline"]["microbatches"] == 8 and m["pipeline"]["schedule"] == "1f1b", m
PY
python3 - "$TMP/b.csv" <<'PY' || fail "baseline csv: no pipeline columns"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4, rows
for r in rows:
    assert r["microbatches"] == "8" and r["schedule"] == "1f1b", r
    assert float(r["per_microbatch_s"]) > 0 and 0 <= float(r["bubble_fraction"]) < 1, r
PY
"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single --json "$TMP/bs.json" > /dev/null
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert 'objective' not in j and 'pipeline' not in j['methods'][0]" \
  "$TMP/bs.json" || fail "baseline step json changed"

# measure: the unrolled mini-batch for real on cpu:2.
"$PLACER" place --method expert --graph "$TMP/g.json" --devices cpu:2 -o "$TMP/c.json" > /dev/null
"$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/c.json" --devices cpu:2 --objective pipeline \
  --microbatches 2 --warmup 1 --steps 3 --max-steps 3 --json "$TMP/m.json" > "$TMP/m.out" || fail "measure"
grep -q "^pipeline: 2 micro-batches, 1f1b" "$TMP/m.out" || fail "measure: no pipeline line"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['status']=='ok' and j['pipeline']['microbatches']==2" \
  "$TMP/m.json" || fail "measure json"

# train: --objective/--microbatches/--schedule override the config's reward.objective/microbatches/schedule.
SRC="${2:-$(cd "$(dirname "$0")/../.." && pwd)}"
"$PLACER" train --config "$SRC/configs/pipeline_transformer_k80x4.yaml" --objective step --updates 1 -q \
  -o "$TMP/tr_step" > "$TMP/tr_step.out" || fail "train --objective step"
! grep -q "pipeline objective" "$TMP/tr_step.out" || fail "train: --objective step did not override the config"
"$PLACER" train --config "$SRC/configs/pipeline_transformer_k80x4.yaml" --microbatches 2 --schedule gpipe \
  --updates 1 -q -o "$TMP/tr_pipe" > "$TMP/tr_pipe.out" || fail "train --microbatches --schedule"
grep -q "pipeline objective: 2 micro-batches, gpipe" "$TMP/tr_pipe.out" ||
  fail "train: --microbatches/--schedule not applied: $(head -3 "$TMP/tr_pipe.out")"

# Bad values name the option and the choices.
set +e
"$PLACER" place --method expert --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" --objective pipeline \
  --schedule zigzag 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--schedule" "$TMP/err" && grep -q "gpipe" "$TMP/err" && grep -q "1f1b" "$TMP/err" ||
  fail "bad --schedule not reported: $(cat "$TMP/err")"
"$PLACER" simulate --graph "$TMP/g.json" --placement "$TMP/p.json" --cluster k80x4 --objective speed 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--objective" "$TMP/err" && grep -q "pipeline" "$TMP/err" ||
  fail "bad --objective not reported: $(cat "$TMP/err")"
"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --objective pipeline --microbatches 0 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--microbatches" "$TMP/err" || fail "bad --microbatches not reported: $(cat "$TMP/err")"
"$PLACER" graph pipeline "$TMP/u.json" "$TMP/uu.json" 2> "$TMP/err"
[ $? -eq 2 ] && grep -q "already a pipelined mini-batch" "$TMP/err" || fail "unrolling twice not reported"
set -e
echo "pipeline_objective: ok"
