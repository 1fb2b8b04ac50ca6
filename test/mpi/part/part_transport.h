/*
 * part_transport.h: which partitioned transport the test mode forces, for this project's
 * tests. The modes ofi-shm, ofi-tcp and verbs set MPIR_CVAR_PART_TRANSPORT in the
 * environment; the others leave the engine's default (the tag transport).
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

/* The name of one of the forced backend's pvars: part_verbs_<what> under verbs, else
 * part_ofi_<what>. */
#define RDMA_PV(what_) (rdma_is_verbs() ? "part_verbs_" what_ : "part_ofi_" what_)

#endif /* PART_TRANSPORT_H_INCLUDED */
