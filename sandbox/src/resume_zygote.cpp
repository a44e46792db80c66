// libkjsandbox_resume.so: the server side of a resume zygote (sandbox.h), for a program that
// loads it, e.g. a Python interpreter through ctypes.PyDLL, after its expensive start-up.
//
// kjsbx_resume_serve() runs the zygote loop and returns only in a resumed command: a process
// cloned into the sandbox like any other (init built its root and hardened it: user, mount, pid,
// net, ipc, uts and cgroup namespaces, ids, no_new_privs, seccomp, the job cgroup), then forked by
// init and brought back here with setjmp/longjmp instead of exec'ing argv. Its argv and
// environment are then read with kjsbx_resumed_count/item; it must never return to the loop.
//
// The zygote must be single-threaded: a clone copies only the calling thread, and a lock another
// thread held (malloc's, the interpreter's) would stay held forever in the command.
#include <setjmp.h>

#include <string>
#include <vector>

#include "child_plan.h"
#include "sys.h"
#include "zygote.h"

namespace kjsandbox {
namespace {

jmp_buf g_serve_frame;  // kjsbx_resume_serve's frame: the command longjmps back into it
std::vector<std::string> g_args, g_env;

// The command, forked by init with glibc's _Fork: the program's heap and libc are usable again.
[[noreturn]] void resume_command(const ChildPlan& plan) {
  prepare_command(plan);
  sys::close(3);  // the status channel: exec would have closed it; the resumed code must not write to it
  for (char* const* a = plan.argv.data(); *a; ++a) g_args.emplace_back(*a);
  for (char* const* e = plan.envp.data(); *e; ++e) g_env.emplace_back(*e);
  longjmp(g_serve_frame, 1);
}

const std::vector<std::string>& resumed(int which) { return which == 0 ? g_args : g_env; }

}  // namespace
}  // namespace kjsandbox

extern "C" {

// Serves the client that started this process; returns 1 in a resumed command, -1 when this
// process was not started as a zygote. The zygote itself never returns (it exits when the client goes).
__attribute__((visibility("default"))) int kjsbx_resume_serve() {
  int sock;
  pid_t parent;
  if (!kjsandbox::zygote_endpoint_from_environment(&sock, &parent)) return -1;
  if (setjmp(kjsandbox::g_serve_frame) != 0) return 1;
  kjsandbox::zygote_serve(sock, parent, kjsandbox::resume_command);
}

// which: 0 = argv, 1 = environment ("KEY=value")
__attribute__((visibility("default"))) int kjsbx_resumed_count(int which) {
  return static_cast<int>(kjsandbox::resumed(which).size());
}

__attribute__((visibility("default"))) const char* kjsbx_resumed_item(int which, int i) {
  const auto& v = kjsandbox::resumed(which);
  return i >= 0 && static_cast<std::size_t>(i) < v.size() ? v[static_cast<std::size_t>(i)].c_str() : nullptr;
}

}  // extern "C"
