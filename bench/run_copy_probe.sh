#!/usr/bin/env bash
# Does a cheap probe track what copies between cpu:0 and cpu:1 cost in a step?
# (bench/results/copy_probe_cpu2.md; the moving cost: rewarm_cpu2.md.)
# For SECONDS, over and over: the demo's nmt placed round robin and on one device,
# measured interleaved (`placer measure --compare`, 10 steps each), then
# copy_probe_bench (a 4 MiB and a 64 KiB clone across the two cores, a wake-up
# hand-off, a cache-line round trip). Writes OUT/rounds.csv, and prints the
# Spearman correlation of each probe figure with round_robin / single, and an
# SVG of both over time (OUT/copy_probe.svg).
#   bash bench/run_copy_probe.sh [BUILD=build] [SECONDS=600] [OUT=/tmp/placer-copy-probe]
# SECONDS=0 re-analyzes an earlier OUT/rounds.csv without measuring.
# Run it on an otherwise idle machine.
set -euo pipefail
BUILD=${1:-build}
SECONDS_WANTED=${2:-600}
OUT=${3:-/tmp/placer-copy-probe}
P="$BUILD/placer"
PROBE="$BUILD/bench/copy_probe_bench"
[ -x "$PROBE" ] || { echo "run_copy_probe: $PROBE missing (cmake --build $BUILD --target copy_probe_bench)" >&2; exit 2; }
mkdir -p "$OUT"
if [ "$SECONDS_WANTED" = 0 ]; then  # re-analyze OUT/rounds.csv only
  [ -f "$OUT/rounds.csv" ] || { echo "run_copy_probe: SECONDS=0 re-analyzes $OUT/rounds.csv, which is missing" >&2; exit 2; }
else
"$P" graph build nmt --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=16 --opt vocab=2000 -o "$OUT/nmt.json" > /dev/null
for m in round_robin single; do "$P" place --graph "$OUT/nmt.json" --devices cpu:2 --method "$m" -o "$OUT/$m.json" > /dev/null; done
echo "t_s,round_robin_s,single_s,cross_4m_us,same_4m_us,handoff_us,pingpong_ns,cross_64k_us,same_64k_us" > "$OUT/rounds.csv"
start=$(date +%s)
while [ $(( $(date +%s) - start )) -lt "$SECONDS_WANTED" ]; do
  t=$(( $(date +%s) - start ))
  "$P" measure --graph "$OUT/nmt.json" --devices cpu:2 --compare "$OUT/round_robin.json" "$OUT/single.json" \
    --warmup 2 --steps 10 --max-steps 10 --json "$OUT/m.json" > /dev/null
  "$PROBE" --json > "$OUT/p4m.json"
  "$PROBE" --json --bytes 65536 > "$OUT/p64k.json"
  python3 - "$OUT" "$t" >> "$OUT/rounds.csv" <<'PY'
import json, sys
out, t = sys.argv[1], sys.argv[2]
m = {p["file"].rsplit("/", 1)[-1]: p["step_s"] for p in json.load(open(f"{out}/m.json"))["placements"]}
a, b = json.load(open(f"{out}/p4m.json")), json.load(open(f"{out}/p64k.json"))
print(f"{t},{m['round_robin.json']},{m['single.json']},{a['cross_us']},{a['same_us']},{a['handoff_us']},"
      f"{a['pingpong_ns']},{b['cross_us']},{b['same_us']}")
PY
  tail -1 "$OUT/rounds.csv"
done
fi
python3 - "$OUT" "$(dirname "$0")" <<'PY'
import csv, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from rank_stats import spearman
rows = list(csv.DictReader(open(f"{out}/rounds.csv")))
f = lambda k: [float(r[k]) for r in rows]
ratio = [a / b for a, b in zip(f("round_robin_s"), f("single_s"))]
def q(v, p):
    s = sorted(v); return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]
print(f"{len(rows)} rounds over {rows[-1]['t_s']} s")
print("| figure | median | p10-p90 | Spearman with round_robin / single | with round_robin |")
print("|---|---:|---|---:|---:|")
print(f"| round_robin / single | {q(ratio, .5):.3f} | {q(ratio, .1):.3f}-{q(ratio, .9):.3f} | | |")
for k in ("round_robin_s", "single_s", "cross_4m_us", "same_4m_us", "handoff_us", "pingpong_ns", "cross_64k_us", "same_64k_us"):
    v = f(k)
    print(f"| {k} | {q(v, .5):.4g} | {q(v, .1):.4g}-{q(v, .9):.4g} | {spearman(v, ratio):+.2f} | {spearman(v, f('round_robin_s')):+.2f} |")
# Over time: round_robin / single and the cache-line round trip, each scaled to its own range.
W, H, L, T = 760, 300, 60, 20
ts = [float(r["t_s"]) for r in rows]
def line(v, color):
    lo, hi = min(v), max(v)
    pts = " ".join(f"{L + (W - L - 20) * t / max(ts[-1], 1):.1f},{T + (H - T - 40) * (1 - (x - lo) / ((hi - lo) or 1)):.1f}"
                   for t, x in zip(ts, v))
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>', lo, hi
pp = f("pingpong_ns")
a, rlo, rhi = line(ratio, "#d62728")
b, plo, phi = line(pp, "#1f77b4")
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>', a, b,
       f'<text x="{L}" y="14" fill="#d62728">round_robin / single ({rlo:.3f}-{rhi:.3f})</text>',
       f'<text x="{L + 330}" y="14" fill="#1f77b4">cache-line round trip ({plo:.0f}-{phi:.0f} ns)</text>',
       f'<line x1="{L}" y1="{H - 40}" x2="{W - 20}" y2="{H - 40}" stroke="#888"/>',
       *[f'<text x="{L + (W - L - 20) * s / max(ts[-1], 1):.1f}" y="{H - 26}" text-anchor="middle">{s:.0f}</text>'
         for s in range(0, int(ts[-1]) + 1, max(60, int(ts[-1]) // 10 // 60 * 60))],
       f'<text x="{W // 2}" y="{H - 8}" text-anchor="middle">seconds since the start (each line scaled to its own range)</text>',
       "</svg>"]
open(f"{out}/copy_probe.svg", "w").write("\n".join(svg) + "\n")
print(f"plot: {out}/copy_probe.svg")
PY
