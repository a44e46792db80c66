// The pipeline's front door: one Job in, one Result out. Used by kjudged's workers and by
// `kjudge eval` (local mode) alike, so both give the same verdict for the same job.
#pragma once

#include <string>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"

namespace kj {

struct JudgeContext {
  const Config& config;
  std::string worker;  // "<node>/<slot>" for the Result
};

// Never throws: internal failures become INFRA_ERROR results.
kjudge::v1::Result judge(const kjudge::v1::Job& job, const JudgeContext& ctx);

// The Result for a job that could not be decoded or validated.
kjudge::v1::Result invalid_job_result(const std::string& job_id, const std::string& tenant, const std::string& message,
                                      const std::string& worker);

}  // namespace kj
