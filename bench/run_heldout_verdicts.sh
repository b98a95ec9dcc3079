#!/usr/bin/env bash
# Issue 25 part 1's verdicts again, against today's lower bound: reads the
# table of the section "Unit stages and refinement together" of
# bench/results/learned_heldout.md (local_search and learned_refine medians,
# simulated; training and search never see the bound, so they do not change
# with it), computes each graph's bound with this build (`placer simulate`),
# and prints the table with the gaps and the verdicts: **win** where the
# learned median is >= 2% faster than local_search's and its worst seed no
# slower than local_search's median, "bound reached" where both medians are
# within 2% of the bound (heldout_bench's rule).
# Usage: bash bench/run_heldout_verdicts.sh [BUILD_DIR] [HELDOUT_DIR] > table.md
#   SECTION (a heading's start), LS_COL and LEARNED_COL (0-based columns of the
#   "median / worst" cells) pick another table of the file; the defaults read
#   the section above. The first table: SECTION="# Held-out graphs" LS_COL=5 LEARNED_COL=12.
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-/tmp/placer-heldout}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
IF_STALE=1 bash bench/heldout_models.sh "$BUILD" "$DATA" >&2  # (re)imports graphs from another commit
for g in resnet18 mobilenet_v2 lstm_lm dlrm gpt2 transformer_mt; do
  for c in k80x4 p100x4; do
    "$BUILD/placer" place --graph "$DATA/$g.json" --cluster "$c" --method m_etf -o "$WORK/p.json" > /dev/null
    "$BUILD/placer" simulate --graph "$DATA/$g.json" --cluster "$c" --placement "$WORK/p.json" --json "$WORK/s.json" > /dev/null
    python3 -c "import json,sys; print(sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))['lower_bound_s'])" \
      "$g" "$c" "$WORK/s.json" >> "$WORK/bounds"
  done
done
SECTION=${SECTION:-"## Unit stages and refinement together"}
python3 - "$SECTION" > "$WORK/rows" <<'PY'  # the first table after the heading: its rows
import sys
lines = open("bench/results/learned_heldout.md").read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith(sys.argv[1])), None)
if start is None:
    sys.exit("run_heldout_verdicts: SECTION: no line of bench/results/learned_heldout.md starts with '%s'" % sys.argv[1])
first = next((i for i in range(start, len(lines)) if lines[i].startswith("| graph")), None)
if first is None:
    sys.exit("run_heldout_verdicts: SECTION: no table after '%s'" % sys.argv[1])
for l in lines[first + 2:]:
    if not l.startswith("|"):
        break
    print(l)
PY
LS_COL=${LS_COL:-3} LEARNED_COL=${LEARNED_COL:-4} python3 - "$WORK/bounds" "$WORK/rows" <<'PY'
import os, sys
ls_col, learned_col = int(os.environ["LS_COL"]), int(os.environ["LEARNED_COL"])
bounds = {}
for line in open(sys.argv[1]):
    g, c, b = line.split()
    bounds[(g, c)] = float(b) * 1e3
print("| graph | preset | budget | lower bound (ms) | local_search median / worst (ms) | gap to bound "
      "| learned median / worst (ms) | gap to bound | vs local_search | verdict |")
print("|---|---|---|---:|---|---:|---|---:|---:|---|")
wins = reached = 0
for line in open(sys.argv[2]):
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    g, c, budget = f[0], f[1], f[2]
    try:
        ls_med, ls_worst = (float(x) for x in f[ls_col].split("/"))
        lr_med, lr_worst = (float(x) for x in f[learned_col].split("/"))
    except (IndexError, ValueError):
        sys.exit("run_heldout_verdicts: LS_COL=%d / LEARNED_COL=%d: not 'median / worst' cells in row: %s"
                 % (ls_col, learned_col, line.strip()))
    b = bounds[(g, c)]
    faster = 1 - lr_med / ls_med  # as heldout_bench prints it
    verdict = ""
    if faster >= 0.02 and lr_worst <= ls_med:
        verdict, wins = "**win**", wins + 1
    elif ls_med <= 1.02 * b and lr_med <= 1.02 * b:
        verdict, reached = "bound reached", reached + 1
    print("| %s | %s | %s | %.3f | %s | %+.1f%% | %s | %+.1f%% | %+.1f%% | %s |" % (
        g, c, budget, b, f[ls_col], 100 * (ls_med / b - 1), f[learned_col], 100 * (lr_med / b - 1), 100 * faster,
        verdict))
print()
print("Settled: %d wins and %d cells with the bound reached, of %d." % (wins, reached, sum(1 for _ in open(sys.argv[2]))))
PY
