#!/bin/bash
# abd.sh N SIZE [extra]: default vs best fixed AGGR_SIZE in one process, old and new library
# alternating; pipelined 4 x 32, or with ROW=4x1 4 threads x 1 partition (extra: the pattern,
# e.g. --pattern overhead --compute-us 1000 --noise-model gaussian --noise 4); LIBS=new runs
# the new library only; VARIANTS replaces the list of variants. Each line names the best
# fixed size and its wire messages, then every fixed size's mean ("all"; sumabd.py's per-row
# comparison).
N=$1; S=$2; shift 2
V=part,part:size=1024,part:size=16384,part:size=65536,part:size=262144,part:size=1048576
geo="--pattern pipelined --threads 4 --theta 32"
if [ "$ROW" = 4x1 ]; then
    V=part,part:size=16384,part:size=262144,part:size=1048576
    geo="--threads 4 --theta 1"
fi
V=${VARIANTS:-$V}       # VARIANTS: another list of fixed sizes (part first)
run() { local lib=$1; shift
  if [ $lib = old ]; then LD_LIBRARY_PATH=/tmp/inst-old/lib timeout 300 /tmp/inst-old/bin/mpiexec -n 2 /tmp/pb/pb "$@" 2>&1
  else timeout 300 /work/main/_install/bin/mpiexec -n 2 /tmp/pb/pb "$@" 2>&1; fi; }
get() { python3 -c "
import sys,re
v={}
for l in sys.stdin:
    m=re.search(r'\s(part(?::size=\d+)?)\s+N=.*?([\d.]+) us \+-.*?\(med\s+([\d.]+)\).*?wire ([\d.]+)',l)
    if m: v[m.group(1)]=(float(m.group(2)),float(m.group(3)),float(m.group(4)))
d=v['part']; bk=min((k for k in v if k!='part'), key=lambda k:v[k][0]); f=v[bk]; fm=min(x[1] for k,x in v.items() if k!='part')
print('ratio %.3f medratio %.3f default %.1f wire %.2f bestfixed %.1f best %s wire %.2f all %s' % (d[0]/f[0], d[1]/fm, d[0], d[2], f[0], bk, f[2], ','.join('%s=%.1f' % (k, v[k][0]) for k in sorted(v) if k != 'part')))"; }
for i in $(seq $N); do
  order=$( [ $((i%2)) = 1 ] && echo "old new" || echo "new old")
  for lib in ${LIBS:-$order}; do
    echo "$S $lib $(run $lib $geo --sizes $S --variants $V "$@" | get)"
  done
done
