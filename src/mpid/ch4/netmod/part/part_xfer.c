/*
 * part_xfer.c: the wire messages of an iteration: sending one, posting the receives,
 * installing the receiver's plan on the sender, and resetting per-iteration state.
 *
 * Wire messages are ordinary MPID_Isend/MPID_Irecv on the collective context with tags
 * above every user and collective tag (part_plan.h), so they work over every netmod and
 * shared memory, and no user receive (MPI_ANY_TAG included) can match them. Each goes
 * through the communicator view of its VCI (part_vci.c).
 */
#include "part_impl.h"

/* Bump VCI 0's progress count so that a waiter in MPID_Progress_wait re-checks its request
 * after the engine changed a completion counter outside the netmod's completion path. */
static void poke_progress(void)
{
    int c = MPL_atomic_relaxed_load_int(&MPIDI_VCI(0).progress_count);
    MPL_atomic_relaxed_store_int(&MPIDI_VCI(0).progress_count, c + 1);
}

/* Count message m's completion in the user request exactly once. The netmods do not honour
 * completion notifications, so a message that is not complete yet is counted by the
 * progress hook (MPIDI_PART_poll_completions), which polls its internal request. */
static void attach_completion(MPIDI_PART_op_t * op, int m)
{
    MPIR_Request *r = op->wreq[m];
    MPIDI_PART_LOCK();
    if (!op->counted[m] && MPIR_Request_is_complete(r)) {
        op->counted[m] = 1;
        op->ncounted++;
        MPIR_cc_dec(op->req->cc_ptr);
        poke_progress();        /* a waiter may be spinning in this very progress call */
    } else if (!op->polled) {
        op->polled = 1;
        op->pnext = MPIDI_PART_global.polling;
        MPIDI_PART_global.polling = op;
        MPL_atomic_release_store_int(&MPIDI_PART_global.work, 1);
    }
    MPIDI_PART_UNLOCK();
}

void MPIDI_PART_unpoll(MPIDI_PART_op_t * op)
{
    if (!op->polled)
        return;
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.polling; *pp; pp = &(*pp)->pnext) {
        if (*pp == op) {
            *pp = op->pnext;
            break;
        }
    }
    op->polled = 0;
}

/* Count completed messages; *vci_mask gets the VCIs that still carry uncounted ones (ops
 * spread over several VCIs: a waiter's progress covers only its request's VCI). */
int MPIDI_PART_poll_completions(uint64_t * vci_mask)
{
    int done_any = 0;
    *vci_mask = 0;
    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.polling; *pp;) {
        MPIDI_PART_op_t *op = *pp;
        for (int m = 0; m < op->plan.nmsgs; m++) {
            MPIR_Request *r = op->wreq[m];
            if (r && !op->counted[m]) {
                if (MPIR_Request_is_complete(r)) {
                    op->counted[m] = 1;
                    op->ncounted++;
                    MPIR_cc_dec(op->req->cc_ptr);
                    done_any = 1;
                } else if (op->vcomm) {
                    *vci_mask |= (uint64_t) 1 << op->msg_vci[m];
                }
            }
        }
        if (op->ncounted == op->plan.nmsgs) {
            *pp = op->pnext;
            op->polled = 0;
        } else {
            pp = &op->pnext;
        }
    }
    MPIDI_PART_UNLOCK();
    if (done_any)
        poke_progress();
    return done_any;
}

void MPIDI_PART_complete_now(MPIR_Request * req, int count)
{
    for (int i = 0; i < count; i++)
        MPIR_cc_dec(req->cc_ptr);
    poke_progress();
}

int MPIDI_PART_send_msg(MPIDI_PART_op_t * op, int m)
{
    int mpi_errno = MPI_SUCCESS;
    int first, nparts;
    MPIR_Request *r = NULL;
    int id = (op->path == MPIDI_PART_PATH_TAG) ? op->tag_id : op->iter_id;

    MPIDI_PART_plan_msg_range(&op->plan, op->partitions, m, &first, &nparts);
    mpi_errno = MPID_Isend(op->buf + first * op->part_extent, nparts * op->count, op->datatype,
                           op->peer, MPIDI_PART_tag_encode(&MPIDI_PART_global.layout, id, m),
                           MPIDI_PART_msg_comm(op, m), MPIR_CONTEXT_INTRA_COLL, &r);
    MPIR_ERR_CHECK(mpi_errno);
    op->wreq[m] = r;
    attach_completion(op, m);
    MPIDI_PART_PVAR_ADD(wire_msgs_sent, 1);
    if (op->vcomm && op->msg_vci[m] != 0)
        MPIDI_PART_PVAR_ADD(vci_spread_msgs, 1);
    MPIDI_PART_PVAR_ADD(user_parts_sent, nparts);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Post this iteration's receives under id. The request's counter already holds a
 * placeholder; each posted receive adds one, and the placeholder is dropped at the end. */
int MPIDI_PART_post_recvs(MPIDI_PART_op_t * op, int id)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req = op->req;

    for (int m = 0; m < op->plan.nmsgs; m++) {
        int first, nparts;
        MPIR_Request *r = NULL;
        MPIDI_PART_plan_msg_range(&op->plan, op->partitions, m, &first, &nparts);
        MPIR_cc_inc(req->cc_ptr);
        mpi_errno = MPID_Irecv(op->buf + first * op->part_extent, nparts * op->count,
                               op->datatype, op->peer,
                               MPIDI_PART_tag_encode(&MPIDI_PART_global.layout, id, m),
                               MPIDI_PART_msg_comm(op, m), MPIR_CONTEXT_INTRA_COLL, &r);
        MPIR_ERR_CHECK(mpi_errno);
        op->wreq[m] = r;
        attach_completion(op, m);
        if (op->vcomm && op->msg_vci[m] != 0)
            MPIDI_PART_PVAR_ADD(vci_spread_msgs, 1);
    }
    MPIDI_PART_PVAR_ADD(wire_msgs_recvd, op->plan.nmsgs);
    MPIDI_PART_complete_now(req, 1);    /* the placeholder */

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_alloc_msgs(MPIDI_PART_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    int n = op->plan.nmsgs;

    op->ppm = MPIDI_PART_plan_parts_per_msg(&op->plan, op->partitions);
    op->wreq = MPL_calloc(n > 0 ? n : 1, sizeof(MPIR_Request *), MPL_MEM_OTHER);
    op->counted = MPL_calloc(n > 0 ? n : 1, 1, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(op->wreq == NULL || op->counted == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    if (op->is_send) {
        op->cntr = MPL_calloc(n > 0 ? n : 1, sizeof(MPL_atomic_int_t), MPL_MEM_OTHER);
        op->pending = MPL_calloc(n > 0 ? n : 1, 1, MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(op->cntr == NULL || op->pending == NULL, mpi_errno, MPI_ERR_OTHER,
                            "**nomem");
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Counters of a planned sender: partitions still to be readied in each message, from the
 * ready flags (all clear at the start of an iteration, possibly set before the plan came). */
static void count_unready(MPIDI_PART_op_t * op)
{
    for (int m = 0; m < op->plan.nmsgs; m++) {
        int first, nparts, unready = 0;
        MPIDI_PART_plan_msg_range(&op->plan, op->partitions, m, &first, &nparts);
        for (int p = first; p < first + nparts; p++)
            unready += !MPL_atomic_relaxed_load_int(&op->ready[p]);
        MPL_atomic_relaxed_store_int(&op->cntr[m], unready);
    }
}

void MPIDI_PART_reset_iteration(MPIDI_PART_op_t * op)
{
    if (!op->is_send && op->iter_id >= 0) {
        /* the previous iteration's lease, if the hook has not returned it yet */
        MPIDI_PART_LOCK();
        if (op->iter_id >= 0) {
            MPIDI_PART_lease_return(op);
        }
        MPIDI_PART_UNLOCK();
    }
    if (op->wreq) {
        MPIDI_PART_LOCK();
        MPIDI_PART_unpoll(op);
        memset(op->counted, 0, op->plan.nmsgs);
        op->ncounted = 0;
        MPIDI_PART_UNLOCK();
        for (int m = 0; m < op->plan.nmsgs; m++) {
            if (op->wreq[m]) {
                MPIR_Request_free(op->wreq[m]);
                op->wreq[m] = NULL;
            }
        }
    }
    if (op->is_send) {
        for (int p = 0; p < op->partitions; p++)
            MPL_atomic_relaxed_store_int(&op->ready[p], 0);
        if (op->cntr) {
            count_unready(op);
            memset(op->pending, 0, op->plan.nmsgs);
            op->npending = 0;
        }
        MPL_atomic_write_barrier();
    }
}

/* Sender: the receiver's PLAN arrived (progress hook, no lock held). */
int MPIDI_PART_install_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS;
    int *tosend = NULL, nsend = 0, add = 0;

    if (hdr->status == MPIDI_PART_PLAN_STATUS_MISMATCH) {
        op->error = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_TRUNCATE, "**partsizemismatch",
                                         "**partsizemismatch %d %d %d %d", op->comm->rank,
                                         (int) op->total_bytes, op->peer, (int) hdr->bytes);
        op->plan.nmsgs = 0;
    } else if (hdr->status == MPIDI_PART_PLAN_STATUS_OK) {
        op->plan = hdr->plan;
        op->path = hdr->path;
        op->tag_id = hdr->tag_id;
        mpi_errno = MPIDI_PART_alloc_msgs(op);
        MPIR_ERR_CHECK(mpi_errno);
        mpi_errno = MPIDI_PART_vci_setup(op, hdr->vci_n, hdr->vci_parts, hdr->vci_ppt);
        MPIR_ERR_CHECK(mpi_errno);
        tosend = MPL_malloc(sizeof(int) * (op->plan.nmsgs + 1), MPL_MEM_OTHER);
        MPIR_ERR_CHKANDJUMP(tosend == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }

    MPIDI_PART_LOCK();
    if (op->freed || hdr->status == MPIDI_PART_PLAN_STATUS_FREED) {
        MPL_atomic_release_store_int(&op->plan_ready, 1);
        MPIDI_PART_UNLOCK();
        goto fn_exit;
    }
    if (op->error) {
        op->req->status.MPI_ERROR = op->error;
    } else {
        count_unready(op);
    }
    if (op->started_unplanned) {
        op->started_unplanned = 0;
        if (op->error) {
            add = -1;   /* drop the placeholder: complete with the error */
        } else {
            add = op->plan.nmsgs - 1;
            op->iter_id = -1;
            if (op->path == MPIDI_PART_PATH_CTS && op->cts_queued) {
                op->iter_id = op->cts_queue[0];
                op->cts_queue[0] = op->cts_queue[1];
                op->cts_queued--;
            }
            for (int m = 0; m < op->plan.nmsgs; m++) {
                if (MPL_atomic_relaxed_load_int(&op->cntr[m]) == 0) {
                    if (op->path == MPIDI_PART_PATH_TAG || op->iter_id >= 0) {
                        tosend[nsend++] = m;
                    } else {
                        op->pending[m] = 1;
                        op->npending++;
                    }
                }
            }
        }
    }
    /* count the messages before any can complete: once plan_ready is set, other threads'
     * MPI_Pready calls send directly */
    for (int i = 0; i < add; i++)
        MPIR_cc_inc(op->req->cc_ptr);
    MPL_atomic_release_store_int(&op->plan_ready, 1);
    MPIDI_PART_UNLOCK();

    if (add < 0) {
        MPIDI_PART_complete_now(op->req, 1);
    }
    MPIDI_PART_PVAR_ADD(first_iter_deferred, nsend);
    for (int i = 0; i < nsend; i++) {
        mpi_errno = MPIDI_PART_send_msg(op, tosend[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPL_free(tosend);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, CTS path: a lease for an iteration arrived (progress hook, no lock held). */
int MPIDI_PART_cts_arrived(MPIDI_PART_op_t * op, int id)
{
    int mpi_errno = MPI_SUCCESS;
    int *tosend = NULL, nsend = 0;

    MPIDI_PART_LOCK();
    int awaiting = MPL_atomic_acquire_load_int(&op->plan_ready) && op->req &&
        MPIR_Part_request_is_active(op->req) && !op->started_unplanned && op->iter_id < 0 &&
        !MPIR_Request_is_complete(op->req);
    if (!awaiting) {
        MPIR_Assert(op->cts_queued < 2);
        op->cts_queue[op->cts_queued++] = id;
        MPIDI_PART_UNLOCK();
        goto fn_exit;
    }
    op->iter_id = id;
    if (op->npending) {
        tosend = MPL_malloc(sizeof(int) * op->npending, MPL_MEM_OTHER);
        for (int m = 0; m < op->plan.nmsgs && tosend; m++) {
            if (op->pending[m]) {
                op->pending[m] = 0;
                tosend[nsend++] = m;
            }
        }
        op->npending = 0;
    }
    MPIDI_PART_UNLOCK();
    MPIR_ERR_CHKANDJUMP(nsend == 0 && tosend == NULL && op->npending, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    for (int i = 0; i < nsend; i++) {
        mpi_errno = MPIDI_PART_send_msg(op, tosend[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPL_free(tosend);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
