/*
 * part_rdma.c: the backend-independent half of the RDMA transport (part_rdma.h): the
 * operation slots that immediates name, what a remote immediate means (a message done, or
 * a credit that releases the sender's writes), the mapping of messages to lanes, and the
 * entry points the core calls, which pick the backend (part_ofi.c, part_verbs.c) from the
 * operation's MPIR_CVAR_PART_TRANSPORT choice.
 */
#include "part_rdma.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_RDMA_DRAIN_MS
      category    : CH4_PART
      type        : int
      default     : 1000
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        RDMA transport over libfabric: when the sender of a partitioned transfer reports a
        failed iteration, the receiver's request completes (with the error) once every
        data write the sender had posted has landed, so that none lands in the buffer
        afterwards; a write that failed on the wire never lands, so the receiver stops
        waiting after this many milliseconds of its own progress without an arrival. 0:
        do not wait.

    - name        : MPIR_CVAR_PART_DEBUG_RDMA_SLOT_REST
      category    : CH4_PART
      type        : int
      default     : 64
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: an RDMA operation's freed slot (the number the peer's immediates name)
        is handed out again only once more than this many others wait (or every slot has
        been used), so that a late credit of its last operation rarely meets a new one;
        0 reuses it at once (part_rdma_stale_credit checks that the credit's numbering
        alone keeps such a credit from arming the new operation). Negative: 0.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

static struct {
    /* operation slots (engine lock) */
    MPIDI_PART_op_t **slots;
    uint32_t nslots;            /* allocated */
    uint32_t *freeq;            /* freed slots, reused oldest first */
    uint32_t *base;             /* per slot: the next operation's credit_base */
    MPIDI_PART_op_t **gone;     /* operations whose last reference a delivery dropped,
                                 * destroyed by MPIDI_PART_rdma_progress (engine lock) */
    int ngone, capgone;         /* (ngone: atomic reads without the lock) */
    uint32_t fq_head, fq_count;
    uint32_t next_slot;
    int live;                   /* operations with transport state (engine lock) */
    MPIDI_PART_op_t *draining;  /* receivers draining a failed iteration (engine lock) */
    int ndrain;                 /* how many (atomic reads without the lock) */
    int64_t drain_seen;         /* the last drain_progress pass (ns; engine lock) */
} rdma;

static void drain_progress(void);

/* ---- entry points of the core ------------------------------------------------------- */

#if defined(MPIDI_CH4_PART_OFI) && defined(MPIDI_CH4_PART_VERBS)
#define RDMA_BUILT "ofi, verbs"
#elif defined(MPIDI_CH4_PART_OFI)
#define RDMA_BUILT "ofi"
#else
#define RDMA_BUILT "verbs"
#endif

static int auto_said;           /* the verbose line about auto was printed */

void MPIDI_PART_rdma_init(void)
{
    memset(&rdma, 0, sizeof(rdma));
    MPIDI_PART_rdma_linger_ns = 0;
#ifdef MPIDI_CH4_PART_OFI
    MPIDI_PART_ofi_init();
#endif
#ifdef MPIDI_CH4_PART_VERBS
    MPIDI_PART_verbs_init();
#endif
}

static void reap_gone(void);

void MPIDI_PART_rdma_finalize(void)
{
    reap_gone();        /* before the backends go: a destruction releases their state */
#ifdef MPIDI_CH4_PART_OFI
    MPIDI_PART_ofi_finalize();
#endif
#ifdef MPIDI_CH4_PART_VERBS
    MPIDI_PART_verbs_finalize();
#endif
    MPL_free(rdma.slots);
    MPL_free(rdma.freeq);
    MPL_free(rdma.base);
    MPL_free(rdma.gone);
    memset(&rdma, 0, sizeof(rdma));
}

int MPIDI_PART_rdma_require(int choice)
{
#ifdef MPIDI_CH4_PART_OFI
    if (choice == MPIDI_PART_CHOICE_OFI)
        return MPIDI_PART_ofi_require();
#endif
#ifdef MPIDI_CH4_PART_VERBS
    if (choice == MPIDI_PART_CHOICE_VERBS)
        return MPIDI_PART_verbs_require();
#endif
    return MPI_SUCCESS;
}

int MPIDI_PART_rdma_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts)
{
#ifdef MPIDI_CH4_PART_OFI
    if (op->choice == MPIDI_PART_CHOICE_OFI)
        return MPIDI_PART_ofi_announce(op, rts);
#endif
#ifdef MPIDI_CH4_PART_VERBS
    if (op->choice == MPIDI_PART_CHOICE_VERBS)
        return MPIDI_PART_verbs_announce(op, rts);
#endif
    if (op->choice == MPIDI_PART_CHOICE_AUTO && MPIR_CVAR_DEBUG_SUMMARY &&
        __atomic_exchange_n(&auto_said, 1, __ATOMIC_RELAXED) == 0) {
        char verbs[MPI_MAX_ERROR_STRING + 64] = "";
#ifdef MPIDI_CH4_PART_VERBS
        verbs[0] = ';';
        verbs[1] = ' ';
        MPIDI_PART_verbs_describe(verbs + 2, sizeof(verbs) - 2);
#endif
        fprintf(stderr, "[%d] partitioned engine: MPIR_CVAR_PART_TRANSPORT=auto uses the tag "
                "transport (README, \"Choosing a transport\"); the RDMA transports built here "
                "(%s) are used only when forced%s\n", MPIR_Process.rank, RDMA_BUILT, verbs);
    }
    return MPI_SUCCESS;         /* the auto rule (README) keeps the tag transport */
}

const MPIDI_PART_transport_t *MPIDI_PART_rdma_usable(MPIDI_PART_op_t * op)
{
#ifdef MPIDI_CH4_PART_OFI
    if (op->choice == MPIDI_PART_CHOICE_OFI && MPIDI_PART_ofi_usable(op))
        return &MPIDI_PART_ofi_transport;
#endif
#ifdef MPIDI_CH4_PART_VERBS
    if (op->choice == MPIDI_PART_CHOICE_VERBS && MPIDI_PART_verbs_usable(op))
        return &MPIDI_PART_verbs_transport;
#endif
    return NULL;
}

int MPIDI_PART_rdma_model_path(const MPIDI_PART_transport_t * tp)
{
#ifdef MPIDI_CH4_PART_OFI
    if (tp == &MPIDI_PART_ofi_transport)
        return MPIDI_PART_ofi_is_shm() ? MPIDI_PART_PATH_RDMA_SHM : MPIDI_PART_PATH_RDMA_NET;
#endif
#ifdef MPIDI_CH4_PART_VERBS
    if (tp == &MPIDI_PART_verbs_transport)
        return MPIDI_PART_PATH_RDMA_NET;        /* an HCA, even between ranks of one node */
#endif
    return MPIDI_PART_PATH_TAG;
}

/* The hook keeps reading the queues on every call this long after an iteration ended
 * (README 4b). On its own cache line: written once per iteration, away from the work word
 * every progress call reads. */
#define RDMA_LINGER_NS 1000000
int64_t MPIDI_PART_rdma_linger_ns __attribute__ ((aligned(64)));

void MPIDI_PART_rdma_busy(MPIDI_PART_op_t * op)
{
    if (__atomic_exchange_n(&op->rdma->busy, 1, __ATOMIC_ACQ_REL) == 0)
        MPIDI_PART_PVAR_ADD(RDMA_BUSY, 1);
}

void MPIDI_PART_rdma_idle(MPIDI_PART_op_t * op)
{
    if (__atomic_exchange_n(&op->rdma->busy, 0, __ATOMIC_ACQ_REL) == 1) {
        __atomic_store_n(&MPIDI_PART_rdma_linger_ns, MPIDI_PART_now_ns() + RDMA_LINGER_NS,
                         __ATOMIC_RELAXED);
        MPIDI_PART_PVAR_SUB(RDMA_BUSY, 1);
    }
}

int MPIDI_PART_rdma_lingering(void)
{
    int64_t until = __atomic_load_n(&MPIDI_PART_rdma_linger_ns, __ATOMIC_RELAXED);
    if (until == 0)
        return 0;
    if (MPIDI_PART_now_ns() < until)
        return 1;
    /* over: later calls skip the clock (unless an iteration ended meanwhile) */
    __atomic_compare_exchange_n(&MPIDI_PART_rdma_linger_ns, &until, 0, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return 0;
}

__thread MPIDI_PART_rdma_reads_t MPIDI_PART_rdma_reads
    __attribute__ ((tls_model("initial-exec")));

int MPIDI_PART_rdma_progress(void)
{
    MPIDI_PART_rdma_reads_enter();
    int mpi_errno = MPIDI_PART_rtimer_progress();
#ifdef MPIDI_CH4_PART_OFI
    int e = MPIDI_PART_ofi_progress();
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = e;
#endif
#ifdef MPIDI_CH4_PART_VERBS
    int err = MPIDI_PART_verbs_progress();
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = err;
#endif
    drain_progress();   /* after the queues: what they held has landed and counted */
    reap_gone();
    MPIDI_PART_rdma_reads_leave();
    return mpi_errno;
}

/* Destroy the operations a delivery dropped the last reference of (no lock held). Not in
 * the delivery itself: it runs while its backend holds its completion queue's reader flag,
 * and a verbs operation's release waits for its writes by reading that queue (it spun for
 * ever on the flag its own thread held; found by a review). */
static void reap_gone(void)
{
    while (__atomic_load_n(&rdma.ngone, __ATOMIC_RELAXED) > 0) {
        MPIDI_PART_op_t *op;
        MPIDI_PART_LOCK();
        int k = rdma.ngone;
        op = k > 0 ? rdma.gone[k - 1] : NULL;
        if (k > 0)
            __atomic_store_n(&rdma.ngone, k - 1, __ATOMIC_RELAXED);
        MPIDI_PART_UNLOCK();
        if (op)
            MPIDI_PART_op_destroy(op);
    }
}

void MPIDI_PART_rdma_release(MPIDI_PART_op_t * op)
{
    if (op->rdma)
        op->rdma->release(op);
}

/* ---- slots ---------------------------------------------------------------------------- */

/* Engine lock held: a slot for op (0 when none is left). */
static int slot_get(MPIDI_PART_op_t * op, uint32_t * slot)
{
    /* a freed slot waits until MPIR_CVAR_PART_DEBUG_RDMA_SLOT_REST others were freed after
     * it (unless every slot has been handed out): a late credit of its last operation then
     * rarely finds a new one, and none arms it (MPIDI_PART_rdma_credit_low) */
    int rest = MPIR_CVAR_PART_DEBUG_RDMA_SLOT_REST > 0 ? MPIR_CVAR_PART_DEBUG_RDMA_SLOT_REST : 0;
    if (rdma.fq_count > (uint32_t) rest ||
        (rdma.fq_count > 0 && rdma.next_slot == MPIDI_PART_IMM_SLOTS)) {
        *slot = rdma.freeq[rdma.fq_head];
        rdma.fq_head = (rdma.fq_head + 1) % MPIDI_PART_IMM_SLOTS;
        rdma.fq_count--;
    } else if (rdma.next_slot < MPIDI_PART_IMM_SLOTS) {
        if (rdma.next_slot == rdma.nslots) {
            uint32_t n = rdma.nslots ? 2 * rdma.nslots : 64;
            MPIDI_PART_op_t **s = MPL_realloc(rdma.slots, n * sizeof(*s), MPL_MEM_OTHER);
            if (s == NULL)
                return 0;
            rdma.slots = s;
            rdma.nslots = n;
        }
        if (rdma.freeq == NULL) {
            rdma.freeq = MPL_malloc(MPIDI_PART_IMM_SLOTS * sizeof(uint32_t), MPL_MEM_OTHER);
            rdma.base = MPL_calloc(MPIDI_PART_IMM_SLOTS, sizeof(uint32_t), MPL_MEM_OTHER);
            if (rdma.freeq == NULL || rdma.base == NULL) {
                MPL_free(rdma.freeq);
                MPL_free(rdma.base);
                rdma.freeq = NULL;
                rdma.base = NULL;
                return 0;
            }
        }
        *slot = rdma.next_slot++;
    } else {
        return 0;
    }
    rdma.slots[*slot] = op;
    return 1;
}

int MPIDI_PART_rdma_attach(MPIDI_PART_op_t * op, MPIDI_PART_rdmaop_t * r)
{
    MPIDI_PART_LOCK();
    int ok = slot_get(op, &r->slot);
    if (ok) {
        r->credit_base = rdma.base[r->slot];
        r->credited = MPIDI_PART_ITER0;        /* none yet */
        op->rdma = r;
        MPIDI_PART_rdma_busy(op);       /* its plan or first iteration is under way */
        rdma.live++;
        MPIDI_PART_set_work(MPIDI_PART_WORK_RDMA);
    }
    MPIDI_PART_UNLOCK();
    return ok;
}

void MPIDI_PART_rdma_detach(MPIDI_PART_op_t * op)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    MPIDI_PART_rtimer_free(op); /* off the tick list first */
    MPIDI_PART_rdma_idle(op);
    MPIDI_PART_LOCK();
    rdma.slots[r->slot] = NULL;
    /* a receiver's credit_base is its sender's: the slot's own moves on from its own */
    if (op->is_send)
        rdma.base[r->slot] = r->credit_base + (uint32_t) (r->credited - MPIDI_PART_ITER0) +
            MPIDI_PART_IMM_MSGS / 2;
    else
        rdma.base[r->slot] += MPIDI_PART_IMM_MSGS / 2;
    rdma.freeq[(rdma.fq_head + rdma.fq_count) % MPIDI_PART_IMM_SLOTS] = r->slot;
    rdma.fq_count++;
    op->rdma = NULL;
    rdma.live--;
    MPIDI_PART_clear_work(MPIDI_PART_WORK_RDMA, rdma.live > 0);
    MPIDI_PART_UNLOCK();
    MPL_free(r->tosend);
    MPL_free(r->msg_lane);
    r->tosend = NULL;
    r->msg_lane = NULL;
}

/* ---- immediates ----------------------------------------------------------------------- */

typedef struct {
    MPIDI_PART_op_t *op;
    int32_t m;                  /* message done; < 0: a credit released -1 - m messages */
    int arm_timer;              /* the credit armed a timer iteration */
    int drained;                /* the last write a failed iteration waited for: end it */
} rdma_event_t;

/* Engine lock held: take op off the draining list (its reference goes to the caller). */
static void drain_unlink(MPIDI_PART_op_t * op)
{
    for (MPIDI_PART_op_t ** pp = &rdma.draining; *pp; pp = &(*pp)->rdma->drain_next) {
        if (*pp == op) {
            *pp = op->rdma->drain_next;
            break;
        }
    }
    op->rdma->drain_to = 0;
    op->rdma->drain_now = 0;
    op->rdma->drain_next = NULL;
    __atomic_store_n(&rdma.ndrain, rdma.ndrain - 1, __ATOMIC_RELAXED);
    MPIDI_PART_PVAR_SUB(RDMA_DRAINING, 1);
}

/* Engine lock held: a draining receiver learnt that at most n writes will land; the next
 * drain_progress ends its iteration once that many have. */
static void drain_lower(MPIDI_PART_rdmaop_t * r, uint64_t n)
{
    if (n < r->drain_to)
        r->drain_to = n;
    if (r->landed >= r->drain_to)
        r->drain_now = 1;
}

int MPIDI_PART_rdma_drain_locked(MPIDI_PART_op_t * op, uint64_t posted)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    if (r->drain_to != 0) {
        /* already waiting (a failed credit's drain, with no count yet): the iteration ends
         * when that is over, at the lower count */
        if (!op->is_send)
            drain_lower(r, posted);
        return 1;
    }
    if (r->final_to != 0 && posted > r->final_to - 1)
        posted = r->final_to - 1;       /* the sender's COUNT came first */
    if (op->is_send || r->landed >= posted || MPIR_CVAR_PART_RDMA_DRAIN_MS <= 0)
        return 0;
    r->drain_to = posted;
    int64_t now = MPIDI_PART_now_ns();
    if (rdma.draining == NULL)
        rdma.drain_seen = now;
    r->drain_until = now + MPIR_CVAR_PART_RDMA_DRAIN_MS * 1000000LL;
    r->drain_next = rdma.draining;
    rdma.draining = op;
    op->refs++; /* until the iteration has ended */
    __atomic_store_n(&rdma.ndrain, rdma.ndrain + 1, __ATOMIC_RELAXED);
    MPIDI_PART_PVAR_ADD(RDMA_DRAINING, 1);
    return 1;
}

/* The draining receivers whose deadline passed: their iterations end now (one load when
 * none drains). Called after the queues were read. Only the process's own progress time
 * counts: a gap between two passes (a program busy outside MPI) moves every deadline on
 * by the gap, so that writes that landed meanwhile are read before anything is given up;
 * each arrival moves its operation's deadline on too (resolve). */
static void drain_progress(void)
{
    MPIDI_PART_op_t *due[16];
    int n = 0;
    if (likely(__atomic_load_n(&rdma.ndrain, __ATOMIC_RELAXED) == 0))
        return;
    int64_t now = MPIDI_PART_now_ns();
    MPIDI_PART_LOCK();
    int64_t gap = now - rdma.drain_seen;
    rdma.drain_seen = now;
    if (gap > 10000000) {       /* 10 ms without a pass */
        for (MPIDI_PART_op_t * d = rdma.draining; d; d = d->rdma->drain_next)
            d->rdma->drain_until += gap;
    }
    MPIDI_PART_op_t *op = rdma.draining;
    while (op && n < 16) {
        MPIDI_PART_op_t *next = op->rdma->drain_next;
        /* an iteration that ended by itself got every message: every write of it landed
         * (a sender that freed its request before a failed credit's FAIL came has no one
         * to send the count) */
        int over = op->rdma->drain_now || !MPIDI_PART_st_is_running(&op->st);
        if (over || op->rdma->drain_until <= now) {
            if (!over)
                MPIDI_PART_PVAR_ADD(RDMA_DRAIN_TIMEOUTS, 1);
            drain_unlink(op);
            due[n++] = op;
        }
        op = next;
    }
    MPIDI_PART_UNLOCK();
    for (int i = 0; i < n; i++) {
        MPIDI_PART_rdma_failed(due[i], -1);
        MPIDI_PART_op_release(due[i]);  /* the drain's reference */
    }
}

/* Engine lock held: what a remote immediate means; 0: drop it (an operation that is gone,
 * or a message outside its running iteration). A credit is counted here and arms the
 * sender's iteration when it is the one running. */
static int resolve(uint32_t imm, rdma_event_t * ev)
{
    uint32_t slot = MPIDI_PART_imm_slot(imm);
    MPIDI_PART_op_t *op = slot < rdma.next_slot ? rdma.slots[slot] : NULL;
    if (op == NULL || op->rdma == NULL || op->refs == 0)
        return 0;       /* (refs 0: its destruction is under way) */
    MPIDI_PART_rdmaop_t *r = op->rdma;
    ev->op = op;
    ev->drained = 0;
    if (MPIDI_PART_imm_kind(imm) == MPIDI_PART_IMM_CREDIT) {
        if (!op->is_send)
            return 0;
        /* credits come in iteration order (the next needs this one's data), each naming
         * its iteration: one that is not the next (a credit for an operation that held
         * this slot before) must not arm this one's iteration early */
        if (!MPIDI_PART_imm_credit_is(MPIDI_PART_imm_low(imm),
                                      r->credit_base + (uint32_t) r->credited + 1)) {
            MPIDI_PART_PVAR_ADD(RDMA_STALE_CREDITS, 1);
            return 0;
        }
        r->credited++;
        int nsend = 0;
        ev->arm_timer = 0;
        if (op->tp == r->tp && !op->freed && r->tosend &&
            MPIDI_PART_st_is_running(&op->st) && !MPIDI_PART_st_is_armed(&op->st) &&
            r->credited >= op->st.iter) {
            nsend = MPIDI_PART_st_arm(&op->st, r->tosend);
            ev->arm_timer = MPIDI_PART_rtimer_active(op, NULL);
        }
        if (nsend > 0 && op->st.iter == MPIDI_PART_ITER0 + 1)
            MPIDI_PART_PVAR_ADD(FIRST_ITER_DEFERRED, nsend);    /* waited for the answer */
        ev->m = -1 - nsend;
        if (nsend == 0 && !ev->arm_timer)
            return 0;
        op->refs++;     /* the writes may end the iteration and the program free the
                         * request before the deliverer is done with op (rtimer_arm) */
        return 1;
    }
    if (op->is_send || op->tp != r->tp)
        return 0;
    r->landed++;
    if (unlikely(r->drain_to != 0)) {
        if (r->landed >= r->drain_to) {
            drain_unlink(op);   /* its reference is the event's now */
            ev->drained = 1;
            ev->m = -1;
            return 1;
        }
        r->drain_until = MPIDI_PART_now_ns() + MPIR_CVAR_PART_RDMA_DRAIN_MS * 1000000LL;
    }
    if (!MPIDI_PART_st_is_running(&op->st))
        return 0;
    ev->m = (int32_t) MPIDI_PART_imm_low(imm);
    if (r->timer)
        ev->m = MPIDI_PART_rtimer_arrived(op, (uint32_t) ev->m);        /* a run */
    if (ev->m < 0 || ev->m >= op->st.nmsgs)
        return 0;
    op->refs++;         /* another thread may end the iteration meanwhile (a FAIL whose
                         * writes have all landed: this one was counted above) and the
                         * program free the request before the deliverer marks the message */
    return 1;
}

int MPIDI_PART_rdma_deliver(const uint32_t * imms, int n)
{
    int mpi_errno = MPI_SUCCESS, nev = 0;
    rdma_event_t ev[64];
    MPIDI_PART_op_t *gone[64];

    while (n > 0) {
        int batch = n < 64 ? n : 64;
        nev = 0;
        MPIDI_PART_LOCK();
        for (int i = 0; i < batch; i++)
            if (resolve(imms[i], &ev[nev]))
                nev++;
        MPIDI_PART_UNLOCK();
        for (int i = 0; i < nev; i++) {
            if (unlikely(ev[i].drained)) {
                /* the failed iteration's writes have all landed: it ends (the drain's
                 * reference is dropped below) */
                MPIDI_PART_rdma_failed(ev[i].op, -1);
            } else if (ev[i].m >= 0) {
                MPIDI_PART_msg_done(ev[i].op, ev[i].m);
            } else {
                /* the credit armed a running iteration: send what waited for it (resolve
                 * took a reference: the request may complete and be freed meanwhile) */
                int err = MPIDI_PART_send_ready(ev[i].op, ev[i].op->rdma->tosend, -1 - ev[i].m);
                if (ev[i].arm_timer) {
                    int e = MPIDI_PART_rtimer_arm(ev[i].op);
                    err = err ? err : e;
                }
                if (err && mpi_errno == MPI_SUCCESS)
                    mpi_errno = err;
            }
        }
        /* the events' references (resolve's, a drain's), under one lock a batch; an
         * operation whose last one goes is destroyed later (reap_gone) */
        int ngone = 0;
        MPIDI_PART_LOCK();
        for (int i = 0; i < nev; i++) {
            if (!MPIDI_PART_op_unref(ev[i].op))
                continue;
            if (rdma.ngone == rdma.capgone) {
                int cap = rdma.capgone ? 2 * rdma.capgone : 16;
                MPIDI_PART_op_t **g = MPL_realloc(rdma.gone, cap * sizeof(*g), MPL_MEM_OTHER);
                if (g == NULL) {
                    gone[ngone++] = ev[i].op;   /* no room: at once, as before */
                    continue;
                }
                rdma.gone = g;
                rdma.capgone = cap;
            }
            rdma.gone[rdma.ngone] = ev[i].op;
            __atomic_store_n(&rdma.ngone, rdma.ngone + 1, __ATOMIC_RELAXED);
        }
        MPIDI_PART_UNLOCK();
        for (int i = 0; i < ngone; i++)
            MPIDI_PART_op_destroy(gone[i]);
        imms += batch;
        n -= batch;
    }
    return mpi_errno;
}

/* ---- messages and errors -------------------------------------------------------------- */

int MPIDI_PART_rdma_map(MPIDI_PART_op_t * op, int n, int nlanes, int parts, int ppt)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    r->nlanes = nlanes;
    op->spread = 0;
    if (nlanes <= 1)
        return MPI_SUCCESS;
    r->msg_lane = MPL_malloc(n, MPL_MEM_OTHER);
    if (r->msg_lane == NULL)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**nomem", 0);
    for (int m = 0; m < n; m++) {
        r->msg_lane[m] = (uint8_t) MPIDI_PART_plan_vci(&op->st.plan, parts, m, nlanes, ppt);
        op->spread += (r->msg_lane[m] != 0);
    }
    return MPI_SUCCESS;
}

int MPIDI_PART_rdma_error_kept(MPIDI_PART_op_t * op, int err, MPIDI_PART_errtext_t * t)
{
    int none = MPI_SUCCESS;
    /* the first error is the iteration's: its entry with it (a reader between the two
     * stores finds none for the code and reports the code itself, fresh then) */
    if (__atomic_compare_exchange_n(&op->error, &none, err, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED))
        __atomic_store_n(&op->error_kept, t, __ATOMIC_RELEASE);
    return err;
}

int MPIDI_PART_rdma_error(MPIDI_PART_op_t * op, int err)
{
    if (__atomic_load_n(&op->error, __ATOMIC_RELAXED) != MPI_SUCCESS)
        return err;     /* not the first */
    return MPIDI_PART_rdma_error_kept(op, err, MPIDI_PART_keep_error(op, err));
}

void MPIDI_PART_rdma_failed(MPIDI_PART_op_t * op, int m)
{
    if (m >= 0) {
        /* the iteration completes with the error (m: a write; a run of a group counts as
         * done, so the group ends when its other writes have) */
        MPIDI_PART_rdma_write_done(op, m);
    } else {
        for (int i = 0; i < op->st.nmsgs; i++)
            MPIDI_PART_msg_done(op, i);
    }
}

/* The fields that name op's pair in a FAIL or COUNT header. */
static void pair_hdr(MPIDI_PART_op_t * op, int kind, MPIDI_PART_hdr_t * hdr)
{
    memset(hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr->kind = kind;
    hdr->src_rank = op->comm->rank;     /* with the pair: a pair id is the other process's
                                         * pointer, which another rank's may equal */
    hdr->sop = op->rdma->peer_slot;
    hdr->rop = MPIDI_PART_rdma_pair_id(op);
    hdr->serial = op->serial;   /* with rop: the pair, even where a new one took the slot
                                 * and the old send's address over */
}

int MPIDI_PART_rdma_tell_peer(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                              int64_t posted)
{
    MPIDI_PART_hdr_t hdr;
    pair_hdr(op, MPIDI_PART_MSG_FAIL, &hdr);
    hdr.iter = iter;
    hdr.bytes = posted;
    hdr.ext_len = (int32_t) strnlen(why, MPIDI_PART_EXT_MAX - 1) + 1;
    memcpy(hdr.ext, why, hdr.ext_len - 1);
    hdr.ext[hdr.ext_len - 1] = 0;
    return MPIDI_PART_send_hdr(op, &hdr);
}

int MPIDI_PART_rdma_tell_count(MPIDI_PART_op_t * op, int64_t final)
{
    MPIDI_PART_hdr_t hdr;
    pair_hdr(op, MPIDI_PART_MSG_COUNT, &hdr);
    hdr.bytes = final;
    return MPIDI_PART_send_hdr(op, &hdr);
}

void MPIDI_PART_rdma_peer_count(const MPIDI_PART_hdr_t * hdr)
{
    if (hdr->bytes < 0)
        return;
    uint64_t final = (uint64_t) hdr->bytes;
    /* a FAIL's and a COUNT's sop is the peer's slot */
    MPIDI_PART_op_t *op = MPIDI_PART_rdma_hold((uint32_t) hdr->sop, hdr->rop, hdr->serial);
    if (op == NULL)
        return;
    MPIDI_PART_LOCK();
    MPIDI_PART_rdmaop_t *r = op->rdma;
    if (!op->is_send && op->peer == hdr->src_rank) {    /* the same pair (tell_peer) */
        r->final_to = final + 1;        /* for a FAIL still to come (drain_locked) */
        if (r->drain_to != 0)
            drain_lower(r, final);
    }
    MPIDI_PART_UNLOCK();
    MPIDI_PART_op_release(op);
}

MPIDI_PART_op_t *MPIDI_PART_rdma_hold(uint32_t slot, uint64_t pair, uint32_t serial)
{
    MPIDI_PART_op_t *op = NULL;
    MPIDI_PART_LOCK();
    if (slot < rdma.next_slot)
        op = rdma.slots[slot];
    if (op && op->rdma && op->refs > 0 && MPIDI_PART_rdma_pair_id(op) == pair &&
        op->serial == serial)
        op->refs++;     /* alive until the caller is done with it (not one whose last
                         * reference went: its destruction is under way elsewhere) */
    else
        op = NULL;
    MPIDI_PART_UNLOCK();
    return op;
}

void MPIDI_PART_rdma_peer_failed(const MPIDI_PART_hdr_t * hdr)
{
    MPIDI_PART_op_t *op = NULL;
    char why[MPIDI_PART_EXT_MAX];

    if (hdr->ext_len < 1)
        return;
    memcpy(why, hdr->ext, hdr->ext_len);
    why[hdr->ext_len - 1] = 0;
    op = MPIDI_PART_rdma_hold((uint32_t) hdr->sop, hdr->rop, hdr->serial);
    if (op == NULL)
        return;
    if (op->peer == hdr->src_rank && op->rdma->peer_failed)
        op->rdma->peer_failed(op, hdr->iter, why, hdr->bytes);
    MPIDI_PART_op_release(op);
}

int MPIDI_PART_rdma_doom_locked(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, int err)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    if (iter == 0)
        return 0;
    if (r->fail_from == 0 || iter < r->fail_from) {
        r->fail_from = iter;
        r->fail_err = err;
        r->fail_text = MPIDI_PART_keep_error(op, err);  /* reported from a later MPI_Start,
                                                         * maybe */
    }
    /* the running iteration (its MPI_Start checks the same under this lock: either it saw
     * the failure, or we see it running); one started before the plan fails when the plan
     * is installed */
    if (MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_PLANNED &&
        MPIDI_PART_st_is_running(&op->st) && MPIDI_PART_rdma_doomed(op, op->st.iter))
        return 1;
    return 0;
}

int MPIDI_PART_rdma_progress_rest(void)
{
    int mpi_errno = MPIDI_PART_rtimer_progress();
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_PART_vci_progress(1);
    if (mpi_errno == MPI_SUCCESS &&
        (MPL_atomic_acquire_load_int(&MPIDI_PART_global.work) & MPIDI_PART_WORK_HANDSHAKE))
        mpi_errno = MPIDI_PART_handshake();
    drain_progress();   /* after the lane's queue (the caller read it) and a FAIL */
    reap_gone();
    return mpi_errno;
}

/* ---- transport functions every backend shares ------------------------------------------ */

/* Sender, lock held, at the start of a planned iteration: the receiver's credit for it came
 * already. */
int MPIDI_PART_rdma_always_armed(MPIDI_PART_op_t * op)
{
    return op->rdma->credited >= op->st.iter;
}

int MPIDI_PART_rdma_ctl(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr)
{
    return MPI_SUCCESS;         /* credits travel as writes, never as a CTS */
}

int MPIDI_PART_rdma_test_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    return MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
}

void MPIDI_PART_rdma_poll(MPIDI_PART_op_t * op, uint64_t * vci_mask)
{
    /* completions come from the backend's queues (MPIDI_PART_rdma_progress) */
}

void MPIDI_PART_rdma_iter_reset(MPIDI_PART_op_t * op)
{
}
