#!/usr/bin/env bash
# Issue 25 part 1, measured: local_search, guided_search and the learned placer
# at equal evaluation budgets on the fixed held-out set (bench/heldout_models.sh),
# with the best other heuristic and the lower bound; writes
# bench/results/learned_heldout.md.
# Usage: bash bench/run_learned_heldout.sh [BUILD_DIR] [HELDOUT_DIR] [CELL...]
#   CELL = PRESET:BUDGET[:METHODS] (default: k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000,
#   methods local_search,guided_search,learned), run in that order, every graph per cell.
#   Rows are kept in $ROWS (default /tmp/placer-heldout-rows): a row already there is
#   not run again, so an interrupted run continues; the results file lists every
#   cell of the default grid, "not run" where no row exists.
#   SEEDS (default 1,2,3,4,5).
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-/tmp/placer-heldout}
shift $(( $# < 2 ? $# : 2 ))
CELLS=${*:-k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000}
ROWS=${ROWS:-/tmp/placer-heldout-rows}
SEEDS=${SEEDS:-1,2,3,4,5}
GRAPHS="resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm"
OUT=bench/results/learned_heldout.md
mkdir -p "$ROWS"
[ -e "$DATA/dlrm.json" ] || bash bench/heldout_models.sh "$BUILD" "$DATA"

for cell in $CELLS; do
  IFS=: read -r preset budget methods <<< "$cell"
  for g in $GRAPHS; do
    row="$ROWS/${preset}_${budget}_$g.md"
    [ -s "$row" ] && continue
    nice "$BUILD/bench/heldout_bench" "$DATA/$g.json" --name "$g" --cluster "$preset" --budget "$budget" \
      --seeds "$SEEDS" --methods "${methods:-local_search,guided_search,learned}" --out "$ROWS/runs" \
      > "$row.tmp" 2> "$ROWS/${preset}_${budget}_$g.log"
    mv "$row.tmp" "$row"
  done
done

{
  echo "# Held-out graphs: learned placer and guided_search vs local_search at equal budgets (issue 25 part 1)"
  echo
  echo "Command: \`bash bench/run_learned_heldout.sh $BUILD $DATA\` (rows from \`build/bench/heldout_bench\`), seeds $SEEDS.  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), shared with other jobs while it ran (wall times"
  echo "are on a busy machine; step times are simulated and do not depend on load). Commit: $(git rev-parse --short HEAD)."
  echo
  echo "| graph | preset | budget | lower bound (ms) | best other heuristic (ms) | local_search median / worst (ms) | gap to bound | wall (median) | guided_search median / worst (ms) | gap to bound | wall (median) | guided vs local_search (median) | learned median / worst (ms) | gap to bound | wall (median) | learned vs local_search (median) | |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for cell in k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000; do
    IFS=: read -r preset budget _ <<< "$cell"
    for g in $GRAPHS; do
      row="$ROWS/${preset}_${budget}_$g.md"
      if [ -s "$row" ]; then cat "$row"; else echo "| $g | $preset | $budget | not run | | | | | | | | | | | | | |"; fi
    done
  done
} > "$OUT.table"
echo "table: $OUT.table (bench/results/learned_heldout.md is this table with the set's description and findings)"
