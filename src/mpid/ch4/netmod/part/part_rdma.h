/*
 * part_rdma.h: what the RDMA transport's backends share (part_ofi.c: libfabric,
 * part_verbs.c: InfiniBand verbs). Both speak one protocol (README, "RDMA transport"): the
 * sender writes each wire message into the receive buffer with one write carrying the
 * 32-bit immediate of part_imm.h; the receiver's MPI_Start gives a credit, an 8-byte write
 * into the sender's mailbox whose immediate names the sender's slot and the iteration.
 * part_rdma.c owns the slot table those immediates name, what an immediate means (the
 * credit rule), the mapping of messages to lanes (endpoints or queue pairs) and the
 * transport functions that do not touch the wire. A backend opens its device, registers
 * buffers, posts writes and reads completions.
 */
#ifndef PART_RDMA_H_INCLUDED
#define PART_RDMA_H_INCLUDED

#include "part_impl.h"
#include "part_imm.h"

#include <sched.h>

/* The first member of every backend's per-operation state; op->rdma points to it. */
typedef struct MPIDI_PART_rdmaop {
    const MPIDI_PART_transport_t *tp;   /* the backend's transport */
    void (*release) (MPIDI_PART_op_t * op);     /* the backend's part (no lock) */
    /* the peer says its side failed in its iteration iter, having posted `posted` data
     * writes over the pair's life (-1: not said) (no lock; NULL: ignore) */
    void (*peer_failed) (MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                         int64_t posted);
    uint32_t slot;              /* ours: the peer's immediates name it */
    uint32_t peer_slot;
    MPIDI_PART_iter_t credited; /* sender: the last iteration the receiver has started
                                 * (iter0 + credits; engine lock) */
    uint32_t credit_base;       /* sender: its slot's offset for the iteration a credit names
                                 * (MPIDI_PART_rdma_credit_low); receiver: its sender's, from
                                 * the RTS */
    int32_t *tosend;            /* sender: the messages a credit releases (engine lock) */
    int nlanes;                 /* endpoints or queue pairs the messages use */
    uint8_t *msg_lane;          /* lane of each message (NULL: all on lane 0) */
    struct MPIDI_PART_rtimer *timer;    /* the timer aggregator's state, or NULL */
    int busy;                   /* counted in the busy operations (atomic) */
    MPIDI_PART_iter_t fail_from; /* the peer failed in this iteration, so does every one
                                 * from it on (0: it did not; engine lock) */
    int fail_err;               /* what those iterations complete with (engine lock) */
    struct MPIDI_PART_errtext *fail_text;       /* fail_err's class and texts (part_error.c) */
    uint64_t landed;            /* receiver: data writes arrived over the pair's life
                                 * (engine lock) */
    uint64_t drain_to;          /* receiver: its failed iteration ends when landed reaches
                                 * this, or at drain_until (0: not draining; engine lock) */
    int64_t drain_until;
    int drain_now;              /* drain_to was lowered to what has landed: end it (engine
                                 * lock) */
    struct MPIDI_PART_op *drain_next;   /* the draining receivers (engine lock) */
    uint64_t final_to;          /* receiver: 1 + the sender's final count (its COUNT, which
                                 * may come before its FAIL); 0: none came (engine lock) */
} MPIDI_PART_rdmaop_t;

/* The low bits of the credit for iteration iter (the receiver's r: credit_base is its
 * sender's). A slot's offset moves by half the range and the last operation's credits
 * each time the slot is given out again, so a credit of an earlier operation that held the
 * sender's slot, arriving late, does not name the next iteration of the new one (it armed
 * the new operation's first iteration before its receiver had started). */
static inline uint32_t MPIDI_PART_rdma_credit_low(const MPIDI_PART_rdmaop_t * r,
                                                  MPIDI_PART_iter_t iter)
{
    return (r->credit_base + (uint32_t) iter) & (MPIDI_PART_IMM_MSGS - 1);
}

typedef struct MPIDI_PART_rtimer MPIDI_PART_rtimer_t;

/* No lock: give op the state r (a slot, the progress bit); 0 when no slot is left. */
int MPIDI_PART_rdma_attach(MPIDI_PART_op_t * op, MPIDI_PART_rdmaop_t * r);
/* No lock: take op's state back (the slot returns); the caller frees r. */
void MPIDI_PART_rdma_detach(MPIDI_PART_op_t * op);
/* No lock: what remote immediates mean (messages done, credits that release writes). */
int MPIDI_PART_rdma_deliver(const uint32_t * imms, int n);
/* Spread op's n messages over nlanes lanes as the tag transport spreads them over VCIs. */
int MPIDI_PART_rdma_map(MPIDI_PART_op_t * op, int n, int nlanes, int parts, int ppt);
/* Record err as op's error (the first one wins); returns err. */
int MPIDI_PART_rdma_error(MPIDI_PART_op_t * op, int err);
/* The same for a code kept before (t: its entry, MPIDI_PART_keep_error) */
int MPIDI_PART_rdma_error_kept(MPIDI_PART_op_t * op, int err, struct MPIDI_PART_errtext *t);
/* The iteration's error so far (MPI_SUCCESS: none). A backend creates an error code only
 * when there is none yet: creating one per failed write (a flushed queue gives hundreds)
 * would push the first one's text out of MPICH's ring of error messages. */
static inline int MPIDI_PART_rdma_error_of(MPIDI_PART_op_t * op)
{
    return __atomic_load_n(&op->error, __ATOMIC_ACQUIRE);
}
/* A write could not be posted: the iteration completes with op's error (m = -1: the
 * credit, so nothing will arrive). */
void MPIDI_PART_rdma_failed(MPIDI_PART_op_t * op, int m);
/* No lock: tell op's peer that op's side failed in iteration iter (a FAIL message, which
 * travels on the handshake's active messages, not on the failed connection); a sender says
 * how many data writes it posted over the pair's life (none follows: -1 when unknown). */
int MPIDI_PART_rdma_tell_peer(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                              int64_t posted);
/* Engine lock held, receiver whose running iteration the sender's failure doomed: the
 * sender had posted `posted` writes; returns 1 when some have not landed yet (or a drain
 * is under way already): the iteration then ends when they have (MPIDI_PART_rdma_deliver)
 * or after MPIR_CVAR_PART_RDMA_DRAIN_MS of progress without an arrival (a write that failed
 * on the wire never lands), not now, so that none lands in the buffer after MPI_Wait
 * returned the error. A COUNT that came first lowers posted (final_to). 0: end it now. */
int MPIDI_PART_rdma_drain_locked(MPIDI_PART_op_t * op, uint64_t posted);
/* No lock, sender that told its receiver a count that was not final (writes were still in
 * flight), or that its receiver's FAIL reached: the final count, once its writes'
 * completions have all been read (a COUNT message; when both apply, two with the same
 * count). The receiver's drain then ends when that many have landed, not at its
 * deadline. */
int MPIDI_PART_rdma_tell_count(MPIDI_PART_op_t * op, int64_t final);
/* A COUNT message came (op of its pair held here, if it still exists). */
void MPIDI_PART_rdma_peer_count(const MPIDI_PART_hdr_t * hdr);
/* The pair's name on both sides: the sender's operation (a FAIL or a failed credit that
 * reaches an operation which took a freed slot over names another pair). */
static inline uint64_t MPIDI_PART_rdma_pair_id(MPIDI_PART_op_t * op)
{
    return op->is_send ? (uint64_t) (uintptr_t) op : op->sop;
}
/* No lock: the operation in our slot slot if it is still pair's (the sender's operation and
 * the serial of its RTS: a new pair can take over both the slot and, once the old send is
 * freed, its address), with a reference the caller gives back (MPIDI_PART_op_release); NULL
 * when it is gone. */
MPIDI_PART_op_t *MPIDI_PART_rdma_hold(uint32_t slot, uint64_t pair, uint32_t serial);
/* Engine lock held: the peer failed in its iteration iter (1, 2, ...) with err: every
 * iteration of op from iter on fails. Returns 1 when op's running iteration is one of them
 * (its error is set; the caller ends it, without the lock: MPIDI_PART_rdma_failed(op, -1));
 * later ones fail at their MPI_Start or, started before the plan, when it is installed
 * (MPIDI_PART_rdma_doomed). */
int MPIDI_PART_rdma_doom_locked(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, int err);
/* Engine lock held: whether op's iteration iter is one the peer's failure dooms (then
 * op's error is set). */
static inline int MPIDI_PART_rdma_doomed(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    MPIDI_PART_rdmaop_t *r = op->rdma;
    if (r == NULL || r->fail_from == 0 || iter < r->fail_from)
        return 0;
    MPIDI_PART_rdma_error_kept(op, r->fail_err, r->fail_text);
    return 1;
}
/* No lock: after a lane's queue did not bring message m of an MPI_Parrived, move VCI 0
 * (the handshake's active messages) and the handshake work. */
int MPIDI_PART_rdma_progress_rest(void);

/* What each backend gives part_rdma.c's entry points (part_impl.h says when they run). */
#ifdef MPIDI_CH4_PART_OFI
void MPIDI_PART_ofi_init(void);
void MPIDI_PART_ofi_finalize(void);
int MPIDI_PART_ofi_require(void);
int MPIDI_PART_ofi_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts);
int MPIDI_PART_ofi_usable(MPIDI_PART_op_t * op);
/* the fabric is up over libfabric's shm provider (writes within the node) */
int MPIDI_PART_ofi_is_shm(void);
int MPIDI_PART_ofi_progress(void);
#endif
#ifdef MPIDI_CH4_PART_VERBS
void MPIDI_PART_verbs_init(void);
void MPIDI_PART_verbs_finalize(void);
int MPIDI_PART_verbs_require(void);
void MPIDI_PART_verbs_describe(char *buf, size_t len);
int MPIDI_PART_verbs_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts);
int MPIDI_PART_verbs_usable(MPIDI_PART_op_t * op);
int MPIDI_PART_verbs_progress(void);
#endif

/* ---- writes: what a backend posts (part_rdma_timer.c) ----------------------------------
 * A backend's send(op, w) and its completions name writes, not messages: w < nmsgs is wire
 * message w whole; on an operation of the timer aggregator w >= nmsgs is a run of a group.
 * Contexts per write: nmsgs + the sender's partitions of them on a timer operation
 * (op->timer_ns >= 0), nmsgs otherwise. */
#define MPIDI_PART_RDMA_NWRITES(op_) \
    ((op_)->st.plan.nmsgs + ((op_)->timer_ns >= 0 ? (op_)->partitions : 0))
/* The wire message (group) write w belongs to. */
int MPIDI_PART_rdma_write_msg(MPIDI_PART_op_t * op, int w);
/* Offset and length in the buffer, and the immediate, of write w. */
void MPIDI_PART_rdma_wire(MPIDI_PART_op_t * op, int w, MPI_Aint * off, MPI_Aint * len,
                          uint32_t * imm);
/* Lock-free: the sender's write w completed (the message is done when all of it is). */
void MPIDI_PART_rdma_write_done(MPIDI_PART_op_t * op, int w);

/* ---- the timer aggregator (part_rdma_timer.c; README, "Timer aggregator") ----------------
 * No lock unless said. */
/* The PLAN said timer_ns >= 0 (sender), or the receiver planned so: the groups' state. */
int MPIDI_PART_rtimer_setup(MPIDI_PART_op_t * op, int32_t timer_ns);
/* From MPIDI_PART_rdma_detach. */
void MPIDI_PART_rtimer_free(MPIDI_PART_op_t * op);
/* Engine lock held, MPI_Start of a planned iteration: reset (armed: the credit came). */
void MPIDI_PART_rtimer_start(MPIDI_PART_op_t * op, int armed);
/* Whether the running iteration of sender op goes through the timer; if so and iter is
 * not NULL, *iter names that iteration for MPIDI_PART_rtimer_ready. */
int MPIDI_PART_rtimer_active(MPIDI_PART_op_t * op, MPIDI_PART_iter_t * iter);
/* Sender: the n partitions of one MPI_Pready* call were readied (their flags are set):
 * list[0..n), or lo..lo+n-1 when list is NULL; iter: what MPIDI_PART_rtimer_active gave
 * before the flags were set (nothing is decided once that iteration is over). Sends what
 * the timer says, under one lock and at most one clock read for the call. */
int MPIDI_PART_rtimer_ready(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, int n, int lo,
                            const int *list);
/* Sender: this iteration's credit came: the partitions readied before it count now. */
int MPIDI_PART_rtimer_arm(MPIDI_PART_op_t * op);
/* Engine lock held, receiver: a timer write arrived (low: the immediate's low bits).
 * Returns the group it completed, or -1. */
int MPIDI_PART_rtimer_arrived(MPIDI_PART_op_t * op, uint32_t low);
/* Receiver: whether the gcd-message holding the receiver's partition has arrived whole. */
int MPIDI_PART_rtimer_parrived(MPIDI_PART_op_t * op, int partition);
/* Progress: fire the groups whose deadline passed (one load when none is pending). */
int MPIDI_PART_rtimer_progress(void);

/* Transport functions that are the same on every backend. */
int MPIDI_PART_rdma_always_armed(MPIDI_PART_op_t * op);
int MPIDI_PART_rdma_ctl(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr);
int MPIDI_PART_rdma_test_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter);
void MPIDI_PART_rdma_poll(MPIDI_PART_op_t * op, uint64_t * vci_mask);
void MPIDI_PART_rdma_iter_reset(MPIDI_PART_op_t * op);

/* A thread that finds another reading a completion queue gives up its core before it goes
 * back to its progress loop. The queues are read by one thread at a time and never waited
 * for (whoever finds one busy returns), so when the reader is preempted with the cores
 * oversubscribed (MPI+threads codes run more threads than cores, each in MPI_Wait), the
 * others would spin through MPICH's progress until the scheduler gives the reader its core
 * back: with 4 threads per rank on 2 cores an iteration's 90th percentile was 3.3 ms
 * (bench/thread_ops.cpp; bench/results/HISTORY.md). The reader that finds a queue busy notes
 * it (reader_busy); the outermost of the calls that read queues (the progress hook's
 * MPIDI_PART_rdma_progress, MPI_Parrived's progress_msg, a release waiting for its writes)
 * yields once on its way out (reads_leave), so a call that finds several queues busy
 * yields once, and a nested one (progress run from inside a send that holds a lock, as
 * ch4:ofi's retry on FI_EAGAIN does) does not yield under that lock. sched_yield returns
 * at once when nothing else is runnable. Thread-local. */
typedef struct {
    int depth;                  /* reads_enter calls not yet left */
    int busy;                   /* a queue was found busy since the outermost enter */
} MPIDI_PART_rdma_reads_t;
extern __thread MPIDI_PART_rdma_reads_t MPIDI_PART_rdma_reads
    __attribute__ ((tls_model("initial-exec")));

static inline void MPIDI_PART_rdma_reader_busy(void)
{
    MPIDI_PART_rdma_reads.busy = 1;
}

static inline void MPIDI_PART_rdma_reads_enter(void)
{
    MPIDI_PART_rdma_reads.depth++;
}

static inline void MPIDI_PART_rdma_reads_leave(void)
{
    if (--MPIDI_PART_rdma_reads.depth == 0 && unlikely(MPIDI_PART_rdma_reads.busy)) {
        MPIDI_PART_rdma_reads.busy = 0;
        sched_yield();  /* not MPL_sched_yield: MPICH's configure makes that nothing on
                         * Linux (MPL_USE_NOTHING_FOR_YIELD), which undid the fix */
    }
}

/* Whether op's own buffer can be written or read directly: one contiguous run of bytes.
 * Empty transfers and PROC_NULL stay on the tag transport (nothing would be written). */
static inline int MPIDI_PART_rdma_eligible(MPIDI_PART_op_t * op)
{
    return op->contig && op->total_bytes > 0 && op->peer != MPI_PROC_NULL;
}

/* The lane message m travels on (-1: the credit, lane 0). */
static inline int MPIDI_PART_rdma_lane(const MPIDI_PART_rdmaop_t * r, int m)
{
    return (m >= 0 && r->msg_lane) ? r->msg_lane[m] : 0;
}

/* The lane write w travels on (-1: the credit): its message's. */
static inline int MPIDI_PART_rdma_write_lane(MPIDI_PART_op_t * op, int w)
{
    if (w < 0 || op->rdma->msg_lane == NULL)
        return 0;
    return op->rdma->msg_lane[w < op->st.nmsgs ? w : MPIDI_PART_rdma_write_msg(op, w)];
}

/* Bytes of message m of op: offset and length in the buffer. */
static inline void MPIDI_PART_rdma_span(MPIDI_PART_op_t * op, int m, MPI_Aint * off,
                                        MPI_Aint * len)
{
    int32_t first, nparts;
    MPIDI_PART_plan_msg_range(&op->st.plan, op->partitions, m, &first, &nparts);
    *off = first * op->part_extent;
    *len = nparts * op->part_extent;
    if (*off + *len > op->total_bytes)
        *len = op->total_bytes - *off;
}

#endif /* PART_RDMA_H_INCLUDED */
