/*
 * part_rdma_idle.c: an RDMA operation counts as busy exactly while its iteration runs, and
 * one that is idle between iterations still moves its peer's credit (2 processes).
 *
 * MPICH's progress reads the RDMA completion queues on every call only while some RDMA
 * operation is busy (part_rdma_busy > 0): attached and not through its first iteration
 * yet, or with an iteration running (and for 1 ms after an iteration ended). Idle, it
 * reads them on every 1024th call, and an MPI_Start that finds no credit reads them
 * itself. Rank 0 sends 8 partitions of 4 KiB
 * to rank 1, -iters iterations (default 12) in three patterns:
 *   lockstep: both start, read the pvar, meet in a barrier, then rank 0 readies all;
 *   late sender: rank 1 starts and waits while rank 0 sleeps 3 ms (past the linger) and
 *     makes 3000 unrelated MPI_Iprobe calls (the credit arrives while it is idle) and
 *     only then starts;
 *   late receiver: rank 0 starts and readies everything; rank 1 starts 3 ms later (the
 *     writes wait for the credit, which rank 0's MPI_Wait must pick up).
 * Asserts, every iteration and every byte: the data; part_rdma_busy is 0 after MPI_Wait on
 * both ranks (nothing left counted) and, when MPIR_CVAR_PART_TRANSPORT forces an RDMA
 * backend, 1 between MPI_Start and the barrier of the lockstep pattern (0 on the tag
 * transport, which never counts); part_<backend>_ops grew by one on each rank.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

#define PARTS 8
#define COUNT 4096

static unsigned char val(int it, long i)
{
    return (unsigned char) (i * 13 + it * 7 + 5);
}

static void check_busy(const char *when, int it, unsigned long long want)
{
    unsigned long long busy = pv_read("part_rdma_busy");
    if (busy != want) {
        fprintf(stderr, "rank %d iteration %d %s: part_rdma_busy = %llu, expected %llu\n",
                rank, it, when, busy, want);
        errs++;
    }
}

int main(int argc, char **argv)
{
    int iters = 12, provided, flag;
    unsigned char *buf = malloc(PARTS * COUNT);
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-iters=", 7) == 0)
            iters = atoi(argv[i] + 7);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned long long ops0 = pv_read(RDMA_PV("ops"));
    int rdma = rdma_forced();

    if (rank < 2) {
        if (rank == 0)
            MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);
        else
            MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req);
    }
    for (int it = 0; it < iters && rank < 2; it++) {
        int pattern = it % 3;   /* 0 lockstep, 1 late sender, 2 late receiver */
        if (rank == 0)
            for (long i = 0; i < PARTS * COUNT; i++)
                buf[i] = val(it, i);
        else
            memset(buf, 0, PARTS * COUNT);

        if (pattern == 0) {
            MPI_Start(&req);
            /* the first iteration's plan may still be on its way to the sender; later
             * iterations are planned: the operation is RDMA now */
            if (it > 0)
                check_busy("after MPI_Start", it, rdma ? 1 : 0);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0)
                MPI_Pready_range(0, PARTS - 1, req);
        } else if (pattern == 1) {
            if (rank == 1) {
                MPI_Start(&req);
                MPI_Barrier(MPI_COMM_WORLD);
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
                usleep(3000);   /* past the hook's 1 ms linger after the last iteration */
                for (int k = 0; k < 3000; k++)  /* idle: the credit comes meanwhile */
                    MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                MPI_Start(&req);
                for (int p = 0; p < PARTS; p++)
                    MPI_Pready(p, req);
            }
        } else {
            if (rank == 0) {
                MPI_Start(&req);
                for (int p = PARTS - 1; p >= 0; p--)
                    MPI_Pready(p, req);
                MPI_Barrier(MPI_COMM_WORLD);
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
                usleep(3000);   /* the sender waits in MPI_Wait for the credit */
                MPI_Start(&req);
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_busy("after MPI_Wait", it, 0);

        if (rank == 1) {
            long bad = 0, first = -1;
            for (long i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != val(it, i) && bad++ == 0)
                    first = i;
            if (bad) {
                fprintf(stderr, "iteration %d (pattern %d): %ld bytes wrong, first at %ld: "
                        "%u, expected %u\n", it, pattern, bad, first, buf[first],
                        val(it, first));
                errs++;
            }
        }
    }
    if (rank < 2) {
        MPI_Request_free(&req);
        unsigned long long ops = pv_read(RDMA_PV("ops")) - ops0;
        if (ops != (rdma ? 1ULL : 0ULL)) {
            fprintf(stderr, "rank %d: %s grew by %llu, expected %d\n", rank, RDMA_PV("ops"),
                    ops, rdma);
            errs++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_busy("after MPI_Request_free", iters, 0);

    pv_finalize();
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
