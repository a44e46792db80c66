// The pipeline's front door: one Job in, one Result out. Used by kjudged's workers and by
// `kjudge eval` (local mode) alike, so both give the same verdict for the same job.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/run/judge_context.h"
#include "pipeline/job/validate.h"

#include <google/protobuf/timestamp.pb.h>

namespace kj {

// Wall-clock now with nanoseconds (protobuf 3.21's TimeUtil::GetCurrentTime() has whole seconds here).
google::protobuf::Timestamp now_timestamp();

// Never throws: internal failures become INFRA_ERROR results.
kjudge::v1::Result judge(const kjudge::v1::Job& job, const JudgeContext& ctx);

// The Result for a job that could not be decoded or validated.
kjudge::v1::Result invalid_job_result(const std::string& job_id, const std::string& tenant, const std::string& message,
                                      const std::string& worker);

}  // namespace kj
