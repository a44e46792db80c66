// clone3 of the sandbox's init (shared by run() and the namespace probe).
#pragma once

#include <sys/types.h>

namespace kjsandbox {

// Namespace flags of a sandbox (CLONE_NEWNET unless share_network).
unsigned long long sandbox_clone_flags(bool share_network);

// Fork-like clone3 (no new stack) into fresh namespaces, with CLONE_PIDFD and exit signal
// SIGCHLD. Returns 0 in the child, the pid in the parent (pidfd in *pidfd), -1 with errno.
// With cgroup_fd >= 0 the child starts in that (v2) cgroup (CLONE_INTO_CGROUP). share_network:
// no CLONE_NEWNET (the child stays in the caller's current network namespace). clone_parent:
// CLONE_PARENT, the child becomes a sibling of the caller (the zygote's launches).
pid_t clone_sandbox(bool share_network, int* pidfd, int cgroup_fd = -1, bool clone_parent = false);

}  // namespace kjsandbox
