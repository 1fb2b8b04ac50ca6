/*
 * part_direct.c: direct completion (2 processes). A receiver on the tag transport in its
 * steady state whose iteration is one wire message lets that message's internal request
 * count down the partitioned request itself (engine README, section 4, "direct completion").
 * The engine's state catches up at the next MPI_Start or at MPI_Request_free. This test runs
 * every way a program can observe such an iteration and checks that nothing is counted twice
 * or lost:
 *
 *   style 0  MPI_Wait
 *   style 1  MPI_Test until true
 *   style 2  MPI_Parrived on every partition until all are true, then MPI_Wait
 *   style 3  MPI_Parrived until true, then MPI_Test until true, then MPI_Parrived again
 *            (inactive request: true)
 *
 * The sender readies its partitions after 0-3 ms (so that MPI_Parrived sees a partition not
 * yet arrived in some iterations). Every iteration checks every byte, the status's source,
 * tag and count. Then:
 *   - part_wire_msgs_recvd grew by -msgs per iteration (default 1: the -parts partitions
 *     merged into one wire message, by MPIR_CVAR_PART_AGGR_SIZE when -parts > 1);
 *   - part_direct_iters: with -expect=direct, every iteration of the second half completed
 *     directly (the re-plan, if any, is behind by then); with -expect=none (several VCIs, an
 *     RDMA transport, or several wire messages), none did.
 *   - the request is freed right after a direct iteration, and a second operation with the
 *     same peer and tag runs two more checked iterations (the freed one left nothing posted).
 *
 * Arguments: -parts=N (default 1) -count=N (ints per partition, default 4) -iter=N (default
 *            40) -msgs=N (wire messages per iteration, default 1) -expect=direct|none|any (default direct; the ofi-* and verbs modes force an
 *            RDMA transport and then always expect none).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

static int val(int op, int it, int i)
{
    return 11 + op * 7777 + it * 1000003 + i * 37;
}

static void check_recv(const int *buf, int n, const MPI_Status * st, int op, int it)
{
    int got = -1;
    MPI_Get_count(st, MPI_INT, &got);
    if (got != n || st->MPI_SOURCE != 0 || st->MPI_TAG != 9) {
        fprintf(stderr, "op %d iter %d: status count %d source %d tag %d, expected %d 0 9\n",
                op, it, got, st->MPI_SOURCE, st->MPI_TAG, n);
        errs++;
    }
    for (int i = 0; i < n; i++)
        if (buf[i] != val(op, it, i)) {
            fprintf(stderr, "op %d iter %d: buf[%d] = %d, expected %d\n", op, it, i, buf[i],
                    val(op, it, i));
            errs++;
            break;
        }
}

/* Rank 1: one iteration of op `op`, observed in `style`. */
static void recv_iter(MPI_Request * req, int *buf, int parts, int count, int op, int it,
                      int style)
{
    int n = parts * count, flag = 0;
    MPI_Status st;
    for (int i = 0; i < n; i++)
        buf[i] = -1;
    MPI_Start(req);
    MPI_Barrier(MPI_COMM_WORLD);        /* the sender starts its delay now */
    switch (style) {
        case 0:
            MPI_Wait(req, &st);
            break;
        case 1:
            while (!flag)
                MPI_Test(req, &flag, &st);
            break;
        case 2:
            for (int p = 0; p < parts; p++) {
                do {
                    MPI_Parrived(*req, p, &flag);
                } while (!flag);
                for (int i = p * count; i < (p + 1) * count; i++)
                    if (buf[i] != val(op, it, i)) {
                        fprintf(stderr, "op %d iter %d: partition %d arrived, buf[%d] = %d\n",
                                op, it, p, i, buf[i]);
                        errs++;
                        break;
                    }
            }
            MPI_Wait(req, &st);
            break;
        default:
            do {
                MPI_Parrived(*req, 0, &flag);
            } while (!flag);
            flag = 0;
            while (!flag)
                MPI_Test(req, &flag, &st);
            flag = 0;
            MPI_Parrived(*req, parts - 1, &flag);       /* inactive now: true */
            if (!flag) {
                fprintf(stderr, "op %d iter %d: MPI_Parrived false after completion\n", op, it);
                errs++;
            }
            break;
    }
    check_recv(buf, n, &st, op, it);
}

static void send_iter(MPI_Request * req, int *buf, int parts, int count, int op, int it)
{
    int n = parts * count;
    MPI_Start(req);
    MPI_Barrier(MPI_COMM_WORLD);
    usleep((it * 7 % 4) * 1000);
    for (int i = 0; i < n; i++)
        buf[i] = val(op, it, i);
    MPI_Pready_range(0, parts - 1, *req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int size, provided, parts, count, iters, msgs;
    const char *expect;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    parts = MTestArgListGetInt_with_default(head, "parts", 1);
    count = MTestArgListGetInt_with_default(head, "count", 4);
    iters = MTestArgListGetInt_with_default(head, "iter", 40);
    msgs = MTestArgListGetInt_with_default(head, "msgs", 1);
    expect = MTestArgListGetString_with_default(head, "expect", "direct");
    if (rdma_forced())
        expect = "none";
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);

    int n = parts * count;
    int *buf = malloc(n * sizeof(int));
    unsigned long long recvd0 = 0, direct0 = 0, direct_half = 0;

    if (rank == 1) {
        recvd0 = pv_read("part_wire_msgs_recvd");
        direct0 = pv_read("part_direct_iters");
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            if (it == iters / 2)
                direct_half = pv_read("part_direct_iters");
            recv_iter(&req, buf, parts, count, 0, it, it % 4);
        }
        unsigned long long recvd = pv_read("part_wire_msgs_recvd") - recvd0;
        unsigned long long direct = pv_read("part_direct_iters") - direct0;
        unsigned long long second = pv_read("part_direct_iters") - direct_half;
        if (recvd != (unsigned long long) iters * msgs) {
            fprintf(stderr, "part_wire_msgs_recvd grew by %llu, expected %d (%d per "
                    "iteration)\n", recvd, iters * msgs, msgs);
            errs++;
        }
        if (strcmp(expect, "direct") == 0 && second != (unsigned long long) (iters - iters / 2)) {
            fprintf(stderr, "part_direct_iters: %llu of the last %d iterations completed "
                    "directly, expected all (%llu in the whole run)\n", second,
                    iters - iters / 2, direct);
            errs++;
        } else if (strcmp(expect, "none") == 0 && direct != 0) {
            fprintf(stderr, "part_direct_iters grew by %llu, expected 0\n", direct);
            errs++;
        }
        MPI_Request_free(&req);
    } else if (rank == 0) {
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++)
            send_iter(&req, buf, parts, count, 0, it);
        MPI_Request_free(&req);
    }

    /* a second operation between the same ranks with the same tag */
    if (rank == 1) {
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < 2; it++)
            recv_iter(&req, buf, parts, count, 1, it, 0);
        MPI_Request_free(&req);
    } else if (rank == 0) {
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < 2; it++)
            send_iter(&req, buf, parts, count, 1, it);
        MPI_Request_free(&req);
    }

    free(buf);
    MTestArgListDestroy(head);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
