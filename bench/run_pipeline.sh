#!/usr/bin/env bash
# Issue 27's table: the time of one pipelined mini-batch (simulated) for single, expert, dp
# (contiguous stages, optimal for its cost model), local_search and the learned placer (median and
# worst of 5 seeds each), with the lower bound, on rnnlm, nmt, transformer and an imported GPT-2-style
# stack, on k80x4 and p100x4, with M = 4 and 16 micro-batches under gpipe and 1f1b.
#
# Every row comes from 5 `placer train` runs (seeds 1-5) of one config: the learned placer's own
# best (`policy`), the overall best it returns (the policy or a baseline it saw: the never-worse rule,
# with who found it), and the compare baselines of the same run (local_search takes the run's seed).
# The graphs are built at the micro-batch size; the mini-batch is M of them.
#
# Usage: bench/run_pipeline.sh [BUILD_DIR] [OUT.md]   (GRAPHS="rnnlm nmt" PRESETS=k80x4 MS=4 to limit;
# also SCHEDULES, SEEDS, UPDATES). The results file's Command line names every one of them. A seed whose
# `placer train` fails is left out of its row, and the row says "n of N seeds".
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-bench/results/pipeline.md}
P=$(realpath "$BUILD/placer")
PY=${PLACER_PYTHON:-.venv/bin/python3}
GRAPHS=${GRAPHS:-"rnnlm nmt transformer gpt2"}
PRESETS=${PRESETS:-"k80x4 p100x4"}
MS=${MS:-"4 16"}
SCHEDULES=${SCHEDULES:-"gpipe 1f1b"}
SEEDS=${SEEDS:-"1 2 3 4 5"}
UPDATES=${UPDATES:-10}   # x 16 samples per update
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
START=$(date +%s)

"$P" graph build rnnlm --opt layers=2 --opt hidden=512 --opt steps=8 --opt batch=8 --opt vocab=2000 -o "$TMP/rnnlm.json" > /dev/null
"$P" graph build nmt --opt layers=2 --opt hidden=512 --opt steps=8 --opt batch=8 --opt vocab=2000 -o "$TMP/nmt.json" > /dev/null
"$P" graph build transformer --opt layers=2 --opt dec_layers=2 --opt d_model=256 --opt heads=4 --opt ffn=1024 \
  --opt seq=32 --opt batch=4 --opt vocab=2000 -o "$TMP/transformer.json" > /dev/null
# An imported model: a GPT-2-style stack (4 blocks, d=192, a micro-batch of 2x64 tokens of 2000), torch.export.
"$PY" bench/export_gpt2.py "$TMP/gpt2.pt2" 2
"$P" graph import "$TMP/gpt2.pt2" -o "$TMP/gpt2.json" > /dev/null

row() {  # graph preset M schedule
  local g=$1 c=$2 m=$3 s=$4 dir="$TMP/runs/$1-$2-$3-$4"
  mkdir -p "$dir"
  for seed in $SEEDS; do
    cat > "$dir/config.yaml" <<CFG
name: pipeline_${g}_${c}
graph: {file: $TMP/$g.json}
cluster: $c
policy: {type: seq2seq, hidden: 32, max_groups: 128}
reward: {mode: simulated, objective: pipeline, microbatches: $m, schedule: $s}
train: {updates: $UPDATES, samples_per_update: 16, lr: 0.005, logit_noise: 0.1, elites: 4}
warm_start: {methods: [expert, m_etf, dp], bc_steps: 200, bc_lr: 0.02}
run: {seed: $seed, threads: 1}
compare: [single, expert, dp, local_search]
CFG
    nice "$P" train -c "$dir/config.yaml" -o "$dir/s$seed" -q > "$dir/s$seed.log" 2>&1 ||
      { echo "train failed: $dir/s$seed.log"; tail -5 "$dir/s$seed.log"; }
  done
  echo "$g $c $m $s $(( $(date +%s) - START )) s"
}

for g in $GRAPHS; do for c in $PRESETS; do for m in $MS; do for s in $SCHEDULES; do
  row "$g" "$c" "$m" "$s"
done; done; done; done

COMMIT=$(git rev-parse --short HEAD)
CMD="GRAPHS=\"$GRAPHS\" PRESETS=\"$PRESETS\" MS=\"$MS\" SCHEDULES=\"$SCHEDULES\" SEEDS=\"$SEEDS\" UPDATES=$UPDATES"
CMD="$CMD bench/run_pipeline.sh $BUILD $OUT"
"$PY" - "$TMP/runs" "$OUT" "$COMMIT" "$(( $(date +%s) - START ))" "$UPDATES" "$SEEDS" "$CMD" <<'PYX'
import json, os, statistics, sys
runs, out, commit, secs, updates, seed_list, cmd = sys.argv[1:8]
n_seeds = len(seed_list.split())
rows = []
for d in sorted(os.listdir(runs)):
    g, c, m, s = d.split("-")
    sums = []
    for seed in sorted(os.listdir(os.path.join(runs, d))):
        f = os.path.join(runs, d, seed, "summary.json")
        if os.path.isdir(os.path.join(runs, d, seed)) and os.path.exists(f):
            sums.append(json.load(open(f)))
    if not sums:
        rows.append((g, c, int(m), s, None)); continue
    base = {}
    for j in sums:
        for b in j["baselines"]:
            base.setdefault(b["method"], []).append(b["step_s"] if b["ok"] else float("inf"))
    rows.append((g, c, int(m), s, dict(
        lb=sums[0]["lower_bound_s"], base=base,
        policy=[j["policy_best_step_s"] for j in sums], best=[j["best_step_s"] for j in sums],
        by=[j["best_found_by"] for j in sums], n=len(sums))))
def ms(x): return "OOM" if x == float("inf") else f"{x * 1e3:.1f}"
def mw(xs): return f"{ms(statistics.median(xs))} / {ms(max(xs))}"
order = {"rnnlm": 0, "nmt": 1, "transformer": 2, "gpt2": 3}
rows.sort(key=lambda r: (order.get(r[0], 9), r[1], r[2], r[3]))
lines = ["# Pipeline-parallel placement: one mini-batch of M micro-batches, simulated", "",
         f"Command: `{cmd}` (commit {commit}, {secs} s on a 2-core VM). Milliseconds per",
         "mini-batch (M micro-batches, weight update included), simulated on the preset's roofline costs. Every row:",
         f"{n_seeds} `placer train` runs (seeds {', '.join(seed_list.split())}; seq2seq policy, {updates} updates of 16 samples, warm start from",
         "expert/m_etf/dp) whose compare baselines are single, expert (layer blocks, not cut into pipeline",
         "stages), dp (contiguous stages, optimal for its pipeline cost model) and local_search (the run's seed).",
         "*policy*: the learned policy's own best; *result*: what `placer train` returns (never worse than",
         f"what it saw), with who found it. Median / worst of the {n_seeds} seeds for the stochastic columns",
         "(a row whose runs did not all succeed says over how many: *n of N seeds*).", "",
         "| graph | cluster | M | schedule | single | expert | dp | local_search | policy | result (found by) | lower bound | result / bound |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for g, c, m, s, r in rows:
    if r is None:
        lines.append(f"| {g} | {c} | {m} | {s} | failed | | | | | | | |"); continue
    b = r["base"]
    det = lambda k: ms(b[k][0]) if k in b else "-"
    ls = mw(b["local_search"]) if "local_search" in b else "-"
    by = ", ".join(sorted(set(r["by"])))
    if r["n"] < n_seeds:
        by += f"; {r['n']} of {n_seeds} seeds"
    lines.append(f"| {g} | {c} | {m} | {s} | {det('single')} | {det('expert')} | {det('dp')} | {ls} | "
                 f"{mw(r['policy'])} | {mw(r['best'])} ({by}) | {ms(r['lb'])} | "
                 f"{statistics.median(r['best']) / r['lb']:.2f} |")
short = [f"{g} {c} M={m} {s}: {r['n'] if r else 0} of {n_seeds} seeds"
         for g, c, m, s, r in rows if r is None or r["n"] < n_seeds]
if short:
    lines += ["", "Failed `placer train` runs left out: " + "; ".join(short) + "."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYX
