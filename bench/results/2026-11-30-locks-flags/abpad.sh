#!/bin/bash
# abpad.sh N TRANSPORTENV pready_cost-args: lib-pad with and without PART_PAD_EXP, alternately
N=$1; TENV=$2; shift 2
# run beside pready_cost and the libmpi directories lib-old, lib-new (ab.sh), lib-pad (abpad.sh)
cd "$(dirname "$0")"
for i in $(seq $N); do
  for v in plain pad; do
    if [ $v = pad ]; then P="-genv PART_PAD_EXP 1"; else P=""; fi
    out=$(env $TENV /work/main/_install/bin/mpiexec -n 2 $P -genv LD_LIBRARY_PATH /tmp/os/ab15/lib-pad ./pready_cost --iters 3000 --warmup 200 "$@" 2>&1)
    echo "$out" | awk -v v=$v -v i=$i '/all calls/ {print i, v, $1, $4}'
  done
done
