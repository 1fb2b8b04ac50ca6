/*
 * part_calib.c: the optional LogGP calibration at MPI_Init (MPIR_CVAR_PART_LOGGP_CALIBRATE;
 * README, section 3, "Calibration at MPI_Init"). Ranks 0 and 1 of MPI_COMM_WORLD time round
 * trips of MPI messages between them with tools/part-calibrate's method (Netgauge's
 * parametrised round trip, fewer repetitions), part_loggp_fit.c fits the table, rank 0
 * broadcasts it and every rank's PLogGP aggregator uses it for the tag transport's peers of
 * the same kind (part_aggr.c). Runs from MPID_InitCompleted (maint/patches/0010), where
 * MPI_COMM_WORLD works; never in MPI_Psend_init/MPI_Precv_init.
 *
 * The messages are MPIC_Send/MPIC_Recv on MPI_COMM_WORLD's collective context: the same
 * netmod path as the tag transport's wire messages, invisible to the application's
 * point-to-point traffic (there is none yet).
 */
#include "part_impl.h"
#include "part_ploggp.h"
#include "part_loggp_fit.h"
#include <math.h>
#include <unistd.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_LOGGP_CALIBRATE
      category    : CH4_PART
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        At MPI_Init, ranks 0 and 1 of MPI_COMM_WORLD measure the LogGP parameters of MPI
        messages between them (tools/part-calibrate's round-trip method with fewer
        repetitions: 8 sizes from 8 B to 1 MiB and the protocol switch between them, about
        0.1-0.5 s over shared memory on an idle machine, seconds while other processes
        load its cores: 1.6-21 s measured so; at most MPIR_CVAR_PART_LOGGP_CALIBRATE_MS),
        and the PLogGP aggregator of every rank uses that
        table instead of its built-in one for the tag transport's peers of the same kind
        (on the same node as each other when ranks 0 and 1 are, else on other nodes).
        MPIR_CVAR_PART_LOGGP_FILE, when set, wins and nothing is measured; so does a
        single-process MPI_COMM_WORLD. MPI_T: part_loggp_calib_segs, part_loggp_calib_us.

    - name        : MPIR_CVAR_PART_LOGGP_CALIBRATE_FILE
      category    : CH4_PART
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        With MPIR_CVAR_PART_LOGGP_CALIBRATE: rank 0 writes the measured table to this file
        during MPI_Init, in the format of MPIR_CVAR_PART_LOGGP_FILE (one table, "shm" or
        "net"), so that later runs can name it there instead of measuring again. A file
        that cannot be written makes MPI_Init fail on every rank (MPI_ERR_OTHER), before
        anything is measured. Empty: nothing is written.

    - name        : MPIR_CVAR_PART_LOGGP_CALIBRATE_MS
      category    : CH4_PART
      type        : int
      default     : 10000
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        With MPIR_CVAR_PART_LOGGP_CALIBRATE: the most MPI_Init spends measuring, in
        milliseconds (rank 0 decides, checking before each size and each step of the search
        for a protocol switch; one measurement can run past it). Past it, a table with all 8
        sizes measured is used without the steps left (and saved); one with fewer is
        dropped: the built-in table stays, nothing is saved, part_loggp_calib_segs is 0
        while part_loggp_calib_us says how long was spent, and rank 0 prints one line on
        stderr. MPI_Init succeeds either way. 0: no limit.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define CAL_N       10          /* messages per PRTT(n, ...) round */
#define CAL_REPS    7           /* measured rounds (median) */
#define CAL_WARM_US 20000.0     /* warm-up budget per measurement (the tool's): the
                                 * first sizes here measured 3-10x too slow with 2 ms */
#define CAL_REFINE_WARM_US 2000.0       /* the same while bisecting (the path is warm) */
#define CAL_CONFIRM 3           /* re-measurements of a switch's two ends */
#define CAL_MAX     MPIDI_PART_LOGGP_MAX_SEGS

enum { TAG_CTRL = 1, TAG_DATA, TAG_REPLY, TAG_RESULT };
enum { CMD_RUN = 1, CMD_STOP };

typedef struct {
    int32_t cmd, n, rounds, warmup;
    int64_t bytes;
    double wait_us;             /* server: busy-wait before each receive after the first */
} ctrl_t;

typedef struct {
    int32_t ok;                 /* 1: table holds the result; 0: not a table; -1: a round
                                 * trip failed; -2: the file could not be written; -3: out
                                 * of time (MPIR_CVAR_PART_LOGGP_CALIBRATE_MS) before every
                                 * size was measured */
    int32_t sizes;              /* sizes measured */
    int32_t on_node;            /* ranks 0 and 1 share a node */
    double us;                  /* how long it took */
    MPIDI_PART_loggp_t table;
} result_t;

static const int64_t cal_sizes[] = { 8, 64, 512, 4096, 16384, 65536, 262144, 1048576 };

#define CAL_NSIZES ((int) (sizeof(cal_sizes) / sizeof(cal_sizes[0])))
#define CAL_MAX_BYTES 1048576

typedef struct {
    MPIR_Comm *comm;
    int peer;
    char *sbuf, *rbuf;
    int mpi_errno;              /* the first error; later steps do nothing */
    double warm_us;             /* warm-up budget per measurement */
    double end_us;              /* MPIR_CVAR_PART_LOGGP_CALIBRATE_MS's deadline (rank 0;
                                 * 0: none) */
} link_t;

static double now_us(void)
{
    return MPIDI_PART_now_ns() / 1000.0;
}

static void spin_us(double us)
{
    double end = now_us() + us;
    while (now_us() < end);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* rank 0: past MPIR_CVAR_PART_LOGGP_CALIBRATE_MS */
static int out_of_time(const link_t * l)
{
    return l->end_us > 0 && now_us() >= l->end_us;
}

static void lsend(link_t * l, const void *buf, int64_t bytes, int tag)
{
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    if (l->mpi_errno == MPI_SUCCESS)
        l->mpi_errno = MPIC_Send(buf, bytes, MPI_BYTE, l->peer, tag, l->comm, &errflag);
}

static void lrecv(link_t * l, void *buf, int64_t bytes, int tag)
{
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    if (l->mpi_errno == MPI_SUCCESS)
        l->mpi_errno = MPIC_Recv(buf, bytes, MPI_BYTE, l->peer, tag, l->comm,
                                 MPI_STATUS_IGNORE, &errflag);
}

/* Client: tells the server the next phase (rounds of n messages of s bytes) and returns it:
 * a warm-up of 3-200 rounds, about warm_us at est (a guess of one round's time) per round,
 * then CAL_REPS measured rounds. */
static ctrl_t start_phase(link_t * l, int n, int64_t s, double server_wait, double est)
{
    double w = l->warm_us / (est > 0.01 ? est : 0.01);
    ctrl_t c = {.cmd = CMD_RUN,.n = n,.bytes = s,.wait_us = server_wait };
    c.warmup = w < 3 ? 3 : (w > 200 ? 200 : (int32_t) w);
    c.rounds = c.warmup + CAL_REPS;
    lsend(l, &c, sizeof(c), TAG_CTRL);
    return c;
}

/* Client: median PRTT(n,d,s); est guesses one round. With server_wait > 0 the server's
 * median receive time comes back in *o_r. */
static double prtt(link_t * l, int n, double d, int64_t s, double est, double server_wait,
                   double *o_r)
{
    double t[CAL_REPS], res = 0;
    ctrl_t c = start_phase(l, n, s, server_wait, est);
    for (int r = 0; r < c.rounds && l->mpi_errno == MPI_SUCCESS; r++) {
        double t0 = now_us();
        for (int i = 0; i < n; i++) {
            lsend(l, l->sbuf, s, TAG_DATA);
            if (d > 0 && i + 1 < n)
                spin_us(d);
        }
        lrecv(l, l->rbuf, s, TAG_REPLY);
        if (r >= c.warmup)
            t[r - c.warmup] = now_us() - t0;
    }
    lrecv(l, &res, sizeof(res), TAG_RESULT);
    if (o_r)
        *o_r = res;
    return l->mpi_errno ? 0 : median(t, CAL_REPS);
}

static void server(link_t * l)
{
    for (;;) {
        ctrl_t c;
        double per[64], res;
        int np = 0;
        lrecv(l, &c, sizeof(c), TAG_CTRL);
        if (l->mpi_errno || c.cmd == CMD_STOP)
            return;
        for (int r = 0; r < c.rounds && l->mpi_errno == MPI_SUCCESS; r++) {
            double acc = 0;
            lrecv(l, l->rbuf, c.bytes, TAG_DATA);
            for (int i = 1; i < c.n; i++) {
                if (c.wait_us > 0)
                    spin_us(c.wait_us);
                double t0 = now_us();
                lrecv(l, l->rbuf, c.bytes, TAG_DATA);
                acc += now_us() - t0;
            }
            lsend(l, l->sbuf, c.bytes, TAG_REPLY);
            if (r >= c.warmup && c.n > 1 && np < 64)
                per[np++] = acc / (c.n - 1);
        }
        res = median(per, np);
        lsend(l, &res, sizeof(res), TAG_RESULT);
    }
}

/* Client: the sender's unhidden time S (median): MPIC_Isend, gap us without MPI calls,
 * MPIC_Wait; the two calls' time. The server receives one message and answers. */
static double unhidden(link_t * l, int64_t s, double gap, double est)
{
    double t[CAL_REPS];
    ctrl_t c = start_phase(l, 1, s, 0, est);
    for (int r = 0; r < c.rounds && l->mpi_errno == MPI_SUCCESS; r++) {
        MPIR_Errflag_t errflag = MPIR_ERR_NONE;
        MPIR_Request *req = NULL;
        double t0 = now_us();
        l->mpi_errno = MPIC_Isend(l->sbuf, s, MPI_BYTE, l->peer, TAG_DATA, l->comm, &req,
                                  &errflag);
        if (l->mpi_errno)
            break;
        double t1 = now_us();
        spin_us(gap);
        double t2 = now_us();
        l->mpi_errno = MPIC_Wait(req, &errflag);
        double t3 = now_us();
        MPIR_Request_free(req);
        lrecv(l, l->rbuf, s, TAG_REPLY);
        if (r >= c.warmup)
            t[r - c.warmup] = (t1 - t0) + (t3 - t2);
    }
    double res;
    lrecv(l, &res, sizeof(res), TAG_RESULT);
    return l->mpi_errno ? 0 : median(t, CAL_REPS);
}

/* All of one size's round trips (tools/part-calibrate/part_calibrate.cpp's formulas). */
static MPIDI_PART_calib_pt_t measure(link_t * l, int64_t s)
{
    MPIDI_PART_calib_pt_t p;
    memset(&p, 0, sizeof(p));
    p.s = s;
    p.prtt1 = prtt(l, 1, 0, s, 1.0 + (double) s * 1e-3, 0, NULL);
    p.prttn = prtt(l, CAL_N, 0, s, CAL_N * p.prtt1, 0, NULL);
    double d = p.prtt1;
    p.prttnd = prtt(l, CAL_N, d, s, CAL_N * 2 * d, 0, NULL);
    prtt(l, CAL_N, d, s, CAL_N * 3 * d, 2 * d, &p.orr);
    p.gall = (p.prttn - p.prtt1) / (CAL_N - 1);
    p.os = (p.prttnd - p.prtt1) / (CAL_N - 1) - d;
    if (p.os < 0)
        p.os = 0;
    p.S = unhidden(l, s, 2 * d, 3 * d);
    return p;
}

static MPIDI_PART_calib_pt_t lower_of_two(link_t * l, MPIDI_PART_calib_pt_t p, int kind)
{
    MPIDI_PART_calib_pt_t q = measure(l, p.s);
    return MPIDI_PART_calib_step_value(&q, kind) < MPIDI_PART_calib_step_value(&p, kind) ? q : p;
}

/* Where o_s + o_r steps up between two listed sizes, bisect to the protocol switch and add
 * its two ends (part_calibrate.cpp's refine_switches, fewer confirmations). Returns the new
 * number of points. These are MPI messages, whose switches in MPICH 4.0.2 show in the
 * overhead (shared memory's at 8256 bytes); the tool also looks for steps in the round trip
 * (libfabric shm's, -f), which here would bisect slopes out of MPI_Init's budget. */
static int refine(link_t * l, MPIDI_PART_calib_pt_t * pts, int n)
{
    const int k = MPIDI_PART_CALIB_STEP_OVERHEAD;
    for (int i = 0; i + 1 < n && l->mpi_errno == MPI_SUCCESS && !out_of_time(l); i++) {
        MPIDI_PART_calib_pt_t lo = pts[i], hi = pts[i + 1], add[2];
        int nadd = 0;
        /* above 64 KiB the overhead grows with the size (rendezvous: it includes the
         * transfer), and bisecting that slope only to find no switch took 1.3 s of 1.5 */
        if (hi.s > 65536 || !MPIDI_PART_calib_step_candidate(&lo, &hi, k))
            continue;
        lo = lower_of_two(l, lo, k);
        if (!MPIDI_PART_calib_step_candidate(&lo, &hi, k))
            continue;
        double split = MPIDI_PART_calib_step_split(&lo, &hi, k);
        /* to 16 bytes below 64 KiB (the tool goes to 1): the lower end stays below the
         * switch, which is what a split piece must not pass (part_tag.c) */
        int64_t res = lo.s < 65536 ? 16 : lo.s / 1024;
        while (hi.s - lo.s > res && l->mpi_errno == MPI_SUCCESS && !out_of_time(l)) {
            MPIDI_PART_calib_pt_t q = lower_of_two(l, measure(l, lo.s + (hi.s - lo.s) / 2), k);
            if (MPIDI_PART_calib_step_value(&q, k) > split)
                hi = q;
            else
                lo = q;
        }
        if (hi.s - lo.s > res)
            continue;   /* out of time before the switch was found */
        for (int c = 0; c < CAL_CONFIRM && !MPIDI_PART_calib_step_confirmed(&lo, &hi, k) &&
             !out_of_time(l); c++) {
            lo = lower_of_two(l, lo, k);
            hi = lower_of_two(l, hi, k);
        }
        if (!MPIDI_PART_calib_step_confirmed(&lo, &hi, k))
            continue;   /* a slope, not a switch */
        if (lo.s != pts[i].s)
            add[nadd++] = lo;
        else
            pts[i] = lo;
        if (hi.s != pts[i + 1].s)
            add[nadd++] = hi;
        else
            pts[i + 1] = hi;
        if (n + nadd > CAL_MAX)
            continue;
        memmove(&pts[i + 1 + nadd], &pts[i + 1], sizeof(pts[0]) * (n - i - 1));
        memcpy(&pts[i + 1], add, sizeof(pts[0]) * nadd);
        n += nadd;
        i += nadd;
    }
    return n;
}

int MPIDI_PART_calibrate(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Comm *world = MPIR_Process.comm_world;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    result_t r;
    link_t l = {.comm = world,.peer = 1 - world->rank,.warm_us = CAL_WARM_US };

    if (!MPIR_CVAR_PART_LOGGP_CALIBRATE || world->local_size < 2 ||
        (MPIR_CVAR_PART_LOGGP_FILE && MPIR_CVAR_PART_LOGGP_FILE[0]))
        goto fn_exit;

    memset(&r, 0, sizeof(r));
    double t0 = now_us();
    if (world->rank < 2) {
        l.sbuf = MPL_calloc(1, CAL_MAX_BYTES, MPL_MEM_OTHER);
        l.rbuf = MPL_malloc(CAL_MAX_BYTES, MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(!l.sbuf || !l.rbuf, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    if (world->rank == 1) {
        server(&l);
    } else if (world->rank == 0) {
        MPIDI_PART_calib_pt_t pts[CAL_MAX];
        size_t starts[CAL_MAX + 1];
        int n = 0;
        const char *out = MPIR_CVAR_PART_LOGGP_CALIBRATE_FILE;
        /* the file is opened before anything is measured, so that one that cannot be
         * written fails MPI_Init at once (it failed after the whole measurement before);
         * opened for appending (not truncated unless a table is written), removed again
         * if it did not exist and no table is written */
        FILE *outf = NULL;
        int created = 0;
        if (out && out[0]) {
            created = access(out, F_OK) != 0;
            outf = fopen(out, "a");
            if (outf == NULL)
                r.ok = -2;
        }
        if (MPIR_CVAR_PART_LOGGP_CALIBRATE_MS > 0)
            l.end_us = t0 + 1000.0 * MPIR_CVAR_PART_LOGGP_CALIBRATE_MS;
        for (int i = 0; i < CAL_NSIZES && r.ok != -2 && l.mpi_errno == MPI_SUCCESS; i++) {
            if (out_of_time(&l)) {
                r.ok = -3;
                break;
            }
            pts[n++] = measure(&l, cal_sizes[i]);
        }
        r.sizes = n;
        l.warm_us = CAL_REFINE_WARM_US;
        if (r.ok == 0)
            n = refine(&l, pts, n);
        ctrl_t stop = {.cmd = CMD_STOP };
        lsend(&l, &stop, sizeof(stop), TAG_CTRL);
        if (l.mpi_errno == MPI_SUCCESS && r.ok == 0) {
            MPIDI_PART_calib_fit_pieces(pts, n, starts);
            MPIDI_PART_calib_latency(pts, n);
            /* as MPIDI_PART_peer_on_node decides for an operation */
            r.on_node = !MPIR_CVAR_NOLOCAL && MPIR_Process.node_map &&
                MPIR_Process.node_map[0] == MPIR_Process.node_map[1];
            /* the table is what its text says (the saved file's values, to the digit) */
            const char *name = r.on_node ? "shm" : "net";
            char *text = NULL;
            size_t len = 0;
            int line;
            FILE *mf = open_memstream(&text, &len);
            int bad = mf == NULL || MPIDI_PART_calib_write(mf, name, pts, n) != 0;
            if (mf)
                bad |= fclose(mf) != 0;
            r.ok = !bad && MPIDI_PART_loggp_parse(text, name, &r.table, &line) == 0;
            if (r.ok && outf) {
                if (ftruncate(fileno(outf), 0) != 0 || fputs(text, outf) < 0)
                    r.ok = -2;
                if (fclose(outf) != 0)
                    r.ok = -2;
                outf = NULL;
            }
            MPL_external_free(text);    /* open_memstream's */
        }
        if (outf) {     /* nothing written */
            fclose(outf);
            if (created)
                unlink(out);
        }
        r.us = now_us() - t0;
    }
    if (world->rank == 0 && l.mpi_errno)
        r.ok = -1;      /* every rank fails with rank 0 (the others wait in the broadcast) */
    mpi_errno = MPIR_Bcast(&r, sizeof(r), MPI_BYTE, 0, world, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP1(l.mpi_errno || r.ok == -1, mpi_errno, MPI_ERR_OTHER, "**partcalib",
                         "**partcalib %s", "a round trip between ranks 0 and 1 failed");
    MPIR_ERR_CHKANDJUMP1(r.ok == -2, mpi_errno, MPI_ERR_OTHER, "**partcalib",
                         "**partcalib %s", "rank 0 could not write "
                         "MPIR_CVAR_PART_LOGGP_CALIBRATE_FILE");
    if (r.ok == -3) {
        /* out of time: the built-in table stays (part_loggp_calib_segs 0) */
        if (world->rank == 0)
            fprintf(stderr, "MPICH partitioned engine: the LogGP calibration at MPI_Init ran "
                    "out of MPIR_CVAR_PART_LOGGP_CALIBRATE_MS (%d ms) after %d of %d sizes "
                    "(%.0f ms); the built-in table stays\n", MPIR_CVAR_PART_LOGGP_CALIBRATE_MS,
                    r.sizes, CAL_NSIZES, r.us / 1000.0);
        MPIDI_PART_PVAR_SET(LOGGP_CALIB_US, r.us + 0.5);
        goto fn_exit;
    }
    MPIR_ERR_CHKANDJUMP1(!r.ok, mpi_errno, MPI_ERR_OTHER, "**partcalib", "**partcalib %s",
                         "the measured values do not make a LogGP table");
    MPIDI_PART_aggr_calibrated(&r.table, r.on_node);
    MPIDI_PART_PVAR_SET(LOGGP_CALIB_SEGS, r.table.nsegs);
    MPIDI_PART_PVAR_SET(LOGGP_CALIB_US, r.us + 0.5);

  fn_exit:
    MPL_free(l.sbuf);
    MPL_free(l.rbuf);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
