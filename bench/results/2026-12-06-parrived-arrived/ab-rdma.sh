#!/bin/bash
# ab-rdma.sh ROUNDS: MPI_Parrived's cost (ns per call, false and true answers) over the RDMA
# transport (libfabric's shm provider: MPIR_CVAR_PART_TRANSPORT=ofi,
# MPIR_CVAR_PART_OFI_PROVIDER=shm), partbench's parrived pattern at 4 KiB and 32 partitions,
# for copies of our libmpi in /tmp/libX (LIBS="P Q" by default; README.md says which commit
# each is), alternating within each round. Stock MPICH has no RDMA transport, so no stock
# column: this compares our builds only.
# Made with: git checkout REV && maint/build.sh && cp -L _install/lib/libmpi.so.12 /tmp/libX/
# partbench-ours as bench/run.sh builds it (BENCH_BUILD, default <repo>/_bench/build).
top=$(cd "$(dirname "$0")/../../.." && pwd)
B=${BENCH_BUILD:-$top/_bench/build}
export MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm
for r in $(seq ${1:-6}); do
    for lib in ${LIBS:-P Q}; do
        LD_LIBRARY_PATH=/tmp/lib$lib timeout 60 "$top/_install/bin/mpiexec" -n 2 "$B/partbench-ours" \
            --lib ours --config ab --pattern parrived --sizes 4K --theta 32 --polls 20000 --iters 50 2>&1 |
            awk -v r=$r -v l=$lib '/parrived-(false|true) / { for (i = 1; i <= NF; i++)
                if ($i == "ns/call") print "round " r, l, $3, $(i-1) }'
    done
done
