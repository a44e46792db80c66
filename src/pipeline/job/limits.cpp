#include "pipeline/job/limits.h"

#include <algorithm>

namespace kj {
namespace v1 = kjudge::v1;

namespace {
constexpr unsigned kDefaultWarmup = 3, kDefaultMaxTrials = 100, kDefaultMinTrials = 10;

std::uint32_t or_default(std::uint32_t asked, std::uint32_t node_default) { return asked ? asked : node_default; }
}  // namespace

JobLimits job_limits(const v1::Job& job, const Config& cfg) {
  const bool kernelbench = job.task_case() == v1::Job::kKernelbench;
  const auto& l = job.limits();
  JobLimits out;
  out.compile_ms = or_default(l.compile_wall_ms(), kernelbench ? cfg.kernelbench.compile_wall_ms : cfg.limits.compile_wall_ms);
  out.run_ms = or_default(l.run_wall_ms(), kernelbench ? cfg.kernelbench.run_wall_ms : cfg.limits.run_wall_ms);
  out.output_bytes = l.output_bytes() ? std::min(l.output_bytes(), cfg.limits.output_bytes) : cfg.limits.output_bytes;
  return out;
}

TrialPlan trial_plan(const v1::Job& job) {
  const auto& t = job.options().timing();
  TrialPlan p;
  p.warmup = t.warmup() ? t.warmup() : kDefaultWarmup;
  p.max_trials = t.skip() ? 0 : (t.max_trials() ? t.max_trials() : kDefaultMaxTrials);
  p.min_trials = std::min(p.max_trials, t.min_trials() ? t.min_trials() : kDefaultMinTrials);
  return p;
}

}  // namespace kj
