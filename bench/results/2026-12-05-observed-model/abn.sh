#!/bin/bash
# abn.sh N SIZE: default vs fixed AGGR_SIZE in one process, new library only; prints best fixed name
# (added 2026-12-05, thirty-seventh session: the confirmation run of the 4 x 32 at 1 MiB row)
N=$1; S=$2; shift 2
V=part,part:size=1024,part:size=16384,part:size=65536,part:size=262144,part:size=1048576
geo="--pattern pipelined --threads 4 --theta 32"
for i in $(seq $N); do
  timeout 300 /work/main/_install/bin/mpiexec -n 2 /tmp/pb/pb $geo --sizes $S --variants $V "$@" 2>&1 | python3 -c "
import sys,re
v={}
for l in sys.stdin:
    m=re.search(r'\s(part(?::size=\d+)?)\s+N=.*?([\d.]+) us \+-.*?\(med\s+([\d.]+)\).*?wire ([\d.]+)',l)
    if m: v[m.group(1)]=(float(m.group(2)),float(m.group(3)),float(m.group(4)))
d=v['part']; bk=min((k for k in v if k!='part'), key=lambda k:v[k][0]); f=v[bk]
print('$S ratio %.3f default %.1f wire %.2f best %s %.1f wire %.2f' % (d[0]/f[0], d[0], d[2], bk, f[0], f[2]))"
done
