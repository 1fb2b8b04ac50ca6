/*
 * part_impl.h: internal types of the ch4 partitioned engine: the operation, the handshake
 * header, the transport interface and the globals. Included only by this directory's .c
 * files. The protocol and which file owns what are in README.
 */
#ifndef PART_IMPL_H_INCLUDED
#define PART_IMPL_H_INCLUDED

#include "mpidimpl.h"
#include "part_ch4.h"
#include "part_plan.h"
#include "part_state.h"
#include "part_tagspace.h"
#include "part_timer.h"
#include "part_wire.h"
#include <time.h>

/* The engine's wire messages travel on a private context of each communicator: the
 * communicator's context id with the sub-communicator field set to 3, a value MPICH never
 * gives a communicator (0: the communicator, 1: its intranode and 2: its internode
 * sub-communicator). No user or MPICH message can match them. */
#define MPIDI_PART_CONTEXT_OFFSET (3 << MPIR_CONTEXT_SUBCOMM_SHIFT)

/* ---- handshake (the message and its wire form: part_wire.h) ------------------------------ */

enum MPIDI_PART_plan_status {
    MPIDI_PART_STATUS_OK = 0,
    MPIDI_PART_STATUS_MISMATCH,   /* send larger than the receive: both sides fail */
    MPIDI_PART_STATUS_FREED,      /* the receiver freed its request before it was matched */
    MPIDI_PART_STATUS_ERROR       /* the receiver could not plan: the sender fails too */
};

enum MPIDI_PART_transport_id {
    MPIDI_PART_TRANSPORT_TAG = 1,       /* part_tag.c */
    MPIDI_PART_TRANSPORT_OFI = 2,       /* part_ofi.c: RDMA writes over libfabric */
    MPIDI_PART_TRANSPORT_VERBS = 3      /* part_verbs.c: RDMA writes over InfiniBand verbs */
};

#if defined(MPIDI_CH4_PART_OFI) || defined(MPIDI_CH4_PART_VERBS)
#define MPIDI_CH4_PART_RDMA 1   /* part_rdma.c and at least one backend */
#endif

/* MPIR_CVAR_PART_TRANSPORT, read by MPI_Psend_init/MPI_Precv_init (part_match.c) */
enum MPIDI_PART_choice {
    MPIDI_PART_CHOICE_AUTO = 0,
    MPIDI_PART_CHOICE_TAG,
    MPIDI_PART_CHOICE_OFI,
    MPIDI_PART_CHOICE_VERBS
};

/* Aggregators (part_aggr.c): how the receiver's plan merges gcd-messages */
enum MPIDI_PART_aggregator {
    MPIDI_PART_AGGR_SIZE = 0,   /* up to MPIR_CVAR_PART_AGGR_SIZE bytes */
    MPIDI_PART_AGGR_NONE,       /* never */
    MPIDI_PART_AGGR_PLOGGP,     /* the PLogGP model's choice */
    MPIDI_PART_AGGR_TIMER       /* RDMA: groups split by a deadline (part_rdma_timer.c) */
};


/* What carries an operation's wire messages, for the model's LogGP table (part_aggr.c) */
enum MPIDI_PART_model_path {
    MPIDI_PART_PATH_TAG = 0,    /* MPI messages: table shm or net by the peer's node */
    MPIDI_PART_PATH_RDMA_SHM,   /* RDMA writes within the node (libfabric shm) */
    MPIDI_PART_PATH_RDMA_NET    /* RDMA writes over a network (tcp;ofi_rxm, verbs) */
};

/* A handshake message waiting for the progress hook. */
typedef struct MPIDI_PART_inbox {
    struct MPIDI_PART_inbox *next;
    MPIDI_PART_hdr_t hdr;
} MPIDI_PART_inbox_t;

/* ---- the tag transport's per-operation state (part_tag.c) ----------------------------- */

typedef struct MPIDI_PART_tagop {
    int permanent;              /* holds its tag block for life (else leases per iteration) */
    int64_t base;               /* tag of message 0 in this iteration; -1: none (yet) */
    int32_t order;              /* the block holds 2^order tags */
    MPIR_Request **wreq;        /* the iteration's internal request per message */
    int32_t cursor;             /* messages below it are done (poll from here) */
    MPIDI_PART_iter_t cts_iter[2]; /* sender: credits that came ahead of their iteration */
    int64_t cts_base[2];
    int ncts;
    int nvcis;                  /* VCIs the messages use */
    uint8_t *msg_vci;           /* VCI of each message (with views) */
    int32_t nwreq;              /* entries of wreq and msg_vci (the first plan's messages) */
    int32_t vci_parts, vci_ppt; /* what the VCI mapping is computed from (part_vci.c) */
    int64_t split, split_max;   /* the plan's splitting (part_plan.h; split 0: none) */
    int32_t *pfirst;            /* with splitting: wreq slot of message m's first piece, and
                                 * pfirst[nmsgs] the slots in use; NULL: slot m, one piece */
    int32_t nslots;             /* entries of wreq */
    int32_t held;               /* requests counted in MPIDI_PART_global.tag_reqs (lock) */
    MPIR_Comm **vcomm;          /* per VCI: a view of comm bound to it (part_vci.c); NULL
                                 * with one VCI in the process: messages use comm */
    struct MPIDI_PART_op *lnext;        /* receiver: in the list of lease holders */
    MPIDI_PART_iter_t refuse_iter; /* receiver whose sender withdrew: the iteration whose
                                 * receives are being cancelled, and the slots below */
    int32_t refuse_upto;        /* refuse_upto taken for it (lock; MPIDI_PART_tag_refuse) */
    MPIDI_PART_iter_t armed_iter; /* receiver: the iteration whose receives are being posted,
                                 * stored once the last iteration's requests were released
                                 * (until then the slots hold those) */
    struct MPIDI_PART_op *dnext;        /* freed receiver, tags_kept 1: in the list of kept
                                         * blocks that take what comes (lock) */
} MPIDI_PART_tagop_t;

/* ---- the operation ------------------------------------------------------------------------ */


typedef struct MPIDI_PART_op {
    MPIDI_PART_st_t st;         /* the state machine (part_state.h) */
    const struct MPIDI_PART_transport *tp;      /* set with the plan */
    MPIR_Request *req;          /* the user's request; NULL once freed */
    int is_send;
    int refs;                   /* the user's, one while a peer message may name it, and
                                 * those of a drain, a watch, a timer pass or a handler
                                 * that holds it (lock) */
    int freed;                  /* the user freed the request (lock) */
    int freed_at_meet;          /* freed already when its RTS met it (lock; pvar
                                 * part_freed_while_planning counts the others) */
    int start_window;           /* testing aid MPIR_CVAR_PART_DEBUG_START_DELAY_US: a
                                 * receive's MPI_Start is between beginning its iteration
                                 * and releasing the last one's requests (atomic; pvar
                                 * part_withdraw_in_start) */
    int error;                  /* mpi_errno every iteration completes with (FAILED);
                                 * reported through MPIDI_PART_error_again */
    struct MPIDI_PART_errtext *error_kept;      /* error's class and texts (atomic) */
    struct MPIDI_PART_errtext *error_list;      /* every error kept (part_error.c; atomic) */
    uint32_t serial;            /* sender: its RTS's serial; receiver: the matched RTS's */
    int refused;                /* receiver: its sender withdrew (WITHDRAW): the status it
                                 * gave (FREED or ERROR); sender: its receive was freed
                                 * (RELEASE: FREED); every iteration from refused_from on
                                 * fails (MPIDI_PART_refused_error); 0: none (atomic, set
                                 * under the lock after refused_from) */
    MPIDI_PART_iter_t refused_from; /* the first iteration the peer never started */
    int refusal_failed;         /* the state is FAILED because of the refusal (lock) */
    MPIDI_PART_iter_t ran_iters; /* then: the last iteration that ran before the first that
                                 * failed (a number: a sender's WITHDRAW counts the
                                 * iterations up to it from iter0; a receive that
                                 * failed otherwise keeps its block of tags for good) */
    int tags_kept;              /* receiver freed on the tag transport (lock): 1 while it
                                 * keeps its block of tags until its sender's WITHDRAW says
                                 * no message of a later iteration can come, 2 for good: one
                                 * did, and nothing will ever receive it (section 5) */
    struct MPIDI_PART_op *rnext;        /* in its bucket of MPIDI_PART_global.matched
                                         * (lock): a sender once announced, by itself and
                                         * its serial; a receiver once matched, by its
                                         * sender's op and serial */
    int in_matched;

    /* links (lock) */
    struct MPIDI_PART_op *all_next, *all_prev;  /* all operations */
    struct MPIDI_PART_op *next;                 /* posted receivers, or lease waiters */
    struct MPIDI_PART_op *pnext;                /* operations with messages in flight */
    MPL_atomic_int_t in_poll;                   /* in that list */
    int early_ncts;             /* sender: CTSs that came before the PLAN (the receiver's
                                 * MPI_Start may send one while the PLAN is still on its
                                 * way), replayed once it is installed; handshake only */
    MPIDI_PART_iter_t early_cts_iter[2];
    uint8_t early_cts_ext[2][8];
    int direct;                 /* receiver: this iteration's one wire receive decrements the
                                 * request's completion counter itself (part_tag.c, "direct
                                 * completion"); the state catches up at the next MPI_Start
                                 * or the free. Written only by the op's own calls. */
    int startall_at;            /* during MPIDI_PART_startall_check only: 1 + the index
                                 * where the array names it; 0 otherwise */

    /* local side */
    char *buf;
    MPI_Aint count;             /* elements per partition */
    MPI_Datatype datatype;
    MPI_Aint part_extent;       /* bytes from one partition to the next in buf */
    int partitions;
    MPI_Aint total_bytes;
    int peer;                   /* rank in comm, or MPI_PROC_NULL */
    int tag;
    int context_id;             /* receiver: the recvcontext id it matches on */
    MPIR_Comm *comm;
    int is_local;
    int thread_parts;           /* info hint: partitions one thread owns (0: none) */
    MPI_Aint aggr_size;         /* receiver: MPIR_CVAR_PART_AGGR_SIZE at MPI_Precv_init */
    int aggregator;             /* receiver: enum MPIDI_PART_aggregator at MPI_Precv_init */
    int spread_us;              /* receiver: MPIR_CVAR_PART_AGGR_SPREAD_US at MPI_Precv_init */
    int timeout_us;             /* receiver: MPIR_CVAR_PART_AGGR_TIMEOUT_US at MPI_Precv_init */
    int observe;                /* receiver: MPIR_CVAR_PART_AGGR_OBSERVE at MPI_Precv_init */
    int model_path;             /* receiver, at match: the path whose LogGP table the
                                 * model reads (enum MPIDI_PART_model_path) */
    MPIDI_PART_iter_t replan_iter; /* both: the first iteration of the plan that replaces the
                                 * first one after the one before it was observed (section
                                 * 4c); 0: none (atomic: the sender reads it before the lock) */
    int32_t replan_ns;          /* sender: the re-plan's tau from the PLAN (ns) */
    int64_t *obs;               /* sender, during an observed iteration only: per message
                                 * of the plan, when it completed and how long its MPI_Pready
                                 * then spent sending it (ns; 2 x nmsgs; a slice of
                                 * obs_base); else NULL */
    int64_t *obs_base;          /* sender: the observed iterations' samples (one per iteration
                                 * of the window, at most MPIDI_PART_OBS_ITERS, 2 x nmsgs
                                 * each; freed with the operation) */
    int32_t obs_n;              /* sender: samples taken so far */
    uint64_t rop;               /* sender: the receiver's operation (from the PLAN) */
    int early;                  /* receiver: EARLY sent; sender: EARLY received (atomic) */
    int layout_in;              /* the re-plan (lock): 0 not yet; receiver: 1 the sender's
                                 * LAYOUT came ahead of our start, -1 it was invalid; 2 done */
    MPIDI_PART_plan_t layout;   /* receiver: that LAYOUT's plan */
    int32_t timer_ns;           /* the timer aggregator's deadline (the PLAN's); -1: none */
    int32_t timer_cap_ns;       /* the PLAN's: the adaptive deadline's cap; 0: fixed */
    int32_t timer_run;          /* the PLAN's: a hurried group's run cap; 0: none */
    int spread;                 /* wire messages per iteration on a VCI other than 0 */
    int choice;                 /* enum MPIDI_PART_choice at init */
    int contig;                 /* buf is one contiguous run of total_bytes bytes */

    /* peer (receiver: from the RTS) */
    uint64_t sop;
    int peer_partitions;
    int peer_thread_parts;
    int peer_nvcis;
    MPI_Aint peer_bytes;
    MPIDI_PART_iter_t peer_iter0;       /* receiver: the sender's MPIDI_PART_ITER0 (its RTS) */
    int peer_choice;
    int peer_contig;            /* the sender's buffer is one contiguous run (RTS) */
    uint8_t *rts_ext;           /* the RTS's transport data (RDMA addresses), or NULL */
    int rts_ext_len;

    struct MPIDI_PART_rdmaop *rdma;     /* RDMA transport state (part_rdma.h), or NULL */

    /* state machine storage */
    int32_t *ready;             /* sender: per partition (in the op's own allocation) */
    int32_t *cntr;              /* sender: per message */
    uint8_t *held;              /* sender: per message */
    MPIDI_PART_iter_t *done;    /* per message: the iteration it was done in (part_state.h) */
    void *msgs_mem;             /* the one allocation done, cntr and held lie in */

    union {
        MPIDI_PART_tagop_t tag;
    } u;
} MPIDI_PART_op_t;

/* ---- the transport interface -----------------------------------------------------------
 * A transport moves the wire messages of planned operations. The core (part_core.c,
 * part_match.c) owns matching, the plan, ready flags and counters, the user request's
 * completion and the per-message "done" state that MPI_Parrived reads; a transport reports
 * each finished message with MPIDI_PART_msg_done. "no lock": called without the engine
 * lock, and may make MPI calls. */
typedef struct MPIDI_PART_transport {
    const char *name;
    int id;                     /* enum MPIDI_PART_transport_id, carried in the PLAN */
    /* receiver, at match (no lock): set up the transport for op and describe it in the
     * PLAN's ext; on failure nothing is left behind */
    int (*recv_plan) (MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan);
    /* sender, when the PLAN arrives (no lock): take the receiver's transport data */
    int (*send_plan) (MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan);
    /* sender, lock held, at the start of a planned iteration: whether it may send at once
     * (no per-iteration credit needed, or the credit came ahead) */
    int (*always_armed) (MPIDI_PART_op_t * op);
    /* receiver (no lock): the iteration began: make the buffer writable (post receives,
     * give a credit) */
    int (*recv_arm) (MPIDI_PART_op_t * op);
    /* sender (no lock): send wire message m of the current iteration */
    int (*send) (MPIDI_PART_op_t * op, int m);
    /* sender (no lock, progress hook): a CTS for op arrived */
    int (*ctl) (MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr);
    /* lock-free: mark message m done in iteration iter (read before: MPIDI_PART_st_iter)
     * if it finished; 1 if it is done there */
    int (*test_msg) (MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter);
    /* lock held: test op's messages in flight; sets the VCIs that still carry some */
    void (*poll) (MPIDI_PART_op_t * op, uint64_t * vci_mask);
    /* no lock, MPI_Parrived found message m not done: progress what carries it, then
     * *done = test_msg (one call: a false MPI_Parrived is ~20 ns). NULL for the tag
     * transport, whose messages are MPICH requests on a VCI: MPI_Parrived progresses that
     * VCI (part_core.c's parrived_vci_poll) and does not test again */
    int (*progress_msg) (MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter, int *done);
    /* no lock: before a new iteration, release the previous one's resources */
    void (*iter_reset) (MPIDI_PART_op_t * op);
    /* no lock: release everything of op (at free); never called on an active iteration */
    void (*free) (MPIDI_PART_op_t * op);
    /* lock held, between iterations (op UNPLANNED, nothing in flight), no MPI call: make
     * the state of op fit plan, which has at most as many messages as the first plan;
     * NULL: the transport keeps its first plan (no observed re-planning, section 4c) */
    int (*replan) (MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan);
} MPIDI_PART_transport_t;

extern const MPIDI_PART_transport_t MPIDI_PART_tag_transport;
#ifdef MPIDI_CH4_PART_OFI
extern const MPIDI_PART_transport_t MPIDI_PART_ofi_transport;
#endif
#ifdef MPIDI_CH4_PART_VERBS
extern const MPIDI_PART_transport_t MPIDI_PART_verbs_transport;
#endif

/* ---- globals --------------------------------------------------------------------------- */

#define MPIDI_PART_WORK_HANDSHAKE 1     /* inbox or transport handshake work */
#define MPIDI_PART_WORK_POLL      2     /* operations with messages in flight */
#define MPIDI_PART_WORK_RDMA      4     /* RDMA operations: read the completion queues */
#define MPIDI_PART_WORK_DRAIN     8     /* kept blocks take what comes (part_tag.c) */

typedef struct MPIDI_PART_global {
    int initialized;
    int stopped;                /* MPI_Finalize began (part_init.c, quiesce): no progress */
    int am_id;                  /* active-message handler id */
    MPID_Thread_mutex_t lock;   /* queues, tags, slow paths (never held across MPI calls) */
    MPL_atomic_int_t work;      /* MPIDI_PART_WORK_* bits: the hook's one load */
    MPL_atomic_int_t in_hs;     /* the handshake work is running (no re-entry) */
    MPIDI_PART_inbox_t *inbox_head, *inbox_tail;
    MPIDI_PART_op_t *posted_head, *posted_tail; /* receivers waiting for an RTS */
    MPIDI_PART_inbox_t *unexp_head, *unexp_tail;        /* RTS waiting for a receiver */
    MPIDI_PART_op_t *polling;   /* operations with messages in flight */
    /* the progress call polls them only when a VCI's progress count moved (section 4) */
    MPL_atomic_int_t poll_seen; /* the counts' sum at the last poll */
    MPL_atomic_int_t poll_force;        /* an operation joined the list since */
    MPL_atomic_uint64_t poll_vcis;      /* VCIs with messages in flight at the last poll */
    MPIDI_PART_op_t *all;
    /* tag transport */
    int tags_ready;
    int ucx_shm;                /* UCX_TLS lets UCX use shared memory (read with the tags) */
    MPIDI_PART_tagspace_t tags;
    int max_order;              /* the largest block (messages per plan <= 2^max_order) */
    int perm_blocks;            /* permanent blocks held */
    int perm_max;               /* MPIDI_PART_TAG_IDS, clamped */
    int64_t tag_reqs;           /* requests the tag transport's plans hold now, sends and
                                 * receives (MPIR_CVAR_PART_TAG_MAX_REQUESTS; lock) */
    uint32_t serial;            /* RTSs sent (their serial numbers; lock) */
    MPIDI_PART_iter_t iter0;    /* every operation's counter before its first start: 0, or
                                 * MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32's 2^32 - N, read
                                 * once at MPI_Init (a later MPI_T write cannot make two
                                 * operations of a pair disagree) */
    /* announced sends and matched receives, by the sender's op and serial: a peer's
     * message that names a send (PLAN, CTS) or a receive's sender (WITHDRAW) is looked up
     * here, never dereferenced (the op may be gone) (lock) */
#define MPIDI_PART_MATCHED_BUCKETS 1024
    struct MPIDI_PART_op *matched[MPIDI_PART_MATCHED_BUCKETS];
    MPIDI_PART_op_t *lease_head, *lease_tail;   /* receivers waiting for a lease */
    MPIDI_PART_op_t *leased;    /* receivers holding a lease */
    /* freed receives that keep their block until their sender's WITHDRAW (tags_kept 1),
     * and the messages they took that are still arriving (section 5; lock) */
    MPIDI_PART_op_t *draining;
    struct MPIDI_PART_catch *catches;
    MPL_atomic_int_t in_drain;  /* a drain pass is running (no re-entry) */
    int64_t drain_next_ns;      /* the next pass's time (relaxed atomic: the pass sets it,
                                 * a newly kept block brings it forward) */
    int64_t drain_period_ns;    /* the time between passes (lock) */
    int drain_kick;             /* a block was kept since the running pass began (lock) */
} MPIDI_PART_global_t;

extern MPIDI_PART_global_t MPIDI_PART_global;
/* Every operation's counter before its first start (MPIDI_PART_global.iter0) */
#define MPIDI_PART_ITER0 (MPIDI_PART_global.iter0)

/* ---- MPI_T performance variables (registered by src/mpi/part/part_mpit.c through
 * MPIDI_PART_pvar_info in part_ch4.h). Added to once per iteration or slow-path event, each
 * on its own cache line. */
typedef struct {
    MPL_atomic_uint64_t v;
    char pad[64 - sizeof(MPL_atomic_uint64_t)];
} MPIDI_PART_pvar_t;

enum MPIDI_PART_pvar_index {
    MPIDI_PART_PV_WIRE_MSGS_SENT = 0,
    MPIDI_PART_PV_WIRE_MSGS_RECVD,
    MPIDI_PART_PV_USER_PARTS_SENT,
    MPIDI_PART_PV_CTS_PATH_OPS,
    MPIDI_PART_PV_FIRST_ITER_DEFERRED,
    MPIDI_PART_PV_VCI_SPREAD_MSGS,
    MPIDI_PART_PV_OPS_LIVE,
    MPIDI_PART_PV_TAG_IDS_IN_USE,
    MPIDI_PART_PV_LEASE_WAITS,
    MPIDI_PART_PV_OFI_OPS,
    MPIDI_PART_PV_OFI_WRITES,
    MPIDI_PART_PV_OFI_CREDITS,
    MPIDI_PART_PV_OFI_DEFERRED,
    MPIDI_PART_PV_OFI_MRS,
    MPIDI_PART_PV_VERBS_OPS,
    MPIDI_PART_PV_VERBS_WRITES,
    MPIDI_PART_PV_VERBS_CREDITS,
    MPIDI_PART_PV_VERBS_DEFERRED,
    MPIDI_PART_PV_VERBS_MRS,
    MPIDI_PART_PV_VERBS_QPS,
    MPIDI_PART_PV_TIMER_RUNS,
    MPIDI_PART_PV_REPLANS,
    MPIDI_PART_PV_DIRECT_ITERS,
    MPIDI_PART_PV_TIMER_DEADLINE,
    MPIDI_PART_PV_RDMA_BUSY,
    MPIDI_PART_PV_TAG_SPLIT_MSGS,
    MPIDI_PART_PV_LOGGP_CALIB_SEGS,
    MPIDI_PART_PV_LOGGP_CALIB_US,
    MPIDI_PART_PV_RDMA_DRAIN_TIMEOUTS,
    MPIDI_PART_PV_RDMA_DRAINING,
    MPIDI_PART_PV_WITHDRAWN,
    MPIDI_PART_PV_RELEASE_BEFORE_PLAN,
    MPIDI_PART_PV_FREED_WHILE_PLANNING,
    MPIDI_PART_PV_WITHDRAW_IN_START,
    MPIDI_PART_PV_PREADY_ANSWER_RACED,
    MPIDI_PART_PV_RDMA_STALE_CREDITS,
    MPIDI_PART_PV_VERBS_FAIL_LAST_REF,
    MPIDI_PART_PV_SAMPLE_AFTER_FREE,
    MPIDI_PART_PV_DIRECT_ARMED_IN_TEST,
    MPIDI_PART_PV_INFLIGHT_LATE,
    MPIDI_PART_PV_COUNT
};
extern MPIDI_PART_pvar_t MPIDI_PART_pvars[MPIDI_PART_PV_COUNT];

#define MPIDI_PART_PVAR_ADD(idx_, n_) \
    MPL_atomic_fetch_add_uint64(&MPIDI_PART_pvars[MPIDI_PART_PV_##idx_].v, (uint64_t) (n_))
#define MPIDI_PART_PVAR_SUB(idx_, n_) \
    MPL_atomic_fetch_sub_uint64(&MPIDI_PART_pvars[MPIDI_PART_PV_##idx_].v, (uint64_t) (n_))
#define MPIDI_PART_PVAR_SET(idx_, v_) \
    MPL_atomic_relaxed_store_uint64(&MPIDI_PART_pvars[MPIDI_PART_PV_##idx_].v, (uint64_t) (v_))

/* The engine's mutexes (the engine lock, an RDMA timer operation's, the backends' fabric,
 * endpoint and lane locks), taken only when MPI runs threaded (MPI_THREAD_MULTIPLE, which
 * MPIR_CVAR_ASYNC_PROGRESS implies), as MPICH's own critical sections are: below that
 * level no two threads are ever in MPI at once. MPICH changes isThreaded only at the end
 * of MPI_Init and the start of MPI_Finalize, when no engine call is under way, so a lock
 * and its unlock always agree. */
#define MPIDI_PART_MUTEX_LOCK(m_) \
    do { int err_; if (MPIR_IS_THREADED) MPID_Thread_mutex_lock(m_, &err_); } while (0)
#define MPIDI_PART_MUTEX_UNLOCK(m_) \
    do { int err_; if (MPIR_IS_THREADED) MPID_Thread_mutex_unlock(m_, &err_); } while (0)
#define MPIDI_PART_LOCK()   MPIDI_PART_MUTEX_LOCK(&MPIDI_PART_global.lock)
#define MPIDI_PART_UNLOCK() MPIDI_PART_MUTEX_UNLOCK(&MPIDI_PART_global.lock)

#define MPIDI_PART_OP(req_) (MPIDI_PART_REQUEST(req_, op))

/* bytes between data that different threads write (x86-64's cache line) */
#define MPIDI_PART_CACHE_LINE 64

/* Whether the operation's re-plan (section 4c) is still to come: its plan may change at an
 * iteration boundary. The plan's installation stores replan_iter before it publishes
 * PLANNED, so a planned operation reads it with this acquire load. */
static inline int MPIDI_PART_replan_ahead(MPIDI_PART_op_t * op)
{
    MPIDI_PART_iter_t r = __atomic_load_n(&op->replan_iter, __ATOMIC_ACQUIRE);
    return r && op->st.iter < r;
}

/* ---- part_core.c: operations and completion ---------------------------------------- */
int MPIDI_PART_op_unref(MPIDI_PART_op_t * op);  /* lock held; 1: last ref, destroy it */
void MPIDI_PART_all_remove(MPIDI_PART_op_t * op);        /* lock held: out of the op list */
void MPIDI_PART_op_destroy(MPIDI_PART_op_t * op);       /* lock not held */
int MPIDI_PART_op_release(MPIDI_PART_op_t * op);        /* lock not held: unref, destroy
                                                         * if it was the last (1) */
int MPIDI_PART_op_alloc_msgs(MPIDI_PART_op_t * op, int nmsgs);
/* The op's memory (its arrays and the op), nothing else. */
void MPIDI_PART_op_free_memory(MPIDI_PART_op_t * op);
void MPIDI_PART_msg_done(MPIDI_PART_op_t * op, int m); /* lock-free */
/* lock-free: done in iteration iter, which the caller read before it looked at m (a late
 * caller, whose iteration is over, is ignored; part_state.h) */
void MPIDI_PART_msg_done_at(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter);
void MPIDI_PART_set_status(MPIDI_PART_op_t * op);       /* the status the iteration ends with */
/* part_error.c. An error an operation keeps for later iterations (op->error, an RDMA
 * doom's code): its class and its levels' texts are copied now (the entry keep_error
 * returns; NULL when there is no memory), since MPICH's error codes name slots of a ring
 * that later errors reuse. hold_error makes err (with its entry) op->error. */
typedef struct MPIDI_PART_errtext MPIDI_PART_errtext_t;
MPIDI_PART_errtext_t *MPIDI_PART_keep_error(MPIDI_PART_op_t * op, int err);
void MPIDI_PART_hold_error(MPIDI_PART_op_t * op, int err, MPIDI_PART_errtext_t * t);
void MPIDI_PART_set_error(MPIDI_PART_op_t * op, int err);      /* keep, then hold */
/* What a call that reports err (op->error's value; MPI_SUCCESS: none) returns: a new code
 * with its class and levels (err itself when it was not kept) */
int MPIDI_PART_error_again(MPIDI_PART_op_t * op, int err);
void MPIDI_PART_errors_free(MPIDI_PART_op_t * op);
/* lock-free: have the hook poll op, whose message of iteration iter is in flight */
void MPIDI_PART_msg_in_flight(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter);
void MPIDI_PART_complete_iteration(MPIDI_PART_op_t * op);      /* over (also one without messages) */
int MPIDI_PART_send_ready(MPIDI_PART_op_t * op, const int32_t * msgs, int n);
void MPIDI_PART_poll_all(unsigned events);
void MPIDI_PART_poke_progress(void);

/* ---- part_match.c: handshake, matching, progress ------------------------------------- */
int MPIDI_PART_am_handler(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                          MPIR_Request ** req);
int MPIDI_PART_send_hdr(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * hdr);
/* Lock held, MPI_Start of iteration op->replan_iter, before MPIDI_PART_st_start: install
 * the plan that replaces the first one. Sender: plan (MPIDI_PART_aggr_observed); returns 1
 * when a LAYOUT must be sent (MPIDI_PART_send_layout, after the lock). Receiver (plan
 * NULL): the sender's LAYOUT if it came, else the start is deferred until it comes. */
int MPIDI_PART_replan_locked(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan);
int MPIDI_PART_send_layout(MPIDI_PART_op_t * op);
/* Sender, no lock: tell the receiver that this send sends nothing more after iteration
 * last (MPIDI_PART_ITER0: none; the message carries the count; WITHDRAW, status FREED or ERROR;
 * engine README section 5) */
int MPIDI_PART_send_withdraw(MPIDI_PART_op_t * op, int status, MPIDI_PART_iter_t last);
/* Receiver, no lock: tell the sender that this planned receive was freed after iteration
 * last (RELEASE, carrying the count; engine README section 5) */
int MPIDI_PART_send_release(MPIDI_PART_op_t * op, MPIDI_PART_iter_t last);
/* Lock held, a receiver whose sender withdrew or a sender whose receive was freed,
 * failing: sets op->error (made only now: a
 * correct program's WITHDRAW makes no error code) unless it has one; returns it */
int MPIDI_PART_refused_error(MPIDI_PART_op_t * op);
/* Lock held: op fails for that refusal from now on, iteration ran the last that ran (its error,
 * op->refusal_failed, op->ran_iters); returns MPIDI_PART_st_fail's (an iteration was under
 * way: the caller completes it) */
int MPIDI_PART_fail_refused_locked(MPIDI_PART_op_t * op, MPIDI_PART_iter_t ran);

/* Monotonic clock in ns (the observed iteration's MPI_Pready times, the timer's deadlines). */
static inline int64_t MPIDI_PART_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The testing aids' windows (MPIR_CVAR_PART_DEBUG_*_DELAY_US): busy-wait us microseconds,
 * so that another thread's handling can fall in between. */
static inline void MPIDI_PART_debug_spin_us(int us)
{
    int64_t until = MPIDI_PART_now_ns() + 1000 * (int64_t) us;
    while (MPIDI_PART_now_ns() < until);
}
int MPIDI_PART_match_posted(MPIDI_PART_op_t * op);
int MPIDI_PART_handshake(void);
int MPIDI_PART_choice(int *choice);     /* MPIR_CVAR_PART_TRANSPORT, checked */
void MPIDI_PART_take_rts(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * rts);
/* Lock held: the bucket of MPIDI_PART_global.matched a sender's op and serial fall in. */
static inline int MPIDI_PART_matched_bucket(uint64_t sop, uint32_t serial)
{
    uint64_t h = (sop >> 4) ^ ((uint64_t) serial * 0x9e3779b97f4a7c15ull);
    return (int) ((h ^ (h >> 29)) & (MPIDI_PART_MATCHED_BUCKETS - 1));
}

/* Lock held: op's bucket, under its sender's op and serial (a send's sender is itself). */
static inline MPIDI_PART_op_t **MPIDI_PART_matched_of(MPIDI_PART_op_t * op)
{
    uint64_t sop = op->is_send ? (uint64_t) (uintptr_t) op : op->sop;
    return &MPIDI_PART_global.matched[MPIDI_PART_matched_bucket(sop, op->serial)];
}

/* Lock held: file op in MPIDI_PART_global.matched. */
static inline void MPIDI_PART_matched_add(MPIDI_PART_op_t * op)
{
    MPIDI_PART_op_t **b = MPIDI_PART_matched_of(op);
    op->rnext = *b;
    *b = op;
    op->in_matched = 1;
}
/* Lock held: set work bits (MPIDI_PART_WORK_*). */
static inline void MPIDI_PART_set_work(int bits)
{
    int w = MPL_atomic_relaxed_load_int(&MPIDI_PART_global.work);
    MPL_atomic_release_store_int(&MPIDI_PART_global.work, w | bits);
}

/* Lock held: clear work bits unless keep. */
static inline void MPIDI_PART_clear_work(int bits, int keep)
{
    if (keep)
        return;
    int w = MPL_atomic_relaxed_load_int(&MPIDI_PART_global.work);
    MPL_atomic_release_store_int(&MPIDI_PART_global.work, w & ~bits);
}

/* ---- part_tag.c: the tag transport ---------------------------------------------------- */
int MPIDI_PART_tags_init(void);
void MPIDI_PART_tags_finalize(void);
int MPIDI_PART_tag_handshake(void);     /* lease hand-out (progress hook) */
int MPIDI_PART_tag_max_msgs(void);
int MPIDI_PART_tag_msgs_left(void);
/* No lock, a receiver whose sender withdrew (op->refused set): end its running iteration
 * with the error if the sender never started it (cancel the receives it posted, or leave
 * the lease queue) */
void MPIDI_PART_tag_refuse(MPIDI_PART_op_t * op);
/* MPI_Finalize, no lock: a freed receive that kept its block of tags (section 5) takes
 * the messages that already came for it, which nothing else will ever receive */
void MPIDI_PART_tag_drain_kept(MPIDI_PART_op_t * op);
/* Lock held, a freed receive that keeps its block of tags: it posts nothing more, so its
 * requests leave the budget (MPIR_CVAR_PART_TAG_MAX_REQUESTS) now */
void MPIDI_PART_tag_keep_locked(MPIDI_PART_op_t * op);
/* Lock held: its sender's WITHDRAW came (tags_kept left 1): it takes nothing more */
void MPIDI_PART_tag_unkeep_locked(MPIDI_PART_op_t * op);
/* Progress hook, no lock: kept blocks take the messages that came for them (section 5) */
int MPIDI_PART_tag_drain(void);
/* Whether this progress call lets them (MPIDI_PART_tag_drain then runs a pass once its
 * period has passed): every 256th call of a thread, so no clock read on the others */
static inline int MPIDI_PART_drain_due(void)
{
    static __thread unsigned skips __attribute__ ((tls_model("initial-exec")));
    return (++skips & 255) == 0;
}
/* MPI_Finalize, no lock: no more drain passes; the messages taken have all arrived */
void MPIDI_PART_tag_drain_stop(void);

/* ---- part_rdma.c: the RDMA transport (backends part_ofi.c, part_verbs.c) ---------------- */
#ifdef MPIDI_CH4_PART_RDMA
void MPIDI_PART_rdma_init(void);
void MPIDI_PART_rdma_finalize(void);
/* MPI_Psend_init/MPI_Precv_init with the transport forced (choice): bring the backend up
 * or fail */
int MPIDI_PART_rdma_require(int choice);
/* sender, MPI_Psend_init: describe our side in the RTS (nothing when op cannot use it);
 * an error only when the transport is forced and cannot come up */
int MPIDI_PART_rdma_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts);
/* receiver, at match: the RDMA transport op can move over, or NULL */
const MPIDI_PART_transport_t *MPIDI_PART_rdma_usable(MPIDI_PART_op_t * op);
/* the enum MPIDI_PART_model_path of transport tp (one MPIDI_PART_rdma_usable returned) */
int MPIDI_PART_rdma_model_path(const MPIDI_PART_transport_t * tp);
/* the timer's deadlines and the backends' completion queues */
int MPIDI_PART_rdma_progress(void);
/* no lock: op (with RDMA state) is busy (attached, or an iteration is running) or idle */
void MPIDI_PART_rdma_busy(MPIDI_PART_op_t * op);
void MPIDI_PART_rdma_idle(MPIDI_PART_op_t * op);
/* no lock: an RDMA iteration ended less than 1 ms ago, before MPIDI_PART_rdma_linger_ns
 * (0: none; atomic); the hook then still reads the queues on every call (README 4b) */
int MPIDI_PART_rdma_lingering(void);
extern int64_t MPIDI_PART_rdma_linger_ns;
/* no lock: release op's RDMA state (offered in the RTS and never planned, or at free) */
void MPIDI_PART_rdma_release(MPIDI_PART_op_t * op);
/* no lock (handshake): the peer's FAIL message */
void MPIDI_PART_rdma_peer_failed(const MPIDI_PART_hdr_t * hdr);
#endif

/* ---- part_aggr.c: the aggregators ------------------------------------------------------ */
/* MPI_Precv_init, before anything is created: read and check the aggregator's CVARs and
 * info keys */
int MPIDI_PART_aggr_read(MPIR_Info * info, int *aggr_size, int *aggregator, int *spread_us,
                         int *timeout_us, int *observe);
/* Receiver, at match: the re-plan's tau in ns for gcd-messages of `bytes` bytes (the timer
 * aggregator's deadline: MPIR_CVAR_PART_AGGR_TIMEOUT_US, or the cost of one extra message) */
int32_t MPIDI_PART_aggr_replan_tau_ns(MPIDI_PART_op_t * op);
/* Sender, at the start after the observed iterations (no lock): the new plan from their
 * samples (op->obs_base, op->obs_n of them) */
void MPIDI_PART_aggr_observed(MPIDI_PART_op_t * op, MPIDI_PART_plan_t * plan);
/* How many iterations a sender observes, up to the one before the re-plan (never the
 * first, which starts before the plan): at most MPIDI_PART_OBS_MAX (part_ploggp.h) */
#define MPIDI_PART_OBS_ITERS 3
/* The table of the calibration at MPI_Init (part_calib.c): the tag transport's table for
 * peers on the same node (on_node) or on others, unless MPIR_CVAR_PART_LOGGP_FILE is set. */
struct MPIDI_PART_loggp;
void MPIDI_PART_aggr_calibrated(const struct MPIDI_PART_loggp *t, int on_node);
/* part_calib.c: MPIR_CVAR_PART_LOGGP_CALIBRATE's measurement (from MPID_InitCompleted) */
int MPIDI_PART_calibrate(void);
int64_t MPIDI_PART_aggr_limit(MPIDI_PART_op_t * op, int64_t bytes, int32_t send_parts,
                              int32_t n, int32_t max_msgs);

/* ---- part_vci.c: VCI spreading ------------------------------------------------------- */
int MPIDI_PART_peer_on_node(MPIDI_PART_op_t * op);
int64_t MPIDI_PART_aggr_eager_limit_shm(void);
int MPIDI_PART_vci_count(MPIR_Comm * comm, int nmsgs, int peer_nvcis);
int MPIDI_PART_vci_local(MPIR_Comm * comm);
int MPIDI_PART_vci_setup(MPIDI_PART_op_t * op, int nvcis, int map_parts, int map_ppt);
void MPIDI_PART_vci_release(MPIDI_PART_op_t * op);
int MPIDI_PART_vci_remap(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan);       /* lock held */
void MPIDI_PART_vci_all_views_locked(MPIDI_PART_op_t * op);
void MPIDI_PART_vci_finalize(void);
int MPIDI_PART_vci_progress(uint64_t mask);

/* Whether a VCI may be progressed directly (its lock, the netmod's and shm's progress):
 * not for a pending SIGUSR1 or the lockless model. */
static inline int MPIDI_PART_vci_direct(void)
{
    return MPIDI_CH4_MT_MODEL != MPIDI_CH4_MT_LOCKLESS
#ifdef HAVE_SIGNAL
        && likely(MPIDI_global.sigusr1_count <= MPIDI_global.my_sigusr1_count)
#endif
        ;
}

/* VCI v's lock held: the netmod's progress and (in a build with it) shm's. */
static inline int MPIDI_PART_vci_progress_held(int v)
{
    int mpi_errno = MPIDI_NM_progress(v, 0);
#ifndef MPIDI_CH4_DIRECT_NETMOD
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_SHM_progress(v, 0);
#endif
    return mpi_errno;
}

/* Progress VCI v alone, without the progress hooks and without MPICH's every-so-often
 * progress of every VCI: the VCI's lock, the netmod's progress and (in a build with shared
 * memory) shm's, under that one lock. MPIDI_progress_test with a state naming v did the
 * same through its generic path (the signal check, flag tests, the VCI loop), which cost
 * ~1.3 ns of a ~30 ns false MPI_Parrived (A/B of the two libraries, alternating, 4 rounds,
 * 1 and 32 partitions); with shared memory it would also lock the VCI twice. Each progress
 * still runs under the lock MPICH's path holds for it, and neither takes it itself.
 * MPICH's path runs instead for a pending SIGUSR1, work queues and the lockless model.
 * MPI_Parrived calls it through MPIDI_PART_vci_try_progress: its every-256th full progress
 * (part_core.c) moves every VCI and the hooks. */
static inline int MPIDI_PART_vci_progress_only(int v)
{
#ifndef MPIDI_CH4_USE_WORK_QUEUES
    if (MPIDI_PART_vci_direct()) {
        MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(v).lock);
        int mpi_errno = MPIDI_PART_vci_progress_held(v);
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(v).lock);
        return mpi_errno;
    }
#endif
    MPID_Progress_state state;
    state.flag = MPIDI_PROGRESS_ALL & ~MPIDI_PROGRESS_HOOKS;
    if (MPIDI_CH4_MT_MODEL == MPIDI_CH4_MT_LOCKLESS)
        state.flag |= MPIDI_PROGRESS_NM_LOCKLESS;
    state.progress_made = 0;
    state.vci[0] = v;
    state.vci_count = 1;
    return MPIDI_progress_test(&state, 0);
}

/* MPI_Parrived's progress of VCI v when no other thread holds v's lock. A thread that
 * holds it is in an MPI call on v (a progress, which moves what this call would, or a
 * send): a false MPI_Parrived then answers without waiting for the lock, so threads that
 * poll partitions carried by one VCI do not queue on its lock one behind the other. The
 * lock is taken as MPICH's critical-section entry takes it (owner, count), with
 * pthread_mutex_trylock where MPICH's mutex is a plain POSIX one; elsewhere, and when MPI
 * runs unthreaded, this is MPIDI_PART_vci_progress_only. */
#if MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI && \
    MPL_THREAD_PACKAGE_NAME == MPL_THREAD_PACKAGE_POSIX && \
    MPL_POSIX_MUTEX_NAME == MPL_POSIX_MUTEX_NATIVE && !defined(MPIDI_CH4_USE_WORK_QUEUES)
#define MPIDI_PART_VCI_TRYLOCK 1
#endif
/* MPIDI_PART_vci_progress_only out of line (part_vci.c): MPIDI_PART_vci_try_progress's
 * path when it cannot try the lock, kept out of its callers' frames. */
int MPIDI_PART_vci_progress_only_call(int v);
static inline int MPIDI_PART_vci_try_progress(int v)
{
#ifdef MPIDI_PART_VCI_TRYLOCK
    if (MPIR_ThreadInfo.isThreaded && MPIDI_PART_vci_direct()) {
        MPIDU_Thread_mutex_t *lock = &MPIDI_VCI(v).lock;
        /* opaque to the compiler: kept in a register across the calls below, not computed
         * again from v after each (~6 instructions of a false MPI_Parrived) */
#ifdef __GNUC__
        __asm__("":"+r"(lock));
#endif
        if (pthread_mutex_trylock(&lock->mutex) != 0)
            return MPI_SUCCESS; /* busy: another thread is in an MPI call on v */
        MPIR_Assert(lock->count == 0);
        MPL_thread_self(&lock->owner);
        lock->count = 1;
        int mpi_errno = MPIDI_PART_vci_progress_held(v);
        /* MPICH's exit with the count known (a nested entry has left again) */
        MPIR_Assert(lock->count == 1);
        lock->count = 0;
        lock->owner = 0;
        pthread_mutex_unlock(&lock->mutex);
        return mpi_errno;
    }
    return MPIDI_PART_vci_progress_only_call(v);
#else
    return MPIDI_PART_vci_progress_only(v);
#endif
}

/* Progress VCI v without the progress hooks (the engine's own hook calls this, through
 * MPIDI_PART_vci_progress), and now and then every VCI as MPICH's per-VCI progress does
 * (MPIDI_do_global_progress, MPIR_CVAR_CH4_GLOBAL_PROGRESS: a thread that only polls one
 * message must move the others too, part_soak -seed=2 with 4 VCIs waited forever without
 * it). */
static inline int MPIDI_PART_vci_progress_one(int v)
{
    if (unlikely(MPIDI_do_global_progress())) {
        MPID_Progress_state state;
        MPIDI_progress_state_init(&state);      /* every VCI (the count moves on once more) */
        state.flag &= ~MPIDI_PROGRESS_HOOKS;
        return MPIDI_progress_test(&state, 0);
    }
    return MPIDI_PART_vci_progress_only(v);
}

/* The VCI that carries message m of a tag-transport operation. */
static inline int MPIDI_PART_tag_msg_vci(MPIDI_PART_op_t * op, int m)
{
    return op->u.tag.vcomm ? op->u.tag.msg_vci[m] : 0;
}

/* Slot in wreq of tag-transport message m's first piece; *npieces gets how many it has. */
static inline int32_t MPIDI_PART_tag_msg_slot(const MPIDI_PART_tagop_t * t, int m,
                                              int32_t * npieces)
{
    if (t->pfirst == NULL) {
        *npieces = 1;
        return m;
    }
    *npieces = t->pfirst[m + 1] - t->pfirst[m];
    return t->pfirst[m];
}

/* MPI_Parrived's common false answer on the tag transport, without the call to the
 * transport's test_msg: whether message m's wire receive is known not to have completed
 * (under direct completion the user request's counter; otherwise its first piece's request
 * posted and not complete). Read in test_msg's order (the slot, then the direct flag:
 * part_tag.c). 0 means "ask test_msg", which also counts a completed message. */
static inline int MPIDI_PART_tag_msg_pending(MPIDI_PART_op_t * op, int m)
{
    int32_t np, s = MPIDI_PART_tag_msg_slot(&op->u.tag, m, &np);
    MPIR_Request *r = __atomic_load_n(&op->u.tag.wreq[s], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&op->direct, __ATOMIC_ACQUIRE))
        return !MPIR_cc_is_complete(&op->req->cc);
    return r != NULL && !MPIR_Request_is_complete(r);
}

/* The communicator object message m of a tag-transport operation travels on. */
static inline MPIR_Comm *MPIDI_PART_msg_comm(MPIDI_PART_op_t * op, int m)
{
    return op->u.tag.vcomm ? op->u.tag.vcomm[op->u.tag.msg_vci[m]] : op->comm;
}

#endif /* PART_IMPL_H_INCLUDED */
