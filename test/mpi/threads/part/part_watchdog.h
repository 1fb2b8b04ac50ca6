/*
 * part_watchdog.h: a watchdog thread for this project's threaded tests. The main thread
 * marks each step with wd_mark(n, what); when it has not moved for WD_DEADLINE seconds (60)
 * the watchdog prints where it stopped ("<WD_UNIT> n, what") and calls MPI_Abort, so that a
 * hang is reported as one, with its place, before runtests' time limit kills the job.
 * Include after the test's `static int rank`; define WD_UNIT first for another word than
 * "round". Start it with MTest_Start_thread(watchdog, NULL); wd_stop() before
 * MTest_Join_threads().
 */
#ifndef PART_WATCHDOG_H_INCLUDED
#define PART_WATCHDOG_H_INCLUDED

#include <stdio.h>
#include <unistd.h>

#ifndef WD_UNIT
#define WD_UNIT "round"
#endif
#define WD_DEADLINE 60.0

static int wd_step, wd_quit, wd_n;
static const char *wd_what = "init";

static inline void wd_mark(int n, const char *what)
{
    __atomic_store_n(&wd_n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&wd_what, what, __ATOMIC_RELAXED);
    __atomic_add_fetch(&wd_step, 1, __ATOMIC_RELEASE);
}

static inline void wd_stop(void)
{
    __atomic_store_n(&wd_quit, 1, __ATOMIC_RELEASE);
}

static MTEST_THREAD_RETURN_TYPE watchdog(void *arg)
{
    int last = __atomic_load_n(&wd_step, __ATOMIC_ACQUIRE);
    double t0 = MPI_Wtime();
    while (!__atomic_load_n(&wd_quit, __ATOMIC_ACQUIRE)) {
        usleep(100000);
        int s = __atomic_load_n(&wd_step, __ATOMIC_ACQUIRE);
        if (s != last) {
            last = s;
            t0 = MPI_Wtime();
        } else if (MPI_Wtime() - t0 > WD_DEADLINE) {
            fprintf(stderr, "rank %d: no progress for %.0f s: %s %d, %s\n", rank, WD_DEADLINE,
                    WD_UNIT, __atomic_load_n(&wd_n, __ATOMIC_RELAXED),
                    __atomic_load_n(&wd_what, __ATOMIC_RELAXED));
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

#endif /* PART_WATCHDOG_H_INCLUDED */
