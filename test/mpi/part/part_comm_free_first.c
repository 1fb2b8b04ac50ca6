/*
 * part_comm_free_first.c: MPI_Comm_free before MPI_Request_free (2 processes; review
 * section 3, "MPI_Comm_free before Request_free", and C12: operations must drop their
 * communicator references).
 *
 * Per round (-rounds, default 2100), on a new communicator (cycling through MPI_Comm_dup of
 * MPI_COMM_WORLD, MPI_Comm_split of MPI_COMM_WORLD, and MPI_Comm_dup of a duplicate that is
 * freed at once), two partitioned operations in opposite directions with different
 * partition counts:
 * - mode 0: -iter iterations, then MPI_Comm_free(comm), then MPI_Request_free of both;
 * - mode 1: -iter - 1 iterations, then MPI_Start of both, MPI_Comm_free(comm) while the
 *   iteration is active, then the partitions are readied, both complete (pending operations
 *   on a freed communicator complete normally), then MPI_Request_free.
 * Every byte is checked every iteration. 2100 rounds exhaust MPICH's 2048 context ids if
 * an operation keeps its communicator alive after both handles are freed.
 * At the end (after a barrier and some progress) the pvar part_ops_live is back to its
 * value at the start on both processes (a missing pvar is a failure).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define TOTAL 1536

static int rank, errs = 0;

#include "part_pvar.h"

static int val(int round, int dir, int it, int i)
{
    return 1 + round * 100003 + dir * 50000 + it * 7919 + i;
}

static void check(const int *buf, int round, int dir, int it)
{
    for (int i = 0; i < TOTAL; i++)
        if (buf[i] != val(round, dir, it, i)) {
            if (errs < 10)
                fprintf(stderr, "rank %d round %d iter %d: buf[%d] = %d, expected %d\n", rank,
                        round, it, i, buf[i], val(round, dir, it, i));
            errs++;
        }
}

static MPI_Comm new_comm(int kind)
{
    MPI_Comm c, tmp;
    if (kind == 0) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else if (kind == 1) {
        MPI_Comm_split(MPI_COMM_WORLD, 3, rank, &c);
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &tmp);
        MPI_Comm_dup(tmp, &c);
        MPI_Comm_free(&tmp);
    }
    return c;
}

int main(int argc, char *argv[])
{
    int size, provided, rounds, iters;
    int *sbuf, *rbuf;
    unsigned long long live0, live1;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 2100);
    iters = MTestArgListGetInt_with_default(head, "iter", 3);
    MTestArgListDestroy(head);
    if (iters < 1)
        iters = 1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    live0 = pv_read("part_ops_live");

    sbuf = malloc(TOTAL * sizeof(int));
    rbuf = malloc(TOTAL * sizeof(int));
    for (int r = 0; r < rounds; r++) {
        int mode = r % 2, peer = 1 - rank;
        /* rank 0 -> 1: 6 send / 4 receive partitions; rank 1 -> 0: 2 send / 8 receive */
        int sparts = rank == 0 ? 6 : 2, rparts = rank == 0 ? 8 : 4;
        MPI_Comm comm = new_comm(r % 3);
        MPI_Request req[2];

        MPI_Psend_init(sbuf, sparts, TOTAL / sparts, MPI_INT, peer, r, comm, MPI_INFO_NULL,
                       &req[0]);
        MPI_Precv_init(rbuf, rparts, TOTAL / rparts, MPI_INT, peer, r, comm, MPI_INFO_NULL,
                       &req[1]);
        for (int it = 0; it < iters; it++) {
            int last = (it == iters - 1);
            memset(rbuf, 0, TOTAL * sizeof(int));
            for (int i = 0; i < TOTAL; i++)
                sbuf[i] = val(r, rank, it, i);
            MPI_Startall(2, req);
            if (mode == 1 && last)
                MPI_Comm_free(&comm);   /* while the iteration is active */
            for (int p = sparts - 1; p >= 0; p--)
                MPI_Pready(p, req[0]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            check(rbuf, r, peer, it);
        }
        if (mode == 0)
            MPI_Comm_free(&comm);
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
    }
    free(sbuf);
    free(rbuf);

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu after %d rounds, %llu at the start\n",
                rank, live1, rounds, live0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
