/*
 * part_active_free.c: MPI_Request_free on an active partitioned request (2 processes;
 * review finding C7: the freed receive's id was recycled while its receives were still
 * posted, so a new operation on the same communicator, peer and tag lost its data to them).
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD, MPI_COMM_SELF and the communicator used.
 * What it asserts, for the send side and for the receive side:
 * - MPI_Request_free on a started, not yet completed partitioned request returns an error
 *   of class MPI_ERR_REQUEST and leaves the handle valid (not MPI_REQUEST_NULL).
 * - The iteration then completes normally (the remaining partitions are readied, MPI_Wait
 *   succeeds on both sides, the data is right), after which MPI_Request_free succeeds.
 * - Receive side, C7's scenario: while the receive whose free failed is still active (its
 *   receives are posted, the sender has readied nothing of it), a NEW pair of operations is
 *   created on the same communicator, peer and tag, and the sender readies and completes
 *   the new operation first. The new receive must get the new data (and the old one, once
 *   its sender readies it, the old data). Before the fix, the freed receive's tag id went
 *   to the new operation and the stale receives took the new data.
 * - Several iterations of a fresh pair on the same tag afterwards carry correct data.
 * A receive that does not complete within 20 s is reported and aborts the job.
 *
 * Arguments: -only=1 (send side only), -only=2 (receive side only); default both.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define N 1024          /* ints per operation */
#define TAG 7

static int rank, errs = 0;
static MPI_Comm comm;

static void pair_sync(void)
{
    int a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, comm,
                 MPI_STATUS_IGNORE);
}

static int val(int op, int it, int i)
{
    return 1 + op * 1000003 + it * 7919 + i;
}

static void fill(int *buf, int op, int it)
{
    for (int i = 0; i < N; i++)
        buf[i] = val(op, it, i);
}

static void check(const int *buf, int op, int it, const char *what)
{
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (buf[i] != val(op, it, i)) {
            if (bad < 5)
                fprintf(stderr, "rank %d: %s iter %d: buf[%d] = %d, expected %d (op %d)%s\n",
                        rank, what, it, i, buf[i], val(op, it, i), op,
                        buf[i] != 0 ? " - data of another operation?" : "");
            bad++;
        }
    errs += bad;
}

static void expect_class(int err, int cls, const char *what)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    if (c != cls) {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d: %s returned class %d (%s), expected class %d\n", rank, what,
                c, err == MPI_SUCCESS ? "MPI_SUCCESS" : s, cls);
        errs++;
    }
}

/* MPI_Wait with a deadline (a lost iteration must fail, not hang) */
static void wait_limit(MPI_Request * req, const char *what)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    if (*req == MPI_REQUEST_NULL)
        return;
    while (!flag) {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) {
            expect_class(err, MPI_SUCCESS, what);
            return;
        }
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: not complete after 20 s\n", rank, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* free an active request: must fail with MPI_ERR_REQUEST and keep the handle */
static void free_active(MPI_Request * req, const char *what)
{
    MPI_Request before = *req;
    int err = MPI_Request_free(req);
    expect_class(err, MPI_ERR_REQUEST, what);
    if (*req == MPI_REQUEST_NULL || *req != before) {
        fprintf(stderr, "rank %d: %s: the handle changed (%s)\n", rank, what,
                *req == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL" : "other value");
        errs++;
        if (err == MPI_SUCCESS)
            *req = MPI_REQUEST_NULL;    /* freed after all: nothing left to complete */
        else
            *req = before;
    }
}

/* fresh pair on the same tag, a few iterations */
static void fresh_pair(int op, int spart, int rpart, int iters)
{
    int *buf = calloc(N, sizeof(int));
    MPI_Request req;

    if (rank == 0)
        MPI_Psend_init(buf, spart, N / spart, MPI_INT, 1, TAG, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, rpart, N / rpart, MPI_INT, 0, TAG, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            fill(buf, op, it);
            MPI_Start(&req);
            MPI_Pready_range(0, spart - 1, req);
            wait_limit(&req, "fresh pair: send");
        } else {
            memset(buf, 0, N * sizeof(int));
            MPI_Start(&req);
            wait_limit(&req, "fresh pair: receive");
            check(buf, op, it, "fresh pair on the same tag");
        }
    }
    expect_class(MPI_Request_free(&req), MPI_SUCCESS, "MPI_Request_free (fresh pair)");
    free(buf);
    pair_sync();
}

/* the sender frees its request while active */
static void send_side(void)
{
    int *buf = calloc(N, sizeof(int));
    MPI_Request req;

    if (rank == 0) {
        MPI_Psend_init(buf, 4, N / 4, MPI_INT, 1, TAG, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3 && req != MPI_REQUEST_NULL; it++) {
            fill(buf, 1, it);
            MPI_Start(&req);
            MPI_Pready(2, req);
            MPI_Pready(0, req);
            if (it == 1)
                free_active(&req, "MPI_Request_free on an active send request");
            if (req != MPI_REQUEST_NULL) {
                MPI_Pready(1, req);
                MPI_Pready(3, req);
                wait_limit(&req, "send after a failed free");
            }
        }
        if (req != MPI_REQUEST_NULL)
            expect_class(MPI_Request_free(&req), MPI_SUCCESS,
                         "MPI_Request_free on the completed send request");
    } else {
        MPI_Precv_init(buf, 2, N / 2, MPI_INT, 0, TAG, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            memset(buf, 0, N * sizeof(int));
            MPI_Start(&req);
            wait_limit(&req, "receive (sender tried to free its active request)");
            check(buf, 1, it, "receive while the sender freed its active request");
        }
        expect_class(MPI_Request_free(&req), MPI_SUCCESS, "MPI_Request_free (receive)");
    }
    free(buf);
    pair_sync();
    fresh_pair(2, 8, 4, 3);
}

/* the receiver frees its request while active; a new pair on the same tag runs meanwhile */
static void recv_side(void)
{
    int *buf = calloc(N, sizeof(int)), *nbuf = calloc(N, sizeof(int));
    MPI_Request req, nreq;

    if (rank == 0) {
        MPI_Psend_init(buf, 4, N / 4, MPI_INT, 1, TAG, comm, MPI_INFO_NULL, &req);
        /* iteration 0: normal (the operation is matched and planned) */
        fill(buf, 3, 0);
        MPI_Start(&req);
        MPI_Pready_range(0, 3, req);
        wait_limit(&req, "old send, iteration 0");
        /* iteration 1: started, nothing readied until the new pair is done */
        fill(buf, 3, 1);
        MPI_Start(&req);
        pair_sync();    /* the receiver has started and tried to free */
        MPI_Psend_init(nbuf, 2, N / 2, MPI_INT, 1, TAG, comm, MPI_INFO_NULL, &nreq);
        for (int it = 0; it < 2; it++) {
            fill(nbuf, 4, it);
            MPI_Start(&nreq);
            MPI_Pready_range(0, 1, nreq);
            wait_limit(&nreq, "new send while the old receive is active");
        }
        pair_sync();    /* the receiver checked the new data */
        MPI_Pready_range(0, 3, req);
        wait_limit(&req, "old send, iteration 1");
        expect_class(MPI_Request_free(&req), MPI_SUCCESS, "MPI_Request_free (old send)");
        expect_class(MPI_Request_free(&nreq), MPI_SUCCESS, "MPI_Request_free (new send)");
    } else {
        MPI_Precv_init(buf, 4, N / 4, MPI_INT, 0, TAG, comm, MPI_INFO_NULL, &req);
        memset(buf, 0, N * sizeof(int));
        MPI_Start(&req);
        wait_limit(&req, "old receive, iteration 0");
        check(buf, 3, 0, "old receive, iteration 0");
        memset(buf, 0, N * sizeof(int));
        MPI_Start(&req);
        free_active(&req, "MPI_Request_free on an active receive request");
        pair_sync();
        MPI_Precv_init(nbuf, 4, N / 4, MPI_INT, 0, TAG, comm, MPI_INFO_NULL, &nreq);
        for (int it = 0; it < 2; it++) {
            memset(nbuf, 0, N * sizeof(int));
            MPI_Start(&nreq);
            wait_limit(&nreq, "new receive while the old receive is active");
            check(nbuf, 4, it, "new operation on the same tag while the old receive is active");
        }
        pair_sync();
        if (req != MPI_REQUEST_NULL) {
            wait_limit(&req, "old receive, iteration 1");
            check(buf, 3, 1, "old receive, iteration 1 (completed after a failed free)");
            expect_class(MPI_Request_free(&req), MPI_SUCCESS, "MPI_Request_free (old receive)");
        }
        expect_class(MPI_Request_free(&nreq), MPI_SUCCESS, "MPI_Request_free (new receive)");
    }
    free(buf);
    free(nbuf);
    pair_sync();
    fresh_pair(5, 1, 8, 3);
}

int main(int argc, char *argv[])
{
    int size;

    MTest_Init(&argc, &argv);
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

    MTestArgList *head = MTestArgListCreate(argc, argv);
    int only = MTestArgListGetInt_with_default(head, "only", 0);
    MTestArgListDestroy(head);
    if (only != 2)
        send_side();
    if (only != 1)
        recv_side();

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
