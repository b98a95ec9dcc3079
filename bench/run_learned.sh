#!/usr/bin/env bash
# Runs the learned-placer benchmarks and writes bench/results/learned_*.md.
# Usage: bash bench/run_learned.sh BUILD_DIR [UPDATES] [SEEDS]
#   UPDATES overrides train.updates of the published configs (x16 samples each);
#   SEEDS (default 1,2,3,4,5): every row is the median and the worst of these.
#   The committed results say which values they used.
set -euo pipefail
BUILD=${1:-build}
UPDATES=${2:-125}
SEEDS=${3:-1,2,3,4,5}
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
  configs/transformer_h100x8.yaml --updates "$UPDATES" --seeds "$SEEDS"
run learned_ilp "Learned placer vs proved ILP optima" "$BENCH" ilp --seeds "$SEEDS"
run learned_gnn "gnn: family training, held-out graphs zero-shot and fine-tuned" "$BENCH" gnn \
  configs/gnn_family_nmt_k80x4.yaml --updates 100 --seeds "$SEEDS"
run learned_hierarchical "hierarchical: one policy update on a 50,000-operator graph" \
  "$BENCH" hierarchical configs/hierarchical_nmt_large_k80x4.yaml
