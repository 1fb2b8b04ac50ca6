/*
 * part_zero_parts.c: partitioned operations with partitions = 0 (2 processes).
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD, MPI_COMM_SELF and the communicator used.
 * What it asserts (5 iterations each):
 * - MPI_Psend_init / MPI_Precv_init accept partitions = 0, also with the info key
 *   mpich_part_thread_partitions = 1 (given in every case here; an operation of 0
 *   partitions ignores it: it was MPI_ERR_INFO_VALUE, "from 1 to the 0 partitions", found
 *   by a review of 2026-12-07). Send 0 partitions against
 *   receive 0 partitions: MPI_Start then MPI_Wait completes at once on both sides every
 *   iteration; the receive status counts 0 bytes.
 *   On the active requests MPI_Pready(0, send) and MPI_Parrived(recv, 0, &flag) return
 *   MPI_ERR_ARG (partition 0 does not exist).
 * - Send 0 partitions against a receive of 4 partitions of 8 ints: allowed (receive larger
 *   than send); status count 0, the receive buffer untouched.
 * - Send 4 partitions of 8 ints against a receive of 0 partitions: MPI_Wait returns an error
 *   of class MPI_ERR_TRUNCATE on both sides, every iteration; the receive buffer untouched.
 * - Send 4 partitions of 0 ints against a receive of 0 partitions (issue 12): nothing
 *   travels, but the send must not complete before its last partition is readied: MPI_Test
 *   on it stays false after MPI_Start (the first iteration is started before the receive
 *   exists, so its plan arrives while the send is tested) and after each of the first 3
 *   partitions is readied (MPI_Pready, MPI_Pready_range, MPI_Pready_list); it completes
 *   with MPI_SUCCESS after the 4th. The receive completes with count 0; neither buffer is
 *   written.
 * - Afterwards a normal pair on the same tag carries correct data (nothing left over).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 5
#define SENTINEL 0x5a5a5a5a

static int rank, errs = 0;
static MPI_Comm comm;

static void pair_sync(void)
{
    int a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, comm,
                 MPI_STATUS_IGNORE);
}

static int expect_class(int err, int cls, const char *what, int it)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    if (c != cls) {
        char s[MPI_MAX_ERROR_STRING] = "MPI_SUCCESS";
        int len;
        if (err != MPI_SUCCESS)
            MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d iter %d: %s returned class %d (%s), expected class %d\n", rank,
                it, what, c, s, cls);
        errs++;
        return 1;
    }
    return 0;
}

static void check_untouched(const int *buf, int n, const char *what, int it)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != SENTINEL) {
            fprintf(stderr, "rank %d iter %d: %s: buf[%d] = %d was written\n", rank, it, what, i,
                    buf[i]);
            errs++;
            return;
        }
}

/* Complete with MPI_Test within 10 s (a zero-partition operation must not hang) */
static int test_limit(MPI_Request * req, MPI_Status * st, const char *what, int it)
{
    int flag = 0, err = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    while (!flag) {
        err = MPI_Test(req, &flag, st);
        if (err != MPI_SUCCESS)
            break;
        if (!flag && MPI_Wtime() - t0 > 10.0) {
            fprintf(stderr, "rank %d iter %d: %s: not complete after 10 s\n", rank, it, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return err;
}

/* send sparts x 8 ints, receive rparts x 8 ints */
static void run(int sparts, int rparts, int tag, int want_cls, const char *name)
{
    int sbuf[32] = { 0 }, rbuf[40] = { 0 }, err, flag;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    char what[200];

    MPI_Info hint;
    MPI_Info_create(&hint);
    MPI_Info_set(hint, "mpich_part_thread_partitions", "1");
    if (rank == 0)
        err = MPI_Psend_init(sbuf, sparts, 8, MPI_INT, 1, tag, comm, hint, &req);
    else
        err = MPI_Precv_init(rbuf, rparts, 8, MPI_INT, 0, tag, comm, hint, &req);
    MPI_Info_free(&hint);
    snprintf(what, sizeof(what), "%s (%s)", rank == 0 ? "MPI_Psend_init" : "MPI_Precv_init",
             name);
    /* both sides must have a request, or the case is skipped (after the error is counted) */
    int ok = !expect_class(err, MPI_SUCCESS, what, -1), both;
    MPI_Allreduce(&ok, &both, 1, MPI_INT, MPI_MIN, comm);
    if (!both) {
        if (ok && req != MPI_REQUEST_NULL)
            MPI_Request_free(&req);
        pair_sync();
        return;
    }

    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < 32; i++)
            sbuf[i] = 1 + tag * 1000 + it * 100 + i;
        for (int i = 0; i < 40; i++)
            rbuf[i] = SENTINEL;
        err = MPI_Start(&req);
        snprintf(what, sizeof(what), "MPI_Start (%s)", name);
        if (expect_class(err, MPI_SUCCESS, what, it))
            break;
        if (rank == 0) {
            if (sparts == 0) {
                snprintf(what, sizeof(what), "MPI_Pready(0) on a send of 0 partitions (%s)",
                         name);
                expect_class(MPI_Pready(0, req), MPI_ERR_ARG, what, it);
            } else {
                MPI_Pready_range(0, sparts - 1, req);
            }
        } else if (rparts == 0) {
            flag = -1;
            snprintf(what, sizeof(what), "MPI_Parrived(0) on a receive of 0 partitions (%s)",
                     name);
            expect_class(MPI_Parrived(req, 0, &flag), MPI_ERR_ARG, what, it);
        }
        st.MPI_ERROR = MPI_SUCCESS;
        snprintf(what, sizeof(what), "MPI_Wait (%s)", name);
        err = test_limit(&req, &st, what, it);
        expect_class(err, want_cls, what, it);
        if (rank == 1) {
            if (want_cls == MPI_SUCCESS) {
                int n = -1;
                MPI_Get_count(&st, MPI_INT, &n);
                if (n != 0) {
                    fprintf(stderr, "rank 1 iter %d: %s: status count %d, expected 0\n", it,
                            name, n);
                    errs++;
                }
            }
            check_untouched(rbuf, 40, name, it);
        }
        if (err != MPI_SUCCESS && req == MPI_REQUEST_NULL)
            break;
    }
    if (req != MPI_REQUEST_NULL) {
        snprintf(what, sizeof(what), "MPI_Request_free (%s)", name);
        expect_class(MPI_Request_free(&req), MPI_SUCCESS, what, -1);
    }
    pair_sync();
}

/* The send must still be incomplete: MPI_Test it for about ms milliseconds. */
static void send_not_complete(MPI_Request * req, int ms, int unready, int it)
{
    double t0 = MPI_Wtime();
    do {
        int flag = 0, err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag) {
            fprintf(stderr, "rank 0 iter %d: send of 4 x 0 ints to a receive of 0 partitions: "
                    "MPI_Test returned %d with flag %d while %d of 4 partitions are unreadied\n",
                    it, err, flag, unready);
            errs++;
            MPI_Abort(MPI_COMM_WORLD, 1);       /* the request is inactive now */
        }
    } while (MPI_Wtime() - t0 < ms / 1000.0);
}

static void zero_bytes_send(int tag)
{
    const char *name = "send 4 x 0 ints, receive 0 partitions";
    int sbuf[8], rbuf[8], err, n;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;

    for (int i = 0; i < 8; i++)
        sbuf[i] = rbuf[i] = SENTINEL;
    if (rank == 0)
        expect_class(MPI_Psend_init(sbuf, 4, 0, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req),
                     MPI_SUCCESS, "MPI_Psend_init (4 x 0 ints)", -1);
    for (int it = 0; it < ITERS; it++) {
        if (rank == 0) {
            expect_class(MPI_Start(&req), MPI_SUCCESS, "MPI_Start (4 x 0 ints)", it);
            send_not_complete(&req, 1, 4, it);
            pair_sync();        /* the receive is initialised (iteration 0) and started */
            pair_sync();        /* its PLAN is on the way: it arrives in these MPI_Test calls */
            send_not_complete(&req, 200, 4, it);
            if (it % 3 == 0) {
                for (int p = 0; p < 3; p++) {
                    MPI_Pready(p, req);
                    send_not_complete(&req, 20, 3 - p, it);
                }
            } else if (it % 3 == 1) {
                MPI_Pready_range(0, 2, req);
                send_not_complete(&req, 50, 1, it);
            } else {
                int list[3] = { 3, 0, 1 };
                MPI_Pready_list(3, list, req);
                send_not_complete(&req, 50, 1, it);
            }
            expect_class(MPI_Pready(it % 3 == 2 ? 2 : 3, req), MPI_SUCCESS,
                         "MPI_Pready of the last partition (4 x 0 ints)", it);
            err = test_limit(&req, &st, "MPI_Wait (send of 4 x 0 ints)", it);
            expect_class(err, MPI_SUCCESS, "MPI_Wait (send of 4 x 0 ints)", it);
            check_untouched(sbuf, 8, name, it);
        } else {
            pair_sync();        /* the send is started first */
            if (it == 0)
                expect_class(MPI_Precv_init(rbuf, 0, 8, MPI_INT, 0, tag, comm, MPI_INFO_NULL,
                                            &req), MPI_SUCCESS, "MPI_Precv_init (0 partitions)",
                             -1);
            expect_class(MPI_Start(&req), MPI_SUCCESS, "MPI_Start (receive of 0 partitions)",
                         it);
            err = test_limit(&req, &st, "MPI_Wait (receive of 0 partitions)", it);
            expect_class(err, MPI_SUCCESS, "MPI_Wait (receive of 0 partitions)", it);
            n = -1;
            MPI_Get_count(&st, MPI_INT, &n);
            if (n != 0) {
                fprintf(stderr, "rank 1 iter %d: %s: status count %d, expected 0\n", it, name,
                        n);
                errs++;
            }
            check_untouched(rbuf, 8, name, it);
            pair_sync();
        }
        pair_sync();
    }
    if (req != MPI_REQUEST_NULL)
        expect_class(MPI_Request_free(&req), MPI_SUCCESS, "MPI_Request_free (4 x 0 ints)", -1);
    pair_sync();
}

static void normal_pair(int tag)
{
    int buf[64] = { 0 };
    MPI_Request req;

    if (rank == 0)
        MPI_Psend_init(buf, 4, 16, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, 2, 32, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 64; i++)
            buf[i] = rank == 0 ? 7 + it * 1000 + i : 0;
        MPI_Start(&req);
        if (rank == 0)
            MPI_Pready_range(0, 3, req);
        expect_class(test_limit(&req, MPI_STATUS_IGNORE, "normal pair", it), MPI_SUCCESS,
                     "MPI_Wait (normal pair after the zero-partition cases)", it);
        if (rank == 1)
            for (int i = 0; i < 64; i++)
                if (buf[i] != 7 + it * 1000 + i) {
                    fprintf(stderr, "rank 1 iter %d: normal pair: buf[%d] = %d, expected %d\n",
                            it, i, buf[i], 7 + it * 1000 + i);
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

    run(0, 0, 1, MPI_SUCCESS, "send 0 partitions, receive 0 partitions");
    run(0, 4, 2, MPI_SUCCESS, "send 0 partitions, receive 4 x 8 ints");
    run(4, 0, 3, MPI_ERR_TRUNCATE, "send 4 x 8 ints, receive 0 partitions");
    zero_bytes_send(4);
    normal_pair(1);

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
