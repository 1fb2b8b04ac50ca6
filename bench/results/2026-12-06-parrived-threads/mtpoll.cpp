// mtpoll.cpp: the cost of a false MPI_Parrived when T threads of the receiving rank poll at
// once, each its own partition of one receive (so every call is on the same VCI).
//
// Rank 0 receives, rank 1 sends; MPI_THREAD_MULTIPLE. Per iteration: both ranks MPI_Start,
// barrier; rank 0's T threads meet at a spin barrier, then each calls MPI_Parrived K times
// on partition (thread mod 4), every answer must be false (the sender readies nothing
// before "go"); rank 0 sends "go", the sender fills and readies its 4 partitions, both
// MPI_Wait and rank 0 checks every byte. Printed: the median over iterations of the
// threads' mean ns per call, and the minimum.
//
//   mpicxx -O2 -std=c++17 -pthread mtpoll.cpp -o mtpoll
//   mpiexec -n 2 ./mtpoll T K ITERS
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int kParts = 4;
constexpr int kPartBytes = 64;

unsigned char pattern(int iter, int i) { return static_cast<unsigned char>(iter * 31 + i * 7 + 1); }

} // namespace

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided != MPI_THREAD_MULTIPLE) {
        std::fprintf(stderr, "mtpoll: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int T = argc > 1 ? std::atoi(argv[1]) : 2;
    const int K = argc > 2 ? std::atoi(argv[2]) : 50000;
    const int iters = argc > 3 ? std::atoi(argv[3]) : 30;
    std::vector<unsigned char> buf(kParts * kPartBytes);
    MPI_Request req;
    if (rank == 0)
        MPI_Precv_init(buf.data(), kParts, kPartBytes, MPI_BYTE, 1, 5, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req);
    else
        MPI_Psend_init(buf.data(), kParts, kPartBytes, MPI_BYTE, 0, 5, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req);

    std::vector<double> per_iter;
    long long bad = 0;
    for (int it = 0; it < iters; it++) {
        if (rank == 0)
            std::fill(buf.begin(), buf.end(), 0xee);
        MPI_Start(&req);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            std::atomic<int> arrived{0};
            std::atomic<long long> wrong{0};
            std::vector<double> ns(T);
            std::vector<std::thread> threads;
            for (int t = 0; t < T; t++)
                threads.emplace_back([&, t] {
                    arrived++;
                    while (arrived.load() < T) {
                    }
                    int flag = 0;
                    long long trues = 0;
                    const auto t0 = std::chrono::steady_clock::now();
                    for (int j = 0; j < K; j++) {
                        MPI_Parrived(req, t % kParts, &flag);
                        trues += flag;
                    }
                    const auto t1 = std::chrono::steady_clock::now();
                    ns[t] = std::chrono::duration<double, std::nano>(t1 - t0).count() / K;
                    wrong += trues;
                });
            for (auto &th : threads)
                th.join();
            if (wrong.load() != 0) {
                std::fprintf(stderr, "mtpoll: iteration %d: %lld true answers before any MPI_Pready\n",
                             it, wrong.load());
                bad++;
            }
            double mean = 0;
            for (double x : ns)
                mean += x / T;
            per_iter.push_back(mean);
            MPI_Send(nullptr, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
        } else {
            MPI_Request go;
            MPI_Irecv(nullptr, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &go);
            int done = 0;
            while (!done) {
                MPI_Test(&go, &done, MPI_STATUS_IGNORE);
                if (!done)
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            for (int p = 0; p < kParts; p++) {
                for (int i = 0; i < kPartBytes; i++)
                    buf[p * kPartBytes + i] = pattern(it, p * kPartBytes + i);
                MPI_Pready(p, req);
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 0)
            for (int i = 0; i < kParts * kPartBytes; i++)
                if (buf[i] != pattern(it, i)) {
                    std::fprintf(stderr, "mtpoll: iteration %d: byte %d is 0x%02x, expected 0x%02x\n",
                                 it, i, buf[i], pattern(it, i));
                    bad++;
                    break;
                }
    }
    if (rank == 0) {
        std::sort(per_iter.begin(), per_iter.end());
        std::printf("T=%d median %.1f min %.1f ns per false MPI_Parrived%s\n", T,
                    per_iter[per_iter.size() / 2], per_iter[0], bad ? " VERIFICATION FAILED" : "");
    }
    MPI_Request_free(&req);
    MPI_Finalize();
    return bad ? 2 : 0;
}
