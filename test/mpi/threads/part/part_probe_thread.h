/*
 * part_probe_thread.h: a progress thread for this project's threaded race tests. It loops
 * on MPI_Iprobe over an idle communicator (nobody sends on it) until probe_stop(), so that
 * the engine's progress (the handshake, completions) runs in that thread while the main
 * thread is inside its own MPI calls. A probe that fails or finds a message is an error
 * (probe_errs). Include after the test's `static int rank`; start it with
 * MTest_Start_thread(probe_thread, &idle_comm), then probe_wait_running() if the test
 * needs it polling before it goes on; probe_stop() before MTest_Join_threads().
 */
#ifndef PART_PROBE_THREAD_H_INCLUDED
#define PART_PROBE_THREAD_H_INCLUDED

#include <stdio.h>
#include <unistd.h>

static int probe_quit, probe_errs, probe_running;
static long probe_polls;        /* how many times it polled (read after the join) */

static MTEST_THREAD_RETURN_TYPE probe_thread(void *arg)
{
    MPI_Comm idle = *(MPI_Comm *) arg;
    long n = 0;
    __atomic_store_n(&probe_running, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&probe_quit, __ATOMIC_ACQUIRE)) {
        int flag = 0, err = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, idle, &flag,
                                       MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag) {
            fprintf(stderr, "rank %d: progress thread: MPI_Iprobe returned %d, flag %d\n",
                    rank, err, flag);
            probe_errs++;
            break;
        }
        n++;
    }
    probe_polls = n;
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

static inline void probe_wait_running(void)
{
    while (!__atomic_load_n(&probe_running, __ATOMIC_ACQUIRE))
        usleep(100);
}

static inline void probe_stop(void)
{
    __atomic_store_n(&probe_quit, 1, __ATOMIC_RELEASE);
}

#endif /* PART_PROBE_THREAD_H_INCLUDED */
