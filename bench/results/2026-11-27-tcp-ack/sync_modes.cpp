// sync_modes.cpp: one 8-byte message from rank 0 to rank 1 over UCX/TCP, timed as partbench
// times it (receive armed, ranks synchronised, the sender's clock after the synchronisation
// to the receiver's completion; one host, one clock), after one of these synchronisations:
//
//   barrier  MPI_Barrier (partbench's pipelined pattern)
//   note     the receiver first sends a 0-byte note to the sender (MPI_Isend before the
//            barrier; the sender's MPI_Irecv is posted before it; both wait at the end of
//            the iteration), then MPI_Barrier: what stock MPICH's partitioned receive does
//            with its per-iteration CTS
//   ready    no barrier: the receiver sends a 0-byte "ready" message, the sender receives it
//   late     the receiver spins 20 us, then MPI_Barrier
//
// and the message is a plain MPI_Send ("send") or a one-partition partitioned send ("part").
//
//   mpicxx -std=c++17 -O2 sync_modes.cpp -o sync_modes
//   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self mpiexec -n 2 ./sync_modes barrier|note|ready|late send|part
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::string mode = argc > 1 ? argv[1] : "barrier";
    const bool part = argc > 2 && std::string(argv[2]) == "part";
    constexpr int iters = 400, warmup = 20;
    std::vector<double> t(iters + warmup);
    char data[8] = {};
    char none = 0;
    MPI_Request preq = MPI_REQUEST_NULL;
    if (part && rank == 0)
        MPI_Psend_init(data, 1, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
    else if (part)
        MPI_Precv_init(data, 1, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);

    for (int i = 0; i < iters + warmup; i++) {
        MPI_Request req = MPI_REQUEST_NULL, note = MPI_REQUEST_NULL;
        if (rank == 1) {
            if (part)
                MPI_Start(&preq);
            else
                MPI_Irecv(data, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req);
        }
        if (mode == "note") {
            if (rank == 1)
                MPI_Isend(&none, 0, MPI_CHAR, 0, 5, MPI_COMM_WORLD, &note);
            else
                MPI_Irecv(&none, 0, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &note);
        }
        if (mode == "late" && rank == 1) {
            const double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 20e-6)
                ;
        }
        if (mode == "ready") {
            if (rank == 1)
                MPI_Send(&none, 0, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
            else
                MPI_Recv(&none, 0, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            t[i] = MPI_Wtime();
            if (part) {
                MPI_Start(&preq);
                MPI_Pready(0, preq);
                MPI_Wait(&preq, MPI_STATUS_IGNORE);
            } else {
                MPI_Send(data, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            }
        } else {
            MPI_Wait(part ? &preq : &req, MPI_STATUS_IGNORE);
            t[i] = MPI_Wtime();
        }
        MPI_Wait(&note, MPI_STATUS_IGNORE);
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
        std::printf("%-8s %-5s first:", mode.c_str(), part ? "part" : "send");
        for (int i = 0; i < 8; i++)
            std::printf(" %.1f", us[i]);
        std::sort(us.begin(), us.end());
        std::printf("; median %.2f us\n", us[us.size() / 2]);
    }
    if (part)
        MPI_Request_free(&preq);
    MPI_Finalize();
    return 0;
}
