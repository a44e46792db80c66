// Names for outcomes and setup steps.
#include "kjsandbox/report.h"
#include "wire.h"

namespace kjsandbox {

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::Exited: return "exited";
    case Outcome::Signaled: return "signaled";
    case Outcome::WallTimeout: return "wall_timeout";
    case Outcome::OutputLimit: return "output_limit";
    case Outcome::SetupFailed: return "setup_failed";
    case Outcome::SeccompViolation: return "seccomp_violation";
    case Outcome::MemoryLimit: return "memory_limit";
    case Outcome::Cancelled: return "cancelled";
  }
  return "unknown";
}

const char* step_name(Step step) {
  switch (step) {
    case Step::WaitForParent: return "wait for the parent";
    case Step::Setgroups: return "drop supplementary groups";
    case Step::Setgid: return "setresgid";
    case Step::Setuid: return "setresuid";
    case Step::MountPrivate: return "make mounts private";
    case Step::ScratchTmpfs: return "mount scratch tmpfs";
    case Step::ScratchDirs: return "create scratch directories";
    case Step::PivotScratch: return "pivot_root into scratch";
    case Step::RootTmpfs: return "mount root tmpfs";
    case Step::MountPoint: return "create mount point";
    case Step::Bind: return "bind mount";
    case Step::BindFlags: return "set bind mount flags";
    case Step::Tmpfs: return "mount tmpfs";
    case Step::Symlink: return "create symlink";
    case Step::Proc: return "mount proc";
    case Step::DetachHost: return "detach host root";
    case Step::PivotRoot: return "pivot_root into new root";
    case Step::SealRoot: return "make read-only";
    case Step::Hostname: return "sethostname";
    case Step::ForkCommand: return "fork command";
    case Step::Rlimit: return "setrlimit";
    case Step::Chdir: return "chdir";
    case Step::Stdio: return "set up stdio";
    case Step::Exec: return "execve";
    case Step::Reap: return "wait for command";
    case Step::Securebits: return "lock securebits";
    case Step::CapBound: return "drop bounding capabilities";
    case Step::CapAmbient: return "clear ambient capabilities";
    case Step::CapSet: return "drop capabilities";
    case Step::NoNewPrivs: return "set no_new_privs";
    case Step::SeccompLoad: return "load seccomp filter";
    case Step::SeccompNotify: return "seccomp notification";
  }
  return "unknown step";
}

}  // namespace kjsandbox
