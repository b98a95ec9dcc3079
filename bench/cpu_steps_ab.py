"""Out-of-sample check of the profile's CPU device steps (Profile::cpu_steps; bench/results/fidelity_cpu_steps.md).

A fresh profile of a graph (`placer profile`, which measures each CPU device's step of the graph alone) is used as it
is ("on": the simulator scales each CPU device's ops by its step over the first device's) and without its cpu_steps
("off": every CPU device as fast as the one the ops were timed on). The fidelity's placements (saved by
`placer fidelity --save-placements`, the same graph, seed and count as the committed reports) are simulated with
each, and ranked against the measurements of every committed report of that graph. Nothing measured in those reports
takes part in the profile.

  PLACER GRAPH PROFILE DIR NAME    one markdown row: Spearman off -> on per report, their means, MAPE means

REPORTS (space-separated directory names under bench/results/) replaces the seven reports.

Run from anywhere, e.g. `.venv/bin/python3 bench/cpu_steps_ab.py build/placer nmt.json prof.json pl nmt`.
"""
import json
import os
import subprocess
import sys

import numpy as np

from rank_stats import saved_placements, spearman

HERE = os.path.dirname(os.path.abspath(__file__))
TMP = os.environ.get('TMPDIR', '/tmp')
REPORTS = os.environ.get('REPORTS', 'fidelity_s22_probe fidelity_s22_probe_run2 fidelity_s23_quiet fidelity_s23_retakes '
                         'fidelity_s23_rounds4 fidelity_s23_rounds4_run2 fidelity_s23_rounds4_run3').split()


def simulate(placer, graph, profile_path, placement):
    out = os.path.join(TMP, 'cpu_steps_ab_result.json')
    subprocess.run([placer, 'simulate', '--graph', graph, '--placement', placement, '--cluster', 'cpu:2',
                    '--profile', profile_path, '--json', out], capture_output=True, check=True)
    return json.load(open(out))['result']['step_s']


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    placer, graph, profile_path, directory, name = sys.argv[1:]
    on = json.load(open(profile_path))
    if len(on.get('cpu_steps', [])) < 2:
        sys.exit(f'{profile_path}: no cpu_steps (profile it again with this build)')
    off = dict(on)
    off.pop('cpu_steps')
    off_path = os.path.join(TMP, 'cpu_steps_ab_off.json')
    json.dump(off, open(off_path, 'w'))
    files = saved_placements(directory)
    reports = {}
    for k in REPORTS:
        path = os.path.join(HERE, 'results', k, f'fidelity_{name}.json')
        if os.path.exists(path):
            reports[k] = np.array([p['measured_s'] for p in json.load(open(path))['points']])
    rho, mape = {}, {}
    for label, path in (('off', off_path), ('on', profile_path)):
        sims = np.array([simulate(placer, graph, path, os.path.join(directory, f)) for f in files])
        rho[label] = [spearman(m, sims) for m in reports.values()]
        mape[label] = [float(np.mean(np.abs(sims - m) / m)) * 100 for m in reports.values()]
    steps = ', '.join(f"{s['device']} {s['step_s'] * 1e3:.2f} ms" for s in on['cpu_steps'])
    print(f'| {name} | {steps} | ' + ' | '.join(f'{a:.3f} -> {b:.3f}' for a, b in zip(rho['off'], rho['on'])) +
          f" | {np.mean(rho['off']):.3f} -> {np.mean(rho['on']):.3f} | {np.mean(mape['off']):.1f}% -> "
          f"{np.mean(mape['on']):.1f}% |")


main()
