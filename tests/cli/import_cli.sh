#!/usr/bin/env bash
# placer graph import: the tiny fixtures import, validate and summarize; bad
# files, wrong input names and control flow give clear errors and a non-zero exit.
#   bash import_cli.sh <placer-binary> <source-dir>
set -u
placer=${1:?placer binary}
src=${2:?source dir}
fixtures="$src/tests/fixtures"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_ok NAME CMD...: exit 0
expect_ok() {
  local name=$1; shift
  if ! "$@" >"$work/out" 2>"$work/err"; then
    fail "$name: exit $? (stderr: $(head -c 400 "$work/err"))"
  fi
}

# expect_error NAME "TEXT" CMD...: non-zero exit and TEXT on stderr
expect_error() {
  local name=$1 text=$2; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    fail "$name: exit 0, expected an error"
  elif ! grep -qF -- "$text" "$work/err"; then
    fail "$name: stderr lacks '$text': $(head -c 400 "$work/err")"
  fi
}

expect_ok "import --help" "$placer" graph import --help
grep -q -- "--input" "$work/out" || fail "import --help does not describe --input"
grep -q -- "--forward-only" "$work/out" || fail "import --help does not describe --forward-only"

# The training graph of the tiny CNN: 15 forward ops + loss, 7 backward, 6 updates.
expect_ok "import tiny_cnn" "$placer" graph import "$fixtures/tiny_cnn.pt" --input x:2x3x8x8:float -o "$work/cnn.json"
expect_ok "validate tiny_cnn" "$placer" graph validate "$work/cnn.json"
grep -q "ok: 29 ops" "$work/out" || fail "tiny_cnn training graph: expected 29 ops, got: $(cat "$work/out")"
grep -q '"aten::_convolution"' "$work/cnn.json" || fail "tiny_cnn graph has no aten::_convolution"
grep -q '"placer::sgd"' "$work/cnn.json" || fail "tiny_cnn training graph has no placer::sgd"
expect_ok "info tiny_cnn" "$placer" graph info "$work/cnn.json"

expect_ok "import --forward-only" "$placer" graph import "$fixtures/tiny_cnn.pt" --input x:2x3x8x8:float \
  --forward-only -o "$work/cnn_fwd.bin"
expect_ok "validate forward-only" "$placer" graph validate "$work/cnn_fwd.bin"
grep -q "ok: 15 ops" "$work/out" || fail "tiny_cnn forward graph: expected 15 ops, got: $(cat "$work/out")"

expect_ok "import lstm lm" "$placer" graph import "$fixtures/tiny_lstm_lm.pt" --input tokens:5x2:long -o "$work/lm.json"
grep -q '"aten::lstm.input"' "$work/lm.json" || fail "lstm lm graph has no aten::lstm.input"
expect_ok "import transformer" "$placer" graph import "$fixtures/tiny_transformer.pt" --input src:4x2x8:float \
  -o "$work/tr.json"
expect_ok "import two inputs" "$placer" graph import "$fixtures/tiny_regression.pt" --input x:4x3:float \
  --input target:4x2:float -o "$work/reg.json"

# Errors name the file, the input or the node.
expect_error "missing file" "no such file" \
  "$placer" graph import "$work/nope.pt" --input x:1:float -o "$work/x.json"
expect_error "not a model" "not a TorchScript archive" \
  "$placer" graph import "$fixtures/not_a_model.pt" --input x:1:float -o "$work/x.json"
expect_error "an infinite learning rate" "--lr: must be a finite number > 0, got inf" \
  "$placer" graph import "$fixtures/tiny_cnn.pt" --lr inf -o "$work/x.json"
expect_error "unknown input name" "forward() has no argument 'image'" \
  "$placer" graph import "$fixtures/tiny_cnn.pt" --input image:2x3x8x8:float -o "$work/x.json"
expect_error "missing input" "missing --input for forward() argument 'target'" \
  "$placer" graph import "$fixtures/tiny_regression.pt" --input x:4x3:float -o "$work/x.json"
expect_error "control flow" "prim::If" \
  "$placer" graph import "$fixtures/control_flow.pt" --input x:2x4:float -o "$work/x.json"
expect_error "bad dtype" "unknown dtype 'quaternion'" \
  "$placer" graph import "$fixtures/tiny_cnn.pt" --input x:2x3x8x8:quaternion -o "$work/x.json"
expect_error "wrong shape" "aten::_convolution" \
  "$placer" graph import "$fixtures/tiny_cnn.pt" --input x:2x5x8x8:float -o "$work/x.json"
[ -e "$work/x.json" ] && fail "a failed import wrote its output file"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "import_cli: all checks passed"
