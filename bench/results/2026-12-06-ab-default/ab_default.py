#!/usr/bin/env python3
"""ab_default.py results.csv: the ab-default rows of bench/run.sh (the default layout and
fixed MPIR_CVAR_PART_AGGR_SIZE values in one process, iteration by iteration), per point
and round: T(default) / T(best fixed), T(default) / T(median fixed) and, where fixed sizes
give the default's own steady layout, T(default) / T(mean of those). The minimum of several
noisy measurements of one layout lies below that layout's typical time, so the first ratio
reads above 1.0 where the default and several fixed sizes send the same messages."""
import collections, csv, statistics, sys

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['config'].startswith('ab-default')]
t = collections.defaultdict(dict)
w = collections.defaultdict(dict)
for r in rows:
    k = (r['config'], int(r['bytes']), int(r['round']))
    t[k][r['variant']] = float(r['mean_us'])
    w[k][r['variant']] = float(r['wire_sent_per_iter'])
res = collections.defaultdict(list)
for k, v in sorted(t.items()):
    fixed = {n: x for n, x in v.items() if n != 'part'}
    # wire counts include the warm-up: 50 iterations, the first (observed) one sends 128
    steady = round((w[k]['part'] * 50 - 128) / 49)
    same = [x for n, x in fixed.items() if round(w[k][n]) == steady]
    res[k[:2]].append((v['part'] / min(fixed.values()), v['part'] / statistics.median(fixed.values()),
                       v['part'] / statistics.mean(same) if same else None, steady))
print('config bytes rounds | default/best: median range within-5% | default/median(fixed) | '
      'default/same-layout fixed: median (rounds) | default messages per iteration')
for k in sorted(res):
    best = [x[0] for x in res[k]]
    med = [x[1] for x in res[k]]
    same = [x[2] for x in res[k] if x[2] is not None]
    print('%s %d %d | %.3f %.3f-%.3f %d/%d | %.3f | %s | %s' % (
        k[0], k[1], len(best), statistics.median(best), min(best), max(best),
        sum(1 for x in best if x <= 1.05), len(best), statistics.median(med),
        '%.3f (%d)' % (statistics.median(same), len(same)) if same else 'n/a',
        sorted(collections.Counter(x[3] for x in res[k]).items())))
