/*
 * part_race_direct_flag.c: MPI_Parrived in one thread tests the one wire message of a
 * receive while another thread's progress posts that message's receive and arms direct
 * completion for it (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level is not
 * provided; engine README section 3, "Direct completion").
 *
 * A receive whose iteration is one wire message on the tag transport, with one VCI, points
 * that message's request at the partitioned request's counter (part_tag.c, direct_arm):
 * the netmod's completion then completes the partitioned request itself. direct_arm stores
 * the flag op->direct first and then publishes the request in the message's slot (its first
 * piece's slot when the operation's messages may be split, as in the shm mode, where the
 * tag transport has a split map and a 1 KiB message is one piece), so the transport's test
 * (test_msg) reads the slot first and the flag second. Read the other way round, a test
 * could find the flag not yet set, then the armed request complete (its counter is the
 * user request's), and count the message: the iteration completed a second time (MPICH's
 * assertion ctr_ >= 1 in a build with error checking, else a request freed twice or a
 * hang). The engine read it that way until a review of 2026-12-01, and with a split map
 * until this test found it (2026-12-07, bench/results/2026-12-07-direct-flag: the shm line
 * fails there in its first round; the NOLOCAL line, without a split map, covers the case
 * the review fixed).
 *
 * In the first iteration the receives are posted by whichever thread's progress installs
 * the plan. Each round (-rounds, 1 partition of -count ints, its own tag): rank 1 calls
 * MPI_Precv_init and MPI_Start, hands the request to its poller thread (MPI_Parrived on
 * partition 0, 200 us apart, until it answers true), tells rank 0 to go and calls MPI_Wait,
 * whose progress installs the plan in most rounds. Rank 0 then calls MPI_Psend_init and
 * MPI_Start, sleeps past the receiver's plan delay, fills its buffer and readies the
 * partition. Two testing aids widen the window (testlist.cvar sets both):
 * MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US holds the installing thread between the plan (visible
 * to MPI_Parrived) and posting the receive, and MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US
 * holds MPI_Parrived's test between its two reads, long enough for the receive to be
 * posted, armed and completed meanwhile; pvar part_direct_armed_in_test counts the tests
 * that found no request first and the flag set after.
 *
 * What it asserts:
 * - every call returns MPI_SUCCESS, every MPI_Parrived answer ends true;
 * - every round the receive buffer holds exactly that round's ints (each compared; filled
 *   with a sentinel before MPI_Start) and the status counts the whole message, with the
 *   right source and tag;
 * - on the tag transport with both aids set and one VCI: part_direct_armed_in_test grew on
 *   rank 1 (the window was run; the rounds go on past -rounds, up to four times as many,
 *   until it did), and part_direct_iters grew (direct completion was armed);
 * - no hang: a watchdog thread reports where the main thread stopped after 60 s and calls
 *   MPI_Abort.
 * With several VCIs or the RDMA transport forced there is no direct completion: the same
 * calls run, the data, answers and return codes are checked, the window is not.
 *
 * Arguments: -rounds=N (default 16) -count=N (ints, default 256)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define SENTINEL (-7)
#define TAG0 700
#define POLL_GAP_US 200

static int rank, errs = 0;

#include "part_watchdog.h"
#include "part_thread_check.h"
#include "../../part/part_pvar.h"

static MPI_Request preq;        /* the poller's copy of the receive's handle */
static int poll_r = -1;         /* the round the poller polls (atomic) */
static int done_r = -1;         /* the last round whose MPI_Parrived answered true (atomic) */
static int quit;                /* (atomic) */
static int poller_errs;         /* (atomic) */

static int val(int round, int i)
{
    return 1 + round * 100003 + i * 3;
}

static MTEST_THREAD_RETURN_TYPE poller(void *arg)
{
    (void) arg;
    for (int r = 0;; r++) {
        while (__atomic_load_n(&poll_r, __ATOMIC_ACQUIRE) < r) {
            if (__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
                return (MTEST_THREAD_RETURN_TYPE) NULL;
            usleep(20);
        }
        int flag = 0;
        while (!flag) {
            int err = MPI_Parrived(preq, 0, &flag);
            if (err != MPI_SUCCESS) {
                fprintf(stderr, "round %d: the poller's MPI_Parrived returned %d\n", r, err);
                __atomic_add_fetch(&poller_errs, 1, __ATOMIC_RELAXED);
                break;
            }
            if (!flag)
                usleep(POLL_GAP_US);
        }
        __atomic_store_n(&done_r, r, __ATOMIC_RELEASE);
    }
}

/* rank 1: one round */
static void recv_round(int r, int *buf, int count, MPI_Comm comm, MPI_Comm ctl)
{
    MPI_Request req;
    MPI_Status st;
    int n = -1, tag = TAG0 + r;

    for (int i = 0; i < count; i++)
        buf[i] = SENTINEL;
    wd_mark(r, "MPI_Precv_init / MPI_Start");
    ok(MPI_Precv_init(buf, 1, count, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req), r,
       "MPI_Precv_init");
    ok(MPI_Start(&req), r, "MPI_Start");
    preq = req;
    __atomic_store_n(&poll_r, r, __ATOMIC_RELEASE);
    ok(MPI_Send(&r, 1, MPI_INT, 0, tag, ctl), r, "MPI_Send(go)");
    wd_mark(r, "MPI_Wait (the poller polls)");
    ok(MPI_Wait(&req, &st), r, "MPI_Wait");
    wd_mark(r, "waiting for the poller's MPI_Parrived to answer true");
    while (__atomic_load_n(&done_r, __ATOMIC_ACQUIRE) < r)
        usleep(20);
    MPI_Get_count(&st, MPI_INT, &n);
    if (n != count || st.MPI_SOURCE != 0 || st.MPI_TAG != tag) {
        fprintf(stderr, "rank 1: round %d: status count %d source %d tag %d, expected %d 0 %d\n",
                r, n, st.MPI_SOURCE, st.MPI_TAG, count, tag);
        errs++;
    }
    for (int i = 0, bad = 0; i < count; i++)
        if (buf[i] != val(r, i)) {
            if (bad++ < 3)
                fprintf(stderr, "rank 1: round %d: received[%d] = %d, expected %d\n", r, i,
                        buf[i], val(r, i));
            errs++;
        }
    ok(MPI_Request_free(&req), r, "MPI_Request_free");
}

/* rank 0: one round; the announcement leaves once rank 1 has started, the data after the
 * receiver's plan delay */
static void send_round(int r, int *buf, int count, MPI_Comm comm, MPI_Comm ctl, int hold_us)
{
    MPI_Request req;
    int got = -1, tag = TAG0 + r;

    wd_mark(r, "MPI_Recv(go)");
    ok(MPI_Recv(&got, 1, MPI_INT, 1, tag, ctl, MPI_STATUS_IGNORE), r, "MPI_Recv(go)");
    if (got != r) {
        fprintf(stderr, "rank 0: round %d: go for round %d\n", r, got);
        errs++;
    }
    ok(MPI_Psend_init(buf, 1, count, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req), r,
       "MPI_Psend_init");
    ok(MPI_Start(&req), r, "MPI_Start");
    usleep(hold_us);
    for (int i = 0; i < count; i++)
        buf[i] = val(r, i);
    ok(MPI_Pready(0, req), r, "MPI_Pready");
    wd_mark(r, "MPI_Wait (send)");
    ok(MPI_Wait(&req, MPI_STATUS_IGNORE), r, "MPI_Wait");
    ok(MPI_Request_free(&req), r, "MPI_Request_free");
}

int main(int argc, char **argv)
{
    if (part_thread_init(&argc, &argv))
        return MTestReturnValue(1);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    int rounds = MTestArgListGetInt_with_default(head, "rounds", 16);
    int count = MTestArgListGetInt_with_default(head, "count", 256);
    MTestArgListDestroy(head);
    if (rounds < 1 || count < 1) {
        fprintf(stderr, "invalid arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm comm, ctl;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm), -1, "MPI_Comm_dup");
    ok(MPI_Comm_dup(MPI_COMM_WORLD, &ctl), -1, "MPI_Comm_dup");
    int tlevel;
    ok(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tlevel), -1, "MPI_T_init_thread");
    int plan_delay = cv_read_int("MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US");
    int test_delay = cv_read_int("MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US");
    int want_window = !rdma_forced() && plan_delay > 0 && test_delay > 0 &&
        cv_read_int("MPIR_CVAR_CH4_NUM_VCIS") == 1;
    unsigned long long hits0 = pv_read("part_direct_armed_in_test"), hits = 0;
    unsigned long long direct0 = pv_read("part_direct_iters"), direct = 0;
    int *buf = malloc(count * sizeof(int));
    MTest_Start_thread(watchdog, NULL);
    if (rank == 1)
        MTest_Start_thread(poller, NULL);

    int r, more = 1;
    for (r = 0; more; r++) {
        if (rank == 1)
            recv_round(r, buf, count, comm, ctl);
        else
            send_round(r, buf, count, comm, ctl, (plan_delay > 0 ? plan_delay : 0) + 20000);
        /* rank 1 decides: more rounds while the window was not hit (testing aids only) */
        if (rank == 1)
            hits = pv_read("part_direct_armed_in_test") - hits0;
        more = part_go_on(r, rounds, want_window && hits == 0, 1);
    }

    if (rank == 1) {
        __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
        errs += __atomic_load_n(&poller_errs, __ATOMIC_RELAXED);
        direct = pv_read("part_direct_iters") - direct0;
        MTestPrintfMsg(1, "%d rounds, part_direct_armed_in_test %llu, part_direct_iters %llu\n",
                       r, hits, direct);
        if (want_window && direct == 0) {
            fprintf(stderr, "part_direct_iters did not grow in %d rounds: no receive was "
                    "armed for direct completion\n", r);
            errs++;
        }
        if (want_window && hits == 0) {
            fprintf(stderr, "no MPI_Parrived test found the receive armed between its two "
                    "reads in %d rounds (part_direct_armed_in_test 0: the window was not "
                    "run)\n", r);
            errs++;
        }
    }
    wd_stop();
    MTest_Join_threads();
    free(buf);
    MPI_Comm_free(&ctl);
    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
