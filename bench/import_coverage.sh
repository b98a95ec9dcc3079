#!/usr/bin/env bash
# The torch.export coverage table of bench/results/import.md: export the real
# models with the project environment's torch, import each .pt2 (training
# graph), run one step on cpu:2 with eager's weights and inputs, compare.
#   bash bench/import_coverage.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build}
work=${2:-/tmp/placer-import-coverage}
python=${PLACER_PYTHON:-.venv/bin/python3}
mkdir -p "$work"
[ -e "$work/lstm_lm.pt2" ] || "$python" scripts/make_export_fixtures.py "$work" --real
echo "| model | ops (forward/backward/update) | forward GFLOP | params MB | import best s | import median s | one step on cpu:0 | one step on cpu:2 vs eager PyTorch |"
echo "|---|---|---|---|---|---|---|---|"
for m in resnet50 inception_v3 mobilenet_v2 googlenet vit_b_16 transformer gpt2_blocks lstm_lm; do
  "$build/bench/import_bench" "$work/$m.pt2" --repeat 3 --run --eager "$work/$m.eager.pt" || echo "| $m | import failed (exit $?) |"
done
