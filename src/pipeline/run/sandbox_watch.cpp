#include "pipeline/run/sandbox_watch.h"

namespace kj {
namespace {
thread_local SandboxWatch* current_watch = nullptr;
}

SandboxWatchScope::SandboxWatchScope(SandboxWatch* watch) : previous_(current_watch) { current_watch = watch; }
SandboxWatchScope::~SandboxWatchScope() { current_watch = previous_; }

int current_cancel_fd() { return current_watch ? current_watch->cancel_fd : -1; }

bool job_gpu_quarantined() { return current_watch && current_watch->gpu_quarantined && current_watch->gpu_quarantined(); }

void record_gpu_unavailable(const std::string& what) {
  if (!current_watch) return;
  ++current_watch->gpu_unavailable;
  current_watch->last_gpu_incident = "GPU unavailable: " + what;
}

kjsandbox::Report run_sandboxed(kjsandbox::Policy policy) {
  SandboxWatch* w = current_watch;
  if (w) policy.cancel_fd = w->cancel_fd;
  kjsandbox::Report rep = kjsandbox::run(policy);
  if (w && !policy.devices.empty()) {
    using kjsandbox::Outcome;
    ++w->gpu_runs;
    const bool killed = rep.outcome == Outcome::WallTimeout || rep.outcome == Outcome::OutputLimit ||
                        rep.outcome == Outcome::Cancelled || rep.outcome == Outcome::Signaled ||
                        rep.outcome == Outcome::MemoryLimit || rep.outcome == Outcome::SeccompViolation;
    if (killed) {
      ++w->gpu_runs_killed;
      w->last_gpu_incident = kjsandbox::to_string(rep.outcome);
    }
    if (rep.stuck) {
      ++w->gpu_runs_stuck;
      w->last_gpu_incident = "stuck after kill: " + rep.error;
    }
  }
  return rep;
}

}  // namespace kj
