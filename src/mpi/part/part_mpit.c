/*
 * part_mpit.c: the partitioned engine's MPI_T performance variables. All are continuous,
 * read-only counters (MPI_UNSIGNED_LONG_LONG, no object binding) of the whole process.
 */
#include "mpiimpl.h"
#include "part_impl.h"

MPIDI_PART_pvars_t MPIDI_PART_pvars;

static void reg(MPL_atomic_uint64_t * addr, const char *name, const char *desc)
{
    MPL_atomic_relaxed_store_uint64(addr, 0);
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, name, addr, 1,
                              MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_PART", desc);
}

int MPIDI_PART_mpit_init(void)
{
    reg(&MPIDI_PART_pvars.wire_msgs_sent, "part_wire_msgs_sent",
        "Wire messages sent by partitioned send operations");
    reg(&MPIDI_PART_pvars.wire_msgs_recvd, "part_wire_msgs_recvd",
        "Wire messages received by partitioned receive operations (counted when posted)");
    reg(&MPIDI_PART_pvars.user_parts_sent, "part_user_parts_sent",
        "User partitions carried by the sent wire messages (divide by part_wire_msgs_sent "
        "for the aggregation)");
    reg(&MPIDI_PART_pvars.cts_path_ops, "part_cts_path_ops",
        "Partitioned receive operations on the CTS path (reserved tag ids used up)");
    reg(&MPIDI_PART_pvars.first_iter_deferred, "part_first_iter_deferred",
        "Wire messages whose send waited for the receiver's first answer");
    reg(&MPIDI_PART_pvars.vci_spread_msgs, "part_vci_spread_msgs",
        "Wire messages sent or received (counted when posted) on a VCI other than VCI 0, "
        "spread there by MPIR_CVAR_PART_VCIS (per-VCI builds)");
    return MPI_SUCCESS;
}
