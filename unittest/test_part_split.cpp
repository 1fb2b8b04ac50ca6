// Tests of the tag transport's splitting rule (MPIDI_PART_split_count, _piece, _slots).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "part_plan.h"

namespace {

// The pieces of one wire message, laid end to end: they must cover it exactly, every piece
// but the last is `split` bytes, and none exceeds split (when split at all).
void check_pieces(int64_t bytes, int64_t split, int64_t split_max)
{
    const int64_t n = MPIDI_PART_split_count(bytes, split, split_max);
    ASSERT_GE(n, 1);
    int64_t sum = 0;
    for (int64_t j = 0; j < n; ++j) {
        const int64_t b = MPIDI_PART_split_piece(bytes, split, n, j);
        if (n > 1) {
            ASSERT_GT(b, 0) << bytes << " " << split << " piece " << j;
            ASSERT_LE(b, split) << bytes << " " << split << " piece " << j;
            if (j < n - 1) {
                ASSERT_EQ(b, split);
            }
        }
        sum += b;
    }
    ASSERT_EQ(sum, bytes) << bytes << " " << split << " " << split_max;
}

}  // namespace

TEST(Split, OffBelowAndAboveTheWindow)
{
    EXPECT_EQ(MPIDI_PART_split_count(65536, 0, 131072), 1);     // off
    EXPECT_EQ(MPIDI_PART_split_count(65536, -1, 131072), 1);
    EXPECT_EQ(MPIDI_PART_split_count(8192, 8192, 131072), 1);   // fits one eager message
    EXPECT_EQ(MPIDI_PART_split_count(0, 8192, 131072), 1);
    EXPECT_EQ(MPIDI_PART_split_count(-5, 8192, 131072), 1);
    EXPECT_EQ(MPIDI_PART_split_count(131073, 8192, 131072), 1); // rendezvous pays above
    EXPECT_EQ(MPIDI_PART_split_count(1 << 30, 8192, 131072), 1);
}

TEST(Split, CountsAtTheEdges)
{
    EXPECT_EQ(MPIDI_PART_split_count(8193, 8192, 131072), 2);
    EXPECT_EQ(MPIDI_PART_split_piece(8193, 8192, 2, 0), 8192);
    EXPECT_EQ(MPIDI_PART_split_piece(8193, 8192, 2, 1), 1);
    EXPECT_EQ(MPIDI_PART_split_count(65536, 8192, 131072), 8);
    EXPECT_EQ(MPIDI_PART_split_count(131072, 8192, 131072), 16);
    EXPECT_EQ(MPIDI_PART_split_count(100000, 1000, 1 << 20), 100);
    EXPECT_EQ(MPIDI_PART_split_count(100001, 1000, 1 << 20), 101);
    EXPECT_EQ(MPIDI_PART_split_piece(100001, 1000, 101, 100), 1);
    EXPECT_EQ(MPIDI_PART_split_piece(777, 1000, 1, 0), 777);
}

TEST(Split, PiecesCoverEveryMessageExactly)
{
    for (int64_t split : {1, 3, 1000, 4096, 8192})
        for (int64_t bytes = 0; bytes < 40000; bytes += (bytes < 100 ? 1 : 997))
            check_pieces(bytes, split, 1 << 20);
}

// The slots allocated once must hold the pieces of every plan the operation can get: any
// number of messages up to the first plan's, any split of the bytes among them.
TEST(Split, SlotsBoundEveryPlan)
{
    const int64_t split = 1000, smax = 16000;
    for (int64_t total : {int64_t(0), int64_t(999), int64_t(1000), int64_t(64000),
                          int64_t(1000000), int64_t(1) << 40}) {
        for (int32_t n0 : {1, 2, 3, 8, 64}) {
            const int64_t slots = MPIDI_PART_split_slots(n0, total, split, smax);
            ASSERT_GE(slots, n0);
            for (int32_t n = 1; n <= n0; ++n) {
                // equal messages (what the plans make) and the last one shorter
                const int64_t per = (total + n - 1) / n;
                int64_t need = 0, left = total;
                for (int32_t m = 0; m < n; ++m) {
                    const int64_t b = left < per ? left : per;
                    need += MPIDI_PART_split_count(b, split, smax);
                    left -= b;
                }
                ASSERT_LE(need, slots) << "total " << total << " n0 " << n0 << " n " << n;
            }
        }
    }
    EXPECT_EQ(MPIDI_PART_split_slots(7, 1 << 20, 0, 131072), 7);        // off
    EXPECT_EQ(MPIDI_PART_split_slots(0, 1 << 20, 8192, 131072), 0);
    // no overflow with huge inputs
    EXPECT_GT(MPIDI_PART_split_slots(1 << 16, INT64_MAX, 1, INT64_MAX), 0);
}

TEST(Split, UcxTlsNamesSharedMemory)
{
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm(nullptr));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm(""));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("sm,self"));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("shm,tcp"));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("posix,cma,self"));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("mm,self"));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("^posix"));      // sysv stays
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("all"));
    EXPECT_TRUE(MPIDI_PART_ucx_tls_has_shm("^tcp"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("tcp,self"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("self,tcp"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("rc,ud"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("^sm"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("^shm"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("^posix,sysv"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("^mm,tcp"));
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("tcp,cma"));     // rendezvous copies only
    EXPECT_FALSE(MPIDI_PART_ucx_tls_has_shm("tcp,knem,self"));
}
