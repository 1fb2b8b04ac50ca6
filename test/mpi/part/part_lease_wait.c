/*
 * part_lease_wait.c: receive operations on the CTS path wait for a tag lease when more are
 * started than the tag space allows (2 processes; review finding C8: no test reached the
 * lease wait).
 *
 * Run with env=MPIR_CVAR_PART_TAG_IDS=0 (every receive operation on the CTS path, leasing
 * its tags per iteration) and env=MPIR_CVAR_PART_DEBUG_TAG_BITS=b (b = 1 or 2: at most 2^b
 * wire-message tags in all). Both CVARs are read back with MPI_T; the debug CVAR must exist.
 * -nops receive operations (default 4 * 2^b) from rank 0 to rank 1, with different
 * geometries (1 to 3 wire messages each), are all started at once by rank 1 (MPI_Startall,
 * in order), and rank 0 starts the matching sends and readies every partition of every
 * operation before it waits. What it asserts, for -iter iterations:
 * - every iteration completes on both sides with correct data (each operation's bytes
 *   checked);
 * - the sender's readying order varies: forward, reverse (the first-started receive, which
 *   holds the first lease, is readied last: a strict FIFO lease queue still completes,
 *   since nothing waits before everything is readied), and shuffled across operations;
 * - on rank 1: part_cts_path_ops grew by exactly nops - min(nops, TAG_IDS);
 *   part_lease_waits grew (> 0) when TAG_IDS is 0 and b > 0 (more operations than tags);
 * - at the end, after a barrier and some progress, part_tag_ids_in_use is 0 and
 *   part_ops_live is back to its start value, on both processes.
 * An iteration that does not complete within 30 s is reported and aborts the job.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define MAXOPS 64
#define TOTAL 1200      /* ints per operation */

static int rank, errs = 0;

#include "part_pvar.h"

static int cvar_read(const char *name, int *value)
{
    int idx, cnt, err;
    MPI_T_cvar_handle h;
    err = MPI_T_cvar_get_index(name, &idx);
    if (err != MPI_SUCCESS)
        return err;
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    err = MPI_T_cvar_read(h, value);
    MPI_T_cvar_handle_free(&h);
    return err;
}

static int val(int op, int it, int i)
{
    return 1 + op * 1000003 + it * 7919 + i;
}

static unsigned int lcg(unsigned int *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void complete_all(int n, MPI_Request * req, int it)
{
    int flag = 0;
    double t0 = MPI_Wtime();
    while (!flag) {
        if (MPI_Testall(n, req, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d iter %d: MPI_Testall failed\n", rank, it);
            errs++;
            return;
        }
        if (!flag && MPI_Wtime() - t0 > 30.0) {
            fprintf(stderr, "rank %d iter %d: %d operations not complete after 30 s\n", rank,
                    it, n);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

int main(int argc, char *argv[])
{
    int size, provided, nops, iters, tag_ids = -1, tag_bits = -1;
    int sp[MAXOPS], rp[MAXOPS], *buf[MAXOPS];
    MPI_Request req[MAXOPS];
    unsigned long long cts0, cts1, waits0, waits1, live0, live1, ids1;
    unsigned int seed = 4242u;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (cvar_read("MPIR_CVAR_PART_TAG_IDS", &tag_ids) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_TAG_IDS not readable\n", rank);
        errs++;
    }
    if (cvar_read("MPIR_CVAR_PART_DEBUG_TAG_BITS", &tag_bits) != MPI_SUCCESS) {
        const char *e = getenv("MPIR_CVAR_PART_DEBUG_TAG_BITS");
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_DEBUG_TAG_BITS missing\n", rank);
        errs++;
        tag_bits = e ? atoi(e) : 2;
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    nops = MTestArgListGetInt_with_default(head, "nops",
                                           tag_bits > 0 && tag_bits < 4 ? 4 << tag_bits : 16);
    iters = MTestArgListGetInt_with_default(head, "iter", 6);
    MTestArgListDestroy(head);
    if (nops > MAXOPS)
        nops = MAXOPS;

    live0 = pv_read("part_ops_live");
    cts0 = pv_read("part_cts_path_ops");
    waits0 = pv_read("part_lease_waits");

    /* geometries: gcd 1, 2 or 3 -> 1 to 3 wire messages (AGGR_SIZE 0) */
    for (int k = 0; k < nops; k++) {
        static const int g[][2] = { {4, 6}, {3, 3}, {1, 5}, {2, 4}, {6, 2}, {5, 1} };
        sp[k] = g[k % 6][0];
        rp[k] = g[k % 6][1];
        buf[k] = malloc(TOTAL * sizeof(int));
    }
    for (int k = 0; k < nops; k++) {
        if (rank == 0)
            MPI_Psend_init(buf[k], sp[k], TOTAL / sp[k], MPI_INT, 1, k, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[k]);
        else
            MPI_Precv_init(buf[k], rp[k], TOTAL / rp[k], MPI_INT, 0, k, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[k]);
    }

    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            int n = 0, pairs[MAXOPS * 6][2];
            for (int k = 0; k < nops; k++)
                for (int p = 0; p < sp[k]; p++) {
                    pairs[n][0] = k;
                    pairs[n][1] = p;
                    n++;
                }
            if (it % 3 == 1) {  /* reverse: the first-started receive is readied last */
                for (int a = 0; a < n / 2; a++) {
                    int t0 = pairs[a][0], t1 = pairs[a][1];
                    pairs[a][0] = pairs[n - 1 - a][0];
                    pairs[a][1] = pairs[n - 1 - a][1];
                    pairs[n - 1 - a][0] = t0;
                    pairs[n - 1 - a][1] = t1;
                }
            } else if (it % 3 == 2) {
                for (int a = n - 1; a > 0; a--) {
                    int b = lcg(&seed) % (a + 1), t0 = pairs[a][0], t1 = pairs[a][1];
                    pairs[a][0] = pairs[b][0];
                    pairs[a][1] = pairs[b][1];
                    pairs[b][0] = t0;
                    pairs[b][1] = t1;
                }
            }
            MPI_Startall(nops, req);
            for (int a = 0; a < n; a++) {
                int k = pairs[a][0], p = pairs[a][1], c = TOTAL / sp[k];
                for (int i = p * c; i < (p + 1) * c; i++)
                    buf[k][i] = val(k, it, i);
                MPI_Pready(p, req[k]);
            }
            complete_all(nops, req, it);
        } else {
            for (int k = 0; k < nops; k++)
                memset(buf[k], 0, TOTAL * sizeof(int));
            MPI_Startall(nops, req);
            complete_all(nops, req, it);
            for (int k = 0; k < nops; k++)
                for (int i = 0; i < TOTAL; i++)
                    if (buf[k][i] != val(k, it, i)) {
                        if (errs < 10)
                            fprintf(stderr, "op %d (%d x %d) iter %d: buf[%d] = %d, expected "
                                    "%d\n", k, sp[k], rp[k], it, i, buf[k][i], val(k, it, i));
                        errs++;
                    }
        }
    }
    for (int k = 0; k < nops; k++) {
        MPI_Request_free(&req[k]);
        free(buf[k]);
    }

    cts1 = pv_read("part_cts_path_ops");
    waits1 = pv_read("part_lease_waits");
    if (rank == 1) {
        int slots = tag_ids < 0 ? 0 : tag_ids;
        unsigned long long want = (unsigned long long) (nops - (nops < slots ? nops : slots));
        if (cts1 - cts0 != want) {
            fprintf(stderr, "rank 1: part_cts_path_ops grew by %llu, expected %llu (%d "
                    "operations, MPIR_CVAR_PART_TAG_IDS=%d)\n", cts1 - cts0, want, nops,
                    tag_ids);
            errs++;
        }
        if (tag_ids == 0 && tag_bits > 0 && waits1 - waits0 == 0) {
            fprintf(stderr, "rank 1: part_lease_waits did not grow (%d operations started at "
                    "once, MPIR_CVAR_PART_DEBUG_TAG_BITS=%d)\n", nops, tag_bits);
            errs++;
        }
        MTestPrintfMsg(1, "rank 1: part_lease_waits grew by %llu\n", waits1 - waits0);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    ids1 = pv_settle("part_tag_ids_in_use", 0, 5.0);
    live1 = pv_settle("part_ops_live", live0, 5.0);
    if (ids1 != 0) {
        fprintf(stderr, "rank %d: part_tag_ids_in_use is %llu at the end, expected 0\n", rank,
                ids1);
        errs++;
    }
    if (live1 != live0) {
        fprintf(stderr, "rank %d: part_ops_live is %llu at the end, %llu at the start\n", rank,
                live1, live0);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
