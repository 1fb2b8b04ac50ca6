/*
 * part_ploggp.h: LogGP parameters, a partitioned-LogGP (PLogGP) completion-time model and
 * the merge-factor chooser built on it, as pure logic.
 *
 * No MPICH header here: compiled into libmpi and, unchanged, into the GoogleTest unit tests
 * (unittest/test_part_ploggp.cpp). Times are microseconds (double), G is microseconds per
 * byte, sizes are bytes (int64_t). The model and its formula: the comment at the top of
 * part_ploggp.c.
 *
 * Parameter file (MPIDI_PART_loggp_parse), one segment per line, sizes strictly increasing:
 *
 *     # comment (also after the numbers)
 *     transport shm                 optional: starts the table of transport "shm"
 *     0     0.12 0.10 0.10 0.05 2.0e-4
 *     65536 1.50 3.00 3.00 0.50 1.0e-4
 *     ^bytes L    o_s  o_r  g    G
 *
 * A seventh number, S (the sender's time per message that computation does not hide), is
 * optional; a table gives it on all of its lines or on none (0 then).
 *
 * A segment applies from its min_bytes up to the next segment's; sizes below the first
 * segment use the first. tools/part-calibrate writes such files.
 */
#ifndef PART_PLOGGP_H_INCLUDED
#define PART_PLOGGP_H_INCLUDED

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIDI_PART_LOGGP_MAX_SEGS 16
#define MPIDI_PART_LOGGP_NAME_MAX 32    /* transport name, with its terminating 0 */

typedef struct MPIDI_PART_loggp_seg {
    int64_t min_bytes;          /* first message size this segment applies to */
    double L;                   /* latency */
    double o_s;                 /* sender overhead per message */
    double o_r;                 /* receiver overhead per message */
    double g;                   /* gap between consecutive messages */
    double G;                   /* gap per byte (us/byte) */
    double S;                   /* the sender's time per message that computation does not
                                 * hide: its MPI_Isend call and what MPI_Wait still takes after
                                 * a long gap (a rendezvous the sender's progress must move); 0
                                 * when the table does not give it (a 6-column file) */
} MPIDI_PART_loggp_seg_t;

typedef struct MPIDI_PART_loggp {
    int32_t nsegs;              /* 1..MPIDI_PART_LOGGP_MAX_SEGS */
    char name[MPIDI_PART_LOGGP_NAME_MAX];
    MPIDI_PART_loggp_seg_t seg[MPIDI_PART_LOGGP_MAX_SEGS];
    int32_t on_node;            /* the table is used for peers on the same node, where a
                                 * rendezvous handshake is the two sides' progress and nothing
                                 * else (the observed chooser counts it twice, part_ploggp.c
                                 * obs_msg_cost); not read from a file, set by who loads it */
} MPIDI_PART_loggp_t;

/* Built-in tables, measured on the development machine (part_ploggp.c says how). */
enum MPIDI_PART_loggp_builtin {
    MPIDI_PART_LOGGP_SHM = 0,   /* MPI messages over shared memory, one host */
    MPIDI_PART_LOGGP_TCP,       /* MPI messages over TCP (loopback) */
    MPIDI_PART_LOGGP_RDMA_SHM,  /* RDMA writes with immediate data, libfabric shm */
    MPIDI_PART_LOGGP_RDMA_TCP   /* the same over libfabric tcp;ofi_rxm (loopback) */
};
const MPIDI_PART_loggp_t *MPIDI_PART_loggp_builtin(int which);

/* The segment that applies to a message of `bytes` bytes (bytes < 0 is taken as 0). */
const MPIDI_PART_loggp_seg_t *MPIDI_PART_loggp_lookup(const MPIDI_PART_loggp_t * t,
                                                      int64_t bytes);

/* The parameters the observed chooser uses for a message of `bytes` bytes (*out; its
 * min_bytes is bytes): the rows read as measured points, L, o_s, o_r, g and S linear between
 * the two around `bytes` (G the lower row's); below the first row the first, above the last
 * the last (nothing extrapolated). A protocol step located to the byte is two rows one byte
 * apart, so nothing is smoothed across it. */
void MPIDI_PART_loggp_at(const MPIDI_PART_loggp_t * t, int64_t bytes,
                         MPIDI_PART_loggp_seg_t * out);

/* The largest message size the table shows as sent before a protocol step that
 * tools/part-calibrate located to the byte (two segments one byte apart, the second with at
 * least twice the o_s + o_r of the first: eager up to the first, rendezvous from the second).
 * The first such step counts; 0 when the table has none. */
int64_t MPIDI_PART_loggp_eager_limit(const MPIDI_PART_loggp_t * t);

/* The same with another factor: the largest size before the first step located to the
 * byte whose o_s + o_r is at least factor times the one below (eager_limit: factor 2). The
 * timer's run cap uses 1.5: libfabric shm's step at 4 KiB (a system call on the receiving
 * side) is 1.9x in the built-in rdma-shm table. */
int64_t MPIDI_PART_loggp_step_limit(const MPIDI_PART_loggp_t * t, double factor);

/* Return codes of the parser. */
#define MPIDI_PART_LOGGP_OK        0
#define MPIDI_PART_LOGGP_ESYNTAX   1    /* not 6 or 7 numbers (or 7 on some lines of a table
                                         * and 6 on others), not a number, bad header line */
#define MPIDI_PART_LOGGP_EVALUE    2    /* NaN, infinite or negative value */
#define MPIDI_PART_LOGGP_EORDER    3    /* min_bytes not strictly increasing in a table */
#define MPIDI_PART_LOGGP_ETOOMANY  4    /* more than MPIDI_PART_LOGGP_MAX_SEGS segments */
#define MPIDI_PART_LOGGP_EDUP      5    /* the same transport header twice */
#define MPIDI_PART_LOGGP_ENOTFOUND 6    /* no table for the requested transport (line 0) */
#define MPIDI_PART_LOGGP_EEMPTY    7    /* the requested table has no segment (its header) */

/* Parse a parameter file held in memory (0-terminated). Every line of the text is checked,
 * whichever table is requested. transport == NULL or "": the first table with segments
 * (the lines before any header form an unnamed table); otherwise the table after "transport <name>". On
 * success *out holds that table. On error *line is the 1-based line at fault (0 when the
 * error concerns no line), and *out is unspecified. */
int MPIDI_PART_loggp_parse(const char *text, const char *transport, MPIDI_PART_loggp_t * out,
                           int *line);

/* The same from a file; MPIDI_PART_LOGGP_EIO (line 0) when it cannot be read: it cannot
 * be opened, is not a regular file (a FIFO, a directory, a device: it is opened without
 * blocking and never read), is larger than MPIDI_PART_LOGGP_MAX_FILE or holds a NUL byte. */
#define MPIDI_PART_LOGGP_EIO       8
#define MPIDI_PART_LOGGP_MAX_FILE  (1 << 20)
int MPIDI_PART_loggp_load(const char *path, const char *transport, MPIDI_PART_loggp_t * out,
                          int *line);

/* What a return code of the parser or the loader means, in words (for error messages). */
const char *MPIDI_PART_loggp_strerror(int code);

/* ---- the model ------------------------------------------------------------------------- */

enum MPIDI_PART_arrival {
    MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE = 0, /* all partitions at 0, the last one at delta */
    MPIDI_PART_ARRIVAL_UNIFORM  /* partition p of U at delta * p / (U - 1) */
};

typedef struct MPIDI_PART_model {
    double delta;               /* spread of the MPI_Pready times (us), >= 0 */
    int32_t arrival;            /* enum MPIDI_PART_arrival */
    double msg_cost;            /* c: cost per wire message on the critical path after the
                                 * last MPI_Pready (us); < 0: o_s + o_r of the message's
                                 * segment (see part_ploggp.c) */
} MPIDI_PART_model_t;

/* The problem: S bytes in total, U user partitions on the sending side, n = gcd-messages
 * (n divides U; every gcd-message has S/n bytes). */
typedef struct MPIDI_PART_problem {
    int64_t bytes;              /* S >= 0 */
    int32_t send_parts;         /* U >= 1 */
    int32_t ngcd;               /* n >= 1, U % n == 0 */
} MPIDI_PART_problem_t;

/* Predicted completion time (us, from t = 0 when the first partition is ready) of one
 * iteration when k consecutive gcd-messages are merged (T = ceil(n/k) wire messages).
 * Returns a negative value for invalid input (k outside 1..n, bad problem). */
double MPIDI_PART_ploggp_predict(const MPIDI_PART_loggp_t * t, const MPIDI_PART_model_t * m,
                                 const MPIDI_PART_problem_t * pb, int32_t k);

/* Up to this many gcd-messages, the chooser tries every merge factor 1..n; above, only the
 * candidates listed in part_ploggp.c (powers of two of k and of T, and the extremes). */
#define MPIDI_PART_PLOGGP_EXHAUSTIVE_MAX 4096

/* The merge factor k (1..n) that minimises the prediction among the candidates with at
 * most max_msgs wire messages (max_msgs < 1: no limit); ties go to fewer messages, then to
 * the smaller k. *pred (optional) gets the prediction. Returns 0 on invalid input. */
int32_t MPIDI_PART_ploggp_choose(const MPIDI_PART_loggp_t * t, const MPIDI_PART_model_t * m,
                                 const MPIDI_PART_problem_t * pb, int32_t max_msgs,
                                 double *pred);

/* The timer aggregator's groups (part_aggr.c): like MPIDI_PART_ploggp_choose, but only
 * k = n (one group) and the powers of two up to k_max are candidates, so that groups start
 * at multiples of a power of two: a block of partitions one thread readies together (8 of a
 * thread's 8, 16 of 128 partitions over 8 threads) is then whole in one group or split into
 * whole groups, never shared with a neighbour that another thread readies later (seed 000
 * also picks T among powers of two). Ties go to fewer messages. Returns 0 on invalid input
 * or k_max < 1. */
int32_t MPIDI_PART_ploggp_choose_aligned(const MPIDI_PART_loggp_t * t,
                                         const MPIDI_PART_model_t * m,
                                         const MPIDI_PART_problem_t * pb, int32_t k_max,
                                         double *pred);

/* ---- re-planning from an observed iteration (the tag transport, section 4c) ----------
 * ready[j] (us, any origin): when gcd-message j became complete in the observed iteration
 * (the MPI_Pready call that readied its last partition); sent[j] (us, >= 0): how long that
 * call then spent sending it (the observed layout sent every gcd-message as it completed,
 * so a thread's next MPI_Pready came that much later than it would have without the send,
 * and so did other threads' calls held up by it: the VCI's lock, the cores).
 * The timeline without those sends (MPIDI_PART_ploggp_adjust_ready) decides; the gap
 * between neighbours j-1 and j is the distance of their adjusted times; where it exceeds
 * tau (us) the two are kept in different wire
 * messages: merging them would hold the earlier one back longer than tau, the cost of one
 * extra message (the timer aggregator's deadline, part_timer.h). Candidates are the merge
 * factors k that cut every such boundary (k divides each boundary position j), with at
 * most max_msgs wire messages (max_msgs < 1: no limit); above 256 gcd-messages only the
 * extremes, powers of two of k and k = ceil(n / 2^i) are tried. */

/* The observed timeline without the observed layout's own sends: out[j] = ready[j] less the
 * time before ready[j] during which any send was under way (the union of the intervals
 * [ready[i], ready[i] + sent[i]]), less the same for the earliest ready time, which thus
 * becomes 0. Sends are taken to hold up every thread (one VCI's lock, 2 cores); where
 * threads really ran beside the sends this shortens their gaps. sent == NULL: out[j] =
 * ready[j] less the earliest. The model and the boundaries use these times. Times must be
 * finite and sent[] >= 0 (MPIDI_PART_ploggp_choose_observed checks); n < 1: nothing. */
void MPIDI_PART_ploggp_adjust_ready(int32_t n, const double *ready, const double *sent,
                                    double *out);

/* Predicted completion time (us after the first ready time) when k consecutive
 * gcd-messages are merged and wire message m is ready at the latest ready[] of its
 * gcd-messages; messages are injected in the order they are ready (part_ploggp.c). Each
 * message's parameters are MPIDI_PART_loggp_at's (the a-priori choosers above use the
 * segments); msg_cost >= 0: c per message, < 0: o_s + o_r, less 2 G (b - 1) past the
 * table's rendezvous switch (MPIDI_PART_loggp_eager_limit; why: part_ploggp.c,
 * obs_msg_cost). ready[] are times without the observed sends (adjust_ready's): each
 * message's S delays the ready times of the messages after it. Where the sender moves a
 * message (past the switch, 2 (S - S of the eager limit) >= G (b - 1)), its o_s and o_r
 * lose G (b - 1), the transfer the timeline has in G (part_ploggp.c, sender_moves).
 * Negative for invalid input. */
double MPIDI_PART_ploggp_predict_observed(const MPIDI_PART_loggp_t * t,
                                          const MPIDI_PART_problem_t * pb, const double *ready,
                                          double msg_cost, int32_t k);

/* The candidate with the lowest MPIDI_PART_ploggp_predict_observed of the adjusted times
 * (MPIDI_PART_ploggp_adjust_ready; with sent == NULL the times keep the observed sends and
 * no S is charged on top; ties: fewer messages,
 * then the larger k); 1 when no neighbours may be merged (the smallest k within max_msgs
 * when no candidate is); 0 on invalid input. *pred
 * (optional) gets the prediction, *boundaries (optional) the number of kept boundaries. */
int32_t MPIDI_PART_ploggp_choose_observed(const MPIDI_PART_loggp_t * t,
                                          const MPIDI_PART_problem_t * pb, const double *ready,
                                          const double *sent, double tau, int32_t max_msgs,
                                          double *pred, int32_t * boundaries);

/* Several observed iterations (the tag transport observes up to MPIDI_PART_OBS_MAX, section
 * 4c): ready and sent hold nobs samples of n = pb->ngcd times each, one after the other
 * (sample o at ready[o * n]; sent NULL: none). A boundary any sample shows is kept, and a
 * candidate's prediction is the median over the samples (the mean of the middle two for an
 * even count), so one iteration unlike the others does not decide. nobs = 1 is
 * MPIDI_PART_ploggp_choose_observed; 0 on invalid input (nobs outside 1..OBS_MAX too). */
#define MPIDI_PART_OBS_MAX 8
int32_t MPIDI_PART_ploggp_choose_observed_multi(const MPIDI_PART_loggp_t * t,
                                                const MPIDI_PART_problem_t * pb, int32_t nobs,
                                                const double *ready, const double *sent,
                                                double tau, int32_t max_msgs, double *pred,
                                                int32_t * boundaries);

/* Whether the chooser considers merge factor k (what the unit tests brute-force over). */
int MPIDI_PART_ploggp_is_candidate(int32_t ngcd, int32_t k);

#ifdef __cplusplus
}
#endif
#endif /* PART_PLOGGP_H_INCLUDED */
