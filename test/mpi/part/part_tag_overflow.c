/*
 * part_tag_overflow.c: more partitioned receives than tag-matched slots (2 processes).
 *
 * Run with env=MPIR_CVAR_PART_TAG_IDS=2 (the value is read back with MPI_T, so any value
 * works). What it asserts:
 * - -nops (default 6) partitioned pairs with different tags and geometries are initialised
 *   together (the receiver in tag order, the sender in reverse order) and are all active at
 *   the same time in every iteration; every byte of every operation is checked each
 *   iteration.
 * - Iterations alternate between "receiver first" (the receiver starts before the sender
 *   starts) and "sender first" (the sender starts and readies everything, interleaving the
 *   partitions of all operations in random order, before the receiver starts), and one
 *   iteration in three the receiver polls MPI_Parrived over all operations instead of
 *   waiting. Operations on the fallback (CTS every iteration) path must work in all cases.
 * - On the receiver, part_cts_path_ops grows by exactly nops - min(nops, TAG_IDS): the
 *   receiver matches its operations in initialisation order, the first TAG_IDS of them take
 *   the tag-matched slots and every later one the CTS path (the engine is deterministic
 *   here; TAG_IDS is read back with MPI_T, a negative value counts as 0).
 * - After all operations are freed, min(2, TAG_IDS) new pairs are again on the tag-matched
 *   path (part_cts_path_ops does not grow): the limit is about operations initialised at
 *   the same time.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define TOTAL 720               /* ints per operation, divisible by 1..6 */
#define MAXOPS 64

static int rank;

/* barrier between ranks 0 and 1 only */
static void pair_sync(MPI_Comm ctl)
{
    int peer = 1 - rank, a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, peer, 999, &b, 1, MPI_INT, peer, 999, ctl, MPI_STATUS_IGNORE);
}

static int pattern(int op, int iter, int i)
{
    return 1 + op * 100003 + iter * 7919 + i * 3;
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

static MPI_T_pvar_session session;
static MPI_T_pvar_handle cts_handle;
static int cts_ok = 0;

static int cts_setup(void)
{
    int idx, count, err;
    MPI_T_pvar_session_create(&session);
    err = MPI_T_pvar_get_index("part_cts_path_ops", MPI_T_PVAR_CLASS_COUNTER, &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar part_cts_path_ops not found (err %d)\n", rank, err);
        return 1;
    }
    err = MPI_T_pvar_handle_alloc(session, idx, NULL, &cts_handle, &count);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar handle alloc failed (err %d)\n", rank, err);
        return 1;
    }
    cts_ok = 1;
    return 0;
}

static unsigned long long cts_read(void)
{
    unsigned long long v = 0;
    if (cts_ok)
        MPI_T_pvar_read(session, cts_handle, &v);
    return v;
}

static unsigned int lcg(unsigned int *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

/* run `iters` iterations over nops operations; tags tag0 + i */
static int run_ops(int nops, int tag0, int iters, MPI_Comm ctl)
{
    int errs = 0;
    MPI_Request req[MAXOPS];
    MPI_Status st[MAXOPS];
    int *buf[MAXOPS], sp[MAXOPS], rp[MAXOPS];
    unsigned int seed = 12345u + tag0;

    for (int i = 0; i < nops; i++) {
        sp[i] = 1 + i % 6;
        rp[i] = 6 - i % 6;
        buf[i] = malloc(TOTAL * sizeof(int));
    }

    if (rank == 0) {
        for (int i = nops - 1; i >= 0; i--)
            MPI_Psend_init(buf[i], sp[i], TOTAL / sp[i], MPI_INT, 1, tag0 + i, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[i]);
    } else if (rank == 1) {
        for (int i = 0; i < nops; i++)
            MPI_Precv_init(buf[i], rp[i], TOTAL / rp[i], MPI_INT, 0, tag0 + i, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[i]);
    }

    for (int it = 0; it < iters; it++) {
        int sender_first = it % 2;
        if (rank == 0) {
            /* all (op, partition) pairs in random order */
            int n = 0, pairs[MAXOPS * 6][2];
            for (int i = 0; i < nops; i++)
                for (int p = 0; p < sp[i]; p++) {
                    pairs[n][0] = i;
                    pairs[n][1] = p;
                    n++;
                }
            for (int a = n - 1; a > 0; a--) {
                int b = lcg(&seed) % (a + 1), t0 = pairs[a][0], t1 = pairs[a][1];
                pairs[a][0] = pairs[b][0];
                pairs[a][1] = pairs[b][1];
                pairs[b][0] = t0;
                pairs[b][1] = t1;
            }
            if (!sender_first)
                pair_sync(ctl);
            MPI_Startall(nops, req);
            for (int a = 0; a < n; a++) {
                int i = pairs[a][0], p = pairs[a][1], c = TOTAL / sp[i];
                for (int j = p * c; j < (p + 1) * c; j++)
                    buf[i][j] = pattern(i + tag0, it, j);
                MPI_Pready(p, req[i]);
            }
            if (sender_first)
                pair_sync(ctl);
            MPI_Waitall(nops, req, st);
        } else if (rank == 1) {
            for (int i = 0; i < nops; i++)
                memset(buf[i], 0, TOTAL * sizeof(int));
            if (sender_first)
                pair_sync(ctl);
            MPI_Startall(nops, req);
            if (!sender_first)
                pair_sync(ctl);
            if (it % 3 == 2) {
                /* poll every partition of every operation */
                int left = 0, flag;
                double t0 = MPI_Wtime();
                char seen[MAXOPS][6];
                memset(seen, 0, sizeof(seen));
                for (int i = 0; i < nops; i++)
                    left += rp[i];
                while (left > 0) {
                    for (int i = 0; i < nops; i++)
                        for (int p = 0; p < rp[i]; p++) {
                            if (seen[i][p])
                                continue;
                            MPI_Parrived(req[i], p, &flag);
                            if (flag) {
                                int c = TOTAL / rp[i];
                                seen[i][p] = 1;
                                left--;
                                for (int j = p * c; j < (p + 1) * c; j++)
                                    if (buf[i][j] != pattern(i + tag0, it, j)) {
                                        if (errs < 10)
                                            fprintf(stderr, "op %d iter %d: arrived partition "
                                                    "%d: buf[%d] = %d, expected %d\n", i, it,
                                                    p, j, buf[i][j], pattern(i + tag0, it, j));
                                        errs++;
                                    }
                            }
                        }
                    if (left > 0 && MPI_Wtime() - t0 > 20.0) {
                        fprintf(stderr, "iter %d: %d partitions not arrived after 20 s\n", it,
                                left);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
            }
            MPI_Waitall(nops, req, st);
            for (int i = 0; i < nops; i++)
                for (int j = 0; j < TOTAL; j++)
                    if (buf[i][j] != pattern(i + tag0, it, j)) {
                        if (errs < 10)
                            fprintf(stderr, "op %d (tag %d, spart %d rpart %d) iter %d: "
                                    "buf[%d] = %d, expected %d\n", i, tag0 + i, sp[i], rp[i],
                                    it, j, buf[i][j], pattern(i + tag0, it, j));
                        errs++;
                    }
        }
    }

    if (rank < 2)
        for (int i = 0; i < nops; i++)
            MPI_Request_free(&req[i]);
    for (int i = 0; i < nops; i++)
        free(buf[i]);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, size, provided, nops, iters, tag_ids = 4096, err;
    unsigned long long c0, c1;
    MPI_Comm ctl;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    nops = MTestArgListGetInt_with_default(head, "nops", 6);
    iters = MTestArgListGetInt_with_default(head, "iter", 12);
    MTestArgListDestroy(head);
    if (nops > MAXOPS)
        nops = MAXOPS;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    err = read_int_cvar("MPIR_CVAR_PART_TAG_IDS", &tag_ids);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot read MPIR_CVAR_PART_TAG_IDS (err %d)\n", rank, err);
        errs++;
        tag_ids = 4096;
    }
    errs += cts_setup();
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);

    /* phase 1: nops operations at once */
    c0 = cts_read();
    errs += run_ops(nops, 100, iters, ctl);
    c1 = cts_read();
    if (rank == 1 && cts_ok) {
        int slots = tag_ids < 0 ? 0 : tag_ids;
        unsigned long long want = (unsigned long long) (nops - (nops < slots ? nops : slots));
        if (c1 - c0 != want) {
            fprintf(stderr, "part_cts_path_ops grew by %llu with %d receive operations and "
                    "MPIR_CVAR_PART_TAG_IDS=%d, expected exactly %llu\n", c1 - c0, nops,
                    tag_ids, want);
            errs++;
        }
    }

    /* phase 2: all freed; a few new operations fit in the tag-matched slots again */
    MPI_Barrier(MPI_COMM_WORLD);
    int n2 = tag_ids < 2 ? tag_ids : 2;
    if (n2 > 0) {
        c0 = cts_read();
        errs += run_ops(n2, 200, 3, ctl);
        c1 = cts_read();
        if (rank == 1 && cts_ok && c1 != c0) {
            fprintf(stderr, "part_cts_path_ops grew by %llu for %d receive operations after "
                    "all earlier ones were freed (MPIR_CVAR_PART_TAG_IDS=%d)\n", c1 - c0, n2,
                    tag_ids);
            errs++;
        }
    }

    MPI_Comm_free(&ctl);
    if (cts_ok)
        MPI_T_pvar_handle_free(session, &cts_handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
