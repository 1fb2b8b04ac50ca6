/*
 * part_self.c: partitioned send and receive within one process (any number of processes;
 * review section 3, "self-sends (dest == rank, MPI_COMM_SELF)").
 *
 * Each process, independently, on MPI_COMM_SELF and on MPI_COMM_WORLD with dest == source
 * == its own rank, for several geometries (send and receive partition counts differ):
 * - MPI_Psend_init and MPI_Precv_init on the same process (in both orders: receive first
 *   and send first), -iter iterations each.
 * - Every iteration both requests are started (receive first or send first, alternating),
 *   the send partitions are filled and readied in a shuffled order, the receive is polled
 *   with MPI_Parrived until every partition has arrived (checking each partition's bytes as
 *   soon as it is reported), or, every other iteration, completed with MPI_Wait directly;
 *   then both requests are completed and every byte is checked.
 * - A program's wildcard receive (MPI_ANY_SOURCE, MPI_ANY_TAG) posted on the same
 *   communicator before the operations and left pending while they run: it must not take
 *   any of their wire messages (it stays pending), and it then receives the program's own
 *   message, checked. On MPI_COMM_SELF, MPICH's path for a communicator of one process
 *   matched without the engine's context offset: the receive took the first wire message
 *   and the operation never completed (the 20-s stop).
 * A receive that does not arrive within 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define TOTAL 2880      /* ints; divisible by every partition count used */

static int rank, errs = 0;

static int val(int c, int it, int i)
{
    return 1 + c * 1000003 + it * 7919 + i * 3;
}

static unsigned int lcg(unsigned int *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void run_case(MPI_Comm comm, int peer, int c, int spart, int rpart, int recv_first_init,
                     int iters, const char *cname)
{
    int *sbuf = calloc(TOTAL, sizeof(int)), *rbuf = calloc(TOTAL, sizeof(int));
    MPI_Request sreq, rreq;
    unsigned int seed = 77u + c;
    int order[64], sc = TOTAL / spart, rc = TOTAL / rpart, tag = 10 + c;

    if (recv_first_init) {
        MPI_Precv_init(rbuf, rpart, rc, MPI_INT, peer, tag, comm, MPI_INFO_NULL, &rreq);
        MPI_Psend_init(sbuf, spart, sc, MPI_INT, peer, tag, comm, MPI_INFO_NULL, &sreq);
    } else {
        MPI_Psend_init(sbuf, spart, sc, MPI_INT, peer, tag, comm, MPI_INFO_NULL, &sreq);
        MPI_Precv_init(rbuf, rpart, rc, MPI_INT, peer, tag, comm, MPI_INFO_NULL, &rreq);
    }

    for (int it = 0; it < iters; it++) {
        MPI_Status st;
        int n = -1;

        memset(rbuf, 0, TOTAL * sizeof(int));
        memset(sbuf, 0, TOTAL * sizeof(int));
        if (it % 2) {
            MPI_Start(&sreq);
            MPI_Start(&rreq);
        } else {
            MPI_Start(&rreq);
            MPI_Start(&sreq);
        }
        for (int p = 0; p < spart; p++)
            order[p] = p;
        for (int a = spart - 1; a > 0; a--) {
            int b = lcg(&seed) % (a + 1), t = order[a];
            order[a] = order[b];
            order[b] = t;
        }
        for (int q = 0; q < spart; q++) {
            int p = order[q];
            for (int i = p * sc; i < (p + 1) * sc; i++)
                sbuf[i] = val(c, it, i);
            MPI_Pready(p, sreq);
        }
        if (it % 2 == 0) {
            char seen[64];
            int left = rpart;
            double t0 = MPI_Wtime();
            memset(seen, 0, sizeof(seen));
            while (left > 0) {
                for (int p = 0; p < rpart; p++) {
                    int flag = 0;
                    if (seen[p])
                        continue;
                    if (MPI_Parrived(rreq, p, &flag) != MPI_SUCCESS) {
                        fprintf(stderr, "rank %d %s case %d iter %d: MPI_Parrived(%d) failed\n",
                                rank, cname, c, it, p);
                        errs++;
                        flag = 1;
                    }
                    if (!flag)
                        continue;
                    seen[p] = 1;
                    left--;
                    for (int i = p * rc; i < (p + 1) * rc; i++)
                        if (rbuf[i] != val(c, it, i)) {
                            if (errs < 10)
                                fprintf(stderr, "rank %d %s case %d iter %d: arrived partition "
                                        "%d: rbuf[%d] = %d, expected %d\n", rank, cname, c, it,
                                        p, i, rbuf[i], val(c, it, i));
                            errs++;
                        }
                }
                if (left > 0 && MPI_Wtime() - t0 > 20.0) {
                    fprintf(stderr, "rank %d %s case %d (%d x %d) iter %d: %d partitions not "
                            "arrived after 20 s\n", rank, cname, c, spart, rpart, it, left);
                    fflush(stderr);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        if (it % 4 == 1) {
            MPI_Wait(&rreq, &st);
            MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&sreq, MPI_STATUS_IGNORE);
            MPI_Wait(&rreq, &st);
        }
        MPI_Get_count(&st, MPI_INT, &n);
        if (n != TOTAL) {
            fprintf(stderr, "rank %d %s case %d iter %d: status count %d, expected %d\n", rank,
                    cname, c, it, n, TOTAL);
            errs++;
        }
        for (int i = 0; i < TOTAL; i++)
            if (rbuf[i] != val(c, it, i)) {
                if (errs < 10)
                    fprintf(stderr, "rank %d %s case %d (%d x %d) iter %d: rbuf[%d] = %d, "
                            "expected %d\n", rank, cname, c, spart, rpart, it, i, rbuf[i],
                            val(c, it, i));
                errs++;
            }
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    free(sbuf);
    free(rbuf);
}

/* run_case with a program's wildcard receive pending on comm all along */
static void run_with_wildcard(MPI_Comm comm, int peer, int iters, const char *cname)
{
    int ubuf[4] = { 0, 0, 0, 0 }, msg[4] = { 11, 22, 33, 44 }, flag = 0;
    MPI_Request u, s;
    MPI_Status st;

    MPI_Irecv(ubuf, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &u);
    run_case(comm, peer, 6, 8, 4, 1, iters, cname);
    run_case(comm, peer, 7, 1, 1, 0, iters, cname);
    MPI_Test(&u, &flag, &st);
    if (flag) {
        fprintf(stderr, "rank %d %s: the program's wildcard receive matched a message of the "
                "partitioned operations (tag %d)\n", rank, cname, st.MPI_TAG);
        errs++;
        return;
    }
    MPI_Isend(msg, 4, MPI_INT, peer, 999, comm, &s);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Wait(&u, &st);
    if (st.MPI_TAG != 999 || memcmp(ubuf, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "rank %d %s: the wildcard receive got tag %d, %d %d %d %d\n", rank,
                cname, st.MPI_TAG, ubuf[0], ubuf[1], ubuf[2], ubuf[3]);
        errs++;
    }
}

int main(int argc, char *argv[])
{
    static const int geo[][2] = { {1, 1}, {8, 4}, {3, 6}, {16, 16}, {5, 9}, {32, 1} };
    const int ngeo = (int) (sizeof(geo) / sizeof(geo[0]));
    int iters;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 6);
    MTestArgListDestroy(head);

    for (int g = 0; g < ngeo; g++) {
        run_case(MPI_COMM_SELF, 0, g, geo[g][0], geo[g][1], g % 2, iters, "MPI_COMM_SELF");
        run_case(MPI_COMM_WORLD, rank, g, geo[g][0], geo[g][1], (g + 1) % 2, iters,
                 "MPI_COMM_WORLD (dest = own rank)");
    }
    run_with_wildcard(MPI_COMM_SELF, 0, iters, "MPI_COMM_SELF, a wildcard receive pending");
    run_with_wildcard(MPI_COMM_WORLD, rank, iters,
                      "MPI_COMM_WORLD (dest = own rank), a wildcard receive pending");

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
