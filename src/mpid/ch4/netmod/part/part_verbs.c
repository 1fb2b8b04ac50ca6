/*
 * part_verbs.c: the RDMA transport over InfiniBand verbs (libibverbs), the same protocol as
 * part_ofi.c (part_rdma.h; README, "RDMA transport"): each wire message is one
 * IBV_WR_RDMA_WRITE_WITH_IMM straight into the receive buffer, its immediate names the
 * receiver's slot and the message; the receiver's MPI_Start gives an 8-byte credit write
 * into the sender's mailbox. One device, port, protection domain, completion queue and
 * shared receive queue per process, opened lazily on first use. Reliable-connection queue
 * pairs per peer and direction (MPIR_CVAR_PART_VERBS_QPS of them), set up through the
 * engine's handshake: the sender's RTS carries its queue pairs, the receiver brings its own
 * to RTS and answers in the PLAN, the sender connects and says hello (a 0-byte send), after
 * which the receiver may write credits. Completions are read from MPICH's progress.
 *
 * Locking. No process-wide lock is taken per write: MPI_Pready takes only the lock of the
 * queue pair its message travels on. Both locks below, like the engine lock, are taken
 * only when MPI runs threaded (MPIDI_PART_MUTEX_LOCK).
 *   lane lock   one per queue pair (vrb_lane_t, c->lane[q]): ibv_post_send on that queue
 *               pair and its FIFO of writes that wait (no room in the send budget, the
 *               connection not ready yet, or earlier writes still waiting there).
 *   vrb.lock    slow paths only: opening and closing the device, inserting and looking up
 *               connections, bringing queue pairs to RTR/RTS, every change of a connection's
 *               state (INIT -> RTS -> READY, any -> BROKEN with its reason), memory
 *               registrations, vrb.why.
 *   draining    an atomic flag, not a lock: one thread at a time reads the completion queue,
 *               and that thread alone touches the shared receive queue (rx_posted), the
 *               async event queue and vrb.polls.
 *   atomics     vrb.tx_out, the send budget: signaled send work requests posted over all
 *               queue pairs and not yet reaped from the one completion queue. A post first
 *               reserves one with a compare-and-swap that never goes past vrb.tx_budget (no
 *               room: the write waits in its lane), progress gives them back as it reaps
 *               the completions; with vrb.rx_depth receives at most, the completion queue
 *               (tx_budget + rx_depth entries) cannot overrun. A connection's state is
 *               read without a lock (acquire) and stored under vrb.lock (release; a broken
 *               connection's reason is written before BROKEN is stored). vrb.conns is
 *               published with a release store; a published connection's next pointer,
 *               queue pairs and keys never change until MPI_Finalize, so progress walks the
 *               list without a lock. A lane's npend and vrb.queued count waiting writes:
 *               written under the lane's lock, read lock-free by progress to skip idle lanes.
 *               An operation's held count (atomic) keeps it alive while a write of it
               waits in a lane, is posted and not reaped, or is being failed.
 * Lock order: vrb.lock, then a lane lock (only one lane lock at a time). The engine lock is
 * never held when either is taken, and neither is held across a call that may take the
 * engine lock (fail_conn_ops, MPIDI_PART_rdma_failed, MPIDI_PART_rdma_deliver, ...).
 * Order: a lane's writes are posted in the order they were submitted (a new write never
 * overtakes one that waits in its lane); writes on different queue pairs of a connection
 * have no order on the wire (RC orders a queue pair only), and credits all travel on queue
 * pair 0.
 */
#include "part_rdma.h"

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <fcntl.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_VERBS_DEVICE
      category    : CH4_PART
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The verbs device of the partitioned engine's verbs transport, as ibv_devices lists
        it (e.g. "mlx5_0"). Empty: the first device with an active port.

    - name        : MPIR_CVAR_PART_VERBS_PORT
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The port of MPIR_CVAR_PART_VERBS_DEVICE (1, 2, ...). 0: the first active port.

    - name        : MPIR_CVAR_PART_VERBS_GID_INDEX
      category    : CH4_PART
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        GID index of the port. RoCE (an Ethernet link layer) needs one: choose the RoCE v2
        GID of the interface the peers reach each other on (rdma-core's show_gids lists
        them). -1: on InfiniBand, route by LID without a GRH; on RoCE, index 0.

    - name        : MPIR_CVAR_PART_VERBS_QPS
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Reliable-connection queue pairs per peer and direction (1 to 8). 0: one per VCI
        (MPIR_CVAR_CH4_NUM_VCIS), at most 8. An operation spreads its wire messages over
        as many of them as the tag transport would spread them over VCIs.

    - name        : MPIR_CVAR_PART_VERBS_SEND_DEPTH
      category    : CH4_PART
      type        : int
      default     : 256
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Writes the verbs transport keeps posted at a time (the process's send queues
        together; 16 to 16384, and at most the device's max_qp_wr: values outside are
        taken as the nearest bound). More wait in order and go as completions return.

    - name        : MPIR_CVAR_PART_VERBS_RECV_DEPTH
      category    : CH4_PART
      type        : int
      default     : 512
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Receive work requests kept posted on the shared receive queue (16 to 16384, and
        at most the device's max_srq_wr: values outside are taken as the nearest bound);
        each incoming write with immediate data consumes one, progress replenishes them.

    - name        : MPIR_CVAR_PART_VERBS_DEBUG_FAIL_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: the thread that fails a broken connection's operations busy-waits
        this many microseconds after it failed them and before it drops its references,
        so that the program can free a request meanwhile
        (threads/part/part_verbs_free_race; pvar part_verbs_fail_last_ref). 0: off.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define VRB_EXT_MAGIC 0x56524231u       /* "VRB1" */
#define VRB_MAX_QPS 8
#define VRB_CQ_BATCH 32
#define VRB_NOMEM (-1)          /* a post failed for our own allocation (not an errno) */

enum { VRB_DOWN = 0, VRB_UP = 1, VRB_FAILED = -1 };
enum { CONN_INIT = 0, CONN_RTS, CONN_READY, CONN_BROKEN };
enum { CTX_DATA = 0, CTX_CREDIT, CTX_HELLO };
/* vrb_pend_t.m besides a data write (>= 0, part_rdma.h) */
enum { VRB_W_CREDIT = -1, VRB_W_HELLO = -2 };

struct vrb_conn;

/* A write: one being submitted, one that waits in its lane, or one that failed to post. */
typedef struct vrb_pend {
    struct vrb_pend *next;
    struct vrb_conn *conn;
    MPIDI_PART_op_t *op;        /* NULL: the hello */
    int32_t m;                  /* a data write, VRB_W_CREDIT (op's credit for iteration
                                 * iter) or VRB_W_HELLO */
    MPIDI_PART_iter_t iter;
    int rc;                     /* failed: the post's error; 0: the connection broke */
} vrb_pend_t;

/* The send side of one queue pair. The padding keeps the lanes of a connection, which
 * different threads post on, off each other's cache line. */
typedef struct vrb_lane {
    MPID_Thread_mutex_t lock;   /* ibv_post_send on this queue pair, head/tail */
    vrb_pend_t *head, *tail;    /* writes waiting for this queue pair, in order */
    int npend;                  /* how many (stored under lock, read lock-free) */
    char pad[64];
} vrb_lane_t;

/* The queue pairs to one peer in one direction. A sender's connection writes data and
 * takes credits; a receiver's takes data and writes credits. Everything but the lanes and
 * the state is set before the connection is published (conn_publish) or under vrb.lock. */
typedef struct vrb_conn {
    struct vrb_conn *next;
    int sender;
    const void *peer;           /* sender: the peer's address-vector entry */
    uint32_t peer_qpn0;         /* receiver: the sender's first queue pair, its LID, GID */
    uint16_t peer_lid;
    uint8_t peer_gid[16];
    int nqp;
    struct ibv_qp *qp[VRB_MAX_QPS];
    uint32_t peer_qpn[VRB_MAX_QPS];     /* connected to (RTS, READY; vrb.lock) */
    uint32_t psn;
    int state;                  /* CONN_*: conn_state() / conn_set() */
    char why[128];              /* CONN_BROKEN: the reason (written once, before the state) */
    int tell;                   /* broken by a failed post in submit(): its operations are
                                 * failed and the peer told by progress (atomic) */
    vrb_lane_t lane[VRB_MAX_QPS];
} vrb_conn_t;

/* A signaled work request's context (wr_id). Data contexts live in the operation; credit
 * and hello contexts are allocated and freed at their completion. */
typedef struct {
    int kind;
    MPIDI_PART_op_t *op;
    int32_t m;                  /* data: the write (a message, or a timer run) */
    vrb_conn_t *conn;
} vrb_ctx_t;

typedef struct MPIDI_PART_verbsop {
    MPIDI_PART_rdmaop_t r;      /* slots, credits, lanes (= queue pairs) */
    vrb_conn_t *conn;
    struct ibv_mr *mr;          /* receiver: the receive buffer; sender: the send buffer */
    uint64_t raddr;             /* sender: the receive buffer; receiver: the sender's mailbox */
    uint32_t rkey;
    vrb_ctx_t *ctx;             /* sender: per write (MPIDI_PART_RDMA_NWRITES) */
    int held;                   /* writes that still name the operation (atomic): its data
                                 * writes submitted and not yet reaped or failed, and a
                                 * credit until it is posted or failed; verbs_release takes
                                 * what still waits out of the lanes, then waits for 0 */
} MPIDI_PART_verbsop_t;

#define VOP(op_) ((MPIDI_PART_verbsop_t *) (op_)->rdma)

/* One side of a connection, as the handshake carries it. */
typedef struct {
    uint16_t lid;
    uint8_t mtu, nqp;
    uint32_t psn;
    uint8_t gid[16];
    uint32_t qpn[VRB_MAX_QPS];
} vrb_side_t;

/* RTS ext: the sender's side */
typedef struct {
    uint32_t magic;
    uint32_t slot;
    uint64_t mbox_addr;
    uint32_t mbox_rkey;
    uint32_t credit_base;       /* the sender's (MPIDI_PART_rdma_credit_low) */
    vrb_side_t side;
} vrb_rts_ext_t;

/* PLAN ext: the receiver's side and the VCI mapping of messages to queue pairs */
typedef struct {
    uint32_t magic;
    uint32_t slot;
    uint64_t raddr;
    uint32_t rkey;
    int32_t nlanes, vci_parts, vci_ppt;
    vrb_side_t side;
} vrb_plan_ext_t;

static struct {
    int state;                  /* VRB_*: stored under lock, read lock-free (device_up) */
    char why[MPI_MAX_ERROR_STRING];     /* the last slow path's failure (lock) */
    char dev[64];
    MPID_Thread_mutex_t lock;   /* the slow paths (see "Locking" above) */
    MPL_atomic_int_t draining;  /* one thread reads the completion queue at a time */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    uint8_t port;
    uint16_t lid;
    uint8_t mtu;                /* enum ibv_mtu */
    int use_gid, gid_index;
    union ibv_gid gid;
    uint32_t max_msg;
    int nqp;
    int tx_budget;              /* fixed once the device is up */
    int tx_out;                 /* the budget in use (atomic: budget_take/budget_give) */
    int queued;                 /* writes waiting in any lane (atomic) */
    int tells;                  /* some connection's c->tell is set (atomic) */
    int rx_depth, rx_posted;    /* rx_posted: the draining thread's */
    uint64_t mbox[2];           /* credits land in mbox[0], are written from mbox[1] */
    struct ibv_mr *mbox_mr;
    vrb_conn_t *conns;          /* conn_publish / conn_first */
    unsigned polls;             /* progress calls (async events are read every 64th) */
    int probe;                  /* device_open for MPIDI_PART_verbs_describe: no line */
} vrb;

#define VRB_LOCK()      MPIDI_PART_MUTEX_LOCK(&vrb.lock)
#define VRB_UNLOCK()    MPIDI_PART_MUTEX_UNLOCK(&vrb.lock)
#define LANE_LOCK(l_)   MPIDI_PART_MUTEX_LOCK(&(l_)->lock)
#define LANE_UNLOCK(l_) MPIDI_PART_MUTEX_UNLOCK(&(l_)->lock)

/* ---- the send budget, connection state --------------------------------------------------- */

/* Reserve one send work request (and so one completion-queue entry); 0: none is left. */
static inline int budget_take(void)
{
    int out = __atomic_load_n(&vrb.tx_out, __ATOMIC_RELAXED);
    while (out < vrb.tx_budget)
        if (__atomic_compare_exchange_n(&vrb.tx_out, &out, out + 1, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return 1;
    return 0;
}

/* n reserved work requests are no longer needed: posts that failed, or reaped completions */
static inline void budget_give(int n)
{
    __atomic_sub_fetch(&vrb.tx_out, n, __ATOMIC_RELEASE);
}

static inline int conn_state(const vrb_conn_t * c)
{
    return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
}

/* vrb.lock held */
static inline void conn_set(vrb_conn_t * c, int state)
{
    __atomic_store_n(&c->state, state, __ATOMIC_RELEASE);
}

/* vrb.lock held: break c; 1 when it was not broken before (then why is its reason). Every
 * queue pair of c goes to the error state: what is queued on it flushes instead of running,
 * and, as the target of the peer's writes, it takes none more. So once this side has broken
 * the connection (its own error, or the peer's FAIL), before it fails its operations, no
 * write posted on another queue pair of the connection can land in a receive buffer whose
 * MPI_Wait returned the error (RC orders one queue pair only; until 2026-12-01 only the
 * queue pair that failed was in error). An error of ibv_modify_qp leaves that queue pair as
 * it was: nothing better to do. */
static int conn_broken(vrb_conn_t * c, const char *why)
{
    if (conn_state(c) == CONN_BROKEN)
        return 0;
    snprintf(c->why, sizeof(c->why), "%s", why);
    conn_set(c, CONN_BROKEN);
    struct ibv_qp_attr err_attr = {.qp_state = IBV_QPS_ERR };
    for (int q = 0; q < c->nqp; q++)
        if (c->qp[q])
            (void) ibv_modify_qp(c->qp[q], &err_attr, IBV_QP_STATE);
    return 1;
}

/* No lock held: conn_broken under vrb.lock. */
static int conn_break(vrb_conn_t * c, const char *why)
{
    VRB_LOCK();
    int first = conn_broken(c, why);
    VRB_UNLOCK();
    return first;
}

/* The first published connection (lock-free); c->next is fixed once c is published. */
static inline vrb_conn_t *conn_first(void)
{
    return __atomic_load_n(&vrb.conns, __ATOMIC_ACQUIRE);
}

static const char *vrb_strerror(int rc)
{
    return rc == VRB_NOMEM ? "out of memory" : strerror(rc);
}

/* ---- device ------------------------------------------------------------------------------ */

void MPIDI_PART_verbs_init(void)
{
    int err;
    memset(&vrb, 0, sizeof(vrb));
    MPID_Thread_mutex_create(&vrb.lock, &err);
    MPIR_Assert(err == 0);
    MPL_atomic_relaxed_store_int(&vrb.draining, 0);
}

static void conn_destroy(vrb_conn_t * c)
{
    int err;
    for (int q = 0; q < c->nqp; q++)
        if (c->qp[q]) {
            ibv_destroy_qp(c->qp[q]);
            MPIDI_PART_PVAR_SUB(VERBS_QPS, 1);
        }
    for (int q = 0; q < VRB_MAX_QPS; q++) {
        for (vrb_pend_t * p = c->lane[q].head; p;) {
            vrb_pend_t *next = p->next;
            MPL_free(p);
            p = next;
        }
        MPID_Thread_mutex_destroy(&c->lane[q].lock, &err);
    }
    MPL_free(c);
}

/* device_close: read the completion queue until every signaled send work request is in (the
 * budget is back) or the time is up; frees the contexts of credits and hellos. */
static void cq_drain(int64_t until_ns)
{
    struct ibv_wc wc[VRB_CQ_BATCH];
    int n;
    do {
        while ((n = ibv_poll_cq(vrb.cq, VRB_CQ_BATCH, wc)) > 0)
            for (int i = 0; i < n; i++) {
                vrb_ctx_t *x = (vrb_ctx_t *) (uintptr_t) wc[i].wr_id;
                if (x == NULL)
                    continue;   /* a receive */
                budget_give(1);
                if (x->kind != CTX_DATA)
                    MPL_free(x);
            }
    } while (n == 0 && __atomic_load_n(&vrb.tx_out, __ATOMIC_ACQUIRE) > 0 &&
             MPIDI_PART_now_ns() < until_ns);
}

/* Lock held, and no other thread in the transport (MPI_Finalize, or a failed open). The
 * queue pairs go to the error state first, so that every send work request still out
 * completes (flushed if it had not run), and the completion queue is read until they are
 * all in (at most 1 s): destroying a queue pair discards its completions still in the queue
 * (mlx5 cleans them out, and so does the emulator, whose VERBSEMU_CHECK_LEAKS reports it),
 * and with them the contexts their wr_ids name. Until 2026-12-01 the queue pairs went
 * first. */
static void device_close(void)
{
    if (vrb.cq) {
        struct ibv_qp_attr err_attr = {.qp_state = IBV_QPS_ERR };
        for (vrb_conn_t * c = vrb.conns; c; c = c->next)
            for (int q = 0; q < c->nqp; q++)
                if (c->qp[q])
                    (void) ibv_modify_qp(c->qp[q], &err_attr, IBV_QP_STATE);
        cq_drain(MPIDI_PART_now_ns() + 1000000000LL);
    }
    while (vrb.conns) {
        vrb_conn_t *c = vrb.conns;
        vrb.conns = c->next;
        conn_destroy(c);
    }
    if (vrb.mbox_mr)
        ibv_dereg_mr(vrb.mbox_mr);
    if (vrb.srq)
        ibv_destroy_srq(vrb.srq);
    if (vrb.cq)
        ibv_destroy_cq(vrb.cq); /* (the queue pairs took what was left of theirs) */
    if (vrb.pd)
        ibv_dealloc_pd(vrb.pd);
    if (vrb.ctx)
        ibv_close_device(vrb.ctx);
    vrb.mbox_mr = NULL;
    vrb.srq = NULL;
    vrb.cq = NULL;
    vrb.pd = NULL;
    vrb.ctx = NULL;
    vrb.tx_out = 0;
    vrb.queued = 0;
}

/* Keep the shared receive queue full (device_open under the lock, or the draining thread). */
static int srq_fill(void)
{
    while (vrb.rx_posted < vrb.rx_depth) {
        struct ibv_recv_wr wr = {.wr_id = 0,.next = NULL,.sg_list = NULL,.num_sge = 0 }, *bad;
        int rc = ibv_post_srq_recv(vrb.srq, &wr, &bad);
        if (rc)
            return rc;
        vrb.rx_posted++;
    }
    return 0;
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Pick the device and port the CVARs name (or the first active ones); 0 or errno, with
 * vrb.why set. */
static int device_pick(struct ibv_port_attr *pa)
{
    const char *want = MPIR_CVAR_PART_VERBS_DEVICE;
    int ndev = 0, rc = ENODEV;
    struct ibv_device **list = ibv_get_device_list(&ndev);

    snprintf(vrb.why, sizeof(vrb.why), "no verbs device%s%s (ibv_get_device_list: %d devices)",
             want && want[0] ? " named " : "", want && want[0] ? want : "", ndev);
    for (int d = 0; list && d < ndev && rc; d++) {
        const char *name = ibv_get_device_name(list[d]);
        if (want && want[0] && strcmp(want, name) != 0)
            continue;
        struct ibv_context *ctx = ibv_open_device(list[d]);
        struct ibv_device_attr da;
        if (ctx == NULL || ibv_query_device(ctx, &da)) {
            snprintf(vrb.why, sizeof(vrb.why), "ibv_open_device(%s): %s", name,
                     strerror(errno));
            if (ctx)
                ibv_close_device(ctx);
            continue;
        }
        for (int p = 1; p <= da.phys_port_cnt; p++) {
            if (MPIR_CVAR_PART_VERBS_PORT > 0 && p != MPIR_CVAR_PART_VERBS_PORT)
                continue;
            if (ibv_query_port(ctx, (uint8_t) p, pa) == 0 && pa->state == IBV_PORT_ACTIVE) {
                vrb.ctx = ctx;
                vrb.port = (uint8_t) p;
                snprintf(vrb.dev, sizeof(vrb.dev), "%s", name);
                rc = 0;
                break;
            }
        }
        if (rc) {
            snprintf(vrb.why, sizeof(vrb.why), "device %s has no active port%s", name,
                     MPIR_CVAR_PART_VERBS_PORT > 0 ? " of that number" : "");
            ibv_close_device(ctx);
        }
    }
    if (list)
        ibv_free_device_list(list);
    return rc;
}

#define VRB_TRY(ok_, what_) do {                                                \
        if (!(ok_)) {                                                          \
            snprintf(vrb.why, sizeof(vrb.why), "%s: %s", what_, strerror(errno ? errno : EINVAL)); \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* Open the device, port, PD, CQ, SRQ and mailbox (verbs lock held); one verbose line says
 * what happened. */
static void device_open(void)
{
    struct ibv_port_attr pa;

    __atomic_store_n(&vrb.state, VRB_FAILED, __ATOMIC_RELAXED);
    if (device_pick(&pa))
        goto fail;
    vrb.lid = pa.lid;
    vrb.mtu = (uint8_t) pa.active_mtu;
    vrb.max_msg = pa.max_msg_sz;
    vrb.gid_index = MPIR_CVAR_PART_VERBS_GID_INDEX;
    vrb.use_gid = vrb.gid_index >= 0 || pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    if (vrb.gid_index < 0)
        vrb.gid_index = 0;
    if (vrb.use_gid) {
        errno = 0;
        VRB_TRY(ibv_query_gid(vrb.ctx, vrb.port, vrb.gid_index, &vrb.gid) == 0,
                "ibv_query_gid (MPIR_CVAR_PART_VERBS_GID_INDEX)");
    }
    vrb.nqp = clamp(MPIR_CVAR_PART_VERBS_QPS > 0 ? MPIR_CVAR_PART_VERBS_QPS :
                    MPIDI_global.n_vcis, 1, VRB_MAX_QPS);
    /* the depths within 16..16384 and the device's limits (an emulated device's 8192 made
     * a send depth of 16384 fail ibv_create_qp with EINVAL; found 2026-12-01); the
     * completion queue holds both */
    struct ibv_device_attr da;
    errno = 0;
    VRB_TRY(ibv_query_device(vrb.ctx, &da) == 0, "ibv_query_device");
    vrb.tx_budget = clamp(MPIR_CVAR_PART_VERBS_SEND_DEPTH, 16,
                          da.max_qp_wr > 16 && da.max_qp_wr < 16384 ? da.max_qp_wr : 16384);
    vrb.rx_depth = clamp(MPIR_CVAR_PART_VERBS_RECV_DEPTH, 16,
                         da.max_srq_wr > 16 && da.max_srq_wr < 16384 ? da.max_srq_wr : 16384);
    if (da.max_cqe > 32 && vrb.tx_budget + vrb.rx_depth > da.max_cqe) {
        vrb.rx_depth = clamp(da.max_cqe - vrb.tx_budget, 16, vrb.rx_depth);
        vrb.tx_budget = clamp(da.max_cqe - vrb.rx_depth, 16, vrb.tx_budget);
    }

    errno = 0;
    VRB_TRY(vrb.pd = ibv_alloc_pd(vrb.ctx), "ibv_alloc_pd");
    VRB_TRY(vrb.cq = ibv_create_cq(vrb.ctx, vrb.tx_budget + vrb.rx_depth, NULL, NULL, 0),
            "ibv_create_cq");
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = (uint32_t) vrb.rx_depth,.max_sge = 1} };
    VRB_TRY(vrb.srq = ibv_create_srq(vrb.pd, &sa), "ibv_create_srq");
    VRB_TRY(srq_fill() == 0, "ibv_post_srq_recv");
    VRB_TRY(vrb.mbox_mr = ibv_reg_mr(vrb.pd, vrb.mbox, sizeof(vrb.mbox),
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
            "ibv_reg_mr(mailbox)");
    /* async events (a peer's access error) are read without blocking from progress */
    int fl = fcntl(vrb.ctx->async_fd, F_GETFL);
    if (fl >= 0)
        fcntl(vrb.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
    __atomic_store_n(&vrb.state, VRB_UP, __ATOMIC_RELEASE);
    if (MPIR_CVAR_DEBUG_SUMMARY && !vrb.probe)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over verbs device %s port %d "
                "(LID %u, %s, %d queue pairs per peer, send depth %d, receive depth %d)\n",
                MPIR_Process.rank, vrb.dev, vrb.port, vrb.lid,
                vrb.use_gid ? "GID routing" : "LID routing", vrb.nqp, vrb.tx_budget,
                vrb.rx_depth);
    return;

  fail:
    device_close();
    __atomic_store_n(&vrb.state, VRB_FAILED, __ATOMIC_RELEASE);
    if (MPIR_CVAR_DEBUG_SUMMARY && !vrb.probe)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over verbs unavailable (%s): "
                "operations that require it fail, the others use the tag transport\n",
                MPIR_Process.rank, vrb.why);
}

static int device_up(void)
{
    if (__atomic_load_n(&vrb.state, __ATOMIC_ACQUIRE) == VRB_UP)
        return 1;
    VRB_LOCK();
    if (vrb.state == VRB_DOWN)
        device_open();
    int up = vrb.state == VRB_UP;
    VRB_UNLOCK();
    return up;
}

/* For the verbose line of MPIR_CVAR_PART_TRANSPORT=auto (MPIR_CVAR_DEBUG_SUMMARY only):
 * whether a verbs device comes up, in words. The device is opened to find out and stays
 * open until MPI_Finalize, as it would for the first forced operation. */
void MPIDI_PART_verbs_describe(char *buf, size_t len)
{
    VRB_LOCK();
    if (vrb.state == VRB_DOWN) {
        vrb.probe = 1;
        device_open();
        vrb.probe = 0;
    }
    if (vrb.state == VRB_UP)
        snprintf(buf, len, "verbs device %s port %d is up", vrb.dev, vrb.port);
    else
        snprintf(buf, len, "verbs is unavailable: %s", vrb.why);
    VRB_UNLOCK();
}

int MPIDI_PART_verbs_require(void)
{
    if (device_up())
        return MPI_SUCCESS;
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**partverbsup", "**partverbsup %s", vrb.why);
}

void MPIDI_PART_verbs_finalize(void)
{
    int err;
    VRB_LOCK();
    device_close();
    VRB_UNLOCK();
    MPID_Thread_mutex_destroy(&vrb.lock, &err);
    vrb.state = VRB_DOWN;
}

/* ---- connections -------------------------------------------------------------------------- */

/* A new connection's queue pairs, in INIT, not yet published (vrb.lock held); NULL with
 * vrb.why set. */
static vrb_conn_t *conn_create(int sender)
{
    int err;
    vrb_conn_t *c = MPL_calloc(1, sizeof(*c), MPL_MEM_OTHER);
    if (c == NULL) {
        snprintf(vrb.why, sizeof(vrb.why), "out of memory");
        return NULL;
    }
    for (int q = 0; q < VRB_MAX_QPS; q++) {
        MPID_Thread_mutex_create(&c->lane[q].lock, &err);
        MPIR_Assert(err == 0);
    }
    c->sender = sender;
    c->nqp = vrb.nqp;
    c->psn = (uint32_t) (((uintptr_t) c >> 4) * 2654435761u ^ (uint32_t) getpid()) & 0xffffff;
    for (int q = 0; q < c->nqp; q++) {
        struct ibv_qp_init_attr ia = {
            .send_cq = vrb.cq,.recv_cq = vrb.cq,.srq = vrb.srq,
            .cap = {.max_send_wr = (uint32_t) vrb.tx_budget,.max_send_sge = 1},
            .qp_type = IBV_QPT_RC,.sq_sig_all = 0
        };
        struct ibv_qp_attr a = {
            .qp_state = IBV_QPS_INIT,.pkey_index = 0,.port_num = vrb.port,
            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE
        };
        errno = 0;
        c->qp[q] = ibv_create_qp(vrb.pd, &ia);
        if (c->qp[q] == NULL) {
            snprintf(vrb.why, sizeof(vrb.why), "ibv_create_qp: %s", strerror(errno));
            goto fail;
        }
        MPIDI_PART_PVAR_ADD(VERBS_QPS, 1);
        int rc = ibv_modify_qp(c->qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                               IBV_QP_ACCESS_FLAGS);
        if (rc) {
            snprintf(vrb.why, sizeof(vrb.why), "ibv_modify_qp(INIT): %s", strerror(rc));
            goto fail;
        }
    }
    return c;
  fail:
    conn_destroy(c);
    return NULL;
}

/* vrb.lock held: c (keys set) joins the list; progress may walk to it from now on. */
static void conn_publish(vrb_conn_t * c)
{
    c->next = vrb.conns;
    __atomic_store_n(&vrb.conns, c, __ATOMIC_RELEASE);
}

/* Bring c's queue pairs to RTR and RTS against the peer's (verbs lock held); 0 or an errno
 * with vrb.why set. */
static int conn_connect(vrb_conn_t * c, const vrb_side_t * peer)
{
    if (peer->nqp != c->nqp) {
        snprintf(vrb.why, sizeof(vrb.why), "the peer has %d queue pairs per peer, we have %d "
                 "(MPIR_CVAR_PART_VERBS_QPS must be the same everywhere)", peer->nqp, c->nqp);
        return EINVAL;
    }
    for (int q = 0; q < c->nqp; q++) {
        struct ibv_qp_attr a = {
            .qp_state = IBV_QPS_RTR,
            .path_mtu = (enum ibv_mtu) (peer->mtu < vrb.mtu ? peer->mtu : vrb.mtu),
            .dest_qp_num = peer->qpn[q],.rq_psn = peer->psn,
            .max_dest_rd_atomic = 1,.min_rnr_timer = 12,
            .ah_attr = {.dlid = peer->lid,.sl = 0,.src_path_bits = 0,.port_num = vrb.port}
        };
        if (vrb.use_gid) {
            a.ah_attr.is_global = 1;
            memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
            a.ah_attr.grh.sgid_index = (uint8_t) vrb.gid_index;
            a.ah_attr.grh.hop_limit = 1;
        }
        int rc = ibv_modify_qp(c->qp[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                               IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                               IBV_QP_MIN_RNR_TIMER);
        if (rc) {
            snprintf(vrb.why, sizeof(vrb.why), "ibv_modify_qp(RTR): %s", strerror(rc));
            return rc;
        }
        struct ibv_qp_attr s = {
            .qp_state = IBV_QPS_RTS,.timeout = 14,.retry_cnt = 7,.rnr_retry = 7,
            .sq_psn = c->psn,.max_rd_atomic = 1
        };
        rc = ibv_modify_qp(c->qp[q], &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
        if (rc) {
            snprintf(vrb.why, sizeof(vrb.why), "ibv_modify_qp(RTS): %s", strerror(rc));
            return rc;
        }
        c->peer_qpn[q] = peer->qpn[q];
    }
    conn_set(c, CONN_RTS);
    return 0;
}

/* The connection a queue pair number belongs to (no lock: the list and the queue pairs of
 * published connections do not change). */
static vrb_conn_t *conn_of_qpn(uint32_t qpn)
{
    for (vrb_conn_t * c = conn_first(); c; c = c->next)
        for (int q = 0; q < c->nqp; q++)
            if (c->qp[q] && c->qp[q]->qp_num == qpn)
                return c;
    return NULL;
}

/* Our side of c for the handshake (no lock: what it reads is fixed at creation). */
static void describe(const vrb_conn_t * c, vrb_side_t * side)
{
    memset(side, 0, sizeof(*side));
    side->lid = vrb.lid;
    side->mtu = vrb.mtu;
    side->nqp = (uint8_t) c->nqp;
    side->psn = c->psn;
    memcpy(side->gid, vrb.gid.raw, 16);
    for (int q = 0; q < c->nqp; q++)
        side->qpn[q] = c->qp[q]->qp_num;
}

/* ---- operation state ------------------------------------------------------------------------ */

static void verbs_release(MPIDI_PART_op_t * op);
static void verbs_peer_failed(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                              int64_t posted);
static void fail_conn_ops(vrb_conn_t * c, const char *why, int tell);

static int vop_create(MPIDI_PART_op_t * op)
{
    MPIDI_PART_verbsop_t *v = MPL_calloc(1, sizeof(*v), MPL_MEM_OTHER);
    if (v == NULL)
        return 0;
    v->r.tp = &MPIDI_PART_verbs_transport;
    v->r.release = verbs_release;
    v->r.peer_failed = verbs_peer_failed;
    if (!MPIDI_PART_rdma_attach(op, &v->r)) {
        MPL_free(v);
        return 0;
    }
    return 1;
}

static int lane_drop_op(vrb_conn_t * c, int q, MPIDI_PART_op_t * op);

static void verbs_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_verbsop_t *v = VOP(op);
    /* writes of op that still wait in a lane will not be needed: its iteration is over
     * (they failed with it, or a credit waits for a hello that will not come) */
    if (v->conn)
        for (int q = 0; q < v->conn->nqp; q++) {
            int n = lane_drop_op(v->conn, q, op);
            if (n)
                __atomic_sub_fetch(&v->held, n, __ATOMIC_RELEASE);
        }
    /* a broken connection completes iterations before their writes do: the flushed
     * completions, which name v->ctx, come first (a queue pair in error flushes at once),
     * and so do the failed writes another thread is still failing */
    while (__atomic_load_n(&v->held, __ATOMIC_ACQUIRE) > 0) {
        MPIDI_PART_rdma_reads_enter();
        MPIDI_PART_verbs_progress();
        MPIDI_PART_rdma_reads_leave();
    }
    MPIDI_PART_rdma_detach(op);
    if (v->mr) {
        VRB_LOCK();
        ibv_dereg_mr(v->mr);
        VRB_UNLOCK();
        MPIDI_PART_PVAR_SUB(VERBS_MRS, 1);
    }
    MPL_free(v->ctx);
    MPL_free(v);
}

int MPIDI_PART_verbs_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts)
{
    char why[sizeof(vrb.why)];

    if (!device_up())
        return MPIDI_PART_verbs_require();
    if (!MPIDI_PART_rdma_eligible(op) || (uint64_t) op->total_bytes > vrb.max_msg ||
        !vop_create(op))
        return MPI_SUCCESS;     /* the tag transport carries it */
    const void *peer = MPIDIU_comm_rank_to_av(op->comm, op->peer);
    vrb_conn_t *c;

    VRB_LOCK();
    for (c = vrb.conns; c; c = c->next)
        if (c->sender && c->peer == peer && conn_state(c) != CONN_BROKEN)
            break;
    if (c == NULL && (c = conn_create(1)) != NULL) {
        c->peer = peer;
        conn_publish(c);
    }
    if (c == NULL)
        snprintf(why, sizeof(why), "%s", vrb.why);
    VRB_UNLOCK();
    if (c == NULL) {
        MPIDI_PART_rdma_release(op);
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s", why);
    }
    VOP(op)->conn = c;

    vrb_rts_ext_t *x = (vrb_rts_ext_t *) rts->ext;
    MPL_COMPILE_TIME_ASSERT(sizeof(vrb_rts_ext_t) <= MPIDI_PART_EXT_MAX);
    memset(x, 0, sizeof(*x));
    x->magic = VRB_EXT_MAGIC;
    x->slot = op->rdma->slot;
    x->credit_base = op->rdma->credit_base;
    x->mbox_addr = (uint64_t) (uintptr_t) & vrb.mbox[0];
    x->mbox_rkey = vrb.mbox_mr->rkey;
    describe(c, &x->side);
    rts->ext_len = (int32_t) sizeof(*x);
    return MPI_SUCCESS;
}

int MPIDI_PART_verbs_usable(MPIDI_PART_op_t * op)
{
    const vrb_rts_ext_t *x = (const vrb_rts_ext_t *) op->rts_ext;
    if (!MPIDI_PART_rdma_eligible(op) || x == NULL || op->rts_ext_len != sizeof(*x) ||
        x->magic != VRB_EXT_MAGIC || x->slot >= MPIDI_PART_IMM_SLOTS)
        return 0;
    return device_up() && (uint64_t) op->total_bytes <= vrb.max_msg && op->peer_bytes > 0;
}

/* ---- writes ------------------------------------------------------------------------------ */

static int op_error(MPIDI_PART_op_t * op, const char *what, const char *detail)
{
    int first = MPIDI_PART_rdma_error_of(op);  /* the iteration's first error is reported */
    if (first != MPI_SUCCESS)
        return first;
    int err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_OTHER, "**partverbsio", "**partverbsio %s %s %s %d",
                                   vrb.dev, what, detail, op->peer);
    return MPIDI_PART_rdma_error(op, err);
}

/* Post p on queue pair q of c (the lane's lock held, one unit of the budget reserved): 0, an
 * errno of ibv_post_send (ENOMEM: the queue pair is full) or VRB_NOMEM. */
static int post(vrb_conn_t * c, int q, const vrb_pend_t * p)
{
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad;
    uint32_t imm;
    vrb_ctx_t *x = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.send_flags = IBV_SEND_SIGNALED;
    if (p->m == VRB_W_HELLO) {
        /* the sender's queue pairs are connected: a 0-byte send on queue pair 0 */
        x = MPL_calloc(1, sizeof(*x), MPL_MEM_OTHER);
        if (x == NULL)
            return VRB_NOMEM;
        x->kind = CTX_HELLO;
        x->conn = c;
        wr.wr_id = (uint64_t) (uintptr_t) x;
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.num_sge = 0;
        wr.imm_data = 0;
    } else {
        MPIDI_PART_op_t *op = p->op;
        MPIDI_PART_verbsop_t *v = VOP(op);
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        if (p->m >= 0) {
            MPI_Aint off, len;
            MPIDI_PART_rdma_wire(op, p->m, &off, &len, &imm);
            v->ctx[p->m].kind = CTX_DATA;
            v->ctx[p->m].op = op;
            v->ctx[p->m].m = p->m;
            v->ctx[p->m].conn = c;
            sge.addr = (uint64_t) (uintptr_t) (op->buf + off);
            sge.length = (uint32_t) len;
            sge.lkey = v->mr->lkey;
            wr.wr_id = (uint64_t) (uintptr_t) & v->ctx[p->m];
            wr.wr.rdma.remote_addr = v->raddr + (uint64_t) off;
        } else {
            /* a credit's context lives until its completion (the operation may be freed) */
            x = MPL_calloc(1, sizeof(*x), MPL_MEM_OTHER);
            if (x == NULL)
                return VRB_NOMEM;
            x->kind = CTX_CREDIT;
            x->conn = c;
            MPIDI_PART_imm_encode(MPIDI_PART_IMM_CREDIT, v->r.peer_slot,
                                  MPIDI_PART_rdma_credit_low(&v->r, p->iter), &imm);
            sge.addr = (uint64_t) (uintptr_t) & vrb.mbox[1];
            sge.length = sizeof(uint64_t);
            sge.lkey = vrb.mbox_mr->lkey;
            wr.wr_id = (uint64_t) (uintptr_t) x;
            wr.wr.rdma.remote_addr = v->raddr;
        }
        wr.imm_data = htonl(imm);
        wr.wr.rdma.rkey = v->rkey;
    }
    int rc = ibv_post_send(c->qp[q], &wr, &bad);
    if (rc)
        MPL_free(x);
    return rc;
}

/* Lane lock held: append e / take the first waiting write off. */
static void lane_push(vrb_lane_t * l, vrb_pend_t * e)
{
    e->next = NULL;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
    __atomic_store_n(&l->npend, l->npend + 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&vrb.queued, 1, __ATOMIC_RELAXED);
}

static vrb_pend_t *lane_pop(vrb_lane_t * l)
{
    vrb_pend_t *e = l->head;
    l->head = e->next;
    if (l->head == NULL)
        l->tail = NULL;
    __atomic_store_n(&l->npend, l->npend - 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&vrb.queued, 1, __ATOMIC_RELAXED);
    return e;
}

/* Take op's writes out of lane q of c (takes the lane's lock); returns how many. */
static int lane_drop_op(vrb_conn_t * c, int q, MPIDI_PART_op_t * op)
{
    vrb_lane_t *l = &c->lane[q];
    vrb_pend_t *prev = NULL, *drop = NULL;
    int n = 0;

    LANE_LOCK(l);
    for (vrb_pend_t * p = l->head, *next; p; p = next) {
        next = p->next;
        if (p->op != op) {
            prev = p;
            continue;
        }
        if (prev)
            prev->next = next;
        else
            l->head = next;
        if (l->tail == p)
            l->tail = prev;
        p->next = drop;
        drop = p;
        n++;
    }
    if (n) {
        __atomic_store_n(&l->npend, l->npend - n, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&vrb.queued, n, __ATOMIC_RELAXED);
    }
    LANE_UNLOCK(l);
    while (drop) {
        vrb_pend_t *next = drop->next;
        MPL_free(drop);
        drop = next;
    }
    return n;
}

/* Post p on lane q of c at once, or queue a copy to wait there in order: when c is not
 * ready yet, the budget is spent, the queue pair is full or earlier writes wait (takes the
 * lane's lock; no other lock held but possibly vrb.lock). Returns 0 (*posted says which),
 * EPIPE when c is broken (why: its reason), or the post's error. */
static int lane_submit(vrb_conn_t * c, int q, const vrb_pend_t * p, int *posted, char *why,
                       size_t whylen)
{
    vrb_lane_t *l = &c->lane[q];
    int rc = EAGAIN;            /* not tried: wait */

    *posted = 0;
    LANE_LOCK(l);
    int state = conn_state(c);
    if (state == CONN_BROKEN) {
        snprintf(why, whylen, "%s", c->why);
        rc = EPIPE;
    } else if (state == CONN_READY && l->head == NULL && budget_take()) {
        rc = post(c, q, p);
        if (rc)
            budget_give(1);
        else
            *posted = 1;
    }
    if (rc == EAGAIN || rc == ENOMEM) {
        vrb_pend_t *e = MPL_malloc(sizeof(*e), MPL_MEM_OTHER);
        rc = VRB_NOMEM;
        if (e) {
            *e = *p;
            lane_push(l, e);
            if (p->op)
                MPIDI_PART_PVAR_ADD(VERBS_DEFERRED, 1);
            rc = 0;
        }
    }
    LANE_UNLOCK(l);
    return rc;
}

/* Post what waits in lane q of c, in order, while c is ready and the budget lasts; when c
 * is broken nothing more will go: everything waiting fails. The writes that failed go to
 * *failed (takes the lane's lock). */
static void lane_flush(vrb_conn_t * c, int q, vrb_pend_t ** failed)
{
    vrb_lane_t *l = &c->lane[q];

    LANE_LOCK(l);
    int state = conn_state(c);
    while (l->head && state == CONN_READY && budget_take()) {
        int rc = post(c, q, l->head);
        if (rc == ENOMEM) {
            budget_give(1);
            break;
        }
        vrb_pend_t *p = lane_pop(l);
        if (rc == 0) {
            if (p->op && p->m < 0)      /* a posted credit no longer names its operation */
                __atomic_sub_fetch(&VOP(p->op)->held, 1, __ATOMIC_RELEASE);
            MPL_free(p);
        } else {
            budget_give(1);
            p->rc = rc;
            p->next = *failed;
            *failed = p;
        }
    }
    if (state == CONN_BROKEN)
        while (l->head) {
            vrb_pend_t *p = lane_pop(l);
            p->rc = 0;
            p->next = *failed;
            *failed = p;
        }
    LANE_UNLOCK(l);
}

/* Every lane of c (no lock held but possibly vrb.lock). */
static void conn_flush(vrb_conn_t * c, vrb_pend_t ** failed)
{
    for (int q = 0; q < c->nqp; q++)
        lane_flush(c, q, failed);
}

/* A post that failed on a connection that was not broken (ibv_post_send's error, or no
 * memory to queue the write): the write will never go, and the peer would wait for it (or
 * for the credit) for ever, so the connection breaks and the peer is told (a FAIL names the
 * connection: fail_conn_ops). Until 2026-12-01 only this side's iteration failed. No lock
 * held. */
static void fail_list(vrb_pend_t * p);

/* c broke (post_failed): what waits in its lanes fails with it, then its operations, and
 * the peer is told. */
static void broken_by_post(vrb_conn_t * c)
{
    vrb_pend_t *failed = NULL;
    conn_flush(c, &failed);
    fail_list(failed);
    fail_conn_ops(c, c->why, 1);
}

/* later: by progress, after the completion-queue drain (tell_pending) */
static void post_failed_later(vrb_conn_t * c, const char *what, int rc)
{
    char why[128];
    snprintf(why, sizeof(why), "%s: %s", what, vrb_strerror(rc));
    if (conn_break(c, why)) {
        __atomic_store_n(&c->tell, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&vrb.tells, 1, __ATOMIC_RELEASE);
    }
}

static void post_failed(vrb_conn_t * c, const char *what, int rc)
{
    char why[128];
    snprintf(why, sizeof(why), "%s: %s", what, vrb_strerror(rc));
    if (conn_break(c, why))
        broken_by_post(c);
}

/* Progress, no lock and no drain flag held: the connections submit() broke. */
static void tell_pending(void)
{
    if (!__atomic_load_n(&vrb.tells, __ATOMIC_ACQUIRE) ||
        !__atomic_exchange_n(&vrb.tells, 0, __ATOMIC_ACQ_REL))
        return;
    for (vrb_conn_t * c = conn_first(); c; c = c->next)
        if (__atomic_load_n(&c->tell, __ATOMIC_ACQUIRE) &&
            __atomic_exchange_n(&c->tell, 0, __ATOMIC_ACQ_REL))
            broken_by_post(c);
}

/* Writes that will not go (no lock held): each fails the iteration of its operation; a
 * post that failed breaks its connection (post_failed). */
static void fail_list(vrb_pend_t * p)
{
    while (p) {
        vrb_pend_t *next = p->next;
        if (p->op == NULL) {
            if (p->rc)
                post_failed(p->conn, "ibv_post_send(hello)", p->rc);
        } else {
            MPIDI_PART_verbsop_t *v = VOP(p->op);
            const char *what = p->m >= 0 ? "ibv_post_send" : "ibv_post_send(credit)";
            if (p->rc)
                op_error(p->op, what, vrb_strerror(p->rc));
            else
                op_error(p->op, "a write", p->conn->why);
            MPIDI_PART_rdma_failed(p->op, p->m);
            __atomic_sub_fetch(&v->held, 1, __ATOMIC_RELEASE);  /* last use of p->op */
            if (p->rc)
                post_failed(p->conn, what, p->rc);
        }
        MPL_free(p);
        p = next;
    }
}

/* Post or queue one write of op (no lock held): m >= 0 a data write, VRB_W_CREDIT the
 * credit for iteration iter. A write that cannot go fails the iteration, never the call. */
static int submit(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    MPIDI_PART_verbsop_t *v = VOP(op);
    vrb_conn_t *c = v->conn;    /* lives until finalize; v may not outlive a failure below */
    vrb_pend_t one = {.next = NULL,.conn = c,.op = op,.m = m,.iter = iter,.rc = 0 };
    char why[128] = "";
    int posted;

    __atomic_add_fetch(&v->held, 1, __ATOMIC_RELAXED);
    int rc = lane_submit(c, MPIDI_PART_rdma_write_lane(op, m), &one, &posted, why,
                         sizeof(why));
    if (rc == 0) {
        if (posted && m < 0)    /* the credit's context does not name op */
            __atomic_sub_fetch(&v->held, 1, __ATOMIC_RELEASE);
        return MPI_SUCCESS;
    }
    const char *what = m >= 0 ? "ibv_post_send" : "ibv_post_send(credit)";
    op_error(op, what, why[0] ? why : vrb_strerror(rc));
    MPIDI_PART_rdma_failed(op, m);
    __atomic_sub_fetch(&v->held, 1, __ATOMIC_RELEASE); /* last use of v */
    /* the connection was not broken: now it is, and the peer hears. Not from here: this
     * may run inside the completion-queue drain (a credit's delivery sends what it armed),
     * where failing the connection's operations could drop one's last reference, whose
     * release then waits for its writes on the drain this thread holds (found by a review) */
    if (rc != EPIPE)
        post_failed_later(c, what, rc);
    return MPI_SUCCESS;
}

static int verbs_send(MPIDI_PART_op_t * op, int m)
{
    return submit(op, m, 0);    /* part_verbs_writes: counted by progress as they complete */
}

/* Receiver, MPI_Start (or the match, when the user started first): the credit. */
static int verbs_recv_arm(MPIDI_PART_op_t * op)
{
    MPIDI_PART_PVAR_ADD(WIRE_MSGS_RECVD, op->st.nmsgs);
    MPIDI_PART_PVAR_ADD(VERBS_CREDITS, 1);
    return submit(op, VRB_W_CREDIT, op->st.iter);
}

/* ---- completions ------------------------------------------------------------------------- */

/* Every running operation on a broken connection completes its iteration with the
 * connection's error (no lock held): receivers wait for writes that will not come. When we
 * saw the break (tell), the peer hears of it through the handshake, so that its side fails
 * too instead of waiting: through every operation on the connection this side has not
 * freed. A FAIL names a pair, and the peer drops one whose half it freed (its RELEASE or
 * WITHDRAW may still be on its way here); told through one pair only, as until
 * 2026-12-01, the peer's other operations on the connection waited for ever when that
 * pair was half-freed (part/part_verbs_fail_teller). The first FAIL the peer takes breaks
 * its side of the connection and fails all of them; the others find it broken. */
static void fail_conn_ops(vrb_conn_t * c, const char *why, int tell)
{
    enum { FAIL_IT = 1, TELL_IT = 2 };
    struct todo {
        MPIDI_PART_op_t *op;
        int what;
    };
    int n = 0, cap = 16;
    struct todo *ops = MPL_malloc(cap * sizeof(*ops), MPL_MEM_OTHER);
    if (ops == NULL)
        return;
    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t * op = MPIDI_PART_global.all; op; op = op->all_next) {
        if (op->rdma == NULL || op->rdma->tp != &MPIDI_PART_verbs_transport ||
            VOP(op)->conn != c || op->tp != &MPIDI_PART_verbs_transport)
            continue;
        /* every operation on the connection is failed, the idle ones too: their next
         * MPI_Start completes at once (part_core.c), it would wait for a credit or writes
         * on the broken connection forever. Set under the lock that MPI_Start checks it
         * under: a start cannot slip between this and the running test below */
        op_error(op, "the queue pair", why);
        int w = (MPIDI_PART_st_is_running(&op->st) ? FAIL_IT : 0) |
            (tell && !op->freed ? TELL_IT : 0);
        if (w == 0)
            continue;
        if (n == cap) {
            struct todo *more = MPL_realloc(ops, 2 * cap * sizeof(*ops), MPL_MEM_OTHER);
            if (more == NULL)
                break;
            ops = more;
            cap *= 2;
        }
        ops[n].op = op;
        ops[n++].what = w;
        op->refs++;     /* its iteration may complete meanwhile (its last writes reaped by
                         * another thread) and the program free it before it is failed
                         * below (found by a review) */
    }
    MPIDI_PART_UNLOCK();
    char msg[160];
    snprintf(msg, sizeof(msg), "%s (verbs device %s of rank %d)", why, vrb.dev,
             MPIR_Process.rank);
    for (int i = 0; i < n; i++) {
        if (ops[i].what & FAIL_IT)
            MPIDI_PART_rdma_failed(ops[i].op, -1);
        if (ops[i].what & TELL_IT)      /* the connection: any iteration */
            MPIDI_PART_rdma_tell_peer(ops[i].op, 0, msg, -1);
    }
    if (unlikely(MPIR_CVAR_PART_VERBS_DEBUG_FAIL_DELAY_US > 0))
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_VERBS_DEBUG_FAIL_DELAY_US);
    for (int i = 0; i < n; i++) {
        /* the program may have freed it meanwhile: then this reference is the last, and
         * its release reaps the writes still in the completion queue (verbs_release) */
        if (MPIDI_PART_op_release(ops[i].op))
            MPIDI_PART_PVAR_ADD(VERBS_FAIL_LAST_REF, 1);
    }
    MPL_free(ops);
}

/* The peer saw our connection break: so is ours (whatever iteration it was in). What waits
 * in its lanes fails first (it names operations whose iterations end here). */
/* (posted is not needed: a broken queue pair takes no more writes) */
static void verbs_peer_failed(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                              int64_t posted)
{
    vrb_conn_t *c = VOP(op)->conn;
    vrb_pend_t *failed = NULL;
    char msg[160];
    if (c == NULL)
        return;
    snprintf(msg, sizeof(msg), "the peer's side failed: %s", why);
    /* the FAIL comes through every operation on the connection (fail_conn_ops): the first
     * breaks this side, and whoever broke it fails its operations */
    if (!conn_break(c, msg))
        return;
    conn_flush(c, &failed);
    fail_list(failed);
    fail_conn_ops(c, msg, 0);
}

/* Read the peers' access errors (the draining thread): the connections they hit break;
 * those broken here are added to broken[]/why[] (n of them so far, room for cap). */
static int read_async(vrb_conn_t ** broken, char (*why)[64], int n, int cap)
{
    struct ibv_async_event ev;
    while (n < cap && ibv_get_async_event(vrb.ctx, &ev) == 0) {
        if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
            ev.event_type == IBV_EVENT_QP_REQ_ERR) {
            vrb_conn_t *c = conn_of_qpn(ev.element.qp->qp_num);
            const char *s = ibv_event_type_str(ev.event_type);
            if (c && conn_break(c, s)) {
                snprintf(why[n], sizeof(why[0]), "%s", s);
                broken[n++] = c;
            }
        }
        ibv_ack_async_event(&ev);
    }
    return n;
}

int MPIDI_PART_verbs_progress(void)
{
    struct ibv_wc wc[VRB_CQ_BATCH];
    vrb_ctx_t *done[VRB_CQ_BATCH];
    uint32_t imms[VRB_CQ_BATCH];
    vrb_conn_t *hello[VRB_CQ_BATCH];
    vrb_conn_t *broken[VRB_CQ_BATCH + 4];
    char why[VRB_CQ_BATCH + 4][64];
    vrb_pend_t *failed = NULL;
    int ndone = 0, nimm = 0, nhello = 0, nbroken = 0, nsent = 0, n;

    if (__atomic_load_n(&vrb.state, __ATOMIC_ACQUIRE) != VRB_UP)
        return MPI_SUCCESS;
    if (MPL_atomic_cas_int(&vrb.draining, 0, 1) != 0) {
        MPIDI_PART_rdma_reader_busy();
        return MPI_SUCCESS;     /* another thread reads the queue */
    }

    n = ibv_poll_cq(vrb.cq, VRB_CQ_BATCH, wc);
    for (int i = 0; i < n; i++) {
        vrb_ctx_t *x = (vrb_ctx_t *) (uintptr_t) wc[i].wr_id;
        if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & IBV_WC_RECV)) {
            vrb.rx_posted--;
            if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                imms[nimm++] = ntohl(wc[i].imm_data);
            } else {
                /* a hello: the sender's queue pairs are connected, credits may go */
                vrb_conn_t *c = conn_of_qpn(wc[i].qp_num);
                if (c && conn_state(c) == CONN_RTS)
                    hello[nhello++] = c;
            }
            continue;
        }
        if (x == NULL) {        /* a receive that failed (flushed): the SRQ is shared */
            vrb.rx_posted--;
            continue;
        }
        nsent++;
        if (wc[i].status != IBV_WC_SUCCESS) {
            const char *s = ibv_wc_status_str(wc[i].status);
            if (conn_state(x->conn) != CONN_BROKEN && conn_break(x->conn, s)) {
                snprintf(why[nbroken], sizeof(why[0]), "%s", s);
                broken[nbroken++] = x->conn;
            }
            if (x->kind == CTX_DATA)
                op_error(x->op, "a write's completion", s);
        }
        if (x->kind == CTX_DATA) {
            done[ndone++] = x;
        } else {
            MPL_free(x);
        }
    }
    if (nsent)
        budget_give(nsent);     /* their completion-queue entries are free again */
    if ((++vrb.polls & 63) == 0)
        nbroken = read_async(broken, why, nbroken, VRB_CQ_BATCH + 4);
    srq_fill();
    if (nhello) {
        VRB_LOCK();
        for (int i = 0; i < nhello; i++)
            if (conn_state(hello[i]) == CONN_RTS)
                conn_set(hello[i], CONN_READY);
        VRB_UNLOCK();
    }
    /* what waits: credits for a connection that just became ready, writes for which the
     * budget has room again, and the writes of broken connections, which fail */
    if (__atomic_load_n(&vrb.queued, __ATOMIC_RELAXED) > 0)
        for (vrb_conn_t * c = conn_first(); c; c = c->next)
            for (int q = 0; q < c->nqp; q++)
                if (__atomic_load_n(&c->lane[q].npend, __ATOMIC_RELAXED) > 0)
                    lane_flush(c, q, &failed);

    /* local completions: the sender's write is done (its bytes may be reused); the pvar
     * is added to here, once per batch, not once per write on MPI_Pready */
    if (ndone)
        MPIDI_PART_PVAR_ADD(VERBS_WRITES, ndone);
    for (int i = 0; i < ndone; i++) {
        MPIDI_PART_op_t *op = done[i]->op;
        MPIDI_PART_rdma_write_done(op, done[i]->m);
        __atomic_sub_fetch(&VOP(op)->held, 1, __ATOMIC_RELEASE);        /* last use of op */
    }
    int mpi_errno = nimm ? MPIDI_PART_rdma_deliver(imms, nimm) : MPI_SUCCESS;
    MPL_atomic_release_store_int(&vrb.draining, 0);
    /* failures last, after the drain: failing a connection's operations may drop the last
     * reference of one whose writes are still in the completion queue, and its release
     * (verbs_release) reaps them by calling this function, which must then be able to
     * drain (it used to spin here forever, holding the flag it waited for) */
    fail_list(failed);
    for (int i = 0; i < nbroken; i++)
        fail_conn_ops(broken[i], why[i], 1);
    tell_pending();
    return mpi_errno;
}

/* ---- plan -------------------------------------------------------------------------------- */

static int verbs_recv_plan(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    const vrb_rts_ext_t *x = (const vrb_rts_ext_t *) op->rts_ext;
    vrb_plan_ext_t *px = (vrb_plan_ext_t *) plan->ext;
    vrb_conn_t *c;
    char why[sizeof(vrb.why)];
    int rc = 0, n = plan->plan.nmsgs;

    MPL_COMPILE_TIME_ASSERT(sizeof(vrb_plan_ext_t) <= MPIDI_PART_EXT_MAX);
    if (!vop_create(op))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s",
                             "no operation slot or memory left");
    MPIDI_PART_verbsop_t *v = VOP(op);
    v->r.peer_slot = x->slot;
    v->r.credit_base = x->credit_base;
    v->raddr = x->mbox_addr;
    v->rkey = x->mbox_rkey;

    VRB_LOCK();
    for (c = vrb.conns; c; c = c->next)
        if (!c->sender && c->peer_qpn0 == x->side.qpn[0] && c->peer_lid == x->side.lid &&
            memcmp(c->peer_gid, x->side.gid, 16) == 0 && conn_state(c) != CONN_BROKEN)
            break;
    if (c == NULL && (c = conn_create(0)) != NULL) {
        c->peer_qpn0 = x->side.qpn[0];
        c->peer_lid = x->side.lid;
        memcpy(c->peer_gid, x->side.gid, 16);
        conn_publish(c);
        rc = conn_connect(c, &x->side);
        if (rc)
            conn_broken(c, vrb.why);
    }
    if (c && !rc) {
        errno = 0;
        v->mr = ibv_reg_mr(vrb.pd, op->buf, (size_t) op->total_bytes,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (v->mr == NULL)
            snprintf(vrb.why, sizeof(vrb.why), "ibv_reg_mr(receive buffer): %s",
                     strerror(errno));
    }
    snprintf(why, sizeof(why), "%s", vrb.why);
    VRB_UNLOCK();
    MPIR_ERR_CHKANDJUMP1(c == NULL || rc || v->mr == NULL, mpi_errno, MPI_ERR_OTHER,
                         "**partverbsop", "**partverbsop %s", why);
    MPIDI_PART_PVAR_ADD(VERBS_MRS, 1);
    MPIDI_PART_PVAR_ADD(VERBS_OPS, 1);
    v->conn = c;

    memset(px, 0, sizeof(*px));
    px->vci_parts = op->peer_thread_parts > 0 ? op->peer_partitions : op->partitions;
    px->vci_ppt = op->peer_thread_parts > 0 ? op->peer_thread_parts : op->thread_parts;
    /* lanes: as many queue pairs as the tag transport would use VCIs (section 4a) */
    px->nlanes = MPIDI_PART_vci_count(op->comm, n, c->nqp);
    if (px->nlanes > c->nqp)
        px->nlanes = c->nqp;
    mpi_errno = MPIDI_PART_rdma_map(op, n, px->nlanes, px->vci_parts, px->vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);
    px->magic = VRB_EXT_MAGIC;
    px->slot = v->r.slot;
    px->raddr = (uint64_t) (uintptr_t) op->buf;
    px->rkey = v->mr->rkey;
    describe(c, &px->side);
    plan->ext_len = (int32_t) sizeof(*px);

  fn_exit:
    return mpi_errno;
  fn_fail:
    MPIDI_PART_rdma_release(op);
    goto fn_exit;
}

static int verbs_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_verbsop_t *v = VOP(op);
    vrb_plan_ext_t px;
    vrb_pend_t *failed = NULL;
    char why[sizeof(vrb.why)];
    int n = plan->plan.nmsgs, rc = 0, connected = 0;

    MPIR_ERR_CHKANDJUMP2(v == NULL || plan->ext_len != (int) sizeof(px) ||
                         n > (int) MPIDI_PART_IMM_MSGS, mpi_errno, MPI_ERR_OTHER,
                         "**partbadplan", "**partbadplan %d %d", plan->transport, n);
    memcpy(&px, plan->ext, sizeof(px));
    vrb_conn_t *c = v->conn;
    MPIR_ERR_CHKANDJUMP2(px.magic != VRB_EXT_MAGIC || px.slot >= MPIDI_PART_IMM_SLOTS ||
                         px.side.nqp != c->nqp || px.nlanes < 1 || px.nlanes > c->nqp ||
                         px.vci_parts < 1 || px.vci_ppt < 0,
                         mpi_errno, MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                         plan->transport, n);
    v->ctx = MPL_calloc(MPIDI_PART_RDMA_NWRITES(op), sizeof(vrb_ctx_t), MPL_MEM_OTHER);
    v->r.tosend = MPL_malloc(n * sizeof(int32_t), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(v->ctx == NULL || v->r.tosend == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    mpi_errno = MPIDI_PART_rdma_map(op, n, px.nlanes, px.vci_parts, px.vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);
    v->r.peer_slot = px.slot;
    v->raddr = px.raddr;
    v->rkey = px.rkey;

    VRB_LOCK();
    int state = conn_state(c);
    if (state == CONN_INIT) {
        /* the first PLAN on this connection: connect, and say hello on queue pair 0 (it
         * waits there in order if the budget is spent); data may go at once, the
         * receiver's queue pairs were ready before its PLAN left */
        rc = conn_connect(c, &px.side);
        if (rc == 0) {
            vrb_pend_t h = {.next = NULL,.conn = c,.op = NULL,.m = VRB_W_HELLO,.iter = 0,.rc = 0 };
            int posted;
            conn_set(c, CONN_READY);
            connected = 1;
            rc = lane_submit(c, 0, &h, &posted, why, sizeof(why));
            if (rc)
                snprintf(vrb.why, sizeof(vrb.why), "ibv_post_send(hello): %s",
                         vrb_strerror(rc));
        }
        if (rc)
            conn_broken(c, vrb.why);
    } else if (state == CONN_BROKEN) {
        snprintf(vrb.why, sizeof(vrb.why), "%s", c->why);
        rc = EPIPE;
    } else if (memcmp(px.side.qpn, c->peer_qpn, c->nqp * sizeof(uint32_t)) != 0) {
        snprintf(vrb.why, sizeof(vrb.why), "the receiver answered with queue pairs other than "
                 "the ones this connection has");
        rc = EPROTO;
    }
    if (!rc) {
        errno = 0;
        v->mr = ibv_reg_mr(vrb.pd, op->buf, (size_t) op->total_bytes, 0);
        if (v->mr == NULL) {
            rc = errno ? errno : EINVAL;
            snprintf(vrb.why, sizeof(vrb.why), "ibv_reg_mr(send buffer): %s", strerror(rc));
        }
    }
    snprintf(why, sizeof(why), "%s", vrb.why);
    VRB_UNLOCK();
    if (connected) {
        /* nothing of this connection could have been submitted before it connected; what
         * did wait (or fails, if it broke) goes now */
        conn_flush(c, &failed);
        fail_list(failed);
    }
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s",
                         why);
    MPIDI_PART_PVAR_ADD(VERBS_MRS, 1);
    MPIDI_PART_PVAR_ADD(VERBS_OPS, 1);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, engine lock held, at the start of a planned iteration: the credit came, or the
 * connection is broken (the writes then fail at once and the iteration completes with
 * the error instead of waiting for a credit that cannot come). */
static int verbs_always_armed(MPIDI_PART_op_t * op)
{
    return conn_state(VOP(op)->conn) == CONN_BROKEN || MPIDI_PART_rdma_always_armed(op);
}

/* MPI_Parrived found message m not done: read the completion queue, then VCI 0 and the
 * handshake (as part_ofi.c does), so that a thread that only polls MPI_Parrived still moves
 * every other operation. */
static int verbs_progress_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter, int *done)
{
    MPIDI_PART_rdma_reads_enter();
    int mpi_errno = MPIDI_PART_verbs_progress();
    if (mpi_errno == MPI_SUCCESS && !MPIDI_PART_st_msg_is_done_at(&op->st, m, iter))
        mpi_errno = MPIDI_PART_rdma_progress_rest();
    *done = MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
    MPIDI_PART_rdma_reads_leave();
    return mpi_errno;
}

const MPIDI_PART_transport_t MPIDI_PART_verbs_transport = {
    .name = "verbs",
    .id = MPIDI_PART_TRANSPORT_VERBS,
    .recv_plan = verbs_recv_plan,
    .send_plan = verbs_send_plan,
    .always_armed = verbs_always_armed,
    .recv_arm = verbs_recv_arm,
    .send = verbs_send,
    .ctl = MPIDI_PART_rdma_ctl,
    .test_msg = MPIDI_PART_rdma_test_msg,
    .poll = MPIDI_PART_rdma_poll,
    .progress_msg = verbs_progress_msg,
    .iter_reset = MPIDI_PART_rdma_iter_reset,
    .free = verbs_release,
};
