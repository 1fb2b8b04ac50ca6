// verbs-emu internal header: the shared-memory registry layout (every QP, CQ ring, receive
// queue and MR of all processes in one namespace lives in one POSIX shm segment) and the
// declarations shared by registry.cpp (attach/lock/alloc/teardown), engine.cpp (WR execution,
// completions, progress) and verbs_api.cpp (the exported libibverbs entry points).
#pragma once

#include <infiniband/verbs.h>
#include <pthread.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vemu {

constexpr uint32_t kNil = 0xffffffffu;

// Registry capacities (whole namespace, all processes together).
constexpr uint32_t kMaxDev = 4;
constexpr uint32_t kMaxCtx = 256;
constexpr uint32_t kMaxPd = 512;
constexpr uint32_t kMaxMr = 4096;
constexpr uint32_t kMaxChan = 256;
constexpr uint32_t kMaxCq = 512;
constexpr uint32_t kMaxSrq = 128;
constexpr uint32_t kMaxQp = 512;  // qpn = gen << 9 | slot
constexpr uint32_t kQpSlotBits = 9;
constexpr uint32_t kWrSlots = 32768;  // shared pool of queued send/recv WRs
constexpr uint32_t kMaxSge = 16;
constexpr uint32_t kMaxInline = 256;
constexpr uint32_t kMaxQpWr = 8192;
constexpr uint32_t kCqeChunk = 64;
constexpr uint32_t kCqeChunks = 4096;  // arena of 262144 CQEs shared by all CQs
constexpr uint32_t kMaxCqe = 65536;
constexpr uint32_t kAsyncRing = 32;
constexpr uint32_t kMaxRdAtomic = 16;
constexpr uint32_t kMaxMsg = 1u << 30;  // the port's max_msg_sz unless VERBSEMU_MAX_MSG lowers it
constexpr uint64_t kHoldNs = 200000000;  // a VERBSEMU_FAULT=hold WR's time in flight unless VERBSEMU_HOLD_US

// Injected faults (VERBSEMU_FAULT).
enum Fault : int32_t {
  kFaultNone = 0,
  kFaultRemoteAccess,
  kFaultLocalProt,
  kFaultRetryExceeded,
  kFaultRnrExceeded,
  kFaultRemoteOp,
  kFaultFlush,
  kFaultPostEinval,  // not a completion: ibv_post_send refuses the WR (EINVAL, *bad_wr)
  kFaultHold,        // not an error: the WR stays in flight for VERBSEMU_HOLD_US, then runs
};

struct Sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

// A queued work request (send queue entry not yet executed, or a posted receive).
struct WrSlot {
  uint32_t next;
  uint32_t num_sge;
  uint64_t wr_id;
  uint64_t seq;  // send queue sequence number, 1-based
  uint64_t remote_addr;
  uint32_t rkey;
  uint32_t imm;  // network byte order, passed through untouched
  int32_t opcode;
  uint32_t send_flags;
  uint32_t inline_len;
  int32_t fault;
  uint64_t rnr_deadline_ns;    // set at the first receiver-not-ready
  uint64_t retry_deadline_ns;  // set at the first unreachable-destination attempt
  uint64_t hold_until_ns;      // kFaultHold: runs no earlier than this
  Sge sge[kMaxSge];
  uint8_t inline_data[kMaxInline];
};

// A completion as stored in a shared CQ ring, with bookkeeping invisible to the user.
struct Cqe {
  uint64_t wr_id;
  uint32_t status;
  uint32_t opcode;
  uint32_t byte_len;
  uint32_t imm;
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t wc_flags;
  uint32_t vendor_err;
  uint16_t slid;
  uint8_t kind;  // kCqeSend / kCqeRecv / kCqeSrqRecv
  uint8_t solicited;
  uint32_t qp_slot;
  uint32_t srq_slot;
  uint32_t pad;
  uint64_t seq;  // send: retires the send queue up to this sequence number when polled
};
enum : uint8_t { kCqeSend = 1, kCqeRecv = 2, kCqeSrqRecv = 3 };

// Datagram sent to a completion channel's socket: which CQ has an event.
struct WakeMsg {
  uint32_t slot;
  uint32_t pad;
  uint64_t id;
};

struct AsyncRec {
  int32_t type;   // ibv_event_type
  uint32_t kind;  // 0 port, 1 qp, 2 cq, 3 srq
  uint32_t slot;
  uint32_t pad;
  uint64_t obj_id;
};

struct CtxRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t dev;
  uint64_t id;
  uint16_t lid;
  uint8_t gid[16];
  uint32_t async_head, async_count, async_lost;
  AsyncRec async[kAsyncRing];
};

struct PdRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx;
  uint64_t id;
  uint32_t refcnt;
};

struct MrRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx, pd;
  uint64_t id;
  uint64_t addr, length, iova;
  int32_t access;
  uint32_t lkey, rkey;
};

struct ChanRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx;
  uint64_t id;
  uint32_t refcnt;
};

struct CqRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx;
  uint64_t id;
  uint32_t chan;  // kNil: no completion channel
  uint32_t capacity, chunk0, nchunks;
  uint32_t head, count;
  uint32_t armed;  // 0 no, 1 any completion, 2 solicited/error only
  uint32_t overrun;
  uint32_t refcnt;
};

struct SrqRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx, pd;
  uint64_t id;
  uint32_t max_wr, max_sge, limit;
  uint32_t head, tail, queued, outstanding;
  uint32_t refcnt;
};

struct QpRec {
  uint32_t in_use, gen;
  pid_t pid;
  uint32_t ctx, pd;
  uint64_t id;
  uint32_t qpn;
  int32_t state;
  uint32_t sq_sig_all;
  uint32_t scq, rcq, srq;
  ibv_qp_cap cap;
  ibv_qp_attr attr;
  uint16_t lid;
  uint8_t gid[16];
  uint32_t sq_head, sq_tail, sq_pending;
  uint64_t sq_posted, sq_retired;
  uint32_t rq_head, rq_tail, rq_outstanding;
};

struct Registry {
  uint64_t magic;
  uint64_t size;
  pthread_mutex_t lock;
  uint64_t next_id;
  uint32_t next_lid;
  uint32_t pending_total;  // WRs waiting in send queues (RNR / unreachable peer / held)
  uint32_t wr_bump, wr_free;
  uint8_t chunk_used[kCqeChunks];
  CtxRec ctx[kMaxCtx];
  PdRec pd[kMaxPd];
  MrRec mr[kMaxMr];
  ChanRec chan[kMaxChan];
  CqRec cq[kMaxCq];
  SrqRec srq[kMaxSrq];
  QpRec qp[kMaxQp];
  WrSlot wr[kWrSlots];
  Cqe cqe[kCqeChunk * kCqeChunks];
};

// ---- process-local wrappers around the public structs (public struct first) ----
// Laid out as rdma-core's extended context (a verbs_context whose last member is the
// ibv_context), every extended op NULL, so that verbs.h's inline wrappers still fall back to
// the legacy exports and provider libraries that take any context for one of theirs (libefa,
// loaded by libfabric) find a valid verbs_context and refuse it instead of crashing.
struct EmuContext {
  verbs_context vctx;
  uint32_t slot;
  uint64_t id;
};
struct EmuPd {
  ibv_pd pd;
  uint32_t slot;
};
struct EmuMr {
  ibv_mr mr;
  uint32_t slot;
};
struct EmuChan {
  ibv_comp_channel ch;
  uint32_t slot;
  uint64_t id;
};
struct EmuCq {
  ibv_cq cq;
  uint32_t slot;
  uint64_t id;
  uint32_t events_delivered;
};
struct EmuSrq {
  ibv_srq srq;
  uint32_t slot;
  uint64_t id;
};
struct EmuQp {
  ibv_qp qp;
  uint32_t slot;
  uint64_t id;
};

struct FaultRule {
  Fault kind;
  uint64_t nth;
};

// Process-local state.
struct Local {
  Registry* reg = nullptr;
  pid_t me = 0;
  std::string ns;
  int tx_sock = -1;  // unbound datagram socket used to wake other processes
  std::vector<FaultRule> faults;
  bool faults_parsed = false;
  uint64_t hold_ns = kHoldNs;  // VERBSEMU_HOLD_US (kFaultHold), read at every ibv_open_device
  uint32_t max_msg = kMaxMsg;  // VERBSEMU_MAX_MSG, read at every ibv_open_device
  uint64_t send_wr_count = 0;
  std::vector<std::string> leak_notes;
  EmuCq* cq[kMaxCq] = {};
  EmuQp* qp[kMaxQp] = {};
  EmuSrq* srq[kMaxSrq] = {};
};
extern Local g;

// ---- registry.cpp ----
bool attach();  // idempotent; false (with errno and a message) if the registry is unusable
struct Guard {
  Guard();
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};
uint64_t new_id();
uint64_t now_ns();
std::string sock_name(const char* kind, uint64_t id);
int open_bound_socket(const char* kind, uint64_t id);
void send_wakeup(const char* kind, uint64_t id, const void* msg, size_t len);
void reap_dead();
void parse_faults();
bool leak_check_enabled();
// VERBSEMU_CHECK_LEAKS set and not "objects": also QPs destroyed with send completions unread.
bool unread_check_enabled();
void parse_max_msg();  // g.max_msg from VERBSEMU_MAX_MSG
void parse_hold();     // g.hold_ns from VERBSEMU_HOLD_US
void diag(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Slot allocation: returns kNil when the table is full. The generation counter survives.
template <typename Rec, size_t N>
uint32_t alloc_slot(Rec (&table)[N]) {
  for (uint32_t i = 0; i < N; i++) {
    if (!table[i].in_use) {
      uint32_t gen = table[i].gen + 1;
      if ((gen & 0x7f) == 0) gen++;
      table[i] = Rec{};
      table[i].gen = gen;
      table[i].in_use = 1;
      table[i].pid = g.me;
      return i;
    }
  }
  return kNil;
}

// Forced teardown (ignores reference counts, releases everything an object holds).
void free_qp(uint32_t s);
void free_srq(uint32_t s);
void free_cq(uint32_t s);
void free_mr(uint32_t s);
void free_pd(uint32_t s);
void free_chan(uint32_t s);
void free_ctx_objects(uint32_t ctx, std::vector<std::string>* leaks);

// ---- engine.cpp ----
uint32_t wr_alloc();
void wr_free(uint32_t i);
void wr_list_push(uint32_t& head, uint32_t& tail, uint32_t i);
uint32_t wr_list_pop(uint32_t& head, uint32_t& tail);
void wr_list_free_all(uint32_t& head, uint32_t& tail);
Cqe* cqe_at(const CqRec& c, uint32_t idx);
void push_cqe(uint32_t cq, const Cqe& e);
void purge_qp_cqes(uint32_t cq, uint32_t qp_slot);
// Send work requests of a QP whose completions the program has not read: CQEs with a non-zero
// wr_id still in its send CQ, and work requests not yet executed. ibv_destroy_qp discards
// them (as mlx5 cleans a destroyed QP's CQEs out of its CQ), and with them whatever their
// wr_id names.
uint32_t unread_sends(uint32_t qp_slot);
void retire_cqe(const Cqe& e);
void push_async(uint32_t ctx, ibv_event_type type, uint32_t kind, uint32_t slot, uint64_t obj_id);
void qp_to_error(uint32_t q);
void flush_rq(uint32_t q);
void drain_sq(uint32_t q);
void progress();
QpRec* qp_by_qpn(uint32_t qpn);
MrRec* mr_by_key(uint32_t key, bool remote);

}  // namespace vemu
