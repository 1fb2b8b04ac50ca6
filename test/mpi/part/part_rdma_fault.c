/*
 * part_rdma_fault.c: a write the fabric refuses fails the send request with the provider's
 * error, never an abort, a hang or a wrong write (2 processes). Run with
 * MPIR_CVAR_PART_TRANSPORT=ofi, MPIR_CVAR_PART_OFI_PROVIDER=<provider> and
 * MPIR_CVAR_PART_OFI_DEBUG_FAULT=1 (every data write of the sender fails as if
 * fi_writedata had returned -FI_EIO; the error path is the one a real refusal takes) or 2
 * (every data write first waits in its endpoint's queue, as when the transmit queue is full,
 * and fails when progress posts it: with -parts=64 and no aggregation more of them fail in
 * one pass than a pass has completion entries, and the failures beyond those were dropped,
 * so the send request never completed).
 *
 * Arguments: -parts=N (partitions, default 8; 4096 bytes each)
 *
 * Rank 0 starts, readies every partition and waits: MPI_Wait must return class
 * MPI_ERR_OTHER with a message naming the provider (MPI_Wait does not set status.MPI_ERROR:
 * only the calls that return MPI_ERR_IN_STATUS do). It then tells rank 1 what it saw.
 * Rank 1 filled its buffer with a sentinel, started, and polls MPI_Parrived on every partition until the notice comes: no partition
 * may be reported arrived and no byte may have changed. Rank 1's request stays active (the
 * data never comes; freeing an active request is erroneous), and both finalize normally.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define COUNT 4096

int main(int argc, char **argv)
{
    int rank, errs = 0, PARTS;
    unsigned char *buf;
    const char *prov = getenv("MPIR_CVAR_PART_OFI_PROVIDER");
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    PARTS = MTestArgListGetInt_with_default(head, "parts", 8);
    MTestArgListDestroy(head);
    if (PARTS < 1 || PARTS > 4096) {
        fprintf(stderr, "invalid -parts (1..4096)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    buf = malloc((size_t) PARTS * COUNT);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Status st;
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0, cls = MPI_SUCCESS, outcome;
        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = (unsigned char) i;
        MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Pready_range(0, PARTS - 1, req);
        int rc = MPI_Wait(&req, &st);
        if (rc == MPI_SUCCESS) {
            fprintf(stderr, "sender: MPI_Wait succeeded although every write was refused\n");
            errs++;
        } else {
            MPI_Error_class(rc, &cls);
            MPI_Error_string(rc, msg, &len);
            if (cls != MPI_ERR_OTHER) {
                fprintf(stderr, "sender: class %d, expected MPI_ERR_OTHER: %s\n", cls, msg);
                errs++;
            }
            if (prov && strstr(msg, prov) == NULL) {
                fprintf(stderr, "sender: the message does not name provider %s: %s\n", prov,
                        msg);
                errs++;
            }
        }
        outcome = errs;
        MPI_Send(&outcome, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Request_free(&req);
    } else if (rank == 1) {
        int flag = 0, notice;
        MPI_Request nreq;
        memset(buf, 0xA5, PARTS * COUNT);
        MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Irecv(&notice, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &nreq);
        while (!flag) {
            for (int p = 0; p < PARTS; p++) {
                int arrived = 0;
                MPI_Parrived(req, p, &arrived);
                if (arrived) {
                    fprintf(stderr, "receiver: partition %d reported arrived\n", p);
                    errs++;
                    flag = 1;
                }
            }
            MPI_Test(&nreq, &flag, MPI_STATUS_IGNORE);
        }
        if (flag && nreq != MPI_REQUEST_NULL)
            MPI_Wait(&nreq, MPI_STATUS_IGNORE);
        for (int i = 0; i < PARTS * COUNT; i++) {
            if (buf[i] != 0xA5) {
                fprintf(stderr, "receiver: byte %d was written (%d)\n", i, buf[i]);
                errs++;
                break;
            }
        }
        /* the request stays active: nothing will complete it */
    }
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
