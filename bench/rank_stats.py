"""Rank statistics the bench scripts share, in plain Python: Spearman (the fidelity scans and
bench/fidelity_rerun.py, bench/run_copy_probe.sh), and the two rank tests of `placer measure --compare`
in their normal approximations (bench/run_paired_rounds.sh, bench/paired_estimators.py). The
product's own are in graphs/src/stats.cc. Beside them, the order of the placements `placer fidelity
--save-placements` writes, which the fidelity scans rank against a report's points."""
import json
import math
import os


def ranks(values):
    """Average ranks, 1-based."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def normal_p(z):
    """Two-sided p of a standard normal deviate."""
    return math.erfc(abs(z) / math.sqrt(2))


def tie_term(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sum(c ** 3 - c for c in counts.values())


def mann_whitney(a, b):
    """Two-sided p of the Mann-Whitney U test of a against b (pooled steps), with tie and continuity corrections."""
    n1, n2 = len(a), len(b)
    u = sum(ranks(a + b)[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term(a + b) / (n * (n - 1)))
    return 1.0 if var <= 0 else min(1.0, normal_p(max(0, abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)))


def signed_rank(d):
    """The Wilcoxon signed-rank test of the rounds' differences d (log(b/a) of the rounds that differ) against 0:
    (two-sided p, the null mean and variance of W+), with tie and continuity corrections."""
    n = len(d)
    if n == 0:
        return 1.0, 0.0, 0.0
    r = ranks([abs(x) for x in d])
    w = sum(ri for ri, x in zip(r, d) if x > 0)
    mean = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - tie_term([abs(x) for x in d]) / 48
    p = 1.0 if var <= 0 else min(1.0, normal_p(max(0, abs(w - mean) - 0.5) / math.sqrt(var)))
    return p, mean, var


def spearman(a, b):
    """Spearman's rank correlation, ties given their average rank (a simulator without device scaling prices the two
    single-device placements alike), as the C++ report computes it. NaN when either side is constant."""
    ra, rb = ranks(list(a)), ranks(list(b))
    n = len(ra)
    ma, mb = sum(ra) / n, sum(rb) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    saa = sum((x - ma) ** 2 for x in ra) ** 0.5
    sbb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return sab / (saa * sbb) if saa and sbb else float("nan")


def saved_placements(directory):
    """The placement files `placer fidelity --save-placements` wrote to directory (N_kind.json), in the report's
    order of points; the profiles/ subfolder and anything else not named so is left out."""
    files = (f for f in os.listdir(directory) if f[0].isdigit() and f.endswith(".json"))
    return sorted(files, key=lambda f: int(f.split("_")[0]))


def load_report(f):
    """A fidelity report (an open file), its correlations undefined where the JSON says null (every value tied) read
    as NaN, as spearman() gives them, so that the scripts' arithmetic and formatting need no case of their own."""
    report = json.load(f)
    for key in ("spearman", "retest_spearman"):
        if key in report and report[key] is None:
            report[key] = float("nan")
    return report
