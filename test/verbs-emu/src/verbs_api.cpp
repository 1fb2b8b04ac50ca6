// verbs-emu public entry points: the libibverbs functions exported under their IBVERBS_1.x
// symbol versions (see libibverbs.map) plus the ibv_context_ops used by the static inline
// post/poll calls of <infiniband/verbs.h>. Contexts are "extended" with every extended op NULL
// (EmuContext), so every *_ex inline fails cleanly with EOPNOTSUPP or falls back to the
// exported legacy call.
#include "emu.hpp"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

using namespace vemu;

namespace {

ibv_device g_dev[kMaxDev];
std::once_flag g_dev_once;

constexpr uint64_t kGuidBase = 0x0256454d55000000ull;  // locally administered, "VEMU"

int ndev() {
  const char* s = getenv("VERBSEMU_NDEV");
  if (!s || !*s) return 1;
  int n = atoi(s);
  return n < 0 ? 0 : (n > static_cast<int>(kMaxDev) ? static_cast<int>(kMaxDev) : n);
}

// VERBSEMU_LINK=ethernet: every port is a RoCE port (link layer Ethernet, LID 0), so that
// addresses must carry a GRH, as on real RoCE hardware.
bool roce() {
  static const bool on = [] {
    const char* s = getenv("VERBSEMU_LINK");
    return s && (strcmp(s, "ethernet") == 0 || strcmp(s, "roce") == 0);
  }();
  return on;
}

void init_devs() {
  std::call_once(g_dev_once, [] {
    for (uint32_t i = 0; i < kMaxDev; i++) {
      ibv_device& d = g_dev[i];
      memset(&d, 0, sizeof d);
      d.node_type = IBV_NODE_CA;
      d.transport_type = IBV_TRANSPORT_IB;
      snprintf(d.name, sizeof d.name, "emu%u", i);
      snprintf(d.dev_name, sizeof d.dev_name, "uverbs%u", i);
      snprintf(d.dev_path, sizeof d.dev_path, "/sys/class/infiniband_verbs/uverbs%u", i);
      snprintf(d.ibdev_path, sizeof d.ibdev_path, "/sys/class/infiniband/emu%u", i);
    }
  });
}

int dev_index(const ibv_device* d) {
  for (uint32_t i = 0; i < kMaxDev; i++)
    if (d == &g_dev[i]) return static_cast<int>(i);
  return -1;
}

EmuContext* ectx(ibv_context* c) {
  return reinterpret_cast<EmuContext*>(reinterpret_cast<char*>(c) - offsetof(EmuContext, vctx) -
                                       offsetof(verbs_context, context));
}
uint32_t ctx_slot(ibv_context* c) { return ectx(c)->slot; }
EmuQp* eqp(ibv_qp* q) { return reinterpret_cast<EmuQp*>(q); }
EmuCq* ecq(ibv_cq* c) { return reinterpret_cast<EmuCq*>(c); }
EmuSrq* esrq(ibv_srq* s) { return reinterpret_cast<EmuSrq*>(s); }
EmuPd* epd(ibv_pd* p) { return reinterpret_cast<EmuPd*>(p); }
EmuChan* echan(ibv_comp_channel* c) { return reinterpret_cast<EmuChan*>(c); }

void* fail_null(int e) {
  errno = e;
  return nullptr;
}

// Is [a, a+len) entirely mapped in this process (and writable if asked)? This is what pinning
// in a real ibv_reg_mr checks; it returns EFAULT otherwise.
bool range_mapped(uint64_t a, uint64_t len, bool need_write) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return true;
  uint64_t cur = a, end = a + len;
  char line[600];
  bool ok = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (hi <= cur) continue;
    if (lo > cur) break;
    if (perms[0] != 'r' && perms[1] != 'w') break;
    if (need_write && perms[1] != 'w') break;
    cur = hi;
    if (cur >= end) {
      ok = true;
      break;
    }
  }
  fclose(f);
  return ok;
}

// ------------- ops reached through ctx->ops by the inline verbs -------------

int emu_poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  if (n < 0) return -1;
  CqRec& c = g.reg->cq[ecq(cq)->slot];
  if (__atomic_load_n(&c.count, __ATOMIC_ACQUIRE) == 0 && __atomic_load_n(&g.reg->pending_total, __ATOMIC_ACQUIRE) == 0 &&
      !__atomic_load_n(&c.overrun, __ATOMIC_ACQUIRE)) {
    // Nothing to do: skip the lock and give the CPU to the peer (a real CQ poll costs ~0).
    sched_yield();
    return 0;
  }
  Guard lk;
  progress();
  if (!c.in_use || c.overrun) return -1;
  int k = 0;
  while (k < n && c.count > 0) {
    Cqe e = *cqe_at(c, c.head);
    c.head = (c.head + 1) % c.capacity;
    c.count--;
    retire_cqe(e);
    ibv_wc& w = wc[k++];
    memset(&w, 0, sizeof w);
    w.wr_id = e.wr_id;
    w.status = static_cast<ibv_wc_status>(e.status);
    w.opcode = static_cast<ibv_wc_opcode>(e.opcode);
    w.vendor_err = e.vendor_err;
    w.byte_len = e.byte_len;
    w.imm_data = e.imm;
    w.qp_num = e.qp_num;
    w.src_qp = e.src_qp;
    w.wc_flags = e.wc_flags;
    w.slid = e.slid;
  }
  return k;
}

int emu_req_notify_cq(ibv_cq* cq, int solicited_only) {
  Guard lk;
  CqRec& c = g.reg->cq[ecq(cq)->slot];
  if (!c.in_use) return EINVAL;
  c.armed = solicited_only ? 2 : 1;
  return 0;
}

int emu_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Guard lk;
  Registry& r = *g.reg;
  const uint32_t slot = eqp(qp)->slot;
  QpRec& q = r.qp[slot];
  if (!q.in_use || q.pid != g.me || q.state == IBV_QPS_RESET || q.state == IBV_QPS_INIT ||
      q.state == IBV_QPS_RTR) {
    *bad_wr = wr;
    return EINVAL;
  }
  int rc = 0;
  for (ibv_send_wr* w = wr; w; w = w->next) {
    if (q.sq_posted - q.sq_retired >= q.cap.max_send_wr) {
      rc = ENOMEM;
    } else if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > q.cap.max_send_sge) {
      rc = EINVAL;
    } else if (w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM && w->opcode != IBV_WR_RDMA_WRITE &&
               w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && w->opcode != IBV_WR_RDMA_READ) {
      rc = EINVAL;
    } else if (w->send_flags & IBV_SEND_INLINE) {
      uint64_t total = 0;
      for (int i = 0; i < w->num_sge; i++) total += w->sg_list[i].length;
      if (w->opcode == IBV_WR_RDMA_READ || total > q.cap.max_inline_data) rc = EINVAL;
    }
    if (!rc) {
      // VERBSEMU_FAULT=post_einval@N: the N-th send WR is refused here (it counts as posted
      // for the numbering, so later faults keep their places)
      for (const FaultRule& f : g.faults)
        if (f.kind == kFaultPostEinval && f.nth == g.send_wr_count + 1) rc = EINVAL;
      if (rc) g.send_wr_count++;
    }
    uint32_t i = rc ? kNil : wr_alloc();
    if (!rc && i == kNil) {
      diag("shared WR pool exhausted (%u entries)", kWrSlots);
      rc = ENOMEM;
    }
    if (rc) {
      *bad_wr = w;
      break;
    }
    WrSlot& s = r.wr[i];
    s.num_sge = static_cast<uint32_t>(w->num_sge);
    s.wr_id = w->wr_id;
    s.opcode = w->opcode;
    s.send_flags = w->send_flags;
    s.imm = w->imm_data;
    s.remote_addr = w->wr.rdma.remote_addr;
    s.rkey = w->wr.rdma.rkey;
    s.inline_len = 0;
    s.fault = kFaultNone;
    s.rnr_deadline_ns = 0;
    s.retry_deadline_ns = 0;
    s.hold_until_ns = 0;
    for (int k = 0; k < w->num_sge; k++) s.sge[k] = Sge{w->sg_list[k].addr, w->sg_list[k].length, w->sg_list[k].lkey};
    if (w->send_flags & IBV_SEND_INLINE) {
      // Inline data is captured now: the caller may reuse its buffer as soon as we return.
      for (int k = 0; k < w->num_sge; k++) {
        memcpy(s.inline_data + s.inline_len, reinterpret_cast<const void*>(w->sg_list[k].addr), w->sg_list[k].length);
        s.inline_len += w->sg_list[k].length;
      }
    }
    g.send_wr_count++;
    for (const FaultRule& f : g.faults)
      if (f.nth == g.send_wr_count && f.kind != kFaultPostEinval) s.fault = f.kind;
    if (s.fault == kFaultHold) s.hold_until_ns = now_ns() + g.hold_ns;
    s.seq = ++q.sq_posted;
    wr_list_push(q.sq_head, q.sq_tail, i);
    q.sq_pending++;
    r.pending_total++;
  }
  drain_sq(slot);
  return rc;
}

int emu_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Guard lk;
  Registry& r = *g.reg;
  const uint32_t slot = eqp(qp)->slot;
  QpRec& q = r.qp[slot];
  if (!q.in_use || q.pid != g.me || q.srq != kNil || q.state == IBV_QPS_RESET) {
    *bad_wr = wr;
    return EINVAL;
  }
  int rc = 0;
  for (ibv_recv_wr* w = wr; w; w = w->next) {
    if (q.rq_outstanding >= q.cap.max_recv_wr) rc = ENOMEM;
    else if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > q.cap.max_recv_sge) rc = EINVAL;
    uint32_t i = rc ? kNil : wr_alloc();
    if (!rc && i == kNil) rc = ENOMEM;
    if (rc) {
      *bad_wr = w;
      break;
    }
    WrSlot& s = r.wr[i];
    s.wr_id = w->wr_id;
    s.num_sge = static_cast<uint32_t>(w->num_sge);
    for (int k = 0; k < w->num_sge; k++) s.sge[k] = Sge{w->sg_list[k].addr, w->sg_list[k].length, w->sg_list[k].lkey};
    wr_list_push(q.rq_head, q.rq_tail, i);
    q.rq_outstanding++;
  }
  if (q.state == IBV_QPS_ERR) flush_rq(slot);
  progress();  // a sender waiting on receiver-not-ready may proceed now
  return rc;
}

int emu_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Guard lk;
  Registry& r = *g.reg;
  SrqRec& q = r.srq[esrq(srq)->slot];
  if (!q.in_use || q.pid != g.me) {
    *bad_wr = wr;
    return EINVAL;
  }
  int rc = 0;
  for (ibv_recv_wr* w = wr; w; w = w->next) {
    if (q.outstanding >= q.max_wr) rc = ENOMEM;
    else if (w->num_sge < 0 || static_cast<uint32_t>(w->num_sge) > q.max_sge) rc = EINVAL;
    uint32_t i = rc ? kNil : wr_alloc();
    if (!rc && i == kNil) rc = ENOMEM;
    if (rc) {
      *bad_wr = w;
      break;
    }
    WrSlot& s = r.wr[i];
    s.wr_id = w->wr_id;
    s.num_sge = static_cast<uint32_t>(w->num_sge);
    for (int k = 0; k < w->num_sge; k++) s.sge[k] = Sge{w->sg_list[k].addr, w->sg_list[k].length, w->sg_list[k].lkey};
    wr_list_push(q.head, q.tail, i);
    q.queued++;
    q.outstanding++;
  }
  progress();
  return rc;
}

// ------------- modify_qp rules (RC) -------------

struct Transition {
  int req, opt;
  bool ok;
};

Transition transition(int cur, int next) {
  constexpr int S = IBV_QP_STATE;
  if (next == IBV_QPS_RESET) return {S, 0, true};
  if (next == IBV_QPS_ERR) return {S, 0, true};
  switch (cur) {
    case IBV_QPS_RESET:
      if (next == IBV_QPS_INIT) return {S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0, true};
      break;
    case IBV_QPS_INIT:
      if (next == IBV_QPS_INIT) return {0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, true};
      if (next == IBV_QPS_RTR)
        return {S | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                    IBV_QP_MIN_RNR_TIMER,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, true};
      break;
    case IBV_QPS_RTR:
      if (next == IBV_QPS_RTS)
        return {S | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE, true};
      break;
    case IBV_QPS_RTS:
      if (next == IBV_QPS_RTS)
        return {0, IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER, true};
      break;
    case IBV_QPS_SQE:
      if (next == IBV_QPS_RTS) return {S, IBV_QP_ACCESS_FLAGS, true};
      break;
    default:
      break;
  }
  return {0, 0, false};
}

int check_values(const ibv_qp_attr* a, int mask) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC;
  if ((mask & IBV_QP_PORT) && a->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~kAccess)) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)) return EINVAL;
  if (mask & IBV_QP_AV) {
    if (a->ah_attr.port_num != 1) return EINVAL;
    if (a->ah_attr.is_global && a->ah_attr.grh.sgid_index != 0) return EINVAL;
    if (roce() && !a->ah_attr.is_global) return EINVAL;  // RoCE has no LID routing
  }
  if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > kMaxRdAtomic) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > kMaxRdAtomic) return EINVAL;
  return 0;
}

void apply_attr(ibv_qp_attr& d, const ibv_qp_attr* a, int mask) {
  if (mask & IBV_QP_PKEY_INDEX) d.pkey_index = a->pkey_index;
  if (mask & IBV_QP_PORT) d.port_num = a->port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) d.qp_access_flags = a->qp_access_flags;
  if (mask & IBV_QP_AV) d.ah_attr = a->ah_attr;
  if (mask & IBV_QP_ALT_PATH) {
    d.alt_ah_attr = a->alt_ah_attr;
    d.alt_pkey_index = a->alt_pkey_index;
    d.alt_port_num = a->alt_port_num;
    d.alt_timeout = a->alt_timeout;
  }
  if (mask & IBV_QP_PATH_MTU) d.path_mtu = a->path_mtu;
  if (mask & IBV_QP_DEST_QPN) d.dest_qp_num = a->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) d.rq_psn = a->rq_psn;
  if (mask & IBV_QP_SQ_PSN) d.sq_psn = a->sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) d.max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) d.max_rd_atomic = a->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) d.min_rnr_timer = a->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) d.timeout = a->timeout;
  if (mask & IBV_QP_RETRY_CNT) d.retry_cnt = a->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) d.rnr_retry = a->rnr_retry;
  if (mask & IBV_QP_PATH_MIG_STATE) d.path_mig_state = a->path_mig_state;
}

ibv_mr* reg_mr_common(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  constexpr unsigned kSupported = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;
  if (!pd) return static_cast<ibv_mr*>(fail_null(EINVAL));
  access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);  // optional hints may be ignored
  if (access & IBV_ACCESS_ON_DEMAND) return static_cast<ibv_mr*>(fail_null(EOPNOTSUPP));
  if (access & ~kSupported) return static_cast<ibv_mr*>(fail_null(EINVAL));
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
    return static_cast<ibv_mr*>(fail_null(EINVAL));
  if (length == 0 || length > (1ull << 40)) return static_cast<ibv_mr*>(fail_null(EINVAL));
  uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a + length < a || !range_mapped(a, length, access & IBV_ACCESS_LOCAL_WRITE))
    return static_cast<ibv_mr*>(fail_null(EFAULT));
  auto* m = new (std::nothrow) EmuMr{};
  if (!m) return static_cast<ibv_mr*>(fail_null(ENOMEM));
  Guard lk;
  Registry& r = *g.reg;
  uint32_t s = alloc_slot(r.mr);
  if (s == kNil) {
    delete m;
    return static_cast<ibv_mr*>(fail_null(ENOMEM));
  }
  MrRec& rec = r.mr[s];
  rec.ctx = ctx_slot(pd->context);
  rec.pd = epd(pd)->slot;
  rec.id = new_id();
  rec.addr = a;
  rec.length = length;
  rec.iova = iova;
  rec.access = static_cast<int32_t>(access);
  rec.lkey = (s << 8) | (rec.gen & 0x7f);
  rec.rkey = rec.lkey | 0x80;  // distinct from lkey: swapping them is caught
  r.pd[rec.pd].refcnt++;
  m->slot = s;
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.handle = s;
  m->mr.lkey = rec.lkey;
  m->mr.rkey = rec.rkey;
  return &m->mr;
}

void fill_port(uint32_t cslot, ibv_port_attr& p) {
  memset(&p, 0, sizeof p);
  p.state = IBV_PORT_ACTIVE;
  p.max_mtu = IBV_MTU_4096;
  p.active_mtu = IBV_MTU_4096;
  p.gid_tbl_len = 1;
  p.port_cap_flags = 0;
  p.max_msg_sz = g.max_msg;
  p.pkey_tbl_len = 1;
  p.lid = g.reg->ctx[cslot].lid;
  p.sm_lid = 1;
  p.lmc = 0;
  p.max_vl_num = 1;
  p.subnet_timeout = 18;
  p.active_width = 2;   // 4X
  p.active_speed = 32;  // EDR
  p.phys_state = 5;     // LinkUp
  p.link_layer = IBV_LINK_LAYER_INFINIBAND;
  if (roce()) {
    p.lid = 0;
    p.sm_lid = 0;
    p.link_layer = IBV_LINK_LAYER_ETHERNET;
  }
}

}  // namespace

// ======================= exported API =======================

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  if (!attach()) return nullptr;
  init_devs();
  int n = ndev();
  auto** list = static_cast<ibv_device**>(calloc(static_cast<size_t>(n) + 1, sizeof(ibv_device*)));
  if (!list) return static_cast<ibv_device**>(fail_null(ENOMEM));
  for (int i = 0; i < n; i++) list[i] = &g_dev[i];
  if (num_devices) *num_devices = n;
  return list;
}

void ibv_free_device_list(ibv_device** list) { free(list); }

const char* ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

__be64 ibv_get_device_guid(ibv_device* device) {
  int i = dev_index(device);
  return htobe64(kGuidBase | static_cast<uint64_t>(i < 0 ? 0 : i));
}

int ibv_get_device_index(ibv_device* device) { return dev_index(device); }

ibv_context* ibv_open_device(ibv_device* device) {
  int idx = dev_index(device);
  if (idx < 0 || idx >= ndev()) return static_cast<ibv_context*>(fail_null(ENODEV));
  if (!attach()) return nullptr;
  auto* c = new (std::nothrow) EmuContext{};
  if (!c) return static_cast<ibv_context*>(fail_null(ENOMEM));
  {
    Guard lk;
    Registry& r = *g.reg;
    parse_faults();
    parse_max_msg();
    parse_hold();
    reap_dead();
    uint32_t s = alloc_slot(r.ctx);
    if (s == kNil) {
      delete c;
      return static_cast<ibv_context*>(fail_null(ENOMEM));
    }
    CtxRec& rec = r.ctx[s];
    rec.id = new_id();
    rec.dev = static_cast<uint32_t>(idx);
    rec.lid = static_cast<uint16_t>(r.next_lid);
    r.next_lid = r.next_lid >= 0xbfff ? 1 : r.next_lid + 1;
    uint8_t gid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 'v', 'e', 'm', 0, static_cast<uint8_t>(idx),
                       static_cast<uint8_t>(rec.lid >> 8), static_cast<uint8_t>(rec.lid)};
    memcpy(rec.gid, gid, 16);
    c->slot = s;
    c->id = rec.id;
  }
  c->vctx.context.device = device;
  c->vctx.context.ops.poll_cq = emu_poll_cq;
  c->vctx.context.ops.req_notify_cq = emu_req_notify_cq;
  c->vctx.context.ops.post_send = emu_post_send;
  c->vctx.context.ops.post_recv = emu_post_recv;
  c->vctx.context.ops.post_srq_recv = emu_post_srq_recv;
  c->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  c->vctx.context.async_fd = open_bound_socket("as", c->id);
  c->vctx.context.num_comp_vectors = 1;
  pthread_mutex_init(&c->vctx.context.mutex, nullptr);
  c->vctx.sz = sizeof(verbs_context);
  c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  if (c->vctx.context.async_fd < 0) diag("async event socket: %s", strerror(errno));
  return &c->vctx.context;
}

int ibv_close_device(ibv_context* context) {
  EmuContext* c = ectx(context);
  {
    Guard lk;
    std::vector<std::string> left;
    free_ctx_objects(c->slot, &left);
    for (auto& l : left) g.leak_notes.push_back(l + " (still alive at ibv_close_device)");
    g.reg->ctx[c->slot].in_use = 0;
  }
  if (c->vctx.context.cmd_fd >= 0) close(c->vctx.context.cmd_fd);
  if (c->vctx.context.async_fd >= 0) close(c->vctx.context.async_fd);
  pthread_mutex_destroy(&c->vctx.context.mutex);
  delete c;
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* a) {
  if (!context || !a) return EINVAL;
  int idx = dev_index(context->device);
  memset(a, 0, sizeof *a);
  snprintf(a->fw_ver, sizeof a->fw_ver, "verbsemu-1.0");
  a->node_guid = htobe64(kGuidBase | static_cast<uint64_t>(idx));
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = 1ull << 40;
  a->page_size_cap = 0xfffff000;
  a->vendor_id = 0;
  a->vendor_part_id = 0xe0e0;
  a->hw_ver = 1;
  a->max_qp = kMaxQp;
  a->max_qp_wr = kMaxQpWr;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = kMaxCq;
  a->max_cqe = kMaxCqe;
  a->max_mr = kMaxMr;
  a->max_pd = kMaxPd;
  a->max_qp_rd_atom = kMaxRdAtomic;
  a->max_res_rd_atom = kMaxRdAtomic * kMaxQp;
  a->max_qp_init_rd_atom = kMaxRdAtomic;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_srq = kMaxSrq;
  a->max_srq_wr = kMaxQpWr;
  a->max_srq_sge = kMaxSge;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = 1;
  return 0;
}

int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* port_attr) {
  if (!context || !port_attr) return EINVAL;
  if (port_num != 1) return EINVAL;
  ibv_port_attr p;
  {
    Guard lk;
    fill_port(ctx_slot(context), p);
  }
  // Callers compiled against older headers pass the shorter legacy struct.
  memcpy(port_attr, &p, offsetof(ibv_port_attr, port_cap_flags2));
  return 0;
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid) {
  if (!context || !gid || port_num != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  Guard lk;
  memcpy(gid->raw, g.reg->ctx[ctx_slot(context)].gid, 16);
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  if (!context || !entry || flags || entry_size < sizeof(ibv_gid_entry) || port_num != 1) return EINVAL;
  if (gid_index != 0) return ENODATA;
  memset(entry, 0, sizeof *entry);
  Guard lk;
  memcpy(entry->gid.raw, g.reg->ctx[ctx_slot(context)].gid, 16);
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = roce() ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
  entry->ndev_ifindex = 0;
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  if (!context || flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < 1) return -EINVAL;
  int rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
  return rc ? -rc : 1;
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  if (!context || !pkey || port_num != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xffff);
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  if (!context || port_num != 1) return -EINVAL;
  return pkey == htobe16(0xffff) ? 0 : -ENOENT;
}

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  if (!context) return static_cast<ibv_pd*>(fail_null(EINVAL));
  auto* p = new (std::nothrow) EmuPd{};
  if (!p) return static_cast<ibv_pd*>(fail_null(ENOMEM));
  Guard lk;
  uint32_t s = alloc_slot(g.reg->pd);
  if (s == kNil) {
    delete p;
    return static_cast<ibv_pd*>(fail_null(ENOMEM));
  }
  g.reg->pd[s].ctx = ctx_slot(context);
  g.reg->pd[s].id = new_id();
  p->slot = s;
  p->pd.context = context;
  p->pd.handle = s;
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  if (!pd) return EINVAL;
  {
    Guard lk;
    PdRec& rec = g.reg->pd[epd(pd)->slot];
    if (!rec.in_use || rec.pid != g.me) return EINVAL;
    if (rec.refcnt) return EBUSY;
    free_pd(epd(pd)->slot);
  }
  delete epd(pd);
  return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return reg_mr_common(pd, addr, length, reinterpret_cast<uint64_t>(addr), static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return reg_mr_common(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return reg_mr_common(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  if (!mr) return EINVAL;
  auto* m = reinterpret_cast<EmuMr*>(mr);
  {
    Guard lk;
    MrRec& rec = g.reg->mr[m->slot];
    if (!rec.in_use || rec.pid != g.me || rec.lkey != mr->lkey) return EINVAL;
    free_mr(m->slot);
  }
  delete m;
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (!context) return static_cast<ibv_comp_channel*>(fail_null(EINVAL));
  auto* c = new (std::nothrow) EmuChan{};
  if (!c) return static_cast<ibv_comp_channel*>(fail_null(ENOMEM));
  Guard lk;
  uint32_t s = alloc_slot(g.reg->chan);
  if (s == kNil) {
    delete c;
    return static_cast<ibv_comp_channel*>(fail_null(ENOMEM));
  }
  ChanRec& rec = g.reg->chan[s];
  rec.ctx = ctx_slot(context);
  rec.id = new_id();
  int fd = open_bound_socket("ch", rec.id);
  if (fd < 0) {
    int e = errno;
    rec.in_use = 0;
    delete c;
    return static_cast<ibv_comp_channel*>(fail_null(e));
  }
  c->slot = s;
  c->id = rec.id;
  c->ch.context = context;
  c->ch.fd = fd;
  c->ch.refcnt = 0;
  return &c->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!channel) return EINVAL;
  EmuChan* c = echan(channel);
  {
    Guard lk;
    ChanRec& rec = g.reg->chan[c->slot];
    if (!rec.in_use || rec.id != c->id) return EINVAL;
    if (rec.refcnt) return EBUSY;
    free_chan(c->slot);
  }
  close(channel->fd);
  delete c;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  if (!context || cqe < 1 || cqe > static_cast<int>(kMaxCqe) || comp_vector < 0 ||
      comp_vector >= context->num_comp_vectors || (channel && channel->context != context))
    return static_cast<ibv_cq*>(fail_null(EINVAL));
  auto* c = new (std::nothrow) EmuCq{};
  if (!c) return static_cast<ibv_cq*>(fail_null(ENOMEM));
  Guard lk;
  Registry& r = *g.reg;
  uint32_t need = (static_cast<uint32_t>(cqe) + kCqeChunk - 1) / kCqeChunk;
  uint32_t start = kNil;
  for (uint32_t i = 0, run = 0; i < kCqeChunks; i++) {
    run = r.chunk_used[i] ? 0 : run + 1;
    if (run == need) {
      start = i + 1 - need;
      break;
    }
  }
  uint32_t s = start == kNil ? kNil : alloc_slot(r.cq);
  if (s == kNil) {
    delete c;
    return static_cast<ibv_cq*>(fail_null(ENOMEM));
  }
  for (uint32_t i = 0; i < need; i++) r.chunk_used[start + i] = 1;
  CqRec& rec = r.cq[s];
  rec.ctx = ctx_slot(context);
  rec.id = new_id();
  rec.chan = channel ? echan(channel)->slot : kNil;
  if (channel) r.chan[rec.chan].refcnt++;
  rec.capacity = static_cast<uint32_t>(cqe);
  rec.chunk0 = start;
  rec.nchunks = need;
  c->slot = s;
  c->id = rec.id;
  c->cq.context = context;
  c->cq.channel = channel;
  c->cq.cq_context = cq_context;
  c->cq.handle = s;
  c->cq.cqe = cqe;
  pthread_mutex_init(&c->cq.mutex, nullptr);
  pthread_cond_init(&c->cq.cond, nullptr);
  g.cq[s] = c;
  return &c->cq;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (!cq || cqe < 1 || cqe > static_cast<int>(kMaxCqe)) return EINVAL;
  Guard lk;
  Registry& r = *g.reg;
  CqRec& c = r.cq[ecq(cq)->slot];
  if (!c.in_use || c.pid != g.me) return EINVAL;
  if (static_cast<uint32_t>(cqe) < c.count) return EINVAL;
  uint32_t need = (static_cast<uint32_t>(cqe) + kCqeChunk - 1) / kCqeChunk;
  for (uint32_t i = 0; i < c.nchunks; i++) r.chunk_used[c.chunk0 + i] = 0;
  uint32_t start = kNil;
  for (uint32_t i = 0, run = 0; i < kCqeChunks; i++) {
    run = r.chunk_used[i] ? 0 : run + 1;
    if (run == need) {
      start = i + 1 - need;
      break;
    }
  }
  if (start == kNil) {
    for (uint32_t i = 0; i < c.nchunks; i++) r.chunk_used[c.chunk0 + i] = 1;
    return ENOMEM;
  }
  std::vector<Cqe> keep;
  for (uint32_t i = 0; i < c.count; i++) keep.push_back(*cqe_at(c, (c.head + i) % c.capacity));
  for (uint32_t i = 0; i < need; i++) r.chunk_used[start + i] = 1;
  c.chunk0 = start;
  c.nchunks = need;
  c.capacity = static_cast<uint32_t>(cqe);
  c.head = 0;
  for (uint32_t i = 0; i < keep.size(); i++) *cqe_at(c, i) = keep[i];
  cq->cqe = cqe;
  return 0;
}

int ibv_destroy_cq(ibv_cq* cq) {
  if (!cq) return EINVAL;
  EmuCq* c = ecq(cq);
  {
    Guard lk;
    CqRec& rec = g.reg->cq[c->slot];
    if (!rec.in_use || rec.id != c->id) return EINVAL;
    if (rec.refcnt) return EBUSY;
    pthread_mutex_lock(&cq->mutex);
    uint32_t unacked = c->events_delivered - cq->comp_events_completed;
    pthread_mutex_unlock(&cq->mutex);
    if (unacked) {
      // The real library blocks forever here; report it instead.
      diag("ibv_destroy_cq: %u completion event(s) not acknowledged with ibv_ack_cq_events", unacked);
      return EBUSY;
    }
    free_cq(c->slot);
  }
  pthread_mutex_destroy(&cq->mutex);
  pthread_cond_destroy(&cq->cond);
  delete c;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!channel || !cq || !cq_context) {
    errno = EINVAL;
    return -1;
  }
  int fd = channel->fd;
  int fl = fcntl(fd, F_GETFL);
  bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
  for (int round = 0;; round++) {
    WakeMsg m;
    ssize_t n = recv(fd, &m, sizeof m, MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(sizeof m)) {
      Guard lk;
      EmuCq* c = m.slot < kMaxCq ? g.cq[m.slot] : nullptr;
      if (!c || c->id != m.id) continue;  // CQ destroyed meanwhile
      c->events_delivered++;
      *cq = &c->cq;
      *cq_context = c->cq.cq_context;
      return 0;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    {
      // No helper thread: while a caller waits for an event, keep retrying queued work
      // (receiver-not-ready, unreachable peer) so that timeouts and deliveries still happen.
      Guard lk;
      progress();
    }
    if (nonblock && round > 0) {
      errno = EAGAIN;
      return -1;
    }
    if (!nonblock) {
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, 10);
    }
  }
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!cq) return;
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_broadcast(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (!context || !event) {
    errno = EINVAL;
    return -1;
  }
  EmuContext* c = ectx(context);
  int fd = context->async_fd;
  int fl = fcntl(fd, F_GETFL);
  bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
  for (;;) {
    {
      Guard lk;
      CtxRec& rec = g.reg->ctx[c->slot];
      while (rec.async_count) {
        AsyncRec a = rec.async[rec.async_head];
        rec.async_head = (rec.async_head + 1) % kAsyncRing;
        rec.async_count--;
        uint8_t b;
        (void)recv(fd, &b, 1, MSG_DONTWAIT);  // keep fd readability in step with the queue
        memset(event, 0, sizeof *event);
        event->event_type = static_cast<ibv_event_type>(a.type);
        bool found = true;
        if (a.kind == 1) {
          EmuQp* q = a.slot < kMaxQp ? g.qp[a.slot] : nullptr;
          found = q && q->id == a.obj_id;
          if (found) event->element.qp = &q->qp;
        } else if (a.kind == 2) {
          EmuCq* q = a.slot < kMaxCq ? g.cq[a.slot] : nullptr;
          found = q && q->id == a.obj_id;
          if (found) event->element.cq = &q->cq;
        } else if (a.kind == 3) {
          EmuSrq* q = a.slot < kMaxSrq ? g.srq[a.slot] : nullptr;
          found = q && q->id == a.obj_id;
          if (found) event->element.srq = &q->srq;
        } else {
          event->element.port_num = 1;
        }
        if (found) return 0;
      }
      progress();
    }
    if (nonblock) {
      errno = EAGAIN;
      return -1;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      Guard lk;
      if (g.reg->ctx[c->slot].async_count == 0) {
        uint8_t b;
        (void)recv(fd, &b, 1, MSG_DONTWAIT);  // stale wake-up for an object already destroyed
      }
    }
  }
}

void ibv_ack_async_event(ibv_async_event* event) {
  if (!event) return;
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      if (event->element.cq) {
        pthread_mutex_lock(&event->element.cq->mutex);
        event->element.cq->async_events_completed++;
        pthread_mutex_unlock(&event->element.cq->mutex);
      }
      break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      if (event->element.qp) {
        pthread_mutex_lock(&event->element.qp->mutex);
        event->element.qp->events_completed++;
        pthread_mutex_unlock(&event->element.qp->mutex);
      }
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      if (event->element.srq) {
        pthread_mutex_lock(&event->element.srq->mutex);
        event->element.srq->events_completed++;
        pthread_mutex_unlock(&event->element.srq->mutex);
      }
      break;
    default:
      break;
  }
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  if (!pd || !init || init->attr.max_wr < 1 || init->attr.max_wr > kMaxQpWr || init->attr.max_sge < 1 ||
      init->attr.max_sge > kMaxSge)
    return static_cast<ibv_srq*>(fail_null(EINVAL));
  auto* e = new (std::nothrow) EmuSrq{};
  if (!e) return static_cast<ibv_srq*>(fail_null(ENOMEM));
  Guard lk;
  Registry& r = *g.reg;
  uint32_t s = alloc_slot(r.srq);
  if (s == kNil) {
    delete e;
    return static_cast<ibv_srq*>(fail_null(ENOMEM));
  }
  SrqRec& rec = r.srq[s];
  rec.ctx = ctx_slot(pd->context);
  rec.pd = epd(pd)->slot;
  rec.id = new_id();
  rec.max_wr = init->attr.max_wr;
  rec.max_sge = init->attr.max_sge;
  rec.limit = 0;
  rec.head = rec.tail = kNil;
  r.pd[rec.pd].refcnt++;
  e->slot = s;
  e->id = rec.id;
  e->srq.context = pd->context;
  e->srq.srq_context = init->srq_context;
  e->srq.pd = pd;
  e->srq.handle = s;
  pthread_mutex_init(&e->srq.mutex, nullptr);
  pthread_cond_init(&e->srq.cond, nullptr);
  g.srq[s] = e;
  return &e->srq;
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (!srq || !attr) return EINVAL;
  if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
  if (mask & IBV_SRQ_MAX_WR) return EINVAL;  // resizing is not supported (no IBV_DEVICE_SRQ_RESIZE)
  Guard lk;
  SrqRec& rec = g.reg->srq[esrq(srq)->slot];
  if (!rec.in_use || rec.pid != g.me) return EINVAL;
  if (mask & IBV_SRQ_LIMIT) {
    if (attr->srq_limit > rec.max_wr) return EINVAL;
    rec.limit = attr->srq_limit;
  }
  return 0;
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (!srq || !attr) return EINVAL;
  Guard lk;
  SrqRec& rec = g.reg->srq[esrq(srq)->slot];
  attr->max_wr = rec.max_wr;
  attr->max_sge = rec.max_sge;
  attr->srq_limit = rec.limit;
  return 0;
}

int ibv_destroy_srq(ibv_srq* srq) {
  if (!srq) return EINVAL;
  EmuSrq* e = esrq(srq);
  {
    Guard lk;
    SrqRec& rec = g.reg->srq[e->slot];
    if (!rec.in_use || rec.id != e->id) return EINVAL;
    if (rec.refcnt) return EBUSY;
    free_srq(e->slot);
  }
  pthread_mutex_destroy(&srq->mutex);
  pthread_cond_destroy(&srq->cond);
  delete e;
  return 0;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (!pd || !init) return static_cast<ibv_qp*>(fail_null(EINVAL));
  if (init->qp_type != IBV_QPT_RC) return static_cast<ibv_qp*>(fail_null(EOPNOTSUPP));
  ibv_context* ctx = pd->context;
  if (!init->send_cq || !init->recv_cq || init->send_cq->context != ctx || init->recv_cq->context != ctx ||
      (init->srq && init->srq->context != ctx))
    return static_cast<ibv_qp*>(fail_null(EINVAL));
  ibv_qp_cap cap = init->cap;
  if (init->srq) cap.max_recv_wr = cap.max_recv_sge = 0;
  if (cap.max_send_wr > kMaxQpWr || cap.max_recv_wr > kMaxQpWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline)
    return static_cast<ibv_qp*>(fail_null(EINVAL));
  auto* e = new (std::nothrow) EmuQp{};
  if (!e) return static_cast<ibv_qp*>(fail_null(ENOMEM));
  Guard lk;
  Registry& r = *g.reg;
  uint32_t s = alloc_slot(r.qp);
  if (s == kNil) {
    delete e;
    return static_cast<ibv_qp*>(fail_null(ENOMEM));
  }
  QpRec& q = r.qp[s];
  q.ctx = ctx_slot(ctx);
  q.pd = epd(pd)->slot;
  q.id = new_id();
  q.qpn = ((q.gen & 0x7fff) << kQpSlotBits) | s;
  q.state = IBV_QPS_RESET;
  q.sq_sig_all = init->sq_sig_all ? 1 : 0;
  q.scq = ecq(init->send_cq)->slot;
  q.rcq = ecq(init->recv_cq)->slot;
  q.srq = init->srq ? esrq(init->srq)->slot : kNil;
  q.cap = cap;
  q.lid = r.ctx[q.ctx].lid;
  memcpy(q.gid, r.ctx[q.ctx].gid, 16);
  q.sq_head = q.sq_tail = q.rq_head = q.rq_tail = kNil;
  r.pd[q.pd].refcnt++;
  r.cq[q.scq].refcnt++;
  r.cq[q.rcq].refcnt++;
  if (q.srq != kNil) r.srq[q.srq].refcnt++;
  init->cap = cap;
  e->slot = s;
  e->id = q.id;
  e->qp.context = ctx;
  e->qp.qp_context = init->qp_context;
  e->qp.pd = pd;
  e->qp.send_cq = init->send_cq;
  e->qp.recv_cq = init->recv_cq;
  e->qp.srq = init->srq;
  e->qp.handle = s;
  e->qp.qp_num = q.qpn;
  e->qp.state = IBV_QPS_RESET;
  e->qp.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&e->qp.mutex, nullptr);
  pthread_cond_init(&e->qp.cond, nullptr);
  g.qp[s] = e;
  return &e->qp;
}

int ibv_destroy_qp(ibv_qp* qp) {
  if (!qp) return EINVAL;
  EmuQp* e = eqp(qp);
  {
    Guard lk;
    QpRec& q = g.reg->qp[e->slot];
    if (!q.in_use || q.id != e->id) return EINVAL;
    if (uint32_t n = unread_check_enabled() ? unread_sends(e->slot) : 0)
      g.leak_notes.push_back("QP " + std::to_string(q.qpn) + " destroyed with " + std::to_string(n) +
                             " send completion(s) not read (poll its CQ, or move it to IBV_QPS_ERR "
                             "and poll the flushed work requests, before ibv_destroy_qp)");
    free_qp(e->slot);
  }
  pthread_mutex_destroy(&qp->mutex);
  pthread_cond_destroy(&qp->cond);
  delete e;
  return 0;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (!qp || !attr) return EINVAL;
  const uint32_t slot = eqp(qp)->slot;
  Guard lk;
  Registry& r = *g.reg;
  QpRec& q = r.qp[slot];
  if (!q.in_use || q.pid != g.me) return EINVAL;
  int cur = q.state;
  if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) return EINVAL;
  int next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
  Transition t = transition(cur, next);
  int m = mask & ~IBV_QP_CUR_STATE;
  if (!t.ok || (m & t.req) != t.req || (m & ~(t.req | t.opt | IBV_QP_STATE))) return EINVAL;
  if (int e = check_values(attr, m)) return e;
  apply_attr(q.attr, attr, m);
  q.state = next;
  if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
    r.pending_total -= q.sq_pending;
    q.sq_pending = 0;
    wr_list_free_all(q.sq_head, q.sq_tail);
    wr_list_free_all(q.rq_head, q.rq_tail);
    purge_qp_cqes(q.scq, slot);
    if (q.rcq != q.scq) purge_qp_cqes(q.rcq, slot);
    q.sq_posted = q.sq_retired = 0;
    q.rq_outstanding = 0;
    ibv_qp_attr fresh{};
    q.attr = fresh;
  } else if (next == IBV_QPS_ERR) {
    qp_to_error(slot);
  } else if (next == IBV_QPS_RTS) {
    drain_sq(slot);
  }
  qp->state = static_cast<ibv_qp_state>(next);
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init_attr) {
  if (!qp || !attr || !init_attr) return EINVAL;
  Guard lk;
  QpRec& q = g.reg->qp[eqp(qp)->slot];
  if (!q.in_use || q.pid != g.me) return EINVAL;
  *attr = q.attr;
  attr->qp_state = static_cast<ibv_qp_state>(q.state);
  attr->cur_qp_state = static_cast<ibv_qp_state>(q.state);
  attr->cap = q.cap;
  attr->sq_draining = 0;
  memset(init_attr, 0, sizeof *init_attr);
  init_attr->qp_context = qp->qp_context;
  init_attr->send_cq = qp->send_cq;
  init_attr->recv_cq = qp->recv_cq;
  init_attr->srq = qp->srq;
  init_attr->cap = q.cap;
  init_attr->qp_type = IBV_QPT_RC;
  init_attr->sq_sig_all = static_cast<int>(q.sq_sig_all);
  return 0;
}

}  // extern "C"
