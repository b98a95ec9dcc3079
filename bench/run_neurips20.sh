#!/usr/bin/env bash
# bench/results/neurips20.md: placer on the workloads of Tarnawski et al.,
# "Efficient Algorithms for Device Placement of DNN Graph Operators" (NeurIPS
# 2020), under the paper's max-load objective: dp, local_search, ilp, single
# and the human experts' splits, beside the paper's DP (its README's table).
#   bash bench/run_neurips20.sh [BUILD_DIR] [WORKLOADS_DIR] [SECONDS]
# SECONDS: the time limit of local_search and of ilp on each workload (30).
# PLACER_LOCK=/tmp/placer-cpu.lock runs each command under flock(1) so that
# the timings never overlap other measurements on a shared machine.
set -euo pipefail
build=${1:-build}
dir=${2:-../shared/workloads/dnn-partitioning}
limit=${3:-30}
out=${OUT:-/tmp/placer-neurips20}
lock=()
[ -n "${PLACER_LOCK:-}" ] && lock=(flock "$PLACER_LOCK")
mkdir -p "$out"
for f in "$dir"/throughput-inputs/LayerGraphs/*.json "$dir"/throughput-inputs/OperatorGraphs/*.json; do
  kind=$(basename "$(dirname "$f")")
  stem=$(basename "$f" .json)
  expert=()
  if [ "$kind" = LayerGraphs ] && [ -e "$dir/human-experts/${stem}_expert.json" ]; then
    expert=(--placement "$dir/human-experts/${stem}_expert.json")
  fi
  echo "== $kind/$stem" >&2
  # dp alone, timed as a whole process (reading the file included), as the paper's times are;
  # the clock starts once the lock is held.
  "${lock[@]}" python3 -c 'import json, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
json.dump({"wall_s": time.perf_counter() - t}, open(sys.argv[1], "w"))' "$out/${kind}_${stem}.dp_wall.json" \
    "$build/placer" baseline --graph "$f" --objective max_load --method dp --json "$out/${kind}_${stem}.dp.json"
  "${lock[@]}" "$build/placer" baseline --graph "$f" --objective max_load --method all --time-limit "$limit" \
    "${expert[@]}" --json "$out/${kind}_${stem}.json"
done
python3 bench/neurips20_table.py "$dir" "$out" "$limit" > bench/results/neurips20.md
echo "wrote bench/results/neurips20.md" >&2
