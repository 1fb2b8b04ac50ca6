/*
 * part_mpit.c: the MPI-facing side of the partitioned engine's MPI_T performance variables.
 * The device describes them (MPIDI_PART_pvar_info in part_ch4.h, the engine's interface);
 * this file registers each as a continuous, read-only MPI_UNSIGNED_LONG_LONG variable of the
 * whole process (no object binding): counters, or levels for what can go down. The race
 * counters that the engine's own tests read are MPI_T_VERBOSITY_MPIDEV_DETAIL, the rest
 * MPI_T_VERBOSITY_USER_BASIC.
 */
#include "mpiimpl.h"
#include "part_ch4.h"

int MPIR_Part_mpit_init(void)
{
    const char *name, *desc;
    int is_level, is_detail;
    unsigned long long *addr;

    for (int i = 0; MPIDI_PART_pvar_info(i, &name, &desc, &is_level, &is_detail, &addr); i++) {
        MPIR_T_PVAR_REGISTER_impl(is_level ? MPI_T_PVAR_CLASS_LEVEL : MPI_T_PVAR_CLASS_COUNTER,
                                  MPI_UNSIGNED_LONG_LONG, name, addr, 1, MPI_T_ENUM_NULL,
                                  is_detail ? MPI_T_VERBOSITY_MPIDEV_DETAIL :
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_PART", desc);
    }
    return MPI_SUCCESS;
}
