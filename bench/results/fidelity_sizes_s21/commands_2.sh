set -euo pipefail
cd /work/main
P=build/placer
PY=.venv/bin/python3
$P graph build transformer --opt layers=2 --opt dec_layers=2 --opt d_model=256 --opt heads=4 --opt ffn=1024 \
  --opt seq=32 --opt batch=16 --opt vocab=2000 -o /tmp/inc/transformer_b16.json
$PY bench/export_gpt2.py /tmp/inc/gpt2_b16.pt2 16
$P graph import /tmp/inc/gpt2_b16.pt2 -o /tmp/inc/gpt2_b16.json > /dev/null
run() { name=$1; g=$2; shift 2; echo "== $name $* ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
  $P fidelity --graph /tmp/inc/$g.json --name $name --devices cpu:2 --placements 24 --spread 0 --rounds 2 --warmup 2 --steps 6 "$@" --repetitions 3 -o /tmp/inc/out; }
run inception_v3_b8_max120_r2 inception_v3_b8 --max-steps 120 --target 0.01
run inception_v3_b8_max120_r3 inception_v3_b8 --max-steps 120 --target 0.01
run transformer_b16_max120 transformer_b16 --max-steps 120 --target 0.01
run gpt2_b16_max120 gpt2_b16 --max-steps 120 --target 0.01
echo "== end $(date +%T)"
