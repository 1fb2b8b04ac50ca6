// parrived.cpp: the cost of one MPI_Parrived call, on a partition that has not arrived
// (the call returns false) and on one that has (it returns true).
//
// Rank 0 receives and polls (it writes the CSV rows), rank 1 sends; one thread per rank.
// One persistent partitioned operation (nparts = theta partitions) is set up once. Per
// iteration:
//
//   receiver                                    sender
//   poison the buffer, MPI_Start                MPI_Start, fill the buffer (no MPI_Pready)
//   ---------------------------- barrier (control communicator) --------------------------
//   timed: K x MPI_Parrived(p = j mod nparts)   waits for "go" (MPI_Test, sleep 50 us)
//     ("false" batch: nothing is readied yet,
//      so every flag must be 0)
//   send "go"                                   MPI_Pready every partition, MPI_Wait
//   untimed: poll every partition until true
//   timed: K x MPI_Parrived(p = j mod nparts)
//     ("true" batch: every flag must be 1)
//   MPI_Wait, verify every byte
//
// The sender readies nothing before it has received "go", and the receiver sends "go" only
// after its false batch, so a correct library cannot return true in that batch: the flags
// are counted (columns polls, polls_true) and a true flag in the false batch, or a false one
// in the true batch (MPI_Parrived is monotonic within an iteration), fails the run like a
// data verification failure (exit status 2). Metric: batch time / K, in us per call (the
// CSV keeps microseconds; the summary prints ns); one sample per iteration and batch; the
// attempts are repeated until both CIs meet the target, as in the pipelined pattern.
#include "partbench.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace pb {

namespace {

const int TAG_PDATA = 401;
const int TAG_GO = 402;

} // namespace

int run_parrived(const Options &o, MPI_Comm world, Recorder &rec, MpiT &mpit)
{
    int rank;
    MPI_Comm_rank(world, &rank);
    const bool receiver = rank == 0;
    const int peer = 1 - rank;
    const int nparts = o.theta; // one thread per rank
    const int K = o.polls;
    MPI_Comm comm, ctrl;
    PB_MPI(MPI_Comm_dup(world, &comm));
    PB_MPI(MPI_Comm_dup(world, &ctrl));
    std::string aggr_label = "n/a";
    int av = 0;
    if (mpit.cvar_read_int("MPIR_CVAR_PART_AGGR_SIZE", &av))
        aggr_label = std::to_string(av);

    int failures = 0;
    uint32_t salt = 7000;
    for (size_t req_bytes : o.sizes) {
        const size_t part_bytes = std::max<size_t>(1, req_bytes / nparts);
        const size_t bytes = part_bytes * nparts;
        void *mem = nullptr;
        if (posix_memalign(&mem, 4096, std::max<size_t>(bytes, 64)) != 0)
            fatal("out of memory (%zu bytes)", bytes);
        uint8_t *buf = (uint8_t *)mem;
        std::memset(buf, 0, std::max<size_t>(bytes, 64));
        char act[160];
        std::snprintf(act, sizeof act, "%s %s parrived, %d partition(s), %s", o.lib.c_str(),
                      o.config.c_str(), nparts, size_str(bytes).c_str());
        set_activity(act);

        MPI_Request req = MPI_REQUEST_NULL;
        if (receiver)
            PB_MPI(MPI_Precv_init(buf, nparts, (MPI_Count)part_bytes, MPI_BYTE, peer, TAG_PDATA,
                                  comm, MPI_INFO_NULL, &req));
        else
            PB_MPI(MPI_Psend_init(buf, nparts, (MPI_Count)part_bytes, MPI_BYTE, peer, TAG_PDATA,
                                  comm, MPI_INFO_NULL, &req));
        salt++;
        int it = 0;
        // flag checks of the current attempt (receiver): timed calls and true flags
        long long f_calls = 0, f_true = 0, t_calls = 0, t_false = 0;
        long long bad_flags = 0, bad_data = 0;
        std::vector<double> f_us, t_us;
        bool corrupted = false;

        auto one_iter = [&](bool timed) {
            const uint32_t seed = iter_seed(salt, it);
            if (receiver) {
                fill_pattern(buf, bytes, 0, seed + 128); // differs in every byte
                PB_MPI(MPI_Start(&req));
            } else {
                PB_MPI(MPI_Start(&req));
                fill_pattern(buf, bytes, 0, seed);
                if (o.corrupt && timed && !corrupted) { // self-test: spoil one byte once
                    corrupted = true;
                    buf[bytes / 2] ^= 0x5a;
                }
            }
            PB_MPI(MPI_Barrier(ctrl));
            if (receiver) {
                int flag = 0;
                long long ntrue = 0;
                const double t0 = now_s();
                for (int j = 0; j < K; j++) {
                    PB_MPI(MPI_Parrived(req, j % nparts, &flag));
                    ntrue += flag;
                }
                const double t1 = now_s();
                PB_MPI(MPI_Send(nullptr, 0, MPI_BYTE, peer, TAG_GO, ctrl));
                const double deadline = now_s() + std::max(10.0, o.timeout / 2);
                for (int p = 0; p < nparts; p++) {
                    flag = 0;
                    while (!flag) {
                        PB_MPI(MPI_Parrived(req, p, &flag));
                        if (!flag && now_s() > deadline)
                            fatal("parrived: partition %d never arrived", p);
                    }
                }
                long long nfalse = 0;
                const double t2 = now_s();
                for (int j = 0; j < K; j++) {
                    PB_MPI(MPI_Parrived(req, j % nparts, &flag));
                    nfalse += !flag;
                }
                const double t3 = now_s();
                wait_one(&req);
                if (ntrue || nfalse) {
                    bad_flags++;
                    std::fprintf(stderr,
                                 "partbench: VERIFICATION FAILED: lib %s, %s, MPI_Parrived, %d "
                                 "partition(s), iteration %d: %lld of %d calls returned true "
                                 "before the sender readied anything, %lld of %d returned false "
                                 "after every partition had arrived\n",
                                 o.lib.c_str(), o.config.c_str(), nparts, it, ntrue, K, nfalse,
                                 K);
                    std::fflush(stderr);
                }
                long long bad = check_pattern(buf, bytes, 0, seed);
                if (bad >= 0) {
                    bad_data++;
                    std::fprintf(stderr,
                                 "partbench: VERIFICATION FAILED: lib %s, %s, parrived, %zu "
                                 "bytes, iteration %d: byte %lld is 0x%02x, expected 0x%02x\n",
                                 o.lib.c_str(), o.config.c_str(), bytes, it, bad, buf[bad],
                                 pattern_byte((uint64_t)bad, seed));
                    std::fflush(stderr);
                }
                if (timed) {
                    f_us.push_back((t1 - t0) * 1e6 / K);
                    t_us.push_back((t3 - t2) * 1e6 / K);
                    f_calls += K;
                    f_true += ntrue;
                    t_calls += K;
                    t_false += nfalse;
                }
            } else {
                if (o.parrived_sleep_us > 0) {
                    // wait for "go" without keeping a core busy: MPI_Test, then sleep
                    MPI_Request go;
                    int done = 0;
                    PB_MPI(MPI_Irecv(nullptr, 0, MPI_BYTE, peer, TAG_GO, ctrl, &go));
                    for (;;) {
                        PB_MPI(MPI_Test(&go, &done, MPI_STATUS_IGNORE));
                        if (done)
                            break;
                        std::this_thread::sleep_for(
                            std::chrono::duration<double>(o.parrived_sleep_us * 1e-6));
                    }
                } else
                    recv_msg(nullptr, 0, MPI_BYTE, peer, TAG_GO, ctrl);
                for (int p = 0; p < nparts; p++)
                    PB_MPI(MPI_Pready(p, req));
                wait_one(&req);
            }
            it++;
        };

        static bool first_run = true;
        const int nwarm = first_run ? std::max(o.warmup, 10) : o.warmup;
        first_run = false;
        for (int w = 0; w < nwarm; w++)
            one_iter(false);

        struct Best {
            Row row;
            double rel = INFINITY;
            bool conv = false;
        } best[2];
        int attempts = 0;
        for (;;) {
            attempts++;
            f_us.clear();
            t_us.clear();
            f_calls = f_true = t_calls = t_false = 0;
            for (int i = 0; i < o.iters; i++)
                one_iter(true);
            int again = 0;
            if (receiver) {
                bool all_conv = true;
                for (int b = 0; b < 2; b++) {
                    Row r;
                    r.t = stats_of(b == 0 ? f_us : t_us);
                    r.raw_mean_us = r.t.mean;
                    r.polls = b == 0 ? f_calls : t_calls;
                    r.polls_true = b == 0 ? f_true : t_calls - t_false;
                    const double rel = r.t.mean > 0 ? r.t.ci95 / r.t.mean : INFINITY;
                    r.converged = rel < o.ci_target;
                    if (o.dump) {
                        std::printf("    attempt %d (parrived-%s, %d partition(s)) [us/call]:",
                                    attempts, b == 0 ? "false" : "true", nparts);
                        for (double x : (b == 0 ? f_us : t_us))
                            std::printf(" %.4f", x);
                        std::printf("\n");
                    }
                    if (!best[b].conv && (rel < best[b].rel || r.converged)) {
                        best[b].rel = rel;
                        best[b].row = r;
                        best[b].row.attempts = attempts;
                    }
                    best[b].conv = best[b].conv || r.converged;
                    all_conv = all_conv && best[b].conv;
                }
                again = !all_conv && attempts < o.attempts && !bad_flags && !bad_data;
            }
            PB_MPI(MPI_Bcast(&again, 1, MPI_INT, 0, ctrl));
            if (!again)
                break;
        }
        set_activity(std::string(act) + ": MPI_Request_free");
        PB_MPI(MPI_Request_free(&req));
        std::free(buf);
        if (receiver) {
            for (int b = 0; b < 2; b++) {
                Row &r = best[b].row;
                r.pattern = "parrived";
                r.variant = b == 0 ? "parrived-false" : "parrived-true";
                r.threads = 1;
                r.theta = o.theta;
                r.nparts = nparts;
                r.bytes = bytes;
                r.part_bytes = part_bytes;
                r.aggr = aggr_label;
                r.iters = o.iters;
                r.attempts = attempts;
                r.verified = !bad_flags && !bad_data;
                r.wire_sent = "n/a";
                rec.write(r);
            }
        }
        int f = receiver ? (bad_flags || bad_data) : 0;
        PB_MPI(MPI_Bcast(&f, 1, MPI_INT, 0, ctrl));
        if (f) {
            failures++;
            break;
        }
    }
    PB_MPI(MPI_Comm_free(&comm));
    PB_MPI(MPI_Comm_free(&ctrl));
    return failures ? 2 : 0;
}

} // namespace pb
