/*
 * part_wait_parrived.c: MPI_Wait in one thread while other threads poll MPI_Parrived on the
 * same partitioned request (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level
 * is not provided; review section 3, "MPI_Wait in one thread while other threads poll
 * Parrived on the same request").
 *
 * Threads live for the whole run and meet the main thread at a barrier twice per
 * iteration, so the threads of one iteration really overlap.
 * - Sender: the main thread starts the request; 4 threads each fill and ready their own
 *   spart/4 consecutive partitions (alternating MPI_Pready, MPI_Pready_range and
 *   MPI_Pready_list by iteration); after the second barrier the main thread waits.
 * - Receiver: the main thread starts the request; thread 0 calls MPI_Wait on it and then
 *   checks every byte; threads 1..3 each poll MPI_Parrived on their own rpart/3 partitions
 *   until all have arrived. Every MPI_Parrived return code must be MPI_SUCCESS, and once a
 *   partition is reported arrived its bytes must already be right (checked at once). After
 *   the second barrier the main thread checks every byte once more.
 * A partition not arrived within 20 s is reported and aborts the job.
 *
 * With -direct=1 (a testlist line of one wire message per iteration) the receiver checks on
 * the tag transport that iterations were completed directly (pvar part_direct_iters: the
 * netmod completing the request while threads poll MPI_Parrived): at least one. Only a
 * message not yet arrived when its receive is posted is armed so; here every one of 96 KiB
 * over UCX, 36-40 of 400 of 6 KiB (eager: most had arrived). A message split into eager
 * pieces (96 KiB within a node, MPIR_CVAR_PART_TAG_SPLIT_SIZE) is never direct.
 *
 * Arguments: -spart=N (multiple of 4) -rpart=N (multiple of 3) -count=N (ints in the
 *            buffer, a multiple of both) -iter=N -direct=0|1 (default 0: not checked)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "mpithreadtest.h"
#include "part_barrier.h"

#define NUM_THREADS 4

static int rank, errs = 0, spart, rpart, count, iters, direct;
#include "../../part/part_pvar.h"
static int *buf;
static MPI_Request req;
static volatile int cur_iter, quit;
static int thread_errs[NUM_THREADS];
static int tids[NUM_THREADS];

static int value(int iter, int i)
{
    return 1 + iter * 1000003 + i * 7;
}

static int check_range(int tid, int lo, int hi, const char *what)
{
    int bad = 0;
    for (int i = lo; i < hi; i++)
        if (buf[i] != value(cur_iter, i)) {
            if (bad < 3)
                fprintf(stderr, "iter %d thread %d: %s: buf[%d] = %d, expected %d\n", cur_iter,
                        tid, what, i, buf[i], value(cur_iter, i));
            bad++;
        }
    thread_errs[tid] += bad;
    return bad;
}

static void sender_work(int tid)
{
    int per = spart / NUM_THREADS, lo = tid * per, c = count / spart, err = MPI_SUCCESS;
    int list[256];
    for (int i = lo * c; i < (lo + per) * c; i++)
        buf[i] = value(cur_iter, i);
    switch ((cur_iter + tid) % 3) {
        case 0:
            for (int p = lo + per - 1; p >= lo && err == MPI_SUCCESS; p--)
                err = MPI_Pready(p, req);
            break;
        case 1:
            err = MPI_Pready_range(lo, lo + per - 1, req);
            break;
        default:
            for (int q = 0; q < per; q++)
                list[q] = lo + (q * 5 + cur_iter) % per;
            if (per % 5 == 0)
                for (int q = 0; q < per; q++)
                    list[q] = lo + q;
            err = MPI_Pready_list(per, list, req);
    }
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "iter %d thread %d: MPI_Pready* returned %d\n", cur_iter, tid, err);
        thread_errs[tid]++;
    }
}

static void receiver_poll(int tid)
{
    int per = rpart / (NUM_THREADS - 1), lo = (tid - 1) * per, c = count / rpart, left = per;
    char seen[256];
    double t0 = MPI_Wtime();

    memset(seen, 0, sizeof(seen));
    while (left > 0) {
        for (int q = 0; q < per; q++) {
            int p = lo + q, flag = 0, err;
            if (seen[q])
                continue;
            err = MPI_Parrived(req, p, &flag);
            if (err != MPI_SUCCESS) {
                fprintf(stderr, "iter %d thread %d: MPI_Parrived(%d) returned %d\n", cur_iter,
                        tid, p, err);
                thread_errs[tid]++;
                flag = 1;
            }
            if (!flag)
                continue;
            seen[q] = 1;
            left--;
            check_range(tid, p * c, (p + 1) * c, "partition reported arrived");
        }
        if (left > 0 && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "iter %d thread %d: %d partitions not arrived after 20 s\n",
                    cur_iter, tid, left);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    int tid = *(int *) arg;
    while (1) {
        part_thread_barrier(NUM_THREADS + 1);  /* the request is started */
        if (quit)
            break;
        if (rank == 0) {
            sender_work(tid);
        } else if (tid == 0) {
            MPI_Status st;
            int err = MPI_Wait(&req, &st), n = -1;
            if (err != MPI_SUCCESS) {
                fprintf(stderr, "iter %d: MPI_Wait returned %d\n", cur_iter, err);
                thread_errs[0]++;
            }
            MPI_Get_count(&st, MPI_INT, &n);
            if (n != count) {
                fprintf(stderr, "iter %d: status count %d, expected %d\n", cur_iter, n, count);
                thread_errs[0]++;
            }
            check_range(0, 0, count, "after MPI_Wait (waiting thread)");
        } else {
            receiver_poll(tid);
        }
        part_thread_barrier(NUM_THREADS + 1);  /* this iteration's work is done */
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

int main(int argc, char *argv[])
{
    int size, provided;

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
    spart = MTestArgListGetInt_with_default(head, "spart", 16);
    rpart = MTestArgListGetInt_with_default(head, "rpart", 24);
    count = MTestArgListGetInt_with_default(head, "count", 24576);
    iters = MTestArgListGetInt_with_default(head, "iter", 2000);
    direct = MTestArgListGetInt_with_default(head, "direct", 0);
    MTestArgListDestroy(head);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    unsigned long long direct0 = pv_read("part_direct_iters");
    if (spart % NUM_THREADS || rpart % (NUM_THREADS - 1) || count % spart || count % rpart ||
        spart / NUM_THREADS > 256 || rpart / (NUM_THREADS - 1) > 256) {
        fprintf(stderr, "invalid arguments: spart %d rpart %d count %d\n", spart, rpart, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    buf = malloc(count * sizeof(int));
    if (rank == 0)
        MPI_Psend_init(buf, spart, count / spart, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &req);
    else
        MPI_Precv_init(buf, rpart, count / rpart, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &req);

    for (int t = 0; t < NUM_THREADS; t++) {
        tids[t] = t;
        errs += MTest_Start_thread(worker, &tids[t]);
    }
    for (int it = 0; it < iters; it++) {
        memset(buf, 0, count * sizeof(int));
        cur_iter = it;
        MPI_Start(&req);
        part_thread_barrier(NUM_THREADS + 1);  /* go */
        part_thread_barrier(NUM_THREADS + 1);  /* done */
        if (rank == 0) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < count; i++)
                if (buf[i] != value(it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                                value(it, i));
                    errs++;
                }
        }
    }
    quit = 1;
    part_thread_barrier(NUM_THREADS + 1);
    errs += MTest_Join_threads();
    if (rank == 1 && direct && !rdma_forced()) {
        unsigned long long d = pv_read("part_direct_iters") - direct0;
        if (d == 0) {
            fprintf(stderr, "rank 1: none of %d iterations completed directly\n", iters);
            errs++;
        }
    }
    pv_finalize();
    MPI_Request_free(&req);

    for (int t = 0; t < NUM_THREADS; t++)
        errs += thread_errs[t];
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
