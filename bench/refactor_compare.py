# Compares two output folders of bench/refactor_equivalence.sh, ignoring wall-time
# fields: python3 bench/refactor_compare.py BEFORE AFTER (exit 1 on any difference).
import json, sys, os, csv, re
a, b = sys.argv[1], sys.argv[2]
bad = 0
def load(p):
    with open(p) as f: return json.load(f)
def strip(x):
    # drop wall-time fields, and how each result was made (its command names its own output folder; the version)
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items()
                if k not in ('command', 'placer') and not re.search(r'(seconds|time|_at|wall|elapsed|per_second|place_s)', k)}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
for f in sorted(os.listdir(a)):
    pa, pb = os.path.join(a, f), os.path.join(b, f)
    if f.endswith('.json'):
        if not os.path.exists(pb): print('MISSING', f); bad += 1; continue
        ja, jb = strip(load(pa)), strip(load(pb))
        if ja != jb:
            bad += 1; print('DIFF', f)
            sa, sb = json.dumps(ja, indent=1).splitlines(), json.dumps(jb, indent=1).splitlines()
            import difflib
            print('\n'.join(list(difflib.unified_diff(sa, sb, lineterm='', n=1))[:30]))
        else: print('same', f)
ta, tb = os.path.join(a, 'train_nmt'), os.path.join(b, 'train_nmt')
for f in ['summary.json', 'best_placement.json', 'warm_start_placement.json']:
    ja, jb = strip(load(os.path.join(ta, f))), strip(load(os.path.join(tb, f)))
    print('same' if ja == jb else 'DIFF', 'train/' + f); bad += ja != jb
def rows(p):
    r = list(csv.DictReader(open(p)))
    return [{k: v for k, v in x.items() if not re.search(r'(seconds|time|wall|per_s|elapsed)', k)} for x in r]
ra, rb = rows(os.path.join(ta, 'train.csv')), rows(os.path.join(tb, 'train.csv'))
print('same' if ra == rb else 'DIFF', 'train/train.csv', len(ra), len(rb)); bad += ra != rb
print('BAD', bad)
sys.exit(1 if bad else 0)
