#!/usr/bin/env bash
# `placer place --policy`'s report on a graph whose step is 0 s (one input op): no percentage against a
# step of 0 (it printed "-nan% vs the policy"); --budget's help names the searches that read it.
#   bash place_policy_report.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
# shellcheck source=lib/checks.sh
source "$(dirname "$0")/lib/checks.sh"

cat > "$work/p.yaml" <<'YAML'
name: p
cluster: cpu:2
graph: {builder: mlp, options: {layers: 1, width: 8, input: 8, batch: 2}}
policy: {type: seq2seq, hidden: 16, max_groups: 8}
reward: {mode: simulated}
train: {updates: 1, samples_per_update: 2}
warm_start: {methods: []}
run: {seed: 1}
YAML
cat > "$work/one.json" <<'JSON'
{"format":"placer.graph","version":1,"name":"one","ops":[
 {"name":"x","type":"placer::input","outputs":[{"shape":[4,3],"dtype":"float"}]}
]}
JSON
"$PLACER" train -c "$work/p.yaml" -o "$work/p" > "$work/out" 2> "$work/err" || fail "train: $(cat "$work/err")"
"$PLACER" place --policy "$work/p" --graph "$work/one.json" --devices cpu:2 -o "$work/pl.json" > "$work/out" 2> "$work/err" \
  || fail "place: $(cat "$work/err")"
grep -qi "nan" "$work/out" && fail "a percentage of a 0 s step: $(cat "$work/out")"
grep "^fast path" "$work/out" | grep -q "no percentage: the policy takes 0 s" || fail "fast path line: $(cat "$work/out")"
grep "^refinement" "$work/out" | grep -q "no percentage: the faster start takes 0 s" \
  || fail "refinement line: $(cat "$work/out")"

for cmd in place baseline; do
  "$PLACER" $cmd --help | tr -s ' \n' ' ' | grep -q "Evaluations a search may spend (local_search, guided_search;" \
    || fail "$cmd --help: --budget does not name guided_search"
done

finish place_policy_report
