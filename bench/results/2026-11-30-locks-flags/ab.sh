#!/bin/bash
# ab.sh N LEVEL [extra pready_cost args]: old and new libmpi alternately, ofi shm
N=$1; LEVEL=$2; shift 2
# run beside pready_cost and the libmpi directories lib-old, lib-new (ab.sh), lib-pad (abpad.sh)
cd "$(dirname "$0")"
for i in $(seq $N); do
  for lib in ${ORDER:-old new}; do
    out=$(MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm /work/main/_install/bin/mpiexec -bind-to core -n 2 -genv LD_LIBRARY_PATH /tmp/os/ab15/lib-$lib ./pready_cost --level $LEVEL --iters 3000 --warmup 200 "$@" 2>&1)
    echo "$out" | awk -v lib=$lib -v lev=$LEVEL -v i=$i '/all calls/ {print i, lev, lib, $1, $4, $7}'
  done
done
