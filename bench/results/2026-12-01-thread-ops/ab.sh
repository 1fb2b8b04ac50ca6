#!/bin/bash
# ab.sh: two builds of libmpi (LIBDIR/lib_old, LIBDIR/lib_new, each holding a libmpi.so.12;
# thread_ops's RUNPATH yields to LD_LIBRARY_PATH) run bench/thread_ops.cpp alternately,
# launch by launch, per transport and thread count; one CSV row per launch:
#   round,transport,threads,lib,wall us per iteration,thread 0 median us,thread 0 p90 us
# PREFIX: the install whose mpiexec runs them; VERBS_EMU: test/verbs-emu/build (verbs rows).
# ROUNDS, TRS (tag ofi-shm ofi-tcp verbs), THREADS, ITERS, WAIT (block|yield), OUT.
rounds=${ROUNDS:-5}; out=${OUT:-ab.csv}; iters=${ITERS:-1000}
: > $out
for r in $(seq $rounds); do
 for tr in ${TRS:-tag ofi-shm verbs}; do
  for T in ${THREADS:-1 2 4}; do
   for lib in old new; do
    env=(MPIR_CVAR_PART_TRANSPORT=tag); ld=${LIBDIR:-.}/lib_$lib
    case $tr in
     ofi-shm) env=(MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm);;
     ofi-tcp) env=(MPIR_CVAR_PART_TRANSPORT=ofi "MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm");;
     verbs) env=(MPIR_CVAR_PART_TRANSPORT=verbs VERBSEMU_NS=partx UCX_TLS=self,sm,tcp); ld=$ld:${VERBS_EMU:?};;
    esac
    line=$(env "${env[@]}" LD_LIBRARY_PATH=$ld timeout 300 ${PREFIX:?}/bin/mpiexec -n 2 ${THREAD_OPS:-./thread_ops} --threads $T --iters $iters --wait ${WAIT:-block} 2>&1 | grep "^thread_ops:")
    us=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) us per iteration.*/\1/p')
    med=$(echo "$line" | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')
    p90=$(echo "$line" | sed -n 's/.*p90 \([0-9.]*\) us.*/\1/p')
    echo "$r,$tr,$T,$lib,${us:-NA},${med:-NA},${p90:-NA}" | tee -a $out
   done
  done
 done
done
