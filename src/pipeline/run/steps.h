// Sandboxed steps of the native pipeline: run a compiler, run kjudge-runner.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "kjudge/v1/runner.pb.h"
#include "kjsandbox/report.h"

namespace kj {

// A sandboxed step as seen from outside: the sandbox's report and, when the step ran
// kjudge-runner and it left a report, that report. host_fault: after a failed step, what the
// judge found wrong with the host (pipeline/run/host_fault.h); it outranks every candidate verdict
// (verdict/verdict.cpp decides from it).
// device_ready_mark: the role's device-ready byte (runner/clock_marks.h) reached the daemon's clock
// socket (set by run_runner_clocked, pipeline/timing/clock_reader.h). Job code cannot take it back:
// a role that says its device could not be set up is believed only without it.
struct StepOutcome {
  kjsandbox::Report sandbox;
  std::optional<kjudge::v1::RunnerReport> runner;
  std::optional<std::string> host_fault;
  bool device_ready_mark = false;
};

StepOutcome run_compiler(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                         std::uint32_t wall_ms);

// Writes the request into job_dir, runs the runner in a run sandbox, reads its report back.
// The report is read only if the runner exited normally; a file the sandboxed side wrote is
// parsed, never trusted beyond its fields.
StepOutcome run_runner(const Config& cfg, const std::filesystem::path& job_dir, const std::filesystem::path& inputs_dir,
                       const kjudge::v1::RunnerRequest& request, std::uint32_t wall_ms, std::uint64_t output_bytes,
                       const std::string& device_profile);

}  // namespace kj
