#!/usr/bin/env python3
"""The whole measurement again: two or more runs of bench/run_fidelity.sh set against each other.

`placer fidelity` reports how its rounds agree (round 1 against round 2, each a quarter of a four-round run's steps).
The same placements measured by a second run of the whole protocol, an hour or a day later, is the other reading of
"measured against re-measured": it says whether a user who measures again gets the same ranking. Two runs of
bench/run_fidelity.sh with the same graphs, seed and --placements measure the same placements (the placements
depend on the graph and the seed only); this script checks that they do (each point's kind and bytes moved, in
order) and prints, per graph and pair of runs:
- the measurement against itself: run against run (each run's four rounds pooled), and round 1 against round 2 within
  each run (the report's own figure; "n/a" for a run of one round, whose report has none);
- the simulator: each run's own Spearman and MAPE, and each run's simulation against both runs' measurements
  together (the geometric mean of each placement's two measured steps, each taken relative to its run's median, at
  the level of the run whose simulator is scored: a run measured on a slower evening does not weigh more, and each
  simulator is held to the level of the profile it was calibrated on).

With --cross: per graph, every run against every run, the simulators included (runs on other days: does the
ranking hold from one day to the next, and does each day's calibration follow its own day's?).

Usage: python3 bench/fidelity_rerun.py RUN_DIR RUN_DIR [RUN_DIR ...] [--names A,B,...] [--cross] [--out F.md]
  RUN_DIR: a folder of fidelity_<graph>.json reports (run_fidelity.sh's OUT).
"""
import argparse
import glob
import itertools
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_stats import load_report, spearman  # noqa: E402


def load(run_dir):
    reports = {}
    for f in sorted(glob.glob(os.path.join(run_dir, "fidelity_*.json"))):
        with open(f) as fh:
            r = load_report(fh)
        if "points" in r and "retest_spearman" in r:
            reports[os.path.basename(f)[len("fidelity_"):-len(".json")]] = r
    return reports


def same_placements(a, b):
    key = lambda r: [(p["kind"], p.get("transfer_bytes")) for p in r["points"]]
    return key(a) == key(b)


def mape(measured, simulated):
    return statistics.mean(abs(s - m) / m for m, s in zip(measured, simulated))


def both_runs(a, b, level_of):
    """Each placement's two measured steps as one: the geometric mean of each relative to its run's median, at the
    median level of run `level_of` (a or b), the level that run's simulator was calibrated at."""
    ma = [p["measured_s"] for p in a["points"]]
    mb = [p["measured_s"] for p in b["points"]]
    la, lb = statistics.median(ma), statistics.median(mb)
    level = statistics.median([p["measured_s"] for p in level_of["points"]])
    return [level * ((x / la) * (y / lb)) ** 0.5 for x, y in zip(ma, mb)]


def rows(runs, names):
    out = []
    graphs = sorted(set().union(*[set(r) for r in runs]))
    for g in graphs:
        for (i, a), (j, b) in itertools.combinations(enumerate(runs), 2):
            if g not in a or g not in b:
                continue
            ra, rb = a[g], b[g]
            if not same_placements(ra, rb):
                out.append({"graph": g, "runs": (names[i], names[j]), "same": False})
                continue
            ma = [p["measured_s"] for p in ra["points"]]
            mb = [p["measured_s"] for p in rb["points"]]
            sa = [p["simulated_s"] for p in ra["points"]]
            sb = [p["simulated_s"] for p in rb["points"]]
            ba, bb = both_runs(ra, rb, ra), both_runs(ra, rb, rb)
            out.append({
                "graph": g, "runs": (names[i], names[j]), "same": True, "placements": len(ma),
                "rerun": spearman(ma, mb),
                "rounds": (ra["retest_spearman"], rb["retest_spearman"]),
                "sim_own": ((ra["spearman"], ra["mape"]), (rb["spearman"], rb["mape"])),
                "sim_both": ((spearman(sa, ba), mape(ba, sa)), (spearman(sb, bb), mape(bb, sb))),
            })
    return out


def markdown(table):
    f3 = lambda x: f"{x:.3f}"
    bold = lambda s, ok: f"**{s}**" if ok else s
    lines = ["| graph | runs | run against run (the whole measurement again) | round 1 vs 2 within each | "
             "simulator: each run's own (Spearman / MAPE) | each run's simulation against both runs' measurements |",
             "|---|---|---:|---|---|---|"]
    met = total = 0
    for r in table:
        if not r["same"]:
            lines.append(f"| {r['graph']} | {r['runs'][0]} / {r['runs'][1]} | not the same placements | | | |")
            continue
        total += 1
        met += r["rerun"] >= 0.9
        own = ", ".join(bold(f"{f3(s)} / {100 * m:.1f}%", s >= 0.9 and m <= 0.1) for s, m in r["sim_own"])
        bth = ", ".join(bold(f"{f3(s)} / {100 * m:.1f}%", s >= 0.9 and m <= 0.1) for s, m in r["sim_both"])
        rounds = ", ".join("n/a" if x is None else bold(f3(x), x >= 0.9) for x in r["rounds"])  # None: one round
        lines.append(f"| {r['graph']} | {r['runs'][0]} / {r['runs'][1]} | {bold(f3(r['rerun']), r['rerun'] >= 0.9)} | "
                     f"{rounds} | {own} | {bth} |")
    lines.append("")
    lines.append(f"Run against run at 0.9 or more: {met} of {total} pairs. Bold: a target met (Spearman >= 0.9; "
                 f"with MAPE <= 10% for the simulator).")
    return "\n".join(lines)


def cross(runs, names):
    """Per graph: every run's measurement against every other's, and every run's simulation against every run's
    measurement (rows: the simulator of that run; columns: the measurement of that run)."""
    lines = []
    graphs = sorted(set.intersection(*[set(r) for r in runs]))
    for g in graphs:
        if not all(same_placements(runs[0][g], r[g]) for r in runs[1:]):
            lines += [f"{g}: not the same placements in every run", ""]
            continue
        measured = [[p["measured_s"] for p in r[g]["points"]] for r in runs]
        simulated = [[p["simulated_s"] for p in r[g]["points"]] for r in runs]
        head = "| " + g + " | " + " | ".join(f"measured {n}" for n in names) + " |"
        lines += [head, "|---|" + "---:|" * len(names)]
        for i, n in enumerate(names):
            lines.append(f"| measured {n} | " + " | ".join(
                "" if i == j else f"{spearman(measured[i], m):.3f}" for j, m in enumerate(measured)) + " |")
        for i, n in enumerate(names):
            lines.append(f"| simulated {n} | " + " | ".join(
                f"**{spearman(simulated[i], m):.3f}**" if i == j else f"{spearman(simulated[i], m):.3f}"
                for j, m in enumerate(measured)) + " |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="folders of fidelity_<graph>.json reports")
    ap.add_argument("--out", help="write the markdown table here as well")
    ap.add_argument("--cross", action="store_true",
                    help="instead: per graph, every run against every run (measured against measured, and each run's "
                         "simulation against each run's measurement; bold: a simulator against its own run)")
    ap.add_argument("--names", help="comma-separated short names of the runs, in order (default: the folders)")
    a = ap.parse_args()
    if len(a.runs) < 2:
        ap.error("needs two or more run folders")
    runs = [load(d) for d in a.runs]
    for d, r in zip(a.runs, runs):
        if not r:
            ap.error(f"{d}: no fidelity_<graph>.json report with points and retest_spearman")
    names = a.names.split(",") if a.names else [os.path.normpath(d) for d in a.runs]
    if len(names) != len(runs):
        ap.error(f"--names: {len(names)} names for {len(runs)} runs")
    text = cross(runs, names) if a.cross else markdown(rows(runs, names))
    print(text)
    if a.out:
        open(a.out, "w").write(text + "\n")


if __name__ == "__main__":
    main()
