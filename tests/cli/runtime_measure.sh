#!/usr/bin/env bash
# placer measure / profile end to end: build a tiny graph, write a placement,
# measure it (with a trace and JSON), profile it, and check the error paths.
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" measure --help | grep -- "--placement" > /dev/null || fail "measure --help"
"$PLACER" profile --help | grep -- "--devices" > /dev/null || fail "profile --help"

"$PLACER" graph build mlp --opt batch=4 --opt input=8 --opt width=8 --opt classes=3 --opt layers=2 -o "$TMP/g.json" >/dev/null
# Every op on cpu:1 except the first layer's ops on cpu:0 (a split placement).
python3 - "$TMP/g.json" "$TMP/p.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
ops = g["ops"]
byname = {o["name"]: o for o in ops}
def dev(o):
    # backward/update ops follow their forward op (co-location)
    while o.get("forward") and o["type"] in ("placer::backward", "placer::sgd"):
        o = byname[o["forward"]]
    return "cpu:0" if o["name"].startswith("fc0") or o["name"].startswith("input") else "cpu:1"
placement = {o["name"]: dev(o) for o in ops}
json.dump({"format": "placer.placement", "version": 1, "graph": g.get("name", ""), "placement": placement},
          open(sys.argv[2], "w"))
PY

"$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/p.json" --devices cpu:2 --warmup 1 --steps 3 \
  --trace "$TMP/trace.json" --json "$TMP/r.json" > "$TMP/out.txt"
grep -q "step" "$TMP/out.txt" || fail "measure output"
python3 -c "import json,sys; t=json.load(open('$TMP/trace.json')); assert t" || fail "trace is not JSON"
python3 - "$TMP/r.json" <<'PY' || fail "result JSON"
import json, sys
r = json.load(open(sys.argv[1]))
s = json.dumps(r)
assert "ok" in s, s
# cpu:2 pins two devices: the cross-core probe, one reading per step (in seconds, under 1 us)
rtt = r["core_rtt_s"]  # 0: not read that round (the probe gives up at 50 ms)
assert len(rtt) == r["steps"] and all(0 <= v <= 0.05 for v in rtt) and 0 < sorted(rtt)[len(rtt) // 2] < 1e-5, r
PY
grep -q "^cross-core round trip [0-9]* ns (median; " "$TMP/out.txt" || fail "measure: no cross-core probe line: $(cat "$TMP/out.txt")"
# The interval printed is at the level it reaches (3 steps: 75%, as the JSON's ci_level), not always 95%.
"$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/p.json" --devices cpu:2 --warmup 1 --steps 3 --max-steps 3 \
  --json "$TMP/r3.json" > "$TMP/out3.txt"
python3 -c "import json; assert json.load(open('$TMP/r3.json'))['ci_level'] == 0.75" || fail "3 steps: ci_level not 0.75"
grep -q " 75% interval \[" "$TMP/out3.txt" || fail "measure --steps 3: not the 75% interval: $(cat "$TMP/out3.txt")"

# --compare: interleaved, each against the fastest by a rank test; the JSON keeps every sample.
cp "$TMP/p.json" "$TMP/p2.json"
"$PLACER" measure --graph "$TMP/g.json" --compare "$TMP/p.json" "$TMP/p2.json" --devices cpu:2 --warmup 1 \
  --steps 6 --max-steps 6 --json "$TMP/cmp.json" > "$TMP/cmp.txt" || fail "measure --compare"
grep -q "Mann-Whitney U p = " "$TMP/cmp.txt" || fail "measure --compare names its rank test"
# The same file twice (an A/A check): told apart by place; --placement beside --compare is refused; nan is no target.
"$PLACER" measure --graph "$TMP/g.json" --compare "$TMP/p.json" "$TMP/p.json" --devices cpu:2 --warmup 1 --steps 3 \
  --max-steps 3 > "$TMP/aa.txt" || fail "measure --compare A A"
grep -q "p.json (#1)" "$TMP/aa.txt" && grep -q "p.json (#2)" "$TMP/aa.txt" || fail "A A not told apart: $(cat "$TMP/aa.txt")"
grep -q " 75% interval \[" "$TMP/aa.txt" || fail "measure --compare --steps 3: not the 75% interval: $(cat "$TMP/aa.txt")"
if "$PLACER" measure --graph "$TMP/g.json" --compare "$TMP/p.json" "$TMP/p2.json" --placement "$TMP/p.json" \
  --devices cpu:2 2> "$TMP/both.err"; then fail "--placement with --compare accepted"; fi
grep -q -- "--placement excludes --compare" "$TMP/both.err" || fail "--placement with --compare: $(cat "$TMP/both.err")"
# --trace beside --compare was accepted and no trace written: refused when the command line is read.
if "$PLACER" measure --graph "$TMP/g.json" --compare "$TMP/p.json" "$TMP/p2.json" --trace "$TMP/t.json" \
  --devices cpu:2 2> "$TMP/tr.err"; then fail "--trace with --compare accepted"; fi
grep -q -- "excludes --trace\|--trace excludes" "$TMP/tr.err" || fail "--trace with --compare: $(cat "$TMP/tr.err")"
# baseline --measure: every row in one interleaved lockstep run, each with its interval; rows placed alike
# share one measurement (each row was measured alone after its placer, with no interval).
"$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --method single,round_robin,expert --measure --warmup 1 \
  --steps 3 --max-steps 3 --json "$TMP/bm.json" > "$TMP/bm.txt" 2> "$TMP/bm.err" || fail "baseline --measure: $(cat "$TMP/bm.err")"
grep -q "measuring [0-9] distinct placement(s) interleaved" "$TMP/bm.err" || fail "baseline --measure: $(cat "$TMP/bm.err")"
grep -q "\[[0-9.]*, [0-9.]*\]" "$TMP/bm.txt" || fail "baseline --measure: no interval: $(cat "$TMP/bm.txt")"
python3 - "$TMP/bm.json" <<'PY' || fail "baseline --measure JSON"
import json, sys
rows = json.load(open(sys.argv[1]))["methods"]
assert len(rows) == 3, rows
for r in rows:
    assert r["measured_status"] == "ok", r
    assert r["ci_low_s"] <= r["measured_step_s"] <= r["ci_high_s"], r
    assert r["measured_steps"] == 3, r  # lockstep: every placement took every round
PY
if "$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --method single --accelerators 4 2> "$TMP/acc.err" > /dev/null; then
  fail "baseline --accelerators without max_load accepted"
fi
grep -q -- "--accelerators: only --objective max_load takes it" "$TMP/acc.err" || fail "--accelerators: $(cat "$TMP/acc.err")"
if "$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/p.json" --devices cpu:2 --target nan 2> "$TMP/nan.err"; then
  fail "--target nan accepted"
fi
grep -q -- "--target: must be a finite number in \[0, 0.5\], got nan" "$TMP/nan.err" || fail "--target nan: $(cat "$TMP/nan.err")"
python3 - "$TMP/cmp.json" <<'PY' || fail "compare JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "placer.compare", r
ps = r["placements"]
assert len(ps) == 2 and all(p["status"] == "ok" for p in ps), ps
for p in ps:
    assert p["steps"] == 6 and len(p["samples_s"]) == 6, p
    assert len(p["core_rtt_s"]) == 6 and all(0 <= v <= 0.05 for v in p["core_rtt_s"]), p
    assert all(v > 0 for v in p["samples_s"]), p
    assert p["ci_low_s"] <= p["step_s"] <= p["ci_high_s"], p
slower = [p for p in ps if p["file"] != r["fastest"]]
assert len(slower) == 1 and 0 <= slower[0]["p_value"] <= 1, slower
# Every measured step in the order taken: interleaved (one of each per round), and the same samples.
order = r["steps_in_order"]
assert len(order) == 12, order
for k in range(6):
    assert sorted(int(i) for i, _ in order[2 * k:2 * k + 2]) == [0, 1], order
for i, p in enumerate(ps):
    assert [s for j, s in order if int(j) == i] == p["samples_s"], (i, order, p["samples_s"])
# Paired by round: the Hodges-Lehmann ratio (slower / fastest: the median of the Walsh averages of the rounds' log
# ratios), its interval, the signed-rank p.
import math, statistics
pr = slower[0]["paired"]
fastest = [p for p in ps if p["file"] == r["fastest"]][0]
d = [math.log(b / a) for a, b in zip(fastest["samples_s"], slower[0]["samples_s"]) if a != b]
walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
close = lambda x, y: abs(x - y) < 1e-9 * y
assert pr["rounds"] == 6 and close(pr["ratio"], math.exp(statistics.median(walsh))), (pr, d)
if len(d) == 6:  # P(W+ <= 0) = 1/64 <= 2.5% < P(W+ <= 1): the interval is the lowest and the highest Walsh average
    assert close(pr["ratio_low"], math.exp(walsh[0])) and close(pr["ratio_high"], math.exp(walsh[-1])), (pr, d)
assert 0 < pr["p_value"] <= 1 and pr["significant"] == (pr["p_value"] < 0.05), pr
PY
grep -E "^  paired by round \(6 rounds\): .* is (slower|faster) than .* by [0-9.]+% paired \(Hodges-Lehmann; 95% interval .*\); Wilcoxon signed-rank p = " \
  "$TMP/cmp.txt" > /dev/null || fail "measure --compare: no paired line: $(cat "$TMP/cmp.txt")"

"$PLACER" profile --graph "$TMP/g.json" --devices cpu:2 --repetitions 2 -o "$TMP/profile.json" > "$TMP/profile.out"
# It says what it measured for the simulator's copy cost: the mixed step over both devices.
grep -q "mixed step (groups dealt round robin over cpu:0, cpu:1): " "$TMP/profile.out" || fail "profile: no mixed step line: $(cat "$TMP/profile.out")"
python3 -c "import json; p=json.load(open('$TMP/profile.json')); assert p" || fail "profile is not JSON"

# place and baseline judge placements in the simulator calibrated on a profile when given one, and say so. The
# single-device step is then the profile's own op times (each plus its per-op overhead) scaled to the fastest CPU
# device's step, and it follows them: the same profile with every op time doubled doubles it. Judged on the profile
# alone, not against a step measured at another moment: under a loaded CI machine the op times and the graph's step
# of one profile once read 2.3x apart (4.7 ms against 2.1 ms).
"$PLACER" graph build mlp --opt batch=64 --opt input=256 --opt width=512 --opt classes=10 --opt layers=3 \
  -o "$TMP/g2.json" > /dev/null
"$PLACER" profile --graph "$TMP/g2.json" --devices cpu:2 --repetitions 2 -o "$TMP/profile2.json" > /dev/null
python3 - "$TMP/profile2.json" "$TMP/profile2x.json" <<'PY' || fail "could not write the doubled profile"
import json, sys
p = json.load(open(sys.argv[1]))
for o in p["ops"]:
    o["seconds"] *= 2
    o["contended_seconds"] *= 2
for s in p.get("cpu_steps", []):  # the whole profile twice as slow: its device steps too (they anchor the op times)
    s["step_s"] *= 2
json.dump(p, open(sys.argv[2], "w"))
PY
"$PLACER" baseline --graph "$TMP/g2.json" --devices cpu:2 --method single,m_etf --profile "$TMP/profile2.json" \
  --json "$TMP/cal.json" > "$TMP/cal.out" || fail "baseline --profile: $(cat "$TMP/cal.out")"
grep -q "costs calibrated on $TMP/profile2.json (100% of ops measured)" "$TMP/cal.out" ||
  fail "baseline --profile does not say it is calibrated: $(head -3 "$TMP/cal.out")"
"$PLACER" baseline --graph "$TMP/g2.json" --devices cpu:2 --method single --profile "$TMP/profile2x.json" \
  --json "$TMP/cal2x.json" > /dev/null || fail "baseline --profile (doubled)"
"$PLACER" baseline --graph "$TMP/g2.json" --devices cpu:2 --method single --json "$TMP/roof.json" > "$TMP/roof.out"
grep -q "roofline costs" "$TMP/roof.out" || fail "baseline: no cost model named: $(head -3 "$TMP/roof.out")"
python3 - "$TMP/cal.json" "$TMP/roof.json" "$TMP/profile2.json" "$TMP/cal2x.json" <<'PY' || fail "baseline --profile: not the calibrated step"
import json, sys
cal, roof, prof, cal2x = (json.load(open(f)) for f in sys.argv[1:])
assert cal["cost_model"] == "calibrated" and roof["cost_model"] == "roofline", (cal["cost_model"], roof["cost_model"])
assert cal["profile"].endswith("profile2.json"), cal["profile"]
single = {m["method"]: m for m in cal["methods"]}["single"]["simulated_step_s"]
# The op times are anchored on the profile's device steps: a single-device placement simulates at its device's step.
steps = {s["device"]: s["step_s"] for s in prof["cpu_steps"]}
assert abs(single / min(steps.values()) - 1) < 1e-5, (single, steps)  # the JSON writes 6 digits
doubled = cal2x["methods"][0]["simulated_step_s"] / single
assert 1.85 < doubled < 2.05, (doubled, single, cal2x["methods"][0])
PY
"$PLACER" place --method m_etf --graph "$TMP/g2.json" --devices cpu:2 --profile "$TMP/profile2.json" -o "$TMP/cal_place.json" \
  > "$TMP/cal_place.out" || fail "place --profile"
grep -q "^simulated .*costs calibrated on $TMP/profile2.json" "$TMP/cal_place.out" || fail "place --profile: $(cat "$TMP/cal_place.out")"
# A profile of other devices calibrates by device kind, and says so: the cluster's cpu:2 and cpu:3 were not profiled.
"$PLACER" baseline --graph "$TMP/g2.json" --devices cpu:4 --method single --profile "$TMP/profile2.json" \
  > "$TMP/cal4.out" 2>&1 || fail "baseline --profile on cpu:4: $(cat "$TMP/cal4.out")"
grep -q "WARNING: the profile was taken on 'cpu:2'; cpu:2, cpu:3 not in it" "$TMP/cal4.out" ||
  fail "baseline --profile of other devices: no warning: $(head -3 "$TMP/cal4.out")"
if grep -q "WARNING" "$TMP/cal.out"; then fail "baseline --profile of these devices warns: $(head -3 "$TMP/cal.out")"; fi
cat > "$TMP/train4.yaml" <<EOF
name: other_devices
graph: {file: $TMP/g2.json}
cluster: cpu:4
policy: {type: seq2seq, hidden: 16, max_groups: 16}
reward: {mode: simulated, profile: $TMP/profile2.json}
train: {updates: 1, samples_per_update: 4}
compare: []
EOF
"$PLACER" train --config "$TMP/train4.yaml" -o "$TMP/train4" -q > "$TMP/train4.out" 2>&1 ||
  fail "train --profile on cpu:4: $(tail -5 "$TMP/train4.out")"
grep -q "^WARNING: reward.profile $TMP/profile2.json: the profile was taken on 'cpu:2'; cpu:2, cpu:3 not in it" "$TMP/train4.out" ||
  fail "train --profile of other devices: no warning: $(head -5 "$TMP/train4.out")"
# The same graph built at another size keeps its name and op names: its profile is another graph's, and the
# simulation says so (it used to take the smaller graph's op times by name, its steps too, "100% of ops measured").
"$PLACER" graph build mlp --opt batch=64 --opt input=256 --opt width=1024 --opt classes=10 --opt layers=3 \
  -o "$TMP/g2_wide.json" > /dev/null
"$PLACER" baseline --graph "$TMP/g2_wide.json" --devices cpu:2 --method single --profile "$TMP/profile2.json" \
  --json "$TMP/cal_wide.json" > "$TMP/cal_wide.out" 2>&1 || fail "baseline --profile of a resized graph: $(cat "$TMP/cal_wide.out")"
grep -q "WARNING: the profile is of another graph of this name (its op '.*' was .*, here .*): .*profile this graph" \
  "$TMP/cal_wide.out" || fail "baseline --profile of a resized graph: no warning: $(head -3 "$TMP/cal_wide.out")"
python3 - "$TMP/cal.json" "$TMP/cal_wide.json" <<'PY' || fail "a resized graph simulated at its profile's step"
import json, sys
small, wide = (json.load(open(f)) for f in sys.argv[1:])
step = lambda r: {m["method"]: m for m in r["methods"]}["single"]["simulated_step_s"]
assert abs(step(wide) / step(small) - 1) > 1e-3, (step(small), step(wide))  # equal to the digit before
PY
# A profile of another graph by its name lends its times by signature only, and the note says whose they are.
"$PLACER" graph build rnnlm --opt layers=1 --opt hidden=32 --opt steps=2 --opt batch=4 --opt vocab=50 \
  -o "$TMP/rnn.json" > /dev/null
"$PLACER" baseline --graph "$TMP/rnn.json" --devices cpu:2 --method single --profile "$TMP/profile2.json" \
  > "$TMP/cal_rnn.out" 2>&1 || fail "baseline --profile of another graph: $(cat "$TMP/cal_rnn.out")"
grep -q "% of ops measured, by signature: the profile is of graph 'mlp')" "$TMP/cal_rnn.out" ||
  fail "a profile of another graph: whose times not said: $(head -3 "$TMP/cal_rnn.out")"
set +e
"$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --profile "$TMP/none.json" 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q -- "--profile" "$TMP/err" || fail "baseline --profile of a missing file: $(cat "$TMP/err")"
"$PLACER" baseline --graph "$TMP/g.json" --devices cpu:2 --profile "$TMP/g.json" 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q -i "profile" "$TMP/err" || fail "baseline --profile of a graph file: $(cat "$TMP/err")"
set -e

# The trainer's measured final table: two methods that agree (on a tiny mlp, single
# and m_etf keep one device) are one placement, measured once, and the table says so.
cat > "$TMP/train.yaml" <<EOF
name: dup
graph: {builder: mlp, options: {batch: 8, input: 16, width: 16, classes: 4, layers: 3}}
cluster: cpu:2
policy: {type: seq2seq, hidden: 16, max_groups: 16}
reward: {mode: measured, measure_warmup: 1, measure_steps: 3, spell_ratio: 1, final_retakes: 1}
train: {updates: 3, samples_per_update: 4}
run: {seed: 1, output_dir: $TMP/train}
compare: [single, m_etf]
EOF
"$PLACER" train --config "$TMP/train.yaml" -q > "$TMP/train.out" 2>&1 || fail "train (measured): $(tail -5 "$TMP/train.out")"
grep -q "measured side by side" "$TMP/train.out" || fail "train: the final table is not measured"
grep -E "^  single .*same placement as m_etf$" "$TMP/train.out" > /dev/null ||
  fail "train: the duplicate row is not named: $(cat "$TMP/train.out")"
s=$(sed -n 's/^  single  *\([0-9.e-]*\) .*/\1/p' "$TMP/train.out")
e=$(sed -n 's/^  m_etf  *\([0-9.e-]*\) .*/\1/p' "$TMP/train.out")
[ -n "$s" ] && [ "$s" = "$e" ] || fail "train: one placement, two figures ($s vs $e)"
# Each measured row says whether it differs from the policy's best by more than the noise (a rank test),
# in the table and in summary.json; one placement measured once is one p for both rows.
grep -q "rank test vs policy (5%); paired by round" "$TMP/train.out" || fail "train: no rank test column: $(cat "$TMP/train.out")"
for m in single m_etf; do
  grep -E "^  $m .*  (no difference|policy faster|row faster|differ, equal medians) \(p=[0-9.e-]+\); paired by round: row [+-][0-9.]+% \[[+-][0-9.]+%, [+-][0-9.]+%\], (no difference|policy faster|row faster) \(p=[0-9.e-]+\)" "$TMP/train.out" > /dev/null ||
    fail "train: the $m row has no rank test verdict: $(cat "$TMP/train.out")"
done
python3 - "$TMP/train/summary.json" <<'PY' || fail "train: p_vs_policy: $(grep -A12 '"baselines"' "$TMP/train/summary.json")"
import json, sys
r = json.load(open(sys.argv[1]))
b = {x["method"]: x for x in r["baselines"] if x["ok"]}
assert all(0 <= x["p_vs_policy"] <= 1 for x in b.values()), b
assert b["single"]["p_vs_policy"] == b["m_etf"]["p_vs_policy"], b
# Each row's rounds paired with the policy's: the Hodges-Lehmann ratio row / policy, its interval, the signed-rank p.
for x in b.values():
    pr = x["paired_vs_policy"]
    assert pr["rounds"] >= 6 and pr["ratio_low"] <= pr["ratio"] <= pr["ratio_high"] and 0 < pr["p_value"] <= 1, x
    assert pr["significant"] == (pr["p_value"] < 0.05), x  # the one layout of a paired test (JsonWriter::paired)
assert b["single"]["paired_vs_policy"] == b["m_etf"]["paired_vs_policy"], b
med, low, high = r["table_core_rtt_s"]  # the cross-core probe while the table ran
assert 0 < low <= med <= high <= 0.05 and med < 1e-5, r["table_core_rtt_s"]
PY
grep -q "^  cross-core round trip while the table ran: [0-9]* ns" "$TMP/train.out" ||
  fail "train: the table does not say the cross-core probe: $(cat "$TMP/train.out")"
# reward.spell_ratio 1: a table reading over the run's quietest earlier one is "in a spell" and measured
# again once (reward.final_retakes); the lower-reading take is the table. The decision follows the figures.
python3 - "$TMP/train/summary.json" "$TMP/train.out" <<'PY' || fail "train: table retake: $(grep -A3 table_retakes "$TMP/train/summary.json")"
import json, sys
r = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
assert r["spell_ratio"] == 1, r["spell_ratio"]
quiet, med, rt = r["table_quiet_core_rtt_s"], r["table_core_rtt_s"][0], r["table_retakes"]
assert 0 < quiet < 1e-5, quiet  # training measured on cpu:2, so the probe was read
assert len(rt) <= 1, rt
if rt:
    t = rt[0]
    assert t["core_rtt_s"] > quiet, (t, quiet)
    assert t["kept"] == (0 < t["retake_core_rtt_s"] < t["core_rtt_s"]), t
    assert med == (t["retake_core_rtt_s"] if t["kept"] else t["core_rtt_s"]), (med, t)
    assert "  measured again: the table read " in out, out
    assert "final table: the cross-core probe read " in out and "final table: the retake read " in out, out
else:
    assert med <= quiet, (med, quiet)  # not over the ratio: no retake
    assert "measured again" not in out, out
c = json.load(open(sys.argv[1].replace("summary.json", "config.json")))
assert c["reward"]["final_retakes"] == 1 and c["reward"]["spell_ratio"] == 1, c["reward"]
PY
# reward.finalists (default 4): the policy's best is picked from its fastest placements measured side by
# side first (paired by round), then measured afresh in the table; summary.json says which was kept.
python3 - "$TMP/train/summary.json" <<'PY' || fail "train: finalists: $(grep -A3 finalists "$TMP/train/summary.json")"
import json, sys
r = json.load(open(sys.argv[1]))
f = r["finalists"]
assert len(f) >= 2, f
assert [x["picked"] for x in f].count(True) == 1, f
ok = [x for x in f if x["ok"]]
kept = next(x for x in f if x["picked"])
# Paired by round against training's best (the first) where every one that ran shares enough rounds with it:
# the lowest ratio; else the fastest median.
if all("paired_ratio" in x for x in ok):
    assert f[0]["paired_ratio"] == 1 and kept["paired_ratio"] == min(x["paired_ratio"] for x in ok), f
else:
    assert kept["step_s"] == min(x["step_s"] for x in ok), f
assert all(x["ci_s"][0] <= x["step_s"] <= x["ci_s"][1] for x in ok), f
assert all(x["found_at_sample"] > 0 for x in f), f  # the policy's samples, no warm-start baseline
assert r["policy_best_found_at_sample"] == kept["found_at_sample"], (r["policy_best_found_at_sample"], f)
# The result's sample: the policy's where it is the result, none (0) where a baseline's placement is.
assert r["best_found_at_sample"] == (kept["found_at_sample"] if r["best_found_by"] == "policy" else 0), r
PY
grep -q "picked from [0-9]* of its placements measured side by side" "$TMP/train.out" ||
  fail "train: the finalists line is missing: $(cat "$TMP/train.out")"

# Errors: a device the cluster lacks, and a tiny timeout -> non-zero exit.
sed 's/"cpu:1"/"cpu:7"/' "$TMP/p.json" > "$TMP/bad.json"
if "$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/bad.json" --devices cpu:2 2> "$TMP/err.txt"; then
  fail "unknown device accepted"
fi
grep -q "cpu:7" "$TMP/err.txt" || fail "error does not name the device: $(cat "$TMP/err.txt")"
if "$PLACER" measure --graph "$TMP/g.json" --placement "$TMP/p.json" --devices cpu:2 --timeout 0.000001 2> "$TMP/err.txt"; then
  fail "timeout not reported"
fi
grep -q "timeout" "$TMP/err.txt" || fail "timeout message: $(cat "$TMP/err.txt")"
echo "ok"
