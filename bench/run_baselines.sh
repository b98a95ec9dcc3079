#!/usr/bin/env bash
# The baseline tables of bench/results/baselines_<preset>.md: every placer on
# rnnlm, nmt, inception_v3 and transformer (default builder options),
# simulated on a preset. Each row has the simulator's step and, beside it, the
# placer's own estimate (planned makespan, dp objective, ilp incumbent).
#   bench/run_baselines.sh k80x4 > bench/results/baselines_k80x4.md
set -euo pipefail
PRESET=${1:-k80x4}
PLACER=${PLACER:-build/placer}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "# Baselines on $PRESET (simulated, roofline cost model of the preset)"
echo
echo "Command: \`bench/run_baselines.sh $PRESET\` at commit $(git rev-parse --short HEAD): for each graph,"
echo "\`placer baseline --graph G.json --cluster $PRESET --method all --time-limit 30 --markdown\`."
echo "Seed 0, local_search budget 2000 evaluations, ilp time limit 30 s. Machine: $(nproc) shared cores (load average"
echo "$(cut -d' ' -f1-3 /proc/loadavg) at the start), so place times are pessimistic. The list schedulers (m_topo, m_etf, m_sct,"
echo "heft) plan on the simulator's link model (FIFO channel per directed link, a tensor sent once per destination)."
for m in rnnlm nmt inception_v3 transformer; do
  "$PLACER" graph build $m -o "$WORK/$m.json" > /dev/null
  echo
  echo "## $m"
  echo
  "$PLACER" baseline --graph "$WORK/$m.json" --cluster "$PRESET" --method all --time-limit 30 --markdown 2>/dev/null
done
