#!/bin/bash
# ab_skip.sh PAIRS NEWLIB SKIPLIB: the experiment behind ab-theta8-skipclosed.txt (THETA=8).
# SKIPLIB was a throw-away build (not committed) in which XP_SKIP=1 in the environment
# skipped the clock read and the second mutex pass that follow the writes of an MPI_Pready
# completing a group; NEWLIB (c0379cd) has no such switch and ignores the variable. The
# recorded run used the loop of ../2026-11-27-timer-calls/ab_median.sh with the labels
# "new" and "skip" in place of the library paths.
export XP_SKIP=1
exec "$(dirname "$0")/../2026-11-27-timer-calls/ab_median.sh" "$@"
