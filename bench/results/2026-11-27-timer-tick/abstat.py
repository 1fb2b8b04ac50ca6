import statistics as s, sys
d={}
for l in open(sys.argv[1]):
    f=l.split(); d.setdefault(f[0],[]).append(float(f[-1]))
for k,v in d.items(): print(k, len(v), "median %.3f"%s.median(v), "mean %.3f"%s.mean(v), "q1 %.3f q3 %.3f"%tuple(s.quantiles(v,n=4)[::2]))
