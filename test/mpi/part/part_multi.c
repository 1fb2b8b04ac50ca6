/*
 * part_multi.c: several concurrent partitioned operations among 4 processes.
 *
 * What it asserts:
 * - Rank 0 sends to each of ranks 1..3 with a different datatype, total size and send
 *   partition count, and each receiver uses its own, different receive partition count
 *   (all with the same tag, so matching must use the source/destination too).
 * - At the same time each rank r sends one operation back to rank 0 (same tag again,
 *   reverse direction) with its own send/receive partition counts.
 * - Every iteration all operations are started together; rank 0 readies the partitions of
 *   its three sends interleaved in random order, ranks 1..3 ready their reverse partitions
 *   in random order while polling MPI_Parrived on their forward partitions and checking the
 *   bytes of each partition as soon as it is reported; rank 0 polls MPI_Parrived on the
 *   three reverse receives. After MPI_Waitall every byte of every buffer is compared.
 * - Run with 4 processes (more are allowed and stay idle).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define NPEER 3
#define TAG 10
#define ITERS 20

/* forward operations 0 -> r (index r-1) */
static const int fwd_total[NPEER] = { 1536, 4000, 9600 };       /* elements */
static const int fwd_spart[NPEER] = { 8, 20, 32 };
static const int fwd_rpart[NPEER] = { 12, 5, 3 };
/* 0: MPI_INT, 1: MPI_DOUBLE, 2: MPI_CHAR */
static const int fwd_kind[NPEER] = { 0, 1, 2 };
/* reverse operations r -> 0, MPI_INT */
static const int rev_total = 600;
static const int rev_spart[NPEER] = { 4, 6, 10 };
static const int rev_rpart[NPEER] = { 3, 8, 1 };

static int rank;

static int elsize(int kind)
{
    return kind == 0 ? (int) sizeof(int) : kind == 1 ? (int) sizeof(double) : 1;
}

static MPI_Datatype eltype(int kind)
{
    return kind == 0 ? MPI_INT : kind == 1 ? MPI_DOUBLE : MPI_CHAR;
}

static unsigned int val(int dir, int peer, int iter, int i)
{
    return (unsigned int) (dir * 7 + peer * 131 + iter * 1009 + i * 17 + 1);
}

static void set_elem(void *buf, int kind, int i, unsigned int v)
{
    if (kind == 0)
        ((int *) buf)[i] = (int) v;
    else if (kind == 1)
        ((double *) buf)[i] = (double) v + 0.5;
    else
        ((char *) buf)[i] = (char) (v % 251 + 1);
}

static int elem_ok(const void *buf, int kind, int i, unsigned int v)
{
    if (kind == 0)
        return ((const int *) buf)[i] == (int) v;
    else if (kind == 1)
        return ((const double *) buf)[i] == (double) v + 0.5;
    else
        return ((const char *) buf)[i] == (char) (v % 251 + 1);
}

static int check_range(const void *buf, int kind, int dir, int peer, int iter, int lo, int hi,
                       const char *what)
{
    int errs = 0;
    for (int i = lo; i < hi; i++)
        if (!elem_ok(buf, kind, i, val(dir, peer, iter, i))) {
            if (errs < 5)
                fprintf(stderr, "rank %d iter %d: %s (peer %d) element %d wrong\n", rank, iter,
                        what, peer, i);
            errs++;
        }
    return errs;
}

static unsigned int rnd(unsigned int *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 9;
}

/* poll MPI_Parrived on all partitions of the given receive requests, checking each one */
static int poll_arrivals(int n, MPI_Request * req, void **buf, const int *kind,
                         const int *rpart, const int *total, int dir, const int *peer, int iter)
{
    int errs = 0, left = 0, flag;
    char seen[NPEER][64];
    double t0 = MPI_Wtime();

    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < n; i++)
        left += rpart[i];
    while (left > 0) {
        for (int i = 0; i < n; i++)
            for (int p = 0; p < rpart[i]; p++) {
                if (seen[i][p])
                    continue;
                MPI_Parrived(req[i], p, &flag);
                if (flag) {
                    int c = total[i] / rpart[i];
                    seen[i][p] = 1;
                    left--;
                    errs += check_range(buf[i], kind[i], dir, peer[i], iter, p * c,
                                        (p + 1) * c, "arrived partition");
                }
            }
        if (left > 0 && MPI_Wtime() - t0 > 20.0) {
            fprintf(stderr, "rank %d iter %d: %d partitions not arrived after 20 s\n", rank,
                    iter, left);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, size;
    unsigned int seed;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 4) {
        fprintf(stderr, "This test requires at least four processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    seed = 777u + rank;

    if (rank == 0) {
        MPI_Request req[2 * NPEER];
        MPI_Status st[2 * NPEER];
        void *fbuf[NPEER], *rbuf[NPEER];
        int rkind[NPEER], rtot[NPEER], peers[NPEER];

        for (int i = 0; i < NPEER; i++) {
            int k = fwd_kind[i];
            fbuf[i] = malloc((size_t) fwd_total[i] * elsize(k));
            rbuf[i] = malloc(rev_total * sizeof(int));
            rkind[i] = 0;
            rtot[i] = rev_total;
            peers[i] = i + 1;
            MPI_Psend_init(fbuf[i], fwd_spart[i], fwd_total[i] / fwd_spart[i], eltype(k), i + 1,
                           TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req[i]);
            MPI_Precv_init(rbuf[i], rev_rpart[i], rev_total / rev_rpart[i], MPI_INT, i + 1, TAG,
                           MPI_COMM_WORLD, MPI_INFO_NULL, &req[NPEER + i]);
        }
        for (int it = 0; it < ITERS; it++) {
            int pairs[64 * NPEER][2], n = 0;
            for (int i = 0; i < NPEER; i++)
                memset(rbuf[i], 0, rev_total * sizeof(int));
            MPI_Startall(2 * NPEER, req);
            for (int i = 0; i < NPEER; i++)
                for (int p = 0; p < fwd_spart[i]; p++) {
                    pairs[n][0] = i;
                    pairs[n][1] = p;
                    n++;
                }
            for (int a = n - 1; a > 0; a--) {
                int b = rnd(&seed) % (a + 1), t0 = pairs[a][0], t1 = pairs[a][1];
                pairs[a][0] = pairs[b][0];
                pairs[a][1] = pairs[b][1];
                pairs[b][0] = t0;
                pairs[b][1] = t1;
            }
            for (int a = 0; a < n; a++) {
                int i = pairs[a][0], p = pairs[a][1], c = fwd_total[i] / fwd_spart[i];
                for (int j = p * c; j < (p + 1) * c; j++)
                    set_elem(fbuf[i], fwd_kind[i], j, val(0, i + 1, it, j));
                MPI_Pready(p, req[i]);
            }
            errs += poll_arrivals(NPEER, &req[NPEER], rbuf, rkind, rev_rpart, rtot, 1, peers,
                                  it);
            MPI_Waitall(2 * NPEER, req, st);
            for (int i = 0; i < NPEER; i++)
                errs += check_range(rbuf[i], 0, 1, i + 1, it, 0, rev_total, "reverse buffer");
        }
        for (int i = 0; i < 2 * NPEER; i++)
            MPI_Request_free(&req[i]);
        for (int i = 0; i < NPEER; i++) {
            free(fbuf[i]);
            free(rbuf[i]);
        }
    } else if (rank <= NPEER) {
        int i = rank - 1, k = fwd_kind[i];
        MPI_Request req[2];     /* 0: forward receive, 1: reverse send */
        MPI_Status st[2];
        void *fbuf = malloc((size_t) fwd_total[i] * elsize(k));
        int *sbuf = malloc(rev_total * sizeof(int));
        int order[64];

        MPI_Precv_init(fbuf, fwd_rpart[i], fwd_total[i] / fwd_rpart[i], eltype(k), 0, TAG,
                       MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
        MPI_Psend_init(sbuf, rev_spart[i], rev_total / rev_spart[i], MPI_INT, 0, TAG,
                       MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
        for (int it = 0; it < ITERS; it++) {
            memset(fbuf, 0, (size_t) fwd_total[i] * elsize(k));
            MPI_Startall(2, req);
            for (int p = 0; p < rev_spart[i]; p++)
                order[p] = p;
            for (int a = rev_spart[i] - 1; a > 0; a--) {
                int b = rnd(&seed) % (a + 1), t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
            for (int a = 0; a < rev_spart[i]; a++) {
                int p = order[a], c = rev_total / rev_spart[i];
                for (int j = p * c; j < (p + 1) * c; j++)
                    sbuf[j] = (int) val(1, rank, it, j);
                MPI_Pready(p, req[1]);
            }
            errs += poll_arrivals(1, &req[0], &fbuf, &k, &fwd_rpart[i], &fwd_total[i], 0,
                                  &rank, it);
            MPI_Waitall(2, req, st);
            errs += check_range(fbuf, k, 0, rank, it, 0, fwd_total[i], "forward buffer");
        }
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
        free(fbuf);
        free(sbuf);
    }

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
