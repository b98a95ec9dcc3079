#!/usr/bin/env bash
# Every JSON result says how it was made: "command" (the command line, as a shell reads it back) and "placer"
# (the version). Rerunning the recorded command writes the same result again.
#   bash results_command.sh <placer-binary> <source-dir>
set -u
PLACER=${1:?placer binary}
# shellcheck source=lib/checks.sh
source "$(dirname "$0")/lib/checks.sh"

"$PLACER" graph build mlp --opt layers=1 --opt width=8 --opt input=8 --opt batch=2 -o "$work/g.json" >/dev/null ||
  fail "graph build"
"$PLACER" place --method single --graph "$work/g.json" --devices cpu:2 -o "$work/p.json" >/dev/null || fail "place"
"$PLACER" place --method round_robin --graph "$work/g.json" --devices cpu:2 -o "$work/q it's.json" >/dev/null ||
  fail "place (a name to quote)"

# command KEY FILE ARGS...: runs placer ARGS, then checks FILE's "command" is that command line.
check() {
  local file=$1
  shift
  "$PLACER" "$@" >/dev/null 2>"$work/err" || { fail "placer $*: $(cat "$work/err")"; return; }
  python3 - "$file" "$@" <<'PY' || fail "placer $*: command not recorded"
import json, shlex, sys
r = json.load(open(sys.argv[1]))
assert shlex.split(r["command"]) == ["placer"] + sys.argv[2:], (r.get("command"), sys.argv[2:])
assert r["placer"], r
PY
}
check "$work/sim.json" simulate --graph "$work/g.json" --placement "$work/p.json" --cluster cpu:2 --json "$work/sim.json"
check "$work/base.json" baseline --graph "$work/g.json" --cluster k80x2 --method single,m_etf --json "$work/base.json"
check "$work/m.json" measure --graph "$work/g.json" --placement "$work/p.json" --devices cpu:2 --steps 2 \
  --max-steps 2 --warmup 1 --json "$work/m.json"
check "$work/c.json" measure --graph "$work/g.json" --compare "$work/p.json" "$work/q it's.json" --devices cpu:2 \
  --steps 2 --max-steps 2 --warmup 1 --json "$work/c.json"

finish results_command
