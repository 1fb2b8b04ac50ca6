/*
 * part_race_mismatch.c: a send larger than the receive while 4 threads ready partitions
 * and another thread waits (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level
 * is not provided; review finding C3).
 *
 * C3: the old engine read the operation's error without its lock in MPI_Pready and then
 * took the "before the plan" path; when another thread (in MPI_Wait) installed the
 * receiver's MISMATCH answer meanwhile, MPI_Pready divided by the plan's gcd of 0 (SIGFPE)
 * and used a NULL counter array, instead of the iteration failing with MPI_ERR_TRUNCATE.
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD (MPI_Pready reports there), MPI_COMM_SELF and
 * the communicators used. -rounds rounds, each with a new operation pair (own tag; the
 * receive is 1 to 16 ints smaller than the send, with 1 to 16 receive partitions, and
 * every fourth round 16 times larger sizes), each operation used for -iter iterations. The
 * processes meet before each round and the receiver waits a random few microseconds before
 * MPI_Precv_init, so that its answer reaches the sender at varying points while the
 * sender's threads ready partitions in the first iteration.
 * - Sender: threads live for the whole run. Per iteration the main thread starts the
 *   request; then, released together by a barrier, thread 0 sits in MPI_Wait while threads
 *   1..4 each ready their own 4 partitions (MPI_Pready one by one with random spins,
 *   MPI_Pready_range or MPI_Pready_list, rotating).
 *   Even rounds: thread 0 waits on the partitioned request itself. MPI_Wait must return an
 *   error of class MPI_ERR_TRUNCATE. Each MPI_Pready* must return MPI_SUCCESS, except that
 *   MPI_ERR_REQUEST is accepted once thread 0's MPI_Wait has returned: the engine completes
 *   a failed iteration at once (README, "The state machine"), MPI_Wait then inactivates
 *   the request, and MPI_Pready* on an inactive request is MPI_ERR_REQUEST (README
 *   section 7). An MPI_ERR_REQUEST while MPI_Wait has not returned (within 10 s) fails.
 *   Odd rounds: thread 0 sits in MPI_Wait on a point-to-point message the receiver sends
 *   after its own iteration failed (so that thread runs the engine's progress while the
 *   partitions are readied), and every MPI_Pready* must return MPI_SUCCESS; after the
 *   threads are done, the main thread's MPI_Wait on the partitioned request must return
 *   MPI_ERR_TRUNCATE.
 * - Receiver: every iteration MPI_Wait (or MPI_Test in a loop, alternating) returns an error
 *   of class MPI_ERR_TRUNCATE and the receive buffer is untouched (every int compared).
 * - No crash. At the end, part_ops_live is back to its value at the start on both
 *   processes (a missing pvar is a failure).
 * - No hang: if a process does not move on for 60 s, a watchdog thread reports what each
 *   thread was doing and calls MPI_Abort.
 *
 * - With -raced=1 (the line with the testing aid MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US, a
 *   busy wait between MPI_Pready*'s unlocked look at the state and its lock): the window
 *   C3 was about was hit, i.e. pvar part_pready_answer_raced grew on rank 0 (an MPI_Pready*
 *   that found the send unplanned and then, under the lock, the receiver's answer). Without
 *   the aid the window is too narrow to show: 0 hits in 2000 rounds, 3-4 with 20-100 us;
 *   with 500 us about 60 in 600 rounds on every transport (2026-12-02).
 *
 * Arguments: -rounds=N -iter=N (iterations per operation) -spin=N (max microseconds of the
 *            random spins; 0: none) -verbose=1 (counts of accepted late MPI_ERR_REQUEST)
 *            -raced=0|1 (default 0)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"
#include "part_barrier.h"

#define DEADLINE 60.0
#define NUM_READY 4
#define NUM_WORKERS (NUM_READY + 1)
#define PER_THREAD 4
#define SPART (NUM_READY * PER_THREAD)
#define MAXCOUNT (16 * 64)      /* ints per send partition at most */
#define SENTINEL 0x5a5a5a5a
#define TAG_NOTE 7

static int rank, errs = 0, maxspin;
static MPI_Comm comm, ncomm;

/* ---- watchdog ---------------------------------------------------------------------------- */

static int wd_step, wd_quit, wd_round, wd_iter;
static const char *wd_what = "init";
static const char *thread_state[NUM_WORKERS];

static void wd_mark(int round, int iter, const char *what)
{
    __atomic_store_n(&wd_round, round, __ATOMIC_RELAXED);
    __atomic_store_n(&wd_iter, iter, __ATOMIC_RELAXED);
    __atomic_store_n(&wd_what, what, __ATOMIC_RELAXED);
    __atomic_add_fetch(&wd_step, 1, __ATOMIC_RELEASE);
}

static void set_state(int tid, const char *what)
{
    __atomic_store_n(&thread_state[tid], what, __ATOMIC_RELAXED);
    __atomic_add_fetch(&wd_step, 1, __ATOMIC_RELEASE);
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
        } else if (MPI_Wtime() - t0 > DEADLINE) {
            fprintf(stderr, "rank %d: no progress for %.0f s: round %d iteration %d: main "
                    "thread: %s\n", rank, DEADLINE, __atomic_load_n(&wd_round, __ATOMIC_RELAXED),
                    __atomic_load_n(&wd_iter, __ATOMIC_RELAXED),
                    __atomic_load_n(&wd_what, __ATOMIC_RELAXED));
            if (rank == 0)
                for (int t = 0; t < NUM_WORKERS; t++)
                    fprintf(stderr, "rank 0:   thread %d: %s\n", t,
                            __atomic_load_n(&thread_state[t], __ATOMIC_RELAXED));
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static unsigned int rnd(unsigned int *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void spin_us(double us)
{
    double t0 = MPI_Wtime();
    while ((MPI_Wtime() - t0) * 1e6 < us);
}

static int err_class(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

static void err_text(int err, char *s)
{
    int len = 0;
    if (err == MPI_SUCCESS)
        strcpy(s, "MPI_SUCCESS");
    else
        MPI_Error_string(err, s, &len);
}

/* barrier between ranks 0 and 1 only */
static void pair_sync(void)
{
    int a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, ncomm,
                 MPI_STATUS_IGNORE);
}

/* ---- MPI_T -------------------------------------------------------------------------------- */

#include "../../part/part_pvar.h"

/* ---- sender side (rank 0) ----------------------------------------------------------------- */

static int *sbuf;
static MPI_Request preq, nreq;
static int nbuf[2];
static int cur_round, cur_iter, cur_mode, quit;
static int wait_returned;       /* thread 0's MPI_Wait on preq has returned (even rounds) */
static int thread_errs[NUM_WORKERS];
static long late_req_errors;    /* MPI_ERR_REQUEST accepted after MPI_Wait returned */
static int tids[NUM_WORKERS];

static int pready_result(int tid, int err, const char *what, int p)
{
    char s[MPI_MAX_ERROR_STRING];
    if (err == MPI_SUCCESS)
        return 0;
    if (cur_mode == 0 && err_class(err) == MPI_ERR_REQUEST) {
        /* valid only if the waiting thread's MPI_Wait completed the request */
        double t0 = MPI_Wtime();
        while (!__atomic_load_n(&wait_returned, __ATOMIC_ACQUIRE) && MPI_Wtime() - t0 < 10.0)
            MTest_thread_yield();
        if (__atomic_load_n(&wait_returned, __ATOMIC_ACQUIRE)) {
            __atomic_add_fetch(&late_req_errors, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    err_text(err, s);
    fprintf(stderr, "round %d iteration %d thread %d: %s(%d) returned %s%s\n", cur_round,
            cur_iter, tid, what, p, s, cur_mode == 0 && err_class(err) == MPI_ERR_REQUEST ?
            " while MPI_Wait had not returned" : "");
    thread_errs[tid]++;
    return 1;
}

static void ready_thread_work(int tid)
{
    int lo = (tid - 1) * PER_THREAD, list[PER_THREAD];
    unsigned int s = 2463534242u ^ (unsigned int) (cur_round * 7919 + cur_iter * 131 + tid);

    if (maxspin > 0)
        spin_us(rnd(&s) % (unsigned int) maxspin);
    switch ((cur_round + cur_iter + tid) % 3) {
        case 0:
            for (int q = 0; q < PER_THREAD; q++) {
                set_state(tid, "MPI_Pready");
                if (pready_result(tid, MPI_Pready(lo + q, preq), "MPI_Pready", lo + q))
                    break;
                if (maxspin > 0 && rnd(&s) % 2)
                    spin_us(rnd(&s) % (unsigned int) (maxspin / 4 + 1));
            }
            break;
        case 1:
            set_state(tid, "MPI_Pready_range");
            pready_result(tid, MPI_Pready_range(lo, lo + PER_THREAD - 1, preq),
                          "MPI_Pready_range", lo);
            break;
        default:
            for (int q = 0; q < PER_THREAD; q++)
                list[q] = lo + PER_THREAD - 1 - q;
            set_state(tid, "MPI_Pready_list");
            pready_result(tid, MPI_Pready_list(PER_THREAD, list, preq), "MPI_Pready_list", lo);
    }
}

static void wait_thread_work(void)
{
    char s[MPI_MAX_ERROR_STRING];
    MPI_Status st;
    int err;

    if (cur_mode == 0) {
        set_state(0, "MPI_Wait on the partitioned send");
        err = MPI_Wait(&preq, &st);
        __atomic_store_n(&wait_returned, 1, __ATOMIC_RELEASE);
        if (err_class(err) != MPI_ERR_TRUNCATE) {
            err_text(err, s);
            fprintf(stderr, "round %d iteration %d: MPI_Wait(send) returned %s, expected "
                    "class MPI_ERR_TRUNCATE\n", cur_round, cur_iter, s);
            thread_errs[0]++;
        }
    } else {
        set_state(0, "MPI_Wait on the receiver's notification");
        err = MPI_Wait(&nreq, &st);
        if (err != MPI_SUCCESS || nbuf[0] != cur_round || nbuf[1] != cur_iter) {
            err_text(err, s);
            fprintf(stderr, "round %d iteration %d: notification: MPI_Wait returned %s, "
                    "got {%d, %d}\n", cur_round, cur_iter, s, nbuf[0], nbuf[1]);
            thread_errs[0]++;
        }
    }
}

static MTEST_THREAD_RETURN_TYPE worker(void *arg)
{
    int tid = *(int *) arg;
    while (1) {
        set_state(tid, "at the start barrier");
        part_thread_barrier(NUM_WORKERS + 1);
        if (quit)
            break;
        if (tid == 0)
            wait_thread_work();
        else
            ready_thread_work(tid);
        set_state(tid, "at the end barrier");
        part_thread_barrier(NUM_WORKERS + 1);
    }
    set_state(tid, "exited");
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

static void sender(int rounds, int iters)
{
    char s[MPI_MAX_ERROR_STRING];

    for (int t = 0; t < NUM_WORKERS; t++) {
        tids[t] = t;
        errs += MTest_Start_thread(worker, &tids[t]);
    }
    for (int r = 0; r < rounds; r++) {
        int cs = r % 4 == 3 ? 64 : 4, err;
        wd_mark(r, -1, "pair sync before MPI_Psend_init");
        pair_sync();
        cur_round = r;
        cur_mode = r % 2;
        err = MPI_Psend_init(sbuf, SPART, cs, MPI_INT, 1, 100 + r, comm, MPI_INFO_NULL, &preq);
        if (err != MPI_SUCCESS) {
            err_text(err, s);
            fprintf(stderr, "round %d: MPI_Psend_init returned %s\n", r, s);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int k = 0; k < iters; k++) {
            cur_iter = k;
            for (int i = 0; i < SPART * cs; i++)
                sbuf[i] = r * 1000 + k * 100000 + i;
            __atomic_store_n(&wait_returned, 0, __ATOMIC_RELAXED);
            if (cur_mode == 1)
                MPI_Irecv(nbuf, 2, MPI_INT, 1, TAG_NOTE, ncomm, &nreq);
            wd_mark(r, k, "MPI_Start");
            err = MPI_Start(&preq);
            if (err != MPI_SUCCESS) {
                err_text(err, s);
                fprintf(stderr, "round %d iteration %d: MPI_Start returned %s\n", r, k, s);
                errs++;
            }
            wd_mark(r, k, "waiting for the threads");
            part_thread_barrier(NUM_WORKERS + 1);      /* go */
            part_thread_barrier(NUM_WORKERS + 1);      /* done */
            if (cur_mode == 1) {
                wd_mark(r, k, "MPI_Wait on the partitioned send");
                err = MPI_Wait(&preq, MPI_STATUS_IGNORE);
                if (err_class(err) != MPI_ERR_TRUNCATE) {
                    err_text(err, s);
                    fprintf(stderr, "round %d iteration %d: MPI_Wait(send) returned %s, "
                            "expected class MPI_ERR_TRUNCATE\n", r, k, s);
                    errs++;
                }
            }
        }
        err = MPI_Request_free(&preq);
        if (err != MPI_SUCCESS) {
            err_text(err, s);
            fprintf(stderr, "round %d: MPI_Request_free returned %s\n", r, s);
            errs++;
        }
    }
    quit = 1;
    part_thread_barrier(NUM_WORKERS + 1);
    for (int t = 0; t < NUM_WORKERS; t++)
        errs += thread_errs[t];
}

/* ---- receiver side (rank 1) --------------------------------------------------------------- */

static void receiver(int rounds, int iters)
{
    static const int rparts[8] = { 1, 2, 4, 8, 16, 3, 5, 7 };
    char s[MPI_MAX_ERROR_STRING];
    unsigned int seed = 88172645u;
    int *rbuf = malloc(SPART * MAXCOUNT * sizeof(int));
    MPI_Request rreq;

    for (int r = 0; r < rounds; r++) {
        int cs = r % 4 == 3 ? 64 : 4, stotal = SPART * cs, rp = rparts[r % 8];
        int rc = (stotal - 1 - (int) (rnd(&seed) % 16)) / rp, err;   /* rp * rc < stotal */
        wd_mark(r, -1, "pair sync before MPI_Precv_init");
        pair_sync();
        if (maxspin > 0)
            spin_us(rnd(&seed) % (unsigned int) (4 * maxspin));
        err = MPI_Precv_init(rbuf, rp, rc, MPI_INT, 0, 100 + r, comm, MPI_INFO_NULL, &rreq);
        if (err != MPI_SUCCESS) {
            err_text(err, s);
            fprintf(stderr, "round %d: MPI_Precv_init returned %s\n", r, s);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int k = 0; k < iters; k++) {
            int flag = 0;
            for (int i = 0; i < rp * rc; i++)
                rbuf[i] = SENTINEL;
            wd_mark(r, k, "MPI_Start(receive)");
            err = MPI_Start(&rreq);
            if (err != MPI_SUCCESS) {
                err_text(err, s);
                fprintf(stderr, "round %d iteration %d: MPI_Start(receive) returned %s\n", r,
                        k, s);
                errs++;
            }
            wd_mark(r, k, "completing the receive");
            if ((r + k) % 2 == 0) {
                err = MPI_Wait(&rreq, MPI_STATUS_IGNORE);
            } else {
                do {
                    err = MPI_Test(&rreq, &flag, MPI_STATUS_IGNORE);
                } while (err == MPI_SUCCESS && !flag);
            }
            if (err_class(err) != MPI_ERR_TRUNCATE) {
                err_text(err, s);
                fprintf(stderr, "round %d iteration %d: %s(receive) returned %s, expected "
                        "class MPI_ERR_TRUNCATE\n", r, k, (r + k) % 2 ? "MPI_Test" : "MPI_Wait",
                        s);
                errs++;
            }
            for (int i = 0; i < rp * rc; i++)
                if (rbuf[i] != SENTINEL) {
                    fprintf(stderr, "round %d iteration %d: receive buffer written: [%d] = %d\n",
                            r, k, i, rbuf[i]);
                    errs++;
                    break;
                }
            if (r % 2 == 1) {
                int note[2] = { r, k };
                wd_mark(r, k, "sending the notification");
                MPI_Send(note, 2, MPI_INT, 0, TAG_NOTE, ncomm);
            }
        }
        err = MPI_Request_free(&rreq);
        if (err != MPI_SUCCESS) {
            err_text(err, s);
            fprintf(stderr, "round %d: MPI_Request_free(receive) returned %s\n", r, s);
            errs++;
        }
    }
    free(rbuf);
}

int main(int argc, char *argv[])
{
    int size, provided, rounds, iters, verbose, raced;
    unsigned long long live0, live1, raced0;

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
    rounds = MTestArgListGetInt_with_default(head, "rounds", 2000);
    iters = MTestArgListGetInt_with_default(head, "iter", 4);
    maxspin = MTestArgListGetInt_with_default(head, "spin", 40);
    verbose = MTestArgListGetInt_with_default(head, "verbose", 0);
    raced = MTestArgListGetInt_with_default(head, "raced", 0);
    MTestArgListDestroy(head);
    if (rounds > 30000) {
        fprintf(stderr, "at most 30000 rounds (one tag each)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ncomm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ncomm, MPI_ERRORS_RETURN);
    live0 = pv_read("part_ops_live");
    raced0 = pv_read("part_pready_answer_raced");

    MTest_Start_thread(watchdog, NULL);
    if (rank == 0) {
        sbuf = malloc(SPART * MAXCOUNT * sizeof(int));
        sender(rounds, iters);
    } else {
        receiver(rounds, iters);
    }
    wd_mark(rounds, 0, "final barrier and settle");

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 10.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu at the end, %llu at the start\n", rank,
                live1, live0);
        errs++;
    }
    unsigned long long nraced = pv_read("part_pready_answer_raced") - raced0;
    if (raced && rank == 0 && nraced == 0) {
        fprintf(stderr, "rank 0: -raced=1, %d rounds: no MPI_Pready* found the receiver's "
                "answer installed while it waited for the lock (part_pready_answer_raced "
                "unchanged)\n", rounds);
        errs++;
    }
    if (verbose && rank == 0)
        printf("accepted late MPI_ERR_REQUEST from MPI_Pready*: %ld; MPI_Pready* that met "
               "the answer on the way: %llu\n", late_req_errors, nraced);
    MPI_Barrier(MPI_COMM_WORLD);
    __atomic_store_n(&wd_quit, 1, __ATOMIC_RELEASE);
    errs += MTest_Join_threads();
    if (rank == 0) {
        free(sbuf);
    }

    MPI_Comm_free(&ncomm);
    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
