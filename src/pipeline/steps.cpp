#include "pipeline/steps.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <sstream>

#include "kjsandbox/sandbox.h"
#include "pipeline/host_fault.h"
#include "runner/clock_marks.h"
#include "pipeline/sandbox_watch.h"
#include "pipeline/sandbox_profiles.h"

namespace kj {
namespace fs = std::filesystem;

namespace {

// A step that did not succeed: is the host why? (Not asked after a success: statvfs and a probe
// write per step are cheap, but not free.)
void note_host_fault(const Config& cfg, const fs::path& job_dir, StepOutcome& step, bool expects_report) {
  const bool ok = step.sandbox.ok() && (step.runner ? step.runner->ok() : !expects_report);
  if (!ok && step.sandbox.outcome != kjsandbox::Outcome::Cancelled)
    step.host_fault = host_fault_after_step(job_dir, cfg.limits);
}

}  // namespace

StepOutcome run_compiler(const Config& cfg, const fs::path& job_dir, std::vector<std::string> argv, std::uint32_t wall_ms) {
  StepOutcome step{run_sandboxed(compile_policy(cfg, job_dir, std::move(argv), wall_ms)), std::nullopt, std::nullopt};
  note_host_fault(cfg, job_dir, step, /*expects_report=*/false);
  return step;
}

StepOutcome run_runner(const Config& cfg, const fs::path& job_dir, const fs::path& inputs_dir,
                       const kjudge::v1::RunnerRequest& request, std::uint32_t wall_ms, std::uint64_t output_bytes,
                       const std::string& device_profile) {
  const auto tag = request.mode() == kjudge::v1::RunnerRequest::BUILD ? "build" : "run";
  const fs::path req = job_dir / (std::string(tag) + "_request.pb");
  const fs::path rep = job_dir / (std::string(tag) + "_report.pb");
  {
    std::ofstream out(req, std::ios::binary | std::ios::trunc);
    request.SerializeToOstream(&out);
    out.close();
    if (!out) throw std::runtime_error("cannot write " + req.string() + ": " + strerror(errno));
  }
  fs::remove(rep);
  std::vector<std::string> argv = {kRunnerInSandbox, "--request", "/job/" + req.filename().string(), "--report",
                                   "/job/" + rep.filename().string()};
  StepOutcome step{run_sandboxed(run_policy(cfg, job_dir, inputs_dir, std::move(argv), wall_ms, output_bytes,
                                             device_profile)),
                   std::nullopt, std::nullopt};
  if (step.sandbox.outcome == kjsandbox::Outcome::Exited) {
    std::ifstream in(rep, std::ios::binary);
    kjudge::v1::RunnerReport report;
    if (in && report.ParseFromIstream(&in)) step.runner = std::move(report);
  }
  note_host_fault(cfg, job_dir, step, /*expects_report=*/true);
  return step;
}

ClockReader::ClockReader(const fs::path& fifo) : fifo_(fifo) {
  fs::remove(fifo_);
  if (::mkfifo(fifo_.c_str(), 0622) != 0 || ::chmod(fifo_.c_str(), 0622) != 0)
    throw std::runtime_error("mkfifo " + fifo_.string() + " failed");
  // Non-blocking, so no writer is needed yet.
  fd_ = ::open(fifo_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("cannot open " + fifo_.string());
  reader_ = std::thread([this] {
    char buf[256];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 10);
      if (ready > 0 && (p.revents & POLLIN)) {
        const ssize_t n = ::read(fd_, buf, sizeof(buf));
        const auto now = std::chrono::steady_clock::now();
        for (ssize_t i = 0; i < n; ++i) got_.push_back({buf[i], now});
        if (n > 0) continue;
      }
      if (done_.load()) {
        const ssize_t n = ::read(fd_, buf, sizeof(buf));  // whatever is left
        const auto now = std::chrono::steady_clock::now();
        for (ssize_t i = 0; i < n; ++i) got_.push_back({buf[i], now});
        return;
      }
      if (ready > 0 && !(p.revents & POLLIN)) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // POLLHUP
    }
  });
}

std::vector<ClockMark> ClockReader::finish() {
  if (reader_.joinable()) {
    done_ = true;
    reader_.join();
  }
  return std::move(got_);
}

ClockReader::~ClockReader() {
  finish();
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  fs::remove(fifo_, ec);
}

bool has_device_ready_mark(const std::vector<ClockMark>& marks) {
  return std::any_of(marks.begin(), marks.end(), [](const ClockMark& m) { return m.event == kjudge::runner::kDeviceReadyMark; });
}

StepOutcome run_runner_clocked(const Config& cfg, const fs::path& job_dir, const fs::path& inputs_dir,
                               const kjudge::v1::RunnerRequest& request, std::uint32_t wall_ms,
                               std::uint64_t output_bytes, const std::string& device_profile,
                               const std::string& fifo_name, std::vector<ClockMark>& marks) {
  ClockReader reader(job_dir / fifo_name);
  StepOutcome step = run_runner(cfg, job_dir, inputs_dir, request, wall_ms, output_bytes, device_profile);
  marks = reader.finish();
  step.device_ready_mark = has_device_ready_mark(marks);
  return step;
}

}  // namespace kj
