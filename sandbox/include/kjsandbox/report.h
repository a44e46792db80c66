// How a sandboxed run ended, as measured from outside the child.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kjsandbox {

enum class Outcome {
  Exited,          // the command exited by itself (see exit_code)
  Signaled,        // killed by a signal it did not get from us (see signal)
  WallTimeout,     // we killed it: wall limit
  OutputLimit,     // we killed it: stdout/stderr over budget
  SetupFailed,     // the sandbox could not be built (our fault, or a bad policy): see error
  SeccompViolation,  // we killed it: a system call outside the allow-list (see seccomp_syscall)
  MemoryLimit,       // the cgroup's memory limit was hit and the OOM killer fired (oom_killed)
  Cancelled,         // we killed it: Policy::cancel_fd became readable (or was before the start)
};
// Precedence when several apply: SetupFailed is only reported when nothing else explains the
// end; MemoryLimit first (an OOM kill also looks like a signal); then our own kill, whichever
// came first (WallTimeout, OutputLimit or Cancelled: we kill once); then SetupFailed,
// SeccompViolation, Signaled, Exited.

struct Report {
  Outcome outcome = Outcome::SetupFailed;
  int exit_code = -1;         // valid for Exited
  int signal = 0;             // valid for Signaled
  double wall_seconds = 0;
  double wall_extension_seconds = 0;  // granted by Policy::wall_extension beyond the wall limit
  double cpu_seconds = 0;     // user + system of the whole tree that was reaped
  // ru_maxrss of the reaped tree. Caveat: init is a fork of the process that cloned it and
  // execve folds the old mm's RSS into ru_maxrss, so this is at least that process's RSS (the
  // zygote's few MiB, or the caller's when it launched in-process); use memory_peak_bytes.
  std::uint64_t peak_rss_bytes = 0;
  std::string stdout_data;    // at most output_limit_bytes
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string error;          // SetupFailed: which step and errno, in words

  // From the job cgroup (when one was used: cgroup_used).
  bool cgroup_used = false;
  std::uint64_t memory_peak_bytes = 0;  // memory.peak (v2) / memory.max_usage_in_bytes (v1)
  bool oom_killed = false;              // the OOM killer fired in the job cgroup
  std::string cgroup_version;           // "v2", "v1" or "" (none)

  // SeccompViolation: the offending call (number, name, ABI: "x86_64", "x86" for int 0x80...).
  int seccomp_syscall = -1;
  std::string seccomp_syscall_name;
  std::string seccomp_arch;
  // Seccomp::Mode::Log: syscalls outside the allow-list the tree made (names, sorted, unique).
  std::vector<std::string> seccomp_log;

  // The tree had not exited Policy::kill_grace after we sent SIGKILL (a process stuck in the
  // kernel, e.g. in a GPU driver): run() returned without reaping it; a background thread waits
  // for it and then removes its cgroup. outcome says why we killed it; error says it is stuck.
  // wall/cpu/memory figures are up to that moment. The caller should quarantine the device.
  bool stuck = false;

  bool ok() const { return outcome == Outcome::Exited && exit_code == 0; }
};

const char* to_string(Outcome o);

}  // namespace kjsandbox
