/*
 * part_anytag.c: wildcard user receives next to in-flight partitioned traffic (2 processes).
 *
 * What it asserts:
 * - While a partitioned operation on communicator C is in flight (the sender readies its
 *   16 partitions one at a time, driving progress with MPI_Test between them, and the
 *   receiver uses 8 receive partitions), the receiver has an MPI_Irecv(MPI_ANY_SOURCE,
 *   MPI_ANY_TAG, C) posted. The sender sends one user message in the middle of the
 *   partitions; the wildcard receive must get exactly that message (source, tag, count and
 *   payload), never partitioned data, control traffic, or anything else.
 * - The same holds in the reverse direction: the sender also has a wildcard receive posted
 *   on C before it starts (and so before the receiver's first answer can arrive), which
 *   must get only the receiver's user reply.
 * - On even iterations the user message uses the same tag as the partitioned operation
 *   (point-to-point and partitioned operations never match each other).
 * - An MPI_Allreduce on C runs while partitions are in flight, and another one between
 *   iterations; both results are checked.
 * - MPI_Test on the partitioned send does not complete it before all partitions are
 *   readied, and every byte of the partitioned buffer is correct after every iteration.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define SPART 16
#define RPART 8
#define TOTAL 4096              /* ints */
#define PTAG 7
#define UCOUNT 37               /* ints in a user message */
#define UMAX (TOTAL + 64)       /* wildcard receive buffers are larger than anything */
#define ITERS 16

static int rank;

static int ppattern(int iter, int i)
{
    return 1 + iter * 65537 + i;
}

static int upattern(int who, int iter, int i)
{
    return -(1 + who * 1000 + iter * 100 + i);
}

static int utag(int who, int iter)
{
    return (iter % 2 == 0) ? PTAG : 500 + who * 100 + iter;
}

static int check_user(MPI_Status * st, int *ubuf, int who, int iter)
{
    int errs = 0, count;
    MPI_Get_count(st, MPI_INT, &count);
    if (st->MPI_SOURCE != who || st->MPI_TAG != utag(who, iter) || count != UCOUNT) {
        fprintf(stderr, "rank %d iter %d: wildcard receive got source %d tag %d count %d, "
                "expected source %d tag %d count %d\n", rank, iter, st->MPI_SOURCE,
                st->MPI_TAG, count, who, utag(who, iter), UCOUNT);
        errs++;
    }
    for (int i = 0; i < UCOUNT; i++)
        if (ubuf[i] != upattern(who, iter, i)) {
            if (errs < 5)
                fprintf(stderr, "rank %d iter %d: user payload[%d] = %d, expected %d\n", rank,
                        iter, i, ubuf[i], upattern(who, iter, i));
            errs++;
        }
    return errs;
}

static void wait_both(MPI_Request * r1, MPI_Request * r2, MPI_Status * s1, const char *what)
{
    int f1 = 0, f2 = 0;
    double t0 = MPI_Wtime();
    while (!f1 || !f2) {
        if (!f1)
            MPI_Test(r1, &f1, s1);
        if (!f2)
            MPI_Test(r2, &f2, MPI_STATUS_IGNORE);
        if (MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s not complete after 20 s (user %d, partitioned %d)\n",
                    rank, what, f1, f2);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

int main(int argc, char *argv[])
{
    int errs = 0, size;
    MPI_Comm C;
    MPI_Request preq, ureq, sreq;
    MPI_Status ust;
    int *pbuf, *ubuf, *sbuf;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Comm_dup(MPI_COMM_WORLD, &C);
    pbuf = malloc(TOTAL * sizeof(int));
    ubuf = malloc(UMAX * sizeof(int));
    sbuf = malloc(UCOUNT * sizeof(int));

    if (rank == 0)
        MPI_Psend_init(pbuf, SPART, TOTAL / SPART, MPI_INT, 1, PTAG, C, MPI_INFO_NULL, &preq);
    else
        MPI_Precv_init(pbuf, RPART, TOTAL / RPART, MPI_INT, 0, PTAG, C, MPI_INFO_NULL, &preq);

    for (int it = 0; it < ITERS; it++) {
        int in = rank + it, out = -1, flag;

        memset(ubuf, 0x7f, UMAX * sizeof(int));
        for (int i = 0; i < UCOUNT; i++)
            sbuf[i] = upattern(rank, it, i);
        MPI_Irecv(ubuf, UMAX, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, C, &ureq);

        if (rank == 0) {
            MPI_Start(&preq);
            for (int p = 0; p < SPART; p++) {
                int c = TOTAL / SPART;
                for (int j = p * c; j < (p + 1) * c; j++)
                    pbuf[j] = ppattern(it, j);
                MPI_Pready(p, preq);
                for (int k = 0; k < 3 && p < SPART - 1; k++) {
                    MPI_Test(&preq, &flag, MPI_STATUS_IGNORE);
                    if (flag) {
                        fprintf(stderr, "iter %d: partitioned send complete with %d of %d "
                                "partitions readied\n", it, p + 1, SPART);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
                if (p == SPART / 2 - 3)
                    MPI_Isend(sbuf, UCOUNT, MPI_INT, 1, utag(0, it), C, &sreq);
                if (p == SPART / 2) {
                    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, C);
                    if (out != 1 + 2 * it) {
                        fprintf(stderr, "iter %d: allreduce %d, expected %d\n", it, out,
                                1 + 2 * it);
                        errs++;
                    }
                }
            }
            MPI_Wait(&preq, MPI_STATUS_IGNORE);
            MPI_Wait(&sreq, MPI_STATUS_IGNORE);
            /* the reply of the receiver is the only message for the wildcard receive */
            MPI_Wait(&ureq, &ust);
            errs += check_user(&ust, ubuf, 1, it);
        } else {
            memset(pbuf, 0, TOTAL * sizeof(int));
            MPI_Start(&preq);
            MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, C);
            if (out != 1 + 2 * it) {
                fprintf(stderr, "iter %d: allreduce %d, expected %d\n", it, out, 1 + 2 * it);
                errs++;
            }
            wait_both(&ureq, &preq, &ust, "user message and partitioned receive");
            errs += check_user(&ust, ubuf, 0, it);
            for (int j = 0; j < TOTAL; j++)
                if (pbuf[j] != ppattern(it, j)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: partitioned buf[%d] = %d, expected %d\n",
                                it, j, pbuf[j], ppattern(it, j));
                    errs++;
                }
            MPI_Send(sbuf, UCOUNT, MPI_INT, 0, utag(1, it), C);
        }

        /* between iterations */
        in = 10 * rank + it;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, C);
        if (out != 10 + it) {
            fprintf(stderr, "iter %d: allreduce(max) %d, expected %d\n", it, out, 10 + it);
            errs++;
        }
    }

    /* nothing else may be waiting on C for the user */
    {
        int flag = 0;
        MPI_Barrier(C);
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, C, &flag, &ust);
        if (flag) {
            fprintf(stderr, "rank %d: unexpected user-visible message on C (source %d tag %d)\n",
                    rank, ust.MPI_SOURCE, ust.MPI_TAG);
            errs++;
        }
    }

    MPI_Request_free(&preq);
    MPI_Comm_free(&C);
    free(pbuf);
    free(ubuf);
    free(sbuf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
