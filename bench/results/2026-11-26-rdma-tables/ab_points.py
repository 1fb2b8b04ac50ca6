# ab_points.py: per point of a partbench CSV with two libraries (lib column) run
# alternately: for part:none,part:timer rows the timer's perceived bandwidth over none's
# (pb, median and range over rounds), none's writes over the timer's, and the target
# (pb >= 0.95 and writes >= 2); for the pipelined rows (variant part) the time of lib
# "new" over lib "old" per round. Usage: python3 ab_points.py FILE.csv
import csv,collections,statistics,sys
rows=list(csv.DictReader(open(sys.argv[1])))
d=collections.defaultdict(dict)
for r in rows:
    d[(r['config'],r['noise_pct'],int(r['bytes']),r['lib'],r['round'])][r['variant']]=r
ov=collections.defaultdict(list); pipe=collections.defaultdict(dict)
for (cfg,noise,b,lib,rd),v in d.items():
    if 'part:none' in v:
        n,t=v['part:none'],v['part:timer']
        ov[(cfg,noise,b,lib)].append((float(n['pb_mean_us'])/float(t['pb_mean_us']), float(n['wire_sent_per_iter'])/float(t['wire_sent_per_iter']), float(t['wire_sent_per_iter'])))
    else:
        pipe[(cfg,b,rd)][lib]=(float(v['part']['mean_us']), float(v['part']['wire_sent_per_iter']))
met={'new':0,'old':0}
print("config noise bytes | lib: pb ratio median (range) writes-ratio [timer writes]")
for k in sorted(set(k[:3] for k in ov)):
    line=[]
    for lib in ('old','new'):
        x=ov[k+(lib,)]
        pb=statistics.median(a for a,_,_ in x); w=statistics.median(b for _,b,_ in x)
        ok= pb>=0.95 and w>=2; met[lib]+=ok
        line.append("%s %.2f (%.2f-%.2f) %.1fx [%.1f]%s"%(lib,pb,min(a for a,_,_ in x),max(a for a,_,_ in x),w,statistics.median(c for _,_,c in x),' MET' if ok else ''))
    print(k[0],k[1]+'%',k[2]//1024,'KiB |',' | '.join(line))
print('met:',met)
print("pipelined: time new/old per round, writes old->new")
for cb in sorted(set(k[:2] for k in pipe)):
    rs=[pipe[k] for k in pipe if k[:2]==cb and len(pipe[k])==2]
    ratios=[x['new'][0]/x['old'][0] for x in rs]
    print(cb[0], cb[1], 'median %.3f'%statistics.median(ratios), 'range %.2f-%.2f'%(min(ratios),max(ratios)), 'writes %.1f -> %.1f'%(statistics.median(x['old'][1] for x in rs), statistics.median(x['new'][1] for x in rs)))
