import sys,statistics as st
d={}
for line in open(sys.argv[1]):
    f=line.split(); d.setdefault((f[1],f[0],f[2]),[]).extend(map(float,f[3:]))
libs=sorted(set(k[0] for k in d))
for lib in libs:
    rs=sorted(set(k[1] for k in d if k[0]==lib), key=lambda r:int(r[1:]))
    med=[];mean=[]
    for r in rs:
        n=d[(lib,r,'none')]; t=d[(lib,r,'timer')]
        med.append(st.median(n)/st.median(t)); mean.append(st.mean(n)/st.mean(t))
    print(lib,'median-tail ratios',' '.join('%.2f'%x for x in med),'| median %.3f'%st.median(med))
    print(lib,'mean-tail ratios  ',' '.join('%.2f'%x for x in mean),'| median %.3f'%st.median(mean), 'met(>=.95) %d/%d'%(sum(x>=0.95 for x in mean),len(mean)))
