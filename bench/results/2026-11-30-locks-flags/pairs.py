#!/usr/bin/env python3
# pairs.py: new/old per launch pair of ab.sh's files (ab_locks_single*.txt), pairs whose two
# launches ran in the same VM phase only (ratio within 0.8-1.25; the slow phase is ~3.5x)
import glob, os, statistics
os.chdir(os.path.dirname(os.path.abspath(__file__)))
allr = {'none': [], 'timer': []}
for f in sorted(glob.glob('ab_locks_single*.txt')):
    d = {}
    for line in open(f):
        i, lev, lib, agg, allc, last = line.split()
        d.setdefault((agg, i), {})[lib] = float(allc)
    for agg in ('none', 'timer'):
        rs = [v['new'] / v['old'] for (a, i), v in d.items() if a == agg and len(v) == 2]
        same = [r for r in rs if 0.8 < r < 1.25]
        allr[agg] += same
        print(f'{f:28s} {agg:5s} pairs {len(rs)} same phase {len(same)} '
              f'median new/old {statistics.median(same):.3f}')
for agg, r in allr.items():
    q = statistics.quantiles(r, n=4)
    print(f'all {agg:5s} {len(r)} pairs: median {statistics.median(r):.3f}, '
          f'quartiles {q[0]:.3f}-{q[2]:.3f}')
