set -euo pipefail
cd /work/main
P=build/placer
$P graph build inception_v3 --opt batch=4 --opt image=96 --opt width_div=4 --opt classes=100 -o /tmp/inc/inception_v3_b4.json
$P graph build inception_v3 --opt batch=8 --opt image=96 --opt width_div=4 --opt classes=100 -o /tmp/inc/inception_v3_b8.json
run() { name=$1; g=$2; shift 2; echo "== $name $* ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
  $P fidelity --graph /tmp/inc/$g.json --name $name --devices cpu:2 --placements 24 --spread 0 --rounds 2 --warmup 2 --steps 6 "$@" --repetitions 3 -o /tmp/inc/out; }
run inception_v3_b4_max120 inception_v3_b4 --max-steps 120 --target 0.01
run inception_v3_b8_max30 inception_v3_b8 --max-steps 30 --target 0.02
run inception_v3_b8_max120 inception_v3_b8 --max-steps 120 --target 0.01
echo "== end $(date +%T)"
