// partbench.cpp: benchmark driver for MPI-4 partitioned communication (2 ranks, std::thread).
//
// Patterns (--pattern):
//   pipelined  the pipelined pattern of Gillis et al. (ICPP'23, fig. 3) over a size sweep, for
//              every variant in variants.cpp; metric: time from the start of the iteration to
//              the receiver's completion, minus the compute time of the slowest thread.
//   earlybird  pipelined with the last partition delayed by gamma * (bytes of one thread)
//              (gamma in us/MB) or with noise; the gain T(p2p-single)/T(part) is compared with
//              the model eta = N*theta / max(N*theta - gamma*theta*beta, 1) by report.py.
//   overhead   pipelined with a per-thread compute (default 1 ms) and noise (1 %, 4 %),
//              reporting the communication overhead and the perceived bandwidth (bytes / time
//              from the last partition being ready to the receiver's completion).
//   aggr       the partitioned variant under several MPIR_CVAR_PART_AGGR_SIZE values (set with
//              MPI_T_cvar_write before the requests are created), with the wire-message counts
//              of the MPI_T pvars part_wire_msgs_sent / _recvd / part_user_parts_sent
//              (on the RDMA transport, wire_sent counts its writes: part_ofi_writes,
//              part_verbs_writes; the timer aggregator may split a planned message).
//   halo       a 3-D Jacobi halo exchange (halo.cpp).
//   parrived   the cost of one MPI_Parrived call that returns false (nothing readied yet)
//              and of one that returns true (after arrival), in us per call (parrived.cpp).
//
// The variants of one size run interleaved, iteration by iteration, so that the slow phases
// of a shared machine hit them alike. Every iteration's data is verified byte by byte on the
// receiver; a mismatch is printed and
// the run exits with status 2. Rank 0 appends one CSV row per measured point (--csv) and a
// description of the machine and the MPI library (--meta). Run with exactly 2 ranks.
// `partbench --help` lists the options.
#include "partbench.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

namespace pb {

namespace {

const char *USAGE = R"(partbench: MPI partitioned-communication benchmark (2 ranks)

  --pattern P        pipelined | earlybird | overhead | aggr | halo | parrived
                     (default pipelined)
  --variants LIST    part,p2p-single,p2p-many,rma-single-passive,rma-many-passive,
                     rma-single-active,rma-many-active (default depends on the pattern);
                     part:AGG is part with the info key mpich_part_aggregator = AGG,
                     part:size=N with aggregator size and mpich_part_aggr_size = N,
                     part:observe=N with MPIR_CVAR_PART_AGGR_OBSERVE = N (MPI_T)
  --threads N        threads per rank (N)                --theta T   partitions per thread
  --sizes LIST       total bytes per iteration, K/M suffixes (e.g. 8,1K,64K,1M,4M)
  --grids LIST       halo: local grid edge per rank (default 32,64)
  --iters N          timed iterations per attempt        --warmup W  untimed first iterations
  --attempts A       retry cap: repeat the timed iterations until the 95 % CI half-width is
                     below --ci (fraction of the mean, default 0.05) or A attempts were made
  --gamma LIST       earlybird: delay rate(s) in us/MB (default 100)
  --compute-us C     compute per thread and iteration (overhead default 1000)
  --noise-model M    none | single | uniform | gaussian      --noise LIST  noise in % of C
  --ready M          spread: each partition after its share of C (default); burst: a thread
                     computes C first, then readies all its partitions back to back (seed
                     000's perceived-bandwidth benchmark)
  --aggr LIST        values for MPIR_CVAR_PART_AGGR_SIZE ('-' leaves it as it is)
  --parrived         halo: receiver threads poll MPI_Parrived (default on for halo)
  --polls K          parrived: MPI_Parrived calls per timed batch (default 1000, smoke 100)
  --sender-sleep-us U  parrived: while the poller's false batch runs, the sender tests for
                     "go" every U us and sleeps in between (default 50; 0: it blocks in
                     MPI_Wait, busy-polling on the other core)
  --bind             bind thread t of rank r to cpu (r*N+t) mod ncpu (default: no binding)
  --spin             compute delays spin all the way (default: sleep, then spin 200 us)
  --wait MODE        block (default): MPI_Wait & co.; yield: MPI_Test loops with
                     sched_yield; hybrid: MPI_Test loops, yielding after the first 100 us;
                     auto: hybrid when 2 ranks x threads exceed the cores, else block
  --full | --smoke   larger sweep and more iterations | tiny sweep, few iterations
  --lib NAME --config NAME --round K   labels for the CSV rows
  --csv FILE --meta FILE     outputs (appended)
  --timeout S        abort the whole run after S seconds (default 300)
  --finalize-grace S if MPI_Finalize has not returned after S seconds (default 5; 0 = wait),
                     print a note and exit with the run's status (MPICH 4.0.2's ch4:ucx
                     finalize can hang over TCP, in both libraries)
  --corrupt          self-test: spoil one byte per run; verification must fail (exit 2)
  --dump             print every timed iteration's time (us) of every attempt, and its time
                     from the last partition ready to the receiver's completion
  --thread-hint      part variant: info key mpich_part_thread_partitions = theta (each
                     thread's partitions share a VCI when MPIR_CVAR_CH4_NUM_VCIS > 1)
)";

std::vector<double> parse_doubles(const std::string &s)
{
    std::vector<double> v;
    for (auto &x : split(s, ','))
        v.push_back(std::atof(x.c_str()));
    return v;
}

Options parse(int argc, char **argv)
{
    Options o;
    std::string variants, sizes, grids, gammas, noises, aggr;
    int threads = -1, theta = -1, iters = -1, warmup = -1, attempts = -1, polls = -1;
    double compute = -1;
    std::string noise_model;
    std::string ready_mode = "spread";
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc)
                fatal("option %s needs a value", a.c_str());
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            if (g_rank == 0)
                std::fputs(USAGE, stdout);
            MPI_Finalize();
            std::exit(0);
        } else if (a == "--pattern")
            o.pattern = val();
        else if (a == "--variants")
            variants = val();
        else if (a == "--threads")
            threads = std::atoi(val().c_str());
        else if (a == "--theta")
            theta = std::atoi(val().c_str());
        else if (a == "--sizes")
            sizes = val();
        else if (a == "--grids")
            grids = val();
        else if (a == "--iters")
            iters = std::atoi(val().c_str());
        else if (a == "--warmup")
            warmup = std::atoi(val().c_str());
        else if (a == "--attempts")
            attempts = std::atoi(val().c_str());
        else if (a == "--ci")
            o.ci_target = std::atof(val().c_str());
        else if (a == "--gamma")
            gammas = val();
        else if (a == "--compute-us")
            compute = std::atof(val().c_str());
        else if (a == "--noise-model")
            noise_model = val();
        else if (a == "--ready")
            ready_mode = val();
        else if (a == "--noise")
            noises = val();
        else if (a == "--aggr")
            aggr = val();
        else if (a == "--parrived")
            o.parrived = true;
        else if (a == "--polls")
            polls = std::atoi(val().c_str());
        else if (a == "--sender-sleep-us")
            o.parrived_sleep_us = std::atof(val().c_str());
        else if (a == "--bind")
            o.bind = true;
        else if (a == "--spin")
            o.spin_only = true;
        else if (a == "--wait")
            o.wait = val();
        else if (a == "--full")
            o.full = true;
        else if (a == "--smoke")
            o.smoke = true;
        else if (a == "--lib")
            o.lib = val();
        else if (a == "--config")
            o.config = val();
        else if (a == "--round")
            o.round = std::atoi(val().c_str());
        else if (a == "--csv")
            o.csv = val();
        else if (a == "--meta")
            o.meta = val();
        else if (a == "--timeout")
            o.timeout = std::atof(val().c_str());
        else if (a == "--finalize-grace")
            o.finalize_grace = std::atof(val().c_str());
        else if (a == "--spin-us")
            o.spin_us = std::atof(val().c_str());
        else if (a == "--corrupt")
            o.corrupt = true;
        else if (a == "--dump")
            o.dump = true;
        else if (a == "--thread-hint")
            o.thread_hint = true;
        else
            fatal("unknown option '%s' (see --help)", a.c_str());
    }

    // defaults per pattern
    const std::string &p = o.pattern;
    std::string dv, ds;
    int dthreads = 1, dtheta = 1;
    if (p == "pipelined") {
        dv = "part,p2p-single,p2p-many,rma-single-passive,rma-many-passive,rma-single-active,"
             "rma-many-active";
        ds = o.full ? "8,64,512,1K,4K,16K,64K,256K,1M,4M,16M,64M"
                    : (o.smoke ? "8,64K" : "8,1K,64K,1M,4M");
    } else if (p == "earlybird") {
        dv = "part,p2p-single,p2p-many";
        ds = o.full ? "64K,256K,1M,4M,16M,64M" : (o.smoke ? "1M" : "64K,1M,4M");
        dthreads = 4;
        if (gammas.empty() && noise_model.empty())
            gammas = "100";
    } else if (p == "overhead") {
        dv = "part,p2p-single,p2p-many";
        ds = o.full ? "64K,256K,1M,4M,16M,64M" : (o.smoke ? "64K" : "64K,1M,4M");
        dthreads = 4;
        if (compute < 0)
            compute = 1000;
        if (noise_model.empty())
            noise_model = "single";
        if (noises.empty())
            noises = "1,4";
    } else if (p == "aggr") {
        dv = "part,p2p-single"; // the reference runs interleaved with every aggregation value
        ds = o.full ? "8,64,512,1K,4K,16K,64K,256K,1M,4M" : (o.smoke ? "1K" : "8,1K,64K,1M,4M");
        dthreads = 4;
        dtheta = 32;
        if (aggr.empty())
            aggr = "0,1024,16384,65536";
    } else if (p == "halo") {
        dv = "part,p2p-single";
        dthreads = 4;
        if (grids.empty())
            grids = o.full ? "32,64,128" : (o.smoke ? "16" : "32,64");
        o.parrived = true;
    } else if (p == "parrived") {
        dv = "part"; // the pattern has its own two rows (parrived-false, parrived-true)
        ds = "8";
        if (threads > 1)
            fatal("--pattern parrived runs one thread per rank");
    } else
        fatal("unknown pattern '%s'", p.c_str());

    o.variants = split(variants.empty() ? dv : variants, ',');
    for (auto &v : o.variants)
        if (!make_variant(v))
            fatal("unknown variant '%s'", v.c_str());
    o.threads = threads > 0 ? threads : dthreads;
    o.theta = theta > 0 ? theta : dtheta;
    for (auto &s : split(sizes.empty() ? ds : sizes, ','))
        o.sizes.push_back(parse_size(s));
    for (auto &g : split(grids, ','))
        o.grids.push_back(std::atoi(g.c_str()));
    o.iters = iters > 0 ? iters : (o.full ? 100 : (o.smoke ? 5 : 30));
    o.warmup = warmup >= 0 ? warmup : (o.smoke ? 1 : 2);
    o.attempts = attempts > 0 ? attempts : (o.full ? 10 : (o.smoke ? 1 : 3));
    o.polls = polls > 0 ? polls : (o.smoke ? 100 : 1000);
    o.delay.compute_us = compute > 0 ? compute : 0;
    o.delay.noise = noise_model.empty() ? "none" : noise_model;
    if (ready_mode != "spread" && ready_mode != "burst")
        fatal("unknown --ready mode '%s' (spread, burst)", ready_mode.c_str());
    o.delay.burst = ready_mode == "burst";
    if (o.delay.noise != "none" && o.delay.noise != "single" && o.delay.noise != "uniform" &&
        o.delay.noise != "gaussian")
        fatal("unknown noise model '%s'", o.delay.noise.c_str());
    o.noise_pcts = parse_doubles(noises);
    o.gammas = parse_doubles(gammas);
    o.aggr = split(aggr.empty() ? "-" : aggr, ',');
    if (o.wait != "auto" && o.wait != "block" && o.wait != "yield" && o.wait != "hybrid")
        fatal("--wait takes auto, block, yield or hybrid");
    if (o.config.empty())
        o.config = p + "-" + std::to_string(o.threads) + "x" + std::to_string(o.theta);
    return o;
}

// ---------------------------------------------------------------------------------------
// the record of the machine and the library

std::string first_lines_of_library_version(std::string *custom)
{
    char buf[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(buf, &len);
    std::string s(buf, std::min<size_t>(len, sizeof buf));
    std::istringstream in(s);
    std::string line, first;
    std::getline(in, first);
    while (std::getline(in, line))
        if (line.find("Custom Information") != std::string::npos)
            *custom = line;
    while (!first.empty() && (first.back() == '\n' || first.back() == '\r' || first.back() == ' '))
        first.pop_back();
    return first;
}

std::string libmpi_path()
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        size_t pos = line.find('/');
        if (pos == std::string::npos)
            continue;
        std::string path = line.substr(pos);
        std::string base = path.substr(path.rfind('/') + 1);
        if (base.rfind("libmpi", 0) == 0 && base.find("cxx") == std::string::npos)
            return path;
    }
    return "?";
}

std::string collapse(std::string s)
{
    for (auto &c : s)
        if (c == '\n' || c == '\t')
            c = ' ';
    return s;
}

std::string recv_string(int src, MPI_Comm comm)
{
    MPI_Status st;
    PB_MPI(MPI_Probe(src, 999, comm, &st));
    int n = 0;
    PB_MPI(MPI_Get_count(&st, MPI_CHAR, &n));
    std::string s(n, '\0');
    PB_MPI(MPI_Recv(&s[0], n, MPI_CHAR, src, 999, comm, MPI_STATUS_IGNORE));
    return s;
}

void send_string(const std::string &s, int dst, MPI_Comm comm)
{
    PB_MPI(MPI_Send(s.data(), (int)s.size(), MPI_CHAR, dst, 999, comm));
}

void write_meta(const Options &o, MPI_Comm comm, Team &team, MpiT &mpit, int provided,
                bool same_host, int shm_ranks, int *oversub)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    std::string aff;
    auto a = team.affinity();
    for (size_t t = 0; t < a.size(); t++)
        aff += (t ? " " : "") + std::string("t") + std::to_string(t) + ":" + a[t];
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    std::string mine = std::string(host) + " | process cpus " + self_affinity() + " | threads " + aff;
    if (rank == 1) {
        send_string(mine, 0, comm);
        return;
    }
    std::string other = recv_string(1, comm);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = 2 * o.threads;
    *oversub = nthreads > ncpu;
    if (o.meta.empty())
        return;
    FILE *f = std::fopen(o.meta.c_str(), "a");
    if (!f)
        fatal("cannot open %s", o.meta.c_str());
    struct utsname u;
    uname(&u);
    std::string custom;
    std::string libv = first_lines_of_library_version(&custom);
    int ver = 0, sub = 0;
    MPI_Get_version(&ver, &sub);
    int aggr = 0;
    bool has_cvar = mpit.cvar_read_int("MPIR_CVAR_PART_AGGR_SIZE", &aggr);
    unsigned long long dummy;
    bool has_pvar = mpit.pvar_read_ull("part_wire_msgs_sent", &dummy);
    std::fprintf(f, "[%s %s]\n", o.lib.c_str(), o.config.c_str());
    std::fprintf(f, "machine: %s %s %s %s %s\n", u.sysname, u.nodename, u.release, u.version,
                 u.machine);
    std::fprintf(f, "nproc: %ld\n", ncpu);
    std::fprintf(f, "mpi_library: %s\n", collapse(libv).c_str());
    if (!custom.empty())
        std::fprintf(f, "mpi_custom: %s\n", collapse(custom).c_str());
    std::fprintf(f, "mpi_standard: %d.%d\n", ver, sub);
    std::fprintf(f, "libmpi: %s\n", libmpi_path().c_str());
    std::fprintf(f, "thread_level: %s\n",
                 provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "LOWER (error)");
    std::fprintf(f, "compiler: %s\n", __VERSION__);
    std::string envs;
    for (char **e = environ; *e; e++) {
        std::string kv = *e;
        if (kv.rfind("MPIR_CVAR_", 0) == 0 || kv.rfind("MPICH_", 0) == 0 ||
            kv.rfind("UCX_", 0) == 0 || kv.rfind("FI_", 0) == 0 || kv.rfind("HYDRA_", 0) == 0)
            envs += (envs.empty() ? "" : " ") + kv;
    }
    std::fprintf(f, "env_cvars: %s\n", envs.empty() ? "(none)" : envs.c_str());
    std::fprintf(f, "cvar MPIR_CVAR_PART_AGGR_SIZE: %s\n",
                 has_cvar ? std::to_string(aggr).c_str() : "absent");
    std::fprintf(f, "pvars part_wire_msgs_*: %s\n", has_pvar ? "present" : "absent");
    std::fprintf(f, "thread_binding: %s\n",
                 o.bind ? "bound: thread t of rank r on cpu (r*N+t) mod ncpu"
                        : "none (OS scheduling; mpiexec default binding)");
    std::fprintf(f, "wait_mode: %s\n",
                 !g_yield_wait ? "block (MPI_Wait, MPI_Win_wait)"
                 : g_yield_after_s > 0
                     ? "hybrid (MPI_Test/MPI_Win_test loops, sched_yield after 100 us)"
                     : "yield (MPI_Test/MPI_Win_test loops with sched_yield)");
    std::fprintf(f, "rank0: %s\n", mine.c_str());
    std::fprintf(f, "rank1: %s\n", other.c_str());
    std::fprintf(f, "clock: %s\n",
                 same_host ? "steady_clock (CLOCK_MONOTONIC) shared by both ranks (same host)"
                           : "steady_clock with an offset from ping-pongs (different hosts)");
    std::fprintf(f, "oversubscribed: %s (%d threads on %ld cores)\n", *oversub ? "yes" : "no",
                 nthreads, ncpu);
    std::fprintf(f, "comm_type_shared_ranks: %d of 2 (%s)\n", shm_ranks,
                 shm_ranks == 2 ? "MPICH may use its shared memory between the ranks"
                                : "MPICH sees the other rank as remote: traffic goes through "
                                  "the netmod");
    std::fprintf(f, "options: pattern=%s threads=%d theta=%d iters=%d warmup=%d attempts=%d "
                    "ci=%.3f spin=%d\n\n",
                 o.pattern.c_str(), o.threads, o.theta, o.iters, o.warmup, o.attempts, o.ci_target,
                 (int)o.spin_only);
    std::fclose(f);
}

// receiver clock minus sender clock
double clock_offset(MPI_Comm comm, int rank, bool same_host)
{
    if (same_host)
        return 0;
    double best_rtt = 1e9, off = 0;
    for (int i = 0; i < 50; i++) {
        if (rank == 0) {
            double t0 = now_s(), tr;
            PB_MPI(MPI_Send(&t0, 1, MPI_DOUBLE, 1, 998, comm));
            PB_MPI(MPI_Recv(&tr, 1, MPI_DOUBLE, 1, 998, comm, MPI_STATUS_IGNORE));
            double t1 = now_s();
            if (t1 - t0 < best_rtt) {
                best_rtt = t1 - t0;
                off = tr - 0.5 * (t0 + t1);
            }
        } else {
            double x;
            PB_MPI(MPI_Recv(&x, 1, MPI_DOUBLE, 0, 998, comm, MPI_STATUS_IGNORE));
            x = now_s();
            PB_MPI(MPI_Send(&x, 1, MPI_DOUBLE, 0, 998, comm));
        }
    }
    PB_MPI(MPI_Bcast(&off, 1, MPI_DOUBLE, 0, comm));
    return off;
}

std::string fmt2(double x)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", x);
    return b;
}

} // namespace

// ---------------------------------------------------------------------------------------
// CSV

void Recorder::write(const Row &r)
{
    if (g_rank != 0)
        return;
    if (r.pattern == "parrived")
        std::printf("  %-6s %-10s %-19s N=%d th=%-2d %8s  aggr=%-6s  %8.1f ns/call +-%6.1f "
                    "(med %8.1f) (%d x %d it%s)  flags true %lld of %lld%s\n",
                    opt.lib.c_str(), r.pattern.c_str(), r.variant.c_str(), r.threads, r.theta,
                    size_str(r.bytes).c_str(), r.aggr.c_str(), r.t.mean * 1e3, r.t.ci95 * 1e3,
                    r.t.median * 1e3, r.attempts, r.iters, r.converged ? "" : ", CI>target",
                    r.polls_true, r.polls, r.verified ? "" : "  VERIFICATION FAILED");
    else
    std::printf("  %-6s %-10s %-19s N=%d th=%-2d %8s  aggr=%-6s g=%-5g c=%-5g %s%s  "
                "%10.2f us +-%6.2f (med %8.2f) (%d x %d it%s)  pb %8.1f MB/s  wire %s/it%s\n",
                opt.lib.c_str(), r.pattern.c_str(), r.variant.c_str(), r.threads, r.theta,
                size_str(r.bytes).c_str(), r.aggr.c_str(), r.gamma, r.compute_us,
                r.noise.c_str(), r.noise == "none" ? "" : ("/" + fmt2(r.noise_pct) + "%").c_str(),
                r.t.mean, r.t.ci95, r.t.median, r.attempts, r.iters, r.converged ? "" : ", CI>target",
                r.pb_mean_us > 0 ? (double)r.bytes / r.pb_mean_us : 0.0, r.wire_sent.c_str(),
                r.verified ? "" : "  VERIFICATION FAILED");
    std::fflush(stdout);
    if (opt.csv.empty())
        return;
    bool fresh = false;
    {
        FILE *t = std::fopen(opt.csv.c_str(), "r");
        if (!t)
            fresh = true;
        else {
            std::fseek(t, 0, SEEK_END);
            fresh = std::ftell(t) == 0;
            std::fclose(t);
        }
    }
    FILE *f = std::fopen(opt.csv.c_str(), "a");
    if (!f)
        fatal("cannot open %s", opt.csv.c_str());
    if (fresh)
        std::fprintf(f, "lib,round,config,pattern,variant,threads,theta,nparts,bytes,part_bytes,aggr,"
                        "gamma_us_per_MB,compute_us,noise_model,noise_pct,iters,attempts,"
                        "converged,mean_us,ci95_us,median_us,min_us,stddev_us,pb_mean_us,"
                        "pb_MBps,raw_mean_us,compute_mean_us,wire_sent_per_iter,"
                        "wire_recvd_per_iter,parts_per_wire_msg,verified,oversubscribed,"
                        "polls,polls_true,pb_median_us\n");
    const int dp = r.pattern == "parrived" ? 7 : 4; // parrived: us per call, ~0.1 us
    std::fprintf(f,
                 "%s,%d,%s,%s,%s,%d,%d,%d,%zu,%zu,%s,%g,%g,%s,%g,%d,%d,%d,%.*f,%.*f,%.*f,%.*f,"
                 "%.*f,%.4f,%.3f,%.*f,%.4f,%s,%s,%s,%d,%d,%s,%s,%.4f\n",
                 opt.lib.c_str(), opt.round, opt.config.c_str(), r.pattern.c_str(),
                 r.variant.c_str(), r.threads, r.theta, r.nparts, r.bytes, r.part_bytes, r.aggr.c_str(), r.gamma,
                 r.compute_us, r.noise.c_str(), r.noise_pct, r.iters, r.attempts, r.converged,
                 dp, r.t.mean, dp, r.t.ci95, dp, r.t.median, dp, r.t.min, dp, r.t.stddev,
                 r.pb_mean_us, r.pb_mean_us > 0 ? (double)r.bytes / r.pb_mean_us : 0.0, dp,
                 r.raw_mean_us,
                 r.compute_mean_us, r.wire_sent.c_str(), r.wire_recvd.c_str(),
                 r.parts_per_msg.c_str(), r.verified, oversub,
                 r.polls >= 0 ? std::to_string(r.polls).c_str() : "n/a",
                 r.polls_true >= 0 ? std::to_string(r.polls_true).c_str() : "n/a",
                 r.pb_median_us);
    std::fclose(f);
}

// ---------------------------------------------------------------------------------------
// the pipelined patterns

namespace {

struct PvarSnap {
    unsigned long long sent = 0, recvd = 0, parts = 0;
    unsigned long long writes = 0;  // RDMA transport: writes posted (both backends)
    bool ok = false;
};

PvarSnap snap(MpiT &m)
{
    PvarSnap s;
    s.ok = m.pvar_read_ull("part_wire_msgs_sent", &s.sent) &&
           m.pvar_read_ull("part_wire_msgs_recvd", &s.recvd) &&
           m.pvar_read_ull("part_user_parts_sent", &s.parts);
    for (const char *name : {"part_ofi_writes", "part_verbs_writes"}) {
        unsigned long long v = 0;
        if (m.pvar_read_ull(name, &v))   // absent in builds without that backend
            s.writes += v;
    }
    return s;
}

// Wire messages the sender put on the wire between two snapshots: on the RDMA transport its
// writes (the timer aggregator may split a planned message into several), else the plan's
// messages (part_wire_msgs_sent, counted per completed iteration).
unsigned long long wire_sent(const PvarSnap &a, const PvarSnap &b)
{
    return b.writes > a.writes ? b.writes - a.writes : b.sent - a.sent;
}

uint8_t *alloc_buf(size_t n)
{
    void *p = nullptr;
    if (posix_memalign(&p, 4096, std::max<size_t>(n, 64)) != 0)
        fatal("out of memory (%zu bytes)", n);
    std::memset(p, 0, std::max<size_t>(n, 64));
    return (uint8_t *)p;
}

int run_pipelined(const Options &o, MPI_Comm world, Recorder &rec, MpiT &mpit, Team &team,
                  double offset)
{
    int rank;
    MPI_Comm_rank(world, &rank);
    MPI_Comm comm, ctrl;
    PB_MPI(MPI_Comm_dup(world, &comm));
    PB_MPI(MPI_Comm_dup(world, &ctrl));
    const bool sender = rank == 0;
    const int nparts = o.threads * o.theta;

    size_t maxbytes = 0;
    for (size_t s : o.sizes)
        maxbytes = std::max(maxbytes, std::max<size_t>(1, s / nparts) * nparts);
    uint8_t *sbuf = alloc_buf(maxbytes), *rbuf = alloc_buf(maxbytes);

    // delay configurations: every gamma x every noise amplitude
    std::vector<DelayModel> models;
    const std::vector<double> gammas = o.gammas.empty() ? std::vector<double>{0} : o.gammas;
    const std::vector<double> noises =
        o.noise_pcts.empty() ? std::vector<double>{0} : o.noise_pcts;
    for (double g : gammas)
        for (double n : noises) {
            DelayModel m = o.delay;
            m.gamma = g;
            m.noise_pct = n;
            models.push_back(m);
        }

    int cur_aggr = 0;
    const bool has_cvar = mpit.cvar_read_int("MPIR_CVAR_PART_AGGR_SIZE", &cur_aggr);
    std::vector<std::string> aggrs = o.aggr;
    if (!has_cvar && aggrs.size() > 1) {
        if (sender)
            std::printf("  note: MPIR_CVAR_PART_AGGR_SIZE is not available in this MPI library: "
                        "one run, aggr=n/a\n");
        aggrs.resize(1);
    }

    int failures = 0;
    uint32_t salt = 0;
    for (const std::string &av : aggrs) {
        std::string aggr_label = "n/a";
        if (has_cvar) {
            if (av != "-") {
                if (!mpit.cvar_write_int("MPIR_CVAR_PART_AGGR_SIZE", std::atoi(av.c_str())))
                    fatal("MPI_T_cvar_write(MPIR_CVAR_PART_AGGR_SIZE, %s) failed", av.c_str());
            }
            int v = 0;
            mpit.cvar_read_int("MPIR_CVAR_PART_AGGR_SIZE", &v);
            aggr_label = std::to_string(v);
        }
        for (const DelayModel &dm : models) {
            for (size_t req_bytes : o.sizes) {
                PipeCtx c;
                c.comm = comm;
                c.rank = rank;
                c.peer = 1 - rank;
                c.sender = sender;
                c.threads = o.threads;
                c.theta = o.theta;
                c.nparts = nparts;
                c.part_bytes = std::max<size_t>(1, req_bytes / nparts);
                c.bytes = c.part_bytes * nparts;
                c.sbuf = sbuf;
                c.rbuf = rbuf;
                c.team = &team;
                c.spin_only = o.spin_only;
                c.thread_hint = o.thread_hint;
                c.thread_compute.assign(o.threads, 0);
                c.thread_ready.assign(o.threads, 0);

                // All variants are set up together and run interleaved, iteration by
                // iteration (A B C A B C ..., the order rotating by one every round), so that
                // slow phases of a noisy machine hit every variant alike.
                const int nv = (int)o.variants.size();
                struct VState {
                    std::string name;
                    std::unique_ptr<Variant> v;
                    uint32_t salt = 0;
                    int it = 0;          // iterations run (warm-up included)
                    std::vector<double> t0, cmax, tready, tdone;
                    Row best;
                    double best_rel = INFINITY;
                    bool converged = false;
                    unsigned long long wsent = 0, wrecvd = 0, wparts = 0;
                    bool pv_ok = true;
                };
                std::vector<VState> vs(nv);
                std::string names;
                for (int k = 0; k < nv; k++) {
                    vs[k].name = o.variants[k];
                    vs[k].v = make_variant(o.variants[k]);
                    vs[k].salt = ++salt;
                    names += (k ? "," : "") + o.variants[k];
                }
                char act[256];
                std::snprintf(act, sizeof act, "%s %s variants %s, %s, aggr %s", o.lib.c_str(),
                              o.config.c_str(), names.c_str(), size_str(c.bytes).c_str(),
                              aggr_label.c_str());
                set_activity(act);
                for (auto &s : vs)
                    s.v->setup(c);
                PB_MPI(MPI_Barrier(ctrl));

                auto one_iter = [&](VState &s, bool timed) {
                    const uint32_t seed = iter_seed(s.salt, s.it);
                    const PvarSnap p0 = snap(mpit);
                    if (!sender) {
                        // poison: differs from this iteration's data in every byte
                        fill_pattern(c.rbuf, c.bytes, 0, seed + 128);
                        s.v->recv_arm(c);
                    }
                    PB_MPI(MPI_Barrier(ctrl));
                    if (sender) {
                        c.iter = s.it;
                        c.seed = seed;
                        c.delays = make_delays(dm, o.threads, o.theta, c.part_bytes, s.it);
                        c.corrupt_now = o.corrupt && timed && s.t0.empty();
                        std::fill(c.thread_compute.begin(), c.thread_compute.end(), 0.0);
                        std::fill(c.thread_ready.begin(), c.thread_ready.end(), 0.0);
                        const double t0 = now_s();
                        s.v->send_iter(c);
                        if (timed) {
                            s.t0.push_back(t0);
                            s.cmax.push_back(*std::max_element(c.thread_compute.begin(),
                                                               c.thread_compute.end()));
                            s.tready.push_back(*std::max_element(c.thread_ready.begin(),
                                                                 c.thread_ready.end()));
                        }
                    } else {
                        s.v->recv_complete(c);
                        const double td = now_s();
                        if (timed)
                            s.tdone.push_back(td);
                        long long bad = check_pattern(c.rbuf, c.bytes, 0, seed);
                        if (bad >= 0) {
                            failures++;
                            std::fprintf(stderr,
                                         "partbench: VERIFICATION FAILED: lib %s, %s, variant %s, "
                                         "%zu bytes, iteration %d: byte %lld is 0x%02x, expected "
                                         "0x%02x\n",
                                         o.lib.c_str(), o.config.c_str(), s.name.c_str(), c.bytes,
                                         s.it, bad, c.rbuf[bad], pattern_byte((uint64_t)bad, seed));
                            std::fflush(stderr);
                        }
                    }
                    const PvarSnap p1 = snap(mpit);
                    s.pv_ok = s.pv_ok && p0.ok && p1.ok;
                    s.wsent += wire_sent(p0, p1);
                    s.wrecvd += p1.recvd - p0.recvd;
                    s.wparts += p1.parts - p0.parts;
                    s.it++;
                };
                auto round_of = [&](int r, bool timed) {
                    for (int k = 0; k < nv; k++)
                        one_iter(vs[(r + k) % nv], timed);
                };

                // the first run of the process also warms up threads, connections and caches
                static bool first_run = true;
                const int nwarm = first_run ? std::max(o.warmup, 10) : o.warmup;
                first_run = false;
                for (int w = 0; w < nwarm; w++)
                    round_of(w, false);

                int attempts = 0, fails_seen = 0;
                for (;;) {
                    attempts++;
                    for (auto &s : vs) {
                        s.t0.clear();
                        s.cmax.clear();
                        s.tready.clear();
                        s.tdone.clear();
                    }
                    for (int i = 0; i < o.iters; i++)
                        round_of(i, true);
                    int ctl[2] = {0, 0}; // again, failures
                    if (!sender) {
                        std::vector<double> all;
                        for (auto &s : vs)
                            all.insert(all.end(), s.tdone.begin(), s.tdone.end());
                        PB_MPI(MPI_Send(all.data(), nv * o.iters, MPI_DOUBLE, 0, 7, ctrl));
                        PB_MPI(MPI_Send(&failures, 1, MPI_INT, 0, 8, ctrl));
                    } else {
                        std::vector<double> all(nv * o.iters);
                        int rf = 0;
                        PB_MPI(MPI_Recv(all.data(), nv * o.iters, MPI_DOUBLE, 1, 7, ctrl,
                                        MPI_STATUS_IGNORE));
                        PB_MPI(MPI_Recv(&rf, 1, MPI_INT, 1, 8, ctrl, MPI_STATUS_IGNORE));
                        bool all_conv = true;
                        for (int k = 0; k < nv; k++) {
                            VState &s = vs[k];
                            std::vector<double> comm_us, pb_us, raw_us, comp_us;
                            for (int i = 0; i < o.iters; i++) {
                                const double done = all[k * o.iters + i] - offset;
                                raw_us.push_back((done - s.t0[i]) * 1e6);
                                comp_us.push_back(s.cmax[i] * 1e6);
                                comm_us.push_back((done - s.t0[i] - s.cmax[i]) * 1e6);
                                pb_us.push_back((done - s.tready[i]) * 1e6);
                            }
                            if (o.dump) {
                                std::printf("    attempt %d (%s %s):", attempts, s.name.c_str(),
                                            size_str(c.bytes).c_str());
                                for (double x : comm_us)
                                    std::printf(" %.2f", x);
                                std::printf("\n    attempt %d (%s %s) after last ready:",
                                            attempts, s.name.c_str(),
                                            size_str(c.bytes).c_str());
                                for (double x : pb_us)
                                    std::printf(" %.2f", x);
                                std::printf("\n");
                            }
                            Row r;
                            r.t = stats_of(comm_us);
                            const Stats pb = stats_of(pb_us);
                            r.pb_mean_us = pb.mean;
                            r.pb_median_us = pb.median;
                            r.raw_mean_us = stats_of(raw_us).mean;
                            r.compute_mean_us = stats_of(comp_us).mean;
                            const double rel = r.t.mean > 0 ? r.t.ci95 / r.t.mean : INFINITY;
                            r.converged = rel < o.ci_target;
                            if (!s.converged && (rel < s.best_rel || r.converged)) {
                                s.best_rel = rel;
                                s.best = r;
                                s.best.attempts = attempts;
                            }
                            s.converged = s.converged || r.converged;
                            all_conv = all_conv && s.converged;
                        }
                        ctl[1] = rf;
                        ctl[0] = !all_conv && attempts < o.attempts && rf == 0;
                    }
                    PB_MPI(MPI_Bcast(ctl, 2, MPI_INT, 0, ctrl));
                    fails_seen = ctl[1];
                    if (!ctl[0])
                        break;
                }
                set_activity(std::string(act) + ": teardown (MPI_Request_free & co.)");
                for (auto &s : vs)
                    s.v->teardown(c);
                // the receiver's wire-message counts to the sender
                std::vector<unsigned long long> rd(2 * nv);
                for (int k = 0; k < nv; k++) {
                    rd[2 * k] = vs[k].wrecvd;
                    rd[2 * k + 1] = vs[k].pv_ok;
                }
                if (!sender)
                    PB_MPI(MPI_Send(rd.data(), 2 * nv, MPI_UNSIGNED_LONG_LONG, 0, 9, ctrl));
                else
                    PB_MPI(MPI_Recv(rd.data(), 2 * nv, MPI_UNSIGNED_LONG_LONG, 1, 9, ctrl,
                                    MPI_STATUS_IGNORE));
                if (sender) {
                    for (int k = 0; k < nv; k++) {
                        VState &s = vs[k];
                        Row &r = s.best;
                        r.pattern = o.pattern;
                        r.variant = s.name;
                        r.threads = o.threads;
                        r.theta = o.theta;
                        r.nparts = nparts;
                        r.bytes = c.bytes;
                        r.part_bytes = c.part_bytes;
                        r.aggr = aggr_label;
                        r.gamma = dm.gamma;
                        r.compute_us = dm.compute_us;
                        r.noise = dm.noise;
                        r.noise_pct = dm.noise_pct;
                        r.iters = o.iters;
                        r.attempts = attempts; // attempts made (the best one is reported)
                        r.verified = fails_seen == 0;
                        if (s.pv_ok && rd[2 * k + 1] && s.name.rfind("part", 0) == 0) {
                            const double n = s.it; // every iteration, warm-up included
                            r.wire_sent = fmt2((double)s.wsent / n);
                            r.wire_recvd = fmt2((double)rd[2 * k] / n);
                            r.parts_per_msg =
                                s.wsent > 0 ? fmt2((double)s.wparts / (double)s.wsent) : "n/a";
                        }
                        rec.write(r);
                    }
                }
                if (fails_seen) {
                    // stop at the first failing configuration: the exit status says it
                    std::free(sbuf);
                    std::free(rbuf);
                    MPI_Comm_free(&comm);
                    MPI_Comm_free(&ctrl);
                    return 2;
                }
            }
        }
    }
    if (has_cvar)
        mpit.cvar_write_int("MPIR_CVAR_PART_AGGR_SIZE", cur_aggr);
    std::free(sbuf);
    std::free(rbuf);
    set_activity(o.lib + " " + o.config + ": MPI_Comm_free of the run's communicators");
    PB_MPI(MPI_Comm_free(&comm));
    PB_MPI(MPI_Comm_free(&ctrl));
    return failures ? 2 : 0;
}

} // namespace

} // namespace pb

int main(int argc, char **argv)
{
    using namespace pb;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o = parse(argc, argv);
    if (size != 2)
        fatal("run with exactly 2 ranks (got %d)", size);
    if (provided != MPI_THREAD_MULTIPLE)
        fatal("MPI_THREAD_MULTIPLE is not provided (got %d)", provided);
    start_watchdog(o.timeout);
    MpiT mpit;
    mpit.init();

    char name[MPI_MAX_PROCESSOR_NAME], other[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    std::memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    MPI_Sendrecv(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - g_rank, 997, other,
                 MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - g_rank, 997, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    const bool same_host = std::strcmp(name, other) == 0;
    const double offset = clock_offset(MPI_COMM_WORLD, g_rank, same_host);

    {
        const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        const bool oversub = 2L * o.threads > ncpu;
        g_yield_wait = o.wait == "yield" || o.wait == "hybrid" || (o.wait == "auto" && oversub);
        g_yield_after_s = (o.wait == "hybrid" || o.wait == "auto") ? 100e-6 : 0;
        (void)oversub;
    }
    int rc = 0;
    {
        Team team(o.threads, o.bind, g_rank, o.spin_us);
        Recorder rec;
        rec.opt = o;
        // MPICH's view of locality: with MPIR_CVAR_NOLOCAL=1 every rank is its own node, so
        // the other rank is reached through the netmod (run.sh checks this line for tcp-*)
        MPI_Comm shm;
        int shm_ranks = 0;
        PB_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
        PB_MPI(MPI_Comm_size(shm, &shm_ranks));
        PB_MPI(MPI_Comm_free(&shm));
        write_meta(o, MPI_COMM_WORLD, team, mpit, provided, same_host, shm_ranks, &rec.oversub);
        if (g_rank == 0) {
            std::printf("partbench: %s, %s: pattern %s, %d thread(s) x %d partition(s) per "
                        "rank%s\n",
                        o.lib.c_str(), o.config.c_str(), o.pattern.c_str(), o.threads, o.theta,
                        rec.oversub ? "  [NOTE: oversubscribed: 2 ranks x threads > cores; "
                                      "timings include OS scheduling]"
                                    : "");
            std::printf("partbench: ranks in MPI_COMM_TYPE_SHARED: %d of 2\n", shm_ranks);
            std::fflush(stdout);
        }
        if (o.pattern == "halo")
            rc = run_halo(o, MPI_COMM_WORLD, rec, mpit, team);
        else if (o.pattern == "parrived")
            rc = run_parrived(o, MPI_COMM_WORLD, rec, mpit);
        else
            rc = run_pipelined(o, MPI_COMM_WORLD, rec, mpit, team, offset);
    }
    int worst = 0;
    set_activity("the final MPI_Allreduce (every measurement done)");
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
        // run.sh uses this status when MPI_Finalize had to be cut short (see below)
        std::printf("partbench: every result written; run status %d\n", worst);
        std::fflush(stdout);
    }
    set_activity("MPI_T_finalize (every measurement done)");
    mpit.fini();
    set_activity("MPI_Finalize (every measurement done)");
    start_finalize_watchdog(o.finalize_grace, worst);
    MPI_Finalize();
    if (worst == 2 && g_rank == 0)
        std::fprintf(stderr, "partbench: data verification FAILED (see above)\n");
    return worst;
}
