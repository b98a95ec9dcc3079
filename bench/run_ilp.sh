#!/usr/bin/env bash
# bench/results/ilp_model.md: the ilp placer's own model against the simulator
# on its own solution. Small graphs are solved op by op (link channels in the
# model); the preset graphs are coarsened to 24 units (no channels).
#   bench/run_ilp.sh > bench/results/ilp_model.md
# A graph the ilp leaves without a solution, or whose `placer baseline` fails, gets
# an "ilp: no solution" row; a failure also prints its error (naming the graph) on
# stderr and makes the exit status 1, after the whole table.
set -euo pipefail
PLACER=${PLACER:-build/placer}
LIMIT=${LIMIT:-30}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "# ilp: its model vs the simulator on its own solution"
echo
echo "Command: \`bench/run_ilp.sh\` at commit $(git rev-parse --short HEAD): for each graph,"
echo "\`placer baseline --graph G.json --cluster C --method ilp --time-limit $LIMIT --json\`"
echo "(max_ops=100 for the 79-op rnnlm, so that it is solved op by op). Machine: $(nproc) shared cores (load average"
echo "$(cut -d' ' -f1-3 /proc/loadavg) at the start). *model*: the ILP's makespan for its solution; *planned*: that"
echo "solution replayed as the runtime dispatches (what \`baseline\` prints as the planned step); *simulated*: \`simulate\`."
echo
echo "| graph | cluster | ops | units | link channels | proved | model (ms) | planned (ms) | simulated (ms) | model vs simulated | planned vs simulated | place (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
FAILED=0  # a graph whose `placer baseline` failed: its row says so, its error goes to stderr, the exit status is 1
row() {  # name cluster graph.json [option]
  local opt=()
  [ $# -ge 4 ] && opt=(--option "$4")
  if ! "$PLACER" baseline --graph "$3" --cluster "$2" --method ilp --time-limit "$LIMIT" "${opt[@]}" \
      --json "$WORK/r.json" > /dev/null 2> "$WORK/err"; then
    { echo "run_ilp: $1 on $2: placer baseline failed:"; cat "$WORK/err"; } >&2
    local why
    why=$(grep -m1 . "$WORK/err" || echo "no message")
    echo "| $1 | $2 | | ilp: no solution (placer baseline failed: ${why//|/\\|}) |$(printf ' |%.0s' {1..8})"
    FAILED=1
    return
  fi
  python3 - "$1" "$2" "$WORK/r.json" << 'PY'
import json, re, sys
name, cluster, path = sys.argv[1:4]
r = json.load(open(path))
m = r["methods"][0]
note = m["note"]
found = re.search(r"model makespan ([0-9.e+-]+) s", note)
if found is None or m.get("simulated_step_s") is None:
    why = f"{m.get('status', '?')}: {note}".replace("|", "\\|")
    print(f"| {name} | {cluster} | {r['ops']} | ilp: no solution ({why}) |" + " |" * 8)
    sys.exit(0)
model = float(found.group(1))
planned, sim = m["own_estimate_s"], m["simulated_step_s"]
units = re.search(r"to (\d+) units", note)
channels = "yes" if "link channels modelled" in note else "no"
proved = ("yes" if "proven optimal" in note else "no (optimal in the model only: links differ)"
          if "optimal in the model only" in note else "no (time limit)")
pct = lambda a: f"{100.0 * (a - sim) / sim:+.1f}%"
print(f"| {name} | {cluster} | {r['ops']} | {units.group(1) if units else r['ops']} | {channels} | {proved} | "
      f"{1e3 * model:.3f} | {1e3 * planned:.3f} | {1e3 * sim:.3f} | {pct(model)} | {pct(planned)} | {m['place_seconds']:.2f} |")
PY
}
build() { "$PLACER" graph build "$@" > /dev/null; }
build mlp --opt batch=64 --opt layers=2 --opt width=512 -o "$WORK/mlp18.json"
build mlp --opt batch=128 --opt layers=4 --opt width=1024 -o "$WORK/mlp34.json"
build mlp --opt batch=256 --opt layers=3 --opt width=2048 -o "$WORK/mlp26.json"
build rnnlm --opt hidden=512 --opt layers=1 --opt steps=2 --opt vocab=2000 -o "$WORK/rnnlm79.json"
row "mlp(batch=64,layers=2,width=512)" k80x2 "$WORK/mlp18.json"
row "mlp(batch=128,layers=4,width=1024)" k80x2 "$WORK/mlp34.json"
row "mlp(batch=256,layers=3,width=2048)" k80x4 "$WORK/mlp26.json"
row "rnnlm(hidden=512,layers=1,steps=2,vocab=2000)" k80x2 "$WORK/rnnlm79.json" max_ops=100
for m in rnnlm nmt inception_v3 transformer resnet; do
  build $m -o "$WORK/$m.json"
  row "$m (default)" k80x4 "$WORK/$m.json"
done
exit $FAILED
