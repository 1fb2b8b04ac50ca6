/*
 * part_race_free_rts.c: MPI_Request_free of a partitioned receive racing the sender's
 * announcement (2 processes, MPI_THREAD_MULTIPLE; the test fails if that level is not
 * provided; review finding C4).
 *
 * C4: the old engine matched an arriving RTS to a posted receive, dropped its lock and only
 * then tested whether the request had been freed. A free in between let the match write
 * through the freed request, took a permanent tag id that was never returned (so later
 * operations drifted onto the CTS path for good) and answered the sender with an OK plan
 * for a dead operation.
 *
 * -rounds rounds, each with its own tag (so every announcement has exactly one receive to
 * meet, whatever the order). The processes meet at the start of each round; then
 * - rank 0, after a random spin of a few microseconds, calls MPI_Psend_init (never started)
 *   and frees the request a few rounds later (every fifth one at once);
 * - rank 1, after a random spin, calls MPI_Precv_init and, after another random spin
 *   (none in a third of the rounds), MPI_Request_free;
 * - on both processes a progress thread loops on MPI_Iprobe (idle communicator) for the
 *   whole run, so that the announcement (and, on rank 0, the answer) is handled by that
 *   thread before, during or after the main thread's MPI_Precv_init/MPI_Request_free.
 * Geometries vary per round (1 to 16 partitions on each side, same total size).
 * What it asserts:
 * - every call returns MPI_SUCCESS; no crash;
 * - after the loop, a barrier and a settle loop (progress until the values are reached,
 *   at most 20 s), part_ops_live and part_tag_ids_in_use are back to their values at the
 *   start on both processes (missing pvars are failures): every freed operation went away
 *   and gave its tag block back;
 * - then one normal pair on a fresh tag (8 send, 4 receive partitions) runs -iter
 *   iterations with every received int checked; on rank 1 its receive takes a permanent
 *   tag block (part_cts_path_ops does not grow) unless MPIR_CVAR_PART_TAG_IDS is 0 (read
 *   with MPI_T; then it grows by 1): with env=MPIR_CVAR_PART_TAG_IDS=1 a single leaked
 *   permanent block fails this;
 * - after freeing that pair, a barrier and a settle loop, both pvars are again back to
 *   their starting values;
 * - no hang: if a process does not move on for 60 s, a watchdog thread reports where its
 *   main thread stopped and calls MPI_Abort.
 *
 * The window (a free between the meeting and the plan's installation) is a few microseconds
 * wide, and MPI_Request_free's own progress usually meets the announcement itself first:
 * in 20000 rounds without help it was hit 0 or 1 times (pvar part_freed_while_planning,
 * 2026-12-02). So one line widens it: -hold=US makes rank 1 sleep (not spin: on 2 cores
 * the progress thread needs one) between MPI_Precv_init and MPI_Request_free in every
 * other round, so that its progress thread meets the announcement, and
 * MPIR_CVAR_PART_DEBUG_MATCH_DELAY_US holds that thread between the meeting and the plan;
 * with -freed=1 rank 1 checks that the pvar grew, i.e. that receives were freed inside the
 * window (about 700 of 1300 held rounds here; none without the delay). The other lines
 * only try it.
 *
 * Arguments: -rounds=N -iter=N (iterations of the final pair) -spin=N (max microseconds of
 *            the random spins; 0: none) -lag=N (rounds before rank 0 frees a send)
 *            -secs=S (stop the rounds after S seconds once 1000 are done; default 10)
 *            -freed=0|1 (default 0; 1: the window must have been hit at least once)
 *            -hold=US (default 0: rank 1's sleep before the free in odd rounds).
 *
 * Why -secs: the two main threads and the two progress threads never block, so on a
 * 2-core machine a round sometimes waits for the scheduler to put the partner's main
 * thread back on a core (about 3 ms per round instead of 40-75 us). 20000 rounds then took
 * 40-64 s instead of 1-2 s, half the time limit (measured 2026-11-29). A progress thread
 * that yields after its polls does not starve the main threads, but then it polled only a
 * few thousand times in the whole run (20 million without): the race this test is for
 * would hardly be tried. So the progress thread keeps spinning and rank 0 ends the rounds
 * after S seconds (it tells rank 1 in the round's synchronisation).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define MAXLAG 64
#define TOTAL 240               /* ints per freed operation: divisible by 1..6, 8, 10, 12, 15, 16 */
#define FTOTAL 960              /* ints of the final pair */
#define TAG0 1000

static int rank, errs = 0;
static MPI_Comm comm, pcomm, ctl;

/* ---- watchdog ----------------------------------------------------------------------------- */

#include "part_watchdog.h"

/* ---- progress thread ------------------------------------------------------------------------ */

#include "part_probe_thread.h"

/* ---- MPI_T (main thread only) ------------------------------------------------------------- */

#include "../../part/part_pvar.h"

static void settle_check(const char *when, unsigned long long live0, unsigned long long ids0)
{
    unsigned long long live, ids;
    MPI_Barrier(MPI_COMM_WORLD);
    live = pv_settle("part_ops_live", live0, 20.0);
    ids = pv_settle("part_tag_ids_in_use", ids0, 20.0);
    if (live != live0) {
        fprintf(stderr, "rank %d: %s: part_ops_live is %llu, %llu at the start\n", rank, when,
                live, live0);
        errs++;
    }
    if (ids != ids0) {
        fprintf(stderr, "rank %d: %s: part_tag_ids_in_use is %llu, %llu at the start\n", rank,
                when, ids, ids0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int read_int_cvar(const char *name, int *value)
{
    int idx, count, err;
    MPI_T_cvar_handle h;

    err = MPI_T_cvar_get_index(name, &idx);
    if (err != MPI_SUCCESS)
        return err;
    err = MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    if (err != MPI_SUCCESS)
        return err;
    err = MPI_T_cvar_read(h, value);
    MPI_T_cvar_handle_free(&h);
    return err;
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

static void check(int err, int round, const char *what)
{
    if (err != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d: round %d: %s returned %s\n", rank, round, what, s);
        errs++;
    }
}

/* barrier between ranks 0 and 1 only; rank 0's stop (1: no more rounds) is returned on
 * both */
static int pair_sync(int stop)
{
    int a = rank == 0 ? stop : 0, b = 0;
    MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, 999, &b, 1, MPI_INT, 1 - rank, 999, ctl,
                 MPI_STATUS_IGNORE);
    return rank == 0 ? a : b;
}

static int val(int iter, int i)
{
    return 1 + iter * 100003 + i * 7;
}

/* ---- the final pair ------------------------------------------------------------------------ */

static void final_pair(int tag, int iters)
{
    int *buf = malloc(FTOTAL * sizeof(int));
    MPI_Request req;

    if (rank == 0)
        check(MPI_Psend_init(buf, 8, FTOTAL / 8, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req),
              -1, "MPI_Psend_init(final)");
    else
        check(MPI_Precv_init(buf, 4, FTOTAL / 4, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req),
              -1, "MPI_Precv_init(final)");
    for (int it = 0; it < iters; it++) {
        MPI_Status st;
        int n = -1;
        wd_mark(it, "final pair");
        if (rank == 0) {
            for (int i = 0; i < FTOTAL; i++)
                buf[i] = val(it, i);
            check(MPI_Start(&req), it, "MPI_Start(final send)");
            check(MPI_Pready_range(0, 7, req), it, "MPI_Pready_range(final send)");
            check(MPI_Wait(&req, MPI_STATUS_IGNORE), it, "MPI_Wait(final send)");
        } else {
            for (int i = 0; i < FTOTAL; i++)
                buf[i] = -1;
            check(MPI_Start(&req), it, "MPI_Start(final receive)");
            check(MPI_Wait(&req, &st), it, "MPI_Wait(final receive)");
            MPI_Get_count(&st, MPI_INT, &n);
            if (n != FTOTAL) {
                fprintf(stderr, "final pair iteration %d: status count %d, expected %d\n", it,
                        n, FTOTAL);
                errs++;
            }
            for (int i = 0; i < FTOTAL; i++)
                if (buf[i] != val(it, i)) {
                    fprintf(stderr, "final pair iteration %d: buf[%d] = %d, expected %d\n", it,
                            i, buf[i], val(it, i));
                    errs++;
                    break;
                }
        }
    }
    check(MPI_Request_free(&req), -1, "MPI_Request_free(final)");
    free(buf);
}

int main(int argc, char *argv[])
{
    static const int parts[10] = { 1, 2, 3, 4, 5, 6, 8, 10, 12, 16 };
    int size, provided, rounds, iters, maxspin, lag, secs, expect_freed, hold, tag_ids = -1;
    unsigned long long live0, ids0, cts0, cts1, freed0;
    MPI_Request sreq[MAXLAG + 1];
    int fbuf[TOTAL];
    unsigned int seed;

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
    /* under the verbs emulator every matched pair registers two buffers, and the emulator
     * checks each registration against /proc/self/maps like pinning would (about a
     * millisecond): a twentieth of the rounds keeps the test within its time limit there */
    rounds = MTestArgListGetInt_with_default(head, "rounds", rdma_is_verbs() ? 1000 : 20000);
    iters = MTestArgListGetInt_with_default(head, "iter", 10);
    maxspin = MTestArgListGetInt_with_default(head, "spin", 20);
    lag = MTestArgListGetInt_with_default(head, "lag", 4);
    secs = MTestArgListGetInt_with_default(head, "secs", 10);
    expect_freed = MTestArgListGetInt_with_default(head, "freed", 0);
    hold = MTestArgListGetInt_with_default(head, "hold", 0);
    MTestArgListDestroy(head);
    if (lag < 0 || lag > MAXLAG || rounds < 0 || rounds > 30000 || secs < 1 || hold < 0 ||
        hold > 100000) {
        fprintf(stderr, "invalid arguments (0 <= lag <= %d, rounds <= 30000, secs >= 1, "
                "0 <= hold <= 100000)\n", MAXLAG);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    if (read_int_cvar("MPIR_CVAR_PART_TAG_IDS", &tag_ids) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot read MPIR_CVAR_PART_TAG_IDS with MPI_T\n", rank);
        errs++;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    live0 = pv_read("part_ops_live");
    ids0 = pv_read("part_tag_ids_in_use");
    freed0 = pv_read("part_freed_while_planning");
    seed = 2463534242u ^ (unsigned int) (rank * 104729 + 17);
    for (int i = 0; i < TOTAL; i++)
        fbuf[i] = i;

    MTest_Start_thread(watchdog, NULL);
    MTest_Start_thread(probe_thread, &pcomm);

    double t_start = MPI_Wtime();
    for (int r = 0; r < rounds; r++) {
        int sp = parts[r % 10], rp = parts[(r / 10 + r * 3) % 10], tag = TAG0 + r;
        wd_mark(r, "pair sync");
        if (pair_sync(r >= 1000 && MPI_Wtime() - t_start > secs)) {
            rounds = r; /* both ranks stop here: rank 0 decided */
            break;
        }
        if (rank == 0) {
            if (maxspin > 0)
                spin_us(rnd(&seed) % (unsigned int) maxspin);
            wd_mark(r, "MPI_Psend_init");
            check(MPI_Psend_init(fbuf, sp, TOTAL / sp, MPI_INT, 1, tag, comm, MPI_INFO_NULL,
                                 &sreq[r % (MAXLAG + 1)]), r, "MPI_Psend_init");
            if (r % 5 == 0) {
                wd_mark(r, "MPI_Request_free(send, at once)");
                check(MPI_Request_free(&sreq[r % (MAXLAG + 1)]), r, "MPI_Request_free(send)");
            }
            if (r >= lag && (r - lag) % 5 != 0) {
                wd_mark(r, "MPI_Request_free(send, later)");
                check(MPI_Request_free(&sreq[(r - lag) % (MAXLAG + 1)]), r - lag,
                      "MPI_Request_free(send)");
            }
        } else {
            MPI_Request req;
            int rbuf[TOTAL];
            if (maxspin > 0)
                spin_us(rnd(&seed) % (unsigned int) maxspin);
            wd_mark(r, "MPI_Precv_init");
            check(MPI_Precv_init(rbuf, rp, TOTAL / rp, MPI_INT, 0, tag, comm, MPI_INFO_NULL,
                                 &req), r, "MPI_Precv_init");
            if (hold > 0 && r % 2)
                usleep(hold);   /* a core for the progress thread: it meets the RTS first */
            else if (maxspin > 0 && r % 3 != 0)
                spin_us(rnd(&seed) % (unsigned int) maxspin);
            wd_mark(r, "MPI_Request_free(receive)");
            check(MPI_Request_free(&req), r, "MPI_Request_free(receive)");
            if (req != MPI_REQUEST_NULL) {
                fprintf(stderr, "round %d: MPI_Request_free left the handle set\n", r);
                errs++;
            }
        }
    }
    if (rank == 0)
        for (int r = rounds - lag > 0 ? rounds - lag : 0; r < rounds; r++)
            if (r % 5 != 0)
                check(MPI_Request_free(&sreq[r % (MAXLAG + 1)]), r, "MPI_Request_free(send)");

    if (rank == 1) {
        unsigned long long hits = pv_read("part_freed_while_planning") - freed0;
        if (expect_freed && hits == 0) {
            fprintf(stderr, "rank 1: -freed=1, %d rounds: no receive was freed between "
                    "meeting its announcement and its plan (part_freed_while_planning "
                    "unchanged)\n", rounds);
            errs++;
        }
        if (getenv("PART_RACE_FREE_RTS_VERBOSE"))
            printf("rank 1: %d rounds, %llu receives freed while planned\n", rounds, hits);
    }
    wd_mark(rounds, "settle after the loop");
    settle_check("after the loop", live0, ids0);

    /* a normal pair on a fresh tag; its receive must get a permanent tag block again */
    cts0 = pv_read("part_cts_path_ops");
    final_pair(TAG0 + rounds, iters);
    cts1 = pv_read("part_cts_path_ops");
    /* with the RDMA transport forced (test modes ofi-*) the final pair takes no tags */
    int want_cts = rdma_forced() ? 0 : (tag_ids == 0 ? 1 : 0);
    if (rank == 1 && tag_ids >= 0 && cts1 - cts0 != want_cts) {
        fprintf(stderr, "rank 1: part_cts_path_ops grew by %lld for the final receive, "
                "expected %d (MPIR_CVAR_PART_TAG_IDS = %d): a permanent tag block leaked?\n",
                (long long) (cts1 - cts0), want_cts, tag_ids);
        errs++;
    }

    wd_mark(rounds, "settle at the end");
    settle_check("at the end", live0, ids0);

    probe_stop();
    wd_stop();
    errs += MTest_Join_threads();
    errs += probe_errs;
    if (probe_polls == 0) {
        fprintf(stderr, "rank %d: the progress thread never polled\n", rank);
        errs++;
    }

    MPI_Comm_free(&ctl);
    MPI_Comm_free(&pcomm);
    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
