/*
 * part_c1_progress.c: MPI_Parrived alone must make progress on other operations'
 * handshakes (2 processes; review finding C1).
 *
 * Two sets of operations in opposite directions: A_k (rank 0 -> rank 1) and B_k
 * (rank 1 -> rank 0), k = 0..-pairs-1, new operations every round. Per round:
 *   rank 1: MPI_Psend_init(B_k) (so B is matched on rank 0 at its MPI_Precv_init), sync;
 *   rank 0: MPI_Psend_init(A_k), sync, progress for a moment (the announcements of B are
 *           in), MPI_Precv_init(B_k).
 * Every iteration:
 *   rank 0: MPI_Start(A_k), MPI_Start(B_k), fill and MPI_Pready_range(A_k, all); then it
 *           spins ONLY on MPI_Parrived(B_k, p) for all k, p (checking each partition's
 *           bytes as soon as it is reported), then MPI_Wait on everything;
 *   rank 1: in the first iteration of a round it waits for a "go" message that rank 0 sends
 *           (MPI_Isend, completed later) just before it starts spinning, and only then calls
 *           MPI_Precv_init(A_k): rank 1's answer to A's announcement therefore reaches
 *           rank 0 while rank 0 is inside MPI_Parrived(B). Rank 1 spins on MPI_Parrived(A_k, p)
 *           (checking bytes), then fills and readies B_k, then MPI_Wait on everything.
 * This is a valid MPI program: rank 0 readied all of A before it spins, and MPI_Parrived
 * must make progress. An engine whose MPI_Parrived only polls the network for B's messages
 * (and not the engine's handshake queue) never sends A: both ranks spin forever. With
 * MPIR_CVAR_CH4_NUM_VCIS > 1 this hung before the fix; with 1 VCI it always passed.
 * A spin that lasts more than -limit seconds (default 30) is reported and aborts the job.
 * Every byte of A and B is checked every iteration.
 *
 * Arguments: -rounds=N -pairs=N -iter=N (iterations per round) -count=N (ints per op)
 *            -limit=S
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define MAXPAIRS 8
#define APARTS_S 8      /* A: send partitions (rank 0) */
#define APARTS_R 4      /* A: receive partitions (rank 1) */
#define BPARTS_S 4      /* B: send partitions (rank 1) */
#define BPARTS_R 8      /* B: receive partitions (rank 0) */

static int rank, errs = 0, count;
static double limit;

static int val(int dir, int round, int k, int it, int i)
{
    return 1 + dir * 500000009 + round * 1000003 + k * 100003 + it * 7919 + i;
}

static void check(const int *buf, int lo, int hi, int dir, int round, int k, int it,
                  const char *what)
{
    for (int i = lo; i < hi; i++)
        if (buf[i] != val(dir, round, k, it, i)) {
            if (errs < 10)
                fprintf(stderr, "rank %d round %d op %d iter %d: %s: buf[%d] = %d, expected %d\n",
                        rank, round, k, it, what, i, buf[i], val(dir, round, k, it, i));
            errs++;
        }
}

/* spin on MPI_Parrived over every partition of nreq receive requests; nothing else */
static void spin_parrived(MPI_Request * req, int **buf, int nreq, int parts, int dir, int round,
                          int it)
{
    char seen[MAXPAIRS][64];
    int left = nreq * parts, c = count / parts;
    double t0 = MPI_Wtime();

    memset(seen, 0, sizeof(seen));
    while (left > 0) {
        for (int k = 0; k < nreq; k++)
            for (int p = 0; p < parts; p++) {
                int flag = 0, err;
                if (seen[k][p])
                    continue;
                err = MPI_Parrived(req[k], p, &flag);
                if (err != MPI_SUCCESS) {
                    fprintf(stderr, "rank %d round %d iter %d: MPI_Parrived(op %d, %d) "
                            "returned error %d\n", rank, round, it, k, p, err);
                    errs++;
                    flag = 1;
                }
                if (flag) {
                    seen[k][p] = 1;
                    left--;
                    check(buf[k], p * c, (p + 1) * c, dir, round, k, it, "arrived partition");
                }
            }
        if (left > 0 && MPI_Wtime() - t0 > limit) {
            fprintf(stderr, "rank %d round %d iter %d: %d partitions still not arrived after "
                    "%.0f s of MPI_Parrived (C1: MPI_Parrived does not progress the other "
                    "operation's handshake)\n", rank, round, it, left, limit);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

int main(int argc, char *argv[])
{
    int size, rounds, npairs, iters;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 6);
    npairs = MTestArgListGetInt_with_default(head, "pairs", 3);
    iters = MTestArgListGetInt_with_default(head, "iter", 3);
    count = MTestArgListGetInt_with_default(head, "count", 4096);
    limit = MTestArgListGetInt_with_default(head, "limit", 30);
    MTestArgListDestroy(head);
    if (npairs > MAXPAIRS)
        npairs = MAXPAIRS;
    if (count % 8) {
        fprintf(stderr, "count must be a multiple of 8\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    int *abuf[MAXPAIRS], *bbuf[MAXPAIRS];
    for (int k = 0; k < npairs; k++) {
        abuf[k] = malloc(count * sizeof(int));
        bbuf[k] = malloc(count * sizeof(int));
    }

    for (int r = 0; r < rounds; r++) {
        MPI_Request a[MAXPAIRS], b[MAXPAIRS], go_req = MPI_REQUEST_NULL;
        int go = r, tag_a = 100 + 2 * MAXPAIRS * r, tag_b = tag_a + MAXPAIRS;

        if (rank == 1) {
            for (int k = 0; k < npairs; k++)
                MPI_Psend_init(bbuf[k], BPARTS_S, count / BPARTS_S, MPI_INT, 0, tag_b + k,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &b[k]);
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            for (int k = 0; k < npairs; k++)
                MPI_Psend_init(abuf[k], APARTS_S, count / APARTS_S, MPI_INT, 1, tag_a + k,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &a[k]);
            MPI_Barrier(MPI_COMM_WORLD);
            /* let the announcements of B in, so that MPI_Precv_init(B) matches at once */
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 0.01) {
                int flag;
                MPI_Iprobe(1, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            }
            for (int k = 0; k < npairs; k++)
                MPI_Precv_init(bbuf[k], BPARTS_R, count / BPARTS_R, MPI_INT, 1, tag_b + k,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &b[k]);
        }

        for (int it = 0; it < iters; it++) {
            if (rank == 0) {
                for (int k = 0; k < npairs; k++)
                    memset(bbuf[k], 0, count * sizeof(int));
                MPI_Startall(npairs, a);
                MPI_Startall(npairs, b);
                for (int k = 0; k < npairs; k++) {
                    for (int i = 0; i < count; i++)
                        abuf[k][i] = val(0, r, k, it, i);
                    MPI_Pready_range(0, APARTS_S - 1, a[k]);
                }
                if (it == 0)
                    MPI_Isend(&go, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &go_req);
                spin_parrived(b, bbuf, npairs, BPARTS_R, 1, r, it);
                MPI_Waitall(npairs, b, MPI_STATUSES_IGNORE);
                MPI_Waitall(npairs, a, MPI_STATUSES_IGNORE);
                if (it == 0)
                    MPI_Wait(&go_req, MPI_STATUS_IGNORE);
                for (int k = 0; k < npairs; k++)
                    check(bbuf[k], 0, count, 1, r, k, it, "after MPI_Wait");
            } else {
                if (it == 0) {
                    int got = -1;
                    MPI_Recv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (got != r) {
                        fprintf(stderr, "rank 1 round %d: go message %d\n", r, got);
                        errs++;
                    }
                    for (int k = 0; k < npairs; k++)
                        MPI_Precv_init(abuf[k], APARTS_R, count / APARTS_R, MPI_INT, 0,
                                       tag_a + k, MPI_COMM_WORLD, MPI_INFO_NULL, &a[k]);
                }
                for (int k = 0; k < npairs; k++)
                    memset(abuf[k], 0, count * sizeof(int));
                MPI_Startall(npairs, a);
                MPI_Startall(npairs, b);
                spin_parrived(a, abuf, npairs, APARTS_R, 0, r, it);
                for (int k = 0; k < npairs; k++) {
                    for (int i = 0; i < count; i++)
                        bbuf[k][i] = val(1, r, k, it, i);
                    MPI_Pready_range(0, BPARTS_S - 1, b[k]);
                }
                MPI_Waitall(npairs, a, MPI_STATUSES_IGNORE);
                MPI_Waitall(npairs, b, MPI_STATUSES_IGNORE);
                for (int k = 0; k < npairs; k++)
                    check(abuf[k], 0, count, 0, r, k, it, "after MPI_Wait");
            }
        }
        for (int k = 0; k < npairs; k++) {
            MPI_Request_free(&a[k]);
            MPI_Request_free(&b[k]);
        }
    }

    for (int k = 0; k < npairs; k++) {
        free(abuf[k]);
        free(bbuf[k]);
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
