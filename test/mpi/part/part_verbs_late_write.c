/*
 * part_verbs_late_write.c: a write still in flight on another queue pair when the verbs
 * transport breaks a connection never lands in the receive buffer after the receiver's
 * MPI_Wait has returned the error (2 processes). Runs only on the verbs emulator
 * (test/verbs-emu, LD_LIBRARY_PATH) with MPIR_CVAR_PART_TRANSPORT=verbs, 2 queue pairs and
 * 2 VCIs (the operation's two messages go on lanes 0 and 1) and
 * MPIR_CVAR_PART_AGGREGATOR=none (one message per partition).
 *
 * The engine moves every queue pair of a broken connection to the error state when it
 * breaks it, before it fails its operations (part_verbs.c, conn_broken); until 2026-12-01
 * only the queue pair whose write failed was in error, and a write posted on another one
 * could land later. The emulator runs a write at post time unless told otherwise, so the
 * sender (rank 0) arms VERBSEMU_FAULT=hold@4,remote_access@5 before its device opens. Its
 * send work requests are the hello (1), iteration 1's two writes (2, 3) and iteration 2's
 * two (4, 5): credits are the receiver's, FAIL goes as an active message. So one of
 * iteration 2's writes stays in flight on its queue pair for VERBSEMU_HOLD_US (-hold=US,
 * 1 .. 10000000, default 300000) while the other fails with a remote access error on the
 * other queue pair and breaks the connection. (The sender takes the credit in and readies
 * partition 1, then 0, so the held one is usually partition 1 on queue pair 1; with the
 * credit late both wait and go in message order, and it is partition 0 on queue pair 0.)
 *
 * Iteration 1 carries correct data (checked byte for byte; one message off lane 0: the
 * two writes of an iteration are on different queue pairs). In iteration 2 both MPI_Wait
 * calls must return MPI_ERR_OTHER (the sender's names the remote access error, the
 * receiver's says the peer's side failed), and the receiver's buffer and the guards around
 * it must still hold the sentinel written before MPI_Start: right after MPI_Wait (else the
 * break took longer than the hold: a timing premise, raise -hold), and again after both
 * ranks drove progress for twice the hold, well past the held write's time. With only the
 * failing queue pair in error the held write lands there then. What the test does not
 * tell apart: queue pairs moved to the error state after the operations failed, but
 * within the hold, would pass too (the order is conn_broken's, read the code).
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs;

#include "part_pvar.h"
#include "part_wait_error.h"

#define PARTS 2
#define COUNT 4096
#define GUARD 64

static unsigned char pattern(int iter, size_t i)
{
    return (unsigned char) (i * 11 + iter * 29 + 3);
}

int main(int argc, char **argv)
{
    int size, provided, hold_us = 300000, token = 0;
    char env[64];
    MPI_Comm comm2;
    MPI_Request req = MPI_REQUEST_NULL;
    size_t n = (size_t) PARTS * COUNT;
    unsigned char *mem = malloc(n + 2 * GUARD), *buf = mem + GUARD;

    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-hold=", 6) == 0)
            hold_us = atoi(argv[i] + 6);
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || hold_us <= 0 || hold_us > 10000000) {
        if (rank == 0)
            fprintf(stderr, "needs 2 processes (got %d) and -hold in 1 .. 10000000 us (got "
                    "%d)\n", size, hold_us);
        MTest_Finalize(1);
        return MTestReturnValue(1);
    }
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_T_init_thread failed\n", rank);
        errs++;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm2);
    MPI_Comm_set_errhandler(comm2, MPI_ERRORS_RETURN);

    /* the sender arms the emulator before its device opens (its first partitioned call) */
    if (rank == 0) {
        setenv("VERBSEMU_FAULT", "hold@4,remote_access@5", 1);
        snprintf(env, sizeof(env), "%d", hold_us);
        setenv("VERBSEMU_HOLD_US", env, 1);
    }

    /* iteration 1: correct data, one message on lane 1 */
    unsigned long long spread0 = pv_read("part_vci_spread_msgs");
    if (rank == 0) {
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern(1, i);
        MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, comm2, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Pready_range(0, PARTS - 1, req);
    } else {
        memset(mem, 0x5A, n + 2 * GUARD);
        MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, comm2, MPI_INFO_NULL, &req);
        MPI_Start(&req);
    }
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: iteration 1: MPI_Wait returned %d\n", rank, rc);
        errs++;
    }
    if (rank == 1) {
        for (size_t i = 0; i < n; i++)
            if (buf[i] != pattern(1, i)) {
                fprintf(stderr, "receiver: iteration 1: byte %zu is 0x%02x, expected 0x%02x\n",
                        i, buf[i], pattern(1, i));
                errs++;
                break;
            }
        unsigned long long spread = pv_read("part_vci_spread_msgs") - spread0;
        if (spread != 1) {
            fprintf(stderr, "receiver: iteration 1: %llu messages off lane 0, expected 1 (2 "
                    "queue pairs, 2 VCIs and one message per partition are needed)\n", spread);
            errs++;
        }
    }

    /* iteration 2: one write is held, the other fails */
    if (rank == 0) {
        int flag;
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern(2, i);
        MPI_Start(&req);
        MPI_Recv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 10; k++)    /* progress reads the credit, which has landed */
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        MPI_Pready(1, req);
        MPI_Pready(0, req);
        errs += check_error("sender", MPI_Wait(&req, MPI_STATUS_IGNORE), "remote access error");
    } else {
        memset(mem, 0x5A, n + 2 * GUARD);
        MPI_Start(&req);
        MPI_Send(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        errs += check_error("receiver", MPI_Wait(&req, MPI_STATUS_IGNORE),
                            "the peer's side failed");
        for (size_t i = 0; i < n + 2 * GUARD; i++)
            if (mem[i] != 0x5A) {
                fprintf(stderr, "receiver: byte %ld changed before MPI_Wait returned the "
                        "error: the break took longer than the hold (-hold=%d us; raise "
                        "it)\n", (long) i - GUARD, hold_us);
                errs++;
                memset(mem, 0x5A, n + 2 * GUARD);   /* so that the check below is its own */
                break;
            }
    }
    /* both sides drive the emulator (either may run the held write) well past its time */
    progress_for(2e-6 * hold_us);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        for (size_t i = 0; i < n + 2 * GUARD; i++)
            if (mem[i] != 0x5A) {
                long off = (long) i - GUARD;
                fprintf(stderr, "receiver: byte %ld (partition %ld) changed to 0x%02x after "
                        "MPI_Wait returned the error%s\n", off, off >= 0 ? off / COUNT : -1,
                        mem[i], off >= 0 && mem[i] == pattern(2, (size_t) off) ?
                        ": the held write landed" : "");
                errs++;
                break;
            }
    }

    MPI_Request_free(&req);
    MPI_Comm_free(&comm2);
    pv_finalize();
    free(mem);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
