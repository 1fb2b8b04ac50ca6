// part_calibrate: measure LogGP parameters between two MPI ranks with the parametrised
// round-trip method of Netgauge's LogGP pattern (Hoefler, Lichei, Rehm, PMEO'07), and write
// them in the parameter-file format of src/mpid/ch4/netmod/part/part_ploggp.h.
//
// PRTT(n,d,s): rank 0 (client) sends n messages of s bytes, busy-waiting d us after each of
// the first n-1 sends; rank 1 (server) receives them and answers with one message of s
// bytes; PRTT is the client's time from the first send to the answer (median over
// repetitions). Per size s:
//   g + G*s = (PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)     fitted piecewise by least squares
//   o_s(s)  = (PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d  with d = PRTT(1,0,s)
//   o_r(s)  = mean time of one MPI_Recv on the server when the message is already there
//             (the server busy-waits 2d before each receive of a d-spaced stream)
//   L(s)    = PRTT(1,0,s)/2 - o_s(s) - o_r(s) - G*s, clamped at >= 0
//   S(s)    = the sender's unhidden time (MPI messages only): MPI_Isend, a gap of
//             2 PRTT(1,0,s) without MPI calls while the server waits in MPI_Recv, MPI_Wait;
//             the two calls' time (median). What the receiver's progress does during the gap
//             is hidden (a shared-memory rendezvous: 0.4-1.5 us up to 4 MiB); what waits for
//             the sender's progress is not (UCX over TCP: the whole rendezvous, ~65 us at
//             8 KiB, ~210 us at 1 MiB). The observed chooser charges it to the sending threads.
// The file gets one segment per measured size (min_bytes = s, its own L, o_s, o_r, the g, G
// of the fitted piece that holds s, and S with MPI messages), so a lookup finds the nearest
// measured size below.
// Where o_s + o_r steps up between two listed sizes (a protocol switch), the step is
// located by bisection and the sizes on either side of it added (refine_switches; -R turns
// this off).
//
// By default the messages are plain MPI_Send/MPI_Recv: run against any MPI, it measures
// that MPI's transport (the tag transport's path). With -f PROVIDER they are libfabric
// RDMA writes with immediate data (fi_writedata into the partner's registered buffer, seen
// as a completion with remote CQ data: the RDMA transport's path, ofi_link.cpp); "a
// message is there" then means its completion was read, and o_r is the time to read it.
//   mpiexec -n 2 ./part_calibrate -o /tmp/shm.loggp -t shm
//   mpiexec -n 2 ./part_calibrate -o /tmp/shm.loggp -a -t rdma-shm -f shm
#include <mpi.h>

#include "loggp_fit.hpp"
#include "ofi_link.hpp"
#include "part_ploggp.h"        // MPIDI_PART_loggp_parse, the name limit: what the engine reads

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

enum Tag { TAG_CTRL = 1, TAG_DATA, TAG_REPLY, TAG_RESULT };
enum Cmd { CMD_RUN = 1, CMD_STOP };

constexpr int kMaxSizes = 16;   // MPIDI_PART_LOGGP_MAX_SEGS

struct Ctrl {                   // what the server does in the next phase
    int32_t cmd;
    int32_t n;                  // messages per round
    int32_t rounds;             // warm-up + measured rounds
    int32_t warmup;             // rounds not counted
    int64_t bytes;
    double wait_us;             // server: busy-wait before each receive after the first
};

struct Options {
    std::string out, transport = "default";
    std::string provider;       // -f: libfabric provider (empty: MPI messages)
    std::vector<int64_t> sizes;
    int n = 10, reps = 25;
    double warm_us = 20000;     // warm-up budget per phase (MPICH runs its first ~60 round
                                // trips of a phase several us slower on shared memory)
    bool append = false;
    bool refine = true;         // locate protocol switches (refine_switches)
};

using calib::Point;

double now_us()
{
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

void spin_us(double us)
{
    const double end = now_us() + us;
    while (now_us() < end) {
    }
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// ---- the two roles -----------------------------------------------------------------------

std::unique_ptr<calib::Link> link;      // the messages timed (MPI or libfabric)

// Plain MPI_Send / MPI_Recv of the first `bytes` of a buffer.
class MpiLink : public calib::Link {
  public:
    MpiLink(int partner, int send_tag, int recv_tag, int64_t max_bytes)
        : partner_(partner), send_tag_(send_tag), recv_tag_(recv_tag),
          sbuf_((size_t) max_bytes + 1, 'x'), rbuf_((size_t) max_bytes + 1, 0)
    {
    }
    void send(int64_t bytes) override
    {
        MPI_Send(sbuf_.data(), (int) bytes, MPI_BYTE, partner_, send_tag_, MPI_COMM_WORLD);
    }
    void recv(int64_t bytes) override
    {
        MPI_Recv(rbuf_.data(), (int) bytes, MPI_BYTE, partner_, recv_tag_, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    std::string describe() const override { return "MPI_Send/MPI_Recv"; }
    bool times_unhidden() const override { return true; }
    double unhidden_send(int64_t bytes, double gap_us) override
    {
        MPI_Request req;
        const double t0 = now_us();
        MPI_Isend(sbuf_.data(), (int) bytes, MPI_BYTE, partner_, send_tag_, MPI_COMM_WORLD,
                  &req);
        const double t1 = now_us();
        spin_us(gap_us);
        const double t2 = now_us();
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        return (t1 - t0) + (now_us() - t2);
    }

  private:
    int partner_, send_tag_, recv_tag_;
    std::vector<char> sbuf_, rbuf_;
};

// Client: one PRTT round in microseconds.
double client_round(int n, double d, int64_t s)
{
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) {
        link->send(s);
        if (d > 0 && i + 1 < n)
            spin_us(d);
    }
    link->recv(s);
    return now_us() - t0;
}

// Client: tells the server the next phase (rounds of n messages of s bytes) and returns it.
// est: a guess of one round's time, for the warm-up (between 3 and 200 rounds, about
// opt.warm_us), then opt.reps measured rounds.
Ctrl start_phase(const Options & opt, int n, int64_t s, double server_wait, double est)
{
    const int warmup = (int) std::clamp(opt.warm_us / std::max(est, 0.01), 3.0, 200.0);
    Ctrl c{CMD_RUN, n, warmup + opt.reps, warmup, s, server_wait};
    MPI_Send(&c, sizeof c, MPI_BYTE, 1, TAG_CTRL, MPI_COMM_WORLD);
    return c;
}

// Client: median PRTT(n,d,s) (est: start_phase's). With server_wait > 0 the server times
// its receives and sends the median receive time back; it is returned in *o_r.
double prtt(const Options & opt, int n, double d, int64_t s, double est,
            double server_wait = 0, double *o_r = nullptr)
{
    const Ctrl c = start_phase(opt, n, s, server_wait, est);
    const int warmup = c.warmup;
    std::vector<double> t;
    for (int r = 0; r < c.rounds; ++r) {
        const double x = client_round(n, d, s);
        if (r >= warmup)
            t.push_back(x);
    }
    double res = 0;
    MPI_Recv(&res, 1, MPI_DOUBLE, 1, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (o_r)
        *o_r = res;
    return median(t);
}

void server()
{
    for (;;) {
        Ctrl c;
        MPI_Recv(&c, sizeof c, MPI_BYTE, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (c.cmd == CMD_STOP)
            return;
        std::vector<double> per_recv;
        for (int r = 0; r < c.rounds; ++r) {
            double acc = 0;
            link->recv(c.bytes);
            for (int i = 1; i < c.n; ++i) {
                if (c.wait_us > 0)
                    spin_us(c.wait_us);
                const double t0 = now_us();
                link->recv(c.bytes);
                acc += now_us() - t0;
            }
            link->send(c.bytes);
            if (r >= c.warmup && c.n > 1)
                per_recv.push_back(acc / (c.n - 1));
        }
        const double res = per_recv.empty() ? 0.0 : median(per_recv);
        MPI_Send(&res, 1, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
    }
}

// Client: median S(s) (the header), or 0 when the link does not time it. The server
// receives one message per round and answers it.
double unhidden(const Options & opt, int64_t s, double gap)
{
    if (!link->times_unhidden())
        return 0;
    const Ctrl c = start_phase(opt, 1, s, 0, 3 * gap / 2);
    const int warmup = c.warmup;
    std::vector<double> t;
    for (int r = 0; r < c.rounds; ++r) {
        const double x = link->unhidden_send(s, gap);
        link->recv(s);
        if (r >= warmup)
            t.push_back(x);
    }
    double res = 0;
    MPI_Recv(&res, 1, MPI_DOUBLE, 1, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return median(t);
}

// All of one size's round trips (the header's formulas; L and the fitted g, G come later).
Point measure(const Options & opt, int64_t s)
{
    Point p{};
    p.s = s;
    const int n = opt.n;
    const double guess = 1.0 + (double) s * 1e-3;      // about 1 GB/s
    p.prtt1 = prtt(opt, 1, 0, s, guess);
    p.prttn = prtt(opt, n, 0, s, n * p.prtt1);
    const double d = p.prtt1;
    p.prttnd = prtt(opt, n, d, s, n * 2 * d);
    prtt(opt, n, d, s, n * 3 * d, 2 * d, &p.orr);
    p.gall = (p.prttn - p.prtt1) / (n - 1);
    p.os = std::max(0.0, (p.prttnd - p.prtt1) / (n - 1) - d);
    p.S = unhidden(opt, s, 2 * d);
    return p;
}

// ---- protocol switches -------------------------------------------------------------------
// Between two listed sizes, the MPI may change protocol (eager to rendezvous, an inline copy
// to a copy by system call or a registration). A model that used the smaller size's segment
// up to the larger size would then see the cheap protocol where the expensive one runs. A
// step shows in the per-message overhead o_s + o_r (MPICH's shared memory at 8256 bytes) or
// in the round trip PRTT(1,0,s) (libfabric shm at 4097 bytes); calib::step_candidate says
// which bracket grows enough in either to look. The lower end is measured again first (the
// lower of two: noise only adds time; below 64 KiB always, above only where it grows), and
// where a bracket passes it is bisected on that quantity (a midpoint belongs to the upper
// side when its value, the lower of two measurements, is above calib::step_split) down to
// one byte below 64 KiB (1/1024 of the size above). Then both ends are measured again, up
// to kConfirm times keeping the lower values (a busy machine can slow several
// measurements in a row), and it is a switch when calib::step_confirmed holds across that
// narrow bracket; a slope (large rendezvous messages, whose overhead includes the transfer)
// does not. Both ends of a switch become segments, the upper one being the first size that
// pays the expensive protocol. Within the 16 segments of a file.

constexpr int kConfirm = 4;
constexpr int kLocate = 2;

Point lower_of_two(const Options & opt, const Point & p, calib::Step k)
{
    const Point q = measure(opt, p.s);
    return calib::step_value(q, k) < calib::step_value(p, k) ? q : p;
}

const char *step_name(calib::Step k)
{
    return k == calib::Step::RoundTrip ? "round trip" : "o_s + o_r";
}

// One kind's bisection of the bracket [lo, hi] (lo measured again) and its confirmation;
// lo and hi end as the narrow bracket. Whether it is a switch.
bool locate(const Options & opt, calib::Step k, Point & lo, Point & hi)
{
    const double split = calib::step_split(lo, hi, k);
    const int64_t res = lo.s < 65536 ? 1 : lo.s / 1024;
    while (hi.s - lo.s > res) {
        const Point q = lower_of_two(opt, measure(opt, lo.s + (hi.s - lo.s) / 2), k);
        (calib::step_value(q, k) > split ? hi : lo) = q;
    }
    for (int confirm = 0; confirm < kConfirm; ++confirm) {
        lo = lower_of_two(opt, lo, k);
        hi = lower_of_two(opt, hi, k);
        if (calib::step_confirmed(lo, hi, k))
            return true;
    }
    return false;
}

void refine_switches(const Options & opt, std::vector<Point> & pts)
{
    for (size_t i = 0; i + 1 < pts.size(); ++i) {
        Point lo = pts[i], hi = pts[i + 1];
        Point miss_lo{}, miss_hi{};
        std::optional<calib::Step> found, missed;
        // each kind that makes the bracket a candidate is bisected in turn, the whole search
        // up to kLocate times: one misplaced midpoint ends a bisection beside the switch
        // (4097 -> 4098, 5404 -> 5405 in 2 of 42 runs of libfabric shm), and a bracket
        // whose overhead doubled without a switch (a slow phase of the lower end) once
        // kept the round trip's step from being looked for
        for (int attempt = 0; attempt < kLocate && !found; ++attempt) {
            for (calib::Step kind : {calib::Step::Overhead, calib::Step::RoundTrip}) {
                // the lower end measured again before deciding: a noisy lower end can hide
                // a step (libfabric shm's 4096 -> 4097 read 2.0 -> 3.0 us, not a candidate,
                // in one run of three; on 2026-11-29 it showed only in the round trip) and
                // would misplace the midpoints
                if (!calib::step_applies(pts[i + 1], kind) ||
                    (pts[i].s >= 65536 &&
                     calib::step_value(pts[i + 1], kind) <= calib::step_value(pts[i], kind)))
                    continue;
                Point l = lower_of_two(opt, pts[i], kind), h = pts[i + 1];
                if (!calib::step_candidate(l, h, kind))
                    continue;
                if (locate(opt, kind, l, h)) {
                    lo = l;
                    hi = h;
                    found = kind;
                    break;
                }
                missed = kind;
                miss_lo = l;
                miss_hi = h;
            }
        }
        if (!found) {
            if (missed)
                std::printf("no protocol switch between %lld and %lld bytes: the %s grows "
                            "with the size (%lld -> %lld bytes: %.3f -> %.3f us)\n",
                            (long long) pts[i].s, (long long) pts[i + 1].s, step_name(*missed),
                            (long long) miss_lo.s, (long long) miss_hi.s,
                            calib::step_value(miss_lo, *missed),
                            calib::step_value(miss_hi, *missed));
            continue;
        }
        const calib::Step k = *found;
        std::vector<Point> add;     // an end that is a listed size keeps its lower value
        if (lo.s != pts[i].s)
            add.push_back(lo);
        else
            pts[i] = lo;
        if (hi.s != pts[i + 1].s)
            add.push_back(hi);
        else
            pts[i + 1] = hi;
        if (pts.size() + add.size() > (size_t) kMaxSizes) {
            std::printf("protocol switch between %lld and %lld bytes not kept: at most %d "
                        "sizes\n", (long long) lo.s, (long long) hi.s, kMaxSizes);
            continue;
        }
        std::printf("protocol switch between %lld and %lld bytes (%s %.3f -> %.3f us)\n",
                    (long long) lo.s, (long long) hi.s, step_name(k),
                    calib::step_value(lo, k), calib::step_value(hi, k));
        pts.insert(pts.begin() + (long) i + 1, add.begin(), add.end());
        i += add.size();
    }
}

// (the piecewise fit of g + G*s, L and the file's text: loggp_fit.cpp)

// ---- options and output ------------------------------------------------------------------

void usage()
{
    std::fprintf(stderr,
                 "usage: mpiexec -n 2 part_calibrate [-o FILE] [-a] [-t NAME] [-f PROVIDER]\n"
                 "                                   [-n N] [-r REPS] [-s SIZE,SIZE,...] [-R]\n"
                 "  -o FILE  write the parameter file (default: only print the table)\n"
                 "  -a       append to FILE instead of replacing it\n"
                 "  -t NAME  transport name of the 'transport' header line (default: default;\n"
                 "           the engine reads shm, net, rdma-shm and rdma-net)\n"
                 "  -f PROV  time libfabric RDMA writes with immediate data over provider PROV\n"
                 "           (shm, tcp;ofi_rxm, verbs;ofi_rxm, ...) instead of MPI messages\n"
                 "  -n N     messages per PRTT(n,*,s) round (default 10)\n"
                 "  -r REPS  measured rounds per value, the median is kept (default 25)\n"
                 "  -s LIST  message sizes in bytes, ascending, at most %d\n"
                 "           (default 8,16,64,256,1K,4K,16K,64K,256K,1M,4M)\n"
                 "  -R       only the listed sizes (by default a protocol switch between two of\n"
                 "           them is located and its two ends added, within %d sizes)\n",
                 kMaxSizes, kMaxSizes);
}

bool parse_sizes(const char *arg, std::vector<int64_t> & out)
{
    out.clear();
    for (const char *p = arg; *p;) {
        char *end;
        long long v = std::strtoll(p, &end, 10);
        if (end == p || v < 0 || v > (1LL << 30))
            return false;
        if (*end == 'K' || *end == 'k')
            v <<= 10, ++end;
        else if (*end == 'M' || *end == 'm')
            v <<= 20, ++end;
        if (v > (1LL << 30))    // the limit holds for the size, not the number before K/M
            return false;
        if (!out.empty() && v <= out.back())
            return false;
        out.push_back(v);
        if (*end == ',')
            ++end;
        else if (*end)
            return false;
        p = end;
    }
    return !out.empty() && out.size() <= (size_t) kMaxSizes;
}

// a decimal integer in lo..hi, all of arg
bool parse_int(const char *arg, int lo, int hi, int &out)
{
    char *end;
    errno = 0;
    const long v = std::strtol(arg, &end, 10);
    if (end == arg || *end || errno || v < lo || v > hi)
        return false;
    out = (int) v;
    return true;
}

// Options, or an empty string; otherwise what is wrong with them (printed by rank 0)
std::string parse_options(int argc, char **argv, Options & o)
{
    parse_sizes("8,16,64,256,1K,4K,16K,64K,256K,1M,4M", o.sizes);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (a == "-a")
            o.append = true;
        else if (a == "-R")
            o.refine = false;
        else if (a == "-o" && has)
            o.out = argv[++i];
        else if (a == "-t" && has)
            o.transport = argv[++i];
        else if (a == "-f" && has)
            o.provider = argv[++i];
        else if (a == "-n" && has) {
            if (!parse_int(argv[++i], 2, 100000, o.n))
                return "-n " + std::string(argv[i]) + ": not a number of messages in 2..100000";
        } else if (a == "-r" && has) {
            if (!parse_int(argv[++i], 1, 100000, o.reps))
                return "-r " + std::string(argv[i]) + ": not a number of rounds in 1..100000";
        } else if (a == "-s" && has) {
            if (!parse_sizes(argv[++i], o.sizes))
                return "-s " + std::string(argv[i]) + ": not a list of ascending sizes of at "
                    "most 1G (1073741824) bytes, at most " + std::to_string(kMaxSizes) +
                    " of them";
        } else {
            const bool takes = a == "-o" || a == "-t" || a == "-f" || a == "-n" || a == "-r" ||
                a == "-s";
            return "'" + a + "'" + (takes ? ": needs a value" : ": unknown option");
        }
    }
    // the name as the engine's parser reads it (one word, no '#', shorter than its limit)
    if (o.transport.empty() || o.transport.find_first_of(" \t#") != std::string::npos ||
        o.transport.size() >= MPIDI_PART_LOGGP_NAME_MAX)
        return "-t " + o.transport + ": a transport name is one word without '#', at most " +
            std::to_string(MPIDI_PART_LOGGP_NAME_MAX - 1) + " characters";
    return "";
}

// Before measuring: the output file can be written, and -a does not add a table the file
// has already (the engine refuses a file with the same table twice). Empty: fine.
std::string check_output(const Options & o)
{
    if (o.out.empty())
        return "";
    if (o.append) {
        if (FILE *f = std::fopen(o.out.c_str(), "r")) {
            std::string text;
            char chunk[4096];
            size_t got;
            while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0)
                text.append(chunk, got);
            std::fclose(f);
            MPIDI_PART_loggp_t t;
            int line = 0;
            if (MPIDI_PART_loggp_parse(text.c_str(), o.transport.c_str(), &t, &line) !=
                MPIDI_PART_LOGGP_ENOTFOUND)
                return "-a -t " + o.transport + ": " + o.out + " has a table of that name "
                    "already, or does not parse (the engine would refuse it)";
        }
    }
    FILE *f = std::fopen(o.out.c_str(), "a");   // creates it; writes nothing
    if (!f)
        return o.out + ": " + std::strerror(errno);
    std::fclose(f);
    return "";
}

// prints the table; writes the file when -o names one. false: it could not be written.
bool report(const Options & o, const std::vector<Point> & p, const std::vector<size_t> & starts,
            const std::string & cmdline)
{
    std::printf("%10s %10s %10s %10s %9s %9s %9s %9s %9s   piece: g [us]  G [us/B]\n",
                "bytes", "PRTT1", "PRTTn", "PRTTnd", "g+Gs", "o_s", "o_r", "L", "S");
    for (size_t i = 0; i < p.size(); ++i) {
        const bool first = std::find(starts.begin(), starts.end(), i) != starts.end();
        std::printf("%10lld %10.3f %10.3f %10.3f %9.3f %9.3f %9.3f %9.3f %9.3f",
                    (long long) p[i].s, p[i].prtt1, p[i].prttn, p[i].prttnd, p[i].gall, p[i].os,
                    p[i].orr, p[i].L, p[i].S);
        if (first)
            std::printf("   %9.4f  %.4e", p[i].g, p[i].G);
        std::printf("\n");
    }
    if (o.out.empty())
        return true;
    FILE *f = std::fopen(o.out.c_str(), o.append ? "a" : "w");
    if (!f) {
        std::perror(o.out.c_str());
        return false;
    }
    char date[32], ver[MPI_MAX_LIBRARY_VERSION_STRING];
    const std::time_t t = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&t));
    int len = 0;
    MPI_Get_library_version(ver, &len);
    for (char *c = ver; *c; ++c)
        if (*c == '\n')
            *c = ' ';
    char load[64] = "unknown";
    if (FILE *la = std::fopen("/proc/loadavg", "r")) {  // interference shows in the numbers
        if (!std::fgets(load, sizeof load, la))
            std::strcpy(load, "unknown");
        load[std::strcspn(load, "\n")] = 0;
        std::fclose(la);
    }
    std::fprintf(f, "# part_calibrate %s, n=%d, %d rounds (median), load average %s\n"
                 "# %s\n# MPI: %.100s\n# messages: %s\n", date, o.n, o.reps, load,
                 cmdline.c_str(), ver, link->describe().c_str());
    calib::write_table(f, o.transport, p);
    const bool bad = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || bad) {     // a full disk shows here (/dev/full)
        std::fprintf(stderr, "part_calibrate: writing %s failed: %s\n", o.out.c_str(),
                     std::strerror(errno));
        return false;
    }
    std::printf("wrote %s (transport %s)\n", o.out.c_str(), o.transport.c_str());
    return true;
}

void run(const Options & opt, int rank, int argc, char **argv, int &bad);

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options opt;
    std::string why = parse_options(argc, argv, opt);
    if (why.empty() && size < 2)
        why = "part_calibrate needs 2 ranks";
    if (why.empty() && rank == 0)
        why = check_output(opt);
    int bad = !why.empty();     // rank 0's output check decides for all
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) {
        if (rank == 0) {
            usage();
            std::fprintf(stderr, "part_calibrate: %s\n", why.c_str());
        }
        MPI_Finalize();
        return 2;
    }
    const int64_t max_bytes = opt.sizes.back();
    int link_bad = 0;
    try {
        if (rank >= 2) {
            // ranks beyond the first two only take part in the collective calls
        } else if (opt.provider.empty()) {
            link = std::make_unique<MpiLink>(1 - rank, rank == 0 ? TAG_DATA : TAG_REPLY,
                                             rank == 0 ? TAG_REPLY : TAG_DATA, max_bytes);
        } else {
#ifdef PART_CALIBRATE_OFI
            link = calib::make_ofi_link(opt.provider, 1 - rank, max_bytes);
#else
            throw std::runtime_error("built without libfabric (make OFI=1)");
#endif
        }
    } catch (const std::exception &e) {    // bad_alloc of the buffers too
        std::fprintf(stderr, "part_calibrate [%d]: %s%s: %s\n", rank,
                     opt.provider.empty() ? "MPI messages" : "-f ", opt.provider.c_str(),
                     e.what());
        link_bad = 1;
    }
    // every rank learns it (a third rank waited in a barrier for two that had finalized)
    MPI_Allreduce(MPI_IN_PLACE, &link_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (link_bad) {
        link.reset();
        MPI_Finalize();
        return 1;
    }

    // an error while measuring (a completion error of the link) ends the whole job: the
    // partner waits in a call that would never return
    try {
        run(opt, rank, argc, argv, bad);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "part_calibrate [%d]: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);       // both done timing before either closes its endpoint
    link.reset();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return bad ? 1 : 0;
}

namespace {

// the measurement: rank 1 serves, rank 0 measures, fits and reports (bad = 1: the file
// could not be written)
void run(const Options & opt, int rank, int argc, char **argv, int &bad)
{
    if (rank == 1)
        server();
    if (rank == 0) {
        std::vector<Point> pts;
        for (int64_t s : opt.sizes)
            pts.push_back(measure(opt, s));
        if (opt.refine)
            refine_switches(opt, pts);
        Ctrl stop{CMD_STOP, 0, 0, 0, 0, 0};
        MPI_Send(&stop, sizeof stop, MPI_BYTE, 1, TAG_CTRL, MPI_COMM_WORLD);
        std::vector<size_t> starts;
        calib::fit_pieces(pts, starts);
        calib::derive_latency(pts);
        std::string cmd;        // the environment that selects the transport, then argv
        for (const char *v : {"MPIR_CVAR_NOLOCAL", "MPIR_CVAR_CH4_NETMOD", "UCX_TLS",
                              "UCX_NET_DEVICES", "FI_PROVIDER"})
            if (const char *e = std::getenv(v))
                cmd += std::string(v) + "=" + e + " ";
        cmd += "mpiexec -n 2";
        for (int i = 0; i < argc; ++i)
            cmd += std::string(" ") + argv[i];
        if (!report(opt, pts, starts, cmd))
            bad = 1;
    }
}

}  // namespace
