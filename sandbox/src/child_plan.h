// Everything the cloned child needs, precomputed by the parent as plain C strings and numbers.
// Between clone and execve the child only reads this (its copy-on-write copy) and makes system
// calls; it never allocates, formats or takes a lock.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kjsandbox/policy.h"
#include "seccomp_filter.h"

namespace kjsandbox {

// Fixed places used while building the root (inside the child's private mount namespace):
// a scratch tmpfs is mounted on kScratchDir and pivoted into, the host root is then reachable
// under /oldroot and the new root is assembled under /newroot.
inline constexpr const char* kScratchDir = "/tmp";
inline constexpr const char* kScratchNewRoot = "/tmp/newroot";
inline constexpr const char* kScratchOldRoot = "/tmp/oldroot";
inline constexpr const char* kOldRoot = "/oldroot";
inline constexpr const char* kNewRoot = "/newroot";

struct MountOp {
  // Mask: bind /dev/null (source) over a file, or a read-only empty tmpfs over a directory, when
  // the target exists. ReadOnly: the target bound onto itself read-only, when it exists.
  enum class Kind { Bind, Tmpfs, Symlink, Proc, Mask, ReadOnly };
  Kind kind = Kind::Bind;
  const char* source = nullptr;   // Bind: host path as seen under /oldroot; Symlink: link text
  const char* target = nullptr;   // absolute path under /newroot
  const char* data = nullptr;     // Tmpfs: mount options ("size=...,mode=...")
  unsigned long mount_flags = 0;  // Tmpfs/Proc: MS_* flags
  std::uint64_t attrs = 0;        // Bind: MOUNT_ATTR_* to add (recursively when `recursive`)
  bool source_is_dir = true;      // Bind: mount point is a directory (else an empty file)
  bool recursive = true;          // Bind: MS_REC
  // Parent only (never touched by the child):
  std::string description;        // for error messages, e.g. "bind /usr -> /usr (ro)"
  int depth = 0;                  // components in the inside path; ops run shallowest first
};

struct RlimitOp {
  int resource = 0;
  struct rlimit limit{};
  const char* name = "";
};

struct ChildPlan {
  std::vector<MountOp> ops;
  std::vector<const char*> seal_readonly;  // after pivot_root: mounts made read-only
  const char* root_tmpfs_options = nullptr;
  const char* scratch_tmpfs_options = nullptr;
  const char* hostname = nullptr;
  std::size_t hostname_len = 0;
  const char* cwd = nullptr;
  std::vector<char*> argv;  // nullptr-terminated
  std::vector<char*> envp;  // nullptr-terminated
  std::vector<RlimitOp> rlimits;
  uid_t uid = 0;            // inside ids
  gid_t gid = 0;
  bool drop_groups = false; // setgroups(0, NULL) (possible when the parent may allow setgroups)

  // Hardening (init, after the root is built): capabilities, securebits, no_new_privs, seccomp.
  void* empty_caps = nullptr;                    // a libcap cap_t with every set clear
  int cap_last = 40;                             // highest capability number of this kernel
  std::shared_ptr<const SeccompProgram> seccomp;  // nullptr = no filter
  bool seccomp_log = false;                      // Log mode: let calls through, report them
  std::uint32_t native_arch = 0;                 // AUDIT_ARCH of this build
  // The caller's argv/environ area (from /proc/self/stat), wiped in init so /proc/1/cmdline and
  // /proc/1/environ of the sandbox show nothing of the daemon.
  unsigned long arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;

  // File descriptors (set by the launcher just before clone).
  int fd_sync_read = -1;     // parent writes a byte once the id maps are in place, another once
                             // the child is in the job cgroup
  int fd_status_write = -1;  // ChildMessage records
  int fd_stdin = -1;
  int fd_stdout_write = -1;
  int fd_stderr_write = -1;

  // A resume zygote's command (resume_zygote.cpp): init forks it with glibc's _Fork (so the
  // thread's cached tid is right for the program that goes on) and it calls this instead of
  // command_main. nullptr: exec argv as usual.
  void (*resume)(const ChildPlan&) = nullptr;  // never returns

  // Owns every string the pointers above refer to (deque: growth never moves elements).
  std::deque<std::string> strings;
  const char* keep(std::string s) { return strings.emplace_back(std::move(s)).c_str(); }
};

// Validates the policy and fills `plan` (fds excepted). False with `error` set on a bad policy.
bool build_child_plan(const Policy& policy, ChildPlan& plan, std::string* error);

// Child side: the PID 1 of the sandbox. Never returns.
[[noreturn]] void sandbox_init_main(const ChildPlan& plan);

// Child side: capabilities, securebits, no_new_privs, then the seccomp filter (last). Returns
// the notification listener fd (or -2 without a filter), -1 after sending a SetupError.
int harden(const ChildPlan& plan);

// Child side: builds the root view and pivots into it; on failure sends a SetupError and
// returns false.
bool build_root(const ChildPlan& plan);

// Child side: the command process, forked by init; applies the last limits and execs.
[[noreturn]] void command_main(const ChildPlan& plan);
// Everything command_main does before the exec: rlimits, ids, cwd, stdio on fds 0-2, the status
// channel as fd 3 (close-on-exec), no other fd. Sends a SetupError and exits on failure.
void prepare_command(const ChildPlan& plan);

// Parent side: rlimit ops from the policy. Child side: apply them (false + index on failure).
std::vector<RlimitOp> plan_rlimits(const Rlimits& limits);
bool apply_rlimits(const ChildPlan& plan, int* failed_index);

}  // namespace kjsandbox
