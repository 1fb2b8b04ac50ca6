/*
 * part_race_direct_arm.c: direct completion armed by a progress thread while the main
 * thread waits on the request (2 processes, MPI_THREAD_MULTIPLE; the test fails if that
 * level is not provided).
 *
 * Direct completion (engine README, section 3): a receive whose iteration is one wire
 * message on the tag transport points that message's request at the partitioned request's
 * completion counter, so the netmod's completion completes the partitioned request. The
 * arming (part_tag.c, direct_arm) redirects the counter under the VCI lock. The old engine
 * recorded that it had armed (op->direct) and published the message's request only after
 * releasing that lock: when the receives of the first iteration are posted by the progress
 * hook in another thread (the sender's announcement arrives after the receiver's
 * MPI_Start), the message could complete the request in between, the main thread's
 * MPI_Wait return, and its next MPI_Start (or MPI_Request_free) run before the arming
 * thread had recorded anything: that start missed the catch-up of the ended iteration, and
 * the arming thread's late store then overwrote the new iteration's request, which leaked
 * (only a build with MPICH's handle checking, --enable-g=handlealloc, reports that: at
 * MPI_Finalize; this test checks that the window is run, and the data).
 *
 * Run with env=MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US=20000 (a testing aid: the arming thread
 * busy-waits that long after releasing the VCI lock, so the window is wide; the test fails
 * when the variable is 0). -rounds rounds, each with its own tag: rank 1 calls
 * MPI_Precv_init (1 partition) and MPI_Start, then tells rank 0, which only then calls
 * MPI_Psend_init (1 partition), so the announcement is handled in rank 1's progress: by its
 * main thread in MPI_Wait or by a progress thread that loops on MPI_Iprobe (an idle
 * communicator) for the whole run; in 3 of 4 rounds the main thread first sleeps 1-3 ms, so
 * that the progress thread has a core and takes it (on 2 cores with 3 spinning threads it
 * otherwise rarely does). Each round runs 1 to 3 iterations (rank 1 starts, tells
 * rank 0, waits; rank 0 starts, fills, readies, waits), then both free their requests
 * (right after the last MPI_Wait, which also exercises a free inside the window).
 * What it asserts:
 * - every call returns MPI_SUCCESS;
 * - every iteration the receive buffer holds exactly that iteration's ints (each compared)
 *   and the status counts the whole message, with the right source and tag;
 * - on the tag transport (not with the RDMA transport forced, where there is no direct
 *   completion): part_direct_iters grows by at least the rounds' iterations after the
 *   first and at most all of them; and in at least one round the first MPI_Wait returned
 *   while part_direct_iters had not yet counted that iteration, i.e. the race above was
 *   really run (the arming thread was still inside its window);
 * - no hang: if the main thread does not move on for 60 s, a watchdog thread reports where
 *   it stopped and calls MPI_Abort.
 *
 * Arguments: -rounds=N (default 60) -count=N (ints per message, default 256)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define SENTINEL (-7)
#define TAG0 500

static int rank, errs = 0;
static MPI_Comm comm, pcomm, ctl;

/* ---- watchdog ----------------------------------------------------------------------------- */

#include "part_watchdog.h"

/* ---- progress thread ------------------------------------------------------------------------ */

#include "part_probe_thread.h"

/* ---- MPI_T ------------------------------------------------------------------------------- */

#include "../../part/part_pvar.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static int val(int round, int iter, int i)
{
    return 1 + round * 100003 + iter * 7919 + i * 3;
}

static void check(int err, int round, int iter, const char *what)
{
    if (err != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d: round %d iteration %d: %s returned %s\n", rank, round, iter,
                what, s);
        errs++;
    }
}

/* rank 1: one round of iters iterations; returns whether the first MPI_Wait returned
 * before part_direct_iters counted that iteration (the arming thread inside its window) */
static int recv_round(int round, int iters, int *buf, int count, int tag)
{
    MPI_Request req;
    int early = 0;

    check(MPI_Precv_init(buf, 1, count, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req), round,
          0, "MPI_Precv_init");
    for (int it = 0; it < iters; it++) {
        MPI_Status st;
        int n = -1;
        for (int i = 0; i < count; i++)
            buf[i] = SENTINEL;
        unsigned long long d0 = pv_read("part_direct_iters");
        wd_mark(round, "MPI_Start (receive)");
        check(MPI_Start(&req), round, it, "MPI_Start(receive)");
        check(MPI_Send(&it, 1, MPI_INT, 0, tag, ctl), round, it, "MPI_Send(started)");
        if (it == 0 && round % 4)
            usleep(round % 4 * 1000);   /* the progress thread has the CPU and plans */
        wd_mark(round, "MPI_Wait (receive)");
        check(MPI_Wait(&req, &st), round, it, "MPI_Wait(receive)");
        if (it == 0 && pv_read("part_direct_iters") == d0)
            early = 1;
        MPI_Get_count(&st, MPI_INT, &n);
        if (n != count || st.MPI_SOURCE != 0 || st.MPI_TAG != tag) {
            fprintf(stderr, "rank 1: round %d iteration %d: status count %d source %d tag %d, "
                    "expected %d 0 %d\n", round, it, n, st.MPI_SOURCE, st.MPI_TAG, count, tag);
            errs++;
        }
        for (int i = 0, bad = 0; i < count; i++)
            if (buf[i] != val(round, it, i)) {
                if (bad++ < 3 && errs < 30)
                    fprintf(stderr, "rank 1: round %d iteration %d: received[%d] = %d, "
                            "expected %d\n", round, it, i, buf[i], val(round, it, i));
                errs++;
            }
    }
    wd_mark(round, "MPI_Request_free (receive)");
    check(MPI_Request_free(&req), round, iters, "MPI_Request_free(receive)");
    return early;
}

/* rank 0: one round; the announcement leaves only after rank 1 has started */
static void send_round(int round, int iters, int *buf, int count, int tag)
{
    MPI_Request req = MPI_REQUEST_NULL;

    for (int it = 0; it < iters; it++) {
        int got = -1;
        wd_mark(round, "MPI_Recv (receiver started)");
        check(MPI_Recv(&got, 1, MPI_INT, 1, tag, ctl, MPI_STATUS_IGNORE), round, it,
              "MPI_Recv(started)");
        if (got != it) {
            fprintf(stderr, "rank 0: round %d: the receiver started iteration %d, expected %d\n",
                    round, got, it);
            errs++;
        }
        if (it == 0)
            check(MPI_Psend_init(buf, 1, count, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req),
                  round, 0, "MPI_Psend_init");
        check(MPI_Start(&req), round, it, "MPI_Start(send)");
        for (int i = 0; i < count; i++)
            buf[i] = val(round, it, i);
        check(MPI_Pready(0, req), round, it, "MPI_Pready");
        wd_mark(round, "MPI_Wait (send)");
        check(MPI_Wait(&req, MPI_STATUS_IGNORE), round, it, "MPI_Wait(send)");
    }
    check(MPI_Request_free(&req), round, iters, "MPI_Request_free(send)");
}

int main(int argc, char *argv[])
{
    int size, provided, rounds, count, early = 0, min_direct = 0, max_direct = 0, delay;
    int rdma = rdma_forced();  /* the test modes that force RDMA (ofi-*, verbs) */
    unsigned long long d0, d1;

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
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 60);
    count = MTestArgListGetInt_with_default(head, "count", 256);
    MTestArgListDestroy(head);
    if (rounds < 1 || count < 1) {
        fprintf(stderr, "invalid arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    delay = cv_read_int("MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US");
    if (delay <= 0) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US is %d: run with "
                "env=MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US=20000\n", rank, delay);
        errs++;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ctl, MPI_ERRORS_RETURN);
    int *buf = malloc(count * sizeof(int));

    MTest_Start_thread(watchdog, NULL);
    if (rank == 1) {
        MTest_Start_thread(probe_thread, &pcomm);
        probe_wait_running();
    }

    d0 = pv_read("part_direct_iters");
    for (int round = 0; round < rounds; round++) {
        int iters = 1 + round % 3;
        if (rank == 1)
            early += recv_round(round, iters, buf, count, TAG0 + round);
        else
            send_round(round, iters, buf, count, TAG0 + round);
        min_direct += iters - 1;
        max_direct += iters;
    }
    wd_mark(rounds, "after the rounds");
    probe_stop();
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 1) {
        /* an arming thread still in its window counts its iteration when it leaves it */
        usleep(2 * (delay > 0 ? delay : 0) + 1000);
        d1 = pv_read("part_direct_iters");
        if (rdma) {
            if (d1 != d0) {
                fprintf(stderr, "rank 1: part_direct_iters grew by %lld with the RDMA "
                        "transport forced (expected 0)\n", (long long) (d1 - d0));
                errs++;
            }
        } else {
            if (d1 - d0 < (unsigned long long) min_direct ||
                d1 - d0 > (unsigned long long) max_direct) {
                fprintf(stderr, "rank 1: part_direct_iters grew by %lld, expected %d to %d: "
                        "the receives did not complete directly\n", (long long) (d1 - d0),
                        min_direct, max_direct);
                errs++;
            }
            if (early == 0) {
                fprintf(stderr, "rank 1: in none of %d rounds did the first MPI_Wait return "
                        "inside the arming thread's window: the race was not run\n", rounds);
                errs++;
            }
        }
        MTestPrintfMsg(1, "rank 1: %d of %d rounds ran the race\n", early, rounds);
    }
    wd_stop();
    errs += MTest_Join_threads();
    errs += probe_errs;
    if (rank == 1 && probe_polls == 0) {
        fprintf(stderr, "rank 1: the progress thread never polled\n");
        errs++;
    }

    free(buf);
    MPI_Comm_free(&ctl);
    MPI_Comm_free(&pcomm);
    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
