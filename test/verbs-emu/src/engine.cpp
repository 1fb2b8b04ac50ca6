// verbs-emu engine: executes RC work requests between processes. There is no NIC and no helper
// thread: a send-queue entry is executed by whichever process runs progress first (the sender at
// post time, then the sender or the target when either polls a CQ, posts a receive or waits for
// a CQ event). Data moves with process_vm_readv/writev; completions are pushed into CQ rings in
// the shared registry, so a process can complete work in another process's CQ.
// All functions here run with the registry lock held.
#include "emu.hpp"

#include <signal.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vemu {

namespace {

constexpr uint32_t kPoisonOpcode = 0xbad;  // opcode/byte_len are undefined in error completions
constexpr uint64_t kMaxWaitNs = 5000000000ull;
constexpr uint64_t kMinWaitNs = 1000000ull;

// IB receiver-not-ready delay encoding (min_rnr_timer), in units of 10 microseconds.
constexpr uint32_t kRnrDelay10us[32] = {65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
                                        48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
                                        2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

struct Outcome {
  bool pending;
  ibv_wc_status st;
};
constexpr Outcome kPending{true, IBV_WC_SUCCESS};
Outcome done(ibv_wc_status st) { return Outcome{false, st}; }

bool alive(pid_t pid) { return pid == g.me || kill(pid, 0) == 0 || errno != ESRCH; }

std::vector<iovec> slice(const std::vector<iovec>& v, size_t off, size_t len) {
  std::vector<iovec> out;
  for (const iovec& e : v) {
    if (len == 0) break;
    if (off >= e.iov_len) {
      off -= e.iov_len;
      continue;
    }
    size_t n = std::min(e.iov_len - off, len);
    out.push_back({static_cast<char*>(e.iov_base) + off, n});
    len -= n;
    off = 0;
  }
  return out;
}

void local_copy(const std::vector<iovec>& s, const std::vector<iovec>& d, size_t len) {
  size_t si = 0, so = 0, di = 0, dof = 0;
  while (len > 0 && si < s.size() && di < d.size()) {
    size_t n = std::min({len, s[si].iov_len - so, d[di].iov_len - dof});
    memmove(static_cast<char*>(d[di].iov_base) + dof, static_cast<const char*>(s[si].iov_base) + so, n);
    len -= n;
    so += n;
    dof += n;
    if (so == s[si].iov_len) si++, so = 0;
    if (dof == d[di].iov_len) di++, dof = 0;
  }
}

// Copy len bytes from the gather list (addresses of process spid; 0 = this process) to the
// scatter list (addresses of process dpid; 0 = this process). Returns 0 or an errno value.
int xfer(pid_t spid, const std::vector<iovec>& src, pid_t dpid, const std::vector<iovec>& dst, size_t len) {
  bool sl = spid == 0 || spid == g.me;
  bool dl = dpid == 0 || dpid == g.me;
  if (sl && dl) {
    local_copy(src, dst, len);
    return 0;
  }
  size_t doneb = 0;
  std::vector<char> bounce;
  while (doneb < len) {
    std::vector<iovec> s = slice(src, doneb, len - doneb);
    std::vector<iovec> d = slice(dst, doneb, len - doneb);
    ssize_t n;
    if (sl) {
      n = process_vm_writev(dpid, s.data(), s.size(), d.data(), d.size(), 0);
    } else if (dl) {
      n = process_vm_readv(spid, d.data(), d.size(), s.data(), s.size(), 0);
    } else {
      size_t chunk = std::min<size_t>(len - doneb, 1 << 16);
      bounce.resize(chunk);
      iovec b{bounce.data(), chunk};
      std::vector<iovec> s2 = slice(src, doneb, chunk);
      n = process_vm_readv(spid, &b, 1, s2.data(), s2.size(), 0);
      if (n > 0) {
        b.iov_len = static_cast<size_t>(n);
        std::vector<iovec> d2 = slice(dst, doneb, static_cast<size_t>(n));
        n = process_vm_writev(dpid, &b, 1, d2.data(), d2.size(), 0);
      }
    }
    if (n <= 0) return n < 0 ? errno : EFAULT;
    doneb += static_cast<size_t>(n);
  }
  return 0;
}

// Validate a local SGE list against the MRs of process pid in PD pd; produce iovecs in that
// process's address space.
bool check_sges(const Sge* sge, uint32_t n, pid_t pid, uint32_t pd, int need, std::vector<iovec>& out,
                uint64_t& total) {
  total = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (sge[i].length == 0) continue;
    MrRec* m = mr_by_key(sge[i].lkey, false);
    if (!m || m->pid != pid || m->pd != pd) return false;
    if (need && (m->access & need) != need) return false;
    uint64_t a = sge[i].addr, l = sge[i].length;
    if (a < m->iova || a - m->iova > m->length || l > m->length - (a - m->iova)) return false;
    out.push_back({reinterpret_cast<void*>(m->addr + (a - m->iova)), l});
    total += l;
  }
  return true;
}

bool check_remote(const QpRec& d, uint32_t rkey, uint64_t addr, uint64_t len, int need, std::vector<iovec>& out) {
  if ((d.attr.qp_access_flags & static_cast<unsigned>(need)) != static_cast<unsigned>(need)) return false;
  MrRec* m = mr_by_key(rkey, true);
  if (!m || m->pid != d.pid || m->pd != d.pd) return false;
  if ((m->access & need) != need) return false;
  if (addr < m->iova || addr - m->iova > m->length || len > m->length - (addr - m->iova)) return false;
  out.push_back({reinterpret_cast<void*>(m->addr + (addr - m->iova)), len});
  return true;
}

uint64_t clamp_wait(uint64_t ns) { return std::max(kMinWaitNs, std::min(kMaxWaitNs, ns)); }

uint64_t transport_wait_ns(const QpRec& q) {
  uint32_t t = q.attr.timeout;
  uint64_t one = t == 0 ? kMaxWaitNs : (4096ull << t);
  return clamp_wait(one * (q.attr.retry_cnt + 1u));
}

bool recv_available(const QpRec& d) {
  if (d.srq != kNil) return g.reg->srq[d.srq].head != kNil;
  return d.rq_head != kNil;
}

// Pop a receive WQE for QP d (from its SRQ when it has one).
uint32_t take_recv(QpRec& d) {
  Registry& r = *g.reg;
  if (d.srq == kNil) return wr_list_pop(d.rq_head, d.rq_tail);
  SrqRec& s = r.srq[d.srq];
  uint32_t i = wr_list_pop(s.head, s.tail);
  if (i != kNil) s.queued--;
  if (s.limit > 0 && s.queued < s.limit) {
    push_async(s.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 3, d.srq, s.id);
    s.limit = 0;  // one-shot, re-armed with ibv_modify_srq
  }
  return i;
}

Cqe recv_cqe(const QpRec& d, uint32_t dslot, const WrSlot& rw, const QpRec& q) {
  Cqe e{};
  e.wr_id = rw.wr_id;
  e.kind = d.srq == kNil ? kCqeRecv : kCqeSrqRecv;
  e.qp_slot = dslot;
  e.srq_slot = d.srq;
  e.qp_num = d.qpn;
  e.src_qp = q.qpn;
  e.slid = q.lid;
  return e;
}

Outcome rnr(const QpRec& q, const QpRec& d, WrSlot& w) {
  uint32_t retry = q.attr.rnr_retry;
  if (retry == 7) return kPending;  // infinite: stays queued until a receive is posted
  if (retry == 0) return done(IBV_WC_RNR_RETRY_EXC_ERR);
  uint64_t now = now_ns();
  if (w.rnr_deadline_ns == 0)
    w.rnr_deadline_ns = now + clamp_wait(retry * kRnrDelay10us[d.attr.min_rnr_timer & 31] * 10000ull);
  return now >= w.rnr_deadline_ns ? done(IBV_WC_RNR_RETRY_EXC_ERR) : kPending;
}

void responder_access_error(uint32_t dslot) {
  QpRec& d = g.reg->qp[dslot];
  qp_to_error(dslot);
  push_async(d.ctx, IBV_EVENT_QP_ACCESS_ERR, 1, dslot, d.id);
}

Outcome execute(uint32_t qslot, WrSlot& w, uint32_t& byte_len) {
  Registry& r = *g.reg;
  QpRec& q = r.qp[qslot];
  byte_len = 0;
  switch (w.fault) {
    case kFaultRemoteAccess: return done(IBV_WC_REM_ACCESS_ERR);
    case kFaultLocalProt: return done(IBV_WC_LOC_PROT_ERR);
    case kFaultRetryExceeded: return done(IBV_WC_RETRY_EXC_ERR);
    case kFaultRnrExceeded: return done(IBV_WC_RNR_RETRY_EXC_ERR);
    case kFaultRemoteOp: return done(IBV_WC_REM_OP_ERR);
    case kFaultHold:  // in flight until its time (later WRs of the QP wait behind it), then runs
      if (now_ns() < w.hold_until_ns) return kPending;
      break;
    default: break;
  }
  const bool is_read = w.opcode == IBV_WR_RDMA_READ;
  std::vector<iovec> lsg;
  uint64_t total = 0;
  pid_t lpid = q.pid;
  if ((w.send_flags & IBV_SEND_INLINE) && !is_read) {
    lsg.push_back({w.inline_data, w.inline_len});
    total = w.inline_len;
    lpid = 0;  // the inline copy lives in the shared registry
  } else if (!check_sges(w.sge, w.num_sge, q.pid, q.pd, is_read ? IBV_ACCESS_LOCAL_WRITE : 0, lsg, total)) {
    return done(IBV_WC_LOC_PROT_ERR);
  }
  if (total > g.max_msg) return done(IBV_WC_LOC_LEN_ERR);

  QpRec* d = qp_by_qpn(q.attr.dest_qp_num);
  // Addressing: the DLID must be the target's LID; with a GRH the DGID must match too, and
  // GID-only (RoCE-style, DLID 0) addressing is accepted.
  const ibv_ah_attr& av = q.attr.ah_attr;
  const bool gid_ok = av.is_global && d && memcmp(av.grh.dgid.raw, d->gid, 16) == 0;
  bool reachable = d && (d->state == IBV_QPS_RTR || d->state == IBV_QPS_RTS) && d->attr.dest_qp_num == q.qpn &&
                   (av.is_global ? gid_ok && (av.dlid == d->lid || av.dlid == 0) : av.dlid == d->lid) &&
                   alive(d->pid);
  if (!reachable) {
    uint64_t now = now_ns();
    if (w.retry_deadline_ns == 0) w.retry_deadline_ns = now + transport_wait_ns(q);
    return now >= w.retry_deadline_ns ? done(IBV_WC_RETRY_EXC_ERR) : kPending;
  }
  const uint32_t dslot = static_cast<uint32_t>(d - r.qp);
  std::vector<iovec> rsg;

  switch (w.opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
      const bool imm = w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
      if (imm && !recv_available(*d)) return rnr(q, *d, w);
      if (total > 0 && !check_remote(*d, w.rkey, w.remote_addr, total, IBV_ACCESS_REMOTE_WRITE, rsg)) {
        responder_access_error(dslot);
        return done(IBV_WC_REM_ACCESS_ERR);
      }
      if (int e = xfer(lpid, lsg, d->pid, rsg, total)) {
        diag("RDMA write qpn 0x%x -> 0x%x: data movement failed: %s", q.qpn, d->qpn, strerror(e));
        return done(IBV_WC_GENERAL_ERR);
      }
      if (imm) {
        uint32_t ri = take_recv(*d);
        Cqe e = recv_cqe(*d, dslot, r.wr[ri], q);
        e.status = IBV_WC_SUCCESS;
        e.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        e.byte_len = static_cast<uint32_t>(total);
        e.imm = w.imm;
        e.wc_flags = IBV_WC_WITH_IMM;
        e.solicited = (w.send_flags & IBV_SEND_SOLICITED) ? 1 : 0;
        wr_free(ri);
        push_cqe(d->rcq, e);
      }
      return done(IBV_WC_SUCCESS);
    }
    case IBV_WR_RDMA_READ: {
      if (q.attr.max_rd_atomic == 0 || d->attr.max_dest_rd_atomic == 0) return done(IBV_WC_REM_INV_REQ_ERR);
      if (total > 0 && !check_remote(*d, w.rkey, w.remote_addr, total, IBV_ACCESS_REMOTE_READ, rsg)) {
        responder_access_error(dslot);
        return done(IBV_WC_REM_ACCESS_ERR);
      }
      if (int e = xfer(d->pid, rsg, lpid, lsg, total)) {
        diag("RDMA read qpn 0x%x <- 0x%x: data movement failed: %s", q.qpn, d->qpn, strerror(e));
        return done(IBV_WC_GENERAL_ERR);
      }
      byte_len = static_cast<uint32_t>(total);
      return done(IBV_WC_SUCCESS);
    }
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: {
      if (!recv_available(*d)) return rnr(q, *d, w);
      uint32_t ri = take_recv(*d);
      WrSlot& rw = r.wr[ri];
      Cqe e = recv_cqe(*d, dslot, rw, q);
      uint32_t rpd = d->srq == kNil ? d->pd : r.srq[d->srq].pd;
      uint64_t cap = 0;
      Outcome out = done(IBV_WC_SUCCESS);
      if (!check_sges(rw.sge, rw.num_sge, d->pid, rpd, IBV_ACCESS_LOCAL_WRITE, rsg, cap)) {
        e.status = IBV_WC_LOC_PROT_ERR;
        out = done(IBV_WC_REM_OP_ERR);
      } else if (cap < total) {
        e.status = IBV_WC_LOC_LEN_ERR;
        out = done(IBV_WC_REM_INV_REQ_ERR);
      } else if (int err = xfer(lpid, lsg, d->pid, rsg, total)) {
        diag("send qpn 0x%x -> 0x%x: data movement failed: %s", q.qpn, d->qpn, strerror(err));
        e.status = IBV_WC_LOC_PROT_ERR;
        out = done(IBV_WC_GENERAL_ERR);
      }
      wr_free(ri);
      if (e.status == IBV_WC_SUCCESS) {
        e.opcode = IBV_WC_RECV;
        e.byte_len = static_cast<uint32_t>(total);
        if (w.opcode == IBV_WR_SEND_WITH_IMM) {
          e.imm = w.imm;
          e.wc_flags = IBV_WC_WITH_IMM;
        }
        e.solicited = (w.send_flags & IBV_SEND_SOLICITED) ? 1 : 0;
        push_cqe(d->rcq, e);
      } else {
        e.opcode = kPoisonOpcode;
        e.byte_len = kPoisonOpcode;
        push_cqe(d->rcq, e);
        qp_to_error(dslot);
      }
      return out;
    }
    default:
      return done(IBV_WC_LOC_QP_OP_ERR);
  }
}

uint32_t wc_opcode_for(int32_t wr_opcode) {
  switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
  }
}

Cqe send_cqe(const QpRec& q, uint32_t qslot, const WrSlot& w, ibv_wc_status st, uint32_t byte_len) {
  Cqe e{};
  e.wr_id = w.wr_id;
  e.status = st;
  e.opcode = st == IBV_WC_SUCCESS ? wc_opcode_for(w.opcode) : kPoisonOpcode;
  e.byte_len = st == IBV_WC_SUCCESS ? byte_len : kPoisonOpcode;
  e.qp_num = q.qpn;
  e.kind = kCqeSend;
  e.qp_slot = qslot;
  e.srq_slot = kNil;
  e.seq = w.seq;
  return e;
}

}  // namespace

// ---------------- WR pool and lists ----------------

uint32_t wr_alloc() {
  Registry& r = *g.reg;
  uint32_t i;
  if (r.wr_free != kNil) {
    i = r.wr_free;
    r.wr_free = r.wr[i].next;
  } else if (r.wr_bump < kWrSlots) {
    i = r.wr_bump++;
  } else {
    return kNil;
  }
  r.wr[i].next = kNil;
  return i;
}

void wr_free(uint32_t i) {
  Registry& r = *g.reg;
  r.wr[i].next = r.wr_free;
  r.wr_free = i;
}

void wr_list_push(uint32_t& head, uint32_t& tail, uint32_t i) {
  g.reg->wr[i].next = kNil;
  if (tail == kNil) head = i;
  else g.reg->wr[tail].next = i;
  tail = i;
}

static void wr_list_push_front(uint32_t& head, uint32_t& tail, uint32_t i) {
  g.reg->wr[i].next = head;
  head = i;
  if (tail == kNil) tail = i;
}

uint32_t wr_list_pop(uint32_t& head, uint32_t& tail) {
  uint32_t i = head;
  if (i == kNil) return kNil;
  head = g.reg->wr[i].next;
  if (head == kNil) tail = kNil;
  g.reg->wr[i].next = kNil;
  return i;
}

void wr_list_free_all(uint32_t& head, uint32_t& tail) {
  for (uint32_t i = wr_list_pop(head, tail); i != kNil; i = wr_list_pop(head, tail)) wr_free(i);
}

// ---------------- CQs and events ----------------

Cqe* cqe_at(const CqRec& c, uint32_t idx) { return &g.reg->cqe[c.chunk0 * kCqeChunk + idx]; }

static void notify(uint32_t cq, bool solicited_or_error) {
  Registry& r = *g.reg;
  CqRec& c = r.cq[cq];
  if (c.armed == 0 || (c.armed == 2 && !solicited_or_error)) return;
  c.armed = 0;
  if (c.chan == kNil || !r.chan[c.chan].in_use) return;
  WakeMsg m{cq, 0, c.id};
  send_wakeup("ch", r.chan[c.chan].id, &m, sizeof m);
}

void push_cqe(uint32_t cq, const Cqe& e) {
  Registry& r = *g.reg;
  if (cq == kNil) return;
  CqRec& c = r.cq[cq];
  if (!c.in_use) return;
  if (c.count >= c.capacity) {
    if (!c.overrun) {
      diag("CQ overrun: CQ id %llu (cqe=%u) is full; completion for wr_id 0x%llx lost, CQ now in error",
           static_cast<unsigned long long>(c.id), c.capacity, static_cast<unsigned long long>(e.wr_id));
      push_async(c.ctx, IBV_EVENT_CQ_ERR, 2, cq, c.id);
    }
    c.overrun = 1;
    return;
  }
  *cqe_at(c, (c.head + c.count) % c.capacity) = e;
  c.count++;
  notify(cq, e.solicited || e.status != IBV_WC_SUCCESS);
}

void retire_cqe(const Cqe& e) {
  Registry& r = *g.reg;
  if (e.kind == kCqeSrqRecv) {
    if (e.srq_slot != kNil && r.srq[e.srq_slot].in_use && r.srq[e.srq_slot].outstanding)
      r.srq[e.srq_slot].outstanding--;
    return;
  }
  QpRec& q = r.qp[e.qp_slot];
  if (!q.in_use || q.qpn != e.qp_num) return;
  if (e.kind == kCqeSend) {
    if (e.seq > q.sq_retired) q.sq_retired = e.seq;
  } else if (e.kind == kCqeRecv && q.rq_outstanding) {
    q.rq_outstanding--;
  }
}

uint32_t unread_sends(uint32_t qp_slot) {
  const QpRec& q = g.reg->qp[qp_slot];
  uint32_t n = q.sq_pending;  // not yet executed: their completions would come later
  if (q.scq == kNil || !g.reg->cq[q.scq].in_use || g.reg->cq[q.scq].overrun) return n;
  const CqRec& c = g.reg->cq[q.scq];  // (an overrun CQ has lost completions anyway)
  for (uint32_t i = 0; i < c.count; i++) {
    const Cqe* e = cqe_at(c, (c.head + i) % c.capacity);
    if (e->qp_slot == qp_slot && e->kind == kCqeSend && e->wr_id != 0) n++;
  }
  return n;
}

void purge_qp_cqes(uint32_t cq, uint32_t qp_slot) {
  if (cq == kNil) return;
  CqRec& c = g.reg->cq[cq];
  if (!c.in_use) return;
  uint32_t w = 0;
  for (uint32_t i = 0; i < c.count; i++) {
    Cqe e = *cqe_at(c, (c.head + i) % c.capacity);
    if (e.qp_slot == qp_slot) {
      retire_cqe(e);
      continue;
    }
    *cqe_at(c, (c.head + w) % c.capacity) = e;
    w++;
  }
  c.count = w;
}

void push_async(uint32_t ctx, ibv_event_type type, uint32_t kind, uint32_t slot, uint64_t obj_id) {
  CtxRec& c = g.reg->ctx[ctx];
  if (!c.in_use) return;
  if (c.async_count == kAsyncRing) {
    c.async_lost++;
    return;
  }
  c.async[(c.async_head + c.async_count) % kAsyncRing] = AsyncRec{type, kind, slot, 0, obj_id};
  c.async_count++;
  uint8_t b = 1;
  send_wakeup("as", c.id, &b, 1);
}

// ---------------- QP state ----------------

void flush_rq(uint32_t qs) {
  Registry& r = *g.reg;
  QpRec& q = r.qp[qs];
  for (uint32_t i = wr_list_pop(q.rq_head, q.rq_tail); i != kNil; i = wr_list_pop(q.rq_head, q.rq_tail)) {
    Cqe e{};
    e.wr_id = r.wr[i].wr_id;
    e.status = IBV_WC_WR_FLUSH_ERR;
    e.opcode = kPoisonOpcode;
    e.byte_len = kPoisonOpcode;
    e.qp_num = q.qpn;
    e.kind = kCqeRecv;
    e.qp_slot = qs;
    e.srq_slot = kNil;
    wr_free(i);
    push_cqe(q.rcq, e);
  }
}

// Move a QP to the error state: every queued send WR and posted receive completes with
// IBV_WC_WR_FLUSH_ERR (signaled or not, as error completions always are).
void qp_to_error(uint32_t qs) {
  Registry& r = *g.reg;
  QpRec& q = r.qp[qs];
  q.state = IBV_QPS_ERR;
  for (uint32_t i = wr_list_pop(q.sq_head, q.sq_tail); i != kNil; i = wr_list_pop(q.sq_head, q.sq_tail)) {
    q.sq_pending--;
    r.pending_total--;
    push_cqe(q.scq, send_cqe(q, qs, r.wr[i], IBV_WC_WR_FLUSH_ERR, 0));
    wr_free(i);
  }
  flush_rq(qs);
}

void drain_sq(uint32_t qs) {
  Registry& r = *g.reg;
  QpRec& q = r.qp[qs];
  while (q.sq_head != kNil) {
    if (q.state == IBV_QPS_ERR) {
      qp_to_error(qs);
      return;
    }
    if (q.state != IBV_QPS_RTS) return;
    uint32_t i = wr_list_pop(q.sq_head, q.sq_tail);
    q.sq_pending--;
    r.pending_total--;
    WrSlot& w = r.wr[i];
    if (w.fault == kFaultFlush) {
      wr_list_push_front(q.sq_head, q.sq_tail, i);
      q.sq_pending++;
      r.pending_total++;
      qp_to_error(qs);
      return;
    }
    uint32_t byte_len = 0;
    Outcome o = execute(qs, w, byte_len);
    if (o.pending) {
      wr_list_push_front(q.sq_head, q.sq_tail, i);
      q.sq_pending++;
      r.pending_total++;
      return;
    }
    bool signaled = q.sq_sig_all || (w.send_flags & IBV_SEND_SIGNALED);
    if (o.st == IBV_WC_SUCCESS) {
      if (signaled) push_cqe(q.scq, send_cqe(q, qs, w, o.st, byte_len));
      wr_free(i);
      continue;
    }
    push_cqe(q.scq, send_cqe(q, qs, w, o.st, 0));
    wr_free(i);
    qp_to_error(qs);
    return;
  }
}

void progress() {
  Registry& r = *g.reg;
  if (r.pending_total == 0) return;
  for (uint32_t s = 0; s < kMaxQp; s++) {
    QpRec& q = r.qp[s];
    if (!q.in_use || q.sq_head == kNil) continue;
    bool mine = q.pid == g.me;
    if (!mine) {
      QpRec* d = qp_by_qpn(q.attr.dest_qp_num);
      mine = d && d->pid == g.me;
    }
    if (mine) drain_sq(s);
  }
}

QpRec* qp_by_qpn(uint32_t qpn) {
  QpRec& q = g.reg->qp[qpn & (kMaxQp - 1)];
  return q.in_use && q.qpn == qpn ? &q : nullptr;
}

MrRec* mr_by_key(uint32_t key, bool remote) {
  uint32_t slot = key >> 8;
  if (slot >= kMaxMr) return nullptr;
  MrRec& m = g.reg->mr[slot];
  if (!m.in_use || (remote ? m.rkey : m.lkey) != key) return nullptr;
  return &m;
}

}  // namespace vemu
