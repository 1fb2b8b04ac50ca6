// bench/oneshot.cpp: what a partitioned operation costs when a program makes a new one for
// every message (MPI_Psend_init/MPI_Precv_init, MPI_Startall, MPI_Pready, MPI_Waitall,
// MPI_Request_free each time), as MPICH's part/pingping does and as code ported from
// MPI_Isend/MPI_Irecv may. Both ranks send to each other. Every received byte is checked.
//
//   oneshot [ITERATIONS [PARTITIONS [INTS_PER_PARTITION]]]     (defaults 10000 1 8)
//
// Rank 0 prints "us_per_iter X": the wall time of the timed loop over ITERATIONS.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int arg(int argc, char** argv, int i, int dflt)
{
    if (argc <= i)
        return dflt;
    int v = std::atoi(argv[i]);
    if (v < 1) {
        std::fprintf(stderr, "oneshot: argument %d must be a positive integer, got '%s'\n", i,
                     argv[i]);
        std::exit(2);
    }
    return v;
}

// the value of element j of the message rank sent in iteration it
int expected(int it, int j, int rank) { return it * 7 + j * 3 + rank; }

}  // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            std::fprintf(stderr, "oneshot: needs exactly 2 ranks, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int iters = arg(argc, argv, 1, 10000);
    const int parts = arg(argc, argv, 2, 1);
    const int ints = arg(argc, argv, 3, 8);
    const int peer = 1 - rank;
    const std::size_t n = static_cast<std::size_t>(parts) * ints;
    std::vector<int> sendbuf(n), recvbuf(n);

    auto one = [&](int it) {
        for (std::size_t j = 0; j < n; j++)
            sendbuf[j] = expected(it, static_cast<int>(j), rank);
        MPI_Request req[2];
        MPI_Precv_init(recvbuf.data(), parts, ints, MPI_INT, peer, 0, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[1]);
        MPI_Psend_init(sendbuf.data(), parts, ints, MPI_INT, peer, 0, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[0]);
        MPI_Startall(2, req);
        for (int p = 0; p < parts; p++)
            MPI_Pready(p, req[0]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        for (std::size_t j = 0; j < n; j++) {
            if (recvbuf[j] != expected(it, static_cast<int>(j), peer)) {
                std::fprintf(stderr, "oneshot: rank %d iteration %d element %zu: %d, expected %d\n",
                             rank, it, j, recvbuf[j], expected(it, static_cast<int>(j), peer));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
    };

    for (int it = 0; it < 100; it++)  // warm-up: first-touch, UCX endpoints
        one(-1 - it);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++)
        one(it);
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        std::printf("us_per_iter %.3f\n", t / iters * 1e6);
    MPI_Finalize();
    return 0;
}
