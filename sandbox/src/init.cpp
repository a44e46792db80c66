// Child side: the sandbox's PID 1. It is the process clone3 created, so it starts as a copy of
// one thread of the (multi-threaded) caller: only system calls until it dies (see sys.h).
//
// It keeps only its own fds, waits until the parent has written the id maps, takes the inside
// identity, builds the root view, forks the command, then reaps every process of the namespace.
// When the command exits it reports the command's wait status and exits itself; the kernel then
// kills whatever is left in the pid namespace. Setup failures go out as (step, errno).
#include <sys/wait.h>

#include <cerrno>

#include "child_plan.h"
#include "sys.h"
#include "wire.h"

namespace kjsandbox {
namespace {

// Closes every fd except the given ones (the caller's other threads' fds included).
void close_all_except(int* keep, int n) {
  for (int i = 1; i < n; ++i)  // insertion sort, n is tiny
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  unsigned next = 0;
  for (int i = 0; i < n; ++i) {
    if (keep[i] < 0) continue;
    unsigned fd = static_cast<unsigned>(keep[i]);
    if (fd > next) sys::close_range(next, fd - 1);
    next = fd + 1;
  }
  sys::close_range(next, ~0u);
}

}  // namespace

[[noreturn]] void sandbox_init_main(const ChildPlan& plan) {
  const int status_fd = plan.fd_status_write;
  sys::reset_signals();
  sys::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the parent thread dies -> so does the sandbox
  int keep[] = {plan.fd_sync_read, plan.fd_status_write, plan.fd_stdin, plan.fd_stdout_write,
                plan.fd_stderr_write};
  close_all_except(keep, static_cast<int>(sizeof keep / sizeof keep[0]));

  // Released once uid_map/gid_map are written; EOF means the parent gave up.
  char go = 0;
  ssize_t n;
  while ((n = sys::read(plan.fd_sync_read, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) {
    send_setup_error(status_fd, Step::WaitForParent, -1, n < 0 ? errno : EPIPE);
    sys::exit(1);
  }
  sys::close(plan.fd_sync_read);

  // Take the inside identity now: the full capability set in the new user namespace stays
  // (the ids are not 0 -> non-0 transitions there), and files created on our own tmpfs mounts
  // need an fsuid that is mapped.
  if (plan.drop_groups && sys::setgroups_empty() != 0) {
    send_setup_error(status_fd, Step::Setgroups, -1, errno);
    sys::exit(1);
  }
  if (sys::setresgid(plan.gid) != 0) {
    send_setup_error(status_fd, Step::Setgid, -1, errno);
    sys::exit(1);
  }
  if (sys::setresuid(plan.uid) != 0) {
    send_setup_error(status_fd, Step::Setuid, -1, errno);
    sys::exit(1);
  }

  if (!build_root(plan)) sys::exit(1);
  if (sys::sethostname(plan.hostname, plan.hostname_len) != 0) {
    send_setup_error(status_fd, Step::Hostname, -1, errno);
    sys::exit(1);
  }
  sys::prctl(PR_SET_DUMPABLE, 0);

  pid_t command = sys::fork();
  if (command < 0) {
    send_setup_error(status_fd, Step::ForkCommand, -1, errno);
    sys::exit(1);
  }
  if (command == 0) command_main(plan);

  // Only the command holds the stdio ends now.
  sys::close(plan.fd_stdin);
  sys::close(plan.fd_stdout_write);
  sys::close(plan.fd_stderr_write);

  for (;;) {
    int status = 0;
    pid_t pid = sys::wait4(-1, &status, __WALL, nullptr);
    if (pid < 0) {
      if (errno == EINTR) continue;
      send_setup_error(status_fd, Step::Reap, -1, errno);
      sys::exit(1);
    }
    if (pid == command) {
      send_command_status(status_fd, status);
      sys::exit(0);
    }
  }
}

}  // namespace kjsandbox
