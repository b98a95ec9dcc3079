#!/usr/bin/env bash
# A real Prometheus server scrapes a short `placer train --metrics-port` run;
# the reward series is read back through Prometheus' HTTP API. Also:
# `promtool check config` on the shipped scrape config and `promtool check
# metrics` on what `placer serve` and `placer train` expose.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$2
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
command -v prometheus >/dev/null && command -v promtool >/dev/null || { echo "FAIL: prometheus/promtool missing (scripts/install-deps.sh installs them)"; exit 1; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_get() { $PY -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }

echo "== promtool check config (shipped)"
promtool check config "$SRC/configs/prometheus/prometheus.yml"

echo "== placer serve with --metrics-port"
cat > "$WORK/service.yaml" <<CFG
endpoint: tcp://127.0.0.1:*
metrics_port: 0
metrics_address: 127.0.0.1
place:
  baselines: [single, m_etf]
CFG
"$PLACER" serve --config "$WORK/service.yaml" > "$WORK/serve.log" 2>&1 &
SERVE=$!
PIDS+=($SERVE)
for _ in $(seq 100); do grep -q "metrics on" "$WORK/serve.log" && break; sleep 0.1; done
ENDPOINT=$(sed -n 's/^placer serve: listening on \(tcp:[^ ]*\).*/\1/p' "$WORK/serve.log")
MPORT=$(sed -n 's/^placer serve: metrics on http:\/\/[^:]*:\([0-9]*\)\/metrics/\1/p' "$WORK/serve.log")
"$PLACER" query --endpoint "$ENDPOINT" place --builder mlp --cluster k80x2 --no-placement > /dev/null
"$PLACER" query --endpoint "$ENDPOINT" raw '{"version":1,"type":"nope"}' > /dev/null || true
http_get "http://127.0.0.1:$MPORT/metrics" > "$WORK/serve.metrics"
grep -q 'placer_service_requests_total{outcome="ok",type="place"} 1' "$WORK/serve.metrics"
grep -q 'placer_service_requests_total{outcome="error",type="invalid"} 1' "$WORK/serve.metrics"
promtool check metrics < "$WORK/serve.metrics"
TRAIN_PORT=$(free_port)
PROM_PORT=$(free_port)
cat > "$WORK/prometheus.yml" <<CFG
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: placer-train
    scrape_interval: 1s
    static_configs:
      - targets: ["127.0.0.1:$TRAIN_PORT"]
  - job_name: placer-serve
    scrape_interval: 1s
    static_configs:
      - targets: ["127.0.0.1:$MPORT"]
CFG
promtool check config "$WORK/prometheus.yml"

prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do http_get "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
http_get "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || { echo "prometheus did not start"; cat "$WORK/prometheus.log"; exit 1; }

# The service's request counter, read back through Prometheus' HTTP API.
query() { http_get "http://127.0.0.1:$PROM_PORT/api/v1/query?query=$1"; }
ok=""
for _ in $(seq 60); do
  v=$(query 'placer_service_requests_total%7Btype%3D%22place%22%2Coutcome%3D%22ok%22%7D' | $PY -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true)
  if [ "$v" = "1" ]; then ok=1; break; fi
  sleep 0.5
done
[ -n "$ok" ] || { echo "Prometheus did not get placer_service_requests_total from placer serve"; exit 1; }
echo "placer_service_requests_total{type=place,outcome=ok} = 1 via Prometheus"

"$PLACER" train --help | grep -- "--metrics-port" > /dev/null || { echo "FAIL: placer train has no --metrics-port (app/cmd_train.cc must pass placer::service::make_prometheus_sink to train())"; exit 1; }
cat > "$WORK/train.yaml" <<CFG
name: promtest
graph: {builder: mlp, options: {layers: 3, width: 64, input: 64, batch: 8}}
cluster: k80x2
policy: {type: seq2seq, hidden: 16}
train: {updates: 1000000, samples_per_update: 8, time_limit_s: 1200}
warm_start: {methods: [m_etf], bc_steps: 0}
run: {output_dir: $WORK/run, threads: 1}
CFG
echo "== placer train --metrics-port $TRAIN_PORT (stopped once the dashboard is checked)"
"$PLACER" train --config "$WORK/train.yaml" --metrics-port "$TRAIN_PORT" > "$WORK/train.log" 2>&1 &
TRAIN=$!
PIDS+=($TRAIN)
# Lint what the run exposes while it runs.
for _ in $(seq 300); do http_get "http://127.0.0.1:$TRAIN_PORT/metrics" > "$WORK/train.metrics" 2>/dev/null && grep -q placer_train_reward "$WORK/train.metrics" && break; sleep 0.2; done
grep -q '^placer_train_reward{' "$WORK/train.metrics" || { echo "train exposes no reward"; cat "$WORK/train.log"; exit 1; }
echo "== promtool check metrics (placer train)"
promtool check metrics < "$WORK/train.metrics"

# Read the reward series back through the HTTP API.
found=""
for _ in $(seq 180); do
  out=$(http_get "http://127.0.0.1:$PROM_PORT/api/v1/query_range?query=placer_train_reward%7Brun%3D%22promtest%22%7D&start=$(( $(date +%s) - 120 ))&end=$(date +%s)&step=1" || true)
  n=$(printf '%s' "$out" | $PY -c 'import json,sys; d=json.load(sys.stdin); r=d["data"]["result"]; print(len(r[0]["values"]) if r else 0)' 2>/dev/null || echo 0)
  if [ "$n" -ge 3 ]; then found=$out; break; fi
  sleep 0.5
done
[ -n "$found" ] || { echo "no reward series in Prometheus"; tail -5 "$WORK/train.log"; exit 1; }
printf '%s' "$found" | $PY -c '
import json, sys
d = json.load(sys.stdin)
s = d["data"]["result"][0]
vals = [float(v) for _, v in s["values"]]
assert s["metric"]["run"] == "promtest" and s["metric"]["graph"], s["metric"]
assert all(v < 0 for v in vals), vals  # reward = -sqrt(step seconds)
print("reward series via Prometheus: %d points, labels %s, first %.5f last %.5f" % (len(vals), s["metric"], vals[0], vals[-1]))
'

# A live service job beside the live training run: a learned optimize job.
JOB=$("$PLACER" query --endpoint "$ENDPOINT" optimize --builder mlp --option layers=3 --cluster k80x2 --learned seq2seq \
      --seconds 10 --no-placement | sed -n 's/.*"job_id":"\(j-[0-9a-f]*\)".*/\1/p')
[ -n "$JOB" ] || { echo "no learned job"; exit 1; }
for _ in $(seq 20); do "$PLACER" query --endpoint "$ENDPOINT" place --builder mlp --cluster k80x2 --no-placement > /dev/null; sleep 0.2; done

# Every query of the shipped Grafana dashboard must return data from this
# Prometheus (a panel whose query names no real series shows nothing), and the
# per-run panels must show both the training run and the service job.
echo "== every dashboard query against Prometheus"
cat > "$WORK/dash.py" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
dash, base, job = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def get(path, **params):
    url = base + path + "?" + urllib.parse.urlencode(params, doseq=True)
    return json.load(urllib.request.urlopen(url, timeout=5))["data"]
missing = []
for var in dash["templating"]["list"]:  # label_values(METRIC, LABEL)
    metric, label = var["query"]["query"][len("label_values("):-1].split(", ")
    values = get(f"/api/v1/label/{label}/values", **{"match[]": metric})
    if not {"promtest", job} <= set(values):
        missing.append(f"variable {var['name']}: {values}")
n = 0
for panel in dash["panels"]:
    for t in panel.get("targets", []):
        expr = t["expr"].replace("$run", ".*")
        n += 1
        result = get("/api/v1/query", query=expr)["result"]
        if not result:
            missing.append(f"{panel['title']!r}: {expr}: no data")
        elif '{run=~' in t["expr"] and not expr.startswith("rate("):
            runs = {r["metric"].get("run") for r in result}
            if not {"promtest", job} <= runs:
                missing.append(f"{panel['title']!r}: {expr}: runs {sorted(r for r in runs if r)}")
if missing:
    print("\n".join(missing))
    sys.exit(1)
print(f"{n} dashboard queries and {len(dash['templating']['list'])} variable(s) return data, "
      f"for run promtest and service job {job}")
PYEOF
ok=""
for _ in $(seq 120); do
  if "$PY" "$WORK/dash.py" "$SRC/configs/grafana/dashboards/placer.json" "http://127.0.0.1:$PROM_PORT" "$JOB" > "$WORK/dash.out" 2>&1; then
    ok=1; break
  fi
  sleep 0.5
done
cat "$WORK/dash.out"
[ -n "$ok" ] || { echo "dashboard queries without data (above)"; exit 1; }

kill $TRAIN 2>/dev/null || { echo "placer train ended early"; tail -5 "$WORK/train.log"; exit 1; }
wait $TRAIN 2>/dev/null || true
kill -INT $SERVE
RC=0; wait $SERVE || RC=$?
[ $RC -eq 0 ] || { echo "serve exited $RC on SIGINT"; exit 1; }

echo "service_prometheus: OK"
