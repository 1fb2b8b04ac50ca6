/*
 * part_thread_check.h: what several of this project's threaded tests share. Include after
 * the test's own `static int rank, errs;` and part_watchdog.h (whose WD_UNIT names the
 * number ok() reports: "round" unless the test defines it).
 * - part_thread_init(&argc, &argv): MTest_Init_thread at MPI_THREAD_MULTIPLE, rank set;
 *   returns 0, or, when that level is not provided or there are not exactly 2 processes,
 *   says so, calls MTest_Finalize(1) and returns 1 (main then returns MTestReturnValue(1));
 * - ok(err, n, what): a call's return code; anything but MPI_SUCCESS is reported with the
 *   rank, WD_UNIT n and the call, and counted in errs;
 * - part_go_on(r, rounds, window_missed, root): after round r, whether to run another:
 *   root decides (until `rounds` rounds, then, while window_missed, up to four times
 *   `rounds`: the tests that need a testing aid's window to have been run) and broadcasts.
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

static inline int part_go_on(int r, int rounds, int window_missed, int root)
{
    int more = 0;
    if (rank == root)
        more = r + 1 < rounds || (window_missed && r + 1 < 4 * rounds);
    ok(MPI_Bcast(&more, 1, MPI_INT, root, MPI_COMM_WORLD), r, "MPI_Bcast");
    return more;
}

#endif /* PART_THREAD_CHECK_H_INCLUDED */
