/*
 * part_race_release.c: a receive's RELEASE handled by a progress thread while the sending
 * main thread starts iterations beyond it (2 processes, MPI_THREAD_MULTIPLE; the test
 * fails if that level is not provided; engine README section 5).
 *
 * Each round makes a new pair on one tag of a duplicated communicator, with 1 to 4
 * partitions (1: one wire message, direct completion under the tag transport) and k = 0 to
 * 3 iterations (0: the receive is freed right after MPI_Precv_init, while the progress
 * thread may be matching and planning it, and the send's first iteration, begun before its
 * PLAN came, may meet a RELEASE that overtook the PLAN; or the receive was freed unmatched
 * and the send fails with MPI_ERR_REQUEST all the same):
 * - rank 1 runs k iterations (MPI_SUCCESS, every int checked), frees its receive (the
 *   RELEASE, saying k iterations) and sends rank 0 a word; in odd rounds it sends the word
 *   first and frees a random few microseconds later;
 * - rank 0 runs its k iterations, waits for the word, spins a random few microseconds
 *   (none in a third of the rounds) and starts iterations past k until one fails (at most
 *   20 s). Each must end with MPI_SUCCESS (it began before the RELEASE was read: with
 *   permanent tags its messages go to the freed receive's block) or MPI_ERR_REQUEST; once
 *   one failed, the next must fail too, at once. Over RDMA and with leases per iteration
 *   (MPIR_CVAR_PART_TAG_IDS=0) none may succeed (it would need a credit or CTS the freed
 *   receive never gave). Rank 0 frees the send and tells rank 1 how
 *   many iterations past k succeeded;
 * - on both processes a progress thread loops on MPI_Iprobe (idle communicator) for the
 *   whole run, so that the RELEASE is handled by that thread, not by the main thread.
 * A round's data is checked byte for byte, so a block of tags given out again while
 * messages of an earlier round were still on their way under it shows as wrong data. After
 * the rounds, once settled (at most 20 s): part_ops_live is back to its starting value on
 * rank 0, and on rank 1 exceeds it by exactly the rounds whose send ran past k (their
 * receives keep their blocks for good); part_tag_ids_in_use likewise.
 * A process that does not move on for 60 s is reported with its place and aborted
 * (watchdog).
 *
 * With -overtake=1 (a testlist.cvar line, with MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US=10000) the
 * rounds with k = 0 aim at the RELEASE that overtakes the PLAN: rank 0 makes its send only
 * once rank 1 says its receive is posted, so that rank 1's progress thread matches and
 * plans it, and rank 1 frees the receive after sleeping 2 ms, while that thread waits 10 ms
 * before sending the PLAN (in a 200-round run, 26 of the 50 such rounds' RELEASEs reached
 * the send before its PLAN). Rank 0 then checks that it happened at least once: pvar
 * part_release_before_plan counts such RELEASEs; the rounds go on past -secs until one did,
 * for at most four times -secs.
 *
 * Arguments: -rounds=N (default 2000) -spin=N (max microseconds of the random spins;
 *            default 20) -secs=S (stop after S seconds once 100 rounds are done; default 10)
 *            -overtake=0|1 (default 0).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define MAXP 4
#define COUNT 24        /* ints per partition */
#define TAG 9

static int rank, errs = 0, overtake = 0;
static MPI_Comm comm, pcomm, ctl;

#include "part_watchdog.h"
#include "part_probe_thread.h"
#include "../../part/part_pvar.h"
#include "../../part/part_transport.h"

static void spin_rand(int spin)
{
    double t0 = MPI_Wtime(), us = rand() % (spin + 1);
    while ((MPI_Wtime() - t0) * 1e6 < us);
}

/* in unsigned arithmetic: it * 15485863 leaves int's range from the 139th iteration on
 * (UBSan, signed overflow) */
static int pattern(int round, int it, int i)
{
    return (int) (3u + (unsigned) round * 6007u + (unsigned) it * 15485863u + (unsigned) i);
}

/* MPI_Test until the iteration ends (the progress thread does the engine's work). */
static int finish(MPI_Request * req)
{
    for (;;) {
        int flag = 0, err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag)
            return err;
    }
}

static int class_of(int err)
{
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &cls);
    return cls;
}

/* One iteration it of round r; its error (rank 1 checks every int on success). */
static int iteration(MPI_Request * req, int *buf, int parts, int r, int it)
{
    int n = parts * COUNT;
    for (int i = 0; i < n; i++)
        buf[i] = rank == 0 ? pattern(r, it, i) : -1;
    MPI_Start(req);
    if (rank == 0)
        MPI_Pready_range(0, parts - 1, *req);
    int err = finish(req);
    for (int i = 0; rank == 1 && err == MPI_SUCCESS && i < n; i++)
        if (buf[i] != pattern(r, it, i)) {
            fprintf(stderr, "rank 1: round %d iteration %d: int %d is %d, expected %d\n", r,
                    it + 1, i, buf[i], pattern(r, it, i));
            errs++;
            break;
        }
    return err;
}

/* One round; returns (rank 1) how many iterations past k the send ran with success. */
static int round_run(int r, int spin)
{
    static int buf[MAXP * COUNT];
    int parts = 1 + r % MAXP, k = (r / MAXP) % 4, word = 0, err, beyond = 0;
    MPI_Request req;

    /* -overtake, k = 0: the send is made only once the receive is posted, so that the
     * progress thread matches and plans it; the receive is freed 2 ms later (MPI_Request_free
     * makes progress itself, and would match it first), while that thread waits before
     * sending the PLAN (MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US, longer) */
    int late_send = overtake && k == 0;
    if (rank == 0 && late_send)
        MPI_Recv(&word, 1, MPI_INT, 1, 2, ctl, MPI_STATUS_IGNORE);
    if (rank == 0)
        err = MPI_Psend_init(buf, parts, COUNT, MPI_INT, 1, TAG, comm, MPI_INFO_NULL, &req);
    else
        err = MPI_Precv_init(buf, parts, COUNT, MPI_INT, 0, TAG, comm, MPI_INFO_NULL, &req);
    if (rank == 1 && late_send) {
        MPI_Send(&word, 1, MPI_INT, 0, 2, ctl);
        usleep(2000);   /* the progress thread's turn: it matches the RTS */
    }
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: round %d: init returned %d\n", rank, r, err);
        errs++;
        return 0;
    }
    for (int it = 0; it < k; it++) {
        wd_mark(r, "an iteration both run");
        err = iteration(&req, buf, parts, r, it);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: round %d iteration %d of %d: error class %d\n", rank,
                    r, it + 1, k, class_of(err));
            errs++;
        }
    }
    if (rank == 1) {
        /* in odd rounds the word goes first, and the free a random few microseconds later:
         * rank 0's next iteration may then begin before the RELEASE was even sent */
        if (r % 2)
            MPI_Send(&word, 1, MPI_INT, 0, 0, ctl);
        if (r % 2 && spin)
            spin_rand(spin);
        MPI_Request_free(&req);
        if (r % 2 == 0)
            MPI_Send(&word, 1, MPI_INT, 0, 0, ctl);
        wd_mark(r, "the sender's count");
        MPI_Recv(&beyond, 1, MPI_INT, 0, 1, ctl, MPI_STATUS_IGNORE);
        return beyond;
    }
    wd_mark(r, "the receiver's word");
    MPI_Recv(&word, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
    if (spin && r % 3)
        spin_rand(spin);
    wd_mark(r, "iterations past the receive's");
    double t0 = MPI_Wtime();
    for (err = MPI_SUCCESS; err == MPI_SUCCESS && MPI_Wtime() - t0 < 20.0;) {
        err = iteration(&req, buf, parts, r, k + beyond);
        if (err == MPI_SUCCESS)
            beyond++;
    }
    int need_start = rdma_forced() || cv_read_int("MPIR_CVAR_PART_TAG_IDS") == 0;
    if (class_of(err) != MPI_ERR_REQUEST || (need_start && beyond > 0)) {
        fprintf(stderr, "rank 0: round %d: %d iterations past the receive's %d succeeded, "
                "then error class %d (expected MPI_ERR_REQUEST%s)\n", r, beyond, k,
                class_of(err), need_start ? ", none succeeding without the receive's "
                "credit or CTS" : "");
        errs++;
    }
    if (class_of(iteration(&req, buf, parts, r, k + beyond + 1)) != MPI_ERR_REQUEST) {
        fprintf(stderr, "rank 0: round %d: the iteration after the failed one did not fail\n",
                r);
        errs++;
    }
    MPI_Request_free(&req);
    MPI_Send(&beyond, 1, MPI_INT, 1, 1, ctl);
    return 0;
}

int main(int argc, char *argv[])
{
    int provided, size, rounds, spin, secs, r, stop = 0;
    unsigned long long kept = 0;

    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 2000);
    spin = MTestArgListGetInt_with_default(head, "spin", 20);
    secs = MTestArgListGetInt_with_default(head, "secs", 10);
    overtake = MTestArgListGetInt_with_default(head, "overtake", 0);
    MTestArgListDestroy(head);
    srand(1 + rank);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned long long live0 = pv_read("part_ops_live");
    unsigned long long ids0 = pv_read("part_tag_ids_in_use");
    unsigned long long over0 = pv_read("part_release_before_plan");

    MTest_Start_thread(watchdog, NULL);
    MTest_Start_thread(probe_thread, &pcomm);
    probe_wait_running();
    double t0 = MPI_Wtime();
    for (r = 0; r < rounds && !stop; r++) {
        /* rank 0 decides when to stop and says so with the round's word */
        if (rank == 0) {
            /* -overtake: on until a RELEASE overtook a PLAN (over TCP some 1 in 12 of the
             * rounds aimed at it do, against 1 in 2 on shared memory), for at most 4 x secs */
            double el = MPI_Wtime() - t0;
            stop = r + 1 >= rounds || (r >= 100 && el > secs &&
                                       (!overtake || el > 4 * secs ||
                                        pv_read("part_release_before_plan") > over0));
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, ctl);
        kept += round_run(r, spin) > 0;
    }
    wd_mark(r, "the end");
    MPI_Barrier(ctl);
    unsigned long long live = pv_settle("part_ops_live", live0 + kept, 20.0);
    unsigned long long ids = pv_settle("part_tag_ids_in_use", ids0 + kept, 20.0);
    if (live != live0 + kept || ids != ids0 + kept) {
        fprintf(stderr, "rank %d: after %d rounds part_ops_live %llu, part_tag_ids_in_use "
                "%llu; expected %llu and %llu (%llu blocks kept)\n", rank, r, live, ids,
                live0 + kept, ids0 + kept, kept);
        errs++;
    }
    unsigned long long over = pv_read("part_release_before_plan") - over0;
    if (rank == 0 && overtake && over == 0) {
        fprintf(stderr, "rank 0: -overtake=1, %d rounds: no RELEASE reached its send before "
                "the PLAN (part_release_before_plan unchanged)\n", r);
        errs++;
    }
    if (rank == 0 && getenv("PART_RACE_RELEASE_VERBOSE"))
        printf("rank 0: %d rounds, %llu RELEASEs before their PLAN\n", r, over);
    if (rank == 1 && getenv("PART_RACE_RELEASE_VERBOSE"))
        printf("rank 1: %d rounds, %llu with iterations past the receive's\n", r, kept);
    probe_stop();
    wd_stop();
    MTest_Join_threads();
    errs += probe_errs;

    MPI_Comm_free(&ctl);
    MPI_Comm_free(&pcomm);
    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
