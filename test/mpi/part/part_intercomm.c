/*
 * part_intercomm.c: partitioned operations across an intercommunicator (an even number of
 * processes; review section 3, "Intercommunicators").
 *
 * MPI_COMM_WORLD is split into a low and a high half, joined with MPI_Intercomm_create.
 * Process i of one half pairs with process i of the other (the same rank in the remote
 * group). What it asserts:
 * - In both directions at once (an operation low -> high and one high -> low, with
 *   different partition counts on the two sides and between the directions), -iter
 *   iterations: the sender fills and readies its partitions in a rotating order, the
 *   receiver polls MPI_Parrived (checking each partition's bytes as soon as it is reported)
 *   or, every third iteration, only waits; every byte is checked after MPI_Waitall; the
 *   receive status names the partner's rank in the remote group, the tag, and the count.
 * - The same on a duplicate of the intercommunicator (MPI_Comm_dup, same tags), and then
 *   again on the first one with new operations.
 * A transfer that does not complete within 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define TOTAL 3840      /* ints per operation */

static int wrank, errs = 0;

static int val(int c, int dir, int pair, int it, int i)
{
    return 1 + c * 400000009 + dir * 100000007 + pair * 1000003 + it * 7919 + i;
}

static void poll_all(MPI_Request req, int parts, const int *buf, int c, int dir, int pair,
                     int it)
{
    char seen[64];
    int left = parts, pc = TOTAL / parts;
    double t0 = MPI_Wtime();
    memset(seen, 0, sizeof(seen));
    while (left > 0) {
        for (int p = 0; p < parts; p++) {
            int flag = 0;
            if (seen[p])
                continue;
            if (MPI_Parrived(req, p, &flag) != MPI_SUCCESS) {
                fprintf(stderr, "rank %d: MPI_Parrived(%d) failed\n", wrank, p);
                errs++;
                flag = 1;
            }
            if (!flag)
                continue;
            seen[p] = 1;
            left--;
            for (int i = p * pc; i < (p + 1) * pc; i++)
                if (buf[i] != val(c, dir, pair, it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "rank %d comm %d iter %d: arrived partition %d: "
                                "buf[%d] = %d, expected %d\n", wrank, c, it, p, i, buf[i],
                                val(c, dir, pair, it, i));
                    errs++;
                }
        }
        if (left > 0 && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d comm %d iter %d: %d partitions not arrived after 20 s\n",
                    wrank, c, it, left);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* low -> high: 8 send partitions, 4 receive; high -> low: 3 send, 12 receive */
static void run(MPI_Comm inter, int c, int low, int iters)
{
    int lrank, sparts, rparts, sdir, rdir;
    int *sbuf = malloc(TOTAL * sizeof(int)), *rbuf = malloc(TOTAL * sizeof(int));
    MPI_Request req[2];
    MPI_Status st[2];

    MPI_Comm_rank(inter, &lrank);
    sparts = low ? 8 : 3;
    rparts = low ? 12 : 4;
    sdir = low ? 0 : 1;
    rdir = 1 - sdir;
    MPI_Psend_init(sbuf, sparts, TOTAL / sparts, MPI_INT, lrank, 5 + sdir, inter, MPI_INFO_NULL,
                   &req[0]);
    MPI_Precv_init(rbuf, rparts, TOTAL / rparts, MPI_INT, lrank, 5 + rdir, inter, MPI_INFO_NULL,
                   &req[1]);
    for (int it = 0; it < iters; it++) {
        int n = -1;
        memset(rbuf, 0, TOTAL * sizeof(int));
        MPI_Startall(2, req);
        for (int q = 0; q < sparts; q++) {
            int p = (q + it) % sparts, pc = TOTAL / sparts;
            for (int i = p * pc; i < (p + 1) * pc; i++)
                sbuf[i] = val(c, sdir, lrank, it, i);
            MPI_Pready(p, req[0]);
        }
        if (it % 3 != 2)
            poll_all(req[1], rparts, rbuf, c, rdir, lrank, it);
        MPI_Waitall(2, req, st);
        MPI_Get_count(&st[1], MPI_INT, &n);
        if (n != TOTAL || st[1].MPI_SOURCE != lrank || st[1].MPI_TAG != 5 + rdir) {
            fprintf(stderr, "rank %d comm %d iter %d: status count %d source %d tag %d, expected "
                    "%d %d %d\n", wrank, c, it, n, st[1].MPI_SOURCE, st[1].MPI_TAG, TOTAL, lrank,
                    5 + rdir);
            errs++;
        }
        for (int i = 0; i < TOTAL; i++)
            if (rbuf[i] != val(c, rdir, lrank, it, i)) {
                if (errs < 10)
                    fprintf(stderr, "rank %d comm %d iter %d: rbuf[%d] = %d, expected %d\n",
                            wrank, c, it, i, rbuf[i], val(c, rdir, lrank, it, i));
                errs++;
            }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char *argv[])
{
    int size, iters, low, flag;
    MPI_Comm half, inter, inter2;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size % 2) {
        fprintf(stderr, "This test requires an even number of processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 6);
    MTestArgListDestroy(head);

    low = wrank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, low ? 0 : 1, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 1234, &inter);
    MPI_Comm_test_inter(inter, &flag);
    if (!flag) {
        fprintf(stderr, "rank %d: MPI_Intercomm_create did not give an intercommunicator\n",
                wrank);
        errs++;
    }

    run(inter, 0, low, iters);
    MPI_Comm_dup(inter, &inter2);
    run(inter2, 1, low, iters);
    run(inter, 2, low, iters);

    MPI_Comm_free(&inter2);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
