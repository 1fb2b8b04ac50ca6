/*
 * part_rdma_sentinel.c: the receive buffer is not written before the receiver's MPI_Start,
 * even when the sender has readied every partition long before (2 processes). This is the
 * per-iteration credit of the RDMA transport; the tag transport must hold it too.
 *
 * Each iteration: rank 0 starts, readies all partitions (forward, reverse or one
 * MPI_Pready_list, by iteration), then tells rank 1 so with a point-to-point message, then
 * waits. Rank 1 fills its buffer with a sentinel byte, receives the notice, keeps MPI
 * progressing for -delay milliseconds (MPI_Iprobe and MPI_Parrived polling on its inactive
 * request), checks that every byte still holds the sentinel, then starts, waits and checks
 * every byte of the data (values depend on the iteration).
 *
 * With MPIR_CVAR_PART_TRANSPORT=ofi in the environment it also asserts, through MPI_T, that
 * the RDMA transport carried the operation: on rank 0 part_ofi_writes grew by exactly
 * iterations x wire messages (the plan's count, read back from part_wire_msgs_sent), on
 * rank 1 part_ofi_credits grew by exactly the iteration count.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

#include "part_pvar.h"

#define SENTINEL 0xA5

static unsigned char val(int it, long i)
{
    unsigned char v = (unsigned char) ((i * 131 + it * 29 + 7) & 0xff);
    return v == SENTINEL ? 0x11 : v;
}

int main(int argc, char **argv)
{
    int parts = 16, iters = 6, delay_ms = 60, provided;
    long count = 1000;  /* bytes per partition */
    int want_ofi = rdma_forced();

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-parts=", 7) == 0)
            parts = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "-count=", 7) == 0)
            count = atol(argv[i] + 7);
        else if (strncmp(argv[i], "-iter=", 6) == 0)
            iters = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "-delay=", 7) == 0)
            delay_ms = atoi(argv[i] + 7);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long total = parts * count;
    unsigned char *buf = malloc(total);
    int *list = malloc(parts * sizeof(int));
    MPI_Request req;
    unsigned long long w0 = pv_read(RDMA_PV("writes")), c0 = pv_read(RDMA_PV("credits"));
    unsigned long long m0 = pv_read("part_wire_msgs_sent");

    if (rank == 0) {
        MPI_Psend_init(buf, parts, count, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            for (long i = 0; i < total; i++)
                buf[i] = val(it, i);
            MPI_Start(&req);
            if (it % 3 == 0) {
                for (int p = 0; p < parts; p++)
                    MPI_Pready(p, req);
            } else if (it % 3 == 1) {
                for (int p = parts - 1; p >= 0; p--)
                    MPI_Pready(p, req);
            } else {
                for (int p = 0; p < parts; p++)
                    list[p] = (p * 7) % parts;  /* parts is a power of two: a permutation */
                MPI_Pready_list(parts, list, req);
            }
            MPI_Send(&it, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
        if (want_ofi) {
            unsigned long long msgs = pv_read("part_wire_msgs_sent") - m0;
            unsigned long long w = pv_read(RDMA_PV("writes")) - w0;
            if (msgs == 0 || w != msgs) {
                fprintf(stderr, "sender: part_ofi_writes grew by %llu, wire messages sent %llu "
                        "(the RDMA transport did not carry them all)\n", w, msgs);
                errs++;
            }
        }
    } else if (rank == 1) {
        MPI_Precv_init(buf, parts, count, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            int note, flag;
            memset(buf, SENTINEL, total);
            MPI_Recv(&note, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (note != it) {
                fprintf(stderr, "iteration %d: notice says %d\n", it, note);
                errs++;
            }
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < delay_ms / 1000.0) {
                MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                MPI_Parrived(req, 0, &flag);    /* inactive: flag is true, no effect */
            }
            long touched = 0, first = -1;
            for (long i = 0; i < total; i++) {
                if (buf[i] != SENTINEL) {
                    if (first < 0)
                        first = i;
                    touched++;
                }
            }
            if (touched) {
                fprintf(stderr, "iteration %d: %ld bytes (first at %ld) written before "
                        "MPI_Start\n", it, touched, first);
                errs++;
            }
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            long bad = 0;
            for (long i = 0; i < total; i++) {
                if (buf[i] != val(it, i)) {
                    if (bad++ < 3)
                        fprintf(stderr, "iteration %d: byte %ld is %d, expected %d\n", it, i,
                                buf[i], val(it, i));
                }
            }
            errs += bad > 0;
        }
        MPI_Request_free(&req);
        if (want_ofi) {
            unsigned long long c = pv_read(RDMA_PV("credits")) - c0;
            if (c != (unsigned long long) iters) {
                fprintf(stderr, "receiver: part_ofi_credits grew by %llu, expected %d\n", c,
                        iters);
                errs++;
            }
        }
    }

    free(buf);
    free(list);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
