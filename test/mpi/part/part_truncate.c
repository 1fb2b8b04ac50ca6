/*
 * part_truncate.c: a send larger than the receive fails every iteration (2 processes;
 * review section 3: part_errors checked truncation in the first iteration only, README
 * section 7 promises "every iteration").
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD, MPI_COMM_SELF and the communicator used.
 * For several geometries (same and different partition counts, 4 bytes and 4 KiB too
 * many), 5 iterations each:
 * - MPI_Wait (MPI_Test in a loop every other iteration) returns an error of class
 *   MPI_ERR_TRUNCATE on both sides;
 * - the receive buffer stays untouched (nothing is sent);
 * - on the receiver, in every other iteration before it completes, MPI_Parrived on each
 *   partition returns that error too (MPI_ERR_TRUNCATE), never "arrived" with success for
 *   data that never came (flag 0 while the answer is not known yet);
 * - on the sender, MPI_Pready of every partition succeeds, whether readied before or
 *   after the receiver's answer could have arrived.
 * Afterwards a pair of the right size on the same tag carries correct data.
 * Every error's text must name the truncation with both ranks' byte counts.
 *
 * -churn=N (default 0): before each iteration both ranks make N errors of their own
 * (MPI_Send to a rank that does not exist, each checked to be MPI_ERR_RANK). MPICH's ring
 * of error messages then wraps between iterations: the engine returned the first
 * iteration's code again, which came back as MPI_ERR_OTHER without the cause ("Ring ids do
 * not match"; found by a review of 2026-12-07; engine README section 7, part_error.c).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 5
#define SENTINEL 0x33333333

static int rank, errs = 0;
static MPI_Comm comm;

static void pair_sync(void)
{
    int a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, comm,
                 MPI_STATUS_IGNORE);
}

static int err_class(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

/* -churn: n errors of this process's own */
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

/* err (class MPI_ERR_TRUNCATE, checked by the caller) must name the truncation: rank 0
 * sends sbytes, rank 1 receives at most rbytes */
static void check_text(int err, long sbytes, long rbytes, const char *call, int c, int it)
{
    char text[MPI_MAX_ERROR_STRING], want[256];
    int len = 0;
    if (err == MPI_SUCCESS)
        return;
    snprintf(want, sizeof(want), "Partitioned send larger than the receive buffer: rank 0 "
             "sends %ld bytes, rank 1 receives at most %ld bytes", sbytes, rbytes);
    text[0] = '\0';
    MPI_Error_string(err, text, &len);
    if (strstr(text, want) == NULL) {
        fprintf(stderr, "rank %d case %d iter %d: %s's error does not name the truncation "
                "(\"%s\"); it is:\n%s\n", rank, c, it, call, want, text);
        errs++;
    }
}

static int complete(MPI_Request * req, MPI_Status * st, int use_test)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    if (!use_test)
        return MPI_Wait(req, st);
    do {
        err = MPI_Test(req, &flag, st);
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

/* Receiver: poll MPI_Parrived on partition p until it answers (20 s at most). Before the
 * plan it says "not yet"; then it must return the truncation, not flag 1 with success. */
static void parrived_fails(MPI_Request req, int c, int it, int p, long sbytes, long rbytes)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    do
        err = MPI_Parrived(req, p, &flag);
    while (err == MPI_SUCCESS && !flag && MPI_Wtime() - t0 < 20.0);
    if (err_class(err) != MPI_ERR_TRUNCATE) {
        fprintf(stderr, "rank 1 case %d iter %d: MPI_Parrived(%d) returned class %d with flag "
                "%d, expected MPI_ERR_TRUNCATE (%d)\n", c, it, p, err_class(err), flag,
                MPI_ERR_TRUNCATE);
        errs++;
    }
    check_text(err, sbytes, rbytes, "MPI_Parrived", c, it);
}

static int nchurn = 0;

static void run_case(int c, int spart, int scount, int rpart, int rcount)
{
    int stotal = spart * scount, rtotal = rpart * rcount;
    int *buf = calloc(stotal > rtotal ? stotal : rtotal, sizeof(int));
    MPI_Request req;
    int tag = 10 + c;

    if (rank == 0)
        MPI_Psend_init(buf, spart, scount, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, rpart, rcount, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
    long sbytes = (long) stotal * (long) sizeof(int), rbytes = (long) rtotal * (long) sizeof(int);
    for (int it = 0; it < ITERS; it++) {
        MPI_Status st;
        int err, cls;
        st.MPI_ERROR = MPI_SUCCESS;
        churn(nchurn);
        if (rank == 0) {
            for (int i = 0; i < stotal; i++)
                buf[i] = 1 + it * 1000 + i;
            MPI_Start(&req);
            for (int p = 0; p < spart; p++) {
                err = MPI_Pready(p, req);
                if (err != MPI_SUCCESS) {
                    fprintf(stderr, "rank 0 case %d iter %d: MPI_Pready(%d) returned class %d\n",
                            c, it, p, err_class(err));
                    errs++;
                }
            }
        } else {
            for (int i = 0; i < rtotal; i++)
                buf[i] = SENTINEL;
            MPI_Start(&req);
            if (it % 2 == 0)
                for (int p = 0; p < rpart; p++)
                    parrived_fails(req, c, it, p, sbytes, rbytes);
        }
        err = complete(&req, &st, it % 2);
        cls = err_class(err);
        if (cls != MPI_ERR_TRUNCATE) {
            fprintf(stderr, "rank %d case %d (send %d x %d ints, receive %d x %d) iter %d: %s "
                    "returned class %d, expected MPI_ERR_TRUNCATE (%d)\n", rank, c, spart,
                    scount, rpart, rcount, it, it % 2 ? "MPI_Test" : "MPI_Wait", cls,
                    MPI_ERR_TRUNCATE);
            errs++;
        }
        check_text(err, sbytes, rbytes, it % 2 ? "MPI_Test" : "MPI_Wait", c, it);
        if (rank == 1) {
            for (int i = 0; i < rtotal; i++)
                if (buf[i] != SENTINEL) {
                    fprintf(stderr, "rank 1 case %d iter %d: receive buffer written at %d\n", c,
                            it, i);
                    errs++;
                    break;
                }
        }
    }
    MPI_Request_free(&req);
    free(buf);
    pair_sync();
}

static void right_size(void)
{
    int buf[256] = { 0 };
    MPI_Request req;
    const int tag = 10;

    if (rank == 0)
        MPI_Psend_init(buf, 4, 64, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, 8, 32, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 256; i++)
            buf[i] = rank == 0 ? 5 + it * 1000 + i : 0;
        MPI_Start(&req);
        if (rank == 0)
            MPI_Pready_range(0, 3, req);
        if (err_class(complete(&req, MPI_STATUS_IGNORE, 1)) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d iter %d: the right-size pair failed\n", rank, it);
            errs++;
        }
        if (rank == 1)
            for (int i = 0; i < 256; i++)
                if (buf[i] != 5 + it * 1000 + i) {
                    fprintf(stderr, "rank 1 iter %d: right-size pair: buf[%d] = %d, expected "
                            "%d\n", it, i, buf[i], 5 + it * 1000 + i);
                    errs++;
                    break;
                }
    }
    MPI_Request_free(&req);
    pair_sync();
}

int main(int argc, char *argv[])
{
    int size;

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

    run_case(0, 4, 16, 4, 8);   /* same partitions, twice the bytes */
    run_case(1, 2, 100, 8, 20); /* 800 bytes into 640 */
    run_case(2, 8, 129, 8, 128);        /* 4 bytes per partition too many */
    run_case(3, 1, 2048, 2, 512);       /* 4 KiB too many */
    run_case(4, 3, 1, 1, 2);    /* 12 bytes into 8 */
    right_size();

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
