#!/usr/bin/env bash
# bench/results/neurips20_equal_budget.md: learned against local_search on the
# NeurIPS 2020 workloads (max-load) at an equal budget of evaluated splits.
# Both start from dp's split; `--budget N` is learned's samples and
# local_search's evaluations alike, and the time limit is generous, so the
# budget (not the machine's speed) ends both.
#   bash bench/run_neurips20_equal_budget.sh [BUILD_DIR] [WORKLOADS_DIR]
# SEEDS (5), BUDGET (1000), SECONDS (120: the cap, not the budget);
# OUT (/tmp/placer-neurips20-equal); KEEP=1 keeps the results already there.
set -euo pipefail
build=${1:-build}
dir=${2:-../shared/workloads/dnn-partitioning}
seeds=${SEEDS:-5}
budget=${BUDGET:-1000}
seconds=${SECONDS_CAP:-120}
out=${OUT:-/tmp/placer-neurips20-equal}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo "+changes")
for f in "$dir"/throughput-inputs/LayerGraphs/*.json "$dir"/throughput-inputs/OperatorGraphs/*.json; do
  name=$(basename "$(dirname "$f")")_$(basename "$f" .json)
  for ((seed = 1; seed <= seeds; ++seed)); do
    for method in local_search learned; do
      res="$out/$name.$method.$seed.json"
      [ "${KEEP:-0}" = 1 ] && [ -s "$res" ] && continue
      echo "== $method seed $seed: $name" >&2
      "$build/placer" baseline --graph "$f" --objective max_load --method "dp,$method" --seed "$seed" \
        --budget "$budget" --time-limit "$seconds" --json "$res"
      echo "$commit" > "$out/$name.$method.$seed.commit"
    done
  done
done
python3 bench/neurips20_equal_budget.py "$out" "$seeds" "$budget" "$seconds" > bench/results/neurips20_equal_budget.md
echo "wrote bench/results/neurips20_equal_budget.md" >&2
