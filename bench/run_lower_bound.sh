#!/usr/bin/env bash
# The lower bound's parts on the held-out graphs (issue 25) and the builder
# graphs, and how far local_search's placement (4,000 evaluations, seed 1) is
# above the bound before and after the critical path with joins (an op's
# producers and, since a2c57ab, its ancestors on its device run one at a time;
# env/src/lower_bound.cc). Simulated, deterministic.
# Usage: bash bench/run_lower_bound.sh [BUILD_DIR] [HELDOUT_DIR]
# Writes bench/results/lower_bound.md.
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-/tmp/placer-heldout}
OUT=bench/results/lower_bound.md
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
IF_STALE=1 bash bench/heldout_models.sh "$BUILD" "$DATA"  # (re)imports graphs from another commit
for g in nmt rnnlm inception_v3 transformer resnet; do "$BUILD/placer" graph build "$g" -o "$WORK/$g.json" > /dev/null; done

row() {  # graph-file name preset
  "$BUILD/placer" place --graph "$1" --cluster "$3" --method local_search --budget 4000 --seed 1 -o "$WORK/p.json" > /dev/null
  "$BUILD/placer" simulate --graph "$1" --cluster "$3" --placement "$WORK/p.json" --json "$WORK/s.json" > /dev/null
  python3 - "$WORK/s.json" "$2" "$3" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
lb = s["lower_bound"]
before = max(lb["critical_path_s"], lb["average_work_s"], lb["lp_s"], lb["group_s"])
now = s["lower_bound_s"]
step = s["result"]["step_s"]
ms = lambda x: "%.3f" % (1e3 * x)
binds = "joins" if lb["joins_s"] > before else "-"
print("| %s | %s | %s | %s | %s | %s | %s | %s | %+.1f%% | %+.1f%% | %s |" % (
    sys.argv[2], sys.argv[3], ms(lb["critical_path_s"]), ms(lb["joins_s"]), ms(lb["average_work_s"]), ms(before),
    ms(now), ms(step), 100 * (step / before - 1), 100 * (step / now - 1), binds))
PY
}

{
  echo "# The lower bound: the critical path with joins"
  echo
  echo "Command: \`bash bench/run_lower_bound.sh $BUILD $DATA\`, commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d)."
  echo "Simulated (roofline costs), deterministic. *Bound before*: the max of the critical path (free transfers),"
  echo "the average work, the LP and the co-location group bound; *bound now*: the same with the critical path"
  echo "with joins (producers and a cone of ancestors; docs/clusters.md, Lower bound). local_search: 4,000"
  echo "evaluations, seed 1."
  echo
  echo "| graph | preset | critical path (ms) | with joins (ms) | average work (ms) | bound before (ms) | bound now (ms) | local_search @4,000 (ms) | gap before | gap now | joins binds |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for preset in k80x4 p100x4; do
    for g in resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm; do row "$DATA/$g.json" "$g" "$preset"; done
    for g in nmt rnnlm inception_v3 transformer resnet; do row "$WORK/$g.json" "$g (builder)" "$preset"; done
  done
} > "$OUT.tmp"
if [ -e "$OUT" ] && grep -q '^## Findings' "$OUT"; then sed -n '/^## Findings/,$p' "$OUT" > "$WORK/findings"; { cat "$OUT.tmp"; echo; cat "$WORK/findings"; } > "$OUT"; rm "$OUT.tmp"; else mv "$OUT.tmp" "$OUT"; fi
echo "wrote $OUT"
