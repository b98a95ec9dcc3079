#!/usr/bin/env bash
# The pretrained policy on builder graphs at sizes in neither pretraining family
# (configs/pretrain_gnn.yaml's, before and after the twenty-fifth session's sizes):
# the policy alone, zero-shot (`placer place --policy P --no-refine`, 1 s, seed 1)
# against local_search at 2,000 evaluations (seed 1), simulated, on k80x4 and
# p100x4. It tests whether the policy carries over from one size of a builder to
# another, which the held-out set (bench/heldout_models.sh) cannot say.
# Usage: bash bench/pretrained_sizes.sh [BUILD=build] [POLICY=pretrained] [DIR=/tmp/placer-sizes]
# Prints a Markdown table and the commit it ran at; the graphs and local_search's placements are
# cached in DIR/COMMIT (COMMIT: `git rev-parse --short HEAD`, "+changes" added for a tree with
# uncommitted changes), so a run at another commit builds and searches them again.
# Run it on an otherwise idle machine: the policy samples for its second.
set -euo pipefail
BUILD=${1:-build}
POLICY=${2:-pretrained}
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
DIR=${3:-/tmp/placer-sizes}/$COMMIT
P="$BUILD/placer"
mkdir -p "$DIR"
graph() {
  local name=$1
  shift
  [ -e "$DIR/$name.json" ] || "$P" graph build "$@" -o "$DIR/$name.json" > /dev/null
}
graph transformer_a transformer --opt layers=3 --opt dec_layers=3 --opt d_model=512 --opt seq=48 --opt batch=32 --opt vocab=16000
graph transformer_b transformer --opt layers=3 --opt dec_layers=3 --opt d_model=512 --opt seq=64 --opt batch=32 --opt vocab=8000
graph transformer_c transformer --opt layers=3 --opt dec_layers=3 --opt d_model=512 --opt seq=48 --opt batch=32 --opt vocab=8000
graph transformer_d transformer --opt layers=6 --opt dec_layers=6 --opt d_model=512 --opt seq=48 --opt batch=32 --opt vocab=8000
graph nmt_a nmt --opt layers=2 --opt hidden=768 --opt steps=16 --opt batch=32 --opt vocab=16000
graph nmt_b nmt --opt layers=3 --opt hidden=384 --opt steps=10 --opt batch=64 --opt vocab=12000
graph rnnlm_a rnnlm --opt layers=2 --opt hidden=1536 --opt steps=12 --opt batch=32 --opt vocab=30000
graph rnnlm_b rnnlm --opt layers=4 --opt hidden=768 --opt steps=8 --opt batch=64 --opt vocab=16000
graph inception_a inception_v3 --opt batch=32 --opt image=192 --opt width_div=2
graph inception_b inception_v3 --opt batch=8 --opt image=299
graph resnet_a resnet --opt depth=50 --opt image=224 --opt batch=16
graph resnet_b resnet --opt depth=152 --opt image=96 --opt batch=16 --opt width_div=2
graph mlp_a mlp --opt layers=4 --opt width=4096 --opt input=2048 --opt batch=64
step_of() { "$P" simulate --graph "$1" --placement "$2" --cluster "$3" --no-memory | sed -n 's/^step: \([0-9.e+-]*\) s.*/\1/p'; }
echo "| graph | preset | ops | local_search @2000 (ms) | policy alone (ms) | vs local_search |"
echo "|---|---|---:|---:|---:|---:|"
within=0
cells=0
gaps=()
for preset in k80x4 p100x4; do
  for name in transformer_a transformer_b transformer_c transformer_d nmt_a nmt_b rnnlm_a rnnlm_b inception_a inception_b \
    resnet_a resnet_b mlp_a; do
    g="$DIR/$name.json"
    ls_json="$DIR/${name}_$preset.local_search.json"
    [ -e "$ls_json" ] || "$P" place --method local_search --budget 2000 --seed 1 --graph "$g" --cluster "$preset" -o "$ls_json" > /dev/null
    ls_s=$(step_of "$g" "$ls_json" "$preset")
    "$P" place --policy "$POLICY" --no-refine --graph "$g" --cluster "$preset" --seed 1 -o "$DIR/policy.json" > /dev/null
    pol_s=$(step_of "$g" "$DIR/policy.json" "$preset")
    ops=$(python3 -c "import json; print(len(json.load(open('$g'))['ops']))")
    gap=$(python3 -c "print('%+.1f' % (100 * ($pol_s / $ls_s - 1)))")
    gaps+=("$gap")
    cells=$((cells + 1))
    python3 -c "import sys; sys.exit(0 if $gap <= 5.0 else 1)" && within=$((within + 1))
    python3 -c "print('| $name | $preset | $ops | %.3f | %.3f | $gap%% |' % ($ls_s * 1e3, $pol_s * 1e3))"
  done
done
median=$(printf '%s\n' "${gaps[@]}" | python3 -c "import sys, statistics; print('%+.1f' % statistics.median(float(x) for x in sys.stdin))")
echo
echo "Policy: $POLICY. Within 5% of local_search@2,000: $within of $cells; median gap $median%."
echo "Commit: $COMMIT (graphs and local_search placements cached in $DIR)."
