// Tests of the internal tag layout: MPIDI_PART_tag_layout_make, tag_encode, tag_decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "part_plan.h"

namespace {

MPIDI_PART_tag_layout_t layout(int32_t flag_bit, int32_t free_bits, int32_t wanted)
{
    MPIDI_PART_tag_layout_t l{-1, -1, -1};
    EXPECT_EQ(MPIDI_PART_tag_layout_make(flag_bit, free_bits, wanted, &l), 0)
        << flag_bit << " " << free_bits << " " << wanted;
    return l;
}

// Encode (id, m), check the flag bit and the range, decode and compare.
::testing::AssertionResult round_trip(const MPIDI_PART_tag_layout_t &l, int32_t id, int32_t m)
{
    const int32_t tag = MPIDI_PART_tag_encode(&l, id, m);
    if ((tag & l.flag_bit) != l.flag_bit)
        return ::testing::AssertionFailure() << "tag " << tag << " lost the flag bit";
    if (tag < l.flag_bit)
        return ::testing::AssertionFailure() << "tag " << tag << " below the flag bit";
    const int32_t low = tag & ~l.flag_bit;
    if (low >= l.flag_bit || (low >> (l.id_bits + l.msg_bits)) != 0)
        return ::testing::AssertionFailure() << "tag " << tag << " uses bits beyond the layout";
    int32_t id2 = -1, m2 = -1;
    MPIDI_PART_tag_decode(&l, tag, &id2, &m2);
    if (id2 != id || m2 != m)
        return ::testing::AssertionFailure()
            << "(" << id << "," << m << ") -> tag " << tag << " -> (" << id2 << "," << m2 << ")";
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(TagLayout, SplitsFreeBits)
{
    MPIDI_PART_tag_layout_t l = layout(1 << 28, 28, 12);
    EXPECT_EQ(l.flag_bit, 1 << 28);
    EXPECT_EQ(l.msg_bits, 12);
    EXPECT_EQ(l.id_bits, 16);
    // msg_bits capped so at least one id bit is left
    l = layout(1 << 10, 10, 10);
    EXPECT_EQ(l.msg_bits, 9);
    EXPECT_EQ(l.id_bits, 1);
    l = layout(1 << 10, 10, 64);
    EXPECT_EQ(l.msg_bits, 9);
    EXPECT_EQ(l.id_bits, 1);
    l = layout(1 << 2, 2, 1);
    EXPECT_EQ(l.msg_bits, 1);
    EXPECT_EQ(l.id_bits, 1);
    l = layout(1 << 20, 20, 1);
    EXPECT_EQ(l.msg_bits, 1);
    EXPECT_EQ(l.id_bits, 19);
    for (int32_t free_bits = 2; free_bits <= 30; ++free_bits)
        for (int32_t wanted = 1; wanted <= 31; ++wanted) {
            l = layout(1 << free_bits, free_bits, wanted);
            EXPECT_EQ(l.msg_bits + l.id_bits, free_bits);
            EXPECT_GE(l.msg_bits, 1);
            EXPECT_GE(l.id_bits, 1);
            EXPECT_EQ(l.msg_bits, std::min(wanted, free_bits - 1));
        }
}

TEST(TagLayout, RejectsTooFewBits)
{
    MPIDI_PART_tag_layout_t l{-1, -1, -1};
    EXPECT_NE(MPIDI_PART_tag_layout_make(1 << 1, 1, 1, &l), 0);
    EXPECT_NE(MPIDI_PART_tag_layout_make(1 << 0, 0, 1, &l), 0);
    EXPECT_NE(MPIDI_PART_tag_layout_make(1 << 4, -3, 1, &l), 0);
    EXPECT_NE(MPIDI_PART_tag_layout_make(1 << 10, 10, 0, &l), 0);
    EXPECT_NE(MPIDI_PART_tag_layout_make(1 << 10, 10, -1, &l), 0);
}

// Every (id, m) of every small layout: round trip, flag kept, all tags distinct, and none
// below flag_bit (so none equal to a user or collective tag). The flag bit sits right above
// the free bits, or higher up.
TEST(TagEncode, ExhaustiveSmallLayouts)
{
    for (int32_t free_bits = 2; free_bits <= 14; ++free_bits) {
        for (int32_t wanted = 1; wanted <= free_bits + 1; ++wanted) {
            for (int32_t shift : {0, 3}) {
                const MPIDI_PART_tag_layout_t l = layout(1 << (free_bits + shift), free_bits, wanted);
                std::vector<bool> seen(size_t{1} << free_bits, false);
                const int32_t nids = 1 << l.id_bits, nm = 1 << l.msg_bits;
                for (int32_t id = 0; id < nids; ++id) {
                    for (int32_t m = 0; m < nm; ++m) {
                        ASSERT_TRUE(round_trip(l, id, m))
                            << "free_bits=" << free_bits << " wanted=" << wanted;
                        const int32_t low = MPIDI_PART_tag_encode(&l, id, m) & ~l.flag_bit;
                        ASSERT_FALSE(seen[low]) << "(" << id << "," << m << ") collides";
                        seen[low] = true;
                    }
                }
            }
        }
    }
}

// MPICH-like layouts: 31 tag bits, with or without the two error bits.
TEST(TagEncode, RealisticLayoutsAllIdsAndAllMsgIndices)
{
    struct Case { int32_t free_bits, wanted; };
    for (Case c : {Case{30, 12}, Case{28, 12}, Case{28, 16}, Case{28, 20}, Case{20, 10}}) {
        const MPIDI_PART_tag_layout_t l = layout(1 << c.free_bits, c.free_bits, c.wanted);
        const int32_t max_id = (1 << l.id_bits) - 1, max_m = (1 << l.msg_bits) - 1;
        for (int32_t id : {0, 1, 2, max_id / 2, max_id - 1, max_id})
            for (int32_t m = 0; m <= max_m; ++m)
                ASSERT_TRUE(round_trip(l, id, m)) << c.free_bits << "/" << c.wanted;
        for (int32_t m : {0, 1, max_m / 2, max_m - 1, max_m})
            for (int32_t id = 0; id <= max_id; ++id)
                ASSERT_TRUE(round_trip(l, id, m)) << c.free_bits << "/" << c.wanted;
        // the largest tag is the flag bit with every free bit set
        EXPECT_EQ(MPIDI_PART_tag_encode(&l, max_id, max_m), l.flag_bit | (l.flag_bit - 1));
        EXPECT_EQ(MPIDI_PART_tag_encode(&l, 0, 0), l.flag_bit);
    }
}

TEST(TagEncode, DistinctPairsGiveDistinctTagsRandomized)
{
    std::mt19937 rng(12345);
    const MPIDI_PART_tag_layout_t l = layout(1 << 28, 28, 12);
    std::uniform_int_distribution<int32_t> rid(0, (1 << l.id_bits) - 1);
    std::uniform_int_distribution<int32_t> rm(0, (1 << l.msg_bits) - 1);
    for (int i = 0; i < 200000; ++i) {
        const int32_t id1 = rid(rng), m1 = rm(rng);
        int32_t id2 = rid(rng), m2 = rm(rng);
        if (i % 3 == 0)
            id2 = id1;          // same operation, other message
        else if (i % 3 == 1)
            m2 = m1;            // same message index, other operation
        const bool same = id1 == id2 && m1 == m2;
        ASSERT_EQ(MPIDI_PART_tag_encode(&l, id1, m1) == MPIDI_PART_tag_encode(&l, id2, m2), same)
            << "(" << id1 << "," << m1 << ") (" << id2 << "," << m2 << ")";
    }
}

TEST(TagEncode, DecodeIgnoresFlagBitOnly)
{
    const MPIDI_PART_tag_layout_t l = layout(1 << 28, 28, 12);
    int32_t id, m;
    MPIDI_PART_tag_decode(&l, (1 << 28) | (77 << 12) | 4095, &id, &m);
    EXPECT_EQ(id, 77);
    EXPECT_EQ(m, 4095);
    // a tag without the flag decodes the same way (decode does not require it)
    MPIDI_PART_tag_decode(&l, (77 << 12) | 5, &id, &m);
    EXPECT_EQ(id, 77);
    EXPECT_EQ(m, 5);
}

// The layout names every wire message of a plan made with max_msgs = 1 << msg_bits.
TEST(TagEncode, LayoutNamesEveryMessageOfItsPlans)
{
    for (int32_t wanted : {1, 2, 4, 6}) {
        const MPIDI_PART_tag_layout_t l = layout(1 << 16, 16, wanted);
        const int32_t max_msgs = 1 << l.msg_bits;
        for (int32_t s = 1; s <= 64; ++s) {
            for (int32_t r : {1, 2, 3, 16, 48, 64}) {
                MPIDI_PART_plan_t plan;
                ASSERT_EQ(MPIDI_PART_plan_make(s, r, int64_t{s} * r * 8, 0, max_msgs, &plan),
                          MPIDI_PART_PLAN_OK);
                ASSERT_LE(plan.nmsgs, max_msgs);
                for (int32_t id : {0, 5, (1 << l.id_bits) - 1})
                    for (int32_t m = 0; m < plan.nmsgs; ++m)
                        ASSERT_TRUE(round_trip(l, id, m));
            }
        }
    }
}
