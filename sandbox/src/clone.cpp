// clone3 into the sandbox's namespace set.
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "launcher.h"

namespace kjsandbox {
namespace {

struct CloneArgs {  // struct clone_args, CLONE_ARGS_SIZE_VER2
  std::uint64_t flags;
  std::uint64_t pidfd;
  std::uint64_t child_tid;
  std::uint64_t parent_tid;
  std::uint64_t exit_signal;
  std::uint64_t stack;
  std::uint64_t stack_size;
  std::uint64_t tls;
  std::uint64_t set_tid;
  std::uint64_t set_tid_size;
  std::uint64_t cgroup;
};

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

}  // namespace

unsigned long long sandbox_clone_flags(bool share_network) {
  unsigned long long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                             CLONE_NEWUTS | CLONE_NEWCGROUP;
  if (!share_network) flags |= CLONE_NEWNET;
  return flags;
}

pid_t clone_sandbox(bool share_network, int* pidfd, int cgroup_fd, bool clone_parent) {
  CloneArgs args{};
  args.flags = sandbox_clone_flags(share_network) | CLONE_PIDFD | (clone_parent ? CLONE_PARENT : 0);
  args.pidfd = reinterpret_cast<std::uintptr_t>(pidfd);
  // With CLONE_PARENT clone3 wants exit_signal 0: the child gets the caller's own (SIGCHLD).
  args.exit_signal = clone_parent ? 0 : SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  }
  return static_cast<pid_t>(syscall(SYS_clone3, &args, cgroup_fd >= 0 ? sizeof args : 64));
}

}  // namespace kjsandbox
