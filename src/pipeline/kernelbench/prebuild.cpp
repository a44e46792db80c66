#include "pipeline/kernelbench/prebuild.h"

#include <chrono>

#include "pipeline/job/limits.h"
#include "pipeline/kernelbench/build.h"
#include "pipeline/run/workspace.h"

namespace kj {
namespace v1 = kjudge::v1;
using nlohmann::json;

PrebuildOutcome prebuild_kernelbench(const v1::Job& job, const Config& cfg, BuildStore& store) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& task = job.kernelbench();
  const CandidateSource src = candidate_source(task);
  Workspace ws(cfg.state_dir, job.job_id(), sandbox_host_uid(cfg.sandbox.host_uid),
               sandbox_host_gid(cfg.sandbox.host_gid), cfg.keep_job_dirs);
  const auto build_dir = ws.make_party_dir("build");
  ws.write_file(build_dir / src.file_name, src.text);
  ws.write_file(build_dir / "reference.py", task.reference_py());
  json overrides = json::object();
  for (const auto& [k, v] : task.size_overrides()) overrides[k] = v;
  const JobLimits limits = job_limits(job, cfg);
  v1::Result r;
  const KernelBenchBuild built =
      build_kernelbench(job, cfg,
                        {kernelbench_backend_name(task.backend()), build_dir, src.completion, overrides, limits.compile_ms,
                         limits.output_bytes, &store, /*leased=*/true},
                        r);
  PrebuildOutcome out;
  out.verdict = built.failure ? v1::Verdict_Name(built.failure->verdict) : "OK";
  out.message = built.failure ? built.failure->message : "";
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& phases = r.phase_seconds();
  if (auto it = phases.find("build.cpu_seconds"); it != phases.end()) out.cpu_seconds = it->second;
  if (auto it = phases.find("build.light_headers"); it != phases.end()) out.light_headers = it->second;
  return out;
}

}  // namespace kj
