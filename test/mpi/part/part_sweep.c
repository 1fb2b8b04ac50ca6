/*
 * part_sweep.c: randomized sweep over partitioned-communication geometries (2 processes).
 *
 * What it asserts, for each of -n combinations (default 600) drawn from a fixed seed
 * (-seed=N, default 20240611; the seed is printed, and the combination on any failure):
 * - send and receive partition counts drawn independently from 1..64 (mostly different),
 *   element counts from 0 to 64 Ki elements, base type MPI_INT or MPI_DOUBLE and, on each
 *   side independently, a layout among: the basic type, contiguous of 2 or 4, a strided
 *   vector, an indexed type, a struct with holes and lb/extent changed by
 *   MPI_Type_create_resized, and a resized basic type with a trailing hole. Both sides use
 *   the same type signature with different type maps and per-partition counts.
 * - MPIR_CVAR_PART_AGGR_SIZE among {0, 1, 64, 4096, 1 MiB}, written with MPI_T on both
 *   processes before MPI_Psend_init / MPI_Precv_init, must never change results.
 * - 2 or 3 iterations per combination; the sender fills each partition just before readying
 *   it and readies in random order with a random mix of MPI_Pready, MPI_Pready_range and
 *   MPI_Pready_list (also lists mixing non-adjacent runs), calling MPI_Test in between
 *   (which must not complete the request before all partitions are readied).
 * - The receiver clears its buffer to 0xA5 before each iteration and either waits, tests, or
 *   polls MPI_Parrived in random order, comparing the bytes of each partition as soon as it
 *   is reported arrived and checking that a reported partition stays reported. After
 *   completion EVERY byte of the receive buffer is compared, holes included (holes must
 *   still hold 0xA5), and the status carries the sender's rank and the tag.
 *
 * Arguments: -seed=N -n=N (combinations) -first=N (skip to combination N, for debugging)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank;

/* ---- deterministic random numbers --------------------------------------------------------- */

typedef struct {
    unsigned long long s;
} rng_t;

static unsigned int rng_next(rng_t * r)
{
    /* splitmix64 */
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (unsigned int) ((z ^ (z >> 31)) >> 32);
}

static int rng_below(rng_t * r, int n)
{
    return n <= 1 ? 0 : (int) (rng_next(r) % (unsigned int) n);
}

static void shuffle(rng_t * r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = rng_below(r, i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- datatype layouts --------------------------------------------------------------------- */

enum { L_BASIC, L_CONTIG2, L_CONTIG4, L_VECTOR, L_INDEXED, L_STRUCT, L_RESIZED, NLAYOUT };
static const char *layout_names[NLAYOUT] = {
    "basic", "contig2", "contig4", "vector3s2", "indexed121", "struct_resized", "resized_basic"
};

typedef struct {
    MPI_Datatype type;
    int nelem;                  /* base elements per instance */
    int ext;                    /* extent in base elements */
    int offs[4];                /* offsets of the base elements, in base elements */
} layout_t;

static layout_t layouts[2][NLAYOUT];    /* [base: 0 int, 1 double][layout] */
static const MPI_Datatype base_types[2] = { MPI_INT, MPI_DOUBLE };
static const int base_size[2] = { sizeof(int), sizeof(double) };
static const char *base_names[2] = { "MPI_INT", "MPI_DOUBLE" };

static void build_layouts(void)
{
    for (int b = 0; b < 2; b++) {
        MPI_Datatype B = base_types[b], tmp;
        MPI_Aint bs = base_size[b];
        layout_t *l = layouts[b];

        l[L_BASIC].type = B;
        l[L_BASIC].nelem = 1;
        l[L_BASIC].ext = 1;
        l[L_BASIC].offs[0] = 0;

        MPI_Type_contiguous(2, B, &l[L_CONTIG2].type);
        l[L_CONTIG2].nelem = 2;
        l[L_CONTIG2].ext = 2;
        for (int i = 0; i < 2; i++)
            l[L_CONTIG2].offs[i] = i;

        MPI_Type_contiguous(4, B, &l[L_CONTIG4].type);
        l[L_CONTIG4].nelem = 4;
        l[L_CONTIG4].ext = 4;
        for (int i = 0; i < 4; i++)
            l[L_CONTIG4].offs[i] = i;

        /* 3 blocks of 1, stride 2: elements at 0, 2, 4; extent 5 */
        MPI_Type_vector(3, 1, 2, B, &l[L_VECTOR].type);
        l[L_VECTOR].nelem = 3;
        l[L_VECTOR].ext = 5;
        for (int i = 0; i < 3; i++)
            l[L_VECTOR].offs[i] = 2 * i;

        /* blocks {1,2,1} at {0,2,5}: elements at 0, 2, 3, 5; extent 6 */
        {
            int bl[3] = { 1, 2, 1 }, dp[3] = { 0, 2, 5 };
            MPI_Type_indexed(3, bl, dp, B, &l[L_INDEXED].type);
            l[L_INDEXED].nelem = 4;
            l[L_INDEXED].ext = 6;
            l[L_INDEXED].offs[0] = 0;
            l[L_INDEXED].offs[1] = 2;
            l[L_INDEXED].offs[2] = 3;
            l[L_INDEXED].offs[3] = 5;
        }

        /* struct: 2 elements at 1*bs, 1 element at 4*bs, resized to lb 0, extent 6*bs */
        {
            int bl[2] = { 2, 1 };
            MPI_Aint dp[2] = { bs, 4 * bs };
            MPI_Datatype ty[2] = { B, B };
            MPI_Type_create_struct(2, bl, dp, ty, &tmp);
            MPI_Type_create_resized(tmp, 0, 6 * bs, &l[L_STRUCT].type);
            MPI_Type_free(&tmp);
            l[L_STRUCT].nelem = 3;
            l[L_STRUCT].ext = 6;
            l[L_STRUCT].offs[0] = 1;
            l[L_STRUCT].offs[1] = 2;
            l[L_STRUCT].offs[2] = 4;
        }

        /* one element followed by a hole of one element */
        MPI_Type_create_resized(B, 0, 2 * bs, &l[L_RESIZED].type);
        l[L_RESIZED].nelem = 1;
        l[L_RESIZED].ext = 2;
        l[L_RESIZED].offs[0] = 0;

        for (int i = 1; i < NLAYOUT; i++)
            MPI_Type_commit(&l[i].type);
    }
}

static void free_layouts(void)
{
    for (int b = 0; b < 2; b++)
        for (int i = 1; i < NLAYOUT; i++)
            MPI_Type_free(&layouts[b][i].type);
}

/* ---- one combination ---------------------------------------------------------------------- */

typedef struct {
    int base;                   /* 0 int, 1 double */
    int slay, rlay;             /* layouts */
    int spart, rpart;
    long nelem;                 /* base elements transferred */
    long scount, rcount;        /* per-partition counts of the side's datatype */
    int aggr;
    int iters;
} combo_t;

static long lcm(long a, long b)
{
    long x = a, y = b;
    while (y) {
        long t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

static const int part_set[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 24, 31, 32, 48, 64 };
static const int aggr_set[] = { 0, 1, 64, 4096, 1 << 20 };
#define MAX_ELEM 65536L

static void draw_combo(rng_t * r, combo_t * c)
{
    int nps = (int) (sizeof(part_set) / sizeof(part_set[0]));
    for (;;) {
        c->base = rng_below(r, 2);
        c->slay = rng_below(r, NLAYOUT);
        c->rlay = rng_below(r, NLAYOUT);
        c->spart = part_set[rng_below(r, nps)];
        c->rpart = part_set[rng_below(r, nps)];
        c->aggr = aggr_set[rng_below(r, 5)];
        c->iters = 2 + rng_below(r, 2);
        long se = c->spart * (long) layouts[c->base][c->slay].nelem;
        long re = c->rpart * (long) layouts[c->base][c->rlay].nelem;
        long L = lcm(se, re);
        if (L > MAX_ELEM / 2)
            continue;
        long mult;
        int pick = rng_below(r, 20);
        if (pick == 0) {
            mult = 0;   /* zero-size partitions */
        } else {
            /* log-uniform total size between L and MAX_ELEM */
            long maxm = MAX_ELEM / L;
            int bits = 0;
            while ((1L << (bits + 1)) <= maxm)
                bits++;
            long hi = 1L << rng_below(r, bits + 1);
            mult = 1 + rng_below(r, (int) hi);
            if (mult > maxm)
                mult = maxm;
        }
        c->nelem = L * mult;
        c->scount = c->nelem / se;
        c->rcount = c->nelem / re;
        return;
    }
}

static void print_combo(FILE * f, int seed, int idx, const combo_t * c)
{
    fprintf(f, "seed %d combination %d: base %s, send %d x %ld %s, recv %d x %ld %s, "
            "%ld elements, AGGR_SIZE %d, %d iterations\n", seed, idx, base_names[c->base],
            c->spart, c->scount, layout_names[c->slay], c->rpart, c->rcount,
            layout_names[c->rlay], c->nelem, c->aggr, c->iters);
}

/* byte offset of base element j in a buffer of the given layout */
static long elem_offset(const layout_t * l, int bsize, long j)
{
    return ((j / l->nelem) * l->ext + l->offs[j % l->nelem]) * (long) bsize;
}

static void put_value(char *p, int base, int idx, int iter, long j)
{
    unsigned int v = 1u + (((unsigned int) idx * 2654435761u) ^ ((unsigned int) iter * 40503u)
                           ^ (unsigned int) (j * 7)) % 0x3fffffffu;
    if (base == 0) {
        int x = (int) v;
        memcpy(p, &x, sizeof(int));
    } else {
        double x = (double) v + 0.25;
        memcpy(p, &x, sizeof(double));
    }
}

static int set_aggr(int value)
{
    int idx, count, err;
    MPI_T_cvar_handle h;
    static int missing = 0;

    if (missing)
        return 0;
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

/* sender side: fill send partition p */
static void fill_spart(char *buf, const combo_t * c, int idx, int iter, int p)
{
    const layout_t *l = &layouts[c->base][c->slay];
    int bs = base_size[c->base];
    long per = c->scount * l->nelem;
    for (long j = p * per; j < (p + 1) * per; j++)
        put_value(buf + elem_offset(l, bs, j), c->base, idx, iter, j);
}

static int run_sender(const combo_t * c, int idx, int seed, char *buf, long bufbytes)
{
    MPI_Request req;
    int errs = 0;
    const layout_t *l = &layouts[c->base][c->slay];
    int *runs_lo = malloc(c->spart * sizeof(int)), *runs_n = malloc(c->spart * sizeof(int));
    int *order = malloc(c->spart * sizeof(int)), *list = malloc(c->spart * sizeof(int));
    rng_t r = { ((unsigned long long) seed << 20) ^ (unsigned long long) (idx * 977 + 1) };

    MPI_Psend_init(buf, c->spart, (int) c->scount, l->type, 1, idx, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &req);
    for (int it = 0; it < c->iters; it++) {
        int nruns = 0, readied = 0, flag;

        memset(buf, 0x5A, bufbytes);
        /* consecutive runs of partitions, processed in random order */
        for (int p = 0; p < c->spart;) {
            int left = c->spart - p;
            int n = 1 + rng_below(&r, left < 6 ? left : 6);
            if (rng_below(&r, 8) == 0)
                n = left;
            runs_lo[nruns] = p;
            runs_n[nruns++] = n;
            p += n;
        }
        for (int i = 0; i < nruns; i++)
            order[i] = i;
        shuffle(&r, order, nruns);

        MPI_Start(&req);
        for (int i = 0; i < nruns; i++) {
            int lo = runs_lo[order[i]], n = runs_n[order[i]];
            int mode = rng_below(&r, 4);
            for (int p = lo; p < lo + n; p++)
                fill_spart(buf, c, idx, it, p);
            if (mode == 0) {
                for (int q = 0; q < n; q++)
                    list[q] = lo + q;
                shuffle(&r, list, n);
                for (int q = 0; q < n; q++)
                    MPI_Pready(list[q], req);
            } else if (mode == 1) {
                MPI_Pready_range(lo, lo + n - 1, req);
            } else if (mode == 2 || i + 1 == nruns) {
                for (int q = 0; q < n; q++)
                    list[q] = lo + q;
                shuffle(&r, list, n);
                MPI_Pready_list(n, list, req);
            } else {
                /* one list with this run and the next (non-adjacent) run */
                int lo2 = runs_lo[order[i + 1]], n2 = runs_n[order[i + 1]];
                for (int p = lo2; p < lo2 + n2; p++)
                    fill_spart(buf, c, idx, it, p);
                for (int q = 0; q < n; q++)
                    list[q] = lo + q;
                for (int q = 0; q < n2; q++)
                    list[n + q] = lo2 + q;
                shuffle(&r, list, n + n2);
                MPI_Pready_list(n + n2, list, req);
                readied += n2;
                i++;
            }
            readied += n;
            if (readied < c->spart && rng_below(&r, 3) == 0) {
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                if (flag) {
                    fprintf(stderr, "MPI_Test completed the send with %d of %d partitions "
                            "readied\n", readied, c->spart);
                    print_combo(stderr, seed, idx, c);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        if (rng_below(&r, 2)) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            do {
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            } while (!flag);
        }
    }
    MPI_Request_free(&req);
    free(runs_lo);
    free(runs_n);
    free(order);
    free(list);
    return errs;
}

/* compare bytes [lo, hi) of buf with the expected image; report the first difference */
static int compare_bytes(const char *buf, const char *ebuf, long lo, long hi, const char *what,
                         int it, int seed, int idx, const combo_t * c, int *reported)
{
    if (memcmp(buf + lo, ebuf + lo, hi - lo) == 0)
        return 0;
    if (!*reported) {
        long i = lo;
        while (buf[i] == ebuf[i])
            i++;
        fprintf(stderr, "%s: iteration %d: first wrong byte at offset %ld "
                "(0x%02x, expected 0x%02x)\n", what, it, i, (unsigned char) buf[i],
                (unsigned char) ebuf[i]);
        print_combo(stderr, seed, idx, c);
        *reported = 1;
    }
    return 1;
}

static int run_receiver(const combo_t * c, int idx, int seed, char *buf, char *ebuf,
                        long bufbytes)
{
    MPI_Request req;
    MPI_Status st;
    int errs = 0, reported = 0;
    const layout_t *l = &layouts[c->base][c->rlay];
    int bs = base_size[c->base];
    long pbytes = c->rcount * l->ext * (long) bs;       /* bytes spanned by one partition */
    int *order = malloc(c->rpart * sizeof(int)), *seen = malloc(c->rpart * sizeof(int));
    rng_t r = { ((unsigned long long) seed << 21) ^ (unsigned long long) (idx * 1543 + 7) };

    MPI_Precv_init(buf, c->rpart, (int) c->rcount, l->type, 0, idx, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &req);
    for (int it = 0; it < c->iters; it++) {
        int mode = rng_below(&r, 3), flag;

        memset(ebuf, 0xA5, bufbytes);
        for (long j = 0; j < c->nelem; j++)
            put_value(ebuf + elem_offset(l, bs, j), c->base, idx, it, j);
        memset(buf, 0xA5, bufbytes);

        MPI_Start(&req);
        if (mode == 1) {
            int left = c->rpart;
            double t0 = MPI_Wtime();
            for (int p = 0; p < c->rpart; p++) {
                order[p] = p;
                seen[p] = 0;
            }
            shuffle(&r, order, c->rpart);
            while (left > 0) {
                for (int q = 0; q < c->rpart; q++) {
                    int p = order[q];
                    MPI_Parrived(req, p, &flag);
                    if (seen[p] && !flag) {
                        if (!reported) {
                            fprintf(stderr, "MPI_Parrived(%d) became false again\n", p);
                            print_combo(stderr, seed, idx, c);
                            reported = 1;
                        }
                        errs++;
                    }
                    if (flag && !seen[p]) {
                        seen[p] = 1;
                        left--;
                        errs += compare_bytes(buf, ebuf, p * pbytes, (p + 1) * pbytes,
                                              "partition reported by MPI_Parrived", it, seed,
                                              idx, c, &reported);
                    }
                }
                if (left > 0 && MPI_Wtime() - t0 > 20.0) {
                    fprintf(stderr, "%d partitions not arrived after 20 s\n", left);
                    print_combo(stderr, seed, idx, c);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            MPI_Wait(&req, &st);
        } else if (mode == 2) {
            do {
                MPI_Test(&req, &flag, &st);
            } while (!flag);
        } else {
            MPI_Wait(&req, &st);
        }
        errs += compare_bytes(buf, ebuf, 0, bufbytes, "after completion", it, seed, idx, c,
                              &reported);
        if (st.MPI_SOURCE != 0 || st.MPI_TAG != idx) {
            if (!reported) {
                fprintf(stderr, "status source %d tag %d, expected 0 and %d\n",
                        st.MPI_SOURCE, st.MPI_TAG, idx);
                print_combo(stderr, seed, idx, c);
                reported = 1;
            }
            errs++;
        }
    }
    MPI_Request_free(&req);
    free(order);
    free(seen);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, size, provided, seed, ncombo, first;
    char *buf, *ebuf;
    long maxbytes = MAX_ELEM * sizeof(double) * 2 + 64;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MTestArgList *head = MTestArgListCreate(argc, argv);
    seed = MTestArgListGetInt_with_default(head, "seed", 20240611);
    ncombo = MTestArgListGetInt_with_default(head, "n", 600);
    first = MTestArgListGetInt_with_default(head, "first", 0);
    MTestArgListDestroy(head);
    if (rank == 0)
        MTestPrintfMsg(1, "part_sweep: seed %d, %d combinations\n", seed, ncombo);

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    build_layouts();
    buf = malloc(maxbytes);
    ebuf = malloc(maxbytes);

    rng_t r = { (unsigned long long) seed };
    double t0 = MPI_Wtime();
    for (int idx = 0; idx < ncombo; idx++) {
        combo_t c;
        draw_combo(&r, &c);
        if (idx < first)
            continue;
        if (rank < 2) {
            const layout_t *l = &layouts[c.base][rank == 0 ? c.slay : c.rlay];
            long parts = rank == 0 ? c.spart : c.rpart;
            long cnt = rank == 0 ? c.scount : c.rcount;
            long bytes = parts * cnt * l->ext * (long) base_size[c.base];
            int e;
            if (bytes > maxbytes) {
                fprintf(stderr, "internal error: buffer of %ld bytes\n", bytes);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            errs += set_aggr(c.aggr);
            MTestPrintfMsg(2, "combination %d: base %s, send %d x %ld %s, recv %d x %ld %s, "
                           "AGGR_SIZE %d\n", idx, base_names[c.base], c.spart, c.scount,
                           layout_names[c.slay], c.rpart, c.rcount, layout_names[c.rlay], c.aggr);
            if (rank == 0)
                e = run_sender(&c, idx, seed, buf, bytes);
            else
                e = run_receiver(&c, idx, seed, buf, ebuf, bytes);
            errs += e;
        }
    }
    if (rank == 0)
        MTestPrintfMsg(1, "part_sweep: %.2f s\n", MPI_Wtime() - t0);
    if (errs)
        fprintf(stderr, "rank %d: part_sweep seed %d had %d errors\n", rank, seed, errs);

    free(buf);
    free(ebuf);
    free_layouts();
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
