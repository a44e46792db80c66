// Sandboxed steps of the native pipeline: run a compiler, run kjudge-runner.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>
#include <filesystem>
#include <string>
#include <vector>

#include "common/config.h"
#include "kjudge/v1/runner.pb.h"
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

// The daemon's own clock over a runner's timed loop: the runner writes one byte per loop event to
// a FIFO in its job dir; a daemon thread timestamps each byte as it arrives.
struct ClockMark {
  char event;
  std::chrono::steady_clock::time_point at;
};

// The daemon's end of a clock FIFO: created and opened at construction (before the sandbox
// starts, so the writer's open succeeds at once), read by a thread that timestamps each byte.
class ClockReader {
 public:
  explicit ClockReader(const std::filesystem::path& fifo);
  ~ClockReader();
  ClockReader(const ClockReader&) = delete;
  ClockReader& operator=(const ClockReader&) = delete;
  // Stops the thread after draining what is left; returns the marks in arrival order.
  std::vector<ClockMark> finish();

 private:
  std::filesystem::path fifo_;
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::vector<ClockMark> got_;
  std::thread reader_;
};

// Whether the role's device-ready byte (kjudge::runner::kDeviceReadyMark) reached the daemon.
bool has_device_ready_mark(const std::vector<ClockMark>& marks);

// run_runner with a clock FIFO at job_dir/<fifo_name> (request.clock_path must name it as seen
// inside the sandbox). `marks` receives what arrived, in order; the step's device_ready_mark too.
StepOutcome run_runner_clocked(const Config& cfg, const std::filesystem::path& job_dir,
                               const std::filesystem::path& inputs_dir, const kjudge::v1::RunnerRequest& request,
                               std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile,
                               const std::string& fifo_name, std::vector<ClockMark>& marks);

}  // namespace kj
