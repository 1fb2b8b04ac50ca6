// bench/startup.cpp: the cost of starting an MPI program with a library, the part a user
// pays before any communication. Prints how long MPI_Init and MPI_Finalize took inside the
// process; bench/startup.sh times whole launches around it (loading the library and its
// dependencies happens before main and is seen only there).
#include <mpi.h>

#include <chrono>
#include <cstdio>

int main(int argc, char** argv)
{
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    MPI_Init(&argc, &argv);
    auto t1 = clock::now();
    int rank = 0, token = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // one message each way, checked, so that the launch did real MPI work
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) {
        if (rank == 0) {
            token = 12345;
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (token != 12346) {
                std::fprintf(stderr, "startup: token %d, expected 12346\n", token);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        } else if (rank == 1) {
            MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += 1;
            MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
    }
    auto t2 = clock::now();
    MPI_Finalize();
    auto t3 = clock::now();
    auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    if (rank == 0)
        std::printf("init_ms %.2f finalize_ms %.2f\n", ms(t1 - t0), ms(t3 - t2));
    return 0;
}
