#!/usr/bin/env bash
# A split `baseline --objective max_load --json` writes, with one list per CPU,
# reads back with --placement as the same placement: the same max load and
# loads per device (cpus[m] is CPU m, not all of them the first CPU).
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A chain of 4 CPU-only nodes, one accelerator, 2 CPUs: dp puts two nodes on each CPU.
python3 - "$TMP/w.json" <<'PY'
import json, sys
nodes = [{"id": i, "supportedOnFpga": 0, "cpuLatency": 1.0, "fpgaLatency": 1.0, "isBackwardNode": 0} for i in range(4)]
edges = [{"sourceId": i, "destId": i + 1, "cost": 0.5} for i in range(3)]
json.dump({"maxSizePerFPGA": 1e9, "maxFPGAs": 1, "maxCPUs": 2, "nodes": nodes, "edges": edges}, open(sys.argv[1], "w"))
PY
"$PLACER" baseline --graph "$TMP/w.json" --objective max_load --method dp --json "$TMP/dp.json" > /dev/null ||
  fail "baseline dp"
python3 - "$TMP/dp.json" "$TMP/split.json" <<'PY' || fail "dp split: $(cat "$TMP/dp.json")"
import json, sys
m = json.load(open(sys.argv[1]))["methods"][0]
assert m["max_load"] == 2.0, m
assert sorted(len(c["nodes"]) for c in m["placement"]["cpus"]) == [2, 2], m["placement"]
json.dump(m["placement"], open(sys.argv[2], "w"))
PY
"$PLACER" baseline --graph "$TMP/w.json" --objective max_load --method none --placement "$TMP/split.json" \
  --json "$TMP/back.json" > /dev/null || fail "baseline --placement"
python3 - "$TMP/dp.json" "$TMP/back.json" <<'PY' || fail "read back: $(cat "$TMP/back.json")"
import json, sys
dp = json.load(open(sys.argv[1]))["methods"][0]["placement"]
back = json.load(open(sys.argv[2]))["methods"][0]
assert back["max_load"] == 2.0, back
assert back["placement"] == dp, (back["placement"], dp)
PY

# More CPU lists than maxCPUs: refused, naming the field and both counts.
echo '{"fpgas": [], "cpus": [{"nodes": [0]}, {"nodes": [1]}, {"nodes": [2, 3]}]}' > "$TMP/three.json"
if "$PLACER" baseline --graph "$TMP/w.json" --objective max_load --method none --placement "$TMP/three.json" \
  > /dev/null 2> "$TMP/err.txt"; then fail "3 CPU lists accepted for maxCPUs 2"; fi
grep -qF "cpus: 3 lists, more than the workload's maxCPUs (2)" "$TMP/err.txt" || fail "3 CPU lists: $(cat "$TMP/err.txt")"
echo ok
