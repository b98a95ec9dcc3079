#!/usr/bin/env bash
# Remakes the pretrained gnn policy in policies/pretrained/ (issue 25 part 2):
# exports the family's public models with torch.export (scripts/pretrain_models.py),
# imports them, trains configs/pretrain_gnn.yaml (all its train.updates: a run that
# train.time_limit_s cut short, on a busy machine, is another policy and fails here;
# PRETRAIN_TIME_LIMIT=SECONDS raises the cap) and exports the policy alone
# (`placer export-policy`: 0.7 MB, in git), with its config and how it was made.
# Usage: bash scripts/pretrain.sh [BUILD_DIR=build] [DEST=policies/pretrained]
# (`make pretrained`). About 4 minutes on the 2-core VM (233 s in the twenty-seventh session, 33 graphs) (bench/results/learned_heldout.md).
set -euo pipefail
BUILD=${1:-build}
DEST=${2:-policies/pretrained}
PY=${PLACER_PYTHON:-.venv/bin/python3}
MODELS=runs/pretrain_models
RUN=runs/pretrain_gnn
t0=$(date +%s)
mkdir -p "$MODELS"
"$PY" scripts/pretrain_models.py "$MODELS"
for f in "$MODELS"/*.pt2; do
  "$BUILD/placer" graph import "$f" -o "${f%.pt2}.json" | head -1
done
rm -rf "$RUN"
"$BUILD/placer" train --config configs/pretrain_gnn.yaml ${PRETRAIN_TIME_LIMIT:+--time-limit "$PRETRAIN_TIME_LIMIT"}
ended=$(sed -n 's/^  "ended_by": "\(.*\)",$/\1/p' "$RUN/summary.json")
if [ "$ended" != "updates" ]; then
  done_updates=$(sed -n 's/^  "updates": \([0-9]*\),$/\1/p' "$RUN/summary.json")
  echo "pretrain.sh: the run ended by '${ended:-?}' after ${done_updates:-?} updates, not all of configs/pretrain_gnn.yaml's:" >&2
  echo "  that is not the recipe's policy, and $DEST is left as it was (an idle machine, or PRETRAIN_TIME_LIMIT=SECONDS)" >&2
  exit 1
fi
mkdir -p "$DEST"
# The policy alone (0.7 MB; the run's checkpoint, 23 MB, keeps the optimizer and the samples).
"$BUILD/placer" export-policy "$RUN" -o "$DEST/checkpoint.pt"
cp configs/pretrain_gnn.yaml "$DEST/config.yaml"
cp "$RUN/summary.json" "$DEST/train_summary.json"
secs=$(($(date +%s) - t0))
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | grep -qv "^.. $DEST" && echo " (with uncommitted changes)" || true)
cat > "$DEST/MADE_BY.txt" <<MADE
Made by: bash scripts/pretrain.sh $BUILD $DEST   (make pretrained)
Config:  configs/pretrain_gnn.yaml (copied here as config.yaml)
Commit:  $commit$dirty
Date:    $(date -u +%Y-%m-%dT%H:%MZ)
Machine: $(nproc) cores, $(uname -m)
Time:    $secs s in all (exports, imports, training)
Exported: $BUILD/placer export-policy $RUN -o $DEST/checkpoint.pt (the policy alone; the run's checkpoint keeps the optimizer and the samples)
MADE
echo "pretrained policy in $DEST ($secs s)"
