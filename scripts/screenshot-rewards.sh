#!/usr/bin/env bash
# Screenshot of Prometheus' own graph page showing live reward curves: a
# learned optimize job in `placer serve` and a `placer train` run beside it,
# both scraped by a real Prometheus; headless Chromium renders the page.
#
#   scripts/screenshot-rewards.sh [OUT.png] [SECONDS]
#
# Defaults: docs/images/prometheus-reward.png, 90 s of training. Needs a built
# placer (build/placer or $PLACER), prometheus, and Debian's chromium (installed
# here when missing, as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/docs/images/prometheus-reward.png}
SECONDS_RUN=${2:-90}
PLACER=${PLACER:-$ROOT/build/placer}
PY=${PLACER_PYTHON:-$ROOT/.venv/bin/python3}
[ -x "$PLACER" ] || { echo "no placer binary at $PLACER (make build)"; exit 1; }
command -v prometheus >/dev/null || { echo "prometheus missing (scripts/install-deps.sh installs it)"; exit 1; }
if ! command -v chromium >/dev/null; then
  echo "installing chromium (Debian package) ..."
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
fi
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SERVE_M=$(free_port); TRAIN_M=$(free_port); PROM=$(free_port)

cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: $SERVE_M
metrics_address: 127.0.0.1
CFG
"$PLACER" serve --config "$WORK/service.yaml" > "$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
EP=$(sed -n 's/^placer serve: listening on \(tcp:[^ ]*\).*/\1/p' "$WORK/serve.log")

cat > "$WORK/prometheus.yml" <<CFG
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: placer
    static_configs: [{targets: ["127.0.0.1:$SERVE_M", "127.0.0.1:$TRAIN_M"]}]
CFG
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)

echo "learned service job: nmt on k80x4 (configs/nmt_k80x4.yaml), ${SECONDS_RUN} s"
"$PLACER" query --endpoint "$EP" optimize --builder nmt --cluster k80x4 --train-config "$ROOT/configs/nmt_k80x4.yaml" \
  --seconds "$SECONDS_RUN" --no-placement
echo "placer train run beside it: rnnlm on k80x2 (configs/rnnlm_k80x2.yaml), ${SECONDS_RUN} s"
"$PLACER" train --config "$ROOT/configs/rnnlm_k80x2.yaml" --time-limit "$SECONDS_RUN" --metrics-port "$TRAIN_M" \
  -o "$WORK/train-run" -q > "$WORK/train.log" 2>&1 &
PIDS+=($!)
sleep $((SECONDS_RUN + 20))  # warm starts, then the training time

Q=$("$PY" -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' '{__name__=~"placer_train_reward|placer_train_reward_best"}')
URL="http://127.0.0.1:$PROM/graph?g0.expr=$Q&g0.tab=0&g0.range_input=$((SECONDS_RUN / 60 + 1))m"
mkdir -p "$(dirname "$OUT")"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 \
  --virtual-time-budget=15000 --screenshot="$OUT" "$URL" > "$WORK/chromium.log" 2>&1 || { cat "$WORK/chromium.log"; exit 1; }
echo "wrote $OUT ($URL)"
