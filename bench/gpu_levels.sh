#!/usr/bin/env bash
# Where the launch-bound GPU step's two levels come from (gpu_h200_r5.md, gpu_h200_r6.md).
# On a lent GPU machine, from the repo root, with `make gpu-bundle`'s folder carried:
#
#   bash bench/gpu_levels.sh BUNDLE OUTDIR [SECONDS] [REPEAT]
#
# Builds placer and gpu_tests (scripts/gpu-check.sh --tests-only), then measures
# the GPU check's graph (a 1-layer NMT, 314 ops) step after step for SECONDS
# (default 10), its step times in order in OUTDIR/series_*.json:
#   series_gpu.json         every op on cuda:0 of cpu:1+cuda:0
#   series_gpu_nospin.json  the same with PLACER_SPIN_US=0 (idle executor threads sleep at once)
#   series_cpu.json         every op on cpu:0 of cpu:1 (is the host's own speed what moves?)
# and runs Gpu.CalibratedSimulatorFitsALaunchBoundGpuStep REPEAT times
# (default 4) with PLACER_SPIN_US=0 (OUTDIR/nospin_check.txt).
set -uo pipefail
if [ $# -lt 2 ]; then sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; fi
BUNDLE=$1 OUTDIR=$2 SECS=${3:-10} REPEAT=${4:-4}
mkdir -p "$OUTDIR"
export GPU_CHECK_WORK=/tmp/placer-gpu-levels
JOBS=${JOBS:-16} BUDGET_S=${BUDGET_S:-200} BUILD_TARGETS="placer gpu_tests" TESTS="-R Gpu.AMissingGpu" \
  bash scripts/gpu-check.sh "$BUNDLE" "$OUTDIR/check" --tests-only || exit 1
export LD_LIBRARY_PATH=$GPU_CHECK_WORK/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
P=build-gpu/placer
W=$GPU_CHECK_WORK/levels
mkdir -p "$W"
"$P" graph build nmt --opt layers=1 --opt hidden=64 --opt steps=4 --opt batch=8 --opt vocab=500 -o "$W/g.json" >/dev/null
"$P" place --method single --graph "$W/g.json" --devices cpu:1+cuda:0 -o "$W/p.json" >/dev/null
python3 - "$W" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(f"{d}/p.json"))
for name, dev in (("gpu", "cuda:0"), ("cpu", "cpu:0")):
    q = dict(p); q["placement"] = {k: dev for k in p["placement"]}
    json.dump(q, open(f"{d}/{name}.json", "w"))
PY
series() {  # NAME DEVICES PLACEMENT [env...]
  local name=$1 devices=$2 placement=$3
  shift 3
  env "$@" "$P" measure --graph "$W/g.json" --devices "$devices" --placement "$W/$placement.json" --warmup 3 --steps 10 \
    --max-steps 10 --min-time "$SECS" --json "$OUTDIR/series_$name.json" 2>&1 | head -1 | tee -a "$OUTDIR/levels.txt"
}
series gpu cpu:1+cuda:0 gpu
series gpu_nospin cpu:1+cuda:0 gpu PLACER_SPIN_US=0
series cpu cpu:1 cpu
PLACER_SPIN_US=0 build-gpu/tests/gpu_tests --gtest_filter=Gpu.CalibratedSimulatorFitsALaunchBoundGpuStep \
  --gtest_repeat="$REPEAT" > "$OUTDIR/nospin_check.txt" 2>&1
echo "with PLACER_SPIN_US=0: passed $(grep -c '^\[       OK \]' "$OUTDIR/nospin_check.txt") of $REPEAT" | tee -a "$OUTDIR/levels.txt"
grep "^launch-bound step" "$OUTDIR/nospin_check.txt" | tee -a "$OUTDIR/levels.txt"
