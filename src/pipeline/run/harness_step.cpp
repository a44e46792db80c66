#include "pipeline/run/harness_step.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "common/log.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/run/host_fault.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_profiles.h"

namespace kj {
namespace fs = std::filesystem;

kjsandbox::Policy harness_policy(const Config& cfg, const HarnessRun& run, std::vector<std::string> argv) {
  kjsandbox::Policy p = run.slot == SlotKind::Compile
                            ? compile_policy(cfg, run.job_dir, std::move(argv), run.wall_ms)
                            : run_policy(cfg, run.job_dir, "", std::move(argv), run.wall_ms, run.output_bytes,
                                         run.device_profile);
  // torch maps far more address space than it uses; memory is capped by the cgroup instead.
  p.rlimits.address_space_bytes.reset();
  if (run.file_size_bytes) p.rlimits.file_size_bytes = run.file_size_bytes;
  p.output_limit_bytes = run.output_bytes;
  // a role's own grant (the KernelBench candidate: the judge's wait given back) replaces the CPU pressure one
  if (run.wall_extension) p.wall_extension = run.wall_extension;
  p.binds.push_back({cfg.kernelbench.harness_dir.string(), kHarnessInSandbox, false});
  for (const auto& b : run.binds) p.binds.push_back(b);
  // The interpreter's own bin dir first: ninja and other tools pip installed beside it.
  const std::string py_bin = cfg.kernelbench.python.parent_path().string();
  p.env["PATH"] = py_bin == "/usr/bin" ? "/usr/bin:/bin" : py_bin + ":/usr/bin:/bin";
  p.env["PYTHONPATH"] = kHarnessInSandbox;
  // The sandbox uid has no passwd entry; getpass.getuser() (torch.profiler asks) reads these first.
  p.env["USER"] = p.env["LOGNAME"] = "kjudge";
  p.env["PYTHONDONTWRITEBYTECODE"] = "1";
  p.env["TORCH_EXTENSIONS_DIR"] = "/tmp/torch_extensions";
  p.env["TRITON_CACHE_DIR"] = "/tmp/triton";
  // A CPU task's timing must not depend on the node's core count; and the harness zygote must
  // stay single-threaded: OpenBLAS (numpy's) and MKL start their pools when they are loaded.
  for (const char* pool : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) p.env[pool] = "1";
  return p;
}

namespace {

constexpr const char* kHarnessZygote = "kjudge-harness";

// The harness zygote (python/kjudge_harness/zygote.py), registered once per process: the node's
// interpreter with torch and every role imported, CUDA not initialised; each role it serves is a
// fresh process in its own sandbox. Its environment is a role's, with the harness at its host path.
}  // namespace

bool start_harness_zygote(const Config& cfg) {
  static const bool registered = [&] {
    std::error_code ec;
    if (!cfg.kernelbench.zygote || !fs::exists(cfg.kernelbench.resume_lib, ec)) {
      if (cfg.kernelbench.zygote)
        log::warn("kernelbench.zygote_unavailable", {{"missing", cfg.kernelbench.resume_lib.string()}});
      return false;
    }
    HarnessRun probe;
    probe.job_dir = "/nonexistent";
    auto env = harness_policy(cfg, probe, {"/bin/true"}).env;
    env["PYTHONPATH"] = cfg.kernelbench.harness_dir.string();
    env["KJUDGE_RESUME_LIB"] = cfg.kernelbench.resume_lib.string();
    env["KJUDGE_HARNESS_HOST_DIR"] = cfg.kernelbench.harness_dir.string();
    env["KJUDGE_ZYGOTE_LOG"] = (cfg.state_dir / "harness-zygote.log").string();
    kjsandbox::register_resume_zygote(kHarnessZygote,
                                      {cfg.kernelbench.python.string(), "-s", "-m", "kjudge_harness.zygote"},
                                      std::move(env));
    return true;
  }();
  return registered;
}

bool await_harness_zygote(const Config& cfg, std::chrono::milliseconds timeout) {
  return start_harness_zygote(cfg) && kjsandbox::wait_resume_zygote(kHarnessZygote, timeout);
}

HarnessStep run_harness(const Config& cfg, const HarnessRun& run) {
  const fs::path req = run.job_dir / (run.role + "_request.json");
  const fs::path rep = run.job_dir / (run.role + "_report.json");
  {
    std::ofstream out(req, std::ios::trunc);
    out << run.request.dump();
    out.close();
    if (!out) throw std::runtime_error("cannot write " + req.string() + ": " + strerror(errno));
  }
  fs::remove(rep);
  kjsandbox::Policy p = harness_policy(cfg, run, {cfg.kernelbench.python.string(), "-s", "-m", "kjudge_harness",
                                                   run.role, "/job/" + req.filename().string(),
                                                   "/job/" + rep.filename().string()});
  if (start_harness_zygote(cfg)) p.resume_in = kHarnessZygote;
  HarnessStep step{run_sandboxed(p), std::nullopt, std::nullopt};
  if (step.sandbox.outcome == kjsandbox::Outcome::Exited && fs::exists(rep)) {
    auto parsed = nlohmann::json::parse(read_file(rep), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) step.report = std::move(parsed);
  }
  const bool ok = step.sandbox.ok() && step.report && step.report->value("ok", false);
  if (!ok && step.sandbox.outcome != kjsandbox::Outcome::Cancelled)
    step.host_fault = host_fault_after_step(run.job_dir, cfg.limits);
  return step;
}

}  // namespace kj
