/*
 * part_init.c: start-up and shut-down of the ch4 partitioned engine: its lock, its
 * active-message handler, and the table of its MPI_T performance
 * variables (registered by the MPI-facing layer, src/mpi/part/part_mpit.c).
 */
#include "part_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

categories :
    - name        : CH4_PART
      description : cvars that control the ch4 partitioned-communication engine

cvars:
    - name        : MPIR_CVAR_PART_FINALIZE_FLUSH_MS
      category    : CH4_PART
      type        : int
      default     : 5000
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        How long MPI_Finalize keeps making progress, at most, for partitioned sends the
        program started and readied in full but never completed (erroneous: MPI wants every
        request complete before MPI_Finalize; their data may not have gone yet, and their
        receivers would wait forever). Milliseconds; MPI_Finalize goes on as soon as they
        are complete. When some are not after this long (a receiver that never starts its
        receive), a line on stderr says how many. 0: no wait (the engine stops at once, as
        before 2026-12-01).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

MPIDI_PART_global_t MPIDI_PART_global;
MPIDI_PART_pvar_t MPIDI_PART_pvars[MPIDI_PART_PV_COUNT];

static const struct {
    const char *name;
    int level;          /* 1: can go down (MPI_T_PVAR_CLASS_LEVEL), 0: counter */
    const char *desc;
    int detail;         /* 1: a race counter for the engine's own tests (MPIDEV_DETAIL) */
} pvar_info[MPIDI_PART_PV_COUNT] = {
    [MPIDI_PART_PV_WIRE_MSGS_SENT] = {"part_wire_msgs_sent", 0,
        "Wire messages sent by partitioned send operations (counted per completed iteration)"},
    [MPIDI_PART_PV_WIRE_MSGS_RECVD] = {"part_wire_msgs_recvd", 0,
        "Wire messages received by partitioned receive operations (counted when posted)"},
    [MPIDI_PART_PV_USER_PARTS_SENT] = {"part_user_parts_sent", 0,
        "User partitions carried by the sent wire messages (divide by part_wire_msgs_sent "
        "for the aggregation)"},
    [MPIDI_PART_PV_CTS_PATH_OPS] = {"part_cts_path_ops", 0,
        "Partitioned receive operations that lease their tags per iteration (CTS path)"},
    [MPIDI_PART_PV_FIRST_ITER_DEFERRED] = {"part_first_iter_deferred", 0,
        "Wire messages whose send waited for the receiver's first answer"},
    [MPIDI_PART_PV_VCI_SPREAD_MSGS] = {"part_vci_spread_msgs", 0,
        "Wire messages sent or received on a VCI other than VCI 0, spread there by "
        "MPIR_CVAR_PART_VCIS (per-VCI builds; counted per completed iteration)"},
    [MPIDI_PART_PV_OPS_LIVE] = {"part_ops_live", 1,
        "Partitioned operations alive in the engine (including freed ones that wait for "
        "a peer's message)"},
    [MPIDI_PART_PV_TAG_IDS_IN_USE] = {"part_tag_ids_in_use", 1,
        "Blocks of wire-message tags held by receive operations (permanent and leased)"},
    [MPIDI_PART_PV_LEASE_WAITS] = {"part_lease_waits", 0,
        "Times an MPI_Start of a receive operation waited for a tag lease"},
    [MPIDI_PART_PV_OFI_OPS] = {"part_ofi_ops", 0,
        "Partitioned operations (either side) planned on the RDMA transport over libfabric"},
    [MPIDI_PART_PV_OFI_WRITES] = {"part_ofi_writes", 0,
        "Wire messages written by the RDMA transport over libfabric (fi_writedata with "
        "immediate data), counted as progress reaps their local completions"},
    [MPIDI_PART_PV_OFI_CREDITS] = {"part_ofi_credits", 0,
        "Per-iteration credits sent by receivers of the RDMA transport over libfabric"},
    [MPIDI_PART_PV_OFI_DEFERRED] = {"part_ofi_deferred", 0,
        "Writes of the RDMA transport over libfabric that waited for room in the endpoint's "
        "queue"},
    [MPIDI_PART_PV_OFI_MRS] = {"part_ofi_mrs_in_use", 1,
        "Memory registrations held by the RDMA transport over libfabric (receive buffers, and "
        "send buffers where the provider needs local registration)"},
    [MPIDI_PART_PV_VERBS_OPS] = {"part_verbs_ops", 0,
        "Partitioned operations (either side) planned on the RDMA transport over InfiniBand "
        "verbs"},
    [MPIDI_PART_PV_VERBS_WRITES] = {"part_verbs_writes", 0,
        "Wire messages written by the verbs backend (IBV_WR_RDMA_WRITE_WITH_IMM), counted as "
        "progress reaps their local completions"},
    [MPIDI_PART_PV_VERBS_CREDITS] = {"part_verbs_credits", 0,
        "Per-iteration credits sent by receivers of the verbs backend"},
    [MPIDI_PART_PV_VERBS_DEFERRED] = {"part_verbs_deferred", 0,
        "Writes of the verbs backend that waited for room in a send queue or for the peer's "
        "queue pair to be ready"},
    [MPIDI_PART_PV_VERBS_MRS] = {"part_verbs_mrs_in_use", 1,
        "Memory registrations held by the verbs backend for operations (receive and send "
        "buffers; not the process's credit mailbox)"},
    [MPIDI_PART_PV_VERBS_QPS] = {"part_verbs_qps_in_use", 1,
        "Reliable-connection queue pairs held by the verbs backend"},
    [MPIDI_PART_PV_TIMER_RUNS] = {"part_timer_runs", 0,
        "Writes of the timer aggregator that carried part of a group (its deadline passed "
        "before all its partitions were ready, or it was the operation's last incomplete "
        "group, which goes in halving runs)"},
    [MPIDI_PART_PV_REPLANS] = {"part_replans", 0,
        "Operations (either side) whose layout the PLogGP aggregator re-planned from the "
        "MPI_Pready times of an observed iteration (tag transport)"},
    [MPIDI_PART_PV_DIRECT_ITERS] = {"part_direct_iters", 0,
        "Iterations of partitioned receive operations that their one wire message completes "
        "directly, without the engine's polling (tag transport, steady state, one VCI; "
        "counted when posted)"},
    [MPIDI_PART_PV_TIMER_DEADLINE] = {"part_timer_deadline_ns", 1,
        "The deadline (ns) that the last timer operation with an adaptive deadline chose at "
        "its last MPI_Start: the median spread of its groups' MPI_Pready times in the "
        "iteration before, within the model's deadline and MPIR_CVAR_PART_AGGR_SPREAD_US"},
    [MPIDI_PART_PV_RDMA_BUSY] = {"part_rdma_busy", 1,
        "Operations of the RDMA transport that are busy: attached and not through an "
        "iteration yet, or with an iteration running. While none is (and no iteration ended in "
        "the last millisecond), MPICH's progress reads the RDMA completion queues on every "
        "1024th call only"},
    [MPIDI_PART_PV_TAG_SPLIT_MSGS] = {"part_tag_split_msgs", 0,
        "Wire messages of the tag transport sent as several eager MPI messages "
        "(MPIR_CVAR_PART_TAG_SPLIT_SIZE), counted when sent"},
    [MPIDI_PART_PV_LOGGP_CALIB_SEGS] = {"part_loggp_calib_segs", 1,
        "Segments of the LogGP table measured at MPI_Init (MPIR_CVAR_PART_LOGGP_CALIBRATE) "
        "that the PLogGP aggregator uses; 0 when there was no calibration or it ran out of "
        "MPIR_CVAR_PART_LOGGP_CALIBRATE_MS"},
    [MPIDI_PART_PV_LOGGP_CALIB_US] = {"part_loggp_calib_us", 1,
        "How long the LogGP calibration at MPI_Init took on rank 0, in microseconds (0 when "
        "there was none; also set when it ran out of time)"},
    [MPIDI_PART_PV_RDMA_DRAIN_TIMEOUTS] = {"part_rdma_drain_timeouts", 0,
        "Failed iterations of RDMA receivers that ended on MPIR_CVAR_PART_RDMA_DRAIN_MS "
        "rather than when the sender's writes still in flight had all landed"},
    [MPIDI_PART_PV_RDMA_DRAINING] = {"part_rdma_draining", 1,
        "RDMA receivers whose failed iteration waits for the sender's writes still in "
        "flight (or for its count of them)"},
    [MPIDI_PART_PV_WITHDRAWN] = {"part_withdrawn", 0,
        "WITHDRAW messages that named a receive of this process or an announcement still "
        "unmatched: one per freed send (with how many iterations it started) and one per "
        "send that could not use its plan (engine README, section 5)"},
    [MPIDI_PART_PV_RELEASE_BEFORE_PLAN] = {"part_release_before_plan", 0,
        "RELEASE messages (a receive freed) that reached their send before the receiver's "
        "PLAN did: the receiver sends the PLAN after releasing its lock, so the two may "
        "cross (engine README, section 5)", 1},
    [MPIDI_PART_PV_FREED_WHILE_PLANNING] = {"part_freed_while_planning", 0,
        "Partitioned receives freed (MPI_Request_free) after the sender's announcement "
        "met them and before their plan was installed: no plan is installed and the "
        "sender is told (engine README, section 5; review finding C4)", 1},
    [MPIDI_PART_PV_WITHDRAW_IN_START] = {"part_withdraw_in_start", 0,
        "WITHDRAW messages handled while their receive's MPI_Start waited between beginning "
        "its iteration and releasing the last one's requests; counted only under the "
        "testing aid MPIR_CVAR_PART_DEBUG_START_DELAY_US (engine README, section 5)", 1},
    [MPIDI_PART_PV_PREADY_ANSWER_RACED] = {"part_pready_answer_raced", 0,
        "MPI_Pready* calls that found their send unplanned and, once they held the engine "
        "lock, the receiver's answer installed (a plan or a failure); counted only under the "
        "testing aid MPIR_CVAR_PART_DEBUG_PREADY_DELAY_US", 1},
    [MPIDI_PART_PV_RDMA_STALE_CREDITS] = {"part_rdma_stale_credits", 0,
        "Credits of the RDMA transport dropped because they named another iteration than "
        "the next of the send on their slot: late credits of the slot's previous "
        "operation (engine README, section 4b)", 1},
    [MPIDI_PART_PV_VERBS_FAIL_LAST_REF] = {"part_verbs_fail_last_ref", 0,
        "Operations whose last reference the thread failing a broken verbs connection "
        "dropped (the program freed the request while that thread was failing it)", 1},
    [MPIDI_PART_PV_SAMPLE_AFTER_FREE] = {"part_sample_after_free", 0,
        "MPI_Pready* calls of an observed iteration whose request the program freed while "
        "they were writing their sample (their reference keeps the operation); counted only "
        "under the testing aid MPIR_CVAR_PART_DEBUG_SAMPLE_DELAY_US", 1},
    [MPIDI_PART_PV_DIRECT_ARMED_IN_TEST] = {"part_direct_armed_in_test", 0,
        "MPI_Parrived tests of a tag-transport wire message that found no request for it, "
        "then found it armed for direct completion (another thread posted and armed the "
        "receive between the two reads); counted only under the testing aid "
        "MPIR_CVAR_PART_DEBUG_TAG_TEST_DELAY_US", 1},
    [MPIDI_PART_PV_INFLIGHT_LATE] = {"part_inflight_late", 0,
        "Tag-transport wire messages whose sender or receiver, held up after it saw the "
        "message in flight, came to have the progress hook poll it only once the next "
        "iteration had begun (nothing to poll: the message was counted)", 1},
};

int MPIDI_PART_pvar_info(int i, const char **name, const char **desc, int *is_level,
                         int *is_detail, unsigned long long **addr)
{
    if (i < 0 || i >= MPIDI_PART_PV_COUNT)
        return 0;
    *name = pvar_info[i].name;
    *desc = pvar_info[i].desc;
    *is_level = pvar_info[i].level;
    *is_detail = pvar_info[i].detail;
    *addr = (unsigned long long *) &MPIDI_PART_pvars[i].v;
    return 1;
}

/* Drop the operations of list *head (linked through ->next) that quiesce destroys. */
static void drop_dead(MPIDI_PART_op_t ** head, MPIDI_PART_op_t ** tail)
{
    MPIDI_PART_op_t *last = NULL;
    for (MPIDI_PART_op_t ** pp = head; *pp;) {
        if ((*pp)->req == NULL) {
            *pp = (*pp)->next;
        } else {
            last = *pp;
            pp = &(*pp)->next;
        }
    }
    if (tail)
        *tail = last;
}

/* A started send whose partitions were all readied but whose request the program never
 * completed (erroneous: MPI wants every request complete before MPI_Finalize; a pattern of
 * "ready everything, finalize"). Its data may not have gone yet: on the first iteration the
 * receiver's answer may still be on its way, over RDMA every iteration waits for the
 * receiver's credit, and the engine stops in MPI_Finalize. Its receiver would then wait
 * forever. */
static int send_unfinished(MPIDI_PART_op_t * op)
{
    return op->is_send && op->req != NULL && MPIR_Part_request_is_active(op->req) &&
        !MPIR_Request_is_complete(op->req) && MPIDI_PART_st_all_ready(&op->st);
}

/* Drive MPICH's progress until such sends have completed, for at most
 * MPIR_CVAR_PART_FINALIZE_FLUSH_MS (a receiver that never starts its receive cannot be
 * waited for); the requests stay as the program left them. A send with partitions never
 * readied cannot complete and is not waited for. Runs in MPI_Finalize, where no other
 * thread may call MPI (MPII_Finalize has turned MPICH's thread locks off): the list of
 * such sends cannot change but by their completion, so it is made once. */
static void flush_sends(void)
{
    MPIDI_PART_op_t **wait = NULL;
    int n = 0, cap = 0;

    if (MPIR_CVAR_PART_FINALIZE_FLUSH_MS <= 0)
        return;
    for (MPIDI_PART_op_t * op = MPIDI_PART_global.all; op; op = op->all_next) {
        if (!send_unfinished(op))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            MPIDI_PART_op_t **w = MPL_realloc(wait, sizeof(*w) * cap, MPL_MEM_OTHER);
            if (w == NULL)
                break;  /* wait for those listed */
            wait = w;
        }
        wait[n++] = op;
    }
    int64_t until = MPIDI_PART_now_ns() + (int64_t) MPIR_CVAR_PART_FINALIZE_FLUSH_MS * 1000000;
    while (n > 0) {
        int left = 0;
        for (int i = 0; i < n; i++)
            if (!MPIR_Request_is_complete(wait[i]->req))
                wait[left++] = wait[i];
        n = left;
        if (n == 0)
            break;
        if (MPIDI_PART_now_ns() > until) {
            fprintf(stderr, "[%d] partitioned engine: MPI_Finalize: %d partitioned send(s) "
                    "started and readied but never completed did not finish within "
                    "MPIR_CVAR_PART_FINALIZE_FLUSH_MS=%d; their receivers may not complete\n",
                    MPIR_Process.rank, n, MPIR_CVAR_PART_FINALIZE_FLUSH_MS);
            break;
        }
        int err = MPID_Progress_test(NULL);
        if (err != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            MPIR_Err_get_string(err, msg, sizeof(msg), NULL);
            fprintf(stderr, "[%d] partitioned engine: MPI_Finalize: progress failed while "
                    "%d partitioned send(s) were finishing: %s\n", MPIR_Process.rank, n, msg);
            break;
        }
    }
    MPL_free(wait);
}

/* MPI_Finalize, before MPID_Finalize (a finalize callback of higher priority): the engine
 * stops (progress no longer runs it), and the operations the program freed that still wait
 * for a peer's message (a sender whose receiver never posted its receive or failed to, a
 * receiver whose sender never announced itself, a receive that kept its block of tags:
 * its messages that came are taken first) are destroyed with their communicator
 * references, while the netmods still run. Left for MPIDI_PART_finalize, those references
 * were never released: MPICH's handle check (--enable-g=handlealloc, maint/sanitize.sh
 * handles) counted their communicators as leaked. First, sends the program started,
 * readied and never completed are given time to finish (flush_sends). */
static int quiesce(void *unused)
{
    MPIDI_PART_op_t *dead = NULL;

    flush_sends();
    MPIDI_PART_LOCK();
    MPIDI_PART_global.stopped = 1;
    for (MPIDI_PART_op_t * op = MPIDI_PART_global.all, *next; op; op = next) {
        next = op->all_next;
        if (op->req != NULL)
            continue;   /* the program's: it never freed the request */
        MPIDI_PART_all_remove(op);
        op->all_next = dead;
        dead = op;
    }
    drop_dead(&MPIDI_PART_global.posted_head, &MPIDI_PART_global.posted_tail);
    drop_dead(&MPIDI_PART_global.lease_head, &MPIDI_PART_global.lease_tail);
    for (MPIDI_PART_op_t ** pp = &MPIDI_PART_global.leased; *pp;)
        if ((*pp)->req == NULL)
            *pp = (*pp)->u.tag.lnext;
        else
            pp = &(*pp)->u.tag.lnext;
    MPIDI_PART_UNLOCK();
    MPIDI_PART_tag_drain_stop();
    while (dead) {
        MPIDI_PART_op_t *next = dead->all_next;
        if (dead->tags_kept)    /* a receive freed before its send stopped (section 5) */
            MPIDI_PART_tag_drain_kept(dead);
        MPIDI_PART_op_destroy(dead);
        dead = next;
    }
    return MPI_SUCCESS;
}

int MPIDI_PART_init(void)
{
    int mpi_errno = MPI_SUCCESS, err;

    memset(&MPIDI_PART_global, 0, sizeof(MPIDI_PART_global));
    MPID_Thread_mutex_create(&MPIDI_PART_global.lock, &err);
    MPIR_Assert(err == 0);
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.work, 0);
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.in_hs, 0);
    if (MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32 > 0)    /* a testing aid (part_core.c) */
        MPIDI_PART_global.iter0 = ((MPIDI_PART_iter_t) 1 << 32) -
            (MPIDI_PART_iter_t) MPIR_CVAR_PART_DEBUG_ITERS_BELOW_2_32;
    for (int i = 0; i < MPIDI_PART_PV_COUNT; i++)
        MPL_atomic_relaxed_store_uint64(&MPIDI_PART_pvars[i].v, 0);
#ifdef MPIDI_CH4_PART_RDMA
    MPIDI_PART_rdma_init();
#endif

    /* every rank registers in the same order, right after MPIDIG: same id everywhere */
    MPIDI_PART_global.am_id = MPIDIG_am_reg_cb_dynamic(NULL, &MPIDI_PART_am_handler);
    MPIR_ERR_CHKANDJUMP(MPIDI_PART_global.am_id < 0, mpi_errno, MPI_ERR_OTHER, "**partinit");

    mpi_errno = MPIR_Part_mpit_init();
    MPIR_ERR_CHECK(mpi_errno);
    /* before MPID_Finalize, while the netmods still run */
    MPIR_Add_finalize(quiesce, NULL, MPIR_FINALIZE_CALLBACK_PRIO + 1);
    MPIDI_PART_global.initialized = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPID_InitCompleted (maint/patches/0010): MPI_COMM_WORLD works now. */
int MPIDI_PART_init_completed(void)
{
    return MPIDI_PART_calibrate();
}

int MPIDI_PART_finalize(void)
{
    int err;

    if (!MPIDI_PART_global.initialized)
        return MPI_SUCCESS;
    /* ch4's progress no longer runs the engine (MPIDI_PART_progress looks at this first
     * when it has work) */
    MPIDI_PART_global.initialized = 0;

    /* what is left: handshake messages nobody matched, and operations that still wait for
     * a peer's message (a sender freed before the receiver answered, a receiver freed
     * before its sender announced itself). Their communicators go with MPI_Finalize. */
    for (MPIDI_PART_inbox_t * e = MPIDI_PART_global.inbox_head; e;) {
        MPIDI_PART_inbox_t *next = e->next;
        MPL_free(e);
        e = next;
    }
    for (MPIDI_PART_inbox_t * e = MPIDI_PART_global.unexp_head; e;) {
        MPIDI_PART_inbox_t *next = e->next;
        MPL_free(e);
        e = next;
    }
    for (MPIDI_PART_op_t * op = MPIDI_PART_global.all; op;) {
        MPIDI_PART_op_t *next = op->all_next;
        if (op->req == NULL) {
            if (op->tp)
                op->tp->free(op);
#ifdef MPIDI_CH4_PART_RDMA
            MPIDI_PART_rdma_release(op);
#endif
            MPIDI_PART_op_free_memory(op);
        }
#ifdef MPIDI_CH4_PART_RDMA
        else if (!MPIR_Part_request_is_active(op->req) || MPIR_Request_is_complete(op->req)) {
            /* a request the program never freed (MPI allows inactive ones at
             * MPI_Finalize), or an active one that is complete (a send flush_sends saw
             * through, a receive never waited for): its registration goes before the
             * device closes (verbs deallocated its protection domain with the operation's
             * memory region still registered, found 2026-12-01 with the emulator's leak
             * check); the request and the operation's memory stay, as MPICH leaves the
             * request. An active send still incomplete (flush_sends gave up) keeps its
             * registration: writes may still use it until the device closes. */
            MPIDI_PART_rdma_release(op);
        }
#endif
        op = next;
    }
    MPIDI_PART_vci_finalize();
    MPIDI_PART_tags_finalize();
#ifdef MPIDI_CH4_PART_RDMA
    MPIDI_PART_rdma_finalize();
#endif
    MPID_Thread_mutex_destroy(&MPIDI_PART_global.lock, &err);
    return MPI_SUCCESS;
}
