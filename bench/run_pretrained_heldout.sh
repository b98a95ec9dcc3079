#!/usr/bin/env bash
# Issue 25 part 2, measured: the pretrained gnn (policies/pretrained) on the fixed
# held-out set (bench/heldout_models.sh), zero-shot alone and with local_search from
# its placement within 1 s, and fine-tuned with 100 samples
# (configs/finetune_pretrained.yaml), against local_search at 2,000 evaluations,
# on k80x4 and p100x4, SEEDS (default 1,2,3,4,5). Prints the Markdown table that
# bench/results/learned_heldout.md's "Part 2" section holds.
# Usage: bash bench/run_pretrained_heldout.sh [BUILD_DIR] [HELDOUT_DIR]
#   Rows are kept in $ROWS/COMMIT/SETTINGS (default /tmp/placer-pretrained-rows; COMMIT is
#   `git rev-parse --short HEAD`, "+changes" added for a tree with uncommitted changes;
#   SETTINGS, 10 hex digits of the sha1 of POLICY, SEEDS and FINETUNE_CONFIG): a row
#   already there is not run again, and rows from another commit or settings are never
#   reused. The table is followed by a line naming the commit and the settings.
#   The graphs are (re)imported at this commit when HELDOUT_DIR/.commit names another
#   (bench/heldout_models.sh).
#   ANSWER=1: instead, what `placer place --policy pretrained` answers by default
#   (the policy and the fast path's heuristics, then local_search from the faster
#   within 1 s) and who found it (pretrained_bench --answer; rows in $ROWS/COMMIT/SETTINGS/answer).
#   FINETUNE=1: instead, the fine-tuning alone (FINETUNE_CONFIG, default
#   configs/finetune_pretrained.yaml) beside local_search at 2,000 and at the
#   fine-tuning's own evaluations, who found each seed's result and the
#   policy's own best (pretrained_bench --finetune-only; rows in $ROWS/COMMIT/SETTINGS/finetune).
#   ZERO_SHOT=1: instead, the policy alone, zero-shot (pretrained_bench
#   --zero-shot-only; rows in $ROWS/COMMIT/SETTINGS/zero_shot), to compare pretraining seeds.
#   POLICY=DIR: another policy than policies/pretrained (a `placer train` folder).
#   PLACEMENTS=N (with ZERO_SHOT=1): the policy alone samples N placements whatever the time, not
#   for 1 s (`placer place --policy P --no-refine --budget N`): figures independent of the machine's speed.
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-/tmp/placer-heldout}
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
SEEDS=${SEEDS:-1,2,3,4,5}
FINETUNE_CONFIG=${FINETUNE_CONFIG:-configs/finetune_pretrained.yaml}
SETTINGS="policy ${POLICY:-pretrained}, seeds $SEEDS, finetune_config $FINETUNE_CONFIG"
[ -n "${PLACEMENTS:-}" ] && SETTINGS="$SETTINGS, placements $PLACEMENTS"
ROWS=${ROWS:-/tmp/placer-pretrained-rows}/$COMMIT/$(printf %s "$SETTINGS" | sha1sum | cut -c1-10)
ANSWER=${ANSWER:-0}
FINETUNE=${FINETUNE:-0}
ZERO_SHOT=${ZERO_SHOT:-0}
EXTRA=(--policy "${POLICY:-pretrained}")
if [ "$ANSWER" = 1 ]; then
  ROWS="$ROWS/answer"
  EXTRA+=(--answer)
elif [ "$ZERO_SHOT" = 1 ]; then
  ROWS="$ROWS/zero_shot"
  EXTRA+=(--zero-shot-only)
  [ -n "${PLACEMENTS:-}" ] && EXTRA+=(--placements "$PLACEMENTS")
elif [ "$FINETUNE" = 1 ]; then
  ROWS="$ROWS/finetune"
  EXTRA+=(--finetune-only --finetune "$FINETUNE_CONFIG")
fi
ALL="resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm"
mkdir -p "$ROWS"
IF_STALE=1 bash bench/heldout_models.sh "$BUILD" "$DATA"  # (re)imports graphs from another commit
for preset in k80x4 p100x4; do
  for g in $ALL; do
    row="$ROWS/${preset}_$g.md"
    [ -s "$row" ] && continue
    nice -n 19 "$BUILD/bench/pretrained_bench" "$DATA/$g.json" --name "$g" --cluster "$preset" --seeds "$SEEDS" \
      --out "$ROWS/runs" "${EXTRA[@]}" > "$row.tmp" 2> "$ROWS/${preset}_$g.log"
    mv "$row.tmp" "$row"
  done
done
if [ "$FINETUNE" = 1 ]; then
  echo "| graph | preset | lower bound (ms) | local_search @2000 median / worst (ms) | local_search at the fine-tuning's evaluations, median / worst (ms) | vs @2000 | fine-tuned median / worst (ms) | vs @2000 (target <= 0%) | wall (median) | found by (seeds) | the policy's own samples, median / worst (ms) | vs @2000 |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
elif [ "$ZERO_SHOT" = 1 ]; then
  echo "| graph | preset | lower bound (ms) | local_search @2000 median / worst (ms) | the policy alone, zero-shot${PLACEMENTS:+, $PLACEMENTS placements}, median / worst (ms) | vs local_search (target <= +5%) | time to place (max) |"
  echo "|---|---|---|---|---|---|---|"
elif [ "$ANSWER" = 1 ]; then
  echo "| graph | preset | lower bound (ms) | local_search @2000 median / worst (ms) | the answer: policy + fast path + local_search within 1 s, median / worst (ms) | vs local_search (target <= +5%) | time (max) | found by (seeds) |"
  echo "|---|---|---|---|---|---|---|---|"
else
  echo "| graph | preset | lower bound (ms) | local_search @2000 median / worst (ms) | wall (median) | pretrained zero-shot median / worst (ms) | vs local_search (target <= +5%) | time to place (max) | zero-shot + local_search within 1 s median / worst (ms) | vs local_search | time (max) | pretrained + 100 samples median / worst (ms) | vs local_search (target <= 0%) | wall (median) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
fi
for preset in k80x4 p100x4; do
  for g in $ALL; do cat "$ROWS/${preset}_$g.md"; done
done
echo
echo "Commit: $COMMIT (every row; rows in $ROWS). Settings: $SETTINGS."
