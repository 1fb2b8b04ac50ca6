import collections,statistics as st,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<10: continue
    d[(f[0],f[1])].append((float(f[3]),float(f[5]),float(f[9])))
for k in sorted(d):
    v=d[k]; print(k,len(v),'ratio med %.3f'%st.median(x[0] for x in v),'medratio med %.3f'%st.median(x[1] for x in v),'wire',sorted(set(x[2] for x in v)))
