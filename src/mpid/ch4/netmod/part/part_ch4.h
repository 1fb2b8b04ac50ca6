/*
 * part_ch4.h: the interface the ch4 device calls for partitioned communication.
 *
 * MPID_Psend_init, MPID_Precv_init, the start of a partitioned request, MPID_Pready_range,
 * MPID_Pready_list, MPID_Parrived and the request free hook are routed here by the patch
 * series (maint/patches/0001, 0002); MPID_Startall checks its array here first (0013).
 * Everything behind these calls is in this directory.
 */
#ifndef PART_CH4_H_INCLUDED
#define PART_CH4_H_INCLUDED

struct MPIDI_PART_op;

int MPIDI_PART_init(void);
int MPIDI_PART_init_completed(void);
int MPIDI_PART_finalize(void);

int MPIDI_PART_psend_init(const void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                          int dest, int tag, MPIR_Comm * comm, MPIR_Info * info,
                          MPIR_Request ** request);
int MPIDI_PART_precv_init(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                          int source, int tag, MPIR_Comm * comm, MPIR_Info * info,
                          MPIR_Request ** request);
/* Starts one iteration and activates the request. */
int MPIDI_PART_start(MPIR_Request * request);
/* MPID_Startall, before it starts anything (maint/patches/0013): MPI_ERR_REQUEST when a
 * partitioned request appears twice in the array; then no request is started. */
int MPIDI_PART_startall_check(int count, MPIR_Request * requests[]);
int MPIDI_PART_pready_range(int partition_low, int partition_high, MPIR_Request * request);
int MPIDI_PART_pready_list(int length, const int array_of_partitions[], MPIR_Request * request);
int MPIDI_PART_parrived(MPIR_Request * request, int partition, int *flag);
/* Called by ch4's progress (MPIDI_progress_test) after the netmods' progress, wherever
 * MPICH's progress hooks run (maint/patches/0009): the engine's handshake, completion
 * polling and RDMA work. One load when there is nothing to do. */
int MPIDI_PART_progress(void);
/* Called from MPID_Part_request_free_hook: releases the engine's state of the request
 * (never active: MPI_Request_free refuses active partitioned requests, maint/patches/0008). */
void MPIDI_PART_request_free(MPIR_Request * request);

/* The engine's MPI_T performance variables, for the MPI-facing layer (src/mpi/part): entry
 * i (0, 1, ... until it returns 0): name, description, whether it is a level (it can go
 * down) rather than a counter, whether it is a race counter for the engine's own tests
 * (registered with MPI_T_VERBOSITY_MPIDEV_DETAIL, the others USER_BASIC), and the address
 * of its 64-bit value. */
int MPIDI_PART_pvar_info(int i, const char **name, const char **desc, int *is_level,
                         int *is_detail, unsigned long long **addr);
/* src/mpi/part/part_mpit.c: registers them (called by MPIDI_PART_init). */
int MPIR_Part_mpit_init(void);

#endif /* PART_CH4_H_INCLUDED */
