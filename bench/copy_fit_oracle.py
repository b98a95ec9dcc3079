#!/usr/bin/env python3
"""How well could any copy cost have ranked a fidelity report's placements? An upper bound, from the report alone.

A fidelity report (placer fidelity, fidelity_<graph>.json) gives for each placement its measured step and three
simulated ones: without the copy cost fitted on the profile's mixed step (simulated_unfitted_s), with it fitted per
byte (simulated_s) and per copy (simulated_per_copy_s). Taking each placement's simulated step as linear in the two
costs (U + a * (S - U) + b * (C - U), a and b the multiples of the fitted costs; exact for placements whose copies do
not change the critical path), this script scans a and b on a log grid and prints, per report, the Spearman of the
fitted simulator against the best any per-byte multiple, any per-copy multiple, or any pair of both could reach on
the same measurements. The best multiple is chosen on the measurements it is scored on: an upper bound, not a
calibration. Where "both" is no better than "per byte", a second copy parameter fitted on more mixed steps cannot
help; where the best multiple is far from 1, the fit itself is what misses.

Usage: .venv/bin/python3 bench/copy_fit_oracle.py REPORT.json [REPORT.json ...]
"""
import argparse
import json
import sys

import numpy as np

from rank_stats import load_report, spearman


def oracle(report):
    points = report["points"]
    if not all("simulated_unfitted_s" in p and "simulated_per_copy_s" in p for p in points):
        return None
    m = [p["measured_s"] for p in points]
    u = np.array([p["simulated_unfitted_s"] for p in points])
    d_byte = np.array([p["simulated_s"] for p in points]) - u
    d_copy = np.array([p["simulated_per_copy_s"] for p in points]) - u
    grid = np.concatenate([[0.0], np.geomspace(0.05, 20, 60)])
    best = {"per_byte": (-2.0, 0.0), "per_copy": (-2.0, 0.0), "both": (-2.0, (0.0, 0.0))}
    for a in grid:
        for b in grid:
            s = spearman(m, list(u + a * d_byte + b * d_copy))
            if s > best["both"][0]:
                best["both"] = (s, (a, b))
            if b == 0 and s > best["per_byte"][0]:
                best["per_byte"] = (s, a)
            if a == 0 and s > best["per_copy"][0]:
                best["per_copy"] = (s, b)
    return {"fitted": report["spearman"], "no_fit": spearman(m, list(u)), **best}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    a = ap.parse_args()
    print("| report | fitted per byte | no copy cost | best per-byte multiple | best per-copy multiple | best of both |")
    print("|---|---:|---:|---:|---:|---:|")
    shown = 0
    for path in a.reports:
        with open(path) as f:
            r = oracle(load_report(f))
        if r is None:
            print("%s: no simulated_unfitted_s / simulated_per_copy_s (made before the thirty-fourth session, or nothing fitted), skipped"
                  % path, file=sys.stderr)
            continue
        shown += 1
        ab = r["both"][1]
        print("| %s | %.3f | %.3f | %.3f (x%.2f) | %.3f (x%.2f) | %.3f (x%.2f, x%.2f) |" % (
            path, r["fitted"], r["no_fit"], r["per_byte"][0], r["per_byte"][1], r["per_copy"][0], r["per_copy"][1],
            r["both"][0], ab[0], ab[1]))
    if not shown:
        sys.exit("copy_fit_oracle: none of the reports has the columns it needs")


if __name__ == "__main__":
    main()
