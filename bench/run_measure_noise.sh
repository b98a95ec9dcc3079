#!/usr/bin/env bash
# How far a measurement on cpu:2 agrees with itself, one change at a time:
# the issue's NMT (hidden 192, 8 steps, batch 24; 980 ops), its two
# single-device placements (the same work) and a split, measured
#   - as before: each placement alone, 2 warm-up + 5 steps, the placements one
#     after the other, three times (what `placer measure` did);
#   - with the protocol: interleaved, 2 warm-up + 10 to 40 steps each, until the
#     median's 95% interval is within 2% (--target 0.02 --max-steps 40);
# under each runtime setting named below. Writes OUT (default bench/results/measure_noise.md).
# Usage: [VOCABS="2000 40000"] [SETTINGS="ENV=VALUE ..."] [OUT=FILE] bash bench/run_measure_noise.sh [BUILD_DIR]
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
P="$BUILD/placer"
OUT=${OUT:-bench/results/measure_noise.md}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

{
  echo "# Measurement noise on cpu:2: the same work measured against itself"
  echo
  echo "Command: \`VOCABS='${VOCABS:-2000 40000}' SETTINGS='${SETTINGS:-}' bash bench/run_measure_noise.sh $BUILD\` (commit $(git rev-parse --short HEAD))  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Graphs: nmt, hidden 192, 8 steps, batch 24 (980 ops), with a vocabulary of 2,000 and of 40,000 (the"
  echo "builder's default: 30 MB embedding and softmax matrices). single0 and single1 put every op on cpu:0 and on"
  echo "cpu:1: the same work, so the same time is the right answer; split is m_etf's placement."
  echo "Each setting runs three processes of each protocol:"
  echo "- **before**: each placement alone, 2 warm-up + 5 steps, one after the other (what \`placer measure\` did);"
  echo "- **protocol**: \`placer measure --compare\`, interleaved, 2 warm-up + 10 to 40 steps, until the median's"
  echo "  95% interval is within 2%."
  echo
  echo "Cells: the range of the three runs' medians, and how far apart they are (max/min - 1). The gap column is"
  echo "single1/single0 in each run (1.000 is right). For the protocol, the widest 95% interval half-width seen."
  echo
  echo "| graph, setting | protocol | single0 s | single1 s | split s | run-to-run spread (worst) | gap single1/single0 | widest half-width |"
  echo "|---|---|---|---|---|---:|---|---:|"
} > "$OUT"

# One setting: environment assignments ("" = as shipped) and its label.
measure_setting() {
  local label=$1 envs=$2
  for rep in 1 2 3; do
    for p in single0 single1 split; do
      env $envs "$P" measure --graph "$TMP/nmt.json" --placement "$TMP/$p.json" --devices cpu:2 \
        --warmup 2 --steps 5 --max-steps 5 --json "$TMP/old_${p}_$rep.json" > /dev/null
    done
    env $envs "$P" measure --graph "$TMP/nmt.json" --compare "$TMP/single0.json" "$TMP/single1.json" \
      "$TMP/split.json" --devices cpu:2 --warmup 2 --steps 10 --max-steps 40 --target 0.02 \
      --json "$TMP/new_$rep.json" > /dev/null
  done
  python3 - "$TMP" "$label" >> "$OUT" <<'PY'
import json, sys
d, label = sys.argv[1], sys.argv[2]
names = ("single0", "single1", "split")
old = {p: [json.load(open(f"{d}/old_{p}_{r}.json")) for r in (1, 2, 3)] for p in names}
new = [{r["file"].split("/")[-1][:-5]: r for r in json.load(open(f"{d}/new_{k}.json"))["placements"]} for k in (1, 2, 3)]
new = {p: [run[p] for run in new] for p in names}
def row(kind, runs, hw):
    med = {p: [r["step_s"] for r in runs[p]] for p in names}
    rng = lambda v: "%.4f-%.4f" % (min(v), max(v))
    spread = max(max(v) / min(v) - 1 for v in med.values())
    gaps = [b / a for a, b in zip(med["single0"], med["single1"])]
    print(f"| {label} | {kind} | {rng(med['single0'])} | {rng(med['single1'])} | {rng(med['split'])} | "
          f"{100 * spread:.1f}% | {min(gaps):.3f}-{max(gaps):.3f} | {hw} |")
row("before", old, "")
widest = max(50 * (r["ci_high_s"] - r["ci_low_s"]) / r["step_s"] for p in names for r in new[p])
steps = sorted(r["steps"] for p in names for r in new[p])
row("protocol", new, f"{widest:.1f}% ({steps[0]}-{steps[-1]} steps)")
PY
  echo "== $label done" >&2
}

for vocab in ${VOCABS:-2000 40000}; do
  "$P" graph build nmt --opt hidden=192 --opt steps=8 --opt batch=24 --opt vocab="$vocab" -o "$TMP/nmt.json" > /dev/null
  "$P" place --method single --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/single0.json" > /dev/null
  python3 - "$TMP" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(f"{d}/single0.json"))
p1 = dict(p); p1["placement"] = {k: "cpu:1" for k in p["placement"]}
json.dump(p1, open(f"{d}/single1.json", "w"))
PY
  "$P" place --method m_etf --graph "$TMP/nmt.json" --devices cpu:2 -o "$TMP/split.json" > /dev/null
  measure_setting "vocab $vocab, as shipped" ""
  for setting in ${SETTINGS:-}; do measure_setting "vocab $vocab, $setting" "$setting"; done
done
