#!/usr/bin/env bash
# placer measure --compare --json: each placement's interval carries its level (ci_level), as measure --json does:
# with 3 steps [min, max] covers 75%, which the text says and the JSON lacked.
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" graph build mlp --opt batch=4 --opt input=8 --opt width=8 --opt classes=3 --opt layers=2 -o "$TMP/g.json" >/dev/null
python3 - "$TMP/g.json" "$TMP/p.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
placement = {o["name"]: "cpu:0" for o in g["ops"]}
json.dump({"format": "placer.placement", "version": 1, "graph": g.get("name", ""), "placement": placement},
          open(sys.argv[2], "w"))
PY
"$PLACER" measure --graph "$TMP/g.json" --compare "$TMP/p.json" "$TMP/p.json" --devices cpu:1 --warmup 1 --steps 3 \
  --max-steps 3 --json "$TMP/cmp.json" > "$TMP/cmp.txt" || fail "measure --compare"
grep -q " 75% interval \[" "$TMP/cmp.txt" || fail "not the 75% interval: $(cat "$TMP/cmp.txt")"
python3 - "$TMP/cmp.json" <<'PY' || fail "compare JSON: $(cat "$TMP/cmp.json")"
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["placements"]:
    assert p["status"] == "ok", p
    assert p["ci_level"] == 0.75, p
    assert p["ci_low_s"] <= p["step_s"] <= p["ci_high_s"], p
PY
echo OK
