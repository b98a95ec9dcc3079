#!/usr/bin/env bash
# End to end: `placer serve` + the Python client example (pyzmq), then SIGTERM
# must stop the server cleanly with exit status 0.
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

# The C++ command-line client too.
"$PLACER" query --endpoint "$ENDPOINT" health | grep -q '"status":"serving"'
if "$PLACER" query --endpoint "$ENDPOINT" place --builder mlp --cluster nope 2> "$WORK/err.txt"; then
  echo "query with a bad cluster should fail"; exit 1
fi
grep -q "unknown cluster preset 'nope'" "$WORK/err.txt"

kill -TERM $SERVER
RC=0; wait $SERVER || RC=$?
grep -q "SIGTERM received, shutting down" "$WORK/serve.log"
[ $RC -eq 0 ] || { echo "server exited $RC"; exit 1; }
echo "service_python: OK"
