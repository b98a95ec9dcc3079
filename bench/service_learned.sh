#!/usr/bin/env bash
# A learned optimize job through the service against `placer train` with the
# same config and seed: both must reach the same best placement (same step
# time, same sample count). Prints a markdown report.
#
#   bench/service_learned.sh [CONFIG] [SEEDS...]     (default configs/nmt_k80x4.yaml, seed 1)
#   QUERY_FLAGS="--builder mlp --cluster k80x2" bench/service_learned.sh my.yaml 1 2 3
# JOB_TIMEOUT_S (default 3600) caps the wait for each service job; past it the job is cancelled
# and the script exits 1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLACER=${PLACER:-$ROOT/build/placer}
PY=${PLACER_PYTHON:-$ROOT/.venv/bin/python3}
CONFIG=${1:-$ROOT/configs/nmt_k80x4.yaml}
shift || true
SEEDS=("${@:-1}")
JOB_TIMEOUT_S=${JOB_TIMEOUT_S:-3600}
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
PLACER=$PLACER source "$ROOT/tests/cli/lib/serve.sh"

# The graph and cluster the config names, as query flags (QUERY_FLAGS; the default is nmt_k80x4's).
read -r -a FLAGS <<< "${QUERY_FLAGS:---builder nmt --option layers=2 --option hidden=1024 --option steps=40 --option batch=64 --cluster k80x4}"
printf 'endpoint: tcp://127.0.0.1:*\nmetrics_port: -1\n' > "$WORK/service.yaml"
start_server "$WORK/service.yaml" "$WORK/serve.log" > /dev/null

echo "# A learned service job vs placer train, same config and seed"
echo
echo "Config: \`${CONFIG#$ROOT/}\`. Commit $(git -C "$ROOT" rev-parse --short HEAD). Command: \`bench/service_learned.sh ${CONFIG#$ROOT/} ${SEEDS[*]}\`."
echo "Machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| seed | placer train best (s) | samples | wall (s) | service job best (s) | samples | wall (s) | same |"
echo "|---|---|---|---|---|---|---|---|"
for seed in "${SEEDS[@]}"; do
  t0=$(date +%s.%N)
  "$PLACER" train --config "$CONFIG" --seed "$seed" -o "$WORK/train-$seed" -q > /dev/null
  t1=$(date +%s.%N)
  JOB=$("$PLACER" query --endpoint "$ENDPOINT" --seed "$seed" optimize "${FLAGS[@]}" --train-config "$CONFIG" --no-placement |
        sed -n 's/.*"job_id":"\(j-[0-9a-f]*\)".*/\1/p')
  [ -n "$JOB" ] || { echo "service_learned: seed $seed: optimize returned no job id" >&2; exit 1; }
  deadline=$(( $(date +%s) + JOB_TIMEOUT_S ))
  until "$PLACER" query --endpoint "$ENDPOINT" status "$JOB" | grep -q '"state":"\(done\|failed\|cancelled\)"'; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "service_learned: seed $seed: job $JOB not finished after $JOB_TIMEOUT_S s (JOB_TIMEOUT_S); cancelled" >&2
      "$PLACER" query --endpoint "$ENDPOINT" cancel "$JOB" > /dev/null 2>&1 || true
      exit 1
    fi
    sleep 1
  done
  t2=$(date +%s.%N)
  "$PLACER" query --endpoint "$ENDPOINT" result "$JOB" --no-placement > "$WORK/result-$seed.json"
  "$PY" - "$WORK/train-$seed/summary.json" "$WORK/result-$seed.json" "$seed" "$t0" "$t1" "$t2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))["result"]
t0, t1, t2 = map(float, sys.argv[4:7])
same = r["state"] == "done" and r["best"]["step_s"] == s["best_step_s"] and r["progress"]["samples"] == s["samples"]
print(f"| {sys.argv[3]} | {s['best_step_s']:.6g} | {s['samples']} | {t1 - t0:.0f} | {r['best']['step_s']:.6g} | "
      f"{r['progress']['samples']} | {t2 - t1:.0f} | {'yes' if same else 'NO'} |")
EOF
done
