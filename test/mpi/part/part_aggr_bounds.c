/*
 * part_aggr_bounds.c: number of wire messages chosen by the receiver (2 processes).
 *
 * What it asserts:
 * - The five partitioned-engine performance variables exist as MPI_T_PVAR_CLASS_COUNTER,
 *   MPI_UNSIGNED_LONG_LONG, MPI_T_BIND_NO_OBJECT, continuous, MPI_T_VERBOSITY_USER_BASIC;
 *   the engine's race counters (read by its own tests) exist with
 *   MPI_T_VERBOSITY_MPIDEV_DETAIL.
 * - For each configuration (send partitions, receive partitions, total bytes, receiver's
 *   MPIR_CVAR_PART_AGGR_SIZE, sender's AGGR_SIZE), the wire messages of one iteration are
 *   W = ceil(g / k), with g = gcd(spart, rpart), S = bytes / g and
 *   k = min(g, AGGR / S) if AGGR > 0 and S < AGGR (k = g when S == 0), else 1; AGGR is the
 *   receiver's value (the sender deliberately sets a different one in several cases).
 *   Checked from the deltas over all iterations: part_wire_msgs_sent on the sender and
 *   part_wire_msgs_recvd on the receiver both equal iters * W, and part_user_parts_sent on
 *   the sender equals iters * spart (each user partition is carried exactly once).
 *   Sizes are placed just under, at and just over AGGR_SIZE multiples.
 * - MPI_T_cvar_write of AGGR_SIZE applies to operations matched afterwards: an operation
 *   matched (one iteration done) with AGGR_SIZE 0 keeps g wire messages per iteration after
 *   the value changes to 4096, while one initialised after the change merges.
 * - part_first_iter_deferred: when the sender readies every partition before the receiver
 *   even initialised its receive, all W wire messages of the first iteration wait for the
 *   receiver's first answer (delta == W), and later iterations add nothing (delta == 0).
 * - Every received byte is checked in every iteration.
 *
 * The CVAR is written with MPI_T_cvar_write before MPI_Psend_init / MPI_Precv_init.
 *
 * -info: each configuration's values go in the info key mpich_part_aggr_size of
 * MPI_Psend_init / MPI_Precv_init instead, while the CVAR holds another value (0 where the
 * configuration says a positive one, 1 MiB where it says 0): the same counts must come out,
 * so the test fails when the receiver's key is ignored or the sender's is used.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 3

static int rank;
static int use_info;            /* -info: AGGR_SIZE by the info key mpich_part_aggr_size */

/* barrier between ranks 0 and 1 only */
static void pair_sync(MPI_Comm ctl)
{
    int peer = 1 - rank, a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, peer, 999, &b, 1, MPI_INT, peer, 999, ctl, MPI_STATUS_IGNORE);
}

/* ---- MPI_T helpers ---------------------------------------------------------------------- */

enum { PV_SENT, PV_RECVD, PV_PARTS, PV_CTS, PV_DEFER, NPV };
static const char *pv_names[NPV] = {
    "part_wire_msgs_sent", "part_wire_msgs_recvd", "part_user_parts_sent",
    "part_cts_path_ops", "part_first_iter_deferred"
};

static MPI_T_pvar_session session;
static MPI_T_pvar_handle pv_handle[NPV];
static int pv_ok[NPV];

/* Looks up the COUNTER pvar `name`: its index, verbosity and whether it has the engine's
 * shape (MPI_UNSIGNED_LONG_LONG, no binding, continuous). Returns 0, or 1 after reporting
 * that it is missing. */
static int pv_lookup(const char *name, int *idx, int *verbosity, int *shape_ok)
{
    char nm[256], desc[1024];
    int nm_len = sizeof(nm), desc_len = sizeof(desc);
    int var_class, bind, readonly, continuous, atomic;
    MPI_Datatype dt;
    MPI_T_enum et;
    int err = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, idx);
    if (err == MPI_SUCCESS)
        err = MPI_T_pvar_get_info(*idx, nm, &nm_len, verbosity, &var_class, &dt, &et, desc,
                                  &desc_len, &bind, &readonly, &continuous, &atomic);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar %s (class COUNTER) not found (err %d)\n", rank, name,
                err);
        return 1;
    }
    *shape_ok = var_class == MPI_T_PVAR_CLASS_COUNTER && dt == MPI_UNSIGNED_LONG_LONG &&
        bind == MPI_T_BIND_NO_OBJECT && continuous;
    return 0;
}

static int pv_setup(void)
{
    int errs = 0;
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < NPV; i++) {
        int idx, err, count, verbosity, shape_ok;

        pv_ok[i] = 0;
        if (pv_lookup(pv_names[i], &idx, &verbosity, &shape_ok)) {
            errs++;
            continue;
        }
        if (!shape_ok || verbosity != MPI_T_VERBOSITY_USER_BASIC) {
            fprintf(stderr, "rank %d: pvar %s: counter of MPI_UNSIGNED_LONG_LONG, no binding, "
                    "continuous %d; user-basic %d\n", rank, pv_names[i], shape_ok,
                    verbosity == MPI_T_VERBOSITY_USER_BASIC);
            errs++;
            continue;
        }
        err = MPI_T_pvar_handle_alloc(session, idx, NULL, &pv_handle[i], &count);
        if (err != MPI_SUCCESS || count != 1) {
            fprintf(stderr, "rank %d: pvar %s: handle_alloc err %d count %d\n",
                    rank, pv_names[i], err, count);
            errs++;
            continue;
        }
        pv_ok[i] = 1;
    }
    return errs;
}

/* The race counters: counters for developers (MPI_T_VERBOSITY_MPIDEV_DETAIL). */
static int pv_check_detail(void)
{
    static const char *names[] = {
        "part_release_before_plan", "part_freed_while_planning", "part_withdraw_in_start",
        "part_pready_answer_raced", "part_rdma_stale_credits", "part_verbs_fail_last_ref",
        "part_sample_after_free", "part_direct_armed_in_test", "part_inflight_late"
    };
    int errs = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int idx, verbosity, shape_ok;
        if (pv_lookup(names[i], &idx, &verbosity, &shape_ok)) {
            errs++;
        } else if (verbosity != MPI_T_VERBOSITY_MPIDEV_DETAIL) {
            fprintf(stderr, "rank %d: pvar %s: verbosity %d, not MPI_T_VERBOSITY_MPIDEV_DETAIL\n",
                    rank, names[i], verbosity);
            errs++;
        }
    }
    return errs;
}

static unsigned long long pv_read(int i)
{
    unsigned long long v = 0;
    if (pv_ok[i])
        MPI_T_pvar_read(session, pv_handle[i], &v);
    return v;
}

static void pv_teardown(void)
{
    for (int i = 0; i < NPV; i++)
        if (pv_ok[i])
            MPI_T_pvar_handle_free(session, &pv_handle[i]);
    MPI_T_pvar_session_free(&session);
}

static int set_aggr(int value)
{
    int idx, count, err;
    MPI_T_cvar_handle h;

    static int missing = 0;

    if (missing)
        return 0;       /* reported once */
    err = MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_AGGR_SIZE not found (err %d)\n", rank, err);
        missing = 1;
        return 1;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    err = MPI_T_cvar_write(h, &value);
    MPI_T_cvar_handle_free(&h);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_T_cvar_write(AGGR_SIZE=%d) failed (%d)\n", rank, value, err);
        return 1;
    }
    return 0;
}

/* ---- expected layout -------------------------------------------------------------------- */

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int expected_wire_msgs(int spart, int rpart, long bytes, int aggr)
{
    int g = gcd(spart, rpart);
    long S = bytes / g;
    int k = 1;
    if (aggr > 0 && S < aggr) {
        k = (S == 0) ? g : (int) ((long) aggr / S);
        if (k > g)
            k = g;
    }
    return (g + k - 1) / k;
}

static int pattern(int cfg, int iter, long i)
{
    return 1 + cfg * 7919 + iter * 1000003 + (int) (i * 13) + (int) (i >> 7);
}

/* ---- test cases ------------------------------------------------------------------------- */

typedef struct {
    int spart, rpart;
    int count;                  /* ints in the whole buffer */
    int recv_aggr, send_aggr;
} cfg_t;

static const cfg_t cfgs[] = {
    /* 32 partitions x 128 bytes: g = 32, S = 128 */
    {32, 32, 1024, 0, 0},
    {32, 32, 1024, 127, 127},
    {32, 32, 1024, 128, 4096},  /* S == AGGR: no merging */
    {32, 32, 1024, 129, 129},
    {32, 32, 1024, 255, 255},
    {32, 32, 1024, 256, 0},     /* k = 2 */
    {32, 32, 1024, 257, 1 << 20},
    {32, 32, 1024, 384, 384},   /* k = 3, 11 messages */
    {32, 32, 1024, 4095, 4095}, /* k = 31, 2 messages */
    {32, 32, 1024, 4096, 0},    /* k = 32, 1 message */
    {32, 32, 1024, 1 << 20, 0},
    {32, 32, 1024, 0, 4096},    /* receiver says no merging */
    /* 16 send x 24 receive partitions, 3072 bytes: g = 8, S = 384 */
    {16, 24, 768, 383, 383},
    {16, 24, 768, 384, 384},
    {16, 24, 768, 385, 385},
    {16, 24, 768, 767, 767},
    {16, 24, 768, 768, 768},
    {16, 24, 768, 769, 769},    /* k = 2, 4 messages */
    {16, 24, 768, 1152, 0},     /* k = 3, 3 messages */
    {16, 24, 768, 4000, 4000},  /* k = 8, 1 message */
    /* 12 send x 18 receive, 4608 bytes: g = 6, S = 768 */
    {12, 18, 1152, 1600, 1600}, /* k = 2 */
    {12, 18, 1152, 2400, 2400}, /* k = 3 */
    {12, 18, 1152, 3100, 3100}, /* k = 4, 2 messages */
    /* g = 1 */
    {7, 5, 350, 0, 0},
    {7, 5, 350, 1 << 20, 1 << 20},
    {64, 1, 4096, 0, 0},
    {1, 64, 4096, 64, 64},
    /* zero bytes: S == 0 */
    {8, 8, 0, 0, 0},            /* 8 empty wire messages */
    {8, 8, 0, 64, 64},          /* k = g */
    {6, 4, 0, 1, 1},
    /* large: 1 MiB, S = 256 KiB */
    {4, 4, 1 << 18, 0, 0},
    {4, 4, 1 << 18, 1 << 20, 1 << 20},
    {4, 4, 1 << 18, (1 << 18), (1 << 18)},
    {4, 4, 1 << 18, (1 << 18) + 1, 0},
};

static int run_cfg(int c, const cfg_t * cf, int *buf)
{
    int errs = 0;
    MPI_Request req;
    long bytes = (long) cf->count * sizeof(int);
    int W = expected_wire_msgs(cf->spart, cf->rpart, bytes, cf->recv_aggr);
    const char *how = use_info ? "info key" : "CVAR";
    unsigned long long before[NPV], after[NPV];

    int mine = rank == 0 ? cf->send_aggr : cf->recv_aggr;
    MPI_Info info = MPI_INFO_NULL;
    if (use_info) {
        char v[16];
        snprintf(v, sizeof(v), "%d", mine);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_aggr_size", v);
        errs += set_aggr(mine > 0 ? 0 : 1 << 20);      /* what the key must override */
    } else {
        errs += set_aggr(mine);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < NPV; i++)
        before[i] = pv_read(i);

    if (rank == 0) {
        MPI_Psend_init(buf, cf->spart, cf->count / cf->spart, MPI_INT, 1, c, MPI_COMM_WORLD,
                       info, &req);
        for (int it = 0; it < ITERS; it++) {
            for (long i = 0; i < cf->count; i++)
                buf[i] = pattern(c, it, i);
            MPI_Start(&req);
            for (int p = cf->spart - 1; p >= 0; p--)
                MPI_Pready(p, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        MPI_Precv_init(buf, cf->rpart, cf->count / cf->rpart, MPI_INT, 0, c, MPI_COMM_WORLD,
                       info, &req);
        for (int it = 0; it < ITERS; it++) {
            memset(buf, 0, bytes);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            int bad = 0;
            for (long i = 0; i < cf->count; i++) {
                if (buf[i] != pattern(c, it, i)) {
                    if (bad < 5)
                        fprintf(stderr, "cfg %d iter %d: buf[%ld] = %d, expected %d\n",
                                c, it, i, buf[i], pattern(c, it, i));
                    bad++;
                }
            }
            errs += bad;
        }
        MPI_Request_free(&req);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);

    for (int i = 0; i < NPV; i++)
        after[i] = pv_read(i);

    if (rank == 0) {
        unsigned long long d = after[PV_SENT] - before[PV_SENT];
        unsigned long long dp = after[PV_PARTS] - before[PV_PARTS];
        if (pv_ok[PV_SENT] && d != (unsigned long long) ITERS * W) {
            fprintf(stderr, "cfg %d (spart %d rpart %d bytes %ld aggr recv %d send %d by %s): "
                    "part_wire_msgs_sent delta %llu, expected %d x %d\n",
                    c, cf->spart, cf->rpart, bytes, cf->recv_aggr, cf->send_aggr, how, d, ITERS,
                    W);
            errs++;
        }
        if (pv_ok[PV_PARTS] && dp != (unsigned long long) ITERS * cf->spart) {
            fprintf(stderr, "cfg %d (spart %d rpart %d bytes %ld aggr recv %d send %d by %s): "
                    "part_user_parts_sent delta %llu, expected %d x %d\n",
                    c, cf->spart, cf->rpart, bytes, cf->recv_aggr, cf->send_aggr, how, dp, ITERS,
                    cf->spart);
            errs++;
        }
    } else if (rank == 1) {
        unsigned long long d = after[PV_RECVD] - before[PV_RECVD];
        if (pv_ok[PV_RECVD] && d != (unsigned long long) ITERS * W) {
            fprintf(stderr, "cfg %d (spart %d rpart %d bytes %ld aggr recv %d send %d by %s): "
                    "part_wire_msgs_recvd delta %llu, expected %d x %d\n",
                    c, cf->spart, cf->rpart, bytes, cf->recv_aggr, cf->send_aggr, how, d, ITERS,
                    W);
            errs++;
        }
    }
    return errs;
}

/* run `iters` iterations of an initialised pair; returns errors; *wire gets the delta of
 * part_wire_msgs_sent (sender) or part_wire_msgs_recvd (receiver) */
static int run_iters(MPI_Request req, int *buf, int spart, int rpart, int count, int key,
                     int iters, unsigned long long *wire)
{
    int errs = 0;
    unsigned long long w0 = pv_read(rank == 0 ? PV_SENT : PV_RECVD);
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int i = 0; i < count; i++)
                buf[i] = pattern(key, it, i);
            MPI_Start(&req);
            MPI_Pready_range(0, spart - 1, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            memset(buf, 0, count * sizeof(int));
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++)
                if (buf[i] != pattern(key, it, i)) {
                    if (errs < 5)
                        fprintf(stderr, "op %d iter %d: buf[%d] = %d, expected %d\n", key, it,
                                i, buf[i], pattern(key, it, i));
                    errs++;
                }
        }
    }
    *wire = pv_read(rank == 0 ? PV_SENT : PV_RECVD) - w0;
    return errs;
}

/* The CVAR written at run time applies to operations matched afterwards only. */
static int run_midlife(int *buf)
{
    const int spart = 16, rpart = 16, count = 16 * 32;  /* 128 bytes per partition */
    int errs = 0, WA, WB;
    int *bufb = malloc(count * sizeof(int));
    unsigned long long w;
    MPI_Request a, b;

    if (rank > 1) {
        free(bufb);
        return 0;
    }
    WA = expected_wire_msgs(spart, rpart, count * sizeof(int), 0);
    WB = expected_wire_msgs(spart, rpart, count * sizeof(int), 4096);

    /* operation A is initialised and matched with AGGR_SIZE 0 */
    errs += set_aggr(0);
    if (rank == 0)
        MPI_Psend_init(buf, spart, count / spart, MPI_INT, 1, 2000, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &a);
    else
        MPI_Precv_init(buf, rpart, count / rpart, MPI_INT, 0, 2000, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &a);
    errs += run_iters(a, buf, spart, rpart, count, 2000, 1, &w);

    /* operation B after the change; A keeps its layout */
    errs += set_aggr(4096);
    if (rank == 0)
        MPI_Psend_init(bufb, spart, count / spart, MPI_INT, 1, 2001, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &b);
    else
        MPI_Precv_init(bufb, rpart, count / rpart, MPI_INT, 0, 2001, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &b);
    errs += run_iters(a, buf, spart, rpart, count, 2000, ITERS, &w);
    if (pv_ok[PV_SENT] && pv_ok[PV_RECVD] && w != (unsigned long long) ITERS * WA) {
        fprintf(stderr, "rank %d: operation matched with AGGR_SIZE 0 sent/received %llu wire "
                "messages in %d iterations after AGGR_SIZE changed to 4096, expected %d each\n",
                rank, w, ITERS, WA);
        errs++;
    }
    errs += run_iters(b, bufb, spart, rpart, count, 2001, ITERS, &w);
    if (pv_ok[PV_SENT] && pv_ok[PV_RECVD] && w != (unsigned long long) ITERS * WB) {
        fprintf(stderr, "rank %d: operation matched after AGGR_SIZE changed to 4096 sent/"
                "received %llu wire messages in %d iterations, expected %d each\n", rank, w,
                ITERS, WB);
        errs++;
    }
    MPI_Request_free(&a);
    MPI_Request_free(&b);
    free(bufb);
    return errs;
}

/* The sender readies everything before the receiver calls MPI_Precv_init. */
static int run_deferred(int *buf)
{
    const int spart = 8, rpart = 8, count = 64, aggr = 0, tag = 1000;
    int errs = 0;
    int W = expected_wire_msgs(spart, rpart, count * sizeof(int), aggr);
    MPI_Request req;
    MPI_Comm ctl;

    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    errs += set_aggr(aggr);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int it = 0; it < ITERS; it++) {
        unsigned long long d0 = pv_read(PV_DEFER), d1;
        if (rank == 0) {
            if (it == 0)
                MPI_Psend_init(buf, spart, count / spart, MPI_INT, 1, tag, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req);
            for (int i = 0; i < count; i++)
                buf[i] = pattern(99, it, i);
            MPI_Start(&req);
            MPI_Pready_range(0, spart - 1, req);
            if (it == 0)
                pair_sync(ctl);       /* the receiver initialises only after this */
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            d1 = pv_read(PV_DEFER);
            if (!pv_ok[PV_DEFER]) {
                /* reported by pv_setup */
            } else if (it == 0 && d1 - d0 != (unsigned long long) W) {
                fprintf(stderr, "part_first_iter_deferred delta %llu on the first iteration, "
                        "expected %d (all partitions readied before the receiver's answer)\n",
                        d1 - d0, W);
                errs++;
            } else if (it > 0 && d1 != d0) {
                fprintf(stderr, "part_first_iter_deferred grew by %llu on iteration %d\n",
                        d1 - d0, it);
                errs++;
            }
            if (it == ITERS - 1)
                MPI_Request_free(&req);
        } else if (rank == 1) {
            if (it == 0) {
                pair_sync(ctl);
                MPI_Precv_init(buf, rpart, count / rpart, MPI_INT, 0, tag, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req);
            }
            memset(buf, 0, count * sizeof(int));
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++) {
                if (buf[i] != pattern(99, it, i)) {
                    if (errs < 5)
                        fprintf(stderr, "deferred iter %d: buf[%d] = %d, expected %d\n",
                                it, i, buf[i], pattern(99, it, i));
                    errs++;
                }
            }
            if (it == ITERS - 1)
                MPI_Request_free(&req);
        }
    }
    MPI_Comm_free(&ctl);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, size, provided;
    int ncfg = (int) (sizeof(cfgs) / sizeof(cfgs[0]));
    long maxcount = 0;
    int *buf;

    /* this test checks the layouts of MPIR_CVAR_PART_AGGR_SIZE (0: one wire message per
     * gcd-message, every iteration): the "size" aggregator, not the default's re-plan */
    setenv("MPIR_CVAR_PART_AGGREGATOR", "size", 0);
    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-info") == 0)
            use_info = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    errs += pv_setup();
    errs += pv_check_detail();

    for (int c = 0; c < ncfg; c++)
        if (cfgs[c].count > maxcount)
            maxcount = cfgs[c].count;
    buf = malloc(maxcount * sizeof(int));

    for (int c = 0; c < ncfg; c++)
        errs += run_cfg(c, &cfgs[c], buf);
    errs += run_midlife(buf);
    errs += run_deferred(buf);

    free(buf);
    pv_teardown();
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
