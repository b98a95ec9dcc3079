#!/usr/bin/env bash
# End to end: `placer serve` + the Python client example (pyzmq) and its
# objective arguments, then SIGTERM must stop the server cleanly with exit
# status 0.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$2
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
$PY -c "import zmq" || { echo "FAIL: $PY cannot import zmq (scripts/install-deps.sh installs pyzmq)"; exit 1; }
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
workers: 2
metrics_port: -1
state_dir: state
place:
  baselines: [single, round_robin, m_etf]
jobs:
  methods: [m_topo, local_search]
CFG
source "$SRC/tests/cli/lib/serve.sh"
start_server "$WORK/service.yaml" "$WORK/serve.log"

cd "$SRC/clients/python"
$PY example.py "$ENDPOINT"

# Each request carries a deadline shorter than the client's wait: the server gives up first (an optimize
# answered after the client stopped waiting made a job, and the retry another).
$PY - "$ENDPOINT" <<'PY'
import sys
from placer_client import PlacerClient
with PlacerClient(sys.argv[1], timeout_ms=5000) as c:
    sent = []
    real = c.send_raw
    def capture(data, **kw):
        sent.append(data)
        return real(data, **kw)
    c.send_raw = capture
    c.health()
    c.place(builder="mlp", cluster="k80x2", deadline_ms=1234)
import json
assert json.loads(sent[0])["deadline_ms"] == 4500, sent[0]
assert json.loads(sent[1])["deadline_ms"] == 1234, sent[1]
PY

# The pipeline objective (issue 27, part 5): place, baselines and optimize take
# objective/microbatches/schedule, replies say them, bad values name the field,
# and a learned config that disagrees with the request is refused.
$PY - "$ENDPOINT" <<'PYTHON'
import sys
from placer_client import PlacerClient, PlacerError

mlp = dict(builder="mlp", options={"layers": 2, "width": 64, "input": 64, "batch": 8}, cluster="k80x2")
with PlacerClient(sys.argv[1]) as c:
    step = c.place(**mlp)
    assert step["objective"] == "step" and "microbatches" not in step, step
    pipe = c.place(**mlp, objective="pipeline", microbatches=8, schedule="gpipe")
    assert (pipe["objective"], pipe["microbatches"], pipe["schedule"]) == ("pipeline", 8, "gpipe"), pipe
    assert pipe["status"] == "ok" and pipe["step_s"] > 0 and pipe["placement"]["device"], pipe
    b = c.baselines(**mlp, methods=["m_etf"], objective="pipeline")
    assert (b["objective"], b["microbatches"], b["schedule"]) == ("pipeline", 4, "1f1b"), b

    def refused(field, part, **kw):
        try:
            c.place(**mlp, **kw)
        except PlacerError as e:
            assert (e.code, e.field) == ("bad_request", field) and part in e.message, (e.code, e.field, e.message)
            return
        raise AssertionError(f"{kw} was accepted")

    refused("objective", "unknown objective 'fast'", objective="fast")
    refused("microbatches", "must be in [1, 1024], got 0", objective="pipeline", microbatches=0)
    refused("schedule", "unknown schedule 'zb'", objective="pipeline", schedule="zb")
    refused("microbatches", 'only with "objective": "pipeline"', microbatches=8)

    # A search job keeps its objective.
    job = c.optimize(samples=16, **mlp, objective="pipeline", microbatches=2)
    st = c.wait(job, poll_s=0.1, timeout_s=60)
    assert st["state"] == "done" and (st["objective"], st["microbatches"]) == ("pipeline", 2), st
    # A learned config may repeat the request's objective, never contradict it.
    try:
        c.optimize(samples=16, **mlp, objective="pipeline", learned={"reward": {"objective": "step"}})
        raise AssertionError("a learned config that disagrees was accepted")
    except PlacerError as e:
        assert e.field == "learned.reward.objective" and "disagrees" in e.message, e
print("python client: objective fields OK")
PYTHON

# A call cut off between send and receive (Ctrl-C, an exception) must not leave its late reply to answer
# the next call ("reply for 'py-1', expected 'py-2'" forever); a stale reply is dropped; evaluate takes a
# placer.placement file as `placer place -o` writes it; a request over max_message_bytes is not sent.
"$PLACER" graph build mlp --opt layers=2 --opt width=64 --opt batch=8 -o "$WORK/mlp.json" > /dev/null
"$PLACER" place --graph "$WORK/mlp.json" --devices cpu:2 --method round_robin -o "$WORK/pl.json" > /dev/null 2>&1
$PY - "$ENDPOINT" "$WORK/mlp.json" "$WORK/pl.json" <<'PYTHON'
import json, sys, time
import zmq
from placer_client import PlacerClient, PlacerError
endpoint, graph_file, placement_file = sys.argv[1:4]
mlp = dict(builder="mlp", options={"layers": 2, "width": 64, "input": 64, "batch": 8}, cluster="k80x2")
with PlacerClient(endpoint, timeout_ms=10000) as c:
    # Interrupted while waiting: the socket is replaced, the late reply never seen.
    real_poll = zmq.Socket.poll
    def interrupted(self, *a, **kw):
        raise KeyboardInterrupt
    zmq.Socket.poll = interrupted
    before = c._socket
    try:
        c.place(**mlp)
        raise AssertionError("the patched poll did not interrupt")
    except KeyboardInterrupt:
        pass
    finally:
        zmq.Socket.poll = real_poll
    assert c._socket is not before, "an interrupted call must reconnect"
    time.sleep(0.5)  # the place reply arrives (at the old socket) meanwhile
    for _ in range(3):
        assert c.health()["status"] == "serving"
    # A reply for another id on this socket (an earlier request's, late) is dropped, not taken as ours.
    # (A policies request: its reply, taken for health's, would have no "status".)
    c._socket.send_multipart([b"", json.dumps({"version": 1, "id": "stale-1", "type": "policies"}).encode()])
    time.sleep(0.5)
    assert c.health()["status"] == "serving"
    # An on_status callback that raises: the next call still gets its own reply.
    job = c.optimize(samples=16, **mlp)
    def boom(st):
        raise RuntimeError("callback failed")
    try:
        c.wait(job, poll_s=0.1, timeout_s=60, on_status=boom)
        raise AssertionError("the callback's exception was swallowed")
    except RuntimeError:
        pass
    assert c.health()["status"] == "serving"
    assert c.wait(job, poll_s=0.1, timeout_s=60)["state"] == "done"

    # evaluate: a place reply's placement, a placement file (loaded or its path) and nothing else.
    with open(graph_file) as f:
        graph = json.load(f)
    with open(placement_file) as f:
        pfile = json.load(f)
    assert pfile["format"] == "placer.placement" and "device" not in pfile, sorted(pfile)
    a = c.evaluate(pfile, graph=graph, devices="cpu:2")
    b = c.evaluate(placement_file, graph=graph, devices="cpu:2")
    d = c.evaluate({"device": pfile["placement"]}, graph=graph, devices="cpu:2")
    assert a["status"] == "ok" and a["step_s"] > 0 and a["step_s"] == b["step_s"] == d["step_s"], (a, b, d)
    for bad in ({"placement": pfile["placement"]}, {"format": "placer.placement"}, ["cpu:0"]):
        try:
            c.evaluate(bad, graph=graph, devices="cpu:2")
            raise AssertionError(f"{bad!r:.60} was accepted")
        except ValueError as e:
            assert "placement" in str(e), e

with PlacerClient(endpoint, timeout_ms=10000, max_message_bytes=200) as small:
    start = time.monotonic()
    try:
        small.place(**mlp)
        raise AssertionError("a request over max_message_bytes was sent")
    except PlacerError as e:
        assert e.code == "too_large" and "over the server's max_message_bytes 200" in e.message, e
    assert time.monotonic() - start < 1.0
    assert small.health()["status"] == "serving"
print("python client: interrupted calls, placement files and the size limit OK")
PYTHON

# The C++ command-line client too.
"$PLACER" query --endpoint "$ENDPOINT" health | grep -q '"status":"serving"'
if "$PLACER" query --endpoint "$ENDPOINT" place --builder mlp --cluster nope 2> "$WORK/err.txt"; then
  echo "query with a bad cluster should fail"; exit 1
fi
grep -q "unknown cluster preset 'nope'" "$WORK/err.txt"
# evaluate a placement file (mlp.json, pl.json above): simulated, then measured on the server's own CPUs with its interval.
"$PLACER" query --endpoint "$ENDPOINT" evaluate --graph "$WORK/mlp.json" --devices cpu:2 --placement "$WORK/pl.json" \
  | grep -q '"measured":false,"status":"ok","step_s":'
M=$("$PLACER" query --endpoint "$ENDPOINT" evaluate --graph "$WORK/mlp.json" --devices cpu:2 \
  --placement "$WORK/pl.json" --measure --measure-budget 2)
echo "$M" | grep -q '"measured":true,"status":"ok","step_s":' || { echo "measured evaluate: $M"; exit 1; }
echo "$M" | grep -q '"ci_low_s":.*"ci_high_s":.*"steps":.*"stop":.*"simulated_step_s":' || { echo "interval: $M"; exit 1; }

kill -TERM $SERVER
RC=0; wait $SERVER || RC=$?
grep -q "SIGTERM received, shutting down" "$WORK/serve.log"
[ $RC -eq 0 ] || { echo "server exited $RC"; exit 1; }

# A server whose limits.max_deadline_ms is under the client's default deadline (28 s for a 30 s wait):
# max_deadline_ms= caps every call's deadline (health included), deadline_ms= sets one call's; and
# graph.forward_only: the inference graph (fewer ops), which has nothing to pipeline.
cat > "$WORK/short.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
workers: 2
metrics_port: -1
state_dir: ""
default_deadline_ms: 5000
limits:
  max_deadline_ms: 10000
place:
  baselines: [single, m_etf]
jobs:
  methods: [m_topo]
CFG
start_server "$WORK/short.yaml" "$WORK/short.log"
cd "$WORK"
PYTHONPATH="$SRC/clients/python${PYTHONPATH:+:$PYTHONPATH}" $PY - "$ENDPOINT" <<'PYTHON'
import json, sys
from placer_client import PlacerClient, PlacerError
endpoint = sys.argv[1]
mlp = dict(builder="mlp", options={"layers": 2, "width": 64, "input": 64, "batch": 8}, cluster="k80x2")
with PlacerClient(endpoint) as c:
    try:
        c.health()
        raise AssertionError("a 28 s deadline was accepted by a server whose max_deadline_ms is 10000")
    except PlacerError as e:
        assert (e.code, e.field) == ("too_large", "deadline_ms") and "[1, 10000], got 28000" in e.message, e
for bad in (0, -5, 2.5, "10000", True):
    try:
        PlacerClient(endpoint, max_deadline_ms=bad)
        raise AssertionError(f"max_deadline_ms={bad!r} was accepted")
    except ValueError as e:
        assert str(e).startswith("max_deadline_ms: expected an integer >= 1") and f"got {bad!r}" in str(e), e

with PlacerClient(endpoint, max_deadline_ms=10000) as c:
    sent = []
    real = c.send_raw
    def capture(data, **kw):
        sent.append(json.loads(data))
        return real(data, **kw)
    c.send_raw = capture
    assert c.health()["status"] == "serving"
    c.policies()
    r = c.place(**mlp)
    c.baselines(**mlp, methods=["m_etf"])
    c.evaluate(r["placement"], **mlp)
    job = c.optimize(samples=8, **mlp)
    assert c.wait(job, poll_s=0.1, timeout_s=30)["state"] == "done"
    c.cancel(job)
    c.result(job, include_placement=False)
    assert {m["deadline_ms"] for m in sent} == {10000}, [(m["type"], m["deadline_ms"]) for m in sent]
    types = {m["type"] for m in sent}
    assert types == {"health", "policies", "place", "baselines", "evaluate", "optimize", "status", "cancel",
                     "result"}, types

    # Each method takes its own deadline_ms.
    sent.clear()
    c.health(deadline_ms=101)
    c.policies(deadline_ms=102)
    r = c.place(**mlp, deadline_ms=9000)
    c.baselines(**mlp, methods=["m_etf"], deadline_ms=9001)
    c.evaluate(r["placement"], **mlp, deadline_ms=9002)
    job = c.optimize(samples=8, **mlp, deadline_ms=9003)
    c.wait(job, poll_s=0.1, timeout_s=30, deadline_ms=9004)
    c.status(job, deadline_ms=9005)
    c.cancel(job, deadline_ms=9006)
    c.result(job, include_placement=False, deadline_ms=9007)
    got = [(m["type"], m["deadline_ms"]) for m in sent]
    assert got[:6] == [("health", 101), ("policies", 102), ("place", 9000), ("baselines", 9001),
                       ("evaluate", 9002), ("optimize", 9003)], got
    assert {d for t, d in got[6:-3]} == {9004} and got[-3:] == [("status", 9005), ("cancel", 9006),
                                                                ("result", 9007)], got
    try:
        c.health(deadline_ms=20000)
        raise AssertionError("a deadline over the server's max_deadline_ms was accepted")
    except PlacerError as e:
        assert (e.code, e.field) == ("too_large", "deadline_ms"), e

    # graph.forward_only: the forward graph alone, on every method that takes a problem.
    sent.clear()
    full = c.place(**mlp, include_placement=False)
    fwd = c.place(**mlp, include_placement=False, forward_only=True)
    assert 0 < fwd["ops"] < full["ops"], (fwd["ops"], full["ops"])
    b = c.baselines(**mlp, methods=["m_etf"], forward_only=True)
    assert b["ops"] == fwd["ops"], b
    p = c.place(**mlp, forward_only=True)
    assert len(p["placement"]["device"]) == fwd["ops"]
    e = c.evaluate(p["placement"], **mlp, forward_only=True)
    assert e["status"] == "ok", e
    job = c.optimize(samples=8, **mlp, forward_only=True)
    assert c.wait(job, poll_s=0.1, timeout_s=30)["state"] == "done"
    assert "forward_only" not in sent[0]["graph"], sent[0]
    assert all(m["graph"]["forward_only"] is True for m in sent[1:] if "graph" in m), sent
    try:
        c.place(**mlp, forward_only=True, objective="pipeline")
        raise AssertionError("a forward-only pipeline was accepted")
    except PlacerError as e:
        assert (e.code, e.field) == ("bad_request", "graph.forward_only"), e
    try:
        c.place(graph={"ops": []}, cluster="k80x2", forward_only=True)
        raise AssertionError("forward_only with an inline graph was sent")
    except ValueError as e:
        assert "forward_only" in str(e) and "builder=" in str(e), e

# placer_export.place takes max_deadline_ms too: a zip that is no export archive gets past the deadline
# check to the importer's bad_graph (without it, the 118 s default deadline is too_large).
import placer_export, zipfile
with zipfile.ZipFile("not_export.pt2", "w") as z:
    z.writestr("x/readme.txt", "not a torch.export archive")
try:
    placer_export.place("not_export.pt2", endpoint, devices="cpu:2", max_deadline_ms=10000)
    raise AssertionError("a zip that is no export archive was placed")
except PlacerError as e:
    assert (e.code, e.field) == ("bad_graph", "graph.pt2"), e
print("python client: max_deadline_ms, deadline_ms and forward_only OK")
PYTHON
kill -TERM $SERVER
wait $SERVER

echo "service_python: OK"
