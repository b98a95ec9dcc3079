#!/usr/bin/env bash
# bench/results/neurips20.md: placer on the workloads of Tarnawski et al.,
# "Efficient Algorithms for Device Placement of DNN Graph Operators" (NeurIPS
# 2020), under the paper's max-load objective: dp, local_search, ilp, single
# and the human experts' splits, beside the paper's DP (its README's table).
#   bash bench/run_neurips20.sh [BUILD_DIR] [WORKLOADS_DIR] [SECONDS]
# SECONDS: the time limit of local_search and of ilp on each workload (30).
# PLACER_LOCK=/tmp/placer-cpu.lock runs each command under flock(1) so that
# the timings never overlap other measurements on a shared machine.
# KEEP=1 keeps the results already in $OUT (an interrupted run goes on).
# learned (step 3) runs `--method dp,learned` (dp's split is its warm start)
# for LEARNED_SEEDS seeds (5) with --budget LEARNED_SAMPLES (1000) and
# --time-limit LEARNED_SECONDS (10), under nice; LEARNED_SEEDS=0 skips it.
set -euo pipefail
build=${1:-build}
dir=${2:-../shared/workloads/dnn-partitioning}
limit=${3:-30}
out=${OUT:-/tmp/placer-neurips20}
lock=()
[ -n "${PLACER_LOCK:-}" ] && lock=(flock "$PLACER_LOCK")
mkdir -p "$out"
workloads=("$dir"/throughput-inputs/LayerGraphs/*.json "$dir"/throughput-inputs/OperatorGraphs/*.json)
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")

# 1. dp alone, timed as a whole process (reading the file included) as the paper's times
#    are, in bench/max_load_dp (no LibTorch to load); the clock starts once the lock is held.
for f in "${workloads[@]}"; do
  name=$(basename "$(dirname "$f")")_$(basename "$f" .json)
  [ "${KEEP:-0}" = 1 ] && [ -s "$out/$name.dp.json" ] && continue
  echo "== dp: $name" >&2
  "${lock[@]}" python3 -c 'import json, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[3:], check=True, capture_output=True, text=True)
wall = time.perf_counter() - t
json.dump(dict(json.loads(r.stdout), wall_s=wall, commit=sys.argv[2]), open(sys.argv[1], "w"))' \
    "$out/$name.dp.json" "$commit" "$build/bench/max_load_dp" "$f"
done

# 2. Every method through `placer baseline`, with the expert's split where there is one.
for f in "${workloads[@]}"; do
  kind=$(basename "$(dirname "$f")")
  stem=$(basename "$f" .json)
  [ "${KEEP:-0}" = 1 ] && [ -s "$out/${kind}_${stem}.json" ] && continue
  expert=()
  if [ "$kind" = LayerGraphs ] && [ -e "$dir/human-experts/${stem}_expert.json" ]; then
    expert=(--placement "$dir/human-experts/${stem}_expert.json")
  fi
  echo "== all: $kind/$stem" >&2
  "${lock[@]}" "$build/placer" baseline --graph "$f" --objective max_load --method all --time-limit "$limit" \
    "${expert[@]}" --json "$out/${kind}_${stem}.json"
  echo "$commit" > "$out/${kind}_${stem}.commit"
done
# 3. learned, warm-started from dp's split, one process per seed.
seeds=${LEARNED_SEEDS:-5}
samples=${LEARNED_SAMPLES:-1000}
seconds=${LEARNED_SECONDS:-10}
for f in "${workloads[@]}"; do
  kind=$(basename "$(dirname "$f")")
  stem=$(basename "$f" .json)
  for ((seed = 1; seed <= seeds; ++seed)); do
    res="$out/${kind}_${stem}.learned$seed.json"
    [ "${KEEP:-0}" = 1 ] && [ -s "$res" ] && continue
    echo "== learned seed $seed: $kind/$stem" >&2
    "${lock[@]}" nice "$build/placer" baseline --graph "$f" --objective max_load --method dp,learned --seed "$seed" \
      --budget "$samples" --time-limit "$seconds" --json "$res"
    echo "$commit" > "$out/${kind}_${stem}.learned.commit"
  done
done
LEARNED="$seeds $samples $seconds" python3 bench/neurips20_table.py "$dir" "$out" "$limit" > bench/results/neurips20.md
echo "wrote bench/results/neurips20.md" >&2
