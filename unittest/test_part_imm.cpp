// Tests of the RDMA transport's 32-bit immediate (part_imm.h): every field round-trips at
// its limits, the fields never bleed into each other, out-of-range input is refused, and
// credits compare iterations modulo 2^16.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "part_imm.h"

TEST(Imm, RoundTripsAtTheLimits)
{
    const uint32_t slots[] = {0, 1, 0x1234, MPIDI_PART_IMM_SLOTS - 1};
    const uint32_t lows[] = {0, 1, 0x8000, MPIDI_PART_IMM_MSGS - 1};
    for (int kind : {MPIDI_PART_IMM_DATA, MPIDI_PART_IMM_CREDIT}) {
        for (uint32_t s : slots) {
            for (uint32_t l : lows) {
                uint32_t imm = 0xdeadbeef;
                ASSERT_TRUE(MPIDI_PART_imm_encode(kind, s, l, &imm));
                EXPECT_EQ(MPIDI_PART_imm_kind(imm), kind);
                EXPECT_EQ(MPIDI_PART_imm_slot(imm), s);
                EXPECT_EQ(MPIDI_PART_imm_low(imm), l);
            }
        }
    }
}

TEST(Imm, LayoutIsTheDocumentedOne)
{
    uint32_t imm = 0;
    ASSERT_TRUE(MPIDI_PART_imm_encode(MPIDI_PART_IMM_CREDIT, 3, 5, &imm));
    EXPECT_EQ(imm, 0x80000000u | (3u << 16) | 5u);
    ASSERT_TRUE(MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, MPIDI_PART_IMM_SLOTS - 1, 0, &imm));
    EXPECT_EQ(imm, 0x7fff0000u);
}

TEST(Imm, RefusesOutOfRangeFieldsAndLeavesTheOutputAlone)
{
    uint32_t imm = 42;
    EXPECT_FALSE(MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, MPIDI_PART_IMM_SLOTS, 0, &imm));
    EXPECT_FALSE(MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, 0, MPIDI_PART_IMM_MSGS, &imm));
    EXPECT_FALSE(MPIDI_PART_imm_encode(2, 0, 0, &imm));
    EXPECT_FALSE(MPIDI_PART_imm_encode(-1, 0, 0, &imm));
    EXPECT_EQ(imm, 42u);
}

TEST(Imm, RandomFieldsNeverBleed)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 100000; i++) {
        int kind = static_cast<int>(rng() & 1);
        uint32_t s = rng() % MPIDI_PART_IMM_SLOTS, l = rng() % MPIDI_PART_IMM_MSGS;
        uint32_t imm;
        ASSERT_TRUE(MPIDI_PART_imm_encode(kind, s, l, &imm));
        ASSERT_EQ(MPIDI_PART_imm_kind(imm), kind);
        ASSERT_EQ(MPIDI_PART_imm_slot(imm), s);
        ASSERT_EQ(MPIDI_PART_imm_low(imm), l);
    }
}

TEST(Imm, CreditsCompareIterationsModulo65536)
{
    EXPECT_TRUE(MPIDI_PART_imm_credit_is(1, 1));
    EXPECT_TRUE(MPIDI_PART_imm_credit_is(0, 65536));
    EXPECT_TRUE(MPIDI_PART_imm_credit_is(1, 65537));
    EXPECT_FALSE(MPIDI_PART_imm_credit_is(2, 1));
    EXPECT_FALSE(MPIDI_PART_imm_credit_is(65535, 0));
}

TEST(Imm, TimerWritesRoundTripEveryStartAndCount)
{
    for (uint32_t m = 0; m < MPIDI_PART_IMM_TIMER_PARTS; m++) {
        for (uint32_t c = 1; c <= MPIDI_PART_IMM_TIMER_RUN; c++) {
            uint32_t low = 0xffffffffu, imm;
            ASSERT_TRUE(MPIDI_PART_imm_timer_low(m, c, &low));
            ASSERT_LT(low, MPIDI_PART_IMM_MSGS);
            ASSERT_TRUE(MPIDI_PART_imm_encode(MPIDI_PART_IMM_DATA, 12345, low, &imm));
            ASSERT_EQ(MPIDI_PART_imm_slot(imm), 12345u);
            ASSERT_EQ(MPIDI_PART_imm_timer_first(MPIDI_PART_imm_low(imm)), m);
            ASSERT_EQ(MPIDI_PART_imm_timer_count(MPIDI_PART_imm_low(imm)), c);
        }
    }
}

TEST(Imm, TimerWritesRefuseWhatDoesNotFit)
{
    uint32_t low = 7;
    EXPECT_FALSE(MPIDI_PART_imm_timer_low(MPIDI_PART_IMM_TIMER_PARTS, 1, &low));
    EXPECT_FALSE(MPIDI_PART_imm_timer_low(0, 0, &low));
    EXPECT_FALSE(MPIDI_PART_imm_timer_low(0, MPIDI_PART_IMM_TIMER_RUN + 1, &low));
    EXPECT_EQ(low, 7u);
    // the extremes are distinct immediates
    uint32_t a, b;
    ASSERT_TRUE(MPIDI_PART_imm_timer_low(0, MPIDI_PART_IMM_TIMER_RUN, &a));
    ASSERT_TRUE(MPIDI_PART_imm_timer_low(1, 1, &b));
    EXPECT_NE(a, b);
}
