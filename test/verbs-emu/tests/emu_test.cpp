// emu_test: acceptance tests of the verbs emulator. Compiled against the real
// <infiniband/verbs.h> and linked with -libverbs like any application; run with LD_LIBRARY_PATH
// pointing at the emulator. Each test forks one or two fresh processes (connected by a
// socketpair for the QP exchange) and prints one TAP line. Every check is a real assertion on
// data or statuses; a child that fails a check, leaks a verbs object (VERBSEMU_CHECK_LEAKS=1)
// or hangs makes its test "not ok".
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// A failed check ends the child at once with status 1 (no exit handlers, so the emulator's leak
// checker does not turn it into 86; objects of the dead process are reaped by the next user).
[[noreturn]] static void fail_exit() {
  fflush(nullptr);
  _exit(1);
}

#define CHECK(cond)                                                                                 \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      fprintf(stderr, "    [pid %d] CHECK failed at %s:%d: %s\n", getpid(), __FILE__, __LINE__, #cond); \
      fail_exit();                                                                                     \
    }                                                                                               \
  } while (0)

#define CHECK_EQ(a, b)                                                                                   \
  do {                                                                                                   \
    long long va_ = static_cast<long long>(a), vb_ = static_cast<long long>(b);                          \
    if (va_ != vb_) {                                                                                    \
      fprintf(stderr, "    [pid %d] CHECK_EQ failed at %s:%d: %s == %s (%lld vs %lld)\n", getpid(), __FILE__, \
              __LINE__, #a, #b, va_, vb_);                                                               \
      fail_exit();                                                                                          \
    }                                                                                                    \
  } while (0)

#define CHECK_STATUS(wc, st)                                                                               \
  do {                                                                                                     \
    if ((wc).status != (st)) {                                                                             \
      fprintf(stderr, "    [pid %d] status check failed at %s:%d: got '%s', want '%s'\n", getpid(), __FILE__, \
              __LINE__, ibv_wc_status_str((wc).status), ibv_wc_status_str(st));                            \
      fail_exit();                                                                                            \
    }                                                                                                      \
  } while (0)

namespace {

constexpr uint8_t kFill = 0xAA;

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---------------- socketpair link ----------------
struct Link {
  int fd = -1;
  void put(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      ssize_t k = write(fd, c, n);
      CHECK(k > 0);
      c += k;
      n -= static_cast<size_t>(k);
    }
  }
  void get(void* p, size_t n) {
    char* c = static_cast<char*>(p);
    while (n) {
      ssize_t k = read(fd, c, n);
      CHECK(k > 0);
      c += k;
      n -= static_cast<size_t>(k);
    }
  }
  void signal(char tag) { put(&tag, 1); }
  void wait(char tag) {
    char t = 0;
    get(&t, 1);
    CHECK_EQ(t, tag);
  }
};

// ---------------- endpoint ----------------
struct Opts {
  uint32_t max_send_wr = 16, max_recv_wr = 16, max_inline = 0;
  int cqe = 64;
  int mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  int qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  uint8_t rnr_retry = 7, min_rnr_timer = 12, timeout = 14, retry_cnt = 7;
  bool srq = false, sig_all = true, channel = false;
  size_t buflen = 4096;
};

struct Info {
  uint16_t lid;
  uint32_t qpn;
  uint8_t gid[16];
  uint64_t addr;
  uint32_t rkey;
};

struct Ep {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* ch = nullptr;
  ibv_cq* cq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  uint8_t* buf = nullptr;
  size_t len = 0;
  uint16_t lid = 0;
  ibv_gid gid{};
};

ibv_context* open_dev() {
  int n = -1;
  ibv_device** l = ibv_get_device_list(&n);
  CHECK(l != nullptr);
  CHECK(n >= 1);
  ibv_context* c = ibv_open_device(l[0]);
  ibv_free_device_list(l);
  CHECK(c != nullptr);
  return c;
}

void to_init(ibv_qp* qp, int access) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = static_cast<unsigned>(access);
  CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
}

ibv_qp_attr rtr_attr(const Info& r, const Opts& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = r.qpn;
  a.rq_psn = 0x123;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.is_global = 1;
  memcpy(a.ah_attr.grh.dgid.raw, r.gid, 16);
  a.ah_attr.grh.sgid_index = 0;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.dlid = r.lid;
  a.ah_attr.port_num = 1;
  return a;
}
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

ibv_qp_attr rts_attr(const Opts& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.sq_psn = 0x123;
  a.max_rd_atomic = 1;
  return a;
}
constexpr int kRtsMask =
    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

void connect(Ep& e, const Info& r, const Opts& o) {
  ibv_qp_attr a = rtr_attr(r, o);
  CHECK_EQ(ibv_modify_qp(e.qp, &a, kRtrMask), 0);
  a = rts_attr(o);
  CHECK_EQ(ibv_modify_qp(e.qp, &a, kRtsMask), 0);
}

Ep make_ep(const Opts& o) {
  Ep e;
  e.ctx = open_dev();
  e.pd = ibv_alloc_pd(e.ctx);
  CHECK(e.pd);
  if (o.channel) {
    e.ch = ibv_create_comp_channel(e.ctx);
    CHECK(e.ch);
  }
  e.cq = ibv_create_cq(e.ctx, o.cqe, reinterpret_cast<void*>(0x1234), e.ch, 0);
  CHECK(e.cq);
  if (o.srq) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    e.srq = ibv_create_srq(e.pd, &sa);
    CHECK(e.srq);
  }
  ibv_qp_init_attr ia{};
  ia.send_cq = e.cq;
  ia.recv_cq = e.cq;
  ia.srq = e.srq;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = o.sig_all ? 1 : 0;
  ia.cap.max_send_wr = o.max_send_wr;
  ia.cap.max_recv_wr = o.max_recv_wr;
  ia.cap.max_send_sge = 4;
  ia.cap.max_recv_sge = 4;
  ia.cap.max_inline_data = o.max_inline;
  e.qp = ibv_create_qp(e.pd, &ia);
  CHECK(e.qp);
  e.len = o.buflen;
  e.buf = static_cast<uint8_t*>(aligned_alloc(4096, o.buflen));
  CHECK(e.buf);
  memset(e.buf, kFill, e.len);
  e.mr = ibv_reg_mr(e.pd, e.buf, e.len, o.mr_access);
  CHECK(e.mr);
  to_init(e.qp, o.qp_access);
  ibv_port_attr pa;
  CHECK_EQ(ibv_query_port(e.ctx, 1, &pa), 0);
  CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
  CHECK(pa.lid != 0);
  e.lid = pa.lid;
  CHECK_EQ(ibv_query_gid(e.ctx, 1, 0, &e.gid), 0);
  return e;
}

Info info_of(const Ep& e) {
  Info i{};
  i.lid = e.lid;
  i.qpn = e.qp->qp_num;
  memcpy(i.gid, e.gid.raw, 16);
  i.addr = reinterpret_cast<uint64_t>(e.buf);
  i.rkey = e.mr->rkey;
  return i;
}

Info exchange(Link& l, const Ep& e) {
  Info mine = info_of(e), peer{};
  l.put(&mine, sizeof mine);
  l.get(&peer, sizeof peer);
  return peer;
}

void destroy_ep(Ep& e) {
  if (e.qp) CHECK_EQ(ibv_destroy_qp(e.qp), 0);
  if (e.srq) CHECK_EQ(ibv_destroy_srq(e.srq), 0);
  CHECK_EQ(ibv_dereg_mr(e.mr), 0);
  CHECK_EQ(ibv_destroy_cq(e.cq), 0);
  if (e.ch) CHECK_EQ(ibv_destroy_comp_channel(e.ch), 0);
  CHECK_EQ(ibv_dealloc_pd(e.pd), 0);
  CHECK_EQ(ibv_close_device(e.ctx), 0);
  free(e.buf);
}

ibv_wc wait_wc(ibv_cq* cq, double secs = 10.0) {
  double end = now_s() + secs;
  ibv_wc wc{};
  while (now_s() < end) {
    int n = ibv_poll_cq(cq, 1, &wc);
    CHECK(n >= 0);
    if (n == 1) return wc;
  }
  fprintf(stderr, "    [pid %d] timed out waiting for a completion\n", getpid());
  fail_exit();
}

void expect_no_wc(ibv_cq* cq, double secs) {
  double end = now_s() + secs;
  ibv_wc wc{};
  while (now_s() < end) CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);
}

int post_write(Ep& e, uint64_t wr_id, void* laddr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
               ibv_wr_opcode op = IBV_WR_RDMA_WRITE, uint32_t imm = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge{reinterpret_cast<uint64_t>(laddr), len, lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = flags;
  wr.imm_data = imm;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(e.qp, &wr, &bad);
}

int post_send(Ep& e, uint64_t wr_id, void* laddr, uint32_t len, uint32_t lkey, ibv_wr_opcode op = IBV_WR_SEND,
              uint32_t imm = 0, unsigned flags = IBV_SEND_SIGNALED) {
  return post_write(e, wr_id, laddr, len, lkey, 0, 0, op, imm, flags);
}

int post_recv(Ep& e, uint64_t wr_id, void* addr, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uint64_t>(addr), len, e.mr->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(e.qp, &wr, &bad);
}

bool all_fill(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != kFill) return false;
  return true;
}

int qp_state(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  CHECK_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
  return a.qp_state;
}

// ---------------- harness ----------------
int g_test = 0, g_failed = 0;

void report(const std::string& name, bool ok, const std::string& why) {
  g_test++;
  if (!ok) g_failed++;
  printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", g_test, name.c_str(), ok ? "" : " # ", ok ? "" : why.c_str());
  fflush(stdout);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "?";
}

// Wait for children with a deadline; kill them on timeout.
std::vector<int> reap(const std::vector<pid_t>& kids, double secs) {
  std::vector<int> st(kids.size(), -1);
  std::vector<bool> done(kids.size(), false);
  double end = now_s() + secs;
  size_t left = kids.size();
  while (left) {
    for (size_t i = 0; i < kids.size(); i++) {
      if (done[i]) continue;
      int s = 0;
      if (waitpid(kids[i], &s, WNOHANG) == kids[i]) {
        st[i] = s;
        done[i] = true;
        left--;
      }
    }
    if (!left) break;
    if (now_s() > end) {
      for (size_t i = 0; i < kids.size(); i++)
        if (!done[i]) kill(kids[i], SIGKILL);
      for (size_t i = 0; i < kids.size(); i++)
        if (!done[i]) {
          int s = 0;
          waitpid(kids[i], &s, 0);
          st[i] = -2;
        }
      break;
    }
    usleep(2000);
  }
  return st;
}

using PairFn = std::function<void(int role, Link& link)>;

// Role 0 is the target (passive side), role 1 the initiator.
void run_pair(const std::string& name, const PairFn& fn) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  std::vector<pid_t> kids;
  for (int role = 0; role < 2; role++) {
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
      close(sv[1 - role]);
      Link l{sv[role]};
      fn(role, l);
      exit(0);  // normal exit: the emulator's leak checker runs
    }
    kids.push_back(p);
  }
  close(sv[0]);
  close(sv[1]);
  std::vector<int> st = reap(kids, 60);
  bool ok = true;
  std::string why;
  for (int r = 0; r < 2; r++) {
    if (st[r] == -2) {
      ok = false;
      why += std::string(r ? "initiator" : "target") + " timed out; ";
    } else if (!WIFEXITED(st[r]) || WEXITSTATUS(st[r]) != 0) {
      ok = false;
      why += std::string(r ? "initiator " : "target ") + describe(st[r]) + "; ";
    }
  }
  report(name, ok, why);
}

void run_single(const std::string& name, const std::function<void()>& fn) {
  run_pair(name, [&](int role, Link&) {
    if (role == 0) fn();
  });
}

// =====================================================================
// Tests
// =====================================================================

void t_emulator_loaded() {
  run_single("the emulator (not the system libibverbs) is loaded", [] {
    Dl_info di{};
    CHECK(dladdr(reinterpret_cast<void*>(&ibv_get_device_list), &di) != 0);
    CHECK(di.dli_fname != nullptr);
    CHECK(strstr(di.dli_fname, "verbs-emu") != nullptr);
  });
}

void t_device_queries() {
  run_single("device list, port, GID and device attributes", [] {
    int n = 0;
    ibv_device** l = ibv_get_device_list(&n);
    CHECK(l && n == 1);
    CHECK(strcmp(ibv_get_device_name(l[0]), "emu0") == 0);
    CHECK(ibv_get_device_guid(l[0]) != 0);
    ibv_context* a = ibv_open_device(l[0]);
    ibv_context* b = ibv_open_device(l[0]);
    ibv_free_device_list(l);
    CHECK(a && b);
    ibv_port_attr pa{}, pb{};
    CHECK_EQ(ibv_query_port(a, 1, &pa), 0);
    CHECK_EQ(ibv_query_port(b, 1, &pb), 0);
    CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
    CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
    CHECK(pa.lid != 0 && pb.lid != 0 && pa.lid != pb.lid);
    CHECK(ibv_query_port(a, 2, &pa) != 0);
    ibv_gid g0{};
    CHECK_EQ(ibv_query_gid(a, 1, 0, &g0), 0);
    CHECK(g0.global.interface_id != 0);
    CHECK(ibv_query_gid(a, 1, 1, &g0) != 0);
    ibv_gid_entry ge{};
    CHECK_EQ(ibv_query_gid_ex(a, 1, 0, &ge, 0), 0);
    CHECK_EQ(ge.gid_index, 0);
    ibv_device_attr da{};
    CHECK_EQ(ibv_query_device(a, &da), 0);
    CHECK(da.max_qp_wr > 0 && da.max_sge > 0 && da.phys_port_cnt == 1);
    ibv_device_attr_ex dax{};
    CHECK_EQ(ibv_query_device_ex(a, nullptr, &dax), 0);
    CHECK_EQ(dax.orig_attr.max_qp_wr, da.max_qp_wr);
    ibv_cq_init_attr_ex cx{};
    cx.cqe = 4;
    errno = 0;
    CHECK(ibv_create_cq_ex(a, &cx) == nullptr);
    CHECK_EQ(errno, EOPNOTSUPP);
    CHECK_EQ(ibv_close_device(a), 0);
    CHECK_EQ(ibv_close_device(b), 0);
  });
  run_single("VERBSEMU_NDEV=0 gives an empty device list", [] {
    setenv("VERBSEMU_NDEV", "0", 1);
    int n = -1;
    ibv_device** l = ibv_get_device_list(&n);
    CHECK(l != nullptr);
    CHECK_EQ(n, 0);
    CHECK(l[0] == nullptr);
    ibv_free_device_list(l);
  });
}

void t_reg_mr() {
  run_single("ibv_reg_mr validates access flags and the address range", [] {
    ibv_context* c = open_dev();
    ibv_pd* pd = ibv_alloc_pd(c);
    CHECK(pd);
    static char buf[8192];
    errno = 0;
    CHECK(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE) == nullptr);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK_EQ(errno, EINVAL);
    void* gone = mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(gone != MAP_FAILED);
    munmap(gone, 65536);
    errno = 0;
    CHECK(ibv_reg_mr(pd, gone, 65536, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK_EQ(errno, EFAULT);
    void* ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    errno = 0;
    CHECK(ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK_EQ(errno, EFAULT);
    ibv_mr* rom = ibv_reg_mr(pd, ro, 4096, 0);
    CHECK(rom);
    ibv_mr* m = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    CHECK(m);
    CHECK(m->lkey != m->rkey);
    CHECK(m->addr == buf && m->length == sizeof buf);
    CHECK_EQ(ibv_dereg_mr(rom), 0);
    CHECK_EQ(ibv_dereg_mr(m), 0);
    munmap(ro, 4096);
    CHECK_EQ(ibv_dealloc_pd(pd), 0);
    CHECK_EQ(ibv_close_device(c), 0);
  });
}

void t_write_imm() {
  run_pair("RDMA_WRITE_WITH_IMM (3 SGEs, 2 MRs) lands byte for byte, imm/byte_len/qp_num/src_qp", [](int role,
                                                                                                    Link& l) {
    Opts o;
    Ep e = make_ep(o);
    if (role == 0) CHECK_EQ(post_recv(e, 77, e.buf, 16), 0);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      std::vector<uint8_t> b2(4096);
      for (size_t i = 0; i < e.len; i++) e.buf[i] = static_cast<uint8_t>(i * 7 + 1);
      for (size_t i = 0; i < b2.size(); i++) b2[i] = static_cast<uint8_t>(i * 13 + 5);
      ibv_mr* m2 = ibv_reg_mr(e.pd, b2.data(), b2.size(), IBV_ACCESS_LOCAL_WRITE);
      CHECK(m2);
      ibv_sge sg[3] = {{reinterpret_cast<uint64_t>(e.buf), 1000, e.mr->lkey},
                       {reinterpret_cast<uint64_t>(b2.data()), 1500, m2->lkey},
                       {reinterpret_cast<uint64_t>(e.buf + 2000), 500, e.mr->lkey}};
      ibv_send_wr wr{}, *bad = nullptr;
      wr.wr_id = 0xfeed;
      wr.sg_list = sg;
      wr.num_sge = 3;
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.imm_data = htonl(0xC0FFEE01);
      wr.wr.rdma.remote_addr = peer.addr + 100;
      wr.wr.rdma.rkey = peer.rkey;
      CHECK_EQ(ibv_post_send(e.qp, &wr, &bad), 0);
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_SUCCESS);
      CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
      CHECK_EQ(wc.wr_id, 0xfeed);
      CHECK_EQ(wc.qp_num, e.qp->qp_num);
      CHECK_EQ(ibv_dereg_mr(m2), 0);
      l.signal('d');
    } else {
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_SUCCESS);
      CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
      CHECK_EQ(wc.wr_id, 77);
      CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
      CHECK_EQ(ntohl(wc.imm_data), 0xC0FFEE01);
      CHECK_EQ(wc.byte_len, 3000);
      CHECK_EQ(wc.qp_num, e.qp->qp_num);
      CHECK_EQ(wc.src_qp, peer.qpn);
      for (size_t i = 0; i < 1000; i++) CHECK_EQ(e.buf[100 + i], static_cast<uint8_t>(i * 7 + 1));
      for (size_t i = 0; i < 1500; i++) CHECK_EQ(e.buf[1100 + i], static_cast<uint8_t>(i * 13 + 5));
      for (size_t i = 0; i < 500; i++) CHECK_EQ(e.buf[2600 + i], static_cast<uint8_t>((2000 + i) * 7 + 1));
      CHECK(all_fill(e.buf + 16, 84));  // the receive buffer is not used by write-with-imm
      CHECK(all_fill(e.buf + 3100, e.len - 3100));
      l.wait('d');
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

void t_send() {
  run_pair("SEND_WITH_IMM and SEND: IBV_WC_RECV, WITH_IMM flag only with imm; unsignaled write ordered before send",
           [](int role, Link& l) {
             Opts o;
             o.sig_all = false;
             Ep e = make_ep(o);
             if (role == 0) {
               CHECK_EQ(post_recv(e, 1, e.buf, 200), 0);
               CHECK_EQ(post_recv(e, 2, e.buf + 200, 200), 0);
             }
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               for (size_t i = 0; i < e.len; i++) e.buf[i] = static_cast<uint8_t>(i ^ 0x5a);
               CHECK_EQ(post_send(e, 10, e.buf, 100, e.mr->lkey, IBV_WR_SEND_WITH_IMM, htonl(42)), 0);
               CHECK_EQ(post_write(e, 11, e.buf + 1000, 64, e.mr->lkey, peer.addr + 2048, peer.rkey,
                                   IBV_WR_RDMA_WRITE, 0, 0),
                        0);  // unsignaled
               CHECK_EQ(post_send(e, 12, e.buf + 500, 50, e.mr->lkey), 0);
               ibv_wc wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(wc.wr_id, 10);
               CHECK_EQ(wc.opcode, IBV_WC_SEND);
               wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(wc.wr_id, 12);  // the unsignaled write produced no completion
               expect_no_wc(e.cq, 0.1);
             } else {
               ibv_wc wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(wc.opcode, IBV_WC_RECV);
               CHECK_EQ(wc.wr_id, 1);
               CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
               CHECK_EQ(ntohl(wc.imm_data), 42);
               CHECK_EQ(wc.byte_len, 100);
               CHECK_EQ(wc.src_qp, peer.qpn);
               for (size_t i = 0; i < 100; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i ^ 0x5a));
               wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(wc.opcode, IBV_WC_RECV);
               CHECK_EQ(wc.wr_id, 2);
               CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
               CHECK_EQ(wc.byte_len, 50);
               for (size_t i = 0; i < 50; i++) CHECK_EQ(e.buf[200 + i], static_cast<uint8_t>((500 + i) ^ 0x5a));
               for (size_t i = 0; i < 64; i++) CHECK_EQ(e.buf[2048 + i], static_cast<uint8_t>((1000 + i) ^ 0x5a));
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

void t_rdma_read() {
  run_pair("RDMA_READ copies remote data, IBV_WC_RDMA_READ with byte_len (GID-only addressing, DLID 0)",
           [](int role, Link& l) {
    Opts o;
    Ep e = make_ep(o);
    if (role == 0)
      for (size_t i = 0; i < e.len; i++) e.buf[i] = static_cast<uint8_t>(i * 3);
    Info peer = exchange(l, e);
    peer.lid = 0;  // RoCE-style: address by GID only
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      CHECK_EQ(post_write(e, 5, e.buf + 8, 2000, e.mr->lkey, peer.addr + 16, peer.rkey, IBV_WR_RDMA_READ), 0);
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_SUCCESS);
      CHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
      CHECK_EQ(wc.byte_len, 2000);
      for (size_t i = 0; i < 2000; i++) CHECK_EQ(e.buf[8 + i], static_cast<uint8_t>((16 + i) * 3));
      CHECK(all_fill(e.buf, 8));
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

// Remote-side protection failures: the initiator gets IBV_WC_REM_ACCESS_ERR, nothing is written,
// both QPs end in the error state and later work flushes.
enum class RemoteCase { BadRkey, MrNoRemoteWrite, QpNoRemoteWrite, PastEnd, BeforeStart };

void t_remote_access(const char* name, RemoteCase rc) {
  run_pair(name, [rc](int role, Link& l) {
    Opts o;
    if (role == 0 && rc == RemoteCase::MrNoRemoteWrite) o.mr_access = IBV_ACCESS_LOCAL_WRITE;
    if (role == 0 && rc == RemoteCase::QpNoRemoteWrite) o.qp_access = IBV_ACCESS_REMOTE_READ;
    Ep e = make_ep(o);
    CHECK_EQ(post_recv(e, 900, e.buf + 3000, 64), 0);
    CHECK_EQ(post_recv(e, 901, e.buf + 3100, 64), 0);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      for (size_t i = 0; i < 512; i++) e.buf[i] = static_cast<uint8_t>(i);
      uint64_t raddr = peer.addr + 64;
      uint32_t rkey = peer.rkey, len = 256;
      if (rc == RemoteCase::BadRkey) rkey = peer.rkey + (7u << 8);
      if (rc == RemoteCase::PastEnd) raddr = peer.addr + 4096 - 255;
      if (rc == RemoteCase::BeforeStart) raddr = peer.addr - 1;
      // Chain of three: the failing write, then two valid ones that must be flushed.
      ibv_sge sg[3] = {{reinterpret_cast<uint64_t>(e.buf), len, e.mr->lkey},
                       {reinterpret_cast<uint64_t>(e.buf), 16, e.mr->lkey},
                       {reinterpret_cast<uint64_t>(e.buf), 16, e.mr->lkey}};
      ibv_send_wr wr[3]{}, *bad = nullptr;
      for (int i = 0; i < 3; i++) {
        wr[i].wr_id = 100 + static_cast<uint64_t>(i);
        wr[i].sg_list = &sg[i];
        wr[i].num_sge = 1;
        wr[i].opcode = IBV_WR_RDMA_WRITE;
        wr[i].send_flags = IBV_SEND_SIGNALED;
        wr[i].wr.rdma.remote_addr = i == 0 ? raddr : peer.addr + 64;
        wr[i].wr.rdma.rkey = i == 0 ? rkey : peer.rkey;
        wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
      }
      CHECK_EQ(ibv_post_send(e.qp, wr, &bad), 0);
      ibv_wc wc = wait_wc(e.cq);
      CHECK_EQ(wc.wr_id, 100);
      CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
      CHECK_EQ(wc.qp_num, e.qp->qp_num);
      ibv_wc f[4];
      int got = 0;
      double end = now_s() + 5;
      while (got < 4 && now_s() < end) got += ibv_poll_cq(e.cq, 4 - got, f + got);
      CHECK_EQ(got, 4);  // 2 flushed writes + 2 flushed receives
      int sends = 0, recvs = 0;
      for (int i = 0; i < 4; i++) {
        CHECK_STATUS(f[i], IBV_WC_WR_FLUSH_ERR);
        if (f[i].wr_id == 101 || f[i].wr_id == 102) {
          CHECK_EQ(f[i].wr_id, 101 + sends);  // in posting order
          sends++;
        } else {
          CHECK(f[i].wr_id == 900 || f[i].wr_id == 901);
          recvs++;
        }
      }
      CHECK_EQ(sends, 2);
      CHECK_EQ(recvs, 2);
      CHECK_EQ(qp_state(e.qp), IBV_QPS_ERR);
      // Posting to a QP in the error state is accepted and flushed.
      CHECK_EQ(post_write(e, 103, e.buf, 16, e.mr->lkey, peer.addr, peer.rkey), 0);
      wc = wait_wc(e.cq);
      CHECK_EQ(wc.wr_id, 103);
      CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
      l.signal('d');
    } else {
      l.wait('d');
      CHECK(all_fill(e.buf, 3000));  // nothing written anywhere
      // Responder side: the QP went to error (access violation) and its receives flushed.
      ibv_async_event ev{};
      CHECK_EQ(ibv_get_async_event(e.ctx, &ev), 0);
      CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
      CHECK(ev.element.qp == e.qp);
      ibv_ack_async_event(&ev);
      CHECK_EQ(qp_state(e.qp), IBV_QPS_ERR);
      for (int i = 0; i < 2; i++) {
        ibv_wc wc = wait_wc(e.cq);
        CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
        CHECK_EQ(wc.wr_id, 900 + i);
      }
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

void t_local_prot() {
  run_pair("bad lkey / SGE outside the local MR: IBV_WC_LOC_PROT_ERR, nothing sent", [](int role, Link& l) {
    Opts o;
    Ep e = make_ep(o);
    if (role == 0) CHECK_EQ(post_recv(e, 1, e.buf, 256), 0);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      CHECK_EQ(post_send(e, 1, e.buf, 64, e.mr->rkey), 0);  // rkey is not an lkey
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
      CHECK_EQ(qp_state(e.qp), IBV_QPS_ERR);
      // Reset and reconnect, then overrun the MR by one byte.
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_RESET;
      CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
      to_init(e.qp, o.qp_access);
      connect(e, peer, o);
      CHECK_EQ(post_send(e, 2, e.buf + e.len - 63, 64, e.mr->lkey), 0);
      wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
      l.signal('d');
    } else {
      l.wait('d');
      expect_no_wc(e.cq, 0.05);  // the receive was never consumed
      CHECK(all_fill(e.buf, 256));
      CHECK_EQ(qp_state(e.qp), IBV_QPS_RTS);
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

void t_recv_too_small() {
  run_pair("receive buffer too small: LOC_LEN_ERR at the target, REM_INV_REQ_ERR at the sender",
           [](int role, Link& l) {
             Opts o;
             Ep e = make_ep(o);
             if (role == 0) CHECK_EQ(post_recv(e, 3, e.buf, 16), 0);
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               CHECK_EQ(post_send(e, 9, e.buf, 100, e.mr->lkey), 0);
               ibv_wc wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_REM_INV_REQ_ERR);
             } else {
               ibv_wc wc = wait_wc(e.cq);
               CHECK_EQ(wc.wr_id, 3);
               CHECK_STATUS(wc, IBV_WC_LOC_LEN_ERR);
               CHECK_EQ(qp_state(e.qp), IBV_QPS_ERR);
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

void t_rnr(const char* name, ibv_wr_opcode op, uint8_t rnr_retry) {
  run_pair(name, [op, rnr_retry](int role, Link& l) {
    Opts o;
    o.rnr_retry = rnr_retry;
    o.min_rnr_timer = 14;  // 1.28 ms per retry
    Ep e = make_ep(o);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      for (size_t i = 0; i < 128; i++) e.buf[i] = static_cast<uint8_t>(i + 1);
      double t0 = now_s();
      CHECK_EQ(post_write(e, 50, e.buf, 128, e.mr->lkey, peer.addr + 256, peer.rkey, op, htonl(7)), 0);
      if (rnr_retry < 7) {
        ibv_wc wc = wait_wc(e.cq, 10);
        CHECK_STATUS(wc, IBV_WC_RNR_RETRY_EXC_ERR);
        CHECK_EQ(wc.wr_id, 50);
        CHECK(now_s() - t0 < 6.0);
        l.signal('d');
      } else {
        expect_no_wc(e.cq, 0.3);  // infinite retry: nothing completes while no receive is posted
        l.signal('g');
        ibv_wc wc = wait_wc(e.cq);
        CHECK_STATUS(wc, IBV_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, 50);
      }
    } else {
      if (rnr_retry < 7) {
        l.wait('d');
        CHECK(all_fill(e.buf, e.len));  // nothing delivered
        expect_no_wc(e.cq, 0.05);
      } else {
        l.wait('g');
        CHECK_EQ(post_recv(e, 60, e.buf, 256), 0);
        ibv_wc wc = wait_wc(e.cq);
        CHECK_STATUS(wc, IBV_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, 60);
        CHECK_EQ(wc.byte_len, 128);
        CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
        const uint8_t* data = op == IBV_WR_SEND_WITH_IMM ? e.buf : e.buf + 256;
        for (size_t i = 0; i < 128; i++) CHECK_EQ(data[i], static_cast<uint8_t>(i + 1));
      }
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

void t_transport_retry() {
  run_pair("peer QP destroyed / wrong DLID: IBV_WC_RETRY_EXC_ERR after the retry budget", [](int role, Link& l) {
    Opts o;
    o.timeout = 10;  // 4.2 ms
    o.retry_cnt = 2;
    Ep e = make_ep(o);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 0) {
      CHECK_EQ(ibv_destroy_qp(e.qp), 0);
      e.qp = nullptr;
      l.signal('k');
    } else {
      l.wait('k');
      double t0 = now_s();
      CHECK_EQ(post_write(e, 70, e.buf, 32, e.mr->lkey, peer.addr, peer.rkey), 0);
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
      CHECK(now_s() - t0 < 6.0);
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
  run_pair("wrong DLID in the address vector: IBV_WC_RETRY_EXC_ERR", [](int role, Link& l) {
    Opts o;
    o.timeout = 10;
    o.retry_cnt = 1;
    Ep e = make_ep(o);
    Info peer = exchange(l, e);
    if (role == 1) peer.lid = static_cast<uint16_t>(peer.lid + 100);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      CHECK_EQ(post_write(e, 71, e.buf, 32, e.mr->lkey, peer.addr, peer.rkey), 0);
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
    }
    l.signal('x');
    l.wait('x');
    if (role == 0) CHECK(all_fill(e.buf, e.len));
    destroy_ep(e);
  });
}

void t_sq_overflow() {
  run_pair("SQ overflow: ENOMEM from ibv_post_send with *bad_wr at the first WR that does not fit",
           [](int role, Link& l) {
             Opts o;
             o.max_send_wr = 4;
             Ep e = make_ep(o);
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               ibv_sge sg{reinterpret_cast<uint64_t>(e.buf), 8, e.mr->lkey};
               ibv_send_wr wr[5]{}, *bad = nullptr;
               for (int i = 0; i < 5; i++) {
                 wr[i].wr_id = static_cast<uint64_t>(i);
                 wr[i].sg_list = &sg;
                 wr[i].num_sge = 1;
                 wr[i].opcode = IBV_WR_RDMA_WRITE;
                 wr[i].wr.rdma.remote_addr = peer.addr + static_cast<uint64_t>(i) * 8;
                 wr[i].wr.rdma.rkey = peer.rkey;
                 wr[i].next = i < 4 ? &wr[i + 1] : nullptr;
               }
               CHECK_EQ(ibv_post_send(e.qp, wr, &bad), ENOMEM);
               CHECK(bad == &wr[4]);
               for (int i = 0; i < 4; i++) {
                 ibv_wc wc = wait_wc(e.cq);
                 CHECK_STATUS(wc, IBV_WC_SUCCESS);
                 CHECK_EQ(wc.wr_id, i);
               }
               wr[4].next = nullptr;
               CHECK_EQ(ibv_post_send(e.qp, &wr[4], &bad), 0);  // room again once completions are polled
               CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
  run_pair("unsignaled sends occupy the SQ until a later signaled completion is polled", [](int role, Link& l) {
    Opts o;
    o.max_send_wr = 4;
    o.sig_all = false;
    Ep e = make_ep(o);
    Info peer = exchange(l, e);
    connect(e, peer, o);
    l.signal('c');
    l.wait('c');
    if (role == 1) {
      for (int i = 0; i < 4; i++)
        CHECK_EQ(post_write(e, static_cast<uint64_t>(i), e.buf, 8, e.mr->lkey, peer.addr, peer.rkey,
                            IBV_WR_RDMA_WRITE, 0, 0),
                 0);
      CHECK_EQ(post_write(e, 4, e.buf, 8, e.mr->lkey, peer.addr, peer.rkey, IBV_WR_RDMA_WRITE, 0, 0), ENOMEM);
      expect_no_wc(e.cq, 0.05);
      // Reset to recover, then do it right: every 4th WR signaled.
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_RESET;
      CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
      to_init(e.qp, o.qp_access);
      connect(e, peer, o);
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4; i++)
          CHECK_EQ(post_write(e, static_cast<uint64_t>(round * 4 + i), e.buf, 8, e.mr->lkey, peer.addr, peer.rkey,
                              IBV_WR_RDMA_WRITE, 0, i == 3 ? IBV_SEND_SIGNALED : 0),
                   0);
        ibv_wc wc = wait_wc(e.cq);
        CHECK_STATUS(wc, IBV_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, round * 4 + 3);
      }
    }
    l.signal('x');
    l.wait('x');
    destroy_ep(e);
  });
}

void t_state_machine() {
  run_single("modify_qp masks/transitions (EINVAL), posting in RESET/INIT/RTR, loopback, ERR flush, RQ overflow",
             [] {
               Opts o;
               o.max_recv_wr = 4;
               Ep e = make_ep(o);  // already in INIT
               ibv_qp_attr a{};
               // Back to RESET, then exercise RESET->INIT masks.
               a.qp_state = IBV_QPS_RESET;
               CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
               CHECK_EQ(post_recv(e, 1, e.buf, 8), EINVAL);
               CHECK_EQ(post_send(e, 1, e.buf, 8, e.mr->lkey), EINVAL);
               a = ibv_qp_attr{};
               a.qp_state = IBV_QPS_INIT;
               a.port_num = 1;
               CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
               a.port_num = 2;
               CHECK_EQ(ibv_modify_qp(e.qp, &a,
                                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                        EINVAL);
               Info self = info_of(e);
               ibv_qp_attr r = rtr_attr(self, o);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask), EINVAL);  // RESET -> RTR
               CHECK_EQ(qp_state(e.qp), IBV_QPS_RESET);
               to_init(e.qp, o.qp_access);
               CHECK_EQ(post_send(e, 1, e.buf, 8, e.mr->lkey), EINVAL);  // INIT: no sends
               CHECK_EQ(post_recv(e, 1, e.buf, 8), 0);                    // INIT: receives are fine
               // RQ overflow: 3 more fit, the 5th does not.
               ibv_sge sg{reinterpret_cast<uint64_t>(e.buf), 8, e.mr->lkey};
               ibv_recv_wr rw[4]{}, *rbad = nullptr;
               for (int i = 0; i < 4; i++) {
                 rw[i].wr_id = 2 + static_cast<uint64_t>(i);
                 rw[i].sg_list = &sg;
                 rw[i].num_sge = 1;
                 rw[i].next = i < 3 ? &rw[i + 1] : nullptr;
               }
               CHECK_EQ(ibv_post_recv(e.qp, rw, &rbad), ENOMEM);
               CHECK(rbad == &rw[3]);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask & ~IBV_QP_AV), EINVAL);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask | IBV_QP_SQ_PSN), EINVAL);  // not allowed at RTR
               r.path_mtu = static_cast<ibv_mtu>(9);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask), EINVAL);
               r = rtr_attr(self, o);
               CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask), 0);
               CHECK_EQ(qp_state(e.qp), IBV_QPS_RTR);
               CHECK_EQ(post_send(e, 1, e.buf, 8, e.mr->lkey), EINVAL);  // RTR: no sends
               ibv_qp_attr s = rts_attr(o);
               CHECK_EQ(ibv_modify_qp(e.qp, &s, kRtsMask & ~IBV_QP_SQ_PSN), EINVAL);
               CHECK_EQ(ibv_modify_qp(e.qp, &s, kRtsMask & ~IBV_QP_RNR_RETRY), EINVAL);
               s.rnr_retry = 8;
               CHECK_EQ(ibv_modify_qp(e.qp, &s, kRtsMask), EINVAL);
               s = rts_attr(o);
               CHECK_EQ(ibv_modify_qp(e.qp, &s, kRtsMask), 0);
               CHECK_EQ(qp_state(e.qp), IBV_QPS_RTS);
               CHECK(e.qp->state == IBV_QPS_RTS);
               ibv_qp_attr m{};
               m.min_rnr_timer = 32;
               CHECK_EQ(ibv_modify_qp(e.qp, &m, IBV_QP_MIN_RNR_TIMER), EINVAL);  // RTS->RTS bad value
               m.min_rnr_timer = 5;
               CHECK_EQ(ibv_modify_qp(e.qp, &m, IBV_QP_MIN_RNR_TIMER), 0);
               CHECK_EQ(ibv_modify_qp(e.qp, &m, IBV_QP_DEST_QPN), EINVAL);  // not modifiable in RTS
               // Loopback send to ourselves works (QP connected to itself); it consumes receive 1.
               for (int i = 0; i < 8; i++) e.buf[1024 + i] = static_cast<uint8_t>(0x30 + i);
               CHECK_EQ(post_send(e, 99, e.buf + 1024, 8, e.mr->lkey), 0);
               int seen = 0;
               for (int k = 0; k < 2; k++) {
                 ibv_wc wc = wait_wc(e.cq);
                 CHECK_STATUS(wc, IBV_WC_SUCCESS);
                 if (wc.opcode == IBV_WC_RECV) {
                   CHECK_EQ(wc.wr_id, 1);
                   CHECK_EQ(wc.byte_len, 8);
                   CHECK_EQ(wc.src_qp, e.qp->qp_num);
                   for (int i = 0; i < 8; i++) CHECK_EQ(e.buf[i], 0x30 + i);
                   seen |= 2;
                 } else {
                   CHECK_EQ(wc.opcode, IBV_WC_SEND);
                   CHECK_EQ(wc.wr_id, 99);
                   seen |= 1;
                 }
               }
               CHECK_EQ(seen, 3);
               destroy_ep(e);
             });
}

void t_state_machine2() {
  run_single("to ERR flushes posted receives and later sends; ERR -> RESET -> INIT again", [] {
    Opts o;
    Ep e = make_ep(o);
    Info self = info_of(e);
    connect(e, self, o);
    CHECK_EQ(post_recv(e, 1, e.buf, 64), 0);
    CHECK_EQ(post_recv(e, 2, e.buf + 64, 64), 0);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT), EINVAL);  // only STATE allowed
    CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
    for (int i = 1; i <= 2; i++) {
      ibv_wc wc = wait_wc(e.cq);
      CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
      CHECK_EQ(wc.wr_id, i);
    }
    CHECK_EQ(post_send(e, 3, e.buf, 8, e.mr->lkey, IBV_WR_SEND, 0, 0), 0);  // unsignaled, still flushed
    ibv_wc wc = wait_wc(e.cq);
    CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc.wr_id, 3);
    ibv_qp_attr r = rtr_attr(self, o);
    CHECK_EQ(ibv_modify_qp(e.qp, &r, kRtrMask), EINVAL);  // ERR -> RTR
    a.qp_state = IBV_QPS_RESET;
    CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
    to_init(e.qp, o.qp_access);
    connect(e, self, o);
    CHECK_EQ(qp_state(e.qp), IBV_QPS_RTS);
    destroy_ep(e);
  });
}

// VERBSEMU_MAX_MSG lowers the port's max_msg_sz: a write of exactly that many bytes lands, one
// byte more completes with IBV_WC_LOC_LEN_ERR and writes nothing.
void t_max_msg() {
  run_pair("VERBSEMU_MAX_MSG=4096: port max_msg_sz 4096, a 4096-byte write lands, 4097 bytes get "
           "IBV_WC_LOC_LEN_ERR and write nothing",
           [](int role, Link& l) {
             setenv("VERBSEMU_MAX_MSG", "4096", 1);
             Opts o;
             o.buflen = 3 * 4096;
             Ep e = make_ep(o);
             ibv_port_attr pa;
             CHECK_EQ(ibv_query_port(e.ctx, 1, &pa), 0);
             CHECK_EQ(pa.max_msg_sz, 4096u);
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               for (size_t i = 0; i < 2 * 4096 + 1; i++) e.buf[i] = static_cast<uint8_t>(i * 7 + 1);
               // max_msg_sz bytes land at offset 0; one byte more, at offset 4096, must fail
               const struct {
                 uint64_t id;
                 uint32_t len;
                 ibv_wc_status want;
               } writes[] = {{1, 4096, IBV_WC_SUCCESS}, {2, 4097, IBV_WC_LOC_LEN_ERR}};
               for (const auto& w : writes) {
                 const uint64_t off = w.id == 1 ? 0 : 4096;
                 CHECK_EQ(post_write(e, w.id, e.buf + off, w.len, e.mr->lkey, peer.addr + off, peer.rkey), 0);
                 const ibv_wc wc = wait_wc(e.cq);
                 CHECK_EQ(wc.wr_id, w.id);
                 CHECK_STATUS(wc, w.want);
               }
               l.signal('d');
             } else {
               l.wait('d');
               for (size_t i = 0; i < 4096; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i * 7 + 1));
               CHECK(all_fill(e.buf + 4096, e.len - 4096));
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

// The start of the VERBSEMU_FAULT tests: e connected to the peer, both sides past 'c'; the
// initiator (role 1) fills its first 192 bytes with i + add, posts them as three 64-byte
// writes to the same offsets (wr_id 1..3; the post of wr_id `refused` must return EINVAL,
// the others 0) and reaps wr_id 1's success. Returns when the writes were posted (role 1).
double fault_start(int role, Link& l, Ep& e, const Opts& o, uint8_t add, int refused = 0) {
  Info peer = exchange(l, e);
  connect(e, peer, o);
  l.signal('c');
  l.wait('c');
  if (role != 1) return 0;
  for (size_t i = 0; i < 192; i++) e.buf[i] = static_cast<uint8_t>(i + add);
  double posted = now_s();
  for (int k = 0; k < 3; k++)
    CHECK_EQ(post_write(e, static_cast<uint64_t>(k + 1), e.buf + k * 64, 64, e.mr->lkey,
                        peer.addr + static_cast<uint64_t>(k) * 64, peer.rkey),
             k + 1 == refused ? EINVAL : 0);
  ibv_wc wc = wait_wc(e.cq);
  CHECK_EQ(wc.wr_id, 1);
  CHECK_STATUS(wc, IBV_WC_SUCCESS);
  return posted;
}

void t_faults() {
  const struct {
    const char* spec;
    ibv_wc_status want;
  } cases[] = {
      {"remote_access@2", IBV_WC_REM_ACCESS_ERR},    {"local_prot@2", IBV_WC_LOC_PROT_ERR},
      {"retry_exceeded@2", IBV_WC_RETRY_EXC_ERR},    {"rnr_retry_exceeded@2", IBV_WC_RNR_RETRY_EXC_ERR},
      {"remote_op@2", IBV_WC_REM_OP_ERR},            {"flush@2", IBV_WC_WR_FLUSH_ERR},
  };
  for (const auto& c : cases) {
    std::string name = std::string("VERBSEMU_FAULT=") + c.spec + " -> 2nd write gets '" + ibv_wc_status_str(c.want) +
                       "', 3rd flushes, only the 1st lands";
    const char* spec = c.spec;
    ibv_wc_status want = c.want;
    run_pair(name, [spec, want](int role, Link& l) {
      if (role == 1) setenv("VERBSEMU_FAULT", spec, 1);
      Opts o;
      Ep e = make_ep(o);
      fault_start(role, l, e, o, 3);
      if (role == 1) {
        ibv_wc wc = wait_wc(e.cq);
        CHECK_EQ(wc.wr_id, 2);
        CHECK_STATUS(wc, want);
        wc = wait_wc(e.cq);
        CHECK_EQ(wc.wr_id, 3);
        CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
        CHECK_EQ(qp_state(e.qp), IBV_QPS_ERR);
        l.signal('d');
      } else {
        l.wait('d');
        for (size_t i = 0; i < 64; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 3));
        CHECK(all_fill(e.buf + 64, e.len - 64));
      }
      l.signal('x');
      l.wait('x');
      destroy_ep(e);
    });
  }
}

// post_einval: the refused WR is not queued and the QP keeps working (the next post lands).
void t_fault_post_einval() {
  run_pair("VERBSEMU_FAULT=post_einval@2 -> ibv_post_send refuses the 2nd write (EINVAL, *bad_wr), "
           "the 1st and 3rd land, QP stays RTS",
           [](int role, Link& l) {
             if (role == 1) setenv("VERBSEMU_FAULT", "post_einval@2", 1);
             Opts o;
             Ep e = make_ep(o);
             fault_start(role, l, e, o, 5, 2);
             if (role == 1) {
               ibv_wc wc = wait_wc(e.cq);
               CHECK_EQ(wc.wr_id, 3);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(qp_state(e.qp), IBV_QPS_RTS);
               l.signal('d');
             } else {
               l.wait('d');
               for (size_t i = 0; i < 64; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 5));
               CHECK(all_fill(e.buf + 64, 64));
               for (size_t i = 128; i < 192; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 5));
               CHECK(all_fill(e.buf + 192, e.len - 192));
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

// hold: the N-th WR stays in flight for VERBSEMU_HOLD_US from its post (later WRs of its QP
// wait behind it, as RC orders them), then runs when either side drives the emulator; a QP
// moved to ERR meanwhile flushes it and nothing lands. Three cases: the initiator polls past
// the hold; the target alone polls past it (the initiator sleeps); the initiator moves its QP
// to ERR during the hold. The hold (0.5 s) leaves a wide margin for the looks inside it.
void t_fault_hold() {
  enum Mode { kInitiatorRuns, kTargetRuns, kToErr };
  const struct {
    Mode mode;
    const char* name;
  } cases[] = {
      {kInitiatorRuns, "VERBSEMU_FAULT=hold@2 (VERBSEMU_HOLD_US=500000): the 2nd write and the 3rd behind it "
                       "land only after the hold, in order (the initiator polls)"},
      {kTargetRuns, "VERBSEMU_FAULT=hold@2: the target's polling alone runs the held write after the hold"},
      {kToErr, "VERBSEMU_FAULT=hold@2, QP to ERR during the hold: the 2nd and 3rd write flush, never land "
               "(the target polls past the hold)"},
  };
  for (const auto& c : cases) {
    const Mode mode = c.mode;
    run_pair(c.name, [mode](int role, Link& l) {
      constexpr double kHold = 0.5;
      if (role == 1) {
        setenv("VERBSEMU_FAULT", "hold@2", 1);
        setenv("VERBSEMU_HOLD_US", "500000", 1);
      }
      Opts o;
      Ep e = make_ep(o);
      double t0 = fault_start(role, l, e, o, 9);
      if (role == 1) {
        expect_no_wc(e.cq, 0.03);
        l.signal('h');  // the target looks while the 2nd is held
        l.wait('h');
        CHECK(now_s() - t0 < kHold);  // the looks were inside the hold
        if (mode == kToErr) {
          ibv_qp_attr a{};
          a.qp_state = IBV_QPS_ERR;
          CHECK_EQ(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
        } else if (mode == kTargetRuns) {
          l.wait('t');  // no poll here: the target ran them
        }
        ibv_wc_status want = mode == kToErr ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
        ibv_wc wc = wait_wc(e.cq);
        CHECK_EQ(wc.wr_id, 2);
        CHECK_STATUS(wc, want);
        if (mode != kToErr) CHECK(now_s() - t0 >= kHold);
        wc = wait_wc(e.cq);
        CHECK_EQ(wc.wr_id, 3);
        CHECK_STATUS(wc, want);
        l.signal('d');
      } else {
        l.wait('h');
        for (size_t i = 0; i < 64; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 9));
        CHECK(all_fill(e.buf + 64, e.len - 64));
        l.signal('h');
        if (mode == kTargetRuns) {
          double end = now_s() + 2 * kHold;
          while (*reinterpret_cast<volatile uint8_t*>(e.buf + 191) != static_cast<uint8_t>(191 + 9) && now_s() < end) {
            ibv_wc wc{};
            CHECK_EQ(ibv_poll_cq(e.cq, 1, &wc), 0);  // drives the emulator
          }
          for (size_t i = 64; i < 192; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 9));  // ran here
          l.signal('t');
        }
        l.wait('d');
        expect_no_wc(e.cq, 1.5 * kHold);  // polls on past the hold's end ('d' comes at once in kToErr)
        for (size_t i = 0; i < 64; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 9));
        if (mode == kToErr) {
          CHECK(all_fill(e.buf + 64, e.len - 64));
        } else {
          for (size_t i = 64; i < 192; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(i + 9));
          CHECK(all_fill(e.buf + 192, e.len - 192));
        }
      }
      l.signal('x');
      l.wait('x');
      destroy_ep(e);
    });
  }
}

void t_srq() {
  run_pair("SRQ: receives come from the SRQ, post_recv on its QP is EINVAL, limit event, destroy EBUSY",
           [](int role, Link& l) {
             Opts o;
             o.srq = role == 0;
             Ep e = make_ep(o);
             if (role == 0) {
               CHECK_EQ(post_recv(e, 1, e.buf, 64), EINVAL);
               for (int i = 0; i < 3; i++) {
                 ibv_sge sg{reinterpret_cast<uint64_t>(e.buf + i * 256), 256, e.mr->lkey};
                 ibv_recv_wr wr{}, *bad = nullptr;
                 wr.wr_id = 100 + static_cast<uint64_t>(i);
                 wr.sg_list = &sg;
                 wr.num_sge = 1;
                 CHECK_EQ(ibv_post_srq_recv(e.srq, &wr, &bad), 0);
               }
               ibv_srq_attr sa{};
               sa.srq_limit = 2;
               CHECK_EQ(ibv_modify_srq(e.srq, &sa, IBV_SRQ_LIMIT), 0);
               CHECK_EQ(ibv_destroy_srq(e.srq), EBUSY);  // a QP is attached
             }
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               for (size_t i = 0; i < 600; i++) e.buf[i] = static_cast<uint8_t>(i * 5);
               for (int i = 0; i < 3; i++)
                 CHECK_EQ(post_send(e, static_cast<uint64_t>(i), e.buf + i * 100, 10 + 20 * static_cast<uint32_t>(i),
                                    e.mr->lkey),
                          0);
               for (int i = 0; i < 3; i++) CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
             } else {
               for (int i = 0; i < 3; i++) {
                 ibv_wc wc = wait_wc(e.cq);
                 CHECK_STATUS(wc, IBV_WC_SUCCESS);
                 CHECK_EQ(wc.opcode, IBV_WC_RECV);
                 CHECK_EQ(wc.wr_id, 100 + i);
                 CHECK_EQ(wc.byte_len, 10 + 20 * i);
                 CHECK_EQ(wc.qp_num, e.qp->qp_num);
                 for (int k = 0; k < 10 + 20 * i; k++)
                   CHECK_EQ(e.buf[i * 256 + k], static_cast<uint8_t>((i * 100 + k) * 5));
               }
               ibv_async_event ev{};
               CHECK_EQ(ibv_get_async_event(e.ctx, &ev), 0);
               CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
               CHECK(ev.element.srq == e.srq);
               ibv_ack_async_event(&ev);
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);  // QP first, then SRQ: succeeds
           });
}

void t_events() {
  run_pair("completion channel: ibv_get_cq_event wakes across processes, solicited-only arming, unacked EBUSY",
           [](int role, Link& l) {
             Opts o;
             o.channel = role == 0;
             Ep e = make_ep(o);
             if (role == 0) {
               for (int i = 0; i < 3; i++) CHECK_EQ(post_recv(e, static_cast<uint64_t>(i), e.buf + i * 64, 64), 0);
               CHECK_EQ(ibv_req_notify_cq(e.cq, 0), 0);
             }
             Info peer = exchange(l, e);
             connect(e, peer, o);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               CHECK_EQ(post_send(e, 1, e.buf, 8, e.mr->lkey), 0);
               CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
               l.wait('a');
               CHECK_EQ(post_send(e, 2, e.buf, 8, e.mr->lkey), 0);  // not solicited
               CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
               l.signal('b');
               l.wait('s');
               CHECK_EQ(post_send(e, 3, e.buf, 8, e.mr->lkey, IBV_WR_SEND, 0, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
                        0);
               CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
             } else {
               ibv_cq* cq = nullptr;
               void* cctx = nullptr;
               CHECK_EQ(ibv_get_cq_event(e.ch, &cq, &cctx), 0);  // blocking
               CHECK(cq == e.cq);
               CHECK(cctx == reinterpret_cast<void*>(0x1234));
               ibv_wc wc = wait_wc(e.cq);
               CHECK_EQ(wc.wr_id, 0);
               CHECK_EQ(ibv_destroy_cq(e.cq), EBUSY);  // QP attached (and one event not acked)
               ibv_ack_cq_events(e.cq, 1);
               CHECK_EQ(ibv_req_notify_cq(e.cq, 1), 0);  // solicited only
               l.signal('a');
               l.wait('b');
               wc = wait_wc(e.cq);
               CHECK_EQ(wc.wr_id, 1);
               int fl = fcntl(e.ch->fd, F_GETFL);
               CHECK_EQ(fcntl(e.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
               errno = 0;
               CHECK_EQ(ibv_get_cq_event(e.ch, &cq, &cctx), -1);  // unsolicited: no event
               CHECK_EQ(errno, EAGAIN);
               l.signal('s');
               double end = now_s() + 10;
               int rc = -1;
               while (rc != 0 && now_s() < end) rc = ibv_get_cq_event(e.ch, &cq, &cctx);
               CHECK_EQ(rc, 0);
               CHECK(cq == e.cq);
               ibv_ack_cq_events(e.cq, 1);
               wc = wait_wc(e.cq);
               CHECK_EQ(wc.wr_id, 2);
               CHECK_EQ(ibv_destroy_comp_channel(e.ch), EBUSY);  // CQ still uses it
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

void t_inline() {
  run_pair("IBV_SEND_INLINE: data captured at post time (lkey ignored), > max_inline_data is EINVAL",
           [](int role, Link& l) {
             Opts o;
             o.max_inline = 64;
             Ep e = make_ep(o);
             if (role == 0) CHECK_EQ(post_recv(e, 1, e.buf, 128), 0);
             Info peer = exchange(l, e);
             connect(e, peer, o);
             ibv_qp_attr a{};
             ibv_qp_init_attr ia{};
             CHECK_EQ(ibv_query_qp(e.qp, &a, IBV_QP_CAP, &ia), 0);
             CHECK(ia.cap.max_inline_data >= 64);
             l.signal('c');
             l.wait('c');
             if (role == 1) {
               uint8_t tmp[80];
               for (int i = 0; i < 80; i++) tmp[i] = static_cast<uint8_t>(200 - i);
               CHECK_EQ(post_send(e, 1, tmp, 65, 0, IBV_WR_SEND, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), EINVAL);
               CHECK_EQ(post_send(e, 2, tmp, 48, 0, IBV_WR_SEND, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
               memset(tmp, 0, sizeof tmp);
               CHECK_STATUS(wait_wc(e.cq), IBV_WC_SUCCESS);
             } else {
               ibv_wc wc = wait_wc(e.cq);
               CHECK_STATUS(wc, IBV_WC_SUCCESS);
               CHECK_EQ(wc.byte_len, 48);
               for (int i = 0; i < 48; i++) CHECK_EQ(e.buf[i], static_cast<uint8_t>(200 - i));
             }
             l.signal('x');
             l.wait('x');
             destroy_ep(e);
           });
}

void t_cq_overrun() {
  run_single("CQ overrun: more completions than cqe -> ibv_poll_cq < 0 and IBV_EVENT_CQ_ERR", [] {
    Opts o;
    o.cqe = 2;
    Ep e = make_ep(o);
    Info self = info_of(e);
    connect(e, self, o);
    for (int i = 0; i < 3; i++)
      CHECK_EQ(post_write(e, static_cast<uint64_t>(i), e.buf, 8, e.mr->lkey, self.addr + 64, self.rkey), 0);
    ibv_wc wc[4];
    CHECK(ibv_poll_cq(e.cq, 4, wc) < 0);
    ibv_async_event ev{};
    CHECK_EQ(ibv_get_async_event(e.ctx, &ev), 0);
    CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
    CHECK(ev.element.cq == e.cq);
    ibv_ack_async_event(&ev);
    destroy_ep(e);
  });
}

void t_destroy_order() {
  run_single("destroy order: PD/CQ/SRQ/channel in use -> EBUSY, reverse order -> 0", [] {
    ibv_context* c = open_dev();
    ibv_pd* pd = ibv_alloc_pd(c);
    ibv_comp_channel* ch = ibv_create_comp_channel(c);
    ibv_cq* cq = ibv_create_cq(c, 8, nullptr, ch, 0);
    CHECK(pd && ch && cq);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(pd, &sa);
    CHECK(srq);
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.srq = srq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 1;
    ia.cap.max_send_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &ia);
    CHECK(qp);
    static char buf[4096];
    ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
    CHECK_EQ(ibv_destroy_cq(cq), EBUSY);
    CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
    CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
    CHECK_EQ(ibv_destroy_qp(qp), 0);
    CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);  // SRQ and MR still hold it
    CHECK_EQ(ibv_destroy_srq(srq), 0);
    CHECK_EQ(ibv_dereg_mr(mr), 0);
    CHECK_EQ(ibv_dealloc_pd(pd), 0);
    CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
    CHECK_EQ(ibv_destroy_cq(cq), 0);
    CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
    CHECK_EQ(ibv_close_device(c), 0);
  });
}

// Run a child with stderr captured; returns (exit status, stderr text).
std::pair<int, std::string> run_captured(const std::function<void()>& fn) {
  int p[2];
  CHECK(pipe(p) == 0);
  pid_t k = fork();
  CHECK(k >= 0);
  if (k == 0) {
    close(p[0]);
    dup2(p[1], 2);
    fn();
    exit(0);
  }
  close(p[1]);
  std::string out;
  char b[512];
  ssize_t n;
  while ((n = read(p[0], b, sizeof b)) > 0) out.append(b, static_cast<size_t>(n));
  close(p[0]);
  int st = 0;
  waitpid(k, &st, 0);
  return {st, out};
}

// An RC QP on cq, never connected (RESET): for the leak checker's scenarios.
ibv_qp* lone_qp(ibv_pd* pd, ibv_cq* cq, uint32_t send_wr) {
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = send_wr;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  return ibv_create_qp(pd, &ia);
}

void t_leak_checker() {
  auto leaky = [] {
    ibv_context* c = open_dev();
    ibv_pd* pd = ibv_alloc_pd(c);
    ibv_cq* cq = ibv_create_cq(c, 4, nullptr, nullptr, 0);
    ibv_qp* qp = lone_qp(pd, cq, 1);
    static char buf[64];
    ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, 0);
    if (!qp || !mr) exit(2);
  };
  auto [st, err] = run_captured(leaky);
  bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 86 && err.find("leak: QP") != std::string::npos &&
            err.find("leak: MR") != std::string::npos && err.find("leak: CQ") != std::string::npos &&
            err.find("leak: PD") != std::string::npos;
  report("leak checker: QP/MR/CQ/PD left at exit -> reported, exit status 86", ok,
         describe(st) + ", stderr: " + err.substr(0, 300));
  auto [st2, err2] = run_captured([] {
    ibv_context* c = open_dev();
    ibv_pd* pd = ibv_alloc_pd(c);
    (void)pd;
    ibv_close_device(c);
  });
  ok = WIFEXITED(st2) && WEXITSTATUS(st2) == 86 && err2.find("PD") != std::string::npos &&
       err2.find("ibv_close_device") != std::string::npos;
  report("leak checker: objects still alive at ibv_close_device are reported", ok,
         describe(st2) + ", stderr: " + err2.substr(0, 300));
  auto [st3, err3] = run_captured([] {
    unsetenv("VERBSEMU_CHECK_LEAKS");
    ibv_context* c = open_dev();
    (void)ibv_alloc_pd(c);
  });
  ok = WIFEXITED(st3) && WEXITSTATUS(st3) == 0 && err3.find("leak") == std::string::npos;
  report("leak checker off: leaked objects are reclaimed silently, exit 0", ok, describe(st3) + ", " + err3);
}

// A QP destroyed while a send completion is unread: its CQE goes with the QP (as mlx5's
// destroy cleans the CQ), and the program can no longer free what the wr_id names. The leak
// checker reports it; polling the flushed work request first is clean.
void t_destroy_unread() {
  auto scenario = [](bool poll_first) {
    ibv_context* c = open_dev();
    ibv_pd* pd = ibv_alloc_pd(c);
    ibv_cq* cq = ibv_create_cq(c, 4, nullptr, nullptr, 0);
    ibv_qp* qp = lone_qp(pd, cq, 2);
    if (!qp || !cq || !pd) exit(2);
    ibv_qp_attr err{};
    err.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(qp, &err, IBV_QP_STATE) != 0) exit(3);
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = 0x1234;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(qp, &wr, &bad) != 0) exit(4);
    if (poll_first) {
      ibv_wc wc{};
      int n = 0;
      for (int i = 0; i < 1000 && n == 0; i++) n = ibv_poll_cq(cq, 1, &wc);
      if (n != 1 || wc.wr_id != 0x1234 || wc.status != IBV_WC_WR_FLUSH_ERR) exit(5);
    }
    if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(c)) exit(6);
  };
  auto [st, err] = run_captured([&] { scenario(false); });
  bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 86 && err.find("1 send completion(s) not read") != std::string::npos;
  report("leak checker: ibv_destroy_qp with a send completion unread -> reported, exit status 86", ok,
         describe(st) + ", stderr: " + err.substr(0, 300));
  auto [st2, err2] = run_captured([&] { scenario(true); });
  ok = WIFEXITED(st2) && WEXITSTATUS(st2) == 0 && err2.find("leak") == std::string::npos;
  report("leak checker: the flushed completion polled before ibv_destroy_qp -> clean, exit 0", ok,
         describe(st2) + ", stderr: " + err2.substr(0, 300));
}

}  // namespace

int main(int argc, char** argv) {
  setenv("VERBSEMU_CHECK_LEAKS", "1", 0);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string only = argc > 1 ? argv[1] : "";
  struct T {
    const char* key;
    void (*fn)();
  };
  const T tests[] = {
      {"loaded", t_emulator_loaded},
      {"device", t_device_queries},
      {"regmr", t_reg_mr},
      {"writeimm", t_write_imm},
      {"send", t_send},
      {"read", t_rdma_read},
      {"badrkey", [] { t_remote_access("bad rkey: IBV_WC_REM_ACCESS_ERR, target untouched, both QPs to ERR, later WRs flush", RemoteCase::BadRkey); }},
      {"mrnorw", [] { t_remote_access("MR without IBV_ACCESS_REMOTE_WRITE: remote access error", RemoteCase::MrNoRemoteWrite); }},
      {"qpnorw", [] { t_remote_access("QP access flags without REMOTE_WRITE: remote access error", RemoteCase::QpNoRemoteWrite); }},
      {"oobend", [] { t_remote_access("write past the end of the remote MR: remote access error", RemoteCase::PastEnd); }},
      {"oobstart", [] { t_remote_access("write before the start of the remote MR: remote access error", RemoteCase::BeforeStart); }},
      {"localprot", t_local_prot},
      {"toosmall", t_recv_too_small},
      {"rnr", [] { t_rnr("SEND, no receive, rnr_retry=2: IBV_WC_RNR_RETRY_EXC_ERR in bounded time", IBV_WR_SEND_WITH_IMM, 2); }},
      {"rnr0", [] { t_rnr("WRITE_WITH_IMM, no receive, rnr_retry=0: IBV_WC_RNR_RETRY_EXC_ERR", IBV_WR_RDMA_WRITE_WITH_IMM, 0); }},
      {"rnr7", [] { t_rnr("SEND_WITH_IMM, rnr_retry=7: stays pending, delivered once a receive is posted", IBV_WR_SEND_WITH_IMM, 7); }},
      {"rnr7w", [] { t_rnr("WRITE_WITH_IMM, rnr_retry=7: data lands only once a receive is posted", IBV_WR_RDMA_WRITE_WITH_IMM, 7); }},
      {"retry", t_transport_retry},
      {"sq", t_sq_overflow},
      {"states", t_state_machine},
      {"states2", t_state_machine2},
      {"faults", t_faults},
      {"postfault", t_fault_post_einval},
      {"hold", t_fault_hold},
      {"maxmsg", t_max_msg},
      {"srq", t_srq},
      {"events", t_events},
      {"inline", t_inline},
      {"overrun", t_cq_overrun},
      {"destroy", t_destroy_order},
      {"leaks", t_leak_checker},
      {"destroyunread", t_destroy_unread},
  };
  for (const T& t : tests)
    if (only.empty() || only == t.key) t.fn();
  printf("# emu_test: %d tests, %d failed\n", g_test, g_failed);
  return g_failed ? 1 : 0;
}
