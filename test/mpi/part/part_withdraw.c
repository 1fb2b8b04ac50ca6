/*
 * part_withdraw.c: a send that will send nothing tells its receiver (engine README, section
 * 5: the WITHDRAW message). 2 processes; rank 0 sends, rank 1 receives. Before, each of
 * these receives waited for ever.
 *
 * - retry: rank 1's MPI_Precv_init fails (a bad info value), rank 0 frees its unstarted send
 *   and both retry on the same tag. Once the withdrawal has reached rank 1 (pvar
 *   part_withdrawn), rank 1's next receive, in MPI order the freed send's, fails at its
 *   MPI_Start with MPI_ERR_REQUEST (it waited for ever before); the one after meets rank
 *   0's new send: -iters iterations, data checked.
 * - ahead: rank 0 runs -iters iterations and frees its send; rank 1 runs its -iters
 *   iterations only after the withdrawal came (tag transport with permanent tags, where
 *   the sender need not wait for the receiver; interleaved otherwise): all must succeed
 *   with their data, and only the one after fails.
 * - freed: rank 1's receive has matched rank 0's send, which rank 0 frees after 0 or
 *   -iters iterations (those carry their data). Rank 1's next MPI_Start, after the
 *   withdrawal came, completes at once with MPI_ERR_REQUEST; so does the one after.
 *   "armed": rank 1 started that iteration before the send was freed (under the tag
 *   transport its receives are posted: part_wire_msgs_recvd moved; over RDMA its credit
 *   went): MPI_Parrived returns MPI_ERR_REQUEST once the withdrawal came (the receives are
 *   cancelled), and the completion MPI_ERR_REQUEST. "before the plan": rank 0 frees the send
 *   right after MPI_Psend_init (its receiver's PLAN cannot have come), rank 1 had started.
 * - refused (-refuse, with MPIR_CVAR_PART_TAG_MAX_REQUESTS=1 on the tag transport, or the
 *   testing aid MPIR_CVAR_PART_DEBUG_REFUSE_PLAN=4 on any): rank 0 has 4 sends of one
 *   wire message each; the plan of the 4th to be planned would take it above 3 requests
 *   (or the aid refuses it after the transport set it up: over RDMA the backend then
 *   frees its half-made state), so that send fails with MPI_ERR_OTHER (**parttagreqs,
 *   **partdebugrefuse). Both start all 4 before waiting for any (over RDMA a send needs its receive's
 *   credit); rank 0 then names the failed one to rank 1, whose matching receive must have
 *   failed with MPI_ERR_OTHER; the other three carry their data, and the RDMA backends' registered
 *   regions (part_ofi_mrs_in_use, part_verbs_mrs_in_use) are back to their start once
 *   every request is freed.
 * In every scenario the receive buffer of a failed receive must hold its sentinel bytes
 * (nothing landed), and at the end part_ops_live is back to its value at the start on both
 * processes (a withdrawn send is released once answered). A wait longer than 20 s is
 * reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

#define MAXP 64
#define COUNT 16    /* ints per partition */
#define SENTINEL 0x5a5a5a5a

static int parts = 1;

static int val(int sc, int it, int i)
{
    return 1 + sc * 1000003 + it * 7919 + i;
}

static void check_class(int err, int want, const char *what)
{
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &cls);
    if (cls != want) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (err != MPI_SUCCESS)
            MPI_Error_string(err, msg, &len);
        fprintf(stderr, "rank %d: %s: error class %d, expected %d (%s)\n", rank, what, cls,
                want, msg);
        errs++;
    }
}

/* err's message names how many iterations the freed send ran: "freed after N iterations",
 * or "freed without starting an iteration" for none (a WITHDRAW carries the count) */
static void check_count(int err, int after, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "", want[64];
    int len = 0;
    if (err != MPI_SUCCESS)
        MPI_Error_string(err, msg, &len);
    if (after > 0)
        snprintf(want, sizeof(want), "freed after %d iterations", after);
    else
        snprintf(want, sizeof(want), "freed without starting an iteration");
    if (!strstr(msg, want)) {
        fprintf(stderr, "rank %d: %s: message \"%s\" lacks \"%s\"\n", rank, what, msg, want);
        errs++;
    }
}

/* MPI_Test until complete; returns the error of MPI_Test (the iteration's). */
static int complete(MPI_Request * req, const char *what)
{
    int flag = 0, err = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    while (!flag) {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS)
            return err;
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: not complete after 20 s\n", rank, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return err;
}

/* Progress until pvar name exceeds base. */
static void wait_pvar(const char *name, unsigned long long base, const char *what)
{
    double t0 = MPI_Wtime();
    int flag;
    while (pv_read(name) <= base) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: pvar %s still %llu after 20 s\n", rank, what, name,
                    base);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void check_sentinel(const int *buf, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != SENTINEL) {
            fprintf(stderr, "rank %d: %s: buf[%d] = %d, the receive got data\n", rank, what, i,
                    buf[i]);
            errs++;
            return;
        }
}

static void check_data(const int *buf, int n, int sc, int it, const char *what)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != val(sc, it, i)) {
            fprintf(stderr, "rank %d: %s iter %d: buf[%d] = %d, expected %d\n", rank, what, it,
                    i, buf[i], val(sc, it, i));
            errs++;
            return;
        }
}

/* Both sides: the pair's init on tag (MPI_SUCCESS). */
static void pair_init(MPI_Comm comm, int tag, int *buf, MPI_Request * req, const char *what)
{
    int err;
    if (rank == 0)
        err = MPI_Psend_init(buf, parts, COUNT, MPI_INT, 1, tag, comm, MPI_INFO_NULL, req);
    else
        err = MPI_Precv_init(buf, parts, COUNT, MPI_INT, 0, tag, comm, MPI_INFO_NULL, req);
    check_class(err, MPI_SUCCESS, what);
}

/* Both sides: iters iterations the sender runs, each MPI_SUCCESS, the data checked. */
static void run_iters(MPI_Request * req, int *buf, int sc, int iters, const char *what)
{
    int n = parts * COUNT;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < n; i++)
            buf[i] = rank == 0 ? val(sc, it, i) : SENTINEL;
        MPI_Start(req);
        if (rank == 0)
            MPI_Pready_range(0, parts - 1, *req);
        check_class(complete(req, what), MPI_SUCCESS, what);
        if (rank == 1)
            check_data(buf, n, sc, it, what);
    }
}

/* Both sides: iters iterations of a pair on tag, data checked. */
static void run_pair(MPI_Comm comm, int tag, int sc, int iters, const char *what)
{
    static int buf[MAXP * COUNT];
    MPI_Request req;

    pair_init(comm, tag, buf, &req, what);
    run_iters(&req, buf, sc, iters, what);
    MPI_Request_free(&req);
}

static void scenario_retry(MPI_Comm comm, int iters)
{
    static int sbuf[MAXP * COUNT];
    const int tag = 11;
    MPI_Request req = MPI_REQUEST_NULL;
    unsigned long long w0 = pv_read("part_withdrawn");

    if (rank == 0) {
        check_class(MPI_Psend_init(sbuf, parts, COUNT, MPI_INT, 1, tag, comm, MPI_INFO_NULL,
                                   &req), MPI_SUCCESS, "retry: first send");
    } else {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_thread_partitions", "not-a-number");
        int err = MPI_Precv_init(sbuf, parts, COUNT, MPI_INT, 0, tag, comm, info, &req);
        check_class(err, MPI_ERR_INFO_VALUE, "retry: first receive (bad info)");
        MPI_Info_free(&info);
    }
    MPI_Barrier(comm);
    if (rank == 0) {
        MPI_Request_free(&req);
    } else {
        /* the withdrawal marks the unmatched announcement; the next receive with its key
         * is, in MPI order, the freed send's: it fails at its first MPI_Start */
        wait_pvar("part_withdrawn", w0, "retry: the withdrawal");
        for (int i = 0; i < parts * COUNT; i++)
            sbuf[i] = SENTINEL;
        check_class(MPI_Precv_init(sbuf, parts, COUNT, MPI_INT, 0, tag, comm, MPI_INFO_NULL,
                                   &req), MPI_SUCCESS, "retry: second receive");
        MPI_Start(&req);
        check_class(complete(&req, "retry: second receive"), MPI_ERR_REQUEST,
                    "retry: second receive (the freed send's)");
        check_sentinel(sbuf, parts * COUNT, "retry: second receive");
        MPI_Request_free(&req);
    }
    /* the third receive meets the second send */
    run_pair(comm, tag, 1, iters, "retry: second send, third receive");
}

/* Rank 1 until its receives of the running iteration are posted (tag transport: the pvar
 * moved) or, over RDMA, 50 ms of MPI_Parrived calls (the plan made, the credit given). */
static void until_armed(MPI_Request req, unsigned long long r0, const char *what)
{
    int flag;
    if (!rdma_forced()) {
        wait_pvar("part_wire_msgs_recvd", r0, what);
    } else {
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.05)
            MPI_Parrived(req, 0, &flag);
    }
}

/* Rank 1, its iteration under way when the withdrawal came: MPI_Parrived reports the error
 * once the iteration has ended, and so does the completion. */
static void expect_ended(MPI_Request * req, int want, const char *what)
{
    int err, flag;
    double t0 = MPI_Wtime();
    do {
        flag = 0;
        err = MPI_Parrived(*req, 0, &flag);
        if (MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank 1: %s: MPI_Parrived still false after 20 s\n", what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } while (err == MPI_SUCCESS && !flag);
    check_class(err, want, what);
    check_class(complete(req, what), want, what);
}

/* after iterations of a pair, the send is freed; the receive's next iteration must fail.
 * armed: rank 1 starts that iteration before rank 0 frees the send (its receives are
 * posted, or its credit given). early (after 0 only): rank 0 frees the send right after
 * MPI_Psend_init, with no progress call between, so the receiver's PLAN has not come. */
static void scenario_freed(MPI_Comm comm, int sc, int after, int armed, int early,
                           const char *what)
{
    static int buf[MAXP * COUNT];
    const int tag = 40 + sc;
    MPI_Request req;
    int n = parts * COUNT;
    unsigned long long w0 = pv_read("part_withdrawn");

    if (rank == 1 || !early)
        pair_init(comm, tag, buf, &req, what);
    run_iters(&req, buf, sc, after, what);
    for (int i = 0; i < n; i++)
        buf[i] = SENTINEL;
    if (rank == 1 && armed) {
        unsigned long long r0 = pv_read("part_wire_msgs_recvd");
        MPI_Start(&req);
        if (!early)     /* early: no plan can come before the barrier */
            until_armed(req, r0, what);
    }
    MPI_Barrier(comm);
    if (rank == 0) {
        if (early)
            check_class(MPI_Psend_init(buf, parts, COUNT, MPI_INT, 1, tag, comm,
                                       MPI_INFO_NULL, &req), MPI_SUCCESS, what);
        MPI_Request_free(&req);
        return;
    }
    wait_pvar("part_withdrawn", w0, what);
    if (armed) {
        expect_ended(&req, MPI_ERR_REQUEST, what);
    } else {
        MPI_Start(&req);
        int err = complete(&req, what);
        check_class(err, MPI_ERR_REQUEST, what);
        check_count(err, after, what);
    }
    check_sentinel(buf, n, what);
    /* every later iteration fails too, at once */
    MPI_Start(&req);
    int err_next = complete(&req, what);
    check_class(err_next, MPI_ERR_REQUEST, "the iteration after");
    check_count(err_next, after, "the iteration after");
    check_sentinel(buf, n, what);
    MPI_Request_free(&req);
}

/* The sender ahead: see the header. */
static void scenario_ahead(MPI_Comm comm, int sc, int iters)
{
    static int buf[MAXP * COUNT];
    const int tag = 40 + sc;
    const char *what = "ahead";
    MPI_Request req;
    int n = parts * COUNT;
    unsigned long long w0 = pv_read("part_withdrawn");
    /* without a credit per iteration the sender can finish before the receiver starts */
    int free_run = !rdma_forced() && cv_read_int("MPIR_CVAR_PART_TAG_IDS") > 0;

    pair_init(comm, tag, buf, &req, what);
    if (rank == 1 && free_run) {
        MPI_Barrier(comm);
        wait_pvar("part_withdrawn", w0, what);
    }
    run_iters(&req, buf, sc, iters, "ahead: an iteration the sender ran");
    if (rank == 0) {
        MPI_Request_free(&req);
        MPI_Barrier(comm);
        return;
    }
    if (!free_run) {
        MPI_Barrier(comm);
        wait_pvar("part_withdrawn", w0, what);
    }
    for (int i = 0; i < n; i++)
        buf[i] = SENTINEL;
    MPI_Start(&req);
    check_class(complete(&req, what), MPI_ERR_REQUEST, "ahead: the iteration after");
    check_sentinel(buf, n, what);
    MPI_Request_free(&req);
}

/* Needs MPIR_CVAR_PART_TAG_MAX_REQUESTS=1 and the tag transport: the 4th send planned is
 * refused. */
static void scenario_refused(MPI_Comm comm)
{
    static int buf[4][COUNT];
    MPI_Request req[4];
    int refused = -1, err;

    for (int k = 0; k < 4; k++) {
        if (rank == 0)
            err = MPI_Psend_init(buf[k], 1, COUNT, MPI_INT, 1, 30 + k, comm, MPI_INFO_NULL,
                                 &req[k]);
        else
            err = MPI_Precv_init(buf[k], 1, COUNT, MPI_INT, 0, 30 + k, comm, MPI_INFO_NULL,
                                 &req[k]);
        check_class(err, MPI_SUCCESS, "refused: init");
    }
    /* every request is started before any is waited for: over RDMA a send completes only
     * once its receive's MPI_Start gave the credit */
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < COUNT; i++)
            buf[k][i] = rank == 0 ? val(3, k, i) : SENTINEL;
        MPI_Start(&req[k]);
        if (rank == 0)
            MPI_Pready(0, req[k]);
    }
    if (rank == 0) {
        for (int k = 0; k < 4; k++) {
            char what[64];
            snprintf(what, sizeof(what), "refused: send %d", k);
            err = complete(&req[k], what);
            if (err != MPI_SUCCESS) {
                check_class(err, MPI_ERR_OTHER, "refused: the refused send");
                if (refused >= 0) {
                    fprintf(stderr, "rank 0: refused: sends %d and %d both failed\n", refused,
                            k);
                    errs++;
                }
                refused = k;
            }
        }
        if (refused < 0) {
            fprintf(stderr, "rank 0: refused: no send failed (MPIR_CVAR_PART_TAG_MAX_REQUESTS "
                    "not 1, or MPIR_CVAR_PART_DEBUG_REFUSE_PLAN not 1..4?)\n");
            errs++;
        }
        MPI_Send(&refused, 1, MPI_INT, 1, 99, comm);
    } else {
        int rerr[4];
        for (int k = 0; k < 4; k++) {
            char what[64];
            snprintf(what, sizeof(what), "refused: receive %d", k);
            rerr[k] = complete(&req[k], what);
        }
        MPI_Recv(&refused, 1, MPI_INT, 0, 99, comm, MPI_STATUS_IGNORE);
        for (int k = 0; k < 4; k++) {
            if (k == refused) {
                check_class(rerr[k], MPI_ERR_OTHER, "refused: the refused send's receive");
                check_sentinel(buf[k], COUNT, "refused: the refused send's receive");
            } else {
                check_class(rerr[k], MPI_SUCCESS, "refused: receive");
                check_data(buf[k], COUNT, 3, k, "refused: receive");
            }
        }
    }
    for (int k = 0; k < 4; k++)
        MPI_Request_free(&req[k]);
}

int main(int argc, char *argv[])
{
    int size, provided, iters, refuse;
    unsigned long long live0, live1;
    MPI_Comm comm;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iters", 3);
    parts = MTestArgListGetInt_with_default(head, "parts", 1);
    refuse = MTestArgListGetInt_with_default(head, "refuse", 0);
    MTestArgListDestroy(head);
    if (parts < 1 || parts > MAXP) {
        fprintf(stderr, "-parts must be in 1..%d\n", MAXP);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* MPI_Parrived reports through MPI_COMM_WORLD's handler in MPICH */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    live0 = pv_read("part_ops_live");

    unsigned long long ofi0 = pv_read("part_ofi_mrs_in_use");
    unsigned long long vrb0 = pv_read("part_verbs_mrs_in_use");
    if (refuse) {
        /* the request budget is the tag transport's; the testing aid refuses on any */
        if (!rdma_forced() || cv_read_int("MPIR_CVAR_PART_DEBUG_REFUSE_PLAN") > 0)
            scenario_refused(comm);
    } else {
        scenario_retry(comm, iters);
        scenario_freed(comm, 2, 0, 0, 0, "freed, idle");
        scenario_freed(comm, 3, 0, 1, 0, "freed, armed");
        scenario_freed(comm, 4, 0, 1, 1, "freed before the plan, armed");
        scenario_freed(comm, 5, iters, 0, 0, "freed after iterations, idle");
        scenario_freed(comm, 6, iters, 1, 0, "freed after iterations, armed");
        scenario_ahead(comm, 7, iters);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu at the end, %llu at the start\n", rank,
                live1, live0);
        errs++;
    }
    unsigned long long ofi1 = pv_settle("part_ofi_mrs_in_use", ofi0, 5.0);
    unsigned long long vrb1 = pv_settle("part_verbs_mrs_in_use", vrb0, 5.0);
    if (ofi1 != ofi0 || vrb1 != vrb0) {
        fprintf(stderr, "rank %d: registered regions at the end: libfabric %llu, verbs %llu; "
                "at the start %llu, %llu\n", rank, ofi1, vrb1, ofi0, vrb0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm_free(&comm);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
