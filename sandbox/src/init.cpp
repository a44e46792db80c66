// Child side: the sandbox's PID 1. It is the process clone3 created, so it starts as a copy of
// one thread of the (multi-threaded) caller: only system calls until it dies (see sys.h).
//
// It keeps only its own fds, waits until the parent has written the id maps (and put it in the
// job cgroup), takes the inside identity, builds the root view, wipes the caller's command line
// and environment from its memory, hardens itself (capabilities, securebits, no_new_privs,
// seccomp; inherited by the command), forks the command, then reaps every process of the
// namespace and answers seccomp notifications: a call outside the allow-list kills the whole
// namespace and is reported (Enforce), or is let through and reported once (Log). When the
// command exits it reports the command's wait status and exits itself; the kernel then kills
// whatever is left in the pid namespace. Setup failures go out as (step, errno).
#include <linux/seccomp.h>
#include <unistd.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdint>

#include "child_plan.h"
#include "sys.h"
#include "wire.h"

namespace kjsandbox {
namespace {

// Closes every fd except the given ones (the caller's other threads' fds included).
void close_all_except(int* keep, int n) {
  for (int i = 1; i < n; ++i)  // insertion sort, n is tiny
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  unsigned next = 0;
  for (int i = 0; i < n; ++i) {
    if (keep[i] < 0) continue;
    unsigned fd = static_cast<unsigned>(keep[i]);
    if (fd > next) sys::close_range(next, fd - 1);
    next = fd + 1;
  }
  sys::close_range(next, ~0u);
}

void wipe(unsigned long start, unsigned long end) {
  if (start == 0 || end <= start || end - start > (1ul << 20)) return;
  volatile char* p = reinterpret_cast<volatile char*>(start);
  for (unsigned long i = 0; i < end - start; ++i) p[i] = 0;
}

// The caller's argv/environ strings live in our copy of its stack: overwrite them, so the
// sandbox's /proc/1/cmdline reads "kjsandbox-init" and /proc/1/environ is empty.
void hide_caller(const ChildPlan& plan) {
  wipe(plan.env_start, plan.env_end);
  if (plan.arg_start && plan.arg_end > plan.arg_start) {
    static const char kName[] = "kjsandbox-init";
    wipe(plan.arg_start, plan.arg_end);
    volatile char* p = reinterpret_cast<volatile char*>(plan.arg_start);
    for (unsigned long i = 0; i < sizeof kName && i + 1 < plan.arg_end - plan.arg_start; ++i) p[i] = kName[i];
  }
  sys::prctl5(PR_SET_NAME, reinterpret_cast<unsigned long>("kjsandbox-init"), 0, 0, 0);
}

// Released in two steps: the first byte once uid_map/gid_map are written (we may build the
// root), the second once we are in the job cgroup (we may fork the command). The parent's
// cgroup attach (a v1 migration waits for an RCU grace period) overlaps our root set-up.
// EOF means the parent gave up.
void wait_parent(const ChildPlan& plan) {
  char go = 0;
  ssize_t n;
  while ((n = sys::read(plan.fd_sync_read, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) {
    send_setup_error(plan.fd_status_write, Step::WaitForParent, -1, n < 0 ? errno : EPIPE);
    sys::exit(1);
  }
}

// Take the inside identity now: the full capability set in the new user namespace stays
// (the ids are not 0 -> non-0 transitions there), and files created on our own tmpfs mounts
// need an fsuid that is mapped.
void take_identity(const ChildPlan& plan) {
  const int status_fd = plan.fd_status_write;
  if (plan.drop_groups && sys::setgroups_empty() != 0) {
    send_setup_error(status_fd, Step::Setgroups, -1, errno);
    sys::exit(1);
  }
  if (sys::setresgid(plan.gid) != 0) {
    send_setup_error(status_fd, Step::Setgid, -1, errno);
    sys::exit(1);
  }
  if (sys::setresuid(plan.uid) != 0) {
    send_setup_error(status_fd, Step::Setuid, -1, errno);
    sys::exit(1);
  }
  // A new identity clears the parent-death signal (prctl(2)): armed again, or a launcher that dies
  // (kjudged exiting mid-job) leaves the sandbox running. A parent gone in between is the EOF of
  // the second wait_parent.
  sys::prctl(PR_SET_PDEATHSIG, SIGKILL);
}

// SIGCHLD through a signalfd, so one poll covers reaping and seccomp notifications.
int sigchld_fd(const ChildPlan& plan) {
  std::uint64_t chld = 1ull << (SIGCHLD - 1);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &chld, nullptr, sizeof chld);
  const int sigfd = static_cast<int>(syscall(SYS_signalfd4, -1, &chld, sizeof chld, SFD_CLOEXEC | SFD_NONBLOCK));
  if (sigfd < 0) {
    send_setup_error(plan.fd_status_write, Step::Reap, -1, errno);
    sys::exit(1);
  }
  return sigfd;
}

// One seccomp notification. Enforce: the call never runs; everything but us dies, then the
// command is reaped by the loop. Log: reported once per native call (`seen`: nr < 1024), let through.
void answer_notification(const ChildPlan& plan, int listener, std::uint64_t* seen, bool& killing) {
  const int status_fd = plan.fd_status_write;
  seccomp_notif req;
  {
    volatile char* z = reinterpret_cast<volatile char*>(&req);
    for (std::size_t i = 0; i < sizeof req; ++i) z[i] = 0;
  }
  if (sys::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;  // the caller died
  if (!plan.seccomp_log) {
    send_syscall(status_fd, ChildMessage::SeccompViolation, req.data.nr, req.data.arch);
    killing = true;
    sys::kill(-1, SIGKILL);
    return;
  }
  const auto nr = static_cast<std::uint32_t>(req.data.nr);
  const bool native = req.data.arch == plan.native_arch && nr < 1024;
  if (!native || !(seen[nr / 64] & (1ull << (nr % 64)))) {
    if (native) seen[nr / 64] |= 1ull << (nr % 64);
    send_syscall(status_fd, ChildMessage::SyscallSeen, req.data.nr, req.data.arch);
  }
  seccomp_notif_resp resp{};
  resp.id = req.id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  sys::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// Reaps every process of the namespace and answers seccomp notifications until the command
// exits; then reports its wait status and exits.
[[noreturn]] void supervise(const ChildPlan& plan, pid_t command, int sigfd, int listener) {
  const int status_fd = plan.fd_status_write;
  std::uint64_t seen[16] = {};  // Log mode: native calls already reported (nr < 1024)
  bool killing = false;
  for (;;) {
    int status = 0;
    pid_t pid;
    while ((pid = sys::wait4(-1, &status, __WALL | WNOHANG, nullptr)) > 0) {
      if (pid == command) {
        send_command_status(status_fd, status);
        sys::exit(0);
      }
    }
    if (pid < 0 && errno != EINTR) {
      send_setup_error(status_fd, Step::Reap, -1, errno);
      sys::exit(1);
    }
    pollfd pfds[2] = {{sigfd, POLLIN, 0}, {listener >= 0 && !killing ? listener : -1, POLLIN, 0}};
    if (syscall(SYS_ppoll, pfds, 2, nullptr, nullptr, 0) < 0) continue;
    if (pfds[0].revents) {
      signalfd_siginfo si[4];
      while (sys::read(sigfd, si, sizeof si) > 0) {
      }
    }
    if (pfds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      sys::close(listener);
      listener = -1;
      continue;
    }
    if (!(pfds[1].revents & POLLIN)) continue;
    answer_notification(plan, listener, seen, killing);
  }
}

}  // namespace

[[noreturn]] void sandbox_init_main(const ChildPlan& plan) {
  const int status_fd = plan.fd_status_write;
  sys::reset_signals();
  sys::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the parent thread dies -> so does the sandbox
  int keep[] = {plan.fd_sync_read, plan.fd_status_write, plan.fd_stdin, plan.fd_stdout_write,
                plan.fd_stderr_write};
  close_all_except(keep, static_cast<int>(sizeof keep / sizeof keep[0]));

  wait_parent(plan);
  take_identity(plan);
  if (!build_root(plan)) sys::exit(1);
  if (sys::sethostname(plan.hostname, plan.hostname_len) != 0) {
    send_setup_error(status_fd, Step::Hostname, -1, errno);
    sys::exit(1);
  }
  sys::prctl(PR_SET_DUMPABLE, 0);
  hide_caller(plan);
  const int sigfd = sigchld_fd(plan);

  wait_parent(plan);  // in the job cgroup now: everything forked from here on is accounted there
  sys::close(plan.fd_sync_read);

  int listener = harden(plan);
  if (listener == -1) sys::exit(1);

  pid_t command = plan.resume ? ::_Fork() : sys::fork();
  if (command < 0) {
    send_setup_error(status_fd, Step::ForkCommand, -1, errno);
    sys::exit(1);
  }
  if (command == 0) {
    if (plan.resume) plan.resume(plan);
    command_main(plan);
  }

  // Only the command holds the stdio ends now.
  sys::close(plan.fd_stdin);
  sys::close(plan.fd_stdout_write);
  sys::close(plan.fd_stderr_write);
  supervise(plan, command, sigfd, listener);
}

}  // namespace kjsandbox
