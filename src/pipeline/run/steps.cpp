#include "pipeline/run/steps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <sstream>

#include "kjsandbox/sandbox.h"
#include "pipeline/run/host_fault.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/run/sandbox_profiles.h"

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

}  // namespace kj
