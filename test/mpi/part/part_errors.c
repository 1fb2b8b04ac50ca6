/*
 * part_errors.c: error classes and corner cases of partitioned communication (2 processes).
 *
 * MPI_ERRORS_RETURN is set on the communicator used and on MPI_COMM_WORLD and MPI_COMM_SELF.
 * What it asserts:
 * - Total-size mismatch: a send larger than the receive makes MPI_Wait on the first
 *   iteration return an error of class MPI_ERR_TRUNCATE on both sides; a send smaller than
 *   the receive succeeds as for point-to-point (status count = bytes sent, the rest of the
 *   receive buffer untouched).
 * - Out-of-range partitions in MPI_Pready (partitions, -1), MPI_Pready_range (wholly out of
 *   range) and MPI_Pready_list (an out-of-range entry) return MPI_ERR_ARG; the iteration then
 *   completes normally with correct data.
 * - Readying the same partition twice in one iteration (MPI_Pready twice; MPI_Pready_list
 *   after MPI_Pready_range) returns MPI_ERR_ARG on the second call; the iteration still
 *   completes after the remaining partitions are readied, with correct data. A list whose
 *   middle entry was readied before ({2, 0, 3} after 0): the error says the call readied
 *   the 1 partition before it and not the 1 after it, and it did so (3 can be readied
 *   after; 2 is done: the iteration completes with every element right).
 * - MPI_Pready, MPI_Pready_range and MPI_Pready_list on an inactive send request (before the
 *   first MPI_Start, after completion) return MPI_ERR_REQUEST; MPI_Pready on a partitioned
 *   receive request (inactive or active) returns MPI_ERR_REQUEST; MPI_Parrived on a
 *   partitioned send request returns MPI_ERR_REQUEST; MPI_Parrived with an out-of-range
 *   partition on an active receive request returns MPI_ERR_ARG.
 * - MPI_Parrived on an inactive receive request (before the first start, after completion)
 *   returns MPI_SUCCESS with flag = true (MPI 4.1); on MPI_REQUEST_NULL flag = true.
 * - MPI_PROC_NULL peers: MPI_Psend_init / MPI_Precv_init with MPI_PROC_NULL; every
 *   iteration MPI_Pready succeeds, the first MPI_Test completes the request, MPI_Parrived is
 *   true for every partition, the receive status is (MPI_PROC_NULL, MPI_ANY_TAG, count 0),
 *   and the receive buffer is untouched.
 * - MPI_Psend_init / MPI_Precv_init followed by MPI_Request_free without MPI_Start leaves no
 *   stray message: a wildcard-source user receive on the same tag gets the user message, and
 *   a new partitioned pair on the same tag with a different geometry gets the right data.
 * - Zero-size partitions (count 0) complete, MPI_Parrived becomes true, buffers untouched.
 * - An invalid value of the info key mpich_part_thread_partitions ("0", "abc", "2x", more
 *   than the partitions, "-1", " 2", "+2": digits only) makes MPI_Psend_init and
 *   MPI_Precv_init fail with MPI_ERR_INFO_VALUE and a message naming the key, and sends
 *   nothing to the peer.
 * - An info key mpich_part_aggregator that names no aggregator ("bogus", "Timer", "timer ",
 *   "ploggp2", "1") makes MPI_Precv_init fail with MPI_ERR_INFO_VALUE, a message naming
 *   the key and the value, and no request; MPI_Psend_init ignores the key. The same for
 *   an info key mpich_part_aggr_size that is not a decimal number of bytes within int
 *   ("-1", "abc", "64k", " 64", "2147483648", "99999999999").
 * - Finally a normal transfer succeeds and no user-visible message is left on the
 *   communicator. Nothing may crash or hang.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;
static MPI_Comm comm;

static void pair_sync(void)
{
    int peer = 1 - rank, a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, peer, 999, &b, 1, MPI_INT, peer, 999, comm, MPI_STATUS_IGNORE);
}

static const char *class_name(int cls)
{
    static char s[MPI_MAX_ERROR_STRING];
    int len;
    if (cls == MPI_SUCCESS)
        return "MPI_SUCCESS";
    if (cls == MPI_ERR_ARG)
        return "MPI_ERR_ARG";
    if (cls == MPI_ERR_REQUEST)
        return "MPI_ERR_REQUEST";
    if (cls == MPI_ERR_TRUNCATE)
        return "MPI_ERR_TRUNCATE";
    if (cls == MPI_ERR_IN_STATUS)
        return "MPI_ERR_IN_STATUS";
    MPI_Error_string(cls, s, &len);
    return s;
}

static void expect(int err, int cls, const char *what)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    if (c != cls) {
        fprintf(stderr, "rank %d: %s returned class %s, expected %s\n", rank, what,
                class_name(c), class_name(cls));
        errs++;
    }
}

/* the error's class is cls and its text contains want */
static void expect_msg(int err, int cls, const char *want, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    expect(err, cls, what);
    if (err == MPI_SUCCESS)
        return;
    MPI_Error_string(err, msg, &len);
    if (strstr(msg, want) == NULL) {
        fprintf(stderr, "rank %d: %s: the message does not say '%s': %s\n", rank, what, want,
                msg);
        errs++;
    }
}

static int val(int tag, int iter, int i)
{
    return 1 + tag * 10007 + iter * 101 + i;
}

static void fill(int *buf, int lo, int hi, int tag, int iter)
{
    for (int i = lo; i < hi; i++)
        buf[i] = val(tag, iter, i);
}

static void check(const int *buf, int n, int tag, int iter, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (buf[i] != val(tag, iter, i)) {
            if (bad < 5)
                fprintf(stderr, "rank %d: %s iter %d: buf[%d] = %d, expected %d\n", rank, what,
                        iter, i, buf[i], val(tag, iter, i));
            bad++;
        }
    errs += bad;
}

/* ---- size mismatch ---------------------------------------------------------------------- */

static void size_mismatch(void)
{
    int sbuf[64] = { 0 }, rbuf[64] = { 0 }, err;
    MPI_Request req;
    MPI_Status st[1];

    /* send 256 bytes into 128 bytes, completed with MPI_Wait */
    if (rank == 0) {
        MPI_Psend_init(sbuf, 4, 16, MPI_INT, 1, 1, comm, MPI_INFO_NULL, &req);
        fill(sbuf, 0, 64, 1, 0);
        MPI_Start(&req);
        MPI_Pready_range(0, 3, req);
        err = MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(err, MPI_ERR_TRUNCATE, "MPI_Wait (send 256 bytes, receive 128 bytes)");
        MPI_Request_free(&req);
    } else {
        MPI_Precv_init(rbuf, 4, 8, MPI_INT, 0, 1, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        err = MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(err, MPI_ERR_TRUNCATE, "MPI_Wait (receive 128 bytes, send 256 bytes)");
        MPI_Request_free(&req);
    }
    pair_sync();

    /* send 64 bytes into a 128-byte receive: allowed, as for point-to-point (MPICH's own
     * part/pingping relies on it): success on both sides, the status counts the 64 bytes
     * sent, the first 64 bytes of the receive buffer hold them, the rest is untouched */
    if (rank == 0) {
        MPI_Psend_init(sbuf, 2, 8, MPI_INT, 1, 2, comm, MPI_INFO_NULL, &req);
        fill(sbuf, 0, 16, 2, 0);
        MPI_Start(&req);
        MPI_Pready(1, req);
        MPI_Pready(0, req);
    } else {
        for (int i = 0; i < 64; i++)
            rbuf[i] = -7;
        MPI_Precv_init(rbuf, 4, 8, MPI_INT, 0, 2, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
    }
    st[0].MPI_ERROR = MPI_SUCCESS;
    err = MPI_Waitall(1, &req, st);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_Waitall (%s 64 bytes vs 128 bytes) failed\n", rank,
                rank == 0 ? "send" : "receive");
        errs++;
    } else if (rank == 1) {
        int n = -1;
        MPI_Get_count(&st[0], MPI_INT, &n);
        if (n != 16) {
            fprintf(stderr, "rank 1: status count %d, expected 16 ints\n", n);
            errs++;
        }
        for (int i = 0; i < 64; i++) {
            int want = (i < 16) ? val(2, 0, i) : -7;
            if (rbuf[i] != want) {
                fprintf(stderr, "rank 1: rbuf[%d] = %d, expected %d\n", i, rbuf[i], want);
                errs++;
                break;
            }
        }
    }
    MPI_Request_free(&req);
    pair_sync();
}

/* ---- MPI_Pready errors on an active send request ---------------------------------------- */

static void pready_errors(void)
{
    int buf[32] = { 0 }, flag;
    MPI_Request req;
    const int tag = 3;

    if (rank == 0) {
        int bad_list[2] = { 9, 1 };
        MPI_Psend_init(buf, 4, 8, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);

        /* iteration 0: out-of-range partitions */
        fill(buf, 0, 32, tag, 0);
        MPI_Start(&req);
        expect(MPI_Pready(4, req), MPI_ERR_ARG, "MPI_Pready(4) with 4 partitions");
        expect(MPI_Pready(-1, req), MPI_ERR_ARG, "MPI_Pready(-1)");
        expect(MPI_Pready_range(4, 6, req), MPI_ERR_ARG, "MPI_Pready_range(4, 6)");
        expect(MPI_Pready_list(1, bad_list, req), MPI_ERR_ARG, "MPI_Pready_list({9})");
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            fprintf(stderr, "send complete before any valid partition was readied\n");
            errs++;
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        expect(MPI_Pready_range(0, 3, req), MPI_SUCCESS, "MPI_Pready_range(0, 3)");
        expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait after MPI_ERR_ARG");

        /* iteration 1: the same partition twice */
        fill(buf, 0, 32, tag, 1);
        MPI_Start(&req);
        expect(MPI_Pready(1, req), MPI_SUCCESS, "MPI_Pready(1)");
        expect(MPI_Pready(1, req), MPI_ERR_ARG, "second MPI_Pready(1) in one iteration");
        expect(MPI_Pready(3, req), MPI_SUCCESS, "MPI_Pready(3)");
        expect(MPI_Pready(0, req), MPI_SUCCESS, "MPI_Pready(0)");
        expect(MPI_Pready(2, req), MPI_SUCCESS, "MPI_Pready(2)");
        expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS,
               "MPI_Wait after a partition readied twice");

        /* iteration 2: a list naming an already readied partition */
        fill(buf, 0, 32, tag, 2);
        MPI_Start(&req);
        {
            int l1[1] = { 1 }, l3[3] = { 2, 0, 3 };
            expect(MPI_Pready_range(0, 1, req), MPI_SUCCESS, "MPI_Pready_range(0, 1)");
            expect(MPI_Pready_list(1, l1, req), MPI_ERR_ARG,
                   "MPI_Pready_list({1}) after MPI_Pready_range(0, 1)");
            expect_msg(MPI_Pready_list(3, l3, req), MPI_ERR_ARG,
                       "partitions this call readied before it in its range or list: 1 "
                       "(they may be on their way); not readied: the 1 after it",
                       "MPI_Pready_list({2, 0, 3}) after MPI_Pready_range(0, 1)");
            expect(MPI_Pready(3, req), MPI_SUCCESS, "MPI_Pready(3) after the list's error");
        }
        expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait (iteration 2)");

        /* inactive after completion */
        expect(MPI_Pready(0, req), MPI_ERR_REQUEST, "MPI_Pready on a completed send request");
        MPI_Request_free(&req);
    } else {
        MPI_Precv_init(buf, 2, 16, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS,
                   "receiver MPI_Wait (sender had MPI_Pready errors)");
            check(buf, 32, tag, it, "after sender's MPI_Pready errors");
        }
        MPI_Request_free(&req);
    }
    pair_sync();
}

/* ---- inactive requests, wrong request kinds --------------------------------------------- */

static void request_state_errors(void)
{
    int buf[32] = { 0 }, err, flag;
    MPI_Request req;
    const int tag = 5;

    if (rank == 0) {
        int l[2] = { 0, 1 };
        MPI_Psend_init(buf, 4, 8, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        expect(MPI_Pready(0, req), MPI_ERR_REQUEST, "MPI_Pready before the first MPI_Start");
        expect(MPI_Pready_range(0, 1, req), MPI_ERR_REQUEST,
               "MPI_Pready_range before the first MPI_Start");
        expect(MPI_Pready_list(2, l, req), MPI_ERR_REQUEST,
               "MPI_Pready_list before the first MPI_Start");
        flag = 0;
        expect(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST,
               "MPI_Parrived on a partitioned send request");
        for (int it = 0; it < 2; it++) {
            fill(buf, 0, 32, tag, it);
            MPI_Start(&req);
            expect(MPI_Pready_range(0, 3, req), MPI_SUCCESS, "MPI_Pready_range(0, 3)");
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait");
            expect(MPI_Pready(2, req), MPI_ERR_REQUEST, "MPI_Pready after completion");
            expect(MPI_Pready_range(0, 1, req), MPI_ERR_REQUEST,
                   "MPI_Pready_range after completion");
            expect(MPI_Pready_list(2, l, req), MPI_ERR_REQUEST,
                   "MPI_Pready_list after completion");
        }
        MPI_Request_free(&req);
    } else {
        MPI_Precv_init(buf, 4, 8, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        expect(MPI_Pready(0, req), MPI_ERR_REQUEST, "MPI_Pready on an inactive receive request");
        flag = 0;
        err = MPI_Parrived(req, 0, &flag);
        expect(err, MPI_SUCCESS, "MPI_Parrived before the first MPI_Start");
        if (err == MPI_SUCCESS && !flag) {
            fprintf(stderr, "MPI_Parrived before the first MPI_Start: flag false\n");
            errs++;
        }
        for (int it = 0; it < 2; it++) {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            expect(MPI_Pready(1, req), MPI_ERR_REQUEST, "MPI_Pready on an active receive request");
            expect(MPI_Parrived(req, 4, &flag), MPI_ERR_ARG,
                   "MPI_Parrived(4) on an active receive request with 4 partitions");
            expect(MPI_Parrived(req, -1, &flag), MPI_ERR_ARG, "MPI_Parrived(-1)");
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait");
            check(buf, 32, tag, it, "after MPI_Pready on a receive request");
            for (int p = 0; p < 4; p++) {
                flag = 0;
                err = MPI_Parrived(req, p, &flag);
                expect(err, MPI_SUCCESS, "MPI_Parrived after completion");
                if (err == MPI_SUCCESS && !flag) {
                    fprintf(stderr, "MPI_Parrived(%d) after completion: flag false\n", p);
                    errs++;
                }
            }
        }
        MPI_Request_free(&req);
    }
    pair_sync();
}

/* last, since an implementation that dereferences the null handle crashes here */
static void parrived_null(void)
{
    int err, flag = 0;
    MPI_Request nullreq = MPI_REQUEST_NULL;

    err = MPI_Parrived(nullreq, 0, &flag);
    expect(err, MPI_SUCCESS, "MPI_Parrived(MPI_REQUEST_NULL)");
    if (err == MPI_SUCCESS && !flag) {
        fprintf(stderr, "MPI_Parrived(MPI_REQUEST_NULL): flag false\n");
        errs++;
    }
}

/* ---- MPI_PROC_NULL peers ---------------------------------------------------------------- */

static void proc_null(void)
{
    int sbuf[24] = { 0 }, rbuf[24], flag, count;
    MPI_Request sreq, rreq;
    MPI_Status st;

    /* every process, no matching partner needed */
    MPI_Psend_init(sbuf, 3, 8, MPI_INT, MPI_PROC_NULL, 6, comm, MPI_INFO_NULL, &sreq);
    MPI_Precv_init(rbuf, 6, 4, MPI_INT, MPI_PROC_NULL, 6, comm, MPI_INFO_NULL, &rreq);
    for (int it = 0; it < 3; it++) {
        fill(sbuf, 0, 24, 6, it);
        memset(rbuf, 0x33, sizeof(rbuf));
        expect(MPI_Start(&rreq), MPI_SUCCESS, "MPI_Start (receive from MPI_PROC_NULL)");
        expect(MPI_Start(&sreq), MPI_SUCCESS, "MPI_Start (send to MPI_PROC_NULL)");
        for (int p = 0; p < 3; p++)
            expect(MPI_Pready(p, sreq), MPI_SUCCESS, "MPI_Pready (send to MPI_PROC_NULL)");
        for (int p = 0; p < 6; p++) {
            flag = 0;
            expect(MPI_Parrived(rreq, p, &flag), MPI_SUCCESS, "MPI_Parrived (MPI_PROC_NULL)");
            if (!flag) {
                fprintf(stderr, "MPI_Parrived(%d) false on a receive from MPI_PROC_NULL\n", p);
                errs++;
            }
        }
        flag = 0;
        MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            fprintf(stderr, "send to MPI_PROC_NULL not complete at the first MPI_Test\n");
            errs++;
            MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        }
        flag = 0;
        MPI_Test(&rreq, &flag, &st);
        if (!flag) {
            fprintf(stderr, "receive from MPI_PROC_NULL not complete at the first MPI_Test\n");
            errs++;
            MPI_Wait(&rreq, &st);
        }
        MPI_Get_count(&st, MPI_INT, &count);
        if (st.MPI_SOURCE != MPI_PROC_NULL || st.MPI_TAG != MPI_ANY_TAG || count != 0) {
            fprintf(stderr, "receive from MPI_PROC_NULL: status source %d tag %d count %d\n",
                    st.MPI_SOURCE, st.MPI_TAG, count);
            errs++;
        }
        for (int i = 0; i < 24; i++)
            if (rbuf[i] != 0x33333333) {
                fprintf(stderr, "receive from MPI_PROC_NULL wrote rbuf[%d]\n", i);
                errs++;
                break;
            }
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
}

/* ---- init + free without start ---------------------------------------------------------- */

static void init_free(void)
{
    int buf[80] = { 0 }, ubuf[200], count;
    MPI_Request req;
    MPI_Status st;
    const int tag = 7;

    if (rank == 0) {
        MPI_Psend_init(buf, 4, 8, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        MPI_Request_free(&req);
    } else {
        MPI_Precv_init(buf, 4, 8, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        MPI_Request_free(&req);
    }
    pair_sync();

    /* user message on the same tag, received with a wildcard source */
    if (rank == 0) {
        fill(ubuf, 0, 32, tag, 50);
        MPI_Send(ubuf, 32, MPI_INT, 1, tag, comm);
    } else {
        memset(ubuf, 0, sizeof(ubuf));
        MPI_Recv(ubuf, 200, MPI_INT, MPI_ANY_SOURCE, tag, comm, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        if (st.MPI_SOURCE != 0 || count != 32) {
            fprintf(stderr, "after init+free: user receive got source %d count %d\n",
                    st.MPI_SOURCE, count);
            errs++;
        }
        check(ubuf, 32, tag, 50, "user message after init+free");
    }

    /* a new partitioned pair on the same tag, different geometry */
    if (rank == 0) {
        MPI_Psend_init(buf, 2, 40, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 2; it++) {
            fill(buf, 0, 80, tag, it);
            MPI_Start(&req);
            MPI_Pready(1, req);
            MPI_Pready(0, req);
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait after init+free");
        }
    } else {
        MPI_Precv_init(buf, 5, 16, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 2; it++) {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait after init+free");
            check(buf, 80, tag, it, "partitioned transfer after init+free");
        }
    }
    MPI_Request_free(&req);
    pair_sync();
}

/* The info keys mpich_part_aggregator and mpich_part_aggr_size: MPI_Precv_init refuses a
 * value that names no aggregator or no size; MPI_Psend_init ignores them (the receiver
 * decides). */
static void aggregator_info_errors(const char *key, const char *const *bad, int nbad)
{
    int buf[16];
    MPI_Info info;
    MPI_Request req;
    char msg[MPI_MAX_ERROR_STRING], what[128];
    int len, err;

    MPI_Info_create(&info);
    for (int i = 0; i < nbad; i++) {
        MPI_Info_set(info, key, bad[i]);
        req = MPI_REQUEST_NULL;
        snprintf(what, sizeof(what), "MPI_Precv_init with %s='%s'", key, bad[i]);
        err = MPI_Precv_init(buf, 4, 4, MPI_INT, 1 - rank, 41, comm, info, &req);
        expect(err, MPI_ERR_INFO_VALUE, what);
        if (err != MPI_SUCCESS) {
            MPI_Error_string(err, msg, &len);
            if (strstr(msg, key) == NULL || strstr(msg, bad[i]) == NULL) {
                fprintf(stderr, "rank %d: %s: message does not name the key and value: %s\n",
                        rank, what, msg);
                errs++;
            }
            if (req != MPI_REQUEST_NULL) {
                fprintf(stderr, "rank %d: %s: failed but returned a request\n", rank, what);
                errs++;
            }
        } else if (req != MPI_REQUEST_NULL) {
            MPI_Request_free(&req);
        }
    }
    /* the sender ignores it: the init succeeds and the request frees without a start */
    req = MPI_REQUEST_NULL;
    err = MPI_Psend_init(buf, 4, 4, MPI_INT, 1 - rank, 41, comm, info, &req);
    snprintf(what, sizeof(what), "MPI_Psend_init with %s='%s' (ignored)", key,
             bad[nbad - 1]);
    expect(err, MPI_SUCCESS, what);
    if (req != MPI_REQUEST_NULL)
        MPI_Request_free(&req);
    MPI_Info_free(&info);
    pair_sync();
}

/* ---- zero-size partitions --------------------------------------------------------------- */

static void info_hint_errors(void)
{
    const char *bad[] = { "0", "abc", "2x", "5", "-1", " 2", "+2" };
    int buf[16];
    MPI_Info info;
    MPI_Request req;
    char msg[MPI_MAX_ERROR_STRING];
    int len;

    MPI_Info_create(&info);
    for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++) {
        MPI_Info_set(info, "mpich_part_thread_partitions", bad[i]);
        for (int side = 0; side < 2; side++) {
            char what[128];
            int err;
            req = MPI_REQUEST_NULL;
            snprintf(what, sizeof(what), "%s with mpich_part_thread_partitions=%s (4 partitions)",
                     side ? "MPI_Precv_init" : "MPI_Psend_init", bad[i]);
            if (side == 0)
                err = MPI_Psend_init(buf, 4, 4, MPI_INT, 1 - rank, 40, comm, info, &req);
            else
                err = MPI_Precv_init(buf, 4, 4, MPI_INT, 1 - rank, 40, comm, info, &req);
            expect(err, MPI_ERR_INFO_VALUE, what);
            if (err != MPI_SUCCESS) {
                MPI_Error_string(err, msg, &len);
                if (strstr(msg, "mpich_part_thread_partitions") == NULL) {
                    fprintf(stderr, "rank %d: %s: message does not name the key: %s\n", rank,
                            what, msg);
                    errs++;
                }
            } else if (req != MPI_REQUEST_NULL) {
                MPI_Request_free(&req);
            }
        }
    }
    MPI_Info_free(&info);
    pair_sync();
}

static void zero_size(void)
{
    int buf[4] = { 0 }, flag;
    MPI_Request req;
    const int tag = 8;

    if (rank == 0) {
        MPI_Psend_init(buf, 4, 0, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            MPI_Start(&req);
            expect(MPI_Pready_range(0, 1, req), MPI_SUCCESS, "MPI_Pready_range (count 0)");
            expect(MPI_Pready(3, req), MPI_SUCCESS, "MPI_Pready (count 0)");
            expect(MPI_Pready(2, req), MPI_SUCCESS, "MPI_Pready (count 0)");
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait (count 0)");
        }
    } else {
        MPI_Precv_init(buf, 2, 0, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            memset(buf, 0x44, sizeof(buf));
            MPI_Start(&req);
            for (int p = 0; p < 2; p++) {
                double t0 = MPI_Wtime();
                flag = 0;
                while (!flag) {
                    MPI_Parrived(req, p, &flag);
                    if (!flag && MPI_Wtime() - t0 > 10.0) {
                        fprintf(stderr, "zero-size partition %d never arrived\n", p);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
            }
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_Wait (count 0)");
            for (int i = 0; i < 4; i++)
                if (buf[i] != 0x44444444) {
                    fprintf(stderr, "zero-size receive wrote buf[%d]\n", i);
                    errs++;
                    break;
                }
        }
    }
    MPI_Request_free(&req);
    pair_sync();
}

/* ---- final normal transfer -------------------------------------------------------------- */

static void final_transfer(void)
{
    int buf[512] = { 0 }, flag;
    MPI_Request req;
    MPI_Status st;
    const int tag = 9;

    if (rank == 0) {
        MPI_Psend_init(buf, 8, 64, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            fill(buf, 0, 512, tag, it);
            MPI_Start(&req);
            for (int p = 7; p >= 0; p--)
                MPI_Pready(p, req);
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "final MPI_Wait");
        }
    } else {
        MPI_Precv_init(buf, 8, 64, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < 3; it++) {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "final MPI_Wait");
            check(buf, 512, tag, it, "final transfer");
        }
    }
    MPI_Request_free(&req);
    pair_sync();

    /* no user-visible message may remain (give in-flight traffic a moment to land) */
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.2) {
        flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
        if (flag && st.MPI_TAG == 999)
            break;      /* the peer's closing pair_sync: it finished its own probe window */
        if (flag) {
            fprintf(stderr, "rank %d: stray user-visible message (source %d tag %d)\n", rank,
                    st.MPI_SOURCE, st.MPI_TAG);
            errs++;
            break;
        }
    }
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

    size_mismatch();
    pready_errors();
    request_state_errors();
    proc_null();
    init_free();
    zero_size();
    info_hint_errors();
    {
        const char *const bad_aggregator[] = { "bogus", "Timer", "timer ", "ploggp2", "1" };
        const char *const bad_size[] = { "-1", "abc", "64k", " 64", "2147483648",
                                         "99999999999" };
        aggregator_info_errors("mpich_part_aggregator", bad_aggregator, 5);
        aggregator_info_errors("mpich_part_aggr_size", bad_size, 6);
    }
    final_transfer();
    parrived_null();

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
