// flags_share.cpp: what sharing a cache line costs MPI_Pready's two atomics (the ready flag's
// exchange, the message counter's decrement) when T threads ready their own partition at the
// same time: flags 4 bytes apart (as the engine lays them out) against 64 bytes apart.
// Each round: the threads meet at a spin barrier, then each does the exchange and the
// decrement on its own partition's flag and counter; rounds are timed on thread 0.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <algorithm>

int main(int argc, char **argv)
{
    const int T = argc > 1 ? std::atoi(argv[1]) : 2, rounds = 200000;
    for (int stride : {1, 16, 1, 16}) {
        std::vector<int32_t> flags(T * 16 + 16), cntr(T * 16 + 16);
        std::atomic<int> arrive{0};
        std::atomic<int> gen{0};
        std::vector<double> t_round;
        auto work = [&](int id) {
            for (int r = 0; r < rounds; r++) {
                // barrier: the last to arrive bumps the generation
                int g = gen.load(std::memory_order_acquire);
                if (arrive.fetch_add(1) == T - 1) {
                    arrive.store(0);
                    gen.store(g + 1, std::memory_order_release);
                } else {
                    while (gen.load(std::memory_order_acquire) == g)
                        ;
                }
                __atomic_exchange_n(&flags[id * stride], r + 1, __ATOMIC_ACQ_REL);
                __atomic_sub_fetch(&cntr[id * stride], 1, __ATOMIC_ACQ_REL);
            }
        };
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> th;
        for (int i = 1; i < T; i++)
            th.emplace_back(work, i);
        work(0);
        for (auto &x : th)
            x.join();
        double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        std::printf("T=%d stride %2d ints: %.1f ns per round (barrier included)\n", T, stride, ns / rounds);
    }
}
