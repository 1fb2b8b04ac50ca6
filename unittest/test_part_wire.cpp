// Tests of the handshake message's wire form (part_wire.h): every field each kind's handler
// reads survives the trip, everything else arrives as 0, the ext follows byte for byte, the
// tag transport's small messages fit UCX's inline budget, and unknown kinds or ext lengths
// are refused.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "part_wire.h"

namespace {

const int kKinds[] = {MPIDI_PART_MSG_RTS,    MPIDI_PART_MSG_PLAN,  MPIDI_PART_MSG_CTS,
                      MPIDI_PART_MSG_FAIL,   MPIDI_PART_MSG_LAYOUT, MPIDI_PART_MSG_EARLY,
                      MPIDI_PART_MSG_COUNT,  MPIDI_PART_MSG_WITHDRAW, MPIDI_PART_MSG_RELEASE};

// UCX 1.13's shared memory sends an active message inline up to 100 bytes with its own
// 8-byte header (ucx_info -d: am_short <= 100); MPICH's ucx netmod adds 16 bytes.
constexpr size_t kInlineBudget = 100 - 8 - 16;

// A message of the kind with every byte of the fixed part and of ext_len bytes of ext set
// from the generator (none 0, so a lost byte shows).
MPIDI_PART_hdr_t Filled(int kind, int ext_len, std::mt19937 &gen)
{
    MPIDI_PART_hdr_t h;
    auto *b = reinterpret_cast<uint8_t *>(&h);
    for (size_t i = 0; i < sizeof(h); i++)
        b[i] = static_cast<uint8_t>(gen() % 255 + 1);
    h.kind = static_cast<uint8_t>(kind);
    h.ext_len = static_cast<int16_t>(ext_len);
    return h;
}

struct Trip {
    size_t len;
    int ok;
    MPIDI_PART_hdr_t out;
};

Trip RoundTrip(const MPIDI_PART_hdr_t &in)
{
    std::vector<uint8_t> wire(MPIDI_PART_WIRE_MAX + 64, 0xee);
    Trip t;
    t.len = MPIDI_PART_wire_pack(&in, wire.data());
    std::memset(&t.out, 0xab, sizeof(t.out));
    t.ok = t.len > 0 ? MPIDI_PART_wire_unpack(wire.data(), &t.out) : 0;
    return t;
}

}  // namespace

TEST(Wire, EveryKindsRunAndExtSurviveAndTheRestIsZero)
{
    std::mt19937 gen(7);
    for (int kind : kKinds) {
        for (int ext_len : {0, 1, 8, 40, MPIDI_PART_EXT_MAX}) {
            SCOPED_TRACE(testing::Message() << "kind " << kind << " ext_len " << ext_len);
            MPIDI_PART_hdr_t in = Filled(kind, ext_len, gen);
            size_t from = 0, to = 0;
            ASSERT_TRUE(MPIDI_PART_wire_run(kind, &from, &to));
            Trip t = RoundTrip(in);
            ASSERT_TRUE(t.ok);
            EXPECT_EQ(t.len, MPIDI_PART_WIRE_HEAD + (to - from) + static_cast<size_t>(ext_len));
            const auto *a = reinterpret_cast<const uint8_t *>(&in);
            const auto *b = reinterpret_cast<const uint8_t *>(&t.out);
            for (size_t i = 0; i < offsetof(MPIDI_PART_hdr_t, ext); i++) {
                if (i < MPIDI_PART_WIRE_HEAD || (i >= from && i < to))
                    ASSERT_EQ(b[i], a[i]) << "byte " << i;
                else
                    ASSERT_EQ(b[i], 0) << "byte " << i;
            }
            EXPECT_EQ(std::memcmp(in.ext, t.out.ext, static_cast<size_t>(ext_len)), 0);
        }
    }
}

// The fields each handler reads (part_match.c, part_rdma.c), named one by one: a reordering
// of the struct that drops one from a kind's run fails here.
TEST(Wire, EachKindCarriesTheFieldsItsHandlerReads)
{
    std::mt19937 gen(11);
#define KEEPS(f) EXPECT_EQ(std::memcmp(&t.out.f, &in.f, sizeof(in.f)), 0) << #f
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_RTS, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(src_rank); KEEPS(tag); KEEPS(context_id);
        KEEPS(partitions); KEEPS(thread_parts); KEEPS(nvcis); KEEPS(bytes); KEEPS(choice);
        KEEPS(contig); KEEPS(iter);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_PLAN, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(status); KEEPS(bytes); KEEPS(iter); KEEPS(transport);
        KEEPS(plan); KEEPS(timer_ns); KEEPS(timer_cap_ns); KEEPS(timer_run); KEEPS(rop);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_CTS, 8, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(iter);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_FAIL, 12, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(rop); KEEPS(src_rank); KEEPS(iter); KEEPS(bytes);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_LAYOUT, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(rop); KEEPS(iter); KEEPS(plan);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_EARLY, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_COUNT, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(rop); KEEPS(src_rank); KEEPS(bytes);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_WITHDRAW, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(status); KEEPS(src_rank); KEEPS(tag);
        KEEPS(context_id); KEEPS(bytes);
    }
    {
        MPIDI_PART_hdr_t in = Filled(MPIDI_PART_MSG_RELEASE, 0, gen);
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        KEEPS(serial); KEEPS(sop); KEEPS(status); KEEPS(src_rank); KEEPS(bytes);
    }
#undef KEEPS
}

TEST(Wire, TagTransportsSmallMessagesFitTheInlineBudget)
{
    std::mt19937 gen(3);
    struct {
        int kind, ext_len;
        size_t expect;
    } rows[] = {{MPIDI_PART_MSG_RTS, 0, 64},     {MPIDI_PART_MSG_WITHDRAW, 0, 36},
                {MPIDI_PART_MSG_RELEASE, 0, 28}, {MPIDI_PART_MSG_CTS, 8, 32},
                {MPIDI_PART_MSG_EARLY, 0, 16},   {MPIDI_PART_MSG_LAYOUT, 0, 44}};
    for (const auto &r : rows) {
        Trip t = RoundTrip(Filled(r.kind, r.ext_len, gen));
        EXPECT_EQ(t.len, r.expect) << "kind " << r.kind;
        EXPECT_LE(t.len, kInlineBudget) << "kind " << r.kind;
    }
    // the whole fixed part would not fit: the compact form is what makes them inline
    EXPECT_GT(offsetof(MPIDI_PART_hdr_t, ext), kInlineBudget);
}

TEST(Wire, RefusesUnknownKindsAndExtLengths)
{
    std::mt19937 gen(5);
    std::vector<uint8_t> wire(MPIDI_PART_WIRE_MAX, 0);
    for (int kind : {0, MPIDI_PART_MSG_RELEASE + 1, 200, 255}) {
        MPIDI_PART_hdr_t h = Filled(MPIDI_PART_MSG_RTS, 0, gen);
        h.kind = static_cast<uint8_t>(kind);
        EXPECT_EQ(MPIDI_PART_wire_pack(&h, wire.data()), 0u) << kind;
        std::memcpy(wire.data(), &h, MPIDI_PART_WIRE_HEAD);     // as if a peer sent it
        MPIDI_PART_hdr_t out;
        EXPECT_FALSE(MPIDI_PART_wire_unpack(wire.data(), &out)) << kind;
    }
    for (int ext_len : {-1, MPIDI_PART_EXT_MAX + 1, 32767}) {
        MPIDI_PART_hdr_t h = Filled(MPIDI_PART_MSG_PLAN, 0, gen);
        h.ext_len = static_cast<int16_t>(ext_len);
        EXPECT_EQ(MPIDI_PART_wire_pack(&h, wire.data()), 0u) << ext_len;
        std::memcpy(wire.data(), &h, MPIDI_PART_WIRE_HEAD);
        MPIDI_PART_hdr_t out;
        EXPECT_FALSE(MPIDI_PART_wire_unpack(wire.data(), &out)) << ext_len;
    }
}

// MPICH's --enable-extended-context-bits gives context ids of 20 bits: the RTS and the
// WITHDRAW match on them, so every bit must arrive.
TEST(Wire, CarriesWideContextIds)
{
    std::mt19937 gen(13);
    for (int kind : {MPIDI_PART_MSG_RTS, MPIDI_PART_MSG_WITHDRAW}) {
        MPIDI_PART_hdr_t in = Filled(kind, 0, gen);
        in.context_id = 0xfffffu;
        Trip t = RoundTrip(in);
        ASSERT_TRUE(t.ok);
        EXPECT_EQ(t.out.context_id, 0xfffffu) << "kind " << kind;
    }
}

TEST(Wire, FixedPartIsHeadAndRun)
{
    EXPECT_EQ(MPIDI_PART_wire_fixed(MPIDI_PART_MSG_PLAN), 68u);
    EXPECT_EQ(MPIDI_PART_wire_fixed(MPIDI_PART_MSG_RTS), 64u);
    EXPECT_EQ(MPIDI_PART_wire_fixed(MPIDI_PART_MSG_EARLY), MPIDI_PART_WIRE_HEAD);
    EXPECT_EQ(MPIDI_PART_wire_fixed(0), 0u);
    EXPECT_EQ(MPIDI_PART_wire_fixed(MPIDI_PART_MSG_RELEASE + 1), 0u);
}

// Iterations are 64 bits (part_state.h): every kind that names one carries all of them (a
// CTS cut to 32 bits would name iteration 5 after 2^32 + 5 starts).
TEST(Wire, IterationsPast2To32Arrive)
{
    static_assert(sizeof(((MPIDI_PART_hdr_t *) nullptr)->iter) == 8, "hdr.iter is 64 bits");
    std::mt19937 gen(17);
    for (int kind : {MPIDI_PART_MSG_CTS, MPIDI_PART_MSG_PLAN, MPIDI_PART_MSG_LAYOUT,
                     MPIDI_PART_MSG_FAIL, MPIDI_PART_MSG_RTS}) {
        for (uint64_t iter : {1ull, 0xffffffffull, 0x100000005ull, 0xfffffffffffffffeull}) {
            MPIDI_PART_hdr_t in = Filled(kind, 8, gen);
            in.iter = iter;
            Trip t = RoundTrip(in);
            ASSERT_TRUE(t.ok);
            EXPECT_EQ(t.out.iter, iter) << "kind " << kind;
        }
    }
}
