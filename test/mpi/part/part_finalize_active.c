/*
 * part_finalize_active.c: a sender that starts and readies its last iteration and calls
 * MPI_Finalize without completing it (2 processes). Erroneous (MPI wants every request
 * complete before MPI_Finalize), but a common slip; MPI_Finalize now gives such sends time
 * to finish (part_init.c, flush_sends) so that their receivers complete. Until 2026-12-01
 * the engine stopped in MPI_Finalize before the data went (the first iteration waits for
 * the receiver's answer, an RDMA iteration for its credit) and the receiver waited forever:
 * this test then hangs until its time limit.
 *
 * -ops=N pairs (default 2), each with its own tag, run -iter=N iterations (default 1); the
 * sender waits for all but the last; the receiver waits for every one and checks every
 * int. -late=MS: the receiver starts its receives MS milliseconds late (the sender is then
 * inside MPI_Finalize). No collective runs after the sender's last MPI_Pready (it would
 * move the data itself), so the receiver reports: it prints " No Errors" when every
 * iteration arrived intact; the sender prints only its own failures.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

#define PARTS 4
#define COUNT 256

int main(int argc, char **argv)
{
    int rank, size, errs = 0, nops = 2, iters = 1, late_ms = 0;

    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-ops=", 5) == 0)
            nops = atoi(argv[i] + 5);
        else if (strncmp(argv[i], "-iter=", 6) == 0)
            iters = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "-late=", 6) == 0)
            late_ms = atoi(argv[i] + 6);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || nops < 1 || iters < 1) {
        fprintf(stderr, "needs 2 processes, -ops >= 1 and -iter >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *buf = malloc(sizeof(int) * (size_t) nops * PARTS * COUNT);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t) nops);
    for (int o = 0; o < nops; o++) {
        int *b = buf + (size_t) o * PARTS * COUNT;
        int rc = rank == 0 ?
            MPI_Psend_init(b, PARTS, COUNT, MPI_INT, 1, o, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[o]) :
            MPI_Precv_init(b, PARTS, COUNT, MPI_INT, 0, o, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[o]);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: init of operation %d failed\n", rank, o);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (rank == 1 && late_ms > 0)
        usleep((useconds_t) late_ms * 1000);
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < nops * PARTS * COUNT; i++)
            buf[i] = rank == 0 ? it * 7919 + i : -1;
        if (MPI_Startall(nops, req) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d iteration %d: MPI_Startall failed\n", rank, it);
            errs++;
            break;
        }
        if (rank == 0) {
            for (int o = 0; o < nops; o++)
                if (MPI_Pready_range(0, PARTS - 1, req[o]) != MPI_SUCCESS) {
                    fprintf(stderr, "iteration %d: MPI_Pready_range of %d failed\n", it, o);
                    errs++;
                }
            if (it == iters - 1)
                break;  /* the last iteration is left to MPI_Finalize */
        }
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
    if (rank == 1) {
        for (int o = 0; o < nops; o++)
            MPI_Request_free(&req[o]);
        if (errs == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", errs);
        fflush(stdout);
    }
    /* rank 0's requests are still active: MPI_Finalize must let their data go */
    MPI_Finalize();
    free(buf);
    free(req);
    return 0;
}
