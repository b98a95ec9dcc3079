#!/usr/bin/env bash
# The Python front door end to end: a PyTorch model is exported with
# clients/python/placer_export.py, sent to a live `placer serve` as a .pt2
# (weights left out), imported there and placed. Bad archives get a bad_graph
# error naming graph.pt2; `placer graph import` reads the same archive.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
workers: 2
metrics_port: -1
place:
  baselines: [single, round_robin, m_etf]
CFG
source "$SRC/tests/cli/lib/serve.sh"
start_server "$WORK/service.yaml" "$WORK/serve.log"

cd "$WORK"
PYTHONPATH="$SRC/clients/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$ENDPOINT" <<'PYEOF'
import sys, torch, torch.nn as nn
import placer_export
from placer_client import PlacerError

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)
        self.big = nn.Linear(256, 256)   # 256 KiB of weights: left out of what is sent
    def forward(self, x):
        y = torch.relu(self.conv(x)).flatten(1)
        return self.fc(y) + self.big(torch.zeros(x.shape[0], 256)).sum()

endpoint = sys.argv[1]
path = placer_export.export(Net(), (torch.randn(4, 3, 8, 8),), "net.pt2", train=True)
sent = placer_export.structure_only(path)
import os, io, zipfile, time
assert len(sent) < os.path.getsize(path) - 200_000, (len(sent), os.path.getsize(path))
# The example inputs (data/sample_inputs/, a whole batch) are not sent: the importer reads shapes from the program.
assert any("/data/sample_inputs/" in n for n in zipfile.ZipFile(path).namelist()), zipfile.ZipFile(path).namelist()
assert not any("sample_inputs" in n for n in zipfile.ZipFile(io.BytesIO(sent)).namelist())
with open("sent.pt2", "wb") as f:
    f.write(sent)

r = placer_export.place(path, endpoint, cluster="k80x2")
assert r["graph"] == "pt2" and r["ops"] > 20, r
assert r["status"] == "ok" and r["step_s"] > 0, r
assert "conv/conv2d" in r["placement"]["device"], sorted(r["placement"]["device"])[:5]
assert r["placement"]["device"]["conv.weight"].startswith("cuda:"), r["placement"]["device"]["conv.weight"]
print("placed:", r["method"], r["step_s"], r["ops"], "ops")

fwd = placer_export.place(path, endpoint, devices="cpu:2", forward_only=True, include_placement=False)
assert fwd["ops"] < r["ops"], (fwd["ops"], r["ops"])

with open("broken.pt2", "wb") as f:
    f.write(b"PK\x03\x04 not really a zip")
try:
    placer_export.place("broken.pt2", endpoint, cluster="k80x2")
    raise SystemExit("a broken archive should fail")
except PlacerError as e:
    assert e.code == "bad_graph" and "not a torch.export archive" in e.message, e
except Exception as e:  # zipfile refuses it on the client side first
    assert "zip" in str(e).lower(), e
try:
    placer_export.place("net.pt2", endpoint, cluster="k80x2", inputs=["x:4x5x8x8:float"])
    raise SystemExit("a wrong static input size should fail")
except PlacerError as e:
    assert e.code == "bad_graph" and e.field == "graph.pt2" and "dimension 1 is 3" in e.message, e
    assert "placer-pt2-" not in e.message, e.message
# A request over the server's max_message_bytes is refused at once, naming its size and the limit (ZeroMQ
# would drop it without a reply and the caller wait out its timeout).
start = time.monotonic()
try:
    placer_export.place(path, endpoint, cluster="k80x2", max_message_bytes=4096, timeout_ms=20000)
    raise SystemExit("a request over max_message_bytes was sent")
except PlacerError as e:
    assert e.code == "too_large" and "bytes, over the server's max_message_bytes 4096" in e.message, e
assert time.monotonic() - start < 5, time.monotonic() - start
print("front door: OK")
PYEOF

# The command-line form, and a request that is not base64.
PYTHONPATH="$SRC/clients/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$SRC/clients/python/placer_export.py" place net.pt2 \
  --endpoint "$ENDPOINT" --cluster k80x2 --no-placement > reply.json
grep -q '"method"' reply.json || { echo "no method in: $(cat reply.json)"; exit 1; }
"$PY" - "$ENDPOINT" <<'PYEOF'
import sys, zmq, json
s = zmq.Context().socket(zmq.REQ); s.connect(sys.argv[1])
s.send_string(json.dumps({"version": 1, "type": "place", "graph": {"pt2": "$$$"}, "cluster": "k80x2"}))
r = json.loads(s.recv_string())
assert r["status"] == "error" and r["error"]["field"] == "graph.pt2" and "base64" in r["error"]["message"], r
PYEOF

# The same archive through the local importer; what place sent (no weights, no sample inputs) imports the same ops.
"$PLACER" graph import net.pt2 -o net.json | grep -q "input shapes: x:4x3x8x8 (recorded example)"
"$PLACER" graph import sent.pt2 -o sent.json | grep -q "input shapes: x:4x3x8x8 (recorded example)"
"$PY" - <<'PYEOF'
import json
a, b = json.load(open("net.json")), json.load(open("sent.json"))
assert a["ops"] == b["ops"], "the stripped archive imports other ops"
PYEOF

kill -TERM $SERVER
wait $SERVER || true
echo "service_export: OK"
