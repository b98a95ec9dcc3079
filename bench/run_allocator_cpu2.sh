#!/usr/bin/env bash
# Which malloc the measured steps run on, side by side on cpu:2: the five
# fidelity graphs (bench/run_fidelity.sh's sizes), six placements of each as
# `placer fidelity --seed 1` draws them (both single-device placements, the
# same work, and a split, contiguous blocks, a random and a perturbed
# placement), measured interleaved by `placer measure --compare` until each
# median's 95% interval is within 1% (10-40 steps), under each SETTING, three
# processes of each, the settings taking turns. Writes OUT (default
# bench/results/allocator_cpu2.md).
# Usage: bash bench/run_allocator_cpu2.sh [BUILD_DIR] [OUT]
#   SETTINGS: "label=ENV ..." pairs separated by ';' (default: the binary as built,
#   which links tcmalloc where it is installed; glibc's malloc, by preloading
#   libc.so.6 ahead of it, with the runtime's mallopt settings as before; and
#   glibc with a single arena); GRAPHS: which graphs.
# Run it on an otherwise idle machine: cpu:N devices need their own cores.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-bench/results/allocator_cpu2.md}
P="$BUILD/placer"
PY=${PLACER_PYTHON:-.venv/bin/python3}
[ -x "$P" ] || { echo "run_allocator_cpu2: $P missing (make build, or name the build folder)" >&2; exit 2; }
LIBC=${LIBC:-/lib/x86_64-linux-gnu/libc.so.6}
SETTINGS=${SETTINGS:-"as built ($("$P" --version | sed -n 's/^malloc: //p'))=;glibc=LD_PRELOAD=$LIBC;glibc, one arena=LD_PRELOAD=$LIBC GLIBC_TUNABLES=glibc.malloc.arena_max=1"}
KNOWN="rnnlm nmt inception_v3 transformer gpt2_export"
GRAPHS=${GRAPHS:-$KNOWN}
for g in $GRAPHS; do
  case " $KNOWN " in *" $g "*) ;;
    *) echo "run_allocator_cpu2: GRAPHS: unknown graph '$g' ($KNOWN)" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$P" graph build rnnlm --opt layers=2 --opt hidden=256 --opt steps=8 --opt batch=32 --opt vocab=2000 -o "$TMP/rnnlm.json" > /dev/null
"$P" graph build nmt --opt layers=2 --opt hidden=192 --opt steps=8 --opt batch=24 --opt vocab=2000 -o "$TMP/nmt.json" > /dev/null
"$P" graph build inception_v3 --opt batch=8 --opt image=96 --opt width_div=4 --opt classes=100 -o "$TMP/inception_v3.json" > /dev/null
"$P" graph build transformer --opt layers=2 --opt dec_layers=2 --opt d_model=256 --opt heads=4 --opt ffn=1024 \
  --opt seq=32 --opt batch=8 --opt vocab=2000 -o "$TMP/transformer.json" > /dev/null
case " $GRAPHS " in *" gpt2_export "*)
  "$PY" bench/export_gpt2.py "$TMP/gpt2.pt2" 8 > /dev/null
  "$P" graph import "$TMP/gpt2.pt2" -o "$TMP/gpt2_export.json" > /dev/null ;;
esac

PICK=(0_single 1_single 2_split 11_blocks 16_random 17_perturbed)
for g in $GRAPHS; do
  # The placements only: one round of one step each, nothing kept but the files.
  "$P" fidelity --graph "$TMP/$g.json" --devices cpu:2 --placements 24 --seed 1 --rounds 1 --warmup 1 --steps 1 \
    --max-steps 1 --repetitions 1 --retakes 0 --save-placements "$TMP/$g.pl" -o "$TMP/$g.fid" > "$TMP/$g.fid.log" 2>&1 ||
    { echo "run_allocator_cpu2: drawing $g's placements failed:" >&2; tail -5 "$TMP/$g.fid.log" >&2; exit 1; }
done

IFS=';' read -r -a SETS <<< "$SETTINGS"
for rep in 1 2 3; do
  for g in $GRAPHS; do
    for i in "${!SETS[@]}"; do
      envs=${SETS[$i]#*=}
      files=()
      for p in "${PICK[@]}"; do files+=("$TMP/$g.pl/$p.json"); done
      echo "== rep $rep $g ${SETS[$i]%%=*} (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      env $envs "$P" measure --graph "$TMP/$g.json" --compare "${files[@]}" --devices cpu:2 --warmup 2 --steps 10 \
        --max-steps 40 --target 0.01 --json "$TMP/$g.$i.$rep.json" > /dev/null
    done
  done
done

{
  echo "# The allocator under measured steps on cpu:2"
  echo
  echo "Command: \`GRAPHS='$GRAPHS' bash bench/run_allocator_cpu2.sh $BUILD\` (commit $(git rev-parse --short HEAD))  "
  echo "Machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Settings (each run a process of its own, the settings taking turns, three processes each):"
  for s in "${SETS[@]}"; do echo "- **${s%%=*}**: \`${s#*=}\`"; done
  echo
  echo "Six placements of each graph (\`placer fidelity --seed 1\`'s draw: single on cpu:0, single on cpu:1, a split,"
  echo "contiguous blocks, random, perturbed), measured interleaved by \`placer measure --compare\` (2 warm-up, 10-40"
  echo "steps, until the median's 95% interval is within 1%). Cells: the three processes' medians, min-max (ms)."
  echo "gap: single on cpu:1 / single on cpu:0 per process (the same work: 1.00 is right). spread: the widest"
  echo "max/min - 1 of a placement's three medians."
  echo
  echo "| graph | setting | single cpu:0 | single cpu:1 | gap | split | blocks | random | perturbed | spread |"
  echo "|---|---|---|---|---|---|---|---|---|---:|"
  "$PY" - "$TMP" "$GRAPHS" "${#SETS[@]}" "$SETTINGS" <<'PY'
import json, sys
d, graphs, n, settings = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4].split(";")
pick = ["0_single", "1_single", "2_split", "11_blocks", "16_random", "17_perturbed"]
for g in graphs:
    for i in range(n):
        runs = []
        for rep in (1, 2, 3):
            res = json.load(open(f"{d}/{g}.{i}.{rep}.json"))["placements"]
            runs.append({r["file"].split("/")[-1][:-5]: r["step_s"] * 1e3 for r in res})
        cell = lambda p: "%.1f-%.1f" % (min(r[p] for r in runs), max(r[p] for r in runs))
        gaps = [r["1_single"] / r["0_single"] for r in runs]
        spread = max(max(r[p] for r in runs) / min(r[p] for r in runs) - 1 for p in pick)
        label = settings[i].split("=", 1)[0]
        print(f"| {g} | {label} | " + " | ".join([cell(pick[0]), cell(pick[1]), "%.2f-%.2f" % (min(gaps), max(gaps))] +
              [cell(p) for p in pick[2:]]) + f" | {100 * spread:.1f}% |")
PY
} > "$OUT"
echo "wrote $OUT" >&2
