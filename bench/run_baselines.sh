#!/usr/bin/env bash
# The baseline tables of bench/results/baselines_<preset>.md: every placer on
# rnnlm, nmt, inception_v3, transformer and resnet (default builder options),
# and GoogLeNet (torchvision, traced, imported as a TorchScript training graph
# at batch 32) when the project environment has torchvision, simulated on a
# preset. Each row has the simulator's step and, beside it, the placer's own
# estimate (planned step, dp objective, ilp incumbent).
#   bench/run_baselines.sh k80x4 > bench/results/baselines_k80x4.md
set -euo pipefail
PRESET=${1:-k80x4}
PLACER=${PLACER:-build/placer}
PYTHON=${PYTHON:-.venv/bin/python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "# Baselines on $PRESET (simulated, roofline cost model of the preset)"
echo
echo "Command: \`bench/run_baselines.sh $PRESET\` at commit $(git rev-parse --short HEAD): for each graph,"
echo "\`placer baseline --graph G.json --cluster $PRESET --method all --time-limit 30 --markdown\`."
echo "Seed 0, local_search budget 2000 evaluations, ilp time limit 30 s. Machine: $(nproc) shared cores (load average"
echo "$(cut -d' ' -f1-3 /proc/loadavg) at the start), so place times are pessimistic. The list schedulers (m_topo, m_etf, m_sct,"
echo "heft) and dp plan on the simulator's link model (FIFO channel per directed link, a tensor sent once per destination)"
echo "and report their placement replayed as the runtime dispatches it (planned step)."
graphs=(rnnlm nmt inception_v3 transformer resnet)
for m in "${graphs[@]}"; do "$PLACER" graph build $m -o "$WORK/$m.json" > /dev/null; done
if "$PYTHON" -c "import torchvision" 2> /dev/null; then
  "$PYTHON" - "$WORK/googlenet.pt" << 'PY'
import sys, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True).train()
torch.jit.trace(model, torch.randn(2, 3, 224, 224), check_trace=False).save(sys.argv[1])
PY
  "$PLACER" graph import "$WORK/googlenet.pt" --input x:32x3x224x224:float -o "$WORK/googlenet.json" > /dev/null
  graphs+=(googlenet)
fi
for m in "${graphs[@]}"; do
  echo
  echo "## $m"
  echo
  "$PLACER" baseline --graph "$WORK/$m.json" --cluster "$PRESET" --method all --time-limit 30 --markdown 2>/dev/null
done
