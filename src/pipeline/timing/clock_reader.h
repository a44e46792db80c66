// The daemon's own clock over a timed loop. The loop's process sends its marks (one byte per
// event: runner/clock_marks.h) as datagrams to a unix socket in its job dir; the kernel stamps
// each datagram when it is sent (SO_TIMESTAMPNS), so a reader thread scheduled late on a loaded
// node still sees when each mark was made, and a candidate cannot move the stamps. The kernel
// also names the sender (SO_PASSCRED: a process without CAP_SYS_ADMIN can only give its own pid):
// at a loop's start and end the reader samples what the scheduler did to it (cpu_wait.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <thread>
#include <optional>
#include <vector>

#include "pipeline/run/cpu_wait.h"
#include "pipeline/run/steps.h"

namespace kj {

struct ClockMark {
  char event;
  std::chrono::steady_clock::time_point at;  // when the mark was sent (the kernel's stamp)
  std::optional<CpuSample> cpu{};             // 'S' and 'E': the sender, sampled as the mark arrived
};

// A loop makes at most max_trials (10,000) + 3 marks. A process that sends more is flooding the
// daemon: the marks past this bound are read and dropped (and the loop's marks then fail the check).
inline constexpr std::size_t kMaxClockMarks = 100'000;

// Samples of the sender a reader takes at most: a loop needs two; reading /proc for every 'S' a
// flooding candidate sends would cost the daemon's CPU.
inline constexpr int kMaxCpuSamples = 16;

// Reads every datagram waiting on fd (a socket with SO_TIMESTAMPNS on) and appends one mark per
// byte, each at its datagram's send time, up to kMaxClockMarks in all; the first 'S' or 'E' mark
// of a datagram that carries credentials gets a sample of its sender while *samples_left > 0
// (each one taken counts it down). Returns without blocking.
void drain_clock_socket(int fd, std::vector<ClockMark>& out, int* samples_left);

// The daemon's end: the socket is bound (mode 0622, so a sandbox's uid may send) at construction,
// before the sandbox starts; a thread drains it until finish().
class ClockReader {
 public:
  explicit ClockReader(const std::filesystem::path& socket_path);
  ~ClockReader();
  ClockReader(const ClockReader&) = delete;
  ClockReader& operator=(const ClockReader&) = delete;
  // Stops the thread after draining what is left; returns the marks in arrival order.
  std::vector<ClockMark> finish();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::vector<ClockMark> got_;
  int samples_left_ = kMaxCpuSamples;
  std::thread reader_;
};

// Whether the role's device-ready byte (kjudge::runner::kDeviceReadyMark) reached the daemon.
bool has_device_ready_mark(const std::vector<ClockMark>& marks);

// run_runner with a clock socket at job_dir/<socket_name> (request.clock_path must name it as seen
// inside the sandbox). `marks` receives what arrived, in order; the step's device_ready_mark too.
StepOutcome run_runner_clocked(const Config& cfg, const std::filesystem::path& job_dir,
                               const std::filesystem::path& inputs_dir, const kjudge::v1::RunnerRequest& request,
                               std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile,
                               const std::string& socket_name, std::vector<ClockMark>& marks);

}  // namespace kj
