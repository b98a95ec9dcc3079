#!/usr/bin/env bash
# Runs the learned-placer benchmarks and writes bench/results/learned_*.md.
# Usage: bash bench/run_learned.sh BUILD_DIR [UPDATES]
#   UPDATES overrides train.updates of the published configs (x16 samples each);
#   the committed results say which value they used.
set -euo pipefail
BUILD=${1:-build}
UPDATES=${2:-125}
BENCH="$BUILD/bench/learned_bench"
OUT=bench/results
mkdir -p "$OUT"
host="$(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)"

run() {  # name, title, command...
  local name=$1 title=$2
  shift 2
  {
    echo "# $title"
    echo
    echo "Command: \`$*\`  "
    echo "Machine: $host (shared with other jobs while it ran)"
    echo
    "$@"
  } > "$OUT/$name.md"
}

run learned_settings "Learned placer vs baselines on the published settings (simulated presets)" \
  "$BENCH" settings configs/rnnlm_k80x2.yaml configs/rnnlm_k80x4.yaml configs/nmt_k80x2.yaml \
  configs/nmt_k80x4.yaml configs/inception_v3_k80x2.yaml configs/inception_v3_k80x4.yaml \
  configs/transformer_h100x8.yaml --updates "$UPDATES"
run learned_ilp "Learned placer vs proved ILP optima" "$BENCH" ilp
run learned_gnn "gnn: family training, held-out graphs with no training" "$BENCH" gnn configs/gnn_family_nmt_k80x4.yaml
run learned_hierarchical "hierarchical: one policy update on a 50,000-operator graph" \
  "$BENCH" hierarchical configs/hierarchical_nmt_large_k80x4.yaml
