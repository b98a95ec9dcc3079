#!/usr/bin/env bash
# The held-out set of issue 25 part 1 (bench/results/learned_heldout.md): six
# public model architectures exported with torch.export by the project's
# torch (bench/heldout_models.py: random weights, torch.manual_seed(25)) and
# imported as training graphs with `placer graph import`. Fixed: nothing is
# tuned on these graphs.
# Usage: bash bench/heldout_models.sh [BUILD_DIR] [OUT_DIR=/tmp/placer-heldout]
#   Writes OUT_DIR/NAME.pt2 and OUT_DIR/NAME.json, then OUT_DIR/.commit: the commit
#   that imported them (`git rev-parse --short HEAD`, "+changes" added for a tree with
#   uncommitted changes), since what the importer records changes with the code (e.g.
#   views, b7ea54c). IF_STALE=1 (how the bench scripts call it): do nothing when
#   OUT_DIR/.commit names this commit and the six graphs are there; export and import
#   them again otherwise (graphs without a .commit, from before it, are imported again).
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/placer-heldout}
PY=${PLACER_PYTHON:-.venv/bin/python3}
ALL="resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm"
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
if [ "${IF_STALE:-0}" = 1 ] && [ "$(cat "$OUT/.commit" 2>/dev/null)" = "$COMMIT" ]; then
  fresh=1
  for m in $ALL; do [ -s "$OUT/$m.json" ] || fresh=0; done
  [ "$fresh" = 1 ] && exit 0
fi
if [ -e "$OUT/.commit" ]; then
  echo "heldout_models: $OUT was imported at $(cat "$OUT/.commit"); importing again at $COMMIT" >&2
elif [ -e "$OUT/dlrm.json" ]; then
  echo "heldout_models: $OUT has no .commit (imported at an unknown commit); importing again at $COMMIT" >&2
fi
mkdir -p "$OUT"
rm -f "$OUT/.commit"  # an interrupted import leaves no stamp, so the next run imports again
nice "$PY" bench/heldout_models.py "$OUT"
for m in $ALL; do
  nice "$BUILD/placer" graph import "$OUT/$m.pt2" -o "$OUT/$m.json" | head -1
done
echo "$COMMIT" > "$OUT/.commit"
