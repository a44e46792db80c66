#include "pipeline/sandbox_profiles.h"

#include <cstdlib>

#include "pipeline/workspace.h"

namespace kj {

namespace {

kjsandbox::Policy base_policy(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                              std::uint32_t wall_ms) {
  kjsandbox::Policy p;
  p.argv = std::move(argv);
  p.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}, {"TMPDIR", "/tmp"}};
  // A sanitizer build of kjudge runs a sanitizer build of the runner: keep its settings.
  if (const char* asan = std::getenv("ASAN_OPTIONS")) p.env["ASAN_OPTIONS"] = asan;
  p.cwd = "/job";
  p.binds = kjsandbox::default_system_binds();
  for (const auto& extra : cfg.sandbox.extra_ro_binds) p.binds.push_back({extra, "", false});
  p.binds.push_back({job_dir.string(), "/job", true});
  p.host_uid = sandbox_host_uid(cfg.sandbox.host_uid);
  p.host_gid = sandbox_host_gid(cfg.sandbox.host_gid);
  p.wall_limit = std::chrono::milliseconds(wall_ms);
  p.output_limit_bytes = cfg.limits.output_bytes;
  return p;
}

}  // namespace

kjsandbox::Policy compile_policy(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                                 std::uint32_t wall_ms) {
  auto p = base_policy(cfg, job_dir, std::move(argv), wall_ms);
  p.rlimits.address_space_bytes = 4ull << 30;  // template bombs; cgroup memory comes with the hardened sandbox
  return p;
}

kjsandbox::Policy run_policy(const Config& cfg, const std::filesystem::path& job_dir,
                             const std::filesystem::path& inputs_dir, std::vector<std::string> argv,
                             std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile) {
  auto p = base_policy(cfg, job_dir, std::move(argv), wall_ms);
  p.output_limit_bytes = output_bytes;
  p.binds.push_back({cfg.runner_path.string(), kRunnerInSandbox, false});
  if (!inputs_dir.empty()) p.binds.push_back({inputs_dir.string(), "/inputs", false});
  if (device_profile == "opencl") {
    // PoCL compiles kernels at run time and caches them; keep its cache inside the job's tmpfs.
    p.env["POCL_CACHE_DIR"] = "/tmp/pocl";
    if (!cfg.opencl_device_type.empty()) p.env["KJUDGE_OPENCL_DEVICE_TYPE"] = cfg.opencl_device_type;
    // ICD vendor files, and the CPU topology PoCL's hwloc reads to size its thread pool.
    for (const char* path : {"/etc/OpenCL", "/sys/devices/system/cpu"})
      if (std::filesystem::exists(path)) p.binds.push_back({path, "", false});
  }
  return p;
}

}  // namespace kj
