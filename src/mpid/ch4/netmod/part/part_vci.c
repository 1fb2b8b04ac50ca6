/*
 * part_vci.c: spreading an operation's wire messages over VCIs (per-VCI builds).
 *
 * ch4 picks the VCI of a send or receive from the communicator: its seq number (VCI method
 * "communicator", the default), or its "sender_vci"/"receiver_vci" hints (method "implicit").
 * For each VCI v an operation uses, the engine
 * keeps a private copy of the user's communicator object with both hints set to v (a "VCI
 * view": same context ids, ranks and address tables, never registered as an MPI handle), and
 * posts message m's internal send or receive on the view of its VCI. Both sides compute m's
 * VCI from the receiver's plan, so the sender addresses the VCI the receiver posted on.
 * Views live as long as the operation; a view still referenced by an internal request
 * when its operation goes (a request freed while active) is kept until finalize.
 */
#include "part_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_VCIS
      category    : CH4_PART
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Number of VCIs over which the wire messages of one partitioned operation are spread
        (per-VCI builds, --enable-thread-cs=per-vci, with MPIR_CVAR_CH4_NUM_VCIS > 1).
        0 uses all MPIR_CVAR_CH4_NUM_VCIS VCIs; 1 keeps every wire message on the
        communicator's own VCI. Messages go round-robin over the VCIs, or by owning thread
        when the info key mpich_part_thread_partitions is given. The receiver's value decides.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

typedef struct orphan {
    struct orphan *next;
    MPIR_Comm *view;
} orphan_t;

static orphan_t *orphans;       /* views an internal request still referenced (lock held) */

/* Several VCIs exist and ch4 honours VCI hints on comm. */
static int multi_vci(MPIR_Comm * comm)
{
#if MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI
    /* ch4 ignores the VCI hints (uses VCI 0) on the other communicators */
    return MPIDI_global.n_vcis > 1 && comm->comm_kind == MPIR_COMM_KIND__INTRACOMM &&
        !comm->tainted;
#else
    return 0;
#endif
}

int MPIDI_PART_vci_count(MPIR_Comm * comm, int nmsgs)
{
    if (!multi_vci(comm))
        return 1;
    int n = MPIDI_global.n_vcis;
    if (MPIR_CVAR_PART_VCIS > 0 && MPIR_CVAR_PART_VCIS < n)
        n = MPIR_CVAR_PART_VCIS;
    return n < nmsgs ? n : (nmsgs > 0 ? nmsgs : 1);
}

static MPIR_Comm *view_create(MPIR_Comm * comm, int vci)
{
    MPIR_Comm *view = MPL_malloc(sizeof(MPIR_Comm), MPL_MEM_COMM);
    if (view == NULL)
        return NULL;
    memcpy(view, comm, sizeof(MPIR_Comm));
    MPIR_Object_set_ref(view, 1);       /* the operation's; internal requests add theirs */
    /* ch4 takes the VCI from comm->seq (--enable-ch4-vci-method=communicator, the default
     * of 4.0.2's per-VCI builds) or from these hints (implicit method): set both */
    view->seq = vci;
    view->hints[MPIR_COMM_HINT_SENDER_VCI] = vci;
    view->hints[MPIR_COMM_HINT_RECEIVER_VCI] = vci;
    return view;
}

/* Lock held. */
static void view_release(MPIR_Comm * view)
{
    if (MPIR_Object_get_ref(view) == 1) {
        MPL_free(view);
        return;
    }
    orphan_t *o = MPL_malloc(sizeof(*o), MPL_MEM_OTHER);
    if (o) {
        o->view = view;
        o->next = orphans;
        orphans = o;
    }   /* else: leak it rather than free memory a request still points to */
}

int MPIDI_PART_vci_setup(MPIDI_PART_op_t * op, int nvcis, int map_parts, int map_ppt)
{
    int mpi_errno = MPI_SUCCESS;
    int n = op->plan.nmsgs;

    op->nvcis = 1;
    /* With several VCIs, even one used VCI is bound explicitly (VCI 0 when nvcis is 1):
     * the communicator's own VCI may be another one, which a waiter on the partitioned
     * request (VCI 0) would not poll. */
    if (n < 1 || (nvcis <= 1 && !multi_vci(op->comm)))
        goto fn_exit;
    if (nvcis < 1)
        nvcis = 1;

    op->msg_vci = MPL_malloc(n * sizeof(*op->msg_vci), MPL_MEM_OTHER);
    op->vcomm = MPL_calloc(nvcis, sizeof(MPIR_Comm *), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(op->msg_vci == NULL || op->vcomm == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    op->nvcis = nvcis;
    for (int m = 0; m < n; m++) {
        int v = MPIDI_PART_plan_vci(&op->plan, map_parts, m, nvcis, map_ppt);
        op->msg_vci[m] = v;
        if (op->vcomm[v] == NULL) {
            op->vcomm[v] = view_create(op->comm, v);
            MPIR_ERR_CHKANDJUMP(op->vcomm[v] == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        }
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_PART_vci_release(MPIDI_PART_op_t * op)
{
    if (op->vcomm) {
        MPIDI_PART_LOCK();
        for (int v = 0; v < op->nvcis; v++)
            if (op->vcomm[v])
                view_release(op->vcomm[v]);
        MPIDI_PART_UNLOCK();
    }
    MPL_free(op->vcomm);
    MPL_free(op->msg_vci);
    op->vcomm = NULL;
    op->msg_vci = NULL;
}

void MPIDI_PART_vci_finalize(void)
{
    while (orphans) {
        orphan_t *o = orphans;
        orphans = o->next;
        if (MPIR_Object_get_ref(o->view) == 1)
            MPL_free(o->view);
        MPL_free(o);
    }
}

/* Progress only the VCIs in mask (bit v: VCI v); with_hooks also runs the progress hooks
 * (this engine's handshake and completion counting). */
int MPIDI_PART_vci_progress(uint64_t mask, int with_hooks)
{
    int mpi_errno = MPI_SUCCESS;
#if MPIDI_CH4_MAX_VCIS > 1
    MPID_Progress_state state;
    MPIDI_progress_state_init(&state);
    if (!with_hooks)
        state.flag &= ~MPIDI_PROGRESS_HOOKS;
    state.vci_count = 0;
    for (int v = 0; v < MPIDI_global.n_vcis && v < 64; v++)
        if (mask & ((uint64_t) 1 << v))
            state.vci[state.vci_count++] = v;
    if (state.vci_count > 0)
        mpi_errno = MPIDI_progress_test(&state, 0);
#endif
    return mpi_errno;
}

/* MPI_Parrived's bounded progress: the VCI of message m (all VCIs before the plan). On the
 * tag path the receives are posted at MPI_Start, so the hooks are left to MPI_Wait/Test:
 * threads polling their own partitions then touch only their own VCI's lock. */
int MPIDI_PART_vci_progress_msg(MPIDI_PART_op_t * op, int m)
{
    if (m < 0 || op->vcomm == NULL)
        return MPID_Progress_test(NULL);
    return MPIDI_PART_vci_progress((uint64_t) 1 << op->msg_vci[m],
                                   op->path != MPIDI_PART_PATH_TAG);
}
