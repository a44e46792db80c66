#pragma once

#include <string>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/run/judge_context.h"

namespace kj {

// KernelBench-format jobs (design §5 for PyTorch tasks): static policy + build (compile
// sandbox), oracle (trusted process: reference, inputs, expected outputs, baseline timing),
// candidate (untrusted: outputs, legality trace, timed loop), then the comparison and every
// verdict in the daemon. `detail` receives text worth showing in feedback (traceback, compile log).
void judge_kernelbench(const kjudge::v1::Job& job, const JudgeContext& ctx, kjudge::v1::Result& result,
                       std::string& detail);

}  // namespace kj
