// pready_cost.cpp: what the sender's MPI_Pready* calls cost, per aggregator, in one launch.
//
// Two or more partitioned operations between ranks 0 (sender) and 1 (receiver), one per
// aggregator named with the info key mpich_part_aggregator (default: none and timer), run
// iteration by iteration in turn, so the machine's fast and slow phases hit them alike. In
// each iteration the sender fills its buffer (partbench's data pattern, common.hpp), then
// readies every partition, either one MPI_Pready per partition (--chunk 1) or
// MPI_Pready_range over chunks of K partitions (--chunk K), and the time of those calls
// alone is recorded (no compute between them: this is the calls' own cost, the write
// posting included). The receiver checks every byte of every iteration (exit status 2 on a
// mismatch). Rank 0 prints, per aggregator, the median over the iterations after the
// warm-up of the time of all ready calls of an iteration, and of its last call.
//
//   pready_cost [--parts P] [--bytes B] [--iters N] [--warmup W] [--chunk K]
//               [--threads T] [--aggr none,timer,...] [--level single|...|multiple]
// With T threads each readies its own block of P / T partitions at the same time (the last
// one the rest); "all calls" then includes the threads' hand-off and join (the same for
// every aggregator), and no "last call" is printed.
// The transport is whatever the environment selects (the timer aggregator applies on the
// RDMA transports: MPIR_CVAR_PART_TRANSPORT=ofi|verbs).
// Build: mpicxx -std=c++17 -pthread bench/pready_cost.cpp bench/common.cpp
#include "common.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Options {
    int parts = 32, iters = 2000, warmup = 100, chunk = 1, threads = 1;
    long bytes = 512;   // per partition
    std::vector<std::string> aggr{"none", "timer"};
};

int rank = 0;

[[noreturn]] void fail(const char *what)
{
    std::fprintf(stderr, "pready_cost: rank %d: VERIFICATION FAILED: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::exit(2);
}

double now_ns()
{
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Op {
    std::string aggr;
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<uint8_t> buf;
    std::vector<double> all_ns, last_ns;
};

} // namespace

int main(int argc, char **argv)
{
    int provided, size;
    // --level: the thread level asked of MPI_Init_thread (below MPI_THREAD_MULTIPLE the
    // engine takes none of its locks); read before MPI is initialised
    int level = MPI_THREAD_MULTIPLE;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--level") {
            const std::string v = argv[i + 1];
            level = v == "single"       ? MPI_THREAD_SINGLE
                    : v == "funneled"   ? MPI_THREAD_FUNNELED
                    : v == "serialized" ? MPI_THREAD_SERIALIZED
                    : v == "multiple"   ? MPI_THREAD_MULTIPLE
                                        : -1;
        }
    MPI_Init_thread(&argc, &argv, level < 0 ? MPI_THREAD_SINGLE : level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--parts")
            o.parts = std::atoi(v.c_str());
        else if (a == "--bytes")
            o.bytes = std::atol(v.c_str());
        else if (a == "--iters")
            o.iters = std::atoi(v.c_str());
        else if (a == "--warmup")
            o.warmup = std::atoi(v.c_str());
        else if (a == "--chunk")
            o.chunk = std::atoi(v.c_str());
        else if (a == "--threads")
            o.threads = std::atoi(v.c_str());
        else if (a == "--level")
            continue; // read above
        else if (a == "--aggr") {
            o.aggr.clear();
            std::stringstream ss(v);
            for (std::string s; std::getline(ss, s, ',');)
                o.aggr.push_back(s);
        } else {
            if (rank == 0)
                std::fprintf(stderr, "pready_cost: unknown option %s\n", a.c_str());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (size != 2 || o.parts < 1 || o.bytes < 1 || o.chunk < 1 || o.warmup < 0 ||
        o.iters <= o.warmup || o.aggr.empty() || o.threads < 1 || o.threads > o.parts ||
        level < 0 || provided < level || (o.threads > 1 && provided < MPI_THREAD_MULTIPLE)) {
        if (rank == 0)
            std::fprintf(stderr, "pready_cost: run with 2 ranks; parts, bytes, chunk >= 1, "
                                 "1 <= threads <= parts, iters > warmup >= 0, one aggregator "
                                 "or more; --level single|funneled|serialized|multiple, "
                                 "multiple (the default) with --threads\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    const size_t total = static_cast<size_t>(o.parts) * static_cast<size_t>(o.bytes);
    // --threads T: T threads (the caller and T - 1 more, partbench's Team) each ready their
    // own block of partitions at once, in every iteration
    std::unique_ptr<pb::Team> team;
    if (o.threads > 1 && rank == 0)
        team = std::make_unique<pb::Team>(o.threads, false, rank, 100.0);
    std::vector<Op> ops(o.aggr.size());
    for (size_t k = 0; k < ops.size(); k++) {
        Op &op = ops[k];
        op.aggr = o.aggr[k];
        op.buf.assign(total, 0);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_aggregator", op.aggr.c_str());
        if (rank == 0)
            MPI_Psend_init(op.buf.data(), o.parts, o.bytes, MPI_BYTE, 1, static_cast<int>(k),
                           MPI_COMM_WORLD, info, &op.req);
        else
            MPI_Precv_init(op.buf.data(), o.parts, o.bytes, MPI_BYTE, 0, static_cast<int>(k),
                           MPI_COMM_WORLD, info, &op.req);
        MPI_Info_free(&info);
    }

    for (int it = 0; it < o.iters; it++) {
        for (size_t k = 0; k < ops.size(); k++) {
            Op &op = ops[k];
            const uint32_t seed = pb::iter_seed(static_cast<uint32_t>(k + 1), it);
            if (rank == 1)
                pb::fill_pattern(op.buf.data(), total, 0, seed + 128);  // poison
            MPI_Start(&op.req);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                pb::fill_pattern(op.buf.data(), total, 0, seed);
                double t_last = 0;
                auto ready = [&](int lo, int end) {     // partitions [lo, end)
                    for (int p = lo; p < end; p += o.chunk) {
                        const int hi = std::min(end, p + o.chunk) - 1;
                        if (!team)
                            t_last = now_ns();
                        if (o.chunk == 1)
                            MPI_Pready(p, op.req);
                        else
                            MPI_Pready_range(p, hi, op.req);
                    }
                };
                const double t0 = now_ns();
                if (team)
                    team->run([&](int tid) {
                        const int per = o.parts / o.threads;
                        ready(tid * per, tid == o.threads - 1 ? o.parts : (tid + 1) * per);
                    });
                else
                    ready(0, o.parts);
                const double t1 = now_ns();
                if (it >= o.warmup) {
                    op.all_ns.push_back(t1 - t0);
                    if (!team)
                        op.last_ns.push_back(t1 - t_last);
                }
                MPI_Wait(&op.req, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&op.req, MPI_STATUS_IGNORE);
                if (pb::check_pattern(op.buf.data(), total, 0, seed) >= 0)
                    fail("partitioned data");
            }
        }
    }
    if (rank == 0) {
        std::printf("pready_cost: %d partitions of %ld B, %d thread(s), %s, %d iterations after "
                    "%d of warm-up; median ns per iteration\n",
                    o.parts, o.bytes, o.threads,
                    o.chunk == 1 ? "one MPI_Pready each"
                                 : ("MPI_Pready_range of " + std::to_string(o.chunk)).c_str(),
                    o.iters - o.warmup, o.warmup);
        for (const Op &op : ops)
            if (op.last_ns.empty())
                std::printf("  %-8s all calls %9.0f\n", op.aggr.c_str(), median(op.all_ns));
            else
                std::printf("  %-8s all calls %9.0f   last call %8.0f\n", op.aggr.c_str(),
                            median(op.all_ns), median(op.last_ns));
    }
    for (Op &op : ops)
        MPI_Request_free(&op.req);
    MPI_Finalize();
    return 0;
}
