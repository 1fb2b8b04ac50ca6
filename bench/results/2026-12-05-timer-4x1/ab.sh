#!/bin/bash
# usage: ab.sh LAUNCHES "label:ENV=..;ENV2=.." ...   pattern args in PBARGS
n=$1; shift
cd /work/main
export MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm
for i in $(seq $n); do
  for cfg in "$@"; do
    label=${cfg%%:*}; envs=${cfg#*:}
    out=$(env $(echo $envs | tr ';' ' ') timeout 120 _install/bin/mpiexec -n 2 /tmp/pb/pb $PBARGS --attempts 1 --dump 2>&1)
    echo "$out" | python3 -c "
import sys,re,statistics as st
tails={}; pb={}; wire={}
for l in sys.stdin:
    m=re.search(r'\((part:\w+) .*after last ready: (.*)',l)
    if m: tails[m.group(1)]=[float(x) for x in m.group(2).split()]
    m=re.search(r'(part:\w+)\s.*pb\s+([\d.]+) MB/s\s+wire ([\d.]+)',l)
    if m: pb[m.group(1)]=float(m.group(2)); wire[m.group(1)]=float(m.group(3))
n=tails['part:none']; t=tails['part:timer']
print('$label', 'mean_ratio %.3f med_ratio %.3f wires %.2f/%.2f means %.2f/%.2f'%(st.mean(n)/st.mean(t), st.median(n)/st.median(t), wire['part:none'], wire['part:timer'], st.mean(n), st.mean(t)))
"
  done
done
