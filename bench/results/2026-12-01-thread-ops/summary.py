import csv,sys,statistics as st,collections
d=collections.defaultdict(list)
for r in csv.reader(open(sys.argv[1] if len(sys.argv)>1 else 'ab.csv')):
    if 'NA' in r: print('missing',r); continue
    d[(r[1],int(r[2]),r[3])].append((float(r[4]),float(r[5]),float(r[6])))
keys=sorted({(k[0],k[1]) for k in d})
print("transport threads | wall/iter old new new/old | median old new | p90 old new | n")
for tr,T in keys:
    o=d[(tr,T,'old')]; n=d[(tr,T,'new')]
    mo=st.mean(x[0] for x in o); mn=st.mean(x[0] for x in n)
    print(f"{tr:8s} {T} | {mo:8.1f} {mn:8.1f} {mn/mo:5.2f} | {st.median(x[1] for x in o):6.1f} {st.median(x[1] for x in n):6.1f} | {st.median(x[2] for x in o):7.1f} {st.median(x[2] for x in n):7.1f} | {len(o)},{len(n)}")
