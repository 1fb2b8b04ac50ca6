#!/bin/bash
# pp.sh N LABEL abd-args...: PARTX_PREADY_PROGRESS=0 and 1 alternating, current library
# (a build with pready-progress.patch; MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self for TCP)
N=$1; L=$2; shift 2
A=$(dirname "$0")/../2026-12-05-model-rows/abd.sh
for i in $(seq $N); do
  order=$( [ $((i%2)) = 1 ] && echo "0 1" || echo "1 0")
  for pp in $order; do echo "pp=$pp $(PARTX_PREADY_PROGRESS=$pp LIBS=new bash $A 1 "$@")"; done
done > pp-$L.out
