#!/usr/bin/env bash
# `placer train` with nothing evaluated (0 updates, no warm-start methods, no baselines): the summary says
# so, with no lower-bound comparison and no best_placement.json among the results; 0 updates divide nothing.
#   bash train_no_result.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
# shellcheck source=lib/checks.sh
source "$(dirname "$0")/lib/checks.sh"

cat > "$work/e.yaml" <<'YAML'
name: e
cluster: cpu:2
graph: {builder: mlp, options: {layers: 1, width: 8, input: 8, batch: 2}}
policy: {type: seq2seq, hidden: 16, max_groups: 8}
reward: {mode: simulated}
train: {updates: 0, samples_per_update: 2}
warm_start: {methods: [], bc_steps: 2}
run: {seed: 1}
YAML
"$PLACER" train -c "$work/e.yaml" -o "$work/e" > "$work/out" 2> "$work/err" || fail "train: $(cat "$work/err")"
grep -q "^  result: none: the run evaluated no placement" "$work/out" || fail "result line: $(cat "$work/out")"
grep -q "lower bound" "$work/out" && fail "a lower bound with no result: $(cat "$work/out")"
[ -e "$work/e/best_placement.json" ] && fail "best_placement.json written with no result"
grep "results in" "$work/out" | grep -q "best_placement.json" && fail "best_placement.json listed: $(cat "$work/out")"

# Measured, 0 updates, one warm-start method: a placement ran for real, but there was no update to divide by.
sed -e 's/mode: simulated/mode: measured/' -e 's/methods: \[\]/methods: [m_etf]/' "$work/e.yaml" > "$work/m.yaml"
"$PLACER" train -c "$work/m.yaml" -o "$work/m" > "$work/out" 2> "$work/err" || fail "measured train: $(cat "$work/err")"
grep -q "per update" "$work/out" && fail "per update with 0 updates: $(cat "$work/out")"
grep -q "^  training ran [0-9]* placements for real (no updates)" "$work/out" || fail "training line: $(cat "$work/out")"
grep "results in" "$work/out" | grep -q "best_placement.json" || fail "best_placement.json not listed: $(cat "$work/out")"

# A graph of inputs alone steps in 0 s: its placement is a result all the same ("result: none" before).
cp "$(dirname "$0")/../fixtures/inputs_only.json" "$work/inputs.json"
sed -e "s|graph: .*|graph: {file: $work/inputs.json}|" -e 's/methods: \[\]/methods: [m_etf]/' "$work/e.yaml" > "$work/z.yaml"
"$PLACER" train -c "$work/z.yaml" -o "$work/z" > "$work/out" 2> "$work/err" || fail "inputs-only train: $(cat "$work/err")"
grep -q "result: none" "$work/out" && fail "a 0 s placement read as no result: $(cat "$work/out")"
grep -q "nan\|inf" "$work/out" && fail "nan or inf printed: $(cat "$work/out")"

finish train_no_result
