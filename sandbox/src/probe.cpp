// namespaces_available(): one real clone into the sandbox's namespace set, once per process.
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "kjsandbox/sandbox.h"
#include "launcher.h"
#include "sys.h"

namespace kjsandbox {
namespace {

struct ProbeResult {
  bool ok = false;
  std::string why;
};

ProbeResult probe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {false, std::string("pipe2: ") + strerror(errno)};
  int pidfd = -1;
  pid_t pid = clone_sandbox(false, &pidfd);
  if (pid == 0) {
    // Child: can we make our mounts private and mount a proc for the new pid namespace?
    sys::close(p[0]);
    int result[2] = {0, 0};
    if (sys::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      result[0] = 1, result[1] = errno;
    else if (sys::mount("proc", "/tmp", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      result[0] = 2, result[1] = errno;
    sys::write(p[1], result, sizeof result);
    sys::exit(0);
  }
  const int clone_errno = errno;
  ::close(p[1]);
  if (pid < 0) {
    ::close(p[0]);
    return {false, std::string("clone3 with new user/mount/pid/net/ipc/uts/cgroup namespaces: ") +
                       strerror(clone_errno)};
  }
  int result[2] = {-1, 0};
  ssize_t n;
  while ((n = ::read(p[0], result, sizeof result)) < 0 && errno == EINTR) {
  }
  ::close(p[0]);
  ::close(pidfd);
  int st;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof result)) return {false, "probe child died"};
  if (result[0] == 1) return {false, std::string("make / private in a user namespace: ") + strerror(result[1])};
  if (result[0] == 2) return {false, std::string("mount proc in a user namespace: ") + strerror(result[1])};
  return {true, ""};
}

}  // namespace

bool namespaces_available(std::string* why) {
  static const ProbeResult result = probe();  // thread-safe, once
  if (why) *why = result.why;
  return result.ok;
}

}  // namespace kjsandbox
