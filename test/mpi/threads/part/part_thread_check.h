/*
 * part_thread_check.h: what several of this project's threaded tests share. Include after
 * the test's own `static int rank, errs;` and part_watchdog.h (whose WD_UNIT names the
 * number ok() reports: "round" unless the test defines it).
 * - part_thread_init(&argc, &argv): MTest_Init_thread at MPI_THREAD_MULTIPLE, rank set;
 *   returns 0, or, when that level is not provided or there are not exactly 2 processes,
 *   says so, calls MTest_Finalize(1) and returns 1 (main then returns MTestReturnValue(1));
 * - ok(err, n, what): a call's return code; anything but MPI_SUCCESS is reported with the
 *   rank, WD_UNIT n and the call, and counted in errs.
 */
#ifndef PART_THREAD_CHECK_H_INCLUDED
#define PART_THREAD_CHECK_H_INCLUDED

#include <stdio.h>
#include "mpitest.h"
#include "mpithreadtest.h"

static inline int part_thread_init(int *argc, char ***argv)
{
    int provided, size;
    MTest_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided == MPI_THREAD_MULTIPLE && size == 2)
        return 0;
    if (rank == 0)
        fprintf(stderr, "needs MPI_THREAD_MULTIPLE (got %d) and 2 processes (got %d)\n",
                provided, size);
    MTest_Finalize(1);
    return 1;
}

static inline void ok(int err, int n, const char *what)
{
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d %s %d: %s returned %d\n", rank, WD_UNIT, n, what, err);
        errs++;
    }
}

#endif /* PART_THREAD_CHECK_H_INCLUDED */
