#!/bin/bash
# ab3.sh PAIRS: lib-new, lib-xp (XP_SKIP=1) alternately
PAIRS=$1
export MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm
run() { "$@" --sizes 64K --pattern overhead --threads 4 --theta "${THETA:-8}" --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1 --ready burst --dump </dev/null 2>&1 | python3 -c '
import sys, statistics
last = {}
for l in sys.stdin:
    if "after last ready:" in l:
        name = l.split("(")[1].split()[0]
        last[name] = [float(x) for x in l.split("ready:", 1)[1].split()]
n, t = statistics.median(last["part:none"]), statistics.median(last["part:timer"])
print("%-12s none %.3f us  timer %.3f us  none/timer %.3f" % (sys.argv[1], n, t, n / t))
' "$LABEL"; }
for i in $(seq $PAIRS); do
  LABEL=new LD_LIBRARY_PATH=/tmp/lib-new run /work/main/_install/bin/mpiexec -n 2 /tmp/bb/partbench
  LABEL=skip LD_LIBRARY_PATH=/tmp/lib-xp run /work/main/_install/bin/mpiexec -genv XP_SKIP 1 -n 2 /tmp/bb/partbench
done
