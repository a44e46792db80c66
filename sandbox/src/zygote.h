// Launching sandboxes from a small helper process, the "zygote", instead of from the caller.
//
// clone3 without CLONE_VM copies the caller's whole address space into the sandbox's init (page
// tables, then copy-on-write faults in every thread of the caller and the teardown when init
// exits): in kjudged that was the largest cost of a launch (~1.3 ms of CPU of ~5). The zygote is
// this same program re-executed from /proc/self/exe (a constructor in zygote.cpp takes over
// before main when KJSANDBOX_ZYGOTE_FD is set): single-threaded, a few MiB, holding nothing of
// the caller's data. run() sends it the policy and the child's fds over a SOCK_SEQPACKET
// socket; it builds the ChildPlan and clones init with CLONE_PARENT, so init is the caller's
// child as before (wait4, rusage, PDEATHSIG of a caller thread that lives as long as the
// process) and everything after the clone is unchanged. The init code is the same; its memory
// is a copy of the zygote's instead of the caller's.
//
// The zygote is the static executable embedded in the library (zygote_image.cpp: ~15 mappings,
// a few hundred KiB of memory of its own) when the build could make one, else the calling
// program re-executed. It starts in the background at the first run(); until it is ready, or if
// it cannot start or dies, run() clones in-process as before. KJSANDBOX_NO_ZYGOTE=1 in the environment
// or set_zygote_enabled(false) keeps every launch in-process.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "kjsandbox/policy.h"

namespace kjsandbox {

struct ChildPlan;

struct ZygoteRequest {
  const Policy* policy = nullptr;
  // The child's ends, as in ChildPlan.
  int fd_sync_read = -1, fd_status_write = -1, fd_stdin = -1, fd_stdout_write = -1, fd_stderr_write = -1;
  int netns_fd = -1;       // a pooled namespace to clone into; -1: per new_netns
  bool new_netns = true;   // CLONE_NEWNET (no pooled namespace, network not shared)
  int cgroup_fd = -1;      // CLONE_INTO_CGROUP (v2)
};

struct ZygoteReply {
  // Lost: the request went out but no valid reply came back (the zygote died or misbehaved): it
  // may have cloned a child that holds the request's fds, so the caller must not reuse them.
  enum Kind { Unavailable, Launched, PlanError, CloneError, Lost } kind = Unavailable;
  pid_t pid = -1;
  int pidfd = -1;
  bool need_attach = false;  // cloned without CLONE_INTO_CGROUP: attach by pid
  int clone_errno = 0;
  std::string error;         // PlanError: the policy's problem, as build_child_plan says it
};

// Unavailable: not enabled, not ready yet, or it failed (the caller launches in-process; the
// fds are untouched either way).
ZygoteReply zygote_launch(const ZygoteRequest& request);
bool zygote_ready(int* pid = nullptr);

// In a process started as the zygote: serves until the caller goes, never returns. Elsewhere
// (and in a resume zygote's program) returns at once. (A constructor calls it before main; the
// static zygote's main calls it too.)
void zygote_serve_from_environment();

// The zygote's end of the socket and the process it serves, from the environment the client
// started it with; false when this process was not started as a zygote.
bool zygote_endpoint_from_environment(int* sock, pid_t* parent);

// The server loop. `resume`: what a resumed command runs instead of exec (a resume zygote,
// resume_zygote.cpp); nullptr refuses resume requests.
using ResumeFn = void (*)(const ChildPlan&);
[[noreturn]] void zygote_serve(int sock, pid_t parent, ResumeFn resume);

// Launches a resume zygote served (LaunchStats::resumed).
std::uint64_t resumed_launches();

// The embedded static zygote executable, or {nullptr, 0} (zygote_image.cpp).
std::pair<const char*, std::size_t> zygote_image();

}  // namespace kjsandbox
