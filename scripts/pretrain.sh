#!/usr/bin/env bash
# Remakes the pretrained gnn policy in policies/pretrained/ (issue 25 part 2):
# exports the family's public models with torch.export (scripts/pretrain_models.py),
# imports them, trains configs/pretrain_gnn.yaml once per seed of PRETRAIN_SEEDS (all
# its train.updates: a run that train.time_limit_s cut short, on a busy machine, is
# another policy and fails here; PRETRAIN_TIME_LIMIT=SECONDS raises the cap; two
# seeds at a time on two cores or more) and exports each policy alone (`placer
# export-policy`: 0.8 MB each, in git): the first seed's as checkpoint.pt, the
# others' as member_SEED.pt, and with more than one seed an ensemble.yaml listing
# them (the seeds decode together: LoadedPolicy), with the config and how it was made.
# Usage: bash scripts/pretrain.sh [BUILD_DIR=build] [DEST=policies/pretrained]
# (`make pretrained`). PRETRAIN_SEEDS (default "1"): one seed makes a single policy, more an ensemble.
# About 8 minutes per two seeds on the 2-core VM (bench/results/learned_heldout.md).
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
SEEDS=${PRETRAIN_SEEDS:-1}
read -r -a seeds <<< "$SEEDS"
[ ${#seeds[@]} -ge 1 ] || { echo "pretrain.sh: PRETRAIN_SEEDS names no seed" >&2; exit 1; }
declare -A given=()
for s in "${seeds[@]}"; do
  [[ $s =~ ^[0-9]+$ ]] || { echo "pretrain.sh: PRETRAIN_SEEDS: '$s' is not a seed (a whole number >= 0)" >&2; exit 1; }
  [ -z "${given[$s]:-}" ] || { echo "pretrain.sh: PRETRAIN_SEEDS: seed $s given twice" >&2; exit 1; }
  given[$s]=1
done
rm -rf "$RUN"
mkdir -p "$RUN"
at_once=$(( $(nproc) >= 2 ? 2 : 1 ))
echo "pretrain.sh: training seeds $SEEDS, $at_once at a time (~4 min each alone on the 2-core VM; logs in $RUN/seed_SEED.log)"
running=0
# Ctrl-C or a failure here stops the trainings too (background jobs of a script ignore SIGINT).
trap 'kill $(jobs -p) 2> /dev/null || true' INT TERM EXIT
for s in "${seeds[@]}"; do
  # (Each run is quiet but for its warnings: several at once would interleave their progress lines.)
  "$BUILD/placer" train --config configs/pretrain_gnn.yaml --seed "$s" -o "$RUN/seed_$s" -q \
    ${PRETRAIN_TIME_LIMIT:+--time-limit "$PRETRAIN_TIME_LIMIT"} > "$RUN/seed_$s.log" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$at_once" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true
trap - INT TERM EXIT
echo "pretrain.sh: trained in $(($(date +%s) - t0)) s"
for s in "${seeds[@]}"; do
  summary="$RUN/seed_$s/summary.json"
  ended=$(sed -n 's/^  "ended_by": "\(.*\)",$/\1/p' "$summary" 2>/dev/null || true)
  if [ "$ended" != "updates" ]; then
    done_updates=$(sed -n 's/^  "updates": \([0-9]*\),$/\1/p' "$summary" 2>/dev/null || true)
    echo "pretrain.sh: seed $s's run ended by '${ended:-?}' after ${done_updates:-?} updates, not all of configs/pretrain_gnn.yaml's" >&2
    echo "  ($RUN/seed_$s.log: $(tail -1 "$RUN/seed_$s.log" 2>/dev/null)):" >&2
    echo "  that is not the recipe's policy, and $DEST is left as it was (an idle machine, or PRETRAIN_TIME_LIMIT=SECONDS)" >&2
    exit 1
  fi
done
mkdir -p "$DEST"
rm -f "$DEST"/member_*.pt "$DEST"/member_*_summary.json "$DEST/ensemble.yaml"
# The policies alone (0.8 MB each; a run's checkpoint, 23 MB, keeps the optimizer and the samples).
members=()
for s in "${seeds[@]}"; do
  if [ ${#members[@]} -eq 0 ]; then file=checkpoint.pt; summary=train_summary.json
  else file=member_$s.pt; summary=member_${s}_summary.json; fi
  "$BUILD/placer" export-policy "$RUN/seed_$s" -o "$DEST/$file"
  cp "$RUN/seed_$s/summary.json" "$DEST/$summary"
  members+=("$file")
done
if [ ${#members[@]} -gt 1 ]; then
  { echo "# An ensemble of configs/pretrain_gnn.yaml's seeds $SEEDS (scripts/pretrain.sh): they decode together."
    echo "members: [$(IFS=,; echo "${members[*]}" | sed 's/,/, /g')]"; } > "$DEST/ensemble.yaml"
fi
cp configs/pretrain_gnn.yaml "$DEST/config.yaml"
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
Seeds:   $SEEDS (the first's policy is checkpoint.pt, the others' member_SEED.pt$([ ${#members[@]} -gt 1 ] && echo ", listed in ensemble.yaml"))
Exported: $BUILD/placer export-policy $RUN/seed_SEED -o $DEST/FILE (the policies alone; a run's checkpoint keeps the optimizer and the samples)
MADE
echo "pretrained policy in $DEST ($secs s)"
