/*
 * part_race_inflight.c: a sender's MPI_Pready held up, on the tag transport, after it saw
 * its wire message in flight and before it had the progress hook poll the operation, until
 * the iteration has ended and the program's next MPI_Start has begun the next one (2
 * processes, MPI_THREAD_MULTIPLE; the test fails if that level is not provided).
 *
 * The old engine put the operation back in the polling list then. A start not in the steady
 * state (the operation was still in the list) releases the last iteration's wire requests
 * only after it released the engine lock; a poll in between counted those old, completed
 * requests as the new iteration's messages, from where the last iteration's poll stopped.
 * The new iteration could then end before the program readied its partitions: the send's
 * MPI_Test said complete while a partition was still to be readied (found by a review of
 * 2026-12-07). Now the held call finds that the iteration moved on and does nothing (pvar
 * part_inflight_late counts it).
 *
 * Rank 0 sends 9 partitions of -count ints (default 1024: 4 KiB), which rank 1's receive
 * (9 partitions, aggregator "size", 16 partitions' bytes) gets as 3 wire messages: 4, 4
 * and 1 partitions. Iteration 0 is plain; then, per round, a trap iteration k and a check
 * iteration k + 1. In the trap, rank 0's worker readies partitions 0-3 (message 0, which
 * the testing aid MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US holds, when its test found it in
 * flight, until the next iteration has begun: run with e.g. 500000, the longest it waits;
 * the main thread's own message 0 in the check iteration waits that long); meanwhile the
 * main thread readies 4-7 (message 1), tests
 * the request for 50 ms (the hook counts messages 0 and 1; it must not complete), readies
 * 8 (message 2, a small one: it completes as it is sent, the iteration ends where the last
 * poll stopped), waits, and starts iteration k + 1, which MPIR_CVAR_PART_DEBUG_START_DELAY_US
 * (e.g. 400000) holds after it released the lock. The worker, let go meanwhile, returns
 * from its MPI_Pready_range and makes progress for 0.3 s (no partitioned request touched).
 * In iteration k + 1 the main thread readies partitions 0-7 and tests for 100 ms: the send
 * must not complete before partition 8 is readied; then it readies 8 and waits.
 *
 * What it asserts:
 * - every call returns MPI_SUCCESS; every iteration every int of rank 1's receive buffer
 *   is that iteration's value (the buffer is cleared before each MPI_Start);
 * - rank 0's send never completes before all its partitions are readied (a completion
 *   there is reported and aborts the job: the receiver would wait for ever);
 * - on the tag transport with both testing aids set (not under ThreadSanitizer, which
 *   changes the timing), part_inflight_late grew in at least one round on rank 0: the held
 *   call came after the next iteration had begun (a round that missed it, the main thread
 *   slower than the aid's longest wait on a loaded machine, is only reported; in the RDMA
 *   modes the aids do nothing and only the data are checked);
 * - no hang: a watchdog thread reports where the main thread stopped after 60 s.
 *
 * Arguments: -rounds=N (default 3), -count=N (ints per partition, default 1024)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define P 9
#define TAG 79

#if defined(__SANITIZE_THREAD__)
#define WINDOW_REQUIRED 0
#else
#define WINDOW_REQUIRED 1
#endif

static int rank, errs = 0;

#define WD_UNIT "iteration"
#include "part_watchdog.h"
#include "part_thread_check.h"
#include "../../part/part_pvar.h"

static int count = 1024;
static int *buf;
static MPI_Request req;
static int go_k = -1;           /* the trap iteration the worker may ready in (atomic) */
static int done_k = -1;         /* the last trap iteration the worker finished (atomic) */
static int worker_errs;         /* (atomic) */

static int val(int it, int i)
{
    return 1 + it * 100003 + i * 7;
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    int rounds = *(int *) arg;
    for (int r = 0; r < rounds; r++) {
        int k = 1 + 2 * r;
        while (__atomic_load_n(&go_k, __ATOMIC_ACQUIRE) < k)
            usleep(50);
        int err = MPI_Pready_range(0, 3, req);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank 0 iteration %d: the worker's MPI_Pready_range returned %d\n",
                    k, err);
            __atomic_add_fetch(&worker_errs, 1, __ATOMIC_RELAXED);
        }
        progress_for(0.3);
        __atomic_store_n(&done_k, k, __ATOMIC_RELEASE);
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

/* MPI_Test the send for secs: it must not complete (a partition is still to be readied). */
static void test_not_done(int k, double secs, const char *when)
{
    int flag = 0;
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < secs) {
        ok(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), k, "MPI_Test");
        if (flag) {
            fprintf(stderr, "rank 0 iteration %d: the send completed %s, before partition 8 "
                    "was readied\n", k, when);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void sender(int rounds)
{
    const char *hold = getenv("MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US");
    const char *start = getenv("MPIR_CVAR_PART_DEBUG_START_DELAY_US");
    int want_window = WINDOW_REQUIRED && !rdma_forced() && hold && atoi(hold) > 0 && start &&
        atoi(start) > 0;
    int iters = 1 + 2 * rounds, missed = 0;
    unsigned long long late = pv_read("part_inflight_late");

    ok(MPI_Psend_init(buf, P, count, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
       -1, "MPI_Psend_init");
    MTest_Start_thread(worker, &rounds);
    for (int k = 0; k < iters; k++) {
        int trap = k % 2 == 1, check = k > 0 && !trap;
        for (int j = 0; j < P * count; j++)
            buf[j] = val(k, j);
        wd_mark(k, "MPI_Start");
        ok(MPI_Start(&req), k, "MPI_Start");
        if (trap) {
            __atomic_store_n(&go_k, k, __ATOMIC_RELEASE);
            usleep(50000);      /* the worker sends message 0 and is held */
            ok(MPI_Pready_range(4, 7, req), k, "MPI_Pready_range");
            wd_mark(k, "MPI_Test (trap)");
            test_not_done(k, 0.05, "in the trap iteration");
        } else if (check) {
            ok(MPI_Pready_range(0, 7, req), k, "MPI_Pready_range");
            wd_mark(k, "MPI_Test (check)");
            test_not_done(k, 0.1, "after its MPI_Start");
        } else {
            ok(MPI_Pready_range(0, 7, req), k, "MPI_Pready_range");
        }
        ok(MPI_Pready(8, req), k, "MPI_Pready");
        wd_mark(k, "MPI_Wait");
        ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
        if (check) {
            wd_mark(k, "waiting for the worker");
            while (__atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < k - 1)
                usleep(100);
            unsigned long long now = pv_read("part_inflight_late");
            if (now == late)
                missed++;
            late = now;
        }
    }
    errs += __atomic_load_n(&worker_errs, __ATOMIC_RELAXED);
    if (want_window && missed > 0) {
        fprintf(stderr, "rank 0: in %d of %d rounds the held MPI_Pready_range did not come "
                "after the next iteration had begun (part_inflight_late did not grow)%s\n",
                missed, rounds, missed == rounds ? ": the window was never run" : "");
        errs += missed == rounds;
    }
}

static void receiver(int rounds)
{
    int iters = 1 + 2 * rounds;
    char bytes[32];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpich_part_aggregator", "size");
    snprintf(bytes, sizeof(bytes), "%d", 4 * count * (int) sizeof(int));
    MPI_Info_set(info, "mpich_part_aggr_size", bytes);  /* messages of 4, 4 and 1 */
    ok(MPI_Precv_init(buf, P, count, MPI_INT, 0, TAG, MPI_COMM_WORLD, info, &req), -1,
       "MPI_Precv_init");
    MPI_Info_free(&info);
    for (int k = 0; k < iters; k++) {
        memset(buf, 0, sizeof(int) * P * count);
        wd_mark(k, "MPI_Start");
        ok(MPI_Start(&req), k, "MPI_Start");
        wd_mark(k, "MPI_Wait");
        ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
        int bad = 0;
        for (int j = 0; j < P * count; j++)
            if (buf[j] != val(k, j) && bad++ < 4)
                fprintf(stderr, "rank 1 iteration %d: buf[%d] (partition %d) = %d, expected "
                        "%d\n", k, j, j / count, buf[j], val(k, j));
        errs += bad;
    }
}

int main(int argc, char **argv)
{
    int provided;
    if (part_thread_init(&argc, &argv))
        return MTestReturnValue(1);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    int rounds = MTestArgListGetInt_with_default(head, "rounds", 3);
    count = MTestArgListGetInt_with_default(head, "count", 1024);
    MTestArgListDestroy(head);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    buf = malloc(sizeof(int) * P * count);
    MTest_Start_thread(watchdog, NULL);

    if (rank == 0)
        sender(rounds);
    else
        receiver(rounds);

    wd_mark(-1, "MPI_Request_free");
    ok(MPI_Request_free(&req), -1, "MPI_Request_free");
    wd_stop();
    MTest_Join_threads();
    free(buf);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
