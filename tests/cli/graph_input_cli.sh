#!/usr/bin/env bash
# Graph files and device lists that passed the checks and then failed later are refused up front, by name
# (exit 2): micro-batch 0 reading micro-batch 1 (simulate aborted: "simulation stalled"), a U+0000 in an
# attr key (the written file could not be read back), `graph pipeline` of a forward op reading a backward
# op (it wrote op #-1), and a "+" device list of millions of devices (expanded before it was counted).
set -euo pipefail
PLACER="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d "$SRC/tests/cli" ] || fail "no source dir $SRC"

# expect_error NAME TEXT ARGS...: exit 2 and TEXT on stderr.
expect_error() {
  local name=$1 text=$2
  shift 2
  local rc=0
  "$PLACER" "$@" > "$TMP/out" 2> "$TMP/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, not 2: $(head -c 400 "$TMP/err")"
  grep -qF -- "$text" "$TMP/err" || fail "$name: stderr lacks '$text': $(head -c 400 "$TMP/err")"
}

# Micro-batch 0 reads micro-batch 1.
cat > "$TMP/stall.json" <<'JSON'
{"format": "placer.graph", "version": 1, "name": "t", "attrs": {"pipeline.microbatches": "2", "pipeline.schedule": "1f1b"},
 "ops": [{"name": "x", "type": "placer::input", "inputs": [], "outputs": [{"shape": [4], "dtype": "float"}]},
  {"name": "a", "type": "aten::relu", "inputs": [{"op": "x", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}], "microbatch": 1},
  {"name": "b", "type": "aten::relu", "inputs": [{"op": "a", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}], "microbatch": 0}]}
JSON
cat > "$TMP/stall_pl.json" <<'JSON'
{"format": "placer.placement", "version": 1, "graph": "t", "placement": {"x": "cpu:0", "a": "cpu:0", "b": "cpu:0"}}
JSON
STALL="op 'b': inputs[0]: reads 'a' of micro-batch 1 from micro-batch 0"
expect_error "graph validate (micro-batch order)" "$STALL" graph validate "$TMP/stall.json"
expect_error "simulate (micro-batch order)" "$STALL" \
  simulate --graph "$TMP/stall.json" --placement "$TMP/stall_pl.json" --cluster cpu:1

# A U+0000 in an attr key.
cat > "$TMP/nul.json" <<'JSON'
{"format": "placer.graph", "version": 1, "name": "t", "attrs": {"k\u00001": "a"},
 "ops": [{"name": "x", "type": "placer::input", "inputs": [], "outputs": [{"shape": [4], "dtype": "float"}]}]}
JSON
expect_error "graph validate (NUL)" "graph 't': attrs: key 'k\\u00001': holds U+0000 (NUL)" graph validate "$TMP/nul.json"

# graph pipeline of a forward op reading a backward op.
cat > "$TMP/fwd_after_bwd.json" <<'JSON'
{"format": "placer.graph", "version": 1, "name": "t", "ops": [
  {"name": "x", "type": "placer::input", "inputs": [], "outputs": [{"shape": [4], "dtype": "float"}]},
  {"name": "p", "type": "placer::param", "inputs": [], "outputs": [{"shape": [4], "dtype": "float"}], "param_bytes": 16},
  {"name": "a", "type": "aten::mul.Tensor", "inputs": [{"op": "x", "output": 0}, {"op": "p", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}]},
  {"name": "b", "type": "custom::bw", "inputs": [{"op": "a", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}], "phase": "backward", "forward": "a"},
  {"name": "c", "type": "aten::relu", "inputs": [{"op": "b", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}]},
  {"name": "u", "type": "placer::sgd", "inputs": [{"op": "p", "output": 0}, {"op": "b", "output": 0}], "outputs": [{"shape": [4], "dtype": "float"}], "phase": "update", "forward": "p", "args": [{"kind": "double", "value": 0.1}]}]}
JSON
"$PLACER" graph validate "$TMP/fwd_after_bwd.json" > /dev/null || fail "fwd_after_bwd.json does not validate"
expect_error "graph pipeline (phase order)" "op 'c': inputs[0]: a forward op reads 'b', a backward op" \
  graph pipeline --microbatches 2 "$TMP/fwd_after_bwd.json" "$TMP/piped.json"
[ ! -e "$TMP/piped.json" ] || fail "graph pipeline wrote a file it refused"

# 14000 x cpu:256 is 3.6 million devices: refused as the list is read, within seconds.
cat > "$TMP/one.json" <<'JSON'
{"format": "placer.graph", "version": 1, "name": "t",
 "ops": [{"name": "x", "type": "placer::input", "inputs": [], "outputs": [{"shape": [4], "dtype": "float"}]}]}
JSON
cat > "$TMP/one_pl.json" <<'JSON'
{"format": "placer.placement", "version": 1, "graph": "t", "placement": {"x": "cpu:0"}}
JSON
"$PLACER" simulate --graph "$TMP/one.json" --placement "$TMP/one_pl.json" --cluster cpu:1 > /dev/null ||
  fail "simulate of one op on cpu:1"
DEVICES="cpu:256$(printf '+cpu:256%.0s' $(seq 13999))"
start=$(date +%s)
expect_error "simulate --cluster (device count)" "devices: more than 4096" \
  simulate --graph "$TMP/one.json" --placement "$TMP/one_pl.json" --cluster "$DEVICES"
[ $(($(date +%s) - start)) -le 5 ] || fail "a long device list took $(($(date +%s) - start)) s to refuse"

echo "graph_input_cli: ok"
