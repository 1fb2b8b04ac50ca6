/*
 * part_race_fail_window.c: no write of a failed RDMA iteration lands after the receiver's
 * MPI_Wait returned the error, with progress threads on both sides (2 processes,
 * MPI_THREAD_MULTIPLE; the test fails if that level is not provided).
 *
 * Run with MPIR_CVAR_PART_TRANSPORT=ofi, MPIR_CVAR_PART_OFI_PROVIDER=shm or tcp;ofi_rxm,
 * MPIR_CVAR_PART_OFI_DEBUG_FAULT=6 (the write that carries partition 0 completes with an
 * error, the others are posted) and MPIR_CVAR_PART_AGGREGATOR=none (one write per
 * partition) or timer. A progress thread (MPI_Iprobe on an idle communicator) reads the
 * completion queues on both processes while the main threads run the iteration, so the
 * sender's failure, its FAIL message, and the arrivals of its other writes are handled by
 * either thread, in any order. The receiver's request must complete only after every
 * write the sender posted has landed (the FAIL says how many; README 4c, "Errors").
 *
 * -rounds rounds (default 30), each with a new pair of operations (a failure is final for
 * its operation), -parts partitions of 4096 bytes (default 512), -each: the sender readies
 * the partitions one MPI_Pready at a time (the timer aggregator with a deadline of 0 then
 * sends runs, not whole groups). Per round:
 * - rank 0: MPI_Psend_init, MPI_Start, fill, MPI_Pready_range (or MPI_Pready per
 *   partition), MPI_Wait: class MPI_ERR_OTHER; MPI_Request_free.
 * - rank 1: fills its buffer with a sentinel, MPI_Precv_init, MPI_Start, MPI_Wait: class
 *   MPI_ERR_OTHER; partition 0's bytes still hold the sentinel (its write failed: nothing
 *   of it may arrive); the other partitions hold the sentinel or the sender's bytes (they
 *   may have landed before the failure was known), nothing else; after 20 ms more (the
 *   progress thread still polling) no byte has changed since MPI_Wait returned;
 *   MPI_Request_free.
 * With MPIR_CVAR_PART_OFI_DEBUG_FAULT=7 instead (the receiver's credit is delivered but its
 * completion is an error: the receiver fails while the sender writes), the sender's MPI_Wait
 * may also succeed (its writes completed before the receiver's FAIL came), partition 0 may
 * hold the sender's bytes too, and the receiver's request completes only after the
 * sender's COUNT (how many of its writes landed); the sender's doomed iteration ends only
 * once its writes' completions are handled (it refills the buffer for the next round right
 * after MPI_Request_free: a write still in flight would carry those bytes).
 * A watchdog reports a hang (60 s without a step) with its place and aborts.
 * Before the receiver waited for them, a write landed after MPI_Wait in 4 launches of 4
 * over tcp;ofi_rxm and 2 of 3 over shm (30 rounds each, 2026-11-29).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define COUNT 4096
#define SENTINEL 0xA5

static int rank, errs = 0;

#include "part_watchdog.h"
#include "part_probe_thread.h"
#include "../../part/part_pvar.h"

static unsigned char val(int round, long i)
{
    unsigned char v = (unsigned char) (i * 7 + round * 31 + (i >> 8));
    return v == SENTINEL ? (unsigned char) (v + 1) : v;        /* never the sentinel */
}

static void check_failed(int round, const char *who, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "round %d: %s succeeded although a write failed\n", round, who);
        errs++;
        return;
    }
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_OTHER) {
        fprintf(stderr, "round %d: %s returned class %d, expected MPI_ERR_OTHER\n", round,
                who, cls);
        errs++;
    }
}

int main(int argc, char *argv[])
{
    int size, provided, rounds, parts, each;
    MPI_Comm pcomm;

    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided (got %d)\n", provided);
        MTest_Finalize(1);
        return MTestReturnValue(1);
    }
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int tprovided;
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprovided);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 30);
    parts = MTestArgListGetInt_with_default(head, "parts", 512);
    each = MTestArgListGetInt_with_default(head, "each", 0);
    MTestArgListDestroy(head);
    if (rounds < 1 || parts < 2 || parts > 4096) {
        fprintf(stderr, "invalid arguments (rounds >= 1, 2 <= parts <= 4096)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *fault = getenv("MPIR_CVAR_PART_OFI_DEBUG_FAULT");
    if (fault == NULL || (atoi(fault) != 6 && atoi(fault) != 7)) {
        fprintf(stderr, "run with MPIR_CVAR_PART_OFI_DEBUG_FAULT=6 or 7\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int credit = atoi(fault) == 7;
    size_t n = (size_t) parts * COUNT;
    unsigned char *buf = malloc(n), *snap = malloc(n);
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MTest_Start_thread(watchdog, NULL);
    MTest_Start_thread(probe_thread, &pcomm);
    probe_wait_running();

    for (int r = 0; r < rounds; r++) {
        MPI_Request req;
        wd_mark(r, "barrier");
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            wd_mark(r, "sender: MPI_Psend_init");
            MPI_Psend_init(buf, parts, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);
            MPI_Start(&req);
            for (size_t i = 0; i < n; i++)
                buf[i] = val(r, (long) i);
            if (each) {
                for (int p = 0; p < parts; p++)
                    MPI_Pready(p, req);
            } else {
                MPI_Pready_range(0, parts - 1, req);
            }
            wd_mark(r, "sender: MPI_Wait");
            int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (!credit || rc != MPI_SUCCESS)
                check_failed(r, "sender: MPI_Wait", rc);
            MPI_Request_free(&req);
        } else {
            memset(buf, SENTINEL, n);
            wd_mark(r, "receiver: MPI_Precv_init");
            MPI_Precv_init(buf, parts, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);
            MPI_Start(&req);
            wd_mark(r, "receiver: MPI_Wait");
            check_failed(r, "receiver: MPI_Wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
            memcpy(snap, buf, n);
            for (size_t i = 0; i < n; i++) {
                if (buf[i] != SENTINEL && ((i < COUNT && !credit) || buf[i] != val(r, (long) i))) {
                    fprintf(stderr, "round %d: receiver: byte %zu is %d: neither the "
                            "sentinel nor the sender's%s\n", r, i, buf[i],
                            i < COUNT && !credit ? " (partition 0, whose write failed)" : "");
                    errs++;
                    break;
                }
            }
            wd_mark(r, "receiver: after MPI_Wait");
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 0.02);   /* the progress thread polls meanwhile */
            for (size_t i = 0; i < n; i++) {
                if (buf[i] != snap[i]) {
                    fprintf(stderr, "round %d: receiver: byte %zu was written after MPI_Wait "
                            "returned the error (%d, was %d)\n", r, i, buf[i], snap[i]);
                    errs++;
                    break;
                }
            }
            MPI_Request_free(&req);
        }
    }

    wd_mark(rounds, "the end");
    /* every receiver's wait for writes ended on the sender's count, none on the deadline */
    if (rank == 1) {
        if (pv_settle("part_rdma_draining", 0, 10.0) != 0) {
            fprintf(stderr, "receiver: a failed iteration still waits for writes 10 s on\n");
            errs++;
        }
        unsigned long long t = pv_read("part_rdma_drain_timeouts");
        if (t != 0) {
            fprintf(stderr, "receiver: %llu drain(s) ended on the deadline, not on the "
                    "sender's count\n", t);
            errs++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    probe_stop();
    wd_stop();
    errs += MTest_Join_threads();
    errs += probe_errs;
    if (probe_polls == 0) {
        fprintf(stderr, "rank %d: the progress thread never polled\n", rank);
        errs++;
    }
    MPI_Comm_free(&pcomm);
    free(buf);
    free(snap);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
