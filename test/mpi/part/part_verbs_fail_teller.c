/*
 * part_verbs_fail_teller.c: a broken verbs connection is told to the peer although the
 * peer freed its half of one pair on it (2 processes; the verbs emulator, test/verbs-emu,
 * with MPIR_CVAR_PART_TRANSPORT=verbs, as part_verbs_fault).
 *
 * Two pairs share the connection from rank 0 to rank 1: B (created first) and A (created
 * second, so first in the engine's list of operations). Both run iteration 1 (every byte
 * checked). Rank 1 then frees its receive of A; rank 0 keeps its send of A. In iteration 2
 * only B runs, and rank 0's first write of it faults (VERBSEMU_FAULT=retry_exceeded@6: the
 * connection's hello is work request 1, iteration 1's four writes are 2-5): rank 0 breaks
 * the connection and tells rank 1 through the handshake. A FAIL names a pair, and rank 1
 * drops one naming A (freed there). Told through one operation only (the engine before
 * 2026-12-01: the first on the connection it had not freed, A), rank 1's B never heard and
 * waited for ever.
 *
 * What it asserts: iteration 1 succeeds on both pairs with every byte right; in iteration
 * 2 rank 0's MPI_Wait on B returns MPI_ERR_OTHER with the fault's text and rank 1's returns
 * MPI_ERR_OTHER saying the peer's side failed, within 30 s (rank 1 polls with MPI_Test;
 * past that it reports the hang and calls MPI_Abort); nothing reached B's receive buffer
 * in iteration 2 (every byte keeps its sentinel).
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "part_wait_error.h"

#define PARTS 2
#define COUNT 4096

static unsigned char pattern(int pair, int iter, size_t i)
{
    return (unsigned char) (i * 7 + iter * 13 + pair * 29 + 1);
}

static int ok(int rc, int rank, const char *what)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    size_t n = (size_t) PARTS * COUNT;
    unsigned char *buf[2] = { malloc(n), malloc(n) };   /* [0]: pair A, [1]: pair B */
    MPI_Request req[2];
    MPI_Info info;

    /* rank 0 arms the emulator before its device opens (at the first partitioned call) */
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "needs 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        setenv("VERBSEMU_FAULT", "retry_exceeded@6", 1);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpich_part_aggregator", "none");        /* a write per partition */

    /* B first, then A: A is the newer operation (the one the old engine told through) */
    for (int k = 1; k >= 0; k--) {
        if (rank == 0)
            errs += ok(MPI_Psend_init(buf[k], PARTS, COUNT, MPI_BYTE, 1, 10 + k,
                                      MPI_COMM_WORLD, info, &req[k]), rank, "MPI_Psend_init");
        else
            errs += ok(MPI_Precv_init(buf[k], PARTS, COUNT, MPI_BYTE, 0, 10 + k,
                                      MPI_COMM_WORLD, info, &req[k]), rank, "MPI_Precv_init");
    }
    MPI_Info_free(&info);

    /* iteration 1: both pairs */
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n; i++)
            buf[k][i] = rank == 0 ? pattern(k, 1, i) : 0x5A;
        errs += ok(MPI_Start(&req[k]), rank, "MPI_Start");
        if (rank == 0)
            errs += ok(MPI_Pready_range(0, PARTS - 1, req[k]), rank, "MPI_Pready_range");
    }
    MPI_Status st[2];           /* (MPI_STATUSES_IGNORE draws a GCC -Wstringop-overflow) */
    errs += ok(MPI_Waitall(2, req, st), rank, "MPI_Waitall (iteration 1)");
    if (rank == 1) {
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < n; i++)
                if (buf[k][i] != pattern(k, 1, i)) {
                    fprintf(stderr, "iteration 1, pair %c: byte %zu is 0x%02x, expected "
                            "0x%02x\n", "AB"[k], i, buf[k][i], pattern(k, 1, i));
                    errs++;
                    break;
                }
        errs += ok(MPI_Request_free(&req[0]), rank, "MPI_Request_free (A)");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* iteration 2: B only; rank 0's first write faults */
    if (rank == 0) {
        for (size_t i = 0; i < n; i++)
            buf[1][i] = pattern(1, 2, i);
        errs += ok(MPI_Start(&req[1]), rank, "MPI_Start");
        errs += ok(MPI_Pready_range(0, PARTS - 1, req[1]), rank, "MPI_Pready_range");
        errs += check_error("sender", MPI_Wait(&req[1], MPI_STATUS_IGNORE),
                            "transport retry counter exceeded");
    } else {
        memset(buf[1], 0x5A, n);
        errs += ok(MPI_Start(&req[1]), rank, "MPI_Start");
        int flag = 0, rc = MPI_SUCCESS;
        double t0 = MPI_Wtime();
        while (!flag && rc == MPI_SUCCESS) {
            rc = MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE);
            if (!flag && MPI_Wtime() - t0 > 30.0) {
                fprintf(stderr, "receiver: B's iteration 2 still runs after 30 s: the peer's "
                        "failure was not told (or dropped)\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        errs += check_error("receiver", rc, "the peer's side failed");
        for (size_t i = 0; i < n; i++)
            if (buf[1][i] != 0x5A) {
                fprintf(stderr, "receiver: iteration 2: byte %zu changed to 0x%02x although "
                        "nothing may have been written\n", i, buf[1][i]);
                errs++;
                break;
            }
    }

    errs += ok(MPI_Request_free(&req[1]), rank, "MPI_Request_free (B)");
    if (rank == 0)
        errs += ok(MPI_Request_free(&req[0]), rank, "MPI_Request_free (A)");
    free(buf[0]);
    free(buf[1]);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
