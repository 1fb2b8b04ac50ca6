/*
 * part_ofi_stale_shm.c: the RDMA transport over libfabric's shm provider opens its endpoints
 * although /dev/shm holds stale regions under the names the provider would pick by itself
 * (2 processes; run with MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm).
 *
 * The shm provider names an endpoint's region "<pid>:<domain>:<endpoint>" unless told
 * otherwise and refuses (fi_enable: "Device or resource busy") a name whose region exists.
 * A process killed with its endpoint open leaves its region behind, so once process ids
 * wrap, a later process with the same id failed MPI_Psend_init/MPI_Precv_init (seen in CI:
 * part_rdma_fault, and part_tag_overflow under ASan). Each process here plants such stale
 * regions under its own id before MPI_Init (4 KiB of zeros, which the provider refuses as
 * it refuses a dead process's region), then runs partitioned transfers whose every byte is
 * checked; it removes what it planted once the init call has returned.
 */
#include "mpi.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

#define PARTS 8
#define COUNT 1024
#define ITERS 3
#define PLANTED 16              /* endpoints 0..15 of domain 0: more than the VCIs there are */

static int planted[PLANTED];

static void plant(void)
{
    static char zeros[4096];
    char path[64];
    for (int e = 0; e < PLANTED; e++) {
        snprintf(path, sizeof(path), "/dev/shm/%d:0:%d", (int) getpid(), e);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0)
            continue;           /* not ours to plant (or to remove) */
        planted[e] = write(fd, zeros, sizeof(zeros)) == (ssize_t) sizeof(zeros);
        close(fd);
        if (!planted[e])
            unlink(path);
    }
}

static void unplant(void)
{
    char path[64];
    for (int e = 0; e < PLANTED; e++) {
        snprintf(path, sizeof(path), "/dev/shm/%d:0:%d", (int) getpid(), e);
        if (planted[e])
            unlink(path);
    }
}

int main(int argc, char **argv)
{
    int rank, errs = 0, nplanted = 0;
    unsigned char *buf = malloc(PARTS * COUNT);
    MPI_Request req;

    plant();
    for (int e = 0; e < PLANTED; e++)
        nplanted += planted[e];
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nplanted == 0) {
        fprintf(stderr, "rank %d: could not plant a stale region in /dev/shm\n", rank);
        errs++;
    }

    int rc = rank == 0 ?
        MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req) :
        MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    unplant();                  /* endpoint 0 opened in the init call (or failed to) */
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: the init call failed: %s\n", rank, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);   /* the peer's call cannot complete */
    }
    for (int it = 0; it < ITERS; it++) {
        if (rank == 0)
            for (int i = 0; i < PARTS * COUNT; i++)
                buf[i] = (unsigned char) (i * 7 + it);
        else
            memset(buf, 0xA5, PARTS * COUNT);
        MPI_Start(&req);
        if (rank == 0)
            for (int p = PARTS - 1; p >= 0; p--)
                MPI_Pready(p, req);
        if (MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: iteration %d failed\n", rank, it);
            errs++;
            break;
        }
        if (rank == 1)
            for (int i = 0; i < PARTS * COUNT; i++)
                if (buf[i] != (unsigned char) (i * 7 + it)) {
                    fprintf(stderr, "iteration %d: byte %d is %d, expected %d\n", it, i,
                            buf[i], (unsigned char) (i * 7 + it));
                    errs++;
                    break;
                }
    }
    MPI_Request_free(&req);
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
