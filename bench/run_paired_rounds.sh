#!/usr/bin/env bash
# Paired by round against pooled: how often each test tells two placements apart
# when they differ by 1-3% on a shared 2-core VM. inception_v3 at the fidelity size
# (configs/cpu2_inception_v3_b8_measured.yaml's graph), three placements placed in the
# simulator calibrated on this machine's profile: expert, local_search (2,000
# evaluations) and guided_search (100,000); then REPS runs of `placer measure --compare`
# (interleaved, STEPS rounds each). For every pair in every run: the pooled rank test
# (Mann-Whitney, as the medians see it) and the paired one (Wilcoxon signed-rank on the
# rounds' ratios), and whether each run's direction agrees with the pooled verdict
# of all runs together.
# Usage: bash bench/run_paired_rounds.sh [BUILD_DIR] [REPS=6] [STEPS=200] [OUT=bench/results/paired_rounds_cpu2.md]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-6}
STEPS=${3:-200}
OUT=${4:-bench/results/paired_rounds_cpu2.md}
P="$BUILD/placer"
WORK=runs/bench_paired_rounds
mkdir -p "$WORK"
G="$WORK/inception_v3_b8.json"
"$P" graph build inception_v3 --opt batch=8 --opt image=96 --opt width_div=4 --opt classes=100 -o "$G" > /dev/null
"$P" profile --graph "$G" --devices cpu:2 -o "$WORK/profile.json" > /dev/null
"$P" place --method expert --graph "$G" --devices cpu:2 --profile "$WORK/profile.json" -o "$WORK/expert.json" > /dev/null
"$P" place --method local_search --budget 2000 --seed 1 --graph "$G" --devices cpu:2 --profile "$WORK/profile.json" \
  -o "$WORK/local_search.json" > /dev/null
"$P" place --method guided_search --budget 100000 --seed 1 --graph "$G" --devices cpu:2 --profile "$WORK/profile.json" \
  -o "$WORK/guided_search.json" > /dev/null
for r in $(seq 1 "$REPS"); do
  echo "== run $r of $REPS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$P" measure --graph "$G" --devices cpu:2 --compare "$WORK/expert.json" "$WORK/local_search.json" \
    "$WORK/guided_search.json" --steps "$STEPS" --max-steps "$STEPS" --json "$WORK/compare_$r.json" > "$WORK/compare_$r.txt"
done
python3 - "$WORK" "$REPS" "$STEPS" "$OUT" "$(git rev-parse --short HEAD)" "$BUILD" "$(dirname "$0")" <<'PY'
import json, math, os, statistics, sys
work, reps, steps, out, commit, build = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
sys.path.insert(0, sys.argv[7])
from rank_stats import mann_whitney, signed_rank
names = ["expert", "local_search", "guided_search"]
runs = [json.load(open(f"{work}/compare_{r}.json")) for r in range(1, reps + 1)]

def signed_rank_p(a, b):  # log(b/a) of the rounds that differ, against 0
    return signed_rank([math.log(y / x) for x, y in zip(a, b) if x != y])[0]

L = ["# Paired by round against pooled: telling placements 1-3% apart on cpu:2", "",
     f"Command: `bash bench/run_paired_rounds.sh {build} {reps} {steps}` (commit {commit}, {os.cpu_count()} cores, the VM idle apart",
     "from it). inception_v3 at the fidelity size (batch 8, 96 px, width_div 4, 100 classes; 1,198 ops); expert, local_search",
     "(2,000 evaluations) and guided_search (100,000) placed in the simulator calibrated on this machine's profile, then",
     f"{reps} runs of `placer measure --compare` with {steps} interleaved rounds each (shuffled order per round, every",
     "placement in every round). Per pair and run: the pooled test (Mann-Whitney on each placement's steps, what the",
     "medians and their intervals see) and the paired one (Wilcoxon signed-rank on log(b/a) of each round's two",
     "steps, which ran back to back). p-values here are this script's normal approximations; `placer` prints the same",
     "tests (graphs/stats.h).", ""]
L += ["| pair (b vs a) | run | a median (ms) | b median (ms) | pooled: b/a of medians | Mann-Whitney p | paired: median of b/a per round | signed-rank p |",
      "|---|---:|---:|---:|---:|---:|---:|---:|"]
summary = []
for ia in range(3):
    for ib in range(ia + 1, 3):
        pooled_sig = paired_sig = 0; dirs = []
        for k, r in enumerate(runs, 1):
            ps = r["placements"]
            a, b = ps[ia]["samples_s"], ps[ib]["samples_s"]
            n = min(len(a), len(b)); a, b = a[:n], b[:n]
            ma, mb = statistics.median(a), statistics.median(b)
            pm, pw = mann_whitney(a, b), signed_rank_p(a, b)
            ratio = statistics.median([y / x for x, y in zip(a, b)])
            pooled_sig += pm < 0.05; paired_sig += pw < 0.05; dirs.append(ratio > 1)
            L.append(f"| {names[ib]} vs {names[ia]} | {k} | {1e3 * ma:.3f} | {1e3 * mb:.3f} | {mb / ma:.4f} | {pm:.2g} | {ratio:.4f} | {pw:.2g} |")
        summary.append((f"{names[ib]} vs {names[ia]}", pooled_sig, paired_sig, max(sum(dirs), len(dirs) - sum(dirs))))
L += ["", "| pair | runs significant, pooled (Mann-Whitney) | runs significant, paired (signed-rank) | runs whose paired ratio points the majority's way |",
      "|---|---:|---:|---:|"]
for name, a, b, d in summary:
    L.append(f"| {name} | {a} of {reps} | {b} of {reps} | {d} of {reps} |")
L.append("")
open(out, "w").write("\n".join(L) + "\n")
print("wrote", out)
PY
