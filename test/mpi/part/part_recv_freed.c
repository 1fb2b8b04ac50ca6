/*
 * part_recv_freed.c: a receive freed while its send goes on (engine README section 5, the
 * RELEASE message). 2 processes; rank 0 sends, rank 1 receives; -parts partitions of
 * -count ints (default 16: eager on every transport; -count=65536, 256 KiB a partition, is
 * above every transport's eager limit, so an orphaned message waits for its receiver).
 *
 * - orphan: the pair runs 3 iterations (data checked). Rank 0 starts a 4th and readies
 *   it; rank 1, which has not started it, then frees its receive (the program's error).
 *   Under the tag transport the 4th iteration's messages are on their way with nothing to
 *   receive them: the send completes as eager sends do. Over RDMA its write waits for a
 *   credit that never comes, with leases per iteration (MPIR_CVAR_PART_TAG_IDS=0) for a
 *   CTS: it must complete (MPI_Test) with MPI_ERR_REQUEST (it waited for ever before). Once rank 1 said it freed, rank 0 starts iterations until one fails: within
 *   20 s one must, with MPI_ERR_REQUEST and a message naming the freed receive, and so
 *   must the next start. Then both free and make a new pair on the same tag and run 3
 *   iterations: rank 1 must get exactly the new data. With -count=65536 under the tag
 *   transport the 4th iteration's messages wait for a receive (rendezvous): the freed
 *   receive takes them into scratch memory (its kept block), so the send completes; it
 *   waited for ever before (the 20-s stop). Before the RELEASE fix, under the tag
 *   transport, the new receive took the freed one's block of tags and received the
 *   orphaned 4th iteration's bytes instead. At the end, once settled, rank 1 still holds
 *   that one block (part_tag_ids_in_use one above its start with permanent tags: the
 *   orphaned messages are never received, so the block is never given out again), and
 *   nothing else (part_ops_live back on rank 0).
 * - sender first (permanent tags only: elsewhere a send cannot run an iteration its receive
 *   did not start): the pair runs 3 iterations, rank 0 a 4th (eager) and frees its send;
 *   once its WITHDRAW came (pvar part_withdrawn), rank 1 frees its receive, which must keep
 *   its block for good (the 4th iteration's messages are on their way to it); a new pair
 *   on the same key must get exactly its own data (before the fix, the 4th iteration's).
 *   Not with -count=65536: there the 4th iteration waits for its receive, which rank 1
 *   frees only after the send's free (the program's own deadlock, as a plain MPI_Send
 *   without a receive).
 * - clean: a correct program that frees the receive first: the pair runs 3 iterations, rank
 *   1 frees, then rank 0 frees. Once settled, part_ops_live and part_tag_ids_in_use are
 *   back to their start on both ranks (the block the receive held until the send's
 *   WITHDRAW said it sent no more is back in the pool).
 * Each count is read again after 0.2 s more of progress: a block given back late fails too.
 * A wait longer than 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define MAXP 64
#define MAXCOUNT (1 << 20)

static int rank, parts = 1, count = 16, errs = 0;
static int *buf;

#include "part_pvar.h"
#include "part_transport.h"

/* Whether a send's iteration needs the receive's MPI_Start (a credit over RDMA, a CTS with
 * the tag transport's leases per iteration): then none runs once the receive was freed. */
static int no_orphans(void)
{
    return rdma_forced() || cv_read_int("MPIR_CVAR_PART_TAG_IDS") == 0;
}

static int pattern(int pair, int it, int i)
{
    return 7 + pair * 100003 + it * 1009 + i;
}

/* err must be of class want; with want != MPI_SUCCESS its text must contain text */
static void expect(int err, int want, const char *text, const char *what)
{
    int cls = MPI_SUCCESS, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    if (err != MPI_SUCCESS) {
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
    }
    if (cls != want || (text && !strstr(msg, text))) {
        fprintf(stderr, "rank %d: %s: class %d (%s), expected class %d%s%s\n", rank, what, cls,
                msg, want, text ? " with " : "", text ? text : "");
        errs++;
    }
}

/* MPI_Test until the iteration ends; its error. */
static int finish(MPI_Request * req, const char *what)
{
    double t0 = MPI_Wtime();
    for (;;) {
        int flag = 0, err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag)
            return err;
        if (MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: not complete after 20 s\n", rank, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void init(MPI_Comm comm, MPI_Request * req)
{
    int err = rank == 0 ?
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 5, comm, MPI_INFO_NULL, req) :
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 5, comm, MPI_INFO_NULL, req);
    expect(err, MPI_SUCCESS, NULL, "init");
}

/* Rank 0: one iteration of pair's pattern it, started and readied (not waited for). */
static void send_iter(MPI_Request * req, int pair, int it)
{
    for (int i = 0; i < parts * count; i++)
        buf[i] = pattern(pair, it, i);
    MPI_Start(req);
    MPI_Pready_range(0, parts - 1, *req);
}

/* Both: iterations [0, n) of pair, each succeeding, rank 1 checking every int. */
static void run(MPI_Request * req, int pair, int n, const char *what)
{
    for (int it = 0; it < n; it++) {
        if (rank == 0) {
            send_iter(req, pair, it);
        } else {
            for (int i = 0; i < parts * count; i++)
                buf[i] = -1;
            MPI_Start(req);
        }
        expect(finish(req, what), MPI_SUCCESS, NULL, what);
        for (int i = 0; rank == 1 && i < parts * count; i++)
            if (buf[i] != pattern(pair, it, i)) {
                fprintf(stderr, "rank 1: %s iteration %d: int %d is %d, expected %d%s\n", what,
                        it, i, buf[i], pattern(pair, it, i), buf[i] == pattern(pair - 1, 3, i) ?
                        " (the orphaned iteration's)" : "");
                errs++;
                break;
            }
    }
}

/* part_ops_live and part_tag_ids_in_use settle at their start plus held, and stay there */
static void check_settled(unsigned long long live0, unsigned long long ids0,
                          unsigned long long held, const char *what)
{
    unsigned long long ids = pv_settle("part_tag_ids_in_use", ids0 + held, 10.0);
    unsigned long long live = pv_settle("part_ops_live", live0 + held, 10.0);
    progress_for(0.2);
    if (ids != ids0 + held || live != live0 + held ||
        pv_read("part_tag_ids_in_use") != ids || pv_read("part_ops_live") != live) {
        fprintf(stderr, "rank %d: %s: part_tag_ids_in_use %llu then %llu, part_ops_live %llu "
                "then %llu; expected %llu and %llu\n", rank, what, ids,
                pv_read("part_tag_ids_in_use"), live, pv_read("part_ops_live"), ids0 + held,
                live0 + held);
        errs++;
    }
}

static void scenario_orphan(MPI_Comm comm)
{
    MPI_Request req;
    unsigned long long live0 = pv_read("part_ops_live");
    unsigned long long ids0 = pv_read("part_tag_ids_in_use");
    int note = 0;

    init(comm, &req);
    run(&req, 1, 3, "orphan: first pair");
    if (rank == 0) {
        send_iter(&req, 1, 3);  /* the 4th iteration, which no receive will take */
        MPI_Send(&note, 1, MPI_INT, 1, 0, comm);
        int err = finish(&req, "orphan: 4th iteration");
        if (no_orphans())
            expect(err, MPI_ERR_REQUEST, "freed after 3 iterations",
                   "orphan: 4th iteration (no credit or CTS)");
        else
            expect(err, MPI_SUCCESS, NULL, "orphan: 4th iteration (eager)");
        MPI_Recv(&note, 1, MPI_INT, 1, 0, comm, MPI_STATUS_IGNORE);
        /* the receive's RELEASE may still be on its way: iterations go (and vanish, as the
         * 4th) until the first that fails */
        int err5 = MPI_SUCCESS, more = 0;
        double t0 = MPI_Wtime();
        do {
            send_iter(&req, 1, 4 + more++);
            err5 = finish(&req, "orphan: later iteration");
        } while (err5 == MPI_SUCCESS && MPI_Wtime() - t0 < 20.0);
        expect(err5, MPI_ERR_REQUEST, "freed after 3 iterations",
               "orphan: iteration after the free");
        send_iter(&req, 1, 4 + more);
        expect(finish(&req, "orphan: the next"), MPI_ERR_REQUEST, "freed",
               "orphan: the iteration after that");
        MPI_Request_free(&req);
    } else {
        MPI_Recv(&note, 1, MPI_INT, 0, 0, comm, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
        MPI_Send(&note, 1, MPI_INT, 0, 0, comm);
    }
    /* a new pair on the same key: only its own data */
    init(comm, &req);
    run(&req, 2, 3, "orphan: second pair");
    MPI_Request_free(&req);
    MPI_Barrier(comm);
    check_settled(live0, ids0, rank == 1 && !no_orphans(), "orphan");
}

static void scenario_sender_first(MPI_Comm comm)
{
    MPI_Request req;
    unsigned long long live0 = pv_read("part_ops_live");
    unsigned long long ids0 = pv_read("part_tag_ids_in_use");
    unsigned long long w0 = pv_read("part_withdrawn");
    int note = 0;

    init(comm, &req);
    run(&req, 4, 3, "sender first: first pair");
    if (rank == 0) {
        send_iter(&req, 4, 3);  /* the 4th iteration, which no receive will take */
        expect(finish(&req, "sender first: 4th iteration"), MPI_SUCCESS, NULL,
               "sender first: 4th iteration (eager)");
        MPI_Request_free(&req); /* its WITHDRAW says 4 iterations */
        MPI_Send(&note, 1, MPI_INT, 1, 2, comm);
    } else {
        MPI_Recv(&note, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        while (pv_read("part_withdrawn") == w0 && MPI_Wtime() - t0 < 20.0) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
        }
        if (pv_read("part_withdrawn") == w0) {
            fprintf(stderr, "rank 1: sender first: no WITHDRAW after 20 s\n");
            errs++;
        }
        MPI_Request_free(&req); /* after 3: it keeps its block for good */
    }
    init(comm, &req);
    run(&req, 5, 3, "sender first: second pair");
    MPI_Request_free(&req);
    MPI_Barrier(comm);
    check_settled(live0, ids0, rank == 1, "sender first");
}

static void scenario_clean(MPI_Comm comm)
{
    MPI_Request req;
    unsigned long long live0 = pv_read("part_ops_live");
    unsigned long long ids0 = pv_read("part_tag_ids_in_use");
    int note = 0;

    init(comm, &req);
    run(&req, 3, 3, "clean");
    if (rank == 1) {
        MPI_Request_free(&req);
        MPI_Send(&note, 1, MPI_INT, 0, 1, comm);
    } else {
        MPI_Recv(&note, 1, MPI_INT, 1, 1, comm, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
    }
    MPI_Barrier(comm);
    check_settled(live0, ids0, 0, "clean");
}

int main(int argc, char *argv[])
{
    MTest_Init(&argc, &argv);
    MTestArgList *head = MTestArgListCreate(argc, argv);
    parts = MTestArgListGetInt_with_default(head, "parts", 1);
    count = MTestArgListGetInt_with_default(head, "count", 16);
    MTestArgListDestroy(head);
    if (parts < 1 || parts > MAXP)
        parts = 1;
    if (count < 1 || count > MAXCOUNT)
        count = 16;
    buf = malloc(sizeof(int) * parts * count);
    if (buf == NULL) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    int size, provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    scenario_clean(comm);
    scenario_orphan(comm);
    if (!no_orphans() && count <= 16)
        scenario_sender_first(comm);

    MPI_Comm_free(&comm);
    free(buf);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
