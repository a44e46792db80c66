// Raw system calls for the code that runs between clone and execve.
//
// The process calling run() is multi-threaded, so the cloned child is a copy of one thread of a
// process whose other threads may have held libc locks (malloc, stdio, the thread list used by
// setxid broadcasting) at the moment of the clone. Everything the child does therefore goes
// straight to the kernel through syscall(2): no allocation, no locks, no sanitizer interceptors,
// no cached thread state (glibc's setresuid() would signal the parent's threads by stale tids).
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace kjsandbox::sys {

inline int mount(const char* source, const char* target, const char* fstype, unsigned long flags,
                 const void* data) {
  return static_cast<int>(syscall(SYS_mount, source, target, fstype, flags, data));
}
inline int umount2(const char* target, int flags) {
  return static_cast<int>(syscall(SYS_umount2, target, flags));
}
inline int pivot_root(const char* new_root, const char* put_old) {
  return static_cast<int>(syscall(SYS_pivot_root, new_root, put_old));
}
inline int mount_setattr(const char* path, unsigned int at_flags, std::uint64_t attr_set) {
  struct mount_attr attr{};
  attr.attr_set = attr_set;
  return static_cast<int>(syscall(SYS_mount_setattr, AT_FDCWD, path, at_flags, &attr, sizeof attr));
}
inline int statfs(const char* path, struct statfs* out) {
  return static_cast<int>(syscall(SYS_statfs, path, out));
}
inline int stat(const char* path, struct stat* out) {
  return static_cast<int>(syscall(SYS_newfstatat, AT_FDCWD, path, out, 0));
}
inline int mkdir(const char* path, mode_t mode) {
  return static_cast<int>(syscall(SYS_mkdirat, AT_FDCWD, path, mode));
}
inline int symlink(const char* link_text, const char* path) {
  return static_cast<int>(syscall(SYS_symlinkat, link_text, AT_FDCWD, path));
}
inline int open(const char* path, int flags, mode_t mode = 0) {
  return static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}
inline int close(int fd) { return static_cast<int>(syscall(SYS_close, fd)); }
inline int close_range(unsigned first, unsigned last) {
  return static_cast<int>(syscall(SYS_close_range, first, last, 0u));
}
inline int dup_above(int fd, int lowest) {
  return static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, lowest));
}
inline int dup3(int from, int to, int flags) {
  return static_cast<int>(syscall(SYS_dup3, from, to, flags));
}
inline ssize_t read(int fd, void* buf, std::size_t n) { return syscall(SYS_read, fd, buf, n); }
inline ssize_t write(int fd, const void* buf, std::size_t n) { return syscall(SYS_write, fd, buf, n); }
inline int chdir(const char* path) { return static_cast<int>(syscall(SYS_chdir, path)); }
inline int sethostname(const char* name, std::size_t len) {
  return static_cast<int>(syscall(SYS_sethostname, name, len));
}
inline int setgroups_empty() { return static_cast<int>(syscall(SYS_setgroups, 0, nullptr)); }
inline int setresgid(gid_t g) { return static_cast<int>(syscall(SYS_setresgid, g, g, g)); }
inline int setresuid(uid_t u) { return static_cast<int>(syscall(SYS_setresuid, u, u, u)); }
inline int prlimit(int resource, const struct rlimit* new_limit, struct rlimit* old_limit) {
  return static_cast<int>(syscall(SYS_prlimit64, 0, resource, new_limit, old_limit));
}
inline int prctl(int option, unsigned long a2) {
  return static_cast<int>(syscall(SYS_prctl, option, a2, 0ul, 0ul, 0ul));
}
// fork(2) without glibc's atfork handlers and lock juggling.
inline pid_t fork() { return static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)); }
inline pid_t wait4(pid_t pid, int* status, int options, struct rusage* ru) {
  return static_cast<pid_t>(syscall(SYS_wait4, pid, status, options, ru));
}
inline int execve(const char* path, char* const argv[], char* const envp[]) {
  return static_cast<int>(syscall(SYS_execve, path, argv, envp));
}
[[noreturn]] inline void exit(int code) {
  for (;;) syscall(SYS_exit_group, code);
}

// Every signal back to its default action and an empty mask: dispositions the daemon ignores
// (SIGPIPE) would otherwise survive execve, and its handlers must never run in the child.
inline void reset_signals() {
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    std::uint64_t mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  for (int sig = 1; sig < 65; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof(std::uint64_t));
  }
  std::uint64_t empty = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty, nullptr, sizeof empty);
}

}  // namespace kjsandbox::sys

namespace kjsandbox::sys {
inline int seccomp_filter(unsigned int flags, const void* prog) {
  return static_cast<int>(syscall(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, flags, prog));
}
inline int ioctl(int fd, unsigned long req, void* arg) { return static_cast<int>(syscall(SYS_ioctl, fd, req, arg)); }
inline int kill(pid_t pid, int sig) { return static_cast<int>(syscall(SYS_kill, pid, sig)); }
inline int prctl5(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
  return static_cast<int>(syscall(SYS_prctl, option, a2, a3, a4, a5));
}
}  // namespace kjsandbox::sys
