// Tests of MPIDI_PART_plan_vci: which VCI carries a wire message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include "part_plan.h"

namespace {

MPIDI_PART_plan_t make(int32_t s, int32_t r, int64_t total, int64_t aggr, int32_t max_msgs)
{
    MPIDI_PART_plan_t plan{-1, -1, -1};
    EXPECT_EQ(MPIDI_PART_plan_make(s, r, total, aggr, max_msgs, &plan), MPIDI_PART_PLAN_OK);
    return plan;
}

}  // namespace

TEST(PlanVci, SingleVciAlwaysZero)
{
    const MPIDI_PART_plan_t plan = make(32, 32, 32 * 64, 0, 1 << 20);
    for (int32_t m = 0; m < plan.nmsgs; ++m) {
        for (int32_t ppt : {0, 1, 4, 8, 100}) {
            EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 1, ppt), 0);
            EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 0, ppt), 0);
        }
    }
}

TEST(PlanVci, RoundRobinWithoutHint)
{
    const MPIDI_PART_plan_t plan = make(64, 48, 64 * 48 * 8, 0, 1 << 20);
    ASSERT_EQ(plan.nmsgs, 16);
    for (int32_t nvcis : {2, 3, 4, 5, 16, 17}) {
        std::vector<int> use(nvcis, 0);
        for (int32_t m = 0; m < plan.nmsgs; ++m) {
            for (int32_t local : {64, 48}) {
                const int32_t v = MPIDI_PART_plan_vci(&plan, local, m, nvcis, 0);
                EXPECT_EQ(v, m % nvcis) << "nvcis=" << nvcis << " m=" << m;
            }
            ++use[MPIDI_PART_plan_vci(&plan, 64, m, nvcis, 0)];
        }
        // balanced: the counts differ by at most one
        const auto [lo, hi] = std::minmax_element(use.begin(), use.end());
        EXPECT_LE(*hi - *lo, 1) << "nvcis=" << nvcis;
    }
}

TEST(PlanVci, HintGivesEachThreadOneVci)
{
    // 4 threads x 8 partitions, one partition per message
    const MPIDI_PART_plan_t plan = make(32, 32, 32 * 1024, 0, 1 << 20);
    ASSERT_EQ(plan.nmsgs, 32);
    for (int32_t p = 0; p < 32; ++p) {
        const int32_t m = MPIDI_PART_plan_msg_of(&plan, 32, p);
        EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 4, 8), p / 8) << p;
        EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 3, 8), (p / 8) % 3) << p;
        EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 8, 8), p / 8) << p;
    }
}

TEST(PlanVci, HintWithMergedMessages)
{
    // 4 threads x 8 partitions, 4 partitions per message (aggregation merges 4)
    const MPIDI_PART_plan_t plan = make(32, 32, 32 * 100, 400, 1 << 20);
    ASSERT_EQ(plan.merge, 4);
    ASSERT_EQ(plan.nmsgs, 8);
    for (int32_t m = 0; m < 8; ++m)
        EXPECT_EQ(MPIDI_PART_plan_vci(&plan, 32, m, 4, 8), m / 2) << m;
    // messages larger than a thread's share: a message goes with its first thread
    const MPIDI_PART_plan_t big = make(32, 32, 32 * 100, 1600, 1 << 20);
    ASSERT_EQ(big.nmsgs, 2);
    EXPECT_EQ(MPIDI_PART_plan_vci(&big, 32, 0, 4, 8), 0);
    EXPECT_EQ(MPIDI_PART_plan_vci(&big, 32, 1, 4, 8), 2);
}

// For every aligned layout (a thread owns whole messages, or a message holds whole threads),
// all partitions of one thread map to one VCI, the VCI is in range, and threads owning whole
// messages are spread round-robin over the VCIs.
TEST(PlanVci, BruteForceThreadPartitionsShareVci)
{
    for (int32_t s = 1; s <= 64; ++s) {
        for (int32_t r = 1; r <= 64; r += (r < 8 ? 1 : 5)) {
            const int64_t g = std::gcd(s, r);
            const int64_t total = std::lcm(int64_t{s}, int64_t{r}) * 4;
            for (int64_t aggr : {int64_t{0}, 2 * total / g, 3 * total / g, total}) {
                const MPIDI_PART_plan_t plan = make(s, r, total, aggr, 1 << 20);
                const int32_t ppm = MPIDI_PART_plan_parts_per_msg(&plan, s);
                for (int32_t ppt = 1; ppt <= s; ++ppt) {
                    const bool thread_owns_msgs = ppt % ppm == 0;
                    const bool msg_holds_threads = ppm % ppt == 0;
                    for (int32_t nvcis : {2, 3, 4}) {
                        std::map<int32_t, int32_t> vci_of_thread;
                        for (int32_t p = 0; p < s; ++p) {
                            const int32_t m = MPIDI_PART_plan_msg_of(&plan, s, p);
                            const int32_t v = MPIDI_PART_plan_vci(&plan, s, m, nvcis, ppt);
                            ASSERT_GE(v, 0);
                            ASSERT_LT(v, nvcis);
                            if (!thread_owns_msgs && !msg_holds_threads)
                                continue;
                            const int32_t t = p / ppt;
                            auto [it, fresh] = vci_of_thread.emplace(t, v);
                            ASSERT_EQ(it->second, v)
                                << "s=" << s << " r=" << r << " aggr=" << aggr << " ppt=" << ppt
                                << " nvcis=" << nvcis << ": thread " << t << " on two VCIs";
                            if (thread_owns_msgs) {
                                ASSERT_EQ(v, t % nvcis);
                            }
                            (void) fresh;
                        }
                    }
                }
            }
        }
    }
}

// When both sides describe the same threads (each thread's share is the same byte range on
// both sides: ppt_s / s == ppt_r / r), sender and receiver pick the same VCI for every message.
TEST(PlanVci, SidesAgreeWhenHintsDescribeSameBytes)
{
    for (int32_t threads : {1, 2, 3, 4, 8}) {
        for (int32_t ks : {1, 2, 3, 8}) {
            for (int32_t kr : {1, 2, 5, 8}) {
                const int32_t s = threads * ks, r = threads * kr;
                const int64_t total = std::lcm(int64_t{s}, int64_t{r}) * 16;
                const int64_t g = std::gcd(s, r);
                for (int64_t aggr : {int64_t{0}, 2 * total / g, total / 2}) {
                    const MPIDI_PART_plan_t plan = make(s, r, total, aggr, 1 << 20);
                    for (int32_t m = 0; m < plan.nmsgs; ++m)
                        for (int32_t nvcis : {2, 4, 7})
                            ASSERT_EQ(MPIDI_PART_plan_vci(&plan, s, m, nvcis, ks),
                                      MPIDI_PART_plan_vci(&plan, r, m, nvcis, kr))
                                << "threads=" << threads << " s=" << s << " r=" << r
                                << " m=" << m << " nvcis=" << nvcis;
                }
            }
        }
    }
}
