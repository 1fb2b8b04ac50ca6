/*
 * part_barrier.h: a reusable thread barrier for this project's threaded tests.
 * MPICH's test-suite MTest_thread_barrier falls back (when configure does not find
 * pthread_barrier_init) to a two-phase counter that deadlocks when a descheduled thread is
 * still leaving one barrier while the others already enter the one after next, which
 * happens with many threads on 2 cores. This one counts generations under a mutex.
 */
#ifndef PART_BARRIER_H_INCLUDED
#define PART_BARRIER_H_INCLUDED

#include <pthread.h>

static pthread_mutex_t part_barrier_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t part_barrier_cond = PTHREAD_COND_INITIALIZER;
static int part_barrier_count, part_barrier_gen;

/* Wait until nt threads (the same nt every time) have called it. */
static int part_thread_barrier(int nt)
{
    pthread_mutex_lock(&part_barrier_mutex);
    int gen = part_barrier_gen;
    if (++part_barrier_count == nt) {
        part_barrier_count = 0;
        part_barrier_gen++;
        pthread_cond_broadcast(&part_barrier_cond);
    } else {
        while (gen == part_barrier_gen)
            pthread_cond_wait(&part_barrier_cond, &part_barrier_mutex);
    }
    pthread_mutex_unlock(&part_barrier_mutex);
    return 0;
}

#endif /* PART_BARRIER_H_INCLUDED */
