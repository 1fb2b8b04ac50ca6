// partbench.hpp: options, the per-run context and the variant interface of partbench.
#pragma once

#include "common.hpp"

#include <memory>
#include <string>
#include <vector>

namespace pb {

struct Options {
    std::string lib = "unknown";    // label in the CSV (ours / stock)
    std::string config = "";        // configuration name in the CSV
    std::string pattern = "pipelined"; // pipelined | earlybird | overhead | aggr | halo
    std::vector<std::string> variants;
    int threads = 1, theta = 1;
    std::vector<size_t> sizes;
    std::vector<int> grids;         // halo: local grid edge
    int iters = 30, warmup = 2, attempts = 3;
    double ci_target = 0.05;
    DelayModel delay;
    std::vector<double> noise_pcts; // overhead pattern: one run per value
    std::vector<double> gammas;     // earlybird pattern: one run per value
    std::vector<std::string> aggr;  // values for MPIR_CVAR_PART_AGGR_SIZE ("-" = leave)
    std::string csv, meta;
    int round = 1;                  // repetition number of the whole sweep (run.sh --rounds)
    double timeout = 300;
    double finalize_grace = 5;      // s: MPI_Finalize may take this long (then: note, exit)
    bool bind = false, spin_only = false, corrupt = false, parrived = false;
    double spin_us = 20;
    std::string wait = "block";     // block | yield | hybrid | auto
    bool full = false, smoke = false;
    bool dump = false;              // print every iteration's time
    bool thread_hint = false;       // part: info mpich_part_thread_partitions = theta
    int polls = 1000;               // parrived: MPI_Parrived calls per timed batch
    double parrived_sleep_us = 50;  // parrived: the sender sleeps between tests of "go" (0 =
                                    // it blocks in MPI_Wait, busy-polling like the poller)
};

// Context of one (size, variant) run on one rank. Rank 0 sends, rank 1 receives.
struct PipeCtx {
    MPI_Comm comm = MPI_COMM_NULL;  // data communicator
    int rank = 0, peer = 1;
    bool sender = true;
    int threads = 1, theta = 1, nparts = 1;
    size_t part_bytes = 0, bytes = 0;
    uint8_t *sbuf = nullptr, *rbuf = nullptr;
    Team *team = nullptr;
    bool spin_only = false;
    bool thread_hint = false;       // part: pass mpich_part_thread_partitions = theta
    // per iteration (sender)
    int iter = 0;
    uint32_t seed = 0;
    std::vector<double> delays;          // us per partition
    std::vector<double> thread_compute;  // s per thread
    std::vector<double> thread_ready;    // time each thread finished its last partition
    bool corrupt_now = false;            // self-test: spoil one byte this iteration
    double deadline_s = 60;              // for polling loops

    // Sender thread tid: fill partition k of its own and run its compute delay.
    void produce(int tid, int k);
    int first_part(int tid) const { return tid * theta; }
};

class Variant {
  public:
    virtual ~Variant() = default;
    virtual void setup(PipeCtx &c) = 0;
    // receiver: post / arm the iteration (before the iteration's barrier)
    virtual void recv_arm(PipeCtx &c) = 0;
    // receiver: wait until every byte has arrived
    virtual void recv_complete(PipeCtx &c) = 0;
    // sender: one iteration from the start operation to local completion
    virtual void send_iter(PipeCtx &c) = 0;
    virtual void teardown(PipeCtx &c) = 0;
};

std::unique_ptr<Variant> make_variant(const std::string &name);
const std::vector<std::string> &all_variants();

// halo.cpp
int run_halo(const Options &o, MPI_Comm world, struct Recorder &rec, MpiT &mpit, Team &team);
// parrived.cpp
int run_parrived(const Options &o, MPI_Comm world, struct Recorder &rec, MpiT &mpit);

// Row writer (rank 0).
struct Row {
    std::string pattern, variant;
    int threads = 0, theta = 0, nparts = 0;
    size_t bytes = 0, part_bytes = 0;
    std::string aggr = "n/a";
    double gamma = 0, compute_us = 0;
    std::string noise = "none";
    double noise_pct = 0;
    int iters = 0, attempts = 0, converged = 0;
    Stats t;                 // communication time, compute removed (us)
    double pb_mean_us = 0;   // last partition ready -> receiver complete (us)
    double pb_median_us = 0; // the same, median over the iterations (a stall moves the
                             // mean, not this)
    double raw_mean_us = 0;  // start -> receiver complete (us)
    double compute_mean_us = 0;
    std::string wire_sent = "n/a", wire_recvd = "n/a", parts_per_msg = "n/a";
    int verified = 0;
    long long polls = -1, polls_true = -1; // parrived: timed calls, calls that returned true
};

struct Recorder {
    Options opt;
    int oversub = 0;
    void write(const Row &r);
};

} // namespace pb
