#!/usr/bin/env python3
"""Paired-by-round estimators side by side on `placer measure --compare --json` files.

For every pair of placements in every file: the median of the rounds' ratios with its
order-statistic 95% interval (what `paired_rounds` reported until the thirty-third session)
and the Hodges-Lehmann ratio with the Wilcoxon signed-rank test inverted as its interval
(what it reports since), each against the signed-rank p (normal approximation, as the
product uses above 50 rounds). Says where an interval and the test disagree.
Usage: python3 bench/paired_estimators.py runs/bench_paired_rounds/compare_*.json
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_stats import signed_rank  # noqa: E402


def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def hodges_lehmann(d, mean, var):
    walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    m, k = len(walsh), 0
    while k + 1 <= (m + 1) // 2 and normal_cdf((k + 0.5 - mean) / math.sqrt(var)) <= 0.025:
        k += 1
    return math.exp(statistics.median(walsh)), math.exp(walsh[k - 1]), math.exp(walsh[m - k])


def median_ratio(ratios):
    v, n, k = sorted(ratios), len(ratios), 0
    for c in range(1, (n + 1) // 2 + 1):
        if normal_cdf((c - 1 + 0.5 - n / 2) / math.sqrt(n / 4)) > 0.025:
            break
        k = c
    return statistics.median(v), v[k - 1], v[n - k]


def main(files):
    old_bad = new_bad = pairs = 0
    print("| file | b vs a | p | median ratio [95%] | Hodges-Lehmann [95%] |")
    print("|---|---|---:|---|---|")
    for f in files:
        ps = json.load(open(f))["placements"]
        for i in range(len(ps)):
            for j in range(i + 1, len(ps)):
                a, b = ps[i]["samples_s"], ps[j]["samples_s"]
                d = [math.log(y / x) for x, y in zip(a, b) if x != y]
                if len(d) < 51:
                    continue  # the product's test is exact there; this script reads the normal approximation only
                p, mean, var = signed_rank(d)
                m, lo, hi = median_ratio([y / x for x, y in zip(a, b)])
                h, hlo, hhi = hodges_lehmann(d, mean, var)
                old = (p < 0.05) != (lo > 1 or hi < 1)
                new = (p < 0.05) != (hlo > 1 or hhi < 1)
                pairs += 1
                old_bad += old
                new_bad += new
                name = lambda q: q["file"].rsplit("/", 1)[-1]
                pct = lambda x: f"{100 * (x - 1):+.2f}%"
                print(f"| {f.rsplit('/', 1)[-1]} | {name(ps[j])} vs {name(ps[i])} | {p:.2g} | {pct(m)} [{pct(lo)}, {pct(hi)}]"
                      f"{' **disagrees**' if old else ''} | {pct(h)} [{pct(hlo)}, {pct(hhi)}]{' **disagrees**' if new else ''} |")
    print(f"\n{pairs} pairs: the median ratio's interval disagrees with the test on {old_bad}, Hodges-Lehmann's on {new_bad}")


if __name__ == "__main__":
    main(sys.argv[1:])
