/*
 * part_multi_test.c: partitioned requests in the multi-request completion functions
 * (2 processes; regression test for maint/patches/0007).
 *
 * What it asserts:
 * - Two partitioned operations and one point-to-point message, started together with
 *   MPI_Startall (partitioned) and MPI_Irecv/MPI_Isend, complete through each of MPI_Testall,
 *   MPI_Testany, MPI_Testsome, MPI_Waitall, MPI_Waitany and MPI_Waitsome with MPI_SUCCESS
 *   (4.0.2 returned MPI_ERR_IN_STATUS from MPI_Testall for partitioned requests), each request
 *   reported exactly once per iteration, and receive statuses naming the right source, tag
 *   and count.
 * - An erroneous partitioned pair (the send larger than the receive) next to a good one:
 *   MPI_Testall returns MPI_ERR_IN_STATUS, the erroneous request's status has class
 *   MPI_ERR_TRUNCATE and the good one's MPI_SUCCESS.
 * - Every received byte is checked.
 */

#include "mpi.h"
#include <stdio.h>
#include <string.h>
#include "mpitest.h"

#define NP 4
#define CNT 64          /* ints per partition */
#define ITERS 6

enum { USE_TESTALL, USE_TESTANY, USE_TESTSOME, USE_WAITALL, USE_WAITANY, USE_WAITSOME, NUSE };
static const char *use_names[NUSE] = {
    "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome"
};

static int rank, errs;

static int val(int op, int it, int i)
{
    return op * 1000000 + it * 10007 + i;
}

static void check_err(int err, const char *what)
{
    if (err != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d: %s returned %s\n", rank, what, s);
        errs++;
    }
}

/* complete all 3 requests with `use`; seen[i] counts how often request i was reported */
static void complete(int use, MPI_Request * reqs, MPI_Status * st, int *seen)
{
    int flag = 0, idx, outcount, idxs[3], err;
    MPI_Status one;

    switch (use) {
        case USE_TESTALL:
            while (!flag) {
                err = MPI_Testall(3, reqs, &flag, st);
                check_err(err, "MPI_Testall");
                if (err)
                    return;
            }
            for (int i = 0; i < 3; i++)
                seen[i]++;
            break;
        case USE_WAITALL:
            check_err(MPI_Waitall(3, reqs, st), "MPI_Waitall");
            for (int i = 0; i < 3; i++)
                seen[i]++;
            break;
        case USE_TESTANY:
        case USE_WAITANY:
            for (int done = 0; done < 3;) {
                if (use == USE_TESTANY) {
                    err = MPI_Testany(3, reqs, &idx, &flag, &one);
                    check_err(err, "MPI_Testany");
                } else {
                    err = MPI_Waitany(3, reqs, &idx, &one);
                    check_err(err, "MPI_Waitany");
                    flag = 1;
                }
                if (err)
                    return;
                if (flag && idx != MPI_UNDEFINED) {
                    seen[idx]++;
                    st[idx] = one;
                    done++;
                    /* persistent requests stay; keep them out of the next calls */
                    if (reqs[idx] != MPI_REQUEST_NULL)
                        reqs[idx] = MPI_REQUEST_NULL;
                } else if (flag && idx == MPI_UNDEFINED) {
                    fprintf(stderr, "rank %d: %s: no active request left after %d\n", rank,
                            use_names[use], done);
                    errs++;
                    return;
                }
            }
            break;
        case USE_TESTSOME:
        case USE_WAITSOME:
            for (int done = 0; done < 3;) {
                MPI_Status sst[3];
                if (use == USE_TESTSOME) {
                    err = MPI_Testsome(3, reqs, &outcount, idxs, sst);
                    check_err(err, "MPI_Testsome");
                } else {
                    err = MPI_Waitsome(3, reqs, &outcount, idxs, sst);
                    check_err(err, "MPI_Waitsome");
                }
                if (err)
                    return;
                if (outcount == MPI_UNDEFINED) {
                    fprintf(stderr, "rank %d: %s: no active request left after %d\n", rank,
                            use_names[use], done);
                    errs++;
                    return;
                }
                for (int k = 0; k < outcount; k++) {
                    seen[idxs[k]]++;
                    st[idxs[k]] = sst[k];
                    reqs[idxs[k]] = MPI_REQUEST_NULL;
                    done++;
                }
            }
            break;
    }
}

static void good_ops(MPI_Comm comm)
{
    static int pbuf[2][NP * CNT], ubuf[CNT];
    MPI_Request preq[2], reqs[3];
    MPI_Status st[3];
    int peer = 1 - rank;

    for (int o = 0; o < 2; o++) {
        if (rank == 0)
            MPI_Psend_init(pbuf[o], NP, CNT, MPI_INT, peer, 10 + o, comm, MPI_INFO_NULL,
                           &preq[o]);
        else
            MPI_Precv_init(pbuf[o], NP, CNT, MPI_INT, peer, 10 + o, comm, MPI_INFO_NULL,
                           &preq[o]);
    }
    for (int it = 0; it < ITERS * NUSE; it++) {
        int use = it % NUSE, seen[3] = { 0, 0, 0 };
        for (int o = 0; o < 2; o++)
            for (int i = 0; i < NP * CNT; i++)
                pbuf[o][i] = rank == 0 ? val(o, it, i) : -1;
        for (int i = 0; i < CNT; i++)
            ubuf[i] = rank == 0 ? val(2, it, i) : -1;
        check_err(MPI_Startall(2, preq), "MPI_Startall");
        reqs[0] = preq[0];
        reqs[1] = preq[1];
        if (rank == 0) {
            MPI_Isend(ubuf, CNT, MPI_INT, peer, 12, comm, &reqs[2]);
            for (int p = NP - 1; p >= 0; p--) {
                MPI_Pready(p, preq[1]);
                MPI_Pready(NP - 1 - p, preq[0]);
            }
        } else {
            MPI_Irecv(ubuf, CNT, MPI_INT, peer, 12, comm, &reqs[2]);
        }
        complete(use, reqs, st, seen);
        for (int i = 0; i < 3; i++)
            if (seen[i] != 1) {
                fprintf(stderr, "rank %d iter %d %s: request %d reported %d times\n", rank, it,
                        use_names[use], i, seen[i]);
                errs++;
            }
        if (rank == 1) {
            for (int i = 0; i < 3; i++) {
                int count = -1;
                MPI_Get_count(&st[i], MPI_INT, &count);
                if (st[i].MPI_SOURCE != 0 || st[i].MPI_TAG != 10 + i ||
                    count != (i < 2 ? NP * CNT : CNT)) {
                    fprintf(stderr, "iter %d %s: status %d: source %d tag %d count %d\n", it,
                            use_names[use], i, st[i].MPI_SOURCE, st[i].MPI_TAG, count);
                    errs++;
                }
            }
            for (int o = 0; o < 2; o++)
                for (int i = 0; i < NP * CNT; i++)
                    if (pbuf[o][i] != val(o, it, i)) {
                        if (errs++ < 10)
                            fprintf(stderr, "iter %d op %d: buf[%d] = %d, expected %d\n", it, o,
                                    i, pbuf[o][i], val(o, it, i));
                    }
            for (int i = 0; i < CNT; i++)
                if (ubuf[i] != val(2, it, i)) {
                    if (errs++ < 10)
                        fprintf(stderr, "iter %d: user message [%d] = %d\n", it, i, ubuf[i]);
                }
        }
    }
    MPI_Request_free(&preq[0]);
    MPI_Request_free(&preq[1]);
}

static void mismatch_in_testall(MPI_Comm comm)
{
    int sbuf[2][NP * CNT], rbuf[2][NP * CNT];
    MPI_Request req[2];
    MPI_Status st[2];
    int peer = 1 - rank, flag = 0, err = MPI_SUCCESS, cls;

    /* op 0 good (NP*CNT ints both sides), op 1: the send has twice the receive's size */
    if (rank == 0) {
        for (int i = 0; i < NP * CNT; i++)
            sbuf[0][i] = val(5, 0, i);
        MPI_Psend_init(sbuf[0], NP, CNT, MPI_INT, peer, 20, comm, MPI_INFO_NULL, &req[0]);
        MPI_Psend_init(sbuf[1], NP, CNT, MPI_INT, peer, 21, comm, MPI_INFO_NULL, &req[1]);
    } else {
        MPI_Precv_init(rbuf[0], NP, CNT, MPI_INT, peer, 20, comm, MPI_INFO_NULL, &req[0]);
        MPI_Precv_init(rbuf[1], NP, CNT / 2, MPI_INT, peer, 21, comm, MPI_INFO_NULL, &req[1]);
    }
    MPI_Startall(2, req);
    if (rank == 0) {
        MPI_Pready_range(0, NP - 1, req[0]);
        MPI_Pready_range(0, NP - 1, req[1]);
    }
    while (!flag && err == MPI_SUCCESS)
        err = MPI_Testall(2, req, &flag, st);
    MPI_Error_class(err, &cls);
    if (cls != MPI_ERR_IN_STATUS) {
        fprintf(stderr, "rank %d: MPI_Testall with a size mismatch returned class %d, "
                "expected MPI_ERR_IN_STATUS\n", rank, cls);
        errs++;
    } else {
        int c0 = MPI_SUCCESS, c1 = MPI_SUCCESS;
        if (st[0].MPI_ERROR != MPI_SUCCESS)
            MPI_Error_class(st[0].MPI_ERROR, &c0);
        if (st[1].MPI_ERROR != MPI_SUCCESS)
            MPI_Error_class(st[1].MPI_ERROR, &c1);
        /* the good one is done (MPI_SUCCESS) or still in flight (MPI_ERR_PENDING) */
        if ((c0 != MPI_SUCCESS && c0 != MPI_ERR_PENDING) || c1 != MPI_ERR_TRUNCATE) {
            fprintf(stderr, "rank %d: statuses after MPI_ERR_IN_STATUS: classes %d and %d, "
                    "expected MPI_SUCCESS (or MPI_ERR_PENDING) and MPI_ERR_TRUNCATE\n", rank,
                    c0, c1);
            errs++;
        }
        if (c0 == MPI_ERR_PENDING)
            check_err(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait (good op)");
    }
    if (rank == 1 && cls == MPI_ERR_IN_STATUS)
        for (int i = 0; i < NP * CNT; i++)
            if (rbuf[0][i] != val(5, 0, i)) {
                if (errs++ < 5)
                    fprintf(stderr, "good op next to the mismatch: buf[%d] = %d\n", i,
                            rbuf[0][i]);
            }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
}

int main(int argc, char *argv[])
{
    MPI_Comm comm;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (rank < 2) {
        good_ops(comm);
        mismatch_in_testall(comm);
    }
    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
