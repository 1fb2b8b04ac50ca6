/*
 * part_ofi.c: the RDMA transport over libfabric. The sender writes each wire message
 * straight into the receive buffer with one fi_writedata whose remote CQ data is the
 * 32-bit immediate of part_imm.h (operation slot + message index); the receiver marks that
 * message done when the completion arrives. Per iteration the receiver's MPI_Start gives
 * the sender a credit (an 8-byte write into the sender's mailbox whose immediate names the
 * sender's slot and the iteration), so nothing lands before the receiver has started.
 * One fabric and domain per process, opened lazily on first use, and one endpoint with its
 * own completion queue per VCI in use (the messages of an operation follow its VCI
 * mapping, so threads that ready different partitions write through different endpoints);
 * completions are read from MPICH's progress (the engine's hook, MPI_Parrived). The
 * protocol is in README ("RDMA transport").
 */
#include "part_rdma.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <dlfcn.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

    - name        : MPIR_CVAR_PART_OFI_LIBRARY
      category    : CH4_PART
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The libfabric the partitioned engine's RDMA transport opens (dlopen) when it is
        first used: a file name searched as the dynamic loader does, or a path. Empty:
        libfabric.so.1, from configure's directory first (--with-libfabric-lib=DIR, or
        PATH/lib of --with-libfabric=PATH). The library is not linked into libmpi: a
        program that never uses the transport never loads it.

    - name        : MPIR_CVAR_PART_OFI_DEBUG_FAULT
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: 1 makes every data write of a sender of the RDMA transport fail as if
        fi_writedata had returned -FI_EIO (nothing is posted), so that tests can check that
        the send request completes with an error naming the provider and that nothing
        reaches the receiver. 2: the same, but every data write first waits in its
        endpoint's queue (as when the transmit queue is full) and fails when progress
        posts it. 3: every credit of a receiver fails as in 1 (its sender learns it from
        the receiver's FAIL message). 4: every credit is taken (fi_writedata returns 0)
        but nothing is posted, and the endpoint's next completion read returns an error
        completion for it, as a provider reports a write that failed on the wire. 5: the
        same for every data write. 6: the same for the write that carries the first
        partition only; the others are posted (writes of the failed iteration in flight,
        which the receiver must see land before its request completes). 7: every credit is
        posted and delivered, but its completion is reported as an error (a connection
        that broke after the credit went): the sender writes while the receiver fails. (A
        wrong remote key is no such test: shm and tcp;ofi_rxm in libfabric 1.17 drop such a
        write at the target and report success to the sender.) 0: off.

    - name        : MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER
      category    : CH4_PART
      type        : int
      default     : 1
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid for MPIR_CVAR_PART_OFI_DEBUG_FAULT: the writes (or credits) of an
        operation's iterations before this one (1: the first) go normally, from it on they
        fail.

    - name        : MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: the RDMA transport over libfabric takes this many bytes as the
        provider's largest message (fi_info's ep_attr max_msg_size) when it is smaller. An
        operation larger than the largest message goes on the tag transport, since each
        write of the transport is one message: shm and tcp;ofi_rxm state no limit, so
        part/part_rdma_maxmsg sets this in place of a provider that has one. 0: off.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* libfabric is opened when the transport first opens its fabric (dlopen), not linked: a
 * program that never uses this transport then never loads it. Debian's libfabric links its
 * psm provider, whose libinfinipath calibrates a clock in its constructor: 0.2 s at every
 * process start, RDMA transport or not. The five functions libfabric exports that this file
 * calls (the rest are inline calls through the objects' operation tables): */
static struct {
    void *handle;
    int (*getinfo) (uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                    struct fi_info **);
    void (*freeinfo) (struct fi_info *);
    struct fi_info *(*dupinfo) (const struct fi_info *);
    int (*fabric) (struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror) (int);
} fabric_lib;

#define fi_getinfo fabric_lib.getinfo
#define fi_freeinfo fabric_lib.freeinfo
#define fi_dupinfo fabric_lib.dupinfo
#define fi_fabric fabric_lib.fabric
#define fi_strerror fabric_lib.strerror
#define fi_allocinfo() fabric_lib.dupinfo(NULL)        /* the header's inline one is not used */

#define FABRIC_LIB_NAME "libfabric.so.1"

/* Load libfabric once (ofi lock held); 0, or -1 with the reason in why (which the
 * operations that require the transport report, part_rdma_errors -expect=library). */
static int fabric_lib_load(char *why, size_t len)
{
    if (fabric_lib.handle)
        return 0;
    const char *name = MPIR_CVAR_PART_OFI_LIBRARY;
    void *h = NULL;
    if (name && name[0]) {
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    } else {
        name = FABRIC_LIB_NAME;
#ifdef MPIDI_PART_LIBFABRIC_DIR
        h = dlopen(MPIDI_PART_LIBFABRIC_DIR "/" FABRIC_LIB_NAME, RTLD_NOW | RTLD_LOCAL);
#endif
        if (h == NULL)
            h = dlopen(FABRIC_LIB_NAME, RTLD_NOW | RTLD_LOCAL);
    }
    if (h == NULL) {
        /* short: MPI_Error_string's 512 bytes hold the whole stack (dlerror names the file) */
        snprintf(why, len, "no libfabric: %s (MPIR_CVAR_PART_OFI_LIBRARY)", dlerror());
        return -1;
    }
    const char *missing = NULL;
    /* the default version of each symbol: the one the headers this file was compiled with
     * describe when the library is theirs (linking bound the same ones) */
#define FABRIC_LIB_SYM(field_, name_) do { \
        if ((*(void **) &fabric_lib.field_ = dlsym(h, name_)) == NULL && missing == NULL) \
            missing = name_; \
    } while (0)
    FABRIC_LIB_SYM(getinfo, "fi_getinfo");
    FABRIC_LIB_SYM(freeinfo, "fi_freeinfo");
    FABRIC_LIB_SYM(dupinfo, "fi_dupinfo");
    FABRIC_LIB_SYM(fabric, "fi_fabric");
    FABRIC_LIB_SYM(strerror, "fi_strerror");
#undef FABRIC_LIB_SYM
    if (missing) {
        snprintf(why, len, "%s is not libfabric: no %s (MPIR_CVAR_PART_OFI_LIBRARY)", name,
                 missing);
        memset(&fabric_lib, 0, sizeof(fabric_lib));
        dlclose(h);
        return -1;
    }
    fabric_lib.handle = h;      /* kept until the process ends (providers may hold threads) */
    return 0;
}

#define OFI_VERSION FI_VERSION(1, 11)
#define OFI_MAX_ADDR 200        /* endpoint name bytes carried in an RTS or PLAN */
#define OFI_EXT_MAGIC 0x4f464931u       /* "OFI1" */
#define OFI_CQ_BATCH 32
#define OFI_MAX_EPS 16          /* endpoints per process (one per VCI in use) */

/* One write's completion context (the provider's fi_context2 must come first). */
typedef struct {
    struct fi_context2 fctx;
    MPIDI_PART_op_t *op;        /* NULL: a credit */
    int32_t m;                  /* the write (part_rdma.h: a message, or a timer run) */
    /* a credit: the receiver that gave it (its slot and pair, MPIDI_PART_rdma_hold: the
     * operation may be gone when the completion is read) and the iteration it started */
    uint32_t slot;
    uint32_t serial;
    MPIDI_PART_iter_t iter;
    uint64_t pair;
    int peer;
} ofi_wctx_t;

#define OFI_INJ_MAX 64          /* error completions the testing aid holds per endpoint */
#define OFI_WHY_MAX 192         /* a failure's text for the peer's FAIL */

typedef struct MPIDI_PART_ofiop {
    MPIDI_PART_rdmaop_t r;      /* slots, credits, lanes (= endpoints) */
    fi_addr_t peer_fa;          /* receiver: the sender's endpoint 0 (credits go there) */
    fi_addr_t *peer_fa_ep;      /* sender: the receiver's endpoint per index */
    struct fid_mr *mr;          /* receiver: the receive buffer; sender: the send buffer when
                                 * the provider needs local registration */
    void *desc;
    uint64_t raddr, rkey;       /* sender: the receive buffer; receiver: the sender's mailbox */
    ofi_wctx_t *wctx;           /* sender: per write (MPIDI_PART_RDMA_NWRITES) */
    char why[OFI_WHY_MAX];      /* the first failure, for the peer's FAIL (op_error) */
    /* sender whose FAIL carried a count while writes were in flight: that count, stored
     * once the FAIL went (-1 before, or when none is needed), and whether a thread took
     * on telling the final one (count_final); atomics */
    int64_t told;
    int final_told;
    /* sender that a receiver's FAIL reached: held (a reference) until every completion of
     * its writes has been read and handled; then it tells the receiver its final count and
     * ends the iteration the FAIL doomed, if watch_end (watch_progress); engine lock */
    int watched, watch_end;
    struct MPIDI_PART_op *watch_next;
    int snapped;                /* watch_progress: the lanes' reads counters were taken */
    unsigned seq_snap[OFI_MAX_EPS];
    /* sender: per lane, under its endpoint lock: data writes posted over the pair's life
     * and, of those, completed with an error and completed without (count_posted). Last, a
     * 64-byte stride per lane: posting and reading completions dirty these, not the line
     * of the fields every post reads, nor another lane's. */
    struct {
        uint64_t posted, wfailed, wok;
        uint64_t deferred;      /* data writes waiting in the lane's queue */
        uint8_t pad[32];
    } lane[OFI_MAX_EPS];
} MPIDI_PART_ofiop_t;

#define OFIOP(op_) ((MPIDI_PART_ofiop_t *) (op_)->rdma)

/* RTS ext: the sender's side (its endpoint 0) */
typedef struct {
    uint32_t magic;
    uint32_t fabric_id;
    uint32_t slot;
    uint32_t neps;              /* endpoints the sender can write from */
    uint32_t addrlen;
    uint32_t credit_base;       /* the sender's (MPIDI_PART_rdma_credit_low) */
    uint64_t mbox_addr, mbox_key;
    uint8_t addr[OFI_MAX_ADDR];
} ofi_rts_ext_t;

/* PLAN ext: the receiver's side: its buffer, the VCI mapping (as the tag transport's) and
 * the names of its endpoints 0..neps-1, each as a 2-byte length and the name */
typedef struct {
    uint32_t magic;
    uint32_t slot;
    uint64_t raddr, rkey;
    int32_t neps, vci_parts, vci_ppt;
    uint32_t names_len;
    uint8_t names[MPIDI_PART_EXT_MAX - 40];
} ofi_plan_ext_t;

/* A write the endpoint could not take yet (its queue was full). */
typedef struct ofi_pend {
    struct ofi_pend *next;
    MPIDI_PART_op_t *op;        /* a data write's operation; NULL: a credit */
    int32_t m;                  /* the write; -1: a credit for iteration iter */
    MPIDI_PART_iter_t iter;
    int tell;                   /* failed: this thread recorded op's error (op_error) */
    ssize_t rc;                 /* failed: the provider's answer */
    /* a credit carries what it needs, taken from its receiver when it was made (credit_make):
     * the receiver's iteration may end and its request be freed while it waits here */
    ofi_wctx_t *c;              /* its completion context (slot, pair, iteration, peer) */
    fi_addr_t fa;
    uint64_t raddr, rkey;
    uint32_t imm;
} ofi_pend_t;

typedef struct {
    uint8_t addr[OFI_MAX_ADDR];
    size_t len;
    fi_addr_t fa;
} ofi_peer_t;

/* One endpoint and its completion queue (transmit and receive), with the writes that wait
 * for room in its queue. Its lock covers fi_writedata, fi_cq_read and the deferred list;
 * it is never taken inside the engine lock. */
typedef struct {
    MPID_Thread_mutex_t lock;
    unsigned reads;             /* odd while a thread reads the CQ (one at a time), and
                                 * handles what it read; atomic (watch_progress) */
    int up;                     /* opened (set once, under ofi.lock) */
    struct fid_ep *ep;
    struct fid_cq *cq;
    uint8_t addr[OFI_MAX_ADDR];
    size_t addrlen;
    size_t tx_out;
    ofi_pend_t *pend_head, *pend_tail;
    /* testing aid (MPIR_CVAR_PART_OFI_DEBUG_FAULT 4-6): writes taken but not posted, whose
     * error completions the next reads of the queue return */
    ofi_wctx_t *inj[OFI_INJ_MAX];
    int ninj;
} ofi_ep_t;

enum { OFI_DOWN = 0, OFI_UP = 1, OFI_FAILED = -1 };

static struct {
    int state;
    char why[MPI_MAX_ERROR_STRING];     /* OFI_FAILED: the reason */
    char prov[64];
    int own_names;              /* the engine names its endpoints (shm: ep_name) */
    int serial;                 /* FI_THREAD_DOMAIN (one endpoint): the domain's calls
                                 * outside the endpoint's path take its lock too */
    MPID_Thread_mutex_t lock;   /* fabric, domain, address vector, registrations, peers,
                                 * opening endpoints (never taken inside the engine lock or
                                 * an endpoint's lock) */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    ofi_ep_t eps[OFI_MAX_EPS];
    int max_eps;                /* endpoints this process may open */
    MPL_atomic_int_t neps_up;   /* endpoints 0..neps_up-1 are open */
    uint32_t fabric_id;
    int mr_local, mr_virt, mr_prov_key, mr_endpoint;
    uint64_t next_key;
    size_t tx_size;
    uint64_t max_msg;           /* the provider's largest message: a larger operation goes
                                 * on the tag transport (each write is one message) */
    ofi_peer_t *peers;
    int npeers, peers_cap;
    /* the credit mailbox: credits land in mbox[0..7], are sent from mbox[8..15] */
    uint64_t mbox[2];
    struct fid_mr *mbox_mr;
    void *mbox_desc;
    uint64_t mbox_key;
    /* the watched senders (engine lock; nwatch also read without it) */
    struct MPIDI_PART_op *watch;
    int nwatch;
} ofi;

/* taken only when MPI runs threaded, as the engine lock is */
#define OFI_LOCK()     MPIDI_PART_MUTEX_LOCK(&ofi.lock)
#define OFI_UNLOCK()   MPIDI_PART_MUTEX_UNLOCK(&ofi.lock)
#define EP_LOCK(e_)    MPIDI_PART_MUTEX_LOCK(&(e_)->lock)
#define EP_UNLOCK(e_)  MPIDI_PART_MUTEX_UNLOCK(&(e_)->lock)
/* Registrations and address-vector inserts: under FI_THREAD_DOMAIN every call on the
 * domain's objects must be serialised, and the hot path (fi_writedata, fi_cq_read) holds
 * only endpoint 0's lock, so these take it as well (after the fabric lock, the order used
 * everywhere). Under FI_THREAD_SAFE the fabric lock alone. */
#define DOM_LOCK()                                              \
    do {                                                        \
        OFI_LOCK();                                             \
        if (ofi.serial && ofi.eps[0].up)                        \
            EP_LOCK(&ofi.eps[0]);                               \
    } while (0)
#define DOM_UNLOCK()                                            \
    do {                                                        \
        if (ofi.serial && ofi.eps[0].up)                        \
            EP_UNLOCK(&ofi.eps[0]);                             \
        OFI_UNLOCK();                                           \
    } while (0)

/* ---- fabric ----------------------------------------------------------------------------- */

void MPIDI_PART_ofi_init(void)
{
    int err;
    memset(&ofi, 0, sizeof(ofi));
    MPID_Thread_mutex_create(&ofi.lock, &err);
    MPIR_Assert(err == 0);
    for (int v = 0; v < OFI_MAX_EPS; v++) {
        MPID_Thread_mutex_create(&ofi.eps[v].lock, &err);
        MPIR_Assert(err == 0);
        __atomic_store_n(&ofi.eps[v].reads, 0, __ATOMIC_RELAXED);
    }
    MPL_atomic_relaxed_store_int(&ofi.neps_up, 0);
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
    for (int v = 0; v < OFI_MAX_EPS; v++) {
        ofi_ep_t *e = &ofi.eps[v];
        if (e->ep)
            fi_close(&e->ep->fid);
        if (e->cq)
            fi_close(&e->cq->fid);
        e->ep = NULL;
        e->cq = NULL;
        e->up = 0;
    }
    MPL_atomic_relaxed_store_int(&ofi.neps_up, 0);
    if (ofi.av)
        fi_close(&ofi.av->fid);
    if (ofi.domain)
        fi_close(&ofi.domain->fid);
    if (ofi.fabric)
        fi_close(&ofi.fabric->fid);
    if (ofi.info)
        fi_freeinfo(ofi.info);
    ofi.mbox_mr = NULL;
    ofi.av = NULL;
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
        rc = fi_mr_bind(*mr, &ofi.eps[0].ep->fid, 0);
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

/* libfabric's shm provider names an endpoint's shared-memory region after the process id
 * ("pid:domain:endpoint") unless told otherwise, and refuses (fi_enable: -FI_EBUSY) a name
 * whose region already exists. A process killed with its endpoint open leaves its region in
 * /dev/shm, so once process ids wrap a later process with the same id could not open its
 * endpoint. The engine's shm endpoints therefore get names of their own: process id, a
 * per-open nonce and the endpoint index, and an open that still meets an existing region
 * tries again with a fresh nonce. */
#define OFI_SHM_NAME_TRIES 4
static int ep_name(ofi_ep_t * e, int v)
{
    static uint32_t seq;
    char name[64];
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(name, sizeof(name), "mpich-part.%d.%08x.%d", (int) getpid(),
             (uint32_t) (ts.tv_nsec ^ ts.tv_sec * 2654435761u) + ++seq, v);
    return fi_setname(&e->ep->fid, name, strlen(name) + 1);
}

/* Open endpoint v with its completion queue (ofi lock held); 0 or a libfabric error, with
 * ofi.why set. */
static int ep_open(int v)
{
    ofi_ep_t *e = &ofi.eps[v];
    struct fi_cq_attr cq_attr = { 0 };
    const char *what = "fi_cq_open";
    int rc, tries = 0;

  again:
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.size = ofi.tx_size * 4;
    rc = fi_cq_open(ofi.domain, &cq_attr, &e->cq, NULL);
    if (!rc && (what = "fi_endpoint"))
        rc = fi_endpoint(ofi.domain, ofi.info, &e->ep, NULL);
    if (!rc && (what = "fi_ep_bind(av)"))
        rc = fi_ep_bind(e->ep, &ofi.av->fid, 0);
    if (!rc && (what = "fi_ep_bind(cq)"))
        rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
    if (!rc && ofi.own_names && (what = "fi_setname"))
        rc = ep_name(e, v);
    if (!rc && (what = "fi_enable"))
        rc = fi_enable(e->ep);
    if (rc == -FI_EBUSY && ofi.own_names && ++tries < OFI_SHM_NAME_TRIES) {
        fi_close(&e->ep->fid);
        fi_close(&e->cq->fid);
        e->ep = NULL;
        e->cq = NULL;
        goto again;
    }
    if (!rc && (what = "fi_getname")) {
        e->addrlen = sizeof(e->addr);
        rc = fi_getname(&e->ep->fid, e->addr, &e->addrlen);
    }
    if (rc) {
        snprintf(ofi.why, sizeof(ofi.why), "%s (endpoint %d): %s%s", what, v, fi_strerror(-rc),
                 strcmp(what, "fi_getname") ? "" : " (an endpoint name longer than the "
                 "handshake carries?)");
        if (e->ep)
            fi_close(&e->ep->fid);
        if (e->cq)
            fi_close(&e->cq->fid);
        e->ep = NULL;
        e->cq = NULL;
        return rc;
    }
    e->tx_out = 0;
    e->up = 1;
    return 0;
}

/* Open the fabric, the domain and endpoint 0 (ofi lock held). One verbose line says what
 * happened. Several endpoints need a provider that is thread safe across endpoints; one
 * that is not gets one endpoint (and the cheaper domain threading). */
static void fabric_open(void)
{
    struct fi_info *hints = NULL, *info = NULL, *fi;
    const char *want = MPIR_CVAR_PART_OFI_PROVIDER;
    uint64_t dummy;
    int rc, want_eps = MPIDI_global.n_vcis < OFI_MAX_EPS ? MPIDI_global.n_vcis : OFI_MAX_EPS;

    ofi.state = OFI_FAILED;
    if (fabric_lib_load(ofi.why, sizeof(ofi.why)))
        goto fail;
    hints = fi_allocinfo();
    if (hints == NULL) {
        snprintf(ofi.why, sizeof(ofi.why), "fi_allocinfo: out of memory");
        goto fail;
    }
    hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
        FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    if (want && want[0])
        hints->fabric_attr->prov_name = MPL_strdup(want);
    rc = -FI_ENODATA;
    if (want_eps > 1) {
        hints->domain_attr->threading = FI_THREAD_SAFE;
        rc = fi_getinfo(OFI_VERSION, NULL, NULL, 0, hints, &info);
    }
    if (rc) {
        want_eps = 1;
        hints->domain_attr->threading = FI_THREAD_DOMAIN;       /* we serialize (DOM_LOCK) */
        rc = fi_getinfo(OFI_VERSION, NULL, NULL, 0, hints, &info);
    }
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
    ofi.serial = fi->domain_attr->threading != FI_THREAD_SAFE;
    snprintf(ofi.prov, sizeof(ofi.prov), "%s", fi->fabric_attr->prov_name);
    ofi.own_names = strcmp(ofi.prov, "shm") == 0;
    uint64_t mrm = fi->domain_attr->mr_mode;
    ofi.mr_local = !!(mrm & FI_MR_LOCAL);
    ofi.mr_virt = !!(mrm & FI_MR_VIRT_ADDR);
    ofi.mr_prov_key = !!(mrm & FI_MR_PROV_KEY);
    ofi.mr_endpoint = !!(mrm & FI_MR_ENDPOINT);
    ofi.max_eps = ofi.mr_endpoint ? 1 : want_eps;       /* a registration binds one endpoint */
    ofi.next_key = 1;
    ofi.tx_size = fi->tx_attr->size ? fi->tx_attr->size : 64;
    ofi.max_msg = fi->ep_attr->max_msg_size;
    if (MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG > 0 &&
        (uint64_t) MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG < ofi.max_msg)
        ofi.max_msg = (uint64_t) MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG;
    ofi.fabric_id = hash_str(ofi.prov) ^ (uint32_t) fi->addr_format;

    OFI_TRY(fi_fabric(ofi.info->fabric_attr, &ofi.fabric, NULL), "fi_fabric");
    OFI_TRY(fi_domain(ofi.fabric, ofi.info, &ofi.domain, NULL), "fi_domain");
    struct fi_av_attr av_attr = { 0 };
    av_attr.type = FI_AV_UNSPEC;
    OFI_TRY(fi_av_open(ofi.domain, &av_attr, &ofi.av, NULL), "fi_av_open");
    if (ep_open(0))
        goto fail;
    MPL_atomic_release_store_int(&ofi.neps_up, 1);
    OFI_TRY(mr_register(ofi.mbox, sizeof(ofi.mbox), FI_WRITE | FI_REMOTE_WRITE, &ofi.mbox_mr,
                        &ofi.mbox_desc, &ofi.mbox_key, &dummy), "fi_mr_reg(mailbox)");
    __atomic_store_n(&ofi.state, OFI_UP, __ATOMIC_RELEASE);
    if (MPIR_CVAR_DEBUG_SUMMARY)
        fprintf(stderr, "[%d] partitioned engine: RDMA transport over libfabric provider "
                "'%s' (fabric %s, up to %d endpoints)\n", MPIR_Process.rank, ofi.prov,
                ofi.info->fabric_attr->name, ofi.max_eps);

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
                "(%s): operations that require it fail, the others use the tag transport\n",
                MPIR_Process.rank, ofi.why);
    goto fn_exit;
}

/* Endpoints 0..n-1 open (opening the missing ones); how many are (fewer on failure). */
static int eps_up(int n)
{
    if (n > ofi.max_eps)
        n = ofi.max_eps;
    if (MPL_atomic_acquire_load_int(&ofi.neps_up) >= n)
        return n;
    OFI_LOCK();
    int up = MPL_atomic_relaxed_load_int(&ofi.neps_up);
    while (up < n && ep_open(up) == 0)
        up++;
    MPL_atomic_release_store_int(&ofi.neps_up, up);
    OFI_UNLOCK();
    return up < n ? up : n;
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

int MPIDI_PART_ofi_is_shm(void)
{
    return __atomic_load_n(&ofi.state, __ATOMIC_ACQUIRE) == OFI_UP && ofi.own_names;
}

int MPIDI_PART_ofi_require(void)
{
    return fabric_up() ? MPI_SUCCESS : fabric_error();
}

void MPIDI_PART_ofi_finalize(void)
{
    int err;
    ofi.watch = NULL;   /* the engine's finalize destroyed the freed operations */
    MPIDI_PART_PVAR_SUB(RDMA_BUSY, ofi.nwatch);
    ofi.nwatch = 0;
    for (int v = 0; v < OFI_MAX_EPS; v++) {
        ofi_pend_t *p = ofi.eps[v].pend_head;
        while (p) {
            ofi_pend_t *next = p->next;
            MPL_free(p->c);
            MPL_free(p);
            p = next;
        }
        ofi.eps[v].pend_head = ofi.eps[v].pend_tail = NULL;
        for (int i = 0; i < ofi.eps[v].ninj; i++)
            if (ofi.eps[v].inj[i]->op == NULL)
                MPL_free(ofi.eps[v].inj[i]);    /* the testing aid's credits */
        ofi.eps[v].ninj = 0;
    }
    fabric_close();
    MPL_free(ofi.peers);
    MPID_Thread_mutex_destroy(&ofi.lock, &err);
    for (int v = 0; v < OFI_MAX_EPS; v++)
        MPID_Thread_mutex_destroy(&ofi.eps[v].lock, &err);
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

static void ofi_release(MPIDI_PART_op_t * op);
static void ofi_peer_failed(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                            int64_t posted);

/* New transport state for op, with a slot (no lock held). */
static int ofiop_create(MPIDI_PART_op_t * op)
{
    MPIDI_PART_ofiop_t *o = MPL_calloc(1, sizeof(*o), MPL_MEM_OTHER);
    if (o == NULL)
        return 0;
    o->peer_fa = FI_ADDR_NOTAVAIL;
    o->told = -1;
    o->r.tp = &MPIDI_PART_ofi_transport;
    o->r.release = ofi_release;
    o->r.peer_failed = ofi_peer_failed;
    if (!MPIDI_PART_rdma_attach(op, &o->r)) {
        MPL_free(o);
        return 0;
    }
    return 1;
}

static void ofi_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    MPIDI_PART_rdma_detach(op);
    if (o->mr) {
        DOM_LOCK();
        fi_close(&o->mr->fid);
        DOM_UNLOCK();
        MPIDI_PART_PVAR_SUB(OFI_MRS, 1);
    }
    MPL_free(o->wctx);
    MPL_free(o->peer_fa_ep);
    MPL_free(o);
}

int MPIDI_PART_ofi_announce(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * rts)
{
    if (!fabric_up())
        return fabric_error();
    if (!MPIDI_PART_rdma_eligible(op) || (uint64_t) op->total_bytes > ofi.max_msg ||
        !ofiop_create(op))
        return MPI_SUCCESS;     /* the tag transport carries it */
    ofi_rts_ext_t *x = (ofi_rts_ext_t *) rts->ext;
    MPL_COMPILE_TIME_ASSERT(sizeof(ofi_rts_ext_t) <= MPIDI_PART_EXT_MAX);
    x->magic = OFI_EXT_MAGIC;
    x->fabric_id = ofi.fabric_id;
    x->slot = op->rdma->slot;
    x->mbox_addr = ofi.mr_virt ? (uint64_t) (uintptr_t) & ofi.mbox[0] : 0;
    x->mbox_key = ofi.mbox_key;
    x->neps = (uint32_t) ofi.max_eps;
    x->credit_base = op->rdma->credit_base;
    x->addrlen = (uint32_t) ofi.eps[0].addrlen;
    memcpy(x->addr, ofi.eps[0].addr, ofi.eps[0].addrlen);
    rts->ext_len = (int32_t) (offsetof(ofi_rts_ext_t, addr) + ofi.eps[0].addrlen);
    return MPI_SUCCESS;
}

int MPIDI_PART_ofi_usable(MPIDI_PART_op_t * op)
{
    const ofi_rts_ext_t *x = (const ofi_rts_ext_t *) op->rts_ext;
    if (!MPIDI_PART_rdma_eligible(op) || x == NULL ||
        op->rts_ext_len < (int) offsetof(ofi_rts_ext_t, addr) || x->magic != OFI_EXT_MAGIC)
        return 0;
    if (!fabric_up() || x->fabric_id != ofi.fabric_id || x->addrlen > OFI_MAX_ADDR ||
        x->slot >= MPIDI_PART_IMM_SLOTS ||
        op->rts_ext_len < (int) (offsetof(ofi_rts_ext_t, addr) + x->addrlen))
        return 0;
    /* the receiver writes the sender's side of the plan into the front of its buffer; a
     * write is at most the send's bytes */
    return op->peer_bytes > 0 && (uint64_t) op->peer_bytes <= ofi.max_msg;
}

/* ---- writes ------------------------------------------------------------------------------ */

/* The MPI error of a failure on op's transfer: provider, what failed, its text, the peer. */
static int ofi_error_code(MPIDI_PART_op_t * op, const char *what, const char *detail)
{
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**partofiio", "**partofiio %s %s %s %d",
                                ofi.prov, what, detail, op->peer);
}

/* The text a FAIL carries to the peer ("rank 0: fi_writedata failed: ..."). */
static void why_text(char *why, const char *what, const char *detail)
{
    snprintf(why, OFI_WHY_MAX, "rank %d: %s failed: %s", MPIR_Process.rank, what, detail);
}

/* Record op's error: what failed, the provider's text. Only the first one counts (an
 * iteration's first error is reported; the operation moves nothing more afterwards). Returns
 * 1 when this call recorded it: its caller then tells the peer (tell_failure) once it holds
 * no lock. */
static int op_error(MPIDI_PART_op_t * op, const char *what, const char *detail)
{
    if (MPIDI_PART_rdma_error_of(op) != MPI_SUCCESS)
        return 0;
    int err = ofi_error_code(op, what, detail);
    MPIDI_PART_rdma_error(op, err);
    if (MPIDI_PART_rdma_error_of(op) != err)
        return 0;       /* another thread's came first */
    why_text(OFIOP(op)->why, what, detail);
    return 1;
}

/* Sender whose error is recorded (no lock held): the data writes it posted over the pair's
 * life, less those whose completion was an error so far; *inflight: those whose completion
 * is still to be read, and those still in a lane's queue (submit queues none once the
 * error is set). No write is posted once each lane's lock has been taken here after
 * the error was set (post_data checks it under that lock), so only error completions read
 * later lower the count: when *inflight is 0 it is final. A write that landed although its
 * completion was an error would let the receiver stop one write early. */
static int64_t count_posted(MPIDI_PART_op_t * op, uint64_t * inflight)
{
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    int lanes = o->r.nlanes > 1 ? o->r.nlanes : 1;
    uint64_t n = 0, out = 0;
    for (int v = 0; v < lanes && v < OFI_MAX_EPS; v++) {
        EP_LOCK(&ofi.eps[v]);
        n += o->lane[v].posted - o->lane[v].wfailed;    /* those will not land */
        out += o->lane[v].posted - o->lane[v].wfailed - o->lane[v].wok + o->lane[v].deferred;
        EP_UNLOCK(&ofi.eps[v]);
    }
    *inflight = out;
    return (int64_t) n;
}

/* Tell op's receiver that n of its failed iteration's writes will land (COUNT). */
static void tell_count(MPIDI_PART_op_t * op, int64_t n)
{
    if (MPIDI_PART_rdma_tell_count(op, n) != MPI_SUCCESS)
        fprintf(stderr, "partitioned engine: rank %d could not tell rank %d how many writes "
                "of a failed transfer land\n", MPIR_Process.rank, op->peer);
}

/* Sender whose FAIL carried a count while writes were in flight (no lock held; op alive:
 * a write of its failed iteration is not done yet, or its FAIL was just sent): once every
 * completion has been read, the count is final; if it is lower than the FAIL's (writes
 * failed on the wire meanwhile: a provider flushing a broken connection reports them one
 * completion at a time), a COUNT tells the receiver, whose drain would otherwise wait for
 * those writes until MPIR_CVAR_PART_RDMA_DRAIN_MS had passed. Called by the FAIL's sender
 * once the FAIL went and told is stored, and by every thread that reads a completion of op
 * after the error. The counters change under the lanes' locks, which count_posted takes:
 * a reader that saw told < 0 counted its completion before the FAIL's sender stored told,
 * so that one's count_posted sees it; a reader that sees told counts everything read
 * before it. Whoever sees inflight 0 tells (final_told: one of them), the FAIL's sender
 * when the last completion was read before its store. */
static void count_final(MPIDI_PART_op_t * op)
{
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    uint64_t inflight;
    int64_t told = __atomic_load_n(&o->told, __ATOMIC_SEQ_CST);
    if (told < 0 || __atomic_load_n(&o->final_told, __ATOMIC_RELAXED))
        return;
    int64_t n = count_posted(op, &inflight);
    if (inflight != 0)
        return;
    int none = 0;
    if (!__atomic_compare_exchange_n(&o->final_told, &none, 1, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED) || n >= told)
        return;         /* another thread tells, or the FAIL's count was final */
    tell_count(op, n);
}

/* op's iteration iter failed here (op_error recorded it in this thread; no lock held): tell
 * the peer, whose side would otherwise wait for writes or a credit that never come. Before
 * the failure ends op's iteration (the program may free op once it has). */
static void tell_why(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why)
{
    /* a sender's count lets the receiver wait for the writes still in flight */
    uint64_t inflight = 0;
    int64_t posted = op->is_send ? count_posted(op, &inflight) : -1;
    int err = MPIDI_PART_rdma_tell_peer(op, iter, why, posted);
    if (err != MPI_SUCCESS) {   /* the handshake's active messages failed too */
        fprintf(stderr, "partitioned engine: rank %d could not tell rank %d that a "
                "transfer failed (%s)\n", MPIR_Process.rank, op->peer, why);
    } else if (inflight != 0) {
        __atomic_store_n(&OFIOP(op)->told, posted, __ATOMIC_SEQ_CST);
        count_final(op);        /* the last completion may have been read meanwhile */
    }
}

static void tell_failure(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    tell_why(op, iter, OFIOP(op)->why);
}

/* The peer's side failed in its iteration iter (its FAIL message; op is held): so does
 * every iteration of ours from iter on (part_rdma.c, MPIDI_PART_rdma_doom_locked: the
 * running one now, with the peer's text, later ones at their MPI_Start: the peer writes and
 * credits nothing more). A sender still completing iteration iter - 1 (its writes all
 * landed: the receiver has started iter) keeps that one's success. */
static void ofi_peer_failed(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, const char *why,
                            int64_t posted)
{
    int err = ofi_error_code(op, "the peer's side", why);
    int tell_none = 0;
    MPIDI_PART_LOCK();
    int now = MPIDI_PART_rdma_doom_locked(op, iter, err);
    /* a receiver: the sender's writes still in flight land before the iteration ends */
    if (now && posted > 0 && MPIDI_PART_rdma_drain_locked(op, (uint64_t) posted))
        now = 0;
    /* a sender: writes of the doomed iteration may still be in flight (the credit came, the
     * receiver's side failed after it), reading the send buffer: the iteration ends once
     * their completions have been handled (its error set, nothing more is posted), not
     * now, and the receiver waits for how many landed (watch_progress) */
    if (op->is_send && op->tp != &MPIDI_PART_ofi_transport) {
        /* not planned yet (the FAIL overtook the PLAN): it posted no write, and will post
         * none for a doomed iteration; the count is 0 now. Not watched: a PLAN it then
         * cannot install frees this transport state (handle_plan), in which a watched
         * operation's link lives (found by a review) */
        tell_none = 1;
        now = 0;
    } else if (op->is_send) {
        MPIDI_PART_ofiop_t *o = OFIOP(op);
        o->watch_end |= now;
        now = 0;
        if (!o->watched) {
            o->watched = 1;
            o->snapped = 0;
            op->refs++;
            o->watch_next = ofi.watch;
            ofi.watch = op;
            __atomic_fetch_add(&ofi.nwatch, 1, __ATOMIC_RELAXED);
            MPIDI_PART_PVAR_ADD(RDMA_BUSY, 1);  /* the hook reads the queues meanwhile */
        }
    }
    MPIDI_PART_UNLOCK();
    if (tell_none)
        tell_count(op, 0);
    if (now)
        MPIDI_PART_rdma_failed(op, -1);        /* the peer knows: not told back */
}

/* A credit failed after it was posted (its error completion; no lock held): the receiver
 * that gave it, when it still exists, fails from that iteration on, as when a FAIL comes,
 * and tells its sender, which would otherwise wait for the credit forever. The context
 * names the receiver by slot and pair, not by pointer: it may have been freed meanwhile
 * (then nothing waits for the credit: its iteration had ended). Only while that iteration
 * runs: once it has ended, its data came, so the credit did reach the sender; and only a
 * receiver of the same peer (a pair id is another process's pointer). */
static void credit_failed(const ofi_wctx_t * c, const char *what, const char *detail)
{
    MPIDI_PART_op_t *op = MPIDI_PART_rdma_hold(c->slot, c->pair, c->serial);
    char why[OFI_WHY_MAX];
    if (op == NULL)
        return;
    int err = ofi_error_code(op, what, detail);
    why_text(why, what, detail);
    int ours, now = 0;
    MPIDI_PART_LOCK();
    ours = !op->is_send && op->peer == c->peer && op->st.iter == c->iter &&
        MPIDI_PART_st_is_running(&op->st) && op->rdma->drain_to == 0;    /* not while the
                                                                         * sender's writes
                                                                         * come in */
    if (ours)
        now = MPIDI_PART_rdma_doom_locked(op, c->iter, err);
    /* the credit may have reached the sender all the same (a connection that broke after
     * it went): writes of this iteration may be on their way; the sender answers the FAIL
     * with how many of its writes landed (its COUNT), and the iteration ends when they
     * have, or on the drain's deadline */
    if (now && MPIDI_PART_rdma_drain_locked(op, UINT64_MAX))
        now = 0;
    MPIDI_PART_UNLOCK();
    if (!ours) {
        MPIDI_PART_op_release(op);
        return;
    }
    tell_why(op, c->iter, why);
    if (now)
        MPIDI_PART_rdma_failed(op, -1);
    MPIDI_PART_op_release(op);
}

/* The testing aid MPIR_CVAR_PART_OFI_DEBUG_FAULT: whether mode refuses iteration iter's
 * writes (FAULT_ITER counts iterations: 1 is the first, whatever its number). */
static inline int debug_fault(int mode, MPIDI_PART_iter_t iter)
{
    return MPIR_CVAR_PART_OFI_DEBUG_FAULT == mode &&
        (int64_t) (iter - MPIDI_PART_global.iter0) >= (int64_t) MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER;
}

/* The testing aid's modes 4, 5 and 6 (endpoint's lock held): take write w without posting it;
 * its error completion comes from the next read of the queue (ep_progress). */
static ssize_t inject_error(ofi_ep_t * e, ofi_wctx_t * w)
{
    if (e->ninj == OFI_INJ_MAX)
        return -FI_EAGAIN;
    e->inj[e->ninj++] = w;
    return 0;
}

/* Post write w (part_rdma.h; its endpoint's lock held): -FI_EAGAIN when the endpoint is
 * full. */
static ssize_t post_data(ofi_ep_t * e, MPIDI_PART_op_t * op, int w)
{
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    MPI_Aint off, len;
    uint32_t imm;
    int lane = MPIDI_PART_rdma_write_lane(op, w);

    MPIDI_PART_rdma_wire(op, w, &off, &len, &imm);
    o->wctx[w].op = op;
    o->wctx[w].m = w;
    if (unlikely(MPIDI_PART_rdma_error_of(op) != MPI_SUCCESS))
        return -FI_ECANCELED;   /* the iteration failed: nothing more goes (submit ends it;
                                 * count_posted relies on it) */
    if (unlikely(MPIR_CVAR_PART_OFI_DEBUG_FAULT != 0) &&
        (debug_fault(1, op->st.iter) || debug_fault(2, op->st.iter)))
        return -FI_EIO;         /* testing aid: the provider refused the write */
    if (unlikely(MPIR_CVAR_PART_OFI_DEBUG_FAULT != 0) &&
        (debug_fault(5, op->st.iter) || (debug_fault(6, op->st.iter) && off == 0))) {
        ssize_t rc = inject_error(e, &o->wctx[w]);
        if (rc == 0)
            o->lane[lane].posted++;     /* as the provider took it */
        return rc;
    }
    ssize_t rc = fi_writedata(e->ep, op->buf + off, (size_t) len, o->desc, imm,
                              o->peer_fa_ep[lane], o->raddr + (uint64_t) off, o->rkey,
                              &o->wctx[w].fctx);
    if (rc == 0)
        o->lane[lane].posted++;
    return rc;
}

/* Receiver op's credit for iteration iter into p, ready to post without op: a credit that
 * waits in a full endpoint's queue may outlive its operation (the sender's WITHDRAW or
 * FAIL ends the iteration, the program frees the request; it used to be posted from the
 * freed operation's memory). Its context lives until its completion is read. */
static ssize_t credit_make(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, ofi_pend_t * p)
{
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    ofi_wctx_t *c = MPL_calloc(1, sizeof(*c), MPL_MEM_OTHER);
    if (c == NULL)
        return -FI_ENOMEM;
    c->m = -1;
    c->slot = o->r.slot;
    c->pair = MPIDI_PART_rdma_pair_id(op);
    c->serial = op->serial;
    c->iter = iter;
    c->peer = op->peer;
    p->op = NULL;
    p->c = c;
    p->fa = o->peer_fa;
    p->raddr = o->raddr;
    p->rkey = o->rkey;
    MPIDI_PART_imm_encode(MPIDI_PART_IMM_CREDIT, o->r.peer_slot,
                          MPIDI_PART_rdma_credit_low(&o->r, iter), &p->imm);
    return 0;
}

/* Post credit p (its endpoint's lock held); once posted, p->c is the completion's. */
static ssize_t post_credit(ofi_ep_t * e, ofi_pend_t * p)
{
    if (unlikely(debug_fault(3, p->iter)))
        return -FI_EIO;         /* testing aid: the provider refused the credit */
    if (unlikely(debug_fault(4, p->iter)))
        return inject_error(e, p->c);
    return fi_writedata(e->ep, &ofi.mbox[1], sizeof(uint64_t), ofi.mbox_desc, p->imm, p->fa,
                        p->raddr, p->rkey, &p->c->fctx);
}

static ssize_t post(ofi_ep_t * e, ofi_pend_t * p)
{
    return p->m >= 0 ? post_data(e, p->op, p->m) : post_credit(e, p);
}

/* Post or queue one write (no lock held). A queue that is full defers; an error fails
 * the operation's iteration (its request completes with the error). */
static int submit(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    ofi_pend_t one = {.next = NULL,.op = op,.m = m,.iter = iter };
    ofi_ep_t *e = &ofi.eps[MPIDI_PART_rdma_write_lane(op, m)];
    ssize_t rc = -FI_EAGAIN;

    if (m < 0 && (rc = credit_make(op, iter, &one)) != 0)
        goto fn_fail;
    rc = -FI_EAGAIN;
    EP_LOCK(e);
    if (m >= 0 && unlikely(MPIDI_PART_rdma_error_of(op) != MPI_SUCCESS))
        rc = -FI_ECANCELED;     /* the iteration failed: nothing more goes, nor waits in the
                                 * queue (watch_progress relies on it) */
    else if (e->pend_head == NULL && e->tx_out < ofi.tx_size &&
             !(unlikely(MPIR_CVAR_PART_OFI_DEBUG_FAULT == 2) && m >= 0 &&
               debug_fault(2, op->st.iter)))
        rc = post(e, &one);
    if (rc == 0) {
        e->tx_out++;
    } else if (rc == -FI_EAGAIN) {
        ofi_pend_t *p = MPL_malloc(sizeof(*p), MPL_MEM_OTHER);
        if (p) {
            *p = one;
            if (e->pend_tail)
                e->pend_tail->next = p;
            else
                e->pend_head = p;
            e->pend_tail = p;
            if (m >= 0)
                OFIOP(op)->lane[e - ofi.eps].deferred++;
            MPIDI_PART_PVAR_ADD(OFI_DEFERRED, 1);
            rc = 0;
        } else {
            rc = -FI_ENOMEM;
        }
    }
    EP_UNLOCK(e);
    if (rc == 0)
        return MPI_SUCCESS;
  fn_fail:
    MPL_free(one.c);    /* a credit that did not go */
    if (op_error(op, m >= 0 ? "fi_writedata" : "fi_writedata(credit)", fi_strerror((int) -rc)))
        tell_failure(op, m >= 0 ? op->st.iter : iter);
    MPIDI_PART_rdma_failed(op, m);
    return MPI_SUCCESS;
}

static int ofi_send(MPIDI_PART_op_t * op, int m)
{
    return submit(op, m, 0);    /* part_ofi_writes: counted by progress as they complete */
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
    int32_t m;
    int tell;                   /* an error completion that recorded op's error */
} ofi_event_t;

/* Read one endpoint's completion queue and post the writes that waited for room. */
static int ep_progress(ofi_ep_t * e)
{
    int mpi_errno = MPI_SUCCESS;
    struct fi_cq_data_entry cqe[OFI_CQ_BATCH];
    ofi_event_t ev[OFI_CQ_BATCH];
    int nremote = 0, nev = 0;
    uint32_t imms[OFI_CQ_BATCH];
    ofi_wctx_t *errw = NULL, *credit = NULL;   /* an error completion; a failed credit's */
    char detail[160];

    unsigned seq = __atomic_load_n(&e->reads, __ATOMIC_RELAXED);
    if ((seq & 1) || !__atomic_compare_exchange_n(&e->reads, &seq, seq + 1, 0,
                                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        MPIDI_PART_rdma_reader_busy();
        return MPI_SUCCESS;     /* another thread reads this queue */
    }

    EP_LOCK(e);
    ssize_t n = 0;
    if (unlikely(e->ninj > 0)) {
        errw = e->inj[--e->ninj];       /* the testing aid's error completion */
        snprintf(detail, sizeof(detail), "an error completion injected by "
                 "MPIR_CVAR_PART_OFI_DEBUG_FAULT=%d", MPIR_CVAR_PART_OFI_DEBUG_FAULT);
    } else {
        n = fi_cq_read(e->cq, cqe, OFI_CQ_BATCH);
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        if (fi_cq_readerr(e->cq, &err, 0) == 1 && !(err.flags & FI_REMOTE_WRITE)) {
            const char *d = fi_cq_strerror(e->cq, err.prov_errno, err.err_data, NULL, 0);
            snprintf(detail, sizeof(detail), "%s", d ? d : fi_strerror(err.err));
            errw = err.op_context;
        }
        n = 0;
    }
    if (errw) {
        e->tx_out--;
        if (errw->op) {
            OFIOP(errw->op)->lane[e - ofi.eps].wfailed++;
            ev[nev].op = errw->op;
            ev[nev].m = errw->m;
            ev[nev].tell = op_error(errw->op, "a write's completion", detail);
            nev++;
        } else {
            credit = errw;      /* its receiver fails below, without this lock */
        }
    }
    for (ssize_t i = 0; i < n; i++) {
        if (cqe[i].flags & FI_REMOTE_CQ_DATA) {
            imms[nremote++] = (uint32_t) cqe[i].data;
        } else {
            ofi_wctx_t *w = cqe[i].op_context;
            e->tx_out--;
            if (w && w->op) {
                OFIOP(w->op)->lane[e - ofi.eps].wok++;
                ev[nev].op = w->op;
                ev[nev].m = w->m;
                ev[nev].tell = 0;
                nev++;
            } else if (unlikely(MPIR_CVAR_PART_OFI_DEBUG_FAULT == 7) && w && credit == NULL &&
                       debug_fault(7, w->iter)) {
                credit = w;     /* testing aid: a credit that went, reported failed */
                snprintf(detail, sizeof(detail), "an error completion injected by "
                         "MPIR_CVAR_PART_OFI_DEBUG_FAULT=7");
            } else {
                MPL_free(w);    /* a credit's context */
            }
        }
    }
    /* writes that waited for room; those that fail end their iteration below, as in
     * submit (a data write as done with the error, a credit as every message of the
     * receiver's iteration: its request would otherwise wait forever) */
    ofi_pend_t *failed = NULL;
    while (e->pend_head && e->tx_out < ofi.tx_size) {
        ofi_pend_t *p = e->pend_head;
        ssize_t rc = post(e, p);
        if (rc == -FI_EAGAIN)
            break;
        e->pend_head = p->next;
        if (e->pend_head == NULL)
            e->pend_tail = NULL;
        if (p->m >= 0)
            OFIOP(p->op)->lane[e - ofi.eps].deferred--;
        if (rc == 0) {
            e->tx_out++;
            MPL_free(p);
        } else {
            p->rc = rc;
            if (p->m >= 0)
                p->tell = op_error(p->op, "fi_writedata", fi_strerror((int) -rc));
            p->next = failed;
            failed = p;
        }
    }
    EP_UNLOCK(e);
    if (unlikely(credit != NULL)) {
        credit_failed(credit, "a credit write's completion", detail);
        MPL_free(credit);
    }
    while (failed) {
        ofi_pend_t *p = failed;
        failed = p->next;
        if (p->m < 0) {
            /* a credit that could not go: its receiver's iteration fails, if it is still
             * running (the receiver may have ended it, or be gone) */
            credit_failed(p->c, "fi_writedata(credit)", fi_strerror((int) -p->rc));
            MPL_free(p->c);
            MPL_free(p);
            continue;
        }
        if (p->tell)
            tell_failure(p->op, p->m >= 0 ? p->op->st.iter : p->iter);
        else if (p->m >= 0)
            count_final(p->op); /* the last write of a failed iteration may be this one */
        MPIDI_PART_rdma_failed(p->op, p->m);
        MPL_free(p);
    }

    /* local completions: the sender's write is done (its bytes may be reused); the pvar
     * is added to here, once per batch, not once per write on MPI_Pready */
    if (nev)
        MPIDI_PART_PVAR_ADD(OFI_WRITES, nev);
    for (int i = 0; i < nev; i++) {
        if (unlikely(ev[i].tell))
            tell_failure(ev[i].op, ev[i].op->st.iter);
        else if (unlikely(MPIDI_PART_rdma_error_of(ev[i].op) != MPI_SUCCESS))
            count_final(ev[i].op);      /* before the write is done: op is alive */
        MPIDI_PART_rdma_write_done(ev[i].op, ev[i].m);
    }

    if (nremote > 0)
        mpi_errno = MPIDI_PART_rdma_deliver(imms, nremote);
    __atomic_store_n(&e->reads, seq + 2, __ATOMIC_RELEASE);
    return mpi_errno;
}

/* The watched senders (ofi_peer_failed; no lock held): one whose writes' completions have
 * all been read and whose queued writes have all left the queues (inflight 0: nothing of
 * op can be read or queued any more, its error being set), and whose readers have all
 * handled what they read (each lane's reads counter, taken once inflight was 0, was even,
 * or has moved on since: the reader then inside it is done; one that starts later finds
 * nothing of op's), tells its receiver the final count, ends the iteration the receiver's
 * FAIL doomed and lets op go. No deadline: as for any iteration, the provider reports
 * every posted write's completion, an error one when the connection broke.
 * Ending it at the FAIL instead let the program reuse or free the send buffer under writes
 * still in flight (part_rdma_fault -fault=credit, DEBUG_FAULT=7, over tcp;ofi_rxm: the
 * next iteration's bytes reached the receiver) and free the operation under their
 * completions (libfabric crashed in its completion read). */
static void watch_progress(void)
{
    MPIDI_PART_op_t *list, *keep = NULL, *op;
    if (likely(__atomic_load_n(&ofi.nwatch, __ATOMIC_RELAXED) == 0))
        return;
    MPIDI_PART_LOCK();
    list = ofi.watch;
    ofi.watch = NULL;
    MPIDI_PART_UNLOCK();
    while ((op = list) != NULL) {
        list = OFIOP(op)->watch_next;
        MPIDI_PART_ofiop_t *o = OFIOP(op);
        uint64_t inflight;
        int64_t n = count_posted(op, &inflight);
        int idle = inflight == 0;
        int neps = MPL_atomic_acquire_load_int(&ofi.neps_up);
        if (idle && !o->snapped) {
            for (int v = 0; v < neps && v < OFI_MAX_EPS; v++)
                o->seq_snap[v] = __atomic_load_n(&ofi.eps[v].reads, __ATOMIC_ACQUIRE);
            o->snapped = 1;
        }
        for (int v = 0; idle && v < neps && v < OFI_MAX_EPS; v++)
            idle = !(o->seq_snap[v] & 1) ||
                __atomic_load_n(&ofi.eps[v].reads, __ATOMIC_ACQUIRE) != o->seq_snap[v];
        if (!idle) {
            OFIOP(op)->watch_next = keep;
            keep = op;
            continue;
        }
        tell_count(op, n);
        MPIDI_PART_LOCK();
        int end = o->watch_end;
        o->watch_end = 0;
        o->watched = 0;
        MPIDI_PART_UNLOCK();
        if (end)
            MPIDI_PART_rdma_failed(op, -1);     /* the messages no write completed */
        __atomic_fetch_sub(&ofi.nwatch, 1, __ATOMIC_RELAXED);
        MPIDI_PART_PVAR_SUB(RDMA_BUSY, 1);
        MPIDI_PART_op_release(op);      /* ofi_peer_failed's reference */
    }
    if (keep) {
        MPIDI_PART_LOCK();
        for (op = keep; OFIOP(op)->watch_next; op = OFIOP(op)->watch_next);
        OFIOP(op)->watch_next = ofi.watch;
        ofi.watch = keep;
        MPIDI_PART_UNLOCK();
    }
}

/* Every open endpoint's completion queue (the progress hook). */
int MPIDI_PART_ofi_progress(void)
{
    int mpi_errno = MPI_SUCCESS;
    if (__atomic_load_n(&ofi.state, __ATOMIC_ACQUIRE) != OFI_UP)
        return MPI_SUCCESS;
    int n = MPL_atomic_acquire_load_int(&ofi.neps_up);
    for (int v = 0; v < n; v++) {
        int err = ep_progress(&ofi.eps[v]);
        if (err && mpi_errno == MPI_SUCCESS)
            mpi_errno = err;
    }
    watch_progress();
    return mpi_errno;
}

/* ---- plan -------------------------------------------------------------------------------- */

/* Bytes of endpoint names a PLAN can carry: the ext field, and what the active message
 * of the handshake can carry on this build's netmod and shared memory. */
static size_t names_room(void)
{
    MPI_Aint room = (MPI_Aint) sizeof(((ofi_plan_ext_t *) 0)->names);
    MPI_Aint fixed = (MPI_Aint) (MPIDI_PART_wire_fixed(MPIDI_PART_MSG_PLAN) +
                                 offsetof(ofi_plan_ext_t, names));
    MPI_Aint nm = MPIDI_NM_am_hdr_max_sz() - fixed;
    if (nm < room)
        room = nm;
#ifndef MPIDI_CH4_DIRECT_NETMOD
    MPI_Aint shm = MPIDI_SHM_am_hdr_max_sz() - fixed;
    if (shm < room)
        room = shm;
#endif
    return room > 0 ? (size_t) room : 0;
}

static int ofi_recv_plan(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    const ofi_rts_ext_t *x = (const ofi_rts_ext_t *) op->rts_ext;
    ofi_plan_ext_t *px = (ofi_plan_ext_t *) plan->ext;
    uint64_t raddr = 0;
    int rc, n = plan->plan.nmsgs;

    MPL_COMPILE_TIME_ASSERT(sizeof(ofi_plan_ext_t) <= MPIDI_PART_EXT_MAX);
    if (!ofiop_create(op))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                             "no operation slot or memory left");
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    o->r.peer_slot = x->slot;
    o->r.credit_base = x->credit_base;
    o->raddr = x->mbox_addr;
    o->rkey = x->mbox_key;

    /* endpoints: one per VCI the messages are spread over (as the tag transport would
     * spread them), never more than the sender has, nor names than the PLAN carries */
    int neps = eps_up(MPIDI_PART_vci_count(op->comm, n, x->neps >= 1 ? (int) x->neps : 1));
    size_t room = names_room(), used = 0;
    int named = 0;
    while (named < neps && used + 2 + ofi.eps[named].addrlen <= room) {
        uint16_t len = (uint16_t) ofi.eps[named].addrlen;
        memcpy(px->names + used, &len, 2);
        memcpy(px->names + used + 2, ofi.eps[named].addr, len);
        used += 2 + len;
        named++;
    }
    MPIR_ERR_CHKANDJUMP1(named < 1, mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                         "the endpoint name does not fit the plan message");
    px->neps = named;
    px->vci_parts = op->peer_thread_parts > 0 ? op->peer_partitions : op->partitions;
    px->vci_ppt = op->peer_thread_parts > 0 ? op->peer_thread_parts : op->thread_parts;
    px->names_len = (uint32_t) used;
    mpi_errno = MPIDI_PART_rdma_map(op, n, named, px->vci_parts, px->vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);

    DOM_LOCK();
    o->peer_fa = peer_addr(x->addr, x->addrlen);
    rc = mr_register(op->buf, (size_t) op->total_bytes, FI_REMOTE_WRITE | FI_WRITE, &o->mr,
                     &o->desc, &px->rkey, &raddr);
    DOM_UNLOCK();
    if (o->mr)
        MPIDI_PART_PVAR_ADD(OFI_MRS, 1);        /* before any failure: ofi_release counts
                                                 * it off (it went below 0 when the address
                                                 * failed after the registration) */
    MPIR_ERR_CHKANDJUMP1(o->peer_fa == FI_ADDR_NOTAVAIL, mpi_errno, MPI_ERR_OTHER,
                         "**partofiop", "**partofiop %s", "fi_av_insert of the sender failed");
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                         fi_strerror(-rc));
    MPIDI_PART_PVAR_ADD(OFI_OPS, 1);
    px->magic = OFI_EXT_MAGIC;
    px->slot = o->r.slot;
    px->raddr = raddr;
    plan->ext_len = (int32_t) (offsetof(ofi_plan_ext_t, names) + used);

  fn_exit:
    return mpi_errno;
  fn_fail:
    MPIDI_PART_rdma_release(op);
    goto fn_exit;
}

static int ofi_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_ofiop_t *o = OFIOP(op);
    ofi_plan_ext_t px;
    int n = plan->plan.nmsgs, rc = 0, bad = 0;
    size_t at = 0;

    MPIR_ERR_CHKANDJUMP2(o == NULL || plan->ext_len < (int) offsetof(ofi_plan_ext_t, names) ||
                         plan->ext_len > (int) sizeof(px) || n > (int) MPIDI_PART_IMM_MSGS,
                         mpi_errno, MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                         plan->transport, n);
    memcpy(&px, plan->ext, plan->ext_len);
    /* the receiver never plans more endpoints than we announced */
    MPIR_ERR_CHKANDJUMP2(px.magic != OFI_EXT_MAGIC || px.slot >= MPIDI_PART_IMM_SLOTS ||
                         px.neps < 1 || px.neps > ofi.max_eps || px.vci_parts < 1 ||
                         px.vci_ppt < 0 ||
                         plan->ext_len != (int) (offsetof(ofi_plan_ext_t, names) + px.names_len),
                         mpi_errno, MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                         plan->transport, n);
    o->wctx = MPL_calloc(MPIDI_PART_RDMA_NWRITES(op), sizeof(ofi_wctx_t), MPL_MEM_OTHER);
    o->r.tosend = MPL_malloc(n * sizeof(int32_t), MPL_MEM_OTHER);
    o->peer_fa_ep = MPL_malloc(px.neps * sizeof(fi_addr_t), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(o->wctx == NULL || o->r.tosend == NULL || o->peer_fa_ep == NULL,
                        mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIR_ERR_CHKANDJUMP1(eps_up(px.neps) < px.neps, mpi_errno, MPI_ERR_OTHER, "**partofiop",
                         "**partofiop %s", ofi.why);
    mpi_errno = MPIDI_PART_rdma_map(op, n, px.neps, px.vci_parts, px.vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);
    o->r.peer_slot = px.slot;
    o->raddr = px.raddr;
    o->rkey = px.rkey;
    DOM_LOCK();
    for (int v = 0; v < px.neps && !bad; v++) {
        uint16_t len;
        if (at + 2 > px.names_len) {
            bad = 1;
            break;
        }
        memcpy(&len, px.names + at, 2);
        if (len > OFI_MAX_ADDR || at + 2 + len > px.names_len) {
            bad = 1;
            break;
        }
        o->peer_fa_ep[v] = peer_addr(px.names + at + 2, len);
        bad = (o->peer_fa_ep[v] == FI_ADDR_NOTAVAIL) ? 2 : 0;
        at += 2 + len;
    }
    if (!bad && ofi.mr_local) {
        uint64_t key, ra;
        rc = mr_register(op->buf, (size_t) op->total_bytes, FI_WRITE, &o->mr, &o->desc, &key,
                         &ra);
    }
    DOM_UNLOCK();
    if (o->mr)
        MPIDI_PART_PVAR_ADD(OFI_MRS, 1);        /* ofi_release counts it off */
    MPIR_ERR_CHKANDJUMP2(bad == 1, mpi_errno, MPI_ERR_OTHER, "**partbadplan",
                         "**partbadplan %d %d", plan->transport, n);
    MPIR_ERR_CHKANDJUMP1(bad == 2, mpi_errno, MPI_ERR_OTHER,
                         "**partofiop", "**partofiop %s", "fi_av_insert of the receiver failed");
    MPIR_ERR_CHKANDJUMP1(rc, mpi_errno, MPI_ERR_OTHER, "**partofiop", "**partofiop %s",
                         fi_strerror(-rc));
    MPIDI_PART_PVAR_ADD(OFI_OPS, 1);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPI_Parrived found message m not done: read the completion queue of its endpoint; if
 * that did not bring it, also endpoint 0 (credits that release other operations' writes),
 * VCI 0 (the handshake's active messages arrive there) and the engine's handshake work,
 * so that a thread that only polls MPI_Parrived still moves every other operation. */
static int ofi_progress_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter, int *done)
{
    int v = MPIDI_PART_rdma_lane(op->rdma, m);
    MPIDI_PART_rdma_reads_enter();
    int mpi_errno = ep_progress(&ofi.eps[v]);
    if (mpi_errno == MPI_SUCCESS && !MPIDI_PART_st_msg_is_done_at(&op->st, m, iter)) {
        if (v != 0)
            mpi_errno = ep_progress(&ofi.eps[0]);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = MPIDI_PART_rdma_progress_rest();
        watch_progress();       /* one load when no sender is watched */
    }
    *done = MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
    MPIDI_PART_rdma_reads_leave();
    return mpi_errno;
}

const MPIDI_PART_transport_t MPIDI_PART_ofi_transport = {
    .name = "ofi",
    .id = MPIDI_PART_TRANSPORT_OFI,
    .recv_plan = ofi_recv_plan,
    .send_plan = ofi_send_plan,
    .always_armed = MPIDI_PART_rdma_always_armed,
    .recv_arm = ofi_recv_arm,
    .send = ofi_send,
    .ctl = MPIDI_PART_rdma_ctl,
    .test_msg = MPIDI_PART_rdma_test_msg,
    .poll = MPIDI_PART_rdma_poll,
    .progress_msg = ofi_progress_msg,
    .iter_reset = MPIDI_PART_rdma_iter_reset,
    .free = ofi_release,
};
