/*
 * part_ctx_private.c: the engine's wire messages cannot meet MPICH's own traffic on the
 * communicator (2 processes; review finding C9).
 *
 * MPI_Comm_create_group(comm, group, tag) and MPI_Intercomm_create(..., peer_comm, ..., tag)
 * exchange messages on the collective context of comm / peer_comm with tag | COLL_BIT. An
 * engine that put its wire messages on that context (tag COLL_BIT | id << 16 | m, ids from
 * the top of the id space) met them when the user's tag equalled id << 16 | m. Here rank 0
 * readies every partition of an operation (its wire messages wait unexpected at rank 1,
 * which has not started the iteration), then both ranks create communicators with tags at
 * the top of the tag space and where such a layout put its messages, use them, and only
 * then rank 1 starts and completes the iteration. The new communicators must work and every
 * byte of every iteration must be right.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include "mpitest.h"

#define PARTS 4
#define COUNT 1024      /* ints per partition */
#define ITERS 4

static int rank, errs = 0;

static int val(int it, int i)
{
    return 1 + it * 1000003 + i * 13;
}

/* Tags that a collective-context layout would have used for wire message m of the top ids,
 * and the top of the tag space. */
static int make_tags(int *tags)
{
    int *ub, flag, n = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    long top = flag ? *ub : 32767;
    for (int m = 0; m < PARTS; m++) {
        tags[n++] = (int) (top - m);
        if (top >= (1L << 16))
            tags[n++] = (int) ((((top + 1) >> 16) - 1) << 16 | m);
    }
    return n;
}

static void use_comm(MPI_Comm c, int want_size, const char *what)
{
    int sum = 0, one = 1, size;
    MPI_Comm_size(c, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    if (size != want_size || sum != want_size) {
        fprintf(stderr, "rank %d: %s: size %d, allreduce %d, expected %d\n", rank, what, size,
                sum, want_size);
        errs++;
    }
}

int main(int argc, char *argv[])
{
    int size, tags[2 * PARTS], ntags;
    int *buf = malloc(sizeof(int) * PARTS * COUNT);
    MPI_Request req;
    MPI_Group world_group;
    MPI_Comm half;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ntags = make_tags(tags);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &half);

    if (rank == 0)
        MPI_Psend_init(buf, PARTS, COUNT, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, PARTS, COUNT, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);

    for (int it = 0; it < ITERS; it++) {
        if (rank == 0) {
            for (int i = 0; i < PARTS * COUNT; i++)
                buf[i] = val(it, i);
            MPI_Start(&req);
            MPI_Pready_range(0, PARTS - 1, req);
        }
        /* the first iteration plans; from then on the wire messages travel now and wait
         * unexpected at rank 1 while MPICH's own messages use high tags */
        if (it > 0) {
            for (int t = 0; t < ntags; t++) {
                MPI_Comm g, inter;
                MPI_Comm_create_group(MPI_COMM_WORLD, world_group, tags[t], &g);
                use_comm(g, 2, "MPI_Comm_create_group");
                MPI_Comm_free(&g);
                MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank, tags[t], &inter);
                int rsize = 0;
                MPI_Comm_remote_size(inter, &rsize);
                if (rsize != 1) {
                    fprintf(stderr, "rank %d: intercommunicator remote size %d\n", rank, rsize);
                    errs++;
                }
                MPI_Comm_free(&inter);
            }
        }
        if (rank == 1) {
            for (int i = 0; i < PARTS * COUNT; i++)
                buf[i] = -1;
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1) {
            int bad = 0;
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != val(it, i) && bad++ < 3)
                    fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                            val(it, i));
            errs += bad;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    MPI_Request_free(&req);
    MPI_Comm_free(&half);
    MPI_Group_free(&world_group);
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
