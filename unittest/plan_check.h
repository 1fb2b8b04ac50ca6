// plan_check.h: shared helpers of the part_plan unit tests. An independent, brute-force
// statement of what a plan must satisfy, used by the exhaustive and the randomized tests.
#ifndef PART_PLAN_CHECK_H_INCLUDED
#define PART_PLAN_CHECK_H_INCLUDED

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>

#include "part_plan.h"

namespace part_test {

// Everything a test needs to know about one planning problem.
struct Problem {
    int32_t send_parts;
    int32_t recv_parts;
    int64_t total_bytes;        // a multiple of lcm(send_parts, recv_parts) in real use
    int64_t aggr_size;
    int32_t max_msgs;
};

inline std::string describe(const Problem &pb)
{
    std::ostringstream os;
    os << "send_parts=" << pb.send_parts << " recv_parts=" << pb.recv_parts
       << " total_bytes=" << pb.total_bytes << " aggr_size=" << pb.aggr_size
       << " max_msgs=" << pb.max_msgs;
    return os.str();
}

inline std::string describe(const MPIDI_PART_plan_t &p)
{
    std::ostringstream os;
    os << "plan{gcd=" << p.gcd << " merge=" << p.merge << " nmsgs=" << p.nmsgs << "}";
    return os.str();
}

// The merge factor the specification asks for, found by search rather than by formula:
// the largest k in [1, g] whose merged size k * (total/g) stays within aggr_size (1 when
// aggr_size is 0 or nothing fits), raised to the smallest k with ceil(g/k) <= max_msgs.
inline int32_t expected_merge(int32_t g, int64_t total_bytes, int64_t aggr_size, int32_t max_msgs)
{
    const int64_t msg_bytes = total_bytes / g;
    int32_t k_aggr = 1;
    if (aggr_size > 0) {
        if (msg_bytes == 0) {
            k_aggr = g;
        } else {
            // largest k with k * msg_bytes <= aggr_size, capped at g
            int64_t k = aggr_size / msg_bytes;
            if (k > g)
                k = g;
            if (k < 1)
                k = 1;
            k_aggr = static_cast<int32_t>(k);
        }
    }
    // smallest k with ceil(g / k) <= max_msgs
    int32_t k_tags = static_cast<int32_t>((static_cast<int64_t>(g) + max_msgs - 1) / max_msgs);
    return k_aggr > k_tags ? k_aggr : k_tags;
}

// Check one side (local_parts user partitions) of a plan: msg_of starts at 0, is monotone
// and consecutive (steps of 0 or 1), ends at nmsgs-1, every message is non-empty, and
// msg_range agrees with msg_of.
inline ::testing::AssertionResult check_side(const MPIDI_PART_plan_t &plan, int32_t local_parts)
{
    int32_t prev = -1;
    int32_t run_first = 0;
    for (int32_t p = 0; p < local_parts; ++p) {
        const int32_t m = MPIDI_PART_plan_msg_of(&plan, local_parts, p);
        if (m < 0 || m >= plan.nmsgs)
            return ::testing::AssertionFailure()
                << "partition " << p << " of " << local_parts << " in message " << m
                << " outside [0," << plan.nmsgs << ")";
        if (p == 0 && m != 0)
            return ::testing::AssertionFailure() << "partition 0 in message " << m;
        if (p > 0 && m != prev && m != prev + 1)
            return ::testing::AssertionFailure()
                << "msg_of jumps from " << prev << " to " << m << " at partition " << p
                << " of " << local_parts;
        if (p > 0 && m == prev + 1) {
            // message prev ended at p-1: msg_range must say [run_first, p)
            int32_t first = -1, nparts = -1;
            MPIDI_PART_plan_msg_range(&plan, local_parts, prev, &first, &nparts);
            if (first != run_first || nparts != p - run_first)
                return ::testing::AssertionFailure()
                    << "msg_range(" << prev << ") = [" << first << ",+" << nparts
                    << ") but msg_of gives [" << run_first << ",+" << (p - run_first) << ")";
            run_first = p;
        }
        prev = m;
    }
    if (prev != plan.nmsgs - 1)
        return ::testing::AssertionFailure()
            << "last partition in message " << prev << ", expected " << plan.nmsgs - 1
            << " (some message is empty)";
    int32_t first = -1, nparts = -1;
    MPIDI_PART_plan_msg_range(&plan, local_parts, prev, &first, &nparts);
    if (first != run_first || nparts != local_parts - run_first)
        return ::testing::AssertionFailure()
            << "msg_range(last=" << prev << ") = [" << first << ",+" << nparts
            << ") but msg_of gives [" << run_first << ",+" << (local_parts - run_first) << ")";
    return ::testing::AssertionSuccess();
}

// Check a plan made for pb against the specification and check both sides; then check that
// the partitions of message m on the send side cover exactly the bytes of the partitions of
// message m on the receive side.
inline ::testing::AssertionResult check_plan(const Problem &pb, const MPIDI_PART_plan_t &plan)
{
    if (pb.total_bytes % pb.send_parts != 0 || pb.total_bytes % pb.recv_parts != 0)
        return ::testing::AssertionFailure()
            << describe(pb) << ": bad test input, total_bytes must be a multiple of both counts";
    const int32_t g = std::gcd(pb.send_parts, pb.recv_parts);
    if (plan.gcd != g)
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " gcd should be " << g;
    if (plan.merge < 1 || plan.merge > g)
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " merge outside [1, gcd]";
    const int32_t want_k = expected_merge(g, pb.total_bytes, pb.aggr_size, pb.max_msgs);
    if (plan.merge != want_k)
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " merge should be " << want_k;
    if (plan.nmsgs != (g + plan.merge - 1) / plan.merge)
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " nmsgs != ceil(gcd/merge)";
    if (plan.nmsgs < 1 || plan.nmsgs > pb.max_msgs)
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " nmsgs outside [1, max_msgs]";
    // A merged message exceeds the aggregation size only when the tag limit forced it.
    const int64_t msg_bytes = pb.total_bytes / g;
    const int32_t k_tags = static_cast<int32_t>((static_cast<int64_t>(g) + pb.max_msgs - 1) / pb.max_msgs);
    if (plan.merge > 1 && plan.merge > k_tags &&
        (pb.aggr_size == 0 || plan.merge * msg_bytes > pb.aggr_size))
        return ::testing::AssertionFailure()
            << describe(pb) << ": " << describe(plan) << " merged size "
            << plan.merge * msg_bytes << " over aggregation size without need";

    for (int32_t side : {pb.send_parts, pb.recv_parts}) {
        ::testing::AssertionResult r = check_side(plan, side);
        if (!r)
            return ::testing::AssertionFailure()
                << describe(pb) << ": " << describe(plan) << " side with " << side
                << " partitions: " << r.message();
    }

    const int64_t sbytes = pb.total_bytes / pb.send_parts;   // bytes per send partition
    const int64_t rbytes = pb.total_bytes / pb.recv_parts;   // bytes per receive partition
    int64_t covered = 0;
    for (int32_t m = 0; m < plan.nmsgs; ++m) {
        int32_t sf, sn, rf, rn;
        MPIDI_PART_plan_msg_range(&plan, pb.send_parts, m, &sf, &sn);
        MPIDI_PART_plan_msg_range(&plan, pb.recv_parts, m, &rf, &rn);
        const int64_t s_lo = sf * sbytes, s_hi = (static_cast<int64_t>(sf) + sn) * sbytes;
        const int64_t r_lo = rf * rbytes, r_hi = (static_cast<int64_t>(rf) + rn) * rbytes;
        if (s_lo != r_lo || s_hi != r_hi)
            return ::testing::AssertionFailure()
                << describe(pb) << ": " << describe(plan) << " message " << m
                << " send bytes [" << s_lo << "," << s_hi << ") receive bytes [" << r_lo
                << "," << r_hi << ")";
        if (s_lo != covered)
            return ::testing::AssertionFailure()
                << describe(pb) << ": message " << m << " starts at byte " << s_lo
                << ", previous ended at " << covered;
        covered = s_hi;
    }
    if (covered != pb.total_bytes)
        return ::testing::AssertionFailure()
            << describe(pb) << ": messages cover " << covered << " of " << pb.total_bytes
            << " bytes";
    return ::testing::AssertionSuccess();
}

// Make a plan and check it; returns the plan through *out.
inline ::testing::AssertionResult make_and_check(const Problem &pb, MPIDI_PART_plan_t *out = nullptr)
{
    MPIDI_PART_plan_t plan{-1, -1, -1};
    const int rc = MPIDI_PART_plan_make(pb.send_parts, pb.recv_parts, pb.total_bytes,
                                        pb.aggr_size, pb.max_msgs, &plan);
    if (rc != MPIDI_PART_PLAN_OK)
        return ::testing::AssertionFailure() << describe(pb) << ": plan_make returned " << rc;
    if (out)
        *out = plan;
    return check_plan(pb, plan);
}

inline int64_t lcm64(int64_t a, int64_t b)
{
    return a / std::gcd(a, b) * b;
}

}  // namespace part_test

#endif  // PART_PLAN_CHECK_H_INCLUDED
