#!/usr/bin/env python3
# timerab.py new:DIRS old:DIRS: the timer target per point from bench/run.sh results.csv files (ab-rdma-* rows),
# median over all rounds of each library: pb ratio none/timer of means and of median tails, rounds; met = >= 0.95 with writes >= 2
import csv,collections,statistics,sys,glob
# usage: timerab.py 'new:results-new*.csv' 'old:results-old*.csv' (or run directories)
data={}
for arg in sys.argv[1:]:
    lib,pat=arg.split(':',1)
    pts=collections.defaultdict(lambda: {'mean':[], 'tail':[], 'wr':[]})
    for f in sorted(glob.glob(pat if pat.endswith('.csv') else pat + '/results.csv')):
        rows=collections.defaultdict(dict)
        for r in csv.DictReader(open(f)):
            if r['config'].startswith('ab-rdma'):
                rows[(r['config'],r['bytes'],r['noise_pct'],r['round'])][r['variant']]=r
        for (c,b,n,rd),v in rows.items():
            a,t=v['part:none'],v['part:timer']
            k=(c,int(b),n)
            pts[k]['mean'].append(float(a['pb_mean_us'])/float(t['pb_mean_us']))
            pts[k]['tail'].append(float(a['pb_median_us'])/float(t['pb_median_us']))
            pts[k]['wr'].append(float(a['wire_sent_per_iter'])/float(t['wire_sent_per_iter']))
    data[lib]=pts
libs=list(data)
keys=sorted(set.intersection(*[set(d) for d in data.values()]))
met={l:[0,0] for l in libs}
print('point', ' | '.join('%s: mean-ratio tail-ratio (n)'%l for l in libs))
for k in keys:
    line=[]
    for l in libs:
        p=data[l][k]; m=statistics.median(p['mean']); t=statistics.median(p['tail']); w=statistics.median(p['wr'])
        met[l][0]+= m>=0.95 and w>=2; met[l][1]+= t>=0.95 and w>=2
        line.append('%.2f %.2f (%d)'%(m,t,len(p['mean'])))
    print(k,' | '.join(line))
for l in libs: print(l,'met on means %d of %d, on median tails %d of %d'%(met[l][0],len(keys),met[l][1],len(keys)))
