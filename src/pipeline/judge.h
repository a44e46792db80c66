// The pipeline's front door: one Job in, one Result out. Used by kjudged's workers and by
// `kjudge eval` (local mode) alike, so both give the same verdict for the same job.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/build_store.h"
#include "pipeline/sandbox_watch.h"
#include "pipeline/validate.h"

#include <google/protobuf/timestamp.pb.h>

namespace kj {

// Wall-clock now with nanoseconds (protobuf 3.21's TimeUtil::GetCurrentTime() has whole seconds here).
google::protobuf::Timestamp now_timestamp();

struct JudgeContext {
  const Config& config;
  std::string worker;  // "<node>/<slot>" for the Result
  // kjudged: the job's cancel fd in, GPU incidents of its sandboxes out (pipeline/sandbox_watch.h).
  SandboxWatch* watch = nullptr;
  // kjudged with [build] shared: the cluster's shared KernelBench builds (pipeline/build_store.h).
  BuildStore* builds = nullptr;
  // `kjudge eval`: judge on the device in turns with other evals of this node (device_turn_file).
  bool device_turns = false;
  // kjudged: the job's delivery (2 and up: a retry, which a KernelBench job runs with the
  // device's memory to itself, pipeline/kernelbench_pipeline.cpp).
  unsigned delivery = 1;
};

// Never throws: internal failures become INFRA_ERROR results.
kjudge::v1::Result judge(const kjudge::v1::Job& job, const JudgeContext& ctx);

// The Result for a job that could not be decoded or validated.
kjudge::v1::Result invalid_job_result(const std::string& job_id, const std::string& tenant, const std::string& message,
                                      const std::string& worker);

}  // namespace kj
