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
};

struct Report {
  Outcome outcome = Outcome::SetupFailed;
  int exit_code = -1;         // valid for Exited
  int signal = 0;             // valid for Signaled
  double wall_seconds = 0;
  double cpu_seconds = 0;     // user + system of the whole tree that was reaped
  // ru_maxrss of the reaped tree. Caveat: a fork copies the caller's page tables and execve
  // folds the old mm's RSS into ru_maxrss, so this is at least the calling process's RSS at
  // run() time; cgroup memory accounting (next issue) replaces it.
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

  bool ok() const { return outcome == Outcome::Exited && exit_code == 0; }
};

const char* to_string(Outcome o);

}  // namespace kjsandbox
