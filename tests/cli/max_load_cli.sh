#!/usr/bin/env bash
# The NeurIPS 2020 max-load yardstick on the command line: `graph import` of a
# workload file (recognized by content), `baseline --objective max_load --json`
# (dp equal to the paper's DP, an expert split evaluated), and errors that
# name the field.
set -euo pipefail
PLACER="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
W="$SRC/tests/fixtures/dnn-partitioning"

"$PLACER" graph import "$W/bert24_training.json" -o "$TMP/w.json" --accelerators 4 > "$TMP/import.txt" \
  || fail "graph import"
grep -q "64 nodes (32 backward), 110 edges, 32 colocation classes" "$TMP/import.txt" || { cat "$TMP/import.txt"; fail "import summary"; }
grep -q "cluster: 4 accelerators" "$TMP/import.txt" || fail "--accelerators"

"$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method dp,single \
  --placement "$W/bert24_inference_expert.json" --json > "$TMP/out.json" || fail "baseline --json"
# An option max_load does not use is refused, naming it (a --csv asked for was never written, exit 0).
if "$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method dp --csv "$TMP/x.csv" \
  2> "$TMP/csv.err" > /dev/null; then fail "max_load --csv accepted"; fi
grep -q -- "--csv: --objective max_load does not take it" "$TMP/csv.err" || fail "max_load --csv: $(cat "$TMP/csv.err")"
[ ! -e "$TMP/x.csv" ] || fail "max_load --csv wrote a file"
# ... as are --rewarm (the measurement protocol's) and the pipeline objective's --microbatches and --schedule.
for opt in "--rewarm 1" "--microbatches 4" "--schedule gpipe"; do
  # shellcheck disable=SC2086
  rc=0
  "$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method dp $opt 2> "$TMP/opt.err" \
    > /dev/null || rc=$?
  [ $rc -eq 2 ] && grep -q -- "^error: ${opt%% *}: " "$TMP/opt.err" || fail "max_load $opt: exit $rc: $(cat "$TMP/opt.err")"
done
# A given --budget is local_search's too: it stops at that many evaluations (an equal budget with learned's samples).
"$PLACER" baseline --graph "$W/bert24_training.json" --objective max_load --method dp,local_search --budget 40 \
  --seed 2 > "$TMP/budget.txt" || fail "local_search --budget"
grep -q "^local_search: .*, 40 evaluations, seed 2" "$TMP/budget.txt" || { cat "$TMP/budget.txt"; fail "local_search --budget 40"; }
# Without --budget its time limit alone ends it (thousands of evaluations of this small workload in 0.3 s).
"$PLACER" baseline --graph "$W/bert24_training.json" --objective max_load --method dp,local_search --time-limit 0.3 \
  > "$TMP/nobudget.txt" || fail "local_search without --budget"
python3 - "$TMP/nobudget.txt" <<'PY' || { cat "$TMP/nobudget.txt"; fail "local_search without --budget stopped at a budget"; }
import re, sys
n = int(re.search(r"^local_search: .*, (\d+) evaluations", open(sys.argv[1]).read(), re.M).group(1))
assert n > 2000, n
PY
python3 - "$TMP/out.json" <<'PY' || fail "baseline JSON"
import json, sys
r = {m["method"]: m for m in json.load(open(sys.argv[1]))["methods"]}
assert abs(r["dp"]["max_load"] - 17.7899) < 1e-4, r["dp"]  # the paper's DP on this file
assert r["dp"]["optimal"] and r["dp"]["ideals"] == 30
assert r["placement"]["max_load"] > r["dp"]["max_load"], r["placement"]  # the expert's split is contiguous
assert r["single"]["max_load"] > r["placement"]["max_load"]
nodes = sorted(n for d in r["dp"]["placement"]["fpgas"] + r["dp"]["placement"]["cpus"] for n in d["nodes"])
assert len(nodes) == 32, nodes
PY
# learned: a valid split, never worse than its warm start (dp's), found_by says whose it is.
"$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method learned --seed 2 --budget 64 \
  --json > "$TMP/learned.json" || fail "baseline --method learned"
python3 - "$TMP/learned.json" <<'PY' || fail "learned JSON"
import json, sys
r = {m["method"]: m for m in json.load(open(sys.argv[1]))["methods"]}["learned"]
assert abs(r["warm_max_load"] - 17.7899) < 1e-4, r  # dp's split
assert r["max_load"] <= r["warm_max_load"] and r["feasible"], r
assert r["found_by"] in ("policy", "dp"), r
assert (r["found_by"] == "policy") == (r["max_load"] < r["warm_max_load"]), r
PY
if "$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method learned --budget 8 \
  2> "$TMP/err3.txt"; then fail "learned with 8 samples accepted"; fi
grep -q "learned: --budget (samples) must be at least 32, got 8" "$TMP/err3.txt" || { cat "$TMP/err3.txt"; fail "budget error"; }
# A time limit past 1e7 s is refused when the command line is read (1e10 s overflowed local_search's deadline).
if "$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method local_search \
  --time-limit 1e10 2> "$TMP/err4.txt"; then fail "--time-limit 1e10 accepted"; fi
grep -q "time-limit.*must be a finite number in \[0.001, 1e+07\], got 1e10" "$TMP/err4.txt" ||
  { cat "$TMP/err4.txt"; fail "time limit error"; }
# The imported file (4 accelerators) reads back.
"$PLACER" baseline --graph "$TMP/w.json" --objective max_load --method dp > "$TMP/four.txt" || fail "imported file"
grep -q "4 accelerators" "$TMP/four.txt" || fail "imported cluster"

# Errors name the field and the problem.
python3 - "$W/bert24_inference.json" "$TMP/bad.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
w["edges"][1]["cost"] = w["edges"][0]["cost"] + 1 if w["edges"][1]["sourceId"] == w["edges"][0]["sourceId"] else 0
w["nodes"][2]["fpgaLatency"] = -1
json.dump(w, open(sys.argv[2], "w"))
PY
if "$PLACER" graph import "$TMP/bad.json" -o "$TMP/x.json" 2> "$TMP/err.txt"; then fail "bad file accepted"; fi
grep -q "nodes\[2\].fpgaLatency: must be in \[0, " "$TMP/err.txt" || { cat "$TMP/err.txt"; fail "error names the field"; }
if "$PLACER" baseline --graph "$W/bert24_inference.json" --objective max_load --method greedy 2> "$TMP/err2.txt"; then
  fail "unknown method accepted"
fi
grep -q "unknown max_load method 'greedy'" "$TMP/err2.txt" || { cat "$TMP/err2.txt"; fail "unknown method"; }

# Bad workload JSON gets a workload's error, not a TorchScript archive's; a workload no method can place is refused.
import_error() {  # name, file, expected text
  if "$PLACER" graph import "$2" -o "$TMP/bad_out.json" > /dev/null 2> "$TMP/err3.txt"; then fail "$1 imported"; fi
  grep -qF -- "$3" "$TMP/err3.txt" || fail "$1: $(cat "$TMP/err3.txt")"
}
head -c 200 "$W/bert24_training.json" > "$TMP/trunc.json"
import_error "a truncated workload" "$TMP/trunc.json" "$TMP/trunc.json: not a workload file: JSON parse error at byte 200"
python3 - "$W/bert24_training.json" "$TMP" <<'PY'
import json, sys
src, tmp = sys.argv[1], sys.argv[2]
w = json.load(open(src)); del w["edges"]; json.dump(w, open(tmp + "/noedges.json", "w"))
w = json.load(open(src)); w["nodes"], w["edges"] = [], []; json.dump(w, open(tmp + "/nonodes.json", "w"))
w = json.load(open(src)); w["maxCPUs"] = 0; w["nodes"][0]["supportedOnFpga"] = 0; json.dump(w, open(tmp + "/nofit.json", "w"))
PY
import_error "edges missing" "$TMP/noedges.json" "noedges.json: edges: missing required field"
import_error "no nodes" "$TMP/nonodes.json" "nodes: empty: a workload has at least one node"
import_error "a node no device runs" "$TMP/nofit.json" "is not supported on an accelerator (supportedOnFpga 0) and the cluster has no CPU"
"$PLACER" graph build mlp -o "$TMP/mlp.json" > /dev/null
import_error "a placer graph" "$TMP/mlp.json" "a placer graph already"
echo ok
