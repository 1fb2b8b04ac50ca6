#!/bin/bash
# ab.sh N ARGS...: pready_cost over libfabric shm, new (main) and pre (69c330f) in turn
n=$1; shift
for i in $(seq $n); do for lib in new pre; do
  case $lib in new) ex=/work/main/_install/bin/mpiexec; ld=/work/main/_install/lib;; pre) ex=/tmp/inst-pre/bin/mpiexec; ld=/tmp/inst-pre/lib;; esac
  out=$(MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm timeout 120 $ex -n 2 env LD_LIBRARY_PATH=$ld /tmp/pc/pready_cost "$@" </dev/null 2>&1)
  echo "$lib: $(echo "$out" | grep -v '^#' | tr '\n' ' ')"
done; done
