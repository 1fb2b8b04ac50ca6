/*
 * part_req.c: the partitioned-request entry points called by ch4 (part_ch4.h):
 * init, start, ready, arrived and free. The hot paths are MPIDI_PART_pready_range (one
 * atomic swap and one atomic decrement per partition) and MPIDI_PART_parrived (a flag read
 * when the partition's wire message has arrived).
 */
#include "part_impl.h"

/* The info key mpich_part_thread_partitions: how many consecutive partitions one thread
 * readies (sender) or polls (receiver). 0 when absent; an error unless 1..partitions. */
static int thread_parts_hint(MPIR_Info * info, int partitions, int *value)
{
    int mpi_errno = MPI_SUCCESS, flag = 0;
    char str[MPI_MAX_INFO_VAL + 1], *end;

    *value = 0;
    if (info == NULL)
        goto fn_exit;
    mpi_errno = MPIR_Info_get_impl(info, "mpich_part_thread_partitions", MPI_MAX_INFO_VAL, str,
                                   &flag);
    MPIR_ERR_CHECK(mpi_errno);
    if (!flag)
        goto fn_exit;
    long v = strtol(str, &end, 10);
    MPIR_ERR_CHKANDJUMP2(end == str || *end != '\0' || v < 1 || v > partitions, mpi_errno,
                         MPI_ERR_INFO_VALUE, "**partthreadhint", "**partthreadhint %s %d", str,
                         partitions);
    *value = (int) v;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int op_create(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype, int peer,
                     int tag, MPIR_Comm * comm, MPIR_Info * info, MPIR_Request_kind_t kind,
                     MPIR_Request ** request, MPIDI_PART_op_t ** op_out)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req = NULL;
    MPIDI_PART_op_t *op = NULL;
    int thread_parts;

    MPIR_ERR_CHKANDJUMP1(count < 0, mpi_errno, MPI_ERR_COUNT, "**partcount", "**partcount %d",
                         (int) count);
    mpi_errno = thread_parts_hint(info, partitions, &thread_parts);
    MPIR_ERR_CHECK(mpi_errno);

    MPIDI_CH4_REQUEST_CREATE(req, kind, 0, 1);
    MPIR_ERR_CHKANDSTMT(req == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
    op = MPL_calloc(1, sizeof(*op), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDSTMT(op == NULL, mpi_errno, MPI_ERR_OTHER, goto fn_fail, "**nomem");

    MPIR_Comm_add_ref(comm);
    req->comm = comm;
    MPIR_Datatype_add_ref_if_not_builtin(datatype);
    MPIDI_PART_REQUEST(req, buffer) = buf;
    MPIDI_PART_REQUEST(req, count) = count;
    MPIDI_PART_REQUEST(req, datatype) = datatype;
    if (kind == MPIR_REQUEST_KIND__PART_SEND) {
        MPIDI_PART_REQUEST(req, u.send.dest) = peer;
    } else {
        MPIDI_PART_REQUEST(req, u.recv.source) = peer;
        MPIDI_PART_REQUEST(req, u.recv.tag) = tag;
        MPIDI_PART_REQUEST(req, u.recv.context_id) = comm->recvcontext_id;
    }
    req->u.part.partitions = partitions;
    MPIR_Part_request_inactivate(req);
    MPIR_cc_set(req->cc_ptr, 0);        /* inactive requests are complete */

    MPI_Aint extent, size;
    MPIR_Datatype_get_extent_macro(datatype, extent);
    MPIR_Datatype_get_size_macro(datatype, size);

    op->req = req;
    op->is_send = (kind == MPIR_REQUEST_KIND__PART_SEND);
    op->refs = 1;
    op->thread_parts = thread_parts;
    op->nvcis = 1;
    op->buf = buf;
    op->count = count;
    op->datatype = datatype;
    op->part_extent = extent * count;
    op->partitions = partitions;
    op->total_bytes = size * count * partitions;
    op->peer = peer;
    op->tag = tag;
    op->context_id = comm->recvcontext_id;
    op->comm = comm;
    MPIR_Comm_add_ref(comm);    /* the op may outlive the request (see README, freeing) */
    op->tag_id = -1;
    op->iter_id = -1;
    MPL_atomic_relaxed_store_int(&op->plan_ready, 0);
#ifndef MPIDI_CH4_DIRECT_NETMOD
    if (peer != MPI_PROC_NULL)
        op->is_local = MPIDI_av_is_local(MPIDIU_comm_rank_to_av(comm, peer));
    MPIDI_REQUEST(req, is_local) = op->is_local;
#endif
    if (op->is_send) {
        op->ready = MPL_calloc(partitions, sizeof(MPL_atomic_int_t), MPL_MEM_OTHER);
        MPIR_ERR_CHKANDSTMT(op->ready == NULL, mpi_errno, MPI_ERR_OTHER, goto fn_fail, "**nomem");
    }
    if (peer == MPI_PROC_NULL) {
        op->path = MPIDI_PART_PATH_NULL;
        MPL_atomic_release_store_int(&op->plan_ready, 1);
    }

    MPIDI_PART_LOCK();
    if (!MPIDI_PART_global.ids_ready)
        mpi_errno = MPIDI_PART_ids_init();      /* both sides encode tags with the layout */
    op->all_next = MPIDI_PART_global.all;
    if (op->all_next)
        op->all_next->all_prev = op;
    MPIDI_PART_global.all = op;
    MPIDI_PART_UNLOCK();
    MPIR_ERR_CHECK(mpi_errno);

    MPIDI_PART_OP(req) = op;
    *request = req;
    *op_out = op;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (op) {
        MPL_free(op->ready);
        MPL_free(op);
    }
    if (req) {
        MPIDI_PART_OP(req) = NULL;
        MPIR_Request_free(req);
    }
    goto fn_exit;
}

int MPIDI_PART_psend_init(const void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                          int dest, int tag, MPIR_Comm * comm, MPIR_Info * info,
                          MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op;

    mpi_errno = op_create((void *) buf, partitions, count, datatype, dest, tag, comm, info,
                          MPIR_REQUEST_KIND__PART_SEND, request, &op);
    MPIR_ERR_CHECK(mpi_errno);
    if (dest == MPI_PROC_NULL)
        goto fn_exit;

    /* announce ourselves; the receiver's PLAN names this op, so it holds a reference */
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = MPIDI_PART_MSG_RTS;
    hdr.src_rank = comm->rank;
    hdr.tag = tag;
    hdr.context_id = comm->context_id;
    hdr.sop = (uint64_t) (uintptr_t) op;
    hdr.partitions = partitions;
    hdr.thread_parts = op->thread_parts;
    hdr.bytes = op->total_bytes;
    op->refs++;
    mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_precv_init(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                          int source, int tag, MPIR_Comm * comm, MPIR_Info * info,
                          MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op;
    MPIR_Request *req;

    mpi_errno = op_create(buf, partitions, count, datatype, source, tag, comm, info,
                          MPIR_REQUEST_KIND__PART_RECV, request, &op);
    MPIR_ERR_CHECK(mpi_errno);
    req = *request;
    if (source == MPI_PROC_NULL) {
        MPIR_Status_set_procnull(&req->status);
        goto fn_exit;
    }

    /* match the announcements in MPI order: the first unexpected RTS with our key wins */
    MPIDI_PART_inbox_t *rts = NULL, *prev = NULL;
    MPIDI_PART_LOCK();
    for (MPIDI_PART_inbox_t * e = MPIDI_PART_global.unexp_head; e; prev = e, e = e->next) {
        if (e->hdr.context_id == op->context_id && e->hdr.src_rank == source &&
            e->hdr.tag == tag) {
            rts = e;
            if (prev)
                prev->next = e->next;
            else
                MPIDI_PART_global.unexp_head = e->next;
            if (MPIDI_PART_global.unexp_tail == e)
                MPIDI_PART_global.unexp_tail = prev;
            break;
        }
    }
    if (!rts) {
        op->refs++;     /* the posted queue's */
        op->next = NULL;
        if (MPIDI_PART_global.posted_tail)
            MPIDI_PART_global.posted_tail->next = op;
        else
            MPIDI_PART_global.posted_head = op;
        MPIDI_PART_global.posted_tail = op;
    }
    MPIDI_PART_UNLOCK();

    if (rts) {
        op->sop = rts->hdr.sop;
        op->peer_partitions = rts->hdr.partitions;
        op->peer_thread_parts = rts->hdr.thread_parts;
        op->peer_bytes = rts->hdr.bytes;
        MPL_free(rts);
        mpi_errno = MPIDI_PART_recv_matched(op);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_start(MPIR_Request * request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);

    MPIDI_PART_reset_iteration(op);
    if (op->path == MPIDI_PART_PATH_NULL) {
        MPIR_cc_set(request->cc_ptr, 0);
        goto activate;
    }

    if (op->is_send) {
        MPIDI_PART_LOCK();
        op->active = 1;
        if (!MPL_atomic_acquire_load_int(&op->plan_ready)) {
            /* the receiver's answer has not come: Pready only flags partitions and the
             * progress hook sends when the plan arrives */
            MPIR_cc_set(request->cc_ptr, 1);
            op->started_unplanned = 1;
        } else if (op->error) {
            request->status.MPI_ERROR = op->error;
            MPIR_cc_set(request->cc_ptr, 0);
        } else {
            MPIR_cc_set(request->cc_ptr, op->plan.nmsgs);
            if (op->path == MPIDI_PART_PATH_CTS) {
                if (op->cts_queued) {
                    op->iter_id = op->cts_queue[0];
                    op->cts_queue[0] = op->cts_queue[1];
                    op->cts_queued--;
                } else {
                    op->iter_id = -1;
                }
            }
        }
        MPIDI_PART_UNLOCK();
    } else {
        mpi_errno = MPIDI_PART_recv_start(op);
        MPIR_ERR_CHECK(mpi_errno);
    }

  activate:
    MPIR_Part_request_activate(request);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Mark local partition p ready; returns the message that became complete, or -1. Only for
 * a planned operation. */
static inline int ready_one(MPIDI_PART_op_t * op, int p, int *mpi_errno)
{
    if (MPL_atomic_swap_int(&op->ready[p], 1)) {
        *mpi_errno = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                          MPI_ERR_ARG, "**partreadytwice", "**partreadytwice %d",
                                          p);
        return -1;
    }
    int m = MPIDI_PART_plan_msg_of(&op->plan, op->partitions, p);
    if (MPL_atomic_fetch_sub_int(&op->cntr[m], 1) == 1)
        return m;
    return -1;
}

/* Slow path: before the plan is known, or on the CTS path. Runs under the lock and sends
 * what became sendable after dropping it. */
static int pready_slow(MPIDI_PART_op_t * op, int n, int lo, const int *list)
{
    int mpi_errno = MPI_SUCCESS, err = MPI_SUCCESS;
    int batch[64], nbatch = 0;

    MPIDI_PART_LOCK();
    int planned = MPL_atomic_acquire_load_int(&op->plan_ready);
    for (int i = 0; i < n && err == MPI_SUCCESS; i++) {
        int p = list ? list[i] : lo + i;
        if (!planned) {
            if (MPL_atomic_swap_int(&op->ready[p], 1))
                err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                           MPI_ERR_ARG, "**partreadytwice",
                                           "**partreadytwice %d", p);
            continue;
        }
        int m = ready_one(op, p, &err);
        if (m < 0)
            continue;
        if (op->path == MPIDI_PART_PATH_TAG || op->iter_id >= 0) {
            batch[nbatch++] = m;
            if (nbatch == 64) {
                MPIDI_PART_UNLOCK();
                for (int j = 0; j < nbatch; j++) {
                    mpi_errno = MPIDI_PART_send_msg(op, batch[j]);
                    MPIR_ERR_CHECK(mpi_errno);
                }
                nbatch = 0;
                MPIDI_PART_LOCK();
            }
        } else {
            op->pending[m] = 1;
            op->npending++;
        }
    }
    MPIDI_PART_UNLOCK();
    for (int j = 0; j < nbatch; j++) {
        mpi_errno = MPIDI_PART_send_msg(op, batch[j]);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = err;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int pready(MPIR_Request * request, int n, int lo, const int *list)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);

    if (unlikely(!op->is_send || !MPIR_Part_request_is_active(request))) {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_REQUEST, "**partnotactive", "**partnotactive %s",
                             "MPI_Pready");
    }
    if (op->path == MPIDI_PART_PATH_NULL || op->error) {
        /* nothing travels; still flag double readies */
        for (int i = 0; i < n; i++) {
            int p = list ? list[i] : lo + i;
            if (MPL_atomic_swap_int(&op->ready[p], 1))
                MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_ARG, "**partreadytwice",
                                     "**partreadytwice %d", p);
        }
        goto fn_exit;
    }
    if (likely(MPL_atomic_acquire_load_int(&op->plan_ready) && op->path == MPIDI_PART_PATH_TAG)) {
        for (int i = 0; i < n; i++) {
            int p = list ? list[i] : lo + i;
            int m = ready_one(op, p, &mpi_errno);
            MPIR_ERR_CHECK(mpi_errno);
            if (m >= 0) {
                mpi_errno = MPIDI_PART_send_msg(op, m);
                MPIR_ERR_CHECK(mpi_errno);
            }
        }
    } else {
        mpi_errno = pready_slow(op, n, lo, list);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_pready_range(int partition_low, int partition_high, MPIR_Request * request)
{
    return pready(request, partition_high - partition_low + 1, partition_low, NULL);
}

int MPIDI_PART_pready_list(int length, const int array_of_partitions[], MPIR_Request * request)
{
    return pready(request, length, 0, array_of_partitions);
}

int MPIDI_PART_parrived(MPIR_Request * request, int partition, int *flag)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);

    /* MPI 4.1: an inactive request has nothing pending */
    if (!MPIR_Part_request_is_active(request) || op->path == MPIDI_PART_PATH_NULL || op->error) {
        *flag = 1;
        goto fn_exit;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int m = -1;     /* the partition's wire message, once the plan is known */
        if (MPL_atomic_acquire_load_int(&op->plan_ready) && op->wreq) {
            m = MPIDI_PART_plan_msg_of(&op->plan, op->partitions, partition);
            MPIR_Request *r = op->wreq[m];
            if (r && MPIR_Request_is_complete(r)) {
                *flag = 1;
                goto fn_exit;
            }
        }
        if (attempt == 0) {
            /* bounded progress on the VCI that carries the partition */
            mpi_errno = MPIDI_PART_vci_progress_msg(op, m);
            MPIR_ERR_CHECK(mpi_errno);
        }
    }
    *flag = 0;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_PART_request_free(MPIR_Request * request)
{
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);
    if (op == NULL)
        return;
    MPIDI_PART_OP(request) = NULL;

    /* drop the internal requests of the last iteration (no lock: MPIR_Request_free takes
     * VCI locks, which rank before ours) */
    if (op->wreq) {
        for (int m = 0; m < op->plan.nmsgs; m++) {
            if (op->wreq[m]) {
                MPIR_Request_free(op->wreq[m]);
                op->wreq[m] = NULL;
            }
        }
    }

    MPIDI_PART_LOCK();
    MPIDI_PART_unpoll(op);
    op->req = NULL;
    op->freed = 1;
    if (!op->is_send) {
        if (op->lease_wait) {
            MPIDI_PART_op_t **pp = &MPIDI_PART_global.lease_head, *prev = NULL;
            while (*pp && *pp != op) {
                prev = *pp;
                pp = &(*pp)->next;
            }
            if (*pp) {
                *pp = op->next;
                if (MPIDI_PART_global.lease_tail == op)
                    MPIDI_PART_global.lease_tail = prev;
            }
            op->lease_wait = 0;
        }
        if (op->iter_id >= 0) {
            MPIDI_PART_lease_return(op);
        }
        if (op->tag_id >= 0) {
            MPIDI_PART_id_put(op->tag_id, 1);
            op->tag_id = -1;
        }
    }
    int last = MPIDI_PART_op_unref(op);
    MPIDI_PART_UNLOCK();
    if (last)
        MPIDI_PART_op_destroy(op);
}
