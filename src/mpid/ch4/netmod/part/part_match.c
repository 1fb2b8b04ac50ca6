/*
 * part_match.c: the handshake. RTS/PLAN/CTS active messages, matching in MPI order, the
 * receiver's plan decision, and the progress hook that does everything the active-message
 * handler may not (the handler only queues; MPI calls happen in the hook, without locks).
 */
#include "part_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_AGGR_SIZE
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Merge consecutive wire messages of a partitioned operation while the merged message
        stays within this many bytes. 0 disables merging: one wire message per
        gcd(send partitions, receive partitions). The receiver's value decides, when it
        matches the sender (MPI_Precv_init or the sender's announcement, whichever is later).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

int MPIDI_PART_send_hdr(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    CH4_CALL(am_send_hdr(op->peer, op->comm, MPIDI_PART_global.am_id, hdr, sizeof(*hdr), 0, 0),
             op->is_local, mpi_errno);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    return mpi_errno;
}

/* Runs inside netmod/shm progress with VCI 0 locked: only queue the message. */
int MPIDI_PART_am_handler(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                          MPIR_Request ** req)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_inbox_t *e = MPL_malloc(sizeof(*e), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(e == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    memcpy(&e->hdr, am_hdr, sizeof(e->hdr));
    e->next = NULL;

    MPIDI_PART_LOCK();
    if (MPIDI_PART_global.inbox_tail)
        MPIDI_PART_global.inbox_tail->next = e;
    else
        MPIDI_PART_global.inbox_head = e;
    MPIDI_PART_global.inbox_tail = e;
    MPL_atomic_release_store_int(&MPIDI_PART_global.work, 1);
    MPIDI_PART_UNLOCK();

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_op_unref(MPIDI_PART_op_t * op)
{
    if (--op->refs > 0)
        return 0;
    if (op->all_prev)
        op->all_prev->all_next = op->all_next;
    else
        MPIDI_PART_global.all = op->all_next;
    if (op->all_next)
        op->all_next->all_prev = op->all_prev;
    return 1;
}

void MPIDI_PART_op_destroy(MPIDI_PART_op_t * op)
{
    if (op->wreq) {
        for (int m = 0; m < op->plan.nmsgs; m++)
            if (op->wreq[m])
                MPIR_Request_free(op->wreq[m]);
    }
    MPIDI_PART_vci_release(op);
    MPIR_Comm_release(op->comm);
    MPL_free(op->wreq);
    MPL_free(op->counted);
    MPL_free(op->cntr);
    MPL_free(op->pending);
    MPL_free(op->ready);
    MPL_free(op);
}

/* Receiver: the sender's RTS and our MPI_Precv_init have met (no lock held). Decide the
 * plan, answer the sender once, and start the iteration if the user already did. */
int MPIDI_PART_recv_matched(MPIDI_PART_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_hdr_t hdr;
    MPIR_Request *req = op->req;

    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = MPIDI_PART_MSG_PLAN;
    hdr.sop = op->sop;
    hdr.bytes = op->total_bytes;

    /* as for point-to-point, the status counts what the sender sends */
    MPIR_STATUS_SET_COUNT(req->status, op->peer_bytes);
    req->status.MPI_SOURCE = op->peer;
    req->status.MPI_TAG = op->tag;
    req->status.MPI_ERROR = MPI_SUCCESS;

    if (op->peer_bytes > op->total_bytes) {
        op->error = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_TRUNCATE, "**partsizemismatch",
                                         "**partsizemismatch %d %d %d %d", op->peer,
                                         (int) op->peer_bytes, op->comm->rank,
                                         (int) op->total_bytes);
        req->status.MPI_ERROR = op->error;
        hdr.status = MPIDI_PART_PLAN_STATUS_MISMATCH;
        op->plan.nmsgs = 0;
    } else {
        MPIDI_PART_LOCK();
        int id = MPIDI_PART_id_get(1);
        MPIDI_PART_UNLOCK();

        /* A receive buffer larger than the send is allowed, as for point-to-point: then the
         * partition boundaries of the two sides do not line up, and the whole transfer is
         * one wire message that fills the front of the receive buffer. */
        int equal = (op->peer_bytes == op->total_bytes);
        int rc = MPIDI_PART_plan_make(equal ? op->peer_partitions : 1, equal ? op->partitions : 1,
                                      op->peer_bytes, MPIR_CVAR_PART_AGGR_SIZE,
                                      1 << MPIDI_PART_global.layout.msg_bits, &op->plan);
        MPIR_ERR_CHKANDJUMP2(rc != MPIDI_PART_PLAN_OK, mpi_errno, MPI_ERR_OTHER, "**partplan",
                             "**partplan %d %d", op->peer_partitions, op->partitions);
        op->tag_id = id;
        op->path = (id >= 0) ? MPIDI_PART_PATH_TAG : MPIDI_PART_PATH_CTS;
        if (op->path == MPIDI_PART_PATH_CTS)
            MPIDI_PART_PVAR_ADD(cts_path_ops, 1);
        mpi_errno = MPIDI_PART_alloc_msgs(op);
        MPIR_ERR_CHECK(mpi_errno);
        /* VCIs: by the sender's thread layout if it gave one (its threads send), else by ours,
         * else round-robin */
        hdr.vci_n = MPIDI_PART_vci_count(op->comm, op->plan.nmsgs);
        hdr.vci_parts = op->peer_thread_parts > 0 ? op->peer_partitions : op->partitions;
        hdr.vci_ppt = op->peer_thread_parts > 0 ? op->peer_thread_parts : op->thread_parts;
        mpi_errno = MPIDI_PART_vci_setup(op, hdr.vci_n, hdr.vci_parts, hdr.vci_ppt);
        MPIR_ERR_CHECK(mpi_errno);
        hdr.status = MPIDI_PART_PLAN_STATUS_OK;
        hdr.plan = op->plan;
        hdr.path = op->path;
        hdr.tag_id = id;
    }
    mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
    MPIR_ERR_CHECK(mpi_errno);

    MPIDI_PART_LOCK();
    int start_now = op->started_unplanned;
    op->started_unplanned = 0;
    MPL_atomic_release_store_int(&op->plan_ready, 1);
    MPIDI_PART_UNLOCK();
    if (start_now) {
        if (op->error) {
            MPIDI_PART_complete_now(req, 1);
        } else {
            mpi_errno = MPIDI_PART_recv_start(op);
            MPIR_ERR_CHECK(mpi_errno);
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Receiver: start an iteration (from MPIDI_PART_start, or the hook once planned). */
int MPIDI_PART_recv_start(MPIDI_PART_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req = op->req;
    int id = -1;

    MPIDI_PART_LOCK();
    op->active = 1;
    if (!MPL_atomic_acquire_load_int(&op->plan_ready)) {
        if (!op->started_unplanned) {
            op->started_unplanned = 1;
            MPIR_cc_set(req->cc_ptr, 1);
        }
        MPIDI_PART_UNLOCK();
        goto fn_exit;
    }
    if (op->error) {
        MPIDI_PART_UNLOCK();
        req->status.MPI_ERROR = op->error;
        MPIR_cc_set(req->cc_ptr, 0);
        goto fn_exit;
    }
    if (op->path == MPIDI_PART_PATH_TAG) {
        id = op->tag_id;
    } else {
        id = MPIDI_PART_id_get(0);
        if (id < 0) {
            /* wait for a lease; the hook serves waiters in order */
            op->lease_wait = 1;
            op->next = NULL;
            if (MPIDI_PART_global.lease_tail)
                MPIDI_PART_global.lease_tail->next = op;
            else
                MPIDI_PART_global.lease_head = op;
            MPIDI_PART_global.lease_tail = op;
            MPL_atomic_release_store_int(&MPIDI_PART_global.work, 1);
        } else {
            op->iter_id = id;
            op->lnext = MPIDI_PART_global.leased;
            MPIDI_PART_global.leased = op;
            MPL_atomic_release_store_int(&MPIDI_PART_global.work, 1);
        }
    }
    MPIDI_PART_UNLOCK();

    /* the placeholder keeps the request incomplete until every receive is posted */
    if (MPIR_cc_get(*req->cc_ptr) == 0)
        MPIR_cc_set(req->cc_ptr, 1);
    if (id < 0)
        goto fn_exit;
    mpi_errno = MPIDI_PART_post_recvs(op, id);
    MPIR_ERR_CHECK(mpi_errno);
    if (op->path == MPIDI_PART_PATH_CTS) {
        MPIDI_PART_hdr_t hdr;
        memset(&hdr, 0, sizeof(hdr));
        hdr.kind = MPIDI_PART_MSG_CTS;
        hdr.sop = op->sop;
        hdr.tag_id = id;
        mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Hand free ids to receivers waiting for a lease, and take back the leases of completed
 * iterations (progress hook). */
int MPIDI_PART_serve_leases(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.leased; *pp;) {
        MPIDI_PART_op_t *op = *pp;
        int done = 1;
        for (int m = 0; m < op->plan.nmsgs && done; m++)
            done = op->wreq[m] && MPIR_Request_is_complete(op->wreq[m]);
        if (done) {
            *pp = op->lnext;
            MPIDI_PART_id_put(op->iter_id, 0);
            op->iter_id = -1;
        } else {
            pp = &op->lnext;
        }
    }
    MPIDI_PART_UNLOCK();

    while (1) {
        MPIDI_PART_op_t *op = NULL;
        MPIDI_PART_LOCK();
        if (MPIDI_PART_global.lease_head) {
            int id = MPIDI_PART_id_get(0);
            if (id >= 0) {
                op = MPIDI_PART_global.lease_head;
                MPIDI_PART_global.lease_head = op->next;
                if (!MPIDI_PART_global.lease_head)
                    MPIDI_PART_global.lease_tail = NULL;
                op->lease_wait = 0;
                op->iter_id = id;
                op->lnext = MPIDI_PART_global.leased;
                MPIDI_PART_global.leased = op;
            }
        }
        MPIDI_PART_UNLOCK();
        if (!op)
            break;
        mpi_errno = MPIDI_PART_post_recvs(op, op->iter_id);
        MPIR_ERR_CHECK(mpi_errno);
        MPIDI_PART_hdr_t hdr;
        memset(&hdr, 0, sizeof(hdr));
        hdr.kind = MPIDI_PART_MSG_CTS;
        hdr.sop = op->sop;
        hdr.tag_id = op->iter_id;
        mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int handle_rts(MPIDI_PART_inbox_t * e)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = NULL, *prev = NULL;
    int last = 0;

    MPIDI_PART_LOCK();
    for (op = MPIDI_PART_global.posted_head; op; prev = op, op = op->next) {
        if (op->context_id == e->hdr.context_id && op->peer == e->hdr.src_rank &&
            op->tag == e->hdr.tag)
            break;
    }
    if (op) {
        if (prev)
            prev->next = op->next;
        else
            MPIDI_PART_global.posted_head = op->next;
        if (MPIDI_PART_global.posted_tail == op)
            MPIDI_PART_global.posted_tail = prev;
        op->sop = e->hdr.sop;
        op->peer_partitions = e->hdr.partitions;
        op->peer_thread_parts = e->hdr.thread_parts;
        op->peer_bytes = e->hdr.bytes;
    } else {
        e->next = NULL;
        if (MPIDI_PART_global.unexp_tail)
            MPIDI_PART_global.unexp_tail->next = e;
        else
            MPIDI_PART_global.unexp_head = e;
        MPIDI_PART_global.unexp_tail = e;
        e = NULL;
    }
    MPIDI_PART_UNLOCK();
    if (!op)
        return MPI_SUCCESS;
    MPL_free(e);

    if (op->freed) {
        /* freed before its sender announced itself: release the sender, send nothing */
        MPIDI_PART_hdr_t hdr;
        memset(&hdr, 0, sizeof(hdr));
        hdr.kind = MPIDI_PART_MSG_PLAN;
        hdr.sop = op->sop;
        hdr.status = MPIDI_PART_PLAN_STATUS_FREED;
        mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
    } else {
        mpi_errno = MPIDI_PART_recv_matched(op);
    }
    MPIDI_PART_LOCK();
    last = MPIDI_PART_op_unref(op);     /* the posted queue's reference */
    MPIDI_PART_UNLOCK();
    if (last)
        MPIDI_PART_op_destroy(op);
    return mpi_errno;
}

int MPIDI_PART_progress(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;

    if (!MPL_atomic_acquire_load_int(&MPIDI_PART_global.work))
        return MPI_SUCCESS;
    /* no re-entry (an MPI call below may poll progress), and one thread at a time */
    if (MPL_atomic_cas_int(&MPIDI_PART_global.in_hook, 0, 1) != 0)
        return MPI_SUCCESS;

    MPIDI_PART_LOCK();
    MPIDI_PART_inbox_t *e = MPIDI_PART_global.inbox_head;
    MPIDI_PART_global.inbox_head = MPIDI_PART_global.inbox_tail = NULL;
    MPIDI_PART_UNLOCK();

    while (e) {
        MPIDI_PART_inbox_t *next = e->next;
        MPIDI_PART_op_t *op = (MPIDI_PART_op_t *) (uintptr_t) e->hdr.sop;
        *made_progress = 1;
        switch (e->hdr.kind) {
            case MPIDI_PART_MSG_RTS:
                mpi_errno = handle_rts(e);      /* takes e */
                e = NULL;
                break;
            case MPIDI_PART_MSG_PLAN:{
                    mpi_errno = MPIDI_PART_install_send_plan(op, &e->hdr);
                    MPIDI_PART_LOCK();
                    int last = MPIDI_PART_op_unref(op); /* the handshake reference */
                    MPIDI_PART_UNLOCK();
                    if (last)
                        MPIDI_PART_op_destroy(op);
                    break;
                }
            case MPIDI_PART_MSG_CTS:
                mpi_errno = MPIDI_PART_cts_arrived(op, e->hdr.tag_id);
                break;
            default:
                MPIR_Assert(0);
        }
        MPL_free(e);
        e = next;
        MPIR_ERR_CHECK(mpi_errno);
    }

    mpi_errno = MPIDI_PART_serve_leases();
    MPIR_ERR_CHECK(mpi_errno);
    uint64_t vci_mask;
    if (MPIDI_PART_poll_completions(&vci_mask))
        *made_progress = 1;
    if (vci_mask) {
        /* a waiter polls only its request's VCI: move the VCIs our messages are on */
        mpi_errno = MPIDI_PART_vci_progress(vci_mask, 0);
        MPIR_ERR_CHECK(mpi_errno);
    }

    MPIDI_PART_LOCK();
    MPL_atomic_release_store_int(&MPIDI_PART_global.work,
                                 MPIDI_PART_global.inbox_head || MPIDI_PART_global.leased ||
                                 MPIDI_PART_global.lease_head || MPIDI_PART_global.polling);
    MPIDI_PART_UNLOCK();

  fn_exit:
    MPL_atomic_release_store_int(&MPIDI_PART_global.in_hook, 0);
    return mpi_errno;
  fn_fail:
    /* keep what was not handled for the next call */
    while (e) {
        MPIDI_PART_inbox_t *next = e->next;
        MPL_free(e);
        e = next;
    }
    goto fn_exit;
}
