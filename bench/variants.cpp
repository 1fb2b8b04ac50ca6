// variants.cpp: the ways of moving one pipelined buffer from rank 0 to rank 1.
//
// Every variant follows the same template (see README.md, "The pipelined pattern"): the
// sender's thread 0 starts, the team of threads fills its partitions (each after its compute
// delay), and thread 0 completes. What differs is the MPI used:
//
//   part                partitioned: MPI_Psend_init/MPI_Precv_init once; per iteration
//                       MPI_Start, MPI_Pready per partition from its thread, MPI_Wait.
//   part:AGG            the same with the info key mpich_part_aggregator = AGG (none, size,
//                       ploggp, timer) on both sides: in one run, part:none,part:timer
//                       compares two aggregators iteration by iteration (libraries without
//                       the key ignore it: the rows are then the same operation twice).
//   part:size=N         aggregator "size" merging up to N bytes (info key
//                       mpich_part_aggr_size = N): part,part:size=65536 compares the
//                       default with a fixed AGGR_SIZE in one run.
//   part:observe=N      the default aggregator with MPIR_CVAR_PART_AGGR_OBSERVE = N for this
//                       operation (MPI_T write around MPI_Precv_init, restored after):
//                       part,part:observe=4 compares one observed iteration (the
//                       default) with three.
//   p2p-single          bulk: threads fill, join, then one persistent send of the buffer.
//   p2p-many            one persistent send per partition; thread t uses its own duplicated
//                       communicator; it starts each partition when filled and waits for its
//                       own sends. Receiver threads wait for their own receives.
//   rma-single-passive  one window; the sender holds a shared lock (MPI_MODE_NOCHECK) for the
//                       whole run; per iteration: receive the receiver's "ready" message,
//                       threads MPI_Put their partitions, then MPI_Win_flush and a "done"
//                       message.
//   rma-many-passive    one window per thread (each over the whole buffer); every thread puts
//                       and flushes its own window; then one "done" message.
//   rma-single-active   one window; receiver MPI_Win_post / MPI_Win_wait; sender MPI_Win_start,
//                       threads put, MPI_Win_complete.
//   rma-many-active     one window per thread; every thread runs its own start/put/complete
//                       epoch; the receiver posts and waits on every window.
#include "partbench.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace pb {

void PipeCtx::produce(int tid, int k)
{
    const int p = tid * theta + k;
    const double t0 = now_s();
    fill_pattern(sbuf + (size_t)p * part_bytes, part_bytes, (uint64_t)p * part_bytes, seed);
    if (corrupt_now && p == nparts / 2 && part_bytes > 0)
        sbuf[(size_t)p * part_bytes + part_bytes / 2] ^= 0x5a;
    compute_for(delays[p], spin_only);
    const double t1 = now_s();
    thread_compute[tid] += t1 - t0;
    if (k == theta - 1)
        thread_ready[tid] = t1;
}

namespace {

const int TAG_DATA = 100;
const int TAG_READY = 201;
const int TAG_DONE = 202;

MPI_Group peer_group(MPI_Comm comm, int peer)
{
    MPI_Group g, pg;
    PB_MPI(MPI_Comm_group(comm, &g));
    PB_MPI(MPI_Group_incl(g, 1, &peer, &pg));
    PB_MPI(MPI_Group_free(&g));
    return pg;
}

// ---------------------------------------------------------------------------------------

class Part : public Variant {
    MPI_Request req_ = MPI_REQUEST_NULL;
    std::string aggregator_;    // info key mpich_part_aggregator; empty: not given
    std::string aggr_size_;     // info key mpich_part_aggr_size; empty: not given
    int observe_;               // MPIR_CVAR_PART_AGGR_OBSERVE for MPI_Precv_init; -1: as is

  public:
    explicit Part(std::string aggregator = "", std::string aggr_size = "", int observe = -1)
        : aggregator_(std::move(aggregator)), aggr_size_(std::move(aggr_size)),
          observe_(observe)
    {
    }
    void setup(PipeCtx &c) override
    {
        MPI_Info info = MPI_INFO_NULL;
        if (c.thread_hint || !aggregator_.empty()) // other libraries ignore the keys
            PB_MPI(MPI_Info_create(&info));
        if (c.thread_hint)
            PB_MPI(MPI_Info_set(info, "mpich_part_thread_partitions",
                                std::to_string(c.theta).c_str()));
        if (!aggregator_.empty())
            PB_MPI(MPI_Info_set(info, "mpich_part_aggregator", aggregator_.c_str()));
        if (!aggr_size_.empty())
            PB_MPI(MPI_Info_set(info, "mpich_part_aggr_size", aggr_size_.c_str()));
        if (c.sender)
            PB_MPI(MPI_Psend_init(c.sbuf, c.nparts, (MPI_Count)c.part_bytes, MPI_BYTE, c.peer,
                                  TAG_DATA, c.comm, info, &req_));
        else {
            int old = 0;
            if (observe_ >= 0 && (!cvar_access_int("MPIR_CVAR_PART_AGGR_OBSERVE", &old, false) ||
                                  !cvar_access_int("MPIR_CVAR_PART_AGGR_OBSERVE", &observe_,
                                                   true)))
                fatal("part:observe=%d: MPIR_CVAR_PART_AGGR_OBSERVE cannot be written",
                      observe_);
            PB_MPI(MPI_Precv_init(c.rbuf, c.nparts, (MPI_Count)c.part_bytes, MPI_BYTE, c.peer,
                                  TAG_DATA, c.comm, info, &req_));
            if (observe_ >= 0)
                cvar_access_int("MPIR_CVAR_PART_AGGR_OBSERVE", &old, true);
        }
        if (info != MPI_INFO_NULL)
            PB_MPI(MPI_Info_free(&info));
    }
    void recv_arm(PipeCtx &) override { PB_MPI(MPI_Start(&req_)); }
    void recv_complete(PipeCtx &) override { wait_one(&req_); }
    void send_iter(PipeCtx &c) override
    {
        PB_MPI(MPI_Start(&req_));
        c.team->run([&](int tid) {
            for (int k = 0; k < c.theta; k++) {
                c.produce(tid, k);
                PB_MPI(MPI_Pready(c.first_part(tid) + k, req_));
            }
        });
        wait_one(&req_);
    }
    void teardown(PipeCtx &) override { PB_MPI(MPI_Request_free(&req_)); }
};

// ---------------------------------------------------------------------------------------

class P2pSingle : public Variant {
    MPI_Request req_ = MPI_REQUEST_NULL;

  public:
    void setup(PipeCtx &c) override
    {
        if (c.sender)
            PB_MPI(MPI_Send_init(c.sbuf, (int)c.bytes, MPI_BYTE, c.peer, TAG_DATA, c.comm, &req_));
        else
            PB_MPI(MPI_Recv_init(c.rbuf, (int)c.bytes, MPI_BYTE, c.peer, TAG_DATA, c.comm, &req_));
    }
    void recv_arm(PipeCtx &) override { PB_MPI(MPI_Start(&req_)); }
    void recv_complete(PipeCtx &) override { wait_one(&req_); }
    void send_iter(PipeCtx &c) override
    {
        c.team->run([&](int tid) {
            for (int k = 0; k < c.theta; k++)
                c.produce(tid, k);
        });
        PB_MPI(MPI_Start(&req_));
        wait_one(&req_);
    }
    void teardown(PipeCtx &) override { PB_MPI(MPI_Request_free(&req_)); }
};

// ---------------------------------------------------------------------------------------

class P2pMany : public Variant {
    std::vector<MPI_Comm> comms_;
    std::vector<MPI_Request> reqs_;

  public:
    void setup(PipeCtx &c) override
    {
        comms_.assign(c.threads, MPI_COMM_NULL);
        for (auto &cm : comms_)
            PB_MPI(MPI_Comm_dup(c.comm, &cm));
        reqs_.assign(c.nparts, MPI_REQUEST_NULL);
        for (int p = 0; p < c.nparts; p++) {
            MPI_Comm cm = comms_[p / c.theta];
            size_t off = (size_t)p * c.part_bytes;
            if (c.sender)
                PB_MPI(MPI_Send_init(c.sbuf + off, (int)c.part_bytes, MPI_BYTE, c.peer, p, cm,
                                     &reqs_[p]));
            else
                PB_MPI(MPI_Recv_init(c.rbuf + off, (int)c.part_bytes, MPI_BYTE, c.peer, p, cm,
                                     &reqs_[p]));
        }
    }
    void recv_arm(PipeCtx &c) override { PB_MPI(MPI_Startall(c.nparts, reqs_.data())); }
    void recv_complete(PipeCtx &c) override
    {
        c.team->run([&](int tid) {
            wait_all(c.theta, &reqs_[c.first_part(tid)]);
        });
    }
    void send_iter(PipeCtx &c) override
    {
        c.team->run([&](int tid) {
            for (int k = 0; k < c.theta; k++) {
                c.produce(tid, k);
                PB_MPI(MPI_Start(&reqs_[c.first_part(tid) + k]));
            }
            wait_all(c.theta, &reqs_[c.first_part(tid)]);
        });
    }
    void teardown(PipeCtx &) override
    {
        for (auto &r : reqs_)
            PB_MPI(MPI_Request_free(&r));
        for (auto &cm : comms_)
            PB_MPI(MPI_Comm_free(&cm));
    }
};

// ---------------------------------------------------------------------------------------

// RMA variants: thread tid produces its partitions and puts each one into the window.
static void put_parts(PipeCtx &c, int tid, MPI_Win w)
{
    for (int k = 0; k < c.theta; k++) {
        c.produce(tid, k);
        size_t off = (size_t)(c.first_part(tid) + k) * c.part_bytes;
        PB_MPI(MPI_Put(c.sbuf + off, (int)c.part_bytes, MPI_BYTE, c.peer, (MPI_Aint)off,
                       (int)c.part_bytes, MPI_BYTE, w));
    }
}

class RmaPassive : public Variant {
    bool many_;
    std::vector<MPI_Win> wins_;
    MPI_Comm fcomm_ = MPI_COMM_NULL; // ready / done messages

  public:
    explicit RmaPassive(bool many) : many_(many) {}
    void setup(PipeCtx &c) override
    {
        PB_MPI(MPI_Comm_dup(c.comm, &fcomm_));
        wins_.assign(many_ ? c.threads : 1, MPI_WIN_NULL);
        for (auto &w : wins_) {
            if (c.sender) {
                PB_MPI(MPI_Win_create(nullptr, 0, 1, MPI_INFO_NULL, c.comm, &w));
                PB_MPI(MPI_Win_lock(MPI_LOCK_SHARED, c.peer, MPI_MODE_NOCHECK, w));
            } else {
                PB_MPI(MPI_Win_create(c.rbuf, (MPI_Aint)c.bytes, 1, MPI_INFO_NULL, c.comm, &w));
                // an epoch on its own window lets the receiver call MPI_Win_sync
                PB_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, w));
            }
        }
    }
    void recv_arm(PipeCtx &c) override
    {
        for (auto &w : wins_)
            PB_MPI(MPI_Win_sync(w)); // the receiver's own stores (poisoning) before the puts
        PB_MPI(MPI_Send(nullptr, 0, MPI_BYTE, c.peer, TAG_READY, fcomm_));
    }
    void recv_complete(PipeCtx &c) override
    {
        recv_msg(nullptr, 0, MPI_BYTE, c.peer, TAG_DONE, fcomm_);
        for (auto &w : wins_)
            PB_MPI(MPI_Win_sync(w));
    }
    void send_iter(PipeCtx &c) override
    {
        recv_msg(nullptr, 0, MPI_BYTE, c.peer, TAG_READY, fcomm_);
        c.team->run([&](int tid) {
            MPI_Win w = wins_[many_ ? tid : 0];
            put_parts(c, tid, w);
            if (many_)
                PB_MPI(MPI_Win_flush(c.peer, w));
        });
        if (!many_)
            PB_MPI(MPI_Win_flush(c.peer, wins_[0]));
        PB_MPI(MPI_Send(nullptr, 0, MPI_BYTE, c.peer, TAG_DONE, fcomm_));
    }
    void teardown(PipeCtx &c) override
    {
        for (auto &w : wins_) {
            if (c.sender)
                PB_MPI(MPI_Win_unlock(c.peer, w));
            else
                PB_MPI(MPI_Win_unlock_all(w));
            PB_MPI(MPI_Win_free(&w));
        }
        PB_MPI(MPI_Comm_free(&fcomm_));
    }
};

// ---------------------------------------------------------------------------------------

class RmaActive : public Variant {
    bool many_;
    std::vector<MPI_Win> wins_;
    MPI_Group peer_ = MPI_GROUP_NULL;

  public:
    explicit RmaActive(bool many) : many_(many) {}
    void setup(PipeCtx &c) override
    {
        peer_ = peer_group(c.comm, c.peer);
        wins_.assign(many_ ? c.threads : 1, MPI_WIN_NULL);
        for (auto &w : wins_) {
            if (c.sender)
                PB_MPI(MPI_Win_create(nullptr, 0, 1, MPI_INFO_NULL, c.comm, &w));
            else
                PB_MPI(MPI_Win_create(c.rbuf, (MPI_Aint)c.bytes, 1, MPI_INFO_NULL, c.comm, &w));
        }
    }
    void recv_arm(PipeCtx &) override
    {
        for (auto &w : wins_)
            PB_MPI(MPI_Win_post(peer_, 0, w));
    }
    void recv_complete(PipeCtx &) override
    {
        for (auto &w : wins_)
            win_wait(w);
    }
    void send_iter(PipeCtx &c) override
    {
        if (!many_)
            PB_MPI(MPI_Win_start(peer_, 0, wins_[0]));
        c.team->run([&](int tid) {
            MPI_Win w = wins_[many_ ? tid : 0];
            if (many_)
                PB_MPI(MPI_Win_start(peer_, 0, w));
            put_parts(c, tid, w);
            if (many_)
                PB_MPI(MPI_Win_complete(w));
        });
        if (!many_)
            PB_MPI(MPI_Win_complete(wins_[0]));
    }
    void teardown(PipeCtx &) override
    {
        for (auto &w : wins_)
            PB_MPI(MPI_Win_free(&w));
        PB_MPI(MPI_Group_free(&peer_));
    }
};

} // namespace

const std::vector<std::string> &all_variants()
{
    static const std::vector<std::string> v = {
        "part",           "p2p-single",        "p2p-many",        "rma-single-passive",
        "rma-many-passive", "rma-single-active", "rma-many-active"};
    return v;
}

std::unique_ptr<Variant> make_variant(const std::string &n)
{
    if (n == "part")
        return std::make_unique<Part>();
    if (n.rfind("part:size=", 0) == 0 && n.size() > 10 &&
        n.find_first_not_of("0123456789", 10) == std::string::npos)
        return std::make_unique<Part>("size", n.substr(10));
    if (n.rfind("part:observe=", 0) == 0 && n.size() > 13 && n.size() < 20 &&
        n.find_first_not_of("0123456789", 13) == std::string::npos)
        return std::make_unique<Part>("", "", std::atoi(n.c_str() + 13));
    if (n.rfind("part:", 0) == 0 && n.size() > 5 && n.find('=') == std::string::npos)
        return std::make_unique<Part>(n.substr(5));
    if (n == "p2p-single")
        return std::make_unique<P2pSingle>();
    if (n == "p2p-many")
        return std::make_unique<P2pMany>();
    if (n == "rma-single-passive")
        return std::make_unique<RmaPassive>(false);
    if (n == "rma-many-passive")
        return std::make_unique<RmaPassive>(true);
    if (n == "rma-single-active")
        return std::make_unique<RmaActive>(false);
    if (n == "rma-many-active")
        return std::make_unique<RmaActive>(true);
    return nullptr;
}

} // namespace pb
