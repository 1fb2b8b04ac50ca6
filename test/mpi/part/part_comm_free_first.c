/*
 * part_comm_free_first.c: MPI_Comm_free before MPI_Request_free (2 processes; review
 * section 3, "MPI_Comm_free before Request_free", and C12: operations must drop their
 * communicator references).
 *
 * Per round (-rounds, default 2100), on a new communicator (cycling through MPI_Comm_dup of
 * MPI_COMM_WORLD, MPI_Comm_split of MPI_COMM_WORLD, and MPI_Comm_dup of a duplicate that is
 * freed at once), two partitioned operations in opposite directions with different
 * partition counts:
 * - mode 0: -iter iterations, then MPI_Comm_free(comm), then MPI_Request_free of both;
 * - mode 1: -iter - 1 iterations, then MPI_Start of both, MPI_Comm_free(comm) while the
 *   iteration is active, then the partitions are readied, both complete (pending operations
 *   on a freed communicator complete normally), then MPI_Request_free.
 * Every byte is checked every iteration. 2100 rounds exhaust MPICH's 2048 context ids if
 * an operation keeps its communicator alive after both handles are freed.
 * At the end (after a barrier and some progress) the pvar part_ops_live is back to its
 * value at the start on both processes (a missing pvar is a failure).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define TOTAL 1536

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

static int val(int round, int dir, int it, int i)
{
    return 1 + round * 100003 + dir * 50000 + it * 7919 + i;
}

static void check(const int *buf, int round, int dir, int it)
{
    for (int i = 0; i < TOTAL; i++)
        if (buf[i] != val(round, dir, it, i)) {
            if (errs < 10)
                fprintf(stderr, "rank %d round %d iter %d: buf[%d] = %d, expected %d\n", rank,
                        round, it, i, buf[i], val(round, dir, it, i));
            errs++;
        }
}

static MPI_Comm new_comm(int kind)
{
    MPI_Comm c, tmp;
    if (kind == 0) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else if (kind == 1) {
        MPI_Comm_split(MPI_COMM_WORLD, 3, rank, &c);
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &tmp);
        MPI_Comm_dup(tmp, &c);
        MPI_Comm_free(&tmp);
    }
    return c;
}

int main(int argc, char *argv[])
{
    int size, provided, rounds, iters;
    int *sbuf, *rbuf;
    unsigned long long live0, live1;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    rounds = MTestArgListGetInt_with_default(head, "rounds", 2100);
    iters = MTestArgListGetInt_with_default(head, "iter", 3);
    MTestArgListDestroy(head);
    if (iters < 1)
        iters = 1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    live0 = pv_read("part_ops_live");

    sbuf = malloc(TOTAL * sizeof(int));
    rbuf = malloc(TOTAL * sizeof(int));
    for (int r = 0; r < rounds; r++) {
        int mode = r % 2, peer = 1 - rank;
        /* rank 0 -> 1: 6 send / 4 receive partitions; rank 1 -> 0: 2 send / 8 receive */
        int sparts = rank == 0 ? 6 : 2, rparts = rank == 0 ? 8 : 4;
        MPI_Comm comm = new_comm(r % 3);
        MPI_Request req[2];

        MPI_Psend_init(sbuf, sparts, TOTAL / sparts, MPI_INT, peer, r, comm, MPI_INFO_NULL,
                       &req[0]);
        MPI_Precv_init(rbuf, rparts, TOTAL / rparts, MPI_INT, peer, r, comm, MPI_INFO_NULL,
                       &req[1]);
        for (int it = 0; it < iters; it++) {
            int last = (it == iters - 1);
            memset(rbuf, 0, TOTAL * sizeof(int));
            for (int i = 0; i < TOTAL; i++)
                sbuf[i] = val(r, rank, it, i);
            MPI_Startall(2, req);
            if (mode == 1 && last)
                MPI_Comm_free(&comm);   /* while the iteration is active */
            for (int p = sparts - 1; p >= 0; p--)
                MPI_Pready(p, req[0]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            check(rbuf, r, peer, it);
        }
        if (mode == 0)
            MPI_Comm_free(&comm);
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
    }
    free(sbuf);
    free(rbuf);

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu after %d rounds, %llu at the start\n",
                rank, live1, rounds, live0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (pv_session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&pv_session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
