/*
 * part_verbs_fault.c: error completions of the verbs transport become MPI errors on both
 * requests, never an abort, a hang or a write (2 processes). Runs only on the verbs
 * emulator (test/verbs-emu, LD_LIBRARY_PATH) with MPIR_CVAR_PART_TRANSPORT=verbs: the
 * faulting rank sets VERBSEMU_FAULT=<kind>@<n> before its first partitioned call (the
 * emulator reads it when the device opens), so that its n-th send work request completes
 * with that error instead of running.
 *
 *   -fault=KIND   remote_access, local_prot, retry_exceeded, rnr_retry_exceeded,
 *                 remote_op or flush (the emulator's names), or post_einval: not an error
 *                 completion but ibv_post_send refusing the work request (EINVAL); the
 *                 engine then breaks the connection so that the peer hears (until
 *                 2026-12-01 only the refusing side failed and its peer waited for ever)
 *   -side=send    rank 0 (the sender) faults on its first data write (its first work
 *                 request is the connection's hello, so n = 2)
 *   -side=recv    rank 1 (the receiver) faults on its first credit (n = 1)
 *
 * In iteration 1 both MPI_Wait calls return MPI_ERR_OTHER: the faulting side's message
 * carries ibv_wc_status_str's text of the fault, the other side's says the peer's side
 * failed (it heard through the handshake's active messages). Nothing reached the receive
 * buffer (every byte still holds its sentinel, and the guard bytes around it too). A
 * second iteration on the broken connection fails at once on both sides, again without a
 * write. Correct data over verbs is what the rest of the suite checks in the verbs mode.
 *
 * With several queue pairs (MPIR_CVAR_PART_VERBS_QPS > 1) and -side=send, writes on the
 * other queue pairs may land before the break is seen (RC orders one queue pair only), so
 * iteration 1 checks instead that every partition holds either only its sentinel or only
 * its correct bytes (no torn or wrong data), that the guards are intact, and that the
 * faulted write's partition(s) did not arrive (at least one partition keeps its sentinel).
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "part_wait_error.h"

#define PARTS 8
#define COUNT 1024
#define GUARD 64

static const char *status_text(const char *kind)
{
    /* ibv_wc_status_str() of the completion status the emulator gives each fault */
    if (strcmp(kind, "remote_access") == 0)
        return "remote access error";
    if (strcmp(kind, "local_prot") == 0)
        return "local protection error";
    if (strcmp(kind, "retry_exceeded") == 0)
        return "transport retry counter exceeded";
    if (strcmp(kind, "rnr_retry_exceeded") == 0)
        return "RNR retry counter exceeded";
    if (strcmp(kind, "remote_op") == 0)
        return "remote operation error";
    if (strcmp(kind, "flush") == 0)
        return "Work Request Flushed Error";
    if (strcmp(kind, "post_einval") == 0)
        return "Invalid argument";      /* strerror(EINVAL): ibv_post_send's return */
    return NULL;
}

static unsigned char pattern(int iter, size_t i)
{
    return (unsigned char) (i * 7 + iter * 13 + 1);
}

/* Several queue pairs, iteration 1: each partition all sentinel or all correct, guards
 * intact, at least one partition not written; 0 or the number of errors. */
static int check_partitions(const unsigned char *mem, int iter)
{
    const unsigned char *buf = mem + GUARD;
    int errs = 0, untouched = 0;
    for (size_t i = 0; i < GUARD; i++)
        if (mem[i] != 0x5A || buf[(size_t) PARTS * COUNT + i] != 0x5A) {
            fprintf(stderr, "receiver: a guard byte changed\n");
            return 1;
        }
    for (int p = 0; p < PARTS; p++) {
        const unsigned char *b = buf + (size_t) p * COUNT;
        int sentinel = 1, correct = 1;
        for (size_t i = 0; i < COUNT; i++) {
            sentinel &= b[i] == 0x5A;
            correct &= b[i] == pattern(iter, (size_t) p * COUNT + i);
        }
        untouched += sentinel;
        if (!sentinel && !correct) {
            fprintf(stderr, "receiver: partition %d holds neither its sentinel nor its data\n",
                    p);
            errs++;
        }
    }
    if (untouched == 0) {
        fprintf(stderr, "receiver: every partition arrived although one write faulted\n");
        errs++;
    }
    return errs;
}

int main(int argc, char **argv)
{
    int rank, errs = 0, send_side = 1;
    const char *kind = "remote_access", *text;
    char env[128];
    MPI_Comm comm2;
    MPI_Request req;
    size_t n = (size_t) PARTS * COUNT;
    unsigned char *mem = malloc(n + 2 * GUARD), *buf = mem + GUARD;

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-fault=", 7) == 0)
            kind = argv[i] + 7;
        else if (strcmp(argv[i], "-side=recv") == 0)
            send_side = 0;
    }
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *qps = getenv("MPIR_CVAR_PART_VERBS_QPS");
    int several_qps = qps && atoi(qps) > 1;
    text = status_text(kind);
    if (text == NULL) {
        fprintf(stderr, "unknown -fault=%s\n", kind);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm2);
    MPI_Comm_set_errhandler(comm2, MPI_ERRORS_RETURN);

    /* the faulting rank arms the emulator before its device opens */
    if ((send_side && rank == 0) || (!send_side && rank == 1)) {
        snprintf(env, sizeof(env), "%s@%d", kind, send_side ? 2 : 1);
        setenv("VERBSEMU_FAULT", env, 1);
    }

    for (int iter = 1; iter <= 2; iter++) {
        const char *who = rank == 0 ? "sender" : "receiver";
        int faulting = (send_side && rank == 0) || (!send_side && rank == 1);
        const char *want = faulting ? text : "the peer's side failed";
        if (iter == 2)
            want = faulting ? text : "failed";  /* the broken connection, either text */
        if (rank == 0) {
            for (size_t i = 0; i < n; i++)
                buf[i] = pattern(iter, i);
            if (iter == 1)
                MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, comm2, MPI_INFO_NULL, &req);
            MPI_Start(&req);
            MPI_Pready_range(0, PARTS - 1, req);
            errs += check_error(who, MPI_Wait(&req, MPI_STATUS_IGNORE), want);
        } else if (rank == 1) {
            memset(mem, 0x5A, n + 2 * GUARD);
            if (iter == 1)
                MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, comm2, MPI_INFO_NULL, &req);
            MPI_Start(&req);
            errs += check_error(who, MPI_Wait(&req, MPI_STATUS_IGNORE), want);
            if (iter == 1 && send_side && several_qps) {
                errs += check_partitions(mem, iter);
                continue;
            }
            for (size_t i = 0; i < n + 2 * GUARD; i++)
                if (mem[i] != 0x5A) {
                    fprintf(stderr, "receiver: iteration %d: byte %ld changed to 0x%02x "
                            "although nothing may have been written\n", iter,
                            (long) i - GUARD, mem[i]);
                    errs++;
                    break;
                }
        }
    }
    if (rank < 2)
        MPI_Request_free(&req);
    MPI_Comm_free(&comm2);
    free(mem);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
