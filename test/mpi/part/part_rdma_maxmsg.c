/*
 * part_rdma_maxmsg.c: operations larger than the RDMA transport's largest message go on the
 * tag transport, the others on RDMA, side by side between the same two processes (2
 * processes). The limit: under verbs the port's max_msg_sz (testlist.verbs with
 * VERBSEMU_MAX_MSG, the verbs emulator's smaller max_msg_sz, in place of part_large's 2.5
 * GiB); under libfabric the provider's max_msg_size (testlist.cvar with the testing aid
 * MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG: shm and tcp;ofi_rxm state no limit; the libfabric backend
 * ignored the limit before a review of 2026-12-07 found it).
 *
 * With M = that limit in bytes: operation A of M/2 bytes, B of exactly M and C of 4 M
 * (8 partitions each, received as 4). Phase 1 creates C and runs it alone for 3 iterations;
 * phase 2 creates A and B and runs all three at once for 3 iterations, every partition
 * readied in reverse order across the three. Every received byte is compared with a pattern
 * that depends on the operation, the iteration and the byte. Through MPI_T, with the
 * transport forced (MPIR_CVAR_PART_TRANSPORT=verbs or ofi) and the limit set: phase 1 moves
 * part_verbs_ops (part_ofi_ops) and part_verbs_writes (part_ofi_writes) by nothing on either
 * rank (C went on the tag transport), phase 2 moves the ops by exactly 2 on each rank (A and
 * B) and the writes on the sender by at least 2 per iteration.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"
#include "part_transport.h"

static int rank, errs = 0;

#include "part_pvar.h"

#define NOPS 3
#define SPARTS 8
#define RPARTS 4
#define ITERS 3

static unsigned char val(int op, int it, long i)
{
    return (unsigned char) ((i * 131 + it * 29 + op * 71 + 5) & 0xff);
}

/* one iteration of the operations in ops[0..n) (indices into req/buf/bytes) */
static void iteration(int it, int n, const int *ops, MPI_Request * req, unsigned char **buf,
                      const long *bytes)
{
    for (int k = 0; k < n; k++) {
        int o = ops[k];
        if (rank == 0)
            for (long i = 0; i < bytes[o]; i++)
                buf[o][i] = val(o, it, i);
        else
            memset(buf[o], 0xEE, bytes[o]);
        MPI_Start(&req[o]);
    }
    if (rank == 0)
        for (int p = SPARTS - 1; p >= 0; p--)
            for (int k = n - 1; k >= 0; k--)
                MPI_Pready(p, req[ops[k]]);
    for (int k = 0; k < n; k++)
        MPI_Wait(&req[ops[k]], MPI_STATUS_IGNORE);
    if (rank == 1)
        for (int k = 0; k < n; k++) {
            int o = ops[k];
            long bad = 0;
            for (long i = 0; i < bytes[o]; i++)
                if (buf[o][i] != val(o, it, i) && bad++ < 3)
                    fprintf(stderr, "op %c iteration %d: byte %ld is %d, expected %d\n",
                            'A' + o, it, i, buf[o][i], val(o, it, i));
            errs += bad > 0;
        }
}

static void init_op(int o, const long *bytes, unsigned char **buf, MPI_Request * req)
{
    if (rank == 0)
        MPI_Psend_init(buf[o], SPARTS, bytes[o] / SPARTS, MPI_BYTE, 1, 10 + o, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[o]);
    else
        MPI_Precv_init(buf[o], RPARTS, bytes[o] / RPARTS, MPI_BYTE, 0, 10 + o, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[o]);
}

static void expect(const char *what, unsigned long long got, unsigned long long lo,
                   unsigned long long hi)
{
    if (got < lo || got > hi) {
        fprintf(stderr, "rank %d: %s grew by %llu, expected %llu..%llu\n", rank, what, got, lo,
                hi);
        errs++;
    }
}

int main(int argc, char **argv)
{
    int provided;
    const char *limit = rdma_is_verbs() ? "VERBSEMU_MAX_MSG" : "MPIR_CVAR_PART_OFI_DEBUG_MAX_MSG";
    const char *mm = getenv(limit);
    long max_msg = mm ? atol(mm) : 65536;
    int checked = rdma_forced() && mm != NULL;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (max_msg < 2 * SPARTS || max_msg % (2 * SPARTS) != 0) {
        fprintf(stderr, "%s=%s: want a multiple of %d\n", limit, mm, 2 * SPARTS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long bytes[NOPS] = { max_msg / 2, max_msg, 4 * max_msg };
    unsigned char *buf[NOPS];
    MPI_Request req[NOPS];
    for (int o = 0; o < NOPS; o++)
        buf[o] = malloc(bytes[o]);

    if (rank < 2) {
        const int only_c[] = { 2 }, all[] = { 0, 1, 2 };
        /* the handshake that picks an operation's transport completes in the progress of
         * later calls: A and B are created only once C's iterations are over */
        unsigned long long ops0 = pv_read(RDMA_PV("ops")), w0 = pv_read(RDMA_PV("writes"));
        init_op(2, bytes, buf, req);
        for (int it = 0; it < ITERS; it++)
            iteration(it, 1, only_c, req, buf, bytes);
        unsigned long long ops1 = pv_read(RDMA_PV("ops")), w1 = pv_read(RDMA_PV("writes"));
        init_op(0, bytes, buf, req);
        init_op(1, bytes, buf, req);
        for (int it = 0; it < ITERS; it++)
            iteration(ITERS + it, NOPS, all, req, buf, bytes);
        unsigned long long ops2 = pv_read(RDMA_PV("ops")), w2 = pv_read(RDMA_PV("writes"));
        if (checked) {
            expect(RDMA_PV("ops (C alone, 4 x the limit)"), ops1 - ops0, 0, 0);
            expect(RDMA_PV("writes (C alone, 4 x the limit)"), w1 - w0, 0, 0);
            expect(RDMA_PV("ops (A, B and C)"), ops2 - ops1, 2, 2);
            if (rank == 0)
                expect(RDMA_PV("writes (A, B and C)"), w2 - w1, 2 * ITERS, 2 * ITERS * SPARTS);
        }
        for (int o = 0; o < NOPS; o++)
            MPI_Request_free(&req[o]);
    }
    for (int o = 0; o < NOPS; o++)
        free(buf[o]);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
