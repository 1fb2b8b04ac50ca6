# ratios.py FILE: medians of per-round ratios to stock from the alternating A/B outputs here,
# either ../2026-12-04-parrived/ab.sh's lines ("round R LIB parts N false|true NS") or
# ../2026-12-06-parrived-threads/ab.sh's ("round R LIB T=n median NS min ..."); also each
# library's median ns.
import collections, statistics, sys

d = collections.defaultdict(dict)       # point -> lib -> round -> ns
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 6 or p[0] != 'round':
        continue
    if p[3] == 'parts':
        point, ns = 'parts %s %s' % (p[4], p[5]), p[6]
    else:
        point, ns = p[3], p[5]
    d[point].setdefault(p[2], {})[p[1]] = float(ns)
for point in sorted(d):
    stock = d[point]['stock']
    cols = []
    for lib, runs in d[point].items():
        if lib != 'stock':
            r = [runs[k] / stock[k] for k in runs if k in stock]
            cols.append('%s %.3f (%.1f ns)' % (lib, statistics.median(r), statistics.median(runs.values())))
    print('%-16s %s   stock %.1f ns' % (point, ', '.join(cols), statistics.median(stock.values())))
