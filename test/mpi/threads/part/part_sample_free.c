/*
 * part_sample_free.c: a send freed while the MPI_Pready that ended its iteration is still
 * writing that iteration's sample (2 processes, MPI_THREAD_MULTIPLE; the test fails if
 * that level is not provided; engine README section 4c).
 *
 * With the default aggregator on the tag transport, a send whose receiver would merge
 * partitions observes up to three iterations ending with iteration R (R:
 * MPIR_CVAR_PART_AGGR_OBSERVE, default 2; never iteration 1) and is re-planned from them:
 * each MPI_Pready* call of those iterations that completes a wire message then writes into
 * the operation's sample when it did, and how long it spent sending. That call may end the
 * iteration (the message's send completes in it, or in another thread's progress), so the
 * program's MPI_Wait can return and its MPI_Request_free free the send before the call has
 * written the sample: the call holds a reference to the operation for it (a review of
 * 2026-12-01 found it writing into freed memory).
 *
 * Each round makes a new pair (P partitions of COUNT ints on each side) and runs R
 * iterations (at least 2; with R = 1 iteration 2 is the observed one). In the last one,
 * rank 0's worker thread readies every partition (MPI_Pready_range) while the main thread
 * calls MPI_Wait and then MPI_Request_free at once; the worker's call must return
 * MPI_SUCCESS. With the testing aid MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US (the testlist.cvar
 * lines) such a call waits after each message it completed, before writing its sample, and
 * pvar part_sample_after_free counts the calls whose request was freed in that window;
 * without the reference the call reads and writes freed memory there, which ASan and
 * ThreadSanitizer report (maint/sanitize.sh).
 *
 * What it asserts:
 * - every call returns MPI_SUCCESS; rank 1 checks every int of every iteration (its buffer
 *   cleared before each MPI_Start);
 * - on the tag transport (the shm and nolocal modes) with the testing aid set, R >= 1 and
 *   the default aggregator (no MPIR_CVAR_PART_AGGREGATOR other than ploggp, no
 *   MPIR_CVAR_PART_AGGR_SIZE: otherwise no iteration is observed): part_sample_after_free
 *   grew on rank 0 (the window was run; the rounds go on past -rounds, up to four times as
 *   many, until it did);
 * - no hang: a watchdog thread reports where the main thread stopped after 60 s and calls
 *   MPI_Abort.
 * With the RDMA transport forced the default aggregator is the timer (no observed
 * iteration): the same calls run, the data and return codes are checked, the window is not.
 * The window needs MPICH's per-VCI critical sections (the build's --enable-thread-cs=per-vci,
 * maint/build.sh): under one global lock the main thread's MPI_Wait would wait for the
 * worker's call to return.
 *
 * Arguments: -rounds=N (default 20)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define P 4
#define COUNT 256
#define TAG 31

static int rank, errs = 0;

#include "part_watchdog.h"
#include "part_thread_check.h"
#include "../../part/part_pvar.h"

static int buf[P * COUNT];
static MPI_Request wreq;        /* the worker's copy of the send's handle */
static int go_r = -1;           /* the round whose last iteration the worker readies (atomic) */
static int done_r = -1;         /* the last round whose MPI_Pready_range returned (atomic) */
static int quit;                /* (atomic) */
static int worker_errs;         /* (atomic) */

static int val(int round, int it, int i)
{
    return 1 + round * 7919 + it * 104729 + i * 3;
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    (void) arg;
    for (int r = 0;; r++) {
        while (__atomic_load_n(&go_r, __ATOMIC_ACQUIRE) < r) {
            if (__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
                return (MTEST_THREAD_RETURN_TYPE) NULL;
            usleep(20);
        }
        int err = MPI_Pready_range(0, P - 1, wreq);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "round %d: the worker's MPI_Pready_range returned %d\n", r, err);
            __atomic_add_fetch(&worker_errs, 1, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&done_r, r, __ATOMIC_RELEASE);
    }
}

int main(int argc, char **argv)
{
    if (part_thread_init(&argc, &argv))
        return MTestReturnValue(1);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    int rounds = MTestArgListGetInt_with_default(head, "rounds", 20);
    MTestArgListDestroy(head);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int tlevel;
    ok(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tlevel), -1, "MPI_T_init_thread");
    int observe = cv_read_int("MPIR_CVAR_PART_AGGR_OBSERVE");
    int iters = observe > 2 ? observe : 2;
    const char *delay = getenv("MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US");
    const char *aggregator = getenv("MPIR_CVAR_PART_AGGREGATOR");
    int want_window = !rdma_forced() && delay && atoi(delay) > 0 && observe >= 1 &&
        (aggregator == NULL || strcmp(aggregator, "ploggp") == 0) &&
        cv_read_int("MPIR_CVAR_PART_AGGR_SIZE") == 0;
    unsigned long long hits0 = pv_read("part_sample_after_free"), hits = 0;
    MTest_Start_thread(watchdog, NULL);
    if (rank == 0)
        MTest_Start_thread(worker, NULL);

    int r, more = 1;
    for (r = 0; more; r++) {
        MPI_Request req;
        wd_mark(r, "MPI_Psend_init / MPI_Precv_init");
        if (rank == 0)
            ok(MPI_Psend_init(buf, P, COUNT, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req), r, "MPI_Psend_init");
        else
            ok(MPI_Precv_init(buf, P, COUNT, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req), r, "MPI_Precv_init");
        for (int k = 0; k < iters; k++) {
            if (rank == 0) {
                for (int j = 0; j < P * COUNT; j++)
                    buf[j] = val(r, k, j);
                wd_mark(r, "MPI_Start");
                ok(MPI_Start(&req), r, "MPI_Start");
                if (k < iters - 1) {
                    wd_mark(r, "MPI_Pready_range");
                    ok(MPI_Pready_range(0, P - 1, req), r, "MPI_Pready_range");
                    wd_mark(r, "MPI_Wait");
                    ok(MPI_Wait(&req, MPI_STATUS_IGNORE), r, "MPI_Wait");
                    continue;
                }
                /* the last iteration: the worker readies, this thread waits and frees */
                wreq = req;
                __atomic_store_n(&go_r, r, __ATOMIC_RELEASE);
                wd_mark(r, "MPI_Wait (the worker readies)");
                ok(MPI_Wait(&req, MPI_STATUS_IGNORE), r, "MPI_Wait");
                ok(MPI_Request_free(&req), r, "MPI_Request_free");
                wd_mark(r, "waiting for the worker's MPI_Pready_range to return");
                while (__atomic_load_n(&done_r, __ATOMIC_ACQUIRE) < r)
                    usleep(20);
            } else {
                memset(buf, 0, sizeof(buf));
                wd_mark(r, "MPI_Start");
                ok(MPI_Start(&req), r, "MPI_Start");
                wd_mark(r, "MPI_Wait");
                ok(MPI_Wait(&req, MPI_STATUS_IGNORE), r, "MPI_Wait");
                int bad = 0;
                for (int j = 0; j < P * COUNT; j++)
                    if (buf[j] != val(r, k, j) && bad++ < 4)
                        fprintf(stderr, "round %d iteration %d: buf[%d] (partition %d) = %d, "
                                "expected %d\n", r, k, j, j / COUNT, buf[j], val(r, k, j));
                errs += bad;
            }
        }
        if (rank == 1)
            ok(MPI_Request_free(&req), r, "MPI_Request_free");
        /* rank 0 decides: more rounds while the window was not hit (testing aid only) */
        if (rank == 0)
            hits = pv_read("part_sample_after_free") - hits0;
        more = part_go_on(r, rounds, want_window && hits == 0, 0);
    }

    if (rank == 0) {
        __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
        errs += __atomic_load_n(&worker_errs, __ATOMIC_RELAXED);
        MTestPrintfMsg(1, "%d rounds, part_sample_after_free %llu\n", r, hits);
        if (want_window && hits == 0) {
            fprintf(stderr, "no MPI_Pready_range found its request freed while it wrote its "
                    "sample in %d rounds (part_sample_after_free 0: the window was not run)\n",
                    r);
            errs++;
        }
    }
    wd_stop();
    MTest_Join_threads();
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
