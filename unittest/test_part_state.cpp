// Tests of the per-operation state machine (part_state.[ch]) without MPICH. A fake
// transport stands in for part_tag.c: it records what the core would send and reports
// messages done, the way part_core.c drives the state machine.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "part_state.h"

namespace {

// One operation with its storage, driven as part_core.c drives it.
struct Op {
    MPIDI_PART_st_t st{};
    std::vector<int32_t> ready, cntr;
    std::vector<uint8_t> held;
    std::vector<MPIDI_PART_iter_t> done;
    std::vector<int32_t> out;
    std::mutex lock;  // the engine lock
    std::vector<int> sent;  // the fake transport's log of sent messages
    int completions = 0;    // iterations whose last message was done

    Op(bool is_send, int parts) : ready(parts > 0 ? parts : 1)
    {
        MPIDI_PART_st_init(&st, is_send, parts, is_send ? ready.data() : nullptr);
    }
    int plan(int gcd, int merge, bool armed = true)
    {
        MPIDI_PART_plan_t p{gcd, merge, merge > 0 ? (gcd + merge - 1) / merge : 0};
        cntr.assign(p.nmsgs, 0);
        held.assign(p.nmsgs, 0);
        done.assign(p.nmsgs, 0);
        out.assign(p.nmsgs, -1);
        std::lock_guard<std::mutex> g(lock);
        int n = MPIDI_PART_st_plan(&st, &p, cntr.data(), held.data(), done.data(), armed,
                                   out.data());
        for (int i = 0; i < n; i++)
            sent.push_back(out[i]);
        return n;
    }
    // A new plan between iterations, in the arrays of the first one (their capacity): what
    // the engine does after the observed iteration (part_match.c). Returns st_plan's result,
    // or -100 when unplan refused.
    int replan(int gcd, int merge, bool armed = true)
    {
        MPIDI_PART_plan_t p{gcd, merge, (gcd + merge - 1) / merge};
        std::lock_guard<std::mutex> g(lock);
        if (MPIDI_PART_st_get_state(&st) == MPIDI_PART_ST_PLANNED && MPIDI_PART_st_unplan(&st))
            return -100;
        if ((size_t) p.nmsgs > done.size())
            return -200;
        int n = MPIDI_PART_st_plan(&st, &p, cntr.data(), held.data(), done.data(), armed,
                                   out.data());
        for (int i = 0; i < n; i++)
            sent.push_back(out[i]);
        return n;
    }
    int start(bool armed = true)
    {
        std::lock_guard<std::mutex> g(lock);
        return MPIDI_PART_st_start(&st, armed);
    }
    // MPI_Pready of one partition: returns the result of st_ready (or of the unplanned path)
    int pready(int p)
    {
        if (MPIDI_PART_st_get_state(&st) != MPIDI_PART_ST_PLANNED) {
            std::lock_guard<std::mutex> g(lock);
            if (MPIDI_PART_st_get_state(&st) != MPIDI_PART_ST_PLANNED) {
                int rc = MPIDI_PART_st_ready_unplanned(&st, p);
                if (rc == MPIDI_PART_READY_LAST)
                    completions++;  // nothing travels: the last ready ends the iteration
                return rc;
            }
        }
        int m = MPIDI_PART_st_ready(&st, p);
        if (m >= 0) {
            if (MPIDI_PART_st_is_armed(&st)) {
                record(m);
            } else {
                std::lock_guard<std::mutex> g(lock);
                if (!MPIDI_PART_st_hold(&st, m))
                    sent.push_back(m);
            }
        }
        return m;
    }
    void record(int m)
    {
        std::lock_guard<std::mutex> g(lock);
        sent.push_back(m);
    }
    int arm()
    {
        std::lock_guard<std::mutex> g(lock);
        int n = MPIDI_PART_st_arm(&st, out.data());
        for (int i = 0; i < n; i++)
            sent.push_back(out[i]);
        return n;
    }
    void msg_done(int m)
    {
        if (MPIDI_PART_st_msg_done(&st, m) == 1)
            completions++;
    }
};

}  // namespace

TEST(PartState, SenderSendsEachMessageWhenItsLastPartitionIsReady)
{
    Op op(true, 8);
    EXPECT_EQ(op.plan(4, 1), 0);  // 4 messages of 2 partitions
    EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
    EXPECT_EQ(op.pready(0), MPIDI_PART_READY_PENDING);
    EXPECT_TRUE(op.sent.empty());
    EXPECT_EQ(op.pready(1), 0);  // message 0 complete
    EXPECT_EQ(op.pready(7), MPIDI_PART_READY_PENDING);
    EXPECT_EQ(op.pready(6), 3);
    EXPECT_EQ(op.sent, (std::vector<int>{0, 3}));
    EXPECT_EQ(op.pready(6), MPIDI_PART_READY_TWICE);
}

TEST(PartState, IterationCompletesOnceWhenEveryMessageIsDone)
{
    Op op(false, 6);
    op.plan(3, 1);
    for (int it = 1; it <= 3; it++) {
        EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
        EXPECT_EQ(op.st.iter, MPIDI_PART_iter_t(it));
        EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
        for (int m : {2, 0})
            op.msg_done(m);
        EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, 1));
        EXPECT_TRUE(MPIDI_PART_st_msg_is_done(&op.st, 2));
        EXPECT_EQ(MPIDI_PART_st_msg_done(&op.st, 2), -1);  // twice: ignored
        EXPECT_EQ(op.completions, it - 1);
        op.msg_done(1);
        EXPECT_EQ(op.completions, it);
        EXPECT_FALSE(MPIDI_PART_st_is_running(&op.st));
    }
}

// Direct completion (part_tag.c): the one message's arrival completes the user request
// outside the state machine; MPI_Parrived only notes it (st_msg_seen), and the next start
// (or the free) ends the iteration (st_direct_end). Nothing is counted twice.
TEST(PartState, DirectIterationEndsAtTheNextStartOnly)
{
    Op op(false, 4);
    op.plan(4, 4);  // one message of 4 partitions
    for (int it = 1; it <= 3; it++) {
        EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
        EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, 0));
        if (it != 2) {  // iteration 2: no MPI_Parrived saw the arrival
            MPIDI_PART_st_msg_seen(&op.st, 0, op.st.iter);
            EXPECT_TRUE(MPIDI_PART_st_msg_is_done(&op.st, 0));
        }
        EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));  // seen is not done
        EXPECT_EQ(MPIDI_PART_st_direct_end(&op.st), 1);
        EXPECT_FALSE(MPIDI_PART_st_is_running(&op.st));
        EXPECT_TRUE(MPIDI_PART_st_msg_is_done(&op.st, 0));
        EXPECT_EQ(MPIDI_PART_st_direct_end(&op.st), 0);  // once only
        EXPECT_EQ(MPIDI_PART_st_msg_done(&op.st, 0), -1);  // and not counted again
        EXPECT_EQ(op.completions, 0);  // the state machine completed nothing itself
    }
}

// A thread that saw message m finish in iteration k and counts it only after another thread
// counted it, the iteration completed and the next began names k: it must not be counted
// in k+1 (which would complete one message early), and k+1's own count must still work.
TEST(PartState, LateCountOfAnEndedIterationIsRefused)
{
    for (bool is_send : {false, true}) {
        Op op(is_send, 2);
        op.plan(2, 1);  // two messages
        for (int it = 1; it <= 4; it++) {
            ASSERT_EQ(op.start(), MPIDI_PART_START_RUN);
            MPIDI_PART_iter_t k = MPIDI_PART_st_iter(&op.st);
            if (is_send)
                for (int p = 0; p < 2; p++)
                    op.pready(p);
            MPIDI_PART_iter_t late = k;  // the held-up thread read the iteration here
            op.msg_done(0);
            op.msg_done(1);
            ASSERT_EQ(op.completions, 2 * it - 1);
            ASSERT_FALSE(MPIDI_PART_st_is_running(&op.st));
            ASSERT_EQ(op.start(), MPIDI_PART_START_RUN);  // k + 1
            EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, 0));
            // the late thread: refused, and its question "done in k?" answered yes
            EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, late), -1);
            EXPECT_TRUE(MPIDI_PART_st_msg_is_done_at(&op.st, 0, late));
            EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, 0));
            EXPECT_EQ(op.st.left, 2);
            // one that is even later: k+1 counted m first, then the late one comes
            if (is_send)
                for (int p = 0; p < 2; p++)
                    op.pready(p);
            EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, k + 1), 0);
            EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, late), -1);
            EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 1, late), -1);
            EXPECT_EQ(op.st.done[0], k + 1);  // a late stamp never lowers one
            EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
            op.msg_done(1);
            ASSERT_EQ(op.completions, 2 * it);
        }
    }
}

// A count when no iteration runs (after the last one ended, or one that completed at once)
// is refused and changes nothing: an RDMA completion counted after a failure ended its
// iteration, whose next one failed at its start.
TEST(PartState, CountWithNoIterationRunningIsRefused)
{
    Op op(false, 2);
    op.plan(2, 1);
    op.start();
    op.msg_done(0);
    op.msg_done(1);
    ASSERT_EQ(op.completions, 1);
    MPIDI_PART_iter_t k = MPIDI_PART_st_iter(&op.st);
    MPIDI_PART_iter_t stamp = op.st.done[1];
    EXPECT_EQ(MPIDI_PART_st_msg_done(&op.st, 1), -1);
    EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, k), -1);
    EXPECT_EQ(op.st.left, 0);
    EXPECT_EQ(op.st.done[1], stamp);
    ASSERT_EQ(MPIDI_PART_st_fail(&op.st), 0);  // failed between iterations
    EXPECT_EQ(op.start(), MPIDI_PART_START_COMPLETE);
    EXPECT_EQ(MPIDI_PART_st_msg_done(&op.st, 0), -1);  // iteration k+1 never ran
    EXPECT_EQ(op.st.left, 0);
    EXPECT_EQ(op.completions, 1);
}

// Iterations are 64 bits (part_state.h): the counter passes 2^32 as any other number, the
// stamps with it (with 32 bits it would return to 0 and the first iteration's checks would
// run again; a plain comparison of stamps would call every message done).
TEST(PartState, IterationsAndStampsPass2To32)
{
    static_assert(sizeof(MPIDI_PART_iter_t) == 8, "iterations are 64 bits");
    static_assert(sizeof(((MPIDI_PART_st_t *) nullptr)->iter) == 8, "st.iter");
    Op op(false, 3);
    op.plan(3, 1);
    op.st.iter = 0xfffffffdu;  // as if after 2^32 - 3 iterations
    for (uint32_t m = 0; m < 3; m++)
        op.done[m] = op.st.iter;
    for (int it = 1; it <= 6; it++) {  // the 3rd start is iteration 2^32
        ASSERT_EQ(op.start(), MPIDI_PART_START_RUN);
        MPIDI_PART_iter_t k = op.st.iter;
        EXPECT_EQ(k, 0xfffffffdull + it);
        for (int m = 0; m < 3; m++)
            EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, m)) << "iteration " << k;
        EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 1, k - 1), -1);  // late
        if (k > 0xffffffffull) {  // a number cut to 32 bits names no running iteration
            EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 1, uint32_t(k)), -1);
        }
        for (int m = 0; m < 3; m++)
            op.msg_done(m);
        EXPECT_EQ(op.completions, it);
        for (int m = 0; m < 3; m++) {
            EXPECT_TRUE(MPIDI_PART_st_msg_is_done(&op.st, m));
            EXPECT_EQ(op.done[m], k);
        }
    }
}

// A re-plan installs fresh stamps below the current iteration: a start deferred until the
// new plan is not done yet, and a late thread of the iteration before is refused.
TEST(PartState, ReplanStampsNothingDone)
{
    Op op(false, 4);
    op.plan(4, 1);
    for (int it = 0; it < 2; it++) {
        op.start();
        for (int m = 0; m < 4; m++)
            op.msg_done(m);
    }
    MPIDI_PART_iter_t last = op.st.iter;
    ASSERT_EQ(op.replan(4, 2), 0);  // two messages now, before the next start
    // a late caller of the last iteration, before the next start: refused by the stamp
    EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 1, last), -1);
    EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, last), -1);
    EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
    EXPECT_FALSE(MPIDI_PART_st_msg_is_done(&op.st, 0));
    EXPECT_EQ(MPIDI_PART_st_msg_done_at(&op.st, 0, last), -1);
    EXPECT_EQ(op.st.left, 2);
    op.msg_done(0);
    op.msg_done(1);
    EXPECT_EQ(op.completions, 3);
}

TEST(PartState, DirectEndRefusesIterationsOfSeveralMessages)
{
    Op op(false, 4);
    op.plan(4, 2);  // two messages
    op.start();
    EXPECT_EQ(MPIDI_PART_st_direct_end(&op.st), 0);
    EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
    op.msg_done(0);
    op.msg_done(1);
    EXPECT_EQ(op.completions, 1);
}

// st_msg_of skips the division for one partition per message and for one message: it
// must agree with p / ppm for every layout the planner can give.
TEST(PartState, MessageOfPartitionAgreesWithTheDivision)
{
    for (int parts = 1; parts <= 24; parts++)
        for (int gcd = 1; gcd <= parts; gcd++) {
            if (parts % gcd)
                continue;
            for (int merge = 1; merge <= gcd; merge++) {
                Op op(false, parts);
                op.plan(gcd, merge);
                ASSERT_GT(op.st.ppm, 0);
                for (int p = 0; p < parts; p++)
                    ASSERT_EQ(MPIDI_PART_st_msg_of(&op.st, p), p / op.st.ppm)
                        << parts << " partitions, gcd " << gcd << ", merge " << merge;
                EXPECT_EQ(MPIDI_PART_st_msg_of(&op.st, parts - 1), op.st.nmsgs - 1);
            }
        }
}

// The multiplication that replaces p / ppm must be exact wherever a partition number can
// be: every divisor up to 4096 against the partitions around its multiples, and divisors
// and partitions at the top of int32_t.
TEST(PartState, MessageOfPartitionIsExactForLargeNumbers)
{
    auto msg_of = [](int32_t ppm, int32_t p) {
        MPIDI_PART_st_t st{};
        st.ppm = ppm;
        st.nmsgs = 2;
        st.ppm_inv = MPIDI_PART_div_inv(ppm);
        return MPIDI_PART_st_msg_of(&st, p);
    };
    const int32_t top = INT32_MAX;
    for (int32_t d = 2; d <= 4096; d++) {
        for (int32_t k : {0, 1, 2, 3, 1000, top / d - 1, top / d}) {
            for (int32_t delta : {-1, 0, 1}) {
                int64_t p = int64_t(k) * d + delta;
                if (p < 0 || p > top)
                    continue;
                ASSERT_EQ(msg_of(d, int32_t(p)), int32_t(p / d)) << p << " / " << d;
            }
        }
        ASSERT_EQ(msg_of(d, top), top / d) << d;
    }
    for (int32_t d : {top, top - 1, top / 2, top / 2 + 1, (1 << 30), (1 << 30) + 1, 65537,
                      46341}) {
        for (int32_t p : {0, 1, d - 1, d, top - 1, top})
            ASSERT_EQ(msg_of(d, p), p / d) << p << " / " << d;
    }
}

TEST(PartState, ArrivedIsPerPartitionThroughItsMessage)
{
    Op op(false, 8);
    op.plan(8, 4);  // 2 messages: partitions 0-3 and 4-7
    op.start();
    EXPECT_EQ(MPIDI_PART_st_msg_of(&op.st, 3), 0);
    EXPECT_EQ(MPIDI_PART_st_msg_of(&op.st, 4), 1);
    op.msg_done(1);
    for (int p = 0; p < 8; p++)
        EXPECT_EQ(MPIDI_PART_st_msg_is_done(&op.st, MPIDI_PART_st_msg_of(&op.st, p)), p >= 4);
}

TEST(PartState, StartBeforePlanDefersAndThePlanSendsWhatIsComplete)
{
    Op op(true, 8);
    EXPECT_EQ(op.start(), MPIDI_PART_START_DEFER);
    for (int p : {0, 1, 2, 5})
        EXPECT_EQ(op.pready(p), 0);
    EXPECT_EQ(op.pready(5), MPIDI_PART_READY_TWICE);
    EXPECT_TRUE(op.sent.empty());
    // 4 messages of 2: 0 = {0,1} complete, 1 = {2,3} half, 2 = {4,5} half, 3 none
    EXPECT_EQ(op.plan(4, 1), 1);
    EXPECT_EQ(op.sent, (std::vector<int>{0}));
    EXPECT_EQ(op.pready(3), 1);
    EXPECT_EQ(op.pready(4), 2);
    EXPECT_EQ(op.pready(5), MPIDI_PART_READY_TWICE);
}

TEST(PartState, WithoutCreditCompleteMessagesAreHeldUntilArmed)
{
    Op op(true, 4);
    op.plan(4, 1, false);
    EXPECT_EQ(op.start(false), MPIDI_PART_START_RUN);
    EXPECT_EQ(op.pready(2), 2);
    EXPECT_EQ(op.pready(0), 0);
    EXPECT_TRUE(op.sent.empty());
    EXPECT_EQ(op.st.nheld, 2);
    EXPECT_EQ(op.arm(), 2);
    EXPECT_EQ(op.sent, (std::vector<int>{0, 2}));
    EXPECT_EQ(op.pready(1), 1);  // armed now: straight out
    EXPECT_EQ(op.sent, (std::vector<int>{0, 2, 1}));
    // the next iteration starts unarmed again
    op.start(false);
    EXPECT_FALSE(MPIDI_PART_st_is_armed(&op.st));
    EXPECT_EQ(op.st.nheld, 0);
}

TEST(PartState, DeferredStartWithoutCreditHoldsThePlansCompleteMessages)
{
    Op op(true, 2);
    op.start(false);
    op.pready(0);
    op.pready(1);
    EXPECT_EQ(op.plan(2, 1, false), 0);
    EXPECT_TRUE(op.sent.empty());
    EXPECT_EQ(op.arm(), 2);
}

TEST(PartState, FailureCompletesAStartedIterationAndEveryLaterOne)
{
    Op op(false, 4);
    op.start();
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_fail(&op.st), 1);
    }
    EXPECT_EQ(MPIDI_PART_st_get_state(&op.st), MPIDI_PART_ST_FAILED);
    EXPECT_EQ(op.start(), MPIDI_PART_START_COMPLETE);
    Op idle(true, 4);
    std::lock_guard<std::mutex> g(idle.lock);
    EXPECT_EQ(MPIDI_PART_st_fail(&idle.st), 0);  // nothing was under way
}

TEST(PartState, EmptyPlanCompletesAtOnce)
{
    Op op(true, 0);
    op.start();
    EXPECT_EQ(op.plan(0, 0), 0);  // nmsgs 0
    EXPECT_EQ(MPIDI_PART_st_get_state(&op.st), MPIDI_PART_ST_EMPTY);
    EXPECT_EQ(op.start(), MPIDI_PART_START_COMPLETE);
}

// A send with partitions (of 0 bytes) matched to a receive of 0 partitions: nothing travels,
// but MPI completes the send only once every partition is ready (issue 12: it completed at
// MPI_Start from the second iteration on, and at the plan in the first).
TEST(PartState, EmptyPlanSenderCompletesWithItsLastReady)
{
    Op op(true, 3);
    EXPECT_EQ(op.plan(0, 0), 0);  // plan known before the first start
    EXPECT_EQ(MPIDI_PART_st_get_state(&op.st), MPIDI_PART_ST_EMPTY);
    for (int it = 1; it <= 3; it++) {
        EXPECT_EQ(op.start(), MPIDI_PART_START_AWAIT_READY);
        EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
        EXPECT_EQ(op.pready(2), 0);
        EXPECT_EQ(op.pready(2), MPIDI_PART_READY_TWICE);
        EXPECT_EQ(op.pready(0), 0);
        EXPECT_EQ(op.completions, it - 1);
        EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
        EXPECT_EQ(op.pready(1), MPIDI_PART_READY_LAST);
        EXPECT_EQ(op.completions, it);
        EXPECT_FALSE(MPIDI_PART_st_is_running(&op.st));
        EXPECT_EQ(op.pready(1), MPIDI_PART_READY_TWICE);  // still once per iteration
        EXPECT_EQ(op.completions, it);
    }
    EXPECT_TRUE(op.sent.empty());
}

TEST(PartState, EmptyPlanAfterStartCountsThePartitionsReadiedBefore)
{
    // some partitions readied before the plan: the iteration goes on after it
    Op op(true, 4);
    EXPECT_EQ(op.start(), MPIDI_PART_START_DEFER);
    EXPECT_EQ(op.pready(3), 0);
    EXPECT_EQ(op.pready(0), 0);
    EXPECT_EQ(op.plan(0, 0), 0);
    EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));  // the caller must not complete it
    EXPECT_EQ(op.pready(1), 0);
    EXPECT_EQ(op.pready(2), MPIDI_PART_READY_LAST);
    EXPECT_FALSE(MPIDI_PART_st_is_running(&op.st));
    EXPECT_EQ(op.start(), MPIDI_PART_START_AWAIT_READY);  // and the next iteration waits too

    // every partition readied before the plan: the plan's caller completes the iteration
    Op all(true, 2);
    all.start();
    all.pready(0);
    all.pready(1);
    EXPECT_EQ(all.plan(0, 0), 0);
    EXPECT_FALSE(MPIDI_PART_st_is_running(&all.st));
    EXPECT_EQ(all.completions, 0);  // the plan's caller does it (handle_plan)
}

TEST(PartState, EmptyPlanReceiverAndNoPeerCompleteAtOnce)
{
    Op recv(false, 4);  // receive with partitions against a send of 0 partitions
    EXPECT_EQ(recv.plan(0, 0), 0);
    EXPECT_EQ(recv.start(), MPIDI_PART_START_COMPLETE);
    Op send(true, 4);  // MPI_PROC_NULL: as soon as possible, readied or not
    MPIDI_PART_st_no_peer(&send.st);
    EXPECT_EQ(MPIDI_PART_st_get_state(&send.st), MPIDI_PART_ST_EMPTY);
    EXPECT_EQ(send.start(), MPIDI_PART_START_COMPLETE);
    EXPECT_EQ(send.pready(0), 0);  // allowed, changes nothing
    EXPECT_EQ(send.completions, 0);
}

TEST(PartState, RejectsPlansThatDoNotFit)
{
    Op op(true, 6);
    EXPECT_LT(op.plan(4, 1), 0);  // 4 does not divide 6
    EXPECT_EQ(MPIDI_PART_st_get_state(&op.st), MPIDI_PART_ST_UNPLANNED);
    EXPECT_EQ(op.plan(3, 1), 0);
    EXPECT_LT(op.plan(3, 1), 0);  // only once
}

TEST(PartState, ManyThreadsReadyingSendEveryMessageExactlyOnce)
{
    const int parts = 256, threads = 8, iters = 200;
    Op op(true, parts);
    op.plan(64, 1);  // 64 messages of 4 partitions, interleaved among threads below
    for (int it = 0; it < iters; it++) {
        op.sent.clear();
        op.start();
        std::atomic<int> go{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++) {
            ts.emplace_back([&, t] {
                while (!go.load())
                    ;
                for (int p = t; p < parts; p += threads)
                    EXPECT_NE(op.pready(p), MPIDI_PART_READY_TWICE);
            });
        }
        go = 1;
        for (auto &th : ts)
            th.join();
        std::multiset<int> s(op.sent.begin(), op.sent.end());
        ASSERT_EQ(op.sent.size(), 64u) << "iteration " << it;
        for (int m = 0; m < 64; m++)
            ASSERT_EQ(s.count(m), 1u) << "message " << m << " iteration " << it;
        for (int m = 0; m < 64; m++)
            op.msg_done(m);
    }
    EXPECT_EQ(op.completions, iters);
}

TEST(PartState, ConcurrentDoneReportsCompleteTheIterationOnce)
{
    const int iters = 500;
    Op op(false, 32);
    op.plan(32, 1);
    for (int it = 0; it < iters; it++) {
        op.start();
        std::atomic<int> lasts{0};
        auto reporter = [&] {
            for (int m = 0; m < 32; m++)
                if (MPIDI_PART_st_msg_done(&op.st, m) == 1)
                    lasts++;
        };
        std::thread a(reporter), b(reporter);  // a poller and an MPI_Parrived, say
        a.join();
        b.join();
        ASSERT_EQ(lasts.load(), 1) << "iteration " << it;
    }
}

TEST(PartState, ReplanBetweenIterationsChangesTheLayout)
{
    Op op(true, 8);
    op.plan(8, 1);  // the observed iteration: 8 messages of 1 partition
    EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
    for (int p = 0; p < 8; p++)
        EXPECT_EQ(op.pready(p), p);
    for (int m = 0; m < 8; m++)
        op.msg_done(m);
    EXPECT_EQ(op.completions, 1);
    EXPECT_EQ(op.replan(8, 4), 0);  // 2 messages of 4
    EXPECT_EQ(MPIDI_PART_st_get_state(&op.st), MPIDI_PART_ST_PLANNED);
    EXPECT_EQ(op.st.nmsgs, 2);
    op.sent.clear();
    EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);
    for (int p : {0, 1, 2})
        EXPECT_EQ(op.pready(p), MPIDI_PART_READY_PENDING);
    EXPECT_EQ(op.pready(3), 0);
    for (int p : {7, 6, 5})
        EXPECT_EQ(op.pready(p), MPIDI_PART_READY_PENDING);
    EXPECT_EQ(op.pready(4), 1);
    EXPECT_EQ(op.sent, (std::vector<int>{0, 1}));
    op.msg_done(1);
    EXPECT_EQ(op.completions, 1);
    op.msg_done(0);
    EXPECT_EQ(op.completions, 2);  // two messages end the iteration now, not eight
}

TEST(PartState, StartBeforeTheNewPlanIsDeferredUntilItComes)
{
    // the receiver: MPI_Start of the re-planned iteration before the sender's layout came
    Op op(false, 4);
    op.plan(4, 1);
    op.start();
    for (int m = 0; m < 4; m++)
        op.msg_done(m);
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), 0);
    }
    EXPECT_EQ(op.start(), MPIDI_PART_START_DEFER);
    EXPECT_FALSE(MPIDI_PART_st_is_running(&op.st));
    EXPECT_EQ(op.replan(4, 4), 0);  // one message: the iteration begins with it
    EXPECT_TRUE(MPIDI_PART_st_is_running(&op.st));
    EXPECT_EQ(op.st.left, 1);
    op.msg_done(0);
    EXPECT_EQ(op.completions, 2);
    EXPECT_EQ(op.start(), MPIDI_PART_START_RUN);  // and stays planned
}

TEST(PartState, ReadiesBeforeTheNewPlanAreCountedByIt)
{
    Op op(true, 6);
    op.plan(6, 1);
    op.start();
    for (int p = 0; p < 6; p++)
        op.pready(p);
    for (int m = 0; m < 6; m++)
        op.msg_done(m);
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), 0);
    }
    EXPECT_EQ(op.start(), MPIDI_PART_START_DEFER);
    for (int p : {0, 1, 2, 4})
        EXPECT_EQ(op.pready(p), 0);  // flags only
    op.sent.clear();
    EXPECT_EQ(op.replan(6, 3), 1);  // {0,1,2} complete, {3,4,5} not
    EXPECT_EQ(op.sent, (std::vector<int>{0}));
    EXPECT_EQ(op.pready(5), MPIDI_PART_READY_PENDING);
    EXPECT_EQ(op.pready(3), 1);
}

TEST(PartState, UnplanOnlyBetweenIterationsOfAPlannedOperation)
{
    Op op(false, 4);
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), -1);  // UNPLANNED
    }
    op.plan(4, 1);
    op.start();
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), -1);  // running
    }
    for (int m = 0; m < 4; m++)
        op.msg_done(m);
    {
        std::lock_guard<std::mutex> g(op.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), 0);
        EXPECT_EQ(MPIDI_PART_st_unplan(&op.st), -1);  // twice
    }
    Op empty(false, 0);
    empty.plan(0, 0);
    {
        std::lock_guard<std::mutex> g(empty.lock);
        EXPECT_EQ(MPIDI_PART_st_unplan(&empty.st), -1);  // EMPTY
        MPIDI_PART_st_fail(&empty.st);
        EXPECT_EQ(MPIDI_PART_st_unplan(&empty.st), -1);  // FAILED
    }
}

TEST(PartState, AllReadyOnlyWhenEveryPartitionOfTheIterationIs)
{
    Op send(true, 6);
    EXPECT_EQ(send.plan(3, 1), 0);
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));
    send.start();
    for (int p : {0, 1, 2, 3, 5})
        send.pready(p);
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));   // partition 4 is not
    send.pready(4);
    EXPECT_TRUE(MPIDI_PART_st_all_ready(&send.st));
    for (int m = 0; m < 3; m++)
        send.msg_done(m);
    send.start();   // a new iteration clears the flags
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));
    Op recv(false, 6);
    EXPECT_EQ(recv.plan(3, 1), 0);
    recv.start();
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&recv.st));   // a receiver has no ready flags
}

// The first iteration: readied before the receiver's plan came (what MPI_Finalize's flush
// waits for: the data has not gone yet)
TEST(PartState, AllReadyCountsPartitionsReadiedBeforeThePlan)
{
    Op send(true, 4);
    EXPECT_EQ(send.start(), MPIDI_PART_START_DEFER);
    for (int p : {3, 0, 2})
        EXPECT_EQ(send.pready(p), 0);
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));
    EXPECT_EQ(send.pready(1), 0);
    EXPECT_TRUE(MPIDI_PART_st_all_ready(&send.st));
    EXPECT_TRUE(send.sent.empty());     // nothing went: no plan yet
    EXPECT_EQ(send.plan(2, 1), 2);      // the plan sends both messages
    EXPECT_TRUE(MPIDI_PART_st_all_ready(&send.st));
}

TEST(PartState, AllReadyIsFalseForAZeroPartitionSend)
{
    Op send(true, 0);
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));
    send.start();
    EXPECT_FALSE(MPIDI_PART_st_all_ready(&send.st));
}
