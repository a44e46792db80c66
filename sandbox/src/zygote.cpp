// The zygote (see zygote.h): the client side in the caller, the server side in the re-executed
// program, and the constructor that turns the latter into the former's helper before main.
#include "zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "child_plan.h"
#include "kjsandbox/sandbox.h"
#include "launcher.h"

extern char** environ;

namespace kjsandbox {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kFdVar = "KJSANDBOX_ZYGOTE_FD";
constexpr const char* kParentVar = "KJSANDBOX_ZYGOTE_PARENT";
constexpr const char* kResumeVar = "KJSANDBOX_RESUME_ZYGOTE";  // set for a resume zygote's program
constexpr int kZygoteFd = 3;
constexpr std::size_t kMaxMessage = 1 << 20;
constexpr int kMaxFds = 8;
constexpr std::uint32_t kRequestMagic = 0x4b4a5a51;  // "KJZQ"
constexpr std::uint32_t kReplyMagic = 0x4b4a5a52;    // "KJZR"
constexpr auto kReplyTimeout = std::chrono::seconds(10);
// After a zygote that would not start or misbehaved: in-process for a while. After one that ran
// and died (killed from outside): a new one at the next run, nearly at once.
constexpr auto kRetryAfterFailure = std::chrono::seconds(30);
constexpr auto kRetryAfterDeath = std::chrono::seconds(1);

// ---------------------------------------------------------------------------- encoding

class Writer {
 public:
  void u8(std::uint8_t v) { raw(&v, 1); }
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void i32(std::int32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    buf_.append(s);
  }
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void opt(const std::optional<std::uint64_t>& v) {
    u8(v ? 1 : 0);
    if (v) u64(*v);
  }
  const std::string& data() const { return buf_; }

 private:
  void raw(const void* p, std::size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string buf_;
};

class Reader {
 public:
  Reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  bool ok() const { return ok_; }
  template <class T>
  T pod() {
    T v{};
    raw(&v, sizeof v);
    return v;
  }
  std::uint8_t u8() { return pod<std::uint8_t>(); }
  std::uint32_t u32() { return pod<std::uint32_t>(); }
  std::int32_t i32() { return pod<std::int32_t>(); }
  std::uint64_t u64() { return pod<std::uint64_t>(); }
  std::string str() {
    const std::uint32_t n = u32();
    if (!ok_ || n > left()) return fail<std::string>();
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<std::string> strs() {
    const std::uint32_t n = u32();
    std::vector<std::string> v;
    if (n > left()) return fail<std::vector<std::string>>();  // each takes 4 bytes at least
    for (std::uint32_t i = 0; i < n && ok_; ++i) v.push_back(str());
    return v;
  }
  std::optional<std::uint64_t> opt() {
    if (u8()) return u64();
    return std::nullopt;
  }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

 private:
  template <typename T>
  T fail() {
    ok_ = false;
    return T{};
  }
  void raw(void* out, std::size_t n) {
    if (!ok_ || n > left()) {
      ok_ = false;
      return;
    }
    std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

// Exactly the fields build_child_plan() reads (the rest is the caller's business: cgroup,
// limits, stdin, host ids, cancel).
[[maybe_unused]] void encode_policy(Writer& w, const Policy& p) {
  w.strs(p.argv);
  w.u32(static_cast<std::uint32_t>(p.env.size()));
  for (const auto& [k, v] : p.env) {
    w.str(k);
    w.str(v);
  }
  w.str(p.cwd);
  w.u32(static_cast<std::uint32_t>(p.binds.size()));
  for (const auto& b : p.binds) {
    w.str(b.source);
    w.str(b.target);
    w.u8(b.writable ? 1 : 0);
  }
  w.u32(static_cast<std::uint32_t>(p.tmpfs.size()));
  for (const auto& t : p.tmpfs) {
    w.str(t.target);
    w.u64(t.size_bytes);
  }
  w.strs(p.devices);
  w.str(p.hostname);
  w.u32(p.inside_uid);
  w.u32(p.inside_gid);
  w.u64(p.rlimits.core_bytes);
  w.u64(p.rlimits.open_files);
  w.u64(p.rlimits.file_size_bytes);
  w.u64(p.rlimits.stack_bytes);
  w.opt(p.rlimits.address_space_bytes);
  w.opt(p.rlimits.cpu_seconds);
  w.opt(p.rlimits.processes);
  w.u8(static_cast<std::uint8_t>(p.seccomp.mode));
  w.str(p.seccomp.profile);
  w.strs(p.seccomp.extra_allow);
  w.u8(p.mask_proc ? 1 : 0);
  w.strs(p.proc_unmask);
  w.strs(p.proc_hide);
}

bool decode_policy(Reader& r, Policy& p) {
  p.argv = r.strs();
  p.env.clear();
  for (std::uint32_t i = 0, n = r.u32(); i < n && r.ok(); ++i) {
    std::string k = r.str();
    p.env[k] = r.str();
  }
  p.cwd = r.str();
  p.binds.clear();
  for (std::uint32_t i = 0, n = r.u32(); i < n && r.ok(); ++i) {
    BindMount b;
    b.source = r.str();
    b.target = r.str();
    b.writable = r.u8() != 0;
    p.binds.push_back(std::move(b));
  }
  p.tmpfs.clear();
  for (std::uint32_t i = 0, n = r.u32(); i < n && r.ok(); ++i) {
    TmpfsMount t;
    t.target = r.str();
    t.size_bytes = r.u64();
    p.tmpfs.push_back(std::move(t));
  }
  p.devices = r.strs();
  p.hostname = r.str();
  p.inside_uid = r.u32();
  p.inside_gid = r.u32();
  p.rlimits.core_bytes = r.u64();
  p.rlimits.open_files = r.u64();
  p.rlimits.file_size_bytes = r.u64();
  p.rlimits.stack_bytes = r.u64();
  p.rlimits.address_space_bytes = r.opt();
  p.rlimits.cpu_seconds = r.opt();
  p.rlimits.processes = r.opt();
  const std::uint8_t mode = r.u8();
  if (mode > static_cast<std::uint8_t>(Seccomp::Mode::Log)) return false;
  p.seccomp.mode = static_cast<Seccomp::Mode>(mode);
  p.seccomp.profile = r.str();
  p.seccomp.extra_allow = r.strs();
  p.mask_proc = r.u8() != 0;
  p.proc_unmask = r.strs();
  p.proc_hide = r.strs();
  return r.ok() && r.left() == 0;
}

// One SOCK_SEQPACKET message with up to kMaxFds descriptors.
bool send_message(int sock, const std::string& data, const int* fds, int nfds) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<std::size_t>(nfds));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<std::size_t>(nfds));
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * static_cast<std::size_t>(nfds));
  }
  ssize_t n;
  while ((n = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(data.size());
}

// Returns the message size (0 = peer closed, -1 = error); received fds (close-on-exec) in fds.
ssize_t recv_message(int sock, char* buf, std::size_t size, std::vector<int>& fds, bool* truncated) {
  iovec iov{buf, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  fds.clear();
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  *truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  return n;
}

// ---------------------------------------------------------------------------- server

enum Flags : std::uint8_t { kNewNetns = 1, kHasNetnsFd = 2, kHasCgroupFd = 4, kResume = 8 };

std::string encode_reply(const ZygoteReply& r) {
  Writer w;
  w.u32(kReplyMagic);
  w.u8(static_cast<std::uint8_t>(r.kind));
  w.i32(r.pid);
  w.i32(r.clone_errno);
  w.u8(r.need_attach ? 1 : 0);
  w.str(r.error.substr(0, 2048));  // the client reads replies into 4 KiB
  return w.data();
}

ZygoteReply serve_one(Reader& in, const std::vector<int>& fds, int own_netns, ResumeFn resume) {
  ZygoteReply reply;
  reply.kind = ZygoteReply::PlanError;
  const std::uint8_t flags = in.u8();
  const std::size_t want = 5 + ((flags & kHasNetnsFd) ? 1 : 0) + ((flags & kHasCgroupFd) ? 1 : 0);
  Policy policy;
  if (!decode_policy(in, policy) || fds.size() != want) {
    reply.error = "zygote: malformed request";
    return reply;
  }
  ChildPlan plan;
  if (!build_child_plan(policy, plan, &reply.error)) return reply;
  if (flags & kResume) {
    if (!resume) {
      reply.error = "zygote: this zygote cannot resume a command";
      return reply;
    }
    plan.resume = resume;
  }
  plan.fd_sync_read = fds[0];
  plan.fd_status_write = fds[1];
  plan.fd_stdin = fds[2];
  plan.fd_stdout_write = fds[3];
  plan.fd_stderr_write = fds[4];
  std::size_t next = 5;
  const int netns_fd = (flags & kHasNetnsFd) ? fds[next++] : -1;
  const int cgroup_fd = (flags & kHasCgroupFd) ? fds[next++] : -1;

  reply.kind = ZygoteReply::CloneError;
  if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) {
    reply.clone_errno = errno;
    return reply;
  }
  const bool share_network = !(flags & kNewNetns);
  int pidfd = -1;
  pid_t pid = clone_sandbox(share_network, &pidfd, cgroup_fd, true);
  if (pid == 0) sandbox_init_main(plan);  // the child; never returns
  if (pid < 0 && cgroup_fd >= 0 && errno != ENOMEM && errno != EAGAIN) {
    pid = clone_sandbox(share_network, &pidfd, -1, true);
    if (pid == 0) sandbox_init_main(plan);
    reply.need_attach = true;
  }
  reply.clone_errno = errno;
  // A zygote stuck in a job's network namespace must not launch the next one there.
  if (netns_fd >= 0 && ::setns(own_netns, CLONE_NEWNET) != 0) ::_exit(3);
  if (pid < 0) return reply;
  reply.kind = ZygoteReply::Launched;
  reply.pid = pid;
  reply.pidfd = pidfd;
  reply.clone_errno = 0;
  return reply;
}

}  // namespace

[[noreturn]] void zygote_serve(int sock, pid_t parent, ResumeFn resume) {
  // Dies with the thread that started it (a thread of the caller that lives as long as the
  // caller's process), and with the caller (EOF on the socket).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent <= 0 || ::getppid() != parent) ::_exit(0);
  ::prctl(PR_SET_NAME, "kjsbx-zygote");
  const int own_netns = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (own_netns < 0) ::_exit(2);
  if (!send_message(sock, "Z", nullptr, 0)) ::_exit(2);
  // Not zero-filled: pages of it that were never touched are not copied into each clone.
  std::unique_ptr<char[]> buf(new char[kMaxMessage]);
  std::vector<int> fds;
  for (;;) {
    bool truncated = false;
    const ssize_t n = recv_message(sock, buf.get(), kMaxMessage, fds, &truncated);
    if (n <= 0) ::_exit(0);  // the caller closed the socket (or is gone)
    ZygoteReply reply;
    Reader in(buf.get(), static_cast<std::size_t>(n));
    if (truncated || in.u32() != kRequestMagic) {
      reply.kind = ZygoteReply::PlanError;
      reply.error = "zygote: malformed request";
    } else {
      reply = serve_one(in, fds, own_netns, resume);
    }
    for (int fd : fds) ::close(fd);
    const int pidfd = reply.pidfd;
    if (!send_message(sock, encode_reply(reply), &pidfd, pidfd >= 0 ? 1 : 0)) ::_exit(0);
    if (pidfd >= 0) ::close(pidfd);
  }
}

namespace {
// Runs before main (and before the program's own static constructors) in the re-executed
// program; returns at once in every other process.
__attribute__((constructor(101))) void zygote_entry() { zygote_serve_from_environment(); }
}  // namespace

bool zygote_endpoint_from_environment(int* sock, pid_t* parent) {
  const char* fd = std::getenv(kFdVar);
  if (!fd) return false;
  const char* p = std::getenv(kParentVar);
  *sock = std::atoi(fd);
  *parent = p ? static_cast<pid_t>(std::atol(p)) : 0;
  return true;
}

void zygote_serve_from_environment() {
  int sock;
  pid_t parent;
  // A resume zygote's program serves through resume_zygote.cpp, never from the constructor.
  if (std::getenv(kResumeVar) || !zygote_endpoint_from_environment(&sock, &parent)) return;
  zygote_serve(sock, parent, nullptr);
}

#ifndef KJSBX_ZYGOTE_SERVER_ONLY
namespace {

// ---------------------------------------------------------------------------- client

enum class State { Idle, Starting, Ready, Broken };

struct Client {
  std::mutex mu;  // everything below but request_mu
  std::condition_variable cv;
  State state = State::Idle;
  bool keeper_started = false;
  int sock = -1;
  pid_t pid = -1;
  Clock::time_point broken_at{};
  Clock::duration retry_after = kRetryAfterFailure;
  pid_t owner = 0;  // the process the zygote serves
  std::mutex request_mu;  // one request and its reply at a time; taken before mu
  // A resume zygote (register_resume_zygote): its program and environment; empty argv = the
  // default zygote (the embedded image, else this program).
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::chrono::milliseconds hello_timeout{10'000};
};

Client& client() {
  static Client* c = new Client;  // never destroyed: the keeper thread uses it until exit
  return *c;
}

// Resume zygotes by name; entries are never removed (their keepers hold them).
std::mutex g_resume_mu;
std::map<std::string, Client*>& resume_clients() {
  static auto* m = new std::map<std::string, Client*>;
  return *m;
}

Client* resume_client(const std::string& name) {
  std::lock_guard lock(g_resume_mu);
  const auto it = resume_clients().find(name);
  return it == resume_clients().end() ? nullptr : it->second;
}

std::atomic<bool> g_enabled{std::getenv("KJSANDBOX_NO_ZYGOTE") == nullptr};
std::atomic<std::uint64_t> g_resumed{0};  // launches a resume zygote served

// The embedded static zygote in a sealed memfd (once per process), or -1.
int image_fd() {
  static const int fd = [] {
    const auto [data, size] = zygote_image();
    if (size == 0) return -1;
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
    // MFD_EXEC: kernels with vm.memfd_noexec=1 make memfds non-executable unless asked.
    int f = ::memfd_create("kjsandbox-zygote", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (f < 0 && errno == EINVAL) f = ::memfd_create("kjsandbox-zygote", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0) return -1;
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(f, data + done, size - done);
      if (n <= 0) {
        ::close(f);
        return -1;
      }
      done += static_cast<std::size_t>(n);
    }
    ::fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    return f;
  }();
  return fd;
}

pid_t spawn_zygote(int child_end, const char* path, const Client& c) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_adddup2(&fa, child_end, kZygoteFd);  // clears close-on-exec
  // The zygote has no use for the caller's stdio (and must not hold a pipe open that someone
  // waits to see closed).
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  // A clean environment: only what the zygote needs and what the dynamic loader and sanitizer
  // runtimes of this very program need to start it.
  // A resume zygote gets exactly its registered environment (it is another program).
  std::vector<std::string> env = {std::string(kFdVar) + "=" + std::to_string(kZygoteFd),
                                  std::string(kParentVar) + "=" + std::to_string(::getpid())};
  if (c.argv.empty()) {
    for (const char* keep : {"LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
                             "MSAN_OPTIONS"})
      if (const char* v = std::getenv(keep)) env.push_back(std::string(keep) + "=" + v);
  } else {
    env.push_back(std::string(kResumeVar) + "=1");
    for (const auto& [k, v] : c.env) env.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char name[] = "kjsandbox-zygote";  // room for init to write "kjsandbox-init" over it
  std::vector<std::string> args = c.argv;
  std::vector<char*> argv;
  if (args.empty()) argv.push_back(name);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path, &fa, &attr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

bool wait_hello(int sock, std::chrono::milliseconds timeout) {
  pollfd p{sock, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
  char c = 0;
  return ::recv(sock, &c, 1, 0) == 1 && c == 'Z';
}

// Starts the zygote when asked (state Starting), then waits for it to exit and reaps it. The
// zygote's parent is this thread, which never exits: the sandboxes it clones (CLONE_PARENT) are
// children of this thread too, and their PDEATHSIG fires only when the process goes.
[[noreturn]] void keeper(Client& c) {
  for (;;) {
    {
      std::unique_lock lock(c.mu);
      c.cv.wait(lock, [&] { return c.state == State::Starting; });
    }
    // The embedded static image first, the calling program itself if that cannot start.
    int sp[2] = {-1, -1};
    pid_t pid = -1;
    bool ok = false;
    std::vector<std::string> paths;
    if (!c.argv.empty()) {
      paths = {c.argv[0]};
    } else {
      const int image = image_fd();
      paths = {image >= 0 ? "/proc/self/fd/" + std::to_string(image) : "", "/proc/self/exe"};
    }
    for (const std::string& path : paths) {
      if (path.empty()) continue;
      if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) break;
      const int size = 4 << 20;
      ::setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
      ::setsockopt(sp[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
      pid = spawn_zygote(sp[1], path.c_str(), c);
      ::close(sp[1]);
      ok = pid > 0 && wait_hello(sp[0], c.hello_timeout);
      if (ok) break;
      ::close(sp[0]);
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        int st;
        while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
      }
      pid = -1;
    }
    {
      std::lock_guard lock(c.mu);
      if (ok) {
        c.sock = sp[0];
        c.pid = pid;
        c.state = State::Ready;
      } else {
        c.state = State::Broken;
        c.broken_at = Clock::now();
        c.retry_after = kRetryAfterFailure;
      }
    }
    c.cv.notify_all();
    if (!ok) continue;
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    std::lock_guard request(c.request_mu);  // no request is using the socket now
    std::lock_guard lock(c.mu);
    ::close(c.sock);
    c.sock = -1;
    c.pid = -1;
    if (c.state == State::Ready) {
      c.state = State::Broken;
      c.broken_at = Clock::now();
      c.retry_after = kRetryAfterDeath;
    }
  }
}

// Called with request_mu held: the zygote misbehaved; it is killed and not used again until the
// keeper has reaped it and a retry is due.
void give_up(Client& c, Clock::duration retry_after = kRetryAfterFailure) {
  std::lock_guard lock(c.mu);
  if (c.state == State::Ready) {
    c.state = State::Broken;
    c.broken_at = Clock::now();
    c.retry_after = retry_after;
  }
  if (c.pid > 0) ::kill(c.pid, SIGKILL);
}

}  // namespace

void set_zygote_enabled(bool enabled) { g_enabled = enabled; }

bool zygote_ready(int* pid) {
  Client& c = client();
  std::lock_guard lock(c.mu);
  if (pid) *pid = c.state == State::Ready ? c.pid : 0;
  return c.state == State::Ready;
}

namespace {

// Starts the zygote if it is not running (and a retry is due); true when it is ready now.
bool ensure_ready(Client& c) {
  std::lock_guard lock(c.mu);
  // A forked copy of the process that started the zygote has neither its keeper thread nor
  // a socket of its own (and could not wait for what the zygote clones): in-process there.
  if (c.owner == 0) c.owner = ::getpid();
  if (c.owner != ::getpid()) return false;
  if (c.state == State::Idle || (c.state == State::Broken && Clock::now() - c.broken_at > c.retry_after)) {
    c.state = State::Starting;
    if (!c.keeper_started) {
      try {
        std::thread(keeper, std::ref(c)).detach();
        c.keeper_started = true;
      } catch (const std::system_error&) {
        c.state = State::Broken;
        c.broken_at = Clock::now();
        c.retry_after = kRetryAfterFailure;
      }
    }
    c.cv.notify_all();
  }
  return c.state == State::Ready;  // in-process until it is up
}

ZygoteReply send_request(Client& c, const ZygoteRequest& rq, bool resume);

}  // namespace

void register_resume_zygote(const std::string& name, std::vector<std::string> argv,
                            std::map<std::string, std::string> env, std::chrono::milliseconds start_timeout) {
  if (argv.empty()) return;
  std::lock_guard lock(g_resume_mu);
  Client*& c = resume_clients()[name];
  if (c) return;  // registered once per process: its keeper owns it from the first launch on
  c = new Client;
  c->argv = std::move(argv);
  c->env = std::move(env);
  c->hello_timeout = start_timeout;
  if (g_enabled) ensure_ready(*c);  // its start-up (an interpreter's imports) begins now
}

bool wait_resume_zygote(const std::string& name, std::chrono::milliseconds timeout) {
  Client* c = g_enabled ? resume_client(name) : nullptr;
  if (!c) return false;
  if (ensure_ready(*c)) return true;
  std::unique_lock lock(c->mu);
  if (c->owner != ::getpid()) return false;  // a forked copy: no keeper of its own to wait for
  c->cv.wait_for(lock, timeout, [&] { return c->state != State::Starting; });
  return c->state == State::Ready;
}

ZygoteReply zygote_launch(const ZygoteRequest& rq) {
  if (!g_enabled) return {};
  if (!rq.policy->resume_in.empty()) {
    // Its own zygote when that is up; until then (or without one) the default one execs argv.
    Client* r = resume_client(rq.policy->resume_in);
    if (r && ensure_ready(*r)) {
      ZygoteReply reply = send_request(*r, rq, true);
      if (reply.kind == ZygoteReply::Launched) ++g_resumed;
      if (reply.kind != ZygoteReply::Unavailable) return reply;
    }
  }
  Client& c = client();
  if (!ensure_ready(c)) return {};
  return send_request(c, rq, false);
}

namespace {

ZygoteReply send_request(Client& c, const ZygoteRequest& rq, bool resume) {
  ZygoteReply unavailable;

  Writer w;
  w.u32(kRequestMagic);
  std::uint8_t flags = resume ? kResume : 0;
  if (rq.new_netns) flags |= kNewNetns;
  std::vector<int> fds = {rq.fd_sync_read, rq.fd_status_write, rq.fd_stdin, rq.fd_stdout_write, rq.fd_stderr_write};
  if (rq.netns_fd >= 0) {
    flags |= kHasNetnsFd;
    fds.push_back(rq.netns_fd);
  }
  if (rq.cgroup_fd >= 0) {
    flags |= kHasCgroupFd;
    fds.push_back(rq.cgroup_fd);
  }
  w.u8(flags);
  encode_policy(w, *rq.policy);
  if (w.data().size() > kMaxMessage / 2) return unavailable;

  std::lock_guard request(c.request_mu);
  int sock;
  {
    std::lock_guard lock(c.mu);
    if (c.state != State::Ready) return unavailable;
    sock = c.sock;
  }
  if (!send_message(sock, w.data(), fds.data(), static_cast<int>(fds.size()))) {
    give_up(c, kRetryAfterDeath);  // it is gone (EPIPE)
    return unavailable;  // (a SEQPACKET message goes whole or not at all)
  }
  ZygoteReply lost;
  lost.kind = ZygoteReply::Lost;
  pollfd p{sock, POLLIN, 0};
  const int timeout_ms = static_cast<int>(std::chrono::milliseconds(kReplyTimeout).count());
  int pr;
  while ((pr = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  char buf[4096];
  std::vector<int> got;
  bool truncated = false;
  const ssize_t n = pr == 1 ? recv_message(sock, buf, sizeof buf, got, &truncated) : -1;
  // EOF, or ECONNRESET when it died with our request unread: gone, not misbehaving.
  const bool died = n == 0 || (n < 0 && pr == 1 && errno == ECONNRESET);
  ZygoteReply reply;
  Reader in(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (n <= 0 || truncated || in.u32() != kReplyMagic) {
    for (int fd : got) ::close(fd);
    give_up(c, died ? kRetryAfterDeath : kRetryAfterFailure);  // died, or hung / misbehaved
    return lost;
  }
  const std::uint8_t kind = in.u8();
  reply.pid = in.i32();
  reply.clone_errno = in.i32();
  reply.need_attach = in.u8() != 0;
  reply.error = in.str();
  const bool launched = kind == ZygoteReply::Launched;
  if (!in.ok() || kind > ZygoteReply::CloneError || kind == ZygoteReply::Unavailable ||
      got.size() != (launched ? 1u : 0u) || (launched && reply.pid <= 0)) {
    for (int fd : got) ::close(fd);
    give_up(c);
    return lost;
  }
  reply.kind = static_cast<ZygoteReply::Kind>(kind);
  if (launched) reply.pidfd = got[0];
  return reply;
}

}  // namespace

std::uint64_t resumed_launches() { return g_resumed.load(); }

#endif  // KJSBX_ZYGOTE_SERVER_ONLY

}  // namespace kjsandbox
