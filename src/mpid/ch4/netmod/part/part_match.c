/*
 * part_match.c: the handshake. RTS/PLAN/CTS active messages, matching in MPI order, the
 * receiver's plan decision, the sender's plan installation, and the progress hook that does
 * everything the active-message handler may not (the handler only queues; MPI calls happen
 * in the hook, without locks).
 */
#include "part_impl.h"
#ifdef MPIDI_CH4_PART_RDMA
#include "part_rdma.h"
#endif

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_TRANSPORT
      category    : CH4_PART
      type        : string
      default     : "auto"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Transport of partitioned operations: "tag" (matched point-to-point messages),
        "ofi" (RDMA writes with immediate data over libfabric; the provider is
        MPIR_CVAR_PART_OFI_PROVIDER), "verbs" (the same writes over InfiniBand verbs,
        configure --enable-part-verbs; MPIR_CVAR_PART_VERBS_*) or "auto"
        (the engine chooses per operation; the rule is in the engine README). Read by
        MPI_Psend_init and MPI_Precv_init; the receiver decides, among what the sender
        offers. Operations the RDMA transport cannot write directly (non-contiguous
        buffers, empty transfers) use the tag transport. Unknown values make the init call
        fail with MPI_ERR_ARG.

    - name        : MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: a receiver that installed its plan busy-waits this many microseconds
        after it released the engine lock, before it sends the PLAN, so that the program
        can free the receive meanwhile and its RELEASE overtake the PLAN
        (threads/part/part_race_release). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_MATCH_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: a receive (not yet freed) that met the sender's announcement
        busy-waits this many microseconds, without the engine lock, before it decides the
        plan, so that the program can free it meanwhile
        (threads/part/part_race_free_rts; pvar part_freed_while_planning). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_REFUSE_PLAN
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: the Nth plan with wire messages that this process's sends set up without
        an error (counted from 1, any transport) is refused then, as when its last step fails:
        the transport frees what it had set up, the send fails with MPI_ERR_OTHER and its
        receive with it (test/mpi/part/part_withdraw -refuse=1 over RDMA). 0: off.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

int MPIDI_PART_choice(int *choice)
{
    int mpi_errno = MPI_SUCCESS;
    const char *v = MPIR_CVAR_PART_TRANSPORT ? MPIR_CVAR_PART_TRANSPORT : "";

    if (strcmp(v, "auto") == 0 || v[0] == '\0') {
        *choice = MPIDI_PART_CHOICE_AUTO;
    } else if (strcmp(v, "tag") == 0) {
        *choice = MPIDI_PART_CHOICE_TAG;
    } else if (strcmp(v, "ofi") == 0) {
#ifdef MPIDI_CH4_PART_OFI
        *choice = MPIDI_PART_CHOICE_OFI;
        mpi_errno = MPIDI_PART_rdma_require(MPIDI_PART_CHOICE_OFI);
#else
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partnotbuilt", "**partnotbuilt %s",
                             "ofi (configure --enable-part-ofi with libfabric)");
#endif
    } else if (strcmp(v, "verbs") == 0) {
#ifdef MPIDI_CH4_PART_VERBS
        *choice = MPIDI_PART_CHOICE_VERBS;
        mpi_errno = MPIDI_PART_rdma_require(MPIDI_PART_CHOICE_VERBS);
#else
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**partnotbuilt", "**partnotbuilt %s",
                             "verbs (configure --enable-part-verbs with libibverbs)");
#endif
    } else {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_ARG, "**parttransport", "**parttransport %s", v);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Receiver: take the sender's announcement (lock held). */
void MPIDI_PART_take_rts(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * rts)
{
    op->freed_at_meet = op->freed;
    op->sop = rts->sop;
    op->peer_partitions = rts->partitions;
    op->peer_thread_parts = rts->thread_parts;
    op->peer_nvcis = rts->nvcis;
    op->peer_bytes = rts->bytes;
    op->peer_iter0 = rts->iter;
    op->peer_choice = rts->choice;
    op->peer_contig = rts->contig;
    op->serial = rts->serial;
    MPIDI_PART_matched_add(op);
    if (rts->status == MPIDI_PART_STATUS_FREED) {
        /* its sender withdrew before we matched it (handle_withdraw): the receive
         * fails, as it does when the WITHDRAW comes after (MPI order: it was this
         * receive's send; MPIDI_PART_match_posted answers the sender) */
        op->refused_from = MPIDI_PART_ITER0 + 1;
        __atomic_store_n(&op->refused, MPIDI_PART_STATUS_FREED, __ATOMIC_SEQ_CST);
    }
    if (rts->ext_len > 0) {
        op->rts_ext = MPL_malloc(rts->ext_len, MPL_MEM_OTHER);
        if (op->rts_ext) {      /* without it, the tag transport */
            memcpy(op->rts_ext, rts->ext, rts->ext_len);
            op->rts_ext_len = rts->ext_len;
        }
    }
}

int MPIDI_PART_send_hdr(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS;
    uint64_t wire[MPIDI_PART_WIRE_MAX / sizeof(uint64_t)];
    size_t len = MPIDI_PART_wire_pack(hdr, wire);
    MPIR_ERR_CHKINTERNAL(len == 0, mpi_errno,
                         "partitioned handshake message of unknown kind or ext length");
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    CH4_CALL(am_send_hdr(op->peer, op->comm, MPIDI_PART_global.am_id, wire, (MPI_Aint) len,
                         0, 0), op->is_local, mpi_errno);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Runs inside netmod/shm progress with VCI 0 locked: only queue the message. */
int MPIDI_PART_am_handler(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                          MPIR_Request ** req)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_inbox_t *e = MPL_malloc(sizeof(*e), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(e == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (!MPIDI_PART_wire_unpack(am_hdr, &e->hdr)) {  /* not from this engine's version */
        MPL_free(e);
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_INTERN, "**intern", "**intern %s",
                             "partitioned handshake message of unknown kind or length");
    }
    e->next = NULL;

    MPIDI_PART_LOCK();
    if (MPIDI_PART_global.inbox_tail)
        MPIDI_PART_global.inbox_tail->next = e;
    else
        MPIDI_PART_global.inbox_head = e;
    MPIDI_PART_global.inbox_tail = e;
    MPIDI_PART_set_work(MPIDI_PART_WORK_HANDSHAKE);
    MPIDI_PART_UNLOCK();

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const MPIDI_PART_transport_t *transport_by_id(int id)
{
    if (id == MPIDI_PART_TRANSPORT_TAG)
        return &MPIDI_PART_tag_transport;
#ifdef MPIDI_CH4_PART_OFI
    if (id == MPIDI_PART_TRANSPORT_OFI)
        return &MPIDI_PART_ofi_transport;
#endif
#ifdef MPIDI_CH4_PART_VERBS
    if (id == MPIDI_PART_TRANSPORT_VERBS)
        return &MPIDI_PART_verbs_transport;
#endif
    return NULL;
}

/* Receiver: the transport of a matched operation (the rule is in README, "Choosing a
 * transport"): RDMA when this side asks for it and both sides can write directly. */
static const MPIDI_PART_transport_t *choose_transport(MPIDI_PART_op_t * op)
{
#ifdef MPIDI_CH4_PART_RDMA
    const MPIDI_PART_transport_t *rdma = MPIDI_PART_rdma_usable(op);
    if (rdma)
        return rdma;
#endif
    return &MPIDI_PART_tag_transport;
}

/* The testing aid's value that gives iteration base iter0 (part_init.c) */
static long long iters_below(MPIDI_PART_iter_t iter0)
{
    return iter0 == 0 ? 0 : (long long) (((MPIDI_PART_iter_t) 1 << 32) - iter0);
}

/* Receiver: decide the wire layout (no lock). Returns the PLAN status; op->error is set
 * for anything but OK. */
static int decide_plan(MPIDI_PART_op_t * op, MPIDI_PART_plan_t * plan)
{
    memset(plan, 0, sizeof(*plan));
    if (op->peer_iter0 != MPIDI_PART_ITER0) {
        /* iteration numbers travel on the wire (CTS, LAYOUT, credits): both sides must
         * count from the same base, or each would wait for an iteration the other never
         * names (only the testing aid MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32 moves it) */
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_OTHER, "**partiterbase",
                                                      "**partiterbase %d %L %d %L", op->peer,
                                                      iters_below(op->peer_iter0), op->comm->rank,
                                                      iters_below(MPIDI_PART_ITER0)));
        return MPIDI_PART_STATUS_ERROR;
    }
    if (op->peer_bytes > op->total_bytes) {
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_TRUNCATE,
                                                      "**partsizemismatch",
                                                      "**partsizemismatch %d %L %d %L", op->peer,
                                                      (long long) op->peer_bytes, op->comm->rank,
                                                      (long long) op->total_bytes));
        return MPIDI_PART_STATUS_MISMATCH;
    }
    if (op->partitions == 0 || op->peer_partitions == 0)
        return MPIDI_PART_STATUS_OK;      /* nothing travels (then both sizes are 0 bytes) */
    /* A receive buffer larger than the send is allowed, as for point-to-point: then the
     * partition boundaries of the two sides do not line up, and the whole transfer is one
     * wire message that fills the front of the receive buffer. */
    int equal = (op->peer_bytes == op->total_bytes);
    int32_t sp = equal ? op->peer_partitions : 1, rp = equal ? op->partitions : 1;
    /* over the tag transport each message holds an MPI request while it is posted */
    int32_t max_msgs = choose_transport(op) == &MPIDI_PART_tag_transport ?
        MPIDI_PART_tag_msgs_left() : MPIDI_PART_tag_max_msgs();
    int64_t limit = MPIDI_PART_aggr_limit(op, op->peer_bytes, sp,
                                          (int32_t) MPIDI_PART_gcd(sp, rp), max_msgs);
    int rc = MPIDI_PART_plan_make(sp, rp, op->peer_bytes, limit, max_msgs, plan);
    if (rc != MPIDI_PART_PLAN_OK) {
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_OTHER, "**partplan",
                                                      "**partplan %d %d", op->peer_partitions,
                                                      op->partitions));
        return MPIDI_PART_STATUS_ERROR;
    }
    if (!equal) {
        /* one message: the receiver's side of it is all its partitions */
        plan->gcd = plan->merge = plan->nmsgs = 1;
    }
    return MPIDI_PART_STATUS_OK;
}

/* Receiver: the sender's RTS and our MPI_Precv_init have met. The caller holds a reference
 * and took the RTS (MPIDI_PART_take_rts). Decide the plan, set up the transport, answer the
 * sender once, and start the iteration if the user already did. No lock held. */
int MPIDI_PART_match_posted(MPIDI_PART_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_hdr_t *hdr = NULL;
    const MPIDI_PART_transport_t *tp = NULL;
    int status, began = 0, complete = 0, freed;

    hdr = MPL_malloc(sizeof(*hdr), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(hdr == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    memset(hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr->kind = MPIDI_PART_MSG_PLAN;
    hdr->sop = op->sop;
    hdr->serial = op->serial;
    hdr->bytes = op->total_bytes;
    hdr->timer_ns = -1;

    if (unlikely(MPIR_CVAR_PART_DEBUG_MATCH_DELAY_US > 0) && !op->freed_at_meet)
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_MATCH_DELAY_US);
    MPIDI_PART_LOCK();
    freed = op->freed;
    MPIDI_PART_UNLOCK();
    if (freed) {
        status = MPIDI_PART_STATUS_FREED;
        if (!op->freed_at_meet) /* not the ordinary "freed before its RTS" */
            MPIDI_PART_PVAR_ADD(FREED_WHILE_PLANNING, 1);
        goto answer;
    }

    /* the timer aggregator needs writes whose boundaries change per iteration: RDMA, and
     * partitions that line up on both sides (part_aggr.c may still turn it off). ploggp (the
     * default) adapts to the MPI_Pready times it sees: on RDMA through the timer's groups
     * and deadline, on the tag transport by observing an iteration and re-planning once
     * (section 4c) */
    int lined_up = op->peer_bytes == op->total_bytes && op->partitions > 0 &&
        op->peer_partitions > 0;
    op->model_path = MPIDI_PART_PATH_TAG;
#ifdef MPIDI_CH4_PART_RDMA
    op->model_path = MPIDI_PART_rdma_model_path(choose_transport(op));
#endif
    int observing = op->aggregator == MPIDI_PART_AGGR_PLOGGP && op->aggr_size == 0 &&
        op->observe > 0 && lined_up;
    if (op->aggregator == MPIDI_PART_AGGR_TIMER || observing) {
        if (lined_up && choose_transport(op) != &MPIDI_PART_tag_transport)
            op->timer_ns = 0;
        else if (lined_up && op->aggr_size == 0 && op->observe > 0)
            /* every gcd-message alone until then (part_aggr.c) */
            __atomic_store_n(&op->replan_iter,
                             MPIDI_PART_ITER0 + (uint32_t) (op->observe > 2 ? op->observe : 2) + 1,
                             __ATOMIC_RELAXED);
    }
    status = decide_plan(op, &hdr->plan);
    if (status != MPIDI_PART_STATUS_OK || hdr->plan.nmsgs == 0)
        op->timer_ns = -1;      /* nothing travels */
    if (status != MPIDI_PART_STATUS_OK || hdr->plan.gcd < 2)
        __atomic_store_n(&op->replan_iter, 0, __ATOMIC_RELAXED);        /* nothing to merge */
    if (status == MPIDI_PART_STATUS_OK && hdr->plan.nmsgs > 0) {
        tp = choose_transport(op);
        op->st.plan = hdr->plan;        /* the transport sizes its state from it */
        if (tp == &MPIDI_PART_tag_transport)
            op->timer_ns = -1;
        else    /* RDMA without the timer: the first plan stays */
            __atomic_store_n(&op->replan_iter, 0, __ATOMIC_RELAXED);
        int err = MPIDI_PART_op_alloc_msgs(op, hdr->plan.nmsgs);
        if (!err)
            err = tp->recv_plan(op, hdr);
#ifdef MPIDI_CH4_PART_RDMA
        if (!err && op->timer_ns >= 0) {
            err = MPIDI_PART_rtimer_setup(op, op->timer_ns);
            if (err)
                tp->free(op);
        }
#endif
        if (err && tp != &MPIDI_PART_tag_transport && op->choice != MPIDI_PART_CHOICE_OFI &&
            op->choice != MPIDI_PART_CHOICE_VERBS) {
            /* only asked for, not forced: the tag transport carries it */
            tp = &MPIDI_PART_tag_transport;
            op->timer_ns = -1;
            __atomic_store_n(&op->replan_iter, 0, __ATOMIC_RELAXED);       /* no observation */
            err = tp->recv_plan(op, hdr);
        }
        hdr->timer_ns = err ? -1 : op->timer_ns;
        hdr->timer_cap_ns = hdr->timer_ns >= 0 ? op->timer_cap_ns : 0;
        hdr->timer_run = hdr->timer_ns >= 0 ? op->timer_run : 0;
        if (!err && op->replan_iter) {
            hdr->iter = op->replan_iter - 1;    /* the iteration the sender observes */
            hdr->timer_ns = MPIDI_PART_aggr_replan_tau_ns(op);
            hdr->rop = (uint64_t) (uintptr_t) op;
        }
        if (err) {
            MPIDI_PART_set_error(op, err);
            status = MPIDI_PART_STATUS_ERROR;
            tp = NULL;
        } else {
            hdr->transport = tp->id;
        }
    }

    MPIDI_PART_LOCK();
    int refused = __atomic_load_n(&op->refused, __ATOMIC_RELAXED);
    if (op->freed) {
        /* freed while we planned: nothing is ever sent; release the sender */
        status = MPIDI_PART_STATUS_FREED;
        MPIDI_PART_PVAR_ADD(FREED_WHILE_PLANNING, 1);
    } else if (refused && status == MPIDI_PART_STATUS_OK) {
        /* the sender withdrew while we planned, before its PLAN came (refused_from 1;
         * handle_withdraw failed the state and ended an iteration started before): no
         * iteration of it will come */
        status = MPIDI_PART_STATUS_ERROR;
        complete = MPIDI_PART_fail_refused_locked(op, 0);
    } else if (status == MPIDI_PART_STATUS_OK) {
        op->tp = tp;
        began = op->st.started_unplanned;
        MPIDI_PART_st_plan(&op->st, &hdr->plan, op->cntr, op->held, op->done, 1, NULL);
        if (tp == NULL)
            complete = began;   /* EMPTY */
    } else {
        complete = MPIDI_PART_st_fail(&op->st);
    }
    MPIDI_PART_UNLOCK();
    if ((status == MPIDI_PART_STATUS_FREED || refused) && tp) {
        op->tp = tp;    /* released with the op */
    }
    if (unlikely(MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US > 0) && status == MPIDI_PART_STATUS_OK)
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_PLAN_DELAY_US);

  answer:
    hdr->status = status;
    if (status != MPIDI_PART_STATUS_OK)
        hdr->ext_len = 0;
    mpi_errno = MPIDI_PART_send_hdr(op, hdr);
    MPIR_ERR_CHECK(mpi_errno);
    if (began && tp) {
        mpi_errno = tp->recv_arm(op);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (complete)
        MPIDI_PART_complete_iteration(op);

  fn_exit:
    MPL_free(hdr);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Whether this plan is the one MPIR_CVAR_PART_DEBUG_REFUSE_PLAN names. */
static int debug_refuse_now(void)
{
    static int plans = 0;
    return __atomic_add_fetch(&plans, 1, __ATOMIC_RELAXED) == MPIR_CVAR_PART_DEBUG_REFUSE_PLAN;
}

/* Sender: the receiver's PLAN arrived (no lock held). */
static int handle_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS;
    int32_t *tosend = NULL;
    int nsend = 0, complete = 0, status = hdr->status, timer_first = 0;
    const MPIDI_PART_transport_t *tp = NULL;

    if (status == MPIDI_PART_STATUS_OK && hdr->plan.nmsgs > 0) {
        tp = transport_by_id(hdr->transport);
        int err = MPI_SUCCESS;
        if (tp == NULL || hdr->plan.nmsgs < 1 || hdr->plan.gcd < 1 ||
            op->partitions % hdr->plan.gcd != 0) {
            err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                       MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                                       hdr->transport, hdr->plan.nmsgs);
        }
        op->st.plan = hdr->plan;
        if (!err)
            err = MPIDI_PART_op_alloc_msgs(op, hdr->plan.nmsgs);
        if (!err) {
            tosend = MPL_malloc(sizeof(int32_t) * hdr->plan.nmsgs, MPL_MEM_OTHER);
            if (tosend == NULL)
                err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                           __LINE__, MPI_ERR_OTHER, "**nomem", 0);
        }
        /* the timer's writes need contexts of their own (part_rdma.h) */
        op->timer_ns = (op->rdma && tp && tp != &MPIDI_PART_tag_transport) ? hdr->timer_ns : -1;
        op->timer_cap_ns = op->timer_ns >= 0 ? hdr->timer_cap_ns : 0;
        op->timer_run = op->timer_ns >= 0 ? hdr->timer_run : 0;
        if (!err)
            err = tp->send_plan(op, hdr);
#ifdef MPIDI_CH4_PART_RDMA
        if (!err && op->timer_ns >= 0)
            err = MPIDI_PART_rtimer_setup(op, op->timer_ns);
#endif
        if (!err && unlikely(MPIR_CVAR_PART_DEBUG_REFUSE_PLAN > 0) && debug_refuse_now())
            err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                       MPI_ERR_OTHER, "**partdebugrefuse", 0);
        if (err) {
            MPIDI_PART_set_error(op, err);
            status = MPIDI_PART_STATUS_ERROR;
            if (tp)
                tp->free(op);   /* whatever send_plan had set up */
            tp = NULL;
        }
    } else if (status == MPIDI_PART_STATUS_MISMATCH) {
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_TRUNCATE,
                                                      "**partsizemismatch",
                                                      "**partsizemismatch %d %L %d %L",
                                                      op->comm->rank, (long long) op->total_bytes,
                                                      op->peer, (long long) hdr->bytes));
    } else if (status == MPIDI_PART_STATUS_FREED) {
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_REQUEST, "**partpeerfreed",
                                                      "**partpeerfreed %d %d", op->peer, op->tag));
    } else if (status != MPIDI_PART_STATUS_OK) {
        MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                      __LINE__, MPI_ERR_OTHER, "**partpeerplan",
                                                      "**partpeerplan %d", op->peer));
    }

#ifdef MPIDI_CH4_PART_RDMA
    if (op->rdma && tp != op->rdma->tp)
        MPIDI_PART_rdma_release(op);    /* offered, not taken */
#endif
    MPIDI_PART_LOCK();
    op->tp = tp;
    /* a plan we cannot use: the receiver's iterations would wait for us (section 5); one
     * freed before has sent its WITHDRAW already */
    int refuse = hdr->status == MPIDI_PART_STATUS_OK && status != MPIDI_PART_STATUS_OK &&
        !op->freed;
    if (op->freed) {
        /* nothing to start; the op goes with the handshake reference */
#ifdef MPIDI_CH4_PART_RDMA
    } else if (status == MPIDI_PART_STATUS_OK && op->st.started_unplanned &&
               MPIDI_PART_rdma_doomed(op, op->st.iter)) {
        /* the receiver's FAIL for the iteration we started came before its PLAN (it sent
         * the PLAN after releasing its lock; its MPI_Start's credit failed meanwhile) */
        complete = MPIDI_PART_st_fail(&op->st);
#endif
    } else if (status == MPIDI_PART_STATUS_OK && op->st.started_unplanned &&
               __atomic_load_n(&op->refused, __ATOMIC_RELAXED) &&
               op->st.iter >= op->refused_from) {
        /* its receive was freed before the iteration we started, and the RELEASE overtook
         * this PLAN (the receiver sends the PLAN after releasing its lock, section 5):
         * nothing was sent, nothing will be */
        complete = MPIDI_PART_fail_refused_locked(op, op->st.iter - 1);
    } else if (MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_FAILED) {
        /* failed before its PLAN: a start saw the RELEASE that overtook it (start_locked);
         * nothing to install (op->tp stays for op_destroy) */
    } else if (status == MPIDI_PART_STATUS_OK) {
        int was = op->st.started_unplanned;
        int armed = tp ? tp->always_armed(op) : 1;
        if (tp && tp->replan && hdr->iter > 0 && hdr->timer_ns >= 0) {
            /* observe iteration hdr->iter, then re-plan (section 4c): only a plan installed
             * (a failed send's starts would observe iterations of no message) */
            op->rop = hdr->rop;
            op->replan_ns = hdr->timer_ns;
            __atomic_store_n(&op->replan_iter, hdr->iter + 1, __ATOMIC_RELEASE);
        }
#ifdef MPIDI_CH4_PART_RDMA
        /* an iteration started before the plan uses the timer too (the default aggregator's
         * early-bird on RDMA): active before the plan is published, so that every
         * MPI_Pready from then on goes through it; the partitions readied before count as
         * readied now, when the credit is there (below, or when it comes) */
        timer_first = was && op->timer_ns >= 0 && op->rdma && op->rdma->timer;
        if (timer_first)
            MPIDI_PART_rtimer_start(op, armed);
#endif
        nsend = MPIDI_PART_st_plan(&op->st, &hdr->plan, op->cntr, op->held, op->done, armed,
                                   tosend);
        MPIR_Assert(nsend >= 0);
        if (timer_first) {
            /* the timer decides what goes, not the plan's whole messages */
            nsend = 0;
            memset(op->held, 0, hdr->plan.nmsgs);
            op->st.nheld = 0;
            timer_first = armed;        /* arm the timer now */
        }
        if (tp == NULL) /* EMPTY: a send with partitions ends with its last MPI_Pready */
            complete = was && !MPIDI_PART_st_is_running(&op->st);
    } else {
        complete = MPIDI_PART_st_fail(&op->st);
    }
    MPIDI_PART_UNLOCK();
#ifdef MPIDI_CH4_PART_RDMA
    if (timer_first) {
        mpi_errno = MPIDI_PART_rtimer_arm(op);
        MPIR_ERR_CHECK(mpi_errno);
    }
#endif

    if (nsend > 0) {
        MPIDI_PART_PVAR_ADD(FIRST_ITER_DEFERRED, nsend);
        mpi_errno = MPIDI_PART_send_ready(op, tosend, nsend);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (complete)
        MPIDI_PART_complete_iteration(op);
    if (refuse) {       /* the handshake's reference keeps op */
        mpi_errno = MPIDI_PART_send_withdraw(op, MPIDI_PART_STATUS_ERROR, MPIDI_PART_ITER0);
        MPIR_ERR_CHECK(mpi_errno);
    }
    /* the CTSs that came before this PLAN, in their order (MPIDI_PART_handshake) */
    for (int i = 0; i < op->early_ncts && tp && tp->ctl; i++) {
        MPIDI_PART_hdr_t cts;
        memset(&cts, 0, offsetof(MPIDI_PART_hdr_t, ext));
        cts.kind = MPIDI_PART_MSG_CTS;
        cts.sop = hdr->sop;
        cts.serial = hdr->serial;
        cts.iter = op->early_cts_iter[i];
        cts.ext_len = (int32_t) sizeof(op->early_cts_ext[i]);
        memcpy(cts.ext, op->early_cts_ext[i], sizeof(op->early_cts_ext[i]));
        mpi_errno = tp->ctl(op, &cts);
        MPIR_ERR_CHECK(mpi_errno);
    }
    op->early_ncts = 0;

  fn_exit:
    MPL_free(tosend);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- re-planning after an observed iteration (section 4c) ------------------------------- */

/* Lock held: install plan in place of the current one (between iterations). */
static int install(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    int err = op->tp->replan(op, plan);
    if (err)
        return err;
    MPIDI_PART_st_plan(&op->st, plan, op->cntr, op->held, op->done, 1, NULL);
    op->layout_in = 2;
    MPIDI_PART_PVAR_ADD(REPLANS, 1);
    return MPI_SUCCESS;
}

/* A LAYOUT the receiver can install: the same gcd-messages, no more messages than the first
 * plan (the transport's state has room for those only; tag_replan checks its own). */
static int layout_valid(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * p)
{
    return p->gcd == op->st.plan.gcd && p->merge >= 1 && p->merge <= p->gcd &&
        p->nmsgs == (p->gcd + p->merge - 1) / p->merge && p->nmsgs <= op->st.plan.nmsgs;
}

static void fail_layout(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * p)
{
    MPIDI_PART_set_error(op, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                  __LINE__, MPI_ERR_OTHER, "**partbadlayout",
                                                  "**partbadlayout %d %d %d", op->peer, p->gcd,
                                                  p->merge));
    MPIDI_PART_st_fail(&op->st);
    op->layout_in = 2;
}

int MPIDI_PART_replan_locked(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    if (op->layout_in == 2 || MPIDI_PART_st_get_state(&op->st) != MPIDI_PART_ST_PLANNED ||
        MPIDI_PART_st_unplan(&op->st))
        return 0;
    if (op->is_send) {
        /* the model's plan, or the first one where there is none or the transport cannot
         * take it */
        op->layout = plan->gcd == op->st.plan.gcd ? *plan : op->st.plan;
        if (install(op, &op->layout)) {
            op->layout = op->st.plan;
            install(op, &op->layout);   /* the first plan fits: its views exist */
        }
        return 1;
    }
    if (op->layout_in == 1 && install(op, &op->layout) == MPI_SUCCESS)
        return 0;
    if (op->layout_in != 0)     /* invalid, or the transport could not take it */
        fail_layout(op, &op->layout);
    /* else the start that follows is deferred until the sender's LAYOUT comes */
    return 0;
}

int MPIDI_PART_send_layout(MPIDI_PART_op_t * op)
{
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_LAYOUT;
    hdr.sop = (uint64_t) (uintptr_t) op;
    hdr.serial = op->serial;
    hdr.rop = op->rop;
    hdr.iter = op->replan_iter;
    hdr.plan = op->layout;
    hdr.timer_ns = -1;
    return MPIDI_PART_send_hdr(op, &hdr);
}

/* Receiver: the sender's LAYOUT (no lock held). Named by the receiver's op, checked against
 * the live operations; one that was freed meanwhile (or a stale message) is dropped. */
static int handle_layout(const MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS, began = 0, complete = 0;
    MPIDI_PART_op_t *op;

    MPIDI_PART_LOCK();
    for (op = MPIDI_PART_global.all; op; op = op->all_next)
        if ((uint64_t) (uintptr_t) op == hdr->rop && !op->is_send && op->sop == hdr->sop &&
            op->serial == hdr->serial)
            break;
    if (op && !op->freed && op->replan_iter == hdr->iter && op->layout_in == 0 && op->tp &&
        op->tp->replan) {
        int valid = layout_valid(op, &hdr->plan);
        op->layout = hdr->plan;
        if (MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_UNPLANNED &&
            op->st.started_unplanned && op->st.iter == op->replan_iter) {
            /* our start waits for it: the iteration begins now */
            if (valid && install(op, &op->layout) == MPI_SUCCESS) {
                began = 1;
            } else {
                fail_layout(op, &op->layout);
                complete = 1;
            }
        } else {
            op->layout_in = valid ? 1 : -1;     /* our MPI_Start installs it */
        }
        if (began || complete)
            op->refs++; /* the iteration may complete and the request be freed while
                         * recv_arm still posts its receives */
    }
    MPIDI_PART_UNLOCK();
    if (began)
        mpi_errno = op->tp->recv_arm(op);
    if (complete)
        MPIDI_PART_complete_iteration(op);
    if (began || complete)
        MPIDI_PART_op_release(op);
    return mpi_errno;
}

/* ---- a send that sends nothing (README section 5) -------------------------------------- */

/* last: the last iteration the send ran (MPIDI_PART_ITER0: none); the message counts them */
int MPIDI_PART_send_withdraw(MPIDI_PART_op_t * op, int status, MPIDI_PART_iter_t last)
{
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_WITHDRAW;
    hdr.src_rank = op->comm->rank;
    hdr.tag = op->tag;
    hdr.context_id = op->comm->context_id;      /* as in the RTS */
    hdr.sop = (uint64_t) (uintptr_t) op;
    hdr.serial = op->serial;
    hdr.status = status;
    hdr.bytes = (int64_t) (last - MPIDI_PART_ITER0);
    hdr.timer_ns = -1;
    return MPIDI_PART_send_hdr(op, &hdr);
}

int MPIDI_PART_send_release(MPIDI_PART_op_t * op, MPIDI_PART_iter_t last)
{
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_RELEASE;
    hdr.src_rank = op->comm->rank;
    hdr.sop = op->sop;
    hdr.serial = op->serial;
    hdr.status = MPIDI_PART_STATUS_FREED;
    hdr.bytes = (int64_t) (last - MPIDI_PART_ITER0);
    hdr.timer_ns = -1;
    return MPIDI_PART_send_hdr(op, &hdr);
}

int MPIDI_PART_refused_error(MPIDI_PART_op_t * op)
{
    int err;
    if (op->error != MPI_SUCCESS)
        return op->error;
    MPIDI_PART_iter_t iters = op->refused_from - 1 - MPIDI_PART_ITER0;     /* a count */
    if (op->is_send)
        err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_REQUEST, "**partrecvfreed",
                                   "**partrecvfreed %d %d %L", op->peer, op->tag,
                                   (long long) iters);
    else if (op->refused == MPIDI_PART_STATUS_FREED && iters == 0)
        err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_REQUEST, "**partsendfreed",
                                   "**partsendfreed %d %d", op->peer, op->tag);
    else if (op->refused == MPIDI_PART_STATUS_FREED)
        err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_REQUEST, "**partsendfreedafter",
                                   "**partsendfreedafter %d %d %L", op->peer, op->tag,
                                   (long long) iters);
    else
        err = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                   MPI_ERR_OTHER, "**partsendrefused",
                                   "**partsendrefused %d %d", op->peer, op->tag);
    MPIDI_PART_set_error(op, err);      /* atomic: MPIDI_PART_set_status may read it
                                         * meanwhile (a receiver's direct_arm) */
    return err;
}

int MPIDI_PART_fail_refused_locked(MPIDI_PART_op_t * op, MPIDI_PART_iter_t ran)
{
    MPIDI_PART_refused_error(op);
    op->refusal_failed = 1;
    op->ran_iters = ran;        /* a sender's WITHDRAW counts these (section 5) */
    return MPIDI_PART_st_fail(&op->st);
}

/* Receiver: a sender's WITHDRAW (no lock held). Its RTS still unmatched is marked: the
 * receive that meets it, in MPI order, fails from its first iteration, and answers the
 * sender (MPIDI_PART_take_rts, MPIDI_PART_match_posted). A matched
 * receive fails from the first iteration the sender never started on: one of those under
 * way ends now (the tag transport cancels its posted receives, an RDMA receiver's
 * iterations are doomed from there as by a FAIL), a later one completes at its MPI_Start
 * (part_core.c, start_locked). Earlier iterations are untouched: their messages were sent.
 * A receive with nothing to transfer (EMPTY) needs none and is left alone. */
static void handle_withdraw(const MPIDI_PART_hdr_t * hdr)
{
    MPIDI_PART_op_t *op = NULL;
    int complete = 0, doom = 0, tag_end = 0, found = 0;

    if (hdr->bytes < 0 || hdr->bytes == INT64_MAX || hdr->status == MPIDI_PART_STATUS_OK)
        return;
    MPIDI_PART_LOCK();
    /* the matched receive (one bucket: a program's frees cost no scan of every operation),
     * else the announcement still unmatched */
    for (op = MPIDI_PART_global.matched[MPIDI_PART_matched_bucket(hdr->sop, hdr->serial)];
         op; op = op->rnext)
        if (!op->is_send && op->sop == hdr->sop && op->serial == hdr->serial &&
            op->peer == hdr->src_rank && op->context_id == hdr->context_id && op->refs > 0)
            break;
    for (MPIDI_PART_inbox_t * e = op ? NULL : MPIDI_PART_global.unexp_head; e; e = e->next) {
        if (e->hdr.context_id == hdr->context_id && e->hdr.src_rank == hdr->src_rank &&
            e->hdr.sop == hdr->sop && e->hdr.serial == hdr->serial) {
            e->hdr.status = MPIDI_PART_STATUS_FREED;   /* its receive fails (take_rts) */
            found = 1;
            break;
        }
    }
    MPIDI_PART_op_t *unhold = NULL;
    if (op && op->freed && op->tags_kept == 1) {
        /* a receive freed before its send (it sent a RELEASE): its block of tags goes back
         * once no message of an iteration it never started can come; one did if the send
         * ran more iterations, and nothing will ever receive it: the block stays out of the
         * pool (section 5) */
        found = 1;
        if (MPIDI_PART_ITER0 + (MPIDI_PART_iter_t) hdr->bytes <= op->st.iter) {
            op->tags_kept = 0;
            unhold = op;
        } else {
            op->tags_kept = 2;
        }
        MPIDI_PART_tag_unkeep_locked(op);       /* all its send's messages were sent */
    }
    int state = op ? MPIDI_PART_st_get_state(&op->st) : MPIDI_PART_ST_EMPTY;
    if (op && !op->freed && !op->refused &&
        (state == MPIDI_PART_ST_UNPLANNED || state == MPIDI_PART_ST_PLANNED)) {
        MPIDI_PART_iter_t from = MPIDI_PART_ITER0 + (MPIDI_PART_iter_t) hdr->bytes + 1;
        found = 1;
        if (unlikely(__atomic_load_n(&op->start_window, __ATOMIC_RELAXED)))
            MPIDI_PART_PVAR_ADD(WITHDRAW_IN_START, 1);
        op->refused_from = from;
        __atomic_store_n(&op->refused, hdr->status == MPIDI_PART_STATUS_FREED ?
                         MPIDI_PART_STATUS_FREED : MPIDI_PART_STATUS_ERROR, __ATOMIC_SEQ_CST);
        MPIDI_PART_iter_t iter = __atomic_load_n(&op->st.iter, __ATOMIC_RELAXED);
        if (state == MPIDI_PART_ST_UNPLANNED) {
            /* its plan is being made (MPIDI_PART_match_posted sees the refusal), or a
             * re-plan's LAYOUT is awaited: a start that waits for either, of an iteration
             * the sender never started, ends now */
            if (op->st.started_unplanned && iter >= from) {
                complete = MPIDI_PART_fail_refused_locked(op, iter - 1);
            }
#ifdef MPIDI_CH4_PART_RDMA
        } else if (op->rdma && op->tp == op->rdma->tp) {
            /* one under way ends now (its MPI_Start and this lock exclude each other);
             * later ones at their MPI_Start */
            if (MPIDI_PART_st_is_running(&op->st) && iter >= from)
                doom = MPIDI_PART_rdma_doom_locked(op, from, MPIDI_PART_refused_error(op));
#endif
        } else if (op->tp == &MPIDI_PART_tag_transport) {
            tag_end = 1;
        }
        if (complete || doom || tag_end)
            op->refs++;
    } else {
        op = NULL;
    }
    MPIDI_PART_UNLOCK();
    if (found)
        MPIDI_PART_PVAR_ADD(WITHDRAWN, 1);
    if (unhold)
        MPIDI_PART_op_release(unhold);  /* the hold's reference (request_free) */
    if (op == NULL)
        return;
    if (tag_end)
        MPIDI_PART_tag_refuse(op);
    if (complete)
        MPIDI_PART_complete_iteration(op);
#ifdef MPIDI_CH4_PART_RDMA
    if (doom)
        MPIDI_PART_rdma_failed(op, -1); /* the sender knows: not told back */
#endif
    if (complete || doom || tag_end)
        MPIDI_PART_op_release(op);
}

/* Receiver: an RTS arrived (takes e). */
static int handle_rts(MPIDI_PART_inbox_t * e)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = NULL, *prev = NULL;

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
        MPIDI_PART_take_rts(op, &e->hdr);
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
    MPL_free(e);
    if (!op)
        return MPI_SUCCESS;

    mpi_errno = MPIDI_PART_match_posted(op);
    MPIDI_PART_op_release(op); /* the posted queue's reference */
    return mpi_errno;
}

/* Lock held. A peer's message names one of our sends: the live one its RTS announced, or
 * NULL. Looked up by the op and the RTS's serial, never dereferenced: a late CTS may name
 * a send that was freed and destroyed (ThreadSanitizer saw such a read of freed memory in
 * part_race_withdraw with leases per iteration), or whose address a new send took. */
static MPIDI_PART_op_t *named_op(const MPIDI_PART_hdr_t * hdr)
{
    MPIDI_PART_op_t *op = MPIDI_PART_global.matched[MPIDI_PART_matched_bucket(hdr->sop,
                                                                              hdr->serial)];
    while (op && !(op->is_send && (uint64_t) (uintptr_t) op == hdr->sop &&
                   op->serial == hdr->serial))
        op = op->rnext;
    return op;
}

/* Sender: its receive was freed after hdr->bytes iterations (RELEASE; no lock held).
 * Every later iteration fails (MPI_ERR_REQUEST, **partrecvfreed): at its MPI_Start, or now
 * if one under way waits for a credit (RDMA) or a CTS (tag transport with leases) that will
 * never come. One under way with a permanent block of tags runs on: its messages may be on
 * their way already, so it ends as it would (the receiver keeps the block out of the pool,
 * section 5). */
static void handle_release(const MPIDI_PART_hdr_t * hdr)
{
    int doom = 0, complete = 0;

    if (hdr->bytes < 0 || hdr->bytes == INT64_MAX)
        return;
    MPIDI_PART_LOCK();
    MPIDI_PART_op_t *op = named_op(hdr);
    int state = op ? MPIDI_PART_st_get_state(&op->st) : MPIDI_PART_ST_EMPTY;
    if (op && op->peer == hdr->src_rank && !op->freed && !op->refused && op->refs > 0 &&
        (state == MPIDI_PART_ST_UNPLANNED || state == MPIDI_PART_ST_PLANNED)) {
        MPIDI_PART_iter_t from = MPIDI_PART_ITER0 + (MPIDI_PART_iter_t) hdr->bytes + 1;
        MPIDI_PART_iter_t iter = __atomic_load_n(&op->st.iter, __ATOMIC_RELAXED);
        op->refused_from = from;
        __atomic_store_n(&op->refused, MPIDI_PART_STATUS_FREED, __ATOMIC_SEQ_CST);
        if (state == MPIDI_PART_ST_UNPLANNED)
            MPIDI_PART_PVAR_ADD(RELEASE_BEFORE_PLAN, 1);        /* it overtook the PLAN */
        if (!MPIDI_PART_st_is_running(&op->st) || iter < from) {
            /* nothing under way that the RELEASE concerns */
#ifdef MPIDI_CH4_PART_RDMA
        } else if (op->rdma && op->tp == op->rdma->tp) {
            doom = MPIDI_PART_rdma_doom_locked(op, from, MPIDI_PART_refused_error(op));
#endif
        } else if (op->tp == &MPIDI_PART_tag_transport && !op->u.tag.permanent &&
                   !MPIDI_PART_st_is_armed(&op->st)) {
            /* with leases per iteration: it waits for a CTS that will never come, and has
             * sent nothing (the CTS arms it, under this lock) */
            complete = MPIDI_PART_fail_refused_locked(op, iter - 1);
        }
        if (doom || complete)
            op->refs++;
    }
    MPIDI_PART_UNLOCK();
    if (complete) {
        MPIDI_PART_complete_iteration(op);
        MPIDI_PART_op_release(op);
    }
#ifdef MPIDI_CH4_PART_RDMA
    if (doom) {
        MPIDI_PART_rdma_failed(op, -1); /* the receiver knows: not told back */
        MPIDI_PART_op_release(op);
    }
#endif
}

/* The engine's handshake work: queued messages and the transports' own (no re-entry, one
 * thread at a time). An error of one operation's handshake fails that operation (its
 * request completes with it); it never drops other operations' messages. */
int MPIDI_PART_handshake(void)
{
    int mpi_errno = MPI_SUCCESS;

    if (MPL_atomic_cas_int(&MPIDI_PART_global.in_hs, 0, 1) != 0)
        return MPI_SUCCESS;

    MPIDI_PART_LOCK();
    MPIDI_PART_inbox_t *e = MPIDI_PART_global.inbox_head;
    MPIDI_PART_global.inbox_head = MPIDI_PART_global.inbox_tail = NULL;
    MPIDI_PART_UNLOCK();

    while (e) {
        MPIDI_PART_inbox_t *next = e->next;
        MPIDI_PART_op_t *op;
        int err = MPI_SUCCESS;
        switch (e->hdr.kind) {
            case MPIDI_PART_MSG_RTS:
                err = handle_rts(e);    /* takes e */
                e = NULL;
                break;
            case MPIDI_PART_MSG_PLAN:
                /* alive: it holds a reference until its one PLAN has come */
                MPIDI_PART_LOCK();
                op = named_op(&e->hdr);
                MPIDI_PART_UNLOCK();
                if (op) {
                    err = handle_plan(op, &e->hdr);
                    MPIDI_PART_op_release(op); /* the handshake reference */
                }
                break;
            case MPIDI_PART_MSG_CTS:
                /* a reference while the CTS sends what waited for it: those messages may
                 * complete the request in another thread, and the program free it */
                MPIDI_PART_LOCK();
                op = named_op(&e->hdr);
                if (op && op->refs > 0)
                    op->refs++;
                else
                    op = NULL;
                MPIDI_PART_UNLOCK();
                if (op && op->tp && op->tp->ctl) {
                    err = op->tp->ctl(op, &e->hdr);
                } else if (op && op->tp == NULL && !op->freed && op->early_ncts < 2 &&
                           e->hdr.ext_len == (int32_t) sizeof(op->early_cts_ext[0])) {
                    /* before the PLAN: the receiver released the lock after installing
                     * its plan and its MPI_Start sent this CTS before the hook thread sent
                     * the PLAN; dropped, the sender's iteration waited for it forever */
                    op->early_cts_iter[op->early_ncts] = e->hdr.iter;
                    memcpy(op->early_cts_ext[op->early_ncts], e->hdr.ext, e->hdr.ext_len);
                    op->early_ncts++;
                }
                if (op)
                    MPIDI_PART_op_release(op);
                break;
            case MPIDI_PART_MSG_LAYOUT:
                err = handle_layout(&e->hdr);
                break;
            case MPIDI_PART_MSG_EARLY:
                /* the live sender it names (it may have been freed since) */
                MPIDI_PART_LOCK();
                for (op = MPIDI_PART_global.all; op; op = op->all_next)
                    if ((uint64_t) (uintptr_t) op == e->hdr.sop && op->is_send &&
                        op->serial == e->hdr.serial)
                        __atomic_store_n(&op->early, 1, __ATOMIC_RELAXED);
                MPIDI_PART_UNLOCK();
                break;
            case MPIDI_PART_MSG_WITHDRAW:
                handle_withdraw(&e->hdr);
                break;
            case MPIDI_PART_MSG_RELEASE:
                handle_release(&e->hdr);
                break;
#ifdef MPIDI_CH4_PART_RDMA
            case MPIDI_PART_MSG_FAIL:
                MPIDI_PART_rdma_peer_failed(&e->hdr);
                break;
            case MPIDI_PART_MSG_COUNT:
                MPIDI_PART_rdma_peer_count(&e->hdr);
                break;
#endif
            default:
                break;
        }
        MPL_free(e);
        e = next;
        if (err && mpi_errno == MPI_SUCCESS)
            mpi_errno = err;    /* the engine's own failure (e.g. an active-message send) */
    }

    int err = MPIDI_PART_tag_handshake();
    if (err && mpi_errno == MPI_SUCCESS)
        mpi_errno = err;

    MPIDI_PART_LOCK();
    MPIDI_PART_clear_work(MPIDI_PART_WORK_HANDSHAKE, MPIDI_PART_global.inbox_head != NULL ||
                          MPIDI_PART_global.lease_head != NULL ||
                          MPIDI_PART_global.leased != NULL);
    MPIDI_PART_UNLOCK();
    MPL_atomic_release_store_int(&MPIDI_PART_global.in_hs, 0);
    return mpi_errno;
}

/* The sum of the VCIs' progress counts. MPICH moves a VCI's count whenever it releases a
 * request of that VCI, so also when a wire message's request completes: while the sum
 * stays, no message in flight can have completed, and the progress call skips the locked
 * poll (section 4). */
static inline unsigned vci_events(void)
{
    unsigned sum = 0;
    for (int v = 0; v < MPIDI_global.n_vcis; v++)
        sum += (unsigned) MPL_atomic_acquire_load_int(&MPIDI_VCI(v).progress_count);
    return sum;
}

/* Poll anyway every 64th skip of this thread: MPICH bumps the counts with a plain load and
 * store, so two bumps can collapse into one, and the engine's own bump (poke_progress) is
 * made without the VCI's lock. A lost bump then delays a completion by 64 progress calls;
 * it never hangs. */
static inline int poll_backstop(void)
{
    /* initial-exec: a plain %fs load, no __tls_get_addr call in the waiters' loop */
    static __thread unsigned skips __attribute__ ((tls_model("initial-exec")));
    return (++skips & 63) == 0;
}

#ifdef MPIDI_CH4_PART_RDMA
/* Whether this call reads the RDMA completion queues (README 4b): every call while an
 * operation is busy (part_rdma_busy) or within 1 ms of an iteration's end, otherwise every
 * 1024th call of a thread. Over libfabric's tcp provider each read is a poll() system call,
 * which one idle operation used to add to every MPI progress call of the program. */
static inline int rdma_due(void)
{
    static __thread unsigned skips __attribute__ ((tls_model("initial-exec")));
    if (MPL_atomic_relaxed_load_uint64(&MPIDI_PART_pvars[MPIDI_PART_PV_RDMA_BUSY].v) > 0)
        return 1;
    if (unlikely(__atomic_load_n(&MPIDI_PART_rdma_linger_ns, __ATOMIC_RELAXED)) &&
        MPIDI_PART_rdma_lingering())
        return 1;
    return (++skips & 1023) == 0;
}
#endif

/* ch4's progress, after the netmods (maint/patches/0009): one load when there is nothing
 * to do. */
int MPIDI_PART_progress(void)
{
    int mpi_errno = MPI_SUCCESS;
    int work = MPL_atomic_acquire_load_int(&MPIDI_PART_global.work);

    if (likely(work == 0) || unlikely(!MPIDI_PART_global.initialized) ||
        unlikely(MPIDI_PART_global.stopped))
        return MPI_SUCCESS;
    if (work & MPIDI_PART_WORK_HANDSHAKE) {
        mpi_errno = MPIDI_PART_handshake();
        MPIR_ERR_CHECK(mpi_errno);
    }
#ifdef MPIDI_CH4_PART_RDMA
    if ((work & MPIDI_PART_WORK_RDMA) && rdma_due()) {
        mpi_errno = MPIDI_PART_rdma_progress();
        MPIR_ERR_CHECK(mpi_errno);
    }
#endif
    if (unlikely(work & MPIDI_PART_WORK_DRAIN) && MPIDI_PART_drain_due()) {
        mpi_errno = MPIDI_PART_tag_drain();
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (work & MPIDI_PART_WORK_POLL) {
        unsigned events = vci_events();
        if (events != (unsigned) MPL_atomic_relaxed_load_int(&MPIDI_PART_global.poll_seen) ||
            MPL_atomic_relaxed_load_int(&MPIDI_PART_global.poll_force) || poll_backstop())
            MPIDI_PART_poll_all(events);
        uint64_t vci_mask = MPL_atomic_relaxed_load_uint64(&MPIDI_PART_global.poll_vcis);
        if (vci_mask) {
            /* a waiter polls only its request's VCI: move the VCIs our messages are on */
            mpi_errno = MPIDI_PART_vci_progress(vci_mask);
            MPIR_ERR_CHECK(mpi_errno);
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
