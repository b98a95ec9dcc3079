#!/usr/bin/env bash
# placer graph build|info|validate end to end. Usage: graph_cli.sh PLACER SOURCE_DIR
set -u
PLACER=${1:?usage: graph_cli.sh PLACER SOURCE_DIR}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_ok NAME CMD...: exit 0
expect_ok() {
  local name=$1
  shift
  if ! "$@" >"$T/out" 2>"$T/err"; then
    fail "$name: exit $? from: $*"
    sed 's/^/  stderr: /' "$T/err" >&2
  fi
}

# expect_error NAME CODE TEXT CMD...: exit CODE (or any non-zero if CODE is '!0') and TEXT on stderr
expect_error() {
  local name=$1 code=$2 text=$3
  shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [[ $code == '!0' && $rc -eq 0 ]] || [[ $code != '!0' && $rc -ne $code ]]; then
    fail "$name: expected exit $code, got $rc from: $*"
  fi
  if ! grep -qF -- "$text" "$T/err"; then
    fail "$name: stderr lacks '$text'"
    sed 's/^/  stderr: /' "$T/err" >&2
  fi
}

expect_stdout() {
  local name=$1 text=$2
  grep -qF -- "$text" "$T/out" || { fail "$name: stdout lacks '$text'"; sed 's/^/  stdout: /' "$T/out" >&2; }
}

# --help everywhere
expect_ok "graph --help" "$PLACER" graph --help
for sub in build import info validate; do expect_stdout "graph --help lists $sub" "$sub"; done
for sub in build import info validate; do expect_ok "graph $sub --help" "$PLACER" graph "$sub" --help; done
"$PLACER" graph build --help >"$T/out" 2>&1
expect_stdout "graph build --help lists models" "mlp:"

# build, validate and inspect the MLP, as JSON and binary
expect_ok "build mlp json" "$PLACER" graph build mlp -o "$T/mlp.json"
expect_stdout "build reports" "wrote $T/mlp.json"
expect_ok "build mlp bin" "$PLACER" graph build mlp -o "$T/mlp.bin"
expect_ok "validate json" "$PLACER" graph validate "$T/mlp.json"
json_ops=$(cat "$T/out")
expect_stdout "validate json says ok" "ok: "
expect_ok "validate bin" "$PLACER" graph validate "$T/mlp.bin"
[[ "$(cat "$T/out")" == "$json_ops" ]] || fail "json and binary op counts differ: '$json_ops' vs '$(cat "$T/out")'"
expect_ok "info" "$PLACER" graph info "$T/mlp.json"
for text in "graph: mlp (training step)" "ops: " "(forward " "edges: " "parameters: " "FLOPs: " "memory: " \
  "critical path: " "top op types" "aten::"; do
  expect_stdout "info shows '$text'" "$text"
done

# Parameter elements are counted from the param ops' shapes and their bytes from their dtypes: a graph of double
# parameters has half the elements of its bytes at 4 bytes (it said "at 4 bytes" whatever the dtype).
expect_stdout "info counts float parameters" "(134 K elements of float)"
python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
for op in g['ops']:
    for o in op['outputs']:
        if o.get('dtype') == 'float': o['dtype'] = 'double'
    op['param_bytes'] = 2 * op.get('param_bytes', 0)
json.dump(g, open(sys.argv[2], 'w'))" "$T/mlp.json" "$T/mlp_f64.json"
expect_ok "info double params" "$PLACER" graph info "$T/mlp_f64.json"
expect_stdout "info counts double parameters" "parameters: 1.02 MiB in 6 param ops (134 K elements of double)"
python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
g['ops'].append({'name': 'extra', 'type': 'placer::param', 'outputs': [{'shape': [1000], 'dtype': 'half'}],
                 'param_bytes': 2000})
json.dump(g, open(sys.argv[2], 'w'))" "$T/mlp.json" "$T/mlp_mixed.json"
expect_ok "info mixed params" "$PLACER" graph info "$T/mlp_mixed.json"
expect_stdout "info counts mixed parameters" "(135 K elements: 134 K float, 1 K half)"

# options and --forward-only
expect_ok "build mlp forward-only" "$PLACER" graph build mlp --forward-only --opt batch=8 -o "$T/fwd.json"
expect_ok "validate forward-only" "$PLACER" graph validate "$T/fwd.json"
fwd_ops=$(sed -n 's/^ok: \([0-9]*\) ops$/\1/p' "$T/out")
full_ops=$(echo "$json_ops" | sed -n 's/^ok: \([0-9]*\) ops$/\1/p')
[[ -n "$fwd_ops" && -n "$full_ops" && "$fwd_ops" -lt "$full_ops" ]] ||
  fail "forward-only graph ($fwd_ops ops) is not smaller than the training graph ($full_ops ops)"
expect_ok "info forward-only" "$PLACER" graph info "$T/fwd.json"
expect_stdout "info forward-only" "(forward only)"
expect_error "bad --opt" '!0' "--opt 'batch'" "$PLACER" graph build mlp --opt batch -o "$T/x.json"
expect_error "non-integer --opt" '!0' "is not an integer" "$PLACER" graph build mlp --opt batch=many -o "$T/x.json"
expect_error "--opt with a plus" '!0' "is not an integer" "$PLACER" graph build mlp --opt batch=+5 -o "$T/x.json"
expect_error "--opt with a space" '!0' "is not an integer" "$PLACER" graph build mlp --opt "batch= 5" -o "$T/x.json"
expect_error "unknown model" '!0' "nosuchmodel" "$PLACER" graph build nosuchmodel -o "$T/x.json"
expect_error "missing -o" '!0' "output" "$PLACER" graph build mlp

# malformed files: exit 2 and a message naming the field or op
cat >"$T/missing_field.json" <<'EOF'
{"format": "placer.graph", "version": 1, "name": "bad", "ops": [
  {"name": "x", "type": "placer::input", "outputs": [{"shape": [2, 3]}]},
  {"name": "relu", "type": "aten::relu", "inputs": [{"op": "x"}]}
]}
EOF
expect_error "missing field" 2 "ops[1] 'relu': outputs: missing required field" "$PLACER" graph validate "$T/missing_field.json"

cat >"$T/cycle.json" <<'EOF'
{"format": "placer.graph", "version": 1, "ops": [
  {"name": "a", "type": "aten::relu", "inputs": [{"op": "b"}], "outputs": [{"shape": [2]}]},
  {"name": "b", "type": "aten::relu", "inputs": [{"op": "a"}], "outputs": [{"shape": [2]}]}
]}
EOF
expect_error "cycle" 2 "cycle of 2 op(s): 'a' -> 'b' -> 'a'" "$PLACER" graph validate "$T/cycle.json"
# An empty graph loads, but nothing can place it: validate says so (it said "ok: 0 ops").
python3 -c "
import json, sys
g = json.load(open(sys.argv[1])); g['ops'] = []
json.dump(g, open(sys.argv[2], 'w'))" "$T/mlp.json" "$T/empty.json"
expect_error "empty graph" 2 "has no ops (nothing to place)" "$PLACER" graph validate "$T/empty.json"
expect_error "--opt twice" 2 "--opt batch: given twice" "$PLACER" graph build mlp --opt batch=4 --opt batch=8 -o "$T/twice.json"

cat >"$T/shape.json" <<'EOF'
{"format": "placer.graph", "version": 1, "ops": [
  {"name": "x", "type": "placer::input", "outputs": [{"shape": [2, -3]}]}
]}
EOF
expect_error "negative size" 2 "op 'x': outputs[0].shape[1]: negative size -3" "$PLACER" graph info "$T/shape.json"

echo "hello" >"$T/hello.json"
expect_error "not a graph" 2 "not a placer graph file" "$PLACER" graph validate "$T/hello.json"
head -c 100 "$T/mlp.bin" >"$T/truncated.bin"
expect_error "truncated binary" 2 "binary graph" "$PLACER" graph validate "$T/truncated.bin"
expect_error "missing file" 2 "$T/nope.json" "$PLACER" graph info "$T/nope.json"

# TorchScript import of a fixture the repo ships, and a model with control flow
SRC=${2:-.}
if [[ -f "$SRC/tests/fixtures/tiny_cnn.pt" ]]; then
  expect_ok "import tiny_cnn" "$PLACER" graph import "$SRC/tests/fixtures/tiny_cnn.pt" --input x:2x3x8x8:float -o "$T/cnn.bin"
  expect_stdout "import reports" "graph 'tiny_cnn'"
  expect_ok "validate imported" "$PLACER" graph validate "$T/cnn.bin"
  expect_stdout "validate imported" "ok: "
  expect_error "import bad input spec" 2 "unknown dtype 'floaty'" \
    "$PLACER" graph import "$SRC/tests/fixtures/tiny_cnn.pt" --input x:2x3x8x8:floaty -o "$T/x.json"
  expect_error "import control flow" 2 "prim::If" \
    "$PLACER" graph import "$SRC/tests/fixtures/control_flow.pt" --input x:2x3:float -o "$T/x.json"
else
  fail "fixture $SRC/tests/fixtures/tiny_cnn.pt is missing"
fi

if [[ $failures -gt 0 ]]; then
  echo "graph_cli: $failures failure(s)" >&2
  exit 1
fi
echo "graph_cli: all checks passed"
