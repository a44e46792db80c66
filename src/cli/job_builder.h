// Builds a Job from a task file (a NativeTask in protobuf JSON) plus source files and flags.
// Shared by `kjudge submit` and `kjudge eval`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kjudge/v1/job.pb.h"

namespace kj::cli {

struct JobSpec {
  std::optional<std::filesystem::path> job_json;   // a complete Job in protobuf JSON
  std::optional<std::filesystem::path> task_json;  // a NativeTask in protobuf JSON
  std::optional<std::filesystem::path> candidate;
  std::optional<std::filesystem::path> reference;  // default: reference_source.name next to the task
  std::string job_id;                              // default: random
  std::optional<std::string> tenant;              // default: the job file's, else default_tenant
  std::string default_tenant = "dev";             // through a gateway: "" (the token's tenant)
  std::string batch_id;
  std::optional<int> priority;                     // > 0 high lane, < 0 low lane (queue aging keeps low moving)
  std::uint32_t compile_wall_ms = 0, run_wall_ms = 0, trials = 0, sets = 0;
  std::string reward_policy;
  // KernelBench-format task: reference module + ModelNew module (or a raw completion).
  std::optional<std::filesystem::path> kb_reference, kb_candidate, kb_completion;
  std::string backend;                             // cuda (default) | triton | cpu
  std::string precision;                           // fp32 (default) | fp16 | bf16
  bool compat = false;                             // KernelBench compatibility mode
  std::vector<std::string> sizes;                  // NAME=VALUE module-constant overrides
  bool trivial = false;                            // a TrivialTask (queue tests, benchmarks)
  std::vector<std::string> trivial_argv;           // default /bin/true
  std::vector<std::string> meta;                   // KEY=VALUE pairs for client_meta (echoed in the result)
};

// Throws std::runtime_error with a message naming the file or flag at fault.
kjudge::v1::Job build_job(const JobSpec& spec);

std::string read_text(const std::filesystem::path& p);
std::string random_job_id();

}  // namespace kj::cli
