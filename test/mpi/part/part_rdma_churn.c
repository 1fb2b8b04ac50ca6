/*
 * part_rdma_churn.c: partitioned operations created, used and freed in a loop give back
 * everything they hold (2 processes): memory registrations, operation slots, engine
 * operations. -rounds rounds (default 300); each creates one or two operation pairs from
 * rank 0 to rank 1 with a geometry that varies by round (send and receive partition counts
 * from 1 to 32 with the same byte total, 1 byte to 64 KiB per operation), runs one to three
 * iterations with every byte checked, and frees them, the sender sometimes before the
 * receiver's answer has arrived.
 *
 * Asserts through MPI_T, on both ranks, after a barrier: part_ops_live and
 * part_ofi_mrs_in_use are back at their start values. With MPIR_CVAR_PART_TRANSPORT=ofi in
 * the environment (or verbs: part_verbs_*): part_ofi_ops grew by exactly the number of operations this rank created
 * (each was carried by the RDMA transport) and part_ofi_mrs_in_use went up during the run
 * on rank 1 (receive buffers were registered).
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

static const int geo[][2] = { {1, 1}, {4, 4}, {8, 2}, {2, 8}, {32, 32}, {16, 4}, {3, 6},
{32, 1}, {1, 32}, {12, 12}
};

#define NGEO (int) (sizeof(geo) / sizeof(geo[0]))

static unsigned char val(int round, int op, int it, long i)
{
    return (unsigned char) (i * 7 + round * 13 + op * 101 + it * 3 + 1);
}

int main(int argc, char **argv)
{
    int rounds = 300, provided;
    int want_ofi = rdma_forced();
    unsigned long long created = 0, mrs_peak = 0;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-rounds=", 8) == 0)
            rounds = atoi(argv[i] + 8);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned long long live0 = pv_read("part_ops_live");
    unsigned long long mrs0 = pv_read(RDMA_PV("mrs_in_use"));
    unsigned long long ops0 = pv_read(RDMA_PV("ops"));

    for (int r = 0; r < rounds && rank < 2; r++) {
        int nops = 1 + (r % 3 == 2);
        int iters = 1 + r % 3;
        MPI_Request req[2];
        unsigned char *buf[2];
        long total[2];
        for (int o = 0; o < nops; o++) {
            int g = (r + 3 * o) % NGEO;
            int sp = geo[g][0], rp = geo[g][1];
            long unit = 1 + (r * 37 + o * 11) % 2048;   /* bytes per lcm partition */
            int l = sp > rp ? sp : rp;
            while (l % sp || l % rp)
                l++;
            total[o] = unit * l;
            buf[o] = malloc(total[o]);
            if (rank == 0)
                MPI_Psend_init(buf[o], sp, total[o] / sp, MPI_BYTE, 1, r * 2 + o,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &req[o]);
            else
                MPI_Precv_init(buf[o], rp, total[o] / rp, MPI_BYTE, 0, r * 2 + o,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &req[o]);
            created++;
        }
        for (int it = 0; it < iters; it++) {
            for (int o = 0; o < nops; o++) {
                if (rank == 0)
                    for (long i = 0; i < total[o]; i++)
                        buf[o][i] = val(r, o, it, i);
                else
                    memset(buf[o], 0, total[o]);
            }
            MPI_Startall(nops, req);
            if (rank == 0)
                for (int o = 0; o < nops; o++) {
                    int parts;
                    int g = (r + 3 * o) % NGEO;
                    parts = geo[g][0];
                    MPI_Pready_range(0, parts - 1, req[o]);
                }
            if (rank == 1 && r % 5 == 0) {
                unsigned long long m = pv_read(RDMA_PV("mrs_in_use"));
                if (m > mrs_peak)
                    mrs_peak = m;
            }
            MPI_Waitall(nops, req, MPI_STATUSES_IGNORE);
            if (rank == 1) {
                for (int o = 0; o < nops; o++) {
                    for (long i = 0; i < total[o]; i++) {
                        if (buf[o][i] != val(r, o, it, i)) {
                            fprintf(stderr, "round %d op %d iteration %d: byte %ld of %ld is "
                                    "%d, expected %d\n", r, o, it, i, total[o], buf[o][i],
                                    val(r, o, it, i));
                            errs++;
                            break;
                        }
                    }
                }
            }
        }
        for (int o = 0; o < nops; o++) {
            MPI_Request_free(&req[o]);
            free(buf[o]);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long live = pv_settle("part_ops_live", live0, 10.0);
    unsigned long long mrs = pv_settle(RDMA_PV("mrs_in_use"), mrs0, 10.0);
    if (live != live0) {
        fprintf(stderr, "rank %d: part_ops_live %llu at the end, %llu at the start\n", rank,
                live, live0);
        errs++;
    }
    if (mrs != mrs0) {
        fprintf(stderr, "rank %d: %s %llu at the end, %llu at the start\n", rank,
                RDMA_PV("mrs_in_use"), mrs, mrs0);
        errs++;
    }
    if (want_ofi) {
        unsigned long long ops = pv_read(RDMA_PV("ops")) - ops0;
        if (ops != created) {
            fprintf(stderr, "rank %d: part_ofi_ops grew by %llu for %llu operations\n", rank,
                    ops, created);
            errs++;
        }
        if (rank == 1 && mrs_peak <= mrs0) {
            fprintf(stderr, "rank 1: part_ofi_mrs_in_use never went up (peak %llu)\n",
                    mrs_peak);
            errs++;
        }
    }
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
