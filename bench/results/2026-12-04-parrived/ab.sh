#!/bin/bash
# ab.sh ROUNDS: MPI_Parrived's cost (ns per call, false and true answers, 1 and 32
# partitions) for three builds of our libmpi and stock MPICH, alternating within each round
# so that the machine's phases hit all alike. The builds are libmpi.so.12 copies in
# /tmp/libA (8a67c08, before), /tmp/libB (2dbeafc, progress without MPICH's generic path),
# /tmp/libC (the tag transport's progress inline in MPI_Parrived, no second test), each run
# with the same partbench binary through LD_LIBRARY_PATH (partbench's RUNPATH yields to it).
# LIBS="A C B2 stock" picks other copies (the follow-up in README.md).
# Made with: git checkout REV && maint/build.sh && cp _install/lib/libmpi.so.12.2.2 /tmp/libX/libmpi.so.12
B=${BENCH_BUILD:-/work/main/_bench/parr-after/build}
for r in $(seq ${1:-5}); do
    for lib in ${LIBS:-A B C stock}; do
        for th in 1 32; do
            if [ $lib = stock ]; then
                line=$(timeout 60 mpiexec.mpich -n 2 $B/partbench-stock --lib stock --config ab --pattern parrived \
                    --sizes 4K --theta $th --polls 20000 --iters 50 2>&1)
            else
                line=$(LD_LIBRARY_PATH=/tmp/lib$lib timeout 60 /work/main/_install/bin/mpiexec -n 2 \
                    $B/partbench-ours --lib ours --config ab --pattern parrived --sizes 4K --theta $th \
                    --polls 20000 --iters 50 2>&1)
            fi
            for k in false true; do
                echo "$line" | grep "parrived-$k " | awk -v r=$r -v l=$lib -v th=$th -v k=$k \
                    '{for (i = 1; i <= NF; i++) if ($i == "ns/call") print "round " r, l, "parts " th, k, $(i-1)}'
            done
        done
    done
done
