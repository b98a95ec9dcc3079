#!/usr/bin/env bash
# A service whose learned jobs evaluate on rollout workers (rollouts.bind):
# two `placer worker` processes join, one is SIGKILLed mid-job, the job still
# finishes with every sample counted once, its evaluations were remote, and
# its result equals `placer train` run locally with the same config and seed.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$(mktemp -d)
SERVER=""
W1=""
W2=""
trap 'for p in $SERVER $W1 $W2; do kill -9 $p 2>/dev/null; done; rm -rf "$WORK"' EXIT
source "$SRC/tests/cli/lib/serve.sh"

cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: -1
rollouts:
  bind: tcp://127.0.0.1:*
  worker_wait_s: 30
CFG
cat > "$WORK/train.yaml" <<CFG
name: rollouts
graph: {builder: mlp, options: {layers: 4, width: 64, input: 64, batch: 8}}
cluster: k80x4
policy: {type: seq2seq, hidden: 16}
train: {updates: 60, samples_per_update: 8}
warm_start: {methods: [m_etf], bc_steps: 10}
run: {seed: 5, threads: 1, output_dir: $WORK/local}
CFG
start_server "$WORK/service.yaml" "$WORK/serve.log"
POOL=$(sed -n 's/^placer serve: rollout workers connect to \(tcp:[^ ]*\).*/\1/p' "$WORK/serve.log")
[ -n "$POOL" ] || { echo "no rollout endpoint in the log"; cat "$WORK/serve.log"; exit 1; }
# One slow worker (it will be killed holding a task) and one normal one.
"$PLACER" worker --connect "$POOL" --name slow --slow-ms 50 > "$WORK/w1.log" 2>&1 &
W1=$!
"$PLACER" worker --connect "$POOL" --name fast > "$WORK/w2.log" 2>&1 &
W2=$!
for _ in $(seq 100); do
  "$PLACER" query --endpoint "$ENDPOINT" health | grep -q '"rollout_workers":2' && break; sleep 0.1
done
"$PLACER" query --endpoint "$ENDPOINT" health | grep -q '"rollout_workers":2' || { echo "workers did not join"; cat "$WORK"/w*.log; exit 1; }

"$PLACER" train --config "$WORK/train.yaml" -q > /dev/null
JOB=$("$PLACER" query --endpoint "$ENDPOINT" optimize --builder mlp --option layers=4 --option width=64 --option input=64 \
      --option batch=8 --cluster k80x4 --train-config "$WORK/train.yaml" --no-placement | sed -n 's/.*"job_id":"\(j-[0-9a-f]*\)".*/\1/p')
for _ in $(seq 300); do
  U=$("$PLACER" query --endpoint "$ENDPOINT" status "$JOB" | sed -n 's/.*"updates":\([0-9]*\).*/\1/p')
  [ -n "$U" ] && [ "$U" -ge 5 ] && break; sleep 0.1
done
[ "${U:-0}" -ge 5 ] || { echo "the job did not get to 5 updates"; exit 1; }
"$PLACER" query --endpoint "$ENDPOINT" status "$JOB" | grep -q '"state":"running"' || { echo "the job is not running any more"; exit 1; }
kill -9 $W1; W1=""
echo "killed the slow worker at update ${U:-?}"
for _ in $(seq 600); do
  S=$("$PLACER" query --endpoint "$ENDPOINT" status "$JOB")
  echo "$S" | grep -q '"state":"\(done\|failed\|cancelled\)"' && break; sleep 0.2
done
echo "$S" | grep -q '"state":"done"' || { echo "job did not finish: $S"; exit 1; }
LOCAL=$(sed -n 's/.*"best_step_s": \([0-9.e+-]*\).*/\1/p' "$WORK/local/summary.json" | head -1)
REMOTE=$(echo "$S" | sed -n 's/.*"best":{"method":"learned:seq2seq","step_s":\([0-9.e+-]*\).*/\1/p')
SAMPLES=$(echo "$S" | sed -n 's/.*"samples":\([0-9]*\).*/\1/p')
REMOTE_EVALS=$(echo "$S" | sed -n 's/.*"remote_evaluations":\([0-9]*\).*/\1/p')
echo "local best $LOCAL s; service job through workers $REMOTE s, $SAMPLES samples, $REMOTE_EVALS remote evaluations"
[ "$SAMPLES" = 480 ] || { echo "expected 480 samples: $S"; exit 1; }
[ "${REMOTE_EVALS:-0}" -gt 0 ] || { echo "no evaluation went to a worker: $S"; exit 1; }
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a == b else 1)" "$LOCAL" "$REMOTE" ||
  { echo "workers changed the result"; exit 1; }
kill -TERM $SERVER; RC=0; wait $SERVER || RC=$?; SERVER=""
[ $RC -eq 0 ] || { echo "serve exited $RC"; exit 1; }
echo "service_rollouts: OK"
