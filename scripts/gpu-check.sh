#!/usr/bin/env bash
# The GPU run book: on a bare GPU machine (nvcc, CMake, ninja and torch 2.11
# there; none of our Debian libraries, no network), from the repo root, build
# placer against that machine's torch, run every test including the `gpu`
# label, and measure what only a GPU can tell. docs/gpu.md explains it.
#
#   scripts/gpu-check.sh BUNDLE OUTDIR [--configure-only | --tests-only]
#
# BUNDLE  the folder `make gpu-bundle` made on a development machine (Debian
#         .deb files and a pyzmq wheel). Unpacked with `dpkg -x` into a prefix
#         under /tmp, never into /.
# OUTDIR  where results go: at most 8 files (summary.md, logs.txt, results.tar.gz).
# --configure-only   stop after configuring (the dry run on a machine without a GPU).
# --tests-only       stop after the tests (and the crashes' backtraces).
#
# Environment: TORCH_PYTHON (default /opt/torch/.venv/bin/python3 if it exists,
# else .venv/bin/python3), JOBS (default nproc), CPU_DEVICES (default 8: the
# cpu:8 of cpu:8+cuda:0), BUDGET_S (default 1140: the whole run stays inside 20 min),
# TESTS (ctest arguments), AB=0 (skip the backward A/B), CPU_FIDELITY=0, PLACEMENTS,
# FID_LIMIT (seconds per fidelity run), INCEPTION_OPTS, BENCH_ROUNDS, RUNTIME_BENCH=0 (skip the
# executor-vs-loop bench), BUILD_TARGETS (default: all; with --tests-only, e.g. gpu_tests), TRAIN_SEEDS, TRAIN_MIN_S (a seed starts only with this many seconds of the budget left),
# REPEAT (run the launch-bound GPU check this many more times), FID_GRAPHS (default: nmt inception_v3, the
# two graphs it builds), RETAKES (placer fidelity --retakes; default 0). The fidelity placements are saved in
# results.tar.gz (fidelity_mixed/placements_<graph>/): `placer fidelity --placements-from` measures them again.
set -uo pipefail

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then usage; exit 0; fi
if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage >&2; exit 2; fi
BUNDLE=$1
OUTDIR=$2
MODE=${3:-}
if [ -n "$MODE" ] && [ "$MODE" != --configure-only ] && [ "$MODE" != --tests-only ]; then
  echo "gpu-check: unknown option '$MODE' (expected --configure-only or --tests-only)" >&2
  exit 2
fi
[ -f CMakeLists.txt ] && [ -f scripts/gpu-check.sh ] || { echo "gpu-check: run it from the placer repo root" >&2; exit 2; }
[ -d "$BUNDLE/debs" ] || { echo "gpu-check: BUNDLE '$BUNDLE' has no debs/ folder (make it with: make gpu-bundle)" >&2; exit 2; }
ls "$BUNDLE"/debs/*.deb >/dev/null 2>&1 || { echo "gpu-check: BUNDLE '$BUNDLE/debs' holds no .deb files" >&2; exit 2; }
mkdir -p "$OUTDIR" || { echo "gpu-check: cannot create OUTDIR '$OUTDIR'" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
BUNDLE=$(cd "$BUNDLE" && pwd)

case ${REPEAT:-0} in ''|*[!0-9]*) echo "gpu-check: REPEAT='${REPEAT}' is not a count" >&2; exit 2 ;; esac
for g in ${FID_GRAPHS:-}; do
  case $g in nmt|inception_v3) ;; *) echo "gpu-check: FID_GRAPHS names '$g'; it builds nmt and inception_v3" >&2; exit 2 ;; esac
done
ROOT=$(pwd)
START=$(date +%s)
FAILED_STEPS=0  # steps that failed or timed out (step())
BUDGET_S=${BUDGET_S:-1140}
JOBS=${JOBS:-$(nproc)}
CPU_DEVICES=${CPU_DEVICES:-8}
MIXED="cpu:${CPU_DEVICES}+cuda:0"
if [ -z "${TORCH_PYTHON:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then TORCH_PYTHON=/opt/torch/.venv/bin/python3; else TORCH_PYTHON=$ROOT/.venv/bin/python3; fi
fi
WORK=${GPU_CHECK_WORK:-/tmp/placer-gpu-check}
PREFIX=$WORK/prefix
BUILD=${GPU_CHECK_BUILD:-$ROOT/build-gpu}
RES=$WORK/results
LOGS=$OUTDIR/logs.txt
SUMMARY=$OUTDIR/summary.md
rm -rf "$RES"
mkdir -p "$PREFIX" "$RES"
: > "$LOGS"

left() { echo $((BUDGET_S - ($(date +%s) - START))); }
note() { echo "$*" | tee -a "$SUMMARY"; }
# step NAME SECONDS CMD...: runs CMD with a time limit (never past the budget),
# its output into logs.txt, and one line of verdict into summary.md.
step() {
  local name=$1 limit=$2
  shift 2
  local remain
  remain=$(left)
  [ "$limit" -gt "$remain" ] && limit=$remain
  if [ "$limit" -le 10 ]; then
    note "| $name | skipped: the ${BUDGET_S} s budget is spent | |"
    return 1
  fi
  echo "===== $name: $* (limit ${limit}s)" >> "$LOGS"
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >> "$LOGS" 2>&1
  rc=$?
  local took=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then note "| $name | ok | ${took} s |"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note "| $name | TIMED OUT after ${limit} s | ${took} s |"
  else note "| $name | FAILED (exit $rc; see logs.txt) | ${took} s |"; fi
  [ $rc -eq 0 ] || FAILED_STEPS=$((FAILED_STEPS + 1))  # the script's exit status says so at the end
  return $rc
}

{
  echo "# placer GPU check"
  echo
  echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
  echo
  echo '```'
  if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  else echo "nvidia-smi: not on PATH"; fi
  "$TORCH_PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())" 2>&1
  echo "bundle: $(ls "$BUNDLE"/debs | wc -l) .deb, $(head -1 "$BUNDLE/MANIFEST" 2>/dev/null)"
  echo '```'
  echo
  echo "| step | result | took |"
  echo "|---|---|---|"
} > "$SUMMARY"

# 1. The bundle into the prefix; BLAS/LAPACK links that Debian's alternatives would make.
for deb in "$BUNDLE"/debs/*.deb; do
  if command -v dpkg >/dev/null; then
    dpkg -x "$deb" "$PREFIX"
  else  # a .deb is an ar archive holding data.tar.*
    rm -rf "$WORK/deb" && mkdir -p "$WORK/deb" && (cd "$WORK/deb" && ar x "$deb") && tar -xf "$WORK"/deb/data.tar.* -C "$PREFIX"
  fi
done
LIB=$PREFIX/usr/lib/x86_64-linux-gnu
for alt in blas lapack; do
  for f in "$LIB/$alt"/lib*.so*; do [ -e "$f" ] && ln -sf "$alt/$(basename "$f")" "$LIB/$(basename "$f")"; done
done
if ls "$BUNDLE"/wheels/*.whl >/dev/null 2>&1; then
  "$TORCH_PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" "$BUNDLE"/wheels/*.whl >> "$LOGS" 2>&1 &&
    export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}
fi
export CPATH=$PREFIX/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$LIB${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_SYSROOT_DIR=$PREFIX
export PKG_CONFIG_LIBDIR=$LIB/pkgconfig:$PREFIX/usr/share/pkgconfig
export PATH=$PREFIX/usr/bin:$PATH

# 2. Configure against this machine's torch and the prefix; build with every core.
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
step configure 300 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DTORCH_PYTHON="$TORCH_PYTHON" \
  -DCMAKE_PREFIX_PATH="$PREFIX/usr" -DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf" -DPLACER_CUDA=ON ||
  { note; note "Configure failed: nothing else can run."; exit 1; }
grep -E "placer: LibTorch|CUDA paths" "$LOGS" | tail -1 | sed 's/^-- /    /' >> "$SUMMARY"
grep -E "placer: malloc is|libtcmalloc-minimal4 not found" "$LOGS" | tail -1 | sed 's/^-- /    /' >> "$SUMMARY" || true
if [ "$MODE" = --configure-only ]; then
  note
  note "Configured only (--configure-only): $BUILD"
  exit 0
fi
# shellcheck disable=SC2086  # BUILD_TARGETS is a list of targets
step build 600 cmake --build "$BUILD" -j "$JOBS" ${BUILD_TARGETS:+--target $BUILD_TARGETS} || { note; note "Build failed: nothing else can run."; exit 1; }
P=$BUILD/placer
"$P" --version >> "$SUMMARY" 2>&1

# 3. Every test, the gpu label included. The Prometheus server test needs the
# server binary, which the bundle leaves out (it is large and only that test uses it).
# shellcheck disable=SC2086  # TESTS is a list of ctest arguments
step tests 420 ctest --test-dir "$BUILD" -j "$JOBS" --timeout 300 --output-on-failure -E cli.service_prometheus ${TESTS:-}
# A crash gets its backtrace: the test's command line from ctest, run under the debugger.
DBG=$(command -v cuda-gdb || command -v gdb || true)
if [ -n "$DBG" ]; then
  sed -n 's/^\(.*\) - \(.*\) (SEGFAULT).*/\2/p; s/^\(.*\) - \(.*\) (Subprocess aborted).*/\2/p' "$LOGS" | sed 's/^[[:space:]]*//' |
    sort -u | head -4 | while read -r t; do
      cmd=$(ctest --test-dir "$BUILD" -N -V -R "^${t}\$" 2>/dev/null | sed -n 's/.*Test command: //p' | head -1)
      [ -n "$cmd" ] || continue
      echo "===== backtrace of $t: $cmd" >> "$LOGS"
      # shellcheck disable=SC2086
      eval timeout 120 "$DBG" -q -batch -ex run -ex "'thread apply all bt 25'" --args $cmd >> "$LOGS" 2>&1
      note "| backtrace of $t | in logs.txt | |"
    done
fi
grep -E "tests passed|Failed|\*\*\*" "$LOGS" | grep -v "^ *Start" | tail -20 | sed 's/^/    /' >> "$SUMMARY"
# 3b. The launch-bound overhead check again, REPEAT times (its two-level step:
# gpu_h200_r5.md): how often it passes, with each run's figures.
if [ "${REPEAT:-0}" -gt 0 ]; then
  step "launch-bound check x$REPEAT" $((30 * REPEAT)) "$BUILD/tests/gpu_tests" \
    --gtest_filter=Gpu.CalibratedSimulatorFitsALaunchBoundGpuStep --gtest_repeat="$REPEAT"
  rep=$(sed -n '/^===== launch-bound check/,$p' "$LOGS")
  note "    passed $(grep -c '^\[       OK \] Gpu.CalibratedSimulator' <<<"$rep") of $(grep -c '^\[ RUN      \] Gpu.CalibratedSimulator' <<<"$rep") repeated runs"
  grep "^launch-bound step" <<<"$rep" | sed 's/^/    /' >> "$SUMMARY"
fi
if [ "$MODE" = --tests-only ]; then
  note
  note "Tests only (--tests-only). Total $(( $(date +%s) - START )) s."
  [ "$FAILED_STEPS" -eq 0 ] || { note "$FAILED_STEPS step(s) failed or timed out."; exit 1; }
  exit 0
fi

# 4. The executor vs a plain LibTorch loop on cuda:0, first (the machine is quietest
# right after the tests): the run book's sizes (256, 32) and realistic ones (2048, 512).
[ "${RUNTIME_BENCH:-1}" = 0 ] || { step "runtime bench on cuda:0" 90 "$BUILD/bench/runtime_bench" --device cuda:0 --skip-a 1 --rounds "${BENCH_ROUNDS:-60}"
sed -n '/## (b)/,$p' "$LOGS" | head -12 >> "$SUMMARY"
step "runtime bench on cuda:0, large ops" 90 "$BUILD/bench/runtime_bench" --device cuda:0 --skip-a 1 \
  --rounds "${BENCH_ROUNDS:-60}" --size 2048 --small-size 512
sed -n '/## (b)/,$p' "$LOGS" | tail -8 >> "$SUMMARY"; }
# 4b. Backward ops in the executor's thread vs through the autograd engine (nmt on cuda:0): AB=0 skips it.
[ "${AB:-1}" = 0 ] || { step "backward A/B on cuda:0" 120 bash "$ROOT/bench/gpu_backward_ab.sh" "$P" "$RES/backward_ab" cuda:0 3
  sed -n '/^| round | backward/,/^| 3 /p' "$LOGS" >> "$SUMMARY"; }

# 5. Profile and fidelity: cpu:8+cuda:0 for nmt and inception_v3, and cpu:8 alone.
"$P" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 -o "$RES/nmt.json" >> "$LOGS" 2>&1
"$P" graph build inception_v3 ${INCEPTION_OPTS:---opt batch=8 --opt image=149 --opt width_div=2 --opt classes=100} -o "$RES/inception_v3.json" >> "$LOGS" 2>&1
step "profile nmt on $MIXED" 120 "$P" profile --graph "$RES/nmt.json" --devices "$MIXED" -o "$RES/profile_nmt_mixed.json"
"$TORCH_PYTHON" - "$RES/profile_nmt_mixed.json" <<'PY' >> "$SUMMARY" 2>&1
import json, sys
p = json.load(open(sys.argv[1]))
g = [l for l in p["links"] if "cuda" in l["from"] + l["to"]]
print(f"    profile: executor overhead {p['per_op_overhead_s'] * 1e6:.2f} us/op on CPUs, "
      f"{p.get('gpu_op_overhead_s', -1) * 1e6:.2f} us/op on the GPU, GPU ops scaled x{p.get('gpu_op_scale', 1):.3f}; CPU<->GPU links: alpha "
      f"{min(l['alpha_s'] for l in g) * 1e6:.1f}-{max(l['alpha_s'] for l in g) * 1e6:.1f} us; "
      f"mixed step {p.get('mixed_step', {}).get('step_s', -1):.4g} s over {p.get('mixed_step', {}).get('devices')}")
PY
# 5a. The measurement against itself on the GPU (before fidelity: it is short and the
# shuffled order's check), with the protocol's intervals: one
# placement (every op on cuda:0) given twice, and every op on cpu:0, interleaved.
"$P" place --method single --graph "$RES/nmt.json" --devices "$MIXED" -o "$RES/nmt_single.json" >> "$LOGS" 2>&1
"$TORCH_PYTHON" - "$RES" <<'PY' >> "$LOGS" 2>&1
import json, sys
d = sys.argv[1]
p = json.load(open(f"{d}/nmt_single.json"))
for name, dev in (("nmt_gpu_a", "cuda:0"), ("nmt_gpu_b", "cuda:0"), ("nmt_cpu0", "cpu:0")):
    q = dict(p); q["placement"] = {k: dev for k in p["placement"]}
    json.dump(q, open(f"{d}/{name}.json", "w"))
PY
step "self-agreement on $MIXED" 120 "$P" measure --graph "$RES/nmt.json" --devices "$MIXED" --steps 10 --max-steps 100 \
  --target 0.01 --compare "$RES/nmt_gpu_a.json" "$RES/nmt_gpu_b.json" "$RES/nmt_cpu0.json" --json "$RES/self_agreement.json"
grep -E "interval|Mann-Whitney" "$LOGS" | tail -5 | sed 's/^/    /' >> "$SUMMARY"
# 10 placements chosen for simulated steps >= 4% apart (placer fidelity --spread), 16 steps at most:
# on the H100 of 2026-11-25, 30 placements of the first ones did not fit 180 s; since each round's
# profile also measures the mixed step, 12 of 20 steps did not fit 110 s (gpu_h200_r4.md), 10 of 16 took 109 s.
# inception_v3 gets 6 placements of at most 6 steps (8 of 8 did not fit 110 s there; 6 of 6 took 102 s).
# No retakes (--retakes 0, RETAKES to change it): a retaken round would not fit the step's time limit; the
# report still carries each round's cross-core probe, so a spell shows.
for g in ${FID_GRAPHS:-nmt inception_v3}; do
  n=${PLACEMENTS:-10} steps=16
  [ $g = inception_v3 ] && n=${PLACEMENTS:-6} steps=6
  step "fidelity $g on $MIXED" "${FID_LIMIT:-240}" "$P" fidelity --graph "$RES/$g.json" --devices "$MIXED" --placements "$n" \
    --spread 0.04 --rounds 2 --retakes "${RETAKES:-0}" --max-steps "$steps" -o "$RES/fidelity_mixed" \
    --name "${g}_cpu${CPU_DEVICES}_cuda0" --save-placements "$RES/fidelity_mixed/placements_$g"
done
# On cpu:8 each round's profile also times nmt on each CPU device alone (cpu_steps, ~5 s; not on cpu:8+cuda:0).
[ "${CPU_FIDELITY:-1}" = 0 ] ||
  step "fidelity nmt on cpu:$CPU_DEVICES" 150 "$P" fidelity --graph "$RES/nmt.json" --devices "cpu:$CPU_DEVICES" \
    --placements "${PLACEMENTS:-12}" --spread 0.04 --rounds 2 --retakes "${RETAKES:-0}" --max-steps 20 \
    -o "$RES/fidelity_cpu" --name "nmt_cpu${CPU_DEVICES}"
for f in "$RES"/fidelity_*/*.md; do [ -f "$f" ] && { echo; echo "### $(basename "$f")"; sed -n '1,30p' "$f"; } >> "$SUMMARY"; done

# 6. The demo's learned placer trained in hybrid mode (configs/demo.yaml: every batch
# simulated, the best placements measured) on cpu:8+cuda:0, one
# seed after another while the budget lasts (each ~90 s on the H100 of 2026-11-25).
for seed in ${TRAIN_SEEDS:-1 2 3 4 5}; do
  [ "$(left)" -lt "${TRAIN_MIN_S:-100}" ] && { note "| train seed $seed | skipped: $(left) s of the budget left | |"; continue; }
  step "train demo (hybrid) on $MIXED, seed $seed" 200 "$P" train --config configs/demo.yaml --cluster "$MIXED" \
    --profile "$RES/profile_nmt_mixed.json" --seed "$seed" -o "$RES/train_mixed_s$seed" -q
  grep -A 20 "^demo:" "$LOGS" | tail -20 >> "$SUMMARY"
done

# 7. At most 8 files: summary.md, logs.txt, results.tar.gz.
tar -czf "$OUTDIR/results.tar.gz" -C "$WORK" results 2>/dev/null
note
note "Total $(( $(date +%s) - START )) s. Files: summary.md, logs.txt, results.tar.gz"
# A run whose tests or steps failed exits 1 (it said rc 0 with every GPU test failed), every step having run.
if [ "$FAILED_STEPS" -gt 0 ]; then
  note "$FAILED_STEPS step(s) failed or timed out."
  exit 1
fi
