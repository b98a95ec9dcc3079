#!/usr/bin/env bash
# Measured mode on cpu:2: trains the learned placer with every sampled
# placement run for real (configs/cpu2_*_measured.yaml), then measures its
# best placement side by side with every baseline, alternating, several
# rounds, and writes bench/results/learned_measured_cpu2.md.
# Usage: bash bench/run_measured_cpu2.sh [BUILD_DIR] [UPDATES] [ROUNDS]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
UPDATES=${2:-10}
ROUNDS=${3:-5}
P="$BUILD/placer"
OUT=bench/results/learned_measured_cpu2.md
WORK=runs/bench_measured_cpu2
mkdir -p "$WORK"
METHODS="single round_robin expert mincut m_topo m_etf m_sct dp"

{
  echo "# Measured mode on cpu:2: learned vs every baseline, measured side by side"
  echo
  echo "Command: \`bash bench/run_measured_cpu2.sh $BUILD $UPDATES $ROUNDS\` (commit $(git rev-parse --short HEAD))  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Training: \`placer train -c CONFIG --updates $UPDATES\`, every sampled placement measured for real"
  echo "(2 warm-up + 5 measured steps). Then each placement below is measured with"
  echo "\`placer measure --warmup 2 --steps 5\` in $ROUNDS rounds, the placements in turn within a"
  echo "round, so slow spells of the machine hit all of them alike. Figure: the median over"
  echo "rounds of each round's median step; spread: min-max of the round medians."
} > "$OUT"

run() {  # config, graph name, builder args...
  local config=$1 name=$2
  shift 2
  local dir="$WORK/$name"
  mkdir -p "$dir"
  "$P" graph build "$@" -o "$dir/graph.json" > /dev/null
  echo "== $name: training ($config, $UPDATES updates)" >&2
  "$P" train -c "$config" --updates "$UPDATES" -o "$dir/run" -q > "$dir/train.log"
  cp "$dir/run/best_placement.json" "$dir/p_learned.json"
  for m in $METHODS; do
    "$P" place --method "$m" --graph "$dir/graph.json" --devices cpu:2 -o "$dir/p_$m.json" > /dev/null
  done
  for r in $(seq 1 "$ROUNDS"); do
    echo "== $name: round $r/$ROUNDS" >&2
    for m in learned $METHODS; do
      "$P" measure --graph "$dir/graph.json" --placement "$dir/p_$m.json" --devices cpu:2 --warmup 2 --steps 5 \
        --json "$dir/m_${m}_$r.json" > /dev/null
    done
  done
  {
    echo
    echo "## $name ($*)"
    echo
    python3 - "$dir" "$ROUNDS" learned $METHODS <<'PY'
import json, statistics, sys
d, rounds, methods = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = []
for m in methods:
    med = []
    for r in range(1, rounds + 1):
        j = json.load(open(f"{d}/m_{m}_{r}.json"))
        res = j.get("result", j)
        med.append(res["step_s"] if res.get("status", "ok") == "ok" else float("inf"))
    rows.append((statistics.median(med), min(med), max(med), m))
rows.sort()
learned = next(r for r in rows if r[3] == "learned")
best_base = min(r for r in rows if r[3] != "learned")
print("| method | measured step (s) | round medians min-max (s) | vs learned |")
print("|---|---:|---:|---:|")
for med, lo, hi, m in rows:
    print(f"| {'**learned:seq2seq**' if m == 'learned' else m} | {med:.4f} | {lo:.4f}-{hi:.4f} | {100 * (med / learned[0] - 1):+.1f}% |")
verdict = "at least as fast as" if learned[0] <= best_base[0] else "SLOWER than"
print(f"\nLearned {learned[0]:.4f} s vs best baseline {best_base[3]} {best_base[0]:.4f} s: learned is {verdict} every baseline "
      f"({100 * (best_base[0] / learned[0] - 1):+.1f}% in its favour).")
PY
  } >> "$OUT"
}

run configs/cpu2_nmt_measured.yaml nmt nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000
run configs/cpu2_inception_v3_measured.yaml inception_v3 inception_v3 --opt batch=4 --opt image=75 --opt width_div=8 --opt classes=10
echo "wrote $OUT" >&2
