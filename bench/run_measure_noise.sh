#!/usr/bin/env bash
# How far a measurement on cpu:2 agrees with itself, one change at a time:
# the issue's NMT (hidden 192, 8 steps, batch 24; 980 ops), its two
# single-device placements (the same work) and a split, measured
#   - as before: each placement alone, 2 warm-up + 5 steps, the placements one
#     after the other, three times (what `placer measure` did);
#   - with the protocol: interleaved, until the median's 95% interval is within
#     1% (at most 60 steps each);
# under each runtime setting named below. Writes bench/results/measure_noise.md.
# Usage: bash bench/run_measure_noise.sh [BUILD_DIR]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
P="$BUILD/placer"
OUT=bench/results/measure_noise.md
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$P" graph build nmt --opt hidden=192 --opt steps=8 --opt batch=24 -o "$TMP/nmt.json" > /dev/null
"$P" place --method single --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/single0.json" > /dev/null
python3 - "$TMP" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(f"{d}/single0.json"))
p1 = dict(p); p1["placement"] = {k: "cpu:1" for k in p["placement"]}
json.dump(p1, open(f"{d}/single1.json", "w"))
PY
"$P" place --method m_etf --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/split.json" > /dev/null

{
  echo "# Measurement noise on cpu:2: the same work measured against itself"
  echo
  echo "Command: \`bash bench/run_measure_noise.sh $BUILD\` (commit $(git rev-parse --short HEAD))  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Graph: nmt, hidden 192, 8 steps, batch 24 ($(grep -o '"name"' "$TMP/nmt.json" | wc -l) names in the file)."
  echo "single0 and single1 put every op on cpu:0 and on cpu:1: the same work, so the same time is the right answer."
  echo "split is m_etf's placement over both devices."
  echo
  echo "| setting | protocol | single0 s | single1 s | gap single1/single0 | split s | steps |"
  echo "|---|---|---:|---:|---:|---:|---:|"
} > "$OUT"

# One setting: an environment assignment ("" = as shipped) and its label.
measure_setting() {
  local label=$1 envs=$2
  local old=()
  for rep in 1 2 3; do
    for p in single0 single1 split; do
      env $envs "$P" measure --graph "$TMP/nmt.json" --placement "$TMP/$p.json" --devices cpu:2 \
        --warmup 2 --steps 5 --max-steps 5 --json "$TMP/old_${p}_$rep.json" > /dev/null
    done
  done
  env $envs "$P" measure --graph "$TMP/nmt.json" --compare "$TMP/single0.json" "$TMP/single1.json" "$TMP/split.json" \
    --devices cpu:2 --warmup 2 --steps 10 --max-steps 60 --target 0.01 --json "$TMP/new.json" > /dev/null
  python3 - "$TMP" "$label" >> "$OUT" <<'PY'
import json, statistics, sys
d, label = sys.argv[1], sys.argv[2]
def old(p):
    return [json.load(open(f"{d}/old_{p}_{r}.json"))["step_s"] for r in (1, 2, 3)]
o = {p: old(p) for p in ("single0", "single1", "split")}
gaps = [b / a for a, b in zip(o["single0"], o["single1"])]
fmt = lambda v: "%.4f-%.4f" % (min(v), max(v))
print(f"| {label} | before: alone, 5 steps, 3 times | {fmt(o['single0'])} | {fmt(o['single1'])} | "
      f"{min(gaps):.3f}-{max(gaps):.3f} | {fmt(o['split'])} | 5 x 3 |")
n = json.load(open(f"{d}/new.json"))["placements"]
cell = lambda r: "%.4f [%.4f, %.4f]" % (r["step_s"], r["ci_low_s"], r["ci_high_s"])
print(f"| {label} | protocol: interleaved, 1% target | {cell(n[0])} | {cell(n[1])} | "
      f"{n[1]['step_s'] / n[0]['step_s']:.3f} | {cell(n[2])} | {'/'.join(str(r['steps']) for r in n)} |")
PY
  echo "== $label done" >&2
}

measure_setting "as shipped" ""
for setting in ${SETTINGS:-}; do measure_setting "$setting" "$setting"; done
echo >> "$OUT"
echo "Cells: the median step, and for the protocol its 95% interval; 'before' rows give the range over three runs." >> "$OUT"
