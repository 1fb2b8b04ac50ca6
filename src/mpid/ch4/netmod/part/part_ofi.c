/*
 * part_ofi.c: the RDMA transport over libfabric. The sender writes each wire message
 * straight into the receive buffer with one fi_writedata whose remote CQ data is the
 * 32-bit immediate of part_imm.h (operation slot + message index); the receiver marks that
 * message done when the completion arrives. Per iteration the receiver's MPI_Start gives
 * the sender a credit (an 8-byte write into the sender's mailbox whose immediate names the
 * sender's slot and the iteration), so nothing lands before the receiver has started.
 * One fabric, domain, endpoint and completion queue per process, opened lazily on first
 * use; completions are read from MPICH's progress (the engine's hook, MPI_Parrived). The
 * protocol is in README ("RDMA transport").
 */
#include "part_impl.h"
#include "part_imm.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_OFI_PROVIDER
      category    : CH4_PART
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The libfabric provider of the partitioned engine's RDMA transport, as fi_info names
        it ("tcp;ofi_rxm", "shm", "verbs;ofi_rxm", ...). Empty: the first provider libfabric
        offers with RDMA writes and remote CQ data. Read when the transport first opens its
        fabric; every process must use the same provider.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define OFI_VERSION FI_VERSION(1, 11)
#define OFI_MAX_ADDR 200        /* endpoint name bytes carried in an RTS or PLAN */
#define OFI_EXT_MAGIC 0x4f464931u       /* "OFI1" */
#define OFI_CQ_BATCH 32

/* One message's completion context (the provider's fi_context2 must come first). */
typedef struct {
    struct fi_context2 fctx;
    MPIDI_PART_op_t *op;        /* NULL: a credit */
    int32_t m;
} ofi_wctx_t;

typedef struct MPIDI_PART_ofiop {
    uint32_t slot;              /* ours: the peer's immediates name it */
    uint32_t peer_slot;
    fi_addr_t peer_fa;          /* the peer's endpoint */
    struct fid_mr *mr;          /* receiver: the receive buffer; sender: the send buffer when
                                 * the provider needs local registration */
    void *desc;
    uint64_t raddr, rkey;       /* sender: the receive buffer; receiver: the sender's mailbox */
    uint32_t credited;          /* sender: iterations the receiver has started (engine lock) */
    ofi_wctx_t *wctx;           /* sender: per message */
    int32_t *tosend;            /* sender: the messages a credit releases (engine lock) */
} MPIDI_PART_ofiop_t;

/* RTS ext: the sender's side */
typedef struct {
    uint32_t magic;
    uint32_t fabric_id;
    uint32_t slot;
    uint32_t addrlen;
    uint64_t mbox_addr, mbox_key;
    uint8_t addr[OFI_MAX_ADDR];
} ofi_rts_ext_t;

/* PLAN ext: the receiver's side */
typedef struct {
    uint32_t magic;
    uint32_t slot;
    uint64_t raddr, rkey;
    uint32_t addrlen;
    uint32_t pad;
    uint8_t addr[OFI_MAX_ADDR];
} ofi_plan_ext_t;

/* A write the endpoint could not take yet (its queue was full). */
typedef struct ofi_pend {
    struct ofi_pend *next;
    MPIDI_PART_op_t *op;
    int32_t m;                  /* -1: op's credit for iteration iter */
    uint32_t iter;
} ofi_pend_t;

typedef struct {
    uint8_t addr[OFI_MAX_ADDR];
    size_t len;
    fi_addr_t fa;
} ofi_peer_t;

enum { OFI_DOWN = 0, OFI_UP = 1, OFI_FAILED = -1 };

static struct {
    int state;
    char why[MPI_MAX_ERROR_STRING];     /* OFI_FAILED: the reason */
    char prov[64];
    MPID_Thread_mutex_t lock;   /* endpoint, CQ, deferred writes, peers (never with the
                                 * engine lock held inside it) */
    MPL_atomic_int_t draining;  /* one thread reads the CQ at a time */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    uint8_t addr[OFI_MAX_ADDR];
    size_t addrlen;
    uint32_t fabric_id;
    int mr_local, mr_virt, mr_prov_key, mr_endpoint;
    uint64_t next_key;
    size_t tx_size, tx_out;
    ofi_pend_t *pend_head, *pend_tail;
    ofi_peer_t *peers;
    int npeers, peers_cap;
    /* the credit mailbox: credits land in mbox[0..7], are sent from mbox[8..15] */
    uint64_t mbox[2];
    struct fid_mr *mbox_mr;
    void *mbox_desc;
    uint64_t mbox_key;
    /* operation slots (engine lock): immediates name operations by slot */
    MPIDI_PART_op_t **slots;
    uint32_t nslots;            /* allocated */
    uint32_t *freeq;            /* freed slots, reused oldest first */
    uint32_t fq_head, fq_count;
    uint32_t next_slot;
    int live;                   /* operations with transport state (engine lock) */
} ofi;

#define OFI_LOCK()   do { int err_; MPID_Thread_mutex_lock(&ofi.lock, &err_); } while (0)
#define OFI_UNLOCK() do { int err_; MPID_Thread_mutex_unlock(&ofi.lock, &err_); } while (0)

/* ---- fabric ----------------------------------------------------------------------------- */

void MPIDI_PART_ofi_init(void)
{
    int err;
    memset(&ofi, 0, sizeof(ofi));
    MPID_Thread_mutex_create(&ofi.lock, &err);
    MPIR_Assert(err == 0);
    MPL_atomic_relaxed_store_int(&ofi.draining, 0);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t) * s) * 16777619u;
    return h;
}

static void fabric_close(void)
{
    if (ofi.mbox_mr)
        fi_close(&ofi.mbox_mr->fid);
    if (ofi.ep)
        fi_close(&ofi.ep->fid);
    if (ofi.av)
        fi_close(&ofi.av->fid);
    if (ofi.cq)
        fi_close(&ofi.cq->fid);
    if (ofi.domain)
        fi_close(&ofi.domain->fid);
    if (ofi.fabric)
        fi_close(&ofi.fabric->fid);
    if (ofi.info)
        fi_freeinfo(ofi.info);
    ofi.mbox_mr = NULL;
    ofi.ep = NULL;
    ofi.av = NULL;
    ofi.cq = NULL;
    ofi.domain = NULL;
    ofi.fabric = NULL;
    ofi.info = NULL;
}

static int mr_register(void *buf, size_t len, uint64_t access, struct fid_mr **mr,
                       void **desc, uint64_t * key, uint64_t * raddr)
{
    uint64_t want = ofi.mr_prov_key ? 0 : ofi.next_key++;
    int rc = fi_mr_reg(ofi.domain, buf, len, access, 0, want, 0, mr, NULL);
    if (rc)
        return rc;
    if (ofi.mr_endpoint) {
        rc = fi_mr_bind(*mr, &ofi.ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(*mr);
        if (rc) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
            return rc;
        }
    }
    *desc = fi_mr_desc(*mr);
    *key = fi_mr_key(*mr);
    *raddr = ofi.mr_virt ? (uint64_t) (uintptr_t) buf : 0;
    return 0;
}

#define OFI_TRY(call_, what_) do {                                              \
        int rc_ = (int) (call_);                                               \
        if (rc_) {                                                             \
            snprintf(ofi.why, sizeof(ofi.why), "%s: %s", what_, fi_strerror(-rc_)); \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* Open the fabric (ofi lock held). One verbose line says what happened. */
static void fabric_open(void)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL, *fi;
    const char *want = MPIR_CVAR_PART_OFI_PROVIDER;
    uint64_t dummy;

    ofi.state = OFI_FAILED;
    if (hints == NULL) {
        snprintf(ofi.why, sizeof(ofi.why), "fi_allocinfo: out of memory");
        goto fail;
    }
    hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
        FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;   /* we serialize (ofi.lock) */
    if (want && want[0])
        hints->fabric_attr->prov_name = MPL_strdup(want);
    int rc = fi_getinfo(OFI_VERSION, NULL, NULL, 0, hints, &info);
    if (rc) {
        snprintf(ofi.why, sizeof(ofi.why), "provider '%s' offers no RDMA endpoint: "
                 "fi_getinfo: %s", want && want[0] ? want : "(any)", fi_strerror(-rc));
        goto fail;
    }
    for (fi = info; fi; fi = fi->next)
        if (fi->domain_attr->cq_data_size >= 4)
            break;
    if (fi == NULL) {
        snprintf(ofi.why, sizeof(ofi.why), "provider '%s' lacks remote CQ data "
                 "(cq_data_size < 4)", info->fabric_attr->prov_name);
        goto fail;
    }
    ofi.info = fi_dupinfo(fi);
    snprintf(ofi.prov, sizeof(ofi.prov), "%s", fi->fabric_attr->prov_name);
    uint64_t mrm = fi->domain_attr->mr_mode;
    ofi.mr_local = !!(mrm & FI_MR_LOCAL);
    ofi.mr_virt = !!(mrm & FI_MR_VIRT_ADDR);
    ofi.mr_prov_key = !!(mrm & FI_MR_PROV_KEY);
    ofi.mr_endpoint = !!(mrm & FI_MR_ENDPOINT);
    ofi.next_key = 1;
    ofi.tx_size = fi->tx_attr->size ? fi->tx_attr->size : 64;
    ofi.fabric_id = hash_str(ofi.prov) ^ (uint32_t) fi->addr_format;

    OFI_TRY(fi_fabric(ofi.info->fabric_attr, &ofi.fabric, NULL), "fi_fabric");
    OFI_TRY(fi_domain(ofi.fabric, ofi.info, &ofi.domain, NULL), "fi_domain");
    struct fi_cq_attr cq_attr = { 0 };
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.size = ofi.tx_size * 4;
    OFI_TRY(fi_cq_open(ofi.domain, &cq_attr, &ofi.cq, NULL), "fi_cq_open");
    struct fi_av_attr av_attr = { 0 };
    av_attr.type = FI_AV_UNSPEC;
    OFI_TRY(fi_av_open(ofi.domain, &av_attr, &ofi.av, NULL), "fi_av_open");
    OFI_TRY(fi_endpoint(ofi.domain, ofi.info, &ofi.ep, NULL), "fi_endpoint");
    OFI_TRY(fi_ep_bind(ofi.ep, &ofi.av->fid, 0), "fi_ep_bind(av)");
    OFI_TRY(fi_ep_bind(ofi.ep, &ofi.cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    OFI_TRY(fi_enable(ofi.ep), "fi_enable");
    ofi.addrlen = sizeof(ofi.addr);
    rc = fi_getname(&ofi.ep->fid, ofi.addr, &ofi.addrlen);
    if (rc) {
        snprintf(ofi.why, sizeof(ofi.why), "fi_getname: %s (an endpoint name longer than "
                 "%d bytes does not fit the handshake)", fi_strerror(-rc), OFI_MAX_ADDR);
        goto fail;
    }
    OFI_TRY(mr_register(ofi.mbox, sizeof(ofi.mbox), FI_WRITE | FI_REMOTE_WRITE, &ofi.mbox_mr,
                        &ofi.mbox_desc, &ofi.mbox_key, &dummy), "fi_mr_reg(mailbox)");
    __atomic_store_n(&ofi.state, OFI_UP, __ATOMIC_RELEASE);
    if (MPIR_CVAR_DEBUG_SUMMARY)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over libfabric provider "
                "'%s' (fabric %s)\n", MPIR_Process.rank, ofi.prov, ofi.info->fabric_attr->name);

  fn_exit:
    if (info)
        fi_freeinfo(info);
    if (hints)
        fi_freeinfo(hints);
    return;
  fail:
    fabric_close();
    ofi.state = OFI_FAILED;
    if (MPIR_CVAR_DEBUG_SUMMARY)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over libfabric unavailable "
                "(%s); operations use the tag transport\n", MPIR_Process.rank, ofi.why);
    goto fn_exit;
}

/* Bring the fabric up once; 1 when it is up. */
static int fabric_up(void)
{
    if (__atomic_load_n(&ofi.state, __ATOMIC_ACQUIRE) == OFI_UP)
        return 1;
    OFI_LOCK();
    if (ofi.state == OFI_DOWN)
        fabric_open();
    int up = ofi.state == OFI_UP;
    OFI_UNLOCK();
    return up;
}

static int fabric_error(void)
{
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**partofiup", "**partofiup %s", ofi.why);
}

int MPIDI_PART_ofi_require(void)
{
    return fabric_up() ? MPI_SUCCESS : fabric_error();
}

void MPIDI_PART_ofi_finalize(void)
{
    int err;
    ofi_pend_t *p = ofi.pend_head;
    while (p) {
        ofi_pend_t *next = p->next;
        MPL_free(p);
        p = next;
    }
    fabric_close();
    MPL_free(ofi.peers);
    MPL_free(ofi.slots);
    MPL_free(ofi.freeq);
    MPID_Thread_mutex_destroy(&ofi.lock, &err);
    ofi.state = OFI_DOWN;
}

/* The AV address of a peer's endpoint name (ofi lock held); FI_ADDR_NOTAVAIL on failure. */
static fi_addr_t peer_addr(const uint8_t * addr, size_t len)
{
    for (int i = 0; i < ofi.npeers; i++)
        if (ofi.peers[i].len == len && memcmp(ofi.peers[i].addr, addr, len) == 0)
            return ofi.peers[i].fa;
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    if (fi_av_insert(ofi.av, addr, 1, &fa, 0, NULL) != 1)
        return FI_ADDR_NOTAVAIL;
    if (ofi.npeers == ofi.peers_cap) {
        int cap = ofi.peers_cap ? 2 * ofi.peers_cap : 16;
        ofi_peer_t *p = MPL_realloc(ofi.peers, cap * sizeof(*p), MPL_MEM_OTHER);
        if (p == NULL)
            return fa;  /* works, just not cached */
        ofi.peers = p;
        ofi.peers_cap = cap;
    }
    memcpy(ofi.peers[ofi.npeers].addr, addr, len);
    ofi.peers[ofi.npeers].len = len;
    ofi.peers[ofi.npeers].fa = fa;
    ofi.npeers++;
    return fa;
}

/* ---- operation state ------------------------------------------------------------------- */

/* Engine lock held: a slot for op (0 when none is left). */
static int slot_get(MPIDI_PART_op_t * op, uint32_t * slot)
{
    if (ofi.fq_count > 0) {
        *slot = ofi.freeq[ofi.fq_head];
        ofi.fq_head = (ofi.fq_head + 1) % MPIDI_PART_IMM_SLOTS;
        ofi.fq_count--;
    } else if (ofi.next_slot < MPIDI_PART_IMM_SLOTS) {
        if (ofi.next_slot == ofi.nslots) {
            uint32_t n = ofi.nslots ? 2 * ofi.nslots : 64;
            MPIDI_PART_op_t **s = MPL_realloc(ofi.slots, n * sizeof(*s), MPL_MEM_OTHER);
            if (s == NULL)
                return 0;
            ofi.slots = s;
            ofi.nslots = n;
        }
        if (ofi.freeq == NULL) {
            ofi.freeq = MPL_malloc(MPIDI_PART_IMM_SLOTS * sizeof(uint32_t), MPL_MEM_OTHER);
            if (ofi.freeq == NULL)
                return 0;
        }
        *slot = ofi.next_slot++;
    } else {
        return 0;
    }
    ofi.slots[*slot] = op;
    return 1;
}

/* Engine lock held. */
static void slot_put(uint32_t slot)
{
    ofi.slots[slot] = NULL;
    ofi.freeq[(ofi.fq_head + ofi.fq_count) % MPIDI_PART_IMM_SLOTS] = slot;
    ofi.fq_count++;
}

/* New transport state for op, with a slot (no lock held). */
static int ofiop_create(MPIDI_PART_op_t * op)
{
    MPIDI_PART_ofiop_t *o = MPL_calloc(1, sizeof(*o), MPL_MEM_OTHER);
    if (o == NULL)
        return 0;
    o->peer_fa = FI_ADDR_NOTAVAIL;
    MPIDI_PART_LOCK();
    int ok = slot_get(op, &o->slot);
    if (ok) {
        op->ofi = o;
        ofi.live++;
        MPIDI_PART_set_work(MPIDI_PART_WORK_OFI);
    }
    MPIDI_PART_UNLOCK();
    if (!ok)
        MPL_free(o);
    return ok;
}

void MPIDI_PART_ofi_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_ofiop_t *o = op->ofi;
    if (o == NULL)
        return;
    MPIDI_PART_LOCK();
    slot_put(o->slot);
    op->ofi = NULL;
    ofi.live--;
    MPIDI_PART_clear_work(MPIDI_PART_WORK_OFI, ofi.live > 0);
    MPIDI_PART_UNLOCK();
    if (o->mr) {
        OFI_LOCK();
        fi_close(&o->mr->fid);
        OFI_UNLOCK();
        MPIDI_PART_PVAR_SUB(OFI_MRS, 1);
    }
    MPL_free(o->wctx);
    MPL_free(o->tosend);
    MPL_free(o);
}

/* Whether op's own buffer can be written or read directly: one contiguous run of bytes.
 * Empty transfers and PROC_NULL stay on the tag transport (nothing would be written). */
static int op_eligible(MPIDI_PART_op_t * op)
{
    return op->contig && op->total_bytes > 0 && op->peer != MPI_PROC_NULL;
}

int MPIDI_PART_ofi_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts)
{
    int forced = (op->choice == MPIDI_PART_CHOICE_OFI);
    if (!forced)
        return MPI_SUCCESS;     /* the auto rule (README) keeps the tag transport */
    if (!fabric_up())
        return fabric_error();
    if (!op_eligible(op) || !ofiop_create(op))
        return MPI_SUCCESS;     /* the tag transport carries it */
    ofi_rts_ext_t *x = (ofi_rts_ext_t *) rts->ext;
    MPL_COMPILE_TIME_ASSERT(sizeof(ofi_rts_ext_t) <= MPIDI_PART_EXT_MAX);
    x->magic = OFI_EXT_MAGIC;
    x->fabric_id = ofi.fabric_id;
    x->slot = op->ofi->slot;
    x->mbox_addr = ofi.mr_virt ? (uint64_t) (uintptr_t) & ofi.mbox[0] : 0;
    x->mbox_key = ofi.mbox_key;
    x->addrlen = (uint32_t) ofi.addrlen;
    memcpy(x->addr, ofi.addr, ofi.addrlen);
    rts->ext_len = (int32_t) (offsetof(ofi_rts_ext_t, addr) + ofi.addrlen);
    return MPI_SUCCESS;
}

int MPIDI_PART_ofi_usable(MPIDI_PART_op_t * op)
{
    const ofi_rts_ext_t *x = (const ofi_rts_ext_t *) op->rts_ext;
    if (op->choice != MPIDI_PART_CHOICE_OFI || !op_eligible(op) || x == NULL ||
        op->rts_ext_len < (int) offsetof(ofi_rts_ext_t, addr) || x->magic != OFI_EXT_MAGIC)
        return 0;
    if (!fabric_up() || x->fabric_id != ofi.fabric_id || x->addrlen > OFI_MAX_ADDR ||
        x->slot >= MPIDI_PART_IMM_SLOTS ||
        op->rts_ext_len < (int) (offsetof(ofi_rts_ext_t, addr) + x->addrlen))
        return 0;
    /* the receiver writes the sender's side of the plan into the front of its buffer */
    return op->peer_bytes > 0;
}

/* ---- writes ------------------------------------------------------------------------------ */

static int op_error(MPIDI_PART_op_t * op, const char *what, const char *detail)
{
    int err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_OTHER, "**partofiio", "**partofiio %s %s %s %d",
                                   ofi.prov, what, detail, op->peer);
    int none = MPI_SUCCESS;
    __atomic_compare_exchange_n(&op->error, &none, err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return err;
}

/* Post one write (ofi lock held): -FI_EAGAIN when the endpoint is full. */
static ssize_t post_data(MPIDI_PART_op_t * op, int m)
{
    MPIDI_PART_ofiop_t *o = op->ofi;
    int32_t first, nparts;
    uint32_t imm;

    MPIDI_PART_plan_msg_range(&op->st.plan, op->partitions, m, &first, &nparts);
    MPI_Aint off = first * op->part_extent;
    MPI_Aint len = nparts * op->part_extent;
    if (off + len > op->total_bytes)
        len = op->total_bytes - off;
    MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, o->peer_slot, (uint32_t) m, &imm);
    o->wctx[m].op = op;
    o->wctx[m].m = m;
    return fi_writedata(ofi.ep, op->buf + off, (size_t) len, o->desc, imm, o->peer_fa,
                        o->raddr + (uint64_t) off, o->rkey, &o->wctx[m].fctx);
}

/* A credit's context lives until its completion is read (the receiver may have freed
 * its operation by then). */
static ssize_t post_credit(MPIDI_PART_op_t * op, uint32_t iter)
{
    MPIDI_PART_ofiop_t *o = op->ofi;
    uint32_t imm;
    ofi_wctx_t *c = MPL_calloc(1, sizeof(*c), MPL_MEM_OTHER);
    if (c == NULL)
        return -FI_ENOMEM;
    c->m = -1;
    MPIDI_PART_imm_encode(MPIDI_PART_IMM_CREDIT, o->peer_slot,
                          iter & (MPIDI_PART_IMM_MSGS - 1), &imm);
    ssize_t rc = fi_writedata(ofi.ep, &ofi.mbox[1], sizeof(uint64_t), ofi.mbox_desc, imm,
                              o->peer_fa, o->raddr, o->rkey, &c->fctx);
    if (rc)
        MPL_free(c);
    return rc;
}

static ssize_t post(ofi_pend_t * p)
{
    return p->m >= 0 ? post_data(p->op, p->m) : post_credit(p->op, p->iter);
}

/* Post or queue one write (no lock held). A queue that is full defers; an error fails
 * the operation's iteration (its request completes with the error). */
static int submit(MPIDI_PART_op_t * op, int m, uint32_t iter)
{
    ofi_pend_t one = {.next = NULL,.op = op,.m = m,.iter = iter };
    ssize_t rc = -FI_EAGAIN;

    OFI_LOCK();
    if (ofi.pend_head == NULL && ofi.tx_out < ofi.tx_size)
        rc = post(&one);
    if (rc == 0) {
        ofi.tx_out++;
    } else if (rc == -FI_EAGAIN) {
        ofi_pend_t *p = MPL_malloc(sizeof(*p), MPL_MEM_OTHER);
        if (p) {
            *p = one;
            if (ofi.pend_tail)
                ofi.pend_tail->next = p;
            else
                ofi.pend_head = p;
            ofi.pend_tail = p;
            MPIDI_PART_PVAR_ADD(OFI_DEFERRED, 1);
            rc = 0;
        } else {
            rc = -FI_ENOMEM;
        }
    }
    OFI_UNLOCK();
    if (rc == 0)
        return MPI_SUCCESS;
    int err = op_error(op, m >= 0 ? "fi_writedata" : "fi_writedata(credit)",
                       fi_strerror((int) -rc));
    if (m >= 0) {
        MPIDI_PART_msg_done(op, m);     /* the iteration completes with the error */
    } else {
        /* no credit, so nothing will arrive: the iteration completes with the error */
        for (int i = 0; i < op->st.nmsgs; i++)
            MPIDI_PART_msg_done(op, i);
    }
    (void) err;
    return MPI_SUCCESS;
}

static int ofi_send(MPIDI_PART_op_t * op, int m)
{
    MPIDI_PART_PVAR_ADD(OFI_WRITES, 1);
    return submit(op, m, 0);
}

/* Receiver, MPI_Start (or the match, when the user started first): the credit. */
static int ofi_recv_arm(MPIDI_PART_op_t * op)
{
    MPIDI_PART_PVAR_ADD(WIRE_MSGS_RECVD, op->st.nmsgs);
    MPIDI_PART_PVAR_ADD(OFI_CREDITS, 1);
    return submit(op, -1, op->st.iter);
}

/* ---- completions ------------------------------------------------------------------------- */

typedef struct {
    MPIDI_PART_op_t *op;
    int32_t m;                  /* message done; -1: a credit for op */
    uint32_t low;
} ofi_event_t;

/* Engine lock held: what a remote immediate means; 0: drop it (an operation that is gone,
 * or a message outside its running iteration). A credit is counted here and arms the
 * sender's iteration when it is the one running; ev->m = -1 - (messages to send now). */
static int resolve(uint32_t imm, ofi_event_t * ev)
{
    uint32_t slot = MPIDI_PART_imm_slot(imm);
    MPIDI_PART_op_t *op = slot < ofi.next_slot ? ofi.slots[slot] : NULL;
    if (op == NULL || op->ofi == NULL)
        return 0;
    MPIDI_PART_ofiop_t *o = op->ofi;
    ev->op = op;
    ev->low = MPIDI_PART_imm_low(imm);
    if (MPIDI_PART_imm_kind(imm) == MPIDI_PART_IMM_CREDIT) {
        if (!op->is_send)
            return 0;
        o->credited++;  /* credits come in iteration order: the next needs this one done */
        int nsend = 0;
        if (op->tp == &MPIDI_PART_ofi_transport && !op->freed && o->tosend &&
            MPIDI_PART_st_is_running(&op->st) && !MPIDI_PART_st_is_armed(&op->st) &&
            o->credited >= op->st.iter)
            nsend = MPIDI_PART_st_arm(&op->st, o->tosend);
        ev->m = -1 - nsend;
        return nsend > 0;
    }
    ev->m = (int32_t) ev->low;
    return !op->is_send && op->tp == &MPIDI_PART_ofi_transport &&
        MPIDI_PART_st_is_running(&op->st) && ev->m < op->st.nmsgs;
}

int MPIDI_PART_ofi_progress(void)
{
    int mpi_errno = MPI_SUCCESS;
    struct fi_cq_data_entry cqe[OFI_CQ_BATCH];
    ofi_event_t ev[OFI_CQ_BATCH];
    int nremote = 0, nev = 0;
    uint32_t imms[OFI_CQ_BATCH];

    if (ofi.state != OFI_UP)
        return MPI_SUCCESS;
    if (MPL_atomic_cas_int(&ofi.draining, 0, 1) != 0)
        return MPI_SUCCESS;     /* another thread reads the queue */

    OFI_LOCK();
    ssize_t n = fi_cq_read(ofi.cq, cqe, OFI_CQ_BATCH);
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry e;
        memset(&e, 0, sizeof(e));
        if (fi_cq_readerr(ofi.cq, &e, 0) == 1) {
            const char *detail = fi_cq_strerror(ofi.cq, e.prov_errno, e.err_data, NULL, 0);
            ofi_wctx_t *w = e.op_context;
            if (!(e.flags & FI_REMOTE_WRITE) && w) {
                ofi.tx_out--;
                if (w->op) {
                    ev[nev].op = w->op;
                    ev[nev].m = w->m;
                    ev[nev].low = 0;
                    nev++;
                    op_error(w->op, fi_strerror(e.err), detail ? detail : "");
                } else {
                    MPL_free(w);        /* a credit that failed: its receiver hangs on; */
                    /* the sender's side reports the broken connection */
                }
            }
        }
        n = 0;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (cqe[i].flags & FI_REMOTE_CQ_DATA) {
            imms[nremote++] = (uint32_t) cqe[i].data;
        } else {
            ofi_wctx_t *w = cqe[i].op_context;
            ofi.tx_out--;
            if (w && w->op) {
                ev[nev].op = w->op;
                ev[nev].m = w->m;
                ev[nev].low = 0;
                nev++;
            } else {
                MPL_free(w);    /* a credit's context */
            }
        }
    }
    /* writes that waited for room */
    while (ofi.pend_head && ofi.tx_out < ofi.tx_size) {
        ofi_pend_t *p = ofi.pend_head;
        ssize_t rc = post(p);
        if (rc == -FI_EAGAIN)
            break;
        ofi.pend_head = p->next;
        if (ofi.pend_head == NULL)
            ofi.pend_tail = NULL;
        if (rc == 0) {
            ofi.tx_out++;
        } else {
            op_error(p->op, "fi_writedata", fi_strerror((int) -rc));
            if (p->m >= 0 && nev < OFI_CQ_BATCH) {
                ev[nev].op = p->op;
                ev[nev].m = p->m;
                ev[nev].low = 0;
                nev++;
            }
        }
        MPL_free(p);
    }
    OFI_UNLOCK();

    /* local completions: the sender's message m is done (its buffer is free again) */
    for (int i = 0; i < nev; i++)
        MPIDI_PART_msg_done(ev[i].op, ev[i].m);

    if (nremote > 0) {
        nev = 0;
        MPIDI_PART_LOCK();
        for (int i = 0; i < nremote; i++)
            if (resolve(imms[i], &ev[nev]))
                nev++;
        MPIDI_PART_UNLOCK();
        for (int i = 0; i < nev; i++) {
            if (ev[i].m >= 0) {
                MPIDI_PART_msg_done(ev[i].op, ev[i].m);
            } else {
                /* the credit armed a running iteration: send what waited for it (the
                 * operation stays alive: its request completes only after these) */
                int err = MPIDI_PART_send_ready(ev[i].op, ev[i].op->ofi->tosend, -1 - ev[i].m);
                if (err && mpi_errno == MPI_SUCCESS)
                    mpi_errno = err;
            }
        }
    }
    MPL_atomic_release_store_int(&ofi.draining, 0);
    return mpi_errno;
}

/* ---- plan -------------------------------------------------------------------------------- */

static int ofi_recv_plan(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    const ofi_rts_ext_t *x = (const ofi_rts_ext_t *) op->rts_ext;
    ofi_plan_ext_t *px = (ofi_plan_ext_t *) plan->ext;
    uint64_t raddr = 0;
    int rc;

    MPL_COMPILE_TIME_ASSERT(sizeof(ofi_plan_ext_t) <= MPIDI_PART_EXT_MAX);
    if (!ofiop_create(op))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                             "no operation slot or memory left");
    MPIDI_PART_ofiop_t *o = op->ofi;
    o->peer_slot = x->slot;
    o->raddr = x->mbox_addr;
    o->rkey = x->mbox_key;
    OFI_LOCK();
    o->peer_fa = peer_addr(x->addr, x->addrlen);
    rc = mr_register(op->buf, (size_t) op->total_bytes, FI_REMOTE_WRITE | FI_WRITE, &o->mr,
                     &o->desc, &px->rkey, &raddr);
    OFI_UNLOCK();
    MPIR_ERR_CHKANDJUMP1(o->peer_fa == FI_ADDR_NOTAVAIL, mpi_errno, MPI_ERR_OTHER,
                         "**partofiop", "**partofiop %s", "fi_av_insert of the sender failed");
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                         fi_strerror(-rc));
    MPIDI_PART_PVAR_ADD(OFI_MRS, 1);
    MPIDI_PART_PVAR_ADD(OFI_OPS, 1);
    px->magic = OFI_EXT_MAGIC;
    px->slot = o->slot;
    px->raddr = raddr;
    px->addrlen = (uint32_t) ofi.addrlen;
    px->pad = 0;
    memcpy(px->addr, ofi.addr, ofi.addrlen);
    plan->ext_len = (int32_t) (offsetof(ofi_plan_ext_t, addr) + ofi.addrlen);

  fn_exit:
    return mpi_errno;
  fn_fail:
    MPIDI_PART_ofi_release(op);
    goto fn_exit;
}

static int ofi_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_ofiop_t *o = op->ofi;
    ofi_plan_ext_t px;
    int n = plan->plan.nmsgs, rc = 0;

    MPIR_ERR_CHKANDJUMP2(o == NULL || plan->ext_len < (int) offsetof(ofi_plan_ext_t, addr) ||
                         n > (int) MPIDI_PART_IMM_MSGS, mpi_errno, MPI_ERR_OTHER,
                         "**partbadplan", "**partbadplan %d %d", plan->transport, n);
    memcpy(&px, plan->ext, plan->ext_len);
    MPIR_ERR_CHKANDJUMP2(px.magic != OFI_EXT_MAGIC || px.addrlen > OFI_MAX_ADDR ||
                         plan->ext_len < (int) (offsetof(ofi_plan_ext_t, addr) + px.addrlen) ||
                         px.slot >= MPIDI_PART_IMM_SLOTS, mpi_errno, MPI_ERR_OTHER,
                         "**partbadplan", "**partbadplan %d %d", plan->transport, n);
    o->wctx = MPL_calloc(n, sizeof(ofi_wctx_t), MPL_MEM_OTHER);
    o->tosend = MPL_malloc(n * sizeof(int32_t), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(o->wctx == NULL || o->tosend == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    o->peer_slot = px.slot;
    o->raddr = px.raddr;
    o->rkey = px.rkey;
    OFI_LOCK();
    o->peer_fa = peer_addr(px.addr, px.addrlen);
    if (ofi.mr_local) {
        uint64_t key, ra;
        rc = mr_register(op->buf, (size_t) op->total_bytes, FI_WRITE, &o->mr, &o->desc, &key,
                         &ra);
    }
    OFI_UNLOCK();
    MPIR_ERR_CHKANDJUMP1(o->peer_fa == FI_ADDR_NOTAVAIL, mpi_errno, MPI_ERR_OTHER,
                         "**partofiop", "**partofiop %s", "fi_av_insert of the receiver failed");
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                         fi_strerror(-rc));
    if (o->mr)
        MPIDI_PART_PVAR_ADD(OFI_MRS, 1);
    MPIDI_PART_PVAR_ADD(OFI_OPS, 1);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, lock held, at the start of a planned iteration: the receiver's credit for it came
 * already. */
static int ofi_always_armed(MPIDI_PART_op_t * op)
{
    return op->ofi->credited >= op->st.iter;
}

static int ofi_ctl(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr)
{
    return MPI_SUCCESS;         /* credits travel as writes, never as a CTS */
}

static int ofi_test_msg(MPIDI_PART_op_t * op, int m)
{
    return MPIDI_PART_st_msg_is_done(&op->st, m);
}

static void ofi_poll(MPIDI_PART_op_t * op, uint64_t * vci_mask)
{
    /* completions come from the queue (MPIDI_PART_ofi_progress), not per operation */
}

static int ofi_progress_msg(MPIDI_PART_op_t * op, int m)
{
    int mpi_errno = MPIDI_PART_ofi_progress();
    if (mpi_errno == MPI_SUCCESS &&
        (MPL_atomic_acquire_load_int(&MPIDI_PART_global.work) & MPIDI_PART_WORK_HANDSHAKE))
        mpi_errno = MPIDI_PART_handshake();
    return mpi_errno;
}

static void ofi_iter_reset(MPIDI_PART_op_t * op)
{
}

const MPIDI_PART_transport_t MPIDI_PART_ofi_transport = {
    .name = "ofi",
    .id = MPIDI_PART_TRANSPORT_OFI,
    .recv_plan = ofi_recv_plan,
    .send_plan = ofi_send_plan,
    .always_armed = ofi_always_armed,
    .recv_arm = ofi_recv_arm,
    .send = ofi_send,
    .ctl = ofi_ctl,
    .test_msg = ofi_test_msg,
    .poll = ofi_poll,
    .progress_msg = ofi_progress_msg,
    .iter_reset = ofi_iter_reset,
    .free = MPIDI_PART_ofi_release,
};
