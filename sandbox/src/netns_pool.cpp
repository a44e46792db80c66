// The network namespace pool (see netns_pool.h).
#include "netns_pool.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace kjsandbox {
namespace {

constexpr std::size_t kMaxFree = 64;

std::mutex g_mu;
std::vector<PooledNetns> g_free;
pid_t g_owner = 0;  // a forked child must not share its parent's pooled namespaces
bool g_disabled = false;  // creating one failed (no privilege): do not try again

// The calling thread's own namespace, opened once per thread.
struct OwnNetns {
  int fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  ~OwnNetns() {
    if (fd >= 0) ::close(fd);
  }
};
thread_local OwnNetns t_own;

void close_ns(const PooledNetns& ns) {
  if (ns.ns_fd >= 0) ::close(ns.ns_fd);
  if (ns.unix_fd >= 0) ::close(ns.unix_fd);
}

// Creates one: this thread unshares into a new namespace, keeps handles on it, and goes back.
std::optional<PooledNetns> create() {
  if (t_own.fd < 0) return std::nullopt;
  if (::unshare(CLONE_NEWNET) != 0) return std::nullopt;
  PooledNetns ns;
  ns.ns_fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  ns.unix_fd = ::open("/proc/thread-self/net/unix", O_RDONLY | O_CLOEXEC);
  netns_leave();
  if (ns.ns_fd < 0 || ns.unix_fd < 0) {
    close_ns(ns);
    return std::nullopt;
  }
  return ns;
}

// True when /proc/net/unix of the namespace lists nothing but its header line.
bool holds_no_socket(const PooledNetns& ns) {
  char buf[512];
  if (::lseek(ns.unix_fd, 0, SEEK_SET) != 0) return false;
  ssize_t n = ::read(ns.unix_fd, buf, sizeof buf);
  if (n <= 0) return false;
  const void* nl = std::memchr(buf, '\n', static_cast<std::size_t>(n));
  return nl != nullptr && static_cast<const char*>(nl) + 1 == buf + n;
}

}  // namespace

std::optional<PooledNetns> netns_acquire() {
  {
    std::lock_guard lock(g_mu);
    if (g_owner != ::getpid()) {  // first use, or a forked child: start from an empty pool
      for (const auto& ns : g_free) close_ns(ns);
      g_free.clear();
      g_owner = ::getpid();
    }
    if (g_disabled) return std::nullopt;
    if (!g_free.empty()) {
      PooledNetns ns = g_free.back();
      g_free.pop_back();
      return ns;
    }
  }
  auto ns = create();
  if (!ns) {
    std::lock_guard lock(g_mu);
    g_disabled = true;
  }
  return ns;
}

void netns_release(const PooledNetns& ns) {
  if (holds_no_socket(ns)) {
    std::lock_guard lock(g_mu);
    if (g_owner == ::getpid() && g_free.size() < kMaxFree) {
      g_free.push_back(ns);
      return;
    }
  }
  close_ns(ns);
}

void netns_discard(const PooledNetns& ns) { close_ns(ns); }

int netns_trim() {
  std::vector<PooledNetns> idle;
  {
    std::lock_guard lock(g_mu);
    idle.swap(g_free);
  }
  for (const auto& ns : idle) close_ns(ns);
  return static_cast<int>(idle.size());
}

bool netns_enter(int ns_fd) { return t_own.fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) == 0; }

void netns_leave() {
  if (::setns(t_own.fd, CLONE_NEWNET) == 0) return;
  std::fprintf(stderr, "kjsandbox: cannot return to the thread's network namespace: %s\n", std::strerror(errno));
  std::abort();
}

}  // namespace kjsandbox
