// Tests of MPIDI_PART_gcd.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>

#include "part_plan.h"

TEST(Gcd, WithOne)
{
    EXPECT_EQ(MPIDI_PART_gcd(1, 1), 1);
    EXPECT_EQ(MPIDI_PART_gcd(1, 64), 1);
    EXPECT_EQ(MPIDI_PART_gcd(64, 1), 1);
    EXPECT_EQ(MPIDI_PART_gcd(1, INT64_MAX), 1);
}

TEST(Gcd, Equal)
{
    for (int64_t a : {int64_t{2}, int64_t{7}, int64_t{32}, int64_t{1000}, int64_t{1} << 31, int64_t{INT64_MAX}})
        EXPECT_EQ(MPIDI_PART_gcd(a, a), a) << a;
}

TEST(Gcd, Coprime)
{
    EXPECT_EQ(MPIDI_PART_gcd(3, 4), 1);
    EXPECT_EQ(MPIDI_PART_gcd(35, 64), 1);
    EXPECT_EQ(MPIDI_PART_gcd(17, 31), 1);
    // consecutive Fibonacci numbers: coprime, and the Euclidean worst case
    EXPECT_EQ(MPIDI_PART_gcd(7540113804746346429LL, 4660046610375530309LL), 1);
    EXPECT_EQ(MPIDI_PART_gcd(4660046610375530309LL, 7540113804746346429LL), 1);
}

TEST(Gcd, Divides)
{
    EXPECT_EQ(MPIDI_PART_gcd(8, 32), 8);
    EXPECT_EQ(MPIDI_PART_gcd(32, 8), 8);
    EXPECT_EQ(MPIDI_PART_gcd(12, 18), 6);
    EXPECT_EQ(MPIDI_PART_gcd(18, 12), 6);
    EXPECT_EQ(MPIDI_PART_gcd(24, 40), 8);
}

TEST(Gcd, Zero)
{
    EXPECT_EQ(MPIDI_PART_gcd(0, 5), 5);
    EXPECT_EQ(MPIDI_PART_gcd(5, 0), 5);
    EXPECT_EQ(MPIDI_PART_gcd(0, 0), 0);
}

TEST(Gcd, Large)
{
    const int64_t p = 1000000007LL;     // prime
    EXPECT_EQ(MPIDI_PART_gcd(6 * p, 10 * p), 2 * p);
    EXPECT_EQ(MPIDI_PART_gcd((1LL << 40) * 3, (1LL << 35) * 5), 1LL << 35);
    EXPECT_EQ(MPIDI_PART_gcd(INT64_MAX, INT64_MAX - 1), 1);
    EXPECT_EQ(MPIDI_PART_gcd(1LL << 62, 1LL << 61), 1LL << 61);
    EXPECT_EQ(MPIDI_PART_gcd(INT32_MAX, INT32_MAX), INT32_MAX);
    EXPECT_EQ(MPIDI_PART_gcd(2147483646LL, 1073741823LL), 1073741823LL);
}

TEST(Gcd, AgreesWithStdGcdOnRandomPositives)
{
    std::mt19937_64 rng(20240501);
    std::uniform_int_distribution<int64_t> big(1, INT64_MAX);
    std::uniform_int_distribution<int64_t> small(1, 1 << 20);
    for (int i = 0; i < 20000; ++i) {
        // products of a common factor give non-trivial gcds
        const int64_t c = small(rng);
        const int64_t a = (i % 2) ? big(rng) : c * small(rng);
        const int64_t b = (i % 2) ? big(rng) : c * small(rng);
        ASSERT_EQ(MPIDI_PART_gcd(a, b), std::gcd(a, b)) << a << " " << b;
        ASSERT_EQ(MPIDI_PART_gcd(a, b), MPIDI_PART_gcd(b, a)) << a << " " << b;
    }
}

TEST(Gcd, SmallExhaustive)
{
    for (int64_t a = 1; a <= 200; ++a)
        for (int64_t b = 1; b <= 200; ++b)
            ASSERT_EQ(MPIDI_PART_gcd(a, b), std::gcd(a, b)) << a << " " << b;
}
