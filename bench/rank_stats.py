"""Rank statistics the fidelity scan scripts share (bench/copy_cost_scan.py, bench/cpu_steps_ab.py)."""
import numpy as np


def spearman(a, b):
    """Spearman's rank correlation (no tie correction: simulated and measured steps rarely tie exactly)."""
    def rank(v):
        order = np.argsort(v)
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        return r
    return float(np.corrcoef(rank(a), rank(b))[0, 1])
