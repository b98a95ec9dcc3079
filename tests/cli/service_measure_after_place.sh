#!/usr/bin/env bash
# A measured `evaluate` after a `place` that decoded with a policy reads the
# same step as before it: the decode's LibTorch thread settings must not reach
# the executor's device threads (on cpu:2 a single placement of a small mlp
# read 0.2 s instead of 1e-4 s afterwards, an OpenMP thread spinning on the
# executor's core). Bounds are loose (20x, or 20 ms for a step of 0.1 ms): the bug was 1,200-4,000x.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
export PYTHONPATH="$SRC/clients/python${PYTHONPATH:+:$PYTHONPATH}"
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill -9 $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
source "$SRC/tests/cli/lib/serve.sh"

"$PLACER" train --config "$SRC/tests/fixtures/pretrain_tiny.yaml" -o "$WORK/tiny" -q > "$WORK/train.log" 2>&1 ||
  { cat "$WORK/train.log"; exit 1; }
cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: -1
workers: 2
policies:
  - {name: tiny, checkpoint: $WORK/tiny}
default_policy: tiny
CFG
start_server "$WORK/service.yaml" "$WORK/serve.log"

"$PY" - "$ENDPOINT" <<'PY'
import sys
from placer_client import PlacerClient
c = PlacerClient(sys.argv[1], timeout_ms=120000)
mlp = dict(builder="mlp", options={"layers": 2, "width": 64, "input": 64, "batch": 8}, devices="cpu:2")
single = c.baselines(methods=["single"], include_placement=True, **mlp)["results"][0]["placement"]
def measure():
    r = c.evaluate(single, measure={"max_steps": 10}, **mlp)
    assert r["measured"] and r["status"] == "ok", r
    return r["step_s"]
before = min(measure() for _ in range(2))
placed = c.place(policy="tiny", **mlp)
assert placed["method"] == "policy:tiny", placed["method"]
after = min(measure() for _ in range(2))
print(f"measured step before a policy's place {before:.3g} s, after {after:.3g} s")
assert after < max(20 * before, 0.02), f"a measurement after the policy's decode is {after / before:.0f}x slower"
PY
echo "OK"
