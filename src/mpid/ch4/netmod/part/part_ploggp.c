/*
 * part_ploggp.c: LogGP tables, the PLogGP completion-time model and the merge-factor
 * chooser (see part_ploggp.h). Pure logic, no MPICH headers; unit-tested in
 * unittest/test_part_ploggp.cpp.
 *
 * The model
 * ---------
 * Problem: S bytes, U user partitions on the sending side, n gcd-messages of S/n bytes each
 * (part_plan.c). Merging k consecutive gcd-messages gives T = ceil(n/k) wire messages:
 * T-1 full ones of b = k*S/n bytes and a last one of b_l = (n - (T-1)*k)*S/n bytes.
 * P(x) = {L, o_s, o_r, g, G} is the segment for a message of x bytes; G*(x-1) means
 * G*max(x-1, 0). Each term below uses the parameters of the message it concerns.
 *
 * Ready time r_m of wire message m = the MPI_Pready time of its last user partition:
 *   many-before-one  every partition is ready at 0 except one laggard, ready at delta; the
 *                    laggard is any partition with equal probability, so the prediction is
 *                    the mean over "the laggard is in message j" (j's ready time is delta,
 *                    the others' 0): a message holding more partitions lags more often
 *   uniform          partition p is ready at delta*p/(U-1) (U = 1: at delta); with
 *                    q = k*U/n partitions per full message r_m = delta*((m+1)*q - 1)/(U-1),
 *                    and r_{T-1} = delta
 *
 * One injection engine at the sender, one link and one receive engine at the receiver,
 * messages in ready order (LogGP applied to partitions, as PLogGP does):
 *   inj_m  = max(r_m, inj_{m-1} + max(g, o_s) + G*(b_{m-1} - 1))     injection start
 *   arr_m  = max(inj_m + o_s + G*(b_m - 1) + L,                        arrival
 *                arr_{m-1} + max(g, o_r) + G*(b_m - 1))                (receiving link busy)
 *   done   = max_m (arr_m + o_r)                                       receiver overhead
 *   pred(k) = done + sum_m c(b_m)            (many-before-one: mean of done over j)
 * For two k-byte messages both ready at 0 (c = 0) this is PLogGP's two-partition example
 * o_s + 2G(k-1) + max(g, o_s, o_r) + L + o_r. Successive arrivals are at least o_r apart,
 * so the receiver spends T*o_r after the first arrival, as it must.
 * Evaluated in O(1) per candidate: the messages form at most three trains of equal messages
 * with arithmetic ready times r0 + i*step, and in such a train inj_i and arr_i are maxima of
 * functions linear in i, so the last message's values come from the train's two ends.
 *
 * Why T grows like sqrt(S), and c
 * -------------------------------
 * With the laggard at delta and the early messages done before delta, only the message
 * with the laggard is on the critical path: done ~ delta + o_s + G*S/T + L + o_r (even
 * split), which falls with T. A plain LogGP timeline therefore always picks T = n when
 * delta is large (the naive model), whereas the PLogGP optimum the paper reports
 * (Temucin et al., Table I: InfiniBand EDR, 32 partitions, delta = 4 ms: T = 1 below
 * 256 KiB, 2 at 512 KiB-1 MiB, 4 at 2-4 MiB, 8 at 8-16 MiB, 16 at 32-64 MiB) grows like
 * sqrt(S): some per-message cost is not hidden behind delta. c is that cost: the work per
 * wire message that in practice happens after the last MPI_Pready -- completing each
 * message's request in the waiting thread's progress (MPI_Wait after the parallel region,
 * no asynchronous progress), the rendezvous handshake of large messages, which needs the
 * receiver's progress. Then
 *   pred ~ delta + G*S/T + T*c   is smallest at   T* = sqrt(S*G/c),
 * and 2T beats T from S = 2*T^2*c/G on. With G = 1/12000 us/B and c = 16 us the switches
 * fall at 375 KiB (1->2), 1.5 MiB, 5.9 MiB, 23 MiB and 94 MiB (16->32): Table I's
 * brackets. Default c (msg_cost < 0) = o_s + o_r of the message (each side's per-message
 * work, paid once more). With delta = 0 any c > 0 makes T = 1 best: splitting buys nothing.
 * When the early messages cannot all leave before delta (S*G > delta, e.g. 64 MiB at
 * 12 GB/s and 4 ms), the link is the bottleneck and the model prefers the smallest T whose
 * early part covers delta (4 at 64 MiB there, where Table I, ignoring this, has 16).
 *
 * The observed chooser (the tag transport's re-planning, below) differs in three ways: it
 * reads the table's rows as measured points (MPIDI_PART_loggp_at: L, o_s, o_r, g, S linear
 * between rows); past the table's rendezvous switch its default c is o_s + o_r -
 * 2G(b-1), the handshake, twice on a node's table (obs_msg_cost); and each message's S
 * (the sender's time computation does not hide) delays the later messages' ready times,
 * with the transfer counted once where the sender moves it (sender_moves). The a-priori
 * choosers (MPIDI_PART_ploggp_choose and _choose_aligned, which sizes the timer's groups on
 * the RDMA transport) keep the segments and the whole o_s + o_r, and read no S: the same
 * change of c there made the timer merge across threads on RDMA (17 writes per iteration
 * instead of 6-10, 2026-12-05-sweep).
 *
 * Built-in tables
 * ---------------
 * Measured with tools/part-calibrate on the development machine (2 cores, Debian 12,
 * Debian's stock MPICH 4.0.2 over UCX); date and commands at the tables.
 */
#include <fcntl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "part_ploggp.h"

/* ---- built-in tables -------------------------------------------------------------------- */

/* Measured 2026-11-26 on the development machine (2-core AMD EPYC VM, Debian 12, Debian's
 * MPICH 4.0.2 ch4:ucx, 1-minute load average 1.2-1.7, the VM in its slower state) with
 *   make -C tools/part-calibrate MPICXX=mpicxx.mpich
 *   mpiexec.mpich -n 2 tools/part-calibrate/part_calibrate -o shm.loggp -t shm
 *   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self \
 *     mpiexec.mpich -n 2 tools/part-calibrate/part_calibrate -o tcp.loggp -t tcp
 * three runs each (n = 10, 25 rounds each); every value is the median of the three runs,
 * over the sizes all three have. Columns: min_bytes, L, o_s, o_r, g, G, S (us, us/byte).
 * These are MPI-level (blocking MPI_Send/MPI_Recv) values, as Netgauge's MPI module gives:
 * from the protocol switch on (rendezvous) o_s and o_r include the transfer itself, and L
 * comes out as 0 because the measured o_s + o_r exceed half the round trip. Run the tool
 * on the target machine for real use.
 * The tables of 2026-11-25 (sizes 4 KiB, then 16 KiB) missed where the protocol changes:
 * every message below 16 KiB looked eager, and over TCP the model merged 1 KiB partitions
 * into 8-15 KiB messages that each paid a rendezvous (4 x 32 at 128 KiB: 11 messages, 2.3x
 * the time of one). The tool now locates such steps (part_calibrate.cpp, refine_switches):
 * 8256 bytes on shared memory (8255: o_s + o_r 0.8-2.9 us, 8256: 6.7-7.8 us) and 8192 over
 * TCP (8191: 9-13 us, 8192: 90-118 us), the same in all three runs.
 * The seventh value, S (the sender's time per message that computation does not hide:
 * MPI_Isend, 2 PRTT(1,0,s) without MPI calls, MPI_Wait), was added on 2026-12-06 with the
 * tool of that day at these tables' sizes (-R -s ...), three runs each, the median; this
 * project's MPICH 4.0.2 ch4:ucx, whose MPI_Isend is stock MPICH's, 1-minute load average
 * 1.5-1.7 (bench/results/2026-12-06-sender-time). */
static const MPIDI_PART_loggp_t builtin_shm = {
    13, "shm", {
        {8, 0.0344, 0.3341, 0.2183, 0.2583, 0.0001859, 0.36},
        {16, 0.0075, 0.3587, 0.2226, 0.2583, 0.0001859, 0.361},
        {64, 0.0245, 0.3332, 0.239, 0.2583, 0.0001859, 0.381},
        {256, 0, 0.378, 0.3081, 0.2583, 0.0001859, 0.391},
        {1024, 0, 0.5444, 0.3919, 0.2583, 0.0001859, 0.391},
        {4096, 0, 0.9772, 0.7292, 0.2583, 0.0001859, 0.402},
        {8255, 0, 1.77, 1.143, 0.2583, 0.0001859, 0.822},
        {8256, 0, 4.175, 3.605, 3.238, 9.598e-05, 0.841},
        {16384, 0, 4.885, 4.331, 3.238, 9.598e-05, 1.01},
        {65536, 0, 9.241, 8.61, 3.238, 9.598e-05, 0.772},
        {262144, 0, 27.54, 27.44, 3.238, 9.598e-05, 1.2},
        {1048576, 0, 107, 108.2, 3.238, 9.598e-05, 1.16},
        {4194304, 0, 459.4, 477.6, 3.238, 9.598e-05, 1.52}
    },
    1
};

/* TCP over loopback through UCX (same machine, date and method as above) */
static const MPIDI_PART_loggp_t builtin_tcp = {
    13, "tcp", {
        {8, 0, 6.125, 3.13, 6.696, 0.0002812, 5.03},
        {16, 0, 6.191, 3.109, 6.696, 0.0002812, 4.9},
        {64, 0, 6.193, 3.132, 6.696, 0.0002812, 4.95},
        {256, 0, 6.957, 1.451, 6.696, 0.0002812, 4.91},
        {1024, 0, 7.171, 3.001, 6.696, 0.0002812, 5.02},
        {4096, 0, 8.167, 3.337, 6.696, 0.0002812, 5.49},
        {8191, 0, 7.929, 4.27, 6.696, 0.0002812, 6.04},
        {8192, 0, 60.65, 56.95, 55.42, 0.0002522, 67.5},
        {16384, 0, 60.82, 58.17, 55.42, 0.0002522, 64.5},
        {65536, 0, 70.48, 67.08, 55.42, 0.0002522, 74.5},
        {262144, 0, 120.3, 115.5, 55.42, 0.0002522, 107},
        {1048576, 0, 329.3, 328.3, 55.42, 0.0002538, 210},
        {4194304, 0, 1161, 1084, 55.42, 0.0002538, 1030}
    },
    0
};

/* RDMA writes with immediate data (the RDMA transport's wire message), measured
 * 2026-11-26 on the same machine (1-minute load average 0.9-1.9) with
 *   make -C tools/part-calibrate MPICXX=_install/bin/mpicxx
 *   mpiexec -n 2 tools/part-calibrate/part_calibrate -o rshm.loggp -t rdma-shm -f shm
 *   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self mpiexec -n 2 \
 *     tools/part-calibrate/part_calibrate -o rnet.loggp -t rdma-net -f 'tcp;ofi_rxm'
 * three runs each (n = 10, 25 rounds), the median of the three per value over the sizes
 * all three have, as above. Each message is one fi_writedata into the partner's buffer
 * (libfabric 1.17), o_r the time to read its completion. libfabric's shm copies a write of
 * up to 4096 bytes through its inject buffer and a larger one by a system call on the
 * receiving side: the tool found the step between 4096 and 4097 bytes in all three runs
 * (o_s + o_r 0.46-1.30 -> 2.40-2.54 us). Over tcp;ofi_rxm it found a step at a different
 * size above 200 KiB in each run (noise; not kept: not in all three). No S (0): only the
 * tag transport's observed chooser reads it, the RDMA transport never re-plans from
 * observations. */
static const MPIDI_PART_loggp_t builtin_rdma_shm = {
    12, "rdma-shm", {
        {8, 0, 0.5469, 0.2704, 0.3706, 0.002639, 0},
        {16, 0, 0.5636, 0.2893, 0.3706, 0.002639, 0},
        {64, 0.0129, 0.4737, 0.2793, 0.4173, 0.0002991, 0},
        {256, 0, 0.4673, 0.3406, 0.4173, 0.0002991, 0},
        {1024, 0, 0.4552, 0.3549, 0.5386, 8.482e-05, 0},
        {4096, 0, 0.7357, 0.5509, 0.2023, 8.482e-05, 0},
        {4097, 0.275, 0.6222, 1.814, 1.588, 6.194e-05, 0},
        {16384, 0, 0.5933, 2.508, 1.62, 6.13e-05, 0},
        {65536, 0, 0.6118, 5.345, 1.62, 6.13e-05, 0},
        {262144, 0, 0.537, 16.54, 1.62, 6.13e-05, 0},
        {1048576, 0, 1.281, 67.81, 1.62, 6.13e-05, 0},
        {4194304, 0, 23.65, 340.3, 1.62, 6.13e-05, 0}
    },
    1
};

static const MPIDI_PART_loggp_t builtin_rdma_tcp = {
    11, "rdma-net", {
        {8, 0, 5.005, 3.386, 5.294, 0.0001041, 0},
        {16, 0, 5.047, 3.348, 5.294, 0.0001041, 0},
        {64, 0, 5.043, 3.383, 5.434, 9.076e-05, 0},
        {256, 0, 5.787, 1.818, 5.434, 9.076e-05, 0},
        {1024, 0, 5.979, 3.04, 5.434, 9.076e-05, 0},
        {4096, 0, 6.145, 3.071, 5.434, 9.076e-05, 0},
        {16384, 0, 6.803, 6.568, 5.434, 9.076e-05, 0},
        {65536, 0, 10.51, 9.122, 5.434, 9.076e-05, 0},
        {262144, 0, 32.37, 18.08, 4.717, 0.0001041, 0},
        {1048576, 0, 156.7, 71.19, 0, 0.0001543, 0},
        {4194304, 0, 712.9, 1667, 0, 0.0001858, 0}
    },
    0
};

const MPIDI_PART_loggp_t *MPIDI_PART_loggp_builtin(int which)
{
    switch (which) {
        case MPIDI_PART_LOGGP_TCP:
            return &builtin_tcp;
        case MPIDI_PART_LOGGP_RDMA_SHM:
            return &builtin_rdma_shm;
        case MPIDI_PART_LOGGP_RDMA_TCP:
            return &builtin_rdma_tcp;
        default:
            return &builtin_shm;
    }
}

const MPIDI_PART_loggp_seg_t *MPIDI_PART_loggp_lookup(const MPIDI_PART_loggp_t * t,
                                                      int64_t bytes)
{
    int32_t i = 0;
    while (i + 1 < t->nsegs && t->seg[i + 1].min_bytes <= bytes)
        i++;
    return &t->seg[i];
}

void MPIDI_PART_loggp_at(const MPIDI_PART_loggp_t * t, int64_t bytes,
                         MPIDI_PART_loggp_seg_t * out)
{
    if (bytes < 0)
        bytes = 0;
    const MPIDI_PART_loggp_seg_t *a = MPIDI_PART_loggp_lookup(t, bytes);
    const int32_t i = (int32_t) (a - t->seg);
    *out = *a;
    out->min_bytes = bytes;
    if (bytes <= a->min_bytes || i + 1 >= t->nsegs)
        return;         /* on a row, below the first or above the last */
    const MPIDI_PART_loggp_seg_t *b = &t->seg[i + 1];
    const double f = (double) (bytes - a->min_bytes) / (double) (b->min_bytes - a->min_bytes);
    out->L = a->L + f * (b->L - a->L);
    out->o_s = a->o_s + f * (b->o_s - a->o_s);
    out->o_r = a->o_r + f * (b->o_r - a->o_r);
    out->g = a->g + f * (b->g - a->g);
    out->S = a->S + f * (b->S - a->S);
}

/* ---- the parser ------------------------------------------------------------------------- */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static const char *skip_blank(const char *p, const char *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

/* One token [*p, return) of a line ending at end; *p is advanced past leading blanks. */
static const char *token_end(const char **p, const char *end)
{
    const char *q;
    *p = skip_blank(*p, end);
    for (q = *p; q < end && !is_blank(*q); q++);
    return q;
}

/* A "transport NAME" line: 1 and the name in name[] if it is one, 0 if the line does not
 * start with a letter (a number line), -1 if it is a malformed header. */
static int parse_header(const char *p, const char *end, char *name)
{
    const char *q = token_end(&p, end);
    if (p == end || !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    if (q - p != 9 || strncmp(p, "transport", 9) != 0)
        return -1;
    p = q;
    q = token_end(&p, end);
    if (q == p || q - p >= MPIDI_PART_LOGGP_NAME_MAX)
        return -1;
    memcpy(name, p, (size_t) (q - p));
    name[q - p] = 0;
    p = q;
    return skip_blank(p, end) == end ? 1 : -1;
}

/* The end of the line starting at p and the end of its content (before any '#'). */
static const char *line_end(const char *p, const char **content_end)
{
    const char *hash = NULL;
    for (; *p && *p != '\n'; p++)
        if (*p == '#' && !hash)
            hash = p;
    *content_end = hash ? hash : p;
    return p;
}

/* Whether a header with this name occurs in [text, limit). */
static int header_before(const char *text, const char *limit, const char *name)
{
    char other[MPIDI_PART_LOGGP_NAME_MAX];
    for (const char *p = text; p < limit;) {
        const char *cend, *e = line_end(p, &cend);
        if (parse_header(p, cend, other) == 1 && strcmp(other, name) == 0)
            return 1;
        p = *e ? e + 1 : e;
    }
    return 0;
}

/* A segment line: MPIDI_PART_LOGGP_OK or the error; *cols gets its count of numbers (6 or
 * 7: S is optional). */
static int parse_segment(const char *p, const char *end, MPIDI_PART_loggp_seg_t * s, int *cols)
{
    double v[6] = { 0 };
    const char *q = token_end(&p, end);
    char *stop;
    int i;
    if (p < end && *p == '-')
        return MPIDI_PART_LOGGP_EVALUE;
    errno = 0;
    long long b = strtoll(p, &stop, 10);
    if (stop != q || q == p)
        return MPIDI_PART_LOGGP_ESYNTAX;
    if (errno == ERANGE)
        return MPIDI_PART_LOGGP_EVALUE;
    for (i = 0; i < 6; i++) {
        p = q;
        q = token_end(&p, end);
        if (q == p) {
            if (i == 5)
                break;          /* no S */
            return MPIDI_PART_LOGGP_ESYNTAX;
        }
        v[i] = strtod(p, &stop);
        if (stop != q)
            return MPIDI_PART_LOGGP_ESYNTAX;
        if (!isfinite(v[i]) || v[i] < 0)
            return MPIDI_PART_LOGGP_EVALUE;
    }
    if (skip_blank(q, end) != end)
        return MPIDI_PART_LOGGP_ESYNTAX;
    s->min_bytes = b;
    s->L = v[0];
    s->o_s = v[1];
    s->o_r = v[2];
    s->g = v[3];
    s->G = v[4];
    s->S = v[5];
    *cols = i + 1;
    return MPIDI_PART_LOGGP_OK;
}

int MPIDI_PART_loggp_parse(const char *text, const char *transport, MPIDI_PART_loggp_t * out,
                           int *line)
{
    const int want_first = (transport == NULL || transport[0] == 0);
    int lineno = 0, sel_line = 0;
    int in_sel = want_first, found = want_first, sel_done = 0;
    int32_t nsegs = 0;          /* segments of the current table */
    int cols = 0;               /* numbers per line in the current table (6 or 7) */
    int64_t last_bytes = -1;
    char name[MPIDI_PART_LOGGP_NAME_MAX];

    *line = 0;
    memset(out, 0, sizeof(*out));
    for (const char *p = text; *p;) {
        const char *cend, *e = line_end(p, &cend);
        int rc = MPIDI_PART_LOGGP_OK, h;
        lineno++;
        if (skip_blank(p, cend) == cend) {
            /* blank or comment */
        } else if ((h = parse_header(p, cend, name)) != 0) {
            if (h < 0)
                rc = MPIDI_PART_LOGGP_ESYNTAX;
            else if (header_before(text, p, name))
                rc = MPIDI_PART_LOGGP_EDUP;
            else {
                if (in_sel && out->nsegs > 0)
                    sel_done = 1;
                in_sel = !sel_done && (want_first || strcmp(name, transport) == 0);
                if (in_sel) {
                    found = 1;
                    sel_line = lineno;
                    memcpy(out->name, name, sizeof(name));
                }
                nsegs = 0;
                cols = 0;
                last_bytes = -1;
            }
        } else {
            MPIDI_PART_loggp_seg_t s;
            int c = 0;
            rc = parse_segment(p, cend, &s, &c);
            if (rc == MPIDI_PART_LOGGP_OK && nsegs > 0 && c != cols)
                rc = MPIDI_PART_LOGGP_ESYNTAX;  /* S on some lines of a table only */
            else if (rc == MPIDI_PART_LOGGP_OK && s.min_bytes <= last_bytes)
                rc = MPIDI_PART_LOGGP_EORDER;
            else if (rc == MPIDI_PART_LOGGP_OK && nsegs == MPIDI_PART_LOGGP_MAX_SEGS)
                rc = MPIDI_PART_LOGGP_ETOOMANY;
            if (rc == MPIDI_PART_LOGGP_OK) {
                cols = c;
                last_bytes = s.min_bytes;
                if (in_sel)
                    out->seg[out->nsegs++] = s;
                nsegs++;
            }
        }
        if (rc != MPIDI_PART_LOGGP_OK) {
            *line = lineno;
            return rc;
        }
        p = *e ? e + 1 : e;
    }
    if (!found)
        return MPIDI_PART_LOGGP_ENOTFOUND;
    if (out->nsegs == 0) {
        *line = sel_line;
        return MPIDI_PART_LOGGP_EEMPTY;
    }
    return MPIDI_PART_LOGGP_OK;
}

int MPIDI_PART_loggp_load(const char *path, const char *transport, MPIDI_PART_loggp_t * out,
                          int *line)
{
    enum { MAX_FILE = MPIDI_PART_LOGGP_MAX_FILE };
    struct stat sb;
    char *buf;
    size_t n = 0;
    int rc;

    *line = 0;
    /* not blocking: opening a FIFO for reading waits for a writer (MPI_Precv_init hung) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return MPIDI_PART_LOGGP_EIO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > MAX_FILE) {
        close(fd);
        return MPIDI_PART_LOGGP_EIO;
    }
    buf = (char *) malloc(MAX_FILE + 1);
    rc = buf ? 0 : MPIDI_PART_LOGGP_EIO;
    while (rc == 0 && n < MAX_FILE + 1) {
        ssize_t got = read(fd, buf + n, MAX_FILE + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = MPIDI_PART_LOGGP_EIO;
        if (got <= 0)
            break;
        n += (size_t) got;
    }
    if (rc == 0 && (n > MAX_FILE || memchr(buf, 0, n)))
        rc = MPIDI_PART_LOGGP_EIO;
    close(fd);
    if (rc == 0) {
        buf[n] = 0;
        rc = MPIDI_PART_loggp_parse(buf, transport, out, line);
    }
    free(buf);
    return rc;
}

const char *MPIDI_PART_loggp_strerror(int code)
{
    switch (code) {
        case MPIDI_PART_LOGGP_OK:
            return "no error";
        case MPIDI_PART_LOGGP_ESYNTAX:
            return "not six or seven numbers (seven on all of a table's lines or on none), "
                "not a number, or a bad header line";
        case MPIDI_PART_LOGGP_EVALUE:
            return "a NaN, infinite or negative value";
        case MPIDI_PART_LOGGP_EORDER:
            return "message sizes not strictly increasing within a table";
        case MPIDI_PART_LOGGP_ETOOMANY:
            return "more segments in a table than the engine holds";
        case MPIDI_PART_LOGGP_EDUP:
            return "the same table twice";
        case MPIDI_PART_LOGGP_ENOTFOUND:
            return "no table for the transport";
        case MPIDI_PART_LOGGP_EEMPTY:
            return "no table with a segment (an empty file, or headers without rows)";
        case MPIDI_PART_LOGGP_EIO:
            return "cannot be read (it cannot be opened, is not a regular file, is larger "
                "than 1 MiB or holds a NUL byte)";
        default:
            return "unknown error";
    }
}

int64_t MPIDI_PART_loggp_step_limit(const MPIDI_PART_loggp_t * t, double factor)
{
    for (int32_t i = 0; t && i + 1 < t->nsegs; i++) {
        const MPIDI_PART_loggp_seg_t *a = &t->seg[i], *b = &t->seg[i + 1];
        double oa = a->o_s + a->o_r, ob = b->o_s + b->o_r;
        if (b->min_bytes == a->min_bytes + 1 && ob >= factor * oa && ob > 0)
            return a->min_bytes;
    }
    return 0;
}

int64_t MPIDI_PART_loggp_eager_limit(const MPIDI_PART_loggp_t * t)
{
    return MPIDI_PART_loggp_step_limit(t, 2.0);
}

/* ---- the model -------------------------------------------------------------------------- */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* G*(x-1), 0 for messages of at most one byte */
static double per_byte(const MPIDI_PART_loggp_seg_t * P, double x)
{
    return x > 1 ? P->G * (x - 1) : 0;
}

static double msg_cost(const MPIDI_PART_model_t * m, const MPIDI_PART_loggp_t * t, double x)
{
    const MPIDI_PART_loggp_seg_t *P = MPIDI_PART_loggp_lookup(t, (int64_t) x);
    return m->msg_cost >= 0 ? m->msg_cost : P->o_s + P->o_r;
}

/* The observed chooser's default c (msg_cost < 0) for a message of x bytes, P its
 * parameters (MPIDI_PART_loggp_at), eager the table's rendezvous switch (0: none): o_s + o_r,
 * and past the switch o_s + o_r - 2G(x-1), at least 0: the handshake (~5-14 us on the
 * built-in shm table from 8 KiB to 1 MiB), since there each side's o, measured with
 * blocking MPI_Send/MPI_Recv, includes the transfer, which the timeline already has. On a
 * node's table (on_node) twice that: the handshake is then only the two sides' progress,
 * which the ping-pong measured with both polling, and in an iteration each of its legs
 * waits for one side among threads that ready and compute (measured: the engine README,
 * "Observed re-planning"). */
#define MPIDI_PART_OBS_RNDV_FACTOR_ON_NODE 2.0

static double obs_msg_cost(const MPIDI_PART_loggp_seg_t * P, int on_node, int64_t eager,
                           double msg_cost_us, double x)
{
    if (msg_cost_us >= 0)
        return msg_cost_us;
    double c = P->o_s + P->o_r;
    if (eager > 0 && x > (double) eager) {
        c -= 2 * per_byte(P, x);
        c = c > 0 ? c : 0;
        if (on_node)
            c *= MPIDI_PART_OBS_RNDV_FACTOR_ON_NODE;
    }
    return c;
}

/* Whether the sender moves a message of x bytes itself (P its parameters, S_eager the S of
 * the largest eager message: the calls' fixed cost): past the rendezvous switch, when the
 * sender's unhidden time beyond that, S - S_eager, covers at least half the transfer
 * G(x-1) (UCX over TCP: the data goes in the sender's progress, S 67.5 us at 8 KiB against
 * 6 us eager; over shared memory the receiver copies it, S 0.8-1.5 us from 8 KiB to 4 MiB
 * against 0.8 us eager). Then the observed timeline counts the transfer once, as G(x-1),
 * not also in o_s and o_r, which the blocking ping-pong measured with it inside
 * (predict_obs). */
static int sender_moves(const MPIDI_PART_loggp_seg_t * P, int64_t eager, double S_eager,
                        double x)
{
    return eager > 0 && x > (double) eager && P->S > S_eager &&
        2 * (P->S - S_eager) >= per_byte(P, x);
}

/* The timeline after the messages added so far (the recurrences of the top comment). */
typedef struct train {
    int any;                    /* a message was added */
    double inj;                 /* injection start of the last message */
    double gap;                 /* max(g, o_s) + G*(b-1) of the last message */
    double arr;                 /* arrival of the last message */
    double done;                /* receiver done with everything so far */
} train_t;

/* Append cnt messages of x bytes ready at r0, r0 + step, ...: O(1), as inj and arr of an
 * arithmetic train are maxima of linear functions of the index, taken at its ends. */
static void train_add_seg(train_t * s, const MPIDI_PART_loggp_seg_t * P, double cnt, double x,
                          double r0, double step)
{
    if (cnt <= 0)
        return;
    const double gS = dmax(P->g, P->o_s) + per_byte(P, x);
    const double gR = dmax(P->g, P->o_r) + per_byte(P, x);
    const double a = P->o_s + per_byte(P, x) + P->L;
    const double inj0 = s->any ? dmax(r0, s->inj + s->gap) : r0;
    const double injl = dmax(r0 + (cnt - 1) * step, inj0 + (cnt - 1) * gS);
    double arrl = dmax(inj0 + a + (cnt - 1) * gR, injl + a);
    if (s->any)
        arrl = dmax(arrl, s->arr + cnt * gR);
    s->any = 1;
    s->inj = injl;
    s->gap = gS;
    s->arr = arrl;
    s->done = dmax(s->done, arrl + P->o_r);
}

/* The same with the parameters of x's segment (the a-priori choosers) */
static void train_add(train_t * s, const MPIDI_PART_loggp_t * t, double cnt, double x,
                      double r0, double step)
{
    train_add_seg(s, MPIDI_PART_loggp_lookup(t, (int64_t) x), cnt, x, r0, step);
}

static int valid(const MPIDI_PART_loggp_t * t, const MPIDI_PART_model_t * m,
                 const MPIDI_PART_problem_t * pb)
{
    return t && m && pb && t->nsegs >= 1 && t->nsegs <= MPIDI_PART_LOGGP_MAX_SEGS &&
        pb->bytes >= 0 && pb->send_parts >= 1 && pb->ngcd >= 1 &&
        pb->send_parts % pb->ngcd == 0 && m->delta >= 0 && isfinite(m->delta) &&
        isfinite(m->msg_cost) && (m->arrival == MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE ||
                                  m->arrival == MPIDI_PART_ARRIVAL_UNIFORM);
}

double MPIDI_PART_ploggp_predict(const MPIDI_PART_loggp_t * t, const MPIDI_PART_model_t * m,
                                 const MPIDI_PART_problem_t * pb, int32_t k)
{
    if (!valid(t, m, pb) || k < 1 || k > pb->ngcd)
        return -1.0;
    const int32_t n = pb->ngcd;
    const int64_t T = ((int64_t) n + k - 1) / k;
    const int64_t kl = n - (T - 1) * k;                 /* gcd-messages in the last one */
    const double unit = (double) pb->bytes / n;         /* bytes of one gcd-message */
    const double b = unit * k, bl = unit * (double) kl, delta = m->delta;
    const double cost = (double) (T - 1) * msg_cost(m, t, b) + msg_cost(m, t, bl);
    train_t A = { 0 }, B = { 0 };

    if (m->arrival == MPIDI_PART_ARRIVAL_UNIFORM) {
        if (T > 1) {
            const double U = pb->send_parts, q = (double) k * (pb->send_parts / n);
            train_add(&A, t, (double) (T - 1), b, delta * (q - 1) / (U - 1), delta * q / (U - 1));
        }
        train_add(&A, t, 1, bl, delta, 0);
        return A.done + cost;
    }
    /* many-before-one, the laggard in the last message (B) or in a full one (A) */
    train_add(&B, t, (double) (T - 1), b, 0, 0);
    train_add(&B, t, 1, bl, delta, 0);
    if (kl == k)
        return B.done + cost;
    train_add(&A, t, (double) (T - 2), b, 0, 0);
    train_add(&A, t, 1, bl, 0, 0);
    train_add(&A, t, 1, b, delta, 0);
    const double pA = (double) ((T - 1) * k) / n;
    return pA * A.done + (1 - pA) * B.done + cost;
}

static int is_pow2(int64_t x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

int MPIDI_PART_ploggp_is_candidate(int32_t ngcd, int32_t k)
{
    if (k < 1 || k > ngcd)
        return 0;
    if (ngcd <= MPIDI_PART_PLOGGP_EXHAUSTIVE_MAX || k == 1 || k == ngcd || is_pow2(k))
        return 1;
    /* k = ceil(n / 2^i): T is (about) a power of two */
    for (int64_t p = 2; p < ngcd; p *= 2)
        if (k == (ngcd + p - 1) / p)
            return 1;
    return 0;
}

/* The choosers' running minimum: candidate k with prediction x replaces the best so far
 * only when x is lower by more than a relative 1e-9, so among ties the first one tried
 * stays (every chooser tries fewer messages first). */
typedef struct {
    int32_t k;                  /* 0: nothing tried yet */
    double pred;
} best_t;

static void keep_min(best_t * b, int32_t k, double x)
{
    if (b->k == 0 || x < b->pred - 1e-9 * b->pred) {
        b->pred = x;
        b->k = k;
    }
}

int32_t MPIDI_PART_ploggp_choose(const MPIDI_PART_loggp_t * t, const MPIDI_PART_model_t * m,
                                 const MPIDI_PART_problem_t * pb, int32_t max_msgs,
                                 double *pred)
{
    if (!valid(t, m, pb))
        return 0;
    const int32_t n = pb->ngcd;
    best_t b = { 0, 0 };
    /* k from n down to 1: T = ceil(n/k) never decreases, so on a tie the earlier candidate
     * (fewer messages, then larger k) is kept. */
    for (int64_t k = n; k >= 1;) {
        const int64_t T = (n + k - 1) / k;
        if (max_msgs < 1 || T <= max_msgs)
            keep_min(&b, (int32_t) k, MPIDI_PART_ploggp_predict(t, m, pb, (int32_t) k));
        /* next candidate below k */
        if (n <= MPIDI_PART_PLOGGP_EXHAUSTIVE_MAX) {
            k--;
        } else {
            int64_t next = 0;
            for (int64_t p = 1; p < n; p *= 2) {
                const int64_t a = p, c = (n + p - 1) / p;       /* 2^i and ceil(n/2^i) */
                if (a < k && a > next)
                    next = a;
                if (c < k && c > next)
                    next = c;
            }
            k = next;           /* 0 ends the loop; 1 is always reached (p = 1) */
        }
    }
    if (pred)
        *pred = b.pred;
    return b.k;
}

int32_t MPIDI_PART_ploggp_choose_aligned(const MPIDI_PART_loggp_t * t,
                                         const MPIDI_PART_model_t * m,
                                         const MPIDI_PART_problem_t * pb, int32_t k_max,
                                         double *pred)
{
    if (!valid(t, m, pb) || k_max < 1)
        return 0;
    const int32_t n = pb->ngcd;
    best_t b = { 0, 0 };
    /* n itself first (one group), then the powers of two below it, largest first: on a tie
     * the earlier candidate (fewer messages) is kept */
    if (n <= k_max)
        keep_min(&b, n, MPIDI_PART_ploggp_predict(t, m, pb, n));
    int64_t k = 1;
    while (k * 2 < n)
        k *= 2;
    for (k = n > 1 ? k : 0; k >= 1; k /= 2)
        if (k <= k_max)
            keep_min(&b, (int32_t) k, MPIDI_PART_ploggp_predict(t, m, pb, (int32_t) k));
    if (pred)
        *pred = b.pred;
    return b.k;
}

/* ---- re-planning from an observed iteration --------------------------------------------- */

typedef struct {
    double r;                   /* ready time of the wire message */
    double bytes;
} obs_msg_t;

static int obs_cmp(const void *a, const void *b)
{
    double x = ((const obs_msg_t *) a)->r, y = ((const obs_msg_t *) b)->r;
    return (x > y) - (x < y);
}

static int obs_valid(const MPIDI_PART_loggp_t * t, const MPIDI_PART_problem_t * pb,
                     const double *ready, double msg_cost)
{
    MPIDI_PART_model_t m = {.delta = 0.0,.arrival = MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE,
        .msg_cost = msg_cost
    };
    if (!valid(t, &m, pb) || ready == NULL)
        return 0;
    for (int32_t j = 0; j < pb->ngcd; j++)
        if (!isfinite(ready[j]))
            return 0;
    return 1;
}

/* The prediction for merge factor k, msgs: room for ceil(n/k) entries; eager:
 * MPIDI_PART_loggp_eager_limit(t), taken once by the caller. held_by_S: the ready times are
 * without the observed sends (MPIDI_PART_ploggp_adjust_ready with sent[]), so each
 * candidate message's S is charged back; 0 when they still hold the observed sends. */
static double predict_obs(const MPIDI_PART_loggp_t * t, int64_t eager,
                          const MPIDI_PART_problem_t * pb, const double *ready,
                          double msg_cost_us, int32_t k, obs_msg_t * msgs, int held_by_S)
{
    const int32_t n = pb->ngcd;
    const int32_t T = (int32_t) (((int64_t) n + k - 1) / k);
    const double unit = (double) pb->bytes / n;
    double r0 = ready[0], cost = 0.0;

    for (int32_t j = 1; j < n; j++)
        if (ready[j] < r0)
            r0 = ready[j];
    for (int32_t i = 0; i < T; i++) {
        int32_t first = i * k, last = first + k < n ? first + k : n;
        double r = ready[first];
        for (int32_t j = first + 1; j < last; j++)
            if (ready[j] > r)
                r = ready[j];
        msgs[i].r = r - r0;
        msgs[i].bytes = unit * (last - first);
    }
    qsort(msgs, T, sizeof(*msgs), obs_cmp);
    train_t s = { 0 };
    MPIDI_PART_loggp_seg_t P;
    double held = 0.0;          /* the sending threads' time in the sends so far */
    double S_eager = 0.0;       /* the largest eager message's S: the calls' fixed cost */
    if (eager > 0) {
        MPIDI_PART_loggp_at(t, eager, &P);
        S_eager = P.S;
    }
    for (int32_t i = 0; i < T; i++) {
        /* the table's rows read as measured points (sizes the program sends, not a grid) */
        MPIDI_PART_loggp_at(t, (int64_t) msgs[i].bytes, &P);
        cost += obs_msg_cost(&P, t->on_node, eager, msg_cost_us, msgs[i].bytes);
        if (sender_moves(&P, eager, S_eager, msgs[i].bytes)) {
            const double tr = per_byte(&P, msgs[i].bytes);
            P.o_s = dmax(P.o_s - tr, 0);
            P.o_r = dmax(P.o_r - tr, 0);
        }
        train_add_seg(&s, &P, 1, msgs[i].bytes, msgs[i].r + held, 0);
        if (held_by_S)
            held += P.S;
    }
    return s.done + cost;
}

double MPIDI_PART_ploggp_predict_observed(const MPIDI_PART_loggp_t * t,
                                          const MPIDI_PART_problem_t * pb, const double *ready,
                                          double msg_cost_us, int32_t k)
{
    if (!obs_valid(t, pb, ready, msg_cost_us) || k < 1 || k > pb->ngcd)
        return -1.0;
    obs_msg_t *msgs = (obs_msg_t *) malloc(sizeof(obs_msg_t) * ((pb->ngcd + k - 1) / k));
    if (msgs == NULL)
        return -1.0;
    double x = predict_obs(t, MPIDI_PART_loggp_eager_limit(t), pb, ready, msg_cost_us, k, msgs,
                           1);
    free(msgs);
    return x;
}

/* Every merge factor up to this many gcd-messages (each prediction costs O(n log n)); above
 * it the extremes, powers of two of k and k = ceil(n / 2^i). */
#define OBS_EXHAUSTIVE_MAX 256

static int obs_candidate(int64_t n, int64_t k)
{
    if (n <= OBS_EXHAUSTIVE_MAX || k == 1 || k == n || is_pow2(k))
        return 1;
    for (int64_t p = 2; p < n; p *= 2)
        if (k == (n + p - 1) / p)
            return 1;
    return 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

typedef struct {
    double t;
    int32_t j;
} obs_event_t;

static int event_cmp(const void *a, const void *b)
{
    const obs_event_t *x = (const obs_event_t *) a, *y = (const obs_event_t *) b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

void MPIDI_PART_ploggp_adjust_ready(int32_t n, const double *ready, const double *sent,
                                    double *out)
{
    if (n < 1)
        return;
    double first = ready[0];
    for (int32_t j = 1; j < n; j++)
        first = ready[j] < first ? ready[j] : first;
    obs_event_t *ev = sent ? (obs_event_t *) malloc(sizeof(obs_event_t) * n) : NULL;
    if (ev == NULL) {   /* nothing to take out (or no memory): the times as observed */
        for (int32_t j = 0; j < n; j++)
            out[j] = ready[j] - first;
        return;
    }
    for (int32_t j = 0; j < n; j++) {
        ev[j].t = ready[j];
        ev[j].j = j;
    }
    qsort(ev, (size_t) n, sizeof(obs_event_t), event_cmp);
    /* in time order: the busy time before t is the closed intervals' total plus the part
     * of the open one [cur_s, cur_e] before t */
    double closed = 0, cur_s = ev[0].t, cur_e = ev[0].t;
    for (int32_t i = 0; i < n; i++) {
        const double t = ev[i].t, s = sent[ev[i].j];
        double busy = closed + (t < cur_e ? t - cur_s : cur_e - cur_s);
        out[ev[i].j] = t - busy - first;
        if (t <= cur_e) {
            cur_e = t + s > cur_e ? t + s : cur_e;
        } else {
            closed += cur_e - cur_s;
            cur_s = t;
            cur_e = t + s;
        }
    }
    free(ev);
}

static int dbl_cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int32_t MPIDI_PART_ploggp_choose_observed_multi(const MPIDI_PART_loggp_t * t,
                                                const MPIDI_PART_problem_t * pb, int32_t nobs,
                                                const double *ready, const double *sent,
                                                double tau, int32_t max_msgs, double *pred,
                                                int32_t * boundaries)
{
    if (t == NULL || pb == NULL || nobs < 1 || nobs > MPIDI_PART_OBS_MAX || ready == NULL ||
        !(tau >= 0) || !isfinite(tau))
        return 0;
    const int32_t n = pb->ngcd;
    for (int32_t o = 0; o < nobs; o++) {
        if (!obs_valid(t, pb, ready + (size_t) o * n, -1.0))
            return 0;
        if (sent)
            for (int32_t j = 0; j < n; j++) {
                const double x = sent[(size_t) o * n + j];
                if (!(x >= 0) || !isfinite(x))
                    return 0;
            }
    }
    int64_t cut = 0;            /* gcd of the kept boundary positions of every sample */
    int32_t nb = 0;
    /* msgs: room for n wire messages, then the adjusted ready times of every sample */
    obs_msg_t *msgs = (obs_msg_t *) malloc(sizeof(obs_msg_t) * n +
                                           sizeof(double) * (size_t) n * nobs);
    if (msgs == NULL)
        return 0;
    double *adj = (double *) (msgs + n);

    for (int32_t o = 0; o < nobs; o++)
        MPIDI_PART_ploggp_adjust_ready(n, ready + (size_t) o * n,
                                       sent ? sent + (size_t) o * n : NULL, adj + (size_t) o * n);
    /* a boundary any sample shows is kept */
    for (int32_t j = 1; j < n; j++) {
        int gap = 0;
        for (int32_t o = 0; o < nobs && !gap; o++) {
            const double *a = adj + (size_t) o * n;
            gap = fabs(a[j] - a[j - 1]) > tau;
        }
        if (gap) {
            cut = gcd64(cut, j);
            nb++;
        }
    }
    if (boundaries)
        *boundaries = nb;

    best_t b = { 0, 0 };
    double x[MPIDI_PART_OBS_MAX];
    const int64_t eager = MPIDI_PART_loggp_eager_limit(t);
    for (int64_t k = n; k >= 1; k--) {
        const int64_t T = (n + k - 1) / k;
        if ((cut && cut % k) || (max_msgs >= 1 && T > max_msgs) || !obs_candidate(n, k))
            continue;
        /* the median of the samples' predictions (even count: the mean of the middle two),
         * so one iteration unlike the others does not decide */
        for (int32_t o = 0; o < nobs; o++)
            x[o] = predict_obs(t, eager, pb, adj + (size_t) o * n, -1.0, (int32_t) k, msgs,
                               sent != NULL);
        qsort(x, (size_t) nobs, sizeof(double), dbl_cmp);
        keep_min(&b, (int32_t) k, nobs % 2 ? x[nobs / 2] : (x[nobs / 2 - 1] + x[nobs / 2]) / 2);
    }
    free(msgs);
    if (b.k == 0)       /* no candidate fits max_msgs: the finest layout that does */
        b.k = max_msgs >= 1 ? (int32_t) (((int64_t) n + max_msgs - 1) / max_msgs) : 1;
    if (pred)
        *pred = b.pred;
    return b.k;
}

int32_t MPIDI_PART_ploggp_choose_observed(const MPIDI_PART_loggp_t * t,
                                          const MPIDI_PART_problem_t * pb, const double *ready,
                                          const double *sent, double tau, int32_t max_msgs,
                                          double *pred, int32_t * boundaries)
{
    if (ready == NULL)
        return 0;
    return MPIDI_PART_ploggp_choose_observed_multi(t, pb, 1, ready, sent, tau, max_msgs, pred,
                                                   boundaries);
}
