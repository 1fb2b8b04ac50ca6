/*
 * part_core.c: the partitioned-request entry points ch4 calls (part_ch4.h): init, start,
 * ready, arrived, free; and the core's completion accounting. Transport-independent: the
 * wire messages are moved by the operation's transport (op->tp, part_impl.h), the state
 * machine is part_state.[ch].
 *
 * Hot paths: MPI_Pready (one atomic swap and one atomic decrement per partition; the call
 * that completes a wire message hands it to the transport, no lock) and MPI_Parrived (one
 * load when the partition's message is done).
 */
#include "part_impl.h"
#include "part_info.h"
#ifdef MPIDI_CH4_PART_RDMA
#include "part_rdma.h"
#endif

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_AGGR_SIZE
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Merge consecutive wire messages of a partitioned operation while the merged message
        stays within this many bytes. 0 disables merging: one wire message per
        gcd(send partitions, receive partitions). Read by MPI_Precv_init; the receiver's
        value decides. A negative value makes MPI_Precv_init fail with MPI_ERR_ARG. The
        info key mpich_part_aggr_size of MPI_Precv_init (a decimal number of bytes, 0 to
        2147483647; others: MPI_ERR_INFO_VALUE) sets it for that operation instead.

    - name        : MPIR_CVAR_PART_DEBUG_START_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: an MPI_Start that begins its iteration under the engine lock (not in
        the steady state) busy-waits this many microseconds after it released the lock,
        before it releases the last iteration's wire requests: for a receive, so that a
        sender's WITHDRAW can be handled meanwhile (threads/part/part_race_withdraw; pvar
        part_withdraw_in_start counts those); for a send, so that a thread held up in the
        last iteration's MPI_Pready comes meanwhile (threads/part/part_race_inflight, with
        MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: an MPI_Pready, MPI_Pready_range or MPI_Pready_list that finds its send
        not yet planned busy-waits this many microseconds before it takes the engine lock,
        so that the receiver's answer can be installed meanwhile
        (threads/part/part_race_mismatch; pvar part_pready_answer_raced counts those). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: an MPI_Pready, MPI_Pready_range or MPI_Pready_list of an observed
        iteration (the default aggregator's re-plan on the tag transport) busy-waits this
        many microseconds after each message it completed, before it writes that message's
        sample (the waits are not counted in the sample), so that another thread's MPI_Wait
        can end the iteration and MPI_Request_free free the request meanwhile
        (threads/part/part_sample_free; pvar part_sample_after_free counts those). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Testing aid: with N > 0 every partitioned operation numbers its iterations from
        2^32 - N + 1 instead of 1, so that its N-th iteration is number 2^32 and the
        iterations after it need more than 32 bits (iteration numbers are 64 bits; the
        part tests run with it, testlist.cvar). Read once, by MPI_Init; every process
        must set the same value. 0: off; a negative value counts as 0. It moves the
        iterations MPIR_CVAR_PART_OFI_DEBUG_FAULT_ITER counts from with it.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Bump VCI 0's progress count so that a waiter in MPID_Progress_wait re-checks its request
 * after the engine changed a completion counter outside the netmod's completion path. */
void MPIDI_PART_poke_progress(void)
{
    int c = MPL_atomic_relaxed_load_int(&MPIDI_VCI(0).progress_count);
    MPL_atomic_relaxed_store_int(&MPIDI_VCI(0).progress_count, c + 1);
}

/* The status of the iteration that completes (before the completion is published). */
void MPIDI_PART_set_status(MPIDI_PART_op_t * op)
{
    MPIR_Request *req = op->req;
    /* atomic: a refusal may set it in the hook while a receiver's direct_arm reads it (the
     * hook then sets the status again before it cancels; ThreadSanitizer) */
    int error = __atomic_load_n(&op->error, __ATOMIC_ACQUIRE);
    if (unlikely(error != MPI_SUCCESS))
        error = MPIDI_PART_error_again(op, error);
    if (op->is_send) {
        req->status.MPI_ERROR = error;
        return;
    }
    if (op->peer == MPI_PROC_NULL) {
        MPIR_Status_set_procnull(&req->status);
        return;
    }
    MPIR_STATUS_SET_COUNT(req->status, error ? 0 : op->peer_bytes);
    req->status.MPI_SOURCE = op->peer;
    req->status.MPI_TAG = op->tag;
    req->status.MPI_ERROR = error;
}

/* The iteration is over: its status, then the request (also for an iteration without wire
 * messages, EMPTY or FAILED, that was waiting for the plan). */
void MPIDI_PART_complete_iteration(MPIDI_PART_op_t * op)
{
#ifdef MPIDI_CH4_PART_RDMA
    if (op->rdma)
        MPIDI_PART_rdma_idle(op);
#endif
    MPIDI_PART_set_status(op);
    MPIR_cc_dec(op->req->cc_ptr);       /* last: the user may free the request after this */
    MPIDI_PART_poke_progress();
}

/* Lock-free: the iteration's last message is done. */
static void iteration_done(MPIDI_PART_op_t * op)
{
    if (op->is_send) {
        MPIDI_PART_PVAR_ADD(WIRE_MSGS_SENT, op->st.nmsgs);
        MPIDI_PART_PVAR_ADD(USER_PARTS_SENT, op->partitions);
    }
    if (op->spread)
        MPIDI_PART_PVAR_ADD(VCI_SPREAD_MSGS, op->spread);
    MPIDI_PART_complete_iteration(op);
}

void MPIDI_PART_msg_done(MPIDI_PART_op_t * op, int m)
{
    if (MPIDI_PART_st_msg_done(&op->st, m) == 1)
        iteration_done(op);
}

void MPIDI_PART_msg_done_at(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    if (MPIDI_PART_st_msg_done_at(&op->st, m, iter) == 1)
        iteration_done(op);
}

/* iter: the message's iteration, read before its send or receive was posted. A caller held
 * up after its test found the message in flight may come when another thread's poll has
 * counted it, the iteration has ended and the program's MPI_Start has begun the next one
 * (its lock released, the last iteration's requests not yet released: start_locked): put
 * back in the polling list then, the operation would have the hook count those old
 * requests as the new iteration's messages, which could then end before the program
 * readied them (found by a review). Nor when its iteration has ended and the next not
 * begun: a lock-free steady start (which found the operation out of the list) may begin it
 * while the hook, seeing none running, takes the operation out again, after a message of
 * the new iteration found it in the list and did not link it (found by the next review).
 * Either way the iteration is over: nothing to poll. */
void MPIDI_PART_msg_in_flight(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    if (MPL_atomic_acquire_load_int(&op->in_poll))
        return;
    MPIDI_PART_LOCK();
    if (MPIDI_PART_st_iter(&op->st) != iter)
        MPIDI_PART_PVAR_ADD(INFLIGHT_LATE, 1);  /* the next one has begun */
    else if (MPIDI_PART_st_is_running(&op->st) && !MPL_atomic_relaxed_load_int(&op->in_poll)) {
        op->pnext = MPIDI_PART_global.polling;
        MPIDI_PART_global.polling = op;
        MPL_atomic_release_store_int(&op->in_poll, 1);
        MPL_atomic_relaxed_store_int(&MPIDI_PART_global.poll_force, 1);
        MPIDI_PART_set_work(MPIDI_PART_WORK_POLL);
    }
    MPIDI_PART_UNLOCK();
}

/* Lock held. */
static void unpoll(MPIDI_PART_op_t * op)
{
    if (!MPL_atomic_relaxed_load_int(&op->in_poll))
        return;
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.polling; *pp; pp = &(*pp)->pnext) {
        if (*pp == op) {
            *pp = op->pnext;
            break;
        }
    }
    MPL_atomic_relaxed_store_int(&op->in_poll, 0);
}

/* Send messages that became sendable (no lock). */
int MPIDI_PART_send_ready(MPIDI_PART_op_t * op, const int32_t * msgs, int n)
{
    int mpi_errno = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        mpi_errno = op->tp->send(op, msgs[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_op_alloc_msgs(MPIDI_PART_op_t * op, int nmsgs)
{
    int mpi_errno = MPI_SUCCESS;
    size_t n = nmsgs > 0 ? nmsgs : 1;

    /* one allocation: the done stamps of either side (aligned at its start), then a
     * sender's counters and its held flags */
    size_t done_bytes = n * sizeof(MPIDI_PART_iter_t);
    char *mem = MPL_calloc(1, done_bytes + (op->is_send ? n * (sizeof(int32_t) + 1) : 0),
                           MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(mem == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    op->msgs_mem = mem;
    op->done = (MPIDI_PART_iter_t *) mem;
    if (op->is_send) {
        op->cntr = (int32_t *) (mem + done_bytes);
        op->held = (uint8_t *) (mem + done_bytes + n * sizeof(int32_t));
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- creation and destruction ----------------------------------------------------------- */

/* The info key mpich_part_thread_partitions: how many consecutive partitions one thread
 * readies (sender) or polls (receiver). 0 when absent; an error unless 1..partitions;
 * ignored by an operation of 0 partitions (no value could be right: it was an error that
 * asked for a number "from 1 to the 0 partitions"; found by a review). */
static int thread_parts_hint(MPIR_Info * info, int partitions, int *value)
{
    int mpi_errno = MPI_SUCCESS, flag = 0;
    char str[MPI_MAX_INFO_VAL + 1];

    *value = 0;
    if (info == NULL || partitions == 0)
        goto fn_exit;
    mpi_errno = MPIR_Info_get_impl(info, "mpich_part_thread_partitions", MPI_MAX_INFO_VAL, str,
                                   &flag);
    MPIR_ERR_CHECK(mpi_errno);
    if (!flag)
        goto fn_exit;
    MPIR_ERR_CHKANDJUMP2(!MPIDI_PART_info_decimal(str, 1, partitions, value), mpi_errno,
                         MPI_ERR_INFO_VALUE, "**partthreadhint", "**partthreadhint %s %d", str,
                         partitions);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_PART_op_free_memory(MPIDI_PART_op_t * op)
{
    MPL_free(op->msgs_mem);
    MPL_free(op->rts_ext);
    MPL_free(op->obs_base);
    MPIDI_PART_errors_free(op);
    MPL_free(op);       /* with a sender's ready flags */
}

static int op_create(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype, int peer,
                     int tag, MPIR_Comm * comm, MPIR_Info * info, MPIR_Request_kind_t kind,
                     MPIR_Request ** request, MPIDI_PART_op_t ** op_out)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *req = NULL;
    MPIDI_PART_op_t *op = NULL;
    int thread_parts, choice, is_send = (kind == MPIR_REQUEST_KIND__PART_SEND);

    MPIR_ERR_CHKANDJUMP1(count < 0, mpi_errno, MPI_ERR_COUNT, "**partcount", "**partcount %d",
                         (int) count);
    MPIR_ERR_CHKANDJUMP1(partitions < 0, mpi_errno, MPI_ERR_ARG, "**partpartitions",
                         "**partpartitions %d", partitions);
    mpi_errno = thread_parts_hint(info, partitions, &thread_parts);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_PART_choice(&choice);
    MPIR_ERR_CHECK(mpi_errno);

    MPI_Aint extent, size, true_lb;
    int dt_contig;
    size_t dt_bytes;
    MPIR_Datatype *dt_ptr;
    MPIR_Datatype_get_extent_macro(datatype, extent);
    MPIR_Datatype_get_size_macro(datatype, size);
    MPIDI_Datatype_get_info(1, datatype, dt_contig, dt_bytes, dt_ptr, true_lb);
    (void) dt_bytes;
    (void) dt_ptr;
    /* the bytes of one partition and of the whole buffer must fit MPI_Aint */
    MPI_Aint part_extent, part_bytes, total_bytes, span, ext_abs = extent < 0 ? -extent : extent;
    MPIR_ERR_CHKANDJUMP3(__builtin_mul_overflow(ext_abs, count, &part_extent) ||
                         __builtin_mul_overflow(size, count, &part_bytes) ||
                         __builtin_mul_overflow(part_bytes, (MPI_Aint) partitions, &total_bytes) ||
                         __builtin_mul_overflow(part_extent, (MPI_Aint) partitions, &span),
                         mpi_errno, MPI_ERR_COUNT, "**partoverflow", "**partoverflow %d %L %L",
                         partitions, (long long) count, (long long) size);

    /* a sender's ready flags follow the op in its allocation, a cache line after its last
     * field: MPI_Pready's threads write the flags, the progress hook the op's fields */
    size_t ready_at = sizeof(*op) + MPIDI_PART_CACHE_LINE;
    op = MPL_calloc(1, is_send ? ready_at + (size_t) partitions * sizeof(int32_t) : sizeof(*op),
                    MPL_MEM_OTHER);
    MPIR_ERR_CHKANDSTMT(op == NULL, mpi_errno, MPI_ERR_OTHER, goto fn_fail, "**nomem");
    op->timer_ns = -1;
    if (is_send && partitions > 0)
        op->ready = (int32_t *) ((char *) op + ready_at);
    /* request pool 0 is VCI 0's: its lock, as MPICH's own partitioned init takes (another
     * thread may free a pool-0 request meanwhile; ThreadSanitizer, part_race_release) */
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    MPIDI_CH4_REQUEST_CREATE(req, kind, 0, 1);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    MPIR_ERR_CHKANDSTMT(req == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");

    MPIDI_PART_LOCK();
    if (!MPIDI_PART_global.tags_ready)
        mpi_errno = MPIDI_PART_tags_init();     /* the layout needs the netmods' tag bits */
    MPIDI_PART_UNLOCK();
    MPIR_ERR_CHECK(mpi_errno);

    /* nothing fails from here on */
    MPIR_Comm_add_ref(comm);
    req->comm = comm;
    MPIR_Datatype_add_ref_if_not_builtin(datatype);
    /* the engine keeps the buffer in op->buf; this field stays NULL: MPICH's MPID_Startall
     * (MPI_Start's too) reads every request's persistent point-to-point field "rank",
     * which lies on its low half, before it looks at the kind, and skips a request whose
     * "rank" is MPI_PROC_NULL, so a buffer at 0x....ffffffff was never started
     * (part_badinput) */
    MPIDI_PART_REQUEST(req, buffer) = NULL;
    MPIDI_PART_REQUEST(req, count) = count;
    MPIDI_PART_REQUEST(req, datatype) = datatype;
    if (is_send) {
        MPIDI_PART_REQUEST(req, u.send.dest) = peer;
    } else {
        MPIDI_PART_REQUEST(req, u.recv.source) = peer;
        MPIDI_PART_REQUEST(req, u.recv.tag) = tag;
        MPIDI_PART_REQUEST(req, u.recv.context_id) = comm->recvcontext_id;
    }
    req->u.part.partitions = partitions;
    MPIR_Part_request_inactivate(req);
    MPIR_cc_set(req->cc_ptr, 0);        /* inactive requests are complete */

    MPIDI_PART_st_init(&op->st, is_send, partitions, op->ready);
    op->st.iter = MPIDI_PART_ITER0;     /* 0 unless the testing aid is set */
    op->req = req;
    op->is_send = is_send;
    op->refs = 1;
    op->thread_parts = thread_parts;
    op->buf = buf;
    op->count = count;
    op->datatype = datatype;
    op->part_extent = extent * count;
    op->partitions = partitions;
    op->total_bytes = size * count * partitions;
    op->peer = peer;
    op->tag = tag;
    op->choice = choice;
    op->contig = dt_contig && true_lb == 0 && extent == size;
    op->context_id = comm->recvcontext_id;
    op->comm = comm;
    MPIR_Comm_add_ref(comm);    /* the op may outlive the request (README, freeing) */
    op->u.tag.base = -1;
#ifndef MPIDI_CH4_DIRECT_NETMOD
    if (peer != MPI_PROC_NULL)
        op->is_local = MPIDI_av_is_local(MPIDIU_comm_rank_to_av(comm, peer));
    MPIDI_REQUEST(req, is_local) = op->is_local;
#endif
    if (peer == MPI_PROC_NULL)
        MPIDI_PART_st_no_peer(&op->st);

    MPIDI_PART_LOCK();
    op->all_next = MPIDI_PART_global.all;
    if (op->all_next)
        op->all_next->all_prev = op;
    MPIDI_PART_global.all = op;
    MPIDI_PART_UNLOCK();
    MPIDI_PART_PVAR_ADD(OPS_LIVE, 1);

    MPIDI_PART_OP(req) = op;
    *request = req;
    *op_out = op;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (op)
        MPIDI_PART_op_free_memory(op);
    if (req) {
        MPIDI_PART_OP(req) = NULL;
        MPIR_Request_free(req);
    }
    goto fn_exit;
}

void MPIDI_PART_all_remove(MPIDI_PART_op_t * op)
{
    if (op->in_matched) {
        MPIDI_PART_op_t **pp = MPIDI_PART_matched_of(op);
        while (*pp != op)
            pp = &(*pp)->rnext;
        *pp = op->rnext;
        op->in_matched = 0;
    }
    if (op->all_prev)
        op->all_prev->all_next = op->all_next;
    else
        MPIDI_PART_global.all = op->all_next;
    if (op->all_next)
        op->all_next->all_prev = op->all_prev;
}

int MPIDI_PART_op_unref(MPIDI_PART_op_t * op)
{
    if (--op->refs > 0)
        return 0;
    MPIDI_PART_all_remove(op);
    return 1;
}

void MPIDI_PART_op_destroy(MPIDI_PART_op_t * op)
{
    if (op->tp)
        op->tp->free(op);
#ifdef MPIDI_CH4_PART_RDMA
    MPIDI_PART_rdma_release(op);        /* offered in the RTS, never planned */
#endif
    MPIR_Comm_release(op->comm);
    MPIDI_PART_PVAR_SUB(OPS_LIVE, 1);
    MPIDI_PART_op_free_memory(op);
}

/* Drop one reference (no lock held). */
int MPIDI_PART_op_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_LOCK();
    int last = MPIDI_PART_op_unref(op);
    MPIDI_PART_UNLOCK();
    if (last)
        MPIDI_PART_op_destroy(op);
    return last;
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
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_RTS;
    hdr.iter = MPIDI_PART_ITER0;  /* the receiver checks that it counts alike */
    hdr.src_rank = comm->rank;
    hdr.tag = tag;
    hdr.context_id = comm->context_id;
    hdr.sop = (uint64_t) (uintptr_t) op;
    hdr.partitions = partitions;
    hdr.thread_parts = op->thread_parts;
    hdr.nvcis = MPIDI_PART_vci_local(comm);
    hdr.bytes = op->total_bytes;
    hdr.choice = op->choice;
    hdr.contig = op->contig;
#ifdef MPIDI_CH4_PART_RDMA
    mpi_errno = MPIDI_PART_rdma_announce(op, &hdr);
    if (mpi_errno) {
        MPIR_Request *req = *request;
        MPIDI_PART_OP(req) = NULL;
        MPIDI_PART_op_release(op);
        MPIR_Request_free(req);
        *request = NULL;
        MPIR_ERR_POP(mpi_errno);
    }
#endif
    MPIDI_PART_LOCK();
    op->refs++;
    op->serial = hdr.serial = ++MPIDI_PART_global.serial;
    MPIDI_PART_matched_add(op); /* the receiver's PLAN and CTS find it there */
    MPIDI_PART_UNLOCK();
    mpi_errno = MPIDI_PART_send_hdr(op, &hdr);
    if (mpi_errno) {
        /* no announcement left: undo the request and the op */
        MPIR_Request *req = *request;
        MPIDI_PART_op_release(op);
        MPIDI_PART_OP(req) = NULL;
        MPIDI_PART_op_release(op);
        MPIR_Request_free(req);
        *request = NULL;
        MPIR_ERR_POP(mpi_errno);
    }

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
    int aggr, aggregator, spread_us, timeout_us, observe;

    mpi_errno = MPIDI_PART_aggr_read(info, &aggr, &aggregator, &spread_us, &timeout_us,
                                     &observe);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = op_create(buf, partitions, count, datatype, source, tag, comm, info,
                          MPIR_REQUEST_KIND__PART_RECV, request, &op);
    MPIR_ERR_CHECK(mpi_errno);
    op->aggr_size = aggr;
    op->aggregator = aggregator;
    op->spread_us = spread_us;
    op->timeout_us = timeout_us;
    op->observe = observe;
    if (source == MPI_PROC_NULL)
        goto fn_exit;

    /* match the announcements in MPI order: the first unexpected RTS with our key wins
     * (one whose sender withdrew too: this receive then fails, MPIDI_PART_take_rts) */
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
    op->refs++; /* the posted queue's, or the matching's */
    if (rts) {
        MPIDI_PART_take_rts(op, &rts->hdr);
    } else {
        op->next = NULL;
        if (MPIDI_PART_global.posted_tail)
            MPIDI_PART_global.posted_tail->next = op;
        else
            MPIDI_PART_global.posted_head = op;
        MPIDI_PART_global.posted_tail = op;
    }
    MPIDI_PART_UNLOCK();

    if (rts) {
        MPL_free(rts);
        mpi_errno = MPIDI_PART_match_posted(op);
        MPIDI_PART_op_release(op);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- iterations ---------------------------------------------------------------------------- */

/* An operation on the tag transport in its steady state: planned, with a permanent tag
 * block (no CTS or lease arms its iterations), its re-plan behind it (or none to come), and
 * no message of its last iteration in the polling list. Nothing but its own MPI calls writes
 * its state then: the hook changes an operation's state only while its plan, CTS or lease is
 * awaited and at its re-plan (in MPI_Start, below; a receiver's LAYOUT comes before the
 * re-plan's iteration), and the RDMA backends' peer failures do not apply; a sender's
 * WITHDRAW (a receive's RELEASE) only sets op->refused, which sends the next start here. Its iteration begins
 * without the engine lock. */
static inline int steady_tag(MPIDI_PART_op_t * op)
{
    if (MPIDI_PART_st_get_state(&op->st) != MPIDI_PART_ST_PLANNED)
        return 0;
    return op->tp == &MPIDI_PART_tag_transport && op->u.tag.permanent &&
        !MPIDI_PART_replan_ahead(op) && !MPL_atomic_acquire_load_int(&op->in_poll) &&
        (likely(!__atomic_load_n(&op->refused, __ATOMIC_ACQUIRE)) ||
         op->st.iter + 1 < op->refused_from);
}

/* A receiver whose last iteration completed directly (its wire receive decremented the
 * request's counter): the iteration is over (the request is inactive), so count its message
 * done in the state machine now. */
static inline void direct_catch_up(MPIDI_PART_op_t * op)
{
    if (__atomic_load_n(&op->direct, __ATOMIC_RELAXED)) {
        __atomic_store_n(&op->direct, 0, __ATOMIC_RELAXED);
        int ended = MPIDI_PART_st_direct_end(&op->st);
        MPIR_Assert(ended == 1);
    }
}

/* MPI_Start of an operation not in its steady state (the plan, a CTS or lease, or the
 * re-plan may be under way): the previous iteration's reset and the state's start under the
 * engine lock. Returns the state's start action in *action. */
static int start_locked(MPIDI_PART_op_t * op, int *action)
{
    int mpi_errno = MPI_SUCCESS;
    int send_layout = 0;
    MPIDI_PART_plan_t plan = { 0 };     /* a sender's re-plan (0: keep the first plan) */

    MPIDI_PART_iter_t replan_iter = __atomic_load_n(&op->replan_iter, __ATOMIC_ACQUIRE);
    if (unlikely(op->is_send && replan_iter)) {
        /* the plan of a sender is installed when its first iteration ends: st.iter and
         * st.nmsgs are stable before its next start (section 4c) */
        MPIDI_PART_iter_t next = op->st.iter + 1;
        MPIDI_PART_iter_t first = replan_iter - MPIDI_PART_ITER0 > 2 + MPIDI_PART_OBS_ITERS ?
            replan_iter - MPIDI_PART_OBS_ITERS : MPIDI_PART_ITER0 + 2;
        if (next >= first && next < replan_iter) {
            /* an observed iteration: its MPI_Pready calls note when messages complete, in
             * the next sample (none when there is no memory: the first plan stays) */
            if (op->obs_base == NULL)   /* one sample per iteration of the window */
                op->obs_base = MPL_calloc((size_t) (replan_iter - first) * 2 * op->st.nmsgs,
                                          sizeof(int64_t), MPL_MEM_OTHER);
            op->obs = NULL;
            if (op->obs_base && op->obs_n < (int32_t) (replan_iter - first))
                op->obs = op->obs_base + (size_t) 2 * op->st.nmsgs * op->obs_n++;
        } else if (next == replan_iter) {
            /* take in what the receiver said meanwhile (its EARLY notice comes on VCI 0,
             * which this rank's other waits may not have polled: with several VCIs over
             * UCX, MPID_Progress_test left it unread) */
            for (int i = 0; i < 4; i++) {
                mpi_errno = MPIDI_PART_vci_progress(1);
                MPIR_ERR_CHECK(mpi_errno);
                mpi_errno = MPIDI_PART_handshake();
                MPIR_ERR_CHECK(mpi_errno);
            }
            plan = op->st.plan;
            if (op->obs_n > 0)
                MPIDI_PART_aggr_observed(op, &plan);
            /* obs_base stays until the operation is freed: an MPI_Pready that completed
             * the last observed iteration may still be writing its sample */
            op->obs = NULL;
            op->obs_n = 0;
        }
    }
    /* a re-planned receiver's iteration may begin in the hook (its LAYOUT) as soon as the
     * lock is released: release the previous iteration's messages before */
    int reset_early = unlikely(replan_iter) && op->st.iter + 1 == replan_iter && op->tp;
    if (reset_early)
        op->tp->iter_reset(op);
    MPIDI_PART_LOCK();
    unpoll(op); /* the hook no longer looks at the previous iteration's messages */
    /* its sender withdrew (a sender: its receive was freed) before this iteration
     * (section 5): this and every later one fail at once */
    if (unlikely(__atomic_load_n(&op->refused, __ATOMIC_RELAXED)) &&
        op->st.iter + 1 >= op->refused_from &&
        (MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_PLANNED ||
         MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_UNPLANNED)) {
        MPIDI_PART_fail_refused_locked(op, op->st.iter);
    }
    /* a receiver's match may clear replan_iter (atomically, outside the lock) and set
     * op->tp (under it) while this start runs (ThreadSanitizer, part_race_cts_start): both
     * are read here once, under the lock */
    replan_iter = __atomic_load_n(&op->replan_iter, __ATOMIC_RELAXED);
    const struct MPIDI_PART_transport *tp = op->tp;
    if (unlikely(replan_iter) && op->st.iter + 1 == replan_iter)
        send_layout = MPIDI_PART_replan_locked(op, op->is_send ? &plan : NULL);
#ifdef MPIDI_CH4_PART_RDMA
    /* an RDMA operation whose iteration failed (a write, a credit, or the peer's side, which
     * told us: from its iteration on) moves nothing more: this and every later iteration
     * complete at once with that error, as the peer's do (README 4b, "Errors") */
    if (unlikely(op->rdma != NULL)) {
        MPIDI_PART_rdma_doomed(op, op->st.iter + 1);
        if (MPIDI_PART_rdma_error_of(op) != MPI_SUCCESS &&
            MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_PLANNED)
            MPIDI_PART_st_fail(&op->st);
    }
#endif
    *action = MPIDI_PART_st_start(&op->st, 0);
    if (*action == MPIDI_PART_START_RUN && op->is_send && tp->always_armed(op)) {
        int32_t none;   /* nothing is held at the start */
        MPIDI_PART_st_arm(&op->st, &none);
    }
#ifdef MPIDI_CH4_PART_RDMA
    /* under the engine lock: a credit arriving now arms the timer after this reset */
    if (*action == MPIDI_PART_START_RUN && op->timer_ns >= 0 && op->rdma && op->rdma->timer)
        MPIDI_PART_rtimer_start(op, MPIDI_PART_st_is_armed(&op->st));
    int rdma_wait = 0;
    if (*action != MPIDI_PART_START_COMPLETE && op->rdma) {
        MPIDI_PART_rdma_busy(op);       /* the hook reads the queues on every call */
        rdma_wait = op->is_send && !MPIDI_PART_st_is_armed(&op->st);
    }
#endif
    int start_delay = unlikely(MPIR_CVAR_PART_DEBUG_START_DELAY_US > 0);
    int start_window = start_delay && !op->is_send;
    if (start_window)
        __atomic_store_n(&op->start_window, 1, __ATOMIC_RELAXED);      /* under the lock */
    MPIDI_PART_UNLOCK();
    if (start_delay)
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_START_DELAY_US);
    /* the request is not active yet: nothing reads the previous iteration's messages (an
     * operation planned only after the lock was released has none) */
    if (tp && !reset_early)
        tp->iter_reset(op);
    if (start_window)
        __atomic_store_n(&op->start_window, 0, __ATOMIC_RELAXED);
    if (send_layout) {
        mpi_errno = MPIDI_PART_send_layout(op);
        MPIR_ERR_CHECK(mpi_errno);
    }
#ifdef MPIDI_CH4_PART_RDMA
    if (rdma_wait) {
        /* the credit may have come while we were idle (the hook then reads the queues
         * seldom): take it now, so that this iteration's first MPI_Pready can write */
        mpi_errno = MPIDI_PART_rdma_progress();
        MPIR_ERR_CHECK(mpi_errno);
    }
#endif

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPI_Startall: MPICH's binding checks that no entry is active before any starts, which a
 * request named twice passes; the second start would then find it active with the others
 * after it never started. Found here first, the whole call fails and nothing starts.
 * O(count): each operation notes where it was seen; the notes are cleared before return. */
int MPIDI_PART_startall_check(int count, MPIR_Request * requests[])
{
    int mpi_errno = MPI_SUCCESS, i, first = -1;

    for (i = 0; i < count; i++) {
        MPIR_Request *req = requests[i];
        if (req->kind != MPIR_REQUEST_KIND__PART_SEND && req->kind != MPIR_REQUEST_KIND__PART_RECV)
            continue;
        MPIDI_PART_op_t *op = MPIDI_PART_OP(req);
        if (op->startall_at) {
            first = op->startall_at - 1;
            break;
        }
        op->startall_at = i + 1;
    }
    for (int j = 0; j < i; j++) {
        MPIR_Request *req = requests[j];
        if (req->kind == MPIR_REQUEST_KIND__PART_SEND || req->kind == MPIR_REQUEST_KIND__PART_RECV)
            MPIDI_PART_OP(req)->startall_at = 0;
    }
    MPIR_ERR_CHKANDJUMP2(first >= 0, mpi_errno, MPI_ERR_REQUEST, "**partstartdup",
                         "**partstartdup %d %d", first, i);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_start(MPIR_Request * request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);
    int action = -1;    /* -1: the iteration has not begun */

    /* not reached from MPI_Start or MPI_Startall (their binding checks, and
     * MPIDI_PART_startall_check for a request named twice); kept for any other caller */
    MPIR_ERR_CHKANDJUMP(unlikely(MPIR_Part_request_is_active(request)), mpi_errno,
                        MPI_ERR_REQUEST, "**partstartactive");
    MPIR_cc_set(request->cc_ptr, 1);
    direct_catch_up(op);
    if (likely(steady_tag(op))) {
        op->tp->iter_reset(op); /* the last iteration's requests (nothing reads them) */
        action = MPIDI_PART_st_start(&op->st, 0);
        if (action == MPIDI_PART_START_RUN && op->is_send) {
            int32_t none;       /* nothing is held at the start */
            MPIDI_PART_st_arm(&op->st, &none);
        }
    } else {
        mpi_errno = start_locked(op, &action);
        MPIR_ERR_CHECK(mpi_errno);
    }

    if (action == MPIDI_PART_START_COMPLETE) {
        MPIDI_PART_set_status(op);
        MPIR_cc_set(request->cc_ptr, 0);
#ifdef MPIDI_CH4_PART_RDMA
        if (unlikely(op->rdma != NULL))
            MPIDI_PART_rdma_idle(op);   /* nothing in flight: the hook need not read the
                                         * queues for it (a failed operation) */
#endif
    } else if (action == MPIDI_PART_START_RUN && !op->is_send) {
        /* (a sender's WITHDRAW handled meanwhile: the tag transport's arm ends an
         * iteration its sender never started; an RDMA receiver's start and the hook's doom
         * are serialised by the lock) */
        mpi_errno = op->tp->recv_arm(op);
        MPIR_ERR_CHECK(mpi_errno);
    }
    MPIR_Part_request_activate(request);

  fn_exit:
    return mpi_errno;
  fn_fail:
    /* an iteration that began completes, with the error: its MPI_Wait must report it (an
     * inactive request has the empty status, maint/patches/0012) */
    if (action != -1)
        MPIR_Part_request_activate(request);
    goto fn_exit;
}

/* Message m of a planned sender is complete: send it, or hold it until the iteration's
 * credit. */
static inline int msg_complete(MPIDI_PART_op_t * op, int m)
{
    if (likely(MPIDI_PART_st_is_armed(&op->st)))
        return op->tp->send(op, m);
    MPIDI_PART_LOCK();
    int held = MPIDI_PART_st_hold(&op->st, m);
    MPIDI_PART_UNLOCK();
    return held ? MPI_SUCCESS : op->tp->send(op, m);
}

/* Partition p, entry i of the call's n, was readied before: the entries before it were
 * readied (they may be on the wire already), the rest were not; a range's or list's error
 * says so */
static int ready_twice_error(int p, int i, int n)
{
    if (n == 1)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_ARG, "**partreadytwice", "**partreadytwice %d", p);
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_ARG, "**partreadytwicein", "**partreadytwicein %d %d %d",
                                p, i, n - i - 1);
}

/* The testing aid MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US: wait in the window between
 * completing a message of an observed iteration and writing its sample, then count the
 * call if the program freed the request meanwhile (the call's reference keeps the
 * operation and its samples: reading op->freed here is itself what a sanitizer would
 * report without it). Returns the nanoseconds it took, which the samples leave out. */
static int64_t sample_delay(MPIDI_PART_op_t * op) __attribute__ ((noinline));
static int64_t sample_delay(MPIDI_PART_op_t * op)
{
    int64_t t0 = MPIDI_PART_now_ns();
    MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US);
    MPIDI_PART_LOCK();
    if (op->freed)
        MPIDI_PART_PVAR_ADD(SAMPLE_AFTER_FREE, 1);
    MPIDI_PART_UNLOCK();
    return MPIDI_PART_now_ns() - t0;
}

static int pready(MPIR_Request * request, int n, int lo, const int *list)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);
    int i = 0, last = 0;
    int64_t t_in = 0;
    int64_t *obs = NULL;
    int32_t obs_nmsgs = 0;

    if (unlikely(!op->is_send || !MPIR_Part_request_is_active(request))) {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_REQUEST, "**partnotactive", "**partnotactive %s",
                             "MPI_Pready");
    }
    /* the observed iterations (section 4c): this iteration's sample, read once, since the
     * request may complete inside msg_complete and another thread's MPI_Start move op->obs
     * on before this call returns (the samples stay allocated until the operation is freed) */
    obs = op->obs;
    if (unlikely(obs != NULL)) {
        /* the samples are written after msg_complete, which may end the iteration: another
         * thread may then free the request, and the operation with its samples, before
         * this call returns (it wrote into freed memory; found by a review). Held for the
         * call, in the observed iterations only. */
        MPIDI_PART_LOCK();
        op->refs++;
        MPIDI_PART_UNLOCK();
        obs_nmsgs = op->st.nmsgs;
        t_in = MPIDI_PART_now_ns();
    }
    int state = MPIDI_PART_st_get_state(&op->st);
    if (unlikely(state != MPIDI_PART_ST_PLANNED)) {
        /* before the plan (or nothing travels): flags only, under the lock; the plan's
         * installation counts them. Re-checked under the lock: the plan may have come.
         * With nothing to send (EMPTY), the last partition readied ends the iteration. */
        if (unlikely(MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US > 0))
            MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US);
        MPIDI_PART_LOCK();
        int locked_state = MPIDI_PART_st_get_state(&op->st);
        int planned = locked_state == MPIDI_PART_ST_PLANNED;
        if (unlikely(MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US > 0) &&
            state == MPIDI_PART_ST_UNPLANNED && locked_state != state)
            MPIDI_PART_PVAR_ADD(PREADY_ANSWER_RACED, 1);        /* review finding C3 */
        for (; !planned && i < n; i++) {
            int p = list ? list[i] : lo + i;
            int rc = MPIDI_PART_st_ready_unplanned(&op->st, p);
            if (rc == MPIDI_PART_READY_LAST) {
                last = 1;
            } else if (rc == MPIDI_PART_READY_TWICE) {
                mpi_errno = ready_twice_error(p, i, n);
                break;
            }
        }
        MPIDI_PART_UNLOCK();
        if (last)
            MPIDI_PART_complete_iteration(op);
        if (mpi_errno)
            goto fn_fail;
    }
#ifdef MPIDI_CH4_PART_RDMA
    /* i < n: the plan is installed and seen (the state's acquire load, or the lock above),
     * so is timer_ns, which the sender sets before installing it (ThreadSanitizer) */
    MPIDI_PART_iter_t titer;    /* the iteration, read before the flags are set */
    if (i < n && unlikely(op->timer_ns >= 0) && MPIDI_PART_rtimer_active(op, &titer)) {
        /* the timer aggregator decides what goes (part_rdma_timer.c), once for the call's
         * partitions up to the first readied twice */
        int first = i, twice = -1;
        for (; i < n; i++) {
            int p = list ? list[i] : lo + i;
            if (MPIDI_PART_st_ready(&op->st, p) == MPIDI_PART_READY_TWICE) {
                twice = p;
                break;
            }
        }
        if (i > first)
            mpi_errno = MPIDI_PART_rtimer_ready(op, titer, i - first, lo + first,
                                                list ? list + first : NULL);
        if (twice >= 0)
            mpi_errno = ready_twice_error(twice, i, n);
        MPIR_ERR_CHECK(mpi_errno);
    }
#endif
    for (; i < n; i++) {
        int p = list ? list[i] : lo + i;
        int m = MPIDI_PART_st_ready(&op->st, p);
        if (m >= 0) {
            mpi_errno = msg_complete(op, m);
            MPIR_ERR_CHECK(mpi_errno);
            if (unlikely(t_in)) {
                /* when message m completed, and how long this call then spent sending. The
                 * testing aid's waits are left out of the samples: each moves t_in on (so
                 * the call's later messages see its entry that much later) */
                int64_t spent = MPIDI_PART_now_ns() - t_in, start = t_in;
                if (unlikely(MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US > 0))
                    t_in += sample_delay(op);
                obs[m] = start;
                obs[obs_nmsgs + m] = spent;
            }
        } else if (unlikely(m == MPIDI_PART_READY_TWICE)) {
            mpi_errno = ready_twice_error(p, i, n);
            goto fn_fail;
        }
    }

  fn_exit:
    if (unlikely(obs != NULL))
        MPIDI_PART_op_release(op);      /* the observed iteration's reference */
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

/* A receiver of the timer aggregator: the partition came in a run before its whole group. */
static inline int timer_arrived(MPIDI_PART_op_t * op, int partition)
{
#ifdef MPIDI_CH4_PART_RDMA
    return op->timer_ns >= 0 && !op->is_send && MPIDI_PART_rtimer_parrived(op, partition);
#else
    return 0;
#endif
}

/* Receiver, MPI_Parrived true before the re-plan: if the iteration is still under way, the
 * program may make the sender's later MPI_Pready calls wait for this arrival, so a re-plan
 * must not merge on timing alone (section 4c): tell the sender, once. */
/* rare (once per operation): kept out of MPI_Parrived's frame */
static int early_arrival(MPIDI_PART_op_t * op) __attribute__ ((noinline, cold));
static int early_arrival(MPIDI_PART_op_t * op)
{
    if (!MPIDI_PART_st_is_running(&op->st) || op->st.iter >= op->replan_iter ||
        __atomic_exchange_n(&op->early, 1, __ATOMIC_RELAXED))
        return MPI_SUCCESS;
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_EARLY;
    hdr.sop = op->sop;
    hdr.serial = op->serial;
    hdr.timer_ns = -1;
    return MPIDI_PART_send_hdr(op, &hdr);
}

/* Whether an arrival may still need the EARLY notice: only before the re-plan's iteration
 * and before the notice went (after the re-plan, a true MPI_Parrived costs two loads). */
static inline int early_pending(MPIDI_PART_op_t * op)
{
    return unlikely(MPIDI_PART_replan_ahead(op)) && !__atomic_load_n(&op->early, __ATOMIC_RELAXED);
}

/* MPI_Parrived before the plan: all of MPICH's progress. Out of line: its progress state
 * would otherwise make every MPI_Parrived save registers and a frame (~1 ns of a 20 ns
 * false answer). */
static int progress_all(void) __attribute__ ((noinline));
static int progress_all(void)
{
    return MPID_Progress_test(NULL);
}

/* A false MPI_Parrived progresses what carries the partition, not MPICH's progress hooks
 * (nonblocking collectives' schedules, the engine's own polling) nor other VCIs. Every
 * PARRIVED_FULL_EVERY-th false answer of a thread runs all of MPICH's
 * progress instead (progress_all: every VCI and the hooks), so that a program that only
 * polls MPI_Parrived still completes its other operations, as repeated MPI_Test calls
 * would (part/part_parrived_nbc: an MPI_Ibarrier the sender waits for; stock MPICH's
 * MPI_Parrived hangs there with one VCI). It is also the tag transport's progress of every
 * VCI now and then: MPICH's per-thread count (MPIDI_do_global_progress, a TLS lookup per
 * call) is not read on that path. Counted per thread (initial-exec TLS, one %fs load and
 * store): a count shared by the threads polling one VCI is a cache line that each of their
 * false answers writes (bench/results/2026-12-06-parrived-threads). */
#define PARRIVED_FULL_EVERY 256
static __thread unsigned parrived_false __attribute__ ((tls_model("initial-exec")));

static inline int full_progress_due(void)
{
    return ++parrived_false % PARRIVED_FULL_EVERY == 0;
}

/* A true answer that needs nothing more than the flag: not over RDMA, no EARLY notice to
 * send, no withdrawn sender (arrived_answer's checks). RDMA first: every true answer there
 * goes on to arrived_answer, which reads the other two itself. */
static inline int arrival_plain(MPIDI_PART_op_t * op)
{
    return
#ifdef MPIDI_CH4_PART_RDMA
        op->rdma == NULL &&
#endif
        !early_pending(op) && !__atomic_load_n(&op->refused, __ATOMIC_ACQUIRE);
}

/* The tag transport's false answer (MPI_Parrived found message m not done; v =
 * MPIDI_PART_tag_msg_vci(op, m)): every PARRIVED_FULL_EVERY-th time all of MPICH's
 * progress; otherwise VCI v unless another thread holds its lock
 * (MPIDI_PART_vci_try_progress; without MPICH's hooks and other VCIs), then the engine's
 * handshake and drain work if there is any, so that a thread that only polls MPI_Parrived
 * still moves every other operation's handshake and lets kept blocks take what came. Here
 * rather than through the transport's progress_msg (a call and a second test); out of line
 * and reached by a tail call, so that MPI_Parrived's answer saves no registers for the
 * calls this makes. */
static int parrived_vci_poll(int v) __attribute__ ((noinline));
static int parrived_vci_poll(int v)
{
    if (unlikely(full_progress_due()))
        return progress_all();
    int mpi_errno = MPIDI_PART_vci_try_progress(v);
    int work = MPL_atomic_acquire_load_int(&MPIDI_PART_global.work);
    if (unlikely(work) && mpi_errno == MPI_SUCCESS) {
        if (work & MPIDI_PART_WORK_HANDSHAKE)
            mpi_errno = MPIDI_PART_handshake();
        if (mpi_errno == MPI_SUCCESS && (work & MPIDI_PART_WORK_DRAIN) && MPIDI_PART_drain_due())
            mpi_errno = MPIDI_PART_tag_drain();
    }
    return mpi_errno;
}

/* A true answer's checks: a sender that withdrew before this iteration (the partition's
 * receive was cancelled, not arrived) and, over RDMA, a failed iteration (its partitions
 * count as done but never arrived): the error MPI_Wait will return, not "arrived". */
static inline int arrived_error(MPIDI_PART_op_t * op, int mpi_errno)
{
    if (unlikely(__atomic_load_n(&op->refused, __ATOMIC_ACQUIRE)) &&
        op->st.iter >= op->refused_from && mpi_errno == MPI_SUCCESS) {
        /* set before the iteration ended, under the lock */
        mpi_errno = MPIDI_PART_error_again(op, __atomic_load_n(&op->error, __ATOMIC_ACQUIRE));
    }
#ifdef MPIDI_CH4_PART_RDMA
    if (unlikely(op->rdma != NULL) && mpi_errno == MPI_SUCCESS) {
        int err = MPIDI_PART_rdma_error_of(op);
        if (unlikely(err != MPI_SUCCESS))
            mpi_errno = MPIDI_PART_error_again(op, err);
    }
#endif
    return mpi_errno;
}

/* A partition that arrived (the fast path's arrivals that are not arrival_plain, and every
 * arrival parrived_answer finds): the EARLY notice, a withdrawn sender, the RDMA
 * transports' failure check. */
static int arrived_answer(MPIDI_PART_op_t * op, int *flag) __attribute__ ((noinline));
static int arrived_answer(MPIDI_PART_op_t * op, int *flag)
{
    int mpi_errno = MPI_SUCCESS;
    *flag = 1;
    if (early_pending(op))
        mpi_errno = early_arrival(op);
    return arrived_error(op, mpi_errno);
}

static int parrived_answer(MPIDI_PART_op_t * op, int partition, int *flag,
                           MPIDI_PART_iter_t iter) __attribute__ ((noinline));

/* MPI_Parrived. The two common answers here, without a frame: a partition whose message is
 * done (arrival_plain; otherwise arrived_answer adds its checks), and on the tag transport a
 * message whose wire receive is pending (MPIDI_PART_tag_msg_pending; the tag transport has
 * no timer, its timer_ns stays -1: part_match.c), which answers false and moves the
 * message's VCI (parrived_vci_poll). Everything else in parrived_answer. */
int MPIDI_PART_parrived(MPIR_Request * request, int partition, int *flag)
{
    MPIDI_PART_op_t *op = MPIDI_PART_OP(request);
    /* the iteration before the active flag: MPI_Start activates the request only after the
     * last iteration's requests were released, so a call that sees it active names that
     * iteration or an earlier one (read after, a call held up across the program's MPI_Wait
     * and a locked MPI_Start, which begins the iteration before it releases the requests,
     * could pair the new iteration with the last one's request; found by a review) */
    MPIDI_PART_iter_t iter = MPIDI_PART_st_iter(&op->st);

    /* MPI 4.1: an inactive request has nothing pending */
    if (!MPIR_Part_request_is_active(request)) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (likely(MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_PLANNED)) {
        int m = MPIDI_PART_st_msg_of(&op->st, partition);
        if (MPIDI_PART_st_msg_is_done_at(&op->st, m, iter)) {
            if (likely(arrival_plain(op))) {
                *flag = 1;
                return MPI_SUCCESS;
            }
            return arrived_answer(op, flag);
        } else if (likely(op->tp->progress_msg == NULL) && MPIDI_PART_tag_msg_pending(op, m)) {
            /* false without testing again: the next call sees what this progress brought
             * (as stock MPICH's MPI_Parrived does) */
            *flag = 0;
            return parrived_vci_poll(MPIDI_PART_tag_msg_vci(op, m));
        }
    }
    return parrived_answer(op, partition, flag, iter);
}

/* MPI_Parrived past its common answers (iter: MPIDI_PART_parrived's, read before the
 * active flag): before the plan, a failed or empty iteration, a message not yet done that
 * the tag transport's quick test could not call pending, and the RDMA transports' progress. */
static int parrived_answer(MPIDI_PART_op_t * op, int partition, int *flag,
                           MPIDI_PART_iter_t iter)
{
    int mpi_errno = MPI_SUCCESS;
    int state = MPIDI_PART_st_get_state(&op->st);
    if (likely(state == MPIDI_PART_ST_PLANNED)) {
        int m = MPIDI_PART_st_msg_of(&op->st, partition);
        int arrived = MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
        /* the tag transport: progress_msg NULL, its progress is parrived_vci_poll */
        int tag = 0;
        if (!arrived) {
            tag = op->tp->progress_msg == NULL;
            arrived = op->tp->test_msg(op, m, iter) || timer_arrived(op, partition);
        }
        if (arrived)
            return arrived_answer(op, flag);
        /* bounded progress on what carries the partition (and the engine's handshake).
         * On the tag transport without testing again: this call answers false, the next
         * sees what its progress brought (as stock MPICH's MPI_Parrived does); the test
         * and the call were ~3.5 ns of a ~29.5 ns false answer (A/B, alternating, 3
         * rounds). The RDMA transports move VCI 0 (with the endpoint's queue). */
        int done = 0;
        if (likely(tag))
            mpi_errno = parrived_vci_poll(MPIDI_PART_tag_msg_vci(op, m));
        else if (unlikely(full_progress_due()))
            mpi_errno = progress_all();
        else
            mpi_errno = op->tp->progress_msg(op, m, iter, &done);
        MPIR_ERR_CHECK(mpi_errno);
        if (done || timer_arrived(op, partition))
            return arrived_answer(op, flag);
        *flag = 0;
    } else if (state == MPIDI_PART_ST_UNPLANNED) {
        mpi_errno = progress_all();
        MPIR_ERR_CHECK(mpi_errno);
        *flag = 0;
    } else if (state == MPIDI_PART_ST_FAILED) {
        /* the iteration failed (a refused plan: truncation, a size or base mismatch; a
         * refusal): no partition arrived. Return what MPI_Wait will return, not "arrived"
         * (set before the state, under the lock; an RDMA failure's code, below), if it is
         * the iteration this call began in: a call held up while another thread completed
         * it and started a next one whose re-plan failed must not blame the done one */
        *flag = 1;
        if (iter == MPIDI_PART_st_iter(&op->st))
            mpi_errno = MPIDI_PART_error_again(op, __atomic_load_n(&op->error,
                                                                   __ATOMIC_ACQUIRE));
    } else {
        *flag = 1;      /* nothing travels (EMPTY) */
    }

    if (*flag)
        mpi_errno = arrived_error(op, mpi_errno);

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

    /* the request is inactive (MPI_Request_free refuses active ones, maint/patches/0008):
     * every internal request of the last iteration has completed. freed and the transport
     * are set and read under the lock: the handshake (a progress thread) may be installing
     * the plan right now; once it sees freed it installs none, and a plan installed before
     * is complete when the lock is ours (ThreadSanitizer, part_race_free_rts) */
    direct_catch_up(op);
    MPIDI_PART_LOCK();
    unpoll(op);
    op->freed = 1;
    const MPIDI_PART_transport_t *tp = op->tp;
    /* a send tells its receive how many iterations it started: one started beyond them,
     * or any before the PLAN came, must not wait for it (section 5); a failed one's peer
     * knows, an EMPTY one's sends nothing anyway */
    int state = MPIDI_PART_st_get_state(&op->st);
    int refused = __atomic_load_n(&op->refused, __ATOMIC_RELAXED);
    /* (a send that failed only because its receive was freed tells how many iterations
     * ran: the receive may keep their tags until then) */
    int withdraw = op->is_send && op->peer != MPI_PROC_NULL &&
        (state == MPIDI_PART_ST_PLANNED || state == MPIDI_PART_ST_UNPLANNED ||
         (state == MPIDI_PART_ST_FAILED && op->refusal_failed));
    MPIDI_PART_iter_t iters = state == MPIDI_PART_ST_FAILED ? op->ran_iters : op->st.iter;
    /* a planned receive tells its send, which may go on starting iterations (the
     * program's error): those fail from the next on (RELEASE); on the tag transport the
     * block of tags stays out of the pool until no message can come for it any more, so
     * that no later operation receives such a message (section 5) */
    int planned = state == MPIDI_PART_ST_PLANNED || state == MPIDI_PART_ST_FAILED;
    int release = !op->is_send && planned && tp != NULL && op->peer != MPI_PROC_NULL &&
        !refused;
    if (!op->is_send && planned && tp == &MPIDI_PART_tag_transport && op->u.tag.permanent &&
        op->u.tag.base >= 0) {
        /* 1: until the sender's WITHDRAW; 2: for good, as its sender ran more iterations,
         * or its own failed iterations (a LAYOUT it could not install) took no message; a
         * receive that failed for the refusal ran every iteration its sender did */
        if (state == MPIDI_PART_ST_FAILED)
            op->tags_kept = op->refusal_failed ? 0 : 2;
        else
            op->tags_kept = !refused ? 1 : op->refused_from - 1 > op->st.iter ? 2 : 0;
        if (op->tags_kept) {
            op->refs++;
            MPIDI_PART_tag_keep_locked(op);
        }
    }
    MPIDI_PART_UNLOCK();
    /* MPI_Request_free reports no error: none to act on */
    if (withdraw)
        MPIDI_PART_send_withdraw(op, MPIDI_PART_STATUS_FREED, iters);
    if (release)
        MPIDI_PART_send_release(op, op->st.iter);
    if (tp)
        tp->iter_reset(op);
    MPIDI_PART_LOCK();
    op->req = NULL;
    int last = MPIDI_PART_op_unref(op);
    MPIDI_PART_UNLOCK();
    if (last)
        MPIDI_PART_op_destroy(op);
}

/* ---- completion polling (progress hook) ------------------------------------------------ */

/* Test the messages in flight. events: the VCIs' progress counts read before (the next
 * progress call polls again only when they moved, section 4); the VCIs that still carry
 * messages are kept in poll_vcis. */
void MPIDI_PART_poll_all(unsigned events)
{
    uint64_t vci_mask = 0;
    MPIDI_PART_LOCK();
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.poll_force, 0);
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.polling; *pp;) {
        MPIDI_PART_op_t *op = *pp;
        if (MPIDI_PART_st_is_running(&op->st))
            op->tp->poll(op, &vci_mask);
        if (!MPIDI_PART_st_is_running(&op->st)) {
            *pp = op->pnext;
            MPL_atomic_relaxed_store_int(&op->in_poll, 0);
        } else {
            pp = &op->pnext;
        }
    }
    MPL_atomic_relaxed_store_uint64(&MPIDI_PART_global.poll_vcis, vci_mask);
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.poll_seen, (int) events);
    MPIDI_PART_clear_work(MPIDI_PART_WORK_POLL, MPIDI_PART_global.polling != NULL);
    MPIDI_PART_UNLOCK();
}
