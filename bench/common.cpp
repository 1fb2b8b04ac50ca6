// common.cpp: see common.hpp.
#include "common.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <random>

namespace pb {

int g_rank = -1;

// ---------------------------------------------------------------------------------------
// errors, watchdog

void fatal(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "partbench (rank %d): FATAL: %s\n", g_rank, buf);
    std::fflush(stderr);
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
}

void check_mpi(int rc, const char *what, const char *file, int line)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fatal("%s failed at %s:%d: %s", what, file, line, msg);
}

bool g_yield_wait = false;
double g_yield_after_s = 0;

void wait_all(int n, MPI_Request *reqs)
{
    if (!g_yield_wait) {
        PB_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
        return;
    }
    // MPI_Test one request at a time (MPICH 4.0.2's MPI_Testall rejects partitioned requests);
    // poll without yielding for the first g_yield_after_s, then yield between tests
    int i = 0;
    const double t0 = now_s();
    bool yielding = g_yield_after_s <= 0;
    while (i < n) {
        int flag = 0;
        PB_MPI(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
        if (flag)
            i++;
        else if (yielding || (yielding = now_s() - t0 > g_yield_after_s))
            sched_yield();
    }
}

void win_wait(MPI_Win win)
{
    if (!g_yield_wait) {
        PB_MPI(MPI_Win_wait(win));
        return;
    }
    int flag = 0;
    const double t0 = now_s();
    bool yielding = g_yield_after_s <= 0;
    for (;;) {
        PB_MPI(MPI_Win_test(win, &flag));
        if (flag)
            return;
        if (yielding || (yielding = now_s() - t0 > g_yield_after_s))
            sched_yield();
    }
}

void recv_msg(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm)
{
    MPI_Request r;
    PB_MPI(MPI_Irecv(buf, count, type, src, tag, comm, &r));
    wait_one(&r);
}

static std::mutex g_act_m;
static std::string g_activity = "start-up";

void set_activity(const std::string &what)
{
    std::lock_guard<std::mutex> lk(g_act_m);
    g_activity = what;
}

void start_finalize_watchdog(double seconds, int status)
{
    if (seconds <= 0)
        return;
    std::thread([seconds, status] {
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        std::fprintf(stderr,
                     "partbench (rank %d): NOTE: MPI_Finalize has not returned after %.0f s "
                     "(MPICH 4.0.2 ch4:ucx finalize race over TCP: ucp_disconnect_nb waits for "
                     "a peer already in the PMI barrier); every measurement is done and "
                     "written: exiting with status %d\n",
                     g_rank, seconds, status);
        std::fflush(stderr);
        std::fflush(stdout);
        std::_Exit(status);
    }).detach();
}

void start_watchdog(double seconds)
{
    if (seconds <= 0)
        return;
    std::thread([seconds] {
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        std::string act;
        {
            std::lock_guard<std::mutex> lk(g_act_m);
            act = g_activity;
        }
        std::fprintf(stderr,
                     "partbench (rank %d): TIMEOUT after %.0f s while running: %s "
                     "(a hang or a very slow run; aborting)\n",
                     g_rank, seconds, act.c_str());
        std::fflush(stderr);
        std::fflush(stdout);
        std::_Exit(124);
    }).detach();
}

// ---------------------------------------------------------------------------------------
// Team

static inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void bind_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::string self_affinity()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0)
        return "?";
    std::string out;
    int ncpu = CPU_SETSIZE;
    for (int c = 0; c < ncpu; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < ncpu && CPU_ISSET(e + 1, &set))
            e++;
        if (!out.empty())
            out += ",";
        out += (e == c) ? std::to_string(c) : std::to_string(c) + "-" + std::to_string(e);
        c = e;
    }
    return out;
}

Team::Team(int nthreads, bool bind, int rank, double spin_us)
    : n_(nthreads), spin_s_(spin_us * 1e-6), affinity_(nthreads)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    if (bind)
        bind_self((int)((rank * nthreads) % ncpu));
    affinity_[0] = self_affinity();
    for (int t = 1; t < n_; t++) {
        threads_.emplace_back([this, t, bind, rank, ncpu] {
            if (bind)
                bind_self((int)((rank * n_ + t) % ncpu));
            {
                std::lock_guard<std::mutex> lk(aff_m_);
                affinity_[t] = self_affinity();
            }
            worker(t);
        });
    }
}

Team::~Team()
{
    {
        std::lock_guard<std::mutex> lk(m_);
        quit_ = true;
        gen_.fetch_add(1);
    }
    cv_start_.notify_all();
    for (auto &t : threads_)
        t.join();
}

std::vector<std::string> Team::affinity() const
{
    std::lock_guard<std::mutex> lk(aff_m_);
    return affinity_;
}

void Team::wait_gen(uint64_t seen)
{
    double end = now_s() + spin_s_;
    int k = 0;
    while (gen_.load(std::memory_order_acquire) == seen) {
        if (now_s() > end) {
            std::unique_lock<std::mutex> lk(m_);
            cv_start_.wait(lk, [&] { return gen_.load(std::memory_order_acquire) != seen; });
            return;
        }
        if (++k % 64 == 0)
            sched_yield();
        else
            cpu_relax();
    }
}

void Team::worker(int tid)
{
    uint64_t seen = 0;
    for (;;) {
        wait_gen(seen);
        seen = gen_.load(std::memory_order_acquire);
        const std::function<void(int)> *job;
        {
            std::lock_guard<std::mutex> lk(m_);
            if (quit_)
                return;
            job = job_;
        }
        (*job)(tid);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lk(m_);
            cv_done_.notify_one();
        }
    }
}

void Team::run(const std::function<void(int)> &job)
{
    if (n_ == 1) {
        job(0);
        return;
    }
    {
        std::lock_guard<std::mutex> lk(m_);
        job_ = &job;
        remaining_.store(n_ - 1, std::memory_order_release);
        gen_.fetch_add(1, std::memory_order_acq_rel);
    }
    cv_start_.notify_all();
    job(0);
    double end = now_s() + spin_s_;
    int k = 0;
    while (remaining_.load(std::memory_order_acquire) != 0) {
        if (now_s() > end) {
            std::unique_lock<std::mutex> lk(m_);
            cv_done_.wait(lk, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
            break;
        }
        if (++k % 64 == 0)
            sched_yield();
        else
            cpu_relax();
    }
}

// ---------------------------------------------------------------------------------------
// data pattern

void fill_pattern(uint8_t *dst, size_t n, uint64_t offset, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = pattern_byte(offset + i, seed);
}

long long check_pattern(const uint8_t *p, size_t n, uint64_t offset, uint32_t seed)
{
    const size_t chunk = 4096;
    for (size_t b = 0; b < n; b += chunk) {
        size_t e = std::min(n, b + chunk);
        unsigned diff = 0;
        for (size_t i = b; i < e; i++)
            diff |= (unsigned)(p[i] ^ pattern_byte(offset + i, seed));
        if (diff) {
            for (size_t i = b; i < e; i++)
                if (p[i] != pattern_byte(offset + i, seed))
                    return (long long)i;
        }
    }
    return -1;
}

uint32_t iter_seed(uint32_t salt, int iter)
{
    return salt * 101u + (uint32_t)iter * 37u + 11u;
}

// ---------------------------------------------------------------------------------------
// compute model

void compute_for(double us, bool spin_only)
{
    if (us <= 0)
        return;
    double end = now_s() + us * 1e-6;
    if (!spin_only && us > 300)
        std::this_thread::sleep_for(std::chrono::duration<double>((us - 200) * 1e-6));
    while (now_s() < end)
        cpu_relax();
}

std::vector<double> make_delays(const DelayModel &m, int threads, int theta, size_t part_bytes,
                                int iter)
{
    const int np = threads * theta;
    std::vector<double> d(np, 0.0);
    for (int t = 0; t < threads; t++)
        for (int k = 0; k < theta; k++)
            d[t * theta + k] = m.compute_us / theta;
    const double amp = m.compute_us * m.noise_pct / 100.0;
    std::mt19937_64 rng(0x5eed0000ull + (uint64_t)iter * 7919u);
    for (int t = 0; t < threads; t++) {
        double extra = 0;
        if (m.noise == "single")
            extra = (t == threads - 1) ? amp : 0;
        else if (m.noise == "uniform")
            extra = std::uniform_real_distribution<double>(0.0, amp)(rng);
        else if (m.noise == "gaussian")
            extra = std::normal_distribution<double>(0.0, amp)(rng);
        double &last = d[t * theta + theta - 1];
        last = std::max(0.0, last + extra);     // gaussian noise may be negative
        if (m.burst) {  // the thread's whole compute first, then its partitions at once
            double sum = 0;
            for (int k = 0; k < theta; k++) {
                sum += d[t * theta + k];
                d[t * theta + k] = 0;
            }
            d[t * theta] = sum;
        }
    }
    if (m.gamma > 0)
        d[np - 1] += m.gamma * (double)theta * (double)part_bytes / 1e6;
    return d;
}

// ---------------------------------------------------------------------------------------
// statistics

double t_quantile_975(int df)
{
    static const double tab[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306,  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120,  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064,  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df <= 0)
        return INFINITY;
    if (df <= 30)
        return tab[df];
    // Cornish-Fisher expansion around the normal quantile
    const double z = 1.959963985, n = df;
    return z + (z * z * z + z) / (4 * n) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

Stats stats_of(std::vector<double> v)
{
    Stats s;
    s.n = (int)v.size();
    if (v.empty())
        return s;
    double sum = 0;
    for (double x : v)
        sum += x;
    s.mean = sum / s.n;
    double ss = 0;
    for (double x : v)
        ss += (x - s.mean) * (x - s.mean);
    s.stddev = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0;
    s.ci95 = s.n > 1 ? t_quantile_975(s.n - 1) * s.stddev / std::sqrt((double)s.n) : INFINITY;
    std::sort(v.begin(), v.end());
    s.min = v.front();
    s.median = (s.n % 2) ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
    return s;
}

// ---------------------------------------------------------------------------------------
// MPI_T

void MpiT::init()
{
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return;
    ok = true;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS)
        session = MPI_T_PVAR_SESSION_NULL;
}

void MpiT::fini()
{
    if (!ok)
        return;
    if (session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    ok = false;
}

bool cvar_access_int(const char *name, int *value, bool write)
{
    int idx = -1;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS || idx < 0)
        return false;
    MPI_T_cvar_handle h;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(idx, nullptr, &h, &count) != MPI_SUCCESS)
        return false;
    bool good = (write ? MPI_T_cvar_write(h, value) : MPI_T_cvar_read(h, value)) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&h);
    return good;
}

bool MpiT::cvar_write_int(const char *name, int value)
{
    return ok && cvar_access_int(name, &value, true);
}

bool MpiT::cvar_read_int(const char *name, int *value)
{
    return ok && cvar_access_int(name, value, false);
}

bool MpiT::pvar_read_ull(const char *name, unsigned long long *value)
{
    if (!ok || session == MPI_T_PVAR_SESSION_NULL)
        return false;
    int idx = -1;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS || idx < 0)
        return false;
    MPI_T_pvar_handle h;
    int count = 0;
    if (MPI_T_pvar_handle_alloc(session, idx, nullptr, &h, &count) != MPI_SUCCESS)
        return false;
    bool good = (count == 1) && MPI_T_pvar_read(session, h, value) == MPI_SUCCESS;
    MPI_T_pvar_handle_free(session, &h);
    return good;
}

// ---------------------------------------------------------------------------------------
// misc

size_t parse_size(const std::string &s)
{
    if (s.empty())
        fatal("empty size");
    char *end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    std::string suf(end);
    size_t mul = 1;
    if (suf == "" || suf == "B" || suf == "b")
        mul = 1;
    else if (suf == "K" || suf == "k" || suf == "KiB")
        mul = 1024;
    else if (suf == "M" || suf == "m" || suf == "MiB")
        mul = 1024 * 1024;
    else if (suf == "G" || suf == "g" || suf == "GiB")
        mul = 1024ull * 1024 * 1024;
    else
        fatal("bad size '%s'", s.c_str());
    return (size_t)(v * (double)mul);
}

std::string size_str(size_t b)
{
    char buf[32];
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        std::snprintf(buf, sizeof buf, "%zuMiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        std::snprintf(buf, sizeof buf, "%zuKiB", b >> 10);
    else
        std::snprintf(buf, sizeof buf, "%zuB", b);
    return buf;
}

std::vector<std::string> split(const std::string &s, char sep)
{
    std::vector<std::string> out;
    size_t b = 0;
    while (b <= s.size()) {
        size_t e = s.find(sep, b);
        if (e == std::string::npos)
            e = s.size();
        if (e > b)
            out.push_back(s.substr(b, e - b));
        b = e + 1;
    }
    return out;
}

} // namespace pb
