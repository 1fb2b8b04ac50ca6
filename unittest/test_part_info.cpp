// Tests of the info-value parser (part_info.h) that the info keys mpich_part_aggr_size and
// mpich_part_thread_partitions share: digits only, within the key's range, value untouched
// on a refusal.
#include <gtest/gtest.h>

#include <climits>
#include <string>

extern "C" {
#include "part_info.h"
}

namespace {

// The parsed value, or -12345 (the sentinel the parser must leave alone) on refusal.
int parse(const std::string& s, int64_t lo, int64_t hi, bool* ok = nullptr)
{
    int v = -12345;
    const int r = MPIDI_PART_info_decimal(s.c_str(), lo, hi, &v);
    if (ok)
        *ok = r != 0;
    if (!r) {
        EXPECT_EQ(v, -12345) << "a refused value changed the output: '" << s << "'";
    }
    return v;
}

TEST(PartInfo, AcceptsDecimalNumbersInRange)
{
    EXPECT_EQ(parse("0", 0, INT_MAX), 0);
    EXPECT_EQ(parse("65536", 0, INT_MAX), 65536);
    EXPECT_EQ(parse("007", 0, INT_MAX), 7);
    EXPECT_EQ(parse("2147483647", 0, INT_MAX), INT_MAX);
    EXPECT_EQ(parse("1", 1, 4), 1);
    EXPECT_EQ(parse("4", 1, 4), 4);
}

TEST(PartInfo, RefusesOutOfRange)
{
    bool ok = true;
    parse("2147483648", 0, INT_MAX, &ok);
    EXPECT_FALSE(ok);
    parse("0", 1, 4, &ok);
    EXPECT_FALSE(ok);
    parse("5", 1, 4, &ok);
    EXPECT_FALSE(ok);
    // more digits than any int64 holds: refused, never wrapped around into range
    parse("99999999999999999999999", 0, INT_MAX, &ok);
    EXPECT_FALSE(ok);
    parse("000000000000000000001", 0, INT_MAX, &ok);   // 21 digits: refused by length
    EXPECT_FALSE(ok);
}

TEST(PartInfo, RefusesAnythingButDigits)
{
    for (const char* s : {"", "-1", "+1", " 1", "1 ", "1k", "64k", "abc", "0x10", "1.0", "1e3",
                          "\t8", "8\n"}) {
        bool ok = true;
        parse(s, 0, INT_MAX, &ok);
        EXPECT_FALSE(ok) << "accepted '" << s << "'";
    }
}

}  // namespace
