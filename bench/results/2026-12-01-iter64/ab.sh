#!/bin/bash
# ab.sh N: the default (tag) transport over UCX shared memory, new (64-bit iterations) and
# pre (097882b: 32-bit) libmpi in turn, the same binaries (LD_LIBRARY_PATH picks libmpi):
#   MPI_Parrived ns/call (false and true answers) at theta 1 and 32, 4 KiB
#   MPI_Pready: all 32 calls of an iteration, 32 partitions of 512 B (pready_cost, none)
# Build: mpicxx -O3 -std=c++17 -pthread bench/partbench.cpp bench/variants.cpp bench/halo.cpp
#   bench/parrived.cpp bench/common.cpp -o $B/partbench; bench/pready_cost.cpp bench/common.cpp
#   -o $B/pready_cost; pre's libmpi.so* copied to $PRE before the change was built.
B=${B:-/tmp/os/bb}; PRE=${PRE:-/tmp/os/lib-pre}; NEW=/work/main/_install/lib
ex=/work/main/_install/bin/mpiexec
for i in $(seq $1); do for lib in new pre; do
  case $lib in new) ld=$NEW;; pre) ld=$PRE:$NEW;; esac
  line="$lib"
  for th in 1 32; do
    v=$(timeout 120 $ex -n 2 env LD_LIBRARY_PATH=$ld $B/partbench --pattern parrived --theta $th --sizes 4K --lib $lib --csv /tmp/os/bb/pa.csv --meta /tmp/os/bb/pa.meta < /dev/null 2>&1 | grep -E "parrived-(false|true)" | awk '{for(i=1;i<=NF;i++) if ($i=="ns/call") v=$(i-1); printf "%s=%s ", $3, v}')
    line="$line th$th: $v"
  done
  pr=$(timeout 120 $ex -n 2 env LD_LIBRARY_PATH=$ld $B/pready_cost --parts 32 --bytes 512 --iters 1500 --warmup 100 --aggr none < /dev/null 2>&1 | grep -v '^#' | tr '\n' ' ')
  echo "$line pready: $pr"
done; done
