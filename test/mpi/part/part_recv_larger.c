/*
 * part_recv_larger.c: receive larger than the send, over several iterations (2 processes;
 * review section 3, "receive > send with Parrived over several iterations").
 *
 * A send smaller than the receive is allowed, as for point-to-point: the data fills the
 * front of the receive buffer. For several geometries (send partitions x ints < receive
 * partitions x ints), -iter iterations each, with new data every iteration:
 * - the receiver polls MPI_Parrived on every receive partition until all are reported
 *   (each call must return MPI_SUCCESS); as soon as a partition is reported, the part of it
 *   that lies within the bytes sent must hold this iteration's data, and the part beyond
 *   must still hold the sentinel;
 * - after MPI_Wait, MPI_Get_count gives exactly the ints sent, the front holds the data and
 *   the tail of the receive buffer (up to its end, plus a guard area after it) still holds
 *   the sentinel written before MPI_Start.
 * Every third iteration the receiver only waits (no MPI_Parrived). A partition not arrived
 * within 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define SENTINEL (-123456789)
#define GUARD 64

static int rank, errs = 0;

static int val(int c, int it, int i)
{
    return 1 + c * 10000019 + it * 7919 + i;
}

static void check_ints(const int *buf, int lo, int hi, int sent, int c, int it,
                       const char *what)
{
    for (int i = lo; i < hi; i++) {
        int want = i < sent ? val(c, it, i) : SENTINEL;
        if (buf[i] != want) {
            if (errs < 10)
                fprintf(stderr, "case %d iter %d: %s: rbuf[%d] = %d, expected %d (%s)\n", c, it,
                        what, i, buf[i], want, i < sent ? "data" : "untouched tail");
            errs++;
        }
    }
}

static void run_case(int c, int spart, int scount, int rpart, int rcount, int iters)
{
    int sent = spart * scount, rtotal = rpart * rcount;
    int *buf = malloc((rtotal > sent ? rtotal : sent) * sizeof(int) + GUARD * sizeof(int));
    MPI_Request req;

    if (rank == 0)
        MPI_Psend_init(buf, spart, scount, MPI_INT, 1, c, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, rpart, rcount, MPI_INT, 0, c, MPI_COMM_WORLD, MPI_INFO_NULL, &req);

    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int i = 0; i < sent; i++)
                buf[i] = val(c, it, i);
            MPI_Start(&req);
            for (int p = spart - 1; p >= 0; p--)
                MPI_Pready(p, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Status st;
            int n = -1;
            for (int i = 0; i < rtotal + GUARD; i++)
                buf[i] = SENTINEL;
            MPI_Start(&req);
            if (it % 3 != 2) {
                char *seen = calloc(rpart, 1);
                int left = rpart;
                double t0 = MPI_Wtime();
                while (left > 0) {
                    for (int p = 0; p < rpart; p++) {
                        int flag = 0, err;
                        if (seen[p])
                            continue;
                        err = MPI_Parrived(req, p, &flag);
                        if (err != MPI_SUCCESS) {
                            fprintf(stderr, "case %d iter %d: MPI_Parrived(%d) returned %d\n",
                                    c, it, p, err);
                            errs++;
                            flag = 1;
                        }
                        if (!flag)
                            continue;
                        seen[p] = 1;
                        left--;
                        check_ints(buf, p * rcount, (p + 1) * rcount, sent, c, it,
                                   "partition reported arrived");
                    }
                    if (left > 0 && MPI_Wtime() - t0 > 20.0) {
                        fprintf(stderr, "case %d iter %d: %d partitions not arrived after 20 s\n",
                                c, it, left);
                        fflush(stderr);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
                free(seen);
            }
            MPI_Wait(&req, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            if (n != sent) {
                fprintf(stderr, "case %d (send %d x %d, receive %d x %d) iter %d: status count "
                        "%d, expected %d\n", c, spart, scount, rpart, rcount, it, n, sent);
                errs++;
            }
            check_ints(buf, 0, rtotal + GUARD, sent, c, it, "after MPI_Wait");
        }
    }
    MPI_Request_free(&req);
    free(buf);
}

int main(int argc, char *argv[])
{
    /* send partitions, ints each; receive partitions, ints each */
    static const int cases[][4] = {
        {3, 10, 4, 16}, {8, 100, 5, 200}, {1, 100000, 2, 60000}, {4, 4, 4, 5},
        {16, 64, 16, 65}, {2, 1, 7, 3}
    };
    const int ncases = (int) (sizeof(cases) / sizeof(cases[0]));
    int size, iters;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 6);
    MTestArgListDestroy(head);

    for (int c = 0; c < ncases; c++)
        run_case(c, cases[c][0], cases[c][1], cases[c][2], cases[c][3], iters);

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
