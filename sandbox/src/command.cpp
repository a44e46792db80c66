// Child side: the command process, forked by the sandbox's init after the root view is built.
// Applies the last limits, wires stdio, keeps only fds 0-2 and execs with exactly policy.env
// (or, in a resume zygote, goes back to the program the zygote runs: resume_zygote.cpp).
#include <cerrno>

#include "child_plan.h"
#include "sys.h"
#include "wire.h"

namespace kjsandbox {

void prepare_command(const ChildPlan& plan) {
  int status_fd = plan.fd_status_write;
  auto fail = [&](Step step, int index = -1) {
    send_setup_error(status_fd, step, index, errno);
    sys::exit(127);
  };

  sys::reset_signals();  // init blocks SIGCHLD for its signalfd
  int failed = -1;
  if (!apply_rlimits(plan, &failed)) fail(Step::Rlimit, failed);
  // Already the inside ids (init took them); repeated so the command never depends on it.
  if (sys::setresgid(plan.gid) != 0) fail(Step::Setgid);
  if (sys::setresuid(plan.uid) != 0) fail(Step::Setuid);
  if (sys::chdir(plan.cwd) != 0) fail(Step::Chdir);

  // Lift every fd we need above 2 first, so no dup3 below clobbers a source.
  int in = sys::dup_above(plan.fd_stdin, 3);
  int out = sys::dup_above(plan.fd_stdout_write, 3);
  int err = sys::dup_above(plan.fd_stderr_write, 3);
  int st = sys::dup_above(status_fd, 3);
  if (in < 0 || out < 0 || err < 0 || st < 0) fail(Step::Stdio);
  status_fd = st;
  if (sys::dup3(in, 0, 0) < 0 || sys::dup3(out, 1, 0) < 0 || sys::dup3(err, 2, 0) < 0) fail(Step::Stdio);
  // The status channel stays, close-on-exec, as fd 3; everything else goes.
  if (st != 3) {
    if (sys::dup3(st, 3, O_CLOEXEC) < 0) fail(Step::Stdio);
    status_fd = 3;
  }
  sys::close_range(4, ~0u);
}

[[noreturn]] void command_main(const ChildPlan& plan) {
  prepare_command(plan);
  sys::execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  send_setup_error(3, Step::Exec, -1, errno);
  sys::exit(127);
}

}  // namespace kjsandbox
