// part_demo.cpp: partitioned communication (MPI 4.0) against a single send, with threads.
//
// Two ranks: rank 0 sends, rank 1 receives. For each total size, T threads own P partitions
// each (T*P partitions per side). Two ways of moving the same bytes are timed:
//
//   partitioned  MPI_Psend_init / MPI_Precv_init once per size; per iteration MPI_Start, every
//                sender thread fills its partitions and calls MPI_Pready for each as soon as it
//                is filled; receiver threads poll MPI_Parrived for their partitions; then
//                MPI_Wait on both sides.
//   single       sender threads fill the buffer, all join, then one MPI_Send of the whole
//                buffer into one receive (posted before the iteration: MPI_Irecv + MPI_Wait).
//
// A size is rounded up to a multiple of both partition counts when needed (shown in the table).
//
// Every received byte is verified (the pattern depends on the iteration and the byte index);
// the exit code is 0 only when all data verified. With the MPI_T performance variables
// part_wire_msgs_sent (rank 0) and part_wire_msgs_recvd (rank 1) the demo also prints how
// many wire messages one partitioned iteration took.
//
// Uses the MPI C API only. Options:
//   --iters N              timed iterations per size and mode (default 40)
//   --warmup N             untimed iterations before them (default 5)
//   --sizes a,b,c          total sizes in bytes, K/M/G suffixes allowed (default 4K,64K,1M,8M)
//   --threads N            threads per rank (default 4)
//   --parts-per-thread N   partitions per thread on both sides (default 8)
//   --recv-parts-per-thread N   receiver partitions per thread, when it should differ
//   --no-parrived          receiver threads do not poll MPI_Parrived; only MPI_Wait
//   --modes LIST           partitioned,single (default both); e.g. --modes single
//   --inject-error         self-test: the sender corrupts one byte per mode and size, so the
//                          run must report a mismatch and exit non-zero
//   --timeout S            abort when one wait takes longer than S seconds (default 60)
//
// Waits are plain MPI_Wait calls; a sleeping watchdog thread turns a hang into a clear error.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------
// Error handling

// MPI_Abort ends every rank at once, and the launcher may drop what a rank wrote just
// before (its output pipe is not always drained first): give it a moment to forward the
// reason, then abort.
[[noreturn]] void abort_job(int code)
{
    std::fflush(stdout);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

#define CHECK_MPI(call)                                                                        \
    do {                                                                                       \
        int check_rc_ = (call);                                                                \
        if (check_rc_ != MPI_SUCCESS) {                                                        \
            char check_msg_[MPI_MAX_ERROR_STRING];                                             \
            int check_len_ = 0;                                                                \
            MPI_Error_string(check_rc_, check_msg_, &check_len_);                              \
            std::fprintf(stderr, "part_demo: %s failed at %s:%d: %s\n", #call, __FILE__,       \
                         __LINE__, check_msg_);                                                \
            abort_job(3);                                                                      \
        }                                                                                      \
    } while (0)

int g_rank = -1;

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "part_demo (rank %d): %s\n", g_rank, msg.c_str());
    abort_job(2);
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------------------------------
// Options

struct Options {
    int iters = 40;
    int warmup = 5;
    std::vector<long long> sizes{4LL << 10, 64LL << 10, 1LL << 20, 8LL << 20};
    int threads = 4;
    int parts_per_thread = 8;
    int recv_parts_per_thread = 0;      // 0: same as parts_per_thread
    bool parrived = true;
    bool run_part = true, run_single = true;
    bool inject_error = false;
    double timeout = 60.0;
};

long long parse_size(const std::string &s)
{
    if (s.empty())
        throw std::invalid_argument("empty size");
    size_t pos = 0;
    long long v = 0;
    try {
        v = std::stoll(s, &pos);
    } catch (const std::exception &) {
        throw std::invalid_argument("bad size '" + s + "'");
    }
    if (pos < s.size()) {
        const std::string suffix = s.substr(pos);
        if (suffix == "K" || suffix == "k" || suffix == "KiB")
            v <<= 10;
        else if (suffix == "M" || suffix == "m" || suffix == "MiB")
            v <<= 20;
        else if (suffix == "G" || suffix == "g" || suffix == "GiB")
            v <<= 30;
        else
            throw std::invalid_argument("bad size suffix in '" + s + "'");
    }
    if (v < 1)
        throw std::invalid_argument("size must be positive: '" + s + "'");
    return v;
}

int parse_int(const std::string &s, int lo, const char *what)
{
    size_t pos = 0;
    long v = 0;
    try {
        v = std::stol(s, &pos);
    } catch (const std::exception &) {
        throw std::invalid_argument(std::string("bad value for ") + what + ": '" + s + "'");
    }
    if (pos != s.size() || v < lo || v > (1L << 30))
        throw std::invalid_argument(std::string("bad value for ") + what + ": '" + s + "'");
    return static_cast<int>(v);
}

void usage(const char *prog)
{
    std::fprintf(stderr,
                 "usage: mpiexec -n 2 %s [--iters N] [--warmup N] [--sizes a,b,c] [--threads N]\n"
                 "       [--parts-per-thread N] [--recv-parts-per-thread N] [--no-parrived]\n"
                 "       [--modes partitioned,single] [--timeout SECONDS]\n"
                 "       [--inject-error]\n",
                 prog);
}

bool parse_options(int argc, char **argv, Options &o, std::string &err)
{
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc)
                    throw std::invalid_argument("missing value after " + a);
                return argv[++i];
            };
            if (a == "--iters")
                o.iters = parse_int(value(), 1, "--iters");
            else if (a == "--warmup")
                o.warmup = parse_int(value(), 0, "--warmup");
            else if (a == "--threads")
                o.threads = parse_int(value(), 1, "--threads");
            else if (a == "--parts-per-thread")
                o.parts_per_thread = parse_int(value(), 1, "--parts-per-thread");
            else if (a == "--recv-parts-per-thread")
                o.recv_parts_per_thread = parse_int(value(), 1, "--recv-parts-per-thread");
            else if (a == "--no-parrived")
                o.parrived = false;
            else if (a == "--inject-error")
                o.inject_error = true;
            else if (a == "--modes") {
                const std::string m = value();
                o.run_part = m.find("part") != std::string::npos;
                o.run_single = m.find("single") != std::string::npos;
                if (!o.run_part && !o.run_single)
                    throw std::invalid_argument("--modes: name partitioned and/or single");
            }
            else if (a == "--timeout")
                o.timeout = parse_int(value(), 1, "--timeout");
            else if (a == "--sizes") {
                o.sizes.clear();
                std::string list = value();
                size_t start = 0;
                while (start <= list.size()) {
                    const size_t comma = list.find(',', start);
                    const std::string item =
                        list.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
                    o.sizes.push_back(parse_size(item));
                    if (comma == std::string::npos)
                        break;
                    start = comma + 1;
                }
            } else if (a == "--help" || a == "-h") {
                err = "";
                return false;
            } else {
                throw std::invalid_argument("unknown option '" + a + "'");
            }
        }
    } catch (const std::exception &e) {
        err = e.what();
        return false;
    }
    if (o.recv_parts_per_thread == 0)
        o.recv_parts_per_thread = o.parts_per_thread;
    const long long parts = 1LL * o.threads * std::max(o.parts_per_thread, o.recv_parts_per_thread);
    if (parts > (1LL << 30)) {
        err = "too many partitions";
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// The data pattern: depends on the iteration and on the byte index. Byte i is byte i % 8 of
// a 64-bit hash of (i / 8, iteration), so that filling and checking run at memory speed.

inline uint64_t pattern_word(uint64_t word_idx, uint32_t iter)
{
    uint64_t x = word_idx * 0x9E3779B97F4A7C15ull + (iter + 1ull) * 0xD1B54A32D192ED03ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return x;
}

inline uint8_t pattern(uint64_t idx, uint32_t iter)
{
    return static_cast<uint8_t>(pattern_word(idx >> 3, iter) >> (8 * (idx & 7)));
}

inline void store_word(uint8_t *p, uint64_t w)
{
    for (int b = 0; b < 8; ++b)
        p[b] = static_cast<uint8_t>(w >> (8 * b));
}

// Write bytes first .. first+n-1 of the pattern (xored with mask) to buf[0 .. n-1].
void fill_masked(uint8_t *buf, uint64_t first, uint64_t n, uint32_t iter, uint64_t mask)
{
    uint64_t i = 0;
    for (; i < n && ((first + i) & 7) != 0; ++i)
        buf[i] = static_cast<uint8_t>(pattern(first + i, iter) ^ mask);
    for (; i + 8 <= n; i += 8)
        store_word(buf + i, pattern_word((first + i) >> 3, iter) ^ mask);
    for (; i < n; ++i)
        buf[i] = static_cast<uint8_t>(pattern(first + i, iter) ^ mask);
}

void fill(uint8_t *buf, uint64_t first, uint64_t n, uint32_t iter)
{
    fill_masked(buf, first, n, iter, 0);
}

// Overwrite with the complement of what should arrive, so that a byte not written by the
// transfer can never pass verification.
void poison(uint8_t *buf, uint64_t n, uint32_t iter)
{
    fill_masked(buf, 0, n, iter, ~0ull);
}

// Returns the number of wrong bytes and reports the first one.
uint64_t verify(const uint8_t *buf, uint64_t n, uint32_t iter, uint64_t part_bytes,
                const char *mode, long long size, int it)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i += 8) {
        uint8_t want[8];
        store_word(want, pattern_word(i >> 3, iter));
        const uint64_t m = std::min<uint64_t>(8, n - i);
        if (__builtin_expect(std::memcmp(buf + i, want, m) == 0, 1))
            continue;
        for (uint64_t b = 0; b < m; ++b) {
            if (buf[i + b] == want[b])
                continue;
            if (bad == 0)
                std::fprintf(stderr,
                             "part_demo: DATA MISMATCH (%s, size %lld, iteration %d): byte %llu "
                             "(receive partition %llu) is 0x%02x, expected 0x%02x\n",
                             mode, size, it, static_cast<unsigned long long>(i + b),
                             static_cast<unsigned long long>((i + b) / part_bytes), buf[i + b],
                             want[b]);
            ++bad;
        }
    }
    if (bad)
        std::fprintf(stderr, "part_demo: %s, size %lld, iteration %d: %llu of %llu bytes wrong\n",
                     mode, size, it, static_cast<unsigned long long>(bad),
                     static_cast<unsigned long long>(n));
    return bad;
}

// ---------------------------------------------------------------------------------------
// A team of persistent worker threads: dispatch(job) runs job(tid) once on every thread,
// wait() returns when all have finished. Threads are created once, so neither mode pays for
// thread creation inside the timed region.

class Team {
  public:
    explicit Team(int n)
    {
        for (int t = 0; t < n; ++t)
            threads_.emplace_back([this, t] { loop(t); });
    }
    ~Team()
    {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_work_.notify_all();
        for (auto &th : threads_)
            th.join();
    }
    Team(const Team &) = delete;
    Team &operator=(const Team &) = delete;

    void dispatch(std::function<void(int)> job)
    {
        {
            std::lock_guard<std::mutex> lk(mu_);
            job_ = std::move(job);
            remaining_ = static_cast<int>(threads_.size());
            ++generation_;
        }
        cv_work_.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lk(mu_);
        cv_done_.wait(lk, [this] { return remaining_ == 0; });
    }

  private:
    void loop(int tid)
    {
        uint64_t seen = 0;
        for (;;) {
            std::function<void(int)> job;
            {
                std::unique_lock<std::mutex> lk(mu_);
                cv_work_.wait(lk, [&] { return stop_ || generation_ != seen; });
                if (stop_)
                    return;
                seen = generation_;
                job = job_;
            }
            job(tid);
            {
                std::lock_guard<std::mutex> lk(mu_);
                if (--remaining_ == 0)
                    cv_done_.notify_all();
            }
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_work_, cv_done_;
    std::function<void(int)> job_;
    uint64_t generation_ = 0;
    int remaining_ = 0;
    bool stop_ = false;
};

// A watchdog thread: while armed, it aborts the job with a clear message when the deadline
// passes, so that a hang in the library is reported instead of running into an outer
// timeout. It sleeps otherwise and costs nothing in the timed regions.
class Watchdog {
  public:
    explicit Watchdog(double timeout) : timeout_(timeout), thread_([this] { loop(); }) {}
    ~Watchdog()
    {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog &) = delete;
    Watchdog &operator=(const Watchdog &) = delete;

    void arm(std::string what)
    {
        {
            std::lock_guard<std::mutex> lk(mu_);
            what_ = std::move(what);
            deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_));
            armed_ = true;
        }
        cv_.notify_all();
    }
    void disarm()
    {
        std::lock_guard<std::mutex> lk(mu_);
        armed_ = false;
    }

  private:
    void loop()
    {
        std::unique_lock<std::mutex> lk(mu_);
        while (!stop_) {
            if (!armed_) {
                cv_.wait(lk);
                continue;
            }
            if (Clock::now() >= deadline_) {
                std::fprintf(stderr, "part_demo (rank %d): TIMEOUT after %.0f s waiting for %s\n",
                             g_rank, timeout_, what_.c_str());
                abort_job(2);
            }
            cv_.wait_until(lk, deadline_);
        }
    }

    const double timeout_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::string what_;
    Clock::time_point deadline_{};
    bool armed_ = false, stop_ = false;
    std::thread thread_;        // last: starts after the members above are ready
};

Watchdog *g_watchdog = nullptr;

// MPI_Wait under the watchdog. Used identically in both modes.
void wait_request(MPI_Request *req, MPI_Status *status, const std::string &what)
{
    g_watchdog->arm(what);
    CHECK_MPI(MPI_Wait(req, status));
    g_watchdog->disarm();
}

// ---------------------------------------------------------------------------------------
// MPI_T performance variable (a counter of unsigned long long), "n/a" when absent.

class PvarCounter {
  public:
    // name == nullptr: MPI_T is not available
    explicit PvarCounter(const char *name)
    {
        if (name == nullptr)
            return;
        int idx = -1;
        if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS)
            return;
        char vname[256], desc[1024];
        int vlen = sizeof(vname), dlen = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(idx, vname, &vlen, &verbosity, &var_class, &dt, &en, desc, &dlen,
                                &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            return;
        if (dt != MPI_UNSIGNED_LONG_LONG && dt != MPI_UNSIGNED_LONG && dt != MPI_UNSIGNED) {
            std::fprintf(stderr, "part_demo: pvar %s has an unexpected datatype, ignored\n", name);
            return;
        }
        dt_ = dt;
        if (MPI_T_pvar_session_create(&session_) != MPI_SUCCESS)
            return;
        have_session_ = true;
        int count = 0;
        if (MPI_T_pvar_handle_alloc(session_, idx, nullptr, &handle_, &count) != MPI_SUCCESS ||
            count != 1)
            return;
        have_handle_ = true;
        if (!continuous && MPI_T_pvar_start(session_, handle_) != MPI_SUCCESS)
            return;
        ok_ = true;
    }
    ~PvarCounter()
    {
        if (have_handle_)
            MPI_T_pvar_handle_free(session_, &handle_);
        if (have_session_)
            MPI_T_pvar_session_free(&session_);
    }
    PvarCounter(const PvarCounter &) = delete;
    PvarCounter &operator=(const PvarCounter &) = delete;

    bool ok() const { return ok_; }

    unsigned long long read()
    {
        if (!ok_)
            return 0;
        if (dt_ == MPI_UNSIGNED_LONG_LONG) {
            unsigned long long v = 0;
            CHECK_MPI(MPI_T_pvar_read(session_, handle_, &v));
            return v;
        }
        if (dt_ == MPI_UNSIGNED_LONG) {
            unsigned long v = 0;
            CHECK_MPI(MPI_T_pvar_read(session_, handle_, &v));
            return v;
        }
        unsigned v = 0;
        CHECK_MPI(MPI_T_pvar_read(session_, handle_, &v));
        return v;
    }

  private:
    MPI_T_pvar_session session_{};
    MPI_T_pvar_handle handle_{};
    MPI_Datatype dt_ = MPI_DATATYPE_NULL;
    bool have_session_ = false, have_handle_ = false, ok_ = false;
};

// ---------------------------------------------------------------------------------------
// One size

struct Result {
    long long size;             // bytes actually moved (rounded up to fit the partitions)
    int send_parts, recv_parts;
    double part_us, single_us;  // median of the timed iterations, measured on the receiver
    double part_min_us, single_min_us;
    double sent_per_iter, recvd_per_iter;   // wire messages; -1: pvar missing, -2: not run
    unsigned long long bad_bytes;
};

constexpr int kSender = 0, kReceiver = 1;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Timing (both modes, measured on the receiver): the receive side is made ready first
// (MPI_Start of the partitioned request, or MPI_Irecv of the single receive), the sender
// activates its side likewise, then both ranks meet in MPI_Barrier: that is the
// synchronisation point. The receiver takes its start time as it leaves the barrier and its
// stop time when its MPI_Wait has completed, so one iteration covers the sender's threads
// filling the buffer plus the transfer (for partitioned: overlapped; for single: one after the
// other), and the receiver noticing completion. Buffer poisoning and verification lie outside
// the timed region. The barrier exit skew between the ranks (a few microseconds on one node)
// is included in both modes alike.
Result run_size(const Options &o, long long want_size, int tag, Team &team, PvarCounter &pvar)
{
    const int T = o.threads;
    const int sparts = T * o.parts_per_thread;
    const int rparts = T * o.recv_parts_per_thread;
    const int my_parts = (g_rank == kSender) ? sparts : rparts;
    const int my_ppt = (g_rank == kSender) ? o.parts_per_thread : o.recv_parts_per_thread;
    // both sides must move the same bytes: round up to a multiple of lcm(sparts, rparts)
    const long long l = std::lcm(static_cast<long long>(sparts), static_cast<long long>(rparts));
    const long long size = (want_size + l - 1) / l * l;
    const uint64_t part_bytes = static_cast<uint64_t>(size / my_parts);
    if (size > INT32_MAX)
        die("size " + std::to_string(size) + " too large for the single MPI_Send of this demo");

    std::vector<uint8_t> buf(static_cast<size_t>(size));
    uint8_t *const data = buf.data();
    Result res{size, sparts, rparts, -1, -1, -1, -1, -2, -2, 0};
    const int total_iters = o.warmup + o.iters;
    auto where = [size](int it) {
        return " (size " + std::to_string(size) + ", iteration " + std::to_string(it) + ")";
    };

    // ---- (a) partitioned ----------------------------------------------------------------
    auto run_partitioned = [&]() {
        MPI_Request preq = MPI_REQUEST_NULL;
        if (g_rank == kSender)
            CHECK_MPI(MPI_Psend_init(data, sparts, static_cast<MPI_Count>(part_bytes), MPI_BYTE,
                                     kReceiver, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &preq));
        else
            CHECK_MPI(MPI_Precv_init(data, rparts, static_cast<MPI_Count>(part_bytes), MPI_BYTE,
                                     kSender, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &preq));

        const unsigned long long pvar_before = pvar.read();
        std::vector<double> times;
        for (int it = 0; it < total_iters; ++it) {
            const uint32_t iter_id =
                static_cast<uint32_t>(tag) * 1000003u + static_cast<uint32_t>(it);
            if (g_rank == kReceiver)
                poison(data, size, iter_id);
            CHECK_MPI(MPI_Start(&preq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            const Clock::time_point t0 = Clock::now();
            if (g_rank == kSender) {
                team.dispatch([&](int t) {
                    for (int p = t * my_ppt; p < (t + 1) * my_ppt; ++p) {
                        fill(data + p * part_bytes, p * part_bytes, part_bytes, iter_id);
                        if (o.inject_error && it == o.warmup && p == my_parts - 1)
                            data[size - 1] ^= 0x40;     // self-test of the verification
                        CHECK_MPI(MPI_Pready(p, preq));
                    }
                });
                team.wait();
                wait_request(&preq, MPI_STATUS_IGNORE, "the partitioned send" + where(it));
                continue;
            }
            if (o.parrived) {
                g_watchdog->arm("partitions to arrive (MPI_Parrived)" + where(it));
                team.dispatch([&](int t) {
                    for (int p = t * my_ppt; p < (t + 1) * my_ppt; ++p) {
                        int flag = 0;
                        for (;;) {
                            CHECK_MPI(MPI_Parrived(preq, p, &flag));
                            if (flag)
                                break;
                            std::this_thread::yield();
                        }
                    }
                });
                team.wait();
                g_watchdog->disarm();
            }
            wait_request(&preq, MPI_STATUS_IGNORE, "the partitioned receive" + where(it));
            const double us = seconds_since(t0) * 1e6;
            if (it >= o.warmup) {
                times.push_back(us);
            }
            res.bad_bytes += verify(data, size, iter_id, part_bytes, "partitioned", size, it);
        }
        const unsigned long long pvar_after = pvar.read();
        CHECK_MPI(MPI_Request_free(&preq));
        if (g_rank == kReceiver) {
            res.part_us = median(times);
            res.part_min_us = *std::min_element(times.begin(), times.end());
        }
        const double per_iter =
            pvar.ok() ? static_cast<double>(pvar_after - pvar_before) / total_iters : -1.0;
        if (g_rank == kSender)
            res.sent_per_iter = per_iter;
        else
            res.recvd_per_iter = per_iter;
    };

    // ---- (b) one send of the whole buffer -------------------------------------------------
    auto run_single = [&]() {
        std::vector<double> times;
        for (int it = 0; it < total_iters; ++it) {
            const uint32_t iter_id =
                static_cast<uint32_t>(tag) * 1000003u + 500000u + static_cast<uint32_t>(it);
            if (g_rank == kSender) {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                team.dispatch([&](int t) {
                    for (int p = t * my_ppt; p < (t + 1) * my_ppt; ++p)
                        fill(data + p * part_bytes, p * part_bytes, part_bytes, iter_id);
                });
                team.wait();    // all threads done: the buffer is complete
                if (o.inject_error && it == o.warmup)
                    data[size / 2] ^= 0x40;             // self-test of the verification
                g_watchdog->arm("the single send" + where(it));
                CHECK_MPI(MPI_Send(data, static_cast<int>(size), MPI_BYTE, kReceiver, tag,
                                   MPI_COMM_WORLD));
                g_watchdog->disarm();
                continue;
            }
            poison(data, size, iter_id);
            MPI_Request req;
            CHECK_MPI(MPI_Irecv(data, static_cast<int>(size), MPI_BYTE, kSender, tag,
                                MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            const Clock::time_point t0 = Clock::now();
            MPI_Status st;
            wait_request(&req, &st, "the single receive" + where(it));
            const double us = seconds_since(t0) * 1e6;
            int got = -1;
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &got));
            if (got != size) {
                std::fprintf(stderr, "part_demo: single receive of size %lld got %d bytes\n",
                             size, got);
                res.bad_bytes += static_cast<unsigned long long>(size);
            }
            if (it >= o.warmup) {
                times.push_back(us);
            }
            res.bad_bytes += verify(data, size, iter_id, part_bytes, "single", size, it);
        }
        if (g_rank == kReceiver) {
            res.single_us = median(times);
            res.single_min_us = *std::min_element(times.begin(), times.end());
        }
    };

    if (o.run_part)
        run_partitioned();
    if (o.run_single)
        run_single();
    return res;
}

std::string human(long long b)
{
    char s[32];
    if (b >= (1LL << 20) && b % (1LL << 20) == 0)
        std::snprintf(s, sizeof s, "%lld MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        std::snprintf(s, sizeof s, "%lld KiB", b >> 10);
    else
        std::snprintf(s, sizeof s, "%lld B", b);
    return s;
}

std::string usec(double v)
{
    if (v < 0)
        return "-";     // mode not run
    char s[32];
    std::snprintf(s, sizeof s, "%.1f", v);
    return s;
}

// Wire messages per iteration; "n/a" when the pvar does not exist, "-" when not run.
std::string per_iter(double v)
{
    if (v < -1.5)
        return "-";
    if (v < 0)
        return "n/a";
    char s[32];
    std::snprintf(s, sizeof s, "%.1f", v);
    return s;
}

}  // namespace

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        std::fprintf(stderr, "part_demo: MPI_Init_thread failed\n");
        return 2;
    }
    // errors come back to CHECK_MPI, which prints MPI's reason before it aborts the job
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int nranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0)
            std::fprintf(stderr,
                         "part_demo: MPI_THREAD_MULTIPLE is required but the library provides "
                         "only level %d; rebuild MPI with thread support\n", provided);
        MPI_Finalize();
        return 2;
    }
    if (nranks != 2) {
        if (g_rank == 0)
            std::fprintf(stderr, "part_demo: run with exactly 2 ranks (mpiexec -n 2), not %d\n",
                         nranks);
        MPI_Finalize();
        return 2;
    }
    Options o;
    std::string err;
    if (!parse_options(argc, argv, o, err)) {
        if (g_rank == 0) {
            if (!err.empty())
                std::fprintf(stderr, "part_demo: %s\n", err.c_str());
            usage(argv[0]);
        }
        MPI_Finalize();
        return err.empty() ? 0 : 2;
    }

    int t_provided = 0;
    const bool have_mpit = MPI_T_init_thread(MPI_THREAD_MULTIPLE, &t_provided) == MPI_SUCCESS;
    std::vector<Result> results;
    {
        PvarCounter pvar(!have_mpit ? nullptr : (g_rank == kSender ? "part_wire_msgs_sent"
                                                              : "part_wire_msgs_recvd"));
        Team team(o.threads);
        Watchdog watchdog(o.timeout);
        g_watchdog = &watchdog;

        if (g_rank == 0) {
            const char *nolocal = std::getenv("MPIR_CVAR_NOLOCAL");
            const char *aggr = std::getenv("MPIR_CVAR_PART_AGGR_SIZE");
            std::printf("part_demo: 2 ranks, %d threads x %d partitions per thread (receiver %d), "
                        "%d iterations (+%d warm-up), MPI_Parrived polling %s\n",
                        o.threads, o.parts_per_thread, o.recv_parts_per_thread, o.iters, o.warmup,
                        o.parrived ? "on" : "off");
            std::printf("           MPIR_CVAR_NOLOCAL=%s MPIR_CVAR_PART_AGGR_SIZE=%s\n",
                        nolocal ? nolocal : "(unset)", aggr ? aggr : "(unset)");
            std::fflush(stdout);
        }
        // Which rank has its pvar: rank 1 tells rank 0.
        int found[2] = {pvar.ok() ? 1 : 0, 0};
        if (g_rank == kReceiver)
            CHECK_MPI(MPI_Send(&found[0], 1, MPI_INT, kSender, 998, MPI_COMM_WORLD));
        else
            CHECK_MPI(MPI_Recv(&found[1], 1, MPI_INT, kReceiver, 998, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        if (g_rank == 0) {
            std::printf("           MPI_T pvars: part_wire_msgs_sent on rank 0 %s, "
                        "part_wire_msgs_recvd on rank 1 %s\n",
                        found[0] ? "found" : "NOT FOUND (n/a)",
                        found[1] ? "found" : "NOT FOUND (n/a)");
            std::fflush(stdout);
        }
        int tag = 1;
        for (long long sz : o.sizes)
            results.push_back(run_size(o, sz, tag++, team, pvar));
    }
    if (have_mpit)
        MPI_T_finalize();

    // Gather on rank 0: the receiver's times, verification and receive counts.
    unsigned long long bad_total = 0;
    for (Result &r : results) {
        double vals[7] = {r.part_us, r.single_us, r.part_min_us, r.single_min_us, r.recvd_per_iter,
                          static_cast<double>(r.bad_bytes), 0};
        if (g_rank == kReceiver) {
            CHECK_MPI(MPI_Send(vals, 7, MPI_DOUBLE, kSender, 999, MPI_COMM_WORLD));
        } else {
            CHECK_MPI(MPI_Recv(vals, 7, MPI_DOUBLE, kReceiver, 999, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            r.part_us = vals[0];
            r.single_us = vals[1];
            r.part_min_us = vals[2];
            r.single_min_us = vals[3];
            r.recvd_per_iter = vals[4];
            r.bad_bytes = static_cast<unsigned long long>(vals[5]);
        }
        bad_total += r.bad_bytes;
    }

    if (g_rank == 0) {
        std::printf("\n%10s %7s %9s %14s %14s %7s %11s %11s %8s\n", "size", "parts", "part size",
                    "partitioned", "single", "ratio", "wire sent", "wire recvd", "verified");
        std::printf("%10s %7s %9s %14s %14s %7s %11s %11s %8s\n", "", "s/r", "(send)", "us/iter",
                    "us/iter", "p/s", "per iter", "per iter", "");
        for (const Result &r : results) {
            char parts[32];
            std::snprintf(parts, sizeof parts, "%d/%d", r.send_parts, r.recv_parts);
            char ratio[32] = "-";
            if (r.part_us >= 0 && r.single_us > 0)
                std::snprintf(ratio, sizeof ratio, "%.2f", r.part_us / r.single_us);
            std::printf("%10s %7s %9s %14s %14s %7s %11s %11s %8s\n", human(r.size).c_str(), parts,
                        human(r.size / r.send_parts).c_str(), usec(r.part_us).c_str(),
                        usec(r.single_us).c_str(), ratio, per_iter(r.sent_per_iter).c_str(),
                        per_iter(r.recvd_per_iter).c_str(), r.bad_bytes ? "NO" : "yes");
        }
        std::printf("(us/iter: median of the timed iterations on the receiver, from the barrier to "
                    "completion; min: ");
        for (size_t i = 0; i < results.size(); ++i)
            std::printf("%s%s/%s", i ? ", " : "", usec(results[i].part_min_us).c_str(),
                        usec(results[i].single_min_us).c_str());
        std::printf(")\n");
        if (bad_total)
            std::printf("part_demo: FAILED: %llu bytes did not verify\n", bad_total);
        else
            std::printf("part_demo: all data verified\n");
        std::fflush(stdout);
    }
    MPI_Finalize();
    return bad_total ? 1 : 0;
}
