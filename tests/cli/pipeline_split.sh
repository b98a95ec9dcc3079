#!/usr/bin/env bash
# --split-spec (issue 27, part 4): a model with several top-level modules is
# exported to .pt2 and imported; placements written by hand give split specs
# that torch.distributed.pipelining.pipeline() turns into a pipe (one process)
# whose stages hold exactly the modules, parameters and ATen ops placed there
# (tests/cli/lib/pipeline_split.py check). A placement that is not contiguous
# in module order says so and carries the contiguous alternative, which runs;
# a graph from elsewhere is an error naming the flag.
#   bash pipeline_split.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
SRC=${2:?source dir}
PY=${PLACER_PYTHON:-$SRC/.venv/bin/python3}
HELP="$SRC/tests/cli/lib/pipeline_split.py"
export PYTHONPATH="$SRC/clients/python:$SRC/tests/cli/lib${PYTHONPATH:+:$PYTHONPATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$PY" "$HELP" export net.pt2 || { echo "FAIL: export"; exit 1; }
"$PLACER" graph import net.pt2 -o net.json >/dev/null || { echo "FAIL: import"; exit 1; }

# Contiguous over three devices: blocks 0-1, 2-3, 4-5.
"$PY" "$HELP" place net.json contiguous.json 0 0 1 1 2 2
"$PLACER" simulate --graph net.json --cluster cpu:3 --placement contiguous.json --split-spec split.json >/dev/null ||
  fail "simulate --split-spec"
[ "$(field split.json 'd["contiguous"]')" = True ] || fail "contiguous placement reported as not contiguous"
[ "$(field split.json 'sorted(d["split_spec"].items())')" = "[('layers.2', 'BEGINNING'), ('layers.4', 'BEGINNING')]" ] ||
  fail "split_spec: $(field split.json 'd["split_spec"]')"
[ "$(field split.json '[s["device"] for s in d["stages"]]')" = "['cpu:0', 'cpu:1', 'cpu:2']" ] || fail "stage devices"
"$PY" "$HELP" check split.json 2>err.txt || fail "pipe from the contiguous split: $(tail -3 err.txt)"

# Not contiguous: cpu:0 and cpu:1 each hold two stages. The alternative moves block 2 (4 ops).
"$PY" "$HELP" place net.json scattered.json 0 1 0 1 2 2
"$PLACER" simulate --graph net.json --cluster cpu:3 --placement scattered.json --split-spec split2.json >/dev/null ||
  fail "simulate --split-spec (not contiguous)"
[ "$(field split2.json 'd["contiguous"]')" = False ] || fail "scattered placement reported as contiguous"
[ "$(field split2.json '"split_spec" in d')" = False ] || fail "a split_spec for a placement no split runs"
field split2.json 'd["breaks"]' | grep -q "device cpu:0 holds stage 0 and again stage 2" || fail "breaks do not name cpu:0"
field split2.json 'd["note"]' | grep -q "not contiguous in module order" || fail "no note"
[ "$(field split2.json 'd["contiguous_alternative"]["moved_ops"]')" = 4 ] || fail "alternative moves other than 4 ops"
[ "$(field split2.json 'd["contiguous_alternative"]["contiguous"]')" = True ] || fail "alternative not contiguous"
[ "$(field split2.json 'len(d["contiguous_alternative"]["placement"]["device"])')" = \
  "$(field net.json 'len(d["ops"])')" ] || fail "alternative placement does not cover every op"
"$PY" "$HELP" check split2.json 2>err.txt || fail "pipe from the contiguous alternative: $(tail -3 err.txt)"

# A stage that begins inside a block (at its fc): the finest module that begins there.
"$PY" - <<'PY'
import json
p = json.load(open("contiguous.json"))
for name in list(p["placement"]):
    top = name.split("/")[0]
    if top.startswith("layers.2.fc") or top.startswith("layers.2.act") or top == "layers.2":
        p["placement"][name] = "cpu:1"
    elif top.startswith("layers.2.norm"):
        p["placement"][name] = "cpu:0"
json.dump(p, open("inner.json", "w"))
PY
"$PLACER" simulate --graph net.json --cluster cpu:3 --placement inner.json --split-spec split3.json >/dev/null ||
  fail "simulate --split-spec (inside a block)"
[ "$(field split3.json 'sorted(d["split_spec"])')" = "['layers.2.fc', 'layers.4']" ] ||
  fail "split inside a block: $(field split3.json 'd.get("split_spec"), d.get("breaks")')"
"$PY" "$HELP" check split3.json 2>err.txt || fail "pipe from the split inside a block: $(tail -3 err.txt)"

# A module called twice in a row (b(fc(fc(a(x)))), a of 3 ops) runs contiguous ops but is never a split
# point: pipeline() would cut at both calls and build three stages. The alternative moves a's last op.
"$PY" "$HELP" export twice.pt2 twice || fail "export twice"
"$PLACER" graph import twice.pt2 -o twice.json >/dev/null || fail "import twice"
"$PY" - <<'PY'
import json
g = json.load(open("twice.json"))
dev = {op["name"]: "cpu:0" if op["name"].split("/")[0].split(".")[0] in ("a", "x") else "cpu:1" for op in g["ops"]}
json.dump({"format": "placer.placement", "version": 1, "graph": g["name"], "placement": dev}, open("twice_pl.json", "w"))
PY
"$PLACER" simulate --graph twice.json --cluster cpu:2 --placement twice_pl.json --split-spec split5.json >/dev/null ||
  fail "simulate --split-spec (a module called twice)"
[ "$(field split5.json 'd["contiguous"], "split_spec" in d')" = "(False, False)" ] ||
  fail "a split at a module called twice: $(field split5.json 'd.get("split_spec")')"
field split5.json 'd["breaks"]' | grep -q "op 'fc/linear' begins a stage on cpu:1 but no module's call begins there" ||
  fail "breaks do not name fc: $(field split5.json 'd.get("breaks")')"
[ "$(field split5.json 'd["contiguous_alternative"]["split_spec"]')" = "{'a.2': 'BEGINNING'}" ] ||
  fail "alternative: $(field split5.json 'd["contiguous_alternative"].get("split_spec")')"
"$PY" "$HELP" check split5.json twice 2>err.txt || fail "pipe of the model calling fc twice: $(tail -3 err.txt)"

# placer place writes one too.
"$PLACER" place --graph net.json --devices cpu:2 --method m_etf -o placed.json --split-spec split4.json >/dev/null ||
  fail "place --split-spec"
[ "$(field split4.json '"stages" in d and "contiguous" in d')" = True ] || fail "place --split-spec wrote no stages"

# A graph that does not come from a .pt2.
"$PLACER" graph build mlp -o mlp.json >/dev/null || fail "graph build mlp"
if "$PLACER" place --graph mlp.json --devices cpu:2 --method single -o p.json --split-spec s.json 2>err.txt; then
  fail "place --split-spec on a builder graph: exit 0"
elif ! grep -q -- "--split-spec: graph 'mlp' has no module paths" err.txt; then
  fail "place --split-spec on a builder graph: $(cat err.txt)"
fi
[ -e p.json ] && fail "a refused --split-spec still placed and wrote p.json"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "pipeline_split: all checks passed"
