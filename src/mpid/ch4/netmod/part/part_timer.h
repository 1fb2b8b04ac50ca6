/*
 * part_timer.h: the timer aggregator's decisions for one wire-message group, as pure logic.
 *
 * No MPICH header here: compiled into libmpi and, unchanged, into the GoogleTest unit tests
 * (unittest/test_part_timer.cpp). No clock is read here: the caller passes `now` (any
 * monotonic clock in microseconds; values are only compared).
 *
 * A group is the run of user partitions that the plan (PLogGP chooser) puts in one wire
 * message. Per iteration:
 *   - a partition readied while nothing of the group waits sets the deadline: now + timeout;
 *   - when the group's last partition is readied, everything that waits goes at once: the
 *     whole group as one write if nothing of it was sent before the deadline;
 *   - once the deadline has passed (noticed by MPIDI_PART_tgroup_tick from progress, or by
 *     a later MPIDI_PART_tgroup_ready), every maximal run of contiguous ready-but-unsent
 *     partitions goes as one write each ("fired");
 *   - after that, the partitions readied later collect again the same way: the first sets a
 *     new deadline, so a thread that readies its partitions together after the deadline
 *     sends them as one run (seed 000 sends each late partition alone).
 * timeout 0 sends every partition as it comes (no aggregation); timeout < 0 never fires
 * (the group waits for its last partition: the plain PLogGP aggregator).
 *
 * Threads: every call on one group must be serialised (the engine's per-operation lock);
 * different groups are independent. Which calls race without that: MPIDI_PART_tgroup_ready
 * from the threads readying partitions of the same group, and MPIDI_PART_tgroup_tick from
 * progress, against each other and against reset (MPI_Start). To keep progress off the
 * lock when nothing is due, the engine may publish the earliest pending deadline in an
 * atomic of its own and take the lock only once it has passed: a stale value just delays
 * or wastes one tick, which then decides under the lock.
 */
#ifndef PART_TIMER_H_INCLUDED
#define PART_TIMER_H_INCLUDED

#include <stdint.h>
#include "part_ploggp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A write: user partitions [first, first + count) of the group (indices within it). */
typedef struct MPIDI_PART_run {
    int32_t first;
    int32_t count;
} MPIDI_PART_run_t;

typedef struct MPIDI_PART_tgroup {
    int32_t nparts;             /* user partitions in the group */
    int32_t nready;             /* readied in this iteration */
    int32_t nsent;              /* sent in this iteration */
    int32_t pending;            /* ready, not sent: the deadline below applies to them */
    int32_t lo;                 /* none of them is before this partition (nparts: none);
                                 * firing scans from here, not from 0 */
    double timeout;             /* us; 0: no waiting; < 0: never fire */
    double deadline;            /* first of the pending ready + timeout (pending > 0) */
    int32_t hurry;              /* 1: hurried for the rest of the iteration (halving
                                 * runs at each MPI_Pready* call's end, tgroup_hurry) */
    int32_t run_cap;            /* hurried: a stretch of ready partitions this long goes
                                 * at a call's end, halving or not; 0: no cap (set once,
                                 * MPIDI_PART_tgroup_set_run_cap; kept by reset) */
    double first;               /* when its first partition was readied in this iteration */
    double spread;              /* its last ready minus its first once all are readied in
                                 * this iteration; -1 until then */
    uint8_t *state;             /* nparts entries, MPIDI_PART_TG_* below (caller's memory) */
} MPIDI_PART_tgroup_t;

#define MPIDI_PART_TG_IDLE  0   /* not ready */
#define MPIDI_PART_TG_READY 1   /* ready, not sent */
#define MPIDI_PART_TG_SENT  2

/* Runs one call can return at most: maximal runs are separated by a gap. */
#define MPIDI_PART_TG_MAX_RUNS(nparts) (((nparts) + 1) / 2)

/* Errors of MPIDI_PART_tgroup_ready (the result is otherwise the number of runs) */
#define MPIDI_PART_TG_EINVAL (-1)       /* partition outside the group */
#define MPIDI_PART_TG_ETWICE (-2)       /* partition already ready in this iteration */
#define MPIDI_PART_TG_ETIME (-3)        /* MPIDI_PART_TG_UNTIMED where the time is needed */

/* state: nparts bytes owned by the caller. The group starts reset. */
void MPIDI_PART_tgroup_init(MPIDI_PART_tgroup_t * g, int32_t nparts, uint8_t * state,
                            double timeout);

/* New iteration: nothing ready, nothing sent, no deadline. */
void MPIDI_PART_tgroup_reset(MPIDI_PART_tgroup_t * g);

/* Partition p (0..nparts-1) became ready at now. Writes the writes to send now into runs
 * (room for MPIDI_PART_TG_MAX_RUNS(nparts)) and returns how many: 0 (wait), the maximal
 * runs of what waits when p completes the group (the whole group {0, nparts} when nothing
 * went before) or when this call notices the deadline; or an MPIDI_PART_TG_E* error.
 * now may be MPIDI_PART_TG_UNTIMED when MPIDI_PART_tgroup_timed(g) is 0 (see there). */
int32_t MPIDI_PART_tgroup_ready(MPIDI_PART_tgroup_t * g, int32_t p, double now,
                                MPIDI_PART_run_t * runs);

/* "now" not read: only for a call that completes a group already begun. */
#define MPIDI_PART_TG_UNTIMED (-1.0)

/* Whether readying one more partition of g needs the time. Not when it completes a group
 * whose first partition was readied before: everything waiting goes at once whatever the
 * deadline, so the call may post its writes without reading the clock (a clock read is
 * about 20 ns, a third of what the timer adds to such an MPI_Pready on this machine) and
 * give the group its spread afterwards (MPIDI_PART_tgroup_end). */
static inline int MPIDI_PART_tgroup_timed(const MPIDI_PART_tgroup_t * g)
{
    return g->nready == 0 || g->nready + 1 < g->nparts;
}

/* The group was completed by an untimed MPIDI_PART_tgroup_ready; now is when (read after
 * its writes were posted): records its spread. Nothing otherwise. */
static inline void MPIDI_PART_tgroup_end(MPIDI_PART_tgroup_t * g, double now)
{
    if (g->nready == g->nparts && g->spread < 0 && now >= 0)
        g->spread = now - g->first;
}

/* Progress: if partitions wait and their deadline has passed, fire: write every maximal
 * run of ready-unsent partitions into runs, mark them sent, return how many. Otherwise 0. */
int32_t MPIDI_PART_tgroup_tick(MPIDI_PART_tgroup_t * g, double now, MPIDI_PART_run_t * runs);

/* Fire now, whatever the deadline: every maximal run of ready-unsent partitions into runs,
 * marked sent; returns how many (0 when nothing waits). */
int32_t MPIDI_PART_tgroup_flush(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs);

/* Hurry g until MPIDI_PART_tgroup_reset: at the end of every MPI_Pready* call on it
 * (MPIDI_PART_tgroup_call_end, also right now), what waits goes as runs, as
 * MPIDI_PART_tgroup_flush, once it is at least as many partitions as the group still has
 * to ready; the deadline still applies. Partitions readied one by one then go in halving
 * runs (k/2, k/4, .., 1, 1): log2(k) + 1 writes, and when the last is readied only the run
 * before it may still be in flight. Returns the runs of now. The engine calls it on the
 * operation's last incomplete group (MPIDI_PART_timer_hurry). */
int32_t MPIDI_PART_tgroup_hurry(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs);

/* The end of an MPI_Pready* call that readied partitions of g: a hurried group's rule
 * above, and its run cap (MPIDI_PART_tgroup_set_run_cap); 0 (nothing) when g is not
 * hurried, or what waits is less than what is to come and no stretch of it reaches the
 * cap. */
int32_t MPIDI_PART_tgroup_call_end(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs);

/* A hurried group's run cap (0 or 1: none; at match, MPIDI_PART_timer_run_cap from the
 * path's protocol step): at the end of each MPI_Pready* call a stretch of ready
 * partitions that long goes, whatever halving says. Halving alone makes the first run
 * half the group, and over libfabric shm a write above 4 KiB costs the receiver a system
 * call (the rdma-shm table's step) that was still under way at the group's last
 * MPI_Pready: 4 x 8 partitions of 2 KiB readied in bursts, the timer's median time after
 * the last MPI_Pready was 1.23 us against none's 0.95 (runs of 8, 4, 2, 2 KiB then). With
 * a cap of 2, partitions readied one per call go 2, 2, 2, 1, 1: each write within the
 * step, one write more. The cap decides when a stretch goes, not how long it may be: a
 * call that readies several partitions at once (MPI_Pready_range, the credit's arming)
 * still sends what waits as one run, as a group's last partition does. */
static inline void MPIDI_PART_tgroup_set_run_cap(MPIDI_PART_tgroup_t * g, int32_t cap)
{
    g->run_cap = cap >= 2 ? cap : 0;
}

/* The run cap for user partitions of part_bytes bytes on a path whose writes up to
 * step_limit bytes are cheap (the engine passes MPIDI_PART_loggp_step_limit(table, 1.5);
 * 0: no step known): the most partitions one such write holds, when that is at least 2;
 * 0 (no cap) otherwise: when a write holds only one partition below the step (partitions
 * above half of it), halving keeps the writes few. */
static inline int32_t MPIDI_PART_timer_run_cap(int64_t step_limit, int64_t part_bytes)
{
    if (step_limit <= 0 || part_bytes <= 0 || step_limit / part_bytes < 2)
        return 0;
    int64_t cap = step_limit / part_bytes;
    return cap > INT32_MAX ? INT32_MAX : (int32_t) cap;
}

/* Whether g, the group that holds every partition of the operation still to ready
 * (op_unready of them; the caller checks that they are all in g), should hurry: once the
 * operation's other groups are whole, nothing after g hides its waiting, so every byte
 * that waits in it may be a byte sent after the iteration's last MPI_Pready. Hurried, g
 * sends in halving runs (MPIDI_PART_tgroup_hurry), at most log2(g->nparts) writes more per
 * iteration, which overlap the computing between the readies. A single group (the whole
 * operation) hurries from its first MPI_Pready* call: it used to hurry only when one
 * partition was left, so a thread readying 8 x 2 KiB back to back sent 7 of them as one
 * write just before the 8th, and over libfabric shm a write above 4 KiB costs the
 * receiver a system call: 0.16-0.18 of none's perceived bandwidth at 16-32 KiB, 0.79-0.85
 * since (bench/results/2026-11-26-rdma-tables). Not with timeout < 0 (plain PLogGP), nor
 * twice. */
static inline int MPIDI_PART_timer_hurry(const MPIDI_PART_tgroup_t * g, int32_t op_unready)
{
    return g->timeout >= 0 && !g->hurry && op_unready > 0;
}

/* The adaptive deadline (MPIR_CVAR_PART_AGGR_TIMEOUT_US left at its default): the median
 * of the spreads (first to last MPI_Pready) of the n groups of two partitions or more in
 * the last iteration, within [base, max(cap, window / 2)]; base when n is 0. window: the
 * last iteration's first to last MPI_Pready of the whole operation. Half of it bounds the
 * wait so that what is readied in an iteration's first half leaves before its last
 * MPI_Pready (nothing early is still held back at the end); cap (the expected spread,
 * MPIR_CVAR_PART_AGGR_SPREAD_US) is the floor of that bound. Without the window, a cap of
 * 100 us split groups of 4 x 128 KiB partitions that one thread readied over 100-300 us
 * on this 2-core machine (4 threads and the receiver: a thread is descheduled mid-burst)
 * into two writes each: 17 writes for 32 partitions instead of 10. On a steady pattern half the
 * groups then stay one write each (seed 000 picks its deadline from this arrival profile
 * by hand, Fig. 12); a laggard group, whose spread is the laggard's delay, is outvoted by
 * the others. 1.5 x the median (tried) kept more groups whole but held a whole group of
 * data back until the laggard came (perceived bandwidth 0.63-0.66 of none with 4 x 8
 * partitions of 32 KiB). spreads is reordered. */
double MPIDI_PART_timer_adapt(double *spreads, int32_t n, double base, double cap,
                              double window);

/* Whether a tick at now would fire (read-only; serialised like the others). */
int MPIDI_PART_tgroup_due(const MPIDI_PART_tgroup_t * g, double now);

/* Whether every partition of the group has been sent in this iteration. */
static inline int MPIDI_PART_tgroup_all_sent(const MPIDI_PART_tgroup_t * g)
{
    return g->nsent == g->nparts;
}

/* The longest deadline (us): MPIR_CVAR_PART_AGGR_TIMEOUT_US's upper bound, and the
 * default's (a deadline in ns must fit the engine's int32_t). */
#define MPIDI_PART_TIMER_MAX_US 2000000

/* The default timeout (us) for a group whose user partitions have part_bytes bytes each:
 * the cost of the one extra write that firing typically adds in the many-before-one case
 * (the laggard's own), max(g, o_s) + o_r + c at part_bytes, with c the model's per-message
 * cost (msg_cost < 0: o_s + o_r). Waiting that long and then firing costs at most twice
 * the better of "wait for all" and "send at once" (ski rental). At most
 * MPIDI_PART_TIMER_MAX_US (a parameter file may hold any finite value: one with L, o and
 * g of 0.6 s made 2.4 s, whose nanoseconds wrapped negative in an int32_t and turned the
 * timer off, so that a group waited for its last partition; found 2026-12-01). */
double MPIDI_PART_timer_default_timeout(const MPIDI_PART_loggp_t * t, double msg_cost,
                                        int64_t part_bytes);

#ifdef __cplusplus
}
#endif
#endif /* PART_TIMER_H_INCLUDED */
