#!/bin/bash
# ab_median.sh PAIRS LIBDIR... : seed 000's burst pattern (4 threads, 1 ms compute, one
# thread 1 % late) over libfabric shm, part:none and part:timer in one launch, with each
# LIBDIR's libmpi (LD_LIBRARY_PATH) in turn, PAIRS times. Per launch: the median over the
# last attempt's iterations of the time from the last MPI_Pready to the receiver's
# completion (partbench --dump), none / timer. PARTBENCH (default ./partbench), THETA (8).
PAIRS=$1; shift
PB=${PARTBENCH:-./partbench}
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm
for i in $(seq "$PAIRS"); do
    for L in "$@"; do
        LD_LIBRARY_PATH=$L $MPIEXEC -n 2 "$PB" --sizes 64K --pattern overhead --threads 4 \
            --theta "${THETA:-8}" --variants part:none,part:timer --aggr 0 --compute-us 1000 \
            --noise-model single --noise 1 --ready burst --dump </dev/null 2>&1 |
        python3 -c '
import sys, statistics
last = {}
for l in sys.stdin:
    if "after last ready:" in l:
        name = l.split("(")[1].split()[0]
        last[name] = [float(x) for x in l.split("ready:", 1)[1].split()]
n, t = statistics.median(last["part:none"]), statistics.median(last["part:timer"])
print("%-12s none %.3f us  timer %.3f us  none/timer %.3f" % (sys.argv[1], n, t, n / t))
' "$L"
    done
done
