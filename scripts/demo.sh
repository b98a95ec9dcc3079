#!/usr/bin/env bash
# `make demo`: the main job on an embedded default.
#  1. builds a reduced NMT training-step graph and prints its summary,
#  2. profiles it on this machine's devices (per-op times, link fits) to
#     calibrate the simulator: cpu:2, or cpu:2+cuda:0 when the build has CUDA
#     and a GPU is visible (PLACER_DEVICES overrides),
#  3. trains the learned placer on those devices with hybrid rewards: every
#     placement simulated, the best measured for real,
#  4. prints the learned placement next to the algorithmic baselines, measured
#     the same way.
# Results (config copy, CSV log, reward plot, best placement, checkpoint) land in runs/demo/.
set -euo pipefail
BUILD=${1:-build}
PLACER="$BUILD/placer"
OUT=runs/demo
mkdir -p "$OUT"

"$PLACER" --version
if [ -z "${PLACER_DEVICES:-}" ]; then
  if "$PLACER" --version | grep -q '^  cuda:0 '; then PLACER_DEVICES=cpu:2+cuda:0; else PLACER_DEVICES=cpu:2; fi
fi
echo "devices: $PLACER_DEVICES"

echo
echo "== 1. the graph: a reduced NMT (seq2seq LSTM with attention), full training step"
"$PLACER" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 \
  -o "$OUT/nmt.json"
"$PLACER" graph info "$OUT/nmt.json"

echo
echo "== 2. profile it on this machine's devices (calibrates the simulator)"
"$PLACER" profile --graph "$OUT/nmt.json" --devices "$PLACER_DEVICES" -o "$OUT/profile.json"

echo
echo "== 3. train the learned placer (configs/demo.yaml) on this machine's devices"
"$PLACER" train --config configs/demo.yaml --cluster "$PLACER_DEVICES" --profile "$OUT/profile.json"

echo
echo "== results in $OUT/: config, training log (CSV), reward plot (SVG), best placement, checkpoint"
ls "$OUT"
