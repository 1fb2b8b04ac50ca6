/*
 * recv_start.c: what a receive's MPI_Start costs, alone (2 ranks; the WITHDRAW side by side,
 * see README.md here). Rank 0 sends one partition of 8 bytes per iteration; rank 1 times
 * each MPI_Start of its receive (the tag transport's lock-free start: the previous
 * iteration's request freed, the receive posted, direct completion armed, then the new
 * fence and refusal check), then MPI_Wait. The two meet every iteration (a zero-byte
 * message back), so rank 1's start never finds the data already there. Prints the median
 * and the mean of the per-call times (ns) of -n timed iterations after 2000 untimed ones.
 * Data checked every iteration.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *) a, y = *(const long long *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 20000, warm = 2000;
    long long buf = 0, *t = malloc(sizeof(long long) * n);
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Psend_init(&buf, 1, 1, MPI_LONG_LONG, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(&buf, 1, 1, MPI_LONG_LONG, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (int i = 0; i < warm + n; i++) {
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            buf = i;
            MPI_Start(&req);
            MPI_Pready(0, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            long long t0 = now_ns();
            MPI_Start(&req);
            long long t1 = now_ns();
            if (i >= warm)
                t[i - warm] = t1 - t0;
            MPI_Send(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (buf != i) {
                fprintf(stderr, "iteration %d: got %lld\n", i, buf);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }
    if (rank == 1) {
        double mean = 0;
        for (int i = 0; i < n; i++)
            mean += t[i];
        qsort(t, n, sizeof(*t), cmp);
        printf("recv MPI_Start ns: median %lld mean %.1f\n", t[n / 2], mean / n);
    }
    MPI_Request_free(&req);
    MPI_Finalize();
    free(t);
    return 0;
}
