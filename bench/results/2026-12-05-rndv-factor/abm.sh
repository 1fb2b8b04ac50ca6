#!/bin/bash
# abm.sh N SIZE [extra]: one library built with probe.patch (PARTX_RNDV_MULT scales the observed
# chooser's handshake), the factors $MS (default "1 2 3") alternating launch by launch, order rotating
N=$1; S=$2; shift 2
read -a M <<< "${MS:-1 2 3}"; n=${#M[@]}
for i in $(seq $N); do
  for j in $(seq 0 $((n-1))); do
    m=${M[$(( (i+j) % n ))]}
    PARTX_RNDV_MULT=$m LIBS=new bash /work/main/bench/results/2026-12-05-model-rows/abd.sh 1 $S "$@" | sed "s/ new / m$m /"
  done
done
