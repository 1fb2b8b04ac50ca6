/*
 * part_inactive_status.c: the status of an inactive partitioned request, and MPI_Cancel.
 *
 * What it asserts (maint/patches/0012):
 * - MPI_Test on a partitioned request never started: flag true, the empty status
 *   (MPI_ANY_SOURCE, MPI_ANY_TAG, count 0), MPI_SUCCESS; on both sides.
 * - MPI_Cancel on an active partitioned request (after MPI_Start, before any partition
 *   is ready): MPI_ERR_REQUEST, and the request is unchanged: its iteration then completes
 *   with every element right.
 * - MPI_Wait at the iteration's end: the receiver's status names the sender, the tag and
 *   the element count. A second MPI_Test, and MPI_Wait, on the now inactive request: the
 *   empty status again (4.0.2 repeated the last iteration's), on both sides.
 * - MPI_Request_get_status (maint/patches/0014): on the request never started, flag true
 *   and the empty status; on the active request once its iteration is done (polled), flag
 *   true and, on the receiver, the full status (sender, tag, count), twice in a row,
 *   without inactivating it: MPI_Wait then still gives the full status; once inactive, the
 *   empty status again. 4.0.2 left the caller's status untouched.
 * - Run with 2 processes.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define PARTS 8
#define COUNT 16
#define TAG 27

static int rank, errs;

static void check_empty(MPI_Status * st, const char *when)
{
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    if (st->MPI_SOURCE != MPI_ANY_SOURCE || st->MPI_TAG != MPI_ANY_TAG || n != 0) {
        fprintf(stderr, "rank %d, %s: status source %d tag %d count %d, expected the empty "
                "status (%d %d 0)\n", rank, when, st->MPI_SOURCE, st->MPI_TAG, n,
                MPI_ANY_SOURCE, MPI_ANY_TAG);
        errs++;
    }
}

/* MPI_Test on the inactive request: done at once, MPI_SUCCESS, the empty status */
static void test_inactive(MPI_Request * req, const char *when)
{
    MPI_Status st;
    int flag = 0;
    st.MPI_SOURCE = 77;
    st.MPI_TAG = 77;
    int rc = MPI_Test(req, &flag, &st);
    if (rc != MPI_SUCCESS || !flag) {
        fprintf(stderr, "rank %d, %s: MPI_Test: rc %d flag %d\n", rank, when, rc, flag);
        errs++;
    }
    check_empty(&st, when);
}

/* MPI_Request_get_status on the inactive request: flag true, MPI_SUCCESS, the empty status */
static void get_status_inactive(MPI_Request req, const char *when)
{
    MPI_Status st;
    int flag = 0;
    st.MPI_SOURCE = 77;
    st.MPI_TAG = 77;
    int rc = MPI_Request_get_status(req, &flag, &st);
    if (rc != MPI_SUCCESS || !flag) {
        fprintf(stderr, "rank %d, %s: MPI_Request_get_status: rc %d flag %d\n", rank, when, rc,
                flag);
        errs++;
    }
    check_empty(&st, when);
}

/* Receiver: the status of the completed iteration (sender 0, TAG, PARTS * COUNT ints) */
static void check_full(MPI_Status * st, const char *when)
{
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    if (st->MPI_SOURCE != 0 || st->MPI_TAG != TAG || n != PARTS * COUNT) {
        fprintf(stderr, "rank 1, %s: status source %d tag %d count %d, expected 0 %d %d\n",
                when, st->MPI_SOURCE, st->MPI_TAG, n, TAG, PARTS * COUNT);
        errs++;
    }
}

/* MPI_Request_get_status on the active request until its iteration is done (20 s at most),
 * then once more: both report it, the receiver's with the full status */
static void get_status_done(MPI_Request req)
{
    for (int call = 0; call < 2; call++) {
        MPI_Status st;
        int flag = 0, rc;
        double t0 = MPI_Wtime();
        do {
            st.MPI_SOURCE = 77;
            st.MPI_TAG = 77;
            rc = MPI_Request_get_status(req, &flag, &st);
        } while (rc == MPI_SUCCESS && !flag && MPI_Wtime() - t0 < 20.0);
        if (rc != MPI_SUCCESS || !flag) {
            fprintf(stderr, "rank %d: MPI_Request_get_status on the active request, call %d: "
                    "rc %d flag %d\n", rank, call, rc, flag);
            errs++;
        } else if (rank == 1) {
            check_full(&st, call ? "MPI_Request_get_status again" : "MPI_Request_get_status");
        }
    }
}

int main(int argc, char **argv)
{
    int buf[PARTS * COUNT], rc, size;
    MPI_Request req;
    MPI_Status st;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "needs 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (rank < 2) {
        if (rank == 0)
            MPI_Psend_init(buf, PARTS, COUNT, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);
        else
            MPI_Precv_init(buf, PARTS, COUNT, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);

        get_status_inactive(req, "MPI_Request_get_status, never started");
        test_inactive(&req, "never started");

        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = rank == 0 ? i * 3 + 1 : -1;
        MPI_Start(&req);
        rc = MPI_Cancel(&req);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_REQUEST) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "rank %d: MPI_Cancel on an active partitioned request: class %d "
                    "(%s), expected MPI_ERR_REQUEST\n", rank, cls, msg);
            errs++;
        }
        if (rank == 0)
            MPI_Pready_range(0, PARTS - 1, req);
        get_status_done(req);
        rc = MPI_Wait(&req, &st);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: MPI_Wait after the refused cancel: rc %d\n", rank, rc);
            errs++;
        }
        if (rank == 1) {
            check_full(&st, "MPI_Wait after MPI_Request_get_status");
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != i * 3 + 1 && errs++ < 5)
                    fprintf(stderr, "rank 1: element %d is %d, expected %d\n", i, buf[i],
                            i * 3 + 1);
        }

        get_status_inactive(req, "MPI_Request_get_status after completion");
        test_inactive(&req, "MPI_Test after completion");
        rc = MPI_Wait(&req, &st);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: second MPI_Wait: rc %d\n", rank, rc);
            errs++;
        }
        check_empty(&st, "MPI_Wait after completion");
        MPI_Request_free(&req);
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
