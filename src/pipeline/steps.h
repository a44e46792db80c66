// Sandboxed steps of the native pipeline: run a compiler, run kjudge-runner.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/config.h"
#include "kjudge/v1/runner.pb.h"
#include "pipeline/clock_reader.h"
#include "pipeline/verdict.h"

namespace kj {

StepOutcome run_compiler(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                         std::uint32_t wall_ms);

// Writes the request into job_dir, runs the runner in a run sandbox, reads its report back.
// The report is read only if the runner exited normally; a file the sandboxed side wrote is
// parsed, never trusted beyond its fields.
StepOutcome run_runner(const Config& cfg, const std::filesystem::path& job_dir, const std::filesystem::path& inputs_dir,
                       const kjudge::v1::RunnerRequest& request, std::uint32_t wall_ms, std::uint64_t output_bytes,
                       const std::string& device_profile);

// run_runner with a clock socket at job_dir/<socket_name> (request.clock_path must name it as seen
// inside the sandbox). `marks` receives what arrived, in order; the step's device_ready_mark too.
StepOutcome run_runner_clocked(const Config& cfg, const std::filesystem::path& job_dir,
                               const std::filesystem::path& inputs_dir, const kjudge::v1::RunnerRequest& request,
                               std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile,
                               const std::string& socket_name, std::vector<ClockMark>& marks);

}  // namespace kj
