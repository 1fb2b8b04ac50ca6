import csv, sys, statistics as st
from collections import defaultdict
rows=list(csv.DictReader(open(sys.argv[1])))
d=defaultdict(dict)
for r in rows:
    d[(r['config'],int(r['bytes']),r['variant'])].setdefault(r['lib'],[]).append(float(r['mean_us']))
for k in sorted(d):
    o=d[k].get('old',[]); n=d[k].get('new',[])
    ratios=[b/a for a,b in zip(o,n)]
    print(k, "old %.2f new %.2f  new/old per round: %s median %.3f" % (st.median(o), st.median(n), " ".join("%.2f"%x for x in ratios), st.median(ratios)))
