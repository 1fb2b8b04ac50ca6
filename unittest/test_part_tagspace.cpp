// Tests of the wire-message tag allocator (part_tagspace.[ch]): aligned blocks by need,
// no overlap, exhaustion, merging on free, accounting; a random run against a bitmap model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "part_tagspace.h"

namespace {

struct Space {
    MPIDI_PART_tagspace_t ts{};
    explicit Space(int bits) { EXPECT_EQ(MPIDI_PART_tagspace_init(&ts, bits), 0); }
    ~Space() { MPIDI_PART_tagspace_destroy(&ts); }
};

}  // namespace

TEST(TagSpace, OrderIsCeilLog2)
{
    EXPECT_EQ(MPIDI_PART_tagspace_order(1), 0);
    EXPECT_EQ(MPIDI_PART_tagspace_order(2), 1);
    EXPECT_EQ(MPIDI_PART_tagspace_order(3), 2);
    EXPECT_EQ(MPIDI_PART_tagspace_order(4), 2);
    EXPECT_EQ(MPIDI_PART_tagspace_order(5), 3);
    EXPECT_EQ(MPIDI_PART_tagspace_order(65536), 16);
    EXPECT_EQ(MPIDI_PART_tagspace_order(65537), 17);
}

TEST(TagSpace, RejectsBadSizes)
{
    MPIDI_PART_tagspace_t ts;
    EXPECT_NE(MPIDI_PART_tagspace_init(&ts, 0), 0);
    EXPECT_NE(MPIDI_PART_tagspace_init(&ts, 41), 0);
}

TEST(TagSpace, BlocksAreAlignedAndDisjointUntilExhausted)
{
    Space s(6);  // 64 tags
    std::vector<int64_t> bases;
    for (;;) {
        int64_t b = MPIDI_PART_tagspace_alloc(&s.ts, 2);  // blocks of 4
        if (b < 0)
            break;
        EXPECT_EQ(b % 4, 0) << b;
        EXPECT_LT(b + 3, 64);
        bases.push_back(b);
    }
    ASSERT_EQ(bases.size(), 16u);
    std::sort(bases.begin(), bases.end());
    for (size_t i = 0; i < bases.size(); i++)
        EXPECT_EQ(bases[i], int64_t(4 * i));
    EXPECT_EQ(s.ts.in_use, 64);
    EXPECT_EQ(s.ts.blocks, 16);
    EXPECT_LT(MPIDI_PART_tagspace_alloc(&s.ts, 0), 0);  // full: not even one tag
    for (int64_t b : bases)
        MPIDI_PART_tagspace_free(&s.ts, b, 2);
    EXPECT_EQ(s.ts.in_use, 0);
    EXPECT_EQ(s.ts.blocks, 0);
    // everything merged back: the whole space is one block again
    EXPECT_EQ(MPIDI_PART_tagspace_alloc(&s.ts, 6), 0);
    EXPECT_LT(MPIDI_PART_tagspace_alloc(&s.ts, 0), 0);
}

TEST(TagSpace, SmallPlansLeaveRoomForLargeOnes)
{
    Space s(10);  // 1024 tags
    // 100 one-message operations take 100 tags, not 100 * 2^16 as a fixed split would
    std::vector<int64_t> small;
    for (int i = 0; i < 100; i++) {
        int64_t b = MPIDI_PART_tagspace_alloc(&s.ts, 0);
        ASSERT_GE(b, 0);
        small.push_back(b);
    }
    // a 512-message plan still fits in the other half
    EXPECT_GE(MPIDI_PART_tagspace_alloc(&s.ts, 9), 0);
    EXPECT_EQ(s.ts.in_use, 612);
}

TEST(TagSpace, RequestPerMessageReusesItsBlockWithoutGrowth)
{
    // MPICH's part/pingping pattern: one operation at a time, a one-message plan each
    Space s(28);
    int64_t first = MPIDI_PART_tagspace_alloc(&s.ts, 0);
    ASSERT_EQ(first, 0);
    MPIDI_PART_tagspace_free(&s.ts, first, 0);
    for (int i = 0; i < 10000; i++) {
        int64_t b = MPIDI_PART_tagspace_alloc(&s.ts, 0);
        ASSERT_EQ(b, first) << "iteration " << i;
        MPIDI_PART_tagspace_free(&s.ts, b, 0);
    }
    int64_t listed = 0;
    for (int k = 0; k <= s.ts.bits; k++)
        listed += s.ts.nfree[k];
    EXPECT_EQ(listed, 29);  // the first split's 28 upper halves and the reused block
    EXPECT_EQ(s.ts.in_use, 0);
    // the whole space is still one block to a request that needs it
    EXPECT_EQ(MPIDI_PART_tagspace_alloc(&s.ts, 28), 0);
}

TEST(TagSpace, UnmergedBuddiesMergeAcrossOrdersWhenNeeded)
{
    Space s(4);  // 16 tags
    std::vector<int64_t> ones;
    for (int i = 0; i < 16; i++)
        ones.push_back(MPIDI_PART_tagspace_alloc(&s.ts, 0));
    ASSERT_LT(MPIDI_PART_tagspace_alloc(&s.ts, 0), 0);
    // give back tags 4..11: free as single tags, they make blocks [4,8) and [8,12) only
    // when merged two and three orders up
    for (int64_t b : ones)
        if (b >= 4 && b < 12)
            MPIDI_PART_tagspace_free(&s.ts, b, 0);
    EXPECT_LT(MPIDI_PART_tagspace_alloc(&s.ts, 3), 0);  // no aligned 8: [4,12) straddles
    int64_t a = MPIDI_PART_tagspace_alloc(&s.ts, 2);
    int64_t b = MPIDI_PART_tagspace_alloc(&s.ts, 2);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    EXPECT_EQ(std::min(a, b), 4);
    EXPECT_EQ(std::max(a, b), 8);
    EXPECT_LT(MPIDI_PART_tagspace_alloc(&s.ts, 0), 0);
    EXPECT_EQ(s.ts.in_use, 16);
}

TEST(TagSpace, RandomAgainstBitmapModel)
{
    const int bits = 9;
    Space s(bits);
    std::vector<int> owner(1 << bits, -1);
    std::map<int, std::pair<int64_t, int>> live;  // id -> (base, order)
    std::mt19937 rng(42);
    int next_id = 0;
    int64_t used = 0;
    for (int step = 0; step < 20000; step++) {
        if (live.empty() || rng() % 3 != 0) {
            int order = int(rng() % 6);
            int64_t b = MPIDI_PART_tagspace_alloc(&s.ts, order);
            // model: is there any aligned free block of that size?
            bool fits = false;
            for (int64_t c = 0; c < (1 << bits) && !fits; c += (int64_t(1) << order)) {
                bool all_free = true;
                for (int64_t t = c; t < c + (int64_t(1) << order); t++)
                    all_free &= owner[t] < 0;
                fits = all_free;
            }
            if (b < 0) {
                // buddy allocation always finds an aligned free block when one exists
                ASSERT_FALSE(fits) << "step " << step << " order " << order;
                continue;
            }
            ASSERT_EQ(b % (int64_t(1) << order), 0);
            for (int64_t t = b; t < b + (int64_t(1) << order); t++) {
                ASSERT_EQ(owner[t], -1) << "tag " << t << " given twice at step " << step;
                owner[t] = next_id;
            }
            live[next_id++] = {b, order};
            used += int64_t(1) << order;
        } else {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            auto [b, order] = it->second;
            for (int64_t t = b; t < b + (int64_t(1) << order); t++)
                owner[t] = -1;
            MPIDI_PART_tagspace_free(&s.ts, b, order);
            used -= int64_t(1) << order;
            live.erase(it);
        }
        ASSERT_EQ(s.ts.in_use, used);
        ASSERT_EQ(s.ts.blocks, int(live.size()));
    }
}
