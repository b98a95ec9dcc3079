#!/usr/bin/env bash
# Pipelined vs plain training steps on cpu:2, measured and simulated:
# build/bench/pipeline_cpu2_bench (its header says what it runs), niced, for
# mlp and transformer. Writes bench/results/pipeline_cpu2.md.
# Usage: bash bench/run_pipeline_cpu2.sh [BUILD_DIR] [ROUNDS=15]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-15}
OUT=bench/results/pipeline_cpu2.md
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
table=$(nice "$BUILD/bench/pipeline_cpu2_bench" --rounds "$ROUNDS")
took=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# Pipelined vs plain steps on cpu:2, measured and simulated"
  echo
  echo "Command: \`bash bench/run_pipeline_cpu2.sh $BUILD $ROUNDS\` (commit $(git rev-parse --short HEAD), ${took} s)  "
  echo "Machine: $(nproc) cores; load average $load_before before, $load_after after."
  echo
  echo "Each graph at batch B (mlp: 512, transformer: 32): the plain training step on one device and on two"
  echo "contiguous stages (the forward ops split in two runs of equal count, backward and updates with their"
  echo "forward op), and one pipelined mini-batch of M = 4 micro-batches of B / 4 on the same two stages under"
  echo "GPipe and 1F1B (the same work and the same update as the plain step; tests/runtime/pipeline_equality_test.cc)."
  echo "Measured: the measurement protocol (Runtime::measure_interleaved with the samples so far as prior) in rounds"
  echo "over the four configurations, each round one warm-up and two measured steps of each, until every median's"
  echo "95% interval is within 2% or $ROUNDS rounds. Simulated: the simulator under the same schedule rules, with"
  echo "the cost model calibrated on a profile of the graph taken on this machine right after (Runtime::profile;"
  echo "the plain graph's profile for the plain rows, the unrolled graph's for the pipelined ones), and the"
  echo "roofline model of cpu:2 for reference."
  if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
    echo
    echo "**The machine was busy** (load average above half its cores): other jobs took the cores the two"
    echo "devices need, so every configuration that uses both devices is measured slow and the measured"
    echo "pipelining gains are lower bounds; the one-device rows are the comparable ones. Rerun on an idle machine."
  fi
  echo "$table"
} > "$OUT"
echo "wrote $OUT"
