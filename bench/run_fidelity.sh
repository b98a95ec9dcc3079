#!/usr/bin/env bash
# Simulator fidelity on cpu:2 with the measurement protocol: builds the reduced
# benchmark graphs, a GPT-2-style stack and torchvision's GoogLeNet exported with torch.export, measures
# diverse placements of each for real (interleaved, each until its median's 95%
# interval is within 2%, in ROUNDS rounds) and in the simulator calibrated by a
# profile, and writes bench/results/fidelity_<graph>.{md,json,svg}.
# Usage: bash bench/run_fidelity.sh [BUILD_DIR] [PLACEMENTS=24] [ROUNDS=4] [SPREAD=0] [OUT=bench/results]
# SPREAD > 0: the placements are chosen, before measuring, from 4x as many for
# simulated steps at least SPREAD apart (placer fidelity --spread).
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
# LOCKSTEP=0: pass --no-lockstep (each placement stops at its own target; the default since the
# thirty-third session is lockstep: every placement takes every step of a round until all have enough).
# GRAPHS: which of rnnlm nmt inception_v3 transformer gpt2_export googlenet_export (default all).
# KEEP=DIR: also keep each graph's graph file, placements and profiles in DIR/<graph>/ (--save-placements), so that
# another calibration can be tried later on the same measurements (`placer simulate --profile
# DIR/<graph>/profiles/mean.json` gives the report's simulated step). Several MB a graph: not for bench/results.
# LONG: graphs measured with --max-steps 120 --target 0.01 instead of 30 and 2%
# (default "inception_v3 transformer gpt2_export": transformer's and gpt2's placements
# span ~1.1x, and there the measurement re-ranked itself at 0.933 / 0.883 instead of
# 0.864 / 0.779, at 3.5x the time; inception_v3, at batch 8 since the twenty-first
# session, re-ranked itself at 0.903-0.970 in three runs, against 0.712-0.757 at batch 4
# and 30 steps; bench/results/fidelity_summary.md). LONG="" measures all alike.
set -euo pipefail
BUILD=${1:-build}
PLACEMENTS=${2:-24}
ROUNDS=${3:-4}  # 4 since the twenty-third session: pooled over four rounds, the drift between rounds averages out (fidelity_s23_rounds4/)
SPREAD=${4:-0}
P="$BUILD/placer"
PY=${PLACER_PYTHON:-.venv/bin/python3}
OUT=${5:-bench/results}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

# Sizes: steps of 50-300 ms on one core, so that placements differ by more than
# the noise, and graphs of 300-1,200 ops.
"$P" graph build rnnlm --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=32 --opt vocab=2000 -o "$TMP/rnnlm.json"
"$P" graph build nmt --opt layers=2 --opt hidden=192 --opt steps=8 --opt batch=24 --opt vocab=2000 -o "$TMP/nmt.json"
"$P" graph build inception_v3 --opt batch=8 --opt image=96 --opt width_div=4 --opt classes=100 -o "$TMP/inception_v3.json"
"$P" graph build transformer --opt layers=2 --opt dec_layers=2 --opt d_model=256 --opt heads=4 --opt ffn=1024 \
  --opt seq=32 --opt batch=8 --opt vocab=2000 -o "$TMP/transformer.json"
# An imported model: a GPT-2-style stack (4 blocks, d=192, 8x64 tokens of 2000), torch.export.
"$PY" bench/export_gpt2.py "$TMP/gpt2.pt2" 8
"$P" graph import "$TMP/gpt2.pt2" -o "$TMP/gpt2_export.json" > /dev/null
# An imported model with parallel branches: torchvision's GoogLeNet (batch 8 of 64x64), torch.export. gpt2's
# placements span 1.06x on two cores (a chain: nothing runs beside anything), under the noise; GoogLeNet's
# four-branch modules let placements differ by ~1.3x (fidelity_s30/README.md).
"$PY" bench/export_googlenet.py "$TMP/googlenet.pt2" 8 64
"$P" graph import "$TMP/googlenet.pt2" -o "$TMP/googlenet_export.json" > /dev/null

LOCKSTEP=${LOCKSTEP:-1}
lockstep=()
[ "$LOCKSTEP" = 0 ] && lockstep=(--no-lockstep)
LONG=${LONG-inception_v3 transformer gpt2_export}
for g in ${GRAPHS:-rnnlm nmt inception_v3 transformer gpt2_export googlenet_export}; do
  steps=(--max-steps 30 --target 0.02)
  case " $LONG " in *" $g "*) steps=(--max-steps 120 --target 0.01) ;; esac
  echo "== $g ${steps[*]} (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  keep=()
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP/$g"
    cp "$TMP/$g.json" "$KEEP/$g/graph.json"
    keep=(--save-placements "$KEEP/$g")
  fi
  "$P" fidelity --graph "$TMP/$g.json" --name "$g" --devices cpu:2 --placements "$PLACEMENTS" --spread "$SPREAD" --rounds "$ROUNDS" \
    --warmup 2 --steps 6 "${steps[@]}" --repetitions 3 "${lockstep[@]}" "${keep[@]}" -o "$OUT"
done
