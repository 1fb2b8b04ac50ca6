/*
 * part_rdma_timer.c: the timer aggregator on the RDMA transport (README, "Timer
 * aggregator"). Each wire message of the plan is a group; the sender decides per iteration,
 * with part_timer.c's rule, whether a group goes as one write (all its partitions ready
 * within the deadline) or as runs of ready partitions (the deadline passed). Deadlines are
 * checked by later MPI_Pready calls and by MPICH's progress (MPIDI_PART_rtimer_progress,
 * from the engine's hook and from MPI_Parrived); nothing sleeps and no thread is added.
 *
 * Writes: w < nmsgs is group w whole; w >= nmsgs is the run that starts at sender partition
 * w - nmsgs (its length in runlen[]). Every data immediate of a timer operation names the
 * run (first partition and length, part_imm.h). The receiver counts arrived partitions per
 * gcd-message (MPI_Parrived answers for those before their group is whole) and per group
 * (the group is the wire message the core counts).
 *
 * Locks: the groups of one operation are under its own mutex, taken after the engine lock
 * or alone, never before it; no MPI call and no backend call under either. Like the engine
 * lock it is taken only when MPI runs threaded (MPIDI_PART_MUTEX_LOCK).
 */
#include "part_rdma.h"
#include "part_timer.h"
#include <math.h>
#include <time.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_DEBUG_TIMER_READY_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: an MPI_Pready* call on a timer operation whose first partition is 0,
        made before the receiver's credit came, busy-waits this many microseconds between
        setting its ready flags and the timer's decision, so that the credit's arming can
        send the partition, the iteration complete and the next begin meanwhile
        (threads/part/part_race_timer_iter). 0: off.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

struct MPIDI_PART_rtimer {
    MPID_Thread_mutex_t lock;   /* sender: the groups, active, armed */
    int active;                 /* sender: the running iteration uses the timer */
    int armed;                  /* sender: its credit came (the groups may send) */
    int32_t ngroups;
    int32_t ppg;                /* the sender's partitions per full group */
    int32_t sparts;             /* the sender's partitions */
    int32_t nready;             /* sender: partitions readied in this iteration (lock) */
    int32_t incomplete;         /* sender: groups not whole in this iteration (lock) */
    MPIDI_PART_iter_t iter;     /* sender: MPI_Starts seen (lock) */
    double base_us, cap_us;     /* sender: the PLAN's deadline and the adaptive one's cap */
    double *spreads;            /* sender: scratch for MPIDI_PART_timer_adapt, or NULL
                                 * (fixed deadline) */
    MPIDI_PART_tgroup_t *g;     /* sender: per group */
    uint8_t *tstate;            /* sender: per partition (the groups' state) */
    int32_t *runlen;            /* sender: per partition, length of the run written from it */
    int32_t *wdone;             /* sender: per group, partitions whose write completed */
    int32_t *got;               /* receiver: per group, partitions arrived (engine lock) */
    int32_t spu;                /* receiver: the sender's partitions per gcd-message */
    int32_t rpu;                /* receiver: its own partitions per gcd-message */
    int32_t *ucnt;              /* receiver: per gcd-message, partitions arrived (engine lock) */
    uint8_t *udone;             /* receiver: per gcd-message, all arrived (atomic) */
    int listed;                 /* sender: in rt.senders, its lock made */
    MPIDI_PART_op_t *next;      /* sender: the list of timer senders (engine lock) */
};

static struct {
    MPIDI_PART_op_t *senders;   /* engine lock */
    int64_t next_due;           /* ns; INT64_MAX: no deadline pending (atomic) */
    int ticking;                /* one tick pass at a time (atomic) */
    struct {
        MPIDI_PART_op_t *op;
        int32_t w;
    } out[256];                 /* writes a tick pass sends (the ticking thread's) */
} rt = {.next_due = INT64_MAX };

static int tick(int64_t now);

static inline void due_min(int64_t due)
{
    int64_t cur = __atomic_load_n(&rt.next_due, __ATOMIC_RELAXED);
    while (due < cur &&
           !__atomic_compare_exchange_n(&rt.next_due, &cur, due, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

/* The sender's partitions in group m. */
static inline int32_t group_parts(const MPIDI_PART_rtimer_t * t, int32_t m)
{
    int32_t left = t->sparts - m * t->ppg;
    return left < t->ppg ? left : t->ppg;
}

/* ---- setup --------------------------------------------------------------------------- */

int MPIDI_PART_rtimer_setup(MPIDI_PART_op_t * op, int32_t timer_ns)
{
    int mpi_errno = MPI_SUCCESS, err;
    const MPIDI_PART_plan_t *plan = &op->st.plan;
    int32_t sparts = op->is_send ? op->partitions : op->peer_partitions;
    int32_t ppg = MPIDI_PART_plan_parts_per_msg(plan, sparts);
    MPIDI_PART_rtimer_t *t;

    MPIR_ERR_CHKANDJUMP2(timer_ns < 0 || sparts > (int) MPIDI_PART_IMM_TIMER_PARTS ||
                         ppg < 1 || ppg > (int) MPIDI_PART_IMM_TIMER_RUN, mpi_errno,
                         MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                         op->rdma->tp->id, plan->nmsgs);
    t = MPL_calloc(1, sizeof(*t), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(t == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    op->rdma->timer = t;        /* freed by MPIDI_PART_rtimer_free, also when half made */
    t->ngroups = plan->nmsgs;
    t->ppg = ppg;
    t->sparts = sparts;
    op->timer_ns = timer_ns;
    if (!op->is_send) {
        t->spu = sparts / plan->gcd;
        t->rpu = op->partitions / plan->gcd;
        t->got = MPL_calloc(t->ngroups, sizeof(int32_t), MPL_MEM_OTHER);
        t->ucnt = MPL_calloc(plan->gcd, sizeof(int32_t), MPL_MEM_OTHER);
        t->udone = MPL_calloc(plan->gcd, 1, MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(!t->got || !t->ucnt || !t->udone, mpi_errno, MPI_ERR_OTHER,
                            "**nomem");
        goto fn_exit;
    }
    t->g = MPL_calloc(t->ngroups, sizeof(*t->g), MPL_MEM_OTHER);
    t->tstate = MPL_calloc(sparts, 1, MPL_MEM_OTHER);
    t->runlen = MPL_calloc(sparts, sizeof(int32_t), MPL_MEM_OTHER);
    t->wdone = MPL_calloc(t->ngroups, sizeof(int32_t), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(!t->g || !t->tstate || !t->runlen || !t->wdone, mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    t->base_us = timer_ns / 1000.0;
    t->cap_us = op->timer_cap_ns / 1000.0;
    if (t->cap_us > t->base_us) {
        t->spreads = MPL_malloc(sizeof(double) * t->ngroups, MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(!t->spreads, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    for (int32_t m = 0; m < t->ngroups; m++) {
        MPIDI_PART_tgroup_init(&t->g[m], group_parts(t, m), t->tstate + m * ppg,
                               timer_ns / 1000.0);
        MPIDI_PART_tgroup_set_run_cap(&t->g[m], op->timer_run);
    }
    MPID_Thread_mutex_create(&t->lock, &err);
    MPIR_ERR_CHKANDJUMP(err, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIDI_PART_LOCK();
    t->next = rt.senders;
    rt.senders = op;
    t->listed = 1;
    MPIDI_PART_UNLOCK();

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* No lock: from MPIDI_PART_rdma_detach; unlinked before it is freed, so a tick pass (which
 * walks the list under the engine lock) never sees it half gone. */
void MPIDI_PART_rtimer_free(MPIDI_PART_op_t * op)
{
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    int err;
    if (t == NULL)
        return;
    if (t->listed) {
        MPIDI_PART_LOCK();
        for (MPIDI_PART_op_t ** pp = &rt.senders; *pp; pp = &(*pp)->rdma->timer->next) {
            if (*pp == op) {
                *pp = t->next;
                break;
            }
        }
        MPIDI_PART_UNLOCK();
        MPID_Thread_mutex_destroy(&t->lock, &err);
    }
    MPL_free(t->g);
    MPL_free(t->tstate);
    MPL_free(t->runlen);
    MPL_free(t->wdone);
    MPL_free(t->spreads);
    MPL_free(t->got);
    MPL_free(t->ucnt);
    MPL_free(t->udone);
    MPL_free(t);
    op->rdma->timer = NULL;
}

/* ---- writes ------------------------------------------------------------------------------ */

int MPIDI_PART_rdma_write_msg(MPIDI_PART_op_t * op, int w)
{
    if (w < op->st.nmsgs)
        return w;
    return (w - op->st.nmsgs) / op->rdma->timer->ppg;
}

void MPIDI_PART_rdma_wire(MPIDI_PART_op_t * op, int w, MPI_Aint * off, MPI_Aint * len,
                          uint32_t * imm)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    MPIDI_PART_rtimer_t *t = r->timer;
    uint32_t low = (uint32_t) w;

    if (w < op->st.nmsgs) {
        MPIDI_PART_rdma_span(op, w, off, len);
        if (t)
            MPIDI_PART_imm_timer_low((uint32_t) (w * t->ppg), (uint32_t) group_parts(t, w),
                                     &low);
    } else {
        int32_t first = w - op->st.nmsgs, count = t->runlen[first];
        *off = first * op->part_extent;
        *len = count * op->part_extent;
        if (*off + *len > op->total_bytes)
            *len = op->total_bytes - *off;
        MPIDI_PART_imm_timer_low((uint32_t) first, (uint32_t) count, &low);
    }
    MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, r->peer_slot, low, imm);
}

void MPIDI_PART_rdma_write_done(MPIDI_PART_op_t * op, int w)
{
    if (w < op->st.nmsgs) {
        MPIDI_PART_msg_done(op, w);
        return;
    }
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    int32_t first = w - op->st.nmsgs, m = first / t->ppg;
    if (__atomic_add_fetch(&t->wdone[m], t->runlen[first], __ATOMIC_ACQ_REL) ==
        group_parts(t, m))
        MPIDI_PART_msg_done(op, m);
}

/* Group-relative runs of group m into writes; returns how many. Timer lock held. */
static int runs_to_writes(MPIDI_PART_op_t * op, MPIDI_PART_rtimer_t * t, int32_t m,
                          const MPIDI_PART_run_t * runs, int n, int32_t * w)
{
    for (int i = 0; i < n; i++) {
        if (runs[i].first == 0 && runs[i].count == t->g[m].nparts) {
            w[i] = m;   /* the whole group: one write as without the timer */
        } else {
            int32_t first = m * t->ppg + runs[i].first;
            t->runlen[first] = runs[i].count;
            w[i] = op->st.nmsgs + first;
        }
    }
    return n;
}

/* No lock: send n writes after earlier ones whose first error was mpi_errno; returns the
 * first error of all (every write is tried). */
static int send_writes(MPIDI_PART_op_t * op, const int32_t * w, int n, int mpi_errno)
{
    int runs = 0;
    for (int i = 0; i < n; i++) {
        runs += (w[i] >= op->st.nmsgs);
        int err = op->tp->send(op, w[i]);
        if (err && mpi_errno == MPI_SUCCESS)
            mpi_errno = err;
    }
    if (runs)
        MPIDI_PART_PVAR_ADD(TIMER_RUNS, runs);
    return mpi_errno;
}

/* Timer lock held: group m's deadline is pending; publish it for progress. */
static inline void note_deadline(const MPIDI_PART_tgroup_t * g)
{
    if (g->pending > 0)
        due_min((int64_t) (g->deadline * 1000.0));
}

/* Timer lock held: once one group of the operation is left incomplete, it hurries (halving
 * runs instead of the deadline; part_timer.h, MPIDI_PART_timer_hurry; a single group from
 * the first call). m: the group of the partition
 * just readied, or -1. Its writes into w; returns how many. The group is looked for once
 * per iteration at most (m is it, or was completed by this call). */
static int last_group(MPIDI_PART_op_t * op, MPIDI_PART_rtimer_t * t, int32_t m,
                      MPIDI_PART_run_t * runs, int32_t * w)
{
    if (t->incomplete != 1)
        return 0;
    if (m < 0 || t->g[m].nready == t->g[m].nparts)
        for (m = 0; m < t->ngroups && t->g[m].nready == t->g[m].nparts; m++);
    if (m == t->ngroups || !MPIDI_PART_timer_hurry(&t->g[m], t->sparts - t->nready))
        return 0;
    return runs_to_writes(op, t, m, runs, MPIDI_PART_tgroup_hurry(&t->g[m], runs), w);
}

/* Timer lock held: account for partition readied into group g (nr: tgroup_ready's result). */
static inline void count_ready(MPIDI_PART_rtimer_t * t, const MPIDI_PART_tgroup_t * g,
                               int32_t nr)
{
    if (nr < 0)
        return; /* ETWICE: the arming counted it already */
    t->nready++;
    t->incomplete -= g->nready == g->nparts;
}

/* ---- iterations ------------------------------------------------------------------------ */

/* Timer lock held, at MPI_Start: the deadline of the iteration from the spreads of the
 * groups readied whole in the last one (none seen, e.g. before the first timer iteration:
 * it stays). O(groups), once per iteration. */
static void adapt(MPIDI_PART_rtimer_t * t)
{
    int32_t n = 0;
    double lo = HUGE_VAL, hi = -HUGE_VAL;       /* the operation's first and last MPI_Pready */
    for (int32_t m = 0; m < t->ngroups; m++) {
        const MPIDI_PART_tgroup_t *g = &t->g[m];
        if (g->spread < 0)
            continue;
        if (g->nparts >= 2)
            t->spreads[n++] = g->spread;
        lo = g->first < lo ? g->first : lo;
        hi = g->first + g->spread > hi ? g->first + g->spread : hi;
    }
    if (n == 0)
        return;
    double to = MPIDI_PART_timer_adapt(t->spreads, n, t->base_us, t->cap_us, hi - lo);
    for (int32_t m = 0; m < t->ngroups; m++)
        t->g[m].timeout = to;
    MPIDI_PART_PVAR_SET(TIMER_DEADLINE, to * 1000.0 + 0.5);
}

void MPIDI_PART_rtimer_start(MPIDI_PART_op_t * op, int armed)
{
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    if (!op->is_send) {
        memset(t->got, 0, sizeof(int32_t) * t->ngroups);
        memset(t->ucnt, 0, sizeof(int32_t) * op->st.plan.gcd);
        memset(t->udone, 0, op->st.plan.gcd);
        return;
    }
    MPIDI_PART_MUTEX_LOCK(&t->lock);
    if (t->spreads)
        adapt(t);
    for (int32_t m = 0; m < t->ngroups; m++)
        MPIDI_PART_tgroup_reset(&t->g[m]);
    t->nready = 0;
    t->incomplete = t->ngroups;
    __atomic_store_n(&t->iter, t->iter + 1, __ATOMIC_RELAXED);   /* read by MPI_Pready
                                                                 * without the lock */
    memset(t->wdone, 0, sizeof(int32_t) * t->ngroups);
    __atomic_store_n(&t->active, 1, __ATOMIC_RELEASE);  /* read by MPI_Pready without the lock */
    __atomic_store_n(&t->armed, armed, __ATOMIC_RELAXED);     /* (a testing aid reads it
                                                                 * without the lock) */
    MPIDI_PART_MUTEX_UNLOCK(&t->lock);
}

int MPIDI_PART_rtimer_active(MPIDI_PART_op_t * op, MPIDI_PART_iter_t * iter)
{
    MPIDI_PART_rtimer_t *t = op->rdma ? op->rdma->timer : NULL;
    if (!t || !op->is_send || !__atomic_load_n(&t->active, __ATOMIC_ACQUIRE))
        return 0;
    if (iter)
        *iter = __atomic_load_n(&t->iter, __ATOMIC_RELAXED);
    return 1;
}

/* Room for the writes one MPI_Pready* call decides before it posts them: a partition's
 * group may fire all its runs (at most MPIDI_PART_TG_MAX_RUNS of 64 partitions), and the
 * call's end adds its group's and the last group's; the call posts what it has decided
 * whenever less room than two groups' runs is left. */
#define CALL_WRITES 128
#define CALL_CLOSED 8

int MPIDI_PART_rtimer_ready(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, int n, int lo,
                            const int *list)
{
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    MPIDI_PART_run_t runs[MPIDI_PART_TG_MAX_RUNS(MPIDI_PART_IMM_TIMER_RUN)];
    int32_t w[CALL_WRITES];
    int32_t closed[CALL_CLOSED];        /* groups completed without a clock read */
    int32_t m = 0;
    int nw = 0, nclosed = 0, mpi_errno = MPI_SUCCESS;
    double now = -1;    /* one clock read per call, when a partition needs it */

    if (unlikely(MPIR_CVAR_PART_DEBUG_TIMER_READY_DELAY_US > 0) &&
        (list ? list[0] : lo) == 0 && !__atomic_load_n(&t->armed, __ATOMIC_RELAXED))
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_TIMER_READY_DELAY_US);
    MPIDI_PART_MUTEX_LOCK(&t->lock);
    /* iter: the iteration whose ready flags the caller set (read before it set them). Once
     * it is over, the credit's arming sent those partitions from their flags: the call was
     * held up between its flags and here while the iteration completed and the program
     * started the next; deciding now would send them in the new one, with the buffer's
     * bytes of whenever the arming of that one reads them (and the program's own
     * MPI_Pready of them there would find them ready already). */
    if (t->iter != iter)
        n = 0;
    for (int i = 0; t->armed && i < n; i++) {   /* before the credit, rtimer_arm counts them */
        int p = list ? list[i] : lo + i;
        m = p / t->ppg;
        MPIDI_PART_tgroup_t *g = &t->g[m];
        double at = now;
        if (at < 0) {
            /* the partition that completes a group already begun needs no time: its
             * writes go before the clock is read for the group's spread (the adaptive
             * deadline's input, t->spreads) */
            if (MPIDI_PART_tgroup_timed(g) || (t->spreads && nclosed == CALL_CLOSED))
                at = now = MPIDI_PART_now_ns() / 1000.0;
            else
                at = MPIDI_PART_TG_UNTIMED;
        }
        int32_t nr = MPIDI_PART_tgroup_ready(g, p - m * t->ppg, at, runs);
        if (at < 0 && nr >= 0 && t->spreads)
            closed[nclosed++] = m;
        count_ready(t, g, nr);
        if (nr > 0)
            nw += runs_to_writes(op, t, m, runs, nr, w + nw);
        note_deadline(g);
        if (nw > CALL_WRITES - 2 * MPIDI_PART_TG_MAX_RUNS(MPIDI_PART_IMM_TIMER_RUN)) {
            /* no room for another group's runs and the call's end: post what is decided */
            MPIDI_PART_MUTEX_UNLOCK(&t->lock);
            mpi_errno = send_writes(op, w, nw, mpi_errno);
            nw = 0;
            now = -1;   /* posting took time: the next partition that needs it reads again */
            MPIDI_PART_MUTEX_LOCK(&t->lock);
            if (t->iter != iter)
                break;  /* a credit's arming sent the rest (it reads the ready flags), the
                         * iteration ended and a new one began: nothing of it is ours */
        }
    }
    if (t->armed && n > 0 && t->iter == iter) {
        /* the call's end: a hurried group sends what the call readied; one group of the
         * operation left incomplete now hurries (a call that readies everything sends whole
         * groups as before) */
        nw += runs_to_writes(op, t, m, runs, MPIDI_PART_tgroup_call_end(&t->g[m], runs),
                             w + nw);
        nw += last_group(op, t, m, runs, w + nw);
        note_deadline(&t->g[m]);
    }
    MPIDI_PART_MUTEX_UNLOCK(&t->lock);
    mpi_errno = send_writes(op, w, nw, mpi_errno);
    if (nclosed) {
        now = MPIDI_PART_now_ns() / 1000.0;
        MPIDI_PART_MUTEX_LOCK(&t->lock);
        for (int i = 0; i < nclosed && t->iter == iter; i++)    /* not once a new iteration
                                                                 * began */
            MPIDI_PART_tgroup_end(&t->g[closed[i]], now);
        MPIDI_PART_MUTEX_UNLOCK(&t->lock);
    }
    /* other groups' deadlines, at this call's clock read while it is fresh (taken after
     * the writes, or no write posted since): a second read is 26-46 ns here */
    int err2 = tick((nclosed || nw == 0) && now >= 0 ? (int64_t) (now * 1000.0) : -1);
    return mpi_errno ? mpi_errno : err2;
}

/* Room: a group's partitions readied before the credit may each go alone (a deadline of 0,
 * or one passed between them), so a group's writes are at most its partitions, not one
 * fire's runs. It sent 64 runs into room for 32 (MPIR_CVAR_PART_AGGR_TIMEOUT_US=0, a group
 * of 64 readied before the credit): the receiver completed with partitions missing
 * (part_timer_prearm). The iteration: once this has armed it, the program may ready and
 * send the rest through rtimer_ready, complete it and start the next before this is done;
 * the ready flags then belong to the next iteration, which its own credit arms. */
int MPIDI_PART_rtimer_arm(MPIDI_PART_op_t * op)
{
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    MPIDI_PART_run_t runs[MPIDI_PART_TG_MAX_RUNS(MPIDI_PART_IMM_TIMER_RUN)];
    int32_t w[MPIDI_PART_IMM_TIMER_RUN];
    int mpi_errno = MPI_SUCCESS, n;
    MPIDI_PART_iter_t iter;

    MPIDI_PART_MUTEX_LOCK(&t->lock);
    __atomic_store_n(&t->armed, 1, __ATOMIC_RELAXED);
    iter = t->iter;
    MPIDI_PART_MUTEX_UNLOCK(&t->lock);
    /* the partitions readied before the credit: as if readied now, group by group */
    for (int32_t m = 0; m < t->ngroups; m++) {
        double now = MPIDI_PART_now_ns() / 1000.0;
        n = 0;
        MPIDI_PART_MUTEX_LOCK(&t->lock);
        if (t->iter != iter) {
            MPIDI_PART_MUTEX_UNLOCK(&t->lock);
            return mpi_errno;
        }
        for (int32_t i = 0; i < t->g[m].nparts; i++) {
            int32_t p = m * t->ppg + i;
            if (!__atomic_load_n(&op->st.ready[p], __ATOMIC_ACQUIRE))
                continue;
            int32_t nr = MPIDI_PART_tgroup_ready(&t->g[m], i, now, runs);
            count_ready(t, &t->g[m], nr);
            if (nr > 0)
                n += runs_to_writes(op, t, m, runs, nr, w + n);
        }
        note_deadline(&t->g[m]);
        MPIDI_PART_MUTEX_UNLOCK(&t->lock);
        mpi_errno = send_writes(op, w, n, mpi_errno);
    }
    /* one group left incomplete by the partitions readied before the credit: as in
     * MPIDI_PART_rtimer_ready */
    MPIDI_PART_MUTEX_LOCK(&t->lock);
    n = t->iter == iter ? last_group(op, t, -1, runs, w) : 0;
    MPIDI_PART_MUTEX_UNLOCK(&t->lock);
    return send_writes(op, w, n, mpi_errno);
}

int MPIDI_PART_rtimer_arrived(MPIDI_PART_op_t * op, uint32_t low)
{
    MPIDI_PART_rtimer_t *t = op->rdma->timer;
    int32_t first = (int32_t) MPIDI_PART_imm_timer_first(low);
    int32_t count = (int32_t) MPIDI_PART_imm_timer_count(low);
    int32_t m = first / t->ppg;
    if (m >= t->ngroups || first + count > (m + 1) * t->ppg || first + count > t->sparts)
        return -1;      /* not a run of one group: dropped */
    for (int32_t u = first / t->spu; u * t->spu < first + count; u++) {
        int32_t lo = u * t->spu > first ? u * t->spu : first;
        int32_t hi = (u + 1) * t->spu < first + count ? (u + 1) * t->spu : first + count;
        t->ucnt[u] += hi - lo;
        if (t->ucnt[u] == t->spu)
            __atomic_store_n(&t->udone[u], 1, __ATOMIC_RELEASE);
    }
    t->got[m] += count;
    return t->got[m] == group_parts(t, m) ? m : -1;
}

int MPIDI_PART_rtimer_parrived(MPIDI_PART_op_t * op, int partition)
{
    MPIDI_PART_rtimer_t *t = op->rdma ? op->rdma->timer : NULL;
    return t && t->udone && __atomic_load_n(&t->udone[partition / t->rpu], __ATOMIC_ACQUIRE);
}

/* ---- deadlines from progress ----------------------------------------------------------- */

/* A tick pass at now (ns; < 0: the clock is read, only when a deadline is pending). */
static int tick(int64_t now)
{
    int64_t due = __atomic_load_n(&rt.next_due, __ATOMIC_ACQUIRE);
    if (likely(due == INT64_MAX))
        return MPI_SUCCESS;
    if (now < 0)
        now = MPIDI_PART_now_ns();
    if (now < due || __atomic_exchange_n(&rt.ticking, 1, __ATOMIC_ACQUIRE))
        return MPI_SUCCESS;

    MPIDI_PART_run_t runs[MPIDI_PART_TG_MAX_RUNS(MPIDI_PART_IMM_TIMER_RUN)];
    int32_t w[MPIDI_PART_TG_MAX_RUNS(MPIDI_PART_IMM_TIMER_RUN)];
    int nout = 0, full = 0;
    const int room = (int) (sizeof(rt.out) / sizeof(rt.out[0]));

    /* pending deadlines are published again below; a MPI_Pready racing this pass
     * publishes its own after this store */
    __atomic_store_n(&rt.next_due, INT64_MAX, __ATOMIC_RELEASE);
    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t * op = rt.senders; op && !full; op = op->rdma->timer->next) {
        MPIDI_PART_rtimer_t *t = op->rdma->timer;
        int first = nout;
        if (op->refs == 0)
            continue;   /* its last reference went: being destroyed (it leaves the list) */
        MPIDI_PART_MUTEX_LOCK(&t->lock);
        for (int32_t m = 0; t->active && t->armed && m < t->ngroups; m++) {
            MPIDI_PART_tgroup_t *g = &t->g[m];
            if (g->pending == 0)
                continue;
            if (nout + MPIDI_PART_TG_MAX_RUNS(g->nparts) > room) {
                full = 1;       /* the rest next time: due now */
                due_min(now);
                break;
            }
            int32_t nr = MPIDI_PART_tgroup_tick(g, now / 1000.0, runs);
            int n = runs_to_writes(op, t, m, runs, nr, w);
            for (int i = 0; i < n; i++) {
                rt.out[nout].op = op;
                rt.out[nout++].w = w[i];
            }
            note_deadline(g);
        }
        MPIDI_PART_MUTEX_UNLOCK(&t->lock);
        if (nout > first)
            op->refs++; /* one per operation, until its writes went: an iteration a peer's
                         * FAIL doomed may end before they go (part_ofi.c, watch_progress) */
    }
    MPIDI_PART_UNLOCK();

    int mpi_errno = MPI_SUCCESS;
    for (int i = 0; i < nout; i++) {
        mpi_errno = send_writes(rt.out[i].op, &rt.out[i].w, 1, mpi_errno);
        if (i + 1 == nout || rt.out[i + 1].op != rt.out[i].op)
            MPIDI_PART_op_release(rt.out[i].op);        /* its entries are consecutive */
    }
    __atomic_store_n(&rt.ticking, 0, __ATOMIC_RELEASE);
    return mpi_errno;
}

int MPIDI_PART_rtimer_progress(void)
{
    return tick(-1);
}
