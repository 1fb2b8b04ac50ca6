/*
 * part_parrived_nbc.c: a process that only polls MPI_Parrived must still complete its
 * nonblocking collectives (4 processes).
 *
 * Rank 2 sends a partitioned message to rank 0 but readies it only after its MPI_Ibarrier
 * completed. Rank 0 starts the MPI_Ibarrier first, tells the others to start theirs (a
 * 0-byte message each), and then calls nothing but MPI_Parrived until the partitions have
 * arrived. With MPICH's dissemination barrier on 4 processes, rank 2's barrier needs rank
 * 0's second-round message, which rank 0's schedule sends only after it received rank 3's
 * first-round one, and rank 3 starts only after the "go": so the schedule must be moved by
 * rank 0's MPI_Parrived calls (MPICH's progress hooks), as repeated MPI_Test calls would
 * move it. An MPI_Parrived that progresses only the network (stock MPICH's, and this
 * engine's before it ran the hooks) leaves both spinning: after -limit seconds (default 30)
 * rank 0 reports it and aborts the job. Every byte that arrives is checked.
 *
 * Arguments: -iter=N (iterations, each with a new MPI_Ibarrier) -parts=N -count=N (ints
 *            per partition) -limit=S
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include "mpitest.h"

static int val(int it, int i)
{
    return 7 + it * 100003 + i * 31;
}

int main(int argc, char *argv[])
{
    int rank, size, errs = 0;
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        fprintf(stderr, "part_parrived_nbc needs 4 processes, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    int iters = MTestArgListGetInt_with_default(head, "iter", 4);
    int parts = MTestArgListGetInt_with_default(head, "parts", 8);
    int count = MTestArgListGetInt_with_default(head, "count", 256);
    double limit = MTestArgListGetInt_with_default(head, "limit", 30);
    MTestArgListDestroy(head);

    MPI_Comm pcomm, ncomm, gcomm;       /* partitioned, the barrier's, the "go" */
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ncomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &gcomm);
    MPI_Comm_set_errhandler(pcomm, MPI_ERRORS_RETURN);

    int n = parts * count;
    int *buf = malloc(sizeof(int) * (size_t) (n > 0 ? n : 1));
    MPI_Request preq = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (rank == 0)
        rc = MPI_Precv_init(buf, parts, count, MPI_INT, 2, 5, pcomm, MPI_INFO_NULL, &preq);
    else if (rank == 2)
        rc = MPI_Psend_init(buf, parts, count, MPI_INT, 0, 5, pcomm, MPI_INFO_NULL, &preq);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: partitioned init failed (%d)\n", rank, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (int it = 0; it < iters; it++) {
        MPI_Request breq;
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                buf[i] = -1;
            MPI_Start(&preq);
            MPI_Ibarrier(ncomm, &breq);
            for (int r = 1; r < 4; r++)
                MPI_Send(NULL, 0, MPI_BYTE, r, 9, gcomm);
            double t0 = MPI_Wtime();
            for (int p = 0; p < parts; p++) {
                int flag = 0;
                while (!flag) {
                    rc = MPI_Parrived(preq, p, &flag);
                    if (rc != MPI_SUCCESS) {
                        fprintf(stderr, "iteration %d: MPI_Parrived failed (%d)\n", it, rc);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                    if (!flag && MPI_Wtime() - t0 > limit) {
                        fprintf(stderr, "iteration %d: partition %d not arrived after %.0f s "
                                "of MPI_Parrived: the calls did not move this process's "
                                "MPI_Ibarrier, which the sender waits for\n", it, p, limit);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
                for (int i = p * count; i < (p + 1) * count; i++)
                    if (buf[i] != val(it, i)) {
                        if (errs < 10)
                            fprintf(stderr, "iteration %d: buf[%d] = %d, expected %d\n", it,
                                    i, buf[i], val(it, i));
                        errs++;
                    }
            }
            MPI_Wait(&breq, MPI_STATUS_IGNORE);
            MPI_Wait(&preq, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 9, gcomm, MPI_STATUS_IGNORE);
            if (rank == 2)
                MPI_Start(&preq);
            MPI_Ibarrier(ncomm, &breq);
            MPI_Wait(&breq, MPI_STATUS_IGNORE);
            if (rank == 2) {
                for (int i = 0; i < n; i++)
                    buf[i] = val(it, i);
                for (int p = 0; p < parts; p++)
                    MPI_Pready(p, preq);
                MPI_Wait(&preq, MPI_STATUS_IGNORE);
            }
        }
    }

    if (preq != MPI_REQUEST_NULL)
        MPI_Request_free(&preq);
    free(buf);
    MPI_Comm_free(&pcomm);
    MPI_Comm_free(&ncomm);
    MPI_Comm_free(&gcomm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
