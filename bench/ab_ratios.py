# ab_ratios.py: per point and launch of partbench part:none,part:timer rows in a CSV, the
# timer's perceived bandwidth over none's (pb) and none's writes over the timer's (w).
# Usage: python3 bench/ab_ratios.py FILE.csv
import csv,collections,sys
rows=list(csv.DictReader(open(sys.argv[1])))
d=collections.defaultdict(dict)
for r in rows:
    d[(r['lib'],r['config'],r['noise_pct'],r['bytes'],r['round'])][r['variant']]=r
out=collections.defaultdict(list)
for k,v in d.items():
    a,b=v['part:none'],v['part:timer']
    out[k[1:4]].append((k[0],float(a['pb_mean_us'])/float(b['pb_mean_us']),float(a['wire_sent_per_iter'])/float(b['wire_sent_per_iter']),float(b['pb_mean_us'])))
for k in sorted(out):
    s=' '.join('%s pb %.2f w %.2f'%x[:3] for x in sorted(out[k]))
    print(k[0][8:],k[1],k[2],s)
