#!/usr/bin/env bash
# Jobs across a crash: `placer serve` is killed with SIGKILL while an optimize
# job runs; the restarted server (same state_dir) reports that job failed,
# keeping its best placement so far, and still serves a finished job's result.
set -euo pipefail
PLACER=$(realpath "$1")
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill -9 $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: -1
state_dir: state
place:
  baselines: [single, m_etf]
jobs:
  methods: [local_search]
CFG
# shellcheck source=lib/serve.sh
source "$(dirname "$0")/lib/serve.sh"
# Each start has its own log: a reused log would still name the killed server's
# port until the new process truncates it, and a query sent there waits out its
# timeout (a flake seen under ctest -j2).
STARTS=0
start() {
  STARTS=$((STARTS + 1))
  LOG="$WORK/serve$STARTS.log"
  start_server "$WORK/service.yaml" "$LOG" > /dev/null
  EP=$ENDPOINT
}
job_of() { sed -n 's/.*"job_id":"\(j-[0-9a-f]*\)".*/\1/p'; }
# Waits up to 60 s (other tests may share the cores) for a condition, else fails naming it.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "timed out waiting for $what"; cat "$LOG"; exit 1
}
start
DONE=$("$PLACER" query --endpoint "$EP" optimize --builder mlp --cluster k80x2 --samples 50 | job_of)
wait_for "job $DONE to finish" sh -c "'$PLACER' query --endpoint '$EP' status '$DONE' | grep -q '\"state\":\"done\"'"
RUNNING=$("$PLACER" query --endpoint "$EP" optimize --builder mlp --cluster k80x4 --seconds 120 | job_of)
# Its record on disk has a best placement once the job has saved progress (every second of the job's time).
wait_for "job $RUNNING to save its best placement" grep -q '"best_placement":{"graph":"mlp"' "$WORK/state/jobs/$RUNNING.json"
kill -9 $SERVER; wait $SERVER 2>/dev/null || true
start
S=$("$PLACER" query --endpoint "$EP" status "$RUNNING")
echo "$S" | grep -q '"state":"failed"' || { echo "expected failed: $S"; exit 1; }
echo "$S" | grep -q 'the server restarted while the job was running' || { echo "$S"; exit 1; }
"$PLACER" query --endpoint "$EP" result "$RUNNING" | grep -q '"placement":{"graph":"mlp"' || { echo "best placement so far was not kept"; exit 1; }
"$PLACER" query --endpoint "$EP" result "$DONE" | grep -q '"state":"done"'
if "$PLACER" query --endpoint "$EP" result "$DONE" 2>/dev/null; then echo "a fetched result must be gone"; exit 1; fi
kill -TERM $SERVER; RC=0; wait $SERVER || RC=$?; SERVER=""
[ $RC -eq 0 ] || { echo "serve exited $RC"; exit 1; }
echo "service_restart: OK"
