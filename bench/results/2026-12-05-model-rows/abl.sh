#!/bin/bash
# abl.sh N LABEL PBARGS... : old vs new library, alternating (order swapped each round); prints per-launch new/old of part's mean (and tail median when --dump)
N=$1; L=$2; shift 2
run() { local lib=$1; shift # lib
  if [ $lib = old ]; then LD_LIBRARY_PATH=/tmp/inst-old/lib timeout 200 /tmp/inst-old/bin/mpiexec -n 2 /tmp/pb/pb "$@" 2>&1
  else timeout 200 /work/main/_install/bin/mpiexec -n 2 /tmp/pb/pb "$@" 2>&1; fi; }
get() { python3 -c "
import sys,re,statistics as st
txt=sys.stdin.read()
m=re.search(r'\s(part)\s.*?([\d.]+) us \+-.*?wire ([\d.]+)',txt)
t=re.search(r'\(part \S+\) after last ready: (.*)',txt)
print(m.group(2) if m else 'NA', m.group(3) if m else 'NA', st.median(float(x) for x in t.group(1).split()) if t else 'NA')"; }
for i in $(seq $N); do
  if [ $((i%2)) = 1 ]; then o=$(run old "$@" | get); n=$(run new "$@" | get); else n=$(run new "$@" | get); o=$(run old "$@" | get); fi
  echo "$L old $o new $n"
done
