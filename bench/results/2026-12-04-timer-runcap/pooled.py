import sys,statistics as st
d={}
for line in open(sys.argv[1]):
    f=line.split(); key=(f[1],f[2]); d.setdefault(key,[]).extend(map(float,f[3:]))
for k in sorted(d):
    v=d[k]; v.sort()
    print(k, 'n',len(v),'mean %.2f'%st.mean(v),'median %.2f'%st.median(v),'p90 %.2f'%v[int(.9*len(v))],'>5us',sum(x>5 for x in v),'>10us',sum(x>10 for x in v), 'trim-mean(<10) %.2f'%st.mean([x for x in v if x<10]))
