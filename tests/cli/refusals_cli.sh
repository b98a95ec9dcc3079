#!/usr/bin/env bash
# Options that do not apply are refused by name (exit 2), never silently ignored: --microbatches/--schedule
# without the pipeline objective, graph import's options of the other kind of file, negative seeds, place
# --time-budget without --policy, train's worker options without --workers-bind, query evaluate
# --measure-budget without --measure, and CurveZMQ keys (a 40-character file path is a file). train --cluster
# overrides every graph entry's cluster, and says so.
set -euo pipefail
PLACER="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$SRC/tests/cli/lib/refusal.sh"

G="$TMP/g.json"
"$PLACER" graph build mlp -o "$G" > /dev/null
"$PLACER" place --method single --graph "$G" --devices cpu:2 -o "$TMP/p.json" > /dev/null

# --microbatches and --schedule without the pipeline objective.
PIPE="only the pipeline objective takes it"
expect_refusal "place --microbatches" "--microbatches: $PIPE" \
  place --method single --graph "$G" --devices cpu:2 -o "$TMP/x.json" --microbatches 8
expect_refusal "simulate --schedule" "--schedule: $PIPE" \
  simulate --graph "$G" --placement "$TMP/p.json" --cluster cpu:2 --schedule gpipe
expect_refusal "measure --microbatches" "--microbatches: $PIPE" \
  measure --graph "$G" --placement "$TMP/p.json" --devices cpu:2 --objective step --microbatches 2
expect_refusal "fidelity --schedule" "--schedule: $PIPE" \
  fidelity --graph "$G" --devices cpu:2 -o "$TMP/fid" --schedule 1f1b
"$PLACER" simulate --graph "$G" --placement "$TMP/p.json" --cluster cpu:2 --objective pipeline --microbatches 2 \
  > /dev/null || fail "simulate --objective pipeline --microbatches 2"

# train: the defaults are the config's (the help showed [step] [4] [1f1b]); --schedule under a step config refused.
"$PLACER" train --help > "$TMP/help"
[ "$(grep -Ec "\(default: the config's reward\.(objective|microbatches|schedule)\)" "$TMP/help")" -eq 3 ] ||
  fail "train --help does not name the config's defaults: $(grep -A1 -- "--objective\|--microbatches\|--schedule" "$TMP/help")"
! grep -Eq -- "^ *--(objective|microbatches|schedule) .*=" "$TMP/help" || fail "train --help shows a default of its own"
cat > "$TMP/t.yaml" <<CFG
name: t
cluster: k80x4
family:
  - {builder: mlp, options: {layers: 2, width: 64, input: 32, batch: 8}}
  - {builder: mlp, options: {layers: 3, width: 64, input: 32, batch: 8}, cluster: p100x4}
held_out:
  - {builder: mlp, options: {layers: 4, width: 64, input: 32, batch: 8}, cluster: p100x4}
policy: {type: gnn, hidden: 16, gnn_layers: 1, max_groups: 64, place_samples: 4}
reward: {mode: simulated}
train: {updates: 1, samples_per_update: 2}
warm_start: {methods: [m_etf], bc_steps: 1}
run: {seed: 1, threads: 1}
compare: [single]
CFG
expect_refusal "train --schedule (step config)" "--schedule: $PIPE (--objective pipeline, or the config's reward.objective: pipeline)" \
  train -c "$TMP/t.yaml" -o "$TMP/run0" -q --schedule gpipe
expect_refusal "train --min-workers without --workers-bind" "--min-workers: applies with --workers-bind only" \
  train -c "$TMP/t.yaml" -o "$TMP/run0" -q --min-workers 2
expect_refusal "train --workers-wait without --workers-bind" "--workers-wait: applies with --workers-bind only" \
  train -c "$TMP/t.yaml" -o "$TMP/run0" -q --workers-wait 5

# train --cluster: every entry's cluster, the family's and held_out's own too (they kept p100x4).
"$PLACER" train -c "$TMP/t.yaml" -o "$TMP/run" -q --cluster k80x2 > "$TMP/train.out" 2> "$TMP/train.err" ||
  fail "train --cluster: $(tail -5 "$TMP/train.err")"
grep -q "note: --cluster k80x2 replaced the cluster of 2 graph entries that named their own" "$TMP/train.err" ||
  fail "train --cluster: no note: $(cat "$TMP/train.err")"
grep -q " on k80x2, policy gnn" "$TMP/train.out" || fail "train --cluster: summary: $(head -3 "$TMP/train.out")"
! grep -q "p100x4" "$TMP/run/config.json" "$TMP/train.out" || fail "train --cluster: p100x4 still used"
# config.yaml is the config as written; its first line says the effective one is config.json, and the overrides.
[ "$(head -1 "$TMP/run/config.yaml")" = "# the effective config is config.json: this one as written, with -o, --cluster" ] ||
  fail "train: config.yaml's first line: $(head -1 "$TMP/run/config.yaml")"
grep -q "^name: t$" "$TMP/run/config.yaml" || fail "train: config.yaml lost the config's text"
# --resume under another objective than the checkpoint's (its final table mixed step and pipeline times).
expect_refusal "train --resume --objective pipeline" \
  "reward.objective (--objective): the checkpoint trained for step, this run asks pipeline" \
  train -c "$TMP/t.yaml" -o "$TMP/run" -q --cluster k80x2 --resume --objective pipeline
# --paired with simulated rewards: nothing is measured to pair.
expect_refusal "train --paired (simulated)" "--paired: needs measured or hybrid rewards" \
  train -c "$TMP/t.yaml" -o "$TMP/run0" -q --paired

# graph import: a workload file takes no model options; a model takes no workload cluster.
W="$SRC/tests/fixtures/dnn-partitioning/bert24_inference.json"
expect_refusal "workload --input" "--input: PyTorch models only" graph import "$W" -o "$TMP/w.json" --input x:1:float
expect_refusal "workload --lr" "--lr: PyTorch models only" graph import "$W" -o "$TMP/w.json" --lr 0.1
expect_refusal "workload --forward-only" "--forward-only: PyTorch models only" graph import "$W" -o "$TMP/w.json" --forward-only
for opt in "--accelerators 2" "--cpus 1" "--accelerator-bytes 1e9"; do
  # shellcheck disable=SC2086
  expect_refusal ".pt $opt" "${opt%% *}: workload files only" \
    graph import "$SRC/tests/fixtures/tiny_cnn.pt" --input x:2x3x8x8:float -o "$TMP/m.json" $opt
done
[ ! -e "$TMP/w.json" ] && [ ! -e "$TMP/m.json" ] || fail "graph import wrote a file it refused"

# Negative seeds (read into an unsigned: 2^64-1): the option's check fails, as CLI11's do (exit non-zero).
NEG="--seed: must be a whole number >= 0, got -1"
for cmd in "place --method random --graph $G --devices cpu:2 -o $TMP/x.json" \
  "measure --graph $G --placement $TMP/p.json --devices cpu:2" "fidelity --graph $G --devices cpu:2 -o $TMP/fid" \
  "query --endpoint tcp://127.0.0.1:1 health" "baseline --graph $G --cluster k80x4 --method random"; do
  rc=0
  # shellcheck disable=SC2086
  "$PLACER" $cmd --seed -1 > /dev/null 2> "$TMP/err" || rc=$?
  [ $rc -ne 0 ] && grep -qF -- "$NEG" "$TMP/err" || fail "${cmd%% *} --seed -1: exit $rc: $(cat "$TMP/err")"
done
expect_refusal "place --time-budget with --method" "--time-budget: applies to --policy only" \
  place --method single --graph "$G" --devices cpu:2 -o "$TMP/x.json" --time-budget 5

# query evaluate --measure-budget without --measure (refused before any request is sent).
expect_refusal "evaluate --measure-budget" "--measure-budget: applies with --measure only" \
  query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 evaluate --graph "$G" --devices cpu:2 \
  --placement "$TMP/p.json" --measure-budget 5

# CurveZMQ keys: a file whose path is 40 characters long is read (it was taken for the key itself).
"$PLACER" keygen --out "$TMP/k" > /dev/null
mkdir -p "$TMP/keys"
pad=$((40 - ${#TMP} - 6))
[ $pad -gt 0 ] || fail "TMP too long for a 40-character path: $TMP"
K40="$TMP/keys/$(printf 'x%.0s' $(seq $pad))"
[ ${#K40} -eq 40 ] || fail "the path is ${#K40} characters"
echo "not a key" > "$K40"
expect_refusal "a 40-character key file" "--server-key: '$K40' holds no Z85 key" \
  query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 --server-key "$K40" \
  --client-public-key "$TMP/k.public" --client-secret-key "$TMP/k.secret" health
cp "$TMP/k.public" "$K40"
rc=0
"$PLACER" query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 --server-key "$K40" --client-public-key "$TMP/k.public" \
  --client-secret-key "$TMP/k.secret" health > /dev/null 2> "$TMP/err" || rc=$?
! grep -q -- "-key" "$TMP/err" || fail "a 40-character key file holding a key: $(cat "$TMP/err")"
expect_refusal "an inline key not of Z85" "--client-secret-key: no such file, and not a Z85 key inline" \
  query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 --server-key "$(cat "$TMP/k.public")" \
  --client-public-key "$TMP/k.public" --client-secret-key "$(printf '~%.0s' $(seq 40))" health

# Options that were accepted and ignored: place --policy --budget without --no-refine (the refinement spends --time-budget), query place
# --graph --option (builder options, no builder), query evaluate --method/--no-placement, fidelity --replot's others.
expect_refusal "place --policy --budget" "--budget: with --policy, applies to the policy alone (--no-refine): the refinement runs for what is left of --time-budget" \
  place --policy pretrained --graph "$G" --devices cpu:2 -o "$TMP/x.json" --budget 7
# place --budget with a method that spends no evaluations (dp, ilp, offload_updates ran as if it were not given).
expect_refusal "place --method dp --budget" "--budget: applies to the searches only (--method local_search or guided_search)" \
  place --method dp --graph "$G" --devices cpu:2 -o "$TMP/x.json" --budget 5
# place --time-limit: ilp reads it; local_search did not (--budget 3000000 --time-limit 0.5 took 2.8 s).
expect_refusal "place local_search --time-limit" "--time-limit: applies to --method ilp only" \
  place --method local_search --graph "$G" --devices cpu:2 -o "$TMP/x.json" --budget 1000 --time-limit 0.5
expect_refusal "place --policy --time-limit" "--time-limit: applies to --method ilp only" \
  place --policy pretrained --graph "$G" --devices cpu:2 -o "$TMP/x.json" --time-limit 0.5
expect_refusal "query place --graph --option" "--option: builder options apply with --builder only" \
  query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 place --graph "$G" --devices cpu:2 --option layers=3
expect_refusal "query place --graph --forward-only" "--forward-only: builder options apply with --builder only" \
  query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 place --graph "$G" --devices cpu:2 --forward-only
for opt in "--method m_etf" "--no-placement"; do
  # shellcheck disable=SC2086
  expect_refusal "query evaluate $opt" "${opt%% *}: query evaluate reads neither --method nor --no-placement" \
    query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 evaluate --graph "$G" --devices cpu:2 \
    --placement "$TMP/p.json" $opt
done
for opt in "--graph nonexist.json" "--devices cuda:7" "--rounds 9" "--lockstep" "--steps 3"; do
  # shellcheck disable=SC2086
  expect_refusal "fidelity --replot $opt" "${opt%% *}: --replot re-renders a report as it was measured" \
    fidelity --replot "$TMP/rep.json" $opt
done
# serve --workers: the config's range (1..256).
rc=0
"$PLACER" serve --config "$TMP/t.yaml" --workers 1000 > /dev/null 2> "$TMP/err" || rc=$?
[ $rc -ne 0 ] && grep -q -- "--workers: .*1000.*256" "$TMP/err" || fail "serve --workers 1000: exit $rc: $(cat "$TMP/err")"
# A seed past 2^64-1 was clamped to it (the same placement): refused, as -1 is.
for seed in 18446744073709551616 99999999999999999999999; do
  rc=0
  "$PLACER" place --method random --graph "$G" --devices cpu:2 -o "$TMP/x.json" --seed $seed > /dev/null 2> "$TMP/err" ||
    rc=$?
  [ $rc -ne 0 ] && grep -qF -- "--seed: must be at most 18446744073709551615, got $seed" "$TMP/err" ||
    fail "--seed $seed: exit $rc: $(cat "$TMP/err")"
done
"$PLACER" place --method random --graph "$G" --devices cpu:2 -o "$TMP/x.json" --seed 18446744073709551615 > /dev/null ||
  fail "--seed 2^64-1 refused"
# A word that names no command, one level down too (CLI11 said "A subcommand is required").
rc=0
"$PLACER" graph bogus > /dev/null 2> "$TMP/err" || rc=$?
[ $rc -eq 2 ] && grep -q "unknown command 'bogus' (placer graph commands: .*build.*; placer graph --help)" "$TMP/err" ||
  fail "graph bogus: exit $rc: $(cat "$TMP/err")"
# A cluster that is none names its option; a method given twice (it ran twice) is refused.
rc=0
"$PLACER" place --method single --graph "$G" --cluster nope -o "$TMP/x.json" > /dev/null 2> "$TMP/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "^error: --cluster nope: " "$TMP/err" || fail "--cluster nope: exit $rc: $(cat "$TMP/err")"
rc=0
"$PLACER" baseline --graph "$G" --cluster k80x2 --method single,m_etf,single > /dev/null 2> "$TMP/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--method: 'single' given twice" "$TMP/err" || fail "--method twice: exit $rc: $(cat "$TMP/err")"
echo "refusals_cli: ok"
