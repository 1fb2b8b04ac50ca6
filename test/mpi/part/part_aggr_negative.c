/*
 * part_aggr_negative.c: a negative MPIR_CVAR_PART_AGGR_SIZE is reported, not hung on
 * (2 processes; review finding C6: the receiver consumed the announcement, leaked an id and
 * never answered, so the sender's first iteration hung).
 *
 * Run with env=MPIR_CVAR_PART_AGGR_SIZE=-1 (without it, the test writes -1 with MPI_T on the
 * receiver before MPI_Precv_init; the engine reads the value there).
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD, MPI_COMM_SELF and the communicator used.
 * What it asserts:
 * - Rank 0's MPI_Psend_init succeeds. Rank 1's MPI_Precv_init (issued after the sender's
 *   announcement has had time to arrive, and again on a second tag before the sender's
 *   announcement) returns an error of class MPI_ERR_ARG whose text (MPI_Error_string)
 *   contains "MPIR_CVAR_PART_AGGR_SIZE".
 * - The sender frees its never-started requests; after AGGR_SIZE is set back to 0 with
 *   MPI_T (on both processes), a new pair on a third tag carries correct data, and both
 *   processes finalize without hanging.
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
    int a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, comm,
                 MPI_STATUS_IGNORE);
}

static int aggr_rw(int *write_val, int *read_val)
{
    int idx, cnt, err;
    MPI_T_cvar_handle h;

    err = MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_AGGR_SIZE not found (err %d)\n", rank, err);
        return 1;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    if (write_val)
        err = MPI_T_cvar_write(h, write_val);
    if (err == MPI_SUCCESS && read_val)
        err = MPI_T_cvar_read(h, read_val);
    MPI_T_cvar_handle_free(&h);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_AGGR_SIZE read/write failed (err %d)\n", rank,
                err);
        return 1;
    }
    return 0;
}

static void expect_aggr_error(int err, const char *when)
{
    int cls = MPI_SUCCESS, len;
    char msg[MPI_MAX_ERROR_STRING];

    if (err == MPI_SUCCESS) {
        fprintf(stderr, "rank 1: MPI_Precv_init with a negative MPIR_CVAR_PART_AGGR_SIZE "
                "(%s) succeeded, expected MPI_ERR_ARG\n", when);
        errs++;
        return;
    }
    MPI_Error_class(err, &cls);
    MPI_Error_string(err, msg, &len);
    if (cls != MPI_ERR_ARG) {
        fprintf(stderr, "rank 1: MPI_Precv_init (%s) returned class %d, expected MPI_ERR_ARG "
                "(%d): %s\n", when, cls, MPI_ERR_ARG, msg);
        errs++;
    }
    if (strstr(msg, "MPIR_CVAR_PART_AGGR_SIZE") == NULL) {
        fprintf(stderr, "rank 1: MPI_Precv_init (%s): the message does not name "
                "MPIR_CVAR_PART_AGGR_SIZE: %s\n", when, msg);
        errs++;
    }
}

int main(int argc, char *argv[])
{
    int size, provided, aggr = 0, zero = 0, neg = -1, err;
    int buf[256];
    MPI_Request req1 = MPI_REQUEST_NULL, req2 = MPI_REQUEST_NULL, req;

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
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);

    errs += aggr_rw(NULL, &aggr);
    if (rank == 1 && aggr >= 0)
        errs += aggr_rw(&neg, &aggr);   /* not set by the environment */

    /* tag 1: the announcement is in before MPI_Precv_init */
    if (rank == 0) {
        err = MPI_Psend_init(buf, 4, 64, MPI_INT, 1, 1, comm, MPI_INFO_NULL, &req1);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank 0: MPI_Psend_init (tag 1) failed\n");
            errs++;
        }
        pair_sync();
    } else {
        pair_sync();
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.05) {
            int flag;
            MPI_Iprobe(0, 0, comm, &flag, MPI_STATUS_IGNORE);
        }
        req = MPI_REQUEST_NULL;
        err = MPI_Precv_init(buf, 4, 64, MPI_INT, 0, 1, comm, MPI_INFO_NULL, &req);
        expect_aggr_error(err, "after the sender's announcement");
        if (err == MPI_SUCCESS && req != MPI_REQUEST_NULL)
            MPI_Request_free(&req);
    }
    pair_sync();

    /* tag 2: MPI_Precv_init before the announcement */
    if (rank == 1) {
        req = MPI_REQUEST_NULL;
        err = MPI_Precv_init(buf, 2, 128, MPI_INT, 0, 2, comm, MPI_INFO_NULL, &req);
        expect_aggr_error(err, "before the sender's announcement");
        if (err == MPI_SUCCESS && req != MPI_REQUEST_NULL)
            MPI_Request_free(&req);
        pair_sync();
    } else {
        pair_sync();
        err = MPI_Psend_init(buf, 2, 128, MPI_INT, 1, 2, comm, MPI_INFO_NULL, &req2);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank 0: MPI_Psend_init (tag 2) failed\n");
            errs++;
        }
    }

    /* the sender frees its never-started requests */
    if (rank == 0) {
        if (req1 != MPI_REQUEST_NULL && MPI_Request_free(&req1) != MPI_SUCCESS) {
            fprintf(stderr, "rank 0: MPI_Request_free (tag 1) failed\n");
            errs++;
        }
        if (req2 != MPI_REQUEST_NULL && MPI_Request_free(&req2) != MPI_SUCCESS) {
            fprintf(stderr, "rank 0: MPI_Request_free (tag 2) failed\n");
            errs++;
        }
    }
    errs += aggr_rw(&zero, NULL);
    pair_sync();

    /* a good pair on tag 3 still works */
    if (rank == 0)
        err = MPI_Psend_init(buf, 4, 64, MPI_INT, 1, 3, comm, MPI_INFO_NULL, &req);
    else
        err = MPI_Precv_init(buf, 8, 32, MPI_INT, 0, 3, comm, MPI_INFO_NULL, &req);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: init of the good pair failed\n", rank);
        errs++;
    } else {
        for (int it = 0; it < 3; it++) {
            for (int i = 0; i < 256; i++)
                buf[i] = rank == 0 ? 11 + it * 1000 + i : 0;
            MPI_Start(&req);
            if (rank == 0)
                MPI_Pready_range(0, 3, req);
            double t0 = MPI_Wtime();
            int flag = 0;
            while (!flag) {
                if (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                    fprintf(stderr, "rank %d iter %d: good pair failed\n", rank, it);
                    errs++;
                    break;
                }
                if (!flag && MPI_Wtime() - t0 > 20.0) {
                    fprintf(stderr, "rank %d iter %d: good pair not complete after 20 s\n",
                            rank, it);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            if (rank == 1)
                for (int i = 0; i < 256; i++)
                    if (buf[i] != 11 + it * 1000 + i) {
                        fprintf(stderr, "rank 1 iter %d: buf[%d] = %d, expected %d\n", it, i,
                                buf[i], 11 + it * 1000 + i);
                        errs++;
                        break;
                    }
        }
        MPI_Request_free(&req);
    }
    pair_sync();

    MPI_T_finalize();
    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
