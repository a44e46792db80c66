#include "pipeline/steps.h"

#include <fstream>
#include <sstream>

#include "kjsandbox/sandbox.h"
#include "pipeline/sandbox_profiles.h"

namespace kj {
namespace fs = std::filesystem;

StepOutcome run_compiler(const Config& cfg, const fs::path& job_dir, std::vector<std::string> argv, std::uint32_t wall_ms) {
  return StepOutcome{kjsandbox::run(compile_policy(cfg, job_dir, std::move(argv), wall_ms)), std::nullopt};
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
  }
  fs::remove(rep);
  std::vector<std::string> argv = {kRunnerInSandbox, "--request", "/job/" + req.filename().string(), "--report",
                                   "/job/" + rep.filename().string()};
  StepOutcome step{kjsandbox::run(run_policy(cfg, job_dir, inputs_dir, std::move(argv), wall_ms, output_bytes,
                                             device_profile)),
                   std::nullopt};
  if (step.sandbox.outcome == kjsandbox::Outcome::Exited) {
    std::ifstream in(rep, std::ios::binary);
    kjudge::v1::RunnerReport report;
    if (in && report.ParseFromIstream(&in)) step.runner = std::move(report);
  }
  return step;
}

}  // namespace kj
