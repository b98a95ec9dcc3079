#!/usr/bin/env bash
# Deterministic outputs of one placer binary, to diff two builds with
# bench/refactor_compare.py: 11 placers on 4 graphs x 2 presets, a calibrated
# cpu:2 simulation with one fixed profile, and 600 samples of nmt training.
# Usage: bash bench/refactor_equivalence.sh PLACER OUTDIR [GRAPHDIR]
#   (run it with the old binary first: it builds the graphs and the profile
#    in GRAPHDIR, which the second binary then reuses)
set -u
P=$1; O=$2; G=${3:-/tmp/placer-equiv-graphs}; mkdir -p $O $G
cd "$(dirname "$0")/.."
if [ ! -f $G/nmt.json ]; then
  $P graph build rnnlm -o $G/rnnlm.json; $P graph build nmt -o $G/nmt.json
  $P graph build inception_v3 -o $G/inception_v3.json; $P graph build transformer -o $G/transformer.json
  $P graph build rnnlm --opt layers=2 --opt hidden=128 --opt steps=6 --opt batch=16 --opt vocab=1000 -o $G/rnnlm_small.json
fi
M=single,round_robin,random,expert,mincut,m_topo,m_etf,m_sct,heft,dp,local_search
for g in rnnlm nmt inception_v3 transformer; do for c in k80x4 p100x4; do
  $P baseline --graph $G/$g.json --cluster $c --method $M --seed 3 --budget 300 --json $O/base_${g}_$c.json > $O/base_${g}_$c.txt 2>&1
done; done
# calibrated cpu:2 simulation with a fixed profile (made once by the first binary)
[ -f $G/rnnlm_small.profile.json ] || $P profile --graph $G/rnnlm_small.json --devices cpu:2 --out $G/rnnlm_small.profile.json > /dev/null 2>&1
for m in single round_robin m_etf; do
  $P place --graph $G/rnnlm_small.json --devices cpu:2 --method $m -o $G/pl_$m.json > /dev/null 2>&1 || $P place --help | head -3
  $P simulate --graph $G/rnnlm_small.json --cluster cpu:2 --profile $G/rnnlm_small.profile.json --placement $G/pl_$m.json --json $O/sim_cpu2_$m.json > $O/sim_cpu2_$m.txt 2>&1
done
$P train -c configs/nmt_k80x4.yaml --max-samples 600 --seed 1 -q --threads 1 -o $O/train_nmt > $O/train_nmt.txt 2>&1
# imports (the front ends): TorchScript and torch.export fixtures, NeurIPS 2020 workloads
# (set EQUIV_PT2 to a folder of .pt2 fixtures made by scripts/make_export_fixtures.py; default: the build's)
X=${EQUIV_PT2:-build/tests/export_fixtures}; F=tests/fixtures
$P graph import $F/tiny_cnn.pt --input x:2x3x8x8:float -o $O/imp_cnn_pt.json > /dev/null 2>&1
$P graph import $F/tiny_lstm_lm.pt --input tokens:5x2:long -o $O/imp_lm_pt.json > /dev/null 2>&1
$P graph import $F/tiny_transformer.pt --input src:4x2x8:float -o $O/imp_tr_pt.json > /dev/null 2>&1
for m in tiny_cnn tiny_gpt tiny_lstm_lm tiny_transformer encoder_eval tiny_dynamic; do
  [ -f $X/$m.pt2 ] && $P graph import $X/$m.pt2 -o $O/imp_${m}_pt2.json > /dev/null 2>&1
done
W=../shared/workloads/dnn-partitioning/throughput-inputs
for w in LayerGraphs/gnmt_training OperatorGraphs/bert_l-3_inference; do
  n=$(basename $w); [ -f $W/$w.json ] && $P graph import $W/$w.json -o $O/imp_wl_$n.json > /dev/null 2>&1
  [ -f $W/$w.json ] && $P baseline --graph $W/$w.json --objective max_load --method dp,single --json $O/wl_base_$n.json > /dev/null 2>&1
done
