/*
 * part_race_tag_count.c: an MPI_Parrived of one iteration held up, on the tag transport,
 * between seeing a wire message's request complete and counting the message, until the
 * next iteration has begun (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level
 * is not provided).
 *
 * The tag transport counts a message done when some thread sees its request complete
 * (MPI_Parrived, a progress pass, the MPI_Pready or MPI_Start that posted it). The old
 * engine's done flags had no iteration: a thread that saw the request complete and was
 * preempted before it counted, while another thread counted the message, the iteration
 * completed and the program started the next (the lock-free steady start frees the
 * request and clears the flags), counted the message in the new iteration. That iteration
 * then completed one message early: the receiver's MPI_Wait returned before the partition
 * arrived (found by a review of 2026-12-01).
 *
 * The pattern, rank 1 (receiver, 2 partitions in 2 wire messages: aggregator "none"): in
 * a trap iteration the main thread starts the receive and lets the worker poll
 * MPI_Parrived on partition 0; the worker alone makes progress for 100 ms and sees the
 * message's request complete, where the testing aid MPIR_CVAR_PART_DEBUG_TAG_COUNT_DELAY_US
 * (run with it, e.g. 300000) holds it. The main thread's MPI_Wait counts both messages in
 * its progress pass, checks the data and starts the next iteration while the worker is
 * still held. Rank 0 (sender, one thread) readies partition 1 of the iteration after a trap
 * at once and partition 0 only after twice the hold: the receiver's MPI_Wait must not
 * return before partition 0 came.
 *
 * What it asserts:
 * - every call returns MPI_SUCCESS and every iteration every int of the receive buffer is
 *   that iteration's value (the buffer is cleared before each MPI_Start);
 * - on the tag transport with the testing aid set, in at least one trap iteration the
 *   receiver started the next iteration while the worker was still inside its
 *   MPI_Parrived: the window above was really run (in the RDMA modes the testing aid does
 *   nothing and only the data are checked; under ThreadSanitizer, whose instrumented
 *   progress often lets the main thread's MPI_Wait see the arrival first, the window is
 *   not required: there the run is for the race reports);
 * - no hang: a watchdog thread reports where the main thread stopped after 60 s and calls
 *   MPI_Abort.
 *
 * Arguments: -iters=N (default 14; the traps are iterations 2, 5, 8 and 11: four traps
 * give a missed arrival more chances) -count=N (ints per partition, default 256)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define P 2
#define TAG 78

#if defined(__SANITIZE_THREAD__)
#define WINDOW_REQUIRED 0       /* see above */
#else
#define WINDOW_REQUIRED 1
#endif

static int rank, errs = 0;

#define WD_UNIT "iteration"
#include "part_watchdog.h"
#include "part_thread_check.h"
#include "../../part/part_transport.h"

static int iters = 14, count = 256;
static int *buf;
static MPI_Request req;
static int go_k = -1;           /* the trap iteration the worker may poll (atomic) */
static int done_k = -1;         /* the last trap iteration whose MPI_Parrived returned (atomic) */
static int worker_errs;         /* (atomic) */

static int val(int it, int i)
{
    return 1 + it * 100003 + i * 7;
}

static int trap(int it)
{
    return it % 3 == 2 && it < 12;
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    (void) arg;
    for (int k = 0; k < iters; k++) {
        if (!trap(k))
            continue;
        while (__atomic_load_n(&go_k, __ATOMIC_ACQUIRE) < k)
            usleep(50);
        int flag = 0;
        while (!flag) {
            int err = MPI_Parrived(req, 0, &flag);
            if (err != MPI_SUCCESS) {
                fprintf(stderr, "iteration %d: the worker's MPI_Parrived returned %d\n", k, err);
                __atomic_add_fetch(&worker_errs, 1, __ATOMIC_RELAXED);
                break;
            }
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
    iters = MTestArgListGetInt_with_default(head, "iters", 14);
    count = MTestArgListGetInt_with_default(head, "count", 256);
    MTestArgListDestroy(head);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    buf = malloc(sizeof(int) * P * count);
    MTest_Start_thread(watchdog, NULL);

    const char *delay = getenv("MPIR_CVAR_PART_DEBUG_TAG_COUNT_DELAY_US");
    int hold_us = delay ? atoi(delay) : 0;
    int want_window = WINDOW_REQUIRED && !rdma_forced() && hold_us > 0;
    int windows = 0, traps = 0;

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpich_part_aggregator", "none");        /* a wire message each */
    if (rank == 0) {
        ok(MPI_Psend_init(buf, P, count, MPI_INT, 1, TAG, MPI_COMM_WORLD, info, &req), -1,
           "MPI_Psend_init");
        for (int k = 0; k < iters; k++) {
            for (int j = 0; j < P * count; j++)
                buf[j] = val(k, j);
            wd_mark(k, "MPI_Start");
            ok(MPI_Start(&req), k, "MPI_Start");
            if (k > 0 && trap(k - 1)) {
                /* partition 1 at once, partition 0 after the receiver's worker counted */
                ok(MPI_Pready(1, req), k, "MPI_Pready");
                wd_mark(k, "sleeping before partition 0");
                usleep(2 * hold_us + 100000);
                ok(MPI_Pready(0, req), k, "MPI_Pready");
            } else {
                ok(MPI_Pready_range(0, P - 1, req), k, "MPI_Pready_range");
            }
            wd_mark(k, "MPI_Wait");
            ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
        }
    } else {
        ok(MPI_Precv_init(buf, P, count, MPI_INT, 0, TAG, MPI_COMM_WORLD, info, &req), -1,
           "MPI_Precv_init");
        MTest_Start_thread(worker, NULL);
        for (int k = 0; k < iters; k++) {
            memset(buf, 0, sizeof(int) * P * count);
            wd_mark(k, "MPI_Start");
            ok(MPI_Start(&req), k, "MPI_Start");
            if (k > 0 && trap(k - 1)) {
                traps++;
                windows += __atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < k - 1;
            }
            if (trap(k)) {
                __atomic_store_n(&go_k, k, __ATOMIC_RELEASE);
                usleep(100000); /* the worker's MPI_Parrived sees the arrival first */
            }
            wd_mark(k, "MPI_Wait");
            ok(MPI_Wait(&req, MPI_STATUS_IGNORE), k, "MPI_Wait");
            int bad = 0;
            for (int j = 0; j < P * count; j++)
                if (buf[j] != val(k, j) && bad++ < 4)
                    fprintf(stderr, "iteration %d: buf[%d] (partition %d) = %d, expected %d\n",
                            k, j, j / count, buf[j], val(k, j));
            errs += bad;
        }
        wd_mark(iters, "waiting for the worker");
        int last = -1;
        for (int k = 0; k < iters; k++)
            if (trap(k))
                last = k;
        while (__atomic_load_n(&done_k, __ATOMIC_ACQUIRE) < last)
            usleep(100);
        errs += __atomic_load_n(&worker_errs, __ATOMIC_RELAXED);
        if (want_window && windows == 0) {
            fprintf(stderr, "the next iteration began while the worker was inside its "
                    "MPI_Parrived in none of the %d trap iterations (the window was not run)\n",
                    traps);
            errs++;
        }
    }
    MPI_Info_free(&info);
    wd_mark(iters, "MPI_Request_free");
    ok(MPI_Request_free(&req), iters, "MPI_Request_free");
    wd_stop();
    MTest_Join_threads();
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
