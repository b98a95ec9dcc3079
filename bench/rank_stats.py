"""Rank statistics the fidelity scan scripts share (bench/copy_cost_scan.py, bench/cpu_steps_ab.py,
bench/recalibrate_fidelity.py)."""
import numpy as np


def spearman(a, b):
    """Spearman's rank correlation, ties given their average rank (a simulator without device scaling prices the two
    single-device placements alike), as the C++ report computes it."""
    def rank(v):
        v = np.asarray(v, dtype=float)
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        _, tie, count = np.unique(v, return_inverse=True, return_counts=True)
        return (np.bincount(tie, weights=r) / count)[tie]
    return float(np.corrcoef(rank(a), rank(b))[0, 1])
