"""Would a second mixed step pin the copy cost per byte? (bench/results/fidelity_copy_cost_scan.md)
Scales a fresh profile's mixed step (the per-byte cost is fitted on it) and prints the simulated step of the
random and blocks placements over round robin's, to set beside the same ratios measured interleaved.
Usage: .venv/bin/python3 bench/copy_cost_ratio.py GRAPH.json PROFILE.json ROUND_ROBIN.json PLACEMENTS_DIR [PLACER]
(ROUND_ROBIN.json: `placer place --method round_robin --cluster cpu:2`, the profile's mixed step placement.)
"""
import json, subprocess, sys, os
G, PROF, RR, PL = sys.argv[1:5]
P = sys.argv[5] if len(sys.argv) > 5 else 'build/placer'
TMP = os.environ.get('TMPDIR', '/tmp')
prof0=json.load(open(PROF)); base=prof0['mixed_step']['step_s']
def sim(pl, prof):
    json.dump(prof,open(os.path.join(TMP, 'pr.json'),'w'))
    subprocess.run([P,'simulate','--graph',G,'--placement',pl,'--cluster','cpu:2','--profile',os.path.join(TMP, 'pr.json'),'--json',os.path.join(TMP, 'sr.json')],capture_output=True,check=True)
    return json.load(open(os.path.join(TMP, 'sr.json')))['result']['step_s']
for f in [1.0,1.03,1.06,1.1,1.15,1.2]:
    prof=json.loads(json.dumps(prof0)); prof['mixed_step']['step_s']=base*f
    rr=sim(RR,prof); ra=sim(PL+'/16_random.json',prof); bl=sim(PL+'/11_blocks.json',prof)
    print(f"{G.split('/')[-1]} x{f:.2f}: random/RR {ra/rr:.3f} blocks/RR {bl/rr:.3f}")
