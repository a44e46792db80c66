// Entry point of libkjsandbox: a Policy in, a Report out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kjsandbox/policy.h"
#include "kjsandbox/report.h"

namespace kjsandbox {

// Runs policy.argv in a fresh user+mount+pid+net+ipc+uts namespace set and blocks until the
// whole process tree is gone (or, after a kill, until Policy::kill_grace has passed: stuck). Thread-safe: may be called from several threads of one process
// at once (the child never allocates between clone and exec). Never throws for child failures;
// throws std::system_error only if the host cannot create the pipes/process at all.
Report run(const Policy& policy);

// Trees returned as Report::stuck that have not exited yet (a background thread per tree waits
// for each and then removes its cgroup).
int stuck_trees_pending();

// Runs reuse some kernel objects instead of making and destroying them each time: empty network
// namespaces (when the caller may create them) and, on cgroup v1, job cgroups without a CPU
// quota that a run left empty and nearly uncharged (its memory peak is then reported net of
// that residue). trim_pools() drops the idle ones (e.g. before checking that nothing of this
// process is left behind); returns how many.
int trim_pools();

// Where launches happen. By default run() clones sandboxes from a small helper process (the
// "zygote": this program re-executed from /proc/self/exe, started in the background on the first
// run()) rather than from the calling process, whose whole memory a clone would copy each time.
// Until it is ready, or if it fails, launches happen in-process as before. The environment
// variable KJSANDBOX_NO_ZYGOTE=1 or set_zygote_enabled(false) keeps them all in-process (e.g.
// a one-shot CLI). The program must not make KJSANDBOX_ZYGOTE_FD part of its own environment.
void set_zygote_enabled(bool enabled);
// A resume zygote: a long-lived program that has already done the expensive part of starting
// (e.g. a Python interpreter that imported its libraries) and speaks the zygote protocol through
// libkjsandbox_resume.so (sandbox/src/resume_zygote.cpp). A run whose Policy::resume_in names it
// is cloned by it like any sandbox (same namespaces, root, ids, limits, seccomp, cgroup), but
// its command goes back into that program with policy.argv and policy.env instead of exec'ing.
// It starts now, in the background (`start_timeout` to say hello); until it is up, or if it
// dies (it is restarted), those runs exec argv as usual. `env` is its complete environment.
void register_resume_zygote(const std::string& name, std::vector<std::string> argv,
                            std::map<std::string, std::string> env,
                            std::chrono::milliseconds start_timeout = std::chrono::seconds(120));
// Waits up to `timeout` for the resume zygote `name` to be ready; false when it is not (not
// registered, failed to start, or still starting). A one-shot caller (`kjudge eval`) waits so that
// every run it makes is resumed, instead of racing the zygote's start-up with exec'd runs.
bool wait_resume_zygote(const std::string& name, std::chrono::milliseconds timeout);

struct LaunchStats {
  std::uint64_t via_zygote = 0;  // runs cloned by the zygote (a resume zygote's included)
  std::uint64_t resumed = 0;     // runs a resume zygote resumed in-process
  std::uint64_t in_process = 0;  // runs cloned by the calling thread
  bool zygote_ready = false;
  int zygote_pid = 0;  // 0: none running
};
LaunchStats launch_stats();

// True when this host lets us create the namespaces run() needs (a cheap probe for tests/doctor).
bool namespaces_available(std::string* why = nullptr);

}  // namespace kjsandbox
