// common.hpp: shared pieces of the partitioned-communication benchmark (partbench).
//
//   - error checking and the watchdog that turns a hang into a clear error
//   - the clock (steady_clock: CLOCK_MONOTONIC, shared by processes on one host)
//   - Team: a persistent group of N threads (the caller is thread 0) that runs one job per
//     call, with a short yield-spin before blocking (the machine is oversubscribed)
//   - the data pattern written by the sender and checked byte by byte by the receiver
//   - the compute model (delays per partition: constant compute, noise, gamma delay)
//   - statistics (mean, Student-t 95 % confidence interval, median)
//   - MPI_T helpers (one control variable, counter performance variables)
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pb {

// ---------------------------------------------------------------------------------------
// errors, watchdog

extern int g_rank;

[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void check_mpi(int rc, const char *what, const char *file, int line);
#define PB_MPI(call) ::pb::check_mpi((call), #call, __FILE__, __LINE__)

// What is running now (shown when the watchdog fires).
void set_activity(const std::string &what);
// Start the watchdog: after `seconds` the process prints the current activity and exits
// with status 124 (mpiexec then ends the other rank).
void start_watchdog(double seconds);
// Bound MPI_Finalize: call right before it, once every measurement is done and written. If
// MPI_Finalize has not returned after `seconds`, print a note and exit with `status` (the
// run's result). MPICH 4.0.2's ch4:ucx finalize can hang over TCP: ucp_disconnect_nb waits
// for the peer's progress while the peer already sits in the PMI barrier (both libraries).
void start_finalize_watchdog(double seconds, int status);

// ---------------------------------------------------------------------------------------
// waiting for MPI requests
//
// g_yield_wait false: MPI_Wait / MPI_Waitall / MPI_Win_wait (block in the library).
// g_yield_wait true:  MPI_Testall / MPI_Win_test in a loop with sched_yield() between calls,
// so that a waiting thread gives its core to the threads that still have to call MPI_Pready
// (useful when threads outnumber cores; the same for every variant and library).
// g_yield_after_s > 0 (hybrid): poll without yielding that long first.
extern bool g_yield_wait;
extern double g_yield_after_s;
void wait_all(int n, MPI_Request *reqs);
inline void wait_one(MPI_Request *req) { wait_all(1, req); }
void win_wait(MPI_Win win);
void recv_msg(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm);

// ---------------------------------------------------------------------------------------
// clock

using Clock = std::chrono::steady_clock;
inline double now_s()
{
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------------------
// Team

class Team {
  public:
    explicit Team(int nthreads, bool bind, int rank, double spin_us);
    ~Team();
    Team(const Team &) = delete;
    Team &operator=(const Team &) = delete;

    int size() const { return n_; }
    // Runs job(tid) on every thread (tid 0 is the caller) and returns when all are done.
    // The hand-off and the join are the two thread barriers of the pipelined pattern.
    void run(const std::function<void(int)> &job);
    // CPU list each thread may run on (for the record of the thread binding).
    std::vector<std::string> affinity() const;

  private:
    void worker(int tid);
    void wait_gen(uint64_t seen);
    int n_;
    double spin_s_;
    std::vector<std::thread> threads_;
    std::mutex m_;
    std::condition_variable cv_start_, cv_done_;
    std::atomic<uint64_t> gen_{0};
    std::atomic<int> remaining_{0};
    const std::function<void(int)> *job_ = nullptr;
    bool quit_ = false;
    std::vector<std::string> affinity_;
    mutable std::mutex aff_m_;
};

void bind_self(int cpu);
std::string self_affinity();

// ---------------------------------------------------------------------------------------
// data pattern: byte at global offset o of iteration seed s

inline uint8_t pattern_byte(uint64_t o, uint32_t s)
{
    return (uint8_t)(o + (o >> 8) * 3u + (o >> 16) * 5u + (o >> 24) * 7u + s);
}
void fill_pattern(uint8_t *dst, size_t n, uint64_t offset, uint32_t seed);
// Returns -1 when dst[0..n) holds the pattern, else the first wrong index.
long long check_pattern(const uint8_t *p, size_t n, uint64_t offset, uint32_t seed);
uint32_t iter_seed(uint32_t salt, int iter);

// ---------------------------------------------------------------------------------------
// compute model

// Busy "compute" for `us` microseconds. Long waits sleep first (the machine has fewer cores
// than threads) and spin the last 200 us; spin_only spins all the way.
void compute_for(double us, bool spin_only);

struct DelayModel {
    double compute_us = 0;      // compute per thread and iteration (split over its partitions)
    std::string noise = "none"; // none | single | uniform | gaussian
    double noise_pct = 0;       // noise amplitude in % of compute_us
    double gamma = 0;           // us per MB (1e6 B) of the bytes one thread owns: delay of
                                // the last partition of the last thread (early-bird model)
    bool burst = false;         // a thread's compute (and noise) before its first partition,
                                // the others readied back to back (seed 000)
};
// Delay in us of every partition (thread t owns partitions [t*theta, (t+1)*theta)).
std::vector<double> make_delays(const DelayModel &m, int threads, int theta, size_t part_bytes,
                                int iter);

// ---------------------------------------------------------------------------------------
// statistics

struct Stats {
    int n = 0;
    double mean = 0, ci95 = 0, median = 0, min = 0, stddev = 0;
};
Stats stats_of(std::vector<double> v);
double t_quantile_975(int df);

// ---------------------------------------------------------------------------------------
// MPI_T

struct MpiT {
    bool ok = false;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    void init();
    void fini();
    // Control variable of type int: returns false when the library has no such variable.
    bool cvar_write_int(const char *name, int value);
    bool cvar_read_int(const char *name, int *value);
    // Counter pvar (unsigned long long): false when missing.
    bool pvar_read_ull(const char *name, unsigned long long *value);
};
// Read or write one int CVAR by name (write when `write`, else read into *value), with
// MPI_T initialized: false when the library has no such variable or the access fails.
bool cvar_access_int(const char *name, int *value, bool write);

// ---------------------------------------------------------------------------------------
// misc

size_t parse_size(const std::string &s);     // 8, 1K, 64K, 4M, 1G
std::string size_str(size_t bytes);          // 8B, 1KiB, 4MiB
std::vector<std::string> split(const std::string &s, char sep);

} // namespace pb
