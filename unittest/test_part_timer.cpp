// Tests of part_timer.[ch]: the timer aggregator's per-group decisions (time passed in).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "part_timer.h"

namespace {

using Runs = std::vector<std::pair<int32_t, int32_t>>;      // {first, count}

struct Group {
    std::vector<uint8_t> state;
    MPIDI_PART_tgroup_t g;
    std::vector<MPIDI_PART_run_t> buf;

    Group(int32_t nparts, double timeout)
        : state(nparts), buf(MPIDI_PART_TG_MAX_RUNS(nparts) + 1)
    {
        MPIDI_PART_tgroup_init(&g, nparts, state.data(), timeout);
    }
    Runs collect(int32_t n) const
    {
        Runs r;
        for (int32_t i = 0; i < n; ++i)
            r.emplace_back(buf[i].first, buf[i].count);
        return r;
    }
    Runs ready(int32_t p, double now)
    {
        const int32_t n = MPIDI_PART_tgroup_ready(&g, p, now, buf.data());
        EXPECT_GE(n, 0);
        return collect(n);
    }
    Runs tick(double now)
    {
        return collect(MPIDI_PART_tgroup_tick(&g, now, buf.data()));
    }
    // Partitions 0..n-1 readied one per MPI_Pready* call (at times 0, 1, ..): the writes of
    // each call, its own and its end's (MPIDI_PART_tgroup_call_end), in order.
    Runs ready_one_by_one(int32_t n)
    {
        Runs all;
        for (int32_t p = 0; p < n; ++p) {
            Runs r = ready(p, p * 1.0);
            Runs e = collect(MPIDI_PART_tgroup_call_end(&g, buf.data()));
            all.insert(all.end(), r.begin(), r.end());
            all.insert(all.end(), e.begin(), e.end());
        }
        return all;
    }
};

// 0..n-1 in a random order.
std::vector<int32_t> shuffled(int32_t n, std::mt19937_64 &rng)
{
    std::vector<int32_t> order(n);
    for (int32_t i = 0; i < n; ++i)
        order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

}  // namespace

TEST(PartTimer, WholeGroupBeforeDeadlineGoesAsOneWrite)
{
    Group G(4, 10.0);
    EXPECT_EQ(G.ready(2, 100.0), Runs{});
    EXPECT_EQ(G.ready(0, 101.0), Runs{});
    EXPECT_EQ(G.tick(105.0), Runs{});
    EXPECT_EQ(G.ready(3, 106.0), Runs{});
    EXPECT_EQ(G.ready(1, 109.9), (Runs{{0, 4}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    EXPECT_EQ(G.tick(1000.0), Runs{});                  // nothing left to fire
}

TEST(PartTimer, NoSendBeforeDeadline)
{
    Group G(8, 50.0);
    EXPECT_EQ(G.ready(5, 0.0), Runs{});
    for (double t = 0; t < 50.0; t += 0.5) {
        EXPECT_FALSE(MPIDI_PART_tgroup_due(&G.g, t));
        EXPECT_EQ(G.tick(t), Runs{}) << t;
    }
    EXPECT_EQ(G.ready(6, 49.9), Runs{});
    EXPECT_EQ(G.g.nsent, 0);
    EXPECT_TRUE(MPIDI_PART_tgroup_due(&G.g, 50.0));
    EXPECT_EQ(G.tick(50.0), (Runs{{5, 2}}));
}

TEST(PartTimer, DeadlineFiresMaximalRunsThenTheLastGoesAtOnce)
{
    // the paper's example: {0,1,3} ready, the deadline passes -> {0-1} and {3}; then 2,
    // the group's last, goes at once
    Group G(4, 10.0);
    EXPECT_EQ(G.ready(0, 0.0), Runs{});
    EXPECT_EQ(G.ready(1, 1.0), Runs{});
    EXPECT_EQ(G.ready(3, 2.0), Runs{});
    EXPECT_EQ(G.tick(9.99), Runs{});
    EXPECT_EQ(G.tick(10.0), (Runs{{0, 2}, {3, 1}}));
    EXPECT_EQ(G.tick(11.0), Runs{});                    // fires once
    EXPECT_FALSE(MPIDI_PART_tgroup_all_sent(&G.g));
    EXPECT_EQ(G.ready(2, 500.0), (Runs{{2, 1}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
}

TEST(PartTimer, LatePartitionsCollectIntoRunsAgain)
{
    // two threads, each readying its half back to back: one write per thread
    Group G(8, 5.0);
    for (int32_t p = 0; p < 4; p++)
        EXPECT_EQ(G.ready(p, 0.1 * p), Runs{});
    EXPECT_EQ(G.tick(5.0), (Runs{{0, 4}}));
    for (int32_t p = 4; p < 7; p++)
        EXPECT_EQ(G.ready(p, 100.0 + 0.1 * p), Runs{}) << p;     // a new deadline: 105.4
    EXPECT_EQ(G.ready(7, 100.8), (Runs{{4, 4}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    // after a fire the next deadline runs from the next ready, not from the first one
    Group H(6, 10.0);
    H.ready(0, 0.0);
    EXPECT_EQ(H.tick(10.0), (Runs{{0, 1}}));
    EXPECT_EQ(H.ready(2, 50.0), Runs{});
    EXPECT_EQ(H.ready(3, 55.0), Runs{});
    EXPECT_EQ(H.tick(59.9), Runs{});
    EXPECT_EQ(H.tick(60.0), (Runs{{2, 2}}));
    EXPECT_EQ(H.ready(5, 70.0), Runs{});
    EXPECT_EQ(H.ready(1, 71.0), Runs{});
    EXPECT_EQ(H.ready(4, 72.0), (Runs{{1, 1}, {4, 2}}));  // the last: all that waits
}

TEST(PartTimer, ReadyAfterUnnoticedDeadlineFiresWithItself)
{
    // no tick between: the late ready notices the deadline and merges with its neighbours
    Group G(6, 10.0);
    G.ready(0, 0.0);
    G.ready(1, 0.0);
    G.ready(4, 3.0);
    EXPECT_EQ(G.ready(2, 20.0), (Runs{{0, 3}, {4, 1}}));
    EXPECT_EQ(G.ready(5, 21.0), Runs{});                // collects again (deadline 31)
    EXPECT_EQ(G.ready(3, 22.0), (Runs{{3, 1}, {5, 1}})); // the last: everything waiting
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    // and the group completing after an unnoticed deadline still goes as one write
    Group H(3, 10.0);
    H.ready(0, 0.0);
    H.ready(2, 1.0);
    EXPECT_EQ(H.ready(1, 30.0), (Runs{{0, 3}}));
}

TEST(PartTimer, ResetStartsANewIteration)
{
    Group G(4, 10.0);
    G.ready(0, 0.0);
    G.ready(3, 0.0);
    EXPECT_EQ(G.tick(10.0), (Runs{{0, 1}, {3, 1}}));
    MPIDI_PART_tgroup_reset(&G.g);
    EXPECT_EQ(G.g.nready, 0);
    EXPECT_EQ(G.g.nsent, 0);
    EXPECT_EQ(G.tick(1e9), Runs{});                     // no deadline without a ready
    EXPECT_EQ(G.ready(3, 100.0), Runs{});               // new deadline: 110
    EXPECT_EQ(G.tick(109.0), Runs{});
    EXPECT_EQ(G.ready(0, 109.5), Runs{});
    EXPECT_EQ(G.ready(1, 109.6), Runs{});
    EXPECT_EQ(G.ready(2, 109.7), (Runs{{0, 4}}));
}

TEST(PartTimer, Errors)
{
    Group G(3, 10.0);
    MPIDI_PART_run_t r[2];
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, -1, 0, r), MPIDI_PART_TG_EINVAL);
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 3, 0, r), MPIDI_PART_TG_EINVAL);
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 1, 0, r), 0);
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 1, 0, r), MPIDI_PART_TG_ETWICE);
    G.tick(10.0);                                       // 1 sent
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 1, 11, r), MPIDI_PART_TG_ETWICE);
}

TEST(PartTimer, ZeroTimeoutSendsOnArrivalNegativeNeverFires)
{
    Group Z(3, 0.0);
    EXPECT_EQ(Z.ready(1, 5.0), (Runs{{1, 1}}));
    EXPECT_EQ(Z.ready(0, 6.0), (Runs{{0, 1}}));
    EXPECT_EQ(Z.ready(2, 7.0), (Runs{{2, 1}}));
    Group One(1, 0.0);
    EXPECT_EQ(One.ready(0, 1.0), (Runs{{0, 1}}));
    Group N(3, -1.0);
    N.ready(0, 0.0);
    N.ready(2, 0.0);
    EXPECT_FALSE(MPIDI_PART_tgroup_due(&N.g, 1e300));
    EXPECT_EQ(N.tick(1e300), Runs{});
    EXPECT_EQ(N.ready(1, 1e300), (Runs{{0, 3}}));
}

TEST(PartTimer, RandomOrdersSendEveryPartitionExactlyOnce)
{
    std::mt19937_64 rng(5);
    for (int it = 0; it < 2000; ++it) {
        const int32_t n = 1 + (int32_t) (rng() % 40);
        Group G(n, (double) (rng() % 30));
        const std::vector<int32_t> order = shuffled(n, rng);
        std::vector<int> sent(n, 0);
        int writes = 0;
        double now = 0;
        auto account = [&](const Runs &rs) {
            for (auto [f, c] : rs) {
                ASSERT_GE(c, 1);
                writes++;
                for (int32_t p = f; p < f + c; ++p)
                    sent[p]++;
            }
        };
        for (int32_t p : order) {
            now += (double) (rng() % 5);
            account(G.tick(now));
            account(G.ready(p, now));
        }
        for (int32_t p = 0; p < n; ++p)
            ASSERT_EQ(sent[p], 1) << "it " << it << " p " << p;
        ASSERT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
        ASSERT_LE(writes, n);
    }
}

// Firing scans only the span of what waits (MPIDI_PART_tgroup_t.lo and the pending count):
// whatever the order of readies, ticks, flushes and hurries, every call that sends returns
// exactly the maximal stretches of the ready-unsent partitions, as a full scan would find.
TEST(PartTimer, FiredRunsAreTheMaximalStretchesOfWhatWaited)
{
    std::mt19937_64 rng(11);
    for (int it = 0; it < 3000; ++it) {
        const int32_t n = 1 + (int32_t) (rng() % 64);
        Group G(n, (double) (rng() % 20));
        const std::vector<int32_t> order = shuffled(n, rng);
        std::vector<uint8_t> waiting(n, 0);     // the shadow: ready, not sent
        auto stretches = [&]() {
            Runs r;
            for (int32_t p = 0; p < n;) {
                if (!waiting[p]) {
                    p++;
                    continue;
                }
                int32_t q = p;
                while (q < n && waiting[q])
                    q++;
                r.emplace_back(p, q - p);
                p = q;
            }
            return r;
        };
        auto check = [&](const Runs &got, const Runs &want) {
            if (got.empty())
                return;
            ASSERT_EQ(got, want) << "it " << it;
            for (auto [f, c] : got)
                for (int32_t p = f; p < f + c; ++p)
                    waiting[p] = 0;
        };
        double now = 0;
        for (int32_t p : order) {
            now += (double) (rng() % 6);
            switch (rng() % 4) {
            case 0:
                check(G.tick(now), stretches());
                break;
            case 1:
                check(G.collect(MPIDI_PART_tgroup_flush(&G.g, G.buf.data())), stretches());
                break;
            case 2:
                if (!G.g.hurry)
                    check(G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())), stretches());
                break;
            default:
                break;
            }
            waiting[p] = 1;
            check(G.ready(p, now), stretches());
            check(G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data())), stretches());
        }
        ASSERT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g)) << "it " << it;
        ASSERT_EQ(stretches(), Runs{}) << "it " << it;
    }
}

TEST(PartTimer, DefaultTimeoutFromTheModel)
{
    MPIDI_PART_loggp_t t{};
    t.nsegs = 2;
    t.seg[0] = {0, 1.0, 0.5, 0.7, 0.3, 1e-4, 0};
    t.seg[1] = {65536, 2.0, 4.0, 3.0, 1.0, 1e-4, 0};
    // max(g, o_s) + o_r + c, with c = o_s + o_r by default
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, -1, 1024), 0.5 + 0.7 + 1.2);
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, 16, 1024), 0.5 + 0.7 + 16);
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, -1, 1 << 20), 4.0 + 3.0 + 7.0);
    for (int which : {MPIDI_PART_LOGGP_SHM, MPIDI_PART_LOGGP_TCP}) {
        const double x = MPIDI_PART_timer_default_timeout(MPIDI_PART_loggp_builtin(which), -1,
                                                          4096);
        EXPECT_GT(x, 0);
        EXPECT_LT(x, 1e4);
    }
}

TEST(PartTimer, DefaultTimeoutAtMostTheLongestDeadline)
{
    // a parameter file may hold any finite value: L, o and g of 0.6 s give 2.4 s, whose
    // nanoseconds do not fit the engine's int32_t (they wrapped negative: timer off)
    MPIDI_PART_loggp_t t{};
    t.nsegs = 1;
    t.seg[0] = {0, 6e5, 6e5, 6e5, 6e5, 1e-4, 0};
    const double x = MPIDI_PART_timer_default_timeout(&t, -1, 1024);
    EXPECT_DOUBLE_EQ(x, MPIDI_PART_TIMER_MAX_US);
    EXPECT_LE(x * 1000.0 + 0.5, (double) INT32_MAX);
    t.seg[0] = {0, 1e300, 1e300, 1e300, 1e300, 1.0, 0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, -1, 1024), MPIDI_PART_TIMER_MAX_US);
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, 1e9, 1024), MPIDI_PART_TIMER_MAX_US);
    // below it, unchanged
    t.seg[0] = {0, 4e5, 4e5, 4e5, 4e5, 1e-4, 0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_default_timeout(&t, -1, 1024), 1.6e6);
}

TEST(PartTimer, FlushSendsWhatWaitsWhateverTheDeadline)
{
    Group G(6, 1000.0);
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_flush(&G.g, G.buf.data())), Runs{});  // nothing
    G.ready(0, 0.0);
    G.ready(1, 1.0);
    G.ready(3, 2.0);
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_flush(&G.g, G.buf.data())), (Runs{{0, 2}, {3, 1}}));
    EXPECT_FALSE(MPIDI_PART_tgroup_due(&G.g, 1e9));    // nothing waits any more
    G.ready(2, 3.0);                                    // waits again, under a new deadline
    EXPECT_EQ(G.tick(500.0), Runs{});
    EXPECT_EQ(G.ready(4, 4.0), Runs{});
    EXPECT_EQ(G.ready(5, 5.0), (Runs{{2, 1}, {4, 2}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
}

TEST(PartTimer, HurriedGroupSendsInHalvingRuns)
{
    // readied one by one, well inside the deadline: runs of 4, 2, 1, 1
    Group G(8, 1000.0);
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())), Runs{});
    EXPECT_EQ(G.ready_one_by_one(8), (Runs{{0, 4}, {4, 2}, {6, 1}, {7, 1}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    // a new iteration is not hurried
    MPIDI_PART_tgroup_reset(&G.g);
    EXPECT_EQ(G.ready(0, 0.0), Runs{});
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data())), Runs{});
}

TEST(PartTimer, HurriedRunsStayWithinTheRunCap)
{
    // 8 partitions of 2 KiB on a path whose writes are cheap up to 4 KiB: runs of 2, then
    // halving (2, 1, 1), never the 4 that halving alone sends first
    ASSERT_EQ(MPIDI_PART_timer_run_cap(4096, 2048), 2);
    Group G(8, 1000.0);
    MPIDI_PART_tgroup_set_run_cap(&G.g, MPIDI_PART_timer_run_cap(4096, 2048));
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())), Runs{});
    EXPECT_EQ(G.ready_one_by_one(8), (Runs{{0, 2}, {2, 2}, {4, 2}, {6, 1}, {7, 1}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    // the cap outlives the iteration; a group not hurried still waits for its last
    MPIDI_PART_tgroup_reset(&G.g);
    G.ready(0, 0.0);
    G.ready(1, 0.0);
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data())), Runs{});
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())), (Runs{{0, 2}}));
    // 512 B partitions in a group of 64, cap 8: stretches of 8 until halving takes over
    // (8 waiting, 8 to come), then 4, 2, 1, 1; halving alone would start with 32
    Group H(64, 1000.0);
    MPIDI_PART_tgroup_set_run_cap(&H.g, MPIDI_PART_timer_run_cap(4096, 512));
    MPIDI_PART_tgroup_hurry(&H.g, H.buf.data());
    std::vector<int32_t> counts;
    for (auto &x : H.ready_one_by_one(64))
        counts.push_back(x.second);
    EXPECT_EQ(counts, (std::vector<int32_t>{8, 8, 8, 8, 8, 8, 8, 4, 2, 1, 1}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&H.g));
}

// Two threads readying one hurried group in turn (0, 4, 1, 5, ..): the cap counts a
// stretch, not everything that waits, so the partitions do not go one by one (found by a
// review: counting what waits sent 8 writes of 1 here, no aggregation at all).
TEST(PartTimer, RunCapCountsStretchesNotWaitingPartitions)
{
    for (int32_t cap : {0, 2}) {
        Group G(8, 1000.0);
        MPIDI_PART_tgroup_set_run_cap(&G.g, cap);
        MPIDI_PART_tgroup_hurry(&G.g, G.buf.data());
        Runs all;
        for (int32_t p : {0, 4, 1, 5, 2, 6, 3, 7}) {
            Runs r = G.ready(p, 0.0);
            Runs e = G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data()));
            all.insert(all.end(), r.begin(), r.end());
            all.insert(all.end(), e.begin(), e.end());
        }
        EXPECT_EQ(all, (Runs{{0, 2}, {4, 2}, {2, 1}, {6, 1}, {3, 1}, {7, 1}})) << "cap " << cap;
        EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    }
    // a short stretch keeps waiting while a long one goes, and goes later with the rest
    Group G(12, 1000.0);
    MPIDI_PART_tgroup_set_run_cap(&G.g, 3);
    MPIDI_PART_tgroup_hurry(&G.g, G.buf.data());
    auto call = [&G](std::initializer_list<int32_t> ps) {
        Runs all;
        for (int32_t p : ps) {
            Runs r = G.ready(p, 0.0);
            all.insert(all.end(), r.begin(), r.end());
        }
        Runs e = G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data()));
        all.insert(all.end(), e.begin(), e.end());
        return all;
    };
    EXPECT_EQ(call({0, 2, 3, 4}), (Runs{{2, 3}}));      // {0} waits: 8 to come
    EXPECT_EQ(G.g.pending, 1);
    EXPECT_EQ(call({6}), Runs{});
    EXPECT_EQ(call({7}), Runs{});                       // {0}, {6, 7}: none reaches 3
    EXPECT_EQ(call({8}), (Runs{{6, 3}}));
    EXPECT_EQ(call({1}), Runs{});                       // {0, 1}: 4 to come
    EXPECT_EQ(call({5}), (Runs{{0, 2}, {5, 1}}));      // 3 waiting, 3 to come: halving
    EXPECT_EQ(call({9}), Runs{});
    EXPECT_EQ(call({10}), (Runs{{9, 2}}));
    EXPECT_EQ(call({11}), (Runs{{11, 1}}));             // the group's last
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
}

// The cap decides when a stretch goes, not how long it may be: one call that readies
// several partitions sends what waits as one run.
TEST(PartTimer, RunCapDoesNotSplitWhatOneCallReadied)
{
    Group G(8, 1000.0);
    MPIDI_PART_tgroup_set_run_cap(&G.g, 2);
    MPIDI_PART_tgroup_hurry(&G.g, G.buf.data());
    for (int32_t p = 0; p < 3; ++p)
        EXPECT_EQ(G.ready(p, 0.0), Runs{});
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data())), (Runs{{0, 3}}));
}

TEST(PartTimer, RunCapOnlyWhereTwoPartitionsFitTheEagerLimit)
{
    EXPECT_EQ(MPIDI_PART_timer_run_cap(4096, 512), 8);
    EXPECT_EQ(MPIDI_PART_timer_run_cap(4096, 1500), 2);
    EXPECT_EQ(MPIDI_PART_timer_run_cap(4096, 2049), 0);   // one per write: halving stays
    EXPECT_EQ(MPIDI_PART_timer_run_cap(4096, 65536), 0);
    EXPECT_EQ(MPIDI_PART_timer_run_cap(0, 8), 0);         // no protocol step known
    EXPECT_EQ(MPIDI_PART_timer_run_cap(4096, 0), 0);
    EXPECT_EQ(MPIDI_PART_timer_run_cap(INT64_MAX, 1), INT32_MAX);
    // set_run_cap: below 2 is no cap
    std::vector<uint8_t> st(4);
    MPIDI_PART_tgroup_t g;
    MPIDI_PART_tgroup_init(&g, 4, st.data(), 10.0);
    EXPECT_EQ(g.run_cap, 0);
    MPIDI_PART_tgroup_set_run_cap(&g, 1);
    EXPECT_EQ(g.run_cap, 0);
    MPIDI_PART_tgroup_set_run_cap(&g, -5);
    EXPECT_EQ(g.run_cap, 0);
    MPIDI_PART_tgroup_set_run_cap(&g, 3);
    EXPECT_EQ(g.run_cap, 3);
}

TEST(PartTimer, HurryWithAllButOneWaitingSendsThemAtOnce)
{
    Group G(4, 1000.0);
    G.ready(1, 0.0);
    G.ready(2, 0.0);
    G.ready(3, 0.0);
    EXPECT_EQ(G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())), (Runs{{1, 3}}));
    EXPECT_EQ(G.ready(0, 5.0), (Runs{{0, 1}}));        // the group's last: at once
    // less waiting than to come: nothing yet
    Group H(6, 1000.0);
    H.ready(0, 0.0);
    EXPECT_EQ(H.collect(MPIDI_PART_tgroup_hurry(&H.g, H.buf.data())), Runs{});
    H.ready(4, 1.0);
    EXPECT_EQ(H.collect(MPIDI_PART_tgroup_call_end(&H.g, H.buf.data())), Runs{});
    H.ready(5, 2.0);                                    // 3 waiting, 3 to come
    EXPECT_EQ(H.collect(MPIDI_PART_tgroup_call_end(&H.g, H.buf.data())),
              (Runs{{0, 1}, {4, 2}}));
}

TEST(PartTimer, HurryRuleNeedsTheLastIncompleteGroup)
{
    Group G(4, 10.0);
    EXPECT_TRUE(MPIDI_PART_timer_hurry(&G.g, 4));    // the last incomplete group, one of many
                                                     // or the only one (the whole operation)
    EXPECT_FALSE(MPIDI_PART_timer_hurry(&G.g, 0));   // nothing left to ready
    G.ready(0, 0.0);
    EXPECT_TRUE(MPIDI_PART_timer_hurry(&G.g, 3));
    MPIDI_PART_tgroup_hurry(&G.g, G.buf.data());
    EXPECT_FALSE(MPIDI_PART_timer_hurry(&G.g, 3));   // not twice
    Group N(4, -1.0);                                // plain PLogGP: waits for all
    N.ready(0, 0.0);
    EXPECT_FALSE(MPIDI_PART_timer_hurry(&N.g, 3));
    EXPECT_FALSE(MPIDI_PART_timer_hurry(&N.g, 1));
}

// A single group readied one partition per call, back to back: hurried from the first
// call, it goes in halving runs, so when its last partition is readied only one
// partition's write was posted by the call before (the rule before sent 7 of 8 as one
// write just before the 8th).
TEST(PartTimer, SingleGroupReadiedOneByOneGoesInHalvingRuns)
{
    Group G(8, 1000.0);
    Runs sent;
    for (int32_t p = 0; p < 8; ++p) {
        for (auto &r : G.ready(p, 0.0))
            sent.push_back(r);
        if (p == 0) {
            ASSERT_TRUE(MPIDI_PART_timer_hurry(&G.g, 7));
            for (auto &r : G.collect(MPIDI_PART_tgroup_hurry(&G.g, G.buf.data())))
                sent.push_back(r);
        } else {
            for (auto &r : G.collect(MPIDI_PART_tgroup_call_end(&G.g, G.buf.data())))
                sent.push_back(r);
        }
    }
    EXPECT_EQ(sent, (Runs{{0, 4}, {4, 2}, {6, 1}, {7, 1}}));
}

TEST(PartTimer, GroupRecordsTheSpreadOfItsReadies)
{
    Group G(3, 1000.0);
    EXPECT_LT(G.g.spread, 0);
    G.ready(1, 10.0);
    G.ready(0, 12.5);
    EXPECT_LT(G.g.spread, 0);                           // not whole yet
    G.ready(2, 30.0);
    EXPECT_DOUBLE_EQ(G.g.spread, 20.0);
    MPIDI_PART_tgroup_reset(&G.g);
    EXPECT_LT(G.g.spread, 0);
    G.ready(0, 100.0);
    G.ready(1, 100.0);
    G.ready(2, 101.0);
    EXPECT_DOUBLE_EQ(G.g.spread, 1.0);
}

TEST(PartTimer, OnlyTheCallCompletingABegunGroupMayGoUntimed)
{
    Group G(3, 5.0);
    EXPECT_TRUE(MPIDI_PART_tgroup_timed(&G.g));         // the first sets the deadline
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 0, MPIDI_PART_TG_UNTIMED, G.buf.data()),
              MPIDI_PART_TG_ETIME);
    EXPECT_EQ(G.ready(0, 10.0), Runs{});
    EXPECT_TRUE(MPIDI_PART_tgroup_timed(&G.g));         // a middle one checks the deadline
    EXPECT_EQ(MPIDI_PART_tgroup_ready(&G.g, 2, MPIDI_PART_TG_UNTIMED, G.buf.data()),
              MPIDI_PART_TG_ETIME);
    EXPECT_EQ(G.ready(2, 11.0), Runs{});
    EXPECT_FALSE(MPIDI_PART_tgroup_timed(&G.g));        // the last: everything goes
    EXPECT_EQ(G.ready(1, MPIDI_PART_TG_UNTIMED), (Runs{{0, 3}}));
    EXPECT_TRUE(MPIDI_PART_tgroup_all_sent(&G.g));
    EXPECT_LT(G.g.spread, 0);                           // not known yet
    MPIDI_PART_tgroup_end(&G.g, 14.5);
    EXPECT_DOUBLE_EQ(G.g.spread, 4.5);
    MPIDI_PART_tgroup_end(&G.g, 99.0);                  // once
    EXPECT_DOUBLE_EQ(G.g.spread, 4.5);

    // after a deadline fired: the last partition goes alone, untimed, as timed
    MPIDI_PART_tgroup_reset(&G.g);
    MPIDI_PART_tgroup_end(&G.g, 20.0);                  // not whole: nothing
    EXPECT_LT(G.g.spread, 0);
    EXPECT_EQ(G.ready(1, 20.0), Runs{});
    EXPECT_EQ(G.ready(0, 26.0), (Runs{{0, 2}}));        // noticed the deadline (25)
    EXPECT_EQ(G.ready(2, MPIDI_PART_TG_UNTIMED), (Runs{{2, 1}}));
    MPIDI_PART_tgroup_end(&G.g, 30.0);
    EXPECT_DOUBLE_EQ(G.g.spread, 10.0);

    // a group of one partition: its only call is its first, always timed
    Group One(1, 5.0);
    EXPECT_TRUE(MPIDI_PART_tgroup_timed(&One.g));
    EXPECT_EQ(One.ready(0, 7.0), (Runs{{0, 1}}));
    EXPECT_DOUBLE_EQ(One.g.spread, 0.0);
}

TEST(PartTimer, AdaptiveDeadlineIsTheMedianSpreadWithinBaseAndCapOrHalfTheWindow)
{
    std::vector<double> v;
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 0, 3.0, 100.0, 0.0), 3.0);   // nothing seen
    v = {10.0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 1, 3.0, 100.0, 0.0), 10.0);
    v = {10.0, 1000.0, 12.0};                           // one laggard group: outvoted
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 0.0), 12.0);
    v = {10.0, 20.0, 1000.0, 12.0};                     // even: mean of 12 and 20
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 4, 3.0, 100.0, 0.0), 16.0);
    v = {0.1, 0.2, 0.3};                                // below base
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 0.0), 3.0);
    v = {190.0, 195.0, 199.0};                          // above cap
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 0.0), 100.0);
    // the operation's window: the cap rises to half of it, never falls below cap
    v = {190.0, 195.0, 199.0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 150.0), 100.0);
    v = {190.0, 195.0, 199.0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 300.0), 150.0);
    v = {190.0, 195.0, 199.0};
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 1000.0), 195.0);
    v = {0.1, 0.2, 0.3};                                // the base still holds
    EXPECT_DOUBLE_EQ(MPIDI_PART_timer_adapt(v.data(), 3, 3.0, 100.0, 1000.0), 3.0);
    // random inputs with ties against a sorted reference
    std::mt19937 rng(7);
    for (int round = 0; round < 2000; ++round) {
        const int n = 1 + (int) (rng() % 64);
        std::vector<double> x(n);
        for (auto &e : x)
            e = (double) (rng() % 50);
        std::vector<double> s = x;
        std::sort(s.begin(), s.end());
        const double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
        const double window = (double) (rng() % 120);
        const double want = std::min(std::max(med, 2.0), std::max(40.0, window / 2));
        ASSERT_DOUBLE_EQ(MPIDI_PART_timer_adapt(x.data(), n, 2.0, 40.0, window), want) << round;
    }
}
