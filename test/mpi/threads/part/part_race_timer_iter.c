/*
 * part_race_timer_iter.c: an MPI_Pready of one iteration held up until the next has begun,
 * on the timer aggregator (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level
 * is not provided).
 *
 * On the RDMA transport the timer aggregator decides what to write under its operation's
 * lock (part_rdma_timer.c, MPIDI_PART_rtimer_ready), after MPI_Pready has set the
 * partitions' ready flags. Partitions readied before the receiver's credit are sent by the
 * credit's arming, which reads those flags. The old engine took the iteration the decision
 * belonged to from the operation when it got the lock: a thread held up between its flags
 * and the lock while the arming sent its partition, the iteration completed and the
 * program started the next, decided in the new iteration. It marked the partition ready
 * and sent there with the bytes of the moment its group went (the program's own
 * MPI_Pready of it in that iteration was then taken for a second one and dropped): the
 * receiver got the old iteration's data in that partition.
 *
 * The pattern: rank 0's main thread calls MPI_Start, waits (calling MPI_Test) until the
 * worker thread's MPI_Pready of the last iteration returned, then lets the worker fill and
 * ready partition 0, readies 1..P-1 itself and calls MPI_Wait: so it may start an iteration
 * while the worker is still inside the last one's MPI_Pready. In the trap iterations
 * rank 1 starts its receive 100 ms late (the credit comes late) and the testing aid
 * MPIR_CVAR_PART_DEBUG_TIMER_READY_DELAY_US=200000 (run with it) holds a call that readies
 * partition 0 before the credit for 200 ms between its flags and the decision.
 *
 * What it asserts:
 * - every call returns MPI_SUCCESS, and every iteration every int of the receive buffer
 *   is that iteration's value (the buffer is cleared before each MPI_Start);
 * - with the RDMA transport forced (the ofi-* and verbs modes) and the testing aid set, in
 *   at least one trap iteration rank 0's MPI_Wait returned while the worker was still
 *   inside its MPI_Pready: the window above was really run (otherwise the test did not
 *   test it; a trap misses it when the receiver's late start came before the worker's
 *   call, which a busy 2-core machine can make happen);
 * - no hang: a watchdog thread reports where the main thread stopped after 60 s and calls
 *   MPI_Abort.
 *
 * Arguments: -iters=N (default 18; the traps are iterations 3, 7, 11 and 15: four, since a
 * verbs run of 2026-12-01 under the suite's load missed the window in both of the two it had
 * then) -count=N (ints per partition, default 1024)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define P 8
#define TAG 77

static int rank, errs = 0;

#define WD_UNIT "iteration"
#include "part_watchdog.h"
#include "part_thread_check.h"
#include "../../part/part_transport.h"

static int iters = 18, count = 1024;
static int *buf;
static MPI_Request req;
static int go_k = -1;           /* the iteration the worker may ready (atomic) */
static int done_k = -1;         /* the last iteration whose MPI_Pready returned (atomic) */
static int worker_errs;         /* (atomic) */

static int val(int it, int i)
{
    return 1 + it * 100003 + i * 7;
}

static int trap(int it)
{
    return it % 4 == 3;
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    (void) arg;
    for (int k = 0; k < iters; k++) {
        while (__atomic_load_n(&go_k, __ATOMIC_ACQUIRE) < k)
            usleep(50);
        for (int j = 0; j < count; j++)
            buf[j] = val(k, j);
        int err = MPI_Pready(0, req);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "iteration %d: the worker's MPI_Pready returned %d\n", k, err);
            __atomic_add_fetch(&worker_errs, 1, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&done_k, k, __ATOMIC_RELEASE);
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

int main(int argc, char **argv)
{
    if (part_thread_init(&argc, &argv))
        return MTestReturnValue(1);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iters", 18);
    count = MTestArgListGetInt_with_default(head, "count", 1024);
    MTestArgListDestroy(head);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    buf = malloc(sizeof(int) * P * count);
    MTest_Start_thread(watchdog, NULL);

    const char *delay = getenv("MPIR_CVAR_PART_DEBUG_TIMER_READY_DELAY_US");
    int want_window = rdma_forced() && delay && atoi(delay) > 0;
    int windows = 0, traps = 0;

    if (rank == 0) {
        ok(MPI_Psend_init(buf, P, count, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
           -1, "MPI_Psend_init");
        MTest_Start_thread(worker, NULL);
        for (int k = 0; k < iters; k++) {
            for (int j = count; j < P * count; j++)
                buf[j] = val(k, j);
            wd_mark(k, "MPI_Start");
            ok(MPI_Start(&req), k, "MPI_Start");
            wd_mark(k, "waiting for the worker's last MPI_Pready");
            while (__atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < k - 1) {
                int flag;       /* progress meanwhile, as a program waiting on workers may */
                ok(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), k, "MPI_Test");
            }
            __atomic_store_n(&go_k, k, __ATOMIC_RELEASE);
            if (trap(k))
                usleep(20000);  /* the worker's call first */
            wd_mark(k, "MPI_Pready_range");
            ok(MPI_Pready_range(1, P - 1, req), k, "MPI_Pready_range");
            wd_mark(k, "MPI_Wait");
            ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
            if (trap(k)) {
                traps++;
                windows += __atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < k;
            }
        }
        while (__atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < iters - 1)
            usleep(100);
        errs += __atomic_load_n(&worker_errs, __ATOMIC_RELAXED);
        if (want_window && windows == 0) {
            fprintf(stderr, "MPI_Wait returned while the worker was inside its MPI_Pready in "
                    "none of the %d trap iterations (the window was not run)\n", traps);
            errs++;
        }
    } else {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_aggregator", "timer");
        ok(MPI_Precv_init(buf, P, count, MPI_INT, 0, TAG, MPI_COMM_WORLD, info, &req), -1,
           "MPI_Precv_init");
        MPI_Info_free(&info);
        for (int k = 0; k < iters; k++) {
            memset(buf, 0, sizeof(int) * P * count);
            if (trap(k))
                usleep(100000); /* the credit comes late */
            wd_mark(k, "MPI_Start");
            ok(MPI_Start(&req), k, "MPI_Start");
            wd_mark(k, "MPI_Wait");
            ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
            int bad = 0;
            for (int j = 0; j < P * count; j++)
                if (buf[j] != val(k, j) && bad++ < 4)
                    fprintf(stderr, "iteration %d: buf[%d] (partition %d) = %d, expected %d\n",
                            k, j, j / count, buf[j], val(k, j));
            errs += bad;
        }
    }
    wd_mark(iters, "MPI_Request_free");
    ok(MPI_Request_free(&req), iters, "MPI_Request_free");
    wd_stop();
    MTest_Join_threads();
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
