#!/bin/bash
# abm.sh N SIZE [extra]: one library built with a probe patch whose environment variable VAR
# (default PARTX_RNDV_MULT: probe.patch scales the observed chooser's handshake) takes the
# values $MS (default "1 2 3"), alternating launch by launch, order rotating; each line is
# labelled TAG<value> (default TAG "m"). ../2026-12-06-tcp-rndv runs it with
# VAR=PARTX_PREADY_PROGRESS MS="0 1" TAG=pp= on pready-progress.patch.
N=$1; S=$2; shift 2
VAR=${VAR:-PARTX_RNDV_MULT}; TAG=${TAG:-m}
read -a M <<< "${MS:-1 2 3}"; n=${#M[@]}
for i in $(seq $N); do
  for j in $(seq 0 $((n-1))); do
    m=${M[$(( (i+j) % n ))]}
    env "$VAR=$m" LIBS=new bash "$(dirname "$0")/../2026-12-05-model-rows/abd.sh" 1 $S "$@" | sed "s/ new / $TAG$m /"
  done
done
