#!/usr/bin/env bash
# The learned placer trained on cpu:2 with measured and with hybrid rewards,
# 5 seeds each, on the reduced NMT and inception_v3. Every run ends with the
# trainer's own final table: the policy's best placement and every baseline's,
# measured side by side in one fresh interleaved run with the measurement
# protocol (each until its median's 95% interval is within 2%, at most 30 steps in
# training, 150 in the final table: reward.final_max_steps in the cpu2 configs). Which of
# the policy's placements is its best is picked before, on a separate side-by-side
# measurement of its fastest ones (reward.finalists).
# Writes bench/results/learned_measured_cpu2.md (and the runs in runs/bench_measured_cpu2/).
# Usage: bash bench/run_measured_cpu2.sh [BUILD_DIR] [SEEDS="1 2 3 4 5"] [MODES="measured hybrid"]
#   MODES may also name measured+paired and hybrid+paired (placer train --paired: reward.paired).
#   GRAPHS (default "nmt inception_v3"; also inception_v3_b8, the fidelity size) limits the graphs;
#   MEASURED_UPDATES (10) and HYBRID_UPDATES (20) set the updates of each mode; OUT (default the results file) is written whole;
#   WARM_METHODS (e.g. "m_etf, m_topo, expert, single, mincut, dp") replaces the configs' warm-start methods (an ablation);
#   REUSE_PROFILES=1 keeps the profiles an earlier run left (runs set side by side then share their heuristics' bar).
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
SEEDS=${2:-1 2 3 4 5}
MODES=${3:-measured hybrid}
P="$BUILD/placer"
OUT=${OUT:-bench/results/learned_measured_cpu2.md}
GRAPHS=${GRAPHS:-nmt inception_v3}
WORK=runs/bench_measured_cpu2
mkdir -p "$WORK"

# The graphs of the configs, profiled once on this machine: the hybrid runs' simulator calibration.
"$P" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 -o "$WORK/nmt.json" > /dev/null
"$P" graph build inception_v3 --opt batch=4 --opt image=75 --opt width_div=8 --opt classes=10 \
  -o "$WORK/inception_v3.json" > /dev/null
"$P" graph build inception_v3 --opt batch=8 --opt image=96 --opt width_div=4 --opt classes=100 \
  -o "$WORK/inception_v3_b8.json" > /dev/null  # configs/cpu2_inception_v3_b8_measured.yaml's graph
# REUSE_PROFILES=1 keeps a profile an earlier run left in $WORK: the heuristics (m_etf, local_search) plan on the
# profile, so runs on fresh profiles set different placements as the bar (m_etf 7-10% faster than expert in one
# run, 7-11% slower in the next, learned_measured_cpu2.md, thirty-second session).
for g in $GRAPHS; do
  if [ "${REUSE_PROFILES:-0}" = 1 ] && [ -s "$WORK/profile_$g.json" ]; then
    echo "run_measured_cpu2: reusing $WORK/profile_$g.json" >&2
    continue
  fi
  "$P" profile --graph "$WORK/$g.json" --devices cpu:2 -o "$WORK/profile_$g.json" > /dev/null
done

# Seeds outside, modes inside: the modes of one seed run back to back, so that the machine's
# drift over the run falls on every mode alike.
for g in $GRAPHS; do
  for seed in $SEEDS; do
    for mode in $MODES; do
      dir="$WORK/${g}_${mode}_$seed"
      echo "== $g $mode seed $seed (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
      # measured: every sample run for real (MEASURED_UPDATES, 10, updates of 8); hybrid: every sample
      # simulated, the best of each batch and every new best measured (HYBRID_UPDATES, 20, updates of 8).
      # 8 samples per update: the configs' train.samples_per_update.
      # MODE+paired: the same with reward.paired (each measured batch beside a reference placement).
      base_mode=${mode%+paired}
      paired=(); [ "$mode" != "$base_mode" ] && paired=(--paired)
      if [ "$base_mode" = measured ]; then budget=(--updates "${MEASURED_UPDATES:-10}"); else budget=(--updates "${HYBRID_UPDATES:-20}"); fi
      cfg="configs/cpu2_${g}_measured.yaml"
      if [ -n "${WARM_METHODS:-}" ]; then
        grep -q '^  methods: \[' "$cfg" || { echo "run_measured_cpu2: no warm-start methods line in $cfg" >&2; exit 1; }
        sed "s/^  methods: \[.*\]/  methods: [$WARM_METHODS]/" "$cfg" > "$WORK/${g}_warm.yaml"
        cfg="$WORK/${g}_warm.yaml"
      fi
      "$P" train -c "$cfg" --reward-mode "$base_mode" "${paired[@]}" --seed "$seed" "${budget[@]}" \
        --profile "$WORK/profile_$g.json" \
        -o "$dir" -q > "$WORK/${g}_${mode}_$seed.log" 2>&1
    done
  done
done

python3 - "$WORK" "$OUT" "$BUILD" "$SEEDS" "$MODES" "$(git rev-parse --short HEAD)" "$GRAPHS" "${WARM_METHODS:-}" <<'PY'
import json, os, statistics, sys
work, out, build, seeds, modes, commit, graphs, warm = sys.argv[1:9]
seeds, modes, graphs = seeds.split(), modes.split(), graphs.split()
L = ["# Learned vs every baseline on cpu:2, measured side by side", "",
     f"Command: `GRAPHS=\"{' '.join(graphs)}\" " + (f"WARM_METHODS=\"{warm}\" " if warm else "") +
     (f"MEASURED_UPDATES={os.environ['MEASURED_UPDATES']} " if os.environ.get("MEASURED_UPDATES") else "") +
     (f"HYBRID_UPDATES={os.environ['HYBRID_UPDATES']} " if os.environ.get("HYBRID_UPDATES") else "") +
     ("REUSE_PROFILES=1 " if os.environ.get("REUSE_PROFILES") == "1" else "") +
     f"bash bench/run_measured_cpu2.sh {build} \"{' '.join(seeds)}\" \"{' '.join(modes)}\"` (commit {commit})  ",
     f"Machine: {os.cpu_count()} cores, idle apart from this job.", "",
     "Training: `placer train -c configs/cpu2_GRAPH_measured.yaml --reward-mode MODE --seed S --updates U` (measured:",
     f"{os.environ.get('MEASURED_UPDATES', '10')} updates of the config's samples_per_update (8), every sample run for real; "
     f"hybrid: {os.environ.get('HYBRID_UPDATES', '20')} updates of 8, every sample simulated with the",
     "profile-calibrated simulator and the best of each batch plus every new best run for real; MODE+paired: the same with",
     "`--paired`, each measured batch beside a reference placement, the first one measured, and a placement's step the",
     "reference's first median times its median per-round ratio to it). The modes of one seed run back to back. Every",
     "measurement uses the protocol: 2 warm-up steps, then 5 to 30 steps until the median's 95% interval is within 2%",
     "(in the final table up to the config's reward.final_max_steps, until reward.final_target if it sets one).",
     "The table is the trainer's own final table: the policy's best and every",
     "baseline's placement measured side by side in one fresh interleaved run, never the minimum seen during training.", ""]
for g in graphs:
    for mode in modes:
        runs = []
        for s in seeds:
            path = f"{work}/{g}_{mode}_{s}/summary.json"
            if os.path.exists(path):
                runs.append((s, json.load(open(path))))
        if not runs:
            continue
        L += [f"## {g}, {mode} rewards ({runs[0][1]['ops']} ops, {len(runs)} seeds)", ""]
        L += ["| seed | policy's best s [95% interval] | fastest baseline s [95% interval] | expert s [95% interval] | policy vs fastest baseline | rank test, fastest baseline vs policy | vs expert, intervals apart? | expert vs policy, paired by round | result found by | placements run for real in training (per update) |",
              "|---|---|---|---|---:|---|---|---|---|---:|"]
        gains, wins, apart, not_slower, paired_faster = [], 0, 0, 0, 0
        for s, r in runs:
            pol = r["policy_best_step_s"]; pci = r["policy_ci_s"]
            base = [b for b in r["baselines"] if b["ok"]]
            fb = min(base, key=lambda b: b["step_s"])
            ex = next((b for b in base if b["method"] == "expert"), None)
            gain = 100 * (fb["step_s"] / pol - 1)
            gains.append(gain)
            wins += pol <= fb["step_s"]
            sep = ex is not None and pci[1] < ex["ci_s"][0]
            apart += sep
            cell = lambda v, ci: "%.4f [%.4f, %.4f]" % (v, ci[0], ci[1])
            exc = cell(ex["step_s"], ex["ci_s"]) if ex else "-"
            exg = ("%+.1f%%, %s" % (100 * (ex["step_s"] / pol - 1), "yes" if sep else "no")) if ex else "-"
            # No baseline faster than the policy by more than the noise (Mann-Whitney, 5%).
            faster = [b for b in base if b["step_s"] < pol and b.get("p_vs_policy", 1) < 0.05]
            not_slower += not faster
            pv = fb.get("p_vs_policy")
            rank = "-" if pv is None else ("no difference" if pv >= 0.05 else "policy faster" if fb["step_s"] > pol else "baseline faster" if fb["step_s"] < pol else "differ, equal medians") + f" (p={pv:.2g})"
            # Expert's rounds paired with the policy's (the Hodges-Lehmann expert / policy, its interval, signed-rank p).
            pe = ex.get("paired_vs_policy") if ex else None
            pair = "-" if not pe else "%+.1f%% [%+.1f%%, %+.1f%%], p=%.2g" % (
                100 * (pe["ratio"] - 1), 100 * (pe["ratio_low"] - 1), 100 * (pe["ratio_high"] - 1), pe["p_value"])
            paired_faster += bool(pe) and pe["ratio"] > 1 and pe["p_value"] < 0.05
            L.append(f"| {s} | {cell(pol, pci)} | {fb['method']} {cell(fb['step_s'], fb['ci_s'])} | {exc} | {gain:+.1f}% | {rank} | {exg} | {pair} | {r['best_found_by']} | {r['measurements']} ({r['measurements'] / max(1, r['updates']):.1f}) |")
        L += ["", f"Policy vs the fastest baseline: median {statistics.median(gains):+.1f}%, worst {min(gains):+.1f}% "
              f"(positive: the policy is faster). At least as fast as every baseline on {wins} of {len(runs)} seeds; "
              f"faster than expert with intervals that do not overlap on {apart} of {len(runs)}. "
              f"No baseline faster than the policy by more than the noise (rank test at 5%) on {not_slower} of {len(runs)}. "
              f"Faster than expert paired by round (signed-rank test at 5%) on {paired_faster} of {len(runs)}.", ""]
open(out, "w").write("\n".join(L) + "\n")
print("wrote", out)
PY
