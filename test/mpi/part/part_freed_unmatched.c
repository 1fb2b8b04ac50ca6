/*
 * part_freed_unmatched.c: a receive freed before its sender announced itself consumes that
 * announcement, in order (2 processes; review section 3: part_errors' init+free was timing
 * dependent, so the freed-before-match branch might never run; C4, C12).
 *
 * Deterministic: rank 1 calls MPI_Precv_init and MPI_Request_free, then both processes pass
 * a barrier, and only then rank 0 calls MPI_Psend_init with the same tag (so its
 * announcement can only meet the freed receive). What it asserts:
 * - Scenario 1: one freed receive (4 x 64 ints), one unstarted send freed later (after
 *   the second pair ran); a second pair on the same tag (2 x 100 ints send, 5 x 40
 *   receive) matches each other and carries correct data for -iter iterations.
 * - Scenario 2: three freed receives, then three sends (never started; freed before the
 *   second pair starts), then a second pair on the same tag: the second send must reach the
 *   second receive (a mismatch would pair it with a never-started send and hang, or
 *   truncate).
 * - At the end, after a barrier and some progress, part_ops_live and part_tag_ids_in_use
 *   are back to their values at the start, on both processes (the freed operations go
 *   away when the peer's message arrives). Missing pvars are failures.
 * A transfer that does not complete within 20 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

/* ---- MPI_T: engine performance variables by name (any class) ---------------------------- */

static MPI_T_pvar_session pv_session = MPI_T_PVAR_SESSION_NULL;

/* The value of the pvar `name` (MPI_UNSIGNED_LONG_LONG, no object binding). A missing pvar,
 * or one of another type, is a test failure (counted in errs), reported once. */
static unsigned long long pv_read(const char *name)
{
    static struct {
        const char *name;
        int idx, cont;
    } cache[16];
    static int ncache = 0;
    int idx = -2, cont = 1, cnt, err;
    unsigned long long v = 0;
    MPI_T_pvar_handle h;

    for (int c = 0; c < ncache; c++)
        if (strcmp(cache[c].name, name) == 0) {
            idx = cache[c].idx;
            cont = cache[c].cont;
        }
    if (idx == -2) {
        int n = 0;
        idx = -1;
        MPI_T_pvar_get_num(&n);
        for (int i = 0; i < n && idx < 0; i++) {
            char nm[256], desc[2048];
            int nl = sizeof(nm), dl = sizeof(desc), verb, cls, bind, ro, at;
            MPI_Datatype dt;
            MPI_T_enum et;
            if (MPI_T_pvar_get_info(i, nm, &nl, &verb, &cls, &dt, &et, desc, &dl, &bind, &ro,
                                    &cont, &at) != MPI_SUCCESS || strcmp(nm, name) != 0)
                continue;
            idx = i;
            if (dt != MPI_UNSIGNED_LONG_LONG || bind != MPI_T_BIND_NO_OBJECT) {
                fprintf(stderr, "rank %d: pvar %s: not MPI_UNSIGNED_LONG_LONG without binding\n",
                        rank, name);
                errs++;
                idx = -1;
            }
        }
        if (idx < 0) {
            fprintf(stderr, "rank %d: pvar %s missing\n", rank, name);
            errs++;
        }
        if (ncache < 16) {
            cache[ncache].name = name;
            cache[ncache].cont = cont;
            cache[ncache++].idx = idx;
        }
    }
    if (idx < 0)
        return 0;
    if (pv_session == MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_create(&pv_session);
    err = MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &h, &cnt);
    if (err == MPI_SUCCESS) {
        if (!cont)
            MPI_T_pvar_start(pv_session, h);
        err = MPI_T_pvar_read(pv_session, h, &v);
        MPI_T_pvar_handle_free(pv_session, &h);
    }
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar %s: read failed (err %d)\n", rank, name, err);
        errs++;
    }
    return v;
}

/* Read the pvar until it equals want, making progress meanwhile (operations kept for a
 * peer's message go away when it arrives); gives up after secs seconds. Returns the value. */
static unsigned long long pv_settle(const char *name, unsigned long long want, double secs)
{
    double t0 = MPI_Wtime();
    unsigned long long v = pv_read(name);
    while (v != want && MPI_Wtime() - t0 < secs) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        v = pv_read(name);
    }
    return v;
}

static int val(int sc, int it, int i)
{
    return 1 + sc * 1000003 + it * 7919 + i;
}

static void complete(MPI_Request * req, const char *what)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    while (!flag) {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: %s: MPI_Test returned %d\n", rank, what, err);
            errs++;
            return;
        }
        if (!flag && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d: %s: not complete after 20 s (matched the wrong "
                    "operation?)\n", rank, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* nfreed freed receives, nfreed unstarted sends, then a real pair on the same tag */
static void scenario(MPI_Comm comm, int sc, int nfreed, int iters)
{
    const int tag = 20 + sc;
    int fbuf[256], buf[200];
    MPI_Request freq[8], req;

    if (rank == 1) {
        for (int k = 0; k < nfreed; k++) {
            MPI_Precv_init(fbuf, 4, 64, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &freq[k]);
            MPI_Request_free(&freq[k]);
        }
    }
    MPI_Barrier(comm);
    if (rank == 0) {
        for (int k = 0; k < nfreed; k++)
            MPI_Psend_init(fbuf, 4, 64, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &freq[k]);
        if (sc == 2)    /* scenario 2: freed before the real pair starts */
            for (int k = 0; k < nfreed; k++)
                MPI_Request_free(&freq[k]);
        MPI_Psend_init(buf, 2, 100, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
    } else {
        MPI_Precv_init(buf, 5, 40, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
    }
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int i = 0; i < 200; i++)
                buf[i] = val(sc, it, i);
            MPI_Start(&req);
            MPI_Pready(1, req);
            MPI_Pready(0, req);
            complete(&req, "second send");
        } else {
            memset(buf, 0, sizeof(buf));
            MPI_Start(&req);
            complete(&req, "second receive");
            for (int i = 0; i < 200; i++)
                if (buf[i] != val(sc, it, i)) {
                    fprintf(stderr, "scenario %d iter %d: buf[%d] = %d, expected %d\n", sc, it,
                            i, buf[i], val(sc, it, i));
                    errs++;
                    break;
                }
        }
    }
    MPI_Request_free(&req);
    if (rank == 0 && sc == 1)
        for (int k = 0; k < nfreed; k++)
            MPI_Request_free(&freq[k]);
}

int main(int argc, char *argv[])
{
    int size, provided, iters;
    unsigned long long live0, ids0, live1, ids1;
    MPI_Comm comm;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 4);
    MTestArgListDestroy(head);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    live0 = pv_read("part_ops_live");
    ids0 = pv_read("part_tag_ids_in_use");

    scenario(comm, 1, 1, iters);
    scenario(comm, 2, 3, iters);

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    ids1 = pv_settle("part_tag_ids_in_use", ids0, 5.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu at the end, %llu at the start\n", rank,
                live1, live0);
        errs++;
    }
    if (ids1 != ids0) {
        fprintf(stderr, "rank %d: part_tag_ids_in_use is %llu at the end, %llu at the start\n",
                rank, ids1, ids0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm_free(&comm);
    if (pv_session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&pv_session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
