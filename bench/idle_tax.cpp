// idle_tax.cpp: what a live but idle partitioned operation costs the rest of an MPI program.
//
// Every MPI call that makes progress runs the partitioned engine's progress hook. While a
// persistent partitioned operation exists but no iteration of it runs (between iterations,
// or set up for later), that hook should cost next to nothing. This measures it: an
// unrelated 8-byte ping-pong (MPI_Send / MPI_Recv between ranks 0 and 1) timed with one
// partitioned operation alive and idle ("live": rank 0 sends, rank 1 receives, three
// iterations run and verified before) against the same ping-pong with none ("freed").
// Idle means no iteration for a while: the engine keeps reading the RDMA queues on every
// progress call for 1 ms after an iteration ends, so each measurement begins 5 ms after
// the last iteration (and after the free). Each round times both, in alternating order
// (even rounds live first), and prints the
// ratio live / freed; the summary is the median ratio over the rounds. Every ping-pong
// message and every byte of the partitioned iterations is checked (exit status 2 on a
// mismatch). The transport is whatever the environment selects
// (MPIR_CVAR_PART_TRANSPORT=ofi|verbs, ...).
//
//   idle_tax [--rounds R] [--pingpongs N] [--parts P] [--bytes B]
// Build: mpicxx -std=c++17 -pthread bench/idle_tax.cpp bench/common.cpp (the data pattern of
// partbench, common.hpp).
#include "common.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    int rounds = 10, pingpongs = 20000, parts = 4;
    long bytes = 4096; // per partition
};

int rank = 0;

[[noreturn]] void fail(const char *what)
{
    std::fprintf(stderr, "idle_tax: rank %d: VERIFICATION FAILED: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::exit(2);
}

// One 8-byte round trip per step, 5 ms after the caller's last partitioned call; returns
// us per one-way message.
double pingpong(int n, uint64_t salt)
{
    uint64_t v = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        const uint64_t want = salt + static_cast<uint64_t>(i);
        if (rank == 0) {
            v = want;
            MPI_Send(&v, 1, MPI_UINT64_T, 1, 5, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_UINT64_T, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v != want + 1)
                fail("ping-pong reply");
        } else {
            MPI_Recv(&v, 1, MPI_UINT64_T, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v != want)
                fail("ping-pong message");
            v++;
            MPI_Send(&v, 1, MPI_UINT64_T, 0, 5, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

// A partitioned operation with three verified iterations behind it, left idle.
MPI_Request make_idle_op(const Options &o, int round, std::vector<uint8_t> &buf)
{
    MPI_Request req;
    const long total = o.bytes * o.parts;
    if (rank == 0)
        MPI_Psend_init(buf.data(), o.parts, o.bytes, MPI_BYTE, 1, 9, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf.data(), o.parts, o.bytes, MPI_BYTE, 0, 9, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req);
    for (int it = 0; it < 3; it++) {
        const uint32_t seed = pb::iter_seed(static_cast<uint32_t>(round), it);
        if (rank == 0)
            pb::fill_pattern(buf.data(), total, 0, seed);
        else
            std::fill(buf.begin(), buf.end(), 0);
        MPI_Start(&req);
        if (rank == 0)
            for (int p = 0; p < o.parts; p++)
                MPI_Pready(p, req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1 && pb::check_pattern(buf.data(), total, 0, seed) >= 0)
            fail("partitioned data");
    }
    return req;
}

} // namespace

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const long v = std::atol(argv[i + 1]);
        if (a == "--rounds")
            o.rounds = static_cast<int>(v);
        else if (a == "--pingpongs")
            o.pingpongs = static_cast<int>(v);
        else if (a == "--parts")
            o.parts = static_cast<int>(v);
        else if (a == "--bytes")
            o.bytes = v;
        else {
            if (rank == 0)
                std::fprintf(stderr, "idle_tax: unknown option %s\n", a.c_str());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (size != 2 || o.rounds < 1 || o.pingpongs < 1 || o.parts < 1 || o.bytes < 1) {
        if (rank == 0)
            std::fprintf(stderr, "idle_tax: run with 2 ranks and positive options\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    std::vector<uint8_t> buf(static_cast<size_t>(o.bytes * o.parts));
    pingpong(o.pingpongs, 1u << 30); // warm-up, untimed
    std::vector<double> ratios;
    for (int r = 0; r < o.rounds; r++) {
        const uint64_t salt = static_cast<uint64_t>(r) << 32;
        double live, freed;
        MPI_Request req;
        if (r % 2 == 0) {
            req = make_idle_op(o, r, buf);
            live = pingpong(o.pingpongs, salt);
            MPI_Request_free(&req);
            freed = pingpong(o.pingpongs, salt + (1u << 31));
        } else {
            freed = pingpong(o.pingpongs, salt + (1u << 31));
            req = make_idle_op(o, r, buf);
            live = pingpong(o.pingpongs, salt);
            MPI_Request_free(&req);
        }
        ratios.push_back(live / freed);
        if (rank == 0)
            std::printf("round %2d: live %.3f us, freed %.3f us, live/freed %.3f\n", r, live,
                        freed, live / freed);
    }
    if (rank == 0) {
        std::vector<double> s = ratios;
        std::sort(s.begin(), s.end());
        const size_t n = s.size();
        const double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        std::printf("median live/freed over %zu rounds: %.3f (min %.3f, max %.3f)\n", n, med,
                    s.front(), s.back());
    }
    MPI_Finalize();
    return 0;
}
