// The status channel from the sandbox's PID 1 (and the command child before execve) to the
// parent: fixed-size records, each written with one write(2) (< PIPE_BUF, so atomic).
#pragma once

#include <cerrno>
#include <cstdint>

#include "sys.h"

namespace kjsandbox {

// Which setup step failed. The parent turns (step, index, errno) into Report::error.
enum class Step : std::int32_t {
  WaitForParent = 1,
  Setgroups,
  Setgid,
  Setuid,
  MountPrivate,
  ScratchTmpfs,
  ScratchDirs,
  PivotScratch,
  RootTmpfs,
  MountPoint,      // index = mount op
  Bind,            // index = mount op
  BindFlags,       // index = mount op
  Tmpfs,           // index = mount op
  Symlink,         // index = mount op
  Proc,            // index = mount op
  DetachHost,
  PivotRoot,
  SealRoot,        // index = seal entry
  Hostname,
  ForkCommand,
  Rlimit,          // index = rlimit op
  Chdir,
  Stdio,
  Exec,
  Reap,
  Securebits,
  CapBound,
  CapAmbient,
  CapSet,
  NoNewPrivs,
  SeccompLoad,
  SeccompNotify,
};

struct ChildMessage {
  enum Kind : std::int32_t { SetupError = 1, CommandStatus = 2, SeccompViolation = 3, SyscallSeen = 4 };
  std::int32_t kind = 0;
  std::int32_t step = 0;          // SetupError: a Step
  std::int32_t index = -1;        // SetupError: which op of the step, -1 if none
  std::int32_t err = 0;           // SetupError: errno
  std::int32_t wait_status = 0;   // CommandStatus: the command's wait(2) status
  std::int32_t nr = 0;            // SeccompViolation/SyscallSeen: the call's number
  std::uint32_t arch = 0;         // ... and its AUDIT_ARCH_*
};

// Child side (async-signal-safe).
inline void send_setup_error(int fd, Step step, int index, int err) {
  ChildMessage m;
  m.kind = ChildMessage::SetupError;
  m.step = static_cast<std::int32_t>(step);
  m.index = index;
  m.err = err;
  while (sys::write(fd, &m, sizeof m) < 0 && errno == EINTR) {
  }
}

inline void send_command_status(int fd, int wait_status) {
  ChildMessage m;
  m.kind = ChildMessage::CommandStatus;
  m.wait_status = wait_status;
  while (sys::write(fd, &m, sizeof m) < 0 && errno == EINTR) {
  }
}

inline void send_syscall(int fd, ChildMessage::Kind kind, int nr, std::uint32_t arch) {
  ChildMessage m;
  m.kind = kind;
  m.nr = nr;
  m.arch = arch;
  while (sys::write(fd, &m, sizeof m) < 0 && errno == EINTR) {
  }
}

const char* step_name(Step step);

}  // namespace kjsandbox
