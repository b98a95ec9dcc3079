#!/usr/bin/env bash
# Simulator fidelity on cpu:2: builds the reduced benchmark graphs, measures
# diverse placements of each for real and in the calibrated simulator, and
# writes bench/results/fidelity_<graph>.{md,json,svg}.
# Usage: bash bench/run_fidelity.sh [BUILD_DIR] [PLACEMENTS=30] [ROUNDS=6]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
PLACEMENTS=${2:-30}
ROUNDS=${3:-6}
P="$BUILD/placer"
OUT=bench/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

# Reduced sizes: ops of tens of microseconds to milliseconds on one core, so
# that a step takes 30-150 ms and the placements differ by more than the noise.
"$P" graph build rnnlm --opt layers=2 --opt hidden=128 --opt steps=6 --opt batch=16 --opt vocab=1000 -o "$TMP/rnnlm.json"
"$P" graph build inception_v3 --opt batch=2 --opt image=96 --opt width_div=4 --opt classes=100 -o "$TMP/inception_v3.json"
"$P" graph build transformer --opt layers=2 --opt dec_layers=2 --opt d_model=128 --opt heads=4 --opt ffn=512 \
  --opt seq=32 --opt batch=4 --opt vocab=1000 -o "$TMP/transformer.json"
"$P" graph build nmt --opt layers=2 --opt hidden=128 --opt steps=6 --opt batch=16 --opt vocab=1000 -o "$TMP/nmt.json"

for g in rnnlm inception_v3 transformer nmt; do
  echo "== $g (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$P" fidelity --graph "$TMP/$g.json" --devices cpu:2 --placements "$PLACEMENTS" --rounds "$ROUNDS" \
    --steps 3 --warmup 1 --repetitions 3 -o "$OUT"
done
