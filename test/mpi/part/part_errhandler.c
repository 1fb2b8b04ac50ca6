/*
 * part_errhandler.c: the errors of MPI_Pready, MPI_Pready_range, MPI_Pready_list and
 * MPI_Parrived go to the error handler of the request's communicator (2 processes;
 * maint/patches/0015).
 *
 * MPICH 4.0.2's generated bindings of those four calls raised every error on
 * MPI_COMM_WORLD's handler (they have no communicator argument), while MPI_Wait and MPI_Test
 * use the request's communicator: a library that set MPI_ERRORS_RETURN on its own
 * communicator had its job aborted by an out-of-range partition.
 *
 * Here MPI_COMM_WORLD and MPI_COMM_SELF get a handler that counts its calls, and a duplicate
 * of MPI_COMM_WORLD, on which the partitioned pair runs, one that counts its calls and
 * checks that it is called for that communicator. Asserts: each erroneous call (MPI_Pready
 * on the not yet started send, out of range, twice in one iteration; MPI_Pready_range and
 * MPI_Pready_list out of range; MPI_Parrived out of range, and on the send request) returns
 * its class and calls the duplicate's handler once, never MPI_COMM_WORLD's; MPI_Pready on
 * MPI_REQUEST_NULL (no communicator) calls MPI_COMM_WORLD's; the iteration then completes
 * with every element right.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include "mpitest.h"

#define PARTS 4
#define COUNT 8

static int rank, errs = 0;
static int world_calls = 0, comm_calls = 0;
static MPI_Comm comm;

static void world_handler(MPI_Comm * c, int *err, ...)
{
    (void) c;
    (void) err;
    world_calls++;
}

static void comm_handler(MPI_Comm * c, int *err, ...)
{
    int same = MPI_UNEQUAL;
    (void) err;
    MPI_Comm_compare(*c, comm, &same);
    if (same != MPI_IDENT) {
        fprintf(stderr, "rank %d: the duplicate's handler called for another communicator\n",
                rank);
        errs++;
    }
    comm_calls++;
}

/* rc must be of class cls, and the call must have gone to the duplicate's handler once
 * (to_world 0) or to MPI_COMM_WORLD's once (to_world 1) */
static void expect(int rc, int cls, int to_world, const char *what)
{
    static int world_seen = 0, comm_seen = 0;
    int c = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &c);
    if (c != cls) {
        fprintf(stderr, "rank %d: %s returned class %d, expected %d\n", rank, what, c, cls);
        errs++;
    }
    int want_world = world_seen + (cls != MPI_SUCCESS && to_world);
    int want_comm = comm_seen + (cls != MPI_SUCCESS && !to_world);
    if (world_calls != want_world || comm_calls != want_comm) {
        fprintf(stderr, "rank %d: %s: handler calls MPI_COMM_WORLD %d, the request's "
                "communicator %d; expected %d and %d\n", rank, what, world_calls - world_seen,
                comm_calls - comm_seen, want_world - world_seen, want_comm - comm_seen);
        errs++;
    }
    world_seen = world_calls;
    comm_seen = comm_calls;
}

int main(int argc, char **argv)
{
    int size, buf[PARTS * COUNT], flag;
    MPI_Errhandler weh, ceh;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_create_errhandler(world_handler, &weh);
    MPI_Comm_create_errhandler(comm_handler, &ceh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, weh);
    MPI_Comm_set_errhandler(comm, ceh);

    if (rank == 0) {
        int bad_list[2] = { 1, PARTS };
        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = 3 * i + 1;
        MPI_Psend_init(buf, PARTS, COUNT, MPI_INT, 1, 5, comm, MPI_INFO_NULL, &req);
        expect(MPI_Pready(0, req), MPI_ERR_REQUEST, 0, "MPI_Pready before MPI_Start");
        MPI_Start(&req);
        expect(MPI_Pready(PARTS, req), MPI_ERR_ARG, 0, "MPI_Pready(PARTS)");
        expect(MPI_Pready_range(PARTS, PARTS + 2, req), MPI_ERR_ARG, 0,
               "MPI_Pready_range out of range");
        expect(MPI_Pready_list(2, bad_list, req), MPI_ERR_ARG, 0,
               "MPI_Pready_list with an entry out of range");
        expect(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST, 0, "MPI_Parrived on a send");
        expect(MPI_Pready(0, req), MPI_SUCCESS, 0, "MPI_Pready(0)");
        expect(MPI_Pready(0, req), MPI_ERR_ARG, 0, "MPI_Pready(0) again");
        expect(MPI_Pready(0, MPI_REQUEST_NULL), MPI_ERR_REQUEST, 1,
               "MPI_Pready on MPI_REQUEST_NULL");
        expect(MPI_Pready_range(1, PARTS - 1, req), MPI_SUCCESS, 0, "MPI_Pready_range(1, ..)");
        expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, 0, "MPI_Wait (sender)");
    } else {
        for (int i = 0; i < PARTS * COUNT; i++)
            buf[i] = -1;
        MPI_Precv_init(buf, PARTS, COUNT, MPI_INT, 0, 5, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        expect(MPI_Parrived(req, PARTS, &flag), MPI_ERR_ARG, 0, "MPI_Parrived(PARTS)");
        expect(MPI_Parrived(req, -1, &flag), MPI_ERR_ARG, 0, "MPI_Parrived(-1)");
        expect(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, 0, "MPI_Wait (receiver)");
        for (int i = 0; i < PARTS * COUNT; i++)
            if (buf[i] != 3 * i + 1) {
                fprintf(stderr, "rank 1: element %d is %d, expected %d\n", i, buf[i], 3 * i + 1);
                errs++;
                break;
            }
    }
    MPI_Request_free(&req);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&weh);
    MPI_Errhandler_free(&ceh);
    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
