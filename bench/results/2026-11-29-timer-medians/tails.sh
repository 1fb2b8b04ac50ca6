#!/bin/bash
# tails.sh PARTBENCH THETA SIZE NOISE LAUNCHES [partbench options]: seed 000's overhead
# pattern (4 threads, 1 ms compute, one thread NOISE % late) on the RDMA transport over
# libfabric shm, part:none and part:timer in one launch, 60 iterations, --dump; prints per
# launch the median and the mean time from the last MPI_Pready to the receiver's completion
# ("tail") of each, their ratios none/timer (the perceived-bandwidth ratio timer/none) and
# the timer's writes per iteration. PARTBENCH: e.g. _bench/build/partbench-ours after
# bench/run.sh; mpiexec from PREFIX (default <repo>/_install).
set -eu
exe=$1 th=$2 sz=$3 nz=$4 launches=$5
shift 5
top=$(cd "$(dirname "$0")/../../.." && pwd)
for i in $(seq "$launches"); do
    "${PREFIX:-$top/_install}/bin/mpiexec" -genv MPIR_CVAR_PART_TRANSPORT ofi \
        -genv MPIR_CVAR_PART_OFI_PROVIDER shm -n 2 "$exe" --lib ours --config tails \
        --pattern overhead --threads 4 --theta "$th" --variants part:none,part:timer --aggr 0 \
        --compute-us 1000 --noise-model single --noise "$nz" --sizes "$sz" --dump \
        --iters 60 --attempts 1 "$@" 2>&1 | python3 -c '
import re, statistics as st, sys
tails, wire = {}, {}
for line in sys.stdin:
    m = re.search(r"\((part:\w+) \S+\) after last ready: (.*)", line)
    if m:
        tails[m.group(1)] = [float(x) for x in m.group(2).split()]
    m = re.search(r"(part:\w+) .* wire ([\d.]+)/it", line)
    if m:
        wire[m.group(1)] = float(m.group(2))
n, t = tails["part:none"], tails["part:timer"]
print("none median %.2f mean %.2f | timer median %.2f mean %.2f us | none/timer: medians %.3f,"
      " means %.3f | timer writes %.1f/it" % (st.median(n), st.mean(n), st.median(t),
      st.mean(t), st.median(n) / st.median(t), st.mean(n) / st.mean(t), wire["part:timer"]))
'
done
