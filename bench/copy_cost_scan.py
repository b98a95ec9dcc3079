"""Out-of-sample checks of the simulator's copy cost between CPU devices (bench/results/fidelity_copy_cost_scan.md).

A fresh profile of a graph is changed, its mixed step scaled (the per-byte copy cost is fitted on it: a longer
step, a higher cost) and, in `alpha`, its links' fixed cost per copy scaled too. The fidelity's placements (saved
by `placer fidelity --save-placements`, the same graph, seed and count as the committed reports) are simulated
with each profile.

  scale PLACER GRAPH PROFILE DIR NAME      Spearman and MAPE against three committed reports, per mixed factor
  alpha PLACER GRAPH PROFILE DIR NAME      mean Spearman per (alpha factor, mixed factor)
  ratio PLACER GRAPH PROFILE DIR RR.json   simulated random and blocks steps over round robin's, per mixed factor

Run from anywhere, e.g. `.venv/bin/python3 bench/copy_cost_scan.py scale build/placer nmt.json prof.json pl nmt`.
"""
import json
import os
import subprocess
import sys

import numpy as np

from rank_stats import saved_placements, spearman

HERE = os.path.dirname(os.path.abspath(__file__))
TMP = os.environ.get('TMPDIR', '/tmp')
REPORTS = ['fidelity_s23_rounds4', 'fidelity_s23_rounds4_run2', 'fidelity_s23_quiet']
MIXED = [1.0, 1.03, 1.06, 1.1, 1.15, 1.2, 1.3]


def changed(profile, mixed=1.0, alpha=1.0):
    p = json.loads(json.dumps(profile))
    p['mixed_step']['step_s'] *= mixed
    for link in p['links']:
        link['alpha_s'] *= alpha
    return p


def simulate(placer, graph, profile, placement):
    prof = os.path.join(TMP, 'copy_cost_scan_profile.json')
    out = os.path.join(TMP, 'copy_cost_scan_result.json')
    json.dump(profile, open(prof, 'w'))
    subprocess.run([placer, 'simulate', '--graph', graph, '--placement', placement, '--cluster', 'cpu:2',
                    '--profile', prof, '--json', out], capture_output=True, check=True)
    return json.load(open(out))['result']['step_s']


def placements(directory):
    return [os.path.join(directory, f) for f in saved_placements(directory)]


def measured(name):
    return {k: np.array([p['measured_s'] for p in json.load(open(os.path.join(HERE, 'results', k,
                                                                             f'fidelity_{name}.json')))['points']])
            for k in REPORTS}


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in ('scale', 'alpha', 'ratio'):
        sys.exit(__doc__)
    mode, placer, graph, profile_path, directory, last = sys.argv[1:]
    profile = json.load(open(profile_path))
    if mode == 'ratio':
        for f in MIXED[:-1]:
            p = changed(profile, f)
            rr = simulate(placer, graph, p, last)
            ra = simulate(placer, graph, p, os.path.join(directory, '16_random.json'))
            bl = simulate(placer, graph, p, os.path.join(directory, '11_blocks.json'))
            print(f'x{f:.2f}: random/RR {ra / rr:.3f} blocks/RR {bl / rr:.3f}')
        return
    files = placements(directory)
    reports = measured(last)
    grid = [(1.0, m) for m in MIXED] if mode == 'scale' else [(a, m) for a in (1, 3, 10, 30) for m in (1.0, 1.05, 1.1)]
    for alpha, mixed in grid:
        sims = np.array([simulate(placer, graph, changed(profile, mixed, alpha), f) for f in files])
        rhos = {k: spearman(m, sims) for k, m in reports.items()}
        mape = {k: float(np.mean(np.abs(sims - m) / m)) * 100 for k, m in reports.items()}
        if mode == 'scale':
            print(f'mixed x{mixed:.2f}: ' + '; '.join(f'{k}: rho {rhos[k]:.3f} mape {mape[k]:.1f}%' for k in REPORTS))
        else:
            print(f'alpha x{alpha:>2} mixed x{mixed:.2f}: rho ' + ' / '.join(f'{rhos[k]:.3f}' for k in REPORTS) +
                  f'  mean {np.mean(list(rhos.values())):.3f}')


main()
