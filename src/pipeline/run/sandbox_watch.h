// What the caller of judge() (kjudged) needs from every sandbox a job starts, without threading
// it through each pipeline helper: the job's cancel fd goes in, and what happened to runs that
// held a GPU comes out (the GPU health check runs a canary after a fault, timeout or kill).
// Installed per slot thread by judge() for the job's duration: a job runs on one thread.
#pragma once

#include <functional>
#include <string>

#include "kjsandbox/sandbox.h"

namespace kj {

struct SandboxWatch {
  // In: an eventfd kjudged signals when the job (or its batch) is cancelled. Every sandbox of the
  // job polls it and kills its tree at once (Outcome::Cancelled). -1: not cancellable.
  int cancel_fd = -1;
  // In: whether the GPU the job was placed on has been quarantined since (kjudged). Unset: never.
  std::function<bool()> gpu_quarantined;
  // Out: runs with device nodes bound (a GPU) that we killed (wall limit, output limit, cancel)
  // or that died by a signal, and runs whose tree did not die after SIGKILL (stuck in a driver).
  unsigned gpu_runs = 0;
  unsigned gpu_runs_killed = 0;
  unsigned gpu_runs_stuck = 0;
  unsigned gpu_unavailable = 0;  // runs whose GPU could not be set up (no context): check the GPU
  std::string last_gpu_incident;  // what happened, for the health check's log
};

class SandboxWatchScope {
 public:
  explicit SandboxWatchScope(SandboxWatch* watch);  // nullptr: nothing watched
  ~SandboxWatchScope();
  SandboxWatchScope(const SandboxWatchScope&) = delete;
  SandboxWatchScope& operator=(const SandboxWatchScope&) = delete;

 private:
  SandboxWatch* previous_;
};

// The current scope's cancel fd (-1: none), for waits outside a sandbox (a shared build's lease).
int current_cancel_fd();

// Whether the current job's GPU was quarantined after the job was placed on it (while it built).
bool job_gpu_quarantined();

// A run's GPU could not be set up before any job code was loaded (recorded into the current scope).
void record_gpu_unavailable(const std::string& what);

// kjsandbox::run with the current scope's cancel fd, recording GPU incidents into the scope.
kjsandbox::Report run_sandboxed(kjsandbox::Policy policy);

}  // namespace kj
