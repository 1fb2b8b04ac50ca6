/*
 * part_impl.h: internal types and helpers of the ch4 partitioned engine.
 * Included only by this directory's .c files (and src/mpi/part). The protocol is in README.
 */
#ifndef PART_IMPL_H_INCLUDED
#define PART_IMPL_H_INCLUDED

#include "mpidimpl.h"
#include "part_plan.h"

/* How an operation moves its data. */
enum MPIDI_PART_path {
    MPIDI_PART_PATH_NONE = 0,   /* not decided yet (sender before the receiver's answer) */
    MPIDI_PART_PATH_TAG,        /* tag-matched with a permanent id: no handshake after the first */
    MPIDI_PART_PATH_CTS,        /* tag ids used up: an id is leased per iteration, sent in a CTS */
    MPIDI_PART_PATH_NULL        /* MPI_PROC_NULL peer: every iteration completes at once */
};

/* Handshake messages (one active-message handler, told apart by kind). */
enum MPIDI_PART_msg_kind {
    MPIDI_PART_MSG_RTS = 1,     /* sender -> receiver at MPI_Psend_init */
    MPIDI_PART_MSG_PLAN,        /* receiver -> sender once matched: the wire layout */
    MPIDI_PART_MSG_CTS          /* receiver -> sender per iteration, CTS path only */
};

/* PLAN status */
#define MPIDI_PART_PLAN_STATUS_OK        0
#define MPIDI_PART_PLAN_STATUS_MISMATCH  1      /* total sizes differ: both sides fail */
#define MPIDI_PART_PLAN_STATUS_FREED     2      /* the receiver freed its request unstarted */

typedef struct MPIDI_PART_hdr {
    int kind;
    int src_rank;               /* RTS: sender's rank in the communicator */
    int tag;                    /* RTS: user tag */
    int context_id;             /* RTS: sender's context id */
    uint64_t sop;               /* the sender's operation (echoed back in PLAN and CTS) */
    int partitions;             /* RTS: sender's partition count */
    int thread_parts;           /* RTS: sender's mpich_part_thread_partitions hint (0: none) */
    int status;                 /* PLAN */
    int64_t bytes;              /* RTS: sender's total bytes; PLAN: receiver's total bytes */
    MPIDI_PART_plan_t plan;     /* PLAN */
    int path;                   /* PLAN */
    int tag_id;                 /* PLAN (tag path) or CTS (the iteration's lease) */
    int vci_n;                  /* PLAN: VCIs the messages are spread over (1: none) */
    int vci_parts, vci_ppt;     /* PLAN: message m's VCI is MPIDI_PART_plan_vci(plan,
                                 * vci_parts, m, vci_n, vci_ppt) on both sides */
} MPIDI_PART_hdr_t;

/* A handshake message waiting for the progress hook. */
typedef struct MPIDI_PART_inbox {
    struct MPIDI_PART_inbox *next;
    MPIDI_PART_hdr_t hdr;
} MPIDI_PART_inbox_t;

typedef struct MPIDI_PART_op {
    struct MPIDI_PART_op *next;         /* link in one queue (posted or lease wait) */
    struct MPIDI_PART_op *lnext;        /* link in the leased list */
    struct MPIDI_PART_op *pnext;        /* link in the completion-polling list */
    int polled;                         /* in the polling list */
    char *counted;                      /* message's completion counted in the request */
    int ncounted;
    struct MPIDI_PART_op *all_next, *all_prev;  /* link in the list of all operations */
    MPIR_Request *req;                  /* the user's request; NULL once freed */
    int is_send;
    int refs;                           /* the user's + one while a peer message may name it */
    int freed;                          /* the user freed the request */

    /* local side */
    char *buf;
    MPI_Aint count;                     /* elements per partition */
    MPI_Datatype datatype;
    MPI_Aint part_extent;               /* bytes from one partition to the next in buf */
    int partitions;
    MPI_Aint total_bytes;
    int peer;                           /* rank in comm, or MPI_PROC_NULL */
    int tag;
    int context_id;                     /* receiver: recvcontext id it matches on */
    MPIR_Comm *comm;
    int is_local;

    /* peer (receiver: from the RTS) */
    uint64_t sop;
    int peer_partitions;
    int peer_thread_parts;              /* the sender's thread hint */
    MPI_Aint peer_bytes;

    /* the plan */
    MPL_atomic_int_t plan_ready;        /* 1 once plan, path and ids are known */
    MPIDI_PART_plan_t plan;
    int path;
    int tag_id;                         /* permanent (tag path) id, -1 if none */
    int ppm;                            /* local partitions per (full) wire message */
    int error;                          /* mpi_errno every iteration completes with */
    int thread_parts;                   /* info hint: partitions one thread owns (0: none) */
    int nvcis;                          /* VCIs the messages use */
    uint8_t *msg_vci;                   /* VCI of each message (when vcomm is set) */
    MPIR_Comm **vcomm;                  /* per VCI: a view of comm bound to it (part_vci.c);
                                         * NULL with one VCI in the process: use comm */

    /* per iteration */
    int active;                         /* between start and the last completion */
    int started_unplanned;              /* started before the plan was known */
    MPL_atomic_int_t *ready;            /* sender: partition readied in this iteration */
    MPL_atomic_int_t *cntr;             /* sender: partitions still to be readied per message */
    char *pending;                      /* sender: message complete but not yet sendable */
    int npending;
    MPIR_Request **wreq;                /* the iteration's internal request per message */
    int iter_id;                        /* CTS path: this iteration's leased id, -1 if none */
    int cts_queue[2];                   /* sender, CTS path: leases received ahead */
    int cts_queued;
    int lease_wait;                     /* receiver, CTS path: waiting for an id */
} MPIDI_PART_op_t;

typedef struct MPIDI_PART_global {
    int initialized;
    int am_id;                          /* active-message handler id */
    int hook_id;                        /* progress hook id */
    MPID_Thread_mutex_t lock;           /* queues, ids, slow paths (never held across MPI calls) */
    MPL_atomic_int_t work;              /* hook has something to do */
    MPIDI_PART_inbox_t *inbox_head, *inbox_tail;
    MPIDI_PART_op_t *posted_head, *posted_tail;         /* receivers waiting for an RTS */
    MPIDI_PART_inbox_t *unexp_head, *unexp_tail;        /* RTS waiting for a receiver */
    MPIDI_PART_op_t *lease_head, *lease_tail;           /* receivers waiting for an id */
    MPIDI_PART_op_t *leased;                            /* receivers holding a lease */
    MPIDI_PART_op_t *polling;                           /* ops with uncounted messages */
    MPL_atomic_int_t in_hook;                           /* the hook is running (no re-entry) */
    int ids_ready;                                      /* tag layout and ids set up */
    MPIDI_PART_op_t *all;
    MPIDI_PART_tag_layout_t layout;
    int nids;                           /* ids the layout can name */
    int *free_ids;                      /* stack of free ids */
    int nfree_ids;
    int perm_ids;                       /* ids held by tag-path operations */
    int perm_max;                       /* MPIR_CVAR_PART_TAG_IDS, clamped */
    int nleased;
} MPIDI_PART_global_t;

extern MPIDI_PART_global_t MPIDI_PART_global;

/* MPI_T performance counters (src/mpi/part/part_mpit.c registers them). */
typedef struct MPIDI_PART_pvars {
    MPL_atomic_uint64_t wire_msgs_sent;
    MPL_atomic_uint64_t wire_msgs_recvd;
    MPL_atomic_uint64_t user_parts_sent;
    MPL_atomic_uint64_t cts_path_ops;
    MPL_atomic_uint64_t first_iter_deferred;
    MPL_atomic_uint64_t vci_spread_msgs;
} MPIDI_PART_pvars_t;
extern MPIDI_PART_pvars_t MPIDI_PART_pvars;
int MPIDI_PART_mpit_init(void);

#define MPIDI_PART_PVAR_ADD(name_, n_) \
    MPL_atomic_fetch_add_uint64(&MPIDI_PART_pvars.name_, (uint64_t) (n_))

#define MPIDI_PART_LOCK()   do { int err_; MPID_Thread_mutex_lock(&MPIDI_PART_global.lock, &err_); } while (0)
#define MPIDI_PART_UNLOCK() do { int err_; MPID_Thread_mutex_unlock(&MPIDI_PART_global.lock, &err_); } while (0)

#define MPIDI_PART_OP(req_) (MPIDI_PART_REQUEST(req_, op))

/* part_match.c: handshake and matching */
int MPIDI_PART_am_handler(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                          MPIR_Request ** req);
int MPIDI_PART_send_hdr(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * hdr);
int MPIDI_PART_recv_matched(MPIDI_PART_op_t * rop);
int MPIDI_PART_progress(int *made_progress);
int MPIDI_PART_op_unref(MPIDI_PART_op_t * op);  /* lock held; 1: last ref, destroy it */
void MPIDI_PART_op_destroy(MPIDI_PART_op_t * op);       /* lock not held */
int MPIDI_PART_recv_start(MPIDI_PART_op_t * op);
int MPIDI_PART_serve_leases(void);

/* part_ids.c: tag ids */
int MPIDI_PART_ids_init(void);
void MPIDI_PART_ids_finalize(void);
int MPIDI_PART_id_get(int permanent);   /* -1 when none is free; lock held */
void MPIDI_PART_id_put(int id, int permanent);  /* lock held */
void MPIDI_PART_lease_return(MPIDI_PART_op_t * op);     /* lock held: give back its lease */

/* part_xfer.c: wire messages */
int MPIDI_PART_send_msg(MPIDI_PART_op_t * op, int m);
int MPIDI_PART_post_recvs(MPIDI_PART_op_t * op, int id);
int MPIDI_PART_install_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr);
int MPIDI_PART_cts_arrived(MPIDI_PART_op_t * op, int id);
int MPIDI_PART_alloc_msgs(MPIDI_PART_op_t * op);
void MPIDI_PART_reset_iteration(MPIDI_PART_op_t * op);
void MPIDI_PART_complete_now(MPIR_Request * req, int count);
int MPIDI_PART_poll_completions(uint64_t * vci_mask);
void MPIDI_PART_unpoll(MPIDI_PART_op_t * op);    /* lock held */

/* part_vci.c: VCI spreading */
int MPIDI_PART_vci_count(MPIR_Comm * comm, int nmsgs);
int MPIDI_PART_vci_setup(MPIDI_PART_op_t * op, int nvcis, int map_parts, int map_ppt);
void MPIDI_PART_vci_release(MPIDI_PART_op_t * op);      /* lock not held */
void MPIDI_PART_vci_finalize(void);
int MPIDI_PART_vci_progress(uint64_t mask, int with_hooks);
int MPIDI_PART_vci_progress_msg(MPIDI_PART_op_t * op, int m);

/* The communicator object message m travels on. */
static inline MPIR_Comm *MPIDI_PART_msg_comm(MPIDI_PART_op_t * op, int m)
{
    return op->vcomm ? op->vcomm[op->msg_vci[m]] : op->comm;
}

#endif /* PART_IMPL_H_INCLUDED */
