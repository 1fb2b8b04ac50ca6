/*
 * part_rdma_fault.c: a write the fabric refuses fails both requests with an MPI error, never
 * an abort, a hang or a wrong write (2 processes). Run with
 * MPIR_CVAR_PART_TRANSPORT=ofi, MPIR_CVAR_PART_OFI_PROVIDER=<provider> and
 * MPIR_CVAR_PART_OFI_DEBUG_FAULT=1 (every data write of the sender fails as if
 * fi_writedata had returned -FI_EIO; the error path is the one a real refusal takes) or 2
 * (every data write first waits in its endpoint's queue, as when the transmit queue is full,
 * and fails when progress posts it: with -parts=64 and no aggregation more of them fail in
 * one pass than a pass has completion entries, and the failures beyond those were dropped,
 * so the send request never completed).
 *
 * Arguments: -parts=N (partitions, default 8; 4096 bytes each)
 *            -fault=credit: run with MPIR_CVAR_PART_OFI_DEBUG_FAULT=3 instead (every credit
 *            of the receiver fails): the two sides swap roles below: the receiver's own
 *            calls report its failed credit, the sender's say the peer's side failed.
 *
 * Iteration 1. Rank 0 starts, readies every partition and waits: MPI_Wait must return class
 * MPI_ERR_OTHER with a message naming the provider (MPI_Wait does not set status.MPI_ERROR:
 * only the calls that return MPI_ERR_IN_STATUS do). Rank 1 filled its buffer with a
 * sentinel, started, and polls MPI_Parrived on every partition: each call returns either
 * MPI_SUCCESS with flag 0 or, once the sender's FAIL notice has come (the engine tells the
 * peer, README 4b "Errors"; the receiver used to wait forever), MPI_ERR_OTHER; a partition
 * reported arrived is a failure, and so is no error within 30 s. Then its MPI_Wait must
 * return MPI_ERR_OTHER naming the provider and saying that the peer's side failed, and no
 * byte of its buffer may have changed.
 * Iteration 2 on both sides: the operations failed, so MPI_Wait returns MPI_ERR_OTHER at
 * once (no write: the buffer still holds the sentinel). Both free their requests and
 * finalize normally.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define COUNT 4096
#define DEADLINE 30.0

static int errs = 0;

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
    int rank, PARTS, credit;
    unsigned char *buf;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    PARTS = MTestArgListGetInt_with_default(head, "parts", 8);
    credit = strcmp(MTestArgListGetString_with_default(head, "fault", "data"), "credit") == 0;
    MTestArgListDestroy(head);
    /* what each side's error message must say */
    const char *send_says = credit ? "peer's side" : NULL;
    const char *recv_says = credit ? "fi_writedata(credit)" : "peer's side";
    if (PARTS < 1 || PARTS > 4096) {
        fprintf(stderr, "invalid -parts (1..4096)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    buf = malloc((size_t) PARTS * COUNT);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Status st;
        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = (unsigned char) i;
        MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int iter = 1; iter <= 2; iter++) {
            MPI_Start(&req);
            MPI_Pready_range(0, PARTS - 1, req);
            check_error(iter == 1 ? "sender: MPI_Wait of iteration 1" :
                        "sender: MPI_Wait of iteration 2", MPI_Wait(&req, &st), send_says);
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        int failed = 0, rc;
        memset(buf, 0xA5, (size_t) PARTS * COUNT);
        MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        double t0 = MPI_Wtime();
        while (!failed && MPI_Wtime() - t0 < DEADLINE) {
            for (int p = 0; p < PARTS && !failed; p++) {
                int arrived = 0;
                rc = MPI_Parrived(req, p, &arrived);
                if (rc != MPI_SUCCESS) {
                    check_error("receiver: MPI_Parrived of iteration 1", rc, recv_says);
                    failed = 1;
                } else if (arrived) {
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
        check_error("receiver: MPI_Wait of iteration 1", MPI_Wait(&req, MPI_STATUS_IGNORE),
                    recv_says);
        check_untouched(buf, PARTS * COUNT, 1);
        MPI_Start(&req);
        check_error("receiver: MPI_Wait of iteration 2", MPI_Wait(&req, MPI_STATUS_IGNORE),
                    recv_says);
        check_untouched(buf, PARTS * COUNT, 2);
        MPI_Request_free(&req);
    }
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
