/*
 * part_thread_stress.c: many threads readying and polling partitions (2 processes,
 * MPI_THREAD_MULTIPLE; the test fails if that level is not provided).
 *
 * What it asserts:
 * - 8 threads per process. Each sender thread owns spart/8 consecutive send partitions; in
 *   every iteration it fills and readies them in random order with a random mix of
 *   MPI_Pready, MPI_Pready_range and MPI_Pready_list, concurrently with the other threads.
 * - Each receiver thread owns rpart/8 consecutive receive partitions, polls MPI_Parrived on
 *   them concurrently with the other threads and compares the bytes of each partition as
 *   soon as it is reported arrived (fails if not all arrived within 20 s).
 * - The main thread then completes the request with MPI_Wait, and on the receiver every
 *   byte of the buffer is compared again.
 * - Results must not depend on MPIR_CVAR_PART_AGGR_SIZE (set by env in the test list, or
 *   with -aggr=N through MPI_T) nor on the "mpich_part_thread_partitions" info hint
 *   (-hint=1 passes the number of partitions each thread readies / polls).
 *
 * - With -noise=N the main threads exchange N point-to-point messages on another
 *   communicator while the threads work (checked too).
 *
 * - With -split=1 (lines with MPIR_CVAR_PART_TAG_SPLIT_SIZE) the sender checks that wire
 *   messages went split into eager pieces (pvar part_tag_split_msgs) where the engine splits:
 *   the tag transport, both processes on one node, MPIR_CVAR_NOLOCAL off.
 *
 * Arguments: -spart=N -rpart=N (multiples of 8) -count=N (ints in the buffer) -iter=N
 *            -hint=0|1 -aggr=N (-1: leave the CVAR alone) -noise=N -split=0|1
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define NUM_THREADS 8

static int rank, errs, spart, rpart, count, iters, split;
#include "../../part/part_pvar.h"
static int *buf;
static MPI_Request req;
static int cur_iter;
static int thread_errs[NUM_THREADS];

typedef struct {
    int tid;
} targ_t;
static targ_t targs[NUM_THREADS];

static int value(int iter, int i)
{
    return 1 + iter * 1000003 + i * 5;
}

static unsigned int rnd(unsigned int *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void shuffle(unsigned int *s, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int) (rnd(s) % (unsigned int) (i + 1)), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void fill_part(int p, int iter)
{
    int c = count / spart;
    for (int i = p * c; i < (p + 1) * c; i++)
        buf[i] = value(iter, i);
}

static MTEST_THREAD_RETURN_TYPE sender_thread(void *arg)
{
    int tid = ((targ_t *) arg)->tid, iter = cur_iter;
    int per = spart / NUM_THREADS, lo = tid * per;
    int run_lo[64], run_n[64], order[64], list[64], nruns = 0;
    unsigned int s = 2463534242u ^ (unsigned int) (iter * 7919 + tid * 104729 + 1);

    for (int p = lo; p < lo + per;) {
        int left = lo + per - p;
        int n = 1 + (int) (rnd(&s) % (unsigned int) (left < 4 ? left : 4));
        run_lo[nruns] = p;
        run_n[nruns++] = n;
        p += n;
    }
    for (int i = 0; i < nruns; i++)
        order[i] = i;
    shuffle(&s, order, nruns);
    for (int i = 0; i < nruns; i++) {
        int a = run_lo[order[i]], n = run_n[order[i]], mode = (int) (rnd(&s) % 3), err;
        for (int p = a; p < a + n; p++)
            fill_part(p, iter);
        if (mode == 0) {
            for (int q = 0; q < n; q++)
                list[q] = a + q;
            shuffle(&s, list, n);
            for (int q = 0; q < n; q++) {
                err = MPI_Pready(list[q], req);
                if (err != MPI_SUCCESS)
                    thread_errs[tid]++;
            }
        } else if (mode == 1) {
            err = MPI_Pready_range(a, a + n - 1, req);
            if (err != MPI_SUCCESS)
                thread_errs[tid]++;
        } else {
            for (int q = 0; q < n; q++)
                list[q] = a + q;
            shuffle(&s, list, n);
            err = MPI_Pready_list(n, list, req);
            if (err != MPI_SUCCESS)
                thread_errs[tid]++;
        }
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

static MTEST_THREAD_RETURN_TYPE receiver_thread(void *arg)
{
    int tid = ((targ_t *) arg)->tid, iter = cur_iter;
    int per = rpart / NUM_THREADS, lo = tid * per, c = count / rpart, left = per;
    char seen[64];
    double t0 = MPI_Wtime();

    memset(seen, 0, sizeof(seen));
    while (left > 0) {
        for (int q = 0; q < per; q++) {
            int p = lo + q, flag = 0;
            if (seen[q])
                continue;
            MPI_Parrived(req, p, &flag);
            if (!flag)
                continue;
            seen[q] = 1;
            left--;
            for (int i = p * c; i < (p + 1) * c; i++)
                if (buf[i] != value(iter, i)) {
                    if (thread_errs[tid] < 5)
                        fprintf(stderr, "iter %d thread %d: arrived partition %d: buf[%d] = %d, "
                                "expected %d\n", iter, tid, p, i, buf[i], value(iter, i));
                    thread_errs[tid]++;
                }
        }
        if (left > 0) {
            if (MPI_Wtime() - t0 > 20.0) {
                fprintf(stderr, "iter %d thread %d: %d partitions not arrived after 20 s\n",
                        iter, tid, left);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MTest_thread_yield();
        }
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

/* main-thread point-to-point traffic on another communicator while the threads work */
static int noise(MPI_Comm c, int n, int iter)
{
    int bad = 0, out[16], in[16];
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < 16; i++)
            out[i] = rank * 100000 + iter * 100 + k + i;
        MPI_Sendrecv(out, 16, MPI_INT, 1 - rank, k, in, 16, MPI_INT, 1 - rank, k, c,
                     MPI_STATUS_IGNORE);
        for (int i = 0; i < 16; i++)
            if (in[i] != (1 - rank) * 100000 + iter * 100 + k + i)
                bad++;
    }
    if (bad)
        fprintf(stderr, "rank %d iter %d: %d wrong words in point-to-point traffic\n", rank,
                iter, bad);
    return bad;
}

static int set_aggr(int value)
{
    int idx, cnt, err, provided;
    MPI_T_cvar_handle h;

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    err = MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &idx);
    if (err == MPI_SUCCESS) {
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
        err = MPI_T_cvar_write(h, &value);
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot set MPIR_CVAR_PART_AGGR_SIZE (err %d)\n", rank, err);
        return 1;
    }
    return 0;
}

int main(int argc, char *argv[])
{
    int size, provided, hint, aggr, nnoise;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm pcomm;

    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided (got %d)\n", provided);
        MTest_Finalize(1);
        return MTestReturnValue(1);
    }
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MTestArgList *head = MTestArgListCreate(argc, argv);
    spart = MTestArgListGetInt_with_default(head, "spart", 64);
    rpart = MTestArgListGetInt_with_default(head, "rpart", 32);
    count = MTestArgListGetInt_with_default(head, "count", 8192);
    iters = MTestArgListGetInt_with_default(head, "iter", 500);
    hint = MTestArgListGetInt_with_default(head, "hint", 0);
    aggr = MTestArgListGetInt_with_default(head, "aggr", -1);
    nnoise = MTestArgListGetInt_with_default(head, "noise", 0);
    split = MTestArgListGetInt_with_default(head, "split", 0);
    MTestArgListDestroy(head);
    if (spart % NUM_THREADS || rpart % NUM_THREADS || spart / NUM_THREADS > 64 ||
        rpart / NUM_THREADS > 64 || count % spart || count % rpart) {
        fprintf(stderr, "invalid arguments: spart %d rpart %d count %d\n", spart, rpart, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (aggr >= 0)
        errs += set_aggr(aggr);

    buf = malloc(count * sizeof(int));
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    if (hint) {
        char v[32];
        snprintf(v, sizeof(v), "%d", (rank == 0 ? spart : rpart) / NUM_THREADS);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_thread_partitions", v);
    }

    /* where the engine splits: the tag transport, the peer on this node, no MPIR_CVAR_NOLOCAL */
    int check_split = part_all_local() && split && rank == 0 && !rdma_forced();
    unsigned long long split0 = 0;
    if (check_split) {
        MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
        split0 = pv_read("part_tag_split_msgs");
    }

    if (rank == 0) {
        MPI_Psend_init(buf, spart, count / spart, MPI_INT, 1, 0, MPI_COMM_WORLD, info, &req);
        for (int it = 0; it < iters; it++) {
            memset(buf, 0, count * sizeof(int));
            MPI_Start(&req);
            cur_iter = it;
            for (int t = 0; t < NUM_THREADS; t++) {
                targs[t].tid = t;
                errs += MTest_Start_thread(sender_thread, &targs[t]);
            }
            if (nnoise)
                errs += noise(pcomm, nnoise, it);
            errs += MTest_Join_threads();
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        MPI_Precv_init(buf, rpart, count / rpart, MPI_INT, 0, 0, MPI_COMM_WORLD, info, &req);
        for (int it = 0; it < iters; it++) {
            memset(buf, 0, count * sizeof(int));
            MPI_Start(&req);
            cur_iter = it;
            for (int t = 0; t < NUM_THREADS; t++) {
                targs[t].tid = t;
                errs += MTest_Start_thread(receiver_thread, &targs[t]);
            }
            if (nnoise)
                errs += noise(pcomm, nnoise, it);
            errs += MTest_Join_threads();
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++)
                if (buf[i] != value(it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                                value(it, i));
                    errs++;
                }
        }
        MPI_Request_free(&req);
    }

    if (check_split) {
        unsigned long long n = pv_read("part_tag_split_msgs") - split0;
        if (n == 0) {
            fprintf(stderr, "rank 0: no wire message was split (part_tag_split_msgs) in %d "
                    "iterations\n", iters);
            errs++;
        }
        pv_finalize();
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Comm_free(&pcomm);
    for (int t = 0; t < NUM_THREADS; t++)
        errs += thread_errs[t];
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
