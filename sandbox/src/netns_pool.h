// Parent side: a pool of empty network namespaces, so a launch does not create one (and a
// kworker tear it down) each time: together ~0.8 ms of CPU per launch, the largest single cost.
//
// A pooled namespace is created by the (privileged) caller, so it is owned by the host's user
// namespace: the sandbox, in its own user namespace, holds no capability in it at all (a fresh
// CLONE_NEWNET namespace would be owned by the sandbox's user namespace). It is used by one run
// at a time and goes back to the pool only once that run's whole tree is gone and it holds no
// socket (AF_UNIX is the only family seccomp allows; an abstract name kept alive by an
// in-flight fd would otherwise be visible to the next run). Without the privilege to create or
// join one (an unprivileged caller), acquire() returns nothing and the launch uses CLONE_NEWNET.
#pragma once

#include <optional>

namespace kjsandbox {

struct PooledNetns {
  int ns_fd = -1;    // /proc/thread-self/ns/net of the namespace
  int unix_fd = -1;  // its /proc/net/unix (opened inside it): a socket listed there = not reusable
};

// A namespace for one run, or nullopt: use CLONE_NEWNET.
std::optional<PooledNetns> netns_acquire();
// After the run's tree is gone: back to the pool if it holds no socket, else closed.
void netns_release(const PooledNetns& ns);
// Closes it (a tree that may still be alive: never reused).
void netns_discard(const PooledNetns& ns);
// Closes the idle ones; returns how many.
int netns_trim();

// The calling thread's own network namespace for the duration of a clone: enter() moves the
// thread into `ns_fd`; leave() moves it back (aborts if it cannot: a daemon thread left in a
// sandbox's namespace would be worse than a crash).
bool netns_enter(int ns_fd);
void netns_leave();

}  // namespace kjsandbox
