#!/usr/bin/env bash
# Learned optimize jobs end to end, as a user would drive them:
# - a job sent with `placer query optimize --train-config` reaches exactly
#   the result of `placer train` with the same config and seed;
# - save_as keeps it as a policy that `place --policy` uses (and that survives
#   a restart);
# - status shows progress and the reward curve; the job's reward series is in
#   /metrics; cancel stops a job within about one update;
# - measured jobs take the server's devices one at a time;
# - a server killed with SIGKILL mid-job resumes the job from its checkpoint;
# - bad learned requests get errors naming the field.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
export PYTHONPATH="$SRC/clients/python${PYTHONPATH:+:$PYTHONPATH}"
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill -9 $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
source "$SRC/tests/cli/lib/serve.sh"

cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: 0
metrics_address: 127.0.0.1
state_dir: state
place:
  baselines: [single, m_etf, expert]
jobs:
  runners: 2
  measure: true
CFG
cat > "$WORK/train.yaml" <<CFG
name: same
graph: {builder: mlp, options: {layers: 3, width: 64, input: 64, batch: 8}}
cluster: k80x2
policy: {type: seq2seq, hidden: 16}
train: {updates: 30, samples_per_update: 8, lr: 0.01}
warm_start: {methods: [m_etf, m_topo], bc_steps: 20}
run: {seed: 3, threads: 1, output_dir: $WORK/train-run}
CFG
MLP=(--builder mlp --option layers=3 --option width=64 --option input=64 --option batch=8)
job_of() { sed -n 's/.*"job_id":"\(j-[0-9a-f]*\)".*/\1/p'; }
wait_state() {  # JOB STATE...: polls until the job is in one of the states
  local job=$1; shift
  for _ in $(seq 600); do
    S=$("$PLACER" query --endpoint "$ENDPOINT" status "$job")
    for st in "$@"; do echo "$S" | grep -q "\"state\":\"$st\"" && return 0; done
    echo "$S" | grep -q '"state":"failed"' && { echo "job failed: $S"; exit 1; }
    sleep 0.2
  done
  echo "job $job never reached $*: $S"; exit 1
}

start_server "$WORK/service.yaml" "$WORK/serve.log"
MPORT=$(sed -n 's/^placer serve: metrics on http:\/\/[^:]*:\([0-9]*\)\/metrics/\1/p' "$WORK/serve.log")

echo "== the same config through placer train and through the service"
"$PLACER" train --config "$WORK/train.yaml" -q > "$WORK/train.out"
grep -q "^  result: .* s, found by " "$WORK/train.out" || { cat "$WORK/train.out"; exit 1; }
JOB=$("$PLACER" query --endpoint "$ENDPOINT" optimize "${MLP[@]}" --cluster k80x2 --train-config "$WORK/train.yaml" \
      --save-as mlp-k80x2 --no-placement | job_of)
wait_state "$JOB" done
# The job's run folder (gone once its result is fetched): the same updates,
# step times and best placement as placer train's, exactly.
"$PY" - "$WORK/train-run" "$WORK/state/jobs/$JOB" <<'EOF'
import csv, json, sys
def rows(d):  # every column but the wall-clock ones
    with open(d + "/train.csv") as f:
        return [{k: v for k, v in r.items() if k not in ("elapsed_s", "samples_per_s")} for r in csv.DictReader(f)]
train, job = rows(sys.argv[1]), rows(sys.argv[2])
assert len(train) == 30 and train == job, (train[-1:], job[-1:])
placement = lambda d: json.load(open(d + "/best_placement.json"))["placement"]
assert placement(sys.argv[1]) == placement(sys.argv[2]), "best placements differ"
print(f"service job = placer train: {len(train)} updates with the same rewards and step times, the same best placement")
EOF
"$PLACER" query --endpoint "$ENDPOINT" status "$JOB" > "$WORK/status.json"
curl -sf "http://127.0.0.1:$MPORT/metrics" > "$WORK/metrics.txt" || "$PY" -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://127.0.0.1:$MPORT/metrics" > "$WORK/metrics.txt"
"$PLACER" query --endpoint "$ENDPOINT" result "$JOB" > "$WORK/result.json"
"$PY" - "$WORK/train-run/summary.json" "$WORK/result.json" "$WORK/status.json" "$WORK/metrics.txt" "$JOB" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))
result = json.load(open(sys.argv[2]))["result"]
status = json.load(open(sys.argv[3]))["result"]
metrics = open(sys.argv[4]).read()
job = sys.argv[5]
assert result["state"] == "done" and result["kind"] == "learned", result
assert result["best"]["step_s"] == summary["best_step_s"], (result["best"], summary["best_step_s"])
# Never worse than what it saw, who found it, and the policy's own best apart.
assert result["best"]["step_s"] <= result["start"]["step_s"], (result["best"], result["start"])
assert result["best"]["step_s"] <= summary["policy_best_step_s"], (result["best"], summary["policy_best_step_s"])
assert result["best"]["found_by"] in ("policy", "baseline", "fast_path"), result["best"]
assert (result["best"]["found_by"] == "policy") == (summary["best_found_by"] == "policy"), (result["best"], summary)
assert result["policy_best"] == {"method": "learned:seq2seq", "step_s": summary["policy_best_step_s"]}, result
assert result["progress"]["samples"] == summary["samples"] == 240, (result["progress"], summary["samples"])
assert result["progress"]["updates"] == 30
assert result["saved"] is True and result["save_as"] == "mlp-k80x2"
assert {b["method"] for b in result["baselines"]} >= {"single", "m_etf", "expert"}, result["baselines"]
# The trainer's final table, as summary.json has it: simulated rows, labelled so, no intervals.
table = result["final_table"]
assert table["rows_made"] == "simulated" == summary["table"], (table, summary["table"])
assert table["rows"][0] == {"method": "learned:seq2seq", "role": "policy", "step_s": summary["policy_best_step_s"]}
assert [r["method"] for r in table["rows"] if r["role"] == "baseline"] == [b["method"] for b in summary["baselines"]]
assert all("ci_low_s" not in r and "p_vs_policy" not in r for r in table["rows"]), table
assert result["best"]["step_s"] == min(r["step_s"] for r in table["rows"]), (result["best"], table)
assert len(status["curve"]) == 30 or len(status["curve"]) == 32, len(status["curve"])
assert status["curve"][-1]["update"] == 30 and status["curve"][-1]["samples"] == 240
assert f'placer_train_reward{{graph="mlp",run="{job}"}}' in metrics, "no reward series for the job in /metrics"
assert f'placer_train_reward_best{{graph="mlp",run="{job}"}}' in metrics
print(f"service job = placer train: best {result['best']['step_s']:.6g} s after {result['progress']['samples']} samples; "
      f"curve of {len(status['curve'])} points; reward series in /metrics")
EOF

echo "== the kept policy answers place"
P=$("$PLACER" query --endpoint "$ENDPOINT" place "${MLP[@]}" --cluster k80x2 --policy mlp-k80x2 --no-placement)
echo "$P" | grep -q '"method":"policy:mlp-k80x2"' || { echo "$P"; exit 1; }
"$PLACER" query --endpoint "$ENDPOINT" policies | grep -q '"name":"mlp-k80x2"'

echo "== Python client: a learned job by policy type, cancel, measured jobs, errors"
"$PY" - "$ENDPOINT" "$WORK/measured_job.json" <<'EOF'
import json, sys, time
from placer_client import PlacerClient, PlacerError
c = PlacerClient(sys.argv[1], timeout_ms=60000)
mlp = dict(builder="mlp", options={"layers": 3, "width": 64, "input": 64, "batch": 8})

# cancel: a long job stops within about one update
job = c.optimize(seconds=600, cluster="k80x4", learned={"policy": {"type": "seq2seq", "hidden": 16},
                 "warm_start": {"methods": ["m_etf"], "bc_steps": 0}}, **mlp)
for _ in range(600):
    st = c.status(job)
    if st["progress"].get("updates", 0) >= 2:
        break
    time.sleep(0.1)
assert st["state"] == "running" and st["curve"], st
t0 = time.monotonic()
c.cancel(job)
st = c.wait(job, poll_s=0.05, timeout_s=30)
assert st["state"] == "cancelled", st
print(f"cancelled after {st['progress']['updates']} updates, {time.monotonic() - t0:.2f} s after the request")
assert st["best"]["step_s"] > 0

# two measured jobs on the server's CPU devices: never on the devices at once
small = dict(builder="mlp", options={"layers": 2, "width": 32, "input": 32, "batch": 4})
cfg = {"policy": {"type": "seq2seq", "hidden": 8}, "warm_start": {"methods": ["m_etf"], "bc_steps": 0},
       "train": {"samples_per_update": 4}, "reward": {"measure_warmup": 1, "measure_steps": 2}}
a = c.optimize(samples=24, devices="cpu:2", learned=cfg, reward_mode="measured", **small)
# The second with its measured rewards paired by round against a reference placement (learned.reward.paired).
cfg_paired = json.loads(json.dumps(cfg))
cfg_paired["reward"]["paired"] = True
b = c.optimize(samples=24, devices="cpu:2", learned=cfg_paired, reward_mode="measured", **small)
sa, sb = c.wait(a, timeout_s=300), c.wait(b, timeout_s=300)
for s in (sa, sb):
    assert s["state"] == "done" and s["reward_mode"] == "measured" and s["best"]["measured"] is True, s
    assert s["best"]["simulated_step_s"] > 0, s["best"]
    # Like with like: every row of the final table measured in one run, with its interval and
    # a rank test against the policy's best; `baselines` stays the fast path's, simulated.
    t = s["final_table"]
    assert t["rows_made"] == "measured side by side", t
    roles = [r["role"] for r in t["rows"]]
    assert roles[0] == "policy" and "baseline" in roles and roles[-1] == "seen", t
    for r in t["rows"]:
        assert 0 < r["ci_low_s"] <= r["step_s"] <= r["ci_high_s"], r
        if r["role"] != "policy":
            assert 0 <= r["p_vs_policy"] <= 1, r
            assert r["verdict"] in ("no difference", "policy faster", "row faster", "differ, equal medians"), r
            pr = r.get("paired_vs_policy")  # the rounds paired, where the two share 6 or more
            assert pr is None or (0 < pr["ratio_low"] <= pr["ratio"] <= pr["ratio_high"] and 0 <= pr["p_value"] <= 1), r
            assert pr is None or (pr["rounds"] >= 6 and pr["significant"] == (pr["p_value"] < 0.05)), r
    assert any("paired_vs_policy" in r for r in t["rows"] if r["role"] != "policy"), t
    assert s["best"]["step_s"] == min(r["step_s"] for r in t["rows"]), (s["best"], t)
    # The cross-core probe while the table ran (median, lowest, highest), as summary.json has it.
    med, low, high = t["core_rtt_s"]
    assert 0 < low <= med <= high <= 0.05, t["core_rtt_s"]
    # The speedup over the fast path's answer (the start), both measured; no gap to the simulated bound.
    fp = [r for r in t["rows"] if r["method"] == "fast_path:" + s["start"]["method"]]
    assert len(fp) == 1 and fp[0]["role"] == "seen", (s["start"], t)
    speedup = s["best"]["speedup_vs_start"]
    assert speedup >= 1 and abs(speedup - fp[0]["step_s"] / s["best"]["step_s"]) <= 1e-12 * speedup, (s["best"], fp)
    assert "gap_to_lower_bound" not in s["best"], s["best"]
    assert {b["method"] for b in s["baselines"]} <= {"single", "m_etf", "expert"}, s["baselines"]
json.dump({"id": a, "final_table": sa["final_table"]}, open(sys.argv[2], "w"))  # checked again after a restart
ha, hb = sa["devices_held"], sb["devices_held"]
assert ha["until_unix"] <= hb["from_unix"] or hb["until_unix"] <= ha["from_unix"], (ha, hb)
print(f"measured jobs held the devices {ha['until_unix'] - ha['from_unix']:.2f} s and "
      f"{hb['until_unix'] - hb['from_unix']:.2f} s, one after the other")

# A measured job cancelled before its side-by-side run has no final table (its rows were measured apart),
# its `baselines` stay the fast path's simulated ones (m_topo, measured by its warm start, is not one), and
# its measured best is never set against the simulated bound.
cfg_c = dict(cfg, warm_start={"methods": ["m_etf", "m_topo"], "bc_steps": 0})
j = c.optimize(seconds=600, devices="cpu:2", learned=cfg_c, reward_mode="measured", **small)
for _ in range(1200):
    st = c.status(j)
    if st["progress"].get("updates", 0) >= 1:
        break
    time.sleep(0.1)
c.cancel(j)
st = c.wait(j, poll_s=0.05, timeout_s=120)
assert st["state"] == "cancelled", st
assert "final_table" not in st, st["final_table"]
assert {b["method"] for b in st["baselines"]} <= {"single", "m_etf", "expert"}, st["baselines"]
assert st["best"] is None or "gap_to_lower_bound" not in st["best"], st["best"]
print(f"a measured job cancelled after {st['progress']['updates']} updates: no final table, baselines simulated")

def expect(code, field, **kw):
    try:
        c.optimize(**kw)
    except PlacerError as e:
        assert e.code == code and e.field == field, (e.code, e.field, str(e))
        print(f"  {code} {field}: {e}")
        return
    raise AssertionError(f"accepted: {kw}")
expect("bad_request", "learned.graph", samples=10, cluster="k80x2", learned={"graph": {"builder": "nmt"}}, **mlp)
expect("bad_request", "learned.train.lr", samples=10, cluster="k80x2", learned={"train": {"lr": "fast"}}, **mlp)
expect("bad_request", "learned", samples=10, cluster="k80x2", learned="transformer", **mlp)
expect("bad_request", "save_as", samples=10, cluster="k80x2", learned="seq2seq", save_as="../x", **mlp)
expect("bad_request", "methods", samples=10, cluster="k80x2", learned="seq2seq", methods=["m_etf"], **mlp)
expect("bad_request", "devices", samples=10, cluster="k80x2", learned="seq2seq", reward_mode="measured", **mlp)
expect("bad_request", "reward_mode", samples=10, cluster="k80x2", methods=["m_etf"], reward_mode="measured", **mlp)
EOF

echo "== SIGKILL mid-job: the restarted server resumes it from its checkpoint"
RESUME=$("$PY" - "$ENDPOINT" <<'EOF'
import sys
from placer_client import PlacerClient
c = PlacerClient(sys.argv[1])
print(c.optimize(samples=4000, cluster="k80x4", builder="mlp", options={"layers": 6, "width": 128},
                 learned={"policy": {"type": "seq2seq", "hidden": 16}, "train": {"samples_per_update": 8},
                          "warm_start": {"methods": ["m_etf"], "bc_steps": 10}, "run": {"checkpoint_every": 5}}))
EOF
)
for _ in $(seq 600); do
  U=$("$PLACER" query --endpoint "$ENDPOINT" status "$RESUME" | sed -n 's/.*"updates":\([0-9]*\).*/\1/p')
  [ -n "$U" ] && [ "$U" -ge 12 ] && break
  sleep 0.1
done
[ "${U:-0}" -ge 12 ] || { echo "the job did not get to 12 updates"; exit 1; }
kill -9 $SERVER; wait $SERVER 2>/dev/null || true
echo "killed at update $U"
start_server "$WORK/service.yaml" "$WORK/serve2.log"
wait_state "$RESUME" done
"$PLACER" query --endpoint "$ENDPOINT" result "$RESUME" --no-placement > "$WORK/resumed.json"
"$PY" - "$WORK/resumed.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
assert r["state"] == "done" and r["progress"]["restarts"] == 1, r
assert r["progress"]["resumed_at_update"] >= 10, r["progress"]
assert r["progress"]["samples"] == 4000 and r["progress"]["updates"] == 500, r["progress"]
print(f"resumed at update {r['progress']['resumed_at_update']} after 1 restart; finished {r['progress']['updates']} "
      f"updates, best {r['best']['step_s']:.6g} s")
EOF
P=$("$PLACER" query --endpoint "$ENDPOINT" place "${MLP[@]}" --cluster k80x2 --policy mlp-k80x2 --no-placement)
echo "$P" | grep -q '"method":"policy:mlp-k80x2"' || { echo "the kept policy did not survive the restart: $P"; exit 1; }
# A measured job's final table, its intervals, rank tests and rounds paired included, is the same from its record.
MJ=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/measured_job.json")
"$PLACER" query --endpoint "$ENDPOINT" status "$MJ" > "$WORK/measured_after.json"
"$PY" - "$WORK/measured_job.json" "$WORK/measured_after.json" <<'EOF'
import json, sys
before = json.load(open(sys.argv[1]))["final_table"]
after = json.load(open(sys.argv[2]))["result"]["final_table"]
assert after == before, (before, after)
assert any("paired_vs_policy" in r for r in after["rows"]), after
print("a measured job's final table survives the restart, rounds paired included")
EOF
kill -TERM $SERVER; RC=0; wait $SERVER || RC=$?; SERVER=""
[ $RC -eq 0 ] || { echo "serve exited $RC"; exit 1; }
echo "service_learned: OK"
