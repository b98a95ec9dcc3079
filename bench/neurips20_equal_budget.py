#!/usr/bin/env python3
"""Writes bench/results/neurips20_equal_budget.md from the JSON of
bench/run_neurips20_equal_budget.sh.
  python3 bench/neurips20_equal_budget.py OUT_DIR SEEDS BUDGET SECONDS"""
import datetime
import glob
import json
import os
import re
import statistics
import subprocess
import sys


def rows(out, name, method, seeds):
    """{seed: (dp row, method row)} of NAME.METHOD.SEED.json."""
    got = {}
    for seed in range(1, seeds + 1):
        path = os.path.join(out, f"{name}.{method}.{seed}.json")
        if os.path.exists(path):
            ms = {m["method"]: m for m in json.load(open(path))["methods"]}
            if method in ms and "error" not in ms[method] and ms[method].get("placement") is not None:
                got[seed] = (ms.get("dp"), ms[method])
    return got


def fmt(v):
    return f"{v:.6g}"


def pct(a, b):
    return f"{100.0 * (a - b) / b:+.2f}%"


def main():
    out, seeds, budget, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    names = sorted({re.sub(r"\.(local_search|learned)\.\d+\.json$", "", os.path.basename(p))
                    for p in glob.glob(os.path.join(out, "*.json"))})
    commits = sorted({open(p).read().strip() for p in glob.glob(os.path.join(out, "*.commit"))})
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("# The NeurIPS 2020 yardstick at an equal budget: learned against local_search\n")
    print(f"Command: `bash bench/run_neurips20_equal_budget.sh build ../shared/workloads/dnn-partitioning` "
          f"(SEEDS={seeds}, BUDGET={budget}, SECONDS_CAP={seconds}); runs at commit {', '.join(commits) or '?'}, "
          f"table written at {head}, {datetime.date.today().isoformat()}, on {os.cpu_count()} cores ({cpu}).\n")
    print(f"Each run is `placer baseline --graph W --objective max_load --method dp,M --seed S --budget {budget} "
          f"--time-limit {seconds}`: dp's split warm-starts M, and the budget ends both methods (the time limit is a "
          f"cap that no run reached): learned samples {budget} splits (whole batches of 32: 992), local_search "
          f"evaluates {budget} (its first-improvement descent from dp's split, then from random packings). Both "
          "answer the best feasible split they evaluated, dp's included. Max load in the files' time unit; "
          "median and worst of the seeds; \"policy\" counts the seeds where learned's answer is the policy's own "
          "sample (else it kept dp's split).\n")
    print("| workload | dp | local_search median / worst | learned median / worst | learned vs local_search "
          "(median / worst) | policy | learned time (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    better = worse = tied = 0
    for name in names:
        ls, lr = rows(out, name, "local_search", seeds), rows(out, name, "learned", seeds)
        if not ls or not lr:
            continue
        dp = next(iter(ls.values()))[0]["max_load"]
        a = [r["max_load"] for _, r in ls.values()]
        b = [r["max_load"] for _, r in lr.values()]
        ma, mb = statistics.median(a), statistics.median(b)
        if mb < ma * (1 - 1e-9):
            better += 1
        elif mb > ma * (1 + 1e-9):
            worse += 1
        else:
            tied += 1
        policy = sum(r.get("found_by") == "policy" for _, r in lr.values())
        secs = statistics.median(r["seconds"] for _, r in lr.values())
        kind, stem = name.split("_", 1)
        print(f"| {kind}/{stem} | {fmt(dp)} | {fmt(ma)} / {fmt(max(a))} ({len(a)}) | {fmt(mb)} / {fmt(max(b))} "
              f"({len(b)}) | {pct(mb, ma)} / {pct(max(b), max(a))} | {policy} of {len(b)} | {secs:.1f} s |")
    print(f"\nlearned's median against local_search's at {budget} evaluations: faster on {better}, equal on {tied}, "
          f"slower on {worse} of {better + tied + worse} workloads.\n")


if __name__ == "__main__":
    main()
