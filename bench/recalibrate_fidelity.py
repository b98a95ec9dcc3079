#!/usr/bin/env python3
"""Other calibrations of the simulator on a fidelity run's own measurements, simulating nothing twice by hand.

`bench/run_fidelity.sh` with KEEP=DIR keeps each graph's graph file, placements and profiles
(DIR/<graph>/graph.json, DIR/<graph>/<index>_<kind>.json, DIR/<graph>/profiles/{mean,round_<k>}.json). This
script simulates every placement again with `placer simulate`, on profiles derived from those, and ranks each
simulator against the report's measured steps (Spearman, MAPE), side by side:

  report        the rounds' mean profile (mean_profile), copy cost fitted per byte (what the report gives; a check)
  per_copy      the same, fitted per copy (--copy-per-copy; the report's per-copy column)
  no_fit        the mean profile without its mixed step: no copy cost fitted
  round_<k>     round k's profile alone
  quiet_mixed   the mean op times, the mixed step (and probe) of the round whose probe read the lowest
  min_mixed     the mean op times, the fastest round's mixed step
  median_steps  the mean profile, each CPU device's step the rounds' median (one spell round moves a mean)
  median_ratio  the mean profile, each CPU device's step over the first's the median of the rounds' ratios
  mean_steps    the mean profile, each CPU device's step the rounds' mean (mean_profile before 22c5e23)
  median_all    the rounds' median for op times, the mixed step and the CPU device steps
  unanchored    the mean profile, its op times as timed on the first CPU device and the other CPU devices scaled by
                their step over its step (before the thirty-sixth session: the device steps were not an anchor, and
                the mixed step's copy cost took up the timed ops' shortfall against the whole step)

Usage: .venv/bin/python3 bench/recalibrate_fidelity.py PLACER KEEP_DIR REPORT_DIR [--graphs g1,g2] [--json OUT.json]
Prints a markdown table (one row per graph, one column per calibration) and the fitted copy costs.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from rank_stats import load_report, saved_placements, spearman


def mape(measured, simulated):
    return sum(abs(s - m) / m for m, s in zip(measured, simulated)) / len(measured)


def simulate(placer, graph, placement, profile, per_copy, tmp):
    out = os.path.join(tmp, "sim.json")
    cmd = [placer, "simulate", "--graph", graph, "--placement", placement, "--cluster", "cpu:2", "--profile", profile,
           "--no-memory", "--json", out]
    if per_copy:
        cmd.append("--copy-per-copy")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        r = json.load(f)
    return r["result"]["step_s"], r["copy_s_per_byte"], r["copy_s_per_copy"]


def variants(keep, placer, tmp):
    """(name, profile dict, per_copy) for each calibration tried."""
    pdir = os.path.join(keep, "profiles")
    with open(os.path.join(pdir, "mean.json")) as f:
        mean = json.load(f)
    rounds = []
    k = 1
    while os.path.exists(os.path.join(pdir, "round_%d.json" % k)):
        with open(os.path.join(pdir, "round_%d.json" % k)) as f:
            rounds.append(json.load(f))
        k += 1
    out = [("report", mean, False), ("per_copy", mean, True)]
    no_fit = copy.deepcopy(mean)
    no_fit.pop("mixed_step", None)
    out.append(("no_fit", no_fit, False))
    for k, r in enumerate(rounds, 1):
        out.append(("round_%d" % k, r, False))
    mixed = [r for r in rounds if "mixed_step" in r]
    if mixed and "mixed_step" in mean:
        probed = [r for r in mixed if r["mixed_step"].get("core_rtt_s")]
        if probed:
            quiet = copy.deepcopy(mean)
            quiet["mixed_step"] = min(probed, key=lambda r: r["mixed_step"]["core_rtt_s"])["mixed_step"]
            out.append(("quiet_mixed", quiet, False))
        fastest = copy.deepcopy(mean)
        fastest["mixed_step"] = min(mixed, key=lambda r: r["mixed_step"]["step_s"])["mixed_step"]
        out.append(("min_mixed", fastest, False))
    if len(rounds) >= 3:
        steps = copy.deepcopy(mean)
        steps["cpu_steps"] = pooled_cpu_steps(mean, rounds, np.median)
        out.append(("median_steps", steps, False))
        ratio = copy.deepcopy(mean)
        ratio["cpu_steps"] = median_step_ratios(mean, rounds)
        out.append(("median_ratio", ratio, False))
        steps = copy.deepcopy(mean)
        steps["cpu_steps"] = pooled_cpu_steps(mean, rounds, np.mean)
        out.append(("mean_steps", steps, False))
        out.append(("median_all", median_profile(mean, rounds), False))
    unanchored = unanchored_profile(mean, keep, placer, tmp)
    if unanchored is not None:
        out.append(("unanchored", unanchored, False))
    return out


def unanchored_profile(mean, keep, placer, tmp):
    """The mean profile whose device steps, taken as an anchor (CostModel::calibrated since the thirty-sixth
    session), give what they gave before: the CPU device the ops were timed on as timed (its step set to the
    simulated single-device step there), the others scaled by their step over its step. None: no device steps."""
    steps = mean.get("cpu_steps", [])
    timed_on = next((o["device"] for o in mean["ops"] if o.get("device_kind", o["device"].split(":")[0]) == "cpu"), None)
    base = next((s["step_s"] for s in steps if s["device"] == timed_on), 0)
    singles = sorted(f for f in os.listdir(keep) if f[0].isdigit() and f.endswith("_single.json"))
    if len(steps) < 2 or not base or not singles:
        return None
    with open(os.path.join(keep, singles[0])) as f:
        placement = json.load(f)
    placement["placement"] = {op: timed_on for op in placement["placement"]}
    ppath, bpath = os.path.join(tmp, "single_timed_on.json"), os.path.join(tmp, "bare_profile.json")
    with open(ppath, "w") as f:
        json.dump(placement, f)
    bare = copy.deepcopy(mean)
    bare.pop("cpu_steps")
    with open(bpath, "w") as f:
        json.dump(bare, f)
    timed, _, _ = simulate(placer, os.path.join(keep, "graph.json"), ppath, bpath, False, tmp)
    out = copy.deepcopy(mean)
    for s in out["cpu_steps"]:
        s["step_s"] *= timed / base
    return out


def pooled_cpu_steps(mean, rounds, pool):
    """Each CPU device's step alone, pooled over the rounds: np.mean (mean_profile before the thirty-fifth session)
    or np.median (one spell round moves a mean)."""
    out = copy.deepcopy(mean.get("cpu_steps", []))
    for d in out:
        d["step_s"] = pool([s["step_s"] for r in rounds for s in r.get("cpu_steps", []) if s["device"] == d["device"]])
    return out


def median_step_ratios(mean, rounds):
    """Each CPU device's step over the first's, the median over the rounds of that round's ratio (a round measures
    the devices interleaved, so its ratio cancels the round's drift), times the first device's mean step."""
    out = copy.deepcopy(mean.get("cpu_steps", []))
    if len(out) < 2:
        return out
    first = out[0]["device"]
    for d in out[1:]:
        ratios = []
        for r in rounds:
            steps = {s["device"]: s["step_s"] for s in r.get("cpu_steps", [])}
            if steps.get(first, 0) > 0 and d["device"] in steps:
                ratios.append(steps[d["device"]] / steps[first])
        if ratios:
            d["step_s"] = out[0]["step_s"] * np.median(ratios)
    return out


def median_profile(mean, rounds):
    """The rounds' median instead of their mean: op times, the mixed step and the CPU device steps."""
    out = copy.deepcopy(mean)
    by_op = {}
    for r in rounds:
        for t in r["ops"]:
            by_op.setdefault((t["op"], t["device"]), []).append(t)
    for t in out["ops"]:
        ts = by_op.get((t["op"], t["device"]), [])
        if ts:
            t["seconds"] = np.median([x["seconds"] for x in ts])
            c = [x["contended_seconds"] for x in ts if x.get("contended_seconds", 0) > 0]
            if c:
                t["contended_seconds"] = np.median(c)
    mixed = [r["mixed_step"]["step_s"] for r in rounds if "mixed_step" in r]
    if mixed and "mixed_step" in out:
        out["mixed_step"]["step_s"] = np.median(mixed)
    out["cpu_steps"] = pooled_cpu_steps(mean, rounds, np.median)
    return out


def print_table(results, names, cell):
    """A markdown table: a row per graph, a column per calibration, cell(name, figures) in each."""
    print("| graph | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for g, r in results.items():
        cs = r["calibrations"]
        print("| %s | %s |" % (g, " | ".join(cell(n, cs[n]) if n in cs else "" for n in names)))


def kept_run(a, g):
    """Graph g's kept folder, its report and its placement files in the report's order; None, said why on stderr,
    when it cannot be recalibrated."""
    keep = os.path.join(a.keep, g)
    if not os.path.exists(os.path.join(keep, "profiles", "mean.json")):
        print("%s: no %s (not kept with KEEP=DIR, or made before profiles were kept), skipped" %
              (g, os.path.join(keep, "profiles", "mean.json")), file=sys.stderr)
        return None
    report_path = os.path.join(a.reports, "fidelity_%s.json" % g)
    if not os.path.exists(report_path):
        print("%s: no report %s, skipped" % (g, report_path), file=sys.stderr)
        return None
    with open(report_path) as f:
        report = load_report(f)
    if report.get("failed", 0):
        print("%s: %d placements failed; the points cannot be matched to the files, skipped" %
              (g, report["failed"]), file=sys.stderr)
        return None
    files = saved_placements(keep)
    if len(files) != len(report["points"]):
        print("%s: %d placements kept, %d in the report: skipped" % (g, len(files), len(report["points"])),
              file=sys.stderr)
        return None
    return keep, report, files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("placer")
    ap.add_argument("keep", help="KEEP directory of bench/run_fidelity.sh")
    ap.add_argument("reports", help="the run's output directory (fidelity_<graph>.json)")
    ap.add_argument("--graphs", default="", help="comma-separated graph names (default: every one kept)")
    ap.add_argument("--json", default="", help="also write every figure here")
    ap.add_argument("--only", default="", help="comma-separated calibrations to run (default: all; report is always run)")
    a = ap.parse_args()
    graphs = a.graphs.split(",") if a.graphs else sorted(
        g for g in os.listdir(a.keep) if os.path.isdir(os.path.join(a.keep, g)))
    results = {}
    names = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in graphs:
            kept = kept_run(a, g)
            if kept is None:
                continue
            keep, report, files = kept
            points = report["points"]
            measured = [p["measured_s"] for p in points]
            row = {}
            only = set(a.only.split(",")) | {"report"} if a.only else None
            for name, profile, per_copy in variants(keep, a.placer, tmp):
                if only is not None and name not in only:
                    continue
                ppath = os.path.join(tmp, "profile.json")
                with open(ppath, "w") as f:
                    json.dump(profile, f)
                sims = []
                fit = (0.0, 0.0)
                for pl in files:
                    step, per_byte, per_copy_s = simulate(a.placer, os.path.join(keep, "graph.json"),
                                                          os.path.join(keep, pl), ppath, per_copy, tmp)
                    sims.append(step)
                    fit = (per_byte, per_copy_s)
                row[name] = {"spearman": spearman(measured, sims), "mape": mape(measured, sims),
                             "copy_s_per_byte": fit[0], "copy_s_per_copy": fit[1],
                             "core_rtt_s": profile.get("mixed_step", {}).get("core_rtt_s"), "simulated_s": sims}
                if name not in names:
                    names.append(name)
            if abs(row["report"]["spearman"] - report["spearman"]) > 1e-3:
                print("%s: the report's calibration gives Spearman %.3f here, %.3f in the report" %
                      (g, row["report"]["spearman"], report["spearman"]), file=sys.stderr)
            per_copy = [p.get("simulated_per_copy_s") for p in points]
            if "per_copy" in row and all(per_copy) and max(abs(s / w - 1) for s, w in zip(row["per_copy"]["simulated_s"], per_copy)) > 1e-6:
                print("%s: --copy-per-copy does not give the report's per-copy steps" % g, file=sys.stderr)
            results[g] = {"measured_s": measured, "retest_spearman": report.get("retest_spearman"),
                          "calibrations": row}
    if not results:
        sys.exit("recalibrate_fidelity: no graph in %s could be recalibrated (see above)" % a.keep)
    print_table(results, names, lambda n, c: "%.3f / %.1f%%" % (c["spearman"], 100 * c["mape"]))
    print("\nCopy cost fitted (ms per MB, or us a copy; the mixed step's probe in ns):\n")
    print_table(results, names, lambda n, c: (
        ("%.1f us" % (c["copy_s_per_copy"] * 1e6)) if n == "per_copy" else "%.3f" % (c["copy_s_per_byte"] * 1e9)) + (
        " (%.0f ns)" % (c["core_rtt_s"] * 1e9) if c["core_rtt_s"] else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
