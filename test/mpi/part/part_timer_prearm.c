/*
 * part_timer_prearm.c: the timer aggregator when every partition is readied before the
 * receiver's credit (2 processes).
 *
 * On the RDMA transport a sender's iteration may not write until the receiver's MPI_Start
 * has sent its credit; partitions readied before it are only flagged, and the credit's
 * arrival "arms" the iteration (part_rdma_timer.c, MPIDI_PART_rtimer_arm): every flagged
 * partition is then readied into its group as if readied at that moment. With
 * MPIR_CVAR_PART_AGGR_TIMEOUT_US=0 each of them goes alone; the arming once put the writes
 * of a whole group of 64 such partitions into room for 32, and the receiver completed its
 * iteration with partitions missing. Here, per iteration:
 *   rank 0 fills its buffer, MPI_Start, readies every partition (one MPI_Pready per
 *          partition, or MPI_Pready_range over -chunk partitions), and only then tells rank 1
 *          (a message on another communicator); then MPI_Wait;
 *   rank 1 waits for that message, then MPI_Start (its credit), MPI_Wait, and checks every
 *          int.
 * With an RDMA transport forced (MPIR_CVAR_PART_TRANSPORT=ofi or verbs) and -expect given,
 * rank 0 also checks the writes of every iteration after the first (pvars: the backend's
 * writes, part_timer_runs, and part_wire_msgs_sent for the number of groups G):
 *   -expect=alone  (deadline 0) one write per partition, all of them runs;
 *   -expect=whole  (a long deadline) G writes, no run: each group whole, and fewer groups
 *                  than partitions (the groups merge partitions).
 * Without an RDMA transport only the data is checked (the timer is the tag transport's
 * ploggp there).
 *
 * Arguments: -parts=N (default 64) -count=N (ints per partition, default 2) -iter=N
 *            (default 8) -chunk=K (partitions per ready call, default 1) -expect=alone|whole
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs;
#include "part_pvar.h"

static int value(int iter, int i)
{
    return 7 + iter * 100019 + i * 3;
}

int main(int argc, char *argv[])
{
    int size, parts, count, iters, chunk, provided;
    const char *expect;
    MPI_Comm ctl;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    parts = MTestArgListGetInt_with_default(head, "parts", 64);
    count = MTestArgListGetInt_with_default(head, "count", 2);
    iters = MTestArgListGetInt_with_default(head, "iter", 8);
    chunk = MTestArgListGetInt_with_default(head, "chunk", 1);
    expect = MTestArgListGetString_with_default(head, "expect", "");
    if (parts < 1 || count < 1 || iters < 2 || chunk < 1 ||
        (strcmp(expect, "") && strcmp(expect, "alone") && strcmp(expect, "whole"))) {
        fprintf(stderr, "invalid arguments (parts, count, chunk >= 1, iter >= 2, "
                "expect alone or whole)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int check_writes = rank == 0 && rdma_forced() && expect[0] != '\0';
    const int total = parts * count;
    int *buf = malloc(sizeof(int) * total);

    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    if (rank == 0)
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);

    for (int it = 0; it < iters; it++) {
        int token = it;
        if (rank == 0) {
            unsigned long long w0 = 0, r0 = 0, m0 = 0;
            if (check_writes) {
                w0 = pv_read(RDMA_PV("writes"));
                r0 = pv_read("part_timer_runs");
                m0 = pv_read("part_wire_msgs_sent");
            }
            for (int i = 0; i < total; i++)
                buf[i] = value(it, i);
            MPI_Start(&req);
            for (int p = 0; p < parts; p += chunk) {
                int hi = p + chunk - 1 < parts - 1 ? p + chunk - 1 : parts - 1;
                if (chunk == 1)
                    MPI_Pready(p, req);
                else
                    MPI_Pready_range(p, hi, req);
            }
            MPI_Send(&token, 1, MPI_INT, 1, 0, ctl);    /* everything readied: now credit */
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (check_writes && it > 0) {
                long long w = (long long) (pv_read(RDMA_PV("writes")) - w0);
                long long r = (long long) (pv_read("part_timer_runs") - r0);
                long long g = (long long) (pv_read("part_wire_msgs_sent") - m0);
                int bad = strcmp(expect, "alone") == 0 ? (w != parts || r != parts) :
                    (w != g || r != 0 || g < 1 || g >= parts);
                if (bad) {
                    fprintf(stderr, "iter %d: %lld writes, %lld runs, %lld groups for %d "
                            "partitions readied before the credit; expected %s\n", it, w, r,
                            g, parts, strcmp(expect, "alone") == 0 ?
                            "one write (a run) per partition" : "one whole write per group");
                    errs++;
                }
            }
        } else {
            for (int i = 0; i < total; i++)
                buf[i] = -1;
            MPI_Recv(&token, 1, MPI_INT, 0, 0, ctl, MPI_STATUS_IGNORE);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int i = 0; i < total; i++)
                if (buf[i] != value(it, i) && bad++ < 3)
                    fprintf(stderr, "iter %d: int %d (partition %d) is %d, expected %d\n", it,
                            i, i / count, buf[i], value(it, i));
            errs += bad;
        }
    }

    MPI_Request_free(&req);
    MPI_Comm_free(&ctl);
    free(buf);
    MTestArgListDestroy(head);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
