/*
 * part_soak.c: soak test of the partitioned engine (2 processes; issue 12, "Soak and
 * resource leaks"): thousands of init / start / ready / wait / free cycles with random
 * geometry, after which nothing the engine took may still be held and resident memory must
 * have stopped growing.
 *
 * Rounds are drawn from -seed=N (default 20261125; the seed, round and operation are printed
 * with any failure). Rank 0 decides before each round whether to go on (-cycles=N rounds,
 * default 1500; -secs=S seconds, default 90, 0 = no limit) and tells rank 1 in the round's
 * control message, so both ranks stop after the same round. Each round:
 * - 1-6 operations live at once, in both directions, on MPI_COMM_WORLD, a duplicate, a split
 *   with the ranks reversed or (1 round in 8) a duplicate made for the round and freed before
 *   its requests (sometimes while they are still to be started again); tags mostly from 0..3
 *   (several operations on one (communicator, tag) pair in initialisation order) or up to
 *   32767.
 * - Per operation: base type MPI_BYTE, MPI_INT or MPI_DOUBLE; on each side independently the
 *   basic type, a contiguous type of 3 or a vector (2 blocks of 2, stride 3: noncontiguous,
 *   so the tag transport carries it even when the RDMA transport is forced); send and
 *   receive partition counts drawn independently (1..256) with the same total bytes, from 0
 *   bytes (count 0; rarely 0 partitions on one or both sides) up to 1 MiB; AGGR_SIZE 0, 64,
 *   4096 or 65536 written with MPI_T_cvar_write on both ranks before each init call; the info
 *   key mpich_part_thread_partitions absent or a valid value, per side; 1-5 iterations.
 * - Each iteration: the sender clears its buffer, then fills each partition just before
 *   readying it, with values derived from (seed, round, operation, iteration, element), in a
 *   random order across all its live operations, by MPI_Pready, MPI_Pready_range and
 *   MPI_Pready_list (also lists of two non-adjacent runs). In between it calls MPI_Test on a
 *   send (must not complete while a partition is unreadied, also when its receive has 0
 *   partitions and nothing travels: issue 12, the engine completed such a send at MPI_Start;
 *   -strict=0 leaves those sends out) or
 *   MPI_Parrived / MPI_Test on a receive. Then every operation completes, in random order,
 *   by MPI_Wait, an MPI_Test loop, MPI_Parrived polling then MPI_Wait (each partition checked
 *   as soon as it is reported and must stay reported), or all at once by MPI_Waitall / an
 *   MPI_Testall loop. EVERY element
 *   of every receive buffer is compared, the vector's holes and a 64-byte guard after the
 *   buffer must keep their fill, and the status must name the peer, the tag and the byte count.
 * - Sometimes an operation is freed before its peer initialised the matching one, one kind
 *   per round (README section 5): a receive freed first (it consumes the
 *   sender's announcement, in order; the send is then initialised first on its (comm, tag)
 *   and freed unstarted) or a send freed first (the receive matching it is initialised first
 *   on its (comm, tag) and freed unstarted); a send-receive exchange orders the two sides.
 *   Sometimes a pair is initialised and freed without ever being started.
 * At the end, after MPI_Barrier and progress (pv_settle), on both ranks: the levels
 * part_ops_live, part_tag_ids_in_use and part_ofi_mrs_in_use equal their values at the start,
 * and VmRSS (/proc/self/status) at the end exceeds its value after the first third of the
 * rounds (or of -secs) by at most 16 MiB + 10 % (both values printed on failure, and with
 * MPITEST_VERBOSE=1). A round that takes longer than -watchdog=S (default 60) seconds prints
 * where it stood and exits.
 * Runs in every transport mode (MPIR_CVAR_PART_TRANSPORT=ofi with MPIR_CVAR_PART_OFI_PROVIDER
 * shm or "tcp;ofi_rxm"), with MPIR_CVAR_CH4_NUM_VCIS > 1 and MPIR_CVAR_PART_TAG_IDS=0.
 *
 * Long mode (by hand): mpiexec -n 2 ./part_soak -seed=N -cycles=100000 -secs=600
 * (MPITEST_VERBOSE=1 prints the rounds done, both VmRSS values and the engine's levels;
 * MPITEST_VERBOSE=2 also VmRSS every 1000 rounds).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <signal.h>
#include <unistd.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

#define MAX_OPS    10           /* 6 normal + 1 unused + 2 freed-first, and room */
#define MAX_PARTS  256
#define MAX_DATA   (1L << 20)   /* bytes per operation */
#define BUF_BYTES  (MAX_DATA / 4 * 5 + 4096)    /* vector layout: extent 5/4 of its data */
#define GUARD      64
#define CTRL_TAG   7001
#define SYNC_TAG   7002
#define LOOP_SECS  30.0
#define MAX_REPORTS 20

static int seed, cur_round = -1;
static int strict = 1;          /* -strict=0: no MPI_Test of sends whose receive has 0 parts */
static char where[512] = "start";       /* for the watchdog */

/* ---- deterministic random numbers (splitmix64) ------------------------------------------ */

typedef struct {
    unsigned long long s;
} rng_t;

static unsigned int rng_next(rng_t * r)
{
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (unsigned int) ((z ^ (z >> 31)) >> 32);
}

static int rnd(rng_t * r, int n)
{
    return n <= 1 ? 0 : (int) (rng_next(r) % (unsigned int) n);
}

static void shuffle(rng_t * r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(r, i + 1), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- base types and layouts --------------------------------------------------------------- */

static const MPI_Datatype base_type[3] = { MPI_BYTE, MPI_INT, MPI_DOUBLE };
static const int base_size[3] = { 1, sizeof(int), sizeof(double) };
static const char *base_name[3] = { "MPI_BYTE", "MPI_INT", "MPI_DOUBLE" };

enum { L_BASIC, L_CONTIG, L_VECTOR, NLAYOUT };
static const char *layout_name[NLAYOUT] = { "basic", "contig3", "vector2x2s3" };
static const int lay_nel[NLAYOUT] = { 1, 3, 4 };        /* base elements per instance */
static const int lay_ext[NLAYOUT] = { 1, 3, 5 };        /* extent in base elements */
/* slot s of an instance holds element lay_slot[l][s], or -1: a hole */
static const int lay_slot[NLAYOUT][5] = { {0}, {0, 1, 2}, {0, 1, -1, 2, 3} };
static MPI_Datatype lay_type[3][NLAYOUT];

static void build_types(void)
{
    for (int b = 0; b < 3; b++) {
        lay_type[b][L_BASIC] = base_type[b];
        MPI_Type_contiguous(3, base_type[b], &lay_type[b][L_CONTIG]);
        MPI_Type_vector(2, 2, 3, base_type[b], &lay_type[b][L_VECTOR]);
        MPI_Type_commit(&lay_type[b][L_CONTIG]);
        MPI_Type_commit(&lay_type[b][L_VECTOR]);
    }
}

static void free_types(void)
{
    for (int b = 0; b < 3; b++) {
        MPI_Type_free(&lay_type[b][L_CONTIG]);
        MPI_Type_free(&lay_type[b][L_VECTOR]);
    }
}

/* ---- operations --------------------------------------------------------------------------- */

enum { K_NORMAL, K_UNUSED, K_EARLY };   /* K_EARLY: one side freed before the other's init */
enum { FREE_RECV_FIRST, FREE_SEND_FIRST };
enum { C_WORLD, C_DUP, C_SPLIT, C_ROUND, NCOMM };
static const char *comm_name[NCOMM] = { "world", "dup", "split", "round-dup" };
static MPI_Comm comms[NCOMM];
static int crank[NCOMM];        /* this rank in each (split: ranks reversed) */

typedef struct {
    /* drawn identically on both ranks */
    int kind, sender, comm, tag, base, slay, rlay, sparts, rparts, aggr, sthr, rthr, iters;
    long scount, rcount, nelem;
    /* this rank's side */
    int is_send, live, active, done, nseen, late_keep;
    long span;                  /* bytes spanned by this side's buffer */
    unsigned int b;             /* value seed of the current iteration */
    char *buf;
    MPI_Request req;
    MPI_Status st;
    unsigned char seen[MAX_PARTS];
} op_t;

static op_t ops[MAX_OPS];
static int nops, early_kind;
static char *pool[MAX_OPS];

static void describe(const op_t * o, int idx, char *s, size_t n)
{
    snprintf(s, n, "seed %d round %d op %d (%s, rank %d -> %d, comm %s, tag %d, %s, send %d x %ld "
             "%s, recv %d x %ld %s, %ld elements, AGGR_SIZE %d, thread hints %d/%d, %d "
             "iterations)", seed, cur_round, idx,
             o->kind == K_NORMAL ? "normal" : o->kind == K_UNUSED ? "never started" :
             early_kind == FREE_RECV_FIRST ? "receive freed first" : "send freed first",
             o->sender, 1 - o->sender, comm_name[o->comm], o->tag, base_name[o->base],
             o->sparts, o->scount, layout_name[o->slay], o->rparts, o->rcount,
             layout_name[o->rlay], o->nelem, o->aggr, o->sthr, o->rthr, o->iters);
}

static int nreports = 0;

static void report(int idx, const char *fmt, ...)
{
    char d[512];
    va_list ap;
    errs++;
    if (++nreports > MAX_REPORTS) {
        if (nreports == MAX_REPORTS + 1)
            fprintf(stderr, "rank %d: further errors not printed\n", rank);
        return;
    }
    fprintf(stderr, "rank %d: ", rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (idx >= 0) {
        describe(&ops[idx], idx, d, sizeof(d));
        fprintf(stderr, "\n    %s\n", d);
    } else {
        fprintf(stderr, " (seed %d round %d)\n", seed, cur_round);
    }
    fflush(stderr);
}

static void check_rc(int rc, const char *call, int idx)
{
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        report(idx, "%s failed: %s", call, s);
    }
}

#define CK(call, idx) check_rc((call), #call, (idx))

static void set_where(const char *phase, int idx)
{
    char d[400] = "";
    if (idx >= 0)
        describe(&ops[idx], idx, d, sizeof(d));
    snprintf(where, sizeof(where), "rank %d: watchdog: seed %d round %d, %s %s\n", rank, seed,
             cur_round, phase, d);
}

static void watchdog(int sig)
{
    (void) sig;
    if (write(2, where, strlen(where)) < 0) {
        /* nothing more to do */
    }
    _exit(3);
}

/* ---- values ------------------------------------------------------------------------------- */

static unsigned int value_seed(int round, int op, int it)
{
    rng_t r = { ((unsigned long long) (unsigned) seed << 32) ^ ((unsigned long long) round << 8)
            ^ (unsigned long long) (op * 16 + it) };
    return rng_next(&r);
}

static inline unsigned int vmix(unsigned int b, long j)
{
    unsigned int x = (unsigned int) j * 2654435761u + b;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return x;
}

static inline void put_elem(char *p, int base, unsigned int v)
{
    if (base == 0) {
        *p = (char) v;
    } else if (base == 1) {
        int x = (int) v;
        memcpy(p, &x, sizeof(x));
    } else {
        double x = (double) v + 0.5;
        memcpy(p, &x, sizeof(x));
    }
}

/* fill instances [i0, i1) of layout l with the values of b */
static void fill_insts(char *buf, int base, int l, long i0, long i1, unsigned int b)
{
    int bs = base_size[base], nel = lay_nel[l], ext = lay_ext[l];
    for (long i = i0; i < i1; i++)
        for (int s = 0; s < ext; s++)
            if (lay_slot[l][s] >= 0)
                put_elem(buf + (i * ext + s) * bs, base, vmix(b, i * nel + lay_slot[l][s]));
}

/* check instances [i0, i1) of the receive buffer of op idx: elements hold the values of b,
 * holes still 0xA5; reports the first difference */
static int check_insts(int idx, long i0, long i1, const char *what, int it)
{
    op_t *o = &ops[idx];
    int base = o->base, l = o->rlay, bs = base_size[base], nel = lay_nel[l], ext = lay_ext[l];
    char e[8];
    for (long i = i0; i < i1; i++) {
        for (int s = 0; s < ext; s++) {
            const char *p = o->buf + (i * ext + s) * bs;
            int k = lay_slot[l][s];
            if (k >= 0)
                put_elem(e, base, vmix(o->b, i * nel + k));
            else
                memset(e, 0xA5, bs);
            if (memcmp(p, e, bs) != 0) {
                int d = 0;
                while (p[d] == e[d])
                    d++;
                report(idx, "%s, iteration %d: %s: byte %ld (instance %ld, partition %ld) is "
                       "0x%02x, expected 0x%02x", what, it,
                       k >= 0 ? "wrong element" : "hole overwritten", (i * ext + s) * bs + d, i,
                       o->rcount ? i / o->rcount : 0L, (unsigned char) p[d],
                       (unsigned char) e[d]);
                return 1;
            }
        }
    }
    return 0;
}

static void check_partition(int idx, int p, int it)
{
    op_t *o = &ops[idx];
    check_insts(idx, p * o->rcount, (p + 1) * o->rcount, "partition reported by MPI_Parrived",
                it);
}

/* after completion: every element, the holes, the guard, the status */
static void check_recv(int idx, int it)
{
    op_t *o = &ops[idx];
    int cnt = -1, peer = 1 - crank[o->comm];
    check_insts(idx, 0, o->rparts * o->rcount, "after completion", it);
    for (int g = 0; g < GUARD; g++)
        if ((unsigned char) o->buf[o->span + g] != 0xA5) {
            report(idx, "iteration %d: byte %d after the receive buffer overwritten (0x%02x)",
                   it, g, (unsigned char) o->buf[o->span + g]);
            break;
        }
    MPI_Get_count(&o->st, MPI_BYTE, &cnt);
    if (o->st.MPI_SOURCE != peer || o->st.MPI_TAG != o->tag ||
        cnt != o->nelem * base_size[o->base])
        report(idx, "iteration %d: status source %d tag %d count %d bytes, expected %d, %d, %ld",
               it, o->st.MPI_SOURCE, o->st.MPI_TAG, cnt, peer, o->tag,
               o->nelem * base_size[o->base]);
}

/* ---- MPI_T -------------------------------------------------------------------------------- */

static MPI_T_cvar_handle aggr_h;
static int have_aggr = 0;

static void set_aggr(int v)
{
    if (have_aggr && MPI_T_cvar_write(aggr_h, &v) != MPI_SUCCESS)
        report(-1, "MPI_T_cvar_write(MPIR_CVAR_PART_AGGR_SIZE=%d) failed", v);
}

static long read_rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = atol(line + 6);
            break;
        }
    fclose(f);
    return kb;
}

/* ---- drawing a round (the shared generator: same results on both ranks) ------------------- */

static const int part_set[] = { 1, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 64, 100, 256 };
static const int aggr_set[] = { 0, 64, 4096, 65536 };

static long gcdl(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void draw_op(rng_t * g, op_t * o, int kind, int round_comm)
{
    int nps = (int) (sizeof(part_set) / sizeof(part_set[0]));
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->sender = rnd(g, 2);
    o->comm = rnd(g, round_comm ? 4 : 3);
    o->tag = rnd(g, 4) ? rnd(g, 4) : rnd(g, 32768);
    o->base = rnd(g, 3);
    o->aggr = aggr_set[rnd(g, 4)];
    o->iters = 1 + rnd(g, 5);
    for (;;) {
        int zero = rnd(g, 40);
        o->slay = rnd(g, NLAYOUT);
        o->rlay = rnd(g, NLAYOUT);
        o->sparts = part_set[rnd(g, nps)];
        o->rparts = part_set[rnd(g, nps)];
        if (zero == 0 || zero == 1) {
            /* 0 partitions on one side (0 bytes: the other side has count 0) */
            if (zero == 0)
                o->sparts = 0;
            else
                o->rparts = 0;
            if (rnd(g, 3) == 0)
                o->sparts = o->rparts = 0;
            o->nelem = 0;
            o->scount = o->sparts ? 0 : rnd(g, 5);
            o->rcount = o->rparts ? 0 : rnd(g, 5);
            break;
        }
        long se = o->sparts * (long) lay_nel[o->slay];
        long re = o->rparts * (long) lay_nel[o->rlay];
        long L = se / gcdl(se, re) * re;
        long maxm = MAX_DATA / base_size[o->base] / L;
        if (maxm < 1)
            continue;
        long mult;
        if (rnd(g, 12) == 0) {
            mult = 0;   /* zero bytes, partitions > 0 */
        } else {
            int bits = 0;
            while ((2L << bits) <= maxm)
                bits++;
            long hi = 1L << rnd(g, bits + 1);
            mult = 1 + rnd(g, (int) hi);
            if (mult > maxm)
                mult = maxm;
        }
        o->nelem = L * mult;
        o->scount = o->nelem / se;
        o->rcount = o->nelem / re;
        break;
    }
    o->sthr = (o->sparts > 0 && rnd(g, 3) == 0) ? 1 + rnd(g, o->sparts) : 0;
    o->rthr = (o->rparts > 0 && rnd(g, 3) == 0) ? 1 + rnd(g, o->rparts) : 0;
}

/* ---- init / free -------------------------------------------------------------------------- */

static void op_init(int idx)
{
    op_t *o = &ops[idx];
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm comm = comms[o->comm];
    int thr = o->is_send ? o->sthr : o->rthr;
    int peer = 1 - crank[o->comm];

    set_where("init", idx);
    set_aggr(o->aggr);
    if (thr > 0) {
        char v[16];
        snprintf(v, sizeof(v), "%d", thr);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_thread_partitions", v);
    }
    if (o->is_send)
        CK(MPI_Psend_init(o->buf, o->sparts, (int) o->scount, lay_type[o->base][o->slay], peer,
                          o->tag, comm, info, &o->req), idx);
    else
        CK(MPI_Precv_init(o->buf, o->rparts, (int) o->rcount, lay_type[o->base][o->rlay], peer,
                          o->tag, comm, info, &o->req), idx);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    o->live = 1;
}

static void op_free(int idx)
{
    op_t *o = &ops[idx];
    set_where("free", idx);
    CK(MPI_Request_free(&o->req), idx);
    if (o->req != MPI_REQUEST_NULL)
        report(idx, "MPI_Request_free left the handle set");
    o->live = 0;
}

/* ---- one iteration of every operation that has one ---------------------------------------- */

static long n_iters = 0, n_ops = 0;

/* poll once: Parrived on an unseen partition of a receive (checked when arrived), or MPI_Test */
static void probe(rng_t * l, int idx, int it)
{
    op_t *o = &ops[idx];
    int flag = 0;
    if (!o->is_send && o->rparts > 0 && rnd(l, 3)) {
        int p = rnd(l, o->rparts);
        CK(MPI_Parrived(o->req, p, &flag), idx);
        if (flag && !o->seen[p]) {
            o->seen[p] = 1;
            o->nseen++;
            check_partition(idx, p, it);
        } else if (!flag && o->seen[p]) {
            report(idx, "iteration %d: MPI_Parrived(%d) became false again", it, p);
        }
    } else if (!o->is_send) {
        CK(MPI_Test(&o->req, &flag, &o->st), idx);
        if (flag) {
            o->done = 1;
            check_recv(idx, it);
        }
    }
}

static void complete_one(rng_t * l, int idx, int it)
{
    op_t *o = &ops[idx];
    int method = rnd(l, o->is_send ? 2 : 3), flag = 0;
    double t0 = MPI_Wtime();

    set_where(method == 0 ? "MPI_Wait" : method == 1 ? "MPI_Test loop" : "MPI_Parrived loop",
              idx);
    if (method == 2 && o->rparts > 0) {
        int order[MAX_PARTS];
        for (int p = 0; p < o->rparts; p++)
            order[p] = p;
        shuffle(l, order, o->rparts);
        while (o->nseen < o->rparts) {
            for (int q = 0; q < o->rparts; q++) {
                int p = order[q];
                CK(MPI_Parrived(o->req, p, &flag), idx);
                if (flag && !o->seen[p]) {
                    o->seen[p] = 1;
                    o->nseen++;
                    check_partition(idx, p, it);
                } else if (!flag && o->seen[p]) {
                    report(idx, "iteration %d: MPI_Parrived(%d) became false again", it, p);
                    o->seen[p] = 0;
                    o->nseen--;
                }
            }
            if (o->nseen < o->rparts && MPI_Wtime() - t0 > LOOP_SECS) {
                report(idx, "iteration %d: %d of %d partitions not arrived after %.0f s", it,
                       o->rparts - o->nseen, o->rparts, LOOP_SECS);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        method = 0;
    }
    if (method == 1) {
        while (!flag) {
            CK(MPI_Test(&o->req, &flag, &o->st), idx);
            if (!flag && MPI_Wtime() - t0 > LOOP_SECS) {
                report(idx, "iteration %d: not complete after %.0f s of MPI_Test", it, LOOP_SECS);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    } else {
        CK(MPI_Wait(&o->req, &o->st), idx);
    }
    o->done = 1;
    if (!o->is_send)
        check_recv(idx, it);
}

typedef struct {
    int op, lo, n, mode, used;
} action_t;

static void step(rng_t * l, int it)
{
    int act[MAX_OPS], nact = 0, flag;
    static action_t acts[MAX_OPS * MAX_PARTS];
    int nacts = 0, order[MAX_OPS * MAX_PARTS], list[2 * MAX_PARTS];
    MPI_Request reqs[MAX_OPS];

    for (int i = 0; i < nops; i++) {
        op_t *o = &ops[i];
        if (o->kind != K_NORMAL || o->iters <= it)
            continue;
        act[nact++] = i;
        o->b = value_seed(cur_round, i, it);
        o->done = 0;
        o->nseen = 0;
        memset(o->seen, 0, sizeof(o->seen));
        if (o->is_send) {
            memset(o->buf, 0x5A, o->span);
        } else {
            memset(o->buf, 0xA5, o->span + GUARD);
            o->st.MPI_SOURCE = o->st.MPI_TAG = -1;
        }
    }
    if (nact == 0)
        return;
    n_iters += nact;

    /* start: all at once or one by one, in random order */
    set_where("MPI_Start", -1);
    shuffle(l, act, nact);
    if (rnd(l, 2)) {
        for (int a = 0; a < nact; a++)
            reqs[a] = ops[act[a]].req;
        CK(MPI_Startall(nact, reqs), -1);
    } else {
        for (int a = 0; a < nact; a++)
            CK(MPI_Start(&ops[act[a]].req), act[a]);
    }

    /* ready: runs of partitions of every send, interleaved across the operations */
    for (int a = 0; a < nact; a++) {
        op_t *o = &ops[act[a]];
        if (!o->is_send)
            continue;
        for (int p = 0; p < o->sparts;) {
            int left = o->sparts - p, n = 1 + rnd(l, left < 6 ? left : 6);
            if (rnd(l, 8) == 0)
                n = left;
            acts[nacts].op = act[a];
            acts[nacts].lo = p;
            acts[nacts].n = n;
            acts[nacts].mode = rnd(l, 4);
            acts[nacts].used = 0;
            nacts++;
            p += n;
        }
    }
    for (int i = 0; i < nacts; i++)
        order[i] = i;
    shuffle(l, order, nacts);
    {
        int unready[MAX_OPS];
        for (int i = 0; i < nops; i++)
            unready[i] = ops[i].sparts;
        for (int i = 0; i < nacts; i++) {
            action_t *x = &acts[order[i]], *y = NULL;
            op_t *o = &ops[x->op];
            int n = 0, mode = x->mode;
            if (x->used)
                continue;
            x->used = 1;
            set_where("MPI_Pready*", x->op);
            fill_insts(o->buf, o->base, o->slay, x->lo * o->scount, (x->lo + x->n) * o->scount,
                       o->b);
            if (mode == 3) {
                /* one list with a later run of the same operation (not adjacent in general) */
                for (int k = i + 1; k < nacts && !y; k++)
                    if (!acts[order[k]].used && acts[order[k]].op == x->op)
                        y = &acts[order[k]];
                if (y) {
                    y->used = 1;
                    fill_insts(o->buf, o->base, o->slay, y->lo * o->scount,
                               (y->lo + y->n) * o->scount, o->b);
                } else {
                    mode = 2;
                }
            }
            if (mode == 0) {
                for (int q = 0; q < x->n; q++)
                    list[q] = x->lo + q;
                shuffle(l, list, x->n);
                for (int q = 0; q < x->n; q++)
                    CK(MPI_Pready(list[q], o->req), x->op);
            } else if (mode == 1) {
                CK(MPI_Pready_range(x->lo, x->lo + x->n - 1, o->req), x->op);
            } else {
                for (int q = 0; q < x->n; q++)
                    list[n++] = x->lo + q;
                if (y)
                    for (int q = 0; q < y->n; q++)
                        list[n++] = y->lo + q;
                shuffle(l, list, n);
                CK(MPI_Pready_list(n, list, o->req), x->op);
            }
            unready[x->op] -= x->n + (y ? y->n : 0);
            if (rnd(l, 4) == 0) {
                /* look at a random live operation of this step meanwhile */
                int j = act[rnd(l, nact)];
                op_t *p = &ops[j];
                if (p->done)
                    continue;
                if (p->is_send && unready[j] > 0 && (p->rparts > 0 || strict)) {
                    set_where("MPI_Test on a partly readied send", j);
                    CK(MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE), j);
                    if (flag) {
                        report(j, "iteration %d: MPI_Test completed a send with %d of %d "
                               "partitions unreadied", it, unready[j], p->sparts);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                } else if (!p->is_send) {
                    set_where("probe of a receive", j);
                    probe(l, j, it);
                }
            }
        }
    }

    /* complete everything: one by one in random order, or all at once */
    shuffle(l, act, nact);
    if (rnd(l, 6) == 0) {
        MPI_Status sts[MAX_OPS];
        int idx[MAX_OPS], n = 0;
        for (int a = 0; a < nact; a++)
            if (!ops[act[a]].done) {
                idx[n] = act[a];
                reqs[n++] = ops[act[a]].req;
            }
        if (rnd(l, 2)) {
            set_where("MPI_Waitall", -1);
            CK(MPI_Waitall(n, reqs, sts), -1);
        } else {
            double t0 = MPI_Wtime();
            set_where("MPI_Testall loop", -1);
            flag = 0;
            while (!flag) {
                CK(MPI_Testall(n, reqs, &flag, sts), -1);
                if (!flag && MPI_Wtime() - t0 > LOOP_SECS) {
                    report(-1, "iteration %d: MPI_Testall not complete after %.0f s", it,
                           LOOP_SECS);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        for (int k = 0; k < n; k++) {
            op_t *o = &ops[idx[k]];
            if (reqs[k] != o->req)
                report(idx[k], "MPI_Waitall/Testall changed a persistent request handle");
            o->st = sts[k];
            o->done = 1;
            if (!o->is_send)
                check_recv(idx[k], it);
        }
    } else {
        for (int a = 0; a < nact; a++)
            if (!ops[act[a]].done)
                complete_one(l, act[a], it);
    }
}

/* ---- one round ---------------------------------------------------------------------------- */

static void round_run(int round)
{
    rng_t g = { ((unsigned long long) (unsigned) seed << 24) ^ (unsigned long long) round };
    rng_t l = { ((unsigned long long) (unsigned) seed << 25) ^ ((unsigned long long) round << 1)
            ^ (unsigned long long) rank ^ 0x5bd1e995ULL };
    int nnormal, nunused, nearly, round_comm, comm_free_at, maxit = 0, idx[MAX_OPS];

    rng_next(&g);
    nnormal = 1 + rnd(&g, 6);
    nunused = rnd(&g, 4) == 0;
    nearly = rnd(&g, 3) == 0 ? 1 + rnd(&g, 2) : 0;
    early_kind = rnd(&g, 2);
    round_comm = rnd(&g, 8) == 0;
    nops = nnormal + nunused + nearly;
    for (int i = 0; i < nops; i++) {
        /* the kinds at random positions of the list */
        int kind = K_NORMAL;
        int r = rnd(&g, nops - i);
        if (r < nunused) {
            kind = K_UNUSED;
            nunused--;
        } else if (r < nunused + nearly) {
            kind = K_EARLY;
            nearly--;
        }
        draw_op(&g, &ops[i], kind, round_comm);
        if (kind == K_NORMAL && ops[i].iters > maxit)
            maxit = ops[i].iters;
    }
    /* the round's duplicate is freed after the inits, after some iteration, or last */
    comm_free_at = rnd(&g, maxit + 2);

    for (int i = 0; i < nops; i++) {
        op_t *o = &ops[i];
        o->is_send = o->sender == rank;
        o->buf = pool[i];
        if (o->is_send)
            o->span = o->sparts * o->scount * lay_ext[o->slay] * (long) base_size[o->base];
        else
            o->span = o->rparts * o->rcount * lay_ext[o->rlay] * (long) base_size[o->base];
        if (o->span + GUARD > BUF_BYTES) {
            fprintf(stderr, "internal error: %ld bytes\n", o->span);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        o->late_keep = rnd(&l, 2);
        o->live = 0;
        o->req = MPI_REQUEST_NULL;
    }

    if (round_comm) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[C_ROUND]);
        MPI_Comm_set_errhandler(comms[C_ROUND], MPI_ERRORS_RETURN);
    }

    /* freed first: the early side inits and frees before the exchange below */
    for (int i = 0; i < nops; i++) {
        op_t *o = &ops[i];
        if (o->kind == K_EARLY && o->is_send == (early_kind == FREE_SEND_FIRST)) {
            op_init(i);
            op_free(i);
        }
    }
    {
        int a = round, b = -1;
        set_where("exchange after the early frees", -1);
        MPI_Sendrecv(&a, 1, MPI_INT, 1 - rank, SYNC_TAG, &b, 1, MPI_INT, 1 - rank, SYNC_TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (b != round)
            report(-1, "exchange: peer is in round %d", b);
    }
    /* the late sides first on their (comm, tag), then the others in list order */
    for (int i = 0; i < nops; i++) {
        op_t *o = &ops[i];
        if (o->kind == K_EARLY && o->is_send != (early_kind == FREE_SEND_FIRST)) {
            op_init(i);
            if (!o->late_keep)
                op_free(i);
        }
    }
    for (int i = 0; i < nops; i++)
        if (ops[i].kind != K_EARLY)
            op_init(i);
    n_ops += nops;

    if (round_comm && comm_free_at == 0)
        MPI_Comm_free(&comms[C_ROUND]);
    for (int it = 0; it < maxit; it++) {
        step(&l, it);
        if (round_comm && comm_free_at == it + 1)
            MPI_Comm_free(&comms[C_ROUND]);
    }

    /* free what is left, in random order */
    for (int i = 0; i < nops; i++)
        idx[i] = i;
    shuffle(&l, idx, nops);
    for (int i = 0; i < nops; i++)
        if (ops[idx[i]].live)
            op_free(idx[i]);
    if (round_comm && comms[C_ROUND] != MPI_COMM_NULL)
        MPI_Comm_free(&comms[C_ROUND]);
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char *argv[])
{
    int size, provided, cycles, wd, round, marked = 0, mark_round = -1;
    double secs, t0;
    long rss_mark = -1, rss_end;
    unsigned long long live0, ids0, mrs0, live1, ids1, mrs1;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    seed = MTestArgListGetInt_with_default(head, "seed", 20261125);
    cycles = MTestArgListGetInt_with_default(head, "cycles", 1500);
    secs = MTestArgListGetInt_with_default(head, "secs", 90);
    wd = MTestArgListGetInt_with_default(head, "watchdog", 60);
    strict = MTestArgListGetInt_with_default(head, "strict", 1);
    MTestArgListDestroy(head);

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    {
        int i, cnt;
        if (MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &i) == MPI_SUCCESS &&
            MPI_T_cvar_handle_alloc(i, NULL, &aggr_h, &cnt) == MPI_SUCCESS)
            have_aggr = 1;
        else
            report(-1, "MPIR_CVAR_PART_AGGR_SIZE not found");
    }
    build_types();
    comms[C_WORLD] = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[C_DUP]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[C_SPLIT]);
    comms[C_ROUND] = MPI_COMM_NULL;
    for (int c = 0; c < NCOMM; c++)
        crank[c] = rank;
    MPI_Comm_rank(comms[C_SPLIT], &crank[C_SPLIT]);
    for (int i = 0; i < MAX_OPS; i++) {
        pool[i] = malloc(BUF_BYTES);
        if (!pool[i]) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(pool[i], 0, BUF_BYTES);
    }
    live0 = pv_read("part_ops_live");
    ids0 = pv_read("part_tag_ids_in_use");
    mrs0 = pv_read(RDMA_PV("mrs_in_use"));
    if (wd > 0)
        signal(SIGALRM, watchdog);
    if (rank == 0)
        MTestPrintfMsg(1, "part_soak: seed %d, at most %d rounds, %.0f s\n", seed, cycles, secs);

    t0 = MPI_Wtime();
    for (round = 0;; round++) {
        int ctrl[3];
        cur_round = round;
        set_where("control message", -1);
        if (rank == 0) {
            double el = MPI_Wtime() - t0;
            ctrl[0] = round;
            ctrl[1] = round >= cycles || (secs > 0 && el >= secs);
            ctrl[2] = !marked && (round >= cycles / 3 || (secs > 0 && el >= secs / 3));
            MPI_Send(ctrl, 3, MPI_INT, 1, CTRL_TAG, MPI_COMM_WORLD);
        } else {
            MPI_Recv(ctrl, 3, MPI_INT, 0, CTRL_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ctrl[0] != round) {
                report(-1, "control message for round %d", ctrl[0]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        if (ctrl[1])
            break;
        if (ctrl[2]) {
            marked = 1;
            mark_round = round;
            rss_mark = read_rss_kb();
        }
        if (round % 1000 == 0)
            MTestPrintfMsg(2, "rank %d: round %d, %.1f s, VmRSS %ld kB, part_ops_live %llu\n",
                           rank, round, MPI_Wtime() - t0, read_rss_kb(),
                           pv_read("part_ops_live"));
        if (wd > 0)
            alarm(wd);
        round_run(round);
    }
    if (wd > 0)
        alarm(0);
    double el = MPI_Wtime() - t0;

    MPI_Barrier(MPI_COMM_WORLD);
    live1 = pv_settle("part_ops_live", live0, 10.0);
    ids1 = pv_settle("part_tag_ids_in_use", ids0, 10.0);
    mrs1 = pv_settle(RDMA_PV("mrs_in_use"), mrs0, 10.0);
    rss_end = read_rss_kb();
    cur_round = round;
    if (live1 != live0)
        report(-1, "part_ops_live %llu at the end, %llu at the start", live1, live0);
    if (ids1 != ids0)
        report(-1, "part_tag_ids_in_use %llu at the end, %llu at the start", ids1, ids0);
    if (mrs1 != mrs0)
        report(-1, "%s %llu at the end, %llu at the start", RDMA_PV("mrs_in_use"), mrs1, mrs0);
    if (marked && rss_mark > 0 && rss_end > 0) {
        long bound = 16 * 1024 + rss_mark / 10;
        if (rss_end - rss_mark > bound)
            report(-1, "VmRSS grew from %ld kB (after round %d) to %ld kB (after %d rounds): "
                   "more than %ld kB", rss_mark, mark_round, rss_end, round, bound);
        MTestPrintfMsg(1, "rank %d: VmRSS %ld kB after round %d, %ld kB at the end (%+ld kB)\n",
                       rank, rss_mark, mark_round, rss_end, rss_end - rss_mark);
    } else if (marked) {
        report(-1, "VmRSS unreadable (%ld, %ld)", rss_mark, rss_end);
    }
    MTestPrintfMsg(1, "rank %d: %d rounds, %ld operations, %ld iterations in %.2f s; "
                   "part_ofi_ops %llu, part_cts_path_ops %llu, part_ops_live %llu, "
                   "part_tag_ids_in_use %llu, part_ofi_mrs_in_use %llu\n", rank, round, n_ops,
                   n_iters, el, pv_read(RDMA_PV("ops")), pv_read("part_cts_path_ops"), live1,
                   ids1, mrs1);
    if (errs)
        fprintf(stderr, "rank %d: part_soak seed %d had %d errors\n", rank, seed, errs);

    for (int i = 0; i < MAX_OPS; i++)
        free(pool[i]);
    MPI_Comm_free(&comms[C_DUP]);
    MPI_Comm_free(&comms[C_SPLIT]);
    free_types();
    if (have_aggr)
        MPI_T_cvar_handle_free(&aggr_h);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
