#!/usr/bin/env bash
# The held-out set of issue 25 part 1 (bench/results/learned_heldout.md): six
# public model architectures exported with torch.export by the project's
# torch (bench/heldout_models.py: random weights, torch.manual_seed(25)) and
# imported as training graphs with `placer graph import`. Fixed: nothing is
# tuned on these graphs.
# Usage: bash bench/heldout_models.sh [BUILD_DIR] [OUT_DIR=/tmp/placer-heldout]
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/placer-heldout}
PY=${PLACER_PYTHON:-.venv/bin/python3}
mkdir -p "$OUT"
nice "$PY" bench/heldout_models.py "$OUT"
for m in resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm; do
  nice "$BUILD/placer" graph import "$OUT/$m.pt2" -o "$OUT/$m.json" | head -1
done
