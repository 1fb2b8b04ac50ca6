#!/bin/bash
# abrun.sh N cfg...  : both orders, N launches each; prints median of per-launch ratios
N=$1; shift
base="--pattern overhead --threads 4 --theta ${THETA:-1} --sizes ${SIZES:-64K} --compute-us 1000 --noise-model single --noise ${NOISE:-4} ${EXTRA}"
for i in $(seq $N); do
  PBARGS="$base --variants part:none,part:timer" /tmp/ab.sh 1 "$@" | sed 's/^/fwd /'
  PBARGS="$base --variants part:timer,part:none" /tmp/ab.sh 1 "$@" | sed 's/^/rev /'
done > /tmp/abrun.out
python3 - <<'P'
import re,statistics as st,collections
d=collections.defaultdict(list)
for l in open('/tmp/abrun.out'):
    f=l.split()
    d[(f[1],f[0])].append((float(f[3]),float(f[5]),float(f[7].split('/')[1])))
for k in sorted(d):
    v=d[k]
    print(k, 'n',len(v),'mean-ratio med %.3f'%st.median(x[0] for x in v),'median-tail ratio med %.3f'%st.median(x[1] for x in v),'writes %.2f'%st.mean(x[2] for x in v), 'ge0.95 %d'%sum(x[0]>=0.95 for x in v))
P
