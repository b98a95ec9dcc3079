#!/usr/bin/env bash
# Whether the order of an interleaved measurement biases it: one placement given
# twice (A and B: every op on cpu:0, the same work) and a split over both cores
# (C: m_etf's), measured with `placer measure --compare A B C`, one process after
# the other, alternating: fixed (PLACER_MEASURE_ORDER=fixed: rounds in the order
# A B C A B C, as before) and shuffled (the default: each round in a fresh order
# drawn from the seed). Under a fixed order A always runs right after C; if a
# step leaves the machine worse for the next one, A is biased against B.
# Writes bench/results/order_effect_cpu2.md.
# Usage: bash bench/run_order_effect.sh [BUILD_DIR] [RUNS]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-5}
P=$BUILD/placer
OUT=bench/results/order_effect_cpu2.md
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=${PLACER_PYTHON:-.venv/bin/python3}

"$P" graph build nmt --opt layers=2 --opt hidden=192 --opt steps=8 --opt batch=24 --opt vocab=2000 \
  -o "$TMP/nmt.json" > /dev/null
"$P" place --method single --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/A.json" > /dev/null
cp "$TMP/A.json" "$TMP/B.json"
"$P" place --method m_etf --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/C.json" > /dev/null

for run in $(seq 1 "$RUNS"); do
  for kind in fixed shuffled; do
    order=shuffled
    [ "$kind" = fixed ] && order=fixed
    PLACER_MEASURE_ORDER=$order "$P" measure --graph "$TMP/nmt.json" --compare "$TMP/A.json" "$TMP/B.json" "$TMP/C.json" --devices cpu:2 \
      --warmup 2 --steps 40 --max-steps 40 --seed "$run" --json "$TMP/${kind}_$run.json" > /dev/null
  done
done

{
  echo "# Does the order of an interleaved measurement bias it? (cpu:2)"
  echo
  echo "Command: \`bash bench/run_order_effect.sh $BUILD $RUNS\` (commit $(git rev-parse --short HEAD))  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Graph: nmt, hidden 192, 8 steps, batch 24, vocab 2,000 (980 ops). A and B: every op on cpu:0 (the same"
  echo "placement given twice: the right answer is 'no difference'); C: m_etf's split over both cores."
  echo "\`placer measure --compare A B C --warmup 2 --steps 40 --max-steps 40 --seed RUN\`, 40 measured steps each,"
  echo "$RUNS processes of each order, alternating. fixed (PLACER_MEASURE_ORDER=fixed): rounds in the order A B C (A always"
  echo "right after C); shuffled (the default): each round in a fresh order drawn from the seed."
  echo
} > "$OUT"
"$PY" - "$TMP" "$RUNS" >> "$OUT" <<'PY'
import json, math, statistics, sys
d, runs = sys.argv[1], int(sys.argv[2])

def mann_whitney_p(x, y):
    """Two-sided Mann-Whitney U p-value, normal approximation with tie correction (n >= 20 here)."""
    allv = sorted((v, k) for k, s in enumerate((x, y)) for v in s)
    ranks, i = [0.0] * len(allv), 0
    ties = 0.0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    n1, n2 = len(x), len(y)
    r1 = sum(r for r, (v, k) in zip(ranks, allv) if k == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = (abs(u - n1 * n2 / 2) - 0.5) / sd
    return math.erfc(z / math.sqrt(2))
print("| order | run | A s [95% interval] | B s [95% interval] | B/A - 1 | Mann-Whitney p (A vs B) | C s |")
print("|---|---:|---|---|---:|---:|---:|")
summary = {}
for kind in ("fixed", "shuffled"):
    gaps, sig = [], 0
    for r in range(1, runs + 1):
        j = json.load(open(f"{d}/{kind}_{r}.json"))
        by = {p["file"].split("/")[-1][0]: p for p in j["placements"]}
        a, b, c = by["A"], by["B"], by["C"]
        gap = b["step_s"] / a["step_s"] - 1
        p = mann_whitney_p(a["samples_s"], b["samples_s"])
        sig += 1 if (p == p and p < 0.05) else 0
        gaps.append(gap)
        print(f"| {kind} | {r} | {a['step_s']:.4f} [{a['ci_low_s']:.4f}, {a['ci_high_s']:.4f}] | "
              f"{b['step_s']:.4f} [{b['ci_low_s']:.4f}, {b['ci_high_s']:.4f}] | {gap:+.1%} | {p:.3g} | {c['step_s']:.4f} |")
    summary[kind] = (statistics.median(gaps), max(gaps, key=abs), sig)
print()
print("| order | median B/A - 1 | largest |B/A - 1| | runs where A and B differ significantly (p < 0.05) |")
print("|---|---:|---:|---:|")
for kind, (med, worst, sig) in summary.items():
    print(f"| {kind} | {med:+.1%} | {worst:+.1%} | {sig} of {runs} |")
PY
cat "$OUT"
