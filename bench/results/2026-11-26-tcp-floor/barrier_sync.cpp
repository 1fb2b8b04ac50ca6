// barrier_sync.cpp: the latency of one 8-byte MPI_Send over UCX/TCP as the benchmark times
// it (receive posted, ranks synchronised, sender's clock to the receiver's completion; both
// ranks on one host, one clock), with two ways of synchronising each iteration:
//
//   barrier  MPI_Barrier, as partbench's pipelined pattern does
//   ready    the receiver sends a 0-byte "ready" message to the sender
//
// Over UCX/TCP on this machine the barrier makes every other iteration about 3 us slower
// (10-12 against 7.5 us); with the ready message every iteration takes 7.2-7.5 us, which is
// what stock MPICH's partitioned send measures in partbench (6.8-7.0 us, its per-iteration
// control traffic differs). So the tcp-1x1 row's gap is an effect of the benchmark's barrier
// on a plain tagged send, not a cost of the engine.
//
//   mpicxx -std=c++17 -O2 barrier_sync.cpp -o barrier_sync
//   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self mpiexec -n 2 ./barrier_sync barrier
//   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self mpiexec -n 2 ./barrier_sync ready
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const bool ready = argc > 1 && std::strcmp(argv[1], "ready") == 0;
    constexpr int iters = 400, warmup = 20;
    std::vector<double> t(iters + warmup);
    char data[8] = {};
    char none = 0;

    for (int i = 0; i < iters + warmup; i++) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (rank == 1)
            MPI_Irecv(data, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req);
        if (!ready)
            MPI_Barrier(MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Send(&none, 0, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
        else
            MPI_Recv(&none, 0, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 0) {
            t[i] = MPI_Wtime();
            MPI_Send(data, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        } else {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            t[i] = MPI_Wtime();
        }
    }

    std::vector<double> start(iters + warmup);
    if (rank == 0)
        MPI_Send(t.data(), iters + warmup, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
    else
        MPI_Recv(start.data(), iters + warmup, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (rank == 1) {
        std::vector<double> us;
        for (int i = warmup; i < iters + warmup; i++)
            us.push_back((t[i] - start[i]) * 1e6);
        std::printf("%s: first 12 iterations (us):", ready ? "ready" : "barrier");
        for (int i = 0; i < 12; i++)
            std::printf(" %.1f", us[i]);
        std::sort(us.begin(), us.end());
        std::printf("; median %.2f us\n", us[us.size() / 2]);
    }
    MPI_Finalize();
    return 0;
}
