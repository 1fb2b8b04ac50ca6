# ab_pair.py: two partbench variants run in one process (e.g. part and part:observe=4), per
# configuration and size: each round's mean time of B over A, and their median.
# Usage: python3 bench/ab_pair.py FILE.csv A B
import collections, csv, statistics, sys

if len(sys.argv) != 4:
    sys.exit("usage: ab_pair.py FILE.csv VARIANT_A VARIANT_B")
path, va, vb = sys.argv[1:]
pts = collections.defaultdict(dict)
for r in csv.DictReader(open(path)):
    pts[(r['config'], int(r['bytes']), r['round'])][r['variant']] = r
by = collections.defaultdict(list)
for (cfg, nbytes, rnd), v in pts.items():
    if va in v and vb in v:
        a, b = v[va], v[vb]
        by[(cfg, nbytes)].append((float(b['mean_us']) / float(a['mean_us']),))
if not by:
    sys.exit("ab_pair.py: no round holds both %s and %s" % (va, vb))
print("%-18s %9s %7s  %s" % ("config", "bytes", "median", "T(%s)/T(%s) per round" % (vb, va)))
for (cfg, nbytes), xs in sorted(by.items()):
    print("%-18s %9d %7.3f  %s" % (cfg, nbytes, statistics.median(x[0] for x in xs),
                                   " ".join("%.3f" % x[0] for x in xs)))
