#!/bin/bash
# ab-aggr.sh ROUNDS: as ab.sh, 32 partitions in 4 wire messages of 8 (MPIR_CVAR_PART_AGGR_SIZE
# =1024 on 4 KiB), where the partition-to-message lookup divides; builds /tmp/libA (1e35e66)
# and /tmp/libC (its multiplication instead, 5afc1b8), alternating.
B=${BENCH_BUILD:-/work/main/_bench/parr-after/build}
for r in $(seq ${1:-8}); do
    for lib in ${LIBS:-A C}; do
        line=$(MPIR_CVAR_PART_AGGR_SIZE=1024 LD_LIBRARY_PATH=/tmp/lib$lib timeout 60 \
            /work/main/_install/bin/mpiexec -n 2 $B/partbench-ours --lib ours --config ab \
            --pattern parrived --sizes 4K --theta 32 --polls 20000 --iters 50 2>&1)
        for k in false true; do
            echo "$line" | grep "parrived-$k " | awk -v r=$r -v l=$lib -v k=$k \
                '{for (i = 1; i <= NF; i++) if ($i == "ns/call") print "round " r, l, "parts 32", k, $(i-1)}'
        done
    done
done
