/*
 * part_vci.c: spreading an operation's wire messages over VCIs (per-VCI builds).
 *
 * ch4 picks the VCI of a send or receive from the communicator: its seq number (VCI method
 * "communicator", the default), or its "sender_vci"/"receiver_vci" hints (method "implicit").
 * For each VCI v an operation uses, the tag transport
 * keeps a private copy of the user's communicator object with seq and both hints set to v (a
 * "VCI view": same context ids, ranks and address tables, never registered as an MPI handle),
 * and posts message m's internal send or receive on the view of its VCI. Both sides compute
 * m's VCI from the receiver's plan, so the sender addresses the VCI the receiver posted on.
 * 4.0.2 offers no way to name a VCI for one send other than the communicator object, so a
 * copy is the only way short of calling netmod internals; the view is never used for
 * anything but MPID_Isend/MPID_Irecv. The receiver never uses more VCIs than the sender
 * announced, and the sender checks the PLAN's count against its own (ranks may run with
 * different MPIR_CVAR_CH4_NUM_VCIS). A view still referenced by an internal request when its
 * operation goes is kept until finalize.
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
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Number of VCIs over which the wire messages of one partitioned operation are spread
        (per-VCI builds, --enable-thread-cs=per-vci, with MPIR_CVAR_CH4_NUM_VCIS > 1).
        0 uses all MPIR_CVAR_CH4_NUM_VCIS VCIs; 1 keeps every wire message on one VCI
        (VCI 0 when the process has several). Messages go round-robin over the VCIs, or by owning thread
        when the info key mpich_part_thread_partitions is given. The receiver's value decides
        (never more VCIs than the sender has).

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

/* VCIs this process can spread a communicator's messages over. */
int MPIDI_PART_vci_local(MPIR_Comm * comm)
{
    if (!multi_vci(comm))
        return 1;
    int n = MPIDI_global.n_vcis;
    return n < 64 ? n : 64;
}

int MPIDI_PART_vci_count(MPIR_Comm * comm, int nmsgs, int peer_nvcis)
{
    int n = MPIDI_PART_vci_local(comm);
    if (MPIR_CVAR_PART_VCIS > 0 && MPIR_CVAR_PART_VCIS < n)
        n = MPIR_CVAR_PART_VCIS;
    if (peer_nvcis >= 1 && peer_nvcis < n)
        n = peer_nvcis;
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
    MPIDI_PART_tagop_t *t = &op->u.tag;
    int n = op->st.plan.nmsgs;

    t->nvcis = 1;
    t->vci_parts = map_parts;
    t->vci_ppt = map_ppt;
    op->spread = 0;
    /* With several VCIs, even one used VCI is bound explicitly (VCI 0 when nvcis is 1):
     * the communicator's own VCI may be another one, which a waiter on the partitioned
     * request (VCI 0) would not poll. */
    if (n < 1 || (nvcis <= 1 && !multi_vci(op->comm)))
        goto fn_exit;
    if (nvcis < 1)
        nvcis = 1;

    t->msg_vci = MPL_malloc(n * sizeof(*t->msg_vci), MPL_MEM_OTHER);
    t->vcomm = MPL_calloc(nvcis, sizeof(MPIR_Comm *), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(t->msg_vci == NULL || t->vcomm == NULL, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    t->nvcis = nvcis;
    for (int m = 0; m < n; m++) {
        int v = MPIDI_PART_plan_vci(&op->st.plan, map_parts, m, nvcis, map_ppt);
        t->msg_vci[m] = v;
        op->spread += (v != 0);
        if (t->vcomm[v] == NULL) {
            t->vcomm[v] = view_create(op->comm, v);
            MPIR_ERR_CHKANDJUMP(t->vcomm[v] == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        }
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    MPIDI_PART_vci_release(op);
    goto fn_exit;
}

/* Lock held (no MPI call): the mapping of a plan that replaces the first one (section 4c),
 * with the same VCIs; msg_vci has room, as the new plan has no more messages. */
int MPIDI_PART_vci_remap(MPIDI_PART_op_t * op, const MPIDI_PART_plan_t * plan)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    op->spread = 0;
    if (t->msg_vci == NULL)
        return MPI_SUCCESS;     /* one VCI, the communicator's */
    for (int m = 0; m < plan->nmsgs; m++) {
        int v = MPIDI_PART_plan_vci(plan, t->vci_parts, m, t->nvcis, t->vci_ppt);
        if (t->vcomm[v] == NULL && (t->vcomm[v] = view_create(op->comm, v)) == NULL)
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_OTHER, "**nomem", 0);
        t->msg_vci[m] = v;
        op->spread += (v != 0);
    }
    return MPI_SUCCESS;
}

/* Lock held: a view of every VCI the operation may use (a freed receive's kept block is
 * probed on each, part_tag.c: its send's re-plan may use VCIs its first plan did not).
 * A view it cannot make (no memory) is left out. */
void MPIDI_PART_vci_all_views_locked(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    for (int v = 0; t->vcomm && v < t->nvcis; v++)
        if (t->vcomm[v] == NULL)
            t->vcomm[v] = view_create(op->comm, v);
}

void MPIDI_PART_vci_release(MPIDI_PART_op_t * op)
{
    MPIDI_PART_tagop_t *t = &op->u.tag;
    if (t->vcomm) {
        MPIDI_PART_LOCK();
        for (int v = 0; v < t->nvcis; v++)
            if (t->vcomm[v])
                view_release(t->vcomm[v]);
        MPIDI_PART_UNLOCK();
    }
    MPL_free(t->vcomm);
    MPL_free(t->msg_vci);
    t->vcomm = NULL;
    t->msg_vci = NULL;
    t->nvcis = 1;
    op->spread = 0;
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

int MPIDI_PART_vci_progress_only_call(int v)
{
    return MPIDI_PART_vci_progress_only(v);
}

/* Progress only the VCIs in mask (bit v: VCI v), without the progress hooks. */
int MPIDI_PART_vci_progress(uint64_t mask)
{
    int mpi_errno = MPI_SUCCESS;
    if (likely(mask && !(mask & (mask - 1))))
        return MPIDI_PART_vci_progress_one(__builtin_ctzll(mask));
    MPID_Progress_state state;
    MPIDI_progress_state_init(&state);
    state.flag &= ~MPIDI_PROGRESS_HOOKS;
    state.vci_count = 0;
    for (int v = 0; v < MPIDI_global.n_vcis && v < 64; v++)
        if (mask & ((uint64_t) 1 << v))
            state.vci[state.vci_count++] = v;
    if (state.vci_count > 0)
        mpi_errno = MPIDI_progress_test(&state, 0);
    return mpi_errno;
}
