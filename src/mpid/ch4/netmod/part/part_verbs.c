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
        together; 16 to 16384). More wait in order and go as completions return.

    - name        : MPIR_CVAR_PART_VERBS_RECV_DEPTH
      category    : CH4_PART
      type        : int
      default     : 512
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Receive work requests kept posted on the shared receive queue (16 to 16384); each
        incoming write with immediate data consumes one, progress replenishes them.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define VRB_EXT_MAGIC 0x56524231u       /* "VRB1" */
#define VRB_MAX_QPS 8
#define VRB_CQ_BATCH 32

enum { VRB_DOWN = 0, VRB_UP = 1, VRB_FAILED = -1 };
enum { CONN_INIT = 0, CONN_RTS, CONN_READY, CONN_BROKEN };
enum { CTX_DATA = 0, CTX_CREDIT, CTX_HELLO };

/* A write the queue could not take yet, or that waits for the connection. */
typedef struct vrb_pend {
    struct vrb_pend *next;
    MPIDI_PART_op_t *op;
    int32_t m;                  /* the write (part_rdma.h); -1: op's credit for iteration iter */
    uint32_t iter;
} vrb_pend_t;

/* The queue pairs to one peer in one direction. A sender's connection writes data and
 * takes credits; a receiver's takes data and writes credits. */
typedef struct vrb_conn {
    struct vrb_conn *next;
    int sender;
    const void *peer;           /* sender: the peer's address-vector entry */
    uint32_t peer_qpn0;         /* receiver: the sender's first queue pair, its LID, GID */
    uint16_t peer_lid;
    uint8_t peer_gid[16];
    int nqp;
    struct ibv_qp *qp[VRB_MAX_QPS];
    uint32_t peer_qpn[VRB_MAX_QPS];     /* connected to (RTS, READY) */
    uint32_t psn;
    int state;
    char why[128];              /* CONN_BROKEN: the reason */
    vrb_pend_t *pend_head, *pend_tail;
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
    int inflight;               /* sender: data writes posted, not completed (verbs lock) */
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
    int state;
    char why[MPI_MAX_ERROR_STRING];     /* VRB_FAILED: the reason */
    char dev[64];
    MPID_Thread_mutex_t lock;   /* every verbs object below (never taken inside the engine
                                 * lock) */
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
    int tx_budget, tx_out;      /* signaled writes posted, over all queue pairs */
    int rx_depth, rx_posted;
    uint64_t mbox[2];           /* credits land in mbox[0], are written from mbox[1] */
    struct ibv_mr *mbox_mr;
    vrb_conn_t *conns;
    unsigned polls;             /* progress calls (async events are read every 64th) */
} vrb;

#define VRB_LOCK()   do { int err_; MPID_Thread_mutex_lock(&vrb.lock, &err_); } while (0)
#define VRB_UNLOCK() do { int err_; MPID_Thread_mutex_unlock(&vrb.lock, &err_); } while (0)

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
    for (int q = 0; q < c->nqp; q++)
        if (c->qp[q]) {
            ibv_destroy_qp(c->qp[q]);
            MPIDI_PART_PVAR_SUB(VERBS_QPS, 1);
        }
    for (vrb_pend_t * p = c->pend_head; p;) {
        vrb_pend_t *next = p->next;
        MPL_free(p);
        p = next;
    }
    MPL_free(c);
}

static void device_close(void)
{
    while (vrb.conns) {
        vrb_conn_t *c = vrb.conns;
        vrb.conns = c->next;
        conn_destroy(c);
    }
    if (vrb.mbox_mr)
        ibv_dereg_mr(vrb.mbox_mr);
    if (vrb.srq)
        ibv_destroy_srq(vrb.srq);
    if (vrb.cq) {
        /* completions of writes still in flight go with the queue */
        struct ibv_wc wc[VRB_CQ_BATCH];
        int n;
        while ((n = ibv_poll_cq(vrb.cq, VRB_CQ_BATCH, wc)) > 0)
            for (int i = 0; i < n; i++) {
                vrb_ctx_t *x = (vrb_ctx_t *) (uintptr_t) wc[i].wr_id;
                if (x && x->kind != CTX_DATA)
                    MPL_free(x);
            }
        ibv_destroy_cq(vrb.cq);
    }
    if (vrb.pd)
        ibv_dealloc_pd(vrb.pd);
    if (vrb.ctx)
        ibv_close_device(vrb.ctx);
    vrb.mbox_mr = NULL;
    vrb.srq = NULL;
    vrb.cq = NULL;
    vrb.pd = NULL;
    vrb.ctx = NULL;
}

/* Keep the shared receive queue full (verbs lock held). */
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

    vrb.state = VRB_FAILED;
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
    vrb.tx_budget = clamp(MPIR_CVAR_PART_VERBS_SEND_DEPTH, 16, 16384);
    vrb.rx_depth = clamp(MPIR_CVAR_PART_VERBS_RECV_DEPTH, 16, 16384);

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
    if (MPIR_CVAR_DEBUG_SUMMARY)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over verbs device %s port %d "
                "(LID %u, %s, %d queue pairs per peer)\n", MPIR_Process.rank, vrb.dev,
                vrb.port, vrb.lid, vrb.use_gid ? "GID routing" : "LID routing", vrb.nqp);
    return;

  fail:
    device_close();
    vrb.state = VRB_FAILED;
    if (MPIR_CVAR_DEBUG_SUMMARY)
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

/* A new connection's queue pairs, in INIT (verbs lock held); NULL with vrb.why set. */
static vrb_conn_t *conn_create(int sender)
{
    vrb_conn_t *c = MPL_calloc(1, sizeof(*c), MPL_MEM_OTHER);
    if (c == NULL) {
        snprintf(vrb.why, sizeof(vrb.why), "out of memory");
        return NULL;
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
    c->next = vrb.conns;
    vrb.conns = c;
    return c;
  fail:
    conn_destroy(c);
    return NULL;
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
    c->state = CONN_RTS;
    return 0;
}

/* The connection a receive queue pair number belongs to (verbs lock held). */
static vrb_conn_t *conn_of_qpn(uint32_t qpn)
{
    for (vrb_conn_t * c = vrb.conns; c; c = c->next)
        for (int q = 0; q < c->nqp; q++)
            if (c->qp[q] && c->qp[q]->qp_num == qpn)
                return c;
    return NULL;
}

static void conn_broken(vrb_conn_t * c, const char *why)
{
    if (c->state != CONN_BROKEN)
        snprintf(c->why, sizeof(c->why), "%s", why);
    c->state = CONN_BROKEN;
}

/* Our side of c for the handshake. */
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
static void verbs_peer_failed(MPIDI_PART_op_t * op, const char *why);

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

static void verbs_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_verbsop_t *v = VOP(op);
    /* a broken connection completes iterations before their writes do: the flushed
     * completions, which name v->ctx, come first (a queue pair in error flushes at once) */
    while (__atomic_load_n(&v->inflight, __ATOMIC_ACQUIRE) > 0)
        MPIDI_PART_verbs_progress();
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
    if (!device_up())
        return MPIDI_PART_verbs_require();
    if (!MPIDI_PART_rdma_eligible(op) || (uint64_t) op->total_bytes > vrb.max_msg ||
        !vop_create(op))
        return MPI_SUCCESS;     /* the tag transport carries it */
    const void *peer = MPIDIU_comm_rank_to_av(op->comm, op->peer);
    vrb_conn_t *c;

    VRB_LOCK();
    for (c = vrb.conns; c; c = c->next)
        if (c->sender && c->peer == peer && c->state != CONN_BROKEN)
            break;
    if (c == NULL && (c = conn_create(1)) != NULL)
        c->peer = peer;
    VRB_UNLOCK();
    if (c == NULL) {
        MPIDI_PART_rdma_release(op);
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s",
                                    vrb.why);
    }
    VOP(op)->conn = c;

    vrb_rts_ext_t *x = (vrb_rts_ext_t *) rts->ext;
    MPL_COMPILE_TIME_ASSERT(sizeof(vrb_rts_ext_t) <= MPIDI_PART_EXT_MAX);
    memset(x, 0, sizeof(*x));
    x->magic = VRB_EXT_MAGIC;
    x->slot = op->rdma->slot;
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
    int err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_OTHER, "**partverbsio", "**partverbsio %s %s %s %d",
                                   vrb.dev, what, detail, op->peer);
    return MPIDI_PART_rdma_error(op, err);
}

/* Post one write (verbs lock held): 0, or an errno (ENOMEM: the queue is full). */
static int post(vrb_pend_t * p)
{
    MPIDI_PART_op_t *op = p->op;
    MPIDI_PART_verbsop_t *v = VOP(op);
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad;
    uint32_t imm;
    int q = MPIDI_PART_rdma_write_lane(op, p->m);

    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (p->m >= 0) {
        MPI_Aint off, len;
        MPIDI_PART_rdma_wire(op, p->m, &off, &len, &imm);
        v->ctx[p->m].kind = CTX_DATA;
        v->ctx[p->m].op = op;
        v->ctx[p->m].m = p->m;
        v->ctx[p->m].conn = v->conn;
        sge.addr = (uint64_t) (uintptr_t) (op->buf + off);
        sge.length = (uint32_t) len;
        sge.lkey = v->mr->lkey;
        wr.wr_id = (uint64_t) (uintptr_t) & v->ctx[p->m];
        wr.wr.rdma.remote_addr = v->raddr + (uint64_t) off;
    } else {
        /* a credit's context lives until its completion (the operation may be freed) */
        vrb_ctx_t *x = MPL_calloc(1, sizeof(*x), MPL_MEM_OTHER);
        if (x == NULL)
            return ENOMEM + 1000;       /* not "queue full" */
        x->kind = CTX_CREDIT;
        x->conn = v->conn;
        MPIDI_PART_imm_encode(MPIDI_PART_IMM_CREDIT, v->r.peer_slot,
                              p->iter & (MPIDI_PART_IMM_MSGS - 1), &imm);
        sge.addr = (uint64_t) (uintptr_t) & vrb.mbox[1];
        sge.length = sizeof(uint64_t);
        sge.lkey = vrb.mbox_mr->lkey;
        wr.wr_id = (uint64_t) (uintptr_t) x;
        wr.wr.rdma.remote_addr = v->raddr;
    }
    wr.imm_data = htonl(imm);
    wr.wr.rdma.rkey = v->rkey;
    int rc = ibv_post_send(v->conn->qp[q], &wr, &bad);
    if (rc && p->m < 0)
        MPL_free((void *) (uintptr_t) wr.wr_id);
    if (rc == 0) {
        vrb.tx_out++;
        if (p->m >= 0)
            __atomic_add_fetch(&v->inflight, 1, __ATOMIC_RELAXED);
    }
    return rc;
}

/* Whether c can take a write now (verbs lock held): connected both ways, room left. */
static int can_post(const vrb_conn_t * c)
{
    return c->state == CONN_READY && c->pend_head == NULL && vrb.tx_out < vrb.tx_budget;
}

/* Post c's writes that waited (verbs lock held); the failed ones go to failed[]. */
static int flush_pending(vrb_conn_t * c, vrb_pend_t ** failed)
{
    int nfail = 0;
    while (c->pend_head && c->state == CONN_READY && vrb.tx_out < vrb.tx_budget) {
        vrb_pend_t *p = c->pend_head;
        int rc = post(p);
        if (rc == ENOMEM)
            break;
        c->pend_head = p->next;
        if (c->pend_head == NULL)
            c->pend_tail = NULL;
        if (rc == 0) {
            MPL_free(p);
        } else {
            op_error(p->op, "ibv_post_send", strerror(rc > 1000 ? rc - 1000 : rc));
            p->next = *failed;
            *failed = p;
            nfail++;
        }
    }
    if (c->state == CONN_BROKEN)        /* nothing more will go */
        while (c->pend_head) {
            vrb_pend_t *p = c->pend_head;
            c->pend_head = p->next;
            op_error(p->op, "a write", c->why);
            p->next = *failed;
            *failed = p;
            nfail++;
        }
    if (c->pend_head == NULL)
        c->pend_tail = NULL;
    return nfail;
}

static void fail_list(vrb_pend_t * p)
{
    while (p) {
        vrb_pend_t *next = p->next;
        MPIDI_PART_rdma_failed(p->op, p->m);
        MPL_free(p);
        p = next;
    }
}

/* Post or queue one write (no lock held). */
static int submit(MPIDI_PART_op_t * op, int m, uint32_t iter)
{
    vrb_pend_t one = {.next = NULL,.op = op,.m = m,.iter = iter };
    vrb_conn_t *c = VOP(op)->conn;
    int rc = ENOMEM;
    char why[128] = "";

    VRB_LOCK();
    if (c->state == CONN_BROKEN) {
        snprintf(why, sizeof(why), "%s", c->why);
        rc = EPIPE;
    } else if (can_post(c)) {
        rc = post(&one);
    }
    if (rc == ENOMEM) {
        vrb_pend_t *p = MPL_malloc(sizeof(*p), MPL_MEM_OTHER);
        if (p) {
            *p = one;
            if (c->pend_tail)
                c->pend_tail->next = p;
            else
                c->pend_head = p;
            c->pend_tail = p;
            MPIDI_PART_PVAR_ADD(VERBS_DEFERRED, 1);
            rc = 0;
        } else {
            rc = ENOMEM + 1000;
        }
    }
    VRB_UNLOCK();
    if (rc == 0)
        return MPI_SUCCESS;
    op_error(op, m >= 0 ? "ibv_post_send" : "ibv_post_send(credit)",
             why[0] ? why : strerror(rc > 1000 ? rc - 1000 : rc));
    MPIDI_PART_rdma_failed(op, m);
    return MPI_SUCCESS;
}

static int verbs_send(MPIDI_PART_op_t * op, int m)
{
    MPIDI_PART_PVAR_ADD(VERBS_WRITES, 1);
    return submit(op, m, 0);
}

/* Receiver, MPI_Start (or the match, when the user started first): the credit. */
static int verbs_recv_arm(MPIDI_PART_op_t * op)
{
    MPIDI_PART_PVAR_ADD(WIRE_MSGS_RECVD, op->st.nmsgs);
    MPIDI_PART_PVAR_ADD(VERBS_CREDITS, 1);
    return submit(op, -1, op->st.iter);
}

/* ---- completions ------------------------------------------------------------------------- */

/* Every running operation on a broken connection completes its iteration with the
 * connection's error (no lock held): receivers wait for writes that will not come. When we
 * saw the break (tell), the peer hears of it through the handshake, so that its side fails
 * too instead of waiting. */
static void fail_conn_ops(vrb_conn_t * c, const char *why, int tell)
{
    MPIDI_PART_op_t *teller = NULL;
    int n = 0, cap = 16;
    MPIDI_PART_op_t **ops = MPL_malloc(cap * sizeof(*ops), MPL_MEM_OTHER);
    if (ops == NULL)
        return;
    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t * op = MPIDI_PART_global.all; op; op = op->all_next) {
        if (op->rdma == NULL || op->rdma->tp != &MPIDI_PART_verbs_transport ||
            VOP(op)->conn != c || op->tp != &MPIDI_PART_verbs_transport)
            continue;
        if (tell && teller == NULL && !op->freed) {
            teller = op;
            op->refs++;
        }
        if (!MPIDI_PART_st_is_running(&op->st))
            continue;
        if (n == cap) {
            MPIDI_PART_op_t **more = MPL_realloc(ops, 2 * cap * sizeof(*ops), MPL_MEM_OTHER);
            if (more == NULL)
                break;
            ops = more;
            cap *= 2;
        }
        ops[n++] = op;
    }
    MPIDI_PART_UNLOCK();
    for (int i = 0; i < n; i++) {
        op_error(ops[i], "the queue pair", why);
        MPIDI_PART_rdma_failed(ops[i], -1);
    }
    MPL_free(ops);
    if (teller) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s (verbs device %s of rank %d)", why, vrb.dev,
                 MPIR_Process.rank);
        MPIDI_PART_rdma_tell_peer(teller, msg);
        MPIDI_PART_LOCK();
        int last = MPIDI_PART_op_unref(teller);
        MPIDI_PART_UNLOCK();
        if (last)
            MPIDI_PART_op_destroy(teller);
    }
}

/* The peer saw our connection break: so is ours. */
static void verbs_peer_failed(MPIDI_PART_op_t * op, const char *why)
{
    vrb_conn_t *c = VOP(op)->conn;
    char msg[160];
    if (c == NULL)
        return;
    snprintf(msg, sizeof(msg), "the peer's side failed: %s", why);
    VRB_LOCK();
    conn_broken(c, msg);
    VRB_UNLOCK();
    fail_conn_ops(c, msg, 0);
}

/* Read the peers' access errors (verbs lock held): the connection they hit is broken. */
static vrb_conn_t *read_async(void)
{
    struct ibv_async_event ev;
    vrb_conn_t *hit = NULL;
    while (ibv_get_async_event(vrb.ctx, &ev) == 0) {
        if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
            ev.event_type == IBV_EVENT_QP_REQ_ERR) {
            vrb_conn_t *c = conn_of_qpn(ev.element.qp->qp_num);
            if (c && c->state != CONN_BROKEN) {
                conn_broken(c, ibv_event_type_str(ev.event_type));
                hit = c;
            }
        }
        ibv_ack_async_event(&ev);
    }
    return hit;
}

int MPIDI_PART_verbs_progress(void)
{
    struct ibv_wc wc[VRB_CQ_BATCH];
    vrb_ctx_t *done[VRB_CQ_BATCH];
    uint32_t imms[VRB_CQ_BATCH];
    vrb_conn_t *broken[VRB_CQ_BATCH + 1];
    char why[VRB_CQ_BATCH + 1][64];
    vrb_pend_t *failed = NULL;
    int ndone = 0, nimm = 0, nbroken = 0, n;

    if (__atomic_load_n(&vrb.state, __ATOMIC_ACQUIRE) != VRB_UP)
        return MPI_SUCCESS;
    if (MPL_atomic_cas_int(&vrb.draining, 0, 1) != 0)
        return MPI_SUCCESS;     /* another thread reads the queue */

    VRB_LOCK();
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
                if (c && c->state == CONN_RTS)
                    c->state = CONN_READY;
            }
            continue;
        }
        if (x == NULL) {        /* a receive that failed (flushed): the SRQ is shared */
            vrb.rx_posted--;
            continue;
        }
        vrb.tx_out--;
        if (wc[i].status != IBV_WC_SUCCESS) {
            const char *s = ibv_wc_status_str(wc[i].status);
            if (x->conn->state != CONN_BROKEN) {
                conn_broken(x->conn, s);
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
    if ((++vrb.polls & 63) == 0 && nbroken < VRB_CQ_BATCH) {
        vrb_conn_t *c = read_async();
        if (c) {
            snprintf(why[nbroken], sizeof(why[0]), "%s", c->why);
            broken[nbroken++] = c;
        }
    }
    srq_fill();
    for (vrb_conn_t * c = vrb.conns; c; c = c->next)
        if (c->pend_head)
            flush_pending(c, &failed);
    VRB_UNLOCK();

    fail_list(failed);
    /* local completions: the sender's write is done (its bytes may be reused) */
    for (int i = 0; i < ndone; i++) {
        MPIDI_PART_op_t *op = done[i]->op;
        MPIDI_PART_rdma_write_done(op, done[i]->m);
        __atomic_sub_fetch(&VOP(op)->inflight, 1, __ATOMIC_RELEASE);    /* last use of op */
    }
    for (int i = 0; i < nbroken; i++)
        fail_conn_ops(broken[i], why[i], 1);
    int mpi_errno = nimm ? MPIDI_PART_rdma_deliver(imms, nimm) : MPI_SUCCESS;
    MPL_atomic_release_store_int(&vrb.draining, 0);
    return mpi_errno;
}

/* ---- plan -------------------------------------------------------------------------------- */

static int verbs_recv_plan(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    const vrb_rts_ext_t *x = (const vrb_rts_ext_t *) op->rts_ext;
    vrb_plan_ext_t *px = (vrb_plan_ext_t *) plan->ext;
    vrb_conn_t *c;
    int rc = 0, n = plan->plan.nmsgs;

    MPL_COMPILE_TIME_ASSERT(sizeof(vrb_plan_ext_t) <= MPIDI_PART_EXT_MAX);
    if (!vop_create(op))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s",
                             "no operation slot or memory left");
    MPIDI_PART_verbsop_t *v = VOP(op);
    v->r.peer_slot = x->slot;
    v->raddr = x->mbox_addr;
    v->rkey = x->mbox_rkey;

    VRB_LOCK();
    for (c = vrb.conns; c; c = c->next)
        if (!c->sender && c->peer_qpn0 == x->side.qpn[0] && c->peer_lid == x->side.lid &&
            memcmp(c->peer_gid, x->side.gid, 16) == 0 && c->state != CONN_BROKEN)
            break;
    if (c == NULL && (c = conn_create(0)) != NULL) {
        c->peer_qpn0 = x->side.qpn[0];
        c->peer_lid = x->side.lid;
        memcpy(c->peer_gid, x->side.gid, 16);
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
    VRB_UNLOCK();
    MPIR_ERR_CHKANDJUMP1(c == NULL || rc || v->mr == NULL, mpi_errno, MPI_ERR_OTHER,
                         "**partverbsop", "**partverbsop %s", vrb.why);
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

/* Say hello on a newly connected sender's first queue pair (verbs lock held). */
static int hello(vrb_conn_t * c)
{
    struct ibv_send_wr wr, *bad;
    vrb_ctx_t *x = MPL_calloc(1, sizeof(*x), MPL_MEM_OTHER);
    if (x == NULL)
        return ENOMEM;
    x->kind = CTX_HELLO;
    x->conn = c;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t) (uintptr_t) x;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.num_sge = 0;
    wr.imm_data = 0;
    int rc = ibv_post_send(c->qp[0], &wr, &bad);
    if (rc)
        MPL_free(x);
    else
        vrb.tx_out++;
    return rc;
}

static int verbs_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_verbsop_t *v = VOP(op);
    vrb_plan_ext_t px;
    vrb_pend_t *failed = NULL;
    int n = plan->plan.nmsgs, rc = 0;

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
    if (c->state == CONN_INIT) {
        rc = conn_connect(c, &px.side);
        if (rc == 0 && (rc = hello(c)) != 0)
            snprintf(vrb.why, sizeof(vrb.why), "ibv_post_send(hello): %s", strerror(rc));
        if (rc)
            conn_broken(c, vrb.why);
        else
            c->state = CONN_READY;
        flush_pending(c, &failed);
    } else if (c->state == CONN_BROKEN) {
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
    VRB_UNLOCK();
    fail_list(failed);
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partverbsop", "**partverbsop %s",
                         vrb.why);
    MPIDI_PART_PVAR_ADD(VERBS_MRS, 1);
    MPIDI_PART_PVAR_ADD(VERBS_OPS, 1);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, lock held, at the start of a planned iteration: the credit came, or the
 * connection is broken (the writes then fail at once and the iteration completes with
 * the error instead of waiting for a credit that cannot come). */
static int verbs_always_armed(MPIDI_PART_op_t * op)
{
    return __atomic_load_n(&VOP(op)->conn->state, __ATOMIC_RELAXED) == CONN_BROKEN ||
        MPIDI_PART_rdma_always_armed(op);
}

/* MPI_Parrived found message m not done: read the completion queue, then VCI 0 and the
 * handshake (as part_ofi.c does), so that a thread that only polls MPI_Parrived still moves
 * every other operation. */
static int verbs_progress_msg(MPIDI_PART_op_t * op, int m)
{
    int mpi_errno = MPIDI_PART_verbs_progress();
    if (mpi_errno || MPIDI_PART_st_msg_is_done(&op->st, m))
        return mpi_errno;
    return MPIDI_PART_rdma_progress_rest();
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
