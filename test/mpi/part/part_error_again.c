/*
 * part_error_again.c: a failed partitioned operation reports its error, class and text, in
 * every later iteration, however many other errors the program made meanwhile (2
 * processes; found by a review, 2026-12-07).
 *
 * MPICH's error code names a slot of a ring of messages that later errors reuse. The engine
 * kept the first iteration's code and returned it again: after ~128 other errors MPICH
 * printed "Ring ids do not match" and MPI_Wait returned MPI_ERR_OTHER without the cause.
 *
 * Rank 0 sends 4 x 8 ints into rank 1's receive of 2 x 8 ints (a truncation: every
 * iteration fails, README section 7). ITERS iterations; before each, both ranks make
 * -churn (default 300) errors of their own (MPI_Send to a rank that does not exist, each
 * checked to return MPI_ERR_RANK). Each iteration, on both sides:
 * - MPI_Wait (MPI_Test in a loop every other iteration) returns class MPI_ERR_TRUNCATE, and
 *   MPI_Error_string's text names the truncation with both ranks' byte counts;
 * - on rank 1, in every other iteration, MPI_Parrived of each partition returns the same
 *   (polled until it answers);
 * - the receive buffer keeps its sentinel.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 6
#define SPARTS 4
#define RPARTS 2
#define COUNT 8
#define SENTINEL 0x5a5a5a5a

static int rank, errs = 0;
static MPI_Comm comm;

static int err_class(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

/* The program's own errors: n sends to a rank that does not exist. */
static void churn(int n)
{
    int x = 0, size;
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < n; i++) {
        int err = MPI_Send(&x, 1, MPI_INT, size + 7, 0, comm);
        if (err_class(err) != MPI_ERR_RANK) {
            fprintf(stderr, "rank %d: MPI_Send to rank %d returned class %d, expected "
                    "MPI_ERR_RANK (%d)\n", rank, size + 7, err_class(err), MPI_ERR_RANK);
            errs++;
            return;
        }
    }
}

/* err must be the truncation, its text naming it with both ranks' byte counts. */
static void check_error(int err, const char *call, int it)
{
    char text[MPI_MAX_ERROR_STRING], want[256];
    int len = 0;
    snprintf(want, sizeof(want), "Partitioned send larger than the receive buffer: rank 0 "
             "sends %d bytes, rank 1 receives at most %d bytes",
             (int) (SPARTS * COUNT * sizeof(int)), (int) (RPARTS * COUNT * sizeof(int)));
    if (err_class(err) != MPI_ERR_TRUNCATE) {
        fprintf(stderr, "rank %d iter %d: %s returned class %d, expected MPI_ERR_TRUNCATE "
                "(%d)\n", rank, it, call, err_class(err), MPI_ERR_TRUNCATE);
        errs++;
    }
    if (err == MPI_SUCCESS)
        return;
    text[0] = '\0';
    MPI_Error_string(err, text, &len);
    if (strstr(text, want) == NULL) {
        fprintf(stderr, "rank %d iter %d: %s's error text does not name the truncation "
                "(\"%s\"); it is:\n%s\n", rank, it, call, want, text);
        errs++;
    }
}

static int complete(MPI_Request * req, int use_test)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    if (!use_test)
        return MPI_Wait(req, MPI_STATUS_IGNORE);
    do {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS)
            return err;
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: MPI_Test loop: not complete after 20 s\n", rank);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } while (!flag);
    return MPI_SUCCESS;
}

int main(int argc, char *argv[])
{
    int size, nchurn = 300;
    int buf[SPARTS * COUNT];
    MPI_Request req;

    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-churn=", 7) == 0)
            nchurn = atoi(argv[i] + 7);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    if (rank == 0)
        MPI_Psend_init(buf, SPARTS, COUNT, MPI_INT, 1, 5, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, RPARTS, COUNT, MPI_INT, 0, 5, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < ITERS; it++) {
        churn(nchurn);
        if (rank == 0) {
            for (int i = 0; i < SPARTS * COUNT; i++)
                buf[i] = it * 1000 + i;
            MPI_Start(&req);
            for (int p = 0; p < SPARTS; p++) {
                int err = MPI_Pready(p, req);
                if (err != MPI_SUCCESS) {
                    fprintf(stderr, "rank 0 iter %d: MPI_Pready(%d) returned class %d\n", it,
                            p, err_class(err));
                    errs++;
                }
            }
        } else {
            for (int i = 0; i < SPARTS * COUNT; i++)
                buf[i] = SENTINEL;
            MPI_Start(&req);
            if (it % 2 == 0)
                for (int p = 0; p < RPARTS; p++) {
                    int flag = 0, err;
                    double t0 = MPI_Wtime();
                    do
                        err = MPI_Parrived(req, p, &flag);
                    while (err == MPI_SUCCESS && !flag && MPI_Wtime() - t0 < 20.0);
                    check_error(err, "MPI_Parrived", it);
                }
        }
        check_error(complete(&req, it % 2), it % 2 ? "MPI_Test" : "MPI_Wait", it);
        if (rank == 1)
            for (int i = 0; i < SPARTS * COUNT; i++)
                if (buf[i] != SENTINEL) {
                    fprintf(stderr, "rank 1 iter %d: receive buffer written at int %d\n", it,
                            i);
                    errs++;
                    break;
                }
        MPI_Barrier(comm);      /* each iteration's churn after both completed the last */
    }
    MPI_Request_free(&req);

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
