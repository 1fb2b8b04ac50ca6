/*
 * part_iter_base.c: the two processes number their iterations from different bases (2
 * processes; the testing aid MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32 differs). Iteration
 * numbers travel on the wire, so such a pair cannot work: before 2026-12-01 an RDMA pair
 * waited for ever (the credits count iterations; the tag transport ran, against the aid's
 * all-eq scope). The receiver now compares the RTS's base with its own and fails the pair.
 *
 * The test sets the aid itself before MPI_Init, per process (hydra's PMI_RANK tells which;
 * -b0=N, -b1=N; -1 leaves it unset) and checks with MPI_T that the value took effect.
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF. Rank 0 sends, rank 1 receives, 3
 * iterations:
 * - with different bases: every iteration's MPI_Wait fails on both sides within 20 s (no
 *   hang): the receiver with class MPI_ERR_OTHER and a message naming the aid and both
 *   values, the sender with class MPI_ERR_OTHER naming rank 1; the receive buffer stays
 *   untouched.
 * - with equal bases (the control lines): every iteration succeeds, every byte checked.
 * Afterwards a point-to-point message checks that the job still works.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 3
#define PARTS 8
#define COUNT 64
#define SENTINEL 0x5a5a5a5a

static int rank, errs = 0;

#include "part_pvar.h"     /* cv_read_int */
#include "part_wait_error.h"       /* check_error */

/* MPI_Wait within 20 s (MPI_Test in a loop); aborts the job on a hang */
static int wait_bounded(MPI_Request * req, int it)
{
    int flag = 0, rc = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    while (!flag) {
        rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d iteration %d: not complete after 20 s\n", rank, it);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return rc;
}

/* 0 when rc has class MPI_ERR_OTHER and its message contains every one of want[]
 * (part_wait_error.h's check, once per text) */
static int check_fail(int rc, int it, const char *const *want, int nwant)
{
    char who[64];
    snprintf(who, sizeof(who), "rank %d iteration %d", rank, it);
    for (int i = 0; i < nwant; i++)
        if (check_error(who, rc, want[i]))
            return 1;
    return 0;
}

int main(int argc, char *argv[])
{
    int b[2] = { -1, -1 }, myb = -2, provided, size;
    const char *pr = getenv("PMI_RANK");
    int buf[PARTS * COUNT];
    char s0[64], s1[64];

    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "-b0=", 4) == 0)
            b[0] = atoi(argv[a] + 4);
        else if (strncmp(argv[a], "-b1=", 4) == 0)
            b[1] = atoi(argv[a] + 4);
    }
    if (pr && (atoi(pr) == 0 || atoi(pr) == 1)) {
        myb = b[atoi(pr)];
        if (myb >= 0) {
            char s[16];
            snprintf(s, sizeof(s), "%d", myb);
            setenv("MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32", s, 1);
        } else {
            unsetenv("MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32");
        }
    }

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (myb == -2) {
        fprintf(stderr, "rank %d: PMI_RANK not set: cannot give the ranks different bases\n",
                rank);
        errs++;
    } else if (cv_read_int("MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32") != (myb < 0 ? 0 : myb)) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32 is %d, set %d\n", rank,
                cv_read_int("MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32"), myb);
        errs++;
    }
    MPI_T_finalize();

    int v0 = b[0] < 0 ? 0 : b[0], v1 = b[1] < 0 ? 0 : b[1], differ = (v0 != v1);
    snprintf(s0, sizeof(s0), "ITERS_BELOW_2_32=%d and", v0);
    snprintf(s1, sizeof(s1), "receiver, rank 1, with %d", v1);
    MPI_Request req;
    if (rank == 0)
        MPI_Psend_init(buf, PARTS, COUNT, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, PARTS, COUNT, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = rank == 0 ? it * 100003 + i : SENTINEL;
        MPI_Start(&req);
        if (rank == 0)
            for (int p = PARTS - 1; p >= 0; p--)
                MPI_Pready(p, req);
        int rc = wait_bounded(&req, it);
        if (differ && rank == 1) {
            /* the receiver names the aid and both values ("The sender, rank 0, runs with
             * MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32=v0 and this receiver, rank 1, with v1") */
            const char *want[] = { "sender, rank 0, runs with MPIR_CVAR_PART_DEBUG_", s0, s1 };
            errs += check_fail(rc, it, want, 3);
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != SENTINEL) {
                    fprintf(stderr, "rank 1 iteration %d: buf[%d] = %d written by a failed "
                            "transfer\n", it, i, buf[i]);
                    errs++;
                    break;
                }
        } else if (differ) {
            const char *want[] = { "Rank 1 could not plan" };
            errs += check_fail(rc, it, want, 1);
        } else if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "rank %d iteration %d: MPI_Wait failed: %s\n", rank, it, msg);
            errs++;
        } else if (rank == 1) {
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != it * 100003 + i) {
                    if (errs < 10)
                        fprintf(stderr, "rank 1 iteration %d: buf[%d] = %d, expected %d\n", it,
                                i, buf[i], it * 100003 + i);
                    errs++;
                }
        }
    }
    MPI_Request_free(&req);

    /* the job still works */
    int x = rank == 0 ? 424242 : 0;
    if (rank == 0)
        MPI_Send(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
    else {
        MPI_Recv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (x != 424242) {
            fprintf(stderr, "rank 1: point-to-point after the pair: %d\n", x);
            errs++;
        }
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
