/*
 * part_ids.c: operation ids in the reserved tag space. A receive operation on the tag path
 * holds one id for its lifetime; operations on the CTS path lease one per iteration.
 * All functions but init expect the engine lock held.
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
        How many partitioned receive operations may be initialised at once on the
        tag-matched path in one process (each holds one id of the reserved tag space).
        Further operations take the CTS path, which leases an id per iteration. Clamped
        so that some ids always remain for leases.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define MPIDI_PART_WANTED_MSG_BITS 16
#define MPIDI_PART_MAX_ID_BITS     16

int MPIDI_PART_ids_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    int free_bits = MPIR_Process.tag_bits - MPIR_TAG_ERROR_BITS - 1;

    MPIR_ERR_CHKANDJUMP2(MPIDI_PART_tag_layout_make(MPIR_TAG_COLL_BIT, free_bits,
                                                    MPIDI_PART_WANTED_MSG_BITS,
                                                    &MPIDI_PART_global.layout) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**partplan", "**partplan %d %d", 0, 0);
    int id_bits = MPIDI_PART_global.layout.id_bits;
    if (id_bits > MPIDI_PART_MAX_ID_BITS)
        id_bits = MPIDI_PART_MAX_ID_BITS;
    int n = 1 << id_bits;
    MPIDI_PART_global.nids = n;
    MPIDI_PART_global.free_ids = MPL_malloc(sizeof(int) * n, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(MPIDI_PART_global.free_ids == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    /* highest id on top: MPI_Comm_create_group and MPI_Intercomm_create also send on the
     * collective context with MPIR_TAG_COLL_BIT | user tag, and user tags are mostly small,
     * so engine tags start at the top of the tag space, far from them */
    for (int i = 0; i < n; i++)
        MPIDI_PART_global.free_ids[i] = i;
    MPIDI_PART_global.nfree_ids = n;

    int reserve = n / 16 > 0 ? n / 16 : 1;      /* always left for leases */
    int perm = MPIR_CVAR_PART_TAG_IDS;
    if (perm > n - reserve)
        perm = n - reserve;
    if (perm < 0)
        perm = 0;
    MPIDI_PART_global.perm_max = perm;
    MPIDI_PART_global.perm_ids = 0;
    MPIDI_PART_global.ids_ready = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_PART_ids_finalize(void)
{
    MPL_free(MPIDI_PART_global.free_ids);
    MPIDI_PART_global.free_ids = NULL;
    MPIDI_PART_global.ids_ready = 0;
}

int MPIDI_PART_id_get(int permanent)
{
    if (MPIDI_PART_global.nfree_ids == 0)
        return -1;
    if (permanent && MPIDI_PART_global.perm_ids >= MPIDI_PART_global.perm_max)
        return -1;
    if (permanent)
        MPIDI_PART_global.perm_ids++;
    else
        MPIDI_PART_global.nleased++;
    return MPIDI_PART_global.free_ids[--MPIDI_PART_global.nfree_ids];
}

void MPIDI_PART_id_put(int id, int permanent)
{
    if (permanent)
        MPIDI_PART_global.perm_ids--;
    else
        MPIDI_PART_global.nleased--;
    MPIDI_PART_global.free_ids[MPIDI_PART_global.nfree_ids++] = id;
}

void MPIDI_PART_lease_return(MPIDI_PART_op_t * op)
{
    MPIDI_PART_op_t **pp = &MPIDI_PART_global.leased;
    while (*pp && *pp != op)
        pp = &(*pp)->lnext;
    if (*pp)
        *pp = op->lnext;
    MPIDI_PART_id_put(op->iter_id, 0);
    op->iter_id = -1;
}
