#!/bin/bash
# usage: ab.sh N LIBDIR... -> dump lines labelled by lib dir's basename
N=$1; shift
PB=${PB:-/work/main/_bench/timer-1204/build/partbench-ours}   # bench/run.sh builds it (BENCH_OUT/build)
for r in $(seq 1 $N); do
  for L in "$@"; do
    label=$(basename $L)
    LD_LIBRARY_PATH=$L MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm /work/main/_install/bin/mpiexec -genv LD_LIBRARY_PATH $L -n 2 $PB --pattern overhead --threads 4 --theta ${THETA:-8} --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise ${NOISE:-1} --ready burst --sizes ${SIZE:-64K} --dump 2>&1 | tee -a raw-$label.txt | sed -n "s/^ *attempt [0-9]* (part:\([a-z]*\) [0-9A-Za-z]*) after last ready: /$label \1 /p" | sed "s/^/r$r /"
  done
done
