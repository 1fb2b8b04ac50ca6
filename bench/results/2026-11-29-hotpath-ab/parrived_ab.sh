#!/bin/bash
# abp.sh N THETA: MPI_Parrived ns/call over libfabric shm, new and pre in turn
for i in $(seq $1); do for lib in new pre; do
  case $lib in new) ex=/work/main/_install/bin/mpiexec; ld=/work/main/_install/lib;; pre) ex=/tmp/inst-pre/bin/mpiexec; ld=/tmp/inst-pre/lib;; esac
  MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm timeout 120 $ex -n 2 env LD_LIBRARY_PATH=$ld /work/main/_bench/build/partbench-ours --pattern parrived --theta $2 --sizes 4K --lib $lib --csv /tmp/pc/pa.csv --meta /tmp/pc/pa.meta < /dev/null 2>&1 | grep -E "parrived-(false|true)" | awk -v l=$lib '{for(i=1;i<=NF;i++) if ($i=="ns/call") v=$(i-1); printf "%s %s %s  ", l, $3, v} END {print ""}'
done; done
