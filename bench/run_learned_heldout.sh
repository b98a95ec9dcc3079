#!/usr/bin/env bash
# Issue 25 part 1, measured: local_search, guided_search and the learned placer
# at equal evaluation budgets on the fixed held-out set (bench/heldout_models.sh),
# with the best other heuristic and the lower bound; writes
# bench/results/learned_heldout.md.
# Usage: bash bench/run_learned_heldout.sh [BUILD_DIR] [HELDOUT_DIR] [CELL...]
#   CELL = PRESET:BUDGET[:METHODS] (default: k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000,
#   methods local_search,guided_search,learned), run in that order, every graph per cell.
#   Rows are kept in $ROWS/COMMIT/SETTINGS (default /tmp/placer-heldout-rows; COMMIT is
#   `git rev-parse --short HEAD`, "+changes" added for a tree with uncommitted changes;
#   SETTINGS, 10 hex digits of the sha1 of SEEDS and UNIT_STAGES), a cell's methods in
#   its rows' names: a row already there is not run again, so an interrupted run
#   continues, and rows from another commit or settings are never reused nor stamped
#   with this one. The results file lists every cell of the default grid (with the
#   methods this run's CELLs name for it), "not run" where this commit has no row,
#   and names the commit and the settings.
#   SEEDS (default 1,2,3,4,5); GRAPHS (default all six) limits the graphs run;
#   UNIT_STAGES (default 1) is heldout_bench's --unit-stages.
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-/tmp/placer-heldout}
shift $(( $# < 2 ? $# : 2 ))
CELLS=${*:-k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000}
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
SEEDS=${SEEDS:-1,2,3,4,5}
UNIT_STAGES=${UNIT_STAGES:-1}
SETTINGS="seeds $SEEDS, unit_stages $UNIT_STAGES"
ROWS=${ROWS:-/tmp/placer-heldout-rows}/$COMMIT/$(printf %s "$SETTINGS" | sha1sum | cut -c1-10)
METHODS=local_search,guided_search,learned  # a cell's methods unless it names its own
ALL="resnet18 mobilenet_v2 lstm_lm gpt2 transformer_mt dlrm"  # the set, in the table's order
GRAPHS=${GRAPHS:-$ALL}  # the graphs to run (default all)
OUT=${OUT:-bench/results/learned_heldout.md}  # written whole (its Findings section kept)
mkdir -p "$ROWS"
IF_STALE=1 bash bench/heldout_models.sh "$BUILD" "$DATA"  # (re)imports graphs from another commit
row_base() {  # preset budget methods graph -> the row's path without .md/.log
  echo "$ROWS/${1}_${2}_${3//,/+}_$4"
}

declare -A METHODS_OF  # preset:budget -> the methods this run's cell names
for cell in $CELLS; do
  IFS=: read -r preset budget methods <<< "$cell"
  methods=${methods:-$METHODS}
  METHODS_OF[$preset:$budget]=$methods
  for g in $GRAPHS; do
    base=$(row_base "$preset" "$budget" "$methods" "$g")
    [ -s "$base.md" ] && continue
    nice "$BUILD/bench/heldout_bench" "$DATA/$g.json" --name "$g" --cluster "$preset" --budget "$budget" \
      --seeds "$SEEDS" --methods "$methods" --out "$ROWS/runs" --unit-stages "$UNIT_STAGES" \
      > "$base.md.tmp" 2> "$base.log"
    mv "$base.md.tmp" "$base.md"
  done
done

other=""  # the cells this run named other methods for
for k in "${!METHODS_OF[@]}"; do [ "${METHODS_OF[$k]}" = "$METHODS" ] || other+=" $k:${METHODS_OF[$k]}"; done
findings=""
[ -e "$OUT" ] && findings=$(sed -n '/^## Findings/,$p' "$OUT")
{
  echo "# Held-out graphs: learned placer and guided_search vs local_search at equal budgets (issue 25 part 1)"
  echo
  echo "Command: \`bash bench/run_learned_heldout.sh $BUILD $DATA\` (rows from \`build/bench/heldout_bench\`), seeds $SEEDS.  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), shared with other jobs while it ran (wall times"
  echo "are on a busy machine; step times are simulated and do not depend on load). Commit: $COMMIT (every row)."
  echo "Settings: $SETTINGS; methods $METHODS${other:+ except$other} (rows in $ROWS)."
  echo
  echo "**The held-out set is fixed and was used to tune nothing** (bench/heldout_models.sh: resnet18 and"
  echo "mobilenet_v2, batch 32 of 3x112x112, eval mode; a 2-layer LSTM LM, 1024 hidden, LSTMCells unrolled over"
  echo "10 steps, batch 64, vocab 10,000; a GPT-2-style decoder, 6 blocks, d=512, 16x128 tokens of 16,384;"
  echo "nn.Transformer 3+3 layers, d=512, src 32x48, tgt 32x40, vocab 8,000; a DLRM-style recommender, 8"
  echo "tables of 200,000 x 64, bottom MLP 512-256-64, dot interactions, top MLP 512-256-1, batch 2,048;"
  echo "random weights, torch.manual_seed(25), torch.export, imported as training graphs by \`placer graph import\`)."
  echo
  echo "Budgets (placements scored): **local_search**: its annealing's evaluations = the budget, its start's"
  echo "four heuristics (m_etf, heft, dp, expert) and offload_updates' move of the fastest simulated on top,"
  echo "uncounted, as it has always counted;"
  echo "**guided_search**: the budget, its four start candidates included; **learned**: the warm start's eight"
  echo "heuristic placements (m_etf, m_sct, m_topo, expert, dp, heft, mincut, offload_updates) + 16 samples x"
  echo "floor((budget - 8) / 16) updates = 1,000 of 1,000 and 3,992 of 4,000. The heuristics' own internal planning counts for no method."
  echo "Learned recipe, one for every graph: configs/nmt_k80x4.yaml's (seq2seq, 64 hidden, <= 256 units, reward"
  echo "-sqrt(step), REINFORCE, lr 0.005, elites 8, behaviour cloning of the best heuristic, 1,000 steps) without"
  echo "local_search in the warm start (its search would spend a second budget); its figure is the placement"
  echo "\`placer train\` returns (the fastest evaluated, warm start included). Each seed gets a fresh environment"
  echo "(no cache shared between seeds). Columns: median / worst of the seeds (ms, simulated); gap to bound of the"
  echo "median; \"vs local_search\": how much faster the median is, **win** where it is >= 2% faster and its worst"
  echo "seed is no slower than local_search's median (the issue's criterion); \"bound reached\" where every"
  echo "method's median is within 2% of the lower bound. Best other heuristic: the fastest of the eight above."
  echo
  echo "| graph | preset | budget | lower bound (ms) | best other heuristic (ms) | local_search median / worst (ms) | gap to bound | wall (median) | guided_search median / worst (ms) | gap to bound | wall (median) | guided vs local_search (median) | learned median / worst (ms) | gap to bound | wall (median) | learned vs local_search (median) | |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for cell in k80x4:1000 p100x4:1000 k80x4:4000 p100x4:4000; do
    IFS=: read -r preset budget _ <<< "$cell"
    for g in $ALL; do
      row=$(row_base "$preset" "$budget" "${METHODS_OF[$preset:$budget]:-$METHODS}" "$g").md
      if [ -s "$row" ]; then cat "$row"; else echo "| $g | $preset | $budget | not run | | | | | | | | | | | | | |"; fi
    done
  done
  if [ -n "$findings" ]; then echo; echo "$findings"; fi
} > "$OUT"
echo "wrote $OUT"
