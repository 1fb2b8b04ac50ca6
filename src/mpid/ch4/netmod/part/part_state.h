/*
 * part_state.h: the state machine of one partitioned operation, as pure logic.
 *
 * No MPICH header here: compiled into libmpi and, unchanged, into the GoogleTest unit tests
 * (unittest/test_part_state.cpp drives it with a fake transport). The MPICH side
 * (part_core.c) owns the locking: functions marked "lock held" must be serialised by the
 * caller; the others are safe from any thread (GCC __atomic builtins).
 *
 * Lifecycle (st->state):
 *
 *   UNPLANNED --plan--> PLANNED            the receiver's PLAN (sender) or match (receiver)
 *   UNPLANNED --fail--> FAILED             the plan is an error (size mismatch, ...): every
 *                                          iteration completes at once with that error
 *   (init) ----------> EMPTY               no peer (MPI_PROC_NULL, MPIDI_PART_st_no_peer):
 *                                          nothing travels, iterations complete at once
 *   PLANNED --unplan--> UNPLANNED         between iterations, to install another plan
 *   UNPLANNED --plan(0 msgs)--> EMPTY      a side has 0 partitions: nothing travels; a
 *                                          receiver's iterations complete at once, a
 *                                          sender's with its last readied partition (MPI:
 *                                          a send completes only once every partition is
 *                                          ready, also when they hold 0 bytes)
 *
 * Iterations: MPIDI_PART_st_start begins one (iter counts them on both sides; the k-th start
 * of the send pairs with the k-th start of the receive). A start before the plan is known is
 * remembered (started_unplanned) and the iteration really begins when the plan is installed.
 * In a running iteration each wire message m is
 *
 *   sender:   filling (cntr[m] > 0) -> complete -> held (not armed) or sent -> done
 *   receiver: posted -> done (arrived)
 *
 * "armed" is the transport's permission to send in this iteration: always on the tag path
 * with a permanent tag block, after the iteration's CTS (credit) otherwise. The iteration is
 * over when every message is done (st->left reaches 0).
 *
 * A message's done flag holds the iteration it was last done in (not a bit cleared at each
 * start): a thread that saw a message finish in iteration k and counts it late, after
 * another thread counted it, the iteration completed and the program started k+1, names k
 * and is refused (MPIDI_PART_st_msg_done_at).
 *
 * Iteration numbers are 64 bits (MPIDI_PART_iter_t) wherever the engine keeps or sends one:
 * a persistent request started every nanosecond needs 584 years to wrap one, so every
 * comparison of iterations (first iteration, credits, refusals, re-plans) may be a plain
 * one. 32 bits would wrap after 2^32 starts, 72 minutes at a microsecond each.
 */
#ifndef PART_STATE_H_INCLUDED
#define PART_STATE_H_INCLUDED

#include <stdint.h>
#include "part_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An iteration's number: the k-th start's is iter0 + k (iter0 is 0 unless a testing aid
 * moves it, part_core.c), so 0 names none. */
typedef uint64_t MPIDI_PART_iter_t;

enum MPIDI_PART_st_state {
    MPIDI_PART_ST_UNPLANNED = 0,
    MPIDI_PART_ST_PLANNED,
    MPIDI_PART_ST_FAILED,
    MPIDI_PART_ST_EMPTY
};

/* What MPIDI_PART_st_start asks the caller to do. */
enum MPIDI_PART_st_start_action {
    MPIDI_PART_START_COMPLETE = 0,      /* complete the iteration at once (EMPTY or FAILED) */
    MPIDI_PART_START_DEFER,     /* no plan yet: the iteration begins at plan time */
    MPIDI_PART_START_RUN,       /* per-iteration state reset: arm (receiver) / wait for ready */
    MPIDI_PART_START_AWAIT_READY        /* EMPTY sender with partitions: nothing travels; the
                                         * iteration completes with its last MPI_Pready */
};

/* Result of readying one partition. */
#define MPIDI_PART_READY_TWICE   (-2)   /* already readied in this iteration */
#define MPIDI_PART_READY_PENDING (-1)   /* its message still waits for other partitions */
#define MPIDI_PART_READY_LAST    1      /* EMPTY sender: the iteration's last partition */

typedef struct MPIDI_PART_st {
    int32_t is_send;
    int32_t partitions;         /* local user partitions */
    int32_t state;              /* enum MPIDI_PART_st_state; read with acquire */
    MPIDI_PART_plan_t plan;
    int32_t nmsgs;              /* plan.nmsgs once PLANNED, else 0 */
    int32_t ppm;                /* local partitions per full wire message */
    uint64_t ppm_inv;           /* ceil(2^64 / ppm) for ppm > 1 (MPIDI_PART_st_msg_of) */
    MPIDI_PART_iter_t iter;     /* iterations started (lock held) */
    int32_t started_unplanned;  /* the current iteration was started before the plan */
    int32_t running;            /* an iteration is under way and not all its messages done */
    int32_t armed;              /* sender: may send in this iteration (atomic) */
    int32_t *ready;             /* sender: per partition, readied in this iteration (atomic) */
    int32_t *cntr;              /* sender: per message, partitions still unready (atomic) */
    uint8_t *held;              /* sender: complete while not armed (lock held) */
    int32_t nheld;
    MPIDI_PART_iter_t *done;    /* per message: the iteration it was last done in (atomic) */
    int32_t left;               /* messages of this iteration not yet done (atomic); EMPTY
                                 * sender awaiting readies: partitions not yet readied */
    int32_t await_ready;        /* EMPTY sender whose iterations end with the last ready */
} MPIDI_PART_st_t;

/* ready: caller-provided array of partitions int32_t (sender; NULL for a receiver). */
void MPIDI_PART_st_init(MPIDI_PART_st_t * st, int is_send, int32_t partitions, int32_t * ready);

static inline int MPIDI_PART_st_get_state(const MPIDI_PART_st_t * st)
{
    return __atomic_load_n(&st->state, __ATOMIC_ACQUIRE);
}

/* Whether the iteration still has messages not done. */
static inline int MPIDI_PART_st_is_running(const MPIDI_PART_st_t * st)
{
    return __atomic_load_n(&st->running, __ATOMIC_ACQUIRE);
}

/* Lock held (or no other writer: a steady tag sender, part_core.c). Begins an iteration;
 * with RUN the per-iteration state is reset. always_armed:
 * the transport needs no per-iteration credit (a sender then sends as messages complete). */
int MPIDI_PART_st_start(MPIDI_PART_st_t * st, int always_armed);

/* Before the op is shared. No peer (MPI_PROC_NULL): EMPTY, every iteration completes at
 * once ("as soon as possible"), readied or not. */
void MPIDI_PART_st_no_peer(MPIDI_PART_st_t * st);

/* Lock held. Install the plan (UNPLANNED -> PLANNED, or EMPTY when it has no message).
 * cntr, held, done: caller-provided arrays of plan->nmsgs entries. If an iteration was
 * started before, it begins now: the messages already complete are written to
 * complete_out (capacity nmsgs) and their number returned; they must be sent when armed
 * (always_armed), else they are held. Returns -1 on an invalid plan. With no message
 * (EMPTY) a started sender with partitions stays running until its last partition is
 * readied: the iteration is over when MPIDI_PART_st_is_running is false. */
int MPIDI_PART_st_plan(MPIDI_PART_st_t * st, const MPIDI_PART_plan_t * plan, int32_t * cntr,
                       uint8_t * held, MPIDI_PART_iter_t * done, int always_armed,
                       int32_t * complete_out);

/* Lock held. PLANNED with no iteration running -> UNPLANNED, to replace the plan (the tag
 * transport's re-plan after an observed iteration, part_match.c): MPIDI_PART_st_plan then
 * installs the new one (arrays with room for its messages), and a start in between is
 * deferred until it comes, as before the first plan. nmsgs keeps the old plan's count until
 * then. Returns 0, or -1 in any other state. */
int MPIDI_PART_st_unplan(MPIDI_PART_st_t * st);

/* Lock held. UNPLANNED -> FAILED (or PLANNED -> FAILED). Returns 1 when an iteration was
 * under way (started before the plan): the caller completes it with the error. */
int MPIDI_PART_st_fail(MPIDI_PART_st_t * st);

/* ceil(2^64 / d) for 2 <= d < 2^31: with it, p / d for any 0 <= p < 2^32 is the high half
 * of the 128-bit product p * inv, exactly (64 >= 32 + log2(d) bits suffice: Lemire, Kaser
 * and Kurz, "Faster remainder by direct computation", 2019). */
static inline uint64_t MPIDI_PART_div_inv(int32_t d)
{
    return UINT64_MAX / (uint64_t) d + 1;
}

/* The message that holds local partition p (PLANNED only). Without a division: an integer
 * division (20-40 cycles) was about half of a not-yet-arrived MPI_Parrived's own work;
 * one partition per message and one message need not even the multiplication. */
static inline int32_t MPIDI_PART_st_msg_of(const MPIDI_PART_st_t * st, int32_t p)
{
    int32_t ppm = st->ppm;
    if (ppm == 1)
        return p;
    if (st->nmsgs == 1)
        return 0;
#ifdef __SIZEOF_INT128__
    return (int32_t) (((unsigned __int128) st->ppm_inv * (uint32_t) p) >> 64);
#else
    return p / ppm;
#endif
}

/* Lock-free, PLANNED and running only: ready local partition p. Returns the message that
 * became complete, MPIDI_PART_READY_PENDING, or MPIDI_PART_READY_TWICE. */
static inline int32_t MPIDI_PART_st_ready(MPIDI_PART_st_t * st, int32_t p)
{
    /* acq_rel: a timer operation's arming (part_rdma_timer.c) reads the flag, not the
     * counter, before it writes the partition's bytes */
    if (__atomic_exchange_n(&st->ready[p], 1, __ATOMIC_ACQ_REL))
        return MPIDI_PART_READY_TWICE;
    int32_t m = MPIDI_PART_st_msg_of(st, p);
    /* acq_rel: the thread that completes m sees the other threads' partition data */
    if (__atomic_sub_fetch(&st->cntr[m], 1, __ATOMIC_ACQ_REL) == 0)
        return m;
    return MPIDI_PART_READY_PENDING;
}

/* Lock held. Ready partition p before the plan is known (or in a FAILED/EMPTY iteration):
 * only the flag. Returns 0, MPIDI_PART_READY_TWICE, or MPIDI_PART_READY_LAST when p was
 * the last unready partition of an EMPTY sender's iteration: the caller completes it. */
int MPIDI_PART_st_ready_unplanned(MPIDI_PART_st_t * st, int32_t p);

/* Sender: every partition of the current iteration has been readied, before the plan or
 * after (O(partitions); for MPI_Finalize's flush, part_init.c). 0 for a receiver and for
 * a send of zero partitions. */
int MPIDI_PART_st_all_ready(const MPIDI_PART_st_t * st);

static inline int MPIDI_PART_st_is_armed(const MPIDI_PART_st_t * st)
{
    return __atomic_load_n(&st->armed, __ATOMIC_ACQUIRE);
}

/* Lock held. Message m became complete while the iteration is not armed: returns 1 if it is
 * now held for the arming, 0 if arming happened meanwhile (send it). */
int MPIDI_PART_st_hold(MPIDI_PART_st_t * st, int32_t m);

/* Lock held. Arm the current iteration; the held messages are written to out (capacity
 * nmsgs) and their number returned: send them. */
int MPIDI_PART_st_arm(MPIDI_PART_st_t * st, int32_t * out);

/* The iteration under way (or the last one); lock-free readers take it before they look at
 * a message, and name it when they count one (acquire: with the start's release store, a
 * reader that sees iteration k+1 sees what was published before it; on x86 a plain load). */
static inline MPIDI_PART_iter_t MPIDI_PART_st_iter(const MPIDI_PART_st_t * st)
{
    return __atomic_load_n(&st->iter, __ATOMIC_ACQUIRE);
}

/* Raise message m's stamp to iter; 0 when it already was iter or later. */
static inline int MPIDI_PART_st_stamp(MPIDI_PART_st_t * st, int32_t m, MPIDI_PART_iter_t iter)
{
    MPIDI_PART_iter_t v = __atomic_load_n(&st->done[m], __ATOMIC_ACQUIRE);
    do {
        if (v >= iter)
            return 0;
    } while (!__atomic_compare_exchange_n(&st->done[m], &v, iter, 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return 1;
}

/* Lock-free. Message m is done (sent and completed, or arrived) in iteration iter, the one
 * the caller read (MPIDI_PART_st_iter) before it looked at the message. Returns 1 when it
 * was the iteration's last, 0 otherwise, -1 when m was already done in iter, or iter is
 * over (m was counted there: an iteration ends only when all are; the caller is late), or
 * no iteration runs (one that completed at once, failed: a late count of the last one). */
static inline int MPIDI_PART_st_msg_done_at(MPIDI_PART_st_t * st, int32_t m, MPIDI_PART_iter_t iter)
{
    if (iter != MPIDI_PART_st_iter(st) || !MPIDI_PART_st_is_running(st) ||
        !MPIDI_PART_st_stamp(st, m, iter))
        return -1;
    if (__atomic_sub_fetch(&st->left, 1, __ATOMIC_ACQ_REL) == 0) {
        __atomic_store_n(&st->running, 0, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}

/* MPIDI_PART_st_msg_done_at in the current iteration: the RDMA transports match each
 * completion to its iteration before they count it (one counted after its iteration ended,
 * by a failure, finds the next one not running: refused). */
static inline int MPIDI_PART_st_msg_done(MPIDI_PART_st_t * st, int32_t m)
{
    return MPIDI_PART_st_msg_done_at(st, m, MPIDI_PART_st_iter(st));
}

/* Lock-free. Message m has arrived in iteration iter, but its completion is counted outside
 * the state machine (direct completion, part_tag.c): record it for MPI_Parrived's check
 * only; the iteration stays running until MPIDI_PART_st_direct_end. */
static inline void MPIDI_PART_st_msg_seen(MPIDI_PART_st_t * st, int32_t m, MPIDI_PART_iter_t iter)
{
    MPIDI_PART_st_stamp(st, m, iter);
}

/* The iteration's only message was counted down outside the state machine (direct
 * completion) and the iteration is over: end it here. Only for a planned iteration of
 * one message, and only by the operation's own calls (its next start or its free). Returns
 * 1 when it ended a running iteration, 0 when none was running. */
static inline int MPIDI_PART_st_direct_end(MPIDI_PART_st_t * st)
{
    if (!__atomic_load_n(&st->running, __ATOMIC_ACQUIRE) || st->nmsgs != 1)
        return 0;
    MPIDI_PART_st_stamp(st, 0, st->iter);
    __atomic_store_n(&st->left, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&st->running, 0, __ATOMIC_RELEASE);
    return 1;
}

/* Lock-free. Whether message m is done in iteration iter (or a later one: a late caller's
 * iteration is over, and all its messages with it). */
static inline int MPIDI_PART_st_msg_is_done_at(const MPIDI_PART_st_t * st, int32_t m,
                                               MPIDI_PART_iter_t iter)
{
    return __atomic_load_n(&st->done[m], __ATOMIC_ACQUIRE) >= iter;
}

/* Lock-free. Whether message m is done in the current iteration. */
static inline int MPIDI_PART_st_msg_is_done(const MPIDI_PART_st_t * st, int32_t m)
{
    return MPIDI_PART_st_msg_is_done_at(st, m, MPIDI_PART_st_iter(st));
}

#ifdef __cplusplus
}
#endif
#endif /* PART_STATE_H_INCLUDED */
