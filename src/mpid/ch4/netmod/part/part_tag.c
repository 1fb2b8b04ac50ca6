/*
 * part_tag.c: the tag transport. Each wire message is one netmod isend/irecv (ch4's
 * MPIDI_isend/MPIDI_irecv: MPID_Isend/MPID_Irecv without the self path, wire_isend) on the
 * communicator's private engine context (part_impl.h) with tag base + m, where base names a
 * block of tags the receive operation holds (part_tagspace.[ch]). An operation holds its
 * block for life ("permanent": no control message after the first iteration) while fewer
 * than MPIR_CVAR_PART_TAG_IDS do; otherwise it leases a block per iteration and tells the
 * sender in a CTS (the sender holds complete messages until the CTS of their iteration).
 * Messages are spread over VCIs through communicator views (part_vci.c). Within a node, a
 * wire message too large for the netmod's eager protocol and small enough that eager copies
 * beat a rendezvous travels as several MPI messages under its tag (splitting, README section 3).
 */
#include "part_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_TAG_IDS
      category    : CH4_PART
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        How many partitioned receive operations may hold a block of wire-message tags for
        their whole life in one process (no control message after the first iteration).
        Further operations lease a block per iteration (the CTS path). Tags are handed out
        by need (a block of 2^ceil(log2 n) tags for n wire messages); an operation also
        takes the CTS path when a permanent block would leave less than 1/16 of the tag
        space for leases.

    - name        : MPIR_CVAR_PART_TAG_MAX_REQUESTS
      category    : CH4_PART
      type        : int
      default     : 65536
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The most MPI requests the tag transport's partitioned operations hold at once in
        one process (a request per wire message and per piece of a split one, sends and
        receives of all operations). MPICH aborts a process that asks for more than 262144
        requests of one pool. A receive plan merges partitions into fewer wire messages to
        stay within what the process has left (at least one message per operation), and its
        messages are not split into pieces that would not fit. A plan holds its requests
        until the operation is freed, so operations planned while the budget is used up
        keep one message (a later re-plan only merges). A send whose plan would take its
        process above three times this many fails with MPI_ERR_OTHER, and so does its
        receive (engine README, section 5). Clamped to 1..87381 (three times stays below
        262144). A soft limit: two plans made at once may both take what is left.

    - name        : MPIR_CVAR_PART_DEBUG_TAG_BITS
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: when > 0, the engine uses at most this many tag bits for its wire
        messages (2^bits tags in all), so that tests can exhaust the tag space and drive
        the lease-wait path. 0: all the tag bits the netmods give.

    - name        : MPIR_CVAR_PART_TAG_SPLIT_SIZE
      category    : CH4_PART
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The tag transport sends a wire message of more than this many bytes (and at most
        MPIR_CVAR_PART_TAG_SPLIT_MAX) to a peer on the same node as several MPI messages of
        this many bytes, so that each goes by the netmod's eager protocol instead of one
        rendezvous (a round trip more). -1 (default; any negative value): the eager limit
        that the LogGP table "shm" shows (MPIR_CVAR_PART_LOGGP_FILE, else the built-in one:
        UCX's shared memory sends up to 8255 bytes eagerly here), rounded down to a
        multiple of 64 (8192); no splitting when the table has no protocol step located to
        the byte. 0: never split. Only when both buffers are contiguous and the sizes
        match; not when UCX_TLS leaves out shared memory. The receiver's value decides.

    - name        : MPIR_CVAR_PART_TAG_SPLIT_MAX
      category    : CH4_PART
      type        : int
      default     : 131072
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The largest wire message the tag transport splits (MPIR_CVAR_PART_TAG_SPLIT_SIZE):
        above it one rendezvous costs less than the eager copies (measured within a node:
        eager pieces 2.5x faster at 64-128 KiB, either way at 256 KiB, 1.2x slower at 1 MiB).

    - name        : MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: the thread that arms direct completion of a receive (part_tag.c)
        busy-waits this many microseconds once it has released the VCI lock, so that the
        one message can complete the request, and the program start or free it again,
        before that thread returns (threads/part/part_race_direct_arm). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_TAG_COUNT_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: MPI_Parrived on the tag transport busy-waits this many microseconds
        between seeing a wire message's request complete and counting the message, so that
        another thread can count it, complete the iteration and start the next one before
        the held call counts (threads/part/part_race_tag_count). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: MPI_Parrived's test of a wire message on the tag transport (when its
        answer is not known without one) busy-waits this many microseconds between reading
        the message's request (its first piece's) and reading whether direct completion is
        armed, so that another thread can post the receive, arm it and see it complete
        meanwhile (threads/part/part_race_direct_flag; pvar part_direct_armed_in_test counts
        those). 0: off.

    - name        : MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Testing aid: the send of a tag-transport operation's wire message 0 whose test
        right after posting found it in flight busy-waits, before it has the progress hook
        poll the operation, until the operation's next iteration has begun or this many
        microseconds have passed, so that the iteration ends and the next begins meanwhile
        (threads/part/part_race_inflight, with MPIR_CVAR_PART_DEBUG_START_DELAY_US; pvar
        part_inflight_late counts those that came late). 0: off.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define MAX_ORDER 16    /* at most 65536 wire messages per plan */

/* Lock held. */
int MPIDI_PART_tags_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    int bits = 0;

    while (bits < 40 && ((int64_t) 1 << (bits + 1)) - 1 <= (int64_t) MPIR_Process.attrs.tag_ub)
        bits++;
    if (MPIR_CVAR_PART_DEBUG_TAG_BITS > 0 && MPIR_CVAR_PART_DEBUG_TAG_BITS < bits)
        bits = MPIR_CVAR_PART_DEBUG_TAG_BITS;
    MPIR_ERR_CHKANDJUMP1(MPIDI_PART_tagspace_init(&MPIDI_PART_global.tags, bits) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**parttags", "**parttags %d", bits);
    MPIDI_PART_global.max_order = bits < MAX_ORDER ? bits : MAX_ORDER;
    MPIDI_PART_global.perm_max = MPIR_CVAR_PART_TAG_IDS > 0 ? MPIR_CVAR_PART_TAG_IDS : 0;
    MPIDI_PART_global.perm_blocks = 0;
    MPIDI_PART_global.ucx_shm = MPIDI_PART_ucx_tls_has_shm(getenv("UCX_TLS")) != 0;
    MPIDI_PART_global.tags_ready = 1;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_PART_tags_finalize(void)
{
    if (MPIDI_PART_global.tags_ready)
        MPIDI_PART_tagspace_destroy(&MPIDI_PART_global.tags);
    MPIDI_PART_global.tags_ready = 0;
}

int MPIDI_PART_tag_max_msgs(void)
{
    return 1 << MPIDI_PART_global.max_order;
}

/* MPIR_CVAR_PART_TAG_MAX_REQUESTS, clamped: at least 1, and three times (a sender's limit)
 * below MPICH's 262144 requests per pool. */
static int64_t reqs_max(void)
{
    int64_t v = MPIR_CVAR_PART_TAG_MAX_REQUESTS;
    return v < 1 ? 1 : v > 87381 ? 87381 : v;
}

/* The most wire messages a new receive plan may have: the requests left of reqs_max(), at
 * least 1 (read without reserving: a plan made at the same time may take them too). */
int MPIDI_PART_tag_msgs_left(void)
{
    MPIDI_PART_LOCK();
    int64_t left = reqs_max() - MPIDI_PART_global.tag_reqs;
    MPIDI_PART_UNLOCK();
    int max = MPIDI_PART_tag_max_msgs();
    return left < 1 ? 1 : left < max ? (int) left : max;
}

/* Lock held: op now holds n requests of the process's budget (a sender's count too: the
 * receivers' plans, each within its own process's budget, may add up in one sender). */
static void reqs_hold(MPIDI_PART_op_t * op, int32_t n)
{
    MPIDI_PART_global.tag_reqs += n - op->u.tag.held;
    op->u.tag.held = n;
}

/* A sender refuses a plan that would take it above this many requests (three budgets: below
 * MPICH's 262144 per pool), failing its operation instead of aborting in
 * MPIR_Request_create; it tells its receive, which fails too (README section 5). */
static int64_t send_reqs_max(void)
{
    return 3 * reqs_max();
}

/* Lock held: a block for op (-1: none free). */
static int64_t block_get(MPIDI_PART_op_t * op)
{
    int64_t base = MPIDI_PART_tagspace_alloc(&MPIDI_PART_global.tags, op->u.tag.order);
    if (base >= 0)
        MPIDI_PART_PVAR_ADD(TAG_IDS_IN_USE, 1);
    return base;
}

/* Lock held. */
static void block_put(MPIDI_PART_op_t * op, int64_t base)
{
    MPIDI_PART_tagspace_free(&MPIDI_PART_global.tags, base, op->u.tag.order);
    MPIDI_PART_PVAR_SUB(TAG_IDS_IN_USE, 1);
}

/* Lock held: the receiver gives back its iteration's lease. */
static void lease_return(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    if (t->permanent || t->base < 0)
        return;
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.leased; *pp; pp = &(*pp)->u.tag.lnext) {
        if (*pp == op) {
            *pp = t->lnext;
            break;
        }
    }
    block_put(op, t->base);
    t->base = -1;
}

/* ---- splitting ------------------------------------------------------------------------- */

/* Receiver, at plan time: the piece size for op's wire messages (0: none). */
static int64_t split_decide(MPIDI_PART_op_t * op)
{
    if (MPIR_CVAR_PART_TAG_SPLIT_SIZE == 0 || !op->contig || !op->peer_contig ||
        op->peer_bytes != op->total_bytes || !MPIDI_PART_global.ucx_shm ||
        !MPIDI_PART_peer_on_node(op))
        return 0;
    if (MPIR_CVAR_PART_TAG_SPLIT_SIZE > 0)
        return MPIR_CVAR_PART_TAG_SPLIT_SIZE;
    return MPIDI_PART_aggr_eager_limit_shm() & ~(int64_t) 63;  /* 0 below 64 bytes */
}

/* The requests nmsgs messages use: their pieces with splitting, else one each. */
static inline int32_t reqs_of(const MPIDI_PART_tagop_t * t, int nmsgs)
{
    return t->pfirst ? t->pfirst[nmsgs] : nmsgs;
}

/* Lay out the pieces of plan's messages in the request slots (lock held or no other user:
 * at plan time, and between iterations at a re-plan). */
static void split_map(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int64_t part_bytes = op->partitions > 0 ? op->total_bytes / op->partitions : 0;
    int32_t slot = 0;
    if (!t->pfirst)
        return;
    for (int m = 0; m < plan->nmsgs; m++) {
        int32_t first, nparts;
        MPIDI_PART_plan_msg_range(plan, op->partitions, m, &first, &nparts);
        t->pfirst[m] = slot;
        slot += (int32_t) MPIDI_PART_split_count(nparts * part_bytes, t->split, t->split_max);
    }
    t->pfirst[plan->nmsgs] = slot;
}

/* ---- wire messages ------------------------------------------------------------------- */

/* The engine's wire isend/irecv: MPID_Isend / MPID_Irecv without ch4's path for a
 * communicator of one process (MPI_COMM_SELF, or any of size 1). That path (ch4_self.c)
 * matches on the communicator and tag alone, without the context offset, so a program's
 * MPI_ANY_TAG receive on the communicator took the engine's wire messages (and the
 * operation never completed; part_self). Every wire message goes through the netmod, whose
 * loopback keeps the offset. Their cancel (MPID_Cancel_recv) and a probed message's receive
 * (MPID_Imrecv) pick the self path by the request's comm, which UCX leaves NULL: they take
 * the netmod as they are. */
static inline int wire_isend(const void *buf, MPI_Aint count, MPI_Datatype dt, int rank,
                             int tag, MPIR_Comm * comm, MPIR_Request ** req)
{
    return MPIDI_isend(buf, count, dt, rank, tag, comm, MPIDI_PART_CONTEXT_OFFSET,
                       MPIDIU_comm_rank_to_av(comm, rank), req);
}

static inline int wire_irecv(void *buf, MPI_Aint count, MPI_Datatype dt, int rank, int tag,
                             MPIR_Comm * comm, MPIR_Request ** req)
{
    return MPIDI_irecv(buf, count, dt, rank, tag, comm, MPIDI_PART_CONTEXT_OFFSET,
                       MPIDIU_comm_rank_to_av(comm, rank), req);
}

/* Whether message m is done in iteration iter, counting it if its request completed. iter
 * is the caller's, read before it looked at the message (MPIDI_PART_st_iter): a thread
 * held up after it saw the request complete, while another counted the message, the
 * iteration ended and the program started the next (the steady start frees the request),
 * names the iteration that is over and is not counted again (found by a review; threads/
 * part/part_race_tag_count). parrived: MPI_Parrived's call, which the testing aid holds up
 * between seeing the request complete and counting the message (the aid's CVAR is read
 * only there, not on a false MPI_Parrived). */
static inline int count_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter, int parrived)
{
    if (unlikely(parrived) && MPIR_CVAR_PART_DEBUG_TAG_COUNT_DELAY_US > 0)
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_TAG_COUNT_DELAY_US);
    MPIDI_PART_msg_done_at(op, m, iter);
    return 1;
}

/* The testing aid MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US: wait between test_msg's two
 * reads, then count the call if the message had no request at the first and is armed for
 * direct completion now (the arming ran in the window; test_msg then reads the user
 * request's counter, and the request it did not see is not counted twice). */
static void test_delay(MPIDI_PART_op_t * op, MPIR_Request * r) __attribute__ ((noinline));
static void test_delay(MPIDI_PART_op_t * op, MPIR_Request * r)
{
    MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US);
    if (r == NULL && __atomic_load_n(&op->direct, __ATOMIC_ACQUIRE))
        MPIDI_PART_PVAR_ADD(DIRECT_ARMED_IN_TEST, 1);
}

static int test_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter, int parrived)
{
    /* the message's first slot first, with or without pieces: direct_arm stores op->direct
     * before it publishes the request (with release), so a request seen here comes with
     * the direct flag it was armed with. Read the other way round, a thread could see
     * direct 0, then the armed request complete (it reads the user's counter) and count
     * the message again: the request completed twice (an assertion in MPI_Parrived, or a
     * hang; found by a review, and for operations whose messages may be split, which read
     * the slot after the flag until threads/part/part_race_direct_flag found it) */
    int32_t np, s = MPIDI_PART_tag_msg_slot(&op->u.tag, m, &np);
    MPIR_Request *r = __atomic_load_n(&op->u.tag.wreq[s], __ATOMIC_ACQUIRE);
    if (unlikely(parrived) && MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US > 0)
        test_delay(op, r);
    if (__atomic_load_n(&op->direct, __ATOMIC_ACQUIRE)) {
        /* direct completion (below): the one message's request counts down the user
         * request's own counter; read that (one line fewer than through the message's
         * request), and only note the arrival */
        if (!MPIR_cc_is_complete(&op->req->cc))
            return 0;
        MPIDI_PART_st_msg_seen(&op->st, m, iter);
        return 1;
    }
    if (r == NULL || !MPIR_Request_is_complete(r))
        return MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
    /* split: done when all its pieces are (the first was read above, before the flag; a
     * message of several pieces is never armed) */
    for (int32_t j = 1; j < np; j++) {
        r = __atomic_load_n(&op->u.tag.wreq[s + j], __ATOMIC_ACQUIRE);
        if (!r || !MPIR_Request_is_complete(r))
            return MPIDI_PART_st_msg_is_done_at(&op->st, m, iter);
    }
    return count_msg(op, m, iter, parrived);
}

static int tag_test_msg(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    return test_msg(op, m, iter, 0);
}

/* MPI_Parrived's test (the transport's test_msg), held up by the testing aid. */
static int tag_test_msg_parrived(MPIDI_PART_op_t * op, int m, MPIDI_PART_iter_t iter)
{
    return test_msg(op, m, iter, 1);
}

/* Direct completion. A receiver in its steady state whose iteration is one wire message
 * needs nothing from the engine when it arrives: the message's internal request can count
 * down the user's request itself. ch4 completes a request by decrementing *cc_ptr (and
 * releases its completion reference when that reaches 0), so pointing the wire request's
 * cc_ptr at the user request's counter (1 since MPI_Start) makes the netmod's completion
 * callback complete the partitioned request in the progress call that delivers the data:
 * no polling list, no engine lock, no second pass. The status is set beforehand (the plan
 * fixed the size; the tag transport has no per-message failure once planned).
 *
 * The redirection must not race the completion: both run under the lock of the VCI that
 * carries the message. Only with one VCI in the process (every completion of the message
 * runs under VCI 0's lock, in the netmod's or shared memory's progress or inline in
 * MPID_Irecv); with several, the shared-memory path may map VCIs onto fewer queues. Not on
 * a communicator of one process either (kept from when its messages took ch4's self path,
 * which completes a receive by zeroing its own counter, not through cc_ptr).
 * Whether it armed (op->direct) and the request (its slot) are recorded under that lock
 * too: once the lock is released the message may complete the request in another thread
 * and the program start the next iteration (which reads op->direct and frees the slot's
 * request) or free the request. The first iteration's receives are posted by whichever
 * thread's progress installs the plan, not necessarily the one that waits.
 * For an iteration of one message, r its request for slot s (not yet published). Returns
 * whether r now completes the request. */
static int direct_arm(MPIDI_PART_op_t * op, MPIR_Request * r, int32_t s)
{
    if (!op->u.tag.permanent || op->u.tag.vcomm || MPIDI_global.n_vcis != 1 ||
        MPIDI_PART_replan_ahead(op) || MPIDI_is_self_comm(op->comm)) {
        __atomic_store_n(&op->u.tag.wreq[s], r, __ATOMIC_RELEASE);
        return 0;
    }
    int armed = 0;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    if (!MPIR_cc_is_complete(r->cc_ptr)) {
        MPIDI_PART_set_status(op);      /* before the completion can be seen */
        r->cc_ptr = op->req->cc_ptr;
        armed = 1;
    }
    __atomic_store_n(&op->direct, armed, __ATOMIC_RELAXED);
    __atomic_store_n(&op->u.tag.wreq[s], r, __ATOMIC_RELEASE);       /* after op->direct */
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    /* from here on op may be in its next iteration or freed: only globals */
    if (unlikely(MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US > 0))
        MPIDI_PART_debug_spin_us(MPIR_CVAR_PART_DEBUG_DIRECT_DELAY_US);
    if (armed)
        MPIDI_PART_PVAR_ADD(DIRECT_ITERS, 1);
    return armed;
}

/* Send (sender) or receive (receiver) the np pieces of wire message m, whose nparts
 * partitions start at first, into request slots s.. : byte ranges of a contiguous buffer, in
 * order under the message's tag (MPI keeps their order). */
static int post_pieces(MPIDI_PART_op_t * op, int m, int32_t first, int32_t nparts, int32_t s,
                       int32_t np)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    char *p = (char *) op->buf + first * op->part_extent;
    int64_t bytes = nparts * (op->total_bytes / op->partitions);
    for (int32_t j = 0; j < np; j++) {
        MPIR_Request *r = NULL;
        MPI_Aint len = MPIDI_PART_split_piece(bytes, t->split, np, j);
        if (op->is_send)
            mpi_errno = wire_isend(p + j * t->split, len, MPI_BYTE, op->peer,
                                   (int) (t->base + m), MPIDI_PART_msg_comm(op, m), &r);
        else
            mpi_errno = wire_irecv(p + j * t->split, len, MPI_BYTE, op->peer,
                                   (int) (t->base + m), MPIDI_PART_msg_comm(op, m), &r);
        MPIR_ERR_CHECK(mpi_errno);
        __atomic_store_n(&t->wreq[s + j], r, __ATOMIC_RELEASE);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The testing aid MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US: wait until op's next iteration
 * has begun (or the aid's time has passed). */
static void inflight_delay(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter) __attribute__ ((noinline));
static void inflight_delay(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    int64_t until = MPIDI_PART_now_ns() + 1000 * (int64_t) MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US;
    while (MPIDI_PART_st_iter(&op->st) == iter && MPIDI_PART_now_ns() < until);
}

static int tag_send(MPIDI_PART_op_t * op, int m)
{
    int mpi_errno = MPI_SUCCESS;
    int32_t first, nparts;
    MPIR_Request *r = NULL;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    /* m's iteration: it cannot end before m is sent (by this call) */
    MPIDI_PART_iter_t iter = MPIDI_PART_st_iter(&op->st);

    int32_t np, s = MPIDI_PART_tag_msg_slot(t, m, &np);
    MPIDI_PART_plan_msg_range(&op->st.plan, op->partitions, m, &first, &nparts);
    if (np == 1) {
        mpi_errno = wire_isend(op->buf + first * op->part_extent, nparts * op->count,
                               op->datatype, op->peer, (int) (t->base + m),
                               MPIDI_PART_msg_comm(op, m), &r);
        MPIR_ERR_CHECK(mpi_errno);
        __atomic_store_n(&t->wreq[s], r, __ATOMIC_RELEASE);
    } else {
        mpi_errno = post_pieces(op, m, first, nparts, s, np);
        MPIR_ERR_CHECK(mpi_errno);
        MPIDI_PART_PVAR_ADD(TAG_SPLIT_MSGS, 1);
    }
    if (!tag_test_msg(op, m, iter)) {
        if (unlikely(MPIR_CVAR_PART_DEBUG_INFLIGHT_DELAY_US > 0) && m == 0)
            inflight_delay(op, iter);
        MPIDI_PART_msg_in_flight(op, iter);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Receiver: post iteration iter's receives under t->base (it cannot end before they are
 * posted). */
static int post_recvs(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int n = op->st.nmsgs, all_done = 1, direct = 0;

    for (int m = 0; m < n; m++) {
        int32_t first, nparts, np, s = MPIDI_PART_tag_msg_slot(t, m, &np);
        MPIR_Request *r = NULL;
        MPIDI_PART_plan_msg_range(&op->st.plan, op->partitions, m, &first, &nparts);
        if (np > 1) {
            mpi_errno = post_pieces(op, m, first, nparts, s, np);
            MPIR_ERR_CHECK(mpi_errno);
            continue;
        }
        mpi_errno = wire_irecv(op->buf + first * op->part_extent, nparts * op->count,
                               op->datatype, op->peer, (int) (t->base + m),
                               MPIDI_PART_msg_comm(op, m), &r);
        MPIR_ERR_CHECK(mpi_errno);
        if (n == 1)
            direct = direct_arm(op, r, s);      /* publishes r */
        else
            __atomic_store_n(&t->wreq[s], r, __ATOMIC_RELEASE);
    }
    MPIDI_PART_PVAR_ADD(WIRE_MSGS_RECVD, n);
    if (direct)
        goto fn_exit;   /* nothing to poll: the message completes the request (and op
                         * may already be in its next iteration or freed) */
    for (int m = 0; m < n; m++)
        all_done &= tag_test_msg(op, m, iter);
    if (!all_done)
        MPIDI_PART_msg_in_flight(op, iter);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int send_cts(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter, int64_t base)
{
    MPIDI_PART_hdr_t hdr;
    memset(&hdr, 0, offsetof(MPIDI_PART_hdr_t, ext));
    hdr.kind = MPIDI_PART_MSG_CTS;
    hdr.sop = op->sop;
    hdr.serial = op->serial;
    hdr.iter = iter;
    hdr.ext_len = sizeof(base);
    memcpy(hdr.ext, &base, sizeof(base));
    return MPIDI_PART_send_hdr(op, &hdr);
}

/* A receiver with leases per iteration: a lease for iteration iter (or a place in the queue
 * of those waiting for one), its receives and its CTS. */
static int lease_arm(MPIDI_PART_op_t * op, MPIDI_PART_iter_t iter)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;

    MPIDI_PART_LOCK();
    if (unlikely(__atomic_load_n(&op->refused, __ATOMIC_RELAXED)) &&
        iter >= op->refused_from) {
        /* its sender never started it: no lease (tag_recv_arm ends it, section 5) */
        MPIDI_PART_UNLOCK();
        goto fn_exit;
    }
    int64_t base = t->base = block_get(op);
    if (base >= 0) {
        t->lnext = MPIDI_PART_global.leased;
        MPIDI_PART_global.leased = op;
    } else {
        /* wait for a lease; the hook hands out blocks as they come back */
        op->next = NULL;
        if (MPIDI_PART_global.lease_tail)
            MPIDI_PART_global.lease_tail->next = op;
        else
            MPIDI_PART_global.lease_head = op;
        MPIDI_PART_global.lease_tail = op;
        MPIDI_PART_PVAR_ADD(LEASE_WAITS, 1);
    }
    MPIDI_PART_set_work(MPIDI_PART_WORK_HANDSHAKE);
    MPIDI_PART_UNLOCK();
    if (base < 0)
        goto fn_exit;

    mpi_errno = post_recvs(op, iter);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = send_cts(op, iter, base);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Receiver: arm the iteration that began (its MPI_Start, or the hook that installed its
 * plan or LAYOUT, holding a reference). */
static int tag_recv_arm(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    MPIDI_PART_iter_t iter = __atomic_load_n(&op->st.iter, __ATOMIC_RELAXED);

    /* the slots (and a lease's base) are this iteration's from here on: the last
     * iteration's were released before (MPIDI_PART_tag_refuse reads none before this) */
    __atomic_store_n(&t->armed_iter, iter, __ATOMIC_RELEASE);
    int mpi_errno = t->permanent ? post_recvs(op, iter) : lease_arm(op, iter);
    /* the sender's WITHDRAW, handled while we armed: the hook may have missed receives we
     * posted, so end the iteration here if the sender never started it (the fence pairs
     * with the hook's in MPIDI_PART_tag_refuse, section 5) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (unlikely(__atomic_load_n(&op->refused, __ATOMIC_ACQUIRE)) && iter >= op->refused_from)
        MPIDI_PART_tag_refuse(op);
    return mpi_errno;
}

/* A receiver whose sender withdrew (part_match.c, handle_withdraw; README section 5): if
 * the running iteration is one the sender never started, none of its messages will come, so
 * it ends here, with the refusal's error. Its posted receives are cancelled: each completes,
 * and the poll, or with direct completion the request's own counter, ends the iteration.
 * One still waiting for a lease leaves the queue with every message marked done. Called by
 * the hook once the refusal is set and by the thread that armed the iteration (its
 * MPI_Start, or the hook's plan or LAYOUT) when it saw the refusal only after arming
 * (tag_recv_arm): a fence on each side makes sure that one
 * of them sees every receive posted. Each slot is cancelled by one of them only (refuse_iter
 * and refuse_upto, under the lock; receives are posted in slot order): with direct
 * completion the first cancel may complete the request, and the program start the next
 * iteration or free the request, before a second one would run. The slots below the first
 * empty one may be read without the thread that posts them once it has marked the iteration
 * armed (t->armed_iter): an iteration the sender never started cannot end (and its slots be
 * reset) before its receives are cancelled. Not before: an MPI_Start that began the
 * iteration under the lock releases the last iteration's requests after it, and until then
 * the slots hold those (a cancel of those, counted in refuse_upto, left this iteration's
 * receives posted for ever, and their tags' next user without its messages). */
void MPIDI_PART_tag_refuse(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    MPIR_Request *reqs[64];
    int n, end = 0;
    MPIDI_PART_iter_t end_iter = 0;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);    /* the refusal, then the slots */
    do {
        n = 0;
        MPIDI_PART_LOCK();
        MPIDI_PART_iter_t iter = __atomic_load_n(&op->st.iter, __ATOMIC_RELAXED);
        if (op->tp == &MPIDI_PART_tag_transport && op->refused && iter >= op->refused_from &&
            MPIDI_PART_st_get_state(&op->st) == MPIDI_PART_ST_PLANNED &&
            MPIDI_PART_st_is_running(&op->st) &&
            __atomic_load_n(&t->armed_iter, __ATOMIC_ACQUIRE) == iter) {
            MPIDI_PART_refused_error(op);
            if (t->refuse_iter != iter) {
                t->refuse_iter = iter;
                t->refuse_upto = 0;
            }
            if (!t->permanent && t->base < 0) {
                /* no lease: out of the queue, or never queued (tag_recv_arm) */
                MPIDI_PART_op_t *w, *prev = NULL;
                for (w = MPIDI_PART_global.lease_head; w && w != op; prev = w, w = w->next);
                if (w) {
                    if (prev)
                        prev->next = w->next;
                    else
                        MPIDI_PART_global.lease_head = w->next;
                    if (MPIDI_PART_global.lease_tail == w)
                        MPIDI_PART_global.lease_tail = prev;
                }
                end = t->refuse_upto == 0;      /* once */
                end_iter = iter;
                t->refuse_upto = 1;
            } else if (t->wreq) {
                int32_t ns = reqs_of(t, op->st.nmsgs);
                while (t->refuse_upto < ns && n < 64) {
                    MPIR_Request *r = __atomic_load_n(&t->wreq[t->refuse_upto], __ATOMIC_ACQUIRE);
                    if (r == NULL)
                        break;  /* not posted yet: its poster cancels the rest */
                    MPIR_Request_add_ref(r);
                    reqs[n++] = r;
                    t->refuse_upto++;
                }
                if (n > 0) {
                    /* with direct completion the cancel completes the request: the status
                     * first (direct_arm set it before the slot was published) */
                    MPIDI_PART_set_status(op);
                    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.poll_force, 1);
                }
            }
        }
        MPIDI_PART_UNLOCK();
        for (int i = 0; i < n; i++) {
            MPID_Cancel_recv(reqs[i]);  /* an error leaves it posted: nothing better to do */
            MPIR_Request_free(reqs[i]);
        }
        if (n > 0)
            MPIDI_PART_poke_progress(); /* the poll runs again */
    } while (n == 64);
    for (int m = 0; end && m < op->st.nmsgs; m++)
        MPIDI_PART_msg_done_at(op, m, end_iter);
}


/* A message a kept block took, still arriving into the scratch memory behind it. */
typedef struct MPIDI_PART_catch {
    struct MPIDI_PART_catch *next;
    MPIR_Request *rreq;
} MPIDI_PART_catch_t;

/* A kept block takes what comes at most this often; after a pass that took nothing the
 * period doubles up to DRAIN_PERIOD_MAX_NS (a rendezvous message of an iteration its
 * receive never started waits that long at most; a correct program's kept block, which
 * gets nothing, costs its probes that seldom) */
#define DRAIN_PERIOD_NS 1000000
#define DRAIN_PERIOD_MAX_NS 64000000

void MPIDI_PART_tag_keep_locked(MPIDI_PART_op_t * op)
{
    reqs_hold(op, 0);
    /* until its sender's WITHDRAW: a send that ran an iteration after this receive's last
     * (the program's error) waits for its messages to be received when they are above the
     * eager limit, so the progress hook takes them (MPIDI_PART_tag_drain) */
    if (op->tags_kept == 1) {
        op->u.tag.dnext = MPIDI_PART_global.draining;
        MPIDI_PART_global.draining = op;
        /* the next pass soon (also when one running now ends: drain_kick), and passes
         * once a millisecond again */
        MPIDI_PART_global.drain_period_ns = DRAIN_PERIOD_NS;
        MPIDI_PART_global.drain_kick = 1;
        __atomic_store_n(&MPIDI_PART_global.drain_next_ns, 0, __ATOMIC_RELAXED);
        MPIDI_PART_set_work(MPIDI_PART_WORK_DRAIN);
    }
}

void MPIDI_PART_tag_unkeep_locked(MPIDI_PART_op_t * op)
{
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.draining; *pp; pp = &(*pp)->u.tag.dnext)
        if (*pp == op) {
            *pp = op->u.tag.dnext;
            break;
        }
}

/* The size of the first message that came on (comm, tag) for a kept block, left queued;
 * -1: none. The netmod's probe (the wire messages' path, wire_isend), without progress (a
 * pass runs inside MPICH's progress). wait (MPI_Finalize): progress after an empty probe,
 * which brings in what is still on its way for the next tags (UCX warned about those at
 * finalize otherwise). */
static MPI_Aint peek_kept(MPIDI_PART_op_t * op, MPIR_Comm * comm, int tag, int wait)
{
    int flag = 0;
    MPI_Status status;
    int err = MPIDI_iprobe(op->peer, tag, comm, MPIDI_PART_CONTEXT_OFFSET,
                           MPIDIU_comm_rank_to_av(comm, op->peer), &flag, &status);
    if (err == MPI_SUCCESS && flag)
        return MPIR_STATUS_GET_COUNT(status);
    if (wait)
        MPID_Progress_test(NULL);
    return -1;
}

/* Dequeue that message (only the thread that drains probes these tags: it is the one
 * peek_kept saw); 1: *msg is it. */
static int take_kept(MPIDI_PART_op_t * op, MPIR_Comm * comm, int tag, MPIR_Request ** msg)
{
    int flag = 0;
    MPI_Status status;
    int err = MPIDI_improbe(op->peer, tag, comm, MPIDI_PART_CONTEXT_OFFSET,
                            MPIDIU_comm_rank_to_av(comm, op->peer), &flag, msg, &status);
    return err == MPI_SUCCESS && flag;
}

/* Take what came on one (communicator, tag) of a kept block into scratch memory. wait
 * (MPI_Finalize): until each has arrived; else each goes on the list of catches. The
 * memory is had before the message is dequeued: without it the message stays queued (for
 * the next pass). Returns how many it took. */
static int drain_tag(MPIDI_PART_op_t * op, MPIR_Comm * comm, int tag, int wait)
{
    int took = 0;
    for (;;) {
        MPIR_Request *msg = NULL, *rreq = NULL;
        MPI_Aint bytes = peek_kept(op, comm, tag, wait);
        if (bytes < 0)
            return took;
        /* the catch and its scratch memory in one allocation */
        MPIDI_PART_catch_t *c = MPL_malloc(sizeof(*c) + (bytes > 0 ? bytes : 1),
                                           MPL_MEM_OTHER);
        if (c == NULL)
            return took;
        if (!take_kept(op, comm, tag, &msg)) {
            MPL_free(c);
            return took;
        }
        if (MPID_Imrecv(c + 1, bytes, MPI_BYTE, msg, &rreq) != MPI_SUCCESS) {
            MPL_free(c);        /* (the dequeued message is lost: MPICH's error) */
            return took;
        }
        took++;
        if (!wait) {
            c->rreq = rreq;
            MPIDI_PART_LOCK();
            c->next = MPIDI_PART_global.catches;
            MPIDI_PART_global.catches = c;
            MPIDI_PART_UNLOCK();
            continue;
        }
        while (!MPIR_Request_is_complete(rreq))
            if (MPID_Progress_test(NULL) != MPI_SUCCESS)
                return took;    /* c stays: MPICH may still write into it */
        MPIR_Request_free(rreq);
        MPL_free(c);
    }
}

/* The (communicator, tag) pairs a kept block's messages come on: each tag on the
 * communicator view of its message's VCI (a pass of the hook), or on every view
 * (MPI_Finalize, and a pass while the re-plan is still ahead: the send's orphaned iteration
 * may be the re-plan's, whose layout maps messages to other VCIs and never reached this
 * freed receive). Returns how many it took. */
static int drain_block(MPIDI_PART_op_t * op, int wait)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int took = 0;
    if (t->base < 0)
        return 0;
    if (!wait && t->vcomm && MPIDI_PART_replan_ahead(op))
        wait = 2;       /* every view, without waiting */
    if (wait && t->vcomm) {
        /* a re-plan may put messages on VCIs the first plan did not use: a view of each */
        MPIDI_PART_LOCK();
        MPIDI_PART_vci_all_views_locked(op);
        MPIDI_PART_UNLOCK();
    }
    /* the first plan's messages (a re-plan has no more) */
    for (int m = 0; m < t->nwreq; m++) {
        int tag = (int) (t->base + m);
        if (!t->vcomm)
            took += drain_tag(op, op->comm, tag, wait == 1);
        else if (!wait) {
            if (t->vcomm[t->msg_vci[m]])
                took += drain_tag(op, t->vcomm[t->msg_vci[m]], tag, 0);
        } else
            for (int v = 0; v < t->nvcis; v++)
                if (t->vcomm[v])
                    took += drain_tag(op, t->vcomm[v], tag, wait == 1);
    }
    return took;
}

void MPIDI_PART_tag_drain_kept(MPIDI_PART_op_t * op)
{
    drain_block(op, 1);
}

/* Lock held: unlink the catches that have arrived (into *done). */
static void catches_arrived_locked(MPIDI_PART_catch_t ** done)
{
    for (MPIDI_PART_catch_t ** pp = &MPIDI_PART_global.catches; *pp;) {
        MPIDI_PART_catch_t *c = *pp;
        if (MPIR_Request_is_complete(c->rreq)) {
            *pp = c->next;
            c->next = *done;
            *done = c;
        } else {
            pp = &c->next;
        }
    }
}

static void catches_free(MPIDI_PART_catch_t * c)
{
    while (c) {
        MPIDI_PART_catch_t *next = c->next;
        MPIR_Request_free(c->rreq);
        MPL_free(c);
        c = next;
    }
}

int MPIDI_PART_tag_drain(void)
{
    MPIDI_PART_op_t *ops[64];
    MPIDI_PART_catch_t *done = NULL;
    int n = 0, took = 0;

    if (MPL_atomic_cas_int(&MPIDI_PART_global.in_drain, 0, 1) != 0)
        return MPI_SUCCESS;
    int64_t now = MPIDI_PART_now_ns();
    if (now < __atomic_load_n(&MPIDI_PART_global.drain_next_ns, __ATOMIC_RELAXED))
        goto fn_exit;

    MPIDI_PART_LOCK();
    MPIDI_PART_global.drain_kick = 0;   /* this pass takes every block kept until now */
    catches_arrived_locked(&done);
    /* a reference each while we probe without the lock (a WITHDRAW may unkeep one) */
    MPIDI_PART_op_t *op = MPIDI_PART_global.draining;
    for (; op && n < 64; op = op->u.tag.dnext) {
        op->refs++;
        ops[n++] = op;
    }
    if (op) {
        /* more than 64: the rest go first next time */
        MPIDI_PART_op_t *tail = op;
        while (tail->u.tag.dnext)
            tail = tail->u.tag.dnext;
        tail->u.tag.dnext = MPIDI_PART_global.draining;
        ops[n - 1]->u.tag.dnext = NULL;
        MPIDI_PART_global.draining = op;
    }
    MPIDI_PART_UNLOCK();
    catches_free(done);

    for (int i = 0; i < n; i++) {
        took += drain_block(ops[i], 0);
        MPIDI_PART_op_release(ops[i]);
    }

    MPIDI_PART_LOCK();
    int64_t period = MPIDI_PART_global.drain_period_ns;
    if (took > 0)
        period = DRAIN_PERIOD_NS;
    else if (period < DRAIN_PERIOD_MAX_NS)
        period *= 2;
    MPIDI_PART_global.drain_period_ns = period;
    /* a block kept while we probed: the next pass at once */
    __atomic_store_n(&MPIDI_PART_global.drain_next_ns,
                     MPIDI_PART_global.drain_kick ? 0 : now + period, __ATOMIC_RELAXED);
    MPIDI_PART_clear_work(MPIDI_PART_WORK_DRAIN, MPIDI_PART_global.draining != NULL ||
                          MPIDI_PART_global.catches != NULL);
    MPIDI_PART_UNLOCK();
  fn_exit:
    MPL_atomic_release_store_int(&MPIDI_PART_global.in_drain, 0);
    return MPI_SUCCESS;
}

void MPIDI_PART_tag_drain_stop(void)
{
    /* a pass of another thread ends first; none starts after (the engine stopped) */
    while (MPL_atomic_cas_int(&MPIDI_PART_global.in_drain, 0, 1) != 0)
        MPL_sched_yield();
    MPIDI_PART_LOCK();
    MPIDI_PART_global.draining = NULL;  /* MPI_Finalize drains those (quiesce) */
    MPIDI_PART_catch_t *c = MPIDI_PART_global.catches;
    MPIDI_PART_global.catches = NULL;
    MPIDI_PART_UNLOCK();
    for (MPIDI_PART_catch_t * k = c; k; k = k->next)
        while (!MPIR_Request_is_complete(k->rreq))
            if (MPID_Progress_test(NULL) != MPI_SUCCESS)
                return; /* the rest stay: MPICH may still write into them */
    catches_free(c);
}

/* Progress hook, no lock: return the leases of finished iterations and hand free blocks
 * to waiting receivers. A waiter that does not fit is passed over, not waited for: started
 * operations progress independently. */
int MPIDI_PART_tag_handshake(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIDI_PART_LOCK();
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.leased; *pp;) {
        MPIDI_PART_op_t *op = *pp;
        if (!MPIDI_PART_st_is_running(&op->st)) {
            *pp = op->u.tag.lnext;
            block_put(op, op->u.tag.base);
            op->u.tag.base = -1;
        } else {
            pp = &op->u.tag.lnext;
        }
    }
    MPIDI_PART_UNLOCK();

    while (1) {
        MPIDI_PART_op_t *op = NULL, *prev = NULL;
        MPIDI_PART_iter_t iter = 0;
        MPIDI_PART_LOCK();
        for (op = MPIDI_PART_global.lease_head; op; prev = op, op = op->next) {
            int64_t base = block_get(op);
            if (base < 0)
                continue;
            if (prev)
                prev->next = op->next;
            else
                MPIDI_PART_global.lease_head = op->next;
            if (MPIDI_PART_global.lease_tail == op)
                MPIDI_PART_global.lease_tail = prev;
            op->u.tag.base = base;
            op->u.tag.lnext = MPIDI_PART_global.leased;
            MPIDI_PART_global.leased = op;
            iter = op->st.iter;
            break;
        }
        MPIDI_PART_UNLOCK();
        if (!op)
            break;
        mpi_errno = post_recvs(op, iter);
        MPIR_ERR_CHECK(mpi_errno);
        mpi_errno = send_cts(op, iter, op->u.tag.base);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, progress hook: the CTS of the receiver's iteration hdr->iter arrived. */
static int tag_ctl(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * hdr)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int32_t *tosend = NULL;
    int nsend = 0;
    int64_t base;

    if (hdr->ext_len != sizeof(base))
        goto fn_exit;
    memcpy(&base, hdr->ext, sizeof(base));
    tosend = MPL_malloc(sizeof(int32_t) * op->st.nmsgs, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(tosend == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");

    MPIDI_PART_LOCK();
    if (!op->freed && hdr->iter == op->st.iter && MPIDI_PART_st_is_running(&op->st) &&
        !MPIDI_PART_st_is_armed(&op->st)) {
        /* the current iteration's credit: send what waited for it */
        t->base = base;
        nsend = MPIDI_PART_st_arm(&op->st, tosend);
    } else if (hdr->iter > op->st.iter && t->ncts < 2) {
        /* ahead of its iteration (the receiver starts before our MPI_Start) */
        t->cts_iter[t->ncts] = hdr->iter;
        t->cts_base[t->ncts] = base;
        t->ncts++;
    }
    MPIDI_PART_UNLOCK();
    mpi_errno = MPIDI_PART_send_ready(op, tosend, nsend);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPL_free(tosend);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Sender, lock held, at the start of a planned iteration (st.iter counts it already). */
static int tag_always_armed(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    if (t->permanent)
        return 1;
    t->base = -1;
    if (t->ncts > 0 && t->cts_iter[0] == op->st.iter) {
        t->base = t->cts_base[0];
        t->cts_iter[0] = t->cts_iter[1];
        t->cts_base[0] = t->cts_base[1];
        t->ncts--;
        return 1;
    }
    return 0;
}

/* ---- plan ------------------------------------------------------------------------------ */

typedef struct {
    int32_t permanent;
    int32_t vci_n, vci_parts, vci_ppt;
    int64_t base;
    int64_t split, split_max;   /* the receiver's splitting (0: none) */
} tag_plan_ext_t;

#define SPLIT_SLOTS_MAX (1 << 20)       /* 8 MiB of request pointers */

/* The request slots for plan (the first one: a re-plan has no more messages), with t->split
 * and t->split_max set. */
static int tag_alloc(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int n = plan->nmsgs;
    int64_t slots = MPIDI_PART_split_slots(n, op->total_bytes, t->split, t->split_max);
    if (slots > n && slots > SPLIT_SLOTS_MAX)
        t->split = 0;   /* pieces this small cost more slots than they are worth */
    if (!op->is_send && slots > n) {
        MPIDI_PART_LOCK();
        if (MPIDI_PART_global.tag_reqs + slots > reqs_max())
            t->split = 0;       /* the pieces' requests would not fit (the PLAN tells) */
        MPIDI_PART_UNLOCK();
    }
    if (t->split > 0) {
        t->pfirst = MPL_malloc(sizeof(int32_t) * (n + 1), MPL_MEM_OTHER);
        if (t->pfirst == NULL)
            goto nomem;
    } else {
        slots = n;
    }
    t->wreq = MPL_calloc(slots, sizeof(MPIR_Request *), MPL_MEM_OTHER);
    if (t->wreq == NULL)
        goto nomem;
    t->nwreq = n;
    t->nslots = (int32_t) slots;
    split_map(op, plan);
    int32_t used = reqs_of(t, n);
    int64_t held;
    MPIDI_PART_LOCK();
    held = MPIDI_PART_global.tag_reqs;
    if (!op->is_send || held + used <= send_reqs_max())
        reqs_hold(op, used);
    MPIDI_PART_UNLOCK();
    if (op->is_send && op->u.tag.held != used)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**parttagreqs", "**parttagreqs %d %L %L",
                                    used, (long long) held, (long long) send_reqs_max());
    return MPI_SUCCESS;
  nomem:
    MPL_free(t->pfirst);
    t->pfirst = NULL;
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**nomem", 0);
}

static int tag_recv_plan(MPIDI_PART_op_t * op, MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    tag_plan_ext_t ext;
    int n = plan->plan.nmsgs;

    t->split = split_decide(op);
    t->split_max = MPIR_CVAR_PART_TAG_SPLIT_MAX;
    mpi_errno = tag_alloc(op, &plan->plan);
    if (mpi_errno && t->split > 0) {
        /* no room for the pieces' slots: whole messages (the PLAN tells the sender) */
        t->split = 0;
        mpi_errno = tag_alloc(op, &plan->plan);
    }
    MPIR_ERR_CHECK(mpi_errno);
    t->order = MPIDI_PART_tagspace_order(n);
    t->base = -1;
    MPIDI_PART_LOCK();
    if (MPIDI_PART_global.perm_blocks < MPIDI_PART_global.perm_max) {
        int64_t base = block_get(op);
        int64_t room = ((int64_t) 1 << MPIDI_PART_global.tags.bits) -
            MPIDI_PART_global.tags.in_use;
        if (base >= 0 && room < ((int64_t) 1 << MPIDI_PART_global.tags.bits) / 16) {
            block_put(op, base);        /* keep room for leases */
            base = -1;
        }
        if (base >= 0) {
            t->permanent = 1;
            t->base = base;
            MPIDI_PART_global.perm_blocks++;
        }
    }
    MPIDI_PART_UNLOCK();
    if (!t->permanent)
        MPIDI_PART_PVAR_ADD(CTS_PATH_OPS, 1);

    /* VCIs: by the sender's thread layout if it gave one (its threads send), else by ours,
     * else round-robin; never more than either side has */
    ext.permanent = t->permanent;
    ext.base = t->base;
    ext.vci_n = MPIDI_PART_vci_count(op->comm, n, op->peer_nvcis);
    ext.vci_parts = op->peer_thread_parts > 0 ? op->peer_partitions : op->partitions;
    ext.vci_ppt = op->peer_thread_parts > 0 ? op->peer_thread_parts : op->thread_parts;
    ext.split = t->split;
    ext.split_max = t->split_max;
    mpi_errno = MPIDI_PART_vci_setup(op, ext.vci_n, ext.vci_parts, ext.vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);
    plan->ext_len = sizeof(ext);
    memcpy(plan->ext, &ext, sizeof(ext));

  fn_exit:
    return mpi_errno;
  fn_fail:
    MPIDI_PART_tag_transport.free(op);
    goto fn_exit;
}

static int tag_send_plan(MPIDI_PART_op_t * op, const MPIDI_PART_hdr_t * plan)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_PART_tagop_t *t = &op->u.tag;
    tag_plan_ext_t ext;
    int n = plan->plan.nmsgs;

    MPIR_ERR_CHKANDJUMP2(plan->ext_len != sizeof(ext), mpi_errno, MPI_ERR_OTHER,
                         "**partbadplan", "**partbadplan %d %d", plan->transport, n);
    memcpy(&ext, plan->ext, sizeof(ext));
    /* a peer's VCI count must fit ours (ranks may run with different NUM_VCIS) */
    MPIR_ERR_CHKANDJUMP2(ext.vci_n < 1 || ext.vci_n > MPIDI_PART_vci_local(op->comm) ||
                         ext.vci_ppt < 0 || ext.vci_parts < 1 ||
                         (ext.permanent && (ext.base < 0 ||
                                            ext.base + n - 1 > MPIR_Process.attrs.tag_ub)) ||
                         ext.split < 0 || (ext.split > 0 && !op->contig),
                         mpi_errno, MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                         plan->transport, n);
    t->split = ext.split;
    t->split_max = ext.split_max;
    mpi_errno = tag_alloc(op, &plan->plan);
    MPIR_ERR_CHECK(mpi_errno);
    t->permanent = ext.permanent;
    t->base = ext.permanent ? ext.base : -1;
    mpi_errno = MPIDI_PART_vci_setup(op, ext.vci_n, ext.vci_parts, ext.vci_ppt);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- completion and teardown ------------------------------------------------------------ */

/* Lock held. Tests from the cursor up to the first message not done: the iteration ends
 * only when all are, so a poll costs the messages that completed since the last one plus
 * one (a message that completes out of order is marked done when the poll reaches it, or
 * by MPI_Parrived, which tests its own message). The VCIs of the rest go to vci_mask. */
static void tag_poll(MPIDI_PART_op_t * op, uint64_t * vci_mask)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int m = t->cursor, n = op->st.nmsgs;
    MPIDI_PART_iter_t iter = MPIDI_PART_st_iter(&op->st); /* stable: op is in the polling list */
    while (m < n && tag_test_msg(op, m, iter))
        m++;
    t->cursor = m;
    if (t->vcomm)
        for (; m < n; m++)
            *vci_mask |= (uint64_t) 1 << t->msg_vci[m];
}

static void tag_iter_reset(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    if (t->wreq) {
        for (int m = 0; m < t->nslots; m++) {   /* a re-plan may have fewer messages now */
            MPIR_Request *r = t->wreq[m];
            if (r) {
                __atomic_store_n(&t->wreq[m], NULL, __ATOMIC_RELAXED);
                MPIR_Request_free(r);
            }
        }
    }
    t->cursor = 0;
    if (!op->is_send && !t->permanent) {
        /* base under the lock: the hook returns the lease of an iteration that ended
         * (MPIDI_PART_tag_handshake; ThreadSanitizer, part_race_withdraw) */
        MPIDI_PART_LOCK();
        lease_return(op);       /* none when base < 0 */
        MPIDI_PART_UNLOCK();
    }
}

static void tag_free(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    tag_iter_reset(op);
    MPIDI_PART_LOCK();
    if (!op->is_send && t->permanent && t->base >= 0) {
        block_put(op, t->base);
        MPIDI_PART_global.perm_blocks--;
        t->base = -1;
    }
    reqs_hold(op, 0);
    MPIDI_PART_UNLOCK();
    MPIDI_PART_vci_release(op);
    MPL_free(t->wreq);
    t->wreq = NULL;
    MPL_free(t->pfirst);
    t->pfirst = NULL;
}

/* Lock held, between iterations: the plan that replaces the first one (section 4c). The
 * tag block stays (it has room for as many messages as the first plan), so do the VCI
 * views; only the mapping of messages to VCIs changes. */
static int tag_replan(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    if (plan->nmsgs > op->u.tag.nwreq)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**partbadplan", "**partbadplan %d %d",
                                    MPIDI_PART_TRANSPORT_TAG, plan->nmsgs);
    op->u.tag.cursor = 0;
    split_map(op, plan);        /* within the slots: MPIDI_PART_split_slots bounds any plan */
    /* fewer messages: the rest of the budget is free for others */
    reqs_hold(op, reqs_of(&op->u.tag, plan->nmsgs));
    return MPIDI_PART_vci_remap(op, plan);
}

const MPIDI_PART_transport_t MPIDI_PART_tag_transport = {
    .name = "tag",
    .id = MPIDI_PART_TRANSPORT_TAG,
    .recv_plan = tag_recv_plan,
    .send_plan = tag_send_plan,
    .always_armed = tag_always_armed,
    .recv_arm = tag_recv_arm,
    .send = tag_send,
    .ctl = tag_ctl,
    .test_msg = tag_test_msg_parrived,
    .poll = tag_poll,
    .progress_msg = NULL,       /* MPI_Parrived moves the VCI: part_core.c's parrived_vci_poll */
    .iter_reset = tag_iter_reset,
    .free = tag_free,
    .replan = tag_replan,
};
