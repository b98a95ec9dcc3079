#!/usr/bin/env bash
# placer place / placer baseline end to end on a small MLP graph.
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" place --help | grep -- "--method" > /dev/null || fail "place --help"
"$PLACER" baseline --help | grep -- "--markdown" > /dev/null || fail "baseline --help"
"$PLACER" graph build mlp -o "$TMP/g.json" >/dev/null || fail "graph build"

for m in single round_robin expert m_etf dp ilp; do
  limit=()
  [ "$m" != ilp ] || limit=(--time-limit 5)  # the only method that reads it (the others refuse it: refusals_cli.sh)
  "$PLACER" place --method "$m" --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/$m.json" "${limit[@]}" > "$TMP/$m.out" ||
    fail "place --method $m"
  grep -q "simulated" "$TMP/$m.out" || fail "$m: no summary"
  grep -q '"placement"' "$TMP/$m.json" || fail "$m: placement file"
done
"$PLACER" place --method dp --graph "$TMP/g.json" --devices cpu:2 -o "$TMP/cpu.json" > /dev/null || fail "--devices"

# Bad input: unknown method, both or neither of --cluster/--devices, missing graph.
set +e
"$PLACER" place --method magic --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "unknown placement method 'magic'" "$TMP/err" || fail "unknown method not reported"
"$PLACER" place --method dp --graph "$TMP/g.json" -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--cluster" "$TMP/err" || fail "missing cluster not reported"
"$PLACER" place --method dp --graph "$TMP/nope.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] || fail "missing graph accepted"
# A directory read as an empty document ("JSON parse error at byte 0"), /dev/zero was read forever.
"$PLACER" place --method dp --graph "$TMP" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "cannot read '$TMP': a directory" "$TMP/err" || fail "a directory as the graph: $(cat "$TMP/err")"
timeout 10 "$PLACER" graph info /dev/zero 2> "$TMP/err" > /dev/null
rc=$?; [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "cannot read '/dev/zero': not a regular file" "$TMP/err" || fail "/dev/zero as the graph: $(cat "$TMP/err")"
# A placement that lacks an op: the error names the file.
python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); p['placement'].pop(sorted(p['placement'])[0])
json.dump(p, open(sys.argv[2], 'w'))" "$TMP/single.json" "$TMP/short.json"
"$PLACER" simulate --graph "$TMP/g.json" --placement "$TMP/short.json" --cluster k80x4 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q "$TMP/short.json: .*has no device" "$TMP/err" || fail "a placement without an op: $(cat "$TMP/err")"
# A train config's cluster that is no cluster: the error names the field.
printf 'name: t\ngraph: {builder: mlp}\ncluster: tpu:8\ntrain: {updates: 1, samples_per_update: 2}\n' > "$TMP/t.yaml"
"$PLACER" train -c "$TMP/t.yaml" -o "$TMP/t" -q 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q "cluster: .*tpu:8" "$TMP/err" || fail "train with cluster tpu:8: $(cat "$TMP/err")"
# A number out of range: the option and what it must be, not CLI11's 309-digit upper end.
"$PLACER" place --method local_search --budget 0 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--budget: must be a finite number > 0, got 0" "$TMP/err" || fail "--budget 0: $(cat "$TMP/err")"
[ "$(wc -c < "$TMP/err")" -lt 200 ] || fail "--budget 0: a long message: $(cat "$TMP/err")"
"$PLACER" place --policy pretrained --time-budget soon --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--time-budget: 'soon' is not a number" "$TMP/err" || fail "--time-budget soon: $(cat "$TMP/err")"
# A policy file whose weights were damaged (the archive checks no sums): refused, naming a parameter.
SRC="${2:-$(cd "$(dirname "$0")/../.." && pwd)}"
mkdir -p "$TMP/damaged"
cp "$SRC/policies/pretrained/config.yaml" "$TMP/damaged/" 2>/dev/null || true
python3 - "$SRC/policies/pretrained/checkpoint.pt" "$TMP/damaged/checkpoint.pt" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as zin, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        zout.writestr(info, b"\xff" * len(data) if "/data/" in info.filename else data)
PY
"$PLACER" place --policy "$TMP/damaged" --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err" > /dev/null
[ $? -eq 2 ] && grep -q "parameter '.*' holds values that are not finite numbers" "$TMP/err" || fail "damaged policy: $(cat "$TMP/err")"
"$PLACER" export-policy "$SRC/policies/pretrained" -o "$TMP/nodir/x.pt" 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q "cannot write '$TMP/nodir/x.pt'" "$TMP/err" || fail "export-policy to a missing folder: $(cat "$TMP/err")"
# An output in a folder that does not exist: refused before placing.
"$PLACER" place --method dp --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/nodir/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--output: cannot write '$TMP/nodir/x.json': folder '$TMP/nodir' does not exist" "$TMP/err" ||
  fail "-o in a missing folder: $(cat "$TMP/err")"
"$PLACER" train -c "$TMP/t.yaml" -o "$TMP/g.json/run" -q 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q -- "--output: cannot make '$TMP/g.json/run': '$TMP/g.json' is not a folder" "$TMP/err" ||
  fail "train -o under a file: $(cat "$TMP/err")"
# A command that does not exist: named, with the commands there are.
"$PLACER" plcae --method dp 2> "$TMP/err"
[ $? -eq 2 ] && grep -q "unknown command 'plcae' (commands: graph, .*place, " "$TMP/err" || fail "unknown command: $(cat "$TMP/err")"
# A method option no method reads (a misspelt key was ignored), and a key given twice (the last one won).
"$PLACER" place --method local_search --option temprature=0.1 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--option temprature: not an option of local_search (local_search takes temperature)" "$TMP/err" ||
  fail "misspelt option: $(cat "$TMP/err")"
"$PLACER" baseline --method m_etf,dp --option max_ideal=9 --graph "$TMP/g.json" --cluster k80x4 2> "$TMP/err" > /dev/null
[ $? -ne 0 ] && grep -q -- "--option max_ideal: an option of none of the methods (m_etf takes none; dp takes objective, max_ideals" "$TMP/err" ||
  fail "baseline misspelt option: $(cat "$TMP/err")"
"$PLACER" place --method local_search --option temperature=0.1 --option temperature=0.2 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--option temperature: given twice" "$TMP/err" || fail "option given twice: $(cat "$TMP/err")"
"$PLACER" place --policy pretrained --option temperature=0.1 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--option applies to --method only" "$TMP/err" || fail "option with --policy: $(cat "$TMP/err")"
set -e
"$PLACER" place --method mincut --option imbalance=0.2 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" > /dev/null ||
  fail "mincut's imbalance refused"

"$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single,expert,m_etf,dp \
  --markdown --json "$TMP/b.json" --csv "$TMP/b.csv" > "$TMP/b.md" || fail "baseline"
grep -q "| method | simulated step (ms) |" "$TMP/b.md" || fail "baseline markdown header"
for m in single expert m_etf dp; do grep -q "| $m |" "$TMP/b.md" || fail "baseline row $m"; done
grep -q "| m_etf | [0-9.]* | [0-9.]* (planned step; simulated [+-][0-9]*%) |" "$TMP/b.md" || fail "m_etf's own estimate beside the simulated step"
python3 - "$TMP/b.json" "$TMP/b.csv" <<'PY' || fail "baseline json/csv"
import csv, json, sys
j = json.load(open(sys.argv[1]))
assert [m["method"] for m in j["methods"]] == ["single", "expert", "m_etf", "dp"], j
lb = j["lower_bound_s"]
for m in j["methods"]:
    assert m["feasible"] and m["simulated_step_s"] >= lb * (1 - 1e-9), m
    assert len(m["peak_bytes"]) == 4
    # the placer's own estimate is reported beside the simulator's figure, never instead of it
    assert ("own_estimate_s" in m) == (m["method"] in ("m_etf", "dp")), m
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 4 and rows[0]["method"] == "single"
PY
# A pretrained policy zero-shot (the policy alone and the fast path's heuristics, then local_search from the faster within
# the time budget), printed apart; a missing or corrupt policy names its path. The
# real one ships in policies/pretrained (`make pretrained` remakes it, ~14 min); a
# tiny one of the same recipe is trained here in a second, exported as `make
# pretrained` exports its own, and named by PLACER_PRETRAINED.
SRC="${2:-$(cd "$(dirname "$0")/../.." && pwd)}"
"$PLACER" train --config "$SRC/tests/fixtures/pretrain_tiny.yaml" -o "$TMP/tiny_run" -q > /dev/null 2>&1 ||
  fail "train the tiny pretrained policy"
mkdir -p "$TMP/pretrained"
"$PLACER" export-policy "$TMP/tiny_run" -o "$TMP/pretrained/checkpoint.pt" > "$TMP/export.out" || fail "export-policy"
grep -q "^wrote $TMP/pretrained/checkpoint.pt: [0-9.]* MB (the checkpoint: [0-9.]* MB)" "$TMP/export.out" ||
  fail "export-policy: $(cat "$TMP/export.out")"
[ "$(stat -c %s "$TMP/pretrained/checkpoint.pt")" -lt "$(stat -c %s "$TMP/tiny_run/checkpoint.pt")" ] ||
  fail "export-policy: not smaller than the run's checkpoint"
set +e
"$PLACER" export-policy "$TMP/none" -o "$TMP/x.pt" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "$TMP/none: no checkpoint here" "$TMP/err" || fail "export-policy of nothing: $(cat "$TMP/err")"
# -o the run's own checkpoint (by its folder or its file) is refused: it overwrote it, and --resume then failed.
size=$(stat -c %s "$TMP/tiny_run/checkpoint.pt")
for from in "$TMP/tiny_run" "$TMP/tiny_run/checkpoint.pt"; do
  "$PLACER" export-policy "$from" -o "$TMP/tiny_run/../tiny_run/checkpoint.pt" > /dev/null 2> "$TMP/err"
  [ $? -eq 2 ] && grep -q -- "-o $TMP/tiny_run/../tiny_run/checkpoint.pt: is the checkpoint it exports" "$TMP/err" ||
    fail "export-policy $from -o its own checkpoint: $(cat "$TMP/err")"
done
[ "$(stat -c %s "$TMP/tiny_run/checkpoint.pt")" -eq "$size" ] || fail "export-policy -o its source: the checkpoint changed"
set -e
# The shipped policy (in git) loads and places a graph it never saw.
if [ -e "$SRC/policies/pretrained/checkpoint.pt" ]; then
  PLACER_PRETRAINED= "$PLACER" place --policy pretrained --no-refine --graph "$TMP/g.json" --cluster k80x4 \
    -o "$TMP/shipped.json" > "$TMP/shipped.out" || fail "place --policy pretrained with the shipped policy"
  grep -q "^policy alone  [0-9.e-]* s per step, placed in .* from $SRC/policies/pretrained/checkpoint.pt" \
    "$TMP/shipped.out" || fail "the shipped policy: $(cat "$TMP/shipped.out")"
else
  fail "policies/pretrained/checkpoint.pt is missing: the project ships it"
fi
# A policy whose placements all run out of memory, no fast path: the refinement starts from local_search's own
# start, which fits (it answered the out-of-memory placement and said "no time left in the budget").
cat > "$TMP/tight.json" <<'JSON'
{"format": "placer.cluster", "version": 1, "name": "tight", "devices": [
 {"name": "cuda:0", "kind": "cuda", "memory_bytes": 900000, "peak_flops": 4.37e12, "mem_bandwidth": 2.406e11, "op_overhead_s": 5.7e-06},
 {"name": "cuda:1", "kind": "cuda", "memory_bytes": 900000, "peak_flops": 4.37e12, "mem_bandwidth": 2.406e11, "op_overhead_s": 5.7e-06}],
 "links": [], "default_link": {"latency_s": 2.5e-05, "bandwidth_Bps": 7.6e9}}
JSON
printf 'name: oom_gnn\ngraph: {builder: mlp}\ncluster: k80x2\npolicy: {type: gnn, hidden: 32, max_groups: 4}\n%s\n' \
  'train: {updates: 3, samples_per_update: 8}' > "$TMP/oom.yaml"
"$PLACER" train --config "$TMP/oom.yaml" --seed 1 -o "$TMP/oom_run" -q > /dev/null 2>&1 || fail "train the oom policy"
"$PLACER" place --policy "$TMP/oom_run" --graph "$TMP/g.json" --cluster "$TMP/tight.json" --no-fast-path \
  -o "$TMP/oom.json" > "$TMP/oom.out" || fail "place --policy on a tight cluster"
grep -q "^policy alone  .* s per step (failed)" "$TMP/oom.out" || fail "the test needs a policy that fails: $(cat "$TMP/oom.out")"
grep -q "^refinement    local_search from its own start (no placement so far fits memory)" "$TMP/oom.out" &&
  grep -q "^simulated     .* s per step (ok; " "$TMP/oom.out" && grep -q "^found by      local_search$" "$TMP/oom.out" ||
  fail "an out-of-memory policy's answer: $(cat "$TMP/oom.out")"
"$PLACER" place --policy pretrained --time-budget 1e300 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" \
  2> /dev/null > /dev/null && fail "--time-budget 1e300 accepted (the note printed -2147483648 ms)"
# The policy alone with a budget of placements: the same seed gives the same placement (a time budget's rounds
# depend on the machine's speed); the budget is the policy alone's, and one budget at a time.
for i in 1 2; do
  PLACER_PRETRAINED= "$PLACER" place --policy pretrained --no-refine --budget 150 --seed 4 --graph "$TMP/g.json" \
    --cluster k80x4 -o "$TMP/budget$i.json" > "$TMP/budget$i.out" || fail "place --policy --no-refine --budget"
done
cmp -s "$TMP/budget1.json" "$TMP/budget2.json" || fail "--budget: two runs of one seed placed differently"
grep -q "150 placements of a budget of 150" "$TMP/budget1.out" || fail "--budget: $(cat "$TMP/budget1.out")"
set +e
"$PLACER" place --policy pretrained --budget 150 --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -eq 2 ] && grep -q -- "--budget: with --policy, applies to the policy alone (--no-refine)" "$TMP/err" ||
  fail "--policy --budget without --no-refine: $(cat "$TMP/err")"
"$PLACER" place --policy pretrained --no-refine --budget 150 --time-budget 2 --graph "$TMP/g.json" --cluster k80x4 \
  -o "$TMP/x.json" 2> "$TMP/err"
[ $? -eq 2 ] && grep -q -- "--time-budget: give one budget" "$TMP/err" || fail "--budget with --time-budget: $(cat "$TMP/err")"
set -e
# An ensemble (ensemble.yaml listing exported policies of one shape) decodes with every member, says which
# proposed the answer, and prints the whole note however long the folder's path.
"$PLACER" train --config "$SRC/tests/fixtures/pretrain_tiny.yaml" --seed 2 -o "$TMP/tiny_run2" -q > /dev/null 2>&1 ||
  fail "train the tiny pretrained policy, seed 2"
ENS="$TMP$(printf '/an_ensemble_folder_%.0sxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' 1 2 3 4)"
mkdir -p "$ENS"
"$PLACER" export-policy "$TMP/tiny_run2" -o "$ENS/member_2.pt" > /dev/null || fail "export-policy seed 2"
printf 'members: [%s/pretrained/checkpoint.pt, member_2.pt]\n' "$TMP" > "$ENS/ensemble.yaml"
"$PLACER" place --policy "$ENS" --no-refine --graph "$TMP/g.json" --cluster p100x4 -o "$TMP/ens.json" > "$TMP/ens.out" ||
  fail "place --policy ENSEMBLE"
grep -q "^policy alone  [0-9.e-]* s per step, placed in .* of an ensemble of 2 gnn policies (member [01]'s) from $ENS over [0-9]* units.*)\$" \
  "$TMP/ens.out" || fail "the ensemble's note: $(cat "$TMP/ens.out")"
export PLACER_PRETRAINED="$TMP/pretrained"
"$PLACER" place --policy pretrained --graph "$TMP/g.json" --cluster p100x4 -o "$TMP/pre.json" > "$TMP/pre.out" ||
  fail "place --policy pretrained"
grep -q "^method        " "$TMP/pre.out" || fail "pretrained: method line"
grep -q "^policy alone  [0-9.e-]* s per step, placed in" "$TMP/pre.out" || fail "pretrained: the policy alone"
grep -q "^fast path     [a-z_]* [0-9.e-]* s per step" "$TMP/pre.out" || fail "pretrained: fast path line"
grep -q "^refinement    " "$TMP/pre.out" || fail "pretrained: refinement line"
grep -q "^found by      " "$TMP/pre.out" || fail "pretrained: found by line"
grep -q "^timing        graph read and set up in" "$TMP/pre.out" || fail "pretrained: timing line"
# The answer is never slower than the policy alone or the fast path, and the
# method line names who found it (the policy, or the heuristic).
awk '/^simulated/ {s = $2} /^policy alone/ {p = $3} /^fast path/ {f = $4}
     END {exit !(s > 0 && s <= p && s <= f)}' "$TMP/pre.out" || fail "pretrained: answer slower than a part: $(cat "$TMP/pre.out")"
found=$(awk '/^found by/ {print $3}' "$TMP/pre.out")
case "$found" in
  policy*) grep -q "^method        policy:pretrained" "$TMP/pre.out" || fail "pretrained: method vs found by $found" ;;
  *) grep -q "^method        $found\$" "$TMP/pre.out" || fail "pretrained: method vs found by $found" ;;
esac
"$PLACER" place --policy pretrained --no-refine --graph "$TMP/g.json" --cluster p100x4 -o "$TMP/pre2.json" > "$TMP/pre2.out" ||
  fail "place --policy pretrained --no-refine"
grep -q "^refinement    not run (--no-refine)" "$TMP/pre2.out" || fail "--no-refine"
grep -q "^fast path     not run (--no-refine)" "$TMP/pre2.out" || fail "--no-refine: fast path"
grep -q "^method        policy:pretrained$" "$TMP/pre2.out" || fail "--no-refine: the policy alone"
"$PLACER" place --policy pretrained --no-fast-path --graph "$TMP/g.json" --cluster p100x4 -o "$TMP/pre3.json" > "$TMP/pre3.out" ||
  fail "place --policy pretrained --no-fast-path"
grep -q "^fast path     not run (--no-fast-path)" "$TMP/pre3.out" || fail "--no-fast-path"
grep -q "^refinement    local_search from the policy's placement" "$TMP/pre3.out" || fail "--no-fast-path: refinement"
set +e
PLACER_PRETRAINED="$TMP/none" "$PLACER" place --policy pretrained --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "policy 'pretrained': $TMP/none does not exist" "$TMP/err" || fail "missing pretrained policy: $(cat "$TMP/err")"
mkdir -p "$TMP/bad" && echo garbage > "$TMP/bad/checkpoint.pt"
PLACER_PRETRAINED="$TMP/bad" "$PLACER" place --policy pretrained --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "$TMP/bad/checkpoint.pt: not a readable checkpoint" "$TMP/err" || fail "corrupt pretrained policy: $(cat "$TMP/err")"
"$PLACER" place --policy pretrained --method dp --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q "exactly one of --method, --checkpoint or --policy" "$TMP/err" || fail "--policy with --method"
"$PLACER" place --method m_etf --no-fast-path --graph "$TMP/g.json" --cluster k80x4 -o "$TMP/x.json" 2> "$TMP/err"
[ $? -ne 0 ] && grep -q -- "--no-fast-path applies to --policy only" "$TMP/err" || fail "--no-fast-path without --policy"
set -e
# Fine-tuning from it: one update of the shipped fine-tuning config.
"$PLACER" train --config "$SRC/configs/finetune_pretrained.yaml" --graph "$TMP/g.json" --cluster k80x4 \
  --updates 1 -o "$TMP/ft" -q > "$TMP/ft.out" || fail "fine-tune from pretrained"
grep -q "23 sampled placements" "$TMP/ft.out" || fail "fine-tune: $(cat "$TMP/ft.out")"
# ... and its table lists the starting policy's answer, which the result must not be worse than.
grep -Eq "^  init_from:pretrained \(zero-shot.* [0-9.e-]+ " "$TMP/ft.out" || fail "fine-tune's table has no seen row: $(cat "$TMP/ft.out")"
# Coarse to fine (train.unit_stages): the progress line says the stage and its units.
cat > "$TMP/stages.yaml" <<EOF
name: stages
graph: {file: $TMP/g.json}
cluster: k80x4
policy: {type: seq2seq, hidden: 16, max_groups: 16}
train: {updates: 4, samples_per_update: 4, unit_stages: 2}
warm_start: {methods: [m_etf], bc_steps: 10}
run: {seed: 1, output_dir: $TMP/stages}
EOF
"$PLACER" train --config "$TMP/stages.yaml" > "$TMP/stages.out" 2>&1 || fail "train in unit stages: $(tail -3 "$TMP/stages.out")"
grep -q "| stage 1/2, [0-9]* units" "$TMP/stages.out" || fail "progress: no stage 1: $(cat "$TMP/stages.out")"
grep -q "| stage 2/2, [0-9]* units" "$TMP/stages.out" || fail "progress: no stage 2: $(cat "$TMP/stages.out")"
# A placement at its lower bound is said to be optimal: a forward-only MLP is a chain, and one device runs it in
# exactly its critical path; the training graph's single-device step is above its bound and is not called optimal.
"$PLACER" graph build mlp --forward-only -o "$TMP/chain.json" > /dev/null || fail "graph build --forward-only"
"$PLACER" place --method single --graph "$TMP/chain.json" --cluster k80x4 -o "$TMP/chain_p.json" > "$TMP/chain.out" ||
  fail "place a chain"
grep -q "^lower bound .*(reaches it: optimal under this cost model)" "$TMP/chain.out" || fail "chain: $(cat "$TMP/chain.out")"
"$PLACER" simulate --graph "$TMP/chain.json" --cluster k80x4 --placement "$TMP/chain_p.json" | grep -q "optimal" ||
  fail "simulate: a chain on one device not called optimal"
if grep -q "optimal" "$TMP/single.out"; then fail "single on the training graph called optimal: $(cat "$TMP/single.out")"; fi
# baseline --json with no file (or -): the JSON on stdout instead of the table (it was written nowhere, and
# `--json -` made a file named '-'); 9 significant digits, as the CSV.
( cd "$TMP" && "$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single,m_etf --json > "$TMP/bj.json" \
  && "$PLACER" baseline --graph "$TMP/g.json" --cluster k80x4 --method single,m_etf --json - --csv "$TMP/bj.csv" \
  > "$TMP/bj2.json" ) || fail "baseline --json to stdout"
[ ! -e "$TMP/-" ] || fail "baseline --json - wrote a file named -"
python3 - "$TMP/bj.json" "$TMP/bj2.json" "$TMP/bj.csv" <<'PY' || fail "baseline --json on stdout"
import csv, json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert [m["method"] for m in a["methods"]] == ["single", "m_etf"], a
assert a["methods"] == b["methods"] or all(x["simulated_step_s"] == y["simulated_step_s"] for x, y in zip(a["methods"], b["methods"]))
rows = {r["method"]: r for r in csv.DictReader(open(sys.argv[3]))}
for m in b["methods"]:
    assert abs(m["simulated_step_s"] / float(rows[m["method"]]["simulated_step_s"]) - 1) < 1e-8, (m, rows)
PY
# train's overrides get the config's ranges (--threads 100000 reached at::set_num_threads; -5 read as not given).
for bad in "--threads 0" "--threads 100000" "--updates -5" "--seed -1" "--workers-wait nan"; do
  if "$PLACER" train -c "$TMP/t.yaml" -o "$TMP/t" -q $bad 2> "$TMP/err" > /dev/null; then fail "train $bad accepted"; fi
  grep -q -- "${bad%% *}" "$TMP/err" || fail "train $bad: $(cat "$TMP/err")"
done
# keygen: the secret key is the owner's alone (it was 0644 until a chmod afterwards).
( umask 022 && "$PLACER" keygen --out "$TMP/k" > /dev/null ) || fail "keygen"
[ "$(stat -c %a "$TMP/k.secret")" = 600 ] || fail "keygen: secret mode $(stat -c %a "$TMP/k.secret")"
# query -o in a missing folder: refused before the request is sent (a `result` reply, the job's last copy,
# was lost when the file could not be written).
if "$PLACER" query --endpoint tcp://127.0.0.1:9 --timeout-ms 200 -o "$TMP/nodir/r.json" health 2> "$TMP/err" > /dev/null; then
  fail "query -o in a missing folder accepted"
fi
grep -q -- "--output: cannot write '$TMP/nodir/r.json'" "$TMP/err" || fail "query -o: $(cat "$TMP/err")"
echo "place_cli: ok"
