#!/usr/bin/env bash
# The executor's backward ops two ways, interleaved, on one device (a GPU by default):
# through torch's autograd engine (PLACER_AUTOGRAD_ENGINE=1, which runs a CUDA
# node on the engine's own device thread) and in the executor's own thread (the
# default). Results: bench/results/gpu_h100.md ("The executor's backward ops on a
# GPU"); scripts/gpu-check.sh runs it (docs/gpu.md, "The run book").
#
#   bench/gpu_backward_ab.sh PLACER_BINARY OUTDIR [DEVICES] [ROUNDS]
set -uo pipefail
if [ $# -lt 2 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
P=$1; R=$2; DEV=${3:-cuda:0}; ROUNDS=${4:-3}
mkdir -p "$R"
"$P" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 -o "$R/nmt.json" > /dev/null || exit 1
"$P" place --method single --graph "$R/nmt.json" --devices "$DEV" -o "$R/single.json" > /dev/null || exit 1
echo "| round | backward through | median step (s) | 95% interval |"
echo "|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for e in 0 1; do
    line=$(PLACER_AUTOGRAD_ENGINE=$e timeout 120 "$P" measure --graph "$R/nmt.json" --devices "$DEV" \
             --placement "$R/single.json" --steps 30 --max-steps 30 2>&1 | grep -m1 "step ")
    how=$([ "$e" = 1 ] && echo "autograd engine" || echo "executor thread")
    echo "| $round | $how | $(echo "$line" | sed -n 's/.*step \([0-9.e-]*\) s.*/\1/p') | $(echo "$line" | sed -n 's/.*interval \(\[[^]]*\]\).*/\1/p') |"
  done
done
