/*
 * part_tag_split.c: the tag transport's splitting of wire messages into eager pieces
 * (MPIR_CVAR_PART_TAG_SPLIT_SIZE / _SPLIT_MAX, engine README section 3), 2 processes.
 *
 * Rank 0 sends, rank 1 receives. Run with MPIR_CVAR_PART_AGGREGATOR=none so that every
 * partition of the sender is its own wire message (the layouts below then fix the sizes).
 * For each case, ITERS iterations:
 * - the sender fills each partition just before readying it, with bytes that depend on the
 *   case, the iteration and the position, in an order that differs per iteration;
 * - the receiver clears its buffer (and a guard area after it) before MPI_Start, polls
 *   MPI_Parrived on every partition, compares the bytes of a partition as soon as it is
 *   reported arrived, and after MPI_Wait compares every byte again, guard included;
 * - on the sender, the delta of part_tag_split_msgs over the case must be ITERS times the
 *   number of its wire messages of more than SPLIT_SIZE and at most SPLIT_MAX bytes, when
 *   splitting applies (tag transport, peer on this node (MPI_COMM_TYPE_SHARED) and no
 *   MPIR_CVAR_NOLOCAL, UCX_TLS with eager shared memory, both buffers contiguous, equal
 *   sizes), and 0 otherwise.
 * S = SPLIT_SIZE and M = SPLIT_MAX, read through MPI_T; when SPLIT_SIZE is negative (the
 * default: the eager limit of the LogGP table "shm", rounded down to a multiple of 64),
 * S = -piece=N (default 8192, from the built-in table). -stepfile=N writes a LogGP file whose
 * "shm" table has a protocol step located at N / N+1 bytes, names it in
 * MPIR_CVAR_PART_LOGGP_FILE before MPI_Init, and expects S = N rounded down to 64 bytes
 * (unless -piece says otherwise).
 * Cases: one partition of S + 1,
 * S, 2 S + 3, M and M + 1 bytes; 4 partitions of 2 S bytes each; a send of 8 partitions
 * received in 2 (gcd 2: two messages of 4 sender partitions); an odd element size (MPI
 * struct-free contiguous of 3 bytes); a receive whose datatype is a vector (not contiguous:
 * no splitting) and a receive larger than the send (no splitting).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

static int rank, errs;
#include "part_pvar.h"

#define ITERS 3
#define GUARD 64
#define FILL 0xA5

static long long split_size, split_max;
static int same_node;           /* ranks 0 and 1 share a node (MPI_COMM_TYPE_SHARED) */

static unsigned char pattern(int c, int it, long long i)
{
    return (unsigned char) (c * 31 + it * 7 + i * 13 + (i >> 9));
}

/* Whether UCX_TLS lets UCX send eager messages through shared memory (engine README,
 * section 3): unset; a list with sm, shm, mm, posix, sysv, xpmem or all; an exclusion list
 * that keeps sm, shm, mm and one of posix and sysv. */
static int tls_has_shm(const char *tls)
{
    static const char *eager[] = { "sm", "shm", "mm", "posix", "sysv", "xpmem", "all" };
    if (tls == NULL || *tls == 0)
        return 1;
    if (tls[0] == '^')
        return !strstr(tls, "sm") && !strstr(tls, "shm") && !strstr(tls, "mm") &&
            !(strstr(tls, "posix") && strstr(tls, "sysv"));
    for (int i = 0; i < (int) (sizeof(eager) / sizeof(eager[0])); i++)
        if (strstr(tls, eager[i]))
            return 1;
    return 0;
}

/* Whether the engine may split on this run (what the receiver's rule sees from here). */
static int split_applies(void)
{
    const char *nl = getenv("MPIR_CVAR_NOLOCAL");
    if (rdma_forced() || (nl && atoi(nl) != 0) || split_size <= 0 || !same_node)
        return 0;
    return tls_has_shm(getenv("UCX_TLS"));
}

typedef struct {
    const char *name;
    int spart, rpart;           /* partitions on each side */
    long long sbytes;           /* bytes of one sender partition */
    int elem;                   /* bytes of one element (contiguous of MPI_BYTE) */
    int rvector;                /* receiver: a vector type (one hole per element) */
    long long rextra;           /* receiver: buffer larger by this many bytes */
} case_t;

static int run_case(int c, const case_t * k)
{
    long long stotal = k->sbytes * k->spart, rtotal = stotal + k->rextra;
    MPI_Datatype et, rt;
    MPI_Request req;
    int local_errs = 0;

    MPI_Type_contiguous(k->elem, MPI_BYTE, &et);
    MPI_Type_commit(&et);
    if (rank == 1 && k->rvector) {
        /* each element of elem bytes followed by a hole of elem bytes */
        MPI_Type_vector(1, 1, 2, et, &rt);
        MPI_Datatype tmp = rt;
        MPI_Type_create_resized(tmp, 0, 2 * k->elem, &rt);
        MPI_Type_free(&tmp);
        MPI_Type_commit(&rt);
    } else {
        MPI_Type_dup(et, &rt);
    }

    if (rank == 0) {
        long long cnt = k->sbytes / k->elem;
        unsigned char *buf = malloc(stotal);
        unsigned long long before = pv_read("part_tag_split_msgs");
        MPI_Psend_init(buf, k->spart, cnt, et, 1, c, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < ITERS; it++) {
            MPI_Start(&req);
            for (int q = 0; q < k->spart; q++) {
                int p = (it % 2) ? k->spart - 1 - q : q;
                for (long long i = 0; i < k->sbytes; i++)
                    buf[p * k->sbytes + i] = pattern(c, it, p * k->sbytes + i);
                MPI_Pready(p, req);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
        /* AGGREGATOR=none: g = gcd(spart, rpart) wire messages of stotal / g bytes */
        int g = k->spart, r = k->rpart;
        while (r) {
            int t = g % r;
            g = r;
            r = t;
        }
        long long msgs = 0, mbytes = stotal / g;
        int contig_both = !k->rvector && k->rextra == 0;
        if (split_applies() && contig_both && mbytes > split_size && mbytes <= split_max)
            msgs = g;
        unsigned long long got = pv_read("part_tag_split_msgs") - before;
        if (got != (unsigned long long) (msgs * ITERS)) {
            fprintf(stderr, "case %s: part_tag_split_msgs grew by %llu, expected %lld "
                    "(split %lld, max %lld, %lld bytes per message)\n", k->name, got,
                    msgs * ITERS, split_size, split_max, mbytes);
            local_errs++;
        }
        free(buf);
    } else {
        long long rpart_bytes = rtotal / k->rpart;
        long long rcnt = rpart_bytes / k->elem;
        MPI_Aint lb, rext;
        MPI_Type_get_extent(rt, &lb, &rext);
        long long span = rext * rcnt * k->rpart;
        unsigned char *buf = malloc(span + GUARD);
        MPI_Precv_init(buf, k->rpart, rcnt, rt, 0, c, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < ITERS; it++) {
            memset(buf, FILL, span + GUARD);
            MPI_Start(&req);
            int *seen = calloc(k->rpart, sizeof(int)), left = k->rpart;
            double t0 = MPI_Wtime();
            while (left > 0) {
                for (int p = 0; p < k->rpart; p++) {
                    int flag = 0;
                    if (seen[p])
                        continue;
                    MPI_Parrived(req, p, &flag);
                    if (!flag)
                        continue;
                    seen[p] = 1;
                    left--;
                    /* the data bytes of partition p that lie within the send */
                    for (long long e = 0; e < rcnt; e++) {
                        long long d0 = (p * rcnt + e) * k->elem;    /* data offset */
                        for (int b = 0; b < k->elem && d0 + b < stotal; b++) {
                            unsigned char want = pattern(c, it, d0 + b);
                            unsigned char have = buf[(p * rcnt + e) * rext + b];
                            if (have != want && local_errs++ < 5)
                                fprintf(stderr, "case %s it %d: partition %d byte %lld is %d, "
                                        "expected %d (at MPI_Parrived)\n", k->name, it, p,
                                        d0 + b, have, want);
                        }
                    }
                }
                if (MPI_Wtime() - t0 > 20) {
                    fprintf(stderr, "case %s it %d: %d partitions not arrived in 20 s\n",
                            k->name, it, left);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            free(seen);
            MPI_Status st;
            MPI_Wait(&req, &st);
            int nbytes;
            MPI_Get_count(&st, MPI_BYTE, &nbytes);
            if (nbytes != stotal && local_errs++ < 5)
                fprintf(stderr, "case %s: status has %d bytes, expected %lld\n", k->name,
                        nbytes, stotal);
            /* every byte: data, holes of the vector type, the tail beyond the send, guard */
            for (long long x = 0; x < span + GUARD; x++) {
                long long el = x / rext, off = x % rext;
                long long d = el * k->elem + off;
                unsigned char want = FILL;
                if (x < span && off < k->elem && d < stotal)
                    want = pattern(c, it, d);
                if (buf[x] != want && local_errs++ < 5)
                    fprintf(stderr, "case %s it %d: buffer byte %lld is %d, expected %d\n",
                            k->name, it, x, buf[x], want);
            }
        }
        MPI_Request_free(&req);
        free(buf);
    }
    MPI_Type_free(&rt);
    MPI_Type_free(&et);
    return local_errs;
}

int main(int argc, char **argv)
{
    int provided, size;
    long long piece = -1, stepfile = 0;
    char path[256] = "";
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-piece=", 7) == 0)
            piece = atoll(argv[i] + 7);
        if (strncmp(argv[i], "-stepfile=", 10) == 0)
            stepfile = atoll(argv[i] + 10);
    }
    if (stepfile > 0) {
        /* one file per process: both write it before MPI_Init */
        const char *pr = getenv("PMI_RANK");
        snprintf(path, sizeof(path), "/tmp/part_tag_split.%d.%s.loggp", (int) getpid(),
                 pr ? pr : "x");
        FILE *f = fopen(path, "w");
        if (f == NULL) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        fprintf(f, "transport shm\n0 0.1 0.3 0.2 0.2 1e-4\n%lld 0 1.0 0.8 0.2 1e-4\n"
                "%lld 0 3.0 2.5 3 1e-4\n1048576 0 90 90 3 1e-4\n", stepfile, stepfile + 1);
        fprintf(f, "transport net\n0 1 6 3 6 3e-4\n");
        fclose(f);
        setenv("MPIR_CVAR_PART_LOGGP_FILE", path, 1);
        if (piece < 0)
            piece = stepfile & ~63LL;
    }
    if (piece < 0)
        piece = 8192;   /* the built-in table's limit, 8255, rounded down */
    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "needs 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    split_size = cv_read_int("MPIR_CVAR_PART_TAG_SPLIT_SIZE");
    split_max = cv_read_int("MPIR_CVAR_PART_TAG_SPLIT_MAX");
    if (split_size < 0)
        split_size = piece;     /* the default: from the LogGP table */
    MPI_Comm node;
    int in_node = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rank < 2) {
        int r0 = 0;
        MPI_Group g, wg;
        MPI_Comm_group(node, &g);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_translate_ranks(wg, 1, (int[]) {1 - rank}, g, &r0);
        in_node = r0 != MPI_UNDEFINED;
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
    }
    MPI_Comm_free(&node);
    same_node = in_node;
    long long s = split_size > 0 ? split_size : 8192, m = split_max > 0 ? split_max : 131072;

    const case_t cases[] = {
        {"one S+1", 1, 1, s + 1, 1, 0, 0},
        {"one S", 1, 1, s, 1, 0, 0},
        {"one 2S+3", 1, 1, 2 * s + 3, 1, 0, 0},
        {"one M", 1, 1, m, 1, 0, 0},
        {"one M+1", 1, 1, m + 1, 1, 0, 0},
        {"four 2S", 4, 4, 2 * s, 1, 0, 0},
        {"8 into 2", 8, 2, s / 2 + 8, 1, 0, 0},
        {"3-byte elements", 2, 2, 3 * (s / 3 + 5), 3, 0, 0},
        {"receive vector", 1, 1, 2 * s, 1, 1, 0},
        {"receive larger", 1, 1, 2 * s, 1, 0, 4096},
    };
    for (int c = 0; c < (int) (sizeof(cases) / sizeof(cases[0])); c++) {
        if (rank < 2)
            errs += run_case(c, &cases[c]);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    pv_finalize();
    if (path[0])
        unlink(path);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
