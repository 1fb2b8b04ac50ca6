/*
 * maint/twohost/hostcheck.c: are the ranks on different hosts, and does their traffic cross
 * the network interface?  (mpiexec -n 2 hostcheck [IFACE] [MIB])
 *
 * - MPI_Get_processor_name of every rank: all must differ (one rank per host).
 * - MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) must give every rank a communicator of size 1:
 *   MPICH found no other rank on its node, so it cannot use shared memory between them.
 * - Rank 0 sends MIB MiB (default 32) to rank 1 and back; the byte counters of IFACE
 *   (default $TWOHOST_IFACE or twh0) in /proc/net/dev of each rank's own network namespace
 *   must have grown by at least that much in both directions: the data crossed the veth.
 * Prints one line per rank and exits non-zero when a check fails.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iface_bytes(const char *iface, unsigned long long *rx, unsigned long long *tx)
{
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    size_t n = strlen(iface);
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, iface, n) == 0 && p[n] == ':') {
            unsigned long long v[9];
            if (sscanf(p + n + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
                *rx = v[0];
                *tx = v[8];
                fclose(f);
                return 0;
            }
        }
    }
    fclose(f);
    return -1;
}

int main(int argc, char **argv)
{
    int rank, size, len, errs = 0, shsize;
    char name[MPI_MAX_PROCESSOR_NAME];
    const char *iface = argc > 1 ? argv[1] : getenv("TWOHOST_IFACE");
    int mib = argc > 2 ? atoi(argv[2]) : 32;
    MPI_Comm shm;

    if (!iface || !*iface)
        iface = "twh0";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);

    char *all = malloc((size_t) size * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        if (i != rank && strcmp(all + (size_t) i * MPI_MAX_PROCESSOR_NAME, name) == 0) {
            printf("rank %d: rank %d has the same processor name %s\n", rank, i, name);
            errs++;
        }

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    MPI_Comm_size(shm, &shsize);
    if (shsize != 1) {
        printf("rank %d: %d ranks share memory with me\n", rank, shsize);
        errs++;
    }
    MPI_Comm_free(&shm);

    unsigned long long rx0 = 0, tx0 = 0, rx1 = 0, tx1 = 0;
    size_t bytes = (size_t) mib << 20;
    char *buf = malloc(bytes);
    int have = iface_bytes(iface, &rx0, &tx0) == 0;
    if (!have) {
        printf("rank %d: no interface %s in /proc/net/dev\n", rank, iface);
        errs++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        memset(buf, rank + 1, bytes);
        if (rank == 0) {
            MPI_Send(buf, (int) bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, (int) bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int) bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int) bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        }
        for (size_t i = 0; i < bytes; i += 4093)
            if (buf[i] != 1) {
                printf("rank %d: wrong data at %zu\n", rank, i);
                errs++;
                break;
            }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (have && iface_bytes(iface, &rx1, &tx1) == 0 && rank < 2 && size >= 2) {
        if (rx1 - rx0 < bytes || tx1 - tx0 < bytes) {
            printf("rank %d: only rx +%llu tx +%llu bytes on %s for 2 x %zu bytes of data\n",
                   rank, rx1 - rx0, tx1 - tx0, iface, bytes);
            errs++;
        }
    }
    printf("rank %d of %d on %s: shared-memory peers %d, %s rx +%.1f MB tx +%.1f MB: %s\n", rank,
           size, name, shsize - 1, iface, (rx1 - rx0) / 1e6, (tx1 - tx0) / 1e6,
           errs ? "FAIL" : "ok");
    fflush(stdout);
    int tot;
    MPI_Allreduce(&errs, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && tot == 0) {
        printf("hostcheck: all checks passed\n");
        fflush(stdout);
    }
    free(buf);
    free(all);
    MPI_Finalize();
    return tot != 0;
}
