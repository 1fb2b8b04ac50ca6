// Property-style randomized tests of the planning logic, with a fixed seed so that a failure
// reproduces. Each case is a random (send partitions, receive partitions, bytes, aggregation
// size, tag-space limit); the full specification (plan_check.h) is checked on it.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>

#include "part_plan.h"
#include "plan_check.h"

using part_test::Problem;

namespace {

constexpr uint32_t kSeed = 0x5eed2024u;

// A random problem whose partition counts share an interesting common factor.
Problem random_problem(std::mt19937 &rng)
{
    auto uni = [&rng](int64_t lo, int64_t hi) {
        return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    Problem pb{};
    const int64_t g = (uni(0, 3) == 0) ? 1 : uni(1, uni(0, 1) ? 16 : 256);
    pb.send_parts = static_cast<int32_t>(g * uni(1, 32));
    pb.recv_parts = static_cast<int32_t>(g * uni(1, 32));
    const int64_t l = part_test::lcm64(pb.send_parts, pb.recv_parts);
    switch (uni(0, 5)) {
    case 0: pb.total_bytes = 0; break;
    case 1: pb.total_bytes = l; break;
    case 2: pb.total_bytes = l * uni(1, 1 << 20); break;
    default: pb.total_bytes = l * uni(1, 1000); break;
    }
    const int64_t gg = std::gcd(pb.send_parts, pb.recv_parts);
    const int64_t mb = pb.total_bytes / gg;
    switch (uni(0, 5)) {
    case 0: pb.aggr_size = 0; break;
    case 1: pb.aggr_size = uni(1, 1 << 20); break;
    case 2: pb.aggr_size = std::max<int64_t>(0, mb * uni(1, gg + 1) + uni(-1, 1)); break;
    case 3: pb.aggr_size = uni(0, pb.total_bytes + 1); break;
    default: pb.aggr_size = int64_t{1} << uni(0, 40); break;
    }
    switch (uni(0, 3)) {
    case 0: pb.max_msgs = INT32_MAX; break;
    case 1: pb.max_msgs = static_cast<int32_t>(uni(1, 4)); break;
    default: pb.max_msgs = static_cast<int32_t>(uni(1, gg + 5)); break;
    }
    return pb;
}

}  // namespace

TEST(PlanProperty, RandomProblemsMeetSpecification)
{
    std::mt19937 rng(kSeed);
    for (int i = 0; i < 5000; ++i) {
        const Problem pb = random_problem(rng);
        ASSERT_TRUE(part_test::make_and_check(pb)) << "case " << i;
    }
}

TEST(PlanProperty, SymmetricInSendAndReceiveCounts)
{
    std::mt19937 rng(kSeed + 1);
    for (int i = 0; i < 5000; ++i) {
        const Problem pb = random_problem(rng);
        MPIDI_PART_plan_t a, b;
        ASSERT_EQ(MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes, pb.aggr_size,
                                       pb.max_msgs, &a), MPIDI_PART_PLAN_OK);
        ASSERT_EQ(MPIDI_PART_plan_make(pb.recv_parts, pb.send_parts, pb.total_bytes, pb.aggr_size,
                                       pb.max_msgs, &b), MPIDI_PART_PLAN_OK);
        ASSERT_EQ(a.gcd, b.gcd) << part_test::describe(pb);
        ASSERT_EQ(a.merge, b.merge) << part_test::describe(pb);
        ASSERT_EQ(a.nmsgs, b.nmsgs) << part_test::describe(pb);
    }
}

// A larger aggregation size never gives more wire messages; a smaller tag-space limit never
// gives more either.
TEST(PlanProperty, MonotoneInAggregationSizeAndLimit)
{
    std::mt19937 rng(kSeed + 2);
    for (int i = 0; i < 3000; ++i) {
        const Problem pb = random_problem(rng);
        MPIDI_PART_plan_t base, more_aggr, less_msgs;
        ASSERT_EQ(MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes, pb.aggr_size,
                                       pb.max_msgs, &base), MPIDI_PART_PLAN_OK);
        const int64_t aggr2 = pb.aggr_size + 1 + static_cast<int64_t>(rng() % 100000);
        ASSERT_EQ(MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes, aggr2,
                                       pb.max_msgs, &more_aggr), MPIDI_PART_PLAN_OK);
        const int32_t max2 = pb.max_msgs > 1 ? pb.max_msgs - 1 - static_cast<int32_t>(rng() % 3) : 1;
        ASSERT_EQ(MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes, pb.aggr_size,
                                       max2 < 1 ? 1 : max2, &less_msgs), MPIDI_PART_PLAN_OK);
        if (pb.aggr_size > 0) {     // 0 means "no merging", not "the smallest size"
            ASSERT_LE(more_aggr.nmsgs, base.nmsgs) << part_test::describe(pb) << " aggr2=" << aggr2;
        }
        ASSERT_LE(less_msgs.nmsgs, base.nmsgs) << part_test::describe(pb) << " max2=" << max2;
    }
}

// VCI mapping on random plans: always in range, round-robin without hint, and one VCI per
// thread when a thread owns whole messages.
TEST(PlanProperty, VciMappingOnRandomPlans)
{
    std::mt19937 rng(kSeed + 3);
    for (int i = 0; i < 3000; ++i) {
        const Problem pb = random_problem(rng);
        MPIDI_PART_plan_t plan;
        ASSERT_EQ(MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes, pb.aggr_size,
                                       pb.max_msgs, &plan), MPIDI_PART_PLAN_OK);
        const int32_t nvcis = static_cast<int32_t>(1 + rng() % 8);
        const int32_t s = pb.send_parts;
        const int32_t ppm = MPIDI_PART_plan_parts_per_msg(&plan, s);
        const int32_t ppt = ppm * static_cast<int32_t>(1 + rng() % 4);     // aligned hint
        for (int32_t m = 0; m < plan.nmsgs; ++m) {
            const int32_t rr = MPIDI_PART_plan_vci(&plan, s, m, nvcis, 0);
            ASSERT_EQ(rr, nvcis <= 1 ? 0 : m % nvcis);
            const int32_t v = MPIDI_PART_plan_vci(&plan, s, m, nvcis, ppt);
            ASSERT_GE(v, 0);
            ASSERT_LT(v, nvcis);
            int32_t first, n;
            MPIDI_PART_plan_msg_range(&plan, s, m, &first, &n);
            // every partition of this message belongs to one thread, whose VCI this is
            ASSERT_EQ(first / ppt, (first + n - 1) / ppt);
            ASSERT_EQ(v, nvcis <= 1 ? 0 : (first / ppt) % nvcis);
        }
    }
}
