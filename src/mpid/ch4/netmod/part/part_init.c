/*
 * part_init.c: start-up and shut-down of the ch4 partitioned engine: its lock, its
 * active-message handler, its progress hook and its MPI_T counters.
 */
#include "part_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

categories :
    - name        : CH4_PART
      description : cvars that control the ch4 partitioned-communication engine

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

MPIDI_PART_global_t MPIDI_PART_global;

int MPIDI_PART_init(void)
{
    int mpi_errno = MPI_SUCCESS, err;

    memset(&MPIDI_PART_global, 0, sizeof(MPIDI_PART_global));
    MPID_Thread_mutex_create(&MPIDI_PART_global.lock, &err);
    MPIR_Assert(err == 0);
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.work, 0);
    MPL_atomic_relaxed_store_int(&MPIDI_PART_global.in_hook, 0);

    /* every rank registers in the same order, right after MPIDIG: same id everywhere */
    MPIDI_PART_global.am_id = MPIDIG_am_reg_cb_dynamic(NULL, &MPIDI_PART_am_handler);
    MPIR_ERR_CHKANDJUMP(MPIDI_PART_global.am_id < 0, mpi_errno, MPI_ERR_OTHER, "**partinit");

    mpi_errno = MPIR_Progress_hook_register(&MPIDI_PART_progress, &MPIDI_PART_global.hook_id);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_Progress_hook_activate(MPIDI_PART_global.hook_id);
    MPIR_ERR_CHECK(mpi_errno);

    mpi_errno = MPIDI_PART_mpit_init();
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_PART_global.initialized = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_PART_finalize(void)
{
    int mpi_errno = MPI_SUCCESS, err;

    if (!MPIDI_PART_global.initialized)
        return MPI_SUCCESS;
    MPIR_Progress_hook_deactivate(MPIDI_PART_global.hook_id);
    MPIR_Progress_hook_deregister(MPIDI_PART_global.hook_id);

    /* what is left: handshake messages nobody matched, and operations that still wait for
     * a peer message (e.g. a sender freed before the receiver answered) */
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
            /* the user's request is gone; its communicator may be too */
            MPL_free(op->wreq);
            MPL_free(op->counted);
            MPL_free(op->cntr);
            MPL_free(op->pending);
            MPL_free(op->ready);
            MPL_free(op);
        }
        op = next;
    }
    MPIDI_PART_vci_finalize();
    MPIDI_PART_ids_finalize();
    MPID_Thread_mutex_destroy(&MPIDI_PART_global.lock, &err);
    MPIDI_PART_global.initialized = 0;
    return mpi_errno;
}
