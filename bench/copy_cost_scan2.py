"""The copy cost's per-copy term scanned beside its per-byte term (bench/results/fidelity_copy_cost_scan.md):
the links' alpha_s scaled by 1-30 and the mixed step by 1.00-1.10 in a fresh profile (the per-byte cost is then
fitted on the scaled step), the saved placements simulated with each and ranked against three committed reports.
Usage (from the repository root):
  .venv/bin/python3 bench/copy_cost_scan2.py GRAPH.json PROFILE.json PLACEMENTS_DIR NAME
"""
import json, subprocess, sys, os
import numpy as np
GRAPH, PROFILE, DIR, NAME = sys.argv[1:5]
P='build/placer'
def rank(a):
    o=np.argsort(a); r=np.empty(len(a)); r[o]=np.arange(len(a)); return r
def sp(a,b): return np.corrcoef(rank(a),rank(b))[0,1]
prof0=json.load(open(PROFILE))
files=sorted(os.listdir(DIR), key=lambda f:int(f.split('_')[0]))
reports=[json.load(open(f'bench/results/{k}/fidelity_{NAME}.json')) for k in ['fidelity_s23_rounds4','fidelity_s23_rounds4_run2','fidelity_s23_quiet']]
for am in [1,3,10,30]:
  for mf in [1.0,1.05,1.1]:
    prof=json.loads(json.dumps(prof0))
    for l in prof['links']: l['alpha_s']*=am
    prof['mixed_step']['step_s']*=mf
    json.dump(prof,open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'p2.json'),'w'))
    sims=[]
    for fn in files:
        subprocess.run([P,'simulate','--graph',GRAPH,'--placement',os.path.join(DIR,fn),'--cluster','cpu:2','--profile',os.path.join(os.environ.get('TMPDIR', '/tmp'), 'p2.json'),'--json',os.path.join(os.environ.get('TMPDIR', '/tmp'), 's2.json')],capture_output=True,check=True)
        sims.append(json.load(open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 's2.json')))['result']['step_s'])
    sims=np.array(sims)
    rhos=[sp(np.array([p['measured_s'] for p in r['points']]),sims) for r in reports]
    print(f"{NAME} alpha x{am:>2} mixed x{mf:.2f}: rho {' / '.join('%.3f'%x for x in rhos)}  mean {np.mean(rhos):.3f}")
