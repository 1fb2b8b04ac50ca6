// verbs-emu registry: attaches the POSIX shm segment shared by all processes of a namespace
// (VERBSEMU_NS), owns the process-shared robust lock, wake-up sockets, dead-process reaping,
// forced teardown of objects, fault-rule parsing and the exit-time leak checker.
#include "emu.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace vemu {

Local g;

namespace {

constexpr uint64_t kMagic = 0x564552424d553031ull ^ (sizeof(Registry) << 8);  // "VERBMU01" + layout
std::mutex attach_mu;

void on_fork_child() { g.me = getpid(); }

std::string sanitize(const char* s) {
  std::string out;
  for (const char* p = s; *p && out.size() < 48; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? std::string("default") : out;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

void diag(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "verbsemu[%d]: %s\n", static_cast<int>(getpid()), buf);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool attach() {
  std::lock_guard<std::mutex> lk(attach_mu);
  if (g.reg) return true;
  g.me = getpid();
  static bool atfork_done = false;
  if (!atfork_done) {
    pthread_atfork(nullptr, nullptr, on_fork_child);
    atfork_done = true;
  }
  // Let sibling processes of the same user use process_vm_readv/writev on us even under
  // Yama ptrace_scope=1 (harmless where Yama is absent).
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  const char* ns = getenv("VERBSEMU_NS");
  g.ns = ns && *ns ? sanitize(ns) : "u" + std::to_string(getuid());
  std::string name = "/verbsemu." + g.ns;

  bool creator = false;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    creator = true;
    if (ftruncate(fd, sizeof(Registry)) != 0) {
      int e = errno;
      diag("ftruncate(%s): %s", name.c_str(), strerror(e));
      close(fd);
      shm_unlink(name.c_str());
      errno = e;
      return false;
    }
  } else if (errno == EEXIST) {
    fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      int e = errno;
      diag("shm_open(%s): %s", name.c_str(), strerror(e));
      errno = e;
      return false;
    }
    struct stat st{};
    for (int i = 0; i < 500; i++) {
      if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == sizeof(Registry)) break;
      sleep_ms(10);
    }
    if (static_cast<uint64_t>(st.st_size) != sizeof(Registry)) {
      diag("registry %s has size %lld, expected %zu (stale build? remove /dev/shm%s)", name.c_str(),
           static_cast<long long>(st.st_size), sizeof(Registry), name.c_str());
      close(fd);
      errno = EINVAL;
      return false;
    }
  } else {
    int e = errno;
    diag("shm_open(%s): %s", name.c_str(), strerror(e));
    errno = e;
    return false;
  }

  void* p = mmap(nullptr, sizeof(Registry), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    diag("mmap registry: %s", strerror(e));
    errno = e;
    return false;
  }
  auto* r = static_cast<Registry*>(p);
  if (creator) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&r->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    r->size = sizeof(Registry);
    r->next_id = 1;
    r->next_lid = 1;
    r->wr_bump = 0;
    r->wr_free = kNil;
    __atomic_store_n(&r->magic, kMagic, __ATOMIC_RELEASE);
  } else {
    for (int i = 0; i < 500 && __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != kMagic; i++) sleep_ms(10);
    if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != kMagic) {
      diag("registry /dev/shm%s has a foreign layout (remove it)", name.c_str());
      munmap(p, sizeof(Registry));
      errno = EINVAL;
      return false;
    }
  }
  g.reg = r;
  g.tx_sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  {
    Guard lk;
    reap_dead();
  }
  return true;
}

Guard::Guard() {
  int rc = pthread_mutex_lock(&g.reg->lock);
  if (rc == EOWNERDEAD) {
    // A process died inside the emulator; its objects are reaped by reap_dead().
    pthread_mutex_consistent(&g.reg->lock);
  } else if (rc != 0) {
    diag("registry lock failed: %s", strerror(rc));
    abort();
  }
}

Guard::~Guard() { pthread_mutex_unlock(&g.reg->lock); }

uint64_t new_id() { return g.reg->next_id++; }

std::string sock_name(const char* kind, uint64_t id) {
  return "verbsemu." + g.ns + "." + kind + "." + std::to_string(id);
}

static socklen_t make_addr(sockaddr_un& a, const char* kind, uint64_t id) {
  std::string n = sock_name(kind, id);
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t len = n.size() < sizeof(a.sun_path) - 1 ? n.size() : sizeof(a.sun_path) - 1;
  memcpy(a.sun_path + 1, n.data(), len);  // abstract namespace: leading NUL
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
}

int open_bound_socket(const char* kind, uint64_t id) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a;
  socklen_t len = make_addr(a, kind, id);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

void send_wakeup(const char* kind, uint64_t id, const void* msg, size_t len) {
  if (g.tx_sock < 0) return;
  sockaddr_un a;
  socklen_t alen = make_addr(a, kind, id);
  // Best effort: a full socket buffer means the owner has plenty of wake-ups pending.
  (void)sendto(g.tx_sock, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&a), alen);
}

// ---------------- forced teardown ----------------

void free_qp(uint32_t s) {
  Registry& r = *g.reg;
  QpRec& q = r.qp[s];
  if (!q.in_use) return;
  r.pending_total -= q.sq_pending;
  wr_list_free_all(q.sq_head, q.sq_tail);
  wr_list_free_all(q.rq_head, q.rq_tail);
  purge_qp_cqes(q.scq, s);
  if (q.rcq != q.scq) purge_qp_cqes(q.rcq, s);
  if (q.scq != kNil && r.cq[q.scq].refcnt) r.cq[q.scq].refcnt--;
  if (q.rcq != kNil && r.cq[q.rcq].refcnt) r.cq[q.rcq].refcnt--;
  if (q.srq != kNil && r.srq[q.srq].refcnt) r.srq[q.srq].refcnt--;
  if (q.pd != kNil && r.pd[q.pd].refcnt) r.pd[q.pd].refcnt--;
  if (q.pid == g.me) g.qp[s] = nullptr;
  q.in_use = 0;
}

void free_srq(uint32_t s) {
  Registry& r = *g.reg;
  SrqRec& q = r.srq[s];
  if (!q.in_use) return;
  wr_list_free_all(q.head, q.tail);
  if (q.pd != kNil && r.pd[q.pd].refcnt) r.pd[q.pd].refcnt--;
  if (q.pid == g.me) g.srq[s] = nullptr;
  q.in_use = 0;
}

void free_cq(uint32_t s) {
  Registry& r = *g.reg;
  CqRec& c = r.cq[s];
  if (!c.in_use) return;
  for (uint32_t i = 0; i < c.nchunks; i++) r.chunk_used[c.chunk0 + i] = 0;
  if (c.chan != kNil && r.chan[c.chan].refcnt) r.chan[c.chan].refcnt--;
  if (c.pid == g.me) g.cq[s] = nullptr;
  c.in_use = 0;
}

void free_mr(uint32_t s) {
  Registry& r = *g.reg;
  MrRec& m = r.mr[s];
  if (!m.in_use) return;
  if (m.pd != kNil && r.pd[m.pd].refcnt) r.pd[m.pd].refcnt--;
  m.in_use = 0;
}

void free_pd(uint32_t s) { g.reg->pd[s].in_use = 0; }
void free_chan(uint32_t s) { g.reg->chan[s].in_use = 0; }

void free_ctx_objects(uint32_t ctx, std::vector<std::string>* leaks) {
  Registry& r = *g.reg;
  char buf[160];
  auto note = [&](const char* what) {
    if (leaks) leaks->push_back(what);
  };
  for (uint32_t i = 0; i < kMaxQp; i++)
    if (r.qp[i].in_use && r.qp[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "QP qpn=0x%x state=%d", r.qp[i].qpn, r.qp[i].state);
      note(buf);
      free_qp(i);
    }
  for (uint32_t i = 0; i < kMaxSrq; i++)
    if (r.srq[i].in_use && r.srq[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "SRQ id=%llu", static_cast<unsigned long long>(r.srq[i].id));
      note(buf);
      free_srq(i);
    }
  for (uint32_t i = 0; i < kMaxCq; i++)
    if (r.cq[i].in_use && r.cq[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "CQ id=%llu cqe=%u", static_cast<unsigned long long>(r.cq[i].id), r.cq[i].capacity);
      note(buf);
      free_cq(i);
    }
  for (uint32_t i = 0; i < kMaxMr; i++)
    if (r.mr[i].in_use && r.mr[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "MR lkey=0x%x addr=0x%llx len=%llu", r.mr[i].lkey,
               static_cast<unsigned long long>(r.mr[i].addr), static_cast<unsigned long long>(r.mr[i].length));
      note(buf);
      free_mr(i);
    }
  for (uint32_t i = 0; i < kMaxPd; i++)
    if (r.pd[i].in_use && r.pd[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "PD id=%llu", static_cast<unsigned long long>(r.pd[i].id));
      note(buf);
      free_pd(i);
    }
  for (uint32_t i = 0; i < kMaxChan; i++)
    if (r.chan[i].in_use && r.chan[i].ctx == ctx) {
      snprintf(buf, sizeof buf, "completion channel id=%llu", static_cast<unsigned long long>(r.chan[i].id));
      note(buf);
      free_chan(i);
    }
}

// Remove every object whose owner process no longer exists.
void reap_dead() {
  Registry& r = *g.reg;
  for (uint32_t i = 0; i < kMaxCtx; i++) {
    CtxRec& c = r.ctx[i];
    if (!c.in_use || c.pid == g.me) continue;
    if (kill(c.pid, 0) == 0 || errno != ESRCH) continue;
    free_ctx_objects(i, nullptr);
    c.in_use = 0;
  }
}

// ---------------- fault injection ----------------

void parse_faults() {
  if (g.faults_parsed) return;
  g.faults_parsed = true;
  const char* s = getenv("VERBSEMU_FAULT");
  if (!s || !*s) return;
  std::string spec(s);
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    std::string kind = item;
    uint64_t nth = 1;
    size_t at = item.find('@');
    if (at != std::string::npos) {
      kind = item.substr(0, at);
      char* end = nullptr;
      nth = strtoull(item.c_str() + at + 1, &end, 10);
      if (!end || *end || nth == 0) {
        diag("VERBSEMU_FAULT: bad count in '%s'", item.c_str());
        abort();
      }
    }
    Fault f;
    if (kind == "remote_access") f = kFaultRemoteAccess;
    else if (kind == "local_prot") f = kFaultLocalProt;
    else if (kind == "retry_exceeded") f = kFaultRetryExceeded;
    else if (kind == "rnr_retry_exceeded") f = kFaultRnrExceeded;
    else if (kind == "remote_op") f = kFaultRemoteOp;
    else if (kind == "flush") f = kFaultFlush;
    else if (kind == "post_einval") f = kFaultPostEinval;
    else if (kind == "hold") f = kFaultHold;
    else {
      diag("VERBSEMU_FAULT: unknown kind '%s' (remote_access, local_prot, retry_exceeded, "
           "rnr_retry_exceeded, remote_op, flush, post_einval, hold)", kind.c_str());
      abort();
    }
    g.faults.push_back({f, nth});
  }
}

// The environment variable `name`: unset or empty gives `dflt`; a whole number in lo .. hi
// is taken; anything else is a mistake in the test's environment: a message and abort().
static uint64_t env_count(const char* name, uint64_t lo, uint64_t hi, uint64_t dflt, const char* what) {
  const char* s = getenv(name);
  if (!s || !*s) return dflt;
  char* end = nullptr;
  unsigned long long n = strtoull(s, &end, 10);
  if (*end != '\0' || n < lo || n > hi) {
    diag("%s=%s: want %s from %llu to %llu", name, s, what, static_cast<unsigned long long>(lo),
         static_cast<unsigned long long>(hi));
    abort();
  }
  return n;
}

// VERBSEMU_MAX_MSG=bytes (1 .. kMaxMsg): a smaller max_msg_sz, so that tests can reach what
// a consumer does with a message above the port's limit without moving a gigabyte. Read at
// every ibv_open_device (like VERBSEMU_FAULT).
void parse_max_msg() {
  g.max_msg = static_cast<uint32_t>(env_count("VERBSEMU_MAX_MSG", 1, kMaxMsg, kMaxMsg, "a byte count"));
}

// VERBSEMU_HOLD_US=us (1 .. 10 s, default 200 ms): how long a VERBSEMU_FAULT=hold WR stays in
// flight, counted from its post. Read at every ibv_open_device like VERBSEMU_MAX_MSG, also
// without VERBSEMU_FAULT, so that a bad value is always reported.
void parse_hold() {
  g.hold_ns = env_count("VERBSEMU_HOLD_US", 1, 10000000, kHoldNs / 1000, "microseconds") * 1000;
}

bool leak_check_enabled() {
  const char* s = getenv("VERBSEMU_CHECK_LEAKS");
  return s && *s && strcmp(s, "0") != 0;
}

bool unread_check_enabled() {
  const char* s = getenv("VERBSEMU_CHECK_LEAKS");
  return leak_check_enabled() && strcmp(s, "objects") != 0;
}

namespace {

// Exit hook: release what this process left in the registry; with VERBSEMU_CHECK_LEAKS set,
// report it and turn the exit status into 86.
__attribute__((destructor)) void at_exit_check() {
  if (!g.reg || getpid() != g.me) return;
  std::vector<std::string> leaks;
  {
    Guard lk;
    Registry& r = *g.reg;
    for (uint32_t i = 0; i < kMaxCtx; i++) {
      if (!r.ctx[i].in_use || r.ctx[i].pid != g.me) continue;
      leaks.push_back("device context (ibv_close_device not called)");
      free_ctx_objects(i, &leaks);
      r.ctx[i].in_use = 0;
    }
  }
  std::vector<std::string> all = g.leak_notes;
  all.insert(all.end(), leaks.begin(), leaks.end());
  if (all.empty() || !leak_check_enabled()) return;
  for (const auto& l : all) diag("leak: %s", l.c_str());
  diag("%zu object(s) left behind; exiting with status 86", all.size());
  fflush(nullptr);
  _exit(86);
}

}  // namespace

}  // namespace vemu
