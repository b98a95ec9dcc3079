#!/usr/bin/env bash
# Measured alone or interleaved (bench/results/rewarm_cpu2.md): with many placements
# measured in turn, each measured step follows the others' and may start with
# cold caches, which a training run of one placement never does. This measures
# the demo's nmt on cpu:2 with nine placements (eight heuristics and a given one,
# e.g. a learned placement): each alone (`placer measure`), then all nine
# interleaved (`--compare`) with --rewarm 0, 1 and 3, then each alone again, and prints how far each interleaved figure is from the alone ones.
# Usage: bash bench/run_rewarm.sh [BUILD=build] [GIVEN=runs/demo/policy_best_placement.json] [OUT=/tmp/placer-rewarm]
# Run it on an otherwise idle machine.
set -euo pipefail
BUILD=${1:-build}
GIVEN=${2:-runs/demo/policy_best_placement.json}
OUT=${3:-/tmp/placer-rewarm}
P="$BUILD/placer"
mkdir -p "$OUT"
"$P" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 -o "$OUT/nmt.json" > /dev/null
METHODS="m_etf m_topo expert single mincut dp round_robin m_sct"
for m in $METHODS; do "$P" place --graph "$OUT/nmt.json" --devices cpu:2 --method "$m" -o "$OUT/$m.json" > /dev/null; done
cp "$GIVEN" "$OUT/given.json"
NAMES="$METHODS given"
PROTO=(--warmup 2 --steps 6 --max-steps 40 --target 0.01)
alone() {
  for m in $NAMES; do "$P" measure --graph "$OUT/nmt.json" --devices cpu:2 --placement "$OUT/$m.json" "${PROTO[@]}" --json "$OUT/alone$1_$m.json" > /dev/null; done
}
files=(); for m in $NAMES; do files+=("$OUT/$m.json"); done
echo "alone, first pass ($(date +%T))"; alone 1
REGIMES=("--rewarm 0" "--rewarm 1" "--rewarm 3")
for k in "${!REGIMES[@]}"; do
  echo "interleaved, ${REGIMES[$k]} ($(date +%T))"
  # shellcheck disable=SC2086
  "$P" measure --graph "$OUT/nmt.json" --devices cpu:2 --compare "${files[@]}" "${PROTO[@]}" ${REGIMES[$k]} --json "$OUT/interleaved_$k.json" > /dev/null
done
echo "alone, second pass ($(date +%T))"; alone 2
python3 - "$OUT" $NAMES <<'PY'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
def step(path):
    return json.load(open(path))["step_s"]
alone = {m: (step(f"{out}/alone1_{m}.json") + step(f"{out}/alone2_{m}.json")) / 2 for m in names}
drift = {m: step(f"{out}/alone2_{m}.json") / step(f"{out}/alone1_{m}.json") - 1 for m in names}
def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i]); r = [0] * len(v)
    for k, i in enumerate(order): r[i] = k
    return r
def spearman(a, b):
    ra, rb = ranks(a), ranks(b); n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1))
regimes = ["--rewarm 0", "--rewarm 1", "--rewarm 3"]
inter = []
for k in range(len(regimes)):
    rows = json.load(open(f"{out}/interleaved_{k}.json"))["placements"]
    inter.append({os.path.basename(x["file"])[:-5]: x["step_s"] for x in rows})
print("| placement | alone (mean of two passes), ms | alone, second / first | " +
      " | ".join(f"interleaved {r}: ms, vs alone" for r in regimes) + " |")
print("|---|---:|---:|" + "---:|" * len(regimes))
for m in names:
    a = alone[m]
    cells = " | ".join(f"{1e3*i[m]:.2f}, {100*(i[m]/a-1):+.1f}%" for i in inter)
    print(f"| {m} | {1e3*a:.2f} | {100*drift[m]:+.1f}% | {cells} |")
print()
for r, i in zip(regimes, inter):
    dev = [abs(i[m] / alone[m] - 1) for m in names]
    print(f"- interleaved {r}: mean |interleaved / alone - 1| {100*sum(dev)/len(dev):.1f}%, worst {100*max(dev):.1f}%, "
          f"Spearman vs alone {spearman([alone[m] for m in names], [i[m] for m in names]):.3f}")
dv = [abs(d) for d in drift.values()]
print(f"- alone, second pass vs first: mean |change| {100*sum(dv)/len(dv):.1f}%, worst {100*max(dv):.1f}%")
PY
