/*
 * part_finalize_unfreed.c: MPI_Finalize with partitioned requests the program never freed
 * (2 processes; MPI allows inactive requests at MPI_Finalize). Run in the verbs mode under
 * the emulator's leak check (testlist.verbs, VERBSEMU_CHECK_LEAKS=1): until 2026-12-01 the
 * verbs backend deallocated its protection domain with those operations' memory regions
 * still registered (the emulator reports each object still alive at ibv_close_device and
 * the process exits with 86, which fails the line).
 *
 * -ops=N pairs (default 3), each with its own tag, run -iter=N iterations (default 2), data
 * checked every iteration; then the requests are left inactive, not freed, and both
 * processes call MPI_Finalize.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define PARTS 4
#define COUNT 512

int main(int argc, char **argv)
{
    int rank, size, errs = 0, nops = 3, iters = 2;

    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-ops=", 5) == 0)
            nops = atoi(argv[i] + 5);
        else if (strncmp(argv[i], "-iter=", 6) == 0)
            iters = atoi(argv[i] + 6);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || nops < 1) {
        fprintf(stderr, "needs 2 processes and -ops >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *buf = malloc(sizeof(int) * (size_t) nops * PARTS * COUNT);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t) nops);
    for (int o = 0; o < nops; o++) {
        int *b = buf + (size_t) o * PARTS * COUNT;
        if (rank == 0)
            MPI_Psend_init(b, PARTS, COUNT, MPI_INT, 1, o, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[o]);
        else
            MPI_Precv_init(b, PARTS, COUNT, MPI_INT, 0, o, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[o]);
    }
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < nops * PARTS * COUNT; i++)
            buf[i] = rank == 0 ? it * 7919 + i : -1;
        MPI_Startall(nops, req);
        if (rank == 0)
            for (int o = 0; o < nops; o++)
                MPI_Pready_range(0, PARTS - 1, req[o]);
        if (MPI_Waitall(nops, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d iteration %d: MPI_Waitall failed\n", rank, it);
            errs++;
        }
        if (rank == 1)
            for (int i = 0; i < nops * PARTS * COUNT; i++)
                if (buf[i] != it * 7919 + i) {
                    fprintf(stderr, "iteration %d: int %d is %d, expected %d\n", it, i, buf[i],
                            it * 7919 + i);
                    errs++;
                    break;
                }
    }
    /* the requests stay allocated (inactive) into MPI_Finalize */
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
