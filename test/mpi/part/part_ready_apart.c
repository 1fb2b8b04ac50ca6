/*
 * part_ready_apart.c: partitions readied apart never wait for each other, with the default
 * aggregator, also where the RDMA transports' timer cannot serve (more than 1024 sender
 * partitions). 2 processes.
 *
 * Each iteration the sender readies every partition but one (in a shuffled order) and then
 * waits for the receiver's word; the receiver polls MPI_Parrived until every partition but
 * that one arrived, checks their bytes, and sends the word; only then does the sender ready
 * the last partition. A layout that merges a readied partition with the last one hangs
 * here (2048 partitions over libfabric and verbs did until 2026-12-01: the model planned
 * merges at match where no timer or re-plan adapts them); the waits are bounded (20 s), so
 * it fails instead.
 * Asserts: every partition but the last arrives before the last is readied, with its
 * bytes; MPI_Parrived is false for the last one until then; after MPI_Wait every byte of
 * the receive buffer is right.
 *
 * Arguments: -parts=N (both sides; default 2048) -count=N (ints per partition; default 2)
 *            -iter=N (3)
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define SENTINEL (-7)

static int rank, errs = 0;

static int val(int it, int i)
{
    return 1 + it * 1000003 + i;
}

int main(int argc, char **argv)
{
    int size, parts = 2048, count = 2, iters = 3;

    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-parts=", 7) == 0)
            parts = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "-count=", 7) == 0)
            count = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "-iter=", 6) == 0)
            iters = atoi(argv[i] + 6);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || parts < 2 || count < 1) {
        fprintf(stderr, "needs 2 processes, -parts >= 2, -count >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    const int n = parts * count;
    int *buf = malloc(sizeof(int) * (size_t) n);
    int *order = malloc(sizeof(int) * (size_t) parts);
    MPI_Request req;
    if (rank == 0)
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    srand(11);
    for (int it = 0; it < iters && errs == 0; it++) {
        int word = 0, last;
        for (int p = 0; p < parts; p++)
            order[p] = p;
        for (int p = parts - 1; p > 0; p--) {
            int j = rand() % (p + 1), t = order[p];
            order[p] = order[j];
            order[j] = t;
        }
        last = order[parts - 1];
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                buf[i] = val(it, i);
            MPI_Start(&req);
            for (int p = 0; p < parts - 1; p++)
                MPI_Pready(order[p], req);
            MPI_Request wr;
            int flag = 0;
            double t0 = MPI_Wtime();
            MPI_Irecv(&word, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &wr);
            while (!flag && MPI_Wtime() - t0 < 20.0)
                MPI_Test(&wr, &flag, MPI_STATUS_IGNORE);
            if (!flag) {
                fprintf(stderr, "iteration %d: the receiver never saw the %d partitions "
                        "readied (20 s)\n", it, parts - 1);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Pready(last, req);
        } else {
            for (int i = 0; i < n; i++)
                buf[i] = SENTINEL;
            MPI_Start(&req);
            int got = 0, flag;
            double t0 = MPI_Wtime();
            char *seen = calloc((size_t) parts, 1);
            while (got < parts - 1 && MPI_Wtime() - t0 < 20.0)
                for (int p = 0; p < parts; p++)
                    if (!seen[p] && MPI_Parrived(req, p, &flag) == MPI_SUCCESS && flag) {
                        seen[p] = 1;
                        got++;
                    }
            if (got < parts - 1 || seen[last]) {
                fprintf(stderr, "iteration %d: %d of the %d partitions readied arrived in "
                        "20 s; the last one, not readied, %s\n", it, got - seen[last],
                        parts - 1, seen[last] ? "was reported arrived" : "had not");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            /* the arrived partitions' bytes are there */
            for (int p = 0; p < parts && errs < 5; p++)
                for (int i = 0; p != last && i < count; i++) {
                    int at = p * count + i;
                    if (buf[at] != val(it, at)) {
                        fprintf(stderr, "iteration %d: partition %d arrived but int %d is "
                                "%d, expected %d\n", it, p, at, buf[at], val(it, at));
                        errs++;
                        break;
                    }
                }
            free(seen);
            MPI_Send(&word, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        }
        if (MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d iteration %d: MPI_Wait failed\n", rank, it);
            errs++;
        }
        if (rank == 1)
            for (int i = 0; i < n; i++) {
                if (buf[i] != val(it, i)) {
                    fprintf(stderr, "iteration %d: int %d is %d, expected %d\n", it, i,
                            buf[i], val(it, i));
                    errs++;
                    break;
                }
            }
    }
    MPI_Request_free(&req);
    free(order);
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
