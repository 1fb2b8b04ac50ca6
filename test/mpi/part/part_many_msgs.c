/*
 * part_many_msgs.c: more partitions in flight than MPICH has requests for.
 *
 * What it asserts:
 * - Rank 0 sends -ops= operations of -parts= partitions (-count= ints each) to rank 1, all
 *   started together (MPI_Startall) and readied at once, for -iters= iterations; rank 1
 *   checks every element of every operation in every iteration (a pattern of operation,
 *   iteration and element).
 * - The default sizes (16 operations of 16384 partitions) are 262144 partitions: posted as
 *   one receive each, they are MPICH's whole request pool (262144 requests per pool), and
 *   a process that asks for one more aborts in MPIR_Request_create ("req != NULL"), which
 *   is what the tag transport did here before MPIR_CVAR_PART_TAG_MAX_REQUESTS.
 * - Over the tag transport: after the first iteration the receives posted
 *   (pvar part_wire_msgs_recvd) are at most MPIR_CVAR_PART_TAG_MAX_REQUESTS plus one per
 *   operation (a plan has at least one message), and the later operations still arrive
 *   whole. With partitions large enough to be split into pieces (-count=; within a node
 *   over shared memory), a plan whose pieces would not fit sends whole messages: that line
 *   checks the data only (the pvar counts messages, not pieces). The RDMA transports post
 *   no request per message (the count is not checked there).
 * - Run with 2 processes.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs;
#include "part_pvar.h"

static int val(int op, int iter, long i)
{
    return (int) ((op * 1000003L + iter * 7919L + i * 13L) & 0x7fffffff);
}

int main(int argc, char **argv)
{
    int ops = 16, parts = 16384, count = 1, iters = 2, provided, size;

    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "-ops=", 5) == 0)
            ops = atoi(argv[a] + 5);
        else if (strncmp(argv[a], "-parts=", 7) == 0)
            parts = atoi(argv[a] + 7);
        else if (strncmp(argv[a], "-count=", 7) == 0)
            count = atoi(argv[a] + 7);
        else if (strncmp(argv[a], "-iters=", 7) == 0)
            iters = atoi(argv[a] + 7);
    }
    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || ops < 1 || parts < 1 || count < 1) {
        fprintf(stderr, "needs 2 processes, -ops=, -parts= and -count= >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int budget = cv_read_int("MPIR_CVAR_PART_TAG_MAX_REQUESTS");
    if (budget < 1) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_TAG_MAX_REQUESTS reads %d\n", rank, budget);
        errs++;
    }

    MPI_Request *req = malloc(sizeof(MPI_Request) * ops);
    int **buf = malloc(sizeof(int *) * ops);
    for (int k = 0; k < ops; k++) {
        buf[k] = malloc(sizeof(int) * parts * (size_t) count);
        if (buf[k] == NULL) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (rank < 2) {
        for (int k = 0; k < ops; k++) {
            if (rank == 0)
                MPI_Psend_init(buf[k], parts, count, MPI_INT, 1, k, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req[k]);
            else
                MPI_Precv_init(buf[k], parts, count, MPI_INT, 0, k, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req[k]);
        }
        unsigned long long recvd0 = rank == 1 ? pv_read("part_wire_msgs_recvd") : 0;
        for (int it = 0; it < iters; it++) {
            for (int k = 0; k < ops; k++)
                for (long i = 0; i < (long) parts * count; i++)
                    buf[k][i] = rank == 0 ? val(k, it, i) : -1;
            MPI_Startall(ops, req);
            if (rank == 0)
                for (int k = 0; k < ops; k++)
                    MPI_Pready_range(0, parts - 1, req[k]);
            MPI_Waitall(ops, req, MPI_STATUSES_IGNORE);
            if (rank == 1) {
                for (int k = 0; k < ops; k++) {
                    for (long i = 0; i < (long) parts * count; i++) {
                        if (buf[k][i] != val(k, it, i)) {
                            if (errs++ < 5)
                                fprintf(stderr, "iteration %d, operation %d, element %ld: "
                                        "%d, expected %d\n", it, k, i, buf[k][i],
                                        val(k, it, i));
                        }
                    }
                }
                unsigned long long posted = pv_read("part_wire_msgs_recvd") - recvd0;
                if (it == 0 && !rdma_forced() && posted > (unsigned long long) budget + ops) {
                    fprintf(stderr, "first iteration: %llu receives posted, more than "
                            "MPIR_CVAR_PART_TAG_MAX_REQUESTS (%d) + %d operations\n", posted,
                            budget, ops);
                    errs++;
                }
            }
        }
        for (int k = 0; k < ops; k++)
            MPI_Request_free(&req[k]);
    }
    for (int k = 0; k < ops; k++)
        free(buf[k]);
    free(buf);
    free(req);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
