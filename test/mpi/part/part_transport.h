/*
 * part_transport.h: which partitioned transport the test mode forces, for this project's
 * tests. The modes ofi-shm, ofi-tcp and verbs set MPIR_CVAR_PART_TRANSPORT in the
 * environment; the others leave the engine's default (the tag transport). Include it after
 * mpi.h.
 */
#ifndef PART_TRANSPORT_H_INCLUDED
#define PART_TRANSPORT_H_INCLUDED

#include <stdlib.h>
#include <string.h>

/* The verbs backend of the RDMA transport is forced. */
static inline int rdma_is_verbs(void)
{
    const char *tp = getenv("MPIR_CVAR_PART_TRANSPORT");
    return tp && strcmp(tp, "verbs") == 0;
}

/* An RDMA transport (libfabric or verbs) is forced. */
static inline int rdma_forced(void)
{
    const char *tp = getenv("MPIR_CVAR_PART_TRANSPORT");
    return tp && (strcmp(tp, "ofi") == 0 || strcmp(tp, "verbs") == 0);
}

/* Whether every process of MPI_COMM_WORLD is on this node and MPIR_CVAR_NOLOCAL is off
 * (collective): the engine then reads its "shm" LogGP table and the tag transport may split
 * wire messages; else it reads "net". */
static inline int part_all_local(void)
{
    MPI_Comm node;
    int nnode, size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nnode);
    MPI_Comm_free(&node);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *nl = getenv("MPIR_CVAR_NOLOCAL");
    return nnode == size && !(nl && atoi(nl) == 1);
}

/* The name of one of the forced backend's pvars: part_verbs_<what> under verbs, else
 * part_ofi_<what>. */
#define RDMA_PV(what_) (rdma_is_verbs() ? "part_verbs_" what_ : "part_ofi_" what_)

#endif /* PART_TRANSPORT_H_INCLUDED */
