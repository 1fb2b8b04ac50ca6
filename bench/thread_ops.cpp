// thread_ops.cpp: T threads per rank, each driving its own partitioned operation.
//
// Ranks 0 (sender) and 1 (receiver) each run T threads; thread t owns one operation (tag t,
// P partitions of B bytes) and runs it N times on its own: the sender fills its buffer
// (partbench's data pattern, common.hpp), readies every partition with MPI_Pready and
// waits; the receiver starts, waits and checks every byte (exit status 2 on a mismatch).
// No thread waits for another between iterations: this is the "many threads, one operation
// each" pattern of MPI+threads codes (a halo exchange per thread, a pipelined solver's
// stages), where the engine's shared state (its lock, the transport's queues) is what the
// threads compete for. Rank 0 prints the wall time from the first thread's first timed
// iteration to the last thread's end divided by the timed iterations (the threads' warm-ups
// are not aligned: a thread's may overlap another's timed iterations; the sender's timed
// iteration includes filling its buffer), and the median, 90th percentile and maximum of
// thread 0's iteration times.
//
//   thread_ops [--threads T] [--parts P] [--bytes B] [--iters N] [--warmup W]
//              [--wait block|yield]
// --wait yield polls with MPI_Test and sched_yield (the threads outnumber the 2 cores here);
// block calls MPI_Wait. The transport is whatever the environment selects
// (MPIR_CVAR_PART_TRANSPORT=tag|ofi|verbs); compare transports or libraries by running
// launches alternately (bench/README.md, "thread_ops").
// Build: mpicxx -O2 -std=c++17 -pthread bench/thread_ops.cpp bench/common.cpp
#include "common.hpp"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    int threads = 2, parts = 8, iters = 2000, warmup = 100;
    long bytes = 1024;   // per partition
    bool yield = false;
};

int rank = 0;

void wait_req(MPI_Request *req, bool yield)
{
    if (!yield) {
        PB_MPI(MPI_Wait(req, MPI_STATUS_IGNORE));
        return;
    }
    for (int done = 0;;) {
        PB_MPI(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done)
            return;
        sched_yield();
    }
}

// one thread's operation, run o.iters times; returns the timed iterations' durations (s)
std::vector<double> run_op(const Options &o, int tid, double *t_begin, double *t_end)
{
    const size_t total = static_cast<size_t>(o.parts) * static_cast<size_t>(o.bytes);
    std::vector<uint8_t> buf(total, 0);
    MPI_Request req;
    if (rank == 0)
        PB_MPI(MPI_Psend_init(buf.data(), o.parts, o.bytes, MPI_BYTE, 1, tid, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    else
        PB_MPI(MPI_Precv_init(buf.data(), o.parts, o.bytes, MPI_BYTE, 0, tid, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    std::vector<double> times;
    times.reserve(o.iters);
    for (int it = 0; it < o.iters; it++) {
        if (it == o.warmup)
            *t_begin = pb::now_s();
        const double t0 = pb::now_s();
        const uint32_t seed = pb::iter_seed(static_cast<uint32_t>(tid + 1), it);
        if (rank == 0) {
            PB_MPI(MPI_Start(&req));
            pb::fill_pattern(buf.data(), total, 0, seed);
            for (int p = 0; p < o.parts; p++)
                PB_MPI(MPI_Pready(p, req));
            wait_req(&req, o.yield);
        } else {
            pb::fill_pattern(buf.data(), total, 0, seed + 128);   // poison
            PB_MPI(MPI_Start(&req));
            wait_req(&req, o.yield);
            const long long bad = pb::check_pattern(buf.data(), total, 0, seed);
            if (bad >= 0) {
                std::fprintf(stderr,
                             "thread_ops: rank 1 thread %d: VERIFICATION FAILED at byte %lld "
                             "of iteration %d\n", tid, bad, it);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        if (it >= o.warmup)
            times.push_back(pb::now_s() - t0);
    }
    *t_end = pb::now_s();
    PB_MPI(MPI_Request_free(&req));
    return times;
}

} // namespace

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pb::g_rank = rank;
    Options o;
    // a whole decimal number, or the run stops (atoi took "x" as 0)
    auto num = [](const std::string &a, const std::string &v) {
        char *end = nullptr;
        errno = 0;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n > (1L << 30))
            pb::fatal("thread_ops: %s takes a number from 0 to 2^30, not '%s'", a.c_str(),
                      v.c_str());
        return n;
    };
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h")
            pb::fatal("usage: thread_ops [--threads T] [--parts P] [--bytes B] [--iters N] "
                      "[--warmup W] [--wait block|yield]");
        if (i + 1 >= argc)
            pb::fatal("thread_ops: option %s takes a value", a.c_str());
        const std::string v = argv[++i];
        if (a == "--threads")
            o.threads = static_cast<int>(num(a, v));
        else if (a == "--parts")
            o.parts = static_cast<int>(num(a, v));
        else if (a == "--bytes")
            o.bytes = num(a, v);
        else if (a == "--iters")
            o.iters = static_cast<int>(num(a, v));
        else if (a == "--warmup")
            o.warmup = static_cast<int>(num(a, v));
        else if (a == "--wait" && (v == "block" || v == "yield"))
            o.yield = v == "yield";
        else
            pb::fatal("thread_ops: unknown option or value: %s %s", a.c_str(), v.c_str());
    }
    if (size != 2 || provided < MPI_THREAD_MULTIPLE || o.threads < 1 || o.parts < 1 ||
        o.bytes < 1 || o.warmup < 0 || o.iters <= o.warmup)
        pb::fatal("thread_ops: run with 2 ranks and MPI_THREAD_MULTIPLE; threads, parts, "
                  "bytes >= 1; iters > warmup >= 0");
    pb::start_watchdog(600);

    std::vector<std::vector<double>> times(o.threads);
    std::vector<double> begin(o.threads), end(o.threads);
    PB_MPI(MPI_Barrier(MPI_COMM_WORLD));
    {
        std::vector<std::thread> team;
        for (int t = 1; t < o.threads; t++)
            team.emplace_back([&, t] { times[t] = run_op(o, t, &begin[t], &end[t]); });
        times[0] = run_op(o, 0, &begin[0], &end[0]);
        for (auto &th : team)
            th.join();
    }
    PB_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        const double wall = *std::max_element(end.begin(), end.end()) -
                            *std::min_element(begin.begin(), begin.end());
        std::vector<double> t0 = times[0];
        std::sort(t0.begin(), t0.end());
        std::printf("thread_ops: %d thread(s) x 1 operation, %d partitions of %ld B, %d "
                    "iterations after %d, wait %s: %.2f us per iteration (wall / iterations), "
                    "thread 0 median %.2f us, p90 %.2f us, max %.0f us\n",
                    o.threads, o.parts, o.bytes, o.iters - o.warmup, o.warmup,
                    o.yield ? "yield" : "block", wall / (o.iters - o.warmup) * 1e6,
                    t0[t0.size() / 2] * 1e6, t0[t0.size() * 9 / 10] * 1e6, t0.back() * 1e6);
    }
    pb::start_finalize_watchdog(5, 0);
    MPI_Finalize();
    return 0;
}
