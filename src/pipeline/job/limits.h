// A job's limits and timing plan, resolved once from the job and the node's config: a field the
// job leaves 0 takes the node's default for its format ([limits] for native jobs, [kernelbench]
// for KernelBench-format ones), an output limit never exceeds the node's. The pipelines and the
// prebuild read these, never the job's raw fields.
#pragma once

#include <cstdint>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"

namespace kj {

struct JobLimits {
  std::uint32_t compile_ms = 0;
  std::uint32_t run_ms = 0;
  std::uint64_t output_bytes = 0;
};

struct TrialPlan {
  unsigned warmup = 0;
  unsigned min_trials = 0;
  unsigned max_trials = 0;  // 0: not timed
};

JobLimits job_limits(const kjudge::v1::Job& job, const Config& cfg);
TrialPlan trial_plan(const kjudge::v1::Job& job);

}  // namespace kj
