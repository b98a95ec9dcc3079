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
python3 - "$WORK" "$REPS" "$STEPS" "$OUT" "$(git rev-parse --short HEAD)" "$BUILD" <<'PY'
import json, math, os, statistics, sys
work, reps, steps, out, commit, build = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
names = ["expert", "local_search", "guided_search"]
runs = [json.load(open(f"{work}/compare_{r}.json")) for r in range(1, reps + 1)]

def ranks(values):  # average ranks, 1-based
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values); i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r

def normal_p(z): return math.erfc(abs(z) / math.sqrt(2))

def mann_whitney(a, b):  # normal approximation, tie and continuity corrections
    n1, n2 = len(a), len(b); r = ranks(a + b); u = sum(r[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2; ties = {}
    for v in a + b: ties[v] = ties.get(v, 0) + 1
    t = sum(c ** 3 - c for c in ties.values())
    var = n1 * n2 / 12 * ((n + 1) - t / (n * (n - 1)))
    return 1.0 if var <= 0 else min(1.0, normal_p(max(0, abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)))

def signed_rank(a, b):  # log(b/a) against 0, normal approximation
    d = [math.log(y / x) for x, y in zip(a, b) if x != y]
    n = len(d)
    if n == 0: return 1.0
    r = ranks([abs(x) for x in d]); w = sum(ri for ri, x in zip(r, d) if x > 0)
    ties = {}
    for x in d: ties[abs(x)] = ties.get(abs(x), 0) + 1
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(c ** 3 - c for c in ties.values()) / 48
    return 1.0 if var <= 0 else min(1.0, normal_p(max(0, abs(w - n * (n + 1) / 4) - 0.5) / math.sqrt(var)))

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
            pm, pw = mann_whitney(a, b), signed_rank(a, b)
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
