#!/bin/bash
# run.sh: the sender-time change (S) measured, old library (/tmp/inst-old: the engine before
# it) and new (_install) alternating launch by launch (../2026-12-05-model-rows/abd.sh; each
# launch's default against fixed AGGR_SIZE values in one process). Writes one .out per row.
abd=../2026-12-05-model-rows/abd.sh
tcp() { MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self "$@"; }
big=part,part:size=16384,part:size=262144,part:size=1048576,part:size=4194304
# UCX over TCP: rows past the rendezvous switch (the layouts the change moves) ...
tcp bash $abd 8 1M --threads 1 --theta 128              > tcp-1x128-1M.out
tcp bash $abd 8 1M                                      > tcp-4x32-1M.out
tcp env VARIANTS=$big bash $abd 4 4M                    > tcp-4x32-4M.out
tcp env ROW=4x1 VARIANTS=$big bash $abd 4 4M --pattern earlybird > tcp-4x1-4M-earlybird.out
tcp env ROW=4x1 bash $abd 4 1M                          > tcp-4x1-1M.out
# ... and below it (eager partitions: layouts should not move)
tcp bash $abd 4 256K                                    > tcp-4x32-256K.out
tcp bash $abd 4 64K                                     > tcp-4x32-64K.out
# shared memory (S 0.4-1.5 us: layouts should hardly move)
bash $abd 8 1M                                          > shm-4x32-1M.out
bash $abd 4 1M --threads 1 --theta 128                  > shm-1x128-1M.out
bash $abd 4 64K                                         > shm-4x32-64K.out
env ROW=4x1 VARIANTS=$big bash $abd 4 4M --pattern earlybird > shm-4x1-4M-earlybird.out
