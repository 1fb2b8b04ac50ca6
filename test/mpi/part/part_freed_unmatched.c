/*
 * part_freed_unmatched.c: a receive freed before its sender announced itself consumes that
 * announcement, in order (2 processes; review section 3: part_errors' init+free was timing
 * dependent, so the freed-before-match branch might never run; C4, C12).
 *
 * Deterministic: rank 1 calls MPI_Precv_init and MPI_Request_free, then both processes pass
 * a barrier, and only then rank 0 calls MPI_Psend_init with the same tag (so its
 * announcement can only meet the freed receive). What it asserts:
 * - Scenario 1: one freed receive (4 x 64 ints), one unstarted send freed later (after
 *   the second pair ran); a second pair on the same tag (2 x 100 ints send, 5 x 40
 *   receive) matches each other and carries correct data for -iter iterations.
 * - Scenario 2: three freed receives, then three sends (never started; freed before the
 *   second pair starts), then a second pair on the same tag: the second send must reach the
 *   second receive (a mismatch would pair it with a never-started send and hang, or
 *   truncate).
 * - At the end, after a barrier and some progress, part_ops_live and part_tag_ids_in_use
 *   are back to their values at the start, on both processes (the freed operations go
 *   away when the peer's message arrives). Missing pvars are failures.
 * A transfer that does not complete within 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

static int val(int sc, int it, int i)
{
    return 1 + sc * 1000003 + it * 7919 + i;
}

static void complete(MPI_Request * req, const char *what)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    while (!flag) {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: %s: MPI_Test returned %d\n", rank, what, err);
            errs++;
            return;
        }
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: not complete after 20 s (matched the wrong "
                    "operation?)\n", rank, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* nfreed freed receives, nfreed unstarted sends, then a real pair on the same tag */
static void scenario(MPI_Comm comm, int sc, int nfreed, int iters)
{
    const int tag = 20 + sc;
    int fbuf[256], buf[200];
    MPI_Request freq[8], req;

    if (rank == 1) {
        for (int k = 0; k < nfreed; k++) {
            MPI_Precv_init(fbuf, 4, 64, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &freq[k]);
            MPI_Request_free(&freq[k]);
        }
    }
    MPI_Barrier(comm);
    if (rank == 0) {
        for (int k = 0; k < nfreed; k++)
            MPI_Psend_init(fbuf, 4, 64, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &freq[k]);
        if (sc == 2)    /* scenario 2: freed before the real pair starts */
            for (int k = 0; k < nfreed; k++)
                MPI_Request_free(&freq[k]);
        MPI_Psend_init(buf, 2, 100, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
    } else {
        MPI_Precv_init(buf, 5, 40, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
    }
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int i = 0; i < 200; i++)
                buf[i] = val(sc, it, i);
            MPI_Start(&req);
            MPI_Pready(1, req);
            MPI_Pready(0, req);
            complete(&req, "second send");
        } else {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            complete(&req, "second receive");
            for (int i = 0; i < 200; i++)
                if (buf[i] != val(sc, it, i)) {
                    fprintf(stderr, "scenario %d iter %d: buf[%d] = %d, expected %d\n", sc, it,
                            i, buf[i], val(sc, it, i));
                    errs++;
                    break;
                }
        }
    }
    MPI_Request_free(&req);
    if (rank == 0 && sc == 1)
        for (int k = 0; k < nfreed; k++)
            MPI_Request_free(&freq[k]);
}

int main(int argc, char *argv[])
{
    int size, provided, iters;
    unsigned long long live0, ids0, live1, ids1;
    MPI_Comm comm;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 4);
    MTestArgListDestroy(head);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    live0 = pv_read("part_ops_live");
    ids0 = pv_read("part_tag_ids_in_use");

    scenario(comm, 1, 1, iters);
    scenario(comm, 2, 3, iters);

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    ids1 = pv_settle("part_tag_ids_in_use", ids0, 5.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu at the end, %llu at the start\n", rank,
                live1, live0);
        errs++;
    }
    if (ids1 != ids0) {
        fprintf(stderr, "rank %d: part_tag_ids_in_use is %llu at the end, %llu at the start\n",
                rank, ids1, ids0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
