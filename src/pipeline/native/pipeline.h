// Native jobs (C++, OpenCL C; CUDA next): build both sides, generate inputs, run the reference
// and the candidate in separate sandboxes, compare in the daemon, time both.
#pragma once

#include <string>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/run/judge_context.h"

namespace kj {

// Fills status, message, stages, compile, correctness, performance, resources, system.
// `detail` receives runtime output worth showing in feedback (stderr tail).
void judge_native(const kjudge::v1::Job& job, const JudgeContext& ctx, kjudge::v1::Result& result, std::string& detail);

}  // namespace kj
