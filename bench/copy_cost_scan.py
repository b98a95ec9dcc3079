"""Out-of-sample check of the simulator's copy cost (bench/results/fidelity_copy_cost_scan.md).

Scales the mixed step of a fresh profile (PROFILE; the copy cost per byte is fitted on it, so a longer step
means a higher cost), simulates the saved placements (DIR, from `placer fidelity --save-placements` with the
same graph, seed and count) with each, and ranks them against the measured steps of committed fidelity
reports of the same graph and placements. Usage:
  .venv/bin/python3 bench/copy_cost_scan.py GRAPH.json PROFILE.json DIR GRAPH_NAME [PLACER]
"""
import json, subprocess, sys, os
import numpy as np
GRAPH, PROFILE, DIR, NAME = sys.argv[1:5]
P = sys.argv[5] if len(sys.argv) > 5 else 'build/placer'
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
def rank(a):
    o=np.argsort(a); r=np.empty(len(a)); r[o]=np.arange(len(a)); return r
def sp(a,b): return np.corrcoef(rank(a),rank(b))[0,1]
prof=json.load(open(PROFILE))
base=prof['mixed_step']['step_s']
files=sorted(os.listdir(DIR), key=lambda f:int(f.split('_')[0]))
reports={k:json.load(open(os.path.join(RESULTS, k, f'fidelity_{NAME}.json'))) for k in ['fidelity_s23_rounds4','fidelity_s23_rounds4_run2','fidelity_s23_quiet']}
scratch=os.environ.get('TMPDIR','/tmp')
for f in [1.0,1.03,1.06,1.1,1.15,1.2,1.3]:
    prof['mixed_step']['step_s']=base*f
    json.dump(prof,open(os.path.join(scratch,'p_scan.json'),'w'))
    sims=[]
    for fn in files:
        subprocess.run([P,'simulate','--graph',GRAPH,'--placement',os.path.join(DIR,fn),'--cluster','cpu:2','--profile',os.path.join(scratch,'p_scan.json'),'--json',os.path.join(scratch,'s_scan.json')],capture_output=True,check=True)
        sims.append(json.load(open(os.path.join(scratch,'s_scan.json')))['result']['step_s'])
    sims=np.array(sims)
    line=[]
    for k,r in reports.items():
        m=np.array([p['measured_s'] for p in r['points']])
        line.append(f"{k[-12:]}: rho {sp(m,sims):.3f} mape {np.mean(np.abs(sims-m)/m)*100:.1f}%")
    print(f"mixed step x{f:.2f} ({base*f*1e3:.1f} ms):", '; '.join(line))
