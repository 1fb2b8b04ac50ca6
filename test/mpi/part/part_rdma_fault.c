/*
 * part_rdma_fault.c: a write the fabric refuses fails both requests with an MPI error, never
 * an abort, a hang or a wrong write (2 processes). Run with
 * MPIR_CVAR_PART_TRANSPORT=ofi, MPIR_CVAR_PART_OFI_PROVIDER=<provider> and
 * MPIR_CVAR_PART_OFI_DEBUG_FAULT=1 (every data write of the sender fails as if
 * fi_writedata had returned -FI_EIO; the error path is the one a real refusal takes) or 2
 * (every data write first waits in its endpoint's queue, as when the transmit queue is full,
 * and fails when progress posts it: with -parts=64 and no aggregation more of them fail in
 * one pass than a pass has completion entries, and the failures beyond those were dropped,
 * so the send request never completed), 5 (every data write is taken but its completion is
 * an error, as a provider reports a write that failed on the wire; nothing is written).
 *
 * Arguments: -parts=N (partitions, default 8; 4096 bytes each)
 *            -fault=credit: run with MPIR_CVAR_PART_OFI_DEBUG_FAULT=3 instead (every credit
 *            of the receiver fails) or 4 (every credit's completion is an error; the
 *            receiver used to miss it, and both sides waited forever): the two sides swap
 *            roles below: the receiver's own calls report its failed credit, the sender's
 *            say the peer's side failed. Or 7: the credit is delivered, but its completion
 *            is reported as an error, so the sender writes while the receiver fails: the
 *            receiver's bytes of iteration K may hold the sentinel or the data (nothing
 *            else), none may change after its MPI_Wait (it waits for the sender's COUNT,
 *            which says how many landed), and the sender's iteration K may complete
 *            either way; the sender then frees its request while completions of its
 *            writes may still be unread, and makes progress for 100 ms: with
 *            MALLOC_PERTURB_ set, a use of the freed operation crashes.
 *            -fault=first: run with MPIR_CVAR_PART_OFI_DEBUG_FAULT=6 (only the write that
 *            carries partition 0 completes with an error; the others are posted and land
 *            while, or after, the failure is handled): partitions other than 0 may be
 *            reported arrived and their bytes written; partition 0's may not.
 *
 *            -churn=N: both sides make N errors of their own (MPI_Send to a rank that
 *            does not exist) before iteration K + 1, whose error must still have its class
 *            and text: MPICH's ring of error messages wraps (the engine returned the code
 *            of iteration K again, which by then named another error; engine README 7).
 *
 * MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER=K (default 1): the iterations before K go normally
 * (MPI_SUCCESS on both sides, every byte of the receive buffer checked); the description
 * below is of iteration K, the first refused one, and K + 1.
 *
 * Iteration K. Rank 0 starts, readies every partition and waits: MPI_Wait must return class
 * MPI_ERR_OTHER with a message naming the provider (MPI_Wait does not set status.MPI_ERROR:
 * only the calls that return MPI_ERR_IN_STATUS do). Rank 1 filled its buffer with a
 * sentinel, started, and polls MPI_Parrived on every partition: each call returns either
 * MPI_SUCCESS with flag 0 or, once the sender's FAIL notice has come (the engine tells the
 * peer, README 4b "Errors"; the receiver used to wait forever), MPI_ERR_OTHER; a partition
 * reported arrived is a failure, and so is no error within 30 s. Then its MPI_Wait must
 * return MPI_ERR_OTHER naming the provider and saying that the peer's side failed, and no
 * byte of its buffer may have changed. Nor may one change after that MPI_Wait: a write of
 * the failed iteration still in flight must not land later (the buffer is compared with its
 * state at MPI_Wait after 100 ms of progress: the sender's FAIL says how many writes it
 * posted, and the receiver's request completes only once they have landed).
 * The receiver's wait for those writes ends when they have all landed, not on its deadline
 * (MPIR_CVAR_PART_RDMA_DRAIN_MS): pvar part_rdma_drain_timeouts must stay 0. With
 * DEBUG_FAULT=5 and several writes the FAIL goes after the first error completion, while the
 * others are still in flight and fail later: the sender's COUNT message lowers the number
 * (before it, the receiver waited the whole deadline, 1 s by default, and counted one); at
 * the end, once no receiver drains any more (pvar part_rdma_draining 0), it is still 0.
 * Iteration K + 1 on both sides: the operations failed, so MPI_Wait returns MPI_ERR_OTHER at
 * once (no write: the buffer still holds the sentinel). Both free their requests and
 * finalize normally. With -fault=credit and K > 1 the receiver's FAIL may reach the sender
 * while it still collects iteration K - 1's completions: that iteration must keep its
 * success.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define COUNT 4096
#define DEADLINE 30.0

static int rank, errs = 0;
#include "part_pvar.h"

/* rc must be class MPI_ERR_OTHER whose text names the provider (when one is forced) and
 * contains want (NULL: anything) */
static void check_error(const char *who, int rc, const char *want)
{
    const char *prov = getenv("MPIR_CVAR_PART_OFI_PROVIDER");
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "%s: succeeded although every write was refused\n", who);
        errs++;
        return;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER) {
        fprintf(stderr, "%s: class %d, expected MPI_ERR_OTHER: %s\n", who, cls, msg);
        errs++;
    }
    if (prov && strstr(msg, prov) == NULL) {
        fprintf(stderr, "%s: the message does not name provider %s: %s\n", who, prov, msg);
        errs++;
    }
    if (want && strstr(msg, want) == NULL) {
        fprintf(stderr, "%s: the message does not say '%s': %s\n", who, want, msg);
        errs++;
    }
}

static unsigned char val(int iter, int i)
{
    return (unsigned char) (i * 7 + iter * 31 + (i >> 8));
}

/* after a failed MPI_Wait: nothing may be written any more (100 ms of progress) */
static void check_no_late_write(const unsigned char *buf, int n, int iter)
{
    unsigned char *snap = malloc((size_t) n);
    memcpy(snap, buf, (size_t) n);
    progress_for(0.1);
    for (int i = 0; i < n; i++) {
        if (buf[i] != snap[i]) {
            fprintf(stderr, "receiver: iteration %d: byte %d was written after MPI_Wait "
                    "returned the error (%d, was %d)\n", iter, i, buf[i], snap[i]);
            errs++;
            break;
        }
    }
    free(snap);
}

/* -churn: n errors of this process's own, each checked to be MPI_ERR_RANK */
static void churn(int n)
{
    int x = 0, size, cls;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < n; i++) {
        MPI_Error_class(MPI_Send(&x, 1, MPI_INT, size + 7, 0, MPI_COMM_WORLD), &cls);
        if (cls != MPI_ERR_RANK) {
            fprintf(stderr, "rank %d: MPI_Send to rank %d: class %d, expected MPI_ERR_RANK\n",
                    rank, size + 7, cls);
            errs++;
            return;
        }
    }
}

static void check_untouched(const unsigned char *buf, int n, int iter)
{
    for (int i = 0; i < n; i++) {
        if (buf[i] != 0xA5) {
            fprintf(stderr, "receiver: iteration %d: byte %d was written (%d)\n", iter, i,
                    buf[i]);
            errs++;
            break;
        }
    }
}

int main(int argc, char **argv)
{
    int PARTS, credit, first, provided;
    unsigned char *buf;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    PARTS = MTestArgListGetInt_with_default(head, "parts", 8);
    const char *fault = MTestArgListGetString_with_default(head, "fault", "data");
    credit = strcmp(fault, "credit") == 0;
    first = strcmp(fault, "first") == 0;
    int nchurn = MTestArgListGetInt_with_default(head, "churn", 0);
    MTestArgListDestroy(head);
    /* what each side's error message must say */
    const char *send_says = credit ? "peer's side" : NULL;
    const char *dbg = getenv("MPIR_CVAR_PART_OFI_DEBUG_FAULT");
    int landed = credit && dbg && atoi(dbg) == 7;       /* the credit went all the same */
    const char *recv_says = !credit ? "peer's side" :
        (dbg && (atoi(dbg) == 4 || landed)) ? "credit write's completion" :
        "fi_writedata(credit)";
    if (PARTS < 1 || PARTS > 4096) {
        fprintf(stderr, "invalid -parts (1..4096)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* the first refused iteration (the engine reads the same variable) */
    const char *fi = getenv("MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER");
    int K = fi ? atoi(fi) : 1;
    if (K < 1 || K > 1000) {
        fprintf(stderr, "MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER must be 1..1000 here\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    buf = malloc((size_t) PARTS * COUNT);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Status st;
        char who[64];
        MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int iter = 1; iter <= K + 1; iter++) {
            if (iter == K + 1)
                churn(nchurn);
            MPI_Start(&req);
            for (int i = 0; i < PARTS * COUNT; i++)
                buf[i] = val(iter, i);
            MPI_Pready_range(0, PARTS - 1, req);
            int rc = MPI_Wait(&req, &st);
            snprintf(who, sizeof(who), "sender: MPI_Wait of iteration %d", iter);
            if (landed && iter == K && rc == MPI_SUCCESS) {
                /* its writes completed before the receiver's FAIL came */
            } else if (iter >= K) {
                check_error(who, rc, send_says);
            } else if (rc != MPI_SUCCESS) {
                fprintf(stderr, "%s: failed before the refused iteration %d\n", who, K);
                errs++;
            }
        }
        MPI_Request_free(&req);
        if (landed) {
            /* completions of the freed operation's writes may still come */
            progress_for(0.1);
        }
    } else if (rank == 1) {
        int failed = 0, rc;
        unsigned long long timeouts;
        char who[64];
        MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        /* the iterations before the refused one carry their data */
        for (int iter = 1; iter < K; iter++) {
            memset(buf, 0xA5, (size_t) PARTS * COUNT);
            MPI_Start(&req);
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                fprintf(stderr, "receiver: MPI_Wait of iteration %d failed before the refused "
                        "iteration %d\n", iter, K);
                errs++;
            }
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != val(iter, i)) {
                    fprintf(stderr, "receiver: iteration %d: byte %d is %d, expected %d\n",
                            iter, i, buf[i], val(iter, i));
                    errs++;
                    break;
                }
        }
        memset(buf, 0xA5, (size_t) PARTS * COUNT);
        MPI_Start(&req);
        snprintf(who, sizeof(who), "receiver: MPI_Parrived of iteration %d", K);
        double t0 = MPI_Wtime();
        while (!failed && MPI_Wtime() - t0 < DEADLINE) {
            for (int p = 0; p < PARTS && !failed; p++) {
                int arrived = 0;
                rc = MPI_Parrived(req, p, &arrived);
                if (rc != MPI_SUCCESS) {
                    check_error(who, rc, recv_says);
                    failed = 1;
                } else if (arrived && !landed && (p == 0 || !first)) {
                    fprintf(stderr, "receiver: partition %d reported arrived\n", p);
                    errs++;
                    failed = 1;
                }
            }
        }
        if (!failed) {
            fprintf(stderr, "receiver: no error from MPI_Parrived within %.0f s: the "
                    "sender's failure was not reported\n", DEADLINE);
            errs++;
            MPI_Abort(MPI_COMM_WORLD, 1);       /* the request would never complete */
        }
        snprintf(who, sizeof(who), "receiver: MPI_Wait of iteration %d", K);
        check_error(who, MPI_Wait(&req, MPI_STATUS_IGNORE), recv_says);
        if (landed) {
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != 0xA5 && buf[i] != val(K, i)) {
                    fprintf(stderr, "receiver: iteration %d: byte %d is %d, neither the "
                            "sentinel nor the data\n", K, i, buf[i]);
                    errs++;
                    break;
                }
        } else {
            check_untouched(buf, first ? COUNT : PARTS * COUNT, K);
        }
        timeouts = pv_read("part_rdma_drain_timeouts");
        if (timeouts != 0) {
            fprintf(stderr, "receiver: iteration %d ended on the drain's deadline (%llu "
                    "time(s)), not when the sender's last write that would land had\n", K,
                    timeouts);
            errs++;
        }
        check_no_late_write(buf, PARTS * COUNT, K);
        if (first || landed)
            memset(buf, 0xA5, (size_t) PARTS * COUNT);
        churn(nchurn);
        MPI_Start(&req);
        snprintf(who, sizeof(who), "receiver: MPI_Wait of iteration %d", K + 1);
        check_error(who, MPI_Wait(&req, MPI_STATUS_IGNORE), recv_says);
        check_untouched(buf, PARTS * COUNT, K + 1);
        MPI_Request_free(&req);
        /* a drain still waiting (its iteration ended as its writes arrived) must end on the
         * sender's count too, not on its deadline */
        if (pv_settle("part_rdma_draining", 0, 10.0) != 0) {
            fprintf(stderr, "receiver: a failed iteration still waits for writes 10 s on\n");
            errs++;
        }
        timeouts = pv_read("part_rdma_drain_timeouts");
        if (timeouts != 0) {
            fprintf(stderr, "receiver: a drain ended on its deadline (%llu time(s))\n",
                    timeouts);
            errs++;
        }
    }
    free(buf);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
